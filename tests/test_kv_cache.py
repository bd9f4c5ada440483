"""Tests of selfattn_lib.kv_cache: decoding step by step with the cache equals full causal
attention (and PyTorch's), and mismatched caches are refused."""

from __future__ import annotations

import numpy as np
import pytest

from selfattn_lib.attention import scaled_dot_product_attention
from selfattn_lib.kv_cache import attend_with_cache
from selfattn_lib.masks import causal_mask


def test_decoding_with_the_cache_equals_full_causal_attention():
    rng = np.random.default_rng(11)
    q, k = rng.normal(size=(2, 6, 4)), rng.normal(size=(2, 6, 4))
    v = rng.normal(size=(2, 6, 3))
    full, _ = scaled_dot_product_attention(q, k, v, mask=causal_mask(6))  # (B, T, D_v)
    k_cache, v_cache = np.zeros((2, 0, 4)), np.zeros((2, 0, 3))
    for t in range(6):
        step = slice(t, t + 1)
        output, k_cache, v_cache = attend_with_cache(
            q[:, step], k[:, step], v[:, step], k_cache, v_cache
        )
        assert output.shape == (2, 1, 3) and k_cache.shape == (2, t + 1, 4)
        assert np.allclose(output, full[:, step], rtol=0, atol=1e-12)
    assert np.array_equal(k_cache, k) and np.array_equal(v_cache, v)
    torch = pytest.importorskip("torch")
    tensors = [torch.from_numpy(a) for a in (q, k, v)]
    expected = torch.nn.functional.scaled_dot_product_attention(*tensors, is_causal=True)
    assert np.allclose(output, expected.numpy()[:, -1:], rtol=0, atol=1e-12)


def test_the_callers_caches_are_not_changed():
    k_cache, v_cache = np.ones((1, 2, 2)), np.ones((1, 2, 2))
    _, new_k, _ = attend_with_cache(np.ones((1, 1, 2)), np.zeros((1, 1, 2)), np.zeros((1, 1, 2)),
                                    k_cache, v_cache)  # fmt: skip
    assert k_cache.shape == (1, 2, 2) and new_k.shape == (1, 3, 2)


@pytest.mark.parametrize(
    ("shapes", "match"),
    [
        (((1, 2, 4), (1, 1, 4), (1, 1, 3), (1, 0, 4), (1, 0, 3)), "q_new"),
        (((2, 1, 4), (2, 1, 4), (2, 1, 3), (1, 0, 4), (1, 0, 3)), "q_new"),
        (((1, 1, 4), (1, 1, 4), (1, 1, 3), (1, 2, 4), (1, 3, 3)), "same tokens"),
        (((1, 1, 4), (1, 1, 4), (1, 1, 3), (1, 2, 5), (1, 2, 3)), "k_new and k_cache"),
        (((1, 1, 4), (1, 1, 4), (1, 1, 3), (1, 2, 4), (1, 2, 2)), "v_new and v_cache"),
    ],
)
def test_mismatched_shapes_are_refused(shapes, match):
    with pytest.raises(ValueError, match=match):
        attend_with_cache(*(np.zeros(shape) for shape in shapes))


def test_a_wrong_kind_of_value_is_a_type_error():
    with pytest.raises(TypeError, match="k_cache"):
        attend_with_cache(np.ones((1, 1, 2)), np.ones((1, 1, 2)), np.ones((1, 1, 2)), "x", None)
