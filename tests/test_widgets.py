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
