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
        slow = np.arange(max_len)[:, None] * _CH8_BASE ** (-np.arange(half) / d_model)
        fast = np.arange(max_len)[:, None] / _ch8_frequencies(d_model)  # pos · 10000^(2i/D)
        return [
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
        ]

    def checks() -> str:
        for max_len, d_model in ((6, 4), (50, 16), (3, 2), (9, 10)):
            what = f"{name}({max_len}, {d_model})"
            expected = _split_layout(positional.sinusoidal_encoding(max_len, d_model))  # (T, D)
            result = kit.call_quietly(split_layout_encoding, max_len, d_model)
            if np.shape(result) == expected.shape[::-1] and max_len != d_model:
                raise kit.Mistake(
                    f"{what} returned shape {np.shape(result)} = (D, T): one row per position, "
                    f"one column per dimension, shape {expected.shape}"
                )
            got = kit.as_result_array(result, expected, what)
            slips = mistakes(max_len, d_model)
            if kit.match_known_mistakes(got, expected, slips, f"{what} is wrong", atol=1e-6):
                continue
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
    # of wavelengths, the third a difference of frequencies.
    cases = (
        (64, 1000.0), (8, 300.0), (16, 100.0), (8, 40.0), (8, 3.0), (8, 1e6), (512, 100.0),
        (512, 5.0),
    )  # fmt: skip

    def checks() -> str:
        for d_model, target in cases:
            what = f"{name}({d_model}, {target:g})"
            wavelengths = _ch8_wavelengths(d_model)  # (D / 2,)
            expected = _ch8_log_closest(wavelengths, target)
            result = kit.call_quietly(closest_pair, d_model, target)
            got_value = float(kit.as_result_array(result, np.zeros(()), what))
            if got_value != round(got_value):
                raise kit.Mistake(f"{what} returned {got_value:g}; a pair index is a whole number")
            got = int(round(got_value))
            if got == expected:
                continue
            if expected > 0 and got == 2 * expected:
                raise kit.Mistake(
                    f"{what} returned {got}, the DIMENSION 2i of the pair's sine; the answer "
                    f"is the pair index i = {expected}"
                )
            if not 0 <= got < d_model // 2:
                raise kit.Mistake(
                    f"{what} returned {got}, but with D = {d_model} the pairs are i = 0 … "
                    f"{d_model // 2 - 1}; a target beyond the ends gets the first or last pair"
                )
            if got == _ch8_log_closest(wavelengths / (2 * np.pi), target):
                raise kit.Mistake(
                    f"{what} returned {got}: you compared with 10000^(2i/D), which is λ_i / 2π. "
                    "The wavelength of sin(pos · ω_i) is λ_i = 2π / ω_i = 2π · 10000^(2i/D)"
                )
            if got == int(np.argmin(np.abs(wavelengths - target))):
                raise kit.Mistake(
                    f"{what} returned {got}, whose wavelength {wavelengths[got]:.4g} is closest "
                    f"by DIFFERENCE; the wavelengths grow geometrically, so compare ratios: "
                    f"λ_{expected} = {wavelengths[expected]:.4g} is off by a smaller factor. "
                    "Minimise |log(λ_i / wavelength)|"
                )
            if got == int(np.argmin(np.abs(2 * np.pi / wavelengths - 2 * np.pi / target))):
                raise kit.Mistake(
                    f"{what} returned {got}, whose FREQUENCY ω_{got} is closest to 2π / "
                    f"{target:g} by difference; frequencies, like wavelengths, change by the "
                    "same factor from pair to pair, so compare wavelengths by ratio: minimise "
                    "|log(λ_i / wavelength)|"
                )
            raise kit.Mistake(
                f"{what} returned {got} (λ = {wavelengths[got]:.4g}), expected {expected} "
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

        return {
            "right": float(np.abs(shuffled - original[order]).max()),
            "invariance": float(np.abs(shuffled - original).max()),
            "inverse": float(np.abs(shuffled - original[np.argsort(order)]).max()),
            "mean": float(np.abs(shuffled - original[order]).mean()),
            "unscaled": float(np.abs(unscaled(x[order] + enc) - unscaled(x + enc)[order]).max()),
            "signed": float((shuffled - original[order]).max()),
        }

    def check_one(order: np.ndarray, enc: np.ndarray, label: str) -> None:
        what = f"{name}(x, order={order.tolist()}, {label})"
        result = kit.call_quietly(equivariance_gap, x.copy(), order.copy(), enc.copy())
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
                "used unscaled scores z zᵀ; divide them by √D as scaled_dot_product_attention does",
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

    def row_of(position: int, d_model: int) -> np.ndarray:
        return positional.sinusoidal_encoding(position + 1, d_model)[position]  # (D,)

    def explain(got: float, position: int, d_model: int, what: str) -> None:
        omega = _ch8_frequencies(d_model)  # (D / 2,)
        wavelengths = 2 * np.pi / omega
        slowest = float(omega[-1])
        theta = position * slowest
        if abs(got - position) < 0.5:
            raise kit.Mistake(
                f"{what} returned {got:.10g} for position {position}: round to the nearest "
                "whole number"
            )
        mirror = (
            f"cannot tell an angle of {theta:.3f} from its mirror image. Use both: "
            "np.arctan2(sine, cosine)"
        )
        # (wrong result, explanation), each explanation continuing "<call> returned <got>".
        mistakes = [
            (
                position - wavelengths[-1],
                ": np.arctan2 returns angles in (-π, π], and the slowest pair of position "
                f"{position} has turned by {theta:.3f} > π. Add 2π to negative angles: "
                "np.mod(angle, 2 * np.pi)",
            ),
            (np.arcsin(np.sin(theta)) / slowest, f": np.arcsin of the sine alone {mirror}"),
            (np.arccos(np.cos(theta)) / slowest, f": np.arccos of the cosine alone {mirror}"),
            (
                np.mod(np.pi / 2 - theta, 2 * np.pi) / slowest,
                ": the arguments of np.arctan2 are swapped. It is np.arctan2(y, x) = "
                "np.arctan2(sine, cosine), and the sine is the even dimension D - 2",
            ),
            *(
                (
                    position % wavelength,  # the position itself while it is under a turn
                    f" for position {position}: pair {pair} repeats every {wavelength:.4g} "
                    "positions, so it only knows the position up to whole turns. Use the "
                    "slowest pair (dimensions D - 2 and D - 1), which turns less than once "
                    "over 20000 positions",
                )
                for pair, wavelength in enumerate(wavelengths[:-1])
            ),
        ]
        # A whole-number answer can be up to 0.5 away from a slip's exact (unrounded) result.
        kit.match_known_mistakes(
            got, position, mistakes, f"{what} returned {got:.6g}", rtol=0, atol=0.5, joiner=""
        )

    def checks() -> str:
        for d_model in (32, 64, 512):
            for position in positions:
                what = f"{name}(PE[{position}] with D = {d_model})"
                result = kit.call_quietly(decode_position, row_of(position, d_model))
                got = float(kit.as_result_array(result, np.zeros(()), what))
                if abs(got - position) < 1e-6:
                    continue
                explain(got, position, d_model, what)
                raise kit.Mistake(f"{what} returned {got:.6g}, expected {position}")
        return (
            "Your decoder reads every position back: the slowest pair works like the hour hand "
            "of a clock, unambiguous over its whole turn, while the fast pairs add the detail."
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
        per_feature = positions[:, None] * _CH8_BASE ** (-np.arange(d_model) / d_model)
        unpaired = positions[:, None] * _CH8_BASE ** (-np.arange(d_model // 2) / d_model)
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
        ]

    cases = ((5, 8, [3, 0, 7, 7, 120]), (3, 4, [0, 1, 2]), (4, 16, [10, 2, 500, 1]))

    def checks() -> str:
        for t, d_model, positions in cases:
            x = rng.normal(size=(t, d_model))  # (T, D)
            positions = np.array(positions)
            what = f"{name}(x with shape {x.shape}, positions {positions.tolist()})"
            expected = positional.apply_rope(x, positions, layout="half")  # (T, D)
            result = kit.call_on_copy(rope_half, x, positions.copy())
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
