"""Tests of the checkers of chapter 11 (selfattn_lib.exercises.ch11_at_scale): each names
the mistake in typical wrong answers and accepts the usual correct alternatives. What every
checker promises is tested once, over REFERENCES, in test_exercises_registry.py."""

import numpy as np
import pytest

from selfattn_lib import exercises


def ch11_longest_sequence(memory_bytes, batch, heads, bytes_per_number):
    import math

    return math.isqrt(memory_bytes // (batch * heads * bytes_per_number))


def ch11_softmax(scores):
    exponentials = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


def ch11_attend_with_cache(q_new, k_new, v_new, k_cache, v_cache):
    k_cache = np.concatenate([k_cache, k_new], axis=1)  # (B, t + 1, D_k)
    v_cache = np.concatenate([v_cache, v_new], axis=1)  # (B, t + 1, D_v)
    scores = q_new @ np.swapaxes(k_cache, 1, 2) / np.sqrt(q_new.shape[-1])  # (B, 1, t + 1)
    return ch11_softmax(scores) @ v_cache, k_cache, v_cache


def ch11_merge_states(state_a, state_b):
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = state_a, state_b
    m = np.maximum(m_a, m_b)
    factor_a, factor_b = np.exp(m_a - m), np.exp(m_b - m)
    return m, l_a * factor_a + l_b * factor_b, acc_a * factor_a[:, None] + acc_b * factor_b[:, None]


def ch11_causal_blocked_attention(q, k, v, block_size):
    n_tokens = q.shape[0]
    output = np.zeros((n_tokens, v.shape[-1]))
    for q_start in range(0, n_tokens, block_size):
        rows = np.arange(q_start, min(q_start + block_size, n_tokens))  # one block of queries
        m = np.full(rows.size, -np.inf)
        total = np.zeros(rows.size)
        acc = np.zeros((rows.size, v.shape[-1]))
        for k_start in range(0, rows[-1] + 1, block_size):  # tiles above the diagonal skipped
            cols = np.arange(k_start, min(k_start + block_size, n_tokens))
            scores = q[rows] @ k[cols].T / np.sqrt(q.shape[-1])
            scores = np.where(cols[None, :] <= rows[:, None], scores, -np.inf)
            m_new = np.maximum(m, scores.max(axis=-1))  # finite: key 0 came first
            factor = np.exp(m - m_new)
            weights = np.exp(scores - m_new[:, None])
            total = total * factor + weights.sum(axis=-1)
            acc = acc * factor[:, None] + weights @ v[cols]
            m = m_new
        output[rows] = acc / total[:, None]
    return output


def ch11_stub(*args):
    raise NotImplementedError


CH11_CHECKERS = {
    "check_longest_sequence": ch11_longest_sequence,
    "check_attend_with_cache": ch11_attend_with_cache,
    "check_merge_softmax_states": ch11_merge_states,
    "check_causal_blocked_attention": ch11_causal_blocked_attention,
}


def assert_ch11_mistake(feedback, *fragments):
    assert feedback.attempted and not feedback.passed, feedback
    for fragment in fragments:
        assert fragment in feedback.message, (fragment, feedback.message)


@pytest.mark.parametrize("name", CH11_CHECKERS)
def test_ch11_checkers_pass_the_reference_and_report_the_stub(name):
    checker = getattr(exercises, name)
    assert checker(CH11_CHECKERS[name]).passed, checker(CH11_CHECKERS[name])
    feedback = checker(ch11_stub)
    assert not feedback.attempted and "raise NotImplementedError" in feedback.message


def test_ch11_longest_sequence_accepts_other_correct_answers():
    def with_float_sqrt(memory_bytes, batch, heads, bytes_per_number):
        return int(np.sqrt(memory_bytes / (batch * heads * bytes_per_number)))

    def by_search(memory_bytes, batch, heads, bytes_per_number):
        t = 0
        while batch * heads * (t + 1) ** 2 * bytes_per_number <= memory_bytes:
            t += 1
        return np.int64(t)

    def as_float(memory_bytes, batch, heads, bytes_per_number):
        return float(np.floor(np.sqrt(memory_bytes / (batch * heads * bytes_per_number))))

    check = exercises.check_longest_sequence
    assert check(with_float_sqrt).passed
    assert check(as_float).passed
    assert check(by_search).passed


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (
            lambda m, b, h, n: int(np.sqrt(m / (b * h))),
            ["returned 17677, expected 12500", "not bytes"],
        ),
        (lambda m, b, h, n: int(np.sqrt(m / (h * n))), ["multiply by batch"]),
        (lambda m, b, h, n: int(np.sqrt(m / (b * n))), ["multiply by heads"]),
        (lambda m, b, h, n: m // (b * h * n), ["T²", "square root"]),
        (
            lambda m, b, h, n: int(np.ceil(np.sqrt(m / (b * h * n)))),
            ["(1000000000, 4, 8, 4) returned 2796, expected 2795", "round down"],
        ),
        (lambda m, b, h, n: int(np.sqrt(m / (b * h * n))) - 1, ["T = 12500 still fits"]),
        (lambda m, b, h, n: int(np.sqrt(m / (b * h * n))) + 1, ["needs", "more than"]),
        (lambda m, b, h, n: np.sqrt(m / (b * h * n)) + 0.5, ["whole number"]),
        (lambda m, b, h, n: None, ["forget the `return`"]),
    ],
)
def test_ch11_longest_sequence_names_typical_mistakes(answer, fragments):
    assert_ch11_mistake(exercises.check_longest_sequence(answer), *fragments)


def test_ch11_attend_with_cache_accepts_lists_and_other_formulations():
    def with_lists(q_new, k_new, v_new, k_cache, v_cache):
        output, keys, values = ch11_attend_with_cache(q_new, k_new, v_new, k_cache, v_cache)
        return [output.tolist(), keys, values]

    def with_einsum(q_new, k_new, v_new, k_cache, v_cache):
        keys = np.concatenate((k_cache, k_new), axis=-2)
        values = np.concatenate((v_cache, v_new), axis=-2)
        scores = np.einsum("bqd,bkd->bqk", q_new, keys) / np.sqrt(keys.shape[-1])
        return np.einsum("bqk,bkd->bqd", ch11_softmax(scores), values), keys, values

    assert exercises.check_attend_with_cache(with_lists).passed
    assert exercises.check_attend_with_cache(with_einsum).passed


def ch11_attend_then_append(q_new, k_new, v_new, k_cache, v_cache):
    if k_cache.shape[1] == 0:  # nothing to attend to yet: this bug needs the cache first
        return v_new.copy(), k_new, v_new
    scores = q_new @ np.swapaxes(k_cache, 1, 2) / np.sqrt(q_new.shape[-1])
    output = ch11_softmax(scores) @ v_cache
    return output, np.concatenate([k_cache, k_new], 1), np.concatenate([v_cache, v_new], 1)


def ch11_unscaled(q_new, k_new, v_new, k_cache, v_cache):
    return ch11_attend_with_cache(q_new * np.sqrt(q_new.shape[-1]), k_new, v_new, k_cache, v_cache)


def ch11_prepend(q_new, k_new, v_new, k_cache, v_cache):
    output, _, _ = ch11_attend_with_cache(q_new, k_new, v_new, k_cache, v_cache)
    return output, np.concatenate([k_new, k_cache], 1), np.concatenate([v_new, v_cache], 1)


def ch11_old_cache(q_new, k_new, v_new, k_cache, v_cache):
    output, _, _ = ch11_attend_with_cache(q_new, k_new, v_new, k_cache, v_cache)
    return output, k_cache, v_cache


def ch11_appended_twice(q_new, k_new, v_new, k_cache, v_cache):
    output, keys, values = ch11_attend_with_cache(q_new, k_new, v_new, k_cache, v_cache)
    return output, np.concatenate([keys, k_new], 1), values


def ch11_squeezed(q_new, k_new, v_new, k_cache, v_cache):
    output, keys, values = ch11_attend_with_cache(q_new, k_new, v_new, k_cache, v_cache)
    return output[:, 0], keys, values


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (ch11_attend_then_append, ["only to the 2 cached keys", "Append the new key"]),
        (ch11_unscaled, ["not divided by √D_k"]),
        (ch11_prepend, ["FRONT of k_cache", "append at the end"]),
        (ch11_old_cache, ["the old cache", "(2, 3, 4)"]),
        (ch11_appended_twice, ["k_cache of shape (2, 4, 4), expected (2, 3, 4)", "axis=1"]),
        (ch11_squeezed, ["shape (2, 3)", "(B, 1, D_v)"]),
        (lambda *args: ch11_attend_with_cache(*args)[0], ["three things"]),
        (lambda *args: None, ["forget the `return`"]),
    ],
)
def test_ch11_attend_with_cache_names_typical_mistakes(answer, fragments):
    assert_ch11_mistake(exercises.check_attend_with_cache(answer), *fragments)


def test_ch11_merge_states_accepts_any_equivalent_representation():
    def against_the_first_maximum_when_safe(state_a, state_b):
        m, total, acc = ch11_merge_states(state_a, state_b)
        shift = m - 1.0  # the same keys, measured from another reference point
        return shift, total * np.exp(m - shift), acc * np.exp(m - shift)[:, None]

    def as_lists(state_a, state_b):
        return [part.tolist() for part in ch11_merge_states(state_a, state_b)]

    def by_log_sum_exp(state_a, state_b):
        (m_a, l_a, acc_a), (m_b, l_b, acc_b) = state_a, state_b
        with np.errstate(divide="ignore"):
            log_a, log_b = m_a + np.log(l_a), m_b + np.log(l_b)
        log_total = np.logaddexp(log_a, log_b)
        weight_a, weight_b = np.exp(m_a - log_total), np.exp(m_b - log_total)
        acc = acc_a * weight_a[:, None] + acc_b * weight_b[:, None]
        return log_total, np.ones_like(log_total), acc

    check = exercises.check_merge_softmax_states
    assert check(against_the_first_maximum_when_safe).passed
    assert check(as_lists).passed
    assert check(by_log_sum_exp).passed


def ch11_merge_no_rescale(state_a, state_b):
    return np.maximum(state_a[0], state_b[0]), state_a[1] + state_b[1], state_a[2] + state_b[2]


def ch11_merge_upside_down(state_a, state_b):
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = state_a, state_b
    m = np.maximum(m_a, m_b)
    factor_a, factor_b = np.exp(m - m_a), np.exp(m - m_b)
    return m, l_a * factor_a + l_b * factor_b, acc_a * factor_a[:, None] + acc_b * factor_b[:, None]


def ch11_merge_acc_not_rescaled(state_a, state_b):
    m, total, _ = ch11_merge_states(state_a, state_b)
    return m, total, state_a[2] + state_b[2]


def ch11_merge_normalised(state_a, state_b):
    m, total, acc = ch11_merge_states(state_a, state_b)
    return m, total, acc / total[:, None]


def ch11_merge_against_b(state_a, state_b):
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = state_a, state_b
    factor = np.exp(m_a - m_b)  # overflows when block a has much larger scores
    return m_b, l_a * factor + l_b, acc_a * factor[:, None] + acc_b


def ch11_merge_nan_for_empty(state_a, state_b):
    if np.isinf(state_a[0]).any():
        return state_a[0] * 0 + np.nan, state_a[1], state_a[2]
    return ch11_merge_states(state_a, state_b)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (ch11_merge_no_rescale, ["added l_a + l_b", "rescale"]),
        (ch11_merge_upside_down, ["upside down"]),
        (ch11_merge_acc_not_rescaled, ["l is right but acc is not"]),
        (ch11_merge_normalised, ["already divided by l"]),
        (ch11_merge_against_b, ["scores around 1000", "overflowed", "LARGER maximum"]),
        (ch11_merge_nan_for_empty, ["empty starting state", "exp(−inf)"]),
        (lambda a, b: a, ["describes different keys"]),
        (lambda a, b: (a[0], a[1]), ["three arrays"]),
        (lambda a, b: (a[0][:2], a[1], a[2]), ["shapes (2,)"]),
    ],
)
def test_ch11_merge_states_names_typical_mistakes(answer, fragments):
    assert_ch11_mistake(exercises.check_merge_softmax_states(answer), *fragments)


def ch11_direct_causal(q, k, v, block_size, diagonal=0):
    scores = q @ k.T / np.sqrt(q.shape[-1])
    allowed = np.tril(np.ones(scores.shape, dtype=bool), k=diagonal)
    return ch11_softmax(np.where(allowed, scores, -np.inf)) @ v


def ch11_blocked_without_mask(q, k, v, block_size):
    scores = q @ k.T / np.sqrt(q.shape[-1])
    return ch11_softmax(scores) @ v


def ch11_blocked_strict(q, k, v, block_size):
    return np.nan_to_num(ch11_direct_causal(q, k, v, block_size, diagonal=-1))


def ch11_blocked_future(q, k, v, block_size):
    return ch11_direct_causal(q[::-1], k[::-1], v[::-1], block_size)[::-1]


def ch11_blocked_nan(q, k, v, block_size):
    output = np.zeros((q.shape[0], v.shape[-1]))
    m = np.full(q.shape[0], -np.inf)
    total = np.zeros(q.shape[0])
    for start in reversed(range(0, q.shape[0], block_size)):  # the last key block first
        cols = np.arange(start, min(start + block_size, q.shape[0]))
        scores = q @ k[cols].T / np.sqrt(q.shape[-1])
        scores = np.where(cols[None, :] <= np.arange(q.shape[0])[:, None], scores, -np.inf)
        m_new = np.maximum(m, scores.max(axis=-1))
        with np.errstate(invalid="ignore"):
            factor = np.exp(m - m_new)  # NaN where both are -inf
            weights = np.exp(scores - m_new[:, None])
        total = total * factor + weights.sum(axis=-1)
        output = output * factor[:, None] + weights @ v[cols]
        m = m_new
    return output / total[:, None]


def ch11_blocked_no_rescale(q, k, v, block_size):
    output = ch11_causal_blocked_attention(q, k, v, q.shape[0])  # one block: right
    return output if block_size >= q.shape[0] else output * 1.1


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (ch11_blocked_without_mask, ["WITHOUT the mask"]),
        (ch11_blocked_strict, ["hides the diagonal"]),
        (ch11_blocked_future, ["AFTER it"]),
        (ch11_blocked_no_rescale, ["is off at index"]),
        (lambda q, k, v, b: q, ["returned shape (7, 4), expected (7, 3)"]),
    ],
)
def test_ch11_causal_blocked_attention_names_typical_mistakes(answer, fragments):
    assert_ch11_mistake(exercises.check_causal_blocked_attention(answer), *fragments)


def test_ch11_causal_blocked_attention_explains_nan_from_fully_masked_blocks():
    assert ch11_blocked_nan(np.ones((3, 2)), np.ones((3, 2)), np.ones((3, 1)), 3).shape == (3, 1)
    with np.errstate(invalid="ignore"):
        feedback = exercises.check_causal_blocked_attention(ch11_blocked_nan)
    assert_ch11_mistake(feedback, "NaN", "−inf")


def ch11_direct_by_einsum(q, k, v, block_size):
    scores = np.einsum("id,jd->ij", q, k) / np.sqrt(q.shape[-1])
    return ch11_softmax(np.where(np.tril(np.ones(scores.shape, dtype=bool)), scores, -np.inf)) @ v


def ch11_direct_by_broadcasting(q, k, v, block_size):
    scores = (q[:, None, :] * (k / np.sqrt(q.shape[-1]))[None]).sum(axis=-1)
    return ch11_softmax(np.where(np.tril(np.ones(scores.shape, dtype=bool)), scores, -np.inf)) @ v


def ch11_blocked_every_tile(q, k, v, block_size):
    """Blocked with online softmax, but every key block for every query block."""
    n_tokens = q.shape[0]
    output = np.zeros((n_tokens, v.shape[-1]))
    for q_start in range(0, n_tokens, block_size):
        rows = np.arange(q_start, min(q_start + block_size, n_tokens))
        m, total = np.full(rows.size, -np.inf), np.zeros(rows.size)
        acc = np.zeros((rows.size, v.shape[-1]))
        for k_start in range(0, n_tokens, block_size):  # the future tiles too
            cols = np.arange(k_start, min(k_start + block_size, n_tokens))
            scores = q[rows] @ k[cols].T / np.sqrt(q.shape[-1])
            scores = np.where(cols[None, :] <= rows[:, None], scores, -np.inf)
            m_new = np.maximum(m, scores.max(axis=-1))
            factor, weights = np.exp(m - m_new), np.exp(scores - m_new[:, None])
            total = total * factor + weights.sum(axis=-1)
            acc = acc * factor[:, None] + weights @ v[cols]
            m = m_new
        output[rows] = acc / total[:, None]
    return output


@pytest.mark.parametrize(
    "answer",
    [
        ch11_direct_causal,
        ch11_direct_by_einsum,
        ch11_direct_by_broadcasting,
        ch11_blocked_every_tile,
    ],
)
def test_ch11_causal_blocked_attention_rejects_right_results_that_compute_every_tile(answer):
    feedback = exercises.check_causal_blocked_attention(answer)
    assert_ch11_mistake(feedback, "the result is right", "16,384 multiplications", "36 are needed")


# Every checker of the chapter with a correct answer: test_exercises_registry.py runs them.
REFERENCES = dict(CH11_CHECKERS)


def test_ch11_attend_with_cache_in_pytorch_breaks_the_prompts_rule():
    torch = pytest.importorskip("torch")

    def with_torch(q_new, k_new, v_new, k_cache, v_cache):
        k_cache = np.concatenate([k_cache, k_new], axis=1)
        v_cache = np.concatenate([v_cache, v_new], axis=1)
        output = torch.nn.functional.scaled_dot_product_attention(
            *(torch.from_numpy(a) for a in (q_new, k_cache, v_cache))
        )
        return output.numpy(), k_cache, v_cache

    feedback = exercises.check_attend_with_cache(with_torch)
    assert feedback.attempted and not feedback.passed
    assert "but it calls `torch." in feedback.message, feedback.message
