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
