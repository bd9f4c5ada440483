"""Online softmax: attention over keys taken one block at a time (chapter 11).

Softmax needs the largest score and the sum of all exponentials before any weight is known.
Online softmax keeps, for each query, a *state* that summarises the keys seen so far:

- ``m``: the largest score so far;
- ``l = Σ_j exp(s_j − m)``: the softmax denominator, relative to ``m``;
- ``acc = Σ_j exp(s_j − m) v_j``: the weighted sum of values, relative to ``m``.

Two states of disjoint key sets merge into the state of their union by rescaling both to the
larger maximum (:func:`merge_states`), and ``acc / l`` is the attention output
(:func:`state_output`). Attention computed block by block this way never holds a
``T_q × T_k`` score matrix: it is the idea behind fused attention kernels (FlashAttention).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from selfattn_lib._validation import as_float_array, check_positive_int, check_same_dims
from selfattn_lib.attention import attention_scores
from selfattn_lib.masks import causal_mask

SoftmaxState = tuple[np.ndarray, np.ndarray, np.ndarray]


def softmax_state(scores: ArrayLike, values: ArrayLike) -> SoftmaxState:
    """The online-softmax state ``(m, l, acc)`` of one set of keys.

    Shapes
    ------
    ``scores``: ``(..., T_q, n)``, ``values``: ``(..., n, D_v)`` → ``m``: ``(..., T_q)``,
    ``l``: ``(..., T_q)``, ``acc``: ``(..., T_q, D_v)``. ``n ≥ 1`` keys; a masked key's score
    is ``-inf`` (weight 0), and every query needs at least one key with a finite score.

    Examples
    --------
    >>> m, l, acc = softmax_state([[0.0, 1000.0]], [[1.0], [3.0]])
    >>> m, l, acc
    (array([1000.]), array([1.]), array([[3.]]))
    """
    scores = as_float_array("scores", scores, layout="(..., T_q, n)", allow_neg_inf=True)
    values = as_float_array("values", values, layout="(..., n, D_v)")
    check_same_dims("leading dimensions", slice(None, -2), scores=scores, values=values)
    if scores.shape[-1] != values.shape[-2] or scores.shape[-1] == 0:
        raise ValueError(
            "scores (..., T_q, n) and values (..., n, D_v) need the same n >= 1 keys: "
            f"scores has shape {scores.shape}, values has shape {values.shape}"
        )
    m = scores.max(axis=-1)  # (..., T_q)
    if not np.isfinite(m).all():
        raise ValueError("scores: every query needs one key with a finite score (not all -inf)")
    exponentials = np.exp(scores - m[..., None])  # (..., T_q, n), each at most 1
    return m, exponentials.sum(axis=-1), exponentials @ values


def _check_state(name: str, state: object) -> SoftmaxState:
    if not isinstance(state, tuple | list) or len(state) != 3:
        raise TypeError(f"{name} must be a tuple (m, l, acc), got {type(state).__name__}")
    m = as_float_array(f"{name}[0] (m)", state[0], allow_neg_inf=True)
    l = as_float_array(f"{name}[1] (l)", state[1])  # noqa: E741 - the paper's name
    acc = as_float_array(f"{name}[2] (acc)", state[2], layout="(..., T_q, D_v)")
    if m.shape != l.shape or acc.shape[:-1] != m.shape:
        raise ValueError(
            f"{name} must hold m (..., T_q), l (..., T_q) and acc (..., T_q, D_v): got shapes "
            f"{m.shape}, {l.shape} and {acc.shape}"
        )
    if np.any(l < 0) or np.any((l == 0) != np.isneginf(m)):
        raise ValueError(
            f"{name}: l sums exponentials, so it is positive, or 0 with m = -inf for a query "
            "that has seen no key yet"
        )
    return m, l, acc


def merge_states(state_a: SoftmaxState, state_b: SoftmaxState) -> SoftmaxState:
    """The state of two disjoint sets of keys together.

    Both states are rescaled to the larger maximum ``m = max(m_a, m_b)``:
    ``l = l_a e^(m_a − m) + l_b e^(m_b − m)`` and likewise ``acc``. Every factor is at most 1,
    so nothing overflows, whatever the scores. The state of no keys at all,
    ``(-inf, 0, 0)``, merges as the identity.

    Shapes
    ------
    Each state: ``m`` ``(..., T_q)``, ``l`` ``(..., T_q)``, ``acc`` ``(..., T_q, D_v)``, the
    same for both → a state of the same shapes.

    Examples
    --------
    >>> a = softmax_state([[1.0, 2.0]], [[1.0], [2.0]])
    >>> b = softmax_state([[3.0]], [[5.0]])
    >>> both = softmax_state([[1.0, 2.0, 3.0]], [[1.0], [2.0], [5.0]])
    >>> all(np.allclose(x, y) for x, y in zip(merge_states(a, b), both))
    True
    """
    m_a, l_a, acc_a = _check_state("state_a", state_a)
    m_b, l_b, acc_b = _check_state("state_b", state_b)
    if acc_a.shape != acc_b.shape:
        raise ValueError(
            f"state_a and state_b must have equal shapes: acc {acc_a.shape} vs {acc_b.shape}"
        )
    m = np.maximum(m_a, m_b)  # (..., T_q)
    with np.errstate(invalid="ignore"):  # -inf - (-inf) where neither state has seen a key
        factor_a, factor_b = (np.where(np.isneginf(x), 0.0, np.exp(x - m)) for x in (m_a, m_b))
    l = l_a * factor_a + l_b * factor_b  # noqa: E741 - the paper's name
    return m, l, acc_a * factor_a[..., None] + acc_b * factor_b[..., None]


def state_output(state: SoftmaxState) -> np.ndarray:
    """The attention output of a state: ``acc / l``.

    Shapes
    ------
    ``m``: ``(..., T_q)``, ``l``: ``(..., T_q)``, ``acc``: ``(..., T_q, D_v)`` →
    ``(..., T_q, D_v)``.

    Examples
    --------
    >>> state_output(softmax_state([[0.0, 0.0]], [[1.0], [3.0]]))
    array([[2.]])
    """
    _, denominator, acc = _check_state("state", state)
    if np.any(denominator == 0):
        raise ValueError("state: a query has seen no key (l = 0), so it has no output")
    return acc / denominator[..., None]


def running_statistics(row: ArrayLike, block_size: int) -> tuple[np.ndarray, np.ndarray]:
    """The running maximum ``m`` and running sum ``l`` after each block of one score row.

    Shapes
    ------
    ``row``: ``(T_k,)`` → ``maxima``, ``sums``: ``(⌈T_k / block_size⌉,)``; the last entries
    are ``max(row)`` and ``Σ exp(row − max(row))``.

    Examples
    --------
    >>> maxima, sums = running_statistics([1.0, 3.0, 2.0], block_size=2)
    >>> maxima, sums.round(4)
    (array([3., 3.]), array([1.1353, 1.5032]))
    """
    row = as_float_array("row", row, layout="(T_k,)")
    block_size = check_positive_int("block_size", block_size)
    if row.size == 0:
        raise ValueError("row must hold at least one score")
    ones = np.ones((row.size, 1))  # values of 1: acc then equals l, nothing else is needed
    state, maxima, sums = None, [], []
    for start in range(0, row.size, block_size):
        stop = start + block_size
        block = softmax_state(row[None, start:stop], ones[start:stop])
        state = block if state is None else merge_states(state, block)
        maxima.append(state[0][0])
        sums.append(state[1][0])
    return np.array(maxima), np.array(sums)


def causal_blocked_attention(
    q: ArrayLike, k: ArrayLike, v: ArrayLike, block_size: int
) -> np.ndarray:
    """Causal scaled dot-product attention, one block of keys at a time.

    Equal to ``softmax(Q Kᵀ / √D_k + causal mask) V`` (query ``i`` attends keys ``j ≤ i``),
    but the scores exist only one ``(T, block_size)`` tile at a time, and tiles wholly above
    the diagonal (keys after every query) are skipped. ``T`` need not be a multiple of
    ``block_size``.

    Shapes
    ------
    ``q``, ``k``: ``(T, D_k)``, ``v``: ``(T, D_v)`` → ``(T, D_v)``.

    Examples
    --------
    >>> from selfattn_lib.attention import scaled_dot_product_attention
    >>> rng = np.random.default_rng(0)
    >>> q, k, v = (rng.normal(size=(5, 4)) for _ in range(3))
    >>> direct, _ = scaled_dot_product_attention(q, k, v, mask=causal_mask(5))
    >>> np.allclose(causal_blocked_attention(q, k, v, block_size=2), direct)
    True
    """
    q = as_float_array("q", q, layout="(T, D_k)")
    k = as_float_array("k", k, layout="(T, D_k)")
    v = as_float_array("v", v, layout="(T, D_v)")
    block_size = check_positive_int("block_size", block_size)
    if not q.shape[0] == k.shape[0] == v.shape[0] or q.shape[1] != k.shape[1]:
        raise ValueError(
            "causal self-attention needs q, k (T, D_k) and v (T, D_v) of one sequence: "
            f"q has shape {q.shape}, k has shape {k.shape}, v has shape {v.shape}"
        )
    n_tokens = q.shape[0]
    allowed = causal_mask(n_tokens)  # (T, T)
    state = None
    for start in range(0, n_tokens, block_size):
        keys = slice(start, start + block_size)
        # Queries before `start` see no key of this block: only rows start.. take part.
        scores = attention_scores(q[start:], k[keys])  # (T - start, n)
        scores = np.where(allowed[start:, keys], scores, -np.inf)
        block = softmax_state(scores, v[keys])  # each row has its diagonal key or an earlier one
        if state is None:
            state = block
            continue
        merged = merge_states(tuple(part[start:] for part in state), block)
        state = tuple(
            np.concatenate([old[:start], new]) for old, new in zip(state, merged, strict=True)
        )
    return state_output(state)
