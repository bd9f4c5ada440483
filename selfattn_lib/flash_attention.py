"""FlashAttention's tiled forward pass, with the memory traffic it saves counted (chapter 13).

A GPU has a large, slow main memory (HBM) and a small, fast on-chip memory (SRAM). Standard
attention writes the ``T_q × T_k`` scores ``S`` and weights ``P`` to main memory and reads them
back, so it moves ``O(T²)`` numbers through the slow link. FlashAttention (Dao et al., 2022;
with FlashAttention-2's loop order, Dao 2023) walks blocks of queries and, inside, blocks of
keys, keeping each query's online-softmax state (chapter 11) on chip: ``S`` and ``P`` exist
one tile at a time and never reach main memory. As FlashAttention-2 does, each query's
logsumexp is written for the backward pass (FlashAttention-1 wrote its maximum and sum).
What it saves is input/output, not arithmetic, so this module *counts* the numbers each
version moves between the two memories (:func:`naive_traffic`, :func:`tiled_traffic`) and
never times anything.
"""

from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike

from selfattn_lib._validation import as_float_array, check_positive_int, check_same_dims
from selfattn_lib.attention import attention_scores
from selfattn_lib.masks import causal_mask
from selfattn_lib.online_softmax import merge_states, softmax_state, state_output
from selfattn_lib.softmax import softmax

_DIRECTIONS = ("read", "written")


def tile_schedule(
    t_q: int, t_k: int, *, block_q: int, block_k: int, causal: bool = False
) -> np.ndarray:
    """Which tiles of the score matrix the tiled pass computes.

    Tile ``(i, j)`` pairs query block ``i`` (rows ``i · block_q`` …) with key block ``j``
    (columns ``j · block_k`` …); the last block of each may be shorter. Without a mask every
    tile is computed. With ``causal=True`` (query ``i`` sees keys ``j ≤ i``, so ``T_q == T_k``)
    a tile is computed when its first key comes no later than its last query: tiles wholly
    above the diagonal are skipped.

    Shapes
    ------
    Integers ``t_q`` (``T_q``), ``t_k`` (``T_k``), ``block_q``, ``block_k`` → boolean
    ``(⌈T_q / block_q⌉, ⌈T_k / block_k⌉)``, True = computed.

    Examples
    --------
    >>> tile_schedule(5, 5, block_q=2, block_k=2, causal=True)
    array([[ True, False, False],
           [ True,  True, False],
           [ True,  True,  True]])
    >>> tile_schedule(4, 6, block_q=4, block_k=4).shape
    (1, 2)
    """
    t_q, t_k, block_q, block_k = _check_sizes(t_q=t_q, t_k=t_k, block_q=block_q, block_k=block_k)
    causal = _check_causal(causal, t_q, t_k)
    n_q_blocks, n_k_blocks = -(-t_q // block_q), -(-t_k // block_k)
    if not causal:
        return np.ones((n_q_blocks, n_k_blocks), dtype=bool)  # (n_q_blocks, n_k_blocks)
    last_query = np.minimum(np.arange(1, n_q_blocks + 1) * block_q, t_q) - 1  # (n_q_blocks,)
    first_key = np.arange(n_k_blocks) * block_k  # (n_k_blocks,)
    return first_key[None, :] <= last_query[:, None]  # (n_q_blocks, n_k_blocks)


def tiled_attention(
    q: ArrayLike,
    k: ArrayLike,
    v: ArrayLike,
    *,
    block_q: int,
    block_k: int,
    causal: bool = False,
    traffic: dict | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Scaled dot-product attention tile by tile, as FlashAttention's forward pass does it.

    For each block of queries (read once), walk the key blocks that :func:`tile_schedule`
    says to compute; read each one's keys and values, score the tile and merge its
    online-softmax state into the running ``(m, l, acc)``. At the end write the output block
    ``acc / l`` and the log-sum-exp ``m + log l``, which the backward pass uses to recompute
    the weights instead of storing them. Scores are scaled by ``1 / √D_k``.

    Parameters
    ----------
    q, k, v
        Queries, keys and values with the same leading (batch, head) dimensions.
    block_q, block_k
        Positive block sizes; they need not divide ``T_q`` or ``T_k``.
    causal
        If True, query ``i`` attends keys ``j ≤ i`` (needs ``T_q == T_k``), as
        ``is_causal=True`` in ``torch.nn.functional.scaled_dot_product_attention``.
    traffic
        If a dict, the numbers moved between main and on-chip memory are added to its
        ``"read"`` and ``"written"`` entries (missing entries count from 0), for all leading
        slices together: each is ``prod(leading) ×`` :func:`tiled_traffic`.

    Shapes
    ------
    ``q``: ``(..., T_q, D_k)``, ``k``: ``(..., T_k, D_k)``, ``v``: ``(..., T_k, D_v)`` →
    ``output``: ``(..., T_q, D_v)``, ``logsumexp``: ``(..., T_q)``.

    Examples
    --------
    >>> from selfattn_lib.attention import scaled_dot_product_attention
    >>> rng = np.random.default_rng(0)
    >>> q, k, v = (rng.normal(size=(2, 5, 4)) for _ in range(3))  # (B, T, D)
    >>> traffic = {}
    >>> output, logsumexp = tiled_attention(q, k, v, block_q=2, block_k=3, traffic=traffic)
    >>> direct, _ = scaled_dot_product_attention(q, k, v)
    >>> np.allclose(output, direct), logsumexp.shape
    (True, (2, 5))
    >>> traffic  # B = 2 times tiled_traffic(5, 5, 4, 4, block_q=2, block_k=3)
    {'read': 280, 'written': 50}
    """
    q, k, v = _check_qkv(q, k, v)
    block_q, block_k = _check_sizes(block_q=block_q, block_k=block_k)
    t_q, t_k = q.shape[-2], k.shape[-2]
    causal = _check_causal(causal, t_q, t_k, q=q, k=k)
    _check_traffic(traffic)
    schedule = tile_schedule(t_q, t_k, block_q=block_q, block_k=block_k, causal=causal)
    moved = dict.fromkeys(_DIRECTIONS, 0)
    dtype = np.result_type(q, k, v)
    outputs, logsumexps = [], []
    for i, q_start in enumerate(range(0, t_q, block_q)):
        q_block = q[..., q_start : q_start + block_q, :]  # (..., b_q, D_k), read once
        moved["read"] += q_block.size
        n_rows = q_block.shape[-2]
        # The state of no keys, (-inf, 0, 0), merges as the identity.
        m = np.full(q_block.shape[:-1], -np.inf, dtype=dtype)  # (..., b_q)
        l = np.zeros(q_block.shape[:-1], dtype=dtype)  # noqa: E741 - the paper's name
        acc = np.zeros((*q_block.shape[:-1], v.shape[-1]), dtype=dtype)  # (..., b_q, D_v)
        for j in np.flatnonzero(schedule[i]):
            k_start = j * block_k
            k_block = k[..., k_start : k_start + block_k, :]  # (..., b_k, D_k)
            v_block = v[..., k_start : k_start + block_k, :]  # (..., b_k, D_v)
            moved["read"] += k_block.size + v_block.size
            # Causal: rows before k_start see no key of this tile, and keep their state.
            first = max(k_start - q_start, 0) if causal else 0
            scores = attention_scores(q_block[..., first:, :], k_block)  # (..., b_q - first, b_k)
            if causal:
                allowed = _causal_tile(q_start + first, n_rows - first, k_start, k_block.shape[-2])
                scores = np.where(allowed, scores, -np.inf)  # (..., b_q - first, b_k)
            merged = merge_states(
                (m[..., first:], l[..., first:], acc[..., first:, :]),
                softmax_state(scores, v_block),
            )
            m[..., first:], l[..., first:], acc[..., first:, :] = merged
        outputs.append(state_output((m, l, acc)))  # (..., b_q, D_v), written once
        logsumexps.append(m + np.log(l))  # (..., b_q), written once
        moved["written"] += outputs[-1].size + logsumexps[-1].size
    _add_traffic(traffic, moved)
    return np.concatenate(outputs, axis=-2), np.concatenate(logsumexps, axis=-1)


def naive_attention(
    q: ArrayLike,
    k: ArrayLike,
    v: ArrayLike,
    *,
    causal: bool = False,
    traffic: dict | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Scaled dot-product attention the standard way, with ``S`` and ``P`` in main memory.

    Three passes, as in the FlashAttention paper's Algorithm 0: read ``Q`` and ``K``, write
    the scores ``S = Q Kᵀ / √D_k``; read ``S``, write the weights ``P = softmax(S)``; read
    ``P`` and ``V``, write ``O = P V``. With ``causal=True`` the full matrices are still
    materialised (the mask sets entries of ``S`` to ``-inf``). The log-sum-exp is returned to
    compare with :func:`tiled_attention`; it is not counted, because the standard
    implementation keeps ``P`` instead.

    Parameters
    ----------
    q, k, v
        As for :func:`tiled_attention`.
    causal
        If True, query ``i`` attends keys ``j ≤ i`` (needs ``T_q == T_k``).
    traffic
        If a dict, ``prod(leading) ×`` :func:`naive_traffic` is added to its ``"read"`` and
        ``"written"`` entries.

    Shapes
    ------
    ``q``: ``(..., T_q, D_k)``, ``k``: ``(..., T_k, D_k)``, ``v``: ``(..., T_k, D_v)`` →
    ``output``: ``(..., T_q, D_v)``, ``logsumexp``: ``(..., T_q)``.

    Examples
    --------
    >>> traffic = {}
    >>> output, logsumexp = naive_attention([[0.0], [0.0]], [[1.0], [2.0]], [[1.0], [3.0]],
    ...                                     causal=True, traffic=traffic)
    >>> output, logsumexp.round(4)
    (array([[1.],
           [2.]]), array([0.    , 0.6931]))
    >>> traffic  # Q, K, S, S, P, V read; S, P, O written
    {'read': 14, 'written': 10}
    """
    q, k, v = _check_qkv(q, k, v)
    t_q, t_k = q.shape[-2], k.shape[-2]
    causal = _check_causal(causal, t_q, t_k, q=q, k=k)
    _check_traffic(traffic)
    scores = attention_scores(q, k)  # (..., T_q, T_k), written to main memory
    if causal:
        scores = np.where(causal_mask(t_q), scores, -np.inf)  # (..., T_q, T_k)
    weights = softmax(scores, axis=-1)  # (..., T_q, T_k): S read, P written
    output = weights @ v  # (..., T_q, D_v): P and V read, O written
    # The largest weight of a row is exp(m - lse) = 1 / l, never below 1 / T_k: lse is read
    # off P and the row maximum m without another pass of exponentials.
    logsumexp = scores.max(axis=-1) - np.log(weights.max(axis=-1))  # (..., T_q)
    moved = {
        "read": q.size + k.size + scores.size + weights.size + v.size,
        "written": scores.size + weights.size + output.size,
    }
    _add_traffic(traffic, moved)
    return output, logsumexp


def naive_traffic(
    t_q: int, t_k: int, d_k: int, d_v: int, *, causal: bool = False
) -> dict[str, int]:
    """Numbers :func:`naive_attention` moves between main and on-chip memory, per head.

    ``read = T_q D_k + T_k D_k + T_q T_k + T_q T_k + T_k D_v`` (``Q``, ``K``, ``S``, ``P``,
    ``V``) and ``written = 2 T_q T_k + T_q D_v`` (``S``, ``P``, ``O``): quadratic in the
    length. A causal mask changes nothing: the standard implementation still materialises
    both full matrices.

    Shapes
    ------
    Integers: one slice's ``q`` ``(t_q, d_k)``, ``k`` ``(t_k, d_k)``, ``v`` ``(t_k, d_v)`` →
    ``{"read": int, "written": int}``.

    Examples
    --------
    >>> naive_traffic(1024, 1024, 64, 64)
    {'read': 2293760, 'written': 2162688}
    """
    t_q, t_k, d_k, d_v = _check_sizes(t_q=t_q, t_k=t_k, d_k=d_k, d_v=d_v)
    _check_causal(causal, t_q, t_k)
    return {
        "read": t_q * d_k + t_k * d_k + 2 * t_q * t_k + t_k * d_v,
        "written": 2 * t_q * t_k + t_q * d_v,
    }


def tiled_traffic(
    t_q: int, t_k: int, d_k: int, d_v: int, *, block_q: int, block_k: int, causal: bool = False
) -> dict[str, int]:
    """Numbers :func:`tiled_attention` moves between main and on-chip memory, per head.

    Each query is read once and each output and log-sum-exp written once:
    ``written = T_q (D_v + 1)``. Keys and values are read once per query block that needs
    them: ``read = T_q D_k + n_keys (D_k + D_v)``, where without a mask
    ``n_keys = ⌈T_q / block_q⌉ T_k``, and with ``causal=True`` query block ``i``, whose last
    query is ``r_i``, reads the key blocks up to the one holding key ``r_i``:
    ``n_keys = Σ_i min((⌊r_i / block_k⌋ + 1) block_k, T)``. The key and value reads still
    grow as ``T²``, but divided by ``block_q``: bigger blocks (more on-chip memory) save more.

    Shapes
    ------
    Integers: one slice's ``q`` ``(t_q, d_k)``, ``k`` ``(t_k, d_k)``, ``v`` ``(t_k, d_v)``,
    the block sizes → ``{"read": int, "written": int}``.

    Examples
    --------
    >>> tiled_traffic(1024, 1024, 64, 64, block_q=128, block_k=128)
    {'read': 1114112, 'written': 66560}
    >>> tiled_traffic(1024, 1024, 64, 64, block_q=128, block_k=128, causal=True)["read"]
    655360
    """
    t_q, t_k, d_k, d_v, block_q, block_k = _check_sizes(
        t_q=t_q, t_k=t_k, d_k=d_k, d_v=d_v, block_q=block_q, block_k=block_k
    )
    if _check_causal(causal, t_q, t_k):
        last_queries = (min(start + block_q, t_q) - 1 for start in range(0, t_q, block_q))
        n_keys = sum(min((last // block_k + 1) * block_k, t_k) for last in last_queries)
    else:
        n_keys = -(-t_q // block_q) * t_k
    return {"read": t_q * d_k + n_keys * (d_k + d_v), "written": t_q * (d_v + 1)}


def _causal_tile(row_start: int, n_rows: int, col_start: int, n_cols: int) -> np.ndarray:
    """The causal mask (key ``j ≤`` query ``i``) of one tile only, never the full matrix."""
    rows = np.arange(row_start, row_start + n_rows)  # (n_rows,)
    cols = np.arange(col_start, col_start + n_cols)  # (n_cols,)
    return cols[None, :] <= rows[:, None]  # (n_rows, n_cols)


def _check_qkv(q: ArrayLike, k: ArrayLike, v: ArrayLike) -> tuple[np.ndarray, ...]:
    q = as_float_array("q", q, layout="(..., T_q, D_k)")
    k = as_float_array("k", k, layout="(..., T_k, D_k)")
    v = as_float_array("v", v, layout="(..., T_k, D_v)")
    check_same_dims("leading (batch/head) dimensions", slice(None, -2), q=q, k=k, v=v)
    check_same_dims("number of positions (T_k, axis -2)", -2, k=k, v=v)
    check_same_dims("last dimension (D_k)", -1, q=q, k=k)
    if 0 in (q.shape[-2], k.shape[-2], q.shape[-1]):
        raise ValueError(
            "q and k need T_q >= 1 queries, T_k >= 1 keys and D_k >= 1: "
            f"q has shape {q.shape}, k has shape {k.shape}"
        )
    return q, k, v


def _check_sizes(**sizes: object) -> tuple[int, ...]:
    return tuple(check_positive_int(name, value) for name, value in sizes.items())


def _check_causal(causal: object, t_q: int, t_k: int, **arrays: np.ndarray) -> bool:
    if not isinstance(causal, bool | np.bool_):
        raise TypeError(f"causal must be True or False, got {causal!r}")
    if causal and t_q != t_k:
        shapes = ", ".join(f"{name} has shape {a.shape}" for name, a in arrays.items())
        raise ValueError(
            "causal=True needs T_q == T_k (query i attends keys j <= i): "
            + (shapes or f"t_q is {t_q}, t_k is {t_k}")
        )
    return bool(causal)


def _check_traffic(traffic: object) -> None:
    if traffic is None:
        return
    if not isinstance(traffic, dict):
        raise TypeError(f"traffic must be a dict or None, got {type(traffic).__name__}")
    for name in _DIRECTIONS:
        count = traffic.get(name, 0)
        if isinstance(count, bool) or not isinstance(count, numbers.Integral):
            raise TypeError(f'traffic["{name}"] must be an integer count, got {count!r}')


def _add_traffic(traffic: dict | None, moved: dict[str, int]) -> None:
    if traffic is not None:
        for name in _DIRECTIONS:
            traffic[name] = traffic.get(name, 0) + moved[name]
