"""Causal (look-ahead) and padding masks, and combining them (chapter 6).

Masks are boolean and ``True`` means "may attend", as in
``torch.nn.functional.scaled_dot_product_attention``. Other libraries use other conventions:
``torch.nn.MultiheadAttention``'s boolean ``key_padding_mask`` and ``attn_mask`` mean the
opposite (``True`` = ignore), so pass ``~mask`` there.
"""

from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike

from selfattn_lib._validation import as_bool_array, check_positive_int


def causal_mask(t_q: int, t_k: int | None = None) -> np.ndarray:
    """Look-ahead mask: query ``i`` may attend key ``j`` only if ``j <= i + (T_k - T_q)``.

    The mask is aligned bottom-right: the ``T_q`` queries are the *last* ``T_q`` of the
    ``T_k`` positions, which is what decoding with a key/value cache needs (one new query
    against all earlier keys). For ``T_q == T_k`` it is the lower triangle including the
    diagonal, the same as ``is_causal=True`` in
    ``torch.nn.functional.scaled_dot_product_attention``. For ``T_q != T_k`` torch's
    ``is_causal`` is aligned top-left instead (query ``i`` sees keys ``j <= i``); use
    ``np.tril(np.ones((t_q, t_k), dtype=bool))`` to get that mask. If ``T_q > T_k`` the first
    ``T_q - T_k`` queries see no key at all (their attention output is zero).

    Shapes
    ------
    ``t_q`` (``T_q``), ``t_k`` (``T_k``, defaults to ``T_q``) → ``(T_q, T_k)`` boolean.

    Examples
    --------
    >>> causal_mask(3)
    array([[ True, False, False],
           [ True,  True, False],
           [ True,  True,  True]])
    >>> causal_mask(1, 3)  # one new query attends to all three cached keys
    array([[ True,  True,  True]])
    """
    t_q = check_positive_int("t_q", t_q)
    t_k = t_q if t_k is None else check_positive_int("t_k", t_k)
    return np.tril(np.ones((t_q, t_k), dtype=bool), k=t_k - t_q)  # (T_q, T_k)


def padding_mask(
    lengths: ArrayLike | None = None,
    max_len: int | None = None,
    *,
    tokens: ArrayLike | None = None,
    pad_id: int | None = None,
) -> np.ndarray:
    """Mask that hides the padding of each sequence of a batch.

    Give either ``lengths`` and ``max_len`` (sequence ``b`` has ``lengths[b]`` real tokens
    followed by padding up to ``max_len``) or the padded ``tokens`` and the ``pad_id`` that
    marks padding. Every query may attend the real tokens (``True``) and none of the padding.

    Shapes
    ------
    ``lengths``: ``(B,)`` integers in ``[0, max_len]``, or ``tokens``: ``(B, T_k)`` →
    ``(B, 1, T_k)`` boolean (``T_k = max_len``). The axis of size 1 broadcasts over the
    queries of ``(B, T_q, T_k)`` scores; for per-head scores ``(B, H, T_q, T_k)`` use
    ``mask[:, None]`` (``(B, 1, 1, T_k)``).
    :func:`~selfattn_lib.multihead.multi_head_attention` inserts the head axis itself.

    Examples
    --------
    >>> padding_mask([3, 1], max_len=4)
    array([[[ True,  True,  True, False]],
    <BLANKLINE>
           [[ True, False, False, False]]])
    >>> padding_mask(tokens=[[5, 7, 0]], pad_id=0)
    array([[[ True,  True, False]]])
    """
    by_tokens = tokens is not None or pad_id is not None
    if by_tokens == (lengths is not None or max_len is not None):
        raise TypeError("padding_mask takes either lengths and max_len, or tokens and pad_id")
    if by_tokens:
        return _padding_of_tokens(tokens, pad_id)
    max_len = check_positive_int("max_len", max_len)
    lengths = np.asarray(lengths)
    if lengths.dtype.kind not in "iu":
        raise TypeError(f"lengths must be integers, got dtype {lengths.dtype}")
    if lengths.ndim != 1:
        raise ValueError(f"lengths must have shape (B,), got shape {lengths.shape}")
    outside = (lengths < 0) | (lengths > max_len)
    if outside.any():
        index = int(np.argmax(outside))
        raise ValueError(
            f"lengths must lie in [0, max_len] = [0, {max_len}]: "
            f"lengths[{index}] is {lengths[index]}"
        )
    is_real = np.arange(max_len) < lengths[:, None]  # (B, T_k)
    return is_real[:, None, :]  # (B, 1, T_k)


def _padding_of_tokens(tokens: ArrayLike, pad_id: object) -> np.ndarray:
    if isinstance(pad_id, bool) or not isinstance(pad_id, numbers.Integral):
        raise TypeError(f"pad_id must be an integer token id, got {pad_id!r}")
    tokens = np.asarray(tokens)
    if tokens.dtype.kind not in "iu":
        raise TypeError(f"tokens must be integer token ids, got dtype {tokens.dtype}")
    if tokens.ndim != 2:
        raise ValueError(f"tokens must have shape (B, T_k), got shape {tokens.shape}")
    return (tokens != pad_id)[:, None, :]  # (B, 1, T_k)


def combine_masks(*masks: ArrayLike) -> np.ndarray:
    """Logical AND of boolean masks: a key may be attended only if every mask allows it.

    Shapes
    ------
    Any shapes that broadcast together → the broadcast shape, e.g. ``(B, 1, T_k)`` padding
    and ``(T_q, T_k)`` causal → ``(B, T_q, T_k)``.

    Examples
    --------
    >>> combine_masks(causal_mask(3), padding_mask([2], max_len=3))
    array([[[ True, False, False],
            [ True,  True, False],
            [ True,  True, False]]])
    """
    if not masks:
        raise TypeError("combine_masks needs at least one mask")
    masks = tuple(as_bool_array(f"masks[{i}]", mask) for i, mask in enumerate(masks))
    try:
        shape = np.broadcast_shapes(*(mask.shape for mask in masks))
    except ValueError:
        shapes = ", ".join(str(mask.shape) for mask in masks)
        raise ValueError(f"masks must broadcast together, got shapes {shapes}") from None
    return np.logical_and.reduce([np.broadcast_to(mask, shape) for mask in masks])
