"""Figures of chapter 2, softmax."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from selfattn_lib.plotting.base import (
    OKABE_ITO,
    bar_chart,
)


def temperature_weights(
    scores: Sequence[float],
    labels: Sequence[str],
    temperature: float,
    *,
    ax: Axes | None = None,
) -> Figure:
    """Draw the softmax weights of one row of ``scores`` at ``temperature``, one bar per label.

    The y axis always runs from 0 to a little above 1, so figures at different temperatures
    compare at a glance, and a dashed line marks the uniform weight ``1/n`` that the weights
    approach as the temperature grows.

    Shapes
    ------
    ``scores``: ``(T_k,)``, one query's scores; ``labels``: ``T_k`` strings.

    Examples
    --------
    >>> fig = temperature_weights([1.0, 3.0], ["a", "b"], temperature=0.5)
    >>> [round(float(bar.get_height()), 3) for bar in fig.axes[0].patches]
    [0.018, 0.982]
    >>> fig.axes[0].get_title()
    'τ = 0.5'
    """
    # A local import keeps this chapter's section self-contained.
    from selfattn_lib.softmax import softmax

    values = np.asarray(scores, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError(f"scores must be one row of shape (T_k,), got shape {values.shape}")
    weights = softmax(values, temperature=temperature)  # ValueError unless temperature > 0
    figure = bar_chart(
        weights,
        labels,
        title=f"τ = {temperature:.3g}",
        xlabel="key",
        ylabel="softmax weight",
        ylim=(0.0, 1.15),
        ax=ax,
    )
    axes = ax if ax is not None else figure.axes[0]
    uniform = 1.0 / len(weights)
    axes.axhline(uniform, color=OKABE_ITO[1], linestyle="--", linewidth=1)
    axes.text(
        1.01,
        uniform,
        f"1/{len(weights)}",
        transform=axes.get_yaxis_transform(),
        color=OKABE_ITO[1],
        fontsize=8,
        va="center",
    )
    return figure
