"""Numerically stable softmax with temperature (chapter 2).

``softmax(x)_i = exp(x_i / τ) / Σ_j exp(x_j / τ)`` turns scores into weights that are
non-negative and sum to one. Subtracting the largest score first changes nothing
mathematically (softmax is shift invariant) but keeps ``exp`` from overflowing. The total of
the exponentials is added up in at least float32, as ``torch.softmax`` does for float16, so
that a float16 total neither overflows nor stops growing.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from selfattn_lib._validation import as_float_array, check_axis, check_positive_float


def softmax(x: ArrayLike, axis: int = -1, temperature: float = 1.0) -> np.ndarray:
    """Softmax of ``x / temperature`` along ``axis``, computed without overflow in ``exp``.

    The exponentials are computed in ``x``'s dtype, added up in at least float32 (as
    ``torch.softmax`` does for float16) and divided there, and the weights are rounded back to
    ``x``'s dtype: 70,000 equal float16 scores get 1/70,000 each (1.43e-05), along any axis.
    Added up in float16, their total would be ``inf`` along the last axis and 2,048 along
    another (:func:`_total_dtype` says why), and the weights 0 or 1/2,048.

    Parameters
    ----------
    x
        Finite scores; ``-inf`` is allowed and gets weight exactly 0 (that is how masks
        work). A slice that is all ``-inf`` gets all-zero weights, not NaN.
    axis
        The axis whose entries are turned into weights (sum to one).
    temperature
        A finite positive number ``τ``: below 1 sharpens the weights towards the
        arg-max, above 1 flattens them towards uniform.

    Shapes
    ------
    ``x``: any shape with at least one axis → the same shape. float16 and float32 inputs keep
    their dtype; integers and booleans become float64.

    Examples
    --------
    >>> softmax([1.0, 1.0])
    array([0.5, 0.5])
    >>> softmax([1000.0, 1001.0]).round(4)
    array([0.2689, 0.7311])
    >>> softmax([0.0, 1.0], temperature=0.01).round(4)
    array([0., 1.])
    """
    x = as_float_array("x", x, allow_neg_inf=True)
    if x.ndim == 0:
        raise ValueError(f"softmax needs at least one axis: x has shape {x.shape}")
    axis = check_axis(axis, "x", x)
    temperature = check_positive_float("temperature", temperature)
    return softmax_in_place(x.copy(), axis, temperature)  # x itself is never written to


def log_sum_exp(x: ArrayLike, axis: int = -1) -> np.ndarray:
    """``log Σ_j exp(x_j)`` along ``axis``, computed without overflow in ``exp`` or ``log 0``.

    It is the log of softmax's denominator: ``softmax(x) = exp(x − log_sum_exp(x))``. The
    largest entry ``m`` is taken out first, ``m + log Σ_j exp(x_j − m)``, so every exponent is
    at most 0 and the sum is at least 1. As in :func:`softmax`, the sum is added up in at least
    float32 and the result rounded back to ``x``'s dtype: 70,000 float16 zeros give
    ``log 70000`` (11.16), along any axis.

    Shapes
    ------
    ``x``: any shape with at least one axis → ``x``'s shape without ``axis``, in ``x``'s dtype
    (float64 for integers and booleans).

    Examples
    --------
    >>> log_sum_exp([1000.0, 1000.0]).round(4)  # np.log(np.exp(...).sum()) gives inf
    np.float64(1000.6931)
    """
    x = as_float_array("x", x)
    if x.ndim == 0:
        raise ValueError(f"log_sum_exp needs at least one axis: x has shape {x.shape}")
    axis = check_axis(axis, "x", x)
    largest = x.max(axis=axis, keepdims=True)
    with np.errstate(over="ignore"):  # x - m overflows only towards -inf, whose exp is 0
        exponentials = np.exp(x - largest)
    total = exponentials.sum(axis=axis, keepdims=True, dtype=_total_dtype(x.dtype))  # >= 1
    return np.squeeze(largest + np.log(total), axis=axis).astype(x.dtype, copy=False)


def _total_dtype(dtype: np.dtype | type) -> np.dtype:
    """The dtype in which :func:`softmax` and :func:`log_sum_exp` add up exponentials of
    ``dtype``: at least float32.

    NumPy (2.4) adds float16 up in float16 unless told otherwise. Along a contiguous last axis
    it adds in float32 but rounds the total to float16, which is ``inf`` from 65,520 on; along
    another axis it adds one slice at a time in float16, where a total of ones stops growing at
    2,048 (2,048 + 1 rounds back to 2,048).

    Examples
    --------
    >>> _total_dtype(np.float16), _total_dtype(np.float32), _total_dtype(np.float64)
    (dtype('float32'), dtype('float32'), dtype('float64'))
    """
    return np.promote_types(dtype, np.float32)


def softmax_in_place(scores: np.ndarray, axis: int = -1, temperature: float = 1.0) -> np.ndarray:
    """:func:`softmax` of an array the caller owns and has checked, written into it.

    For the attention functions, whose freshly computed scores are finite or ``-inf`` (for
    masked keys): this skips the argument checks and the copy, the slowest parts of
    :func:`softmax` for large score matrices. Returns ``scores``, now the weights.

    Shapes
    ------
    ``scores``: any shape with at least one axis → the same shape (the same array).

    Examples
    --------
    >>> scores = np.array([[0.0, np.log(3.0)], [-np.inf, -np.inf]])
    >>> softmax_in_place(scores).round(2)
    array([[0.25, 0.75],
           [0.  , 0.  ]])
    """
    if not isinstance(scores, np.ndarray) or scores.dtype.kind != "f":
        raise TypeError(f"scores must be a floating-point NumPy array, got {type(scores).__name__}")
    axis = check_axis(axis, "scores", scores)
    temperature = check_positive_float("temperature", temperature)
    # initial=-inf makes the maximum of an empty axis -inf instead of an error; a slice that
    # is all -inf is shifted by 0 instead (-inf - -inf would be NaN).
    largest = scores.max(axis=axis, keepdims=True, initial=-np.inf)
    largest[np.isneginf(largest)] = 0
    # After the shift every entry is <= 0, so an overflow of x - max (finite scores of both
    # signs near the float limit) or of (x - max) / τ can only head towards -inf, whose exp
    # is the correct weight 0.
    with np.errstate(over="ignore"):
        scores -= largest
        if temperature != 1.0:
            scores /= temperature
        np.exp(scores, out=scores)
    totals = scores.sum(axis=axis, keepdims=True, dtype=_total_dtype(scores.dtype))
    # A slice whose total is 0 (all -inf, or an empty axis) is all zeros already, and stays
    # so instead of 0 / 0. A float16 weight is divided in float32 and rounded once.
    return np.divide(scores, totals, out=scores, where=totals > 0)
