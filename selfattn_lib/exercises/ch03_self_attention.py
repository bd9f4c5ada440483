"""Checkers for the exercises of chapter 3, self-attention without parameters."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from selfattn_lib import attention, softmax
from selfattn_lib.exercises import _kit as kit

# T = 5 tokens of D = 3 features: a result of T numbers (weights) and one of D numbers (an
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
# Token 0 scores 1000 with itself and 997 with token 1, beyond e^score's range (709): the
# right weights are 0.953 and 0.047. A "stable" softmax that clips the scores gives both 0.5.
_CH3_CLOSE = np.array(
    [
        [30.0, 10.0, 0.0],
        [30.0, 9.7, 0.0],
        [-1.0, 0.5, 0.5],
        [0.0, 2.0, 1.0],
        [1.0, 0.0, 2.0],
    ]
)
# A short token (row 1) beside a long one pointing nearly the same way (row 2): token 1 scores
# 416 with itself and 1200 with token 2, more than 709 above its own score, its row's mean
# (321) and its first score (8). A softmax shifted by any of them overflows; only the row's
# largest score is safe. Every entry is exact in binary, so float32 answers stay exact.
_CH3_LONGER_NEIGHBOUR = np.array(
    [
        [0.0, 2.0, 1.0],
        [20.0, 4.0, 0.0],
        [60.0, 0.0, 0.0],
        [-1.0, 0.5, 0.5],
        [0.0, 0.0, 3.0],
    ]
)
# Token 0's scores are small, [1.25, -800, 0.5, 0.5, 1.5], but token 1 is long and points the
# other way: the largest |score| of row 0 (800) and the largest score of the whole matrix
# (640000, token 1 with itself) lie far ABOVE the row's largest, 1.5. A softmax shifted by
# either underflows: every e^(score - c) is 0, and 0/0 is NaN.
_CH3_FAR_BELOW = np.array(
    [
        [1.0, 0.0, 0.5],
        [-800.0, 0.0, 0.0],
        [0.5, 0.5, 0.0],
        [0.0, 0.0, 1.0],
        [1.0, 1.0, 1.0],
    ]
)
# e^x overflows float64 above about 709.78, and underflows to 0 below about -745.13.
_CH3_EXP_LIMIT = float(np.log(np.finfo(np.float64).max))
_CH3_EXP_FLOOR = 745.13


def _ch3_weights(x: np.ndarray) -> np.ndarray:
    """Reference weights ``softmax(X Xᵀ)`` over the last axis, for ``(..., T, D)``."""
    return attention.simple_self_attention(x)[1]


def _ch3_hint_for_shapes(mistake: kit.Mistake, hint: str) -> kit.Mistake:
    """``mistake`` with ``hint`` added when it is a shape error of ``@`` or of broadcasting."""
    text = str(mistake)
    if "broadcast" in text:
        return kit.Mistake(
            f"{text}. A maximum or a sum over axis=-1 drops that axis, (B, T, T) -> (B, T): "
            "keep it with keepdims=True, (B, T, 1), so that it lines up with the rows"
        )
    if "matmul" in text or "aligned" in text:
        return kit.Mistake(f"{text}{hint}")
    return mistake


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
        try:
            result = kit.call_on_copy(
                spotlight_output, x, position, argument="x", in_place="x *= weights[:, None]"
            )
        except kit.Mistake as mistake:
            raise _ch3_hint_for_shapes(
                mistake,
                ". x holds one token per ROW: the token's vector is x[position], shape (D,), "
                "and its scores are x @ x[position], shape (T,)",
            ) from None
        values = kit.values_like(result, expected)
        if values is not None and not np.isfinite(values).all():
            top = int(np.argmax(scores))
            if scores[top] < _CH3_EXP_LIMIT and scores[top] - scores.min() > _CH3_EXP_FLOOR:
                # No e^score overflows in this row (a shift by its smallest score would, but
                # that slip overflows on the earlier inputs): every exponential underflowed.
                raise kit.Mistake(
                    f"{what} returned NaN or infinity, yet this row's largest score is only "
                    f"{scores[top]:.2f}, so no e^score overflows. e^(score - c) underflows "
                    f"to 0 for every score when c lies more than {_CH3_EXP_FLOOR:.0f} ABOVE "
                    "the row's largest score, and 0/0 is NaN: the number you subtracted was "
                    f"larger than the row's maximum (here the largest |score| is "
                    f"{np.abs(scores).max():.0f}, the largest score of the whole matrix "
                    f"x @ x.T {(x @ x.T).max():.0f}). Subtract this row's LARGEST score, "
                    "scores.max()"
                )
            if scores[top] - scores[position] > _CH3_EXP_LIMIT:
                raise kit.Mistake(
                    f"{what} returned NaN or infinity. Here the token's own score "
                    f"({scores[position]:.0f}) is not the largest of its row: token {top} "
                    f"scores {scores[top]:.0f}, and e^(score - c) overflows when c lies more "
                    "than 709 below the largest score. Subtract the row's LARGEST score, "
                    "scores.max(): the token's own score, the mean or the first score is "
                    "not always the largest"
                )
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
            given = kit.values_like(result, weights)
            if given is not None and np.allclose(given, weights):
                raise kit.Mistake(
                    f"{what} returned {len(weights)} numbers, one per token: these are the "
                    "weights. Multiply each token vector x[j] by its weight and add them up"
                )
            if given is not None and np.allclose(given, weights * x.sum(axis=1)):
                raise kit.Mistake(
                    f"{what} returned {len(weights)} numbers, one per token: it multiplied "
                    "each token vector by its weight, then added up the FEATURES of each "
                    "(axis=1). Add up the weighted vectors over the tokens (axis=0), which "
                    f"gives one vector of {len(expected)} features"
                )
            raise kit.Mistake(
                f"{what} returned {len(weights)} numbers, one per token: the output is one "
                f"vector of {len(expected)} features, the weighted sum of the token vectors"
            )
        got = kit.as_result_array(result, expected, what)
        if np.allclose(got, expected, rtol=1e-6, atol=1e-9):
            return
        without_self = scores.copy()
        without_self[position] = -np.inf
        with np.errstate(all="ignore"):
            candidates = [
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
                    np.exp(scores - scores.max()) @ x,
                    "used e^(score - largest score) as weights without dividing by their sum: "
                    "subtracting the largest score prevents the overflow, and dividing by the "
                    "sum makes the weights add up to one",
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
                (
                    softmax.softmax(scores / np.sqrt(x.shape[1])) @ x,
                    "divided the scores by √D: self-attention without parameters takes the "
                    "softmax of the plain dot products (the division by √d_k comes with "
                    "queries and keys, chapters 4 and 5)",
                ),
                (
                    softmax.softmax(
                        scores / np.linalg.norm(x, axis=-1) / np.linalg.norm(x[position])
                    )
                    @ x,
                    "scored with cosine similarities: the scores here are the plain dot "
                    "products x_position · x_j, lengths included",
                ),
                (
                    softmax.softmax(without_self) @ x,
                    "left the token out of its own average: it is scored too, with "
                    "x_position · x_position, and gets its weight like every other token",
                ),
            ]
        if scores.max() > _CH3_EXP_LIMIT:
            # e^score overflowed: inf / inf is NaN and every other weight x / inf is 0, so a
            # NaN replaced by 0 (np.nan_to_num) leaves no weight at all.
            candidates.append(
                (
                    np.zeros_like(expected),
                    "returned zeros: e^score overflowed to infinity, inf / inf is NaN and "
                    "every other weight became 0, so replacing NaN by 0 (np.nan_to_num) left "
                    "no weight at all. Subtract the largest score before the exponential "
                    "instead, so that nothing overflows",
                )
            )
        # Scores clipped to one value c (np.clip, np.minimum) to dodge the overflow: every
        # score above c counts as c, so the k largest share the weight evenly, and the rest
        # get almost nothing when they lie well below c.
        by_score = np.argsort(scores)[::-1]  # (T,): the tokens, largest score first
        ranked = scores[by_score]
        for k in range(2, len(scores)):
            if ranked[k - 1] > 100.0 and ranked[k - 1] - ranked[k] > 30.0:
                largest = ", ".join(f"{score:.0f}" for score in ranked[:k])
                candidates.append(
                    (
                        x[by_score[:k]].mean(axis=0),
                        f"gave the {k} largest scores ({largest}) the same weight, as if they "
                        "had been clipped to one value (np.clip, np.minimum) to avoid the "
                        "overflow. Softmax reads the DIFFERENCES "
                        "between scores, and clipping changes them: subtract the largest score "
                        "instead, which keeps every difference",
                    )
                )
        if not kit.match_known_mistakes(got, expected, candidates, what, joiner=" "):
            kit.assert_close(got, expected, what)

    def checks() -> str:
        for position in (0, 3):
            check_one(_CH3_X, position)
        check_one(long_vectors, 2)
        check_one(_CH3_CLOSE, 0)
        check_one(_CH3_FAR_BELOW, 0)
        check_one(_CH3_LONGER_NEIGHBOUR, 1)
        kit.require_own_code(
            spotlight_output,
            (_CH3_X, 1),
            (*kit.COURSE_LIBRARY, *kit.TORCH, "scipy"),
            name,
            "the exercise asks for NumPy and a stable softmax written by you, not a library's",
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
    # Rows whose own score lies far below their largest: a shift by the diagonal overflows.
    neighbour_batch = np.stack([_CH3_LONGER_NEIGHBOUR, _CH3_LONGER_NEIGHBOUR[::-1]])

    def check_one(x: np.ndarray) -> None:
        what = f"{name}(x) for x of shape {x.shape}"
        expected_weights = _ch3_weights(x)  # (B, T, T)
        expected_output = expected_weights @ x  # (B, T, D)
        scores = x @ np.swapaxes(x, -1, -2)  # (B, T, T)
        try:
            result = kit.call_on_copy(
                batched_self_attention, x, argument="x", in_place="x -= x.max()"
            )
        except kit.Mistake as mistake:
            if "matmul" in str(mistake) or "aligned" in str(mistake):
                raise kit.Mistake(
                    f"{mistake}. For a batch, `x.T` reverses ALL the axes, (B, T, D) -> "
                    "(D, T, B). Swap only the last two: `x.transpose(0, 2, 1)` or "
                    "`np.swapaxes(x, -1, -2)`"
                ) from None
            raise _ch3_hint_for_shapes(mistake, "") from None
        if not isinstance(result, tuple | list) or len(result) != 2:
            raise kit.Mistake(
                f"{what} must return a pair (output, weights), like the library's "
                f"attention functions; got {type(result).__name__}"
            )
        output, weights = result
        if (
            kit.values_like(output, expected_weights) is not None
            and kit.values_like(weights, expected_output) is not None
        ):
            raise kit.Mistake(
                f"{what} returned (weights, output): return them in the order "
                "(output, weights), like the library's attention functions"
            )
        values = kit.values_like(weights, expected_weights)
        if values is not None and not np.isfinite(values).all():
            broken = ~np.isfinite(values).all(axis=-1)  # (B, T): rows with NaN or infinity
            if (scores.max(axis=-1)[broken] <= _CH3_EXP_LIMIT).any():
                raise kit.Mistake(
                    f"{what} returned NaN in rows whose largest score is small: there every "
                    "e^(score - maximum) underflowed to 0, and 0/0 is NaN. The maximum you "
                    "subtracted was taken over more than the row (the whole batch or "
                    "sequence): subtract each row's own maximum, "
                    "max(axis=-1, keepdims=True)"
                )
            own = np.diagonal(scores, axis1=-2, axis2=-1)  # (B, T)
            if (scores.max(axis=-1) - own > _CH3_EXP_LIMIT)[broken].all():
                raise kit.Mistake(
                    f"{what} returned NaN in the rows where a token's own score (the "
                    "diagonal) lies more than 709 below its row's largest: e^(score - c) "
                    "overflows there when c is the own score, or anything else below the "
                    "row's maximum (the mean, the first score). Subtract each row's "
                    "LARGEST score, max(axis=-1, keepdims=True)"
                )
            raise kit.Mistake(
                f"{what} returned NaN or infinity in the weights: with scores near "
                f"{scores.max():.0f}, e^score overflows. Subtract "
                "each row's maximum before the exponential"
            )
        d = x.shape[-1]
        features = np.empty((len(x), d, d))  # (B, D, D): features against features
        if (
            features.shape != expected_weights.shape
            and kit.values_like(weights, features) is not None
        ):
            raise kit.Mistake(
                f"the weights of {what} have shape {(len(x), d, d)} = (B, D, D): they compare "
                "features, not tokens. The scores are x[b] @ x[b]ᵀ, (B, T, D) @ (B, D, T) -> "
                "(B, T, T)"
            )
        weights = kit.as_result_array(weights, expected_weights, f"the weights of {what}")
        if not np.allclose(weights, expected_weights, rtol=1e-6, atol=1e-9):
            if np.allclose(weights, scores):
                raise kit.Mistake(
                    f"the weights of {what} are the raw scores: turn each row into weights "
                    "with a softmax over the last axis"
                )
            if np.allclose(weights, softmax.softmax(scores / np.sqrt(d))):
                raise kit.Mistake(
                    f"the weights of {what} are the softmax of the scores divided by √D: "
                    "self-attention without parameters has no scaling (it comes with "
                    "queries and keys, chapters 4 and 5)"
                )
            if len(x) > 1 and np.allclose(weights.sum(axis=0), 1.0):
                raise kit.Mistake(
                    f"the weights of {what} sum to one across the BATCH (axis 0): each "
                    "sequence is on its own, so take the softmax over the keys, the last "
                    "axis (axis=-1)"
                )
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
        check_one(neighbour_batch)
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


class _Answer(NamedTuple):
    """One input of ``check_attends_most_to_itself`` with its weights and both answers."""

    description: str
    weights: np.ndarray  # (T, T)
    expected: np.ndarray  # (T,) bool
    got: np.ndarray  # (T,) bool
    right: bool


def _ch3_slips(weights: np.ndarray) -> dict[str, np.ndarray]:
    """What the usual slips of "attends most to itself" answer for ``weights`` (T, T)."""
    own = np.diag(weights)
    others = np.where(np.eye(len(weights), dtype=bool), -np.inf, weights).max(axis=-1)
    return {
        "argmax": np.argmax(weights, axis=-1) == np.arange(len(weights)),
        "others": own > others,
        "column": own >= weights.max(axis=0),
        "even": own >= 1 / len(weights),
        "matrix": own >= weights.max(),
    }


_CH3_SLIPS = {
    "argmax": "those tokens tie between themselves and an identical copy, and argmax picks "
    "only the FIRST of tied maxima. Compare the token's own weight with the row's maximum "
    "instead",
    "others": "those tokens tie with an identical copy of themselves, and a tie counts as "
    "True: compare the own weight with the largest of the others using >=, not >",
    "column": "it compares each token's own weight with the largest weight in its COLUMN (or "
    "takes the softmax over axis 0, which for the symmetric X Xᵀ gives the same numbers). "
    "Token t's weights are row t, a softmax over axis=-1: the weights sum to one along rows, "
    "not columns",
    "even": "it compares each token's own weight with 1/T, the weight of an even spread. "
    "The question is whether another weight of the row is larger: compare with the row's "
    "maximum",
    "matrix": "it compares each token's own weight with the largest weight of the WHOLE "
    "matrix. Compare with the largest weight of the token's own row, max(axis=-1)",
}


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
    # "milk" gives itself 0.33561 and "apple" 0.33645: equal once rounded to 3 decimals.
    near_tie = embeddings.embed("dog milk it apple")
    # Beside each long vector a shorter one pointing nearly the same way: each short one
    # attends most to its long neighbour, yet no other token gives it as much weight as it
    # gives itself, so looking down its column says True.
    pairs = np.array([[1.5, 0.0], [0.6, 0.1], [0.0, 1.5], [0.1, 0.6], [-1.2, -1.0], [-0.5, -0.3]])
    unit = np.random.default_rng(3).normal(size=(6, 4))
    unit /= np.linalg.norm(unit, axis=-1, keepdims=True)
    cases = (
        (crafted, "five 2-D vectors, two of them repeated"),
        (sentence, '"the dog chased the cat across the street"'),
        (pairs, "three long vectors, each with a shorter one beside it"),
        (near_tie, '"dog milk it apple"'),
        (unit, "six unit-length vectors"),
    )

    def answer(x: np.ndarray, description: str) -> _Answer:
        what = f"{name}(x) ({description})"
        weights = _ch3_weights(x)
        own, top = np.diag(weights), weights.max(axis=-1)
        expected = own >= top
        result = kit.call_on_copy(
            attends_most_to_itself,
            x,
            argument="x",
            in_place="x /= np.linalg.norm(x, axis=-1, keepdims=True)",
        )
        try:
            given = np.asarray(kit.plain(result)) if result is not None else None
        except (TypeError, ValueError, RuntimeError):  # as_result_array explains it
            given = None
        if (
            given is not None
            and given.ndim == 1
            and given.shape != expected.shape
            and np.issubdtype(given.dtype, np.integer)
        ):
            raise kit.Mistake(
                f"{what} returned {kit.show(given)}, which look like token positions: return "
                f"one True or False per token, an array of shape {expected.shape}"
            )
        got = kit.as_result_array(result, expected.astype(np.float64), what)
        if np.asarray(given).dtype != np.bool_:
            raise kit.Mistake(
                f"{what} returned an array of {np.asarray(given).dtype}, expected booleans "
                "(True/False), e.g. the result of a comparison"
            )
        got = got.astype(bool)
        # Where a token's own weight is the row's only maximum, a function that computes the
        # own score a second way (einsum vs x @ x.T) may lose to itself by one rounding step:
        # accept either answer there, but nowhere else (ties with copies must be True).
        others = np.where(np.eye(len(x), dtype=bool), -np.inf, weights).max(axis=-1)
        rounding = (top - own <= 1e-12) & (others < own - 1e-12)
        right = bool(np.array_equal(got[~rounding], expected[~rounding]))
        return _Answer(description, weights, expected, got, right)

    def near_ties_only(a: _Answer) -> bool:
        """Whether ``a`` says True wherever it should, and also where the own weight is
        within 0.02 of the row's largest: the answer of rounded weights or a tolerance."""
        extra = a.got & ~a.expected
        gaps = a.weights.max(axis=-1) - np.diag(a.weights)
        return not (a.expected & ~a.got).any() and bool((gaps[extra] <= 0.02).all())

    def checks() -> str:
        answers = [answer(x, description) for x, description in cases]
        if all(a.right for a in answers):
            return (
                "Note the last check: with vectors of equal length every token attends "
                "most to itself, since x_t · x_j <= |x_t| |x_j| = x_t · x_t."
            )
        # A slip is named only if it gives the learner's answer on EVERY input.
        first = next(a for a in answers if not a.right)
        what = f"{name}(x) ({first.description})"
        wrong = [int(t) for t in np.flatnonzero(first.got != first.expected)]
        if not any(a.got.any() for a in answers):
            raise kit.Mistake(
                f"{what} says no token attends most to itself. A token's own weight is part "
                "of its row, so it can never be strictly larger than the row's maximum: "
                "compare with >= (or leave the diagonal out of the maximum)"
            )
        if all(a.got.all() for a in answers):
            raise kit.Mistake(
                f"{what} says every token attends most to itself, on every input, but the "
                f"tokens at positions {wrong} attend more to another one. Compare each "
                "token's own weight with the LARGEST weight of its row, and score with the "
                "plain dot product. With vectors of equal length (or cosine similarities) "
                "every answer is True whatever the input; with the plain dot product token i "
                "says False where another vector's projection onto x_i, |x_j| cos θ, is "
                "longer than x_i"
            )
        for slip, explanation in _CH3_SLIPS.items():
            if all(np.array_equal(a.got, _ch3_slips(a.weights)[slip]) for a in answers):
                raise kit.Mistake(f"{what} is wrong at positions {wrong}: {explanation}")
        if all(near_ties_only(a) for a in answers):
            own, top = np.diag(first.weights), first.weights.max(axis=-1)
            t = wrong[0]
            raise kit.Mistake(
                f"{what} is wrong at positions {wrong}: it says True where the token's own "
                f"weight is close to its row's largest but smaller ({own[t]:.4f} against "
                f"{top[t]:.4f}). Compare the exact weights (or scores) with >=, without "
                "rounding or a tolerance: only a real tie counts"
            )
        raise kit.Mistake(
            f"{what} is wrong at positions {wrong}: expected {first.expected.tolist()}"
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
        given_rows, given_order = shuffled.copy(), order.copy()
        result = kit.call_quietly(unshuffle, given_rows, given_order)
        if not np.array_equal(given_rows, shuffled):
            raise kit.Mistake(
                f"{what} changed its argument `shuffled` in place: the caller's array is no "
                "longer what it was. Build the result in a new array (np.empty_like, or "
                "indexing with an array, which makes a copy)"
            )
        if not np.array_equal(given_order, order):
            raise kit.Mistake(
                f"{what} changed its argument `order` in place (order.sort() sorts the "
                "caller's array): leave it as it is. np.argsort(order) returns a new array"
            )
        try:
            given = np.asarray(kit.plain(result)) if result is not None else None
        except (TypeError, ValueError, RuntimeError):  # as_result_array explains it
            given = None
        if given is not None and np.array_equal(given, np.argsort(order)):
            raise kit.Mistake(
                f"{what} returned the inverse permutation {kit.show(given)} itself: use it "
                "to index the rows of `shuffled`"
            )
        flat = shuffled.ravel()[np.argsort(order)]  # np.take without an axis
        if given is not None and given.shape == flat.shape and np.allclose(given, flat):
            raise kit.Mistake(
                f"{what} returned shape {given.shape}, single numbers of the flattened array "
                "instead of rows: without axis=0, np.take reads the array as one flat line"
            )
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
        if np.allclose(got, np.sort(shuffled, axis=0)) or np.allclose(
            got, shuffled[np.lexsort(shuffled.T[::-1])]
        ):
            raise kit.Mistake(
                f"{what} sorted the values: each row must go back to the position it came "
                "from, order[t], which has nothing to do with the size of its numbers"
            )
        kit.assert_close(got, original, what)

    def checks() -> str:
        for order in cases:
            check_one(order)
        return (
            "np.argsort(order) is the inverse permutation, and unshuffling the outputs of "
            "the shuffled sentence gives back the original outputs (equivariance)."
        )

    return kit.run_checks(checks)
