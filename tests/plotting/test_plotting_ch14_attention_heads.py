"""Tests of selfattn_lib.plotting.ch14_attention_heads: the figures of chapter 14.

The arrays are made here with plain NumPy, as the notebook computes them with
``selfattn_lib.induction``; each test reads back what was drawn (numbers, titles, bars) and
compares it with the input.
"""

import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.text import Text

from selfattn_lib import plotting
from selfattn_lib.plotting.ch13_modern_attention import SMALLEST_FONT
from selfattn_lib.plotting.diagrams import read_back

TOKENS = np.array([0, 49, 41, 39, 0, 49, 41, 39])  # n = 4: a first half and its copy
RULE = np.arange(4, 8) - 4 + 1  # each query attends to the token after its earlier copy
BEFORE = np.arange(8) - 1  # each position reads the one before it (-1: nothing)


def _fits_a_phone(fig: Figure) -> None:
    """Column width at most, no text under 8.5 points, at most two panels in a row."""
    fig.draw_without_rendering()
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    assert fig.get_size_inches()[0] <= plotting.COLUMN_WIDTH
    assert min(t.get_fontsize() for t in texts) >= SMALLEST_FONT
    rows: dict[float, int] = {}
    for ax in fig.axes:
        if ax.get_visible() and ax.images:
            key = round(ax.get_position().y0, 2)
            rows[key] = rows.get(key, 0) + 1
    assert not rows or max(rows.values()) <= 2


# ---------------------------------------------------------------- induction_flow


def test_ch14_induction_flow_draws_the_tokens_the_token_before_and_the_rule():
    diagram = plotting.induction_flow(
        TOKENS, BEFORE, RULE, TOKENS[RULE], example=6, title="the rule"
    )
    fig = diagram.figure
    np.testing.assert_array_equal(read_back(fig, "tokens")[0], TOKENS)
    np.testing.assert_array_equal(read_back(fig, "attends to")[0], RULE)
    np.testing.assert_array_equal(read_back(fig, "predicts")[0], TOKENS[RULE])
    before = [
        t.get_text() for t in fig.findobj(Text) if str(t.get_gid()).startswith("token before")
    ]
    assert before == ["–", "0", "49", "41", "39", "0", "49", "41"]  # the token before each one
    texts = [t.get_text() for t in fig.texts]
    subtitle = "query 6 holds 41; the earlier 41 is at 2, so it attends to 3 and predicts 39"
    assert f"the rule\n{subtitle}" in texts
    assert "tokens (1 × 8)" in diagram.alt and "predicts (1 × 4)" in diagram.alt
    columns = [t.get_text() for ax in fig.axes for t in ax.get_xticklabels() if t.get_text()]
    assert columns[-4:] == ["4", "5", "6", "7"]  # the queries of the repeated half
    assert fig.get_size_inches()[0] <= plotting.COLUMN_WIDTH


def test_ch14_induction_flow_fits_the_longest_halves_in_the_column():
    tokens = np.tile(np.arange(8), 2)
    queries = np.arange(8, 16)
    diagram = plotting.induction_flow(
        tokens, np.arange(16) - 1, queries - 7, tokens[queries - 7], example=15
    )
    assert diagram.figure.get_size_inches()[0] <= plotting.COLUMN_WIDTH
    assert diagram.figure.texts[0].get_text().startswith("query 15 holds 7")


@pytest.mark.parametrize(
    ("tokens", "attends", "predicted", "example", "error", "message"),
    [
        (TOKENS.astype(float), RULE, RULE, 4, TypeError, "tokens must hold whole numbers"),
        (TOKENS[:7], RULE, RULE, 4, ValueError, "a first half and its copy"),
        (np.tile(np.arange(9), 2), RULE, RULE, 9, ValueError, "2 ≤ n ≤ 8"),
        (np.arange(8), RULE, RULE, 4, ValueError, "second half must equal the first"),
        (TOKENS, RULE[:3], RULE, 4, ValueError, r"attends_to must have shape \(4,\)"),
        (TOKENS, RULE, RULE[:3], 4, ValueError, r"predicted must have shape \(4,\)"),
        (TOKENS, RULE + 5, RULE, 4, ValueError, "attention is causal"),
        (TOKENS, RULE, RULE, 3, ValueError, "at least 4"),
        (TOKENS, RULE, RULE, 8, ValueError, "a query of the repeated half"),
    ],
)
def test_ch14_induction_flow_rejects_bad_input(tokens, attends, predicted, example, error, message):
    reads = np.arange(tokens.size) - 1
    with pytest.raises(error, match=message):
        plotting.induction_flow(tokens, reads, attends, predicted, example=example)


def test_ch14_induction_flow_draws_what_a_model_s_head_reads():
    reads = np.array([0, 0, 1, 2, 3, 3, 5, 6])  # position 0 reads itself, 5 reads 3
    diagram = plotting.induction_flow(TOKENS, reads, RULE, TOKENS[RULE], example=4)
    texts = diagram.figure.findobj(Text)
    before = [t.get_text() for t in texts if str(t.get_gid()).startswith("token before")]
    assert before == ["0", "0", "49", "41", "39", "39", "49", "41"]


@pytest.mark.parametrize("reads", [np.arange(8) - 2, np.arange(8) + 1, np.arange(7)])
def test_ch14_induction_flow_rejects_reads_outside_the_past(reads):
    with pytest.raises(ValueError, match="reads must"):
        plotting.induction_flow(TOKENS, reads, RULE, TOKENS[RULE], example=4)


# ---------------------------------------------------------------- phase_change


def test_ch14_phase_change_draws_both_halves_smoothed_the_guess_and_the_step():
    first = np.full(100, 6.0)
    repeated = np.concatenate([np.linspace(6, 4, 50), np.full(50, 0.1)])
    fig = plotting.phase_change(first, repeated, guess_bits=5.98, phase_step=55, smooth=10)
    ax = fig.axes[0]
    mean, raw = ax.get_lines()[2], ax.get_lines()[3]
    np.testing.assert_allclose(mean.get_ydata(), np.convolve(repeated, np.ones(10) / 10, "valid"))
    assert mean.get_xdata()[0] == 10 and mean.get_linestyle() == "--"
    np.testing.assert_array_equal(raw.get_ydata(), repeated)
    assert raw.get_alpha() == 0.3 and mean.get_zorder() > raw.get_zorder()  # means on top
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == [
        "first half", "repeated half", "guessing: 5.98 bits", "phase change: step 55"
    ]  # fmt: skip
    assert ax.get_xlabel() == "training step" and ax.get_ylabel() == "bits per token"
    _fits_a_phone(fig)


def test_ch14_phase_change_without_a_step_draws_no_vertical_line():
    fig = plotting.phase_change(np.full(30, 6.0), np.full(30, 3.0), guess_bits=6.0)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert not any(label.startswith("phase change") for label in labels)


@pytest.mark.parametrize(
    ("first", "repeated", "options", "message"),
    [
        (np.ones(30), np.ones(29), {}, r"repeated_half must have shape \(30,\)"),
        (np.ones(10), np.ones(10), {}, "smooth = 25 is longer than the 10 steps"),
        (np.ones(30), np.ones(30), {"guess_bits": 0.0}, "guess_bits must be a positive"),
        (np.ones(30), np.ones(30), {"phase_step": 31}, "after the last of 30 steps"),
        (np.full(30, np.nan), np.ones(30), {}, "must be finite"),
    ],
)
def test_ch14_phase_change_rejects_bad_input(first, repeated, options, message):
    options = {"guess_bits": 6.0} | options
    with pytest.raises(ValueError, match=message):
        plotting.phase_change(first, repeated, **options)


# ---------------------------------------------------------------- head_maps


def test_ch14_head_maps_names_every_head_with_its_scores_on_one_scale():
    rng = np.random.default_rng(0)
    weights = rng.dirichlet(np.ones(6), size=(2, 2, 6))  # (L, H, T, T), rows sum to 1
    previous = np.array([[0.1, 0.57], [0.03, 0.06]])
    fig = plotting.head_maps(weights, list("abcdef"), scores={"previous": previous})
    panels = fig.axes[:4]
    assert [ax.get_title() for ax in panels] == [
        "layer 1 · head 0\nprevious 0.10",
        "layer 1 · head 1\nprevious 0.57",
        "layer 2 · head 0\nprevious 0.03",
        "layer 2 · head 1\nprevious 0.06",
    ]
    for ax, expected in zip(panels, weights.reshape(4, 6, 6), strict=True):
        np.testing.assert_array_equal(ax.images[0].get_array(), expected)
        assert ax.images[0].get_clim() == (0.0, 1.0) and not ax.texts
    assert [t.get_text() for t in panels[0].get_xticklabels()] == list("abcdef")
    assert fig.axes[-1].get_ylabel() == "weight"  # one shared colour bar
    _fits_a_phone(fig)


def test_ch14_head_maps_writes_two_scores_to_a_line():
    scores = {name: np.full((1, 1), value) for name, value in (("a", 0.1), ("b", 0.2), ("c", 0.3))}
    fig = plotting.head_maps(np.full((1, 1, 2, 2), 0.5), ["x", "y"], scores=scores)
    assert fig.axes[0].get_title() == "layer 1 · head 0\na 0.10 · b 0.20\nc 0.30"


def test_ch14_head_maps_keeps_the_names_of_a_slice_of_heads():
    fig = plotting.head_maps(np.full((1, 1, 2, 2), 0.5), ["a", "b"], first_layer=2, first_head=1)
    assert fig.axes[0].get_title() == "layer 2 · head 1"


@pytest.mark.parametrize(
    ("weights", "options", "message"),
    [
        (np.full((2, 3, 3), 1 / 3), {}, r"shape \(L, H, T, T\)"),
        (np.full((1, 2, 3, 3), 1 / 3), {"scores": {"x": np.ones((2, 1))}}, r"scores\['x'\]"),
        (np.full((1, 2, 3, 3), 1 / 3), {"columns": 5}, "at most 4 panels side by side"),
        (np.full((1, 2, 3, 3), 1 / 3), {"phone_columns": 3}, "2 a phone"),
        (np.full((1, 2, 3, 3), 1 / 3), {"first_layer": 0}, "first_layer must be at least 1"),
    ],
)
def test_ch14_head_maps_rejects_bad_input(weights, options, message):
    with pytest.raises(ValueError, match=message):
        plotting.head_maps(weights, list("abc"), **options)


# ---------------------------------------------------------------- ablation_bars


def test_ch14_ablation_bars_draws_both_halves_per_ablation_with_their_values():
    losses = {"none": (6.11, 0.07), "layer 2 · head 0": (6.52, 5.65)}
    fig = plotting.ablation_bars(losses, guess_bits=5.98)
    ax = fig.axes[0]
    widths = [round(float(bar.get_width()), 2) for bar in ax.patches]
    assert widths == [6.11, 6.52, 0.07, 5.65]  # the first halves, then the repeated halves
    assert [t.get_text() for t in ax.get_yticklabels()] == ["none", "layer 2 · head 0"]
    assert {t.get_text() for t in ax.texts} >= {"6.11", "0.07", "6.52", "5.65"}
    assert [t.get_text() for t in ax.get_legend().get_texts()][1:] == [
        "first half",
        "repeated half",
    ]
    assert ax.get_xlabel() == "bits per token"
    _fits_a_phone(fig)


@pytest.mark.parametrize(
    ("losses", "guess", "message"),
    [
        ({}, 6.0, "at least one label"),
        ({"none": (6.0,)}, 6.0, r"must have shape \(2,\)"),
        ({"none": (6.0, -0.1)}, 6.0, "cannot be negative"),
        ({"none": (6.0, 0.1)}, float("nan"), "guess_bits must be a positive"),
    ],
)
def test_ch14_ablation_bars_rejects_bad_input(losses, guess, message):
    with pytest.raises(ValueError, match=message):
        plotting.ablation_bars(losses, guess_bits=guess)


# ---------------------------------------------------------------- ov_circuits


def test_ch14_ov_circuits_draws_the_circuits_on_one_scale_centred_on_zero():
    circuits = {"copies, copying 1.00": 2 * np.eye(5), "inverts, copying -1.00": -np.eye(5)}
    fig = plotting.ov_circuits(circuits)
    panels = fig.axes[:2]
    assert [ax.get_title() for ax in panels] == list(circuits)
    for ax, expected in zip(panels, circuits.values(), strict=True):
        np.testing.assert_array_equal(ax.images[0].get_array(), expected)
        norm = ax.images[0].norm
        assert (norm.vmin, norm.vcenter, norm.vmax) == (-2.0, 0.0, 2.0)
    assert panels[0].get_ylabel() == "token attended to"
    assert fig.axes[-1].get_ylabel() == "change of the logit"
    _fits_a_phone(fig)


@pytest.mark.parametrize(
    ("circuits", "message"),
    [
        ({}, "one or two titles"),
        ({"a": np.eye(2), "b": np.eye(2), "c": np.eye(2)}, "one or two titles"),
        ({"a": np.eye(2), "b": np.eye(3)}, "square"),
        ({"a": np.ones((2, 3))}, "square"),
        ({"a": np.full((2, 2), np.inf)}, "finite"),
    ],
)
def test_ch14_ov_circuits_rejects_bad_input(circuits, message):
    with pytest.raises(ValueError, match=message):
        plotting.ov_circuits(circuits)


def _ch14_figures():
    rng = np.random.default_rng(0)
    weights = rng.random((2, 2, 6, 6))
    losses = {"none": (6.1, 0.1), "both heads of layer 1": (6.8, 6.2)}
    return {
        "induction_flow": lambda **kw: plotting.induction_flow(
            [0, 5, 7, 0, 5, 7], [-1, 0, 1, 2, 3, 4], [1, 2, 3], [5, 7, 0], example=4,
            title="the induction rule", **kw
        ),
        "phase_change": lambda **kw: plotting.phase_change(
            np.full(40, 6.0), np.linspace(6.0, 0.1, 40), guess_bits=5.98, phase_step=20, **kw
        ),
        "head_maps": lambda **kw: plotting.head_maps(
            weights, list("abcabc"), scores={"prev": rng.random((2, 2))}, **kw
        ),
        "ablation_bars": lambda **kw: plotting.ablation_bars(losses, guess_bits=5.98, **kw),
        "ov_circuits": lambda **kw: plotting.ov_circuits(
            {"copies": np.eye(4), "inverts": -np.eye(4)}, **kw
        ),
    }  # fmt: skip


def _words(fig):
    fig.draw_without_rendering()
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    words = (word for text in texts for word in text.get_text().split())
    return {word for word in words if word[0].isalpha()}  # not its numbers


@pytest.mark.parametrize("name", sorted(_ch14_figures()))
def test_ch14_figures_drawn_for_a_phone_fit_its_column_and_keep_every_word(name):
    draw = _ch14_figures()[name]
    laptop, phone = draw(), draw(layout="phone")
    laptop, phone = getattr(laptop, "figure", laptop), getattr(phone, "figure", phone)
    assert hasattr(laptop, "course_phone")  # the notebook shows both renderings
    assert phone.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
    assert _words(laptop) <= _words(phone)


def test_ch14_ablation_bars_for_a_phone_wraps_long_labels_and_puts_the_legend_below():
    phone = _ch14_figures()["ablation_bars"](layout="phone")
    labels = [t.get_text() for t in phone.axes[0].get_yticklabels()]
    assert labels == ["none", "both heads of\nlayer 1"]
    assert phone.axes[0].get_legend() is None and len(phone.legends) == 1


def test_ch14_induction_flow_for_a_phone_puts_the_copy_under_the_first_half():
    tokens = np.tile(np.arange(8), 2)
    queries = np.arange(8, 16)
    diagram = plotting.induction_flow(
        tokens, np.arange(16) - 1, queries - 7, tokens[queries - 7], example=15,
        title="the trained model: layer 1 head 1, layer 2 head 0", layout="phone",
    )  # fmt: skip
    assert diagram.figure.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
    assert read_back(diagram.figure, "tokens").tolist() == [list(range(8))] * 2
    assert read_back(diagram.figure, "predicts").shape == (1, 8)
    assert diagram.figure.texts[0].get_text().startswith("the trained model:\nlayer 1")
