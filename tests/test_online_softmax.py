"""Tests of selfattn_lib.online_softmax: states merge exactly into the state of all keys,
whatever the order and the scale of the scores, and blocked causal attention equals direct
attention and PyTorch's for every block size."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import PROPERTY_SETTINGS, seeds

from selfattn_lib.attention import scaled_dot_product_attention
from selfattn_lib.masks import causal_mask
from selfattn_lib.online_softmax import (
    causal_blocked_attention,
    merge_states,
    running_statistics,
    softmax_state,
    state_output,
)
from selfattn_lib.softmax import softmax


@PROPERTY_SETTINGS
@given(seed=seeds, split=st.integers(1, 6), offset=st.floats(-1e3, 1e3))
def test_merged_states_give_the_attention_over_all_keys(seed, split, offset):
    rng = np.random.default_rng(seed)
    scores, values = rng.normal(size=(2, 3, 7)) * 4 + offset, rng.normal(size=(2, 7, 2))
    left = softmax_state(scores[..., :split], values[..., :split, :])
    right = softmax_state(scores[..., split:], values[..., split:, :])
    expected = softmax(scores, axis=-1) @ values  # (2, 3, 2)
    for merged in (merge_states(left, right), merge_states(right, left)):
        assert np.allclose(state_output(merged), expected, rtol=1e-9, atol=1e-12)
        whole = softmax_state(scores, values)
        assert all(np.allclose(a, b) for a, b in zip(merged, whole, strict=True))


def test_states_stay_finite_for_scores_far_apart():
    huge = softmax_state([[1e4, 0.0]], [[1.0], [2.0]])
    tiny = softmax_state([[-1e4]], [[5.0]])
    m, total, acc = merge_states(huge, tiny)
    assert np.isfinite([*m, *total, *acc.ravel()]).all()
    assert np.array_equal(state_output((m, total, acc)), [[1.0]])


@pytest.mark.parametrize("block_size", [1, 2, 3, 4, 11, 20])
def test_running_statistics_end_at_the_row_max_and_sum(block_size):
    row = np.random.default_rng(3).normal(size=11) * 6
    maxima, sums = running_statistics(row, block_size)
    assert len(maxima) == len(sums) == -(-11 // block_size)
    assert maxima[-1] == row.max() and np.all(np.diff(maxima) >= 0)
    assert np.isclose(sums[-1], np.exp(row - row.max()).sum(), rtol=1e-14)


@pytest.mark.parametrize(("n_tokens", "block_size"), [(7, 3), (8, 4), (5, 1), (6, 8), (9, 2)])
@pytest.mark.parametrize("scale", [1.0, 40.0])
def test_blocked_causal_attention_equals_direct_attention_and_pytorch(n_tokens, block_size, scale):
    rng = np.random.default_rng(n_tokens * 10 + block_size)
    q, k = (rng.normal(size=(n_tokens, 4)) * scale for _ in range(2))  # scores up to ~1000s
    v = rng.normal(size=(n_tokens, 3))
    got = causal_blocked_attention(q, k, v, block_size)
    direct, _ = scaled_dot_product_attention(q, k, v, mask=causal_mask(n_tokens))
    assert np.allclose(got, direct, rtol=0, atol=1e-12)
    torch = pytest.importorskip("torch")
    tensors = [torch.from_numpy(a) for a in (q, k, v)]
    expected = torch.nn.functional.scaled_dot_product_attention(*tensors, is_causal=True)
    assert np.allclose(got, expected.numpy(), rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: softmax_state([[1.0, 2.0]], [[1.0]]), ValueError, "same n"),
        (lambda: softmax_state([[-np.inf, -np.inf]], [[1.0], [2.0]]), ValueError, "finite"),
        (lambda: softmax_state("s", [[1.0]]), TypeError, "scores"),
        (lambda: merge_states((1.0, 2.0), softmax_state([[1.0]], [[1.0]])), TypeError, "state_a"),
        (
            lambda: merge_states(
                softmax_state([[1.0]], [[1.0]]), softmax_state([[1.0]], [[1.0, 2]])
            ),
            ValueError,
            "shapes",
        ),  # fmt: skip
        (lambda: state_output((np.zeros(1), np.zeros(1), np.zeros((1, 1)))), ValueError, "l"),
        (lambda: running_statistics([1.0, 2.0], 0), ValueError, "block_size"),
        (lambda: running_statistics([1.0, 2.0], 1.5), TypeError, "block_size"),
        (
            lambda: causal_blocked_attention(np.ones((3, 2)), np.ones((4, 2)), np.ones((4, 2)), 2),
            ValueError,
            "one sequence",
        ),  # fmt: skip
        (
            lambda: causal_blocked_attention(
                np.ones((3, 2)), np.ones((3, 2)), np.ones((3, 2)), "2"
            ),
            TypeError,
            "block_size",
        ),  # fmt: skip
    ],
)
def test_bad_input_is_refused_with_a_clear_error(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_the_state_of_no_keys_merges_as_the_identity():
    empty = (np.full(2, -np.inf), np.zeros(2), np.zeros((2, 3)))
    state = softmax_state(np.array([[1.0, 2.0], [0.5, -1.0]]), np.arange(6.0).reshape(2, 3))
    for merged in (merge_states(empty, state), merge_states(state, empty)):
        assert all(np.array_equal(a, b) for a, b in zip(merged, state, strict=True))
    both_empty = merge_states(empty, empty)
    assert np.isneginf(both_empty[0]).all() and not both_empty[1].any()
    with pytest.raises(ValueError, match="no key"):
        state_output(both_empty)
