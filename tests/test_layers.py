"""Tests of selfattn_lib.layers: every layer equals its NumPy twin (same weights) and
PyTorch's own layer with the weights copied, in float64, over several shapes and masks; bad
sizes and masks fail clearly."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import PROPERTY_SETTINGS, seeds

from selfattn_lib.masks import causal_mask, combine_masks, padding_mask
from selfattn_lib.multihead import MultiHeadParams, multi_head_attention

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from selfattn_lib.layers import LayerCache  # noqa: E402
from selfattn_lib.transformer import (  # noqa: E402
    Decoder,
    DecoderLayer,
    Encoder,
    EncoderLayer,
    FeedForward,
    MultiHeadAttention,
    masked_softmax,
)

pytestmark = pytest.mark.filterwarnings("error")
TOLERANCES = {"rtol": 1e-6, "atol": 1e-9}


def to_numpy(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().numpy()


@st.composite
def attention_case(draw: st.DrawFn) -> dict:
    """Sizes, inputs and a course-convention mask (B, T_q, T_k) for one attention call."""
    rng = np.random.default_rng(draw(seeds))
    batch_size, t_q, n_heads, d_head = (draw(st.integers(1, 3)) for _ in range(4))
    cross = draw(st.booleans())
    t_k = draw(st.integers(1, 5)) if cross else t_q
    lengths = rng.integers(1, t_k + 1, size=batch_size)  # every sequence keeps a key
    mask = padding_mask(lengths, t_k)  # (B, 1, T_k)
    if draw(st.booleans()):
        mask = combine_masks(mask, causal_mask(t_q, t_k))  # (B, T_q, T_k)
    d_model = n_heads * d_head
    x_q = rng.normal(size=(batch_size, t_q, d_model))
    return {
        "rng": rng,
        "n_heads": n_heads,
        "x_q": x_q,
        "x_kv": rng.normal(size=(batch_size, t_k, d_model)) if cross else x_q,
        "mask": mask,
        "lengths": lengths,
        "bias": draw(st.booleans()),
    }


def random_params(d_model: int, rng: np.random.Generator, *, bias: bool) -> MultiHeadParams:
    weights = [rng.normal(size=(d_model, d_model)) / np.sqrt(d_model) for _ in range(4)]
    biases = [rng.normal(size=d_model) if bias else None for _ in range(4)]
    return MultiHeadParams(*weights, *biases)


# --- MultiHeadAttention ---------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(case=attention_case())
def test_multi_head_attention_equals_its_numpy_twin(case):
    d_model = case["x_q"].shape[-1]
    params = random_params(d_model, case["rng"], bias=case["bias"])
    expected_output, expected_weights = multi_head_attention(
        case["x_q"], case["x_kv"], params, case["n_heads"], case["mask"]
    )
    module = MultiHeadAttention.from_params(params, case["n_heads"]).eval()
    x_q, x_kv = torch.from_numpy(case["x_q"]), torch.from_numpy(case["x_kv"])
    output, weights = module(x_q, x_kv, x_kv, torch.from_numpy(case["mask"]), True)
    np.testing.assert_allclose(to_numpy(output), expected_output, **TOLERANCES)
    np.testing.assert_allclose(to_numpy(weights), expected_weights, **TOLERANCES)


@PROPERTY_SETTINGS
@given(case=attention_case())
def test_multi_head_attention_equals_torch_multihead_attention(case):
    d_model = case["x_q"].shape[-1]
    torch_layer = nn.MultiheadAttention(
        d_model, case["n_heads"], bias=case["bias"], batch_first=True, dtype=torch.float64
    ).eval()
    module = MultiHeadAttention.from_torch(torch_layer).eval()
    x_q, x_kv = torch.from_numpy(case["x_q"]), torch.from_numpy(case["x_kv"])
    mask = torch.from_numpy(case["mask"]).expand(x_q.shape[0], x_q.shape[1], x_kv.shape[1])
    with torch.no_grad():
        output, weights = module(x_q, x_kv, x_kv, mask, return_weights=True)
        expected_output, expected_weights = torch_layer(
            x_q,
            x_kv,
            x_kv,  # torch's attn_mask is (B·H, T_q, T_k) and True means "may NOT attend"
            attn_mask=~mask.repeat_interleave(case["n_heads"], dim=0),
            average_attn_weights=False,
        )
    # torch gives NaN for a query with nothing to attend to (possible with a bottom-right
    # causal mask when T_q > T_k): compare the other rows; ours are zero there.
    has_key = to_numpy(mask.any(-1))  # (B, T_q)
    np.testing.assert_allclose(
        to_numpy(output)[has_key], to_numpy(expected_output)[has_key], **TOLERANCES
    )
    np.testing.assert_allclose(
        to_numpy(weights).transpose(0, 2, 1, 3)[has_key],  # (B, T_q, H, T_k) rows
        to_numpy(expected_weights).transpose(0, 2, 1, 3)[has_key],
        **TOLERANCES,
    )
    assert not to_numpy(weights).transpose(0, 2, 1, 3)[~has_key].any()


@PROPERTY_SETTINGS
@given(case=attention_case(), training=st.booleans())
def test_without_weights_the_fused_path_gives_the_same_output_and_gradients(case, training):
    """Weights are opt-in: without them, F.scaled_dot_product_attention computes the output;
    it equals the explicit path's (float64), gradients included."""
    d_model = case["x_q"].shape[-1]
    params = random_params(d_model, case["rng"], bias=case["bias"])
    module = MultiHeadAttention.from_params(params, case["n_heads"]).train(training)
    mask = torch.from_numpy(case["mask"])
    outputs, gradients = [], []
    for return_weights in (True, False):
        x_q = torch.from_numpy(case["x_q"]).requires_grad_()
        x_kv = x_q if case["x_kv"] is case["x_q"] else torch.from_numpy(case["x_kv"])
        result = module(x_q, x_kv, x_kv, mask, return_weights)
        output = result[0] if return_weights else result
        output.pow(2).sum().backward()
        outputs.append(to_numpy(output))
        gradients.append(to_numpy(x_q.grad))
    np.testing.assert_allclose(outputs[1], outputs[0], **TOLERANCES)
    np.testing.assert_allclose(gradients[1], gradients[0], **TOLERANCES)


def test_the_weights_are_computed_only_when_asked_for_or_when_a_query_sees_no_key(monkeypatch):
    import selfattn_lib.layers as layers

    calls = []

    def counted(scores, mask):
        calls.append(scores.shape)
        return masked_softmax(scores, mask)

    monkeypatch.setattr(layers, "masked_softmax", counted)
    torch.manual_seed(0)
    module = MultiHeadAttention(8, 2).double().eval()
    x = torch.randn(2, 4, 8, dtype=torch.float64)
    causal = torch.ones(4, 4, dtype=torch.bool).tril()
    module(x, x, x, causal)  # fused
    module(x, x, x)
    assert calls == []
    module(x, x, x, causal, return_weights=True)
    assert calls == [(2, 2, 4, 4)]
    no_key = causal.clone()
    no_key[1] = False  # query 1 sees nothing: the explicit path gives it zeros
    output = module(x, x, x, no_key)
    assert len(calls) == 2
    assert torch.allclose(output[:, 1], module.w_o.bias.expand(2, 8))
    dropping = MultiHeadAttention(8, 2, dropout=0.5).double().train()
    dropping(x, x, x, causal)  # dropout acts on the weights: they are computed
    assert len(calls) == 3


def test_parameters_round_trip_between_numpy_and_torch():
    params = random_params(6, np.random.default_rng(0), bias=True)
    back = MultiHeadAttention.from_params(params, n_heads=3).to_params()
    for name in ("w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o"):
        assert np.array_equal(getattr(back, name), getattr(params, name)), name


def test_initial_weights_are_xavier_uniform_with_zero_biases():
    torch.manual_seed(0)
    module = MultiHeadAttention(64, 4)
    limit = np.sqrt(6 / (64 + 64))
    for projection in (module.w_q, module.w_k, module.w_v, module.w_o):
        weight = to_numpy(projection.weight)
        assert np.abs(weight).max() <= limit and np.abs(weight).max() > 0.9 * limit
        assert not projection.bias.any()


def test_a_query_with_nothing_to_attend_to_gets_zeros_and_finite_gradients():
    torch.manual_seed(0)
    module = MultiHeadAttention(4, 2).double()
    x = torch.randn(1, 3, 4, dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[True, True, False], [False, False, False], [True, False, False]])
    output, weights = module(x, x, x, mask, return_weights=True)
    assert not weights[:, :, 1].any()
    assert torch.allclose(output[0, 1], module.w_o.bias)  # zero heads → only the bias
    output.sum().backward()
    assert torch.isfinite(x.grad).all()


def test_masked_keys_get_exactly_zero_weight_and_rows_sum_to_one():
    scores = torch.randn(2, 3, 4, dtype=torch.float64)
    mask = torch.rand(2, 3, 4) < 0.6
    weights = masked_softmax(scores, mask)
    assert (weights[~mask] == 0).all()
    sums = weights.sum(-1)
    expected = mask.any(-1).double()
    assert torch.allclose(sums, expected)


def test_dropout_acts_only_in_training_mode():
    torch.manual_seed(0)
    module = MultiHeadAttention(8, 2, dropout=0.5)
    x = torch.randn(2, 5, 8)
    module.eval()
    assert torch.equal(module(x, x, x), module(x, x, x))
    module.train()
    assert not torch.equal(module(x, x, x), module(x, x, x))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"d_model": 10, "n_heads": 4}, ValueError, "divisible by n_heads"),
        ({"d_model": 0, "n_heads": 1}, ValueError, "d_model must be a positive integer"),
        ({"d_model": 8, "n_heads": 2.0}, TypeError, "n_heads must be a positive integer"),
        ({"d_model": 8, "n_heads": 2, "dropout": 1.0}, ValueError, "dropout"),
    ],
)
def test_bad_sizes_are_rejected(kwargs, error, match):
    with pytest.raises(error, match=match):
        MultiHeadAttention(**kwargs)


@pytest.mark.parametrize(
    ("mask", "error", "match"),
    [
        (torch.ones(3, 4), TypeError, "boolean"),
        (np.ones((3, 4), dtype=bool), TypeError, "torch.Tensor"),
        (torch.ones(3, 5, dtype=torch.bool), ValueError, r"\(1, 3, 4\)"),
        (torch.ones(2, 3, 4, dtype=torch.bool), ValueError, r"mask has shape \(2, 3, 4\)"),
        (torch.ones(1, 1, 1, 3, 4, dtype=torch.bool), ValueError, "without changing it"),
    ],
)
def test_mismatched_masks_are_rejected(mask, error, match):
    module = MultiHeadAttention(4, 2)
    query, key = torch.randn(1, 3, 4), torch.randn(1, 4, 4)
    with pytest.raises(error, match=match):
        module(query, key, key, mask)


@pytest.mark.parametrize(
    ("query", "key", "error", "match"),
    [
        (torch.randn(3, 4), torch.randn(1, 3, 4), ValueError, r"query must have shape \(B, T, D\)"),
        (torch.randn(1, 3, 5), torch.randn(1, 3, 4), ValueError, "D = d_model = 4"),
        (torch.randn(2, 3, 4), torch.randn(1, 3, 4), ValueError, "same batch size"),
        (torch.ones(1, 3, 4, dtype=torch.long), torch.randn(1, 3, 4), TypeError, "floating"),
    ],
)
def test_bad_inputs_are_rejected(query, key, error, match):
    with pytest.raises(error, match=match):
        MultiHeadAttention(4, 2)(query, key, key)


def test_from_torch_rejects_other_layers():
    with pytest.raises(TypeError, match="nn.MultiheadAttention"):
        MultiHeadAttention.from_torch(nn.Linear(4, 4))
    with pytest.raises(ValueError, match="kdim"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(4, 2, kdim=3, vdim=3))


# --- NumPy twins of the layers: layer norm, feed-forward, encoder and decoder layers ---------


def layer_norm(x: np.ndarray, norm: nn.LayerNorm) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    variance = x.var(axis=-1, keepdims=True)  # biased, as in the paper and torch
    normalized = (x - mean) / np.sqrt(variance + norm.eps)
    return normalized * to_numpy(norm.weight) + to_numpy(norm.bias)


def feed_forward(x: np.ndarray, module: FeedForward) -> np.ndarray:
    hidden = np.maximum(0, x @ to_numpy(module.w_1.weight).T + to_numpy(module.w_1.bias))
    return hidden @ to_numpy(module.w_2.weight).T + to_numpy(module.w_2.bias)


def attend(attention: MultiHeadAttention, x_q, x_kv, mask) -> np.ndarray:
    return multi_head_attention(x_q, x_kv, attention.to_params(), attention.n_heads, mask)[0]


def numpy_encoder_layer(layer: EncoderLayer, x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    if layer.norm_first:
        normed = layer_norm(x, layer.norm_1)
        x = x + attend(layer.self_attention, normed, normed, mask)
        return x + feed_forward(layer_norm(x, layer.norm_2), layer.feed_forward)
    x = layer_norm(x + attend(layer.self_attention, x, x, mask), layer.norm_1)
    return layer_norm(x + feed_forward(x, layer.feed_forward), layer.norm_2)


def numpy_decoder_layer(layer: DecoderLayer, x, memory, self_mask, memory_mask) -> np.ndarray:
    if layer.norm_first:
        normed = layer_norm(x, layer.norm_1)
        x = x + attend(layer.self_attention, normed, normed, self_mask)
        x = x + attend(layer.cross_attention, layer_norm(x, layer.norm_2), memory, memory_mask)
        return x + feed_forward(layer_norm(x, layer.norm_3), layer.feed_forward)
    x = layer_norm(x + attend(layer.self_attention, x, x, self_mask), layer.norm_1)
    x = layer_norm(x + attend(layer.cross_attention, x, memory, memory_mask), layer.norm_2)
    return layer_norm(x + feed_forward(x, layer.feed_forward), layer.norm_3)


def randomize_norms(module: nn.Module, generator: torch.Generator) -> None:
    """Give every layer norm a non-trivial gain and bias (torch starts them at 1 and 0)."""
    with torch.no_grad():
        for norm in (m for m in module.modules() if isinstance(m, nn.LayerNorm)):
            norm.weight.copy_(1 + 0.3 * torch.randn(norm.weight.shape, generator=generator))
            norm.bias.copy_(0.3 * torch.randn(norm.bias.shape, generator=generator))


LAYER_CASES = [  # (B, T_src, T_tgt, D, H, d_ff)
    (1, 1, 1, 2, 1, 3),
    (2, 5, 4, 12, 3, 20),
    (3, 7, 6, 16, 4, 8),
    (2, 3, 8, 6, 2, 24),
]


def padded_source(batch_size: int, t_src: int, rng: np.random.Generator):
    lengths = rng.integers(1, t_src + 1, size=batch_size)
    lengths[0] = t_src
    return lengths, padding_mask(lengths, t_src)  # (B,), (B, 1, T_src)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
@pytest.mark.parametrize(
    ("batch_size", "t_src", "t_tgt", "d_model", "n_heads", "d_ff"), LAYER_CASES
)
def test_encoder_layer_equals_torch_and_numpy(
    batch_size, t_src, t_tgt, d_model, n_heads, d_ff, norm_first
):
    generator = torch.Generator().manual_seed(d_model)
    torch.manual_seed(d_model)
    torch_layer = nn.TransformerEncoderLayer(
        d_model, n_heads, d_ff, batch_first=True, norm_first=norm_first, dtype=torch.float64
    ).eval()
    randomize_norms(torch_layer, generator)
    layer = EncoderLayer.from_torch(torch_layer).eval()
    rng = np.random.default_rng(t_src)
    x = rng.normal(size=(batch_size, t_src, d_model))
    lengths, mask = padded_source(batch_size, t_src, rng)
    with torch.no_grad():
        output = to_numpy(layer(torch.from_numpy(x), torch.from_numpy(mask)))
        expected = to_numpy(
            torch_layer(torch.from_numpy(x), src_key_padding_mask=torch.from_numpy(~mask[:, 0]))
        )
    real = mask[:, 0]  # torch's fast path may leave padded positions at 0: compare real ones
    np.testing.assert_allclose(output[real], expected[real], **TOLERANCES)
    np.testing.assert_allclose(output, numpy_encoder_layer(layer, x, mask), **TOLERANCES)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
@pytest.mark.parametrize(
    ("batch_size", "t_src", "t_tgt", "d_model", "n_heads", "d_ff"), LAYER_CASES
)
def test_decoder_layer_equals_torch_and_numpy(
    batch_size, t_src, t_tgt, d_model, n_heads, d_ff, norm_first
):
    generator = torch.Generator().manual_seed(d_model)
    torch.manual_seed(d_model)
    torch_layer = nn.TransformerDecoderLayer(
        d_model, n_heads, d_ff, batch_first=True, norm_first=norm_first, dtype=torch.float64
    ).eval()
    randomize_norms(torch_layer, generator)
    layer = DecoderLayer.from_torch(torch_layer).eval()
    rng = np.random.default_rng(t_tgt)
    x = rng.normal(size=(batch_size, t_tgt, d_model))
    memory = rng.normal(size=(batch_size, t_src, d_model))
    _, memory_mask = padded_source(batch_size, t_src, rng)
    self_mask = causal_mask(t_tgt)
    with torch.no_grad():
        output = to_numpy(
            layer(
                torch.from_numpy(x),
                torch.from_numpy(memory),
                torch.from_numpy(self_mask),
                torch.from_numpy(memory_mask),
            )
        )
        expected = to_numpy(
            torch_layer(
                torch.from_numpy(x),
                torch.from_numpy(memory),
                tgt_mask=torch.from_numpy(~self_mask),
                memory_key_padding_mask=torch.from_numpy(~memory_mask[:, 0]),
            )
        )
    np.testing.assert_allclose(output, expected, **TOLERANCES)
    numpy_output = numpy_decoder_layer(layer, x, memory, self_mask, memory_mask)
    np.testing.assert_allclose(output, numpy_output, **TOLERANCES)


def test_feed_forward_is_applied_to_each_position_separately():
    torch.manual_seed(0)
    module = FeedForward(6, 10).double()
    x = torch.randn(2, 4, 6, dtype=torch.float64)
    whole = module(x)
    for position in range(4):
        alone = module(x[:, position : position + 1])
        assert torch.allclose(whole[:, position : position + 1], alone)
    np.testing.assert_allclose(to_numpy(whole), feed_forward(to_numpy(x), module), **TOLERANCES)


def test_encoder_stack_equals_torch_transformer_encoder():
    torch.manual_seed(1)
    torch_layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, dtype=torch.float64)
    torch_encoder = nn.TransformerEncoder(torch_layer, 3, enable_nested_tensor=False).eval()
    encoder = Encoder(8, 2, 16, 3).double().eval()
    for ours, theirs in zip(encoder.layers, torch_encoder.layers, strict=True):
        ours.load_state_dict(EncoderLayer.from_torch(theirs).state_dict())
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    with torch.no_grad():
        output, weights = encoder(x, return_weights=True)
        expected = torch_encoder(x)
    np.testing.assert_allclose(to_numpy(output), to_numpy(expected), **TOLERANCES)
    assert [tuple(w.shape) for w in weights] == [(2, 2, 5, 5)] * 3


@pytest.mark.parametrize(
    ("change", "zero_at_the_padding"),
    [
        ({}, True),  # chapter 9's case: post-norm, 2 heads, padding at the end, batch_first
        ({"n_heads": 1}, False),  # an odd number of heads
        ({"left_padding": True}, False),  # the padding in front
        ({"batch_first": False}, False),
        ({"norm_first": True}, False),
        ({"grad": True}, False),
    ],
)
def test_torch_transformer_encoder_returns_zeros_at_the_padding_only_on_its_fast_path(
    change, zero_at_the_padding
):
    """Chapter 9, *a whole stack, and its padding*: torch 2.13.0's nn.TransformerEncoder (six
    post-norm layers, D = 8, float64, evaluation mode, no gradients, a src_key_padding_mask)
    computes the real tokens only and returns 0 at the padding when its fast path's other
    conditions hold (batch_first=True, an even number of heads, padding at the end); change
    any one of these and it returns ordinary vectors there."""
    import warnings

    options = {"n_heads": 2, "left_padding": False, "batch_first": True}
    options |= {"norm_first": False, "grad": False} | change
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(
        8, options["n_heads"], 32, batch_first=options["batch_first"],
        norm_first=options["norm_first"], dtype=torch.float64,
    )  # fmt: skip
    real = torch.tensor([[True] * 4, [True, True, False, False]])  # (B, T)
    if options["left_padding"]:
        real = real.flip(-1)
    x = torch.randn(2, 4, 8, dtype=torch.float64)  # (B, T, D)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "enable_nested_tensor is True, but ..."
        stack = nn.TransformerEncoder(layer, 6).eval()
        inputs = x if options["batch_first"] else x.transpose(0, 1)
        with torch.enable_grad() if options["grad"] else torch.no_grad():
            output = stack(inputs, src_key_padding_mask=~real)
    if not options["batch_first"]:
        output = output.transpose(0, 1)
    at_the_padding = output[~real].abs().max().item()
    assert (at_the_padding == 0.0) == zero_at_the_padding, at_the_padding


def test_pre_norm_stacks_end_with_a_layer_norm():
    assert Encoder(8, 2, 16, 2).norm is None and Decoder(8, 2, 16, 2).norm is None
    assert isinstance(Encoder(8, 2, 16, 2, norm_first=True).norm, nn.LayerNorm)
    assert isinstance(Decoder(8, 2, 16, 2, norm_first=True).norm, nn.LayerNorm)


def pre_norm_gradients(n_layers: int, seed: int) -> np.ndarray:
    """Each layer's gradient norm at initialisation in chapter 9's measurement (pre-norm)."""
    torch.manual_seed(seed)
    stack = Encoder(32, 4, 128, n_layers, norm_first=True).double()  # D, H, d_ff
    generator = torch.Generator().manual_seed(100 + seed)
    inputs, target = torch.randn(2, 4, 8, 32, generator=generator, dtype=torch.float64)
    ((stack(inputs) - target) ** 2).mean().backward()
    return np.array(
        [
            torch.cat([p.grad.flatten() for p in layer.parameters()]).norm().item()
            for layer in stack.layers
        ]
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pre_norm_gradients_fall_from_the_first_layer_more_as_the_stack_deepens(seed):
    """Chapter 9, cell 43: pre-norm's first layer gets the largest gradient, and the fall from
    the first layer to the last grows with depth (4, 12, 32 layers), whatever the seed."""
    falls = []
    for n_layers in (4, 12, 32):
        gradients = pre_norm_gradients(n_layers, seed)
        assert gradients.argmax() == 0
        falls.append(gradients[0] / gradients[-1])
    assert 1 < falls[0] < falls[1] < falls[2]


def test_a_gelu_layer_equals_torchs():
    torch.manual_seed(0)
    torch_layer = nn.TransformerEncoderLayer(
        8, 2, 16, activation="gelu", batch_first=True, norm_first=True, dtype=torch.float64
    ).eval()
    layer = EncoderLayer.from_torch(torch_layer).eval()
    assert layer.feed_forward.activation == "gelu"
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    causal = torch.ones(5, 5, dtype=torch.bool).tril()
    with torch.no_grad():
        expected = torch_layer(x, src_mask=~causal)
        torch.testing.assert_close(layer(x, causal), expected, rtol=1e-6, atol=1e-9)
    decoder_layer = nn.TransformerDecoderLayer(8, 2, 16, activation=nn.GELU(), batch_first=True)
    assert DecoderLayer.from_torch(decoder_layer).feed_forward.activation == "gelu"


def test_from_torch_rejects_what_the_course_does_not_build():
    tanh_gelu = nn.TransformerEncoderLayer(
        8, 2, 16, activation=nn.GELU(approximate="tanh"), batch_first=True
    )
    with pytest.raises(ValueError, match="ReLU or the \\(exact\\) GELU"):
        EncoderLayer.from_torch(tanh_gelu)
    with pytest.raises(ValueError, match="batch_first"):
        DecoderLayer.from_torch(nn.TransformerDecoderLayer(8, 2, 16))
    with pytest.raises(TypeError, match="TransformerEncoderLayer"):
        EncoderLayer.from_torch(nn.TransformerDecoderLayer(8, 2, 16, batch_first=True))


def test_a_mask_with_a_head_axis_works_as_in_torchs_sdpa():
    """(B, 1, 1, T_k) and (B, H, T_q, T_k) masks broadcast over the heads, as in
    F.scaled_dot_product_attention; a (B, T_q, T_k) mask gives the same result."""
    torch.manual_seed(0)
    module = MultiHeadAttention(8, 2).double().eval()
    x = torch.randn(2, 3, 8, dtype=torch.float64)
    keep = torch.tensor([[True, True, False], [True, False, False]])  # (B, T_k)
    three_d = module(x, x, x, keep[:, None, :])  # (B, 1, T_k)
    four_d = module(x, x, x, keep[:, None, None, :])  # (B, 1, 1, T_k)
    per_head = module(x, x, x, keep[:, None, None, :].expand(2, 2, 3, 3))  # (B, H, T_q, T_k)
    assert torch.equal(three_d, four_d) and torch.equal(three_d, per_head)
    with pytest.raises(ValueError, match=r"\(B, H, T_q, T_k\)"):
        module(x, x, x, torch.ones(2, 3, 3, 3, dtype=torch.bool))  # 3 heads, the module has 2


def test_the_initialisation_is_what_the_docstring_says_beside_pytorchs():
    """Xavier-uniform per D × D projection (std √(1/D)); nn.MultiheadAttention's W_Q, W_K, W_V
    are √2 smaller and its W_O √3 smaller (the numbers at D = 512: 0.044, 0.031, 0.026)."""
    torch.manual_seed(0)
    d_model = 512
    ours, theirs = MultiHeadAttention(d_model, 8), nn.MultiheadAttention(d_model, 8)
    expected = (1 / d_model) ** 0.5
    for projection in (ours.w_q, ours.w_k, ours.w_v, ours.w_o):
        assert projection.weight.std().item() == pytest.approx(expected, rel=0.02)
        assert not projection.bias.any()
    in_projection = theirs.in_proj_weight.std().item()
    assert in_projection * 2**0.5 == pytest.approx(expected, rel=0.02)
    assert theirs.out_proj.weight.std().item() * 3**0.5 == pytest.approx(expected, rel=0.02)


def test_attention_with_a_cache_equals_causal_attention_over_the_whole_sequence():
    torch.manual_seed(0)
    attention = MultiHeadAttention(8, 2).double().eval()
    x = torch.randn(2, 6, 8, dtype=torch.float64)  # (B, T, D)
    causal = torch.ones(6, 6, dtype=torch.bool).tril()
    full, full_weights = attention(x, x, x, causal, return_weights=True)
    cache = LayerCache()
    steps = []
    for start, stop in ((0, 3), (3, 4), (4, 6)):  # a prompt, then one token, then two
        new = x[:, start:stop]
        mask = causal[start:stop, :stop]  # (T_new, t + T_new)
        output, weights = attention(new, new, new, mask, return_weights=True, cache=cache)
        assert weights.shape == (2, 2, stop - start, stop)
        torch.testing.assert_close(
            weights, full_weights[:, :, start:stop, :stop], rtol=0, atol=1e-12
        )
        steps.append(output)
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=0, atol=1e-12)
    assert cache.length == 6 and cache.nbytes == 2 * 2 * 6 * 8 * 8  # keys and values, float64


@pytest.mark.parametrize(
    "keys, values, message",
    [
        (torch.zeros(1, 2, 3), torch.zeros(1, 2, 3), r"\(B, H, T, D_h\)"),
        (torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 2, 4), "same shape"),
        (torch.zeros(1, 3, 1, 4), torch.zeros(1, 3, 1, 4), "match the cached ones"),
    ],
)
def test_a_layer_cache_rejects_keys_that_do_not_fit(keys, values, message):
    cache = LayerCache()
    cache.extend(torch.zeros(1, 2, 1, 4), torch.zeros(1, 2, 1, 4))
    with pytest.raises(ValueError, match=message):
        cache.extend(keys, values)


def test_attention_rejects_a_cache_of_the_wrong_kind():
    attention = MultiHeadAttention(4, 2)
    x = torch.zeros(1, 2, 4)
    with pytest.raises(TypeError, match="LayerCache"):
        attention(x, x, x, cache={"keys": None})
