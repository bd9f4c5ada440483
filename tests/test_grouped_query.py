"""Tests of selfattn_lib.grouped_query: repeat_kv's head order; grouped-query attention equals
multi-head attention when H_kv = H and PyTorch's scaled_dot_product_attention(enable_gqa=True)
for multi-query and grouped-query attention; with rotary positions a KV cache fed in chunks
gives the outputs of one call; the cache holds H_kv heads; sizes and errors."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import PROPERTY_SETTINGS, seeds

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

from selfattn_lib.grouped_query import (  # noqa: E402
    GroupedQueryAttention,
    kv_cache_bytes,
    repeat_kv,
)
from selfattn_lib.layers import LayerCache, MultiHeadAttention  # noqa: E402
from selfattn_lib.rotary import apply_rotary  # noqa: E402

pytestmark = pytest.mark.filterwarnings("error")
EXACT = {"rtol": 0, "atol": 1e-12}
HEADS = [(4, 4), (4, 2), (4, 1), (6, 3), (6, 2)]  # (H, H_kv): MHA, GQA, MQA, GQA, GQA


def attention(n_heads: int, n_kv_heads: int, d_head: int = 4, seed: int = 0, **options):
    torch.manual_seed(seed)
    module = GroupedQueryAttention(n_heads * d_head, n_heads, n_kv_heads, **options)
    return module.double().eval()


def sequence(batch_size: int, n_tokens: int, d_model: int, seed: int = 1) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(batch_size, n_tokens, d_model, dtype=torch.float64, generator=generator)


def split(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    batch_size, n_tokens, width = x.shape
    return x.view(batch_size, n_tokens, n_heads, width // n_heads).transpose(1, 2)


# repeat_kv -----------------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(
    seed=seeds,
    n_kv_heads=st.integers(1, 4),
    n_rep=st.integers(1, 4),
    n_tokens=st.integers(1, 4),
)
def test_query_head_h_reads_key_value_head_h_over_n_rep(seed, n_kv_heads, n_rep, n_tokens):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(2, n_kv_heads, n_tokens, 3, generator=generator)  # (B, H_kv, T, D_h)
    repeated = repeat_kv(x, n_rep)
    assert repeated.shape == (2, n_kv_heads * n_rep, n_tokens, 3)
    for head in range(n_kv_heads * n_rep):
        assert torch.equal(repeated[:, head], x[:, head // n_rep])
    assert torch.equal(repeated, torch.repeat_interleave(x, n_rep, dim=1))


def test_tiling_the_heads_is_the_common_mistake():
    x = torch.arange(2.0).view(1, 2, 1, 1)  # key/value heads 0 and 1
    assert repeat_kv(x, 2).flatten().tolist() == [0.0, 0.0, 1.0, 1.0]
    assert x.repeat(1, 2, 1, 1).flatten().tolist() == [0.0, 1.0, 0.0, 1.0]  # wrong groups
    assert repeat_kv(x, 1) is x


def test_the_order_is_the_one_of_torchs_enable_gqa():
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(1, 6, 5, 4, dtype=torch.float64, generator=generator)  # (B, H, T, D_h)
    k, v = torch.randn(2, 1, 2, 5, 4, dtype=torch.float64, generator=generator)  # H_kv = 2
    theirs = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    ours = F.scaled_dot_product_attention(q, repeat_kv(k, 3), repeat_kv(v, 3))
    tiled = F.scaled_dot_product_attention(q, k.repeat(1, 3, 1, 1), v.repeat(1, 3, 1, 1))
    torch.testing.assert_close(ours, theirs, **EXACT)
    assert not torch.allclose(tiled, theirs)


@pytest.mark.parametrize(
    "x, n_rep, error, message",
    [
        ("x", 2, TypeError, "x must be a torch.Tensor"),
        (torch.ones(2, 3, 4), 2, ValueError, r"\(B, H_kv, T, D_h\).*\(2, 3, 4\)"),
        (torch.ones(1, 2, 3, 4), 0, ValueError, "n_rep"),
        (torch.ones(1, 2, 3, 4), 2.0, TypeError, "n_rep"),
    ],
)
def test_repeat_kv_rejects_bad_input(x, n_rep, error, message):
    with pytest.raises(error, match=message):
        repeat_kv(x, n_rep)


# The module -----------------------------------------------------------------------------------


def causal(n_tokens: int) -> torch.Tensor:
    return torch.ones(n_tokens, n_tokens, dtype=torch.bool).tril()


def masks_for(batch_size: int, t_q: int, t_k: int, n_heads: int) -> list[torch.Tensor | None]:
    generator = torch.Generator().manual_seed(5)
    padding = torch.ones(batch_size, 1, t_k, dtype=torch.bool)
    padding[0, 0, t_k // 2 :] = False  # the first sequence is shorter
    per_head = torch.rand(batch_size, n_heads, t_q, t_k, generator=generator) < 0.7
    masks = [None, padding, per_head]
    if t_q == t_k:
        masks.append(causal(t_q))
    return masks


@pytest.mark.parametrize("t_q, t_k", [(5, 5), (3, 6)])
@pytest.mark.parametrize("bias", [True, False])
def test_with_as_many_key_value_heads_as_query_heads_it_is_multi_head_attention(t_q, t_k, bias):
    torch.manual_seed(3)
    reference = MultiHeadAttention(12, 3, bias=bias).double().eval()
    module = GroupedQueryAttention(12, 3, 3, bias=bias).double().eval()
    module.load_state_dict(reference.state_dict())  # the same parameter names and shapes
    query, memory = sequence(2, t_q, 12), sequence(2, t_k, 12, seed=2)
    for mask in masks_for(2, t_q, t_k, 3):
        ours, our_weights = module(query, memory, memory, mask, return_weights=True)
        theirs, their_weights = reference(query, memory, memory, mask, return_weights=True)
        torch.testing.assert_close(ours, theirs, **EXACT)
        torch.testing.assert_close(our_weights, their_weights, **EXACT)


def test_it_starts_like_multi_head_attention():
    torch.manual_seed(7)
    reference = MultiHeadAttention(8, 2)
    after_reference = torch.rand(2)
    torch.manual_seed(7)
    module = GroupedQueryAttention(8, 2, 2)
    assert torch.equal(torch.rand(2), after_reference)  # the same random draws
    for name, parameter in reference.state_dict().items():
        assert torch.equal(module.state_dict()[name], parameter), name
    grouped = GroupedQueryAttention(64, 8, 2)
    bound = math.sqrt(6 / (64 + 16))  # Xavier-uniform for a 64 → 16 projection
    assert grouped.w_k.weight.abs().max() <= bound and grouped.w_k.weight.abs().max() > bound / 2
    assert torch.all(grouped.w_k.bias == 0) and torch.all(grouped.w_o.bias == 0)


@pytest.mark.parametrize("n_heads, n_kv_heads", HEADS)
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("rotary", [None, "half", "interleaved"])
def test_equals_torchs_scaled_dot_product_attention_with_enable_gqa(
    n_heads, n_kv_heads, masked, rotary
):
    module = attention(n_heads, n_kv_heads, rotary=rotary)
    x = sequence(3, 7, module.d_model)
    mask = causal(7) if masked else None
    with torch.no_grad():
        q = split(module.w_q(x), n_heads)  # (B, H, T, D_h)
        k = split(module.w_k(x), n_kv_heads)  # (B, H_kv, T, D_h)
        v = split(module.w_v(x), n_kv_heads)  # (B, H_kv, T, D_h)
        if rotary is not None:
            q, k = (apply_rotary(t, torch.arange(7), layout=rotary) for t in (q, k))
        heads = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        expected = module.w_o(heads.transpose(1, 2).reshape(x.shape))  # (B, T, D)
        output, weights = module(x, x, x, mask, return_weights=True)
    torch.testing.assert_close(output, expected, **EXACT)
    assert weights.shape == (3, n_heads, 7, 7)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, n_heads, 7, dtype=torch.float64))
    if masked:
        assert torch.all(weights.triu(diagonal=1) == 0)


@pytest.mark.parametrize("n_heads, n_kv_heads", HEADS)
@pytest.mark.parametrize("rotary", ["half", "interleaved"])
@pytest.mark.parametrize("chunks", [(3, 1, 1, 4), (1,) * 9, (9,), (5, 4)])
def test_a_cache_fed_in_chunks_gives_the_outputs_of_one_call(n_heads, n_kv_heads, rotary, chunks):
    module = attention(n_heads, n_kv_heads, rotary=rotary)
    x = sequence(2, sum(chunks), module.d_model)
    cache, pieces, start = LayerCache(), [], 0
    with torch.no_grad():
        whole, whole_weights = module(x, x, x, causal(x.shape[1]), return_weights=True)
        for size in chunks:
            new = x[:, start : start + size]  # (B, T, D)
            mask = torch.ones(size, start + size, dtype=torch.bool).tril(diagonal=start)
            output, weights = module(new, new, new, mask, return_weights=True, cache=cache)
            rows = whole_weights[:, :, start : start + size, : start + size]  # (B, H, T, t + T)
            torch.testing.assert_close(weights, rows, **EXACT)
            pieces.append(output)
            start += size
    torch.testing.assert_close(torch.cat(pieces, dim=1), whole, **EXACT)
    assert cache.length == sum(chunks)
    assert cache.keys.shape == (2, n_kv_heads, sum(chunks), module.d_head)  # H_kv heads kept


def test_rotary_positions_start_where_the_cache_ends():
    """Tokens after a cache of 5 are at positions 5, 6, 7, as in one longer input; and as only
    offsets matter, with the 5 cached tokens masked they give the outputs of positions 0-2."""
    module = attention(4, 2, rotary="half")
    prefix, x = sequence(1, 5, module.d_model, seed=9), sequence(1, 3, module.d_model)
    whole = torch.cat([prefix, x], dim=1)  # (1, 8, D)
    after_prefix = torch.ones(3, 8, dtype=torch.bool).tril(5)  # (T, t + T)
    new_only = after_prefix.clone()
    new_only[:, :5] = False
    outputs = []
    with torch.no_grad():
        for mask in (after_prefix, new_only):
            cache = LayerCache()
            module(prefix, prefix, prefix, causal(5), cache=cache)
            outputs.append(module(x, x, x, mask, cache=cache))
        expected = module(whole, whole, whole, causal(8))[:, 5:]
        fresh = module(x, x, x, causal(3))
        unrotated = attention(4, 2)(x, x, x, causal(3))
    torch.testing.assert_close(outputs[0], expected, **EXACT)
    torch.testing.assert_close(outputs[1], fresh, **EXACT)
    assert not torch.allclose(fresh, unrotated)


@pytest.mark.parametrize("n_heads, n_kv_heads", HEADS)
def test_the_cache_holds_n_kv_heads_and_kv_cache_bytes_counts_them(n_heads, n_kv_heads):
    module = attention(n_heads, n_kv_heads)
    reference = attention(n_heads, n_heads)
    x = sequence(3, 6, module.d_model)
    cache, reference_cache = LayerCache(), LayerCache()
    with torch.no_grad():
        module(x, x, x, causal(6), cache=cache)
        reference(x, x, x, causal(6), cache=reference_cache)
    expected = kv_cache_bytes(1, n_kv_heads, module.d_head, 6, batch_size=3, bytes_per_number=8)
    assert cache.nbytes == expected
    assert cache.nbytes * n_heads == reference_cache.nbytes * n_kv_heads  # H_kv / H of MHA's


@pytest.mark.parametrize("n_heads, n_kv_heads", HEADS)
@pytest.mark.parametrize("bias", [True, False])
def test_parameter_count(n_heads, n_kv_heads, bias):
    d_head = 4
    d_model, d_kv = n_heads * d_head, n_kv_heads * d_head
    module = GroupedQueryAttention(d_model, n_heads, n_kv_heads, bias=bias)
    weights = 2 * d_model * d_model + 2 * d_model * d_kv  # W_Q, W_O: D × D; W_K, W_V: D × H_kv D_h
    biases = 2 * d_model + 2 * d_kv if bias else 0
    assert sum(p.numel() for p in module.parameters()) == weights + biases
    assert module.w_k.weight.shape == module.w_v.weight.shape == (d_kv, d_model)


def test_dropout_acts_on_the_weights_only_in_training():
    module = attention(4, 2, dropout=0.5)
    x = sequence(2, 6, module.d_model)
    with torch.no_grad():
        _, eval_weights = module(x, x, x, return_weights=True)
        module.train()
        torch.manual_seed(0)
        trained = module(x, x, x)
        module.eval()
        torch.testing.assert_close(module(x, x, x), module(x, x, x), **EXACT)
    torch.testing.assert_close(eval_weights.sum(-1), torch.ones(2, 4, 6, dtype=torch.float64))
    assert not torch.allclose(trained, module(x, x, x).detach())


def test_a_query_with_nothing_to_attend_to_gets_zero_weights():
    module = attention(4, 1)
    x = sequence(1, 3, module.d_model)
    mask = torch.tensor([[False, False, False], [True, False, False], [True, True, True]])
    _, weights = module(x, x, x, mask, return_weights=True)
    assert torch.all(weights[:, :, 0] == 0) and not torch.isnan(weights).any()


# kv_cache_bytes --------------------------------------------------------------------------------


def test_kv_cache_bytes_of_published_models():
    # Llama 2 7B: 32 layers, 32 heads of 128 (multi-head); Llama 2 70B: 80 layers, 8 key/value
    # heads of 128; Mistral 7B: 32 layers, 8 key/value heads of 128. 16-bit numbers.
    assert kv_cache_bytes(32, 32, 128, 1) == 512 * 2**10  # 0.5 MiB per token
    assert kv_cache_bytes(80, 8, 128, 1) == 320 * 2**10
    assert kv_cache_bytes(32, 8, 128, 4096) == 512 * 2**20
    assert kv_cache_bytes(32, 8, 128, 4096, batch_size=4, bytes_per_number=4) == 4 * 2**30
    assert kv_cache_bytes(2, 4, 16, 0) == 0


def test_mistral_7b_v01_holds_half_a_gib_at_8k_tokens_in_its_rolling_buffer():
    # Chapter 13's table: Jiang et al. 2023's model keeps the last W = 4096 positions, so at
    # 8,192 tokens it holds 0.5 GiB; without the window it would hold 1 GiB.
    window, n_tokens = 4096, 8192
    assert kv_cache_bytes(32, 8, 128, min(window, n_tokens)) == 2**30 // 2
    assert kv_cache_bytes(32, 8, 128, n_tokens) == 2**30


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"n_tokens": -1}, ValueError, "n_tokens"),
        ({"n_tokens": 1.5}, TypeError, "n_tokens"),
        ({"n_layers": 0}, ValueError, "n_layers"),
        ({"n_kv_heads": "8"}, TypeError, "n_kv_heads"),
        ({"batch_size": 0}, ValueError, "batch_size"),
        ({"bytes_per_number": 2.0}, TypeError, "bytes_per_number"),
    ],
)
def test_kv_cache_bytes_rejects_bad_input(kwargs, error, message):
    arguments = {"n_layers": 2, "n_kv_heads": 2, "d_head": 4, "n_tokens": 3, **kwargs}
    with pytest.raises(error, match=message):
        kv_cache_bytes(**arguments)


# Errors -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"n_kv_heads": 3}, ValueError, "n_kv_heads must divide n_heads.*n_heads = 4"),
        ({"n_kv_heads": 0}, ValueError, "n_kv_heads"),
        ({"n_kv_heads": 2.0}, TypeError, "n_kv_heads"),
        ({"n_heads": 3}, ValueError, "divisible by n_heads"),
        ({"rotary": "rope"}, ValueError, "rotary must be None or one of"),
        ({"rotary": True}, TypeError, "rotary"),
        ({"d_model": 12, "n_heads": 4, "rotary": "half"}, ValueError, r"even head size.*D_h .* 3"),
        ({"rope_base": 0.0}, ValueError, "rope_base"),
        ({"rope_base": "1e4"}, TypeError, "rope_base"),
        ({"dropout": 1.0}, ValueError, "dropout"),
    ],
)
def test_bad_sizes_are_rejected(kwargs, error, message):
    arguments = {"d_model": 8, "n_heads": 4, "n_kv_heads": 2, **kwargs}
    with pytest.raises(error, match=message):
        GroupedQueryAttention(**arguments)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda m, x: m(x, x[:, :2], x[:, :2]), ValueError, "self-attention.*same length"),
        (lambda m, x: m(x, x, x, cache=[]), TypeError, "cache must be a LayerCache"),
        (lambda m, x: m(x.long(), x, x), TypeError, "query must be a floating-point"),
        (lambda m, x: m(x[..., :4], x, x), ValueError, r"query must have shape \(B, T, D\)"),
        (lambda m, x: m(x, x, x[:, :2]), ValueError, "same length"),
        (lambda m, x: m(x, x, x, torch.ones(5, 5)), TypeError, "mask must be boolean"),
        (lambda m, x: m(x, x, x, torch.ones(5, 4).bool()), ValueError, r"mask.*\(5, 4\)"),
        (
            lambda m, x: m(x, x, x, torch.ones(1, 2, 5, 5).bool()),  # H_kv heads, not H
            ValueError,
            r"\(B, H, T_q, T_k\).*\(1, 2, 5, 5\).*\(2, 4, 5, 5\)",
        ),
    ],
)
def test_bad_inputs_are_rejected(call, error, message):
    module = attention(4, 2, rotary="half")
    x = sequence(2, 5, module.d_model)
    with pytest.raises(error, match=message):
        call(module, x)


def test_cross_attention_works_without_rotary():
    module = attention(4, 2)
    output = module(sequence(2, 3, 16), sequence(2, 6, 16), sequence(2, 6, 16))
    assert output.shape == (2, 3, 16)
