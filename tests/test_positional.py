"""Tests of selfattn_lib.positional: the sinusoidal encoding's values and properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import PROPERTY_SETTINGS

from selfattn_lib.positional import sinusoidal_encoding

pytestmark = pytest.mark.filterwarnings("error")

even_sizes = st.integers(min_value=1, max_value=32).map(lambda half: 2 * half)


def test_hand_checked_entries():
    encoding = sinusoidal_encoding(50, 8)
    assert encoding.shape == (50, 8)
    assert encoding.dtype == np.float64
    np.testing.assert_array_equal(encoding[0], [0, 1, 0, 1, 0, 1, 0, 1])
    assert encoding[1, 0] == pytest.approx(math.sin(1))
    assert encoding[1, 1] == pytest.approx(math.cos(1))
    assert encoding[3, 2] == pytest.approx(math.sin(3 / 10000 ** (2 / 8)))
    assert encoding[3, 3] == pytest.approx(math.cos(3 / 10000 ** (2 / 8)))
    assert encoding[49, 6] == pytest.approx(math.sin(49 / 10000 ** (6 / 8)))
    assert encoding[49, 7] == pytest.approx(math.cos(49 / 10000 ** (6 / 8)))


def test_base_sets_the_frequencies():
    encoding = sinusoidal_encoding(4, 4, base=100.0)
    assert encoding[2, 2] == pytest.approx(math.sin(2 / 100 ** (2 / 4)))
    assert not np.allclose(encoding, sinusoidal_encoding(4, 4))


@PROPERTY_SETTINGS
@given(max_len=st.integers(1, 200), d_model=even_sizes)
def test_entries_are_bounded_and_pairs_lie_on_the_unit_circle(max_len, d_model):
    encoding = sinusoidal_encoding(max_len, d_model)
    assert encoding.shape == (max_len, d_model)
    assert (np.abs(encoding) <= 1).all()
    np.testing.assert_allclose(encoding[:, 0::2] ** 2 + encoding[:, 1::2] ** 2, 1.0)


@PROPERTY_SETTINGS
@given(position=st.integers(0, 100), offset=st.integers(0, 100), d_model=even_sizes)
def test_a_fixed_offset_is_a_rotation_of_each_pair(position, offset, d_model):
    encoding = sinusoidal_encoding(position + offset + 1, d_model)
    angles = offset * 10000.0 ** (-np.arange(0, d_model, 2) / d_model)  # (D / 2,)
    sin, cos = encoding[position, 0::2], encoding[position, 1::2]
    # sin(a + b) = sin a cos b + cos a sin b, cos(a + b) = cos a cos b - sin a sin b
    np.testing.assert_allclose(
        encoding[position + offset, 0::2], sin * np.cos(angles) + cos * np.sin(angles), atol=1e-9
    )
    np.testing.assert_allclose(
        encoding[position + offset, 1::2], cos * np.cos(angles) - sin * np.sin(angles), atol=1e-9
    )


def test_positions_are_distinct():
    encoding = sinusoidal_encoding(64, 16)
    distances = np.linalg.norm(encoding[:, None] - encoding[None, :], axis=-1)
    assert (distances[~np.eye(64, dtype=bool)] > 1e-3).all()


@pytest.mark.parametrize("d_model", [1, 7])
def test_d_model_must_be_even(d_model):
    with pytest.raises(ValueError, match=rf"d_model must be even .*got {d_model}"):
        sinusoidal_encoding(4, d_model)


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ((0, 4), ValueError, "max_len must be a positive integer, got 0"),
        ((4, -2), ValueError, "d_model must be a positive integer, got -2"),
        ((4.0, 4), TypeError, "max_len must be a positive integer, got 4.0"),
        ((4, True), TypeError, "d_model must be a positive integer, got True"),
    ],
)
def test_sizes_must_be_positive_integers(arguments, error, message):
    with pytest.raises(error, match=message):
        sinusoidal_encoding(*arguments)


@pytest.mark.parametrize("base", [0.0, -10.0, math.inf, math.nan])
def test_base_must_be_finite_and_positive(base):
    with pytest.raises(ValueError, match="base must be a finite positive number"):
        sinusoidal_encoding(4, 4, base=base)


def test_base_must_be_a_number():
    with pytest.raises(TypeError, match="base must be a positive real number, got '10000'"):
        sinusoidal_encoding(4, 4, base="10000")
