"""Tests of the checkers of chapter 8 (selfattn_lib.exercises.ch08_positional): each names
the mistake in typical wrong answers and accepts the usual correct alternatives. What every
checker promises is tested once, over REFERENCES, in test_exercises_registry.py."""

import math

import numpy as np
import pytest

from selfattn_lib import exercises

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


def ch8_rope_angles(positions, d_model, exponent=2):
    half = d_model // 2
    return np.asarray(positions, dtype=float)[:, None] * 10000.0 ** (
        -exponent * np.arange(half) / d_model
    )  # (T, D / 2)


def ch8_rope_half(x, positions):
    half = x.shape[-1] // 2
    angles = ch8_rope_angles(positions, x.shape[-1])
    cos, sin = np.cos(angles), np.sin(angles)
    first, second = x[:, :half], x[:, half:]
    return np.concatenate([first * cos - second * sin, first * sin + second * cos], axis=1)


def ch8_stub(*args):
    raise NotImplementedError


CH8_CHECKERS = {
    "split_layout_encoding": (exercises.check_split_layout_encoding, ch8_split_layout_encoding),
    "closest_pair": (exercises.check_closest_pair, ch8_closest_pair),
    "equivariance_gap": (exercises.check_equivariance_gap, ch8_equivariance_gap),
    "decode_position": (exercises.check_decode_position, ch8_decode_position),
    "rope_half": (exercises.check_rope_half, ch8_rope_half),
}


def assert_ch8_mistake(feedback, *fragments):
    assert feedback.attempted and not feedback.passed, feedback
    for fragment in fragments:
        assert fragment in feedback.message, feedback.message


def ch8_split_layout_by_loops(max_len, d_model):
    import math

    encoding = np.zeros((max_len, d_model))
    for pos in range(max_len):
        for i in range(d_model // 2):
            omega = 1 / 10000 ** (2 * i / d_model)
            encoding[pos, i] = math.sin(pos * omega)
            encoding[pos, d_model // 2 + i] = math.cos(pos * omega)
    return encoding


def ch8_split_layout_in_float32_torch(max_len, d_model):
    import math

    import torch

    position = torch.arange(max_len, dtype=torch.float32)[:, None]
    div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
    return torch.cat([torch.sin(position * div_term), torch.cos(position * div_term)], dim=1)


def ch8_split_layout_of_tensor2tensor(max_len, d_model):
    # get_timing_signal_1d: log_timescale_increment = log(10000) / (D/2 - 1)
    half = d_model // 2
    inv_timescales = np.exp(-np.arange(half) * np.log(10000.0) / max(half - 1, 1))
    return ch8_split_of(np.arange(max_len)[:, None] * inv_timescales)


def ch8_split_layout_with_a_frequency_per_column(max_len, d_model):
    angles = np.arange(max_len)[:, None] * 10000.0 ** (-np.arange(d_model) / d_model)
    half = d_model // 2
    return np.concatenate([np.sin(angles[:, :half]), np.cos(angles[:, half:])], axis=1)


@pytest.mark.parametrize(
    "answer",
    [
        lambda t, d: ch8_split_layout_encoding(t, d).astype(np.float32),
        lambda t, d: ch8_split_layout_encoding(t, d).tolist(),
        lambda t, d: ch8_interleaved(t, d)[:, np.r_[0:d:2, 1:d:2]],  # regroup the columns
        ch8_split_layout_by_loops,
        ch8_split_layout_in_float32_torch,
    ],
)
def test_ch8_split_layout_encoding_accepts_equivalent_answers(answer):
    feedback = exercises.check_split_layout_encoding(answer)
    assert feedback.passed, feedback.message


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
        (ch8_split_layout_of_tensor2tensor, ["Tensor2Tensor's frequencies"]),
        (ch8_split_layout_with_a_frequency_per_column, ["its own frequency 10000^(-j/D)"]),
        (lambda t, d: ch8_split_of(ch8_angles(t, d, two=4)), ["exponent is 4i/D"]),
        (lambda t, d: ch8_split_of(ch8_angles(t - 1, d, start=1)), ["returned 5 rows", "0 … 5"]),
        (
            lambda t, d: ch8_split_of(
                np.arange(t)[:, None] * 10000.0 ** -(np.arange(0, d, 2) // d)
            ),
            ["integer division", "2i // D"],
        ),
        (
            lambda t, d: ch8_split_of(np.arange(t)[:, None] * 1000.0 ** (-np.arange(0, d, 2) / d)),
            ["1000^(-2i/D)", "the base is 10000"],
        ),
        (  # RoFormer counts its pairs from 1
            lambda t, d: ch8_split_of(
                np.arange(t)[:, None] * 10000.0 ** (-np.arange(2, d + 1, 2) / d)
            ),
            ["runs from 1 to D/2", "ω_0 = 10000^0 = 1"],
        ),
        (
            lambda t, d: ch8_split_of(np.arange(t)[:, None] * np.exp(-np.arange(0, d, 2) / d)),
            ["e^(-2i/D)", "np.log(10000)"],
        ),
        (lambda t, d: ch8_split_of(np.degrees(ch8_angles(t, d))), ["into degrees", "radians"]),
        (lambda t, d: ch8_split_of(ch8_angles(t, d) * np.pi / 180), ["taken as degrees"]),
    ],
)
def test_ch8_split_layout_encoding_names_typical_mistakes(answer, fragments):
    assert_ch8_mistake(exercises.check_split_layout_encoding(answer), *fragments)


def ch8_closest_pair_by_formula(d_model, wavelength):
    index = d_model / 2 * np.log(wavelength / (2 * np.pi)) / np.log(10000.0)
    return np.clip(np.round(index), 0, d_model // 2 - 1)  # a float64 holding a whole number


def ch8_closest_pair_by_bisection(d_model, wavelength):
    import bisect

    wavelengths = list(ch8_wavelengths(d_model))
    right = bisect.bisect_left(wavelengths, wavelength)
    if right in (0, len(wavelengths)):
        return min(right, len(wavelengths) - 1)
    above, below = wavelengths[right] / wavelength, wavelength / wavelengths[right - 1]
    return right if above < below else right - 1


def ch8_closest_pair_by_loop(d_model, wavelength):
    import math

    ratios = [
        abs(math.log(2 * math.pi * 10000 ** (2 * i / d_model) / wavelength))
        for i in range(d_model // 2)
    ]
    return ratios.index(min(ratios))


@pytest.mark.parametrize(
    "answer",
    [
        ch8_closest_pair_by_formula,
        ch8_closest_pair_by_bisection,
        ch8_closest_pair_by_loop,
        lambda d, w: np.int64(ch8_closest_pair(d, w)),
        lambda d, w: float(ch8_closest_pair(d, w)),
        # by ratio of frequencies: ω_i = 2π / λ_i
        lambda d, w: int(
            np.argmin(np.abs(np.log(2 * np.pi / ch8_wavelengths(d) * w / (2 * np.pi))))
        ),
        lambda d, w: int(np.argmin(np.abs(np.log10(ch8_wavelengths(d)) - np.log10(w)))),
    ],
)
def test_ch8_closest_pair_accepts_equivalent_answers(answer):
    feedback = exercises.check_closest_pair(answer)
    assert feedback.passed, feedback.message


def ch8_index_solved_for(d_model, wavelength):
    return d_model / 2 * np.log(wavelength / (2 * np.pi)) / np.log(10000.0)  # a float


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
        (lambda d, w: ch8_closest_pair(d, w) + 1, ["one more than", "counted from 0"]),
        (lambda d, w: min(ch8_closest_pair(d, w) + 1, d // 2 - 1), ["expected 18"]),
        (lambda d, w: [ch8_closest_pair(d, w)], ["returned shape (1,)"]),
        (
            lambda d, w: int(np.clip(np.floor(ch8_index_solved_for(d, w)), 0, d // 2 - 1)),
            ["DOWN", "i = 17.615"],
        ),
        (
            lambda d, w: int(np.clip(int(ch8_index_solved_for(d, w)), 0, d // 2 - 1)),
            ["DOWN", "int()"],
        ),
        (
            lambda d, w: int(np.clip(np.ceil(ch8_index_solved_for(d, w)), 0, d // 2 - 1)),
            ["UP", "closest_pair(16, 100)", "i = 2.404"],
        ),
        (
            lambda d, w: int(np.round(ch8_index_solved_for(d, w))),
            ["not clipped", "closest_pair(8, 1e+06)", "i = 0 … 3"],
        ),
        (
            lambda d, w: int(
                np.argmin(np.abs(np.log(2 * np.pi * 10000.0 ** (np.arange(d // 2) / d) / w)))
            ),
            ["2π · 10000^(i/D)", "exponent is 2i/D"],
        ),
        (
            lambda d, w: int(np.argmax(np.abs(np.log(ch8_wavelengths(d) / w)))),
            ["FARTHEST", "np.argmin"],
        ),
        (
            lambda d, w: int(np.argmin(np.log(ch8_wavelengths(d) / w))),
            ["pair 0 for every", "np.abs"],
        ),
        (lambda d, w: float(ch8_wavelengths(d)[ch8_closest_pair(d, w)]), ["a WAVELENGTH"]),
        (lambda d, w: int(np.argmin(np.abs(ch8_wavelengths(d) / w - 1))), ["by DIFFERENCE"]),
        (  # one wavelength per dimension, the chapter's "Common mistake" box
            lambda d, w: int(
                np.argmin(np.abs(np.log(2 * np.pi * 10000.0 ** (np.arange(d) / d) / w)))
            ),
            ["returned 35", "one per DIMENSION", "D/2 pairs"],
        ),
    ],
)
def test_ch8_closest_pair_names_typical_mistakes(answer, fragments):
    assert_ch8_mistake(exercises.check_closest_pair(answer), *fragments)


def test_ch8_closest_pair_speaks_of_the_ends_only_for_a_target_beyond_them():
    # An index past the last pair for closest_pair(64, 1000), whose target lies between
    # λ_0 = 6.28 and λ_31 ≈ 47 100: no clipping was missing.
    inside = exercises.check_closest_pair(lambda d, w: ch8_closest_pair(d, w) + d // 2)
    assert_ch8_mistake(inside, "returned 50", "i = 0 … 31, one for each sine–cosine pair")
    assert "beyond the ends" not in inside.message
    beyond = exercises.check_closest_pair(
        lambda d, w: ch8_closest_pair(d, w) if w < 1e5 else d // 2  # past the end for 1e6
    )
    assert_ch8_mistake(beyond, "closest_pair(8, 1e+06) returned 4", "beyond the ends")


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


def ch8_gap_by_loops(x, order, encoding):
    import math

    def attend(z):
        n_tokens, d_model = z.shape
        out = np.zeros_like(z)
        for i in range(n_tokens):
            scores = [float(z[i] @ z[j]) / math.sqrt(d_model) for j in range(n_tokens)]
            weights = np.exp(np.array(scores) - max(scores))
            out[i] = (weights / weights.sum()) @ z
        return out

    shuffled, original = attend(x[order] + encoding), attend(x + encoding)
    return max(
        abs(shuffled[t, f] - original[order[t], f])
        for t in range(len(order))
        for f in range(x.shape[1])
    )


def ch8_gap_by_torch_sdpa_float32(x, order, encoding):
    import torch

    def attend(z):
        z = torch.tensor(z, dtype=torch.float32)[None]  # (1, T, D)
        return torch.nn.functional.scaled_dot_product_attention(z, z, z)[0]

    return (attend(x[order] + encoding) - attend(x + encoding)[order]).abs().max()


@pytest.mark.parametrize(
    "answer",
    [
        ch8_gap_by_unshuffling,
        ch8_gap_in_float32_torch,
        ch8_gap_by_loops,
        ch8_gap_by_torch_sdpa_float32,
        lambda x, o, e: np.max(np.abs(ch8_self_attention(x[o] + e) - ch8_self_attention(x + e)[o])),
    ],
)
def test_ch8_equivariance_gap_accepts_unshuffling_and_float32(answer):
    # float32 rounding leaves a gap of about 1e-7 where the exact gap is 0: still correct.
    feedback = exercises.check_equivariance_gap(answer)
    assert feedback.passed, feedback.message


def ch8_gap_of_the_weights(x, order, encoding):
    from selfattn_lib.attention import scaled_dot_product_attention

    shuffled, original = x[order] + encoding, x + encoding
    weights = scaled_dot_product_attention(shuffled, shuffled, shuffled)[1]
    weights_original = scaled_dot_product_attention(original, original, original)[1]
    return float(np.abs(weights - weights_original[order][:, order]).max())


def ch8_gap_with_bare_values(x, order, encoding):
    from selfattn_lib.attention import scaled_dot_product_attention

    shuffled, original = x[order] + encoding, x + encoding
    ours = scaled_dot_product_attention(shuffled, shuffled, x[order])[0]  # values: x alone
    theirs = scaled_dot_product_attention(original, original, x)[0]
    return float(np.abs(ours - theirs[order]).max())


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
            ["array of shape (5, 4)", "ONE number"],
        ),
        (
            lambda x, o, e: np.abs(ch8_self_attention(x[o] + e) - ch8_self_attention(x + e)[o]).max(
                1
            ),
            ["array of shape (5,)", "ONE number"],
        ),
        (lambda x, o, e: ch8_equivariance_gap(x, o, e, reduce=np.sum), ["SUM"]),
        (
            lambda x, o, e: float(
                np.linalg.norm(ch8_self_attention(x[o] + e) - ch8_self_attention(x + e)[o])
            ),
            ["Frobenius norm"],
        ),
        (
            lambda x, o, e: float(
                np.abs(ch8_self_attention(x + e[o]) - ch8_self_attention(x + e)[o]).max()
            ),
            ["shuffled the ENCODING", "x[order] + encoding"],
        ),
        (
            lambda x, o, e: float(
                np.abs(ch8_self_attention(x + e[o]) - ch8_self_attention(x + e)).max()
            ),
            ["shuffled the ENCODING", "unshuffled outputs"],
        ),
        (
            lambda x, o, e: float(
                np.abs(ch8_self_attention(x[o] + e) - ch8_self_attention(x)[o]).max()
            ),
            ["WITHOUT the encoding"],
        ),
        (lambda x, o, e: float(np.abs((x[o] + e) - (x + e)[o]).max()), ["INPUTS of attention"]),
        (ch8_gap_of_the_weights, ["attention WEIGHTS", "OUTPUTS"]),
        (ch8_gap_with_bare_values, ["WITHOUT the encodings as the values"]),
        (
            lambda x, o, e: float(
                np.linalg.norm(
                    ch8_self_attention(x[o] + e) - ch8_self_attention(x + e)[o], axis=1
                ).max()
            ),
            ["largest LENGTH of a token's difference"],
        ),
    ],
)
def test_ch8_equivariance_gap_names_typical_mistakes(answer, fragments):
    assert_ch8_mistake(exercises.check_equivariance_gap(answer), *fragments)


def ch8_decode_by_search(row):
    from selfattn_lib.positional import sinusoidal_encoding

    table = sinusoidal_encoding(20000, len(row))  # (20000, D): every allowed position
    return int(np.argmin(np.abs(table - row).sum(axis=1)))


def ch8_decode_by_pair_0(row):
    # Pair 0 alone: its angle mod 2π differs for every whole position below 20000 (the
    # closest two, p and p + 710, are 6e-5 rad apart), so a nearest search finds p.
    positions = np.arange(20000)
    return int(np.argmin((np.sin(positions) - row[0]) ** 2 + (np.cos(positions) - row[1]) ** 2))


def ch8_slowest(row):
    return 10000.0 ** (-(len(row) - 2) / len(row))


def ch8_decode_coarse_to_fine(row):
    # The slowest pair's estimate, refined pair by pair down to the fastest.
    d_model = len(row)
    omegas = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)  # (D / 2,)
    angles = np.mod(np.arctan2(row[0::2], row[1::2]), 2 * np.pi)  # (D / 2,)
    estimate = angles[-1] / omegas[-1]
    for i in range(d_model // 2 - 2, -1, -1):
        turns = np.round((estimate * omegas[i] - angles[i]) / (2 * np.pi))
        estimate = (angles[i] + 2 * np.pi * turns) / omegas[i]
    return int(round(estimate))


def ch8_decode_in_float32_torch(row):
    import math

    import torch

    row_t = torch.tensor(row, dtype=torch.float32)
    angle = torch.remainder(torch.atan2(row_t[-2], row_t[-1]), 2 * math.pi)
    return torch.round(angle / ch8_slowest(row))


def ch8_decode_with_an_if(row):
    angle = np.arctan2(row[-2], row[-1])
    if angle < 0:
        angle += 2 * np.pi
    return round(angle / ch8_slowest(row))


def ch8_decode_by_pair(pair_from_the_end):
    """A decoder that reads the pair ``pair_from_the_end`` places before the slowest."""

    def decode(row):
        i = len(row) // 2 - 1 - pair_from_the_end
        omega = 10000.0 ** (-2 * i / len(row))
        return round(np.mod(np.arctan2(row[2 * i], row[2 * i + 1]), 2 * np.pi) / omega)

    return decode


def ch8_decode_dividing_by(omega_of_d):
    def decode(row):
        return round(np.mod(ch8_slowest_angle(row), 2 * np.pi) / omega_of_d(len(row)))

    return decode


@pytest.mark.parametrize(
    "answer",
    [
        ch8_decode_by_search,
        ch8_decode_by_pair_0,
        lambda row: np.mod(ch8_slowest_angle(row), 2 * np.pi) / ch8_slowest(row),  # not rounded
        lambda row: np.int64(ch8_decode_position(np.asarray(row))),
        ch8_decode_coarse_to_fine,
        ch8_decode_in_float32_torch,
        ch8_decode_with_an_if,
    ],
)
def test_ch8_decode_position_accepts_equivalent_answers(answer):
    feedback = exercises.check_decode_position(answer)
    assert feedback.passed, feedback.message


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
            ["pair 0 turns once every 6.283 positions", "modulo 6.283", "PE[7]"],
        ),
        (
            lambda row: round(np.mod(ch8_slowest_angle(row, 2, 3), 2 * np.pi) * 10000 ** (2 / 32)),
            ["pair 1 turns once every"],
        ),
        (lambda row: ch8_decode_position(row) + 0.3, ["round to the nearest whole number"]),
        (lambda row: ch8_decode_position(row) + 1, ["expected 0"]),
        (
            ch8_decode_by_pair(1),  # the second-slowest pair: pair 14 of D = 32, not pair 6
            ["PE[19999] with D = 32", "pair 14 turns once every 1.987e+04"],
        ),
        (
            lambda row: int(np.mod(ch8_slowest_angle(row), 2 * np.pi) / ch8_slowest(row)),
            ["int() (or np.floor) cuts off", "round(...)"],
        ),
        (  # at PE[1] with D = 32 the angle / ω is 1.0000000000000002
            lambda row: math.ceil(np.mod(ch8_slowest_angle(row), 2 * np.pi) / ch8_slowest(row)),
            ["PE[1] with D = 32) returned 2 for position 1", "rounds UP", "round(...)"],
        ),
        (
            lambda row: np.ceil(np.mod(ch8_slowest_angle(row), 2 * np.pi) / ch8_slowest(row)),
            ["rounds UP"],
        ),
        (ch8_decode_dividing_by(lambda d: 1e-4), ["divided the angle by 1/10000"]),
        (ch8_decode_dividing_by(lambda d: 10000.0 ** (-(d - 1) / d)), ["10000^(-(D-1)/D)"]),
        (  # i/D for 2i/D: reads PE[0] right, so it must not be taken for a rounding slip
            ch8_decode_dividing_by(lambda d: 10000.0 ** (-(d / 2 - 1) / d)),
            ["PE[1] with D = 32", "10000^(-(D/2-1)/D)", "the exponent is 2i/D"],
        ),
        (
            lambda row: round(np.mod(np.arctan(row[-2] / row[-1]), 2 * np.pi) / ch8_slowest(row)),
            ["np.arctan(sine / cosine)", "np.arctan2"],
        ),
        (
            lambda row: round(np.mod(ch8_slowest_angle(row), np.pi) / ch8_slowest(row)),
            ["[0, π)", "np.mod(angle, 2 * np.pi)"],
        ),
        (
            lambda row: round(
                np.degrees(np.mod(ch8_slowest_angle(row), 2 * np.pi)) / ch8_slowest(row)
            ),
            ["degrees"],
        ),
        (
            lambda row: round(np.mod(ch8_slowest_angle(row), 2 * np.pi) * ch8_slowest(row)),
            ["multiplied the angle by ω"],
        ),
    ],
)
def test_ch8_decode_position_names_typical_mistakes(answer, fragments):
    assert_ch8_mistake(exercises.check_decode_position(answer), *fragments)


@pytest.mark.parametrize("pair", range(15))
def test_ch8_decode_position_names_the_pair_a_decoder_used(pair):
    # With D = 32, λ_14 = 100 λ_6: position 19999 is 129.8 past a whole turn of both, so the
    # catalogue is searched from the slowest pair down.
    feedback = exercises.check_decode_position(ch8_decode_by_pair(15 - pair))  # pair i of D = 32
    assert_ch8_mistake(feedback, f"pair {pair} turns once every")


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


def ch8_rope_by_rotate_half(x, positions, *, tile=np.concatenate, sign=1.0, exponent=2):
    """Hugging Face's formulation: x * cos + rotate_half(x) * sin, one angle per feature."""
    half = x.shape[-1] // 2
    angles = ch8_rope_angles(positions, x.shape[-1], exponent)
    if tile is np.concatenate:
        angles = np.concatenate([angles, angles], axis=-1)
    else:
        angles = tile(angles)
    turned = np.concatenate([-x[:, half:], x[:, :half]], axis=-1)
    return x * np.cos(angles) + sign * turned * np.sin(angles)


def ch8_rope_turning_one_half_after_the_other(x, positions):
    half = x.shape[-1] // 2
    angles = ch8_rope_angles(positions, x.shape[-1])
    a, b = x[:, :half], x[:, half:]
    a = a * np.cos(angles) - b * np.sin(angles)
    b = b * np.cos(angles) + a * np.sin(angles)  # uses the new a: the sequential-update bug
    return np.concatenate([a, b], axis=1)


def ch8_rope_in_torch_float32(x, positions):
    import torch

    q = torch.tensor(x, dtype=torch.float32)
    half = q.shape[-1] // 2
    inv_freq = 1.0 / 10000.0 ** (torch.arange(0, q.shape[-1], 2, dtype=torch.float32) / q.shape[-1])
    angles = torch.tensor(positions, dtype=torch.float32)[:, None] * inv_freq
    emb = torch.cat([angles, angles], dim=-1)
    turned = torch.cat([-q[:, half:], q[:, :half]], dim=-1)
    return q * emb.cos() + turned * emb.sin()


def ch8_rope_interleaved(x, positions):
    angles = ch8_rope_angles(positions, x.shape[-1])
    out = np.empty_like(x)
    out[:, 0::2] = x[:, 0::2] * np.cos(angles) - x[:, 1::2] * np.sin(angles)
    out[:, 1::2] = x[:, 0::2] * np.sin(angles) + x[:, 1::2] * np.cos(angles)
    return out


def ch8_rope_per_feature(x, positions):
    d_model = x.shape[-1]
    angles = np.asarray(positions, dtype=float)[:, None] * 10000.0 ** (
        -np.arange(d_model) / d_model
    )
    half = d_model // 2
    turned = np.concatenate([-x[:, half:], x[:, :half]], axis=-1)
    return x * np.cos(angles) + turned * np.sin(angles)


def ch8_rope_by_library(x, positions):
    from selfattn_lib import positional

    return positional.apply_rope(x, positions, layout="half")


def ch8_rope_row_numbers(x, positions):
    return ch8_rope_half(x, np.arange(len(positions)))


def ch8_rope_without_the_sine_term(x, positions):
    return x * np.cos(np.tile(ch8_rope_angles(positions, x.shape[-1]), 2))


def ch8_rope_with_x_for_rotate_half(x, positions):
    angles = np.tile(ch8_rope_angles(positions, x.shape[-1]), 2)
    return x * np.cos(angles) + x * np.sin(angles)


def ch8_rope_of_the_first_half_only(x, positions):
    half = x.shape[-1] // 2
    return np.concatenate([ch8_rope_half(x, positions)[:, :half], x[:, half:]], axis=1)


def ch8_rope_in_place(x, positions):
    x[:] = ch8_rope_half(x, positions)
    return x


def ch8_rope_by_complex_numbers(x, positions):
    half = x.shape[-1] // 2
    turned = (x[:, :half] + 1j * x[:, half:]) * np.exp(1j * ch8_rope_angles(positions, x.shape[-1]))
    return np.concatenate([turned.real, turned.imag], axis=1)


def ch8_rope_by_loops(x, positions):
    import math

    n_tokens, d_model = x.shape
    out = np.empty_like(x)
    for t in range(n_tokens):
        for i in range(d_model // 2):
            theta = positions[t] * 10000 ** (-2 * i / d_model)
            a, b = x[t, i], x[t, i + d_model // 2]
            out[t, i] = a * math.cos(theta) - b * math.sin(theta)
            out[t, i + d_model // 2] = a * math.sin(theta) + b * math.cos(theta)
    return out


@pytest.mark.parametrize(
    "answer",
    [
        ch8_rope_by_rotate_half,
        ch8_rope_in_torch_float32,
        ch8_rope_by_complex_numbers,
        ch8_rope_by_loops,
        lambda x, p: ch8_rope_half(x, p).astype(np.float32),
        lambda x, p: ch8_rope_half(x.copy(), list(p)),
    ],
)
def test_ch8_rope_half_accepts_the_rotate_half_formulation_and_float32(answer):
    feedback = exercises.check_rope_half(answer)
    assert feedback.passed, feedback.message


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (ch8_rope_interleaved, ["INTERLEAVED layout", "(x_0, x_{D/2})"]),
        (
            lambda x, p: ch8_rope_by_rotate_half(x, p, tile=lambda a: np.repeat(a, 2, axis=-1)),
            ["laid out for the interleaved layout", "np.concatenate([θ, θ]"],
        ),
        (ch8_rope_per_feature, ["its own frequency 10000^(-j/D)"]),
        (lambda x, p: ch8_rope_by_rotate_half(x, p, exponent=1), ["exponent is 2i/D"]),
        (lambda x, p: ch8_rope_by_rotate_half(x, p, sign=-1.0), ["wrong way (by -θ)"]),
        (ch8_rope_row_numbers, ["row numbers 0, 1, 2"]),
        (ch8_rope_by_library, ["calls `selfattn_lib.positional.apply_rope`"]),
        (ch8_rope_in_place, ["changed the array x it was given", "leave x unchanged"]),
        (lambda x, p: ch8_rope_half(x, p).T, ["returned shape (8, 5) = (D, T)"]),
        (lambda x, p: ch8_rope_half(x, np.asarray(p) + 1), ["(positions[t] + 1)"]),
        (lambda x, p: ch8_rope_by_rotate_half(x, p, exponent=4), ["exponent is 4i/D"]),
        (lambda x, p: ch8_rope_by_rotate_half(x, p, exponent=-2), ["MULTIPLIED"]),
        (ch8_rope_without_the_sine_term, ["only x · cos θ", "rotate_half(x) · sin θ"]),
        (ch8_rope_with_x_for_rotate_half, ["multiplies x itself", "rotate_half(x)"]),
        (ch8_rope_of_the_first_half_only, ["only the first half is turned"]),
        (
            lambda x, p: (
                np.concatenate(  # rotate_half written as [x₂, -x₁]
                    [x[:, : x.shape[1] // 2], x[:, x.shape[1] // 2 :]], axis=1
                )
                * np.cos(np.tile(ch8_rope_angles(p, x.shape[-1]), 2))
                + np.concatenate([x[:, x.shape[1] // 2 :], -x[:, : x.shape[1] // 2]], axis=1)
                * np.sin(np.tile(ch8_rope_angles(p, x.shape[-1]), 2))
            ),
            ["wrong way (by -θ)"],
        ),
        (
            lambda x, p: ch8_rope_by_rotate_half(x, p, tile=lambda a: np.degrees(np.tile(a, 2))),
            ["into degrees", "radians"],
        ),
        (
            lambda x, p: np.roll(ch8_rope_half(x, p), x.shape[-1] // 2, axis=1),
            ["two halves of the result are swapped"],
        ),
        (
            lambda x, p: ch8_rope_by_rotate_half(x, p, tile=lambda a: np.tile(a[:, ::-1], 2)),
            ["reverse order", "ω_0 = 1"],
        ),
        (
            lambda x, p: ch8_rope_by_rotate_half(x, p, exponent=0),  # 2i // D: 0 for every i
            ["integer division", "2i // D"],
        ),
        (ch8_rope_turning_one_half_after_the_other, ["already turned first half", "ORIGINAL"]),
        (
            lambda x, p: ch8_rope_by_rotate_half(
                x, p, tile=lambda a: np.tile(a * 10000.0 ** (-2 / x.shape[-1]), 2)
            ),  # pairs counted from 1: every ω_i one step slower
            ["runs from 1 to D/2", "ω_0 = 1"],
        ),
    ],
)
def test_ch8_rope_half_names_typical_mistakes(answer, fragments):
    assert_ch8_mistake(exercises.check_rope_half(answer), *fragments)


# Every checker of the chapter with a correct answer: test_exercises_registry.py runs them.
REFERENCES = {
    **{checker.__name__: solution for checker, solution in CH8_CHECKERS.values()},
}
