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


def ch6_dependence(attend, x, *, copy=True, exact=True, step=1.0):
    outputs = attend(x)
    table = np.zeros((len(x), len(x)), dtype=bool)
    for j in range(len(x)):
        changed = x.copy() if copy else x
        changed[j] = changed[j] + step
        after = attend(changed)
        if exact:
            table[:, j] = (after != outputs).any(axis=-1)
        else:
            table[:, j] = ~np.isclose(after, outputs).all(axis=-1)
    return table


def test_ch6_dependence_reference_and_stub():
    assert exercises.check_dependence(ch6_dependence).passed
    feedback = exercises.check_dependence(ch6_stub)
    assert not feedback.attempted and "raise NotImplementedError" in feedback.message


def test_ch6_dependence_accepts_a_tiny_threshold_and_other_changes():
    def with_threshold(attend, x):
        outputs = attend(x)
        table = np.zeros((len(x), len(x)), dtype=bool)
        for j in range(len(x)):
            changed = x.copy()
            changed[j] = -2.0 * changed[j] + 3.0  # another clearly different token
            table[:, j] = np.abs(attend(changed) - outputs).max(axis=-1) > 1e-12
        return table

    assert exercises.check_dependence(with_threshold).passed


def test_ch6_dependence_finds_the_leak_that_a_tolerance_misses():
    """The checker's leaky layer really leaks: an exact test sees it, np.allclose does not."""
    from selfattn_lib import attention, softmax

    x = np.random.default_rng(0).normal(size=(4, 3))
    causal = np.tril(np.ones((4, 4), dtype=bool))

    def leaky(x):
        scores = attention.attention_scores(x, x)
        return softmax.softmax(np.where(causal, scores, -20.0)) @ x

    assert ch6_dependence(leaky, x).all()
    np.testing.assert_array_equal(ch6_dependence(leaky, x, exact=False), causal)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda a, x: ch6_dependence(a, x, exact=False), ["leaks", "compare exactly"]),
        (lambda a, x: ch6_dependence(a, x, copy=False), ["changed the array x", "x.copy()"]),
        (lambda a, x: ch6_dependence(a, x).T, ["transpose", "column j"]),
        (lambda a, x: ch6_dependence(a, x, step=0.0), ["False everywhere", "clearly different"]),
        (lambda a, x: ch6_dependence(a, x).astype(int), ["dtype int64", "must be boolean"]),
        (
            lambda a, x: ch6_dependence(a, x) & ~np.eye(len(x), dtype=bool),
            ["[0, 0] is False", "output 0 changes when token 0"],
        ),
        (lambda a, x: ch6_dependence(a, x)[0], ["returned shape (5,)", "expected (5, 5)"]),
    ],
)
def test_ch6_dependence_names_typical_mistakes(answer, fragments):
    assert_ch6_mistake(exercises.check_dependence(answer), *fragments)


# Every checker of the chapter with a correct answer: test_exercises_registry.py runs them.
REFERENCES = {
    **{checker.__name__: solution for checker, solution in CH6_CHECKERS.values()},
    "check_dependence": ch6_dependence,
}


def test_ch6_masked_attention_from_the_library_breaks_the_prompts_rule():
    from selfattn_lib.attention import scaled_dot_product_attention

    def with_library(q, k, v, mask):
        return scaled_dot_product_attention(q, k, v, mask=mask)

    feedback = exercises.check_masked_attention(with_library)
    assert feedback.attempted and not feedback.passed
    assert "but it calls `selfattn_lib.attention" in feedback.message, feedback.message
