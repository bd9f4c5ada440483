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


# --- Chapter 3: self-attention without parameters ---


def test_ch3_token_dropdown_redraws_the_spotlighted_row():
    import numpy as np

    x = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0]])
    labels = ["a", "b", "c"]
    dropdown = ipywidgets.Dropdown(options=[("a", 0), ("b", 1), ("c", 2)], value=0)
    explorer = widgets.figure_explorer(
        lambda position: plotting.spotlight_attention(x, labels, position), position=dropdown
    )
    assert explorer.result.axes[0].get_title() == '"a" (position 0) attends to'
    dropdown.value = 2
    assert explorer.result.axes[0].get_title() == '"c" (position 2) attends to'
    assert explorer.result.axes[1].patches[-1].get_xy() == (-0.5, 1.5)


# --- Chapter 4: queries, keys and values ---


def test_ch4_query_scale_slider_redraws_the_weights():
    import numpy as np

    x = np.array([[1.0, 0.0, 0.0, 1.0], [0.0, 2.0, 2.0, 0.0], [1.0, 1.0, 0.0, 0.0]])
    w = np.arange(12.0).reshape(4, 3) / 10
    slider = ipywidgets.FloatSlider(value=1.0, min=0.0, max=10.0, description="scale")
    explorer = widgets.figure_explorer(
        lambda query_scale: plotting.projected_attention_weights(
            x, w, w, ["x1", "x2", "x3"], query_scale=query_scale
        ),
        query_scale=slider,
    )
    assert explorer.result.axes[0].get_title() == "weights with 1.0 × W_Q"
    slider.value = 0.0
    np.testing.assert_allclose(explorer.result.axes[0].images[0].get_array(), 1 / 3)
    assert slider.continuous_update is False


# --- Chapter 6: masks ---


def test_ch6_mask_dropdown_redraws_mask_and_weights():
    import numpy as np

    tokens = [["the", "cat", "sat"], ["dogs", "bark", "<pad>"]]
    dropdown = ipywidgets.Dropdown(options=plotting.MASK_KINDS, value="padding")
    explorer = widgets.figure_explorer(
        lambda kind: plotting.mask_and_weights(np.zeros((2, 3, 3)), tokens, [3, 2], kind),
        kind=dropdown,
    )
    assert explorer.result.axes[0].get_title() == "mask: padding (length 3)"
    dropdown.value = "causal"
    assert explorer.result.axes[0].get_title() == "mask: causal (length 3)"
    np.testing.assert_array_equal(
        explorer.result.axes[0].images[0].get_array(), np.tril(np.ones((3, 3)))
    )


# --- Chapter 5: scaling ---


def test_ch5_d_k_slider_on_a_log_scale_redraws_scores_and_weights():
    slider = ipywidgets.SelectionSlider(options=[2**n for n in range(11)], value=4)
    explorer = widgets.figure_explorer(lambda d_k: plotting.scaling_effect(d_k), d_k=slider)
    assert explorer.result.axes[0].get_title().startswith("d_k = 4:")
    small_top = max(p.get_height() for p in explorer.result.axes[1].patches[:8])
    slider.value = 1024
    assert explorer.result.axes[0].get_title().startswith("d_k = 1024:")
    large_top = max(p.get_height() for p in explorer.result.axes[1].patches[:8])
    assert large_top > max(small_top, 0.99)  # unscaled weights are nearly one-hot
    assert slider.continuous_update is False
