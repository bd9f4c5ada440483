"""Checkers for the exercises of chapter 5, scaling by √d_k."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from selfattn_lib import attention, softmax
from selfattn_lib.exercises import _kit as kit


def check_score_scale(score_scale: Callable[..., Any]) -> kit.Feedback:
    """Check the learner's scale factor for the scores (chapter 5, exercise 1).

    Expected signature: ``score_scale(d_k: int, entry_variance: float, target_variance: float)
    -> float``. Queries and keys have ``d_k`` independent zero-mean entries of variance
    ``entry_variance`` (s²); the function returns the positive factor ``c`` for which the
    scores ``c · q·k`` have variance ``target_variance`` (σ²). With s² = σ² = 1 it is the
    Transformer's scale.

    Shapes
    ------
    ``d_k``, ``entry_variance``, ``target_variance``: numbers → one positive number.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_score_scale(lambda d_k, entry_variance, target_variance: None)
    ✘ Not yet. score_scale(100, 0.25, 9) returned None: did you forget the `return`
    statement?
    """
    name = kit.name_of(score_scale, "score_scale")
    # The first case tells every slip below apart (no two give the same number there); the
    # others include the Transformer's own, s² = σ² = 1, and a target whose root σ = √7 is
    # not a whole number (a σ rounded to one passes every other case).
    cases = ((100, 0.25, 9.0), (64, 1.0, 1.0), (16, 4.0, 1.0), (9, 2.0, 9.0), (32, 4.0, 7.0))

    def mistakes(d_k: int, s2: float, t: float) -> list[tuple[float, str]]:
        sigma = np.sqrt(t)
        return [
            (
                1 / np.sqrt(d_k),
                "that is 1/√d_k, the scale for entries of variance 1 and a target of 1: here "
                "the entries' variance s² and the target σ² matter too",
            ),
            (
                1 / (s2 * np.sqrt(d_k)),
                "that is 1/(s² √d_k), which gives the scores variance 1: the target σ² is "
                "missing. Var(c · q·k) = c² d_k s⁴ must equal σ², not 1",
            ),
            (
                np.sqrt(t / (d_k * s2)),
                "that is σ / (s √d_k), as if Var(q_i k_i) were s²: for independent zero-mean "
                "q_i and k_i it is E[q_i²] E[k_i²] = s² · s² = s⁴, so Var(q·k) = d_k s⁴ and "
                "its standard deviation is s² √d_k",
            ),
            (
                t / (d_k * s2**2),
                f"that is σ² / (d_k s⁴), the target variance over Var(q·k): the ratio of the "
                f"VARIANCES, which is c², not c. Multiplying the dot products by it multiplies "
                f"their variance by its square, so they get variance σ⁴ / (d_k s⁴) = "
                f"{t**2 / (d_k * s2**2):.6g} instead of σ² = {t:g}: take the square root",
            ),
            (
                t / (s2 * np.sqrt(d_k)),
                "you used the target variance σ² where its square root σ belongs: "
                "target_variance is σ², so c = √(σ²) / (s² √d_k)",
            ),
            (
                sigma / (d_k * s2**2),
                "you divided by d_k s⁴ (the variance of q·k) instead of by its square root: "
                "scaling by c multiplies the variance by c², so c = σ / √(d_k s⁴)",
            ),
            (
                sigma / (d_k * s2),
                "divide by the standard deviation of q·k, √(d_k s⁴) = s² √d_k, not by d_k s²",
            ),
            (
                s2 * np.sqrt(d_k) / sigma,
                "that is the number to DIVIDE the dot products q·k by; return the factor c "
                "that multiplies them (its inverse)",
            ),
            (
                -sigma / (s2 * np.sqrt(d_k)),
                "the factor must be positive (c > 0): -c gives the scores the same variance, "
                "but it flips the sign of every score, and softmax then favours the opposite "
                "keys",
            ),
            (
                t / 2 / (s2 * np.sqrt(d_k)),
                "`target_variance ** 1/2` is (σ²)¹ / 2 = σ²/2, because ** binds tighter than /: "
                "write `** 0.5` or np.sqrt",
            ),
            (
                t / (d_k * s2**2) / 2,
                "`(...) ** 1/2` is (...)¹ / 2, because ** binds tighter than /: write `** 0.5` "
                "or np.sqrt",
            ),
            *(
                (
                    whole / (s2 * np.sqrt(d_k)),
                    f"you rounded σ = √σ² = {sigma:.6g} to the whole number {whole:g} (as "
                    "int(), math.isqrt or round() do): keep the square root as it is",
                )
                for whole in (np.floor(sigma), np.round(sigma))
            ),
        ]

    def checks() -> str:
        for d_k, s2, t in cases:
            what = f"{name}({d_k}, {s2:g}, {t:g})"
            expected = np.sqrt(t) / (s2 * np.sqrt(d_k))
            got = float(
                kit.as_result_array(kit.call_quietly(score_scale, d_k, s2, t), np.zeros(()), what)
            )
            returned = f"{what} returned {got:.6g}, expected {expected:.6g}"
            if kit.match_known_mistakes(got, expected, mistakes(d_k, s2, t), returned):
                continue
            if any(np.isclose(got, round(expected, digits), rtol=0) for digits in (1, 2, 3, 4)):
                raise kit.Mistake(
                    f"{returned}: did you round it? Return the number as computed; round only "
                    "when you print it"
                )
            if got <= 0:
                raise kit.Mistake(
                    f"{what} returned {got:.6g}: the factor must be positive (c > 0). Start "
                    "from Var(c · q·k) = c² d_k s⁴ and take the positive root"
                )
            achieved = got**2 * d_k * s2**2
            raise kit.Mistake(
                f"{what} returned {got:.6g}: dot products multiplied by it have variance "
                f"{achieved:.6g}, not {t:g}. Start from Var(c · q·k) = c² d_k s⁴"
            )
        return (
            "Your scale is right: c = σ / (s² √d_k). With s² = σ² = 1 it is the Transformer's "
            "1/√d_k."
        )

    return kit.run_checks(checks)


def check_softmax_jacobian(softmax_jacobian: Callable[[np.ndarray], Any]) -> kit.Feedback:
    """Check the learner's Jacobian of softmax (chapter 5, exercise 2).

    Expected signature: ``softmax_jacobian(scores: np.ndarray) -> np.ndarray`` for one row
    of scores ``z``, returning the matrix ``J[i, j] = ∂w_i / ∂z_j = w_i (δ_ij − w_j)`` with
    ``w = softmax(z)``, computed without overflow for scores around 1000 and without changing
    ``scores``.

    Shapes
    ------
    ``scores``: ``(n,)`` → ``(n, n)``: row ``i`` belongs to weight ``w_i``, column ``j`` to
    score ``z_j``.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_softmax_jacobian(lambda scores: None)
    ✘ Not yet. softmax_jacobian([1.0, 2.0, 3.0]) returned None: did you forget the `return`
    statement?
    """
    name = kit.name_of(softmax_jacobian, "softmax_jacobian")
    cases = (
        np.array([1.0, 2.0, 3.0]),
        np.array([0.5, -1.0, 2.0, 0.0]),
        np.array([3.0]),
        np.array([1000.0, 999.0, 990.0]),
    )

    def mistakes(z: np.ndarray, w: np.ndarray) -> list[tuple[np.ndarray, str]]:
        return [
            (
                np.diag(w),
                "this is only diag(w): subtract the outer product w wᵀ (np.outer(w, w)), "
                "since raising one score also lowers every other weight",
            ),
            (
                np.diag(w * (1 - w)),
                "the diagonal w_i (1 − w_i) is right, but the off-diagonal entries are "
                "−w_i w_j, not 0: raising score j lowers weight i",
            ),
            (
                np.outer(w, w) - np.diag(w),
                "the sign is flipped: it is diag(w) − w wᵀ (raising a score raises its own "
                "weight, so the diagonal is positive)",
            ),
            (
                np.diag(w) - w**2,
                "you subtracted w * w, which broadcasts the vector of squares w_j² into every "
                "row; the matrix w_i w_j is the outer product np.outer(w, w)",
            ),
            (
                np.diag(w) - w[:, None] ** 2,
                "you subtracted w_i² in every entry of row i; the matrix w_i w_j is the outer "
                "product np.outer(w, w)",
            ),
            (
                np.diag(z) - np.outer(z, z),
                "you used the scores z in the formula; it is written with the weights "
                "w = softmax(z)",
            ),
            (
                np.diag(softmax.softmax(-z)) - np.outer(softmax.softmax(-z), softmax.softmax(-z)),
                "you took the softmax of −z: the weights are w = softmax(z), largest for the "
                "largest score",
            ),
            (
                np.eye(len(w)) - w[None, :],
                "that is δ_ij − w_j, without the factor w_i in front: multiply row i by w_i",
            ),
            (
                w[:, None] * (1 - w[None, :]),
                "that is w_i (1 − w_j) in every entry: the 1 belongs on the diagonal only "
                "(δ_ij), so the off-diagonal entries are −w_i w_j",
            ),
            (
                np.diag(w) - w @ w,
                "you subtracted w @ w, the inner product: one number, Σ w_j², taken from every "
                "entry. The matrix w_i w_j is the outer product np.outer(w, w)",
            ),
            (
                np.diag(np.exp(z - z.max())) - np.outer(np.exp(z - z.max()), np.exp(z - z.max())),
                "the exponentials exp(z − max) are not yet weights: divide them by their sum "
                "first, so that w = softmax(z) sums to one",
            ),
        ]

    def checks() -> str:
        for z in cases:
            what = f"{name}({kit.show(z)})"
            w = softmax.softmax(z)  # (n,)
            expected = np.diag(w) - np.outer(w, w)
            result = kit.call_on_copy(softmax_jacobian, z)
            kit.explain_non_finite(
                result,
                expected,
                what,
                "For scores around 1000, np.exp overflows: compute the weights with a stable "
                "softmax (subtract the largest score first).",
            )
            values = kit.values_like(result, expected)
            if values is None and np.shape(result) == z.shape:
                raise kit.Mistake(
                    f"{what} returned shape {z.shape}, one number per score; the Jacobian has "
                    f"one row per weight and one column per score: shape {expected.shape}"
                )
            got = kit.as_result_array(result, expected, what)
            if kit.match_known_mistakes(
                got, expected, mistakes(z, w), f"{what} is wrong", atol=1e-10
            ):
                continue
            kit.assert_close(got, expected, what, atol=1e-10)
        kit.require_own_code(
            softmax_jacobian,
            (cases[1],),
            kit.TORCH,
            name,
            "the exercise asks for NumPy only: autograd is for checking your formula afterwards",
        )
        # One matrix expression: four times the scores, the same few lines of Python.
        kit.require_no_python_loop(softmax_jacobian, (cases[1],), (np.tile(cases[1], 4),), name)
        return (
            "Your Jacobian diag(w) − w wᵀ is right. Every entry is at most 1/4 in size, and "
            "all of them go to 0 as the weights become one-hot."
        )

    return kit.run_checks(checks)


_CH5_DIMENSIONS = tuple(2**n for n in range(11))  # 1, 2, 4, ..., 1024 (memory: see below)
_CH5_QUERIES = 2000  # the queries the prompt draws for each d_k


def _ch5_top_weight_statistic(
    n_keys: int, d_k: int, statistic: Callable[[np.ndarray], float], n_queries: int = 4000
) -> float:
    """``statistic`` over random queries of the largest unscaled weight (a fixed seed)."""
    rng = np.random.default_rng([5, n_keys, d_k])
    q = rng.standard_normal((n_queries, d_k))  # (n_queries, d_k)
    k = rng.standard_normal((n_queries, n_keys, d_k))  # (n_queries, n_keys, d_k)
    scores = attention.attention_scores(q[:, None, :], k, scale=1.0)  # (n_queries, 1, n_keys)
    weights = softmax.softmax(scores[:, 0], axis=-1)  # (n_queries, n_keys)
    return float(statistic(weights.max(axis=-1)))


def check_saturation_dimension(saturation_dimension: Callable[..., Any]) -> kit.Feedback:
    """Check the learner's search for the d_k at which softmax saturates (chapter 5, ex. 3).

    Expected signature: ``saturation_dimension(n_keys: int, threshold: float, rng:
    np.random.Generator) -> int | None``. For ``d_k`` = 1, 2, 4, …, 1024 in turn, draw 2000
    queries, each with ``n_keys`` keys (entries independent standard normal, from ``rng``),
    take the softmax of the UNSCALED dot products ``q·k`` of each query and its largest weight,
    and return the first ``d_k`` at which the median of these largest weights exceeds
    ``threshold`` (``None`` if none does). Random noise is allowed for: an answer is
    accepted if it is consistent with the checker's own estimate to within 0.004.

    Memory: the keys take ``2000 · n_keys · d_k`` float64 numbers, about 131 MB for 8 keys at
    ``d_k = 1024``, so the search stops there. The checker only asks for thresholds that a
    correct search passes by ``d_k = 64`` and never computes anything beyond ``d_k = 1024``
    itself; how far a wrong search runs is set by the learner's own loop.

    Shapes
    ------
    For each ``d_k``: queries ``(2000, d_k)``, keys ``(2000, n_keys, d_k)``, scores and
    weights ``(2000, n_keys)``, largest weights ``(2000,)``; the result is one ``d_k`` (an
    int) or ``None``.

    Examples
    --------
    ``None`` is a possible answer, so a function that returns it is told what it implies:

    >>> check_saturation_dimension(lambda n_keys, threshold, rng: None)
    ✘ Not yet. saturation_dimension(8, 0.75, rng) returned None, as if no d_k up to 1024 made
    the median top weight exceed 0.75. Use the dot products q·k UNSCALED (divided by √d_k they
    never saturate), a softmax over each query's keys (axis=-1), the LARGEST weight of each
    query (max over the keys), and return the d_k you found
    """
    name = kit.name_of(saturation_dimension, "saturation_dimension")
    # The last case's answer is d_k = 1: a search that skips d_k = 1 fails it.
    cases = ((8, 0.75), (8, 0.95), (2, 0.99), (8, 0.2))
    margin = 0.004
    statistics: dict[tuple[int, int, str], float] = {}
    reductions = {"median": np.median, "mean": np.mean, "max": np.max}

    def statistic(n_keys: int, d_k: int, reduction: str = "median") -> float:
        if (n_keys, d_k, reduction) not in statistics:
            statistics[n_keys, d_k, reduction] = _ch5_top_weight_statistic(
                n_keys, d_k, reductions[reduction]
            )
        return statistics[n_keys, d_k, reduction]

    def first_dimension(n_keys: int, threshold: float, reduction: str, up_to: int) -> int | None:
        for d_k in (d_k for d_k in _CH5_DIMENSIONS if d_k <= up_to):
            if statistic(n_keys, d_k, reduction) > threshold:
                return d_k
        return None

    # The usual slips: the keys drawn (given n_keys), the statistic, and what it means for the
    # returned d_k (a number, or None when no d_k up to 1024 passes).
    slips = (
        (
            lambda n_keys: n_keys,
            "mean",
            (
                "the MEAN of the top weights first exceeds {threshold:g}. Did you take the "
                "mean? The question asks for the median (np.median)",
                "you take the MEAN of the top weights. The question asks for the median "
                "(np.median)",
            ),
        ),
        (
            lambda n_keys: n_keys,
            "max",
            (
                "the LARGEST top weight of all the queries first exceeds {threshold:g}. Did "
                "you take the max over the whole array? Take each query's largest weight (max "
                "over its keys, axis=-1), then the median over the queries",
                "you take the max over the whole array. Take each query's largest weight (max "
                "over its keys, axis=-1), then the median over the queries",
            ),
        ),
        (
            lambda n_keys: 8,
            "median",
            (
                "8 keys per query would first pass {threshold:g}. Did you draw 8 keys "
                "whatever n_keys is? Draw n_keys keys per query",
                "you draw 8 keys whatever n_keys is. Draw n_keys keys per query",
            ),
        ),
    )

    def answer(n_keys: int, threshold: float) -> int | None | kit.Mistake:
        """The learner's d_k, or the Mistake to report when it is not a d_k at all."""
        what = f"{name}({n_keys}, {threshold:g}, rng)"
        result = kit.call_quietly(saturation_dimension, n_keys, threshold, np.random.default_rng(0))
        if result is None:
            return None
        got = float(kit.as_result_array(result, np.zeros(()), what))
        if got not in _CH5_DIMENSIONS:
            return kit.Mistake(
                f"{what} returned {got:g}; the answer is one of d_k = 1, 2, 4, ..., 1024"
            )
        return int(got)

    def is_wrong(n_keys: int, threshold: float, d_k: int | None) -> bool:
        if d_k is None:  # every case's median passes its threshold by d_k = 64
            return True
        too_late = d_k > 1 and statistic(n_keys, d_k // 2) > threshold + margin
        return too_late or statistic(n_keys, d_k) < threshold - margin

    def explain(wrong: list[tuple[int, float, int | None]]) -> str:
        """Name the slip that gives every wrong answer, else say how the first one is off."""
        n_keys, threshold, d_k = next(
            ((n, t, d_k) for n, t, d_k in wrong if d_k is not None), wrong[0]
        )
        what = f"{name}({n_keys}, {threshold:g}, rng) returned {d_k}"
        for keys, reduction, explanation in slips:
            if all(
                (keys(n), reduction) != (n, "median")
                and first_dimension(keys(n), t, reduction, up_to=answered or 1024) == answered
                for n, t, answered in wrong
            ):
                if d_k is None:
                    return f"{what}: that is what you get if {explanation[1]}"
                return f"{what}, and {d_k} is where {explanation[0]}".format(threshold=threshold)
        if d_k is None:
            return (
                f"{what}, as if no d_k up to 1024 made the median top weight exceed "
                f"{threshold:g}. Use the dot products q·k UNSCALED (divided by √d_k they never "
                "saturate), a softmax over each query's keys (axis=-1), the LARGEST weight of "
                "each query (max over the keys), and return the d_k you found"
            )
        if d_k == 2 and statistic(n_keys, 1) > threshold + margin:
            return (
                f"{what}, but at d_k = 1 the median top weight is already about "
                f"{statistic(n_keys, 1):.3f} > {threshold:g}: does your search start at "
                "d_k = 1? The first d_k to try is 1 = 2⁰"
            )
        if d_k > 1 and statistic(n_keys, d_k // 2) > threshold + margin:
            already = (
                f"{what}, but at d_k = {d_k // 2} the median top weight is already about "
                f"{statistic(n_keys, d_k // 2):.3f} > {threshold:g}"
            )
            if d_k == _CH5_DIMENSIONS[-1] and all(answered == d_k for _, _, answered in wrong):
                return (
                    f"{already}, and every answer is the last d_k tried: your search does not "
                    "stop. Return the FIRST d_k that passes"
                )
            # One step late: a loop that goes one step too far, or a statistic that passes
            # later than the median (a lower percentile, say); the answer alone cannot tell.
            return (
                f"{already}. Does your search return the FIRST d_k that passes? If it does, "
                "your statistic is not the median of the queries' largest weights: take each "
                "query's largest weight (max over its keys), then np.median over the queries"
            )
        return (
            f"{what}, but there the median top weight of the unscaled dot products is only "
            f"about {statistic(n_keys, d_k):.3f}, not above {threshold:g}"
        )

    def checks() -> str:
        answers = [(n_keys, threshold, answer(n_keys, threshold)) for n_keys, threshold in cases]
        wrong = []
        for n_keys, threshold, d_k in answers:
            if isinstance(d_k, kit.Mistake) and not wrong:  # not a d_k, and the first slip
                raise d_k
            if not isinstance(d_k, kit.Mistake) and is_wrong(n_keys, threshold, d_k):
                wrong.append((n_keys, threshold, d_k))
        if wrong:
            raise kit.Mistake(explain(wrong))
        # Vectorised over the queries: a few lines per d_k tried, not one or more per query.
        lines = kit.python_lines(saturation_dimension, 8, 0.75, np.random.default_rng(0))
        if lines > _CH5_QUERIES:
            raise kit.Mistake(
                f"the result is right, but {name}(8, 0.75, rng) ran {lines:,} lines of Python, "
                f"more than one per query ({_CH5_QUERIES:,} queries per d_k): a loop over the "
                "queries (or the keys), however it is written. Draw all the queries as one "
                f"array ({_CH5_QUERIES}, d_k), the keys as one ({_CH5_QUERIES}, n_keys, d_k), "
                'and compute every score at once with np.einsum("nd,nkd->nk", q, k)'
            )
        return (
            "Your search finds where softmax saturates: with 8 keys the median top weight of "
            "unscaled dot products passes 0.95 at d_k = 64, the size of one head of the base "
            "Transformer."
        )

    return kit.run_checks(checks)
