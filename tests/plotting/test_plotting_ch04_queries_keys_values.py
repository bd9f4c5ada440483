"""Tests of selfattn_lib.plotting.ch04_queries_keys_values: the figures of chapter 4."""

import numpy as np
import pytest

from selfattn_lib import plotting


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
    with pytest.raises(ValueError, match=r"must both be \(D, D_k\) with D = 4"):
        plotting.projected_attention_weights(x, np.ones((4, 2)), np.ones((4, 3)), "abc")
    with pytest.raises(ValueError, match="must be matrices"):
        plotting.projected_attention_weights(x[0], np.ones((4, 2)), np.ones((4, 2)), "abc")


def test_ch4_projected_weights_are_those_of_the_attention_function():
    from selfattn_lib.attention import scaled_dot_product_attention

    rng = np.random.default_rng(4)
    x, w_q, w_k = rng.normal(size=(3, 4)), rng.normal(size=(4, 2)), rng.normal(size=(4, 2))
    fig = plotting.projected_attention_weights(x, w_q, w_k, ["a", "b", "c"], query_scale=2.0)
    drawn = fig.axes[0].images[0].get_array()
    _, expected = scaled_dot_product_attention(x @ (2 * w_q), x @ w_k, x @ w_k)
    assert np.array_equal(drawn, expected)


def test_ch4_projected_weights_leave_out_their_colour_bar_for_a_shared_one():
    x = np.eye(3, 4)
    alone = plotting.projected_attention_weights(x, np.ones((4, 2)), np.ones((4, 2)), "abc")
    assert len(alone.axes) == 2  # the heatmap and its colour bar
    fig, panels = plotting.small_multiples(2, columns=2)
    for panel, scale in zip(panels, (0.0, 5.0), strict=True):
        plotting.projected_attention_weights(
            x, np.eye(4, 2), np.eye(4, 2), "abc", query_scale=scale, colorbar=False, ax=panel
        )
    assert len(fig.axes) == 2  # no colour bar yet
    plotting.shared_colorbar(panels, "attention weight")  # both panels run from 0 to 1
    assert len(fig.axes) == 3 and fig.axes[2].get_ylabel() == "attention weight"


def test_ch4_projected_weights_can_leave_their_cells_unlabelled_for_small_panels():
    x = np.eye(3, 4)
    fig = plotting.projected_attention_weights(
        x, np.ones((4, 2)), np.ones((4, 2)), "abc", annotate=False
    )
    assert not fig.axes[0].texts


# The chapter's hand-built head on the running sentence: function words ask for an animal.
def ch4_running_head():
    from selfattn_lib import embeddings

    tokens = embeddings.tokenize(embeddings.RUNNING_EXAMPLE)
    x = embeddings.embed(tokens)  # (7, 8)
    feature = {name: i for i, name in enumerate(embeddings.FEATURES)}
    w_q, w_k, w_v = np.zeros((8, 2)), np.zeros((8, 2)), np.zeros((8, 3))
    w_q[feature["grammar"]] = [8.0, -8.0]
    w_k[feature["animal"], 0] = w_k[feature["grammar"], 1] = 1.0
    for column, name in enumerate(["animal", "domestic", "motion"]):
        w_v[feature[name], column] = 1.0
    return tokens, x, w_q, w_k, w_v


CH4_NAMES = {
    "query_names": ["animal?", "grammar?"],
    "key_names": ["animal", "grammar"],
    "value_names": ["animal", "domestic", "motion"],
}


def test_ch4_attention_flow_draws_what_the_attention_function_computes():
    from selfattn_lib import embeddings
    from selfattn_lib.attention import scaled_dot_product_attention
    from selfattn_lib.plotting.diagrams import read_back

    tokens, x, w_q, w_k, w_v = ch4_running_head()
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    # What the notebook hands over: its own loop of the formula, one query at a time.
    scaled = np.array([[qi @ kj / np.sqrt(2) for kj in k] for qi in q])
    weights = np.exp(scaled) / np.exp(scaled).sum(axis=1, keepdims=True)
    diagram = plotting.attention_flow(
        tokens, x, q, k, v, scaled, weights, weights @ v,
        features=embeddings.FEATURES, **CH4_NAMES,
    )  # fmt: skip
    # Computed again, independently, by the concept function.
    expected_output, expected_weights = scaled_dot_product_attention(q, k, v)
    drawn = diagram.figure
    np.testing.assert_allclose(read_back(drawn, "A"), expected_weights, atol=0.005)
    np.testing.assert_allclose(read_back(drawn, "Z"), expected_output, atol=0.005)
    np.testing.assert_allclose(read_back(drawn, "X"), embeddings.embed(tokens), atol=0.05)
    np.testing.assert_allclose(read_back(drawn, "Q"), x @ w_q, atol=0.05)
    assert read_back(drawn, "S")[tokens.index("it"), tokens.index("cat")] == 3.1  # 4.32 / √2
    assert "−0.0" not in {t.get_text() for t in drawn.texts} | {
        t.get_text() for ax in drawn.axes for t in ax.texts
    }  # a rounding error left of zero is drawn as 0.0
    assert diagram.alt.startswith(
        "Computed diagram: Self-attention on one sentence: d_k = 2, d_v = 3: X (7 × 8) → "
        "Q (7 × 2) K (7 × 2) V (7 × 3) Q Kᵀ / √2 → S (7 × 7) softmax → A (7 × 7) × V = Z (7 × 3)."
    )
    assert "it → cat 0.85" in diagram.alt and "because → cat 0.85" in diagram.alt
    assert diagram.figure.get_size_inches()[0] <= plotting.COLUMN_WIDTH


def test_ch4_one_query_steps_draws_the_six_steps_of_the_attention_function():
    from selfattn_lib.attention import scaled_dot_product_attention
    from selfattn_lib.plotting.diagrams import read_back
    from selfattn_lib.softmax import softmax

    tokens, x, w_q, w_k, w_v = ch4_running_head()
    it = tokens.index("it")
    q, k, v = x[it] @ w_q, x @ w_k, x @ w_v
    scores = k @ q
    step_weights = softmax(scores / np.sqrt(2))
    diagram = plotting.one_query_steps(
        tokens, "it", q, k, v, scores, scores / np.sqrt(2), step_weights,
        step_weights[:, None] * v, step_weights @ v, **CH4_NAMES,
    )  # fmt: skip
    expected_output, expected_weights = scaled_dot_product_attention(x @ w_q, k, v)
    drawn = diagram.figure
    np.testing.assert_allclose(read_back(drawn, "a")[:, 0], expected_weights[it], atol=0.005)
    np.testing.assert_allclose(read_back(drawn, "z")[0], expected_output[it], atol=0.005)
    np.testing.assert_allclose(
        read_back(drawn, "aⱼvⱼ").sum(axis=0), expected_output[it], atol=0.03
    )  # step 6 adds up step 5's rows
    np.testing.assert_allclose(
        read_back(drawn, "s′")[:, 0], read_back(drawn, "s")[:, 0] / np.sqrt(2), atol=0.01
    )
    assert read_back(drawn, "q").tolist() == [[4.8, -4.8]]
    assert diagram.alt.startswith(
        "Computed diagram: One query, six steps: the query of “it”: q (1 × 2) · K (7 × 2) = "
        "s (7 × 1) ÷√2 s′ (7 × 1) softmax a (7 × 1) × V (7 × 3) = aⱼvⱼ (7 × 3) sum → z (1 × 3)."
    )
    assert diagram.figure.get_size_inches()[0] <= plotting.COLUMN_WIDTH


def test_ch4_diagrams_refuse_arrays_of_the_wrong_shape():
    tokens, x, w_q, w_k, w_v = ch4_running_head()
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    weights = np.full((7, 7), 1 / 7)
    with pytest.raises(ValueError, match=r"k must have shape \(7, 2\), got \(7, 3\)"):
        plotting.attention_flow(
            tokens, x, q, v, v, weights, weights, weights @ v, features="abcdefgh", **CH4_NAMES
        )
    with pytest.raises(ValueError, match="tokens must have 7 labels, got 6"):
        plotting.attention_flow(
            tokens[:6], x, q, k, v, weights, weights, weights @ v, features="abcdefgh",
            **CH4_NAMES,
        )  # fmt: skip
    with pytest.raises(ValueError, match=r"weights must have shape \(7\), got \(7, 7\)"):
        plotting.one_query_steps(
            tokens, "it", q[4], k, v, weights[0], weights[0], weights, weights[0] @ v,
            weights[0] @ v, **CH4_NAMES,
        )  # fmt: skip


def test_ch4_query_scale_panels_draw_one_heatmap_per_scale_with_one_colour_bar():
    from selfattn_lib.attention import scaled_dot_product_attention

    tokens, x, w_q, w_k, _ = ch4_running_head()
    fig = plotting.query_scale_panels(x, w_q, w_k, tokens, [0.0, 0.5, 2.0])
    panels, bar = fig.axes[:3], fig.axes[3]
    assert len(fig.axes) == 4 and bar.get_ylabel() == "attention weight"
    assert [ax.get_title() for ax in panels] == ["s = 0.0", "s = 0.5", "s = 2.0"]
    assert [ax.get_ylabel() for ax in panels] == ["query", "", ""]  # one axis title a row
    assert {ax.get_xlabel() for ax in panels} == {"key"}
    for ax, scale in zip(panels, [0.0, 0.5, 2.0], strict=True):
        _, expected = scaled_dot_product_attention(x @ (scale * w_q), x @ w_k, x @ w_k)
        np.testing.assert_allclose(ax.images[0].get_array(), expected, rtol=1e-12)
        assert ax.images[0].get_clim() == (0.0, 1.0) and not ax.texts
        assert [t.get_text() for t in ax.get_xticklabels()] == tokens
    phone = plotting.query_scale_panels(x, w_q, w_k, tokens, [0.0, 0.5, 2.0], layout="phone")
    assert phone.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
    stacked = phone.axes[:3]
    assert {ax.get_subplotspec().get_gridspec().ncols for ax in stacked} == {
        1
    }  # one above the other
    assert [ax.get_ylabel() for ax in stacked] == ["query"] * 3
    with pytest.raises(ValueError, match="query_scales is empty"):
        plotting.query_scale_panels(x, w_q, w_k, tokens, [])


def test_ch4_attention_flow_breaks_its_title_on_a_phone():
    tokens, x, w_q, w_k, w_v = ch4_running_head()
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    weights = np.full((7, 7), 1 / 7)
    args = (tokens, x, q, k, v, weights, weights, weights @ v)
    names = {"features": "abcdefgh", **CH4_NAMES}
    phone = plotting.attention_flow(*args, **names, layout="phone")
    assert phone.figure.texts[0].get_text() == ("Self-attention on one sentence:\nd_k = 2, d_v = 3")
    assert phone.figure.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
    laptop = plotting.attention_flow(*args, **names)
    assert laptop.figure.texts[0].get_text() == ("Self-attention on one sentence: d_k = 2, d_v = 3")


def test_ch4_weights_and_contributions_draw_both_bar_pairs_per_key():
    weights_a = np.array([0.1, 0.45, 0.15, 0.2, 0.1])
    weights_b = np.array([0.3, 0.05, 0.3, 0.25, 0.1])
    contributions = np.array([0.2, 0.01, 0.3, 0.4, 0.1])
    fig = plotting.weights_and_contributions(weights_a, weights_b, contributions)
    same, small = fig.axes
    assert same.get_title() == "Two weight rows, exactly the same output"
    assert small.get_title() == "A large weight on a small value adds little"
    heights = [patch.get_height() for patch in same.patches]
    assert heights == weights_a.tolist() + weights_b.tolist()
    assert [patch.get_height() for patch in small.patches][5:] == contributions.tolist()
    labels = [text.get_text() for text in small.get_legend().get_texts()]
    assert labels == ["weight $a_j$", r"contribution $\|a_j \mathbf{v}_j\|$"]
    assert [t.get_text() for t in same.get_xticklabels()] == [f"key {j}" for j in range(5)]
    assert {ax.get_ylabel() for ax in fig.axes} == {"weight or contribution"}
    phone = plotting.weights_and_contributions(weights_a, weights_b, contributions, layout="phone")
    assert phone.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
    assert phone.axes[0].get_title() == "Two weight rows, exactly the\nsame output"
    phone.draw_without_rendering()
    for ax in phone.axes:  # under the axes: the legend covers no bar
        assert ax.get_legend().get_window_extent().y1 < ax.get_window_extent().y0
    with pytest.raises(ValueError, match="one value per key"):
        plotting.weights_and_contributions(weights_a, weights_b[:4], contributions)
