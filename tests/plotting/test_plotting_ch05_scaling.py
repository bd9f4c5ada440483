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
        "q·k, or q·k / √d_k",
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


def ch5_random_head(d_k=64, seed=0):
    """The running sentence, its vectors rescaled to length √8, in a random head."""
    from selfattn_lib import embeddings

    tokens = embeddings.tokenize(embeddings.RUNNING_EXAMPLE)
    x = embeddings.embed(tokens)  # (T, D)
    x = x / np.linalg.norm(x, axis=-1, keepdims=True) * np.sqrt(x.shape[-1])
    rng = np.random.default_rng(seed)
    w_q = rng.standard_normal((x.shape[-1], d_k)) / np.sqrt(x.shape[-1])  # (D, d_k)
    w_k = rng.standard_normal((x.shape[-1], d_k)) / np.sqrt(x.shape[-1])  # (D, d_k)
    return tokens, x @ w_q, x @ w_k  # (T, d_k), (T, d_k)


def test_ch5_one_query_scaling_draws_what_the_concept_functions_compute():
    from selfattn_lib import attention
    from selfattn_lib.plotting.diagrams import read_back
    from selfattn_lib.softmax import softmax

    tokens, q, k = ch5_random_head()
    row = tokens.index("it")
    scores = q[row] @ k.T  # (T,): computed here by hand, handed to the drawing
    diagram = plotting.one_query_scaling(
        tokens, scores, scores / 8, softmax(scores), softmax(scores / 8), d_k=64, query="it"
    )
    # Computed again, independently, by the concept functions.
    _, unscaled = attention.scaled_dot_product_attention(q[row : row + 1], k, k, scale=1.0)
    _, scaled = attention.scaled_dot_product_attention(q[row : row + 1], k, k)
    again = attention.attention_scores(q[row : row + 1], k, scale=1.0)[0]
    figure = diagram.figure
    np.testing.assert_allclose(read_back(figure, "q·k").ravel(), again, atol=0.05)
    np.testing.assert_allclose(read_back(figure, "q·k/√64").ravel(), again / 8, atol=0.005)
    np.testing.assert_allclose(read_back(figure, "a").ravel(), unscaled[0], atol=0.005)
    np.testing.assert_allclose(read_back(figure, "a′").ravel(), scaled[0], atol=0.005)
    assert unscaled.max() > 0.75 > 0.25 > scaled.max()  # the chapter's picture
    assert diagram.alt.startswith('Computed diagram: The query of "it" against every key')
    assert "q·k: the [" in diagram.alt and "tired [" in diagram.alt
    assert figure.get_size_inches()[0] <= plotting.COLUMN_WIDTH


def test_ch5_one_query_scaling_rejects_arrays_that_do_not_match_the_tokens():
    ok = np.array([1.0, 0.0])
    with pytest.raises(ValueError, match=r"scaled_weights must have one value per token"):
        plotting.one_query_scaling(["a", "b"], ok, ok, ok, np.ones(3), d_k=4, query="a")
    with pytest.raises(ValueError, match="d_k must be a positive integer"):
        plotting.one_query_scaling(["a", "b"], ok, ok, ok, ok, d_k=0, query="a")
    with pytest.raises(TypeError, match="query"):
        plotting.one_query_scaling(["a", "b"], ok, ok, ok, ok, d_k=4, query=None)


def test_ch5_versus_dimension_draws_both_series_and_the_guides():
    dimensions = np.array([1, 4, 16])
    fig = plotting.versus_dimension(
        dimensions,
        [1.0, 4.0, 16.0],
        [1.0, 1.0, 1.0],
        ylabel="variance",
        log_y=True,
        guides=[(dimensions, "Var = d_k"), (1.0, "Var = 1")],
    )
    ax = fig.axes[0]
    guide_d_k, guide_one, unscaled, scaled = ax.lines
    assert guide_d_k.get_ydata().tolist() == [1, 4, 16]
    assert guide_one.get_ydata().tolist() == [1.0, 1.0, 1.0]
    assert unscaled.get_ydata().tolist() == [1.0, 4.0, 16.0]
    assert (ax.get_xscale(), ax.get_yscale(), ax.get_ylabel()) == ("log", "log", "variance")
    assert fig.get_size_inches()[0] <= plotting.COLUMN_WIDTH
    with pytest.raises(ValueError, match="scaled must have one value per dimension"):
        plotting.versus_dimension([1, 2], [1.0, 2.0], [1.0], ylabel="y")
    with pytest.raises(ValueError, match="dimensions must be positive"):
        plotting.versus_dimension([0, 2], [1.0, 2.0], [1.0, 1.0], ylabel="y")


def test_ch5_learning_rate_sweep_draws_both_heads_and_the_threshold_on_log_axes():
    fig = plotting.learning_rate_sweep(
        [0.01, 0.1, 1.0], [0.05, 2.0, 40.0], [0.2, 0.03, 0.01], threshold=0.3
    )
    ax = fig.axes[0]
    guide, unscaled, scaled = ax.lines
    assert list(guide.get_ydata()) == [0.3, 0.3]
    assert unscaled.get_ydata().tolist() == [0.05, 2.0, 40.0]
    assert scaled.get_xdata().tolist() == [0.01, 0.1, 1.0]
    assert (ax.get_xscale(), ax.get_yscale(), ax.get_xlabel()) == ("log", "log", "learning rate")
    with pytest.raises(ValueError, match="unscaled must have one loss per learning rate"):
        plotting.learning_rate_sweep([0.1, 1.0], [1.0], [1.0, 1.0], threshold=0.3)
    with pytest.raises(ValueError, match="finite and > 0"):
        plotting.learning_rate_sweep([0.1], [0.0], [1.0], threshold=0.3)
    with pytest.raises(ValueError, match="learning_rates must be positive"):
        plotting.learning_rate_sweep([-0.1], [1.0], [1.0], threshold=0.3)
    with pytest.raises(ValueError, match="threshold must be > 0"):
        plotting.learning_rate_sweep([0.1], [1.0], [1.0], threshold=0)


def test_ch5_versus_dimension_can_draw_markers_only_so_the_guides_stay_visible():
    fig = plotting.versus_dimension(
        [1, 2], [1.0, 2.0], [1.0, 1.0], ylabel="y", guides=[(1.0, "1")], connect=False
    )
    _, unscaled, scaled = fig.axes[0].lines
    assert unscaled.get_linestyle() == scaled.get_linestyle() == "None"
    assert (unscaled.get_marker(), scaled.get_marker()) == ("o", "s")


def test_ch5_saturation_by_dimension_draws_both_statistics_with_their_levels():
    fig = plotting.saturation_by_dimension(
        [1, 4, 16], [0.3, 0.6, 0.9], [0.3, 0.3, 0.3], [1.9, 1.0, 0.3], [1.9, 1.8, 1.8], n_keys=8
    )
    left, right = fig.axes
    assert [line.get_label() for line in left.lines[:2]] == ["one-hot (1)", "uniform (1/8)"]
    assert left.lines[1].get_ydata().tolist() == [0.125] * 3
    np.testing.assert_allclose(right.lines[1].get_ydata(), np.log(8))
    assert right.lines[2].get_ydata().tolist() == [1.9, 1.0, 0.3]  # unscaled entropy
    assert fig.get_size_inches()[0] <= plotting.COLUMN_WIDTH
    with pytest.raises(ValueError, match="n_keys must be an integer >= 2"):
        plotting.saturation_by_dimension([1], [1.0], [1.0], [0.0], [0.0], n_keys=1)


def test_ch5_scaling_effect_rows_draw_one_row_per_d_k_and_stack_on_a_phone():
    fig = plotting.scaling_effect_rows((4, 64))
    assert len(fig.axes) == 4 and fig.get_size_inches().tolist() == [7.2, 4.8]
    assert [ax.get_title().split(":")[0] for ax in fig.axes[::2]] == ["d_k = 4", "d_k = 64"]
    assert {ax.get_title() for ax in fig.axes[1::2]} == {"weights of one query over 8 keys"}
    assert {ax.get_xlabel() for ax in fig.axes[::2]} == {"q·k, or q·k / √d_k"}
    assert {ax.get_ylabel() for ax in fig.axes[1::2]} == {"softmax weight"}
    alone = plotting.scaling_effect(64)  # a row is the slider's figure at that d_k
    heights = [patch.get_height() for patch in fig.axes[3].patches]
    assert heights == [patch.get_height() for patch in alone.axes[1].patches]
    phone = plotting.scaling_effect_rows((4, 64), layout="phone")
    assert phone.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
    assert {ax.get_subplotspec().get_gridspec().ncols for ax in phone.axes} == {1}  # stacked
    with pytest.raises(ValueError, match="dimensions is empty"):
        plotting.scaling_effect_rows(())


def test_ch5_line_plots_put_their_legend_under_the_axes_on_a_phone():
    dims, ones = [1, 4, 16], [1.0, 1.0, 1.0]
    title = "Unscaled dot products: variance $d_k$; scaled: variance 1"
    laptop = plotting.versus_dimension(dims, ones, ones, ylabel="y", title=title)
    phone = plotting.versus_dimension(dims, ones, ones, ylabel="y", title=title, layout="phone")
    assert laptop.axes[0].get_title() == title
    assert phone.axes[0].get_title() == (
        "Unscaled dot products: variance $d_k$;\nscaled: variance 1"
    )
    assert phone.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
    for fig in (
        phone,
        plotting.learning_rate_sweep(dims, ones, ones, threshold=0.3, layout="phone"),
        plotting.saturation_by_dimension(dims, ones, ones, ones, ones, n_keys=8, layout="phone"),
    ):
        assert fig.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
        fig.draw_without_rendering()
        for ax in fig.axes:
            legend = ax.get_legend().get_window_extent()
            assert legend.y1 < ax.get_window_extent().y0  # under the axes: it covers no data
    saturation = plotting.saturation_by_dimension(
        dims, ones, ones, ones, ones, n_keys=8, layout="phone"
    )
    assert {ax.get_subplotspec().get_gridspec().ncols for ax in saturation.axes} == {1}  # stacked


def test_ch5_one_query_scaling_breaks_its_title_on_a_phone():
    args = (["a", "b"], [4.0, 0.0], [2.0, 0.0], [0.98, 0.02], [0.88, 0.12])
    laptop = plotting.one_query_scaling(*args, d_k=4, query="a")
    phone = plotting.one_query_scaling(*args, d_k=4, query="a", layout="phone")
    assert laptop.figure.texts[0].get_text() == 'The query of "a" against every key, d_k = 4'
    assert phone.figure.texts[0].get_text() == 'The query of "a" against every key,\nd_k = 4'
    assert phone.figure.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
