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


def test_ch8_wavelength_plot_draws_a_geometric_sequence_on_a_log_axis():
    fig = plotting.wavelength_plot(16, base=100.0)
    ax = fig.axes[0]
    wavelengths = ax.lines[0].get_ydata()
    expected = 2 * np.pi * 100.0 ** (np.arange(0, 16, 2) / 16)
    np.testing.assert_allclose(wavelengths, expected)
    np.testing.assert_allclose(wavelengths[1:] / wavelengths[:-1], 100.0 ** (2 / 16))
    assert ax.get_yscale() == "log"
    references = sorted(line.get_ydata()[0] for line in ax.lines[1:])
    np.testing.assert_allclose(references, [2 * np.pi, 2 * np.pi * 100.0])
    assert wavelengths.max() < 2 * np.pi * 100.0  # the slowest pair never reaches 2π · base
    assert "D = 16" in ax.get_title() and "wavelength" in ax.get_ylabel()


@pytest.mark.parametrize(
    ("d_model", "base", "error", "message"),
    [
        (7, 10000.0, ValueError, "d_model must be even"),
        (0, 10000.0, ValueError, "d_model must be a positive integer"),
        (8, -1.0, ValueError, "base must be a finite positive number"),
    ],
)
def test_ch8_wavelength_plot_rejects_bad_input(d_model, base, error, message):
    with pytest.raises(error, match=message):
        plotting.wavelength_plot(d_model, base=base)


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
