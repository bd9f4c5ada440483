"""Tests of selfattn_lib.plotting: figures are returned (never shown) and labelled."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from selfattn_lib import plotting


def test_heatmap_labels_colorbar_and_annotations():
    fig = plotting.heatmap(
        np.array([[0.1, 0.9], [0.5, 0.5]]),
        ["the", "cat"],
        ["the", "cat"],
        title="weights",
        colorbar_label="weight",
    )
    ax, colorbar = fig.axes
    assert isinstance(fig, Figure)
    assert [label.get_text() for label in ax.get_xticklabels()] == ["the", "cat"]
    assert [label.get_text() for label in ax.get_yticklabels()] == ["the", "cat"]
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("key", "query", "weights")
    assert colorbar.get_ylabel() == "weight"
    assert sorted(text.get_text() for text in ax.texts) == ["0.10", "0.50", "0.50", "0.90"]
    assert ax.images[0].get_cmap().name == plotting.SEQUENTIAL_CMAP


def test_heatmap_signed_data_is_centred_on_zero():
    fig = plotting.heatmap(np.array([[-2.0, 1.0]]), ["q"], ["a", "b"], annotate=False)
    image = fig.axes[0].images[0]
    assert image.get_cmap().name == plotting.DIVERGING_CMAP
    assert image.norm.vmin == -2.0 and image.norm.vmax == 2.0
    assert len(fig.axes[0].texts) == 0


def test_heatmap_annotation_contrast_follows_the_cell_colour():
    fig = plotting.heatmap(np.array([[0.0, 1.0]]), ["q"], ["dark", "light"])
    dark, light = fig.axes[0].texts
    assert (dark.get_color(), light.get_color()) == ("white", "black")


@pytest.mark.parametrize(
    ("matrix", "rows", "cols", "message"),
    [
        (np.zeros(3), ["a"], ["a"], r"2-D \(T_q, T_k\), got shape \(3,\)"),
        (np.zeros((2, 2)), ["a"], ["a", "b"], r"shape \(2, 2\): 1 row_labels and 2 col_labels"),
        (np.array([[np.nan]]), ["a"], ["a"], "NaN"),
    ],
)
def test_heatmap_rejects_bad_input(matrix, rows, cols, message):
    with pytest.raises(ValueError, match=message):
        plotting.heatmap(matrix, rows, cols)


def test_bar_chart_draws_one_labelled_bar_per_value():
    fig = plotting.bar_chart(np.array([0.25, 0.75]), ["a", "b"], ylabel="weight", ylim=(0, 1))
    ax = fig.axes[0]
    assert [patch.get_height() for patch in ax.patches] == [0.25, 0.75]
    assert [label.get_text() for label in ax.get_xticklabels()] == ["a", "b"]
    assert ax.get_ylim() == (0.0, 1.0)


def test_bar_chart_rejects_label_mismatch():
    with pytest.raises(ValueError, match=r"values has shape \(2,\), there are 3 labels"):
        plotting.bar_chart(np.ones(2), ["a", "b", "c"])


def test_vectors_2d_draws_labelled_arrows_in_a_square_frame():
    fig = plotting.vectors_2d({"cat": [0.9, 0.1], "car": [0.0, 1.0]}, xlabel="animal")
    ax = fig.axes[0]
    assert [text.get_text() for text in ax.texts] == ["", "cat", "", "car"]
    assert ax.get_xlim() == ax.get_ylim()
    assert ax.get_xlabel() == "animal"


def test_vectors_2d_rejects_non_2d_vectors():
    with pytest.raises(ValueError, match=r"vectors\['x'\] must have shape \(2,\), got \(3,\)"):
        plotting.vectors_2d({"x": [1, 2, 3]})


def test_axes_can_be_passed_for_small_multiples():
    fig = Figure()
    left, right = fig.subplots(1, 2)
    assert plotting.bar_chart(np.ones(2), ["a", "b"], ax=right) is fig
    assert len(left.patches) == 0 and len(right.patches) == 2


# --- Chapter 1: dot-product similarity ---


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


# --- Chapter 2: softmax ---


def test_ch2_temperature_weights_draws_the_softmax_at_that_temperature():
    from selfattn_lib.softmax import softmax

    scores = np.array([1.0, 3.0, 2.0, -1.0])
    fig = plotting.temperature_weights(scores, ["a", "b", "c", "d"], temperature=0.5)
    ax = fig.axes[0]
    heights = [patch.get_height() for patch in ax.patches]
    np.testing.assert_allclose(heights, softmax(scores / 0.5), rtol=1e-12)
    assert [label.get_text() for label in ax.get_xticklabels()] == ["a", "b", "c", "d"]
    assert (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) == (
        "τ = 0.5",
        "key",
        "softmax weight",
    )
    assert ax.get_ylim() == (0.0, 1.15)
    uniform_line = ax.lines[-1]
    assert list(uniform_line.get_ydata()) == [0.25, 0.25]
    assert "1/4" in [text.get_text() for text in ax.texts]


def test_ch2_temperature_weights_goes_from_argmax_to_uniform_and_splits_ties():
    labels = ["a", "b", "c"]
    cold = plotting.temperature_weights([2.0, 2.0, 0.0], labels, temperature=1e-3)
    np.testing.assert_allclose([p.get_height() for p in cold.axes[0].patches], [0.5, 0.5, 0.0])
    hot = plotting.temperature_weights([2.0, 1.0, 0.0], labels, temperature=1e4)
    np.testing.assert_allclose([p.get_height() for p in hot.axes[0].patches], 1 / 3, rtol=1e-3)


@pytest.mark.parametrize("temperature", [0.0, -1.0])
def test_ch2_temperature_weights_rejects_a_non_positive_temperature(temperature):
    with pytest.raises(ValueError, match="temperature"):
        plotting.temperature_weights([1.0, 2.0], ["a", "b"], temperature)


def test_ch2_temperature_weights_rejects_a_matrix_and_draws_into_given_axes():
    with pytest.raises(ValueError, match=r"one row of shape \(T_k,\), got shape \(1, 2\)"):
        plotting.temperature_weights([[1.0, 2.0]], ["a", "b"], 1.0)
    fig = Figure()
    left, right = fig.subplots(1, 2)
    assert plotting.temperature_weights([1.0, 2.0], ["a", "b"], 2.0, ax=right) is fig
    assert len(left.patches) == 0 and right.get_title() == "τ = 2"


# --- Chapter 3: self-attention without weights ---


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


# --- Chapter 5: scaling ---


def test_ch5_scaling_effect_shows_the_spread_and_the_weights_of_one_query():
    fig = plotting.scaling_effect(64, n_keys=5, n_samples=500, seed=1)
    hist_ax, bar_ax = fig.axes
    assert hist_ax.get_title().startswith("d_k = 64: std of q·k ")
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


# --- Chapter 4: queries, keys and values ---


def test_ch4_projected_attention_weights_draws_softmax_of_scaled_projections():
    from selfattn_lib.attention import scaled_dot_product_attention

    x = np.array([[1.0, 0.0, 0.0, 1.0], [0.0, 2.0, 2.0, 0.0], [1.0, 1.0, 0.0, 0.0]])
    w_q = np.arange(12.0).reshape(4, 3) / 10
    w_k = np.arange(12.0)[::-1].reshape(4, 3) / 10
    fig = plotting.projected_attention_weights(x, w_q, w_k, ["a", "b", "c"], query_scale=2.0)
    ax = fig.axes[0]
    _, expected = scaled_dot_product_attention(x @ (2 * w_q), x @ w_k, x @ w_k)
    np.testing.assert_allclose(ax.images[0].get_array(), expected, rtol=1e-12)
    assert ax.get_title() == "weights with 2.0 × W_Q"
    assert ax.images[0].get_clim() == (0.0, 1.0)
    uniform = plotting.projected_attention_weights(x, w_q, w_k, "abc", query_scale=0.0)
    assert {text.get_color() for text in uniform.axes[0].texts} == {"white"}  # dark cells
    assert [label.get_text() for label in ax.get_yticklabels()] == ["a", "b", "c"]


def test_ch4_projected_attention_weights_is_uniform_at_scale_zero_and_checks_shapes():
    x = np.eye(3, 4)
    fig = plotting.projected_attention_weights(
        x, np.ones((4, 2)), np.ones((4, 2)), "abc", query_scale=0
    )
    np.testing.assert_allclose(fig.axes[0].images[0].get_array(), 1 / 3)
    with pytest.raises(ValueError, match=r"must both be \(D, d_k\) with D = 4"):
        plotting.projected_attention_weights(x, np.ones((4, 2)), np.ones((4, 3)), "abc")
    with pytest.raises(ValueError, match="must be matrices"):
        plotting.projected_attention_weights(x[0], np.ones((4, 2)), np.ones((4, 2)), "abc")


# --- Chapter 6: masks ---

CH6_TOKENS = [["the", "cat", "sat"], ["dogs", "bark", "<pad>"]]


def ch6_weights_of(fig, panel):
    return np.asarray(fig.axes[panel].images[0].get_array())


def test_ch6_mask_and_weights_draws_mask_and_weights_per_sequence():
    scores = np.random.default_rng(0).normal(size=(2, 3, 3))
    fig = plotting.mask_and_weights(scores, CH6_TOKENS, [3, 2], "both")
    assert len(fig.axes) == 8  # 4 heatmaps, each with its colour bar
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


# --- Chapter 7: multi-head attention ---

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


# --- Chapter 8: positional encoding ---


def test_ch8_encoding_heatmap_draws_the_matrix_with_labels_and_a_centred_colour_bar():
    from selfattn_lib.positional import sinusoidal_encoding

    encoding = sinusoidal_encoding(10, 6)
    fig = plotting.encoding_heatmap(encoding, title="PE")
    ax, colorbar = fig.axes
    image = ax.images[0]
    np.testing.assert_array_equal(image.get_array(), encoding)
    assert image.get_cmap().name == plotting.DIVERGING_CMAP
    assert image.get_clim() == (-1.0, 1.0)  # symmetric, so 0 is white
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("dimension", "position", "PE")
    assert colorbar.get_ylabel() == "encoding value"
    assert len(ax.texts) == 0  # no cell labels on a large matrix


def test_ch8_encoding_heatmap_non_negative_data_and_bad_input():
    fig = plotting.encoding_heatmap(np.ones((3, 3)), xlabel="position", colorbar_label="dot")
    assert fig.axes[0].images[0].get_cmap().name == plotting.SEQUENTIAL_CMAP
    assert fig.axes[0].get_xlabel() == "position" and fig.axes[1].get_ylabel() == "dot"
    with pytest.raises(ValueError, match=r"2-D \(T, D\), got shape \(3,\)"):
        plotting.encoding_heatmap(np.ones(3))
    with pytest.raises(ValueError, match="NaN or infinity"):
        plotting.encoding_heatmap(np.array([[0.0, np.nan]]))
    fig = Figure()
    left, right = fig.subplots(1, 2)
    assert plotting.encoding_heatmap(np.eye(2), ax=right) is fig
    assert len(left.images) == 0 and len(right.images) == 1


def test_ch8_wavelength_plot_draws_a_geometric_sequence_on_a_log_axis():
    fig = plotting.wavelength_plot(16, base=100.0)
    ax = fig.axes[0]
    wavelengths = ax.lines[0].get_ydata()
    expected = 2 * np.pi * 100.0 ** (np.arange(0, 16, 2) / 16)
    np.testing.assert_allclose(wavelengths, expected)
    np.testing.assert_allclose(wavelengths[1:] / wavelengths[:-1], 100.0 ** (2 / 16))
    assert ax.get_yscale() == "log"
    references = sorted(line.get_ydata()[0] for line in ax.lines[1:])
    np.testing.assert_allclose(references, [2 * np.pi, 2 * np.pi * 100.0])
    assert wavelengths.max() < 2 * np.pi * 100.0  # the slowest pair never reaches 2π · base
    assert "D = 16" in ax.get_title() and "wavelength" in ax.get_ylabel()


@pytest.mark.parametrize(
    ("d_model", "base", "error", "message"),
    [
        (7, 10000.0, ValueError, "d_model must be even"),
        (0, 10000.0, ValueError, "d_model must be a positive integer"),
        (8, -1.0, ValueError, "base must be a finite positive number"),
    ],
)
def test_ch8_wavelength_plot_rejects_bad_input(d_model, base, error, message):
    with pytest.raises(error, match=message):
        plotting.wavelength_plot(d_model, base=base)


def test_ch8_positional_waves_marks_the_value_and_highlights_the_dimension():
    from selfattn_lib.positional import sinusoidal_encoding

    encoding = sinusoidal_encoding(32, 8)
    fig = plotting.positional_waves(8, position=5, dimension=3, max_len=32)
    wave_ax, vector_ax = fig.axes
    dots = wave_ax.lines[2]  # the integer positions of the chosen dimension
    np.testing.assert_allclose(dots.get_ydata(), encoding[:, 3])
    marker = wave_ax.lines[-1]
    assert marker.get_xdata()[0] == 5 and marker.get_ydata()[0] == pytest.approx(encoding[5, 3])
    assert "dimension 3 (pair 1)" in wave_ax.get_title()
    assert "wavelength 62.83" in wave_ax.get_title()
    labels = [text.get_text() for text in wave_ax.get_legend().get_texts()]
    assert labels == ["dim 2 = sin(pos · ω_1)", "dim 3 = cos(pos · ω_1)"]
    heights = [patch.get_height() for patch in vector_ax.patches]
    np.testing.assert_allclose(heights, encoding[5])
    colours = {patch.get_facecolor() for i, patch in enumerate(vector_ax.patches) if i != 3}
    assert len(colours) == 1 and vector_ax.patches[3].get_facecolor() not in colours
    assert vector_ax.get_title() == "PE[5], all 8 dimensions"


def test_ch8_positional_waves_rejects_bad_input_and_draws_into_given_axes():
    with pytest.raises(ValueError, match=r"position must be in \[0, 64\), got 64"):
        plotting.positional_waves(8, position=64, dimension=0)
    with pytest.raises(ValueError, match=r"dimension must be in \[0, 8\), got -1"):
        plotting.positional_waves(8, position=0, dimension=-1)
    with pytest.raises(ValueError, match="d_model must be even"):
        plotting.positional_waves(5, position=0, dimension=0)
    with pytest.raises(ValueError, match="max_len must be a positive integer"):
        plotting.positional_waves(8, position=0, dimension=0, max_len=0)
    with pytest.raises(ValueError, match="2 axes"):
        plotting.positional_waves(8, 0, 0, axes=Figure().subplots(1, 3))
    fig = Figure()
    axes = fig.subplots(2, 2)
    assert plotting.positional_waves(8, 1, 0, axes=axes[1]) is fig
    assert axes[0, 0].get_title() == "" and axes[1, 1].get_title() == "PE[1], all 8 dimensions"


# --- Chapter 11: attention at scale ---


def test_ch11_scaling_plot_draws_log_log_series_and_reference_slopes():
    sizes = [64, 128, 256, 512]
    fig = plotting.scaling_plot(
        sizes,
        {"quadratic": [1.0, 4.0, 16.0, 64.0], "linear": [2.0, 4.0, 8.0, 16.0]},
        reference_slopes=(1, 2),
        ylabel="seconds",
        title="cost",
    )
    ax = fig.axes[0]
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    assert (ax.get_ylabel(), ax.get_title()) == ("seconds", "cost")
    assert [line.get_label() for line in ax.lines] == ["quadratic", "linear", "slope 1", "slope 2"]
    slope_1, slope_2 = ax.lines[2].get_ydata(), ax.lines[3].get_ydata()
    np.testing.assert_allclose(slope_2, [1.0, 4.0, 16.0, 64.0])  # through (512, 64)
    np.testing.assert_allclose(slope_1, [8.0, 16.0, 32.0, 64.0])
    assert [text.get_text() for text in ax.get_legend().get_texts()][:2] == ["quadratic", "linear"]


@pytest.mark.parametrize(
    ("sizes", "series", "message"),
    [
        ([1], {"a": [1.0]}, "at least 2 positive"),
        ([1, -2], {"a": [1.0, 2.0]}, "at least 2 positive"),
        ([1, 2], {}, "at least one named"),
        ([1, 2], {"a": [1.0, 0.0]}, "'a' must hold 2 positive"),
        ([1, 2], {"a": [1.0, 2.0, 3.0]}, r"got shape \(3,\)"),
    ],
)
def test_ch11_scaling_plot_rejects_bad_input(sizes, series, message):
    with pytest.raises(ValueError, match=message):
        plotting.scaling_plot(sizes, series)


def test_ch11_scaling_plot_draws_into_given_axes():
    fig = Figure()
    axes = fig.subplots(1, 2)
    assert plotting.scaling_plot([1, 2], {"a": [1.0, 2.0]}, ax=axes[1]) is fig
    assert not axes[0].lines and len(axes[1].lines) == 3


def test_ch11_block_schedule_numbers_the_key_blocks_and_tracks_max_and_sum():
    scores = np.array([[0.0, 2.0, 1.0, 3.0, -1.0], [5.0, 0.0, 0.0, 0.0, 0.0]])
    fig = plotting.block_schedule(scores, 2, row=0)
    grid_ax, max_ax, sum_ax = fig.axes[:3]
    steps = np.asarray(grid_ax.images[0].get_array())
    np.testing.assert_array_equal(steps, [[1, 1, 2, 2, 3], [1, 1, 2, 2, 3]])
    assert [text.get_text() for text in grid_ax.texts] == ["1", "2", "3"]
    assert grid_ax.get_title() == "step = key block: 3 steps, tile 2 × 2 (direct: 2 × 5)"
    # Running maximum after each block: 2, 3, 3; the dashed line is the row's maximum.
    maxima = [segments.get_segments()[0][0][1] for segments in max_ax.collections[1:]]
    assert maxima == [2.0, 3.0, 3.0]
    # Running sums: block 1 against max 2; rescaled to max 3 in block 2; the final sum is
    # the softmax denominator of the row.
    sums = [bar.get_height() for bar in sum_ax.patches]
    np.testing.assert_allclose(sums[0], np.exp(-2.0) + 1.0)
    np.testing.assert_allclose(sums[1], (np.exp(-2.0) + 1.0) * np.exp(-1.0) + np.exp(-2.0) + 1.0)
    np.testing.assert_allclose(sums[-1], np.exp(scores[0] - 3.0).sum())
    assert [text.get_text() for text in sum_ax.texts] == ["m grew:\nℓ rescaled"]
    assert sum_ax.lines[0].get_ydata()[0] == pytest.approx(np.exp(scores[0] - 3.0).sum())


def test_ch11_block_schedule_one_block_is_the_direct_softmax():
    scores = np.random.default_rng(0).normal(size=(4, 6))
    fig = plotting.block_schedule(scores, 8, row=3)
    assert fig.axes[0].get_title() == "step = key block: 1 steps, tile 4 × 6 (direct: 4 × 6)"
    (bar,) = fig.axes[2].patches
    assert bar.get_height() == pytest.approx(np.exp(scores[3] - scores[3].max()).sum())
    outline = fig.axes[0].patches[0]
    assert outline.get_y() == 2.5  # query 3 is outlined


@pytest.mark.parametrize(
    ("scores", "block_size", "row", "error", "message"),
    [
        (np.zeros(4), 2, 0, ValueError, r"shape \(T_q, T_k\)"),
        (np.full((2, 2), np.inf), 2, 0, ValueError, "finite"),
        (np.zeros((2, 2)), 0, 0, ValueError, "at least 1"),
        (np.zeros((2, 2)), 1.5, 0, TypeError, "integer"),
        (np.zeros((2, 2)), 1, 2, ValueError, r"query index in 0 … 1"),
    ],
)
def test_ch11_block_schedule_rejects_bad_input(scores, block_size, row, error, message):
    with pytest.raises(error, match=message):
        plotting.block_schedule(scores, block_size, row=row)


def test_ch11_block_schedule_draws_into_given_axes():
    fig = Figure()
    axes = fig.subplots(2, 3)
    assert plotting.block_schedule(np.zeros((3, 4)), 2, axes=axes[1]) is fig
    assert axes[0, 0].get_title() == "" and axes[1, 0].get_title().startswith("step = key block")
    with pytest.raises(ValueError, match="3 axes"):
        plotting.block_schedule(np.zeros((3, 4)), 2, axes=axes[0][:2])


# --- Chapter 9 ---


@pytest.mark.parametrize(
    ("norm_first", "steps", "title"),
    [
        (
            False,
            [
                "multi-head self-attention",
                "+",
                "layer norm",
                "feed-forward (each position)",
                "+",
                "layer norm",
            ],
            "Post-norm (the paper): LN(x + Sublayer(x))",
        ),
        (
            True,
            [
                "layer norm",
                "multi-head self-attention",
                "+",
                "layer norm",
                "feed-forward (each position)",
                "+",
            ],
            "Pre-norm: x + Sublayer(LN(x))",
        ),
    ],
)
def test_ch9_encoder_layer_diagram_draws_the_steps_in_order(norm_first, steps, title):
    fig = plotting.encoder_layer_diagram(norm_first=norm_first)
    ax = fig.axes[0]
    labelled = [text for text in ax.texts if text.get_text()]  # arrows have no text
    texts = [text.get_text() for text in labelled]
    assert texts[0] == "x  (B, T, D)"
    assert texts[1:7] == steps
    assert texts[-1] == "residual\n(identity)"
    assert ax.get_title() == title
    skip_lines = [line for line in ax.lines if line.get_color() == plotting.OKABE_ITO[1]]
    assert len(skip_lines) == 4  # two residual paths, each a polyline and its starting dot
    heights = [text.get_position()[1] for text in labelled[:8]]
    assert heights == sorted(heights), "the flow goes from the bottom to the top"
    arrows = [text for text in ax.texts if not text.get_text()]
    assert len(arrows) == 7 + 2  # one per step of the main path, one per residual path


def test_ch9_encoder_layer_diagram_draws_into_given_axes():
    fig = Figure()
    left, right = fig.subplots(1, 2)
    assert plotting.encoder_layer_diagram(ax=right) is fig
    assert left.get_title() == "" and right.get_title().startswith("Post-norm")


def test_ch9_normalization_axes_highlights_a_row_and_a_column():
    labels = ["the", "cat", "dogs", "<pad>"]
    fig = plotting.normalization_axes(labels, 3, token=1, feature=2, tokens_per_sequence=2)
    layer_ax, batch_ax = fig.axes
    assert layer_ax.get_title().startswith("layer norm")
    assert batch_ax.get_title().startswith("batch norm")
    for ax, (x0, y0, width, height) in ((layer_ax, (0, 1, 3, 1)), (batch_ax, (2, 0, 1, 4))):
        *pads, highlight = ax.patches
        assert len(pads) == 1 and pads[0].get_hatch() == "//"
        assert pads[0].get_y() == 3 and pads[0].get_width() == 3
        assert (highlight.get_x(), highlight.get_y()) == (x0, y0)
        assert (highlight.get_width(), highlight.get_height()) == (width, height)
        assert [label.get_text() for label in ax.get_yticklabels()] == labels
        assert ax.get_xlabel() == "feature (D axis)"
        assert [line.get_ydata()[0] for line in ax.lines] == [2]  # between the two sequences
    assert layer_ax.get_ylim() == (4, 0)  # the first token at the top


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"row_labels": []}, "at least one token"),
        ({"n_features": 0}, "positive integer"),
        ({"n_features": 2.5}, "positive integer"),
        ({"token": 3}, r"token must be in \[0, 3\)"),
        ({"feature": 4}, r"feature must be in \[0, 4\)"),
        ({"tokens_per_sequence": 2}, "must divide the 3 rows"),
    ],
)
def test_ch9_normalization_axes_rejects_bad_input(kwargs, message):
    arguments = {"row_labels": ["a", "b", "<pad>"], "n_features": 4, **kwargs}
    with pytest.raises(ValueError, match=message):
        plotting.normalization_axes(**arguments)


def test_ch9_normalization_axes_needs_two_axes():
    fig = Figure()
    axes = fig.subplots(1, 3)
    with pytest.raises(ValueError, match="2 axes"):
        plotting.normalization_axes(["a"], 2, axes=axes)
    assert plotting.normalization_axes(["a"], 2, axes=axes[1:]) is fig


def test_ch9_depth_curves_draws_one_line_per_variant_on_a_log_axis():
    curves = {"no residual": [1.0, 0.1, 0.01], "residual": [1.0, 1.5, 2.0]}
    fig = plotting.depth_curves([1, 2, 4], curves, ylabel="gradient", title="t")
    ax = fig.axes[0]
    assert ax.get_yscale() == "log" and ax.get_xscale() == "linear"
    assert [line.get_label() for line in ax.lines] == list(curves)
    assert ax.lines[1].get_ydata().tolist() == [1.0, 1.5, 2.0]
    assert ax.lines[0].get_color() == plotting.OKABE_ITO[0]
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == (
        "number of layers",
        "gradient",
        "t",
    )
    logged = plotting.depth_curves([1, 2, 4], curves, logx=True).axes[0]
    assert logged.get_xscale() == "log"
    assert [label.get_text() for label in logged.get_xticklabels()] == ["1", "2", "4"]


@pytest.mark.parametrize(
    ("depths", "curves", "logx", "message"),
    [
        ([], {"a": []}, False, "non-empty 1-D"),
        ([1, 2], {}, False, "at least one line"),
        ([1, 2], {"a": [1.0]}, False, r"curve 'a' has shape \(1,\)"),
        ([1, 2], {"a": [1.0, 0.0]}, False, "positive and finite"),
        ([1, 2], {"a": [1.0, np.nan]}, False, "positive and finite"),
        ([0, 2], {"a": [1.0, 2.0]}, True, "logarithmic x axis"),
    ],
)
def test_ch9_depth_curves_rejects_bad_input(depths, curves, logx, message):
    with pytest.raises(ValueError, match=message):
        plotting.depth_curves(depths, curves, logx=logx)


def test_ch9_depth_curves_draws_into_given_axes():
    fig = Figure()
    left, right = fig.subplots(1, 2)
    assert plotting.depth_curves([1, 2], {"a": [1.0, 2.0]}, ax=left) is fig
    assert len(left.lines) == 1 and len(right.lines) == 0


def test_ch9_depth_curves_colour_groups_share_a_colour_and_vary_the_line_style():
    curves = {"A first": [1.0, 2.0], "A last": [2.0, 3.0], "B first": [1.0, 1.5], "B last": [3, 4]}
    ax = plotting.depth_curves([1, 2], curves, colour_groups=[0, 0, 1, 1]).axes[0]
    colours = [line.get_color() for line in ax.lines]
    assert colours == [plotting.OKABE_ITO[0]] * 2 + [plotting.OKABE_ITO[1]] * 2
    assert [line.get_linestyle() for line in ax.lines] == ["-", "--", "-", "--"]
    default = plotting.depth_curves([1, 2], curves).axes[0]
    assert [line.get_color() for line in default.lines] == list(plotting.OKABE_ITO[:4])
    assert {line.get_linestyle() for line in default.lines} == {"-"}


@pytest.mark.parametrize("groups", [[0], [0, -1], [0, 1.5]])
def test_ch9_depth_curves_rejects_bad_colour_groups(groups):
    with pytest.raises(ValueError, match="colour_groups"):
        plotting.depth_curves([1, 2], {"a": [1.0, 2.0], "b": [1.0, 2.0]}, colour_groups=groups)


# --- Chapter 10 ---


def test_ch10_visible_characters_shows_spaces():
    assert plotting.visible_characters(list("1 May")) == ["1", "␣", "M", "a", "y"]
    assert plotting.visible_characters(["<bos>", "-"]) == ["<bos>", "-"]


def test_ch10_loss_curve_draws_losses_average_and_learning_rates():
    losses = np.linspace(2.0, 0.1, 20)
    rates = np.linspace(1e-4, 1e-3, 20)
    fig = plotting.loss_curve(losses, learning_rates=rates, window=5)
    loss_ax, rate_ax = fig.axes
    raw, average = loss_ax.lines
    np.testing.assert_allclose(raw.get_ydata(), losses)
    np.testing.assert_allclose(average.get_ydata(), np.convolve(losses, np.ones(5) / 5, "valid"))
    assert average.get_xdata()[0] == 5  # the first full window ends at step 5
    assert loss_ax.get_yscale() == "log" and loss_ax.get_xlabel() == "training step"
    np.testing.assert_allclose(rate_ax.lines[0].get_ydata(), rates)
    assert rate_ax.get_ylabel() == "learning rate"
    assert len(plotting.loss_curve(losses).axes) == 1
    assert len(plotting.loss_curve([1.0, 0.5], window=10).axes[0].lines[1].get_ydata()) == 1


@pytest.mark.parametrize(
    ("losses", "options", "message"),
    [
        ([], {}, "non-empty 1-D"),
        ([1.0, 0.0], {}, "positive and finite"),
        ([1.0, np.nan], {}, "positive and finite"),
        ([1.0, 0.5], {"window": 0}, "window must be a positive integer"),
        ([1.0, 0.5], {"learning_rates": [1e-3]}, "one value per step"),
        ([1.0, 0.5], {"axes": []}, "axes must hold 1 axes"),
    ],
)
def test_ch10_loss_curve_rejects_bad_input(losses, options, message):
    with pytest.raises(ValueError, match=message):
        plotting.loss_curve(losses, **options)


def test_ch10_cross_attention_maps_per_head_and_mean_on_one_scale():
    rng = np.random.default_rng(0)
    weights = rng.dirichlet(np.ones(5), size=(3, 4))  # (H, T_tgt, T_src), rows sum to 1
    fig = plotting.cross_attention_maps(weights, list("a b c"), list("xyz") + ["<eos>"])
    *panels, colorbar = fig.axes
    assert len(panels) == 4  # 3 heads and the mean, the spare grid cell removed
    titles = [ax.get_title() for ax in panels]
    assert titles == ["head 1", "head 2", "head 3", "mean of the 3 heads"]
    np.testing.assert_allclose(panels[1].images[0].get_array(), weights[1])
    np.testing.assert_allclose(panels[3].images[0].get_array(), weights.mean(axis=0))
    assert [t.get_text() for t in panels[0].get_xticklabels()] == ["a", "␣", "b", "␣", "c"]
    assert [t.get_text() for t in panels[0].get_yticklabels()] == ["x", "y", "z", "<eos>"]
    assert panels[0].get_xlabel() == "source character (key)"
    assert panels[0].images[0].get_clim() == (0.0, 1.0)
    assert colorbar.get_ylabel() == "cross-attention weight"


def test_ch10_cross_attention_maps_single_map_into_given_axes():
    fig = Figure()
    ax = fig.add_subplot()
    returned = plotting.cross_attention_maps(
        np.full((2, 3), 1 / 3), list("abc"), ["1", "2"], title="mean", axes=[ax]
    )
    assert returned is fig and ax.get_title() == "mean" and len(fig.axes) == 2


@pytest.mark.parametrize(
    ("weights", "source", "target", "options", "message"),
    [
        (np.ones(3), ["a"] * 3, [], {}, r"\(T_tgt, T_src\) or \(H, T_tgt, T_src\)"),
        (np.ones((2, 3)), ["a"] * 2, ["x"] * 2, {}, "labels do not fit"),
        (-np.ones((2, 3)), ["a"] * 3, ["x"] * 2, {}, "finite and non-negative"),
        (np.ones((2, 2, 3)), ["a"] * 3, ["x"] * 2, {"axes": [None]}, "axes must hold 3 axes"),
    ],
)
def test_ch10_cross_attention_maps_rejects_bad_input(weights, source, target, options, message):
    with pytest.raises(ValueError, match=message):
        plotting.cross_attention_maps(weights, source, target, **options)
