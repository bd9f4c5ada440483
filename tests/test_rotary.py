"""Tests of selfattn_lib.rotary: RoPE in torch equals chapter 8's NumPy RoPE in both layouts
and Meta's complex-number form; rotations keep lengths, scores depend only on the offset,
and a suffix rotated on its own equals the suffix of the whole (what a KV cache needs)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import PROPERTY_SETTINGS, seeds

from selfattn_lib.positional import ROPE_LAYOUTS, apply_rope, rope_angles

torch = pytest.importorskip("torch")

from selfattn_lib.rotary import apply_rotary, apply_rotary_complex  # noqa: E402

pytestmark = pytest.mark.filterwarnings("error")
EXACT = {"rtol": 0, "atol": 1e-12}


@st.composite
def rotary_case(draw: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor]:
    """float64 ``x`` of shape ``(..., T, D_h)`` and ``T`` integer positions, not in order."""
    generator = torch.Generator().manual_seed(draw(seeds))
    leading = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    n_tokens, d_head = draw(st.integers(1, 6)), 2 * draw(st.integers(1, 8))
    x = torch.randn(*leading, n_tokens, d_head, dtype=torch.float64, generator=generator)
    positions = torch.randint(0, 5000, (n_tokens,), generator=generator)
    return x, positions


@PROPERTY_SETTINGS
@given(case=rotary_case(), layout=st.sampled_from(ROPE_LAYOUTS), base=st.sampled_from([1e4, 500.0]))
def test_equals_chapter_8s_numpy_rope(case, layout, base):
    x, positions = case
    ours = apply_rotary(x, positions, layout=layout, base=base)
    theirs = apply_rope(x.numpy(), positions.numpy(), layout=layout, base=base)
    assert ours.dtype == torch.float64 and ours.shape == x.shape
    np.testing.assert_allclose(ours.numpy(), theirs, rtol=0, atol=1e-12)


@pytest.mark.parametrize("layout", ROPE_LAYOUTS)
def test_the_angles_are_chapter_8s_rope_angles(layout):
    """Rotate the first feature of each pair alone and read its angle back with atan2."""
    d_head, positions = 8, torch.tensor([0, 1, 5, 77, 1000])
    angles = torch.from_numpy(rope_angles(positions.numpy(), d_head))  # (T, D_h / 2)
    first = [0, 2, 4, 6] if layout == "interleaved" else [0, 1, 2, 3]
    second = [1, 3, 5, 7] if layout == "interleaved" else [4, 5, 6, 7]
    x = torch.zeros(len(first), len(positions), d_head, dtype=torch.float64)  # (pairs, T, D_h)
    for pair, feature in enumerate(first):
        x[pair, :, feature] = 1.0
    rotated = apply_rotary(x, positions, layout=layout)
    for pair in range(len(first)):
        read = torch.atan2(rotated[pair, :, second[pair]], rotated[pair, :, first[pair]])  # (T,)
        wrapped = torch.remainder(angles[:, pair] + math.pi, 2 * math.pi) - math.pi
        torch.testing.assert_close(read, wrapped, **EXACT)


@PROPERTY_SETTINGS
@given(case=rotary_case())
def test_the_complex_form_equals_the_interleaved_layout(case):
    x, positions = case
    torch.testing.assert_close(
        apply_rotary_complex(x, positions),
        apply_rotary(x, positions, layout="interleaved"),
        **EXACT,
    )


@PROPERTY_SETTINGS
@given(case=rotary_case())
def test_half_is_the_interleaved_layout_with_the_features_permuted(case):
    x, positions = case
    d_head = x.shape[-1]
    permutation = [*range(0, d_head, 2), *range(1, d_head, 2)]  # pair i to (i, i + D_h/2)
    torch.testing.assert_close(
        apply_rotary(x[..., permutation], positions, layout="half"),
        apply_rotary(x, positions, layout="interleaved")[..., permutation],
        **EXACT,
    )


@PROPERTY_SETTINGS
@given(case=rotary_case(), layout=st.sampled_from(ROPE_LAYOUTS))
def test_rotation_keeps_lengths(case, layout):
    x, positions = case
    torch.testing.assert_close(
        apply_rotary(x, positions, layout=layout).norm(dim=-1), x.norm(dim=-1), rtol=1e-12, atol=0
    )


@PROPERTY_SETTINGS
@given(
    seed=seeds,
    m=st.integers(0, 4000),
    n=st.integers(0, 4000),
    shift=st.integers(-2000, 2000),
    layout=st.sampled_from(ROPE_LAYOUTS),
)
def test_a_score_depends_only_on_the_offset(seed, m, n, shift, layout):
    generator = torch.Generator().manual_seed(seed)
    query, key = torch.randn(2, 1, 16, dtype=torch.float64, generator=generator)  # (1, D_h)

    def score(query_position: int, key_position: int) -> float:
        q = apply_rotary(query, torch.tensor([query_position]), layout=layout)
        k = apply_rotary(key, torch.tensor([key_position]), layout=layout)
        return float(q @ k.T)

    both_shifted = score(m + shift, n + shift)
    query_at_zero = score(0, n - m)  # R(m)ᵀ R(n) = R(n - m)
    assert both_shifted == pytest.approx(score(m, n), rel=1e-9, abs=1e-9)
    assert query_at_zero == pytest.approx(score(m, n), rel=1e-9, abs=1e-9)


@PROPERTY_SETTINGS
@given(case=rotary_case(), layout=st.sampled_from(ROPE_LAYOUTS), data=st.data())
def test_a_suffix_rotated_with_its_own_positions_is_the_suffix_of_the_whole(case, layout, data):
    """A cache rotates the new keys alone, at positions t, t + 1, …: the same numbers (up to
    the order of float operations, which vectorised code may change with the length)."""
    x, _ = case
    n_tokens = x.shape[-2]
    start = data.draw(st.integers(0, n_tokens - 1))
    positions = torch.arange(n_tokens)
    whole = apply_rotary(x, positions, layout=layout)
    suffix = apply_rotary(x[..., start:, :], positions[start:], layout=layout)
    torch.testing.assert_close(suffix, whole[..., start:, :], **EXACT)
    complex_whole = apply_rotary_complex(x, positions)
    complex_suffix = apply_rotary_complex(x[..., start:, :], positions[start:])
    torch.testing.assert_close(complex_suffix, complex_whole[..., start:, :], **EXACT)


def test_position_zero_is_the_identity_and_one_pair_is_a_plane_rotation():
    x = torch.randn(3, 6, dtype=torch.float64)
    torch.testing.assert_close(apply_rotary(x, torch.zeros(3, dtype=torch.long)), x, **EXACT)
    pair = apply_rotary(torch.tensor([[2.0, 1.0]], dtype=torch.float64), torch.tensor([3]))
    expected = [2 * math.cos(3) - math.sin(3), 2 * math.sin(3) + math.cos(3)]
    torch.testing.assert_close(pair[0], torch.tensor(expected, dtype=torch.float64), **EXACT)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("rotate", [apply_rotary, apply_rotary_complex])
def test_the_result_keeps_the_dtype(dtype, rotate):
    x = torch.randn(2, 4, 8).to(dtype)
    positions = torch.arange(4)
    rotated = rotate(x, positions)
    assert rotated.dtype == dtype and rotated.device == x.device
    layout = "half" if rotate is apply_rotary else "interleaved"
    reference = apply_rotary(x.double(), positions, layout=layout)
    tolerance = {torch.float32: 1e-6, torch.float16: 1e-2, torch.bfloat16: 5e-2}[dtype]
    torch.testing.assert_close(rotated.double(), reference, rtol=0, atol=tolerance * 4)


@pytest.mark.parametrize("rotate", [apply_rotary, apply_rotary_complex])
def test_gradients_flow_through_the_rotation(rotate):
    x = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    positions = torch.tensor([2, 0, 9])
    assert torch.autograd.gradcheck(lambda t: rotate(t, positions), (x,))
    # A rotation is orthogonal: the gradient of |R x|² / 2 is R^T R x = x.
    (rotate(x, positions).square().sum() / 2).backward()
    torch.testing.assert_close(x.grad, x.detach(), **EXACT)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: apply_rotary("x", torch.arange(2)), TypeError, "x must be a floating-point"),
        (lambda: apply_rotary(torch.ones(2, 4).long(), torch.arange(2)), TypeError, "torch.int64"),
        (lambda: apply_rotary(torch.ones(2, 3), torch.arange(2)), ValueError, r"even.*\(2, 3\)"),
        (lambda: apply_rotary(torch.ones(4), torch.arange(1)), ValueError, r"\(\.\.\., T, D_h\)"),
        (lambda: apply_rotary(torch.ones(2, 4), [0, 1]), TypeError, "positions must be a 1-D"),
        (lambda: apply_rotary(torch.ones(2, 4), torch.ones(2)), TypeError, "positions"),
        (lambda: apply_rotary(torch.ones(2, 4), torch.ones(2).bool()), TypeError, "positions"),
        (
            lambda: apply_rotary(torch.ones(2, 4), torch.arange(3)),
            ValueError,
            r"positions has shape \(3,\), x has shape \(2, 4\) \(T = 2\)",
        ),
        (lambda: apply_rotary(torch.ones(2, 4), torch.zeros(1, 2).long()), ValueError, "positions"),
        (lambda: apply_rotary(torch.ones(2, 4), torch.arange(2), layout="x"), ValueError, "layout"),
        (lambda: apply_rotary(torch.ones(2, 4), torch.arange(2), layout=0), TypeError, "layout"),
        (lambda: apply_rotary(torch.ones(2, 4), torch.arange(2), base=0.0), ValueError, "base"),
        (lambda: apply_rotary(torch.ones(2, 4), torch.arange(2), base="1e4"), TypeError, "base"),
        (lambda: apply_rotary_complex(torch.ones(2, 4), torch.arange(3)), ValueError, "positions"),
        (lambda: apply_rotary_complex(torch.ones(2, 5), torch.arange(2)), ValueError, "D_h even"),
    ],
)  # fmt: skip
def test_bad_input_gets_a_clear_error(call, error, message):
    with pytest.raises(error, match=message):
        call()
