"""Figures of chapter 11, attention at scale."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from selfattn_lib.online_softmax import running_statistics
from selfattn_lib.plotting.base import (
    COLUMN_WIDTH,
    OKABE_ITO,
    SEQUENTIAL_CMAP,
    new_axes,
)


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

    ax = new_axes((6.5, 4.3), ax)
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
    ax.set_title(title)
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(True, which="major", alpha=0.3)
    return ax.figure


def block_schedule(
    scores: np.ndarray,
    block_size: int,
    *,
    row: int = 0,
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
    marks those steps), and it ends at the softmax denominator (dashed). Given ``axes``, the
    three panels are drawn into them in that order (grid, maximum, sum).

    Shapes
    ------
    ``scores``: ``(T_q, T_k)``; ``axes``: 3 axes.

    Examples
    --------
    >>> scores = np.array([[0.0, 2.0, 1.0, 3.0, -1.0]])
    >>> fig = block_schedule(scores, 2)
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
    if isinstance(row, bool) or not isinstance(row, int | np.integer) or not 0 <= row < t_q:
        raise ValueError(f"row must be a query index in 0 … {t_q - 1}, got {row!r}")
    n_steps = -(-t_k // block_size)  # ceil(T_k / block_size)
    step_of_key = np.arange(t_k) // block_size + 1  # (T_k,): 1, 1, …, 2, 2, …
    maxima, sums = running_statistics(values[row], block_size)

    if axes is None:
        fig = Figure(figsize=(COLUMN_WIDTH, 6.6), layout="constrained")
        panels = fig.subplot_mosaic([["grid", "grid"], ["max", "sum"]], height_ratios=[1, 1.2])
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
        f"step = key block: {n_steps} steps, tile {t_q} × {min(block_size, t_k)} "
        f"(direct: {t_q} × {t_k})"
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
