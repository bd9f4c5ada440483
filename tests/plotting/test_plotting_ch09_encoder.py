"""Tests of selfattn_lib.plotting.ch09_encoder: the figures of chapter 9."""

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

from selfattn_lib import plotting
from selfattn_lib.layers import EncoderLayer
from selfattn_lib.plotting.architecture import read_blocks


def test_ch9_encoder_layer_diagram_draws_the_layer_s_modules_with_their_recorded_shapes():
    x = torch.zeros(2, 5, 8)
    post, pre = (EncoderLayer(8, 2, 16, norm_first=first).eval() for first in (False, True))
    diagram = plotting.encoder_layer_diagram(
        plotting.record_shapes(post, x), plotting.record_shapes(pre, x)
    )
    blocks = read_blocks(diagram.figure)
    assert [blocks[key][0] for key in blocks if key.startswith("post_")] == [
        "x", "self_attention", "add & norm_1", "feed_forward", "add & norm_2",
        "to the next layer",
    ]  # fmt: skip
    assert [blocks[key][0] for key in blocks if key.startswith("pre_")] == [
        "x", "norm_1", "self_attention", "add", "norm_2", "feed_forward", "add",
        "next layer (a norm after the last)",
    ]  # fmt: skip
    # Every module of the layer keeps the shape of its input, as a run of it says.
    assert {shape for _, shape in blocks.values() if shape} == {"2 × 5 × 8"}
    assert diagram.alt.startswith("Computed diagram")
    assert "around self_attention into add & norm_1" in diagram.alt
    assert "around norm_1 into add" in diagram.alt  # pre-norm: the norm is inside the branch
    assert diagram.figure.get_size_inches()[0] == pytest.approx(plotting.COLUMN_WIDTH)
    alone = plotting.encoder_layer_diagram(plotting.record_shapes(post, x))
    assert alone.figure.get_size_inches()[0] == pytest.approx(plotting.COLUMN_WIDTH / 2)


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
    assert layer_ax.get_title() == "layer norm:\none token, all its features"  # two lines
    assert fig.get_size_inches()[0] == plotting.COLUMN_WIDTH  # fits the book's column


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


# --- Drawn for a phone ----------------------------------------------------------------------


def ch9_words(fig):
    """The words of a figure's texts, titles, labels and legends (not its numbers)."""
    from matplotlib.text import Text

    lines = [text.get_text() for text in fig.findobj(Text) if text.get_visible()]
    return {word for line in lines for word in line.split() if word[0].isalpha()}


def test_ch9_encoder_layer_diagram_for_a_phone_keeps_both_columns_and_every_label():
    x = torch.zeros(2, 4, 8)
    post, pre = (EncoderLayer(8, 2, 16, norm_first=first).eval() for first in (False, True))
    shapes = [plotting.record_shapes(layer, x) for layer in (post, pre)]
    laptop = plotting.encoder_layer_diagram(*shapes)
    phone = plotting.encoder_layer_diagram(*shapes, layout="phone")
    assert phone.figure.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
    assert phone.alt == laptop.alt  # the same blocks, shapes and paths
    assert ch9_words(laptop.figure) <= ch9_words(phone.figure)
    on_phone, on_laptop = read_blocks(phone.figure), read_blocks(laptop.figure)
    assert on_phone.keys() == on_laptop.keys()
    assert on_phone["pre_out"] == ("next layer\n(a norm after the last)", "")
    assert on_phone["post_norm_1"] == on_laptop["post_norm_1"] == ("add & norm_1", "2 × 4 × 8")
    # The label above each layer stands above its last block, in its own column.
    texts = {t.get_gid(): t.get_position() for t in phone.figure.axes[0].texts if t.get_gid()}
    assert texts["block:pre_out"][1] > texts["block:pre_add_2"][1]
    assert texts["block:post_out"][0] == texts["block:post_norm_2"][0]
    # One column alone already fits a phone: it is drawn as on a laptop.
    alone = plotting.encoder_layer_diagram(shapes[0], layout="phone")
    assert alone.figure.get_size_inches()[0] == pytest.approx(plotting.COLUMN_WIDTH / 2)


def test_ch9_depth_curves_and_normalization_axes_for_a_phone():
    curves = {"attention + feed-forward, with residuals": [1.0, 0.5], "plain": [1.0, 1e-9]}
    kwargs = {"title": "How far the tokens stay apart in a stack of random attention"}
    laptop = plotting.depth_curves([0, 1], curves, **kwargs)
    phone = plotting.depth_curves([0, 1], curves, **kwargs, layout="phone")
    assert phone.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
    assert ch9_words(laptop) <= ch9_words(phone)
    assert "\n" in phone.axes[0].get_title()
    assert phone.axes[0].get_legend() is None and len(phone.legends) == 1  # under the axes
    labels = ["a", "b", "<pad>"]
    laptop = plotting.normalization_axes(labels, 4, token=1, feature=2)
    phone = plotting.normalization_axes(labels, 4, token=1, feature=2, layout="phone")
    assert phone.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
    assert ch9_words(laptop) <= ch9_words(phone)
    top, bottom = phone.axes
    assert top.get_position().y0 > bottom.get_position().y1  # one above the other


def test_ch9_gradients_and_stream_draws_both_measures_with_one_legend():
    runs = {
        "post-norm": ([0.5, 0.7, 0.6], [1.0, 1.0, 1.0]),
        "pre-norm": ([0.4, 0.2, 0.1], [1, 2, 3]),
    }
    fig = plotting.gradients_and_stream(runs)
    gradients, stream = fig.axes
    assert [ax.get_ylabel() for ax in fig.axes] == ["gradient norm", "RMS of the stream after it"]
    assert [ax.get_xlabel() for ax in fig.axes] == ["layer", "layer"]
    assert [t.get_text() for t in gradients.get_legend().get_texts()] == ["post-norm", "pre-norm"]
    assert stream.get_legend() is None
    assert list(gradients.get_lines()[1].get_xdata()) == [1, 2, 3]  # layers from 1
    assert list(stream.get_lines()[1].get_ydata()) == [1, 2, 3]
    assert stream.get_position().x0 > gradients.get_position().x1  # side by side on a laptop
    assert fig.get_size_inches()[0] == pytest.approx(plotting.COLUMN_WIDTH)
    phone = plotting.gradients_and_stream(runs, layout="phone")
    assert phone.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
    assert phone.axes[0].get_position().y0 > phone.axes[1].get_position().y1
    assert ch9_words(fig) <= ch9_words(phone)
    with pytest.raises(ValueError, match="at least one wiring"):
        plotting.gradients_and_stream({})
