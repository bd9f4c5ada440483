"""Tests of the checkers of chapter 1 (selfattn_lib.exercises.ch01_similarity): each names
the mistake in typical wrong answers and accepts the usual correct alternatives. What every
checker promises is tested once, over REFERENCES, in test_exercises_registry.py."""

import numpy as np
import pytest

from selfattn_lib import exercises, similarity


def ch1_dot_product(a, b):
    return (a * b).sum(axis=-1)


def ch1_cosine_similarity(a, b):
    lengths = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    if np.any(lengths == 0):
        raise ValueError("cosine similarity is undefined for a zero vector")
    return (a * b).sum(axis=-1) / lengths


def ch1_unit_rows(x, axis=-1):
    return x / np.linalg.norm(x, axis=axis, keepdims=True)


def ch1_cosine_similarity_matrix(x, y):
    return ch1_unit_rows(x) @ ch1_unit_rows(y).T


def ch1_cosines_without_self(word, words, vectors):
    similarities = ch1_unit_rows(vectors) @ ch1_unit_rows(vectors)[words.index(word)]
    similarities[words.index(word)] = -np.inf
    return similarities


def ch1_nearest_neighbour(word, words, vectors):
    return words[int(np.argmax(ch1_cosines_without_self(word, words, vectors)))]


def ch1_stub(*args):
    raise NotImplementedError


CH1_CHECKERS = {
    "check_dot_product": ch1_dot_product,
    "check_cosine_similarity": ch1_cosine_similarity,
    "check_cosine_similarity_matrix": ch1_cosine_similarity_matrix,
    "check_nearest_neighbour": ch1_nearest_neighbour,
}


CH1_DEFAULT_NAMES = {
    "check_dot_product": "dot_product",
    "check_cosine_similarity": "cosine_similarity",
    "check_cosine_similarity_matrix": "cosine_similarity_matrix",
    "check_nearest_neighbour": "nearest_neighbour",
}


def assert_ch1_mistake(feedback, *fragments):
    assert feedback.attempted and not feedback.passed
    for fragment in fragments:
        assert fragment in feedback.message, feedback.message


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda a, b: a * b, ["returned shape (3,), the shape of the inputs", "sum(axis=-1)"]),
        (lambda a, b: np.sum(a * b), ["a single number for 4 pairs", "summed over every axis"]),
        (lambda a, b: a @ b, ["raised ValueError", "`a @ b` and `np.dot(a, b)` multiply"]),
        (lambda a, b: np.dot(a, b), ["not aligned", "(a * b).sum(axis=-1)"]),
        (lambda a, b: a @ b.T, ["returned shape (4, 4)", "a[i] is paired with b[i] only"]),
        (lambda a, b: sum(x * y for x, y in zip(a, b, strict=True)), ["over the vectors (axis 0)"]),
        (lambda a, b: None, ["forget the `return`"]),
        (lambda a, b: (a + b).sum(axis=-1), ["for shape (3,) is off: got 12, expected 11"]),
    ],
)
def test_ch1_dot_product_names_typical_mistakes(answer, fragments):
    assert_ch1_mistake(exercises.check_dot_product(answer), *fragments)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (ch1_dot_product, ["plain dot product", "divide it by the two lengths"]),
        (
            lambda a, b: ch1_dot_product(a, b) / ((a * a).sum(-1) * (b * b).sum(-1)),
            ["squared lengths", "square root"],
        ),
        (
            lambda a, b: ch1_dot_product(a, b) / (np.abs(a).sum(-1) * np.abs(b).sum(-1)),
            ["L1 norm", "Euclidean length"],
        ),
        (
            lambda a, b: ch1_dot_product(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)),
            ["for shape (4, 3)", "length of the whole array", "axis=-1"],
        ),
        (
            lambda a, b: ch1_dot_product(a, b) / np.linalg.norm(a, axis=-1),
            ["length of a only"],
        ),
        (
            lambda a, b: (
                ch1_dot_product(a, b) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
            ),
            ["for a zero vector a", "returned nan (that is 0/0)", "raise a ValueError"],
        ),
        (
            lambda a, b: np.nan_to_num(
                ch1_dot_product(a, b) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
            ),
            ["for a zero vector a, cosine_similarity returned 0.", "undefined"],
        ),
        (
            lambda a, b: float(a @ b) / (float(a @ a) ** 0.5 * float(b @ b) ** 0.5),
            ["raised ValueError: matmul", "sum(axis=-1)"],
        ),
    ],
)
def test_ch1_cosine_similarity_names_typical_mistakes(answer, fragments):
    assert_ch1_mistake(exercises.check_cosine_similarity(answer), *fragments)


def test_ch1_cosine_similarity_reports_the_wrong_error_for_a_zero_vector():
    def divides_by_zero_in_python(a, b):
        if a.ndim == 1 and not a.any():
            raise ZeroDivisionError("float division by zero")
        return ch1_cosine_similarity(a, b)

    feedback = exercises.check_cosine_similarity(divides_by_zero_in_python)
    assert_ch1_mistake(feedback, "zero vector a", "raised ZeroDivisionError", "ValueError")


def test_ch1_cosine_similarity_needs_a_zero_check_per_vector():
    def checks_the_whole_array(a, b):
        if np.linalg.norm(a) * np.linalg.norm(b) == 0:
            raise ValueError("cosine similarity is undefined for a zero vector")
        return ch1_dot_product(a, b) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))

    feedback = exercises.check_cosine_similarity(checks_the_whole_array)
    assert_ch1_mistake(
        feedback,
        "for a stack a = [[1, 0], [0, 0]] whose second row is zero, checks_the_whole_array "
        "returned [",
        "nan]",
        "(that is 0/0)",
        "np.linalg.norm(a, axis=-1)",
    )


def test_ch1_cosine_similarity_checker_keeps_warnings_of_wrong_answers_quiet(recwarn):
    exercises.check_cosine_similarity(
        lambda a, b: (
            ch1_dot_product(a, b) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
        )
    )
    assert len(recwarn) == 0


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda x, y: x.T @ y, ["returned shape (4, 4), which is (D, D)", "x @ y.T"]),
        (
            lambda x, y: ch1_cosine_similarity_matrix(x, y).T,
            ["transposed", "row i must belong to x[i]"],
        ),
        (lambda x, y: x @ y.T, ["dot products x @ y.T", "length 1"]),
        (
            lambda x, y: ch1_unit_rows(x, axis=0) @ ch1_unit_rows(y, axis=0).T,
            ["scaled the columns (axis 0"],
        ),
        (
            lambda x, y: x @ y.T / (np.linalg.norm(x) * np.linalg.norm(y)),
            ["length of the whole matrix"],
        ),
        (lambda x, y: ch1_unit_rows(x) @ y.T, ["rows of x but not the rows of y"]),
        (
            lambda x, y: x @ y.T / np.linalg.norm(x, axis=-1) / np.linalg.norm(y, axis=-1),
            ["divides column j by the length of x[j]", "shape (T_q, 1)", "keepdims=True"],
        ),
        (
            lambda x, y: x / np.linalg.norm(x, axis=-1) @ y.T,
            ["could not be broadcast", "keepdims=True"],
        ),
        (lambda x, y: x @ y, ["matmul", "Hint: x @ y.T multiplies (T_q, D) by (D, T_k)"]),
    ],
)
def test_ch1_cosine_similarity_matrix_names_typical_mistakes(answer, fragments):
    assert_ch1_mistake(exercises.check_cosine_similarity_matrix(answer), *fragments)


def test_ch1_cosine_similarity_matrix_names_the_transposed_shape_when_t_q_differs():
    calls = []

    def transposed_only_when_rectangular(x, y):
        calls.append(y.shape)
        similarities = ch1_cosine_similarity_matrix(x, y)
        return similarities if x.shape == y.shape else similarities.T

    feedback = exercises.check_cosine_similarity_matrix(transposed_only_when_rectangular)
    assert_ch1_mistake(feedback, "returned shape (5, 3), which is (T_k, T_q)")
    assert calls == [(3, 4), (5, 4)]


def ch1_nearest_including_itself(word, words, vectors):
    similarities = ch1_unit_rows(vectors) @ ch1_unit_rows(vectors)[words.index(word)]
    return words[int(np.argmax(similarities))]


def ch1_nearest_by_dot_product(word, words, vectors):
    similarities = vectors @ vectors[words.index(word)]
    similarities[words.index(word)] = -np.inf
    return words[int(np.argmax(similarities))]


def ch1_nearest_by_distance(word, words, vectors):
    distances = np.linalg.norm(vectors - vectors[words.index(word)], axis=-1)
    distances[words.index(word)] = np.inf
    return words[int(np.argmin(distances))]


def ch1_farthest_neighbour(word, words, vectors):
    similarities = ch1_unit_rows(vectors) @ ch1_unit_rows(vectors)[words.index(word)]
    return words[int(np.argmin(similarities))]


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (ch1_nearest_including_itself, ["returned 'dog' itself", "cosine similarity 1"]),
        (ch1_nearest_by_dot_product, ["returned 'horse', the nearest by dot product"]),
        (ch1_nearest_by_distance, ["('bike', words, vectors) returned 'drove'", "Euclidean"]),
        (
            lambda word, words, vectors: int(
                np.argmax(ch1_cosines_without_self(word, words, vectors))
            ),
            ["returned the number", "return the word itself, a str"],
        ),
        (ch1_farthest_neighbour, ["the least similar word", "argmax"]),
        (lambda word, words, vectors: "zebra", ["'zebra', which is not one of words"]),
        (lambda word, words, vectors: "cat", ["('bike', words, vectors) returned 'cat'"]),
        (lambda word, words, vectors: None, ["must return a word (a str), got NoneType"]),
    ],
)
def test_ch1_nearest_neighbour_names_typical_mistakes(answer, fragments):
    assert_ch1_mistake(exercises.check_nearest_neighbour(answer), *fragments)


def test_ch1_nearest_neighbour_accepts_any_exactly_tied_word(monkeypatch):
    from selfattn_lib import embeddings

    # Give "cat", the nearest neighbour of "dog", a twin: an identical vector (like "the" and
    # "was") under another name, so that "dog" has two equally near neighbours.
    original_embed, original_vocabulary = embeddings.embed, embeddings.vocabulary
    twin_vocabulary = (*original_vocabulary(), "kitty")

    def embed_with_twin(words):
        return original_embed(["cat" if word == "kitty" else word for word in words])

    monkeypatch.setattr(embeddings, "vocabulary", lambda: twin_vocabulary)
    monkeypatch.setattr(embeddings, "embed", embed_with_twin)

    def prefers(twin_first):
        def nearest_neighbour(word, words, vectors):
            similarities = ch1_cosines_without_self(word, words, vectors)
            best = np.flatnonzero(similarities >= similarities.max() - 1e-9)
            order = sorted(best, key=lambda j: words[j], reverse=twin_first)
            return words[int(order[0])]

        return nearest_neighbour

    for twin_first in (False, True):
        feedback = exercises.check_nearest_neighbour(prefers(twin_first))
        assert feedback.passed, feedback.message


def test_ch1_nearest_neighbour_cannot_pass_by_position():
    words_seen = []

    def remembers_the_order(word, words, vectors):
        words_seen.append(list(words))
        return ch1_nearest_neighbour(word, words, vectors)

    assert exercises.check_nearest_neighbour(remembers_the_order).passed
    assert words_seen[0] != sorted(words_seen[0]), "the words are not in alphabetical order"


# Every checker of the chapter with a correct answer: test_exercises_registry.py runs them.
REFERENCES = dict(CH1_CHECKERS)


def ch1_two_loops(x, y):
    cosines = np.zeros((len(x), len(y)))
    for i in range(len(x)):
        for j in range(len(y)):
            cosines[i, j] = x[i] @ y[j] / (np.linalg.norm(x[i]) * np.linalg.norm(y[j]))
    return cosines


def ch1_comprehension(x, y):
    return np.array([[ch1_cosine_similarity(a, b) for b in y] for a in x])


def ch1_map(x, y):
    return np.array(list(map(lambda a: ch1_unit_rows(y) @ (a / np.linalg.norm(a)), x)))


def ch1_vectorize(x, y):
    pair = np.vectorize(lambda i, j: ch1_cosine_similarity(x[i], y[j]))
    return pair(*np.meshgrid(np.arange(len(x)), np.arange(len(y)), indexing="ij"))


@pytest.mark.parametrize("loopy", [ch1_two_loops, ch1_comprehension, ch1_map, ch1_vectorize])
def test_ch1_cosine_similarity_matrix_rejects_a_loop_however_it_is_written(loopy):
    feedback = exercises.check_cosine_similarity_matrix(loopy)
    assert not feedback.passed, loopy.__name__
    assert_ch1_mistake(feedback, "lines of Python for", "a loop runs once per item")


def test_ch1_loop_detector_counts_lines_that_grow_with_the_input_only():
    from selfattn_lib.exercises import _kit as kit

    small, large = (np.ones((3, 4)), np.ones((5, 4))), (np.ones((12, 4)), np.ones((20, 4)))
    assert kit.python_lines(ch1_cosine_similarity_matrix, *small) == kit.python_lines(
        ch1_cosine_similarity_matrix, *large
    )
    assert kit.python_lines(ch1_two_loops, *large) > kit.python_lines(ch1_two_loops, *small)


def test_ch1_dot_product_rejects_a_loop_over_the_pairs():
    def loopy(a, b):
        if a.ndim == 1:
            return float(a @ b)
        return np.array([loopy(x, y) for x, y in zip(a, b, strict=True)])

    assert_ch1_mistake(exercises.check_dot_product(loopy), "a loop runs once per item")


# --- Plausible mistakes written from each prompt alone, and correct variants ---


def ch1_loop_over_entries(a, b):
    return sum(a[..., d] * b[..., d] for d in range(a.shape[-1]))


def ch1_map_over_plain_views(a, b):
    flat_a = np.asarray(a).reshape(-1, a.shape[-1])  # a plain ndarray, not the checker's view
    flat_b = np.asarray(b).reshape(-1, b.shape[-1])
    return np.array(list(map(np.dot, flat_a, flat_b))).reshape(a.shape[:-1])


def ch1_map_over_pairs(a, b):
    flat_a, flat_b = a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])
    return np.array(list(map(np.dot, flat_a, flat_b))).reshape(a.shape[:-1])


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda a, b: (a * b).sum(axis=1), ["out of bounds", "LAST axis", "axis=-1"]),
        (lambda a, b: (a * b).sum(axis=-1, keepdims=True), ["keepdims=True kept the summed"]),
        (lambda a, b: np.einsum("ij,ij->i", a, b), ["subscripts", "'...d,...d->...'"]),
        (lambda a, b: (a * b).mean(axis=-1), ["averaged the products (mean)"]),
        (lambda a, b: np.sqrt((a * b).sum(axis=-1)), ["took a square root"]),
        (lambda a, b: np.round((a * b).sum(axis=-1), 2), ["rounded to 2 decimals"]),
        (lambda a, b: np.diag(a @ b.T), ["diagonal of a @ b.T works for 2-D arrays only"]),
        (ch1_loop_over_entries, ["ran 5 lines of Python", "a loop runs once per item"]),
        (ch1_map_over_pairs, ["took 8 rows or entries", "a loop runs once per item"]),
        (
            lambda a, b: np.vectorize(np.dot, signature="(d),(d)->()")(a, b),
            ["a loop runs once per item"],
        ),
        (
            lambda a, b: np.apply_along_axis(np.sum, -1, a * b),
            ["a loop runs once per item"],
        ),
        (ch1_map_over_plain_views, ["function calls for inputs of shape (4, 3)", "a loop"]),
    ],
)
def test_ch1_dot_product_names_more_mistakes(answer, fragments):
    assert_ch1_mistake(exercises.check_dot_product(answer), *fragments)


@pytest.mark.parametrize(
    "answer",
    [
        lambda a, b: np.einsum("...d,...d->...", a, b),
        lambda a, b: np.vecdot(a, b),
        lambda a, b: np.linalg.vecdot(a, b),
        lambda a, b: (a[..., None, :] @ b[..., :, None])[..., 0, 0],
        lambda a, b: np.add.reduce(np.multiply(a, b), axis=a.ndim - 1),
        lambda a, b: (a * b) @ np.ones(a.shape[-1]),
        lambda a, b: (a.astype(np.float32) * b.astype(np.float32)).sum(axis=-1),
        lambda a, b: float(a @ b) if a.ndim == 1 else (a * b).sum(axis=-1),
        # einsum's optimiser makes more calls inside NumPy for new shapes: not a loop
        lambda a, b: np.einsum("...d,...d->...", a, b, optimize=True),
        lambda a, b: np.einsum("...d,...d->...", a, b, optimize="greedy"),
        lambda a, b: (np.asarray(a) * np.asarray(b)).sum(axis=-1),
    ],
)
def test_ch1_dot_product_accepts_correct_variants(answer):
    feedback = exercises.check_dot_product(answer)
    assert feedback.passed, feedback.message


def ch1_lengths(a, b):
    return np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)


def ch1_cosine_unchecked(a, b):
    return ch1_dot_product(a, b) / ch1_lengths(a, b)


def ch1_cosine_checks_a_only(a, b):
    if np.any(np.linalg.norm(a, axis=-1) == 0):
        raise ValueError("a has a zero vector")
    return ch1_cosine_unchecked(a, b)


def ch1_cosine_refuses_zero_entries(a, b):
    if (a == 0).any() or (b == 0).any():
        raise ValueError("zero")
    return ch1_cosine_unchecked(a, b)


def ch1_cosine_all_instead_of_any(a, b):
    lengths = ch1_lengths(a, b)
    if np.all(lengths == 0):
        raise ValueError("zero vector")
    return ch1_dot_product(a, b) / lengths


def ch1_cosine_asserts(a, b):
    lengths = ch1_lengths(a, b)
    assert np.all(lengths > 0), "zero vector"
    return ch1_dot_product(a, b) / lengths


def ch1_cosine_prints_and_returns_none(a, b):
    lengths = ch1_lengths(a, b)
    if np.any(lengths == 0):
        return None
    return ch1_dot_product(a, b) / lengths


def ch1_cosine_keepdims(a, b):
    lengths = np.linalg.norm(a, axis=-1, keepdims=True) * np.linalg.norm(b, axis=-1, keepdims=True)
    if np.any(lengths == 0):
        raise ValueError("zero vector")
    return (a * b).sum(axis=-1, keepdims=True) / lengths


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda a, b: 1 - ch1_cosine_similarity(a, b), ["cosine DISTANCE"]),
        (lambda a, b: np.arccos(ch1_cosine_similarity(a, b)), ["the angle θ (np.arccos)"]),
        (lambda a, b: np.round(ch1_cosine_similarity(a, b), 3), ["rounded to 3 decimals"]),
        (ch1_cosine_refuses_zero_entries, ["an entry equal to 0 is fine"]),
        (ch1_cosine_all_instead_of_any, ["second row is zero", "length of every vector"]),
        (ch1_cosine_checks_a_only, ["for a zero vector b", "(that is 0/0)"]),
        (
            lambda a, b: ch1_dot_product(a, b) / np.maximum(ch1_lengths(a, b), 1e-8),
            ["for a zero vector a", "returned 0.", "raise a ValueError"],
        ),
        (ch1_cosine_keepdims, ["keepdims=True kept the summed axis"]),
        (ch1_cosine_asserts, ["raised AssertionError", "raise a ValueError"]),
        (ch1_cosine_prints_and_returns_none, ["returned None", "raise a ValueError"]),
        (
            lambda a, b: ch1_dot_product(a, b) / np.linalg.norm(b, axis=-1),
            ["length of b only"],
        ),
        (
            lambda a, b: (
                ch1_dot_product(a, b) / (np.linalg.norm(a, axis=-1) + np.linalg.norm(b, axis=-1))
            ),
            ["product of the lengths, not their sum"],
        ),
    ],
)
def test_ch1_cosine_similarity_names_more_mistakes(answer, fragments):
    assert_ch1_mistake(exercises.check_cosine_similarity(answer), *fragments)


class Ch1ZeroVectorError(ValueError):
    pass


def ch1_cosine_of_directions(a, b):
    length_a = np.linalg.norm(a, axis=-1, keepdims=True)
    length_b = np.linalg.norm(b, axis=-1, keepdims=True)
    if not (length_a.all() and length_b.all()):
        raise Ch1ZeroVectorError("a zero vector has no direction")
    return ((a / length_a) * (b / length_b)).sum(axis=-1)


def ch1_cosine_einsum(a, b):
    lengths = np.sqrt(np.einsum("...d,...d->...", a, a) * np.einsum("...d,...d->...", b, b))
    if np.isclose(lengths, 0).any():
        raise ValueError("zero vector")
    return np.einsum("...d,...d->...", a, b) / lengths


@pytest.mark.parametrize(
    "answer",
    [
        ch1_cosine_of_directions,
        ch1_cosine_einsum,
        lambda a, b: ch1_cosine_similarity(a.astype(np.float32), b.astype(np.float32)),
    ],
)
def test_ch1_cosine_similarity_accepts_correct_variants(answer):
    feedback = exercises.check_cosine_similarity(answer)
    assert feedback.passed, feedback.message


def ch1_cosine_matrix_norms(x, y):
    return (x @ y.T) / np.outer(np.linalg.norm(x, axis=1), np.linalg.norm(y, axis=1))


def ch1_norms_by_map_over_plain_views(x, y):
    x, y = np.asarray(x), np.asarray(y)  # plain ndarrays, not the checker's views
    norms_x = np.array(list(map(np.linalg.norm, x)))  # one call of a NumPy function per row
    return x @ y.T / np.outer(norms_x, np.linalg.norm(y, axis=1))


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (
            lambda x, y: (
                x @ y.T / np.outer(list(map(np.linalg.norm, x)), np.linalg.norm(y, axis=1))
            ),
            ["took 3 rows or entries", "a loop runs once per item"],
        ),
        (
            lambda x, y: (
                x
                @ y.T
                / np.outer(np.apply_along_axis(np.linalg.norm, 1, x), np.linalg.norm(y, axis=1))
            ),
            ["a loop runs once per item"],
        ),
        (
            lambda x, y: np.array(list(map(ch1_unit_rows(y).__matmul__, ch1_unit_rows(x)))),
            ["took 3 rows or entries", "a loop runs once per item"],
        ),
        (
            lambda x, y: np.vectorize(np.dot, signature="(d),(d)->()")(
                ch1_unit_rows(x)[:, None, :], ch1_unit_rows(y)[None, :, :]
            ),
            ["a loop runs once per item"],
        ),
        (
            lambda x, y: (
                sum(np.outer(x[:, d], y[:, d]) for d in range(x.shape[1]))
                / np.outer(np.linalg.norm(x, axis=1), np.linalg.norm(y, axis=1))
            ),
            ["lines of Python", "a loop runs once per item"],
        ),
        (
            lambda x, y: ch1_cosine_similarity_matrix(
                x - x.mean(axis=-1, keepdims=True), y - y.mean(axis=-1, keepdims=True)
            ),
            ["subtracted each row's mean first (a correlation)"],
        ),
        (lambda x, y: np.corrcoef(x, y), ["(T_q + T_k, T_q + T_k)", "np.corrcoef"]),
        (lambda x, y: 1 - ch1_cosine_similarity_matrix(x, y), ["cosine DISTANCES"]),
        (
            lambda x, y: np.arccos(np.clip(ch1_cosine_similarity_matrix(x, y), -1, 1)),
            ["the angles θ"],
        ),
        (lambda x, y: np.round(ch1_cosine_similarity_matrix(x, y), 2), ["rounded to 2"]),
        (lambda x, y: x @ ch1_unit_rows(y).T, ["rows of y but not the rows of x"]),
        (
            lambda x, y: (
                (x / (x**2).sum(-1, keepdims=True)) @ (y / (y**2).sum(-1, keepdims=True)).T
            ),
            ["squared lengths"],
        ),
        (
            lambda x, y: ch1_unit_rows(x) @ y.T / np.linalg.norm(y, axis=-1, keepdims=True),
            ["the lengths of y belong to the COLUMNS"],
        ),
        (
            ch1_norms_by_map_over_plain_views,
            ["function calls for inputs of shape (3, 4)", "a loop runs once per item"],
        ),
    ],
)
def test_ch1_cosine_similarity_matrix_names_more_mistakes(answer, fragments):
    assert_ch1_mistake(exercises.check_cosine_similarity_matrix(answer), *fragments)


@pytest.mark.parametrize(
    "answer",
    [
        ch1_cosine_matrix_norms,
        lambda x, y: np.einsum("id,jd->ij", ch1_unit_rows(x), ch1_unit_rows(y)),
        lambda x, y: (
            (x @ y.T)
            / np.sqrt((x**2).sum(axis=-1))[:, None]
            / np.sqrt((y * y).sum(axis=-1))[None, :]
        ),
        # map over the two arguments, not over the vectors: no loop over the input
        lambda x, y: (lambda u, v: u @ v.T)(*map(ch1_unit_rows, (x, y))),
        lambda x, y: ch1_cosine_similarity_matrix(x.astype(np.float32), y.astype(np.float32)),
        # einsum's optimiser makes more calls inside NumPy for new shapes: not a loop
        lambda x, y: np.einsum("id,jd->ij", ch1_unit_rows(x), ch1_unit_rows(y), optimize=True),
        lambda x, y: np.einsum("id,jd->ij", ch1_unit_rows(x), ch1_unit_rows(y), optimize="greedy"),
        lambda x, y: np.tensordot(ch1_unit_rows(x), ch1_unit_rows(y), axes=([1], [1])),
        lambda x, y: np.inner(ch1_unit_rows(x), ch1_unit_rows(y)),
        lambda x, y: np.linalg.multi_dot([ch1_unit_rows(x), ch1_unit_rows(y).T]),
        lambda x, y: ch1_cosine_similarity_matrix(np.asarray(x), np.asarray(y)),
    ],
)
def test_ch1_cosine_similarity_matrix_accepts_correct_variants(answer):
    feedback = exercises.check_cosine_similarity_matrix(answer)
    assert feedback.passed, feedback.message


def ch1_torch_dot_product(a, b):
    torch = pytest.importorskip("torch")
    return (torch.from_numpy(a) * torch.from_numpy(b)).sum(dim=-1)


def ch1_torch_cosine_with_a_zero_check(a, b):
    torch = pytest.importorskip("torch")
    if not ch1_lengths(a, b).all():
        raise ValueError("zero vector")
    return torch.nn.functional.cosine_similarity(
        torch.from_numpy(a), torch.from_numpy(b), dim=-1
    ).numpy()


def ch1_torch_cosine_matrix(x, y):
    torch = pytest.importorskip("torch")
    x_t, y_t = torch.from_numpy(x), torch.from_numpy(y)
    return torch.nn.functional.cosine_similarity(x_t[:, None, :], y_t[None, :, :], dim=-1)


@pytest.mark.parametrize(
    ("checker", "answer"),
    [
        (exercises.check_dot_product, ch1_torch_dot_product),
        (exercises.check_cosine_similarity, ch1_torch_cosine_with_a_zero_check),
        (exercises.check_cosine_similarity_matrix, ch1_torch_cosine_matrix),
    ],
)
def test_ch1_checkers_accept_torch(checker, answer):
    feedback = checker(answer)
    assert feedback.passed, feedback.message


def ch1_nearest_second_largest(word, words, vectors):
    similarities = ch1_unit_rows(vectors) @ ch1_unit_rows(vectors)[words.index(word)]
    return words[int(np.argsort(-similarities)[1])]  # the largest is the word itself?


def ch1_nearest_second_largest_stable(word, words, vectors):
    similarities = ch1_unit_rows(vectors) @ ch1_unit_rows(vectors)[words.index(word)]
    return words[int(np.argsort(similarities, kind="stable")[-2])]


def ch1_nearest_without_any_twin(word, words, vectors):
    similarities = ch1_unit_rows(vectors) @ ch1_unit_rows(vectors)[words.index(word)]
    similarities[similarities > 1 - 1e-9] = -np.inf
    return words[int(np.argmax(similarities))]


def ch1_nearest_removed_from_words_only(word, words, vectors):
    similarities = ch1_cosines_without_self(word, words, vectors)
    words.remove(word)
    return words[int(np.argmax(similarities))]


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (
            ch1_nearest_second_largest,
            [
                "('the', words, vectors) returned 'the' itself",
                "Here 'a', 'because', 'was' point the same way as 'the' (cosine 1)",
                "second largest",
            ],
        ),
        (ch1_nearest_second_largest_stable, ["returned 'because' itself", "second largest"]),
        (
            ch1_nearest_without_any_twin,
            [
                "('the', words",
                "but 'a' points the same way as 'the' (cosine 1)",
                "left out every word with cosine 1",
            ],
        ),
        (ch1_nearest_removed_from_words_only, ["one place after the right one", "`vectors`"]),
        (
            lambda word, words, vectors: ch1_cosines_without_self(word, words, vectors).max(),
            ["returned the number 0.98", "a similarity"],
        ),
        (
            lambda word, words, vectors: [ch1_nearest_neighbour(word, words, vectors)],
            ["must return a word (a str), got list"],
        ),
    ],
)
def test_ch1_nearest_neighbour_names_more_mistakes(answer, fragments):
    assert_ch1_mistake(exercises.check_nearest_neighbour(answer), *fragments)


def ch1_nearest_pops_the_word(word, words, vectors):
    index = words.index(word)
    words.pop(index)  # the caller's list loses the word
    others = np.delete(vectors, index, axis=0)
    similarities = ch1_unit_rows(others) @ ch1_unit_rows(vectors)[index]
    return words[int(np.argmax(similarities))]


def ch1_nearest_normalises_in_place(word, words, vectors):
    vectors /= np.linalg.norm(vectors, axis=-1, keepdims=True)  # the caller's array changes
    similarities = vectors @ vectors[words.index(word)]
    similarities[words.index(word)] = -np.inf
    return words[int(np.argmax(similarities))]


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (ch1_nearest_pops_the_word, ["which is right, but it changed the list `words`"]),
        (ch1_nearest_normalises_in_place, ["which is right, but it changed the array `vectors`"]),
    ],
)
def test_ch1_nearest_neighbour_names_a_right_answer_that_changes_its_arguments(answer, fragments):
    assert_ch1_mistake(exercises.check_nearest_neighbour(answer), *fragments)


def ch1_nearest_own_score_zero(word, words, vectors):
    similarities = ch1_unit_rows(vectors) @ ch1_unit_rows(vectors)[words.index(word)]
    similarities[words.index(word)] = 0.0  # the features are non-negative
    return words[int(np.argmax(similarities))]


def ch1_nearest_by_unit_distance(word, words, vectors):
    unit = ch1_unit_rows(vectors)
    distances = np.linalg.norm(unit - unit[words.index(word)], axis=-1)
    distances[words.index(word)] = np.inf
    return words[int(np.argmin(distances))]


def ch1_nearest_with_max(word, words, vectors):
    target = vectors[words.index(word)]

    def cosine(other):
        vector = vectors[words.index(other)]
        return vector @ target / (np.linalg.norm(vector) * np.linalg.norm(target))

    return max((other for other in words if other != word), key=cosine)


def ch1_nearest_with_torch(word, words, vectors):
    torch = pytest.importorskip("torch")
    v = torch.from_numpy(vectors)
    similarities = torch.nn.functional.cosine_similarity(v, v[words.index(word)][None], dim=-1)
    similarities[words.index(word)] = -torch.inf
    return words[int(similarities.argmax())]


@pytest.mark.parametrize(
    "answer",
    [
        ch1_nearest_own_score_zero,
        ch1_nearest_by_unit_distance,
        ch1_nearest_with_max,
        ch1_nearest_with_torch,
    ],
)
def test_ch1_nearest_neighbour_accepts_correct_variants(answer):
    feedback = exercises.check_nearest_neighbour(answer)
    assert feedback.passed, feedback.message


def test_ch1_cosine_similarity_blames_the_zero_check_only_for_a_value_error_of_its_own():
    def lengths_over_the_wrong_axis(a, b):
        if a.ndim == 1:
            return ch1_cosine_similarity(a, b)
        return ch1_dot_product(a, b) / np.linalg.norm(a * b, axis=0)  # (4,) / (3,)

    feedback = exercises.check_cosine_similarity(lengths_over_the_wrong_axis)
    assert_ch1_mistake(feedback, "raised ValueError: operands could not be broadcast")
    assert "an entry equal to 0 is fine" not in feedback.message, feedback.message


def test_ch1_nearest_neighbour_says_parallel_vectors_point_the_same_way_not_that_they_are_equal():
    # "a", "because" and "the" are parallel, not equal: the messages say "point the same way".
    from selfattn_lib import embeddings, similarity

    a, the, because = embeddings.embed(["a", "the", "because"])
    assert not np.array_equal(a, the) and not np.array_equal(because, the)
    assert np.isclose(similarity.cosine_similarity(a, the), 1)
    assert np.isclose(similarity.cosine_similarity(because, the), 1)
    for answer in (ch1_nearest_second_largest, ch1_nearest_without_any_twin):
        feedback = exercises.check_nearest_neighbour(answer)
        assert_ch1_mistake(feedback, "point")
        assert "same vector" not in feedback.message, feedback.message


@pytest.mark.parametrize(
    ("answer", "called"),
    [
        (
            lambda x, y: similarity.similarity_matrix(x, y, measure="cosine"),
            "`selfattn_lib.similarity.similarity_matrix`",
        ),
        (
            lambda x, y: similarity.cosine_similarity(
                *np.broadcast_arrays(x[:, None, :], y[None, :, :])
            ),
            "`selfattn_lib.similarity.cosine_similarity`",
        ),
    ],
)
def test_ch1_cosine_similarity_matrix_turns_down_the_librarys_answer(answer, called):
    # Right results, but the exercise is to write it: as exercises 1 and 2 of the chapter.
    feedback = exercises.check_cosine_similarity_matrix(answer)
    assert_ch1_mistake(
        feedback, "gives the right result, but it calls", called, "write it yourself"
    )
