"""Hypothesis strategies and small helpers shared by the tests of the NumPy modules."""

from __future__ import annotations

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

# Enough examples to find edge cases, few enough to keep the suite fast on two cores.
PROPERTY_SETTINGS = settings(max_examples=60, deadline=None)

seeds = st.integers(min_value=0, max_value=2**32 - 1)


def finite_floats(bound: float = 1e6) -> st.SearchStrategy[float]:
    return st.floats(-bound, bound, allow_nan=False, allow_infinity=False)


def float_arrays(
    min_dims: int = 1, max_dims: int = 3, max_side: int = 5, bound: float = 1e6
) -> st.SearchStrategy[np.ndarray]:
    """float64 arrays with no zero-length axes and entries in ``[-bound, bound]``."""
    shapes = hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=1, max_side=max_side)
    return hnp.arrays(np.float64, shapes, elements=finite_floats(bound))


@st.composite
def attention_shapes(draw: st.DrawFn, max_leading_dims: int = 2) -> dict:
    """Sizes for q ``(..., T_q, D_k)``, k ``(..., T_k, D_k)`` and v ``(..., T_k, D_v)``."""
    sizes = st.integers(min_value=1, max_value=5)
    return {
        "leading": tuple(draw(st.lists(st.integers(1, 3), max_size=max_leading_dims))),
        "t_q": draw(sizes),
        "t_k": draw(sizes),
        "d_k": draw(sizes),
        "d_v": draw(sizes),
    }


def qkv(shapes: dict, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Standard-normal queries, keys and values of the given ``attention_shapes``."""
    leading = shapes["leading"]
    return (
        rng.normal(size=(*leading, shapes["t_q"], shapes["d_k"])),
        rng.normal(size=(*leading, shapes["t_k"], shapes["d_k"])),
        rng.normal(size=(*leading, shapes["t_k"], shapes["d_v"])),
    )


@st.composite
def broadcast_shapes_for(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts to ``shape`` without changing it: some leading axes dropped,
    any of the others possibly of size 1."""
    n_dims = draw(st.integers(min_value=0, max_value=len(shape)))
    kept = shape[len(shape) - n_dims :]
    return tuple(size if draw(st.booleans()) else 1 for size in kept)


def random_mask(shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """A boolean mask in which each entry is True with probability 0.7."""
    return np.asarray(rng.random(size=shape) < 0.7)  # an array even for shape ()


def permutations(n: int) -> st.SearchStrategy[np.ndarray]:
    return st.permutations(range(n)).map(np.array)
