"""Tests of the checkers of chapter 11 (selfattn_lib.exercises.ch11_at_scale): each names
the mistake in typical wrong answers and accepts the usual correct alternatives. What every
checker promises is tested once, over REFERENCES, in test_exercises_registry.py."""

import math

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


def ch11_merge_states(state_a, state_b, *, guard=True):
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = state_a, state_b
    m = np.maximum(m_a, m_b)
    with np.errstate(invalid="ignore"):  # -inf - (-inf) for two empty states
        factor_a, factor_b = np.exp(m_a - m), np.exp(m_b - m)
    if guard:  # a state of no keys (m = -inf) adds nothing, even to another empty one
        factor_a, factor_b = (
            np.where(m_a == -np.inf, 0.0, factor_a),
            np.where(m_b == -np.inf, 0.0, factor_b),
        )
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
        seen = np.isfinite(m)  # queries that saw a key: the empty state stays as it is
        shift = np.where(seen, m - 1.0, m)  # the same keys, from another reference point
        factor = np.where(seen, np.e, 1.0)  # exp(m - shift)
        return shift, total * factor, acc * factor[:, None]

    def as_lists(state_a, state_b):
        return [part.tolist() for part in ch11_merge_states(state_a, state_b)]

    def by_log_sum_exp(state_a, state_b):
        (m_a, l_a, acc_a), (m_b, l_b, acc_b) = state_a, state_b
        with np.errstate(divide="ignore"):
            log_a, log_b = m_a + np.log(l_a), m_b + np.log(l_b)
        log_total = np.logaddexp(log_a, log_b)
        safe = np.where(np.isneginf(log_total), 0.0, log_total)  # no key at all: acc stays 0
        weight_a, weight_b = np.exp(m_a - safe), np.exp(m_b - safe)
        acc = acc_a * weight_a[:, None] + acc_b * weight_b[:, None]
        return log_total, np.ones_like(log_total), acc  # the empty state as (-inf, 1, 0)

    def with_nan_to_num(state_a, state_b):
        m, total, acc = ch11_merge_states(state_a, state_b, guard=False)
        return m, np.nan_to_num(total), np.nan_to_num(acc)

    check = exercises.check_merge_softmax_states
    assert check(against_the_first_maximum_when_safe).passed
    assert check(as_lists).passed
    assert check(by_log_sum_exp).passed
    assert check(with_nan_to_num).passed


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
        (lambda a, b: a, ["returned state_a as it was"]),
        (lambda a, b: (a[0], a[1] * 0.5, a[2]), ["describes different keys"]),
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


# --- Round 3: more of a learner's slips, from the prompts alone -----------------------------


def test_ch11_longest_sequence_accepts_floor_and_search():
    import math

    def by_floor(memory_bytes, batch, heads, bytes_per_number):
        return math.floor(math.sqrt(memory_bytes / (batch * heads * bytes_per_number)))

    def by_bisection(memory_bytes, batch, heads, bytes_per_number):
        low, high = 0, memory_bytes + 1  # T fits at low, not at high
        while high - low > 1:
            middle = (low + high) // 2
            fits = batch * heads * middle**2 * bytes_per_number <= memory_bytes
            low, high = (middle, high) if fits else (low, middle)
        return low

    def by_integer_steps(memory_bytes, batch, heads, bytes_per_number):
        return math.isqrt(memory_bytes // batch // heads // bytes_per_number)

    for answer in (by_floor, by_bisection, by_integer_steps):
        assert exercises.check_longest_sequence(answer).passed, answer.__name__


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (
            lambda m, b, h, n: round(np.sqrt(m / (b * h * n))),
            ["(9950, 1, 1, 1) returned 100, expected 99", "rounded to the nearest", "99.75"],
        ),
        (lambda m, b, h, n: int(np.sqrt(m / b * h * n)), ["put the product in parentheses"]),
        (lambda m, b, h, n: int(np.sqrt(m / (b * h * n * 8))), ["counts bits"]),
        (lambda m, b, h, n: int(np.sqrt(m / (b * h * n)) + 0.5), ["rounded to the nearest"]),
    ],
)
def test_ch11_longest_sequence_names_rounding_and_precedence_slips(answer, fragments):
    assert_ch11_mistake(exercises.check_longest_sequence(answer), *fragments)


def ch11_attend_with(*, stable=True, scale_by="d_k", axis=-1, mask=False, normalise=True):
    """One cached step; the keywords make a learner's slips."""

    def attend_with_cache(q_new, k_new, v_new, k_cache, v_cache):
        k_cache = np.concatenate([k_cache, k_new], axis=1)
        v_cache = np.concatenate([v_cache, v_new], axis=1)
        d = q_new.shape[-1] if scale_by == "d_k" else v_new.shape[-1]
        scores = q_new @ k_cache.transpose(0, 2, 1) / np.sqrt(d)  # (B, 1, t + 1)
        if mask:  # a causal mask for the (1, t + 1) scores
            scores = np.where(np.tril(np.ones(scores.shape[1:], dtype=bool)), scores, -np.inf)
        exponentials = np.exp(scores - scores.max(axis=axis, keepdims=True) if stable else scores)
        weights = (
            exponentials / exponentials.sum(axis=axis, keepdims=True) if normalise else exponentials
        )
        return weights @ v_cache, k_cache, v_cache

    return attend_with_cache


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (
            ch11_attend_with(stable=False),
            [
                "step 3: a cache of 3 tokens, the first sequence's scores around 1000)",
                "overflows",
                "largest score",
            ],
        ),
        (ch11_attend_with(scale_by="d_v"), ["divided by √D_v = √3", "√D_k = √4"]),
        (ch11_attend_with(axis=1), ["every key got the weight 1", "the last axis"]),
        (ch11_attend_with(mask=True), ["only the first key was attended", "no mask is needed"]),
        (ch11_attend_with(normalise=False), ["the weights do not sum to one"]),
    ],
)
def test_ch11_attend_with_cache_names_more_slips(answer, fragments):
    assert_ch11_mistake(exercises.check_attend_with_cache(answer), *fragments)


def test_ch11_attend_with_cache_accepts_float32_and_a_loop_over_the_batch():
    def in_float32(q_new, k_new, v_new, k_cache, v_cache):
        arrays = (a.astype(np.float32) for a in (q_new, k_new, v_new, k_cache, v_cache))
        return ch11_attend_with_cache(*arrays)

    def sequence_by_sequence(q_new, k_new, v_new, k_cache, v_cache):
        outputs = []
        for b in range(len(q_new)):
            keys = np.vstack([k_cache[b], k_new[b]])  # (t + 1, D_k)
            values = np.vstack([v_cache[b], v_new[b]])  # (t + 1, D_v)
            scores = keys @ q_new[b, 0] / np.sqrt(len(q_new[b, 0]))  # (t + 1,)
            weights = np.exp(scores - scores.max())
            outputs.append((weights / weights.sum()) @ values)
        keys = np.concatenate([k_cache, k_new], axis=1)
        return np.array(outputs)[:, None], keys, np.concatenate([v_cache, v_new], axis=1)

    assert exercises.check_attend_with_cache(in_float32).passed
    assert exercises.check_attend_with_cache(sequence_by_sequence).passed


def ch11_merge_swapped_factors(state_a, state_b):
    m, total, _ = ch11_merge_states(state_a, state_b)
    factor_a, factor_b = np.exp(state_a[0] - m), np.exp(state_b[0] - m)
    return m, total, state_a[2] * factor_b[:, None] + state_b[2] * factor_a[:, None]


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (
            lambda a, b: ch11_merge_states(a, b, guard=False),
            ["for two empty states", "returned NaN", "exp(m_a − m) = exp(−inf + inf)"],
        ),
        (ch11_merge_swapped_factors, ["l is right but acc is not"]),
        (lambda a, b: (a[0] + b[0], *ch11_merge_states(a, b)[1:]), ["m = m_a + m_b"]),
        (lambda a, b: b, ["returned state_b as it was"]),
        (
            lambda a, b: (
                (*ch11_merge_states(a, b)[:2], np.ones_like(a[2]))
                if np.isinf(a[0]).all() and np.isinf(b[0]).all()
                else ch11_merge_states(a, b)
            ),
            ["two states of no keys merge into the state of no keys"],
        ),
    ],
)
def test_ch11_merge_states_names_the_merge_of_two_empty_states(answer, fragments):
    assert_ch11_mistake(exercises.check_merge_softmax_states(answer), *fragments)


def ch11_blocked_with(
    *,
    diagonal=True,
    rescale_acc=True,
    rescale_sum=True,
    tile_mask=False,
    divide=True,
    scale=True,
    last_block=True,
    last_key_block=True,
    output=np.zeros,
):
    """Causal blocked attention; the keywords make a learner's slips."""

    def causal_blocked_attention(q, k, v, block_size):
        n_tokens, d_k = q.shape
        out = output((n_tokens, v.shape[-1]))
        q_end = n_tokens if last_block else n_tokens // block_size * block_size
        k_end = n_tokens if last_key_block else n_tokens // block_size * block_size
        for i0 in range(0, q_end, block_size):
            i1 = min(i0 + block_size, n_tokens)
            m, total = np.full(i1 - i0, -np.inf), np.zeros(i1 - i0)
            acc = np.zeros((i1 - i0, v.shape[1]))
            for j0 in range(0, min(i1 if diagonal else i0, k_end), block_size):
                j1 = min(j0 + block_size, n_tokens)
                scores = q[i0:i1] @ k[j0:j1].T / (np.sqrt(d_k) if scale else 1.0)
                if tile_mask:
                    visible = np.tril(np.ones(scores.shape, dtype=bool))
                else:
                    visible = np.arange(j0, j1)[None, :] <= np.arange(i0, i1)[:, None]
                scores = np.where(visible, scores, -np.inf)
                m_new = np.maximum(m, scores.max(axis=1))
                factor = np.exp(m - m_new)
                weights = np.exp(scores - m_new[:, None])
                total = (total * factor if rescale_sum else total) + weights.sum(axis=1)
                acc = (acc * factor[:, None] if rescale_acc else acc) + weights @ v[j0:j1]
                m = m_new
            out[i0:i1] = acc / total[:, None] if divide else acc
        return out

    return causal_blocked_attention


def ch11_blocked_own_tile_max(q, k, v, block_size):
    """Each tile's exponentials from its own maximum, added as they are."""
    n_tokens = len(q)
    out = np.zeros((n_tokens, v.shape[1]))
    for i0 in range(0, n_tokens, block_size):
        i1 = min(i0 + block_size, n_tokens)
        total, acc = 0.0, 0.0
        for j0 in range(0, i1, block_size):
            j1 = min(j0 + block_size, n_tokens)
            scores = q[i0:i1] @ k[j0:j1].T / np.sqrt(q.shape[1])
            scores = np.where(np.arange(j0, j1) <= np.arange(i0, i1)[:, None], scores, -np.inf)
            weights = np.exp(scores - scores.max(axis=1, keepdims=True))
            total, acc = total + weights.sum(axis=1), acc + weights @ v[j0:j1]
        out[i0:i1] = acc / total[:, None]
    return out


def ch11_row_by_row(q, k, v, block_size):
    """One query at a time against all the keys up to it, with an ordinary softmax."""
    out = np.zeros((len(q), v.shape[1]))
    for i in range(len(q)):
        scores = k[: i + 1] @ q[i] / np.sqrt(q.shape[1])
        weights = np.exp(scores - scores.max())
        out[i] = weights @ v[: i + 1] / weights.sum()
    return out


def ch11_strip_per_query_block(q, k, v, block_size):
    """Blocks of queries, each against all the keys up to its end at once: no online softmax."""
    out = np.zeros((len(q), v.shape[1]))
    for i0 in range(0, len(q), block_size):
        i1 = min(i0 + block_size, len(q))
        scores = q[i0:i1] @ k[:i1].T / np.sqrt(q.shape[1])
        scores = np.where(np.arange(i1) <= np.arange(i0, i1)[:, None], scores, -np.inf)
        weights = np.exp(scores - scores.max(axis=1, keepdims=True))
        out[i0:i1] = weights @ v[:i1] / weights.sum(axis=1, keepdims=True)
    return out


def ch11_after_asarray(answer):
    """The learner's habit of chapter 13: q, k and v through np.asarray first."""

    def converted(q, k, v, block_size):
        q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
        return answer(q, k, v, block_size)

    return converted


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (ch11_blocked_with(diagonal=False), ["skipped the diagonal tiles", "mask inside them"]),
        (ch11_blocked_with(rescale_acc=False), ["the accumulator is not rescaled", "exp(m − m')"]),
        (ch11_blocked_with(rescale_sum=False), ["the running sum l is not rescaled"]),
        (
            ch11_blocked_with(rescale_acc=False, rescale_sum=False),
            ["neither l nor the accumulator is rescaled"],
        ),
        (ch11_blocked_own_tile_max, ["that tile's own maximum"]),
        (ch11_blocked_with(tile_mask=True), ["np.tril in its own coordinates"]),
        (ch11_blocked_with(divide=False), ["not divided by the running sum l"]),
        (ch11_blocked_with(scale=False), ["not divided by √D_k"]),
        (
            ch11_blocked_with(last_block=False),
            ["block_size=3) with T = 7: the rows of the last, shorter block (6 … 6)", "range(0, T"],
        ),
        (
            ch11_blocked_with(last_block=False, output=lambda shape: np.full(shape, np.nan)),
            ["the rows of the last, shorter block (6 … 6)"],
        ),
        (
            ch11_blocked_with(last_key_block=False),
            ["T = 6 is shorter than block_size = 8", "end each block at T"],
        ),
        (ch11_row_by_row, ["the result is right", "does not work block by block"]),
        (ch11_strip_per_query_block, ["the result is right", "more than one 8 × 8 tile"]),
        (ch11_after_asarray(ch11_direct_causal), ["16,384 multiplications", "36 are needed"]),
        (ch11_after_asarray(ch11_blocked_every_tile), ["16,384 multiplications"]),
        (
            lambda q, k, v, b: ch11_blocked_every_tile(q, np.array(k), v, b),
            ["16,384 multiplications"],
        ),
        (
            lambda q, k, v, b: ch11_causal_blocked_attention(q, np.array(k.tolist()), v, b),
            ["the checker could follow only 0", "Python lists", "q_block @ k_block.T"],
        ),
    ],
)
def test_ch11_causal_blocked_attention_names_each_slip(answer, fragments):
    assert_ch11_mistake(exercises.check_causal_blocked_attention(answer), *fragments)


def ch11_keys_outside(q, k, v, block_size):
    """FlashAttention-1's loop order: key blocks outside, the query blocks from there on inside."""
    n_tokens = len(q)
    m, total = np.full(n_tokens, -np.inf), np.zeros(n_tokens)
    acc = np.zeros((n_tokens, v.shape[1]))
    for j0 in range(0, n_tokens, block_size):
        j1 = min(j0 + block_size, n_tokens)
        for i0 in range(j0 // block_size * block_size, n_tokens, block_size):
            i1 = min(i0 + block_size, n_tokens)
            scores = np.einsum("id,jd->ij", q[i0:i1], k[j0:j1]) / np.sqrt(q.shape[1])
            scores = np.where(np.arange(j0, j1) <= np.arange(i0, i1)[:, None], scores, -np.inf)
            m_new = np.maximum(m[i0:i1], scores.max(axis=1))
            factor, weights = np.exp(m[i0:i1] - m_new), np.exp(scores - m_new[:, None])
            total[i0:i1] = total[i0:i1] * factor + weights.sum(axis=1)
            acc[i0:i1] = acc[i0:i1] * factor[:, None] + weights @ v[j0:j1]
            m[i0:i1] = m_new
    return acc / total[:, None]


def ch11_one_query_with_key_blocks(q, k, v, block_size):
    """Query blocks of one row, each with online softmax over blocks of keys: the queries are
    not cut into blocks as the prompt asks (turned down since the third review, below)."""
    out = np.zeros((len(q), v.shape[1]))
    for i in range(len(q)):
        m, total, acc = -np.inf, 0.0, np.zeros(v.shape[1])
        for j0 in range(0, i + 1, block_size):
            keys = k[j0 : min(j0 + block_size, i + 1)]
            scores = keys @ q[i] / np.sqrt(q.shape[1])
            m_new = max(m, scores.max())
            weights = np.exp(scores - m_new)
            total = total * np.exp(m - m_new) + weights.sum()
            acc = acc * np.exp(m - m_new) + weights @ v[j0 : j0 + len(keys)]
            m = m_new
        out[i] = acc / total
    return out


@pytest.mark.parametrize(
    "answer",
    [
        ch11_after_asarray(ch11_causal_blocked_attention),
        lambda q, k, v, b: ch11_causal_blocked_attention(
            *(a.astype(np.float32) for a in (q, k, v)), b
        ),
        lambda q, k, v, b: ch11_causal_blocked_attention(q, np.array(k, dtype=np.float32), v, b),
        ch11_keys_outside,
        lambda q, k, v, b: ch11_causal_blocked_attention(q, k, v, b).tolist(),
    ],
)
def test_ch11_causal_blocked_attention_accepts_other_correct_answers(answer):
    feedback = exercises.check_causal_blocked_attention(answer)
    assert feedback.passed, feedback.message


def test_ch11_causal_blocked_attention_turns_down_pytorch_and_the_library():
    torch = pytest.importorskip("torch")
    from selfattn_lib.online_softmax import causal_blocked_attention

    def with_torch(q, k, v, block_size):
        tensors = (torch.from_numpy(a) for a in (q, k, v))
        return torch.nn.functional.scaled_dot_product_attention(*tensors, is_causal=True).numpy()

    assert_ch11_mistake(
        exercises.check_causal_blocked_attention(with_torch), "but it calls `torch.", "NumPy only"
    )
    assert_ch11_mistake(
        exercises.check_causal_blocked_attention(causal_blocked_attention),
        "but it calls `selfattn_lib.online_softmax.causal_blocked_attention`",
    )


def test_ch11_counting_the_keys_leaves_numpy_as_it_was():
    from selfattn_lib.exercises import _kit as kit

    before = (np.asarray, np.array, np.copy)
    exercises.check_causal_blocked_attention(ch11_causal_blocked_attention)
    assert (np.asarray, np.array, np.copy) == before
    inside = []

    def converts_the_keys_then_fails(q, k, v, block_size):
        inside.append((np.asarray, np.array, np.copy))
        inside.append([type(convert(k)) for convert in (np.asarray, np.array, np.copy)])
        1 / 0  # noqa: B018 - an error inside puts NumPy back too

    q, k, v = (np.ones((6, d)) for d in (4, 4, 3))
    with pytest.raises(kit.Mistake, match="raised ZeroDivisionError"):
        kit.multiplications_with(converts_the_keys_then_fails, (q, k, v, 2), index=1, depth=4)
    # While counting, the learner's conversions of the keys keep counting …
    assert all(convert is not original for convert, original in zip(inside[0], before, strict=True))
    assert inside[1] == [kit.CountedArray] * 3
    # … and after it, even after an error, NumPy's conversions are its own again.
    assert (np.asarray, np.array, np.copy) == before


# Every checker of the chapter with a correct answer: test_exercises_registry.py runs them.
REFERENCES = dict(CH11_CHECKERS)


# --- Round 4: the second review's cases -------------------------------------------------------


@pytest.mark.parametrize(
    ("shift", "fragments"),
    [
        (
            lambda scores: scores.max(),  # one maximum for the whole batch
            [
                "the first sequence's scores around 1000), the output, returned NaN",
                "one maximum for the whole array",
                "axis=-1, keepdims=True",
            ],
        ),
        (
            lambda scores: scores.max(axis=0, keepdims=True),
            ["step 2: a cache of 2 tokens): the maximum was taken over the batch axis (axis=0)"],
        ),
        (
            lambda scores: scores.max(axis=1, keepdims=True),
            ["every key got the same weight: the maximum was taken over axis 1, of size 1"],
        ),
    ],
)
def test_ch11_attend_with_cache_names_a_maximum_over_the_wrong_axis(shift, fragments):
    def attend_with_cache(q_new, k_new, v_new, k_cache, v_cache):
        k_cache = np.concatenate([k_cache, k_new], axis=1)
        v_cache = np.concatenate([v_cache, v_new], axis=1)
        scores = q_new @ k_cache.transpose(0, 2, 1) / np.sqrt(q_new.shape[-1])  # (B, 1, t + 1)
        exponentials = np.exp(scores - shift(scores))
        return exponentials / exponentials.sum(axis=-1, keepdims=True) @ v_cache, k_cache, v_cache

    with np.errstate(all="ignore"):
        feedback = exercises.check_attend_with_cache(attend_with_cache)
    assert_ch11_mistake(feedback, *fragments)


def ch11_blocked_scored_by(
    score, prepare=lambda q, k, v, block_size: (q, k, v), key_end=lambda i1, n_keys, b: i1
):
    """The reference tile loop with the tile's scores computed by ``score(q_block, k_block)``,
    after ``prepare`` has made q, k and v ready (padding them, for example); the key blocks
    of the query block that ends at ``i1`` start before ``key_end(i1, T, block_size)``."""

    def causal_blocked_attention(q, k, v, block_size):
        n_tokens = len(q)
        q, k, v = prepare(q, k, v, block_size)
        out = np.zeros((len(q), v.shape[1]))
        for i0 in range(0, len(q), block_size):
            i1 = min(i0 + block_size, len(q))
            m, total = np.full(i1 - i0, -np.inf), np.zeros(i1 - i0)
            acc = np.zeros((i1 - i0, v.shape[1]))
            for j0 in range(0, key_end(i1, len(k), block_size), block_size):
                j1 = min(j0 + block_size, len(k))
                scores = score(q[i0:i1], k[j0:j1]) / np.sqrt(q.shape[1])
                scores = np.where(np.arange(j0, j1) <= np.arange(i0, i1)[:, None], scores, -np.inf)
                m_new = np.maximum(m, scores.max(axis=1))
                factor, weights = np.exp(m - m_new), np.exp(scores - m_new[:, None])
                total = total * factor + weights.sum(axis=1)
                acc = acc * factor[:, None] + weights @ v[j0:j1]
                m = m_new
            out[i0:i1] = acc / total[:, None]
        return out[:n_tokens]

    return causal_blocked_attention


def ch11_padded(q, k, v, block_size):
    """q, k and v padded with zeros to a multiple of block_size (the padded keys come after
    every real query, so the causal mask hides them)."""
    extra = -len(q) % block_size
    return (np.pad(a, ((0, extra), (0, 0))) for a in (q, k, v))


@pytest.mark.parametrize(
    "answer",
    [
        ch11_blocked_scored_by(lambda a, b: a.dot(b.T)),  # the method, on the queries
        ch11_blocked_scored_by(lambda a, b: b.dot(a.T).T),  # the method, on the keys
        ch11_blocked_scored_by(lambda a, b: np.inner(a, b)),
        ch11_blocked_scored_by(lambda a, b: np.tensordot(a, b, axes=(1, 1))),
        ch11_blocked_scored_by(lambda a, b: a @ b.T, ch11_padded),
        ch11_blocked_scored_by(
            lambda a, b: a @ b.T,
            lambda q, k, v, block_size: (q, np.concatenate([k, np.zeros((0, k.shape[1]))]), v),
        ),
        ch11_blocked_scored_by(
            lambda a, b: a @ b.T, lambda q, k, v, block_size: (q, np.vstack(list(k)), v)
        ),
        ch11_blocked_scored_by(
            lambda a, b: a.dot(b.T),
            lambda q, k, v, block_size: (np.asarray(q), np.stack(list(k)), np.copy(v)),
        ),
    ],
)
def test_ch11_causal_blocked_attention_follows_the_dot_method_and_arrays_made_from_k(answer):
    feedback = exercises.check_causal_blocked_attention(answer)
    assert feedback.passed, feedback.message


# The key loop runs to i1 + block_size: one fully masked tile more per query block.
ch11_blocked_one_tile_too_far = ch11_blocked_scored_by(
    lambda a, b: a @ b.T, key_end=lambda i1, n_keys, b: min(i1 + b, n_keys)
)


def ch11_blocked_each_tile_twice(q, k, v, block_size):
    """Every tile scored twice: once for its maximum, once for its exponentials."""

    def scored(a, b):
        (a @ b.T).max()  # a first pass for the maximum, thrown away
        return a @ b.T

    return ch11_blocked_scored_by(scored)(q, k, v, block_size)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (
            ch11_blocked_one_tile_too_far,
            [
                "made 11,008 multiplications with the keys, 1,792 more than the 9,216",
                "7 tiles of 8 × 8 more: one for each block of queries but the last",
                "j0 ≥ i1",
            ],
        ),
        (
            ch11_blocked_each_tile_twice,
            [
                "9,216 more than the 9,216 of the 36 tiles",
                "2 times the work",
                "compute each tile once",
            ],
        ),
    ],
)
def test_ch11_causal_blocked_attention_counts_every_tile_more_than_needed(answer, fragments):
    assert_ch11_mistake(exercises.check_causal_blocked_attention(answer), *fragments)


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


# --- The third review's cases -------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        lambda m, b, h, n: math.isqrt(math.ceil(m / (b * h * n))),
        lambda m, b, h, n: math.isqrt(round(m / (b * h * n))),
        lambda m, b, h, n: int(np.sqrt(np.ceil(m / (b * h * n)))),
    ],
)
def test_ch11_longest_sequence_names_the_quotient_rounded_up_before_the_root(answer):
    assert_ch11_mistake(
        exercises.check_longest_sequence(answer),
        "(399, 1, 1, 4) returned 10, expected 9",
        "= 99.75 was rounded up to 100 before the square root",
        "T = 10 needs 400 bytes, more than 399",
        "round the quotient down",
    )


def test_ch11_longest_sequence_accepts_a_quotient_cut_down():
    import math

    def truncated(memory_bytes, batch, heads, bytes_per_number):
        return math.isqrt(int(memory_bytes / (batch * heads * bytes_per_number)))

    def root_of_the_floor(memory_bytes, batch, heads, bytes_per_number):
        return int(math.sqrt(memory_bytes // (batch * heads * bytes_per_number)))

    for answer in (truncated, root_of_the_floor):
        feedback = exercises.check_longest_sequence(answer)
        assert feedback.passed, feedback.message


def test_ch11_attend_with_cache_names_the_caches_returned_in_the_wrong_order():
    def swapped(q_new, k_new, v_new, k_cache, v_cache):
        output, keys, values = ch11_attend_with_cache(q_new, k_new, v_new, k_cache, v_cache)
        return output, values, keys

    feedback = exercises.check_attend_with_cache(swapped)
    assert_ch11_mistake(
        feedback, "returned the caches in the order (v_cache, k_cache)", "D_v = 3 columns"
    )
    assert "append along the time axis" not in feedback.message
    # The success message says what the checker compares: the rows up to rounding.
    passed = exercises.check_attend_with_cache(ch11_attend_with_cache)
    assert "up to rounding" in passed.message and "exactly" not in passed.message


def test_ch11_merge_states_praises_any_reference_point():
    def from_the_log_sum_exp(state_a, state_b):
        """Both states measured from their log-sum-exp (l = 1), then merged."""
        (m_a, l_a, acc_a), (m_b, l_b, acc_b) = state_a, state_b
        with np.errstate(divide="ignore", invalid="ignore"):
            lse_a, lse_b = m_a + np.log(l_a), m_b + np.log(l_b)
            lse = np.logaddexp(lse_a, lse_b)
            share_a = np.where(np.isneginf(lse_a), 0.0, np.exp(lse_a - lse))
            share_b = np.where(np.isneginf(lse_b), 0.0, np.exp(lse_b - lse))
            out_a = np.where(l_a[:, None] > 0, acc_a / l_a[:, None], 0.0)
            out_b = np.where(l_b[:, None] > 0, acc_b / l_b[:, None], 0.0)
        empty = np.isneginf(lse)
        acc = np.where(empty[:, None], 0.0, out_a * share_a[:, None] + out_b * share_b[:, None])
        return lse, np.where(empty, 0.0, 1.0), acc

    feedback = exercises.check_merge_softmax_states(from_the_log_sum_exp)
    assert feedback.passed, feedback.message
    assert "one reference point (the larger maximum, for example)" in feedback.message


def ch11_blocked_one_key_at_a_time(q, k, v, block_size):
    """Queries in blocks, but each block walks its keys one by one."""
    output = np.empty((len(q), v.shape[1]))
    for q_start in range(0, len(q), block_size):
        rows = np.arange(q_start, min(q_start + block_size, len(q)))
        m, total = np.full(rows.size, -np.inf), np.zeros(rows.size)
        acc = np.zeros((rows.size, v.shape[1]))
        for j in range(rows[-1] + 1):
            scores = np.where(j <= rows, q[rows] @ k[j] / np.sqrt(q.shape[1]), -np.inf)
            m_new = np.maximum(m, scores)
            correction, weights = np.exp(m - m_new), np.exp(scores - m_new)
            total = total * correction + weights
            acc = acc * correction[:, None] + weights[:, None] * v[j]
            m = m_new
        output[rows] = acc / total[:, None]
    return output


@pytest.mark.parametrize("answer", [ch11_one_query_with_key_blocks, ch11_blocked_one_key_at_a_time])
def test_ch11_causal_blocked_attention_names_rows_or_columns_instead_of_tiles(answer):
    assert_ch11_mistake(
        exercises.check_causal_blocked_attention(answer),
        "made no product of more than 32 multiplications with the keys",
        "it scores one query (or one key) at a time",
        "Cut the queries into blocks too",
    )


def test_ch11_causal_blocked_attention_accepts_a_python_loop_over_a_tiles_rows():
    """One product per tile, then a Python loop over its rows (to mask them, say): the queries
    are in blocks, whatever the lines of Python."""
    answer = ch11_blocked_scored_by(lambda a, b: np.stack([row for row in a @ b.T]))
    feedback = exercises.check_causal_blocked_attention(answer)
    assert feedback.passed, feedback.message
