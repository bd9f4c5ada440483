"""One decoding step with a key/value cache (chapter 11).

When a decoder generates one token at a time, the keys and values of the earlier tokens do
not change: a cache keeps them, and each step projects only the newest token, appends its key
and value, and lets its query attend to everything so far. The output is that of full causal
attention, at ``O(t)`` work per step instead of ``O(t²)``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from selfattn_lib._validation import as_float_array
from selfattn_lib.attention import scaled_dot_product_attention


def attend_with_cache(
    q_new: ArrayLike, k_new: ArrayLike, v_new: ArrayLike, k_cache: ArrayLike, v_cache: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Append the newest token's key and value to the caches and attend with its query.

    The new query attends to all ``t + 1`` keys, its own included (the diagonal of the
    causal mask), with scores scaled by ``1 / √D_k``.

    Shapes
    ------
    ``q_new``, ``k_new``: ``(B, 1, D_k)``, ``v_new``: ``(B, 1, D_v)``; ``k_cache``:
    ``(B, t, D_k)``, ``v_cache``: ``(B, t, D_v)`` with ``t ≥ 0`` → ``output``:
    ``(B, 1, D_v)``, ``k_cache``: ``(B, t + 1, D_k)``, ``v_cache``: ``(B, t + 1, D_v)``.

    Examples
    --------
    >>> empty = np.zeros((1, 0, 2))
    >>> output, k_cache, v_cache = attend_with_cache(
    ...     [[[1.0, 0.0]]], [[[1.0, 0.0]]], [[[5.0, 6.0]]], empty, empty
    ... )
    >>> output, k_cache.shape
    (array([[[5., 6.]]]), (1, 1, 2))
    """
    new = {
        name: as_float_array(name, value, layout="(B, 1, D)")
        for name, value in (("q_new", q_new), ("k_new", k_new), ("v_new", v_new))
    }
    k_cache = as_float_array("k_cache", k_cache, layout="(B, t, D_k)")
    v_cache = as_float_array("v_cache", v_cache, layout="(B, t, D_v)")
    for name, array in new.items():
        if array.shape[:2] != (k_cache.shape[0], 1):
            raise ValueError(
                f"{name} must have shape (B, 1, D) with the caches' B = {k_cache.shape[0]}: "
                f"{name} has shape {array.shape}"
            )
    if k_cache.shape[:2] != v_cache.shape[:2]:
        raise ValueError(
            "k_cache and v_cache must hold the same tokens: k_cache has shape "
            f"{k_cache.shape}, v_cache has shape {v_cache.shape}"
        )
    for name, cache, array in (("k", k_cache, new["k_new"]), ("v", v_cache, new["v_new"])):
        if cache.shape[2] != array.shape[2]:
            raise ValueError(
                f"{name}_new and {name}_cache must have the same last dimension: "
                f"{name}_new has shape {array.shape}, {name}_cache has shape {cache.shape}"
            )
    k_cache = np.concatenate([k_cache, new["k_new"]], axis=1)  # (B, t + 1, D_k)
    v_cache = np.concatenate([v_cache, new["v_new"]], axis=1)  # (B, t + 1, D_v)
    output, _ = scaled_dot_product_attention(new["q_new"], k_cache, v_cache)  # (B, 1, D_v)
    return output, k_cache, v_cache
