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


# --- Chapter 6: masks ---


def ch6_look_back_mask(t, window):
    offset = np.arange(t)[:, None] - np.arange(t)[None, :]  # i - j
    return (offset >= 0) & (offset < window)


def ch6_left_padding_mask(lengths, max_len):
    return (np.arange(max_len) >= max_len - lengths[:, None])[:, None, :]


def ch6_masked_attention(q, k, v, mask, *, fill=-np.inf, safe=True, scale=True):
    scores = q @ np.swapaxes(k, -1, -2)
    if scale:
        scores = scores / np.sqrt(q.shape[-1])
    scores = np.where(mask, scores, fill)
    largest = scores.max(axis=-1, keepdims=True)
    if safe:
        largest = np.where(np.isneginf(largest), 0.0, largest)
    exponentials = np.exp(scores - largest)
    totals = exponentials.sum(axis=-1, keepdims=True)
    if safe:
        weights = np.divide(exponentials, totals, out=np.zeros_like(exponentials), where=totals > 0)
    else:
        weights = exponentials / totals
    return weights @ v, weights


def ch6_stub(*args):
    raise NotImplementedError


CH6_CHECKERS = {
    "look_back_mask": (exercises.check_look_back_mask, ch6_look_back_mask),
    "left_padding_mask": (exercises.check_left_padding_mask, ch6_left_padding_mask),
    "masked_attention": (exercises.check_masked_attention, ch6_masked_attention),
}


@pytest.mark.parametrize("name", CH6_CHECKERS)
def test_ch6_reference_solutions_pass(name):
    checker, solution = CH6_CHECKERS[name]
    feedback = checker(solution)
    assert feedback.passed and feedback.attempted, feedback.message


@pytest.mark.parametrize("name", CH6_CHECKERS)
def test_ch6_untouched_stubs_are_not_attempted(name):
    checker, _ = CH6_CHECKERS[name]
    feedback = checker(ch6_stub)
    assert not feedback.passed and not feedback.attempted
    assert "raise NotImplementedError" in feedback.message


def assert_ch6_mistake(feedback, *fragments):
    assert feedback.attempted and not feedback.passed, feedback
    for fragment in fragments:
        assert fragment in feedback.message, feedback.message


@pytest.mark.parametrize("name", CH6_CHECKERS)
def test_ch6_messages_use_the_learners_function_name(name):
    checker, _ = CH6_CHECKERS[name]

    def my_answer(*args):
        return None

    message = checker(my_answer).message
    assert "my_answer(" in message and ("forget the `return`" in message or "pair" in message)


def ch6_band(t, low, high):
    offset = np.arange(t)[:, None] - np.arange(t)[None, :]
    return (offset >= low) & (offset <= high)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda t, w: ch6_band(t, 1, w - 1), ["False on the diagonal", "k=-1"]),
        (lambda t, w: ~ch6_look_back_mask(t, w), ["'True = ignore' convention"]),
        (lambda t, w: ch6_band(t, -w + 1, w - 1), ["FUTURE key"]),
        (lambda t, w: ch6_band(t, 0, w), ["one too many"]),
        (lambda t, w: ch6_band(t, 0, w - 2), ["one too few"]),
        (lambda t, w: ch6_look_back_mask(t, w).astype(int), ["dtype int64", "must be boolean"]),
    ],
)
def test_ch6_look_back_mask_names_typical_mistakes(answer, fragments):
    assert_ch6_mistake(exercises.check_look_back_mask(answer), *fragments)


def ch6_left(lengths, m, shift=0):
    return np.arange(m) >= m - lengths[:, None] + shift


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda lengths, m: ch6_left(lengths, m), ["(B, T_k)", "[:, None, :]"]),
        (lambda lengths, m: ch6_left(lengths, m)[:, :, None], ["(B, T_k, 1)"]),
        (lambda lengths, m: ~ch6_left(lengths, m)[:, None, :], ["True on the padding"]),
        (
            lambda lengths, m: (np.arange(m) < lengths[:, None])[:, None, :],
            ["RIGHT-padded batch"],
        ),
        (lambda lengths, m: ch6_left(lengths, m, 1)[:, None, :], ["hides the first real token"]),
        (lambda lengths, m: ch6_left(lengths, m, -1)[:, None, :], ["one padding position too"]),
    ],
)
def test_ch6_left_padding_mask_names_typical_mistakes(answer, fragments):
    assert_ch6_mistake(exercises.check_left_padding_mask(answer), *fragments)


def ch6_mask_after_softmax(q, k, v, mask):
    _, weights = ch6_masked_attention(q, k, v, np.ones(1, dtype=bool))
    weights = weights * mask
    return weights @ v, weights


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda q, k, v, m: ch6_masked_attention(q, k, v, m, fill=-1e9), ["-1e9 leak", "1/5"]),
        (lambda q, k, v, m: ch6_masked_attention(q, k, v, m, safe=False), ["NaN", "0 by 0"]),
        (ch6_mask_after_softmax, ["AFTER the softmax"]),
        (lambda q, k, v, m: ch6_masked_attention(q, k, v, ~m), ["inverted"]),
        (lambda q, k, v, m: ch6_masked_attention(q, k, v, m, scale=False), ["√d_k"]),
        (lambda q, k, v, m: ch6_masked_attention(q, k, v, m)[1], ["pair (output, weights)"]),
    ],
)
def test_ch6_masked_attention_names_typical_mistakes(answer, fragments):
    assert_ch6_mistake(exercises.check_masked_attention(answer), *fragments)


def test_ch6_masked_attention_checker_keeps_warnings_quiet(recwarn):
    exercises.check_masked_attention(
        lambda q, k, v, m: ch6_masked_attention(q, k, v, m, safe=False)
    )
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


# --- Chapter 7: multi-head attention ---


def ch7_split_heads(x, n_heads):
    batch, n_tokens, d_model = x.shape
    return x.reshape(batch, n_tokens, n_heads, d_model // n_heads).transpose(0, 2, 1, 3)


def ch7_merge_heads(heads):
    batch, n_heads, n_tokens, d_head = heads.shape
    return heads.transpose(0, 2, 1, 3).reshape(batch, n_tokens, n_heads * d_head)


def ch7_mha_parameter_count(d_model, n_heads, bias):
    return 4 * d_model * d_model + (4 * d_model if bias else 0)


def ch7_head_weights(x, params, n_heads, *, scale=None, split=ch7_split_heads, axis=-1):
    d_head = x.shape[-1] // n_heads
    q = split(x @ params.w_q + params.b_q, n_heads)
    k = split(x @ params.w_k + params.b_k, n_heads)
    scores = q @ np.swapaxes(k, -1, -2) / (np.sqrt(d_head) if scale is None else scale)
    exponentials = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return exponentials / exponentials.sum(axis=axis, keepdims=True)


def ch7_head_contributions(x, params, n_heads, *, bias_share=0.0):
    weights = ch7_head_weights(x, params, n_heads)
    heads = weights @ ch7_split_heads(x @ params.w_v + params.b_v, n_heads)  # (B, H, T, D_h)
    d_head = x.shape[-1] // n_heads
    shares = np.stack(
        [heads[:, h] @ params.w_o[h * d_head : (h + 1) * d_head] for h in range(n_heads)], axis=1
    )
    return shares + bias_share * params.b_o


def ch7_stub(*args):
    raise NotImplementedError


CH7_CHECKERS = {
    "split_heads": (exercises.check_split_heads, ch7_split_heads),
    "merge_heads": (exercises.check_merge_heads, ch7_merge_heads),
    "mha_parameter_count": (exercises.check_mha_parameter_count, ch7_mha_parameter_count),
    "head_weights": (exercises.check_head_weights, ch7_head_weights),
    "head_contributions": (exercises.check_head_contributions, ch7_head_contributions),
}


@pytest.mark.parametrize("name", CH7_CHECKERS)
def test_ch7_reference_solutions_pass(name):
    checker, solution = CH7_CHECKERS[name]
    feedback = checker(solution)
    assert feedback.passed and feedback.attempted, feedback.message


@pytest.mark.parametrize("name", CH7_CHECKERS)
def test_ch7_untouched_stubs_are_not_attempted(name):
    checker, _ = CH7_CHECKERS[name]
    feedback = checker(ch7_stub)
    assert not feedback.passed and not feedback.attempted
    assert "raise NotImplementedError" in feedback.message


@pytest.mark.parametrize("name", CH7_CHECKERS)
def test_ch7_messages_use_the_learners_function_name(name):
    checker, _ = CH7_CHECKERS[name]

    def my_answer(*args):
        return None

    message = checker(my_answer).message
    assert "my_answer(" in message and "forget the `return`" in message


def assert_ch7_mistake(feedback, *fragments):
    assert feedback.attempted and not feedback.passed, feedback
    for fragment in fragments:
        assert fragment in feedback.message, feedback.message


def test_ch7_checkers_accept_other_correct_formulations():
    import torch

    from selfattn_lib.multihead import merge_heads, multi_head_attention, split_heads

    def torch_split(x, n_heads):  # a torch tensor, through view + transpose
        tensor = torch.from_numpy(x)
        return tensor.view(*tensor.shape[:2], n_heads, -1).transpose(1, 2)

    def torch_merge(heads):  # a torch tensor, through transpose + reshape of a non-contiguous view
        tensor = torch.from_numpy(heads).transpose(1, 2)
        return tensor.reshape(*tensor.shape[:2], -1)

    def loop_split(x, n_heads):  # nested lists, head by head
        d_head = x.shape[-1] // n_heads
        return [
            [seq[:, h * d_head : (h + 1) * d_head].tolist() for h in range(n_heads)] for seq in x
        ]

    def float_count(d_model, n_heads, bias):
        return float(4 * d_model**2 + 4 * d_model * bias)

    def float32_weights(x, params, n_heads):
        return multi_head_attention(x, x, params, n_heads)[1].astype(np.float32)

    for checker, answer in [
        (exercises.check_split_heads, split_heads),
        (exercises.check_split_heads, torch_split),
        (exercises.check_split_heads, loop_split),
        (exercises.check_merge_heads, merge_heads),
        (exercises.check_merge_heads, torch_merge),
        (exercises.check_mha_parameter_count, float_count),
        (exercises.check_mha_parameter_count, lambda d, h, bias: np.int64(4 * d * (d + bias))),
        (exercises.check_head_weights, float32_weights),
    ]:
        feedback = checker(answer)
        assert feedback.passed, feedback.message


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda x, h: x.reshape(x.shape[0], h, x.shape[1], -1), ["classic bug", "token 0"]),
        (lambda x, h: x.reshape(*x.shape[:2], h, -1), ["(B, T, H, D_h)", "swap axes 1 and 2"]),
        (
            lambda x, h: x.reshape(*x.shape[:2], h, -1).transpose(0, 2, 3, 1),
            ["(B, H, D_h, T)"],
        ),
        (
            lambda x, h: x.reshape(*x.shape[:2], -1, h).transpose(0, 3, 1, 2),
            ["features 0, 2, 4", "(B, T, D_h, H)"],
        ),
        (lambda x, h: ch7_split_heads(x, h)[:, ::-1], ["holds feature 3 of token 0"]),
        (lambda x, h: ch7_split_heads(x, h)[..., 0], ["expected (B, H, T, D_h)"]),
    ],
)
def test_ch7_split_heads_names_typical_mistakes(answer, fragments):
    assert_ch7_mistake(exercises.check_split_heads(answer), *fragments)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda a: a.reshape(a.shape[0], a.shape[2], -1), ["classic bug", "feature 0 of token 1"]),
        (lambda a: a.transpose(0, 2, 1, 3), ["(B, T, H, D_h)", "reshape"]),
        (
            lambda a: a.transpose(0, 2, 3, 1).reshape(a.shape[0], a.shape[2], -1),
            ["interleaves", "(B, T, D_h, H)"],
        ),
        (lambda a: ch7_merge_heads(a[:, ::-1]), ["holds feature 3 of token 0"]),
    ],
)
def test_ch7_merge_heads_names_typical_mistakes(answer, fragments):
    assert_ch7_mistake(exercises.check_merge_heads(answer), *fragments)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda d, h, bias: h * 4 * d * d + 4 * d * bias, ["per head", "whatever H"]),
        (lambda d, h, bias: h * (4 * d * d + 4 * d * bias), ["(and a bias) per head"]),
        (lambda d, h, bias: 4 * d * (d // h) + 4 * (d // h) * bias, ["one head's slice"]),
        (lambda d, h, bias: 3 * d * d + 3 * d * bias, ["forgets the output projection W_O"]),
        (lambda d, h, bias: 4 * d * d, ["forgets the four biases"]),
        (lambda d, h, bias: 4 * d * d + 4 * d, ["counts biases although bias=False"]),
        (lambda d, h, bias: 4 * d * d + 4 * d * h * bias, ["biases once per head"]),
        (lambda d, h, bias: 4 * d * d + 0.5, ["whole number"]),
        (lambda d, h, bias: 2 * d * d, ["expected 1,050,624"]),
    ],
)
def test_ch7_mha_parameter_count_names_typical_mistakes(answer, fragments):
    assert_ch7_mistake(exercises.check_mha_parameter_count(answer), *fragments)


def ch7_weights_without_query_bias(x, params, n_heads):
    zero = np.zeros(x.shape[-1])
    no_bias = type(params)(params.w_q, params.w_k, params.w_v, params.w_o, zero, zero, zero, zero)
    return ch7_head_weights(x, no_bias, n_heads)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda x, p, h: ch7_head_weights(x, p, h, scale=np.sqrt(x.shape[-1])), ["√D = √6"]),
        (lambda x, p, h: ch7_head_weights(x, p, h, scale=1.0), ["does not scale"]),
        (lambda x, p, h: ch7_head_weights(x, p, h, scale=x.shape[-1] // h), ["D_h = 3 itself"]),
        (
            lambda x, p, h: ch7_head_weights(
                x, p, h, split=lambda a, n: a.reshape(a.shape[0], n, a.shape[1], -1)
            ),
            ["classic bug"],
        ),
        (
            lambda x, p, h: ch7_head_weights(
                x, p, h, split=lambda a, n: a.reshape(*a.shape[:2], -1, n).transpose(0, 3, 1, 2)
            ),
            ["interleaved"],
        ),
        (ch7_weights_without_query_bias, ["query bias b_q"]),
        (lambda x, p, h: ch7_head_weights(x, p, h, axis=-2), ["columns", "last axis"]),
        (lambda x, p, h: ch7_head_weights(x, p, h).transpose(0, 2, 1, 3), ["(B, T, H, T)"]),
        (lambda x, p, h: ch7_head_weights(x, p, h).transpose(1, 0, 2, 3), ["(H, B, T, T)"]),
    ],
)
def test_ch7_head_weights_names_typical_mistakes(answer, fragments):
    assert_ch7_mistake(exercises.check_head_weights(answer), *fragments)


def ch7_even_shares(x, params, n_heads):
    total = ch7_head_contributions(x, params, n_heads).sum(axis=1, keepdims=True)
    return np.repeat(total / n_heads, n_heads, axis=1)


def ch7_swapped_shares(x, params, n_heads):
    shares = ch7_head_contributions(x, params, n_heads)
    return np.concatenate([shares[:, :1] + shares[:, 1:2], 0 * shares[:, 1:2], shares[:, 2:]], 1)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda x, p, h: ch7_head_contributions(x, p, h, bias_share=1.0), ["adds b_o"]),
        (lambda x, p, h: ch7_head_contributions(x, p, h, bias_share=1 / h), ["b_o / H"]),
        (ch7_even_shares, ["evenly"]),
        (ch7_swapped_shares, ["not the heads' own"]),
        (lambda x, p, h: ch7_head_contributions(x, p, h).transpose(1, 0, 2, 3), ["(H, B, T, D)"]),
        (
            lambda x, p, h: ch7_head_weights(x, p, h) @ ch7_split_heads(x @ p.w_v + p.b_v, h),
            ["(B, H, T, D_h)", "rows of W_O"],
        ),
    ],
)
def test_ch7_head_contributions_names_typical_mistakes(answer, fragments):
    assert_ch7_mistake(exercises.check_head_contributions(answer), *fragments)


# --- Chapter 4: queries, keys and values ---


def ch4_softmax(scores, axis=-1):
    exponentials = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return exponentials / exponentials.sum(axis=axis, keepdims=True)


def ch4_one_query_attention(x, i, w_q, w_k, w_v, divide_by=None):
    q, k, v = x[i] @ w_q, x @ w_k, x @ w_v  # (d_k,), (T, d_k), (T, d_v)
    scores = k @ q / (np.sqrt(len(q)) if divide_by is None else divide_by)
    weights = ch4_softmax(scores)
    return weights @ v, weights


def ch4_design_projections():
    return np.array([[0.0], [0.0], [0.0], [5.0]]), np.array([[0.0], [1.0], [-1.0], [0.0]])


def ch4_cross_attention(x_q, x_kv, w_q, w_k, w_v, axis=-1):
    q, k, v = x_q @ w_q, x_kv @ w_k, x_kv @ w_v
    weights = ch4_softmax(q @ k.T / np.sqrt(q.shape[-1]), axis=axis)
    return weights @ v, weights


def ch4_stub(*args):
    raise NotImplementedError


CH4_CHECKERS = {
    "one_query_attention": (exercises.check_one_query_attention, ch4_one_query_attention),
    "design_projections": (exercises.check_design_projections, ch4_design_projections),
    "cross_attention": (exercises.check_cross_attention, ch4_cross_attention),
}


@pytest.mark.parametrize("name", CH4_CHECKERS)
def test_ch4_reference_solutions_pass_and_stubs_are_not_attempted(name):
    checker, solution = CH4_CHECKERS[name]
    feedback = checker(solution)
    assert feedback.passed and feedback.attempted, feedback.message
    stub = checker(ch4_stub)
    assert not stub.passed and not stub.attempted
    assert "raise NotImplementedError" in stub.message


def assert_ch4_mistake(feedback, *fragments):
    assert feedback.attempted and not feedback.passed, feedback
    for fragment in fragments:
        assert fragment in feedback.message, feedback.message


def test_ch4_one_query_attention_names_the_scaling_mistakes():
    def unscaled(x, i, w_q, w_k, w_v):
        return ch4_one_query_attention(x, i, w_q, w_k, w_v, divide_by=1.0)

    def by_d_k(x, i, w_q, w_k, w_v):
        return ch4_one_query_attention(x, i, w_q, w_k, w_v, divide_by=w_q.shape[1])

    def by_sqrt_d(x, i, w_q, w_k, w_v):
        return ch4_one_query_attention(x, i, w_q, w_k, w_v, divide_by=np.sqrt(x.shape[1]))

    check = exercises.check_one_query_attention
    assert_ch4_mistake(check(unscaled), "unscaled(x, 0, w_q, w_k, w_v)", "did not divide")
    assert_ch4_mistake(check(by_d_k), "divided the scores by d_k = 3 instead of √d_k")
    assert_ch4_mistake(check(by_sqrt_d), "√D = √4 (the token size)")


def test_ch4_one_query_attention_names_order_and_role_mistakes():
    def w_times_x(x, i, w_q, w_k, w_v):
        q, k, v = w_q @ x[i], w_k @ x, w_v @ x
        weights = ch4_softmax(k @ q / np.sqrt(len(q)))
        return weights @ v, weights

    def swapped(x, i, w_q, w_k, w_v):
        return ch4_one_query_attention(x, i, w_k, w_q, w_v)

    def unweighted(x, i, w_q, w_k, w_v):
        _, weights = ch4_one_query_attention(x, i, w_q, w_k, w_v)
        return (x @ w_v).sum(axis=0), weights

    check = exercises.check_one_query_attention
    assert_ch4_mistake(check(w_times_x), "ValueError", "the projection is x @ w")
    assert_ch4_mistake(check(swapped), "use W_K for the query and W_Q for the keys")
    assert_ch4_mistake(check(unweighted), "ignores the weights")
    assert_ch4_mistake(check(lambda *a: 3), "must return a pair (output, weights)")


def test_ch4_design_projections_names_shape_and_strength_mistakes():
    check = exercises.check_design_projections
    transposed = check(lambda: (np.ones((1, 4)), np.ones((1, 4))))
    assert_ch4_mistake(transposed, "shape (1, 4) (it looks transposed)", "needs 4 rows")
    unequal = check(lambda: (np.ones((4, 3)), np.ones((4, 2))))
    assert_ch4_mistake(unequal, "w_q has 3 columns and w_k has 2", "same length d_k")
    too_weak = check(
        lambda: (np.array([[0.0], [0], [0], [1.0]]), np.array([[0.0], [1], [-1], [0]]))
    )
    assert_ch4_mistake(too_weak, "x3 gets 0.576, not 0.9", "x1 attends most to x3")
    identity = check(lambda: (np.eye(4), np.eye(4)))
    assert_ch4_mistake(identity, "x1 attends most to x1")


def test_ch4_cross_attention_names_axis_and_source_mistakes():
    def self_attention(x_q, x_kv, w_q, w_k, w_v):
        return ch4_cross_attention(x_q, x_q, w_q, w_k, w_v)

    def wrong_axis(x_q, x_kv, w_q, w_k, w_v):
        return ch4_cross_attention(x_q, x_kv, w_q, w_k, w_v, axis=0)

    def transposed(x_q, x_kv, w_q, w_k, w_v):
        output, weights = ch4_cross_attention(x_q, x_kv, w_q, w_k, w_v)
        return output, weights.T

    check = exercises.check_cross_attention
    assert_ch4_mistake(check(self_attention), "= (T_q, T_q)", "must come from x_kv")
    assert_ch4_mistake(check(wrong_axis), "columns summing to 1", "axis=-1")
    assert_ch4_mistake(check(transposed), "= (T_k, T_q)", "one row per QUERY")


# --- Chapter 3: self-attention without weights ---


def ch3_stable_softmax(scores, axis=-1):
    exponentials = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return exponentials / exponentials.sum(axis=axis, keepdims=True)


def ch3_spotlight_output(x, position):
    return ch3_stable_softmax(x @ x[position]) @ x


def ch3_batched_self_attention(x):
    weights = ch3_stable_softmax(x @ x.transpose(0, 2, 1), axis=-1)
    return weights @ x, weights


def ch3_attends_most_to_itself(x):
    scores = x @ x.T
    return np.diag(scores) >= scores.max(axis=-1)


def ch3_stub(*args):
    raise NotImplementedError


CH3_CHECKERS = {
    "spotlight_output": (exercises.check_spotlight_output, ch3_spotlight_output),
    "batched_self_attention": (
        exercises.check_batched_self_attention,
        ch3_batched_self_attention,
    ),
    "attends_most_to_itself": (
        exercises.check_attends_most_to_itself,
        ch3_attends_most_to_itself,
    ),
}


@pytest.mark.parametrize("name", CH3_CHECKERS)
def test_ch3_reference_solutions_pass(name):
    checker, solution = CH3_CHECKERS[name]
    feedback = checker(solution)
    assert feedback.passed and feedback.attempted, feedback.message


@pytest.mark.parametrize("name", CH3_CHECKERS)
def test_ch3_untouched_stubs_are_not_attempted(name):
    checker, _ = CH3_CHECKERS[name]
    feedback = checker(ch3_stub)
    assert not feedback.passed and not feedback.attempted
    assert "raise NotImplementedError" in feedback.message


def assert_ch3_mistake(feedback, *fragments):
    assert feedback.attempted and not feedback.passed, feedback
    for fragment in fragments:
        assert fragment in feedback.message, feedback.message


def test_ch3_spotlight_output_names_typical_mistakes():
    checker = exercises.check_spotlight_output

    def my_output(x, position):
        return None

    assert_ch3_mistake(checker(my_output), "my_output(x, 0)", "forget the `return`")
    assert_ch3_mistake(checker(lambda x, p: (x @ x[p]) @ x), "raw scores as weights")
    assert_ch3_mistake(checker(lambda x, p: np.exp(x @ x[p]) @ x), "without dividing")
    assert_ch3_mistake(
        checker(lambda x, p: ch3_stable_softmax(x @ x[p]) @ (x @ x[p])),
        "returned a single number",
        "not of their scores",
    )
    assert_ch3_mistake(
        checker(lambda x, p: ch3_stable_softmax(x @ x[p])), "returned 5 numbers", "weights"
    )
    assert_ch3_mistake(checker(lambda x, p: x.mean(axis=0)), "plain average")
    assert_ch3_mistake(checker(lambda x, p: x[p] + 0.0), "own vector")

    def naive(x, position):
        weights = np.exp(x @ x[position])
        return (weights / weights.sum()) @ x

    assert_ch3_mistake(checker(naive), "overflows", "Subtract the largest score")


def test_ch3_batched_self_attention_names_typical_mistakes():
    checker = exercises.check_batched_self_attention

    def wrong_axis(x):
        weights = ch3_stable_softmax(x @ x.transpose(0, 2, 1), axis=-2)
        return weights @ x, weights

    assert_ch3_mistake(checker(wrong_axis), "COLUMNS", "axis=-1")

    def full_transpose(x):
        weights = ch3_stable_softmax(x @ x.T)
        return weights @ x, weights

    assert_ch3_mistake(checker(full_transpose), "reverses ALL the axes", "swapaxes")

    def no_keepdims(x):
        exponentials = np.exp(x @ x.transpose(0, 2, 1))
        weights = exponentials / exponentials.sum()
        return weights @ x, weights

    assert_ch3_mistake(checker(no_keepdims), "do not sum to one")

    def transposed_weights(x):
        _, weights = ch3_batched_self_attention(x)
        return weights.transpose(0, 2, 1) @ x, weights

    assert_ch3_mistake(checker(transposed_weights), "transposed weights")
    assert_ch3_mistake(checker(lambda x: ch3_batched_self_attention(x)[0]), "pair (output")

    def naive(x):
        exponentials = np.exp(x @ x.transpose(0, 2, 1))
        weights = exponentials / exponentials.sum(axis=-1, keepdims=True)
        return weights @ x, weights

    assert_ch3_mistake(checker(naive), "overflow", "maximum")


def test_ch3_attends_most_to_itself_names_typical_mistakes():
    checker = exercises.check_attends_most_to_itself

    def strict(x):
        scores = x @ x.T
        return np.diag(scores) > scores.max(axis=-1)

    assert_ch3_mistake(checker(strict), "no token attends most to itself", ">=")

    def by_argmax(x):
        return np.argmax(x @ x.T, axis=-1) == np.arange(len(x))

    assert_ch3_mistake(checker(by_argmax), "positions [4]", "argmax picks only the FIRST")

    def by_column(x):
        weights = ch3_stable_softmax(x @ x.T)
        return np.diag(weights) >= weights.max(axis=0)

    assert_ch3_mistake(checker(by_column), "COLUMN")
    assert_ch3_mistake(
        checker(lambda x: ch3_attends_most_to_itself(x).astype(int)), "expected booleans"
    )
    assert_ch3_mistake(checker(lambda x: np.ones(len(x), dtype=bool)), "positions [0, 3]")


def test_ch3_attends_most_to_itself_tolerates_rounding_of_the_own_score():
    # The own score computed a second way can lose to itself by one rounding step.
    def two_ways(x):
        return (x @ x.T <= np.einsum("td,td->t", x, x)[:, None]).all(axis=-1)

    assert exercises.check_attends_most_to_itself(two_ways).passed


def test_ch3_batched_self_attention_accepts_a_list_pair():
    def as_list(x):
        output, weights = ch3_batched_self_attention(x)
        return [output, weights]

    assert exercises.check_batched_self_attention(as_list).passed


# --- Chapter 5: scaling ---


def ch5_score_scale(d_k, entry_variance, target_variance):
    return np.sqrt(target_variance) / (entry_variance * np.sqrt(d_k))


def ch5_softmax_jacobian(scores):
    from selfattn_lib.softmax import softmax

    weights = softmax(scores)
    return np.diag(weights) - np.outer(weights, weights)


def ch5_saturation_dimension(n_keys, threshold, rng, statistic=np.median):
    from selfattn_lib.softmax import softmax

    for d_k in (2**n for n in range(11)):  # 1, 2, 4, ..., 1024
        q = rng.standard_normal((2000, d_k))
        k = rng.standard_normal((2000, n_keys, d_k))
        top = softmax(np.einsum("nd,nkd->nk", q, k), axis=-1).max(axis=-1)
        if statistic(top) > threshold:
            return d_k
    return None


def ch5_stub(*args):
    raise NotImplementedError


CH5_CHECKERS = {
    "score_scale": (exercises.check_score_scale, ch5_score_scale),
    "softmax_jacobian": (exercises.check_softmax_jacobian, ch5_softmax_jacobian),
    "saturation_dimension": (exercises.check_saturation_dimension, ch5_saturation_dimension),
}


def assert_ch5_mistake(feedback, *fragments):
    assert feedback.attempted and not feedback.passed, feedback
    for fragment in fragments:
        assert fragment in feedback.message, feedback.message


@pytest.mark.parametrize("name", CH5_CHECKERS)
def test_ch5_checkers_pass_the_reference_and_report_the_stub(name):
    checker, reference = CH5_CHECKERS[name]
    assert checker(reference).passed, checker(reference)
    stub = checker(ch5_stub)
    assert not stub.attempted and "Not attempted yet" in repr(stub)


def test_ch5_score_scale_names_typical_mistakes():
    check = exercises.check_score_scale

    def only_root_d_k(d_k, entry_variance, target_variance):
        return 1 / np.sqrt(d_k)

    assert_ch5_mistake(check(only_root_d_k), "only_root_d_k(16, 4, 1)", "s² and the target")

    def variance_s2(d_k, entry_variance, target_variance):
        return np.sqrt(target_variance / (d_k * entry_variance))

    assert_ch5_mistake(check(variance_s2), "s² · s² = s⁴")

    def no_root(d_k, entry_variance, target_variance):
        return target_variance / (d_k * entry_variance**2)

    assert_ch5_mistake(check(no_root), "multiplies their variance by c²")

    def divisor(d_k, entry_variance, target_variance):
        return entry_variance * np.sqrt(d_k) / np.sqrt(target_variance)

    assert_ch5_mistake(check(divisor), "number to DIVIDE the scores by")
    assert_ch5_mistake(check(lambda d, s2, t: 0.5), "have variance", "c² d_k s⁴")


def test_ch5_softmax_jacobian_names_typical_mistakes():
    from selfattn_lib.softmax import softmax

    check = exercises.check_softmax_jacobian

    def diagonal_only(scores):
        return np.diag(softmax(scores))

    assert_ch5_mistake(check(diagonal_only), "diagonal_only([1.0, 2.0, 3.0])", "np.outer(w, w)")

    def no_off_diagonal(scores):
        weights = softmax(scores)
        return np.diag(weights * (1 - weights))

    assert_ch5_mistake(check(no_off_diagonal), "off-diagonal entries are −w_i w_j")

    def broadcast_square(scores):
        weights = softmax(scores)
        return np.diag(weights) - weights * weights

    assert_ch5_mistake(check(broadcast_square), "broadcasts the vector of squares")

    def flipped(scores):
        return -ch5_softmax_jacobian(scores)

    assert_ch5_mistake(check(flipped), "the sign is flipped")

    def naive(scores):
        weights = np.exp(scores) / np.exp(scores).sum()
        return np.diag(weights) - np.outer(weights, weights)

    assert_ch5_mistake(check(naive), "[1000.0, 999.0, 990.0]", "NaN", "stable softmax")
    assert_ch5_mistake(check(softmax), "returned shape (3,), one number per score")


def test_ch5_saturation_dimension_names_typical_mistakes():
    check = exercises.check_saturation_dimension

    def with_mean(n_keys, threshold, rng):
        return ch5_saturation_dimension(n_keys, threshold, rng, statistic=np.mean)

    assert_ch5_mistake(check(with_mean), "with_mean(8, 0.75, rng) returned 32", "the MEAN")

    def scaled(n_keys, threshold, rng):
        from selfattn_lib.softmax import softmax

        for d_k in (2**n for n in range(11)):  # 1, 2, 4, ..., 1024
            q = rng.standard_normal((2000, d_k))
            k = rng.standard_normal((2000, n_keys, d_k))
            top = softmax(np.einsum("nd,nkd->nk", q, k) / np.sqrt(d_k), axis=-1).max(axis=-1)
            if np.median(top) > threshold:
                return d_k
        return None

    assert_ch5_mistake(check(scaled), "returned None", "UNSCALED")

    def one_too_late(n_keys, threshold, rng):
        return 2 * ch5_saturation_dimension(n_keys, threshold, rng)

    assert_ch5_mistake(check(one_too_late), "returned 32", "FIRST d_k")

    def one_too_early(n_keys, threshold, rng):
        return ch5_saturation_dimension(n_keys, threshold, rng) // 2

    assert_ch5_mistake(check(one_too_early), "returned 8", "is only about")
    assert_ch5_mistake(check(lambda n, t, rng: 100), "one of d_k = 1, 2, 4")


def ch3_unshuffle(shuffled, order):
    return shuffled[np.argsort(order)]


def test_ch3_unshuffle_passes_both_inverses_and_names_typical_mistakes():
    checker = exercises.check_unshuffle
    assert checker(ch3_unshuffle).passed

    def by_assignment(shuffled, order):
        original = np.empty_like(shuffled)
        original[order] = shuffled
        return original

    assert checker(by_assignment).passed
    assert not checker(ch3_stub).attempted
    assert_ch3_mistake(checker(lambda s, o: s[o]), "a second time", "np.argsort(order)")
    assert_ch3_mistake(checker(lambda s, o: s + 0.0), "shuffled rows unchanged")
    assert_ch3_mistake(checker(lambda s, o: s[:3]), "returned shape (3, 3), expected (5, 3)")

    def my_unshuffle(shuffled, order):
        return None

    assert_ch3_mistake(checker(my_unshuffle), "my_unshuffle(shuffled", "forget the `return`")


def ch6_mha_attn_mask(mask, n_heads):
    return np.repeat(~mask, n_heads, axis=0)


def test_ch6_mha_attn_mask_reference_and_stub():
    assert exercises.check_mha_attn_mask(ch6_mha_attn_mask).passed
    feedback = exercises.check_mha_attn_mask(ch6_stub)
    assert not feedback.attempted and "raise NotImplementedError" in feedback.message


def test_ch6_mha_attn_mask_matches_torch_multihead_attention():
    torch = pytest.importorskip("torch")
    from selfattn_lib.multihead import MultiHeadParams, multi_head_attention

    rng = np.random.default_rng(0)
    params = MultiHeadParams.init(4, rng, bias=False)
    x = rng.normal(size=(2, 3, 4))
    mask = np.tril(np.ones((3, 3), dtype=bool)) & (np.arange(3) < np.array([3, 1])[:, None, None])
    mha = torch.nn.MultiheadAttention(4, 2, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(
            torch.from_numpy(np.concatenate([params.w_q.T, params.w_k.T, params.w_v.T]))
        )
        mha.out_proj.weight.copy_(torch.from_numpy(params.w_o.T))
        xt = torch.from_numpy(x)
        theirs, _ = mha(xt, xt, xt, attn_mask=torch.from_numpy(ch6_mha_attn_mask(mask, 2)))
    ours, _ = multi_head_attention(x, x, params, n_heads=2, mask=mask)
    np.testing.assert_allclose(ours, theirs.numpy(), atol=1e-12)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda m, h: np.repeat(m, h, axis=0), ["True means IGNORE"]),
        (lambda m, h: np.tile(~m, (h, 1, 1)), ["wrong order", "np.repeat"]),
        (lambda m, h: ~m, ["(B, T_q, T_k)", "B * H"]),
        (lambda m, h: np.repeat(~m[:, None], h, axis=1), ["(B, H, T_q, T_k)"]),
        (lambda m, h: np.repeat(~m, h, axis=0).astype(int), ["must be boolean"]),
    ],
)
def test_ch6_mha_attn_mask_names_typical_mistakes(answer, fragments):
    assert_ch6_mistake(exercises.check_mha_attn_mask(answer), *fragments)


# --- Chapter 8: Positional encoding ---
# (Everything from here to the end of the file tests the checkers of chapter 8.)


def ch8_angles(max_len, d_model, start=0, sign=-1.0, two=2):
    positions = np.arange(start, start + max_len)[:, None]
    return positions * 10000.0 ** (sign * np.arange(0, two * d_model // 2, two) / d_model)


def ch8_split_layout_encoding(max_len, d_model):
    angles = ch8_angles(max_len, d_model)
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)


def ch8_interleaved(max_len, d_model):
    angles = ch8_angles(max_len, d_model)
    return np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(max_len, d_model)


def ch8_wavelengths(d_model):
    return 2 * np.pi * 10000.0 ** (np.arange(0, d_model, 2) / d_model)


def ch8_closest_pair(d_model, wavelength):
    return int(np.argmin(np.abs(np.log(ch8_wavelengths(d_model) / wavelength))))


def ch8_self_attention(z, scale=True):
    scores = z @ z.T / (np.sqrt(z.shape[-1]) if scale else 1.0)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return weights / weights.sum(axis=-1, keepdims=True) @ z


def ch8_equivariance_gap(x, order, encoding, *, slot=True, reshuffle="order", reduce=np.max):
    shuffled = x[order] + encoding if slot else (x + encoding)[order]
    original = ch8_self_attention(x + encoding)
    if reshuffle == "order":
        original = original[order]
    elif reshuffle == "inverse":
        original = original[np.argsort(order)]
    return float(reduce(np.abs(ch8_self_attention(shuffled) - original)))


def ch8_slowest_angle(row, sine=-2, cosine=-1):
    return np.arctan2(row[sine], row[cosine])


def ch8_decode_position(row):
    d_model = len(row)
    angle = np.mod(ch8_slowest_angle(row), 2 * np.pi)
    return round(angle / 10000.0 ** (-(d_model - 2) / d_model))


def ch8_stub(*args):
    raise NotImplementedError


CH8_CHECKERS = {
    "split_layout_encoding": (exercises.check_split_layout_encoding, ch8_split_layout_encoding),
    "closest_pair": (exercises.check_closest_pair, ch8_closest_pair),
    "equivariance_gap": (exercises.check_equivariance_gap, ch8_equivariance_gap),
    "decode_position": (exercises.check_decode_position, ch8_decode_position),
}


@pytest.mark.parametrize("name", CH8_CHECKERS)
def test_ch8_reference_solutions_pass(name):
    checker, solution = CH8_CHECKERS[name]
    feedback = checker(solution)
    assert feedback.passed and feedback.attempted, feedback.message


@pytest.mark.parametrize("name", CH8_CHECKERS)
def test_ch8_untouched_stubs_are_not_attempted(name):
    checker, _ = CH8_CHECKERS[name]
    feedback = checker(ch8_stub)
    assert not feedback.passed and not feedback.attempted
    assert "raise NotImplementedError" in feedback.message


@pytest.mark.parametrize("name", CH8_CHECKERS)
def test_ch8_messages_use_the_learners_function_name(name):
    checker, _ = CH8_CHECKERS[name]

    def my_answer(*args):
        return None

    message = checker(my_answer).message
    assert "my_answer(" in message and "forget the `return`" in message


def assert_ch8_mistake(feedback, *fragments):
    assert feedback.attempted and not feedback.passed, feedback
    for fragment in fragments:
        assert fragment in feedback.message, feedback.message


@pytest.mark.parametrize(
    "answer",
    [
        lambda t, d: ch8_split_layout_encoding(t, d).astype(np.float32),
        lambda t, d: ch8_split_layout_encoding(t, d).tolist(),
        lambda t, d: ch8_interleaved(t, d)[:, np.r_[0:d:2, 1:d:2]],  # regroup the columns
    ],
)
def test_ch8_split_layout_encoding_accepts_equivalent_answers(answer):
    assert exercises.check_split_layout_encoding(answer).passed


def ch8_split_of(angles):
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (ch8_interleaved, ["interleaved layout", "np.concatenate"]),
        (
            lambda t, d: ch8_split_of(ch8_angles(t, d))[:, np.r_[d // 2 : d, 0 : d // 2]],
            ["cosines come first"],
        ),
        (lambda t, d: ch8_split_of(ch8_angles(t, d, two=1)[:, : d // 2]), ["exponent is 2i/D"]),
        (lambda t, d: ch8_split_of(ch8_angles(t, d, sign=1.0)), ["MULTIPLIED"]),
        (lambda t, d: ch8_split_of(ch8_angles(t, d, start=1)), ["start at 1"]),
        (lambda t, d: ch8_split_layout_encoding(t, d).T, ["= (D, T)", "one row per position"]),
        (lambda t, d: ch8_split_layout_encoding(t, d)[:, ::-1], ["is off at index"]),
    ],
)
def test_ch8_split_layout_encoding_names_typical_mistakes(answer, fragments):
    assert_ch8_mistake(exercises.check_split_layout_encoding(answer), *fragments)


def ch8_closest_pair_by_formula(d_model, wavelength):
    index = d_model / 2 * np.log(wavelength / (2 * np.pi)) / np.log(10000.0)
    return np.clip(np.round(index), 0, d_model // 2 - 1)  # a float64 holding a whole number


def test_ch8_closest_pair_accepts_the_formula():
    assert exercises.check_closest_pair(ch8_closest_pair_by_formula).passed


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda d, w: 2 * ch8_closest_pair(d, w), ["DIMENSION 2i", "i = 18"]),
        (
            lambda d, w: int(np.argmin(np.abs(np.log(ch8_wavelengths(d) / (2 * np.pi) / w)))),
            ["λ_i / 2π"],
        ),
        (
            lambda d, w: int(np.argmin(np.abs(ch8_wavelengths(d) - w))),
            ["closest by DIFFERENCE", "closest_pair(8, 300)"],
        ),
        (
            lambda d, w: int(np.argmin(np.abs(2 * np.pi / ch8_wavelengths(d) - 2 * np.pi / w))),
            ["FREQUENCY", "closest_pair(16, 100)"],
        ),
        (lambda d, w: ch8_closest_pair(d, w) + 0.5, ["whole number"]),
        (lambda d, w: d // 2, ["i = 0 … 31"]),
        (lambda d, w: min(ch8_closest_pair(d, w) + 1, d // 2 - 1), ["expected 18"]),
        (lambda d, w: [ch8_closest_pair(d, w)], ["returned shape (1,)"]),
    ],
)
def test_ch8_closest_pair_names_typical_mistakes(answer, fragments):
    assert_ch8_mistake(exercises.check_closest_pair(answer), *fragments)


def ch8_gap_by_unshuffling(x, order, encoding):
    from selfattn_lib.attention import scaled_dot_product_attention

    shuffled, original = x[order] + encoding, x + encoding
    ours = scaled_dot_product_attention(shuffled, shuffled, shuffled)[0]
    back = ours[np.argsort(order)]  # undo the shuffle instead of repeating it
    return np.abs(back - scaled_dot_product_attention(original, original, original)[0]).max()


def ch8_gap_in_float32_torch(x, order, encoding):
    import torch

    def attend(z):  # (T, D) float32 tensor: torch's default dtype
        return torch.softmax(z @ z.T / z.shape[-1] ** 0.5, dim=-1) @ z

    x_t, encoding_t = torch.tensor(x, dtype=torch.float32), torch.tensor(encoding).float()
    shuffled = attend(x_t[torch.as_tensor(order)] + encoding_t)
    return (shuffled - attend(x_t + encoding_t)[torch.as_tensor(order)]).abs().max()


@pytest.mark.parametrize("answer", [ch8_gap_by_unshuffling, ch8_gap_in_float32_torch])
def test_ch8_equivariance_gap_accepts_unshuffling_and_float32(answer):
    # float32 rounding leaves a gap of about 1e-7 where the exact gap is 0: still correct.
    feedback = exercises.check_equivariance_gap(answer)
    assert feedback.passed, feedback.message


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (
            lambda x, o, e: ch8_equivariance_gap(x, o, e, slot=False),
            ["still equivariant", "belongs to a SLOT"],
        ),
        (
            lambda x, o, e: ch8_equivariance_gap(x, o, np.zeros_like(e)),
            ["left out", "x[order] + encoding"],
        ),
        (lambda x, o, e: ch8_equivariance_gap(x, o, e, reshuffle="none"), ["UNSHUFFLED"]),
        (lambda x, o, e: ch8_equivariance_gap(x, o, e, reshuffle="inverse"), ["inverse"]),
        (lambda x, o, e: ch8_equivariance_gap(x, o, e, reduce=np.mean), ["MEAN"]),
        (
            lambda x, o, e: float(
                np.abs(
                    ch8_self_attention(x[o] + e, scale=False)
                    - ch8_self_attention(x + e, scale=False)[o]
                ).max()
            ),
            ["unscaled", "√D"],
        ),
        (lambda x, o, e: -ch8_equivariance_gap(x, o, e), ["≥ 0"]),
        (
            lambda x, o, e: float(
                (ch8_self_attention(x[o] + e) - ch8_self_attention(x + e)[o]).max()
            ),
            ["SIGNED", "np.abs"],
        ),
        (lambda x, o, e: 2 * ch8_equivariance_gap(x, o, e), ["expected"]),
        (
            lambda x, o, e: np.abs(ch8_self_attention(x[o] + e) - ch8_self_attention(x + e)[o]),
            ["returned shape (5, 4)"],
        ),
    ],
)
def test_ch8_equivariance_gap_names_typical_mistakes(answer, fragments):
    assert_ch8_mistake(exercises.check_equivariance_gap(answer), *fragments)


def ch8_decode_by_search(row):
    from selfattn_lib.positional import sinusoidal_encoding

    table = sinusoidal_encoding(20000, len(row))  # (20000, D): every allowed position
    return int(np.argmin(np.abs(table - row).sum(axis=1)))


def ch8_slowest(row):
    return 10000.0 ** (-(len(row) - 2) / len(row))


@pytest.mark.parametrize(
    "answer",
    [
        ch8_decode_by_search,
        lambda row: np.mod(ch8_slowest_angle(row), 2 * np.pi) / ch8_slowest(row),  # not rounded
        lambda row: np.int64(ch8_decode_position(np.asarray(row))),
    ],
)
def test_ch8_decode_position_accepts_equivalent_answers(answer):
    assert exercises.check_decode_position(answer).passed


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (
            lambda row: round(ch8_slowest_angle(row) / ch8_slowest(row)),
            ["(-π, π]", "np.mod(angle, 2 * np.pi)", "PE[19999] with D = 32"],
        ),
        (lambda row: round(np.arcsin(row[-2]) / ch8_slowest(row)), ["np.arcsin", "arctan2"]),
        (lambda row: round(np.arccos(row[-1]) / ch8_slowest(row)), ["np.arccos", "arctan2"]),
        (
            lambda row: round(
                np.mod(ch8_slowest_angle(row, sine=-1, cosine=-2), 2 * np.pi) / ch8_slowest(row)
            ),
            ["swapped"],
        ),
        (
            lambda row: round(np.mod(ch8_slowest_angle(row, sine=0, cosine=1), 2 * np.pi)),
            ["pair 0 repeats every 6.283 positions", "PE[7]"],
        ),
        (
            lambda row: round(np.mod(ch8_slowest_angle(row, 2, 3), 2 * np.pi) * 10000 ** (2 / 32)),
            ["pair 1 repeats"],
        ),
        (lambda row: ch8_decode_position(row) + 0.3, ["round to the nearest whole number"]),
        (lambda row: ch8_decode_position(row) + 1, ["expected 0"]),
    ],
)
def test_ch8_decode_position_names_typical_mistakes(answer, fragments):
    assert_ch8_mistake(exercises.check_decode_position(answer), *fragments)


def test_ch8_decode_position_reads_shifted_encodings():
    # A position moved by the offset rotation of the chapter is read back as p + k.
    d_model, position, offset = 64, 1234, 56
    omega = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)
    row = ch8_interleaved(position + 1, d_model)[position]
    rotated = np.empty(d_model)
    cos, sin = np.cos(offset * omega), np.sin(offset * omega)
    rotated[0::2] = row[0::2] * cos + row[1::2] * sin
    rotated[1::2] = row[1::2] * cos - row[0::2] * sin
    assert ch8_decode_position(rotated) == position + offset


# --- Chapter 11: Attention at scale ---


def ch11_longest_sequence(memory_bytes, batch, heads, bytes_per_number):
    import math

    return math.isqrt(memory_bytes // (batch * heads * bytes_per_number))


def ch11_softmax(scores):
    exponentials = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


def ch11_attend_with_cache(q_new, k_new, v_new, k_cache, v_cache):
    k_cache = np.concatenate([k_cache, k_new], axis=1)  # (B, t + 1, D_k)
    v_cache = np.concatenate([v_cache, v_new], axis=1)  # (B, t + 1, D_v)
    scores = q_new @ np.swapaxes(k_cache, 1, 2) / np.sqrt(q_new.shape[-1])  # (B, 1, t + 1)
    return ch11_softmax(scores) @ v_cache, k_cache, v_cache


def ch11_merge_states(state_a, state_b):
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = state_a, state_b
    m = np.maximum(m_a, m_b)
    factor_a, factor_b = np.exp(m_a - m), np.exp(m_b - m)
    return m, l_a * factor_a + l_b * factor_b, acc_a * factor_a[:, None] + acc_b * factor_b[:, None]


def ch11_causal_blocked_attention(q, k, v, block_size):
    n_tokens = q.shape[0]
    output = np.zeros((n_tokens, v.shape[-1]))
    for q_start in range(0, n_tokens, block_size):
        rows = np.arange(q_start, min(q_start + block_size, n_tokens))  # one block of queries
        m = np.full(rows.size, -np.inf)
        total = np.zeros(rows.size)
        acc = np.zeros((rows.size, v.shape[-1]))
        for k_start in range(0, rows[-1] + 1, block_size):  # tiles above the diagonal skipped
            cols = np.arange(k_start, min(k_start + block_size, n_tokens))
            scores = q[rows] @ k[cols].T / np.sqrt(q.shape[-1])
            scores = np.where(cols[None, :] <= rows[:, None], scores, -np.inf)
            m_new = np.maximum(m, scores.max(axis=-1))  # finite: key 0 came first
            factor = np.exp(m - m_new)
            weights = np.exp(scores - m_new[:, None])
            total = total * factor + weights.sum(axis=-1)
            acc = acc * factor[:, None] + weights @ v[cols]
            m = m_new
        output[rows] = acc / total[:, None]
    return output


def ch11_stub(*args):
    raise NotImplementedError


CH11_CHECKERS = {
    "check_longest_sequence": ch11_longest_sequence,
    "check_attend_with_cache": ch11_attend_with_cache,
    "check_merge_softmax_states": ch11_merge_states,
    "check_causal_blocked_attention": ch11_causal_blocked_attention,
}


def assert_ch11_mistake(feedback, *fragments):
    assert feedback.attempted and not feedback.passed, feedback
    for fragment in fragments:
        assert fragment in feedback.message, (fragment, feedback.message)


@pytest.mark.parametrize("name", CH11_CHECKERS)
def test_ch11_checkers_pass_the_reference_and_report_the_stub(name):
    checker = getattr(exercises, name)
    assert checker(CH11_CHECKERS[name]).passed, checker(CH11_CHECKERS[name])
    feedback = checker(ch11_stub)
    assert not feedback.attempted and "raise NotImplementedError" in feedback.message


def test_ch11_longest_sequence_accepts_other_correct_answers():
    def with_float_sqrt(memory_bytes, batch, heads, bytes_per_number):
        return int(np.sqrt(memory_bytes / (batch * heads * bytes_per_number)))

    def by_search(memory_bytes, batch, heads, bytes_per_number):
        t = 0
        while batch * heads * (t + 1) ** 2 * bytes_per_number <= memory_bytes:
            t += 1
        return np.int64(t)

    def as_float(memory_bytes, batch, heads, bytes_per_number):
        return float(np.floor(np.sqrt(memory_bytes / (batch * heads * bytes_per_number))))

    check = exercises.check_longest_sequence
    assert check(with_float_sqrt).passed
    assert check(as_float).passed
    assert check(by_search).passed


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (
            lambda m, b, h, n: int(np.sqrt(m / (b * h))),
            ["returned 17677, expected 12500", "not bytes"],
        ),
        (lambda m, b, h, n: int(np.sqrt(m / (h * n))), ["multiply by batch"]),
        (lambda m, b, h, n: int(np.sqrt(m / (b * n))), ["multiply by heads"]),
        (lambda m, b, h, n: m // (b * h * n), ["T²", "square root"]),
        (
            lambda m, b, h, n: int(np.ceil(np.sqrt(m / (b * h * n)))),
            ["(1000000000, 4, 8, 4) returned 2796, expected 2795", "round down"],
        ),
        (lambda m, b, h, n: int(np.sqrt(m / (b * h * n))) - 1, ["T = 12500 still fits"]),
        (lambda m, b, h, n: int(np.sqrt(m / (b * h * n))) + 1, ["needs", "more than"]),
        (lambda m, b, h, n: np.sqrt(m / (b * h * n)) + 0.5, ["whole number"]),
        (lambda m, b, h, n: None, ["forget the `return`"]),
    ],
)
def test_ch11_longest_sequence_names_typical_mistakes(answer, fragments):
    assert_ch11_mistake(exercises.check_longest_sequence(answer), *fragments)


def test_ch11_attend_with_cache_accepts_lists_and_other_formulations():
    def with_lists(q_new, k_new, v_new, k_cache, v_cache):
        output, keys, values = ch11_attend_with_cache(q_new, k_new, v_new, k_cache, v_cache)
        return [output.tolist(), keys, values]

    def with_einsum(q_new, k_new, v_new, k_cache, v_cache):
        keys = np.concatenate((k_cache, k_new), axis=-2)
        values = np.concatenate((v_cache, v_new), axis=-2)
        scores = np.einsum("bqd,bkd->bqk", q_new, keys) / np.sqrt(keys.shape[-1])
        return np.einsum("bqk,bkd->bqd", ch11_softmax(scores), values), keys, values

    assert exercises.check_attend_with_cache(with_lists).passed
    assert exercises.check_attend_with_cache(with_einsum).passed


def ch11_attend_then_append(q_new, k_new, v_new, k_cache, v_cache):
    if k_cache.shape[1] == 0:  # nothing to attend to yet: this bug needs the cache first
        return v_new.copy(), k_new, v_new
    scores = q_new @ np.swapaxes(k_cache, 1, 2) / np.sqrt(q_new.shape[-1])
    output = ch11_softmax(scores) @ v_cache
    return output, np.concatenate([k_cache, k_new], 1), np.concatenate([v_cache, v_new], 1)


def ch11_unscaled(q_new, k_new, v_new, k_cache, v_cache):
    return ch11_attend_with_cache(q_new * np.sqrt(q_new.shape[-1]), k_new, v_new, k_cache, v_cache)


def ch11_prepend(q_new, k_new, v_new, k_cache, v_cache):
    output, _, _ = ch11_attend_with_cache(q_new, k_new, v_new, k_cache, v_cache)
    return output, np.concatenate([k_new, k_cache], 1), np.concatenate([v_new, v_cache], 1)


def ch11_old_cache(q_new, k_new, v_new, k_cache, v_cache):
    output, _, _ = ch11_attend_with_cache(q_new, k_new, v_new, k_cache, v_cache)
    return output, k_cache, v_cache


def ch11_appended_twice(q_new, k_new, v_new, k_cache, v_cache):
    output, keys, values = ch11_attend_with_cache(q_new, k_new, v_new, k_cache, v_cache)
    return output, np.concatenate([keys, k_new], 1), values


def ch11_squeezed(q_new, k_new, v_new, k_cache, v_cache):
    output, keys, values = ch11_attend_with_cache(q_new, k_new, v_new, k_cache, v_cache)
    return output[:, 0], keys, values


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (ch11_attend_then_append, ["only to the 2 cached keys", "Append the new key"]),
        (ch11_unscaled, ["not divided by √D_k"]),
        (ch11_prepend, ["FRONT of k_cache", "append at the end"]),
        (ch11_old_cache, ["the old cache", "(2, 3, 4)"]),
        (ch11_appended_twice, ["k_cache of shape (2, 4, 4), expected (2, 3, 4)", "axis=1"]),
        (ch11_squeezed, ["shape (2, 3)", "(B, 1, D_v)"]),
        (lambda *args: ch11_attend_with_cache(*args)[0], ["three things"]),
        (lambda *args: None, ["forget the `return`"]),
    ],
)
def test_ch11_attend_with_cache_names_typical_mistakes(answer, fragments):
    assert_ch11_mistake(exercises.check_attend_with_cache(answer), *fragments)


def test_ch11_merge_states_accepts_any_equivalent_representation():
    def against_the_first_maximum_when_safe(state_a, state_b):
        m, total, acc = ch11_merge_states(state_a, state_b)
        shift = m - 1.0  # the same keys, measured from another reference point
        return shift, total * np.exp(m - shift), acc * np.exp(m - shift)[:, None]

    def as_lists(state_a, state_b):
        return [part.tolist() for part in ch11_merge_states(state_a, state_b)]

    def by_log_sum_exp(state_a, state_b):
        (m_a, l_a, acc_a), (m_b, l_b, acc_b) = state_a, state_b
        with np.errstate(divide="ignore"):
            log_a, log_b = m_a + np.log(l_a), m_b + np.log(l_b)
        log_total = np.logaddexp(log_a, log_b)
        weight_a, weight_b = np.exp(m_a - log_total), np.exp(m_b - log_total)
        acc = acc_a * weight_a[:, None] + acc_b * weight_b[:, None]
        return log_total, np.ones_like(log_total), acc

    check = exercises.check_merge_softmax_states
    assert check(against_the_first_maximum_when_safe).passed
    assert check(as_lists).passed
    assert check(by_log_sum_exp).passed


def ch11_merge_no_rescale(state_a, state_b):
    return np.maximum(state_a[0], state_b[0]), state_a[1] + state_b[1], state_a[2] + state_b[2]


def ch11_merge_upside_down(state_a, state_b):
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = state_a, state_b
    m = np.maximum(m_a, m_b)
    factor_a, factor_b = np.exp(m - m_a), np.exp(m - m_b)
    return m, l_a * factor_a + l_b * factor_b, acc_a * factor_a[:, None] + acc_b * factor_b[:, None]


def ch11_merge_acc_not_rescaled(state_a, state_b):
    m, total, _ = ch11_merge_states(state_a, state_b)
    return m, total, state_a[2] + state_b[2]


def ch11_merge_normalised(state_a, state_b):
    m, total, acc = ch11_merge_states(state_a, state_b)
    return m, total, acc / total[:, None]


def ch11_merge_against_b(state_a, state_b):
    (m_a, l_a, acc_a), (m_b, l_b, acc_b) = state_a, state_b
    factor = np.exp(m_a - m_b)  # overflows when block a has much larger scores
    return m_b, l_a * factor + l_b, acc_a * factor[:, None] + acc_b


def ch11_merge_nan_for_empty(state_a, state_b):
    if np.isinf(state_a[0]).any():
        return state_a[0] * 0 + np.nan, state_a[1], state_a[2]
    return ch11_merge_states(state_a, state_b)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (ch11_merge_no_rescale, ["added l_a + l_b", "rescale"]),
        (ch11_merge_upside_down, ["upside down"]),
        (ch11_merge_acc_not_rescaled, ["l is right but acc is not"]),
        (ch11_merge_normalised, ["already divided by l"]),
        (ch11_merge_against_b, ["scores around 1000", "overflowed", "LARGER maximum"]),
        (ch11_merge_nan_for_empty, ["empty starting state", "exp(−inf)"]),
        (lambda a, b: a, ["describes different keys"]),
        (lambda a, b: (a[0], a[1]), ["three arrays"]),
        (lambda a, b: (a[0][:2], a[1], a[2]), ["shapes (2,)"]),
    ],
)
def test_ch11_merge_states_names_typical_mistakes(answer, fragments):
    assert_ch11_mistake(exercises.check_merge_softmax_states(answer), *fragments)


def ch11_direct_causal(q, k, v, block_size, diagonal=0):
    scores = q @ k.T / np.sqrt(q.shape[-1])
    allowed = np.tril(np.ones(scores.shape, dtype=bool), k=diagonal)
    return ch11_softmax(np.where(allowed, scores, -np.inf)) @ v


def ch11_blocked_without_mask(q, k, v, block_size):
    scores = q @ k.T / np.sqrt(q.shape[-1])
    return ch11_softmax(scores) @ v


def ch11_blocked_strict(q, k, v, block_size):
    return np.nan_to_num(ch11_direct_causal(q, k, v, block_size, diagonal=-1))


def ch11_blocked_future(q, k, v, block_size):
    return ch11_direct_causal(q[::-1], k[::-1], v[::-1], block_size)[::-1]


def ch11_blocked_nan(q, k, v, block_size):
    output = np.zeros((q.shape[0], v.shape[-1]))
    m = np.full(q.shape[0], -np.inf)
    total = np.zeros(q.shape[0])
    for start in reversed(range(0, q.shape[0], block_size)):  # the last key block first
        cols = np.arange(start, min(start + block_size, q.shape[0]))
        scores = q @ k[cols].T / np.sqrt(q.shape[-1])
        scores = np.where(cols[None, :] <= np.arange(q.shape[0])[:, None], scores, -np.inf)
        m_new = np.maximum(m, scores.max(axis=-1))
        with np.errstate(invalid="ignore"):
            factor = np.exp(m - m_new)  # NaN where both are -inf
            weights = np.exp(scores - m_new[:, None])
        total = total * factor + weights.sum(axis=-1)
        output = output * factor[:, None] + weights @ v[cols]
        m = m_new
    return output / total[:, None]


def ch11_blocked_no_rescale(q, k, v, block_size):
    output = ch11_causal_blocked_attention(q, k, v, q.shape[0])  # one block: right
    return output if block_size >= q.shape[0] else output * 1.1


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (ch11_blocked_without_mask, ["WITHOUT the mask"]),
        (ch11_blocked_strict, ["hides the diagonal"]),
        (ch11_blocked_future, ["AFTER it"]),
        (ch11_blocked_no_rescale, ["is off at index"]),
        (lambda q, k, v, b: q, ["returned shape (7, 4), expected (7, 3)"]),
    ],
)
def test_ch11_causal_blocked_attention_names_typical_mistakes(answer, fragments):
    assert_ch11_mistake(exercises.check_causal_blocked_attention(answer), *fragments)


def test_ch11_causal_blocked_attention_explains_nan_from_fully_masked_blocks():
    assert ch11_blocked_nan(np.ones((3, 2)), np.ones((3, 2)), np.ones((3, 1)), 3).shape == (3, 1)
    with np.errstate(invalid="ignore"):
        feedback = exercises.check_causal_blocked_attention(ch11_blocked_nan)
    assert_ch11_mistake(feedback, "NaN", "−inf")


def test_ch11_causal_blocked_attention_accepts_the_direct_computation():
    assert exercises.check_causal_blocked_attention(ch11_direct_causal).passed


# --- Chapter 9: The encoder block ---
# (Everything from here to the end of the block tests the checkers of chapter 9.)


def ch9_rms_norm(x, gain, eps):
    return x / np.sqrt((x**2).mean(axis=-1, keepdims=True) + eps) * gain


def ch9_rms_norm_by_length(x, gain, eps):
    d_model = x.shape[-1]
    length = np.linalg.norm(x, axis=-1, keepdims=True)
    return gain * x / np.sqrt(length**2 / d_model + eps)


def ch9_layer_norm(x, gain, bias, eps=1e-5, ddof=0):
    centred = x - x.mean(axis=-1, keepdims=True)
    return gain * centred / np.sqrt(x.var(axis=-1, ddof=ddof, keepdims=True) + eps) + bias


def ch9_parameters(d_model, n_heads, d_ff):
    return 4 * d_model**2 + 4 * d_model + 2 * d_model * d_ff + d_ff + d_model + 4 * d_model


def ch9_sublayer_connection(x, sublayer, norm, norm_first):
    return x + sublayer(norm(x)) if norm_first else norm(x + sublayer(x))


def ch9_encoder_layer(x, params, n_heads, mask, norm_first, ddof=0, relu=True):
    from selfattn_lib.multihead import multi_head_attention

    def norm(v, which):
        return ch9_layer_norm(v, params[f"gain_{which}"], params[f"bias_{which}"], ddof=ddof)

    def attend(v):
        return multi_head_attention(v, v, params["attention"], n_heads, mask)[0]

    def ffn(v):
        hidden = v @ params["w_1"] + params["b_1"]
        return (np.maximum(hidden, 0.0) if relu else hidden) @ params["w_2"] + params["b_2"]

    if norm_first:
        x = x + attend(norm(x, 1))
        return x + ffn(norm(x, 2))
    x = norm(x + attend(x), 1)
    return norm(x + ffn(x), 2)


def ch9_stub(*args):
    raise NotImplementedError


CH9_CHECKERS = {
    "rms_norm": (exercises.check_rms_norm, ch9_rms_norm),
    "encoder_layer_parameters": (exercises.check_encoder_layer_parameters, ch9_parameters),
    "sublayer_connection": (exercises.check_sublayer_connection, ch9_sublayer_connection),
    "encoder_layer_numpy": (exercises.check_encoder_layer_numpy, ch9_encoder_layer),
}


def assert_ch9_mistake(feedback, *fragments):
    assert feedback.attempted and not feedback.passed, feedback
    for fragment in fragments:
        assert fragment in feedback.message, (fragment, feedback.message)


@pytest.mark.parametrize("name", CH9_CHECKERS)
def test_ch9_reference_solutions_pass(name):
    checker, solution = CH9_CHECKERS[name]
    feedback = checker(solution)
    assert feedback.passed and feedback.attempted, feedback.message


@pytest.mark.parametrize("name", CH9_CHECKERS)
def test_ch9_untouched_stubs_are_not_attempted(name):
    checker, _ = CH9_CHECKERS[name]
    feedback = checker(ch9_stub)
    assert not feedback.passed and not feedback.attempted
    assert "raise NotImplementedError" in feedback.message


def test_ch9_checkers_accept_other_correct_formulations():
    assert exercises.check_rms_norm(ch9_rms_norm_by_length).passed
    assert exercises.check_rms_norm(lambda x, g, eps: list(ch9_rms_norm(x, g, eps))).passed
    assert exercises.check_encoder_layer_parameters(
        lambda d, h, f: np.int64(ch9_parameters(d, h, f))
    ).passed
    assert exercises.check_encoder_layer_parameters(
        lambda d, h, f: float(ch9_parameters(d, h, f))
    ).passed

    def post_then_pre(x, sublayer, norm, norm_first):
        if not norm_first:
            summed = x + sublayer(x)
            return norm(summed)
        return sublayer(norm(x)) + x

    assert exercises.check_sublayer_connection(post_then_pre).passed

    def float32_layer(x, params, n_heads, mask, norm_first):
        return ch9_encoder_layer(x, params, n_heads, mask, norm_first).astype(np.float32)

    assert exercises.check_encoder_layer_numpy(float32_layer).passed
    assert exercises.check_rms_norm(lambda x, g, eps: ch9_rms_norm(x, g, eps).astype("f4")).passed


def test_ch9_encoder_layer_numpy_accepts_an_answer_built_on_the_torch_layer():
    torch = pytest.importorskip("torch")
    from selfattn_lib.transformer import EncoderLayer, MultiHeadAttention

    def with_torch(x, params, n_heads, mask, norm_first):
        d_model, d_ff = params["w_1"].shape
        layer = EncoderLayer(d_model, n_heads, d_ff, norm_first=norm_first).double().eval()
        layer.self_attention = MultiHeadAttention.from_params(params["attention"], n_heads)
        with torch.no_grad():
            forward = layer.feed_forward
            forward.w_1.weight.copy_(torch.from_numpy(params["w_1"].T))
            forward.w_1.bias.copy_(torch.from_numpy(params["b_1"]))
            forward.w_2.weight.copy_(torch.from_numpy(params["w_2"].T))
            forward.w_2.bias.copy_(torch.from_numpy(params["b_2"]))
            for which in (1, 2):
                norm = getattr(layer, f"norm_{which}")
                norm.weight.copy_(torch.from_numpy(params[f"gain_{which}"]))
                norm.bias.copy_(torch.from_numpy(params[f"bias_{which}"]))
            torch_mask = None if mask is None else torch.from_numpy(mask)
            return layer(torch.from_numpy(x), torch_mask).numpy()

    feedback = exercises.check_encoder_layer_numpy(with_torch)
    assert feedback.passed, feedback.message


def test_ch9_checkers_accept_torch_tensors_that_require_grad():
    torch = pytest.importorskip("torch")

    def with_rms_module(x, gain, eps):
        module = torch.nn.RMSNorm(x.shape[-1], eps=eps, dtype=torch.float64)
        with torch.no_grad():
            module.weight.copy_(torch.from_numpy(gain))
        return module(torch.from_numpy(x))  # requires grad: the module's weight does

    assert exercises.check_rms_norm(with_rms_module).passed

    def sublayer_as_tensor(x, sublayer, norm, norm_first):
        scale = torch.ones((), dtype=torch.float64, requires_grad=True)
        return scale * torch.from_numpy(
            np.asarray(ch9_sublayer_connection(x, sublayer, norm, norm_first))
        )

    assert exercises.check_sublayer_connection(sublayer_as_tensor).passed

    def layer_as_tensor(x, params, n_heads, mask, norm_first):
        scale = torch.ones((), dtype=torch.float64, requires_grad=True)
        return scale * torch.from_numpy(ch9_encoder_layer(x, params, n_heads, mask, norm_first))

    assert exercises.check_encoder_layer_numpy(layer_as_tensor).passed


@pytest.mark.parametrize("norm_first", [False, True])
def test_ch9_reference_encoder_layer_equals_the_torch_encoder_layer(norm_first):
    torch = pytest.importorskip("torch")
    from selfattn_lib.transformer import EncoderLayer

    layer = EncoderLayer(8, 2, 16, norm_first=norm_first).double().eval()
    with torch.no_grad():  # non-trivial norms and biases
        for parameter in layer.parameters():
            parameter.add_(0.1 * torch.randn_like(parameter))

    def numpy(tensor):
        return tensor.detach().numpy().copy()

    params = {
        "attention": layer.self_attention.to_params(),
        "w_1": numpy(layer.feed_forward.w_1.weight.T),
        "b_1": numpy(layer.feed_forward.w_1.bias),
        "w_2": numpy(layer.feed_forward.w_2.weight.T),
        "b_2": numpy(layer.feed_forward.w_2.bias),
        "gain_1": numpy(layer.norm_1.weight),
        "bias_1": numpy(layer.norm_1.bias),
        "gain_2": numpy(layer.norm_2.weight),
        "bias_2": numpy(layer.norm_2.bias),
    }
    x = np.random.default_rng(1).normal(size=(2, 4, 8))
    mask = (np.arange(4) < np.array([4, 2])[:, None])[:, None, :]
    with torch.no_grad():
        expected = layer(torch.from_numpy(x), torch.from_numpy(mask)).numpy()
    ours = exercises._ch9_encoder_layer(x, params, 2, mask, norm_first)
    np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda x, g, eps: ch9_layer_norm(x, g, 0.0, eps), ["that is layer norm"]),
        (
            lambda x, g, eps: x / (np.sqrt((x**2).mean(-1, keepdims=True)) + eps) * g,
            ["eps is added after the square root"],
        ),
        (
            lambda x, g, eps: x / ((x**2).mean(-1, keepdims=True) + eps) * g,
            ["without the square root"],
        ),
        (
            lambda x, g, eps: x / np.sqrt((x**2).sum(-1, keepdims=True) + eps) * g,
            ["root MEAN square", "√D times too small"],
        ),
        (
            lambda x, g, eps: x / np.sqrt((x**2).mean(-1, keepdims=True) + eps),
            ["the gain is missing"],
        ),
        (lambda x, g, eps: x / np.sqrt((x**2).mean(-1, keepdims=True)) * g, ["eps is missing"]),
        (
            lambda x, g, eps: x / np.sqrt((x**2).mean(0, keepdims=True) + eps) * g,
            ["first axis", "axis=-1"],
        ),
        (lambda x, g, eps: x / np.sqrt((x**2).mean() + eps) * g, ["one mean square"]),
        (
            lambda x, g, eps: x / np.sqrt(x.var(-1, keepdims=True) + eps) * g,
            ["standard deviation", "root mean square of x itself"],
        ),
        (lambda x, g, eps: None, ["forget the `return`"]),
        (lambda x, g, eps: x[..., :-1], ["returned shape"]),
    ],
)
def test_ch9_rms_norm_names_typical_mistakes(answer, fragments):
    assert_ch9_mistake(exercises.check_rms_norm(answer), *fragments)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda d, h, f: 4 * d * d + 2 * d * f, ["only the weight matrices"]),
        (lambda d, h, f: 4 * d * d + 2 * d * f + 4 * d, ["biases of the linear layers"]),
        (lambda d, h, f: ch9_parameters(d, h, f) - 4 * d, ["layer norms are missing"]),
        (lambda d, h, f: ch9_parameters(d, h, f) - 2 * d, ["TWO learned vectors"]),
        (lambda d, h, f: ch9_parameters(d, h, f) - d * d - d, ["W_O"]),
        (lambda d, h, f: ch9_parameters(d, h, f) - d * f - d, ["two weight matrices"]),
        (lambda d, h, f: ch9_parameters(d, h, 4 * d), ["d_ff = 4 · D"]),
        (lambda d, h, f: ch9_parameters(d, h, f) + 3 * h * d * d, ["does not depend on H"]),
        (lambda d, h, f: ch9_parameters(d, h, f) + 0.5, ["whole number"]),
        (lambda d, h, f: None, ["forget the `return`"]),
        (lambda d, h, f: "many", ["must return a number"]),
        (lambda d, h, f: ch9_parameters(d, h, f) + 1, ["expected 3,152,384"]),
    ],
)
def test_ch9_encoder_layer_parameters_names_typical_mistakes(answer, fragments):
    assert_ch9_mistake(exercises.check_encoder_layer_parameters(answer), *fragments)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda x, f, n, first: x + f(n(x)), ["norm_first=False", "this is pre-norm"]),
        (lambda x, f, n, first: n(x + f(x)), ["norm_first=True", "this is post-norm"]),
        (lambda x, f, n, first: x + n(f(x)), ["x + LN(Sublayer(x))", "popular blog post"]),
        (lambda x, f, n, first: n(f(x)), ["residual is missing"]),
        (lambda x, f, n, first: x + f(x), ["layer norm is missing"]),
        (lambda x, f, n, first: f(x), ["sublayer's output alone"]),
        (
            lambda x, f, n, first: n(x) + f(n(x)) if first else n(x + f(x)),
            ["NORMALISED input"],
        ),
        (
            lambda x, f, n, first: n(x + f(n(x))) if first else n(x + f(x)),
            ["normalises again after the addition"],
        ),
        (lambda x, f, n, first: None, ["forget the `return`"]),
    ],
)
def test_ch9_sublayer_connection_names_typical_mistakes(answer, fragments):
    assert_ch9_mistake(exercises.check_sublayer_connection(answer), *fragments)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (
            lambda x, p, h, m, first: ch9_encoder_layer(x, p, h, m, not first),
            ["computed pre-norm", "asks for post-norm"],
        ),
        (
            lambda x, p, h, m, first: ch9_encoder_layer(x, p, h, None, first),
            ["ignores the mask"],
        ),
        (
            lambda x, p, h, m, first: ch9_encoder_layer(x, p, h, m, first, ddof=1),
            ["D - 1", "biased variance"],
        ),
        (
            lambda x, p, h, m, first: ch9_encoder_layer(x, p, h, m, first, relu=False),
            ["no ReLU"],
        ),
        (
            lambda x, p, h, m, first: exercises._ch9_encoder_layer(
                x, p, h, m, first, eps_outside=True
            ),
            ["eps is added after the square root"],
        ),
        (
            lambda x, p, h, m, first: exercises._ch9_encoder_layer(
                x, p, h, m, first, residual=False
            ),
            ["residual connections are missing"],
        ),
        (
            lambda x, p, h, m, first: exercises._ch9_encoder_layer(
                x, p, h, m, first, swap_norms=True
            ),
            ["two layer norms are swapped"],
        ),
        (lambda x, p, h, m, first: x, ["is off at index"]),
        (lambda x, p, h, m, first: x[:, :-1], ["returned shape"]),
    ],
)
def test_ch9_encoder_layer_numpy_names_typical_mistakes(answer, fragments):
    assert_ch9_mistake(exercises.check_encoder_layer_numpy(answer), *fragments)


def test_ch9_messages_use_the_learners_function_name():
    def my_norm(x, gain, eps):
        return None

    assert "my_norm(x of shape" in exercises.check_rms_norm(my_norm).message


# --- Chapter 10: Decoder and cross-attention ---


def ch10_shift_right(tgt, bos_id):
    return np.concatenate([np.full((len(tgt), 1), bos_id), tgt[:, :-1]], axis=1)


def ch10_shift_right_torch(tgt, bos_id):
    import torch

    tgt = torch.as_tensor(tgt)
    return torch.cat([torch.full_like(tgt[:, :1], bos_id), tgt[:, :-1]], dim=1)


def ch10_shift_right_in_place_copy(tgt, bos_id):
    shifted = np.empty_like(tgt)
    shifted[:, 0], shifted[:, 1:] = bos_id, tgt[:, :-1]
    return shifted.tolist()


def ch10_decoder_self_mask(tgt, pad_id):
    causal = np.tril(np.ones((tgt.shape[1],) * 2, dtype=bool))
    return causal & (tgt != pad_id)[:, None, :]


def ch10_decoder_self_mask_loops(tgt, pad_id):
    n, t = tgt.shape
    return np.array(
        [[[j <= i and tgt[b, j] != pad_id for j in range(t)] for i in range(t)] for b in range(n)]
    )


def ch10_transformer_parameters(vocab_size, d_model, d_ff, n_layers, tied):
    attention = 4 * d_model**2 + 4 * d_model
    feed_forward = 2 * d_model * d_ff + d_ff + d_model
    encoder = attention + feed_forward + 4 * d_model
    decoder = 2 * attention + feed_forward + 6 * d_model
    return (1 if tied else 3) * vocab_size * d_model + n_layers * (encoder + decoder)


def ch10_transformer_parameters_torch(vocab_size, d_model, d_ff, n_layers, tied):
    import torch

    from selfattn_lib.transformer import Transformer, TransformerConfig, count_parameters

    config = TransformerConfig(
        vocab_size,
        vocab_size,
        d_model=d_model,
        n_heads=1,
        d_ff=d_ff,
        n_layers=n_layers,
        share_embeddings=tied,
        tie_output=tied,
    )
    with torch.device("meta"):
        return count_parameters(Transformer(config))


def ch10_greedy_decode(next_token_logits, bos_id, eos_id, max_new_tokens):
    tokens = [bos_id]
    for _ in range(max_new_tokens):
        tokens.append(int(np.argmax(next_token_logits(tokens))))
        if tokens[-1] == eos_id:
            break
    return tokens


def ch10_greedy_decode_array(next_token_logits, bos_id, eos_id, max_new_tokens):
    tokens = np.array([bos_id])
    while len(tokens) <= max_new_tokens and (len(tokens) == 1 or tokens[-1] != eos_id):
        tokens = np.append(tokens, np.argmax(next_token_logits(tokens)))
    return tokens


def ch10_stub(*args):
    raise NotImplementedError


CH10_CHECKERS = {
    "check_shift_right": [ch10_shift_right, ch10_shift_right_torch, ch10_shift_right_in_place_copy],
    "check_decoder_self_mask": [ch10_decoder_self_mask, ch10_decoder_self_mask_loops],
    "check_transformer_parameters": [
        ch10_transformer_parameters,
        ch10_transformer_parameters_torch,
        lambda *args: float(ch10_transformer_parameters(*args)),
        lambda *args: np.int64(ch10_transformer_parameters(*args)),
    ],
    "check_greedy_decode": [ch10_greedy_decode, ch10_greedy_decode_array],
}


@pytest.mark.parametrize(
    ("name", "answer"),
    [(name, answer) for name, answers in CH10_CHECKERS.items() for answer in answers],
)
def test_ch10_correct_answers_pass(name, answer):
    feedback = getattr(exercises, name)(answer)
    assert feedback.passed and feedback.attempted, feedback.message
    assert repr(feedback).startswith("✔ Correct.")


@pytest.mark.parametrize("name", CH10_CHECKERS)
def test_ch10_untouched_stubs_are_not_attempted(name):
    feedback = getattr(exercises, name)(ch10_stub)
    assert not feedback.passed and not feedback.attempted
    assert "NotImplementedError" in feedback.message


def assert_ch10_mistake(feedback, *fragments):
    assert feedback.attempted and not feedback.passed, feedback.message
    for fragment in fragments:
        assert fragment in feedback.message, feedback.message


def ch10_overwrite_in_place(tgt, bos_id):
    tgt[:, 1:] = tgt[:, :-1].copy()
    tgt[:, 0] = bos_id
    return tgt


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (
            lambda tgt, bos: np.concatenate([tgt[:, 1:], np.zeros_like(tgt[:, :1])], axis=1),
            ["to the LEFT"],
        ),
        (lambda tgt, bos: np.roll(tgt, 1, axis=1), ["np.roll", "LAST target token"]),
        (
            lambda tgt, bos: np.concatenate([np.full((len(tgt), 1), bos), tgt[:, 1:]], axis=1),
            ["writes <bos> over the first target token"],
        ),
        (
            lambda tgt, bos: np.concatenate([tgt[:, :-1], np.full((len(tgt), 1), bos)], axis=1),
            ["at the END"],
        ),
        (
            lambda tgt, bos: np.concatenate([np.full((len(tgt), 1), bos), tgt], axis=1),
            ["one column too many", "drop the last target token"],
        ),
        (lambda tgt, bos: ch10_shift_right(tgt, 1), ["not bos_id = 3"]),
        (lambda tgt, bos: ch10_shift_right(tgt, bos).astype(float), ["dtype float64"]),
        (
            lambda tgt, bos: np.concatenate([np.full((1, tgt.shape[1]), bos), tgt[:-1]], axis=0),
            ["axis 0, the batch axis"],
        ),
        (ch10_overwrite_in_place, ["changed the target it was given"]),
        (lambda tgt, bos: None, ["forget the `return`"]),
        (lambda tgt, bos: tgt, ["expected 1 (bos_id)"]),
    ],
)
def test_ch10_shift_right_names_typical_mistakes(answer, fragments):
    assert_ch10_mistake(exercises.check_shift_right(answer), *fragments)


def ch10_causal(tgt):
    return np.tril(np.ones((tgt.shape[1],) * 2, dtype=bool))


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda tgt, pad: ~ch10_decoder_self_mask(tgt, pad), ["'True = ignore'"]),
        (
            lambda tgt, pad: np.broadcast_to(
                ch10_causal(tgt), (len(tgt),) + ch10_causal(tgt).shape
            ),
            ["only the causal mask"],
        ),
        (lambda tgt, pad: ch10_causal(tgt), ["(T, T): one mask for the whole batch"]),
        (lambda tgt, pad: (tgt != pad)[:, None, :], ["only the padding part"]),
        (
            lambda tgt, pad: np.broadcast_to(
                (tgt != pad)[:, None, :], (len(tgt),) + (tgt.shape[1],) * 2
            ),
            ["not the future"],
        ),
        (lambda tgt, pad: ch10_causal(tgt) & (tgt != pad)[:, :, None], ["QUERIES (rows)"]),
        (
            lambda tgt, pad: ch10_decoder_self_mask(tgt, pad) & (tgt != pad)[:, :, None],
            ["empties the rows of the padding queries"],
        ),
        (
            lambda tgt, pad: (
                np.triu(np.ones((tgt.shape[1],) * 2, dtype=bool)) & (tgt != pad)[:, None, :]
            ),
            ["FUTURE"],
        ),
        (
            lambda tgt, pad: (
                np.tril(np.ones((tgt.shape[1],) * 2, dtype=bool), k=-1) & (tgt != pad)[:, None, :]
            ),
            ["hides the diagonal"],
        ),
        (lambda tgt, pad: ch10_decoder_self_mask(tgt, 0), ["pad_id = 9"]),
        (lambda tgt, pad: ch10_decoder_self_mask(tgt, pad).astype(int), ["must be boolean"]),
    ],
)
def test_ch10_decoder_self_mask_names_typical_mistakes(answer, fragments):
    assert_ch10_mistake(exercises.check_decoder_self_mask(answer), *fragments)


def ch10_count_with(**changes):
    """A parameter count with one typical mistake."""

    def count(vocab_size, d_model, d_ff, n_layers, tied):
        attention = 4 * d_model**2 + 4 * d_model
        feed_forward = 2 * d_model * d_ff + d_ff + d_model
        encoder = attention + feed_forward + 4 * d_model
        decoder = changes.get("n_attention", 2) * attention + feed_forward
        decoder += changes.get("n_norms", 3) * 2 * d_model
        n_matrices = changes.get("tied_matrices", 1) if tied else changes.get("untied_matrices", 3)
        total = n_matrices * vocab_size * d_model + n_layers * (encoder + decoder)
        return total + changes.get("extra", lambda v, d: 0)(vocab_size, d_model)

    return count


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (ch10_count_with(n_attention=1, n_norms=2), ["counted like an encoder layer"]),
        (ch10_count_with(n_attention=1), ["you counted one"]),
        (ch10_count_with(n_norms=2), ["three layer norms"]),
        (ch10_count_with(tied_matrices=3), ["ONE V × D matrix, counted once"]),
        (ch10_count_with(tied_matrices=0), ["embedding matrix (V × D) is missing"]),
        (ch10_count_with(untied_matrices=2), ["you counted two"]),
        (ch10_count_with(extra=lambda v, d: v), ["no bias"]),
        (ch10_count_with(extra=lambda v, d: 4 * d), ["no final layer norm"]),
        (lambda *args: None, ["forget the `return`"]),
        (lambda *args: 1.5, ["whole number"]),
        (lambda *args: [1, 2], ["one whole number"]),
        (lambda *args: 12, ["returned 12, expected 63,082,496"]),
    ],
)
def test_ch10_transformer_parameters_names_typical_mistakes(answer, fragments):
    assert_ch10_mistake(exercises.check_transformer_parameters(answer), *fragments)


def ch10_decode_with(
    *,
    keep_bos=True,
    keep_eos=True,
    stop=True,
    stop_also=(),
    extra=0,
    pick=np.argmax,
    prefix=lambda tokens: tokens,
):
    def decode(next_token_logits, bos_id, eos_id, max_new_tokens):
        tokens = [bos_id]
        for _ in range(max_new_tokens + extra):
            tokens.append(int(pick(next_token_logits(prefix(tokens)))))
            if (stop and tokens[-1] == eos_id) or tokens[-1] in stop_also:
                break
        if not keep_eos and tokens[-1] == eos_id:
            tokens = tokens[:-1]
        return tokens if keep_bos else tokens[1:]

    return decode


def ch10_sampling_decode(next_token_logits, bos_id, eos_id, max_new_tokens):
    rng = np.random.default_rng()
    tokens = [bos_id]
    for _ in range(max_new_tokens):
        logits = next_token_logits(tokens)
        probabilities = np.exp(logits - logits.max())
        tokens.append(int(rng.choice(len(logits), p=probabilities / probabilities.sum())))
        if tokens[-1] == eos_id:
            break
    return tokens


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (ch10_decode_with(keep_bos=False), ["without <bos> at the start"]),
        (ch10_decode_with(keep_eos=False), ["leaves it out"]),
        (ch10_decode_with(stop=False), ["keeps writing after <eos>"]),
        (ch10_decode_with(stop_also=(1,)), ["stops at token 1, which is not eos_id"]),
        (ch10_decode_with(stop_also=(0,)), ["stops at token 0, which is not eos_id"]),
        (ch10_decode_with(extra=1), ["more than max_new_tokens = 3"]),
        (ch10_decode_with(extra=-1), ["it should add up to"]),
        (ch10_decode_with(pick=np.argmin), ["LOWEST score"]),
        (ch10_decode_with(prefix=lambda tokens: tokens[-1:]), ["pass the WHOLE prefix"]),
        (
            ch10_decode_with(prefix=lambda tokens: tokens[1:] or tokens),
            ["next_token_logits with [7]"],
        ),
        (lambda f, b, e, m: None, ["forget the `return`"]),
        (lambda f, b, e, m: [[1.0, 2.0]], ["flat list of integer token ids"]),
    ],
)
def test_ch10_greedy_decode_names_typical_mistakes(answer, fragments):
    assert_ch10_mistake(exercises.check_greedy_decode(answer), *fragments)


def test_ch10_greedy_decode_notices_sampling():
    feedback = exercises.check_greedy_decode(ch10_sampling_decode)
    assert feedback.attempted and not feedback.passed
