"""Tests of the checkers of chapter 7 (selfattn_lib.exercises.ch07_multi_head): each names
the mistake in typical wrong answers and accepts the usual correct alternatives. What every
checker promises is tested once, over REFERENCES, in test_exercises_registry.py."""

from dataclasses import replace

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


# Other correct formulations, as learners write them.


def ch7_split_by_np_split(x, n_heads):
    return np.stack(np.split(x, n_heads, axis=-1), axis=1)  # (B, H, T, D_h)


def ch7_split_by_moveaxis(x, n_heads):
    return np.moveaxis(x.reshape(*x.shape[:-1], n_heads, -1), -2, -3)


def ch7_split_in_float32_torch(x, n_heads):
    import torch

    tensor = torch.tensor(x, dtype=torch.float32)
    return tensor.view(*tensor.shape[:2], n_heads, -1).permute(0, 2, 1, 3)


def ch7_merge_by_concatenate(heads):
    return np.concatenate([heads[:, h] for h in range(heads.shape[1])], axis=-1)


def ch7_head_weights_by_einsum_without_key_bias(x, params, n_heads):
    # b_k shifts every row of scores by a constant: leaving it out is still right.
    batch, n_tokens, d_model = x.shape
    q = (x @ params.w_q + params.b_q).reshape(batch, n_tokens, n_heads, -1)
    k = (x @ params.w_k).reshape(batch, n_tokens, n_heads, -1)
    scores = np.einsum("bthd,bshd->bhts", q, k) / np.sqrt(d_model // n_heads)
    exponentials = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


def ch7_head_weights_reading_d_model(x, params, n_heads):
    # params.d_model is a documented property of MultiHeadParams: reading it is allowed.
    d_head = params.d_model // n_heads
    maps = []
    for h in range(n_heads):
        block = slice(h * d_head, (h + 1) * d_head)
        q = x @ params.w_q[:, block] + params.b_q[block]
        k = x @ params.w_k[:, block] + params.b_k[block]
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_head)
        exponentials = np.exp(scores - scores.max(axis=-1, keepdims=True))
        maps.append(exponentials / exponentials.sum(axis=-1, keepdims=True))
    return np.stack(maps, axis=1)


def ch7_head_weights_by_the_library_attention(x, params, n_heads):
    # The prompt rules out split_heads and multi_head_attention, not chapter 4's attention.
    from selfattn_lib.attention import scaled_dot_product_attention

    d_head = x.shape[-1] // n_heads
    maps = []
    for h in range(n_heads):
        block = slice(h * d_head, (h + 1) * d_head)
        q = x @ params.w_q[:, block] + params.b_q[block]
        k = x @ params.w_k[:, block] + params.b_k[block]
        maps.append(scaled_dot_product_attention(q, k, k)[1])
    return np.stack(maps, axis=1)


def ch7_torch32(array):
    import torch

    return torch.tensor(array, dtype=torch.float32)


def ch7_torch32_projections(x, params, n_heads):
    """Every head's queries, keys and values (B, H, T, D_h) as float32 torch tensors."""
    x_t = ch7_torch32(x)
    batch, n_tokens, _ = x_t.shape
    return tuple(
        (x_t @ ch7_torch32(w) + ch7_torch32(b)).view(batch, n_tokens, n_heads, -1).transpose(1, 2)
        for w, b in ((params.w_q, params.b_q), (params.w_k, params.b_k), (params.w_v, params.b_v))
    )


def ch7_head_weights_in_float32_torch(x, params, n_heads):
    import torch

    q, k, _ = ch7_torch32_projections(x, params, n_heads)
    return torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1)


def ch7_head_weights_by_torch_linear(x, params, n_heads):
    import torch

    linear = torch.nn.functional.linear  # computes x @ W.T + b, so W goes in transposed
    x_t = torch.from_numpy(x)
    batch, n_tokens, d_model = x_t.shape
    q = linear(x_t, torch.from_numpy(params.w_q.T), torch.from_numpy(params.b_q))
    k = linear(x_t, torch.from_numpy(params.w_k.T), torch.from_numpy(params.b_k))
    q, k = (a.view(batch, n_tokens, n_heads, -1).transpose(1, 2) for a in (q, k))
    return (q @ k.transpose(-1, -2) / (d_model // n_heads) ** 0.5).softmax(dim=-1)


def ch7_heads(x, params, n_heads, *, scale=None, split=ch7_split_heads, value_bias=True):
    """Every head's outputs (B, H, T, D_h), with the slips the tests need."""
    weights = ch7_head_weights(x, params, n_heads, scale=scale, split=split)
    values = split(x @ params.w_v + (params.b_v if value_bias else 0.0), n_heads)
    return weights @ values


def ch7_contributions_by_zeroing_other_heads(x, params, n_heads):
    heads = ch7_heads(x, params, n_heads)  # (B, H, T, D_h)
    shares = []
    for h in range(n_heads):
        only_h = np.zeros_like(heads)
        only_h[:, h] = heads[:, h]
        shares.append(ch7_merge_heads(only_h) @ params.w_o)  # the full W_O, no bias
    return np.stack(shares, axis=1)


def ch7_contributions_by_einsum(x, params, n_heads):
    heads = ch7_heads(x, params, n_heads)
    return np.einsum("bhtd,hde->bhte", heads, params.w_o.reshape(n_heads, -1, x.shape[-1]))


def ch7_contributions_in_float32_torch(x, params, n_heads):
    import torch

    q, k, v = ch7_torch32_projections(x, params, n_heads)
    heads = torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1) @ v
    return heads @ ch7_torch32(params.w_o).view(n_heads, -1, x.shape[-1])


def ch7_contributions_by_torch_sdpa_float32(x, params, n_heads):
    import torch

    heads = torch.nn.functional.scaled_dot_product_attention(
        *ch7_torch32_projections(x, params, n_heads)
    )  # (B, H, T, D_h)
    w_o_blocks = ch7_torch32(params.w_o).view(n_heads, -1, x.shape[-1])  # (H, D_h, D)
    return torch.einsum("bhtd,hde->bhte", heads, w_o_blocks)


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
        (exercises.check_split_heads, ch7_split_by_np_split),
        (exercises.check_split_heads, ch7_split_by_moveaxis),
        (exercises.check_split_heads, ch7_split_in_float32_torch),
        (exercises.check_merge_heads, ch7_merge_heads),
        (exercises.check_merge_heads, torch_merge),
        (exercises.check_merge_heads, ch7_merge_by_concatenate),
        (exercises.check_merge_heads, lambda a: ch7_merge_heads(a).astype(np.float32)),
        (exercises.check_head_weights, float32_weights),
        (exercises.check_head_weights, ch7_head_weights_by_einsum_without_key_bias),
        (exercises.check_head_weights, ch7_head_weights_in_float32_torch),
        (exercises.check_head_weights, ch7_head_weights_by_torch_linear),
        (exercises.check_head_weights, ch7_head_weights_reading_d_model),
        (exercises.check_head_weights, ch7_head_weights_by_the_library_attention),
        (exercises.check_head_contributions, ch7_head_contributions),
        (exercises.check_head_contributions, ch7_contributions_by_zeroing_other_heads),
        (exercises.check_head_contributions, ch7_contributions_by_einsum),
        (exercises.check_head_contributions, ch7_contributions_in_float32_torch),
        (exercises.check_head_contributions, ch7_contributions_by_torch_sdpa_float32),
    ]:
        feedback = checker(answer)
        assert feedback.passed, (getattr(answer, "__name__", answer), feedback.message)


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
        (lambda x, h: ch7_split_heads(x, h)[:, ::-1], ["reverse order", "FIRST block"]),
        (lambda x, h: ch7_split_heads(x, h)[..., 0], ["expected (B, H, T, D_h)"]),
        (lambda x, h: np.stack(np.split(x, h, axis=-1)), ["(H, B, T, D_h)", "stack on axis 1"]),
        (
            lambda x, h: x.reshape(*x.shape[:2], h, -1).transpose(2, 0, 1, 3),
            ["puts the heads on axis 0"],
        ),
        (
            lambda x, h: np.stack(np.split(x, h, axis=1), axis=1),  # the tokens cut into H groups
            ["(B, H, T / H, D)", "cut the SEQUENCE"],
        ),
        (lambda x, h: ch7_split_heads(x, 2), ["2 heads of 4 features", "n_heads = 4"]),
        (  # the two sizes of the reshape in the wrong order, then the right transpose
            lambda x, h: x.reshape(*x.shape[:2], -1, h).transpose(0, 2, 1, 3),
            ["= (B, D_h, T, H)", "sizes swapped", "n_heads = 2 groups of D_h = 3"],
        ),
        (
            lambda x, h: np.stack(np.split(x, x.shape[-1] // h, axis=-1), axis=1),
            ["= (B, D_h, T, H)", "np.split into D_h = 3 pieces"],
        ),
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
        (lambda a: ch7_merge_heads(a[:, ::-1]), ["reverse order", "head 0's outputs first"]),
        (lambda a: a.sum(axis=1), ["adds the heads up", "SIDE BY SIDE"]),
        (lambda a: a.mean(axis=1), ["averages the heads", "SIDE BY SIDE"]),
        (lambda a: a[:, 0], ["keeps head 0 only"]),
        (lambda a: np.concatenate(list(a.transpose(1, 0, 2, 3)), axis=1), ["TOKEN axis"]),
        (
            lambda a: a.swapaxes(2, 3).reshape(a.shape[0], a.shape[2], -1),
            ["swaps axes 2 and 3", "Swap axes 1 and 2"],
        ),
    ],
)
def test_ch7_merge_heads_names_typical_mistakes(answer, fragments):
    assert_ch7_mistake(exercises.check_merge_heads(answer), *fragments)


def ch7_weights_without_query_bias(x, params, n_heads):
    zero = np.zeros(x.shape[-1])
    no_bias = type(params)(params.w_q, params.w_k, params.w_v, params.w_o, zero, zero, zero, zero)
    return ch7_head_weights(x, no_bias, n_heads)


def ch7_weights_with_transposed_matrices(x, params, n_heads):
    return ch7_head_weights(x, replace(params, w_q=params.w_q.T, w_k=params.w_k.T), n_heads)


def ch7_weights_from_diagonal_blocks(x, params, n_heads):
    d_head = x.shape[-1] // n_heads
    maps = []
    for h in range(n_heads):
        block = slice(h * d_head, (h + 1) * d_head)
        q = x[..., block] @ params.w_q[block, block] + params.b_q[block]
        k = x[..., block] @ params.w_k[block, block] + params.b_k[block]
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_head)
        exponentials = np.exp(scores - scores.max(axis=-1, keepdims=True))
        maps.append(exponentials / exponentials.sum(axis=-1, keepdims=True))
    return np.stack(maps, axis=1)


def ch7_weights_of_queries_with_queries(x, params, n_heads):
    return ch7_head_weights(x, replace(params, w_k=params.w_q, b_k=params.b_q), n_heads)


def ch7_weights_averaged_over_heads(x, params, n_heads):
    weights = ch7_head_weights(x, params, n_heads)
    return np.broadcast_to(weights.mean(axis=1, keepdims=True), weights.shape)


def ch7_scores_without_softmax(x, params, n_heads):
    q = ch7_split_heads(x @ params.w_q + params.b_q, n_heads)
    k = ch7_split_heads(x @ params.w_k + params.b_k, n_heads)
    return q @ np.swapaxes(k, -1, -2) / np.sqrt(x.shape[-1] // n_heads)


def ch7_weights_of_keys_with_queries(x, params, n_heads, axis):
    """softmax(K_h Q_hᵀ / √D_h) over ``axis``: maps laid out (T_k, T_q)."""
    q = ch7_split_heads(x @ params.w_q + params.b_q, n_heads)
    k = ch7_split_heads(x @ params.w_k + params.b_k, n_heads)
    scores = k @ np.swapaxes(q, -1, -2) / np.sqrt(x.shape[-1] // n_heads)  # (B, H, T_k, T_q)
    exponentials = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return exponentials / exponentials.sum(axis=axis, keepdims=True)


def ch7_weights_of_one_full_head(x, params, n_heads):
    weights = ch7_head_weights(x, params, 1)  # (B, 1, T, T): all D columns, ÷ √D
    return np.repeat(weights, n_heads, axis=1)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda x, p, h: ch7_head_weights(x, p, h, scale=np.sqrt(x.shape[-1])), ["√D = √6"]),
        (  # the softmax over the keys, but of K Qᵀ: each map transposed
            lambda x, p, h: ch7_weights_of_keys_with_queries(x, p, h, axis=-2),
            ["(T_k, T_q)", "rows are queries", "Q_h K_hᵀ"],
        ),
        (
            lambda x, p, h: np.swapaxes(ch7_head_weights(x, p, h), -1, -2),
            ["(T_k, T_q)", "rows are queries"],
        ),
        (  # what the columns message used to lead to: K Qᵀ with the softmax over the queries
            lambda x, p, h: ch7_weights_of_keys_with_queries(x, p, h, axis=-1),
            ["computes K_h Q_hᵀ", "the queries", "Q_h K_hᵀ"],
        ),
        (ch7_weights_of_one_full_head, ["one head over all D columns", "√D_h"]),
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
        (lambda x, p, h: ch7_head_weights(x, p, h, scale=np.sqrt(h)), ["√H = √2"]),
        (ch7_weights_with_transposed_matrices, ["transposed", "nn.Linear"]),
        (ch7_weights_from_diagonal_blocks, ["diagonal block"]),
        (ch7_weights_of_queries_with_queries, ["queries with themselves"]),
        (ch7_weights_averaged_over_heads, ["AVERAGE over heads"]),
        (ch7_scores_without_softmax, ["returns the scores", "softmax"]),
        (lambda x, p, h: ch7_head_weights(x, p, h, scale=x.shape[-1]), ["D = 6 itself"]),
        (lambda x, p, h: ch7_head_weights(x, p, h, axis=(-2, -1)), ["whole T × T map"]),
        (
            lambda x, p, h: ch7_head_weights(x, replace(p, w_k=p.w_v, b_k=p.b_v), h),
            ["keys with W_V"],
        ),
    ],
)
def test_ch7_head_weights_names_typical_mistakes(answer, fragments):
    assert_ch7_mistake(exercises.check_head_weights(answer), *fragments)


def ch7_even_shares(x, params, n_heads):
    total = ch7_head_contributions(x, params, n_heads).sum(axis=1, keepdims=True)
    return np.repeat(total / n_heads, n_heads, axis=1)


def ch7_contributions_from_rows(x, params, n_heads, rows, **slips):
    heads = ch7_heads(x, params, n_heads, **slips)  # (B, H, T, D_h)
    return np.stack([heads[:, h] @ rows(params.w_o, h) for h in range(n_heads)], axis=1)


def ch7_contributions_by_every_hth_row(x, params, n_heads):
    return ch7_contributions_from_rows(x, params, n_heads, lambda w_o, h: w_o[h::n_heads])


def ch7_contributions_by_the_first_block(x, params, n_heads):
    d_head = x.shape[-1] // n_heads
    return ch7_contributions_from_rows(x, params, n_heads, lambda w_o, h: w_o[:d_head])


def ch7_block(w_o, h, n_heads):
    d_head = w_o.shape[0] // n_heads
    return w_o[h * d_head : (h + 1) * d_head]


def ch7_contributions_with_transposed_w_o(x, params, n_heads):
    return ch7_contributions_from_rows(
        x, params, n_heads, lambda w_o, h: ch7_block(w_o.T, h, n_heads)
    )


def ch7_contributions_without_value_bias(x, params, n_heads):
    return ch7_contributions_from_rows(
        x, params, n_heads, lambda w_o, h: ch7_block(w_o, h, n_heads), value_bias=False
    )


def ch7_contributions_scaled_by_root_d(x, params, n_heads):
    return ch7_contributions_from_rows(
        x, params, n_heads, lambda w_o, h: ch7_block(w_o, h, n_heads), scale=np.sqrt(x.shape[-1])
    )


def ch7_contributions_after_the_classic_split(x, params, n_heads):
    def straight(a, n):
        return a.reshape(a.shape[0], n, a.shape[1], -1)

    return ch7_contributions_from_rows(
        x, params, n_heads, lambda w_o, h: ch7_block(w_o, h, n_heads), split=straight
    )


def ch7_contributions_by_diagonal_blocks(x, params, n_heads):
    d_head = x.shape[-1] // n_heads

    def own_columns_only(w_o, h):
        block = np.zeros_like(ch7_block(w_o, h, n_heads))
        columns = slice(h * d_head, (h + 1) * d_head)
        block[:, columns] = ch7_block(w_o, h, n_heads)[:, columns]
        return block

    return ch7_contributions_from_rows(x, params, n_heads, own_columns_only)


def ch7_contributions_with_b_o_by_zeroing(x, params, n_heads):
    return ch7_contributions_by_zeroing_other_heads(x, params, n_heads) + params.b_o


def ch7_contributions_with_b_o_on_one_head(x, params, n_heads, head):
    shares = ch7_head_contributions(x, params, n_heads)
    shares[:, head] += params.b_o
    return shares


def ch7_contributions_with_b_o_shared_unevenly(x, params, n_heads):
    shares = ch7_head_contributions(x, params, n_heads)
    share = np.linspace(1, 2, n_heads) / np.linspace(1, 2, n_heads).sum()  # (H,), sums to 1
    return shares + share[:, None, None] * params.b_o


def ch7_swapped_shares(x, params, n_heads):
    shares = ch7_head_contributions(x, params, n_heads)
    return np.concatenate([shares[:, :1] + shares[:, 1:2], 0 * shares[:, 1:2], shares[:, 2:]], 1)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda x, p, h: ch7_head_contributions(x, p, h, bias_share=1.0), ["adds b_o"]),
        (lambda x, p, h: ch7_head_contributions(x, p, h, bias_share=1 / h), ["b_o / H"]),
        (ch7_even_shares, ["evenly"]),
        (
            lambda x, p, h: ch7_contributions_with_b_o_on_one_head(x, p, h, 0),
            ["adds b_o to head 0 only", "belongs to no head"],
        ),
        (
            lambda x, p, h: ch7_contributions_with_b_o_on_one_head(x, p, h, h - 1),
            ["adds b_o to head 1 only", "belongs to no head"],
        ),
        (ch7_contributions_with_b_o_shared_unevenly, ["b_o included", "belongs to no head"]),
        (ch7_swapped_shares, ["not the heads' own"]),
        (lambda x, p, h: ch7_head_contributions(x, p, h).transpose(1, 0, 2, 3), ["(H, B, T, D)"]),
        (
            lambda x, p, h: ch7_head_weights(x, p, h) @ ch7_split_heads(x @ p.w_v + p.b_v, h),
            ["(B, H, T, D_h)", "rows of W_O"],
        ),
        (ch7_contributions_by_every_hth_row, ["every H-th row", "CONSECUTIVE"]),
        (ch7_contributions_by_the_first_block, ["first block of rows"]),
        (ch7_contributions_with_transposed_w_o, ["W_O transposed"]),
        (ch7_contributions_without_value_bias, ["value bias b_v"]),
        (ch7_contributions_scaled_by_root_d, ["√D = √6", "√D_h"]),
        (ch7_contributions_after_the_classic_split, ["reshaping straight", "classic"]),
        (ch7_contributions_with_b_o_by_zeroing, ["adds b_o"]),
        (
            lambda x, p, h: ch7_contributions_from_rows(
                x, p, h, lambda w_o, i: ch7_block(w_o, i, h), scale=1.0
            ),
            ["does not scale the dot products"],
        ),
        (
            lambda x, p, h: ch7_contributions_from_rows(
                x, p, h, lambda w_o, i: ch7_block(w_o, i, h), scale=x.shape[-1] // h
            ),
            ["D_h = 3 itself"],
        ),
        (
            lambda x, p, h: ch7_contributions_from_rows(
                x, p, h, lambda w_o, i: ch7_block(w_o, i, h), scale=x.shape[-1]
            ),
            ["D = 6 itself"],
        ),
        (
            lambda x, p, h: ch7_contributions_from_rows(
                x, p, h, lambda w_o, i: ch7_block(w_o, i, h), scale=np.sqrt(h)
            ),
            ["√H = √2"],
        ),
        (ch7_contributions_by_diagonal_blocks, ["diagonal block of W_O", "all D output"]),
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


def test_ch7_merge_heads_that_hands_over_to_the_library_breaks_the_prompts_rule():
    from selfattn_lib import multihead

    feedback = exercises.check_merge_heads(multihead.merge_heads)
    assert feedback.attempted and not feedback.passed
    assert "write it yourself" in feedback.message


def test_ch7_split_heads_that_hands_over_to_the_library_breaks_the_prompts_rule():
    from selfattn_lib import multihead

    for answer in (multihead.split_heads, lambda x, n_heads: multihead.split_heads(x, n_heads)):
        feedback = exercises.check_split_heads(answer)
        assert feedback.attempted and not feedback.passed
        assert "write it yourself" in feedback.message
