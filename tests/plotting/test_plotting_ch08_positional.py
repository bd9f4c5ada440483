"""Tests of selfattn_lib.plotting.ch08_positional: the figures of chapter 8."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from selfattn_lib import plotting


def test_ch8_encoding_heatmap_draws_the_matrix_with_labels_and_a_centred_colour_bar():
    from selfattn_lib.positional import sinusoidal_encoding

    encoding = sinusoidal_encoding(10, 6)
    fig = plotting.encoding_heatmap(encoding, title="PE")
    ax, colorbar = fig.axes
    image = ax.images[0]
    np.testing.assert_array_equal(image.get_array(), encoding)
    assert image.get_cmap().name == plotting.DIVERGING_CMAP
    assert image.get_clim() == (-1.0, 1.0)  # symmetric, so 0 is white
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("dimension", "position", "PE")
    assert colorbar.get_ylabel() == "encoding value"
    assert len(ax.texts) == 0  # no cell labels on a large matrix


def test_ch8_encoding_heatmap_non_negative_data_and_bad_input():
    fig = plotting.encoding_heatmap(np.ones((3, 3)), xlabel="position", colorbar_label="dot")
    assert fig.axes[0].images[0].get_cmap().name == plotting.SEQUENTIAL_CMAP
    assert fig.axes[0].get_xlabel() == "position" and fig.axes[1].get_ylabel() == "dot"
    with pytest.raises(ValueError, match=r"2-D \(T, D\), got shape \(3,\)"):
        plotting.encoding_heatmap(np.ones(3))
    with pytest.raises(ValueError, match="NaN or infinity"):
        plotting.encoding_heatmap(np.array([[0.0, np.nan]]))
    fig = Figure()
    left, right = fig.subplots(1, 2)
    assert plotting.encoding_heatmap(np.eye(2), ax=right) is fig
    assert len(left.images) == 0 and len(right.images) == 1


def test_ch8_positional_waves_marks_the_value_and_highlights_the_dimension():
    from selfattn_lib.positional import sinusoidal_encoding

    encoding = sinusoidal_encoding(32, 8)
    fig = plotting.positional_waves(8, position=5, dimension=3, max_len=32)
    wave_ax, vector_ax = fig.axes
    dots = wave_ax.lines[2]  # the integer positions of the chosen dimension
    np.testing.assert_allclose(dots.get_ydata(), encoding[:, 3])
    marker = wave_ax.lines[-1]
    assert marker.get_xdata()[0] == 5 and marker.get_ydata()[0] == pytest.approx(encoding[5, 3])
    assert "dimension 3 (pair 1)" in wave_ax.get_title()
    assert "wavelength 62.83" in wave_ax.get_title()
    labels = [text.get_text() for text in wave_ax.get_legend().get_texts()]
    assert labels == ["dim 2 = sin(pos · ω_1)", "dim 3 = cos(pos · ω_1)"]
    heights = [patch.get_height() for patch in vector_ax.patches]
    np.testing.assert_allclose(heights, encoding[5])
    colours = {patch.get_facecolor() for i, patch in enumerate(vector_ax.patches) if i != 3}
    assert len(colours) == 1 and vector_ax.patches[3].get_facecolor() not in colours
    assert vector_ax.get_title() == "PE[5], all 8 dimensions"
    assert fig.get_size_inches()[0] == plotting.COLUMN_WIDTH  # fits the book's column


def test_ch8_positional_waves_rejects_bad_input_and_draws_into_given_axes():
    with pytest.raises(ValueError, match=r"position must be in \[0, 64\), got 64"):
        plotting.positional_waves(8, position=64, dimension=0)
    with pytest.raises(ValueError, match=r"dimension must be in \[0, 8\), got -1"):
        plotting.positional_waves(8, position=0, dimension=-1)
    with pytest.raises(ValueError, match="d_model must be even"):
        plotting.positional_waves(5, position=0, dimension=0)
    with pytest.raises(ValueError, match="max_len must be a positive integer"):
        plotting.positional_waves(8, position=0, dimension=0, max_len=0)
    with pytest.raises(ValueError, match="2 axes"):
        plotting.positional_waves(8, 0, 0, axes=Figure().subplots(1, 3))
    fig = Figure()
    axes = fig.subplots(2, 2)
    assert plotting.positional_waves(8, 1, 0, axes=axes[1]) is fig
    assert axes[0, 0].get_title() == "" and axes[1, 1].get_title() == "PE[1], all 8 dimensions"


def ch8_rope_case(d_model=8, positions=(0, 1, 2, 3)):
    from selfattn_lib import positional

    q = np.zeros((len(positions), d_model))
    q[:, 0], q[:, 1] = 1.0, 0.4  # the same query at every position
    rotated = positional.apply_rope(q, np.array(positions))  # (n, D)
    angles = positional.rope_angles(np.array(positions), d_model)[:, 0]  # (n,)
    return rotated[:, :2], list(positions), angles


def test_ch8_rope_rotation_draws_the_library_numbers_and_says_them_in_its_alt_text():
    from matplotlib.text import Annotation, Text

    from selfattn_lib.plotting.diagrams import Diagram

    pair_values, positions, angles = ch8_rope_case()
    diagram = plotting.rope_rotation(pair_values, positions, angles, d_model=8)
    assert isinstance(diagram, Diagram)
    fig = diagram.figure
    assert fig.get_size_inches()[0] <= plotting.COLUMN_WIDTH
    arrows = {a.get_gid(): a.xy for a in fig.findobj(Annotation) if a.get_gid()}
    for index, row in enumerate(pair_values):
        np.testing.assert_allclose(arrows[f"arrow[{index}]"], row)
    texts = [t for t in fig.findobj(Text) if t.get_text()]
    labels = {t.get_gid(): t.get_text() for t in texts if t.get_gid()}
    drawn = [float(labels[f"angle[{i},0]"].split("\n")[1].split()[0]) for i in range(4)]
    np.testing.assert_allclose(drawn, [0.0, 1.0, 2.0, 3.0])  # pos · ω_0 with ω_0 = 1
    assert min(t.get_fontsize() for t in texts) >= 8
    features = [t.get_text() for t in texts if t.get_text().startswith("x")]
    assert features == [f"x{j}" for j in range(8)] * 2
    alt = diagram.alt
    assert alt.startswith("Computed diagram: RoPE turns pairs of features, D = 8.")
    assert "(x0, x1), (x2, x3), (x4, x5), (x6, x7)" in alt
    assert "(x0, x4), (x1, x5), (x2, x6), (x3, x7)" in alt
    a, b = pair_values[1]
    assert f"position 1, θ = 1.00 rad, ({a:.2f}, {b:.2f})" in alt
    assert diagram._repr_mimebundle_()["text/plain"] == alt
    # The arrows are the interleaved pair (x0, x1): on the same vector the half-split layout
    # turns (x0, x4), other numbers, so the figure says which layout it draws.
    plane = fig.axes[1]
    assert plane.get_xlabel() == "first of interleaved pair 0: x0"
    assert plane.get_ylabel() == "second of interleaved pair 0: x1"
    assert "Interleaved pair 0 of q, (x0, x1), drawn as an arrow" in alt
    words = " ".join(t.get_text().replace("\n", " ") for t in texts)
    assert "half-split RoPE is interleaved RoPE with the features permuted" in words
    assert "same pairs" not in words + alt


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"pair_values": np.ones((4, 3))}, r"shape \(n, 2\)"),
        ({"positions": [0, 1]}, "one position and one angle per row"),
        ({"d_model": 7}, "positive even integer"),
        ({"d_model": 18}, "at most 16 features"),
        ({"pair": 4}, r"pair must be in \[0, 4\)"),
        ({"pair_values": np.full((4, 2), np.nan)}, "NaN or infinity"),
    ],
)
def test_ch8_rope_rotation_rejects_bad_input(change, message):
    pair_values, positions, angles = ch8_rope_case()
    arguments = {"pair_values": pair_values, "positions": positions, "angles": angles}
    arguments |= {"d_model": 8, **change}
    with pytest.raises(ValueError, match=message):
        plotting.rope_rotation(**arguments)


# --- Drawn for a phone ----------------------------------------------------------------------


def ch8_words(fig):
    """The words of a figure's texts, titles, labels and legends (not its numbers)."""
    from matplotlib.text import Text

    lines = [text.get_text() for text in fig.findobj(Text) if text.get_visible()]
    return {word for line in lines for word in line.split() if word[0].isalpha()}


def ch8_similarity_arguments():
    offsets = np.arange(200)
    cosines = {
        d: np.cos(offsets[:, None] * 10000.0 ** (-np.arange(0, d, 2) / d)).mean(axis=1)
        for d in (8, 16)
    }
    rises = {d: int(np.flatnonzero(np.diff(c) > 0)[0]) for d, c in cosines.items()}
    gram = np.cos(np.subtract.outer(np.arange(10), np.arange(10)) / 3)
    return gram, cosines, rises


def test_ch8_encoding_similarity_draws_the_dot_products_and_the_cosine_curves():
    gram, cosines, rises = ch8_similarity_arguments()
    fig = plotting.encoding_similarity(gram, cosines, rises, d_model=8, max_offset=120)
    heat, curves, colour_bar = fig.axes
    assert heat.get_title() == "PE[p] · PE[q], D = 8"
    assert (heat.get_xlabel(), heat.get_ylabel()) == ("position q", "position p")
    assert colour_bar.get_ylabel() == "dot product"
    assert curves.get_title() == "Falls fast, then wobbles (dots: first rise)"
    assert curves.get_xlabel() == "offset k = q - p"
    assert curves.get_ylabel() == "cosine similarity of PE[p], PE[p + k]"
    assert [t.get_text() for t in curves.get_legend().get_texts()] == ["D = 8", "D = 16"]
    lines = curves.get_lines()
    assert len(lines[0].get_xdata()) == 121  # k = 0 … 120
    assert lines[1].get_xdata()[0] == rises[8] and lines[1].get_ydata()[0] == cosines[8][rises[8]]
    assert curves.get_position().x0 > heat.get_position().x1  # side by side on a laptop
    with pytest.raises(ValueError, match="one first rise per curve"):
        plotting.encoding_similarity(gram, cosines, {8: 3}, d_model=8)
    with pytest.raises(ValueError, match="more than max_offset"):
        plotting.encoding_similarity(gram, cosines, rises, d_model=8, max_offset=500)


def test_ch8_figures_stack_their_panels_for_a_phone():
    gram, cosines, rises = ch8_similarity_arguments()
    for draw, args, kwargs in [
        (plotting.encoding_similarity, (gram, cosines, rises), {"d_model": 8}),
        (plotting.positional_waves, (8, 2, 0), {}),
        (plotting.encoding_heatmap, (gram,), {"title": "PE"}),
    ]:
        laptop, phone = draw(*args, **kwargs), draw(*args, **kwargs, layout="phone")
        assert phone.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
        assert ch8_words(laptop) <= ch8_words(phone)
        panels = [ax for ax in phone.axes if ax.get_label() != "<colorbar>"]
        tops = [ax.get_position().y0 for ax in panels]
        assert tops == sorted(tops, reverse=True)  # one below the other
    wave = plotting.positional_waves(8, 2, 0, layout="phone").axes[0]
    assert wave.get_legend()._ncols == 1 and wave.get_ylim()[1] > 2  # room for the legend


def test_ch8_rope_rotation_for_a_phone_keeps_every_word_in_a_phone_s_column():
    pair_values = np.array([[1.0, 0.4], [0.2, 1.06], [-0.78, 0.74]])
    arguments = (pair_values, [0, 1, 2], [0.0, 1.0, 2.0])
    laptop = plotting.rope_rotation(*arguments, d_model=8)
    phone = plotting.rope_rotation(*arguments, d_model=8, layout="phone")
    assert phone.figure.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
    assert phone.alt == laptop.alt
    assert ch8_words(laptop.figure) <= ch8_words(phone.figure)
    strip, plane = phone.figure.axes
    assert strip.get_position().y0 > plane.get_position().y1  # the strip above the plane
    names = [t.get_text() for t in strip.texts if "(" in t.get_text()]
    assert names == ["interleaved (RoFormer)", "half-split (rotate_half)"]
