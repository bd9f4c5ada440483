"""Checkers for the exercises of chapter 11, attention at scale."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from selfattn_lib import attention, kv_cache, online_softmax
from selfattn_lib.exercises import _kit as kit


def check_longest_sequence(longest_sequence: Callable[..., Any]) -> kit.Feedback:
    """Check the longest sequence whose score matrix fits in memory (chapter 11, exercise 1).

    Expected signature: ``longest_sequence(memory_bytes: int, batch: int, heads: int,
    bytes_per_number: int) -> int``: the largest sequence length ``T`` for which the score
    matrix of ``batch`` sequences and ``heads`` heads, with ``bytes_per_number`` bytes per
    score, fits in ``memory_bytes`` bytes.

    Shapes
    ------
    ``memory_bytes``, ``batch``, ``heads``, ``bytes_per_number``: whole numbers → one whole
    number ``T``; the score matrix: ``(B, H, T, T)`` with ``B = batch`` and ``H = heads``.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_longest_sequence(lambda memory_bytes, batch, heads, bytes_per_number: None)
    ✘ Not yet. longest_sequence(80000000000, 8, 32, 2) returned None: did you forget the
    `return` statement?
    """
    import math  # isqrt: the exact integer square root

    name = kit.name_of(longest_sequence, "longest_sequence")
    cases = (
        (80 * 10**9, 8, 32, 2),  # an 80 GB GPU, batch 8, 32 heads, float16: exactly T = 12500
        (2**30, 1, 1, 4),  # 1 GiB, one float32 matrix: T = 16384
        (10**9, 4, 8, 4),
        (24 * 2**30, 2, 16, 2),
        (1000, 1, 1, 8),  # 125 float64 numbers: T = 11
    )

    def needed(t: int, batch: int, heads: int, size: int) -> int:
        return batch * heads * t * t * size

    def checks() -> str:
        for memory, batch, heads, size in cases:
            what = f"{name}({memory}, {batch}, {heads}, {size})"
            expected = math.isqrt(memory // (batch * heads * size))
            got = kit.as_whole_number(
                kit.call(longest_sequence, memory, batch, heads, size), what, "a sequence length"
            )
            if got == expected:
                continue
            hints = [
                (
                    math.isqrt(memory // (batch * heads)),
                    "you counted numbers, not bytes: each number takes bytes_per_number bytes",
                ),
                (
                    math.isqrt(memory // (heads * size)),
                    "every sequence of the batch has its own score matrix: multiply by batch",
                ),
                (
                    math.isqrt(memory // (batch * size)),
                    "every head has its own T × T matrix: multiply by heads",
                ),
                (
                    memory // (batch * heads * size),
                    "that is the number of scores that fit, T²; T is its square root",
                ),
                (
                    math.ceil(math.sqrt(memory / (batch * heads * size))),
                    "you rounded up, so the matrix no longer fits: round down (math.isqrt)",
                ),
            ]
            kit.match_known_mistakes(
                got, expected, hints, f"{what} returned {got}, expected {expected}"
            )
            if got > expected:
                raise kit.Mistake(
                    f"{what} returned {got}, but a (B, H, T, T) matrix with T = {got} needs "
                    f"{needed(got, batch, heads, size):,} bytes, more than {memory:,}"
                )
            raise kit.Mistake(
                f"{what} returned {got}, but T = {got + 1} still fits: it needs "
                f"{needed(got + 1, batch, heads, size):,} of the {memory:,} bytes"
            )
        kit.require_own_code(
            longest_sequence,
            cases[0],
            ("selfattn_lib.attention_cost",),
            name,
            kit.WRITE_IT_YOURSELF,
        )
        return (
            "Your bound is right: T = ⌊√(M / (B · H · bytes))⌋. Doubling the memory buys only "
            "√2 ≈ 1.41 times the sequence length."
        )

    return kit.run_checks(checks)


def _attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float | None = None):
    return attention.scaled_dot_product_attention(q, k, v, scale=scale)[0]  # (..., T_q, D_v)


def _ch11_cache_result(result: Any, what: str) -> tuple[Any, Any, Any]:
    kit.require_result(result, what)
    if not isinstance(result, tuple | list) or len(result) != 3:
        raise kit.Mistake(
            f"{what} must return three things, (output, k_cache, v_cache): the new token's "
            "output and both caches with the new key and value appended"
        )
    return tuple(result)


def check_attend_with_cache(attend_with_cache: Callable[..., Any]) -> kit.Feedback:
    """Check one decoding step with a key/value cache (chapter 11, exercise 2).

    Expected signature: ``attend_with_cache(q_new, k_new, v_new, k_cache, v_cache) ->
    (output, k_cache, v_cache)``. ``q_new``, ``k_new`` and ``v_new`` are the projections of the
    newest token, ``k_cache`` and ``v_cache`` those of the ``t`` tokens before it (``t`` may be
    0). The step appends the new key and value at the end of the caches and lets the new query
    attend to all ``t + 1`` keys (itself included).

    Shapes
    ------
    ``q_new``, ``k_new``: ``(B, 1, D_k)``, ``v_new``: ``(B, 1, D_v)``, ``k_cache``:
    ``(B, t, D_k)``, ``v_cache``: ``(B, t, D_v)`` → ``output``: ``(B, 1, D_v)``, ``k_cache``:
    ``(B, t + 1, D_k)``, ``v_cache``: ``(B, t + 1, D_v)``.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_attend_with_cache(lambda q_new, k_new, v_new, k_cache, v_cache: None)
    ✘ Not yet. attend_with_cache(step 2: a cache of 2 tokens) returned None: did you forget the
    `return` statement?
    """
    name = kit.name_of(attend_with_cache, "attend_with_cache")
    rng = np.random.default_rng(11)
    batch, n_tokens, d_k, d_v = 2, 5, 4, 3
    q = rng.normal(size=(batch, n_tokens, d_k))
    k = rng.normal(size=(batch, n_tokens, d_k))
    v = rng.normal(size=(batch, n_tokens, d_v))

    def step(t: int) -> None:
        what = f"{name}(step {t}: a cache of {t} tokens)"
        new = (q[:, t : t + 1], k[:, t : t + 1], v[:, t : t + 1])
        old_k, old_v = k[:, :t], v[:, :t]
        result = kit.call_quietly(
            attend_with_cache, *(a.copy() for a in new), old_k.copy(), old_v.copy()
        )
        output, k_cache, v_cache = _ch11_cache_result(result, what)
        expected = kv_cache.attend_with_cache(*new, old_k, old_v)[0]  # (B, 1, D_v)
        if np.shape(output) == (batch, d_v):
            raise kit.Mistake(
                f"{what} returned an output of shape {(batch, d_v)}: keep the query axis of "
                f"size 1, shape (B, 1, D_v) = {expected.shape}"
            )
        got = kit.as_result_array(output, expected, f"{what}, the output,")
        if not np.allclose(got, expected, atol=1e-10):
            if t > 0 and np.allclose(got, _attention(new[0], old_k, old_v), atol=1e-10):
                raise kit.Mistake(
                    f"{what}: the new query attended only to the {t} cached keys. Append the "
                    "new key and value first: a token may attend to itself (the diagonal of "
                    "the causal mask)"
                )
            unscaled = _attention(q[:, t : t + 1], k[:, : t + 1], v[:, : t + 1], scale=1.0)
            if np.allclose(got, unscaled, atol=1e-10):
                raise kit.Mistake(f"{what}: the scores are not divided by √D_k")
            kit.assert_close(got, expected, f"{what}, the output,", atol=1e-10)
        for cache, full, label in ((k_cache, k, "k_cache"), (v_cache, v, "v_cache")):
            expected_cache = full[:, : t + 1]
            shape = np.shape(cache) if cache is not None else None
            if shape == full[:, :t].shape:
                raise kit.Mistake(
                    f"{what} returned {label} of shape {shape}, the old cache: return it with "
                    f"the new entry appended, shape {expected_cache.shape}"
                )
            if shape is not None and shape != expected_cache.shape:
                raise kit.Mistake(
                    f"{what} returned {label} of shape {shape}, expected "
                    f"{expected_cache.shape}: append along the time axis "
                    "(np.concatenate([cache, new], axis=1))"
                )
            got_cache = kit.as_result_array(cache, expected_cache, f"{what}, {label},")
            if t > 0 and np.allclose(got_cache, np.roll(expected_cache, 1, axis=1)):
                raise kit.Mistake(
                    f"{what} put the new entry at the FRONT of {label}. The output does not "
                    "notice (attention ignores the order of keys), but position t of the cache "
                    "must hold token t, e.g. for the mask of a padded batch: append at the end"
                )
            kit.assert_close(got_cache, expected_cache, f"{what}, {label},", atol=1e-12)

    def checks() -> str:
        step(2)  # a cache of two tokens first: the clearest case
        for t in range(n_tokens):  # then a whole generation, from an empty cache
            step(t)
        kit.require_own_code(
            attend_with_cache,
            (q[:, 2:3], k[:, 2:3], v[:, 2:3], k[:, :2], v[:, :2]),
            (*kit.COURSE_LIBRARY, *kit.TORCH),
            name,
            "the exercise asks for NumPy only, without selfattn_lib",
        )
        return (
            "Your cached step is right: token by token it gives exactly the rows of causal "
            "attention over the whole sequence, and the caches grow by one position per step."
        )

    return kit.run_checks(checks)


def check_merge_softmax_states(merge_states: Callable[..., Any]) -> kit.Feedback:
    """Check the merge of two partial online-softmax states (chapter 11, exercise 3).

    Expected signature: ``merge_states(state_a, state_b) -> (m, l, acc)``. A state
    ``(m, l, acc)`` summarises attention over one set of keys: for each query the largest score
    ``m``, ``l = Σ_j exp(s_j − m)`` and ``acc = Σ_j exp(s_j − m) v_j``. The merge is the state
    of both key sets together. Any correct representation is accepted: ``(m, l, acc)`` and
    ``(m', l · e^(m − m'), acc · e^(m − m'))`` describe the same keys, so the checker compares
    ``m + log l`` (the log of the softmax denominator) and ``acc / l`` (the output).

    Shapes
    ------
    ``state_a``, ``state_b`` and the result: ``m``: ``(T_q,)``, ``l``: ``(T_q,)``, ``acc``:
    ``(T_q, D_v)``.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_merge_softmax_states(lambda state_a, state_b: None)
    ✘ Not yet. merge_states(state_a, state_b) for two blocks of keys returned None: did you
    forget the `return` statement?
    """
    name = kit.name_of(merge_states, "merge_states")
    rng = np.random.default_rng(1)
    t_q, d_v = 3, 2
    values_a, values_b = rng.normal(size=(4, d_v)), rng.normal(size=(5, d_v))
    scores_a, scores_b = rng.normal(size=(t_q, 4)), rng.normal(size=(t_q, 5))
    cases = [
        ("two blocks of keys", scores_a, scores_b, "normal"),
        ("the second block has larger scores", scores_a, scores_b + 3.0, "normal"),
        ("scores around 1000 in the first block", scores_a * 5 + 1000.0, scores_b, "large"),
        ("the empty starting state and a first block", None, scores_b, "empty"),
    ]

    def empty_state() -> tuple[np.ndarray, ...]:
        return np.full(t_q, -np.inf), np.zeros(t_q), np.zeros((t_q, d_v))

    def check_one(label: str, sa: np.ndarray | None, sb: np.ndarray, kind: str) -> None:
        what = f"{name}(state_a, state_b) for {label}"
        state_a = empty_state() if sa is None else online_softmax.softmax_state(sa, values_a)
        state_b = online_softmax.softmax_state(sb, values_b)
        all_scores = sb if sa is None else np.concatenate([sa, sb], axis=-1)
        all_values = values_b if sa is None else np.concatenate([values_a, values_b])
        true_m, true_l, true_acc = online_softmax.softmax_state(all_scores, all_values)
        result = kit.call_quietly(
            merge_states, tuple(a.copy() for a in state_a), tuple(a.copy() for a in state_b)
        )
        kit.require_result(result, what)
        if not isinstance(result, tuple | list) or len(result) != 3:
            raise kit.Mistake(f"{what} must return a state (m, l, acc), three arrays")
        try:
            m, l_sum, acc = (np.asarray(part, dtype=np.float64) for part in result)
        except (TypeError, ValueError) as error:
            raise kit.Mistake(f"{what} must return three arrays of numbers (m, l, acc)") from error
        if m.shape != (t_q,) or l_sum.shape != (t_q,) or acc.shape != (t_q, d_v):
            raise kit.Mistake(
                f"{what} returned shapes {m.shape}, {l_sum.shape}, {acc.shape}; a state has "
                f"m and l of shape (T_q,) = {(t_q,)} and acc of shape (T_q, D_v) = {(t_q, d_v)}"
            )
        if not (np.isfinite(m).all() and np.isfinite(l_sum).all() and np.isfinite(acc).all()):
            if kind == "empty":
                raise kit.Mistake(
                    f"{what} is not finite. The empty state has m = −inf, l = 0, acc = 0; with "
                    "the new maximum m = max(m_a, m_b) its factor exp(m_a − m) = exp(−inf) is "
                    "0, so it adds nothing"
                )
            raise kit.Mistake(
                f"{what} overflowed (inf or NaN). Rescale both states to the LARGER maximum, "
                "m = max(m_a, m_b): the factors exp(m_a − m) and exp(m_b − m) are then at most 1"
            )
        if (l_sum <= 0).any():
            raise kit.Mistake(f"{what} returned l ≤ 0; l is a sum of exponentials, always positive")
        output, log_total = acc / l_sum[:, None], m + np.log(l_sum)
        true_output, true_log_total = true_acc / true_l[:, None], true_m + np.log(true_l)
        if np.allclose(output, true_output, atol=1e-9) and np.allclose(
            log_total, true_log_total, atol=1e-9
        ):
            return
        log_total_right = np.allclose(log_total, true_log_total, atol=1e-9)
        if log_total_right and np.allclose(acc, true_output, atol=1e-9):
            raise kit.Mistake(
                f"{what} returned acc already divided by l. Keep acc unnormalised, "
                "Σ exp(s_j − m) v_j; divide by l only once, at the very end"
            )
        if log_total_right:
            raise kit.Mistake(
                f"{what}: l is right but acc is not. Rescale acc by the same factors "
                "exp(m_a − m) and exp(m_b − m) as l"
            )
        m_new = np.maximum(state_a[0], state_b[0])
        if kind != "empty" and np.allclose(l_sum, state_a[1] + state_b[1]):
            raise kit.Mistake(
                f"{what} added l_a + l_b as they are. They were measured from different "
                "maxima: rescale each by exp(m_old − m) with m = max(m_a, m_b) before adding"
            )
        upside_down = state_a[1] * np.exp(m_new - state_a[0]) + state_b[1] * np.exp(
            m_new - state_b[0]
        )
        if kind != "empty" and np.allclose(l_sum, upside_down):
            raise kit.Mistake(
                f"{what}: the rescaling factor is upside down. It is exp(m_old − m_new) ≤ 1: "
                "the old exponentials were measured from a smaller maximum and must shrink"
            )
        raise kit.Mistake(
            f"{what} describes different keys: m + log l is {np.round(log_total, 6)}, expected "
            f"{np.round(true_log_total, 6)} (the log of Σ exp(s_j) over both blocks)"
        )

    def checks() -> str:
        for case in cases:
            check_one(*case)
        kit.require_own_code(
            merge_states,
            (
                online_softmax.softmax_state(scores_a, values_a),
                online_softmax.softmax_state(scores_b, values_b),
            ),
            ("selfattn_lib.online_softmax.merge_states",),
            name,
            kit.WRITE_IT_YOURSELF,
        )
        return (
            "Your merge is right: rescale both states to the larger maximum and add. It is "
            "associative, so blocks can be merged in any grouping — on a GPU, in parallel."
        )

    return kit.run_checks(checks)


def check_causal_blocked_attention(causal_blocked_attention: Callable[..., Any]) -> kit.Feedback:
    """Check causal attention computed block by block with online softmax (ch. 11, ex. 4).

    Expected signature: ``causal_blocked_attention(q, k, v, block_size) -> output`` for one
    sequence, equal to ``softmax(Q Kᵀ / √D_k + causal mask) V`` (query ``i`` attends keys
    ``j ≤ i``). ``T`` need not be a multiple of ``block_size``.

    Shapes
    ------
    ``q``, ``k``: ``(T, D_k)``, ``v``: ``(T, D_v)`` → ``(T, D_v)``, with ``T_q = T_k = T``.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_causal_blocked_attention(lambda q, k, v, block_size: None)
    ✘ Not yet. causal_blocked_attention(q, k, v, block_size=3) with T = 7 returned None: did you
    forget the `return` statement?
    """
    name = kit.name_of(causal_blocked_attention, "causal_blocked_attention")
    rng = np.random.default_rng(4)
    cases = ((7, 3), (8, 4), (5, 1), (6, 8), (9, 2))

    def masked(q: np.ndarray, k: np.ndarray, v: np.ndarray, diagonal: int = 0) -> np.ndarray:
        allowed = np.tril(np.ones((len(q), len(k)), dtype=bool), k=diagonal)  # (T, T)
        return attention.scaled_dot_product_attention(q, k, v, mask=allowed)[0]

    def checks() -> str:
        for n_tokens, block_size in cases:
            q = rng.normal(size=(n_tokens, 4)) * 3.0  # large scores: the running max matters
            k = rng.normal(size=(n_tokens, 4)) * 3.0
            v = rng.normal(size=(n_tokens, 3))
            what = f"{name}(q, k, v, block_size={block_size}) with T = {n_tokens}"
            expected = online_softmax.causal_blocked_attention(q, k, v, block_size)
            result = kit.call_quietly(
                causal_blocked_attention, q.copy(), k.copy(), v.copy(), block_size
            )
            kit.explain_non_finite(
                result,
                expected,
                what,
                "A query whose keys in a block are all masked has a block maximum of −inf, and "
                "exp(−inf − (−inf)) is NaN: skip blocks that lie entirely in the future, or "
                "compute the factors only where the maximum is finite",
            )
            got = kit.as_result_array(result, expected, what)
            if np.allclose(got, expected, atol=1e-9):
                continue
            if np.allclose(got, _attention(q, k, v), atol=1e-9):
                raise kit.Mistake(
                    f"{what} equals attention WITHOUT the mask: hide every key j > i from "
                    "query i (−inf before the exponential, or skip it)"
                )
            strict = masked(q, k, v, diagonal=-1)
            if np.allclose(got[1:], strict[1:], atol=1e-9):
                raise kit.Mistake(
                    f"{what} hides the diagonal too: query i may attend key i itself (j ≤ i)"
                )
            if np.allclose(got[::-1], masked(q[::-1], k[::-1], v[::-1]), atol=1e-9):
                raise kit.Mistake(
                    f"{what} lets each query see the keys AFTER it: the mask is j ≤ i"
                )
            kit.assert_close(got, expected, what, atol=1e-9)
        # The work, by behaviour: how many multiplications were made with the keys.
        n_tokens, block_size, d_k = 64, 8, 4
        q, k, v = (rng.normal(size=(n_tokens, d)) for d in (d_k, d_k, 3))
        counted = kit.multiplications_with(
            causal_blocked_attention, (q, k, v, block_size), index=1, depth=d_k
        )
        every_pair = n_tokens * n_tokens * d_k
        n_blocks = n_tokens // block_size
        needed = n_blocks * (n_blocks + 1) // 2 * block_size**2 * d_k
        if counted > 0.75 * every_pair:
            raise kit.Mistake(
                f"the result is right, but {name}(q, k, v, block_size={block_size}) with "
                f"T = {n_tokens} made {counted:,} multiplications with the keys: "
                f"T · T · D_k = {every_pair:,}, every query against every key. The tiles "
                f"that lie entirely in the future need not be computed: {n_blocks} × "
                f"{n_blocks} tiles, of which {n_blocks * (n_blocks + 1) // 2} are needed "
                f"({needed:,} multiplications). Loop over the key blocks that start before "
                "the query block ends"
            )
        kit.require_own_code(
            causal_blocked_attention,
            (q, k, v, block_size),
            ("selfattn_lib.online_softmax.causal_blocked_attention",),
            name,
            kit.WRITE_IT_YOURSELF,
        )
        return (
            "Your causal blocked attention is right, block size by block size, and it skips "
            "the tiles that lie entirely in the future: almost half of the work."
        )

    return kit.run_checks(checks)
