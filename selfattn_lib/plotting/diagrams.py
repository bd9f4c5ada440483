"""Computed diagrams: the arrays a flow computed, drawn as labelled grids with their values,
joined by the operations between them (product, transpose, scale, mask, softmax) and with
every shape written under its grid.

A diagram draws only the arrays it is handed, so a picture can never disagree with the
numbers the code printed, and its alt text is written from the same arrays. Every cell's
text carries the ``gid`` ``"<name>[row,col]"``, so :func:`read_back` recovers what was drawn
(the tests compare it with the concept functions' own results).

Colours follow the role of a grid, the same everywhere in the course: queries blue, keys
vermillion, values green (Okabe–Ito, safe for the common forms of colour blindness); inputs
grey, scores purple, weights ``viridis``.

Shapes
------
A :class:`Grid` holds a 1-D ``(n,)`` array (drawn as one row) or a 2-D ``(rows, cols)`` array
of numbers, booleans (a mask: ✓ may attend, ✗ may not) or strings (tokens).

Examples
--------
>>> import numpy as np
>>> d = flow(Grid("x", np.array([[1.0, 2.0]]), cols=["a", "b"]), "×", Grid("w", np.eye(2)))
>>> read_back(d.figure, "x").tolist()
[[1.0, 2.0]]
>>> d.alt.startswith("Computed diagram: x (1 × 2) × w (2 × 2).")
True
"""

from __future__ import annotations

import io
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from matplotlib import colormaps
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.text import Text

from selfattn_lib.plotting.base import (
    OKABE_ITO,
    PHONE_MIME,
    SEQUENTIAL_CMAP,
    column_width,
    current_layout,
    phone_renderings_wanted,
    png_base64,
    text_colour,
)

#: One colour per role, used for a grid's frame, title and cell tint.
ROLE_COLOURS: dict[str, str] = {
    "input": "#555555",
    "query": OKABE_ITO[0],
    "key": OKABE_ITO[1],
    "value": OKABE_ITO[2],
    "scores": OKABE_ITO[3],
    "weights": "#3b528b",  # viridis' blue: weights cells are drawn with viridis itself
    "output": "#000000",
    "mask": "#555555",
}
TRUE_MARK, FALSE_MARK, MINUS_INFINITY = "✓", "✗", "−∞"
PAD_TOKENS = frozenset({"<pad>", "[PAD]", "PAD"})
# A ✓ cell: a light tint of the Okabe–Ito bluish green (its hue, so colour-blind safe).
_ALLOWED = tuple(0.9 + 0.1 * channel for channel in to_rgb(OKABE_ITO[2]))

# Sizes in inches at the figures' 100 dpi: 8-point text is 11 px tall on the page.
_FONT = 8.5
_CHAR = 0.075  # the width of one character of 8.5-point text
_CELL_HEIGHT = 0.24
_NAME_HEIGHT = 0.42
_NOTE_HEIGHT = 0.2
_GAP = 0.12
_ROW_GAP = 0.18


@dataclass(frozen=True)
class Grid:
    """One array of a flow: its name (``"Q"``, ``"W_Q"``, ``"A"``), values, token labels of
    its rows and columns, role (see :data:`ROLE_COLOURS`), number format and a short note
    written under it (e.g. ``"softmax of each row"``). ``row_names`` name the rows in the alt
    text where the drawing leaves them unlabelled (the same tokens as a grid beside it)."""

    name: str
    values: object
    rows: Sequence[str] = ()
    cols: Sequence[str] = ()
    role: str = "input"
    fmt: str = ".2f"
    note: str = ""
    row_names: Sequence[str] = ()
    array: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError("a Grid needs a non-empty name")
        if self.role not in ROLE_COLOURS:
            raise ValueError(f"role must be one of {sorted(ROLE_COLOURS)}, got {self.role!r}")
        array = np.asarray(self.values)
        if array.ndim == 1:
            array = array[None, :]
        if array.ndim != 2 or array.size == 0:
            raise ValueError(
                f"Grid {self.name!r}: values must be a non-empty 1-D or 2-D array, "
                f"got shape {np.shape(self.values)}"
            )
        if array.dtype.kind not in "biufU":
            raise TypeError(
                f"Grid {self.name!r}: values must be numbers, booleans or strings, "
                f"got dtype {array.dtype}"
            )
        if array.dtype.kind in "iuf" and np.isnan(array.astype(np.float64)).any():
            raise ValueError(f"Grid {self.name!r}: values contain NaN")
        for axis, labels in (("rows", self.rows), ("cols", self.cols), ("rows", self.row_names)):
            count = array.shape[0 if axis == "rows" else 1]
            if labels and len(labels) != count:
                raise ValueError(
                    f"Grid {self.name!r}: {len(labels)} {axis} labels for {count} {axis} "
                    f"of values with shape {array.shape}"
                )
        object.__setattr__(self, "array", array)

    @property
    def shape_text(self) -> str:
        rows, cols = (
            np.shape(self.values) if np.ndim(self.values) == 2 else (1, np.size(self.values))
        )
        return f"{rows} × {cols}"

    def cell_text(self, value: object) -> str:
        if self.array.dtype.kind == "b":
            return TRUE_MARK if value else FALSE_MARK
        if self.array.dtype.kind == "U":
            return str(value)
        number = float(value)
        if number == -np.inf:
            return MINUS_INFINITY
        text = format(number, self.fmt)
        if float(text) == 0:  # -0.00 is a rounding artefact: draw it as 0.00
            text = format(0.0, self.fmt)
        return text.replace("-", "−")


def grid_array(name: str, values: object, shape: tuple[int | None, ...]) -> np.ndarray:
    """``values`` as a float array of ``shape`` (``None``: any size), ready for a
    :class:`Grid`, or a ``ValueError`` naming ``name``. A rounding error just left of zero is
    drawn as it will be read, ``0``, not ``−0``.

    Shapes
    ------
    ``values``: any array of ``shape`` → the same shape, float64.

    Examples
    --------
    >>> grid_array("w", [[1e-17, -2.0]], (1, None)).tolist()
    [[0.0, -2.0]]
    """
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != len(shape) or any(
        want is not None and got != want for got, want in zip(array.shape, shape, strict=True)
    ):
        wanted = "(" + ", ".join("any" if s is None else str(s) for s in shape) + ")"
        raise ValueError(f"{name} must have shape {wanted}, got {array.shape}")
    return np.where(np.abs(array) < 1e-9, 0.0, array)


def _parse(text: str) -> object:
    if text == TRUE_MARK:
        return True
    if text == FALSE_MARK:
        return False
    if text == MINUS_INFINITY:
        return -np.inf
    try:
        return float(text.replace("−", "-"))
    except ValueError:
        return text


def read_back(figure: Figure, name: str) -> np.ndarray:
    """The values drawn in the cells of grid ``name`` of ``figure``, parsed from the text.

    Returns a float array for numbers, a bool array for masks and a str array for tokens:
    exactly what a reader of the picture sees (so numbers are rounded to the grid's format).

    Shapes
    ------
    Returns ``(rows, cols)`` of the grid as drawn (a 1-D grid comes back as one row).
    """
    pattern = re.compile(rf"^{re.escape(name)}\[(\d+),(\d+)\]$")
    cells = {}
    for text in figure.findobj(Text):
        match = pattern.match(text.get_gid() or "")
        if match:
            cells[int(match.group(1)), int(match.group(2))] = _parse(text.get_text())
    if not cells:
        raise ValueError(f"the figure has no grid named {name!r}")
    rows = 1 + max(row for row, _ in cells)
    cols = 1 + max(col for _, col in cells)
    values = [[cells[row, col] for col in range(cols)] for row in range(rows)]
    return np.array(values)


@dataclass
class Diagram:
    """A drawn flow and its alt text. A notebook shows it as a PNG whose text version (in the
    notebook's ``text/plain`` output, and so checked by nbval) is the alt text."""

    figure: Figure
    alt: str

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict:
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png", bbox_inches="tight", dpi=100)
        bundle = {"image/png": buffer.getvalue(), "text/plain": self.alt}
        phone = getattr(self.figure, "course_phone", None)  # plotting.for_the_page
        if phone is not None and phone_renderings_wanted():
            bundle[PHONE_MIME] = png_base64(phone().figure)
        return bundle


def _label_width(labels: Sequence[str]) -> float:
    return max((len(label) for label in labels), default=0) * _CHAR


@dataclass
class _Box:
    """Where an item of the flow goes: its size in inches and its cell block's offsets."""

    item: Grid | str
    width: float
    height: float
    left: float = 0.0  # row labels
    top: float = 0.0  # column labels
    cell_width: float = 0.0


def _measure(item: Grid | str) -> _Box:
    if isinstance(item, str):
        return _Box(item, len(item) * _CHAR * 1.25 + 2 * _GAP, _CELL_HEIGHT)
    longest = max(len(item.cell_text(value)) for value in item.array.flat)
    cell_width = max(0.3, longest * _CHAR + 0.1)
    left = _label_width(item.rows) + 0.08 if item.rows else 0.0
    rotate = bool(item.cols) and _label_width(item.cols) > cell_width - 0.04
    top = (_label_width(item.cols) * 0.75 + 0.12 if rotate else 0.22) if item.cols else 0.0
    rows, cols = item.array.shape
    name = max(len(f"{item.name}  ({item.shape_text})"), len(item.note)) * _CHAR
    width = max(left + cols * cell_width, name) + _GAP
    height = top + rows * _CELL_HEIGHT + _NAME_HEIGHT + (_NOTE_HEIGHT if item.note else 0.0)
    return _Box(item, width, height, left, top, cell_width)


def _above(box: _Box) -> float:
    """How far ``box`` reaches above the centre line of its cells."""
    if isinstance(box.item, Grid):
        return box.top + box.item.array.shape[0] * _CELL_HEIGHT / 2
    return box.height / 2


def _cell_colour(grid: Grid, value: object, scale: float) -> tuple[float, float, float]:
    kind = grid.array.dtype.kind
    if kind == "b":
        return _ALLOWED if value else to_rgb("#d9d9d9")
    if kind == "U":
        return to_rgb("#d9d9d9") if value in PAD_TOKENS else (1.0, 1.0, 1.0)
    number = float(value)
    if number == -np.inf:
        return to_rgb("#d9d9d9")
    if grid.role == "weights":
        return colormaps[SEQUENTIAL_CMAP](min(max(number, 0.0), 1.0))[:3]
    strength = 0.55 * abs(number) / scale if scale > 0 else 0.0
    tint = np.array(to_rgb(ROLE_COLOURS[grid.role]))
    return tuple(1.0 - strength * (1.0 - tint))


def _draw_grid(figure: Figure, box: _Box, x: float, y: float, size: tuple[float, float]) -> None:
    """Draw ``box``'s grid with its cell block's top-left corner at (x, y) inches from the
    figure's bottom-left."""
    grid = box.item
    assert isinstance(grid, Grid)
    width, height = size
    rows, cols = grid.array.shape
    block = (x, y - rows * _CELL_HEIGHT, cols * box.cell_width, rows * _CELL_HEIGHT)
    ax = figure.add_axes((block[0] / width, block[1] / height, block[2] / width, block[3] / height))
    ax.set_xlim(-0.5, cols - 0.5)
    ax.set_ylim(rows - 0.5, -0.5)
    colour = ROLE_COLOURS[grid.role]
    finite = [
        abs(float(v)) for v in grid.array.flat if grid.array.dtype.kind in "iuf" and np.isfinite(v)
    ]
    scale = max(finite, default=0.0)
    for (row, col), value in np.ndenumerate(grid.array):
        fill = _cell_colour(grid, value, scale)
        ax.add_patch(
            Rectangle(
                (col - 0.5, row - 0.5), 1, 1, facecolor=fill, edgecolor="white", linewidth=0.8
            )
        )
        ax.text(
            col,
            row,
            grid.cell_text(value),
            ha="center",
            va="center",
            fontsize=_FONT,
            color=text_colour(fill),
            gid=f"{grid.name}[{row},{col}]",
        )
    for spine in ax.spines.values():
        spine.set_edgecolor(colour)
        spine.set_linewidth(1.6)
    ax.set_yticks(range(rows), labels=list(grid.rows) if grid.rows else [""] * rows)
    ax.set_xticks(range(cols), labels=list(grid.cols) if grid.cols else [""] * cols)
    rotate = box.top > 0.22
    ax.tick_params(
        length=0,
        labelsize=_FONT,
        top=bool(grid.cols),
        labeltop=bool(grid.cols),
        bottom=False,
        labelbottom=False,
        left=bool(grid.rows),
        labelleft=bool(grid.rows),
        pad=2,
    )
    if rotate:
        for label in ax.get_xticklabels():
            label.set_rotation(60)
            label.set_ha("left")
            label.set_rotation_mode("anchor")
    centre = block[0] + block[2] / 2
    figure.text(
        centre / width,
        (block[1] - 0.06) / height,
        f"{grid.name}  ({grid.shape_text})",
        ha="center",
        va="top",
        fontsize=9.5,
        fontweight="bold",
        color=colour,
    )
    if grid.note:
        figure.text(
            centre / width,
            (block[1] - 0.06 - _NAME_HEIGHT * 0.55) / height,
            grid.note,
            ha="center",
            va="top",
            fontsize=_FONT,
            color="#333333",
        )


def _largest_weights(grid: Grid, row: str, weights: np.ndarray, cols: Sequence[str]) -> str:
    """Where a row of weights puts the most, as drawn: weights that print the same are tied,
    and a tie is named in full, never won by the first of them. Weights equal only once
    rounded to the drawn digits are "about" equal.

    >>> rows = [[0.5, 0.25, 0.25], [1 / 3, 1 / 3, 1 / 3], [0.4, 0.4, 0.2], [0.41, 0.408, 0.182]]
    >>> g = Grid("A", rows, role="weights")
    >>> for name, line in zip("wxyz", g.array):
    ...     print(_largest_weights(g, name, line, ["a", "b", "c"]))
    w → a 0.50
    x spread evenly over a, b, c (0.33 each)
    y → a, b 0.40 each
    z → a, b about 0.41 each
    """
    texts = [grid.cell_text(weight) for weight in weights]
    top = grid.cell_text(weights.max())
    if float(top.replace("−", "-")) == 0:
        return f"{row} attends to nothing"
    tied = [col for col, text in zip(cols, texts, strict=True) if text == top]
    if len(tied) == 1:
        return f"{row} → {tied[0]} {top}"
    tied_values = [weight for weight, text in zip(weights, texts, strict=True) if text == top]
    each = f"{top} each" if len(set(tied_values)) == 1 else f"about {top} each"
    if all(text == top or float(text.replace("−", "-")) == 0 for text in texts):
        return f"{row} spread evenly over {', '.join(tied)} ({each})"
    return f"{row} → {', '.join(tied)} {each}"


def _alt_of(grid: Grid) -> str:
    array = grid.array
    rows = list(grid.rows or grid.row_names) or [f"row {i + 1}" for i in range(array.shape[0])]
    cols = list(grid.cols) or [f"column {j + 1}" for j in range(array.shape[1])]
    if array.dtype.kind == "b":
        allowed = [
            f"{row}: {', '.join(c for c, ok in zip(cols, line, strict=True) if ok) or 'nothing'}"
            for row, line in zip(rows, array, strict=True)
        ]
        return f"{grid.name}, what each row may attend to: {'; '.join(allowed)}."
    if array.dtype.kind == "U":
        lines = [" ".join(line) for line in array]
        return f"{grid.name}: {' | '.join(lines)}."
    if grid.role == "weights" and array.shape[1] > 1:
        best = [
            _largest_weights(grid, row, line, cols) for row, line in zip(rows, array, strict=True)
        ]
        return f"{grid.name}, largest weight in each row: {'; '.join(best)}."
    if array.size <= 24:
        lines = [
            f"{row} [{', '.join(grid.cell_text(v) for v in line)}]"
            for row, line in zip(rows, array, strict=True)
        ]
        if len(lines) == 1 and not (grid.rows or grid.row_names):  # a vector: no "row 1"
            return f"{grid.name}: {lines[0].removeprefix('row 1 ')}."
        return f"{grid.name}: {'; '.join(lines)}."
    finite = array[np.isfinite(array.astype(np.float64))]
    return (
        f"{grid.name}: values from {grid.cell_text(finite.min())} "
        f"to {grid.cell_text(finite.max())}."
    )


def alt_text(items: Sequence[Grid | str], title: str = "") -> str:
    """The alt text of a flow, written from its arrays: the flow with every shape, then what
    each grid holds (every value of a small grid, each row's largest weight, a mask's allowed
    keys, or the range of a large grid)."""
    steps = " ".join(
        item if isinstance(item, str) else f"{item.name} ({item.shape_text})" for item in items
    )
    heading = f"Computed diagram{': ' + title if title else ''}: {steps}."
    details = [_alt_of(item) for item in items if isinstance(item, Grid)]
    return " ".join([heading, *details])


def flow(*items: Grid | str, title: str = "", width: float | None = None) -> Diagram:
    """Draw a flow of grids and operators (strings such as ``"×"``, ``"="``, ``"softmax →"``)
    left to right, wrapping onto a new line when the column is full (``width``, in inches:
    by default the column of the layout drawn for, :func:`~selfattn_lib.plotting.drawn_for`).

    Shapes
    ------
    Each :class:`Grid` is drawn with its shape (rows × columns) under it.

    Examples
    --------
    >>> d = flow(Grid("s", [0.0, 1.0], role="scores"), "softmax →",
    ...          Grid("a", [0.27, 0.73], role="weights"), title="one row")
    >>> read_back(d.figure, "a").tolist()
    [[0.27, 0.73]]
    """
    if not items:
        raise ValueError("flow needs at least one Grid")
    for item in items:
        if not isinstance(item, (Grid, str)):
            raise TypeError(
                f"flow takes Grid objects and operator strings, got {type(item).__name__}"
            )
    names = [item.name for item in items if isinstance(item, Grid)]
    if not names:
        raise ValueError("flow needs at least one Grid")
    if len(set(names)) != len(names):
        raise ValueError(f"grid names must be unique within a diagram, got {names}")
    width = column_width() if width is None else width
    boxes = [_measure(item) for item in items]
    too_wide = [box.item.name for box in boxes if isinstance(box.item, Grid) and box.width > width]
    if too_wide:
        raise ValueError(f"grids {too_wide} are wider than the figure ({width} in): split them")

    lines: list[list[_Box]] = [[]]
    for box in boxes:
        used = sum(other.width for other in lines[-1])
        if lines[-1] and used + box.width > width:
            # An operator starts the next line with the grid it applies to.
            carried = [lines[-1].pop()] if isinstance(lines[-1][-1].item, str) else []
            if not lines[-1]:  # the operator was alone on its line: it and its grid are too wide
                if current_layout() != "phone":
                    raise ValueError(
                        f"{carried[0].item!r} and grid {box.item.name!r} are wider than the "
                        f"figure ({width} in) together: widen the figure or shorten the operator"
                    )
                lines[-1], carried = carried, []  # on a phone it gets a line of its own
            lines.append(carried)
        lines[-1].append(box)
    # Each line is as tall as its tallest part above and below the cells' centre line.
    spans = [
        (max(_above(box) for box in line), max(box.height - _above(box) for box in line))
        for line in lines
    ]
    # The title wraps to the figure's width (10.5-point characters are about 0.085 in wide).
    shown_title = "\n".join(textwrap.fill(line, int(width / 0.085)) for line in title.split("\n"))
    title_height = 0.35 + 0.18 * shown_title.count("\n") if title else 0.05
    height = title_height + sum(a + b for a, b in spans) + _ROW_GAP * (len(lines) - 1) + 0.05
    figure = Figure(figsize=(width, height))
    if title:
        figure.text(0.5, 1 - 0.06 / height, shown_title, ha="center", va="top", fontsize=10.5)
    y = height - title_height
    for line, (above, below) in zip(lines, spans, strict=True):
        centre = y - above
        x = (width - sum(box.width for box in line)) / 2
        for box in line:
            if isinstance(box.item, Grid):
                rows = box.item.array.shape[0]
                top_of_cells = centre + rows * _CELL_HEIGHT / 2
                _draw_grid(figure, box, x + box.left, top_of_cells, (width, height))
            else:
                figure.text(
                    (x + box.width / 2) / width,
                    centre / height,
                    box.item,
                    ha="center",
                    va="center",
                    fontsize=11,
                    color="#222222",
                )
            x += box.width
        y = centre - below - _ROW_GAP
    return Diagram(figure, alt_text(items, title))
