"""Tests of selfattn_lib.kernel_regression: Nadaraya–Watson kernel regression is a weighted
average with softmax weights, it is attention with scores −(x − x_i)² / 2σ², and it never
returns NaN."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import PROPERTY_SETTINGS, finite_floats

from selfattn_lib.kernel_regression import kernel_regression, kernel_weights
from selfattn_lib.softmax import softmax

pytestmark = pytest.mark.filterwarnings("error")

KEYS = np.array([0.0, 0.5, 1.5, 2.0, 3.5])  # (T_k,)
VALUES = np.array([1.0, -2.0, 0.5, 3.0, 2.0])  # (T_k,)
QUERIES = np.linspace(-1.0, 4.5, 12)  # (T_q,)


# --- properties ----------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(
    queries=st.lists(finite_floats(1e3), min_size=1, max_size=6),
    keys=st.lists(finite_floats(1e3), min_size=1, max_size=6),
    width=st.floats(1e-2, 1e3),
)
def test_weights_are_probabilities_and_the_prediction_stays_within_the_values(queries, keys, width):
    values = np.arange(len(keys), dtype=float) - 2.0  # (T_k,)
    predictions, weights = kernel_regression(queries, keys, values, width)
    assert weights.shape == (len(queries), len(keys)) and predictions.shape == (len(queries),)
    assert np.isfinite(weights).all() and (weights >= 0).all()
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-12)
    assert (predictions >= values.min() - 1e-9).all() and (predictions <= values.max() + 1e-9).all()


def test_the_nearest_key_gets_the_largest_weight():
    weights = kernel_weights(QUERIES, KEYS, width=0.7)
    nearest = np.abs(QUERIES[:, None] - KEYS[None, :]).argmin(axis=-1)
    np.testing.assert_array_equal(weights.argmax(axis=-1), nearest)


# --- it is attention -----------------------------------------------------------------------


def test_the_weights_are_the_softmax_of_minus_the_squared_distance():
    width = 0.6
    scores = -((QUERIES[:, None] - KEYS[None, :]) ** 2) / (2 * width**2)  # (T_q, T_k)
    np.testing.assert_allclose(kernel_weights(QUERIES, KEYS, width), softmax(scores, axis=-1))


def test_it_is_dot_product_attention_with_query_x_1_and_key_xi_minus_half_xi_squared():
    """−(x − x_i)²/2σ² = (x x_i − x_i²/2)/σ² − x²/2σ², and the last term is the same for every
    key, so softmax ignores it: the scores are dot products of q = (x, 1) and
    k = (x_i, −x_i²/2), scaled by 1/σ²."""
    width = 0.8
    q = np.stack([QUERIES, np.ones_like(QUERIES)], axis=-1)  # (T_q, 2)
    k = np.stack([KEYS, -(KEYS**2) / 2], axis=-1)  # (T_k, 2)
    attention_weights = softmax(q @ k.T / width**2, axis=-1)  # (T_q, T_k)
    predictions, weights = kernel_regression(QUERIES, KEYS, VALUES, width)
    np.testing.assert_allclose(weights, attention_weights, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(predictions, attention_weights @ VALUES, rtol=1e-12)


def test_it_matches_the_textbook_formula_with_exponentials():
    width = 1.3
    kernel = np.exp(-((QUERIES[:, None] - KEYS[None, :]) ** 2) / (2 * width**2))
    expected = kernel @ VALUES / kernel.sum(axis=-1)
    np.testing.assert_allclose(kernel_regression(QUERIES, KEYS, VALUES, width)[0], expected)


# --- the width sets how local the lookup is ------------------------------------------------


def test_a_narrow_kernel_copies_the_nearest_value_and_a_wide_one_averages_all():
    nearest = np.abs(QUERIES[:, None] - KEYS[None, :]).argmin(axis=-1)
    away_from_midpoints = np.sort(np.abs(QUERIES[:, None] - KEYS[None, :]), axis=-1)
    clear = away_from_midpoints[:, 1] - away_from_midpoints[:, 0] > 0.05
    narrow = kernel_regression(QUERIES, KEYS, VALUES, width=0.01)[0]
    np.testing.assert_allclose(narrow[clear], VALUES[nearest][clear], atol=1e-9)
    wide = kernel_regression(QUERIES, KEYS, VALUES, width=1e4)[0]
    np.testing.assert_allclose(wide, VALUES.mean(), rtol=1e-6)


def test_a_far_query_gets_the_nearest_value_not_nan():
    with np.errstate(all="ignore"):
        kernel = np.exp(-((1e3 - KEYS) ** 2) / (2 * 0.1**2))
        assert np.isnan(kernel @ VALUES / kernel.sum())  # the formula as written: 0 / 0
    predictions, weights = kernel_regression([1e3], KEYS, VALUES, width=0.1)
    assert predictions.tolist() == [VALUES[-1]] and weights[0, -1] == 1.0


def test_vector_values_are_averaged_feature_by_feature():
    values = np.stack([VALUES, 2 * VALUES, -VALUES], axis=-1)  # (T_k, D_v)
    predictions, weights = kernel_regression(QUERIES, KEYS, values, width=0.5)
    assert predictions.shape == (len(QUERIES), 3)
    single = kernel_regression(QUERIES, KEYS, VALUES, width=0.5)[0]
    np.testing.assert_allclose(predictions, np.stack([single, 2 * single, -single], axis=-1))


def test_float32_stays_float32():
    weights = kernel_weights(QUERIES.astype(np.float32), KEYS.astype(np.float32), 0.5)
    assert weights.dtype == np.float32


# --- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"values": VALUES[:3]}, ValueError, r"keys has shape \(5,\), values has shape \(3,\)"),
        ({"values": np.ones((5, 2, 2))}, ValueError, r"values must have shape \(T_k,\)"),
        ({"queries": np.ones((2, 2))}, ValueError, r"queries must have shape \(T_q,\)"),
        ({"keys": np.array([])}, ValueError, "keys is empty"),
        ({"keys": np.array([0.0, np.nan, 1, 2, 3])}, ValueError, r"keys\[1\] is nan"),
        ({"width": 0.0}, ValueError, "width must be a finite positive number"),
        ({"width": -1.0}, ValueError, "width must be a finite positive number"),
        ({"width": "1"}, TypeError, "width must be a positive real number"),
        ({"queries": ["a"]}, TypeError, "queries must be an array of numbers"),
        ({"queries": [1e200]}, ValueError, "overflowed"),
    ],
)
def test_bad_input_is_an_error_naming_the_argument(kwargs, error, message):
    arguments = {"queries": QUERIES, "keys": KEYS, "values": VALUES, "width": 1.0, **kwargs}
    with pytest.raises(error, match=message):
        kernel_regression(**arguments)
