"""Tests of selfattn_lib.plotting.ch06_masks: the figures of chapter 6."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from selfattn_lib import plotting

CH6_TOKENS = [["the", "cat", "sat"], ["dogs", "bark", "<pad>"]]


def ch6_weights_of(fig, panel):
    return np.asarray(fig.axes[panel].images[0].get_array())


def test_ch6_mask_and_weights_draws_mask_and_weights_per_sequence():
    scores = np.random.default_rng(0).normal(size=(2, 3, 3))
    fig = plotting.mask_and_weights(scores, CH6_TOKENS, [3, 2], "both")
    assert len(fig.axes) == 5  # 4 heatmaps and the one colour bar they share
    np.testing.assert_array_equal(ch6_weights_of(fig, 0), np.tril(np.ones((3, 3))))
    np.testing.assert_array_equal(
        ch6_weights_of(fig, 2), [[1, 0, 0], [1, 1, 0], [1, 1, 0]]
    )  # the <pad> key is hidden from every query
    weights = ch6_weights_of(fig, 3)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0)
    assert weights[0, 1] == 0 and (weights[:, 2] == 0).all()
    assert fig.axes[0].get_title() == "mask: both (length 3)"
    assert [label.get_text() for label in fig.axes[3].get_yticklabels()] == CH6_TOKENS[1]


@pytest.mark.parametrize(
    ("kind", "sees_future", "sees_padding"),
    [("none", True, True), ("padding", True, False), ("causal", False, True)],
)
def test_ch6_mask_and_weights_kinds(kind, sees_future, sees_padding):
    fig = plotting.mask_and_weights(np.zeros((2, 3, 3)), CH6_TOKENS, [3, 2], kind)
    padded_mask = ch6_weights_of(fig, 2)
    assert bool(padded_mask[0, 1]) is sees_future
    assert bool(padded_mask[2, 2]) is sees_padding


def test_ch6_mask_and_weights_rejects_bad_input_and_draws_into_given_axes():
    with pytest.raises(ValueError, match="kind must be one of"):
        plotting.mask_and_weights(np.zeros((2, 3, 3)), CH6_TOKENS, [3, 2], "future")
    with pytest.raises(ValueError, match=r"scores must have shape \(B, T, T\)"):
        plotting.mask_and_weights(np.zeros((2, 3, 4)), CH6_TOKENS, [3, 2], "both")
    with pytest.raises(ValueError, match="tokens must be 2 lists of 3 labels"):
        plotting.mask_and_weights(np.zeros((2, 3, 3)), CH6_TOKENS[:1], [3, 2], "both")
    with pytest.raises(ValueError, match="2 \\* B = 4 axes"):
        plotting.mask_and_weights(
            np.zeros((2, 3, 3)), CH6_TOKENS, [3, 2], "both", axes=Figure().subplots(1, 2)
        )
    fig = Figure()
    axes = fig.subplots(2, 4)
    assert (
        plotting.mask_and_weights(np.zeros((2, 3, 3)), CH6_TOKENS, [3, 2], "causal", axes=axes[1])
        is fig
    )
    assert axes[0, 0].get_title() == "" and axes[1, 0].get_title() == "mask: causal (length 3)"


def test_ch6_mask_and_weights_share_one_colour_scale_and_fit_the_column():
    scores = np.random.default_rng(1).normal(size=(2, 3, 3))
    fig = plotting.mask_and_weights(scores, CH6_TOKENS, [3, 2], "padding")
    assert fig.get_size_inches()[0] <= plotting.COLUMN_WIDTH
    heatmaps = fig.axes[:4]
    assert {ax.images[0].get_clim() for ax in heatmaps} == {(0.0, 1.0)}
    positions = [ax.get_subplotspec().get_geometry()[:2] for ax in heatmaps]
    assert positions == [(2, 2)] * 4  # one row (mask, weights) per sequence
    assert fig.axes[4].get_ylabel() == "weight (mask: 1 = may attend)"
    grid = plotting.small_multiples(12, columns=3)
    _, panels = grid
    for column, kind in enumerate(["padding", "causal", "both"]):
        plotting.mask_and_weights(
            scores, CH6_TOKENS, [3, 2], kind, colorbar=False, axes=panels[column::3]
        )
    assert len(grid[0].axes) == 12  # no colour bar until the caller adds one
    assert panels[2].get_title() == "mask: both (length 3)"
    assert panels[3].get_title() == "attention weights"
    plotting.shared_colorbar(panels, "weight")
    assert len(grid[0].axes) == 13
