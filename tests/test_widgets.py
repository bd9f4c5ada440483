"""Tests of selfattn_lib.widgets: controls drive pure figure functions."""

import ipywidgets
import pytest

from selfattn_lib import plotting, widgets


def test_figure_explorer_redraws_when_a_control_changes():
    slider = ipywidgets.FloatSlider(value=1.0, min=0.0, max=2.0, description="height")
    explorer = widgets.figure_explorer(
        lambda height: plotting.bar_chart([height], ["bar"]), height=slider
    )
    assert explorer.result.axes[0].patches[0].get_height() == 1.0
    slider.value = 1.5
    assert explorer.result.axes[0].patches[0].get_height() == 1.5
    assert slider.continuous_update is False


def test_figure_explorer_needs_value_widgets():
    with pytest.raises(ValueError, match="at least one control"):
        widgets.figure_explorer(lambda: None)
    with pytest.raises(TypeError, match="control 'x' must be an ipywidgets value widget"):
        widgets.figure_explorer(lambda x: None, x=3)


# --- Chapter 1: dot-product similarity ---


def test_ch1_similarity_geometry_explorer_follows_angle_and_length():
    import numpy as np

    def rotate_and_scale(angle, length):
        radians = np.radians(angle)
        b = length * np.array([np.cos(radians), np.sin(radians)])
        return plotting.similarity_geometry([1.5, 0.0], b, reach=3.5)

    angle = ipywidgets.IntSlider(value=60, min=0, max=180, description="angle")
    length = ipywidgets.FloatSlider(value=1.0, min=0.0, max=3.0, description="length")
    explorer = widgets.figure_explorer(rotate_and_scale, angle=angle, length=length)
    assert "a·b = 0.75, cos θ = 0.50" in explorer.result.axes[0].get_title()
    length.value = 2.0
    assert "a·b = 1.50, cos θ = 0.50" in explorer.result.axes[0].get_title()
    angle.value = 120
    assert "a·b = -1.50, cos θ = -0.50" in explorer.result.axes[0].get_title()
    length.value = 0.0
    assert "cos θ undefined" in explorer.result.axes[0].get_title()


# --- Chapter 2: softmax ---


def test_ch2_temperature_slider_on_a_log_scale_redraws_the_weights():
    slider = ipywidgets.FloatLogSlider(value=1.0, base=10, min=-2, max=1, description="τ")
    explorer = widgets.figure_explorer(
        lambda temperature: plotting.temperature_weights(
            [2.0, 1.0, 0.0], ["a", "b", "c"], temperature
        ),
        temperature=slider,
    )
    first = explorer.result.axes[0].patches[0].get_height()
    slider.value = 0.01
    assert explorer.result.axes[0].get_title() == "τ = 0.01"
    assert explorer.result.axes[0].patches[0].get_height() > max(first, 0.999)
    assert slider.continuous_update is False
