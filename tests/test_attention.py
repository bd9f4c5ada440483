"""Tests of selfattn_lib.attention: weightless self-attention and scaled dot-product attention,
their properties, parity with PyTorch, and errors for bad input."""

from __future__ import annotations

import inspect
import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import (
    PROPERTY_SETTINGS,
    attention_shapes,
    broadcast_shapes_for,
    permutations,
    qkv,
    random_mask,
    seeds,
)

from selfattn_lib.attention import (
    attention_scores,
    scaled_dot_product_attention,
    simple_self_attention,
)

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("error")


# --- simple_self_attention -----------------------------------------------------------------


def test_simple_self_attention_matches_the_loop_version():
    x = np.random.default_rng(0).normal(size=(4, 3))
    output, weights = simple_self_attention(x)
    for i, query in enumerate(x):
        scores = np.array([query @ key for key in x])
        expected_weights = np.exp(scores) / np.exp(scores).sum()
        np.testing.assert_allclose(weights[i], expected_weights, rtol=1e-12)
        np.testing.assert_allclose(output[i], expected_weights @ x, rtol=1e-12)


def test_simple_self_attention_works_on_batches():
    x = np.random.default_rng(1).normal(size=(2, 5, 3))
    output, weights = simple_self_attention(x)
    assert output.shape == (2, 5, 3)
    assert weights.shape == (2, 5, 5)
    for sequence, sequence_output in zip(x, output, strict=True):
        np.testing.assert_allclose(simple_self_attention(sequence)[0], sequence_output)


def test_a_token_need_not_attend_most_to_itself():
    # A short vector scores higher against a long one pointing the same way than itself.
    _, weights = simple_self_attention([[1.0, 0.0], [3.0, 0.0]])
    assert weights[0, 1] > weights[0, 0]


@PROPERTY_SETTINGS
@given(seed=seeds, n_tokens=st.integers(1, 6), data=st.data())
def test_simple_self_attention_is_permutation_equivariant(seed, n_tokens, data):
    x = np.random.default_rng(seed).normal(size=(n_tokens, 3))
    order = data.draw(permutations(n_tokens))
    output, weights = simple_self_attention(x)
    permuted_output, permuted_weights = simple_self_attention(x[order])
    np.testing.assert_allclose(permuted_output, output[order], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(permuted_weights, weights[order][:, order], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(weights.sum(-1), 1.0)


def test_simple_self_attention_reports_overflow():
    with pytest.raises(ValueError, match=r"scores x xᵀ overflowed the range of float16"):
        simple_self_attention(np.full((2, 4), 200.0, dtype=np.float16))


def test_simple_self_attention_needs_a_sequence():
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., T, D\).*got shape \(3,\)"):
        simple_self_attention([1.0, 2.0, 3.0])


# --- attention_scores ----------------------------------------------------------------------


def test_scores_are_scaled_by_one_over_root_d_k_by_default():
    rng = np.random.default_rng(2)
    q, k = rng.normal(size=(2, 3, 16)), rng.normal(size=(2, 5, 16))
    scores = attention_scores(q, k)
    assert scores.shape == (2, 3, 5)
    np.testing.assert_allclose(scores, q @ k.transpose(0, 2, 1) / 4, rtol=1e-12)
    np.testing.assert_allclose(attention_scores(q, k, scale=1.0), q @ k.transpose(0, 2, 1))


def test_scores_keep_float32():
    q = np.ones((2, 4), dtype=np.float32)
    assert attention_scores(q, q).dtype == np.float32


def test_scores_reject_different_d_k():
    message = (
        r"q and k must have the same last dimension \(D_k\): "
        r"q has shape \(2, 3, 4\), k has shape \(2, 5, 3\)"
    )
    with pytest.raises(ValueError, match=message):
        attention_scores(np.ones((2, 3, 4)), np.ones((2, 5, 3)))


def test_scores_do_not_broadcast_leading_dimensions():
    with pytest.raises(ValueError, match=r"q and k must have the same leading.*\(1, 3, 4\)"):
        attention_scores(np.ones((1, 3, 4)), np.ones((2, 5, 4)))


def test_scores_need_at_least_one_feature():
    with pytest.raises(ValueError, match=r"D_k >= 1: q has shape \(3, 0\)"):
        attention_scores(np.ones((3, 0)), np.ones((2, 0)))


# --- scaled_dot_product_attention: properties ----------------------------------------------


def test_masked_keys_get_weight_exactly_zero_and_empty_rows_get_zeros():
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    mask = np.array(
        [
            [True, False, True, False, False],
            [False, False, False, False, False],
            [True, True, True, True, True],
        ]
    )
    output, weights = scaled_dot_product_attention(q, k, v, mask)
    assert (weights[~mask] == 0.0).all()
    np.testing.assert_array_equal(weights[1], 0.0)
    np.testing.assert_array_equal(output[1], 0.0)
    np.testing.assert_allclose(weights[[0, 2]].sum(-1), 1.0)


@PROPERTY_SETTINGS
@given(shapes=attention_shapes(), seed=seeds, data=st.data())
def test_weights_are_probabilities_and_masked_weights_are_zero(shapes, seed, data):
    rng = np.random.default_rng(seed)
    q, k, v = qkv(shapes, rng)
    scores_shape = (*shapes["leading"], shapes["t_q"], shapes["t_k"])
    mask = random_mask(data.draw(broadcast_shapes_for(scores_shape)), rng)
    output, weights = scaled_dot_product_attention(q, k, v, mask)
    assert output.shape == (*shapes["leading"], shapes["t_q"], shapes["d_v"])
    assert weights.shape == scores_shape
    assert np.isfinite(output).all()
    full_mask = np.broadcast_to(mask, scores_shape)
    assert (weights[~full_mask] == 0.0).all()
    has_key = full_mask.any(axis=-1)
    np.testing.assert_allclose(weights.sum(axis=-1)[has_key], 1.0)
    assert (weights[~has_key] == 0.0).all()
    assert (output[~has_key] == 0.0).all()


@PROPERTY_SETTINGS
@given(seed=seeds, n_tokens=st.integers(1, 6), data=st.data())
def test_self_attention_is_permutation_equivariant(seed, n_tokens, data):
    x = np.random.default_rng(seed).normal(size=(2, n_tokens, 4))
    order = data.draw(permutations(n_tokens))
    output, weights = scaled_dot_product_attention(x, x, x)
    permuted = x[:, order]
    permuted_output, permuted_weights = scaled_dot_product_attention(permuted, permuted, permuted)
    np.testing.assert_allclose(permuted_output, output[:, order], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(
        permuted_weights, weights[:, order][:, :, order], rtol=1e-12, atol=1e-14
    )


@PROPERTY_SETTINGS
@given(seed=seeds, n_keys=st.integers(1, 6), data=st.data())
def test_reordering_keys_with_their_values_does_not_change_the_output(seed, n_keys, data):
    rng = np.random.default_rng(seed)
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(n_keys, 4)), rng.normal(size=(n_keys, 2))
    order = data.draw(permutations(n_keys))
    output, weights = scaled_dot_product_attention(q, k, v)
    reordered_output, reordered_weights = scaled_dot_product_attention(q, k[order], v[order])
    np.testing.assert_allclose(reordered_output, output, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(reordered_weights, weights[:, order], rtol=1e-12, atol=1e-14)


def test_float32_stays_float32():
    q = np.random.default_rng(4).normal(size=(2, 3, 4)).astype(np.float32)
    output, weights = scaled_dot_product_attention(q, q, q, np.ones((3, 3), dtype=bool))
    assert output.dtype == weights.dtype == np.float32


def test_integer_inputs_become_float64():
    output, weights = scaled_dot_product_attention([[1, 0]], [[1, 0], [0, 1]], [[2], [4]])
    assert output.dtype == weights.dtype == np.float64


def test_default_scale_is_one_over_root_d_k():
    rng = np.random.default_rng(5)
    q, k, v = rng.normal(size=(3, 9)), rng.normal(size=(4, 9)), rng.normal(size=(4, 2))
    for result, expected in zip(
        scaled_dot_product_attention(q, k, v),
        scaled_dot_product_attention(q, k, v, scale=1 / 3),
        strict=True,
    ):
        np.testing.assert_array_equal(result, expected)


# --- scaled_dot_product_attention: parity with PyTorch --------------------------------------


def torch_attention(q, k, v, mask, scale):
    """PyTorch's output, and the weights softmax(q kᵀ · scale) with masked scores at -inf."""
    q, k, v = (torch.from_numpy(array) for array in (q, k, v))
    # torch cannot broadcast a 0-d mask; (1, 1) means the same thing.
    mask = None if mask is None else torch.from_numpy(np.atleast_2d(mask))
    output = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    scores = q @ k.transpose(-2, -1) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if mask is not None:
        scores = scores.masked_fill(~mask, -math.inf)
    return output.numpy(), torch.softmax(scores, dim=-1).numpy()


@PROPERTY_SETTINGS
@given(
    shapes=attention_shapes(max_leading_dims=3),
    seed=seeds,
    use_mask=st.booleans(),
    scale=st.none() | st.floats(0.01, 10),
    data=st.data(),
)
def test_matches_torch_scaled_dot_product_attention(shapes, seed, use_mask, scale, data):
    rng = np.random.default_rng(seed)
    q, k, v = qkv(shapes, rng)
    scores_shape = (*shapes["leading"], shapes["t_q"], shapes["t_k"])
    mask = random_mask(data.draw(broadcast_shapes_for(scores_shape)), rng) if use_mask else None
    output, weights = scaled_dot_product_attention(q, k, v, mask, scale)
    expected_output, expected_weights = torch_attention(q, k, v, mask, scale)
    # torch's softmax weights are NaN for a query with nothing to attend to: compare the
    # other rows only.
    allowed = (
        np.ones(scores_shape, dtype=bool) if mask is None else np.broadcast_to(mask, scores_shape)
    )
    has_key = allowed.any(axis=-1)
    np.testing.assert_allclose(output[has_key], expected_output[has_key], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(weights[has_key], expected_weights[has_key], rtol=1e-6, atol=1e-9)


# --- scaled_dot_product_attention: bad input ------------------------------------------------


def make_qkv(q_shape=(2, 3, 4), k_shape=(2, 5, 4), v_shape=(2, 5, 6)):
    return np.ones(q_shape), np.ones(k_shape), np.ones(v_shape)


def test_rejects_different_d_k():
    with pytest.raises(ValueError, match=r"q and k .* last dimension \(D_k\).*\(2, 5, 3\)"):
        scaled_dot_product_attention(*make_qkv(k_shape=(2, 5, 3)))


def test_rejects_keys_and_values_of_different_lengths():
    message = r"k and v must have the same number of positions \(T_k.*\(2, 5, 4\).*\(2, 4, 6\)"
    with pytest.raises(ValueError, match=message):
        scaled_dot_product_attention(*make_qkv(v_shape=(2, 4, 6)))


def test_rejects_different_leading_dimensions():
    message = (
        r"q, k and v must have the same leading.*q has shape \(2, 3, 4\), k has shape \(5, 4\)"
    )
    with pytest.raises(ValueError, match=message):
        scaled_dot_product_attention(*make_qkv(k_shape=(5, 4), v_shape=(5, 6)))


@pytest.mark.parametrize("name", ["q", "k", "v"])
def test_rejects_vectors_instead_of_sequences(name):
    arrays = dict(zip("qkv", make_qkv(), strict=True))
    arrays[name] = np.ones(4)
    with pytest.raises(ValueError, match=rf"{name} must have shape \(\.\.\., T_.*got shape \(4,\)"):
        scaled_dot_product_attention(**arrays)


@pytest.mark.parametrize("name", ["q", "k", "v"])
def test_rejects_nan(name):
    arrays = dict(zip("qkv", make_qkv(), strict=True))
    arrays[name] = arrays[name].copy()
    arrays[name][1, 2, 3] = np.nan
    with pytest.raises(ValueError, match=rf"{name} must not contain NaN.*{name}\[1, 2, 3\] is nan"):
        scaled_dot_product_attention(**arrays)


@pytest.mark.parametrize(
    "mask_shape",
    [(2, 2, 3, 5), (3, 1, 5), (2, 3, 4), (5, 3), (4,)],
    ids=["more dims", "broadcasts scores up", "wrong T_k", "transposed", "wrong 1-D"],
)
def test_rejects_masks_that_do_not_fit_the_scores(mask_shape):
    message = (
        rf"mask must broadcast.*mask has shape \({mask_shape[0]}.*scores have shape \(2, 3, 5\)"
    )
    with pytest.raises(ValueError, match=message):
        scaled_dot_product_attention(*make_qkv(), mask=np.ones(mask_shape, dtype=bool))


@pytest.mark.parametrize("mask", [np.ones((3, 5)), np.ones((3, 5), dtype=int), [[1, 0, 1, 0, 1]]])
def test_rejects_non_boolean_masks(mask):
    with pytest.raises(TypeError, match="mask must be a boolean array .True = may attend."):
        scaled_dot_product_attention(*make_qkv(), mask=mask)


@pytest.mark.parametrize("scale", [0.0, -1.0, np.nan, np.inf])
def test_rejects_a_scale_that_is_not_finite_and_positive(scale):
    with pytest.raises(ValueError, match="scale must be a finite positive number"):
        scaled_dot_product_attention(*make_qkv(), scale=scale)


def test_rejects_a_scale_that_is_not_a_number():
    with pytest.raises(TypeError, match="scale must be a positive real number, got '0.5'"):
        scaled_dot_product_attention(*make_qkv(), scale="0.5")


def test_reports_overflow_of_the_scores_instead_of_nan():
    q = np.full((3, 4), 300.0, dtype=np.float16)
    with pytest.raises(ValueError, match="attention scores q kᵀ · scale overflowed.*float16"):
        scaled_dot_product_attention(q, q, q)


# --- What PyTorch gives a query with nothing to attend to (the docstring's claims) ----------


def empty_row_of_torch(output):
    """PyTorch's output row for the query that may attend to nothing: NaN, zeros or other."""
    row = output.detach()
    return "NaN" if row.isnan().any() else "zeros" if (row == 0).all() else "other"


def causal_with_an_empty_first_row(t):
    """(T, T) boolean, True = IGNORE (nn.MultiheadAttention's reading): query 0 sees nothing."""
    ignore = ~torch.tril(torch.ones(t, t, dtype=torch.bool))
    ignore[0] = True
    return ignore


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("leading", [(2,), (2, 3)], ids=["3-D", "4-D"])
@pytest.mark.parametrize("mask_kind", ["boolean", "float -inf"])
def test_torch_scaled_dot_product_attention_gives_an_empty_row_zeros(dtype, leading, mask_kind):
    """The docstring's claim about torch's function (CPU): zeros, like ours, not NaN."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(*leading, 5, 4, generator=generator).to(getattr(torch, dtype))
    keep = ~causal_with_an_empty_first_row(5)  # (T, T), True = take part
    mask = keep if mask_kind == "boolean" else torch.zeros(5, 5, dtype=x.dtype)
    if mask_kind != "boolean":
        mask = mask.masked_fill(~keep, -math.inf)
    output = torch.nn.functional.scaled_dot_product_attention(x, x, x, attn_mask=mask)
    assert empty_row_of_torch(output[..., 0, :]) == "zeros"
    assert torch.isfinite(output[..., 1:, :]).all()
    assert empty_row_of_torch(torch.softmax(torch.full((5,), -math.inf), dim=-1)) == "NaN"


def multihead_empty_row(
    batch_first, one_tensor, mode, grad, need_weights, n_heads, dtype, float_mask=False
):
    """What nn.MultiheadAttention returns for the query with nothing to attend to, given a
    boolean attn_mask (True = ignore) or the same mask as a float one (0 = keep, -inf = hide)."""
    d_model, t = 12, 5  # 12 features: 1, 2, 3 and 4 heads all divide them
    generator = torch.Generator().manual_seed(n_heads)
    x = torch.randn(2, t, d_model, generator=generator, dtype=dtype)  # (B, T, D)
    layer = torch.nn.MultiheadAttention(d_model, n_heads, batch_first=batch_first, dtype=dtype)
    layer.train(mode == "train")
    inputs = x if batch_first else x.transpose(0, 1)  # (T, B, D) when not batch-first
    other = inputs if one_tensor else inputs.clone()  # equal values; another tensor or not
    ignore = causal_with_an_empty_first_row(t)  # (T, T) boolean, True = ignore
    if float_mask:  # the additive form: 0 where a key is kept, -inf where it is hidden
        ignore = torch.zeros(t, t, dtype=dtype).masked_fill(ignore, -math.inf)
    with torch.set_grad_enabled(grad):
        output, _ = layer(
            inputs,
            other,
            other,
            attn_mask=ignore,
            need_weights=need_weights,
        )
    rest = output[:, 1:] if batch_first else output[1:]  # every query that has a key
    assert torch.isfinite(rest).all()
    return empty_row_of_torch(output[0, 0])  # query 0 of sentence 0, in either layout


def test_multihead_attention_gives_an_empty_row_nan_with_weights_or_on_its_fast_path():
    """The grid behind attention.py's docstring and chapter 6's "Going deeper: rows with
    nothing to attend to, in PyTorch" (torch 2.13.0, CPU): the row is NaN exactly when
    need_weights=True, or on the fast path, which takes eval(), no gradients, an even number
    of heads, batch_first=True, ONE tensor passed as query, key and value, and a boolean
    attn_mask (a float 0/-inf mask leaves the path); everywhere else it is zeros."""
    grid = itertools.product(
        (True, False),  # batch_first
        (True, False),  # one tensor as query, key and value (or key and value a copy)
        ("train", "eval"),
        (True, False),  # gradients recorded
        (True, False),  # need_weights
        (1, 2, 3, 4),  # heads
        (torch.float32, torch.float64),
        (False, True),  # a float mask (0 / -inf) instead of the boolean one
    )
    wrong = []
    for batch_first, one_tensor, mode, grad, need_weights, n_heads, dtype, float_mask in grid:
        fast_path = (
            batch_first
            and one_tensor
            and mode == "eval"
            and not grad
            and n_heads % 2 == 0
            and not float_mask
        )
        expected = "NaN" if need_weights or fast_path else "zeros"
        case = (batch_first, one_tensor, mode, grad, need_weights, n_heads, dtype, float_mask)
        got = multihead_empty_row(*case)
        if got != expected:
            wrong.append((*case, got))
    assert not wrong, wrong


def test_the_fast_path_conditions_the_documentation_leaves_out():
    """Chapter 6's claim about where the fast path's conditions are written (torch 2.13.0):
    the class docstring of nn.MultiheadAttention lists them (forward's does not mention the
    path), but not the even number of heads nor the boolean mask, which only its source
    checks (and the grid above measures)."""
    layer = torch.nn.MultiheadAttention
    assert "fastpath inference" in layer.__doc__ and "batch_first" in layer.__doc__
    assert "fast" not in layer.forward.__doc__.lower()
    assert "even" not in layer.__doc__ and "floating" not in layer.__doc__
    source = inspect.getsource(layer.forward)
    assert "self.num_heads is not even" in source
    assert "floating-point masks are not supported for fast path" in source
