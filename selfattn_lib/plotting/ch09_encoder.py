"""Figures of chapter 9, the encoder block."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from selfattn_lib.plotting.architecture import INPUT, Block, Column, architecture
from selfattn_lib.plotting.base import (
    COLUMN_WIDTH,
    OKABE_ITO,
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
    (identity) paths are drawn in vermillion.

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
    return architecture(*columns, title=title, width=COLUMN_WIDTH / 2 * len(columns))


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
    each title takes two lines.

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
    if axes is None:
        fig = Figure(figsize=(COLUMN_WIDTH, 0.42 * n_rows + 1.6), layout="constrained")
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
    solid, dashed, dotted, … in order.

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
    ax = new_axes((6.5, 4.2), ax)
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
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    return ax.figure
