"""Tests of the checkers of chapter 7 (selfattn_lib.exercises.ch07_multi_head): each names
the mistake in typical wrong answers and accepts the usual correct alternatives. What every
checker promises is tested once, over REFERENCES, in test_exercises_registry.py."""

import numpy as np
import pytest

from selfattn_lib import exercises


def ch7_split_heads(x, n_heads):
    batch, n_tokens, d_model = x.shape
    return x.reshape(batch, n_tokens, n_heads, d_model // n_heads).transpose(0, 2, 1, 3)


def ch7_merge_heads(heads):
    batch, n_heads, n_tokens, d_head = heads.shape
    return heads.transpose(0, 2, 1, 3).reshape(batch, n_tokens, n_heads * d_head)


def ch7_head_weights(x, params, n_heads, *, scale=None, split=ch7_split_heads, axis=-1):
    d_head = x.shape[-1] // n_heads
    q = split(x @ params.w_q + params.b_q, n_heads)
    k = split(x @ params.w_k + params.b_k, n_heads)
    scores = q @ np.swapaxes(k, -1, -2) / (np.sqrt(d_head) if scale is None else scale)
    exponentials = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return exponentials / exponentials.sum(axis=axis, keepdims=True)


def ch7_head_contributions(x, params, n_heads, *, bias_share=0.0):
    weights = ch7_head_weights(x, params, n_heads)
    heads = weights @ ch7_split_heads(x @ params.w_v + params.b_v, n_heads)  # (B, H, T, D_h)
    d_head = x.shape[-1] // n_heads
    shares = np.stack(
        [heads[:, h] @ params.w_o[h * d_head : (h + 1) * d_head] for h in range(n_heads)], axis=1
    )
    return shares + bias_share * params.b_o


def ch7_stub(*args):
    raise NotImplementedError


CH7_CHECKERS = {
    "split_heads": (exercises.check_split_heads, ch7_split_heads),
    "merge_heads": (exercises.check_merge_heads, ch7_merge_heads),
    "head_weights": (exercises.check_head_weights, ch7_head_weights),
    "head_contributions": (exercises.check_head_contributions, ch7_head_contributions),
}


def assert_ch7_mistake(feedback, *fragments):
    assert feedback.attempted and not feedback.passed, feedback
    for fragment in fragments:
        assert fragment in feedback.message, feedback.message


def test_ch7_checkers_accept_other_correct_formulations():
    import torch

    def torch_split(x, n_heads):  # a torch tensor, through view + transpose
        tensor = torch.from_numpy(x)
        return tensor.view(*tensor.shape[:2], n_heads, -1).transpose(1, 2)

    def torch_merge(heads):  # a torch tensor, through transpose + reshape of a non-contiguous view
        tensor = torch.from_numpy(heads).transpose(1, 2)
        return tensor.reshape(*tensor.shape[:2], -1)

    def loop_split(x, n_heads):  # nested lists, head by head
        d_head = x.shape[-1] // n_heads
        return [
            [seq[:, h * d_head : (h + 1) * d_head].tolist() for h in range(n_heads)] for seq in x
        ]

    def float32_weights(x, params, n_heads):
        return ch7_head_weights(x, params, n_heads).astype(np.float32)

    for checker, answer in [
        (exercises.check_split_heads, ch7_split_heads),
        (exercises.check_split_heads, torch_split),
        (exercises.check_split_heads, loop_split),
        (exercises.check_merge_heads, ch7_merge_heads),
        (exercises.check_merge_heads, torch_merge),
        (exercises.check_head_weights, float32_weights),
    ]:
        feedback = checker(answer)
        assert feedback.passed, feedback.message


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda x, h: x.reshape(x.shape[0], h, x.shape[1], -1), ["classic bug", "token 0"]),
        (lambda x, h: x.reshape(*x.shape[:2], h, -1), ["(B, T, H, D_h)", "swap axes 1 and 2"]),
        (
            lambda x, h: x.reshape(*x.shape[:2], h, -1).transpose(0, 2, 3, 1),
            ["(B, H, D_h, T)"],
        ),
        (
            lambda x, h: x.reshape(*x.shape[:2], -1, h).transpose(0, 3, 1, 2),
            ["features 0, 2, 4", "(B, T, D_h, H)"],
        ),
        (lambda x, h: ch7_split_heads(x, h)[:, ::-1], ["holds feature 3 of token 0"]),
        (lambda x, h: ch7_split_heads(x, h)[..., 0], ["expected (B, H, T, D_h)"]),
    ],
)
def test_ch7_split_heads_names_typical_mistakes(answer, fragments):
    assert_ch7_mistake(exercises.check_split_heads(answer), *fragments)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda a: a.reshape(a.shape[0], a.shape[2], -1), ["classic bug", "feature 0 of token 1"]),
        (lambda a: a.transpose(0, 2, 1, 3), ["(B, T, H, D_h)", "reshape"]),
        (
            lambda a: a.transpose(0, 2, 3, 1).reshape(a.shape[0], a.shape[2], -1),
            ["interleaves", "(B, T, D_h, H)"],
        ),
        (lambda a: ch7_merge_heads(a[:, ::-1]), ["holds feature 3 of token 0"]),
    ],
)
def test_ch7_merge_heads_names_typical_mistakes(answer, fragments):
    assert_ch7_mistake(exercises.check_merge_heads(answer), *fragments)


def ch7_weights_without_query_bias(x, params, n_heads):
    zero = np.zeros(x.shape[-1])
    no_bias = type(params)(params.w_q, params.w_k, params.w_v, params.w_o, zero, zero, zero, zero)
    return ch7_head_weights(x, no_bias, n_heads)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda x, p, h: ch7_head_weights(x, p, h, scale=np.sqrt(x.shape[-1])), ["√D = √6"]),
        (lambda x, p, h: ch7_head_weights(x, p, h, scale=1.0), ["does not scale"]),
        (lambda x, p, h: ch7_head_weights(x, p, h, scale=x.shape[-1] // h), ["D_h = 3 itself"]),
        (
            lambda x, p, h: ch7_head_weights(
                x, p, h, split=lambda a, n: a.reshape(a.shape[0], n, a.shape[1], -1)
            ),
            ["classic bug"],
        ),
        (
            lambda x, p, h: ch7_head_weights(
                x, p, h, split=lambda a, n: a.reshape(*a.shape[:2], -1, n).transpose(0, 3, 1, 2)
            ),
            ["interleaved"],
        ),
        (ch7_weights_without_query_bias, ["query bias b_q"]),
        (lambda x, p, h: ch7_head_weights(x, p, h, axis=-2), ["columns", "last axis"]),
        (lambda x, p, h: ch7_head_weights(x, p, h).transpose(0, 2, 1, 3), ["(B, T, H, T)"]),
        (lambda x, p, h: ch7_head_weights(x, p, h).transpose(1, 0, 2, 3), ["(H, B, T, T)"]),
    ],
)
def test_ch7_head_weights_names_typical_mistakes(answer, fragments):
    assert_ch7_mistake(exercises.check_head_weights(answer), *fragments)


def ch7_even_shares(x, params, n_heads):
    total = ch7_head_contributions(x, params, n_heads).sum(axis=1, keepdims=True)
    return np.repeat(total / n_heads, n_heads, axis=1)


def ch7_swapped_shares(x, params, n_heads):
    shares = ch7_head_contributions(x, params, n_heads)
    return np.concatenate([shares[:, :1] + shares[:, 1:2], 0 * shares[:, 1:2], shares[:, 2:]], 1)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda x, p, h: ch7_head_contributions(x, p, h, bias_share=1.0), ["adds b_o"]),
        (lambda x, p, h: ch7_head_contributions(x, p, h, bias_share=1 / h), ["b_o / H"]),
        (ch7_even_shares, ["evenly"]),
        (ch7_swapped_shares, ["not the heads' own"]),
        (lambda x, p, h: ch7_head_contributions(x, p, h).transpose(1, 0, 2, 3), ["(H, B, T, D)"]),
        (
            lambda x, p, h: ch7_head_weights(x, p, h) @ ch7_split_heads(x @ p.w_v + p.b_v, h),
            ["(B, H, T, D_h)", "rows of W_O"],
        ),
    ],
)
def test_ch7_head_contributions_names_typical_mistakes(answer, fragments):
    assert_ch7_mistake(exercises.check_head_contributions(answer), *fragments)


# Every checker of the chapter with a correct answer: test_exercises_registry.py runs them.
REFERENCES = {
    **{checker.__name__: solution for checker, solution in CH7_CHECKERS.values()},
}


def test_ch7_head_weights_with_the_library_split_breaks_the_prompts_rule():
    from selfattn_lib.multihead import split_heads

    feedback = exercises.check_head_weights(
        lambda x, params, n_heads: ch7_head_weights(x, params, n_heads, split=split_heads)
    )
    assert feedback.attempted and not feedback.passed
    assert "but it calls `selfattn_lib.multihead.split_heads`" in feedback.message


def test_ch7_split_heads_that_hands_over_to_the_library_breaks_the_prompts_rule():
    from selfattn_lib import multihead

    for answer in (multihead.split_heads, lambda x, n_heads: multihead.split_heads(x, n_heads)):
        feedback = exercises.check_split_heads(answer)
        assert feedback.attempted and not feedback.passed
        assert "write it yourself" in feedback.message
