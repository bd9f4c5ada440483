"""Figures of chapter 5, scaling by √d_k.

Drawn for a phone (:func:`~selfattn_lib.plotting.base.for_the_page`), the panels are stacked,
the line plots' legends go under their axes and long titles are wrapped."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from numpy.typing import ArrayLike

from selfattn_lib.attention import scaled_dot_product_attention
from selfattn_lib.plotting.base import (
    OKABE_ITO,
    column_width,
    current_layout,
    for_the_page,
    new_axes,
    small_multiples,
)
from selfattn_lib.plotting.diagrams import Diagram, Grid, flow
from selfattn_lib.similarity import dot_product


def scaling_effect(
    d_k: int,
    *,
    n_keys: int = 8,
    n_samples: int = 2000,
    rng: np.random.Generator | None = None,
    axes: Sequence[Axes] | None = None,
) -> Figure:
    """Draw what dividing by ``√d_k`` does to dot products and weights at one key dimension ``d_k``.

    Left: histograms of ``n_samples`` dot products ``q·k`` of random vectors with independent
    standard normal entries, unscaled and divided by ``√d_k`` (their standard deviations are
    about ``√d_k`` and 1). Right: the softmax weights of one random query over ``n_keys``
    random keys, unscaled and scaled, side by side. The random vectors come from ``rng``; by
    default from ``np.random.default_rng([0, d_k])``, so the same ``d_k`` always gives the same
    figure (as a slider needs).

    Parameters
    ----------
    d_k
        The size of the query and key vectors of one head (a positive integer).
    axes
        Two axes to draw into (histogram, weights), e.g. one row of small multiples;
        by default a new figure, as wide as the book's column, with the two panels side by
        side.

    The histogram's title gives ``d_k`` and, on a second line (so that it fits a panel half
    as wide as the book's column), the standard deviations of the dot products, unscaled and scaled.

    Shapes
    ------
    Internally ``q``, ``k``: ``(n_samples, d_k)``; the query ``(d_k,)`` and keys
    ``(n_keys, d_k)`` of the right panel.

    Examples
    --------
    >>> fig = scaling_effect(64)
    >>> fig.axes[0].get_title()
    'd_k = 64: std of q·k\\n8.05 unscaled, 1.01 scaled'
    """
    if isinstance(d_k, bool) or not isinstance(d_k, (int, np.integer)) or d_k < 1:
        raise ValueError(f"d_k must be a positive integer, got {d_k!r}")
    if n_keys < 2 or n_samples < 2:
        raise ValueError(
            f"n_keys and n_samples must be at least 2, got n_keys={n_keys}, n_samples={n_samples}"
        )
    d_k = int(d_k)
    if rng is None:
        rng = np.random.default_rng([0, d_k])
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    q = rng.standard_normal((n_samples, d_k))  # (n_samples, d_k)
    k = rng.standard_normal((n_samples, d_k))  # (n_samples, d_k)
    unscaled = dot_product(q, k)  # (n_samples,)
    scaled = unscaled / np.sqrt(d_k)
    query = rng.standard_normal((1, d_k))  # (1, d_k)
    keys = rng.standard_normal((n_keys, d_k))  # (n_keys, d_k)
    weights_unscaled = scaled_dot_product_attention(query, keys, keys, scale=1.0)[1][0]  # (n_keys,)
    weights_scaled = scaled_dot_product_attention(query, keys, keys)[1][0]  # (n_keys,)

    if axes is None:
        figure = Figure(figsize=(column_width(), 3.4), layout="constrained")
        hist_ax, bar_ax = figure.subplots(1, 2)
    else:
        hist_ax, bar_ax = axes
        figure = hist_ax.figure
    unscaled_colour, scaled_colour = OKABE_ITO[1], OKABE_ITO[0]

    reach = 4.0 * max(float(np.sqrt(d_k)), 1.0)
    bins = np.linspace(-reach, reach, 61)
    hist_ax.hist(
        np.clip(unscaled, -reach, reach),
        bins=bins,
        color=unscaled_colour,
        alpha=0.6,
        label="q·k (unscaled)",
    )
    hist_ax.hist(
        np.clip(scaled, -reach, reach),
        bins=bins,
        color=scaled_colour,
        alpha=0.6,
        label="q·k / √d_k",
    )
    hist_ax.set_xlim(-reach, reach)
    hist_ax.set_xlabel("q·k, or q·k / √d_k")
    hist_ax.set_ylabel(f"count (of {n_samples})")
    hist_ax.set_title(
        f"d_k = {d_k}: std of q·k\n{unscaled.std():.2f} unscaled, {scaled.std():.2f} scaled",
        fontsize=10,
    )
    hist_ax.legend(loc="upper left", fontsize=8)

    positions = np.arange(n_keys)
    width = 0.4
    bar_ax.bar(
        positions - width / 2,
        weights_unscaled,
        width,
        color=unscaled_colour,
        label=f"unscaled (max {weights_unscaled.max():.2f})",
    )
    bar_ax.bar(
        positions + width / 2,
        weights_scaled,
        width,
        color=scaled_colour,
        label=f"scaled (max {weights_scaled.max():.2f})",
    )
    bar_ax.set_xticks(positions, labels=[f"k{j + 1}" for j in positions])
    bar_ax.set_ylim(0.0, 1.45)  # room for the legend above a weight of 1
    bar_ax.set_yticks(np.linspace(0.0, 1.0, 5))
    bar_ax.set_xlabel("key")
    bar_ax.set_ylabel("softmax weight")
    bar_ax.set_title(f"weights of one query over {n_keys} keys", fontsize=10)
    bar_ax.legend(loc="upper right", fontsize=8)
    return figure


@for_the_page
def scaling_effect_rows(dimensions: Sequence[int]) -> Figure:
    """Draw :func:`scaling_effect` once per key dimension: a row of two panels (the scores'
    histogram, the weights of one query) for each ``d_k`` on a laptop; on a phone the panels
    are stacked, each as wide as the column. Each row's random vectors are those of
    ``scaling_effect(d_k)``, so a row is the figure of the chapter's slider at that ``d_k``.

    Examples
    --------
    >>> fig = scaling_effect_rows([4, 64])
    >>> [ax.get_title().split(":")[0] for ax in fig.axes[::2]]
    ['d_k = 4', 'd_k = 64']
    """
    if len(dimensions) == 0:
        raise ValueError("dimensions is empty: give at least one d_k")
    figure, panels = small_multiples(
        2 * len(dimensions), columns=2, panel_height=2.6 if _phone() else 2.4
    )
    for row, d_k in enumerate(dimensions):  # one row per d_k: scores, weights
        scaling_effect(d_k, axes=panels[2 * row : 2 * row + 2])
    return figure


@for_the_page
def one_query_scaling(
    tokens: Sequence[str],
    scores: ArrayLike,
    scaled_scores: ArrayLike,
    weights: ArrayLike,
    scaled_weights: ArrayLike,
    *,
    d_k: int,
    query: str,
) -> Diagram:
    """Draw one query's scores against every key, the same scores divided by ``√d_k``, and
    the softmax weights of both, as one computed diagram: the unscaled weights on the left,
    the scaled ones on the right, the scores in the middle.

    The figure draws the arrays it is given and computes nothing: the notebook computes the
    scores with :func:`~selfattn_lib.attention.attention_scores` and the weights with
    :func:`~selfattn_lib.softmax.softmax`.

    Parameters
    ----------
    tokens
        The ``T_k`` key tokens, one label per row.
    scores, scaled_scores
        The query's unscaled scores ``q·k_j`` and its scores ``q·k_j / √d_k``.
    weights, scaled_weights
        The softmax of each: the weights without and with the division.
    d_k
        The size of the query and key vectors (written in the operator and the title).
    query
        The query's token (written in the title).

    Shapes
    ------
    ``tokens``: ``T_k`` strings; the four arrays ``(T_k,)``, drawn as columns ``(T_k, 1)``.

    Examples
    --------
    >>> from selfattn_lib.plotting.diagrams import read_back
    >>> d = one_query_scaling(["a", "b"], [4.0, 0.0], [2.0, 0.0], [0.98, 0.02],
    ...                       [0.88, 0.12], d_k=4, query="a")
    >>> read_back(d.figure, "q·k/√4").ravel().tolist()
    [2.0, 0.0]
    """
    if isinstance(d_k, bool) or not isinstance(d_k, (int, np.integer)) or d_k < 1:
        raise ValueError(f"d_k must be a positive integer, got {d_k!r}")
    if not isinstance(query, str) or not query:
        raise TypeError(f"query must be a non-empty str, got {query!r}")
    tokens = [str(token) for token in tokens]
    arrays = {
        "scores": scores,
        "scaled_scores": scaled_scores,
        "weights": weights,
        "scaled_weights": scaled_weights,
    }
    columns = {}
    for name, values in arrays.items():
        array = np.asarray(values, dtype=np.float64)
        if array.shape != (len(tokens),):
            raise ValueError(
                f"{name} must have one value per token, shape ({len(tokens)},), "
                f"got shape {array.shape}"
            )
        columns[name] = array[:, None]  # (T_k, 1): drawn as a column beside the tokens
    return flow(
        Grid("a", columns["weights"], role="weights", note="unscaled"),
        "← softmax",
        Grid("q·k", columns["scores"], rows=tokens, role="scores", fmt=".1f"),
        f"÷√{d_k} →",
        Grid(f"q·k/√{d_k}", columns["scaled_scores"], role="scores"),
        "softmax →",
        Grid("a′", columns["scaled_weights"], role="weights", note="scaled"),
        title=f'The query of "{query}" against every key,{_break()}d_k = {d_k}',
    )


#: On a phone a line plot is this much taller, for its legend under the axes.
_PHONE_LEGEND_HEIGHT = 1.0


def _phone() -> bool:
    return current_layout() == "phone"


def _break() -> str:
    """A title's break between its parts: a space on a laptop, a new line on a phone."""
    return "\n" if _phone() else " "


def _line_plot_size(laptop_height: float) -> tuple[float, float]:
    """A line plot's size: 0.8 of the laptop's column, or a phone's column and taller."""
    if _phone():
        return column_width(), laptop_height + _PHONE_LEGEND_HEIGHT
    return 0.8 * column_width(), laptop_height


def _title(axes: Axes, title: str) -> None:
    """A 10-point title, wrapped to the width of a phone's column when drawn for one."""
    if _phone():
        title = textwrap.fill(title, 40)
    axes.set_title(title, fontsize=10)


def _legend(axes: Axes) -> None:
    """The legend in the axes where it fits best on a laptop; under them on a phone, so
    that it covers no data in the narrower plot."""
    if _phone():
        axes.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=2)
    else:
        axes.legend(fontsize=8)


@for_the_page
def versus_dimension(
    dimensions: ArrayLike,
    unscaled: ArrayLike,
    scaled: ArrayLike,
    *,
    ylabel: str,
    title: str = "",
    log_y: bool = False,
    guides: Sequence[tuple[float | ArrayLike, str]] = (),
    connect: bool = True,
    ax: Axes | None = None,
) -> Figure:
    """Plot a statistic measured for unscaled dot products ``q·k`` (vermillion circles) and
    scaled ones ``q·k / √d_k`` (blue squares) against ``d_k`` on a base-2 logarithmic axis, with
    grey reference lines (``guides``: a constant or one value per ``d_k``, and a label;
    dashed, then dotted). With ``connect=False`` the measurements are markers only, so that a
    guide they lie on stays visible.

    Shapes
    ------
    ``dimensions``, ``unscaled``, ``scaled``: ``(n,)``; each guide's values: a number or
    ``(n,)``.

    Examples
    --------
    >>> fig = versus_dimension([1, 2, 4], [1.0, 2.0, 4.0], [1.0, 1.0, 1.0],
    ...                        ylabel="variance", guides=[(1.0, "Var = 1")])
    >>> [line.get_label() for line in fig.axes[0].lines]
    ['Var = 1', 'unscaled $q \\\\cdot k$', 'scaled $q \\\\cdot k / \\\\sqrt{d_k}$']
    """
    x = np.asarray(dimensions, dtype=np.float64)
    series = {
        "unscaled": np.asarray(unscaled, dtype=np.float64),
        "scaled": np.asarray(scaled, dtype=np.float64),
    }
    if x.ndim != 1 or x.size == 0 or (x <= 0).any():
        raise ValueError(f"dimensions must be positive numbers, shape (n,), got {x.shape}")
    for name, values in series.items():
        if values.shape != x.shape:
            raise ValueError(
                f"{name} must have one value per dimension, shape {x.shape}, got {values.shape}"
            )
    axes = new_axes(_line_plot_size(3.4), ax)
    for (values, label), style in zip(guides, ("--", ":", "-."), strict=False):
        axes.plot(x, np.broadcast_to(values, x.shape), color="grey", linestyle=style, label=label)
    line = "-" if connect else ""
    axes.plot(x, series["unscaled"], f"o{line}", color=OKABE_ITO[1], label="unscaled $q \\cdot k$")
    axes.plot(
        x,
        series["scaled"],
        f"s{line}",
        color=OKABE_ITO[0],
        label="scaled $q \\cdot k / \\sqrt{d_k}$",
    )
    axes.set_xscale("log", base=2)
    if log_y:
        axes.set_yscale("log")
    axes.set_xlabel("$d_k$ (size of queries and keys)")
    axes.set_ylabel(ylabel)
    if title:
        _title(axes, title)
    _legend(axes)
    return axes.figure


@for_the_page
def saturation_by_dimension(
    dimensions: ArrayLike,
    top_unscaled: ArrayLike,
    top_scaled: ArrayLike,
    entropy_unscaled: ArrayLike,
    entropy_scaled: ArrayLike,
    *,
    n_keys: int,
) -> Figure:
    """Two panels side by side, as wide as the book's column: the median largest weight of a
    row of ``n_keys`` weights against ``d_k`` (left, with the one-hot and uniform levels 1 and
    ``1 / n_keys``), and its median entropy (right, with 0 and ``ln n_keys``), without and
    with the division by ``√d_k``. Each panel is drawn by :func:`versus_dimension`.

    Shapes
    ------
    ``dimensions`` and the four statistics: ``(n,)``, one value per ``d_k``.

    Examples
    --------
    >>> fig = saturation_by_dimension([1, 4], [0.3, 0.9], [0.3, 0.3], [1.9, 0.4], [1.9, 1.8],
    ...                               n_keys=8)
    >>> [ax.get_title() for ax in fig.axes]
    ['Largest of 8 weights', 'Entropy of 8 weights']
    """
    if isinstance(n_keys, bool) or not isinstance(n_keys, (int, np.integer)) or n_keys < 2:
        raise ValueError(f"n_keys must be an integer >= 2, got {n_keys!r}")
    height = 3.2 + (_PHONE_LEGEND_HEIGHT if _phone() else 0.0)  # stacked on a phone
    figure, (left, right) = small_multiples(2, columns=2, panel_height=height)
    versus_dimension(
        dimensions,
        top_unscaled,
        top_scaled,
        ylabel="median largest weight",
        guides=[(1.0, "one-hot (1)"), (1 / n_keys, f"uniform (1/{n_keys})")],
        title=f"Largest of {n_keys} weights",
        ax=left,
    )
    versus_dimension(
        dimensions,
        entropy_unscaled,
        entropy_scaled,
        ylabel="median entropy (nats)",
        guides=[(0.0, "one-hot (0)"), (float(np.log(n_keys)), f"uniform (ln {n_keys})")],
        title=f"Entropy of {n_keys} weights",
        ax=right,
    )
    return figure


@for_the_page
def learning_rate_sweep(
    learning_rates: ArrayLike,
    unscaled: ArrayLike,
    scaled: ArrayLike,
    *,
    threshold: float,
    ax: Axes | None = None,
) -> Figure:
    """Plot the loss a head reaches after training at each learning rate, without and with
    the division by ``√d_k`` (vermillion circles and blue squares), both axes logarithmic,
    with a dashed grey line at ``threshold``: above it, a run has failed or not yet learned.

    Shapes
    ------
    ``learning_rates``, ``unscaled``, ``scaled``: ``(n,)`` positive numbers.

    Examples
    --------
    >>> fig = learning_rate_sweep([0.01, 0.1], [0.05, 2.0], [0.2, 0.03], threshold=0.3)
    >>> fig.axes[0].lines[1].get_ydata().tolist()  # the unscaled head's losses
    [0.05, 2.0]
    """
    x = np.asarray(learning_rates, dtype=np.float64)
    runs = {
        "unscaled": np.asarray(unscaled, dtype=np.float64),
        "scaled": np.asarray(scaled, dtype=np.float64),
    }
    if x.ndim != 1 or x.size == 0 or not (np.isfinite(x) & (x > 0)).all():
        raise ValueError(f"learning_rates must be positive numbers, shape (n,), got {x}")
    for name, losses in runs.items():
        if losses.shape != x.shape:
            raise ValueError(
                f"{name} must have one loss per learning rate, shape {x.shape}, got {losses.shape}"
            )
        if not (np.isfinite(losses) & (losses > 0)).all():
            raise ValueError(f"{name} losses must be finite and > 0 (log axis)")
    if not threshold > 0:
        raise ValueError(f"threshold must be > 0, got {threshold!r}")
    axes = new_axes(_line_plot_size(3.2), ax)
    axes.axhline(threshold, color="grey", linestyle="--", label=f"{threshold:g}: failed or slow")
    styles = {"unscaled": ("o-", OKABE_ITO[1]), "scaled": ("s-", OKABE_ITO[0])}
    labels = {"unscaled": "unscaled $q \\cdot k$", "scaled": "scaled $q \\cdot k / \\sqrt{d_k}$"}
    for name, losses in runs.items():
        marker, colour = styles[name]
        axes.plot(x, losses, marker, color=colour, label=labels[name])
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("learning rate")
    axes.set_ylabel("loss after training (median)")
    _legend(axes)
    return axes.figure
