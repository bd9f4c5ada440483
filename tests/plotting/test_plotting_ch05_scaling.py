"""Tests of selfattn_lib.plotting.ch05_scaling: the figures of chapter 5."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from selfattn_lib import plotting


def test_ch5_scaling_effect_shows_the_spread_and_the_weights_of_one_query():
    fig = plotting.scaling_effect(64, n_keys=5, n_samples=500, rng=np.random.default_rng(1))
    hist_ax, bar_ax = fig.axes
    assert hist_ax.get_title().startswith("d_k = 64: std of q·k\n")  # two lines
    assert (hist_ax.get_xlabel(), bar_ax.get_xlabel(), bar_ax.get_ylabel()) == (
        "score",
        "key",
        "softmax weight",
    )
    assert [label.get_text() for label in bar_ax.get_xticklabels()] == [
        "k1",
        "k2",
        "k3",
        "k4",
        "k5",
    ]
    heights = np.array([patch.get_height() for patch in bar_ax.patches])
    unscaled, scaled = heights[:5], heights[5:]
    np.testing.assert_allclose([unscaled.sum(), scaled.sum()], [1.0, 1.0])
    assert unscaled.max() > scaled.max()  # dividing by 8 flattens the weights


def test_ch5_scaling_effect_std_grows_like_the_root_of_d_k_and_is_reproducible():
    import re

    def stds(d_k):
        title = plotting.scaling_effect(d_k, n_samples=4000).axes[0].get_title()
        unscaled, scaled = re.findall(r"(\d+\.\d+) (?:unscaled|scaled)", title)
        return float(unscaled), float(scaled)

    for d_k in (4, 256):
        unscaled, scaled = stds(d_k)
        assert abs(unscaled / np.sqrt(d_k) - 1) < 0.1 and abs(scaled - 1) < 0.1
    first = plotting.scaling_effect(16).axes[1].patches
    again = plotting.scaling_effect(16).axes[1].patches
    assert [p.get_height() for p in first] == [p.get_height() for p in again]


def test_ch5_scaling_effect_rejects_bad_input_and_draws_into_given_axes():
    for bad in (0, -4, 2.5, True):
        with pytest.raises(ValueError, match="d_k must be a positive integer"):
            plotting.scaling_effect(bad)
    with pytest.raises(ValueError, match="n_keys and n_samples must be at least 2"):
        plotting.scaling_effect(4, n_keys=1)
    fig = Figure()
    columns = fig.subplots(2, 2)
    assert plotting.scaling_effect(4, axes=columns[:, 1]) is fig
    assert len(columns[0, 0].patches) == 0 and len(columns[1, 1].patches) == 16


def test_ch5_scaling_effect_takes_an_rng_and_is_reproducible_with_it():
    def heights(rng):
        fig = plotting.scaling_effect(16, rng=rng)
        return [patch.get_height() for patch in fig.axes[1].patches]

    assert heights(np.random.default_rng(5)) == heights(np.random.default_rng(5))
    assert heights(np.random.default_rng(5)) != heights(np.random.default_rng(6))
    assert heights(None) == heights(np.random.default_rng([0, 16]))  # the default per d_k
    with pytest.raises(TypeError, match="rng"):
        plotting.scaling_effect(16, rng=3)


def test_ch5_scaling_effect_fits_the_column_and_its_legend_clears_a_weight_of_one():
    fig = plotting.scaling_effect(1024)
    assert fig.get_size_inches()[0] <= plotting.COLUMN_WIDTH
    bar_ax = fig.axes[1]
    assert bar_ax.get_ylim()[1] > 1.3  # room above the tallest bar for the legend
    assert bar_ax.get_yticks().max() == 1.0  # no tick at an impossible weight
    fig, panels = plotting.small_multiples(4, columns=2)
    plotting.scaling_effect(4, axes=panels[:2])  # one row of small multiples
    plotting.scaling_effect(64, axes=panels[2:])
    assert [ax.get_title().split(":")[0] for ax in panels[::2]] == ["d_k = 4", "d_k = 64"]
