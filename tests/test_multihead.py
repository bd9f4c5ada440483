"""Tests of selfattn_lib.multihead: splitting and merging heads, the parameters, and multi-head
attention checked against torch.nn.MultiheadAttention with the same weights."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from strategies import PROPERTY_SETTINGS, permutations, seeds

from selfattn_lib.attention import scaled_dot_product_attention
from selfattn_lib.masks import causal_mask, combine_masks, padding_mask
from selfattn_lib.multihead import (
    MultiHeadParams,
    merge_heads,
    multi_head_attention,
    split_heads,
)

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("error")


def random_params(d_model: int, rng: np.random.Generator, *, bias: bool = True) -> MultiHeadParams:
    """Parameters with non-zero biases, so that tests can tell whether biases are used."""
    weights = rng.normal(size=(4, d_model, d_model)) / math.sqrt(d_model)
    biases = rng.normal(size=(4, d_model)) if bias else [None] * 4
    return MultiHeadParams(*weights, *biases)


# --- split_heads / merge_heads -------------------------------------------------------------


def test_split_heads_gives_each_head_a_slice_of_the_features():
    x = np.arange(2 * 3 * 6.0).reshape(2, 3, 6)  # (B, T, D)
    heads = split_heads(x, n_heads=3)
    assert heads.shape == (2, 3, 3, 2)  # (B, H, T, D_h)
    for head in range(3):
        np.testing.assert_array_equal(heads[:, head], x[:, :, 2 * head : 2 * head + 2])


@PROPERTY_SETTINGS
@given(
    leading=hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3),
    n_tokens=st.integers(1, 5),
    n_heads=st.integers(1, 4),
    d_head=st.integers(1, 4),
    seed=seeds,
)
def test_split_and_merge_round_trip_exactly(leading, n_tokens, n_heads, d_head, seed):
    x = np.random.default_rng(seed).normal(size=(*leading, n_tokens, n_heads * d_head))
    heads = split_heads(x, n_heads)
    assert heads.shape == (*leading, n_heads, n_tokens, d_head)
    np.testing.assert_array_equal(merge_heads(heads), x)
    np.testing.assert_array_equal(split_heads(merge_heads(heads), n_heads), heads)


def test_split_heads_rejects_d_not_divisible_by_n_heads():
    message = r"D must be divisible by n_heads: D = 10 \(x has shape \(2, 3, 10\)\), n_heads = 4"
    with pytest.raises(ValueError, match=message):
        split_heads(np.ones((2, 3, 10)), n_heads=4)


@pytest.mark.parametrize(
    ("n_heads", "error"), [(0, ValueError), (2.0, TypeError), (True, TypeError)]
)
def test_split_heads_needs_a_positive_integer_number_of_heads(n_heads, error):
    with pytest.raises(error, match="n_heads must be a positive integer"):
        split_heads(np.ones((3, 4)), n_heads=n_heads)


def test_split_heads_needs_a_sequence():
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., T, D\).*got shape \(4,\)"):
        split_heads(np.ones(4), n_heads=2)


def test_merge_heads_needs_a_head_axis():
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., H, T, D_h\).*\(3, 4\)"):
        merge_heads(np.ones((3, 4)))


# --- MultiHeadParams -----------------------------------------------------------------------


def test_init_draws_xavier_uniform_weights_and_zero_biases():
    params = MultiHeadParams.init(64, np.random.default_rng(0))
    limit = math.sqrt(6 / (64 + 64))
    assert params.d_model == 64
    for w in (params.w_q, params.w_k, params.w_v, params.w_o):
        assert w.shape == (64, 64)
        assert np.abs(w).max() <= limit
        assert np.abs(w).max() > 0.95 * limit  # uses the whole range, not a smaller one
    assert not np.array_equal(params.w_q, params.w_k)
    for b in (params.b_q, params.b_k, params.b_v, params.b_o):
        np.testing.assert_array_equal(b, np.zeros(64))


def test_init_is_reproducible_from_the_generator():
    first = MultiHeadParams.init(8, np.random.default_rng(7))
    second = MultiHeadParams.init(8, np.random.default_rng(7))
    other = MultiHeadParams.init(8, np.random.default_rng(8))
    np.testing.assert_array_equal(first.w_o, second.w_o)
    assert not np.array_equal(first.w_o, other.w_o)


def test_init_without_bias():
    params = MultiHeadParams.init(4, np.random.default_rng(0), bias=False)
    assert params.b_q is None and params.b_k is None and params.b_v is None and params.b_o is None


@pytest.mark.parametrize("rng", [0, None, np.random.RandomState(0)])
def test_init_needs_a_numpy_generator(rng):
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        MultiHeadParams.init(4, rng)


def test_init_needs_a_positive_d_model():
    with pytest.raises(ValueError, match="d_model must be a positive integer, got 0"):
        MultiHeadParams.init(0, np.random.default_rng(0))


def test_params_convert_array_likes_and_are_frozen():
    eye = [[1, 0], [0, 1]]
    params = MultiHeadParams(eye, eye, eye, eye, b_o=[1, 2])
    assert isinstance(params.w_q, np.ndarray) and params.w_q.dtype == np.float64
    np.testing.assert_array_equal(params.b_o, [1.0, 2.0])
    with pytest.raises(dataclasses.FrozenInstanceError):
        params.w_q = np.eye(2)


def test_params_reject_a_weight_of_the_wrong_shape():
    eye = np.eye(3)
    with pytest.raises(ValueError, match=r"w_k must have shape \(D, D\) = \(3, 3\).*\(3, 4\)"):
        MultiHeadParams(eye, np.ones((3, 4)), eye, eye)


def test_params_reject_a_non_square_w_q():
    with pytest.raises(ValueError, match=r"w_q must have shape \(D, D\) with D >= 1.*\(3, 4\)"):
        MultiHeadParams(*np.ones((4, 3, 4)))


def test_params_reject_a_bias_of_the_wrong_shape():
    eye = np.eye(3)
    with pytest.raises(ValueError, match=r"b_v must have shape \(D,\) = \(3,\).*got shape \(4,\)"):
        MultiHeadParams(eye, eye, eye, eye, b_v=np.zeros(4))


def test_params_reject_nan():
    w = np.eye(2)
    with pytest.raises(ValueError, match=r"w_o must not contain NaN.*w_o\[0, 0\] is nan"):
        MultiHeadParams(w, w, w, np.full((2, 2), np.nan))


# --- multi_head_attention: properties ------------------------------------------------------


def test_shapes_of_self_and_cross_attention():
    rng = np.random.default_rng(1)
    params = MultiHeadParams.init(8, rng)
    x_q, x_kv = rng.normal(size=(2, 3, 8)), rng.normal(size=(2, 5, 8))
    output, weights = multi_head_attention(x_q, x_kv, params, n_heads=4)
    assert output.shape == (2, 3, 8)
    assert weights.shape == (2, 4, 3, 5)
    np.testing.assert_allclose(weights.sum(-1), 1.0)
    output, weights = multi_head_attention(x_q, x_q, params, n_heads=2)
    assert output.shape == (2, 3, 8)
    assert weights.shape == (2, 2, 3, 3)


def test_one_head_is_attention_over_the_projections():
    rng = np.random.default_rng(2)
    params = random_params(6, rng)
    x_q, x_kv = rng.normal(size=(2, 3, 6)), rng.normal(size=(2, 4, 6))
    output, weights = multi_head_attention(x_q, x_kv, params, n_heads=1)
    heads, expected_weights = scaled_dot_product_attention(
        x_q @ params.w_q + params.b_q,
        x_kv @ params.w_k + params.b_k,
        x_kv @ params.w_v + params.b_v,
    )
    np.testing.assert_allclose(weights[:, 0], expected_weights, rtol=1e-12)
    np.testing.assert_allclose(output, heads @ params.w_o + params.b_o, rtol=1e-12)


@PROPERTY_SETTINGS
@given(seed=seeds, n_tokens=st.integers(1, 6), data=st.data())
def test_self_attention_is_permutation_equivariant(seed, n_tokens, data):
    rng = np.random.default_rng(seed)
    params = random_params(4, rng)
    x = rng.normal(size=(2, n_tokens, 4))
    order = data.draw(permutations(n_tokens))
    output, weights = multi_head_attention(x, x, params, n_heads=2)
    permuted = x[:, order]
    permuted_output, permuted_weights = multi_head_attention(permuted, permuted, params, 2)
    np.testing.assert_allclose(permuted_output, output[:, order], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        permuted_weights, weights[:, :, order][..., order], rtol=1e-10, atol=1e-12
    )


def test_padding_is_ignored_by_every_head_and_empty_rows_give_the_output_bias():
    rng = np.random.default_rng(3)
    params = random_params(8, rng)
    x = rng.normal(size=(3, 4, 8))
    mask = padding_mask([2, 4, 0], max_len=4)  # (B, 1, T_k)
    output, weights = multi_head_attention(x, x, params, n_heads=4, mask=mask)
    assert (weights[0, :, :, 2:] == 0.0).all()
    np.testing.assert_allclose(weights[:2].sum(-1), 1.0)
    assert (weights[2] == 0.0).all()
    np.testing.assert_array_equal(output[2], np.broadcast_to(params.b_o, (4, 8)))
    # Changing the padding tokens changes nothing for the real ones.
    changed = x.copy()
    changed[0, 2:] = rng.normal(size=(2, 8))
    changed_output, _ = multi_head_attention(changed, changed, params, n_heads=4, mask=mask)
    np.testing.assert_allclose(changed_output[0, :2], output[0, :2], rtol=1e-12)


def test_a_single_sequence_without_batch_axis():
    rng = np.random.default_rng(4)
    params = random_params(4, rng)
    x = rng.normal(size=(3, 4))
    output, weights = multi_head_attention(x, x, params, n_heads=2, mask=causal_mask(3))
    batched_output, batched_weights = multi_head_attention(
        x[None], x[None], params, 2, causal_mask(3)
    )
    assert output.shape == (3, 4) and weights.shape == (2, 3, 3)
    np.testing.assert_allclose(output, batched_output[0], rtol=1e-12)
    np.testing.assert_allclose(weights, batched_weights[0], rtol=1e-12)


# --- multi_head_attention: parity with torch.nn.MultiheadAttention --------------------------


def torch_layer(params: MultiHeadParams, n_heads: int):
    """torch.nn.MultiheadAttention holding ``params`` (torch stores the transposed weights)."""
    layer = torch.nn.MultiheadAttention(
        params.d_model,
        n_heads,
        bias=params.b_q is not None,
        batch_first=True,
        dtype=torch.float64,
    ).eval()
    with torch.no_grad():
        in_proj = np.concatenate([params.w_q.T, params.w_k.T, params.w_v.T])  # (3D, D)
        layer.in_proj_weight.copy_(torch.from_numpy(in_proj))
        layer.out_proj.weight.copy_(torch.from_numpy(params.w_o.T))
        if params.b_q is not None:
            in_proj_bias = np.concatenate([params.b_q, params.b_k, params.b_v])
            layer.in_proj_bias.copy_(torch.from_numpy(in_proj_bias))
            layer.out_proj.bias.copy_(torch.from_numpy(params.b_o))
    return layer


@PROPERTY_SETTINGS
@given(
    seed=seeds,
    batch_size=st.integers(1, 3),
    t_q=st.integers(1, 5),
    t_k=st.integers(1, 5),
    n_heads=st.integers(1, 3),
    d_head=st.integers(1, 3),
    cross=st.booleans(),
    use_padding=st.booleans(),
    use_causal=st.booleans(),
    bias=st.booleans(),
    data=st.data(),
)
def test_matches_torch_multihead_attention(
    seed, batch_size, t_q, t_k, n_heads, d_head, cross, use_padding, use_causal, bias, data
):
    rng = np.random.default_rng(seed)
    d_model = n_heads * d_head
    params = random_params(d_model, rng, bias=bias)
    x_q = rng.normal(size=(batch_size, t_q, d_model))
    x_kv = rng.normal(size=(batch_size, t_k, d_model)) if cross else x_q
    t_k = x_kv.shape[1]
    padding = np.ones((batch_size, 1, t_k), dtype=bool)
    if use_padding:
        lengths = data.draw(hnp.arrays(np.int64, batch_size, elements=st.integers(0, t_k)))
        padding = padding_mask(lengths, t_k)
    causal = causal_mask(t_q, t_k) if use_causal else np.ones((t_q, t_k), dtype=bool)
    mask = combine_masks(padding, causal)  # (B, T_q, T_k)

    output, weights = multi_head_attention(x_q, x_kv, params, n_heads, mask)

    layer = torch_layer(params, n_heads)
    torch_masks = {  # torch's boolean masks mean the opposite: True = ignore
        "key_padding_mask": torch.from_numpy(~padding[:, 0]) if use_padding else None,
        "attn_mask": torch.from_numpy(~causal) if use_causal else None,
    }
    query, key_value = torch.from_numpy(x_q), torch.from_numpy(x_kv)
    with torch.no_grad():
        expected_output, expected_mean = layer(query, key_value, key_value, **torch_masks)
        _, expected_per_head = layer(
            query, key_value, key_value, average_attn_weights=False, **torch_masks
        )
    # torch gives NaN for a query with nothing to attend to: compare the other rows only.
    has_key = mask.any(axis=-1)  # (B, T_q)
    tolerances = {"rtol": 1e-6, "atol": 1e-9}
    np.testing.assert_allclose(output[has_key], expected_output.numpy()[has_key], **tolerances)
    np.testing.assert_allclose(
        weights.mean(axis=1)[has_key], expected_mean.numpy()[has_key], **tolerances
    )
    np.testing.assert_allclose(
        weights.transpose(0, 2, 1, 3)[has_key],  # (B, T_q, H, T_k) rows
        expected_per_head.numpy().transpose(0, 2, 1, 3)[has_key],
        **tolerances,
    )


@pytest.mark.parametrize("n_heads", [1, 2, 3])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("grad", [True, False])
@pytest.mark.parametrize("need_weights", [True, False])
def test_an_empty_row_gives_b_o_where_torch_gives_nan_or_b_o(n_heads, training, grad, need_weights):
    # The docstring's claim, measured with torch 2.13.0: NaN with need_weights=True, or with an
    # even number of heads in eval mode under no_grad; the output bias otherwise.
    rng = np.random.default_rng(6)
    params = random_params(6, rng)
    x = rng.normal(size=(2, 3, 6))
    mask = np.ones((3, 3), dtype=bool)
    mask[0] = False  # query 0 may attend to nothing
    output, _ = multi_head_attention(x, x, params, n_heads, mask=mask)
    np.testing.assert_array_equal(output[:, 0], np.broadcast_to(params.b_o, (2, 6)))
    layer = torch_layer(params, n_heads).train(training)
    with torch.set_grad_enabled(grad):
        expected, _ = layer(
            *(torch.from_numpy(x),) * 3,
            attn_mask=torch.from_numpy(~mask),
            need_weights=need_weights,
        )
    expected = expected.detach().numpy()  # (B, T, D)
    if need_weights or (n_heads % 2 == 0 and not training and not grad):
        assert np.isnan(expected[:, 0]).all()
    else:
        np.testing.assert_allclose(expected[:, 0], np.broadcast_to(params.b_o, (2, 6)), rtol=1e-12)
    np.testing.assert_allclose(output[:, 1:], expected[:, 1:], rtol=1e-6, atol=1e-9)


def test_matches_torch_for_a_single_unbatched_sequence():
    rng = np.random.default_rng(5)
    params = random_params(6, rng)
    x = rng.normal(size=(4, 6))  # (T, D)
    output, weights = multi_head_attention(x, x, params, n_heads=3, mask=causal_mask(4))
    with torch.no_grad():
        expected_output, expected_weights = torch_layer(params, 3)(
            *(torch.from_numpy(x),) * 3,
            attn_mask=torch.from_numpy(~causal_mask(4)),
            average_attn_weights=False,
        )
    np.testing.assert_allclose(output, expected_output.numpy(), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(weights, expected_weights.numpy(), rtol=1e-6, atol=1e-9)


# --- multi_head_attention: bad input -------------------------------------------------------


@pytest.fixture
def params():
    return MultiHeadParams.init(8, np.random.default_rng(0))


def test_rejects_params_of_another_type(params):
    with pytest.raises(TypeError, match="params must be a MultiHeadParams, got dict"):
        multi_head_attention(np.ones((1, 2, 8)), np.ones((1, 2, 8)), vars(params), 2)


@pytest.mark.parametrize("name", ["x_q", "x_kv"])
def test_rejects_inputs_whose_d_differs_from_the_params(params, name):
    inputs = {"x_q": np.ones((1, 2, 8)), "x_kv": np.ones((1, 3, 8)), name: np.ones((1, 2, 6))}
    message = (
        rf"{name} must have last dimension D = params.d_model = 8: {name} has shape \(1, 2, 6\)"
    )
    with pytest.raises(ValueError, match=message):
        multi_head_attention(**inputs, params=params, n_heads=2)


def test_rejects_different_batch_dimensions(params):
    message = r"x_q and x_kv must have the same leading.*\(2, 3, 8\).*\(1, 3, 8\)"
    with pytest.raises(ValueError, match=message):
        multi_head_attention(np.ones((2, 3, 8)), np.ones((1, 3, 8)), params, 2)


def test_rejects_n_heads_that_does_not_divide_d(params):
    with pytest.raises(ValueError, match=r"D = 8 \(params.d_model\), n_heads = 3"):
        multi_head_attention(np.ones((1, 2, 8)), np.ones((1, 2, 8)), params, 3)


@pytest.mark.parametrize(
    "mask_shape", [(2, 4, 3, 5), (2, 3, 4), (3, 3, 5)], ids=["per head", "wrong T_k", "wrong B"]
)
def test_rejects_masks_that_do_not_fit_batch_queries_and_keys(params, mask_shape):
    message = rf"mask has shape \({mask_shape[0]}.*scores have shape \(2, 3, 5\)"
    with pytest.raises(ValueError, match=message):
        multi_head_attention(
            np.ones((2, 3, 8)), np.ones((2, 5, 8)), params, 4, np.ones(mask_shape, dtype=bool)
        )


def test_rejects_a_non_boolean_mask(params):
    with pytest.raises(TypeError, match="mask must be a boolean array"):
        multi_head_attention(np.ones((2, 3, 8)), np.ones((2, 5, 8)), params, 4, np.ones((3, 5)))


def test_reports_an_overflowing_projection(params):
    x = np.full((1, 2, 8), 1e308)
    big = MultiHeadParams(*(np.full((4, 8, 8), 10.0)))
    with pytest.raises(ValueError, match=r"x_q @ w_q \+ b_q overflowed the range of float64"):
        multi_head_attention(x, x, big, 2)
