"""Figures of chapter 12, a GPT from the pieces."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from selfattn_lib.plotting.architecture import INPUT, Block, Column, architecture, shapes_of
from selfattn_lib.plotting.base import (
    COLUMN_WIDTH,
    OKABE_ITO,
    column_width,
    current_layout,
    for_the_page,
    new_axes,
    small_multiples,
)
from selfattn_lib.plotting.ch10_decoder import loss_curve, visible_characters
from selfattn_lib.plotting.diagrams import Diagram, Grid, flow


@for_the_page
def gpt_diagram(shapes: Mapping[str, tuple[int, ...]], *, title: str = "") -> Diagram:
    """The whole GPT drawn from the input tokens (bottom) to the next-token probabilities
    (top), with the module names of :class:`selfattn_lib.language_model.GPT` and the shapes
    one run of it recorded (``plotting.record_shapes(model, tokens)``): the two embeddings
    added, one pre-norm layer (causal self-attention and the feed-forward network, each with
    its residual path in vermillion) repeated as many times as the model has layers, the final
    norm and the output projection, which is the token embedding matrix (tied).

    Shapes
    ------
    ``shapes``: :func:`~selfattn_lib.plotting.architecture.record_shapes` of a GPT run on
    ``(B, T)`` token ids; the layers' blocks are ``(B, T, D)``, the output ``(B, T, V)``.

    Examples
    --------
    >>> import torch
    >>> from selfattn_lib.language_model import GPT, GPTConfig
    >>> from selfattn_lib.plotting.architecture import read_blocks, record_shapes
    >>> model = GPT(GPTConfig(vocab_size=9, context_length=8, d_model=8, n_heads=2, d_ff=16))
    >>> shapes = record_shapes(model.eval(), torch.ones(1, 5).long())
    >>> read_blocks(gpt_diagram(shapes).figure)["self_attention"]
    ('self_attention (causal mask)', '1 × 5 × 8')
    """
    n_layers = 1 + max(
        int(name.split(".")[2]) for name in shapes if name.startswith("blocks.layers.")
    )
    layer = shapes_of(shapes, "blocks.layers.0")
    column = Column(
        "GPT: decoder only",
        [
            Block("tokens", "tokens", shapes[INPUT]),
            Block("embeddings", "token_embedding + position_embedding",
                  shapes["token_embedding"], "embedding"),
            Block("norm_1", "norm_1", layer["norm_1"], "norm"),
            Block("self_attention", "self_attention", layer["self_attention"], "attention",
                  "causal mask"),
            Block("add_1", "add", layer["norm_2"], "add"),
            Block("norm_2", "norm_2", layer["norm_2"], "norm"),
            Block("feed_forward", "feed_forward", layer["feed_forward"], "feed_forward"),
            Block("add_2", "add", shapes["blocks.layers.0"], "add"),
            Block("final_norm", "blocks.norm (final)", shapes["blocks.norm"], "norm"),
            Block("output", "output = token_embeddingᵀ (tied)", shapes["output"], "output"),
            Block("next", "next-token probabilities (softmax)"),
        ],
        residuals=[("norm_1", "add_1"), ("norm_2", "add_2")],
        repeat=("norm_1", "add_2", n_layers),
    )  # fmt: skip
    # On a phone, the phone's column: a laptop's 62 % would be shrunk on the page.
    return architecture(column, title=title, width=min(COLUMN_WIDTH * 0.62, column_width()))


@for_the_page
def next_token_flow(
    inputs: Sequence[str], targets: Sequence[str], target_probabilities: Sequence[float]
) -> Diagram:
    """How a language model learns from a text: the model reads the window ``inputs``, at
    every position it predicts the next character, and the target is the window shifted by
    one. Under each target, the probability the model gave it; the loss is the mean of
    ``−log₂`` of those probabilities (bits per character).

    Shapes
    ------
    ``inputs``, ``targets``: ``(T,)`` characters; ``target_probabilities``: ``(T,)`` numbers
    in [0, 1].

    Examples
    --------
    >>> from selfattn_lib.plotting.diagrams import read_back
    >>> d = next_token_flow("ab", "bc", [0.5, 0.25])
    >>> read_back(d.figure, "−log₂ p").tolist()
    [[1.0, 2.0]]
    """
    probabilities = np.asarray(target_probabilities, dtype=np.float64)
    if len(inputs) != len(targets) or probabilities.shape != (len(targets),):
        raise ValueError(
            f"inputs, targets and target_probabilities must have one entry per position: "
            f"{len(inputs)}, {len(targets)} and {probabilities.shape}"
        )
    if probabilities.size == 0 or (probabilities <= 0).any() or (probabilities > 1).any():
        raise ValueError("target_probabilities must be in (0, 1]")
    shown_inputs, shown_targets = visible_characters(inputs), visible_characters(targets)
    positions = [str(i) for i in range(len(inputs))]
    return flow(
        Grid("input", np.array(shown_inputs)[None, :], cols=positions, note="what the model reads"),
        "shift by one →",
        Grid("target", np.array(shown_targets)[None, :], cols=positions,
             note="the character to predict"),
        "GPT →",
        Grid("p(target)", probabilities, cols=positions, role="weights",
             note="the model's probability of it"),
        "−log₂ →",
        Grid("−log₂ p", -np.log2(probabilities), cols=positions, role="scores", fmt=".1f",
             note=f"mean: {-np.log2(probabilities).mean():.2f} bits"),
        title="next-token prediction",
    )  # fmt: skip


@for_the_page
def sampling_flow(
    candidates: Sequence[str],
    logits: Sequence[float],
    probabilities: Sequence[float],
    top_k_kept: Sequence[float],
    kept: Sequence[float],
    *,
    temperature: float,
    top_k: int,
    top_p: float,
) -> Diagram:
    """One sampling step drawn with its numbers, in the order ``generate`` applies them: the
    logits of the most likely next characters, the probabilities after dividing by the
    temperature and the softmax, what top-k keeps of them, and what top-p then keeps (each
    time the others set to zero and the rest renormalised).

    Shapes
    ------
    ``candidates``: ``(k,)`` characters; ``logits``, ``probabilities``, ``top_k_kept``,
    ``kept``: ``(k,)``.

    Examples
    --------
    >>> from selfattn_lib.plotting.diagrams import read_back
    >>> d = sampling_flow("abc", [1.0, 0.0, -1.0], [0.67, 0.24, 0.09], [0.73, 0.27, 0.0],
    ...                   [1.0, 0.0, 0.0], temperature=1.0, top_k=2, top_p=0.5)
    >>> read_back(d.figure, "top-k").tolist()
    [[0.73, 0.27, 0.0]]
    """
    arrays = [
        np.asarray(values, dtype=np.float64) for values in (logits, probabilities, top_k_kept, kept)
    ]
    if any(array.shape != (len(candidates),) for array in arrays):
        raise ValueError(
            "logits, probabilities, top_k_kept and kept need one value per candidate: "
            f"{len(candidates)} candidates, shapes {[array.shape for array in arrays]}"
        )
    labels = visible_characters(candidates)
    settings = f"temperature {temperature:g}, top-k {top_k}, top-p {top_p:g}"
    return flow(
        Grid("logits", arrays[0], cols=labels, role="scores", fmt=".1f"),
        f"÷ {temperature:g}, softmax →",
        Grid("p", arrays[1], cols=labels, role="weights"),
        f"top-k {top_k} →",
        Grid("top-k", arrays[2], cols=labels, role="weights", note="renormalised"),
        f"top-p {top_p:g} →",
        Grid("kept", arrays[3], cols=labels, role="weights", note="renormalised"),
        # On a phone, the title breaks before its parenthesis, not inside it.
        title=f"one sampling step{' ' if current_layout() == 'laptop' else chr(10)}({settings})",
    )


@for_the_page
def training_bits(
    bits: Sequence[float],
    learning_rates: Sequence[float],
    *,
    baseline: float,
    window: int = 20,
) -> Figure:
    """A GPT's training: the loss of every step in bits per character (light), its mean over
    ``window`` steps (dark) and the dotted line of the bigram ``baseline``; beside it (on a
    phone, below it), the learning rate of every step.

    Shapes
    ------
    ``bits``, ``learning_rates``: ``(n_steps,)``.

    Examples
    --------
    >>> fig = training_bits([4.0, 3.0, 2.0], [0.1, 0.2, 0.1], baseline=3.5, window=2)
    >>> fig.axes[0].get_ylabel(), list(fig.axes[0].lines[-1].get_ydata())
    ('bits per character', [3.5, 3.5])
    """
    fig, axes = small_multiples(2, columns=2, panel_height=1.9)
    loss_curve(bits, learning_rates=learning_rates, window=window, axes=axes)
    axes[0].set(yscale="linear", ylabel="bits per character")
    axes[0].axhline(baseline, color="black", linestyle=":", label="bigram")
    axes[0].legend(fontsize=8)
    return fig


@for_the_page
def sampling_settings(
    candidates: Sequence[str],
    probabilities: Sequence[Sequence[float]],
    kept: Sequence[Sequence[float]],
    titles: Sequence[str],
) -> Figure:
    """The same next-character distribution under several sampling settings, a panel each
    (:func:`next_character_bars`, titled by ``titles``): the probabilities after the
    temperature and what top-p keeps. The legend is drawn in the first panel only.

    Shapes
    ------
    ``candidates``: ``(k,)``; ``probabilities``, ``kept``: ``(n_settings, k)``; ``titles``:
    ``(n_settings,)``.

    Examples
    --------
    >>> fig = sampling_settings("ab", [[0.7, 0.3], [0.5, 0.5]], [[1, 0], [0.5, 0.5]], ["x", "y"])
    >>> [ax.get_title() for ax in fig.axes], fig.axes[1].get_legend() is None
    (['x', 'y'], True)
    """
    if not len(probabilities) == len(kept) == len(titles) or not titles:
        raise ValueError("probabilities, kept and titles need one entry per setting")
    columns = 2 if current_layout() == "laptop" else 1  # on a phone, one panel a row
    fig, axes = small_multiples(len(titles), columns=columns, panel_height=1.6, width=5.4)
    for ax, shown, top_p, title in zip(axes, probabilities, kept, titles, strict=True):
        next_character_bars(candidates, shown, top_p, ax=ax, title=title)
    for ax in axes[1:]:
        ax.get_legend().remove()
    for ax in axes[: len(axes) - columns]:  # the x label under the last row only
        ax.set_xlabel("")
    return fig


def next_character_bars(
    candidates: Sequence[str],
    probabilities: Sequence[float],
    kept: Sequence[float],
    *,
    title: str = "",
    ax=None,
) -> Figure:
    """The next-character distribution as bars: every candidate's probability after the
    temperature (light), and what top-p keeps, renormalised (dark).

    Shapes
    ------
    ``candidates``: ``(k,)``; ``probabilities``, ``kept``: ``(k,)`` in [0, 1].

    Examples
    --------
    >>> fig = next_character_bars("ab", [0.7, 0.3], [1.0, 0.0])
    >>> [round(float(bar.get_height()), 1) for bar in fig.axes[0].patches]
    [0.7, 0.3, 1.0, 0.0]
    """
    probabilities = np.asarray(probabilities, dtype=np.float64)
    kept = np.asarray(kept, dtype=np.float64)
    if probabilities.shape != (len(candidates),) or kept.shape != probabilities.shape:
        raise ValueError("probabilities and kept need one value per candidate")
    ax = new_axes((COLUMN_WIDTH, 2.6), ax)
    positions = np.arange(len(candidates))
    ax.bar(positions - 0.2, probabilities, width=0.4, color=OKABE_ITO[5], label="after temperature")
    ax.bar(positions + 0.2, kept, width=0.4, color=OKABE_ITO[4], label="kept by top-p")
    ax.set_xticks(positions, labels=visible_characters(candidates))
    ax.set(xlabel="next character", ylabel="probability", ylim=(0, 1), title=title)
    ax.legend(fontsize=8, loc="upper right")
    return ax.figure  # fmt: skip


@for_the_page
def merges_and_length(n_merges: Sequence[int], lengths: Sequence[int], characters: int) -> Figure:
    """How byte-pair merges shorten a text: its length in tokens against the number of merges
    learned, as a share of its length in characters.

    Shapes
    ------
    ``n_merges``, ``lengths``: ``(n,)`` whole numbers; ``characters``: the length at 0 merges.

    Examples
    --------
    >>> fig = merges_and_length([0, 10], [100, 80], 100)
    >>> fig.axes[0].lines[0].get_ydata().tolist()
    [1.0, 0.8]
    """
    merges = np.asarray(n_merges)
    sizes = np.asarray(lengths, dtype=np.float64)
    if merges.shape != sizes.shape or merges.ndim != 1 or merges.size == 0:
        raise ValueError("n_merges and lengths must be 1-D and of the same length")
    ax = new_axes((COLUMN_WIDTH * 0.7, 2.8))
    ax.plot(merges, sizes / characters, marker="o", color=OKABE_ITO[0])
    breaking = " " if current_layout() == "laptop" else "\n"  # a phone's label: 2 lines
    ax.set(
        xlabel=f"merges learned{breaking}(vocabulary = characters + merges)",
        ylabel="tokens per character",
        ylim=(0, 1.05),
    )
    ax.grid(alpha=0.3)
    return ax.figure


@for_the_page
def decoding_cost(
    lengths: Sequence[int],
    seconds: Mapping[str, Sequence[float]],
    flops: Mapping[str, Sequence[int]],
) -> Figure:
    """Generating with and without a KV cache: the FLOPs counted for each new token (left)
    and the time it took on this machine (right; on a phone, below), against the length of
    the text so far.

    Shapes
    ------
    ``lengths``: ``(n,)``; every value of ``seconds`` and ``flops``: ``(n,)``, with the same
    keys (``"without cache"``, ``"with cache"``).

    Examples
    --------
    >>> fig = decoding_cost([1, 2], {"a": [1e-3, 2e-3]}, {"a": [10, 20]})
    >>> len(fig.axes)
    2
    """
    if set(seconds) != set(flops):
        raise ValueError("seconds and flops must have the same keys")
    if current_layout() == "phone":  # one panel above the other
        fig, (left, right) = small_multiples(2, columns=2, panel_height=2.6)
    else:
        fig = Figure(figsize=(COLUMN_WIDTH, 2.8), layout="constrained")
        left, right = fig.subplots(1, 2)
    colours = dict(zip(flops, (OKABE_ITO[1], OKABE_ITO[0]), strict=False))
    for name in flops:
        left.plot(lengths, np.asarray(flops[name]) / 1e6, color=colours[name], label=name)
        right.plot(lengths, np.asarray(seconds[name]) * 1e3, color=colours[name], label=name)
    left.set(xlabel="tokens so far", ylabel="MFLOPs for the next token", title="counted")
    right.set(xlabel="tokens so far", ylabel="ms for the next token", title="measured here")
    left.legend(fontsize=8)
    for ax in (left, right):
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    return fig
