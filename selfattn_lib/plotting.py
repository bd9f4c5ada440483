"""Figures used across the course.

Every function returns a :class:`matplotlib.figure.Figure` and never calls ``show``. Figures
are made with ``Figure()`` rather than ``pyplot``, so a notebook displays each one exactly
once (as the cell's value) and no figure is kept alive by pyplot's global state. Pass ``ax``
to draw into an existing axes instead (for small multiples); the axes' figure is returned.

Colours: sequential data (weights in [0, 1]) uses ``viridis``; signed data (similarities)
uses the diverging ``RdBu_r`` centred on zero; categorical lines use the Okabe–Ito palette.
All three are safe for the common forms of colour blindness.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure

SEQUENTIAL_CMAP = "viridis"
DIVERGING_CMAP = "RdBu_r"
# Okabe & Ito (2008), "Color Universal Design": distinguishable under common colour blindness.
OKABE_ITO: tuple[str, ...] = (
    "#0072B2",  # blue
    "#D55E00",  # vermillion
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#E69F00",  # orange
    "#56B4E9",  # sky blue
    "#F0E442",  # yellow
    "#000000",  # black
)


def new_axes(figsize: tuple[float, float] = (5.0, 4.0), ax: Axes | None = None) -> Axes:
    """Return ``ax`` if given, else the axes of a new, pyplot-free figure of ``figsize``."""
    if ax is not None:
        return ax
    fig = Figure(figsize=figsize, layout="constrained")
    return fig.add_subplot()


def heatmap(
    matrix: np.ndarray,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    *,
    title: str = "",
    xlabel: str = "key",
    ylabel: str = "query",
    colorbar_label: str = "",
    annotate: bool = True,
    fmt: str = ".2f",
    ax: Axes | None = None,
) -> Figure:
    """Draw a labelled matrix, e.g. similarities or attention weights.

    Signed data is drawn with a diverging map centred on zero, non-negative data with
    ``viridis``. Cell values are written in the cells when ``annotate`` is true.

    Shapes
    ------
    ``matrix``: ``(T_q, T_k)``; ``row_labels``: ``T_q`` strings; ``col_labels``: ``T_k`` strings.

    Examples
    --------
    >>> fig = heatmap(np.eye(2), ["a", "b"], ["a", "b"], title="identity")
    >>> fig.axes[0].get_title()
    'identity'
    """
    values = np.asarray(matrix, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"matrix must be 2-D (T_q, T_k), got shape {values.shape}")
    if len(row_labels) != values.shape[0] or len(col_labels) != values.shape[1]:
        raise ValueError(
            f"labels do not fit matrix of shape {values.shape}: "
            f"{len(row_labels)} row_labels and {len(col_labels)} col_labels"
        )
    if not np.isfinite(values).all():
        raise ValueError("matrix contains NaN or infinity")

    ax = new_axes((0.6 * values.shape[1] + 2.5, 0.5 * values.shape[0] + 1.5), ax)
    if values.min() < 0:
        limit = float(np.abs(values).max())
        norm = TwoSlopeNorm(vmin=-limit, vcenter=0.0, vmax=limit)
        image = ax.imshow(values, cmap=DIVERGING_CMAP, norm=norm)
    else:
        image = ax.imshow(values, cmap=SEQUENTIAL_CMAP, vmin=0.0)

    ax.set_xticks(range(values.shape[1]), labels=list(col_labels), rotation=45, ha="right")
    ax.set_yticks(range(values.shape[0]), labels=list(row_labels))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, label=colorbar_label)

    if annotate:
        for (row, col), value in np.ndenumerate(values):
            red, green, blue, _ = image.cmap(image.norm(value))
            # Dark text on light cells, light text on dark cells (relative luminance).
            light_cell = 0.2126 * red + 0.7152 * green + 0.0722 * blue > 0.5
            ax.text(
                col,
                row,
                format(value, fmt),
                ha="center",
                va="center",
                fontsize=8,
                color="black" if light_cell else "white",
            )
    return ax.figure


def bar_chart(
    values: np.ndarray,
    labels: Sequence[str],
    *,
    title: str = "",
    xlabel: str = "",
    ylabel: str = "",
    ylim: tuple[float, float] | None = None,
    annotate: bool = True,
    fmt: str = ".2f",
    ax: Axes | None = None,
) -> Figure:
    """Draw one bar per label, e.g. the softmax weights of a row of scores.

    Shapes
    ------
    ``values``: ``(T,)``; ``labels``: ``T`` strings.

    Examples
    --------
    >>> fig = bar_chart(np.array([0.2, 0.8]), ["a", "b"], ylabel="weight")
    >>> fig.axes[0].get_ylabel()
    'weight'
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 1 or len(labels) != values.shape[0]:
        raise ValueError(
            f"values must be 1-D with one entry per label: values has shape {values.shape}, "
            f"there are {len(labels)} labels"
        )
    ax = new_axes((0.55 * len(labels) + 2.5, 3.0), ax)
    bars = ax.bar(range(len(labels)), values, color=OKABE_ITO[0])
    ax.set_xticks(range(len(labels)), labels=list(labels))
    ax.axhline(0.0, color="black", linewidth=0.8)
    if ylim is not None:
        ax.set_ylim(*ylim)
    if annotate:
        ax.bar_label(bars, labels=[format(value, fmt) for value in values], fontsize=8)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return ax.figure


def vectors_2d(
    vectors: dict[str, Sequence[float]],
    *,
    title: str = "",
    xlabel: str = "",
    ylabel: str = "",
    ax: Axes | None = None,
) -> Figure:
    """Draw named 2-D vectors as arrows from the origin, each labelled at its tip.

    Shapes
    ------
    ``vectors``: a mapping from name to a vector of shape ``(2,)``.

    Examples
    --------
    >>> fig = vectors_2d({"a": [1, 0], "b": [0, 1]}, xlabel="x", ylabel="y")
    >>> fig.axes[0].get_xlabel()
    'x'
    """
    if not vectors:
        raise ValueError("vectors is empty: give at least one named vector")
    points = {name: np.asarray(vector, dtype=np.float64) for name, vector in vectors.items()}
    for name, point in points.items():
        if point.shape != (2,):
            raise ValueError(f"vectors[{name!r}] must have shape (2,), got {point.shape}")

    ax = new_axes((4.5, 4.5), ax)
    for index, (name, point) in enumerate(points.items()):
        colour = OKABE_ITO[index % len(OKABE_ITO)]
        ax.annotate(
            "",
            xy=tuple(point),
            xytext=(0.0, 0.0),
            arrowprops={"arrowstyle": "-|>", "color": colour, "linewidth": 2},
        )
        ax.annotate(name, xy=tuple(point), xytext=(4, 4), textcoords="offset points", color=colour)

    reach = max(1.0, max(float(np.abs(point).max()) for point in points.values())) * 1.2
    ax.set_xlim(-reach, reach)
    ax.set_ylim(-reach, reach)
    ax.set_aspect("equal")
    ax.axhline(0.0, color="grey", linewidth=0.6)
    ax.axvline(0.0, color="grey", linewidth=0.6)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return ax.figure


# --- Chapter 1: dot-product similarity ---


def similarity_geometry(
    a: Sequence[float],
    b: Sequence[float],
    *,
    reach: float | None = None,
    title: str = "",
    ax: Axes | None = None,
) -> Figure:
    """Draw two 2-D vectors, the angle between them and the shadow of ``b`` on ``a``.

    The title states ``|a|``, ``|b|``, the angle θ, the dot product ``a·b`` and ``cos θ``.
    The shadow (``b`` projected onto the line of ``a``) shows the geometry of the dot product:
    ``a·b = |a| × (signed length of the shadow) = |a| |b| cos θ``; it points away from ``a``
    when θ > 90°, where the dot product is negative. For a zero vector the angle and the
    cosine are undefined, and the title says so.

    Parameters
    ----------
    a, b
        The two vectors.
    reach
        Half the width of the square drawing area; by default just beyond the longer vector.
        Fix it to compare several figures (small multiples, a widget).
    title
        An optional first title line, above the values.

    Shapes
    ------
    ``a``, ``b``: ``(2,)``.

    Examples
    --------
    >>> fig = similarity_geometry([1.0, 0.0], [1.0, 1.0])
    >>> print(fig.axes[0].get_title())
    |a| = 1.00, |b| = 1.41, θ = 45°
    a·b = 1.00, cos θ = 0.71
    """
    # Local imports keep this chapter's section self-contained.
    from matplotlib.patches import Arc

    from selfattn_lib.similarity import cosine_similarity, dot_product

    vectors = {}
    for name, value in (("a", a), ("b", b)):
        vector = np.asarray(value, dtype=np.float64)
        if vector.shape != (2,):
            raise ValueError(f"{name} must have shape (2,), got {vector.shape}")
        if not np.isfinite(vector).all():
            raise ValueError(f"{name} contains NaN or infinity: {vector}")
        vectors[name] = vector
    a, b = vectors["a"], vectors["b"]
    length_a, length_b = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    dot = float(dot_product(a, b))
    if reach is None:
        reach = max(1.0, 1.15 * max(length_a, length_b))
    elif not (np.isfinite(reach) and reach > 0):
        raise ValueError(f"reach must be a finite positive number, got {reach}")

    ax = new_axes((4.6, 4.8), ax)
    ax.axhline(0.0, color="lightgrey", linewidth=0.6, zorder=0)
    ax.axvline(0.0, color="lightgrey", linewidth=0.6, zorder=0)
    colour_a, colour_b = OKABE_ITO[0], OKABE_ITO[1]

    if length_a > 0 and length_b > 0:
        cosine = float(cosine_similarity(a, b))
        angle = float(np.degrees(np.arccos(cosine)))
        values = f"|a| = {length_a:.2f}, |b| = {length_b:.2f}, θ = {angle:.0f}°"
        values += f"\na·b = {_two_decimals(dot)}, cos θ = {_two_decimals(cosine)}"

        # The line through a (dotted), the shadow of b on it (thick) and the drop (dashed).
        direction = a / length_a
        ax.plot(*np.outer([-2 * reach, 2 * reach], direction).T, ":", color=colour_a, lw=0.8)
        foot = (dot / length_a) * direction
        ax.plot(
            [0.0, foot[0]],
            [0.0, foot[1]],
            color=colour_b,
            lw=7,
            alpha=0.45,
            solid_capstyle="butt",
            label="shadow of b on a",
        )
        ax.plot([b[0], foot[0]], [b[1], foot[1]], "--", color="grey", lw=1)

        # The angle, measured the short way round from a to b.
        start = float(np.degrees(np.arctan2(a[1], a[0])))
        turn = (float(np.degrees(np.arctan2(b[1], b[0]))) - start + 180.0) % 360.0 - 180.0
        radius = 0.22 * reach
        low, high = sorted((start, start + turn))
        ax.add_patch(
            Arc((0.0, 0.0), 2 * radius, 2 * radius, theta1=low, theta2=high, color="black", lw=1)
        )
        middle = np.radians(start + turn / 2)
        if angle >= 8.0:  # a smaller angle leaves no room for its label
            ax.text(
                1.45 * radius * np.cos(middle),
                1.45 * radius * np.sin(middle),
                "θ",
                ha="center",
                va="center",
                fontsize=11,
            )
    else:
        values = f"|a| = {length_a:.2f}, |b| = {length_b:.2f}, θ undefined"
        values += f"\na·b = {_two_decimals(dot)}, cos θ undefined (zero vector)"

    for name, vector, colour in (("a", a, colour_a), ("b", b, colour_b)):
        ax.annotate(
            "",
            xy=tuple(vector),
            xytext=(0.0, 0.0),
            arrowprops={"arrowstyle": "-|>", "color": colour, "linewidth": 2},
        )
        ax.annotate(
            rf"$\mathbf{{{name}}}$",
            xy=tuple(vector),
            xytext=(5, 5),
            textcoords="offset points",
            color=colour,
            fontsize=13,
        )

    ax.set_xlim(-reach, reach)
    ax.set_ylim(-reach, reach)
    ax.set_aspect("equal")
    ax.set_xlabel("component 1")
    ax.set_ylabel("component 2")
    ax.set_title(f"{title}\n{values}" if title else values, fontsize=10)
    return ax.figure


def _two_decimals(value: float) -> str:
    """``value`` with two decimals, never ``-0.00`` (a rounding error left of zero)."""
    return f"{round(value, 2) + 0.0:.2f}"


# --- Chapter 2: softmax ---


def temperature_weights(
    scores: Sequence[float],
    labels: Sequence[str],
    temperature: float,
    *,
    ax: Axes | None = None,
) -> Figure:
    """Draw the softmax weights of one row of ``scores`` at ``temperature``, one bar per label.

    The y axis always runs from 0 to a little above 1, so figures at different temperatures
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
        xlabel="key",
        ylabel="softmax weight",
        ylim=(0.0, 1.15),
        ax=ax,
    )
    axes = ax if ax is not None else figure.axes[0]
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


# --- Chapter 3: self-attention without weights ---


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
    the left are that row.

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
    fig = Figure(figsize=(4.0 + 1.1 * n_tokens, 0.25 * n_tokens + 3.2), layout="constrained")
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


# --- Chapter 5: scaling ---


def scaling_effect(
    d_k: int,
    *,
    n_keys: int = 8,
    n_samples: int = 2000,
    seed: int = 0,
    axes: Sequence[Axes] | None = None,
) -> Figure:
    """Draw what dividing by ``√d_k`` does to scores and weights at one key dimension ``d_k``.

    Left: histograms of ``n_samples`` dot products ``q·k`` of random vectors with independent
    standard normal entries, unscaled and divided by ``√d_k`` (their standard deviations are
    about ``√d_k`` and 1). Right: the softmax weights of one random query over ``n_keys``
    random keys, unscaled and scaled, side by side. The draws depend only on ``seed`` and
    ``d_k``, so the same ``d_k`` always gives the same figure.

    Parameters
    ----------
    d_k
        The size of the query and key vectors of one head (a positive integer).
    axes
        Two axes to draw into (histogram, weights), e.g. one column of small multiples;
        by default a new figure with two panels.

    Shapes
    ------
    Internally ``q``, ``k``: ``(n_samples, d_k)``; the query ``(d_k,)`` and keys
    ``(n_keys, d_k)`` of the right panel.

    Examples
    --------
    >>> fig = scaling_effect(64)
    >>> fig.axes[0].get_title()
    'd_k = 64: std of q·k 8.05 unscaled, 1.01 scaled'
    """
    # A local import keeps this chapter's section self-contained.
    from selfattn_lib.softmax import softmax

    if isinstance(d_k, bool) or not isinstance(d_k, (int, np.integer)) or d_k < 1:
        raise ValueError(f"d_k must be a positive integer, got {d_k!r}")
    if n_keys < 2 or n_samples < 2:
        raise ValueError(
            f"n_keys and n_samples must be at least 2, got n_keys={n_keys}, n_samples={n_samples}"
        )
    d_k = int(d_k)
    rng = np.random.default_rng([seed, d_k])
    q = rng.standard_normal((n_samples, d_k))  # (n_samples, d_k)
    k = rng.standard_normal((n_samples, d_k))  # (n_samples, d_k)
    unscaled = (q * k).sum(axis=-1)  # (n_samples,)
    scaled = unscaled / np.sqrt(d_k)
    query = rng.standard_normal(d_k)  # (d_k,)
    keys = rng.standard_normal((n_keys, d_k))  # (n_keys, d_k)
    query_scores = keys @ query  # (n_keys,)
    weights_unscaled = softmax(query_scores)
    weights_scaled = softmax(query_scores / np.sqrt(d_k))

    if axes is None:
        figure = Figure(figsize=(10.0, 3.6), layout="constrained")
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
        f"d_k = {d_k}: std of q·k {unscaled.std():.2f} unscaled, {scaled.std():.2f} scaled",
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
    bar_ax.set_ylim(0.0, 1.3)
    bar_ax.set_xlabel("key")
    bar_ax.set_ylabel("softmax weight")
    bar_ax.set_title(f"weights of one query over {n_keys} keys", fontsize=10)
    bar_ax.legend(loc="upper right", fontsize=8)
    return figure


# --- Chapter 6: masks ---

MASK_KINDS: tuple[str, ...] = ("none", "padding", "causal", "both")


def mask_and_weights(
    scores: np.ndarray,
    tokens: Sequence[Sequence[str]],
    lengths: Sequence[int],
    kind: str,
    *,
    axes: Sequence[Axes] | None = None,
) -> Figure:
    """Draw, for each sequence of a padded batch, its mask of ``kind`` and the masked weights.

    ``kind`` is ``"none"``, ``"padding"`` (keys beyond ``lengths[b]`` hidden), ``"causal"``
    (no key after the query) or ``"both"``. Per sequence two heatmaps are drawn side by side:
    the boolean mask (1 = may attend) and the attention weights
    ``softmax(where(mask, scores, -inf))``, with zeros for a query that may attend to nothing.

    Shapes
    ------
    ``scores``: ``(B, T, T)``; ``tokens``: ``B`` lists of ``T`` labels (padding included);
    ``lengths``: ``(B,)``; ``axes``: ``2 B`` axes (mask, weights, mask, weights, …).

    Examples
    --------
    >>> scores = np.zeros((1, 3, 3))
    >>> fig = mask_and_weights(scores, [["a", "b", "<pad>"]], [2], "both")
    >>> fig.axes[1].images[0].get_array()[2].round(2).tolist()  # the weights of query <pad>
    [0.5, 0.5, 0.0]
    """
    # Local imports keep this chapter's section self-contained.
    from selfattn_lib.masks import causal_mask, combine_masks, padding_mask
    from selfattn_lib.softmax import softmax

    values = np.asarray(scores, dtype=np.float64)
    if values.ndim != 3 or values.shape[1] != values.shape[2]:
        raise ValueError(f"scores must have shape (B, T, T), got shape {values.shape}")
    n_seq, t = values.shape[:2]
    if len(tokens) != n_seq or any(len(row) != t for row in tokens):
        raise ValueError(f"tokens must be {n_seq} lists of {t} labels to fit scores {values.shape}")
    if kind not in MASK_KINDS:
        raise ValueError(f"kind must be one of {MASK_KINDS}, got {kind!r}")
    lengths = np.asarray(lengths)
    if lengths.shape != (n_seq,):
        raise ValueError(f"lengths must have shape (B,) = ({n_seq},), got shape {lengths.shape}")

    parts = [np.ones((t, t), dtype=bool)]  # (T, T): "none" allows everything
    if kind in ("padding", "both"):
        parts.append(padding_mask(lengths, max_len=t))  # (B, 1, T)
    if kind in ("causal", "both"):
        parts.append(causal_mask(t))  # (T, T)
    mask = np.broadcast_to(combine_masks(*parts), values.shape)  # (B, T, T)
    weights = softmax(np.where(mask, values, -np.inf), axis=-1)  # (B, T, T)

    if axes is None:
        fig = Figure(figsize=(3.9 * 2 * n_seq, 0.45 * t + 2.0), layout="constrained")
        axes = fig.subplots(1, 2 * n_seq).ravel()
    if len(axes) != 2 * n_seq:
        raise ValueError(f"axes must hold 2 * B = {2 * n_seq} axes, got {len(axes)}")
    for b in range(n_seq):
        heatmap(
            mask[b].astype(float),
            tokens[b],
            tokens[b],
            title=f"mask: {kind} (length {lengths[b]})",
            colorbar_label="1 = may attend",
            fmt=".0f",
            ax=axes[2 * b],
        )
        heatmap(
            weights[b],
            tokens[b],
            tokens[b],
            title="attention weights",
            colorbar_label="weight",
            ax=axes[2 * b + 1],
        )
    return axes[0].figure


# --- Chapter 7: multi-head attention ---

HEAD_LAYOUTS: tuple[str, ...] = ("T D", "T H D_h", "H T D_h")
# Light tints of the Okabe–Ito colours, one per head: black text stays readable on them.
_HEAD_TINTS: tuple[str, ...] = ("#9CC3E0", "#EFB28A", "#8FD4BF", "#E7BCD5", "#F3D08A", "#B9DFF4")


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
    mixes two tokens.

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
    gap = 0.6
    width = n_blocks * n_cols + (n_blocks - 1) * gap

    ax = new_axes((0.62 * width + 1.2, 0.62 * n_rows + 1.0), ax)
    for block, block_values in enumerate(blocks):
        left = block * (n_cols + gap)
        for (row, col), number in np.ndenumerate(block_values):
            token, feature = divmod(int(number), d_model)
            ax.add_patch(
                Rectangle(
                    (left + col, row),
                    1,
                    1,
                    facecolor=_HEAD_TINTS[feature // d_head],
                    edgecolor="white",
                    linewidth=1.5,
                )
            )
            ax.text(
                left + col + 0.5,
                row + 0.42,
                str(int(number)),
                ha="center",
                va="center",
                fontsize=10,
                fontweight="bold",
                in_layout=False,  # inside its cell: the layout need not measure it (faster)
            )
            ax.text(
                left + col + 0.5,
                row + 0.78,
                f"t{token} f{feature}",
                ha="center",
                va="center",
                fontsize=6.5,
                in_layout=False,
            )
        ax.add_patch(
            Rectangle((left, 0), n_cols, n_rows, fill=False, edgecolor="black", linewidth=1.2)
        )
        if layout == "T D":
            for boundary in range(d_head, d_model, d_head):  # where one head's slice ends
                ax.plot(
                    [boundary, boundary], [0, n_rows], color="black", linewidth=1.2, linestyle="--"
                )
        if block_titles[block]:
            ax.text(
                left + n_cols / 2, -0.25, block_titles[block], ha="center", va="bottom", fontsize=9
            )
        for col, label in enumerate(col_labels):
            ax.text(
                left + col + 0.5,
                n_rows + 0.15,
                label,
                ha="center",
                va="top",
                fontsize=7,
                color="dimgray",
            )
    for row, label in enumerate(row_labels):
        ax.text(-0.15, row + 0.5, label, ha="right", va="center", fontsize=8)
    ax.set_xlim(-0.15 - 0.18 * max(len(label) for label in row_labels), width + 0.05)
    ax.set_ylim(n_rows + 0.7, -0.9 if any(block_titles) else -0.3)
    ax.set_aspect("equal")
    ax.axis("off")
    axis_note = {
        "T D": "feature",
        "T H D_h": "feature within the head",
        "H T D_h": "feature within the head",
    }[layout]
    ax.text(width / 2, n_rows + 0.65, axis_note, ha="center", va="top", fontsize=7, color="dimgray")
    ax.set_title(title, fontsize=10)
    return ax.figure


def head_weights(
    weights: np.ndarray,
    tokens: Sequence[str],
    *,
    key_tokens: Sequence[str] | None = None,
    titles: Sequence[str] | None = None,
    axes: Sequence[Axes] | None = None,
) -> Figure:
    """Draw the attention weights of several heads side by side, on one colour scale.

    Every panel is a heatmap (queries as rows, keys as columns, weights written in the cells)
    with colours fixed to ``[0, 1]``, so the same colour means the same weight in every head;
    one colour bar serves all panels.

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
    if axes is None:
        fig = Figure(figsize=(n_heads * (0.55 * t_k + 1.9) + 1.0, 0.5 * t_q + 1.6))
        fig.set_layout_engine("constrained")
        axes = np.atleast_1d(fig.subplots(1, n_heads)).ravel()
    if len(axes) != n_heads:
        raise ValueError(f"axes must hold H = {n_heads} axes, got {len(axes)}")
    for head, ax in enumerate(axes):
        image = ax.imshow(values[head], cmap=SEQUENTIAL_CMAP, vmin=0.0, vmax=1.0)
        ax.set_xticks(range(t_k), labels=list(key_tokens), rotation=45, ha="right")
        ax.set_yticks(range(t_q), labels=list(tokens))
        ax.set_xlabel("key")
        ax.set_ylabel("query")
        ax.set_title(titles[head])
        for (row, col), value in np.ndenumerate(values[head]):
            red, green, blue, _ = image.cmap(image.norm(value))
            light = 0.2126 * red + 0.7152 * green + 0.0722 * blue > 0.5  # dark text on light
            ax.text(
                col,
                row,
                f"{value:.2f}",
                ha="center",
                va="center",
                fontsize=8,
                color="black" if light else "white",
                in_layout=False,  # inside its cell: the layout need not measure it (faster)
            )
    axes[0].figure.colorbar(image, ax=list(axes), label="weight", shrink=0.9)
    return axes[0].figure


# --- Chapter 4: queries, keys and values ---


def projected_attention_weights(
    x: Sequence[Sequence[float]],
    w_q: Sequence[Sequence[float]],
    w_k: Sequence[Sequence[float]],
    labels: Sequence[str],
    *,
    query_scale: float = 1.0,
    ax: Axes | None = None,
) -> Figure:
    """Draw the attention weights ``softmax((X · s W_Q)(X W_K)ᵀ / √d_k)`` as a heatmap.

    ``query_scale`` (``s``) multiplies the query projection: 0 makes every query the zero
    vector (uniform weights), larger values sharpen every row, as a lower temperature would.

    Shapes
    ------
    ``x``: ``(T, D)``; ``w_q``, ``w_k``: ``(D, d_k)``; ``labels``: ``T`` strings.

    Examples
    --------
    >>> x = [[1.0, 0.0], [0.0, 1.0]]
    >>> fig = projected_attention_weights(x, [[1.0], [0.0]], [[1.0], [0.0]], ["a", "b"])
    >>> fig.axes[0].get_title()
    'weights with 1.0 × W_Q'
    """
    from selfattn_lib.softmax import softmax

    x = np.asarray(x, dtype=np.float64)
    w_q = np.asarray(w_q, dtype=np.float64)
    w_k = np.asarray(w_k, dtype=np.float64)
    if x.ndim != 2 or w_q.ndim != 2 or w_k.ndim != 2:
        raise ValueError("x, w_q and w_k must be matrices (T, D), (D, d_k), (D, d_k)")
    if w_q.shape != w_k.shape or w_q.shape[0] != x.shape[1]:
        raise ValueError(
            f"w_q {w_q.shape} and w_k {w_k.shape} must both be (D, d_k) with D = {x.shape[1]}"
        )
    queries = x @ (query_scale * w_q)  # (T, d_k)
    keys = x @ w_k  # (T, d_k)
    weights = softmax(queries @ keys.T / np.sqrt(w_q.shape[1]), axis=-1)  # (T, T)
    figure = heatmap(
        weights,
        labels,
        labels,
        title=f"weights with {query_scale:.1f} × W_Q",
        colorbar_label="attention weight",
        ax=ax,
    )
    axes = ax if ax is not None else figure.axes[0]
    image = axes.images[0]
    image.set_clim(0.0, 1.0)  # the same colours for every scale, so panels compare
    for text, value in zip(axes.texts, weights.ravel(), strict=True):
        red, green, blue, _ = image.cmap(image.norm(value))  # recolour for the new limits
        text.set_color("black" if 0.2126 * red + 0.7152 * green + 0.0722 * blue > 0.5 else "white")
    return figure


# --- Chapter 8: positional encoding ---


def encoding_heatmap(
    values: np.ndarray,
    *,
    title: str = "",
    xlabel: str = "dimension",
    ylabel: str = "position",
    colorbar_label: str = "encoding value",
    ax: Axes | None = None,
) -> Figure:
    """Draw a large matrix, such as positional encodings, as an image without cell labels.

    Row 0 is at the top, as in a printed matrix. Signed values use the diverging ``RdBu_r``
    with limits ``±max|value|`` (so 0 is white), non-negative values ``viridis``.

    Shapes
    ------
    ``values``: ``(T, D)`` (positions × dimensions) or ``(T, T)`` (dot products between
    positions).

    Examples
    --------
    >>> fig = encoding_heatmap(np.array([[0.0, 1.0], [0.5, -1.0]]), title="PE")
    >>> fig.axes[0].get_xlabel(), fig.axes[0].get_ylabel(), fig.axes[1].get_ylabel()
    ('dimension', 'position', 'encoding value')
    """
    matrix = np.asarray(values, dtype=np.float64)
    if matrix.ndim != 2:
        raise ValueError(f"values must be 2-D (T, D), got shape {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise ValueError("values contain NaN or infinity")
    ax = new_axes((7.0, 4.5), ax)
    if matrix.min() < 0:
        limit = float(np.abs(matrix).max())
        image = ax.imshow(
            matrix,
            cmap=DIVERGING_CMAP,
            vmin=-limit,
            vmax=limit,
            aspect="auto",
            interpolation="nearest",
        )
    else:
        image = ax.imshow(matrix, cmap=SEQUENTIAL_CMAP, aspect="auto", interpolation="nearest")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, label=colorbar_label)
    return ax.figure


def _pair_wavelengths(d_model: int, base: float) -> np.ndarray:
    """``λ_i = 2π · base^(2i / D)`` for the ``D / 2`` sin/cos pairs, shape ``(D / 2,)``."""
    from selfattn_lib._validation import check_positive_float, check_positive_int

    d_model = check_positive_int("d_model", d_model)
    if d_model % 2:
        raise ValueError(f"d_model must be even (sin and cos come in pairs), got {d_model}")
    base = check_positive_float("base", base)
    return 2 * np.pi * base ** (np.arange(0, d_model, 2) / d_model)


def wavelength_plot(
    d_model: int,
    *,
    base: float = 10000.0,
    ax: Axes | None = None,
) -> Figure:
    """Draw the wavelength ``λ_i = 2π · base^(2i/D)`` of every sin/cos pair on a log scale.

    On a logarithmic axis a geometric sequence is a straight line. Dashed lines mark ``2π``
    (the fastest pair, ``i = 0``) and ``2π · base``, the limit the slowest pair approaches but
    never reaches (its exponent is ``(D - 2) / D < 1``).

    Shapes
    ------
    ``d_model`` (``D``, even) → ``D / 2`` points, one per pair ``i = 0 … D/2 - 1``.

    Examples
    --------
    >>> fig = wavelength_plot(8)
    >>> fig.axes[0].lines[0].get_ydata().round(1).tolist()
    [6.3, 62.8, 628.3, 6283.2]
    >>> fig.axes[0].get_yscale()
    'log'
    """
    wavelengths = _pair_wavelengths(d_model, base)  # (D / 2,)
    ax = new_axes((6.0, 3.8), ax)
    pairs = np.arange(len(wavelengths))
    ax.plot(
        pairs, wavelengths, "o-", color=OKABE_ITO[0], markersize=3, label=r"$\lambda_i$ of pair i"
    )
    ax.set_yscale("log")
    for value, text in ((2 * np.pi, "2π"), (2 * np.pi * base, f"2π · {base:g}")):
        ax.axhline(value, color=OKABE_ITO[1], linestyle="--", linewidth=1)
        ax.text(
            1.01, value, text, transform=ax.get_yaxis_transform(), color=OKABE_ITO[1], va="center"
        )
    ax.set_xlabel("pair index i (dimensions 2i and 2i + 1)")
    ax.set_ylabel(r"wavelength $\lambda_i$ (positions, log scale)")
    ax.set_title(f"Wavelengths of the {len(wavelengths)} pairs (D = {d_model}, base = {base:g})")
    ax.grid(True, which="major", alpha=0.3)
    return ax.figure


def positional_waves(
    d_model: int,
    position: int,
    dimension: int,
    *,
    max_len: int = 64,
    base: float = 10000.0,
    axes: Sequence[Axes] | None = None,
) -> Figure:
    """One dimension's wave over the positions (left) and one position's encoding (right).

    Left: ``PE[:, dimension]`` as a continuous wave (dots at the integer positions, which are
    the only ones used), its partner of the same sin/cos pair dashed, and the value at
    ``position`` marked. Right: the whole vector ``PE[position]``, one bar per dimension, with
    ``dimension`` highlighted.

    Shapes
    ------
    ``d_model`` (``D``, even); ``position`` in ``[0, max_len)``; ``dimension`` in ``[0, D)``;
    ``axes``: 2 axes (wave, vector).

    Examples
    --------
    >>> fig = positional_waves(8, position=2, dimension=0)
    >>> round(float(fig.axes[1].patches[0].get_height()), 3)  # PE[2, 0] = sin(2)
    0.909
    """
    from selfattn_lib.positional import sinusoidal_encoding

    wavelengths = _pair_wavelengths(d_model, base)  # (D / 2,), also checks d_model and base
    if isinstance(max_len, bool) or not isinstance(max_len, int | np.integer) or max_len < 1:
        raise ValueError(f"max_len must be a positive integer, got {max_len!r}")
    if not 0 <= position < max_len:
        raise ValueError(f"position must be in [0, {max_len}), got {position}")
    if not 0 <= dimension < d_model:
        raise ValueError(f"dimension must be in [0, {d_model}), got {dimension}")
    encoding = sinusoidal_encoding(max_len, d_model, base=base)  # (T, D)
    pair = dimension // 2
    frequency = 2 * np.pi / wavelengths[pair]
    if axes is None:
        fig = Figure(figsize=(12.0, 3.8), layout="constrained")
        axes = fig.subplots(1, 2, width_ratios=(1.3, 1.0))
    if len(axes) != 2:
        raise ValueError(f"axes must hold 2 axes (wave, vector), got {len(axes)}")
    wave_ax, vector_ax = axes

    smooth = np.linspace(0, max_len - 1, 40 * max_len)  # (n,) for drawing the wave only
    kinds = {0: ("sin", np.sin), 1: ("cos", np.cos)}
    own_kind, own_wave = kinds[dimension % 2]
    other_kind, other_wave = kinds[1 - dimension % 2]
    partner = 2 * pair + 1 - dimension % 2
    wave_ax.plot(
        smooth,
        other_wave(frequency * smooth),
        "--",
        color=OKABE_ITO[1],
        linewidth=1,
        label=f"dim {partner} = {other_kind}(pos · ω_{pair})",
    )
    wave_ax.plot(
        smooth,
        own_wave(frequency * smooth),
        color=OKABE_ITO[0],
        linewidth=1.2,
        label=f"dim {dimension} = {own_kind}(pos · ω_{pair})",
    )
    wave_ax.plot(np.arange(max_len), encoding[:, dimension], ".", color=OKABE_ITO[0], markersize=4)
    wave_ax.axvline(position, color="0.5", linestyle=":", linewidth=1)
    wave_ax.plot(
        [position], [encoding[position, dimension]], "o", color=OKABE_ITO[4], markersize=9, zorder=3
    )
    wave_ax.set_xlim(0, max_len - 1)
    wave_ax.set_ylim(-1.15, 1.6)
    wave_ax.set_xlabel("position")
    wave_ax.set_ylabel("encoding value")
    wave_ax.set_title(
        f"dimension {dimension} (pair {pair}): wavelength {wavelengths[pair]:.4g} positions"
    )
    wave_ax.legend(loc="upper right", ncols=2, fontsize=8, frameon=False)

    # Bars drawn directly, not with bar_chart: a labelled tick per bar would be slow to draw.
    vector_ax.bar(range(d_model), encoding[position], color=OKABE_ITO[0])
    labelled = range(0, d_model, max(1, d_model // 8))
    vector_ax.set_xticks(labelled, labels=[str(d) for d in labelled])
    vector_ax.axhline(0.0, color="black", linewidth=0.8)
    vector_ax.set_ylim(-1.1, 1.1)
    vector_ax.set_title(f"PE[{position}], all {d_model} dimensions")
    vector_ax.set_xlabel("dimension")
    vector_ax.set_ylabel("encoding value")
    vector_ax.patches[dimension].set_facecolor(OKABE_ITO[4])
    return wave_ax.figure


# --- Chapter 9 ---


def encoder_layer_diagram(norm_first: bool = False, *, ax: Axes | None = None) -> Figure:
    """Draw one encoder layer as a flow chart, from its input (bottom) to its output (top).

    Post-norm (``norm_first=False``, the paper's): each sublayer's output is added to its
    input and the sum is normalised, ``LN(x + Sublayer(x))``. Pre-norm (``norm_first=True``):
    the sublayer sees a normalised copy and its output is added to the un-normalised input,
    ``x + Sublayer(LN(x))``; the stack then needs one final layer norm. The residual (identity)
    paths are drawn in vermillion.

    Shapes
    ------
    Not an array: the layer maps ``(B, T, D)`` to ``(B, T, D)``.

    Examples
    --------
    >>> fig = encoder_layer_diagram()
    >>> [text.get_text() for text in fig.axes[0].texts if text.get_text()][:3]
    ['x  (B, T, D)', 'multi-head self-attention', '+']
    """
    from matplotlib.patches import Circle, FancyBboxPatch

    attention = ("box", "multi-head self-attention", OKABE_ITO[5])
    feed_forward = ("box", "feed-forward (each position)", OKABE_ITO[2])
    norm = ("box", "layer norm", OKABE_ITO[4])
    add = ("add", "+", "white")
    if norm_first:
        steps = [norm, attention, add, norm, feed_forward, add]
        skips = [(0, 3), (3, 6)]  # from below step a + 1 to the "+" at step b
        title = "Pre-norm: x + Sublayer(LN(x))"
        output = "to the next layer (final layer norm after the last)"
    else:
        steps = [attention, add, norm, feed_forward, add, norm]
        skips = [(0, 2), (3, 5)]
        title = "Post-norm (the paper): LN(x + Sublayer(x))"
        output = "to the next layer"
    steps = [("text", "x  (B, T, D)", None), *steps, ("text", output, None)]

    ax = new_axes((4.6, 6.4), ax)
    centre, skip_x, width, height = 4.0, 7.9, 5.6, 0.56
    for y, (kind, label, colour) in enumerate(steps):
        if kind == "box":
            ax.add_patch(
                FancyBboxPatch(
                    (centre - width / 2, y - height / 2),
                    width,
                    height,
                    boxstyle="round,pad=0.03",
                    facecolor=colour,
                    edgecolor="black",
                    alpha=0.85,
                )
            )
            ax.text(centre, y, label, ha="center", va="center", fontsize=10)
        elif kind == "add":
            ax.add_patch(Circle((centre, y), 0.22, facecolor=colour, edgecolor="black"))
            ax.text(centre, y, label, ha="center", va="center", fontsize=13)
        else:
            ax.text(centre, y, label, ha="center", va="center", fontsize=10, style="italic")
        if y + 1 < len(steps):  # the main path, one arrow per step
            top = 0.22 if kind == "add" else height / 2 + 0.04
            bottom = 0.22 if steps[y + 1][0] == "add" else height / 2 + 0.04
            if kind == "text":
                top = 0.18
            if steps[y + 1][0] == "text":
                bottom = 0.18
            ax.annotate(
                "",
                xy=(centre, y + 1 - bottom),
                xytext=(centre, y + top),
                arrowprops={"arrowstyle": "-|>", "color": "black", "linewidth": 1.2},
            )
    for start, end in skips:
        leave = start + 0.5
        ax.plot([centre, skip_x, skip_x], [leave, leave, end], color=OKABE_ITO[1], linewidth=2)
        ax.annotate(
            "",
            xy=(centre + 0.24, end),
            xytext=(skip_x, end),
            arrowprops={"arrowstyle": "-|>", "color": OKABE_ITO[1], "linewidth": 2},
        )
        ax.plot([centre], [leave], "o", color=OKABE_ITO[1], markersize=5)
    ax.text(
        skip_x + 0.25,
        (skips[0][0] + 0.5 + skips[0][1]) / 2,
        "residual\n(identity)",
        color=OKABE_ITO[1],
        ha="left",
        va="center",
        fontsize=9,
    )
    ax.set_xlim(0.0, 10.0)
    ax.set_ylim(-0.6, len(steps) - 0.4)
    ax.set_axis_off()
    ax.set_title(title, fontsize=11)
    return ax.figure


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
    the sequences.

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
        fig = Figure(figsize=(10.0, 0.42 * n_rows + 1.6), layout="constrained")
        axes = fig.subplots(1, 2)
    if len(axes) != 2:
        raise ValueError(f"axes must hold 2 axes (layer norm, batch norm), got {len(axes)}")
    panels = (
        (axes[0], "layer norm: one token, all its features", (0, token, n_features, 1)),
        (axes[1], "batch norm: one feature, every token", (feature, 0, 1, n_rows)),
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


# --- Chapter 10 ---


def visible_characters(tokens: Sequence[str]) -> list[str]:
    """Tick labels for character tokens: a space becomes ``"␣"`` so that it can be seen.

    Shapes
    ------
    ``tokens``: ``T`` strings → ``T`` strings.

    Examples
    --------
    >>> visible_characters(["2", " ", "<eos>"])
    ['2', '␣', '<eos>']
    """
    return ["␣" if token == " " else str(token) for token in tokens]


def loss_curve(
    losses: Sequence[float],
    *,
    learning_rates: Sequence[float] | None = None,
    window: int = 50,
    axes: Sequence[Axes] | None = None,
) -> Figure:
    """Draw the training loss of every step (light) and its moving average over ``window``
    steps (dark) on a logarithmic axis; with ``learning_rates``, a second panel shows the
    learning rate of every step.

    Shapes
    ------
    ``losses``: ``(n_steps,)`` positive numbers; ``learning_rates``: ``(n_steps,)`` or None;
    ``axes``: 1 axes (2 with ``learning_rates``).

    Examples
    --------
    >>> fig = loss_curve([2.0, 1.0, 0.5, 0.25], window=2)
    >>> fig.axes[0].lines[1].get_ydata().tolist()  # the moving average over 2 steps
    [1.5, 0.75, 0.375]
    """
    values = np.asarray(losses, dtype=np.float64)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"losses must be a non-empty 1-D sequence, got shape {values.shape}")
    if not np.isfinite(values).all() or (values <= 0).any():
        raise ValueError("losses must be positive and finite (they are drawn on a log axis)")
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ValueError(f"window must be a positive integer, got {window!r}")
    window = min(window, values.size)
    n_panels = 1 if learning_rates is None else 2
    if axes is None:
        fig = Figure(figsize=(5.5 * n_panels, 3.8), layout="constrained")
        axes = np.atleast_1d(fig.subplots(1, n_panels))
    if len(axes) != n_panels:
        raise ValueError(f"axes must hold {n_panels} axes, got {len(axes)}")

    steps = np.arange(1, values.size + 1)
    average = np.convolve(values, np.ones(window) / window, mode="valid")  # (n - window + 1,)
    ax = axes[0]
    ax.plot(steps, values, color=OKABE_ITO[5], linewidth=0.8, label="loss of each step")
    ax.plot(
        steps[window - 1 :],
        average,
        color=OKABE_ITO[0],
        linewidth=2,
        label=f"mean of the last {window} steps",
    )
    ax.set_yscale("log")
    ax.set_xlabel("training step")
    ax.set_ylabel("cross-entropy loss (nats per token)")
    ax.set_title("Training loss")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    if learning_rates is not None:
        rates = np.asarray(learning_rates, dtype=np.float64)
        if rates.shape != values.shape:
            raise ValueError(
                f"learning_rates must have one value per step, shape {values.shape}, "
                f"got {rates.shape}"
            )
        axes[1].plot(steps, rates, color=OKABE_ITO[1])
        axes[1].set_xlabel("training step")
        axes[1].set_ylabel("learning rate")
        axes[1].set_title("Learning-rate schedule")
        axes[1].grid(True, alpha=0.3)
    return axes[0].figure


def cross_attention_maps(
    weights: np.ndarray,
    source_tokens: Sequence[str],
    target_tokens: Sequence[str],
    *,
    title: str = "",
    ncols: int = 2,
    axes: Sequence[Axes] | None = None,
) -> Figure:
    """Draw cross-attention weights with the source tokens (keys) across and the tokens the
    decoder writes (queries) down, all on one colour scale from 0 to 1.

    A 2-D ``weights`` gives one map; a 3-D one gives a map per head and, last, their mean.
    Spaces in the labels are shown as ``"␣"``.

    Shapes
    ------
    ``weights``: ``(T_tgt, T_src)`` or ``(H, T_tgt, T_src)``; ``source_tokens``: ``T_src``
    labels; ``target_tokens``: ``T_tgt`` labels; ``axes``: 1 or ``H + 1`` axes.

    Examples
    --------
    >>> weights = np.full((2, 3, 4), 0.25)  # 2 heads, 3 outputs, 4 source tokens
    >>> fig = cross_attention_maps(weights, list("a b!"), ["x", "y", "<eos>"])
    >>> [ax.get_title() for ax in fig.axes[:3]]
    ['head 1', 'head 2', 'mean of the 2 heads']
    >>> [label.get_text() for label in fig.axes[0].get_xticklabels()]
    ['a', '␣', 'b', '!']
    """
    values = np.asarray(weights, dtype=np.float64)
    if values.ndim not in (2, 3):
        raise ValueError(
            f"weights must have shape (T_tgt, T_src) or (H, T_tgt, T_src), got {values.shape}"
        )
    if not np.isfinite(values).all() or (values < 0).any():
        raise ValueError("weights must be finite and non-negative")
    if len(source_tokens) != values.shape[-1] or len(target_tokens) != values.shape[-2]:
        raise ValueError(
            f"labels do not fit weights of shape {values.shape}: {len(target_tokens)} "
            f"target_tokens (T_tgt) and {len(source_tokens)} source_tokens (T_src)"
        )
    if values.ndim == 2:
        maps, titles = [values], [title]
    else:
        n_heads = values.shape[0]
        maps = [*values, values.mean(axis=0)]
        titles = [f"head {h + 1}" for h in range(n_heads)] + [f"mean of the {n_heads} heads"]
    if axes is None:
        ncols = max(1, min(int(ncols), len(maps)))
        nrows = -(-len(maps) // ncols)
        width = 0.26 * values.shape[-1] + 1.5
        height = 0.26 * values.shape[-2] + 1.3
        fig = Figure(figsize=(width * ncols + 1.0, height * nrows + 0.4), layout="constrained")
        grid = np.atleast_1d(fig.subplots(nrows, ncols)).ravel()
        for spare in grid[len(maps) :]:
            spare.remove()
        axes = grid[: len(maps)]
        if title and values.ndim == 3:
            fig.suptitle(title)
    if len(axes) != len(maps):
        raise ValueError(f"axes must hold {len(maps)} axes for these weights, got {len(axes)}")
    for ax, matrix, panel_title in zip(axes, maps, titles, strict=True):
        image = ax.imshow(matrix, cmap=SEQUENTIAL_CMAP, vmin=0.0, vmax=1.0, aspect="auto")
        ax.set_xticks(range(matrix.shape[1]), labels=visible_characters(source_tokens))
        ax.set_yticks(range(matrix.shape[0]), labels=visible_characters(target_tokens))
        ax.tick_params(labelsize=9)
        ax.set_xlabel("source character (key)")
        ax.set_ylabel("written token (query)")
        ax.set_title(panel_title, fontsize=10)
    figure = axes[0].figure
    figure.colorbar(image, ax=list(axes), label="cross-attention weight", shrink=0.8)
    return figure


# --- Chapter 11: attention at scale ---


def scaling_plot(
    sizes: Sequence[float],
    series: dict[str, Sequence[float]],
    *,
    reference_slopes: Sequence[float] = (1.0, 2.0),
    xlabel: str = "sequence length $T$",
    ylabel: str = "",
    title: str = "",
    ax: Axes | None = None,
) -> Figure:
    """Draw measured costs against a size on log–log axes, with reference slopes.

    A cost proportional to ``size**p`` is a straight line of slope ``p`` on log–log axes.
    Each reference line (dashed, grey) has one of ``reference_slopes`` and passes through
    the last point of the first series, so that series' growth can be compared by eye.

    Shapes
    ------
    ``sizes``: ``(n,)`` positive; every value of ``series``: ``(n,)`` positive.

    Examples
    --------
    >>> fig = scaling_plot([1, 2, 4], {"T squared": [1, 4, 16]}, reference_slopes=(2,))
    >>> [line.get_label() for line in fig.axes[0].lines]
    ['T squared', 'slope 2']
    >>> fig.axes[0].lines[1].get_ydata().tolist()  # through the last point, (4, 16)
    [1.0, 4.0, 16.0]
    """
    x = np.asarray(sizes, dtype=np.float64)
    if x.ndim != 1 or x.size < 2 or not (np.isfinite(x) & (x > 0)).all():
        raise ValueError(f"sizes must be at least 2 positive numbers, got {sizes!r}")
    if not series:
        raise ValueError("series must hold at least one named sequence of costs")
    curves = {}
    for name, values in series.items():
        y = np.asarray(values, dtype=np.float64)
        if y.shape != x.shape or not (np.isfinite(y) & (y > 0)).all():
            raise ValueError(
                f"series {name!r} must hold {x.size} positive numbers (one per size), "
                f"got shape {y.shape}"
            )
        curves[name] = y

    ax = new_axes((6.5, 4.3), ax)
    markers = "osD^v<>p"
    for index, (name, y) in enumerate(curves.items()):
        ax.plot(
            x,
            y,
            marker=markers[index % len(markers)],
            color=OKABE_ITO[index % len(OKABE_ITO)],
            label=name,
        )
    anchor_x, anchor_y = x[-1], next(iter(curves.values()))[-1]
    for slope, style in zip(reference_slopes, ("--", ":", "-.", (0, (1, 3))), strict=False):
        ax.plot(
            x,
            anchor_y * (x / anchor_x) ** slope,
            color="grey",
            linestyle=style,
            linewidth=1.2,
            label=f"slope {slope:g}",
        )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(True, which="major", alpha=0.3)
    return ax.figure


def _online_softmax_history(row: np.ndarray, block_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Running maximum and running sum of online softmax after each block of one row."""
    maxima, sums = [], []
    running_max, running_sum = -np.inf, 0.0
    for start in range(0, row.size, block_size):
        block = row[start : start + block_size]
        new_max = max(running_max, float(block.max()))
        running_sum = running_sum * np.exp(running_max - new_max) + np.exp(block - new_max).sum()
        running_max = new_max
        maxima.append(running_max)
        sums.append(running_sum)
    return np.array(maxima), np.array(sums)


def block_schedule(
    scores: np.ndarray,
    block_size: int,
    *,
    row: int = 0,
    axes: Sequence[Axes] | None = None,
) -> Figure:
    """Draw how online softmax walks through the scores one block of keys at a time.

    Three panels. Left: the ``(T_q, T_k)`` grid of query–key pairs, cut into blocks of
    ``block_size`` keys; the number and colour of a block is the step at which it is
    processed (only that ``T_q × block_size`` tile of scores exists at a time), and query
    ``row`` is outlined. Middle: the scores of query ``row`` (dots) and the running maximum
    ``m`` after each step (one segment per block), which ends at the row's maximum (dashed).
    Right: the running sum ``ℓ = Σ exp(s_j − m)`` after each step; when the maximum grows it
    is first rescaled by ``exp(m_old − m_new)``, and it ends at the softmax denominator
    (dashed).

    Shapes
    ------
    ``scores``: ``(T_q, T_k)``; ``axes``: 3 axes.

    Examples
    --------
    >>> scores = np.array([[0.0, 2.0, 1.0, 3.0, -1.0]])
    >>> fig = block_schedule(scores, 2)
    >>> fig.axes[0].get_title()
    'step = key block: 3 steps, tile 1 × 2 (direct: 1 × 5)'
    >>> fig.axes[2].patches[-1].get_height().round(4)  # ℓ after the last step
    np.float64(1.5713)
    """
    from matplotlib.colors import BoundaryNorm
    from matplotlib.patches import Rectangle
    from matplotlib.ticker import MaxNLocator

    values = np.asarray(scores, dtype=np.float64)
    if values.ndim != 2 or values.size == 0:
        raise ValueError(f"scores must have shape (T_q, T_k), got shape {values.shape}")
    if not np.isfinite(values).all():
        raise ValueError("scores must be finite (a masked -inf key has no place in this picture)")
    if isinstance(block_size, bool) or not isinstance(block_size, int | np.integer):
        raise TypeError(f"block_size must be an integer, got {block_size!r}")
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, got {block_size}")
    t_q, t_k = values.shape
    if isinstance(row, bool) or not isinstance(row, int | np.integer) or not 0 <= row < t_q:
        raise ValueError(f"row must be a query index in 0 … {t_q - 1}, got {row!r}")
    n_steps = -(-t_k // block_size)  # ceil(T_k / block_size)
    step_of_key = np.arange(t_k) // block_size + 1  # (T_k,): 1, 1, …, 2, 2, …
    maxima, sums = _online_softmax_history(values[row], block_size)

    if axes is None:
        fig = Figure(figsize=(14.0, 4.2), layout="constrained")
        axes = fig.subplots(1, 3, width_ratios=[1.25, 1.0, 1.0])
    if len(axes) != 3:
        raise ValueError(f"axes must hold 3 axes, got {len(axes)}")
    grid_ax, max_ax, sum_ax = axes
    image = grid_ax.imshow(
        np.broadcast_to(step_of_key, (t_q, t_k)),
        cmap=SEQUENTIAL_CMAP,
        norm=BoundaryNorm(np.arange(0.5, n_steps + 1.5), 256),
        aspect="auto",
    )
    colours = [image.cmap(image.norm(step)) for step in range(1, n_steps + 1)]
    for step in range(1, n_steps + 1):
        first = (step - 1) * block_size
        last = min(step * block_size, t_k) - 1
        grid_ax.text(
            (first + last) / 2,
            (t_q - 1) / 2,
            str(step),
            ha="center",
            va="center",
            fontsize=11 if n_steps <= 16 else 7,
            fontweight="bold",
            color="white" if step <= (n_steps + 1) / 2 else "black",
        )
        if step > 1:
            grid_ax.axvline(first - 0.5, color="white", linewidth=1.5)
    grid_ax.add_patch(
        Rectangle((-0.5, row - 0.5), t_k, 1, fill=False, edgecolor=OKABE_ITO[1], linewidth=2.0)
    )
    grid_ax.set_xlabel("key $j$")
    grid_ax.set_ylabel("query $i$")
    grid_ax.set_title(
        f"step = key block: {n_steps} steps, tile {t_q} × {min(block_size, t_k)} "
        f"(direct: {t_q} × {t_k})"
    )
    colorbar = grid_ax.figure.colorbar(image, ax=grid_ax, ticks=range(1, n_steps + 1))
    colorbar.set_label("step")

    keys = np.arange(t_k)
    max_ax.scatter(keys, values[row], c=[colours[s - 1] for s in step_of_key], s=18, zorder=3)
    for step in range(1, n_steps + 1):
        first = (step - 1) * block_size
        last = min(step * block_size, t_k) - 1
        max_ax.hlines(maxima[step - 1], first - 0.4, last + 0.4, color=OKABE_ITO[1], linewidth=2.5)
    max_ax.axhline(values[row].max(), color="grey", linestyle="--", linewidth=1.0)
    max_ax.plot([], [], color=OKABE_ITO[1], linewidth=2.5, label="running max $m$ after the block")
    max_ax.plot([], [], color="grey", linestyle="--", label="max of the whole row")
    max_ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    max_ax.set_xlabel("key $j$")
    max_ax.set_ylabel(f"score $s_{{{row}j}}$")
    max_ax.set_title(f"query {row}: scores and running maximum")
    max_ax.legend(loc="lower right", fontsize=8)

    steps = np.arange(1, n_steps + 1)
    sum_ax.bar(steps, sums, color=colours, edgecolor="black", linewidth=0.5)
    denominator = np.exp(values[row] - values[row].max()).sum()
    sum_ax.axhline(denominator, color="grey", linestyle="--", linewidth=1.0, label="final ℓ")
    grew = np.flatnonzero(np.diff(maxima) > 0) + 2  # steps at which m grew: ℓ was rescaled
    for step in grew:
        sum_ax.annotate(
            "m grew:\nℓ rescaled",
            (step, sums[step - 1]),
            xytext=(0, 6),
            textcoords="offset points",
            ha="center",
            fontsize=7,
        )
    sum_ax.set_xticks(steps if n_steps <= 16 else steps[:: -(-n_steps // 16)])
    sum_ax.set_xlabel("step (key block)")
    sum_ax.set_ylabel("running sum ℓ = Σ exp($s_{ij}$ − m)")
    sum_ax.set_ylim(0, max(sums.max(), denominator) * 1.3)
    sum_ax.set_title(f"query {row}: running sum of exponentials")
    sum_ax.legend(loc="upper left", fontsize=8)
    return grid_ax.figure
