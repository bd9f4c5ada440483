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
        (9950, 1, 1, 1),  # √9950 = 99.75: rounded to the nearest, 100 would not fit
        # 399 / 4 = 99.75 scores: rounded up (or to the nearest) before the square root, 100
        # gives T = 10, whose 400 bytes do not fit. Last: the slips above fail earlier cases.
        (399, 1, 1, 4),
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
            quotient = memory / (batch * heads * size)
            root = math.sqrt(quotient)
            hints = [
                (
                    math.isqrt(math.ceil(quotient)),
                    f"M / (B · H · bytes) = {quotient:g} was rounded up to "
                    f"{math.ceil(quotient)} before the square root (math.ceil, or round), and "
                    f"T = {math.isqrt(math.ceil(quotient))} needs "
                    f"{needed(math.isqrt(math.ceil(quotient)), batch, heads, size):,} bytes, "
                    f"more than {memory:,}: the whole matrix must fit, so round the quotient "
                    "down (integer division, memory // (batch * heads * bytes))",
                ),
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
                    round(root),
                    f"you rounded to the nearest whole number, {root:.2f} to the one above, and "
                    "that matrix no longer fits: round down (math.isqrt)",
                ),
                (
                    math.ceil(root),
                    "you rounded up, so the matrix no longer fits: round down (math.isqrt)",
                ),
                (
                    math.isqrt(int(memory / batch * heads * size)),
                    "Python reads memory / batch * heads * bytes as ((memory / batch) · heads) "
                    "· bytes, dividing by batch alone: put the product in parentheses, "
                    "memory / (batch * heads * bytes)",
                ),
                (
                    math.isqrt(memory // (batch * heads * size * 8)),
                    "bytes_per_number already counts bytes (2 for float16): multiplying by 8 "
                    "counts bits, and memory_bytes is in bytes",
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


def _ch11_cache_mistakes(
    q_new: np.ndarray,
    k_new: np.ndarray,
    v_new: np.ndarray,
    k_cache: np.ndarray,
    v_cache: np.ndarray,
) -> list[tuple[np.ndarray, str]]:
    """The outputs of the usual slips of one cached step, with what went wrong."""
    keys = np.concatenate([k_cache, k_new], axis=1)  # (B, t + 1, D_k)
    values = np.concatenate([v_cache, v_new], axis=1)  # (B, t + 1, D_v)
    d_k, d_v, n_keys = q_new.shape[-1], v_new.shape[-1], keys.shape[1]
    scores = q_new @ np.swapaxes(keys, 1, 2) / np.sqrt(d_k)  # (B, 1, t + 1)
    exponentials = np.exp(scores - scores.max(axis=-1, keepdims=True))  # (B, 1, t + 1)
    with np.errstate(all="ignore"):  # the slips may overflow where the scores are large
        batch_max = np.exp(scores - scores.max(axis=0, keepdims=True))  # (B, 1, t + 1)
        batch_max = batch_max / batch_max.sum(axis=-1, keepdims=True) @ values  # (B, 1, D_v)
    mistakes = [
        (
            _attention(q_new, k_cache, v_cache) if k_cache.shape[1] else v_new * np.nan,
            f"the new query attended only to the {n_keys - 1} cached keys. Append the new key "
            "and value first: a token may attend to itself (the diagonal of the causal mask)",
        ),
        (_attention(q_new, keys, values, scale=1.0), "the scores are not divided by √D_k"),
        (
            _attention(q_new, keys, values, scale=1 / np.sqrt(d_v)),
            f"the scores are divided by √D_v = √{d_v}: the scale is √D_k = √{d_k}, from the "
            "dimension of the queries and keys that the dot product sums over",
        ),
        (
            values.sum(axis=1, keepdims=True),
            f"every key got the weight 1: the softmax ran over an axis of size 1 (the single "
            f"query). Normalise over the {n_keys} keys, the last axis of the (B, 1, t + 1) scores",
        ),
        (
            v_cache[:, :1] if k_cache.shape[1] else v_new,
            "only the first key was attended: a causal mask built for the (1, t + 1) scores "
            "(np.tril) hides every key after the first. The caches hold only the past and the "
            "present, so no mask is needed",
        ),
        (
            exponentials @ values,
            "the weights do not sum to one: divide the exponentials by their sum over the keys",
        ),
        (
            values.mean(axis=1, keepdims=True),
            "every key got the same weight: the maximum was taken over axis 1, of size 1 (the "
            "single query), so each score minus it is 0. Subtract the largest score over the "
            "keys, the last axis (axis=-1, keepdims=True)",
        ),
        (
            batch_max,
            "the maximum was taken over the batch axis (axis=0): a different number for each "
            "key, which changes the weights. Subtract each row's own maximum over the keys "
            "(axis=-1, keepdims=True)",
        ),
    ]
    return [(wrong, explanation) for wrong, explanation in mistakes if np.isfinite(wrong).all()]


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

    def step(t: int, scale: float = 1.0) -> None:
        what = f"{name}(step {t}: a cache of {t} tokens"
        what += ", the first sequence's scores around 1000)" if scale != 1.0 else ")"
        # Only the first sequence's query is scaled: the rows' maxima then lie about 1000 apart.
        scales = np.array([scale] + [1.0] * (batch - 1))[:, None, None]  # (B, 1, 1)
        new = (q[:, t : t + 1] * scales, k[:, t : t + 1], v[:, t : t + 1])
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
        values = kit.values_like(output, expected)
        if values is not None and np.isfinite(values[0]).all():  # only other rows went wrong
            kit.explain_non_finite(
                output,
                expected,
                f"{what}, the output,",
                "The first sequence's largest score is about 1000 and the second's below 1: "
                "subtracting one maximum for the whole array makes e^(s − 1000) = 0 for every "
                "key of the second, and 0/0 is NaN. Subtract each row's own maximum, over "
                "the keys (axis=-1, keepdims=True)",
            )
        kit.explain_non_finite(
            output,
            expected,
            f"{what}, the output,",
            "The first sequence's scores reach about 1000, and e^1000 overflows: subtract "
            "each row's largest score before the exponential (chapter 2's stable softmax)",
        )
        got = kit.as_result_array(output, expected, f"{what}, the output,")
        if not kit.match_known_mistakes(
            got, expected, _ch11_cache_mistakes(*new, old_k, old_v), what
        ):
            kit.assert_close(got, expected, f"{what}, the output,")
        as_keys, as_values = (
            kit.values_like(v_cache, k[:, : t + 1]),
            kit.values_like(k_cache, v[:, : t + 1]),
        )
        if (
            as_keys is not None
            and as_values is not None
            and kit.equal(as_keys, k[:, : t + 1])
            and kit.equal(as_values, v[:, : t + 1])
        ):
            raise kit.Mistake(
                f"{what} returned the caches in the order (v_cache, k_cache): its k_cache has "
                f"D_v = {d_v} columns and holds the values. Return (output, k_cache, v_cache)"
            )
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
            if t > 0 and kit.equal(got_cache, np.roll(expected_cache, 1, axis=1)):
                raise kit.Mistake(
                    f"{what} put the new entry at the FRONT of {label}. The output does not "
                    "notice (attention ignores the order of keys), but position t of the cache "
                    "must hold token t, e.g. for the mask of a padded batch: append at the end"
                )
            kit.assert_close(got_cache, expected_cache, f"{what}, {label},")

    def checks() -> str:
        step(2)  # a cache of two tokens first: the clearest case
        for t in range(n_tokens):  # then a whole generation, from an empty cache
            step(t)
        # The same step with the first sequence's query 1000 / (its largest score, 0.19) times
        # as long: its largest score is 1000, the second sequence's stay below 1.
        largest = (q[0, 3] @ k[0, :4].T).max() / np.sqrt(d_k)
        step(3, scale=1000.0 / largest)
        kit.require_own_code(
            attend_with_cache,
            (q[:, 2:3], k[:, 2:3], v[:, 2:3], k[:, :2], v[:, :2]),
            (*kit.COURSE_LIBRARY, *kit.TORCH),
            name,
            "the exercise asks for NumPy only, without selfattn_lib",
        )
        return (
            "Your cached step is right: token by token it gives the rows of causal attention "
            "over the whole sequence, up to rounding, and the caches grow by one position per "
            "step."
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
        # Split-K under a causal mask: a query may have no visible key in either set.
        ("two empty states (queries that saw no key in either set)", None, None, "both empty"),
    ]

    def empty_state() -> tuple[np.ndarray, ...]:
        return np.full(t_q, -np.inf), np.zeros(t_q), np.zeros((t_q, d_v))

    def check_one(label: str, sa: np.ndarray | None, sb: np.ndarray | None, kind: str) -> None:
        what = f"{name}(state_a, state_b) for {label}"
        state_a = empty_state() if sa is None else online_softmax.softmax_state(sa, values_a)
        state_b = empty_state() if sb is None else online_softmax.softmax_state(sb, values_b)
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
        if kind == "both empty":
            if np.isnan(m).any() or np.isnan(l_sum).any() or np.isnan(acc).any():
                raise kit.Mistake(
                    f"{what} returned NaN. With m_a = m_b = −inf, m = max(m_a, m_b) is −inf too, "
                    "and exp(m_a − m) = exp(−inf + inf) is NaN. Such a factor multiplies l = 0 "
                    "and acc = 0: make it 0 where the state's maximum is −inf (for example with "
                    "np.where), so that two empty states merge into the empty state"
                )
            if ((l_sum != 0) & np.isfinite(m)).any() or (acc != 0).any():
                raise kit.Mistake(
                    f"{what} returned m = {m}, l = {np.round(l_sum, 6)}: two states of no keys "
                    "merge into the state of no keys, whose softmax denominator e^m · l is 0 "
                    "(l = 0, or m = −inf) and whose acc is 0"
                )
            return
        all_scores = sb if sa is None else np.concatenate([sa, sb], axis=-1)
        all_values = values_b if sa is None else np.concatenate([values_a, values_b])
        true_m, true_l, true_acc = online_softmax.softmax_state(all_scores, all_values)
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
        for label, state in (("state_a", state_a), ("state_b", state_b)):
            if all(kit.equal(part, given) for part, given in zip(result, state, strict=True)):
                raise kit.Mistake(
                    f"{what} returned {label} as it was: the merged state describes the keys "
                    "of both states, so both must go into it"
                )
        if kind != "empty" and np.allclose(m, state_a[0] + state_b[0]):
            raise kit.Mistake(
                f"{what} returned m = m_a + m_b: m is the largest score of the keys of both "
                "states, max(m_a, m_b)"
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
            "Your merge is right: both states measured from one reference point (the larger "
            "maximum, for example) and added. It is associative, so blocks can be merged in any "
            "grouping — on a GPU, in parallel."
        )

    return kit.run_checks(checks)


def _ch11_causal(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, diagonal: int = 0, scale: float | None = None
) -> np.ndarray:
    """Attention in which query ``i`` sees the keys ``j ≤ i + diagonal``."""
    allowed = np.tril(np.ones((len(q), len(k)), dtype=bool), k=diagonal)  # (T, T)
    return attention.scaled_dot_product_attention(q, k, v, mask=allowed, scale=scale)[0]


def _ch11_blocked_slip(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, block_size: int, slip: str
) -> np.ndarray:
    """Causal attention tile by tile with one slip: ``"stale acc"``, ``"stale sum"`` or
    ``"stale both"`` (not rescaled when the running maximum grows), ``"own max"`` (each tile's
    exponentials from its own maximum, added as they are), ``"tile mask"`` (every tile masked
    by ``np.tril`` in its own coordinates), ``"no diagonal"`` (only the key blocks before the
    query block: the first block's rows are NaN) or ``"unnormalised"`` (acc not divided by l)."""
    n_tokens = len(q)
    output = np.zeros((n_tokens, v.shape[-1]))  # (T, D_v)
    for q_start in range(0, n_tokens, block_size):
        rows = np.arange(q_start, min(q_start + block_size, n_tokens))  # (b_q,)
        m, total = np.full(rows.size, -np.inf), np.zeros(rows.size)  # (b_q,) each
        acc = np.zeros((rows.size, v.shape[-1]))  # (b_q, D_v)
        last_key = q_start if slip == "no diagonal" else rows[-1] + 1
        for k_start in range(0, last_key, block_size):
            cols = np.arange(k_start, min(k_start + block_size, n_tokens))  # (b_k,)
            scores = q[rows] @ k[cols].T / np.sqrt(q.shape[-1])  # (b_q, b_k)
            visible = cols[None, :] <= rows[:, None]  # (b_q, b_k)
            if slip == "tile mask":
                visible = np.tril(np.ones(scores.shape, dtype=bool))  # (b_q, b_k)
            scores = np.where(visible, scores, -np.inf)
            m_new = scores.max(axis=-1) if slip == "own max" else np.maximum(m, scores.max(-1))
            weights = np.exp(scores - m_new[:, None])  # (b_q, b_k)
            factor = np.exp(m - m_new)  # (b_q,)
            total = total * (factor if slip not in ("stale sum", "stale both", "own max") else 1)
            acc = acc * (
                factor[:, None] if slip not in ("stale acc", "stale both", "own max") else 1
            )
            total, acc, m = total + weights.sum(axis=-1), acc + weights @ v[cols], m_new
        output[rows] = acc if slip == "unnormalised" else acc / total[:, None]
    return output


_CH11_RESCALE = (
    "when a tile raises the running maximum from m to m', the exponentials summed so far were "
    "taken from m: multiply the running state by exp(m − m') before adding the tile"
)


def _ch11_blocked_mistakes(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, block_size: int
) -> list[tuple[np.ndarray, str]]:
    """The catalogue of finite wrong outputs of causal blocked attention."""
    with np.errstate(all="ignore"):  # the slips may overflow where the scores are large
        slips = {
            slip: _ch11_blocked_slip(q, k, v, block_size, slip)
            for slip in ("stale acc", "stale sum", "stale both", "own max", "tile mask")
        }
        unnormalised = _ch11_blocked_slip(q, k, v, block_size, "unnormalised")
    return [
        (
            _attention(q, k, v),
            "this equals attention WITHOUT the mask: hide every key j > i from query i (−inf "
            "before the exponential, or skip it)",
        ),
        (
            _ch11_causal(q[::-1], k[::-1], v[::-1])[::-1],
            "each query saw the keys AFTER it: the mask is j ≤ i",
        ),
        (_ch11_causal(q, k, v, scale=1.0), "the scores are not divided by √D_k"),
        (
            slips["stale acc"],
            f"the accumulator is not rescaled: {_CH11_RESCALE}, the accumulator as well as l",
        ),
        (slips["stale sum"], f"the running sum l is not rescaled: {_CH11_RESCALE}, l as well"),
        (slips["stale both"], f"neither l nor the accumulator is rescaled: {_CH11_RESCALE}"),
        (
            slips["own max"],
            "each tile's exponentials were taken from that tile's own maximum and added as they "
            f"are, on different scales. Keep one running maximum per query; {_CH11_RESCALE}",
        ),
        (
            slips["tile mask"],
            "every tile was masked with np.tril in its own coordinates, as if it lay on the "
            "diagonal. A tile below the diagonal holds only earlier keys and needs no mask; "
            "compare the positions in the sequence, key j0 + c ≤ query i0 + r",
        ),
        (
            unnormalised,
            "the output is the accumulator, not divided by the running sum l: divide once, "
            "after the query block's last tile",
        ),
    ]


def _ch11_explain_blocked(
    got: np.ndarray,
    expected: np.ndarray,
    arrays: tuple[np.ndarray, np.ndarray, np.ndarray],
    block_size: int,
    what: str,
) -> None:
    """Name the slip behind a wrong output of the expected shape, NaN or not."""
    q, k, v = arrays
    n_tokens = len(q)
    if kit.equal(got, expected, atol=1e-6):
        return
    with np.errstate(all="ignore"):
        no_diagonal = _ch11_blocked_slip(q, k, v, block_size, "no diagonal")
    if n_tokens > block_size and kit.equal(got[block_size:], no_diagonal[block_size:]):
        raise kit.Mistake(
            f"{what} skipped the diagonal tiles, where a block of queries meets its own block "
            "of keys. They hold each query's own key and the keys just before it (j0 < i1 "
            "holds for j0 = i0), and the first block of queries sees no other key: compute "
            "them, and mask inside them"
        )
    if kit.equal(got[1:], _ch11_causal(q, k, v, diagonal=-1)[1:]):
        raise kit.Mistake(f"{what} hides the diagonal too: query i may attend key i itself (j ≤ i)")
    if np.isfinite(got).all():
        kit.match_known_mistakes(got, expected, _ch11_blocked_mistakes(q, k, v, block_size), what)
    full = n_tokens // block_size * block_size  # the rows of the whole blocks
    tail = got[full:]  # the rows of the last, shorter block
    allowed = np.tril(np.ones((n_tokens, n_tokens), dtype=bool)) & (np.arange(n_tokens) < full)
    keys_dropped = attention.scaled_dot_product_attention(q, k, v, mask=allowed)[0][full:]
    dropped = (~np.isfinite(tail)).all() or not tail.any() or kit.equal(tail, keys_dropped)
    if full < n_tokens and dropped and kit.equal(got[:full], expected[:full], atol=1e-6):
        rows = (
            f"the rows of the last, shorter block ({full} … {n_tokens - 1}) are wrong and the "
            f"others right. T = {n_tokens} is not a multiple of block_size = {block_size}, so "
            f"the last block of queries, and of keys, holds only {n_tokens - full}"
            if full
            else f"every row is wrong. T = {n_tokens} is shorter than block_size = "
            f"{block_size}, so the one block of queries, and of keys, holds only {n_tokens}"
        )
        raise kit.Mistake(
            f"{what}: {rows}: loop with range(0, T, block_size) and end each block at T"
        )


def check_causal_blocked_attention(causal_blocked_attention: Callable[..., Any]) -> kit.Feedback:
    """Check causal attention computed block by block with online softmax (ch. 11, ex. 4).

    Expected signature: ``causal_blocked_attention(q, k, v, block_size) -> output`` for one
    sequence, equal to ``softmax(Q Kᵀ / √D_k + causal mask) V`` (query ``i`` attends keys
    ``j ≤ i``). ``T`` need not be a multiple of ``block_size``. Written with NumPy only.

    What is checked: the results (to 1e-6, so float32 passes), then the work, for ``T = 64``,
    ``block_size = 8``: the multiplications made with ``k`` are counted (``@``, ``np.dot``,
    ``np.einsum``, ``np.tensordot``, ``np.inner``, ``*`` and the method ``.dot``, through its
    slices, copies and the arrays NumPy makes from it, ``np.asarray``, ``np.pad``,
    ``np.concatenate`` …). A right result that makes more than the ``n(n + 1)/2`` tiles on and
    below the diagonal need (``n = T / block_size``: a tile in the future, or one computed
    twice) is turned down, and so is one that makes a product larger than one
    ``block_size × block_size`` tile, or that runs as many lines of Python for
    ``block_size = 4`` as for one block of all ``T = 16`` queries (``block_size`` unused), or
    whose largest product is no more than one query against a block of keys
    (``block_size · D_k``: the queries not cut into blocks).
    One whose products the checker cannot follow (numbers taken out of ``k`` as Python lists)
    is told so.

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

    def check_one(n_tokens: int, block_size: int) -> None:
        q = rng.normal(size=(n_tokens, 4)) * 3.0  # large scores: the running max matters
        k = rng.normal(size=(n_tokens, 4)) * 3.0
        v = rng.normal(size=(n_tokens, 3))
        what = f"{name}(q, k, v, block_size={block_size}) with T = {n_tokens}"
        expected = online_softmax.causal_blocked_attention(q, k, v, block_size)
        result = kit.call_quietly(
            causal_blocked_attention, q.copy(), k.copy(), v.copy(), block_size
        )
        values = kit.values_like(result, expected)
        if values is not None:
            _ch11_explain_blocked(values, expected, (q, k, v), block_size, what)
        kit.explain_non_finite(
            result,
            expected,
            what,
            "A query whose keys in a tile are all masked has a tile maximum of −inf, and "
            "exp(−inf − (−inf)) is NaN: skip the tiles that lie entirely in the future, or "
            "compute the factors only where the maximum is finite",
        )
        got = kit.as_result_array(result, expected, what)
        kit.assert_close(got, expected, what, atol=1e-6)

    def check_work() -> None:
        """The work, by behaviour: the multiplications made with the keys, the largest of them
        at once, and whether the lines of Python run depend on block_size."""
        n_tokens, block_size, d_k = 64, 8, 4
        q, k, v = (rng.normal(size=(n_tokens, d)) for d in (d_k, d_k, 3))
        counted = kit.multiplications_with(
            causal_blocked_attention, (q, k, v, block_size), index=1, depth=d_k
        )
        every_pair = n_tokens * n_tokens * d_k
        visible = n_tokens * (n_tokens + 1) // 2 * d_k  # each query against keys 0 … i
        right = f"the result is right, but {name}(q, k, v, block_size={block_size}) with T = "
        right += f"{n_tokens}"
        if counted < visible:
            raise kit.Mistake(
                f"{right}, and the checker could follow only {counted:,} of its multiplications "
                f"with the keys, fewer than causal attention needs ({visible:,}, each query "
                "against the keys up to itself), so it cannot tell which tiles it computes. It "
                "follows @, np.matmul, np.dot, np.einsum, np.tensordot, np.inner, * and the "
                "method .dot, with k, its slices and copies, and arrays made from it by NumPy "
                "(np.asarray, np.array, np.pad, np.concatenate, np.stack …), and with q and v "
                "likewise; not with Python lists or numbers taken out of k. Compute each tile "
                "with one of these products, for example q_block @ k_block.T"
            )
        n_blocks, tile = n_tokens // block_size, block_size * block_size * d_k
        needed = n_blocks * (n_blocks + 1) // 2 * tile
        if counted == every_pair:
            raise kit.Mistake(
                f"{right} made {counted:,} multiplications with the keys: T · T · D_k = "
                f"{every_pair:,}, every query against every key. The tiles that lie entirely in "
                f"the future need not be computed: {n_blocks} × {n_blocks} tiles, of which "
                f"{n_blocks * (n_blocks + 1) // 2} are needed ({needed:,} multiplications). "
                "Loop over the key blocks that start before the query block ends"
            )
        if counted > needed:
            extra = counted - needed
            tiles = (
                f" ({extra // tile} tiles of {block_size} × {block_size} more"
                + (
                    ": one for each block of queries but the last, as if the loop over the "
                    "key blocks went one block too far)"
                    if extra == (n_blocks - 1) * tile
                    else ")"
                )
                if extra % tile == 0
                else ""
            )
            if counted % needed == 0:
                tiles += f", {counted // needed} times the work of the needed tiles"
            raise kit.Mistake(
                f"{right} made {counted:,} multiplications with the keys, {extra:,} more than "
                f"the {needed:,} of the {n_blocks * (n_blocks + 1) // 2} tiles on and below the "
                f"diagonal{tiles}. A tile whose key block starts at or after the end of its "
                "query block (j0 ≥ i1) lies entirely in the future: loop over the key blocks "
                "with j0 < i1, and compute each tile once"
            )
        small = rng.normal(size=(16, d_k)), rng.normal(size=(16, d_k)), rng.normal(size=(16, 3))
        one_block = kit.python_lines(causal_blocked_attention, *small, 16)
        blocks = kit.python_lines(causal_blocked_attention, *small, 4)
        if blocks <= one_block:
            raise kit.Mistake(
                f"the result is right, but {name} ran {one_block} lines of Python for T = 16 in "
                f"one block (block_size = 16) and {blocks} in blocks of 4: it does not work "
                "block by block. Loop over the blocks of queries and, inside, over the tiles of "
                "keys up to the block's end, folding each into the running maximum, sum and "
                "accumulator"
            )
        if counted.largest > tile:
            raise kit.Mistake(
                f"{right} made a product of {counted.largest:,} multiplications with the keys at "
                f"once, more than one {block_size} × {block_size} tile of scores "
                f"(block_size² · D_k = {tile:,}): it scores many keys together instead of one "
                "tile at a time. Fold each tile into the running maximum, sum and accumulator "
                "(online softmax), then take the next"
            )
        if counted.largest <= block_size * d_k:
            raise kit.Mistake(
                f"{right} made no product of more than {counted.largest} multiplications with the "
                f"keys, one row or one column of a {block_size} × {block_size} tile "
                f"(block_size · D_k = {block_size * d_k}): it scores one query (or one key) at a "
                "time. Cut the queries into blocks too, and score a block of queries against a "
                "block of keys in one product, one tile"
            )

    def checks() -> str:
        for case in cases:
            check_one(*case)
        q, k, v = (rng.normal(size=(6, d)) for d in (4, 4, 3))  # the sizes of the cases
        kit.require_own_code(
            causal_blocked_attention,
            (q, k, v, 2),
            (*kit.COURSE_LIBRARY, *kit.TORCH),
            name,
            "the exercise asks for NumPy only, without selfattn_lib or torch",
        )
        check_work()
        return (
            "Your causal blocked attention is right, tile by tile, and it skips the tiles that "
            "lie entirely in the future: almost half of the work."
        )

    return kit.run_checks(checks)
