"""Dot products, cosine similarity and similarity matrices (chapter 1).

The dot product ``a · b = Σ_i a_i b_i`` equals ``‖a‖ ‖b‖ cos θ``: it is scaled by both
lengths and, for fixed lengths, is largest when the vectors point the same way (θ = 0) and
falls as the angle θ between them grows; the cosine ``a · b / (‖a‖ ‖b‖)`` keeps only the
angle. A similarity matrix holds the score of every query vector against every key vector,
which is the first half of attention.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from selfattn_lib._validation import (
    as_float_array,
    check_all_finite,
    check_same_dims,
    element,
)

_MEASURES = ("dot", "cosine")


def dot_product(a: ArrayLike, b: ArrayLike) -> np.ndarray | np.floating:
    """Dot product of two vectors, or of two equally shaped stacks of vectors.

    Shapes
    ------
    ``a``, ``b``: ``(..., D)``, identical (no broadcasting) → ``(...)``; two vectors of shape
    ``(D,)`` give a NumPy scalar.

    Examples
    --------
    >>> dot_product([1, 2, 3], [4, 5, 6])
    np.float64(32.0)
    >>> dot_product([[1, 0], [0, 2]], [[3, 4], [5, 6]])
    array([ 3., 12.])
    """
    a = as_float_array("a", a, layout="(..., D)")
    b = as_float_array("b", b, layout="(..., D)")
    check_same_dims("shape (no broadcasting)", slice(None), a=a, b=b)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported just below
        products = (a * b).sum(axis=-1)  # (...)
    check_all_finite("the dot product of a and b", products)
    return products


def cosine_similarity(a: ArrayLike, b: ArrayLike) -> np.ndarray | np.floating:
    """Cosine of the angle between two vectors (or equally shaped stacks of vectors).

    The result lies in ``[-1, 1]`` and does not change when either vector is scaled by a
    positive number. It is undefined for a zero vector, which raises ``ValueError``.

    Shapes
    ------
    ``a``, ``b``: ``(..., D)``, identical (no broadcasting) → ``(...)``; two vectors of shape
    ``(D,)`` give a NumPy scalar.

    Examples
    --------
    >>> cosine_similarity([1, 0], [5, 5]).round(4)
    np.float64(0.7071)
    >>> cosine_similarity([1, 2], [-2, -4]).round(4)
    np.float64(-1.0)
    """
    a = as_float_array("a", a, layout="(..., D)")
    b = as_float_array("b", b, layout="(..., D)")
    check_same_dims("shape (no broadcasting)", slice(None), a=a, b=b)
    cosines = (_unit_vectors("a", a) * _unit_vectors("b", b)).sum(axis=-1)  # (...)
    # Rounding can put the cosine of (anti)parallel vectors a hair outside [-1, 1].
    return np.clip(cosines, -1.0, 1.0)


def similarity_matrix(
    x: ArrayLike, y: ArrayLike | None = None, *, measure: str = "dot"
) -> np.ndarray:
    """Similarity of every vector of ``x`` with every vector of ``y``.

    Parameters
    ----------
    x, y
        Sequences of vectors; ``y`` defaults to ``x`` (every token against every token).
    measure
        ``"dot"`` (dot products, ``x yᵀ``) or ``"cosine"`` (cosine similarities).

    Shapes
    ------
    ``x``: ``(..., T_q, D)``, ``y``: ``(..., T_k, D)`` with the same leading dimensions
    (no broadcasting) → ``(..., T_q, T_k)``; entry ``[..., i, j]`` compares ``x[..., i, :]``
    with ``y[..., j, :]``.

    Examples
    --------
    >>> similarity_matrix([[1, 0], [1, 1]])
    array([[1., 1.],
           [1., 2.]])
    >>> similarity_matrix([[1, 0], [1, 1]], [[0, 3]], measure="cosine").round(4)
    array([[0.    ],
           [0.7071]])
    """
    if not isinstance(measure, str):
        raise TypeError(f"measure must be the string 'dot' or 'cosine', got {measure!r}")
    if measure not in _MEASURES:
        raise ValueError(f"measure must be 'dot' or 'cosine', got {measure!r}")
    x = as_float_array("x", x, layout="(..., T_q, D)")
    y = x if y is None else as_float_array("y", y, layout="(..., T_k, D)")
    check_same_dims("leading (batch) dimensions", slice(None, -2), x=x, y=y)
    check_same_dims("last dimension (D)", -1, x=x, y=y)
    if measure == "cosine":
        x, y = _unit_vectors("x", x), _unit_vectors("y", y)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported just below
        similarities = x @ np.swapaxes(y, -1, -2)  # (..., T_q, T_k)
    check_all_finite("the dot products x yᵀ", similarities)
    return np.clip(similarities, -1.0, 1.0) if measure == "cosine" else similarities


def _unit_vectors(name: str, vectors: np.ndarray) -> np.ndarray:
    """Scale every vector (last axis) to length 1; a zero vector is a ``ValueError``."""
    # Dividing by the largest |entry| first keeps the squared norm from overflowing for huge
    # entries and from underflowing to 0 (a false "zero vector") for tiny ones.
    largest = np.abs(vectors).max(axis=-1, keepdims=True, initial=0)  # (..., 1)
    if (largest == 0).any():
        index = tuple(np.argwhere(largest[..., 0] == 0)[0])
        raise ValueError(
            f"cosine similarity is undefined for a zero vector: {element(name, index)} has norm 0"
        )
    scaled = vectors / largest  # (..., D), entries in [-1, 1]
    return scaled / np.linalg.norm(scaled, axis=-1, keepdims=True)
