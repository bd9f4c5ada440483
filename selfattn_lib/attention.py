"""Self-attention without weights, and scaled dot-product attention (chapters 3–6).

Attention turns similarity scores into weights with a softmax and returns, for every query,
the weighted average of the values: ``Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V``.
Every function returns ``(output, weights)`` so the weights can be inspected and plotted.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from selfattn_lib._validation import (
    as_float_array,
    check_all_finite,
    check_mask_for,
    check_positive_float,
    check_same_dims,
    describe_shapes,
)
from selfattn_lib.softmax import softmax_in_place


def simple_self_attention(x: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Self-attention with no learned weights and no scaling: ``softmax(X Xᵀ) X``.

    Every token scores every token (itself included) with a dot product, turns the scores
    into weights with a softmax, and becomes the weighted average of all tokens.

    Shapes
    ------
    ``x``: ``(..., T, D)`` → ``output``: ``(..., T, D)``, ``weights``: ``(..., T, T)``;
    ``weights[..., i, j]`` is how much token ``i`` attends to token ``j``.

    Examples
    --------
    Token 0 attends most to token 1, a longer vector pointing the same way:

    >>> output, weights = simple_self_attention([[1.0, 0.0], [3.0, 0.0]])
    >>> weights.round(3)
    array([[0.119, 0.881],
           [0.002, 0.998]])
    >>> output.round(3)
    array([[2.762, 0.   ],
           [2.995, 0.   ]])
    """
    x = as_float_array("x", x, layout="(..., T, D)")
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported just below
        scores = x @ np.swapaxes(x, -1, -2)  # (..., T, T)
    check_all_finite("the scores x xᵀ", scores)
    weights = softmax_in_place(scores, axis=-1)  # (..., T, T): scores is ours, checked
    return weights @ x, weights  # (..., T, D), (..., T, T)


def attention_scores(q: ArrayLike, k: ArrayLike, scale: float | None = None) -> np.ndarray:
    """Scaled dot products of every query with every key: ``Q Kᵀ · scale``.

    Parameters
    ----------
    q, k
        Queries and keys, with the same leading (batch, head) dimensions (no broadcasting).
    scale
        A finite positive number; defaults to ``1 / √D_k``.

    Shapes
    ------
    ``q``: ``(..., T_q, D_k)``, ``k``: ``(..., T_k, D_k)`` → ``(..., T_q, T_k)``.

    Examples
    --------
    >>> attention_scores([[1.0, 1.0, 1.0, 1.0]], [[1.0, 0.0, 0.0, 0.0], [2.0, 2.0, 0.0, 0.0]])
    array([[0.5, 2. ]])
    """
    q = as_float_array("q", q, layout="(..., T_q, D_k)")
    k = as_float_array("k", k, layout="(..., T_k, D_k)")
    check_same_dims("leading (batch/head) dimensions", slice(None, -2), q=q, k=k)
    return _scores(q, k, scale)


def scaled_dot_product_attention(
    q: ArrayLike,
    k: ArrayLike,
    v: ArrayLike,
    mask: ArrayLike | None = None,
    scale: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Scaled dot-product attention, ``softmax(Q Kᵀ · scale) V``, with an optional mask.

    Matches ``torch.nn.functional.scaled_dot_product_attention`` with a boolean mask. A query
    with nothing to attend to gets zero weights and a zero output, never NaN. Measured with
    torch 2.13.0 on the CPU (``tests/test_attention.py``): its function also returns zeros
    there; ``torch.softmax`` of an all ``-inf`` row gives NaN; ``torch.nn.MultiheadAttention``
    gives NaN with ``need_weights=True`` (its default) or on its fast path (``eval()``, no
    gradients, an even number of heads, ``batch_first=True``, one tensor as query, key and
    value, and a boolean mask: a float ``-inf`` mask leaves the path), and zeros otherwise.

    Parameters
    ----------
    q, k, v
        Queries, keys and values with the same leading (batch, head) dimensions.
    mask
        Boolean, ``True`` = "may attend". It must broadcast to the scores' shape
        ``(..., T_q, T_k)`` without changing it, e.g. ``(T_q, T_k)`` from
        :func:`~selfattn_lib.masks.causal_mask` or ``(B, 1, T_k)`` from
        :func:`~selfattn_lib.masks.padding_mask`. Masked keys get weight exactly 0.
    scale
        A finite positive number; defaults to ``1 / √D_k``.

    Shapes
    ------
    ``q``: ``(..., T_q, D_k)``, ``k``: ``(..., T_k, D_k)``, ``v``: ``(..., T_k, D_v)`` →
    ``output``: ``(..., T_q, D_v)``, ``weights``: ``(..., T_q, T_k)``.

    Examples
    --------
    >>> q = [[1.0, 0.0]]
    >>> k = [[1.0, 0.0], [0.0, 1.0]]
    >>> v = [[10.0], [20.0]]
    >>> output, weights = scaled_dot_product_attention(q, k, v)
    >>> weights.round(3), output.round(2)
    (array([[0.67, 0.33]]), array([[13.3]]))
    >>> output, weights = scaled_dot_product_attention(q, k, v, mask=[[False, True]])
    >>> weights, output
    (array([[0., 1.]]), array([[20.]]))
    """
    q = as_float_array("q", q, layout="(..., T_q, D_k)")
    k = as_float_array("k", k, layout="(..., T_k, D_k)")
    v = as_float_array("v", v, layout="(..., T_k, D_v)")
    check_same_dims("leading (batch/head) dimensions", slice(None, -2), q=q, k=k, v=v)
    check_same_dims("number of positions (T_k, axis -2)", -2, k=k, v=v)
    scores = _scores(q, k, scale)  # (..., T_q, T_k)
    if mask is not None:
        mask = check_mask_for(scores.shape, mask)
        # exp(-inf) is exactly 0: masked keys get no weight at all.
        scores = np.where(mask, scores, -np.inf)  # (..., T_q, T_k), unchanged by the check
    weights = softmax_in_place(scores, axis=-1)  # (..., T_q, T_k): scores is ours, checked
    return weights @ v, weights  # (..., T_q, D_v), (..., T_q, T_k)


def _scores(q: np.ndarray, k: np.ndarray, scale: float | None) -> np.ndarray:
    """``q kᵀ · scale`` for checked queries and keys with equal leading dimensions."""
    check_same_dims("last dimension (D_k)", -1, q=q, k=k)
    d_k = q.shape[-1]
    if d_k == 0:
        raise ValueError(f"q and k must have D_k >= 1: {describe_shapes(q=q, k=k)}")
    scale = 1 / math.sqrt(d_k) if scale is None else check_positive_float("scale", scale)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported just below
        scores = q @ np.swapaxes(k, -1, -2)  # (..., T_q, T_k)
        scores *= scale  # in place: one score-sized array, not two
    check_all_finite("the attention scores q kᵀ · scale", scores)
    return scores
