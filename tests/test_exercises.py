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
