"""Figures of chapter 9, the encoder block."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from selfattn_lib.plotting.architecture import (
    _BOX_HEIGHT,
    _LABEL_FONT,
    _ROW,
    INPUT,
    Block,
    Column,
    alt_text,
    architecture,
)
from selfattn_lib.plotting.base import (
    COLUMN_WIDTH,
    OKABE_ITO,
    column_width,
    current_layout,
    for_the_page,
    new_axes,
)
from selfattn_lib.plotting.diagrams import Diagram


def _encoder_layer_column(shapes: Mapping[str, tuple[int, ...]], norm_first: bool) -> Column:
    shape = shapes.get
    if norm_first:
        blocks = [
            Block("pre_x", "x", shape(INPUT)),
            Block("pre_norm_1", "norm_1", shape("norm_1"), "norm"),
            Block("pre_self", "self_attention", shape("self_attention"), "attention"),
            Block("pre_add_1", "add", shape("norm_2"), "add"),
            Block("pre_norm_2", "norm_2", shape("norm_2"), "norm"),
            Block("pre_ff", "feed_forward", shape("feed_forward"), "feed_forward"),
            Block("pre_add_2", "add", shape(""), "add"),
            Block("pre_out", "next layer (a norm after the last)"),
        ]
        residuals = [("pre_norm_1", "pre_add_1"), ("pre_norm_2", "pre_add_2")]
        return Column("Pre-norm: x + Sublayer(norm(x))", blocks, residuals)
    blocks = [
        Block("post_x", "x", shape(INPUT)),
        Block("post_self", "self_attention", shape("self_attention"), "attention"),
        Block("post_norm_1", "add & norm_1", shape("norm_1"), "norm"),
        Block("post_ff", "feed_forward", shape("feed_forward"), "feed_forward"),
        Block("post_norm_2", "add & norm_2", shape("norm_2"), "norm"),
        Block("post_out", "to the next layer"),
    ]
    residuals = [("post_self", "post_norm_1"), ("post_ff", "post_norm_2")]
    return Column("Post-norm (the paper): norm(x + Sublayer(x))", blocks, residuals)


@for_the_page
def encoder_layer_diagram(
    post_norm: Mapping[str, tuple[int, ...]],
    pre_norm: Mapping[str, tuple[int, ...]] | None = None,
    *,
    title: str = "",
) -> Diagram:
    """One encoder layer drawn from its input (bottom) to its output (top), with the module
    names of :class:`selfattn_lib.layers.EncoderLayer` and the shapes one run of it
    recorded. Post-norm (the paper's): each sublayer's output is added to its input and the
    sum is normalised, ``norm(x + Sublayer(x))``. Given ``pre_norm`` (a run of a layer with
    ``norm_first=True``), the pre-norm layer is drawn beside it: the sublayer sees a
    normalised copy and its output is added to the un-normalised input,
    ``x + Sublayer(norm(x))``, and the stack then needs one final norm. The residual
    (identity) paths are drawn in vermillion. A column is half the book's column wide; drawn
    for a phone, two columns share a phone's column, their titles and the labels above the
    layers on two lines.

    Shapes
    ------
    ``post_norm``, ``pre_norm``: :func:`~selfattn_lib.plotting.architecture.record_shapes`
    of an ``EncoderLayer`` run on ``(B, T, D)``; every block is ``(B, T, D)``.

    Examples
    --------
    >>> import torch
    >>> from selfattn_lib.layers import EncoderLayer
    >>> from selfattn_lib.plotting.architecture import read_blocks, record_shapes
    >>> shapes = record_shapes(EncoderLayer(8, 2, 16).eval(), torch.ones(1, 3, 8))
    >>> read_blocks(encoder_layer_diagram(shapes).figure)["post_norm_1"]
    ('add & norm_1', '1 × 3 × 8')
    """
    columns = [_encoder_layer_column(post_norm, norm_first=False)]
    if pre_norm is not None:
        columns.append(_encoder_layer_column(pre_norm, norm_first=True))
    if len(columns) == 1 or current_layout() != "phone":  # one column fits a phone as it is
        return architecture(*columns, title=title, width=COLUMN_WIDTH / 2 * len(columns))
    return _narrow_columns(columns, title)


def _narrow_columns(columns: Sequence[Column], title: str) -> Diagram:
    """Draw encoder-layer columns side by side in a phone's column: each title on two lines,
    and the label above the layer (too long for a narrow block: ``architecture`` measures
    every label as a box's) written on two lines in the row kept empty for it."""
    narrow, tops = [], []
    for column in columns:
        *blocks, top = column.blocks
        narrow.append(
            Column(
                column.title.replace(": ", ":\n"),
                [*blocks, None],
                column.residuals,
                column.repeat,
                column.side,
            )
        )
        tops.append(top)
    diagram = architecture(*narrow, title=title)
    figure = diagram.figure
    ax = figure.axes[0]
    slot = figure.get_figwidth() / len(columns)
    arrow = {"arrowstyle": "-|>", "color": "black", "linewidth": 1.1, "shrinkA": 0, "shrinkB": 0}
    for index, (column, top) in enumerate(zip(columns, tops, strict=True)):
        x = slot * index + slot / 2
        row = len(column.blocks) - 1
        y = 0.05 + _ROW * (row + 0.5)
        words = top.label.split(" (", 1)
        label = words[0] if len(words) == 1 else f"{words[0]}\n({words[1]}"
        ax.text(
            x,
            y,
            label,
            ha="center",
            va="center",
            fontsize=_LABEL_FONT,
            style="italic",
            gid=f"block:{top.key}",
            zorder=3,
            linespacing=1.0,
        )
        below = y - _ROW + _BOX_HEIGHT / 2
        top_line = 1 if "\n" in label else 0
        ax.annotate(
            "",
            xy=(x, y - 0.1 - 0.08 * top_line),
            xytext=(x, below),
            arrowprops=arrow,
            zorder=1,
        )
    return Diagram(figure, alt_text(columns, [], title))


@for_the_page
def normalization_axes(
    row_labels: Sequence[str],
    n_features: int,
    *,
    token: int = 0,
    feature: int = 0,
    pad_label: str = "<pad>",
    tokens_per_sequence: int | None = None,
    axes: Sequence[Axes] | None = None,
) -> Figure:
    """Which numbers share one mean and variance: layer norm versus batch norm.

    The batch is drawn as a grid with one row per token (all sequences one below the other)
    and one column per feature. Left, layer norm: the statistics of a token come from its own
    row (``token`` highlighted). Right, batch norm: the statistics of a feature come from its
    column over every token of the batch (``feature`` highlighted), padding included. Rows
    labelled ``pad_label`` are hatched; with ``tokens_per_sequence``, a thick line separates
    the sequences. Made alone, the figure is as wide as the book's column (``COLUMN_WIDTH``);
    each title takes two lines. Drawn for a phone, the batch norm panel lies under the layer
    norm one.

    Shapes
    ------
    ``row_labels``: ``B · T`` labels (the batch's tokens, flattened); ``n_features``: ``D``;
    ``axes``: 2 axes (layer norm, batch norm).

    Examples
    --------
    >>> fig = normalization_axes(["a", "b", "<pad>"], 4, token=1, feature=2)
    >>> [ax.get_title().split(":")[0] for ax in fig.axes]
    ['layer norm', 'batch norm']
    """
    from matplotlib.patches import Rectangle

    labels = list(row_labels)
    n_rows = len(labels)
    if n_rows == 0:
        raise ValueError("row_labels must name at least one token")
    if isinstance(n_features, bool) or not isinstance(n_features, int | np.integer):
        raise ValueError(f"n_features must be a positive integer, got {n_features!r}")
    if n_features < 1:
        raise ValueError(f"n_features must be a positive integer, got {n_features!r}")
    if not 0 <= token < n_rows:
        raise ValueError(f"token must be in [0, {n_rows}), got {token}")
    if not 0 <= feature < n_features:
        raise ValueError(f"feature must be in [0, {n_features}), got {feature}")
    if tokens_per_sequence is not None and (
        tokens_per_sequence < 1 or n_rows % tokens_per_sequence
    ):
        raise ValueError(
            f"tokens_per_sequence must divide the {n_rows} rows, got {tokens_per_sequence}"
        )
    if axes is None and current_layout() == "phone":
        # A cell as wide as the phone's column allows beside the row labels, at most 0.42 in.
        cell = min(0.42, (column_width() - 1.5) / n_features)
        fig = Figure(figsize=(column_width(), 2 * (cell * n_rows + 1.3)), layout="constrained")
        axes = fig.subplots(2, 1)
    elif axes is None:
        fig = Figure(figsize=(column_width(), 0.42 * n_rows + 1.6), layout="constrained")
        axes = fig.subplots(1, 2)
    if len(axes) != 2:
        raise ValueError(f"axes must hold 2 axes (layer norm, batch norm), got {len(axes)}")
    panels = (
        (axes[0], "layer norm:\none token, all its features", (0, token, n_features, 1)),
        (axes[1], "batch norm:\none feature, every token", (feature, 0, 1, n_rows)),
    )
    for ax, title, (x0, y0, width, height) in panels:
        for row, label in enumerate(labels):
            if label == pad_label:  # one hatched strip per padding token
                ax.add_patch(
                    Rectangle(
                        (0, row), n_features, 1, facecolor="0.93", edgecolor="0.6", hatch="//"
                    )
                )
        ax.set_xticks(np.arange(n_features + 1), minor=True)
        ax.set_yticks(np.arange(n_rows + 1), minor=True)
        ax.grid(True, which="minor", color="0.6", linewidth=0.6)
        ax.add_patch(
            Rectangle(
                (x0, y0),
                width,
                height,
                facecolor=OKABE_ITO[0],
                edgecolor="black",
                alpha=0.75,
                linewidth=1.5,
            )
        )
        if tokens_per_sequence is not None:
            for boundary in range(tokens_per_sequence, n_rows, tokens_per_sequence):
                ax.axhline(boundary, color="black", linewidth=2.5)
        ax.set_xlim(0, n_features)
        ax.set_ylim(n_rows, 0)  # first token at the top
        ax.set_aspect("equal")
        ax.set_xticks(np.arange(n_features) + 0.5, labels=[str(d) for d in range(n_features)])
        ax.set_yticks(np.arange(n_rows) + 0.5, labels=labels)
        ax.tick_params(which="both", length=0)
        ax.set_xlabel("feature (D axis)")
        ax.set_ylabel("token of the batch (B · T rows)")
        ax.set_title(title, fontsize=10)
    return axes[0].figure


@for_the_page
def depth_curves(
    depths: Sequence[float],
    curves: dict[str, Sequence[float]],
    *,
    xlabel: str = "number of layers",
    ylabel: str = "",
    title: str = "",
    logx: bool = False,
    colour_groups: Sequence[int] | None = None,
    ax: Axes | None = None,
) -> Figure:
    """Draw a positive quantity against depth, one line per variant, on a logarithmic y axis.

    Used for gradient norms and for how far apart the tokens stay, with and without residual
    connections and layer norms. Colours and markers follow the order of ``curves``
    (Okabe–Ito palette). ``logx`` puts the depths on a base-2 logarithmic axis too.
    ``colour_groups`` gives each curve the index of its colour instead, so that the curves of
    one model share it (e.g. its first and its last layer); within a group the lines are
    solid, dashed, dotted, … in order. Drawn alone for a phone, a long title wraps and the
    legend goes under the axes.

    Shapes
    ------
    ``depths``: ``(L,)``; every value of ``curves``: ``(L,)``, positive and finite;
    ``colour_groups``: one int per curve.

    Examples
    --------
    >>> fig = depth_curves([1, 2, 3], {"plain": [1.0, 0.1, 0.01]}, ylabel="gradient norm")
    >>> fig.axes[0].get_yscale(), fig.axes[0].get_legend().get_texts()[0].get_text()
    ('log', 'plain')
    """
    x = np.asarray(depths, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"depths must be a non-empty 1-D sequence, got shape {x.shape}")
    if not curves:
        raise ValueError("curves must hold at least one line")
    groups = list(range(len(curves))) if colour_groups is None else list(colour_groups)
    if len(groups) != len(curves) or any(
        not isinstance(group, int | np.integer) or group < 0 for group in groups
    ):
        raise ValueError(
            f"colour_groups must give one colour index (an int >= 0) per curve: got {groups} "
            f"for {len(curves)} curves"
        )
    phone = current_layout() == "phone" and ax is None
    ax = new_axes((6.5, 5.2 if phone else 4.2), ax)
    markers = ("o", "s", "^", "D", "v", "P")
    line_styles = ("-", "--", ":", "-.")
    for index, ((name, values), group) in enumerate(zip(curves.items(), groups, strict=True)):
        y = np.asarray(values, dtype=np.float64)
        if y.shape != x.shape:
            raise ValueError(f"curve {name!r} has shape {y.shape}, but depths has shape {x.shape}")
        if not np.isfinite(y).all() or (y <= 0).any():
            raise ValueError(f"curve {name!r} must be positive and finite for a log axis")
        rank = groups[:index].count(group)  # earlier curves of the same colour
        ax.plot(
            x,
            y,
            marker=markers[index % len(markers)],
            markersize=4,
            color=OKABE_ITO[group % len(OKABE_ITO)],
            linestyle=line_styles[rank % len(line_styles)],
            label=name,
        )
    ax.set_yscale("log")
    if logx:
        if (x <= 0).any():
            raise ValueError("depths must be positive for a logarithmic x axis")
        ax.set_xscale("log", base=2)
        ax.set_xticks(x, labels=[f"{value:g}" for value in x])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="major", alpha=0.3)
    if phone:
        ax.set_title(textwrap.fill(title, 40), fontsize=10)
        ax.figure.legend(*ax.get_legend_handles_labels(), loc="outside lower center", fontsize=8)
    else:
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8)
    return ax.figure


@for_the_page
def gradients_and_stream(
    runs: Mapping[str, tuple[Sequence[float], Sequence[float]]],
) -> Figure:
    """Two :func:`depth_curves` panels over the layers ``1 … N`` of a stack, a curve per
    wiring: each layer's gradient norm, and the RMS of the residual stream after it. One
    legend, in the first panel. Side by side on a laptop, one above the other on a phone.
    The caller measures; this only draws.

    Shapes
    ------
    ``runs``: per wiring (``"post-norm"``, …), the gradient norms ``(N,)`` and the stream's
    RMS ``(N,)``.

    Examples
    --------
    >>> fig = gradients_and_stream({"post-norm": ([0.5, 0.7], [1.0, 1.0])})
    >>> [ax.get_ylabel() for ax in fig.axes]
    ['gradient norm', 'RMS of the stream after it']
    """
    if not runs:
        raise ValueError("runs must hold at least one wiring")
    n_layers = len(next(iter(runs.values()))[0])
    if current_layout() == "phone":
        fig = Figure(figsize=(column_width(), 6.4), layout="constrained")
        panels = fig.subplots(2, 1)
    else:
        fig = Figure(figsize=(column_width(), 3.6), layout="constrained")
        panels = fig.subplots(1, 2)
    ylabels = ("gradient norm", "RMS of the stream after it")
    layers = np.arange(1, n_layers + 1)
    for index, (ax, ylabel) in enumerate(zip(panels, ylabels, strict=True)):
        curves = {wiring: run[index] for wiring, run in runs.items()}
        depth_curves(layers, curves, xlabel="layer", ylabel=ylabel, ax=ax)
    panels[1].get_legend().remove()  # one legend, in the first panel
    return fig
