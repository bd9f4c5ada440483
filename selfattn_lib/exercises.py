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


def _name_of(function: Callable[..., Any], default: str) -> str:
    """The learner's name for ``function``, or ``default`` for a lambda or a callable object."""
    name = getattr(function, "__name__", "")
    return name if isinstance(name, str) and name.isidentifier() else default


def _call_quietly(function: Callable[..., Any], *args: Any) -> Any:
    """Call the learner's function with NumPy's floating-point warnings switched off.

    Checks feed inputs that make wrong answers overflow or divide 0 by 0 (a naive softmax, a
    missing length check). The checker explains that in words, so no ``RuntimeWarning`` line
    reaches the notebook's stderr.
    """
    with np.errstate(all="ignore"):
        return _call(function, *args)


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

    name = _name_of(dot_product, "dot_product")

    def checks() -> str:
        for a, b in _ch1_stack_cases():
            result = _ch1_call_pairwise(dot_product, name, a, b)
            expected = similarity.dot_product(a, b)
            got = _as_result_array(result, np.asarray(expected), f"{name}(a, b)")
            _assert_close(got, np.asarray(expected), f"{name}(a, b) for shape {a.shape}")
        return f"Your {name} handles single vectors and stacks of vectors of any shape."

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

    name = _name_of(cosine_similarity, "cosine_similarity")

    def checks() -> str:
        for a, b in _ch1_stack_cases():
            result = _ch1_call_pairwise(cosine_similarity, name, a, b)
            expected = np.asarray(similarity.cosine_similarity(a, b))
            got = _as_result_array(result, expected, f"{name}(a, b)")
            _ch1_name_the_mistake(
                got, expected, _ch1_cosine_mistakes(a, b), f"{name}(a, b) for shape {a.shape}"
            )

        vector, zero = np.array([1.0, 2.0, 2.0]), np.zeros(3)
        stack = np.array([[1.0, 2.0], [3.0, 4.0]])  # (2, 2)
        stack_with_zero = np.array([[1.0, 0.0], [0.0, 0.0]])  # (2, 2): the second row is zero
        zero_cases = (
            (zero, vector, "for a zero vector a"),
            (vector, zero, "for a zero vector b"),
            (stack_with_zero, stack, "for a stack a = [[1, 0], [0, 0]] whose second row is zero"),
        )
        for a, b, which in zero_cases:
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
                        f"{which}, {name} raised {type(error).__name__}: {error}. Check the "
                        "lengths first and raise a ValueError with a clear message: a zero "
                        "vector has no direction"
                    ) from error
            shown = np.asarray(result, dtype=np.float64) if result is not None else None
            if shown is None:
                value = "None"
            elif shown.ndim == 0:
                value = f"{float(shown):g}"
            else:
                value = np.array2string(shown, precision=4)
            cause = " (that is 0/0)" if shown is not None and np.isnan(shown).any() else ""
            per_vector = (
                " Check the length of every vector (np.linalg.norm(a, axis=-1)), not the "
                "length of the whole array, which is not zero here"
                if a.ndim > 1
                else ""
            )
            raise _Mistake(
                f"{which}, {name} returned {value}{cause}. A zero vector has no direction, so "
                "the cosine is undefined: raise a ValueError instead of returning a number."
                + per_vector
            )
        return f"Your {name} handles single vectors and stacks and refuses zero vectors."

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

    name = _name_of(cosine_similarity_matrix, "cosine_similarity_matrix")

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
            what = f"{name}(x, y)"
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
            if t_q == t_k:  # otherwise dividing (T_q, T_k) by (T_q,) fails to broadcast
                mistakes.append(
                    (
                        dots / np.linalg.norm(x, axis=-1) / np.linalg.norm(y, axis=-1),
                        "you divided x @ y.T by np.linalg.norm(x, axis=-1), of shape (T_q,): "
                        "that divides column j by the length of x[j], not row i by the length "
                        "of x[i]. Keep the lengths of x as a column of shape (T_q, 1): "
                        "np.linalg.norm(x, axis=-1, keepdims=True)",
                    )
                )
            _ch1_name_the_mistake(got, expected, mistakes, what)
        return f"Your {name} matches the loops, without writing one."

    return _run_checks(checks)


def check_nearest_neighbour(nearest_neighbour: Callable[..., Any]) -> Feedback:
    """Check ``nearest_neighbour(word, words, vectors)``: the other word most similar to
    ``word`` by cosine similarity.

    Expected signature:
    ``nearest_neighbour(word: str, words: list[str], vectors: np.ndarray) -> str``, where
    ``vectors[t]`` is the vector of ``words[t]`` and ``word`` is one of ``words``; the result
    is a word of ``words`` other than ``word`` itself. When several words tie for the largest
    cosine (parallel or identical vectors), any of them is accepted.

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

    name = _name_of(nearest_neighbour, "nearest_neighbour")

    def checks() -> str:
        for word in ("dog", "bike", "car", "animal"):
            index = words.index(word)
            best = cosines[index].max()
            tied = [words[j] for j in np.flatnonzero(cosines[index] >= best - 1e-9)]
            expected = tied[0]
            what = f"{name}({word!r}, words, vectors)"
            result = _call(nearest_neighbour, word, list(words), vectors.copy())
            if isinstance(result, (int, np.integer)) and not isinstance(result, bool):
                raise _Mistake(
                    f"{what} returned the number {result}: return the word itself, a str "
                    "(words[index])"
                )
            if not isinstance(result, str):
                raise _Mistake(f"{what} must return a word (a str), got {type(result).__name__}")
            if result in tied:  # any of several exactly tied words is right
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
        return f"Your {name} finds the most similar other word by cosine."

    return _run_checks(checks)


# --- Chapter 2: softmax ---


def _show(array: np.ndarray) -> str:
    """An array as a short Python list for a message, e.g. ``[1000.0, 1001.0]``."""
    return str(np.asarray(array).tolist())


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
    values = _values_like(result, expected)
    if values is not None and not np.isfinite(values).all():
        kind = "NaN (not a number)" if np.isnan(values).any() else "infinity"
        raise _Mistake(f"{what} returned {kind}. {explanation}")


def _values_like(result: Any, expected: np.ndarray) -> np.ndarray | None:
    """``result`` as a float64 array if it has the shape of ``expected``, else None.

    Used to explain NaN and infinity before :func:`_as_result_array` rejects them; results
    that are None, not numbers or wrongly shaped are left to :func:`_as_result_array`.
    """
    if result is None:
        return None
    try:
        values = np.asarray(result, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return values if values.shape == expected.shape else None


def _normalised(values: np.ndarray) -> np.ndarray:
    return values / values.sum(axis=-1, keepdims=True)


def check_weights_after_scaling(weights_after_scaling: Callable[..., Any]) -> Feedback:
    """Check the learner's prediction of softmax(factor * z) from softmax(z) (ch. 2, ex. 1).

    Expected signature: ``weights_after_scaling(weights: np.ndarray, factor: float) ->
    np.ndarray``, where ``weights = softmax(z)`` has shape ``(n,)`` and the scores ``z`` are
    not given. The result is ``softmax(factor * z)``, which is ``weights**factor`` divided by
    its sum (each ratio of two weights is raised to the power ``factor``).

    Examples
    --------
    >>> check_weights_after_scaling(lambda w, k: w**k / (w**k).sum()).passed
    True
    """
    name = _name_of(weights_after_scaling, "weights_after_scaling")
    cases = (
        (np.array([1.0, 2.0, 3.0]), 2.0),
        (np.array([1.0, 2.0, 3.0]), 0.5),
        (np.array([0.5, -1.0, 2.0, 0.0]), 3.0),
        (np.array([0.5, -1.0, 2.0, 0.0]), 1.0),
    )

    def check_one(scores: np.ndarray, factor: float) -> None:
        weights = softmax.softmax(scores)
        what = f"{name}({_show(weights.round(4))}, {factor:g})"
        expected = softmax.softmax(factor * scores)
        got = _as_result_array(
            _call_on_copy(weights_after_scaling, weights, factor), expected, what
        )
        if np.allclose(got, expected, rtol=1e-6, atol=1e-9):
            return
        if factor != 1 and np.allclose(got, weights):
            raise _Mistake(
                f"{what} returned the weights unchanged (as multiplying the WEIGHTS by "
                f"{factor:g} and normalising again would). Multiplying the SCORES by "
                f"{factor:g} multiplies every difference z_i - z_j, so every ratio of two "
                f"weights, e^(z_i - z_j), is raised to the power {factor:g}"
            )
        if np.allclose(got, weights**factor):
            raise _Mistake(
                f"the weights of {what} sum to {got.sum():.6g}, not 1: raising the weights to "
                f"the power {factor:g} keeps their ratios right but changes their total; "
                "divide by the new total"
            )
        if np.allclose(got, softmax.softmax(factor * weights)) or np.allclose(
            got, softmax.softmax(weights)
        ):
            raise _Mistake(
                f"{what} took the softmax of the weights, as if they were scores. The scores "
                "are not given: use what the ratio formula says, "
                "w_i / w_j = e^(z_i - z_j), and what multiplying the scores does to it"
            )
        if np.allclose(got, _normalised(weights ** (1 / factor))):
            raise _Mistake(
                f"{what} gives the weights of the scores DIVIDED by {factor:g}: use the power "
                f"{factor:g}, not 1/{factor:g}"
            )
        if not np.isclose(got.sum(), 1.0):
            raise _Mistake(f"the weights of {what} sum to {got.sum():.6g}, not 1")
        _assert_close(got, expected, what)

    def checks() -> str:
        for scores, factor in cases:
            check_one(scores, factor)
        return (
            "Your prediction is right: multiplying the scores by k raises every weight to the "
            "power k, then the weights are normalised again."
        )

    return _run_checks(checks)


def _top_weight(scores: np.ndarray, temperature: float) -> float:
    return float(softmax.softmax(scores, temperature=temperature).max())


def check_temperature_for_top_weight(temperature_for_top_weight: Callable[..., Any]) -> Feedback:
    """Check the learner's search for a temperature (chapter 2, exercise 2).

    Expected signature: ``temperature_for_top_weight(scores: np.ndarray, target: float) ->
    float`` for scores of shape ``(n,)`` with one largest score and ``1/n < target < 1``. It
    returns the temperature ``τ > 0`` at which the largest weight of
    ``softmax(scores / τ)`` equals ``target``; the checker accepts a top weight within
    ``1e-6`` of the target.

    Examples
    --------
    >>> def solve(scores, target):
    ...     low, high = np.log(1e-3), np.log(1e6)
    ...     for _ in range(100):
    ...         middle = (low + high) / 2
    ...         e = np.exp((scores - scores.max()) / np.exp(middle))
    ...         low, high = (middle, high) if e.max() / e.sum() > target else (low, middle)
    ...     return float(np.exp(middle))
    >>> check_temperature_for_top_weight(solve).passed
    True
    """
    name = _name_of(temperature_for_top_weight, "temperature_for_top_weight")
    cases = (
        (np.array([2.0, 1.0, 0.0]), 0.9),
        (np.array([2.0, 1.0, 0.0]), 0.5),
        (np.array([4.0, 0.0]), 0.6),
        (np.array([0.3, -1.2, 2.5, 1.0]), 0.999),
        (np.array([0.3, -1.2, 2.5, 1.0]), 0.26),
        (np.array([1000.0, 999.0, 998.0]), 0.9),
    )

    def check_one(scores: np.ndarray, target: float) -> None:
        what = f"{name}({_show(scores)}, {target:g})"
        result = _call_on_copy(temperature_for_top_weight, scores, target)
        temperature = float(_as_result_array(result, np.zeros(()), what))
        if temperature <= 0:
            raise _Mistake(f"{what} returned {temperature:.6g}, but a temperature must be positive")
        weight = _top_weight(scores, temperature)
        if abs(weight - target) <= 1e-6:
            return
        if abs(temperature - target) <= 1e-6:
            raise _Mistake(
                f"{what} returned the target weight {target:g} itself; return the "
                "temperature at which the top weight reaches it"
            )
        if abs(_top_weight(scores, 1 / temperature) - target) <= 1e-6:
            raise _Mistake(
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
        raise _Mistake(
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

    return _run_checks(checks)


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


def check_masked_softmax(masked_softmax: Callable[[np.ndarray], Any]) -> Feedback:
    """Check the learner's softmax over the keys of masked scores (chapter 2, exercise 3).

    Expected signature: ``masked_softmax(scores: np.ndarray) -> np.ndarray`` for scores of
    shape ``(B, T_q, T_k)`` in which masked entries are ``-inf``. It returns weights of the
    same shape: a stable softmax along ``axis=-1`` (the keys), weight exactly 0 for a masked
    key, and all zeros, not NaN, for a row in which every key is masked.

    Examples
    --------
    >>> from selfattn_lib.softmax import softmax
    >>> check_masked_softmax(softmax).passed
    True
    """
    name = _name_of(masked_softmax, "masked_softmax")
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
            raise _Mistake(
                f"row (1, 0) of {what}, scores [1000, 1001, 1002, -inf], came out NaN or "
                "infinite. That is overflow: np.exp(1000.0) is inf in float64. " + _OVERFLOW_FIX
            )
        if bad[1, 1]:
            raise _Mistake(
                f"row (1, 1) of {what}, scores [-1000, -1001, -inf, -1003], came out NaN. "
                "That is underflow: shifted by a maximum taken over more than its own row "
                "(here 1002), all its exponentials are 0.0 and 0 / 0 is NaN. Subtract each "
                "row's OWN maximum, `scores.max(axis=-1, keepdims=True)`."
            )
        if bad[0, 2] and not bad[~all_masked].any():
            raise _Mistake(
                f"row (0, 2) of {what}, in which every key is masked (all -inf), came out "
                "NaN: its maximum is -inf, and -inf - (-inf) is NaN (without the shift it is "
                "0 / 0). A query that may look at nothing should get no weight at all: "
                "shift such a row by 0 instead of its maximum, and divide only where the "
                "total is positive (for example `np.divide(e, total, out=np.zeros_like(e), "
                "where=total > 0)`), so the row stays all zeros."
            )
        b, i = np.argwhere(bad)[0]
        raise _Mistake(f"row ({b}, {i}) of {what} came out NaN or infinite")

    def check_one(scores: np.ndarray, what: str) -> None:
        masked = np.isneginf(scores)
        all_masked = masked.all(axis=-1)  # (B, T_q)
        expected = softmax.softmax(scores, axis=-1)
        try:
            result = _call_on_copy(masked_softmax, scores)
        except _Mistake as mistake:
            if "broadcast" in str(mistake):
                raise _Mistake(
                    f"{mistake}. The row totals have shape (B, T_q) = (2, 3) and do not line "
                    "up with the scores (2, 3, 4): keep the summed axis with "
                    "`.sum(axis=-1, keepdims=True)` (shape (2, 3, 1))."
                ) from mistake
            raise
        values = _values_like(result, expected)
        if values is not None and masked.any():
            explain_nan(values, all_masked, what)
        got = _as_result_array(result, expected, what)
        if all_masked.any() and np.allclose(got[all_masked], 1 / scores.shape[-1]):
            raise _Mistake(
                f"row (0, 2) of {what}, in which every key is masked, got the uniform weights "
                f"1/{scores.shape[-1]}. That is what happens when -inf is replaced by a large "
                "negative number such as -1e9: the row's scores are then all equal. A query "
                "that may look at nothing should get weight 0 for every key."
            )
        if (got[masked] != 0).any():
            b, i, j = np.argwhere(masked & (got != 0))[0]
            raise _Mistake(
                f"key {j} of row ({b}, {i}) of {what} is masked (score -inf) but got weight "
                f"{got[b, i, j]:.4g}: e^(-inf) = 0, so a masked key must get exactly 0"
            )
        row_sums = got.sum(axis=-1)
        if not np.allclose(row_sums[~all_masked], 1.0):
            for axis, over in ((1, "the queries"), (0, "the batch")):
                if np.allclose(got.sum(axis=axis), 1.0):
                    raise _Mistake(
                        f"in {what} the weights sum to one along axis={axis}, over {over}, "
                        "but each query needs weights over the KEYS: apply softmax along "
                        "the last axis, axis=-1"
                    )
            raise _Mistake(
                f"the rows of {what} sum to {_show(row_sums.round(4))}, but each row with an "
                "unmasked key should sum to 1 (and an all-masked row to 0): take the maximum "
                "and the sum along axis=-1 with keepdims=True"
            )
        _assert_close(got, expected, what)

    def checks() -> str:
        check_one(plain, f"{name}(scores without a mask)")
        check_one(_masked_scores(), f"{name}(masked scores)")
        return (
            "Your masked softmax is right: masked keys get exactly 0, a row with nothing to "
            "look at gets zeros instead of NaN, and huge or tiny scores are handled."
        )

    return _run_checks(checks)


def check_log_sum_exp(log_sum_exp: Callable[[np.ndarray], Any]) -> Feedback:
    """Check the learner's log-sum-exp (chapter 2, exercise 4).

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
    name = _name_of(log_sum_exp, "log_sum_exp")
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
            what = f"{name}({_show(scores)})"
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
            f"Your log-sum-exp is exact and stable; softmax(z) = exp(z - {name}(z)) "
            "follows from it."
        )

    return _run_checks(checks)
