"""Tests of selfattn_lib.sampling: properties of temperature, top-k and top-p, parity with
Hugging Face's logits warpers (re-implemented in torch), reproducible sampling, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from strategies import PROPERTY_SETTINGS, float_arrays, permutations, seeds

from selfattn_lib.sampling import (
    greedy_token,
    next_token_probabilities,
    sample_token,
    temperature_probabilities,
    top_k_filter,
    top_p_filter,
)
from selfattn_lib.softmax import softmax

pytestmark = pytest.mark.filterwarnings("error")


@st.composite
def distributions(draw: st.DrawFn, max_rows: int = 3, max_tokens: int = 12) -> np.ndarray:
    """Rows ``(B, V)`` of distinct positive probabilities (no ties), each summing to one."""
    n_rows = draw(st.integers(1, max_rows))
    n_tokens = draw(st.integers(1, max_tokens))
    rng = np.random.default_rng(draw(seeds))
    probabilities = rng.dirichlet(np.full(n_tokens, 0.7), size=n_rows)  # (B, V)
    assume((probabilities > 1e-12).all())
    assume(all(len(np.unique(row)) == n_tokens for row in probabilities))
    return probabilities


def kept(filtered: np.ndarray) -> np.ndarray:
    return filtered > 0


# --- temperature ---------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(logits=float_arrays(bound=1e4), temperature=st.floats(0.05, 20))
def test_temperature_probabilities_are_rows_of_probabilities(logits, temperature):
    probabilities = temperature_probabilities(logits, temperature)
    assert probabilities.shape == logits.shape
    assert (probabilities >= 0).all()
    np.testing.assert_allclose(probabilities.sum(axis=-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(
        probabilities, softmax(logits / temperature, axis=-1), rtol=1e-9, atol=1e-15
    )


@PROPERTY_SETTINGS
@given(logits=float_arrays(bound=100))
def test_temperature_one_is_the_softmax_of_the_logits(logits):
    np.testing.assert_array_equal(temperature_probabilities(logits), softmax(logits, axis=-1))


@PROPERTY_SETTINGS
@given(scores=st.lists(st.integers(-10, 10), min_size=2, max_size=8, unique=True))
def test_temperature_towards_zero_approaches_the_greedy_one_hot(scores):
    logits = np.array(scores, dtype=float)
    one_hot = np.eye(len(logits))[greedy_token(logits)]
    errors = [np.abs(temperature_probabilities(logits, t) - one_hot).max() for t in (1.0, 0.3, 0.1)]
    assert errors[0] > errors[1] > errors[2]  # the distance shrinks as T falls …
    np.testing.assert_allclose(temperature_probabilities(logits, 1e-3), one_hot, atol=1e-12)
    uniform = np.full(len(logits), 1 / len(logits))  # … and T → ∞ flattens the distribution
    np.testing.assert_allclose(temperature_probabilities(logits, 1e6), uniform, rtol=1e-4)


def test_temperature_hand_checked_and_large_logits():
    np.testing.assert_allclose(
        temperature_probabilities([np.log(3.0), 0.0], temperature=0.5), [0.9, 0.1]
    )
    np.testing.assert_allclose(
        temperature_probabilities([1000.0, 1001.0], 0.01), [0, 1], atol=1e-40
    )
    banned = temperature_probabilities([[1.0, -np.inf, 1.0]])
    np.testing.assert_array_equal(banned, [[0.5, 0.0, 0.5]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_dtype_is_kept_through_every_step(dtype):
    logits = np.array([[2.0, 1.0, 0.5, -1.0]], dtype=dtype)
    probabilities = next_token_probabilities(logits, temperature=0.7, top_k=3, top_p=0.8)
    assert probabilities.dtype == dtype
    np.testing.assert_allclose(probabilities.sum(axis=-1), 1.0, rtol=1e-6)


# --- top-k ---------------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(probabilities=distributions(), data=st.data())
def test_top_k_keeps_the_k_most_probable_tokens_in_proportion(probabilities, data):
    k = data.draw(st.integers(1, probabilities.shape[-1]))
    filtered = top_k_filter(probabilities, k)
    np.testing.assert_allclose(filtered.sum(axis=-1), 1.0, rtol=1e-12)
    assert (kept(filtered).sum(axis=-1) == k).all()
    for row, original in zip(filtered, probabilities, strict=True):
        assert original[row > 0].min() > original[row == 0].max(initial=-1.0)
        np.testing.assert_allclose(row[row > 0], original[row > 0] / original[row > 0].sum())


def test_top_k_ties_at_the_boundary_go_to_the_lower_ids():
    np.testing.assert_array_equal(top_k_filter([0.1, 0.3, 0.3, 0.3], 2), [0, 0.5, 0.5, 0])
    np.testing.assert_array_equal(top_k_filter([0.25] * 4, 1), [1, 0, 0, 0])


def test_top_k_with_k_equal_to_v_changes_nothing_and_k_one_is_greedy():
    probabilities = np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]])
    np.testing.assert_allclose(top_k_filter(probabilities, 3), probabilities)
    np.testing.assert_array_equal(top_k_filter(probabilities, 1), [[0, 1, 0], [1, 0, 0]])


def test_top_k_keeps_zero_probabilities_at_zero():
    np.testing.assert_array_equal(top_k_filter([0.0, 1.0, 0.0], 2), [0.0, 1.0, 0.0])


# --- top-p ---------------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(probabilities=distributions(), p=st.floats(0.01, 0.999))
def test_top_p_keeps_the_smallest_set_of_most_probable_tokens_reaching_p(probabilities, p):
    filtered = top_p_filter(probabilities, p)
    np.testing.assert_allclose(filtered.sum(axis=-1), 1.0, rtol=1e-12)
    for row, original in zip(filtered, probabilities, strict=True):
        mass = original[row > 0]
        assert mass.min() > original[row == 0].max(initial=-1.0)  # the most probable ones
        assert mass.sum() >= p - 1e-12  # they reach p …
        assert mass.sum() - mass.min() < p  # … and without the least of them they would not
        np.testing.assert_allclose(row[row > 0], mass / mass.sum())


def test_top_p_keeps_the_token_that_crosses_p():
    probabilities = [0.1, 0.35, 0.05, 0.3, 0.2]  # sorted: 0.35, 0.3 (0.65 ≥ 0.6), …
    np.testing.assert_allclose(top_p_filter(probabilities, 0.6), [0, 0.35 / 0.65, 0, 0.3 / 0.65, 0])


def test_top_p_keeps_the_top_token_even_when_it_alone_exceeds_p():
    np.testing.assert_array_equal(top_p_filter([0.05, 0.7, 0.15, 0.1], 0.5), [0, 1, 0, 0])
    np.testing.assert_array_equal(top_p_filter([0.05, 0.7, 0.15, 0.1], 1e-20), [0, 1, 0, 0])


def test_top_p_equal_to_one_keeps_every_token():
    probabilities = np.array([1 - 3e-17, 1e-17, 1e-17, 1e-17, 0.0])
    filtered = top_p_filter(probabilities, 1.0)
    np.testing.assert_array_equal(kept(filtered), [True, True, True, True, False])
    # Without the special case, the running total 1.0 before the small tokens would reach p.
    assert np.cumsum(probabilities)[0] == 1.0


def test_top_p_is_not_fooled_by_rounding_in_the_running_total():
    # 0.7 + 0.1 is 0.7999999999999999 in float64, yet the two tokens reach p = 0.8.
    assert 0.7 + 0.1 < 0.8
    np.testing.assert_allclose(top_p_filter([0.7, 0.1, 0.1, 0.1], 0.8), [0.875, 0.125, 0, 0])


def test_top_p_ties_are_taken_in_the_order_of_the_ids():
    np.testing.assert_array_equal(top_p_filter([0.25] * 4, 0.5), [0.5, 0.5, 0, 0])
    np.testing.assert_array_equal(top_p_filter([0.2, 0.4, 0.4], 0.3), [0, 1, 0])


# --- both filters --------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(probabilities=distributions(max_rows=1), data=st.data())
def test_filters_commute_with_a_permutation_of_the_vocabulary(probabilities, data):
    n_tokens = probabilities.shape[-1]
    permutation = data.draw(permutations(n_tokens))
    k = data.draw(st.integers(1, n_tokens))
    p = data.draw(st.floats(0.01, 1.0))
    shuffled = probabilities[:, permutation]
    np.testing.assert_allclose(
        top_k_filter(shuffled, k), top_k_filter(probabilities, k)[:, permutation], rtol=1e-12
    )
    np.testing.assert_allclose(
        top_p_filter(shuffled, p), top_p_filter(probabilities, p)[:, permutation], rtol=1e-12
    )


@PROPERTY_SETTINGS
@given(
    logits=float_arrays(min_dims=2, max_dims=2, max_side=8, bound=5),
    temperature=st.floats(0.2, 3),
    data=st.data(),
)
def test_next_token_probabilities_chains_temperature_top_k_then_top_p(logits, temperature, data):
    k = data.draw(st.integers(1, logits.shape[-1]))
    p = data.draw(st.floats(0.05, 1.0))
    expected = top_p_filter(top_k_filter(softmax(logits / temperature), k), p)
    got = next_token_probabilities(logits, temperature=temperature, top_k=k, top_p=p)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)


def test_top_k_comes_before_top_p():
    logits = np.log([0.4, 0.3, 0.2, 0.1])
    # Top-2 leaves 4/7 and 3/7, and 4/7 alone reaches p = 0.5; top-p first would keep both.
    np.testing.assert_allclose(next_token_probabilities(logits, top_k=2, top_p=0.5), [1, 0, 0, 0])
    assert (top_k_filter(top_p_filter(softmax(logits), 0.5), 2) > 0).sum() == 2


def test_without_options_it_is_the_softmax():
    logits = np.array([[0.5, -1.0, 2.0]])
    np.testing.assert_array_equal(next_token_probabilities(logits), softmax(logits))


# --- parity with Hugging Face's logits warpers (their rules, re-implemented in torch) ------


def hugging_face_distribution(torch, logits, temperature, top_k, top_p):
    """``TemperatureLogitsWarper``, ``TopKLogitsWarper`` and ``TopPLogitsWarper`` of
    transformers' ``generate`` (min_tokens_to_keep = 1), then the softmax."""
    scores = torch.from_numpy(logits) / temperature  # (B, V)
    threshold = torch.topk(scores, min(top_k, scores.shape[-1]))[0][..., -1, None]
    scores = scores.masked_fill(scores < threshold, -float("inf"))
    sorted_logits, sorted_indices = torch.sort(scores, descending=False)
    cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
    sorted_remove = cumulative_probs <= (1 - top_p)
    sorted_remove[..., -1:] = False
    remove = sorted_remove.scatter(1, sorted_indices, sorted_remove)
    scores = scores.masked_fill(remove, -float("inf"))
    return torch.softmax(scores, dim=-1).numpy()


@PROPERTY_SETTINGS
@given(
    seed=seeds,
    shape=st.tuples(st.integers(1, 4), st.integers(1, 30)),
    temperature=st.floats(0.3, 3),
    p=st.floats(0.05, 0.99),
    data=st.data(),
)
def test_matches_hugging_face_top_k_and_top_p(seed, shape, temperature, p, data):
    torch = pytest.importorskip("torch")
    logits = np.random.default_rng(seed).normal(scale=3.0, size=shape)  # (B, V), no ties
    k = data.draw(st.integers(1, shape[-1]))
    ours = next_token_probabilities(logits, temperature=temperature, top_k=k, top_p=p)
    # Rounding decides a token whose running total lies within a hair of p: skip those.
    cut = top_k_filter(softmax(logits / temperature), k)
    running = np.cumsum(np.sort(cut, axis=-1)[:, ::-1], axis=-1)
    assume(np.abs(running - p).min() > 1e-9)
    expected = hugging_face_distribution(torch, logits, temperature, k, p)
    np.testing.assert_allclose(ours, expected, rtol=1e-9, atol=1e-12)


# --- greedy --------------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(logits=float_arrays(bound=10))
def test_greedy_token_is_the_arg_max(logits):
    tokens = greedy_token(logits)
    if logits.ndim == 1:
        assert type(tokens) is int and tokens == np.argmax(logits)
    else:
        assert tokens.shape == logits.shape[:-1] and tokens.dtype == np.int64
        np.testing.assert_array_equal(tokens, np.argmax(logits, axis=-1))


def test_greedy_ties_go_to_the_lowest_id_and_banned_tokens_are_never_picked():
    assert greedy_token([1.0, 3.0, 3.0, 3.0]) == 1
    assert greedy_token([-np.inf, -5.0]) == 1


# --- sampling ------------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(probabilities=distributions(max_rows=4), seed=seeds)
def test_sampling_is_reproducible_and_is_inverse_cdf_with_one_uniform_per_row(probabilities, seed):
    tokens = sample_token(probabilities, np.random.default_rng(seed))
    np.testing.assert_array_equal(tokens, sample_token(probabilities, np.random.default_rng(seed)))
    uniform = np.random.default_rng(seed).random(len(probabilities))
    expected = [
        np.searchsorted(np.cumsum(row), u * np.cumsum(row)[-1], side="right")
        for row, u in zip(probabilities, uniform, strict=True)
    ]
    np.testing.assert_array_equal(tokens, expected)


@PROPERTY_SETTINGS
@given(seed=seeds, data=st.data())
def test_a_token_of_probability_zero_is_never_drawn(seed, data):
    n_tokens = data.draw(st.integers(2, 8))
    allowed = np.array(data.draw(st.lists(st.booleans(), min_size=n_tokens, max_size=n_tokens)))
    assume(allowed.any() and not allowed.all())
    rng = np.random.default_rng(seed)
    probabilities = np.where(allowed, rng.random(n_tokens) + 0.01, 0.0)
    probabilities /= probabilities.sum()
    tokens = sample_token(np.tile(probabilities, (500, 1)), rng)  # (500,)
    assert allowed[tokens].all()


def test_empirical_frequencies_match_the_probabilities():
    probabilities = np.array([0.5, 0.25, 0.15, 0.1, 0.0])
    n_draws = 200_000
    tokens = sample_token(np.tile(probabilities, (n_draws, 1)), np.random.default_rng(2024))
    counts = np.bincount(tokens, minlength=len(probabilities))
    assert counts[-1] == 0
    expected = n_draws * probabilities[:-1]
    chi_square = (((counts[:-1] - expected) ** 2) / expected).sum()
    assert chi_square < 21.1  # the 99.99 % quantile of χ² with 3 degrees of freedom
    np.testing.assert_allclose(counts / n_draws, probabilities, atol=0.005)


def test_a_single_row_gives_an_int_and_a_batch_an_array_of_its_shape():
    rng = np.random.default_rng(0)
    assert type(sample_token([0.2, 0.8], rng)) is int
    tokens = sample_token(np.full((2, 3, 4), 0.25), rng)
    assert tokens.shape == (2, 3) and tokens.dtype == np.int64


class WorstCaseGenerator(np.random.Generator):
    """Draws u = 1, the value rounding can push u · total to: past the last cumulative sum."""

    def random(self, size=None, dtype=np.float64, out=None):
        return np.ones(size)


def test_rounding_past_the_last_bin_returns_the_last_possible_token():
    rng = WorstCaseGenerator(np.random.PCG64(0))
    assert sample_token([0.3, 0.7, 0.0, 0.0], rng) == 1
    np.testing.assert_array_equal(sample_token([[0.3, 0.7, 0.0], [0.0, 0.0, 1.0]], rng), [1, 2])


def test_the_arguments_are_not_written_to():
    probabilities = np.array([[0.1, 0.6, 0.3]])
    given_copy = probabilities.copy()
    top_k_filter(probabilities, 1)
    top_p_filter(probabilities, 0.5)
    top_p_filter(probabilities, 1.0)
    sample_token(probabilities, np.random.default_rng(0))
    np.testing.assert_array_equal(probabilities, given_copy)


# --- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize("temperature", [0, -1.0, np.nan, np.inf])
def test_temperature_must_be_finite_and_positive(temperature):
    with pytest.raises(ValueError, match="temperature must be a finite positive number"):
        temperature_probabilities([1.0, 2.0], temperature)
    with pytest.raises(ValueError, match="temperature"):
        next_token_probabilities([1.0, 2.0], temperature=temperature)


@pytest.mark.parametrize("temperature", ["1", None, True])
def test_temperature_must_be_a_number(temperature):
    with pytest.raises(TypeError, match="temperature must be a positive real number"):
        temperature_probabilities([1.0, 2.0], temperature)


@pytest.mark.parametrize(
    ("logits", "message"),
    [
        (3.0, r"logits must have shape \(\.\.\., V\)"),
        (np.zeros((2, 0)), r"at least one token"),
        ([1.0, np.nan], "must not contain NaN"),
        ([1.0, np.inf], r"must not contain NaN or \+inf"),
        ([[0.0, 1.0], [-np.inf, -np.inf]], r"row logits\[1\] is all -inf"),
    ],
)
def test_bad_logits_are_rejected(logits, message):
    for function in (temperature_probabilities, greedy_token, next_token_probabilities):
        with pytest.raises(ValueError, match=message):
            function(logits)


@pytest.mark.parametrize(
    ("probabilities", "message"),
    [
        ([0.5, 0.6], r"must sum to 1 .*sums to 1\.1.*not logits"),
        ([[0.5, 0.5], [0.2, 0.2]], r"row probabilities\[1\] sums to 0\.4"),
        ([1.5, -0.5], r"must not be negative: probabilities\[1\] is -0\.5"),
        ([0.5, np.nan], "must not contain NaN"),
        (0.5, r"must have shape \(\.\.\., V\)"),
        (np.zeros(0), "at least one token"),
    ],
)
def test_bad_probabilities_are_rejected(probabilities, message):
    rng = np.random.default_rng(0)
    for function in (
        lambda x: top_k_filter(x, 1),
        lambda x: top_p_filter(x, 0.5),
        lambda x: sample_token(x, rng),
    ):
        with pytest.raises(ValueError, match=message):
            function(probabilities)


def test_probabilities_that_sum_to_one_up_to_rounding_are_accepted():
    assert sum([0.1] * 10) != 1.0
    np.testing.assert_allclose(top_k_filter([0.1] * 10, 10).sum(), 1.0)
    single = np.full(7, 1 / 7, dtype=np.float32)
    assert top_p_filter(single, 0.5).dtype == np.float32


def test_k_must_be_a_positive_integer_no_larger_than_v():
    with pytest.raises(ValueError, match=r"k = 4 is larger than the vocabulary, V = 3"):
        top_k_filter([0.2, 0.3, 0.5], 4)
    with pytest.raises(ValueError, match=r"top_k = 4 is larger than the vocabulary, V = 3"):
        next_token_probabilities([0.2, 0.3, 0.5], top_k=4)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        top_k_filter([0.2, 0.3, 0.5], 0)
    for k in (2.0, True, "2"):
        with pytest.raises(TypeError, match="k must be a positive integer"):
            top_k_filter([0.2, 0.3, 0.5], k)


@pytest.mark.parametrize("p", [0, -0.1, 1.5, np.nan])
def test_p_must_be_in_the_half_open_unit_interval(p):
    with pytest.raises(ValueError, match=r"p must be a probability in \(0, 1\]"):
        top_p_filter([0.5, 0.5], p)
    with pytest.raises(ValueError, match=r"top_p must be a probability in \(0, 1\]"):
        next_token_probabilities([0.5, 0.5], top_p=p)


@pytest.mark.parametrize("p", ["0.5", None, True])
def test_p_must_be_a_number(p):
    with pytest.raises(TypeError, match="p must be a probability"):
        top_p_filter([0.5, 0.5], p)


@pytest.mark.parametrize("rng", [None, 0, np.random.RandomState(0)])
def test_sampling_needs_a_numpy_generator(rng):
    with pytest.raises(TypeError, match=r"rng must be a NumPy Generator"):
        sample_token([0.5, 0.5], rng)
