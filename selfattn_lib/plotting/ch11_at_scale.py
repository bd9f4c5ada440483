"""Figures of chapter 11, attention at scale."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from selfattn_lib.online_softmax import running_statistics
from selfattn_lib.plotting.base import (
    OKABE_ITO,
    SEQUENTIAL_CMAP,
    column_width,
    current_layout,
    for_the_page,
    heatmap,
    new_axes,
    shared_colorbar,
    small_multiples,
)
from selfattn_lib.plotting.diagrams import ROLE_COLOURS, Diagram, Grid, flow


def _fitted(title: str, fontsize: float = 12.0, width: float | None = None) -> str:
    """``title`` as drawn: on a phone, each line wrapped at spaces into as few lines of
    about equal length as fit ``width`` inches (the phone's column by default;
    ``fontsize``-point characters are taken as 0.6 of the size wide, a ``$…$`` formula as
    its characters); on a laptop, as is."""
    if current_layout() != "phone":
        return title
    width = column_width() - 0.2 if width is None else width
    per_line = int(width / (0.6 * fontsize / 72))
    lines = []
    for line in title.split("\n"):
        fewest = len(textwrap.wrap(line, per_line, break_long_words=False)) or 1
        # The narrowest wrapping into that many lines: lines of about equal length.
        narrowest = next(
            w
            for w in range(max(1, -(-len(line) // fewest)), per_line + 1)
            if len(textwrap.wrap(line, w, break_long_words=False)) <= fewest
        )
        lines.append(textwrap.fill(line, narrowest, break_long_words=False))
    return "\n".join(lines)


@for_the_page
def scaling_plot(
    sizes: Sequence[float],
    series: dict[str, Sequence[float]],
    *,
    reference_slopes: Sequence[float] = (1.0, 2.0),
    xlabel: str = "sequence length $T$",
    ylabel: str = "",
    title: str = "",
    ax: Axes | None = None,
) -> Figure:
    """Draw measured costs against a size on log–log axes, with reference slopes.

    A cost proportional to ``size**p`` is a straight line of slope ``p`` on log–log axes.
    Each reference line (dashed, grey) has one of ``reference_slopes`` and passes through
    the last point of the first series, so that series' growth can be compared by eye.
    On a phone the legend goes under the axes, so that it covers no line.

    Shapes
    ------
    ``sizes``: ``(n,)`` positive; every value of ``series``: ``(n,)`` positive.

    Examples
    --------
    >>> fig = scaling_plot([1, 2, 4], {"T squared": [1, 4, 16]}, reference_slopes=(2,))
    >>> [line.get_label() for line in fig.axes[0].lines]
    ['T squared', 'slope 2']
    >>> fig.axes[0].lines[1].get_ydata().tolist()  # through the last point, (4, 16)
    [1.0, 4.0, 16.0]
    """
    x = np.asarray(sizes, dtype=np.float64)
    if x.ndim != 1 or x.size < 2 or not (np.isfinite(x) & (x > 0)).all():
        raise ValueError(f"sizes must be at least 2 positive numbers, got {sizes!r}")
    if not series:
        raise ValueError("series must hold at least one named sequence of costs")
    curves = {}
    for name, values in series.items():
        y = np.asarray(values, dtype=np.float64)
        if y.shape != x.shape or not (np.isfinite(y) & (y > 0)).all():
            raise ValueError(
                f"series {name!r} must hold {x.size} positive numbers (one per size), "
                f"got shape {y.shape}"
            )
        curves[name] = y

    below = ax is None and current_layout() == "phone"  # the legend under the axes
    n_entries = len(curves) + min(len(reference_slopes), 4)
    ax = new_axes((6.5, 3.6 + (0.2 * n_entries + 0.2 if below else 0.0)), ax)
    markers = "osD^v<>p"
    for index, (name, y) in enumerate(curves.items()):
        ax.plot(
            x,
            y,
            marker=markers[index % len(markers)],
            color=OKABE_ITO[index % len(OKABE_ITO)],
            label=name,
        )
    anchor_x, anchor_y = x[-1], next(iter(curves.values()))[-1]
    for slope, style in zip(reference_slopes, ("--", ":", "-.", (0, (1, 3))), strict=False):
        ax.plot(
            x,
            anchor_y * (x / anchor_x) ** slope,
            color="grey",
            linestyle=style,
            linewidth=1.2,
            label=f"slope {slope:g}",
        )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(_fitted(title))
    if below:
        ax.figure.legend(loc="outside lower center", fontsize=8)
    else:
        ax.legend(loc="upper left", fontsize=8)
    ax.grid(True, which="major", alpha=0.3)
    return ax.figure


def most_rescaled_row(scores: np.ndarray, block_size: int) -> int:
    """The query whose running maximum grows at the most blocks of ``block_size`` keys (the
    first such query on a tie): the liveliest row to follow through online softmax.

    Shapes
    ------
    ``scores``: ``(T_q, T_k)``.

    Examples
    --------
    >>> most_rescaled_row(np.array([[3.0, 2.0, 1.0], [1.0, 2.0, 3.0]]), 1)
    1
    """
    values = np.asarray(scores, dtype=np.float64)
    if values.ndim != 2 or values.size == 0:
        raise ValueError(f"scores must have shape (T_q, T_k), got shape {values.shape}")
    n_blocks = -(-values.shape[1] // block_size)
    block_maxima = np.stack(
        [values[:, b * block_size : (b + 1) * block_size].max(axis=1) for b in range(n_blocks)],
        axis=1,
    )  # (T_q, n_blocks)
    growth = np.diff(np.maximum.accumulate(block_maxima, axis=1), axis=1) > 0
    return int(growth.sum(axis=1).argmax())


@for_the_page
def block_schedule(
    scores: np.ndarray,
    block_size: int,
    *,
    row: int | None = None,
    axes: Sequence[Axes] | None = None,
) -> Figure:
    """Draw how online softmax walks through the scores one block of keys at a time.

    Three panels, in a figure as wide as the book's column: the grid across the top, the
    two running statistics side by side below it. Top: the ``(T_q, T_k)`` grid of query–key
    pairs, cut into blocks of ``block_size`` keys; the number and colour of a block is the
    step at which it is processed (only that ``T_q × block_size`` tile of scores exists at a
    time), and query ``row`` is outlined. Bottom left: the scores of query ``row`` (dots)
    and the running maximum ``m`` after each step (one segment per block), which ends at the
    row's maximum (dashed). Bottom right: the running sum ``ℓ = Σ exp(s_j − m)`` after each
    step; when the maximum grows it is first rescaled by ``exp(m_old − m_new)`` (a triangle
    marks those steps), and it ends at the softmax denominator (dashed). Without ``row``, the
    query followed is :func:`most_rescaled_row`. Given ``axes``, the three panels are drawn
    into them in that order (grid, maximum, sum). On a phone the three panels are stacked.

    Shapes
    ------
    ``scores``: ``(T_q, T_k)``; ``axes``: 3 axes.

    Examples
    --------
    >>> scores = np.array([[0.0, 2.0, 1.0, 3.0, -1.0]])
    >>> fig = block_schedule(scores, 2, row=0)
    >>> fig.axes[0].get_title()
    'step = key block: 3 steps, tile 1 × 2 (direct: 1 × 5)'
    >>> fig.axes[2].patches[-1].get_height().round(4)  # ℓ after the last step
    np.float64(1.5713)
    """
    from matplotlib.colors import BoundaryNorm
    from matplotlib.patches import Rectangle
    from matplotlib.ticker import MaxNLocator

    values = np.asarray(scores, dtype=np.float64)
    if values.ndim != 2 or values.size == 0:
        raise ValueError(f"scores must have shape (T_q, T_k), got shape {values.shape}")
    if not np.isfinite(values).all():
        raise ValueError("scores must be finite (a masked -inf key has no place in this picture)")
    if isinstance(block_size, bool) or not isinstance(block_size, int | np.integer):
        raise TypeError(f"block_size must be an integer, got {block_size!r}")
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, got {block_size}")
    t_q, t_k = values.shape
    if row is None:
        row = most_rescaled_row(values, block_size)
    if isinstance(row, bool) or not isinstance(row, int | np.integer) or not 0 <= row < t_q:
        raise ValueError(f"row must be a query index in 0 … {t_q - 1}, got {row!r}")
    n_steps = -(-t_k // block_size)  # ceil(T_k / block_size)
    step_of_key = np.arange(t_k) // block_size + 1  # (T_k,): 1, 1, …, 2, 2, …
    maxima, sums = running_statistics(values[row], block_size)

    if axes is None and current_layout() == "phone":  # stacked
        fig = Figure(figsize=(column_width(), 8.6), layout="constrained")
        panels = fig.subplot_mosaic([["grid"], ["max"], ["sum"]], height_ratios=[1, 1.1, 1.1])
        axes = [panels["grid"], panels["max"], panels["sum"]]
    elif axes is None:
        fig = Figure(figsize=(column_width(), 5.0), layout="constrained")
        panels = fig.subplot_mosaic([["grid", "grid"], ["max", "sum"]], height_ratios=[1, 1.25])
        axes = [panels["grid"], panels["max"], panels["sum"]]
    if len(axes) != 3:
        raise ValueError(f"axes must hold 3 axes, got {len(axes)}")
    grid_ax, max_ax, sum_ax = axes
    image = grid_ax.imshow(
        np.broadcast_to(step_of_key, (t_q, t_k)),
        cmap=SEQUENTIAL_CMAP,
        norm=BoundaryNorm(np.arange(0.5, n_steps + 1.5), 256),
        aspect="auto",
    )
    colours = [image.cmap(image.norm(step)) for step in range(1, n_steps + 1)]
    number_every = -(-n_steps // 16)  # at most 16 blocks numbered, so that numbers fit
    for step in range(1, n_steps + 1):
        first = (step - 1) * block_size
        last = min(step * block_size, t_k) - 1
        if step > 1:
            grid_ax.axvline(first - 0.5, color="white", linewidth=1.5)
        if (step - 1) % number_every:
            continue
        grid_ax.text(
            (first + last) / 2,
            (t_q - 1) / 2,
            str(step),
            ha="center",
            va="center",
            fontsize=11 if n_steps <= 16 else 8,
            fontweight="bold",
            color="white" if step <= (n_steps + 1) / 2 else "black",
        )
    grid_ax.add_patch(
        Rectangle((-0.5, row - 0.5), t_k, 1, fill=False, edgecolor=OKABE_ITO[1], linewidth=2.0)
    )
    grid_ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    grid_ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    grid_ax.set_xlabel("key $j$")
    grid_ax.set_ylabel("query $i$")
    grid_ax.set_title(
        _fitted(
            f"step = key block: {n_steps} steps, tile {t_q} × {min(block_size, t_k)} "
            f"(direct: {t_q} × {t_k})"
        )
    )
    stride = -(-n_steps // 8)  # at most 8 numbered ticks on the colour bar
    colorbar = grid_ax.figure.colorbar(image, ax=grid_ax, ticks=range(1, n_steps + 1, stride))
    colorbar.set_label("step")

    keys = np.arange(t_k)
    max_ax.scatter(keys, values[row], c=[colours[s - 1] for s in step_of_key], s=18, zorder=3)
    for step in range(1, n_steps + 1):
        first = (step - 1) * block_size
        last = min(step * block_size, t_k) - 1
        max_ax.hlines(maxima[step - 1], first - 0.4, last + 0.4, color=OKABE_ITO[1], linewidth=2.5)
    max_ax.axhline(values[row].max(), color="grey", linestyle="--", linewidth=1.0)
    max_ax.plot([], [], color=OKABE_ITO[1], linewidth=2.5, label="running max $m$ after the block")
    max_ax.plot([], [], color="grey", linestyle="--", label="max of the whole row")
    max_ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    max_ax.set_xlabel("key $j$")
    max_ax.set_ylabel(f"score $s_{{{row}j}}$")
    max_ax.set_title(f"query {row}: scores and\nrunning maximum", fontsize=11)
    max_ax.legend(loc="lower right", fontsize=8)

    steps = np.arange(1, n_steps + 1)
    sum_ax.bar(steps, sums, color=colours, edgecolor="black", linewidth=0.5)
    sum_ax.axhline(sums[-1], color="grey", linestyle="--", linewidth=1.0, label="final ℓ")
    grew = np.flatnonzero(np.diff(maxima) > 0) + 2  # steps at which m grew: ℓ was rescaled
    top = sums.max() * 1.45  # room for the markers and the legend
    if grew.size:
        sum_ax.plot(
            grew,
            sums[grew - 1] + 0.05 * top,
            linestyle="none",
            marker="v",
            markersize=7,
            color=OKABE_ITO[1],
            label="m grew: ℓ rescaled first",
        )
    sum_ax.set_xticks(steps[:: -(-n_steps // 8)])  # at most 8 ticks
    sum_ax.set_xlabel("step (key block)")
    sum_ax.set_ylabel("running sum ℓ = Σ exp($s_{ij}$ − m)")
    sum_ax.set_ylim(0, top)
    sum_ax.set_title(f"query {row}: running sum\nof exponentials", fontsize=11)
    sum_ax.legend(loc="upper left", fontsize=8)
    return grid_ax.figure


@for_the_page
def kv_cache_growth(
    tokens: Sequence[str],
    queries: Sequence[np.ndarray],
    keys: Sequence[np.ndarray],
    values: Sequence[np.ndarray],
    weights: Sequence[np.ndarray],
    *,
    title: str = "",
) -> Diagram:
    """Draw a KV cache growing over the first decoding steps (a computed diagram).

    One line per step ``s``: the newest token's query ``q{s}``, the cached keys ``K{s}`` and
    values ``V{s}`` after the step (one row per token so far, the newest marked "← new") and
    the query's attention weights ``a{s}`` over them; the first line names the four parts.
    Every number is one the caller's cache code computed; a test reads them back
    (:func:`~selfattn_lib.plotting.diagrams.read_back`, grids ``"q1"``, ``"K1"``, ``"a1"``,
    ``"V1"``, …).

    Shapes
    ------
    ``tokens``: the ``n`` tokens fed in; for step ``s = 1 … n``: ``queries[s - 1]``
    ``(D_h,)``, ``keys[s - 1]`` and ``values[s - 1]`` ``(s, D_h)``, ``weights[s - 1]``
    ``(s,)``.

    Examples
    --------
    >>> from selfattn_lib.plotting.diagrams import read_back
    >>> d = kv_cache_growth(["a"], [np.ones(2)], [np.ones((1, 2))], [np.zeros((1, 2))], [[1.0]])
    >>> read_back(d.figure, "K1").tolist()
    [[1.0, 1.0]]
    """
    n_steps = len(tokens)
    parts = {"queries": queries, "keys": keys, "values": values, "weights": weights}
    for name, part in parts.items():
        if len(part) != n_steps:
            raise ValueError(f"{name} must hold one entry per token ({n_steps}), got {len(part)}")
    items: list[Grid | str] = []
    for step in range(1, n_steps + 1):
        rows = [f"{token} ← new" if i == step - 1 else token for i, token in enumerate(tokens)]
        rows = rows[:step]
        k, v = (np.asarray(part[step - 1], dtype=np.float64) for part in (keys, values))
        a = np.asarray(weights[step - 1], dtype=np.float64)
        if k.shape[0] != step or v.shape[0] != step or a.shape != (step,):
            raise ValueError(
                f"after step {step} the cache holds {step} rows: keys {k.shape}, values "
                f"{v.shape} and weights {a.shape} do not"
            )
        notes = ("new query", "cached keys", "softmax", "cached values")
        notes = notes if step == 1 else ("",) * 4  # named once, on the first line
        query = Grid(f"q{step}", queries[step - 1], role="query", fmt=".1f", note=notes[0])
        items += [
            _line_start(f"step {step}:", query),
            query,
            "·",
            Grid(f"K{step}", k, rows=rows, role="key", fmt=".1f", note=notes[1]),
            "→",
            Grid(f"a{step}", a, cols=list(tokens[:step]), role="weights", note=notes[2]),
            "×",
            Grid(f"V{step}", v, role="value", fmt=".1f", note=notes[3]),
        ]
    return flow(*items, title=title)


def _line_start(label: str, grid: Grid) -> str:
    """``label``, which goes before ``grid`` in a flow; on a phone, led by spaces that
    fill the line with ``grid``, so that the flow's wrapping starts a line with it (a
    step of the KV cache wraps onto several lines there, and each should start one)."""
    if current_layout() != "phone":
        return label
    from selfattn_lib.plotting.diagrams import _CHAR, _GAP, _measure

    room = column_width() - _measure(grid).width - 0.05  # what the label may fill
    characters = int((room - 2 * _GAP) / (_CHAR * 1.25))  # as flow measures a string
    return label.rjust(max(characters, len(label)))  # next to its grid


def _size(n_bytes: int) -> str:
    """A byte count as the reader reads it: 64 MiB, 16 KiB, 512 bytes."""
    for unit, factor in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n_bytes >= factor:
            return f"{n_bytes / factor:.4g} {unit}"
    return f"{n_bytes} bytes"


@for_the_page
def fast_and_slow_memory(
    direct_slow: dict[str, int],
    blocked_slow: dict[str, int],
    blocked_fast: dict[str, int],
    *,
    scores: Sequence[str] = (),
    title: str = "",
) -> Diagram:
    """Draw what direct and blocked attention keep in slow and in fast memory (a computed
    diagram).

    Two columns. Left, direct attention: the arrays it writes to slow (main) memory, the
    ``T × T`` ones included, each read back for the next step. Right, blocked attention
    (online softmax): what stays in slow memory, and the few arrays of one step kept in
    fast memory (a processor's cache, a GPU's on-chip memory). Entries named in ``scores``
    (matrices of scores or weights) are drawn in the scores' colour. Sizes are printed from
    the given byte counts (each text's ``gid`` is ``"<column>/<memory>/<name>"``, so a test
    reads them back). On a phone the blocked column goes under the direct one.

    Shapes
    ------
    Not arrays: each argument maps a name to a number of bytes.

    Examples
    --------
    >>> d = fast_and_slow_memory({"S": 2**26}, {"Q": 2**20}, {"tile": 2**14}, scores=["S"])
    >>> [t.get_text() for t in d.figure.axes[0].texts if t.get_gid() == "direct/slow/S"]
    ['64 MiB']
    >>> d.alt.startswith("Computed diagram: what attention keeps in slow and fast memory")
    True
    """
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    columns = {
        "direct": ("direct: the whole score matrix", direct_slow, {}),
        "blocked": ("blocked: online softmax", blocked_slow, blocked_fast),
    }
    for name, (_, slow, fast) in columns.items():
        for part in (slow, fast):
            for label, n_bytes in part.items():
                if isinstance(n_bytes, bool) or not isinstance(n_bytes, int | np.integer):
                    raise TypeError(f"{name}: {label!r} must be a whole number of bytes")
                if n_bytes <= 0:
                    raise ValueError(f"{name}: {label!r} must be a positive number of bytes")
    line = 0.2  # inches per entry
    slow_lines = max(len(direct_slow), len(blocked_slow))
    fast_lines = max(len(blocked_fast), 1)
    slow_height, fast_height = 0.45 + line * slow_lines, 0.45 + line * fast_lines
    section = 0.5 + slow_height + 0.5 + fast_height + 0.1  # a column, from its heading down
    stacked = current_layout() == "phone"  # the columns one above the other
    width = column_width() - 0.2  # a tight bounding box adds 0.1 in on either side
    title = _fitted(title, fontsize=10.5, width=width)  # on a phone, wrapped to the column
    title_extra = 0.21 * title.count("\n")  # inches for each wrapped line of the title
    height = section * (len(columns) if stacked else 1) + title_extra
    fig = Figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.axis("off")
    if title:
        ax.text(width / 2, height - 0.05, title, ha="center", va="top", fontsize=10.5)
    box_width = width - 0.2 if stacked else width / 2 - 0.15
    alt_parts = []
    for index, (name, (heading, slow, fast)) in enumerate(columns.items()):
        left = 0.1 if stacked else 0.1 + index * (width / 2)
        slow_top = height - title_extra - 0.5 - (index * section if stacked else 0.0)
        fast_top = slow_top - slow_height - 0.5
        ax.text(
            left + box_width / 2,
            slow_top + 0.12,
            heading,
            ha="center",
            fontsize=10,
            fontweight="bold",
        )
        boxes = (
            ("slow", "slow memory (main memory)", slow, slow_top, slow_height, "#f2f2f2"),
            (
                "fast",
                "fast memory (on-chip: SRAM, CPU caches)",
                fast,
                fast_top,
                fast_height,
                "#e6f0f7",
            ),
        )
        described = []
        for memory, label, entries, top, box_height, fill in boxes:
            ax.add_patch(
                FancyBboxPatch(
                    (left, top - box_height),
                    box_width,
                    box_height,
                    boxstyle="round,pad=0.02",
                    facecolor=fill,
                    edgecolor="#555555",
                )
            )
            ax.text(left + 0.08, top - 0.08, label, va="top", fontsize=9, style="italic")
            if not entries:
                ax.text(
                    left + 0.08,
                    top - 0.33,
                    "rows of S and A pass through",
                    va="top",
                    fontsize=8.5,
                    color="#333333",
                )
            for row, (entry, n_bytes) in enumerate(entries.items()):
                y = top - 0.33 - row * line
                colour = ROLE_COLOURS["scores"] if entry in scores else "#222222"
                weight = "bold" if entry in scores else "normal"
                ax.text(
                    left + 0.12, y, entry, va="top", fontsize=8.5, color=colour, fontweight=weight
                )
                text = ax.text(
                    left + box_width - 0.1,
                    y,
                    _size(int(n_bytes)),
                    va="top",
                    ha="right",
                    fontsize=8.5,
                    color=colour,
                    fontweight=weight,
                )
                text.set_gid(f"{name}/{memory}/{entry}")
            listed = "; ".join(f"{e} {_size(int(b))}" for e, b in entries.items())
            described.append(f"{label}: {listed or 'rows of S and A pass through'}")
        arrow_label = (
            "write S and A,\nread them back" if name == "direct" else "load blocks,\nwrite outputs"
        )
        ax.add_patch(
            FancyArrowPatch(
                (left + box_width / 2, fast_top + 0.03),
                (left + box_width / 2, slow_top - slow_height - 0.03),
                arrowstyle="<|-|>",
                mutation_scale=12,
                color="#555555",
            )
        )
        ax.text(
            left + box_width / 2 + 0.1,
            fast_top + 0.25,
            arrow_label,
            va="center",
            fontsize=8.5,
            color="#333333",
        )
        alt_parts.append(f"{heading}. " + ". ".join(described) + ".")
    alt = "Computed diagram: what attention keeps in slow and fast memory" + (
        f" ({title})" if title else ""
    )
    return Diagram(fig, f"{alt}. " + " ".join(alt_parts))


#: What a decoding step does with a position, as drawn by :func:`decoding_work`.
WORK_LEVELS = {0.0: "not yet", 0.5: "read from\ncache", 1.0: "computed"}


@for_the_page
def decoding_work(work: dict[str, np.ndarray]) -> Figure:
    """Draw, side by side, which positions each decoding step computes (1), reads from a
    cache (0.5) or does not reach yet (0), one panel per way of decoding.

    Each panel's title gives the name and the number of positions computed (the count of
    1s, read off the array as drawn). On a phone the panels are stacked.

    Shapes
    ------
    Every value of ``work``: ``(n_steps, n_positions)`` with entries in ``WORK_LEVELS``.

    Examples
    --------
    >>> fig = decoding_work({"cache": np.array([[1.0, 0.0], [0.5, 1.0]])})
    >>> fig.axes[0].get_title().splitlines()
    ['cache:', '2 positions computed']
    """
    if not work:
        raise ValueError("work must hold at least one named (steps, positions) array")
    arrays = {name: np.asarray(array, dtype=np.float64) for name, array in work.items()}
    for name, array in arrays.items():
        if array.ndim != 2 or not np.isin(array, list(WORK_LEVELS)).all():
            raise ValueError(
                f"{name!r} must be a (steps, positions) array of {sorted(WORK_LEVELS)}, "
                f"got shape {array.shape}"
            )
    height = 3.5 if current_layout() == "phone" else 2.6  # a phone's panels are wider
    fig, axes = small_multiples(len(arrays), columns=2, panel_height=height)
    for ax, (name, array) in zip(axes, arrays.items(), strict=True):
        n_steps, n_positions = array.shape
        heatmap(
            array,
            [f"step {s + 1}" for s in range(n_steps)],
            [f"t{i}" for i in range(n_positions)],
            title=f"{name}:\n{int((array == 1.0).sum())} positions computed",
            xlabel="position",
            ylabel="decoding step",
            annotate=False,
            vmin=0.0,
            vmax=1.0,
            colorbar=False,
            ax=ax,
        )
    label = "what the step does with the position"
    if current_layout() == "phone":  # under the stacked panels, as wide as they are
        bar = fig.colorbar(axes[0].images[0], ax=axes, location="bottom", label=label, aspect=25)
    else:
        shared_colorbar(axes, label)
        bar = axes[0].images[0].colorbar
    bar.set_ticks(list(WORK_LEVELS), labels=list(WORK_LEVELS.values()))
    return fig
