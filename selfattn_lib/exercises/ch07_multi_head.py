"""Checkers for the exercises of chapter 7, multi-head attention."""

from __future__ import annotations

import dataclasses
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

    def heads_returned(shape: tuple[int, int, int], n_heads: int) -> int | None:
        """How many heads the learner's split makes for one case (None: no 4-D array)."""
        try:
            got = np.shape(kit.plain(kit.call(split_heads, _ch7_numbers(shape), n_heads)))
        except (kit.Mistake, kit.NotAttempted):
            return None
        return got[1] if len(got) == 4 else None

    def check_one(shape: tuple[int, int, int], n_heads: int, hard_coded: int | None) -> None:
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
        if (
            n_tokens % n_heads == 0
            and n_heads > 1
            and got.shape == (batch, n_heads, n_tokens // n_heads, d_model)
        ):
            raise kit.Mistake(
                f"{what} returned shape {got.shape} = (B, H, T / H, D): you cut the SEQUENCE "
                "into H groups of tokens. Heads split the features, not the tokens: every "
                f"head sees all T = {n_tokens} tokens, with D_h = D / H = {d_head} features "
                "of each"
            )
        if (
            got.shape == (n_heads, batch, n_tokens, d_head)
            and np.array_equal(got, expected.swapaxes(0, 1))
            and not np.array_equal(got, expected)
        ):
            raise kit.Mistake(
                f"{what} puts the heads on axis 0, (H, B, T, D_h) (as `np.stack(np.split(x, H, "
                "axis=-1))` does): the batch axis stays first, (B, H, T, D_h): stack on axis 1"
            )
        if (
            hard_coded is None
            and d_head != n_heads
            and got.shape == (batch, d_head, n_tokens, n_heads)
            and np.array_equal(got, x.reshape(batch, n_tokens, d_head, n_heads).swapaxes(1, 2))
        ):
            raise kit.Mistake(
                f"{what} returned shape {got.shape} = (B, D_h, T, H): {d_head} heads of "
                f"{n_heads} features, the two sizes swapped — a reshape to (B, T, D_h, H), or "
                f"np.split into D_h = {d_head} pieces. Cut each token into n_heads = {n_heads} "
                f"groups of D_h = {d_head}: reshape to (B, T, H, D_h), then swap axes 1 and 2"
            )
        if (
            got.ndim == 4
            and (got.shape[0], got.shape[2]) == (batch, n_tokens)
            and got.shape[1] * got.shape[3] == d_model
            and got.shape[1] != n_heads
        ):
            raise kit.Mistake(
                f"{what} returned shape {got.shape}: {got.shape[1]} heads of {got.shape[3]} "
                f"features. Split into n_heads = {n_heads} heads of D_h = D / n_heads = "
                f"{d_head}: take the number of heads from the argument"
            )
        if got.shape != expected.shape:
            raise kit.Mistake(
                f"{what} returned shape {got.shape}, expected (B, H, T, D_h) = {expected.shape}"
            )
        if np.array_equal(got, expected):
            return
        if n_heads > 1 and np.array_equal(got, expected[:, ::-1]):
            raise kit.Mistake(
                f"{what} has the heads in reverse order: head 0 must hold the FIRST block of "
                f"features, 0 … {d_head - 1}, head 1 the next, and so on"
            )
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
        # A split that makes the same number of heads for every case hard-codes it (with
        # D_h = 2 its result equals the swapped sizes' (B, D_h, T, H)).
        counts = {heads_returned(shape, n_heads) for shape, n_heads in cases}
        hard_coded = counts.pop() if len(counts) == 1 else None
        for shape, n_heads in cases:
            check_one(shape, n_heads, hard_coded)
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
        if got.shape == (batch, n_tokens, d_head) and n_heads > 1:
            for combined, how in (
                (heads.sum(axis=1), "adds the heads up"),
                (heads.mean(axis=1), "averages the heads"),
                (heads[:, 0], "keeps head 0 only"),
                (heads[:, -1], "keeps the last head only"),
            ):
                if np.allclose(got, combined):
                    raise kit.Mistake(
                        f"{what} {how}, shape (B, T, D_h) = {got.shape}. The merge keeps every "
                        "head's outputs and sets them SIDE BY SIDE (concatenates them), "
                        f"(B, T, D) = {shape}: W_O does the mixing afterwards"
                    )
        if got.shape == (batch, n_heads * n_tokens, d_head) and n_heads > 1:
            raise kit.Mistake(
                f"{what} returned shape {got.shape} = (B, H·T, D_h): you joined the heads along "
                "the TOKEN axis. Each token keeps its place and gets the heads' outputs side "
                f"by side along the features, (B, T, D) = {shape}"
            )
        if got.shape != expected.shape:
            raise kit.Mistake(f"{what} returned shape {got.shape}, expected (B, T, D) = {shape}")
        if np.array_equal(got, expected):
            return
        if n_heads > 1 and np.array_equal(got, multihead.merge_heads(heads[:, ::-1])):
            raise kit.Mistake(
                f"{what} takes the heads in reverse order: each token gets head 0's outputs "
                "first (features 0 … D_h − 1), then head 1's, and so on"
            )
        if np.array_equal(got, heads.reshape(shape)):
            raise kit.Mistake(
                f"{what} reshapes the heads straight to (B, T, D) — the classic bug again. Row 0 "
                f"then holds {_ch7_where(got[0, 0, d_head], n_tokens, d_model)} at position "
                f"{d_head}, not feature {d_head} of token 0. Move the head axis back behind the "
                "tokens first (swap axes 1 and 2: (B, T, H, D_h)), then reshape"
            )
        if n_tokens != d_head and np.array_equal(got, heads.swapaxes(2, 3).reshape(shape)):
            raise kit.Mistake(
                f"{what} swaps axes 2 and 3, the tokens and the features of each head, "
                "(B, H, D_h, T), before the reshape. Swap axes 1 and 2, the heads and the "
                "tokens, (B, T, H, D_h), then reshape"
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


#: The explanation of the reshape without transpose inside a layer, for both weight checkers.
_CH7_CLASSIC_SPLIT = (
    "splits the projections by reshaping straight to (B, H, T, D_h) — the classic bug that "
    "hands each head the features of other tokens. Head h takes columns h·D_h … (h+1)·D_h − 1 "
    "of every token's projections: reshape to (B, T, H, D_h), then swap axes 1 and 2"
)

# Answers computed in float32 (torch's default dtype) are off by about 1e-6 from the float64
# reference; every mistake below changes some entry by more than 0.01.
_CH7_TOLERANCES = {"rtol": 1e-5, "atol": 1e-5}


def _ch7_projections(
    x: np.ndarray,
    params: multihead.MultiHeadParams,
    n_heads: int,
    *,
    split: Callable[[np.ndarray, int], np.ndarray] = multihead.split_heads,
    blocks: str = "columns",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every head's queries, keys and values ``(B, H, T, D_h)``, computed by hand so that
    ``split`` and ``blocks="diagonal"`` (head h's rows AND columns of each weight) can make
    the usual slips."""
    if blocks == "diagonal":
        d_head = x.shape[-1] // n_heads
        cut = [slice(h * d_head, (h + 1) * d_head) for h in range(n_heads)]

        def project(w: np.ndarray, b: np.ndarray) -> np.ndarray:
            return np.stack([x[..., c] @ w[c, c] + b[c] for c in cut], axis=1)  # (B, H, T, D_h)

        return tuple(
            project(w, b)
            for w, b in (
                (params.w_q, params.b_q),
                (params.w_k, params.b_k),
                (params.w_v, params.b_v),
            )
        )
    return tuple(
        split(x @ w + b, n_heads)  # (B, H, T, D_h)
        for w, b in ((params.w_q, params.b_q), (params.w_k, params.b_k), (params.w_v, params.b_v))
    )


def _ch7_weights(
    x: np.ndarray,
    params: multihead.MultiHeadParams,
    n_heads: int,
    *,
    scale: float | None = None,
    split: Callable[[np.ndarray, int], np.ndarray] = multihead.split_heads,
    blocks: str = "columns",
) -> np.ndarray:
    """Per-head attention weights ``(B, H, T, T)`` computed by hand, so that ``scale``,
    ``split`` and ``blocks`` can make the usual slips; the right ones come from
    :func:`selfattn_lib.multihead.multi_head_attention`."""
    d_head = x.shape[-1] // n_heads
    q, k, _ = _ch7_projections(x, params, n_heads, split=split, blocks=blocks)
    scores = q @ np.swapaxes(k, -1, -2) / (np.sqrt(d_head) if scale is None else scale)
    return softmax.softmax(scores, axis=-1)  # (B, H, T, T)


def _ch7_scale_slips(d_model: int, n_heads: int) -> list[tuple[float, str]]:
    """The usual wrong scales of each head's dot products, ``(scale, explanation)``, for both
    weight checkers: the right one is ``√D_h``."""
    d_head = d_model // n_heads
    return [
        (
            np.sqrt(d_model),
            f"divides the dot products by √D = √{d_model}. Each head's queries and keys have "
            f"dimension D_h = D / H = {d_head}, so divide by √D_h",
        ),
        (1.0, "does not scale the dot products: divide them by √D_h (chapter 5)"),
        (
            float(d_head),
            f"divides the dot products by D_h = {d_head} itself; the scale is its square root, "
            "√D_h (chapter 5)",
        ),
        (
            float(d_model),
            f"divides the dot products by D = {d_model} itself; the scale is the square root of "
            f"each head's dimension, √D_h = √{d_head} (chapter 5)",
        ),
        (
            np.sqrt(n_heads),
            f"divides the dot products by √H = √{n_heads}, the number of heads; the scale is "
            f"√D_h, the square root of each head's dimension D_h = {d_head}",
        ),
    ]


def _ch7_variant(params: multihead.MultiHeadParams, **changes: np.ndarray) -> Any:
    """``params`` with some fields replaced (a slip such as transposed weights)."""
    return dataclasses.replace(params, **changes)


def _ch7_interleaved(a: np.ndarray, n_heads: int) -> np.ndarray:
    """The interleaved split, head h taking every H-th column: ``(B, T, D) → (B, H, T, D_h)``."""
    return a.reshape(*a.shape[:2], -1, n_heads).transpose(0, 3, 1, 2)


def _ch7_straight(a: np.ndarray, n_heads: int) -> np.ndarray:
    """The reshape without transpose, ``(B, T, D) → (B, H, T, D_h)`` in memory order."""
    return a.reshape(a.shape[0], n_heads, a.shape[1], -1)


def check_head_weights(head_weights: Callable[..., Any]) -> kit.Feedback:
    """Check the learner's per-head attention weights (chapter 7, exercise 3).

    Expected signature: ``head_weights(x, params, n_heads) -> np.ndarray`` with a
    :class:`~selfattn_lib.multihead.MultiHeadParams` ``params`` (biases included): every
    head's self-attention weights, ``softmax(Q_h K_hᵀ / √D_h)`` with ``Q_h = x W_Q[:, h-th
    block] + b_Q[h-th block]`` and likewise ``K_h``. Answers in float32 pass.

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
        d_head = d_model // n_heads
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
        if kit.equal(got, expected, **_CH7_TOLERANCES):
            return
        q, k, _ = _ch7_projections(x, params, n_heads)
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_head)  # (B, H, T, T)
        if kit.equal(got, scores, **_CH7_TOLERANCES):
            raise kit.Mistake(
                f"{what} returns the scores Q_h K_hᵀ / √D_h themselves: the weights are their "
                "softmax over the keys (the last axis), so that every row sums to 1"
            )
        if n_tokens > 1 and kit.equal(got, np.swapaxes(expected, -1, -2), **_CH7_TOLERANCES):
            raise kit.Mistake(
                f"{what} lays each head's map out as (T_k, T_q), the transpose of (T_q, T_k): "
                "rows are queries. Compute Q_h K_hᵀ (queries times keys) and take the softmax "
                "over its last axis, the keys"
            )
        if n_tokens > 1 and kit.equal(
            np.swapaxes(got, -1, -2), softmax.softmax(scores, axis=-2), **_CH7_TOLERANCES
        ):
            raise kit.Mistake(
                f"{what} computes K_h Q_hᵀ, a (T_k, T_q) map, and takes its softmax over its "
                "last axis, the queries. Rows are queries: compute Q_h K_hᵀ and take the "
                "softmax over its last axis, the keys"
            )
        ones = np.ones(expected.shape[:-1])  # (B, H, T)
        if kit.equal(got.sum(axis=-2), ones, **_CH7_TOLERANCES) and not kit.equal(
            got.sum(axis=-1), ones, **_CH7_TOLERANCES
        ):
            raise kit.Mistake(
                f"the columns of {what} sum to 1, not the rows: take the softmax over the "
                "keys, the last axis"
            )
        zero = np.zeros(d_model)
        exponentials = np.exp(scores - scores.max(axis=(-2, -1), keepdims=True))
        mistakes = [
            *(
                (_ch7_weights(x, params, n_heads, scale=scale), explanation)
                for scale, explanation in _ch7_scale_slips(d_model, n_heads)
            ),
            (
                _ch7_weights(x, params, n_heads, split=_ch7_straight),
                _CH7_CLASSIC_SPLIT,
            ),
            (
                _ch7_weights(x, params, n_heads, split=_ch7_interleaved),
                "gives head h every H-th column (interleaved). Head h takes the consecutive "
                "columns h·D_h … (h+1)·D_h − 1",
            ),
            (
                _ch7_weights(x, params, n_heads, blocks="diagonal"),
                "uses only the diagonal block W[block, block] of each weight (and x[..., "
                "block]). Head h's queries are x @ W_Q[:, block] + b_q[block]: its own "
                "COLUMNS, fed by all D input features",
            ),
            (
                _ch7_weights(x, _ch7_variant(params, w_q=params.w_q.T, w_k=params.w_k.T), n_heads),
                "uses W_Q and W_K transposed (PyTorch's nn.Linear convention, x @ W.T). Here "
                "the weights are used as x @ params.w_q, so head h takes columns of w_q",
            ),
            (
                _ch7_weights(x, _ch7_variant(params, w_k=params.w_q, b_k=params.b_q), n_heads),
                "compares the queries with themselves (Q_h Q_hᵀ): the keys come from W_K and b_k",
            ),
            (
                _ch7_weights(x, _ch7_variant(params, b_q=zero, b_k=zero), n_heads),
                "leaves out the query bias b_q (the key bias b_k would not matter — it shifts "
                "each row of scores by a constant, chapter 4 — but b_q does)",
            ),
            (
                np.broadcast_to(_ch7_weights(x, params, 1), expected.shape),
                "gives every head the same map: one head over all D columns of W_Q and W_K, "
                "repeated. Head h uses only its own columns h·D_h … (h+1)·D_h − 1 and divides "
                "by √D_h",
            ),
            (
                np.broadcast_to(expected.mean(axis=1, keepdims=True), expected.shape),
                "gives every head the same map, the AVERAGE over heads. Each head keeps its "
                "own weights",
            ),
            (
                exponentials / exponentials.sum(axis=(-2, -1), keepdims=True),
                "takes one softmax over each head's whole T × T map, so that all its entries "
                "sum to 1. Each query gets its own softmax over the keys, the last axis, and "
                "every ROW sums to 1",
            ),
            (
                _ch7_weights(x, _ch7_variant(params, w_k=params.w_v, b_k=params.b_v), n_heads),
                "computes the keys with W_V and b_v, the value projection; the keys come from "
                "W_K and b_k",
            ),
        ]
        if not kit.match_known_mistakes(
            got, expected, mistakes, what, joiner=" ", **_CH7_TOLERANCES
        ):
            kit.assert_close(got, expected, what, **_CH7_TOLERANCES)

    def checks() -> str:
        for seed, n_heads in ((70, 2), (71, 3), (72, 1)):
            check_one(seed, n_heads)
        kit.require_own_code(
            head_weights,
            (*_ch7_case(70), 2),
            # Only what the prompt rules out: reading params.d_model is fine.
            tuple(
                f"selfattn_lib.multihead.{function}"
                for function in ("split_heads", "merge_heads", "multi_head_attention")
            ),
            name,
            (
                "the exercise is to cut each head's columns out of the weights yourself, "
                "without the library's split_heads or multi_head_attention"
            ),
        )
        return (
            "Your per-head weights are right: each head slices its own columns of W_Q and W_K "
            "(and of the biases), divides its dot products by √D_h and takes its own softmax."
        )

    return kit.run_checks(checks)


def _ch7_contributions(
    x: np.ndarray,
    params: multihead.MultiHeadParams,
    n_heads: int,
    *,
    scale: float | None = None,
    split: Callable[[np.ndarray, int], np.ndarray] = multihead.split_heads,
    rows: str = "blocks",
) -> np.ndarray:
    """``(B, H, T, D)``: head h's output times its block of rows of ``W_O`` (no ``b_o``).
    ``scale``, ``split`` and ``rows`` (``"interleaved"``: rows h, h + H, …; ``"first"``:
    the first block for every head; ``"diagonal"``: only head h's own columns of its block)
    make the usual slips."""
    d_head = x.shape[-1] // n_heads
    q, k, v = _ch7_projections(x, params, n_heads, split=split)  # (B, H, T, D_h) each
    scores = q @ np.swapaxes(k, -1, -2) / (np.sqrt(d_head) if scale is None else scale)
    heads = softmax.softmax(scores, axis=-1) @ v  # (B, H, T, D_h)
    if rows == "interleaved":
        w_o_blocks = np.stack([params.w_o[h::n_heads] for h in range(n_heads)])  # (H, D_h, D)
    elif rows == "first":
        w_o_blocks = np.broadcast_to(params.w_o[:d_head], (n_heads, d_head, x.shape[-1]))
    elif rows == "diagonal":
        w_o_blocks = params.w_o.reshape(n_heads, d_head, -1).copy()  # (H, D_h, D)
        for h in range(n_heads):
            w_o_blocks[h, :, : h * d_head] = 0.0
            w_o_blocks[h, :, (h + 1) * d_head :] = 0.0
    else:
        w_o_blocks = params.w_o.reshape(n_heads, d_head, -1)  # (H, D_h, D): block rows
    return heads @ w_o_blocks[None]  # (B, H, T, D)


def check_head_contributions(head_contributions: Callable[..., Any]) -> kit.Feedback:
    """Check the learner's split of the output into the heads' shares (chapter 7, exercise 4).

    Expected signature: ``head_contributions(x, params, n_heads) -> np.ndarray`` with a
    :class:`~selfattn_lib.multihead.MultiHeadParams` ``params``: entry ``[:, h]`` is
    ``head_h W_O^(h)``, head ``h``'s output times rows ``h·D_h … (h+1)·D_h − 1`` of ``W_O``.
    Without the bias ``b_o``, so that the sum over heads plus ``b_o`` is the layer's output.
    Answers in float32 pass.

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
        d_head = d_model // n_heads
        expected = _ch7_contributions(x, params, n_heads)  # (B, H, T, D)
        output = expected.sum(axis=1) + params.b_o  # (B, T, D)
        what = f"{name}(x of shape {x.shape}, params, n_heads={n_heads})"
        got = kit.as_array(kit.call_quietly(head_contributions, x.copy(), params, n_heads), what)
        if got.shape == (n_heads, batch, n_tokens, d_model) and n_heads != batch:
            raise kit.Mistake(
                f"{what} returned shape {got.shape} = (H, B, T, D): put the heads on axis 1, "
                "(B, H, T, D)"
            )
        if got.shape == (batch, n_heads, n_tokens, d_head) and n_heads > 1:
            raise kit.Mistake(
                f"{what} returned shape {got.shape} = (B, H, T, D_h): those are the heads' "
                "outputs. Multiply each by its block of rows of W_O, shape (D_h, D), to get its "
                "share of the output, (B, H, T, D)"
            )
        got = kit.as_result_array(got, expected, what)
        if kit.equal(got, expected, **_CH7_TOLERANCES):
            return
        no_value_bias = _ch7_variant(params, b_v=np.zeros(d_model))
        with_bias_on = {h: expected.copy() for h in dict.fromkeys((0, n_heads - 1))}
        for h, shares in with_bias_on.items():
            shares[:, h] += params.b_o
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
            *(
                (
                    shares,
                    f"adds b_o to head {h} only. The bias belongs to no head: leave it out (the "
                    "shares then sum to the output minus b_o)",
                )
                for h, shares in with_bias_on.items()
            ),
            (
                np.broadcast_to((output - params.b_o)[:, None] / n_heads, expected.shape),
                "splits the output evenly, (output - b_o) / H for every head. Each head "
                "contributes its own output times its own rows of W_O, which are not equal",
            ),
            (
                _ch7_contributions(x, params, n_heads, rows="interleaved"),
                "multiplies head h by the rows h, h + H, h + 2H, … of W_O (every H-th row). "
                "Head h's outputs sit in features h·D_h … (h+1)·D_h − 1 of the merged vector, "
                "so its block is the CONSECUTIVE rows h·D_h … (h+1)·D_h − 1",
            ),
            (
                _ch7_contributions(x, params, n_heads, rows="first"),
                f"multiplies every head by the first block of rows of W_O (rows 0 … "
                f"{d_head - 1}). Head h takes its own block, rows h·D_h … (h+1)·D_h − 1",
            ),
            (
                _ch7_contributions(x, params, n_heads, rows="diagonal"),
                "multiplies head h by the diagonal block of W_O only (its own rows AND "
                "columns), so each head writes only to its own D_h output features. Head h's "
                "rows h·D_h … (h+1)·D_h − 1 reach all D output features: that is W_O's mixing",
            ),
            (
                _ch7_contributions(x, _ch7_variant(params, w_o=params.w_o.T), n_heads),
                "uses W_O transposed (PyTorch's nn.Linear convention, x @ W.T). Here the "
                "output is merged @ params.w_o, so head h's block is ROWS h·D_h … "
                "(h+1)·D_h − 1 of w_o",
            ),
            (
                _ch7_contributions(x, no_value_bias, n_heads),
                "leaves out the value bias b_v: the heads average the values x W_V + b_v "
                "(b_v reaches the output, because every row of weights sums to 1)",
            ),
            *(
                (_ch7_contributions(x, params, n_heads, scale=scale), explanation)
                for scale, explanation in _ch7_scale_slips(d_model, n_heads)
            ),
            (
                _ch7_contributions(x, params, n_heads, split=_ch7_straight),
                _CH7_CLASSIC_SPLIT,
            ),
        ]
        if kit.match_known_mistakes(got, expected, mistakes, what, joiner=" ", **_CH7_TOLERANCES):
            return
        if kit.equal(got.sum(axis=1), output, **_CH7_TOLERANCES):
            raise kit.Mistake(
                f"the shares of {what} sum to the whole output, b_o included: b_o went into "
                "the shares. The bias belongs to no head: leave it out, so that the shares plus "
                "b_o make the output"
            )
        if kit.equal(got.sum(axis=1), output - params.b_o, **_CH7_TOLERANCES):
            raise kit.Mistake(
                f"the shares of {what} sum to the output (minus b_o), but are not the heads' "
                "own: head h's share is head_h (B, T, D_h) times rows h·D_h … (h+1)·D_h − 1 "
                "of W_O"
            )
        kit.assert_close(got, expected, what, **_CH7_TOLERANCES)

    def checks() -> str:
        for seed, n_heads in ((73, 2), (74, 3), (75, 1)):
            check_one(seed, n_heads)
        return (
            "Your shares are right: head h contributes head_h W_O^(h), and the shares plus "
            "b_o add up to the layer's output — concatenating and multiplying by W_O is a "
            "sum over heads."
        )

    return kit.run_checks(checks)
