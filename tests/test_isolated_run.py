"""Every published notebook runs from the course's wheel alone: built from the working tree,
installed (not editable) into `.venv-isolated`, which holds only the runtime of
requirements.txt (tests/envs/isolated.txt), the notebook copied alone into an empty
directory and run there in a fresh kernel. Part I's NumPy chapters (1–4) run with torch
made unimportable, as on a machine without it.

Outputs are NOT compared here (tests/test_notebooks.py and strict nbval on the committed
notebooks do that): a notebook passes if it runs without an error and writes nothing to
stderr. The same run also records, through a prelude and a probe cell added to the copy,
the colours of every figure the notebook shows and every widget it makes, which the
accessibility tests below check.
"""

from __future__ import annotations

import colorsys
import re

import numpy as np
import pytest
from course import COLUMN_PX, PHONE_COLUMN_PX, PHONE_SMALLEST_TEXT_PX, SMALLEST_TEXT_PX
from matplotlib import colormaps
from matplotlib.colors import to_rgb
from notebook_envs import (
    check_ran_from_the_wheel,
    environment,
    install_course_wheel,
    published_notebooks,
    run_notebook,
)

from selfattn_lib.plotting import OKABE_ITO

NOTEBOOKS = published_notebooks()
# CONTRIBUTING.md: chapters 1–4 use torch only if it is installed.
TORCH_FREE_CHAPTERS = range(1, 5)
# Perceptually uniform or diverging maps that stay readable under the common colour-vision
# deficiencies (and in greyscale for the sequential ones).
SAFE_CMAPS = {"viridis", "cividis", "magma", "inferno", "plasma", "RdBu", "RdBu_r", "PuOr",
              "PuOr_r", "Greys", "Greys_r", "gray", "gray_r", "binary", "binary_r"}  # fmt: skip
# ipywidgets' core controls render as native form elements (<select>, <input>, <button>) or
# ARIA widgets (sliders: a focusable handle with role="slider", moved with the arrow keys),
# so a notebook's widget is keyboard-operable if it is made of them, and it has a name for
# screen readers if each control has a description.
KEYBOARD_CONTROLS = {
    "IntSlider", "FloatSlider", "FloatLogSlider", "IntRangeSlider", "FloatRangeSlider",
    "SelectionSlider", "SelectionRangeSlider", "Dropdown", "Select", "SelectMultiple",
    "RadioButtons", "ToggleButtons", "ToggleButton", "Checkbox", "Text", "Textarea",
    "IntText", "FloatText", "BoundedIntText", "BoundedFloatText", "Combobox",
}  # fmt: skip


def chapter_number(notebook) -> int | None:
    match = re.match(r"(\d+)_", notebook.name)
    return int(match.group(1)) if match else None


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    venv = environment("isolated")
    install_course_wheel(venv, tmp_path_factory.mktemp("wheel"))
    return venv


@pytest.fixture(scope="module")
def outcomes(venv, tmp_path_factory):
    """Each notebook's run, made once and shared by the tests below."""
    cache: dict = {}

    def outcome(notebook):
        if notebook not in cache:
            block_torch = chapter_number(notebook) in TORCH_FREE_CHAPTERS
            tmp = tmp_path_factory.mktemp(notebook.stem)
            # With the phone renderings, which the site shows: they are checked below too.
            cache[notebook] = run_notebook(
                venv, notebook, tmp, block_torch=block_torch, phone_renderings=True
            )
        return cache[notebook]

    return outcome


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.stem)
def test_notebook_runs_from_the_wheel_alone_in_an_empty_directory(venv, outcomes, notebook):
    outcome = outcomes(notebook)
    print(f"{notebook.stem}: {outcome['seconds']:.1f} s in {venv.name}")
    check_ran_from_the_wheel(outcome, venv)
    if chapter_number(notebook) in TORCH_FREE_CHAPTERS:
        assert not outcome["probe"]["torch_imported"], "Part I's NumPy chapters need no torch"


def hue(rgb: tuple[float, float, float]) -> float:
    return colorsys.rgb_to_hsv(*rgb)[0] * 360


PALETTE_HUES = [hue(to_rgb(colour)) for colour in OKABE_ITO if len(set(to_rgb(colour))) > 1]


# Colours taken from a perceptually uniform map (e.g. one per step of an ordered sequence,
# matching a heatmap drawn with that map) are as safe as the map itself.
SEQUENTIAL_MAP_COLOURS = np.concatenate(
    [colormaps[name](np.linspace(0, 1, 256))[:, :3] for name in ("viridis", "cividis")]
)


def colour_is_safe(hex_colour: str) -> bool:
    """A grey; an Okabe–Ito colour, a tint or a shade of one (same hue within 12°); or a
    colour of the viridis or cividis map."""
    rgb = to_rgb(hex_colour)
    if max(rgb) - min(rgb) <= 4 / 255:
        return True
    if np.abs(SEQUENTIAL_MAP_COLOURS - rgb).max(axis=1).min() <= 2 / 255:
        return True
    return any(abs((hue(rgb) - palette + 180) % 360 - 180) <= 12 for palette in PALETTE_HUES)


def test_colour_rule_accepts_the_palette_and_its_tints_but_not_red_against_green():
    assert all(colour_is_safe(colour) for colour in OKABE_ITO)
    assert colour_is_safe("#9CC3E0") and colour_is_safe("#7f7f7f")  # a light blue, a grey
    assert colour_is_safe("#35b779")  # viridis at about 0.7, e.g. one step of a schedule
    assert not colour_is_safe("tab:green") and not colour_is_safe("tab:red")


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.stem)
def test_figures_use_colour_blind_safe_maps_and_colours(outcomes, notebook):
    """Every colour map of every figure the notebook shows is a safe one, and every other
    colour (lines, bars, markers, text) is a grey, has the hue of a colour of
    plotting.OKABE_ITO or comes from the viridis or cividis map (so e.g. matplotlib's default
    red and green, which look alike to many colour-blind readers, are out)."""
    probe = outcomes(notebook)["probe"]
    assert probe is not None and probe["recorder_errors"] == []
    assert set(probe["cmaps"]) <= SAFE_CMAPS, f"unsafe colour maps: {probe['cmaps']}"
    unsafe = sorted(
        {(colour, kind) for colour, kind in probe["colours"] if not colour_is_safe(colour)}
    )
    assert unsafe == [], "colours outside the Okabe–Ito palette (plotting.OKABE_ITO) and greys"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.stem)
def test_widgets_are_labelled_keyboard_operable_controls(outcomes, notebook):
    probe = outcomes(notebook)["probe"]
    assert probe is not None
    controls = [widget for widget in probe["widgets"] if widget["control"]]
    for control in controls:
        assert control["module"].startswith("ipywidgets."), control
        assert control["class"] in KEYBOARD_CONTROLS, control
        assert (control["description"] or "").strip(), f"{control['class']} has no label"
        assert not control["disabled"], control


def too_small(figures: list[dict], column: int, smallest: float) -> list[str]:
    """The figures whose smallest text, at the size a column of ``column`` px shows them
    (shrunk to it when wider), is below ``smallest`` px."""
    return [
        f"{figure['title'] or figure['text']!r}: {figure['width']} px wide, text "
        f"{figure['text']!r} shown {shown:.1f} px tall"
        for figure in figures
        if (shown := figure["smallest_text"] * min(1.0, column / figure["width"])) < smallest
    ]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.stem)
def test_figure_text_stays_legible_in_the_column(outcomes, notebook):
    """Every image the notebook shows, at the size the page shows it (shrunk to the column
    when wider): its smallest text, in points x dpi / 72 as drawn, times that scale, is at
    least the page's small print. (Lowering the dpi cannot pass this: it shrinks the text's
    pixels as much as the image's.)"""
    probe = outcomes(notebook)["probe"]
    assert probe is not None and probe["figures"], "the notebook shows figures"
    laptop = [figure for figure in probe["figures"] if figure["layout"] == "laptop"]
    failing = too_small(laptop, COLUMN_PX, SMALLEST_TEXT_PX)
    assert failing == [], "figures to redraw for the column:\n" + "\n".join(failing)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.stem)
def test_figure_text_stays_legible_on_a_phone(outcomes, notebook):
    """On a phone the site shows a figure's phone rendering where it has one
    (selfattn_lib.plotting.for_the_page), else the figure itself, shrunk to the phone's
    column: either way its text is at least 9 px tall there."""
    figures = outcomes(notebook)["probe"]["figures"]
    shown = [f for f in figures if f["layout"] == "phone" or not f["has_phone"]]
    failing = too_small(shown, PHONE_COLUMN_PX, PHONE_SMALLEST_TEXT_PX)
    assert failing == [], "figures to draw for a phone (for_the_page):\n" + "\n".join(failing)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.stem)
def test_a_phone_rendering_keeps_every_word_of_its_figure(outcomes, notebook):
    """A phone rendering is the same figure laid out for a narrow column: it may stack its
    panels or leave out numbers written in cells, but it keeps every word (titles, axis
    labels, legends, token labels). A change made to the figure after the figure function
    returned, which the phone rendering would miss, fails here. And every figure that has a
    phone rendering showed it: this run asks for them, as `make execute` does."""
    figures = outcomes(notebook)["probe"]["figures"]
    laptop = {figure["id"]: figure for figure in figures if figure["layout"] == "laptop"}
    phones = {figure["phone_of"] for figure in figures if figure["layout"] == "phone"}
    unshown = [f["title"] for f in laptop.values() if f["has_phone"] and f["id"] not in phones]
    assert unshown == [], "figures shown without their phone rendering"
    for phone in (figure for figure in figures if figure["layout"] == "phone"):
        assert phone["phone_of"] in laptop, f"{phone['title']!r}: its laptop figure was shown"
        missing = set(laptop[phone["phone_of"]]["words"]) - set(phone["words"])
        assert not missing, f"{phone['title']!r}: the phone rendering lacks {sorted(missing)}"
