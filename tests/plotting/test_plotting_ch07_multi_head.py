"""Tests of selfattn_lib.plotting.ch07_multi_head: the figures of chapter 7."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from selfattn_lib import plotting

CH7_NUMBERS = np.arange(24).reshape(4, 6)  # (T, D): entry 6 t + f
CH7_TOKENS = ["the", "cat", "sat", "down"]


def ch7_cells(ax):
    """{number: (face colour, x, y)} of the cells drawn by head_layout."""
    numbers = [text for text in ax.texts if text.get_text().isdigit() and text.get_fontsize() == 10]
    cells = [patch for patch in ax.patches if patch.get_fill() and patch.get_width() == 1]
    assert len(numbers) == len(cells)
    return {
        int(text.get_text()): (tuple(cell.get_facecolor()), *cell.get_xy())
        for text, cell in zip(numbers, cells, strict=True)
    }


def test_ch7_head_layout_colours_every_feature_by_its_head_and_labels_its_origin():
    fig = plotting.head_layout(CH7_NUMBERS, "T D", n_heads=2, tokens=CH7_TOKENS, title="x")
    ax = fig.axes[0]
    cells = ch7_cells(ax)
    assert sorted(cells) == list(range(24))
    head_0, head_1 = cells[0][0], cells[3][0]
    assert head_0 != head_1
    assert all(cells[n][0] == (head_0 if n % 6 < 3 else head_1) for n in range(24))
    assert cells[9][1:] == (3, 1)  # feature 3 of token 1: column 3, row 1
    texts = [text.get_text() for text in ax.texts]
    assert "t1 f3" in texts and "cat" in texts and "f5" in texts and ax.get_title() == "x"
    # The labels inside the cells are left out of the layout (it need not measure them), the
    # token labels around the grid are not.
    in_layout = {text.get_text(): text.get_in_layout() for text in ax.texts}
    assert not in_layout["t1 f3"] and not in_layout["9"] and in_layout["cat"]
    # Every label stays readable in the book's column: 8 points at least.
    assert min(text.get_fontsize() for text in ax.texts) >= 8


def test_ch7_head_layout_alone_fits_the_column():
    for values, layout in [
        (CH7_NUMBERS, "T D"),
        (CH7_NUMBERS.reshape(4, 2, 3), "T H D_h"),
        (CH7_NUMBERS.reshape(4, 2, 3).transpose(1, 0, 2), "H T D_h"),
    ]:
        fig = plotting.head_layout(values, layout, n_heads=2)
        assert fig.get_size_inches()[0] <= plotting.COLUMN_WIDTH


def test_ch7_head_layout_draws_one_grid_per_head_after_the_transpose():
    split = CH7_NUMBERS.reshape(4, 2, 3).transpose(1, 0, 2)  # (H, T, D_h)
    ax = plotting.head_layout(split, "H T D_h", n_heads=2, tokens=CH7_TOKENS).axes[0]
    cells = ch7_cells(ax)
    texts = [text.get_text() for text in ax.texts]
    assert "head 0" in texts and "head 1" in texts and "down" in texts
    # Head 1's grid lies to the right of head 0's and holds features 3..5 only.
    assert cells[3][1] > cells[2][1] and {cells[n][0] for n in (3, 4, 5, 21)} == {cells[3][0]}
    wrong = CH7_NUMBERS.reshape(2, 4, 3)  # the missing-transpose bug: head 0 gets two colours
    bug_cells = ch7_cells(plotting.head_layout(wrong, "H T D_h", n_heads=2).axes[0])
    assert bug_cells[0][0] != bug_cells[3][0] and bug_cells[3][1] == bug_cells[0][1]


def test_ch7_head_layout_one_grid_per_token_after_the_reshape():
    ax = plotting.head_layout(CH7_NUMBERS.reshape(4, 2, 3), "T H D_h", n_heads=2).axes[0]
    texts = [text.get_text() for text in ax.texts]
    assert [f"token t{t}" in texts for t in range(4)] == [True] * 4 and "head 1" in texts


def test_ch7_head_layout_rejects_bad_input_and_draws_into_given_axes():
    with pytest.raises(ValueError, match="layout must be one of"):
        plotting.head_layout(CH7_NUMBERS, "B T D", n_heads=2)
    with pytest.raises(ValueError, match=r"values must have shape \(H, T, D_h\)"):
        plotting.head_layout(CH7_NUMBERS, "H T D_h", n_heads=2)
    with pytest.raises(ValueError, match="each number 0 … T·D − 1"):
        plotting.head_layout(CH7_NUMBERS + 1, "T D", n_heads=2)
    with pytest.raises(ValueError, match="do not hold n_heads = 4"):
        plotting.head_layout(CH7_NUMBERS, "T D", n_heads=4)
    with pytest.raises(ValueError, match="do not hold n_heads = 3"):
        plotting.head_layout(CH7_NUMBERS.reshape(2, 4, 3), "H T D_h", n_heads=3)
    with pytest.raises(ValueError, match="tokens must hold T = 4 labels"):
        plotting.head_layout(CH7_NUMBERS, "T D", n_heads=2, tokens=["a"])
    fig = Figure()
    axes = fig.subplots(1, 2)
    assert plotting.head_layout(CH7_NUMBERS, "T D", n_heads=3, ax=axes[1]) is fig
    assert not axes[0].texts and axes[1].texts


def test_ch7_head_weights_draws_every_head_on_one_colour_scale():
    weights = np.stack([np.eye(3), np.full((3, 3), 1 / 3)])  # (H, T, T)
    fig = plotting.head_weights(weights, ["a", "b", "c"], titles=["previous", "uniform"])
    heatmaps = fig.axes[:2]  # the colour bars come after the panels
    assert [ax.get_title() for ax in heatmaps] == ["previous", "uniform"]
    for ax, expected in zip(heatmaps, weights, strict=True):
        np.testing.assert_array_equal(ax.images[0].get_array(), expected)
        assert ax.images[0].get_clim() == (0.0, 1.0)
    assert [label.get_text() for label in heatmaps[1].get_xticklabels()] == ["a", "b", "c"]
    assert heatmaps[1].texts[0].get_text() == "0.33"
    assert not heatmaps[1].texts[0].get_in_layout()  # inside its cell: not measured by the layout
    assert len(fig.axes) == 3 and fig.axes[2].get_ylabel() == "weight"  # one shared colour bar
    # The right panel leaves the query labels to the left one, beside it in the same row.
    assert heatmaps[0].get_ylabel() == "query" and heatmaps[1].get_ylabel() == ""
    assert [tick.label1.get_visible() for tick in heatmaps[0].yaxis.get_major_ticks()] == [True] * 3
    assert not any(tick.label1.get_visible() for tick in heatmaps[1].yaxis.get_major_ticks())
    assert min(text.get_fontsize() for ax in heatmaps for text in ax.texts) >= 8


def test_ch7_head_weights_fits_the_column_in_rows_of_three():
    fig = plotting.head_weights(np.full((5, 4, 4), 0.25), ["a", "b", "c", "d"])
    assert fig.get_size_inches()[0] <= plotting.COLUMN_WIDTH
    heatmaps = [ax for ax in fig.axes if ax.images and ax.get_visible()]
    rows = [ax.get_subplotspec().rowspan.start for ax in heatmaps]
    assert rows == [0, 0, 0, 1, 1]
    assert [ax.get_ylabel() for ax in heatmaps] == ["query", "", "", "query", ""]
    single = plotting.head_weights(np.full((1, 5, 5), 0.2), list("abcde"))
    assert single.get_size_inches()[0] <= plotting.COLUMN_WIDTH


def test_ch7_head_weights_without_colorbar_leaves_one_to_share():
    fig = Figure()
    grid = fig.subplots(2, 2)
    for row_axes, tokens in zip(grid, (["a", "b"], ["c", "d"]), strict=True):
        drawn = plotting.head_weights(
            np.full((2, 2, 2), 0.5), tokens, colorbar=False, axes=row_axes
        )
        assert drawn is fig
    assert len(fig.axes) == 4  # the four panels, no colour bar
    plotting.shared_colorbar(list(grid.flat), "weight")
    assert len(fig.axes) == 5 and fig.axes[4].get_ylabel() == "weight"
    assert [ax.get_ylabel() for ax in grid.flat] == ["query", "", "query", ""]


def test_ch7_head_weights_rejects_bad_input_and_draws_into_given_axes():
    with pytest.raises(ValueError, match=r"shape \(H, T_q, T_k\)"):
        plotting.head_weights(np.eye(3), ["a", "b", "c"])
    with pytest.raises(ValueError, match="labels do not fit weights of shape"):
        plotting.head_weights(np.zeros((2, 3, 3)), ["a", "b"])
    with pytest.raises(ValueError, match="titles must hold H = 2"):
        plotting.head_weights(np.zeros((2, 3, 3)), ["a", "b", "c"], titles=["x"])
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        plotting.head_weights(np.full((1, 3, 3), 2.0), ["a", "b", "c"])
    with pytest.raises(ValueError, match="axes must hold H = 2"):
        plotting.head_weights(np.zeros((2, 3, 3)), ["a", "b", "c"], axes=Figure().subplots(1, 3))
    fig = Figure()
    axes = fig.subplots(2, 2)
    weights = np.full((2, 1, 3), 1 / 3)  # cross-attention: T_q = 1 query, T_k = 3 keys
    assert plotting.head_weights(weights, ["q"], key_tokens=["a", "b", "c"], axes=axes[1]) is fig
    assert axes[0, 0].get_title() == "" and axes[1, 1].get_title() == "head 1"
