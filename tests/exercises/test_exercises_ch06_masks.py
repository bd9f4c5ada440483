"""Tests of the checkers of chapter 6 (selfattn_lib.exercises.ch06_masks): each names
the mistake in typical wrong answers and accepts the usual correct alternatives. What every
checker promises is tested once, over REFERENCES, in test_exercises_registry.py."""

import numpy as np
import pytest

from selfattn_lib import exercises, masks


def ch6_look_back_mask(t, window):
    offset = np.arange(t)[:, None] - np.arange(t)[None, :]  # i - j
    return (offset >= 0) & (offset < window)


def ch6_left_padding_mask(lengths, max_len):
    return (np.arange(max_len) >= max_len - lengths[:, None])[:, None, :]


def ch6_masked_attention(
    q, k, v, mask, *, fill=-np.inf, safe=True, scale=True, divisor=None, shift=True, values=None
):
    """The reference, or one of the usual slips (each keyword changes one thing)."""
    scores = q @ np.swapaxes(k, -1, -2)
    if scale:
        scores = scores / (np.sqrt(q.shape[-1]) if divisor is None else divisor(q, k, v))
    scores = np.where(mask, scores, fill)
    largest = scores.max(axis=-1, keepdims=True) if shift else np.zeros_like(scores[..., :1])
    if safe:
        largest = np.where(np.isneginf(largest), 0.0, largest)
    with np.errstate(over="ignore", invalid="ignore"):  # the slips' overflow and 0/0
        exponentials = np.exp(scores - largest)
        totals = exponentials.sum(axis=-1, keepdims=True)
        if safe:
            weights = np.divide(
                exponentials, totals, out=np.zeros_like(exponentials), where=totals > 0
            )
        else:
            weights = exponentials / totals
    return weights @ (v if values is None else values(q, k, v)), weights


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
        (lambda t, w: ch6_band(t, 0, t), ["plain causal mask", "i - window < j <= i"]),
        (lambda t, w: ch6_band(t, 0, w - 1).T, ["FUTURE key"]),
        (lambda t, w: np.tri(t, t, 0) - np.tri(t, t, -w), ["dtype float64", "must be boolean"]),
    ],
    ids=[
        "k=-1",
        "inverted",
        "symmetric",
        "window + 1",
        "window - 1",
        "int",
        "causal",
        "T",
        "float",
    ],
)
def test_ch6_look_back_mask_names_typical_mistakes(answer, fragments):
    assert_ch6_mistake(exercises.check_look_back_mask(answer), *fragments)


@pytest.mark.parametrize(
    "answer",
    [
        lambda t, w: np.tril(np.ones((t, t), bool)) & ~np.tril(np.ones((t, t), bool), k=-w),
        lambda t, w: np.triu(np.tril(np.ones((t, t), dtype=bool)), k=-(w - 1)),
        lambda t, w: [[i - w < j <= i for j in range(t)] for i in range(t)],
        lambda t, w: masks.causal_mask(t) & ~np.tril(np.ones((t, t), bool), k=-w),
    ],
    ids=["tril", "triu of tril", "list of rows", "selfattn_lib.masks"],
)
def test_ch6_look_back_mask_accepts_correct_variants(answer):
    assert exercises.check_look_back_mask(answer).passed


def test_ch6_look_back_mask_accepts_a_torch_tensor():
    torch = pytest.importorskip("torch")

    def with_torch(t, window):
        ones = torch.ones(t, t, dtype=torch.bool)
        return ones.tril() & ~ones.tril(-window)

    assert exercises.check_look_back_mask(with_torch).passed


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
        (
            lambda lengths, m: (np.arange(m) >= (lengths.max() - lengths)[:, None])[:, None, :],
            ["([2, 4], max_len=6)", "lengths.max() = 4", "max_len - lengths[b]"],
        ),
        (
            lambda lengths, m: np.array(
                [[np.isin(np.arange(m), np.arange(m)[-n:])] for n in lengths]
            ),
            ["length 0 real", "because -0 is 0"],
        ),
        (lambda lengths, m: ch6_left(lengths, m)[:, None, :].astype(np.int8), ["dtype int8"]),
    ],
    ids=["(B, T)", "(B, T, 1)", "inverted", "right", ">", "one too many", "max", "-0", "int8"],
)
def test_ch6_left_padding_mask_names_typical_mistakes(answer, fragments):
    assert_ch6_mistake(exercises.check_left_padding_mask(answer), *fragments)


@pytest.mark.parametrize(
    "answer",
    [
        lambda lengths, m: masks.padding_mask(lengths, m)[..., ::-1],
        lambda lengths, m: np.array([[[j >= m - n for j in range(m)]] for n in lengths]),
        lambda lengths, m: np.flip(np.arange(m) < lengths[:, None], axis=-1)[:, None, :],
    ],
    ids=["flipped right padding", "list of rows", "np.flip"],
)
def test_ch6_left_padding_mask_accepts_correct_variants(answer):
    assert exercises.check_left_padding_mask(answer).passed


def ch6_mask_after_softmax(q, k, v, mask, *, renormalise=False):
    _, weights = ch6_masked_attention(q, k, v, np.ones(1, dtype=bool))
    weights = weights * mask
    if renormalise:  # divide each row by its sum, guarding the empty rows
        totals = weights.sum(axis=-1, keepdims=True)
        weights = np.divide(weights, totals, out=np.zeros_like(weights), where=totals > 0)
    return weights @ v, weights


def ch6_output_before_the_mask(q, k, v, mask):
    _, weights = ch6_masked_attention(q, k, v, mask)
    unmasked, _ = ch6_masked_attention(q, k, v, np.ones(1, dtype=bool))
    return unmasked, weights


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda q, k, v, m: ch6_masked_attention(q, k, v, m, fill=-1e9), ["-1e9 leak", "1/5"]),
        (lambda q, k, v, m: ch6_masked_attention(q, k, v, m, safe=False), ["NaN", "0 by 0"]),
        (ch6_mask_after_softmax, ["AFTER the softmax"]),
        (lambda q, k, v, m: ch6_masked_attention(q, k, v, ~m), ["inverted"]),
        (lambda q, k, v, m: ch6_masked_attention(q, k, v, m, scale=False), ["√d_k"]),
        (lambda q, k, v, m: ch6_masked_attention(q, k, v, m)[1], ["pair (output, weights)"]),
        (lambda q, k, v, m: ch6_masked_attention(q, k, v, m)[::-1], ["returned (weights, output)"]),
        (
            lambda q, k, v, m: ch6_mask_after_softmax(q, k, v, m, renormalise=True),
            ["scores about 1000", "query 0 may attend to keys 0, 1", "masking AFTER the softmax"],
        ),
        (
            lambda q, k, v, m: ch6_masked_attention(q, k, v, m, shift=False),
            ["NaN for query 1", "overflows to inf", "largest score before np.exp"],
        ),
        (
            lambda q, k, v, m: ch6_masked_attention(q, k, v, m, divisor=lambda q, k, v: 4.0),
            ["scaled by 1/d_k = 1/4", "square root"],
        ),
        (
            lambda q, k, v, m: ch6_masked_attention(
                q, k, v, m, divisor=lambda q, k, v: np.sqrt(v.shape[-1])
            ),
            ["1/√2, the size of the values"],
        ),
        (
            lambda q, k, v, m: ch6_masked_attention(
                q, k, v, m, divisor=lambda q, k, v: np.sqrt(k.shape[-2])
            ),
            ["1/√5, the number of keys"],
        ),
        (
            lambda q, k, v, m: ch6_masked_attention(
                q, k, v, m, divisor=lambda q, k, v: np.sqrt(q.shape[-2])
            ),
            ["1/√3, the number of queries"],
        ),
        (ch6_output_before_the_mask, ["weights before the mask"]),
        (
            lambda q, k, v, m: ch6_masked_attention(q, k, v, m, values=lambda q, k, v: k),
            ["d_k = 4 columns", "Average the VALUES"],
        ),
    ],
    ids=[
        "-1e9",
        "NaN rows",
        "after the softmax",
        "inverted",
        "unscaled",
        "weights only",
        "swapped",
        "renormalised after",
        "no shift",
        "by d_k",
        "by sqrt(D_v)",
        "by sqrt(T_k)",
        "by sqrt(T_q)",
        "output unmasked",
        "average of keys",
    ],
)
def test_ch6_masked_attention_names_typical_mistakes(answer, fragments):
    assert_ch6_mistake(exercises.check_masked_attention(answer), *fragments)


def ch6_masked_attention_textbook_then_zeros(q, k, v, mask):
    with np.errstate(invalid="ignore"):  # 0/0 in the empty rows, replaced just below
        _, weights = ch6_masked_attention(q, k, v, mask, safe=False)
    weights = np.nan_to_num(weights)
    return weights @ v, weights


def ch6_masked_attention_minus_1e9_then_zeros(q, k, v, mask):
    _, weights = ch6_masked_attention(q, k, v, mask, fill=-1e9)
    weights = np.where(np.broadcast_to(mask, weights.shape).any(-1, keepdims=True), weights, 0.0)
    return weights @ v, weights


def ch6_masked_attention_einsum(q, k, v, mask):
    scores = np.einsum("bqd,bkd->bqk", q, k) / np.sqrt(q.shape[-1])
    scores = np.where(mask, scores, -np.inf)
    largest = scores.max(axis=-1, keepdims=True)
    largest[~np.isfinite(largest)] = 0.0
    exponentials = np.exp(scores - largest) * mask
    totals = exponentials.sum(axis=-1, keepdims=True)
    weights = np.where(totals > 0, exponentials / np.where(totals > 0, totals, 1.0), 0.0)
    return np.einsum("bqk,bkd->bqd", weights, v), weights


def ch6_masked_attention_float32(q, k, v, mask):
    return ch6_masked_attention(*(a.astype(np.float32) for a in (q, k, v)), mask)


def ch6_masked_attention_masked_array(q, k, v, mask):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    scores = np.ma.masked_array(scores, mask=~np.broadcast_to(mask, scores.shape))
    exponentials = np.ma.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = (exponentials / exponentials.sum(axis=-1, keepdims=True)).filled(0.0)
    return weights @ v, weights


@pytest.mark.parametrize(
    "answer",
    [
        ch6_masked_attention_textbook_then_zeros,
        ch6_masked_attention_minus_1e9_then_zeros,
        ch6_masked_attention_einsum,
        ch6_masked_attention_float32,
        ch6_masked_attention_masked_array,
    ],
    ids=["nan_to_num", "-1e9, empty rows zeroed", "einsum", "float32", "masked array"],
)
def test_ch6_masked_attention_accepts_correct_variants(answer):
    assert exercises.check_masked_attention(answer).passed


def test_ch6_masked_attention_checker_keeps_warnings_quiet(recwarn):
    exercises.check_masked_attention(
        lambda q, k, v, m: ch6_masked_attention(q, k, v, m, safe=False)
    )
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def ch6_dependence(
    attend, x, *, copy=True, exact=True, step=1.0, changed_features=slice(None), reduce=np.any
):
    outputs = attend(x)
    table = np.zeros((len(x), len(x)), dtype=bool)
    for j in range(len(x)):
        changed = x.copy() if copy else x
        changed[j, changed_features] = changed[j, changed_features] + step
        after = attend(changed)
        if exact:
            table[:, j] = reduce(after != outputs, axis=-1)
        else:
            table[:, j] = ~np.isclose(after, outputs).all(axis=-1)
    return table


def test_ch6_dependence_reference_and_stub():
    assert exercises.check_dependence(ch6_dependence).passed
    feedback = exercises.check_dependence(ch6_stub)
    assert not feedback.attempted and "raise NotImplementedError" in feedback.message


def ch6_dependence_above(attend, x, threshold):
    """Counts a change only above ``threshold`` (the prompt says: in any bit)."""
    outputs = attend(x)
    table = np.zeros((len(x), len(x)), dtype=bool)
    for j in range(len(x)):
        changed = x.copy()
        changed[j] = -2.0 * changed[j] + 3.0  # another clearly different token
        table[:, j] = np.abs(attend(changed) - outputs).max(axis=-1) > threshold
    return table


def test_ch6_dependence_accepts_another_clearly_different_change():
    assert exercises.check_dependence(lambda a, x: ch6_dependence_above(a, x, 0.0)).passed


@pytest.mark.parametrize("threshold", [1e-12, 3e-12, 1e-11])
def test_ch6_dependence_rejects_a_threshold(threshold):
    feedback = exercises.check_dependence(lambda a, x: ch6_dependence_above(a, x, threshold))
    assert_ch6_mistake(
        feedback, "leaks very little", "only some future tokens reach", "or a threshold"
    )


@pytest.mark.parametrize(
    ("hidden_score", "smallest", "largest"), [(-20.0, 9e-12, 5e-10), (-25.0, 6e-14, 3.1e-12)]
)
def test_ch6_dependence_finds_the_leak_that_a_tolerance_misses(hidden_score, smallest, largest):
    """The checker's leaky layers really leak, by the weights its feedback names, on its own
    x: an exact test sees every leak, np.allclose none of them."""
    from selfattn_lib import attention, softmax

    x = np.random.default_rng(6).normal(size=(5, 4))  # the checker's x
    causal = np.tril(np.ones((5, 5), dtype=bool))

    def leaky(x):
        scores = attention.attention_scores(x, x)
        return softmax.softmax(np.where(causal, scores, hidden_score)) @ x

    weights = softmax.softmax(np.where(causal, attention.attention_scores(x, x), hidden_score))
    future = weights[~causal]
    assert np.isclose(future.min(), smallest, rtol=0.1) and future.max() < largest
    assert ch6_dependence(leaky, x).all()
    np.testing.assert_array_equal(ch6_dependence(leaky, x, exact=False), causal)


def ch6_dependence_restoring_in_place(attend, x):
    outputs = attend(x)
    table = np.zeros((len(x), len(x)), dtype=bool)
    for j in range(len(x)):
        x[j] += 1.0  # in place, then "restored": x[j] + 1 - 1 need not give x[j]'s bits back
        table[:, j] = (attend(x) != outputs).any(axis=-1)
        x[j] -= 1.0
    return table


def ch6_dependence_replacing_tokens(attend, x, replace):
    outputs = attend(x)
    table = np.zeros((len(x), len(x)), dtype=bool)
    for j in range(len(x)):
        changed = x.copy()
        changed[j] = replace(x[j], j)
        table[:, j] = ~np.all(attend(changed) == outputs, axis=-1)
    return table


@pytest.mark.parametrize(
    "replace",
    [
        lambda token, j: np.random.default_rng(j).normal(size=token.shape),
        lambda token, j: -token,
        lambda token, j: np.zeros_like(token),
        lambda token, j: token + 100.0,
        lambda token, j: 10.0 * token,
    ],
    ids=["random", "negated", "zeros", "+100", "times 10"],
)
def test_ch6_dependence_accepts_other_clearly_different_tokens(replace):
    answer = lambda attend, x: ch6_dependence_replacing_tokens(attend, x, replace)  # noqa: E731
    assert exercises.check_dependence(answer).passed


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (
            lambda a, x: ch6_dependence(a, x, exact=False),
            ["leaks a little", "the future does not reach", "compare exactly"],
        ),
        (lambda a, x: ch6_dependence(a, x, copy=False), ["changed the array x", "x.copy()"]),
        (lambda a, x: ch6_dependence(a, x).T, ["transpose", "column j"]),
        (lambda a, x: ch6_dependence(a, x, step=0.0), ["False everywhere", "clearly different"]),
        (lambda a, x: ch6_dependence(a, x).astype(int), ["dtype int64", "must be boolean"]),
        (
            lambda a, x: ch6_dependence(a, x) & ~np.eye(len(x), dtype=bool),
            ["[0, 0] is False", "output 0 changes when token 0"],
        ),
        (lambda a, x: ch6_dependence(a, x)[0], ["returned shape (5,)", "expected (5, 5)"]),
        (
            lambda a, x: ch6_dependence(a, x, reduce=np.all),
            ["shifts feature f", "`.any(axis=-1)`, not `.all(axis=-1)`"],
        ),
        (
            lambda a, x: ch6_dependence(lambda x: a(x)[:, :1], x),
            ["sees only the diagonal", "compare EVERY feature"],
        ),
        (
            lambda a, x: ch6_dependence(a, x, changed_features=0),
            ["sees only the diagonal", "change EVERY feature of token j"],
        ),
        (lambda a, x: ch6_dependence(a, x, step=1e-13), ["leaks", "lost in rounding"]),
        (ch6_dependence_restoring_in_place, ["changed the array x"]),
    ],
    ids=[
        "np.isclose",
        "no copy",
        "transposed",
        "no change",
        "int",
        "no diagonal",
        "one row",
        ".all",
        "feature 0 only",
        "token's feature 0 only",
        "change of 1e-13",
        "restored in place",
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
