"""Tests of selfattn_lib.exercises: each checker passes a correct answer, reports an untouched
stub as "not attempted", and names the mistake in typical wrong answers."""

import numpy as np
import pytest

from selfattn_lib import exercises


def test_feedback_reads_as_a_verdict():
    assert repr(exercises.Feedback(True, True, "Well done.")) == "✔ Correct. Well done."
    assert repr(exercises.Feedback(False, False, "Go.")) == "○ Not attempted yet. Go."
    assert repr(exercises.Feedback(False, True, "Off.")) == "✘ Not yet. Off."
    assert bool(exercises.Feedback(True, True, "")) and not exercises.Feedback(False, True, "")


# --- Chapter 2: softmax ---


def ch2_softmax_vector(scores):
    exponentials = np.exp(scores)
    return exponentials / exponentials.sum()


def ch2_stable_softmax(scores):
    exponentials = np.exp(scores - scores.max())
    return exponentials / exponentials.sum()


def ch2_softmax_rows(scores):
    exponentials = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


def ch2_softmax_temperature(scores, temperature):
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    return ch2_stable_softmax(scores / temperature)


def ch2_log_sum_exp(scores):
    largest = scores.max()
    return largest + np.log(np.exp(scores - largest).sum())


def ch2_stub(*args):
    raise NotImplementedError


CH2_CHECKERS = {
    "softmax_vector": (exercises.check_softmax_vector, ch2_softmax_vector),
    "stable_softmax": (exercises.check_stable_softmax, ch2_stable_softmax),
    "softmax_rows": (exercises.check_softmax_rows, ch2_softmax_rows),
    "softmax_temperature": (exercises.check_softmax_temperature, ch2_softmax_temperature),
    "log_sum_exp": (exercises.check_log_sum_exp, ch2_log_sum_exp),
}


@pytest.mark.parametrize("name", CH2_CHECKERS)
def test_ch2_reference_solutions_pass(name):
    checker, solution = CH2_CHECKERS[name]
    feedback = checker(solution)
    assert feedback.passed and feedback.attempted, feedback.message
    assert repr(feedback).startswith("✔ Correct.")


@pytest.mark.parametrize("name", CH2_CHECKERS)
def test_ch2_untouched_stubs_are_not_attempted(name):
    checker, _ = CH2_CHECKERS[name]
    feedback = checker(ch2_stub)
    assert not feedback.passed and not feedback.attempted
    assert "raise NotImplementedError" in feedback.message


def test_ch2_temperature_checker_can_demand_a_value_error():
    feedback = exercises.check_softmax_temperature(
        ch2_softmax_temperature, must_reject_nonpositive=True
    )
    assert feedback.passed, feedback.message
    assert "Non-positive temperatures are rejected" in feedback.message


def assert_ch2_mistake(feedback, *fragments):
    assert feedback.attempted and not feedback.passed, feedback
    for fragment in fragments:
        assert fragment in feedback.message, feedback.message


def test_ch2_softmax_vector_names_typical_mistakes():
    def no_return(scores):
        np.exp(scores) / np.exp(scores).sum()

    assert_ch2_mistake(exercises.check_softmax_vector(no_return), "forget the `return`")
    assert_ch2_mistake(
        exercises.check_softmax_vector(np.exp), "sum to 30.1929, not 1", "divide every"
    )
    assert_ch2_mistake(
        exercises.check_softmax_vector(lambda s: s / s.sum()),
        "without exponentiating them first",
    )
    absolute = lambda s: ch2_softmax_vector(np.abs(s))  # noqa: E731
    assert_ch2_mistake(
        exercises.check_softmax_vector(absolute),
        "softmax_vector([-1.0, 0.0, 2.0, -3.0])",
        "a higher score a lower weight",
    )
    assert_ch2_mistake(
        exercises.check_softmax_vector(lambda s: s - s.mean()), "has a negative weight"
    )
    assert_ch2_mistake(
        exercises.check_softmax_vector(lambda s: ch2_softmax_vector(s)[:-1]),
        "returned shape (2,), expected (3,)",
    )


def test_ch2_softmax_vector_reports_a_changed_input():
    def in_place(scores):
        np.exp(scores, out=scores)
        return scores / scores.sum()

    assert_ch2_mistake(exercises.check_softmax_vector(in_place), "changed the array it was given")


def test_ch2_stable_softmax_explains_overflow_and_underflow():
    with np.errstate(all="raise"):  # the checker, not the test, must silence the warnings
        naive = exercises.check_stable_softmax(ch2_softmax_vector)
    assert_ch2_mistake(
        naive, "stable_softmax([1000.0, 1001.0, 1002.0])", "NaN", "overflow", "Subtract the"
    )

    def shifts_only_large_scores(scores):
        return ch2_softmax_vector(scores - scores.max() if scores.max() > 0 else scores)

    assert_ch2_mistake(
        exercises.check_stable_softmax(shifts_only_large_scores),
        "stable_softmax([-1000.0, -1001.0])",
        "underflow",
        "0 / 0 is NaN",
    )
    assert_ch2_mistake(
        exercises.check_stable_softmax(lambda s: ch2_softmax_vector(s - s.min())),
        "[-1000.0, 0.0, 1000.0]",
        "LARGEST score",
    )


def test_ch2_stable_softmax_checks_float32_and_in_place_changes():
    def float32_naive_unless_huge(scores):
        # Stable only for the float64 cases: fails exactly on the float32 case.
        if scores.dtype == np.float32:
            return ch2_softmax_vector(scores)
        return ch2_stable_softmax(scores)

    assert_ch2_mistake(
        exercises.check_stable_softmax(float32_naive_unless_huge),
        "stable_softmax(np.array([100.0, 101.0, 102.0], dtype=np.float32))",
        "overflow in float32",
        "88.72",
    )

    def in_place(scores):
        scores -= scores.max()
        return ch2_softmax_vector(scores)

    assert_ch2_mistake(exercises.check_stable_softmax(in_place), "`scores -= scores.max()`")
    assert_ch2_mistake(
        exercises.check_stable_softmax(lambda s: np.exp(s - s.max())), "sum to", "not 1"
    )


def test_ch2_softmax_rows_names_the_wrong_axis_and_missing_keepdims():
    def columns(scores):
        exponentials = np.exp(scores - scores.max(axis=0, keepdims=True))
        return exponentials / exponentials.sum(axis=0, keepdims=True)

    assert_ch2_mistake(
        exercises.check_softmax_rows(columns), "your columns sum to one, but each ROW should"
    )

    def no_keepdims(scores):
        exponentials = np.exp(scores - scores.max(axis=-1, keepdims=True))
        return exponentials / exponentials.sum(axis=-1)

    assert_ch2_mistake(exercises.check_softmax_rows(no_keepdims), "keepdims=True", "ROW j")
    assert_ch2_mistake(
        exercises.check_softmax_rows(ch2_stable_softmax), "all entries together sum to one"
    )


def test_ch2_softmax_rows_names_overflow_and_a_global_maximum():
    def naive_rows(scores):
        exponentials = np.exp(scores)
        return exponentials / exponentials.sum(axis=-1, keepdims=True)

    assert_ch2_mistake(exercises.check_softmax_rows(naive_rows), "row 0", "overflow")

    def global_maximum(scores):
        exponentials = np.exp(scores - scores.max())
        return exponentials / exponentials.sum(axis=-1, keepdims=True)

    assert_ch2_mistake(
        exercises.check_softmax_rows(global_maximum), "row 1", "underflow", "OWN maximum"
    )


def test_ch2_softmax_temperature_names_typical_mistakes():
    multiplied = lambda s, t: ch2_stable_softmax(s * t)  # noqa: E731
    assert_ch2_mistake(
        exercises.check_softmax_temperature(multiplied), "multiplies the scores by the temperature"
    )
    ignored = lambda s, t: ch2_stable_softmax(s)  # noqa: E731
    assert_ch2_mistake(exercises.check_softmax_temperature(ignored), "has no effect")
    naive = lambda s, t: ch2_softmax_vector(s / t)  # noqa: E731
    assert_ch2_mistake(
        exercises.check_softmax_temperature(naive),
        "softmax_temperature([1.0, 3.0, 2.0, -1.0], 0.001)",
        "overflow",
        "reach 3000",
    )

    def argmax_when_cold(scores, temperature):
        if temperature < 0.1:
            return np.eye(len(scores))[np.argmax(scores)]
        return ch2_stable_softmax(scores / temperature)

    assert_ch2_mistake(
        exercises.check_softmax_temperature(argmax_when_cold), "with a tie at the top"
    )


def test_ch2_softmax_temperature_can_demand_a_value_error():
    def accepts_anything(scores, temperature):
        return ch2_stable_softmax(scores / temperature)

    # Without the demand, the same function passes.
    assert exercises.check_softmax_temperature(accepts_anything).passed
    assert_ch2_mistake(
        exercises.check_softmax_temperature(accepts_anything, must_reject_nonpositive=True),
        "softmax_temperature([1.0, 3.0, 2.0, -1.0], 0)",
        "instead of raising ValueError",
    )

    def asserts(scores, temperature):
        assert temperature > 0
        return ch2_stable_softmax(scores / temperature)

    assert_ch2_mistake(
        exercises.check_softmax_temperature(asserts, must_reject_nonpositive=True),
        "raised AssertionError; raise ValueError",
    )


def test_ch2_log_sum_exp_names_typical_mistakes():
    with np.errstate(all="raise"):
        naive = exercises.check_log_sum_exp(lambda s: np.log(np.exp(s).sum()))
    assert_ch2_mistake(naive, "log_sum_exp([1000.0, 1000.0])", "infinity", "overflow")

    def not_added_back(scores):
        return np.log(np.exp(scores - scores.max()).sum())

    assert_ch2_mistake(exercises.check_log_sum_exp(not_added_back), "did not add it back")
    assert_ch2_mistake(exercises.check_log_sum_exp(np.max), "returned the maximum score")
    assert_ch2_mistake(
        exercises.check_log_sum_exp(lambda s: np.exp(s - s.max())),
        "returned shape (3,), expected () (a single number)",
    )

    def shifts_only_large_scores(scores):
        largest = scores.max()
        if largest > 0:
            return largest + np.log(np.exp(scores - largest).sum())
        return np.log(np.exp(scores).sum())

    assert_ch2_mistake(
        exercises.check_log_sum_exp(shifts_only_large_scores),
        "log_sum_exp([-1000.0, -1000.0])",
        "underflow",
    )


# --- Chapter 1: dot-product similarity ---


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


@pytest.mark.parametrize("name", CH1_CHECKERS)
def test_ch1_reference_solutions_pass(name):
    feedback = getattr(exercises, name)(CH1_CHECKERS[name])
    assert feedback.passed and feedback.attempted, feedback.message
    assert repr(feedback).startswith("✔ Correct.")


@pytest.mark.parametrize("name", CH1_CHECKERS)
def test_ch1_untouched_stubs_are_not_attempted(name):
    feedback = getattr(exercises, name)(ch1_stub)
    assert not feedback.passed and not feedback.attempted
    assert "NotImplementedError" in feedback.message


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


def test_ch1_nearest_neighbour_cannot_pass_by_position():
    words_seen = []

    def remembers_the_order(word, words, vectors):
        words_seen.append(list(words))
        return ch1_nearest_neighbour(word, words, vectors)

    assert exercises.check_nearest_neighbour(remembers_the_order).passed
    assert words_seen[0] != sorted(words_seen[0]), "the words are not in alphabetical order"
