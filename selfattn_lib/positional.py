"""Positional encodings (chapter 8): the sinusoidal encoding and rotary embeddings (RoPE).

Attention without a mask ignores order (permuting the tokens permutes the outputs), so
positions are added to the embeddings (the sinusoidal encoding) or turned into the queries and
keys (RoPE). The original Transformer adds sines and cosines of geometrically spaced
frequencies:

``PE[pos, 2i] = sin(pos / base^(2i / D))`` and ``PE[pos, 2i + 1] = cos(pos / base^(2i / D))``.

Each (sin, cos) pair rotates by a fixed angle per step, so ``PE[pos + k]`` is a linear
function (a rotation) of ``PE[pos]`` for every offset ``k``. Rotary position embeddings
(:func:`apply_rope`) use the same rotations on the queries and keys instead, so that their dot
products depend on the offset between two positions only.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from selfattn_lib._validation import as_float_array, check_positive_float, check_positive_int


def sinusoidal_encoding(max_len: int, d_model: int, *, base: float = 10000.0) -> np.ndarray:
    """The sinusoidal positional encodings of positions ``0 … max_len - 1``.

    Parameters
    ----------
    max_len
        Number of positions ``T`` (a positive integer).
    d_model
        Model dimension ``D``; must be even and positive (sin and cos come in pairs).
    base
        A finite positive number; the wavelengths grow geometrically from ``2π`` to about
        ``2π · base``.

    Shapes
    ------
    ``max_len`` (``T``), ``d_model`` (``D``) → ``(T, D)`` float64, every entry in ``[-1, 1]``.

    Examples
    --------
    >>> sinusoidal_encoding(3, 4).round(3)
    array([[ 0.   ,  1.   ,  0.   ,  1.   ],
           [ 0.841,  0.54 ,  0.01 ,  1.   ],
           [ 0.909, -0.416,  0.02 ,  1.   ]])
    """
    max_len = check_positive_int("max_len", max_len)
    angles = rope_angles(np.arange(max_len), d_model, base=base)  # (T, D / 2): pos · ω_i
    encoding = np.empty((max_len, d_model))  # (T, D)
    encoding[:, 0::2] = np.sin(angles)
    encoding[:, 1::2] = np.cos(angles)
    return encoding


#: The two ways of pairing features for rotary position embeddings (RoPE):
#: ``"interleaved"`` rotates ``(x_0, x_1), (x_2, x_3), …`` (the RoFormer paper, and Meta's
#: LLaMA code through complex numbers); ``"half"`` rotates ``(x_i, x_{i + D/2})``, the
#: ``rotate_half`` layout of Hugging Face's code.
ROPE_LAYOUTS = ("interleaved", "half")


def rope_angles(positions: ArrayLike, d_model: int, *, base: float = 10000.0) -> np.ndarray:
    """The rotary angles ``pos · ω_i`` with ``ω_i = base^(-2i / D)``, one per position and
    feature pair: the same frequencies as :func:`sinusoidal_encoding`.

    Shapes
    ------
    ``positions``: ``(T,)`` (whole or real numbers), ``d_model`` (``D``, even) →
    ``(T, D / 2)``.

    Examples
    --------
    >>> rope_angles([0, 1, 2], 4).round(3)
    array([[0.  , 0.  ],
           [1.  , 0.01],
           [2.  , 0.02]])
    """
    d_model = check_positive_int("d_model", d_model)
    if d_model % 2:
        raise ValueError(f"d_model must be even (features come in pairs), got {d_model}")
    base = check_positive_float("base", base)
    positions = as_float_array("positions", positions, layout="(T,)")
    frequencies = base ** (-np.arange(0, d_model, 2) / d_model)  # (D / 2,)
    return positions[:, None] * frequencies  # (T, D / 2)


def apply_rope(
    x: ArrayLike,
    positions: ArrayLike,
    *,
    layout: str = "interleaved",
    base: float = 10000.0,
) -> np.ndarray:
    """Rotary position embedding (RoPE): rotate each feature pair of ``x[..., t, :]`` by the
    angle ``positions[t] · ω_i`` (:func:`rope_angles`).

    A pair ``(a, b)`` becomes ``(a cos θ - b sin θ, a sin θ + b cos θ)``. With
    ``layout="interleaved"`` pair ``i`` is features ``(2i, 2i + 1)``; with ``layout="half"``
    it is ``(i, i + D/2)``, so that ``x * cos + rotate_half(x) * sin`` with
    ``rotate_half(x) = [-x[D/2:], x[:D/2]]``. The two layouts are the same rotation with the
    features permuted: ``apply_rope(x[..., p], …, layout="half") ==
    apply_rope(x, …)[..., p]`` for ``p = [0, 2, …, D - 2, 1, 3, …, D - 1]``. Rotations keep
    lengths, and the dot product of a query rotated at ``m`` and a key rotated at ``n``
    depends on the positions only through ``n - m``.

    Parameters
    ----------
    x
        Queries or keys, real numbers, ``(..., T, D)`` with ``D`` even.
    positions
        The position of each of the ``T`` rows, ``(T,)``.
    layout
        ``"interleaved"`` or ``"half"`` (:data:`ROPE_LAYOUTS`).
    base
        A finite positive number, as in :func:`sinusoidal_encoding`.

    Shapes
    ------
    ``x``: ``(..., T, D)``, ``positions``: ``(T,)`` → ``(..., T, D)``, float64 for integer
    input, else ``x``'s dtype.

    Examples
    --------
    >>> x = np.array([[1.0, 0.0, 0.0, 0.0]])  # (T, D) = (1, 4)
    >>> apply_rope(x, [1]).round(3)  # pair (x_0, x_1) turned by 1 rad
    array([[0.54 , 0.841, 0.   , 0.   ]])
    >>> apply_rope(x, [1], layout="half").round(3)  # pair (x_0, x_2) turned by 1 rad
    array([[0.54 , 0.   , 0.841, 0.   ]])
    """
    if layout not in ROPE_LAYOUTS:
        raise ValueError(f"layout must be one of {ROPE_LAYOUTS}, got {layout!r}")
    x = as_float_array("x", x, layout="(..., T, D)")
    d_model = x.shape[-1]
    if d_model % 2:
        raise ValueError(
            f"the last dimension of x (D) must be even (features are rotated in pairs), "
            f"got x with shape {x.shape}"
        )
    angles = rope_angles(positions, d_model, base=base)  # (T, D / 2)
    if angles.shape[0] != x.shape[-2]:
        raise ValueError(
            f"positions must hold one position per row of x: x has shape {x.shape} "
            f"(T = {x.shape[-2]}), positions has {angles.shape[0]}"
        )
    cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)  # (T, D / 2)
    half = d_model // 2
    if layout == "interleaved":
        one, other = np.s_[..., 0::2], np.s_[..., 1::2]  # features 2i and 2i + 1
    else:
        one, other = np.s_[..., :half], np.s_[..., half:]  # features i and i + D/2
    first, second = x[one], x[other]  # (..., T, D / 2) each
    rotated = np.empty_like(x)  # (..., T, D)
    rotated[one] = first * cos - second * sin
    rotated[other] = first * sin + second * cos
    return rotated
