"""Tests of selfattn_lib.plotting.ch01_similarity: the figures of chapter 1."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from selfattn_lib import plotting


def test_similarity_geometry_states_the_values_in_the_title():
    fig = plotting.similarity_geometry([2.0, 0.0], [1.0, 1.0], title="two vectors")
    ax = fig.axes[0]
    assert isinstance(fig, Figure)
    assert ax.get_title() == (
        "two vectors\n|a| = 2.00, |b| = 1.41, θ = 45°\na·b = 2.00, cos θ = 0.71"
    )
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("component 1", "component 2")
    assert [text.get_text() for text in ax.texts if text.get_text()] == [
        "θ",
        r"$\mathbf{a}$",
        r"$\mathbf{b}$",
    ]


def test_similarity_geometry_draws_the_shadow_of_b_on_a():
    # b = (-1, 1) at 135° from a = (2, 0): its shadow on a's line runs from 0 to -1.
    ax = plotting.similarity_geometry([2.0, 0.0], [-1.0, 1.0]).axes[0]
    shadow = next(line for line in ax.lines if line.get_label() == "shadow of b on a")
    np.testing.assert_allclose(shadow.get_xydata(), [[0.0, 0.0], [-1.0, 0.0]], atol=1e-12)
    assert "a·b = -2.00, cos θ = -0.71" in ax.get_title()
    assert "θ = 135°" in ax.get_title()


def test_similarity_geometry_never_prints_minus_zero():
    angle = np.radians(90.0)
    ax = plotting.similarity_geometry([1.5, 0.0], [np.cos(angle), -np.sin(angle)]).axes[0]
    assert "a·b = 0.00, cos θ = 0.00" in ax.get_title()


def test_similarity_geometry_handles_a_zero_vector():
    ax = plotting.similarity_geometry([1.0, 0.0], [0.0, 0.0]).axes[0]
    assert ax.get_title().endswith("a·b = 0.00, cos θ undefined (zero vector)")
    assert "θ undefined" in ax.get_title()
    assert not ax.patches, "no angle is drawn"


def test_similarity_geometry_reach_fixes_a_square_frame_for_small_multiples():
    fig = Figure()
    left, right = fig.subplots(1, 2)
    assert plotting.similarity_geometry([1, 0], [0, 3], reach=4.0, ax=right) is fig
    assert right.get_xlim() == right.get_ylim() == (-4.0, 4.0)
    assert not left.lines
    automatic = plotting.similarity_geometry([1, 0], [0, 3]).axes[0]
    assert automatic.get_xlim()[1] >= 3.0


@pytest.mark.parametrize(
    ("a", "b", "reach", "message"),
    [
        ([1, 0, 0], [1, 0], None, r"a must have shape \(2,\), got \(3,\)"),
        ([1, 0], [np.nan, 0], None, "b contains NaN or infinity"),
        ([1, 0], [1, 1], 0.0, "reach must be a finite positive number"),
    ],
)
def test_similarity_geometry_rejects_bad_input(a, b, reach, message):
    with pytest.raises(ValueError, match=message):
        plotting.similarity_geometry(a, b, reach=reach)
