"""Figures of chapter 10, decoder and cross-attention."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from selfattn_lib.plotting.base import (
    COLUMN_WIDTH,
    OKABE_ITO,
    SEQUENTIAL_CMAP,
)


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
    steps (dark) on a logarithmic axis; with ``learning_rates``, a second panel to its right
    shows the learning rate of every step. Both panels together are as wide as the book's
    column (:data:`~selfattn_lib.plotting.base.COLUMN_WIDTH`).

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
        figsize = (COLUMN_WIDTH, 3.4) if n_panels == 2 else (5.5, 3.8)
        fig = Figure(figsize=figsize, layout="constrained")
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
    colorbar: bool = True,
    axes: Sequence[Axes] | None = None,
) -> Figure:
    """Draw cross-attention weights with the source tokens (keys) across and the tokens the
    decoder writes (queries) down, all on one colour scale from 0 to 1.

    A 2-D ``weights`` gives one map; a 3-D one gives a map per head and, last, their mean,
    in rows of ``ncols`` maps across the book's column (only the first column's maps repeat
    the label of the rows). Spaces in the labels are shown as ``"␣"``. One colour bar serves
    all the maps drawn; ``colorbar=False`` leaves it out, e.g. to draw one for several calls
    with :func:`~selfattn_lib.plotting.base.shared_colorbar`.

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
    first_column = [True] * len(maps)
    if axes is None:
        ncols = max(1, min(int(ncols), len(maps)))
        nrows = -(-len(maps) // ncols)
        t_tgt, t_src = values.shape[-2:]
        if len(maps) == 1:
            figsize = (min(COLUMN_WIDTH, 0.26 * t_src + 2.5), 0.26 * t_tgt + 1.7)
        else:
            # Cells about square: the width left for the maps' cells, shared by ncols maps.
            cell = (COLUMN_WIDTH - 1.0 - 0.8 * ncols) / ncols / t_src
            figsize = (COLUMN_WIDTH, (cell * t_tgt + 0.9) * nrows + 0.4)
        fig = Figure(figsize=figsize, layout="constrained")
        grid = np.atleast_1d(fig.subplots(nrows, ncols)).ravel()
        for spare in grid[len(maps) :]:
            spare.remove()
        axes = grid[: len(maps)]
        first_column = [index % ncols == 0 for index in range(len(maps))]
        if title and values.ndim == 3:
            fig.suptitle(title)
    if len(axes) != len(maps):
        raise ValueError(f"axes must hold {len(maps)} axes for these weights, got {len(axes)}")
    for ax, matrix, panel_title, labelled in zip(axes, maps, titles, first_column, strict=True):
        image = ax.imshow(matrix, cmap=SEQUENTIAL_CMAP, vmin=0.0, vmax=1.0, aspect="auto")
        ax.set_xticks(range(matrix.shape[1]), labels=visible_characters(source_tokens))
        ax.set_yticks(range(matrix.shape[0]), labels=visible_characters(target_tokens))
        ax.tick_params(labelsize=9)
        ax.set_xlabel("source character (key)")
        ax.set_ylabel("written token (query)" if labelled else "")
        ax.set_title(panel_title, fontsize=10)
    figure = axes[0].figure
    if colorbar:
        figure.colorbar(image, ax=list(axes), label="cross-attention weight", shrink=0.8)
    return figure
