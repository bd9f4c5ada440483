"""Choosing the next token from a language model's logits (chapter 12).

A language model ends with one score, a *logit*, per token of its vocabulary of ``V`` tokens.
Writing text means turning those scores into one token, again and again:

- :func:`greedy_token` takes the most likely token (the arg-max);
- :func:`temperature_probabilities` is ``softmax(logits / τ)``: a temperature ``τ < 1``
  sharpens the distribution towards the arg-max, ``τ > 1`` flattens it;
- :func:`top_k_filter` keeps the ``k`` most probable tokens, :func:`top_p_filter` the
  smallest set of most probable tokens whose total probability reaches ``p`` (nucleus
  sampling, Holtzman et al. 2020); both renormalise what they keep;
- :func:`next_token_probabilities` chains them, in the order Hugging Face's ``generate``
  applies them: temperature, then top-k, then top-p;
- :func:`sample_token` draws a token from the result with an explicit NumPy ``Generator``.

Every function works on the last axis, ``V``: a single row ``(V,)`` or a batch of rows
``(..., V)``. Ties are broken the same way everywhere: the lower token id wins.
"""

from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike

from selfattn_lib._validation import (
    as_float_array,
    check_positive_float,
    check_positive_int,
    element,
)
from selfattn_lib.softmax import softmax

#: How far the rows of ``probabilities`` may sum from 1 in float64 (in float32 or float16,
#: the square root of the dtype's machine epsilon, if that is larger).
SUM_TOLERANCE = 1e-6


def temperature_probabilities(logits: ArrayLike, temperature: float = 1.0) -> np.ndarray:
    """The next-token distribution ``softmax(logits / temperature)`` of each row.

    Parameters
    ----------
    logits
        One score per token of the vocabulary. ``-inf`` is allowed (a banned token gets
        probability 0), but every row needs at least one finite logit.
    temperature
        A finite positive number ``τ``: ``τ → 0`` approaches the arg-max (greedy decoding),
        ``τ = 1`` is the model's own distribution, large ``τ`` approaches uniform.

    Shapes
    ------
    ``logits``: ``(..., V)`` → ``(..., V)``, each row summing to one.

    Examples
    --------
    >>> temperature_probabilities([1.0, 0.0, -1.0], temperature=0.5).round(3)
    array([0.867, 0.117, 0.016])
    """
    logits = _as_logits(logits)
    temperature = check_positive_float("temperature", temperature)
    return softmax(logits, axis=-1, temperature=temperature)


def top_k_filter(probabilities: ArrayLike, k: int) -> np.ndarray:
    """Keep the ``k`` most probable tokens of each row, zero the others and renormalise.

    Exactly ``k`` tokens are kept: when several tokens tie at the boundary, the lower token
    ids win (a stable sort of ``-probabilities``). Hugging Face's ``TopKLogitsWarper`` keeps
    every token that ties with the ``k``-th instead, so the two differ only on exact ties.
    Kept tokens of probability 0 stay 0, so a row keeps at most ``k`` nonzero tokens.

    Shapes
    ------
    ``probabilities``: ``(..., V)``, rows summing to one → ``(..., V)``; ``1 ≤ k ≤ V``.

    Examples
    --------
    >>> top_k_filter([0.1, 0.5, 0.15, 0.25], k=2)
    array([0.        , 0.66666667, 0.        , 0.33333333])
    """
    probabilities = _as_probabilities(probabilities)
    k = _check_k(k, probabilities.shape[-1])
    order = np.argsort(-probabilities, axis=-1, kind="stable")  # (..., V), most probable first
    keep = np.zeros(probabilities.shape, dtype=bool)  # (..., V)
    np.put_along_axis(keep, order[..., :k], True, axis=-1)
    return _renormalised(np.where(keep, probabilities, 0))


def top_p_filter(probabilities: ArrayLike, p: float) -> np.ndarray:
    """Nucleus filtering: keep the smallest set of most probable tokens whose total
    probability is at least ``p``, zero the others and renormalise.

    The tokens are taken in order of decreasing probability (ties: the lower id first) and
    a token is kept when the tokens before it hold less than ``p``: so the token whose
    probability carries the total past ``p`` is kept, and so is the most probable token,
    even when it alone holds more than ``p``. This is the rule of Holtzman et al. (2020) and
    of Hugging Face's ``TopPLogitsWarper``.

    Rounding: the running totals are computed in float64 and divided by the row's own total,
    and a total within ``16 ε`` of ``p`` (``ε`` the machine epsilon of the input's dtype)
    counts as reaching it, so rounding in the sums cannot add a token to the set.
    ``p = 1`` keeps every token (the distribution is only renormalised).

    Shapes
    ------
    ``probabilities``: ``(..., V)``, rows summing to one → ``(..., V)``; ``0 < p ≤ 1``.

    Examples
    --------
    >>> top_p_filter([0.1, 0.5, 0.15, 0.25], p=0.7)  # 0.5 + 0.25 = 0.75 reaches 0.7
    array([0.        , 0.66666667, 0.        , 0.33333333])
    >>> top_p_filter([0.1, 0.8, 0.1], p=0.5)  # the top token alone is enough
    array([0., 1., 0.])
    """
    probabilities = _as_probabilities(probabilities)
    p = _check_p(p)
    if p == 1.0:
        return _renormalised(probabilities.copy())
    order = np.argsort(-probabilities, axis=-1, kind="stable")  # (..., V), most probable first
    ranked = np.take_along_axis(probabilities, order, axis=-1).astype(np.float64)  # (..., V)
    running = np.cumsum(ranked, axis=-1)  # (..., V), the total up to and including each token
    before = np.concatenate([np.zeros_like(running[..., :1]), running[..., :-1]], axis=-1)
    tolerance = 16 * np.finfo(probabilities.dtype).eps
    keep_ranked = before < p * running[..., -1:] - tolerance  # (..., V)
    keep_ranked[..., 0] = True  # the most probable token is always kept
    keep = np.zeros(probabilities.shape, dtype=bool)  # (..., V)
    np.put_along_axis(keep, order, keep_ranked, axis=-1)
    return _renormalised(np.where(keep, probabilities, 0))


def next_token_probabilities(
    logits: ArrayLike,
    *,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
) -> np.ndarray:
    """The distribution to sample the next token from: temperature, softmax, then top-k,
    then top-p.

    This is the order in which Hugging Face's ``generate`` applies its ``temperature``,
    ``top_k`` and ``top_p`` options: top-p then sees the distribution already cut down to
    ``k`` tokens and renormalised. ``None`` skips a filter.

    Shapes
    ------
    ``logits``: ``(..., V)`` → ``(..., V)``, each row summing to one.

    Examples
    --------
    >>> next_token_probabilities([2.0, 1.0, 0.0, -1.0], top_k=3, top_p=0.8).round(3)
    array([0.731, 0.269, 0.   , 0.   ])
    """
    logits = _as_logits(logits)
    if top_k is not None:
        top_k = _check_k(top_k, logits.shape[-1], name="top_k")
    if top_p is not None:
        top_p = _check_p(top_p, name="top_p")
    probabilities = temperature_probabilities(logits, temperature)  # (..., V)
    if top_k is not None:
        probabilities = top_k_filter(probabilities, top_k)
    if top_p is not None:
        probabilities = top_p_filter(probabilities, top_p)
    return probabilities


def greedy_token(logits: ArrayLike) -> int | np.ndarray:
    """The most likely token of each row, the arg-max of its logits (ties: the lowest id).

    Shapes
    ------
    ``logits``: ``(V,)`` → a Python ``int``; ``(..., V)`` → an int64 array ``(...)``.

    Examples
    --------
    >>> greedy_token([0.5, 2.0, 2.0, -1.0])
    1
    >>> greedy_token([[0.0, 1.0], [3.0, 1.0]])
    array([1, 0])
    """
    logits = _as_logits(logits)
    tokens = np.argmax(logits, axis=-1)  # (...), the first of equal maxima
    return int(tokens) if logits.ndim == 1 else tokens.astype(np.int64)


def sample_token(probabilities: ArrayLike, rng: np.random.Generator) -> int | np.ndarray:
    """Draw one token id from each row of ``probabilities``, with the random generator ``rng``.

    Inverse-CDF sampling: each row takes one uniform number ``u = rng.random()`` (the rows
    in C order, so the draws are those of ``rng.random(n_rows)``) and returns the first
    token whose cumulative probability exceeds ``u`` times the row's total. A token of
    probability 0 is never returned: its cumulative probability equals its predecessor's.
    If rounding puts ``u`` times the total at or past the last cumulative value, the row's
    last token of nonzero probability is returned.

    Shapes
    ------
    ``probabilities``: ``(V,)`` → a Python ``int``; ``(..., V)`` → an int64 array ``(...)``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> sample_token([0.0, 1.0, 0.0], rng)
    1
    >>> sample_token([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]], rng)
    array([0, 2])
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"rng must be a NumPy Generator (np.random.default_rng(seed)), got {type(rng).__name__}"
        )
    probabilities = _as_probabilities(probabilities)
    batch_shape = probabilities.shape[:-1]
    uniform = rng.random(size=int(np.prod(batch_shape))).reshape(batch_shape)  # (...)
    cumulative = np.cumsum(probabilities, axis=-1, dtype=np.float64)  # (..., V)
    targets = uniform * cumulative[..., -1]  # (...), in [0, total)
    tokens = (cumulative <= targets[..., None]).sum(axis=-1)  # (...), first cumulative > target
    n_tokens = probabilities.shape[-1]
    last_nonzero = n_tokens - 1 - np.argmax(probabilities[..., ::-1] > 0, axis=-1)  # (...)
    tokens = np.where(tokens == n_tokens, last_nonzero, tokens)
    return int(tokens) if probabilities.ndim == 1 else tokens.astype(np.int64)


# --- argument checks ---


def _as_logits(logits: ArrayLike) -> np.ndarray:
    logits = as_float_array("logits", logits, layout="(..., V)", allow_neg_inf=True)
    if logits.shape[-1] == 0:
        raise ValueError(f"logits needs at least one token (V ≥ 1), got shape {logits.shape}")
    all_banned = np.isneginf(logits).all(axis=-1)
    if all_banned.any():
        row = tuple(np.argwhere(all_banned)[0]) if logits.ndim > 1 else ()
        where = f"row {element('logits', row)}" if row else "logits"
        raise ValueError(f"{where} is all -inf: every row needs at least one finite logit")
    return logits


def _as_probabilities(probabilities: ArrayLike) -> np.ndarray:
    probabilities = as_float_array("probabilities", probabilities, layout="(..., V)")
    if probabilities.shape[-1] == 0:
        raise ValueError(
            f"probabilities needs at least one token (V ≥ 1), got shape {probabilities.shape}"
        )
    negative = probabilities < 0
    if negative.any():
        index = tuple(np.argwhere(negative)[0])
        raise ValueError(
            f"probabilities must not be negative: {element('probabilities', index)} is "
            f"{probabilities[index]}"
        )
    totals = probabilities.sum(axis=-1, dtype=np.float64)  # (...)
    tolerance = max(SUM_TOLERANCE, float(np.sqrt(np.finfo(probabilities.dtype).eps)))
    off = np.abs(totals - 1) > tolerance
    if off.any():
        row = tuple(np.argwhere(off)[0])
        where = f"row {element('probabilities', row)}" if row else "probabilities"
        raise ValueError(
            f"each row of probabilities must sum to 1 (within {tolerance:g}): {where} sums "
            f"to {totals[row]:.6g}. Pass probabilities, not logits (softmax them first)"
        )
    return probabilities


def _renormalised(kept: np.ndarray) -> np.ndarray:
    """Rows that keep their largest entry (so a positive total) divided by their total."""
    return kept / kept.sum(axis=-1, keepdims=True)


def _check_k(k: object, n_tokens: int, name: str = "k") -> int:
    k = check_positive_int(name, k)
    if k > n_tokens:
        raise ValueError(f"{name} = {k} is larger than the vocabulary, V = {n_tokens}")
    return k


def _check_p(p: object, name: str = "p") -> float:
    if isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise TypeError(f"{name} must be a probability, a real number in (0, 1], got {p!r}")
    if not 0 < p <= 1:
        raise ValueError(f"{name} must be a probability in (0, 1], got {p!r}")
    return float(p)
