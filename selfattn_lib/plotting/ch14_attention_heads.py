"""Figures of chapter 14, what attention heads learn: the induction rule drawn with its
numbers, the phase change in the loss, each head's attention map with its scores, the loss
with heads switched off, and what a head writes (its OV circuit).

Every figure draws arrays that the chapter's concept module (``induction``) computed, handed
over as plain NumPy arrays and numbers; none is imported here. Figures are at most as wide
as the book's column, with at most two panels side by side and no text under 8.5 points, so
that they stay legible when a phone scales them down to about 360 pixels.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure

from selfattn_lib.plotting.base import (
    COLUMN_WIDTH,
    DIVERGING_CMAP,
    OKABE_ITO,
    PHONE_COLUMN_WIDTH,
    current_layout,
    for_the_page,
    new_axes,
    small_multiples,
)
from selfattn_lib.plotting.ch07_multi_head import head_weights
from selfattn_lib.plotting.ch13_modern_attention import (
    SMALLEST_FONT,
    _legend,
    _vector,
    _whole_number,
)
from selfattn_lib.plotting.diagrams import Diagram, Grid, flow


def _tokens(name: str, values: object, length: int | None = None) -> np.ndarray:
    """``values`` as a 1-D array of whole numbers (of ``length`` entries if given)."""
    array = np.asarray(values)
    if array.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold whole numbers (token ids), got dtype {array.dtype}")
    if array.ndim != 1 or array.size == 0 or (length is not None and array.size != length):
        wanted = "(n,)" if length is None else f"({length},)"
        raise ValueError(f"{name} must have shape {wanted}, got {array.shape}")
    return array.astype(np.int64)


@for_the_page
def induction_flow(
    tokens: np.ndarray,
    reads: np.ndarray,
    attends_to: np.ndarray,
    predicted: np.ndarray,
    *,
    example: int,
    title: str = "",
) -> Diagram:
    """The induction rule on one repeated sequence, drawn with its numbers (a computed
    diagram): the ``tokens`` (a first half of ``n`` and its copy), the token that a
    previous-token head reads at each position (from position ``reads[i]``; ``–`` where
    ``reads[i]`` is -1, nothing), then for every query of the repeated half the key
    position its induction head attends to and the token it predicts.

    ``reads``, ``attends_to`` and ``predicted`` are whatever the notebook computed: the
    rule's answer (position ``i − 1``, key ``i − n + 1``, token ``tokens[i + 1]``) or a
    trained model's (the positions of its heads' largest weights, its most likely next
    token). The diagram's subtitle spells out the query at position ``example`` of the
    repeated half. Every number can be read back with
    :func:`~selfattn_lib.plotting.diagrams.read_back` (grids ``"tokens"``, ``"attends to"``,
    ``"predicts"``; ``"token before"`` holds strings).

    Shapes
    ------
    ``tokens``, ``reads``: ``(2n,)`` whole numbers; ``attends_to``, ``predicted``: ``(n,)``,
    one per query ``n … 2n − 1``; ``n`` at most 8, so that the rows fit the column.

    Examples
    --------
    >>> from selfattn_lib.plotting.diagrams import read_back
    >>> d = induction_flow([0, 5, 7, 0, 5, 7], [-1, 0, 1, 2, 3, 4], [1, 2, 3], [5, 7, 0],
    ...                    example=3)
    >>> read_back(d.figure, "attends to").tolist()
    [[1.0, 2.0, 3.0]]
    """
    tokens = _tokens("tokens", tokens)
    if tokens.size % 2 or not 4 <= tokens.size <= 16:
        raise ValueError(
            f"tokens must be a first half and its copy, 2n tokens with 2 ≤ n ≤ 8, got "
            f"{tokens.size} tokens"
        )
    n = tokens.size // 2
    if not (tokens[:n] == tokens[n:]).all():
        raise ValueError("tokens must repeat: the second half must equal the first")
    reads = _tokens("reads", reads, 2 * n)
    if ((reads < -1) | (reads > np.arange(2 * n))).any():
        raise ValueError(
            "reads must hold, for each position i, a position -1 … i (-1: nothing; attention "
            f"is causal), got {reads.tolist()}"
        )
    attends_to = _tokens("attends_to", attends_to, n)
    predicted = _tokens("predicted", predicted, n)
    if ((attends_to < 0) | (attends_to > np.arange(n, 2 * n))).any():
        raise ValueError(
            "attends_to must hold, for each query i = n … 2n − 1, a key position 0 … i "
            f"(attention is causal), got {attends_to.tolist()}"
        )
    example = _whole_number("example", example, smallest=n)
    if example >= 2 * n:
        raise ValueError(f"example must be a query of the repeated half, {n} … {2 * n - 1}")

    positions = [str(p) for p in range(2 * n)]
    before = ["–" if r < 0 else str(tokens[r]) for r in reads]
    queries = positions[n:]
    k = example - n
    subtitle = (
        f"query {example} holds {tokens[example]}; the earlier {tokens[example]} is at "
        f"{example - n}, so it attends to {attends_to[k]} and predicts {predicted[k]}"
    )
    shape, rows = (1, 2 * n), ()
    if current_layout() == "phone":  # 2n cells do not fit a phone: the halves one above
        # the other, a row per half; the position is the row's start plus the column.
        shape, rows, positions = (2, n), ("0 +", f"{n} +"), positions[:n]
        title = title.replace(": ", ":\n", 1) if len(title) > 40 else title
    return flow(
        Grid("tokens", tokens.reshape(shape), rows=rows, cols=positions, fmt=".0f",
             note="first half, then the copy"),
        "previous-token head →",
        Grid("token before", np.array(before).reshape(shape), rows=rows, cols=positions,
             role="key", note="written into each position"),
        "induction head →",
        Grid("attends to", attends_to, cols=queries, fmt=".0f", role="key",
             note="key position, per query"),
        "→",
        Grid("predicts", predicted, cols=queries, fmt=".0f", role="output",
             note="the token there, copied"),
        title=(title + "\n" if title else "") + subtitle,
    )  # fmt: skip


@for_the_page
def phase_change(
    first_half: np.ndarray,
    repeated_half: np.ndarray,
    *,
    guess_bits: float,
    phase_step: int | None = None,
    smooth: int = 25,
    title: str = "loss on each half during training",
) -> Figure:
    """The loss on the first half and on the repeated half at every training step (thin,
    light lines) and their running means over ``smooth`` steps (thick lines), with the cost
    of guessing among the possible tokens (``guess_bits``, dotted) and, if given, the step
    of the phase change (a dash-dotted vertical line).

    Shapes
    ------
    ``first_half``, ``repeated_half``: ``(S,)`` bits per token, one per step, ``S ≥ smooth``.

    Examples
    --------
    >>> fig = phase_change([6.0, 6.0, 6.0, 6.0], [6.0, 5.0, 1.0, 0.5], guess_bits=6.0,
    ...                    phase_step=3, smooth=2)
    >>> fig.axes[0].get_lines()[2].get_ydata().tolist()  # the repeated half, smoothed
    [5.5, 3.0, 0.75]
    """
    first = _vector("first_half", first_half)
    repeated = _vector("repeated_half", repeated_half, first.size)
    smooth = _whole_number("smooth", smooth)
    if smooth > first.size:
        raise ValueError(f"smooth = {smooth} is longer than the {first.size} steps drawn")
    if not np.isfinite(guess_bits) or guess_bits <= 0:
        raise ValueError(f"guess_bits must be a positive number of bits, got {guess_bits}")
    if phase_step is not None:
        phase_step = _whole_number("phase_step", phase_step)
        if phase_step > first.size:
            raise ValueError(f"phase_step = {phase_step} is after the last of {first.size} steps")

    steps = np.arange(1, first.size + 1)
    kernel = np.ones(smooth) / smooth
    # On a phone, taller: the legend goes under the plot.
    ax = new_axes((COLUMN_WIDTH * 0.8, 2.9 if current_layout() == "laptop" else 3.9))
    for index, (name, bits) in enumerate((("first half", first), ("repeated half", repeated))):
        colour = OKABE_ITO[index]
        mean = np.convolve(bits, kernel, mode="valid")
        ax.plot(
            steps[smooth - 1 :],
            mean,
            color=colour,
            linewidth=2.0,
            label=name,
            linestyle=("-", "--")[index],
        )
        ax.plot(steps, bits, color=colour, linewidth=0.6, alpha=0.3)
    # The thin lines are drawn after the thick ones: put the thick ones back on top.
    for line in ax.get_lines()[::2]:
        line.set_zorder(3)
    ax.axhline(
        guess_bits,
        color="#555555",
        linestyle=":",
        linewidth=1.5,
        label=f"guessing: {guess_bits:.2f} bits",
    )
    if phase_step is not None:
        ax.axvline(
            phase_step,
            color="#000000",
            linestyle="-.",
            linewidth=1.2,
            label=f"phase change: step {phase_step}",
        )
    ax.set_xlabel("training step")
    ax.set_ylabel("bits per token")
    ax.set_title(title)
    ax.set_xlim(0, first.size)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    _legend(ax, columns=2, loc="center right")
    return ax.figure


@for_the_page
def head_maps(
    weights: np.ndarray,
    tokens: Sequence[str],
    *,
    scores: Mapping[str, np.ndarray] | None = None,
    first_layer: int = 1,
    first_head: int = 0,
    columns: int = 2,
    phone_columns: int = 1,
) -> Figure:
    """Every head's attention weights on one sequence, as small multiples on one colour
    scale (viridis, ``[0, 1]``): one panel per head, titled ``layer l · head h`` and, below,
    each of ``scores`` for that head, two to a line (for instance its previous-token and
    prefix-matching scores). Layers are counted from ``first_layer`` (1, as the chapter counts
    them) and heads from ``first_head`` (0), so that a slice of the heads keeps its names.

    Shapes
    ------
    ``weights``: ``(L, H, T, T)``; ``tokens``: ``T`` labels; each of ``scores``: ``(L, H)``.

    Examples
    --------
    >>> fig = head_maps(np.full((1, 2, 2, 2), 0.5), ["a", "b"],
    ...                 scores={"prev": np.array([[0.5, 0.25]]), "x": np.ones((1, 2))})
    >>> [ax.get_title() for ax in fig.axes[:2]]
    ['layer 1 · head 0\\nprev 0.50 · x 1.00', 'layer 1 · head 1\\nprev 0.25 · x 1.00']
    """
    values = np.asarray(weights, dtype=np.float64)
    if values.ndim != 4 or values.shape[2] != values.shape[3]:
        raise ValueError(f"weights must have shape (L, H, T, T), got {values.shape}")
    n_layers, n_heads, n_tokens, _ = values.shape
    scores = {} if scores is None else dict(scores)
    for name, table in scores.items():
        if np.shape(table) != (n_layers, n_heads):
            raise ValueError(
                f"scores[{name!r}] must have shape (L, H) = {(n_layers, n_heads)}, "
                f"got {np.shape(table)}"
            )
    first_layer = _whole_number("first_layer", first_layer)
    first_head = _whole_number("first_head", first_head, smallest=0)
    columns = _whole_number("columns", columns)
    phone_columns = _whole_number("phone_columns", phone_columns)
    if columns > 4 or phone_columns > 2:
        raise ValueError(
            "at most 4 panels side by side fit the column, and 2 a phone's: got "
            f"columns = {columns}, phone_columns = {phone_columns}"
        )

    n_panels = n_layers * n_heads
    width = min(COLUMN_WIDTH, 0.16 * n_tokens * min(columns, n_panels) + 2.0)
    phone = current_layout() == "phone"
    shown = min(phone_columns if phone else columns, n_panels)  # panels in a row
    # A panel is square: no taller than the row leaves it wide (the query labels and the
    # colour bar take about 1.6 in), plus 1.05 in for its title and key labels.
    side = min(0.13 * n_tokens, ((PHONE_COLUMN_WIDTH if phone else width) - 1.6) / shown)
    fig, axes = small_multiples(  # on a phone, phone_columns panels a row
        n_panels,
        columns=columns,
        phone_columns=phone_columns,
        panel_height=side + 1.05,
        width=width,
    )
    titles = []
    for layer in range(n_layers):
        for head in range(n_heads):
            lines = [f"layer {first_layer + layer} · head {first_head + head}"]
            values_of = [f"{name} {float(t[layer][head]):.2f}" for name, t in scores.items()]
            # Two scores to a line, so that a title stays as narrow as its panel.
            lines += [" · ".join(values_of[i : i + 2]) for i in range(0, len(values_of), 2)]
            titles.append("\n".join(lines))
    head_weights(
        values.reshape(n_panels, n_tokens, n_tokens),
        list(tokens),
        titles=titles,
        axes=axes,
        annotate=False,
    )
    for ax in axes:
        ax.tick_params(labelsize=SMALLEST_FONT)
        ax.title.set_fontsize(9.5)
    return fig


@for_the_page
def ablation_bars(
    losses: Mapping[str, tuple[float, float]],
    *,
    guess_bits: float,
    title: str = "loss with heads switched off",
) -> Figure:
    """The loss on the first and on the repeated half with each named set of heads switched
    off (``"none"`` for the whole model), as pairs of horizontal bars with their values,
    and the cost of guessing (``guess_bits``) as a dotted line.

    Shapes
    ------
    ``losses``: label → ``(first_half, repeated_half)`` in bits per token.

    Examples
    --------
    >>> fig = ablation_bars({"none": (6.1, 0.1), "layer 2 · head 0": (6.5, 5.6)},
    ...                     guess_bits=5.98)
    >>> [round(float(bar.get_width()), 1) for bar in fig.axes[0].patches]
    [6.1, 6.5, 0.1, 5.6]
    """
    if not isinstance(losses, Mapping) or not losses:
        raise ValueError("losses must map at least one label to (first_half, repeated_half)")
    table = np.array([_vector(f"losses[{k!r}]", v, 2) for k, v in losses.items()])  # (n, 2)
    if (table < 0).any():
        raise ValueError("losses are bits per token: they cannot be negative")
    if not np.isfinite(guess_bits) or guess_bits <= 0:
        raise ValueError(f"guess_bits must be a positive number of bits, got {guess_bits}")

    labels = list(losses)
    y = np.arange(len(labels))
    ax = new_axes((COLUMN_WIDTH * 0.8, 0.4 * len(labels) + 1.6))
    for index, name in enumerate(("first half", "repeated half")):
        bars = ax.barh(
            y + (index - 0.5) * 0.38,
            table[:, index],
            height=0.38,
            label=name,
            color=OKABE_ITO[index],
            hatch=("", "//")[index],
            edgecolor="white",
        )
        ax.bar_label(bars, fmt="%.2f", fontsize=SMALLEST_FONT, padding=2)
    ax.axvline(
        guess_bits,
        color="#555555",
        linestyle=":",
        linewidth=1.5,
        label=f"guessing: {guess_bits:.2f} bits",
    )
    phone = current_layout() == "phone"
    # On a phone, a long label on two lines: the bars keep the width.
    shown = [textwrap.fill(label, 16) if phone else label for label in labels]
    ax.set_yticks(y, labels=shown)
    ax.invert_yaxis()
    ax.set_xlabel("bits per token")
    ax.set_ylabel("heads switched off")
    ax.set_xlim(0, max(table.max(), guess_bits) * 1.2)
    ax.set_title(title)
    if phone:  # under the figure, two a line
        _legend(ax, columns=2)
    else:
        ax.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncols=3)
    return ax.figure


@for_the_page
def ov_circuits(circuits: Mapping[str, np.ndarray]) -> Figure:
    """Heads' OV circuits as heatmaps side by side: row ``s``, column ``t`` is how much the
    head raises the logit of token ``t`` when it attends to a token ``s``. Red is a raise,
    blue a drop (a diverging map centred on zero, one scale for all panels). A head that
    copies has a red diagonal. Panel titles are the keys of ``circuits`` (put each head's
    copying score in them).

    Shapes
    ------
    Every value of ``circuits``: ``(V, V)``, the same ``V``; at most two panels.

    Examples
    --------
    >>> fig = ov_circuits({"copies": np.eye(4), "inverts": -np.eye(4)})
    >>> [ax.get_title() for ax in fig.axes[:2]]
    ['copies', 'inverts']
    """
    if not isinstance(circuits, Mapping) or not 1 <= len(circuits) <= 2:
        raise ValueError("circuits must map one or two titles to (V, V) arrays")
    arrays = [np.asarray(c, dtype=np.float64) for c in circuits.values()]
    shapes = {a.shape for a in arrays}
    if len(shapes) != 1 or len(arrays[0].shape) != 2 or arrays[0].shape[0] != arrays[0].shape[1]:
        raise ValueError(f"circuits must all be square (V, V) arrays, got shapes {sorted(shapes)}")
    if not all(np.isfinite(a).all() for a in arrays):
        raise ValueError("circuits must be finite (no NaN or infinity)")
    limit = max(float(np.abs(a).max()) for a in arrays) or 1.0
    norm = TwoSlopeNorm(vcenter=0.0, vmin=-limit, vmax=limit)
    fig, axes = small_multiples(len(arrays), columns=2, panel_height=3.4)
    for ax, (title, circuit) in zip(axes, zip(circuits, arrays, strict=True), strict=True):
        image = ax.imshow(circuit, cmap=DIVERGING_CMAP, norm=norm)
        if current_layout() == "phone":  # the colour bar is beside a panel as wide as the title
            title = title.replace(" (", "\n(", 1)
        ax.set_title(title, fontsize=9.5)
        ax.set_xlabel("token whose logit changes")
        ax.set_ylabel("token attended to")
        ax.tick_params(labelsize=SMALLEST_FONT)
    fig.colorbar(image, ax=axes, label="change of the logit", shrink=0.9)
    return fig
