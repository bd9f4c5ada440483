"""Checkers for the exercises of chapter 14, what attention heads learn: the previous-token
and prefix-matching scores of a head's attention weights, the loss on the two halves of a
repeated sequence, and the copying score of a head's OV circuit.

The right answers come from :mod:`selfattn_lib.induction` (PyTorch), imported only when a
checker runs, so that importing the checkers does not import torch."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from selfattn_lib import attention, masks
from selfattn_lib.exercises import _kit as kit

#: The absolute tolerance of the scores of attention weights, which lets answers computed
#: in float32 pass; losses in bits and copying scores, computed through logarithms and
#: eigenvalues, get :data:`_CH14_LOOSE_ATOL`.
_CH14_ATOL = 1e-6
_CH14_LOOSE_ATOL = 1e-5
_CH14_BANNED = ("selfattn_lib.induction",)


def _ch14_induction() -> Any:
    """:mod:`selfattn_lib.induction` and :mod:`torch`, imported when a checker runs."""
    import torch

    from selfattn_lib import induction

    return induction, torch


def _ch14_causal_weights(
    rng: np.random.Generator, batch: int, n_heads: int, n_tokens: int
) -> np.ndarray:
    """Causal attention weights ``(B, H, T, T)`` of random queries and keys, some heads sharp
    and some flat, so that every diagonal has its own mean."""
    spread = rng.uniform(0.5, 2.5, size=(1, n_heads, 1, 1))  # (1, H, 1, 1)
    q = rng.normal(size=(batch, n_heads, n_tokens, 4)) * spread  # (B, H, T, 4)
    k = rng.normal(size=(batch, n_heads, n_tokens, 4))  # (B, H, T, 4)
    causal = masks.causal_mask(n_tokens)  # (T, T)
    return attention.scaled_dot_product_attention(q, k, k, mask=causal)[1]  # (B, H, T, T)


def _ch14_key_mean(weights: np.ndarray, queries: range, key_offset: int) -> np.ndarray:
    """Mean over the batch and ``queries`` of the weight of query ``i`` on key
    ``i + key_offset`` (wrapped around, as ``np.roll`` does): one number per head ``(H,)``."""
    rows = np.array(queries)  # (n_queries,)
    keys = (rows + key_offset) % weights.shape[-1]  # (n_queries,)
    return weights[:, :, rows, keys].mean(axis=(0, 2))  # (H,)


def _ch14_score_shape(
    result: Any, batch: int, n_heads: int, queries: str, n_queries: int, n_tokens: int, what: str
) -> None:
    """Explain a per-head score of the wrong shape: an axis not averaged, or one too many."""
    try:
        shape = np.shape(kit.plain(result))
    except (TypeError, ValueError):
        return  # not numbers: as_result_array says so
    if result is None or shape == (n_heads,):
        return
    hints = {
        (): "a single number: the mean over the heads as well. Average over the batch and the "
        "queries only",
        (batch,): "one number per sequence: the mean over the heads and the queries. Average "
        "over the batch and the queries only",
        (n_queries,): f"one number per query ({queries}): average over the queries too, and "
        "keep the heads apart",
        (batch, n_heads): "one score per sequence and head, (B, H): average over the batch "
        "(axis 0) as well",
        (n_heads, n_queries): f"one number per head and query ({queries}): average over the "
        "queries too",
        (batch, n_heads, n_queries): f"one weight per sequence, head and query ({queries}): "
        "average over the batch and the queries",
    }
    hints.setdefault(
        (n_tokens,),
        f"one number per position (T = {n_tokens}): np.diagonal (and torch.diagonal) take "
        "the diagonal of the FIRST two axes, batch and head, unless told otherwise. Take it "
        "over the last two, the queries and the keys: axis1=-2, axis2=-1",
    )
    if shape in hints:
        raise kit.Mistake(
            f"{what} returned shape {shape}, {hints[shape]} (expected one score per head, "
            f"shape (H,) = {(n_heads,)})"
        )


def _ch14_check_score(
    result: Any,
    expected: np.ndarray,
    mistakes: list[tuple[Any, str]],
    what: str,
    *,
    batch: int,
    queries: str,
    n_queries: int,
    n_tokens: int,
    score: str,
) -> None:
    """Compare a per-head ``score`` (its name) with the right one, its known slips and its
    range [0, 1]."""
    _ch14_score_shape(result, batch, len(expected), queries, n_queries, n_tokens, what)
    got = kit.as_result_array(result, expected, what)
    if kit.match_known_mistakes(got, expected, mistakes, what, atol=_CH14_ATOL):
        return
    kit.require_unrounded(got, expected, what)
    if (got > 1 + _CH14_ATOL).any() or (got < -_CH14_ATOL).any():
        raise kit.Mistake(
            f"{what} returned {kit.show(np.round(got, 4))}: a {score} score is a mean of "
            "attention weights, between 0 and 1. Did you sum where it averages?"
        )
    kit.assert_close(got, expected, what, atol=_CH14_ATOL)


def _ch14_reduction_slips(
    right: np.ndarray, batch: int, n_queries: int
) -> list[tuple[np.ndarray, str]]:
    """The right weights reduced the wrong way: summed, or averaged over the heads too."""
    return [
        (
            np.full(len(right), right.mean()),
            "every head got the same score, the mean over the heads: keep the head axis "
            "(axis 1) and average over the batch and the queries only",
        ),
        (
            right * n_queries,
            f"the weights were SUMMED over the {n_queries} queries: the score is their mean, "
            "between 0 and 1",
        ),
        (
            right * batch,
            f"the weights were SUMMED over the {batch} sequences of the batch: the score is "
            "their mean, between 0 and 1",
        ),
    ]


def _ch14_largest_share(weights: np.ndarray, queries: range, key_offset: int) -> np.ndarray:
    """The share of ``queries`` (and sequences) whose largest weight is on key ``i +
    key_offset``: a count of arg-maxes, one number per head ``(H,)``."""
    rows = np.array(queries)  # (n_queries,)
    largest = weights[:, :, rows].argmax(axis=-1)  # (B, H, n_queries)
    return (largest == rows + key_offset).mean(axis=(0, 2))  # (H,)


# --- the previous-token score ---------------------------------------------------------------

#: (B, H, T): odd sizes, one head, a batch of one, and T = 2 (a single query with a previous
#: token). The first case tells every shape apart.
_CH14_PREVIOUS_CASES = ((2, 3, 5), (1, 2, 7), (3, 1, 4), (4, 4, 2), (2, 5, 9))


def _ch14_previous_mistakes(weights: np.ndarray) -> list[tuple[Any, str]]:
    n_tokens = weights.shape[-1]
    every, later = range(n_tokens), range(1, n_tokens)
    itself = (
        "this is the weight of each query on ITSELF, the main diagonal (key i). The previous "
        "token is key i − 1, on the diagonal just below it"
    )
    query_0 = (
        "query 0 is counted, but it has no previous token: here its weight on key {key} "
        "({what}) went into the mean. Average over the queries 1 … T − 1 only, "
        f"T − 1 = {n_tokens - 1} of them"
    )
    over_t = (
        f"the mean is over all T = {n_tokens} queries, as if query 0 had a previous token "
        "(a 0 for it went into the mean: the weights of queries 1 … T − 1 divided by T, or a "
        "weight wrapped around by np.roll). Query 0 has none: average over the queries "
        f"1 … T − 1 only, T − 1 = {n_tokens - 1} of them"
    )
    right = _ch14_key_mean(weights, later, -1)
    on_previous = np.diagonal(weights, offset=-1, axis1=-2, axis2=-1)  # (B, H, T − 1)
    return [
        (_ch14_key_mean(weights, every, 0), itself),
        (_ch14_key_mean(weights, later, 0), itself),
        (
            np.zeros(weights.shape[1]),
            "it is 0 for every head: these are weights of query i on key i + 1, the NEXT "
            "token (the diagonal above the main one), which the causal mask hides. The "
            "previous token is key i − 1, on the diagonal BELOW the main one",
        ),
        (_ch14_key_mean(weights, every, -1), over_t),
        (
            right * (n_tokens - 1) / n_tokens**2,
            f"the mean is over all T × T = {n_tokens * n_tokens} entries of each head's "
            "masked matrix, most of them zeros: average the weight on key i − 1 over the "
            f"T − 1 = {n_tokens - 1} queries that have one (and over the batch)",
        ),
        (
            _ch14_largest_share(weights, later, -1),
            "this is how often key i − 1 gets the LARGEST weight of its query: the score is "
            "the mean of the weight itself, so a head that gives the previous token 0.6 of "
            "its attention scores 0.6",
        ),
        (
            (weights[:, :, 0, 0].mean(axis=0) + (n_tokens - 1) * right) / n_tokens,
            query_0.format(key=0, what="its weight on itself, always 1"),
        ),
        (
            np.median(on_previous, axis=(0, 2)),
            "this is the MEDIAN of the weights on key i − 1: the score is their mean",
        ),
        (
            (on_previous / (1 - np.diagonal(weights, axis1=-2, axis2=-1)[..., 1:])).mean(
                axis=(0, 2)
            ),
            "each weight on key i − 1 was divided by what the query does not keep on itself, "
            "1 − (weight on key i): the score is the weight itself, a share of ALL its "
            "attention, not of the attention it gives other tokens",
        ),
        (
            weights[:, :, -1, 0].mean(axis=0) / n_tokens,
            "it reads query i − 1 on key i, ABOVE the diagonal (the future, always 0), "
            "except for a wrapped-around weight of the last query: the queries were rolled "
            "(axis -2). Query i's previous token is key i − 1, the diagonal below the main one",
        ),
        *_ch14_reduction_slips(right, weights.shape[0], n_tokens - 1),
    ]


def check_previous_token_score(previous_token_score: Callable[..., Any]) -> kit.Feedback:
    """Check a head's previous-token score (chapter 14, exercise 1).

    Expected signature: ``previous_token_score(weights: np.ndarray) -> np.ndarray``: one
    layer's attention weights (causal, each row summing to one) → for each head, the mean
    weight of query ``i`` on key ``i − 1``, the token just before it, over the queries
    ``i = 1 … T − 1`` (query 0 has no previous token) and over the batch. A head that always
    attends to the previous token scores 1. Written without ``selfattn_lib.induction``
    (whose ``previous_token_scores`` is there to compare with); NumPy arrays, lists and
    torch tensors are accepted as results, float32 too.

    Shapes
    ------
    ``weights``: ``(B, H, T, T)`` with ``T ≥ 2`` → ``(H,)``.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_previous_token_score(lambda weights: None)
    ✘ Not yet. previous_token_score(weights of shape (2, 3, 5, 5)) returned None: did you
    forget the `return` statement?
    """
    name = kit.name_of(previous_token_score, "previous_token_score")
    rng = np.random.default_rng(14)

    def check_one(batch: int, n_heads: int, n_tokens: int) -> None:
        induction, torch = _ch14_induction()
        weights = _ch14_causal_weights(rng, batch, n_heads, n_tokens)  # (B, H, T, T)
        what = f"{name}(weights of shape {weights.shape})"
        expected = induction.previous_token_scores([torch.from_numpy(weights)])[0].numpy()
        result = kit.call_quietly(previous_token_score, weights.copy())
        _ch14_check_score(
            result,
            expected,
            _ch14_previous_mistakes(weights),
            what,
            batch=batch,
            queries="T − 1 = " + str(n_tokens - 1),
            n_queries=n_tokens - 1,
            n_tokens=n_tokens,
            score="previous-token",
        )

    def checks() -> str:
        for case in _CH14_PREVIOUS_CASES:
            check_one(*case)
        kit.require_own_code(
            previous_token_score,
            (_ch14_causal_weights(rng, 2, 3, 5),),
            _CH14_BANNED,
            name,
            kit.WRITE_IT_YOURSELF,
        )
        return (
            "Your previous-token score is right: the diagonal just below the main one, "
            "averaged over the queries 1 … T − 1 and the batch. A head of the first layer that "
            "scores close to 1 writes into each position which token came before it: the "
            "first half of an induction circuit."
        )

    return kit.run_checks(checks)


# --- the prefix-matching score --------------------------------------------------------------

#: (B, H, n): T = 2n tokens; n = 2 makes key i − n + 1 the previous token.
_CH14_PREFIX_CASES = ((2, 3, 4), (1, 2, 5), (3, 1, 3), (2, 4, 2), (1, 3, 7))


def _ch14_prefix_mistakes(weights: np.ndarray, n: int) -> list[tuple[Any, str]]:
    repeated = range(n, 2 * n)
    right = _ch14_key_mean(weights, repeated, 1 - n)
    key = "the token that FOLLOWED the earlier copy, key i − n + 1"
    return [
        (
            _ch14_key_mean(weights, repeated, -n),
            "this is the weight on key i − n, the EARLIER COPY of the query's own token: a "
            "duplicate-token score. Prefix matching looks one position further, at " + key,
        ),
        (
            _ch14_key_mean(weights, repeated, 2 - n),
            f"this is the weight on key i − n + 2, one position too far: look at {key}",
        ),
        (
            _ch14_key_mean(weights, range(n + 1, 2 * n), -n - 1),
            "this is the weight on key i − n − 1, the token BEFORE the earlier copy: look at "
            + key,
        ),
        (
            _ch14_key_mean(weights, repeated, -1),
            "this is the previous-token score of the repeated half (key i − 1): prefix "
            f"matching looks back n − 1 positions, at {key}",
        ),
        (
            _ch14_key_mean(weights, range(n - 1, 2 * n), 1 - n),
            f"query n − 1 = {n - 1}, the last of the FIRST half, went into the mean (its key "
            "is token 0). The score averages over the n queries of the repeated half, "
            f"i = n … 2n − 1 = {n} … {2 * n - 1}",
        ),
        (
            _ch14_key_mean(weights, range(n - 1, 2 * n - 1), 1 - n),
            f"it counts query n − 1 = {n - 1}, the last of the FIRST half (its key is token "
            f"0), and leaves out the last query, 2n − 1 = {2 * n - 1}: the diagonal starts at "
            "query n − 1, so drop its FIRST entry. The score averages over the n queries of "
            f"the repeated half, i = n … 2n − 1 = {n} … {2 * n - 1}",
        ),
        (
            _ch14_key_mean(weights, range(2 * n), 1 - n),
            "the queries of the first half went into the mean (their keys i − n + 1 wrapped "
            "around to the future, where every weight is 0). The score averages over the n "
            f"queries of the repeated half, i = n … 2n − 1 = {n} … {2 * n - 1}",
        ),
        (
            _ch14_key_mean(weights, range(n + 1, 2 * n), 1 - n),
            f"query n = {n}, the first of the repeated half, is left out: the mean covers "
            f"n − 1 queries. Average over all n queries i = n … 2n − 1 = {n} … {2 * n - 1}",
        ),
        (
            _ch14_key_mean(weights, range(n, 2 * n - 1), 1 - n),
            f"the last query, 2n − 1 = {2 * n - 1}, is left out: the mean covers n − 1 "
            f"queries. Average over all n queries i = n … 2n − 1 = {n} … {2 * n - 1}",
        ),
        (
            right / 2,
            f"the mean is over all 2n = {2 * n} queries, those of the first half counted as "
            "0: average over the n queries of the repeated half only, "
            f"i = n … 2n − 1 = {n} … {2 * n - 1}",
        ),
        (
            np.median(np.diagonal(weights, offset=1 - n, axis1=-2, axis2=-1)[..., 1:], axis=(0, 2)),
            "this is the MEDIAN of the weights on key i − n + 1: the score is their mean",
        ),
        (
            _ch14_largest_share(weights, repeated, 1 - n),
            "this is how often key i − n + 1 gets the LARGEST weight of its query: the score "
            "is the mean of the weight itself",
        ),
        (
            np.zeros(weights.shape[1]),
            "it is 0 for every head: these are weights on keys AFTER their queries (the "
            "wrong half: for example queries of the first half on keys of the second), which "
            "the causal mask hides. The queries are those of the repeated half, "
            f"i = n … 2n − 1, and each looks back at {key}",
        ),
        *_ch14_reduction_slips(right, weights.shape[0], n),
    ]


def check_prefix_matching_score(prefix_matching_score: Callable[..., Any]) -> kit.Feedback:
    """Check a head's prefix-matching score (chapter 14, exercise 2).

    Expected signature: ``prefix_matching_score(weights: np.ndarray, half_length: int) ->
    np.ndarray``: one layer's attention weights on sequences of ``T = 2n`` tokens whose
    second half repeats the first (``n = half_length``) → for each head, the mean weight of
    query ``i`` on key ``i − n + 1``, the token that followed the earlier occurrence of the
    query's token, over the queries of the repeated half, ``i = n … 2n − 1``, and over the
    batch. An induction head scores close to 1. Written without ``selfattn_lib.induction``
    (whose ``prefix_matching_scores`` is there to compare with); NumPy arrays, lists and
    torch tensors are accepted as results, float32 too.

    Shapes
    ------
    ``weights``: ``(B, H, 2n, 2n)``, ``half_length``: ``n`` ≥ 1 → ``(H,)``.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_prefix_matching_score(lambda weights, half_length: None)
    ✘ Not yet. prefix_matching_score(weights of shape (2, 3, 8, 8), half_length=4) returned
    None: did you forget the `return` statement?
    """
    name = kit.name_of(prefix_matching_score, "prefix_matching_score")
    rng = np.random.default_rng(1400)

    def check_one(batch: int, n_heads: int, n: int) -> None:
        induction, torch = _ch14_induction()
        weights = _ch14_causal_weights(rng, batch, n_heads, 2 * n)  # (B, H, 2n, 2n)
        what = f"{name}(weights of shape {weights.shape}, half_length={n})"
        expected = induction.prefix_matching_scores([torch.from_numpy(weights)], n)[0].numpy()
        result = kit.call_quietly(prefix_matching_score, weights.copy(), n)
        _ch14_check_score(
            result,
            expected,
            _ch14_prefix_mistakes(weights, n),
            what,
            batch=batch,
            queries=f"n = {n}",
            n_queries=n,
            n_tokens=2 * n,
            score="prefix-matching",
        )

    def checks() -> str:
        for case in _CH14_PREFIX_CASES:
            check_one(*case)
        kit.require_own_code(
            prefix_matching_score,
            (_ch14_causal_weights(rng, 2, 3, 8), 4),
            _CH14_BANNED,
            name,
            kit.WRITE_IT_YOURSELF,
        )
        return (
            "Your prefix-matching score is right: on the repeated half, the weight of query i "
            "on key i − n + 1, the token that followed the earlier copy of its own token. An "
            "induction head scores close to 1, but the score does not say how a head finds "
            "that key: by the token before it, or by its position alone (Honest limits)."
        )

    return kit.run_checks(checks)


# --- the loss on the two halves -------------------------------------------------------------

#: (B, n, V): T = 2n tokens; n = 2 leaves one prediction in each half.
_CH14_HALF_CASES = ((3, 5, 7), (1, 4, 6), (2, 2, 5), (4, 7, 11))


def _ch14_half_inputs(
    rng: np.random.Generator, batch: int, n: int, vocab_size: int
) -> tuple[np.ndarray, np.ndarray]:
    """Repeated random tokens ``(B, 2n)`` and the logits ``(B, 2n − 1, V)`` of a model that
    has learned to copy: on the repeated half they favour the right next token."""
    first_half = rng.integers(vocab_size, size=(batch, n))  # (B, n)
    tokens = np.concatenate([first_half, first_half], axis=1)  # (B, 2n)
    logits = rng.normal(scale=1.5, size=(batch, 2 * n - 1, vocab_size))  # (B, 2n - 1, V)
    rows = np.arange(batch)[:, None]  # (B, 1)
    positions = np.arange(n, 2 * n - 1)[None, :]  # (1, n - 1): predictions of n + 1 … 2n − 1
    logits[rows, positions, tokens[:, n + 1 :]] += 4.0
    return logits, tokens


def _ch14_half_mistakes(
    logits: np.ndarray, tokens: np.ndarray
) -> tuple[np.ndarray, list[tuple[Any, str]], list[tuple[Any, str]], list[tuple[Any, str]]]:
    """The right pair in bits, the slips of the whole pair, and those of each half."""
    induction, torch = _ch14_induction()
    n = tokens.shape[1] // 2
    logits_t, tokens_t = torch.from_numpy(logits), torch.from_numpy(tokens)
    losses = induction._token_losses(logits_t, tokens_t)  # (B, 2n − 1) nats

    def bits(token_losses: Any) -> np.ndarray:
        return np.array(induction._half_means(token_losses, n)) / math.log(2)

    def picked(log_probabilities: Any) -> Any:  # minus the entries of the targets
        return -log_probabilities.gather(-1, tokens_t[:, 1:, None])[..., 0]  # (B, 2n − 1)

    expected = bits(losses)  # (2,)
    unshifted = np.concatenate([tokens[:, :1], tokens[:, :-1]], axis=1)  # (B, 2n)
    everything = np.full(2, losses.mean().item() / math.log(2))
    in_bits = losses.numpy() / math.log(2)  # (B, 2n − 1)
    pair = [
        (
            expected * math.log(2),
            "these are nats (natural logarithms), not bits: divide by ln 2 (or take log2), "
            "so that guessing among V tokens costs log2 V bits",
        ),
        (
            2.0**expected,
            "these are perplexities, 2 to the power of the bits (e to the power of the nats): "
            "return the mean loss in bits per token itself",
        ),
        (
            expected * math.log(2) / math.log(10),
            "these are losses in base-10 logarithms: the losses are in bits, base 2",
        ),
        (
            bits(induction._token_losses(logits_t, torch.from_numpy(unshifted))),
            "logits[:, t] was compared with tokens[:, t], the token it reads. It predicts the "
            "NEXT one, tokens[:, t + 1]: shift the targets by one",
        ),
        (
            bits(picked(logits_t)),
            "the loss is minus the raw logit of the right token: logits are not "
            "log-probabilities. Take the log-softmax over the vocabulary first (subtract "
            "each row's log-sum-exp)",
        ),
        (
            bits(picked(torch.log_softmax(logits_t, dim=1))),
            "the log-softmax was taken over the positions (axis 1): each prediction is a "
            "distribution over the vocabulary, the LAST axis",
        ),
        (
            everything,
            "both halves got the same number, the mean loss over every prediction: the "
            "first half and the repeated half are means over different predictions",
        ),
        (
            np.full(2, expected.mean()),
            "both halves got the same number, the mean over both halves: the first half and "
            "the repeated half are two separate means",
        ),
        (
            expected[::-1],
            "the halves are swapped: return (first half, repeated half), the first half "
            "first (the repeated half is the one an induction head makes cheap)",
        ),
        (
            expected * (n - 1),
            f"each half is a SUM over its n − 1 = {n - 1} predictions of a sequence (bits "
            "per sequence), averaged over the batch: the loss is a mean per token, bits per "
            "token, so average over the predictions too",
        ),
        (
            expected * (n - 1) * len(tokens),
            f"each half is a SUM over its n − 1 = {n - 1} predictions and the "
            f"{len(tokens)} sequences: the loss is a mean per token, bits per token",
        ),
        (
            bits(-(torch.softmax(logits_t, -1) * torch.log_softmax(logits_t, -1)).sum(-1)),
            "this is the ENTROPY of each prediction, −Σ p log2 p over the vocabulary, which "
            "ignores the token that came: the loss is −log2 of the probability the model "
            "gave to the right next token, tokens[:, t + 1]",
        ),
    ]
    # Each explanation continues "…: the first half" or "…: the repeated half".
    token_n = (
        f"counts the prediction of token n = {n}, the first of the copy. Its predecessor is "
        "the last token of the first half, which had no successor yet, so it belongs to "
        f"neither half: each half is the mean of n − 1 = {n - 1} predictions per sequence"
    )
    shifted = (
        "is shifted by one token: entry t of the losses, from logits[:, t], is the "
        "prediction of token t + 1. The {half} half is the predictions of tokens {span}"
    )
    first_span, repeated_span = (
        f"1 … n − 1 = 1 … {n - 1}",
        f"n + 1 … 2n − 1 = {n + 1} … {2 * n - 1}",
    )
    summed = (
        "is a SUM over its predictions per sequence, averaged over the batch: the loss is a "
        "mean per token, bits per token"
    )
    probabilities = np.exp(-losses.numpy())  # (B, 2n − 1): the probability of each target
    log_of_mean = (
        "is minus the log of the MEAN probability of its predictions: the loss is the mean "
        "of −log2 p, the log first, then the mean"
    )
    first = [
        (in_bits[:, :n].mean(), token_n),
        (in_bits[:, 1:n].mean(), shifted.format(half="first", span=first_span)),
        (in_bits[:, : n - 1].sum(axis=1).mean(), summed),
        (-np.log2(probabilities[:, : n - 1].mean()), log_of_mean),
    ]
    if n > 2:
        first.append(
            (
                in_bits[:, : n - 2].mean(),
                f"leaves out the prediction of token n − 1 = {n - 1}, the last of the first "
                f"half: the first half is the predictions of tokens {first_span}",
            )
        )
    repeated = [
        (in_bits[:, n - 1 :].mean(), token_n),
        (
            in_bits[:, n - 1 : -1].mean(),
            "averages the predictions of tokens n … 2n − 2: token n, the first of the copy, "
            "belongs to neither half, and the last token, 2n − 1, is part of the repeated "
            f"half, the predictions of tokens {repeated_span}",
        ),
    ]
    repeated += [
        (in_bits[:, n:].sum(axis=1).mean(), summed),
        (-np.log2(probabilities[:, n:].mean()), log_of_mean),
    ]
    if n > 2:  # with n = 2 the repeated half is one prediction: nothing is left to shift into
        repeated += [
            (in_bits[:, n + 1 :].mean(), shifted.format(half="repeated", span=repeated_span)),
            (
                in_bits[:, n:-1].mean(),
                f"leaves out the prediction of the last token, 2n − 1 = {2 * n - 1}: the "
                f"repeated half is the predictions of tokens {repeated_span}",
            ),
        ]
    return expected, pair, first, repeated


def _ch14_half_pair(result: Any, batch: int, what: str) -> tuple[Any, Any]:
    """The pair ``(first, repeated)`` of the learner's result: a tuple, a list or an array of
    two numbers."""
    value = kit.plain(kit.require_result(result, what))
    try:
        shape = np.shape(value)
    except (TypeError, ValueError):
        shape = ()
    if not isinstance(value, tuple | list) and shape[:1] == (2,):
        first, repeated = value[0], value[1]  # an array: its two rows
    else:
        first, repeated = kit.as_tuple(result, 2, what, "a pair of numbers (first, repeated)")
    for part in (first, repeated):
        try:
            shape = np.shape(kit.plain(part))
        except (TypeError, ValueError):
            continue
        if shape == (batch,) and batch > 1:
            raise kit.Mistake(
                f"{what} returned one loss per sequence, shape {shape}: average over the "
                "batch too, so that each half is a single number"
            )
    return first, repeated


def check_half_losses(half_losses: Callable[..., Any]) -> kit.Feedback:
    """Check the loss on the first and on the repeated half of a sequence (chapter 14,
    exercise 3).

    Expected signature: ``half_losses(logits: np.ndarray, tokens: np.ndarray) -> (first,
    repeated)``: ``tokens`` holds sequences of ``T = 2n`` token ids whose second half repeats
    the first, ``logits`` the model's output for ``tokens[:, :-1]`` (``logits[:, t]``
    predicts ``tokens[:, t + 1]``). Return the mean cross-entropy in bits per token of the
    first half (the predictions of tokens ``1 … n − 1``) and of the repeated half (tokens
    ``n + 1 … 2n − 1``), over the batch; token ``n``, the first of the copy, belongs to
    neither. Written without ``selfattn_lib.induction`` (whose ``in_context_loss`` computes
    the same halves from a model); a tuple, a list or an array of two numbers is accepted,
    float32 too.

    Shapes
    ------
    ``logits``: ``(B, T − 1, V)``, ``tokens``: integer ``(B, T)`` with ``T = 2n`` → two floats
    ``(first, repeated)``.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_half_losses(lambda logits, tokens: None)
    ✘ Not yet. half_losses(logits of shape (3, 9, 7), tokens of shape (3, 10)) returned None:
    did you forget the `return` statement?
    """
    name = kit.name_of(half_losses, "half_losses")
    rng = np.random.default_rng(1414)

    def check_one(batch: int, n: int, vocab_size: int) -> None:
        logits, tokens = _ch14_half_inputs(rng, batch, n, vocab_size)
        what = f"{name}(logits of shape {logits.shape}, tokens of shape {tokens.shape})"
        expected, pair, first_slips, repeated_slips = _ch14_half_mistakes(logits, tokens)
        result = kit.call_quietly(half_losses, logits.copy(), tokens.copy())
        first, repeated = _ch14_half_pair(result, batch, what)
        halves = (f"{what}: the first half", f"{what}: the repeated half")
        explanation = (
            "Look for the log of 0 (a probability that underflowed: take the log-softmax as "
            "the logits minus their log-sum-exp) or for 0/0"
        )
        got = np.zeros(2)
        for index, (part, label) in enumerate(zip((first, repeated), halves, strict=True)):
            kit.explain_non_finite(part, np.zeros(()), label, explanation)
            got[index] = kit.as_result_array(part, np.zeros(()), label)
        if kit.match_known_mistakes(got, expected, pair, what, atol=_CH14_LOOSE_ATOL):
            return
        for value, right, slips, label in zip(
            got, expected, (first_slips, repeated_slips), halves, strict=True
        ):
            if not kit.match_known_mistakes(
                value, right, slips, label, atol=_CH14_LOOSE_ATOL, joiner=" "
            ):
                kit.require_unrounded(value, right, label)
                kit.assert_close(value, right, f"{label} (in bits)", atol=_CH14_LOOSE_ATOL)

    def checks() -> str:
        for case in _CH14_HALF_CASES:
            check_one(*case)
        kit.require_own_code(
            half_losses,
            _ch14_half_inputs(rng, 2, 3, 5),
            _CH14_BANNED,
            name,
            kit.WRITE_IT_YOURSELF,
        )
        return (
            "Your halves are right, in bits per token. A model that can only guess among V "
            "tokens pays log2 V bits on both; once an induction head has formed, the repeated "
            "half costs close to 0 bits. The difference is the in-context gain."
        )

    return kit.run_checks(checks)


# --- the copying score of an OV circuit -----------------------------------------------------

#: (V, D, D_h, the non-zero eigenvalues of the circuit or None for random weights). The first
#: circuit has a negative eigenvalue larger than the others, a positive one and a complex
#: pair; V > D > D_h, so the V × V circuit has V − D_h zero eigenvalues.
_CH14_COPYING_CASES = (
    (9, 6, 4, (-3.0, 2.5, complex(0.8, 1.5))),
    (11, 8, 3, None),
    (7, 5, 1, None),
    (13, 10, 5, None),
    (6, 4, 2, (complex(-0.5, 2.0),)),
)


def _ch14_ov_weights(
    rng: np.random.Generator, vocab_size: int, d_model: int, d_head: int, eigenvalues: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``W_E (V, D)``, ``W_V (D, D_h)``, ``W_O (D_h, D)``, ``W_U (D, V)``; with
    ``eigenvalues`` (reals, and complex numbers standing for a conjugate pair), ``W_O`` is
    chosen so that the circuit ``W_E W_V W_O W_U`` has exactly those non-zero eigenvalues."""
    w_e = rng.normal(size=(vocab_size, d_model))  # (V, D)
    w_v = rng.normal(size=(d_model, d_head)) / math.sqrt(d_model)  # (D, D_h)
    w_o = rng.normal(size=(d_head, d_model)) / math.sqrt(d_head)  # (D_h, D)
    w_u = rng.normal(size=(d_model, vocab_size)) / math.sqrt(d_model)  # (D, V)
    if eigenvalues is None:
        return w_e, w_v, w_o, w_u
    blocks = np.zeros((d_head, d_head))  # (D_h, D_h): a real block for each eigenvalue
    index = 0
    for value in eigenvalues:
        if isinstance(value, complex):  # a 2 × 2 rotation-and-scaling block: a ± bi
            blocks[index : index + 2, index : index + 2] = [
                [value.real, -value.imag],
                [value.imag, value.real],
            ]
            index += 2
        else:
            blocks[index, index] = value
            index += 1
    basis = rng.normal(size=(d_head, d_head))  # (D_h, D_h), invertible
    small = basis @ blocks @ np.linalg.inv(basis)  # (D_h, D_h): the circuit's eigenvalues
    # The circuit's non-zero eigenvalues are those of (W_O W_U)(W_E W_V) = W_O A.
    through = w_u @ w_e @ w_v  # (D, D_h)
    w_o = small @ np.linalg.pinv(through)  # (D_h, D): W_O A = small
    return w_e, w_v, w_o, w_u


def _ch14_copying_mistakes(
    w_e: np.ndarray, w_v: np.ndarray, w_o: np.ndarray, w_u: np.ndarray, expected: float
) -> list[tuple[Any, str]]:
    induction, torch = _ch14_induction()

    def score_of(left: np.ndarray, right: np.ndarray) -> float:  # the circuit left @ right
        return induction._copying_score(torch.from_numpy(left), torch.from_numpy(right))

    circuit = w_e @ w_v @ w_o @ w_u  # (V, V)
    eigenvalues = np.linalg.eigvals(circuit)  # (V,) complex
    trace = float(np.trace(circuit))
    symmetric = np.linalg.eigvalsh(circuit)  # (V,): from the lower triangle only
    largest = eigenvalues[np.argmax(np.abs(eigenvalues))]
    real = eigenvalues[np.abs(eigenvalues.imag) < 1e-9].real  # the real eigenvalues only
    return [
        (
            float(real.sum() / np.abs(real).sum()),
            "only the REAL eigenvalues were counted: the complex ones (in conjugate pairs) "
            "count too, in the numerator with their real parts, which add up, and in the "
            "denominator with their moduli |λ|",
        ),
        (
            trace / np.abs(circuit).sum(),
            "this is the trace divided by the sum of |entries| of the whole circuit: the "
            "denominator is Σ |λ| over its eigenvalues",
        ),
        (
            abs(trace) / np.abs(eigenvalues).sum(),
            "the numerator is |Σ λ|, which is never negative: the score is Σ λ / Σ |λ|, "
            "negative for a head whose circuit lowers what it reads",
        ),
        (
            trace / np.abs(eigenvalues).max(),
            "the denominator is the largest |λ| only: it is Σ |λ|, the sum over every "
            "eigenvalue, so that the score lies between -1 and 1",
        ),
        (
            1.0,
            f"it is 1.0, but this circuit scores {expected:.4f} (it has negative or complex "
            "eigenvalues). A result of exactly 1 is a sum divided by itself: singular "
            "values (never negative) instead of eigenvalues, or the real parts Re λ in the "
            "denominator (they sum to the trace, like the λ). The denominator is Σ |λ|, the "
            "modulus of each complex eigenvalue",
        ),
        (
            trace / np.sqrt((np.abs(eigenvalues) ** 2).sum()),
            "the denominator is √(Σ |λ|²), the length of the vector of eigenvalues: it is "
            "Σ |λ|, the sum of their moduli, so that a pure copy scores 1",
        ),
        (
            float(np.abs(eigenvalues.real).sum() / np.abs(eigenvalues).sum()),
            "the numerator is Σ |Re λ|, which is never negative: it is Σ λ (its real part), "
            "where a negative eigenvalue counts against the score",
        ),
        (
            trace / np.abs(eigenvalues.real).sum(),
            "the denominator is Σ |Re λ|, the real parts only: it is Σ |λ|, the modulus of "
            "each complex eigenvalue, √(Re² + Im²)",
        ),
        (
            trace / np.linalg.norm(circuit),
            "this is the trace divided by the Frobenius norm of the circuit: the score is "
            "Σ λ / Σ |λ| over its eigenvalues",
        ),
        (
            trace / np.abs(np.diag(circuit)).sum(),
            "this is the trace divided by Σ |diagonal|: the diagonal sums to Σ λ, but its "
            "entries are not the eigenvalues. Divide by Σ |λ| over the eigenvalues",
        ),
        (
            trace / np.linalg.svd(circuit, compute_uv=False).sum(),
            "the denominator is the sum of the singular values: it is Σ |λ| over the "
            "eigenvalues (for a matrix that is not symmetric they differ)",
        ),
        (
            trace,
            "this is Σ λ, the trace, not divided by Σ |λ|: the score lies between -1 and 1",
        ),
        (
            float(np.sign(largest.real)),
            "it is the sign of the largest eigenvalue only: the score weighs every "
            "eigenvalue, Σ λ / Σ |λ|",
        ),
        (
            float(symmetric.sum() / np.abs(symmetric).sum()),
            "np.linalg.eigvalsh (or eigh) assumes a symmetric matrix and reads only its lower "
            "triangle: the circuit is not symmetric, use np.linalg.eigvals",
        ),
        (
            score_of(w_v, w_o),
            "this is the score of W_V W_O alone (D × D), which leaves out the embedding and "
            "the unembedding: the circuit goes from token to token, W_E W_V W_O W_U (V × V)",
        ),
        (
            score_of(w_e, w_u),
            "this is the score of W_E W_U, the path from token to logits that skips the "
            "head: the head's circuit is W_E W_V W_O W_U",
        ),
    ]


def check_copying_score(copying_score: Callable[..., Any]) -> kit.Feedback:
    """Check a head's copying score (chapter 14, exercise 4).

    Expected signature: ``copying_score(w_e, w_v, w_o, w_u) -> float``: with the matrices in
    the ``x @ W`` convention (the embedding ``W_E``, the head's value and output matrices
    ``W_V`` and ``W_O``, the unembedding ``W_U``), the score ``Σ λ / Σ |λ|`` over the
    eigenvalues ``λ`` of the head's OV circuit ``W_E W_V W_O W_U`` (``|λ|`` is the modulus
    of a complex eigenvalue), a real number between -1 and 1. Written without
    ``selfattn_lib.induction`` (whose ``copying_scores`` computes it from a model); a float,
    a NumPy number or a 0-dimensional array or tensor is accepted.

    Shapes
    ------
    ``w_e``: ``(V, D)``, ``w_v``: ``(D, D_h)``, ``w_o``: ``(D_h, D)``, ``w_u``: ``(D, V)`` →
    a float.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_copying_score(lambda w_e, w_v, w_o, w_u: None)
    ✘ Not yet. copying_score(w_e of shape (9, 6), w_v of shape (6, 4), w_o of shape (4, 6),
    w_u of shape (6, 9)) returned None: did you forget the `return` statement?
    """
    name = kit.name_of(copying_score, "copying_score")
    rng = np.random.default_rng(14014)

    def check_one(vocab_size: int, d_model: int, d_head: int, eigenvalues: Any) -> None:
        induction, torch = _ch14_induction()
        matrices = _ch14_ov_weights(rng, vocab_size, d_model, d_head, eigenvalues)
        w_e, w_v, w_o, w_u = matrices
        what = (
            f"{name}(w_e of shape {w_e.shape}, w_v of shape {w_v.shape}, w_o of shape "
            f"{w_o.shape}, w_u of shape {w_u.shape})"
        )
        expected = induction._copying_score(
            torch.from_numpy(w_e @ w_v), torch.from_numpy(w_o @ w_u)
        )
        try:
            result = kit.call_quietly(copying_score, *(matrix.copy() for matrix in matrices))
        except kit.Mistake as mistake:
            if "square" in str(mistake):
                raise kit.Mistake(
                    f"{mistake}. Eigenvalues need a square matrix: the circuit "
                    "W_E W_V W_O W_U is V × V"
                ) from None
            raise
        value = kit.plain(kit.require_result(result, what))
        if np.iscomplexobj(value) and np.shape(value) == ():
            number = complex(value)
            if abs(number.imag) <= 1e-6 * max(1.0, abs(number.real)):  # rounding only
                raise kit.Mistake(
                    f"{what} returned a complex number, {number:.4g}: the eigenvalues of a "
                    "real matrix come in conjugate pairs, so Σ λ is real (up to rounding). "
                    "Return its real part, a float"
                )
            raise kit.Mistake(
                f"{what} returned a complex number with an imaginary part, {number:.4g}: sum "
                "EVERY eigenvalue, so that the conjugate pairs cancel, and return the real part"
            )
        got = kit.as_result_array(value, np.zeros(()), what)
        mistakes = _ch14_copying_mistakes(w_e, w_v, w_o, w_u, expected)
        if kit.match_known_mistakes(got, expected, mistakes, what, atol=_CH14_LOOSE_ATOL):
            return
        kit.require_unrounded(got, expected, what)
        kit.assert_close(got, np.float64(expected), what, atol=_CH14_LOOSE_ATOL)

    def checks() -> str:
        for case in _CH14_COPYING_CASES:
            check_one(*case)
        kit.require_own_code(
            copying_score,
            _ch14_ov_weights(rng, 9, 6, 4, None),
            _CH14_BANNED,
            name,
            kit.WRITE_IT_YOURSELF,
        )
        return (
            "Your copying score is right: Σ λ / Σ |λ| over the eigenvalues of the V × V "
            "circuit. It has rank at most D_h, and its non-zero eigenvalues are those of "
            "the D_h × D_h product (W_O W_U)(W_E W_V), far cheaper to compute for a "
            "vocabulary of 50,000 tokens. A heuristic: every circuit whose non-zero "
            "eigenvalues are real and positive scores 1, not only a copy."
        )

    return kit.run_checks(checks)
