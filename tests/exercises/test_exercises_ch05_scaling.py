"""Tests of the checkers of chapter 5 (selfattn_lib.exercises.ch05_scaling): each names
the mistake in typical wrong answers and accepts the usual correct alternatives. What every
checker promises is tested once, over REFERENCES, in test_exercises_registry.py."""

import numpy as np
import pytest

from selfattn_lib import exercises


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

    assert_ch5_mistake(
        check(no_root),
        "no_root(64, 1, 1) returned 0.015625",
        "ratio of the VARIANCES, which is c², not c",
        "variance σ⁴ / (d_k s⁴) = 0.015625 instead of σ² = 1",
    )

    def divisor(d_k, entry_variance, target_variance):
        return entry_variance * np.sqrt(d_k) / np.sqrt(target_variance)

    assert_ch5_mistake(check(divisor), "number to DIVIDE the scores by")
    assert_ch5_mistake(check(lambda d, s2, t: 0.5), "have variance", "c² d_k s⁴")


def test_ch5_score_scale_says_what_the_missing_square_root_does_to_the_variance():
    """c = σ² / (d_k s⁴) gives scores of variance c² d_k s⁴ = σ⁴ / (d_k s⁴): derived here
    and measured by simulation, and that is what the feedback says (not that it sets the
    standard deviation to σ², which holds only when d_k s⁴ = 1)."""
    d_k, s2, t = 9, 2.0, 9.0  # the checker's last case, where the slip is not the answer
    c = t / (d_k * s2**2)
    rng = np.random.default_rng(0)
    q = rng.normal(scale=np.sqrt(s2), size=(200_000, d_k))
    k = rng.normal(scale=np.sqrt(s2), size=(200_000, d_k))
    measured = np.var(c * (q * k).sum(axis=-1))
    derived = t**2 / (d_k * s2**2)
    assert abs(measured / derived - 1) < 0.02
    assert abs(np.sqrt(derived) - t) > 1  # its standard deviation is not σ² = 9

    def no_root_last_case(d_k, entry_variance, target_variance):
        if (d_k, entry_variance, target_variance) == (9, 2.0, 9.0):
            return target_variance / (d_k * entry_variance**2)
        return ch5_score_scale(d_k, entry_variance, target_variance)

    feedback = exercises.check_score_scale(no_root_last_case)
    assert_ch5_mistake(feedback, f"variance σ⁴ / (d_k s⁴) = {derived:.6g} instead of σ² = 9")
    assert "STANDARD DEVIATION" not in feedback.message


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


# Every checker of the chapter with a correct answer: test_exercises_registry.py runs them.
REFERENCES = {
    **{checker.__name__: solution for checker, solution in CH5_CHECKERS.values()},
}


def test_ch5_softmax_jacobian_from_autograd_breaks_the_prompts_rule():
    torch = pytest.importorskip("torch")

    def with_autograd(scores):
        jacobian = torch.autograd.functional.jacobian(
            lambda z: torch.softmax(z, dim=-1), torch.as_tensor(scores, dtype=torch.float64)
        )
        return jacobian.numpy()

    feedback = exercises.check_softmax_jacobian(with_autograd)
    assert feedback.attempted and not feedback.passed
    assert "but it calls `torch." in feedback.message, feedback.message


def test_ch5_softmax_jacobian_entry_by_entry_is_not_one_matrix_expression():
    def entry_by_entry(scores):
        w = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
        n = len(w)
        return np.array([[w[i] * ((i == j) - w[j]) for j in range(n)] for i in range(n)])

    feedback = exercises.check_softmax_jacobian(entry_by_entry)
    assert feedback.attempted and not feedback.passed
    assert "a loop runs once per item" in feedback.message, feedback.message


def test_ch5_saturation_dimension_that_loops_over_the_queries_is_turned_down():
    from selfattn_lib.softmax import softmax

    def query_by_query(n_keys, threshold, rng):
        for d_k in (2**n for n in range(11)):
            q = rng.standard_normal((2000, d_k))
            k = rng.standard_normal((2000, n_keys, d_k))
            top = [softmax(k[n] @ q[n]).max() for n in range(2000)]
            if np.median(top) > threshold:
                return d_k
        return None

    feedback = exercises.check_saturation_dimension(query_by_query)
    assert feedback.attempted and not feedback.passed
    assert "more than one per query (2,000 queries per d_k)" in feedback.message, feedback.message
