"""Tests of selfattn_lib.sliding_window: the mask rule row by row, the causal mask as the
limit of a long window, streaming with the WindowCache equal to one pass under the mask (and
to PyTorch's attention), bounded memory, and clear errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import PROPERTY_SETTINGS, seeds

from selfattn_lib.masks import causal_mask

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

from selfattn_lib.layers import LayerCache, MultiHeadAttention, masked_softmax  # noqa: E402
from selfattn_lib.sliding_window import (  # noqa: E402
    WindowCache,
    sliding_window_mask,
    window_mask,
)

pytestmark = pytest.mark.filterwarnings("error")
TOLERANCES = {"rtol": 1e-9, "atol": 1e-12}


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Plain scaled dot-product attention with the course's masked softmax."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (B, H, T_q, T_k)
    return masked_softmax(scores, mask) @ v  # (B, H, T_q, D_h)


def random_qkv(seed: int, n_tokens: int, shape: tuple[int, int, int] = (2, 3, 4)) -> list:
    generator = torch.Generator().manual_seed(seed)
    batch_size, n_heads, d_head = shape
    return [
        torch.randn(batch_size, n_heads, n_tokens, d_head, generator=generator, dtype=torch.float64)
        for _ in range(3)
    ]


def stream(q, k, v, chunks, window, n_sinks):
    """Feed the tokens through a WindowCache chunk by chunk; return the outputs joined."""
    cache = WindowCache(window, n_sinks=n_sinks)
    outputs, start = [], 0
    for size in chunks:
        part = slice(start, start + size)
        key_positions = cache.key_positions(size)  # (n_held + T,)
        keys, values = cache.extend(k[:, :, part], v[:, :, part])  # (B, H, n_held + T, D_h)
        # The cache returns exactly the keys at the positions it announced.
        assert torch.equal(keys, k[:, :, key_positions]) and torch.equal(
            values, v[:, :, key_positions]
        )
        mask = window_mask(
            torch.arange(start, start + size), key_positions, window, n_sinks=n_sinks
        )
        outputs.append(attend(q[:, :, part], keys, values, mask))  # (B, H, T, D_h)
        start += size
    return torch.cat(outputs, dim=2)  # (B, H, T, D_h)


# --- the mask --------------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(n_tokens=st.integers(1, 20), window=st.integers(1, 22), n_sinks=st.integers(0, 6))
def test_each_query_sees_its_recent_window_plus_the_sinks_before_it(n_tokens, window, n_sinks):
    mask = sliding_window_mask(n_tokens, window, n_sinks=n_sinks).numpy()  # (T, T)
    assert mask.shape == (n_tokens, n_tokens) and mask.dtype == np.bool_
    for p in range(n_tokens):
        recent = min(p + 1, window)
        sinks_before_window = min(n_sinks, p + 1 - recent)
        assert mask[p].sum() == recent + sinks_before_window
        seen = {int(s) for s in np.flatnonzero(mask[p])}
        assert seen == {s for s in range(p + 1) if p - s < window or s < n_sinks}


@pytest.mark.parametrize("n_sinks", [0, 1, 4, 30])
@pytest.mark.parametrize("extra", [0, 1, 5])
def test_a_window_as_long_as_the_text_is_the_causal_mask(n_sinks, extra):
    n_tokens = 9
    mask = sliding_window_mask(n_tokens, n_tokens + extra, n_sinks=n_sinks)
    assert np.array_equal(mask.numpy(), causal_mask(n_tokens))


def test_a_window_of_one_sees_only_the_query_itself_and_the_sinks():
    assert torch.equal(sliding_window_mask(5, 1), torch.eye(5, dtype=torch.bool))
    expected = torch.tensor(
        [
            [1, 0, 0, 0, 0],
            [1, 1, 0, 0, 0],  # sink 0, then itself
            [1, 1, 1, 0, 0],  # sinks 0 and 1, then itself
            [1, 1, 0, 1, 0],
            [1, 1, 0, 0, 1],
        ],
        dtype=torch.bool,
    )
    assert torch.equal(sliding_window_mask(5, 1, n_sinks=2), expected)


def test_the_mask_of_new_queries_against_arbitrary_key_positions():
    key_positions = torch.tensor([0, 1, 6, 7, 8, 9])  # two sinks and a window, as a cache holds
    mask = window_mask(torch.tensor([8, 9]), key_positions, 3, n_sinks=2)
    expected = torch.tensor([[1, 1, 1, 1, 1, 0], [1, 1, 0, 1, 1, 1]], dtype=torch.bool)
    assert torch.equal(mask, expected)
    # The rule reads positions, not indices: the same keys in another order move with them.
    order = torch.tensor([5, 2, 0, 4, 1, 3])
    assert torch.equal(window_mask(torch.tensor([8, 9]), key_positions[order], 3, n_sinks=2),
                       expected[:, order])  # fmt: skip


@pytest.mark.parametrize(("window", "n_layers"), [(2, 1), (3, 2), (4, 3)])
def test_stacked_windows_reach_back_n_layers_times_window_minus_one(window, n_layers):
    """The module docstring's claim: L layers of window w connect p to s iff p - s ≤ L(w - 1)."""
    n_tokens = 16
    step = sliding_window_mask(n_tokens, window).long()  # (T, T)
    reach = torch.linalg.matrix_power(step, n_layers) > 0  # paths of n_layers hops
    offsets = torch.arange(n_tokens)[:, None] - torch.arange(n_tokens)[None, :]  # (T, T)
    assert torch.equal(reach, (offsets >= 0) & (offsets <= n_layers * (window - 1)))


def test_the_mask_is_on_the_queries_device_and_accepts_any_integer_dtype():
    mask = window_mask(torch.arange(3, dtype=torch.int32), torch.arange(3, dtype=torch.int16), 2)
    assert mask.dtype == torch.bool and mask.device == torch.device("cpu")
    assert torch.equal(mask, sliding_window_mask(3, 2))


# --- streaming with the cache ----------------------------------------------------------------


@pytest.mark.parametrize("n_sinks", [0, 1, 4])
@pytest.mark.parametrize("chunks", [[1] * 14, [3, 1, 1, 4, 5], [6, 6, 2], [14]])
@pytest.mark.parametrize("window", [1, 3, 5, 20])
def test_streaming_with_the_cache_equals_one_pass_under_the_mask(n_sinks, chunks, window):
    q, k, v = random_qkv(0, 14)
    expected = attend(q, k, v, sliding_window_mask(14, window, n_sinks=n_sinks))  # (B, H, T, D_h)
    torch.testing.assert_close(stream(q, k, v, chunks, window, n_sinks), expected, **TOLERANCES)


@PROPERTY_SETTINGS
@given(
    seed=seeds,
    chunks=st.lists(st.integers(1, 4), min_size=1, max_size=8),
    window=st.integers(1, 8),
    n_sinks=st.integers(0, 5),
)
def test_streaming_in_any_chunks_equals_one_pass(seed, chunks, window, n_sinks):
    n_tokens = sum(chunks)
    q, k, v = random_qkv(seed % 2**31, n_tokens, shape=(1, 2, 3))
    expected = attend(q, k, v, sliding_window_mask(n_tokens, window, n_sinks=n_sinks))
    torch.testing.assert_close(stream(q, k, v, chunks, window, n_sinks), expected, **TOLERANCES)


@pytest.mark.parametrize("n_sinks", [0, 1, 4])
def test_one_pass_under_the_mask_equals_pytorchs_attention(n_sinks):
    q, k, v = random_qkv(1, 12)
    mask = sliding_window_mask(12, 4, n_sinks=n_sinks)  # (T, T); True = may attend in both
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(attend(q, k, v, mask), expected, **TOLERANCES)


@pytest.mark.parametrize("n_sinks", [0, 2])
def test_multi_head_attention_with_a_window_cache_equals_the_masked_full_pass(n_sinks):
    torch.manual_seed(0)
    attention = MultiHeadAttention(8, 2).double().eval()
    x = torch.randn(2, 11, 8, dtype=torch.float64)  # (B, T, D)
    with torch.no_grad():
        expected = attention(x, x, x, sliding_window_mask(11, 3, n_sinks=n_sinks))  # (B, T, D)
        cache, outputs = WindowCache(3, n_sinks=n_sinks), []
        for t in range(11):
            mask = window_mask(torch.tensor([t]), cache.key_positions(1), 3, n_sinks=n_sinks)
            token = x[:, t : t + 1]  # (B, 1, D)
            outputs.append(attention(token, token, token, mask, cache=cache))  # (B, 1, D)
    torch.testing.assert_close(torch.cat(outputs, dim=1), expected, **TOLERANCES)


# --- what the cache holds --------------------------------------------------------------------


@pytest.mark.parametrize(("window", "n_sinks"), [(1, 0), (3, 0), (3, 1), (4, 4), (2, 6)])
def test_positions_and_length_after_each_step(window, n_sinks):
    cache = WindowCache(window, n_sinks=n_sinks)
    assert cache.length == 0 and cache.positions.tolist() == [] and cache.nbytes == 0
    for step, size in enumerate([1, 2, 1, 3, 1, 1, 4], start=1):
        before = cache.length
        assert cache.key_positions(size).tolist() == cache.positions.tolist() + list(
            range(before, before + size)
        )
        cache.extend(torch.zeros(1, 1, size, 2), torch.zeros(1, 1, size, 2))
        length = before + size
        assert cache.length == length, step
        expected = [s for s in range(length) if s < n_sinks or s >= length - window + 1]
        assert cache.positions.tolist() == expected, step
        assert cache.positions.dtype == torch.long
        assert cache.keys.shape[2] == len(expected) and cache.values.shape[2] == len(expected)


@pytest.mark.parametrize("n_sinks", [0, 1, 4])
def test_memory_stops_growing_once_the_window_is_full(n_sinks):
    window, (batch_size, n_heads, d_head) = 5, (2, 3, 4)
    cache = WindowCache(window, n_sinks=n_sinks)
    one_key = batch_size * n_heads * d_head * 8  # bytes of one position's float64 key
    full = 2 * (n_sinks + window - 1) * one_key  # keys and values
    sizes = []
    for step in range(1, 41):
        k = torch.randn(batch_size, n_heads, 1, d_head, dtype=torch.float64)
        cache.extend(k, k.clone())
        sizes.append(cache.nbytes)
        assert cache.nbytes == 2 * min(step, n_sinks + window - 1) * one_key
    assert cache.length == 40 and max(sizes) == full
    assert sizes[-(40 - n_sinks - window + 2) :] == [full] * (40 - n_sinks - window + 2)


def test_a_window_longer_than_the_text_keeps_everything_like_a_layer_cache():
    window_cache, layer_cache = WindowCache(50, n_sinks=3), LayerCache()
    for size in (2, 1, 4):
        k = torch.randn(1, 2, size, 3)
        got = window_cache.extend(k, -k)
        expected = layer_cache.extend(k, -k)
        assert all(torch.equal(a, b) for a, b in zip(got, expected, strict=True))
    assert window_cache.nbytes == layer_cache.nbytes and window_cache.length == 7
    assert isinstance(window_cache, LayerCache)


def test_the_positions_property_is_a_copy():
    cache = WindowCache(2)
    cache.extend(torch.zeros(1, 1, 3, 2), torch.zeros(1, 1, 3, 2))
    cache.positions[0] = 99
    assert cache.positions.tolist() == [2]


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"window": 0}, ValueError, "window"),
        ({"window": -2}, ValueError, "window"),
        ({"window": 2.5}, TypeError, "window"),
        ({"window": True}, TypeError, "window"),
        ({"window": 3, "n_sinks": -1}, ValueError, "n_sinks"),
        ({"window": 3, "n_sinks": 1.0}, TypeError, "n_sinks"),
        ({"window": 3, "n_sinks": None}, TypeError, "n_sinks"),
    ],
)
def test_bad_window_or_sinks_are_refused_everywhere(kwargs, error, match):
    with pytest.raises(error, match=match):
        WindowCache(**kwargs)
    with pytest.raises(error, match=match):
        sliding_window_mask(4, **kwargs)
    with pytest.raises(error, match=match):
        window_mask(torch.arange(4), torch.arange(4), **kwargs)


@pytest.mark.parametrize(
    ("query_positions", "key_positions", "error", "match"),
    [
        (torch.arange(3.0), torch.arange(3), TypeError, r"query_positions.*float32"),
        (torch.arange(3), torch.ones(3, dtype=torch.bool), TypeError, r"key_positions.*bool"),
        ([0, 1, 2], torch.arange(3), TypeError, r"query_positions.*list"),
        (torch.arange(6).view(2, 3), torch.arange(3), ValueError, r"query_positions.*\(2, 3\)"),
        (torch.arange(3), torch.tensor(2), ValueError, r"key_positions.*\(T_k,\).*\(\)"),
        (torch.arange(3), torch.tensor([-1, 0]), ValueError, r"key_positions.*-1"),
    ],
)
def test_positions_must_be_1d_integer_tensors(query_positions, key_positions, error, match):
    with pytest.raises(error, match=match):
        window_mask(query_positions, key_positions, 2)


def test_sliding_window_mask_needs_a_positive_number_of_tokens():
    with pytest.raises(ValueError, match="n_tokens"):
        sliding_window_mask(0, 2)
    with pytest.raises(TypeError, match="n_tokens"):
        sliding_window_mask(3.0, 2)


def test_extend_checks_its_input_as_a_layer_cache_does_and_a_refused_call_changes_nothing():
    cache = WindowCache(3, n_sinks=1)
    cache.extend(torch.zeros(1, 2, 4, 5), torch.zeros(1, 2, 4, 5))
    held = (cache.length, cache.positions.tolist(), cache.nbytes)
    with pytest.raises(TypeError, match="keys"):
        cache.extend(np.zeros((1, 2, 1, 5)), torch.zeros(1, 2, 1, 5))
    with pytest.raises(ValueError, match=r"values.*\(B, H, T, D_h\).*\(1, 1, 5\)"):
        cache.extend(torch.zeros(1, 2, 1, 5), torch.zeros(1, 1, 5))
    with pytest.raises(ValueError, match=r"same shape.*\(1, 2, 1, 5\).*\(1, 2, 2, 5\)"):
        cache.extend(torch.zeros(1, 2, 1, 5), torch.zeros(1, 2, 2, 5))
    with pytest.raises(ValueError, match=r"B, H and D_h.*\(1, 2, 3, 5\).*\(1, 3, 1, 5\)"):
        cache.extend(torch.zeros(1, 3, 1, 5), torch.zeros(1, 3, 1, 5))
    assert (cache.length, cache.positions.tolist(), cache.nbytes) == held
    with pytest.raises(ValueError, match="n_new"):
        cache.key_positions(-1)
    with pytest.raises(TypeError, match="n_new"):
        cache.key_positions(1.5)
