"""Checkers for the exercises of chapter 7, multi-head attention."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from selfattn_lib import multihead, softmax
from selfattn_lib.exercises import _kit as kit


def _ch7_numbers(shape: tuple[int, int, int]) -> np.ndarray:
    """``(B, T, D)`` array whose entry ``[b, t, f]`` is ``(b T + t) D + f``: it names itself."""
    return np.arange(float(np.prod(shape))).reshape(shape)


def _ch7_where(number: float, n_tokens: int, d_model: int) -> str:
    """``"feature 4 of token 1"`` for an entry of :func:`_ch7_numbers` (batch 0 implied)."""
    batch_token, feature = divmod(int(round(number)), d_model)
    batch, token = divmod(batch_token, n_tokens)
    return f"feature {feature} of token {token}" + (f" of sequence {batch}" if batch else "")


def check_split_heads(split_heads: Callable[[np.ndarray, int], Any]) -> kit.Feedback:
    """Check the learner's split into heads (chapter 7, exercise 1).

    Expected signature: ``split_heads(x: np.ndarray, n_heads: int) -> np.ndarray``: head
    ``h`` of token ``t`` holds features ``h·D_h … (h+1)·D_h − 1`` of token ``t``. The checker
    feeds arrays whose entries are their own positions, so it can say which feature of which
    token ended up where.

    Shapes
    ------
    ``x``: ``(B, T, D)`` → ``(B, H, T, D_h)`` with ``H = n_heads`` and ``D_h = D / H``.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_split_heads(lambda x, n_heads: None)
    ✘ Not yet. split_heads(x of shape (2, 4, 6), n_heads=2) returned None: did you forget the
    `return` statement?
    """
    name = kit.name_of(split_heads, "split_heads")
    cases = (((2, 4, 6), 2), ((1, 3, 8), 4), ((2, 2, 6), 3), ((1, 3, 4), 1))

    def check_one(shape: tuple[int, int, int], n_heads: int) -> None:
        x = _ch7_numbers(shape)
        batch, n_tokens, d_model = shape
        d_head = d_model // n_heads
        expected = multihead.split_heads(x, n_heads)  # (B, H, T, D_h)
        what = f"{name}(x of shape {shape}, n_heads={n_heads})"
        got = kit.as_array(kit.call(split_heads, x.copy(), n_heads), what)
        if got.shape == (batch, n_tokens, n_heads, d_head) and n_heads != n_tokens:
            raise kit.Mistake(
                f"{what} returned shape {got.shape} = (B, T, H, D_h): the reshape is right, but "
                "the head axis must come before the tokens, so that every head sees all T "
                "tokens: swap axes 1 and 2 (`.transpose(0, 2, 1, 3)`)"
            )
        if got.shape == (batch, n_heads, d_head, n_tokens) and d_head != n_tokens:
            raise kit.Mistake(
                f"{what} returned shape {got.shape} = (B, H, D_h, T): the tokens and the "
                "features of each head are swapped. Reshape to (B, T, H, D_h), then swap only "
                "axes 1 and 2"
            )
        if got.shape != expected.shape:
            raise kit.Mistake(
                f"{what} returned shape {got.shape}, expected (B, H, T, D_h) = {expected.shape}"
            )
        if np.array_equal(got, expected):
            return
        if np.array_equal(got, x.reshape(expected.shape)):
            raise kit.Mistake(
                f"{what} reshapes x straight to (B, H, T, D_h) — the classic bug. The shape is "
                f"right, but head 0, row 1 holds {_ch7_where(got[0, 0, 1, 0], n_tokens, d_model)}"
                f", not {_ch7_where(expected[0, 0, 1, 0], n_tokens, d_model)}: a reshape keeps "
                "the order in memory, so head 0 gets the first "
                f"T·D_h = {n_tokens * d_head} numbers of x — whole tokens, not a slice of every "
                "token. Reshape to (B, T, H, D_h) first, then swap axes 1 and 2"
            )
        interleaved = x.reshape(batch, n_tokens, d_head, n_heads).transpose(0, 3, 1, 2)
        if np.array_equal(got, interleaved):
            raise kit.Mistake(
                f"{what} gives head 0 the features 0, {n_heads}, {2 * n_heads}, … (one in "
                f"every {n_heads}): you reshaped to (B, T, D_h, H). Head h gets the "
                "consecutive block h·D_h … (h+1)·D_h − 1, so reshape to (B, T, H, D_h)"
            )
        index = tuple(int(i) for i in np.argwhere(got != expected)[0])
        b, h, t, i = index
        raise kit.Mistake(
            f"{what}[{b}, {h}, {t}, {i}] holds {_ch7_where(got[index], n_tokens, d_model)}, "
            f"expected {_ch7_where(expected[index], n_tokens, d_model)} "
            f"(head {h} holds features {h * d_head}…{(h + 1) * d_head - 1} of every token)"
        )

    def checks() -> str:
        for shape, n_heads in cases:
            check_one(shape, n_heads)
        kit.require_own_code(
            split_heads,
            (_ch7_numbers((2, 4, 6)), 2),
            ("selfattn_lib.multihead.split_heads",),
            name,
            kit.WRITE_IT_YOURSELF,
        )
        return (
            "Your split is right: reshape (B, T, D) → (B, T, H, D_h), then swap the token and "
            "head axes, so every head holds its own block of features of every token."
        )

    return kit.run_checks(checks)


def check_merge_heads(merge_heads: Callable[[np.ndarray], Any]) -> kit.Feedback:
    """Check the learner's merge of the heads (chapter 7, exercise 2).

    Expected signature: ``merge_heads(heads: np.ndarray) -> np.ndarray``: token ``t`` gets
    the outputs of heads ``0, 1, …, H − 1`` one after the other, so that
    ``merge_heads(split_heads(x, H))`` is ``x``.

    Shapes
    ------
    ``heads``: ``(B, H, T, D_h)`` → ``(B, T, D)`` with ``D = H·D_h``.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_merge_heads(lambda heads: None)
    ✘ Not yet. merge_heads(heads of shape (2, 2, 4, 3)) returned None: did you forget the
    `return` statement?
    """
    name = kit.name_of(merge_heads, "merge_heads")
    cases = (((2, 4, 6), 2), ((1, 3, 8), 4), ((2, 2, 6), 3), ((1, 3, 4), 1))

    def check_one(shape: tuple[int, int, int], n_heads: int) -> None:
        expected = _ch7_numbers(shape)  # (B, T, D)
        batch, n_tokens, d_model = shape
        d_head = d_model // n_heads
        heads = multihead.split_heads(expected, n_heads)  # (B, H, T, D_h)
        what = f"{name}(heads of shape {heads.shape})"
        got = kit.as_array(kit.call(merge_heads, heads.copy()), what)
        if got.shape == (batch, n_tokens, n_heads, d_head) and n_heads > 1:
            raise kit.Mistake(
                f"{what} returned shape {got.shape} = (B, T, H, D_h): the transpose is right, "
                f"now join the last two axes into D = H·D_h = {d_model} with a reshape"
            )
        if got.shape != expected.shape:
            raise kit.Mistake(f"{what} returned shape {got.shape}, expected (B, T, D) = {shape}")
        if np.array_equal(got, expected):
            return
        if np.array_equal(got, heads.reshape(shape)):
            raise kit.Mistake(
                f"{what} reshapes the heads straight to (B, T, D) — the classic bug again. Row 0 "
                f"then holds {_ch7_where(got[0, 0, d_head], n_tokens, d_model)} at position "
                f"{d_head}, not feature {d_head} of token 0. Move the head axis back behind the "
                "tokens first (swap axes 1 and 2: (B, T, H, D_h)), then reshape"
            )
        if np.array_equal(got, heads.transpose(0, 2, 3, 1).reshape(shape)):
            raise kit.Mistake(
                f"{what} interleaves the heads (feature 1 of a token comes from head 1): you "
                "moved the head axis last, (B, T, D_h, H). Token t must get all of head 0's "
                "outputs, then all of head 1's, …: transpose to (B, T, H, D_h)"
            )
        index = tuple(int(i) for i in np.argwhere(got != expected)[0])
        raise kit.Mistake(
            f"{what}{list(index)} holds {_ch7_where(got[index], n_tokens, d_model)}, expected "
            f"{_ch7_where(expected[index], n_tokens, d_model)}"
        )

    def checks() -> str:
        for shape, n_heads in cases:
            check_one(shape, n_heads)
        kit.require_own_code(
            merge_heads,
            (multihead.split_heads(_ch7_numbers((2, 4, 6)), 2),),
            ("selfattn_lib.multihead.merge_heads",),
            name,
            kit.WRITE_IT_YOURSELF,
        )
        return (
            "Your merge is right: swap the head and token axes back, then reshape, so each "
            "token's features are head 0's outputs, then head 1's, and so on."
        )

    return kit.run_checks(checks)


def _ch7_case(seed: int) -> tuple[np.ndarray, multihead.MultiHeadParams]:
    """Inputs ``x`` ``(B, T, D) = (5, 4, 6)`` and parameters with non-zero biases."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(5, 4, 6))
    weights = [rng.normal(scale=0.7, size=(6, 6)) for _ in range(4)]
    biases = [rng.normal(scale=0.5, size=6) for _ in range(4)]
    return x, multihead.MultiHeadParams(*weights, *biases)


def _ch7_weights(
    x: np.ndarray,
    params: multihead.MultiHeadParams,
    n_heads: int,
    *,
    scale: float | None = None,
    split=multihead.split_heads,
) -> np.ndarray:
    """Per-head attention weights ``(B, H, T, T)`` computed by hand, so that ``scale`` and
    ``split`` can make the usual slips; the right ones come from
    :func:`selfattn_lib.multihead.multi_head_attention`."""
    d_head = x.shape[-1] // n_heads
    q = split(x @ params.w_q + params.b_q, n_heads)  # (B, H, T, D_h)
    k = split(x @ params.w_k + params.b_k, n_heads)  # (B, H, T, D_h)
    scores = q @ np.swapaxes(k, -1, -2) / (np.sqrt(d_head) if scale is None else scale)
    return softmax.softmax(scores, axis=-1)  # (B, H, T, T)


def check_head_weights(head_weights: Callable[..., Any]) -> kit.Feedback:
    """Check the learner's per-head attention weights (chapter 7, exercise 3).

    Expected signature: ``head_weights(x, params, n_heads) -> np.ndarray`` with a
    :class:`~selfattn_lib.multihead.MultiHeadParams` ``params`` (biases included): every
    head's self-attention weights, ``softmax(Q_h K_hᵀ / √D_h)`` with ``Q_h = x W_Q[:, h-th
    block] + b_Q[h-th block]`` and likewise ``K_h``.

    Shapes
    ------
    ``x``: ``(B, T, D)``; ``params.w_q``, ``params.w_k``: ``(D, D)``; ``params.b_q``,
    ``params.b_k``: ``(D,)`` → ``(B, H, T_q, T_k)`` with ``T_q = T_k = T``.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_head_weights(lambda x, params, n_heads: None)
    ✘ Not yet. head_weights(x of shape (5, 4, 6), params, n_heads=2) returned None: did you
    forget the `return` statement?
    """
    name = kit.name_of(head_weights, "head_weights")

    def check_one(seed: int, n_heads: int) -> None:
        x, params = _ch7_case(seed)
        batch, n_tokens, d_model = x.shape
        expected = multihead.multi_head_attention(x, x, params, n_heads)[1]
        what = f"{name}(x of shape {x.shape}, params, n_heads={n_heads})"
        got = kit.as_array(kit.call_quietly(head_weights, x.copy(), params, n_heads), what)
        if got.shape == (batch, n_tokens, n_heads, n_tokens):
            raise kit.Mistake(
                f"{what} returned shape {got.shape} = (B, T, H, T): the head axis belongs "
                "before the queries, (B, H, T_q, T_k) — did you split without moving the head "
                "axis forward?"
            )
        if got.shape == (n_heads, batch, n_tokens, n_tokens) and n_heads != batch:
            raise kit.Mistake(
                f"{what} returned shape {got.shape} = (H, B, T, T): stack the heads along "
                "axis 1, (B, H, T_q, T_k)"
            )
        got = kit.as_result_array(got, expected, what)
        if np.allclose(got, expected, atol=1e-8):
            return
        if np.allclose(got.sum(axis=-2), 1.0) and not np.allclose(got.sum(axis=-1), 1.0):
            raise kit.Mistake(
                f"the columns of {what} sum to 1, not the rows: take the softmax over the "
                "keys, the last axis"
            )
        mistakes = [
            (
                _ch7_weights(x, params, n_heads, scale=np.sqrt(d_model)),
                f"divides the scores by √D = √{d_model}. Each head's queries and keys have "
                f"D_h = D / H = {d_model // n_heads} numbers, so divide by √D_h",
            ),
            (
                _ch7_weights(x, params, n_heads, scale=1.0),
                "does not scale the scores: divide them by √D_h (chapter 5)",
            ),
            (
                _ch7_weights(x, params, n_heads, scale=float(d_model // n_heads)),
                f"divides the scores by D_h = {d_model // n_heads} itself; the scale is its "
                f"square root, √D_h (chapter 5)",
            ),
            (
                _ch7_weights(
                    x, params, n_heads, split=lambda a, h: a.reshape(a.shape[0], h, a.shape[1], -1)
                ),
                "splits the projected queries and keys by reshaping straight to (B, H, T, "
                "D_h) — the classic bug that hands each head the features of other tokens. "
                "Head h takes columns h·D_h … (h+1)·D_h − 1 of the projections",
            ),
            (
                _ch7_weights(
                    x,
                    params,
                    n_heads,
                    split=lambda a, h: a.reshape(*a.shape[:2], -1, h).transpose(0, 3, 1, 2),
                ),
                "gives head h every H-th column (interleaved). Head h takes the consecutive "
                "columns h·D_h … (h+1)·D_h − 1",
            ),
        ]
        zero = np.zeros(d_model)
        without_bias = type(params)(
            params.w_q, params.w_k, params.w_v, params.w_o, zero, zero, zero, zero
        )
        mistakes.append(
            (
                _ch7_weights(x, without_bias, n_heads),
                "leaves out the query bias b_q (the key bias b_k would not matter — it shifts "
                "each row of scores by a constant, chapter 4 — but b_q does)",
            )
        )
        if not kit.match_known_mistakes(got, expected, mistakes, what, joiner=" "):
            kit.assert_close(got, expected, what)

    def checks() -> str:
        for seed, n_heads in ((70, 2), (71, 3), (72, 1)):
            check_one(seed, n_heads)
        kit.require_own_code(
            head_weights,
            (*_ch7_case(70), 2),
            ("selfattn_lib.multihead",),
            name,
            (
                "the exercise is to cut each head's columns out of the weights yourself, "
                "without the library's split_heads or multi_head_attention"
            ),
        )
        return (
            "Your per-head weights are right: each head slices its own columns of W_Q and W_K "
            "(and of the biases), scores with √D_h and takes its own softmax."
        )

    return kit.run_checks(checks)


def _ch7_contributions(
    x: np.ndarray, params: multihead.MultiHeadParams, n_heads: int
) -> np.ndarray:
    """``(B, H, T, D)``: head h's output times its block of rows of ``W_O`` (no ``b_o``)."""
    weights = multihead.multi_head_attention(x, x, params, n_heads)[1]  # (B, H, T, T)
    values = multihead.split_heads(x @ params.w_v + params.b_v, n_heads)  # (B, H, T, D_h)
    heads = weights @ values  # (B, H, T, D_h)
    d_head = x.shape[-1] // n_heads
    w_o_blocks = params.w_o.reshape(n_heads, d_head, -1)  # (H, D_h, D): block rows
    return heads @ w_o_blocks[None]  # (B, H, T, D)


def check_head_contributions(head_contributions: Callable[..., Any]) -> kit.Feedback:
    """Check the learner's split of the output into the heads' shares (chapter 7, exercise 4).

    Expected signature: ``head_contributions(x, params, n_heads) -> np.ndarray`` with a
    :class:`~selfattn_lib.multihead.MultiHeadParams` ``params``: entry ``[:, h]`` is
    ``head_h W_O^(h)``, head ``h``'s output times rows ``h·D_h … (h+1)·D_h − 1`` of ``W_O``.
    Without the bias ``b_o``, so that the sum over heads plus ``b_o`` is the layer's output.

    Shapes
    ------
    ``x``: ``(B, T, D)``; head ``h``'s output: ``(B, T, D_h)``; its rows of ``W_O``:
    ``(D_h, D)`` → ``(B, H, T, D)``.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_head_contributions(lambda x, params, n_heads: None)
    ✘ Not yet. head_contributions(x of shape (5, 4, 6), params, n_heads=2) returned None: did
    you forget the `return` statement?
    """
    name = kit.name_of(head_contributions, "head_contributions")

    def check_one(seed: int, n_heads: int) -> None:
        x, params = _ch7_case(seed)
        batch, n_tokens, d_model = x.shape
        expected = _ch7_contributions(x, params, n_heads)  # (B, H, T, D)
        output = expected.sum(axis=1) + params.b_o  # (B, T, D)
        what = f"{name}(x of shape {x.shape}, params, n_heads={n_heads})"
        got = kit.as_array(kit.call_quietly(head_contributions, x.copy(), params, n_heads), what)
        if got.shape == (n_heads, batch, n_tokens, d_model) and n_heads != batch:
            raise kit.Mistake(
                f"{what} returned shape {got.shape} = (H, B, T, D): put the heads on axis 1, "
                "(B, H, T, D)"
            )
        if got.shape == (batch, n_heads, n_tokens, d_model // n_heads) and n_heads > 1:
            raise kit.Mistake(
                f"{what} returned shape {got.shape} = (B, H, T, D_h): those are the heads' "
                "outputs. Multiply each by its block of rows of W_O, shape (D_h, D), to get its "
                "share of the output, (B, H, T, D)"
            )
        got = kit.as_result_array(got, expected, what)
        if np.allclose(got, expected, atol=1e-8):
            return
        mistakes = [
            (
                expected + params.b_o,
                "adds b_o to every head, so the heads' shares sum to the output plus "
                f"{n_heads - 1} extra b_o. The bias belongs to no head: leave it out",
            ),
            (
                expected + params.b_o / n_heads,
                "gives every head b_o / H. That sums correctly, but the bias belongs to no "
                "head: leave it out (the shares then sum to the output minus b_o)",
            ),
            (
                np.broadcast_to((output - params.b_o)[:, None] / n_heads, expected.shape),
                "splits the output evenly, (output - b_o) / H for every head. Each head "
                "contributes its own output times its own rows of W_O, which are not equal",
            ),
        ]
        if kit.match_known_mistakes(got, expected, mistakes, what, joiner=" "):
            return
        if np.allclose(got.sum(axis=1), output - params.b_o, atol=1e-8):
            raise kit.Mistake(
                f"the shares of {what} sum to the output (minus b_o), but are not the heads' "
                "own: head h's share is head_h (B, T, D_h) times rows h·D_h … (h+1)·D_h − 1 "
                "of W_O"
            )
        kit.assert_close(got, expected, what)

    def checks() -> str:
        for seed, n_heads in ((73, 2), (74, 3), (75, 1)):
            check_one(seed, n_heads)
        return (
            "Your shares are right: head h contributes head_h W_O^(h), and the shares plus "
            "b_o add up to the layer's output — concatenating and multiplying by W_O is a "
            "sum over heads."
        )

    return kit.run_checks(checks)
