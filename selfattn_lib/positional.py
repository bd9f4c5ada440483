"""Sinusoidal positional encoding (chapter 8).

Attention itself ignores order (permuting the tokens permutes the outputs), so each position
gets a vector added to its token's embedding. The original Transformer uses sines and cosines
of geometrically spaced frequencies:

``PE[pos, 2i] = sin(pos / base^(2i / D))`` and ``PE[pos, 2i + 1] = cos(pos / base^(2i / D))``.

Each (sin, cos) pair rotates by a fixed angle per step, so ``PE[pos + k]`` is a linear
function (a rotation) of ``PE[pos]`` for every offset ``k``.
"""

from __future__ import annotations

import numpy as np

from selfattn_lib._validation import check_positive_float, check_positive_int


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
    d_model = check_positive_int("d_model", d_model)
    if d_model % 2:
        raise ValueError(f"d_model must be even (sin and cos come in pairs), got {d_model}")
    base = check_positive_float("base", base)
    positions = np.arange(max_len)[:, None]  # (T, 1)
    frequencies = base ** (-np.arange(0, d_model, 2) / d_model)  # (D / 2,)
    angles = positions * frequencies  # (T, D / 2)
    encoding = np.empty((max_len, d_model))  # (T, D)
    encoding[:, 0::2] = np.sin(angles)
    encoding[:, 1::2] = np.cos(angles)
    return encoding
