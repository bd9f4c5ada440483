"""Tests of selfattn_lib.plotting.ch13_modern_attention: the figures of chapter 13.

The arrays are computed here with plain NumPy, as the notebook computes them with the concept
modules; each test reads back what was drawn (numbers, titles, counts) and compares it with
the input.
"""

import re

import numpy as np
import pytest
from matplotlib.colors import to_hex, to_rgb
from matplotlib.figure import Figure
from matplotlib.text import Text

from selfattn_lib import plotting
from selfattn_lib.plotting.ch13_modern_attention import _MAY_ATTEND, SMALLEST_FONT, _compact
from selfattn_lib.plotting.diagrams import read_back


def _drawn_texts(fig: Figure) -> list[Text]:
    fig.draw_without_rendering()  # lays out ticks and labels as a saved image has them
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


def _fits_a_phone(fig: Figure, max_side_by_side: int = 2) -> None:
    """Column width at most, no text under 8.5 points, at most ``max_side_by_side`` panels
    in a row."""
    assert fig.get_size_inches()[0] <= plotting.COLUMN_WIDTH
    assert min(t.get_fontsize() for t in _drawn_texts(fig)) >= SMALLEST_FONT
    visible = [ax for ax in fig.axes if ax.get_visible()]
    rows: dict[float, int] = {}
    for ax in visible:
        key = round(ax.get_position().y0, 2)
        rows[key] = rows.get(key, 0) + 1
    assert max(rows.values()) <= max_side_by_side


def _rope(x: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """RoPE on pairs (0, 1), (2, 3), …: enough to give the figure realistic numbers."""
    d_head = x.shape[-1]
    angles = np.asarray(positions)[..., None] * 10000.0 ** (-np.arange(0, d_head, 2) / d_head)
    even, odd = x[..., 0::2], x[..., 1::2]
    rotated = np.empty_like(x)
    rotated[..., 0::2] = even * np.cos(angles) - odd * np.sin(angles)
    rotated[..., 1::2] = even * np.sin(angles) + odd * np.cos(angles)
    return rotated


def _rotary_step(n_keys: int = 6, d_head: int = 4):
    rng = np.random.default_rng(0)
    positions = np.arange(n_keys)
    query, keys = rng.normal(size=d_head), rng.normal(size=(n_keys, d_head))
    rotated_query = _rope(query, positions[-1])
    rotated_keys = _rope(keys, positions)
    scores = rotated_keys @ rotated_query / np.sqrt(d_head)
    return query, rotated_query, rotated_keys, positions, scores


# ---------------------------------------------------------------- rotary_step_flow


def test_ch13_rotary_step_flow_draws_the_query_the_cached_keys_and_the_scores():
    query, rotated_query, keys, positions, scores = _rotary_step()
    diagram = plotting.rotary_step_flow(query, rotated_query, keys, positions, scores, position=5)
    fig = diagram.figure
    np.testing.assert_allclose(read_back(fig, "q")[0], query, atol=0.005)
    np.testing.assert_allclose(read_back(fig, "q rotated")[0], rotated_query, atol=0.005)
    np.testing.assert_allclose(read_back(fig, "K cached"), keys, atol=0.005)
    np.testing.assert_allclose(read_back(fig, "scores")[0], scores, atol=0.005)
    texts = [t.get_text() for t in fig.texts]
    assert "one decoding step with RoPE: the new token is at position 5" in texts
    assert "rotate by 5·ω →" in texts
    # The keys' rows are labelled by position, the last one the new token; the scores'
    # columns by position.
    labels = [t.get_text() for ax in fig.axes for t in ax.get_yticklabels() if t.get_text()]
    assert labels == ["pos 0", "pos 1", "pos 2", "pos 3", "pos 4", "pos 5 ← new"]
    columns = [t.get_text() for ax in fig.axes for t in ax.get_xticklabels() if t.get_text()]
    assert columns == ["0", "1", "2", "3", "4", "5"]
    assert "pos 5 ← new" in diagram.alt and "scores (1 × 6)" in diagram.alt
    _fits_a_phone(fig)


def test_ch13_rotary_step_flow_colours_each_role_as_the_course_does():
    from selfattn_lib.plotting.diagrams import ROLE_COLOURS

    diagram = plotting.rotary_step_flow(*_rotary_step(3, 2), position=2)
    names = {t.get_text().split("  (")[0]: to_hex(t.get_color()) for t in diagram.figure.texts}
    assert names["q"] == names["q rotated"] == to_hex(ROLE_COLOURS["query"])
    assert names["K cached"] == to_hex(ROLE_COLOURS["key"])
    assert names["scores"] == to_hex(ROLE_COLOURS["scores"])


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        ({"query": np.zeros((1, 4))}, ValueError, r"query must have shape \(n,\)"),
        ({"query": np.zeros(10)}, ValueError, "at most 8"),
        ({"rotated_query": np.zeros(3)}, ValueError, r"rotated_query must have shape \(4,\)"),
        ({"keys": np.zeros((6, 3))}, ValueError, r"keys must have shape \(n, D_h\)"),
        ({"keys": np.zeros((9, 4))}, ValueError, r"1 <= n <= 8"),
        ({"keys": np.array([["a"] * 4] * 6)}, TypeError, "keys must hold numbers"),
        ({"key_positions": np.arange(5)}, ValueError, r"key_positions must have shape \(6,\)"),
        ({"key_positions": np.arange(6.0)}, TypeError, "key_positions must be whole numbers"),
        ({"key_positions": np.arange(1, 7)}, ValueError, r"key_positions\[-1\] must equal"),
        ({"scores": np.zeros(5)}, ValueError, r"scores must have shape \(6,\)"),
        ({"scores": np.full(6, np.nan)}, ValueError, "scores must be finite"),
        ({"position": 5.0}, TypeError, "position must be a whole number"),
        ({"position": -1}, ValueError, "position must be at least 0"),
    ],
)
def test_ch13_rotary_step_flow_rejects_bad_input(change, error, message):
    query, rotated_query, keys, positions, scores = _rotary_step()
    arguments = {
        "query": query,
        "rotated_query": rotated_query,
        "keys": keys,
        "key_positions": positions,
        "scores": scores,
        "position": 5,
    } | change
    with pytest.raises(error, match=message):
        plotting.rotary_step_flow(**arguments)


# ---------------------------------------------------------------- kv_head_groups


def _head_map(n_heads: int, n_kv_heads: int) -> np.ndarray:
    # repeat_kv's order: each KV head repeated in place (repeat_interleave), not tiled.
    return np.repeat(np.arange(n_kv_heads), n_heads // n_kv_heads)


HEAD_MAPS = {
    "multi-head": _head_map(8, 8),
    "grouped-query": _head_map(8, 2),
    "multi-query": _head_map(8, 1),
}


def _drawn_head_map(ax) -> np.ndarray:
    """Which KV head each query head's line reaches, parsed from the lines' gids."""
    pairs = [re.search(r"q(\d+) → kv(\d+)$", line.get_gid()).groups() for line in ax.lines]
    drawn = dict((int(h), int(g)) for h, g in pairs)
    return np.array([drawn[h] for h in range(len(drawn))])


def test_ch13_kv_head_groups_joins_each_query_head_to_its_kv_head():
    fig = plotting.kv_head_groups(HEAD_MAPS)
    assert len(fig.axes) == 3
    for ax, (name, head_map) in zip(fig.axes, HEAD_MAPS.items(), strict=True):
        np.testing.assert_array_equal(_drawn_head_map(ax), head_map)
        n_kv = int(head_map.max()) + 1
        assert ax.get_title() == f"{name}: H = 8, H_kv = {n_kv}"
        boxes = [t.get_text() for t in ax.texts if t.get_gid()]
        assert boxes == [f"q{h}" for h in range(8)] + [f"kv{g}" for g in range(n_kv)]
        for h, (line, g) in enumerate(zip(ax.lines, head_map, strict=True)):
            # The line starts under query head h and ends over its KV head, in that head's
            # colour; the KV head sits under the middle of its group.
            (x_query, x_kv), (y_query, y_kv) = line.get_xdata(), line.get_ydata()
            assert x_query == h and y_query > y_kv
            assert x_kv == pytest.approx(np.flatnonzero(head_map == g).mean())
            assert to_hex(line.get_color()) == to_hex(plotting.OKABE_ITO[g])


def test_ch13_kv_head_groups_stacks_the_panels_and_prints_the_cache_bytes():
    per_token = {"multi-head": 2**17, "multi-query": 2**14}
    fig = plotting.kv_head_groups(HEAD_MAPS, per_token)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == [
        "multi-head: H = 8, H_kv = 8, KV cache 128 KiB per token",
        "grouped-query: H = 8, H_kv = 2",
        "multi-query: H = 8, H_kv = 1, KV cache 16 KiB per token",
    ]
    boxes = [ax.get_position() for ax in fig.axes]
    assert boxes[0].y0 > boxes[1].y0 > boxes[2].y0  # one column, top to bottom
    _fits_a_phone(fig, max_side_by_side=1)


def test_ch13_kv_head_groups_draws_a_wrong_tiled_order_as_crossing_lines():
    tiled = np.tile(np.arange(2), 4)  # k.repeat(1, n_rep, 1, 1): query head 1 reads kv1
    fig = plotting.kv_head_groups({"tiled (wrong)": tiled})
    np.testing.assert_array_equal(_drawn_head_map(fig.axes[0]), tiled)
    kv_boxes = fig.axes[0].patches[8:]
    assert [box.get_x() + box.get_width() / 2 for box in kv_boxes] == [1.5, 5.5]


def test_ch13_kv_head_groups_tints_query_heads_with_their_kv_head_s_colour():
    from matplotlib.colors import to_rgb

    fig = plotting.kv_head_groups({"grouped-query": _head_map(4, 2)})
    faces = [patch.get_facecolor()[:3] for patch in fig.axes[0].patches]
    query_faces, kv_faces = faces[:4], faces[4:]
    assert kv_faces == [to_rgb(plotting.OKABE_ITO[0]), to_rgb(plotting.OKABE_ITO[1])]
    for face, g in zip(query_faces, [0, 0, 1, 1], strict=True):
        kv = np.array(to_rgb(plotting.OKABE_ITO[g]))
        # A tint: between the KV head's colour and white.
        assert np.all(np.array(face) >= kv - 1e-9) and np.all(np.array(face) <= 1.0)
        assert not np.allclose(face, kv)


@pytest.mark.parametrize(
    ("head_maps", "per_token", "error", "message"),
    [
        ({}, None, ValueError, "at least one name"),
        ({"a": np.array([0.0, 1.0])}, None, TypeError, r"head_maps\['a'\] must hold whole"),
        ({"a": np.zeros((2, 2), dtype=int)}, None, ValueError, r"must have shape \(H,\)"),
        ({"a": np.array([0, 2])}, None, ValueError, "each KV head 0 … H_kv − 1"),
        ({"a": np.array([-1, 0])}, None, ValueError, "each KV head"),
        ({"a": np.arange(9)}, None, ValueError, "H_kv <= 8"),
        ({"a": np.zeros(2, dtype=int)}, {"b": 4}, ValueError, r"names \['b'\]"),
        ({"a": np.zeros(2, dtype=int)}, {"a": 4.5}, TypeError, "whole number"),
    ],
)
def test_ch13_kv_head_groups_rejects_bad_input(head_maps, per_token, error, message):
    with pytest.raises(error, match=message):
        plotting.kv_head_groups(head_maps, per_token)


# ---------------------------------------------------------------- window_masks


def _window_mask(n_tokens: int, window: int, n_sinks: int = 0) -> np.ndarray:
    query, key = np.arange(n_tokens)[:, None], np.arange(n_tokens)[None, :]
    return (key <= query) & ((query - key < window) | (key < n_sinks))  # (T, T)


MASKS = {
    "causal": _window_mask(10, 10),
    "window 4": _window_mask(10, 4),
    "window 4 + 1 sink": _window_mask(10, 4, 1),
}


def test_ch13_window_masks_draws_each_mask_with_its_keys_at_the_last_row():
    fig = plotting.window_masks(MASKS)
    assert len(fig.axes) == 3
    for ax, (name, mask) in zip(fig.axes, MASKS.items(), strict=True):
        drawn = np.asarray(ax.images[0].get_array())  # (T, T, 3): RGB, no colour map
        allowed = np.array(to_rgb(_MAY_ATTEND))
        np.testing.assert_array_equal(np.all(drawn == allowed, axis=-1), mask)
        assert (ax.get_xlabel(), ax.get_title()) == (
            "key position",
            f"{name}: {int(mask[-1].sum())} keys",
        )
    assert [ax.get_title() for ax in fig.axes] == [
        "causal: 10 keys",
        "window 4: 4 keys",
        "window 4 + 1 sink: 5 keys",
    ]
    assert fig.axes[0].get_ylabel() == "query position"
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == ["may attend", "may not"]
    _fits_a_phone(fig, max_side_by_side=3)  # three masks share one row


def test_ch13_window_masks_puts_two_to_a_row_otherwise():
    four = dict(MASKS) | {"window 2": _window_mask(10, 2)}
    fig = plotting.window_masks(four)
    rows = sorted({round(ax.get_position().y0, 2) for ax in fig.axes}, reverse=True)
    assert len(rows) == 2
    _fits_a_phone(fig)
    one = plotting.window_masks({"window 1": _window_mask(4, 1)})
    assert one.axes[0].get_title() == "window 1: 1 key"  # singular
    assert one.get_size_inches()[0] < plotting.COLUMN_WIDTH


@pytest.mark.parametrize(
    ("masks", "error", "message"),
    [
        ({}, ValueError, "at least one name"),
        ({"a": np.ones((3, 3))}, TypeError, r"masks\['a'\] must be boolean"),
        ({"a": np.ones((3, 4), dtype=bool)}, ValueError, r"shape \(T, T\)"),
        ({"a": np.ones(3, dtype=bool)}, ValueError, r"got \(3,\)"),
    ],
)
def test_ch13_window_masks_rejects_bad_input(masks, error, message):
    with pytest.raises(error, match=message):
        plotting.window_masks(masks)


# ---------------------------------------------------------------- bits_by_position


def test_ch13_bits_by_position_draws_one_styled_line_per_curve_and_the_marks():
    rng = np.random.default_rng(1)
    positions = np.arange(64)
    full = 2.0 + np.exp(-positions / 8) + rng.normal(0, 0.05, 64)
    curves = {"full": full, "window 16": full + (positions >= 16), "+ 4 sinks": full + 0.1}
    fig = plotting.bits_by_position(curves, marks={"window = 16": 16, "trained length": 32})
    ax = fig.axes[0]
    for line, (name, bits) in zip(ax.lines, curves.items(), strict=False):
        assert line.get_label() == name
        np.testing.assert_array_equal(line.get_ydata(), bits)
        np.testing.assert_array_equal(line.get_xdata(), positions)
    styles = [line.get_linestyle() for line in ax.lines[:3]]
    colours = [to_hex(line.get_color()) for line in ax.lines[:3]]
    assert len(set(styles)) == 3 and colours == [c.lower() for c in plotting.OKABE_ITO[:3]]
    window, trained = ax.lines[3:]
    assert window.get_linestyle() == ":" and list(window.get_xdata()) == [16, 16]
    assert trained.get_linestyle() == "-." and list(trained.get_xdata()) == [32, 32]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("position in the text", "bits per character")
    assert ax.get_title() == "bits per character at each position"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["full", "window 16", "+ 4 sinks", "window = 16", "trained length"]
    _fits_a_phone(fig)


def test_ch13_bits_by_position_draws_into_given_axes_without_marks():
    fig = Figure()
    left, right = fig.subplots(1, 2)
    assert plotting.bits_by_position({"a": [1.0, 2.0]}, ax=right, title="t") is fig
    assert not left.lines and len(right.lines) == 1 and right.get_title() == "t"


def test_ch13_bits_by_position_draws_at_the_given_positions():
    fig = plotting.bits_by_position({"a": [3.0, 2.0]}, positions=[8, 24], marks={"m": 10})
    line = fig.axes[0].lines[0]
    assert line.get_xdata().tolist() == [8, 24] and fig.axes[0].get_xlim() == (8, 24)


@pytest.mark.parametrize(
    ("curves", "options", "error", "message"),
    [
        ({}, {}, ValueError, "at least one name"),
        ({"a": [1.0, 2.0], "b": [1.0]}, {}, ValueError, "same length T"),
        ({"a": [[1.0, 2.0]]}, {}, ValueError, r"curves\['a'\] must have shape"),
        ({"a": [1.0, np.inf]}, {}, ValueError, "finite"),
        ({"a": [1.0, 2.0]}, {"marks": {"w": 2}}, ValueError, r"marks\['w'\] = 2 is outside"),
        ({"a": [1.0, 2.0]}, {"marks": [2]}, TypeError, "marks must map labels"),
        ({"a": [1.0, 2.0]}, {"positions": [1, 0]}, ValueError, "2 increasing numbers"),
        ({"a": [1.0, 2.0]}, {"positions": [0, 1, 2]}, ValueError, "2 increasing numbers"),
    ],
)
def test_ch13_bits_by_position_rejects_bad_input(curves, options, error, message):
    with pytest.raises(error, match=message):
        plotting.bits_by_position(curves, **options)


# ---------------------------------------------------------------- tile_schedule


def _causal_tiles(n_tokens: int, block: int) -> np.ndarray:
    n_blocks = -(-n_tokens // block)
    last_query = np.minimum(np.arange(1, n_blocks + 1) * block, n_tokens) - 1
    return np.arange(n_blocks)[None, :] * block <= last_query[:, None]  # (blocks, blocks)


COUNTS = {
    "naive": {"read": 180_224, "written": 147_456},
    "tiled": {"read": 98_304, "written": 16_640},
}


def test_ch13_tile_schedule_numbers_the_computed_tiles_in_order_and_hatches_the_rest():
    schedule = _causal_tiles(256, 64)
    fig = plotting.tile_schedule(schedule, block_q=64, block_k=64, counts=COUNTS)
    grid_ax, bar_ax = fig.axes
    numbers = {(int(t.get_position()[1]), int(t.get_position()[0])): t.get_text()
               for t in grid_ax.texts}  # fmt: skip
    expected_order = np.argwhere(schedule)  # row-major: query blocks outer, key blocks inner
    assert numbers == {(i, j): str(n + 1) for n, (i, j) in enumerate(expected_order)}
    hatched = [p for p in grid_ax.patches if p.get_hatch()]
    assert len(hatched) == (~schedule).sum() == 6
    assert all(not schedule[int(p.get_y() + 0.5), int(p.get_x() + 0.5)] for p in hatched)
    assert grid_ax.get_xlabel() == "key block (64 keys each)"
    assert grid_ax.get_ylabel() == "query block (64 queries each)"
    assert grid_ax.get_title().startswith("10 of 16 tiles computed")
    # The bars: read and written of each method, their values printed compactly.
    heights = [bar.get_height() for bar in bar_ax.patches]
    assert heights == [180_224, 98_304, 147_456, 16_640]
    printed = [t.get_text() for t in bar_ax.texts]
    assert printed == ["180 k", "98.3 k", "147 k", "16.6 k"]
    assert [t.get_text() for t in bar_ax.get_xticklabels()] == ["naive", "tiled"]
    assert bar_ax.get_ylabel() == "numbers moved"
    _fits_a_phone(fig)


def test_ch13_tile_schedule_without_counts_and_on_a_large_grid():
    fig = plotting.tile_schedule(np.ones((2, 3), dtype=bool), block_q=4, block_k=2)
    assert len(fig.axes) == 1
    assert [t.get_text() for t in fig.axes[0].texts] == ["1", "2", "3", "4", "5", "6"]
    large = plotting.tile_schedule(_causal_tiles(1024, 64), block_q=64, block_k=64)
    assert not large.axes[0].texts  # 16 × 16 tiles: too small for numbers
    assert large.axes[0].get_title().startswith("136 of 256 tiles computed\n(computed row by row")
    _fits_a_phone(large)


def test_ch13_compact_numbers_read_as_on_a_bar():
    assert [_compact(n) for n in (512, 66_560, 2_293_760, 1.2e9)] == [
        "512",
        "66.6 k",
        "2.29 M",
        "1.2 G",
    ]


@pytest.mark.parametrize(
    ("schedule", "sizes", "counts", "error", "message"),
    [
        (np.ones((2, 2)), (64, 64), None, TypeError, "schedule must be boolean"),
        (np.ones(2, dtype=bool), (64, 64), None, ValueError, "query blocks, key blocks"),
        (np.ones((17, 2), dtype=bool), (64, 64), None, ValueError, "at most 16"),
        (np.ones((2, 2), dtype=bool), (0, 64), None, ValueError, "block_q must be at least 1"),
        (np.ones((2, 2), dtype=bool), (64, 6.4), None, TypeError, "block_k must be a whole"),
        (np.ones((2, 2), dtype=bool), (64, 64), {"a": {"read": 1}}, ValueError, "'written'"),
        (np.ones((2, 2), dtype=bool), (64, 64), {"a": {"read": 1, "written": -1}},
         ValueError, r"counts\['a'\]\['written'\] must be at least 0"),
    ],
)  # fmt: skip
def test_ch13_tile_schedule_rejects_bad_input(schedule, sizes, counts, error, message):
    with pytest.raises(error, match=message):
        plotting.tile_schedule(schedule, block_q=sizes[0], block_k=sizes[1], counts=counts)


# ---------------------------------------------------------------- traffic_by_length


def test_ch13_traffic_by_length_draws_log_log_lines_and_the_ratio_at_the_longest():
    lengths = 2 ** np.arange(8, 15)
    naive = 4.0 * lengths**2 + 4 * 64 * lengths
    tiled = 2.0 * lengths**2 + 3 * 64 * lengths
    fig = plotting.traffic_by_length(
        lengths, {"naive": naive, "tiled": tiled}, ylabel="numbers moved"
    )
    ax = fig.axes[0]
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    np.testing.assert_array_equal(ax.lines[0].get_ydata(), naive)
    np.testing.assert_array_equal(ax.lines[1].get_ydata(), tiled)
    ratio = f"{naive[-1] / tiled[-1]:.1f}×"
    assert [t.get_text() for t in ax.texts if t.get_gid() == "ratio"] == [ratio]
    assert ax.get_title().splitlines() == [
        "memory traffic against sequence length",
        f"(naive ÷ tiled at 16,384 tokens: {ratio})",
    ]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("sequence length T (tokens)", "numbers moved")
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["naive", "tiled"]
    _fits_a_phone(fig)


def test_ch13_traffic_by_length_with_one_method_writes_no_ratio():
    fig = plotting.traffic_by_length([1, 2], {"naive": [4.0, 16.0]}, ylabel="bytes")
    assert not fig.axes[0].texts
    assert fig.axes[0].get_title() == "memory traffic against sequence length"


@pytest.mark.parametrize(
    ("lengths", "traffic", "message"),
    [
        ([1], {"a": [1.0]}, "at least 2 positive"),
        ([0, 2], {"a": [1.0, 2.0]}, "at least 2 positive"),
        ([1, 2], {}, "at least one method"),
        ([1, 2], {"a": [1.0, 0.0]}, r"traffic\['a'\] must hold 2 positive"),
        ([1, 2], {"a": [1.0, 2.0, 3.0]}, r"got shape \(3,\)"),
    ],
)
def test_ch13_traffic_by_length_rejects_bad_input(lengths, traffic, message):
    with pytest.raises(ValueError, match=message):
        plotting.traffic_by_length(lengths, traffic, ylabel="y")


# ---------------------------------------------------------------- decode_bytes


def test_ch13_decode_bytes_draws_the_weights_and_weights_plus_each_cache_in_gib():
    lengths = np.arange(0, 32_769, 1024)
    per_token = {32: 2 * 32 * 32 * 128 * 2, 8: 2 * 32 * 8 * 128 * 2}  # 2 L H_kv D_h, 2 bytes
    caches = {f"H_kv = {n}": 16 * lengths * size for n, size in per_token.items()}
    weights = 2 * 8.03e9
    fig = plotting.decode_bytes(lengths, weights, caches)
    ax = fig.axes[0]
    weights_line, *cache_lines = ax.lines
    assert list(weights_line.get_ydata()) == [weights / 2**30] * 2
    for line, cache in zip(cache_lines, caches.values(), strict=True):
        np.testing.assert_allclose(line.get_ydata(), (weights + cache) / 2**30)
        np.testing.assert_array_equal(line.get_xdata(), lengths)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "weights alone (15 GiB)",
        "weights + cache, H_kv = 32",
        "weights + cache, H_kv = 8",
    ]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("context length (tokens)", "GiB read per step")
    assert ax.get_title() == "bytes one decoding step reads"
    ticks = [tick for tick in ax.get_xticks() if 0 <= tick <= 32_768]
    assert ticks == [0, 8192, 16_384, 24_576, 32_768]  # powers of two tokens
    _fits_a_phone(fig)


@pytest.mark.parametrize(
    ("lengths", "weights", "caches", "error", "message"),
    [
        ([0, 1], "1", {"a": [0, 1]}, TypeError, "weights_bytes must be a number"),
        ([0, 1], 0.0, {"a": [0, 1]}, ValueError, "weights_bytes must be positive"),
        ([0, 1], 1.0, {}, ValueError, "at least one name"),
        ([-1, 1], 1.0, {"a": [0, 1]}, ValueError, "context_lengths must not be negative"),
        ([0, 1], 1.0, {"a": [0, 1, 2]}, ValueError, r"cache_bytes\['a'\] must hold 2"),
        ([0, 1], 1.0, {"a": [0, -1]}, ValueError, "non-negative"),
    ],
)
def test_ch13_decode_bytes_rejects_bad_input(lengths, weights, caches, error, message):
    with pytest.raises(error, match=message):
        plotting.decode_bytes(lengths, weights, caches)


def _tril(n: int) -> np.ndarray:
    return np.tril(np.ones((n, n), dtype=bool))


_CH13_FIGURES = {
    "rotary_step_flow": lambda **kw: plotting.rotary_step_flow(
        [1.0, 0.0], [0.0, 1.0], np.eye(2), np.array([0, 1]), [0.0, 0.71], position=1, **kw
    ),
    "kv_head_groups": lambda **kw: plotting.kv_head_groups(
        {"multi-head": np.arange(8), "grouped-query": np.repeat([0, 1], 4)}, **kw
    ),
    "window_masks": lambda **kw: plotting.window_masks(
        {"causal": _tril(10), "window 4": _tril(10) & ~_tril(10).T | np.eye(10, dtype=bool),
         "window 4 + 1 sink": _tril(10)}, **kw
    ),
    "bits_by_position": lambda **kw: plotting.bits_by_position(
        {"causal": [3.0, 2.0, 1.5], "window 2": [3.0, 2.5, 2.5]}, marks={"trained": 1},
        legend_columns=2, **kw
    ),
    "tile_schedule": lambda **kw: plotting.tile_schedule(
        _tril(4), block_q=64, block_k=64,
        counts={"naive": {"read": 9, "written": 8}, "tiled": {"read": 5, "written": 1}}, **kw
    ),
    "traffic_by_length": lambda **kw: plotting.traffic_by_length(
        [256, 512], {"naive": [4e5, 1.6e6], "tiled": [1e5, 2e5]}, ylabel="numbers moved", **kw
    ),
    "decode_bytes": lambda **kw: plotting.decode_bytes(
        [0, 1024], 2**30, {"H_kv = 8": [0, 2**30], "H_kv = 1": [0, 2**27]}, **kw
    ),
}  # fmt: skip


def _words(fig: Figure) -> set[str]:
    words = (word for text in _drawn_texts(fig) for word in text.get_text().split())
    return {word for word in words if word[0].isalpha()}  # not its numbers


@pytest.mark.parametrize("name", sorted(_CH13_FIGURES))
def test_ch13_figures_drawn_for_a_phone_fit_its_column_and_keep_every_word(name):
    laptop = _CH13_FIGURES[name]()
    phone = _CH13_FIGURES[name](layout="phone")
    laptop, phone = getattr(laptop, "figure", laptop), getattr(phone, "figure", phone)
    assert hasattr(laptop, "course_phone")  # the notebook shows both renderings
    assert phone.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
    assert min(t.get_fontsize() for t in _drawn_texts(phone)) >= 8
    assert _words(laptop) <= _words(phone)


def test_ch13_phone_renderings_stack_the_panels_and_put_legends_under_the_plot():
    tiles = _CH13_FIGURES["tile_schedule"](layout="phone")
    (grid_ax, bar_ax) = tiles.axes
    assert grid_ax.get_position().y0 > bar_ax.get_position().y1  # the bars below the tiles
    masks = _CH13_FIGURES["window_masks"](layout="phone")
    assert len({round(ax.get_position().x0, 3) for ax in masks.axes}) == 1  # one a row
    bits = _CH13_FIGURES["bits_by_position"](layout="phone")
    assert bits.axes[0].get_legend() is None and len(bits.legends) == 1  # under the figure
    laptop = _CH13_FIGURES["bits_by_position"]()
    assert laptop.axes[0].get_legend()._ncols == 2 and not laptop.legends
