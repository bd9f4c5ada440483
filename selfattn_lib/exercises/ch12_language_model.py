"""Checkers for the exercises of chapter 12, a GPT from the pieces: sampling and BPE."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from selfattn_lib import sampling, softmax, tokenization
from selfattn_lib.exercises import _kit as kit

_NUMPY_ONLY = "the exercise asks for NumPy only, without selfattn_lib or torch"


# --- next-token probabilities --------------------------------------------------------------


def check_next_token_probabilities(next_token_probabilities: Callable[..., Any]) -> kit.Feedback:
    """Check the distribution of the next token at a temperature (chapter 12, exercise 1).

    Expected signature: ``next_token_probabilities(logits: np.ndarray, temperature: float)
    -> np.ndarray``: for each row of logits, the probabilities of the next token at the
    temperature ``τ > 0`` (``τ = 1`` gives the model's own distribution, ``τ < 1`` a sharper
    one and ``τ > 1`` a flatter one), written with NumPy. It must work for logits of any
    size, for a single row and for a batch of rows.

    Shapes
    ------
    ``logits``: ``(V,)`` or ``(B, V)``, ``temperature``: a number → the shape of ``logits``,
    each row summing to one.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_next_token_probabilities(lambda logits, temperature: None)
    ✘ Not yet. next_token_probabilities([2.0, 1.0, 0.5, -1.0, 0.0], temperature=1) returned
    None: did you forget the `return` statement?
    """
    name = kit.name_of(next_token_probabilities, "next_token_probabilities")
    rng = np.random.default_rng(12)
    row = np.array([2.0, 1.0, 0.5, -1.0, 0.0])
    cases = (
        (row, 1.0),
        (row, 0.5),
        (row, 2.5),
        (np.array([1000.0, 1002.0, 999.0, 1001.5]), 0.8),  # exp(1000) overflows
        (rng.normal(scale=2.0, size=(3, 5)), 0.7),  # a batch of rows: B = 3, V = 5
        # Rows 2000 apart: one maximum for the whole batch leaves row 0 with 0 / 0; the
        # last row spreads over 2000, too far for subtracting its mean.
        (np.array([[0.0, 1.0, 2.0], [2000.0, 2001.0, 2002.0], [-1000.0, 0.0, 1000.0]]), 1.0),
    )

    def mistakes(logits: np.ndarray, temperature: float) -> list[tuple[Any, str]]:
        plain = softmax.softmax(logits, axis=-1)
        t = f"τ = {temperature:g}"
        found = [
            (
                plain / temperature,
                f"the probabilities were divided by {t} AFTER the softmax, so they no longer "
                "sum to 1. The temperature divides the LOGITS, before the softmax",
            ),
            (
                softmax.softmax(plain / temperature, axis=-1),
                "this is a softmax of the probabilities divided by τ: a second softmax of "
                "numbers between 0 and 1 comes out nearly uniform for τ near 1 or above, and "
                "it is not softmax(logits / τ). Divide the LOGITS by τ, then take one softmax",
            ),
            (
                plain ** (1 / temperature),
                "the probabilities raised to the power 1/τ have the right ratios, but they "
                "no longer sum to 1: divide each row by its total (or, simpler, divide the "
                "logits by τ before the softmax)",
            ),
            (
                softmax.softmax(logits / temperature**2, axis=-1),
                f"the logits were divided by {t} TWICE, that is by τ² = {temperature**2:g}: "
                "divide them by τ once, then take the softmax",
            ),
            (
                softmax.softmax(logits / math.sqrt(temperature), axis=-1),
                f"the logits were divided by √τ = {math.sqrt(temperature):.4g}, not by {t}: "
                "the temperature itself divides the logits",
            ),
            (
                softmax.softmax(logits * temperature, axis=-1),
                f"the logits were MULTIPLIED by {t}: divide them by τ, so that a temperature "
                "below 1 makes the distribution sharper and one above 1 flatter",
            ),
            (
                plain,
                f"the temperature has no effect: this is the softmax of the logits, whatever "
                "τ is (τ left out, or added to or subtracted from every logit, which the "
                f"softmax ignores). Divide the logits by {t} before the softmax",
            ),
            (
                logits / temperature
                - np.expand_dims(softmax.log_sum_exp(logits / temperature, axis=-1), -1),
                "these are LOG-probabilities (the log-softmax), which are negative and do not "
                "sum to 1: return the probabilities themselves, exp of them",
            ),
        ]
        if logits.ndim == 2:
            scaled = logits / temperature
            found += [
                (
                    softmax.softmax(scaled, axis=0),
                    "each COLUMN sums to 1, not each row: a row is the distribution of one "
                    "next token, so normalise along the last axis (axis=-1, keepdims=True)",
                ),
                (
                    np.exp(scaled - scaled.max()) / np.exp(scaled - scaled.max()).sum(),
                    "the whole batch sums to 1, not each row: a row is the distribution of one "
                    "next token, so sum along the last axis (axis=-1, keepdims=True)",
                ),
                (
                    np.exp(scaled - scaled.max(axis=-1, keepdims=True))
                    / np.exp(scaled - scaled.max(axis=-1, keepdims=True)).sum(),
                    "each row was divided by the total of the WHOLE batch, so the rows sum to "
                    "1 only together: divide each row by its own total, "
                    "sum(axis=-1, keepdims=True)",
                ),
                (
                    softmax.softmax(scaled - scaled.max(axis=0), axis=-1),
                    "the maximum subtracted was that of each COLUMN (max(axis=0)), which "
                    "shifts the logits of one row by different amounts: subtract each row's "
                    "own maximum, max(axis=-1, keepdims=True)",
                ),
            ]
        return found

    def checks() -> str:
        for logits, temperature in cases:
            shown = kit.show(logits) if logits.ndim == 1 else f"logits of shape {logits.shape}"
            what = f"{name}({shown}, temperature={temperature:g})"
            expected = sampling.temperature_probabilities(logits, temperature)
            try:
                result = kit.call_on_copy(
                    next_token_probabilities,
                    logits,
                    temperature,
                    argument="logits",
                    in_place="logits /= temperature",
                )
            except kit.Mistake as mistake:
                if logits.ndim == 2 and "broadcast" in str(mistake):
                    raise kit.Mistake(
                        f"{mistake}. For a batch of rows, keep the axis you reduce over: "
                        "max(axis=-1, keepdims=True) and sum(axis=-1, keepdims=True)"
                    ) from None
                raise
            _ch12_explain_batch_maximum(result, logits, temperature, what)
            kit.explain_non_finite(
                result,
                expected,
                what,
                "e^1000 overflows to infinity, and inf / inf is NaN. Subtract each row's "
                "largest logit first: the softmax does not change when the same number is "
                "subtracted from a whole row, and then every exponential is at most 1",
            )
            got = kit.as_result_array(result, expected, what)
            if kit.match_known_mistakes(got, expected, mistakes(logits, temperature), what):
                continue
            kit.require_unrounded(got, expected, what)
            totals = got.sum(axis=-1)
            if not np.allclose(totals, 1.0):
                sums = (
                    f"the rows of {what} sum to {kit.show(np.round(totals, 6))}"
                    if got.ndim == 2
                    else f"{what} sums to {totals:.6g}"
                )
                raise kit.Mistake(
                    f"{sums}, not 1: the probabilities of the next token sum to one over the "
                    "vocabulary"
                )
            kit.assert_close(got, expected, what)
        kit.require_own_code(
            next_token_probabilities,
            (row, 0.5),
            (*kit.COURSE_LIBRARY, *kit.TORCH),
            name,
            _NUMPY_ONLY,
        )
        return (
            "Your next-token distribution is right: softmax(logits / τ) row by row, stable "
            "for large logits. As τ → 0 it approaches greedy decoding: all the probability "
            "goes to the arg-max (shared equally if several logits tie for the largest)."
        )

    return kit.run_checks(checks)


def _ch12_explain_batch_maximum(
    result: Any, logits: np.ndarray, temperature: float, what: str
) -> None:
    """Name the slip of one maximum for the whole batch: on rows far apart, the rows far
    below the batch's maximum underflow to 0 / 0 (NaN) where each row's own maximum works."""
    values = kit.values_like(result, logits)
    if logits.ndim != 2 or values is None or np.isfinite(values).all():
        return
    scaled = logits / temperature
    with np.errstate(all="ignore"):
        exponentials = np.exp(scaled - scaled.max())  # one maximum for the whole batch
        wrong = exponentials / exponentials.sum(axis=-1, keepdims=True)
    broken = ~np.isfinite(values).all(axis=-1)  # (B,): the rows with NaN or infinity
    if not np.array_equal(broken, ~np.isfinite(wrong).all(axis=-1)):
        return
    rows = np.flatnonzero(broken).tolist()
    raise kit.Mistake(
        f"{what} returned NaN in row {', '.join(map(str, rows))}: one maximum was subtracted "
        f"for the whole batch ({scaled.max():g}), so every exponential of a row whose logits "
        "lie far below it underflows to 0, and 0 / 0 is NaN. Subtract each row's own "
        "maximum, max(axis=-1, keepdims=True)"
    )


# --- top-p filtering -----------------------------------------------------------------------


def _ch12_normalised(kept: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return kept / kept.sum()


def _ch12_prefix_mask(
    probabilities: np.ndarray, order: np.ndarray, keep_ranked: np.ndarray
) -> np.ndarray:
    keep = np.zeros(probabilities.shape, dtype=bool)  # (V,)
    keep[order] = keep_ranked
    return keep


def check_top_p_filter(top_p_filter: Callable[..., Any]) -> kit.Feedback:
    """Check nucleus (top-p) filtering of one distribution (chapter 12, exercise 2).

    Expected signature: ``top_p_filter(probabilities: np.ndarray, p: float) -> np.ndarray``
    for one row of probabilities: keep the smallest set of most probable tokens whose total
    probability is at least ``p``, set the others to 0, and renormalise so that the result
    sums to 1. The checker's probabilities have no ties at the edge of the kept set, and
    where a running total reaches ``p`` exactly it does so without rounding (powers of 2).

    Shapes
    ------
    ``probabilities``: ``(V,)``, summing to one; ``p``: a number in ``(0, 1]`` → ``(V,)``.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_top_p_filter(lambda probabilities, p: None)
    ✘ Not yet. top_p_filter([0.1, 0.35, 0.05, 0.3, 0.2], p=0.6) returned None: did you forget
    the `return` statement?
    """
    name = kit.name_of(top_p_filter, "top_p_filter")
    cases = (
        (np.array([0.1, 0.35, 0.05, 0.3, 0.2]), 0.6),
        (np.array([0.05, 0.7, 0.15, 0.1]), 0.5),  # the top token alone holds more than p
        (np.array([0.02, 0.18, 0.07, 0.25, 0.03, 0.12, 0.3, 0.03]), 0.9),
        # Exact in binary: the two most probable tokens hold p = 0.75 exactly, and are enough.
        (np.array([0.125, 0.5, 0.125, 0.25]), 0.75),
    )

    def mistakes(probabilities: np.ndarray, p: float) -> list[tuple[Any, str]]:
        order = np.argsort(-probabilities, kind="stable")  # (V,), most probable first
        running = np.cumsum(probabilities[order])  # (V,)
        too_few = _ch12_prefix_mask(probabilities, order, running < p)
        by_id = np.cumsum(probabilities) - probabilities < p  # (V,), in the order of the ids
        ascending = np.argsort(probabilities, kind="stable")
        least_first = _ch12_prefix_mask(
            probabilities,
            ascending,
            np.cumsum(probabilities[ascending]) - probabilities[ascending] < p,
        )
        expected_mask = sampling.top_p_filter(probabilities, p) > 0
        alone = (
            f". The most probable token alone holds {probabilities.max():g}, more than p = "
            f"{p:g}: it is the smallest set that reaches p. The most probable token is always kept"
            if probabilities.max() > p
            else ": the most probable token is always kept, and more until their total reaches p"
        )
        one_too_few = (
            "it keeps one token too few: it stops BEFORE the token whose probability carries "
            f"the total past p = {p:g}. That token is kept too: keep a token when the tokens "
            "before it hold less than p"
        )
        ranked = probabilities[order]  # (V,), most probable first
        reached = _ch12_prefix_mask(probabilities, order, running - ranked <= p)
        sorted_kept = np.where(running - ranked < p, ranked, 0)  # (V,) in sorted order
        return [
            (np.zeros_like(probabilities), f"it kept no token at all{alone}"),
            (
                _ch12_normalised(np.where(reached, probabilities, 0)),
                "it keeps one token too many: the tokens before the last one it keeps already "
                f"hold p = {p:g} exactly, and that is enough ('at least p'). Keep a token "
                "while the tokens before it hold LESS than p (<, not <=)",
            ),
            (
                _ch12_normalised(sorted_kept),
                "the right probabilities are kept, but the result is in SORTED order (most "
                "probable first): entry i must be token i's probability. Put the kept "
                "values back at their tokens' positions (kept[order] = …), with 0 elsewhere",
            ),
            (
                sorted_kept,
                "the result is in SORTED order (most probable first) and not renormalised: "
                "entry i must be token i's probability, and the kept ones must sum to 1",
            ),
            (
                _ch12_normalised(sorted_kept)[order],
                "the kept values were taken back with the sorting order, result = "
                "kept[order], which shuffles them again: put each one back at its token's "
                "index, result[order] = kept",
            ),
            (_ch12_normalised(np.where(too_few, probabilities, 0)), one_too_few),
            (np.where(too_few, probabilities, 0), one_too_few),
            (
                np.where(expected_mask, probabilities, 0) / p,
                f"the right tokens are kept, but divided by p = {p:g}: renormalise by their "
                f"own total, {probabilities[expected_mask].sum():g}, which is at least p, so "
                "that the result sums to 1",
            ),
            (
                np.where(expected_mask, probabilities, 0),
                "the right tokens are kept, but the result sums to "
                f"{probabilities[expected_mask].sum():g}, not 1: divide the kept "
                "probabilities by their total",
            ),
            (
                _ch12_normalised(np.where(by_id, probabilities, 0)),
                "it keeps tokens in the order of their ids (0, 1, 2, …). Take them in order of "
                "decreasing probability (np.argsort(-probabilities)), so that the kept set is "
                "the most probable tokens",
            ),
            (
                _ch12_normalised(np.where(least_first, probabilities, 0)),
                "it keeps the LEAST probable tokens: np.argsort sorts in increasing order. "
                "Sort in decreasing order, np.argsort(-probabilities)",
            ),
        ]

    def check_one(probabilities: np.ndarray, p: float) -> None:
        what = f"{name}({kit.show(probabilities)}, p={p:g})"
        expected = sampling.top_p_filter(probabilities, p)
        kept_ids = np.flatnonzero(expected > 0)
        result = kit.call_on_copy(
            top_p_filter,
            probabilities,
            p,
            argument="probabilities",
            in_place="probabilities /= probabilities.sum()",
        )
        returned = kit.plain(kit.require_result(result, what))
        values = kit.values_like(returned, expected)
        if values is None:
            try:
                ids = np.asarray(returned)
            except (TypeError, ValueError):
                ids = np.zeros(0)
            if ids.ndim == 1 and ids.size and np.array_equal(np.sort(ids), kept_ids):
                raise kit.Mistake(
                    f"{what} returned the ids of the kept tokens, {kit.show(ids)}. Return the "
                    f"filtered distribution instead, shape {expected.shape}: the kept "
                    "probabilities renormalised, and 0 for every other token"
                )
        elif np.asarray(returned).dtype == np.bool_:
            raise kit.Mistake(
                f"{what} returned a mask of the kept tokens. Return the filtered "
                "distribution: the kept probabilities renormalised, and 0 for the others"
            )
        if values is not None and not np.isfinite(values).all():
            raise kit.Mistake(
                f"{what} returned NaN: 0 / 0, the renormalisation of an empty set. The most "
                f"probable token alone holds {probabilities.max():g}"
                + (f", more than p = {p:g}" if probabilities.max() > p else "")
                + ", and the most probable token is always kept"
            )
        got = kit.as_result_array(result, expected, what)
        if kit.match_known_mistakes(got, expected, mistakes(probabilities, p), what):
            return
        kit.require_unrounded(got, expected, what)
        if not np.isclose(got.sum(), 1.0):
            raise kit.Mistake(f"{what} sums to {got.sum():.6g}, not 1: renormalise")
        got_ids = np.flatnonzero(got > 0)
        if not np.array_equal(got_ids, kept_ids):
            if got_ids.size == kept_ids.size:
                raise kit.Mistake(
                    f"{what} keeps {got_ids.size} tokens, the right number, but the tokens "
                    f"{kit.show(got_ids)} instead of the most probable ones, "
                    f"{kit.show(kept_ids)}: entry i of the result is token i's probability"
                )
            raise kit.Mistake(
                f"{what} keeps the tokens {kit.show(got_ids)}, but the smallest set of most "
                f"probable tokens whose total reaches p = {p:g} has {kept_ids.size} tokens"
            )
        kit.assert_close(got, expected, what)

    def checks() -> str:
        for probabilities, p in cases:
            check_one(probabilities, p)
        kit.require_own_code(
            top_p_filter, cases[0], kit.COURSE_LIBRARY, name, kit.WRITE_IT_YOURSELF
        )
        return (
            "Your nucleus filter is right: it keeps the most probable tokens until their total "
            "reaches p, so it keeps few tokens where the model is sure and many where it is not."
        )

    return kit.run_checks(checks)


# --- byte-pair encoding --------------------------------------------------------------------


def _ch12_replace(ids: list[int], pair: tuple[int, int], new_id: int, overlap: str) -> list[int]:
    """A wrong replacement of ``pair`` by ``new_id``, for the catalogue of mistakes:
    ``"collapse"`` merges every occurrence, overlapping ones too, and keeps one token per
    run (``x x x`` → ``xx``); ``"twice"`` gives every occurrence its own new token
    (``x x x`` → ``xx xx``); ``"right"`` scans from the right (``x x x`` → ``x xx``);
    ``"first"`` merges the first occurrence only;
    ``"skip"`` is the right replacement, for the other slips."""
    if overlap == "first":  # only the first occurrence, as str.replace(old, new, 1) does
        starts = [i for i in range(len(ids) - 1) if (ids[i], ids[i + 1]) == pair][:1]
        return [new_id if i in starts else t for i, t in enumerate(ids) if i - 1 not in starts]
    if overlap == "right":  # the right replacement of the reversed sequence, reversed back
        reversed_pair = (pair[1], pair[0])
        return tokenization.merge_pair(ids[::-1], reversed_pair, new_id).tolist()[::-1]
    starts = [i for i in range(len(ids) - 1) if (ids[i], ids[i + 1]) == pair]
    first, second = set(starts), {i + 1 for i in starts}
    if overlap == "collapse":
        return [new_id if i in first else ids[i] for i in range(len(ids)) if i not in second]
    if overlap == "twice":
        return [
            new_id if i in first else ids[i] for i in range(len(ids)) if i not in second - first
        ]
    return tokenization.merge_pair(ids, pair, new_id).tolist()


def _ch12_apply(
    ids: list[int],
    merges: list[tuple[int, int]],
    vocab_size: int,
    *,
    order: list[int] | None = None,
    overlap: str = "skip",
    first_id: int | None = None,
) -> list[int]:
    """The merges applied one after the other, with a slip (see :func:`_ch12_replace`)."""
    for index in range(len(merges)) if order is None else order:
        new_id = (vocab_size if first_id is None else first_id) + index
        ids = _ch12_replace(ids, merges[index], new_id, overlap)
    return ids


def _ch12_leftmost_first(ids: list[int], merges: list[tuple[int, int]], vocab_size: int):
    """The slip: merge the leftmost pair found in the merge table, whatever its rank."""
    table = {pair: vocab_size + index for index, pair in enumerate(merges)}
    ids = list(ids)
    while True:
        found = [i for i in range(len(ids) - 1) if (ids[i], ids[i + 1]) in table]
        if not found:
            return ids
        i = found[0]
        ids[i : i + 2] = [table[ids[i], ids[i + 1]]]


def _ch12_merge_as_read(ids: list[int], merges: list[tuple[int, int]], vocab_size: int):
    """The slip: read the tokens one by one and merge the last two whenever they are a pair
    of the table, whatever its rank."""
    table = {pair: vocab_size + index for index, pair in enumerate(merges)}
    merged: list[int] = []
    for token in ids:
        merged.append(token)
        while len(merged) > 1 and (merged[-2], merged[-1]) in table:
            merged[-2:] = [table[merged[-2], merged[-1]]]
    return merged


def _ch12_as_text(
    ids: list[int], merges: list[tuple[int, int]], vocab_size: int, *, padded: bool
) -> list[int]:
    """The slip of an encoder that works on the ids written as text, with ``str.replace``:
    unpadded, ``"1 1"`` is also found inside ``"1 11"``; padded with spaces (``" 1 1 "``),
    the space after one match is the one the next needs, so the token after each merged pair
    is skipped (``x x x x x`` → ``(xx) x (xx)``)."""
    pad = " " if padded else ""
    text = pad + " ".join(map(str, ids)) + pad
    for index, (left, right) in enumerate(merges):
        text = text.replace(f"{pad}{left} {right}{pad}", f"{pad}{vocab_size + index}{pad}")
    return [int(token) for token in text.split()]


def _ch12_pair_counts(ids: list[int], overlapping: bool = True) -> dict[tuple[int, int], int]:
    """Adjacent pairs and their counts, in the order of first occurrence; without
    ``overlapping`` (a slip), an occurrence that overlaps the previous counted one of the same
    pair is not counted."""
    counts: dict[tuple[int, int], int] = {}
    last: dict[tuple[int, int], int] = {}
    for i in range(len(ids) - 1):
        pair = (ids[i], ids[i + 1])
        if not overlapping and last.get(pair) == i - 1:
            continue
        counts[pair] = counts.get(pair, 0) + 1
        last[pair] = i
    return counts


def _ch12_train(
    ids: list[int],
    n_merges: int,
    vocab_size: int,
    *,
    tie: str = "first",
    overlap: str = "skip",
    first_id: int | None = None,
    recount: bool = True,
    overlapping_counts: bool = True,
    stop_below: int = 2,
) -> tuple[list[tuple[int, int]], list[int]]:
    """BPE training with one slip, for the catalogue of mistakes: ties to the ``"smallest"``
    pair, a wrong ``overlap`` in the replacement, new ids from ``first_id``, counts taken once
    (``recount=False``) or without overlapping pairs, or a stop when the largest count is
    below ``stop_below`` other than 2 (1 never stops early, 3 stops while a pair occurs
    twice). Returns the merges and the sequence."""
    merges: list[tuple[int, int]] = []
    counts = _ch12_pair_counts(ids, overlapping_counts)
    if not recount:
        ranked = sorted(counts, key=lambda pair: -counts[pair])  # stable: first occurrence
        return ranked[:n_merges], ids
    for index in range(n_merges):
        counts = _ch12_pair_counts(ids, overlapping_counts)
        if not counts or max(counts.values()) < stop_below:
            break
        best = max(counts.values())
        tied = [pair for pair, count in counts.items() if count == best]
        pair = tied[0] if tie == "first" else min(tied)
        new_id = (vocab_size if first_id is None else first_id) + index
        ids = _ch12_replace(ids, pair, new_id, overlap)
        merges.append(pair)
    return merges, ids


def _ch12_times(count: int) -> str:
    return {0: "nowhere", 1: "once"}.get(count, f"{count} times")


def _ch12_integers(
    result: Any, what: str, description: str, empty_shape: tuple[int, ...]
) -> np.ndarray:
    """The learner's token ids (a list, a tuple, an array, or a dict of merges in the order
    they were learned) as an int64 array with as many dimensions as ``empty_shape``."""
    values = kit.plain(kit.require_result(result, what))
    if isinstance(values, dict):
        values = list(values)  # minbpe keeps its merges in a dict: {pair: new id}
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as error:
        raise kit.Mistake(f"{what} must return {description}") from error
    if array.size == 0:
        array = array.reshape(empty_shape).astype(np.int64)
    if array.ndim != len(empty_shape) or array.shape[1:] != empty_shape[1:]:
        raise kit.Mistake(f"{what} must return {description}; got values of shape {array.shape}")
    if not np.issubdtype(array.dtype, np.integer):
        raise kit.Mistake(
            f"{what} must return integer token ids, got {array.dtype} values: token ids are "
            "whole numbers that index the vocabulary"
        )
    return array.astype(np.int64)


def _ch12_call_on_lists(function: Callable[..., Any], *args: Any) -> Any:
    """Call the learner's function with copies of the lists and complain if it changed them."""
    given = [list(arg) if isinstance(arg, list) else arg for arg in args]
    result = kit.call_quietly(function, *given)
    if any(isinstance(arg, list) and arg != copy for arg, copy in zip(args, given, strict=True)):
        raise kit.Mistake(
            "your function changed the list it was given (for example by assigning to "
            "ids[i : i + 2]): build the merged sequence as a new list, so that the caller's "
            "ids stay as they were"
        )
    return result


_OVERLAP = (
    "the pair of a merge can overlap itself: x x x holds (x, x) twice, but only one of them "
    "can be merged. Scan from the left, merge, and continue AFTER the merged pair: "
    "x x x becomes (xx) x, and x x x x becomes (xx) (xx)"
)
_WRONG_ORDER = (
    "The merges must be applied in the order they were learned: merge 0 everywhere first, "
    "then merge 1 everywhere, and so on. That is what training did, so it is what "
    "reproduces it"
)
_FROM_THE_RIGHT = (
    "it scans each merge from the RIGHT, so a run of three becomes x (xx). Training scanned "
    "from the LEFT: x x x becomes (xx) x, and the encoding must cut the same way"
)
_RULES = (
    "Check the three rules: the merges in the order they were learned, each one everywhere "
    "before the next, each scanned from the left (x x x becomes (xx) x)"
)
_SKIPS_ONE = (
    "after each merged pair it skips the next token, so a run x x x x x becomes (xx) x (xx) "
    "instead of (xx) (xx) x (str.replace on ' a b ' does this: the space after one match is "
    "the space the next match needs). Continue right after the merged pair"
)
_AS_TEXT = (
    "it matches the ids as text, so a pair such as '1 1' is also found inside '1 11' or "
    "'11 1', and an id of two digits is cut in two. Compare whole ids: ids[i] == left and "
    "ids[i + 1] == right"
)
_AS_FOUND = (
    "it merges pairs of the table as it finds them from the left, whatever their rank. "
    + _WRONG_ORDER
)
_CH12_APPLY_CASES = (
    ([1, 1, 1, 1, 1, 0, 1, 1, 1, 0], [(1, 1), (2, 2), (3, 1)], 3),
    # The training sequence of these merges: applying them must give what training ended with.
    ([0, 1, 1, 1, 2, 0, 1, 1, 1, 2], [(1, 1), (0, 3), (4, 1)], 3),
    ([0, 0, 0, 1, 0, 0, 0, 0, 0], [(0, 0)], 2),
    ([2, 1, 0, 2, 1, 0], [(0, 1), (3, 2)], 3),  # no pair of a merge occurs
    # Ids of two digits: written as text, "1 1" is also inside "1 11" and "11 1".
    ([1, 11, 1, 1, 11, 1, 5], [(1, 1), (12, 11)], 12),
    # The order decides: merge 0 takes 1 2, so merge 1's 0 1 no longer occurs.
    ([0, 1, 2], [(1, 2), (0, 1)], 3),
)


def check_apply_merges(apply_merges: Callable[..., Any]) -> kit.Feedback:
    """Check encoding with learned BPE merges (chapter 12, exercise 3).

    Expected signature: ``apply_merges(ids: list[int], merges: list[tuple[int, int]],
    vocab_size: int) -> list[int]``. ``ids`` are base token ids ``0 … vocab_size − 1``;
    ``merges`` lists the pairs a BPE training learned, in order: merge ``i`` replaced its
    pair by the new token ``vocab_size + i``. The result is the sequence encoded the way
    training encoded its own text. Pure Python is fine; lists, tuples and NumPy arrays are
    all accepted as the result.

    Shapes
    ------
    ``ids``: ``T`` ids, ``merges``: ``n_merges`` pairs → at most ``T`` ids.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_apply_merges(lambda ids, merges, vocab_size: None)
    ✘ Not yet. apply_merges([1, 1, 1, 1, 1, 0, 1, 1, 1, 0], [(1, 1), (2, 2), (3, 1)],
    vocab_size=3) returned None: did you forget the `return` statement?
    """
    name = kit.name_of(apply_merges, "apply_merges")

    def replacement_mistakes(ids: list[int], merges: list[tuple[int, int]], vocab_size: int):
        """Slips of one merge's replacement: caught on the first merge alone, where no slip
        of the order can give the same wrong answer."""
        return [
            (_ch12_apply(ids, merges, vocab_size, overlap="collapse"), _OVERLAP),
            (_ch12_apply(ids, merges, vocab_size, overlap="twice"), _OVERLAP),
            (_ch12_apply(ids, merges, vocab_size, overlap="right"), _FROM_THE_RIGHT),
            (
                _ch12_apply(ids, merges, vocab_size, overlap="first"),
                "it merges only the FIRST occurrence of each pair: a merge replaces its pair "
                "everywhere in the text, scanning from the left to the end",
            ),
            (
                _ch12_apply(ids, merges, vocab_size, first_id=0),
                f"the new tokens are numbered from 0, so they collide with the base tokens "
                f"0 … {vocab_size - 1}: merge i makes the token vocab_size + i",
            ),
            *(
                (
                    _ch12_apply(ids, merges, vocab_size, first_id=vocab_size + shift),
                    f"the new ids are off by one: merge 0 made {vocab_size + shift}, but merge i "
                    f"makes the token vocab_size + i, so merge 0 makes {vocab_size}",
                )
                for shift in (1, -1)
            ),
            (_ch12_as_text(ids, merges, vocab_size, padded=True), _SKIPS_ONE),
            (_ch12_as_text(ids, merges, vocab_size, padded=False), _AS_TEXT),
        ]

    def mistakes(ids: list[int], merges: list[tuple[int, int]], vocab_size: int):
        backwards = list(range(len(merges) - 1, -1, -1))
        retrained = _ch12_train(ids, len(merges), vocab_size)[1]
        return [
            *replacement_mistakes(ids, merges, vocab_size)[:-2],
            (
                _ch12_apply(ids, merges, vocab_size, order=backwards),
                f"the merges were applied from the last to the first. {_WRONG_ORDER}",
            ),
            (_ch12_leftmost_first(ids, merges, vocab_size), _AS_FOUND),
            (_ch12_merge_as_read(ids, merges, vocab_size), _AS_FOUND),
            (
                retrained,
                "it merges the most frequent pairs of THIS sequence, as training would: that "
                "learns new merges instead of applying the given ones. Use the pairs of "
                f"`merges`, in their order. {_WRONG_ORDER}",
            ),
            *replacement_mistakes(ids, merges, vocab_size)[-2:],  # after the order's slips
        ]

    def encoded(ids: list[int], merges: list[tuple[int, int]], vocab_size: int, what: str):
        result = _ch12_call_on_lists(apply_merges, list(ids), list(merges), vocab_size)
        return _ch12_integers(result, what, "one flat list of token ids", (0,))

    def check_one(ids: list[int], merges: list[tuple[int, int]], vocab_size: int) -> None:
        if len(merges) > 1:  # the replacement first, on the first merge alone
            first = merges[:1]
            what = f"{name}({ids}, {first}, vocab_size={vocab_size})"
            slips = replacement_mistakes(ids, first, vocab_size)
            try:
                got_first = encoded(ids, first, vocab_size, what)
            except kit.Mistake:  # no ids (None, floats …): said on the whole case below
                got_first = None
            if got_first is not None:
                kit.match_known_mistakes(
                    got_first,
                    tokenization.apply_merges(ids, first, vocab_size=vocab_size),
                    [(np.array(wrong), why) for wrong, why in slips],
                    what,
                )
        what = f"{name}({ids}, {merges}, vocab_size={vocab_size})"
        expected = tokenization.apply_merges(ids, merges, vocab_size=vocab_size)
        got = encoded(ids, merges, vocab_size, what)
        catalogue = [(np.array(wrong), why) for wrong, why in mistakes(ids, merges, vocab_size)]
        if kit.match_known_mistakes(got, expected, catalogue, what):
            return
        message = f"{what} returned {kit.show(got)}, expected {kit.show(expected)}"
        n_tokens = vocab_size + len(merges)
        if got.size and (got.min() < 0 or got.max() >= n_tokens):
            raise kit.Mistake(
                f"{message}: the ids run from 0 to vocab_size + len(merges) − 1 = {n_tokens - 1}"
            )
        expanded = tokenization.expand(got, merges, vocab_size=vocab_size)
        if not np.array_equal(expanded, ids) and np.array_equal(np.sort(expanded), np.sort(ids)):
            raise kit.Mistake(
                f"{message}: your tokens stand for the right ids, but in another order: keep "
                "the tokens in the order of the text, each merged token where its pair was"
            )
        if not np.array_equal(expanded, ids):
            raise kit.Mistake(
                f"{message}: your result stands for a different sequence (expanding its merged "
                "tokens does not give the ids back). Either tokens were lost or added, or a "
                "merged token got the wrong id: merge i makes vocab_size + i"
            )
        raise kit.Mistake(f"{message}: it stands for the same ids, cut differently. {_RULES}")

    def checks() -> str:
        for ids, merges, vocab_size in _CH12_APPLY_CASES:
            check_one(ids, merges, vocab_size)
        kit.require_own_code(
            apply_merges, _CH12_APPLY_CASES[0], kit.COURSE_LIBRARY, name, kit.WRITE_IT_YOURSELF
        )
        return (
            "Your encoder is right: it applies the merges in the order they were learned, each "
            "from left to right, so a text is cut into tokens exactly as training cut its own."
        )

    return kit.run_checks(checks)


_CH12_TRAIN_CASES = (
    ([0, 1, 1, 1, 2, 0, 1, 1, 1, 2], 3, 3),
    ([1, 1, 0, 0, 0, 2, 1, 0, 0, 0, 2], 3, 3),
    ([2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2], 2, 4),
    ([0, 1, 2, 0, 1, 2], 4, 3),  # after 2 merges no pair occurs twice: training stops
)


def check_train_bpe(train_bpe: Callable[..., Any]) -> kit.Feedback:
    """Check byte-pair-encoding training (chapter 12, exercise 4).

    Expected signature: ``train_bpe(ids: list[int], n_merges: int, vocab_size: int) ->
    list[tuple[int, int]]``. ``ids`` are base token ids ``0 … vocab_size − 1``. Each of the
    ``n_merges`` rounds counts every pair of adjacent tokens of the current sequence
    (overlapping ones too), takes the most frequent (of equal counts, the pair that occurs
    first in the sequence), gives it the new id ``vocab_size + i`` in round ``i`` and
    replaces its occurrences from left to right; it stops early when no pair occurs twice.
    The result lists the merged pairs in order. In the checker's last sequence no pair
    occurs twice after two merges, in the others some pair does in every round. Pure Python
    is fine; a list of tuples or lists, an ``(n_merges, 2)`` array or a dict of merges in
    the order learned are all accepted.

    Shapes
    ------
    ``ids``: ``T`` ids → ``n_merges`` pairs ``(left, right)``.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_train_bpe(lambda ids, n_merges, vocab_size: None)
    ✘ Not yet. train_bpe([0, 1, 1, 1, 2, 0, 1, 1, 1, 2], n_merges=3, vocab_size=3) returned
    None: did you forget the `return` statement?
    """
    name = kit.name_of(train_bpe, "train_bpe")

    def mistakes(ids: list[int], n_merges: int, vocab_size: int):
        def trained(**slip: Any) -> list[tuple[int, int]]:
            return _ch12_train(ids, n_merges, vocab_size, **slip)[0]

        return [
            (
                trained(tie="smallest"),
                "of pairs with equal counts, it took the smallest pair. Take the one that "
                "occurs FIRST in the current sequence (as max over a dict of counts does, "
                "since a dict keeps the order in which its pairs were first seen)",
            ),
            (trained(overlap="collapse"), f"in the replacement, {_OVERLAP}"),
            (trained(overlap="twice"), f"in the replacement, {_OVERLAP}"),
            (
                trained(overlap="right"),
                "in the replacement, it scans from the RIGHT, so a run of three becomes "
                "x (xx): scan from the LEFT, x x x becomes (xx) x, as the encoding of "
                "exercise 3 does",
            ),
            (
                trained(overlapping_counts=False),
                "it counts a pair only where it does not overlap the previous occurrence: "
                "count EVERY adjacent pair, x x x holds (x, x) twice (the pairs of "
                "zip(ids, ids[1:]))",
            ),
            (
                trained(recount=False),
                "its merges are the most frequent pairs of the ORIGINAL sequence. Each merge "
                "changes the sequence, and with it the counts: count the pairs again in every "
                "round, so that a pair can contain a token made by an earlier merge",
            ),
            (
                trained(first_id=0),
                f"the new tokens are numbered from 0, so they collide with the base tokens "
                f"0 … {vocab_size - 1}: round i makes the token vocab_size + i",
            ),
            *(
                (
                    trained(first_id=vocab_size + shift),
                    f"the new ids are off by one: round 0 made {vocab_size + shift}, but round "
                    f"i makes the token vocab_size + i, so round 0 makes {vocab_size}",
                )
                for shift in (1, -1)
            ),
            (
                trained(stop_below=1),
                "it goes on merging pairs that occur only once: stop early as soon as no "
                "pair occurs twice (a merge of a single pair shortens the text by one token "
                "and learns nothing that repeats)",
            ),
            (
                trained(stop_below=3),
                "it stopped while a pair still occurred twice: stop only when no pair occurs "
                "twice, that is when every count is 1",
            ),
        ]

    def check_one(ids: list[int], n_merges: int, vocab_size: int) -> None:
        what = f"{name}({ids}, n_merges={n_merges}, vocab_size={vocab_size})"
        expected = np.array(tokenization.train_bpe(ids, n_merges, vocab_size=vocab_size))
        result = _ch12_call_on_lists(train_bpe, list(ids), n_merges, vocab_size)
        got = _ch12_integers(
            result,
            what,
            "a list of pairs (left, right), one per merge, in the order they were learned",
            (0, 2),
        )
        catalogue = [
            (np.array(wrong, dtype=np.int64).reshape(-1, 2), why)
            for wrong, why in mistakes(ids, n_merges, vocab_size)
        ]
        if kit.match_known_mistakes(got, expected, catalogue, what):
            return
        if len(got) != len(expected):
            raise kit.Mistake(f"{what} returned {len(got)} merges, expected {len(expected)}")
        sequence = list(ids)
        for index, (pair, right_pair) in enumerate(
            zip(got.tolist(), expected.tolist(), strict=True)
        ):
            if pair != right_pair:
                counts = _ch12_pair_counts(sequence)
                count, best = counts.get(tuple(pair), 0), max(counts.values())
                where = f"the sequence after the merges before it, {sequence}"
                if count == best:
                    raise kit.Mistake(
                        f"{what}: merge {index} is {tuple(pair)}, one of the pairs that occur "
                        f"{best} times in {where}; of pairs with equal counts, take the one "
                        f"that occurs first: {tuple(right_pair)} occurs first"
                    )
                raise kit.Mistake(
                    f"{what}: merge {index} is {tuple(pair)}, which occurs "
                    f"{_ch12_times(count)} in {where}; the most frequent pair there occurs "
                    f"{_ch12_times(best)}"
                )
            sequence = tokenization.merge_pair(sequence, tuple(pair), vocab_size + index).tolist()
        kit.assert_close(got, expected, what)

    def checks() -> str:
        for ids, n_merges, vocab_size in _CH12_TRAIN_CASES:
            check_one(ids, n_merges, vocab_size)
        kit.require_own_code(
            train_bpe, _CH12_TRAIN_CASES[0], kit.COURSE_LIBRARY, name, kit.WRITE_IT_YOURSELF
        )
        return (
            "Your BPE training is right: count, merge the most frequent pair, count again, "
            "and stop when no pair occurs twice. Each merge shortens the text by the number "
            "of times it is merged: a run x x x x holds (x, x) three times, and merges twice."
        )

    return kit.run_checks(checks)
