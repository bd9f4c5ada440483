"""Figures of chapter 10, decoder and cross-attention."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from selfattn_lib.plotting.architecture import INPUT, Block, Column, architecture, shapes_of
from selfattn_lib.plotting.base import (
    COLUMN_WIDTH,
    OKABE_ITO,
    SEQUENTIAL_CMAP,
    column_width,
    current_layout,
    for_the_page,
    heatmap,
    new_axes,
    shared_colorbar,
    small_multiples,
)
from selfattn_lib.plotting.diagrams import Diagram


def visible_characters(tokens: Sequence[str]) -> list[str]:
    """Tick labels for character tokens: a space becomes ``"␣"`` and a newline ``"⏎"``, so
    that they can be seen.

    Shapes
    ------
    ``tokens``: ``T`` strings → ``T`` strings.

    Examples
    --------
    >>> visible_characters(["2", " ", "<eos>", "\\n"])
    ['2', '␣', '<eos>', '⏎']
    """
    shown = {" ": "␣", "\n": "⏎"}
    return [shown.get(token, str(token)) for token in tokens]


def _fitted(title: str, fontsize: float = 12.0) -> str:
    """``title`` as drawn: on a phone, wrapped at spaces into lines that fit its column
    (``fontsize``-point characters are about 0.55 of the size wide); on a laptop, as is."""
    if current_layout() != "phone":
        return title
    per_line = int((column_width() - 0.2) / (0.55 * fontsize / 72))
    return "\n".join(textwrap.fill(line, per_line) for line in title.split("\n"))


@for_the_page
def decoder_masks(
    self_mask: np.ndarray,
    cross_mask: np.ndarray,
    read_tokens: Sequence[str],
    source_tokens: Sequence[str],
) -> Figure:
    """Draw the decoder's two masks, 1 (yellow) where a query may attend and 0 (dark) where
    it may not: masked self-attention over the tokens the decoder reads (``"self-attention:
    causal"``) and cross-attention over the source (``"cross"``), side by side and as wide
    as their keys are many; on a phone, one above the other.

    Shapes
    ------
    ``self_mask``: ``(T_tgt, T_tgt)``; ``cross_mask``: ``(T_tgt, T_src)``;
    ``read_tokens``: ``T_tgt`` labels; ``source_tokens``: ``T_src`` labels.

    Examples
    --------
    >>> fig = decoder_masks(np.tril(np.ones((2, 2))), np.ones((2, 3)), ["a", "b"], list("xyz"))
    >>> [ax.get_title() for ax in fig.axes]
    ['self-attention: causal', 'cross']
    """
    self_mask, cross_mask = np.asarray(self_mask), np.asarray(cross_mask)
    t_tgt = len(read_tokens)
    if self_mask.shape != (t_tgt, t_tgt) or cross_mask.shape != (t_tgt, len(source_tokens)):
        raise ValueError(
            f"masks of shapes {self_mask.shape} and {cross_mask.shape} do not fit "
            f"{t_tgt} read tokens and {len(source_tokens)} source tokens"
        )
    if current_layout() == "phone":  # one above the other
        fig = Figure(figsize=(column_width(), 5.6), layout="constrained")
        axes = fig.subplots(2, 1)
    else:
        fig = Figure(figsize=(column_width(), 2.3), layout="constrained")
        axes = fig.subplots(1, 2, width_ratios=[self_mask.shape[1], cross_mask.shape[1]])
    panels = [
        (self_mask, read_tokens, "self-attention: causal"),
        (cross_mask, source_tokens, "cross"),
    ]
    plain = {"annotate": False, "colorbar": False}
    for ax, (mask, columns, title) in zip(axes, panels, strict=True):
        heatmap(mask * 1.0, read_tokens, columns, title=title, ax=ax, **plain)
        ax.set(xlabel="key", ylabel="", aspect="auto")
    for ax in axes if current_layout() == "phone" else axes[:1]:
        ax.set_ylabel("query: the decoder reads")
    fig.suptitle("yellow: may attend · dark: may not", fontsize=9)
    return fig


@for_the_page
def loss_curve(
    losses: Sequence[float],
    *,
    learning_rates: Sequence[float] | None = None,
    window: int = 50,
    panel_height: float = 3.4,
    axes: Sequence[Axes] | None = None,
) -> Figure:
    """Draw the training loss of every step (light) and its moving average over ``window``
    steps (dark) on a logarithmic axis; with ``learning_rates``, a second panel to its right
    shows the learning rate of every step. Both panels together are as wide as the book's
    column (:data:`~selfattn_lib.plotting.base.COLUMN_WIDTH`), ``panel_height`` tall; on a
    phone the learning rate's panel goes below the loss's.

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
    if axes is None and n_panels == 2:
        _, axes = small_multiples(2, columns=2, panel_height=panel_height)
    elif axes is None:
        axes = [new_axes((5.5, 3.8))]
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


@for_the_page
def cross_attention_heads(
    weights: np.ndarray,
    source_tokens: Sequence[str],
    target_tokens: Sequence[str],
    *,
    title: str = "",
) -> Figure:
    """Draw the cross-attention of each head of a layer and their mean
    (:func:`cross_attention_maps`), two maps a row (one on a phone), the rows' label on the
    first column only and the columns' label under the bottom map of each column.

    Shapes
    ------
    ``weights``: ``(H, T_tgt, T_src)``; ``source_tokens``: ``T_src`` labels;
    ``target_tokens``: ``T_tgt`` labels.

    Examples
    --------
    >>> fig = cross_attention_heads(np.full((2, 2, 3), 1 / 3), list("abc"), ["x", "<eos>"])
    >>> [bool(ax.get_xlabel()) for ax in fig.axes[:3]]
    [False, True, True]
    """
    values = np.asarray(weights, dtype=np.float64)
    if values.ndim != 3:
        raise ValueError(f"weights must have shape (H, T_tgt, T_src), got {values.shape}")
    n_maps = values.shape[0] + 1
    columns = 2 if current_layout() != "phone" else 1
    fig, axes = small_multiples(n_maps, columns=2, panel_height=2.5)
    phone = current_layout() == "phone"  # the colour bar under the stacked maps
    cross_attention_maps(values, source_tokens, target_tokens, colorbar=not phone, axes=axes)
    if phone:
        fig.colorbar(axes[0].images[0], ax=axes, location="bottom", label="cross-attention weight")
    for index, ax in enumerate(axes):
        if index % columns:  # the row labels once, on the left
            ax.set_ylabel("")
        if index + columns < n_maps:  # the column labels once, at the bottom
            ax.set_xlabel("")
    fig.suptitle(_fitted(title))
    return fig


@for_the_page
def cross_attention_answers(
    sources: Sequence[str],
    written: Sequence[Sequence[str]],
    weights: Sequence[np.ndarray],
) -> Figure:
    """Draw, for each source text, the cross-attention behind the tokens the model wrote
    for it (one map each, two a row, one on a phone, on one colour scale), titled
    ``'source' -> 'answer'`` (the answer is the written tokens before the last,
    ``<eos>``).

    Shapes
    ------
    ``sources``: ``n`` texts; ``written[i]``: the ``T_tgt`` tokens written for
    ``sources[i]``; ``weights[i]``: ``(T_tgt, T_src)``, ``T_src = len(sources[i])``.

    Examples
    --------
    >>> fig = cross_attention_answers(["ab"], [["x", "<eos>"]], [np.full((2, 2), 0.5)])
    >>> fig.axes[0].get_title()
    "'ab' -> 'x'"
    """
    if not len(sources) == len(written) == len(weights) or not sources:
        raise ValueError(
            f"give as many written token lists and weights as sources ({len(sources)}), "
            f"got {len(written)} and {len(weights)}"
        )
    fig, axes = small_multiples(len(sources), columns=2, panel_height=2.0)
    for ax, text, tokens, matrix in zip(axes, sources, written, weights, strict=True):
        answer = "".join(tokens[:-1])
        cross_attention_maps(matrix, [*text], tokens, colorbar=False, axes=[ax])
        ax.set(title=f"{text!r} -> {answer!r}", xlabel="", ylabel="")
    return shared_colorbar(axes, "cross-attention weight")


def _decoder_blocks(layer: Mapping[str, tuple[int, ...]]) -> list[Block]:
    """The three sublayers of a decoder layer and their add & norm steps."""
    return [
        Block("dec_self", "self_attention", layer["self_attention"], "attention", "causal mask"),
        Block("dec_norm_1", "add & norm_1", layer["norm_1"], "norm"),
        Block("dec_cross", "cross_attention", layer["cross_attention"], "attention"),
        Block("dec_norm_2", "add & norm_2", layer["norm_2"], "norm"),
        Block("dec_ff", "feed_forward", layer["feed_forward"], "feed_forward"),
        Block("dec_norm_3", "add & norm_3", layer["norm_3"], "norm"),
    ]


_DECODER_RESIDUALS = (
    ("dec_self", "dec_norm_1"),
    ("dec_cross", "dec_norm_2"),
    ("dec_ff", "dec_norm_3"),
)


@for_the_page
def decoder_layer_diagram(
    shapes: Mapping[str, tuple[int, ...]], memory_shape: tuple[int, ...], *, title: str = ""
) -> Diagram:
    """One decoder layer drawn from its input (bottom) to its output (top), with the module
    names of :class:`selfattn_lib.layers.DecoderLayer` and the shapes one run of it recorded:
    masked self-attention, cross-attention reading the encoder's memory, the feed-forward
    network, each followed by add & norm (the residual paths in vermillion).

    Shapes
    ------
    ``shapes``: :func:`~selfattn_lib.plotting.architecture.record_shapes` of a
    ``DecoderLayer`` run on ``(B, T_tgt, D)`` and a memory of ``memory_shape``
    ``(B, T_src, D)``.

    Examples
    --------
    >>> import torch
    >>> from selfattn_lib.layers import DecoderLayer
    >>> from selfattn_lib.plotting.architecture import read_blocks, record_shapes
    >>> y, memory = torch.ones(1, 4, 8), torch.ones(1, 6, 8)
    >>> shapes = record_shapes(DecoderLayer(8, 2, 16).eval(), y, memory)
    >>> read_blocks(decoder_layer_diagram(shapes, tuple(memory.shape)).figure)["memory"]
    ('memory (encoder output)', '1 × 6 × 8')
    """
    decoder = Column(
        "Decoder layer",
        [
            Block("y", "y: the target so far", shapes[INPUT]),
            *_decoder_blocks(shapes),
            Block("z", "to the next layer"),
        ],
        residuals=_DECODER_RESIDUALS,
    )
    encoder = Column(
        "Encoder", [None, None, Block("memory", "memory (encoder output)", memory_shape)]
    )
    # Narrower than the column: the encoder's side holds one block.
    return architecture(
        encoder,
        decoder,
        links=[("memory", "dec_cross")],
        title=title,
        width=column_width() * (0.78 if current_layout() == "laptop" else 1.0),
    )


@for_the_page
def transformer_diagram(shapes: Mapping[str, tuple[int, ...]], *, title: str = "") -> Diagram:
    """The whole encoder–decoder in the style of the paper's Figure 1, drawn with the module
    names of :class:`selfattn_lib.transformer.Transformer` and the shapes that one run of it
    recorded (``plotting.record_shapes(model, src, tgt)``): the encoder on the left, the
    decoder on the right, one layer of each with its residual paths, repeated as many times
    as the model has layers, and the encoder's output (the memory) going into every
    cross-attention.

    Shapes
    ------
    ``shapes``: :func:`~selfattn_lib.plotting.architecture.record_shapes` of a Transformer;
    ``src_embedding`` ``(B, T_src, D)``, ``tgt_embedding`` ``(B, T_tgt, D)`` and ``output``
    ``(B, T_tgt, V_tgt)`` are drawn, and the layers' outputs.

    Examples
    --------
    >>> import torch
    >>> from selfattn_lib.plotting.architecture import read_blocks, record_shapes
    >>> from selfattn_lib.transformer import Transformer, TransformerConfig
    >>> model = Transformer(TransformerConfig(9, 7, d_model=8, n_heads=2, d_ff=16, n_layers=2))
    >>> shapes = record_shapes(model.eval(), torch.ones(1, 5).long(), torch.ones(1, 4).long())
    >>> read_blocks(transformer_diagram(shapes).figure)["dec_cross"]
    ('cross_attention', '1 × 4 × 8')
    """
    layers = 1 + max(
        int(name.split(".")[2]) for name in shapes if name.startswith("encoder.layers.")
    )
    encoder, decoder = shapes_of(shapes, "encoder.layers.0"), shapes_of(shapes, "decoder.layers.0")
    source = shapes["src_embedding"]  # (B, T_src, D)
    # (B, T_tgt, D), from the output's (B, T_tgt, V): with shared embeddings the target's
    # embedding is the source's module, which records its first call only.
    target = (*shapes["output"][:2], source[-1])
    encoder_column = Column(
        "Encoder",
        [
            Block("src", "source tokens", source[:2]),
            Block("src_embedding", "src_embedding × √D + positions", source, "embedding"),
            None,
            None,
            Block("enc_self", "self_attention", encoder["self_attention"], "attention",
                  "padding mask"),
            Block("enc_norm_1", "add & norm_1", encoder["norm_1"], "norm"),
            Block("enc_ff", "feed_forward", encoder["feed_forward"], "feed_forward"),
            Block("enc_norm_2", "add & norm_2", encoder["norm_2"], "norm"),
        ],
        residuals=[("enc_self", "enc_norm_1"), ("enc_ff", "enc_norm_2")],
        repeat=("enc_self", "enc_norm_2", layers),
        side="left",
    )  # fmt: skip
    decoder_column = Column(
        "Decoder",
        [
            Block("tgt", "target tokens, shifted right", target[:2]),
            Block("tgt_embedding", "tgt_embedding × √D + positions", target, "embedding"),
            *_decoder_blocks(decoder),
            Block("output", "output (Linear) → softmax", shapes["output"], "output"),
            Block("next", "next-token probabilities"),
        ],
        residuals=_DECODER_RESIDUALS,
        repeat=("dec_self", "dec_norm_3", layers),
    )  # fmt: skip
    return architecture(
        encoder_column, decoder_column, links=[("enc_norm_2", "dec_cross", "memory")], title=title
    )
