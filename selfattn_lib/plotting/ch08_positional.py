"""Figures of chapter 8, positional encoding."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from selfattn_lib.plotting.base import (
    COLUMN_WIDTH,
    DIVERGING_CMAP,
    OKABE_ITO,
    SEQUENTIAL_CMAP,
    new_axes,
)


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
    ``dimension`` highlighted. Made alone, the figure is as wide as the book's column
    (``COLUMN_WIDTH``), the wave panel wider than the vector panel.

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
        fig = Figure(figsize=(COLUMN_WIDTH, 3.4), layout="constrained")
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
    wave_ax.set_ylim(-1.15, 1.6)
    wave_ax.set_xlabel("position")
    wave_ax.set_ylabel("encoding value")
    wave_ax.set_title(
        f"dimension {dimension} (pair {pair})\nwavelength {wavelengths[pair]:.4g} positions",
        fontsize=10,
    )
    wave_ax.legend(
        loc="upper right",
        ncols=2,
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
