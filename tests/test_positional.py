"""Tests of selfattn_lib.positional: the sinusoidal encoding's values and properties, and
rotary position embeddings (RoPE) in both layouts."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import PROPERTY_SETTINGS

from selfattn_lib.positional import ROPE_LAYOUTS, apply_rope, rope_angles, sinusoidal_encoding

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


def test_neighbours_are_similar_where_binary_counting_flips_every_bit():
    # Chapter 8: 7 = 0111 and 8 = 1000 differ in every bit (as ±1 vectors they point opposite
    # ways), while the sinusoidal encodings of 7 and 8 (D = 8) point almost the same way.
    bits = np.array([[1 if b == "1" else -1 for b in f"{n:04b}"] for n in (7, 8)])
    assert [f"{n:04b}" for n in (7, 8)] == ["0111", "1000"] and bits[0] @ bits[1] == -4
    seven, eight = sinusoidal_encoding(9, 8)[[7, 8]]
    assert seven @ eight / (seven @ seven) == pytest.approx(0.884, abs=1e-3)  # equal lengths


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


# Rotary position embeddings (RoPE).


def rope_by_complex_numbers(x, positions, layout, base=10000.0):
    """RoPE as complex multiplication: pair i is the complex number a + ib, turned by
    e^(i pos ω_i) (the formulation of Meta's LLaMA code, for the interleaved layout)."""
    d_model = x.shape[-1]
    half = d_model // 2
    if layout == "interleaved":
        pairs = x[..., 0::2] + 1j * x[..., 1::2]
    else:
        pairs = x[..., :half] + 1j * x[..., half:]
    omegas = base ** (-np.arange(0, d_model, 2) / d_model)  # (D / 2,)
    turned = pairs * np.exp(1j * np.asarray(positions, dtype=float)[:, None] * omegas)
    out = np.empty(x.shape)
    if layout == "interleaved":
        out[..., 0::2], out[..., 1::2] = turned.real, turned.imag
    else:
        out[..., :half], out[..., half:] = turned.real, turned.imag
    return out


def test_rope_hand_checked_values_in_both_layouts():
    x = np.array([[1.0, 2.0, 3.0, 4.0]])  # (T, D) = (1, 4)
    c, s = math.cos(5.0), math.sin(5.0)
    c2, s2 = math.cos(5.0 / 100), math.sin(5.0 / 100)  # ω_1 = 10000^(-2/4) = 1/100
    np.testing.assert_allclose(
        apply_rope(x, [5]),
        [[1 * c - 2 * s, 1 * s + 2 * c, 3 * c2 - 4 * s2, 3 * s2 + 4 * c2]],
    )
    np.testing.assert_allclose(
        apply_rope(x, [5], layout="half"),
        [[1 * c - 3 * s, 2 * c2 - 4 * s2, 1 * s + 3 * c, 2 * s2 + 4 * c2]],
    )
    np.testing.assert_array_equal(apply_rope(x, [0]), x)  # position 0 is not rotated
    np.testing.assert_allclose(rope_angles([0, 3], 4), [[0, 0], [3, 0.03]])


@pytest.mark.parametrize("layout", ROPE_LAYOUTS)
@pytest.mark.parametrize("base", [10000.0, 500.0])
def test_rope_agrees_with_complex_multiplication(layout, base):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3, 7, 16))  # (B, H, T, D)
    positions = np.array([0, 1, 2, 5, 40, 1000, 2.5])
    np.testing.assert_allclose(
        apply_rope(x, positions, layout=layout, base=base),
        rope_by_complex_numbers(x, positions, layout, base),
        atol=1e-12,
    )


def test_rope_matches_the_rotate_half_formulation():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(6, 8))  # (T, D)
    positions = np.arange(6)
    angles = np.concatenate([rope_angles(positions, 8)] * 2, axis=-1)  # (T, D): cat(θ, θ)
    rotate_half = np.concatenate([-x[:, 4:], x[:, :4]], axis=-1)
    np.testing.assert_allclose(
        apply_rope(x, positions, layout="half"),
        x * np.cos(angles) + rotate_half * np.sin(angles),
        atol=1e-12,
    )


@PROPERTY_SETTINGS
@given(
    d_model=even_sizes,
    m=st.integers(0, 2000),
    n=st.integers(0, 2000),
    shift=st.integers(-500, 500),
    seed=st.integers(0, 2**16),
)
def test_rope_keeps_lengths_scores_depend_on_the_offset_and_layouts_differ_by_a_permutation(
    d_model, m, n, shift, seed
):
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(2, 1, d_model))  # (T, D) each, T = 1
    for layout in ROPE_LAYOUTS:
        q_m = apply_rope(q, [m], layout=layout)
        np.testing.assert_allclose(np.linalg.norm(q_m), np.linalg.norm(q))
        score = (q_m @ apply_rope(k, [n], layout=layout).T).item()
        shifted = (  # both positions moved by the same shift (negative ones are fine too)
            apply_rope(q, [m + shift], layout=layout) @ apply_rope(k, [n + shift], layout=layout).T
        ).item()
        assert shifted == pytest.approx(score, abs=1e-9 * d_model)
    order = np.r_[0:d_model:2, 1:d_model:2]  # interleaved pairs → first and second halves
    np.testing.assert_allclose(
        apply_rope(q[:, order], [m], layout="half"), apply_rope(q, [m])[:, order], atol=1e-12
    )


@pytest.mark.parametrize("offset", [1, 5, 37])
def test_rope_turns_a_pair_the_other_way_round_from_the_offset_rotation(offset):
    # Chapter 8: RoPE's block [[cos, -sin], [sin, cos]] is M_k's turn of a pair written
    # (cos, sin); on the encoding's own (sin, cos) pairs it turns back by k positions.
    encoding = sinusoidal_encoding(200, 16)  # (T, D): (sin, cos) pairs
    swap = np.arange(16).reshape(8, 2)[:, ::-1].ravel()  # (sin, cos) <-> (cos, sin)
    rows = np.arange(offset, 200 - offset)
    ahead = apply_rope(encoding[rows][:, swap], np.full(len(rows), offset))[:, swap]
    np.testing.assert_allclose(ahead, encoding[rows + offset], atol=1e-9)
    back = apply_rope(encoding[rows], np.full(len(rows), offset))
    np.testing.assert_allclose(back, encoding[rows - offset], atol=1e-9)


def test_rope_keeps_float32():
    x = np.ones((2, 4), dtype=np.float32)
    assert apply_rope(x, [0, 1]).dtype == np.float32
    assert apply_rope(np.ones((2, 4), dtype=int), [0, 1]).dtype == np.float64


@pytest.mark.parametrize(
    ("x", "positions", "kwargs", "error", "message"),
    [
        (np.ones((3, 5)), [0, 1, 2], {}, ValueError, r"must be even .*shape \(3, 5\)"),
        (np.ones(4), [0], {}, ValueError, r"x must have shape \(\.\.\., T, D\)"),
        (np.ones((3, 4)), [0, 1], {}, ValueError, r"one position per row of x.*T = 3"),
        (np.ones((3, 4)), [[0, 1, 2]], {}, ValueError, r"positions must have shape \(T,\)"),
        (np.ones((2, 4)), [0, np.nan], {}, ValueError, "positions must not contain NaN"),
        (np.ones((2, 4)), [0, 1], {"layout": "split"}, ValueError, "layout must be one of"),
        (np.ones((2, 4)), [0, 1], {"base": -1.0}, ValueError, "base must be a finite positive"),
        (np.ones((2, 4)) * 1j, [0, 1], {}, TypeError, "x must be real"),
    ],
)
def test_rope_rejects_bad_input(x, positions, kwargs, error, message):
    with pytest.raises(error, match=message):
        apply_rope(x, positions, **kwargs)


def test_rope_angles_need_an_even_dimension():
    with pytest.raises(ValueError, match="d_model must be even"):
        rope_angles([0, 1], 3)
