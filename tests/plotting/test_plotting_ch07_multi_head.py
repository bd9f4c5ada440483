"""Tests of selfattn_lib.plotting.ch07_multi_head: the figures of chapter 7."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from selfattn_lib import plotting

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
    # Every label stays readable in the book's column: 8 points at least.
    assert min(text.get_fontsize() for text in ax.texts) >= 8


def test_ch7_head_layout_alone_fits_the_column():
    for values, layout in [
        (CH7_NUMBERS, "T D"),
        (CH7_NUMBERS.reshape(4, 2, 3), "T H D_h"),
        (CH7_NUMBERS.reshape(4, 2, 3).transpose(1, 0, 2), "H T D_h"),
    ]:
        fig = plotting.head_layout(values, layout, n_heads=2)
        assert fig.get_size_inches()[0] <= plotting.COLUMN_WIDTH


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
    # The right panel leaves the query labels to the left one, beside it in the same row.
    assert heatmaps[0].get_ylabel() == "query" and heatmaps[1].get_ylabel() == ""
    assert [tick.label1.get_visible() for tick in heatmaps[0].yaxis.get_major_ticks()] == [True] * 3
    assert not any(tick.label1.get_visible() for tick in heatmaps[1].yaxis.get_major_ticks())
    assert min(text.get_fontsize() for ax in heatmaps for text in ax.texts) >= 8


def test_ch7_head_weights_without_annotations_writes_no_numbers():
    fig = plotting.head_weights(np.full((2, 3, 3), 1 / 3), ["a", "b", "c"], annotate=False)
    assert all(not ax.texts for ax in fig.axes[:2])
    np.testing.assert_array_equal(fig.axes[0].images[0].get_array(), np.full((3, 3), 1 / 3))


def test_ch7_head_weights_fits_the_column_in_rows_of_three():
    fig = plotting.head_weights(np.full((5, 4, 4), 0.25), ["a", "b", "c", "d"])
    assert fig.get_size_inches()[0] <= plotting.COLUMN_WIDTH
    heatmaps = [ax for ax in fig.axes if ax.images and ax.get_visible()]
    rows = [ax.get_subplotspec().rowspan.start for ax in heatmaps]
    assert rows == [0, 0, 0, 1, 1]
    assert [ax.get_ylabel() for ax in heatmaps] == ["query", "", "", "query", ""]
    single = plotting.head_weights(np.full((1, 5, 5), 0.2), list("abcde"))
    assert single.get_size_inches()[0] <= plotting.COLUMN_WIDTH


def test_ch7_head_weights_without_colorbar_leaves_one_to_share():
    fig = Figure()
    grid = fig.subplots(2, 2)
    for row_axes, tokens in zip(grid, (["a", "b"], ["c", "d"]), strict=True):
        drawn = plotting.head_weights(
            np.full((2, 2, 2), 0.5), tokens, colorbar=False, axes=row_axes
        )
        assert drawn is fig
    assert len(fig.axes) == 4  # the four panels, no colour bar
    plotting.shared_colorbar(list(grid.flat), "weight")
    assert len(fig.axes) == 5 and fig.axes[4].get_ylabel() == "weight"
    assert [ax.get_ylabel() for ax in grid.flat] == ["query", "", "query", ""]


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


def ch7_flow_arrays(seed=0):
    """A tiny layer as the notebook computes it, step by step: T = 3, D = 4, H = 2."""
    from selfattn_lib import multihead
    from selfattn_lib.softmax import softmax

    rng = np.random.default_rng(seed)
    x = rng.normal(size=(3, 4)).round(1)
    params = multihead.MultiHeadParams.init(4, rng)
    q, k, v = x @ params.w_q, x @ params.w_k, x @ params.w_v
    # Each head by hand: its own block of columns, its own softmax.
    q_heads, k_heads, v_heads = (np.stack([a[:, :2], a[:, 2:]]) for a in (q, k, v))
    weights = softmax(q_heads @ k_heads.transpose(0, 2, 1) / np.sqrt(2))  # (H, T, T)
    head_outputs = weights @ v_heads  # (H, T, D_h)
    merged = np.concatenate(list(head_outputs), axis=-1)  # (T, D)
    arrays = (x, q, k, v, q_heads, k_heads, v_heads, weights, head_outputs, merged)
    return params, (*arrays, merged @ params.w_o)


def test_ch7_multi_head_flow_draws_what_the_library_computes():
    from selfattn_lib import multihead
    from selfattn_lib.attention import scaled_dot_product_attention
    from selfattn_lib.plotting.diagrams import read_back

    params, arrays = ch7_flow_arrays()
    x = arrays[0]
    diagram = plotting.multi_head_flow(["the", "cat", "saw"], *arrays)
    drawn = diagram.figure
    # Computed again, independently, by the concept functions.
    output, weights = multihead.multi_head_attention(x, x, params, n_heads=2)
    q_heads = multihead.split_heads(x @ params.w_q, 2)
    np.testing.assert_allclose(read_back(drawn, "Y"), output, atol=0.005)
    for h, sub in enumerate("₀₁"):
        np.testing.assert_allclose(read_back(drawn, f"A{sub}"), weights[h], atol=0.005)
        np.testing.assert_allclose(read_back(drawn, f"Q{sub}"), q_heads[h], atol=0.05)
    heads, _ = scaled_dot_product_attention(
        q_heads, *(multihead.split_heads(x @ w, 2) for w in (params.w_k, params.w_v))
    )
    np.testing.assert_allclose(read_back(drawn, "Z"), multihead.merge_heads(heads), atol=0.005)
    np.testing.assert_allclose(read_back(drawn, "X"), x, atol=1e-12)
    assert read_back(drawn, "A₀").shape == (3, 3) and read_back(drawn, "V₁").shape == (3, 2)
    assert diagram.alt.startswith(
        "Computed diagram: multi_head_attention: T = 3, D = 4, H = 2 heads of D_h = 2: "
        "X (3 × 4) Q (3 × 4) K (3 × 4) V (3 × 4) split_heads → Q₀ (3 × 2) K₀ (3 × 2) "
        "V₀ (3 × 2) Q₁ (3 × 2) K₁ (3 × 2) V₁ (3 × 2) softmax → A₀ (3 × 3) A₁ (3 × 3) "
        "× Vₕ → Z₀ (3 × 2) Z₁ (3 × 2) merge_heads → Z (3 × 4) × W_O = Y (3 × 4)."
    )
    assert drawn.get_size_inches()[0] <= plotting.COLUMN_WIDTH
    texts = [t for ax in drawn.axes for t in ax.texts] + list(drawn.texts)
    assert min(t.get_fontsize() for t in texts) >= 8


def test_ch7_multi_head_flow_refuses_arrays_of_the_wrong_shape():
    _, arrays = ch7_flow_arrays()
    tokens = ["the", "cat", "saw"]
    with pytest.raises(ValueError, match="tokens must have 3 labels, got 2"):
        plotting.multi_head_flow(tokens[:2], *arrays)
    wrong = list(arrays)
    wrong[5] = arrays[5][:, :, :1]  # k_heads with D_h = 1
    with pytest.raises(ValueError, match=r"k_heads must have shape \(2, 3, 2\)"):
        plotting.multi_head_flow(tokens, *wrong)
    wrong = list(arrays)
    wrong[4] = arrays[4][:1]  # one head of D_h = 2 cannot make D = 4
    with pytest.raises(ValueError, match="H · D_h = D = 4"):
        plotting.multi_head_flow(tokens, *wrong)


def test_ch7_split_steps_draws_the_three_steps_of_a_split_in_the_column():
    from selfattn_lib.plotting.ch07_multi_head import split_steps

    numbers = np.arange(24).reshape(4, 6)  # (T, D)
    split = numbers.reshape(4, 2, 3)  # (T, H, D_h)
    fig = split_steps([numbers, split, split.transpose(1, 0, 2)], 2, ["a", "b", "c", "d"])
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles[0] == "1. x: (B, T, D) = (1, 4, 6)"
    assert titles[-1] == "3. transpose to (B, H, T, D_h) = (1, 2, 4, 3)"
    assert fig.get_size_inches()[0] <= plotting.COLUMN_WIDTH
    with pytest.raises(ValueError, match="x, its reshape and its transpose"):
        split_steps([numbers], 2)


# --- Drawn for a phone ----------------------------------------------------------------------


def ch7_words(fig):
    """The words of a figure's texts, titles and labels (not its numbers)."""
    from matplotlib.text import Text

    lines = [text.get_text() for text in fig.findobj(Text) if text.get_visible()]
    return {word for line in lines for word in line.split() if word[0].isalpha()}


def test_ch7_head_layout_wraps_its_grids_into_rows_on_a_phone():
    tokens_heads = CH7_NUMBERS.reshape(4, 2, 3)  # (T, H, D_h): four grids of 2 × 3
    laptop = plotting.head_layout(tokens_heads, "T H D_h", n_heads=2, tokens=CH7_TOKENS)
    phone = plotting.head_layout(
        tokens_heads, "T H D_h", n_heads=2, tokens=CH7_TOKENS, layout="phone"
    )
    assert phone.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
    cells = ch7_cells(phone.axes[0])
    # Token "sat" (numbers 12 …) starts the second row of grids, below token "the".
    assert cells[12][1] == cells[0][1] and cells[12][2] > cells[3][2] + 1
    # Every cell still has room for its label ("t1 f4"): about 0.3 in wide at least.
    ax = phone.axes[0]
    inches = phone.get_size_inches()[0] - 1.2
    assert inches / abs(np.diff(ax.get_xlim())[0]) >= 0.3
    assert ch7_words(laptop) <= ch7_words(phone)
    assert [text.get_text() for text in ax.texts].count("head 1") == 2  # row labels, each row


def test_ch7_split_steps_and_right_and_wrong_split_stack_for_a_phone():
    split = CH7_NUMBERS.reshape(4, 2, 3)
    steps = [CH7_NUMBERS, split, split.transpose(1, 0, 2)]
    for draw, args in [
        (plotting.split_steps, (steps, 2, CH7_TOKENS)),
        (plotting.right_and_wrong_split, (steps[2], CH7_NUMBERS.reshape(2, 4, 3), 2, CH7_TOKENS)),
    ]:
        laptop, phone = draw(*args), draw(*args, layout="phone")
        assert laptop.get_size_inches()[0] == plotting.COLUMN_WIDTH
        assert phone.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
        assert ch7_words(laptop) <= ch7_words(phone)
        tops = [ax.get_position().y0 for ax in phone.axes]
        assert tops == sorted(tops, reverse=True)  # one panel below the other


def test_ch7_right_and_wrong_split_draws_both_splits_side_by_side():
    right = CH7_NUMBERS.reshape(4, 2, 3).transpose(1, 0, 2)
    wrong = CH7_NUMBERS.reshape(2, 4, 3)
    fig = plotting.right_and_wrong_split(right, wrong, 2, CH7_TOKENS)
    left_ax, right_ax = fig.axes
    assert left_ax.get_title() == "right: reshape, then transpose"
    assert right_ax.get_title() == "WRONG: reshape straight to (H, T, D_h)"
    assert right_ax.get_position().x0 > left_ax.get_position().x1
    # The right split's head 0 is one colour; the wrong one's mixes two (row "cat" holds 3 …).
    assert len({cell[0] for n, cell in ch7_cells(left_ax).items() if n % 6 < 3}) == 1
    wrong_cells = ch7_cells(right_ax)
    assert wrong_cells[0][0] != wrong_cells[3][0] and wrong_cells[3][1] == wrong_cells[0][1]
    with pytest.raises(ValueError, match="titles must name the 2 panels"):
        plotting.right_and_wrong_split(right, wrong, 2, titles=["one"])


def test_ch7_head_weights_stacks_its_panels_on_a_phone():
    weights = np.full((3, 5, 5), 0.2)
    laptop = plotting.head_weights(weights, list("abcde"), titles=["x\ny", "z", "w"])
    phone = plotting.head_weights(weights, list("abcde"), titles=["x\ny", "z", "w"], layout="phone")
    assert phone.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
    panels, colour_bar = phone.axes[:3], phone.axes[3]
    assert len({round(ax.get_position().x0, 3) for ax in panels}) == 1  # one above the other
    assert colour_bar.get_xlabel() == "weight"  # under the panels
    assert colour_bar.get_position().y1 < min(ax.get_position().y0 for ax in panels)
    assert ch7_words(laptop) <= ch7_words(phone)
    assert [ax.get_ylabel() for ax in panels] == ["query"] * 3


def test_ch7_multi_head_flow_wraps_for_a_phone():
    x = np.eye(4)[:3]
    heads = x.reshape(3, 2, 2).swapaxes(0, 1)
    a = np.full((2, 3, 3), 1 / 3)
    args = (["a", "b", "c"], x, x, x, x, heads, heads, heads, a, a @ heads, x, x)
    laptop, phone = plotting.multi_head_flow(*args), plotting.multi_head_flow(*args, layout="phone")
    assert phone.figure.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
    assert phone.figure.get_size_inches()[1] > laptop.figure.get_size_inches()[1]
    assert ch7_words(laptop.figure) <= ch7_words(phone.figure)


def test_ch7_head_count_times_draws_a_bar_per_head_count():
    fig = plotting.head_count_times(
        [0.5, 0.6, 0.9], [1, 2, 4], title="one forward pass, B = 2, T = 64", ylabel="time (ms)"
    )
    ax = fig.axes[0]
    assert [label.get_text() for label in ax.get_xticklabels()] == ["H = 1", "H = 2", "H = 4"]
    assert [round(bar.get_height(), 2) for bar in ax.patches] == [0.5, 0.6, 0.9]
    assert ax.get_ylim() == pytest.approx((0.0, 1.15 * 0.9))  # room for the numbers
    assert ax.get_title() == "one forward pass, B = 2, T = 64" and ax.get_ylabel() == "time (ms)"
    assert "0.90" in [text.get_text() for text in ax.texts]
    phone = plotting.head_count_times(
        [0.5, 0.6, 0.9], [1, 2, 4], title="one forward pass, B = 2, T = 64", layout="phone"
    )
    assert phone.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
    assert phone.axes[0].get_title() == "one forward pass,\nB = 2, T = 64"
    with pytest.raises(ValueError, match="one time per head count"):
        plotting.head_count_times([0.5], [1, 2])
