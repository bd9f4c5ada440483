"""Tests of selfattn_lib.similarity: dot products, cosines and similarity matrices."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import PROPERTY_SETTINGS, finite_floats, seeds

from selfattn_lib.similarity import cosine_similarity, dot_product, similarity_matrix

pytestmark = pytest.mark.filterwarnings("error")

vector_sizes = st.integers(min_value=1, max_value=8)


# --- dot_product ---------------------------------------------------------------------------


def test_dot_product_of_two_vectors_is_a_float64_scalar():
    result = dot_product([1, 2, 3], [4, 5, 6])
    assert isinstance(result, np.float64)
    assert result == 32.0


def test_dot_product_of_stacks_is_taken_along_the_last_axis():
    a = np.arange(24.0).reshape(2, 3, 4)
    b = np.arange(24.0)[::-1].reshape(2, 3, 4)
    result = dot_product(a, b)
    assert result.shape == (2, 3)
    np.testing.assert_allclose(result, np.einsum("btd,btd->bt", a, b))


def test_dot_product_keeps_float32():
    a = np.ones(3, dtype=np.float32)
    assert dot_product(a, a).dtype == np.float32


@PROPERTY_SETTINGS
@given(
    seed=seeds,
    size=vector_sizes,
    alpha=finite_floats(100),
    beta=finite_floats(100),
)
def test_dot_product_is_bilinear_and_symmetric(seed, size, alpha, beta):
    a, b, c = np.random.default_rng(seed).normal(size=(3, size))
    combined = dot_product(alpha * a + beta * b, c)
    expected = alpha * dot_product(a, c) + beta * dot_product(b, c)
    scale = (abs(alpha) + abs(beta) + 1) * size
    np.testing.assert_allclose(combined, expected, rtol=1e-9, atol=1e-12 * scale)
    assert dot_product(a, b) == dot_product(b, a)


def test_dot_product_falls_as_the_angle_grows_and_is_scaled_by_both_lengths():
    # The module docstring: a · b = |a| |b| cos θ, largest at θ = 0 for fixed lengths, falling
    # as θ grows; a longer vector raises it for cos θ > 0 and lowers it for cos θ < 0.
    a = np.array([1.5, 0.0])
    angles = np.radians(np.arange(0, 181, 5))
    b = np.stack([np.cos(angles), np.sin(angles)], axis=-1)  # (37, 2), each of length 1
    dots = dot_product(np.broadcast_to(a, b.shape), b)  # (37,)
    assert np.argmax(dots) == 0 and (np.diff(dots) < 0).all()
    longer = dot_product(np.broadcast_to(a, b.shape), 2.0 * b)  # (37,)
    np.testing.assert_allclose(longer, 2.0 * dots)
    assert (longer > dots)[np.cos(angles) > 1e-12].all()
    assert (longer < dots)[np.cos(angles) < -1e-12].all()


def test_dot_product_rejects_shapes_that_would_broadcast():
    with pytest.raises(ValueError, match=r"a and b must have the same shape.*\(3,\).*\(1, 3\)"):
        dot_product([1.0, 2.0, 3.0], [[1.0, 2.0, 3.0]])


def test_dot_product_rejects_different_lengths():
    with pytest.raises(ValueError, match=r"a has shape \(3,\), b has shape \(2,\)"):
        dot_product([1, 2, 3], [1, 2])


def test_dot_product_rejects_scalars():
    with pytest.raises(ValueError, match=r"a must have shape \(\.\.\., D\).*got shape \(\)"):
        dot_product(2.0, 3.0)


def test_dot_product_reports_overflow_instead_of_inf():
    with pytest.raises(ValueError, match="dot product of a and b overflowed"):
        dot_product([1e200, 1e200], [1e200, 1e200])


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_dot_product_rejects_non_finite_values(bad):
    with pytest.raises(ValueError, match=r"b must not contain NaN or infinity: b\[1\] is"):
        dot_product([1.0, 2.0], [0.0, bad])


@pytest.mark.parametrize(
    ("bad", "message"),
    [([1 + 2j, 0], "a must be real, got complex"), (["x", "y"], "a must be an array of numbers")],
)
def test_dot_product_rejects_non_real_dtypes(bad, message):
    with pytest.raises(TypeError, match=message):
        dot_product(bad, [1.0, 2.0])


# --- cosine_similarity ---------------------------------------------------------------------


def test_cosine_of_hand_checked_vectors():
    assert cosine_similarity([1, 0], [0, 3]) == 0.0
    assert cosine_similarity([1, 1], [2, 2]) == pytest.approx(1.0)
    assert cosine_similarity([3, 4], [4, 3]) == pytest.approx(24 / 25)


@PROPERTY_SETTINGS
@given(
    seed=seeds,
    size=vector_sizes,
    scale=st.floats(1e-3, 1e3) | st.floats(-1e3, -1e-3),
    magnitude=st.sampled_from([1e-150, 1.0, 1e150]),
)
def test_cosine_is_bounded_and_scale_invariant(seed, size, scale, magnitude):
    a, b = magnitude * np.random.default_rng(seed).normal(size=(2, size))
    cosine = cosine_similarity(a, b)
    assert -1.0 <= cosine <= 1.0
    np.testing.assert_allclose(cosine_similarity(scale * a, b), np.sign(scale) * cosine, atol=1e-12)
    assert cosine_similarity(a, a) == pytest.approx(1.0)


def test_cosine_of_a_vector_with_itself_is_not_above_one():
    # Without clipping, rounding gives 1.0000000000000002 for this vector.
    a = [0.1257302210933933, -0.1321048632913019, 0.6404226504432821]
    assert cosine_similarity(a, a) == 1.0
    assert similarity_matrix([a], measure="cosine")[0, 0] == 1.0


def test_cosine_of_stacks_matches_the_formula():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 4, 3, 5))
    expected = (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
    np.testing.assert_allclose(cosine_similarity(a, b), expected, rtol=1e-12)


def test_cosine_of_a_zero_vector_is_an_error_naming_it():
    with pytest.raises(ValueError, match=r"undefined for a zero vector: b has norm 0"):
        cosine_similarity([1.0, 2.0], [0.0, 0.0])
    a = np.ones((2, 3, 4))
    a[1, 0] = 0.0
    with pytest.raises(ValueError, match=r"zero vector: a\[1, 0\] has norm 0"):
        cosine_similarity(a, np.ones((2, 3, 4)))


def test_cosine_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match=r"a has shape \(2, 3\), b has shape \(3,\)"):
        cosine_similarity(np.ones((2, 3)), np.ones(3))


# --- similarity_matrix ---------------------------------------------------------------------


def test_dot_similarity_matrix_is_x_times_y_transposed():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4))
    result = similarity_matrix(x, y)
    assert result.shape == (2, 3, 5)
    np.testing.assert_allclose(result, np.einsum("bqd,bkd->bqk", x, y), rtol=1e-12)


def test_cosine_similarity_matrix_matches_pairwise_cosines():
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=(3, 4)), rng.normal(size=(5, 4))
    result = similarity_matrix(x, y, measure="cosine")
    expected = [[cosine_similarity(query, key) for key in y] for query in x]
    np.testing.assert_allclose(result, expected, rtol=1e-12)


@pytest.mark.parametrize("measure", ["dot", "cosine"])
def test_similarity_matrix_of_x_with_itself_is_symmetric(measure):
    x = np.random.default_rng(3).normal(size=(4, 6))
    result = similarity_matrix(x, measure=measure)
    np.testing.assert_allclose(result, result.T, rtol=1e-12)
    if measure == "cosine":
        np.testing.assert_allclose(np.diag(result), 1.0)


def test_similarity_matrix_rejects_an_unknown_measure():
    with pytest.raises(ValueError, match="measure must be 'dot' or 'cosine', got 'euclid'"):
        similarity_matrix(np.ones((2, 3)), measure="euclid")


def test_similarity_matrix_rejects_different_leading_dimensions():
    with pytest.raises(
        ValueError, match=r"x and y must have the same leading.*\(2, 3, 4\).*\(3, 4\)"
    ):
        similarity_matrix(np.ones((2, 3, 4)), np.ones((3, 4)))


def test_similarity_matrix_rejects_different_vector_sizes():
    with pytest.raises(ValueError, match=r"same last dimension \(D\): x has shape \(3, 4\)"):
        similarity_matrix(np.ones((3, 4)), np.ones((3, 5)))


def test_similarity_matrix_needs_sequences_of_vectors():
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., T_q, D\).*got shape \(4,\)"):
        similarity_matrix(np.ones(4))


def test_cosine_similarity_matrix_names_the_zero_vector():
    with pytest.raises(ValueError, match=r"zero vector: y\[1\] has norm 0"):
        similarity_matrix(np.ones((2, 3)), np.array([[1.0, 0, 0], [0, 0, 0]]), measure="cosine")
