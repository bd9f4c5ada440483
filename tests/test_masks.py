"""Tests of selfattn_lib.masks: causal and padding masks, combining them, and how they line up
with PyTorch's conventions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from strategies import PROPERTY_SETTINGS

from selfattn_lib.attention import scaled_dot_product_attention
from selfattn_lib.masks import causal_mask, combine_masks, padding_mask

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("error")

lengths_of_sequences = st.integers(min_value=1, max_value=12)


# --- causal_mask ---------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(n_tokens=lengths_of_sequences)
def test_square_causal_mask_is_the_lower_triangle(n_tokens):
    mask = causal_mask(n_tokens)
    assert mask.dtype == np.bool_
    np.testing.assert_array_equal(mask, np.tril(np.ones((n_tokens, n_tokens), dtype=bool)))
    np.testing.assert_array_equal(causal_mask(n_tokens, n_tokens), mask)


@PROPERTY_SETTINGS
@given(t_q=lengths_of_sequences, t_k=lengths_of_sequences)
def test_rectangular_causal_mask_is_aligned_bottom_right(t_q, t_k):
    mask = causal_mask(t_q, t_k)
    assert mask.shape == (t_q, t_k)
    # The queries are the last t_q of t_k positions: query i sits at position i + t_k - t_q.
    queries = np.arange(t_q)[:, None] + t_k - t_q
    np.testing.assert_array_equal(mask, np.arange(t_k)[None, :] <= queries)
    if t_q <= t_k:
        np.testing.assert_array_equal(mask, causal_mask(t_k)[-t_q:])
        assert mask[-1].all()


def test_decoding_one_token_with_a_cache_sees_every_key():
    np.testing.assert_array_equal(causal_mask(1, 4), [[True, True, True, True]])


def test_square_causal_mask_matches_torch_is_causal():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 2, 5, 4))
    output, _ = scaled_dot_product_attention(q, k, v, causal_mask(5))
    expected = torch.nn.functional.scaled_dot_product_attention(
        *(torch.from_numpy(array) for array in (q, k, v)), is_causal=True
    )
    np.testing.assert_allclose(output, expected.numpy(), rtol=1e-6, atol=1e-12)


def test_torch_is_causal_is_aligned_top_left_when_lengths_differ():
    """The docstring's warning: for T_q != T_k, torch's is_causal is np.tril, not ours."""
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(2, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 3))
    expected = torch.nn.functional.scaled_dot_product_attention(
        *(torch.from_numpy(array) for array in (q, k, v)), is_causal=True
    ).numpy()
    top_left = np.tril(np.ones((2, 5), dtype=bool))
    output, _ = scaled_dot_product_attention(q, k, v, top_left)
    np.testing.assert_allclose(output, expected, rtol=1e-6, atol=1e-12)
    output, _ = scaled_dot_product_attention(q, k, v, causal_mask(2, 5))
    assert not np.allclose(output, expected)


def test_more_queries_than_keys_leaves_the_first_queries_with_nothing():
    mask = causal_mask(4, 2)
    np.testing.assert_array_equal(mask.any(axis=1), [False, False, True, True])


@pytest.mark.parametrize("name", ["t_q", "t_k"])
@pytest.mark.parametrize("value", [0, -3])
def test_causal_mask_sizes_must_be_positive(name, value):
    sizes = {"t_q": 3, "t_k": 3, name: value}
    with pytest.raises(ValueError, match=rf"{name} must be a positive integer, got {value}"):
        causal_mask(**sizes)


@pytest.mark.parametrize("value", [2.0, "3", True, None])
def test_causal_mask_sizes_must_be_integers(value):
    with pytest.raises(TypeError, match="t_q must be a positive integer"):
        causal_mask(value)


def test_causal_mask_accepts_numpy_integers():
    np.testing.assert_array_equal(causal_mask(np.int64(3), np.int32(3)), causal_mask(3))


# --- padding_mask --------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(
    data=st.data(),
    max_len=lengths_of_sequences,
    batch_size=st.integers(min_value=1, max_value=5),
)
def test_padding_mask_marks_the_first_length_tokens(data, max_len, batch_size):
    lengths = data.draw(hnp.arrays(np.int64, batch_size, elements=st.integers(0, max_len)))
    mask = padding_mask(lengths, max_len)
    assert mask.shape == (batch_size, 1, max_len)
    assert mask.dtype == np.bool_
    np.testing.assert_array_equal(mask.sum(axis=-1)[:, 0], lengths)
    for row, length in zip(mask[:, 0], lengths, strict=True):
        assert row[:length].all()
        assert not row[length:].any()


def test_padding_mask_broadcasts_over_queries_and_heads():
    rng = np.random.default_rng(2)
    mask = padding_mask([2, 4], max_len=4)
    q, k, v = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 4, 4)), rng.normal(size=(2, 4, 2))
    _, weights = scaled_dot_product_attention(q, k, v, mask)  # scores (B, T_q, T_k)
    assert (weights[0, :, 2:] == 0.0).all()
    assert (weights[1] > 0).all()
    per_head = np.stack([q, q], axis=1), np.stack([k, k], axis=1), np.stack([v, v], axis=1)
    _, head_weights = scaled_dot_product_attention(*per_head, mask[:, None])  # (B, H, T_q, T_k)
    np.testing.assert_allclose(head_weights[:, 0], weights)


def test_padding_mask_names_the_length_out_of_range():
    with pytest.raises(ValueError, match=r"\[0, max_len\] = \[0, 4\]: lengths\[1\] is 5"):
        padding_mask([2, 5, 1], max_len=4)
    with pytest.raises(ValueError, match=r"lengths\[0\] is -1"):
        padding_mask([-1], max_len=4)


@pytest.mark.parametrize("lengths", [[2.0, 3.0], [True, False], ["2"]])
def test_padding_mask_lengths_must_be_integers(lengths):
    with pytest.raises(TypeError, match="lengths must be integers, got dtype"):
        padding_mask(lengths, max_len=4)


def test_padding_mask_lengths_must_be_one_dimensional():
    with pytest.raises(ValueError, match=r"lengths must have shape \(B,\), got shape \(2, 1\)"):
        padding_mask([[2], [3]], max_len=4)


@pytest.mark.parametrize(("max_len", "error"), [(0, ValueError), (4.0, TypeError)])
def test_padding_mask_max_len_must_be_a_positive_integer(max_len, error):
    with pytest.raises(error, match="max_len must be a positive integer"):
        padding_mask([1], max_len=max_len)


# --- combine_masks -------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(
    masks=hnp.mutually_broadcastable_shapes(num_shapes=3, min_side=1, max_side=4).flatmap(
        lambda shapes: st.tuples(
            *(hnp.arrays(np.bool_, shape) for shape in shapes.input_shapes),
            st.just(shapes.result_shape),
        )
    )
)
def test_combine_masks_is_a_broadcast_logical_and(masks):
    *masks, result_shape = masks
    combined = combine_masks(*masks)
    assert combined.shape == result_shape
    np.testing.assert_array_equal(combined, masks[0] & masks[1] & masks[2])


def test_combining_padding_and_causal_masks():
    combined = combine_masks(padding_mask([3, 1], max_len=3), causal_mask(3))
    assert combined.shape == (2, 3, 3)
    np.testing.assert_array_equal(combined[0], causal_mask(3))
    np.testing.assert_array_equal(combined[1], [[True, False, False]] * 3)


def test_combining_one_mask_returns_a_copy():
    mask = causal_mask(3)
    combined = combine_masks(mask)
    np.testing.assert_array_equal(combined, mask)
    combined[0, 0] = False
    assert mask[0, 0]


def test_combine_masks_needs_a_mask():
    with pytest.raises(TypeError, match="combine_masks needs at least one mask"):
        combine_masks()


def test_combine_masks_rejects_non_boolean_masks_by_position():
    with pytest.raises(TypeError, match=r"masks\[1\] must be a boolean array.*got dtype int64"):
        combine_masks(causal_mask(3), np.ones((3, 3), dtype=np.int64))


def test_combine_masks_rejects_shapes_that_do_not_broadcast():
    with pytest.raises(
        ValueError, match=r"must broadcast together, got shapes \(3, 3\), \(2, 1, 4\)"
    ):
        combine_masks(causal_mask(3), padding_mask([1, 2], max_len=4))
