"""Multi-head attention in NumPy, with explicit parameters (chapter 7).

Each of ``H`` heads attends in its own ``D_h = D / H``-dimensional slice of the projected
queries, keys and values; the heads' outputs are concatenated and mixed by ``W_O``:
``MultiHead(X_q, X_kv) = Concat(head_1, …, head_H) W_O`` with
``head_h = Attention(X_q W_Q^h, X_kv W_K^h, X_kv W_V^h)``.

Weights follow the maths convention ``Q = X W_Q`` (``W_Q`` has shape ``(D, D)`` and is used
as ``x @ w_q``). ``torch.nn.Linear`` and ``torch.nn.MultiheadAttention`` store the transpose.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np
from numpy.typing import ArrayLike

from selfattn_lib._validation import (
    as_float_array,
    check_all_finite,
    check_mask_for,
    check_positive_int,
    check_same_dims,
)
from selfattn_lib.attention import scaled_dot_product_attention


def split_heads(x: ArrayLike, n_heads: int) -> np.ndarray:
    """Split the last axis into ``n_heads`` heads and move the head axis before the tokens.

    Head ``h`` gets features ``h * D_h`` to ``(h + 1) * D_h - 1`` of every token.

    Shapes
    ------
    ``x``: ``(..., T, D)`` → ``(..., H, T, D_h)`` with ``H = n_heads``, ``D_h = D / H``
    (``D`` must be divisible by ``n_heads``); typically ``(B, T, D)`` → ``(B, H, T, D_h)``.

    Examples
    --------
    >>> x = np.arange(8.0).reshape(2, 4)  # T = 2 tokens, D = 4
    >>> split_heads(x, n_heads=2)
    array([[[0., 1.],
            [4., 5.]],
    <BLANKLINE>
           [[2., 3.],
            [6., 7.]]])
    """
    x = as_float_array("x", x, layout="(..., T, D)")
    n_heads = _check_n_heads(n_heads, x.shape[-1], f"x has shape {x.shape}")
    *leading, n_tokens, d_model = x.shape
    x = x.reshape(*leading, n_tokens, n_heads, d_model // n_heads)  # (..., T, H, D_h)
    return np.swapaxes(x, -3, -2)  # (..., H, T, D_h)


def merge_heads(x: ArrayLike) -> np.ndarray:
    """Undo :func:`split_heads`: concatenate the heads' features for every token.

    Shapes
    ------
    ``x``: ``(..., H, T, D_h)`` → ``(..., T, H * D_h)``.

    Examples
    --------
    >>> x = np.arange(8.0).reshape(2, 4)
    >>> np.array_equal(merge_heads(split_heads(x, n_heads=2)), x)
    True
    """
    x = as_float_array("x", x, layout="(..., H, T, D_h)")
    *leading, n_heads, n_tokens, d_head = x.shape
    x = np.swapaxes(x, -3, -2)  # (..., T, H, D_h)
    return x.reshape(*leading, n_tokens, n_heads * d_head)  # (..., T, D)


@dataclass(frozen=True, eq=False)
class MultiHeadParams:
    """The parameters of one multi-head attention layer, used as ``x @ w + b``.

    ``eq=False``: comparing two parameter sets with ``==`` would be ambiguous for arrays;
    compare fields with ``np.array_equal`` instead.

    Shapes
    ------
    ``w_q``, ``w_k``, ``w_v``, ``w_o``: ``(D, D)``; ``b_q``, ``b_k``, ``b_v``, ``b_o``:
    ``(D,)`` or ``None`` (no bias).

    Examples
    --------
    >>> params = MultiHeadParams.init(8, np.random.default_rng(0))
    >>> params.d_model, params.w_q.shape, params.b_o.shape
    (8, (8, 8), (8,))
    """

    w_q: np.ndarray
    w_k: np.ndarray
    w_v: np.ndarray
    w_o: np.ndarray
    b_q: np.ndarray | None = None
    b_k: np.ndarray | None = None
    b_v: np.ndarray | None = None
    b_o: np.ndarray | None = None

    def __post_init__(self) -> None:
        w_q = as_float_array("w_q", self.w_q, layout="(D, D)")
        if w_q.shape[0] != w_q.shape[1] or w_q.shape[0] == 0:
            raise ValueError(f"w_q must have shape (D, D) with D >= 1, got shape {w_q.shape}")
        d_model = w_q.shape[0]
        for field in fields(self):
            value = getattr(self, field.name)
            is_weight = field.name.startswith("w_")
            if value is None and not is_weight:
                continue  # no bias
            layout, shape = ("(D, D)", (d_model, d_model)) if is_weight else ("(D,)", (d_model,))
            value = as_float_array(field.name, value, layout=layout)
            if value.shape != shape:
                raise ValueError(
                    f"{field.name} must have shape {layout} = {shape} to match w_q, "
                    f"got shape {value.shape}"
                )
            # A frozen dataclass can set its own fields only through object.__setattr__.
            object.__setattr__(self, field.name, value)

    @classmethod
    def init(cls, d_model: int, rng: np.random.Generator, *, bias: bool = True) -> MultiHeadParams:
        """Random parameters: Xavier/Glorot uniform weights and zero biases.

        Each weight is drawn from ``U(-a, a)`` with ``a = √(6 / (D + D))``, which keeps the
        variance of activations roughly constant; biases start at zero (as in
        ``torch.nn.MultiheadAttention``), or are ``None`` when ``bias=False``.

        Shapes
        ------
        ``d_model`` (``D``) → weights ``(D, D)``, biases ``(D,)``.

        Examples
        --------
        >>> params = MultiHeadParams.init(4, np.random.default_rng(0), bias=False)
        >>> params.w_o.shape, params.b_o is None
        ((4, 4), True)
        """
        d_model = check_positive_int("d_model", d_model)
        if not isinstance(rng, np.random.Generator):
            raise TypeError(
                "rng must be a numpy.random.Generator (e.g. np.random.default_rng(0)), "
                f"got {type(rng).__name__}"
            )
        limit = math.sqrt(6 / (d_model + d_model))
        weights = [rng.uniform(-limit, limit, size=(d_model, d_model)) for _ in range(4)]
        biases = [np.zeros(d_model) if bias else None for _ in range(4)]
        return cls(*weights, *biases)

    @property
    def d_model(self) -> int:
        """The model dimension ``D``."""
        return self.w_q.shape[0]


def multi_head_attention(
    x_q: ArrayLike,
    x_kv: ArrayLike,
    params: MultiHeadParams,
    n_heads: int,
    mask: ArrayLike | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Multi-head attention of the queries ``x_q`` over the keys and values ``x_kv``.

    Self-attention passes the same sequence twice (``x_q`` is ``x_kv``); cross-attention
    passes another sequence as ``x_kv``, of a possibly different length. Matches
    ``torch.nn.MultiheadAttention`` with the same weights (transposed, see the module
    docstring), except for a query with nothing to attend to: here it gets zero head outputs
    (so ``output`` is ``b_o``). torch 2.13.0 gives NaN for it with ``need_weights=True`` (its
    default) or, with an even number of heads, in eval mode under ``torch.no_grad()``, and
    ``b_o`` otherwise.

    Parameters
    ----------
    x_q, x_kv
        Query and key/value sequences with the same leading dimensions; usually ``(B, T, D)``,
        but a single sequence ``(T, D)`` or more leading axes work too.
    params
        The layer's weights (:class:`MultiHeadParams` with ``d_model == D``).
    n_heads
        The number of heads ``H``; ``D`` must be divisible by it.
    mask
        Boolean, ``True`` = "may attend", broadcastable to ``(..., T_q, T_k)`` without
        changing that shape; the same mask applies to every head (the head axis is inserted
        here). For example a :func:`~selfattn_lib.masks.padding_mask` ``(B, 1, T_k)``.

    Shapes
    ------
    ``x_q``: ``(..., T_q, D)``, ``x_kv``: ``(..., T_k, D)`` → ``output``: ``(..., T_q, D)``,
    ``weights``: ``(..., H, T_q, T_k)`` (one attention map per head).

    Examples
    --------
    >>> params = MultiHeadParams.init(8, np.random.default_rng(0))
    >>> x = np.random.default_rng(1).normal(size=(2, 5, 8))  # (B, T, D)
    >>> output, weights = multi_head_attention(x, x, params, n_heads=4)
    >>> output.shape, weights.shape
    ((2, 5, 8), (2, 4, 5, 5))
    """
    if not isinstance(params, MultiHeadParams):
        raise TypeError(f"params must be a MultiHeadParams, got {type(params).__name__}")
    x_q = as_float_array("x_q", x_q, layout="(..., T_q, D)")
    x_kv = as_float_array("x_kv", x_kv, layout="(..., T_k, D)")
    check_same_dims("leading (batch) dimensions", slice(None, -2), x_q=x_q, x_kv=x_kv)
    for name, x in (("x_q", x_q), ("x_kv", x_kv)):
        if x.shape[-1] != params.d_model:
            raise ValueError(
                f"{name} must have last dimension D = params.d_model = {params.d_model}: "
                f"{name} has shape {x.shape}"
            )
    n_heads = _check_n_heads(n_heads, params.d_model, "params.d_model")
    q = _project(x_q, params.w_q, params.b_q, "x_q @ w_q + b_q")  # (..., T_q, D)
    k = _project(x_kv, params.w_k, params.b_k, "x_kv @ w_k + b_k")  # (..., T_k, D)
    v = _project(x_kv, params.w_v, params.b_v, "x_kv @ w_v + b_v")  # (..., T_k, D)
    q = split_heads(q, n_heads)  # (..., H, T_q, D_h)
    k = split_heads(k, n_heads)  # (..., H, T_k, D_h)
    v = split_heads(v, n_heads)  # (..., H, T_k, D_h)
    if mask is not None:
        scores_shape = (*x_q.shape[:-1], x_kv.shape[-2])  # (..., T_q, T_k)
        mask = check_mask_for(scores_shape, mask)
        # The same mask for every head: a head axis of size 1 in front of (T_q, T_k).
        mask = np.broadcast_to(mask, scores_shape)[..., None, :, :]  # (..., 1, T_q, T_k)
    heads, weights = scaled_dot_product_attention(q, k, v, mask)  # (..., H, T_q, D_h)
    merged = merge_heads(heads)  # (..., T_q, D)
    output = _project(merged, params.w_o, params.b_o, "merged heads @ w_o + b_o")  # (..., T_q, D)
    return output, weights  # (..., T_q, D), (..., H, T_q, T_k)


def _check_n_heads(n_heads: object, d_model: int, context: str) -> int:
    n_heads = check_positive_int("n_heads", n_heads)
    if d_model % n_heads:
        raise ValueError(
            f"D must be divisible by n_heads: D = {d_model} ({context}), n_heads = {n_heads}"
        )
    return n_heads


def _project(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, what: str) -> np.ndarray:
    """``x @ w + b`` (no bias if ``b`` is None), reporting an overflow as ``what``."""
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported just below
        projected = x @ w if b is None else x @ w + b  # (..., T, D)
    check_all_finite(what, projected)
    return projected
