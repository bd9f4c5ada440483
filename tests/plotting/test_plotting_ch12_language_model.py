"""Tests of selfattn_lib.plotting.ch12_language_model: the figures of chapter 12."""

import numpy as np
import pytest

from selfattn_lib import plotting
from selfattn_lib.plotting.diagrams import read_back


def test_ch12_gpt_diagram_draws_the_model_s_modules_with_their_recorded_shapes():
    import torch

    from selfattn_lib.language_model import GPT, GPTConfig
    from selfattn_lib.plotting.architecture import read_blocks

    config = GPTConfig(vocab_size=13, context_length=9, d_model=8, n_heads=2, d_ff=16, n_layers=3)
    tokens = torch.ones(2, 7, dtype=torch.long)
    shapes = plotting.record_shapes(GPT(config).eval(), tokens)
    diagram = plotting.gpt_diagram(shapes, title="t")
    blocks = read_blocks(diagram.figure)
    assert blocks["tokens"] == ("tokens", "2 × 7")
    assert blocks["embeddings"] == ("token_embedding + position_embedding", "2 × 7 × 8")
    assert blocks["self_attention"] == ("self_attention (causal mask)", "2 × 7 × 8")
    assert blocks["feed_forward"] == ("feed_forward", "2 × 7 × 8")
    assert blocks["output"] == ("output = token_embeddingᵀ (tied)", "2 × 7 × 13")
    assert "repeated 3 times" in diagram.alt  # the model's number of layers
    assert "around norm_1 into add" in diagram.alt  # the pre-norm residual path
    assert diagram.figure.get_size_inches()[0] <= plotting.COLUMN_WIDTH


def test_ch12_next_token_flow_draws_the_shift_and_the_bits_paid():
    probabilities = [0.5, 0.25, 0.125]
    diagram = plotting.next_token_flow(list("the"), list("he "), probabilities)
    assert read_back(diagram.figure, "input").tolist() == [["t", "h", "e"]]
    assert read_back(diagram.figure, "target").tolist() == [["h", "e", "␣"]]
    assert read_back(diagram.figure, "p(target)").tolist() == [[0.5, 0.25, 0.12]]
    assert read_back(diagram.figure, "−log₂ p").tolist() == [[1.0, 2.0, 3.0]]
    assert "mean: 2.00 bits" in [t.get_text() for t in diagram.figure.texts]


@pytest.mark.parametrize(
    ("inputs", "targets", "probabilities", "message"),
    [
        ("ab", "b", [0.5], "one entry per position"),
        ("ab", "bc", [0.5], "one entry per position"),
        ("ab", "bc", [0.5, 0.0], r"in \(0, 1\]"),
        ("ab", "bc", [0.5, 1.5], r"in \(0, 1\]"),
    ],
)
def test_ch12_next_token_flow_rejects_bad_input(inputs, targets, probabilities, message):
    with pytest.raises(ValueError, match=message):
        plotting.next_token_flow(inputs, targets, probabilities)


def test_ch12_sampling_flow_draws_logits_probabilities_then_what_top_k_and_top_p_keep():
    from selfattn_lib import sampling

    logits = np.array([2.0, 1.0, 0.5, -1.0])
    probabilities = sampling.temperature_probabilities(logits, 0.8)
    top_k_kept = sampling.top_k_filter(probabilities, 3)
    kept = sampling.top_p_filter(top_k_kept, 0.9)
    diagram = plotting.sampling_flow(
        list("ab c"), logits, probabilities, top_k_kept, kept, temperature=0.8, top_k=3,
        top_p=0.9,
    )  # fmt: skip
    assert read_back(diagram.figure, "logits").tolist() == [[2.0, 1.0, 0.5, -1.0]]
    np.testing.assert_allclose(read_back(diagram.figure, "p")[0], probabilities, atol=0.005)
    np.testing.assert_allclose(read_back(diagram.figure, "top-k")[0], top_k_kept, atol=0.005)
    np.testing.assert_allclose(read_back(diagram.figure, "kept")[0], kept, atol=0.005)
    assert "temperature 0.8, top-k 3, top-p 0.9" in diagram.alt
    with pytest.raises(ValueError, match="one value per candidate"):
        plotting.sampling_flow(
            "ab", [1.0], [1.0], [1.0], [1.0], temperature=1.0, top_k=1, top_p=1.0
        )


def test_ch12_next_character_bars_draws_both_distributions_side_by_side():
    fig = plotting.next_character_bars(list("a b"), [0.5, 0.3, 0.2], [0.625, 0.375, 0.0])
    heights = [bar.get_height() for bar in fig.axes[0].patches]
    assert heights == pytest.approx([0.5, 0.3, 0.2, 0.625, 0.375, 0.0])
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels == ["a", "␣", "b"]
    assert fig.axes[0].get_ylabel() == "probability"
    with pytest.raises(ValueError, match="one value per candidate"):
        plotting.next_character_bars("ab", [1.0], [1.0, 0.0])


def test_ch12_merges_and_length_draws_the_share_of_the_character_length():
    fig = plotting.merges_and_length([0, 10, 20], [200, 150, 120], 200)
    np.testing.assert_allclose(fig.axes[0].lines[0].get_ydata(), [1.0, 0.75, 0.6])
    assert fig.axes[0].get_ylabel() == "tokens per character"
    with pytest.raises(ValueError, match="same length"):
        plotting.merges_and_length([0, 10], [200], 200)


def test_ch12_decoding_cost_draws_counted_flops_and_measured_times():
    flops = {"without cache": [10e6, 20e6], "with cache": [1e6, 1e6]}
    seconds = {"without cache": [2e-3, 4e-3], "with cache": [1e-3, 1e-3]}
    fig = plotting.decoding_cost([1, 2], seconds, flops)
    counted, measured = fig.axes
    np.testing.assert_allclose(counted.lines[0].get_ydata(), [10.0, 20.0])  # MFLOPs
    np.testing.assert_allclose(measured.lines[1].get_ydata(), [1.0, 1.0])  # ms
    assert counted.get_title() == "counted" and measured.get_title() == "measured here"
    assert fig.get_size_inches()[0] <= plotting.COLUMN_WIDTH
    with pytest.raises(ValueError, match="same keys"):
        plotting.decoding_cost([1], {"a": [1.0]}, {"b": [1]})


def test_ch12_training_bits_draws_the_loss_in_bits_the_baseline_and_the_schedule():
    bits = [6.0, 5.0, 4.0, 3.0]
    fig = plotting.training_bits(bits, [0.1, 0.2, 0.15, 0.1], baseline=3.5, window=2)
    loss, rate = fig.axes
    assert loss.get_title() == "Training loss" and rate.get_title() == "Learning-rate schedule"
    assert loss.get_ylabel() == "bits per character" and loss.get_yscale() == "linear"
    assert loss.lines[0].get_ydata().tolist() == bits
    assert loss.lines[1].get_ydata().tolist() == [5.5, 4.5, 3.5]  # the mean of 2 steps
    assert list(loss.lines[2].get_ydata()) == [3.5, 3.5]  # the bigram's dotted line
    legend = [text.get_text() for text in loss.get_legend().get_texts()]
    assert legend[-1] == "bigram"
    assert rate.lines[0].get_ydata().tolist() == [0.1, 0.2, 0.15, 0.1]
    assert fig.get_size_inches().tolist() == [plotting.COLUMN_WIDTH, 1.9]  # side by side
    phone = plotting.training_bits(bits, [0.1, 0.2, 0.15, 0.1], baseline=3.5, layout="phone")
    assert phone.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
    assert phone.get_size_inches()[1] == pytest.approx(3.8)  # stacked


def test_ch12_sampling_settings_draws_a_panel_per_setting_with_one_legend():
    probabilities = [[0.7, 0.3], [0.5, 0.5], [0.6, 0.4], [0.9, 0.1]]
    kept = [[1.0, 0.0], [0.5, 0.5], [0.6, 0.4], [1.0, 0.0]]
    titles = ["τ = 0.5", "τ = 1", "τ = 1.5", "top-p 0.6"]
    fig = plotting.sampling_settings(list("a "), probabilities, kept, titles)
    assert [ax.get_title() for ax in fig.axes] == titles
    heights = [bar.get_height() for bar in fig.axes[3].patches]
    assert heights == pytest.approx([0.9, 0.1, 1.0, 0.0])
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["a", "␣"]
    assert fig.axes[0].get_legend() is not None
    assert all(ax.get_legend() is None for ax in fig.axes[1:])
    assert [ax.get_xlabel() for ax in fig.axes] == ["", "", "next character", "next character"]
    assert fig.get_size_inches().tolist() == [5.4, 3.2]
    phone = plotting.sampling_settings(list("a "), probabilities, kept, titles, layout="phone")
    assert phone.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
    assert [ax.get_xlabel() for ax in phone.axes][-2:] == ["", "next character"]  # 1 a row
    with pytest.raises(ValueError, match="one entry per setting"):
        plotting.sampling_settings("ab", probabilities, kept[:2], titles)


@pytest.mark.parametrize(
    "draw",
    [
        lambda **kw: plotting.merges_and_length([0, 10], [100, 80], 100, **kw),
        lambda **kw: plotting.decoding_cost([1, 2], {"a": [1e-3, 2e-3]}, {"a": [1, 2]}, **kw),
        lambda **kw: plotting.sampling_flow(
            "ab",
            [1.0, 0.0],
            [0.7, 0.3],
            [0.7, 0.3],
            [1.0, 0.0],
            temperature=1.0,
            top_k=2,
            top_p=0.5,
            **kw,
        ),
        lambda **kw: plotting.next_token_flow("ab", "bc", [0.5, 0.25], **kw),
    ],
)
def test_ch12_figures_are_drawn_as_wide_as_a_phone_s_column_for_a_phone(draw):
    figure = draw(layout="phone")
    figure = getattr(figure, "figure", figure)
    assert figure.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
    laptop = draw()
    laptop = getattr(laptop, "figure", laptop)
    assert hasattr(laptop, "course_phone")  # it carries its phone rendering
