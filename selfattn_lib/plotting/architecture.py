"""Architecture diagrams: a model drawn as the paper's Figure 1 draws the Transformer, boxes
from the input (bottom) to the output (top), with the residual paths around each sublayer,
the repeated layers in a frame marked "× N" and the links between stacks (the encoder's
output into every cross-attention), and with the shape of every tensor written in its box.

The sibling of :mod:`selfattn_lib.plotting.diagrams`: there the numbers a flow computed are
drawn, here the shapes a module computed. :func:`record_shapes` runs a real module and
records what each of its submodules returned; a chapter's diagram function places the
course's module names (``self_attention``, ``norm_1``, …) and those shapes in boxes, so the
picture can never disagree with the code. The alt text is written from the same blocks.
Every block's text carries the ``gid`` ``"block:<key>"`` (its label) or ``"shape:<key>"``
(its shape), so :func:`read_blocks` recovers what was drawn.

Shapes
------
A :class:`Block`'s ``shape`` is a tuple of ints, the shape of the tensor the block outputs.

Examples
--------
>>> column = Column("layer", [Block("x", "input", (2, 5, 8)), Block("ff", "feed_forward",
...                 (2, 5, 8), role="feed_forward")])
>>> d = architecture(column, title="one sublayer")
>>> read_blocks(d.figure)["ff"]
('feed_forward', '2 × 5 × 8')
>>> d.alt.split(". ")[1]
'layer, from the input up: input (2 × 5 × 8) → feed_forward (2 × 5 × 8).'
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch, Rectangle
from matplotlib.text import Text

from selfattn_lib.plotting.base import OKABE_ITO, column_width, current_layout
from selfattn_lib.plotting.diagrams import Diagram

#: The fill of a block, by its role: attention sky blue, feed-forward green, the "add &
#: norm" step yellow, embeddings and positions orange, the output layer purple (Okabe–Ito
#: hues, light enough for black text), inputs and outputs without a box.
ROLE_FILLS: dict[str, str] = {
    "attention": "#bfe3f6",  # OKABE_ITO[5], lightened
    "feed_forward": "#b3e2d5",  # OKABE_ITO[2], lightened
    "norm": "#faf5b8",  # OKABE_ITO[6], lightened
    "embedding": "#f7dca8",  # OKABE_ITO[4], lightened
    "output": "#eed3e3",  # OKABE_ITO[3], lightened
    "add": "white",  # a "+" of a residual path
    "input": "white",  # drawn without a box
}
RESIDUAL_COLOUR = OKABE_ITO[1]  # vermillion, as in chapter 9's diagrams
LINK_COLOUR = OKABE_ITO[0]
#: The key under which :func:`record_shapes` keeps the shape of the module's input.
INPUT = "<input>"

# Sizes in inches at the figures' 100 dpi: 8-point text is 11 px tall on the page.
_ROW = 0.5  # the height of one block's row
_BOX_HEIGHT = 0.42
_LANE = 0.32  # the lane beside a column for its residual paths
_TITLE = 0.38
_HEADING = 0.3
_LABEL_FONT, _SHAPE_FONT = 9.0, 8.5


@dataclass(frozen=True)
class Block:
    """One step of a column: a key (unique in the diagram), the label drawn (a module name
    such as ``"self_attention"``), the shape of what it outputs, its role (a key of
    :data:`ROLE_FILLS`) and a short note added to the label (``"causal mask"``)."""

    key: str
    label: str
    shape: tuple[int, ...] | None = None
    role: str = "input"
    note: str = ""

    def __post_init__(self) -> None:
        if not self.key or not self.label:
            raise ValueError("a Block needs a key and a label")
        if self.role not in ROLE_FILLS:
            raise ValueError(f"role must be one of {sorted(ROLE_FILLS)}, got {self.role!r}")
        if self.shape is not None and not all(
            isinstance(size, int) and size > 0 for size in self.shape
        ):
            raise ValueError(f"Block {self.key!r}: shape must be positive ints, got {self.shape}")

    @property
    def shape_text(self) -> str:
        return " × ".join(str(size) for size in self.shape) if self.shape else ""


@dataclass(frozen=True)
class Column:
    """A stack of blocks drawn from the bottom up (``None`` leaves a row empty, to line a
    block up with one of another column). ``residuals`` are pairs ``(a, b)``: the input of
    block ``a`` is carried around and added in block ``b``. ``repeat`` is
    ``(first, last, n)``: the blocks from ``first`` to ``last`` form a layer repeated ``n``
    times. ``side`` is where the residual lane runs, ``"right"`` or ``"left"``."""

    title: str
    blocks: Sequence[Block | None]
    residuals: Sequence[tuple[str, str]] = ()
    repeat: tuple[str, str, int] | None = None
    side: str = "right"

    def __post_init__(self) -> None:
        if self.side not in ("left", "right"):
            raise ValueError(f"side must be 'left' or 'right', got {self.side!r}")
        keys = [block.key for block in self.blocks if block is not None]
        if not keys:
            raise ValueError(f"column {self.title!r} has no block")
        for a, b in self.residuals:
            if a not in keys or b not in keys or keys.index(a) >= keys.index(b):
                raise ValueError(
                    f"column {self.title!r}: residual {(a, b)} must join a block to a later one"
                )
        if self.repeat is not None:
            first, last, count = self.repeat
            if first not in keys or last not in keys or keys.index(first) > keys.index(last):
                raise ValueError(f"column {self.title!r}: repeat {self.repeat} names no range")
            if not isinstance(count, int) or count < 1:
                raise ValueError(f"column {self.title!r}: repeat count must be >= 1")

    def row(self, key: str) -> int:
        return next(i for i, block in enumerate(self.blocks) if block and block.key == key)


def record_shapes(module: object, *args: object, **kwargs: object) -> dict[str, tuple[int, ...]]:
    """Run ``module(*args, **kwargs)`` (a ``torch.nn.Module``, without gradients) and return
    the shape of what each of its named submodules returned, by its name in the module
    (``"encoder.layers.0.self_attention"``), of the whole result under ``""`` and of the
    first tensor it was given under :data:`INPUT` (``"<input>"``). A module
    that returns a tuple (attention's output and weights) is recorded by its first tensor;
    a module called several times keeps its first call's shape.

    Shapes
    ------
    Whatever the module takes; the values are tuples of ints.

    Examples
    --------
    >>> import torch
    >>> shapes = record_shapes(torch.nn.Sequential(torch.nn.Linear(3, 4)), torch.ones(2, 3))
    >>> shapes[INPUT], shapes["0"], shapes[""]
    ((2, 3), (2, 4), (2, 4))
    """
    import torch

    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"record_shapes needs a torch.nn.Module, got {type(module).__name__}")
    shapes: dict[str, tuple[int, ...]] = {}

    def first_tensor(output: object) -> torch.Tensor | None:
        if isinstance(output, torch.Tensor):
            return output
        if isinstance(output, (tuple, list)):
            return next((item for item in output if isinstance(item, torch.Tensor)), None)
        return None

    def hook(name: str):
        def record(_module: object, _inputs: object, output: object) -> None:
            tensor = first_tensor(output)
            if tensor is not None and name not in shapes:
                shapes[name] = tuple(tensor.shape)

        return record

    handles = [sub.register_forward_hook(hook(name)) for name, sub in module.named_modules()]
    given = first_tensor(args) if args else first_tensor(list(kwargs.values()))
    if given is not None:
        shapes[INPUT] = tuple(given.shape)
    try:
        with torch.no_grad():
            module(*args, **kwargs)
    finally:
        for handle in handles:
            handle.remove()
    return shapes


def read_blocks(figure: Figure) -> dict[str, tuple[str, str]]:
    """``{key: (label, shape text)}`` of every block drawn on ``figure``."""
    labels, shapes = {}, {}
    for text in figure.findobj(Text):
        gid = text.get_gid() or ""
        if gid.startswith("block:"):
            labels[gid.removeprefix("block:")] = text.get_text()
        elif gid.startswith("shape:"):
            shapes[gid.removeprefix("shape:")] = text.get_text()
    return {key: (label, shapes.get(key, "")) for key, label in labels.items()}


def _label(block: Block) -> str:
    return f"{block.label} ({block.note})" if block.note else block.label


def alt_text(columns: Sequence[Column], links: Sequence[tuple[str, str, str]], title: str) -> str:
    """The alt text of an architecture diagram, written from its blocks: each column from
    the input up with every shape, the repeated layer, the residual paths and the links."""
    parts = [f"Computed diagram{': ' + title if title else ''}."]
    labels = {block.key: _label(block) for column in columns for block in column.blocks if block}
    for column in columns:
        steps = " → ".join(
            f"{_label(block)} ({block.shape_text})" if block.shape else _label(block)
            for block in column.blocks
            if block is not None
        )
        parts.append(f"{column.title}, from the input up: {steps}.")
        if column.repeat:
            first, last, count = column.repeat
            parts.append(
                f"From {labels[first]} to {labels[last]}: one layer, repeated {count} times."
            )
        if column.residuals:
            pairs = ", ".join(f"around {labels[a]} into {labels[b]}" for a, b in column.residuals)
            parts.append(f"Residual paths: {pairs}.")
    if links:
        joined = ", ".join(
            f"{labels[a]} into {labels[b]}" + (f" ({name})" if name else "") for a, b, name in links
        )
        parts.append(f"Between the columns: {joined}.")
    return " ".join(parts)


def architecture(
    *columns: Column,
    links: Sequence[tuple[str, str] | tuple[str, str, str]] = (),
    title: str = "",
    width: float | None = None,
) -> Diagram:
    """Draw ``columns`` side by side, each from the bottom up, with their residual paths,
    repeated layers and the ``links`` ``(a, b)`` or ``(a, b, name)`` from the output of block
    ``a`` of one column into the side of block ``b`` of another (``name`` is written on it).

    Shapes
    ------
    Each block is drawn with its label and, under it, its shape (``2 × 11 × 32``).

    Examples
    --------
    >>> d = architecture(Column("a", [Block("x", "x", (3,))]), Column("b", [Block("y", "y")]),
    ...                  links=[("x", "y")])
    >>> sorted(read_blocks(d.figure))
    ['x', 'y']
    """
    if not columns:
        raise ValueError("architecture needs at least one Column")
    where: dict[str, tuple[int, int]] = {}
    for index, column in enumerate(columns):
        for row, block in enumerate(column.blocks):
            if block is None:
                continue
            if block.key in where:
                raise ValueError(f"block keys must be unique in a diagram: {block.key!r} twice")
            where[block.key] = (index, row)
    links = [(link[0], link[1], link[2] if len(link) > 2 else "") for link in links]
    for a, b, _ in links:
        if a not in where or b not in where or where[a][0] == where[b][0]:
            raise ValueError(f"link {(a, b)} must join blocks of two different columns")

    rows = max(len(column.blocks) for column in columns)
    width = column_width() if width is None else width
    slot = width / len(columns)
    box_width = slot - 2 * _LANE - 0.1
    fits = int(box_width / (_LABEL_FONT / 72 * 0.55))  # characters of a label in a box
    labels = {block.key: _label(block) for column in columns for block in column.blocks if block}
    if current_layout() == "phone":  # a label too long for its box takes two lines or more
        labels = {key: textwrap.fill(label, fits) for key, label in labels.items()}
    longest = max(len(line) for label in labels.values() for line in label.split("\n"))
    if longest > fits:
        raise ValueError(
            f"a label of {longest} characters does not fit a box of {box_width:.2f} in"
        )
    extra_lines = max(label.count("\n") for label in labels.values())
    row_height, box_height = _ROW + 0.16 * extra_lines, _BOX_HEIGHT + 0.16 * extra_lines
    headings = _HEADING if len(columns) > 1 or columns[0].title else 0.0
    height = (_TITLE if title else 0.05) + headings + rows * row_height + 0.1
    figure = Figure(figsize=(width, height))
    ax = figure.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_axis_off()
    if title:
        ax.text(width / 2, height - 0.08, title, ha="center", va="top", fontsize=10.5)

    def centre(key: str) -> tuple[float, float]:
        index, row = where[key]
        return slot * index + slot / 2, 0.05 + row_height * (row + 0.5)

    arrow = {"arrowstyle": "-|>", "color": "black", "linewidth": 1.1, "shrinkA": 0, "shrinkB": 0}
    for index, column in enumerate(columns):
        x = slot * index + slot / 2
        keys = [block.key for block in column.blocks if block is not None]
        top_of_rows = 0.05 + rows * row_height
        ax.text(
            x,
            top_of_rows + 0.08,
            column.title,
            ha="center",
            va="bottom",
            fontsize=_LABEL_FONT,
            fontweight="bold",
        )
        if column.repeat:
            first, last, count = column.repeat
            bottom = centre(first)[1] - row_height / 2 + 0.03
            top = centre(last)[1] + row_height / 2 - 0.03
            left = x - box_width / 2 - _LANE + 0.02
            ax.add_patch(
                Rectangle(
                    (left, bottom),
                    box_width + 2 * _LANE - 0.04,
                    top - bottom,
                    facecolor="#f4f4f4",
                    edgecolor="#777777",
                    linewidth=0.8,
                    linestyle="--",
                    zorder=0,
                )
            )
            outer = left + 0.04 if column.side == "right" else left + box_width + 2 * _LANE - 0.08
            ax.text(
                outer,
                top - 0.04,
                f"× {count}",
                ha="left" if column.side == "right" else "right",
                va="top",
                fontsize=_LABEL_FONT,
                fontweight="bold",
            )
        for block in column.blocks:
            if block is None:
                continue
            bx, by = centre(block.key)
            if block.role != "input":
                ax.add_patch(
                    FancyBboxPatch(
                        (bx - box_width / 2, by - box_height / 2),
                        box_width,
                        box_height,
                        boxstyle="round,pad=0.0,rounding_size=0.06",
                        facecolor=ROLE_FILLS[block.role],
                        edgecolor="black",
                        linewidth=0.9,
                        zorder=2,
                    )
                )
            style = "normal" if block.role != "input" else "italic"
            lift = 0.08 if block.shape else 0.0
            ax.text(
                bx,
                by + lift,
                labels[block.key],
                ha="center",
                va="center",
                fontsize=_LABEL_FONT,
                style=style,
                gid=f"block:{block.key}",
                zorder=3,
            )
            if block.shape:
                ax.text(
                    bx,
                    by - box_height / 2 + 0.09,
                    block.shape_text,
                    ha="center",
                    va="center",
                    fontsize=_SHAPE_FONT,
                    color="#333333",
                    gid=f"shape:{block.key}",
                    zorder=3,
                )
        for lower, upper in zip(keys, keys[1:], strict=False):
            (x0, y0), (x1, y1) = centre(lower), centre(upper)
            ax.annotate(
                "",
                xy=(x1, y1 - box_height / 2),
                xytext=(x0, y0 + box_height / 2),
                arrowprops=arrow,
                zorder=1,
            )
        sign = 1 if column.side == "right" else -1
        lane = x + sign * (box_width / 2 + _LANE * 0.6)
        for a, b in column.residuals:
            below = centre(a)[1] - row_height / 2 + 0.02
            target = centre(b)[1]
            ax.plot(
                [x, lane, lane],
                [below, below, target],
                color=RESIDUAL_COLOUR,
                linewidth=1.6,
                zorder=1,
            )
            ax.plot([x], [below], "o", color=RESIDUAL_COLOUR, markersize=3.5, zorder=1)
            ax.annotate(
                "",
                xy=(x + sign * box_width / 2, target),
                xytext=(lane, target),
                arrowprops={**arrow, "color": RESIDUAL_COLOUR, "linewidth": 1.6},
                zorder=1,
            )
    for a, b, name in links:
        (xa, ya), (xb, yb) = centre(a), centre(b)
        gap = (xa + xb) / 2
        start = ya + box_height / 2
        rise = start + 0.12
        edge = xb - box_width / 2 if xb > xa else xb + box_width / 2
        ax.plot(
            [xa, xa, gap, gap, edge - (0.02 if xb > xa else -0.02)],
            [start, rise, rise, yb, yb],
            color=LINK_COLOUR,
            linewidth=1.6,
            zorder=1,
        )
        ax.annotate(
            "",
            xy=(edge, yb),
            xytext=(gap, yb),
            arrowprops={**arrow, "color": LINK_COLOUR, "linewidth": 1.6},
            zorder=1,
        )
        if name:
            ax.text(
                (xa + gap) / 2,
                rise + 0.04,
                name,
                ha="center",
                va="bottom",
                fontsize=_SHAPE_FONT,
                color=LINK_COLOUR,
            )
    return Diagram(figure, alt_text(columns, links, title))


def shapes_of(shapes: Mapping[str, tuple[int, ...]], prefix: str) -> dict[str, tuple[int, ...]]:
    """The entries of :func:`record_shapes`'s result under ``prefix`` (``"decoder.layers.0"``),
    by their name below it (``"self_attention"``)."""
    start = f"{prefix}." if prefix else ""
    found = {
        name.removeprefix(start): shape
        for name, shape in shapes.items()
        if prefix == "" or name.startswith(start)
    }
    if not found:
        raise KeyError(f"no module recorded under {prefix!r}")
    return found
