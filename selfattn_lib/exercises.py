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


# --- Chapter 6: masks ---


def _ch6_bool_result(result: Any, expected: np.ndarray, what: str) -> np.ndarray:
    """Check that ``result`` is a boolean array shaped like ``expected`` and return it."""
    if result is None:
        raise _Mistake(f"{what} returned None: did you forget the `return` statement?")
    got = np.asarray(result)
    if got.shape != expected.shape:
        raise _Mistake(f"{what} returned shape {got.shape}, expected {expected.shape}")
    if got.dtype != np.bool_:
        if not np.isin(got, (0, 1)).all():
            raise _Mistake(f"{what} must hold only True and False, got {_show(got)}")
        raise _Mistake(
            f"{what} returned dtype {got.dtype}, but a mask must be boolean: NumPy indexes "
            "with 0/1 integers as positions, not as a mask. Use dtype=bool (or `.astype(bool)`)"
        )
    return got


def check_look_back_mask(look_back_mask: Callable[[int, int], Any]) -> Feedback:
    """Check the learner's sliding-window causal mask (chapter 6, exercise 1).

    Expected signature: ``look_back_mask(t: int, window: int) -> np.ndarray`` of shape
    ``(T, T)`` and dtype bool, ``True`` where query ``i`` may attend key ``j``: the key is not
    in the future and at most ``window - 1`` positions back, ``i - window < j <= i``. So every
    query sees ``window`` keys (fewer at the start), itself included; ``window >= T`` gives the
    ordinary causal mask.

    Examples
    --------
    >>> check_look_back_mask(lambda t, w: np.tril(np.triu(np.ones((t, t), bool), 1 - w))).passed
    True
    """
    name = _name_of(look_back_mask, "look_back_mask")

    def band(t: int, low: int, high: int) -> np.ndarray:
        """True where ``low <= i - j <= high``."""
        offset = np.arange(t)[:, None] - np.arange(t)[None, :]  # (T, T): i - j
        return (offset >= low) & (offset <= high)

    def checks() -> str:
        for t, window in ((5, 2), (4, 4), (6, 1), (3, 10)):
            expected = band(t, 0, window - 1)
            what = f"{name}({t}, window={window})"
            got = _ch6_bool_result(_call(look_back_mask, t, window), expected, what)
            if np.array_equal(got, expected):
                continue
            if np.array_equal(got, ~expected):
                raise _Mistake(
                    f"{what} is True exactly where it should be False: that is the "
                    "'True = ignore' convention of torch.nn.MultiheadAttention. In this course "
                    "True means 'may attend'"
                )
            if np.array_equal(got, expected & ~np.eye(t, dtype=bool)):
                raise _Mistake(
                    f"{what} is False on the diagonal, so no token may look at itself (and the "
                    "first query sees nothing at all), as `np.tril(..., k=-1)` would do. The "
                    "window counts the query itself: keys i - window < j <= i"
                )
            if (got & ~band(t, 0, t)).any():
                i, j = np.argwhere(got & ~band(t, 0, t))[0]
                raise _Mistake(
                    f"{what}[{i}, {j}] is True: query {i} may look at the FUTURE key {j}. "
                    "Rows are queries and columns keys; only keys j <= i are allowed"
                )
            if np.array_equal(got, band(t, 0, window)):
                raise _Mistake(
                    f"{what} lets each query see {window + 1} keys, one too many: with the "
                    "query itself included, the window keys are i - window < j <= i"
                )
            if np.array_equal(got, band(t, 0, window - 2)):
                raise _Mistake(
                    f"{what} lets each query see only {window - 1} keys, one too few: the "
                    "query itself counts, so the keys are i - window < j <= i"
                )
            i, j = np.argwhere(got != expected)[0]
            raise _Mistake(
                f"{what}[{i}, {j}] is {bool(got[i, j])}, expected {bool(expected[i, j])}: "
                f"query {i} may attend key {j} only if {i} - {window} < {j} <= {i}"
            )
        return (
            "Your look-back mask is right: every query sees itself and the window - 1 keys "
            "before it, never the future."
        )

    return _run_checks(checks)


def check_left_padding_mask(left_padding_mask: Callable[[np.ndarray, int], Any]) -> Feedback:
    """Check the learner's mask for a left-padded batch (chapter 6, exercise 2).

    Expected signature: ``left_padding_mask(lengths: np.ndarray, max_len: int) -> np.ndarray``
    of shape ``(B, 1, T_k)`` (``T_k = max_len``) and dtype bool. Sequence ``b`` is padded at
    the START: its ``lengths[b]`` real tokens are the LAST positions, so the mask is ``True``
    at positions ``j >= max_len - lengths[b]`` and ``False`` on the padding before them.

    Examples
    --------
    >>> def reference(lengths, max_len):
    ...     return (np.arange(max_len) >= max_len - lengths[:, None])[:, None, :]
    >>> check_left_padding_mask(reference).passed
    True
    """
    name = _name_of(left_padding_mask, "left_padding_mask")

    def checks() -> str:
        cases = ((np.array([3, 1, 5]), 5), (np.array([2, 4]), 6), (np.array([0, 3]), 3))
        for lengths, max_len in cases:
            positions = np.arange(max_len)
            start = (max_len - lengths)[:, None]  # (B, 1): first real position

            def as_mask(is_real: np.ndarray) -> np.ndarray:
                return is_real[:, None, :]  # (B, 1, T_k)

            expected = as_mask(positions >= start)
            what = f"{name}({_show(lengths)}, max_len={max_len})"
            result = _call(left_padding_mask, lengths.copy(), max_len)
            shape = np.shape(result) if result is not None else None
            if shape == expected.shape[::2]:
                raise _Mistake(
                    f"{what} returned shape {shape} = (B, T_k). It needs an axis of size 1 for "
                    f"the queries, (B, 1, T_k) = {expected.shape}, so that it broadcasts over "
                    "the (B, T_q, T_k) scores: add it with `[:, None, :]`"
                )
            if shape == (expected.shape[0], max_len, 1):
                raise _Mistake(
                    f"{what} returned shape {shape} = (B, T_k, 1): that would hide padding "
                    "QUERIES, not padding keys. The mask runs along the keys, the last axis: "
                    f"(B, 1, T_k) = {expected.shape}"
                )
            got = _ch6_bool_result(result, expected, what)
            if np.array_equal(got, expected):
                continue
            if np.array_equal(got, ~expected):
                raise _Mistake(
                    f"{what} is True on the padding and False on the real tokens: in this "
                    "course True means 'may attend', so the real tokens are True"
                )
            if np.array_equal(got, as_mask(positions < lengths[:, None])):
                raise _Mistake(
                    f"{what} is the mask of a RIGHT-padded batch (real tokens first). Here the "
                    "padding comes first: the real tokens are the last lengths[b] positions"
                )
            if np.array_equal(got, as_mask(positions > start)):
                raise _Mistake(
                    f"{what} hides the first real token of every sequence: the real tokens "
                    "start at position max_len - length, so use `>=`, not `>`"
                )
            if np.array_equal(got, as_mask(positions >= start - 1)):
                raise _Mistake(
                    f"{what} lets every sequence see one padding position too many: the real "
                    "tokens start at position max_len - length, not one before it"
                )
            b, _, j = np.argwhere(got != expected)[0]
            raise _Mistake(
                f"{what}[{b}, 0, {j}] is {bool(got[b, 0, j])}: sequence {b} has length "
                f"{lengths[b]}, so position {j} is {'real' if expected[b, 0, j] else 'padding'}"
            )
        return (
            "Your left-padding mask is right: the padding in front is hidden, the real tokens "
            "at the end are visible, in the shape (B, 1, T_k)."
        )

    return _run_checks(checks)


def _ch6_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray):
    """Reference masked attention: weights and output, zeros for fully masked rows."""
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (B, T_q, T_k)
    weights = softmax.softmax(np.where(mask, scores, -np.inf), axis=-1)  # (B, T_q, T_k)
    return weights @ v, weights


def check_masked_attention(masked_attention: Callable[..., Any]) -> Feedback:
    """Check the learner's masked scaled dot-product attention (chapter 6, exercise 3).

    Expected signature: ``masked_attention(q, k, v, mask) -> (output, weights)`` with ``q``
    ``(B, T_q, D_k)``, ``k`` ``(B, T_k, D_k)``, ``v`` ``(B, T_k, D_v)`` and a boolean ``mask``
    (``True`` = may attend) that broadcasts to ``(B, T_q, T_k)``; ``output`` is
    ``(B, T_q, D_v)`` and ``weights`` ``(B, T_q, T_k)``. Masked keys get weight exactly 0 and a
    query that may attend to nothing gets zero weights and a zero output (not NaN, not
    uniform weights).

    Examples
    --------
    >>> from selfattn_lib.attention import scaled_dot_product_attention
    >>> check_masked_attention(scaled_dot_product_attention).passed
    True
    """
    name = _name_of(masked_attention, "masked_attention")
    rng = np.random.default_rng(6)
    q = rng.normal(size=(2, 3, 4))  # (B, T_q, D_k)
    k = rng.normal(size=(2, 5, 4))  # (B, T_k, D_k)
    v = rng.normal(size=(2, 5, 2))  # (B, T_k, D_v)
    plain = np.ones((2, 3, 5), dtype=bool)
    tril = np.tril(np.ones((3, 5), dtype=bool))  # (T_q, T_k)
    keys_ok = (np.arange(5) < np.array([4, 2])[:, None])[:, None, :]  # (B, 1, T_k)
    masked = tril & keys_ok  # (B, T_q, T_k)
    masked[1, 0] = False  # a query that may look at nothing

    def check_one(mask: np.ndarray, what: str) -> None:
        expected_out, expected_w = _ch6_attention(q, k, v, np.broadcast_to(mask, plain.shape))
        result = _call_quietly(masked_attention, q.copy(), k.copy(), v.copy(), mask.copy())
        if not isinstance(result, tuple) or len(result) != 2:
            raise _Mistake(
                f"{what} must return a pair (output, weights), got {type(result).__name__}"
            )
        out_raw, w_raw = result
        w_values = _values_like(w_raw, expected_w)
        empty = ~np.broadcast_to(mask, plain.shape).any(axis=-1)  # (B, T_q)
        if w_values is not None and np.isnan(w_values).any():
            if empty.any() and np.isnan(w_values[empty]).all():
                raise _Mistake(
                    f"the weights of {what} are NaN for query 0 of sequence 1, which may "
                    "attend to nothing: its scores are all -inf and softmax divides 0 by 0. "
                    "Give such a row zero weights (shift it by 0, divide only where the total "
                    "is positive)"
                )
        w = _as_result_array(w_raw, expected_w, f"the weights of {what}")
        allowed = np.broadcast_to(mask, plain.shape)
        if empty.any() and np.allclose(w[empty], 1 / w.shape[-1]):
            raise _Mistake(
                f"in {what} query 0 of sequence 1 may attend to nothing, yet it got the "
                f"uniform weights 1/{w.shape[-1]}: that is the -1e9 leak. With a large finite "
                "number every score of the row is the same, so softmax spreads the weight over "
                "the masked keys. Give such a row zero weights"
            )
        if (w[allowed] == 0).all():
            raise _Mistake(
                f"in {what} every allowed key got weight 0: is the mask inverted? True means "
                "'may attend', so keep the scores where the mask is True and set the others "
                "to -inf"
            )
        if (w[~allowed] != 0).any():
            b, i, j = np.argwhere(~allowed & (w != 0))[0]
            raise _Mistake(
                f"in {what} key {j} of query {i} in sequence {b} is masked but got weight "
                f"{w[b, i, j]:.3g}: set masked scores to -inf before the softmax, so that "
                "their weights are exactly 0"
            )
        sums = w.sum(axis=-1)
        if not np.allclose(sums[~empty], 1.0):
            raise _Mistake(
                f"the rows of the weights of {what} sum to {_show(sums.round(3))}: that is "
                "what masking AFTER the softmax gives (zeroing weights leaves rows that no "
                "longer sum to one). Mask the SCORES, then take the softmax"
            )
        unscaled = softmax.softmax(np.where(allowed, q @ np.swapaxes(k, -1, -2), -np.inf), axis=-1)
        if not np.allclose(w, expected_w) and np.allclose(np.nan_to_num(unscaled), w, atol=1e-8):
            raise _Mistake(
                f"the weights of {what} are those of unscaled scores Q Kᵀ: divide the scores "
                "by √d_k before the softmax"
            )
        _assert_close(w, expected_w, f"the weights of {what}")
        out = _as_result_array(out_raw, expected_out, f"the output of {what}")
        _assert_close(out, expected_out, f"the output of {what}")

    def checks() -> str:
        check_one(plain, f"{name}(q, k, v, mask of all True)")
        check_one(keys_ok, f"{name}(q, k, v, padding mask of shape (2, 1, 5))")
        check_one(masked, f"{name}(q, k, v, mask of shape (2, 3, 5) with an empty row)")
        return (
            "Your masked attention is right: masked keys get exactly 0, the mask broadcasts, "
            "and a query with nothing to attend to gets zeros, never NaN or uniform weights."
        )

    return _run_checks(checks)


# --- Chapter 4: queries, keys and values ---

_CH4_SHAPE_HINT = (
    ". Shapes: x is (T, D) and each projection is (D, d_k) or (D, d_v), so the projection is "
    "x @ w (W @ X or a transposed W do not fit)"
)


def _ch4_call(function: Callable[..., Any], *args: Any) -> Any:
    """Call the learner's function; a shape error from ``@`` gets a hint about the order."""
    try:
        return _call_quietly(function, *args)
    except _Mistake as mistake:
        text = str(mistake)
        if "matmul" in text or "not aligned" in text or "shapes" in text:
            raise _Mistake(text + _CH4_SHAPE_HINT) from mistake
        raise


def _ch4_output_and_weights(result: Any, what: str) -> tuple[Any, Any]:
    if not isinstance(result, tuple | list) or len(result) != 2:
        raise _Mistake(f"{what} must return a pair (output, weights), got {type(result).__name__}")
    return result[0], result[1]


def _ch4_attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float) -> tuple:
    weights = softmax.softmax(q @ k.T * scale, axis=-1)
    return weights @ v, weights


def _ch4_one_query_case(seed: int, t: int = 5) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(t, 4)).round(1)  # (T, D) = (5, 4)
    w_q = rng.normal(scale=1.5, size=(4, 3)).round(1)  # (D, d_k) = (4, 3)
    w_k = rng.normal(scale=1.5, size=(4, 3)).round(1)  # (D, d_k)
    w_v = rng.normal(size=(4, 2)).round(1)  # (D, d_v) = (4, 2)
    return x, w_q, w_k, w_v


def check_one_query_attention(one_query_attention: Callable[..., Any]) -> Feedback:
    """Check the six steps for one query, from the tokens and the projections (ch. 4, ex. 1).

    Expected signature: ``one_query_attention(x, i, w_q, w_k, w_v) -> (output, weights)``
    with ``x`` of shape ``(T, D)``, ``w_q`` and ``w_k`` of shape ``(D, d_k)``, ``w_v`` of shape
    ``(D, d_v)`` and ``i`` the index of the query token. ``weights`` has shape ``(T,)``:
    ``softmax(q_i · k_j / √d_k)`` over the keys ``j``; ``output`` has shape ``(d_v,)``, the
    weighted sum of the value vectors.

    Examples
    --------
    >>> def one_query_attention(x, i, w_q, w_k, w_v):
    ...     q, k, v = x[i] @ w_q, x @ w_k, x @ w_v
    ...     scores = k @ q / np.sqrt(len(q))
    ...     weights = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
    ...     return weights @ v, weights
    >>> check_one_query_attention(one_query_attention).passed
    True
    """
    name = _name_of(one_query_attention, "one_query_attention")

    def check_one(seed: int, i: int) -> None:
        x, w_q, w_k, w_v = _ch4_one_query_case(seed)
        what = f"{name}(x, {i}, w_q, w_k, w_v)"
        result = _ch4_call(one_query_attention, x.copy(), i, w_q.copy(), w_k.copy(), w_v.copy())
        output, weights = _ch4_output_and_weights(result, what)
        q, k, v = x @ w_q, x @ w_k, x @ w_v  # (T, d_k), (T, d_k), (T, d_v)
        expected_output, expected = _ch4_attend(q, k, v, 1 / np.sqrt(3))
        expected_output, expected = expected_output[i], expected[i]
        weights = _as_result_array(weights, expected, f"the weights of {what}")
        if not np.allclose(weights, expected, rtol=1e-6, atol=1e-9):
            d_k, d, t = 3, 4, len(x)
            wrong_scales = (
                (1.0, "did not divide the scores by √d_k (here √3)"),
                (1 / d_k, "divided the scores by d_k = 3 instead of √d_k = √3"),
                (1 / np.sqrt(d), "divided by √D = √4 (the token size) instead of √d_k = √3"),
                (1 / np.sqrt(t), "divided by √T (the number of tokens) instead of √d_k = √3"),
            )
            for scale, explanation in wrong_scales:
                if np.allclose(weights, _ch4_attend(q, k, v, scale)[1][i]):
                    raise _Mistake(f"the weights of {what} are off: you {explanation}")
            swapped = softmax.softmax(k[i] @ q.T / np.sqrt(d_k))
            if np.allclose(weights, swapped):
                raise _Mistake(
                    f"the weights of {what} use W_K for the query and W_Q for the keys: the "
                    "query is x_i @ w_q, the keys are x @ w_k"
                )
            if np.allclose(weights, softmax.softmax(q @ k.T / np.sqrt(d_k), axis=0)[:, i]):
                raise _Mistake(
                    f"the weights of {what} are column {i} of a softmax over the queries: "
                    "take the softmax of query i's own row of scores, over the keys"
                )
            if np.allclose(weights, k @ q[i] / np.sqrt(d_k)):
                raise _Mistake(f"the weights of {what} are the scaled scores: apply softmax")
            if not np.isclose(weights.sum(), 1.0):
                raise _Mistake(f"the weights of {what} sum to {weights.sum():.6g}, not 1")
            _assert_close(weights, expected, f"the weights of {what}")
        output = _as_result_array(output, expected_output, f"the output of {what}")
        if np.allclose(output, expected_output, rtol=1e-6, atol=1e-9):
            return
        if np.allclose(output, v.sum(axis=0)) or np.allclose(output, v[i]):
            raise _Mistake(f"the output of {what} ignores the weights: sum weights[j] * v_j")
        _assert_close(output, expected_output, f"the output of {what}")

    def checks() -> str:
        for seed, i in ((40, 0), (41, 3), (42, 4)):
            check_one(seed, i)
        return (
            "All six steps are right: project, score against every key, divide by √d_k, "
            "softmax, weight the values, sum."
        )

    return _run_checks(checks)


# The chapter's three tokens x1, x2, x3 (rows), D = 4.
_CH4_TOKENS = np.array([[1.0, 0.0, 0.0, 1.0], [0.0, 2.0, 2.0, 0.0], [1.0, 1.0, 0.0, 0.0]])


def check_design_projections(design_projections: Callable[[], Any]) -> Feedback:
    """Check projections that make token x1 attend to x3 (chapter 4, exercise 2).

    Expected signature: ``design_projections() -> (w_q, w_k)``, two arrays of shape
    ``(4, d_k)`` with the same ``d_k >= 1`` of the learner's choice. With the chapter's tokens
    ``x1 = [1, 0, 0, 1]``, ``x2 = [0, 2, 2, 0]``, ``x3 = [1, 1, 0, 0]`` as the rows of ``X``, the
    weights ``softmax(X w_q (X w_k)ᵀ / √d_k)`` must give x1 a weight of at least 0.9 on x3.

    Examples
    --------
    >>> w_q = [[0.0], [0.0], [0.0], [5.0]]  # q1 = [5], q2 = [0], q3 = [0]
    >>> w_k = [[0.0], [1.0], [-1.0], [0.0]]  # k1 = [0], k2 = [0], k3 = [1]
    >>> check_design_projections(lambda: (w_q, w_k)).passed
    True
    """
    name = _name_of(design_projections, "design_projections")

    def as_matrix(value: Any, label: str) -> np.ndarray:
        try:
            matrix = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError) as error:
            raise _Mistake(f"{label} must be a matrix of numbers") from error
        if matrix.ndim != 2:
            raise _Mistake(f"{label} must be a matrix (D, d_k), got shape {matrix.shape}")
        if not np.isfinite(matrix).all():
            raise _Mistake(f"{label} contains NaN or infinity")
        if matrix.shape[0] != 4:
            flipped = " (it looks transposed)" if matrix.shape[1] == 4 else ""
            raise _Mistake(
                f"{label} has shape {matrix.shape}{flipped}: it maps a token of size D = 4 to "
                "d_k numbers, so it needs 4 rows, shape (4, d_k)"
            )
        return matrix

    def checks() -> str:
        result = _call(design_projections)
        if not isinstance(result, tuple | list) or len(result) != 2:
            raise _Mistake(f"{name}() must return a pair (w_q, w_k)")
        w_q = as_matrix(result[0], f"the w_q of {name}()")
        w_k = as_matrix(result[1], f"the w_k of {name}()")
        if w_q.shape[1] != w_k.shape[1]:
            raise _Mistake(
                f"w_q has {w_q.shape[1]} columns and w_k has {w_k.shape[1]}: queries and keys "
                "must have the same length d_k, or their dot products are undefined"
            )
        q, k = _CH4_TOKENS @ w_q, _CH4_TOKENS @ w_k  # (3, d_k)
        weights = softmax.softmax(q @ k.T / np.sqrt(q.shape[1]), axis=-1)  # (3, 3)
        row = ", ".join(f"{w:.3f}" for w in weights[0])
        if weights[0, 2] < 0.9:
            favourite = int(np.argmax(weights[0]))
            raise _Mistake(
                f"x1's weights on (x1, x2, x3) are ({row}): x3 gets {weights[0, 2]:.3f}, not "
                f"0.9 (x1 attends most to x{favourite + 1}). Make q1 · k3 larger than q1 · k1 "
                "and q1 · k2 by a few units of √d_k"
            )
        return f"x1's weights on (x1, x2, x3) are ({row}): it attends to x3."

    return _run_checks(checks)


def check_cross_attention(cross_attention: Callable[..., Any]) -> Feedback:
    """Check cross-attention with T_q ≠ T_k (chapter 4, exercise 3).

    Expected signature: ``cross_attention(x_q, x_kv, w_q, w_k, w_v) -> (output, weights)``:
    queries from ``x_q`` of shape ``(T_q, D)``, keys and values from ``x_kv`` of shape
    ``(T_k, D)``; ``weights`` ``softmax(Q Kᵀ / √d_k)`` of shape ``(T_q, T_k)``, ``output`` of
    shape ``(T_q, d_v)``.

    Examples
    --------
    >>> def cross_attention(x_q, x_kv, w_q, w_k, w_v):
    ...     q, k, v = x_q @ w_q, x_kv @ w_k, x_kv @ w_v
    ...     s = q @ k.T / np.sqrt(q.shape[-1])
    ...     e = np.exp(s - s.max(axis=-1, keepdims=True))
    ...     w = e / e.sum(axis=-1, keepdims=True)
    ...     return w @ v, w
    >>> check_cross_attention(cross_attention).passed
    True
    """
    name = _name_of(cross_attention, "cross_attention")

    def check_one(seed: int, t_q: int) -> None:
        x_kv, w_q, w_k, w_v = _ch4_one_query_case(seed, t=5)  # T_k = 5
        x_q = np.random.default_rng(seed + 100).normal(size=(t_q, 4)).round(1)  # (T_q, D)
        what = f"{name}(x_q of shape {x_q.shape}, x_kv of shape {x_kv.shape}, ...)"
        result = _ch4_call(
            cross_attention, x_q.copy(), x_kv.copy(), w_q.copy(), w_k.copy(), w_v.copy()
        )
        output, weights = _ch4_output_and_weights(result, what)
        q, k, v = x_q @ w_q, x_kv @ w_k, x_kv @ w_v
        expected_output, expected = _ch4_attend(q, k, v, 1 / np.sqrt(3))
        got = np.asarray(weights, dtype=np.float64) if weights is not None else None
        if got is not None and got.shape != expected.shape:
            if got.shape == (t_q, t_q):
                raise _Mistake(
                    f"the weights of {what} have shape {got.shape} = (T_q, T_q): the keys (and "
                    "values) must come from x_kv, giving (T_q, T_k)"
                )
            if got.shape == (5, 5):
                raise _Mistake(
                    f"the weights of {what} have shape {got.shape} = (T_k, T_k): the queries "
                    "must come from x_q, giving (T_q, T_k)"
                )
            if got.shape == expected.shape[::-1]:
                raise _Mistake(
                    f"the weights of {what} have shape {got.shape} = (T_k, T_q): one row per "
                    "QUERY is needed, scores = q @ k.T of shape (T_q, T_k)"
                )
        got = _as_result_array(weights, expected, f"the weights of {what}")
        if not np.allclose(got, expected, rtol=1e-6, atol=1e-9):
            if np.allclose(got, softmax.softmax(q @ k.T / np.sqrt(3), axis=0)):
                raise _Mistake(
                    f"the weights of {what} have columns summing to 1: take the softmax over "
                    "the keys (axis=-1), one row per query"
                )
            if np.allclose(got, _ch4_attend(q, k, v, 1.0)[1]):
                raise _Mistake(f"the weights of {what} are off: divide the scores by √d_k")
            _assert_close(got, expected, f"the weights of {what}")
        output = _as_result_array(output, expected_output, f"the output of {what}")
        _assert_close(output, expected_output, f"the output of {what}")

    def checks() -> str:
        for seed, t_q in ((50, 2), (51, 3)):
            check_one(seed, t_q)
        return (
            "Right: queries from one sequence, keys and values from the other; the weights "
            "are (T_q, T_k) and the output (T_q, d_v)."
        )

    return _run_checks(checks)


# --- Chapter 3: self-attention without weights ---

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
    return softmax.softmax(x @ np.swapaxes(x, -1, -2), axis=-1)


def check_spotlight_output(spotlight_output: Callable[..., Any]) -> Feedback:
    """Check one output vector of simple self-attention (chapter 3, exercise 1).

    Expected signature: ``spotlight_output(x: np.ndarray, position: int) -> np.ndarray``
    with ``x`` of shape ``(T, D)``; the result, of shape ``(D,)``, is
    ``sum_j a_j x_j`` with ``a = softmax(x @ x[position])``.

    Examples
    --------
    >>> def answer(x, position):
    ...     scores = x @ x[position]
    ...     weights = np.exp(scores - scores.max())
    ...     return (weights / weights.sum()) @ x
    >>> check_spotlight_output(answer).passed
    True
    """
    name = _name_of(spotlight_output, "spotlight_output")
    long_vectors = _CH3_X * 15.0  # scores up to about 1100: e^score overflows

    def check_one(x: np.ndarray, position: int) -> None:
        what = f"{name}(x, {position})"
        scores = x @ x[position]  # (T,)
        weights = softmax.softmax(scores)  # (T,)
        expected = weights @ x  # (D,)
        result = _call_on_copy(spotlight_output, x, position)
        values = _values_like(result, expected)
        if values is not None and not np.isfinite(values).all():
            raise _Mistake(
                f"{what} returned NaN or infinity for vectors whose scores reach "
                f"{scores.max():.0f}: e^score overflows. Subtract the largest score before "
                "the exponential (the stable softmax of chapter 2)"
            )
        shape = np.shape(result) if result is not None else None
        if shape == ():
            raise _Mistake(
                f"{what} returned a single number. The output is a VECTOR of shape "
                f"{expected.shape}: the weighted sum of the token vectors x[j], "
                "not of their scores"
            )
        if shape == weights.shape and shape != expected.shape:
            raise _Mistake(
                f"{what} returned {len(weights)} numbers, one per token: these look like the "
                "weights. Multiply each token vector x[j] by its weight and add them up"
            )
        got = _as_result_array(result, expected, what)
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
        for candidate, explanation in candidates:
            if candidate.shape == got.shape and np.allclose(got, candidate):
                raise _Mistake(f"{what} {explanation}")
        _assert_close(got, expected, what)

    def checks() -> str:
        for position in (0, 3):
            check_one(_CH3_X, position)
        check_one(long_vectors, 2)
        return (
            "Each output is the softmax-weighted average of all the token vectors, the "
            "spotlighted one included."
        )

    return _run_checks(checks)


def check_batched_self_attention(batched_self_attention: Callable[..., Any]) -> Feedback:
    """Check simple self-attention for a batch (chapter 3, exercise 2).

    Expected signature: ``batched_self_attention(x: np.ndarray) -> (output, weights)`` with
    ``x`` of shape ``(B, T, D)``, ``weights = softmax(x xᵀ)`` over the last axis, of shape
    ``(B, T, T)``, and ``output = weights @ x`` of shape ``(B, T, D)``, without a loop
    over the batch.

    Examples
    --------
    >>> from selfattn_lib.attention import simple_self_attention
    >>> check_batched_self_attention(simple_self_attention).passed
    True
    """
    name = _name_of(batched_self_attention, "batched_self_attention")
    batch = np.stack([_CH3_X[:4], -0.5 * _CH3_X[1:], _CH3_X[::-1][:4] * 0.8])  # (3, 4, 3)
    long_batch = batch * 15.0  # scores up to about 1100

    def check_one(x: np.ndarray) -> None:
        what = f"{name}(x) for x of shape {x.shape}"
        expected_weights = _ch3_weights(x)  # (B, T, T)
        expected_output = expected_weights @ x  # (B, T, D)
        try:
            result = _call_on_copy(batched_self_attention, x)
        except _Mistake as mistake:
            if "matmul" in str(mistake) or "aligned" in str(mistake):
                raise _Mistake(
                    f"{mistake}. For a batch, `x.T` reverses ALL the axes, (B, T, D) -> "
                    "(D, T, B). Swap only the last two: `x.transpose(0, 2, 1)` or "
                    "`np.swapaxes(x, -1, -2)`"
                ) from None
            raise
        if not isinstance(result, tuple | list) or len(result) != 2:
            raise _Mistake(
                f"{what} must return a pair (output, weights), like the library's "
                f"attention functions; got {type(result).__name__}"
            )
        output, weights = result
        values = _values_like(weights, expected_weights)
        if values is not None and not np.isfinite(values).all():
            raise _Mistake(
                f"{what} returned NaN or infinity in the weights: with scores near "
                f"{(x @ np.swapaxes(x, -1, -2)).max():.0f}, e^score overflows. Subtract "
                "each row's maximum before the exponential"
            )
        weights = _as_result_array(weights, expected_weights, f"the weights of {what}")
        if not np.allclose(weights, expected_weights, rtol=1e-6, atol=1e-9):
            if np.allclose(weights.sum(axis=-2), 1.0):
                raise _Mistake(
                    f"the COLUMNS of the weights of {what} sum to one, not the rows: take "
                    "the softmax over the keys, the last axis (axis=-1)"
                )
            if not np.allclose(weights.sum(axis=-1), 1.0):
                raise _Mistake(
                    f"the rows of the weights of {what} do not sum to one: normalise each "
                    "row on its own, with axis=-1 and keepdims=True"
                )
            _assert_close(weights, expected_weights, f"the weights of {what}")
        output = _as_result_array(output, expected_output, f"the output of {what}")
        if np.allclose(output, np.swapaxes(weights, -1, -2) @ x) and not np.allclose(
            output, expected_output
        ):
            raise _Mistake(
                f"the output of {what} uses the transposed weights: row i of the output is "
                "weights[b, i] @ x[b], so compute weights @ x"
            )
        _assert_close(output, expected_output, f"the output of {what}")

    def checks() -> str:
        check_one(batch)
        check_one(batch[:1])
        check_one(long_batch)
        return (
            "One matrix product for the scores, a softmax over the last axis and one more "
            "product: the whole batch at once."
        )

    return _run_checks(checks)


def check_attends_most_to_itself(attends_most_to_itself: Callable[..., Any]) -> Feedback:
    """Check the test "does each token attend most to itself?" (chapter 3, exercise 3).

    Expected signature: ``attends_most_to_itself(x: np.ndarray) -> np.ndarray`` with ``x``
    of shape ``(T, D)``; the result is a boolean array of shape ``(T,)``, True where token
    ``t``'s weight on itself is at least as large as its weight on every other token (a tie
    with an identical copy of itself counts as True).

    Examples
    --------
    >>> def answer(x):
    ...     scores = x @ x.T
    ...     return np.diag(scores) >= scores.max(axis=-1)
    >>> check_attends_most_to_itself(answer).passed
    True
    """
    from selfattn_lib import embeddings

    name = _name_of(attends_most_to_itself, "attends_most_to_itself")
    crafted = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    sentence = embeddings.embed("the dog chased the cat across the street")
    unit = np.random.default_rng(3).normal(size=(6, 4))
    unit /= np.linalg.norm(unit, axis=-1, keepdims=True)

    def check_one(x: np.ndarray, description: str) -> None:
        what = f"{name}(x) for {description}"
        weights = _ch3_weights(x)
        expected = np.diag(weights) >= weights.max(axis=-1)
        result = _call_on_copy(attends_most_to_itself, x)
        got = _as_result_array(result, expected.astype(np.float64), what)
        if np.asarray(result).dtype != np.bool_:
            raise _Mistake(
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
            raise _Mistake(
                f"{what} says no token attends most to itself. A token's own weight is part "
                "of its row, so it can never be strictly larger than the row's maximum: "
                "compare with >= (or leave the diagonal out of the maximum)"
            )
        if np.array_equal(got, np.argmax(weights, axis=-1) == np.arange(len(x))):
            raise _Mistake(
                f"{what} is wrong at positions {wrong}: those tokens tie between themselves "
                "and an identical copy, and argmax picks only the FIRST of tied maxima. "
                "Compare the token's own weight with the row's maximum instead"
            )
        if np.array_equal(got, np.diag(weights) >= weights.max(axis=0)):
            raise _Mistake(
                f"{what} is wrong at positions {wrong}: it compares each token's own weight "
                "with the largest weight in its COLUMN. Token t's weights are row t "
                "(axis=-1): the weights sum to one along rows, not columns"
            )
        raise _Mistake(f"{what} is wrong at positions {wrong}: expected {expected.tolist()}")

    def checks() -> str:
        check_one(crafted, "five 2-D vectors, two of them repeated")
        check_one(sentence, '"the dog chased the cat across the street"')
        check_one(unit, "six unit-length vectors")
        return (
            "Note the last check: with vectors of equal length every token attends most "
            "to itself, since x_t · x_j <= |x_t| |x_j| = x_t · x_t."
        )

    return _run_checks(checks)


# --- Chapter 5: scaling ---


def check_score_scale(score_scale: Callable[..., Any]) -> Feedback:
    """Check the learner's scale factor for the scores (chapter 5, exercise 1).

    Expected signature: ``score_scale(d_k: int, entry_variance: float, target_variance: float)
    -> float``. Queries and keys have ``d_k`` independent zero-mean entries of variance
    ``entry_variance`` (s²); the function returns the positive factor ``c`` for which the
    scores ``c · q·k`` have variance ``target_variance`` (σ²), that is
    ``c = σ / (s² √d_k)``, because ``Var(q·k) = d_k s⁴``.

    Examples
    --------
    >>> check_score_scale(lambda d_k, s2, t: np.sqrt(t) / (s2 * np.sqrt(d_k))).passed
    True
    """
    name = _name_of(score_scale, "score_scale")
    cases = ((64, 1.0, 1.0), (16, 4.0, 1.0), (100, 0.25, 4.0), (9, 2.0, 9.0))

    def mistakes(d_k: int, s2: float, t: float) -> list[tuple[float, str]]:
        return [
            (
                1 / np.sqrt(d_k),
                "that is 1/√d_k, the scale for entries of variance 1 and a target of 1: here "
                "the entries' variance s² and the target σ² matter too",
            ),
            (
                np.sqrt(t / (d_k * s2)),
                "you used Var(q_i k_i) = s², but for independent zero-mean q_i and k_i it is "
                "E[q_i²] E[k_i²] = s² · s² = s⁴, so Var(q·k) = d_k s⁴",
            ),
            (
                t / (d_k * s2**2),
                "that factor makes the STANDARD DEVIATION of the scores equal to the target "
                "variance: multiplying the scores by c multiplies their variance by c², so "
                "take the square root",
            ),
            (
                np.sqrt(t) / (d_k * s2**2),
                "you divided by d_k s⁴ (the variance of q·k) instead of by its square root: "
                "scaling by c multiplies the variance by c², so c = σ / √(d_k s⁴)",
            ),
            (
                np.sqrt(t) / (d_k * s2),
                "divide by the standard deviation of q·k, √(d_k s⁴) = s² √d_k, not by d_k s²",
            ),
            (
                s2 * np.sqrt(d_k) / np.sqrt(t),
                "that is the number to DIVIDE the scores by; return the factor c that "
                "multiplies them (its inverse)",
            ),
        ]

    def checks() -> str:
        for d_k, s2, t in cases:
            what = f"{name}({d_k}, {s2:g}, {t:g})"
            expected = np.sqrt(t) / (s2 * np.sqrt(d_k))
            got = float(
                _as_result_array(_call_quietly(score_scale, d_k, s2, t), np.zeros(()), what)
            )
            if np.isclose(got, expected, rtol=1e-6):
                continue
            for wrong, explanation in mistakes(d_k, s2, t):
                if np.isclose(got, wrong, rtol=1e-6):
                    raise _Mistake(
                        f"{what} returned {got:.6g}, expected {expected:.6g}: {explanation}"
                    )
            achieved = got**2 * d_k * s2**2
            raise _Mistake(
                f"{what} returned {got:.6g}: scores multiplied by it have variance "
                f"{achieved:.6g}, not {t:g}. Start from Var(c · q·k) = c² d_k s⁴"
            )
        return (
            "Your scale is right: c = σ / (s² √d_k). With s² = σ² = 1 it is the Transformer's "
            "1/√d_k."
        )

    return _run_checks(checks)


def _ch5_softmax(scores: np.ndarray) -> np.ndarray:
    return softmax.softmax(np.asarray(scores, dtype=np.float64))


def check_softmax_jacobian(softmax_jacobian: Callable[[np.ndarray], Any]) -> Feedback:
    """Check the learner's Jacobian of softmax (chapter 5, exercise 2).

    Expected signature: ``softmax_jacobian(scores: np.ndarray) -> np.ndarray`` for one row
    of scores of shape ``(n,)``, returning the ``(n, n)`` matrix ``J[i, j] = ∂w_i / ∂z_j =
    w_i (δ_ij − w_j)``, that is ``diag(w) − w wᵀ`` with ``w = softmax(z)``, computed without
    overflow for large scores.

    Examples
    --------
    >>> from selfattn_lib.softmax import softmax
    >>> def jac(z):
    ...     w = softmax(z)
    ...     return np.diag(w) - np.outer(w, w)
    >>> check_softmax_jacobian(jac).passed
    True
    """
    name = _name_of(softmax_jacobian, "softmax_jacobian")
    cases = (
        np.array([1.0, 2.0, 3.0]),
        np.array([0.5, -1.0, 2.0, 0.0]),
        np.array([3.0]),
        np.array([1000.0, 999.0, 990.0]),
    )

    def mistakes(z: np.ndarray, w: np.ndarray) -> list[tuple[np.ndarray, str]]:
        return [
            (
                np.diag(w),
                "this is only diag(w): subtract the outer product w wᵀ (np.outer(w, w)), "
                "since raising one score also lowers every other weight",
            ),
            (
                np.diag(w * (1 - w)),
                "the diagonal w_i (1 − w_i) is right, but the off-diagonal entries are "
                "−w_i w_j, not 0: raising score j lowers weight i",
            ),
            (
                np.outer(w, w) - np.diag(w),
                "the sign is flipped: it is diag(w) − w wᵀ (raising a score raises its own "
                "weight, so the diagonal is positive)",
            ),
            (
                np.diag(w) - w**2,
                "you subtracted w * w, which broadcasts the vector of squares w_j² into every "
                "row; the matrix w_i w_j is the outer product np.outer(w, w)",
            ),
            (
                np.diag(w) - w[:, None] ** 2,
                "you subtracted w_i² in every entry of row i; the matrix w_i w_j is the outer "
                "product np.outer(w, w)",
            ),
            (
                np.diag(z) - np.outer(z, z),
                "you used the scores z in the formula; it is written with the weights "
                "w = softmax(z)",
            ),
        ]

    def checks() -> str:
        for z in cases:
            what = f"{name}({_show(z)})"
            w = _ch5_softmax(z)
            expected = np.diag(w) - np.outer(w, w)
            result = _call_on_copy(softmax_jacobian, z)
            _explain_non_finite(
                result,
                expected,
                what,
                "For scores around 1000, np.exp overflows: compute the weights with a stable "
                "softmax (subtract the largest score first).",
            )
            values = _values_like(result, expected)
            if values is None and np.shape(result) == z.shape:
                raise _Mistake(
                    f"{what} returned shape {z.shape}, one number per score; the Jacobian has "
                    f"one row per weight and one column per score: shape {expected.shape}"
                )
            got = _as_result_array(result, expected, what)
            if np.allclose(got, expected, atol=1e-10):
                continue
            for wrong, explanation in mistakes(z, w):
                if np.allclose(got, wrong, atol=1e-10):
                    raise _Mistake(f"{what} is wrong: {explanation}")
            _assert_close(got, expected, what, atol=1e-10)
        return (
            "Your Jacobian diag(w) − w wᵀ is right. Every entry is at most 1/4 in size, and "
            "all of them go to 0 as the weights become one-hot."
        )

    return _run_checks(checks)


_CH5_DIMENSIONS = tuple(2**n for n in range(11))  # 1, 2, 4, ..., 1024 (memory: see below)


def _ch5_top_weight_statistic(
    n_keys: int, d_k: int, statistic: Callable[[np.ndarray], float], n_queries: int = 4000
) -> float:
    """``statistic`` over random queries of the largest unscaled weight (a fixed seed)."""
    rng = np.random.default_rng([5, n_keys, d_k])
    q = rng.standard_normal((n_queries, d_k))  # (n_queries, d_k)
    k = rng.standard_normal((n_queries, n_keys, d_k))  # (n_queries, n_keys, d_k)
    scores = np.einsum("nd,nkd->nk", q, k)  # (n_queries, n_keys), no (n, n_keys, d_k) temporary
    weights = softmax.softmax(scores, axis=-1)  # (n_queries, n_keys)
    return float(statistic(weights.max(axis=-1)))


def check_saturation_dimension(saturation_dimension: Callable[..., Any]) -> Feedback:
    """Check the learner's search for the d_k at which softmax saturates (chapter 5, ex. 3).

    Expected signature: ``saturation_dimension(n_keys: int, threshold: float, rng:
    np.random.Generator) -> int | None``. For ``d_k`` = 1, 2, 4, …, 1024 in turn, draw 2000
    queries, each with ``n_keys`` keys (entries independent standard normal, from ``rng``),
    take the softmax of the UNSCALED scores ``q·k`` of each query and its largest weight,
    and return the first ``d_k`` at which the median of these largest weights exceeds
    ``threshold`` (``None`` if none does). Random noise is allowed for: an answer is
    accepted if it is consistent with the checker's own estimate to within 0.004.

    Memory: the keys take ``2000 · n_keys · d_k`` float64 numbers, about 131 MB for 8 keys at
    ``d_k = 1024``, so the search stops there. The checker only asks for thresholds that a
    correct search passes by ``d_k = 64`` and never computes anything beyond ``d_k = 1024``
    itself; how far a wrong search runs is set by the learner's own loop.
    """
    name = _name_of(saturation_dimension, "saturation_dimension")
    cases = ((8, 0.75), (8, 0.95), (2, 0.99))
    margin = 0.004
    medians: dict[tuple[int, int], float] = {}

    def median(n_keys: int, d_k: int) -> float:
        if (n_keys, d_k) not in medians:
            medians[n_keys, d_k] = _ch5_top_weight_statistic(n_keys, d_k, np.median)
        return medians[n_keys, d_k]

    def first_dimension(n_keys: int, threshold: float, statistic) -> int | None:
        for d_k in _CH5_DIMENSIONS:  # up to 1024 for the checker's own estimates
            if _ch5_top_weight_statistic(n_keys, d_k, statistic) > threshold:
                return d_k
        return None

    def check_one(n_keys: int, threshold: float) -> None:
        what = f"{name}({n_keys}, {threshold:g}, rng)"
        result = _call_quietly(saturation_dimension, n_keys, threshold, np.random.default_rng(0))
        if result is None:
            raise _Mistake(
                f"{what} returned None, as if no d_k up to 1024 made the median top weight "
                f"exceed {threshold:g}. Use the UNSCALED scores q·k (divided by √d_k they never "
                "saturate), the LARGEST weight of each query (max over the keys), and return "
                "the d_k you found"
            )
        got = float(_as_result_array(result, np.zeros(()), what))
        if got not in _CH5_DIMENSIONS:
            raise _Mistake(
                f"{what} returned {got:g}; the answer is one of d_k = 1, 2, 4, ..., 1024"
            )
        d_k = int(got)
        too_late = d_k > 1 and median(n_keys, d_k // 2) > threshold + margin
        too_early = median(n_keys, d_k) < threshold - margin
        if not (too_late or too_early):
            return
        mean_answer = first_dimension(n_keys, threshold, np.mean)
        if too_late and mean_answer == d_k:
            raise _Mistake(
                f"{what} returned {d_k}, where the MEAN of the top weights first exceeds "
                f"{threshold:g}; the question asks for the median (np.median), which is "
                f"already {median(n_keys, d_k // 2):.3f} at d_k = {d_k // 2}: return the "
                "FIRST d_k at which the median passes"
            )
        if too_late:
            raise _Mistake(
                f"{what} returned {d_k}, but at d_k = {d_k // 2} the median top weight is "
                f"already about {median(n_keys, d_k // 2):.3f} > {threshold:g}: return the "
                "FIRST d_k that passes"
            )
        raise _Mistake(
            f"{what} returned {d_k}, but there the median top weight of the unscaled scores "
            f"is only about {median(n_keys, d_k):.3f}, not above {threshold:g}"
        )

    def checks() -> str:
        for n_keys, threshold in cases:
            check_one(n_keys, threshold)
        return (
            "Your search finds where softmax saturates: with 8 keys the median top weight of "
            "unscaled scores passes 0.95 at d_k = 64, the size of one head of the base "
            "Transformer."
        )

    return _run_checks(checks)


def check_unshuffle(unshuffle: Callable[..., Any]) -> Feedback:
    """Check the undoing of a shuffle of the tokens (chapter 3, exercise 4).

    Expected signature: ``unshuffle(shuffled: np.ndarray, order: np.ndarray) -> np.ndarray``
    where ``shuffled = original[order]`` has shape ``(T, ...)`` and ``order`` is a permutation
    of ``range(T)``; the result is ``original``, i.e. ``result[order] == shuffled``.

    Examples
    --------
    >>> def answer(shuffled, order):
    ...     original = np.empty_like(shuffled)
    ...     original[order] = shuffled
    ...     return original
    >>> check_unshuffle(answer).passed
    True
    """
    name = _name_of(unshuffle, "unshuffle")
    original = _CH3_X  # (5, 3)
    cases = (np.array([2, 0, 4, 1, 3]), np.array([1, 2, 3, 4, 0]), np.arange(5))

    def check_one(order: np.ndarray) -> None:
        shuffled = original[order]
        what = f"{name}(shuffled, order={order.tolist()})"
        result = _call_quietly(unshuffle, shuffled.copy(), order.copy())
        got = _as_result_array(result, original, what)
        if np.allclose(got, original):
            return
        if np.allclose(got, shuffled[order]):
            raise _Mistake(
                f"{what} applied the shuffle a second time (shuffled[order]). Row t of the "
                "shuffled array came from row order[t] of the original, so it must go BACK "
                "there: result[order] = shuffled, or shuffled[np.argsort(order)]"
            )
        if np.allclose(got, shuffled):
            raise _Mistake(f"{what} returned the shuffled rows unchanged")
        _assert_close(got, original, what)

    def checks() -> str:
        for order in cases:
            check_one(order)
        return (
            "np.argsort(order) is the inverse permutation, and unshuffling the outputs of "
            "the shuffled sentence gives back the original outputs (equivariance)."
        )

    return _run_checks(checks)


def check_mha_attn_mask(mha_attn_mask: Callable[[np.ndarray, int], Any]) -> Feedback:
    """Check the learner's conversion to ``nn.MultiheadAttention``'s mask (chapter 6, ex. 4).

    Expected signature: ``mha_attn_mask(mask: np.ndarray, n_heads: int) -> np.ndarray``. The
    input is this course's boolean mask of shape ``(B, T_q, T_k)`` (``True`` = may attend); the
    result is the boolean ``attn_mask`` that ``torch.nn.MultiheadAttention`` accepts for
    per-sequence masks: shape ``(B * H, T_q, T_k)``, ``True`` = IGNORE, with the ``H`` copies
    of sequence ``b``'s mask at rows ``b * H, …, b * H + H - 1`` (batch-major, as PyTorch
    reshapes ``(B, H, …)`` into ``(B * H, …)``).

    Examples
    --------
    >>> check_mha_attn_mask(lambda mask, h: np.repeat(~mask, h, axis=0)).passed
    True
    """
    name = _name_of(mha_attn_mask, "mha_attn_mask")
    causal = np.tril(np.ones((3, 4), dtype=bool), k=1)  # (T_q, T_k)
    keys_ok = (np.arange(4) < np.array([4, 2])[:, None])[:, None, :]  # (B, 1, T_k)
    mask = causal & keys_ok  # (B, T_q, T_k) = (2, 3, 4), different per sequence

    def checks() -> str:
        for n_heads in (3, 1, 2):
            expected = np.repeat(~mask, n_heads, axis=0)  # (B * H, T_q, T_k)
            what = f"{name}(mask of shape {mask.shape}, n_heads={n_heads})"
            result = _call(mha_attn_mask, mask.copy(), n_heads)
            shape = np.shape(result) if result is not None else None
            if shape == mask.shape and n_heads > 1:
                raise _Mistake(
                    f"{what} returned shape {shape} = (B, T_q, T_k). nn.MultiheadAttention "
                    "wants a 3-D attn_mask of shape (B * H, T_q, T_k): one copy per head, "
                    f"here {expected.shape}"
                )
            if shape == (mask.shape[0], n_heads, *mask.shape[1:]) and n_heads > 1:
                raise _Mistake(
                    f"{what} returned shape {shape} = (B, H, T_q, T_k): merge the first two "
                    f"axes into B * H, shape {expected.shape}"
                )
            got = _ch6_bool_result(result, expected, what)
            if np.array_equal(got, expected):
                continue
            if np.array_equal(got, ~expected):
                raise _Mistake(
                    f"{what} keeps our convention (True = may attend). For "
                    "nn.MultiheadAttention a boolean True means IGNORE: invert the mask with ~"
                )
            if np.array_equal(got, np.tile(~mask, (n_heads, 1, 1))):
                raise _Mistake(
                    f"{what} puts the copies in the wrong order (as np.tile does: sequence 0, "
                    "sequence 1, sequence 0, …). PyTorch reads row b * H + h as sequence b, "
                    "head h, so the H copies of one sequence must be next to each other: "
                    "np.repeat(..., n_heads, axis=0)"
                )
            index = tuple(int(i) for i in np.argwhere(got != expected)[0])
            raise _Mistake(f"{what}{list(index)} is {bool(got[index])}, expected the opposite")
        return (
            "Your conversion is right: inverted for 'True = ignore' and repeated head by head "
            "in the (B * H, T_q, T_k) order nn.MultiheadAttention expects."
        )

    return _run_checks(checks)
