"""Tests of selfattn_lib.plotting.ch11_at_scale: the figures of chapter 11."""

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from selfattn_lib import plotting


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
    # One marker over the step at which m grew (step 2) and ℓ was rescaled.
    final, grew = sum_ax.lines
    assert grew.get_label() == "m grew: ℓ rescaled first"
    assert grew.get_xdata().tolist() == [2] and grew.get_ydata()[0] > sums[1]
    assert final.get_ydata()[0] == pytest.approx(np.exp(scores[0] - 3.0).sum())


def test_ch11_block_schedule_fits_the_column_with_the_grid_on_top():
    fig = plotting.block_schedule(np.random.default_rng(1).normal(size=(16, 16)), 4)
    assert fig.get_size_inches()[0] <= plotting.COLUMN_WIDTH
    grid_ax, max_ax, sum_ax = fig.axes[:3]
    grid_box, max_box, sum_box = (ax.get_position() for ax in (grid_ax, max_ax, sum_ax))
    assert grid_box.y0 > max(max_box.y1, sum_box.y1)  # the grid is above the two others
    assert max_box.x1 < sum_box.x0  # which sit side by side
    texts = [t for ax in fig.axes for t in (*ax.texts, *ax.get_xticklabels(), ax.title)]
    assert min(t.get_fontsize() for t in texts) >= 8


def test_ch11_block_schedule_numbers_at_most_16_blocks_and_marks_no_rescale_for_one():
    scores = np.random.default_rng(3).normal(size=(4, 48))
    fig = plotting.block_schedule(scores, 1)
    numbers = [text.get_text() for text in fig.axes[0].texts]
    assert numbers == [str(step) for step in range(1, 49, 3)]
    assert len(fig.axes[2].get_xticks()) <= 8
    one_block = plotting.block_schedule(scores, 64)
    assert len(one_block.axes[2].lines) == 1  # only the final ℓ: m never grew


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


def test_ch11_block_schedule_draws_the_running_statistics_of_online_softmax():
    from selfattn_lib.online_softmax import running_statistics

    scores = np.random.default_rng(2).normal(size=(3, 9)) * 3
    fig = plotting.block_schedule(scores, block_size=4, row=1)
    sums = [patch.get_height() for patch in fig.axes[2].patches]
    assert np.allclose(sums, running_statistics(scores[1], 4)[1], rtol=0, atol=0)


def test_ch11_kv_cache_growth_draws_the_cache_after_each_step():
    from selfattn_lib.kv_cache import attend_with_cache
    from selfattn_lib.plotting.diagrams import read_back

    rng = np.random.default_rng(4)
    q, k, v = (rng.normal(size=(1, 3, 2)) for _ in range(3))  # (B, T, D_h)
    k_cache, v_cache = np.zeros((1, 0, 2)), np.zeros((1, 0, 2))
    keys, values, weights = [], [], []
    for t in range(3):
        _, k_cache, v_cache = attend_with_cache(
            q[:, t : t + 1], k[:, t : t + 1], v[:, t : t + 1], k_cache, v_cache
        )
        scores = k_cache[0] @ q[0, t] / np.sqrt(2)
        keys.append(k_cache[0])
        values.append(v_cache[0])
        weights.append(np.exp(scores) / np.exp(scores).sum())
    d = plotting.kv_cache_growth(["<bos>", "7", "3"], list(q[0]), keys, values, weights)
    for step in (1, 2, 3):
        np.testing.assert_allclose(read_back(d.figure, f"K{step}"), k[0, :step], atol=0.05)
        np.testing.assert_allclose(read_back(d.figure, f"V{step}"), v[0, :step], atol=0.05)
        np.testing.assert_allclose(
            read_back(d.figure, f"q{step}"), q[0, step - 1 : step], atol=0.05
        )
        np.testing.assert_allclose(
            read_back(d.figure, f"a{step}")[0], weights[step - 1], atol=0.005
        )
    assert "K3 (3 × 2)" in d.alt and "3 ← new" in d.alt and d.alt.startswith("Computed diagram")
    assert d.figure.get_size_inches()[0] <= plotting.COLUMN_WIDTH


def test_ch11_kv_cache_growth_rejects_a_cache_that_does_not_grow():
    same = np.zeros((1, 2))
    with pytest.raises(ValueError, match="after step 2 the cache holds 2 rows"):
        plotting.kv_cache_growth(["a", "b"], [np.zeros(2)] * 2, [same, same], [same, same],
                                 [[1.0], [1.0]])  # fmt: skip
    with pytest.raises(ValueError, match="one entry per token"):
        plotting.kv_cache_growth(["a", "b"], [np.zeros(2)], [same], [same], [[1.0]])


def test_ch11_fast_and_slow_memory_prints_the_given_byte_counts():
    from selfattn_lib.attention_cost import score_matrix_bytes, tile_working_bytes

    scores = score_matrix_bytes(1, 1, 4096, 4096, 4)
    fast = tile_working_bytes(64, 64, 64, 64, 4)
    d = plotting.fast_and_slow_memory(
        {"Q, K, V": 3 * 2**20, "S": scores}, {"Q, K, V": 3 * 2**20}, fast, scores=["S"]
    )
    texts = {t.get_gid(): t for t in d.figure.axes[0].texts if t.get_gid()}
    assert texts["direct/slow/S"].get_text() == "64 MiB"
    assert texts["blocked/fast/tile of scores"].get_text() == "16 KiB"
    assert texts["blocked/fast/running max and sum"].get_text() == "512 bytes"
    assert set(texts) == {
        "direct/slow/Q, K, V", "direct/slow/S", "blocked/slow/Q, K, V",
        *(f"blocked/fast/{name}" for name in fast),
    }  # fmt: skip
    assert "S 64 MiB" in d.alt and "tile of scores 16 KiB" in d.alt
    assert d.alt.startswith("Computed diagram: ")
    assert d.figure.get_size_inches()[0] <= plotting.COLUMN_WIDTH
    sizes = [t.get_fontsize() for t in d.figure.axes[0].texts]
    assert min(sizes) >= 8


def test_ch11_fast_and_slow_memory_wraps_a_long_title_to_a_phone_s_column():
    title = "T = 4096, D_h = 64, float32, tiles of 64 queries × 64 keys"  # chapter 11's
    d = plotting.fast_and_slow_memory({"S": 2**26}, {"m": 2**15}, {"tile": 2**14}, title=title)
    phone = d.figure.course_phone()
    drawn = next(text for text in phone.figure.axes[0].texts if "4096" in text.get_text())
    assert "\n" in drawn.get_text() and drawn.get_text().replace("\n", " ") == title
    renderer = FigureCanvasAgg(phone.figure).get_renderer()
    box = phone.figure.get_tightbbox(renderer)
    assert box.width <= plotting.PHONE_COLUMN_WIDTH, "nothing sticks out of a phone's figure"


def test_ch11_fast_and_slow_memory_rejects_bad_byte_counts():
    with pytest.raises(ValueError, match="positive"):
        plotting.fast_and_slow_memory({"S": 0}, {}, {})
    with pytest.raises(TypeError, match="whole number"):
        plotting.fast_and_slow_memory({"S": 1.5}, {}, {})


def test_ch11_fast_and_slow_memory_stays_inside_the_column():
    import io

    from matplotlib.image import imread

    fast = {"tile of scores": 2**14, "running max and sum": 512, "accumulator": 2**14}
    d = plotting.fast_and_slow_memory({"S": 2**26}, {"Q": 2**20}, fast, scores=["S"])
    png = d._repr_mimebundle_()["image/png"]
    assert imread(io.BytesIO(png)).shape[1] <= 100 * plotting.COLUMN_WIDTH  # tight bbox


def test_ch11_decoding_work_draws_each_way_of_decoding_with_its_count():
    full = np.tril(np.ones((4, 4)))
    cached = np.tril(np.full((4, 4), 0.5))
    np.fill_diagonal(cached, 1.0)
    fig = plotting.decoding_work({"recompute everything": full, "KV cache": cached})
    left, right = fig.axes[:2]
    assert left.get_title() == "recompute everything:\n10 positions computed"
    assert right.get_title() == "KV cache:\n4 positions computed"
    np.testing.assert_array_equal(left.images[0].get_array(), full)
    np.testing.assert_array_equal(right.images[0].get_array(), cached)
    assert fig.get_size_inches()[0] <= plotting.COLUMN_WIDTH
    with pytest.raises(ValueError, match="positions"):
        plotting.decoding_work({"bad": np.full((2, 2), 0.3)})


def test_ch11_block_schedule_follows_the_most_rescaled_query_by_default():
    from selfattn_lib.plotting.ch11_at_scale import most_rescaled_row

    scores = np.array([[3.0, 2.0, 1.0, 0.0], [0.0, 1.0, 2.0, 3.0]])  # row 1 grows at each key
    assert most_rescaled_row(scores, 1) == 1
    fig = plotting.block_schedule(scores, 1)
    assert fig.axes[1].get_title().startswith("query 1:")


def _below(lower, upper):
    """Whether axes ``lower`` lies wholly under axes ``upper`` in their figure."""
    return lower.get_position().y1 < upper.get_position().y0


def test_ch11_scaling_plot_puts_its_legend_under_the_axes_on_a_phone():
    sizes, series = [64, 128, 256], {"a long name for a measured series": [1.0, 4.0, 16.0]}
    title = "Attention's memory grows like $T^2$ where the scores are stored"
    laptop = plotting.scaling_plot(sizes, series, reference_slopes=(2, 1), title=title)
    assert laptop.get_size_inches().tolist() == [6.5, 3.6] and laptop.axes[0].get_legend()
    phone = plotting.scaling_plot(
        sizes, series, reference_slopes=(2, 1), title=title, ylabel="time (s)", layout="phone"
    )
    ax = phone.axes[0]
    assert phone.get_size_inches()[0] <= 3.8
    assert ax.get_legend() is None and len(phone.legends) == 1  # under the axes
    labels = [text.get_text() for text in phone.legends[0].get_texts()]
    assert labels == ["a long name for a measured series", "slope 2", "slope 1"]
    assert "\n" in ax.get_title() and ax.get_title().split() == title.split()
    assert ax.get_ylabel() == "time (s)" and ax.get_xlabel() == "sequence length $T$"


def test_ch11_block_schedule_stacks_its_three_panels_on_a_phone():
    scores = np.random.default_rng(16).normal(size=(16, 16))
    laptop, phone = (
        plotting.block_schedule(scores, 4),
        plotting.block_schedule(scores, 4, layout="phone"),
    )
    assert phone.get_size_inches()[0] <= 3.8
    grid, maximum, total = phone.axes[:3]
    assert _below(maximum, grid) and _below(total, maximum)
    assert grid.get_title().split() == laptop.axes[0].get_title().split()
    assert "\n" in grid.get_title()  # wrapped to the phone's column
    assert [ax.get_title() for ax in (maximum, total)] == [
        ax.get_title() for ax in laptop.axes[1:3]
    ]


def test_ch11_decoding_work_stacks_its_panels_with_the_colour_bar_below_on_a_phone():
    cached = np.tril(np.full((4, 4), 0.5))
    np.fill_diagonal(cached, 1.0)
    fig = plotting.decoding_work({"all": np.tril(np.ones((4, 4))), "cache": cached}, layout="phone")
    top, bottom, bar = fig.axes
    assert fig.get_size_inches()[0] <= 3.8 and _below(bottom, top) and _below(bar, bottom)
    assert bar.get_xlabel() == "what the step does with the position"
    assert [t.get_text() for t in bar.get_xticklabels()] == list(
        plotting.ch11_at_scale.WORK_LEVELS.values()
    )


def test_ch11_fast_and_slow_memory_stacks_its_columns_on_a_phone():
    fast = {"tile of scores": 2**14}
    args = ({"S": 2**26, "Q": 2**20}, {"Q": 2**20}, fast)
    laptop = plotting.fast_and_slow_memory(*args, scores=["S"], title="T = 4096")
    phone = plotting.fast_and_slow_memory(*args, scores=["S"], title="T = 4096", layout="phone")
    assert phone.figure.get_size_inches()[0] <= 3.8 and phone.alt == laptop.alt
    texts = {t.get_gid(): t for t in phone.figure.axes[0].texts if t.get_gid()}
    assert texts["direct/slow/S"].get_text() == "64 MiB"
    direct, blocked = texts["direct/slow/Q"].get_position(), texts["blocked/slow/Q"].get_position()
    assert direct[0] == blocked[0] and blocked[1] < direct[1]  # one column under the other
    words = {t.get_text() for t in laptop.figure.axes[0].texts}
    assert words == {t.get_text() for t in phone.figure.axes[0].texts}


def test_ch11_kv_cache_growth_wraps_into_the_phone_s_column():
    d = plotting.kv_cache_growth(
        ["<bos>", "7"],
        [np.ones(2), np.ones(2)],
        [np.ones((1, 2)), np.ones((2, 2))],
        [np.zeros((1, 2)), np.zeros((2, 2))],
        [[1.0], [0.5, 0.5]],
        layout="phone",
    )
    assert d.figure.get_size_inches()[0] <= 3.8 and "K2 (2 × 2)" in d.alt
    labels = [t for t in d.figure.texts if t.get_text().strip().startswith("step")]
    assert [t.get_text().strip() for t in labels] == ["step 1:", "step 2:"]
    # Each step starts a line of its own: step 2 under all of step 1.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    renderer = FigureCanvasAgg(d.figure).get_renderer()
    values_1 = [t for t in d.figure.findobj(Text) if (t.get_gid() or "").startswith("V1[")]
    bottom_of_step_1 = min(t.get_window_extent(renderer).y0 for t in values_1)
    assert labels[1].get_window_extent(renderer).y1 < bottom_of_step_1
