"""Figures of chapter 8, positional encoding: the sinusoidal encoding and the rotation of RoPE."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Arc, Rectangle

from selfattn_lib._validation import check_positive_int
from selfattn_lib.plotting.base import (
    DIVERGING_CMAP,
    OKABE_ITO,
    SEQUENTIAL_CMAP,
    column_width,
    current_layout,
    for_the_page,
    new_axes,
)
from selfattn_lib.plotting.diagrams import Diagram


@for_the_page
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
    ax = new_axes((7.0, 2.7), ax)
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
    from selfattn_lib._validation import check_positive_float

    d_model = check_positive_int("d_model", d_model)
    if d_model % 2:
        raise ValueError(f"d_model must be even (sin and cos come in pairs), got {d_model}")
    base = check_positive_float("base", base)
    return 2 * np.pi * base ** (np.arange(0, d_model, 2) / d_model)


@for_the_page
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
    ``dimension`` highlighted. Made alone, the figure is as wide as the book's column
    (``COLUMN_WIDTH``), the wave panel wider than the vector panel; drawn for a phone, the
    vector panel lies under the wave panel.

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
    phone = current_layout() == "phone" and axes is None
    if phone:
        fig = Figure(figsize=(column_width(), 5.8), layout="constrained")
        axes = fig.subplots(2, 1)
    elif axes is None:
        fig = Figure(figsize=(column_width(), 2.8), layout="constrained")
        axes = fig.subplots(1, 2, width_ratios=(1.6, 1.0))
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
    wave_ax.set_ylim(-1.15, 2.3 if phone else 1.6)  # room for the legend above the wave
    wave_ax.set_xlabel("position")
    wave_ax.set_ylabel("encoding value")
    wave_ax.set_title(
        f"dimension {dimension} (pair {pair})\nwavelength {wavelengths[pair]:.4g} positions",
        fontsize=10,
    )
    wave_ax.legend(
        loc="upper right",
        ncols=1 if phone else 2,
        fontsize=8,
        frameon=False,
        handlelength=1.2,
        columnspacing=0.8,
        borderaxespad=0.2,
    )

    # Bars drawn directly, not with bar_chart: a labelled tick per bar would be slow to draw.
    vector_ax.bar(range(d_model), encoding[position], color=OKABE_ITO[0])
    labelled = range(0, d_model, max(1, d_model // 8))
    vector_ax.set_xticks(labelled, labels=[str(d) for d in labelled])
    vector_ax.axhline(0.0, color="black", linewidth=0.8)
    vector_ax.set_ylim(-1.1, 1.1)
    vector_ax.set_title(f"PE[{position}], all {d_model} dimensions", fontsize=10)
    vector_ax.set_xlabel("dimension")
    vector_ax.set_ylabel("encoding value")
    vector_ax.patches[dimension].set_facecolor(OKABE_ITO[4])
    return wave_ax.figure


def _tint(colour: str, amount: float = 0.45) -> tuple[float, float, float]:
    """``colour`` mixed with white: ``amount`` of the colour, the rest white."""
    from matplotlib.colors import to_rgb

    return tuple(1.0 - amount * (1.0 - channel) for channel in to_rgb(colour))


@for_the_page
def rope_rotation(
    pair_values: np.ndarray,
    positions: Sequence[int],
    angles: Sequence[float],
    *,
    d_model: int,
    pair: int = 0,
    vector: str = "q",
) -> Diagram:
    """Draw how rotary position embeddings (RoPE) pair the features and turn one pair.

    Top: the ``D`` features of a vector twice, each pair in its own colour: the interleaved
    layout pairs ``(x_2i, x_2i+1)``, the half-split (``rotate_half``) layout pairs
    ``(x_i, x_i+D/2)``. Bottom: pair ``pair`` of ``vector`` in the interleaved layout,
    ``(x_2i, x_2i+1)``, at each position, as an arrow in the plane, labelled with its angle
    ``θ = pos · ω`` (on the same vector the half-split layout turns other numbers). The
    figure draws the numbers it is given (the rotated pair and the angles, computed with
    :mod:`selfattn_lib.positional`); its alt text is written from them.

    Shapes
    ------
    ``pair_values``: ``(n, 2)``, the interleaved pair ``(a, b)`` after rotation at each of
    the ``n`` ``positions`` ``(n,)`` by ``angles`` ``(n,)`` radians; ``d_model`` (``D``,
    even, at most 16 so that the boxes stay legible); ``0 ≤ pair < D / 2``.

    Examples
    --------
    >>> d = rope_rotation(np.array([[1.0, 0.0], [0.54, 0.84]]), [0, 1], [0.0, 1.0], d_model=4)
    >>> d.alt.startswith("Computed diagram: RoPE turns pairs of features, D = 4.")
    True
    """
    values = np.asarray(pair_values, dtype=np.float64)
    positions = [int(p) for p in positions]
    angles = [float(a) for a in angles]
    if values.ndim != 2 or values.shape[1] != 2 or not len(values):
        raise ValueError(f"pair_values must have shape (n, 2), got {values.shape}")
    if not len(positions) == len(angles) == len(values):
        raise ValueError(
            f"one position and one angle per row of pair_values: {len(values)} rows, "
            f"{len(positions)} positions, {len(angles)} angles"
        )
    if not np.isfinite(values).all():
        raise ValueError("pair_values contain NaN or infinity")
    d_model = check_positive_int("d_model", d_model)
    if d_model % 2:
        raise ValueError(f"d_model must be a positive even integer, got {d_model}")
    if d_model > 16:
        raise ValueError(f"draw at most 16 features (d_model <= 16), got {d_model}")
    half = d_model // 2
    if not 0 <= pair < half:
        raise ValueError(f"pair must be in [0, {half}), got {pair}")
    layouts = {
        "interleaved (RoFormer)": [(2 * i, 2 * i + 1) for i in range(half)],
        "half-split (rotate_half)": [(i, i + half) for i in range(half)],
    }
    hues = [OKABE_ITO[i % 7] if i % 7 != 6 else OKABE_ITO[7] for i in range(half)]

    # A laptop's column: the two layouts' strip across the top, its names on the left, the
    # plane below left and the explanation beside it. A phone's: one under the other, each
    # layout's name above its strip. Places in inches from the top, as fractions of the height.
    phone = current_layout() == "phone"
    width = column_width()
    if phone:
        height = 7.9
        fig = Figure(figsize=(width, height))

        def rect(left: float, top: float, w: float, h: float) -> tuple[float, ...]:
            return (left / width, 1 - (top + h) / height, w / width, h / height)

        strip = fig.add_axes(rect(0.1, 0.55, width - 0.2, 1.45))
        strip.set_ylim(2.3, -1.1)
        row_step = 1.7
    else:
        fig = Figure(figsize=(width, 3.6))
        strip = fig.add_axes((0.25, 0.74, 0.72, 0.2))
        strip.set_ylim(1.6, -0.6)
        row_step = 1.0
    strip.set_xlim(-0.5, d_model - 0.5)
    strip.axis("off")
    for row, (name, pairs) in enumerate(layouts.items()):
        owner = {feature: i for i, members in enumerate(pairs) for feature in members}
        row_y = row * row_step
        if phone:
            strip.text(-0.45, row_y - 0.55, name, ha="left", va="bottom", fontsize=9)
        else:
            fig.text(
                0.235, 0.94 - 0.2 * (row + 0.5) / 2.2, name, ha="right", va="center", fontsize=9
            )
        for feature in range(d_model):
            i = owner[feature]
            strip.add_patch(
                Rectangle(
                    (feature - 0.45, row_y - 0.4),
                    0.9,
                    0.8,
                    facecolor=_tint(hues[i]),
                    edgecolor=hues[i],
                    linewidth=2.4 if i == pair else 0.8,
                )
            )
            strip.text(feature, row_y, f"x{feature}", ha="center", va="center", fontsize=9)
    heading = "features of one query or key; one colour per rotated pair"
    if phone:
        fig.text(
            0.5, 1 - 0.1 / height, heading.replace("; ", ";\n"), ha="center", va="top", fontsize=9
        )
    else:
        fig.text(0.6, 0.955, heading, ha="center", va="bottom", fontsize=9)

    if phone:
        side = width - 0.9  # the plane is square, its y label on the left
        plane = fig.add_axes(rect(0.7, 2.45, side, side))
    else:
        plane = fig.add_axes((0.09, 0.12, 0.42, 0.52))
    radius = float(np.abs(values).max()) * 1.9
    plane.set_xlim(-radius, radius)
    plane.set_ylim(-radius, radius)
    plane.set_aspect("equal")
    plane.axhline(0, color="0.6", linewidth=0.8)
    plane.axvline(0, color="0.6", linewidth=0.8)
    first, second = layouts["interleaved (RoFormer)"][pair]
    plane.set_xlabel(f"first of interleaved pair {pair}: x{first}", fontsize=9)
    plane.set_ylabel(f"second of interleaved pair {pair}: x{second}", fontsize=9)
    plane.tick_params(labelsize=8)
    colour = OKABE_ITO[0]
    start = np.degrees(np.arctan2(values[0, 1], values[0, 0]))  # direction of the first arrow
    for index, ((a, b), position, angle) in enumerate(zip(values, positions, angles, strict=True)):
        plane.annotate(
            "",
            xy=(a, b),
            xytext=(0, 0),
            arrowprops={"arrowstyle": "-|>", "color": colour, "linewidth": 1.6},
            gid=f"arrow[{index}]",
        )
        if index:  # the angle from the first arrow, as an arc
            size = radius * (0.25 + 0.1 * index)
            low, high = sorted((start, start + np.degrees(angle - angles[0])))
            plane.add_patch(
                Arc((0, 0), size, size, theta1=low, theta2=high, color="0.35", linewidth=0.9)
            )
        plane.text(
            a * 1.45,
            b * 1.45,
            f"pos {position}\n{angle:.2f} rad",
            ha="center",
            va="center",
            fontsize=8.5,
            gid=f"angle[{index},0]",
            bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5},
        )
    plane.set_title(
        f"pair {pair} of {vector} at positions {positions[0]}–{positions[-1]}", fontsize=9.5
    )

    fig.text(
        0.05 if phone else 0.56,
        (1.1 / height) if phone else 0.5,
        "RoPE turns pair i of the vector at\n"
        "position pos by the angle θ = pos · ω_i,\n"
        "ω_i = 10000^(−2i/D):\n\n"
        "(a, b) → (a cos θ − b sin θ,\n"
        "              a sin θ + b cos θ)\n\n"
        "Each layout turns its own pairs:\n"
        "half-split RoPE is interleaved RoPE\n"
        "with the features permuted.",
        ha="left",
        va="center",
        fontsize=9,
    )

    def pairs_text(pairs: list[tuple[int, int]]) -> str:
        return ", ".join(f"(x{i}, x{j})" for i, j in pairs)

    arrows = "; ".join(
        f"position {position}, θ = {angle:.2f} rad, ({a:.2f}, {b:.2f})"
        for (a, b), position, angle in zip(values, positions, angles, strict=True)
    )
    alt = (
        f"Computed diagram: RoPE turns pairs of features, D = {d_model}. Interleaved layout "
        f"(RoFormer) pairs {pairs_text(layouts['interleaved (RoFormer)'])}; half-split layout "
        f"(rotate_half) pairs {pairs_text(layouts['half-split (rotate_half)'])}. Interleaved "
        f"pair {pair} of {vector}, {pairs_text([(first, second)])}, drawn as an arrow in the "
        f"plane at each position, turned by θ = pos · ω_{pair}: {arrows}. Each layout turns "
        "its own pairs: half-split RoPE is interleaved RoPE with the features permuted."
    )
    return Diagram(fig, alt)


@for_the_page
def encoding_similarity(
    gram: np.ndarray,
    cosines: Mapping[int, np.ndarray],
    first_rises: Mapping[int, int],
    *,
    d_model: int,
    max_offset: int = 120,
) -> Figure:
    """How alike two positions' encodings are. First panel: the dot products
    ``PE[p] · PE[q]`` of the encoding of width ``d_model`` between all positions, as
    :func:`encoding_heatmap`. Second panel: for each width ``D`` of ``cosines``, the cosine
    similarity of ``PE[p]`` and ``PE[p + k]`` against the offset ``k`` up to ``max_offset``,
    its first rise marked with a dot. Side by side on a laptop, one above the other on a
    phone. The caller computes the arrays; this only draws them.

    Shapes
    ------
    ``gram``: ``(T, T)``; each value of ``cosines``: ``(K,)`` with ``K > max_offset``,
    indexed by the offset ``k``; ``first_rises``: an offset per key of ``cosines``.

    Examples
    --------
    >>> curve = np.cos(np.arange(200) / 10)
    >>> fig = encoding_similarity(np.eye(3), {8: curve}, {8: 31}, d_model=8)
    >>> [ax.get_title() for ax in fig.axes[:2]]
    ['PE[p] · PE[q], D = 8', 'Falls fast, then wobbles (dots: first rise)']
    """
    if set(first_rises) != set(cosines):
        raise ValueError(
            f"one first rise per curve: curves for D = {sorted(cosines)}, "
            f"first rises for D = {sorted(first_rises)}"
        )
    for width, curve in cosines.items():
        if np.ndim(curve) != 1 or len(curve) <= max_offset:
            raise ValueError(
                f"cosines[{width}] must be 1-D with more than max_offset = {max_offset} values, "
                f"got shape {np.shape(curve)}"
            )
    phone = current_layout() == "phone"
    if phone:
        fig = Figure(figsize=(column_width(), 6.8), layout="constrained")
        left, right = fig.subplots(2, 1)
    else:
        fig = Figure(figsize=(column_width(), 3.3), layout="constrained")
        left, right = fig.subplots(1, 2)
    encoding_heatmap(gram, title=f"PE[p] · PE[q], D = {d_model}", ax=left)
    left.set(xlabel="position q", ylabel="position p")
    left.figure.axes[-1].set_ylabel("dot product")  # the colour bar
    for colour, (width, curve) in zip(OKABE_ITO, cosines.items(), strict=False):
        rise = first_rises[width]
        right.plot(np.asarray(curve)[: max_offset + 1], color=colour, label=f"D = {width}")
        right.plot(rise, curve[rise], "o", color=colour)
    right.axhline(0.0, color="0.4", linewidth=0.8)
    wrap = "\n" if phone else " "
    right.set(
        xlabel="offset k = q - p",
        ylabel=f"cosine similarity of{wrap}PE[p], PE[p + k]",
    )
    right.set_title(f"Falls fast, then wobbles{wrap}(dots: first rise)", fontsize=10)
    right.legend()
    return fig
