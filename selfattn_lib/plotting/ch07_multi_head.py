"""Figures of chapter 7, multi-head attention: the computed diagram of a whole multi-head
layer (split into heads, per-head attention, merge, W_O), the grids of numbers that follow a
split into heads, and the heads' weights side by side.

The diagram draws the arrays the notebook computed and computes nothing itself; its grids take
the course's role colours (queries blue, keys vermillion, values green)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from selfattn_lib.plotting.base import (
    SEQUENTIAL_CMAP,
    bar_chart,
    column_width,
    current_layout,
    for_the_page,
    new_axes,
    small_multiples,
    text_colour,
)
from selfattn_lib.plotting.diagrams import Diagram, Grid, flow, grid_array

HEAD_LAYOUTS: tuple[str, ...] = ("T D", "T H D_h", "H T D_h")
# Light tints of the Okabe–Ito colours, one per head: black text stays readable on them.
_HEAD_TINTS: tuple[str, ...] = ("#9CC3E0", "#EFB28A", "#8FD4BF", "#E7BCD5", "#F3D08A", "#B9DFF4")
# The narrowest cell a grid is drawn with on a phone: its 8-point label ("t1 f4") needs 0.3 in.
_PHONE_CELL = 0.36


@for_the_page
def head_layout(
    values: np.ndarray,
    layout: str,
    *,
    n_heads: int,
    tokens: Sequence[str] | None = None,
    title: str = "",
    ax: Axes | None = None,
) -> Figure:
    """Draw an array of feature *numbers* as labelled grids, to follow a split into heads.

    ``values`` holds the numbers ``0 … T·D − 1`` of a ``(T, D)`` array — entry ``t·D + f`` is
    feature ``f`` of token ``t`` — rearranged as ``layout`` says:

    - ``"T D"``: one grid, a row per token (the input, or the merged heads);
    - ``"T H D_h"``: one small grid per token, a row per head (after the reshape);
    - ``"H T D_h"``: one grid per head, a row per token (after the transpose).

    Every cell shows its number and, below it, where it came from (``t1 f4`` is feature 4 of
    token 1). Its colour is the head that feature belongs to, ``f // D_h``, so a head's grid
    with two colours holds features of another head, and a row whose labels name two tokens
    mixes two tokens. The grids stand in one row; drawn for a phone, they wrap into as many
    rows as keep a cell wide enough for its label.

    Shapes
    ------
    ``values``: ``(T, D)``, ``(T, H, D_h)`` or ``(H, T, D_h)`` (as ``layout`` says), a
    permutation of ``0 … T·D − 1``; ``tokens``: ``T`` labels (default ``t0, t1, …``).

    Examples
    --------
    >>> numbers = np.arange(8).reshape(2, 4)  # T = 2 tokens, D = 4 features
    >>> fig = head_layout(numbers.reshape(2, 2, 2).swapaxes(0, 1), "H T D_h", n_heads=2)
    >>> [text.get_text() for text in fig.axes[0].texts if text.get_text().startswith("head")]
    ['head 0', 'head 1']
    """
    from matplotlib.patches import Rectangle

    if layout not in HEAD_LAYOUTS:
        raise ValueError(f"layout must be one of {HEAD_LAYOUTS}, got {layout!r}")
    array = np.asarray(values)
    expected_ndim = len(layout.split())
    if array.ndim != expected_ndim:
        raise ValueError(
            f"values must have shape ({', '.join(layout.split())}) for layout {layout!r}, "
            f"got shape {array.shape}"
        )
    if layout == "T D":
        n_tokens, d_model = array.shape
    elif layout == "T H D_h":
        n_tokens, d_model = array.shape[0], array.shape[1] * array.shape[2]
    else:
        n_tokens, d_model = array.shape[1], array.shape[0] * array.shape[2]
    if isinstance(n_heads, bool) or not isinstance(n_heads, int) or n_heads < 1:
        raise ValueError(f"n_heads must be a positive integer, got {n_heads!r}")
    if d_model % n_heads or (layout != "T D" and array.shape[layout.split().index("H")] != n_heads):
        raise ValueError(
            f"values of shape {array.shape} in layout {layout!r} do not hold n_heads = {n_heads} "
            f"heads of D = {d_model} features"
        )
    if not np.array_equal(np.sort(array, axis=None), np.arange(n_tokens * d_model)):
        raise ValueError(
            f"values must hold each number 0 … T·D − 1 = {n_tokens * d_model - 1} once "
            "(entry t·D + f stands for feature f of token t)"
        )
    if n_heads > len(_HEAD_TINTS):
        raise ValueError(f"at most {len(_HEAD_TINTS)} heads can be coloured, got {n_heads}")
    tokens = [f"t{t}" for t in range(n_tokens)] if tokens is None else list(tokens)
    if len(tokens) != n_tokens:
        raise ValueError(f"tokens must hold T = {n_tokens} labels, got {len(tokens)}")
    d_head = d_model // n_heads

    if layout == "T D":
        blocks = array[None]  # (1, T, D)
        block_titles = [""]
        row_labels = tokens
        col_labels = [f"f{f}" for f in range(d_model)]
    elif layout == "T H D_h":
        blocks = array  # (T, H, D_h)
        block_titles = [f"token {label}" for label in tokens]
        row_labels = [f"head {h}" for h in range(n_heads)]
        col_labels = [str(i) for i in range(d_head)]
    else:
        blocks = array  # (H, T, D_h)
        block_titles = [f"head {h}" for h in range(n_heads)]
        row_labels = tokens
        col_labels = [str(i) for i in range(d_head)]
    n_blocks, n_rows, n_cols = blocks.shape
    gap, row_gap = 0.6, 1.3  # between grids side by side, and between rows of grids

    def span(per_row: int) -> float:
        return per_row * n_cols + (per_row - 1) * gap

    # A laptop's column holds all grids in a row; a phone's as many as keep a cell readable.
    per_row = n_blocks
    if current_layout() == "phone":
        while per_row > 1 and (column_width() - 1.2) / span(per_row) < _PHONE_CELL:
            per_row -= 1
    n_lines = -(-n_blocks // per_row)
    width = span(per_row)
    height = n_lines * n_rows + (n_lines - 1) * row_gap

    # A cell is 0.62 in wide, less if that would make the figure wider than the column; its
    # 8-point label ("t1 f4") needs about 0.3 in.
    cell = min(0.62, (column_width() - 1.2) / width)
    ax = new_axes((cell * width + 1.2, cell * height + 1.0), ax)
    for block, block_values in enumerate(blocks):
        left = block % per_row * (n_cols + gap)
        top = block // per_row * (n_rows + row_gap)
        for (row, col), number in np.ndenumerate(block_values):
            token, feature = divmod(int(number), d_model)
            ax.add_patch(
                Rectangle(
                    (left + col, top + row),
                    1,
                    1,
                    facecolor=_HEAD_TINTS[feature // d_head],
                    edgecolor="white",
                    linewidth=1.5,
                )
            )
            ax.text(
                left + col + 0.5,
                top + row + 0.42,
                str(int(number)),
                ha="center",
                va="center",
                fontsize=10,
                fontweight="bold",
                in_layout=False,  # inside its cell: the layout need not measure it (faster)
            )
            ax.text(
                left + col + 0.5,
                top + row + 0.78,
                f"t{token} f{feature}",
                ha="center",
                va="center",
                fontsize=8,
                in_layout=False,
            )
        ax.add_patch(
            Rectangle((left, top), n_cols, n_rows, fill=False, edgecolor="black", linewidth=1.2)
        )
        if layout == "T D":
            for boundary in range(d_head, d_model, d_head):  # where one head's slice ends
                ax.plot(
                    [boundary, boundary],
                    [top, top + n_rows],
                    color="black",
                    linewidth=1.2,
                    linestyle="--",
                )
        if block_titles[block]:
            ax.text(
                left + n_cols / 2,
                top - 0.25,
                block_titles[block],
                ha="center",
                va="bottom",
                fontsize=9,
            )
        for col, label in enumerate(col_labels):
            ax.text(
                left + col + 0.5,
                top + n_rows + 0.15,
                label,
                ha="center",
                va="top",
                fontsize=8,
                color="dimgray",
            )
    for line in range(n_lines):
        for row, label in enumerate(row_labels):
            top = line * (n_rows + row_gap)
            ax.text(-0.15, top + row + 0.5, label, ha="right", va="center", fontsize=8)
    ax.set_xlim(-0.15 - 0.18 * max(len(label) for label in row_labels), width + 0.05)
    ax.set_ylim(height + 0.7, -0.9 if any(block_titles) else -0.3)
    ax.set_aspect("equal")
    ax.axis("off")
    axis_note = {
        "T D": "feature",
        "T H D_h": "feature within the head",
        "H T D_h": "feature within the head",
    }[layout]
    ax.text(width / 2, height + 0.65, axis_note, ha="center", va="top", fontsize=8, color="dimgray")
    ax.set_title(title, fontsize=10)
    return ax.figure


@for_the_page
def split_steps(
    steps: Sequence[np.ndarray],
    n_heads: int,
    tokens: Sequence[str] | None = None,
    height: float = 6.6,
) -> Figure:
    """Draw a split into heads as three :func:`head_layout` panels, top to bottom: one
    sequence's numbers ``x``, its reshape and its transpose, titled with their shapes (batch
    of one). The caller computes the three arrays; this only draws them. Drawn for a phone,
    the figure is as tall as its wrapped grids need (``height`` is a laptop's).

    Shapes
    ------
    ``steps``: ``(T, D)``, ``(T, H, D_h)`` and ``(H, T, D_h)``, in that order.

    Examples
    --------
    >>> x = np.arange(12).reshape(2, 6)
    >>> split = x.reshape(2, 2, 3)
    >>> fig = split_steps([x, split, split.transpose(1, 0, 2)], 2)
    >>> fig.axes[2].get_title()
    '3. transpose to (B, H, T, D_h) = (1, 2, 2, 3)'
    """
    if len(steps) != 3:
        raise ValueError(f"steps must hold x, its reshape and its transpose, got {len(steps)}")
    fig = Figure(figsize=(column_width(), height), layout="constrained")
    panels = fig.subplots(3, 1, height_ratios=[5.0, 3.6, 5.6])
    names = ["1. x: (B, T, D)", "2. reshape to (B, T, H, D_h)", "3. transpose to (B, H, T, D_h)"]
    for ax, values, layout, name in zip(panels, steps, HEAD_LAYOUTS, names, strict=True):
        shape = ", ".join(str(n) for n in (1, *np.shape(values)))
        title = f"{name} = ({shape})"
        head_layout(values, layout, n_heads=n_heads, tokens=tokens, title=title, ax=ax)
    if current_layout() == "phone":
        _fit_heights(fig, panels)
    return fig


def _fit_heights(fig: Figure, panels: Sequence[Axes]) -> None:
    """Make a column of :func:`head_layout` panels (drawn with equal aspect) as tall as each
    needs at the figure's width: its grids, its title and the labels under it."""
    width = fig.get_figwidth() - 0.2
    heights = []
    for ax in panels:
        left, right = ax.get_xlim()
        bottom, top = ax.get_ylim()
        heights.append(abs(bottom - top) * width / abs(right - left) + 0.3)
    panels[0].get_gridspec().set_height_ratios(heights)
    fig.set_figheight(sum(heights))


@for_the_page
def right_and_wrong_split(
    right: np.ndarray,
    wrong: np.ndarray,
    n_heads: int,
    tokens: Sequence[str] | None = None,
    *,
    titles: Sequence[str] = (
        "right: reshape, then transpose",
        "WRONG: reshape straight to (H, T, D_h)",
    ),
) -> Figure:
    """Two splits into heads as :func:`head_layout` panels in the ``"H T D_h"`` layout, side
    by side (one above the other on a phone): the right one (reshape, then transpose) and a
    wrong one the caller made (say, a reshape straight to ``(H, T, D_h)``), whose head
    grids mix two colours. The caller computes both arrays; this only draws them.

    Shapes
    ------
    ``right``, ``wrong``: ``(H, T, D_h)``; ``tokens``: ``T`` labels; ``titles``: 2 strings.

    Examples
    --------
    >>> x = np.arange(12).reshape(2, 6)
    >>> fig = right_and_wrong_split(x.reshape(2, 2, 3).swapaxes(0, 1), x.reshape(2, 2, 3), 2)
    >>> [ax.get_title() for ax in fig.axes]
    ['right: reshape, then transpose', 'WRONG: reshape straight to (H, T, D_h)']
    """
    if len(titles) != 2:
        raise ValueError(f"titles must name the 2 panels, got {len(titles)}")
    if current_layout() == "phone":
        fig = Figure(figsize=(column_width(), 6.0), layout="constrained")
        panels = fig.subplots(2, 1)
    else:
        fig = Figure(figsize=(column_width(), 3.3), layout="constrained")
        panels = fig.subplots(1, 2)
    for ax, values, title in zip(panels, (right, wrong), titles, strict=True):
        head_layout(values, "H T D_h", n_heads=n_heads, tokens=tokens, title=title, ax=ax)
    if current_layout() == "phone":
        _fit_heights(fig, panels)
    return fig


@for_the_page
def head_weights(
    weights: np.ndarray,
    tokens: Sequence[str],
    *,
    key_tokens: Sequence[str] | None = None,
    titles: Sequence[str] | None = None,
    colorbar: bool = True,
    axes: Sequence[Axes] | None = None,
    annotate: bool = True,
) -> Figure:
    """Draw the attention weights of several heads side by side, on one colour scale.

    Every panel is a heatmap (queries as rows, keys as columns, weights written in the cells
    unless ``annotate=False``, for sequences too long to read numbers in)
    with colours fixed to ``[0, 1]``, so the same colour means the same weight in every head;
    one colour bar serves all panels. A panel just right of the previous one in the same row
    leaves the query labels to it. Without ``axes`` the figure is at most as wide as the
    book's column, with at most three panels in a row (drawn for a phone: one panel a row, the
    colour bar under them). With ``colorbar=False`` the panels get
    no colour bar: draw several calls' panels into one figure, then give them all one with
    :func:`~selfattn_lib.plotting.shared_colorbar`.

    Shapes
    ------
    ``weights``: ``(H, T_q, T_k)``; ``tokens``: ``T_q`` labels; ``key_tokens``: ``T_k``
    labels (default ``tokens``); ``titles``: ``H`` strings (default ``head 0, head 1, …``);
    ``axes``: ``H`` axes.

    Examples
    --------
    >>> fig = head_weights(np.full((2, 3, 3), 1 / 3), ["a", "b", "c"])
    >>> [ax.get_title() for ax in fig.axes]  # two panels, then the shared colour bar
    ['head 0', 'head 1', '']
    """
    values = np.asarray(weights, dtype=np.float64)
    if values.ndim != 3:
        raise ValueError(f"weights must have shape (H, T_q, T_k), got shape {values.shape}")
    n_heads, t_q, t_k = values.shape
    key_tokens = tokens if key_tokens is None else key_tokens
    if len(tokens) != t_q or len(key_tokens) != t_k:
        raise ValueError(
            f"labels do not fit weights of shape {values.shape}: {len(tokens)} tokens and "
            f"{len(key_tokens)} key_tokens"
        )
    titles = [f"head {h}" for h in range(n_heads)] if titles is None else list(titles)
    if len(titles) != n_heads:
        raise ValueError(f"titles must hold H = {n_heads} strings, got {len(titles)}")
    if not np.isfinite(values).all() or values.min() < 0 or values.max() > 1 + 1e-9:
        raise ValueError("weights must lie in [0, 1]")
    # Drawn for a phone, a figure of its own stacks its panels, the colour bar under them (a
    # caller's axes keep the caller's layout).
    phone = current_layout() == "phone" and axes is None
    if axes is None:
        columns = 1 if phone else min(3, n_heads)
        # A cell is 0.55 in wide, less if a row of panels would be wider than the column
        # (the query labels and the colour bar take about 1.6 in, the gaps 0.4 in a panel;
        # on a phone the colour bar lies under the panels, and the labels take 1.0 in).
        margin = 1.0 if phone else 1.6
        width = min(column_width(), columns * (0.55 * t_k + 0.4) + margin)
        cell = ((width - margin) / columns - 0.4) / t_k
        _, axes = small_multiples(
            n_heads, columns=columns, panel_height=cell * t_q + 1.3, width=width
        )
    if len(axes) != n_heads:
        raise ValueError(f"axes must hold H = {n_heads} axes, got {len(axes)}")
    for head, ax in enumerate(axes):
        image = ax.imshow(values[head], cmap=SEQUENTIAL_CMAP, vmin=0.0, vmax=1.0)
        single = all(len(str(token)) == 1 for token in key_tokens)  # characters: upright
        ax.set_xticks(
            range(t_k),
            labels=list(key_tokens),
            rotation=0 if single else 45,
            ha="center" if single else "right",
        )
        ax.set_yticks(range(t_q), labels=list(tokens))
        ax.set_xlabel("key")
        if head and _right_of(ax, axes[head - 1]):
            ax.tick_params(labelleft=False)  # the panel on its left names the same queries
        else:
            ax.set_ylabel("query")
        ax.set_title(titles[head], fontsize=10)
        if not annotate:
            continue
        for (row, col), value in np.ndenumerate(values[head]):
            colour = text_colour(image.cmap(image.norm(value)))
            ax.text(
                col,
                row,
                f"{value:.2f}",
                ha="center",
                va="center",
                fontsize=8,
                color=colour,
                in_layout=False,  # inside its cell: the layout need not measure it (faster)
            )
    if colorbar and phone:
        axes[0].figure.colorbar(
            image, ax=list(axes), label="weight", location="bottom", shrink=0.9, aspect=30
        )
    elif colorbar:
        axes[0].figure.colorbar(image, ax=list(axes), label="weight", shrink=0.9)
    return axes[0].figure


def _right_of(ax: Axes, other: Axes) -> bool:
    """Whether ``ax`` is the panel just right of ``other`` in the same row of the same grid."""
    spec, left = ax.get_subplotspec(), other.get_subplotspec()
    return (
        spec is not None
        and left is not None
        and spec.get_gridspec() is left.get_gridspec()
        and spec.rowspan == left.rowspan
        and spec.colspan.start == left.colspan.stop
    )


_SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


@for_the_page
def multi_head_flow(
    tokens: Sequence[str],
    x: np.ndarray,
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    q_heads: np.ndarray,
    k_heads: np.ndarray,
    v_heads: np.ndarray,
    weights: np.ndarray,
    head_outputs: np.ndarray,
    merged: np.ndarray,
    output: np.ndarray,
) -> Diagram:
    """Draw a multi-head self-attention layer on one sentence, step by step: the tokens ``x``;
    their queries, keys and values ``q``, ``k``, ``v``; the same cut into heads by
    ``split_heads`` (one ``T × D_h`` block per head, ``Q₀``, ``K₀``, ``V₀``, …); every head's
    weights ``A₀, A₁, …`` and outputs ``Z₀, Z₁, …``; their concatenation by ``merge_heads``
    and the layer's output, ``Concat(Z₀, …) W_O``. The figure draws the arrays it is given
    and computes nothing; the grids take the course's role colours.

    Shapes
    ------
    ``x``, ``q``, ``k``, ``v``, ``merged``, ``output``: ``(T, D)``; ``q_heads``,
    ``k_heads``, ``v_heads``, ``head_outputs``: ``(H, T, D_h)``; ``weights``:
    ``(H, T, T)``; ``tokens``: ``T`` labels.

    Examples
    --------
    >>> from selfattn_lib.plotting.diagrams import read_back
    >>> x = np.eye(2)
    >>> heads = x.reshape(2, 2, 1).swapaxes(0, 1)  # (H, T, D_h) = (2, 2, 1)
    >>> a = np.full((2, 2, 2), 0.5)
    >>> d = multi_head_flow(["a", "b"], x, x, x, x, heads, heads, heads, a, a @ heads,
    ...                     x, x)
    >>> read_back(d.figure, "A₁").tolist()
    [[0.5, 0.5], [0.5, 0.5]]
    """
    x = grid_array("x", x, (None, None))
    n_tokens, d_model = x.shape
    if len(tokens) != n_tokens:
        raise ValueError(f"tokens must have {n_tokens} labels, got {len(tokens)}")
    tokens = list(tokens)
    q, k, v = (
        grid_array(name, a, (n_tokens, d_model)) for name, a in zip("qkv", (q, k, v), strict=True)
    )
    q_heads = grid_array("q_heads", q_heads, (None, n_tokens, None))
    n_heads, _, d_head = q_heads.shape
    if n_heads * d_head != d_model:
        raise ValueError(
            f"q_heads {q_heads.shape} must hold H heads of D_h features with H · D_h = "
            f"D = {d_model}"
        )
    head_shape = (n_heads, n_tokens, d_head)
    k_heads = grid_array("k_heads", k_heads, head_shape)
    v_heads = grid_array("v_heads", v_heads, head_shape)
    weights = grid_array("weights", weights, (n_heads, n_tokens, n_tokens))
    head_outputs = grid_array("head_outputs", head_outputs, head_shape)
    merged = grid_array("merged", merged, (n_tokens, d_model))
    output = grid_array("output", output, (n_tokens, d_model))

    def sub(h: int) -> str:
        return str(h).translate(_SUBSCRIPTS)

    items: list[Grid | str] = [
        Grid("X", x, rows=tokens, fmt=".1f", note="the tokens"),
        Grid("Q", q, role="query", fmt=".1f", note="X W_Q", row_names=tokens),
        Grid("K", k, role="key", fmt=".1f", note="X W_K", row_names=tokens),
        Grid("V", v, role="value", fmt=".1f", note="X W_V", row_names=tokens),
        "split_heads →",
    ]
    for h in range(n_heads):
        items += [
            Grid(f"Q{sub(h)}", q_heads[h], role="query", fmt=".1f", row_names=tokens),
            Grid(f"K{sub(h)}", k_heads[h], role="key", fmt=".1f", row_names=tokens),
            Grid(f"V{sub(h)}", v_heads[h], role="value", fmt=".1f", row_names=tokens),
        ]
    items.append("softmax →")
    for h in range(n_heads):
        items.append(
            Grid(
                f"A{sub(h)}",
                weights[h],
                rows=tokens if h == 0 else (),
                row_names=tokens,
                cols=tokens,
                role="weights",
                note=f"softmax(Q{sub(h)}K{sub(h)}ᵀ/√{d_head})",
            )
        )
    items.append("× Vₕ →")
    for h in range(n_heads):
        items.append(
            Grid(
                f"Z{sub(h)}",
                head_outputs[h],
                role="output",
                note=f"A{sub(h)} V{sub(h)}",
                row_names=tokens,
            )
        )
    concat = ", ".join(f"Z{sub(h)}" for h in range(n_heads))
    items += [
        "merge_heads →",
        Grid("Z", merged, role="output", note=f"Concat({concat})", row_names=tokens),
        "× W_O =",
        Grid("Y", output, rows=tokens, role="output", note="the layer's output"),
    ]
    return flow(
        *items,
        title=(
            f"multi_head_attention: T = {n_tokens}, D = {d_model}, "
            f"H = {n_heads} heads of D_h = {d_head}"
        ),
    )


@for_the_page
def head_count_times(
    times_ms: Sequence[float],
    head_counts: Sequence[int],
    *,
    title: str = "",
    xlabel: str = "number of heads",
    ylabel: str = "time (ms)",
) -> Figure:
    """A bar per number of heads ``H``: the measured time of one forward pass, written above
    its bar (the y axis reaches 15 % above the tallest bar, room for the numbers). The
    caller measures; this only draws. Drawn for a phone, a long title wraps at its commas.

    Shapes
    ------
    ``times_ms``: ``(n,)``, one time per entry of ``head_counts`` ``(n,)``.

    Examples
    --------
    >>> fig = head_count_times([0.5, 0.6], [1, 2])
    >>> [label.get_text() for label in fig.axes[0].get_xticklabels()]
    ['H = 1', 'H = 2']
    """
    times = np.asarray(times_ms, dtype=np.float64)
    if times.ndim != 1 or len(times) != len(head_counts) or not len(times):
        raise ValueError(
            f"one time per head count: times_ms has shape {times.shape}, "
            f"there are {len(head_counts)} head counts"
        )
    if current_layout() == "phone" and len(title) > 30:
        first, _, rest = title.partition(", ")
        title = f"{first},\n{rest}" if rest else title
    return bar_chart(
        times,
        [f"H = {n}" for n in head_counts],
        title=title,
        xlabel=xlabel,
        ylabel=ylabel,
        ylim=(0.0, 1.15 * float(times.max())),
    )
