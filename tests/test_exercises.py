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


CH1_DEFAULT_NAMES = {
    "check_dot_product": "dot_product",
    "check_cosine_similarity": "cosine_similarity",
    "check_cosine_similarity_matrix": "cosine_similarity_matrix",
    "check_nearest_neighbour": "nearest_neighbour",
}


@pytest.mark.parametrize("name", CH1_CHECKERS)
def test_ch1_messages_use_the_learners_function_name(name):
    solution = CH1_CHECKERS[name]
    feedback = getattr(exercises, name)(solution)
    assert f"Your {solution.__name__} " in feedback.message

    def returns_none(*args):
        return None

    feedback = getattr(exercises, name)(returns_none)
    assert "returns_none" in feedback.message, feedback.message
    feedback = getattr(exercises, name)(lambda *args: solution(*args))
    assert f"Your {CH1_DEFAULT_NAMES[name]} " in feedback.message, feedback.message
    assert "<lambda>" not in feedback.message


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


# --- Chapter 2: softmax ---


def ch2_stable_softmax(scores, axis=-1):
    exponentials = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return exponentials / exponentials.sum(axis=axis, keepdims=True)


def ch2_weights_after_scaling(weights, factor):
    powered = weights**factor
    return powered / powered.sum()


def ch2_top_weight(scores, temperature):
    weights = ch2_stable_softmax(scores / temperature)
    return weights.max()


def ch2_bisect_temperature(scores, target, halvings=100, flip=False):
    low, high = np.log(1e-3), np.log(1e6)  # search log(τ)
    for _ in range(halvings):
        middle = (low + high) / 2
        too_sharp = ch2_top_weight(scores, np.exp(middle)) > target
        if too_sharp != flip:
            low = middle
        else:
            high = middle
    return float(np.exp((low + high) / 2))


def ch2_temperature_for_top_weight(scores, target):
    return ch2_bisect_temperature(scores, target)


def ch2_masked_softmax(scores):
    largest = scores.max(axis=-1, keepdims=True)
    largest = np.where(np.isneginf(largest), 0.0, largest)  # all-masked rows: shift by 0
    exponentials = np.exp(scores - largest)
    totals = exponentials.sum(axis=-1, keepdims=True)
    return np.divide(exponentials, totals, out=np.zeros_like(exponentials), where=totals > 0)


def ch2_log_sum_exp(scores):
    largest = scores.max()
    return largest + np.log(np.exp(scores - largest).sum())


def ch2_stub(*args):
    raise NotImplementedError


CH2_CHECKERS = {
    "weights_after_scaling": (exercises.check_weights_after_scaling, ch2_weights_after_scaling),
    "temperature_for_top_weight": (
        exercises.check_temperature_for_top_weight,
        ch2_temperature_for_top_weight,
    ),
    "masked_softmax": (exercises.check_masked_softmax, ch2_masked_softmax),
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


def assert_ch2_mistake(feedback, *fragments):
    assert feedback.attempted and not feedback.passed, feedback
    for fragment in fragments:
        assert fragment in feedback.message, feedback.message


@pytest.mark.parametrize("name", CH2_CHECKERS)
def test_ch2_messages_use_the_learners_function_name(name):
    checker, _ = CH2_CHECKERS[name]

    def my_answer(*args):
        return None

    assert_ch2_mistake(checker(my_answer), "my_answer(", "forget the `return`")
    assert_ch2_mistake(checker(lambda *args: None), f"{name}(")


def test_ch2_weights_after_scaling_names_typical_mistakes():
    checker = exercises.check_weights_after_scaling
    assert_ch2_mistake(
        checker(lambda w, k: w**k), "sum to 0.510543, not 1", "divide by the new total"
    )
    assert_ch2_mistake(checker(lambda w, k: w), "returned the weights unchanged")
    assert_ch2_mistake(
        checker(lambda w, k: ch2_stable_softmax(k * w)), "softmax of the weights, as if"
    )
    assert_ch2_mistake(checker(lambda w, k: ch2_weights_after_scaling(w, 1 / k)), "not 1/2")
    assert_ch2_mistake(checker(lambda w, k: w[:-1]), "returned shape (2,), expected (3,)")

    def in_place(weights, factor):
        weights **= factor
        return weights / weights.sum()

    assert_ch2_mistake(checker(in_place), "changed the array it was given")
    # Going back to scores with the logarithm is right too.
    assert checker(lambda w, k: ch2_stable_softmax(k * np.log(w))).passed


def test_ch2_temperature_for_top_weight_names_typical_mistakes():
    checker = exercises.check_temperature_for_top_weight
    assert_ch2_mistake(
        checker(lambda s, t: 1 / ch2_temperature_for_top_weight(s, t)),
        "which is 1/τ",
        "MULTIPLIED",
    )
    assert_ch2_mistake(checker(lambda s, t: t), "returned the target weight 0.9 itself")
    assert_ch2_mistake(
        checker(lambda s, t: ch2_bisect_temperature(s, t, halvings=15)),
        "top weight is 0.89",
        "keep narrowing",
    )
    assert_ch2_mistake(
        checker(lambda s, t: ch2_bisect_temperature(s, t, flip=True)),
        "τ is too high",
        "bisection",
    )
    assert_ch2_mistake(checker(lambda s, t: -1.0), "must be positive")
    assert_ch2_mistake(checker(lambda s, t: s), "expected () (a single number)")

    def naive_top_weight(scores, temperature):
        exponentials = np.exp(scores / temperature)
        return exponentials.max() / exponentials.sum()

    def naive_search(scores, target):
        low, high = 1e-3, 1e6
        for _ in range(200):
            middle = (low + high) / 2
            if naive_top_weight(scores, middle) > target:
                low = middle
            else:
                high = middle
        return middle

    with np.errstate(all="raise"):  # the checker, not the test, must silence the warnings
        with pytest.raises(FloatingPointError):
            naive_top_weight(np.array([1000.0]), 1.0)
    assert_ch2_mistake(
        checker(naive_search), "[1000.0, 999.0, 998.0]", "overflows", "subtract the largest"
    )


def test_ch2_masked_softmax_names_typical_mistakes():
    checker = exercises.check_masked_softmax
    with np.errstate(all="raise"):  # the checker, not the test, must silence the warnings
        unmasked = checker(ch2_stable_softmax)
    assert_ch2_mistake(unmasked, "row (0, 2)", "every key is masked", "-inf - (-inf) is NaN")

    def naive(scores):
        exponentials = np.exp(scores)
        return exponentials / exponentials.sum(axis=-1, keepdims=True)

    assert_ch2_mistake(checker(naive), "row (1, 0)", "overflow")

    def batch_maximum(scores):
        exponentials = np.exp(scores - scores[np.isfinite(scores)].max())
        return exponentials / exponentials.sum(axis=-1, keepdims=True)

    assert_ch2_mistake(checker(batch_maximum), "row (1, 1)", "underflow", "OWN maximum")
    assert_ch2_mistake(
        checker(lambda s: ch2_masked_softmax(np.where(np.isneginf(s), -1e9, s))),
        "uniform weights 1/4",
        "-1e9",
    )
    assert_ch2_mistake(
        checker(lambda s: ch2_stable_softmax(s, axis=1)), "along axis=1, over the queries"
    )

    def no_keepdims(scores):
        exponentials = np.exp(scores - scores.max(axis=-1, keepdims=True))
        return exponentials / exponentials.sum(axis=-1)

    assert_ch2_mistake(checker(no_keepdims), "keepdims=True", "(2, 3, 1)")

    def masked_get_a_little(scores):
        # As if -inf were replaced by -30 in the rows that have an unmasked key.
        has_a_key = np.isfinite(scores.max(axis=-1, keepdims=True))
        return ch2_masked_softmax(np.where(np.isneginf(scores) & has_a_key, -30.0, scores))

    assert_ch2_mistake(checker(masked_get_a_little), "is masked (score -inf) but got weight")

    def in_place(scores):
        scores[np.isneginf(scores.max(axis=-1))] = 0.0
        return ch2_masked_softmax(scores)

    assert_ch2_mistake(checker(in_place), "changed the array it was given")


def test_ch2_log_sum_exp_names_typical_mistakes():
    with np.errstate(all="raise"):
        naive = exercises.check_log_sum_exp(lambda s: np.log(np.exp(s).sum()))
    assert_ch2_mistake(naive, "log_sum_exp([1000.0, 1000.0])", "infinity", "overflow")

    def not_added_back(scores):
        return np.log(np.exp(scores - scores.max()).sum())

    assert_ch2_mistake(
        exercises.check_log_sum_exp(not_added_back),
        "not_added_back([1.0, 2.0, 3.0])",
        "did not add it back",
    )
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
        "shifts_only_large_scores([-1000.0, -1000.0])",
        "underflow",
    )
