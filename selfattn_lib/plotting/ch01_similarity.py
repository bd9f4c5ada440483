"""Figures of chapter 1, dot-product similarity: the geometry of two vectors, the two measures
side by side (against the angle, as rankings, as matrices; stacked on a phone), and two
computed diagrams (a dot product feature by feature, and the similarity matrix of a sentence
as the product of its token matrix with its transpose)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from selfattn_lib.plotting.base import (
    OKABE_ITO,
    bar_chart,
    column_width,
    current_layout,
    for_the_page,
    heatmap,
    new_axes,
)
from selfattn_lib.plotting.diagrams import Diagram, Grid, flow


@for_the_page
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


@for_the_page
def word_features(
    x: Sequence[Sequence[float]],
    words: Sequence[str],
    features: Sequence[str],
    *,
    title: str = "",
) -> Figure:
    """A heatmap of word vectors, one row per word and one column per feature, every value
    written in its cell with one decimal: chapter 1's hand-made embeddings.

    Shapes
    ------
    ``x``: ``(n, D)``; ``words``: ``n`` strings; ``features``: ``D`` strings.

    Examples
    --------
    >>> fig = word_features([[0.9, 0.1], [0.0, 1.0]], ["cat", "car"], ["animal", "vehicle"])
    >>> fig.axes[0].get_xlabel(), fig.axes[0].get_ylabel(), fig.axes[1].get_ylabel()
    ('feature', 'word', 'feature value')
    """
    values = np.asarray(x, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"x must have shape (n, D), got {values.shape}")
    _check_labels("words", words, values.shape[0])
    _check_labels("features", features, values.shape[1])
    phone = current_layout() == "phone"
    if phone:  # a long title goes on two lines in a phone's column
        title = textwrap.fill(title, 32)
    figure = Figure(figsize=(column_width(), 4.8 if phone else 3.7), layout="constrained")
    ax = figure.add_subplot()
    heatmap(
        values,
        list(words),
        list(features),
        title=title,
        xlabel="feature",
        ylabel="word",
        colorbar_label="feature value",
        fmt=".1f",
        colorbar=not phone,
        ax=ax,
    )
    if phone:  # the colour bar goes under the map, which keeps the column's width
        figure.colorbar(ax.images[0], ax=ax, location="bottom", label="feature value")
    return figure


@for_the_page
def angle_curves(a: Sequence[float], lengths: Sequence[float], *, n_angles: int = 181) -> Figure:
    """The dot product (left) and the cosine similarity (right) of the fixed 2-D vector ``a``
    with a vector ``b`` that turns from 0° to 180° away from ``a``, one curve per length of
    ``b``: the static twin of chapter 1's angle-and-length widget.

    Shapes
    ------
    ``a``: ``(2,)``; ``lengths``: up to three positive numbers.

    Examples
    --------
    >>> fig = angle_curves([1.0, 0.0], [2.0], n_angles=3)
    >>> fig.axes[0].lines[1].get_ydata().round(6).tolist()  # a·b at 0°, 90°, 180°
    [2.0, 0.0, -2.0]
    """
    from selfattn_lib.similarity import cosine_similarity, dot_product

    a = np.asarray(a, dtype=np.float64)
    if a.shape != (2,) or not np.isfinite(a).all() or not a.any():
        raise ValueError(f"a must be a nonzero finite 2-D vector, shape (2,), got {a}")
    if not 1 <= len(lengths) <= 3 or min(lengths) <= 0:
        raise ValueError(f"lengths must be one to three positive numbers, got {lengths}")
    degrees = np.linspace(0.0, 180.0, n_angles)  # (n,)
    radians = np.arctan2(a[1], a[0]) + np.radians(degrees)  # (n,): b's direction
    direction = np.stack([np.cos(radians), np.sin(radians)], axis=-1)  # (n, 2)
    phone = current_layout() == "phone"  # on a phone the two panels are stacked
    figure = Figure(figsize=(column_width(), 6.0 if phone else 3.4), layout="constrained")
    panels = figure.subplots(2 if phone else 1, 1 if phone else 2)
    measures = (("dot product a·b", dot_product), ("cosine similarity cos θ", cosine_similarity))
    for ax, (name, measure) in zip(panels, measures, strict=True):
        ax.axhline(0, color="grey", lw=0.6)
        for length, style, colour in zip(lengths, ("-", "--", ":"), OKABE_ITO, strict=False):
            values = measure(length * direction, np.broadcast_to(a, direction.shape))  # (n,)
            ax.plot(degrees, values, style, color=colour, lw=2, label=f"|b| = {length:g}")
        ax.set_xticks([0, 45, 90, 135, 180])
        ax.set_xlabel("angle θ between a and b (degrees)")
        ax.set_ylabel(name)
        ax.set_title(name)
        ax.legend()
    figure.suptitle(
        f"a is fixed, |a| = {np.linalg.norm(a):g};{chr(10) if phone else ' '}"
        "b turns from 0° to 180°"
    )
    return figure


@for_the_page
def two_rankings(
    word: str,
    vector: Sequence[float],
    candidates: Sequence[str],
    vectors: Sequence[Sequence[float]],
) -> Figure:
    """Two bar charts of the same candidate words: their dot products with ``vector`` (left)
    and their cosine similarities with it (right), each titled with its winner.

    Shapes
    ------
    ``vector``: ``(D,)``; ``candidates``: ``n`` words; ``vectors``: ``(n, D)``.

    Examples
    --------
    >>> fig = two_rankings("a", [1.0, 0.0], ["long", "aligned"], [[3.0, 3.0], [1.0, 0.0]])
    >>> [ax.get_title() for ax in fig.axes]
    ['dot product with a: long wins', 'cosine with a: aligned wins']
    """
    from selfattn_lib.similarity import similarity_matrix

    vector = np.asarray(vector, dtype=np.float64)
    vectors = np.asarray(vectors, dtype=np.float64)
    if vectors.ndim != 2 or vector.shape != vectors.shape[1:]:
        raise ValueError(
            f"vectors must have shape (n, D) with D = len(vector): got {vectors.shape} and "
            f"vector of shape {vector.shape}"
        )
    _check_labels("candidates", candidates, len(vectors))
    phone = current_layout() == "phone"  # on a phone the two charts are stacked
    figure = Figure(figsize=(column_width(), 6.0 if phone else 3.2), layout="constrained")
    panels = figure.subplots(2 if phone else 1, 1 if phone else 2)
    for ax, measure, name in zip(panels, ("dot", "cosine"), ("dot product", "cosine"), strict=True):
        values = similarity_matrix(vector[None, :], vectors, measure=measure)[0]  # (n,)
        top = max(float(values.max()), 0.0)
        bar_chart(
            values,
            list(candidates),
            title=f"{name} with {word}: {candidates[int(values.argmax())]} wins",
            xlabel="word",
            ylabel=f"{'dot' if measure == 'dot' else 'cos'}({word}, word)",
            ylim=(min(float(values.min()), 0.0), 1.1 * top if top else 1.0),
            ax=ax,
        )
    return figure


@for_the_page
def dot_and_cosine_matrices(x: Sequence[Sequence[float]], tokens: Sequence[str]) -> Figure:
    """Two heatmaps of a sentence's token vectors ``x``, every token against every token:
    dot products ``X Xᵀ`` (left) and cosine similarities (right), rounded to one decimal.

    Shapes
    ------
    ``x``: ``(T, D)``; ``tokens``: ``T`` strings.

    Examples
    --------
    >>> fig = dot_and_cosine_matrices([[2.0, 0.0], [1.0, 1.0]], ["a", "b"])
    >>> fig.axes[1].get_title(), fig.axes[1].images[0].get_array()[0, 1].round(4)
    ('Cosine similarities', np.float64(0.7071))
    """
    from selfattn_lib.similarity import similarity_matrix

    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"x must be a matrix of token vectors (T, D), got shape {x.shape}")
    _check_labels("tokens", tokens, len(x))
    phone = current_layout() == "phone"  # on a phone the two matrices are stacked
    figure = Figure(figsize=(column_width(), 7.0 if phone else 3.5), layout="constrained")
    panels = figure.subplots(2 if phone else 1, 1 if phone else 2)
    titles = {"dot": r"Dot products $\mathbf{X}\mathbf{X}^\top$", "cosine": "Cosine similarities"}
    for ax, (measure, title) in zip(panels, titles.items(), strict=True):
        heatmap(
            similarity_matrix(x, x, measure=measure),
            list(tokens),
            list(tokens),
            title=title,
            xlabel="token j",
            ylabel="token i",
            colorbar_label="dot product" if measure == "dot" else "cosine",
            fmt=".1f",
            ax=ax,
        )
    return figure


def _phone_break() -> str:
    """A title's line break on a phone, a space on a laptop."""
    return "\n" if current_layout() == "phone" else " "


def _two_decimals(value: float) -> str:
    """``value`` with two decimals, never ``-0.00`` (a rounding error left of zero)."""
    return f"{round(value, 2) + 0.0:.2f}"


def _vector_format(values: np.ndarray) -> str:
    """One decimal when every value is a whole number of tenths (the hand-made word vectors),
    so that a row of eight features fits the column; two decimals otherwise."""
    tenths = np.asarray(values, dtype=np.float64) * 10
    return ".1f" if np.allclose(tenths, np.round(tenths), rtol=0, atol=1e-9) else ".2f"


def _check_labels(name: str, labels: Sequence[str], count: int) -> None:
    if len(labels) != count:
        raise ValueError(f"{name} must have {count} labels, got {len(labels)}")


@for_the_page
def feature_products(
    word: str,
    vector: np.ndarray,
    others: Sequence[str],
    other_vectors: np.ndarray,
    products: np.ndarray,
    dot_products: np.ndarray,
    features: Sequence[str],
) -> Diagram:
    """Draw dot products feature by feature: the vector of ``word`` times each vector of
    ``others``, one product per feature (``products``, the element-wise product, drawn ⊙), and
    each row of products added up (``dot_products``). The figure draws the arrays it is given
    and computes nothing.

    Shapes
    ------
    ``vector``: ``(D,)``; ``other_vectors`` and ``products``: ``(n, D)`` for ``n`` other
    words; ``dot_products``: ``(n,)``; ``features``: ``D`` names; ``others``: ``n`` words.

    Examples
    --------
    >>> from selfattn_lib.plotting.diagrams import read_back
    >>> a, b = np.array([1.0, 0.5]), np.array([[0.2, 0.4]])
    >>> d = feature_products("a", a, ["b"], b, a * b, (a * b).sum(-1), ["f1", "f2"])
    >>> read_back(d.figure, "a · word").tolist()
    [[0.4]]
    """
    vector = np.asarray(vector, dtype=np.float64)
    other_vectors = np.asarray(other_vectors, dtype=np.float64)
    products = np.asarray(products, dtype=np.float64)
    dot_products = np.asarray(dot_products, dtype=np.float64)
    if vector.ndim != 1:
        raise ValueError(f"vector must have shape (D,), got {vector.shape}")
    n_others, n_features = len(others), vector.shape[0]
    for name, array in (("other_vectors", other_vectors), ("products", products)):
        if array.shape != (n_others, n_features):
            raise ValueError(
                f"{name} must have shape (n, D) = ({n_others}, {n_features}) for "
                f"{n_others} other words and a vector of shape {vector.shape}, "
                f"got {array.shape}"
            )
    if dot_products.shape != (n_others,):
        raise ValueError(
            f"dot_products must have shape (n,) = ({n_others},), got {dot_products.shape}"
        )
    _check_labels("features", features, n_features)
    inputs = np.concatenate([vector[None, :], other_vectors])  # (1 + n, D)
    fmt = _vector_format(inputs)
    return flow(
        Grid(word, vector, rows=[word], cols=list(features), fmt=fmt),
        "⊙",  # element-wise: "×" between grids is the matrix product (similarity_matrix_diagram)
        Grid(", ".join(others), other_vectors, rows=list(others), cols=list(features), fmt=fmt),
        "=",
        Grid(
            "products",
            products,
            rows=[f"{word}⊙{other}" for other in others],
            role="scores",
            note="one product per feature",
        ),
        "add up →",
        Grid(f"{word} · word", dot_products[:, None], rows=list(others), role="scores"),
        title=f"Dot products with {word}:{_phone_break()}multiply feature by feature, then add up",
        # On a phone: eight two-decimal products and their row labels need 3.93 in, a little
        # more than the phone's 3.8; drawn 3.95 in wide, its 8.5-point numbers show 10 px tall.
        width=3.95 if current_layout() == "phone" else None,
    )


@for_the_page
def similarity_matrix_diagram(
    tokens: Sequence[str],
    features: Sequence[str],
    x: np.ndarray,
    scores: np.ndarray,
) -> Diagram:
    """Draw the similarity matrix of a sentence as the flow X × Xᵀ = S: the token matrix
    ``x`` (one row per token), its transpose (one column per token) and ``scores``, the dot
    product of every token with every token. The figure draws the arrays it is given; the
    transpose is the same numbers laid out by columns.

    Shapes
    ------
    ``x``: ``(T, D)`` for ``T`` tokens and ``D`` features; ``scores``: ``(T, T)``.

    Examples
    --------
    >>> from selfattn_lib.plotting.diagrams import read_back
    >>> x = np.array([[1.0, 0.0], [0.5, 0.5]])
    >>> d = similarity_matrix_diagram(["a", "b"], ["f1", "f2"], x, x @ x.T)
    >>> read_back(d.figure, "S").tolist()
    [[1.0, 0.5], [0.5, 0.5]]
    """
    x = np.asarray(x, dtype=np.float64)
    scores = np.asarray(scores, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"x must have shape (T, D), got {x.shape}")
    n_tokens, n_features = x.shape
    if scores.shape != (n_tokens, n_tokens):
        raise ValueError(
            f"scores must have shape (T, T) = ({n_tokens}, {n_tokens}) for x of shape "
            f"{x.shape}, got {scores.shape}"
        )
    _check_labels("tokens", tokens, n_tokens)
    _check_labels("features", features, n_features)
    fmt = _vector_format(x)
    return flow(
        Grid("X", x, rows=list(tokens), cols=list(features), fmt=fmt, note="a row per token"),
        "×",
        Grid(
            "Xᵀ",
            x.T,
            rows=list(features),
            cols=list(tokens),
            fmt=fmt,
            note="a column per token",
        ),
        "=",
        Grid(
            "S",
            scores,
            rows=list(tokens),
            cols=list(tokens),
            role="scores",
            note="S[i, j] = token i · token j",
        ),
        title=f"The similarity matrix of a sentence:{_phone_break()}S = X Xᵀ",
    )
