"""Tests of selfattn_lib.plotting.ch10_decoder: the figures of chapter 10."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from selfattn_lib import plotting


def test_ch10_visible_characters_shows_spaces():
    assert plotting.visible_characters(list("1 May")) == ["1", "␣", "M", "a", "y"]
    assert plotting.visible_characters(["<bos>", "-"]) == ["<bos>", "-"]
    assert plotting.visible_characters(["a", "\n"]) == ["a", "⏎"]  # a newline too


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
    assert fig.get_size_inches()[0] <= plotting.COLUMN_WIDTH  # both panels fit the column
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
    # Two maps per row across the column; the rows are labelled in the first column only.
    assert fig.get_size_inches()[0] <= plotting.COLUMN_WIDTH
    assert [bool(ax.get_ylabel()) for ax in panels] == [True, False, True, False]
    assert min(t.get_fontsize() for t in panels[0].get_xticklabels()) >= 8


def test_ch10_cross_attention_maps_without_colorbar_share_one():
    fig = Figure()
    axes = fig.subplots(1, 2)
    for ax, n_source in zip(axes, (3, 5), strict=True):
        plotting.cross_attention_maps(
            np.full((2, n_source), 1 / n_source),
            list("abcde")[:n_source],
            ["1", "2"],
            colorbar=False,
            axes=[ax],
        )
    assert len(fig.axes) == 2  # no colour bar yet
    plotting.shared_colorbar(list(axes), "cross-attention weight")
    assert len(fig.axes) == 3 and fig.axes[2].get_ylabel() == "cross-attention weight"


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


def test_ch10_transformer_diagram_draws_the_model_s_modules_with_their_recorded_shapes():
    import torch

    from selfattn_lib.plotting.architecture import read_blocks
    from selfattn_lib.transformer import Transformer, TransformerConfig

    config = TransformerConfig(11, 13, d_model=8, n_heads=2, d_ff=16, n_layers=3)
    src, tgt = torch.ones(2, 7, dtype=torch.long), torch.ones(2, 5, dtype=torch.long)
    shapes = plotting.record_shapes(Transformer(config).eval(), src, tgt)
    diagram = plotting.transformer_diagram(shapes, title="t")
    blocks = read_blocks(diagram.figure)
    assert blocks["tgt_embedding"][1] == "2 × 5 × 8"
    shared = TransformerConfig(11, 11, d_model=8, n_heads=2, d_ff=16, share_embeddings=True)
    shapes = plotting.record_shapes(Transformer(shared).eval(), src, tgt)
    shared_blocks = read_blocks(plotting.transformer_diagram(shapes).figure)
    assert shared_blocks["tgt_embedding"][1] == "2 × 5 × 8"  # one module, called twice
    assert blocks["src"] == ("source tokens", "2 × 7")
    assert blocks["enc_ff"] == ("feed_forward", "2 × 7 × 8")
    assert blocks["dec_cross"] == ("cross_attention", "2 × 5 × 8")  # one row per target token
    assert blocks["output"] == ("output (Linear) → softmax", "2 × 5 × 13")  # the target vocabulary
    assert "repeated 3 times" in diagram.alt  # the model's number of layers
    assert "add & norm_2 into cross_attention (memory)" in diagram.alt
    assert diagram.figure.get_size_inches()[0] <= plotting.COLUMN_WIDTH


def test_ch10_decoder_layer_diagram_reads_the_memory_into_cross_attention():
    import torch

    from selfattn_lib.layers import DecoderLayer
    from selfattn_lib.plotting.architecture import read_blocks

    y, memory = torch.zeros(3, 4, 8), torch.zeros(3, 9, 8)
    shapes = plotting.record_shapes(DecoderLayer(8, 2, 16).eval(), y, memory)
    diagram = plotting.decoder_layer_diagram(shapes, tuple(memory.shape))
    blocks = read_blocks(diagram.figure)
    assert blocks["y"] == ("y: the target so far", "3 × 4 × 8")
    assert blocks["memory"] == ("memory (encoder output)", "3 × 9 × 8")
    # Queries come from the target, so cross-attention returns one row per target token.
    assert blocks["dec_cross"] == ("cross_attention", "3 × 4 × 8")
    assert "memory (encoder output) into cross_attention" in diagram.alt
    assert "around cross_attention into add & norm_2" in diagram.alt


def test_ch10_loss_curve_stacks_its_panels_on_a_phone():
    losses, rates = np.linspace(2.0, 0.1, 30), np.linspace(1e-4, 1e-3, 30)
    laptop = plotting.loss_curve(losses, learning_rates=rates, window=5, panel_height=2.1)
    assert laptop.get_size_inches().tolist() == [plotting.COLUMN_WIDTH, 2.1]
    phone = plotting.loss_curve(losses, learning_rates=rates, window=5, layout="phone")
    assert phone.get_size_inches()[0] <= 3.8
    loss_ax, rate_ax = phone.axes
    assert rate_ax.get_position().y1 < loss_ax.get_position().y0  # one above the other
    assert rate_ax.get_title() == "Learning-rate schedule"
    assert plotting.loss_curve(losses).get_size_inches().tolist() == [5.5, 3.8]


def test_ch10_decoder_masks_draws_both_masks_side_by_side_or_stacked():
    read, keys = ["<bos>", "a", "b"], list("xyzw")
    self_mask = np.tril(np.ones((3, 3), dtype=bool))
    cross_mask = np.broadcast_to(np.array([True, True, True, False]), (3, 4))
    fig = plotting.decoder_masks(self_mask, cross_mask, read, keys)
    self_ax, cross_ax = fig.axes
    assert [self_ax.get_title(), cross_ax.get_title()] == ["self-attention: causal", "cross"]
    np.testing.assert_array_equal(self_ax.images[0].get_array(), self_mask * 1.0)
    np.testing.assert_array_equal(cross_ax.images[0].get_array(), cross_mask * 1.0)
    assert [t.get_text() for t in cross_ax.get_xticklabels()] == keys
    assert self_ax.get_ylabel() == "query: the decoder reads" and cross_ax.get_ylabel() == ""
    assert cross_ax.get_xlabel() == "key"
    assert fig.get_suptitle() == "yellow: may attend · dark: may not"
    assert fig.get_size_inches()[0] == plotting.COLUMN_WIDTH
    phone = plotting.decoder_masks(self_mask, cross_mask, read, keys, layout="phone")
    assert phone.get_size_inches()[0] <= 3.8
    top, bottom = phone.axes
    assert bottom.get_position().y1 < top.get_position().y0  # stacked
    assert bottom.get_ylabel() == "query: the decoder reads"
    with pytest.raises(ValueError, match="do not fit"):
        plotting.decoder_masks(self_mask, cross_mask, read, keys[:3])


def test_ch10_cross_attention_heads_labels_once_and_stacks_on_a_phone():
    weights = np.random.default_rng(1).dirichlet(np.ones(4), size=(4, 3))  # (H, T_tgt, T_src)
    title = "Last decoder layer: 'a long source text here' -> 'a long answer written'"
    fig = plotting.cross_attention_heads(weights, list("ab c"), ["x", "y", "<eos>"], title=title)
    panels, colorbar = fig.axes[:5], fig.axes[-1]  # a sixth, hidden, fills the grid
    assert [ax.get_title() for ax in panels][-1] == "mean of the 4 heads"
    assert [bool(ax.get_ylabel()) for ax in panels] == [True, False, True, False, True]
    assert [bool(ax.get_xlabel()) for ax in panels] == [False, False, False, True, True]
    assert fig.get_suptitle() == title and colorbar.get_ylabel() == "cross-attention weight"
    phone = plotting.cross_attention_heads(
        weights, list("ab c"), ["x", "y", "<eos>"], title=title, layout="phone"
    )
    *panels, _ = phone.axes
    assert phone.get_size_inches()[0] <= 3.8
    assert all(ax.get_ylabel() == "written token (query)" for ax in panels)
    assert [bool(ax.get_xlabel()) for ax in panels] == [False] * 4 + [True]
    assert phone.get_suptitle().split() == title.split() and "\n" in phone.get_suptitle()
    with pytest.raises(ValueError, match=r"\(H, T_tgt, T_src\)"):
        plotting.cross_attention_heads(weights[0], list("ab c"), ["x", "y", "<eos>"])


def test_ch10_cross_attention_answers_titles_each_map_with_its_answer():
    sources = ["1 May", "3 Jan"]
    written = [["0", "5", "<eos>"], ["0", "1", "<eos>"]]
    weights = [np.full((3, 5), 0.2), np.eye(3, 5)]
    fig = plotting.cross_attention_answers(sources, written, weights)
    *panels, colorbar = fig.axes
    assert [ax.get_title() for ax in panels] == ["'1 May' -> '05'", "'3 Jan' -> '01'"]
    np.testing.assert_array_equal(panels[1].images[0].get_array(), weights[1])
    assert [t.get_text() for t in panels[0].get_xticklabels()] == ["1", "␣", "M", "a", "y"]
    assert colorbar.get_ylabel() == "cross-attention weight"
    phone = plotting.cross_attention_answers(sources, written, weights, layout="phone")
    assert phone.get_size_inches()[0] <= 3.8
    top, bottom, _ = phone.axes
    assert bottom.get_position().y1 < top.get_position().y0  # stacked
    with pytest.raises(ValueError, match="as many written"):
        plotting.cross_attention_answers(sources, written[:1], weights)
