"""Tests of selfattn_lib.attention_cost: the counts equal the bytes of real arrays and the
FLOPs that PyTorch's counter reports, and the longest sequence is the exact bound."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import PROPERTY_SETTINGS

from selfattn_lib.attention_cost import (
    attention_flops,
    longest_sequence,
    score_matrix_bytes,
    tile_working_bytes,
)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_score_matrix_bytes_are_the_bytes_of_the_array(dtype):
    scores = np.zeros((2, 3, 5, 7), dtype=dtype)
    assert score_matrix_bytes(2, 3, 5, 7, np.dtype(dtype).itemsize) == scores.nbytes


@PROPERTY_SETTINGS
@given(
    memory=st.integers(1, 10**12),
    batch=st.integers(1, 16),
    heads=st.integers(1, 64),
    size=st.sampled_from([2, 4, 8]),
)
def test_longest_sequence_is_the_largest_length_that_fits(memory, batch, heads, size):
    t = longest_sequence(memory, batch, heads, size)
    assert t == 0 or score_matrix_bytes(batch, heads, t, t, size) <= memory
    assert score_matrix_bytes(batch, heads, t + 1, t + 1, size) > memory


def test_longest_sequence_of_an_80_gb_accelerator():
    assert longest_sequence(80 * 10**9, 8, 32, 2) == 12500  # exactly: 8·32·12500²·2 = 80e9
    assert longest_sequence(2 * 80 * 10**9, 8, 32, 2) == math.isqrt(2 * 12500**2)


def test_longest_sequence_rounds_down_where_rounding_to_the_nearest_would_not_fit():
    # √9950 = 99.75: round() gives 100, whose 10,000 bytes do not fit (chapter 11's checker)
    assert longest_sequence(9950, 1, 1, 1) == 99 != round(math.sqrt(9950))
    assert longest_sequence(1000, 1, 1, 1) == 31  # √1000 = 31.6


def test_pytorchs_flop_counter_counts_matrix_products_only():
    """Chapter 11's claim, measured with PyTorch 2.13.0: FlopCounterMode counts the matrix
    products and nothing of the softmax, the scaling or other element-wise work."""
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import FlopCounterMode

    scores, values = torch.randn(30, 30), torch.randn(30, 4)
    with FlopCounterMode(display=False) as element_wise:
        (scores / 2).softmax(dim=-1).exp() + 1
    with FlopCounterMode(display=False) as product:
        scores @ values
    assert element_wise.get_total_flops() == 0
    assert product.get_total_flops() == 2 * 30 * 30 * 4


def test_attention_flops_equal_pytorchs_count():
    torch = pytest.importorskip("torch")
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    q, k, v = torch.randn(1, 1, 5, 8), torch.randn(1, 1, 7, 8), torch.randn(1, 1, 7, 3)
    with FlopCounterMode(display=False) as counter, sdpa_kernel(SDPBackend.MATH):
        torch.nn.functional.scaled_dot_product_attention(q, k, v)
    assert counter.get_total_flops() == attention_flops(5, 7, 8, 3)


def test_pytorch_picks_its_flash_kernel_only_in_the_cases_chapter_11_names():
    """Chapter 11's claim, measured with PyTorch 2.13.0 on a CPU: F.scaled_dot_product_attention
    can run its flash kernel for 4-D inputs with one head size for q, k and v and without
    dropout (a mask or is_causal do not stop it), and then the default call returns its output
    bit for bit; with D_v ≠ D_k, 3-D inputs, dropout, a batch or head dimension broadcast, or a
    last dimension of stride 2 it runs the math kernel (so the chapter says "among other
    conditions")."""
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 1, 64, 16, generator=generator) for _ in range(3))
    wide = torch.randn(3, 1, 1, 64, 32, generator=generator)  # sliced to stride 2 below

    def flash(*args, **kwargs):
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(*args, **kwargs)

    assert torch.equal(F.scaled_dot_product_attention(q, k, v), flash(q, k, v))
    allowed = torch.ones(64, 64, dtype=torch.bool).tril()
    assert torch.equal(flash(q, k, v, is_causal=True), flash(q, k, v, attn_mask=allowed))
    for args, kwargs in (
        ((q, k, v[..., :8]), {}),  # D_v = 8, D_k = 16
        ((q[0], k[0], v[0]), {}),  # 3-D
        ((q, k, v), {"dropout_p": 0.1}),
        ((q.expand(2, 1, 64, 16).clone(), k, v), {}),  # a batch of 2 against k, v of 1
        ((q.expand(1, 4, 64, 16).clone(), k, v), {}),  # 4 heads against 1 (no enable_gqa)
        (tuple(x[..., ::2] for x in wide), {}),  # last dimension of stride 2
    ):
        with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="No available kernel"):
            flash(*args, **kwargs)
        torch.manual_seed(1)  # the same dropout for both calls
        default = F.scaled_dot_product_attention(*args, **kwargs)
        torch.manual_seed(1)
        with sdpa_kernel(SDPBackend.MATH):
            assert torch.equal(default, F.scaled_dot_product_attention(*args, **kwargs))


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: score_matrix_bytes(0, 1, 1, 1, 4), ValueError),
        (lambda: score_matrix_bytes(1, 1, 1, 1, 2.5), TypeError),
        (lambda: longest_sequence(-5, 1, 1, 4), ValueError),
        (lambda: longest_sequence("1 GB", 1, 1, 4), TypeError),
        (lambda: attention_flops(1, 1, 0, 1), ValueError),
        (lambda: attention_flops(1, 1, 1, None), TypeError),
        (lambda: tile_working_bytes(0, 1, 1, 1, 4), ValueError),
        (lambda: tile_working_bytes(1, 1, 1, 1, 2.5), TypeError),
    ],
)
def test_bad_input_is_refused(call, error):
    with pytest.raises(error):
        call()


def test_tile_working_bytes_are_the_bytes_of_the_arrays_of_one_step():
    block_q, block_k, d_k, d_v = 5, 7, 3, 2
    arrays = {
        "block of queries": np.zeros((block_q, d_k)),
        "block of keys and values": np.zeros((block_k, d_k + d_v)),
        "tile of scores": np.zeros((block_q, block_k)),
        "running max and sum": np.zeros((2, block_q)),
        "accumulator": np.zeros((block_q, d_v)),
    }
    parts = tile_working_bytes(block_q, block_k, d_k, d_v, 8)
    assert parts == {name: array.nbytes for name, array in arrays.items()}


def test_tile_working_bytes_do_not_grow_with_the_sequence():
    # The direct computation's score matrix grows with T²; one step of the blocked one holds
    # the same bytes whatever T is, and far fewer than the matrix at a long T.
    parts = tile_working_bytes(64, 64, 64, 64, 4)
    assert sum(parts.values()) == 82432
    assert score_matrix_bytes(1, 1, 4096, 4096, 4) / parts["tile of scores"] == 4096
