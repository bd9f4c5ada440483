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
            kit.call_on_copy(
                weights_after_scaling,
                weights,
                factor,
                argument="weights",
                in_place="weights **= factor",
            ),
            expected,
            what,
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
        if factor != 1 and np.allclose(got, weights * factor):
            raise kit.Mistake(
                f"{what} multiplied the WEIGHTS by {factor:g}, so they sum to {got.sum():.6g}. "
                f"The factor multiplies the SCORES, and with them every difference z_i - z_j: "
                f"every ratio of two weights, e^(z_i - z_j), is raised to the power {factor:g}"
            )
        if np.allclose(got, factor * np.log(weights)):
            raise kit.Mistake(
                f"{what} returned k·log w: scores (up to a constant) of the new weights, not the "
                "weights. Take their softmax, or raise the weights to the power k and normalise"
            )
        powered = weights**factor
        if factor != 1 and np.allclose(got, powered / powered.max()):
            raise kit.Mistake(
                f"the weights of {what} sum to {got.sum():.6g}, not 1: you divided the powers "
                "by the LARGEST one; divide by their total"
            )
        kit.require_unrounded(got, expected, what)
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
        result = kit.call_on_copy(temperature_for_top_weight, scores, target, argument="scores")
        temperature = float(kit.as_result_array(result, np.zeros(()), what))
        if temperature > 0 and abs(_top_weight(scores, temperature) - target) <= 1e-6:
            return
        if (
            abs(temperature - target) > 1e-6
            and abs(_top_weight(scores, float(np.exp(np.clip(temperature, -700, 700)))) - target)
            <= 1e-6
        ):
            raise kit.Mistake(
                f"{what} returned {temperature:.6g}, which is log τ: the top weight is "
                f"{target:g} at τ = e^{temperature:.6g}. If you searched over log τ, return "
                "the exponential of the result"
            )
        if temperature <= 0:
            raise kit.Mistake(
                f"{what} returned {temperature:.6g}, but a temperature must be positive"
            )
        weight = _top_weight(scores, temperature)
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
        first, second = np.sort(scores)[::-1][:2]
        for others, condition in (
            (1, "if the row held only its two largest scores"),
            (len(scores) - 1, "if every other score equalled the second largest"),
        ):
            # The top weight of a row whose `others` other scores all equal the second
            # largest, 1 / (1 + others · e^(-(z_1 - z_2) / τ)), solved for τ: the formula
            # of two scores, or of a row whose other scores tie.
            with np.errstate(all="ignore"):
                closed_form = (first - second) / np.log(others * target / (1 - target))
            if len(scores) < 3 or not 0 < closed_form < np.inf:
                continue
            if np.isclose(temperature, closed_form, rtol=1e-6):
                raise kit.Mistake(
                    f"{what} returned {temperature:.6g}, the temperature at which the top "
                    f"weight would be {target:g} {condition}: a formula for another row. "
                    f"Here the top weight is {weight:.6g}. The top weight depends on every "
                    "score, so search for τ on the whole row (a bisection)"
                )
        for reordered in (np.sort(scores)[::-1], np.sort(scores)):
            if np.array_equal(reordered, scores):
                continue
            try:
                other = float(
                    kit.as_array(
                        kit.call_on_copy(
                            temperature_for_top_weight, reordered, target, argument="scores"
                        ),
                        what,
                    )
                )
            except (kit.Mistake, TypeError):
                continue
            if other > 0 and abs(_top_weight(reordered, other) - target) <= 1e-6:
                raise kit.Mistake(
                    f"with τ = {temperature:.6g} from {what} the top weight is {weight:.6g}, "
                    f"not {target:g}, yet for the same scores in the order "
                    f"{kit.show(reordered)} your τ is right: your search depends on where the "
                    "largest score stands. Search on the LARGEST weight, `.max()`, wherever "
                    "it stands in the row"
                )
        direction = (
            "too low: a higher temperature flattens the weights"
            if weight > target
            else "too high: a lower temperature sharpens the weights"
        )
        hint = (
            " You are close: keep narrowing the interval (about 100 halvings, or until it is "
            "shorter than 1e-12)."
            if abs(weight - target) < 1e-4
            else " The top weight falls steadily as τ grows, so a bisection finds it: start "
            "from an interval whose ends give top weights on either side of the target "
            "(widen it until they do), then keep the half on whose ends they still are, "
            "until it is shorter than 1e-12 (about 100 halvings)."
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


def _log_softmax(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    """log softmax(scores) along ``axis``: the scores minus their log-sum-exp."""
    return scores - np.expand_dims(softmax.log_sum_exp(scores, axis=axis), axis)


def check_log_softmax(log_softmax: Callable[[np.ndarray], Any]) -> kit.Feedback:
    """Check the learner's log-softmax of each row of a score matrix (chapter 2, exercise 4).

    Expected signature: ``log_softmax(scores: np.ndarray) -> np.ndarray``: the logarithms of
    the softmax weights of each row (the last axis), finite even where a weight is so small
    that it rounds to 0.0, and computed without overflow for scores around ±1000.

    Shapes
    ------
    ``scores``: ``(T_q, T_k)`` → ``(T_q, T_k)``: row ``i`` holds the log-weights of query ``i``
    over the keys.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_log_softmax(lambda scores: None)
    ✘ Not yet. log_softmax(a 3 × 3 matrix of small scores) returned None: did you forget the
    `return` statement?
    """
    name = kit.name_of(log_softmax, "log_softmax")
    cases = (
        (
            np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [2.0, -1.0, 0.5]]),
            "a 3 × 3 matrix of small scores",
        ),
        (
            np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1001.0, -1002.0]]),
            "scores around +1000 and -1000",
        ),
        (
            np.array([[0.0, -1000.0, 5.0], [3.0, 3.0, -800.0]]),
            "rows in which some weights round to 0.0",
        ),
    )

    def explain_non_finite(scores: np.ndarray, values: np.ndarray, what: str) -> None:
        bad = ~np.isfinite(values)
        if not bad.any():
            return
        weights = softmax.softmax(scores, axis=-1)
        if (weights[bad] == 0).all() and np.isneginf(values[bad]).all():
            i, j = np.argwhere(bad)[0]
            raise kit.Mistake(
                f"{what} gives -inf at ({i}, {j}), where the score is {scores[i, j]:g} and "
                f"the row's best is {scores[i].max():g}. Its weight is so small that it "
                "rounds to 0.0, and log(0) = -inf, so taking the log of the weights cannot "
                "work. Its true log-weight is finite: compute it from the scores, as the "
                "score minus the log-sum-exp of its row."
            )
        if scores.max() >= 1000 and bad[0].any():
            raise kit.Mistake(
                f"row 0 of {what}, scores [1000, 1001, 1002], came out NaN or infinite. That "
                "is overflow: np.exp(1000.0) is inf in float64. " + _OVERFLOW_FIX
            )
        if scores.max() >= 1000 and bad[1].any():
            raise kit.Mistake(
                f"row 1 of {what}, scores [-1000, -1001, -1002], came out NaN or infinite. "
                "Shifted by a maximum taken over the whole matrix (1002), its exponentials "
                "are all 0.0 and their log is -inf. Subtract each row's OWN maximum, "
                "`scores.max(axis=-1, keepdims=True)`."
            )
        i, j = np.argwhere(bad)[0]
        raise kit.Mistake(f"entry ({i}, {j}) of {what} came out NaN or infinite")

    def check_one(scores: np.ndarray, description: str) -> None:
        what = f"{name}({description})"
        expected = _log_softmax(scores)
        try:
            result = kit.call_on_copy(log_softmax, scores, argument="scores")
        except kit.Mistake as mistake:
            if "broadcast" in str(mistake):
                raise kit.Mistake(
                    f"{mistake}. The row totals have shape (T_q,) = ({scores.shape[0]},) and "
                    f"do not line up with the scores {scores.shape}: keep the summed axis with "
                    f"`keepdims=True` (shape ({scores.shape[0]}, 1))."
                ) from mistake
            raise
        values = kit.values_like(result, expected)
        if values is not None:
            explain_non_finite(scores, values, what)
        got = kit.as_result_array(result, expected, what)
        largest = scores.max(axis=-1, keepdims=True)
        known = (
            (
                softmax.softmax(scores, axis=-1),
                "returned the weights, not their logarithms",
            ),
            (
                scores - largest,
                "returned the scores minus each row's maximum. That shift alone is not the "
                "log of the weights: subtract the log of the row's total too, "
                "log Σ_j e^(z_j - m)",
            ),
            (
                expected + largest,
                "is off by each row's maximum m: log Σ_j e^(z_j) = m + log Σ_j e^(z_j - m), "
                "so after shifting the scores by m, add m back to the log-sum-exp",
            ),
            (
                _log_softmax(scores, axis=0),
                "normalised each COLUMN (axis=0), over the queries; each query needs "
                "log-weights over the keys, the last axis, axis=-1",
            ),
            (
                scores - softmax.log_sum_exp(scores.reshape(-1)),
                "subtracted one log-sum-exp taken over the whole matrix; each row needs its "
                "own, along axis=-1 with keepdims=True",
            ),
        )
        own_shift = scores - largest  # (T_q, T_k): each row minus its own maximum
        known += (
            (
                own_shift - np.log(np.exp(own_shift).sum()),
                "divided by one total of the whole matrix; each row needs its own, "
                "`sum(axis=-1, keepdims=True)`",
            ),
        )
        if scores.shape[0] == scores.shape[1]:  # only a square matrix broadcasts silently
            without_keepdims = (
                "without keepdims=True the row maxima or totals, shape (T_q,), line up with "
                "the LAST axis, so entry (i, j) is shifted by row j's. Keep the reduced axis "
                "with `keepdims=True`"
            )
            shifted = scores - largest[:, 0]  # the maximum of row j taken from column j
            known += (
                (
                    scores - softmax.log_sum_exp(scores, axis=-1),
                    "subtracted the log-sum-exp of row j from column j: " + without_keepdims,
                ),
                (shifted - softmax.log_sum_exp(shifted, axis=-1), without_keepdims),
                (
                    own_shift - np.log(np.exp(own_shift).sum(axis=-1)),
                    "subtracted the log of row j's total from column j: the total was summed "
                    "without keepdims=True, so its shape (T_q,) lines up with the LAST axis. "
                    "Keep the reduced axis with `keepdims=True`",
                ),
                (
                    shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True)),
                    "shifted entry (i, j) by the maximum of row j: the maximum was taken "
                    "without keepdims=True, so its shape (T_q,) lines up with the LAST axis. "
                    "Keep the reduced axis with `keepdims=True`",
                ),
            )
        if kit.match_known_mistakes(got, expected, known, what, joiner=" "):
            return
        vanished = softmax.softmax(scores, axis=-1) == 0  # weights that round to 0.0
        if vanished.any() and kit.equal(got[~vanished], expected[~vanished]):
            i, j = np.argwhere(vanished & ~np.isclose(got, expected))[0]
            raise kit.Mistake(
                f"{what} gives {got[i, j]:.6g} at ({i}, {j}), where the weight rounds to 0.0 "
                f"and the true log-weight is {expected[i, j]:.6g}. Clipping the weights or "
                "adding a small number before the log hides log(0) = -inf but does not give "
                "the log-weight: compute it from the scores, as the score minus the "
                "log-sum-exp of its row"
            )
        kit.require_unrounded(got, expected, what)
        row_sums = np.exp(got).sum(axis=-1)
        if not np.allclose(row_sums, 1.0):
            raise kit.Mistake(
                f"the exponentials of each row of {what} should sum to 1 (they are the "
                f"weights), but they sum to {kit.show(row_sums.round(4))}"
            )
        kit.assert_close(got, expected, what)

    def checks() -> str:
        # The known mistakes are computed on these scores too, and underflow on purpose.
        with np.errstate(all="ignore"):
            for scores, description in cases:
                check_one(scores, description)
        return (
            "Your log-softmax is exact and stable: every log-weight is finite, even where the "
            "weight itself rounds to 0.0."
        )

    return kit.run_checks(checks)


def _ch2_log_sum_exp_mistakes(scores: np.ndarray, fix: str) -> list[tuple[Any, str]]:
    """Results of the usual wrong log-sum-exp formulas on ``scores``, each with what went
    wrong (``fix`` says how to compute it)."""
    largest = scores.max()
    shifted = scores - largest  # (n,), every entry <= 0
    return [
        (
            largest + np.log(scores.size),
            "returned max + log n, its upper bound, which it reaches only when all the scores "
            f"are equal; add up the exponentials: {fix}",
        ),
        (
            np.log(np.exp(shifted)).sum() + largest,
            "took the logarithm of each exponential before adding them up; the logarithm "
            "comes after the sum, log(sum(exp(z - m)))",
        ),
        (
            np.exp(shifted).sum(),
            "returned the sum of the shifted exponentials; take its logarithm and add the "
            "maximum back, m + log(sum(exp(z - m)))",
        ),
        (
            largest + np.log1p(np.exp(shifted).sum()),
            "used np.log1p, which adds 1 before the logarithm (log1p(x) = log(1 + x)); the "
            "sum needs np.log itself",
        ),
    ]


def check_log_sum_exp(log_sum_exp: Callable[[np.ndarray], Any]) -> kit.Feedback:
    """Check the learner's log-sum-exp (chapter 2, exercise 3).

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
            result = kit.call_on_copy(log_sum_exp, scores, argument="scores")
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
            with np.errstate(all="ignore"):  # log(0) in a wrong formula is no warning here
                mistakes = _ch2_log_sum_exp_mistakes(scores, fix)
            if not kit.match_known_mistakes(got, expected, mistakes, what, joiner=" "):
                kit.require_unrounded(got, expected, what)
                kit.assert_close(got, expected, what)
        kit.require_own_code(
            log_sum_exp,
            (cases[0][0],),
            ("selfattn_lib.softmax.log_sum_exp",),
            name,
            kit.WRITE_IT_YOURSELF,
        )
        return (
            f"Your log-sum-exp is exact and stable; softmax(z) = exp(z - {name}(z)) "
            "follows from it."
        )

    return kit.run_checks(checks)
