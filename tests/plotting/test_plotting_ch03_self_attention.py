"""Tests of selfattn_lib.plotting.ch03_self_attention: the figures of chapter 3."""

import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.text import Text

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


# --- computed figures of the rewritten chapter: the drawn numbers are the concept functions'


def ch3_running_example():
    from selfattn_lib import embeddings

    tokens = embeddings.tokenize(embeddings.RUNNING_EXAMPLE)
    return tokens, embeddings.embed(tokens)


def ch3_texts_by_gid(figure, prefix):
    return {
        text.get_gid(): text.get_text()
        for text in figure.findobj(Text)
        if (text.get_gid() or "").startswith(prefix)
    }


def test_ch3_weighted_average_2d_draws_the_weights_and_output_of_self_attention():
    from selfattn_lib import embeddings
    from selfattn_lib.attention import simple_self_attention

    tokens, x = ch3_running_example()
    two = [embeddings.FEATURES.index("animal"), embeddings.FEATURES.index("grammar")]
    it = tokens.index("it")
    output, weights = simple_self_attention(x)
    fig = plotting.weighted_average_2d(
        x[:, two], weights[it], output[it, two], tokens, "it", features=("animal", "grammar")
    )
    # Computed again, independently of the arrays handed to the drawing.
    again_output, again_weights = simple_self_attention(
        embeddings.embed("the cat sat because it was tired")
    )
    drawn = ch3_texts_by_gid(fig, "w[")
    assert set(drawn) == {f"w[it,{token}]" for token in tokens}
    for j, token in enumerate(tokens):
        assert abs(float(drawn[f"w[it,{token}]"]) - again_weights[it, j]) <= 0.005
    (arrow,) = [a for a in fig.findobj() if a.get_gid() == "z[it]"]
    np.testing.assert_allclose(arrow.xy, again_output[it, two], atol=1e-12)
    assert fig.get_size_inches()[0] <= plotting.COLUMN_WIDTH
    assert min(text.get_fontsize() for text in fig.findobj(Text) if text.get_text()) >= 8


def test_ch3_weighted_average_2d_refuses_arrays_that_do_not_belong_together():
    x = np.array([[1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(ValueError, match="not the weighted average"):
        plotting.weighted_average_2d(x, [0.5, 0.5], [0.9, 0.1], ["a", "b"], "a")
    with pytest.raises(ValueError, match="distinct"):
        plotting.weighted_average_2d(x, [0.5, 0.5], [0.5, 0.5], ["a", "a"], "a")
    with pytest.raises(ValueError, match="query 'c' is not one of the tokens"):
        plotting.weighted_average_2d(x, [0.5, 0.5], [0.5, 0.5], ["a", "b"], "c")
    with pytest.raises(ValueError, match=r"weights must have shape \(2,\)"):
        plotting.weighted_average_2d(x, [1.0], [1.0, 0.0], ["a", "b"], "a")
    with pytest.raises(ValueError, match=r"x_2d must have shape \(2, 2\)"):
        plotting.weighted_average_2d(np.ones((2, 3)), [0.5, 0.5], [1, 1], ["a", "b"], "a")


def test_ch3_weighted_average_flow_draws_a_times_x_equals_z_of_the_running_example():
    from selfattn_lib import embeddings
    from selfattn_lib.attention import simple_self_attention
    from selfattn_lib.plotting.diagrams import read_back

    tokens, x = ch3_running_example()
    output, weights = simple_self_attention(x)
    diagram = plotting.weighted_average_flow(tokens, weights, x, output, embeddings.FEATURES)
    again_output, again_weights = simple_self_attention(
        embeddings.embed("the cat sat because it was tired")
    )
    np.testing.assert_allclose(read_back(diagram.figure, "A"), again_weights, atol=0.005)
    np.testing.assert_allclose(read_back(diagram.figure, "X"), embeddings.embed(tokens), atol=0.005)
    np.testing.assert_allclose(read_back(diagram.figure, "Z"), again_output, atol=0.005)
    assert diagram.alt.startswith("Computed diagram: A (7 × 7) × X (7 × 8) = Z (7 × 8).")
    assert "cat → cat 0.40" in diagram.alt and "sat → cat 0.19" in diagram.alt
    assert diagram.figure.get_size_inches()[0] <= plotting.COLUMN_WIDTH


def test_ch3_weighted_average_flow_names_the_array_of_the_wrong_shape():
    with pytest.raises(ValueError, match=r"output must have shape \(2, 1\) for 2 tokens"):
        plotting.weighted_average_flow(
            ["a", "b"], np.eye(2), np.ones((2, 1)), np.ones((2, 2)), ["f"]
        )


def test_ch3_kernel_regression_fit_draws_the_fitted_curves_and_one_querys_weights():
    from selfattn_lib.kernel_regression import kernel_regression, kernel_weights

    keys = np.array([0.0, 1.0, 2.5, 4.0])
    values = np.array([1.0, 3.0, 2.0, 0.5])
    queries = np.linspace(0.0, 4.0, 9)
    widths = (0.2, 1.0)
    fits = {width: kernel_regression(queries, keys, values, width)[0] for width in widths}
    weights = {width: kernel_regression([2.0], keys, values, width)[1][0] for width in widths}
    fig = plotting.kernel_regression_fit(keys, values, queries, fits, weights, query=2.0)
    lines = {line.get_gid(): line for ax in fig.axes for line in ax.get_lines() if line.get_gid()}
    assert set(lines) == {"fit[0.2]", "fit[1]", "weights[0.2]", "weights[1]"}
    for width, name in ((0.2, "0.2"), (1.0, "1")):
        # Computed again with the textbook formula, independently of the arrays drawn.
        kernel = np.exp(-((queries[:, None] - keys[None, :]) ** 2) / (2 * width**2))
        np.testing.assert_allclose(
            lines[f"fit[{name}]"].get_ydata(), kernel @ values / kernel.sum(-1)
        )
        np.testing.assert_allclose(
            lines[f"weights[{name}]"].get_ydata(), kernel_weights([2.0], keys, width)[0]
        )
    assert fig.get_size_inches()[0] <= plotting.COLUMN_WIDTH
    with pytest.raises(ValueError, match="same, non-empty, widths"):
        plotting.kernel_regression_fit(keys, values, queries, fits, {0.2: weights[0.2]}, 2.0)
    with pytest.raises(ValueError, match=r"width 0.2: predictions must have shape \(9,\)"):
        plotting.kernel_regression_fit(
            keys, values, queries, {0.2: fits[0.2][:3]}, {0.2: weights[0.2]}, 2.0
        )


def test_ch3_attention_maps_by_length_show_the_maps_of_the_scaled_vectors_on_one_scale():
    from selfattn_lib.attention import simple_self_attention

    tokens, x = ch3_running_example()
    maps = {factor: simple_self_attention(factor * x)[1] for factor in (1.0, 4.0)}
    fig = plotting.attention_maps_by_length(maps, tokens)
    panels = [ax for ax in fig.axes if ax.get_images()]
    assert [ax.get_title() for ax in panels] == ["vectors × 1", "vectors × 4"]
    for ax, factor in zip(panels, (1.0, 4.0), strict=True):
        expected = simple_self_attention(factor * ch3_embed_again(tokens))[1]
        np.testing.assert_allclose(ax.get_images()[0].get_array(), expected)
        assert ax.get_images()[0].get_clim() == (0.0, 1.0)
    assert len(fig.axes) == 3  # two panels and one shared colour bar
    with pytest.raises(ValueError, match="maps is empty"):
        plotting.attention_maps_by_length({}, tokens)


def ch3_embed_again(tokens):
    from selfattn_lib import embeddings

    return embeddings.embed(" ".join(tokens))


# --- Drawn for a phone ----------------------------------------------------------------------


def _words(figure):
    """The words of every text drawn in a figure (titles, labels, ticks), not its numbers."""
    figure.canvas.draw()
    texts = [text.get_text() for text in figure.findobj(Text)]
    return {word for text in texts for word in text.split() if word[0].isalpha()}


def _running_example():
    from selfattn_lib import embeddings
    from selfattn_lib.attention import simple_self_attention

    tokens = embeddings.tokenize(embeddings.RUNNING_EXAMPLE)
    x = embeddings.embed(tokens)
    outputs, weights = simple_self_attention(x)
    return tokens, x, outputs, weights, embeddings.FEATURES


def test_ch3_attention_map_labels_queries_and_keys_and_fits_a_phone():
    tokens, _, _, weights, _ = _running_example()
    title = "softmax(X Xᵀ) for the running example"
    laptop = plotting.attention_map(weights, tokens, title=title)
    ax, colour_bar = laptop.axes
    np.testing.assert_allclose(ax.images[0].get_array(), weights)
    assert ax.get_title() == title
    assert (ax.get_xlabel(), ax.get_ylabel()) == (
        "key token (attended to)",
        "query token (attending)",
    )
    assert colour_bar.get_ylabel() == "attention weight"
    assert [label.get_text() for label in ax.get_yticklabels()] == tokens
    assert len(ax.texts) == len(tokens) ** 2, "every weight written"
    assert laptop.get_size_inches().tolist() == [5.6, 4.2]
    phone = plotting.attention_map(weights, tokens, title=title, layout="phone")
    assert phone.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
    ax, colour_bar = phone.axes
    assert ax.get_title() == "softmax(X Xᵀ) for the\nrunning example"
    assert colour_bar.get_xlabel() == "attention weight", "a colour bar under the map"
    assert plotting.PHONE_MIME in laptop._repr_mimebundle_()
    assert _words(laptop) <= _words(phone)


def test_ch3_figures_stack_their_panels_on_a_phone_and_keep_every_word():
    tokens, x, outputs, weights, features = _running_example()
    it, pair = tokens.index("it"), [features.index("animal"), features.index("grammar")]
    keys = np.linspace(0.0, 5.0, 6)
    queries = np.linspace(0.0, 5.0, 11)
    fits = {0.5: np.sin(queries), 2.0: np.cos(queries)}
    query_weights = {0.5: np.full(6, 1 / 6), 2.0: np.full(6, 1 / 6)}
    draws = [
        lambda **layout: plotting.weighted_average_2d(
            x[:, pair], weights[it], outputs[it][pair], tokens, "it",
            features=("animal", "grammar"), **layout,
        ),
        lambda **layout: plotting.kernel_regression_fit(
            keys, np.sin(keys), queries, fits, query_weights, 2.5, **layout
        ),
        lambda **layout: plotting.attention_maps_by_length(
            {1.0: weights, 4.0: weights}, tokens, **layout
        ),
    ]  # fmt: skip
    for draw in draws:
        laptop, phone = draw(), draw(layout="phone")
        assert phone.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
        assert plotting.PHONE_MIME in laptop._repr_mimebundle_()
        assert _words(laptop) <= _words(phone)
        tops = {round(ax.get_position().y1, 2) for ax in phone.axes if ax.get_visible()}
        assert len(tops) >= 2, "panels stacked"
    fit = draws[1](layout="phone").axes[0]
    legend = fit.get_legend()
    legend.figure.canvas.draw()
    assert legend.get_window_extent().y1 < fit.get_window_extent().y0, "legend under the fit"


def test_ch3_weighted_average_flow_draws_on_a_phone():
    from selfattn_lib.plotting.diagrams import read_back

    tokens, x, outputs, weights, features = _running_example()
    phone = plotting.weighted_average_flow(tokens, weights, x, outputs, features, layout="phone")
    # Eight two-decimal outputs and their token labels need a little more than 3.8 in.
    assert phone.figure.get_size_inches()[0] == 3.95
    np.testing.assert_allclose(read_back(phone.figure, "Z"), outputs.round(2))
