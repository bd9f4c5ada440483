"""Tests of the checkers of chapter 2 (selfattn_lib.exercises.ch02_softmax): each names
the mistake in typical wrong answers and accepts the usual correct alternatives. What every
checker promises is tested once, over REFERENCES, in test_exercises_registry.py."""

import numpy as np
import pytest

from selfattn_lib import exercises


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


def ch2_log_sum_exp(scores):
    largest = scores.max()
    return largest + np.log(np.exp(scores - largest).sum())


def ch2_log_softmax(scores):
    largest = scores.max(axis=-1, keepdims=True)
    return scores - largest - np.log(np.exp(scores - largest).sum(axis=-1, keepdims=True))


def ch2_stub(*args):
    raise NotImplementedError


CH2_CHECKERS = {
    "weights_after_scaling": (exercises.check_weights_after_scaling, ch2_weights_after_scaling),
    "temperature_for_top_weight": (
        exercises.check_temperature_for_top_weight,
        ch2_temperature_for_top_weight,
    ),
    "log_sum_exp": (exercises.check_log_sum_exp, ch2_log_sum_exp),
    "log_softmax": (exercises.check_log_softmax, ch2_log_softmax),
}


def assert_ch2_mistake(feedback, *fragments):
    assert feedback.attempted and not feedback.passed, feedback
    for fragment in fragments:
        assert fragment in feedback.message, feedback.message


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


def test_ch2_log_softmax_names_typical_mistakes():
    checker = exercises.check_log_softmax
    with np.errstate(all="raise"):  # the checker, not the test, must silence the warnings
        log_of_weights = checker(lambda s: np.log(ch2_stable_softmax(s)))
    assert_ch2_mistake(log_of_weights, "gives -inf at (0, 1)", "rounds to 0.0", "log(0)")

    def naive(scores):
        exponentials = np.exp(scores)
        return np.log(exponentials / exponentials.sum(axis=-1, keepdims=True))

    assert_ch2_mistake(checker(naive), "row 0", "[1000, 1001, 1002]", "overflow")

    def matrix_maximum(scores):
        shifted = scores - scores.max()
        return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))

    assert_ch2_mistake(checker(matrix_maximum), "row 1", "OWN maximum")
    assert_ch2_mistake(checker(ch2_stable_softmax), "returned the weights, not their log")
    assert_ch2_mistake(
        checker(lambda s: s - s.max(axis=-1, keepdims=True)), "minus each row's maximum"
    )

    def not_added_back(scores):
        largest = scores.max(axis=-1, keepdims=True)
        return scores - np.log(np.exp(scores - largest).sum(axis=-1, keepdims=True))

    assert_ch2_mistake(checker(not_added_back), "not_added_back(", "add m back")

    def columns(scores):
        largest = scores.max(axis=0, keepdims=True)
        return scores - largest - np.log(np.exp(scores - largest).sum(axis=0, keepdims=True))

    assert_ch2_mistake(checker(columns), "COLUMN (axis=0)")

    def no_keepdims(scores):
        largest = scores.max(axis=-1, keepdims=True)
        return scores - (largest[:, 0] + np.log(np.exp(scores - largest).sum(axis=-1)))

    assert_ch2_mistake(checker(no_keepdims), "row j from column j", "keepdims=True")

    def no_keepdims_anywhere(scores):
        shifted = scores - scores.max(axis=-1)
        return shifted - np.log(np.exp(shifted).sum(axis=-1))

    assert_ch2_mistake(checker(no_keepdims_anywhere), "shifted by row j's", "keepdims=True")

    def no_keepdims_on_the_second_matrix(scores):
        if scores.shape[0] == scores.shape[1]:
            return ch2_log_softmax(scores)
        return scores - scores.max(axis=-1)  # (2, 3) - (2,): NumPy refuses

    assert_ch2_mistake(
        checker(no_keepdims_on_the_second_matrix), "broadcast", "keepdims=True", "(2, 1)"
    )

    def one_total(scores):
        largest = scores.max()
        return scores - largest - np.log(np.exp(scores - largest).sum())

    assert_ch2_mistake(checker(one_total), "over the whole matrix")
    assert_ch2_mistake(checker(lambda s: s - 1.0), "sum to [")

    def in_place(scores):
        scores -= scores.max(axis=-1, keepdims=True)
        return scores - np.log(np.exp(scores).sum(axis=-1, keepdims=True))

    assert_ch2_mistake(checker(in_place), "changed the array it was given")
    # Going through the library's log-sum-exp is right too.
    from selfattn_lib.softmax import log_sum_exp

    assert checker(lambda s: s - log_sum_exp(s, axis=-1)[:, None]).passed


# Every checker of the chapter with a correct answer: test_exercises_registry.py runs them.
REFERENCES = {
    **{checker.__name__: solution for checker, solution in CH2_CHECKERS.values()},
}
