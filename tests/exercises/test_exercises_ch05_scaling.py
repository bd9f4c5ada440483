"""Tests of the checkers of chapter 5 (selfattn_lib.exercises.ch05_scaling): each names
the mistake in typical wrong answers and accepts the usual correct alternatives. What every
checker promises is tested once, over REFERENCES, in test_exercises_registry.py."""

import math

import numpy as np
import pytest

from selfattn_lib import exercises


def ch5_score_scale(d_k, entry_variance, target_variance):
    return np.sqrt(target_variance) / (entry_variance * np.sqrt(d_k))


def ch5_softmax_jacobian(scores):
    from selfattn_lib.softmax import softmax

    weights = softmax(scores)
    return np.diag(weights) - np.outer(weights, weights)


def ch5_saturation_dimension(
    n_keys,
    threshold,
    rng,
    statistic=np.median,
    *,
    first=0,
    scaled=False,
    keys=None,
    top=lambda weights: weights.max(axis=-1),
    softmax_axis=-1,
    stop=True,
):
    """The reference search, or one of the usual slips (each keyword changes one thing)."""
    from selfattn_lib.softmax import softmax

    found = None
    for d_k in (2**n for n in range(first, 11)):  # 1, 2, 4, ..., 1024
        q = rng.standard_normal((2000, d_k))
        k = rng.standard_normal((2000, keys or n_keys, d_k))
        dots = np.einsum("nd,nkd->nk", q, k)
        weights = softmax(dots / np.sqrt(d_k) if scaled else dots, axis=softmax_axis)
        if statistic(top(weights)) > threshold:
            found = d_k
            if stop:
                return found
    return found


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


def ch5_scale(d_k, s2, t, *, root_target=True, fourth=True, root_all=True):
    """c = σ / (s² √d_k), or one of the usual slips."""
    target = np.sqrt(t) if root_target else t
    spread = d_k * (s2**2 if fourth else s2)  # Var(q·k) = d_k s⁴
    return target / np.sqrt(spread) if root_all else target / spread


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda d, s2, t: 1 / np.sqrt(d), ["(100, 0.25, 9) returned 0.1", "s² and the target"]),
        (lambda d, s2, t: 1 / (s2 * np.sqrt(d)), ["the target σ² is missing"]),
        (lambda d, s2, t: ch5_scale(d, s2, t, fourth=False), ["s² · s² = s⁴"]),
        (lambda d, s2, t: np.sqrt(t) / (np.sqrt(s2) * np.sqrt(d)), ["σ / (s √d_k)"]),
        (
            lambda d, s2, t: t / (d * s2**2),
            ["returned 1.44", "ratio of the VARIANCES, which is c², not c", "= 12.96 instead"],
        ),
        (lambda d, s2, t: ch5_scale(d, s2, t, root_target=False), ["σ² where its square root"]),
        (lambda d, s2, t: ch5_scale(d, s2, t, root_all=False), ["instead of by its square root"]),
        (lambda d, s2, t: np.sqrt(t) / (d * s2), ["not by d_k s²"]),
        (lambda d, s2, t: s2 * np.sqrt(d) / np.sqrt(t), ["number to DIVIDE"]),
        (lambda d, s2, t: -ch5_scale(d, s2, t), ["must be positive (c > 0)", "flips the sign"]),
        (lambda d, s2, t: t**1 / 2 / (s2 * np.sqrt(d)), ["** binds tighter than /"]),
        (lambda d, s2, t: (t / (d * s2**2)) ** 1 / 2, ["** binds tighter than /"]),
        (lambda d, s2, t: round(ch5_scale(d, s2, t), 2), ["(64, 1, 1) returned 0.12", "round"]),
        (lambda d, s2, t: 0.0, ["must be positive (c > 0)"]),
        (lambda d, s2, t: 0.5, ["have variance 1.5625, not 9", "c² d_k s⁴"]),
        (lambda d, s2, t: np.array([ch5_scale(d, s2, t)]), ["shape (1,), expected ()"]),
        (
            lambda d, s2, t: int(np.sqrt(t)) / (s2 * np.sqrt(d)),
            ["(32, 4, 7) returned 0.0883883", "rounded σ = √σ² = 2.64575 to the whole number 2"],
        ),
        (
            lambda d, s2, t: math.isqrt(int(t)) / (s2 * math.sqrt(d)),
            ["rounded σ = √σ² = 2.64575 to the whole number 2"],
        ),
        (
            lambda d, s2, t: round(math.sqrt(t)) / (s2 * math.sqrt(d)),
            ["rounded σ = √σ² = 2.64575 to the whole number 3"],
        ),
    ],
    ids=[
        "1/sqrt(d_k)",
        "target forgotten",
        "s2 for s4",
        "s for s2",
        "ratio of variances",
        "sigma2 for sigma",
        "variance for std",
        "d_k s2",
        "divisor",
        "negative",
        "** 1/2 on the target",
        "** 1/2 on the ratio",
        "rounded",
        "zero",
        "a constant",
        "an array of one",
        "int(sigma)",
        "isqrt",
        "round(sigma)",
    ],
)
def test_ch5_score_scale_names_typical_mistakes(answer, fragments):
    assert_ch5_mistake(exercises.check_score_scale(answer), *fragments)


@pytest.mark.parametrize(
    "answer",
    [
        lambda d, s2, t: (t / (d * s2**2)) ** 0.5,
        lambda d, s2, t: math.sqrt(t) / (s2 * math.sqrt(d)),
        lambda d, s2, t: np.sqrt(t) / s2 / np.sqrt(d),
        lambda d, s2, t: np.float32(ch5_scale(d, s2, t)),
        lambda d, s2, t: np.array(ch5_scale(d, s2, t)),
    ],
    ids=["power", "math", "two divisions", "float32", "0-d array"],
)
def test_ch5_score_scale_accepts_correct_variants(answer):
    assert exercises.check_score_scale(answer).passed


def test_ch5_score_scale_accepts_a_torch_scalar():
    torch = pytest.importorskip("torch")
    answer = lambda d, s2, t: torch.tensor(t).sqrt() / (s2 * math.sqrt(d))  # noqa: E731
    assert exercises.check_score_scale(answer).passed


def test_ch5_score_scale_first_case_tells_every_slip_apart():
    """The first case decides: no two slips of the catalogue give the same number there, so
    the first match is the learner's slip (at (64, 1, 1) six of them would coincide)."""
    d, s2, t = 100, 0.25, 9.0
    values = [
        1 / np.sqrt(d),
        1 / (s2 * np.sqrt(d)),
        ch5_scale(d, s2, t, fourth=False),
        t / (d * s2**2),
        ch5_scale(d, s2, t, root_target=False),
        ch5_scale(d, s2, t, root_all=False),
        np.sqrt(t) / (d * s2),
        s2 * np.sqrt(d) / np.sqrt(t),
        -ch5_scale(d, s2, t),
        t / 2 / (s2 * np.sqrt(d)),
        t / (d * s2**2) / 2,
        ch5_scale(d, s2, t),
    ]
    assert len({round(value, 9) for value in values}) == len(values)


def test_ch5_score_scale_says_what_the_missing_square_root_does_to_the_variance():
    """c = σ² / (d_k s⁴) gives scores of variance c² d_k s⁴ = σ⁴ / (d_k s⁴): derived here
    and measured by simulation, and that is what the feedback says (not that it sets the
    standard deviation to σ², which holds only when d_k s⁴ = 1)."""
    d_k, s2, t = 9, 2.0, 9.0  # the checker's fourth case, where the slip is not the answer
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


def ch5_weights(scores):
    exponentials = np.exp(scores - scores.max())
    return exponentials / exponentials.sum()


def ch5_jacobian_of(weights):
    return np.diag(weights) - np.outer(weights, weights)


def ch5_jacobian_in_place(scores):
    scores -= scores.max()  # changes the caller's array
    return ch5_jacobian_of(np.exp(scores) / np.exp(scores).sum())


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda z: np.diag(ch5_weights(z)), ["([1.0, 2.0, 3.0])", "only diag(w)", "np.outer"]),
        (
            lambda z: np.diag(ch5_weights(z) * (1 - ch5_weights(z))),
            ["off-diagonal entries are −w_i w_j"],
        ),
        (lambda z: -ch5_softmax_jacobian(z), ["the sign is flipped"]),
        (
            lambda z: np.diag(ch5_weights(z)) - ch5_weights(z) * ch5_weights(z),
            ["broadcasts the vector of squares"],
        ),
        (
            lambda z: np.diag(ch5_weights(z)) - ch5_weights(z)[:, None] ** 2,
            ["w_i² in every entry of row i"],
        ),
        (lambda z: ch5_jacobian_of(z), ["you used the scores z"]),
        (lambda z: np.eye(len(z)) - ch5_weights(z)[None, :], ["without the factor w_i"]),
        (
            lambda z: ch5_weights(z)[:, None] * (1 - ch5_weights(z)[None, :]),
            ["the 1 belongs on the diagonal only"],
        ),
        (
            lambda z: np.diag(ch5_weights(z)) - ch5_weights(z) @ ch5_weights(z),
            ["w @ w, the inner product"],
        ),
        (lambda z: ch5_jacobian_of(np.exp(z - z.max())), ["divide them by their sum"]),
        (lambda z: ch5_jacobian_of(ch5_weights(-z)), ["softmax of −z"]),
        (
            lambda z: ch5_jacobian_of(np.exp(z) / np.exp(z).sum()),
            ["[1000.0, 999.0, 990.0]", "NaN", "stable softmax"],
        ),
        (ch5_weights, ["returned shape (3,), one number per score"]),
        (ch5_jacobian_in_place, ["changed the array it was given"]),
    ],
    ids=[
        "diagonal only",
        "no off-diagonal",
        "flipped sign",
        "w * w",
        "w_i squared",
        "scores for weights",
        "no factor w_i",
        "1 everywhere",
        "inner product",
        "unnormalised",
        "softmax of -z",
        "naive softmax",
        "the weights",
        "in place",
    ],
)
def test_ch5_softmax_jacobian_names_typical_mistakes(answer, fragments):
    assert_ch5_mistake(exercises.check_softmax_jacobian(answer), *fragments)


@pytest.mark.parametrize(
    "answer",
    [
        lambda z: ch5_jacobian_of(ch5_weights(z)),
        lambda z: ch5_weights(z)[:, None] * (np.eye(len(z)) - ch5_weights(z)[None, :]),
        lambda z: (
            np.diagflat(ch5_weights(z)) - np.einsum("i,j->ij", ch5_weights(z), ch5_weights(z))
        ),
        lambda z: ch5_jacobian_of(np.exp(z - z.max() - np.log(np.exp(z - z.max()).sum()))),
        lambda z: ch5_jacobian_of(ch5_weights(z.astype(np.float32))),
        lambda z: ch5_jacobian_of(ch5_weights(z)).T,
        lambda z: ch5_jacobian_of(ch5_weights(z)).tolist(),
    ],
    ids=["own softmax", "broadcast", "einsum", "log-sum-exp", "float32", "transposed", "list"],
)
def test_ch5_softmax_jacobian_accepts_correct_variants(answer):
    assert exercises.check_softmax_jacobian(answer).passed


@pytest.mark.parametrize(
    ("slip", "fragments"),
    [
        ({"statistic": np.mean}, ["(8, 0.75, rng) returned 32", "the MEAN", "np.median"]),
        ({"scaled": True}, ["returned None", "UNSCALED"]),
        ({"softmax_axis": 0}, ["returned None", "axis=-1"]),
        ({"top": np.max}, ["returned 1", "max over the whole array"]),
        ({"keys": 8}, ["(2, 0.99, rng) returned 128", "whatever n_keys is"]),
        ({"first": 1}, ["(8, 0.2, rng) returned 2", "start at d_k = 1"]),
        ({"stop": False}, ["returned 1024", "your search does not stop", "FIRST d_k"]),
        (
            {"statistic": lambda top: np.percentile(top, 40)},
            ["(8, 0.75, rng) returned 32", "FIRST d_k", "your statistic is not the median"],
        ),
    ],
    ids=[
        "mean",
        "scaled",
        "softmax over queries",
        "max of all",
        "8 keys",
        "starts at 2",
        "last",
        "40th percentile",
    ],
)
def test_ch5_saturation_dimension_names_typical_mistakes(slip, fragments):
    def slipped(n_keys, threshold, rng):
        return ch5_saturation_dimension(n_keys, threshold, rng, **slip)

    assert_ch5_mistake(exercises.check_saturation_dimension(slipped), *fragments)


def test_ch5_saturation_dimension_names_answers_off_by_one_step():
    check = exercises.check_saturation_dimension

    def one_too_late(n_keys, threshold, rng):
        return 2 * ch5_saturation_dimension(n_keys, threshold, rng)

    assert_ch5_mistake(check(one_too_late), "returned 32", "FIRST d_k", "not the median")

    def one_too_early(n_keys, threshold, rng):
        return ch5_saturation_dimension(n_keys, threshold, rng) // 2

    assert_ch5_mistake(check(one_too_early), "returned 8", "is only about")
    assert_ch5_mistake(check(lambda n, t, rng: 100), "one of d_k = 1, 2, 4")

    def the_median_itself(n_keys, threshold, rng):
        return 0.8  # the statistic, not the d_k

    assert_ch5_mistake(check(the_median_itself), "returned 0.8", "one of d_k = 1, 2, 4")


def ch5_saturation_by_matmul(n_keys, threshold, rng):
    from selfattn_lib.softmax import softmax

    for d_k in (2**n for n in range(11)):
        k = rng.standard_normal((2000, n_keys, d_k))  # the keys first
        q = rng.standard_normal((2000, d_k, 1))
        top = softmax((k @ q)[..., 0], axis=-1).max(axis=-1)  # batched matmul
        if np.median(top) > threshold:
            return float(d_k)  # a float is a number too
    return None


def ch5_saturation_in_float32(n_keys, threshold, rng):
    from selfattn_lib.softmax import softmax

    for d_k in (2**n for n in range(11)):
        q = rng.standard_normal((4000, d_k), dtype=np.float32)  # more queries, float32
        k = rng.standard_normal((4000, n_keys, d_k), dtype=np.float32)
        top = softmax(np.einsum("nd,nkd->nk", q, k), axis=-1).max(axis=-1)
        if np.median(top) > threshold:
            return np.int64(d_k)
    return None


@pytest.mark.parametrize(
    "answer", [ch5_saturation_by_matmul, ch5_saturation_in_float32], ids=["matmul", "float32"]
)
def test_ch5_saturation_dimension_accepts_correct_variants(answer):
    assert exercises.check_saturation_dimension(answer).passed


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
