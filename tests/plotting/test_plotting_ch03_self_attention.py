"""Tests of selfattn_lib.plotting.ch03_self_attention: the figures of chapter 3."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from selfattn_lib import plotting


def test_ch3_spotlight_weights_draws_one_row_of_the_weights_and_marks_the_spotlight():
    from selfattn_lib.attention import simple_self_attention

    x = np.array([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0]])
    fig = plotting.spotlight_weights(x, ["a", "b", "c"], position=0)
    ax = fig.axes[0]
    heights = [patch.get_height() for patch in ax.patches]
    np.testing.assert_allclose(heights, simple_self_attention(x)[1][0], rtol=1e-12)
    assert [label.get_text() for label in ax.get_xticklabels()] == ["a", "b", "c"]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("key token", "attention weight")
    assert ax.get_title() == '"a" (position 0) attends to'
    colours = [patch.get_facecolor() for patch in ax.patches]
    assert colours[0] != colours[1] and colours[1] == colours[2]


@pytest.mark.parametrize("position", [-1, 3])
def test_ch3_spotlight_weights_rejects_a_position_outside_the_sequence(position):
    with pytest.raises(ValueError, match=r"position must be in \[0, 3\)"):
        plotting.spotlight_weights(np.eye(3), ["a", "b", "c"], position)


def test_ch3_spotlight_weights_rejects_a_batch_and_draws_into_given_axes():
    with pytest.raises(ValueError, match=r"shape \(T, D\), got shape \(1, 2, 2\)"):
        plotting.spotlight_weights(np.ones((1, 2, 2)), ["a", "b"], 0)
    fig = Figure()
    ax = fig.add_subplot()
    assert plotting.spotlight_weights(np.eye(2), ["a", "b"], 1, ax=ax) is fig


def test_ch3_spotlight_attention_pairs_the_bars_with_the_outlined_heatmap_row():
    from selfattn_lib.attention import simple_self_attention

    x = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    fig = plotting.spotlight_attention(x, ["a", "b", "c"], position=2)
    bars, matrix, colorbar = fig.axes
    np.testing.assert_allclose(
        [patch.get_height() for patch in bars.patches], simple_self_attention(x)[1][2]
    )
    np.testing.assert_allclose(matrix.images[0].get_array(), simple_self_attention(x)[1])
    assert [label.get_text() for label in matrix.get_yticklabels()] == ["a", "b", "c"]
    outline = matrix.patches[-1]
    assert outline.get_xy() == (-0.5, 1.5) and outline.get_width() == 3
    assert colorbar.get_ylabel() == "attention weight"


def test_ch3_spotlight_attention_is_no_wider_than_the_column():
    labels = [f"t{index}" for index in range(8)]
    fig = plotting.spotlight_attention(np.eye(8), labels, position=3)
    assert fig.get_size_inches()[0] == plotting.COLUMN_WIDTH
    short = plotting.spotlight_attention(np.eye(2), ["a", "b"], position=0)
    assert short.get_size_inches()[0] < plotting.COLUMN_WIDTH
