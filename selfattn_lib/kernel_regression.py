"""Kernel regression: a soft lookup that fits a curve, the idea behind attention (chapter 3).

Given training points, keys ``x_i`` and values ``y_i``, the Nadaraya–Watson estimate at a
query ``x`` is a weighted average of the values, with more weight on the keys near the query:

``f(x) = Σ_i w_i(x) y_i``, ``w(x) = softmax(−(x − x_i)² / (2 σ²))`` over ``i``.

These are Gaussian-kernel weights: positive, summing to one, largest for the nearest key. The
width ``σ`` sets how local the lookup is: a small width copies the nearest key's value, a
large one averages every value. Attention is the same recipe with dot products as scores.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from selfattn_lib._validation import as_float_array, check_all_finite, check_positive_float
from selfattn_lib.softmax import softmax


def kernel_weights(queries: ArrayLike, keys: ArrayLike, width: float) -> np.ndarray:
    """Gaussian-kernel weights of every key for every query, ``softmax(−(x − x_i)² / 2σ²)``.

    Each row is a softmax over the keys, so it is positive and sums to one. A query far from
    every key gets (almost) all its weight on the nearest key, never NaN: the softmax subtracts
    the largest score first, where ``exp`` of the raw scores would give ``0 / 0``.

    Parameters
    ----------
    queries, keys
        Finite 1-D positions.
    width
        The kernel's width ``σ``, a finite positive number.

    Shapes
    ------
    ``queries``: ``(T_q,)``, ``keys``: ``(T_k,)`` → ``(T_q, T_k)``.

    Examples
    --------
    >>> kernel_weights([0.0], [0.0, 1.0, 3.0], width=1.0).round(3)
    array([[0.618, 0.375, 0.007]])
    >>> kernel_weights([100.0], [0.0, 1.0], width=0.1)  # far away: the nearest key wins
    array([[0., 1.]])
    """
    queries = as_float_array("queries", queries, layout="(T_q,)")
    keys = as_float_array("keys", keys, layout="(T_k,)")
    if keys.size == 0:
        raise ValueError("keys is empty: give at least one training point")
    width = check_positive_float("width", width)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported just below
        scores = -((queries[:, None] - keys[None, :]) ** 2) / (2 * width**2)  # (T_q, T_k)
    check_all_finite("the scores −(x − x_i)² / 2σ²", scores)
    return softmax(scores, axis=-1)  # (T_q, T_k)


def kernel_regression(
    queries: ArrayLike, keys: ArrayLike, values: ArrayLike, width: float
) -> tuple[np.ndarray, np.ndarray]:
    """Nadaraya–Watson kernel regression: at each query, the kernel-weighted average of the
    values. Returns ``(predictions, weights)``, like the attention functions.

    Parameters
    ----------
    queries, keys
        Finite 1-D positions: where to predict, and where the training points are.
    values
        The training points' values, one (number or vector) per key.
    width
        The kernel's width ``σ``, a finite positive number (see :func:`kernel_weights`).

    Shapes
    ------
    ``queries``: ``(T_q,)``, ``keys``: ``(T_k,)``, ``values``: ``(T_k,)`` or ``(T_k, D_v)``
    → ``predictions``: ``(T_q,)`` or ``(T_q, D_v)``, ``weights``: ``(T_q, T_k)``.

    Examples
    --------
    Halfway between two keys, the prediction is the average of their values:

    >>> predictions, weights = kernel_regression([0.5], [0.0, 1.0], [2.0, 4.0], width=0.3)
    >>> predictions, weights
    (array([3.]), array([[0.5, 0.5]]))
    """
    weights = kernel_weights(queries, keys, width)  # (T_q, T_k); checks the three
    values = as_float_array("values", values)
    if values.ndim not in (1, 2) or values.shape[0] != weights.shape[1]:
        raise ValueError(
            "values must have shape (T_k,) or (T_k, D_v), one value per key: "
            f"keys has shape {np.shape(keys)}, values has shape {values.shape}"
        )
    return weights @ values, weights  # (T_q,) or (T_q, D_v), (T_q, T_k)
