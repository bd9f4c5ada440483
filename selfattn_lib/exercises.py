"""Checkers for the exercises of every chapter.

A checker runs the learner's function on a few inputs and returns a :class:`Feedback` that
says *what* is wrong — a missing ``return``, a wrong shape, rows that do not sum to one, an
overflow for large inputs — instead of just "wrong". An exercise stub that still raises
``NotImplementedError`` is reported as "not attempted yet", so a notebook with untouched
stubs still runs from top to bottom.

Each checker is named ``check_<what the learner writes>`` and documents the signature it
expects.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from selfattn_lib import similarity, softmax


@dataclass(frozen=True)
class Feedback:
    """The outcome of a checker: whether the answer passed, and a message for the learner."""

    passed: bool
    attempted: bool
    message: str

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        if self.passed:
            return f"✔ Correct. {self.message}"
        if not self.attempted:
            return f"○ Not attempted yet. {self.message}"
        return f"✘ Not yet. {self.message}"


class _Mistake(Exception):
    """Raised inside a checker to stop at the first problem found."""


class _NotAttempted(Exception):
    """Raised inside a checker when the learner's function is still the stub."""


def _call(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call the learner's function, turning its failures into feedback."""
    if not callable(function):
        raise _Mistake(f"expected a function, got {type(function).__name__}")
    try:
        return function(*args, **kwargs)
    except NotImplementedError as error:
        raise _NotAttempted(
            "Replace `raise NotImplementedError` with your code, then run the check again."
        ) from error
    except Exception as error:  # noqa: BLE001 - any error of the learner's code is feedback
        raise _Mistake(
            f"your function raised {type(error).__name__}: {error} "
            f"(called with {_describe_arguments(args)})"
        ) from error


def _describe_arguments(args: tuple[Any, ...]) -> str:
    parts = []
    for arg in args:
        array = np.asarray(arg)
        parts.append(f"an array of shape {array.shape}" if array.ndim else repr(arg))
    return ", ".join(parts) if parts else "no arguments"


def _as_result_array(result: Any, expected: np.ndarray, what: str) -> np.ndarray:
    """Check that ``result`` is numeric, finite and shaped like ``expected``."""
    if result is None:
        raise _Mistake(f"{what} returned None: did you forget the `return` statement?")
    try:
        got = np.asarray(result, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise _Mistake(f"{what} must return numbers, got {type(result).__name__}") from error
    if got.shape != expected.shape:
        raise _Mistake(
            f"{what} returned shape {got.shape}, expected {expected.shape}"
            + (" (a single number)" if expected.shape == () else "")
        )
    if np.isnan(got).any():
        raise _Mistake(f"{what} returned NaN (not a number): look for 0/0 or inf - inf")
    if np.isinf(got).any():
        raise _Mistake(f"{what} returned infinity: a number overflowed")
    return got


def _assert_close(got: np.ndarray, expected: np.ndarray, what: str, atol: float = 1e-8) -> None:
    if not np.allclose(got, expected, rtol=1e-6, atol=atol):
        index = np.unravel_index(np.argmax(np.abs(got - expected)), got.shape) if got.ndim else ()
        where = f" at index {tuple(int(i) for i in index)}" if got.ndim else ""
        raise _Mistake(
            f"{what} is off{where}: got {got[index]:.6g}, expected {expected[index]:.6g}"
        )


def _run_checks(checks: Callable[[], str]) -> Feedback:
    try:
        praise = checks()
    except _NotAttempted as stub:
        return Feedback(passed=False, attempted=False, message=str(stub))
    except _Mistake as mistake:
        return Feedback(passed=False, attempted=True, message=str(mistake))
    return Feedback(passed=True, attempted=True, message=praise)


# --- Chapter 2: softmax ---


def _show(array: np.ndarray) -> str:
    """An array as a short Python list for a message, e.g. ``[1000.0, 1001.0]``."""
    return str(np.asarray(array).tolist())


def _call_quietly(function: Callable[..., Any], *args: Any) -> Any:
    """Call the learner's function with NumPy's floating-point warnings switched off.

    A naive softmax overflows on purpose in these checks. The checker explains the overflow
    in words, so no ``RuntimeWarning`` line reaches the notebook's stderr.
    """
    with np.errstate(all="ignore"):
        return _call(function, *args)


def _call_on_copy(function: Callable[..., Any], scores: np.ndarray, *args: Any) -> Any:
    """Call ``function(copy of scores, *args)`` and complain if it changed its argument."""
    given = scores.copy()
    result = _call_quietly(function, given, *args)
    if not np.array_equal(given, scores):
        raise _Mistake(
            "your function changed the array it was given (for example with "
            "`scores -= scores.max()`): compute `scores - scores.max()` into a new array, "
            "so that the caller's scores stay as they were"
        )
    return result


def _explain_non_finite(result: Any, expected: np.ndarray, what: str, explanation: str) -> None:
    """Raise ``explanation`` if ``result`` has the expected shape but holds NaN or infinity."""
    if result is None:
        return  # _as_result_array reports the missing return
    try:
        values = np.asarray(result, dtype=np.float64)
    except (TypeError, ValueError):
        return  # _as_result_array reports results that are not numbers
    if values.shape == expected.shape and not np.isfinite(values).all():
        kind = "NaN (not a number)" if np.isnan(values).any() else "infinity"
        raise _Mistake(f"{what} returned {kind}. {explanation}")


def _check_weights_of_a_row(
    got: np.ndarray, scores: np.ndarray, expected: np.ndarray, what: str, atol: float = 1e-8
) -> None:
    """Name the usual mistakes of a 1-D softmax, then compare with the expected weights."""
    if (got < 0).any():
        raise _Mistake(
            f"{what} has a negative weight ({got.min():.4g}): each weight is an exponential "
            "divided by a positive total, so none can be negative. Did you exponentiate?"
        )
    total = got.sum()
    if not np.isclose(total, 1.0):
        raise _Mistake(
            f"the weights of {what} sum to {total:.6g}, not 1: divide every exponential by "
            "the sum of all of them"
        )
    plain_division = scores / scores.sum() if scores.sum() != 0 else None
    if (
        plain_division is not None
        and np.allclose(got, plain_division)
        and not np.allclose(got, expected)
    ):
        raise _Mistake(
            f"{what} divided the scores by their sum without exponentiating them first: "
            "softmax is exp(score) / sum(exp(scores))"
        )
    higher = scores[:, None] > scores[None, :]
    inverted = higher & (got[:, None] < got[None, :] - 1e-12)
    if inverted.any():
        i, j = np.argwhere(inverted)[0]
        raise _Mistake(
            f"{what} gives a higher score a lower weight ({scores[i]:g} gets {got[i]:.4g}, "
            f"{scores[j]:g} gets {got[j]:.4g}): softmax keeps the order of the scores. "
            "Did you take absolute values or flip a sign?"
        )
    _assert_close(got, expected, what, atol=atol)


def check_softmax_vector(softmax_vector: Callable[[np.ndarray], Any]) -> Feedback:
    """Check the learner's softmax of one row of scores (chapter 2, exercise 1).

    Expected signature: ``softmax_vector(scores: np.ndarray) -> np.ndarray``, where ``scores``
    has shape ``(n,)`` and the result holds the ``n`` weights
    ``exp(scores) / sum(exp(scores))``. It need not be numerically stable yet.

    Examples
    --------
    >>> check_softmax_vector(lambda s: np.exp(s) / np.exp(s).sum()).passed
    True
    """

    def checks() -> str:
        for scores in (
            np.array([1.0, 2.0, 3.0]),
            np.array([-1.0, 0.0, 2.0, -3.0]),
            np.array([0.5, 0.5]),
            np.array([4.0]),
        ):
            what = f"softmax_vector({_show(scores)})"
            expected = softmax.softmax(scores)
            got = _as_result_array(_call_on_copy(softmax_vector, scores), expected, what)
            _check_weights_of_a_row(got, scores, expected, what)
        return "Your softmax turns a row of scores into positive weights that sum to one."

    return _run_checks(checks)


_OVERFLOW_FIX = (
    "Subtract the largest score from every score before exponentiating: the weights do not "
    "change (softmax is shift invariant), and every exponent is then at most 0."
)


def check_stable_softmax(stable_softmax: Callable[[np.ndarray], Any]) -> Feedback:
    """Check the learner's numerically stable softmax (chapter 2, exercise 2).

    Expected signature: ``stable_softmax(scores: np.ndarray) -> np.ndarray`` for scores of
    shape ``(n,)``. It must return the right weights, never NaN or infinity, for huge scores
    (``[1000, 1001, 1002]``), very negative ones (``[-1000, -1001]``), a wide range
    (``[-1000, 0, 1000]``) and float32 scores (``[100, 101, 102]``), and must not change the
    array it is given.

    Examples
    --------
    >>> def stable(s):
    ...     e = np.exp(s - s.max())
    ...     return e / e.sum()
    >>> check_stable_softmax(stable).passed
    True
    """
    cases = (
        (np.array([1.0, 2.0, 3.0]), ""),
        (
            np.array([1000.0, 1001.0, 1002.0]),
            "That is overflow: np.exp(1000.0) is inf in float64 (so is the exponential of "
            "anything above about 709.78), and inf / inf is NaN. " + _OVERFLOW_FIX,
        ),
        (
            np.array([-1000.0, -1001.0]),
            "That is underflow: np.exp(-1000.0) is exactly 0.0 in float64, so the total is 0 "
            "and 0 / 0 is NaN. Subtracting the largest score fixes this too: the largest "
            "term becomes exp(0) = 1, so the total is at least 1.",
        ),
        (
            np.array([-1000.0, 0.0, 1000.0]),
            "That is overflow: some exponent is still far above 709.78. Subtract the LARGEST "
            "score (not the smallest, nor the mean), so that every exponent is at most 0.",
        ),
        (
            np.array([100.0, 101.0, 102.0], dtype=np.float32),
            "That is overflow in float32: np.exp overflows for float32 scores above about "
            "88.72 (the log of the largest float32), so these scores overflow although "
            "they would be fine in float64. " + _OVERFLOW_FIX,
        ),
    )

    def checks() -> str:
        for scores, explanation in cases:
            shown = _show(scores)
            if scores.dtype != np.float64:
                shown = f"np.array({shown}, dtype=np.{scores.dtype})"
            what = f"stable_softmax({shown})"
            expected = softmax.softmax(scores.astype(np.float64))
            result = _call_on_copy(stable_softmax, scores)
            _explain_non_finite(result, expected, what, explanation)
            got = _as_result_array(result, expected, what)
            _check_weights_of_a_row(got, scores.astype(np.float64), expected, what, atol=1e-6)
        return (
            "Your softmax is stable: huge, tiny, widely spread and float32 scores all give "
            "the right weights."
        )

    return _run_checks(checks)


def check_softmax_rows(softmax_rows: Callable[[np.ndarray], Any]) -> Feedback:
    """Check the learner's softmax over the rows of a score matrix (chapter 2, exercise 3).

    Expected signature: ``softmax_rows(scores: np.ndarray) -> np.ndarray`` for scores of shape
    ``(T_q, T_k)`` (one row per query, one column per key), returning weights of the same
    shape in which every ROW sums to one: a stable softmax along ``axis=-1``.

    Examples
    --------
    >>> def rows(s):
    ...     e = np.exp(s - s.max(axis=-1, keepdims=True))
    ...     return e / e.sum(axis=-1, keepdims=True)
    >>> check_softmax_rows(rows).passed
    True
    """
    square = np.array([[0.0, 1.0, 2.0], [3.0, 1.0, 0.0], [1.0, 1.0, 1.0]])  # (T_q, T_k) = (3, 3)
    wide = np.array([[1.0, 2.0, 3.0, 0.0], [1.0, 1.0, -1.0, 2.0]])  # (2, 4)
    large = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1001.0, -1002.0]])  # (2, 3)

    def check_one(scores: np.ndarray) -> None:
        what = f"softmax_rows({_show(scores)})"
        expected = softmax.softmax(scores, axis=-1)
        result = _call_on_copy(softmax_rows, scores)
        if scores is large:
            _explain_large_rows(result, expected, what)
        got = _as_result_array(result, expected, what)
        exponentials = np.exp(scores - scores.max(axis=-1, keepdims=True))
        if scores.shape[0] == scores.shape[1] and np.allclose(
            got, exponentials / exponentials.sum(axis=-1)
        ):
            raise _Mistake(
                f"{what} divides each column j by the total of ROW j: the row totals have "
                "shape (T_q,) and broadcast along the wrong axis. Keep the summed axis with "
                "`.sum(axis=-1, keepdims=True)` (shape (T_q, 1))."
            )
        row_sums = got.sum(axis=-1)
        if not np.allclose(row_sums, 1.0):
            if np.allclose(got.sum(axis=0), 1.0):
                raise _Mistake(
                    f"in {what} your columns sum to one, but each ROW should: a row holds one "
                    "query's scores for every key, so apply softmax along axis=-1 (the keys), "
                    "not axis=0"
                )
            if np.isclose(got.sum(), 1.0):
                raise _Mistake(
                    f"in {what} all entries together sum to one, but each ROW should on its "
                    "own: take the maximum and the sum along axis=-1 with keepdims=True"
                )
            raise _Mistake(
                f"the rows of {what} sum to {_show(row_sums.round(4))}, but each should sum "
                "to 1: take the maximum and the sum along axis=-1 with keepdims=True"
            )
        _assert_close(got, expected, what)

    def checks() -> str:
        for scores in (square, wide, large):
            check_one(scores)
        return "Your softmax works row by row: every query's weights sum to one."

    return _run_checks(checks)


def _explain_large_rows(result: Any, expected: np.ndarray, what: str) -> None:
    """Say which row of the ``large`` case overflowed or underflowed, and why."""
    if result is None:
        return
    try:
        values = np.asarray(result, dtype=np.float64)
    except (TypeError, ValueError):
        return
    if values.shape != expected.shape:
        return
    bad_rows = ~np.isfinite(values).all(axis=-1)
    if bad_rows[0]:
        raise _Mistake(
            f"row 0 of {what} is NaN or infinite. That is overflow: np.exp(1000.0) is inf in "
            "float64. " + _OVERFLOW_FIX
        )
    if bad_rows[1]:
        raise _Mistake(
            f"row 1 of {what} is NaN. That is underflow: the exponentials of row 1 are all "
            "0.0 once its scores are shifted by the maximum of the whole matrix (1002), so "
            "its total is 0 and 0 / 0 is NaN. Subtract each row's OWN maximum, "
            "`scores.max(axis=-1, keepdims=True)`."
        )


def check_softmax_temperature(
    softmax_temperature: Callable[[np.ndarray, float], Any],
    *,
    must_reject_nonpositive: bool = False,
) -> Feedback:
    """Check the learner's softmax with a temperature (chapter 2, exercise 4).

    Expected signature: ``softmax_temperature(scores: np.ndarray, temperature: float) ->
    np.ndarray`` for scores of shape ``(n,)``, returning ``softmax(scores / temperature)``
    computed stably. With ``must_reject_nonpositive=True`` it must also raise ``ValueError``
    when ``temperature <= 0``.

    Examples
    --------
    >>> def tempered(s, t):
    ...     if t <= 0:
    ...         raise ValueError("temperature must be positive")
    ...     e = np.exp((s - s.max()) / t)
    ...     return e / e.sum()
    >>> check_softmax_temperature(tempered, must_reject_nonpositive=True).passed
    True
    """
    scores = np.array([1.0, 3.0, 2.0, -1.0])
    tie = np.array([2.0, 2.0, 0.0])

    def run(row: np.ndarray, temperature: float) -> tuple[np.ndarray, np.ndarray, str]:
        what = f"softmax_temperature({_show(row)}, {temperature:g})"
        expected = softmax.softmax(row, temperature=temperature)
        result = _call_on_copy(softmax_temperature, row, temperature)
        _explain_non_finite(
            result,
            expected,
            what,
            f"That is overflow: scores / temperature reach {row.max() / temperature:g}, and "
            "np.exp of anything above about 709.78 is inf. Subtract the maximum of "
            "scores / temperature before exponentiating.",
        )
        return _as_result_array(result, expected, what), expected, what

    def checks() -> str:
        got, expected, what = run(scores, 1.0)
        _check_weights_of_a_row(got, scores, expected, what)

        got, expected, what = run(scores, 0.5)
        if np.allclose(got, softmax.softmax(scores * 0.5)):
            raise _Mistake(
                f"{what} multiplies the scores by the temperature; divide by it instead, so "
                "that a small temperature sharpens the weights and a large one flattens them"
            )
        if np.allclose(got, softmax.softmax(scores)):
            raise _Mistake(
                f"{what} is the same as with temperature 1: the temperature has no effect. "
                "Divide the scores by it before the softmax."
            )
        _check_weights_of_a_row(got, scores, expected, what)

        got, expected, what = run(scores, 0.001)
        if got[1] < 0.999:
            raise _Mistake(
                f"with a tiny temperature almost all the weight should go to the highest "
                f"score (index 1), but {what} gives it {got[1]:.4g}"
            )
        _assert_close(got, expected, what)

        got, expected, what = run(scores, 1000.0)
        if not np.allclose(got, 1 / len(scores), atol=1e-2):
            raise _Mistake(
                f"with a huge temperature the weights should be nearly equal (about "
                f"1/{len(scores)} = {1 / len(scores):g} each), but {what} gives "
                f"{_show(got.round(4))}"
            )
        _assert_close(got, expected, what)

        got, expected, what = run(tie, 0.01)
        if not np.allclose(got, [0.5, 0.5, 0.0], atol=1e-6):
            raise _Mistake(
                f"with a tie at the top, a tiny temperature splits the weight equally between "
                f"the tied scores: {what} should be about [0.5, 0.5, 0.0], got "
                f"{_show(got.round(4))}"
            )
        _assert_close(got, expected, what)

        if must_reject_nonpositive:
            for temperature in (0.0, -1.0):
                _expect_value_error(softmax_temperature, scores, temperature)
        return (
            "Your temperature works: 1 gives the plain softmax, small values pick the "
            "maximum (sharing it fairly in a tie) and large values flatten the weights."
            + (" Non-positive temperatures are rejected." if must_reject_nonpositive else "")
        )

    return _run_checks(checks)


def _expect_value_error(
    softmax_temperature: Callable[[np.ndarray, float], Any], scores: np.ndarray, temperature: float
) -> None:
    what = f"softmax_temperature({_show(scores)}, {temperature:g})"
    try:
        with np.errstate(all="ignore"):
            softmax_temperature(scores.copy(), temperature)
    except NotImplementedError as error:
        raise _NotAttempted(
            "Replace `raise NotImplementedError` with your code, then run the check again."
        ) from error
    except ValueError:
        return
    except Exception as error:  # noqa: BLE001 - any other error is feedback for the learner
        raise _Mistake(
            f"{what} raised {type(error).__name__}; raise ValueError for a temperature that "
            "is not positive"
        ) from error
    raise _Mistake(
        f"{what} returned a result instead of raising ValueError: a temperature must be "
        "positive (0 divides by zero, and a negative one turns the ranking upside down)"
    )


def check_log_sum_exp(log_sum_exp: Callable[[np.ndarray], Any]) -> Feedback:
    """Check the learner's log-sum-exp (chapter 2, exercise 5).

    Expected signature: ``log_sum_exp(scores: np.ndarray) -> float`` for scores of shape
    ``(n,)``, returning the single number ``log(sum(exp(scores)))``, computed without overflow
    or underflow (for ``[1000, 1000]`` it is ``1000 + log 2``).

    Examples
    --------
    >>> def lse(s):
    ...     m = s.max()
    ...     return m + np.log(np.exp(s - m).sum())
    >>> check_log_sum_exp(lse).passed
    True
    """
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
            what = f"log_sum_exp({_show(scores)})"
            largest = scores.max()
            expected = np.asarray(largest + np.log(np.exp(scores - largest).sum()))
            result = _call_on_copy(log_sum_exp, scores)
            _explain_non_finite(result, expected, what, explanation)
            got = _as_result_array(result, expected, what)
            if not np.isclose(got, expected) and np.isclose(got, expected - largest):
                raise _Mistake(
                    f"{what} is off by exactly the maximum ({largest:g}): you subtracted it "
                    "before exponentiating but did not add it back, "
                    "m + log(sum(exp(z - m)))"
                )
            if not np.isclose(got, expected) and np.isclose(got, largest):
                raise _Mistake(
                    f"{what} returned the maximum score; log-sum-exp is a smooth maximum, a "
                    f"little larger: {float(expected):.6g}"
                )
            _assert_close(got, expected, what)
        return (
            "Your log-sum-exp is exact and stable; softmax(z) = exp(z - log_sum_exp(z)) "
            "follows from it."
        )

    return _run_checks(checks)


# --- Chapter 1: dot-product similarity ---

# Small integer vectors with distinct lengths: T_q = 3, T_k = 5 and D = 4 differ, so a result
# of the wrong shape tells which axes were mixed up.
_CH1_X = np.array([[1.0, 2.0, 2.0, 0.0], [3.0, 0.0, 4.0, 1.0], [-1.0, 1.0, 0.0, 2.0]])
_CH1_Y = np.array(
    [
        [2.0, 1.0, 0.0, 1.0],
        [0.0, 3.0, 1.0, -2.0],
        [1.0, 1.0, 1.0, 1.0],
        [-2.0, 0.0, 3.0, 0.0],
        [4.0, 2.0, 0.0, 0.0],
    ]
)


def _ch1_stack_cases() -> list[tuple[np.ndarray, np.ndarray]]:
    """Pairs ``(a, b)`` of shapes ``(D,)``, ``(T, D)`` and ``(B, T, D)`` with no zero vector."""
    a = np.array([1.0, 2.0, 2.0])
    b = np.array([3.0, 0.0, 4.0])
    stack_a = np.array([[1.0, 2.0, 2.0], [2.0, -1.0, 0.5], [0.0, 3.0, 4.0], [1.0, 1.0, 1.0]])
    stack_b = np.array([[3.0, 0.0, 4.0], [-4.0, 2.0, -1.0], [0.0, 6.0, 8.0], [2.0, -1.0, 3.0]])
    batch_a = np.stack([stack_a, stack_a[::-1] * 2.0])  # (2, 4, 3)
    batch_b = np.stack([stack_b, -stack_b])  # (2, 4, 3)
    return [(a, b), (stack_a, stack_b), (batch_a, batch_b)]


def _ch1_call_pairwise(function: Callable[..., Any], name: str, a: np.ndarray, b: np.ndarray):
    """Call ``function(a, b)`` on copies and explain the shapes of the usual mix-ups."""
    try:
        result = _call(function, a.copy(), b.copy())
    except _Mistake as mistake:
        if a.ndim > 1 and ("aligned" in str(mistake) or "matmul" in str(mistake)):
            raise _Mistake(
                f"{mistake}. `a @ b` and `np.dot(a, b)` multiply matrices; for stacks of "
                "vectors, multiply element-wise and sum over the last axis: "
                "(a * b).sum(axis=-1)"
            ) from None
        raise
    what = f"{name}(a, b)"
    shape = np.shape(result) if result is not None else None
    n_pairs = int(np.prod(a.shape[:-1]))
    if shape == a.shape:
        raise _Mistake(
            f"{what} returned shape {shape}, the shape of the inputs: these look like the "
            "element-wise products a * b. Add them up over the last axis: .sum(axis=-1)"
        )
    if a.ndim > 1 and shape == ():
        raise _Mistake(
            f"{what} returned a single number for {n_pairs} pairs of vectors of shape "
            f"{a.shape}: you summed over every axis. Sum over the last axis only (axis=-1)"
        )
    if a.ndim == 2 and shape == (a.shape[0], b.shape[0]):
        raise _Mistake(
            f"{what} returned shape {shape}: every vector of a against every vector of b "
            "(that is a @ b.T, a similarity matrix). Here a[i] is paired with b[i] only: "
            "multiply element-wise and sum over the last axis"
        )
    if a.ndim == 2 and shape == a.shape[-1:]:
        raise _Mistake(
            f"{what} returned shape {shape}: you added up over the vectors (axis 0) "
            "instead of over the components of each vector (the last axis)"
        )
    return result


def check_dot_product(dot_product: Callable[..., Any]) -> Feedback:
    """Check ``dot_product(a, b)``: the dot products of two equally shaped stacks of vectors.

    Expected signature: ``dot_product(a: np.ndarray, b: np.ndarray) -> np.ndarray | float``.

    Shapes
    ------
    ``a``, ``b``: ``(..., D)``, identical → ``(...)``: entry ``[...]`` is the dot product of
    ``a[..., :]`` and ``b[..., :]``; two vectors of shape ``(D,)`` give one number.
    """

    def checks() -> str:
        for a, b in _ch1_stack_cases():
            result = _ch1_call_pairwise(dot_product, "dot_product", a, b)
            expected = similarity.dot_product(a, b)
            got = _as_result_array(result, np.asarray(expected), "dot_product(a, b)")
            _assert_close(got, np.asarray(expected), f"dot_product(a, b) for shape {a.shape}")
        return "Your dot_product handles single vectors and stacks of vectors of any shape."

    return _run_checks(checks)


def _ch1_cosine_mistakes(a: np.ndarray, b: np.ndarray) -> list[tuple[np.ndarray, str]]:
    """Results of the usual wrong cosine formulas, each with what went wrong."""
    dot = (a * b).sum(axis=-1)
    length_a, length_b = np.linalg.norm(a, axis=-1), np.linalg.norm(b, axis=-1)
    l1_a, l1_b = np.abs(a).sum(axis=-1), np.abs(b).sum(axis=-1)
    return [
        (dot, "this is the plain dot product a·b: divide it by the two lengths |a| |b|"),
        (
            dot / (length_a**2 * length_b**2),
            "you divided by the squared lengths a·a and b·b: a length is the square root, "
            "|a| = sqrt(a·a) (np.sqrt, or np.linalg.norm)",
        ),
        (
            dot / (l1_a * l1_b),
            "you divided by the sums of absolute values (the L1 norm); the cosine needs the "
            "Euclidean length sqrt(sum of squares), which np.linalg.norm gives by default",
        ),
        (dot / length_a, "you divided by the length of a only: divide by |a| |b|"),
        (dot / length_b, "you divided by the length of b only: divide by |a| |b|"),
        (dot / (length_a + length_b), "divide by the product of the lengths, not their sum"),
        (
            dot / (np.linalg.norm(a) * np.linalg.norm(b)),
            "you divided by the length of the whole array (np.linalg.norm without axis); "
            "each vector needs its own length: np.linalg.norm(a, axis=-1)",
        ),
    ]


def _ch1_name_the_mistake(
    got: np.ndarray, expected: np.ndarray, mistakes: list[tuple[np.ndarray, str]], what: str
) -> None:
    """Raise with the message of the first known wrong formula that ``got`` matches."""
    if np.allclose(got, expected, rtol=1e-6, atol=1e-8):
        return
    for wrong, message in mistakes:
        if np.shape(wrong) == got.shape and np.allclose(got, wrong, rtol=1e-6, atol=1e-8):
            raise _Mistake(f"{what} is off: {message}")
    _assert_close(got, expected, what)


def check_cosine_similarity(cosine_similarity: Callable[..., Any]) -> Feedback:
    """Check ``cosine_similarity(a, b)``: the cosine of the angle between paired vectors.

    Expected signature: ``cosine_similarity(a: np.ndarray, b: np.ndarray) -> np.ndarray | float``,
    raising ``ValueError`` when a vector is zero (it has no direction, so no angle).

    Shapes
    ------
    ``a``, ``b``: ``(..., D)``, identical → ``(...)``: entry ``[...]`` is the cosine of
    ``a[..., :]`` and ``b[..., :]``; two vectors of shape ``(D,)`` give one number.
    """
    import warnings

    def checks() -> str:
        for a, b in _ch1_stack_cases():
            result = _ch1_call_pairwise(cosine_similarity, "cosine_similarity", a, b)
            expected = np.asarray(similarity.cosine_similarity(a, b))
            got = _as_result_array(result, expected, "cosine_similarity(a, b)")
            _ch1_name_the_mistake(
                got,
                expected,
                _ch1_cosine_mistakes(a, b),
                f"cosine_similarity(a, b) for shape {a.shape}",
            )

        vector, zero = np.array([1.0, 2.0, 2.0]), np.zeros(3)
        for a, b, which in ((zero, vector, "a"), (vector, zero, "b")):
            # 0 / 0 in the learner's code is the mistake reported here, not a warning.
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                try:
                    result = cosine_similarity(a.copy(), b.copy())
                except ValueError:
                    continue
                except NotImplementedError as error:
                    raise _NotAttempted("Replace `raise NotImplementedError`.") from error
                except Exception as error:  # noqa: BLE001 - the learner's error is feedback
                    raise _Mistake(
                        f"for a zero vector {which} your function raised "
                        f"{type(error).__name__}: {error}. Check the lengths first and raise "
                        "a ValueError with a clear message: a zero vector has no direction"
                    ) from error
            shown = np.asarray(result, dtype=np.float64) if result is not None else None
            if shown is None:
                value = "None"
            elif shown.ndim == 0:
                value = f"{float(shown):g}"
            else:
                value = np.array2string(shown, precision=4)
            cause = " (that is 0/0)" if shown is not None and np.isnan(shown).any() else ""
            raise _Mistake(
                f"for a zero vector {which}, cosine_similarity returned {value}{cause}. "
                "A zero vector has no direction, so the cosine is undefined: raise a "
                "ValueError instead of returning a number"
            )
        return "Your cosine_similarity handles single vectors and stacks and refuses zero vectors."

    return _run_checks(checks)


def check_cosine_similarity_matrix(cosine_similarity_matrix: Callable[..., Any]) -> Feedback:
    """Check ``cosine_similarity_matrix(x, y)``: the cosine of every vector of x with every
    vector of y, without loops.

    Expected signature: ``cosine_similarity_matrix(x: np.ndarray, y: np.ndarray) -> np.ndarray``.

    Shapes
    ------
    ``x``: ``(T_q, D)``, ``y``: ``(T_k, D)`` → ``(T_q, T_k)``; entry ``[i, j]`` is the cosine
    of ``x[i]`` and ``y[j]``.
    """

    def unit_rows(vectors: np.ndarray, axis: int = -1) -> np.ndarray:
        return vectors / np.linalg.norm(vectors, axis=axis, keepdims=True)

    def call(x: np.ndarray, y: np.ndarray) -> Any:
        try:
            return _call(cosine_similarity_matrix, x.copy(), y.copy())
        except _Mistake as mistake:
            if "broadcast" in str(mistake):
                hint = (
                    "to divide every row of a (T, D) matrix by its own length, the lengths "
                    "need shape (T, 1): np.linalg.norm(x, axis=-1, keepdims=True)"
                )
            elif "aligned" in str(mistake) or "matmul" in str(mistake):
                hint = "x @ y.T multiplies (T_q, D) by (D, T_k) and gives (T_q, T_k)"
            else:
                raise
            raise _Mistake(f"{mistake}. Hint: {hint}") from None

    def checks() -> str:
        # T_q = T_k = 3 first (so x.T @ y runs and shows its (D, D) shape), then T_q != T_k,
        # then a sequence against itself.
        for x, y in ((_CH1_X, _CH1_Y[:3]), (_CH1_X, _CH1_Y), (_CH1_X, _CH1_X)):
            what = "cosine_similarity_matrix(x, y)"
            result = call(x, y)
            (t_q, d), t_k = x.shape, y.shape[0]
            shape = np.shape(result) if result is not None else None
            if shape == (d, d) and (d, d) != (t_q, t_k):
                raise _Mistake(
                    f"{what} returned shape {shape}, which is (D, D): x.T @ y adds up over "
                    "the tokens, comparing features with features. Compare vectors with "
                    f"vectors: x @ y.T has shape (T_q, T_k) = {(t_q, t_k)}"
                )
            if shape == (t_k, t_q) and t_k != t_q:
                raise _Mistake(
                    f"{what} returned shape {shape}, which is (T_k, T_q): the result is "
                    "transposed. Row i must belong to x[i]: use x @ y.T, not y @ x.T"
                )
            expected = similarity.similarity_matrix(x, y, measure="cosine")
            got = _as_result_array(result, expected, what)
            dots = x @ y.T  # (T_q, T_k)
            squared_x = x / (x**2).sum(axis=-1, keepdims=True)  # (T_q, D)
            squared_y = y / (y**2).sum(axis=-1, keepdims=True)  # (T_k, D)
            mistakes = [
                (
                    dots,
                    "these are the dot products x @ y.T: first scale every row of x and of y "
                    "to length 1",
                ),
                (
                    unit_rows(x, axis=0) @ unit_rows(y, axis=0).T,
                    "you scaled the columns (axis 0: one feature across all tokens) to length "
                    "1; scale every row (token vector): np.linalg.norm(x, axis=-1, "
                    "keepdims=True)",
                ),
                (
                    squared_x @ squared_y.T,
                    "you divided by the squared lengths: a length is the square root of the "
                    "sum of squares",
                ),
                (
                    dots / (np.linalg.norm(x) * np.linalg.norm(y)),
                    "you divided by the length of the whole matrix; each row needs its own "
                    "length (axis=-1, keepdims=True)",
                ),
                (
                    expected.T,
                    "the result is transposed: row i must belong to x[i] (x @ y.T, not y @ x.T)",
                ),
                (unit_rows(x) @ y.T, "you scaled the rows of x but not the rows of y"),
                (x @ unit_rows(y).T, "you scaled the rows of y but not the rows of x"),
            ]
            _ch1_name_the_mistake(got, expected, mistakes, what)
        return "Your cosine_similarity_matrix matches the loops, without writing one."

    return _run_checks(checks)


def check_nearest_neighbour(nearest_neighbour: Callable[..., Any]) -> Feedback:
    """Check ``nearest_neighbour(word, words, vectors)``: the other word most similar to
    ``word`` by cosine similarity.

    Expected signature:
    ``nearest_neighbour(word: str, words: list[str], vectors: np.ndarray) -> str``, where
    ``vectors[t]`` is the vector of ``words[t]`` and ``word`` is one of ``words``; the result
    is a word of ``words`` other than ``word`` itself.

    Shapes
    ------
    ``words``: ``T`` distinct strings; ``vectors``: ``(T, D)``.
    """
    from selfattn_lib import embeddings

    # A fixed order that is not alphabetical, so that positions carry no meaning.
    words = sorted(embeddings.vocabulary(), key=lambda word: word[::-1])
    vectors = embeddings.embed(words)  # (T, D)
    cosines = similarity.similarity_matrix(vectors, measure="cosine")  # (T, T)
    dots = vectors @ vectors.T  # (T, T)
    distances = np.linalg.norm(vectors[:, None, :] - vectors[None, :, :], axis=-1)  # (T, T)
    np.fill_diagonal(cosines, -np.inf)
    np.fill_diagonal(dots, -np.inf)
    np.fill_diagonal(distances, np.inf)

    def checks() -> str:
        for word in ("dog", "bike", "car", "animal"):
            index = words.index(word)
            expected = words[int(np.argmax(cosines[index]))]
            what = f"nearest_neighbour({word!r}, words, vectors)"
            result = _call(nearest_neighbour, word, list(words), vectors.copy())
            if isinstance(result, (int, np.integer)) and not isinstance(result, bool):
                raise _Mistake(
                    f"{what} returned the number {result}: return the word itself, a str "
                    "(words[index])"
                )
            if not isinstance(result, str):
                raise _Mistake(f"{what} must return a word (a str), got {type(result).__name__}")
            if result == expected:
                continue
            if result == word:
                raise _Mistake(
                    f"{what} returned {word!r} itself: every vector has cosine similarity 1 "
                    "with itself. Leave the word out before taking the maximum (for example, "
                    "set its own similarity to -np.inf)"
                )
            if result not in words:
                raise _Mistake(f"{what} returned {result!r}, which is not one of words")
            if result == words[int(np.argmax(dots[index]))]:
                raise _Mistake(
                    f"{what} returned {result!r}, the nearest by dot product, which favours "
                    f"long vectors; rank by cosine similarity (expected {expected!r})"
                )
            if result == words[int(np.argmin(distances[index]))]:
                raise _Mistake(
                    f"{what} returned {result!r}, the nearest by Euclidean distance; rank by "
                    f"cosine similarity (expected {expected!r})"
                )
            finite = np.where(np.isfinite(cosines[index]), cosines[index], np.inf)
            if result == words[int(np.argmin(finite))]:
                raise _Mistake(
                    f"{what} returned {result!r}, the least similar word: take the largest "
                    "cosine (argmax), not the smallest"
                )
            got_cosine = cosines[index, words.index(result)]
            raise _Mistake(
                f"{what} returned {result!r} (cosine {got_cosine:.3f}), but {expected!r} is "
                f"more similar (cosine {cosines[index].max():.3f})"
            )
        return "Your nearest_neighbour finds the most similar other word by cosine."

    return _run_checks(checks)
