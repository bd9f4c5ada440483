"""Tests of selfattn_lib.encoder: layer norm and RMS norm equal PyTorch's, the feed-forward
network and the sublayer connection do what their formulas say, and the NumPy encoder layer
equals the torch EncoderLayer and torch.nn.TransformerEncoderLayer with the same weights."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import PROPERTY_SETTINGS, seeds

from selfattn_lib.encoder import (
    encoder_layer,
    feed_forward,
    init_encoder_layer_params,
    layer_norm,
    rms_norm,
    sublayer_connection,
)
from selfattn_lib.masks import padding_mask

TOLERANCES = {"rtol": 1e-6, "atol": 1e-9}


@PROPERTY_SETTINGS
@given(seed=seeds, d_model=st.integers(2, 9), scale=st.floats(1e-2, 1e3))
def test_layer_norm_gives_zero_mean_and_unit_variance_before_gain_and_bias(seed, d_model, scale):
    x = np.random.default_rng(seed).normal(scale=scale, size=(3, d_model)) + 5.0
    eps = 1e-5
    normed = layer_norm(x, np.ones(d_model), np.zeros(d_model), eps=eps)
    variance = x.var(axis=-1)
    assert np.allclose(normed.mean(axis=-1), 0.0, atol=1e-9)
    # (x - mean) / sqrt(var + eps) has variance var / (var + eps): 1 once var >> eps.
    assert np.allclose(normed.var(axis=-1), variance / (variance + eps), rtol=1e-9)


def test_layer_norm_forgets_each_tokens_mean_and_scale_so_gain_and_bias_cannot_undo_it():
    """Chapter 9, *Layer normalization*: LN(a x + b) = LN(x) for every a > 0 and b (up to eps),
    so tokens that differ only in their mean and scale get one output, and no gain and bias
    (nor any function of the output) can give them back. Batch norm's per-feature statistics,
    by contrast, are undone by gain = std and bias = mean."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1000, 8))  # (T, D)
    scale, shift = rng.uniform(0.2, 3.0, size=(1000, 1)), rng.normal(size=(1000, 1))
    gain, bias = rng.normal(size=8), rng.normal(size=8)
    moved = scale * x + shift  # each token its own scale and mean
    assert np.allclose(layer_norm(moved, gain, bias, eps=1e-12), layer_norm(x, gain, bias, 1e-12))
    # The best per-feature gain and bias (least squares) that map LN(moved) back to moved
    # leave a large part of each feature unexplained.
    normed = layer_norm(moved, np.ones(8), np.zeros(8))
    unexplained = []
    for i in range(8):
        design = np.stack([normed[:, i], np.ones(len(normed))], axis=1)  # (T, 2)
        coefficients, *_ = np.linalg.lstsq(design, moved[:, i], rcond=None)
        residual = design @ coefficients - moved[:, i]
        unexplained.append(residual.var() / moved[:, i].var())
    assert min(unexplained) > 0.2
    batch_normed = (moved - moved.mean(axis=0)) / moved.std(axis=0)  # per feature
    assert np.allclose(batch_normed * moved.std(axis=0) + moved.mean(axis=0), moved)


@PROPERTY_SETTINGS
@given(seed=seeds, d_model=st.integers(1, 9))
def test_rms_norm_gives_unit_root_mean_square_and_keeps_the_direction(seed, d_model):
    x = np.random.default_rng(seed).normal(size=(2, 3, d_model)) * 4
    eps = 1e-6
    normed = rms_norm(x, np.ones(d_model), eps=eps)
    mean_square = (x**2).mean(axis=-1)
    # x / sqrt(ms + eps) has root mean square sqrt(ms / (ms + eps)): 1 once ms >> eps.
    assert np.allclose((normed**2).mean(axis=-1), mean_square / (mean_square + eps), rtol=1e-9)
    assert np.allclose(normed * np.sqrt(mean_square + eps)[..., None], x, rtol=1e-9)


def test_the_norms_equal_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x, gain, bias = rng.normal(size=(2, 4, 6)) * 3, rng.normal(size=6), rng.normal(size=6)
    tensors = [torch.from_numpy(a) for a in (x, gain, bias)]
    expected = torch.nn.functional.layer_norm(tensors[0], (6,), tensors[1], tensors[2], 1e-5)
    assert np.allclose(layer_norm(x, gain, bias), expected.numpy(), **TOLERANCES)
    expected = torch.nn.functional.rms_norm(tensors[0], (6,), tensors[1], 1e-6)
    assert np.allclose(rms_norm(x, gain, 1e-6), expected.numpy(), **TOLERANCES)


def test_feed_forward_is_relu_between_two_affine_maps():
    rng = np.random.default_rng(1)
    x, w_1, b_1 = rng.normal(size=(2, 3, 4)), rng.normal(size=(4, 7)), rng.normal(size=7)
    w_2, b_2 = rng.normal(size=(7, 4)), rng.normal(size=4)
    hidden = x @ w_1 + b_1
    assert (hidden < 0).any()  # the ReLU has something to do
    expected = np.where(hidden > 0, hidden, 0.0) @ w_2 + b_2
    assert np.allclose(feed_forward(x, w_1, b_1, w_2, b_2), expected)


def test_sublayer_connection_places_the_norm_after_or_before():
    x = np.arange(6.0).reshape(1, 2, 3)
    calls = []

    def sublayer(v):
        calls.append("sublayer")
        return v * 10

    def norm(v):
        calls.append("norm")
        return v - 1

    assert np.array_equal(sublayer_connection(x, sublayer, norm), (x + 10 * x) - 1)
    assert calls == ["sublayer", "norm"]
    calls.clear()
    assert np.array_equal(sublayer_connection(x, sublayer, norm, norm_first=True), x + 10 * (x - 1))
    assert calls == ["norm", "sublayer"]


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_equals_the_torch_layers(norm_first):
    torch = pytest.importorskip("torch")
    from selfattn_lib.transformer import EncoderLayer, MultiHeadAttention

    rng = np.random.default_rng(9)
    params = init_encoder_layer_params(8, 16, rng)
    x = rng.normal(size=(2, 5, 8))
    mask = padding_mask(np.array([5, 3]), 5)  # (B, 1, T)
    ours = EncoderLayer(8, 2, 16, norm_first=norm_first).double().eval()
    ours.self_attention = MultiHeadAttention.from_params(params["attention"], n_heads=2).double()
    with torch.no_grad():
        for index, (weight, bias) in enumerate((("w_1", "b_1"), ("w_2", "b_2")), start=1):
            linear = getattr(ours.feed_forward, f"w_{index}")
            linear.weight.copy_(torch.from_numpy(params[weight].T))
            linear.bias.copy_(torch.from_numpy(params[bias]))
            norm = getattr(ours, f"norm_{index}")
            norm.weight.copy_(torch.from_numpy(params[f"gain_{index}"]))
            norm.bias.copy_(torch.from_numpy(params[f"bias_{index}"]))
        expected = ours(torch.from_numpy(x), torch.from_numpy(mask)).numpy()
        theirs = torch.nn.TransformerEncoderLayer(8, 2, 16, 0.0, batch_first=True)
        theirs = theirs.double().eval()
        theirs.norm_first = norm_first
        theirs.load_state_dict(
            {
                "self_attn.in_proj_weight": torch.cat(
                    [ours.self_attention.w_q.weight, ours.self_attention.w_k.weight,
                     ours.self_attention.w_v.weight]
                ),
                "self_attn.in_proj_bias": torch.cat(
                    [ours.self_attention.w_q.bias, ours.self_attention.w_k.bias,
                     ours.self_attention.w_v.bias]
                ),
                "self_attn.out_proj.weight": ours.self_attention.w_o.weight,
                "self_attn.out_proj.bias": ours.self_attention.w_o.bias,
                "linear1.weight": ours.feed_forward.w_1.weight,
                "linear1.bias": ours.feed_forward.w_1.bias,
                "linear2.weight": ours.feed_forward.w_2.weight,
                "linear2.bias": ours.feed_forward.w_2.bias,
                "norm1.weight": ours.norm_1.weight,
                "norm1.bias": ours.norm_1.bias,
                "norm2.weight": ours.norm_2.weight,
                "norm2.bias": ours.norm_2.bias,
            }
        )  # fmt: skip
        padding = torch.from_numpy(~mask[:, 0, :])  # torch: True = ignore
        pytorch = theirs(torch.from_numpy(x), src_key_padding_mask=padding).numpy()
    got = encoder_layer(x, params, n_heads=2, mask=mask, norm_first=norm_first)
    assert np.allclose(got, expected, **TOLERANCES)
    assert np.allclose(got, pytorch, **TOLERANCES)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: layer_norm([[1.0, 2.0]], np.ones(3), np.zeros(2)), ValueError, "gain"),
        (lambda: layer_norm([[1.0, 2.0]], np.ones(2), np.zeros(2), eps=0), ValueError, "eps"),
        (lambda: layer_norm([[1.0, 2.0]], np.ones(2), np.zeros(2), eps="1"), TypeError, "eps"),
        (lambda: rms_norm("x", np.ones(2)), TypeError, "x"),
        (lambda: rms_norm([[np.nan, 1.0]], np.ones(2)), ValueError, "x"),
        (
            lambda: feed_forward(
                np.ones((1, 2)), np.ones((3, 4)), np.ones(4), np.ones((4, 2)), np.ones(2)
            ),
            ValueError,
            "w_1",
        ),  # fmt: skip
        (lambda: sublayer_connection(np.ones((1, 2)), "f", lambda v: v), TypeError, "sublayer"),
        (
            lambda: sublayer_connection(np.ones((1, 2)), lambda v: v[0], lambda v: v),
            ValueError,
            "sublayer",
        ),  # fmt: skip
        (
            lambda: sublayer_connection(np.ones((1, 2)), abs, abs, norm_first="yes"),
            TypeError,
            "norm_first",
        ),  # fmt: skip
        (lambda: init_encoder_layer_params(8, 16, 0), TypeError, "rng"),
        (lambda: init_encoder_layer_params(8, 0, np.random.default_rng()), ValueError, "d_ff"),
        (lambda: encoder_layer(np.ones((1, 2, 8)), [], 2), TypeError, "params"),
        (lambda: encoder_layer(np.ones((1, 2, 8)), {"w_1": 0}, 2), ValueError, "params"),
    ],
)
def test_bad_input_is_refused_with_a_clear_error(call, error, match):
    with pytest.raises(error, match=match):
        call()
