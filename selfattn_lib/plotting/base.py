"""The figures' shared primitives: palette, contrast rule, axes, heatmap, bars, 2-D vectors.

Every function returns a :class:`matplotlib.figure.Figure` and never calls ``show``. Figures
are made with ``Figure()`` rather than ``pyplot``, so a notebook displays each one exactly
once (as the cell's value) and no figure is kept alive by pyplot's global state. Pass ``ax``
to draw into an existing axes instead (for small multiples); the axes' figure is returned.

Colours: sequential data (weights in [0, 1]) uses ``viridis``; signed data (similarities)
uses the diverging ``RdBu_r`` centred on zero; categorical lines use the Okabe–Ito palette.
All three are safe for the common forms of colour blindness.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import io
import os
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any, TypeVar

import numpy as np
import PIL.Image
from matplotlib.axes import Axes
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure

SEQUENTIAL_CMAP = "viridis"
DIVERGING_CMAP = "RdBu_r"
# Okabe & Ito (2008), "Color Universal Design": distinguishable under common colour blindness.
OKABE_ITO: tuple[str, ...] = (
    "#0072B2",  # blue
    "#D55E00",  # vermillion
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#E69F00",  # orange
    "#56B4E9",  # sky blue
    "#F0E442",  # yellow
    "#000000",  # black
)


def text_colour(rgba: Sequence[float]) -> str:
    """``"black"`` on a light colour, ``"white"`` on a dark one: the one contrast rule of the
    course's figures (relative luminance, ITU-R BT.709 weights, above or below 0.5).

    Shapes
    ------
    ``rgba``: 3 or 4 numbers in [0, 1] (red, green, blue and an ignored alpha).

    Examples
    --------
    >>> text_colour((1.0, 1.0, 0.0)), text_colour((0.0, 0.0, 0.5, 1.0))
    ('black', 'white')
    """
    red, green, blue = rgba[:3]
    return "black" if 0.2126 * red + 0.7152 * green + 0.0722 * blue > 0.5 else "white"


def new_axes(figsize: tuple[float, float] = (5.0, 4.0), ax: Axes | None = None) -> Axes:
    """Return ``ax`` if given, else the axes of a new, pyplot-free figure of ``figsize``."""
    if ax is not None:
        return ax
    if current_layout() == "phone":  # as wide as a phone's column at most, as tall
        figsize = (min(figsize[0], PHONE_COLUMN_WIDTH), figsize[1])
    fig = Figure(figsize=figsize, layout="constrained")
    return fig.add_subplot()


#: The width of the book's content column on a laptop, in inches at the figures' 100 dpi
#: (images are shown at most 727 px wide: tests/test_site.py measures it). A figure no wider
#: than this is shown at its natural size, so its 8-point text stays 11 px tall on the page.
COLUMN_WIDTH = 7.2
#: The width of a figure drawn for a phone, in inches at 100 dpi. A phone's column is 338 px
#: (390 px screen, measured in tests/test_site.py): a 380-px image is shrunk to it, and its
#: 8-point text (11.1 px as drawn) shows 9.9 px tall, above the phone's small print of 9 px.
PHONE_COLUMN_WIDTH = 3.8
#: The page layouts a figure is drawn for: a laptop's column, and a phone's.
LAYOUTS = ("laptop", "phone")
#: The MIME type of a figure's phone rendering, beside its ``image/png`` in a notebook's
#: output. Only the book's build reads it (book/_ext/course_html.py makes a ``<picture>`` of
#: the two); Jupyter, Colab and GitHub show the ``image/png`` and ignore it.
PHONE_MIME = "application/vnd.self-attention-course.phone+png"
#: The environment variable that makes a shown figure carry its phone rendering: ``"1"``
#: where a notebook's outputs are made for the site and checked (tests/committed_outputs.mk:
#: ``make execute``, strict nbval, the wheel-only run). Elsewhere (Colab, Binder, a learner's
#: Jupyter, the student copies) nothing shows the phone rendering, so it is not drawn.
PHONE_RENDERINGS = "SELFATTN_PHONE_RENDERINGS"


def phone_renderings_wanted() -> bool:
    """Whether a shown figure carries its phone rendering (see :data:`PHONE_RENDERINGS`)."""
    return os.environ.get(PHONE_RENDERINGS) == "1"


_LAYOUT: ContextVar[str] = ContextVar("selfattn_lib_layout", default="laptop")


def current_layout() -> str:
    """The layout figures are being drawn for: ``"laptop"`` (the default) or ``"phone"``."""
    return _LAYOUT.get()


def column_width() -> float:
    """The width, in inches, of the column the current layout draws for."""
    return COLUMN_WIDTH if current_layout() == "laptop" else PHONE_COLUMN_WIDTH


@contextlib.contextmanager
def drawn_for(layout: str) -> Iterator[None]:
    """Draw the figures made inside the ``with`` block for ``layout`` (one of :data:`LAYOUTS`).

    Examples
    --------
    >>> with drawn_for("phone"):
    ...     column_width()
    3.8
    >>> column_width()
    7.2
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    token = _LAYOUT.set(layout)
    try:
        yield
    finally:
        _LAYOUT.reset(token)


def png_base64(figure: Figure) -> str:
    """The figure as a PNG, base64-encoded, drawn as a notebook shows figures (at the
    figure's dpi, cropped to what is drawn), in 256 colours: a third of the bytes of the
    full-colour image, which matters in a notebook that carries two renderings of every
    figure, with no difference a reader sees."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight", dpi="figure")
    image = PIL.Image.open(buffer).convert("RGB")
    palette = image.quantize(256, method=PIL.Image.Quantize.MEDIANCUT, dither=PIL.Image.Dither.NONE)
    small = io.BytesIO()
    palette.save(small, format="png", optimize=True)
    return base64.b64encode(small.getvalue()).decode("ascii")


FigureFunction = TypeVar("FigureFunction", bound=Callable[..., Any])


def for_the_page(draw: FigureFunction) -> FigureFunction:
    """Make a figure function draw for a laptop's column and for a phone's.

    Called as usual, the function draws for the current layout (a laptop's, unless inside
    :func:`drawn_for`). The figure it returns also knows how to draw itself for a phone: the
    same function with the same arguments, ``layout="phone"``. A notebook that shows it puts
    that rendering beside its ``image/png``, under :data:`PHONE_MIME`, where
    :data:`PHONE_RENDERINGS` asks for it. Panels drawn into a given ``ax`` or ``axes`` belong
    to the caller's figure and get no rendering of their own.

    Examples
    --------
    >>> @for_the_page
    ... def panel(*, title=""):
    ...     figure, _ = small_multiples(3)
    ...     return figure
    >>> laptop, phone = panel(), panel(layout="phone")
    >>> laptop.get_size_inches().tolist(), phone.get_size_inches().tolist()
    ([7.2, 2.4], [3.8, 7.199999999999999])
    >>> laptop.course_phone().get_size_inches().tolist()  # what the notebook shows beside it
    [3.8, 7.199999999999999]
    """

    @functools.wraps(draw)
    def figure_function(*args: Any, layout: str | None = None, **kwargs: Any) -> Any:
        if layout is not None:
            with drawn_for(layout):
                drawn = draw(*args, **kwargs)
            _figure_of(drawn).course_layout = layout
            return drawn
        drawn = draw(*args, **kwargs)
        own_figure = kwargs.get("ax") is None and kwargs.get("axes") is None
        if current_layout() == "laptop" and own_figure:
            phone = functools.partial(figure_function, *args, layout="phone", **kwargs)
            _attach_phone(drawn, phone)
        return drawn

    return figure_function  # type: ignore[return-value]


def _figure_of(drawn: Any) -> Figure:
    return drawn if isinstance(drawn, Figure) else drawn.figure


def _attach_phone(drawn: Any, phone: Callable[[], Any]) -> None:
    """Give a figure (or a diagram) its phone rendering, drawn when a notebook shows it."""
    figure = _figure_of(drawn)

    def rendering() -> Any:
        drawn_for_phone = phone()
        # Which figure it renders: tests/notebook_runner.py pairs the two.
        _figure_of(drawn_for_phone).course_phone_of = id(figure)
        return drawn_for_phone

    figure.course_phone = rendering
    if isinstance(drawn, Figure):
        # IPython asks an object for extra MIME types through _repr_mimebundle_; a Figure has
        # none, so its image/png still comes from matplotlib's own formatter.
        drawn._repr_mimebundle_ = functools.partial(_phone_bundle, rendering)


def _phone_bundle(phone: Callable[[], Any], include: object = None, exclude: object = None) -> dict:
    if not phone_renderings_wanted():
        return {}
    return {PHONE_MIME: png_base64(_figure_of(phone()))}


def small_multiples(
    n_panels: int,
    *,
    columns: int = 3,
    panel_height: float = 2.4,
    width: float | None = None,
    phone_columns: int = 1,
    **subplot_kw: object,
) -> tuple[Figure, list[Axes]]:
    """A figure as wide as the column with ``n_panels`` axes in rows of at most ``columns``
    (a panel per slider value, head, layer, …); axes left over in the last row are hidden.
    Drawn for a phone, the figure is as wide as a phone's column and holds at most
    ``phone_columns`` panels a row: the panels are stacked.

    Shapes
    ------
    ``n_panels`` axes in ``ceil(n_panels / columns)`` rows of ``min(columns, n_panels)``.

    Examples
    --------
    >>> fig, axes = small_multiples(5)
    >>> len(axes), fig.get_size_inches().tolist()
    (5, [7.2, 4.8])
    """
    if not all(isinstance(number, int) for number in (n_panels, columns, phone_columns)):
        raise TypeError("n_panels, columns and phone_columns must be whole numbers")
    if min(n_panels, columns, phone_columns) < 1:
        raise ValueError(
            f"n_panels, columns and phone_columns must be >= 1, got {n_panels}, {columns} "
            f"and {phone_columns}"
        )
    if current_layout() == "phone":
        columns = min(columns, phone_columns)
        width = PHONE_COLUMN_WIDTH if width is None else min(width, PHONE_COLUMN_WIDTH)
    n_columns = min(columns, n_panels)
    n_rows = -(-n_panels // n_columns)
    width = column_width() if width is None else width
    fig = Figure(figsize=(width, panel_height * n_rows), layout="constrained")
    grid = fig.subplots(n_rows, n_columns, squeeze=False, **subplot_kw)
    axes = list(grid.flat)
    for unused in axes[n_panels:]:
        unused.set_visible(False)
    return fig, axes[:n_panels]


def shared_colorbar(axes: Sequence[Axes], label: str = "") -> Figure:
    """One colour bar for panels drawn with the same colour limits (the first panel's image
    gives the map and the limits); returns the figure."""
    images = [image for ax in axes for image in ax.get_images()]
    if not images:
        raise ValueError("shared_colorbar needs panels that show an image (e.g. a heatmap)")
    limits = {(image.norm.vmin, image.norm.vmax, image.cmap.name) for image in images}
    if len(limits) > 1:
        raise ValueError(f"the panels do not share one colour scale: {sorted(limits)}")
    figure = axes[0].figure
    figure.colorbar(images[0], ax=list(axes), label=label)
    return figure


def heatmap(
    matrix: np.ndarray,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    *,
    title: str = "",
    xlabel: str = "key",
    ylabel: str = "query",
    colorbar_label: str = "",
    annotate: bool = True,
    fmt: str = ".2f",
    vmin: float | None = None,
    vmax: float | None = None,
    colorbar: bool = True,
    ax: Axes | None = None,
) -> Figure:
    """Draw a labelled matrix, e.g. similarities or attention weights.

    Signed data is drawn with a diverging map centred on zero, non-negative data with
    ``viridis`` from 0 (or ``vmin``) to the largest value (or ``vmax``): give the same limits
    to panels that should share a colour scale, and draw their one colour bar with
    :func:`shared_colorbar` (``colorbar=False`` leaves a panel's own out). Cell values are
    written in the cells when ``annotate`` is true, dark on light cells and light on dark ones.

    Shapes
    ------
    ``matrix``: ``(T_q, T_k)``; ``row_labels``: ``T_q`` strings; ``col_labels``: ``T_k`` strings.

    Examples
    --------
    >>> fig = heatmap(np.eye(2), ["a", "b"], ["a", "b"], title="identity")
    >>> fig.axes[0].get_title()
    'identity'
    """
    values = np.asarray(matrix, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"matrix must be 2-D (T_q, T_k), got shape {values.shape}")
    if len(row_labels) != values.shape[0] or len(col_labels) != values.shape[1]:
        raise ValueError(
            f"labels do not fit matrix of shape {values.shape}: "
            f"{len(row_labels)} row_labels and {len(col_labels)} col_labels"
        )
    if not np.isfinite(values).all():
        raise ValueError("matrix contains NaN or infinity")

    ax = new_axes((0.6 * values.shape[1] + 2.5, 0.5 * values.shape[0] + 1.5), ax)
    if values.min() < 0:
        limit = float(np.abs(values).max())
        norm = TwoSlopeNorm(
            vmin=-limit if vmin is None else vmin, vcenter=0.0, vmax=limit if vmax is None else vmax
        )
        image = ax.imshow(values, cmap=DIVERGING_CMAP, norm=norm)
    else:
        image = ax.imshow(
            values, cmap=SEQUENTIAL_CMAP, vmin=0.0 if vmin is None else vmin, vmax=vmax
        )

    ax.set_xticks(range(values.shape[1]), labels=list(col_labels), rotation=45, ha="right")
    ax.set_yticks(range(values.shape[0]), labels=list(row_labels))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, label=colorbar_label)

    if annotate:
        for (row, col), value in np.ndenumerate(values):
            colour = text_colour(image.cmap(image.norm(value)))
            ax.text(
                col, row, format(value, fmt), ha="center", va="center", fontsize=8, color=colour
            )
    return ax.figure


def bar_chart(
    values: np.ndarray,
    labels: Sequence[str],
    *,
    title: str = "",
    xlabel: str = "",
    ylabel: str = "",
    ylim: tuple[float, float] | None = None,
    annotate: bool = True,
    fmt: str = ".2f",
    ax: Axes | None = None,
) -> Figure:
    """Draw one bar per label, e.g. the softmax weights of a row of scores.

    Shapes
    ------
    ``values``: ``(T,)``; ``labels``: ``T`` strings.

    Examples
    --------
    >>> fig = bar_chart(np.array([0.2, 0.8]), ["a", "b"], ylabel="weight")
    >>> fig.axes[0].get_ylabel()
    'weight'
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 1 or len(labels) != values.shape[0]:
        raise ValueError(
            f"values must be 1-D with one entry per label: values has shape {values.shape}, "
            f"there are {len(labels)} labels"
        )
    ax = new_axes((0.55 * len(labels) + 2.5, 3.0), ax)
    bars = ax.bar(range(len(labels)), values, color=OKABE_ITO[0])
    ax.set_xticks(range(len(labels)), labels=list(labels))
    ax.axhline(0.0, color="black", linewidth=0.8)
    if ylim is not None:
        ax.set_ylim(*ylim)
    if annotate:
        ax.bar_label(bars, labels=[format(value, fmt) for value in values], fontsize=8)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return ax.figure


def vectors_2d(
    vectors: dict[str, Sequence[float]],
    *,
    title: str = "",
    xlabel: str = "",
    ylabel: str = "",
    ax: Axes | None = None,
) -> Figure:
    """Draw named 2-D vectors as arrows from the origin, each labelled at its tip.

    Shapes
    ------
    ``vectors``: a mapping from name to a vector of shape ``(2,)``.

    Examples
    --------
    >>> fig = vectors_2d({"a": [1, 0], "b": [0, 1]}, xlabel="x", ylabel="y")
    >>> fig.axes[0].get_xlabel()
    'x'
    """
    if not vectors:
        raise ValueError("vectors is empty: give at least one named vector")
    points = {name: np.asarray(vector, dtype=np.float64) for name, vector in vectors.items()}
    for name, point in points.items():
        if point.shape != (2,):
            raise ValueError(f"vectors[{name!r}] must have shape (2,), got {point.shape}")

    ax = new_axes((4.5, 4.5), ax)
    for index, (name, point) in enumerate(points.items()):
        colour = OKABE_ITO[index % len(OKABE_ITO)]
        ax.annotate(
            "",
            xy=tuple(point),
            xytext=(0.0, 0.0),
            arrowprops={"arrowstyle": "-|>", "color": colour, "linewidth": 2},
        )
        ax.annotate(name, xy=tuple(point), xytext=(4, 4), textcoords="offset points", color=colour)

    reach = max(1.0, max(float(np.abs(point).max()) for point in points.values())) * 1.2
    ax.set_xlim(-reach, reach)
    ax.set_ylim(-reach, reach)
    ax.set_aspect("equal")
    ax.axhline(0.0, color="grey", linewidth=0.6)
    ax.axvline(0.0, color="grey", linewidth=0.6)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return ax.figure
