"""Figures of chapter 3, self-attention without parameters: one output as a weighted average
(in 2-D and as the product A X = Z), kernel regression as a soft lookup, and the attention map
softmax(X Xᵀ), alone and for vectors of several lengths. Drawn for a phone, their panels are
stacked in the phone's column."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from selfattn_lib.plotting.base import (
    COLUMN_WIDTH,
    OKABE_ITO,
    bar_chart,
    column_width,
    current_layout,
    for_the_page,
    heatmap,
    shared_colorbar,
    small_multiples,
)
from selfattn_lib.plotting.diagrams import Diagram, Grid, flow


def spotlight_weights(
    x: Sequence[Sequence[float]],
    labels: Sequence[str],
    position: int,
    *,
    ax: Axes | None = None,
) -> Figure:
    """Draw the weights ``softmax(X Xᵀ)[position]`` of one spotlighted token, one bar per token.

    The spotlighted token's own bar is drawn in orange, the others in blue, so a token that
    attends more to another token than to itself stands out.

    Shapes
    ------
    ``x``: ``(T, D)``; ``labels``: ``T`` strings; ``position``: an index in ``[0, T)``.

    Examples
    --------
    >>> fig = spotlight_weights([[1.0, 0.0], [3.0, 0.0]], ["a", "b"], position=0)
    >>> [round(float(bar.get_height()), 3) for bar in fig.axes[0].patches]
    [0.119, 0.881]
    """
    # A local import keeps this chapter's section self-contained.
    from selfattn_lib.attention import simple_self_attention

    values = np.asarray(x, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"x must be one sequence of shape (T, D), got shape {values.shape}")
    if not 0 <= position < values.shape[0]:
        raise ValueError(f"position must be in [0, {values.shape[0]}), got {position}")
    _, weights = simple_self_attention(values)  # (T, T)
    figure = bar_chart(
        weights[position],
        labels,
        title=f'"{labels[position]}" (position {position}) attends to',
        xlabel="key token",
        ylabel="attention weight",
        ylim=(0.0, 1.0),
        ax=ax,
    )
    axes = ax if ax is not None else figure.axes[0]
    axes.patches[position].set_facecolor(OKABE_ITO[4])
    axes.tick_params(axis="x", labelrotation=45)
    return figure


def spotlight_attention(
    x: Sequence[Sequence[float]], labels: Sequence[str], position: int
) -> Figure:
    """The spotlighted token's weights (left) beside the whole weight matrix (right).

    The heatmap is ``softmax(X Xᵀ)`` with the spotlighted token's row outlined: the bars on
    the left are that row. The figure is at most as wide as the book's column
    (``COLUMN_WIDTH``, 7.5 inches), so its 8-point numbers stay legible in the column;
    the cells are annotated up to 8 tokens.

    Shapes
    ------
    ``x``: ``(T, D)``; ``labels``: ``T`` strings; ``position``: an index in ``[0, T)``.

    Examples
    --------
    >>> fig = spotlight_attention([[1.0, 0.0], [0.0, 2.0]], ["a", "b"], position=1)
    >>> fig.axes[1].get_title()
    'All weights softmax(X Xᵀ)'
    """
    from matplotlib.patches import Rectangle

    from selfattn_lib.attention import simple_self_attention

    values = np.asarray(x, dtype=np.float64)
    n_tokens = values.shape[0] if values.ndim == 2 else 0
    width = min(COLUMN_WIDTH, 4.0 + 1.1 * n_tokens)
    fig = Figure(figsize=(width, 0.25 * n_tokens + 3.2), layout="constrained")
    left, right = fig.subplots(1, 2, width_ratios=(1.0, 1.15))
    spotlight_weights(values, labels, position, ax=left)
    _, weights = simple_self_attention(values)  # (T, T)
    heatmap(
        weights,
        labels,
        labels,
        title="All weights softmax(X Xᵀ)",
        colorbar_label="attention weight",
        annotate=n_tokens <= 8,
        ax=right,
    )
    right.add_patch(
        Rectangle(
            (-0.5, position - 0.5),
            n_tokens,
            1.0,
            fill=False,
            edgecolor=OKABE_ITO[4],
            linewidth=3,
        )
    )
    return fig


# Colours of the tokens in the 2-D picture: Okabe–Ito without yellow (too pale on white) and
# black (kept for the output), then a grey.
_TOKEN_COLOURS = (*OKABE_ITO[:6], "#666666")


def _one_per_token(name: str, values: object, tokens: Sequence[str], width: int) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    shape = (len(tokens), width) if width else (len(tokens),)
    if array.shape != shape:
        raise ValueError(
            f"{name} must have shape {shape}, one {'row' if width else 'number'} per token, "
            f"got shape {array.shape}"
        )
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite")
    return array


@for_the_page
def weighted_average_2d(
    x_2d: Sequence[Sequence[float]],
    weights: Sequence[float],
    output_2d: Sequence[float],
    tokens: Sequence[str],
    query: str,
    *,
    features: tuple[str, str] = ("feature 1", "feature 2"),
) -> Figure:
    """Draw one output of self-attention as a weighted average of the token vectors, in 2-D.

    Left: every token's vector (two of its features) as an arrow, with the weight the query
    gives it written under its name, and the output as a black arrow. Right: the same output
    built piece by piece, the weighted vectors ``w_j x_j`` laid end to end. On a phone the
    token vectors are drawn above, the pieces and the list of weights side by side below.

    The figure draws what the caller computed: each weight text carries the ``gid``
    ``"w[<query>,<token>]"`` and the output arrow ``"z[<query>]"``, so a test can read them
    back. Because averaging works feature by feature, two features of the output are exactly
    the weighted average of the same two features of the tokens; the figure checks that the
    pieces end where ``output_2d`` says and refuses arrays that disagree.

    Shapes
    ------
    ``x_2d``: ``(T, 2)``; ``weights``: ``(T,)``, the query's row of the weights;
    ``output_2d``: ``(2,)``; ``tokens``: ``T`` distinct strings, ``query`` one of them.

    Examples
    --------
    >>> fig = weighted_average_2d([[1.0, 0.0], [0.0, 1.0]], [0.25, 0.75], [0.25, 0.75],
    ...                           ["a", "b"], "a")
    >>> [t.get_text() for t in fig.findobj(lambda a: (a.get_gid() or "").startswith("w["))]
    ['0.25', '0.75']
    """
    labels = list(tokens)
    if len(set(labels)) != len(labels):
        raise ValueError(
            f"tokens must be distinct (each weight is labelled by its token): {labels}"
        )
    if query not in labels:
        raise ValueError(f"query {query!r} is not one of the tokens {labels}")
    points = _one_per_token("x_2d", x_2d, labels, 2)  # (T, 2)
    row = _one_per_token("weights", weights, labels, 0)  # (T,)
    output = np.asarray(output_2d, dtype=np.float64)
    if output.shape != (2,):
        raise ValueError(f"output_2d must have shape (2,), got shape {output.shape}")
    pieces = row[:, None] * points  # (T, 2): w_j x_j, the arrows drawn end to end
    ends = np.cumsum(pieces, axis=0)  # (T, 2)
    if not np.allclose(ends[-1], output, atol=1e-6):
        raise ValueError(
            f"output_2d {output.tolist()} is not the weighted average of x_2d with these "
            f"weights ({ends[-1].round(6).tolist()}): pass arrays from one computation"
        )

    if current_layout() == "phone":  # the token vectors above, the pieces and weights below
        figure = Figure(figsize=(column_width(), 6.6), layout="constrained")
        panels = figure.subplot_mosaic(
            [["left", "left"], ["right", "table"]], width_ratios=(1.0, 0.6)
        )
        left, table, right = panels["left"], panels["table"], panels["right"]
    else:
        figure = Figure(figsize=(COLUMN_WIDTH, 3.4), layout="constrained")
        left, table, right = figure.subplots(1, 3, width_ratios=(1.3, 0.55, 1.0))
    arrow = {"arrowstyle": "-|>", "linewidth": 1.6, "shrinkA": 0, "shrinkB": 0}
    colours = [_TOKEN_COLOURS[index % len(_TOKEN_COLOURS)] for index in range(len(labels))]
    span = np.maximum(points.max(axis=0) - points.min(axis=0), 1e-9)  # (2,)

    # Left: the token vectors; tokens at the same point share one label.
    for colour, point in zip(colours, points, strict=True):
        left.annotate("", xy=tuple(point), xytext=(0, 0), arrowprops={**arrow, "color": colour})
    labelled: set[int] = set()
    for index, point in enumerate(points):
        if index in labelled:
            continue
        same = [j for j in range(len(labels)) if np.allclose(points[j], point, atol=1e-9)]
        labelled.update(same)
        near = (np.abs(points[:, 1] - point[1]) < 0.2 * span[1]) & (
            (points[:, 0] - point[0] > 1e-9) & (points[:, 0] - point[0] < 0.25 * span[0])
        )
        on_the_left = point[0] <= points[:, 0].min() + 1e-9 and near.any()
        left.annotate(
            ", ".join(labels[j] for j in same),
            xy=tuple(point),
            xytext=(-4, 0) if on_the_left else (3, 3),
            textcoords="offset points",
            ha="right" if on_the_left else "left",
            va="center" if on_the_left else "bottom",
            fontsize=9,
            color=colours[index],
            fontweight="bold" if query in (labels[j] for j in same) else "normal",
        )
    left.annotate(
        "",
        xy=tuple(output),
        xytext=(0, 0),
        arrowprops={**arrow, "color": "black", "linewidth": 2.6},
        gid=f"z[{query}]",
    )
    left.annotate(
        f"output of {query}",
        xy=tuple(output),
        xytext=(5, -2),
        textcoords="offset points",
        ha="left",
        va="top",
        fontsize=9,
    )
    left.set_xlim(points[:, 0].min() - 0.4 * span[0], points[:, 0].max() + 0.25 * span[0])
    left.set_ylim(
        min(0.0, points[:, 1].min()) - 0.05 * span[1], points[:, 1].max() + 0.12 * span[1]
    )
    left.set_title("The token vectors", fontsize=10)

    # Middle: the weights, one line per token in its colour.
    table.set_axis_off()
    table.set_xlim(0, 1)
    table.set_ylim(0, 1)
    table.text(0.5, 0.97, f"weights of {query!r}", ha="center", va="top", fontsize=9)
    step = min(0.11, 0.85 / len(labels))
    for index, token in enumerate(labels):
        y = 0.85 - index * step
        weight = "bold" if token == query else "normal"
        table.text(
            0.05,
            y,
            token,
            ha="left",
            va="center",
            fontsize=9,
            color=colours[index],
            fontweight=weight,
        )
        table.text(
            0.95,
            y,
            f"{row[index]:.2f}",
            ha="right",
            va="center",
            fontsize=9,
            color=colours[index],
            fontweight=weight,
            gid=f"w[{query},{token}]",
        )
    table.text(
        0.5, 0.85 - len(labels) * step, f"sum {row.sum():.2f}", ha="center", va="center", fontsize=9
    )

    # Right: the pieces w_j x_j, end to end, reach the output. Labels of upright pieces go
    # on the side away from the output arrow; flat pieces are labelled below (the last one,
    # which meets the output's arrowhead, above).
    starts = np.vstack([np.zeros(2), ends[:-1]])  # (T, 2)
    last = len(labels) - 1
    for index, (colour, token, start, end) in enumerate(
        zip(colours, labels, starts, ends, strict=True)
    ):
        right.annotate(
            "", xy=tuple(end), xytext=tuple(start), arrowprops={**arrow, "color": colour}
        )
        middle = (start + end) / 2
        delta = end - start
        if abs(delta[1]) >= abs(delta[0]):
            on_line = output[0] * middle[1] / output[1] if output[1] else 0.0
            side = 1 if middle[0] >= on_line else -1
            place = {"xytext": (5 * side, 0), "ha": "left" if side > 0 else "right"}
            place["va"] = "center"
        else:
            above = index == last
            place = {"xytext": (0, 3 if above else -3), "ha": "center"}
            place["va"] = "bottom" if above else "top"
        right.annotate(
            token, xy=tuple(middle), textcoords="offset points", fontsize=8.5, color=colour, **place
        )
    right.annotate(
        "",
        xy=tuple(output),
        xytext=(0, 0),
        arrowprops={**arrow, "color": "black", "linewidth": 2.6},
    )
    right.annotate(
        "output",
        xy=tuple(output / 2),
        xytext=(-5, 0),
        textcoords="offset points",
        ha="right",
        va="center",
        fontsize=9,
    )
    top = np.maximum(np.abs(ends).max(axis=0), np.abs(output))
    right.set_xlim(-0.45 * top[0], top[0] * 1.55)
    right.set_ylim(-0.05 * top[1], top[1] * 1.1)
    right.set_title("Weight × vector, end to end", fontsize=10)
    for ax in (left, right):
        ax.set_xlabel(features[0])
        ax.set_ylabel(features[1])
        ax.axhline(0.0, color="grey", linewidth=0.6)
        ax.axvline(0.0, color="grey", linewidth=0.6)
    return figure


@for_the_page
def weighted_average_flow(
    tokens: Sequence[str],
    weights: Sequence[Sequence[float]],
    x: Sequence[Sequence[float]],
    output: Sequence[Sequence[float]],
    features: Sequence[str],
    *,
    title: str = "",
) -> Diagram:
    """Draw self-attention without parameters as one product, ``A × X = Z`` (a computed diagram):
    the weights ``A``, the token vectors ``X`` and the outputs ``Z``, every number written.

    The figure draws the arrays it is given; a test reads them back
    (:func:`~selfattn_lib.plotting.diagrams.read_back`, grids ``"A"``, ``"X"``, ``"Z"``).

    Shapes
    ------
    ``tokens``: ``T`` strings; ``weights``: ``(T, T)``; ``x``, ``output``: ``(T, D)``;
    ``features``: ``D`` strings.

    Examples
    --------
    >>> from selfattn_lib.plotting.diagrams import read_back
    >>> d = weighted_average_flow(["a", "b"], [[0.5, 0.5], [0.1, 0.9]], [[1.0], [3.0]],
    ...                           [[2.0], [2.8]], ["f"])
    >>> read_back(d.figure, "Z").tolist()
    [[2.0], [2.8]]
    """
    labels, names = list(tokens), list(features)
    matrices = {
        "weights": np.asarray(weights, dtype=np.float64),
        "x": np.asarray(x, dtype=np.float64),
        "output": np.asarray(output, dtype=np.float64),
    }
    expected = {
        "weights": (len(labels), len(labels)),
        "x": (len(labels), len(names)),
        "output": (len(labels), len(names)),
    }
    for name, matrix in matrices.items():
        if matrix.shape != expected[name]:
            raise ValueError(
                f"{name} must have shape {expected[name]} for {len(labels)} tokens and "
                f"{len(names)} features, got shape {matrix.shape}"
            )
    return flow(
        Grid(
            "A",
            matrices["weights"],
            rows=labels,
            cols=labels,
            role="weights",
            note="weights: each row sums to 1",
        ),
        "×",
        Grid("X", matrices["x"], cols=names, note="one row per token, in order"),
        "=",
        Grid(
            "Z",
            matrices["output"],
            rows=labels,
            cols=names,
            role="output",
            note="row i: token i's weighted average of the rows of X",
        ),
        title=title,
        # On a phone: eight two-decimal outputs and their token labels need 3.93 in, a little
        # more than the phone's 3.8; drawn 3.95 in wide, its 8.5-point numbers show 10 px tall.
        width=3.95 if current_layout() == "phone" else None,
    )


@for_the_page
def kernel_regression_fit(
    keys: Sequence[float],
    values: Sequence[float],
    queries: Sequence[float],
    predictions: dict[float, Sequence[float]],
    query_weights: dict[float, Sequence[float]],
    query: float,
) -> Figure:
    """Kernel regression as a soft lookup: the fitted curves for a few widths (left) and the
    weights one query gives the training points at each width (right).

    Every curve and weight is what the caller computed (e.g. with
    :func:`selfattn_lib.kernel_regression.kernel_regression`); the figure draws them. Each
    curve's line has the ``gid`` ``"fit[σ]"`` and each weight line ``"weights[σ]"``.

    Shapes
    ------
    ``keys``, ``values``: ``(T_k,)``, the training points; ``queries``: ``(T_q,)``, where the
    curves are evaluated; ``predictions``: width → ``(T_q,)``; ``query_weights``: width →
    ``(T_k,)``, the weights of the one ``query``.

    Examples
    --------
    >>> fig = kernel_regression_fit([0.0, 1.0], [0.0, 1.0], [0.0, 0.5, 1.0],
    ...                             {0.5: [0.1, 0.5, 0.9]}, {0.5: [0.4, 0.6]}, query=0.6)
    >>> [line.get_gid() for line in fig.axes[0].get_lines() if line.get_gid()]
    ['fit[0.5]']
    """
    points_x = np.asarray(keys, dtype=np.float64)
    points_y = np.asarray(values, dtype=np.float64)
    grid = np.asarray(queries, dtype=np.float64)
    if points_x.ndim != 1 or points_x.shape != points_y.shape:
        raise ValueError(
            f"keys and values must be 1-D and of one length: keys has shape {points_x.shape}, "
            f"values has shape {points_y.shape}"
        )
    if grid.ndim != 1:
        raise ValueError(f"queries must be 1-D, got shape {grid.shape}")
    if not predictions or set(predictions) != set(query_weights):
        raise ValueError("predictions and query_weights need the same, non-empty, widths")
    phone = current_layout() == "phone"
    if phone:  # the fit above the weights
        figure = Figure(figsize=(column_width(), 6.8), layout="constrained")
        fit, lookup = figure.subplots(2, 1)
    else:
        figure = Figure(figsize=(COLUMN_WIDTH, 3.1), layout="constrained")
        fit, lookup = figure.subplots(1, 2, width_ratios=(1.3, 1.0))
    fit.scatter(points_x, points_y, color="black", s=18, zorder=3, label="training points")
    styles = ("-", "--", ":")
    offsets = np.linspace(-1.0, 1.0, len(predictions)) * 0.012 * np.ptp(grid)  # stems apart
    for index, width in enumerate(sorted(predictions)):
        curve = np.asarray(predictions[width], dtype=np.float64)
        weights = np.asarray(query_weights[width], dtype=np.float64)
        if curve.shape != grid.shape or weights.shape != points_x.shape:
            raise ValueError(
                f"width {width}: predictions must have shape {grid.shape} and query_weights "
                f"shape {points_x.shape}, got {curve.shape} and {weights.shape}"
            )
        colour, style = OKABE_ITO[index % 3], styles[index % 3]
        fit.plot(
            grid,
            curve,
            color=colour,
            linestyle=style,
            linewidth=1.8,
            label=f"σ = {width:g}",
            gid=f"fit[{width:g}]",
        )
        # A weight belongs to a training point only: stems, not a line between points.
        at = points_x + offsets[index]
        lookup.vlines(at, 0.0, weights, color=colour, linestyle=style, linewidth=1.4)
        lookup.plot(
            at,
            weights,
            "o",
            color=colour,
            markersize=4,
            label=f"σ = {width:g}",
            gid=f"weights[{width:g}]",
        )
    fit.axvline(query, color="#666666", linewidth=1, linestyle="-.", label=f"query x = {query:g}")
    lookup.axvline(query, color="#666666", linewidth=1, linestyle="-.")
    for ax in (fit, lookup):
        ax.set_xlabel("x (the keys)")
    fit.set_ylabel("y (the values)")
    fit.set_title("Prediction: weighted average of the y's", fontsize=10)
    if phone:  # in a narrow panel the legend would cover points: it goes under the axes
        fit.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=2)
    else:
        fit.legend(fontsize=8, loc="lower right")
    lookup.set_ylabel("weight of each training point")
    lookup.set_ylim(0.0, None)
    lookup.set_title(f"The weights of the query x = {query:g}", fontsize=10)
    return figure


@for_the_page
def attention_map(
    weights: Sequence[Sequence[float]], tokens: Sequence[str], *, title: str = ""
) -> Figure:
    """The attention map of one sentence as a heatmap, every weight written in its cell:
    query tokens on the rows, key tokens on the columns. A 7 × 7 map needs less than the
    laptop's column (5.6 in); on a phone it is as wide as the phone's column.

    Shapes
    ------
    ``weights``: ``(T, T)``, each row summing to one; ``tokens``: ``T`` strings.

    Examples
    --------
    >>> fig = attention_map([[0.5, 0.5], [0.2, 0.8]], ["a", "b"], title="two tokens")
    >>> fig.axes[0].get_xlabel(), fig.get_size_inches().tolist()
    ('key token (attended to)', [5.6, 4.2])
    """
    phone = current_layout() == "phone"
    ax = None
    if phone:  # the map takes the column's width, its colour bar goes under it
        ax = Figure(figsize=(column_width(), 5.2), layout="constrained").add_subplot()
        title = textwrap.fill(title, 24)
    figure = heatmap(
        np.asarray(weights, dtype=np.float64),
        tokens,
        tokens,
        title=title,
        xlabel="key token (attended to)",
        ylabel="query token (attending)",
        colorbar_label="attention weight",
        colorbar=not phone,
        ax=ax,
    )
    if phone:
        figure.colorbar(ax.images[0], ax=ax, location="bottom", label="attention weight")
    else:
        figure.set_size_inches(5.6, 4.2)  # a 7 × 7 map needs less than the column
    return figure


@for_the_page
def attention_maps_by_length(
    maps: dict[float, Sequence[Sequence[float]]], tokens: Sequence[str]
) -> Figure:
    """Small multiples of the attention map ``softmax(X Xᵀ)`` with every vector scaled by a
    few factors (one panel per factor, one shared colour bar): longer vectors, sharper rows.

    Shapes
    ------
    ``maps``: factor → ``(T, T)`` weights the caller computed; ``tokens``: ``T`` strings.

    Examples
    --------
    >>> fig = attention_maps_by_length({1.0: [[0.5, 0.5], [0.2, 0.8]]}, ["a", "b"])
    >>> fig.axes[0].get_title()
    'vectors × 1'
    """
    if not maps:
        raise ValueError("maps is empty: give at least one factor and its weights")
    phone = current_layout() == "phone"  # one map a row, as wide as the column allows
    figure, axes = small_multiples(len(maps), columns=2, panel_height=4.2 if phone else 3.1)
    columns = 1 if phone else min(2, len(maps))
    for index, (ax, (factor, weights)) in enumerate(zip(axes, maps.items(), strict=True)):
        heatmap(
            np.asarray(weights, dtype=np.float64),
            tokens,
            tokens,
            title=f"vectors × {factor:g}",
            xlabel="key token" if index >= len(maps) - columns else "",
            ylabel="query token" if index % columns == 0 else "",
            fmt=".1f",
            vmin=0.0,
            vmax=1.0,
            colorbar=False,
            ax=ax,
        )
    if phone:  # under the stacked maps, it leaves them the column's width
        figure.colorbar(axes[0].images[0], ax=axes, location="bottom", label="attention weight")
        return figure
    return shared_colorbar(axes, "attention weight")
