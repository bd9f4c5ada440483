"""Checkers for the exercises of chapter 13, attention in modern LLMs: rotary positions with
a KV cache, grouped-query attention, a sliding window with attention sinks, and
FlashAttention's tiled forward pass."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np

from selfattn_lib import attention, masks, positional, softmax
from selfattn_lib.exercises import _kit as kit

_NUMPY_ONLY = "the exercise asks for NumPy only, without selfattn_lib or torch"


def _ch13_call_on_copies(function: Callable[..., Any], *args: Any) -> Any:
    """Call ``function`` quietly with copies of the array arguments and complain if it changed
    any of them."""
    given = [arg.copy() if isinstance(arg, np.ndarray) else arg for arg in args]
    result = kit.call_quietly(function, *given)
    for original, copy in zip(args, given, strict=True):
        if isinstance(original, np.ndarray) and not np.array_equal(original, copy):
            raise kit.Mistake(
                "your function changed an array it was given (for example with `q /= …` or "
                "`x[..., :half] = …`): compute into new arrays, so that the caller's queries, "
                "keys and values stay as they were"
            )
    return result


# --- RoPE with a cache offset --------------------------------------------------------------

#: (T new tokens, D_h, start = tokens already in the cache)
_CH13_ROPE_CASES = (
    (4, 8, 5),
    (1, 16, 37),  # one decoding step: a single new token
    (3, 4, 0),  # an empty cache
    (5, 6, 250),  # three pairs, far into the text
)


def _ch13_rotate_halves(x: np.ndarray, angles: np.ndarray, *, swap: bool = False) -> np.ndarray:
    """``x · cos θ + rotate_half(x) · sin θ`` (``swap``: cos and sin exchanged) with one angle
    per feature, ``angles``: ``(T, D_h)``; ``rotate_half(x) = [-x₂, x₁]``."""
    half = x.shape[-1] // 2
    turned = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)  # (T, D_h)
    cos, sin = np.cos(angles), np.sin(angles)  # (T, D_h) each
    return x * sin + turned * cos if swap else x * cos + turned * sin


def _ch13_rope_mistakes(x: np.ndarray, start: int) -> list[tuple[np.ndarray, str]]:
    n_tokens, d_head = x.shape
    positions = start + np.arange(n_tokens)  # (T,)
    angles = positional.rope_angles(positions, d_head)  # (T, D_h / 2)
    cached = f"holds positions 0 … {start - 1} ({start} tokens)" if start else "is empty"

    def omega(first: int, divisor: int) -> np.ndarray:
        """(D_h / 2,) frequencies 10000^(-2i/divisor) for i = first, first + 1, …"""
        return 10000.0 ** (-2 * np.arange(first, first + d_head // 2) / divisor)

    def half(at: np.ndarray, base: float = 10000.0) -> np.ndarray:
        return positional.apply_rope(x, at, layout="half", base=base)  # (T, D_h)

    return [
        (
            x,
            "it returned x unchanged: turn each pair of features (i, i + D_h/2) of row t by "
            "the angle (start + t) · ω_i",
        ),
        (
            positional.apply_rope(x, positions, layout="interleaved"),
            "this is the INTERLEAVED layout: it turns the neighbours (x_0, x_1), (x_2, x_3), "
            "…. The exercise uses the half layout of Hugging Face's Llama `rotate_half`: "
            "feature i turns together with feature i + D_h/2",
        ),
        (
            half(np.arange(n_tokens)),
            f"row t was turned by position t, as if the cache were empty. The first {start} "
            "tokens are already in the cache, so row t is the token at position start + t",
        ),
        (
            half(np.full(n_tokens, start)),
            "every row was turned by the same angle, that of position start: row t is "
            "another token, one position further on for each row",
        ),
        (
            half(positions + 1),
            f"every position is one too large (start + 1 + t). The cache {cached}, so the "
            "first new token is at position start itself",
        ),
        (
            half(positions - 1),
            f"every position is one too small (start − 1 + t). The cache {cached}, so the "
            "first new token takes the next position, start",
        ),
        (
            half(positions, base=100.0),  # 100^(-2i/D_h) = 10000^(-i/D_h)
            "the frequencies are 10000^(-i/D_h); the exponent is 2i/D_h, ω_i = "
            "10000^(-2i/D_h) for the D_h/2 pairs (the frequencies of the sinusoidal encoding)",
        ),
        (
            half(-positions),
            "the rotation goes the wrong way (by −θ): rotate_half(x) is [−x₂, x₁], minus the "
            "SECOND half first, so the first half becomes x₁ cos θ − x₂ sin θ and the second "
            "x₂ cos θ + x₁ sin θ",
        ),
        (
            _ch13_rotate_halves(x, np.concatenate([angles, angles], axis=-1), swap=True),
            "cos and sin are swapped: x is multiplied by cos θ and rotate_half(x) by sin θ "
            "(at θ = 0 a rotation must give x back unchanged)",
        ),
        (
            _ch13_rotate_halves(x, np.repeat(angles, 2, axis=-1)),
            "the pairs are right, but the angles are laid out for the interleaved layout "
            "(np.repeat gives θ_0, θ_0, θ_1, θ_1, …). Feature i and feature i + D_h/2 share "
            "θ_i: the D_h angles are the D_h/2 angles, then the same D_h/2 angles again",
        ),
        (
            _ch13_rotate_halves(x, np.tile(positions[:, None] * omega(1, d_head), 2)),
            "the frequencies start one pair late, at ω_1: the pairs are numbered i = 0 … "
            "D_h/2 − 1, so the first pair turns by the position itself (ω_0 = 1)",
        ),
        (
            _ch13_rotate_halves(x, np.tile(positions[:, None] * omega(0, d_head // 2), 2)),
            "the exponent is 2i/(D_h/2): the frequencies fall twice as fast as they should. "
            "The exponent divides by the whole D_h, ω_i = 10000^(-2i/D_h)",
        ),
        (
            np.roll(half(positions), d_head // 2, axis=-1),
            "the two halves of the result are swapped: the first half is x₁ cos θ − x₂ sin θ "
            "and the second x₂ cos θ + x₁ sin θ, in the order of the features of x",
        ),
    ]


def check_rotate(rotate: Callable[..., Any]) -> kit.Feedback:
    """Check rotary positions for the new tokens of a KV cache (chapter 13, exercise 2).

    Expected signature: ``rotate(x: np.ndarray, start: int) -> np.ndarray``. Row ``t`` of
    ``x`` is the query or key of the token at position ``start + t`` (the first ``start``
    tokens are already in the cache). Rotate it with RoPE in the "half" layout: feature
    ``i`` and feature ``i + D_h/2`` turn together by the angle ``(start + t) · ω_i``,
    ``ω_i = 10000^(-2i/D_h)``, that is ``x · cos + rotate_half(x) · sin`` with
    ``rotate_half(x) = [−x₂, x₁]`` (``x₁``, ``x₂`` the two halves of the features). Written
    with NumPy only, without ``selfattn_lib`` and PyTorch; float32 results are accepted (to
    1e-4), and so are lists.

    Shapes
    ------
    ``x``: ``(T, D_h)`` with ``D_h`` even, ``start``: a whole number ≥ 0 → ``(T, D_h)``.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_rotate(lambda x, start: None)
    ✘ Not yet. rotate(x with shape (4, 8), start=5) returned None: did you forget the `return`
    statement?
    """
    name = kit.name_of(rotate, "rotate")
    rng = np.random.default_rng(13)

    def checks() -> str:
        for n_tokens, d_head, start in _CH13_ROPE_CASES:
            x = rng.normal(size=(n_tokens, d_head))  # (T, D_h)
            what = f"{name}(x with shape {x.shape}, start={start})"
            positions = start + np.arange(n_tokens)  # (T,)
            expected = positional.apply_rope(x, positions, layout="half")  # (T, D_h)
            result = _ch13_call_on_copies(rotate, x, start)
            got = kit.as_result_array(result, expected, what)
            # atol lets float32 answers pass: at position 254 their angles are off by ~2e-5.
            mistakes = _ch13_rope_mistakes(x, start)
            if kit.match_known_mistakes(got, expected, mistakes, what, atol=1e-4):
                continue
            kit.assert_close(got, expected, what, atol=1e-4)
        kit.require_own_code(
            rotate,
            (rng.normal(size=(4, 8)), 5),
            (*kit.COURSE_LIBRARY, *kit.TORCH),
            name,
            _NUMPY_ONLY,
        )
        return (
            "Your rotation is right: row t turns by (start + t) · ω_i. A key rotated when it "
            "enters the cache keeps its angle: the score of a query at m with a key at n "
            "depends on the positions only through n − m, so the cached keys need no rotating "
            "again."
        )

    return kit.run_checks(checks)


# --- grouped-query attention ---------------------------------------------------------------

#: (H query heads, H_kv key/value heads, T, D_h)
_CH13_GQA_CASES = (
    (4, 2, 5, 3),
    (6, 3, 4, 2),
    (6, 2, 4, 2),  # groups of three query heads
    (4, 1, 3, 4),  # multi-query attention: one key/value head
    (3, 3, 4, 2),  # multi-head attention: a key/value head per query head
)


def _ch13_gqa(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    *,
    heads: str = "repeat",
    mask: str = "causal",
    scale: float | None = None,
) -> np.ndarray:
    """Causal grouped-query attention, or one of its slips: ``heads="tile"`` gives query head
    ``h`` the KV head ``h % H_kv``; ``mask`` is ``"causal"``, ``"none"``, ``"upper"`` or
    ``"strict"`` (keys ``j < i``)."""
    n_rep = q.shape[0] // k.shape[0]
    if heads == "repeat":
        k, v = np.repeat(k, n_rep, axis=0), np.repeat(v, n_rep, axis=0)  # (H, T, D_h) each
    else:
        k, v = np.tile(k, (n_rep, 1, 1)), np.tile(v, (n_rep, 1, 1))  # (H, T, D_h) each
    causal = masks.causal_mask(q.shape[1])  # (T, T): keys j ≤ i
    strict = causal & ~np.eye(len(causal), dtype=bool)  # (T, T): keys j < i
    allowed = {"causal": causal, "none": None, "upper": causal.T, "strict": strict}[mask]
    return attention.scaled_dot_product_attention(q, k, v, mask=allowed, scale=scale)[0]


def _ch13_gqa_over_queries(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Causal grouped-query attention with the softmax taken over the queries (axis -2)."""
    n_rep = q.shape[0] // k.shape[0]
    k, v = np.repeat(k, n_rep, axis=0), np.repeat(v, n_rep, axis=0)  # (H, T, D_h) each
    scores = attention.attention_scores(q, k)  # (H, T, T)
    scores = np.where(masks.causal_mask(q.shape[1]), scores, -np.inf)  # (H, T, T)
    return softmax.softmax(scores, axis=-2) @ v  # (H, T, D_h)


def _ch13_gqa_mistakes(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> list[tuple[Any, str]]:
    n_heads, n_kv_heads = q.shape[0], k.shape[0]
    n_rep = n_heads // n_kv_heads
    tiled = [h % n_kv_heads for h in range(n_heads)]
    grouped = [h // n_rep for h in range(n_heads)]
    by_count = [h // n_kv_heads for h in range(n_heads)]  # divided by H_kv, not by n_rep
    return [
        (
            _ch13_gqa(q, k[by_count], v[by_count]) if max(by_count) < n_kv_heads else q * np.nan,
            f"query head h used key/value head h // H_kv: with H = {n_heads} and H_kv = "
            f"{n_kv_heads}, query heads 0 … {n_heads - 1} read KV heads {by_count}. Divide by "
            f"the size of a group, H / H_kv = {n_rep} query heads, not by the number of KV "
            f"heads: h // (H / H_kv) gives KV heads {grouped}",
        ),
        (
            _ch13_gqa(q, k, v, heads="tile"),
            f"query head h used key/value head h % H_kv: with H = {n_heads} and H_kv = "
            f"{n_kv_heads}, query heads 0 … {n_heads - 1} read KV heads {tiled}. The stack of "
            "KV heads was repeated as a whole (np.tile, torch's .repeat, or q split as "
            f"(n_rep, H_kv, …)). A group is {n_rep} CONSECUTIVE query heads sharing one KV head, "
            f"h // n_rep: KV heads {grouped}",
        ),
        (_ch13_gqa(q, k, v, scale=1.0), "the scores are not divided by √D_h"),
        (
            _ch13_gqa(q, k, v, scale=1 / np.sqrt(n_heads * q.shape[-1])),
            f"the scores are divided by √(H · D_h) = √{n_heads * q.shape[-1]}, the size of all "
            f"heads together: each head scales by the dimension of its own queries and keys, "
            f"√D_h = √{q.shape[-1]}",
        ),
        (
            _ch13_gqa(q, k[:1], v[:1]) if n_kv_heads > 1 else q * np.nan,
            "every query head read key/value head 0: query head h reads the KV head of its "
            f"group, h // (H / H_kv), so the {n_kv_heads} KV heads are all used",
        ),
        (
            _ch13_gqa(q, k, v, mask="none"),
            "this is attention WITHOUT the causal mask: query i may attend only keys j ≤ i "
            "(hide the others before the softmax)",
        ),
        (
            _ch13_gqa(q, k, v, mask="upper"),
            "the mask is the wrong way round: query i attended keys j ≥ i, the future (the "
            "upper triangle). It may attend keys j ≤ i, the lower triangle and the diagonal",
        ),
        (
            _ch13_gqa_over_queries(q, k, v),
            "the softmax normalised each COLUMN, over the queries (axis -2): each query's "
            "weights over the keys must sum to one, so normalise along the last axis",
        ),
    ]


def _ch13_gqa_shape_hint(shape: tuple[int, ...], q: np.ndarray, k: np.ndarray, what: str) -> None:
    """Explain the shapes that the usual slips of grouping give."""
    n_heads, n_tokens, d_head = q.shape
    n_kv_heads = k.shape[0]
    n_rep = n_heads // n_kv_heads
    if n_rep > 1 and shape in (
        (n_kv_heads, n_rep, n_tokens, d_head),
        (n_rep, n_kv_heads, n_tokens, d_head),
    ):
        raise kit.Mistake(
            f"{what} returned shape {shape}: merge the two group axes back into one axis of "
            f"H = {n_heads} query heads, shape {q.shape}, with query head h at index h"
        )
    if n_rep > 1 and shape == k.shape:
        raise kit.Mistake(
            f"{what} returned shape {shape}, one output per KEY/VALUE head: each of the H = "
            f"{n_heads} query heads has its own output, shape {q.shape}"
        )


def check_grouped_query_attention(grouped_query_attention: Callable[..., Any]) -> kit.Feedback:
    """Check causal grouped-query attention over the heads of one sequence (ch. 13, ex. 3).

    Expected signature: ``grouped_query_attention(q, k, v) -> np.ndarray``: causal scaled
    dot-product self-attention in which the ``H`` query heads share ``H_kv`` key/value heads
    (``H`` a multiple of ``H_kv``): query head ``h`` uses key/value head ``h // (H / H_kv)``,
    so consecutive query heads form a group. ``H_kv = 1`` is multi-query attention,
    ``H_kv = H`` multi-head attention. Written with NumPy only, without ``selfattn_lib`` and
    PyTorch; repeating the key/value heads and splitting the query heads into groups are both
    accepted, and so are float32 results and lists.

    Shapes
    ------
    ``q``: ``(H, T, D_h)``, ``k``, ``v``: ``(H_kv, T, D_h)`` → ``(H, T, D_h)``.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_grouped_query_attention(lambda q, k, v: None)
    ✘ Not yet. grouped_query_attention(q of shape (4, 5, 3), k and v of shape (2, 5, 3))
    returned None: did you forget the `return` statement?
    """
    name = kit.name_of(grouped_query_attention, "grouped_query_attention")
    rng = np.random.default_rng(130)

    def check_one(n_heads: int, n_kv_heads: int, n_tokens: int, d_head: int) -> None:
        q = rng.normal(size=(n_heads, n_tokens, d_head))  # (H, T, D_h)
        k, v = rng.normal(size=(2, n_kv_heads, n_tokens, d_head))  # (H_kv, T, D_h) each
        what = f"{name}(q of shape {q.shape}, k and v of shape {k.shape})"
        expected = _ch13_gqa(q, k, v)  # (H, T, D_h)
        result = _ch13_call_on_copies(grouped_query_attention, q, k, v)
        kit.require_result(result, what)
        if (
            isinstance(result, tuple | list)
            and len(result) == 2
            and np.shape(kit.plain(result[0])) == expected.shape
        ):
            raise kit.Mistake(
                f"{what} returned a pair: return only the output, one array of shape "
                f"(H, T, D_h) = {expected.shape}"
            )
        values = kit.values_like(result, expected)
        strict = _ch13_gqa(q, k, v, mask="strict")  # (H, T, T): row 0 has no key, output 0
        if values is not None and kit.equal(values[:, 1:], strict[:, 1:], atol=1e-6):
            raise kit.Mistake(
                f"{what} hides the diagonal too: query i may attend keys j ≤ i, itself included "
                "(query 0 would see no key at all)"
            )
        if values is None:
            try:
                shape = np.shape(kit.plain(result))
            except (TypeError, ValueError):
                shape = ()
            _ch13_gqa_shape_hint(shape, q, k, what)
        got = kit.as_result_array(result, expected, what)
        if kit.match_known_mistakes(got, expected, _ch13_gqa_mistakes(q, k, v), what, atol=1e-6):
            return
        kit.assert_close(got, expected, what, atol=1e-6)

    def checks() -> str:
        for case in _CH13_GQA_CASES:
            check_one(*case)
        q = rng.normal(size=(4, 3, 2))
        k, v = rng.normal(size=(2, 2, 3, 2))
        kit.require_own_code(
            grouped_query_attention,
            (q, k, v),
            (*kit.COURSE_LIBRARY, *kit.TORCH),
            name,
            _NUMPY_ONLY,
        )
        return (
            "Your grouped-query attention is right: query head h reads key/value head "
            "h // (H / H_kv). A KV cache then holds H_kv heads instead of H, H / H_kv times "
            "fewer bytes, for the same number of query heads."
        )

    return kit.run_checks(checks)


# --- a sliding window with sinks -----------------------------------------------------------

#: (n_tokens, window, n_sinks)
_CH13_WINDOW_CASES = ((8, 3, 2), (6, 2, 0), (7, 1, 1), (5, 10, 1), (9, 3, 4))


def _ch13_window_mistakes(n_tokens: int, window: int, n_sinks: int) -> list[tuple[Any, str]]:
    query = np.arange(n_tokens)[:, None]  # (T, 1)
    key = np.arange(n_tokens)[None, :]  # (1, T)
    past = key <= query  # (T, T)
    recent, sink = query - key < window, key < n_sinks  # (T, T) each
    right = past & (recent | sink)  # (T, T)
    no_future = (
        "queries see keys AFTER them (True above the diagonal): a decoder's query i sees only "
        "keys j ≤ i, whatever the window"
    )
    return [
        (
            past & ((query - key <= window) | sink),
            f"each query sees up to {window + 1} recent keys, one too many: the window counts "
            f"the query itself, so a window of {window} is the query and the "
            f"{window - 1} keys before it",
        ),
        (
            past & ((query - key < window - 1) | sink),
            f"each query sees up to {window - 1} recent keys, one too few: the window counts "
            f"the query itself, so a window of {window} is the query and the "
            f"{window - 1} keys before it",
        ),
        (recent | sink, no_future),
        ((np.abs(query - key) < window) | sink, no_future),
        (
            past & recent,
            f"the sinks are left out: the first {n_sinks} tokens must stay visible to every "
            "later query, also once the window has moved past them",
        ),
        (
            (past & recent) | sink,
            "the sink columns are True in every row, so a query sees sinks that come after "
            "it (query 0 sees key 1). A sink is visible from its own position on: j ≤ i holds "
            "for the sinks too",
        ),
        (
            past & (recent | (key <= n_sinks)),
            f"one sink too many: the sinks are the first n_sinks tokens, positions 0 … "
            f"{n_sinks - 1}"
            if n_sinks
            else "key 0 stays visible as a sink, but n_sinks = 0: there is no sink at all",
        ),
        (
            past & ((query - key < window - n_sinks) | sink),
            f"the sinks were taken out of the window: each query sees the {n_sinks} sinks and "
            f"only {max(window - n_sinks, 0)} recent key(s). The window is the query and the "
            f"{window - 1} keys before it whatever the sinks; the sinks come on top",
        ),
        (
            ~right,
            "True and False are swapped: True means 'may attend', as in PyTorch's "
            "scaled_dot_product_attention (a query always sees itself: the diagonal is True)",
        ),
    ]


def _ch13_seen(mask: np.ndarray, row: int) -> list[int]:
    return np.flatnonzero(mask[row]).tolist()


def check_window_mask(window_mask: Callable[..., Any]) -> kit.Feedback:
    """Check the mask of a sliding window with attention sinks (chapter 13, exercise 1).

    Expected signature: ``window_mask(n_tokens: int, window: int, n_sinks: int) ->
    np.ndarray``, boolean, True = may attend: query ``i`` may attend key ``j`` if and only if
    ``j ≤ i`` and (``i − j < window`` or ``j < n_sinks``). The window counts the query
    itself, and the first ``n_sinks`` tokens (the attention sinks) stay visible to every
    later query. Written without ``selfattn_lib.sliding_window``; NumPy or PyTorch boolean
    results are accepted.

    Shapes
    ------
    ``n_tokens`` (``T``), ``window`` ≥ 1, ``n_sinks`` ≥ 0 → boolean ``(T, T)``.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_window_mask(lambda n_tokens, window, n_sinks: None)
    ✘ Not yet. window_mask(n_tokens=8, window=3, n_sinks=2) returned None: did you forget the
    `return` statement?
    """
    name = kit.name_of(window_mask, "window_mask")

    def check_one(n_tokens: int, window: int, n_sinks: int) -> None:
        from selfattn_lib import sliding_window  # PyTorch: imported only when checking

        what = f"{name}(n_tokens={n_tokens}, window={window}, n_sinks={n_sinks})"
        expected = sliding_window.sliding_window_mask(n_tokens, window, n_sinks=n_sinks).numpy()
        result = kit.call_quietly(window_mask, n_tokens, window, n_sinks)
        got = kit.as_bool_array(result, expected, what)
        if kit.match_known_mistakes(
            got, expected, _ch13_window_mistakes(n_tokens, window, n_sinks), what
        ):
            return
        row = int(np.flatnonzero((got != expected).any(axis=-1))[0])
        raise kit.Mistake(
            f"{what}: query {row} sees the keys {_ch13_seen(got, row)}, but it may attend "
            f"{len(_ch13_seen(expected, row))} keys: the ones at most {window - 1} positions "
            f"before it, itself included, and the sinks before it"
        )

    def checks() -> str:
        for case in _CH13_WINDOW_CASES:
            check_one(*case)
        kit.require_own_code(
            window_mask,
            _CH13_WINDOW_CASES[0],
            ("selfattn_lib.sliding_window",),
            name,
            kit.WRITE_IT_YOURSELF,
        )
        return (
            "Your mask is right: each query sees at most window + n_sinks keys however long "
            "the text grows, so a cache needs to keep only the sinks and the last window − 1 "
            "keys."
        )

    return kit.run_checks(checks)


# --- FlashAttention's tiled forward pass ---------------------------------------------------

#: (T_q, T_k, D, D_v, block_size, spread of q and k): T_q or T_k not a multiple of the block,
#: blocks of one, one block larger than the sequence, and scores in the 1000s.
_CH13_TILED_CASES = (
    (7, 9, 4, 3, 3, 2.0),
    (8, 8, 4, 2, 4, 2.0),
    (5, 6, 2, 3, 1, 2.0),
    (4, 5, 3, 2, 8, 2.0),
    (6, 7, 4, 3, 3, 40.0),
)
#: The size at which the checker measures the memory held at once: (T_q, T_k, D, block_size).
_CH13_MEMORY_CASE = (256, 8192, 2, 32)


def _ch13_tiled_slip(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, block_size: int, slip: str
) -> tuple[np.ndarray, np.ndarray]:
    """The tiled forward pass with one slip: ``"stale acc"``, ``"stale sum"`` or ``"stale
    both"`` (not rescaled when the running maximum grows), or ``"own max"`` (each block's
    exponentials from its own maximum, added as they are). Returns ``(output, logsumexp)``."""
    scale = 1 / np.sqrt(q.shape[-1])
    output = np.zeros((len(q), v.shape[-1]))  # (T_q, D_v)
    log_total = np.zeros(len(q))  # (T_q,)
    for q_start in range(0, len(q), block_size):
        rows = slice(q_start, q_start + block_size)
        m = np.full(len(q[rows]), -np.inf)  # (b_q,)
        total, acc = np.zeros(len(q[rows])), np.zeros((len(q[rows]), v.shape[-1]))
        for k_start in range(0, len(k), block_size):
            cols = slice(k_start, k_start + block_size)
            scores = q[rows] @ k[cols].T * scale  # (b_q, b_k)
            m_new = np.maximum(m, scores.max(axis=-1))  # (b_q,)
            if slip == "own max":
                m_new = scores.max(axis=-1)
            weights = np.exp(scores - m_new[:, None])  # (b_q, b_k)
            factor = np.exp(m - m_new)[:, None]  # (b_q, 1)
            keep_sum = slip in ("stale sum", "stale both", "own max")
            keep_acc = slip in ("stale acc", "stale both", "own max")
            total = (total if keep_sum else total * factor[:, 0]) + weights.sum(axis=-1)
            acc = (acc if keep_acc else acc * factor) + weights @ v[cols]  # (b_q, D_v)
            m = m_new
        output[rows] = acc / total[:, None]
        log_total[rows] = m + np.log(total)
    return output, log_total


_CH13_RESCALE = (
    "when the running maximum grows from m_old to m_new, every exponential summed so far was "
    "taken from m_old: multiply the running state by exp(m_old − m_new) before adding the "
    "new block"
)


def _ch13_tiled_mistakes(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, block_size: int
) -> tuple[list[tuple[Any, str]], list[tuple[Any, str]]]:
    """The catalogues of wrong outputs and wrong logsumexps."""
    scores = attention.attention_scores(q, k)  # (T_q, T_k)
    largest = scores.max(axis=-1, keepdims=True)  # (T_q, 1)
    unnormalised = np.exp(scores - largest) @ v  # (T_q, D_v): Σ exp(s_j − m) v_j
    log_total = softmax.log_sum_exp(scores)  # (T_q,)
    with np.errstate(all="ignore"):  # the slips may overflow where the scores are large
        slips = {
            slip: _ch13_tiled_slip(q, k, v, block_size, slip)
            for slip in ("stale acc", "stale sum", "stale both", "own max")
        }
    no_scale = (
        "the scores are not divided by √D: softmax(q kᵀ / √D) is the attention of the "
        "exercise, for the output and the logsumexp alike"
    )
    own_max = (
        "each key block's exponentials were taken from that block's own maximum and added "
        f"as they are, so the blocks are weighed on different scales. Keep ONE running "
        f"maximum per query; {_CH13_RESCALE}"
    )
    outputs = [
        (
            slips["stale acc"][0],
            f"the accumulator acc is not rescaled: {_CH13_RESCALE}, acc as well as the sum",
        ),
        (
            slips["stale sum"][0],
            f"the running sum l is not rescaled: {_CH13_RESCALE}, the sum as well as acc",
        ),
        (
            slips["stale both"][0],
            f"neither the running sum l nor the accumulator acc is rescaled: {_CH13_RESCALE}",
        ),
        (slips["own max"][0], own_max),
        (
            unnormalised,
            "the output is the accumulator Σ exp(s_j − m) v_j, not divided by the running "
            "sum l: the softmax weights sum to one, so divide acc by l once, after the last "
            "key block",
        ),
        (attention.scaled_dot_product_attention(q, k, v, scale=1.0)[0], no_scale),
        (
            attention.scaled_dot_product_attention(q, k, v, scale=1 / q.shape[-1])[0],
            f"the scores are divided by D = {q.shape[-1]}, not by √D = {np.sqrt(q.shape[-1]):g}",
        ),
    ]
    log_totals = [
        (
            log_total - largest[:, 0],
            "the logsumexp is log l only. The running sum l = Σ exp(s_j − m) was measured "
            "from the running maximum m, and log Σ exp(s_j) = m + log l",
        ),
        (
            # m + log Σ exp(s − m) over the last block's keys, whatever the m
            softmax.log_sum_exp(scores[:, (len(k) - 1) // block_size * block_size :]),
            "the logsumexp covers only the LAST key block. It is the log of the whole "
            "softmax denominator, over all T_k keys: take it from the running state (m, l) "
            "after the last block",
        ),
        (slips["stale sum"][1], f"the running sum l is not rescaled: {_CH13_RESCALE}"),
        (slips["own max"][1], own_max),
        (softmax.log_sum_exp(scores * np.sqrt(q.shape[-1])), no_scale),
    ]
    return outputs, log_totals


def _ch13_tiled_result(result: Any, t_q: int, d_v: int, what: str) -> tuple[Any, Any]:
    """The pair ``(output, logsumexp)`` of the learner's result."""
    kit.require_result(result, what)
    if not isinstance(result, tuple | list) and np.shape(kit.plain(result)) == (t_q, d_v):
        raise kit.Mistake(
            f"{what} returned only the output: return the pair (output, logsumexp), with the "
            "log of each query's softmax denominator (the backward pass recomputes the "
            "weights from it)"
        )
    output, log_total = kit.as_tuple(result, 2, what, "a pair (output, logsumexp)")
    if np.shape(kit.plain(output)) == (t_q,) and np.shape(kit.plain(log_total)) == (t_q, d_v):
        raise kit.Mistake(f"{what} returned (logsumexp, output): return (output, logsumexp)")
    if np.shape(kit.plain(log_total)) == (t_q, 1):
        raise kit.Mistake(
            f"{what} returned a logsumexp of shape {(t_q, 1)}: return one number per query, "
            f"shape (T_q,) = {(t_q,)}"
        )
    return output, log_total


def _ch13_peak_bytes(function: Callable[..., Any], *args: Any) -> tuple[Any, int]:
    """``function(*args)`` (quietly) and the most memory it held at once, in bytes, as
    :mod:`tracemalloc` sees it: NumPy's arrays and Python's objects."""
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        result = kit.call_quietly(function, *args)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        if started:
            tracemalloc.stop()
    return result, peak


def _ch13_megabytes(n_bytes: float) -> str:
    return f"{n_bytes / 2**20:.1f} MB"


def check_tiled_attention(tiled_attention: Callable[..., Any]) -> kit.Feedback:
    """Check FlashAttention's tiled forward pass (chapter 13, exercise 4).

    Expected signature: ``tiled_attention(q, k, v, block_size) -> (output, logsumexp)``:
    attention ``softmax(q kᵀ / √D) v`` without a mask, and for each query the log of its
    softmax denominator, ``log Σ_j exp(s_j)``, computed by looping over blocks of
    ``block_size`` queries outside and blocks of ``block_size`` keys inside with a running
    maximum, sum and accumulator, never holding the whole ``T_q × T_k`` score matrix.
    Written with NumPy only (without PyTorch and ``selfattn_lib``).

    What is checked: the results for ``T_q`` and ``T_k`` that are not multiples of
    ``block_size``, blocks of one, a block larger than the sequence, and scores in the 1000s
    (which overflow ``exp`` unless the running maximum is subtracted). Then the memory: for
    ``T_q = 256``, ``T_k = 8192``, ``D = D_v = 2`` and ``block_size = 32`` the checker
    measures with :mod:`tracemalloc` the most memory the function holds at once (NumPy
    arrays and Python objects). It must stay under half of a ``(block_size, T_k)`` strip of
    scores (1 MB; the whole score matrix is 16 MB, a tile 8 kB): building the score matrix,
    keeping all the tiles, or scoring a query block against all the keys at once is turned
    down. Then, for one block of 4 queries, the lines of Python the function runs must grow
    from 8 keys to 32 (a loop over the blocks of keys): scoring each query against all the keys
    at once is turned down. From ``T_q = 1024`` to ``4096`` queries (``T_k = 64``,
    ``block_size = 32``) the memory held must grow by less than ``8 · block_size`` bytes a
    query: tiles of all the queries against a block of keys (chapter 11's ``blocked_attention``)
    are turned down. Within one block of 16 queries (``T_k = 32``), 16 queries must run no
    more lines of Python than 4: one query at a time against the blocks of keys is turned down.
    Last, more lines must run in blocks of 4 than in one block of 16 (a ``block_size`` that is
    ignored is turned down). The order of the loops is not checked.

    Shapes
    ------
    ``q``: ``(T_q, D)``, ``k``: ``(T_k, D)``, ``v``: ``(T_k, D_v)`` → ``output``:
    ``(T_q, D_v)``, ``logsumexp``: ``(T_q,)``.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_tiled_attention(lambda q, k, v, block_size: None)
    ✘ Not yet. tiled_attention(q of shape (7, 4), k of shape (9, 4), v of shape (9, 3),
    block_size=3) returned None: did you forget the `return` statement?
    """
    name = kit.name_of(tiled_attention, "tiled_attention")
    rng = np.random.default_rng(1300)

    def describe(q: np.ndarray, k: np.ndarray, v: np.ndarray, block_size: int) -> str:
        return (
            f"{name}(q of shape {q.shape}, k of shape {k.shape}, v of shape {v.shape}, "
            f"block_size={block_size})"
        )

    def check_one(t_q: int, t_k: int, d: int, d_v: int, block_size: int, spread: float) -> None:
        q, k = rng.normal(size=(t_q, d)) * spread, rng.normal(size=(t_k, d)) * spread
        v = rng.normal(size=(t_k, d_v))
        what = describe(q, k, v, block_size)
        expected = attention.scaled_dot_product_attention(q, k, v)[0]  # (T_q, D_v)
        expected_log = softmax.log_sum_exp(attention.attention_scores(q, k))  # (T_q,)
        result = _ch13_call_on_copies(tiled_attention, q, k, v, block_size)
        output, log_total = _ch13_tiled_result(result, t_q, d_v, what)
        if spread > 10:
            overflow = (
                "These scores reach the 1000s, and e^1000 overflows to infinity. Subtract the "
                "running maximum m before every exponential, exp(s − m), so that no exponent "
                "is above 0, and rescale what was summed before by exp(m_old − m_new) when m "
                "grows"
            )
        else:
            overflow = (
                "Look for 0/0 or inf − inf: the running maximum starts at −inf, and once a "
                "block has been seen it is finite, so exp(m_old − m_new) is a number ≤ 1"
            )
        kit.explain_non_finite(output, expected, f"{what}, the output,", overflow)
        kit.explain_non_finite(log_total, expected_log, f"{what}, the logsumexp,", overflow)
        outputs, log_totals = _ch13_tiled_mistakes(q, k, v, block_size)
        got = kit.as_result_array(output, expected, f"{what}, the output,")
        if not kit.match_known_mistakes(got, expected, outputs, what, atol=1e-6):
            kit.assert_close(got, expected, f"{what}, the output,", atol=1e-6)
        got_log = kit.as_result_array(log_total, expected_log, f"{what}, the logsumexp,")
        if not kit.match_known_mistakes(got_log, expected_log, log_totals, what, atol=1e-6):
            kit.assert_close(got_log, expected_log, f"{what}, the logsumexp,", atol=1e-6)

    def check_memory() -> None:
        t_q, t_k, d, block_size = _CH13_MEMORY_CASE
        q, k, v = rng.normal(size=(t_q, d)), rng.normal(size=(t_k, d)), rng.normal(size=(t_k, d))
        what = describe(q, k, v, block_size)
        result, peak = _ch13_peak_bytes(tiled_attention, q.copy(), k.copy(), v.copy(), block_size)
        output, log_total = _ch13_tiled_result(result, t_q, d, what)
        expected = attention.scaled_dot_product_attention(q, k, v)[0]  # (T_q, D_v)
        kit.assert_close(kit.as_result_array(output, expected, what), expected, what, atol=1e-6)
        expected_log = softmax.log_sum_exp(attention.attention_scores(q, k))  # (T_q,)
        got_log = kit.as_result_array(log_total, expected_log, f"{what}, the logsumexp,")
        kit.assert_close(got_log, expected_log, f"{what}, the logsumexp,", atol=1e-6)
        matrix, strip = t_q * t_k * 8, block_size * t_k * 8  # float64 bytes
        held = f"the results are right, but {what} held {_ch13_megabytes(peak)} at once"
        if peak >= 0.75 * matrix:
            raise kit.Mistake(
                f"{held}: most of the whole ({t_q}, {t_k}) score matrix "
                f"({_ch13_megabytes(matrix)}), in one array or in pieces. Score one "
                f"({block_size}, {block_size}) tile at a time and fold it into the running "
                "maximum, sum and accumulator, then let it go"
            )
        if peak >= strip / 2:
            raise kit.Mistake(
                f"{held}: half or more of the scores of a query block against ALL {t_k} keys "
                f"(a ({block_size}, {t_k}) strip takes {_ch13_megabytes(strip)}), in one array "
                f"or kept tile by tile. Score one ({block_size}, {block_size}) tile at a time "
                "and fold it into the running maximum, sum and accumulator, then let it go"
            )

    def check_key_blocks() -> None:
        """A loop over the blocks of keys, by behaviour: for one block of queries, the lines of
        Python run grow with the number of key blocks."""
        block_size, d = 4, 2
        q = rng.normal(size=(block_size, d))  # one block of queries
        few, many = 2 * block_size, 8 * block_size  # 2 and 8 blocks of keys
        lines = {
            t_k: kit.python_lines(
                tiled_attention, q, rng.normal(size=(t_k, d)), rng.normal(size=(t_k, d)), block_size
            )
            for t_k in (few, many)
        }
        if lines[many] <= lines[few]:
            raise kit.Mistake(
                f"the results are right, but {name} ran {lines[few]} lines of Python for "
                f"{block_size} queries against {few} keys and {lines[many]} against {many} keys, "
                f"with block_size = {block_size}: it does not loop over blocks of keys, so each "
                "query is scored against all the keys at once. Inside the loop over the blocks "
                "of queries, loop over the blocks of keys, folding each tile into the running "
                "maximum, sum and accumulator"
            )

    def check_query_blocks() -> None:
        """Blocks of queries, by behaviour: from T_q = 1024 to 4096 queries the memory held
        grows by less than one row of a block_size-wide tile (8 · block_size bytes) a query."""
        t_k, d, block_size = 64, 2, 32
        k, v = rng.normal(size=(t_k, d)), rng.normal(size=(t_k, d))
        peaks = [
            _ch13_peak_bytes(
                tiled_attention, rng.normal(size=(t_q, d)), k.copy(), v.copy(), block_size
            )[1]
            for t_q in (1024, 4096)
        ]
        per_query = (peaks[1] - peaks[0]) / (4096 - 1024)
        if per_query >= 8 * block_size:
            raise kit.Mistake(
                f"the results are right, but the memory {name} held grew by {per_query:.0f} "
                f"bytes a query from T_q = 1024 to 4096 (T_k = {t_k}, block_size = "
                f"{block_size}), at least a row of {block_size} scores ({8 * block_size} "
                "bytes) for each query: its tiles score ALL the queries against a block of "
                "keys, T_q × block_size, as chapter 11's blocked_attention does, and grow with "
                "T_q. Cut the queries into blocks of block_size too, so that a tile is "
                "block_size × block_size whatever T_q"
            )

    def check_query_rows() -> None:
        """Blocks of queries, by behaviour: within one block of queries (block_size = 16,
        T_k = 32), 16 queries run no more lines of Python than 4."""
        block_size, d = 16, 2
        q = rng.normal(size=(block_size, d))
        k, v = rng.normal(size=(2 * block_size, d)), rng.normal(size=(2 * block_size, d))
        lines = {
            t_q: kit.python_lines(tiled_attention, q[:t_q].copy(), k, v, block_size)
            for t_q in (4, block_size)
        }
        if lines[block_size] > lines[4]:
            raise kit.Mistake(
                f"the results are right, but {name} ran {lines[4]} lines of Python for 4 "
                f"queries and {lines[block_size]} for {block_size}, all in one block "
                f"(block_size = {block_size}, T_k = {2 * block_size}): it takes the queries "
                "one at a time, so every block of keys is read again for each query (on a GPU, "
                "K and V would cross from main memory once per query, not once per block of "
                "queries). Score a block of block_size queries against a block of keys in one "
                "product, a block_size × block_size tile"
            )

    def check_block_size_used() -> None:
        """block_size used, by behaviour: more lines of Python run in blocks of 4 than in one
        block of all 16 queries and keys."""
        q, k, v = (rng.normal(size=(16, 2)) for _ in range(3))
        lines = {size: kit.python_lines(tiled_attention, q, k, v, size) for size in (4, 16)}
        if lines[4] <= lines[16]:
            raise kit.Mistake(
                f"the results are right, but {name} ran {lines[16]} lines of Python for T_q = "
                f"T_k = 16 in one block (block_size = 16) and {lines[4]} in blocks of 4: it "
                "does not use block_size. Cut the queries and the keys into blocks of "
                "block_size, the size of the tiles that the fast memory holds"
            )

    def checks() -> str:
        for case in _CH13_TILED_CASES:
            check_one(*case)
        check_memory()
        q, k, v = rng.normal(size=(5, 2)), rng.normal(size=(6, 2)), rng.normal(size=(6, 2))
        kit.require_own_code(
            tiled_attention,
            (q, k, v, 2),
            (*kit.COURSE_LIBRARY, *kit.TORCH),
            name,
            _NUMPY_ONLY,
        )
        check_key_blocks()
        check_query_blocks()
        check_query_rows()
        check_block_size_used()
        return (
            "Your tiled forward pass is right: tile by tile, it holds far less than a strip of "
            "scores at once, memory that does not grow with T². On a GPU, in FlashAttention-2's "
            "order (a block of queries outside, its blocks of keys inside), the tiles and the "
            "block's running state live in the fast on-chip memory, and only q, k, v, the "
            "output and the logsumexp cross to main memory."
        )

    return kit.run_checks(checks)
