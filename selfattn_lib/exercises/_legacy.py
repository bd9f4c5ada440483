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
from typing import Any

import numpy as np

from selfattn_lib import similarity, softmax
from selfattn_lib.exercises._kit import Feedback


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


# --- Chapter 7: multi-head attention ---


def _ch7_split(x: np.ndarray, n_heads: int) -> np.ndarray:
    """Reference split: ``(B, T, D)`` → ``(B, H, T, D_h)``."""
    batch, n_tokens, d_model = x.shape
    return x.reshape(batch, n_tokens, n_heads, d_model // n_heads).transpose(0, 2, 1, 3)


def _ch7_merge(x: np.ndarray) -> np.ndarray:
    """Reference merge: ``(B, H, T, D_h)`` → ``(B, T, D)``."""
    batch, n_heads, n_tokens, d_head = x.shape
    return x.transpose(0, 2, 1, 3).reshape(batch, n_tokens, n_heads * d_head)


def _ch7_numbers(shape: tuple[int, int, int]) -> np.ndarray:
    """``(B, T, D)`` array whose entry ``[b, t, f]`` is ``(b T + t) D + f``: it names itself."""
    return np.arange(float(np.prod(shape))).reshape(shape)


def _ch7_where(number: float, n_tokens: int, d_model: int) -> str:
    """``"feature 4 of token 1"`` for an entry of :func:`_ch7_numbers` (batch 0 implied)."""
    batch_token, feature = divmod(int(round(number)), d_model)
    batch, token = divmod(batch_token, n_tokens)
    return f"feature {feature} of token {token}" + (f" of sequence {batch}" if batch else "")


def _ch7_array(result: Any, what: str) -> np.ndarray:
    """The learner's result as a float array (NumPy arrays, lists and CPU tensors work)."""
    if result is None:
        raise _Mistake(f"{what} returned None: did you forget the `return` statement?")
    try:
        return np.asarray(result, dtype=np.float64)
    except (TypeError, ValueError, RuntimeError) as error:
        raise _Mistake(
            f"{what} must return an array of numbers, got {type(result).__name__}"
        ) from error


def check_split_heads(split_heads: Callable[[np.ndarray, int], Any]) -> Feedback:
    """Check the learner's split into heads (chapter 7, exercise 1).

    Expected signature: ``split_heads(x: np.ndarray, n_heads: int) -> np.ndarray`` taking
    ``x`` of shape ``(B, T, D)`` to ``(B, H, T, D_h)`` with ``D_h = D / H``: head ``h`` of
    token ``t`` holds features ``h·D_h … (h+1)·D_h − 1`` of token ``t``. The checker feeds
    arrays whose entries are their own positions, so it can say which feature of which token
    ended up where.

    Examples
    --------
    >>> check_split_heads(lambda x, h: x.reshape(*x.shape[:2], h, -1).swapaxes(1, 2)).passed
    True
    """
    name = _name_of(split_heads, "split_heads")
    cases = (((2, 4, 6), 2), ((1, 3, 8), 4), ((2, 2, 6), 3), ((1, 3, 4), 1))

    def check_one(shape: tuple[int, int, int], n_heads: int) -> None:
        x = _ch7_numbers(shape)
        batch, n_tokens, d_model = shape
        d_head = d_model // n_heads
        expected = _ch7_split(x, n_heads)  # (B, H, T, D_h)
        what = f"{name}(x of shape {shape}, n_heads={n_heads})"
        got = _ch7_array(_call(split_heads, x.copy(), n_heads), what)
        if got.shape == (batch, n_tokens, n_heads, d_head) and n_heads != n_tokens:
            raise _Mistake(
                f"{what} returned shape {got.shape} = (B, T, H, D_h): the reshape is right, but "
                "the head axis must come before the tokens, so that every head sees all T "
                "tokens: swap axes 1 and 2 (`.transpose(0, 2, 1, 3)`)"
            )
        if got.shape == (batch, n_heads, d_head, n_tokens) and d_head != n_tokens:
            raise _Mistake(
                f"{what} returned shape {got.shape} = (B, H, D_h, T): the tokens and the "
                "features of each head are swapped. Reshape to (B, T, H, D_h), then swap only "
                "axes 1 and 2"
            )
        if got.shape != expected.shape:
            raise _Mistake(
                f"{what} returned shape {got.shape}, expected (B, H, T, D_h) = {expected.shape}"
            )
        if np.array_equal(got, expected):
            return
        if np.array_equal(got, x.reshape(expected.shape)):
            raise _Mistake(
                f"{what} reshapes x straight to (B, H, T, D_h) — the classic bug. The shape is "
                f"right, but head 0, row 1 holds {_ch7_where(got[0, 0, 1, 0], n_tokens, d_model)}"
                f", not {_ch7_where(expected[0, 0, 1, 0], n_tokens, d_model)}: a reshape keeps "
                "the order in memory, so head 0 gets the first "
                f"T·D_h = {n_tokens * d_head} numbers of x — whole tokens, not a slice of every "
                "token. Reshape to (B, T, H, D_h) first, then swap axes 1 and 2"
            )
        interleaved = x.reshape(batch, n_tokens, d_head, n_heads).transpose(0, 3, 1, 2)
        if np.array_equal(got, interleaved):
            raise _Mistake(
                f"{what} gives head 0 the features 0, {n_heads}, {2 * n_heads}, … (one in "
                f"every {n_heads}): you reshaped to (B, T, D_h, H). Head h gets the "
                "consecutive block h·D_h … (h+1)·D_h − 1, so reshape to (B, T, H, D_h)"
            )
        index = tuple(int(i) for i in np.argwhere(got != expected)[0])
        b, h, t, i = index
        raise _Mistake(
            f"{what}[{b}, {h}, {t}, {i}] holds {_ch7_where(got[index], n_tokens, d_model)}, "
            f"expected {_ch7_where(expected[index], n_tokens, d_model)} "
            f"(head {h} holds features {h * d_head}…{(h + 1) * d_head - 1} of every token)"
        )

    def checks() -> str:
        for shape, n_heads in cases:
            check_one(shape, n_heads)
        return (
            "Your split is right: reshape (B, T, D) → (B, T, H, D_h), then swap the token and "
            "head axes, so every head holds its own block of features of every token."
        )

    return _run_checks(checks)


def check_merge_heads(merge_heads: Callable[[np.ndarray], Any]) -> Feedback:
    """Check the learner's merge of the heads (chapter 7, exercise 2).

    Expected signature: ``merge_heads(heads: np.ndarray) -> np.ndarray`` taking ``(B, H, T,
    D_h)`` to ``(B, T, D)`` with ``D = H·D_h``: token ``t`` gets the outputs of heads
    ``0, 1, …, H − 1`` one after the other; ``merge_heads(split_heads(x, H))`` is ``x``.

    Examples
    --------
    >>> check_merge_heads(lambda x: x.swapaxes(1, 2).reshape(*x.shape[:1], x.shape[2], -1)).passed
    True
    """
    name = _name_of(merge_heads, "merge_heads")
    cases = (((2, 4, 6), 2), ((1, 3, 8), 4), ((2, 2, 6), 3), ((1, 3, 4), 1))

    def check_one(shape: tuple[int, int, int], n_heads: int) -> None:
        expected = _ch7_numbers(shape)  # (B, T, D)
        batch, n_tokens, d_model = shape
        d_head = d_model // n_heads
        heads = _ch7_split(expected, n_heads)  # (B, H, T, D_h)
        what = f"{name}(heads of shape {heads.shape})"
        got = _ch7_array(_call(merge_heads, heads.copy()), what)
        if got.shape == (batch, n_tokens, n_heads, d_head) and n_heads > 1:
            raise _Mistake(
                f"{what} returned shape {got.shape} = (B, T, H, D_h): the transpose is right, "
                f"now join the last two axes into D = H·D_h = {d_model} with a reshape"
            )
        if got.shape != expected.shape:
            raise _Mistake(f"{what} returned shape {got.shape}, expected (B, T, D) = {shape}")
        if np.array_equal(got, expected):
            return
        if np.array_equal(got, heads.reshape(shape)):
            raise _Mistake(
                f"{what} reshapes the heads straight to (B, T, D) — the classic bug again. Row 0 "
                f"then holds {_ch7_where(got[0, 0, d_head], n_tokens, d_model)} at position "
                f"{d_head}, not feature {d_head} of token 0. Move the head axis back behind the "
                "tokens first (swap axes 1 and 2: (B, T, H, D_h)), then reshape"
            )
        if np.array_equal(got, heads.transpose(0, 2, 3, 1).reshape(shape)):
            raise _Mistake(
                f"{what} interleaves the heads (feature 1 of a token comes from head 1): you "
                "moved the head axis last, (B, T, D_h, H). Token t must get all of head 0's "
                "outputs, then all of head 1's, …: transpose to (B, T, H, D_h)"
            )
        index = tuple(int(i) for i in np.argwhere(got != expected)[0])
        raise _Mistake(
            f"{what}{list(index)} holds {_ch7_where(got[index], n_tokens, d_model)}, expected "
            f"{_ch7_where(expected[index], n_tokens, d_model)}"
        )

    def checks() -> str:
        for shape, n_heads in cases:
            check_one(shape, n_heads)
        return (
            "Your merge is right: swap the head and token axes back, then reshape, so each "
            "token's features are head 0's outputs, then head 1's, and so on."
        )

    return _run_checks(checks)


def check_mha_parameter_count(mha_parameter_count: Callable[..., Any]) -> Feedback:
    """Check the learner's parameter count of a multi-head layer (chapter 7, exercise 3).

    Expected signature: ``mha_parameter_count(d_model: int, n_heads: int, bias: bool) -> int``:
    the number of trainable numbers in ``W_Q, W_K, W_V, W_O`` (each ``D × D``) and, when
    ``bias`` is true, their biases (each ``D``): ``4 D² + 4 D`` or ``4 D²``, whatever
    ``n_heads``.

    Examples
    --------
    >>> check_mha_parameter_count(lambda d, h, bias: 4 * d * d + (4 * d if bias else 0)).passed
    True
    """
    name = _name_of(mha_parameter_count, "mha_parameter_count")
    cases = ((512, 8, True), (512, 8, False), (512, 1, True), (64, 4, True), (6, 3, False))

    def check_one(d_model: int, n_heads: int, bias: bool) -> None:
        what = f"{name}({d_model}, {n_heads}, bias={bias})"
        result = _call(mha_parameter_count, d_model, n_heads, bias)
        if result is None:
            raise _Mistake(f"{what} returned None: did you forget the `return` statement?")
        try:
            got = float(result)
        except (TypeError, ValueError) as error:
            raise _Mistake(f"{what} must return a number, got {type(result).__name__}") from error
        if not got.is_integer():
            raise _Mistake(f"{what} returned {got:g}: a count of parameters is a whole number")
        got_int = int(got)
        d, h, d_head = d_model, n_heads, d_model // n_heads
        weights = 4 * d * d
        expected = weights + (4 * d if bias else 0)
        if got_int == expected:
            return
        candidates = {
            h * weights + (4 * d if bias else 0): (
                "counts a D × D matrix per head and projection. Each head uses only D_h = "
                "D / H columns of W_Q, W_K and W_V (and D_h rows of W_O), so together the "
                "heads hold D × D numbers per projection, whatever H"
            ),
            h * weights + (4 * d * h if bias else 0): (
                "counts a D × D matrix (and a bias) per head and projection. Each head uses "
                "only D_h = D / H columns of W_Q, W_K and W_V, so together they hold D × D"
            ),
            4 * d * d_head + (4 * d_head if bias else 0): (
                "counts one head's slice (D × D_h) per projection: all H heads together need "
                "H × D × D_h = D × D"
            ),
            3 * d * d + (3 * d if bias else 0): "forgets the output projection W_O (D × D)",
            3 * d * d: "forgets the output projection W_O and the biases",
            weights + (0 if bias else 4 * d): (
                "forgets the four biases (D numbers each)"
                if bias
                else "counts biases although bias=False"
            ),
            weights + (4 * d + 4 * d * (h - 1) if bias else 0): (
                "counts the biases once per head: there is one bias vector of D numbers per "
                "projection, split among the heads like the weights"
            ),
        }
        reason = candidates.get(got_int)
        if reason is not None and got_int != expected:
            raise _Mistake(f"{what} returned {got_int:,}, expected {expected:,}: that {reason}")
        raise _Mistake(
            f"{what} returned {got_int:,}, expected {expected:,} (four D × D matrices"
            + (" and four biases of D numbers" if bias else "")
            + ")"
        )

    def checks() -> str:
        for d_model, n_heads, bias in cases:
            check_one(d_model, n_heads, bias)
        return (
            "Your count is right: 4 D² (+ 4 D with biases), the same for 1 head or 8 — "
            "1,050,624 for the base Transformer's D = 512."
        )

    return _run_checks(checks)


def _ch7_case(seed: int) -> tuple[np.ndarray, Any]:
    """Inputs ``x`` ``(B, T, D) = (5, 4, 6)`` and parameters with non-zero biases."""
    from selfattn_lib.multihead import MultiHeadParams

    rng = np.random.default_rng(seed)
    x = rng.normal(size=(5, 4, 6))
    weights = [rng.normal(scale=0.7, size=(6, 6)) for _ in range(4)]
    biases = [rng.normal(scale=0.5, size=6) for _ in range(4)]
    return x, MultiHeadParams(*weights, *biases)


def _ch7_weights(
    x: np.ndarray, params: Any, n_heads: int, *, scale: float | None = None, split=_ch7_split
) -> np.ndarray:
    """Per-head attention weights ``(B, H, T, T)``; ``scale`` defaults to ``√D_h``."""
    d_head = x.shape[-1] // n_heads
    q = split(x @ params.w_q + params.b_q, n_heads)  # (B, H, T, D_h)
    k = split(x @ params.w_k + params.b_k, n_heads)  # (B, H, T, D_h)
    scores = q @ np.swapaxes(k, -1, -2) / (np.sqrt(d_head) if scale is None else scale)
    return softmax.softmax(scores, axis=-1)  # (B, H, T, T)


def check_head_weights(head_weights: Callable[..., Any]) -> Feedback:
    """Check the learner's per-head attention weights (chapter 7, exercise 4).

    Expected signature: ``head_weights(x, params, n_heads) -> np.ndarray`` with ``x`` of shape
    ``(B, T, D)`` and a :class:`~selfattn_lib.multihead.MultiHeadParams` ``params`` (biases
    included); the result is the ``(B, H, T, T)`` array of every head's self-attention
    weights, ``softmax(Q_h K_hᵀ / √D_h)`` with ``Q_h = x W_Q[:, h-th block] + b_Q[h-th
    block]`` and likewise ``K_h``.

    Examples
    --------
    >>> from selfattn_lib.multihead import multi_head_attention
    >>> check_head_weights(lambda x, p, h: multi_head_attention(x, x, p, h)[1]).passed
    True
    """
    name = _name_of(head_weights, "head_weights")

    def check_one(seed: int, n_heads: int) -> None:
        x, params = _ch7_case(seed)
        batch, n_tokens, d_model = x.shape
        expected = _ch7_weights(x, params, n_heads)
        what = f"{name}(x of shape {x.shape}, params, n_heads={n_heads})"
        got = _ch7_array(_call_quietly(head_weights, x.copy(), params, n_heads), what)
        if got.shape == (batch, n_tokens, n_heads, n_tokens):
            raise _Mistake(
                f"{what} returned shape {got.shape} = (B, T, H, T): the head axis belongs "
                "before the queries, (B, H, T_q, T_k) — did you split without moving the head "
                "axis forward?"
            )
        if got.shape == (n_heads, batch, n_tokens, n_tokens) and n_heads != batch:
            raise _Mistake(
                f"{what} returned shape {got.shape} = (H, B, T, T): stack the heads along "
                "axis 1, (B, H, T_q, T_k)"
            )
        got = _as_result_array(got, expected, what)
        if np.allclose(got, expected, atol=1e-8):
            return
        if np.allclose(got.sum(axis=-2), 1.0) and not np.allclose(got.sum(axis=-1), 1.0):
            raise _Mistake(
                f"the columns of {what} sum to 1, not the rows: take the softmax over the "
                "keys, the last axis"
            )
        mistakes = [
            (
                _ch7_weights(x, params, n_heads, scale=np.sqrt(d_model)),
                f"divides the scores by √D = √{d_model}. Each head's queries and keys have "
                f"D_h = D / H = {d_model // n_heads} numbers, so divide by √D_h",
            ),
            (
                _ch7_weights(x, params, n_heads, scale=1.0),
                "does not scale the scores: divide them by √D_h (chapter 5)",
            ),
            (
                _ch7_weights(x, params, n_heads, scale=float(d_model // n_heads)),
                f"divides the scores by D_h = {d_model // n_heads} itself; the scale is its "
                f"square root, √D_h (chapter 5)",
            ),
            (
                _ch7_weights(
                    x, params, n_heads, split=lambda a, h: a.reshape(a.shape[0], h, a.shape[1], -1)
                ),
                "splits the projected queries and keys by reshaping straight to (B, H, T, "
                "D_h) — the classic bug that hands each head the features of other tokens. "
                "Head h takes columns h·D_h … (h+1)·D_h − 1 of the projections",
            ),
            (
                _ch7_weights(
                    x,
                    params,
                    n_heads,
                    split=lambda a, h: a.reshape(*a.shape[:2], -1, h).transpose(0, 3, 1, 2),
                ),
                "gives head h every H-th column (interleaved). Head h takes the consecutive "
                "columns h·D_h … (h+1)·D_h − 1",
            ),
        ]
        zero = np.zeros(d_model)
        without_bias = type(params)(
            params.w_q, params.w_k, params.w_v, params.w_o, zero, zero, zero, zero
        )
        mistakes.append(
            (
                _ch7_weights(x, without_bias, n_heads),
                "leaves out the query bias b_q (the key bias b_k would not matter — it shifts "
                "each row of scores by a constant, chapter 4 — but b_q does)",
            )
        )
        for wrong, reason in mistakes:
            if np.allclose(got, wrong, atol=1e-8):
                raise _Mistake(f"{what} {reason}")
        _assert_close(got, expected, what)

    def checks() -> str:
        for seed, n_heads in ((70, 2), (71, 3), (72, 1)):
            check_one(seed, n_heads)
        return (
            "Your per-head weights are right: each head slices its own columns of W_Q and W_K "
            "(and of the biases), scores with √D_h and takes its own softmax."
        )

    return _run_checks(checks)


def _ch7_contributions(x: np.ndarray, params: Any, n_heads: int) -> np.ndarray:
    """``(B, H, T, D)``: head h's output times its block of rows of ``W_O`` (no ``b_o``)."""
    weights = _ch7_weights(x, params, n_heads)  # (B, H, T, T)
    values = _ch7_split(x @ params.w_v + params.b_v, n_heads)  # (B, H, T, D_h)
    heads = weights @ values  # (B, H, T, D_h)
    d_head = x.shape[-1] // n_heads
    w_o_blocks = params.w_o.reshape(n_heads, d_head, -1)  # (H, D_h, D): block rows
    return heads @ w_o_blocks[None]  # (B, H, T, D)


def check_head_contributions(head_contributions: Callable[..., Any]) -> Feedback:
    """Check the learner's split of the output into the heads' shares (chapter 7, exercise 5).

    Expected signature: ``head_contributions(x, params, n_heads) -> np.ndarray`` with ``x``
    ``(B, T, D)`` and :class:`~selfattn_lib.multihead.MultiHeadParams` ``params``; the result
    has shape ``(B, H, T, D)``: entry ``[:, h]`` is ``head_h W_O^(h)``, head ``h``'s output
    ``(B, T, D_h)`` times rows ``h·D_h … (h+1)·D_h − 1`` of ``W_O``. Without the bias ``b_o``,
    so that the sum over heads plus ``b_o`` is the layer's output.

    Examples
    --------
    >>> check_head_contributions(_ch7_contributions).passed
    True
    """
    name = _name_of(head_contributions, "head_contributions")

    def check_one(seed: int, n_heads: int) -> None:
        x, params = _ch7_case(seed)
        batch, n_tokens, d_model = x.shape
        expected = _ch7_contributions(x, params, n_heads)  # (B, H, T, D)
        output = expected.sum(axis=1) + params.b_o  # (B, T, D)
        what = f"{name}(x of shape {x.shape}, params, n_heads={n_heads})"
        got = _ch7_array(_call_quietly(head_contributions, x.copy(), params, n_heads), what)
        if got.shape == (n_heads, batch, n_tokens, d_model) and n_heads != batch:
            raise _Mistake(
                f"{what} returned shape {got.shape} = (H, B, T, D): put the heads on axis 1, "
                "(B, H, T, D)"
            )
        if got.shape == (batch, n_heads, n_tokens, d_model // n_heads) and n_heads > 1:
            raise _Mistake(
                f"{what} returned shape {got.shape} = (B, H, T, D_h): those are the heads' "
                "outputs. Multiply each by its block of rows of W_O, shape (D_h, D), to get its "
                "share of the output, (B, H, T, D)"
            )
        got = _as_result_array(got, expected, what)
        if np.allclose(got, expected, atol=1e-8):
            return
        if np.allclose(got, expected + params.b_o, atol=1e-8):
            raise _Mistake(
                f"{what} adds b_o to every head, so the heads' shares sum to the output plus "
                f"{n_heads - 1} extra b_o. The bias belongs to no head: leave it out"
            )
        if np.allclose(got, expected + params.b_o / n_heads, atol=1e-8):
            raise _Mistake(
                f"{what} gives every head b_o / H. That sums correctly, but the bias belongs "
                "to no head: leave it out (the shares then sum to the output minus b_o)"
            )
        if np.allclose(got, np.broadcast_to((output - params.b_o)[:, None] / n_heads, got.shape)):
            raise _Mistake(
                f"{what} splits the output evenly, (output - b_o) / H for every head. Each head "
                "contributes its own output times its own rows of W_O, which are not equal"
            )
        if np.allclose(got.sum(axis=1), output - params.b_o, atol=1e-8):
            raise _Mistake(
                f"the shares of {what} sum to the output (minus b_o), but are not the heads' "
                "own: head h's share is head_h (B, T, D_h) times rows h·D_h … (h+1)·D_h − 1 "
                "of W_O"
            )
        _assert_close(got, expected, what)

    def checks() -> str:
        for seed, n_heads in ((73, 2), (74, 3), (75, 1)):
            check_one(seed, n_heads)
        return (
            "Your shares are right: head h contributes head_h W_O^(h), and the shares plus "
            "b_o add up to the layer's output — concatenating and multiplying by W_O is a "
            "sum over heads."
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


# --- Chapter 8: Positional encoding ---

_CH8_BASE = 10000.0


def _ch8_frequencies(d_model: int, base: float = _CH8_BASE) -> np.ndarray:
    """``ω_i = base^(-2i / D)`` for the ``D / 2`` pairs, shape ``(D / 2,)``."""
    return base ** (-np.arange(0, d_model, 2) / d_model)


def _ch8_angles(max_len: int, d_model: int, start: int = 0) -> np.ndarray:
    """``pos · ω_i`` for positions ``start … start + max_len - 1``, shape ``(T, D / 2)``."""
    return np.arange(start, start + max_len)[:, None] * _ch8_frequencies(d_model)[None, :]


def _ch8_interleave(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Columns ``first[:, 0], second[:, 0], first[:, 1], …``, shape ``(T, D)``."""
    return np.stack([first, second], axis=-1).reshape(first.shape[0], -1)


def check_split_layout_encoding(split_layout_encoding: Callable[[int, int], Any]) -> Feedback:
    """Check the sinusoidal encoding with all sines first (chapter 8, exercise 1).

    Expected signature: ``split_layout_encoding(max_len: int, d_model: int) -> np.ndarray`` of
    shape ``(T, D)`` = ``(max_len, d_model)`` for an even ``d_model``: column ``i`` is
    ``sin(pos · ω_i)`` and column ``D/2 + i`` is ``cos(pos · ω_i)`` for ``i < D/2``, with
    ``ω_i = 10000^(-2i/D)`` and positions ``0 … max_len - 1``. The same numbers as the paper's
    encoding, with the columns in another order.

    Examples
    --------
    >>> def answer(max_len, d_model):
    ...     angles = np.arange(max_len)[:, None] / 10000 ** (np.arange(0, d_model, 2) / d_model)
    ...     return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)
    >>> check_split_layout_encoding(answer).passed
    True
    """
    name = _name_of(split_layout_encoding, "split_layout_encoding")

    def split(angles: np.ndarray) -> np.ndarray:
        return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)  # (T, D)

    def mistakes(max_len: int, d_model: int) -> list[tuple[np.ndarray, str]]:
        angles = _ch8_angles(max_len, d_model)  # (T, D / 2)
        half = d_model // 2
        slow = np.arange(max_len)[:, None] * _CH8_BASE ** (-np.arange(half) / d_model)
        fast = np.arange(max_len)[:, None] / _ch8_frequencies(d_model)  # pos · 10000^(2i/D)
        return [
            (
                _ch8_interleave(np.sin(angles), np.cos(angles)),
                "these are the columns of the paper's interleaved layout (sin, cos, sin, cos, "
                "…). Here all D/2 sines come first, then all D/2 cosines: "
                "np.concatenate([sines, cosines], axis=1)",
            ),
            (
                np.concatenate([np.cos(angles), np.sin(angles)], axis=1),
                "the cosines come first and the sines second; it is the other way round: "
                "columns 0 … D/2 - 1 are sin(pos · ω_i), the last D/2 are cos(pos · ω_i)",
            ),
            (
                split(slow),
                "you used the frequencies 10000^(-i/D) for i = 0 … D/2 - 1; the exponent is "
                "2i/D (pair i starts at dimension 2i of the paper's layout), so that the "
                "wavelengths reach almost 2π·10000, not 2π·100",
            ),
            (
                split(fast),
                "the positions are MULTIPLIED by 10000^(2i/D); they must be divided by it "
                "(ω_i = 10000^(-2i/D)), so that the wavelengths grow from 2π to almost 2π·10000",
            ),
            (
                split(_ch8_angles(max_len, d_model, start=1)),
                "the positions start at 1; they start at 0 (np.arange(max_len)), so that "
                "the first row is sin(0) = 0 and cos(0) = 1",
            ),
        ]

    def checks() -> str:
        for max_len, d_model in ((6, 4), (50, 16), (3, 2), (9, 10)):
            what = f"{name}({max_len}, {d_model})"
            expected = split(_ch8_angles(max_len, d_model))  # (T, D)
            result = _call_quietly(split_layout_encoding, max_len, d_model)
            if np.shape(result) == expected.shape[::-1] and max_len != d_model:
                raise _Mistake(
                    f"{what} returned shape {np.shape(result)} = (D, T): one row per position, "
                    f"one column per dimension, shape {expected.shape}"
                )
            got = _as_result_array(result, expected, what)
            if np.allclose(got, expected, atol=1e-6):
                continue
            for wrong, explanation in mistakes(max_len, d_model):
                if np.allclose(got, wrong, atol=1e-6):
                    raise _Mistake(f"{what} is wrong: {explanation}")
            _assert_close(got, expected, what, atol=1e-6)
        return (
            "Your split layout is right. It holds exactly the numbers of the paper's "
            "interleaved encoding, with the columns in another order."
        )

    return _run_checks(checks)


def _ch8_wavelengths(d_model: int) -> np.ndarray:
    return 2 * np.pi / _ch8_frequencies(d_model)  # (D / 2,)


def _ch8_log_closest(values: np.ndarray, target: float) -> int:
    return int(np.argmin(np.abs(np.log(values) - np.log(target))))


def check_closest_pair(closest_pair: Callable[[int, float], Any]) -> Feedback:
    """Check the search for the pair with a given wavelength (chapter 8, exercise 2).

    Expected signature: ``closest_pair(d_model: int, wavelength: float) -> int``: the index
    ``i`` (``0 ≤ i < D/2``) of the sin/cos pair whose wavelength ``λ_i = 2π · 10000^(2i/D)`` is
    closest to ``wavelength`` by ratio, i.e. with the smallest ``|log(λ_i / wavelength)|``.
    Targets beyond the ends give the first or the last pair.

    Examples
    --------
    >>> def answer(d_model, wavelength):
    ...     lam = 2 * np.pi * 10000 ** (np.arange(0, d_model, 2) / d_model)
    ...     return int(np.argmin(np.abs(np.log(lam / wavelength))))
    >>> check_closest_pair(answer).passed
    True
    """
    name = _name_of(closest_pair, "closest_pair")
    # The first case tells apart the dimension 2i and a forgotten 2π, the second a difference
    # of wavelengths, the third a difference of frequencies.
    cases = (
        (64, 1000.0), (8, 300.0), (16, 100.0), (8, 40.0), (8, 3.0), (8, 1e6), (512, 100.0),
        (512, 5.0),
    )  # fmt: skip

    def checks() -> str:
        for d_model, target in cases:
            what = f"{name}({d_model}, {target:g})"
            wavelengths = _ch8_wavelengths(d_model)  # (D / 2,)
            expected = _ch8_log_closest(wavelengths, target)
            result = _call_quietly(closest_pair, d_model, target)
            got_value = float(_as_result_array(result, np.zeros(()), what))
            if got_value != round(got_value):
                raise _Mistake(f"{what} returned {got_value:g}; a pair index is a whole number")
            got = int(round(got_value))
            if got == expected:
                continue
            if expected > 0 and got == 2 * expected:
                raise _Mistake(
                    f"{what} returned {got}, the DIMENSION 2i of the pair's sine; the answer "
                    f"is the pair index i = {expected}"
                )
            if not 0 <= got < d_model // 2:
                raise _Mistake(
                    f"{what} returned {got}, but with D = {d_model} the pairs are i = 0 … "
                    f"{d_model // 2 - 1}; a target beyond the ends gets the first or last pair"
                )
            if got == _ch8_log_closest(wavelengths / (2 * np.pi), target):
                raise _Mistake(
                    f"{what} returned {got}: you compared with 10000^(2i/D), which is λ_i / 2π. "
                    "The wavelength of sin(pos · ω_i) is λ_i = 2π / ω_i = 2π · 10000^(2i/D)"
                )
            if got == int(np.argmin(np.abs(wavelengths - target))):
                raise _Mistake(
                    f"{what} returned {got}, whose wavelength {wavelengths[got]:.4g} is closest "
                    f"by DIFFERENCE; the wavelengths grow geometrically, so compare ratios: "
                    f"λ_{expected} = {wavelengths[expected]:.4g} is off by a smaller factor. "
                    "Minimise |log(λ_i / wavelength)|"
                )
            if got == int(np.argmin(np.abs(2 * np.pi / wavelengths - 2 * np.pi / target))):
                raise _Mistake(
                    f"{what} returned {got}, whose FREQUENCY ω_{got} is closest to 2π / "
                    f"{target:g} by difference; frequencies, like wavelengths, change by the "
                    "same factor from pair to pair, so compare wavelengths by ratio: minimise "
                    "|log(λ_i / wavelength)|"
                )
            raise _Mistake(
                f"{what} returned {got} (λ = {wavelengths[got]:.4g}), expected {expected} "
                f"(λ = {wavelengths[expected]:.4g}); λ_i = 2π · 10000^(2i/D)"
            )
        return (
            "Your search is right: wavelengths grow by the same factor from pair to pair, so "
            "the closest one is found on a log scale (or solved for: i ≈ D/2 · log(λ/2π) / "
            "log 10000)."
        )

    return _run_checks(checks)


def _ch8_self_attention(x: np.ndarray) -> np.ndarray:
    """``softmax(X Xᵀ / √D) X`` for one sequence, shape ``(T, D)``."""
    return softmax.softmax(x @ x.T / np.sqrt(x.shape[-1]), axis=-1) @ x


def check_equivariance_gap(equivariance_gap: Callable[..., Any]) -> Feedback:
    """Check the measure of how far positions break equivariance (chapter 8, exercise 3).

    Expected signature: ``equivariance_gap(x, order, encoding) -> float`` with ``x`` of shape
    ``(T, D)``, a permutation ``order`` of ``range(T)`` and ``encoding`` of shape ``(T, D)``.
    With ``f(z) = softmax(z zᵀ / √D) z`` (self-attention with ``q = k = v = z``) it returns
    ``max |f(x[order] + encoding) - f(x + encoding)[order]|``: the shuffled sentence gets the
    encodings of the slots it now occupies, and its outputs are compared with the original
    outputs shuffled the same way. Zero means equivariant.

    Examples
    --------
    >>> from selfattn_lib.attention import scaled_dot_product_attention as sdpa
    >>> def answer(x, order, encoding):
    ...     shuffled = x[order] + encoding
    ...     original = x + encoding
    ...     ours = sdpa(shuffled, shuffled, shuffled)[0]
    ...     reference = sdpa(original, original, original)[0][order]
    ...     return float(np.abs(ours - reference).max())
    >>> check_equivariance_gap(answer).passed
    True
    """
    name = _name_of(equivariance_gap, "equivariance_gap")
    rng = np.random.default_rng(8)
    x = rng.normal(size=(5, 4))  # (T, D)
    angles = _ch8_angles(5, 4)  # (T, D / 2)
    encoding = _ch8_interleave(np.sin(angles), np.cos(angles))  # (T, D)
    order = np.array([2, 0, 4, 1, 3])  # not its own inverse

    def variants(order: np.ndarray, enc: np.ndarray) -> dict[str, float]:
        f = _ch8_self_attention
        shuffled = f(x[order] + enc)  # (T, D)
        original = f(x + enc)  # (T, D)

        def unscaled(z: np.ndarray) -> np.ndarray:
            return softmax.softmax(z @ z.T, axis=-1) @ z  # (T, D), no division by √D

        return {
            "right": float(np.abs(shuffled - original[order]).max()),
            "travel": float(np.abs(f((x + enc)[order]) - original[order]).max()),
            "none": float(np.abs(f(x[order]) - f(x)[order]).max()),
            "invariance": float(np.abs(shuffled - original).max()),
            "inverse": float(np.abs(shuffled - original[np.argsort(order)]).max()),
            "mean": float(np.abs(shuffled - original[order]).mean()),
            "unscaled": float(np.abs(unscaled(x[order] + enc) - unscaled(x + enc)[order]).max()),
            "signed": float((shuffled - original[order]).max()),
        }

    def check_one(order: np.ndarray, enc: np.ndarray, label: str) -> None:
        what = f"{name}(x, order={order.tolist()}, {label})"
        result = _call_quietly(equivariance_gap, x.copy(), order.copy(), enc.copy())
        got = float(_as_result_array(result, np.zeros(()), what))
        values = variants(order, enc)
        expected = values["right"]
        # rtol and atol let float32 answers pass (e.g. torch's default dtype): their rounding
        # errors are about 1e-7, while every mistake below changes the gap by more than 0.01.
        if np.isclose(got, expected, rtol=1e-5, atol=1e-5):
            return
        if got < 0:
            raise _Mistake(f"{what} returned {got:.3g}: a largest absolute difference is ≥ 0")
        if expected > 1e-3 and abs(got) < 1e-5:
            raise _Mistake(
                f"{what} returned {got:.3g}, as if attention were still equivariant; the "
                f"gap is {expected:.4f}. You get 0 when the encodings travel with the tokens, "
                "(x + encoding)[order], or are left out. An encoding belongs to a SLOT, not to "
                "a token: shuffle x first, then add the encoding, x[order] + encoding"
            )
        if np.isclose(got, values["invariance"], rtol=1e-5):
            raise _Mistake(
                f"{what} compared the shuffled outputs with the UNSHUFFLED original outputs, a "
                "test of invariance. Shuffle the original outputs the same way before "
                "comparing: f(x + encoding)[order]"
            )
        if np.isclose(got, values["inverse"], rtol=1e-5):
            raise _Mistake(
                f"{what} shuffled the original outputs with the inverse permutation "
                "(np.argsort(order)). Row t of x[order] is token order[t], so compare with "
                "f(x + encoding)[order]"
            )
        if np.isclose(got, values["mean"], rtol=1e-5):
            raise _Mistake(
                f"{what} returned the MEAN absolute difference; return the largest, "
                "np.abs(...).max()"
            )
        if np.isclose(got, values["unscaled"], rtol=1e-5):
            raise _Mistake(
                f"{what} used unscaled scores z zᵀ; divide them by √D as "
                "scaled_dot_product_attention does"
            )
        if np.isclose(got, values["signed"], rtol=1e-5):
            raise _Mistake(
                f"{what} returned the largest SIGNED difference, {got:.4f}; a large negative "
                f"difference counts as much as a positive one: take np.abs(...) before .max() "
                f"(the gap is {expected:.4f})"
            )
        raise _Mistake(f"{what} returned {got:.6g}, expected {expected:.6g}")

    def checks() -> str:
        check_one(order, encoding, "sinusoidal encoding")
        check_one(np.arange(5), encoding, "identity order")
        check_one(order, np.zeros_like(encoding), "encoding of zeros")
        check_one(np.array([1, 2, 3, 4, 0]), encoding, "sinusoidal encoding")
        return (
            "Your gap is right: with positions added after the shuffle, the outputs no longer "
            "just move with their tokens (the gap is positive), while the identity order or an "
            "all-zero encoding gives 0, since self-attention alone is equivariant."
        )

    return _run_checks(checks)


def check_decode_position(decode_position: Callable[[np.ndarray], Any]) -> Feedback:
    """Check the reading of a position back from its encoding (chapter 8, exercise 4).

    Expected signature: ``decode_position(encoding_row: np.ndarray) -> int``: given the row
    ``PE[p]`` (shape ``(D,)``, the paper's interleaved layout, base 10000, ``D ≥ 32``) of a
    position ``0 ≤ p < 20000``, return ``p``. The checker uses ``D`` = 32, 64 and 512.

    Examples
    --------
    >>> def answer(row):
    ...     d = len(row)
    ...     omega = 10000.0 ** (-(d - 2) / d)  # the slowest pair: dimensions D-2, D-1
    ...     angle = np.mod(np.arctan2(row[-2], row[-1]), 2 * np.pi)
    ...     return round(angle / omega)
    >>> check_decode_position(answer).passed
    True
    """
    name = _name_of(decode_position, "decode_position")
    positions = (0, 1, 6, 7, 100, 4321, 12345, 19999)

    def row_of(position: int, d_model: int) -> np.ndarray:
        angles = _ch8_angles(1, d_model, start=position)  # (1, D / 2)
        return _ch8_interleave(np.sin(angles), np.cos(angles))[0]  # (D,)

    def explain(got: float, position: int, d_model: int, what: str) -> None:
        omega = _ch8_frequencies(d_model)  # (D / 2,)
        wavelengths = 2 * np.pi / omega
        slowest = float(omega[-1])
        theta = position * slowest
        if abs(got - position) < 0.5:
            raise _Mistake(
                f"{what} returned {got:.10g} for position {position}: round to the nearest "
                "whole number"
            )
        if got < 0 and abs(got - (position - wavelengths[-1])) < 0.5:
            raise _Mistake(
                f"{what} returned {got:.6g}: np.arctan2 returns angles in (-π, π], and the "
                f"slowest pair of position {position} has turned by {theta:.3f} > π. Add 2π "
                "to negative angles: np.mod(angle, 2 * np.pi)"
            )
        for wrong, text in (
            (np.arcsin(np.sin(theta)) / slowest, "np.arcsin of the sine alone"),
            (np.arccos(np.cos(theta)) / slowest, "np.arccos of the cosine alone"),
        ):
            if abs(got - wrong) < 0.5 <= abs(wrong - position):
                raise _Mistake(
                    f"{what} returned {got:.6g}: {text} cannot tell an angle of {theta:.3f} "
                    "from its mirror image. Use both: np.arctan2(sine, cosine)"
                )
        swapped = np.mod(np.pi / 2 - theta, 2 * np.pi) / slowest
        if abs(got - swapped) < 0.5 <= abs(swapped - position):
            raise _Mistake(
                f"{what} returned {got:.6g}: the arguments of np.arctan2 are swapped. It is "
                "np.arctan2(y, x) = np.arctan2(sine, cosine), and the sine is the even "
                "dimension D - 2"
            )
        for pair in range(d_model // 2 - 1):
            wrapped = position % wavelengths[pair]
            if position >= wavelengths[pair] and abs(got - wrapped) < 0.5:
                raise _Mistake(
                    f"{what} returned {got:.6g} for position {position}: pair {pair} repeats "
                    f"every {wavelengths[pair]:.4g} positions, so it only knows the position "
                    "up to whole turns. Use the slowest pair (dimensions D - 2 and D - 1), "
                    "which turns less than once over 20000 positions"
                )

    def checks() -> str:
        for d_model in (32, 64, 512):
            for position in positions:
                what = f"{name}(PE[{position}] with D = {d_model})"
                result = _call_quietly(decode_position, row_of(position, d_model))
                got = float(_as_result_array(result, np.zeros(()), what))
                if abs(got - position) < 1e-6:
                    continue
                explain(got, position, d_model, what)
                raise _Mistake(f"{what} returned {got:.6g}, expected {position}")
        return (
            "Your decoder reads every position back: the slowest pair works like the hour hand "
            "of a clock, unambiguous over its whole turn, while the fast pairs add the detail."
        )

    return _run_checks(checks)


# --- Chapter 9: The encoder block ---


def _ch9_plain(result: Any) -> Any:
    """A torch tensor (even one that requires grad, from an ``nn`` module) as a NumPy array.

    Learners may build an answer from ``nn.LayerNorm`` or ``nn.RMSNorm`` and return its output
    as it is; NumPy cannot read a tensor that requires grad. Anything else is returned as is.
    """
    detach = getattr(result, "detach", None)
    if callable(detach) and callable(getattr(result, "numpy", None)):
        return detach().cpu().numpy()
    return result


def _ch9_rms_norm(x: np.ndarray, gain: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt((x**2).mean(axis=-1, keepdims=True) + eps) * gain


def _ch9_layer_norm(
    x: np.ndarray,
    gain: np.ndarray,
    bias: np.ndarray,
    eps: float = 1e-5,
    *,
    ddof: int = 0,
    eps_outside: bool = False,
) -> np.ndarray:
    """Layer norm over the last axis; ``ddof`` and ``eps_outside`` make the usual slips."""
    centred = x - x.mean(axis=-1, keepdims=True)
    variance = x.var(axis=-1, keepdims=True, ddof=ddof)
    spread = np.sqrt(variance) + eps if eps_outside else np.sqrt(variance + eps)
    return gain * centred / spread + bias


def check_rms_norm(rms_norm: Callable[..., Any]) -> Feedback:
    """Check the learner's RMSNorm (chapter 9, exercise 1).

    Expected signature: ``rms_norm(x: np.ndarray, gain: np.ndarray, eps: float) ->
    np.ndarray`` of the shape of ``x`` (``(..., D)``): every vector along the last axis is
    divided by its root mean square and multiplied by ``gain`` (shape ``(D,)``),
    ``x / sqrt(mean(x²) + eps) * gain``. No mean is subtracted and there is no bias.

    Examples
    --------
    >>> def answer(x, gain, eps):
    ...     return x / np.sqrt((x**2).mean(axis=-1, keepdims=True) + eps) * gain
    >>> check_rms_norm(answer).passed
    True
    """
    name = _name_of(rms_norm, "rms_norm")
    rng = np.random.default_rng(9)
    cases = (
        (rng.normal(loc=2.0, size=(2, 3, 5)), rng.normal(loc=1.0, size=5), 1e-6),
        (rng.normal(size=(4, 6)), rng.normal(loc=1.0, size=6), 1e-6),
        (rng.normal(scale=1e-3, size=(3, 4)), rng.normal(loc=1.0, size=4), 1e-4),
    )

    def mistakes(x: np.ndarray, gain: np.ndarray, eps: float) -> list[tuple[np.ndarray, str]]:
        mean_square = (x**2).mean(axis=-1, keepdims=True)
        found = [
            (
                _ch9_layer_norm(x, gain, 0.0, eps),
                "it subtracts each vector's mean first: that is layer norm. RMSNorm does not "
                "centre; it divides x itself by its root mean square sqrt(mean(x²) + eps)",
            ),
            (
                x / (np.sqrt(mean_square) + eps) * gain,
                "eps is added after the square root; it goes inside, sqrt(mean(x²) + eps), as "
                "in layer norm (it matters for vectors of tiny size)",
            ),
            (
                x / np.sqrt(x.var(axis=-1, keepdims=True) + eps) * gain,
                "it divides by the standard deviation, which subtracts the mean inside; "
                "RMSNorm divides by the root mean square of x itself, sqrt(mean(x²) + eps)",
            ),
            (
                x / (mean_square + eps) * gain,
                "it divides by the mean square without the square root, so the result does "
                "not have a root mean square of 1",
            ),
            (
                x / np.sqrt((x**2).sum(axis=-1, keepdims=True) + eps) * gain,
                "it divides by the length sqrt(sum(x²)) instead of the root MEAN square "
                "sqrt(mean(x²)): the result is √D times too small",
            ),
            (
                x / np.sqrt(mean_square + eps),
                "the gain is missing: multiply the normalised vector by gain, feature by feature",
            ),
            (
                x / np.sqrt(mean_square) * gain,
                "eps is missing: add it to the mean square inside the square root, which "
                "keeps tiny vectors from being blown up (and a zero vector from giving NaN)",
            ),
            (
                x / np.sqrt((x**2).mean(axis=0, keepdims=True) + eps) * gain,
                "it averages over the first axis: the statistics of RMSNorm, like those of "
                "layer norm, are taken over the features of ONE vector, the last axis "
                "(axis=-1, keepdims=True)",
            ),
            (
                x / np.sqrt((x**2).mean() + eps) * gain,
                "it uses one mean square for the whole array: each vector along the last axis "
                "needs its own (axis=-1, keepdims=True)",
            ),
        ]
        return found

    def checks() -> str:
        for x, gain, eps in cases:
            what = f"{name}(x of shape {x.shape}, gain, eps={eps:g})"
            expected = _ch9_rms_norm(x, gain, eps)
            result = _ch9_plain(_call_quietly(rms_norm, x.copy(), gain.copy(), eps))
            got = _as_result_array(result, expected, what)
            if np.allclose(got, expected, rtol=1e-6, atol=1e-10):
                continue
            for wrong, message in mistakes(x, gain, eps):
                if np.allclose(got, wrong, rtol=1e-6, atol=1e-10):
                    raise _Mistake(f"{what}: {message}")
            _assert_close(got, expected, what, atol=1e-10)
        return (
            "Your RMSNorm is right: every vector is divided by its root mean square (eps "
            "inside the square root) and scaled by the gain — layer norm without the centring "
            "and the bias, as in T5 and LLaMA."
        )

    return _run_checks(checks)


def _ch9_encoder_layer_count(d_model: int, d_ff: int) -> int:
    attention = 4 * d_model * d_model + 4 * d_model  # W_Q, W_K, W_V, W_O and their biases
    feed_forward = 2 * d_model * d_ff + d_ff + d_model  # W_1, W_2 and their biases
    norms = 2 * 2 * d_model  # two layer norms, each with a gain and a bias of size D
    return attention + feed_forward + norms


def check_encoder_layer_parameters(encoder_layer_parameters: Callable[..., Any]) -> Feedback:
    """Check the learner's parameter count of one encoder layer (chapter 9, exercise 2).

    Expected signature: ``encoder_layer_parameters(d_model: int, n_heads: int, d_ff: int) ->
    int``: the number of trainable numbers of one encoder layer as in the paper (and
    ``torch.nn.TransformerEncoderLayer``): multi-head attention with four ``D × D`` weights and
    biases, the feed-forward network ``D → d_ff → D`` with biases, and two layer norms with a
    gain and a bias each: ``4D² + 4D + 2 D d_ff + d_ff + D + 4D``.

    Examples
    --------
    >>> def answer(d_model, n_heads, d_ff):
    ...     return 4 * d_model**2 + 4 * d_model + 2 * d_model * d_ff + d_ff + 5 * d_model
    >>> check_encoder_layer_parameters(answer).passed
    True
    """
    name = _name_of(encoder_layer_parameters, "encoder_layer_parameters")
    cases = ((512, 8, 2048), (8, 2, 32), (64, 4, 100), (1024, 16, 4096))

    def as_count(result: Any, what: str) -> int:
        if result is None:
            raise _Mistake(f"{what} returned None: did you forget the `return` statement?")
        try:
            value = float(result)
        except (TypeError, ValueError) as error:
            raise _Mistake(f"{what} must return a number, got {type(result).__name__}") from error
        if not np.isfinite(value) or value != round(value):
            raise _Mistake(f"{what} returned {value}, but a number of parameters is a whole number")
        return int(round(value))

    def mistakes(d_model: int, d_ff: int) -> list[tuple[int, str]]:
        right = _ch9_encoder_layer_count(d_model, d_ff)
        return [
            (
                4 * d_model * d_model + 2 * d_model * d_ff,
                "it counts only the weight matrices: the biases of the linear layers "
                "(4 D + d_ff + D) and the gains and biases of the two layer norms (4 D) are "
                "parameters too",
            ),
            (
                right - 4 * d_model - d_ff - d_model,
                "the biases of the linear layers are missing: the four attention projections "
                "have a bias of size D each, and W_1 and W_2 have biases of sizes d_ff and D",
            ),
            (
                right - 4 * d_model,
                "the two layer norms are missing: each has a learned gain and a learned bias "
                "of size D",
            ),
            (
                right - 2 * d_model,
                "2 D parameters of the layer norms are missing: there are two layer norms (one "
                "per sublayer), and each has TWO learned vectors of size D, a gain and a bias",
            ),
            (
                right - d_model * d_model - d_model,
                "the output projection W_O (D × D, plus its bias) is missing",
            ),
            (
                right - d_model * d_ff - d_model,
                "the feed-forward network has two weight matrices, W_1 (D × d_ff) and W_2 "
                "(d_ff × D); one of them is missing",
            ),
            (
                _ch9_encoder_layer_count(d_model, 4 * d_model),
                "you used d_ff = 4 · D; use the argument d_ff (the paper's 2048 = 4 · 512 is "
                "one choice, not a rule)",
            ),
        ]

    def checks() -> str:
        for d_model, n_heads, d_ff in cases:
            what = f"{name}({d_model}, {n_heads}, {d_ff})"
            got = as_count(_call(encoder_layer_parameters, d_model, n_heads, d_ff), what)
            expected = _ch9_encoder_layer_count(d_model, d_ff)
            if got == expected:
                continue
            other_heads = 1 if n_heads != 1 else 2
            other = _call(encoder_layer_parameters, d_model, other_heads, d_ff)
            if as_count(other, f"{name}({d_model}, {other_heads}, {d_ff})") != got:
                raise _Mistake(
                    f"{what} returned {got:,}, and a different number for {other_heads} "
                    "head(s): the count does not depend on H. The heads split the D columns "
                    "of W_Q, W_K and W_V into H slices of D_h = D / H; together they are still "
                    "D × D matrices"
                )
            for wrong, message in mistakes(d_model, d_ff):
                if got == wrong:
                    raise _Mistake(f"{what} returned {got:,}: {message}")
            raise _Mistake(f"{what} returned {got:,}, expected {expected:,}")
        return (
            "Your count is right: 3,152,384 parameters per layer of the base model — two "
            "thirds of them in the feed-forward network, 2,048 in the layer norms."
        )

    return _run_checks(checks)


def check_sublayer_connection(sublayer_connection: Callable[..., Any]) -> Feedback:
    """Check the learner's residual connection with layer norm (chapter 9, exercise 3).

    Expected signature: ``sublayer_connection(x, sublayer, norm, norm_first) -> array`` where
    ``x`` is ``(B, T, D)`` and ``sublayer`` and ``norm`` are functions from ``(B, T, D)`` to
    ``(B, T, D)``. Post-norm (``norm_first=False``, the paper's): ``norm(x + sublayer(x))``;
    pre-norm (``norm_first=True``): ``x + sublayer(norm(x))``.

    Examples
    --------
    >>> def answer(x, sublayer, norm, norm_first):
    ...     return x + sublayer(norm(x)) if norm_first else norm(x + sublayer(x))
    >>> check_sublayer_connection(answer).passed
    True
    """
    name = _name_of(sublayer_connection, "sublayer_connection")
    rng = np.random.default_rng(90)
    x = rng.normal(loc=0.5, scale=2.0, size=(2, 4, 6))  # (B, T, D)
    weight, shift = rng.normal(size=(6, 6)) / np.sqrt(6), rng.normal(size=6)
    gain, bias = rng.normal(loc=1.0, scale=0.3, size=6), rng.normal(scale=0.5, size=6)

    def sublayer(v: np.ndarray) -> np.ndarray:
        return np.tanh(np.asarray(v) @ weight + shift)  # (B, T, D)

    def norm(v: np.ndarray) -> np.ndarray:
        return _ch9_layer_norm(np.asarray(v), gain, bias)  # (B, T, D)

    post = norm(x + sublayer(x))
    pre = x + sublayer(norm(x))
    common = [
        (
            x + norm(sublayer(x)),
            "that is x + LN(Sublayer(x)): the norm is inside the residual branch (the order "
            "of a popular blog post). The paper adds first and normalises the sum, "
            "LN(x + Sublayer(x)); pre-norm normalises the sublayer's INPUT, x + Sublayer(LN(x))",
        ),
        (
            norm(sublayer(x)),
            "the residual is missing: the input x must be added to the sublayer's output",
        ),
        (x + sublayer(x), "the layer norm is missing"),
        (
            sublayer(x),
            "it returns the sublayer's output alone: add x and apply the norm",
        ),
    ]
    cases = {
        False: [
            (
                pre,
                "with norm_first=False this is pre-norm, x + Sublayer(LN(x)). norm_first=False "
                "is the paper's post-norm: LN(x + Sublayer(x))",
            ),
            *common,
        ],
        True: [
            (
                post,
                "with norm_first=True this is post-norm, LN(x + Sublayer(x)). norm_first=True "
                "means pre-norm: x + Sublayer(LN(x))",
            ),
            (
                norm(x) + sublayer(norm(x)),
                "it adds the NORMALISED input: in pre-norm the residual carries x itself, "
                "x + Sublayer(LN(x)), so the identity path from input to output has no norm "
                "on it",
            ),
            (
                norm(x + sublayer(norm(x))),
                "it normalises again after the addition: in pre-norm nothing sits on the "
                "residual path, x + Sublayer(LN(x)); the stack normalises once, at the end",
            ),
            *common,
        ],
    }

    def checks() -> str:
        for norm_first, expected in ((False, post), (True, pre)):
            what = f"{name}(x, sublayer, norm, norm_first={norm_first})"
            result = _call_quietly(sublayer_connection, x.copy(), sublayer, norm, norm_first)
            got = _as_result_array(_ch9_plain(result), expected, what)
            if np.allclose(got, expected, rtol=1e-6, atol=1e-9):
                continue
            for wrong, message in cases[norm_first]:
                if np.allclose(got, wrong, rtol=1e-6, atol=1e-9):
                    raise _Mistake(f"{what}: {message}")
            _assert_close(got, expected, what)
        return (
            "Your sublayer connection is right: post-norm normalises the sum, LN(x + F(x)); "
            "pre-norm leaves the residual path alone, x + F(LN(x))."
        )

    return _run_checks(checks)


def _ch9_encoder_params(d_model: int, d_ff: int, rng: np.random.Generator) -> dict[str, Any]:
    from selfattn_lib.multihead import MultiHeadParams

    init = MultiHeadParams.init(d_model, rng)
    attention = MultiHeadParams(
        init.w_q,
        init.w_k,
        init.w_v,
        init.w_o,
        *(rng.normal(scale=0.3, size=d_model) for _ in range(4)),
    )
    return {
        "attention": attention,
        "w_1": rng.normal(size=(d_model, d_ff)) / np.sqrt(d_model),
        "b_1": rng.normal(scale=0.3, size=d_ff),
        "w_2": rng.normal(size=(d_ff, d_model)) / np.sqrt(d_ff),
        "b_2": rng.normal(scale=0.3, size=d_model),
        "gain_1": rng.normal(loc=1.0, scale=0.3, size=d_model),
        "bias_1": rng.normal(scale=0.3, size=d_model),
        "gain_2": rng.normal(loc=1.0, scale=0.3, size=d_model),
        "bias_2": rng.normal(scale=0.3, size=d_model),
    }


def _ch9_encoder_layer(
    x: np.ndarray,
    params: dict[str, Any],
    n_heads: int,
    mask: np.ndarray | None,
    norm_first: bool,
    *,
    ddof: int = 0,
    eps_outside: bool = False,
    relu: bool = True,
    residual: bool = True,
    swap_norms: bool = False,
) -> np.ndarray:
    """Reference encoder layer in NumPy; the keyword flags make the usual slips."""
    from selfattn_lib.multihead import multi_head_attention

    first, second = ("2", "1") if swap_norms else ("1", "2")

    def norm(v: np.ndarray, which: str) -> np.ndarray:
        gain, bias = params[f"gain_{which}"], params[f"bias_{which}"]
        return _ch9_layer_norm(v, gain, bias, ddof=ddof, eps_outside=eps_outside)

    def attend(v: np.ndarray) -> np.ndarray:
        return multi_head_attention(v, v, params["attention"], n_heads, mask=mask)[0]

    def feed_forward(v: np.ndarray) -> np.ndarray:
        hidden = v @ params["w_1"] + params["b_1"]  # (B, T, d_ff)
        return (np.maximum(hidden, 0.0) if relu else hidden) @ params["w_2"] + params["b_2"]

    keep = 1.0 if residual else 0.0
    if norm_first:
        x = keep * x + attend(norm(x, first))
        return keep * x + feed_forward(norm(x, second))
    x = norm(keep * x + attend(x), first)
    return norm(keep * x + feed_forward(x), second)


def check_encoder_layer_numpy(encoder_layer_numpy: Callable[..., Any]) -> Feedback:
    """Check the learner's NumPy encoder layer (chapter 9, exercise 4).

    Expected signature: ``encoder_layer_numpy(x, params, n_heads, mask, norm_first) ->
    np.ndarray`` for ``x`` of shape ``(B, T, D)``, a boolean ``mask`` broadcastable to
    ``(B, T, T)`` (``True`` = may attend) or ``None``, and ``params`` a dict with
    ``"attention"`` (a :class:`~selfattn_lib.multihead.MultiHeadParams`), ``"w_1"``
    ``(D, d_ff)``, ``"b_1"`` ``(d_ff,)``, ``"w_2"`` ``(d_ff, D)``, ``"b_2"`` ``(D,)`` and the
    layer norms' ``"gain_1"``, ``"bias_1"``, ``"gain_2"``, ``"bias_2"`` ``(D,)`` (eps
    ``1e-5``). Post-norm: ``x = LN_1(x + MHA(x)); x = LN_2(x + FFN(x))``; pre-norm:
    ``x = x + MHA(LN_1(x)); x = x + FFN(LN_2(x))``. The result equals
    :class:`selfattn_lib.transformer.EncoderLayer` with the same weights.

    Examples
    --------
    >>> check_encoder_layer_numpy(_ch9_encoder_layer).passed
    True
    """
    name = _name_of(encoder_layer_numpy, "encoder_layer_numpy")
    rng = np.random.default_rng(909)
    padding = (np.arange(4) < np.array([4, 2])[:, None])[:, None, :]  # (B, 1, T)
    cases = (
        (rng.normal(size=(2, 4, 8)), _ch9_encoder_params(8, 16, rng), 2, padding, False),
        (rng.normal(size=(2, 4, 8)), _ch9_encoder_params(8, 16, rng), 2, padding, True),
        (rng.normal(size=(3, 5, 8)), _ch9_encoder_params(8, 12, rng), 4, None, False),
    )
    slips = (
        (
            {"ddof": 1},
            "the layer norm divides the variance by D - 1 (np.var's ddof=1 or "
            "torch.var's default); layer norm uses the biased variance, divided by D",
        ),
        (
            {"eps_outside": True},
            "eps is added after the square root; layer norm computes "
            "(x - mean) / sqrt(variance + eps)",
        ),
        (
            {"relu": False},
            "the feed-forward network has no ReLU between W_1 and W_2: "
            "FFN(x) = max(0, x W_1 + b_1) W_2 + b_2",
        ),
        (
            {"residual": False},
            "the residual connections are missing: add each sublayer's input to its output",
        ),
        (
            {"swap_norms": True},
            "the two layer norms are swapped: gain_1 and bias_1 belong "
            "to the attention sublayer, gain_2 and bias_2 to the feed-forward sublayer",
        ),
    )

    def check_one(x, params, n_heads, mask, norm_first) -> None:
        what = (
            f"{name}(x of shape {x.shape}, params, n_heads={n_heads}, "
            f"mask={'None' if mask is None else f'of shape {mask.shape}'}, "
            f"norm_first={norm_first})"
        )
        expected = _ch9_encoder_layer(x, params, n_heads, mask, norm_first)
        copied = {key: value for key, value in params.items()}
        mask_arg = None if mask is None else mask.copy()
        result = _call_quietly(encoder_layer_numpy, x.copy(), copied, n_heads, mask_arg, norm_first)
        got = _as_result_array(_ch9_plain(result), expected, what)
        if np.allclose(got, expected, rtol=1e-7, atol=1e-9):
            return
        if np.allclose(got, _ch9_encoder_layer(x, params, n_heads, mask, not norm_first)):
            placement = ("post-norm", "pre-norm") if norm_first else ("pre-norm", "post-norm")
            raise _Mistake(
                f"{what} computed {placement[0]}, but norm_first={norm_first} asks for "
                f"{placement[1]}"
            )
        if mask is not None and np.allclose(
            got, _ch9_encoder_layer(x, params, n_heads, None, norm_first)
        ):
            raise _Mistake(
                f"{what} ignores the mask: pass it to multi_head_attention, so that no token "
                "attends to the padding"
            )
        for flags, message in slips:
            wrong = _ch9_encoder_layer(x, params, n_heads, mask, norm_first, **flags)
            if np.allclose(got, wrong, rtol=1e-7, atol=1e-9):
                raise _Mistake(f"{what}: {message}")
        _assert_close(got, expected, what)

    def checks() -> str:
        for case in cases:
            check_one(*case)
        return (
            "Your encoder layer is right, post-norm and pre-norm, with and without a padding "
            "mask: it computes what selfattn_lib's EncoderLayer and PyTorch's "
            "nn.TransformerEncoderLayer compute."
        )

    return _run_checks(checks)


# --- Chapter 10: Decoder and cross-attention ---


def _ch10_int_array(result: Any, expected: np.ndarray, what: str) -> np.ndarray:
    """``result`` as an integer array shaped like ``expected`` (lists, arrays, tensors)."""
    if result is None:
        raise _Mistake(f"{what} returned None: did you forget the `return` statement?")
    try:
        got = np.asarray(result)
    except (TypeError, ValueError, RuntimeError) as error:
        raise _Mistake(f"{what} must return an array of token ids, got {type(result)}") from error
    if got.shape != expected.shape:
        raise _Mistake(f"{what} returned shape {got.shape}, expected {expected.shape}")
    if not np.issubdtype(got.dtype, np.integer):
        raise _Mistake(
            f"{what} returned dtype {got.dtype}: token ids are integers (an embedding looks "
            "them up by index), so keep the integer dtype of the target"
        )
    return got


def check_shift_right(shift_right: Callable[..., Any]) -> Feedback:
    """Check the learner's decoder input for teacher forcing (chapter 10, exercise 1).

    Expected signature: ``shift_right(tgt: np.ndarray, bos_id: int) -> np.ndarray``: for a
    batch of targets ``tgt`` of shape ``(B, T)`` (integer ids), the decoder's input of the same
    shape: ``bos_id`` in column 0, then ``tgt[:, :-1]`` (every target token moved one place to
    the right, the last one dropped). The input ``tgt`` must not be changed.

    Examples
    --------
    >>> def answer(tgt, bos_id):
    ...     return np.concatenate([np.full((len(tgt), 1), bos_id), tgt[:, :-1]], axis=1)
    >>> check_shift_right(answer).passed
    True
    """
    name = _name_of(shift_right, "shift_right")
    cases = (
        (np.array([[7, 8, 9, 2], [5, 2, 0, 0]]), 1),
        (np.array([[4, 11, 6, 12, 2], [9, 9, 9, 2, 0], [3, 2, 0, 0, 0]]), 3),
        (np.array([[6]]), 1),
    )

    def check_one(tgt: np.ndarray, bos_id: int) -> None:
        what = f"{name}({_show(tgt)}, bos_id={bos_id})"
        bos = np.full((tgt.shape[0], 1), bos_id)  # (B, 1)
        expected = np.concatenate([bos, tgt[:, :-1]], axis=1)  # (B, T)
        given = tgt.copy()
        result = _call(shift_right, given, bos_id)
        if not np.array_equal(given, tgt):
            raise _Mistake(
                f"{what} changed the target it was given (e.g. by assigning into it): the "
                "loss still needs the unshifted target, so build a new array"
            )
        if result is not None and np.shape(result) == (tgt.shape[0], tgt.shape[1] + 1):
            raise _Mistake(
                f"{what} returned shape {np.shape(result)}: one column too many. Put <bos> in "
                "front AND drop the last target token, so that input and target have the same "
                "length T and input t holds target token t - 1"
            )
        got = _ch10_int_array(result, expected, what)
        if np.array_equal(got, expected):
            return
        pad = np.zeros_like(tgt[:, :1])
        wrong = [
            (
                np.concatenate([tgt[:, 1:], pad], axis=1),
                "shifts the target to the LEFT: input t would then be target token t + 1, the "
                "very token position t must predict, so the model could simply copy it",
            ),
            (
                np.roll(tgt, 1, axis=1),
                "rolls the target (np.roll), so the LAST target token comes first. Column 0 "
                "must be <bos> (bos_id): at the first step nothing has been written yet",
            ),
            (
                np.concatenate([bos, tgt[:, 1:]], axis=1),
                "writes <bos> over the first target token instead of shifting the target: the "
                "first token then never appears in the input, and the others are not moved",
            ),
            (
                np.concatenate([tgt[:, :-1], bos], axis=1),
                "puts <bos> at the END. It belongs in column 0, in front of the target",
            ),
            (
                np.concatenate([np.full((tgt.shape[0], 1), 1), tgt[:, :-1]], axis=1),
                f"puts 1 in column 0, not bos_id = {bos_id}: use the argument",
            ),
        ]
        if tgt.shape[0] > 1:
            wrong.append(
                (
                    np.concatenate([np.full((1, tgt.shape[1]), bos_id), tgt[:-1]], axis=0),
                    "shifts along axis 0, the batch axis: each sequence is shifted along its "
                    "own tokens, axis 1",
                )
            )
        for candidate, message in wrong:
            if np.array_equal(got, candidate):
                raise _Mistake(f"{what} {message}")
        b, t = np.argwhere(got != expected)[0]
        raise _Mistake(
            f"{what}[{b}, {t}] is {got[b, t]}, expected {expected[b, t]} "
            f"({'bos_id' if t == 0 else f'target token {t - 1}'})"
        )

    def checks() -> str:
        for tgt, bos_id in cases:
            check_one(tgt, bos_id)
        return (
            "Your shift is right: <bos> first, then the target without its last token, so "
            "the decoder's input t is target token t - 1 and every position predicts the "
            "token it has not seen."
        )

    return _run_checks(checks)


def check_decoder_self_mask(decoder_self_mask: Callable[..., Any]) -> Feedback:
    """Check the learner's mask for the decoder's self-attention (chapter 10, exercise 2).

    Expected signature: ``decoder_self_mask(tgt: np.ndarray, pad_id: int) -> np.ndarray`` of
    shape ``(B, T, T)`` and dtype bool, for a batch of decoder inputs ``tgt`` ``(B, T)``:
    ``True`` where query ``i`` may attend key ``j``, that is ``j <= i`` (causal) AND token
    ``j`` of that sequence is not padding. The padding *queries* keep their rows (they attend
    the real tokens before them), so no row is empty.

    Examples
    --------
    >>> def answer(tgt, pad_id):
    ...     causal = np.tril(np.ones((tgt.shape[1],) * 2, dtype=bool))
    ...     return causal & (tgt != pad_id)[:, None, :]
    >>> check_decoder_self_mask(answer).passed
    True
    """
    name = _name_of(decoder_self_mask, "decoder_self_mask")
    cases = (
        (np.array([[9, 9, 1, 0, 4], [1, 3, 2, 9, 9]]), 9),  # padding in front, then behind
        (np.array([[1, 7, 8, 9], [1, 5, 2, 0], [1, 6, 0, 0]]), 0),
    )

    def check_one(tgt: np.ndarray, pad_id: int) -> None:
        t = tgt.shape[1]
        what = f"{name}({_show(tgt)}, pad_id={pad_id})"
        causal = np.tril(np.ones((t, t), dtype=bool))  # (T, T)
        real = tgt != pad_id  # (B, T)
        expected = causal & real[:, None, :]  # (B, T, T): hide padding KEYS
        result = _call(decoder_self_mask, tgt.copy(), pad_id)
        shape = np.shape(result) if result is not None else None
        if shape == (t, t):
            raise _Mistake(
                f"{what} returned shape {shape} = (T, T): one mask for the whole batch. The "
                "padding differs from sequence to sequence, so the mask needs the batch axis: "
                f"(B, T, T) = {expected.shape}"
            )
        if shape in ((tgt.shape[0], 1, t), (tgt.shape[0], t)):
            raise _Mistake(
                f"{what} returned shape {shape}: that is only the padding part. Combine it "
                f"with the causal (T, T) mask into the (B, T, T) = {expected.shape} mask"
            )
        got = _ch6_bool_result(result, expected, what)
        if np.array_equal(got, expected):
            return
        both_rows_and_keys = expected & real[:, :, None]
        wrong = [
            (
                ~expected,
                "is True exactly where it should be False: that is PyTorch's 'True = ignore' "
                "convention (nn.TransformerDecoderLayer's tgt_mask). Here True = may attend",
            ),
            (
                np.broadcast_to(causal, expected.shape),
                "is only the causal mask: the padding keys stay visible (to every token after "
                "them when a sequence is padded in front). AND it with the padding mask "
                "(tgt != pad_id) of the keys",
            ),
            (
                np.broadcast_to(real[:, None, :], expected.shape),
                "hides the padding but not the future: every position could read the tokens "
                "after it, the ones it is trained to predict. AND it with the causal mask",
            ),
            (
                causal & real[:, :, None],
                "hides padding QUERIES (rows) instead of padding KEYS (columns), so the real "
                "tokens can still attend the padding. The padding mask runs along the keys, "
                "shape (B, 1, T): `(tgt != pad_id)[:, None, :]`",
            ),
            (
                both_rows_and_keys,
                "also empties the rows of the padding queries. Their outputs are ignored by "
                "the loss anyway, but a row with no key at all gives NaN in "
                "nn.MultiheadAttention: hide only the padding keys (columns)",
            ),
            (
                np.triu(np.ones((t, t), dtype=bool)) & real[:, None, :],
                "lets each query see the FUTURE (the upper triangle) instead of the past: "
                "query i may attend keys j <= i, the lower triangle, np.tril",
            ),
            (
                np.tril(np.ones((t, t), dtype=bool), k=-1) & real[:, None, :],
                "hides the diagonal: a position must see its own token too (the token it "
                "has just read), so keys j <= i, diagonal included",
            ),
            (
                causal & (tgt != 0)[:, None, :],
                f"treats 0 as the padding, but pad_id = {pad_id} here: use the argument",
            ),
        ]
        for candidate, message in wrong:
            if np.array_equal(got, candidate):
                raise _Mistake(f"{what} {message}")
        b, i, j = np.argwhere(got != expected)[0]
        raise _Mistake(
            f"{what}[{b}, {i}, {j}] is {bool(got[b, i, j])}: query {i} may attend key {j} only "
            f"if {j} <= {i} and token {j} of sequence {b} is not padding"
        )

    def checks() -> str:
        for tgt, pad_id in cases:
            check_one(tgt, pad_id)
        return (
            "Your mask is right: causal AND padding keys hidden, shape (B, T, T). "
            "selfattn_lib's Transformer.decode builds the same mask."
        )

    return _run_checks(checks)


def _ch10_layers(d_model: int, d_ff: int) -> tuple[int, int]:
    """Parameters of one post-norm encoder layer and one decoder layer (with biases)."""
    attention = 4 * d_model * d_model + 4 * d_model  # W_Q, W_K, W_V, W_O and biases
    feed_forward = 2 * d_model * d_ff + d_ff + d_model  # W_1, W_2 and biases
    norm = 2 * d_model  # gain and bias
    return attention + feed_forward + 2 * norm, 2 * attention + feed_forward + 3 * norm


def _ch10_transformer_count(vocab_size: int, d_model: int, d_ff: int, n_layers: int, tied: bool):
    encoder_layer, decoder_layer = _ch10_layers(d_model, d_ff)
    embeddings = (1 if tied else 3) * vocab_size * d_model
    return embeddings + n_layers * (encoder_layer + decoder_layer)


def check_transformer_parameters(transformer_parameters: Callable[..., Any]) -> Feedback:
    """Check the learner's parameter count of the whole Transformer (chapter 10, exercise 3).

    Expected signature: ``transformer_parameters(vocab_size: int, d_model: int, d_ff: int,
    n_layers: int, tied: bool) -> int``: the trainable numbers of the paper's (post-norm)
    encoder–decoder with ``n_layers`` encoder and ``n_layers`` decoder layers, biases in every
    linear layer except the output projection (which has none), a gain and a bias in every
    layer norm, and no final layer norm. With ``tied`` one ``V × D`` matrix serves as source
    embedding, target embedding and output projection; without, there are three such
    matrices. The sinusoidal positions are not parameters.

    Examples
    --------
    >>> def answer(vocab_size, d_model, d_ff, n_layers, tied):
    ...     attention = 4 * d_model**2 + 4 * d_model
    ...     feed_forward = 2 * d_model * d_ff + d_ff + d_model
    ...     encoder = attention + feed_forward + 4 * d_model
    ...     decoder = 2 * attention + feed_forward + 6 * d_model
    ...     embeddings = (1 if tied else 3) * vocab_size * d_model
    ...     return embeddings + n_layers * (encoder + decoder)
    >>> check_transformer_parameters(answer).passed
    True
    """
    name = _name_of(transformer_parameters, "transformer_parameters")
    cases = (
        (37000, 512, 2048, 6, True),
        (37000, 1024, 4096, 6, True),
        (42, 64, 128, 2, True),
        (100, 8, 32, 3, False),
        (37000, 512, 2048, 6, False),
    )

    def as_count(result: Any, what: str) -> int:
        if result is None:
            raise _Mistake(f"{what} returned None: did you forget the `return` statement?")
        if isinstance(result, bool) or np.ndim(result) != 0:
            raise _Mistake(f"{what} must return one whole number, got {result!r}")
        try:
            value = float(result)
        except (TypeError, ValueError) as error:
            raise _Mistake(f"{what} must return a number, got {type(result).__name__}") from error
        if not np.isfinite(value) or value != round(value):
            raise _Mistake(f"{what} returned {value}, but a number of parameters is a whole number")
        return int(round(value))

    def mistakes(vocab_size: int, d_model: int, d_ff: int, n_layers: int, tied: bool):
        right = _ch10_transformer_count(vocab_size, d_model, d_ff, n_layers, tied)
        encoder_layer, decoder_layer = _ch10_layers(d_model, d_ff)
        attention = 4 * d_model * d_model + 4 * d_model
        vd = vocab_size * d_model
        found = [
            (
                right - n_layers * (attention + 2 * d_model),
                "each decoder layer is counted like an encoder layer. A decoder layer has TWO "
                "attention blocks (masked self-attention and cross-attention, 4 D² + 4 D "
                "each) and THREE layer norms",
            ),
            (
                right - n_layers * attention,
                "each decoder layer has two attention blocks, self-attention and "
                "cross-attention (4 D² + 4 D each); you counted one",
            ),
            (
                right - n_layers * 2 * d_model,
                "a decoder layer has three layer norms (one after each of its three "
                "sublayers), 2 D parameters each; you counted two",
            ),
            (
                right - n_layers * decoder_layer,
                "the decoder layers are missing: the model has n_layers of them besides the "
                "n_layers encoder layers",
            ),
            (
                right - n_layers * encoder_layer,
                "the encoder layers are missing: the model has n_layers of them besides the "
                "n_layers decoder layers",
            ),
            (
                right + vocab_size,
                "the output projection has no bias in the paper's model (its weight is the "
                "embedding matrix); drop the V bias terms",
            ),
            (
                right + 4 * d_model,
                "there is no final layer norm after the paper's post-norm stacks (pre-norm "
                "models and nn.Transformer add one to each stack: 4 D more)",
            ),
        ]
        if tied:
            found += [
                (
                    right + 2 * vd,
                    "with tied embeddings the source embedding, the target embedding and the "
                    "output projection are ONE V × D matrix, counted once, not three times",
                ),
                (right - vd, "the embedding matrix (V × D) is missing"),
            ]
        else:
            found += [
                (
                    right - vd,
                    "untied, there are three V × D matrices: the source embedding, the "
                    "target embedding and the output projection; you counted two",
                ),
                (
                    right - 2 * vd,
                    "untied, the source embedding, the target embedding and the output "
                    "projection are three separate V × D matrices; you counted one",
                ),
            ]
        return found

    def checks() -> str:
        for case in cases:
            what = f"{name}{case}"
            got = as_count(_call(transformer_parameters, *case), what)
            expected = _ch10_transformer_count(*case)
            if got == expected:
                continue
            for wrong, message in mistakes(*case):
                if got == wrong:
                    raise _Mistake(f"{what} returned {got:,}: {message}")
            raise _Mistake(f"{what} returned {got:,}, expected {expected:,}")
        return (
            "Your count is right: 63,082,496 parameters for the base model and 214,245,376 "
            "for the big one with a shared vocabulary of 37,000 tokens, as count_parameters "
            "finds."
        )

    return _run_checks(checks)


class _Ch10Model:
    """A stand-in for a model: scores for the next token, recording every prefix it is
    given. ``rule(prefix)`` names the best next token."""

    def __init__(self, rule: Callable[[list[int]], int], vocab_size: int = 12) -> None:
        self.rule, self.vocab_size, self.prefixes = rule, vocab_size, []

    def __call__(self, prefix: Any) -> np.ndarray:
        prefix = [int(token) for token in np.asarray(prefix).ravel()]
        self.prefixes.append(prefix)
        best = self.rule(prefix)
        ranks = (np.arange(self.vocab_size) * 7 + len(prefix)) % self.vocab_size
        logits = -1.0 - 0.1 * ranks  # (V,): the other tokens, all below the best
        logits[best] = 2.0
        return logits


def check_greedy_decode(greedy_decode: Callable[..., Any]) -> Feedback:
    """Check the learner's greedy decoding loop (chapter 10, exercise 4).

    Expected signature: ``greedy_decode(next_token_logits, bos_id: int, eos_id: int,
    max_new_tokens: int) -> list[int]``. ``next_token_logits(prefix)`` takes the list of ids
    written so far (``bos_id`` first) and returns the scores ``(V,)`` of the next token. The
    result starts with ``bos_id``, then adds the highest-scoring token again and again: it
    stops after adding ``eos_id`` (which is kept) or after ``max_new_tokens`` new tokens.

    Examples
    --------
    >>> def answer(next_token_logits, bos_id, eos_id, max_new_tokens):
    ...     tokens = [bos_id]
    ...     for _ in range(max_new_tokens):
    ...         tokens.append(int(np.argmax(next_token_logits(tokens))))
    ...         if tokens[-1] == eos_id:
    ...             break
    ...     return tokens
    >>> check_greedy_decode(answer).passed
    True
    """
    name = _name_of(greedy_decode, "greedy_decode")
    bos_id, eos_id = 1, 2
    answer = [7, 3, 9, 5, eos_id]

    def spell(prefix: list[int]) -> int:
        """Writes ``answer`` whatever the source, then <eos>."""
        return answer[min(len(prefix) - 1, len(answer) - 1)]

    def chain(prefix: list[int]) -> int:
        """Depends on the whole prefix and never writes <eos>."""
        return 3 + (sum(prefix) * 5 + len(prefix)) % 9

    def at_once(prefix: list[int]) -> int:
        return eos_id

    def special(prefix: list[int]) -> int:
        """Writes <bos> and <pad> (id 0) like any other token: only <eos> ends the output."""
        return (5, bos_id, 0, 4, bos_id, 6)[(len(prefix) - 1) % 6]

    def reference(rule: Callable[[list[int]], int], max_new_tokens: int) -> list[int]:
        tokens = [bos_id]
        for _ in range(max_new_tokens):
            tokens.append(rule(tokens))
            if tokens[-1] == eos_id:
                break
        return tokens

    def as_ids(result: Any, what: str) -> list[int]:
        if result is None:
            raise _Mistake(f"{what} returned None: did you forget the `return` statement?")
        try:
            values = np.asarray(result)
        except (TypeError, ValueError, RuntimeError) as error:
            raise _Mistake(f"{what} must return a list of token ids") from error
        if values.ndim == 2 and values.shape[0] == 1:
            values = values[0]
        if values.ndim != 1 or not np.issubdtype(values.dtype, np.integer):
            raise _Mistake(
                f"{what} must return a flat list of integer token ids, got {values.dtype} "
                f"values of shape {values.shape}"
            )
        return [int(value) for value in values]

    def check_one(rule: Callable[[list[int]], int], max_new_tokens: int, label: str) -> None:
        model = _Ch10Model(rule)
        what = f"{name}({label}, bos_id={bos_id}, eos_id={eos_id}, max_new_tokens={max_new_tokens})"
        got = as_ids(_call(greedy_decode, model, bos_id, eos_id, max_new_tokens), what)
        expected = reference(rule, max_new_tokens)
        for index, prefix in enumerate(model.prefixes):
            if index and len(prefix) == 1:
                raise _Mistake(
                    f"{what} called next_token_logits with {prefix}, one token: pass the "
                    "WHOLE prefix written so far, <bos> first. (Without a KV cache the decoder "
                    "recomputes every position; its last position gives the next token.)"
                )
            if not prefix or prefix[0] != bos_id:
                raise _Mistake(
                    f"{what} called next_token_logits with {prefix}: the prefix must start "
                    f"with <bos> (bos_id = {bos_id}), as the decoder's input did in training"
                )
        if got == expected:
            again = as_ids(
                _call(greedy_decode, _Ch10Model(rule), bos_id, eos_id, max_new_tokens), what
            )
            if again != got:
                raise _Mistake(f"{what} gave two different answers: greedy decoding never samples")
            return
        if got == expected[1:]:
            raise _Mistake(
                f"{what} returned {got} without <bos> at the start: return the whole "
                "sequence, bos_id first (as Transformer.greedy_decode does)"
            )
        if expected[-1] == eos_id and got == expected[:-1]:
            raise _Mistake(
                f"{what} returned {got}: it stops at <eos> but leaves it out. Keep <eos> at "
                "the end: it tells the reader the output is complete"
            )
        if len(got) > len(expected) and got[: len(expected)] == expected:
            if expected[-1] == eos_id:
                raise _Mistake(
                    f"{what} keeps writing after <eos> ({got}): stop as soon as the chosen "
                    "token is eos_id"
                )
            raise _Mistake(
                f"{what} returned {len(got) - 1} new tokens, more than max_new_tokens = "
                f"{max_new_tokens} (count the tokens added after <bos>)"
            )
        if len(got) < len(expected) and expected[: len(got)] == got:
            if got[-1] != eos_id and got[-1] in (bos_id, 0) and len(got) > 1:
                raise _Mistake(
                    f"{what} returned {got}: it stops at token {got[-1]}, which is not "
                    f"eos_id = {eos_id}. Only <eos> ends the output; any other token the "
                    "model picks is written like the rest"
                )
            raise _Mistake(
                f"{what} returned {got}, only {len(got) - 1} new tokens: it should add up to "
                f"max_new_tokens = {max_new_tokens} (stopping earlier only at <eos>)"
            )
        lowest = [bos_id]
        for _ in range(max_new_tokens):
            lowest.append(int(np.argmin(_Ch10Model(rule)(lowest))))
            if lowest[-1] == eos_id:
                break
        if got == lowest:
            raise _Mistake(f"{what} takes the LOWEST score each time: use np.argmax")
        raise _Mistake(f"{what} returned {got}, expected {expected}")

    def checks() -> str:
        check_one(spell, 10, "a model that writes 7 3 9 5 <eos>")
        check_one(spell, 3, "a model that writes 7 3 9 5 <eos>")
        check_one(chain, 6, "a model that never writes <eos>")
        check_one(at_once, 4, "a model that writes <eos> at once")
        check_one(special, 6, "a model that writes <bos> and <pad> as ordinary tokens")
        return (
            "Your greedy decoding is right: the whole prefix in, the arg max out, stop at "
            "<eos> (kept) or after max_new_tokens."
        )

    return _run_checks(checks)


# --- Chapter 11: Attention at scale ---


def _ch11_integer(result: Any, what: str) -> int:
    """``result`` as a Python int, if it is a whole number (int, NumPy integer or float)."""
    if result is None:
        raise _Mistake(f"{what} returned None: did you forget the `return` statement?")
    if isinstance(result, bool) or np.ndim(result) != 0:
        raise _Mistake(f"{what} must return one whole number, got {result!r}")
    try:
        value = float(result)
    except (TypeError, ValueError) as error:
        raise _Mistake(f"{what} must return a number, got {type(result).__name__}") from error
    if not np.isfinite(value) or value != int(value):
        raise _Mistake(f"{what} returned {result!r}; a sequence length is a whole number")
    return int(value)


def check_longest_sequence(longest_sequence: Callable[..., Any]) -> Feedback:
    """Check the longest sequence whose score matrix fits in memory (chapter 11, exercise 1).

    Expected signature: ``longest_sequence(memory_bytes: int, batch: int, heads: int,
    bytes_per_number: int) -> int``: the largest ``T`` for which a ``(B, H, T, T)`` score
    matrix, ``B · H · T² · bytes_per_number`` bytes, fits in ``memory_bytes``.

    Examples
    --------
    >>> import math
    >>> check_longest_sequence(lambda m, b, h, n: math.isqrt(m // (b * h * n))).passed
    True
    """
    import math  # isqrt: the exact integer square root

    name = _name_of(longest_sequence, "longest_sequence")
    cases = (
        (80 * 10**9, 8, 32, 2),  # an 80 GB GPU, batch 8, 32 heads, float16: exactly T = 12500
        (2**30, 1, 1, 4),  # 1 GiB, one float32 matrix: T = 16384
        (10**9, 4, 8, 4),
        (24 * 2**30, 2, 16, 2),
        (1000, 1, 1, 8),  # 125 float64 numbers: T = 11
    )

    def needed(t: int, batch: int, heads: int, size: int) -> int:
        return batch * heads * t * t * size

    def checks() -> str:
        for memory, batch, heads, size in cases:
            what = f"{name}({memory}, {batch}, {heads}, {size})"
            expected = math.isqrt(memory // (batch * heads * size))
            got = _ch11_integer(_call(longest_sequence, memory, batch, heads, size), what)
            if got == expected:
                continue
            hints = [
                (
                    math.isqrt(memory // (batch * heads)),
                    "you counted numbers, not bytes: each number takes bytes_per_number bytes",
                ),
                (
                    math.isqrt(memory // (heads * size)),
                    "every sequence of the batch has its own score matrix: multiply by batch",
                ),
                (
                    math.isqrt(memory // (batch * size)),
                    "every head has its own T × T matrix: multiply by heads",
                ),
                (
                    memory // (batch * heads * size),
                    "that is the number of scores that fit, T²; T is its square root",
                ),
                (
                    math.ceil(math.sqrt(memory / (batch * heads * size))),
                    "you rounded up, so the matrix no longer fits: round down (math.isqrt)",
                ),
            ]
            for wrong, explanation in hints:
                if got == wrong and wrong != expected:
                    raise _Mistake(f"{what} returned {got}, expected {expected}: {explanation}")
            if got > expected:
                raise _Mistake(
                    f"{what} returned {got}, but a (B, H, T, T) matrix with T = {got} needs "
                    f"{needed(got, batch, heads, size):,} bytes, more than {memory:,}"
                )
            raise _Mistake(
                f"{what} returned {got}, but T = {got + 1} still fits: it needs "
                f"{needed(got + 1, batch, heads, size):,} of the {memory:,} bytes"
            )
        return (
            "Your bound is right: T = ⌊√(M / (B · H · bytes))⌋. Doubling the memory buys only "
            "√2 ≈ 1.41 times the sequence length."
        )

    return _run_checks(checks)


def _ch11_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: bool = True):
    scores = q @ np.swapaxes(k, -1, -2)  # (..., T_q, T_k)
    if scale:
        scores = scores / np.sqrt(q.shape[-1])
    return softmax.softmax(scores, axis=-1) @ v  # (..., T_q, D_v)


def _ch11_cache_result(result: Any, what: str) -> tuple[Any, Any, Any]:
    if result is None:
        raise _Mistake(f"{what} returned None: did you forget the `return` statement?")
    if not isinstance(result, tuple | list) or len(result) != 3:
        raise _Mistake(
            f"{what} must return three things, (output, k_cache, v_cache): the new token's "
            "output and both caches with the new key and value appended"
        )
    return tuple(result)


def check_attend_with_cache(attend_with_cache: Callable[..., Any]) -> Feedback:
    """Check one decoding step with a key/value cache (chapter 11, exercise 2).

    Expected signature: ``attend_with_cache(q_new, k_new, v_new, k_cache, v_cache) ->
    (output, k_cache, v_cache)``. ``q_new`` and ``k_new``: ``(B, 1, D_k)``, ``v_new``:
    ``(B, 1, D_v)``: the projections of the newest token; ``k_cache``: ``(B, t, D_k)`` and
    ``v_cache``: ``(B, t, D_v)``: those of the ``t`` tokens before it (``t`` may be 0). The
    step appends the new key and value at the end of the caches and lets the new query
    attend to all ``t + 1`` keys (itself included): ``output``: ``(B, 1, D_v)``, caches
    ``(B, t + 1, ·)``.

    Examples
    --------
    >>> from selfattn_lib.softmax import softmax
    >>> def step(q, k, v, k_cache, v_cache):
    ...     k_cache = np.concatenate([k_cache, k], axis=1)
    ...     v_cache = np.concatenate([v_cache, v], axis=1)
    ...     weights = softmax(q @ np.swapaxes(k_cache, 1, 2) / np.sqrt(q.shape[-1]), axis=-1)
    ...     return weights @ v_cache, k_cache, v_cache
    >>> check_attend_with_cache(step).passed
    True
    """
    name = _name_of(attend_with_cache, "attend_with_cache")
    rng = np.random.default_rng(11)
    batch, n_tokens, d_k, d_v = 2, 5, 4, 3
    q = rng.normal(size=(batch, n_tokens, d_k))
    k = rng.normal(size=(batch, n_tokens, d_k))
    v = rng.normal(size=(batch, n_tokens, d_v))

    def step(t: int) -> None:
        what = f"{name}(step {t}: a cache of {t} tokens)"
        new = (q[:, t : t + 1], k[:, t : t + 1], v[:, t : t + 1])
        old_k, old_v = k[:, :t], v[:, :t]
        result = _call_quietly(
            attend_with_cache, *(a.copy() for a in new), old_k.copy(), old_v.copy()
        )
        output, k_cache, v_cache = _ch11_cache_result(result, what)
        expected = _ch11_attention(q[:, t : t + 1], k[:, : t + 1], v[:, : t + 1])  # (B, 1, D_v)
        if np.shape(output) == (batch, d_v):
            raise _Mistake(
                f"{what} returned an output of shape {(batch, d_v)}: keep the query axis of "
                f"size 1, shape (B, 1, D_v) = {expected.shape}"
            )
        got = _as_result_array(output, expected, f"{what}, the output,")
        if not np.allclose(got, expected, atol=1e-10):
            if t > 0 and np.allclose(got, _ch11_attention(new[0], old_k, old_v), atol=1e-10):
                raise _Mistake(
                    f"{what}: the new query attended only to the {t} cached keys. Append the "
                    "new key and value first: a token may attend to itself (the diagonal of "
                    "the causal mask)"
                )
            unscaled = _ch11_attention(q[:, t : t + 1], k[:, : t + 1], v[:, : t + 1], False)
            if np.allclose(got, unscaled, atol=1e-10):
                raise _Mistake(f"{what}: the scores are not divided by √D_k")
            _assert_close(got, expected, f"{what}, the output,", atol=1e-10)
        for cache, full, label in ((k_cache, k, "k_cache"), (v_cache, v, "v_cache")):
            expected_cache = full[:, : t + 1]
            shape = np.shape(cache) if cache is not None else None
            if shape == full[:, :t].shape:
                raise _Mistake(
                    f"{what} returned {label} of shape {shape}, the old cache: return it with "
                    f"the new entry appended, shape {expected_cache.shape}"
                )
            if shape is not None and shape != expected_cache.shape:
                raise _Mistake(
                    f"{what} returned {label} of shape {shape}, expected "
                    f"{expected_cache.shape}: append along the time axis "
                    "(np.concatenate([cache, new], axis=1))"
                )
            got_cache = _as_result_array(cache, expected_cache, f"{what}, {label},")
            if t > 0 and np.allclose(got_cache, np.roll(expected_cache, 1, axis=1)):
                raise _Mistake(
                    f"{what} put the new entry at the FRONT of {label}. The output does not "
                    "notice (attention ignores the order of keys), but position t of the cache "
                    "must hold token t, e.g. for the mask of a padded batch: append at the end"
                )
            _assert_close(got_cache, expected_cache, f"{what}, {label},", atol=1e-12)

    def checks() -> str:
        step(2)  # a cache of two tokens first: the clearest case
        for t in range(n_tokens):  # then a whole generation, from an empty cache
            step(t)
        return (
            "Your cached step is right: token by token it gives exactly the rows of causal "
            "attention over the whole sequence, and the caches grow by one position per step."
        )

    return _run_checks(checks)


def _ch11_state(scores: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, ...]:
    """The partial state (m, ℓ, acc) of online softmax for one set of keys."""
    m = scores.max(axis=-1)  # (T_q,)
    exponentials = np.exp(scores - m[:, None])  # (T_q, n_keys)
    return m, exponentials.sum(axis=-1), exponentials @ values


def check_merge_softmax_states(merge_states: Callable[..., Any]) -> Feedback:
    """Check the merge of two partial online-softmax states (chapter 11, exercise 3).

    Expected signature: ``merge_states(state_a, state_b) -> (m, l, acc)``. A state
    ``(m, l, acc)`` summarises attention over one set of keys: for each query the largest
    score ``m`` ``(T_q,)``, ``l = Σ_j exp(s_j − m)`` ``(T_q,)`` and
    ``acc = Σ_j exp(s_j − m) v_j`` ``(T_q, D_v)``. The merge is the state of both key sets
    together. Any correct representation is accepted: ``(m, l, acc)`` and
    ``(m', l · e^(m − m'), acc · e^(m − m'))`` describe the same keys, so the checker compares
    ``m + log l`` (the log of the softmax denominator) and ``acc / l`` (the output).

    Examples
    --------
    >>> def merge(a, b):
    ...     m = np.maximum(a[0], b[0])
    ...     fa, fb = np.exp(a[0] - m), np.exp(b[0] - m)
    ...     return m, a[1] * fa + b[1] * fb, a[2] * fa[:, None] + b[2] * fb[:, None]
    >>> check_merge_softmax_states(merge).passed
    True
    """
    name = _name_of(merge_states, "merge_states")
    rng = np.random.default_rng(1)
    t_q, d_v = 3, 2
    values_a, values_b = rng.normal(size=(4, d_v)), rng.normal(size=(5, d_v))
    scores_a, scores_b = rng.normal(size=(t_q, 4)), rng.normal(size=(t_q, 5))
    cases = [
        ("two blocks of keys", scores_a, scores_b, "normal"),
        ("the second block has larger scores", scores_a, scores_b + 3.0, "normal"),
        ("scores around 1000 in the first block", scores_a * 5 + 1000.0, scores_b, "large"),
        ("the empty starting state and a first block", None, scores_b, "empty"),
    ]

    def empty_state() -> tuple[np.ndarray, ...]:
        return np.full(t_q, -np.inf), np.zeros(t_q), np.zeros((t_q, d_v))

    def check_one(label: str, sa: np.ndarray | None, sb: np.ndarray, kind: str) -> None:
        what = f"{name}(state_a, state_b) for {label}"
        state_a = empty_state() if sa is None else _ch11_state(sa, values_a)
        state_b = _ch11_state(sb, values_b)
        all_scores = sb if sa is None else np.concatenate([sa, sb], axis=-1)
        all_values = values_b if sa is None else np.concatenate([values_a, values_b])
        true_m, true_l, true_acc = _ch11_state(all_scores, all_values)
        result = _call_quietly(
            merge_states, tuple(a.copy() for a in state_a), tuple(a.copy() for a in state_b)
        )
        if result is None:
            raise _Mistake(f"{what} returned None: did you forget the `return` statement?")
        if not isinstance(result, tuple | list) or len(result) != 3:
            raise _Mistake(f"{what} must return a state (m, l, acc), three arrays")
        try:
            m, l_sum, acc = (np.asarray(part, dtype=np.float64) for part in result)
        except (TypeError, ValueError) as error:
            raise _Mistake(f"{what} must return three arrays of numbers (m, l, acc)") from error
        if m.shape != (t_q,) or l_sum.shape != (t_q,) or acc.shape != (t_q, d_v):
            raise _Mistake(
                f"{what} returned shapes {m.shape}, {l_sum.shape}, {acc.shape}; a state has "
                f"m and l of shape (T_q,) = {(t_q,)} and acc of shape (T_q, D_v) = {(t_q, d_v)}"
            )
        if not (np.isfinite(m).all() and np.isfinite(l_sum).all() and np.isfinite(acc).all()):
            if kind == "empty":
                raise _Mistake(
                    f"{what} is not finite. The empty state has m = −inf, l = 0, acc = 0; with "
                    "the new maximum m = max(m_a, m_b) its factor exp(m_a − m) = exp(−inf) is "
                    "0, so it adds nothing"
                )
            raise _Mistake(
                f"{what} overflowed (inf or NaN). Rescale both states to the LARGER maximum, "
                "m = max(m_a, m_b): the factors exp(m_a − m) and exp(m_b − m) are then at most 1"
            )
        if (l_sum <= 0).any():
            raise _Mistake(f"{what} returned l ≤ 0; l is a sum of exponentials, always positive")
        output, log_total = acc / l_sum[:, None], m + np.log(l_sum)
        true_output, true_log_total = true_acc / true_l[:, None], true_m + np.log(true_l)
        if np.allclose(output, true_output, atol=1e-9) and np.allclose(
            log_total, true_log_total, atol=1e-9
        ):
            return
        log_total_right = np.allclose(log_total, true_log_total, atol=1e-9)
        if log_total_right and np.allclose(acc, true_output, atol=1e-9):
            raise _Mistake(
                f"{what} returned acc already divided by l. Keep acc unnormalised, "
                "Σ exp(s_j − m) v_j; divide by l only once, at the very end"
            )
        if log_total_right:
            raise _Mistake(
                f"{what}: l is right but acc is not. Rescale acc by the same factors "
                "exp(m_a − m) and exp(m_b − m) as l"
            )
        m_new = np.maximum(state_a[0], state_b[0])
        if kind != "empty" and np.allclose(l_sum, state_a[1] + state_b[1]):
            raise _Mistake(
                f"{what} added l_a + l_b as they are. They were measured from different "
                "maxima: rescale each by exp(m_old − m) with m = max(m_a, m_b) before adding"
            )
        upside_down = state_a[1] * np.exp(m_new - state_a[0]) + state_b[1] * np.exp(
            m_new - state_b[0]
        )
        if kind != "empty" and np.allclose(l_sum, upside_down):
            raise _Mistake(
                f"{what}: the rescaling factor is upside down. It is exp(m_old − m_new) ≤ 1: "
                "the old exponentials were measured from a smaller maximum and must shrink"
            )
        raise _Mistake(
            f"{what} describes different keys: m + log l is {np.round(log_total, 6)}, expected "
            f"{np.round(true_log_total, 6)} (the log of Σ exp(s_j) over both blocks)"
        )

    def checks() -> str:
        for case in cases:
            check_one(*case)
        return (
            "Your merge is right: rescale both states to the larger maximum and add. It is "
            "associative, so blocks can be merged in any grouping — on a GPU, in parallel."
        )

    return _run_checks(checks)


def check_causal_blocked_attention(causal_blocked_attention: Callable[..., Any]) -> Feedback:
    """Check causal attention computed block by block with online softmax (ch. 11, ex. 4).

    Expected signature: ``causal_blocked_attention(q, k, v, block_size) -> output`` for one
    sequence: ``q``, ``k``: ``(T, D_k)``, ``v``: ``(T, D_v)`` → ``(T, D_v)``, equal to
    ``softmax(Q Kᵀ / √D_k + causal mask) V`` (query ``i`` attends keys ``j ≤ i``). ``T`` need
    not be a multiple of ``block_size``.

    Examples
    --------
    >>> from selfattn_lib.softmax import softmax
    >>> def direct(q, k, v, block_size):
    ...     scores = q @ k.T / np.sqrt(q.shape[-1])
    ...     scores = np.where(np.tril(np.ones(scores.shape, dtype=bool)), scores, -np.inf)
    ...     return softmax(scores, axis=-1) @ v
    >>> check_causal_blocked_attention(direct).passed
    True
    """
    name = _name_of(causal_blocked_attention, "causal_blocked_attention")
    rng = np.random.default_rng(4)
    cases = ((7, 3), (8, 4), (5, 1), (6, 8), (9, 2))

    def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, diagonal: int = 0) -> np.ndarray:
        scores = q @ k.T / np.sqrt(q.shape[-1])  # (T, T)
        allowed = np.tril(np.ones(scores.shape, dtype=bool), k=diagonal)
        return softmax.softmax(np.where(allowed, scores, -np.inf), axis=-1) @ v

    def checks() -> str:
        for n_tokens, block_size in cases:
            q = rng.normal(size=(n_tokens, 4)) * 3.0  # large scores: the running max matters
            k = rng.normal(size=(n_tokens, 4)) * 3.0
            v = rng.normal(size=(n_tokens, 3))
            what = f"{name}(q, k, v, block_size={block_size}) with T = {n_tokens}"
            expected = reference(q, k, v)
            result = _call_quietly(
                causal_blocked_attention, q.copy(), k.copy(), v.copy(), block_size
            )
            _explain_non_finite(
                result,
                expected,
                what,
                "A query whose keys in a block are all masked has a block maximum of −inf, and "
                "exp(−inf − (−inf)) is NaN: skip blocks that lie entirely in the future, or "
                "compute the factors only where the maximum is finite",
            )
            got = _as_result_array(result, expected, what)
            if np.allclose(got, expected, atol=1e-9):
                continue
            if np.allclose(got, _ch11_attention(q, k, v), atol=1e-9):
                raise _Mistake(
                    f"{what} equals attention WITHOUT the mask: hide every key j > i from "
                    "query i (−inf before the exponential, or skip it)"
                )
            strict = reference(q, k, v, diagonal=-1)
            if np.allclose(got[1:], strict[1:], atol=1e-9):
                raise _Mistake(
                    f"{what} hides the diagonal too: query i may attend key i itself (j ≤ i)"
                )
            if np.allclose(got[::-1], reference(q[::-1], k[::-1], v[::-1]), atol=1e-9):
                raise _Mistake(f"{what} lets each query see the keys AFTER it: the mask is j ≤ i")
            _assert_close(got, expected, what, atol=1e-9)
        return (
            "Your causal blocked attention is right, block size by block size. Skipping the "
            "tiles above the diagonal saves almost half of the work."
        )

    return _run_checks(checks)
