"""Tests of selfattn_lib.softmax: properties, numerical stability, parity with PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from strategies import PROPERTY_SETTINGS, finite_floats, float_arrays

from selfattn_lib.softmax import log_sum_exp, softmax, softmax_in_place

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("error")


# --- properties ----------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(x=float_arrays(bound=1e300), data=st.data())
def test_weights_are_probabilities_even_for_huge_scores(x, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    weights = softmax(x, axis=axis)
    assert weights.shape == x.shape
    assert ((weights >= 0) & (weights <= 1)).all()
    np.testing.assert_allclose(weights.sum(axis=axis), 1.0, rtol=1e-12)


@PROPERTY_SETTINGS
@given(x=float_arrays(bound=100), shift=finite_floats(100))
def test_adding_a_constant_changes_nothing(x, shift):
    np.testing.assert_allclose(softmax(x + shift), softmax(x), rtol=1e-9, atol=1e-15)


@PROPERTY_SETTINGS
@given(x=float_arrays(min_dims=1, max_dims=1, max_side=8, bound=50))
def test_order_is_preserved(x):
    weights = softmax(x)
    difference = x[:, None] - x[None, :]
    assert (weights[:, None] >= weights[None, :])[difference > 0].all()
    # Scores closer than rounding can resolve may get equal weights; others may not.
    assert (weights[:, None] > weights[None, :])[difference > 1e-9].all()
    equal = x[:, None] == x[None, :]
    assert (weights[:, None] == weights[None, :])[equal].all()


@PROPERTY_SETTINGS
@given(scores=st.lists(st.integers(-10, 10), min_size=2, max_size=8, unique=True))
def test_low_temperature_picks_the_maximum_and_high_temperature_flattens(scores):
    scores = np.array(scores, dtype=float)
    one_hot = np.eye(len(scores))[np.argmax(scores)]
    np.testing.assert_allclose(softmax(scores, temperature=1e-3), one_hot, atol=1e-12)
    uniform = np.full(len(scores), 1 / len(scores))
    np.testing.assert_allclose(softmax(scores, temperature=1e6), uniform, rtol=1e-4)


@PROPERTY_SETTINGS
@given(x=float_arrays(bound=100), temperature=st.floats(0.05, 20))
def test_temperature_divides_the_scores(x, temperature):
    np.testing.assert_allclose(
        softmax(x, temperature=temperature), softmax(x / temperature), rtol=1e-9, atol=1e-15
    )


@PROPERTY_SETTINGS
@given(score=finite_floats(1.7e308))
def test_a_row_of_one_finite_score_always_gets_weight_1(score):
    # Chapter 2's box: whatever the score, even beyond 709.78 where e^x overflows.
    assert softmax([score]).tolist() == [1.0]


def test_hand_checked_values():
    np.testing.assert_allclose(softmax([0.0, np.log(3.0)]), [0.25, 0.75], rtol=1e-15)
    e = np.e
    np.testing.assert_allclose(softmax([1000.0, 1001.0]), [1 / (1 + e), e / (1 + e)])
    np.testing.assert_allclose(softmax([-1000.0, -1001.0]), [e / (1 + e), 1 / (1 + e)])


def test_axis_selects_the_normalised_axis():
    x = np.random.default_rng(0).normal(size=(3, 4))
    np.testing.assert_allclose(softmax(x, axis=0), softmax(x.T).T, rtol=1e-15)
    np.testing.assert_allclose(softmax(x, axis=0).sum(axis=0), 1.0)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_half_and_single_precision_keep_their_dtype_without_overflow(dtype):
    largest = float(np.finfo(dtype).max)
    scores = np.array([[largest, largest / 2], [1.0, 1.0], [-largest, 0.0]], dtype=dtype)
    weights = softmax(scores, temperature=0.5)
    assert weights.dtype == dtype
    np.testing.assert_allclose(weights, [[1, 0], [0.5, 0.5], [0, 1]])


@pytest.mark.parametrize("scores", [[0, 1], [True, False]])
def test_integers_and_booleans_become_float64(scores):
    assert softmax(scores).dtype == np.float64


def test_minus_infinity_gets_weight_exactly_zero():
    weights = softmax([[1.0, -np.inf, 2.0], [-np.inf, 5.0, -np.inf]])
    assert weights[0, 1] == 0.0
    np.testing.assert_array_equal(weights[1], [0.0, 1.0, 0.0])
    np.testing.assert_allclose(weights[0].sum(), 1.0)


def test_an_all_minus_infinity_row_gets_zeros_not_nan():
    weights = softmax([[-np.inf, -np.inf], [0.0, 0.0]])
    np.testing.assert_array_equal(weights, [[0.0, 0.0], [0.5, 0.5]])


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4)])
def test_empty_arrays_give_empty_arrays(shape):
    assert softmax(np.zeros(shape)).shape == shape


# --- parity with PyTorch -------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(
    x=hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=6),
        elements=finite_floats(1e4),
    ),
    temperature=st.floats(0.1, 10),
    data=st.data(),
)
def test_matches_torch_softmax(x, temperature, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    expected = torch.softmax(torch.from_numpy(x) / temperature, dim=axis).numpy()
    np.testing.assert_allclose(
        softmax(x, axis=axis, temperature=temperature), expected, rtol=1e-6, atol=1e-12
    )


# --- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize("temperature", [0, -1.0, np.nan, np.inf])
def test_temperature_must_be_finite_and_positive(temperature):
    with pytest.raises(ValueError, match="temperature must be a finite positive number"):
        softmax([1.0, 2.0], temperature=temperature)


@pytest.mark.parametrize("temperature", ["1", None, True, 1 + 0j])
def test_temperature_must_be_a_real_number(temperature):
    with pytest.raises(TypeError, match="temperature must be a positive real number"):
        softmax([1.0, 2.0], temperature=temperature)


def test_temperature_as_numpy_scalar_keeps_float32():
    x = np.array([1.0, 2.0], dtype=np.float32)
    assert softmax(x, temperature=np.float64(2.0)).dtype == np.float32


@pytest.mark.parametrize("axis", [2, -3])
def test_axis_out_of_range(axis):
    with pytest.raises(ValueError, match=rf"axis {axis} is out of range for x with ndim 2 \(shape"):
        softmax(np.ones((2, 3)), axis=axis)


@pytest.mark.parametrize("axis", [1.0, "0", None, True])
def test_axis_must_be_an_integer(axis):
    with pytest.raises(TypeError, match="axis must be an integer"):
        softmax(np.ones((2, 3)), axis=axis)


def test_a_scalar_has_no_axis():
    with pytest.raises(ValueError, match=r"softmax needs at least one axis: x has shape \(\)"):
        softmax(3.0)


@pytest.mark.parametrize(("bad", "where"), [(np.nan, r"x\[0, 1\] is nan"), (np.inf, "is inf")])
def test_nan_and_plus_infinity_are_rejected(bad, where):
    with pytest.raises(ValueError, match=rf"x must not contain NaN or \+inf.*{where}"):
        softmax([[0.0, bad]])


@pytest.mark.parametrize(
    ("x", "message"),
    [([1j, 2], "x must be real, got complex"), ("abc", "x must be an array of numbers")],
)
def test_complex_and_text_are_type_errors(x, message):
    with pytest.raises(TypeError, match=message):
        softmax(x)


def test_ragged_input_is_a_value_error_naming_x():
    with pytest.raises(ValueError, match="x could not be converted to an array"):
        softmax([[1.0, 2.0], [3.0]])


# --- softmax_in_place: the attention functions' softmax ------------------------------------


@PROPERTY_SETTINGS
@given(x=float_arrays(bound=1e300), data=st.data())
def test_in_place_gives_the_same_weights_into_the_same_array_and_leaves_softmax_input_alone(
    x, data
):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    temperature = data.draw(st.sampled_from([1.0, 0.5, 3.0]))
    original = x.copy()
    expected = softmax(x, axis=axis, temperature=temperature)
    np.testing.assert_array_equal(x, original)  # softmax never writes into its input
    result = softmax_in_place(x, axis=axis, temperature=temperature)
    assert result is x
    np.testing.assert_array_equal(result, expected)


def test_in_place_gives_masked_keys_and_empty_rows_zeros():
    scores = np.array([[1.0, -np.inf, 1.0], [-np.inf, -np.inf, -np.inf]], dtype=np.float32)
    weights = softmax_in_place(scores)
    assert weights.dtype == np.float32
    np.testing.assert_array_equal(weights, [[0.5, 0.0, 0.5], [0.0, 0.0, 0.0]])


@PROPERTY_SETTINGS
@given(x=float_arrays(bound=1e3), data=st.data())
def test_log_sum_exp_is_the_log_of_softmaxs_denominator(x, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    lse = log_sum_exp(x, axis=axis)
    assert lse.shape == tuple(np.delete(np.array(x.shape, dtype=int), axis % x.ndim))
    assert np.isfinite(lse).all()
    with np.errstate(under="ignore"):
        rebuilt = np.exp(x - np.expand_dims(lse, axis))
    assert np.allclose(rebuilt, softmax(x, axis=axis), atol=1e-12)


def test_log_sum_exp_equals_torch_and_survives_large_and_small_scores():
    torch = pytest.importorskip("torch")
    x = np.array([[1000.0, 1000.0, -5.0], [-1000.0, -1000.0, -1001.0]])
    expected = torch.logsumexp(torch.from_numpy(x), dim=-1).numpy()
    assert np.allclose(log_sum_exp(x), expected, rtol=1e-12)
    assert np.allclose(log_sum_exp(x, axis=0), torch.logsumexp(torch.from_numpy(x), 0).numpy())


# --- what chapter 2 says about float16 rows and log-sum-exp --------------------------------


def ch2_float16_softmax(scores, axis=-1):
    """A softmax written by hand as chapter 2 writes it: its total is added up in float16."""
    exponentials = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return exponentials / exponentials.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize(
    ("shape", "axis"),
    [((70_000,), -1), ((3, 70_000), -1), ((70_000, 4), 0), ((2, 70_000, 3), 1), ((4_096, 4), 0)],
)
def test_float16_totals_are_added_up_in_float32_along_every_axis(shape, axis):
    # n equal scores get 1/n each, rounded to float16, and their log-sum-exp is log n: no
    # overflow (warnings are errors here) and no total stuck at 2,048, whatever the axis.
    scores = np.zeros(shape, dtype=np.float16)
    n = shape[axis]
    weights = softmax(scores, axis=axis)
    assert weights.dtype == np.float16 and (weights == np.float16(1 / n)).all()
    in_place = softmax_in_place(scores.copy(), axis=axis)
    assert (in_place == np.float16(1 / n)).all()
    lse = log_sum_exp(scores, axis=axis)
    assert lse.dtype == np.float16 and (lse == np.float16(np.log(n))).all()
    torch_weights = torch.softmax(torch.from_numpy(scores), dim=axis).numpy()
    np.testing.assert_array_equal(weights, torch_weights)


def test_a_hand_written_softmax_that_adds_up_in_float16_overflows_or_stops_at_2048():
    # What the library avoids, as chapter 2 and the appendix show it (NumPy as installed):
    # along the last axis NumPy adds in float32 but rounds the total to float16 (inf from
    # 65,520 on, 65,519 still fits); along another axis it adds in float16, where a total of
    # ones stops growing at 2,048.
    with np.errstate(over="ignore"):
        assert (ch2_float16_softmax(np.zeros(65_519, dtype=np.float16)) > 0).all()
        assert not ch2_float16_softmax(np.zeros(65_520, dtype=np.float16)).any()
        assert not ch2_float16_softmax(np.zeros(70_000, dtype=np.float16)).any()
    for shape, axis in [((4_096, 4), 0), ((2, 4_096, 3), 1), ((70_000, 4), 0)]:
        columns = ch2_float16_softmax(np.zeros(shape, dtype=np.float16), axis=axis)
        assert (columns == np.float16(1 / 2_048)).all()  # no warning: silently wrong
    assert (softmax(np.zeros((4_096, 4), dtype=np.float16), axis=0) == np.float16(1 / 4_096)).all()


@PROPERTY_SETTINGS
@given(
    x=hnp.arrays(
        np.float16,
        hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6),
        elements=st.floats(-60, 60, width=16),
    ),
    data=st.data(),
)
def test_float16_weights_match_torch_softmax_to_float16_rounding(x, data):
    # torch.softmax computes float16 input in float32 and rounds once; the library computes
    # the exponentials in float16 and only the total in float32: they differ by rounding only.
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    weights = softmax(x, axis=axis)
    assert weights.dtype == np.float16
    expected = torch.softmax(torch.from_numpy(x), dim=axis).numpy()
    np.testing.assert_allclose(weights, expected, rtol=2**-9, atol=2**-24)


def test_float32_rounding_can_swap_two_neighbouring_scores_float64_did_not_here():
    # Chapter 2, cell 13: NumPy's float32 exp is not monotone to the last bit (NumPy as
    # installed, 2.4.6 when measured, on an AVX2 processor), so among 200,000 scores z and the
    # next float32 above each, some higher score gets a strictly lower weight; a few in 10^4.
    z = np.random.default_rng(0).uniform(-3, 0, size=200_000).astype(np.float32)
    rows = np.stack([np.zeros_like(z), z, np.nextafter(z, np.float32(1))], axis=-1)  # (n, 3)
    weights = softmax(rows)
    swapped = weights[:, 2] < weights[:, 1]
    assert 0 < swapped.sum() < 100
    z64 = z.astype(np.float64)
    rows64 = np.stack([np.zeros_like(z64), z64, np.nextafter(z64, 1.0)], axis=-1)
    assert not (softmax(rows64)[:, 2] < softmax(rows64)[:, 1]).any()


def test_scores_of_both_signs_near_the_float_limit_overflow_quietly_towards_weight_0():
    # x - max overflows to -inf here: the weight 0 and the log-sum-exp are right, and no
    # RuntimeWarning escapes (this module's tests turn warnings into errors).
    extreme = np.array([1.7e308, -1.7e308])
    assert np.array_equal(softmax(extreme), [1.0, 0.0])
    assert np.array_equal(softmax(extreme, temperature=0.5), [1.0, 0.0])
    assert log_sum_exp(extreme) == 1.7e308


@PROPERTY_SETTINGS
@given(x=float_arrays(min_dims=1, max_dims=1, max_side=8, bound=1e3))
def test_log_sum_exp_lies_between_the_maximum_and_the_maximum_plus_log_n(x):
    lse = log_sum_exp(x)
    assert x.max() <= lse + 1e-12 and lse <= x.max() + np.log(x.size) + 1e-9
