"""Checkers for the exercises of chapter 8, positional encoding."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from selfattn_lib import attention, positional, softmax
from selfattn_lib.exercises import _kit as kit

_CH8_BASE = 10000.0


def _ch8_frequencies(d_model: int, base: float = _CH8_BASE) -> np.ndarray:
    """``ω_i = base^(-2i / D)`` for the ``D / 2`` pairs, shape ``(D / 2,)``."""
    return base ** (-np.arange(0, d_model, 2) / d_model)


def _ch8_angles(max_len: int, d_model: int, start: int = 0) -> np.ndarray:
    """``pos · ω_i`` for positions ``start … start + max_len - 1``, shape ``(T, D / 2)``."""
    return np.arange(start, start + max_len)[:, None] * _ch8_frequencies(d_model)[None, :]


def _split_layout(encoding: np.ndarray) -> np.ndarray:
    """The paper's interleaved encoding with its sines first, then its cosines: ``(T, D)``."""
    return np.concatenate([encoding[:, 0::2], encoding[:, 1::2]], axis=1)


def _ch8_slip_of_every_answer(
    answers: list[tuple[Any, Any, list[tuple[Any, str]], str]], joiner: str, **tolerances: float
) -> tuple[Any, Any, list[tuple[Any, str]], str] | None:
    """Compare the learner's answers on all the cases at once. ``answers`` holds ``(got,
    expected, slips, what)`` per case, ``slips`` the ``(wrong result, explanation)`` pairs of
    the catalogue, in the same order for every case. Returns None when every answer is right;
    raises ``what + joiner + explanation`` for the slip that gives ALL the answers (two slips
    can agree on one case and not on the others), at the first case the answer is wrong;
    otherwise returns that first wrong case, for the caller to explain."""
    wrong = [case for case in answers if not kit.equal(case[0], case[1], **tolerances)]
    if not wrong:
        return None
    for index in range(len(answers[0][2])):
        if all(kit.equal(got, slips[index][0], **tolerances) for got, _, slips, _ in answers):
            raise kit.Mistake(f"{wrong[0][3]}{joiner}{wrong[0][2][index][1]}")
    return wrong[0]


def check_split_layout_encoding(split_layout_encoding: Callable[[int, int], Any]) -> kit.Feedback:
    """Check the sinusoidal encoding with all sines first (chapter 8, exercise 1).

    Expected signature: ``split_layout_encoding(max_len: int, d_model: int) -> np.ndarray``
    for an even ``d_model``: column ``i`` is ``sin(pos · ω_i)`` and column ``D/2 + i`` is
    ``cos(pos · ω_i)`` for ``i < D/2``, with ``ω_i = 10000^(-2i/D)`` and positions
    ``0 … max_len - 1``. The same numbers as the paper's encoding, with the columns in
    another order.

    Shapes
    ------
    → ``(T, D)`` = ``(max_len, d_model)``: one row per position, one column per dimension.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_split_layout_encoding(lambda max_len, d_model: None)
    ✘ Not yet. split_layout_encoding(6, 4) returned None: did you forget the `return`
    statement?
    """
    name = kit.name_of(split_layout_encoding, "split_layout_encoding")

    def split(angles: np.ndarray) -> np.ndarray:
        return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)  # (T, D)

    def mistakes(max_len: int, d_model: int) -> list[tuple[np.ndarray, str]]:
        angles = _ch8_angles(max_len, d_model)  # (T, D / 2)
        half = d_model // 2
        positions = np.arange(max_len)[:, None]  # (T, 1)
        slow = positions * _CH8_BASE ** (-np.arange(half) / d_model)
        fast = positions / _ch8_frequencies(d_model)  # pos · 10000^(2i/D)
        twice = positions * _CH8_BASE ** (-2 * np.arange(0, d_model, 2) / d_model)  # 4i/D
        # Tensor2Tensor's get_timing_signal_1d: ω_i = 10000^(-i / (D/2 - 1)).
        t2t = positions * _CH8_BASE ** (-np.arange(half) / max(half - 1, 1))
        per_dimension = positions * _CH8_BASE ** (-np.arange(d_model) / d_model)  # (T, D)
        whole = positions * _CH8_BASE ** (-(np.arange(0, d_model, 2) // d_model))  # ω_i = 1
        thousand = positions * 1000.0 ** (-np.arange(0, d_model, 2) / d_model)
        from_one = positions * _CH8_BASE ** (-np.arange(2, d_model + 1, 2) / d_model)
        base_e = positions * np.exp(-np.arange(0, d_model, 2) / d_model)
        return [
            (
                split(t2t),
                "these are Tensor2Tensor's frequencies, 10000^(-i/(D/2 - 1)); the exercise "
                "uses the paper's, ω_i = 10000^(-2i/D) for i = 0 … D/2 - 1",
            ),
            (
                np.concatenate(
                    [np.sin(per_dimension[:, :half]), np.cos(per_dimension[:, half:])], axis=1
                ),
                "each of the D columns got its own frequency 10000^(-j/D), so a sine and its "
                "cosine turn at different speeds. Column i and column D/2 + i share ω_i = "
                "10000^(-2i/D): compute D/2 angles and take both their sine and cosine",
            ),
            (
                split(twice),
                "the exponent is 4i/D: np.arange(0, D, 2) already holds 2i, so multiplying "
                "it by 2 again (or dividing by D/2) counts twice. ω_i = 10000^(-2i/D)",
            ),
            (
                positional.sinusoidal_encoding(max_len, d_model),
                "these are the columns of the paper's interleaved layout (sin, cos, sin, cos, "
                "…). Here all D/2 sines come first, then all D/2 cosines: "
                "np.concatenate([sines, cosines], axis=1)",
            ),
            (
                np.concatenate([np.cos(angles), np.sin(angles)], axis=1),
                "the cosines come first and the sines second; it is the other way round: "
                "columns 0 … D/2 - 1 are sin(pos · ω_i), the last D/2 are cos(pos · ω_i)",
            ),
            (
                split(slow),
                "you used the frequencies 10000^(-i/D) for i = 0 … D/2 - 1; the exponent is "
                "2i/D (pair i starts at dimension 2i of the paper's layout), so that the "
                "wavelengths reach almost 2π·10000, not 2π·100",
            ),
            (
                split(fast),
                "the positions are MULTIPLIED by 10000^(2i/D); they must be divided by it "
                "(ω_i = 10000^(-2i/D)), so that the wavelengths grow from 2π to almost 2π·10000",
            ),
            (
                split(_ch8_angles(max_len, d_model, start=1)),
                "the positions start at 1; they start at 0 (np.arange(max_len)), so that "
                "the first row is sin(0) = 0 and cos(0) = 1",
            ),
            (
                split(whole),
                "every pair turns at ω = 1: the exponent was computed with integer division, "
                "2i // D, which is 0 for every i < D/2. Divide with /: ω_i = 10000^(-2i/D)",
            ),
            (
                split(thousand),
                "the frequencies are 1000^(-2i/D); the base is 10000 (ten thousand), "
                "ω_i = 10000^(-2i/D)",
            ),
            (
                split(from_one),
                "the pair index runs from 1 to D/2 (np.arange(1, D/2 + 1)); it runs from 0 to "
                "D/2 - 1, so that pair 0 turns at ω_0 = 10000^0 = 1",
            ),
            (
                split(base_e),
                "the frequencies are e^(-2i/D), np.exp(-2i/D) without the logarithm of the "
                "base; ω_i = 10000^(-2i/D) = np.exp(-2i/D · np.log(10000))",
            ),
            (
                split(np.degrees(angles)),
                "the angles were turned into degrees (np.degrees); np.sin and np.cos take "
                "radians, and pos · ω_i is in radians already: np.sin(pos · ω_i)",
            ),
            (
                split(np.radians(angles)),
                "the angles were taken as degrees (np.radians, or × π/180); pos · ω_i is in "
                "radians already: np.sin(pos · ω_i)",
            ),
        ]

    def checks() -> str:
        answers = []
        for max_len, d_model in ((6, 4), (50, 16), (3, 2), (9, 10)):
            what = f"{name}({max_len}, {d_model})"
            expected = _split_layout(positional.sinusoidal_encoding(max_len, d_model))  # (T, D)
            result = kit.call_quietly(split_layout_encoding, max_len, d_model)
            if np.shape(result) == expected.shape[::-1] and max_len != d_model:
                raise kit.Mistake(
                    f"{what} returned shape {np.shape(result)} = (D, T): one row per position, "
                    f"one column per dimension, shape {expected.shape}"
                )
            if np.shape(result) in ((max_len - 1, d_model), (max_len + 1, d_model)):
                raise kit.Mistake(
                    f"{what} returned {np.shape(result)[0]} rows: one row for each of the "
                    f"max_len = {max_len} positions 0 … {max_len - 1}, np.arange(max_len)"
                )
            got = kit.as_result_array(result, expected, what)
            answers.append((got, expected, mistakes(max_len, d_model), what))
        first_wrong = _ch8_slip_of_every_answer(answers, " is wrong: ", atol=1e-6)
        if first_wrong is not None:
            got, expected, slips, what = first_wrong
            kit.match_known_mistakes(got, expected, slips, what, joiner=" is wrong: ", atol=1e-6)
            kit.assert_close(got, expected, what, atol=1e-6)
        return (
            "Your split layout is right. It holds exactly the numbers of the paper's "
            "interleaved encoding, with the columns in another order."
        )

    return kit.run_checks(checks)


def _ch8_wavelengths(d_model: int) -> np.ndarray:
    return 2 * np.pi / _ch8_frequencies(d_model)  # (D / 2,)


def _ch8_log_closest(values: np.ndarray, target: float) -> int:
    return int(np.argmin(np.abs(np.log(values) - np.log(target))))


def check_closest_pair(closest_pair: Callable[[int, float], Any]) -> kit.Feedback:
    """Check the search for the pair with a given wavelength (chapter 8, exercise 2).

    Expected signature: ``closest_pair(d_model: int, wavelength: float) -> int``: the index
    ``i`` of the sin/cos pair whose wavelength ``λ_i = 2π · 10000^(2i/D)`` is closest to
    ``wavelength`` by ratio, i.e. with the smallest ``|log(λ_i / wavelength)|``. Targets
    beyond the ends give the first or the last pair.

    Shapes
    ------
    ``d_model``, ``wavelength``: numbers → one whole number ``0 ≤ i < D/2``.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_closest_pair(lambda d_model, wavelength: None)
    ✘ Not yet. closest_pair(64, 1000) returned None: did you forget the `return` statement?
    """
    name = kit.name_of(closest_pair, "closest_pair")
    # The first case tells apart the dimension 2i and a forgotten 2π, the second a difference
    # of wavelengths, the third a difference of frequencies; (8, 800) (i = 2.105) tells
    # rounding up from comparing frequencies. The slips are named from all answers at once.
    cases = (
        (64, 1000.0), (8, 300.0), (16, 100.0), (8, 40.0), (8, 3.0), (8, 1e6), (512, 100.0),
        (512, 5.0), (8, 800.0),
    )  # fmt: skip

    def slips(d_model: int, target: float) -> list[tuple[int, str]]:
        """The usual wrong answers for one case, each ``(index, explanation)``."""
        wavelengths = _ch8_wavelengths(d_model)  # (D / 2,)
        expected = _ch8_log_closest(wavelengths, target)
        solved = d_model / 2 * np.log(target / (2 * np.pi)) / np.log(_CH8_BASE)  # i*, a float

        def clip(index: float) -> int:
            return int(min(max(index, 0), d_model // 2 - 1))

        return [
            (
                2 * expected,
                f"is the DIMENSION 2i of the pair's sine; the answer is the pair index i = "
                f"{expected}",
            ),
            (
                _ch8_log_closest(wavelengths / (2 * np.pi), target),
                "is the pair closest to 10000^(2i/D), which is λ_i / 2π: the wavelength of "
                "sin(pos · ω_i) is λ_i = 2π / ω_i = 2π · 10000^(2i/D)",
            ),
            (
                int(np.argmin(np.abs(wavelengths - target))),
                "is the pair whose wavelength is closest by DIFFERENCE (|λ_i - wavelength|, "
                "or the same divided by the wavelength); the wavelengths grow geometrically, so "
                "compare ratios: minimise |log(λ_i / wavelength)|",
            ),
            (
                int(np.argmin(np.abs(2 * np.pi / wavelengths - 2 * np.pi / target))),
                "is the pair whose FREQUENCY is closest to 2π / wavelength by difference; "
                "frequencies, like wavelengths, change by the same factor from pair to pair, so "
                "compare by ratio: minimise |log(λ_i / wavelength)|",
            ),
            (
                clip(np.floor(solved)),
                f"rounds i = D/2 · log(λ / 2π) / log 10000 DOWN (int() or math.floor; here i = "
                f"{solved:.3f}): round to the nearest whole number, then clip",
            ),
            (
                clip(np.ceil(solved)),
                f"rounds i = D/2 · log(λ / 2π) / log 10000 UP (math.ceil; here i = "
                f"{solved:.3f}): round to the nearest whole number, then clip",
            ),
            (
                int(np.round(solved)),
                f"is i = D/2 · log(λ / 2π) / log 10000 = {solved:.3f} rounded but not clipped: "
                f"with D = {d_model} the pairs are i = 0 … {d_model // 2 - 1}, and a target "
                "beyond the ends gets the first or the last pair (np.clip)",
            ),
            (
                _ch8_log_closest(
                    2 * np.pi * _CH8_BASE ** (np.arange(d_model // 2) / d_model), target
                ),
                "is the closest of the wavelengths 2π · 10000^(i/D); the exponent is 2i/D, "
                "λ_i = 2π · 10000^(2i/D)",
            ),
            (
                _ch8_log_closest(2 * np.pi * _CH8_BASE ** (np.arange(d_model) / d_model), target),
                "is the closest of D wavelengths 2π · 10000^(j/D), one per DIMENSION j < D. A "
                "sine and its cosine share one wavelength: there are D/2 pairs, with "
                "λ_i = 2π · 10000^(2i/D) for i < D/2",
            ),
            (
                expected + 1,
                "is one more than the closest pair's index: the pairs are counted from 0 (pair "
                "i holds dimensions 2i and 2i + 1, so np.arange(D // 2), not np.arange(1, …))",
            ),
            (
                int(np.argmax(np.abs(np.log(wavelengths / target)))),
                "is the FARTHEST pair by ratio (np.argmax); the closest has the smallest "
                "|log(λ_i / wavelength)|: np.argmin",
            ),
            (
                0,
                "is pair 0 for every wavelength: without np.abs the most negative "
                "log(λ_i / wavelength), pair 0's, wins (or the wavelength was compared with the "
                "frequencies ω_i ≤ 1). Minimise |log(λ_i / wavelength)|",
            ),
        ]

    def checks() -> str:
        answers = []
        for d_model, target in cases:
            what = f"{name}({d_model}, {target:g})"
            wavelengths = _ch8_wavelengths(d_model)  # (D / 2,)
            expected = _ch8_log_closest(wavelengths, target)
            result = kit.call_quietly(closest_pair, d_model, target)
            got_value = float(kit.as_result_array(result, np.zeros(()), what))
            if got_value != round(got_value):
                if np.isclose(got_value, wavelengths, rtol=1e-6).any():
                    raise kit.Mistake(
                        f"{what} returned {got_value:g}, a WAVELENGTH; return the index i of "
                        "its pair, a whole number"
                    )
                raise kit.Mistake(f"{what} returned {got_value:g}; a pair index is a whole number")
            got = int(round(got_value))
            what = f"{what} returned {got}"
            answers.append((got, expected, slips(d_model, target), what))
        first_wrong = _ch8_slip_of_every_answer(answers, ", which ")
        if first_wrong is not None:
            got, expected, _, what = first_wrong
            d_model = cases[[case[3] for case in answers].index(what)][0]
            wavelengths = _ch8_wavelengths(d_model)  # (D / 2,)
            if not 0 <= got < d_model // 2:
                target = cases[[case[3] for case in answers].index(what)][1]
                beyond = not wavelengths[0] <= target <= wavelengths[-1]
                raise kit.Mistake(
                    f"{what}, but with D = {d_model} the pairs are i = 0 … {d_model // 2 - 1}"
                    + (
                        f"; a target beyond the ends (λ_0 = {wavelengths[0]:.4g} … λ_"
                        f"{d_model // 2 - 1} = {wavelengths[-1]:.4g}) gets the first or last pair"
                        if beyond
                        else ", one for each sine–cosine pair"
                    )
                )
            raise kit.Mistake(
                f"{what} (λ = {wavelengths[got]:.4g}), expected {expected} "
                f"(λ = {wavelengths[expected]:.4g}); λ_i = 2π · 10000^(2i/D)"
            )
        return (
            "Your search is right: wavelengths grow by the same factor from pair to pair, so "
            "the closest one is found on a log scale (or solved for: i ≈ D/2 · log(λ/2π) / "
            "log 10000)."
        )

    return kit.run_checks(checks)


def check_equivariance_gap(equivariance_gap: Callable[..., Any]) -> kit.Feedback:
    """Check the measure of how far positions break equivariance (chapter 8, exercise 3).

    Expected signature: ``equivariance_gap(x, order, encoding) -> float``. With
    ``f(z) = softmax(z zᵀ / √D) z`` (self-attention with ``q = k = v = z``) it returns
    ``max |f(x[order] + encoding) - f(x + encoding)[order]|``: the shuffled sentence gets the
    encodings of the slots it now occupies, and its outputs are compared with the original
    outputs shuffled the same way. Zero means equivariant.

    Shapes
    ------
    ``x``: ``(T, D)``, ``order``: ``(T,)`` (a permutation of ``range(T)``), ``encoding``:
    ``(T, D)`` → one number.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_equivariance_gap(lambda x, order, encoding: None)
    ✘ Not yet. equivariance_gap(x, order=[2, 0, 4, 1, 3], sinusoidal encoding) returned None:
    did you forget the `return` statement?
    """
    name = kit.name_of(equivariance_gap, "equivariance_gap")
    rng = np.random.default_rng(8)
    x = rng.normal(size=(5, 4))  # (T, D)
    encoding = positional.sinusoidal_encoding(5, 4)  # (T, D)
    order = np.array([2, 0, 4, 1, 3])  # not its own inverse

    def variants(order: np.ndarray, enc: np.ndarray) -> dict[str, float]:
        def f(v: np.ndarray) -> np.ndarray:
            return attention.scaled_dot_product_attention(v, v, v)[0]  # (T, D)

        shuffled = f(x[order] + enc)  # (T, D)
        original = f(x + enc)  # (T, D)

        def unscaled(z: np.ndarray) -> np.ndarray:
            return softmax.softmax(z @ z.T, axis=-1) @ z  # (T, D), no division by √D

        difference = shuffled - original[order]  # (T, D)
        weights = attention.scaled_dot_product_attention(x[order] + enc, x[order] + enc, x)[1]
        weights_original = attention.scaled_dot_product_attention(x + enc, x + enc, x)[1]
        bare_values = attention.scaled_dot_product_attention(
            x[order] + enc, x[order] + enc, x[order]
        )[0]
        bare_values_original = attention.scaled_dot_product_attention(x + enc, x + enc, x)[0]
        return {
            "right": float(np.abs(difference).max()),
            "invariance": float(np.abs(shuffled - original).max()),
            "inverse": float(np.abs(shuffled - original[np.argsort(order)]).max()),
            "mean": float(np.abs(difference).mean()),
            "unscaled": float(np.abs(unscaled(x[order] + enc) - unscaled(x + enc)[order]).max()),
            "signed": float(difference.max()),
            "sum": float(np.abs(difference).sum()),
            "norm": float(np.linalg.norm(difference)),
            "encoding shuffled": float(np.abs(f(x + enc[order]) - original[order]).max()),
            "encoding shuffled, unshuffled": float(np.abs(f(x + enc[order]) - original).max()),
            "original without encoding": float(np.abs(shuffled - f(x)[order]).max()),
            "inputs": float(np.abs((x[order] + enc) - (x + enc)[order]).max()),
            "weights": float(np.abs(weights - weights_original[order][:, order]).max()),
            "values without encoding": float(
                np.abs(bare_values - bare_values_original[order]).max()
            ),
            "longest row": float(np.linalg.norm(difference, axis=-1).max()),
        }

    def check_one(order: np.ndarray, enc: np.ndarray, label: str) -> None:
        what = f"{name}(x, order={order.tolist()}, {label})"
        result = kit.call_quietly(equivariance_gap, x.copy(), order.copy(), enc.copy())
        shape = np.shape(kit.plain(result)) if result is not None else ()
        if shape in ((5, 4), (5,), (4,)):
            raise kit.Mistake(
                f"{what} returned an array of shape {tuple(shape)}; the gap is ONE number, the "
                "largest absolute difference over all tokens and features: np.abs(...).max()"
            )
        got = float(kit.as_result_array(result, np.zeros(()), what))
        values = variants(order, enc)
        expected = values["right"]
        # rtol and atol let float32 answers pass (e.g. torch's default dtype): their rounding
        # errors are about 1e-7, while every mistake below changes the gap by more than 0.01.
        tolerances = {"rtol": 1e-5, "atol": 1e-5}
        if kit.equal(got, expected, **tolerances):
            return
        if got < 0:
            raise kit.Mistake(f"{what} returned {got:.3g}: a largest absolute difference is ≥ 0")
        if expected > 1e-3 and abs(got) < 1e-5:
            raise kit.Mistake(
                f"{what} returned {got:.3g}, as if attention were still equivariant; the "
                f"gap is {expected:.4f}. You get 0 when the encodings travel with the tokens, "
                "(x + encoding)[order], or are left out. An encoding belongs to a SLOT, not to "
                "a token: shuffle x first, then add the encoding, x[order] + encoding"
            )
        mistakes = [
            (
                values["invariance"],
                "compared the shuffled outputs with the UNSHUFFLED original outputs, a test of "
                "invariance. Shuffle the original outputs the same way before comparing: "
                "f(x + encoding)[order]",
            ),
            (
                values["inverse"],
                "shuffled the original outputs with the inverse permutation "
                "(np.argsort(order)). Row t of x[order] is token order[t], so compare with "
                "f(x + encoding)[order]",
            ),
            (
                values["mean"],
                "returned the MEAN absolute difference; return the largest, np.abs(...).max()",
            ),
            (
                values["unscaled"],
                "used the dot products z zᵀ unscaled; divide them by √D as "
                "scaled_dot_product_attention does",
            ),
            (
                values["sum"],
                "returned the SUM of the absolute differences; return the largest, "
                "np.abs(...).max()",
            ),
            (
                values["norm"],
                "returned the length (Frobenius norm) of the difference, np.linalg.norm; return "
                "its largest absolute entry, np.abs(...).max()",
            ),
            (
                values["encoding shuffled"],
                "shuffled the ENCODING, x + encoding[order], instead of the sentence. The "
                "tokens move, x[order], and the encodings stay in their slots: x[order] + "
                "encoding",
            ),
            (
                values["encoding shuffled, unshuffled"],
                "shuffled the ENCODING, x + encoding[order], instead of the sentence, and "
                "compared with the unshuffled outputs. Shuffle the tokens, x[order] + encoding, "
                "and compare with f(x + encoding)[order]",
            ),
            (
                values["original without encoding"],
                "compared with the outputs of x WITHOUT the encoding. Both runs get the "
                "encodings of their slots: compare with f(x + encoding)[order]",
            ),
            (
                values["inputs"],
                "compared the INPUTS of attention, not its outputs: run "
                "scaled_dot_product_attention(z, z, z) on both, then compare the outputs",
            ),
            (
                values["weights"],
                "compared the attention WEIGHTS; the gap is measured on the OUTPUTS, the first "
                "thing scaled_dot_product_attention returns",
            ),
            (
                values["values without encoding"],
                "used the sentence WITHOUT the encodings as the values. Queries, keys and "
                "values are all z = x[order] + encoding (and x + encoding for the original): "
                "scaled_dot_product_attention(z, z, z)",
            ),
            (
                values["longest row"],
                "returned the largest LENGTH of a token's difference (np.linalg.norm over the "
                "features); return the largest absolute entry over tokens and features, "
                "np.abs(...).max()",
            ),
            (
                values["signed"],
                f"returned the largest SIGNED difference, {got:.4f}; a large negative "
                "difference counts as much as a positive one: take np.abs(...) before .max() "
                f"(the gap is {expected:.4f})",
            ),
        ]
        kit.match_known_mistakes(got, expected, mistakes, what, joiner=" ", **tolerances)
        raise kit.Mistake(f"{what} returned {got:.6g}, expected {expected:.6g}")

    def checks() -> str:
        check_one(order, encoding, "sinusoidal encoding")
        check_one(np.arange(5), encoding, "identity order")
        check_one(order, np.zeros_like(encoding), "encoding of zeros")
        check_one(np.array([1, 2, 3, 4, 0]), encoding, "sinusoidal encoding")
        return (
            "Your gap is right: with positions added after the shuffle, the outputs no longer "
            "just move with their tokens (the gap is positive), while the identity order or an "
            "all-zero encoding gives 0, since self-attention alone is equivariant."
        )

    return kit.run_checks(checks)


def check_decode_position(decode_position: Callable[[np.ndarray], Any]) -> kit.Feedback:
    """Check the reading of a position back from its encoding (chapter 8, exercise 5).

    Expected signature: ``decode_position(encoding_row: np.ndarray) -> int``: given the row
    ``PE[p]`` (the paper's interleaved layout, base 10000, ``D ≥ 32``) of a position
    ``0 ≤ p < 20000``, return ``p``. The checker uses ``D`` = 32, 64 and 512.

    Shapes
    ------
    ``encoding_row``: ``(D,)`` → one whole number.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_decode_position(lambda encoding_row: None)
    ✘ Not yet. decode_position(PE[0] with D = 32) returned None: did you forget the `return`
    statement?
    """
    name = kit.name_of(decode_position, "decode_position")
    positions = (0, 1, 6, 7, 100, 4321, 12345, 19999)

    def catalogue(
        position: int, d_model: int
    ) -> tuple[list[tuple[float, str]], list[tuple[float, str]]]:
        """The usual slips' results for one row, ``(wrong result, explanation)``, each
        explanation continuing "<call> returned <got>": first those that are the same slip
        for every row and D (named from all the answers at once), then those named from one
        answer (rounding down or up shows at a few rows only, and is compared first there:
        one position more or less is also within 0.5 of a fixed slip at a small position;
        "pair j" means another pair for another D)."""
        omega = _ch8_frequencies(d_model)  # (D / 2,)
        wavelengths = 2 * np.pi / omega
        slowest = float(omega[-1])
        theta = position * slowest
        mirror = (
            f"cannot tell an angle of {theta:.3f} from its mirror image. Use both: "
            "np.arctan2(sine, cosine)"
        )
        # (wrong result, explanation), each explanation continuing "<call> returned <got>".
        fixed = [
            (
                position - wavelengths[-1],
                ": np.arctan2 returns angles in (-π, π], and the slowest pair of position "
                f"{position} has turned by {theta:.3f} > π. Add 2π to negative angles: "
                "np.mod(angle, 2 * np.pi)",
            ),
            (np.arcsin(np.sin(theta)) / slowest, f": np.arcsin of the sine alone {mirror}"),
            (np.arccos(np.cos(theta)) / slowest, f": np.arccos of the cosine alone {mirror}"),
            (
                np.mod(np.arctan(np.tan(theta)), 2 * np.pi) / slowest,
                ": np.arctan(sine / cosine) loses the signs of the sine and the cosine, so it "
                f"cannot tell an angle of {theta:.3f} from the one half a turn away. Use "
                "np.arctan2(sine, cosine)",
            ),
            (
                np.mod(np.pi / 2 - theta, 2 * np.pi) / slowest,
                ": the arguments of np.arctan2 are swapped. It is np.arctan2(y, x) = "
                "np.arctan2(sine, cosine), and the sine is the even dimension D - 2",
            ),
            (
                np.mod(theta, np.pi) / slowest,
                f": the angle was brought into [0, π); a whole turn is 2π, and position "
                f"{position}'s slowest pair has turned by {theta:.3f}: np.mod(angle, 2 * np.pi)",
            ),
            (
                position * _CH8_BASE ** (2 / d_model),
                ": you divided the angle by 1/10000, but the slowest pair's frequency is "
                "ω_{D/2-1} = 10000^(-(D-2)/D): divide by that",
            ),
            (
                position * _CH8_BASE ** (1 / d_model),
                ": you divided the angle by 10000^(-(D-1)/D), but the slowest pair is i = "
                "D/2 - 1, at frequency ω_i = 10000^(-2i/D) = 10000^(-(D-2)/D)",
            ),
            (
                theta / _CH8_BASE ** (-(d_model / 2 - 1) / d_model),
                ": you divided the angle by 10000^(-(D/2-1)/D), the exponent i/D with i = "
                "D/2 - 1; the exponent is 2i/D, so the slowest pair's frequency is ω_i = "
                "10000^(-(D-2)/D)",
            ),
            (
                np.degrees(theta) / slowest,
                ": the angle was turned into degrees; the frequencies ω_i are in radians "
                "per position, so divide the angle in radians",
            ),
            (
                theta * slowest,
                ": you multiplied the angle by ω; the angle is p · ω, so p = angle / ω",
            ),
        ]
        per_row = [
            (
                position - 1,
                f" for position {position}: int() (or np.floor) cuts off the fraction, and "
                f"the angle divided by ω is {position} only up to rounding errors, so it can "
                f"come out just below, {position - 1}.99…. Round to the nearest whole number: "
                "round(...)",
            ),
            (
                position + 1,
                f" for position {position}: math.ceil (or np.ceil) rounds UP, and the angle "
                f"divided by ω is {position} only up to rounding errors, so it can come out "
                f"just above, {position}.00…1. Round to the nearest whole number: round(...)",
            ),
            # Slowest first: pairs i and j < i can agree on a position (with D = 32, λ_14 is
            # exactly 100 λ_6, so 19999 mod λ_14 = 19999 mod λ_6); the slower is the likelier.
            *(
                (
                    position % wavelength,  # the position itself while it is under a turn
                    f" for position {position}: pair {pair} turns once every {wavelength:.4g} "
                    "positions, so its angle divided by its frequency is the position only "
                    f"modulo {wavelength:.4g}. Use the slowest pair (dimensions D - 2 and "
                    "D - 1), which turns less than once over 20000 positions",
                )
                for pair, wavelength in reversed(list(enumerate(wavelengths[:-1])))
            ),
        ]
        return fixed, per_row

    def checks() -> str:
        answers, rows = [], []
        for d_model in (32, 64, 512):
            table = positional.sinusoidal_encoding(max(positions) + 1, d_model)  # (T, D)
            for position in positions:
                what = f"{name}(PE[{position}] with D = {d_model})"
                result = kit.call_quietly(decode_position, table[position].copy())
                got = float(kit.as_result_array(result, np.zeros(()), what))
                fixed, per_row = catalogue(position, d_model)
                answers.append((got, position, fixed, f"{what} returned {got:.6g}"))
                rows.append((what, per_row))
        # A whole-number answer can be up to 0.5 away from a slip's exact (unrounded) result.
        _ch8_slip_of_every_answer(answers, "", rtol=0, atol=0.5)
        # Rounding down or up is off by one at some rows and right at others; an answer right
        # nowhere made another slip. Position 0 is no evidence: its angle is 0 whatever the
        # frequency, so a wrong ω reads it right too.
        rounding = any(
            abs(got - position) < 1e-6 for got, position, _, _ in answers if position != 0
        )
        for (got, position, fixed, returned), (what, per_row) in zip(answers, rows, strict=True):
            if abs(got - position) < 1e-6:
                continue
            if not rounding or position == 0:
                per_row = per_row[2:]  # the two rounding slips come first
            if abs(got - position) < 0.5:
                raise kit.Mistake(
                    f"{what} returned {got:.10g} for position {position}: round to the nearest "
                    "whole number"
                )
            kit.match_known_mistakes(
                got, position, per_row + fixed, returned, rtol=0, atol=0.5, joiner=""
            )
            raise kit.Mistake(f"{what} returned {got:.6g}, expected {position}")
        return (
            "Your decoder reads every position back: the slowest pair works like the hour hand "
            "of a clock, unambiguous over its whole turn; with exact encodings it is enough on "
            "its own (with noisy ones, the faster pairs would refine it)."
        )

    return kit.run_checks(checks)


def _ch8_rotate_halves(x: np.ndarray, angles: np.ndarray, sign: float = 1.0) -> np.ndarray:
    """``x * cos(θ) + sign · rotate_half(x) * sin(θ)`` with ``rotate_half(x) = [-x₂, x₁]``
    and one angle per feature, ``angles``: ``(T, D)``."""
    half = x.shape[-1] // 2
    turned = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)  # (T, D)
    return x * np.cos(angles) + sign * turned * np.sin(angles)


def check_rope_half(rope_half: Callable[[np.ndarray, np.ndarray], Any]) -> kit.Feedback:
    """Check rotary position embeddings in the half-split layout (chapter 8, exercise 4).

    Expected signature: ``rope_half(x: np.ndarray, positions: np.ndarray) -> np.ndarray``
    for ``x`` of shape ``(T, D)`` (``D`` even) and one position per row: the features
    ``(x_i, x_{i + D/2})`` of row ``t`` are turned by the angle ``positions[t] · ω_i``,
    ``ω_i = 10000^(-2i/D)``, for ``i < D/2``, the layout of Hugging Face's ``rotate_half``;
    written without ``selfattn_lib.positional.apply_rope``.

    Shapes
    ------
    ``x``: ``(T, D)``, ``positions``: ``(T,)`` → ``(T, D)``.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_rope_half(lambda x, positions: None)
    ✘ Not yet. rope_half(x with shape (5, 8), positions [3, 0, 7, 7, 120]) returned None:
    did you forget the `return` statement?
    """
    name = kit.name_of(rope_half, "rope_half")
    rng = np.random.default_rng(88)

    def mistakes(x: np.ndarray, positions: np.ndarray) -> list[tuple[np.ndarray, str]]:
        d_model = x.shape[-1]
        angles = positional.rope_angles(positions, d_model)  # (T, D / 2)
        both = np.concatenate([angles, angles], axis=-1)  # (T, D): one angle per feature
        twice = positions[:, None] * _CH8_BASE ** (-4 * np.arange(d_model // 2) / d_model)
        fast = positions[:, None] * _CH8_BASE ** (2 * np.arange(d_model // 2) / d_model)
        per_feature = positions[:, None] * _CH8_BASE ** (-np.arange(d_model) / d_model)
        unpaired = positions[:, None] * _CH8_BASE ** (-np.arange(d_model // 2) / d_model)
        whole = positions[:, None] * _CH8_BASE ** (-(np.arange(0, d_model, 2) // d_model))
        from_one = positions[:, None] * _CH8_BASE ** (-np.arange(2, d_model + 1, 2) / d_model)
        right = _ch8_rotate_halves(x, both)
        half = d_model // 2
        cos, sin = np.cos(angles), np.sin(angles)  # (T, D / 2) each
        first = x[:, :half] * cos - x[:, half:] * sin  # the first half, turned
        return [
            (
                positional.apply_rope(x, positions),
                "this is the INTERLEAVED layout: it turns the neighbours (x_0, x_1), (x_2, "
                "x_3), …. The half-split layout pairs feature i with feature i + D/2: "
                "(x_0, x_{D/2}), (x_1, x_{D/2+1}), …",
            ),
            (
                _ch8_rotate_halves(x, np.repeat(angles, 2, axis=-1)),
                "the pairs are right, but the angles are laid out for the interleaved layout "
                "(np.repeat gives θ_0, θ_0, θ_1, θ_1, …). Feature i and feature i + D/2 share "
                "θ_i: concatenate the two halves, np.concatenate([θ, θ], axis=-1)",
            ),
            (
                _ch8_rotate_halves(x, per_feature),
                "each of the D features got its own frequency 10000^(-j/D). The two features "
                "of a pair turn together, by one angle θ_i = pos · 10000^(-2i/D) for "
                "i < D/2: concatenate the D/2 angles with themselves",
            ),
            (
                _ch8_rotate_halves(x, np.concatenate([unpaired, unpaired], axis=-1)),
                "the frequencies are 10000^(-i/D); the exponent is 2i/D (ω_i = "
                "10000^(-2i/D)), the same frequencies as the sinusoidal encoding",
            ),
            (
                _ch8_rotate_halves(x, np.concatenate([angles, angles], axis=-1), sign=-1.0),
                "the rotation goes the wrong way (by -θ): rotate_half(x) is "
                "[-x_second_half, x_first_half], so the first half becomes "
                "x_i cos θ - x_{i+D/2} sin θ and the second x_{i+D/2} cos θ + x_i sin θ",
            ),
            (
                positional.apply_rope(x, np.arange(len(positions)), layout="half"),
                "you used the row numbers 0, 1, 2, … as positions; turn row t by "
                "positions[t] (the checker's positions are not 0, 1, 2, …)",
            ),
            (
                positional.apply_rope(x, positions + 1, layout="half"),
                "you turned row t by (positions[t] + 1) · ω_i; the angle is positions[t] · ω_i, "
                "so that position 0 is not turned at all",
            ),
            (
                _ch8_rotate_halves(x, np.concatenate([twice, twice], axis=-1)),
                "the exponent is 4i/D: np.arange(0, D, 2) already holds 2i, so multiplying it "
                "by 2 again (or dividing by D/2) counts twice. ω_i = 10000^(-2i/D)",
            ),
            (
                _ch8_rotate_halves(x, np.concatenate([fast, fast], axis=-1)),
                "the positions are MULTIPLIED by 10000^(2i/D); the angle divides by it: θ_i = "
                "pos · ω_i with ω_i = 10000^(-2i/D)",
            ),
            (
                x * np.cos(np.concatenate([angles, angles], axis=-1)),
                "only x · cos θ is there: add the second term, rotate_half(x) · sin θ, with "
                "rotate_half(x) = [-x_second_half, x_first_half]",
            ),
            (
                x * np.cos(both) + x * np.sin(both),
                "the sine term multiplies x itself; it multiplies rotate_half(x) = "
                "[-x_second_half, x_first_half], the partner of each feature in its pair",
            ),
            (
                np.concatenate([right[:, :half], x[:, half:]], axis=-1),
                "only the first half is turned; the second half of a pair changes too: "
                "x_{i+D/2} cos θ + x_i sin θ",
            ),
            (
                _ch8_rotate_halves(x, np.degrees(both)),
                "the angles were turned into degrees; np.cos and np.sin take radians, and "
                "θ_i = pos · ω_i is in radians already",
            ),
            (
                np.concatenate([right[:, half:], right[:, :half]], axis=-1),
                "the two halves of the result are swapped: the first half holds the pairs' "
                "first coordinates, x_i cos θ - x_{i+D/2} sin θ, the second half "
                "x_{i+D/2} cos θ + x_i sin θ",
            ),
            (
                _ch8_rotate_halves(x, np.concatenate([angles, angles], axis=-1)[:, ::-1]),
                "the frequencies are in reverse order: pair 0 (features 0 and D/2) turns "
                "fastest, ω_0 = 1, and the last pair slowest, ω_i = 10000^(-2i/D)",
            ),
            (
                _ch8_rotate_halves(x, np.concatenate([whole, whole], axis=-1)),
                "every pair turns at ω = 1: the exponent was computed with integer division, "
                "2i // D, which is 0 for every i < D/2. Divide with /: ω_i = 10000^(-2i/D)",
            ),
            (
                np.concatenate([first, x[:, half:] * cos + first * sin], axis=-1),
                "the second half was computed from the already turned first half (the first "
                "half's new values fed into x_{i+D/2} cos θ + x_i sin θ). Both halves use the "
                "ORIGINAL features: compute both from x before replacing either",
            ),
            (
                _ch8_rotate_halves(x, np.concatenate([from_one, from_one], axis=-1)),
                "the pair index runs from 1 to D/2 (np.arange(1, D/2 + 1)); it runs from 0 to "
                "D/2 - 1, so that pair 0 (features 0 and D/2) turns at ω_0 = 1",
            ),
        ]

    cases = ((5, 8, [3, 0, 7, 7, 120]), (3, 4, [0, 1, 2]), (4, 16, [10, 2, 500, 1]))

    def checks() -> str:
        for t, d_model, positions in cases:
            x = rng.normal(size=(t, d_model))  # (T, D)
            positions = np.array(positions)
            what = f"{name}(x with shape {x.shape}, positions {positions.tolist()})"
            expected = positional.apply_rope(x, positions, layout="half")  # (T, D)
            given = x.copy()
            result = kit.call_quietly(rope_half, given, positions.copy())
            if not np.array_equal(given, x):
                raise kit.Mistake(
                    f"{what} changed the array x it was given (a write such as "
                    "`x[:, :D//2] = …` or `x *= …` goes into the caller's queries): build the "
                    "result in a new array, e.g. with np.concatenate, and leave x unchanged"
                )
            if np.shape(kit.plain(result)) == expected.shape[::-1] and x.shape[0] != x.shape[1]:
                raise kit.Mistake(
                    f"{what} returned shape {np.shape(kit.plain(result))} = (D, T): one row per "
                    f"position, like x, shape {expected.shape}"
                )
            got = kit.as_result_array(result, expected, what)
            # atol lets float32 answers pass: at position 500 their angles are off by ~3e-5.
            if kit.match_known_mistakes(got, expected, mistakes(x, positions), what, atol=1e-4):
                continue
            kit.assert_close(got, expected, what, atol=1e-4)
        x = rng.normal(size=(5, 8))
        kit.require_own_code(
            rope_half,
            (x, np.arange(5)),
            ("selfattn_lib.positional.apply_rope",),
            name,
            kit.WRITE_IT_YOURSELF,
        )
        return (
            "Your half-split RoPE is right: feature i and feature i + D/2 turn together by "
            "pos · ω_i. It is the interleaved rotation with the features stored in another "
            "order, so weights trained with one layout need the output features of W_Q and "
            "W_K permuted to run with the other."
        )

    return kit.run_checks(checks)
