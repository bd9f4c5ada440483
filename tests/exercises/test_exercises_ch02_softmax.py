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

    assert_ch2_mistake(
        checker(in_place), "changed the array `weights` it was given", "`weights ** factor`"
    )
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

    assert_ch2_mistake(checker(in_place), "changed the array `scores` it was given")
    # Going through the library's log-sum-exp is right too.
    from selfattn_lib.softmax import log_sum_exp

    assert checker(lambda s: s - log_sum_exp(s, axis=-1)[:, None]).passed


# Every checker of the chapter with a correct answer: test_exercises_registry.py runs them.
REFERENCES = {
    **{checker.__name__: solution for checker, solution in CH2_CHECKERS.values()},
}


# --- Plausible mistakes written from each prompt alone, and correct variants ---


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda w, k: w * k, ["multiplied the WEIGHTS by 2", "power 2"]),
        (lambda w, k: k * np.log(w), ["returned k·log w", "softmax"]),
        (lambda w, k: w**k / (w**k).max(), ["by the LARGEST one", "their total"]),
        (lambda w, k: np.round(ch2_weights_after_scaling(w, k), 3), ["rounded to 3 decimals"]),
        (lambda w, k: ch2_stable_softmax(w + k), ["softmax of the weights, as if"]),
        (lambda w, k: w**k, ["sum to 0.510543, not 1", "divide by the new total"]),
        (
            lambda w, k: np.power(w, k, out=w) / w.sum(),
            ["changed the array `weights` it was given", "`weights ** factor` into a new"],
        ),
    ],
)
def test_ch2_weights_after_scaling_names_more_mistakes(answer, fragments):
    assert_ch2_mistake(exercises.check_weights_after_scaling(answer), *fragments)


@pytest.mark.parametrize(
    "answer",
    [
        lambda w, k: np.exp(k * np.log(w)) / np.exp(k * np.log(w)).sum(),
        lambda w, k: ch2_stable_softmax(k * (np.log(w) - np.log(w[0]))),
        lambda w, k: np.power(w, k) / np.sum(np.power(w, k)),
        lambda w, k: ch2_weights_after_scaling(w.astype(np.float32), np.float32(k)),
    ],
)
def test_ch2_weights_after_scaling_accepts_correct_variants(answer):
    feedback = exercises.check_weights_after_scaling(answer)
    assert feedback.passed, feedback.message


def ch2_bisect_on(weight_of, scores, target, low=1e-3, high=1e6):
    for _ in range(200):
        middle = np.sqrt(low * high)
        if weight_of(ch2_stable_softmax(scores / middle)) > target:
            low = middle
        else:
            high = middle
    return np.sqrt(low * high)


def ch2_bisect_log_tau_without_exp(scores, target):
    low, high = np.log(1e-3), np.log(1e6)
    for _ in range(100):
        middle = (low + high) / 2
        if ch2_top_weight(scores, np.exp(middle)) > target:
            low = middle
        else:
            high = middle
    return (low + high) / 2  # log τ, not τ


def ch2_two_score_formula(scores, target):
    # σ((z_1 - z_2) / τ) = target, the sigmoid of two scores, used on a row of n
    first, second = np.sort(scores)[::-1][:2]
    return (first - second) / np.log(target / (1 - target))


def ch2_tied_others_formula(scores, target):
    # 1 / (1 + (n - 1) e^(-(z_1 - z_2) / τ)) = target: as if the other scores were all z_2
    first, second = np.sort(scores)[::-1][:2]
    return (first - second) / np.log((len(scores) - 1) * target / (1 - target))


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (ch2_bisect_log_tau_without_exp, ["which is log τ", "exponential"]),
        (
            lambda s, t: ch2_bisect_on(lambda w: w[0], s, t),
            ["in the order [2.5, 1.0, 0.3, -1.2] your τ is right", "LARGEST weight"],
        ),
        (
            lambda s, t: ch2_bisect_on(lambda w: w[-1], s, t),
            ["in the order [0.0, 1.0, 2.0] your τ is right", "LARGEST weight"],
        ),
        (
            lambda s, t: ch2_bisect_on(lambda w: w.max(), s, t, low=1e-2, high=1.0),
            ["τ is too low", "widen it until they do"],
        ),
        (
            lambda s, t: ch2_bisect_on(lambda w: w.max(), s, t, low=1.0, high=1e3),
            ["τ is too high", "widen it until they do"],
        ),
        (lambda s, t: np.array([ch2_temperature_for_top_weight(s, t)]), ["expected ()"]),
        (
            ch2_two_score_formula,
            [
                "returned 0.45512,",
                "if the row held only its two largest scores",
                "search for τ on the whole row",
            ],
        ),
        (
            ch2_tied_others_formula,
            [
                "returned 0.345976,",
                "if every other score equalled the second largest",
            ],
        ),
        (
            lambda s, t: ch2_bisect_temperature(s, t, halvings=10),
            ["τ is too high", "shorter than 1e-12 (about 100 halvings)"],
        ),
    ],
)
def test_ch2_temperature_for_top_weight_names_more_mistakes(answer, fragments):
    assert_ch2_mistake(exercises.check_temperature_for_top_weight(answer), *fragments)


def ch2_linear_bisection(scores, target):
    low, high = 1e-3, 1e3
    while high - low > 1e-13 * high:
        middle = (low + high) / 2
        if ch2_top_weight(scores, middle) > target:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def ch2_bisection_on_inverse(scores, target):
    low, high = 1e-6, 1e3  # β = 1/τ: the top weight grows with β
    for _ in range(200):
        middle = np.sqrt(low * high)
        if ch2_top_weight(scores, 1 / middle) < target:
            low = middle
        else:
            high = middle
    return 1 / np.sqrt(low * high)


def ch2_widening_bisection(scores, target):
    low, high = 1.0, 1.0
    while ch2_top_weight(scores, low) <= target:
        low /= 2
    while ch2_top_weight(scores, high) >= target:
        high *= 2
    for _ in range(100):
        middle = np.sqrt(low * high)
        if ch2_top_weight(scores, middle) > target:
            low = middle
        else:
            high = middle
    return np.sqrt(low * high)


def ch2_secant_on_log_tau(scores, target):
    def gap(log_tau):
        return np.log(ch2_top_weight(scores, np.exp(log_tau))) - np.log(target)

    x0, x1 = np.log(ch2_bisect_temperature(scores, target, halvings=12)), 0.0
    x1 = x0 + 1e-3
    for _ in range(50):
        g0, g1 = gap(x0), gap(x1)
        if g1 == g0:
            break
        x0, x1 = x1, x1 - g1 * (x1 - x0) / (g1 - g0)
    return float(np.exp(x1))


@pytest.mark.parametrize(
    "answer",
    [ch2_linear_bisection, ch2_bisection_on_inverse, ch2_widening_bisection, ch2_secant_on_log_tau],
)
def test_ch2_temperature_for_top_weight_accepts_correct_variants(answer):
    feedback = exercises.check_temperature_for_top_weight(answer)
    assert feedback.passed, feedback.message


def ch2_log_sum_exp_in_place(scores):
    largest = scores.max()
    scores -= largest  # the right value, but the caller's scores change
    return largest + np.log(np.exp(scores).sum())


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda s: s.max() + np.log(s.size), ["returned max + log n, its upper bound"]),
        (
            lambda s: np.log(np.exp(s - s.max())).sum() + s.max(),
            ["logarithm of each exponential before adding"],
        ),
        (lambda s: np.exp(s - s.max()).sum(), ["sum of the shifted exponentials"]),
        (lambda s: s.max() + np.log1p(np.exp(s - s.max()).sum()), ["np.log1p"]),
        (lambda s: np.round(ch2_log_sum_exp(s), 2), ["rounded to 2 decimals"]),
        (
            lambda s: s.mean() + np.log(np.exp(s - s.mean()).sum()),
            ["[-1000.0, 0.0, 1000.0]", "709.78"],
        ),
        (
            lambda s: s.min() + np.log(np.exp(s - s.min()).sum()),
            ["[-1000.0, 0.0, 1000.0]", "709.78"],
        ),
        (ch2_log_sum_exp_in_place, ["changed the array `scores` it was given"]),
    ],
)
def test_ch2_log_sum_exp_names_more_mistakes(answer, fragments):
    assert_ch2_mistake(exercises.check_log_sum_exp(answer), *fragments)


@pytest.mark.parametrize(
    "answer",
    [
        lambda s: np.logaddexp.reduce(s),
        lambda s: float(s.max() + np.log(np.sum(np.exp(s - s.max())))),
        lambda s: np.max(s) + np.log(np.exp(s - np.max(s)).sum(dtype=np.float64)),
    ],
)
def test_ch2_log_sum_exp_accepts_correct_variants(answer):
    feedback = exercises.check_log_sum_exp(answer)
    assert feedback.passed, feedback.message


def test_ch2_log_sum_exp_and_log_softmax_accept_torch():
    torch = pytest.importorskip("torch")
    lse = exercises.check_log_sum_exp(lambda s: torch.logsumexp(torch.from_numpy(s), dim=-1))
    assert lse.passed, lse.message
    log_softmax = exercises.check_log_softmax(
        lambda s: torch.log_softmax(torch.from_numpy(s), dim=-1)
    )
    assert log_softmax.passed, log_softmax.message


def ch2_keepdims_missing_in_the_sum(scores):
    shifted = scores - scores.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1))


def ch2_keepdims_missing_in_the_maximum(scores):
    shifted = scores - scores.max(axis=-1)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def ch2_own_maximum_one_total(scores):
    shifted = scores - scores.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum())


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (ch2_keepdims_missing_in_the_sum, ["log of row j's total", "keepdims=True"]),
        (ch2_keepdims_missing_in_the_maximum, ["maximum of row j", "keepdims=True"]),
        (
            lambda s: np.log(np.clip(ch2_stable_softmax(s), 1e-300, None)),
            ["where the weight rounds to 0.0", "Clipping the weights"],
        ),
        (
            lambda s: np.log(ch2_stable_softmax(s) + 1e-12),
            ["-27.631", "adding a small number"],
        ),
        (ch2_own_maximum_one_total, ["one total of the whole matrix", "sum(axis=-1"]),
        (lambda s: np.round(ch2_log_softmax(s), 3), ["rounded to 3 decimals"]),
    ],
)
def test_ch2_log_softmax_names_more_mistakes(answer, fragments):
    with np.errstate(all="raise"):  # the checker, not the test, must silence the warnings
        feedback = exercises.check_log_softmax(answer)
    assert_ch2_mistake(feedback, *fragments)


@pytest.mark.parametrize(
    "answer",
    [
        lambda s: s - np.logaddexp.reduce(s, axis=-1, keepdims=True),
        lambda s: (s.T - (s.max(axis=1) + np.log(np.exp(s.T - s.max(axis=1)).sum(axis=0)))).T,
        lambda s: s - s.max(-1)[:, None] - np.log(np.exp(s - s.max(-1)[:, None]).sum(-1))[:, None],
    ],
)
def test_ch2_log_softmax_accepts_correct_variants(answer):
    feedback = exercises.check_log_softmax(answer)
    assert feedback.passed, feedback.message
