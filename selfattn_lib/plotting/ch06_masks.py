"""Figures of chapter 6, masks: the two computed diagrams (the causal mask of a sentence
during training, padding in a batch), the masks with the weights they produce, and the
weights of one sequence under each kind of mask."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from selfattn_lib.attention import scaled_dot_product_attention
from selfattn_lib.masks import causal_mask, combine_masks, padding_mask
from selfattn_lib.plotting.base import (
    column_width,
    current_layout,
    for_the_page,
    heatmap,
    shared_colorbar,
    small_multiples,
)
from selfattn_lib.plotting.diagrams import Diagram, Grid, flow

MASK_KINDS: tuple[str, ...] = ("none", "padding", "causal", "both")


@for_the_page
def next_word_mask(tokens: Sequence[str], mask: np.ndarray, targets: Sequence[str]) -> Diagram:
    """Computed diagram: a causal mask over a sentence during training, each row (position)
    with the word it is trained to predict.

    Row ``i`` is the query at position ``i``; its ✓ are the keys it may attend to (the
    prefix ``tokens[: i + 1]`` for a causal mask), and ``targets[i]`` is drawn beside it.
    The diagram draws the arrays it is given and computes nothing.

    Shapes
    ------
    ``tokens``: ``T`` strings; ``mask``: ``(T, T)`` boolean (``True`` = may attend);
    ``targets``: ``T`` strings.

    Examples
    --------
    >>> d = next_word_mask(["the", "cat"], np.tril(np.ones((2, 2), dtype=bool)), ["cat", "sat"])
    >>> d.alt.split(". ")[1]
    'causal mask, what each row may attend to: the: the; cat: the, cat'
    """
    mask = np.asarray(mask)
    t = len(tokens)
    if mask.dtype != np.bool_ or mask.shape != (t, t):
        raise ValueError(
            f"mask must be a ({t}, {t}) boolean array for {t} tokens, got dtype {mask.dtype} "
            f"and shape {mask.shape}"
        )
    if len(targets) != t:
        raise ValueError(f"targets must hold one word per token ({t}), got {len(targets)}")
    return flow(
        Grid(
            "causal mask",
            mask,
            rows=list(tokens),
            cols=list(tokens),
            role="mask",
            note="row = position, ✓ = may look at",
        ),
        "→ predicts",
        Grid("next word", np.array(targets)[:, None], note="the answer"),
        title="Training on one sentence: what each position sees, and what it predicts",
    )


@for_the_page
def padded_batch(
    batch_tokens: Sequence[Sequence[str]],
    key_mask: np.ndarray,
    weights: np.ndarray,
    sequence: int,
) -> Diagram:
    """Computed diagram: a padded batch of token sequences, its padding mask over the keys,
    and the masked attention weights of one sequence (zeros in its padding columns).

    The diagram draws the arrays it is given and computes nothing.

    Drawn for a phone, the batch is drawn transposed (``batchᵀ``, a column per sequence),
    as a row of ``T`` tokens is wider than a phone's column.

    Shapes
    ------
    ``batch_tokens``: ``B`` lists of ``T`` tokens (``"<pad>"`` for padding); ``key_mask``:
    ``(B, T)`` boolean (``True`` = a real key); ``weights``: ``(B, T, T)``; ``sequence``: the
    index ``b`` of the sequence whose weights are drawn.

    Examples
    --------
    >>> key_mask = np.array([[True, True], [True, False]])
    >>> weights = np.array([np.full((2, 2), 0.5), [[1.0, 0.0], [1.0, 0.0]]])
    >>> d = padded_batch([["a", "b"], ["c", "<pad>"]], key_mask, weights, sequence=1)
    >>> "padding mask (2 × 2) → weights of sentence 2 (2 × 2)" in d.alt
    True
    """
    if len({len(row) for row in batch_tokens}) != 1:
        raise ValueError("batch_tokens must be B lists of T tokens, all of one length T")
    tokens = np.array([[str(token) for token in row] for row in batch_tokens])  # (B, T)
    key_mask = np.asarray(key_mask)
    weights = np.asarray(weights, dtype=np.float64)
    n_seq, t = tokens.shape
    if key_mask.dtype != np.bool_ or key_mask.shape != (n_seq, t):
        raise ValueError(
            f"key_mask must be a ({n_seq}, {t}) boolean array, got dtype {key_mask.dtype} "
            f"and shape {key_mask.shape}"
        )
    if weights.shape != (n_seq, t, t):
        raise ValueError(
            f"weights must have shape (B, T, T) = {(n_seq, t, t)}, got {weights.shape}"
        )
    if not 0 <= sequence < n_seq:
        raise ValueError(f"sequence must be a sequence index in [0, {n_seq}), got {sequence}")
    names = [f"sentence {b + 1}" for b in range(n_seq)]
    row = list(tokens[sequence])
    if current_layout() == "phone":  # a row of T tokens is wider than a phone's column
        batch = Grid(
            "batchᵀ",
            tokens.T,
            rows=[str(j) for j in range(t)],
            cols=names,
            note="the batch transposed, padded to one length",
        )
    else:
        batch = Grid("batch", tokens, rows=names, note="padded to one length")
    return flow(
        batch,
        Grid(
            "padding mask",
            key_mask,
            rows=names,
            cols=[str(j) for j in range(t)],
            role="mask",
            note="✓ real key, ✗ <pad> key",
        ),
        "→",
        Grid(
            f"weights of {names[sequence]}",
            weights[sequence],
            rows=row,
            cols=row,
            role="weights",
            note="softmax of the masked scores",
        ),
        title="A padded batch",
    )


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
        fig = Figure(figsize=(column_width(), n_seq * (0.3 * t + 1.6)), layout="constrained")
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


@for_the_page
def weights_by_mask(weights: Mapping[str, np.ndarray], tokens: Sequence[str]) -> Figure:
    """Draw the attention weights of one sequence under each kind of mask: a heatmap per
    entry of ``weights`` (its key, e.g. ``"causal"``, titles it ``mask: causal``), coloured
    from 0 to 1, unannotated, with one shared colour bar. Side by side on a laptop (only the
    first panel names the queries); stacked on a phone, every panel with its query labels.
    The figure draws the weights it is given and computes nothing.

    Shapes
    ------
    ``weights``: each value ``(T, T)``; ``tokens``: ``T`` labels.

    Examples
    --------
    >>> fig = weights_by_mask({"causal": np.tril(np.ones((2, 2))) / [[1], [2]]}, ["a", "b"])
    >>> fig.axes[0].get_title()
    'mask: causal'
    """
    if not weights:
        raise ValueError("weights is empty: give the weights of at least one mask")
    phone = current_layout() == "phone"
    fig, panels = small_multiples(
        len(weights), columns=len(weights), panel_height=3.2 if phone else 2.9
    )
    for ax, (kind, kind_weights) in zip(panels, weights.items(), strict=True):
        heatmap(
            kind_weights,
            tokens,
            tokens,
            title=f"mask: {kind}",
            annotate=False,
            vmin=0.0,
            vmax=1.0,
            colorbar=False,
            ax=ax,
        )
    if not phone:
        for ax in panels[1:]:  # side by side: the same queries as the first panel
            ax.set_ylabel("")
            ax.tick_params(labelleft=False)
    shared_colorbar(panels, "attention weight")
    return fig
