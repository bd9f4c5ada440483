"""Figures of chapter 6, masks."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from selfattn_lib.attention import scaled_dot_product_attention
from selfattn_lib.masks import causal_mask, combine_masks, padding_mask
from selfattn_lib.plotting.base import (
    COLUMN_WIDTH,
    heatmap,
    shared_colorbar,
)

MASK_KINDS: tuple[str, ...] = ("none", "padding", "causal", "both")


def mask_and_weights(
    scores: np.ndarray,
    tokens: Sequence[Sequence[str]],
    lengths: Sequence[int],
    kind: str,
    *,
    colorbar: bool = True,
    axes: Sequence[Axes] | None = None,
) -> Figure:
    """Draw, for each sequence of a padded batch, its mask of ``kind`` and the masked weights.

    ``kind`` is ``"none"``, ``"padding"`` (keys beyond ``lengths[b]`` hidden), ``"causal"``
    (no key after the query) or ``"both"``. Per sequence two heatmaps are drawn side by side:
    the boolean mask (1 = may attend) and the attention weights
    ``softmax(where(mask, scores, -inf))``, with zeros for a query that may attend to nothing.
    Both are coloured from 0 to 1 and share one colour bar (``colorbar=False`` leaves it out,
    e.g. to give several calls' panels one :func:`~selfattn_lib.plotting.shared_colorbar`).
    By default the figure is as wide as the book's column, one row (mask, weights) per
    sequence.

    Shapes
    ------
    ``scores``: ``(B, T, T)``; ``tokens``: ``B`` lists of ``T`` labels (padding included);
    ``lengths``: ``(B,)``; ``axes``: ``2 B`` axes (mask, weights, mask, weights, …).

    Examples
    --------
    >>> scores = np.zeros((1, 3, 3))
    >>> fig = mask_and_weights(scores, [["a", "b", "<pad>"]], [2], "both")
    >>> fig.axes[1].images[0].get_array()[2].round(2).tolist()  # the weights of query <pad>
    [0.5, 0.5, 0.0]
    """
    values = np.asarray(scores, dtype=np.float64)
    if values.ndim != 3 or values.shape[1] != values.shape[2]:
        raise ValueError(f"scores must have shape (B, T, T), got shape {values.shape}")
    n_seq, t = values.shape[:2]
    if len(tokens) != n_seq or any(len(row) != t for row in tokens):
        raise ValueError(f"tokens must be {n_seq} lists of {t} labels to fit scores {values.shape}")
    if kind not in MASK_KINDS:
        raise ValueError(f"kind must be one of {MASK_KINDS}, got {kind!r}")
    lengths = np.asarray(lengths)
    if lengths.shape != (n_seq,):
        raise ValueError(f"lengths must have shape (B,) = ({n_seq},), got shape {lengths.shape}")

    parts = [np.ones((t, t), dtype=bool)]  # (T, T): "none" allows everything
    if kind in ("padding", "both"):
        parts.append(padding_mask(lengths, max_len=t))  # (B, 1, T)
    if kind in ("causal", "both"):
        parts.append(causal_mask(t))  # (T, T)
    mask = np.broadcast_to(combine_masks(*parts), values.shape)  # (B, T, T)
    # Attention whose scores are `values`: queries = the scores, keys = values = the identity,
    # so q kᵀ = scores (scale 1), and the output equals the weights.
    identity = np.broadcast_to(np.eye(t), values.shape)  # (B, T, T)
    _, weights = scaled_dot_product_attention(values, identity, identity, mask=mask, scale=1.0)

    if axes is None:
        fig = Figure(figsize=(COLUMN_WIDTH, n_seq * (0.3 * t + 1.6)), layout="constrained")
        axes = fig.subplots(n_seq, 2).ravel()
    if len(axes) != 2 * n_seq:
        raise ValueError(f"axes must hold 2 * B = {2 * n_seq} axes, got {len(axes)}")
    for b in range(n_seq):
        heatmap(
            mask[b].astype(float),
            tokens[b],
            tokens[b],
            title=f"mask: {kind} (length {lengths[b]})",
            fmt=".0f",
            vmin=0.0,
            vmax=1.0,
            colorbar=False,
            ax=axes[2 * b],
        )
        heatmap(
            weights[b],
            tokens[b],
            tokens[b],
            title="attention weights",
            vmin=0.0,
            vmax=1.0,
            colorbar=False,
            ax=axes[2 * b + 1],
        )
        for ax in axes[2 * b : 2 * b + 2]:
            ax.title.set_fontsize(9)  # "mask: padding (length 4)" fits a narrow panel
    if colorbar:
        shared_colorbar(axes, "weight (mask: 1 = may attend)")
    return axes[0].figure
