"""Tests of the checkers of chapter 13 (selfattn_lib.exercises.ch13_modern_attention): each
names the mistake in typical wrong answers and accepts the usual correct alternatives. What
every checker promises is tested once, over REFERENCES, in test_exercises_registry.py."""

import numpy as np
import pytest

from selfattn_lib import exercises

# --- correct answers, as a learner would write them ----------------------------------------


def ch13_rotate_with(
    *,
    layout="half",
    first=lambda start: start,
    exponent=2,
    sign=1.0,
    swap=False,
    angles_by_repeat=False,
):
    """RoPE for the new rows of a cache; the keywords make the slips of the tests below."""

    def rotate(x, start):
        n_tokens, d_head = x.shape
        positions = first(start) + np.arange(n_tokens)
        frequencies = 10000.0 ** (-exponent * np.arange(d_head // 2) / d_head)
        angles = positions[:, None] * frequencies  # (T, D_h / 2)
        if layout == "interleaved":
            cos, sin = np.cos(angles), np.sin(angles)
            even, odd = x[:, 0::2], x[:, 1::2]
            out = np.empty_like(x)
            out[:, 0::2] = even * cos - odd * sin
            out[:, 1::2] = even * sin + odd * cos
            return out
        if angles_by_repeat:
            angles = np.repeat(angles, 2, axis=-1)
        else:
            angles = np.concatenate([angles, angles], axis=-1)
        half = d_head // 2
        rotated_half = sign * np.concatenate([-x[:, half:], x[:, :half]], axis=-1)
        if swap:
            return x * np.sin(angles) + rotated_half * np.cos(angles)
        return x * np.cos(angles) + rotated_half * np.sin(angles)

    return rotate


ch13_rotate = ch13_rotate_with()


def ch13_softmax(scores, axis=-1):
    exponentials = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return exponentials / exponentials.sum(axis=axis, keepdims=True)


def ch13_repeat(x, n_rep):
    return np.repeat(x, n_rep, axis=0)


def ch13_gqa_with(*, heads=ch13_repeat, scale=True, allowed=np.tril, axis=-1):
    """Causal grouped-query attention; the keywords make the slips of the tests below."""

    def grouped_query_attention(q, k, v):
        n_rep = q.shape[0] // k.shape[0]
        k, v = heads(k, n_rep), heads(v, n_rep)
        scores = q @ k.transpose(0, 2, 1)
        if scale:
            scores = scores / np.sqrt(q.shape[-1])
        n_tokens = q.shape[1]
        if allowed is not None:
            scores = np.where(allowed(np.ones((n_tokens, n_tokens), dtype=bool)), scores, -np.inf)
        return ch13_softmax(scores, axis=axis) @ v

    return grouped_query_attention


ch13_grouped_query_attention = ch13_gqa_with()


def ch13_window_mask(n_tokens, window, n_sinks):
    query = np.arange(n_tokens)[:, None]
    key = np.arange(n_tokens)[None, :]
    return (key <= query) & ((query - key < window) | (key < n_sinks))


def ch13_tiled_with(*, rescale_acc=True, rescale_sum=True, divide=True, log="m + log l"):
    """FlashAttention's forward pass; the keywords make the slips of the tests below."""

    def tiled_attention(q, k, v, block_size):
        t_q, d = q.shape
        output = np.zeros((t_q, v.shape[-1]))
        logsumexp = np.zeros(t_q)
        for q_start in range(0, t_q, block_size):
            q_block = q[q_start : q_start + block_size] / np.sqrt(d)
            m = np.full(len(q_block), -np.inf)
            total = np.zeros(len(q_block))
            acc = np.zeros((len(q_block), v.shape[-1]))
            for k_start in range(0, len(k), block_size):
                scores = q_block @ k[k_start : k_start + block_size].T
                m_new = np.maximum(m, scores.max(axis=-1))
                weights = np.exp(scores - m_new[:, None])
                correction = np.exp(m - m_new)
                total = (total * correction if rescale_sum else total) + weights.sum(axis=-1)
                acc = acc * correction[:, None] if rescale_acc else acc
                acc = acc + weights @ v[k_start : k_start + block_size]
                m = m_new
                block_log = np.log(np.exp(scores - scores.max(axis=-1, keepdims=True)).sum(-1))
                block_log = block_log + scores.max(axis=-1)
            rows = slice(q_start, q_start + block_size)
            output[rows] = acc / total[:, None] if divide else acc
            logsumexp[rows] = {
                "m + log l": m + np.log(total),
                "log l": np.log(total),
                "last block": block_log,
                "last sum": m + np.log(weights.sum(axis=-1)),
            }[log]
        return output, logsumexp

    return tiled_attention


ch13_tiled_attention = ch13_tiled_with()


def ch13_stub(*args):
    raise NotImplementedError


CH13_CHECKERS = {
    "check_rotate": ch13_rotate,
    "check_grouped_query_attention": ch13_grouped_query_attention,
    "check_window_mask": ch13_window_mask,
    "check_tiled_attention": ch13_tiled_attention,
}


def assert_ch13_mistake(feedback, *fragments):
    assert feedback.attempted and not feedback.passed, feedback
    for fragment in fragments:
        assert fragment in feedback.message, (fragment, feedback.message)


@pytest.mark.parametrize("name", CH13_CHECKERS)
def test_ch13_checkers_pass_the_reference_and_report_the_stub_and_a_missing_return(name):
    checker = getattr(exercises, name)
    feedback = checker(CH13_CHECKERS[name])
    assert feedback.passed and feedback.attempted, feedback
    feedback = checker(ch13_stub)
    assert not feedback.attempted and "raise NotImplementedError" in feedback.message
    feedback = checker(lambda *args: None)
    assert_ch13_mistake(feedback, "returned None: did you forget the `return` statement?")


# --- RoPE with a cache offset --------------------------------------------------------------


def ch13_rotate_as_complex(x, start):
    """The half layout as complex numbers: x₁ + i·x₂ times e^(iθ)."""
    half = x.shape[-1] // 2
    positions = np.arange(start, start + len(x))
    angles = np.outer(positions, 1.0 / 10000.0 ** (np.arange(0, x.shape[-1], 2) / x.shape[-1]))
    turned = (x[:, :half] + 1j * x[:, half:]) * np.exp(1j * angles)
    return np.concatenate([turned.real, turned.imag], axis=-1)


def ch13_rotate_row_by_row(x, start):
    """A 2 × 2 rotation matrix for every pair of every row."""
    d_head = x.shape[1]
    half = d_head // 2
    out = []
    for t, row in enumerate(x):
        first, second = [], []
        for i in range(half):
            theta = (start + t) * 10000 ** (-2 * i / d_head)
            rotation = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
            a, b = rotation @ np.array([row[i], row[i + half]])
            first.append(a)
            second.append(b)
        out.append(first + second)
    return out


def ch13_rotate_in_torch(x, start):
    import torch

    x = torch.from_numpy(x)
    half = x.shape[-1] // 2
    positions = torch.arange(start, start + x.shape[0], dtype=torch.float64)
    angles = torch.outer(positions, 10000.0 ** (-torch.arange(half) * 2.0 / x.shape[-1]))
    angles = torch.cat([angles, angles], dim=-1)
    rotated_half = torch.cat([-x[:, half:], x[:, :half]], dim=-1)
    return x * angles.cos() + rotated_half * angles.sin()


@pytest.mark.parametrize(
    "answer",
    [
        ch13_rotate_as_complex,
        ch13_rotate_row_by_row,
        lambda x, start: ch13_rotate(x.astype(np.float32), start),  # computed in float32
        lambda x, start: ch13_rotate(x, start).tolist(),
    ],
)
def test_ch13_rotate_accepts_equivalent_answers(answer):
    feedback = exercises.check_rotate(answer)
    assert feedback.passed, feedback.message


def ch13_rotate_all_at_start(x, start):
    d_head = x.shape[1]
    frequencies = 10000.0 ** (-np.arange(0, d_head, 2) / d_head)
    angles = np.concatenate([start * frequencies, start * frequencies])  # one angle per feature
    half = d_head // 2
    rotated_half = np.concatenate([-x[:, half:], x[:, :half]], axis=-1)
    return x * np.cos(angles) + rotated_half * np.sin(angles)


def ch13_rotate_in_place(x, start):
    rotated = ch13_rotate(x, start)
    x[:] = rotated
    return x


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (ch13_rotate_with(layout="interleaved"), ["start=5): this is the INTERLEAVED layout"]),
        (ch13_rotate_with(first=lambda start: 0), ["as if the cache were empty", "first 5"]),
        (
            ch13_rotate_with(first=lambda start: start + 1),
            ["one too large (start + 1 + t)", "holds positions 0 … 4 (5 tokens)"],
        ),
        (ch13_rotate_with(first=lambda start: start - 1), ["one too small (start − 1 + t)"]),
        (ch13_rotate_with(exponent=1), ["10000^(-i/D_h)", "the exponent is 2i/D_h"]),
        (ch13_rotate_with(sign=-1.0), ["the wrong way (by −θ)"]),
        (ch13_rotate_with(swap=True), ["cos and sin are swapped"]),
        (ch13_rotate_with(angles_by_repeat=True), ["laid out for the interleaved layout"]),
        (ch13_rotate_all_at_start, ["the same angle, that of position start"]),
        (
            lambda x, start: ch13_rotate(np.repeat(x[:1], len(x), axis=0), start),
            ["is off at index"],
        ),
        (lambda x, start: x.copy(), ["returned x unchanged"]),
        (lambda x, start: ch13_rotate(x, start)[:, : x.shape[1] // 2], ["returned shape (4, 4)"]),
        (ch13_rotate_in_place, ["changed an array it was given"]),
    ],
)
def test_ch13_rotate_names_typical_mistakes(answer, fragments):
    assert_ch13_mistake(exercises.check_rotate(answer), *fragments)


def test_ch13_rotate_turns_down_the_library_and_pytorch():
    torch = pytest.importorskip("torch")
    from selfattn_lib.positional import apply_rope
    from selfattn_lib.rotary import apply_rotary

    def with_apply_rope(x, start):
        return apply_rope(x, start + np.arange(len(x)), layout="half")

    def with_apply_rotary(x, start):
        positions = torch.arange(start, start + len(x))
        return apply_rotary(torch.from_numpy(x), positions, layout="half")

    assert_ch13_mistake(
        exercises.check_rotate(with_apply_rope),
        "gives the right result, but it calls `selfattn_lib.positional.apply_rope`",
    )
    assert_ch13_mistake(
        exercises.check_rotate(with_apply_rotary), "`selfattn_lib.rotary.apply_rotary`"
    )
    assert_ch13_mistake(
        exercises.check_rotate(ch13_rotate_in_torch),
        "gives the right result, but it calls `torch.from_numpy`",
        "NumPy only",
    )


# --- grouped-query attention ---------------------------------------------------------------


def ch13_gqa_by_groups(q, k, v):
    """No repetition: the query heads split into H_kv groups that broadcast against k and v."""
    n_heads, n_tokens, d_head = q.shape
    n_kv_heads = k.shape[0]
    groups = q.reshape(n_kv_heads, n_heads // n_kv_heads, n_tokens, d_head)
    scores = groups @ k[:, None].transpose(0, 1, 3, 2) / np.sqrt(d_head)
    causal = np.tril(np.ones((n_tokens, n_tokens), dtype=bool))
    weights = ch13_softmax(np.where(causal, scores, -1e9))
    return (weights @ v[:, None]).reshape(n_heads, n_tokens, d_head)


def ch13_gqa_head_by_head(q, k, v):
    n_heads, n_tokens, d_head = q.shape
    group_size = n_heads // k.shape[0]
    future = np.triu(np.ones((n_tokens, n_tokens)), k=1) * -1e9
    out = []
    for h in range(n_heads):
        scores = np.einsum("id,jd->ij", q[h], k[h // group_size]) / d_head**0.5 + future
        out.append(ch13_softmax(scores) @ v[h // group_size])
    return np.stack(out)


def ch13_gqa_returning_tensor(q, k, v):
    import torch

    return torch.from_numpy(ch13_grouped_query_attention(q, k, v)).requires_grad_()


@pytest.mark.parametrize(
    "answer",
    [
        ch13_gqa_by_groups,
        ch13_gqa_head_by_head,
        lambda q, k, v: ch13_grouped_query_attention(q, k, v).astype(np.float32),
        lambda q, k, v: ch13_grouped_query_attention(*(a.astype(np.float32) for a in (q, k, v))),
        lambda q, k, v: ch13_grouped_query_attention(q, k, v).tolist(),
    ],
)
def test_ch13_grouped_query_attention_accepts_equivalent_answers(answer):
    feedback = exercises.check_grouped_query_attention(answer)
    assert feedback.passed, feedback.message


def test_ch13_the_checkers_repeat_order_is_the_librarys_repeat_kv():
    torch = pytest.importorskip("torch")
    from selfattn_lib.grouped_query import repeat_kv

    k = np.random.default_rng(0).normal(size=(3, 4, 2))  # (H_kv, T, D_h)
    for n_rep in (1, 2, 3):
        library = repeat_kv(torch.from_numpy(k)[None], n_rep)[0].numpy()  # (H, T, D_h)
        np.testing.assert_array_equal(ch13_repeat(k, n_rep), library)


def ch13_tile(x, n_rep):
    return np.tile(x, (n_rep, 1, 1))


def ch13_concatenate_copies(x, n_rep):
    return np.concatenate([x] * n_rep, axis=0)


def ch13_gqa_with_torch_repeat(q, k, v):
    import torch

    q, k, v = (torch.from_numpy(a) for a in (q, k, v))
    n_rep = q.shape[0] // k.shape[0]
    k, v = k.repeat(n_rep, 1, 1), v.repeat(n_rep, 1, 1)  # tiles the heads: h % H_kv
    scores = q @ k.transpose(1, 2) / q.shape[-1] ** 0.5
    future = torch.ones(scores.shape[-2:], dtype=torch.bool).triu(diagonal=1)
    return torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1) @ v


def ch13_gqa_groups_the_wrong_way(q, k, v):
    """The query heads split as (n_rep, H_kv, …): query head h meets KV head h % H_kv."""
    n_heads, n_tokens, d_head = q.shape
    n_kv_heads = k.shape[0]
    groups = q.reshape(n_heads // n_kv_heads, n_kv_heads, n_tokens, d_head)
    scores = groups @ k.transpose(0, 2, 1) / np.sqrt(d_head)
    causal = np.tril(np.ones((n_tokens, n_tokens), dtype=bool))
    weights = ch13_softmax(np.where(causal, scores, -np.inf))
    return (weights @ v).reshape(n_heads, n_tokens, d_head)


def ch13_gqa_returning_weights(q, k, v):
    n_rep = q.shape[0] // k.shape[0]
    k, v = np.repeat(k, n_rep, axis=0), np.repeat(v, n_rep, axis=0)
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    scores = np.where(np.tril(np.ones(scores.shape[-2:], dtype=bool)), scores, -np.inf)
    weights = ch13_softmax(scores)
    return weights @ v, weights


def ch13_gqa_groups_kept(q, k, v):
    return ch13_gqa_by_groups(q, k, v).reshape(k.shape[0], -1, *q.shape[1:])


def ch13_gqa_one_query_per_group(q, k, v):
    """Averages the queries of each group: one output per key/value head."""
    n_rep = q.shape[0] // k.shape[0]
    q = q.reshape(k.shape[0], n_rep, *q.shape[1:]).mean(axis=1)
    return ch13_gqa_with()(q, k, v)


def ch13_gqa_scaled_in_place(q, k, v):
    q /= np.sqrt(q.shape[-1])
    return ch13_gqa_with(scale=False)(q, k, v)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (
            ch13_gqa_with(heads=ch13_tile),
            [
                "k and v of shape (2, 5, 3)): query head h used key/value head h % H_kv",
                "read KV heads [0, 1, 0, 1]",
                "2 CONSECUTIVE query heads",
                "KV heads [0, 0, 1, 1]",
            ],
        ),
        (ch13_gqa_with(heads=ch13_concatenate_copies), ["h % H_kv"]),
        (ch13_gqa_with_torch_repeat, ["h % H_kv", "torch's .repeat"]),
        (ch13_gqa_groups_the_wrong_way, ["h % H_kv"]),
        (ch13_gqa_with(scale=False), ["not divided by √D_h"]),
        (ch13_gqa_with(allowed=None), ["WITHOUT the causal mask"]),
        (ch13_gqa_with(allowed=np.triu), ["the wrong way round", "j ≥ i"]),
        (ch13_gqa_with(axis=-2), ["each COLUMN", "axis -2"]),
        (ch13_gqa_returning_weights, ["returned a pair: return only the output"]),
        (ch13_gqa_groups_kept, ["returned shape (2, 2, 5, 3): merge the two group axes"]),
        (ch13_gqa_one_query_per_group, ["one output per KEY/VALUE head"]),
        (ch13_gqa_scaled_in_place, ["changed an array it was given"]),
        (
            lambda q, k, v: ch13_grouped_query_attention(q, k, v) + 0.01,
            ["k and v of shape (2, 5, 3)) is off at index ("],
        ),
    ],
)
def test_ch13_grouped_query_attention_names_typical_mistakes(answer, fragments):
    assert_ch13_mistake(exercises.check_grouped_query_attention(answer), *fragments)


def test_ch13_grouped_query_attention_turns_down_pytorch_and_the_library():
    torch = pytest.importorskip("torch")
    from selfattn_lib.grouped_query import repeat_kv

    def with_enable_gqa(q, k, v):
        q, k, v = (torch.from_numpy(a) for a in (q, k, v))
        return torch.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=True, enable_gqa=True
        ).numpy()

    def with_repeat_kv(q, k, v):
        n_rep = q.shape[0] // k.shape[0]
        k, v = (repeat_kv(torch.from_numpy(a)[None], n_rep)[0].numpy() for a in (k, v))
        return ch13_gqa_with(heads=lambda x, n: x)(q, k, v)

    feedback = exercises.check_grouped_query_attention(with_enable_gqa)
    assert_ch13_mistake(
        feedback, "`torch._C._nn.scaled_dot_product_attention`", "asks for NumPy only"
    )
    feedback = exercises.check_grouped_query_attention(with_repeat_kv)
    assert_ch13_mistake(feedback, "`selfattn_lib.grouped_query.repeat_kv`")
    feedback = exercises.check_grouped_query_attention(ch13_gqa_returning_tensor)
    assert_ch13_mistake(feedback, "gives the right result, but it calls `torch.from_numpy`")


# --- a sliding window with sinks -----------------------------------------------------------


def ch13_window_with_loops(n_tokens, window, n_sinks):
    return [
        [j <= i and (i - j < window or j < n_sinks) for j in range(n_tokens)]
        for i in range(n_tokens)
    ]


def ch13_window_from_triangles(n_tokens, window, n_sinks):
    ones = np.ones((n_tokens, n_tokens), dtype=bool)
    band = np.tril(ones) & ~np.tril(ones, k=-window)
    sinks = np.tril(ones)
    sinks[:, n_sinks:] = False
    return band | sinks


def ch13_window_in_torch(n_tokens, window, n_sinks):
    import torch

    positions = torch.arange(n_tokens)
    distance = positions[:, None] - positions[None, :]
    return (distance >= 0) & ((distance < window) | (positions[None, :] < n_sinks))


@pytest.mark.parametrize(
    "answer", [ch13_window_with_loops, ch13_window_from_triangles, ch13_window_in_torch]
)
def test_ch13_window_mask_accepts_equivalent_answers(answer):
    feedback = exercises.check_window_mask(answer)
    assert feedback.passed, feedback.message


def ch13_window_with(rule):
    """A mask from a rule on the query and key positions: the slips of the tests below."""

    def window_mask(n_tokens, window, n_sinks):
        i = np.arange(n_tokens)[:, None]
        j = np.arange(n_tokens)[None, :]
        return rule(i, j, window, n_sinks)

    return window_mask


def ch13_window_sinks_in_every_row(n_tokens, window, n_sinks):
    mask = np.tril(np.ones((n_tokens, n_tokens), dtype=bool)) & ~np.tril(
        np.ones((n_tokens, n_tokens), dtype=bool), k=-window
    )
    mask[:, :n_sinks] = True
    return mask


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (
            ch13_window_with(lambda i, j, w, s: (j <= i) & ((i - j <= w) | (j < s))),
            ["window=3, n_sinks=2): each query sees up to 4 recent keys, one too many"],
        ),
        (
            ch13_window_with(lambda i, j, w, s: (j <= i) & ((i - j < w - 1) | (j < s))),
            ["up to 2 recent keys, one too few"],
        ),
        (ch13_window_with(lambda i, j, w, s: (i - j < w) | (j < s)), ["keys AFTER them"]),
        (ch13_window_with(lambda i, j, w, s: (abs(i - j) < w) | (j < s)), ["keys AFTER them"]),
        (ch13_window_with(lambda i, j, w, s: (j <= i) & (i - j < w)), ["the sinks are left out"]),
        (ch13_window_sinks_in_every_row, ["sink columns are True in every row"]),
        (
            ch13_window_with(lambda i, j, w, s: (j <= i) & ((i - j < w) | (j <= s))),
            ["one sink too many", "positions 0 … 1"],
        ),
        (
            ch13_window_with(lambda i, j, w, s: (j > i) | ((i - j >= w) & (j >= s))),
            ["True and False are swapped"],
        ),
        (
            lambda n, w, s: ch13_window_mask(n, w, s).astype(int),
            ["returned dtype int64, but a mask must be boolean"],
        ),
        (
            lambda n, w, s: ch13_window_mask(n, w, s) & (np.arange(n)[:, None] != 5),
            ["query 5 sees the keys [], but it may attend 5 keys"],
        ),
        (lambda n, w, s: ch13_window_mask(n, w, s)[1:], ["returned shape (7, 8), expected (8, 8)"]),
    ],
)
def test_ch13_window_mask_names_typical_mistakes(answer, fragments):
    assert_ch13_mistake(exercises.check_window_mask(answer), *fragments)


def test_ch13_window_mask_without_sinks_names_a_sink_that_should_not_be_there():
    def up_to_the_last_sink(n_tokens, window, n_sinks):
        query, key = np.arange(n_tokens)[:, None], np.arange(n_tokens)[None, :]
        last_sink = max(n_sinks - 1, 0)  # key 0 stays a sink when there is none
        return (key <= query) & ((query - key < window) | (key <= last_sink))

    feedback = exercises.check_window_mask(up_to_the_last_sink)
    assert_ch13_mistake(feedback, "n_tokens=6, window=2, n_sinks=0)", "there is no sink at all")


def test_ch13_window_mask_turns_down_the_library():
    pytest.importorskip("torch")
    from selfattn_lib.sliding_window import sliding_window_mask

    def with_the_library(n_tokens, window, n_sinks):
        return sliding_window_mask(n_tokens, window, n_sinks=n_sinks)

    assert_ch13_mistake(
        exercises.check_window_mask(with_the_library),
        "gives the right result, but it calls `selfattn_lib.sliding_window.sliding_window_mask`",
    )
    # As it is, the library's function takes n_sinks by keyword only.
    assert_ch13_mistake(exercises.check_window_mask(sliding_window_mask), "raised TypeError")


# --- FlashAttention's tiled forward pass ---------------------------------------------------


def ch13_tiled_keys_outside(q, k, v, block_size):
    """The loops the other way round (FlashAttention-1's order): a running state for every
    query, updated by one key block after the other, each against every query block."""
    t_q, d = q.shape
    m = np.full(t_q, -np.inf)
    total = np.zeros(t_q)
    acc = np.zeros((t_q, v.shape[1]))
    for k_start in range(0, len(k), block_size):
        k_block, v_block = k[k_start : k_start + block_size], v[k_start : k_start + block_size]
        for q_start in range(0, t_q, block_size):
            rows = slice(q_start, q_start + block_size)
            scores = q[rows] @ k_block.T / np.sqrt(d)
            m_new = np.maximum(m[rows], scores.max(axis=1))
            weights = np.exp(scores - m_new[:, None])
            correction = np.exp(m[rows] - m_new)
            total[rows] = total[rows] * correction + weights.sum(axis=1)
            acc[rows] = acc[rows] * correction[:, None] + weights @ v_block
            m[rows] = m_new
    return acc / total[:, None], m + np.log(total)


def ch13_tiled_two_passes(q, k, v, block_size):
    """First the maximum over all key blocks, then the sums from it: no rescaling needed."""
    out, log_totals = [], []
    for q_start in range(0, len(q), block_size):
        q_block = q[q_start : q_start + block_size] / np.sqrt(q.shape[1])
        starts = range(0, len(k), block_size)
        m = np.max([(q_block @ k[s : s + block_size].T).max(axis=1) for s in starts], axis=0)
        total = np.zeros(len(q_block))
        acc = np.zeros((len(q_block), v.shape[1]))
        for s in starts:
            weights = np.exp(q_block @ k[s : s + block_size].T - m[:, None])
            total += weights.sum(axis=1)
            acc += weights @ v[s : s + block_size]
        out.append(acc / total[:, None])
        log_totals.append(m + np.log(total))
    return np.concatenate(out), np.concatenate(log_totals)


def ch13_tiled_by_merging_states(q, k, v, block_size):
    """Each tile's own state (m, l, acc), merged into the running one as in chapter 11."""
    outputs, log_totals = [], []
    for q_start in range(0, len(q), block_size):
        q_block = q[q_start : q_start + block_size]
        m, total, acc = -np.inf, 0.0, 0.0
        for k_start in range(0, len(k), block_size):
            scores = q_block @ k[k_start : k_start + block_size].T / np.sqrt(q.shape[1])
            m_tile = scores.max(axis=1)
            weights = np.exp(scores - m_tile[:, None])
            l_tile, acc_tile = weights.sum(axis=1), weights @ v[k_start : k_start + block_size]
            m_new = np.maximum(m, m_tile)
            a, b = np.exp(m - m_new), np.exp(m_tile - m_new)
            total = total * a + l_tile * b
            acc = acc * a[:, None] + acc_tile * b[:, None]
            m = m_new
        outputs.append(acc / total[:, None])
        log_totals.append(m + np.log(total))
    return np.vstack(outputs), np.hstack(log_totals)


@pytest.mark.parametrize(
    "answer",
    [
        ch13_tiled_keys_outside,
        ch13_tiled_two_passes,
        ch13_tiled_by_merging_states,
        lambda q, k, v, b: [part.astype(np.float32) for part in ch13_tiled_attention(q, k, v, b)],
        lambda q, k, v, b: ch13_tiled_attention(*(a.astype(np.float32) for a in (q, k, v)), b),
        lambda q, k, v, b: tuple(part.tolist() for part in ch13_tiled_attention(q, k, v, b)),
    ],
)
def test_ch13_tiled_attention_accepts_equivalent_answers(answer):
    feedback = exercises.check_tiled_attention(answer)
    assert feedback.passed, feedback.message


def ch13_tiled_own_block_max(q, k, v, block_size):
    """Each block's exponentials from its own maximum, added as they are."""
    outputs, log_totals = [], []
    for q_start in range(0, len(q), block_size):
        q_block = q[q_start : q_start + block_size] / np.sqrt(q.shape[1])
        total, acc = 0.0, 0.0
        for k_start in range(0, len(k), block_size):
            scores = q_block @ k[k_start : k_start + block_size].T
            m = scores.max(axis=1)
            weights = np.exp(scores - m[:, None])
            total = total + weights.sum(axis=1)
            acc = acc + weights @ v[k_start : k_start + block_size]
        outputs.append(acc / total[:, None])
        log_totals.append(m + np.log(total))
    return np.concatenate(outputs), np.concatenate(log_totals)


def ch13_tiled_without_maximum(q, k, v, block_size):
    outputs, log_totals = [], []
    for q_start in range(0, len(q), block_size):
        q_block = q[q_start : q_start + block_size] / np.sqrt(q.shape[1])
        total, acc = 0.0, 0.0
        for k_start in range(0, len(k), block_size):
            weights = np.exp(q_block @ k[k_start : k_start + block_size].T)
            total = total + weights.sum(axis=1)
            acc = acc + weights @ v[k_start : k_start + block_size]
        outputs.append(acc / total[:, None])
        log_totals.append(np.log(total))
    return np.concatenate(outputs), np.concatenate(log_totals)


def ch13_tiled_unscaled(q, k, v, block_size):
    return ch13_tiled_attention(q * np.sqrt(q.shape[1]), k, v, block_size)


def ch13_full_matrix(q, k, v, block_size):
    scores = q @ k.T / np.sqrt(q.shape[1])
    m = scores.max(axis=1, keepdims=True)
    weights = np.exp(scores - m)
    return weights @ v / weights.sum(axis=1, keepdims=True), m[:, 0] + np.log(weights.sum(1))


def ch13_tiles_kept(q, k, v, block_size):
    """Two passes over the tiles of a query block, all kept in a list: a strip, in pieces."""
    outputs, log_totals = [], []
    for q_start in range(0, len(q), block_size):
        q_block = q[q_start : q_start + block_size] / np.sqrt(q.shape[1])
        tiles = [q_block @ k[s : s + block_size].T for s in range(0, len(k), block_size)]
        m = np.max([tile.max(axis=1) for tile in tiles], axis=0)
        total, acc = 0.0, 0.0
        for s, tile in zip(range(0, len(k), block_size), tiles, strict=True):
            weights = np.exp(tile - m[:, None])
            total = total + weights.sum(axis=1)
            acc = acc + weights @ v[s : s + block_size]
        outputs.append(acc / total[:, None])
        log_totals.append(m + np.log(total))
    return np.concatenate(outputs), np.concatenate(log_totals)


def ch13_query_blocks_only(q, k, v, block_size):
    """Each block of queries against all the keys at once."""
    outputs, log_totals = [], []
    for q_start in range(0, len(q), block_size):
        output, log_total = ch13_full_matrix(q[q_start : q_start + block_size], k, v, block_size)
        outputs.append(output)
        log_totals.append(log_total)
    return np.concatenate(outputs), np.concatenate(log_totals)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (
            ch13_tiled_with(rescale_acc=False),
            ["v of shape (9, 3), block_size=3): the accumulator acc is not rescaled"],
        ),
        (ch13_tiled_with(rescale_sum=False), ["the running sum l is not rescaled"]),
        (
            ch13_tiled_with(rescale_acc=False, rescale_sum=False),
            ["neither the running sum l nor the accumulator acc is rescaled"],
        ),
        (ch13_tiled_own_block_max, ["that block's own maximum"]),
        (ch13_tiled_with(divide=False), ["not divided by the running sum l"]),
        (ch13_tiled_with(log="log l"), ["the logsumexp is log l only"]),
        (ch13_tiled_with(log="last block"), ["covers only the LAST key block"]),
        (ch13_tiled_with(log="last sum"), ["covers only the LAST key block"]),
        (ch13_tiled_unscaled, ["not divided by √D"]),
        (
            ch13_tiled_without_maximum,
            ["block_size=3), the output, returned NaN", "e^1000 overflows", "exp(s − m)"],
        ),
        (
            ch13_full_matrix,
            ["the results are right, but", "k of shape (8192, 2)", "the whole (256, 8192) score"],
        ),
        (ch13_tiles_kept, ["against ALL 8192 keys", "kept tile by tile"]),
        (ch13_query_blocks_only, ["against ALL 8192 keys", "(32, 8192) strip takes 2.0 MB"]),
        (lambda q, k, v, b: ch13_tiled_attention(q, k, v, b)[0], ["returned only the output"]),
        (
            lambda q, k, v, b: ch13_tiled_attention(q, k, v, b)[::-1],
            ["returned (logsumexp, output): return (output, logsumexp)"],
        ),
        (
            lambda q, k, v, b: (ch13_tiled_attention(q, k, v, b)[0],) * 2,
            ["the logsumexp, returned shape (7, 3), expected (7,)"],
        ),
        (
            lambda q, k, v, b: (ch13_tiled_attention(q, k, v, b)[0], np.zeros((len(q), 1))),
            ["a logsumexp of shape (7, 1)", "shape (T_q,) = (7,)"],
        ),
    ],
)
def test_ch13_tiled_attention_names_typical_mistakes(answer, fragments):
    assert_ch13_mistake(exercises.check_tiled_attention(answer), *fragments)


def test_ch13_tiled_attention_turns_down_pytorch_and_the_library():
    torch = pytest.importorskip("torch")
    from selfattn_lib.flash_attention import tiled_attention

    def with_the_library(q, k, v, block_size):
        return tiled_attention(q, k, v, block_q=block_size, block_k=block_size)

    def with_torch(q, k, v, block_size):
        q, k = torch.from_numpy(q), torch.from_numpy(k)
        scores = q @ k.T / q.shape[1] ** 0.5
        output = torch.softmax(scores, dim=-1) @ torch.from_numpy(v)
        return output.numpy(), torch.logsumexp(scores, dim=-1).numpy()

    assert_ch13_mistake(
        exercises.check_tiled_attention(with_the_library),
        "gives the right result, but it calls `selfattn_lib.flash_attention.tiled_attention`",
    )
    assert_ch13_mistake(
        exercises.check_tiled_attention(with_torch), "gives the right result, but it calls `torch."
    )


def test_ch13_every_mistake_gets_its_own_message():
    """The first case of each checker tells the slips apart: each gets a different message."""
    checks = {
        exercises.check_rotate: [
            ch13_rotate_with(layout="interleaved"),
            ch13_rotate_with(first=lambda start: 0),
            ch13_rotate_with(first=lambda start: start + 1),
            ch13_rotate_with(first=lambda start: start - 1),
            ch13_rotate_with(exponent=1),
            ch13_rotate_with(sign=-1.0),
            ch13_rotate_with(swap=True),
            ch13_rotate_with(angles_by_repeat=True),
        ],
        exercises.check_grouped_query_attention: [
            ch13_gqa_with(heads=ch13_tile),
            ch13_gqa_with(scale=False),
            ch13_gqa_with(allowed=None),
            ch13_gqa_with(allowed=np.triu),
            ch13_gqa_with(axis=-2),
        ],
        exercises.check_window_mask: [
            ch13_window_with(lambda i, j, w, s: (j <= i) & ((i - j <= w) | (j < s))),
            ch13_window_with(lambda i, j, w, s: (i - j < w) | (j < s)),
            ch13_window_with(lambda i, j, w, s: (j <= i) & (i - j < w)),
            ch13_window_sinks_in_every_row,
            ch13_window_with(lambda i, j, w, s: (j > i) | ((i - j >= w) & (j >= s))),
        ],
        exercises.check_tiled_attention: [
            ch13_tiled_with(rescale_acc=False),
            ch13_tiled_with(rescale_sum=False),
            ch13_tiled_with(divide=False),
            ch13_tiled_with(log="log l"),
            ch13_tiled_with(log="last block"),
            ch13_tiled_unscaled,
        ],
    }
    for checker, slips in checks.items():
        messages = [checker(slip).message for slip in slips]
        assert len(set(messages)) == len(messages), messages
        arguments = {message.partition("(")[2].partition(")")[0] for message in messages}
        assert len(arguments) == 1, messages  # all caught by the first case


# --- Round 3: more of a learner's slips, from the prompts alone -----------------------------


def ch13_rotate_by(frequencies, *, halves_swapped=False):
    """The half layout with other frequencies (a function of D_h), or its halves swapped."""

    def rotate(x, start):
        half = x.shape[1] // 2
        angles = np.arange(start, start + len(x))[:, None] * frequencies(x.shape[1])
        angles = np.concatenate([angles, angles], axis=1)
        turned = x * np.cos(angles) + np.concatenate([-x[:, half:], x[:, :half]], 1) * np.sin(
            angles
        )
        return np.concatenate([turned[:, half:], turned[:, :half]], 1) if halves_swapped else turned

    return rotate


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (
            ch13_rotate_by(lambda d: 10000.0 ** (-2 * np.arange(1, d // 2 + 1) / d)),
            ["start one pair late, at ω_1"],
        ),
        (
            ch13_rotate_by(lambda d: 10000.0 ** (-2 * np.arange(d // 2) / (d // 2))),
            ["the exponent is 2i/(D_h/2)"],
        ),
        (
            ch13_rotate_by(lambda d: 10000.0 ** (-2 * np.arange(d // 2) / d), halves_swapped=True),
            ["the two halves of the result are swapped"],
        ),
    ],
)
def test_ch13_rotate_names_frequency_and_layout_slips(answer, fragments):
    assert_ch13_mistake(exercises.check_rotate(answer), *fragments)


def ch13_gqa_all_on_head_zero(q, k, v):
    return ch13_gqa_with(heads=lambda x, n_rep: np.repeat(x[:1], len(x) * n_rep, axis=0))(q, k, v)


def ch13_gqa_scaled_by_all_heads(q, k, v):
    return ch13_gqa_with(scale=False)(q / np.sqrt(q.shape[0] * q.shape[2]), k, v)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (ch13_gqa_with(allowed=lambda m: np.tril(m, k=-1)), ["hides the diagonal too"]),
        (ch13_gqa_all_on_head_zero, ["every query head read key/value head 0"]),
        (ch13_gqa_scaled_by_all_heads, ["√(H · D_h) = √12", "√D_h = √3"]),
    ],
)
def test_ch13_grouped_query_attention_names_more_slips(answer, fragments):
    with np.errstate(invalid="ignore"):  # the hidden diagonal leaves query 0 with no key
        feedback = exercises.check_grouped_query_attention(answer)
    assert_ch13_mistake(feedback, *fragments)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (
            ch13_window_with(lambda i, j, w, s: (j <= i) & ((i - j < w - s) | (j < s))),
            ["the sinks were taken out of the window", "only 1 recent key(s)"],
        ),
        (
            lambda n, w, s: np.where(ch13_window_mask(n, w, s), 0.0, -np.inf),
            ["must hold only True and False"],
        ),
        (
            lambda n, w, s: ch13_window_mask(n, w, s).astype(float),
            ["returned dtype float64, but a mask must be boolean"],
        ),
        (
            ch13_window_with(lambda i, j, w, s: (j <= i) & ((i - j < w) | (j >= i.size - s))),
            ["the sinks are left out"],
        ),
    ],
)
def test_ch13_window_mask_names_more_slips(answer, fragments):
    assert_ch13_mistake(exercises.check_window_mask(answer), *fragments)


def ch13_per_query_all_keys(q, k, v, block_size):
    """One query at a time against all the keys at once, with an ordinary stable softmax:
    little memory, but no blocks of keys and no online softmax."""
    outputs, log_totals = [], []
    for row in q:
        scores = k @ row / np.sqrt(len(row))  # (T_k,)
        largest = scores.max()
        weights = np.exp(scores - largest)
        outputs.append(weights @ v / weights.sum())
        log_totals.append(largest + np.log(weights.sum()))
    return np.array(outputs), np.array(log_totals)


def ch13_tiled_normalised_every_block(q, k, v, block_size):
    """FlashAttention-1's update: the output kept normalised after every key block."""
    outputs, log_totals = [], []
    for q_start in range(0, len(q), block_size):
        q_block = q[q_start : q_start + block_size] / np.sqrt(q.shape[1])
        m, total = np.full(len(q_block), -np.inf), np.zeros(len(q_block))
        out = np.zeros((len(q_block), v.shape[1]))
        for k_start in range(0, len(k), block_size):
            scores = q_block @ k[k_start : k_start + block_size].T
            m_new = np.maximum(m, scores.max(axis=1))
            weights, kept = np.exp(scores - m_new[:, None]), total * np.exp(m - m_new)
            total = kept + weights.sum(axis=1)
            out = (out * kept[:, None] + weights @ v[k_start : k_start + block_size]) / total[
                :, None
            ]
            m = m_new
        outputs.append(out)
        log_totals.append(m + np.log(total))
    return np.concatenate(outputs), np.concatenate(log_totals)


def test_ch13_tiled_attention_names_a_pass_without_blocks_of_keys_and_the_wrong_scale():
    assert_ch13_mistake(
        exercises.check_tiled_attention(ch13_per_query_all_keys),
        "the results are right",
        "does not loop over blocks of keys",
    )
    assert_ch13_mistake(
        exercises.check_tiled_attention(
            lambda q, k, v, b: ch13_tiled_attention(q / np.sqrt(q.shape[1]), k, v, b)
        ),
        "divided by D = 4, not by √D = 2",
    )
    assert exercises.check_tiled_attention(ch13_tiled_normalised_every_block).passed


def test_ch13_tiled_attention_accepts_the_chapters_solution_that_converts_its_inputs():
    def converting(q, k, v, block_size):
        q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
        return ch13_tiled_attention(q, k, v, block_size)

    assert exercises.check_tiled_attention(converting).passed


# Every checker of the chapter with a correct answer: test_exercises_registry.py runs them.
REFERENCES = dict(CH13_CHECKERS)


# --- Round 4: the second review's cases -------------------------------------------------------


def ch13_key_blocks_only(q, k, v, block_size):
    """Chapter 11's blocked_attention with its logsumexp: every query at once against one block
    of keys at a time, a T_q × block_size tile that grows with T_q."""
    m, total = np.full(len(q), -np.inf), np.zeros(len(q))
    acc = np.zeros((len(q), v.shape[1]))
    for k_start in range(0, len(k), block_size):
        scores = q @ k[k_start : k_start + block_size].T / np.sqrt(q.shape[1])  # (T_q, b)
        m_new = np.maximum(m, scores.max(axis=1))
        correction, weights = np.exp(m - m_new), np.exp(scores - m_new[:, None])
        total = total * correction + weights.sum(axis=1)
        acc = acc * correction[:, None] + weights @ v[k_start : k_start + block_size]
        m = m_new
    return acc / total[:, None], m + np.log(total)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (
            ch13_key_blocks_only,
            [
                "the results are right, but the memory ch13_key_blocks_only held grew by",
                "its tiles score ALL the queries against a block of keys",
                "Cut the queries into blocks of block_size too",
            ],
        ),
        (
            lambda q, k, v, block_size: ch13_tiled_attention(q, k, v, 16),  # block_size ignored
            ["in one block (block_size = 16) and", "in blocks of 4: it does not use block_size"],
        ),
    ],
)
def test_ch13_tiled_attention_names_tiles_without_query_blocks_and_an_unused_block_size(
    answer, fragments
):
    assert_ch13_mistake(exercises.check_tiled_attention(answer), *fragments)


# --- The third review's cases -------------------------------------------------------------------


def ch13_one_query_at_a_time(q, k, v, block_size):
    """Blocks of keys but no blocks of queries: each query alone against one key block after
    the other (K and V read once per query)."""
    output, logsumexp = np.empty((len(q), v.shape[1])), np.empty(len(q))
    for i, row in enumerate(q):
        m, total, acc = -np.inf, 0.0, np.zeros(v.shape[1])
        for k_start in range(0, len(k), block_size):
            scores = k[k_start : k_start + block_size] @ row / np.sqrt(len(row))  # (b,)
            m_new = max(m, scores.max())
            weights, correction = np.exp(scores - m_new), np.exp(m - m_new)
            total = total * correction + weights.sum()
            acc = acc * correction + weights @ v[k_start : k_start + block_size]
            m = m_new
        output[i], logsumexp[i] = acc / total, m + np.log(total)
    return output, logsumexp


def ch13_query_blocks_walked_row_by_row(q, k, v, block_size):
    """Blocks of queries in the outer loop, but each block's queries taken one by one."""
    output, logsumexp = np.empty((len(q), v.shape[1])), np.empty(len(q))
    for q_start in range(0, len(q), block_size):
        for i in range(q_start, min(q_start + block_size, len(q))):
            out, lse = ch13_tiled_attention(q[i : i + 1], k, v, block_size)
            output[i], logsumexp[i] = out[0], lse[0]
    return output, logsumexp


def ch13_query_blocks_and_wider_key_blocks(q, k, v, block_size):
    """Blocks of block_size queries against blocks of 2 · block_size keys: still tiles."""
    output, logsumexp = np.empty((len(q), v.shape[1])), np.empty(len(q))
    for q_start in range(0, len(q), block_size):
        q_block = q[q_start : q_start + block_size]
        m, total = np.full(len(q_block), -np.inf), np.zeros(len(q_block))
        acc = np.zeros((len(q_block), v.shape[1]))
        for k_start in range(0, len(k), 2 * block_size):
            keys = slice(k_start, k_start + 2 * block_size)
            scores = q_block @ k[keys].T / np.sqrt(q.shape[1])
            m_new = np.maximum(m, scores.max(axis=1))
            correction, weights = np.exp(m - m_new), np.exp(scores - m_new[:, None])
            total = total * correction + weights.sum(axis=1)
            acc = acc * correction[:, None] + weights @ v[keys]
            m = m_new
        output[q_start : q_start + block_size] = acc / total[:, None]
        logsumexp[q_start : q_start + block_size] = m + np.log(total)
    return output, logsumexp


def ch13_tiled_with_logaddexp(q, k, v, block_size):
    """The output kept normalised, with the running logsumexp updated by np.logaddexp."""
    outputs, log_totals = [], []
    for q_start in range(0, len(q), block_size):
        q_block = q[q_start : q_start + block_size]
        out, lse = np.zeros((len(q_block), v.shape[1])), np.full(len(q_block), -np.inf)
        for k_start in range(0, len(k), block_size):
            scores = q_block @ k[k_start : k_start + block_size].T / np.sqrt(q.shape[1])
            new = np.logaddexp(lse, np.logaddexp.reduce(scores, axis=1))
            out = (
                out * np.exp(lse - new)[:, None]
                + np.exp(scores - new[:, None]) @ v[k_start : k_start + block_size]
            )
            lse = new
        outputs.append(out)
        log_totals.append(lse)
    return np.concatenate(outputs), np.concatenate(log_totals)


@pytest.mark.parametrize("answer", [ch13_one_query_at_a_time, ch13_query_blocks_walked_row_by_row])
def test_ch13_tiled_attention_names_queries_taken_one_at_a_time(answer):
    assert_ch13_mistake(
        exercises.check_tiled_attention(answer),
        "lines of Python for 4 queries and",
        "all in one block (block_size = 16, T_k = 32): it takes the queries one at a time",
        "once per query, not once per block of queries",
    )


@pytest.mark.parametrize(
    "answer",
    [ch13_query_blocks_and_wider_key_blocks, ch13_tiled_with_logaddexp, ch13_tiled_keys_outside],
)
def test_ch13_tiled_attention_accepts_other_tilings_and_names_the_order_it_praises(answer):
    feedback = exercises.check_tiled_attention(answer)
    assert feedback.passed, feedback.message
    # FlashAttention-1's order (keys outside) passes too: the message says for which order
    # only q, k, v, the output and the logsumexp cross to main memory.
    assert "in FlashAttention-2's order (a block of queries outside" in feedback.message


def test_ch13_rotate_praises_the_offset_property_as_the_chapter_states_it():
    feedback = exercises.check_rotate(ch13_rotate)
    assert feedback.passed, feedback.message
    # The score depends on the two contents too: only the positions enter through n − m.
    assert "depends on the positions only through n − m" in feedback.message
    assert "depends only on n − m" not in feedback.message


def test_ch13_grouped_query_attention_names_a_division_by_the_number_of_kv_heads():
    """h // H_kv instead of h // (H / H_kv): the same for H = 4, H_kv = 2, wrong for 6 and 3."""

    def divided_by_kv_count(q, k, v):
        heads = [h // k.shape[0] for h in range(q.shape[0])]
        return ch13_gqa_with(heads=lambda x, n_rep: x[heads])(q, k, v)

    assert_ch13_mistake(
        exercises.check_grouped_query_attention(divided_by_kv_count),
        "(6, 4, 2), k and v of shape (3, 4, 2))",
        "query heads 0 … 5 read KV heads [0, 0, 0, 1, 1, 1]",
        "h // (H / H_kv) gives KV heads [0, 0, 1, 1, 2, 2]",
    )
