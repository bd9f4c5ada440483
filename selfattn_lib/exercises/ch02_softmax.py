"""Checkers for the exercises of chapter 2, softmax."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from selfattn_lib import softmax
from selfattn_lib.exercises import _kit as kit


def _normalised(values: np.ndarray) -> np.ndarray:
    return values / values.sum(axis=-1, keepdims=True)


def check_weights_after_scaling(weights_after_scaling: Callable[..., Any]) -> kit.Feedback:
    """Check the learner's prediction of softmax(factor * z) from softmax(z) (ch. 2, ex. 1).

    Expected signature: ``weights_after_scaling(weights: np.ndarray, factor: float) ->
    np.ndarray``, where ``weights = softmax(z)`` are the weights of scores ``z`` that are not
    given. The result is ``softmax(factor * z)``, the weights of the same scores multiplied by
    ``factor``, predicted from ``weights`` and ``factor`` alone.

    Shapes
    ------
    ``weights``: ``(n,)``, ``factor``: a number → ``(n,)``.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_weights_after_scaling(lambda weights, factor: None)
    ✘ Not yet. weights_after_scaling([0.09, 0.2447, 0.6652], 2) returned None: did you forget
    the `return` statement?
    """
    name = kit.name_of(weights_after_scaling, "weights_after_scaling")
    cases = (
        (np.array([1.0, 2.0, 3.0]), 2.0),
        (np.array([1.0, 2.0, 3.0]), 0.5),
        (np.array([0.5, -1.0, 2.0, 0.0]), 3.0),
        (np.array([0.5, -1.0, 2.0, 0.0]), 1.0),
    )

    def check_one(scores: np.ndarray, factor: float) -> None:
        weights = softmax.softmax(scores)
        what = f"{name}({kit.show(weights.round(4))}, {factor:g})"
        expected = softmax.softmax(factor * scores)
        got = kit.as_result_array(
            kit.call_on_copy(weights_after_scaling, weights, factor), expected, what
        )
        if np.allclose(got, expected, rtol=1e-6, atol=1e-9):
            return
        if factor != 1 and np.allclose(got, weights):
            raise kit.Mistake(
                f"{what} returned the weights unchanged (as multiplying the WEIGHTS by "
                f"{factor:g} and normalising again would). Multiplying the SCORES by "
                f"{factor:g} multiplies every difference z_i - z_j, so every ratio of two "
                f"weights, e^(z_i - z_j), is raised to the power {factor:g}"
            )
        if np.allclose(got, weights**factor):
            raise kit.Mistake(
                f"the weights of {what} sum to {got.sum():.6g}, not 1: raising the weights to "
                f"the power {factor:g} keeps their ratios right but changes their total; "
                "divide by the new total"
            )
        if np.allclose(got, softmax.softmax(factor * weights)) or np.allclose(
            got, softmax.softmax(weights)
        ):
            raise kit.Mistake(
                f"{what} took the softmax of the weights, as if they were scores. The scores "
                "are not given: use what the ratio formula says, "
                "w_i / w_j = e^(z_i - z_j), and what multiplying the scores does to it"
            )
        if np.allclose(got, _normalised(weights ** (1 / factor))):
            raise kit.Mistake(
                f"{what} gives the weights of the scores DIVIDED by {factor:g}: use the power "
                f"{factor:g}, not 1/{factor:g}"
            )
        if not np.isclose(got.sum(), 1.0):
            raise kit.Mistake(f"the weights of {what} sum to {got.sum():.6g}, not 1")
        kit.assert_close(got, expected, what)

    def checks() -> str:
        for scores, factor in cases:
            check_one(scores, factor)
        return (
            "Your prediction is right: multiplying the scores by k raises every weight to the "
            "power k, then the weights are normalised again."
        )

    return kit.run_checks(checks)


def _top_weight(scores: np.ndarray, temperature: float) -> float:
    return float(softmax.softmax(scores, temperature=temperature).max())


def check_temperature_for_top_weight(
    temperature_for_top_weight: Callable[..., Any],
) -> kit.Feedback:
    """Check the learner's search for a temperature (chapter 2, exercise 2).

    Expected signature: ``temperature_for_top_weight(scores: np.ndarray, target: float) ->
    float`` for scores with one largest score and ``1/n < target < 1``. It returns the
    temperature ``τ > 0`` at which the largest weight of ``softmax(scores / τ)`` equals
    ``target``; the checker accepts a top weight within ``1e-6`` of the target.

    Shapes
    ------
    ``scores``: ``(n,)``, ``target``: a number → one positive number.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_temperature_for_top_weight(lambda scores, target: None)
    ✘ Not yet. temperature_for_top_weight([2.0, 1.0, 0.0], 0.9) returned None: did you forget
    the `return` statement?
    """
    name = kit.name_of(temperature_for_top_weight, "temperature_for_top_weight")
    cases = (
        (np.array([2.0, 1.0, 0.0]), 0.9),
        (np.array([2.0, 1.0, 0.0]), 0.5),
        (np.array([4.0, 0.0]), 0.6),
        (np.array([0.3, -1.2, 2.5, 1.0]), 0.999),
        (np.array([0.3, -1.2, 2.5, 1.0]), 0.26),
        (np.array([1000.0, 999.0, 998.0]), 0.9),
    )

    def check_one(scores: np.ndarray, target: float) -> None:
        what = f"{name}({kit.show(scores)}, {target:g})"
        result = kit.call_on_copy(temperature_for_top_weight, scores, target)
        temperature = float(kit.as_result_array(result, np.zeros(()), what))
        if temperature <= 0:
            raise kit.Mistake(
                f"{what} returned {temperature:.6g}, but a temperature must be positive"
            )
        weight = _top_weight(scores, temperature)
        if abs(weight - target) <= 1e-6:
            return
        if abs(temperature - target) <= 1e-6:
            raise kit.Mistake(
                f"{what} returned the target weight {target:g} itself; return the "
                "temperature at which the top weight reaches it"
            )
        if abs(_top_weight(scores, 1 / temperature) - target) <= 1e-6:
            raise kit.Mistake(
                f"{what} returned {temperature:.6g}, which is 1/τ: the top weight is "
                f"{target:g} when the scores are MULTIPLIED by it. Softmax with temperature "
                "divides the scores by τ, so return its inverse"
            )
        direction = (
            "too low: a higher temperature flattens the weights"
            if weight > target
            else "too high: a lower temperature sharpens the weights"
        )
        hint = (
            " You are close: keep narrowing the interval (about 100 halvings, or until it is "
            "shorter than 1e-12)."
            if abs(weight - target) < 1e-2
            else " The top weight falls steadily as τ grows, so a bisection finds it: keep "
            "the half of the interval on whose ends the top weight lies on either side of "
            "the target."
        )
        if scores.max() > 700:
            hint = (
                " These scores are large: the top weight depends only on the differences "
                "of the scores, but np.exp(scores / τ) overflows to inf unless you subtract "
                "the largest score first."
            )
        raise kit.Mistake(
            f"with τ = {temperature:.6g} from {what} the top weight is {weight:.6g}, not "
            f"{target:g}: τ is {direction}.{hint}"
        )

    def checks() -> str:
        for scores, target in cases:
            check_one(scores, target)
        return (
            "Your search finds the temperature: the top weight reaches every target to within "
            "one millionth, from nearly uniform to nearly one-hot."
        )

    return kit.run_checks(checks)


_OVERFLOW_FIX = (
    "Subtract the largest score from every score before exponentiating: the weights do not "
    "change (softmax is shift invariant), and every exponent is then at most 0."
)

_NEG_INF = -np.inf


def _masked_scores() -> np.ndarray:
    """A (B, T_q, T_k) = (2, 3, 4) batch of scores with masked keys and an all-masked row."""
    return np.array(
        [
            [
                [1.0, _NEG_INF, _NEG_INF, _NEG_INF],
                [0.5, 2.0, _NEG_INF, _NEG_INF],
                [_NEG_INF, _NEG_INF, _NEG_INF, _NEG_INF],  # every key masked
            ],
            [
                [1000.0, 1001.0, 1002.0, _NEG_INF],  # overflows without the shift
                [-1000.0, -1001.0, _NEG_INF, -1003.0],  # underflows with the batch's maximum
                [0.0, 1.0, 2.0, 3.0],
            ],
        ]
    )


def check_masked_softmax(masked_softmax: Callable[[np.ndarray], Any]) -> kit.Feedback:
    """Check the learner's softmax over the keys of masked scores (chapter 2, exercise 3).

    Expected signature: ``masked_softmax(scores: np.ndarray) -> np.ndarray`` for scores in which
    masked entries are ``-inf``. It returns the weights of a stable softmax over the keys
    (the last axis): weight exactly 0 for a masked key, and all zeros, not NaN, for a row in
    which every key is masked.

    Shapes
    ------
    ``scores``: ``(B, T_q, T_k)`` → ``(B, T_q, T_k)``: row ``[b, i]`` holds query ``i``'s
    weights over the keys.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_masked_softmax(lambda scores: None)
    ✘ Not yet. masked_softmax(scores without a mask) returned None: did you forget the `return`
    statement?
    """
    name = kit.name_of(masked_softmax, "masked_softmax")
    plain = np.array(
        [
            [[0.0, 1.0, 2.0, 3.0], [3.0, 1.0, 0.0, -1.0], [1.0, 1.0, 1.0, 2.0]],
            [[2.0, -1.0, 0.5, 0.0], [0.0, 0.0, 4.0, 1.0], [-2.0, 1.0, 1.0, 0.0]],
        ]
    )  # (B, T_q, T_k) = (2, 3, 4), nothing masked

    def explain_nan(values: np.ndarray, all_masked: np.ndarray, what: str) -> None:
        bad = ~np.isfinite(values).all(axis=-1)  # (B, T_q)
        if not bad.any():
            return
        if bad[1, 0]:
            raise kit.Mistake(
                f"row (1, 0) of {what}, scores [1000, 1001, 1002, -inf], came out NaN or "
                "infinite. That is overflow: np.exp(1000.0) is inf in float64. " + _OVERFLOW_FIX
            )
        if bad[1, 1]:
            raise kit.Mistake(
                f"row (1, 1) of {what}, scores [-1000, -1001, -inf, -1003], came out NaN. "
                "That is underflow: shifted by a maximum taken over more than its own row "
                "(here 1002), all its exponentials are 0.0 and 0 / 0 is NaN. Subtract each "
                "row's OWN maximum, `scores.max(axis=-1, keepdims=True)`."
            )
        if bad[0, 2] and not bad[~all_masked].any():
            raise kit.Mistake(
                f"row (0, 2) of {what}, in which every key is masked (all -inf), came out "
                "NaN: its maximum is -inf, and -inf - (-inf) is NaN (without the shift it is "
                "0 / 0). A query that may look at nothing should get no weight at all: "
                "shift such a row by 0 instead of its maximum, and divide only where the "
                "total is positive (for example `np.divide(e, total, out=np.zeros_like(e), "
                "where=total > 0)`), so the row stays all zeros."
            )
        b, i = np.argwhere(bad)[0]
        raise kit.Mistake(f"row ({b}, {i}) of {what} came out NaN or infinite")

    def check_one(scores: np.ndarray, what: str) -> None:
        masked = np.isneginf(scores)
        all_masked = masked.all(axis=-1)  # (B, T_q)
        expected = softmax.softmax(scores, axis=-1)
        try:
            result = kit.call_on_copy(masked_softmax, scores)
        except kit.Mistake as mistake:
            if "broadcast" in str(mistake):
                raise kit.Mistake(
                    f"{mistake}. The row totals have shape (B, T_q) = (2, 3) and do not line "
                    "up with the scores (2, 3, 4): keep the summed axis with "
                    "`.sum(axis=-1, keepdims=True)` (shape (2, 3, 1))."
                ) from mistake
            raise
        values = kit.values_like(result, expected)
        if values is not None and masked.any():
            explain_nan(values, all_masked, what)
        got = kit.as_result_array(result, expected, what)
        if all_masked.any() and np.allclose(got[all_masked], 1 / scores.shape[-1]):
            raise kit.Mistake(
                f"row (0, 2) of {what}, in which every key is masked, got the uniform weights "
                f"1/{scores.shape[-1]}. That is what happens when -inf is replaced by a large "
                "negative number such as -1e9: the row's scores are then all equal. A query "
                "that may look at nothing should get weight 0 for every key."
            )
        if (got[masked] != 0).any():
            b, i, j = np.argwhere(masked & (got != 0))[0]
            raise kit.Mistake(
                f"key {j} of row ({b}, {i}) of {what} is masked (score -inf) but got weight "
                f"{got[b, i, j]:.4g}: e^(-inf) = 0, so a masked key must get exactly 0"
            )
        row_sums = got.sum(axis=-1)
        if not np.allclose(row_sums[~all_masked], 1.0):
            for axis, over in ((1, "the queries"), (0, "the batch")):
                if np.allclose(got.sum(axis=axis), 1.0):
                    raise kit.Mistake(
                        f"in {what} the weights sum to one along axis={axis}, over {over}, "
                        "but each query needs weights over the KEYS: apply softmax along "
                        "the last axis, axis=-1"
                    )
            raise kit.Mistake(
                f"the rows of {what} sum to {kit.show(row_sums.round(4))}, but each row with an "
                "unmasked key should sum to 1 (and an all-masked row to 0): take the maximum "
                "and the sum along axis=-1 with keepdims=True"
            )
        kit.assert_close(got, expected, what)

    def checks() -> str:
        check_one(plain, f"{name}(scores without a mask)")
        check_one(_masked_scores(), f"{name}(masked scores)")
        return (
            "Your masked softmax is right: masked keys get exactly 0, a row with nothing to "
            "look at gets zeros instead of NaN, and huge or tiny scores are handled."
        )

    return kit.run_checks(checks)


def check_log_sum_exp(log_sum_exp: Callable[[np.ndarray], Any]) -> kit.Feedback:
    """Check the learner's log-sum-exp (chapter 2, exercise 4).

    Expected signature: ``log_sum_exp(scores: np.ndarray) -> float``: the logarithm of the sum
    of the exponentials of the scores, ``log Σ_i e^(z_i)``, computed without overflow or
    underflow (for ``[1000, 1000]`` it is ``1000 + log 2``).

    Shapes
    ------
    ``scores``: ``(n,)`` → one number.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_log_sum_exp(lambda scores: None)
    ✘ Not yet. log_sum_exp([1.0, 2.0, 3.0]) returned None: did you forget the `return`
    statement?
    """
    name = kit.name_of(log_sum_exp, "log_sum_exp")
    fix = (
        "Take out the maximum m first: log(sum(exp(z))) = m + log(sum(exp(z - m))), where "
        "every exponent is at most 0 and the sum is at least 1."
    )
    cases = (
        (np.array([1.0, 2.0, 3.0]), ""),
        (np.array([5.0]), ""),
        (
            np.array([1000.0, 1000.0]),
            "That is overflow: np.exp(1000.0) is inf in float64. " + fix,
        ),
        (
            np.array([-1000.0, -1000.0]),
            "That is underflow: np.exp(-1000.0) is 0.0, and log(0) is -inf. " + fix,
        ),
        (
            np.array([-1000.0, 0.0, 1000.0]),
            "Some exponent is still far above 709.78, where np.exp overflows. " + fix,
        ),
    )

    def checks() -> str:
        for scores, explanation in cases:
            what = f"{name}({kit.show(scores)})"
            largest = scores.max()
            expected = np.asarray(softmax.log_sum_exp(scores))
            result = kit.call_on_copy(log_sum_exp, scores)
            kit.explain_non_finite(result, expected, what, explanation)
            got = kit.as_result_array(result, expected, what)
            if not np.isclose(got, expected) and np.isclose(got, expected - largest):
                raise kit.Mistake(
                    f"{what} is off by exactly the maximum ({largest:g}): you subtracted it "
                    "before exponentiating but did not add it back, "
                    "m + log(sum(exp(z - m)))"
                )
            if not np.isclose(got, expected) and np.isclose(got, largest):
                raise kit.Mistake(
                    f"{what} returned the maximum score; log-sum-exp is a smooth maximum, a "
                    f"little larger: {float(expected):.6g}"
                )
            kit.assert_close(got, expected, what)
        return (
            f"Your log-sum-exp is exact and stable; softmax(z) = exp(z - {name}(z)) "
            "follows from it."
        )

    return kit.run_checks(checks)
