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
