"""Figures of chapter 5, scaling by √d_k."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from selfattn_lib.attention import scaled_dot_product_attention
from selfattn_lib.plotting.base import (
    COLUMN_WIDTH,
    OKABE_ITO,
)
from selfattn_lib.similarity import dot_product


def scaling_effect(
    d_k: int,
    *,
    n_keys: int = 8,
    n_samples: int = 2000,
    rng: np.random.Generator | None = None,
    axes: Sequence[Axes] | None = None,
) -> Figure:
    """Draw what dividing by ``√d_k`` does to scores and weights at one key dimension ``d_k``.

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
    as wide as the book's column), the standard deviations of the unscaled and scaled scores.

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
        figure = Figure(figsize=(COLUMN_WIDTH, 3.4), layout="constrained")
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
    hist_ax.set_xlabel("score")
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
