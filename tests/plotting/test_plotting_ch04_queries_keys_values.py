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
    with pytest.raises(ValueError, match=r"must both be \(D, d_k\) with D = 4"):
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
