"""Figures of chapter 3, self-attention without weights."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from selfattn_lib.plotting.base import (
    COLUMN_WIDTH,
    OKABE_ITO,
    bar_chart,
    heatmap,
)


def spotlight_weights(
    x: Sequence[Sequence[float]],
    labels: Sequence[str],
    position: int,
    *,
    ax: Axes | None = None,
) -> Figure:
    """Draw the weights ``softmax(X Xᵀ)[position]`` of one spotlighted token, one bar per token.

    The spotlighted token's own bar is drawn in orange, the others in blue, so a token that
    attends more to another token than to itself stands out.

    Shapes
    ------
    ``x``: ``(T, D)``; ``labels``: ``T`` strings; ``position``: an index in ``[0, T)``.

    Examples
    --------
    >>> fig = spotlight_weights([[1.0, 0.0], [3.0, 0.0]], ["a", "b"], position=0)
    >>> [round(float(bar.get_height()), 3) for bar in fig.axes[0].patches]
    [0.119, 0.881]
    """
    # A local import keeps this chapter's section self-contained.
    from selfattn_lib.attention import simple_self_attention

    values = np.asarray(x, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"x must be one sequence of shape (T, D), got shape {values.shape}")
    if not 0 <= position < values.shape[0]:
        raise ValueError(f"position must be in [0, {values.shape[0]}), got {position}")
    _, weights = simple_self_attention(values)  # (T, T)
    figure = bar_chart(
        weights[position],
        labels,
        title=f'"{labels[position]}" (position {position}) attends to',
        xlabel="key token",
        ylabel="attention weight",
        ylim=(0.0, 1.0),
        ax=ax,
    )
    axes = ax if ax is not None else figure.axes[0]
    axes.patches[position].set_facecolor(OKABE_ITO[4])
    axes.tick_params(axis="x", labelrotation=45)
    return figure


def spotlight_attention(
    x: Sequence[Sequence[float]], labels: Sequence[str], position: int
) -> Figure:
    """The spotlighted token's weights (left) beside the whole weight matrix (right).

    The heatmap is ``softmax(X Xᵀ)`` with the spotlighted token's row outlined: the bars on
    the left are that row. The figure is at most as wide as the book's column
    (``COLUMN_WIDTH``, 7.5 inches), so its 8-point numbers stay legible in the column;
    the cells are annotated up to 8 tokens.

    Shapes
    ------
    ``x``: ``(T, D)``; ``labels``: ``T`` strings; ``position``: an index in ``[0, T)``.

    Examples
    --------
    >>> fig = spotlight_attention([[1.0, 0.0], [0.0, 2.0]], ["a", "b"], position=1)
    >>> fig.axes[1].get_title()
    'All weights softmax(X Xᵀ)'
    """
    from matplotlib.patches import Rectangle

    from selfattn_lib.attention import simple_self_attention

    values = np.asarray(x, dtype=np.float64)
    n_tokens = values.shape[0] if values.ndim == 2 else 0
    width = min(COLUMN_WIDTH, 4.0 + 1.1 * n_tokens)
    fig = Figure(figsize=(width, 0.25 * n_tokens + 3.2), layout="constrained")
    left, right = fig.subplots(1, 2, width_ratios=(1.0, 1.15))
    spotlight_weights(values, labels, position, ax=left)
    _, weights = simple_self_attention(values)  # (T, T)
    heatmap(
        weights,
        labels,
        labels,
        title="All weights softmax(X Xᵀ)",
        colorbar_label="attention weight",
        annotate=n_tokens <= 8,
        ax=right,
    )
    right.add_patch(
        Rectangle(
            (-0.5, position - 0.5),
            n_tokens,
            1.0,
            fill=False,
            edgecolor=OKABE_ITO[4],
            linewidth=3,
        )
    )
    return fig
