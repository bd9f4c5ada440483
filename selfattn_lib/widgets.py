"""Interactive widgets: thin wrappers around the pure figure functions of the chapters.

Each widget pairs a few ipywidgets controls with a function that returns a figure; moving a
control calls the function again and shows the new figure. The functions themselves are
ordinary, tested code, so everything a widget shows can also be shown as a static figure on
the book's pages, where widgets do not run.

Written against the API that ipywidgets 7.7 and 8.x share (``interactive`` and its
``result``), so the same code runs in Google Colab and locally.
"""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets
from matplotlib.figure import Figure


def figure_explorer(
    make_figure: Callable[..., Figure], **controls: ipywidgets.ValueWidget
) -> ipywidgets.interactive:
    """Show ``make_figure(**values)`` and redraw it whenever one of ``controls`` changes.

    The returned widget's ``result`` attribute holds the figure currently shown.

    Examples
    --------
    In a notebook, where the widget is displayed (outside one it prints control codes):

    >>> from selfattn_lib.plotting import bar_chart
    >>> slider = ipywidgets.FloatSlider(value=1.0, min=0.0, max=2.0, description="height")
    >>> explorer = figure_explorer(  # doctest: +SKIP
    ...     lambda height: bar_chart([height], ["bar"]), height=slider
    ... )
    >>> float(explorer.result.axes[0].patches[0].get_height())  # doctest: +SKIP
    1.0
    """
    if not controls:
        raise ValueError("figure_explorer needs at least one control")
    for name, control in controls.items():
        if not isinstance(control, ipywidgets.ValueWidget):
            raise TypeError(f"control {name!r} must be an ipywidgets value widget")
        # Redraw when the control is released, not for every pixel it moves.
        if hasattr(control, "continuous_update"):
            control.continuous_update = False
    return ipywidgets.interactive(make_figure, **controls)
