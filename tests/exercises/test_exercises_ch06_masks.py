"""Tests of the checkers of chapter 6 (selfattn_lib.exercises.ch06_masks): each names
the mistake in typical wrong answers and accepts the usual correct alternatives. What every
checker promises is tested once, over REFERENCES, in test_exercises_registry.py."""

import numpy as np
import pytest

from selfattn_lib import exercises


def ch6_look_back_mask(t, window):
    offset = np.arange(t)[:, None] - np.arange(t)[None, :]  # i - j
    return (offset >= 0) & (offset < window)


def ch6_left_padding_mask(lengths, max_len):
    return (np.arange(max_len) >= max_len - lengths[:, None])[:, None, :]


def ch6_masked_attention(q, k, v, mask, *, fill=-np.inf, safe=True, scale=True):
    scores = q @ np.swapaxes(k, -1, -2)
    if scale:
        scores = scores / np.sqrt(q.shape[-1])
    scores = np.where(mask, scores, fill)
    largest = scores.max(axis=-1, keepdims=True)
    if safe:
        largest = np.where(np.isneginf(largest), 0.0, largest)
    exponentials = np.exp(scores - largest)
    totals = exponentials.sum(axis=-1, keepdims=True)
    if safe:
        weights = np.divide(exponentials, totals, out=np.zeros_like(exponentials), where=totals > 0)
    else:
        weights = exponentials / totals
    return weights @ v, weights


def ch6_stub(*args):
    raise NotImplementedError


CH6_CHECKERS = {
    "look_back_mask": (exercises.check_look_back_mask, ch6_look_back_mask),
    "left_padding_mask": (exercises.check_left_padding_mask, ch6_left_padding_mask),
    "masked_attention": (exercises.check_masked_attention, ch6_masked_attention),
}


def assert_ch6_mistake(feedback, *fragments):
    assert feedback.attempted and not feedback.passed, feedback
    for fragment in fragments:
        assert fragment in feedback.message, feedback.message


def ch6_band(t, low, high):
    offset = np.arange(t)[:, None] - np.arange(t)[None, :]
    return (offset >= low) & (offset <= high)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda t, w: ch6_band(t, 1, w - 1), ["False on the diagonal", "k=-1"]),
        (lambda t, w: ~ch6_look_back_mask(t, w), ["'True = ignore' convention"]),
        (lambda t, w: ch6_band(t, -w + 1, w - 1), ["FUTURE key"]),
        (lambda t, w: ch6_band(t, 0, w), ["one too many"]),
        (lambda t, w: ch6_band(t, 0, w - 2), ["one too few"]),
        (lambda t, w: ch6_look_back_mask(t, w).astype(int), ["dtype int64", "must be boolean"]),
    ],
)
def test_ch6_look_back_mask_names_typical_mistakes(answer, fragments):
    assert_ch6_mistake(exercises.check_look_back_mask(answer), *fragments)


def ch6_left(lengths, m, shift=0):
    return np.arange(m) >= m - lengths[:, None] + shift


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda lengths, m: ch6_left(lengths, m), ["(B, T_k)", "[:, None, :]"]),
        (lambda lengths, m: ch6_left(lengths, m)[:, :, None], ["(B, T_k, 1)"]),
        (lambda lengths, m: ~ch6_left(lengths, m)[:, None, :], ["True on the padding"]),
        (
            lambda lengths, m: (np.arange(m) < lengths[:, None])[:, None, :],
            ["RIGHT-padded batch"],
        ),
        (lambda lengths, m: ch6_left(lengths, m, 1)[:, None, :], ["hides the first real token"]),
        (lambda lengths, m: ch6_left(lengths, m, -1)[:, None, :], ["one padding position too"]),
    ],
)
def test_ch6_left_padding_mask_names_typical_mistakes(answer, fragments):
    assert_ch6_mistake(exercises.check_left_padding_mask(answer), *fragments)


def ch6_mask_after_softmax(q, k, v, mask):
    _, weights = ch6_masked_attention(q, k, v, np.ones(1, dtype=bool))
    weights = weights * mask
    return weights @ v, weights


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda q, k, v, m: ch6_masked_attention(q, k, v, m, fill=-1e9), ["-1e9 leak", "1/5"]),
        (lambda q, k, v, m: ch6_masked_attention(q, k, v, m, safe=False), ["NaN", "0 by 0"]),
        (ch6_mask_after_softmax, ["AFTER the softmax"]),
        (lambda q, k, v, m: ch6_masked_attention(q, k, v, ~m), ["inverted"]),
        (lambda q, k, v, m: ch6_masked_attention(q, k, v, m, scale=False), ["√d_k"]),
        (lambda q, k, v, m: ch6_masked_attention(q, k, v, m)[1], ["pair (output, weights)"]),
    ],
)
def test_ch6_masked_attention_names_typical_mistakes(answer, fragments):
    assert_ch6_mistake(exercises.check_masked_attention(answer), *fragments)


def test_ch6_masked_attention_checker_keeps_warnings_quiet(recwarn):
    exercises.check_masked_attention(
        lambda q, k, v, m: ch6_masked_attention(q, k, v, m, safe=False)
    )
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def ch6_mha_attn_mask(mask, n_heads):
    return np.repeat(~mask, n_heads, axis=0)


def test_ch6_mha_attn_mask_reference_and_stub():
    assert exercises.check_mha_attn_mask(ch6_mha_attn_mask).passed
    feedback = exercises.check_mha_attn_mask(ch6_stub)
    assert not feedback.attempted and "raise NotImplementedError" in feedback.message


def test_ch6_mha_attn_mask_matches_torch_multihead_attention():
    torch = pytest.importorskip("torch")
    from selfattn_lib.multihead import MultiHeadParams, multi_head_attention

    rng = np.random.default_rng(0)
    params = MultiHeadParams.init(4, rng, bias=False)
    x = rng.normal(size=(2, 3, 4))
    mask = np.tril(np.ones((3, 3), dtype=bool)) & (np.arange(3) < np.array([3, 1])[:, None, None])
    mha = torch.nn.MultiheadAttention(4, 2, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(
            torch.from_numpy(np.concatenate([params.w_q.T, params.w_k.T, params.w_v.T]))
        )
        mha.out_proj.weight.copy_(torch.from_numpy(params.w_o.T))
        xt = torch.from_numpy(x)
        theirs, _ = mha(xt, xt, xt, attn_mask=torch.from_numpy(ch6_mha_attn_mask(mask, 2)))
    ours, _ = multi_head_attention(x, x, params, n_heads=2, mask=mask)
    np.testing.assert_allclose(ours, theirs.numpy(), atol=1e-12)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda m, h: np.repeat(m, h, axis=0), ["True means IGNORE"]),
        (lambda m, h: np.tile(~m, (h, 1, 1)), ["wrong order", "np.repeat"]),
        (lambda m, h: ~m, ["(B, T_q, T_k)", "B * H"]),
        (lambda m, h: np.repeat(~m[:, None], h, axis=1), ["(B, H, T_q, T_k)"]),
        (lambda m, h: np.repeat(~m, h, axis=0).astype(int), ["must be boolean"]),
    ],
)
def test_ch6_mha_attn_mask_names_typical_mistakes(answer, fragments):
    assert_ch6_mistake(exercises.check_mha_attn_mask(answer), *fragments)


# Every checker of the chapter with a correct answer: test_exercises_registry.py runs them.
REFERENCES = {
    **{checker.__name__: solution for checker, solution in CH6_CHECKERS.values()},
    "check_mha_attn_mask": ch6_mha_attn_mask,
}
