"""Figures of chapter 2, softmax: the weights of one row at a temperature (alone, or at several
temperatures as small multiples), softmax step by step (a computed diagram), and the weights
of a score matrix normalised along each row and, wrongly, along each column."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from selfattn_lib.plotting.base import (
    OKABE_ITO,
    bar_chart,
    current_layout,
    for_the_page,
    heatmap,
    shared_colorbar,
    small_multiples,
)
from selfattn_lib.plotting.diagrams import Diagram, Grid, flow


def temperature_weights(
    scores: Sequence[float],
    labels: Sequence[str],
    temperature: float,
    *,
    ax: Axes | None = None,
) -> Figure:
    """Draw the softmax weights of one row of ``scores`` at ``temperature``, one bar per label.

    The keys' labels are slanted, so that the words of a sentence fit under a small panel. The
    y axis always runs from 0 to a little above 1, so figures at different temperatures
    compare at a glance, and a dashed line marks the uniform weight ``1/n`` that the weights
    approach as the temperature grows.

    Shapes
    ------
    ``scores``: ``(T_k,)``, one query's scores; ``labels``: ``T_k`` strings.

    Examples
    --------
    >>> fig = temperature_weights([1.0, 3.0], ["a", "b"], temperature=0.5)
    >>> [round(float(bar.get_height()), 3) for bar in fig.axes[0].patches]
    [0.018, 0.982]
    >>> fig.axes[0].get_title()
    'τ = 0.5'
    """
    # A local import keeps this chapter's section self-contained.
    from selfattn_lib.softmax import softmax

    values = np.asarray(scores, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError(f"scores must be one row of shape (T_k,), got shape {values.shape}")
    weights = softmax(values, temperature=temperature)  # ValueError unless temperature > 0
    figure = bar_chart(
        weights,
        labels,
        title=f"τ = {temperature:.3g}",
        ylabel="softmax weight",
        ylim=(0.0, 1.15),
        ax=ax,
    )
    axes = ax if ax is not None else figure.axes[0]
    # The keys are words: slanted, a sentence's worth of them fits under a narrow panel.
    for label in axes.get_xticklabels():
        label.set(rotation=30, ha="right", rotation_mode="anchor")
    uniform = 1.0 / len(weights)
    axes.axhline(uniform, color=OKABE_ITO[1], linestyle="--", linewidth=1)
    axes.text(
        1.01,
        uniform,
        f"1/{len(weights)}",
        transform=axes.get_yaxis_transform(),
        color=OKABE_ITO[1],
        fontsize=8,
        va="center",
    )
    return figure


@for_the_page
def weights_at_temperatures(
    scores: Sequence[float],
    labels: Sequence[str],
    temperatures: Sequence[float],
) -> Figure:
    """Small multiples of :func:`temperature_weights`: the softmax weights of one row of
    ``scores`` at each of ``temperatures``, two panels a row on a laptop (sharing their y
    axis, labelled once per row), one a row on a phone.

    Shapes
    ------
    ``scores``: ``(T_k,)``; ``labels``: ``T_k`` strings; ``temperatures``: ``n`` numbers.

    Examples
    --------
    >>> fig = weights_at_temperatures([1.0, 3.0], ["a", "b"], [0.1, 10])
    >>> [ax.get_title() for ax in fig.axes], [ax.get_ylabel() for ax in fig.axes]
    (['τ = 0.1', 'τ = 10'], ['softmax weight', ''])
    """
    if not temperatures:
        raise ValueError("temperatures is empty: give at least one temperature")
    figure, panels = small_multiples(len(temperatures), columns=2, panel_height=2.3, sharey=True)
    for panel, temperature in zip(panels, temperatures, strict=True):
        temperature_weights(scores, labels, temperature, ax=panel)
        if not panel.get_subplotspec().is_first_col():
            panel.set_ylabel("")  # the y axis is labelled once per row
    return figure


@for_the_page
def rows_and_columns(
    row_weights: Sequence[Sequence[float]],
    column_weights: Sequence[Sequence[float]],
    labels: Sequence[str],
) -> Figure:
    """The same scores normalised by softmax along each row (``axis=-1``, correct: one row of
    weights per query) and along each column (``axis=0``, wrong), as two heatmaps on one
    colour scale with one colour bar; stacked on a phone, the colour bar under them.

    Shapes
    ------
    ``row_weights``, ``column_weights``: ``(T, T)``; ``labels``: ``T`` strings.

    Examples
    --------
    >>> w = np.array([[0.4, 0.6], [0.5, 0.5]])
    >>> fig = rows_and_columns(w, w.T, ["a", "b"])
    >>> [ax.get_title() for ax in fig.axes]
    ['Correct: each row (axis=-1)', 'Wrong: axis=0', '']
    """
    pairs = [
        (np.asarray(row_weights, dtype=np.float64), "Correct: each row (axis=-1)"),
        (np.asarray(column_weights, dtype=np.float64), "Wrong: axis=0"),
    ]
    top = max(weights.max() for weights, _ in pairs)  # one colour scale for both
    phone = current_layout() == "phone"
    # On a phone each map gets the column's width: its cells are as wide as the laptop's.
    figure, panels = small_multiples(2, columns=2, panel_height=4.3 if phone else 3.5)
    for panel, (weights, title) in zip(panels, pairs, strict=True):
        heatmap(weights, labels, labels, title=title, vmax=top, colorbar=False, ax=panel)
    if phone:  # under the stacked maps, it leaves them the width
        figure.colorbar(panels[0].images[0], ax=panels, location="bottom", label="weight")
        return figure
    return shared_colorbar(panels, "weight")


@for_the_page
def softmax_steps(
    tokens: Sequence[str],
    scores: Sequence[float],
    exponentials: Sequence[float],
    total: float,
    weights: Sequence[float],
    *,
    query: str,
    title: str = "",
) -> Diagram:
    """Draw softmax step by step for one query's row: its scores, their exponentials, the
    total that divides them, and the weights (a computed diagram).

    Every number drawn is one the caller computed; the figure does no maths of its own, so a
    test can read the numbers back (:func:`~selfattn_lib.plotting.diagrams.read_back`, grids
    ``"z"``, ``"exp(z)"``, ``"total"`` and ``"weights"``) and compare them with the softmax.

    Shapes
    ------
    ``tokens``, ``scores``, ``exponentials``, ``weights``: ``(T_k,)``, one entry per key;
    ``total``: one number.

    Examples
    --------
    >>> from selfattn_lib.plotting.diagrams import read_back
    >>> d = softmax_steps(["a", "b"], [0.0, 1.0], [1.0, 2.72], 3.72, [0.27, 0.73], query="a")
    >>> read_back(d.figure, "weights").tolist()
    [[0.27, 0.73]]
    """
    rows = {
        "scores": np.asarray(scores, dtype=np.float64),
        "exponentials": np.asarray(exponentials, dtype=np.float64),
        "weights": np.asarray(weights, dtype=np.float64),
    }
    labels = list(tokens)
    for name, row in rows.items():
        if row.shape != (len(labels),):
            raise ValueError(
                f"{name} must hold one number per token, shape ({len(labels)},), "
                f"got shape {row.shape}"
            )
    if np.ndim(total) != 0:
        raise ValueError(f"total must be one number, got shape {np.shape(total)}")
    query_row = [query]
    return flow(
        Grid("z", rows["scores"], rows=query_row, cols=labels, role="scores", note="scores"),
        "exp →",
        Grid("exp(z)", rows["exponentials"], rows=query_row, cols=labels, note="all positive"),
        "÷",
        Grid("total", [float(total)], note="sum of exp(z)"),
        "=",
        Grid(
            "weights",
            rows["weights"],
            rows=query_row,
            cols=labels,
            role="weights",
            note="sum to one",
            fmt=".3f",  # as the chapter prints weights: two decimals can tie unequal ones
        ),
        title=title,
    )
