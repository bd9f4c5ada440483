"""Checkers for the exercises of chapter 3, self-attention without weights."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from selfattn_lib import attention
from selfattn_lib.exercises import _kit as kit

# T = 5 tokens of D = 3 features: a result of length T (weights) and one of length D (an
# output vector) cannot be confused.
_CH3_X = np.array(
    [
        [1.0, 0.0, 2.0],
        [0.5, 1.5, -1.0],
        [2.0, 1.0, 0.0],
        [-1.0, 0.5, 0.5],
        [0.0, 2.0, 1.0],
    ]
)


def _ch3_weights(x: np.ndarray) -> np.ndarray:
    """Reference weights ``softmax(X Xᵀ)`` over the last axis, for ``(..., T, D)``."""
    return attention.simple_self_attention(x)[1]


def check_spotlight_output(spotlight_output: Callable[..., Any]) -> kit.Feedback:
    """Check one output vector of simple self-attention (chapter 3, exercise 1).

    Expected signature: ``spotlight_output(x: np.ndarray, position: int) -> np.ndarray``: the
    output vector of token ``position`` in simple self-attention (no projections, no scaling),
    the average of the token vectors ``x_j`` weighted by the softmax over ``j`` of the scores
    ``x_position · x_j``, computed without overflow for scores around 1000.

    Shapes
    ------
    ``x``: ``(T, D)``, ``position``: an index ``0 ≤ position < T`` → ``(D,)``.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_spotlight_output(lambda x, position: None)
    ✘ Not yet. spotlight_output(x, 0) returned None: did you forget the `return` statement?
    """
    name = kit.name_of(spotlight_output, "spotlight_output")
    long_vectors = _CH3_X * 15.0  # scores up to about 1100: e^score overflows

    def check_one(x: np.ndarray, position: int) -> None:
        what = f"{name}(x, {position})"
        output, all_weights = attention.simple_self_attention(x)  # (T, D), (T, T)
        expected, weights = output[position], all_weights[position]  # (D,), (T,)
        scores = x @ x[position]  # (T,): for the wrong answers below
        result = kit.call_on_copy(spotlight_output, x, position)
        values = kit.values_like(result, expected)
        if values is not None and not np.isfinite(values).all():
            raise kit.Mistake(
                f"{what} returned NaN or infinity for vectors whose scores reach "
                f"{scores.max():.0f}: e^score overflows. Subtract the largest score before "
                "the exponential (the stable softmax of chapter 2)"
            )
        shape = np.shape(result) if result is not None else None
        if shape == ():
            raise kit.Mistake(
                f"{what} returned a single number. The output is a VECTOR of shape "
                f"{expected.shape}: the weighted sum of the token vectors x[j], "
                "not of their scores"
            )
        if shape == weights.shape and shape != expected.shape:
            raise kit.Mistake(
                f"{what} returned {len(weights)} numbers, one per token: these look like the "
                "weights. Multiply each token vector x[j] by its weight and add them up"
            )
        got = kit.as_result_array(result, expected, what)
        if np.allclose(got, expected, rtol=1e-6, atol=1e-9):
            return
        with np.errstate(all="ignore"):
            candidates = (
                (
                    scores @ x,
                    "used the raw scores as weights: turn them into weights with a softmax first",
                ),
                (
                    np.exp(scores) @ x,
                    "used e^score as weights without dividing by their sum: the weights must "
                    "add up to one",
                ),
                (
                    x.mean(axis=0),
                    "returned the plain average of the tokens: every token got the same "
                    "weight 1/T instead of the softmax of its score",
                ),
                (
                    x[position],
                    "returned the spotlighted token's own vector: the output mixes ALL the "
                    "token vectors, weighted",
                ),
            )
        if not kit.match_known_mistakes(got, expected, candidates, what, joiner=" "):
            kit.assert_close(got, expected, what)

    def checks() -> str:
        for position in (0, 3):
            check_one(_CH3_X, position)
        check_one(long_vectors, 2)
        kit.require_own_code(
            spotlight_output,
            (_CH3_X, 1),
            (*kit.COURSE_LIBRARY, *kit.TORCH, "scipy"),
            name,
            "the exercise asks for a stable softmax written by you, without a library's",
        )
        return (
            "Each output is the softmax-weighted average of all the token vectors, the "
            "spotlighted one included."
        )

    return kit.run_checks(checks)


def check_batched_self_attention(batched_self_attention: Callable[..., Any]) -> kit.Feedback:
    """Check simple self-attention for a batch (chapter 3, exercise 2).

    Expected signature: ``batched_self_attention(x: np.ndarray) -> (output, weights)``: simple
    self-attention (no projections, no scaling) of every sequence of the batch at once, without
    a loop over the batch. ``weights[b, i, j]`` is the softmax over ``j`` of the scores
    ``x[b, i] · x[b, j]``, and ``output[b, i]`` the average of the vectors ``x[b, j]`` with
    these weights.

    Shapes
    ------
    ``x``: ``(B, T, D)`` → ``output``: ``(B, T, D)``, ``weights``: ``(B, T_q, T_k)`` with
    ``T_q = T_k = T``.

    Examples
    --------
    The answer is a pair, so a function that forgets its ``return`` is told what to return:

    >>> check_batched_self_attention(lambda x: None)
    ✘ Not yet. batched_self_attention(x) for x of shape (3, 4, 3) must return a pair
    (output, weights), like the library's attention functions; got NoneType
    """
    name = kit.name_of(batched_self_attention, "batched_self_attention")
    batch = np.stack([_CH3_X[:4], -0.5 * _CH3_X[1:], _CH3_X[::-1][:4] * 0.8])  # (3, 4, 3)
    long_batch = batch * 15.0  # scores up to about 1100

    def check_one(x: np.ndarray) -> None:
        what = f"{name}(x) for x of shape {x.shape}"
        expected_weights = _ch3_weights(x)  # (B, T, T)
        expected_output = expected_weights @ x  # (B, T, D)
        try:
            result = kit.call_on_copy(batched_self_attention, x)
        except kit.Mistake as mistake:
            if "matmul" in str(mistake) or "aligned" in str(mistake):
                raise kit.Mistake(
                    f"{mistake}. For a batch, `x.T` reverses ALL the axes, (B, T, D) -> "
                    "(D, T, B). Swap only the last two: `x.transpose(0, 2, 1)` or "
                    "`np.swapaxes(x, -1, -2)`"
                ) from None
            raise
        if not isinstance(result, tuple | list) or len(result) != 2:
            raise kit.Mistake(
                f"{what} must return a pair (output, weights), like the library's "
                f"attention functions; got {type(result).__name__}"
            )
        output, weights = result
        values = kit.values_like(weights, expected_weights)
        if values is not None and not np.isfinite(values).all():
            raise kit.Mistake(
                f"{what} returned NaN or infinity in the weights: with scores near "
                f"{(x @ np.swapaxes(x, -1, -2)).max():.0f}, e^score overflows. Subtract "
                "each row's maximum before the exponential"
            )
        weights = kit.as_result_array(weights, expected_weights, f"the weights of {what}")
        if not np.allclose(weights, expected_weights, rtol=1e-6, atol=1e-9):
            if np.allclose(weights.sum(axis=-2), 1.0):
                raise kit.Mistake(
                    f"the COLUMNS of the weights of {what} sum to one, not the rows: take "
                    "the softmax over the keys, the last axis (axis=-1)"
                )
            if not np.allclose(weights.sum(axis=-1), 1.0):
                raise kit.Mistake(
                    f"the rows of the weights of {what} do not sum to one: normalise each "
                    "row on its own, with axis=-1 and keepdims=True"
                )
            kit.assert_close(weights, expected_weights, f"the weights of {what}")
        output = kit.as_result_array(output, expected_output, f"the output of {what}")
        if np.allclose(output, np.swapaxes(weights, -1, -2) @ x) and not np.allclose(
            output, expected_output
        ):
            raise kit.Mistake(
                f"the output of {what} uses the transposed weights: row i of the output is "
                "weights[b, i] @ x[b], so compute weights @ x"
            )
        kit.assert_close(output, expected_output, f"the output of {what}")

    def checks() -> str:
        check_one(batch)
        check_one(batch[:1])
        check_one(long_batch)
        # Four times the batch: a loop over the sequences runs its body more often.
        kit.require_no_python_loop(
            batched_self_attention, (batch,), (np.concatenate([batch] * 4),), name
        )
        kit.require_own_code(
            batched_self_attention,
            (batch,),
            ("selfattn_lib.attention.simple_self_attention",),
            name,
            kit.WRITE_IT_YOURSELF,
        )
        return (
            "One matrix product for the scores, a softmax over the last axis and one more "
            "product: the whole batch at once."
        )

    return kit.run_checks(checks)


def check_attends_most_to_itself(attends_most_to_itself: Callable[..., Any]) -> kit.Feedback:
    """Check the test "does each token attend most to itself?" (chapter 3, exercise 3).

    Expected signature: ``attends_most_to_itself(x: np.ndarray) -> np.ndarray``: for every token
    ``t``, True where ``t``'s weight on itself is at least as large as its weight on every other
    token (a tie with an identical copy of itself counts as True).

    Shapes
    ------
    ``x``: ``(T, D)`` → ``(T,)``, dtype bool.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_attends_most_to_itself(lambda x: None)
    ✘ Not yet. attends_most_to_itself(x) (five 2-D vectors, two of them repeated) returned
    None: did you forget the `return` statement?
    """
    from selfattn_lib import embeddings

    name = kit.name_of(attends_most_to_itself, "attends_most_to_itself")
    crafted = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    sentence = embeddings.embed("the dog chased the cat across the street")
    unit = np.random.default_rng(3).normal(size=(6, 4))
    unit /= np.linalg.norm(unit, axis=-1, keepdims=True)

    def check_one(x: np.ndarray, description: str) -> None:
        what = f"{name}(x) ({description})"
        weights = _ch3_weights(x)
        expected = np.diag(weights) >= weights.max(axis=-1)
        result = kit.call_on_copy(attends_most_to_itself, x)
        got = kit.as_result_array(result, expected.astype(np.float64), what)
        if np.asarray(result).dtype != np.bool_:
            raise kit.Mistake(
                f"{what} returned an array of {np.asarray(result).dtype}, expected booleans "
                "(True/False), e.g. the result of a comparison"
            )
        got = got.astype(bool)
        # Where a token's own weight is the row's only maximum, a function that computes the
        # own score a second way (einsum vs x @ x.T) may lose to itself by one rounding step:
        # accept either answer there, but nowhere else (ties with copies must be True).
        own, top = np.diag(weights), weights.max(axis=-1)
        others = np.where(np.eye(len(x), dtype=bool), -np.inf, weights).max(axis=-1)
        rounding = (top - own <= 1e-12) & (others < own - 1e-12)
        if np.array_equal(got[~rounding], expected[~rounding]):
            return
        wrong = [int(t) for t in np.flatnonzero(got != expected)]
        if not got.any() and expected.any():
            raise kit.Mistake(
                f"{what} says no token attends most to itself. A token's own weight is part "
                "of its row, so it can never be strictly larger than the row's maximum: "
                "compare with >= (or leave the diagonal out of the maximum)"
            )
        if np.array_equal(got, np.argmax(weights, axis=-1) == np.arange(len(x))):
            raise kit.Mistake(
                f"{what} is wrong at positions {wrong}: those tokens tie between themselves "
                "and an identical copy, and argmax picks only the FIRST of tied maxima. "
                "Compare the token's own weight with the row's maximum instead"
            )
        if np.array_equal(got, np.diag(weights) >= weights.max(axis=0)):
            raise kit.Mistake(
                f"{what} is wrong at positions {wrong}: it compares each token's own weight "
                "with the largest weight in its COLUMN. Token t's weights are row t "
                "(axis=-1): the weights sum to one along rows, not columns"
            )
        raise kit.Mistake(f"{what} is wrong at positions {wrong}: expected {expected.tolist()}")

    def checks() -> str:
        check_one(crafted, "five 2-D vectors, two of them repeated")
        check_one(sentence, '"the dog chased the cat across the street"')
        check_one(unit, "six unit-length vectors")
        return (
            "Note the last check: with vectors of equal length every token attends most "
            "to itself, since x_t · x_j <= |x_t| |x_j| = x_t · x_t."
        )

    return kit.run_checks(checks)


def check_unshuffle(unshuffle: Callable[..., Any]) -> kit.Feedback:
    """Check the undoing of a shuffle of the tokens (chapter 3, exercise 4).

    Expected signature: ``unshuffle(shuffled: np.ndarray, order: np.ndarray) -> np.ndarray``
    where ``shuffled = original[order]`` and ``order`` is a permutation of ``range(T)``; the
    result is ``original``, i.e. ``result[order] == shuffled``.

    Shapes
    ------
    ``shuffled``: ``(T, ...)``, ``order``: ``(T,)`` → ``(T, ...)``, the shape of ``shuffled``.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_unshuffle(lambda shuffled, order: None)
    ✘ Not yet. unshuffle(shuffled, order=[2, 0, 4, 1, 3]) returned None: did you forget the
    `return` statement?
    """
    name = kit.name_of(unshuffle, "unshuffle")
    original = _CH3_X  # (5, 3)
    cases = (np.array([2, 0, 4, 1, 3]), np.array([1, 2, 3, 4, 0]), np.arange(5))

    def check_one(order: np.ndarray) -> None:
        shuffled = original[order]
        what = f"{name}(shuffled, order={order.tolist()})"
        result = kit.call_quietly(unshuffle, shuffled.copy(), order.copy())
        got = kit.as_result_array(result, original, what)
        if np.allclose(got, original):
            return
        if np.allclose(got, shuffled[order]):
            raise kit.Mistake(
                f"{what} applied the shuffle a second time (shuffled[order]). Row t of the "
                "shuffled array came from row order[t] of the original, so it must go BACK "
                "there: result[order] = shuffled, or shuffled[np.argsort(order)]"
            )
        if np.allclose(got, shuffled):
            raise kit.Mistake(f"{what} returned the shuffled rows unchanged")
        kit.assert_close(got, original, what)

    def checks() -> str:
        for order in cases:
            check_one(order)
        return (
            "np.argsort(order) is the inverse permutation, and unshuffling the outputs of "
            "the shuffled sentence gives back the original outputs (equivariance)."
        )

    return kit.run_checks(checks)
