"""Figures of chapter 4, queries, keys and values."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from selfattn_lib.attention import scaled_dot_product_attention
from selfattn_lib.plotting.base import (
    heatmap,
)


def projected_attention_weights(
    x: Sequence[Sequence[float]],
    w_q: Sequence[Sequence[float]],
    w_k: Sequence[Sequence[float]],
    labels: Sequence[str],
    *,
    query_scale: float = 1.0,
    colorbar: bool = True,
    ax: Axes | None = None,
) -> Figure:
    """Draw the attention weights ``softmax((X · s W_Q)(X W_K)ᵀ / √d_k)`` as a heatmap.

    ``query_scale`` (``s``) multiplies the query projection: 0 makes every query the zero
    vector (uniform weights), larger values sharpen every row, as a lower temperature would.
    The colours always run from 0 to 1, so panels for several scales compare: draw them with
    ``colorbar=False`` and give them one :func:`~selfattn_lib.plotting.shared_colorbar`.

    Shapes
    ------
    ``x``: ``(T, D)``; ``w_q``, ``w_k``: ``(D, d_k)``; ``labels``: ``T`` strings.

    Examples
    --------
    >>> x = [[1.0, 0.0], [0.0, 1.0]]
    >>> fig = projected_attention_weights(x, [[1.0], [0.0]], [[1.0], [0.0]], ["a", "b"])
    >>> fig.axes[0].get_title()
    'weights with 1.0 × W_Q'
    """
    x = np.asarray(x, dtype=np.float64)
    w_q = np.asarray(w_q, dtype=np.float64)
    w_k = np.asarray(w_k, dtype=np.float64)
    if x.ndim != 2 or w_q.ndim != 2 or w_k.ndim != 2:
        raise ValueError("x, w_q and w_k must be matrices (T, D), (D, d_k), (D, d_k)")
    if w_q.shape != w_k.shape or w_q.shape[0] != x.shape[1]:
        raise ValueError(
            f"w_q {w_q.shape} and w_k {w_k.shape} must both be (D, d_k) with D = {x.shape[1]}"
        )
    queries, keys = x @ (query_scale * w_q), x @ w_k  # (T, d_k) each
    _, weights = scaled_dot_product_attention(queries, keys, keys)  # (T, T)
    return heatmap(
        weights,
        labels,
        labels,
        title=f"weights with {query_scale:.1f} × W_Q",
        colorbar_label="attention weight",
        vmin=0.0,
        vmax=1.0,  # the same colours for every scale, so panels compare
        colorbar=colorbar,
        ax=ax,
    )
