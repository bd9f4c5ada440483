"""Tests of selfattn_lib.flash_attention: the tiled forward pass equals PyTorch's attention and
the standard three-pass version for every block size, its log-sum-exp is that of the scores,
it skips the tiles above the diagonal, and the traffic both versions record equals the
closed forms."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import PROPERTY_SETTINGS, seeds

from selfattn_lib import flash_attention
from selfattn_lib.attention import scaled_dot_product_attention
from selfattn_lib.flash_attention import (
    naive_attention,
    naive_traffic,
    tile_schedule,
    tiled_attention,
    tiled_traffic,
)
from selfattn_lib.masks import causal_mask

torch = pytest.importorskip("torch")

# (leading, T_q, T_k, block_q, block_k): ragged last blocks, blocks of 1, blocks longer than T.
SHAPES = [
    ((), 7, 7, 3, 2),
    ((2,), 9, 9, 4, 4),
    ((2, 3), 10, 10, 3, 4),
    ((1, 2), 5, 5, 8, 1),
    ((3,), 6, 6, 1, 6),
    ((2, 2), 11, 11, 5, 3),
]


def random_qkv(leading, t_q, t_k, rng, d_k=4, d_v=3, scale=1.0):
    q = rng.normal(size=(*leading, t_q, d_k)) * scale  # (..., T_q, D_k)
    k = rng.normal(size=(*leading, t_k, d_k)) * scale  # (..., T_k, D_k)
    v = rng.normal(size=(*leading, t_k, d_v))  # (..., T_k, D_v)
    return q, k, v


def torch_reference(q, k, v, causal):
    """PyTorch's output and the log-sum-exp of its (masked) scores, in float64."""
    q_t, k_t, v_t = (torch.from_numpy(a) for a in (q, k, v))
    output = torch.nn.functional.scaled_dot_product_attention(q_t, k_t, v_t, is_causal=causal)
    scores = q_t @ k_t.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., T_q, T_k)
    if causal:
        allowed = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        scores = scores.masked_fill(~allowed, -math.inf)
    return output.numpy(), torch.logsumexp(scores, dim=-1).numpy()


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("leading", "t_q", "t_k", "block_q", "block_k"), SHAPES)
def test_tiled_attention_equals_pytorch(leading, t_q, t_k, block_q, block_k, causal):
    rng = np.random.default_rng(t_q * 100 + block_q * 10 + block_k)
    q, k, v = random_qkv(leading, t_q, t_k, rng)
    output, logsumexp = tiled_attention(q, k, v, block_q=block_q, block_k=block_k, causal=causal)
    expected_output, expected_logsumexp = torch_reference(q, k, v, causal)
    assert output.shape == (*leading, t_q, 3) and logsumexp.shape == (*leading, t_q)
    np.testing.assert_allclose(output, expected_output, rtol=0, atol=1e-12)
    np.testing.assert_allclose(logsumexp, expected_logsumexp, rtol=0, atol=1e-12)


@pytest.mark.parametrize(("t_q", "t_k", "block_q", "block_k"), [(3, 8, 2, 3), (8, 3, 3, 2)])
def test_tiled_attention_takes_different_query_and_key_lengths(t_q, t_k, block_q, block_k):
    q, k, v = random_qkv((2,), t_q, t_k, np.random.default_rng(t_q))
    output, logsumexp = tiled_attention(q, k, v, block_q=block_q, block_k=block_k)
    expected_output, expected_logsumexp = torch_reference(q, k, v, causal=False)
    np.testing.assert_allclose(output, expected_output, rtol=0, atol=1e-12)
    np.testing.assert_allclose(logsumexp, expected_logsumexp, rtol=0, atol=1e-12)


@PROPERTY_SETTINGS
@given(
    seed=seeds,
    leading=st.lists(st.integers(1, 3), max_size=2).map(tuple),
    n_tokens=st.integers(1, 12),
    extra_keys=st.integers(0, 4),
    block_q=st.integers(1, 13),
    block_k=st.integers(1, 13),
    causal=st.booleans(),
)
def test_tiled_and_naive_agree_and_record_the_closed_form_traffic(
    seed, leading, n_tokens, extra_keys, block_q, block_k, causal
):
    t_k = n_tokens if causal else n_tokens + extra_keys
    q, k, v = random_qkv(leading, n_tokens, t_k, np.random.default_rng(seed), d_k=3, d_v=2)
    tiled_moved, naive_moved = {}, {}
    tiled = tiled_attention(
        q, k, v, block_q=block_q, block_k=block_k, causal=causal, traffic=tiled_moved
    )
    naive = naive_attention(q, k, v, causal=causal, traffic=naive_moved)
    for got, expected in zip(tiled, naive, strict=True):
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    mask = causal_mask(n_tokens) if causal else None
    direct, _ = scaled_dot_product_attention(q, k, v, mask=mask)
    np.testing.assert_allclose(tiled[0], direct, rtol=0, atol=1e-12)

    n_slices = math.prod(leading)  # the closed forms count one (batch, head) slice
    tiled_formula = tiled_traffic(
        n_tokens, t_k, 3, 2, block_q=block_q, block_k=block_k, causal=causal
    )
    naive_formula = naive_traffic(n_tokens, t_k, 3, 2, causal=causal)
    assert tiled_moved == {name: n_slices * n for name, n in tiled_formula.items()}
    assert naive_moved == {name: n_slices * n for name, n in naive_formula.items()}


@PROPERTY_SETTINGS
@given(
    n_tokens=st.integers(1, 40),
    block_q=st.integers(1, 45),
    block_k=st.integers(1, 45),
    causal=st.booleans(),
)
def test_the_schedule_computes_exactly_the_tiles_the_mask_reaches(
    n_tokens, block_q, block_k, causal
):
    schedule = tile_schedule(n_tokens, n_tokens, block_q=block_q, block_k=block_k, causal=causal)
    allowed = causal_mask(n_tokens) if causal else np.ones((n_tokens, n_tokens), dtype=bool)
    expected = [
        [allowed[i : i + block_q, j : j + block_k].any() for j in range(0, n_tokens, block_k)]
        for i in range(0, n_tokens, block_q)
    ]
    assert schedule.dtype == bool
    assert np.array_equal(schedule, expected)
    # The tiled pass reads each computed tile's keys and values: the closed form agrees.
    key_block_sizes = np.diff(np.minimum(np.arange(schedule.shape[1] + 1) * block_k, n_tokens))
    n_keys = int((schedule * key_block_sizes).sum())
    traffic = tiled_traffic(
        n_tokens, n_tokens, 5, 7, block_q=block_q, block_k=block_k, causal=causal
    )
    assert traffic == {"read": n_tokens * 5 + n_keys * 12, "written": n_tokens * 8}


def test_tiles_above_the_diagonal_are_never_computed(monkeypatch):
    scored, attention_scores = [], flash_attention.attention_scores

    def counting_scores(q, k):
        scored.append((q.shape[-2], k.shape[-2]))  # (queries, keys) of one tile
        return attention_scores(q, k)

    monkeypatch.setattr(flash_attention, "attention_scores", counting_scores)
    q, k, v = random_qkv((2,), 10, 10, np.random.default_rng(0))
    tiled_attention(q, k, v, block_q=4, block_k=3, causal=True)
    schedule = tile_schedule(10, 10, block_q=4, block_k=3, causal=True)
    assert schedule.tolist() == [
        [True, True, False, False],
        [True, True, True, False],
        [True, True, True, True],
    ]
    assert len(scored) == schedule.sum() == 9  # of 12 tiles
    # Rows before a tile's first key see none of it and are not scored: the tile (0, 1)
    # scores queries 3.. of block 0 (only query 3) against keys 3..5.
    assert scored[:2] == [(4, 3), (1, 3)]


def test_traffic_is_added_to_what_the_dict_holds():
    q, k, v = random_qkv((), 6, 6, np.random.default_rng(1))
    traffic = {"read": 100, "written": 1, "note": "kept"}
    tiled_attention(q, k, v, block_q=4, block_k=4, causal=True, traffic=traffic)
    once = tiled_traffic(6, 6, 4, 3, block_q=4, block_k=4, causal=True)
    assert traffic == {"read": 100 + once["read"], "written": 1 + once["written"], "note": "kept"}
    naive_attention(q, k, v, traffic=traffic)
    assert traffic["read"] == 100 + once["read"] + naive_traffic(6, 6, 4, 3)["read"]


def test_causal_tiles_read_fewer_keys_and_naive_still_moves_full_matrices():
    full = tiled_traffic(64, 64, 8, 8, block_q=8, block_k=8)
    causal = tiled_traffic(64, 64, 8, 8, block_q=8, block_k=8, causal=True)
    # 8 query blocks read 8 key blocks each, or 1 + 2 + … + 8 = 36 of them: the triangle.
    assert full["read"] - 64 * 8 == 8 * 64 * 16
    assert causal["read"] - 64 * 8 == 36 * 8 * 16
    assert causal["written"] == full["written"] == 64 * 9
    assert naive_traffic(64, 64, 8, 8, causal=True) == naive_traffic(64, 64, 8, 8)


@pytest.mark.parametrize("causal", [False, True])
def test_huge_scores_do_not_overflow(causal):
    rng = np.random.default_rng(7)
    q, k, v = random_qkv((2,), 9, 9, rng, scale=40.0)  # scores in the thousands
    assert np.abs(q @ np.swapaxes(k, -1, -2) / 2).max() > 1000
    output, logsumexp = tiled_attention(q, k, v, block_q=4, block_k=2, causal=causal)
    assert np.isfinite(output).all() and np.isfinite(logsumexp).all()
    expected_output, expected_logsumexp = torch_reference(q, k, v, causal)
    np.testing.assert_allclose(output, expected_output, rtol=0, atol=1e-12)
    np.testing.assert_allclose(logsumexp, expected_logsumexp, rtol=1e-14, atol=0)
    naive_output, naive_logsumexp = naive_attention(q, k, v, causal=causal)
    np.testing.assert_allclose(naive_output, expected_output, rtol=0, atol=1e-12)
    np.testing.assert_allclose(naive_logsumexp, expected_logsumexp, rtol=1e-14, atol=0)


def test_float32_stays_float32():
    q, k, v = (a.astype(np.float32) for a in random_qkv((), 5, 5, np.random.default_rng(2)))
    output, logsumexp = tiled_attention(q, k, v, block_q=2, block_k=2, causal=True)
    assert output.dtype == logsumexp.dtype == np.float32
    expected, _ = torch_reference(*(a.astype(np.float64) for a in (q, k, v)), causal=True)
    np.testing.assert_allclose(output, expected, rtol=0, atol=1e-5)


def test_the_point_tiling_moves_fewer_numbers_at_gpt2_scale():
    """T = 4096, D = 64, blocks of 64: the standard version writes and reads back S and P,
    4 T² numbers; the tiled one writes only O and the log-sum-exp, and reads K and V once per
    query block, 2 D T² / block_q = 2 T² numbers here."""
    t, d, block = 4096, 64, 64
    naive = naive_traffic(t, t, d, d)
    tiled = tiled_traffic(t, t, d, d, block_q=block, block_k=block)
    assert naive == {"read": 3 * t * d + 2 * t * t, "written": 2 * t * t + t * d}
    assert tiled == {"read": t * d + (t // block) * t * 2 * d, "written": t * (d + 1)}
    ratio = {name: Fraction(naive[name], tiled[name]) for name in naive}
    assert ratio["written"] == Fraction(2 * t + d, d + 1) == Fraction(8256, 65)  # ≈ 127×
    assert ratio["read"] == Fraction(3 * d + 2 * t, d + 2 * d * t // block) == Fraction(131, 129)
    total = Fraction(sum(naive.values()), sum(tiled.values()))
    assert total == Fraction(4 * t + 4 * d, 2 * d + 1 + 2 * d * t // block) == Fraction(16640, 8321)
    assert 1.99 < total < 2  # half the traffic at this block size …
    # … and more for bigger blocks: on-chip memory sets the block size, and with it the saving.
    totals = [
        Fraction(
            sum(naive.values()),
            sum(tiled_traffic(t, t, d, d, block_q=size, block_k=size).values()),
        )
        for size in (64, 128, 256)
    ]
    assert totals[0] < totals[1] < totals[2] and totals[2] > 7


Q = np.ones((2, 5, 4))  # (B, T, D)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda: tiled_attention(Q, np.ones((2, 5, 3)), Q, block_q=2, block_k=2),
            ValueError,
            r"D_k.*q has shape \(2, 5, 4\), k has shape \(2, 5, 3\)",
        ),
        (
            lambda: tiled_attention(Q, Q, np.ones((2, 4, 4)), block_q=2, block_k=2),
            ValueError,
            r"k has shape \(2, 5, 4\), v has shape \(2, 4, 4\)",
        ),
        (
            lambda: tiled_attention(Q, Q, Q[0], block_q=2, block_k=2),
            ValueError,
            r"leading.*v has shape \(5, 4\)",
        ),
        (
            lambda: tiled_attention(Q[:, :3], Q, Q, block_q=2, block_k=2, causal=True),
            ValueError,
            r"causal=True needs T_q == T_k.*q has shape \(2, 3, 4\), k has shape \(2, 5, 4\)",
        ),
        (
            lambda: naive_attention(Q[:, :3], Q, Q, causal=True),
            ValueError,
            r"causal=True needs T_q == T_k",
        ),
        (lambda: tiled_attention(Q, Q, Q, block_q=0, block_k=2), ValueError, "block_q"),
        (lambda: tiled_attention(Q, Q, Q, block_q=2, block_k=-1), ValueError, "block_k"),
        (lambda: tiled_attention(Q, Q, Q, block_q=2.0, block_k=2), TypeError, "block_q"),
        (lambda: tiled_attention(Q, Q, Q, block_q=2, block_k=True), TypeError, "block_k"),
        (lambda: tiled_attention(Q, Q, Q, block_q=2, block_k=2, traffic=[]), TypeError, "traffic"),
        (lambda: naive_attention(Q, Q, Q, traffic=(0, 0)), TypeError, "traffic"),
        (
            lambda: tiled_attention(Q, Q, Q, block_q=2, block_k=2, traffic={"read": "0"}),
            TypeError,
            "traffic",
        ),
        (lambda: tiled_attention(Q, Q, Q, block_q=2, block_k=2, causal=1), TypeError, "causal"),
        (lambda: tiled_attention("q", Q, Q, block_q=2, block_k=2), TypeError, "q"),
        (
            lambda: tiled_attention(Q[:, :0], Q[:, :0], Q[:, :0], block_q=2, block_k=2),
            ValueError,
            "T_q >= 1",
        ),
        (
            lambda: tiled_attention(Q * 1e200, Q * 1e200, Q, block_q=2, block_k=2),
            ValueError,
            "overflowed",
        ),
        (lambda: tile_schedule(4, 5, block_q=2, block_k=2, causal=True), ValueError, "t_q is 4"),
        (lambda: tile_schedule(4, 4, block_q=2, block_k=0), ValueError, "block_k"),
        (lambda: naive_traffic(4, 4, 0, 4), ValueError, "d_k"),
        (lambda: naive_traffic(4, 4, 4, 4, causal="no"), TypeError, "causal"),
        (lambda: tiled_traffic(4, 4, 4, 4, block_q=2, block_k=2.5), TypeError, "block_k"),
        (lambda: tiled_traffic(4, 3, 4, 4, block_q=2, block_k=2, causal=True), ValueError, "T_q"),
    ],
)
def test_bad_input_is_refused_with_a_clear_error(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_a_refused_call_records_no_traffic():
    traffic = {"read": 5}
    with pytest.raises(ValueError, match="overflowed"):
        tiled_attention(Q * 1e200, Q * 1e200, Q, block_q=2, block_k=2, traffic=traffic)
    assert traffic == {"read": 5}
