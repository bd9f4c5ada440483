"""Figures of chapter 13, attention in modern LLMs: RoPE at a KV cache's positions, query
heads sharing key–value heads, sliding windows with attention sinks, and FlashAttention's
tiles and the memory traffic they save.

Every figure draws arrays the chapter's concept modules (``rotary``, ``grouped_query``,
``sliding_window``, ``flash_attention``) computed, handed over as plain NumPy arrays and
numbers; none is imported here. Figures are at most as wide as the book's column, with at
most two panels side by side and no text under 8.5 points, so that they stay legible when a
phone scales them down to about 360 pixels.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping

import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle
from matplotlib.patheffects import Normal, Stroke
from matplotlib.ticker import FuncFormatter, MaxNLocator, MultipleLocator

from selfattn_lib.plotting.base import (
    COLUMN_WIDTH,
    OKABE_ITO,
    column_width,
    current_layout,
    for_the_page,
    new_axes,
    text_colour,
)
from selfattn_lib.plotting.ch11_at_scale import _size
from selfattn_lib.plotting.diagrams import Diagram, Grid, flow

#: The smallest text of the chapter's figures, in points (11.8 px at 100 dpi on a laptop).
SMALLEST_FONT = 8.5
_LINE_STYLES = ("-", "--", "-.", ":", (0, (5, 1, 1, 1)), (0, (1, 1)))
# A cell a mask lets through, and one it does not: bluish green (Okabe–Ito) on light grey.
_MAY_ATTEND, _MAY_NOT = OKABE_ITO[2], "#e8e8e8"
_YELLOW = OKABE_ITO[6]


def _whole_number(name: str, value: object, *, smallest: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be a whole number, got {value!r}")
    if value < smallest:
        raise ValueError(f"{name} must be at least {smallest}, got {value}")
    return int(value)


def _vector(name: str, values: object, length: int | None = None) -> np.ndarray:
    """``values`` as a finite 1-D float array (of ``length`` entries if given)."""
    array = np.asarray(values)
    if array.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold numbers, got dtype {array.dtype}")
    array = array.astype(np.float64)
    if array.ndim != 1 or array.size == 0 or (length is not None and array.size != length):
        wanted = "(n,)" if length is None else f"({length},)"
        raise ValueError(f"{name} must have shape {wanted}, got {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite (no NaN or infinity)")
    return array


def _legend(ax: Axes, *, columns: int = 1, **options: object) -> None:
    """The axes' legend, inside the axes on a laptop (``options`` say where); on a phone, under
    the figure in ``columns`` columns, where it cannot cover a line of the narrower plot."""
    if current_layout() == "phone":
        ax.figure.legend(
            handles=ax.get_legend_handles_labels()[0], loc="outside lower center",
            ncols=columns, fontsize=9, frameon=False,
        )  # fmt: skip
    else:
        ax.legend(fontsize=9, **options)


def _compact(number: float) -> str:
    """A count as it is read on a bar: ``512``, ``66.6 k``, ``2.29 M``, ``1.2 G``."""
    for suffix, factor in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(number) >= factor:
            return f"{number / factor:.3g} {suffix}"
    return f"{number:.3g}"


@for_the_page
def rotary_step_flow(
    query: np.ndarray,
    rotated_query: np.ndarray,
    keys: np.ndarray,
    key_positions: np.ndarray,
    scores: np.ndarray,
    *,
    position: int,
) -> Diagram:
    """One decoding step of attention with RoPE and a KV cache, drawn with its numbers (a
    computed diagram): the new token's query ``q``, the same query rotated by its position
    (``q rotated``), the cached keys (``K cached``, each rotated at its own position when it
    was stored; the last row is the new token's key, at ``position``) and the query's scores
    against them, one per key position.

    Queries are blue, keys vermillion and scores purple, as everywhere in the course; every
    number can be read back with :func:`~selfattn_lib.plotting.diagrams.read_back` (grids
    ``"q"``, ``"q rotated"``, ``"K cached"``, ``"scores"``).

    Shapes
    ------
    ``query``, ``rotated_query``: ``(D_h,)``; ``keys``: ``(n, D_h)``; ``key_positions``:
    ``(n,)`` whole numbers ending with ``position``; ``scores``: ``(n,)``. Small ``D_h``
    (at most 8) and ``n`` (at most 8), so that the diagram fits the column.

    Examples
    --------
    >>> from selfattn_lib.plotting.diagrams import read_back
    >>> d = rotary_step_flow([1.0, 0.0], [0.0, 1.0], np.eye(2), [0, 1], [0.0, 0.71],
    ...                      position=1)
    >>> read_back(d.figure, "scores").tolist()
    [[0.0, 0.71]]
    """
    position = _whole_number("position", position, smallest=0)
    q = _vector("query", query)
    d_head = q.size
    if d_head > 8:
        raise ValueError(f"query has D_h = {d_head} features: at most 8 fit the column")
    q_rotated = _vector("rotated_query", rotated_query, d_head)
    k = np.asarray(keys)
    if k.dtype.kind not in "biuf":
        raise TypeError(f"keys must hold numbers, got dtype {k.dtype}")
    k = k.astype(np.float64)
    if k.ndim != 2 or k.shape[1] != d_head or not 1 <= k.shape[0] <= 8:
        raise ValueError(
            f"keys must have shape (n, D_h) with D_h = {d_head} (the query's) and 1 <= n <= 8, "
            f"got shape {k.shape}"
        )
    if not np.isfinite(k).all():
        raise ValueError("keys must be finite (no NaN or infinity)")
    n_keys = k.shape[0]
    positions = np.asarray(key_positions)
    if positions.dtype.kind not in "iu":
        raise TypeError(f"key_positions must be whole numbers, got dtype {positions.dtype}")
    if positions.shape != (n_keys,):
        raise ValueError(
            f"key_positions must have shape ({n_keys},), one per row of keys {k.shape}, "
            f"got {positions.shape}"
        )
    if positions[-1] != position:
        raise ValueError(
            f"the last key is the new token's: key_positions[-1] must equal position = "
            f"{position}, got {int(positions[-1])}"
        )
    s = _vector("scores", scores)
    if s.size != n_keys:
        raise ValueError(f"scores must have shape ({n_keys},), one per key, got {s.shape}")

    rows = [f"pos {int(p)}" for p in positions]
    rows[-1] += " ← new"
    return flow(
        Grid("q", q, role="query", note="new token's query"),
        f"rotate by {position}·ω →",
        Grid("q rotated", q_rotated, role="query", note=f"at position {position}"),
        "q rotated ·",  # wraps to the start of the next line: the query meets each key
        Grid("K cached", k, rows=rows, role="key", note="rotated when cached"),
        "→",
        Grid("scores", s, cols=[str(int(p)) for p in positions], role="scores",
             note="one per key position"),
        title=f"one decoding step with RoPE: the new token is at position {position}",
    )  # fmt: skip


@for_the_page
def kv_head_groups(
    head_maps: Mapping[str, np.ndarray],
    bytes_per_token: Mapping[str, int] | None = None,
) -> Figure:
    """Which key–value head each query head reads, one panel per way of sharing them
    (multi-head, grouped-query, multi-query), stacked in one column.

    In each panel the ``H`` query heads are a row of boxes on top and the ``H_kv`` key–value
    heads a row below, spread evenly (so a group of consecutive query heads has its key–value
    head under its middle); a line joins query head ``h`` to key–value head ``head_map[h]``. Each
    key–value head has its own Okabe–Ito colour and its query heads are tinted with it. The
    title names the panel, ``H`` and ``H_kv`` and, if ``bytes_per_token`` has the panel's
    name, the KV cache's bytes per token. Every line's ``gid`` is ``"<name>: q<h> → kv<g>"``.

    Shapes
    ------
    Every value of ``head_maps``: ``(H,)`` whole numbers, using each key–value head
    ``0 … H_kv − 1`` (at most 8) at least once, e.g. ``repeat_kv`` of the heads' indices.

    Examples
    --------
    >>> fig = kv_head_groups({"grouped-query": np.array([0, 0, 1, 1])}, {"grouped-query": 64})
    >>> fig.axes[0].get_title()
    'grouped-query: H = 4, H_kv = 2, KV cache 64 bytes per token'
    >>> [line.get_gid() for line in fig.axes[0].lines][1:3]
    ['grouped-query: q1 → kv0', 'grouped-query: q2 → kv1']
    """
    if not isinstance(head_maps, Mapping) or not head_maps:
        raise ValueError("head_maps must map at least one name to an (H,) array of KV heads")
    bytes_per_token = dict(bytes_per_token or {})
    unknown = sorted(set(bytes_per_token) - set(head_maps))
    if unknown:
        raise ValueError(f"bytes_per_token names {unknown}, which are not in head_maps")
    for name, n_bytes in bytes_per_token.items():
        _whole_number(f"bytes_per_token[{name!r}]", n_bytes)
    maps = {}
    for name, head_map in head_maps.items():
        array = np.asarray(head_map)
        if array.dtype.kind not in "iu":
            raise TypeError(
                f"head_maps[{name!r}] must hold whole numbers (KV head indices), "
                f"got dtype {array.dtype}"
            )
        if array.ndim != 1 or array.size == 0 or array.size > 16:
            raise ValueError(
                f"head_maps[{name!r}] must have shape (H,) with 1 <= H <= 16, got {array.shape}"
            )
        n_kv = int(array.max()) + 1
        if array.min() < 0 or n_kv > len(OKABE_ITO) or len(np.unique(array)) != n_kv:
            raise ValueError(
                f"head_maps[{name!r}] must use each KV head 0 … H_kv − 1 (H_kv <= "
                f"{len(OKABE_ITO)}) at least once, got {array.tolist()}"
            )
        maps[name] = array

    widest = max(array.size for array in maps.values())
    width = min(COLUMN_WIDTH, 1.3 + 0.5 * widest)
    width = min(width, column_width())  # on a phone, its column: the boxes closer together
    fig = Figure(figsize=(width, 1.55 * len(maps)), layout="constrained")
    axes = fig.subplots(len(maps), 1, squeeze=False)[:, 0]
    box_width, box_height, query_y, kv_y = 0.8, 0.8, 2.6, 0.0
    for ax, (name, head_map) in zip(axes, maps.items(), strict=True):
        n_heads, n_kv = head_map.size, int(head_map.max()) + 1
        query_x = np.arange(n_heads, dtype=np.float64)  # (H,)
        # KV heads spread evenly: each under the middle of its group when the groups are
        # consecutive query heads (repeat_kv's order), and never on top of each other.
        kv_x = (np.arange(n_kv) + 0.5) * n_heads / n_kv - 0.5  # (H_kv,)
        for h, g in enumerate(head_map):
            line = Line2D(
                [query_x[h], kv_x[g]],
                [query_y - box_height / 2, kv_y + box_height / 2],
                color=OKABE_ITO[g],
                linewidth=1.8,
                gid=f"{name}: q{h} → kv{g}",
            )
            if OKABE_ITO[g] == _YELLOW:  # too light on white without a grey casing
                line.set_path_effects([Stroke(linewidth=3.0, foreground="#666666"), Normal()])
            ax.add_line(line)
        for h, g in enumerate(head_map):
            tint = tuple(1.0 - 0.4 * (1.0 - c) for c in to_rgb(OKABE_ITO[g]))
            _labelled_box(ax, query_x[h], query_y, f"q{h}", tint, OKABE_ITO[g], box_width)
        for g in range(n_kv):
            colour = to_rgb(OKABE_ITO[g])
            _labelled_box(ax, kv_x[g], kv_y, f"kv{g}", colour, "black", box_width)
        ax.text(-0.6, query_y, "query\nheads", ha="right", va="center", fontsize=9)
        ax.text(-0.6, kv_y, "KV\nheads", ha="right", va="center", fontsize=9)
        ax.set_xlim(-2.0, max(widest, 4) - 0.5)
        ax.set_ylim(kv_y - 0.55, query_y + 0.55)
        ax.set_aspect("equal")
        ax.axis("off")
        title = f"{name}: H = {n_heads}, H_kv = {n_kv}"
        if name in bytes_per_token:
            title += f", KV cache {_size(int(bytes_per_token[name]))} per token"
        ax.set_title(title, fontsize=10)
    return fig


def _labelled_box(
    ax: Axes, x: float, y: float, label: str, fill: object, edge: object, size: float
) -> None:
    ax.add_patch(
        Rectangle(
            (x - size / 2, y - size / 2), size, size, facecolor=fill, edgecolor=edge, linewidth=1
        )
    )
    ax.text(
        x, y, label, ha="center", va="center", fontsize=9.5, color=text_colour(to_rgb(fill)),
        gid=label,
    )  # fmt: skip


@for_the_page
def window_masks(masks: Mapping[str, np.ndarray]) -> Figure:
    """Attention masks as grids of query × key positions, one panel per mask (three in one
    row, otherwise two to a row): a bluish-green cell is a key the query may attend, a grey
    one a key it may not. Each title gives the mask's name and how many keys its last query
    sees, the count of True in the last row (e.g. ``"window 4 + 1 sink: 5 keys"``).

    Shapes
    ------
    Every value of ``masks``: boolean ``(T, T)``, True = may attend.

    Examples
    --------
    >>> fig = window_masks({"causal": np.tril(np.ones((4, 4), dtype=bool))})
    >>> fig.axes[0].get_title()
    'causal: 4 keys'
    """
    if not isinstance(masks, Mapping) or not masks:
        raise ValueError("masks must map at least one name to a (T, T) boolean mask")
    arrays = {}
    for name, mask in masks.items():
        array = np.asarray(mask)
        if array.dtype != bool:
            raise TypeError(
                f"masks[{name!r}] must be boolean (True = may attend), got dtype {array.dtype}"
            )
        if array.ndim != 2 or array.shape[0] != array.shape[1] or not 1 <= len(array) <= 32:
            raise ValueError(
                f"masks[{name!r}] must have shape (T, T) with 1 <= T <= 32, got {array.shape}"
            )
        arrays[name] = array
    n_panels = len(arrays)
    columns = 3 if n_panels == 3 else min(2, n_panels)
    if current_layout() == "phone":  # one panel a row, as wide as a phone's column
        columns = 1
    n_rows = -(-n_panels // columns)
    # About 2.4 in a panel: three fill the column; fewer leave the figure narrower, so a
    # phone shrinks it less.
    width = min(column_width(), 0.3 + 2.3 * columns)
    panel_height = 2.75 if columns > 1 else 2.45
    fig = Figure(figsize=(width, panel_height * n_rows + 0.35), layout="constrained")
    grid = fig.subplots(n_rows, columns, squeeze=False)
    axes = list(grid.flat)
    for unused in axes[n_panels:]:
        unused.set_visible(False)
    allowed, masked = np.array(to_rgb(_MAY_ATTEND)), np.array(to_rgb(_MAY_NOT))
    for index, (ax, (name, mask)) in enumerate(zip(axes, arrays.items(), strict=False)):
        n_tokens = len(mask)
        # Two flat colours drawn as an RGB image: no colour map, so nothing to misread.
        ax.imshow(np.where(mask[..., None], allowed, masked), interpolation="nearest")
        ax.set_xticks(np.arange(-0.5, n_tokens), minor=True)
        ax.set_yticks(np.arange(-0.5, n_tokens), minor=True)
        ax.grid(which="minor", color="white", linewidth=1.0)
        ax.tick_params(which="minor", length=0)
        ax.xaxis.set_major_locator(MaxNLocator(5, integer=True))
        ax.yaxis.set_major_locator(MaxNLocator(5, integer=True))
        ax.tick_params(labelsize=9.5)
        last = int(mask[-1].sum())
        ax.set_title(f"{name}: {last} key{'s' if last != 1 else ''}", fontsize=10.5)
        ax.set_xlabel("key position", fontsize=10)
        if index % columns == 0:
            ax.set_ylabel("query position", fontsize=10)
    fig.legend(
        handles=[
            Patch(facecolor=_MAY_ATTEND, label="may attend"),
            Patch(facecolor=_MAY_NOT, edgecolor="#bbbbbb", label="may not"),
        ],
        loc="outside lower center",
        ncols=2,
        fontsize=10,
        frameon=False,
    )
    return fig


@for_the_page
def bits_by_position(
    curves: Mapping[str, np.ndarray],
    *,
    positions: np.ndarray | None = None,
    marks: Mapping[str, float] | None = None,
    title: str = "bits per character at each position",
    legend_columns: int = 1,
    ax: Axes | None = None,
) -> Figure:
    """The mean bits per character a model pays at each position of a text, one line per
    named way of attending (Okabe–Ito colours and distinct line styles), drawn at
    ``positions`` (default ``0 … T − 1``; for instance the centres of blocks that the
    notebook averaged over), and a dotted vertical line at each of ``marks`` (its label in
    the legend), such as the position from which a window no longer sees the first tokens.
    The legend has ``legend_columns`` columns (on a phone, it is under the figure, in two).

    Shapes
    ------
    Every value of ``curves``: ``(T,)``, the same ``T`` for all; ``positions``: ``(T,)``,
    increasing; ``marks``: label → a position inside the range drawn.

    Examples
    --------
    >>> fig = bits_by_position({"full": [3.0, 2.0, 1.5]}, marks={"window = 2": 2})
    >>> fig.axes[0].lines[0].get_ydata().tolist(), fig.axes[0].lines[-1].get_xdata()[0]
    ([3.0, 2.0, 1.5], 2)
    """
    if not isinstance(curves, Mapping) or not curves:
        raise ValueError("curves must map at least one name to a (T,) array of bits")
    arrays = {name: _vector(f"curves[{name!r}]", values) for name, values in curves.items()}
    lengths = {name: array.size for name, array in arrays.items()}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"curves must all have the same length T, got {lengths}")
    n_positions = next(iter(lengths.values()))
    x = np.arange(n_positions) if positions is None else _vector("positions", positions)
    if x.size != n_positions or (np.diff(x) <= 0).any():
        raise ValueError(
            f"positions must be {n_positions} increasing numbers, one per point of the "
            f"curves, got shape {x.shape}"
        )
    marks = {} if marks is None else marks
    if not isinstance(marks, Mapping):
        raise TypeError(f"marks must map labels to positions, got {type(marks).__name__}")
    for label, position in marks.items():
        if not x[0] <= position <= x[-1]:
            raise ValueError(
                f"marks[{label!r}] = {position} is outside the positions drawn, "
                f"{x[0]:g} … {x[-1]:g}"
            )

    # On a phone, taller: the legend goes under the plot.
    ax = new_axes((COLUMN_WIDTH * 0.8, 3.2 if current_layout() == "laptop" else 4.0), ax)
    for index, (name, bits) in enumerate(arrays.items()):
        ax.plot(
            x,
            bits,
            color=OKABE_ITO[index % len(OKABE_ITO)],
            linestyle=_LINE_STYLES[index % len(_LINE_STYLES)],
            linewidth=1.8,
            label=name,
        )
    for index, (label, position) in enumerate(marks.items()):
        ax.axvline(
            position,
            color=("#555555", "#000000")[index % 2],
            linestyle=(":", "-.")[index % 2],
            linewidth=1.5,
            label=label,
        )
    ax.set_xlabel("position in the text")
    ax.set_ylabel("bits per character")
    ax.set_title(title)
    ax.set_xlim(x[0], x[-1])
    ax.grid(alpha=0.3)
    _legend(ax, columns=2, ncol=legend_columns)
    return ax.figure


@for_the_page
def tile_schedule(
    schedule: np.ndarray,
    *,
    block_q: int,
    block_k: int,
    counts: Mapping[str, Mapping[str, int]] | None = None,
) -> Figure:
    """FlashAttention's tiles and the memory traffic they save. Left: the grid of tiles
    (query blocks × key blocks); the computed ones are filled and numbered in the order the
    tiled pass computes them (query blocks outside, key blocks inside), the skipped ones are
    hatched. Right (on a phone, below), given ``counts``: the numbers each method reads from
    and writes to main memory, as bars with their values printed (``1.2 M``).

    Shapes
    ------
    ``schedule``: boolean ``(⌈T_q / block_q⌉, ⌈T_k / block_k⌉)``, True = computed (as
    ``flash_attention.tile_schedule`` returns it); ``counts``: for each method,
    ``{"read": int, "written": int}``.

    Examples
    --------
    >>> fig = tile_schedule(np.tril(np.ones((2, 2), dtype=bool)), block_q=64, block_k=64)
    >>> [text.get_text() for text in fig.axes[0].texts]
    ['1', '2', '3']
    """
    block_q = _whole_number("block_q", block_q)
    block_k = _whole_number("block_k", block_k)
    tiles = np.asarray(schedule)
    if tiles.dtype != bool:
        raise TypeError(f"schedule must be boolean (True = computed), got dtype {tiles.dtype}")
    if tiles.ndim != 2 or tiles.size == 0 or max(tiles.shape) > 16:
        raise ValueError(
            "schedule must have shape (query blocks, key blocks), at most 16 of each, "
            f"got {tiles.shape}"
        )
    bars = _check_counts(counts)

    if bars and current_layout() == "phone":  # the bars under the tiles
        fig = Figure(figsize=(column_width(), 6.4), layout="constrained")
        grid_ax, bar_ax = fig.subplots(2, 1)
    elif bars:
        fig = Figure(figsize=(COLUMN_WIDTH, 3.3), layout="constrained")
        grid_ax, bar_ax = fig.subplots(1, 2)
    else:
        fig = Figure(figsize=(min(COLUMN_WIDTH * 0.55, column_width()), 3.3), layout="constrained")
        grid_ax, bar_ax = fig.subplots(), None
    _draw_tiles(grid_ax, tiles, block_q, block_k)
    if bar_ax is not None:
        _draw_traffic_bars(bar_ax, bars)
    return fig


def _check_counts(
    counts: Mapping[str, Mapping[str, int]] | None,
) -> dict[str, tuple[int, int]]:
    if counts is None:
        return {}
    if not isinstance(counts, Mapping) or not counts:
        raise ValueError("counts must map at least one method to {'read': …, 'written': …}")
    bars = {}
    for method, moved in counts.items():
        if not isinstance(moved, Mapping) or set(moved) != {"read", "written"}:
            raise ValueError(
                f"counts[{method!r}] must be a dict with the keys 'read' and 'written', "
                f"got {moved!r}"
            )
        bars[method] = tuple(
            _whole_number(f"counts[{method!r}][{key!r}]", moved[key], smallest=0)
            for key in ("read", "written")
        )
    return bars


def _draw_tiles(ax: Axes, tiles: np.ndarray, block_q: int, block_k: int) -> None:
    n_q_blocks, n_k_blocks = tiles.shape
    # Up to 8 blocks a side every computed tile is numbered; beyond, the numbers would not
    # fit their cells, and the title gives the order instead.
    numbered = max(tiles.shape) <= 8
    n_computed = int(tiles.sum())
    order = 0
    for i in range(n_q_blocks):  # query blocks outside …
        for j in range(n_k_blocks):  # … key blocks inside
            if tiles[i, j]:
                order += 1
                ax.add_patch(
                    Rectangle(
                        (j - 0.5, i - 0.5), 1, 1, facecolor=OKABE_ITO[5], edgecolor="white",
                        linewidth=1.5, gid=f"tile[{i},{j}]",
                    )
                )  # fmt: skip
                if numbered:
                    ax.text(
                        j, i, str(order), ha="center", va="center", fontsize=11,
                        fontweight="bold", color="black", gid=f"order[{i},{j}]",
                    )  # fmt: skip
            else:
                ax.add_patch(
                    Rectangle(
                        (j - 0.5, i - 0.5), 1, 1, facecolor="white", edgecolor="#999999",
                        hatch="///", linewidth=0.8, gid=f"tile[{i},{j}]",
                    )
                )  # fmt: skip
    ax.set_xlim(-0.5, n_k_blocks - 0.5)
    ax.set_ylim(n_q_blocks - 0.5, -0.5)  # query block 0 on top, like a score matrix
    ax.set_aspect("equal")
    ax.xaxis.set_major_locator(MaxNLocator(8, integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(8, integer=True))
    ax.set_xlabel(f"key block ({block_k} keys each)")
    ax.set_ylabel(f"query block ({block_q} queries each)")
    ax.tick_params(length=0)
    order_text = "numbered in order" if numbered else "computed row by row"
    ax.set_title(
        f"{n_computed} of {tiles.size} tiles computed\n({order_text}; hatched: skipped)",
        fontsize=10,
    )


def _draw_traffic_bars(ax: Axes, bars: dict[str, tuple[int, int]]) -> None:
    positions = np.arange(len(bars))
    read = np.array([moved[0] for moved in bars.values()], dtype=np.float64)  # (methods,)
    written = np.array([moved[1] for moved in bars.values()], dtype=np.float64)  # (methods,)
    read_bars = ax.bar(positions - 0.2, read, width=0.4, color=OKABE_ITO[0], label="read")
    written_bars = ax.bar(positions + 0.2, written, width=0.4, color=OKABE_ITO[4], label="written")
    for drawn, values in ((read_bars, read), (written_bars, written)):
        ax.bar_label(drawn, labels=[_compact(v) for v in values], fontsize=9, padding=2)
    ax.set_xticks(positions, labels=list(bars))
    ax.set_ylim(0, max(read.max(), written.max(), 1.0) * 1.2)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: _compact(value)))
    ax.set_xlabel("method")
    ax.set_ylabel("numbers moved")
    ax.set_title("main-memory traffic, counted", fontsize=10)
    ax.legend(fontsize=9, loc="upper right")


@for_the_page
def traffic_by_length(
    lengths: np.ndarray,
    traffic: Mapping[str, np.ndarray],
    *,
    ylabel: str,
    title: str = "memory traffic against sequence length",
) -> Figure:
    """Memory traffic against the sequence length on log–log axes, one line per method, and
    at the longest length the ratio of the first method's traffic to the second's, written
    beside a bracket joining the two.

    Shapes
    ------
    ``lengths``: ``(n,)`` positive, ``n >= 2``; every value of ``traffic``: ``(n,)`` positive.

    Examples
    --------
    >>> fig = traffic_by_length([256, 512], {"naive": [4e5, 1.6e6], "tiled": [1e5, 2e5]},
    ...                         ylabel="numbers moved")
    >>> fig.axes[0].get_title().splitlines()[1]
    '(naive ÷ tiled at 512 tokens: 8.0×)'
    >>> [text.get_text() for text in fig.axes[0].texts if text.get_gid() == "ratio"]
    ['8.0×']
    """
    x = _vector("lengths", lengths)
    if x.size < 2 or (x <= 0).any():
        raise ValueError(f"lengths must hold at least 2 positive numbers, got {x.tolist()}")
    if not isinstance(traffic, Mapping) or not traffic:
        raise ValueError("traffic must map at least one method to an (n,) array")
    curves = {}
    for name, values in traffic.items():
        y = _vector(f"traffic[{name!r}]", values)
        if y.shape != x.shape or (y <= 0).any():
            raise ValueError(
                f"traffic[{name!r}] must hold {x.size} positive numbers, one per length, "
                f"got shape {y.shape}"
            )
        curves[name] = y

    ax = new_axes((COLUMN_WIDTH * 0.8, 3.4 if current_layout() == "laptop" else 4.4))
    markers = "osD^v<"
    for index, (name, y) in enumerate(curves.items()):
        ax.plot(
            x, y, marker=markers[index % len(markers)], color=OKABE_ITO[index % len(OKABE_ITO)],
            linestyle=_LINE_STYLES[index % len(_LINE_STYLES)], linewidth=1.8, label=name,
        )  # fmt: skip
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    step = -(-x.size // 5)  # at most 5 labelled lengths
    ax.set_xticks(x[::step], labels=[f"{value:,.0f}" for value in x[::step]])
    ax.minorticks_off()
    if len(curves) >= 2:
        (first, y_first), (second, y_second) = list(curves.items())[:2]
        ax.annotate(
            "",
            xy=(x[-1], y_second[-1]),
            xytext=(x[-1], y_first[-1]),
            arrowprops={"arrowstyle": "<->", "color": "#333333", "linewidth": 1.2},
        )
        ax.text(
            x[-1] * 1.12,
            np.sqrt(y_first[-1] * y_second[-1]),  # half-way between them on a log axis
            ratio := f"{y_first[-1] / y_second[-1]:.1f}×",
            ha="left",
            va="center",
            fontsize=11,
            fontweight="bold",
            gid="ratio",
        )
        ax.set_xlim(right=x[-1] * 2.2)  # room for the ratio
    ax.set_xlabel("sequence length T (tokens)")
    ax.set_ylabel(ylabel)
    if len(curves) >= 2:
        ratio_line = f"({first} ÷ {second} at {x[-1]:,.0f} tokens: {ratio})"
        if current_layout() == "phone":  # as narrow as the plot
            ratio_line = textwrap.fill(ratio_line, 30)
        title = f"{title}\n{ratio_line}"
    ax.set_title(title, fontsize=10.5)
    ax.grid(True, which="major", alpha=0.3)
    _legend(ax, loc="upper left")
    return ax.figure


@for_the_page
def decode_bytes(
    context_lengths: np.ndarray,
    weights_bytes: float,
    cache_bytes: Mapping[str, np.ndarray],
    *,
    title: str = "bytes one decoding step reads",
) -> Figure:
    """What one decoding step reads from memory, against the length of the context: the
    weights (a dashed horizontal line) and, for each entry of ``cache_bytes`` (e.g. a number
    of key–value heads), the weights plus that KV cache, in GiB.

    Shapes
    ------
    ``context_lengths``: ``(n,)`` tokens; ``weights_bytes``: a number; every value of
    ``cache_bytes``: ``(n,)`` bytes of cache read at each length.

    Examples
    --------
    >>> fig = decode_bytes([0, 1024], 2**30, {"H_kv = 8": [0, 2**30]})
    >>> fig.axes[0].lines[1].get_ydata().tolist()  # GiB: weights + cache
    [1.0, 2.0]
    """
    x = _vector("context_lengths", context_lengths)
    if (x < 0).any():
        raise ValueError("context_lengths must not be negative")
    if isinstance(weights_bytes, bool) or not isinstance(weights_bytes, int | float | np.number):
        raise TypeError(f"weights_bytes must be a number of bytes, got {weights_bytes!r}")
    if not np.isfinite(weights_bytes) or weights_bytes <= 0:
        raise ValueError(f"weights_bytes must be positive and finite, got {weights_bytes}")
    if not isinstance(cache_bytes, Mapping) or not cache_bytes:
        raise ValueError("cache_bytes must map at least one name to an (n,) array of bytes")
    caches = {}
    for name, values in cache_bytes.items():
        y = _vector(f"cache_bytes[{name!r}]", values)
        if y.shape != x.shape or (y < 0).any():
            raise ValueError(
                f"cache_bytes[{name!r}] must hold {x.size} non-negative numbers, one per "
                f"context length, got shape {y.shape}"
            )
        caches[name] = y

    gib = 2.0**30
    ax = new_axes((COLUMN_WIDTH * 0.8, 3.4 if current_layout() == "laptop" else 4.4))
    ax.axhline(
        weights_bytes / gib, color="black", linestyle="--", linewidth=1.5,
        label=f"weights alone ({weights_bytes / gib:.3g} GiB)",
    )  # fmt: skip
    for index, (name, cache) in enumerate(caches.items()):
        ax.plot(
            x, (weights_bytes + cache) / gib, color=OKABE_ITO[index % len(OKABE_ITO)],
            linestyle=_LINE_STYLES[index % len(_LINE_STYLES)], linewidth=2.0,
            label=f"weights + cache, {name}",
        )  # fmt: skip
    ax.set_xlim(x.min(), x.max())
    ax.set_ylim(bottom=0)
    # Ticks at a power of two tokens (8,192, 16,384, …), at most 5 of them.
    span = float(x.max() - x.min())
    ax.xaxis.set_major_locator(MultipleLocator(2.0 ** np.floor(np.log2(max(span / 4, 1.0)))))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel("GiB read per step")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    _legend(ax, loc="upper left")
    return ax.figure
