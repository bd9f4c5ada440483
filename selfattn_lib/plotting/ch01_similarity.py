"""Figures of chapter 1, dot-product similarity."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from selfattn_lib.plotting.base import (
    OKABE_ITO,
    new_axes,
)


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
