"""The encoder layer in NumPy, piece by piece (chapter 9).

- :func:`layer_norm` and :func:`rms_norm` — normalise each token's vector over its features;
- :func:`feed_forward` — the position-wise network ``max(0, x W_1 + b_1) W_2 + b_2``;
- :func:`sublayer_connection` — a residual connection around a sublayer, with the norm after
  the addition (post-norm, the paper's) or before the sublayer (pre-norm);
- :func:`encoder_layer` — self-attention then feed-forward, each in a sublayer connection.

The torch twin of :func:`encoder_layer` is :class:`selfattn_lib.transformer.EncoderLayer`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from selfattn_lib._validation import as_float_array, check_positive_float, check_positive_int
from selfattn_lib.multihead import MultiHeadParams, multi_head_attention

#: The parameters of :func:`encoder_layer`, by name (see :func:`init_encoder_layer_params`).
ENCODER_LAYER_PARAMS = (
    *("attention", "w_1", "b_1", "w_2", "b_2"),
    *("gain_1", "bias_1", "gain_2", "bias_2"),
)


def _features(name: str, value: ArrayLike, d_model: int) -> np.ndarray:
    vector = as_float_array(name, value, layout="(D,)")
    if vector.shape != (d_model,):
        raise ValueError(
            f"{name} must have shape ({d_model},), like x's last axis: got {vector.shape}"
        )
    return vector


def layer_norm(x: ArrayLike, gain: ArrayLike, bias: ArrayLike, eps: float = 1e-5) -> np.ndarray:
    """Layer normalisation over the last axis: ``gain · (x − mean) / √(var + eps) + bias``.

    The variance is the population variance (divided by ``D``), as in
    ``torch.nn.LayerNorm``.

    Shapes
    ------
    ``x``: ``(..., D)``, ``gain``, ``bias``: ``(D,)`` → ``(..., D)``.

    Examples
    --------
    >>> layer_norm([[1.0, 2.0, 3.0]], gain=np.ones(3), bias=np.zeros(3)).round(3)
    array([[-1.225,  0.   ,  1.225]])
    """
    x = as_float_array("x", x, layout="(..., D)")
    gain, bias = (_features(name, v, x.shape[-1]) for name, v in (("gain", gain), ("bias", bias)))
    eps = check_positive_float("eps", eps)
    centred = x - x.mean(axis=-1, keepdims=True)  # (..., D)
    variance = (centred**2).mean(axis=-1, keepdims=True)  # (..., 1)
    return gain * centred / np.sqrt(variance + eps) + bias


def rms_norm(x: ArrayLike, gain: ArrayLike, eps: float = 1e-6) -> np.ndarray:
    """RMS normalisation over the last axis: ``gain · x / √(mean(x²) + eps)``.

    No centring and no bias: only the scale of each vector is normalised (Zhang & Sennrich,
    2019), as in ``torch.nn.RMSNorm``.

    Shapes
    ------
    ``x``: ``(..., D)``, ``gain``: ``(D,)`` → ``(..., D)``.

    Examples
    --------
    >>> rms_norm([[3.0, 4.0]], gain=np.ones(2), eps=1e-12).round(4)
    array([[0.8485, 1.1314]])
    """
    x = as_float_array("x", x, layout="(..., D)")
    gain = _features("gain", gain, x.shape[-1])
    eps = check_positive_float("eps", eps)
    return x / np.sqrt((x**2).mean(axis=-1, keepdims=True) + eps) * gain


def feed_forward(
    x: ArrayLike, w_1: ArrayLike, b_1: ArrayLike, w_2: ArrayLike, b_2: ArrayLike
) -> np.ndarray:
    """The position-wise feed-forward network ``max(0, x W_1 + b_1) W_2 + b_2``.

    Shapes
    ------
    ``x``: ``(..., D)``, ``w_1``: ``(D, d_ff)``, ``b_1``: ``(d_ff,)``, ``w_2``:
    ``(d_ff, D)``, ``b_2``: ``(D,)`` → ``(..., D)``.

    Examples
    --------
    >>> feed_forward([[1.0, -1.0]], np.eye(2), np.zeros(2), np.eye(2), np.ones(2))
    array([[2., 1.]])
    """
    x = as_float_array("x", x, layout="(..., D)")
    w_1 = as_float_array("w_1", w_1, layout="(D, d_ff)")
    w_2 = as_float_array("w_2", w_2, layout="(d_ff, D)")
    d_model, d_ff = x.shape[-1], w_1.shape[1]
    if w_1.shape[0] != d_model or w_2.shape != (d_ff, d_model):
        raise ValueError(
            f"w_1 must be (D, d_ff) and w_2 (d_ff, D) for x (..., D) with D = {d_model}: "
            f"w_1 has shape {w_1.shape}, w_2 has shape {w_2.shape}"
        )
    b_1, b_2 = _features("b_1", b_1, d_ff), _features("b_2", b_2, d_model)
    hidden = np.maximum(x @ w_1 + b_1, 0.0)  # (..., d_ff)
    return hidden @ w_2 + b_2  # (..., D)


def sublayer_connection(
    x: ArrayLike,
    sublayer: Callable[[np.ndarray], np.ndarray],
    norm: Callable[[np.ndarray], np.ndarray],
    norm_first: bool = False,
) -> np.ndarray:
    """A residual connection around ``sublayer``, with a norm.

    Post-norm (``norm_first=False``, the paper's): ``norm(x + sublayer(x))``; pre-norm
    (``norm_first=True``): ``x + sublayer(norm(x))``, whose residual path no norm touches.

    Shapes
    ------
    ``x``: ``(..., D)``; ``sublayer`` and ``norm`` map ``(..., D)`` to ``(..., D)`` →
    ``(..., D)``.

    Examples
    --------
    >>> double = lambda v: 2 * v
    >>> sublayer_connection(np.ones((1, 2)), double, norm=lambda v: v / 3)
    array([[1., 1.]])
    >>> sublayer_connection(np.ones((1, 2)), double, norm=lambda v: v / 2, norm_first=True)
    array([[2., 2.]])
    """
    x = as_float_array("x", x, layout="(..., D)")
    for name, function in (("sublayer", sublayer), ("norm", norm)):
        if not callable(function):
            raise TypeError(f"{name} must be a function, got {type(function).__name__}")
    if not isinstance(norm_first, bool | np.bool_):
        raise TypeError(f"norm_first must be True or False, got {norm_first!r}")
    if norm_first:
        return x + _same_shape("sublayer", sublayer(_same_shape("norm", norm(x), x)), x)
    return _same_shape("norm", norm(x + _same_shape("sublayer", sublayer(x), x)), x)


def _same_shape(name: str, result: Any, x: np.ndarray) -> np.ndarray:
    result = np.asarray(result)
    if result.shape != x.shape:
        raise ValueError(f"{name} must keep the shape {x.shape} of x, but returned {result.shape}")
    return result


def init_encoder_layer_params(d_model: int, d_ff: int, rng: np.random.Generator) -> dict:
    """Random parameters for :func:`encoder_layer`: the attention's projections, the
    feed-forward weights and the two layer norms' gains and biases.

    Biases, gains and norm shifts are drawn away from 0 and 1, so that a test of
    :func:`encoder_layer` notices a forgotten or swapped one.

    Shapes
    ------
    ``"attention"``: :class:`~selfattn_lib.multihead.MultiHeadParams` for ``D = d_model``;
    ``"w_1"``: ``(D, d_ff)``, ``"b_1"``: ``(d_ff,)``, ``"w_2"``: ``(d_ff, D)``; ``"b_2"``,
    ``"gain_1"``, ``"bias_1"``, ``"gain_2"``, ``"bias_2"``: ``(D,)``.

    Examples
    --------
    >>> params = init_encoder_layer_params(8, 16, np.random.default_rng(0))
    >>> params["w_1"].shape, params["gain_2"].shape
    ((8, 16), (8,))
    """
    d_model, d_ff = check_positive_int("d_model", d_model), check_positive_int("d_ff", d_ff)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    init = MultiHeadParams.init(d_model, rng)
    biases = (rng.normal(scale=0.3, size=d_model) for _ in range(4))
    attention = MultiHeadParams(init.w_q, init.w_k, init.w_v, init.w_o, *biases)
    return {
        "attention": attention,
        "w_1": rng.normal(size=(d_model, d_ff)) / np.sqrt(d_model),
        "b_1": rng.normal(scale=0.3, size=d_ff),
        "w_2": rng.normal(size=(d_ff, d_model)) / np.sqrt(d_ff),
        "b_2": rng.normal(scale=0.3, size=d_model),
        "gain_1": rng.normal(loc=1.0, scale=0.3, size=d_model),
        "bias_1": rng.normal(scale=0.3, size=d_model),
        "gain_2": rng.normal(loc=1.0, scale=0.3, size=d_model),
        "bias_2": rng.normal(scale=0.3, size=d_model),
    }


def encoder_layer(
    x: ArrayLike,
    params: dict,
    n_heads: int,
    mask: ArrayLike | None = None,
    norm_first: bool = False,
) -> np.ndarray:
    """One encoder layer: multi-head self-attention, then the feed-forward network, each in a
    :func:`sublayer_connection` with its own layer norm (``eps = 1e-5``).

    Post-norm: ``x = LN_1(x + MHA(x)); x = LN_2(x + FFN(x))``; pre-norm:
    ``x = x + MHA(LN_1(x)); x = x + FFN(LN_2(x))``. Equal to
    :class:`selfattn_lib.transformer.EncoderLayer` and ``torch.nn.TransformerEncoderLayer``
    (ReLU, no dropout) with the same weights.

    Shapes
    ------
    ``x``: ``(B, T, D)``, ``mask``: boolean, broadcastable to ``(B, T, T)`` (``True`` = may
    attend), ``params`` as from :func:`init_encoder_layer_params` → ``(B, T, D)``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> params = init_encoder_layer_params(8, 16, rng)
    >>> encoder_layer(rng.normal(size=(2, 5, 8)), params, n_heads=2).shape
    (2, 5, 8)
    """
    x = as_float_array("x", x, layout="(B, T, D)")
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict of arrays, got {type(params).__name__}")
    missing = [name for name in ENCODER_LAYER_PARAMS if name not in params]
    if missing:
        raise ValueError(f"params lacks {missing}: see init_encoder_layer_params")
    p = params

    def norm(which: str) -> Callable[[np.ndarray], np.ndarray]:
        return lambda v: layer_norm(v, p[f"gain_{which}"], p[f"bias_{which}"])

    def attend(v: np.ndarray) -> np.ndarray:
        return multi_head_attention(v, v, p["attention"], n_heads, mask=mask)[0]  # (B, T, D)

    def ffn(v: np.ndarray) -> np.ndarray:
        return feed_forward(v, p["w_1"], p["b_1"], p["w_2"], p["b_2"])  # (B, T, D)

    x = sublayer_connection(x, attend, norm("1"), norm_first)
    return sublayer_connection(x, ffn, norm("2"), norm_first)
