"""Checkers for the exercises of chapter 1, dot-product similarity."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from selfattn_lib import similarity
from selfattn_lib.exercises import _kit as kit

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
    # Entries with many digits, so that a rounded result differs from the right one.
    digits_a = np.array([[0.123, -1.718, 2.345], [3.142, 0.414, -0.577]])  # (2, 3)
    digits_b = np.array([[1.732, 0.271, -2.236], [-0.693, 1.618, 0.866]])  # (2, 3)
    return [(a, b), (stack_a, stack_b), (batch_a, batch_b), (digits_a, digits_b)]


def _ch1_call_pairwise(
    function: Callable[..., Any], name: str, a: np.ndarray, b: np.ndarray, *, cosine: bool = False
):
    """Call ``function(a, b)`` on copies and explain the shapes of the usual mix-ups (and, for
    a ``cosine``, a ValueError raised where no vector is zero)."""
    try:
        result = kit.call_quietly(function, a.copy(), b.copy())
    except kit.Mistake as mistake:
        error = str(mistake)
        if a.ndim > 1 and ("aligned" in error or "matmul" in error):
            hint = (
                "`a @ b` and `np.dot(a, b)` multiply matrices; for stacks of vectors, multiply "
                "element-wise and sum over the last axis: (a * b).sum(axis=-1)"
            )
        elif "out of bounds for array of dimension" in error:
            hint = (
                "A fixed axis number is the last axis for one number of axes only; the "
                "entries of each vector lie along the LAST axis whatever the shape: axis=-1"
            )
        elif "subscripts" in error:
            hint = (
                "Your np.einsum subscripts fix the number of axes; an ellipsis stands for "
                "any number of leading axes, as in '...d,...d->...'"
            )
        elif "1- or 2-d" in error:
            hint = (
                "The diagonal of a @ b.T works for 2-D arrays only (np.diag takes 1-D and 2-D "
                "arrays), and computes every pair to keep the matching ones; multiply "
                "element-wise and sum over the last axis instead"
            )
        elif (
            cosine
            and "raised ValueError" in error
            and not any(
                word in error.split(" (called with")[0]
                for word in ("broadcast", "shapes", "dimension")
            )
        ):  # a ValueError of the learner's own, and these cases have no zero vector
            hint = (
                "None of these vectors is the zero vector (an entry equal to 0 is fine): "
                "raise only when a whole vector has length 0"
            )
        else:
            raise
        raise kit.Mistake(f"{error}. {hint}") from None
    what = f"{name}(a, b)"
    shape = np.shape(result) if result is not None else None
    n_pairs = int(np.prod(a.shape[:-1]))
    if shape == a.shape[:-1] + (1,):
        raise kit.Mistake(
            f"{what} returned shape {shape}, expected {a.shape[:-1]}: keepdims=True kept the "
            "summed axis. Each pair gives one number: leave keepdims out"
        )
    if shape == a.shape:
        raise kit.Mistake(
            f"{what} returned shape {shape}, the shape of the inputs: these look like the "
            "element-wise products a * b. Add them up over the last axis: .sum(axis=-1)"
        )
    if a.ndim > 1 and shape == ():
        raise kit.Mistake(
            f"{what} returned a single number for {n_pairs} pairs of vectors of shape "
            f"{a.shape}: you summed over every axis. Sum over the last axis only (axis=-1)"
        )
    if a.ndim == 2 and shape == (a.shape[0], b.shape[0]):
        raise kit.Mistake(
            f"{what} returned shape {shape}: every vector of a against every vector of b "
            "(that is a @ b.T, a similarity matrix). Here a[i] is paired with b[i] only: "
            "multiply element-wise and sum over the last axis"
        )
    if a.ndim == 2 and shape == a.shape[-1:]:
        raise kit.Mistake(
            f"{what} returned shape {shape}: you added up over the vectors (axis 0) "
            "instead of over the components of each vector (the last axis)"
        )
    return result


def check_dot_product(dot_product: Callable[..., Any]) -> kit.Feedback:
    """Check ``dot_product(a, b)``: the dot products of two equally shaped stacks of vectors.

    Expected signature: ``dot_product(a: np.ndarray, b: np.ndarray) -> np.ndarray | float``.

    Shapes
    ------
    ``a``, ``b``: ``(..., D)``, identical → ``(...)``: entry ``[...]`` is the dot product of
    ``a[..., :]`` and ``b[..., :]``; two vectors of shape ``(D,)`` give one number.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_dot_product(lambda a, b: None)
    ✘ Not yet. dot_product(a, b) returned None: did you forget the `return` statement?
    """

    name = kit.name_of(dot_product, "dot_product")

    def checks() -> str:
        for a, b in _ch1_stack_cases():
            result = _ch1_call_pairwise(dot_product, name, a, b)
            expected = np.asarray(similarity.dot_product(a, b))
            got = kit.as_result_array(result, expected, f"{name}(a, b)")
            what = f"{name}(a, b) for shape {a.shape}"
            products = a * b  # (..., D)
            mistakes = [
                (
                    products.mean(axis=-1),
                    "you averaged the products (mean); the dot product adds them up (sum)",
                ),
                (
                    np.sqrt(np.abs(products.sum(axis=-1))),
                    "you took a square root: that turns a·a into a length, but the dot product "
                    "of two vectors is the plain sum of the products",
                ),
            ]
            if not kit.match_known_mistakes(got, expected, mistakes, what, joiner=": "):
                kit.require_unrounded(got, expected, what)
                kit.assert_close(got, expected, what)
        # Four times as many pairs, each with twice as many entries: a loop over the pairs or
        # over the entries runs its body more often.
        stack_a, stack_b = _ch1_stack_cases()[1]
        larger = (np.tile(stack_a, (4, 2)), np.tile(stack_b, (4, 2)))  # (16, 6) each
        kit.require_no_python_loop(dot_product, (stack_a, stack_b), larger, name)
        kit.require_own_code(
            dot_product,
            (stack_a, stack_b),
            ("selfattn_lib.similarity.dot_product",),
            name,
            kit.WRITE_IT_YOURSELF,
        )
        return f"Your {name} handles single vectors and stacks of vectors of any shape."

    return kit.run_checks(checks)


def _ch1_cosine_mistakes(a: np.ndarray, b: np.ndarray) -> list[tuple[np.ndarray, str]]:
    """Results of the usual wrong cosine formulas, each with what went wrong."""
    dot = (a * b).sum(axis=-1)
    length_a, length_b = np.linalg.norm(a, axis=-1), np.linalg.norm(b, axis=-1)
    l1_a, l1_b = np.abs(a).sum(axis=-1), np.abs(b).sum(axis=-1)
    cosine = dot / (length_a * length_b)
    return [
        (dot, "this is the plain dot product a·b: divide it by the two lengths |a| |b|"),
        (
            1 - cosine,
            "you returned 1 - cos θ, the cosine DISTANCE (what scipy's "
            "`distance.cosine` gives); the similarity is cos θ itself",
        ),
        (
            np.arccos(np.clip(cosine, -1.0, 1.0)),
            "you returned the angle θ (np.arccos); return its cosine, without arccos",
        ),
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
    if not kit.match_known_mistakes(got, expected, mistakes, f"{what} is off"):
        kit.require_unrounded(got, expected, what)
        kit.assert_close(got, expected, what)


def check_cosine_similarity(cosine_similarity: Callable[..., Any]) -> kit.Feedback:
    """Check ``cosine_similarity(a, b)``: the cosine of the angle between paired vectors.

    Expected signature: ``cosine_similarity(a: np.ndarray, b: np.ndarray) -> np.ndarray | float``,
    raising ``ValueError`` when a vector is zero (it has no direction, so no angle).

    Shapes
    ------
    ``a``, ``b``: ``(..., D)``, identical → ``(...)``: entry ``[...]`` is the cosine of
    ``a[..., :]`` and ``b[..., :]``; two vectors of shape ``(D,)`` give one number.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_cosine_similarity(lambda a, b: None)
    ✘ Not yet. cosine_similarity(a, b) returned None: did you forget the `return` statement?
    """
    import warnings

    name = kit.name_of(cosine_similarity, "cosine_similarity")

    def checks() -> str:
        for a, b in _ch1_stack_cases():
            result = _ch1_call_pairwise(cosine_similarity, name, a, b, cosine=True)
            expected = np.asarray(similarity.cosine_similarity(a, b))
            got = kit.as_result_array(result, expected, f"{name}(a, b)")
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
                    raise kit.NotAttempted("Replace `raise NotImplementedError`.") from error
                except Exception as error:  # noqa: BLE001 - the learner's error is feedback
                    raise kit.Mistake(
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
            raise kit.Mistake(
                f"{which}, {name} returned {value}{cause}. A zero vector has no direction, so "
                "the cosine is undefined: raise a ValueError instead of returning a number."
                + per_vector
            )
        kit.require_own_code(
            cosine_similarity,
            (stack, stack),
            ("selfattn_lib.similarity.cosine_similarity",),
            name,
            kit.WRITE_IT_YOURSELF,
        )
        return f"Your {name} handles single vectors and stacks and refuses zero vectors."

    return kit.run_checks(checks)


def check_cosine_similarity_matrix(cosine_similarity_matrix: Callable[..., Any]) -> kit.Feedback:
    """Check ``cosine_similarity_matrix(x, y)``: the cosine of every vector of x with every
    vector of y, without loops.

    Expected signature: ``cosine_similarity_matrix(x: np.ndarray, y: np.ndarray) -> np.ndarray``.

    Shapes
    ------
    ``x``: ``(T_q, D)``, ``y``: ``(T_k, D)`` → ``(T_q, T_k)``; entry ``[i, j]`` is the cosine
    of ``x[i]`` and ``y[j]``.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_cosine_similarity_matrix(lambda x, y: None)
    ✘ Not yet. cosine_similarity_matrix(x, y) returned None: did you forget the `return`
    statement?
    """

    name = kit.name_of(cosine_similarity_matrix, "cosine_similarity_matrix")

    def unit_rows(vectors: np.ndarray, axis: int = -1) -> np.ndarray:
        return vectors / np.linalg.norm(vectors, axis=axis, keepdims=True)

    def call(x: np.ndarray, y: np.ndarray) -> Any:
        try:
            return kit.call_quietly(cosine_similarity_matrix, x.copy(), y.copy())
        except kit.Mistake as mistake:
            if "broadcast" in str(mistake):
                hint = (
                    "to divide every row of a (T, D) matrix by its own length, the lengths "
                    "need shape (T, 1): np.linalg.norm(x, axis=-1, keepdims=True)"
                )
            elif "aligned" in str(mistake) or "matmul" in str(mistake):
                hint = "x @ y.T multiplies (T_q, D) by (D, T_k) and gives (T_q, T_k)"
            else:
                raise
            raise kit.Mistake(f"{mistake}. Hint: {hint}") from None

    def checks() -> str:
        # T_q = T_k = 3 first (so x.T @ y runs and shows its (D, D) shape), then T_q != T_k,
        # then a sequence against itself.
        for x, y in ((_CH1_X, _CH1_Y[:3]), (_CH1_X, _CH1_Y), (_CH1_X, _CH1_X)):
            what = f"{name}(x, y)"
            result = call(x, y)
            (t_q, d), t_k = x.shape, y.shape[0]
            shape = np.shape(result) if result is not None else None
            if shape == (d, d) and (d, d) != (t_q, t_k):
                raise kit.Mistake(
                    f"{what} returned shape {shape}, which is (D, D): x.T @ y adds up over "
                    "the tokens, comparing features with features. Compare vectors with "
                    f"vectors: x @ y.T has shape (T_q, T_k) = {(t_q, t_k)}"
                )
            if shape == (t_k, t_q) and t_k != t_q:
                raise kit.Mistake(
                    f"{what} returned shape {shape}, which is (T_k, T_q): the result is "
                    "transposed. Row i must belong to x[i]: use x @ y.T, not y @ x.T"
                )
            if shape == (t_q + t_k, t_q + t_k):
                raise kit.Mistake(
                    f"{what} returned shape {shape}, which is (T_q + T_k, T_q + T_k): "
                    "np.corrcoef(x, y) stacks the rows of x and y and correlates all of them, "
                    "each row minus its mean. The cosine compares the vectors as they are: "
                    f"shape (T_q, T_k) = {(t_q, t_k)}"
                )
            expected = similarity.similarity_matrix(x, y, measure="cosine")
            values = kit.values_like(result, expected)
            if values is not None and np.isnan(values).any():
                with np.errstate(all="ignore"):
                    centred = (
                        unit_rows(x - x.mean(axis=-1, keepdims=True))
                        @ unit_rows(y - y.mean(axis=-1, keepdims=True)).T
                    )  # (T_q, T_k), NaN where a row is constant
                if np.allclose(values, centred, rtol=kit.RTOL, atol=kit.ATOL, equal_nan=True):
                    raise kit.Mistake(
                        f"{what} returned NaN where a vector has equal entries, such as "
                        "[1, 1, 1, 1]: you subtracted each row's mean first (a correlation), "
                        "which leaves such a row all zeros. The cosine uses the vectors as "
                        "they are"
                    )
            got = kit.as_result_array(result, expected, what)
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
                (
                    1 - expected,
                    "these are 1 - cos θ, cosine DISTANCES (what scipy's `cdist(x, y, "
                    '"cosine")` gives); the similarity is cos θ itself',
                ),
                (
                    np.arccos(np.clip(expected, -1.0, 1.0)),
                    "these are the angles θ (np.arccos); return their cosines, without arccos",
                ),
            ]
            if t_q == t_k:  # otherwise dividing (T_q, T_k) by (T_q,) fails to broadcast
                mistakes.append(
                    (
                        unit_rows(x) @ y.T / np.linalg.norm(y, axis=-1, keepdims=True),
                        "you divided row i by the length of y[i]; the lengths of y belong to "
                        "the COLUMNS: scale the rows of y to length 1 before the product "
                        "(or divide by np.linalg.norm(y, axis=-1), shape (T_k,))",
                    )
                )
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
        # Four times as many vectors, each with twice as many entries: a loop over the
        # vectors or over the entries runs its body more often.
        larger = (np.tile(_CH1_X, (4, 2)), np.tile(_CH1_Y, (4, 2)))  # (12, 2D), (20, 2D)
        kit.require_no_python_loop(cosine_similarity_matrix, (_CH1_X, _CH1_Y), larger, name)
        kit.require_own_code(
            cosine_similarity_matrix,
            (_CH1_X, _CH1_Y),
            (
                "selfattn_lib.similarity.similarity_matrix",
                "selfattn_lib.similarity.cosine_similarity",
            ),
            name,
            kit.WRITE_IT_YOURSELF,
        )
        return f"Your {name} matches the loops, and the checker saw no loop in it."

    return kit.run_checks(checks)


#: The words check_nearest_neighbour asks about: four without ties, then every word whose
#: vector has a parallel or identical twin (cosine 1: the word itself may then come anywhere
#: among the largest cosines, so "the second largest" is not the nearest other word).
_CH1_NEAREST_WORDS = ("dog", "bike", "car", "animal", "the", "was", "a", "because", "in", "on")


def check_nearest_neighbour(nearest_neighbour: Callable[..., Any]) -> kit.Feedback:
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

    Examples
    --------
    The answer must be a word, so a function that forgets its ``return`` is told what to return:

    >>> check_nearest_neighbour(lambda word, words, vectors: None)
    ✘ Not yet. nearest_neighbour('dog', words, vectors) must return a word (a str), got NoneType
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

    name = kit.name_of(nearest_neighbour, "nearest_neighbour")

    def checks() -> str:
        for word in _CH1_NEAREST_WORDS:
            index = words.index(word)
            best = cosines[index].max()
            tied = [words[j] for j in np.flatnonzero(cosines[index] >= best - 1e-9)]
            expected = tied[0]
            what = f"{name}({word!r}, words, vectors)"
            given_words, given_vectors = list(words), vectors.copy()
            result = kit.call(nearest_neighbour, word, given_words, given_vectors)
            if isinstance(result, (int, np.integer)) and not isinstance(result, bool):
                raise kit.Mistake(
                    f"{what} returned the number {result}: return the word itself, a str "
                    "(words[index])"
                )
            if isinstance(result, (float, np.floating)):
                raise kit.Mistake(
                    f"{what} returned the number {float(result):.4g}, a similarity: return the "
                    "word whose similarity is largest, a str (words[index])"
                )
            if not isinstance(result, str):
                raise kit.Mistake(f"{what} must return a word (a str), got {type(result).__name__}")
            if result in tied:  # any of several exactly tied words is right
                if given_words != words:
                    raise kit.Mistake(
                        f"{what} returned {result!r}, which is right, but it changed the list "
                        "`words` it was given (for example with `words.remove(word)`): in the "
                        "notebook that would change `vocabulary` for every later cell. Leave "
                        "`words` as it is and set the word's own similarity to -np.inf instead"
                    )
                if not np.array_equal(given_vectors, vectors):
                    raise kit.Mistake(
                        f"{what} returned {result!r}, which is right, but it changed the array "
                        "`vectors` it was given (for example with `vectors /= ...`): compute "
                        "the unit vectors into a new array, so that the caller's vectors stay "
                        "as they were"
                    )
                continue
            if result == word:
                twins = ""
                if best >= 1 - 1e-9:
                    twins = (
                        f". Here {', '.join(map(repr, tied))} point the same way as {word!r} "
                        "(cosine 1): among equal cosines a sort may put the word itself "
                        "anywhere, so the second largest does not leave it out"
                    )
                raise kit.Mistake(
                    f"{what} returned {word!r} itself: every vector has cosine similarity 1 "
                    "with itself. Leave the word out before taking the maximum (for example, "
                    "set its own similarity to -np.inf)" + twins
                )
            if result not in words:
                raise kit.Mistake(f"{what} returned {result!r}, which is not one of words")
            others = [other for other in words if other != word]
            if result == others[int(np.argmax(cosines[index]))]:
                raise kit.Mistake(
                    f"{what} returned {result!r}, the word one place after the right one: "
                    "did you remove the word from `words` but keep its row in `vectors`? "
                    "Then the positions no longer match; set its similarity to -np.inf instead"
                )
            if best >= 1 - 1e-9:
                apart = np.where(cosines[index] < 1 - 1e-9, cosines[index], -np.inf)
                if result == words[int(np.argmax(apart))]:
                    raise kit.Mistake(
                        f"{what} returned {result!r}, but {expected!r} points the same way as "
                        f"{word!r} (cosine 1): you left out every word with cosine 1, but only "
                        "the word itself must go"
                    )
            if result == words[int(np.argmax(dots[index]))]:
                raise kit.Mistake(
                    f"{what} returned {result!r}, the nearest by dot product, which favours "
                    f"long vectors; rank by cosine similarity (expected {expected!r})"
                )
            if result == words[int(np.argmin(distances[index]))]:
                raise kit.Mistake(
                    f"{what} returned {result!r}, the nearest by Euclidean distance; rank by "
                    f"cosine similarity (expected {expected!r})"
                )
            finite = np.where(np.isfinite(cosines[index]), cosines[index], np.inf)
            if result == words[int(np.argmin(finite))]:
                raise kit.Mistake(
                    f"{what} returned {result!r}, the least similar word: take the largest "
                    "cosine (argmax), not the smallest"
                )
            got_cosine = cosines[index, words.index(result)]
            raise kit.Mistake(
                f"{what} returned {result!r} (cosine {got_cosine:.3f}), but {expected!r} is "
                f"more similar (cosine {cosines[index].max():.3f})"
            )
        return f"Your {name} finds the most similar other word by cosine."

    return kit.run_checks(checks)
