"""What attention heads learn: induction heads in a small attention-only model (chapter 14).

An *induction head* completes patterns: having seen ``… A B … A``, it predicts ``B``. It
needs two heads in two layers (Elhage et al., 2021): a *previous-token head* in the first
layer writes into each position which token came just before it, and the induction head in
the second layer uses that to attend, from the current token ``A``, to the position just
after the earlier ``A`` (*prefix matching*), and copies the token it finds there, ``B``
(*copying*). Trained on sequences of random tokens that are repeated, a two-layer model
learns this suddenly: the loss on the repeated half first falls by about 2 bits (every token
of the repeated half has already occurred, and a head that spreads its attention over the
tokens seen so far can raise them all), then to almost zero within about a hundred steps
(the *phase change* of Olsson et al., 2022).

- :func:`repeated_tokens` — the data: random tokens, the second half a copy of the first;
- :class:`AttentionOnlyConfig` and :class:`AttentionOnlyTransformer` — the model: a token
  embedding, attention layers (rotary or learned positions) with residual connections, no
  feed-forward network and no layer norm, an unembedding; any heads can be switched off
  (``ablate``);
- :func:`train_induction_model` — training, with the loss of each half at every step;
- :func:`in_context_loss` — the loss on the first and on the repeated half, in bits;
- :func:`previous_token_scores` and :func:`prefix_matching_scores` — what each head attends
  to, from its attention weights;
- :func:`ov_circuit` and :func:`copying_scores` — what each head writes, from its weights.

Losses are in bits per token, as in chapter 12
(:func:`~selfattn_lib.language_model.bits_per_token`): a model that can only guess among
``V`` equally likely tokens pays ``log2 V`` bits.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from selfattn_lib._validation import check_positive_float, check_positive_int
from selfattn_lib.grouped_query import GroupedQueryAttention
from selfattn_lib.language_model import (
    _check_heads_and_positions,
    _check_tokens,
    causal_mask_after,
)
from selfattn_lib.layers import MultiHeadAttention
from selfattn_lib.training import TrainingHistory, _check_generator, _print_progress


def repeated_tokens(
    n_sequences: int,
    half_length: int,
    vocab_size: int,
    *,
    generator: torch.Generator,
    first_token: int | None = 0,
    distinct: bool = True,
) -> Tensor:
    """Sequences of random tokens whose second half is a copy of the first.

    Each half is ``half_length`` tokens drawn at random (with ``generator``). With
    ``first_token`` set (the default, id 0), every sequence starts with that token and the
    random ones are drawn from the other ``V - 1`` ids; the copy starts with it too. With
    ``distinct`` (the default) the tokens of a half are all different, drawn without
    replacement, so that each token of the copy has exactly one earlier occurrence and the
    rule "copy the token that followed it" is never ambiguous; ``distinct=False`` draws them
    independently (with replacement), so that a half may hold a token twice.

    A fixed first token gives the heads a place to put their attention when nothing earlier
    matches (as a ``<bos>`` token does in a language model, or the attention sinks of
    chapter 13); in chapter 14's runs (with draws with replacement) the phase change came
    sooner with it and the final loss on the repeated half was several times lower.
    ``first_token=None`` draws every token at random from all ``V`` ids.

    Shapes
    ------
    → integer ids ``(B, T)`` with ``B = n_sequences`` and ``T = 2 · half_length``, and
    ``tokens[:, half_length:]`` equal to ``tokens[:, :half_length]``.

    Examples
    --------
    >>> tokens = repeated_tokens(2, 4, 10, generator=torch.Generator().manual_seed(0))
    >>> tuple(tokens.shape), bool((tokens[:, :4] == tokens[:, 4:]).all())
    ((2, 8), True)
    >>> tokens[:, 0].tolist()  # the fixed first token
    [0, 0]
    >>> [len(set(half)) for half in tokens[:, :4].tolist()]  # distinct tokens in each half
    [4, 4]
    """
    n_sequences = check_positive_int("n_sequences", n_sequences)
    half_length = check_positive_int("half_length", half_length)
    vocab_size = check_positive_int("vocab_size", vocab_size)
    _check_generator(generator)
    _check_first_token(first_token, vocab_size)
    distinct = _check_distinct(distinct, half_length, vocab_size, first_token)
    if not distinct:  # independent draws: a half may hold a token twice
        if first_token is None:
            first_half = torch.randint(vocab_size, (n_sequences, half_length), generator=generator)
        else:
            others = torch.randint(vocab_size - 1, (n_sequences, half_length), generator=generator)
            first_half = others + (others >= first_token).long()  # (B, T / 2), never first_token
            first_half[:, 0] = int(first_token)
        return torch.cat([first_half, first_half], dim=1)  # (B, T)
    pool = vocab_size if first_token is None else vocab_size - 1  # the ids drawn from
    n_drawn = half_length if first_token is None else half_length - 1
    # The first n_drawn ids of a random permutation of the pool, for every sequence.
    keys = torch.rand(n_sequences, pool, generator=generator, dtype=torch.float64)
    first_half = keys.argsort(dim=1)[:, :n_drawn]  # (B, n_drawn), all different
    if first_token is not None:
        first_half = first_half + (first_half >= first_token).long()  # never first_token
        first = torch.full((n_sequences, 1), int(first_token))  # (B, 1)
        first_half = torch.cat([first, first_half], dim=1)  # (B, T / 2)
    return torch.cat([first_half, first_half], dim=1)  # (B, T)


@dataclass(frozen=True)
class AttentionOnlyConfig:
    """The sizes of an :class:`AttentionOnlyTransformer`.

    ``positions`` is ``"rope"`` (rotary embeddings in every layer, which needs an even
    ``D_h``) or ``"learned"`` (a position embedding added to the token embeddings).
    ``context_length`` is the longest sequence a model with learned positions reads (its
    position embedding has one row per position); with rotary positions there is no such
    table and the model reads any length. The defaults are those of chapter 14's model:
    with learned positions, both heads of its second layer became induction heads (in each
    of six runs), so that neither mattered much alone; with rotary positions, one did.

    Shapes
    ------
    Not an array: the model has a token embedding ``(V, D)``, with learned positions a
    position embedding ``(context_length, D)``, ``n_layers`` layers of ``H`` heads of
    ``D_h = D / H`` and an unembedding ``(V, D)``.

    Examples
    --------
    >>> config = AttentionOnlyConfig(vocab_size=64)
    >>> config.n_layers, config.n_heads, config.d_model // config.n_heads
    (2, 2, 32)
    """

    vocab_size: int
    context_length: int = 48
    d_model: int = 64
    n_heads: int = 2
    n_layers: int = 2
    positions: str = "rope"

    def __post_init__(self) -> None:
        for name in ("vocab_size", "context_length", "d_model", "n_heads", "n_layers"):
            check_positive_int(name, getattr(self, name))
        _check_heads_and_positions(self.d_model, self.n_heads, self.positions)


class AttentionOnlyTransformer(nn.Module):
    """A Transformer made of attention layers only: the model of Elhage et al. (2021).

    ``x = E[tokens]`` (plus ``P[positions]`` with learned positions), then for each layer
    ``x = x + Attention(x)`` under a causal mask, then ``logits = x W_Uᵀ``. There is no
    feed-forward network and no layer norm, and the attention layers have no biases, so the
    logits are a sum of paths through the heads that can be read off the weights
    (:func:`ov_circuit`). Each layer is a
    :class:`~selfattn_lib.layers.MultiHeadAttention`, or with ``positions="rope"`` a
    :class:`~selfattn_lib.grouped_query.GroupedQueryAttention` that rotates its queries
    and keys. The embeddings start standard normal, the projections Xavier-uniform, and the
    unembedding (``unembedding``, not tied to the token embedding) as an ``nn.Linear``.

    ``ablate`` lists ``(layer, head)`` pairs to switch off (layers and heads counted from
    0): each such head's output is replaced by zeros (*zero ablation*). It is done with the
    course's own mask rule: the head gets a mask with nothing to attend to, so its weights
    (returned as zeros) and its output are zero, and nothing else changes. Zero rather than
    mean ablation because with no layer norm and no biases a head's output is one term of a
    sum: zero removes exactly that term and every path through it, whatever the batch. The
    cost: it also removes what the head writes whatever the tokens are (for example what it
    reads from the first token when nothing matches), which can raise the loss on its own: on
    chapter 14's model by up to about 1 bit per token on the first half (layer 1 head 0:
    7.07 bits switched off, 6.12 mean-ablated, 6.08 intact). Mean ablation (the head's output
    replaced by its mean over a batch, at each position) keeps that part, but depends on the
    batch and does nothing to a batch of one sequence.

    Shapes
    ------
    ``tokens``: ``(B, T)`` integer ids with ``T ≤ context_length`` (any ``T`` with rotary
    positions) → logits ``(B, T, V)``; with ``return_weights=True`` also a list with each
    layer's attention weights ``(B, H, T, T)``.

    Examples
    --------
    >>> model = AttentionOnlyTransformer(AttentionOnlyConfig(10, context_length=8, d_model=8,
    ...                                                      n_heads=2))
    >>> logits, weights = model(torch.tensor([[1, 2, 3]]), return_weights=True)
    >>> tuple(logits.shape), len(weights), tuple(weights[0].shape)
    ((1, 3, 10), 2, (1, 2, 3, 3))
    >>> _, weights = model(torch.tensor([[1, 2, 3]]), return_weights=True, ablate=[(1, 0)])
    >>> weights[1][0, 0].count_nonzero().item()  # head 0 of layer 1 is off
    0
    """

    def __init__(self, config: AttentionOnlyConfig) -> None:
        super().__init__()
        if not isinstance(config, AttentionOnlyConfig):
            raise TypeError(f"config must be an AttentionOnlyConfig, got {type(config).__name__}")
        self.config = config
        self.token_embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.position_embedding = (
            nn.Embedding(config.context_length, config.d_model)
            if config.positions == "learned"
            else None  # rotary positions act inside attention
        )
        self.layers = nn.ModuleList(
            MultiHeadAttention(config.d_model, config.n_heads, bias=False)
            if config.positions == "learned"
            else GroupedQueryAttention(
                config.d_model, config.n_heads, config.n_heads, rotary="half", bias=False
            )
            for _ in range(config.n_layers)
        )
        self.unembedding = nn.Linear(config.d_model, config.vocab_size, bias=False)

    def forward(
        self,
        tokens: Tensor,
        *,
        return_weights: bool = False,
        ablate: Iterable[tuple[int, int]] = (),
    ) -> Tensor | tuple[Tensor, list[Tensor]]:
        config = self.config
        tokens = _check_tokens(tokens, config.vocab_size)
        off = _check_ablate(ablate, config.n_layers, config.n_heads)
        n_tokens = tokens.shape[1]
        if n_tokens == 0:
            raise ValueError("tokens must hold at least one token per sequence, got shape (B, 0)")
        x = self.token_embedding(tokens)  # (B, T, D)
        if self.position_embedding is not None:
            if n_tokens > config.context_length:
                raise ValueError(
                    f"the model reads at most context_length = {config.context_length} "
                    f"tokens: tokens has shape {tuple(tokens.shape)}"
                )
            x = x + self.position_embedding.weight[:n_tokens]  # (B, T, D)
        causal = causal_mask_after(0, n_tokens, device=tokens.device)  # (T, T)
        all_weights = []
        for index, attention in enumerate(self.layers):
            mask = causal
            heads_off = sorted(head for layer, head in off if layer == index)
            if heads_off:
                mask = causal.expand(1, config.n_heads, n_tokens, n_tokens).clone()  # (1, H, T, T)
                mask[:, heads_off] = False  # nothing to attend to: zero weights, zero output
            attended, weights = attention(x, x, x, mask, True)  # (B, T, D), (B, H, T, T)
            x = x + attended  # (B, T, D)
            all_weights.append(weights)
        logits = self.unembedding(x)  # (B, T, V)
        return (logits, all_weights) if return_weights else logits


@dataclass
class InductionHistory(TrainingHistory):
    """What :func:`train_induction_model` measured: as a
    :class:`~selfattn_lib.training.TrainingHistory` (``losses``: the training loss of every
    step, in nats, over all predicted tokens), plus every step's half length ``n`` and the
    loss of its batch on the first half and on the repeated half, in bits (as
    :func:`in_context_loss` defines them).

    Shapes
    ------
    ``losses``, ``learning_rates``, ``first_half_bits`` and ``repeated_half_bits``: one float
    per step; ``half_lengths``: one int per step.

    Examples
    --------
    >>> history = InductionHistory(losses=[4.0], learning_rates=[1e-3], first_half_bits=[6.0],
    ...                            repeated_half_bits=[5.9])
    >>> history.steps, history.repeated_half_bits[-1]
    (1, 5.9)
    """

    half_lengths: list[int] = field(default_factory=list)
    first_half_bits: list[float] = field(default_factory=list)
    repeated_half_bits: list[float] = field(default_factory=list)


def train_induction_model(
    model: AttentionOnlyTransformer,
    *,
    steps: int,
    batch_size: int,
    half_length: int | tuple[int, int],
    generator: torch.Generator,
    learning_rate: float | Callable[[int], float] = 1e-3,
    weight_decay: float = 0.01,
    first_token: int | None = 0,
    distinct: bool = True,
    progress: bool = False,
) -> InductionHistory:
    """Train ``model`` to predict the next token of repeated random sequences, with AdamW.

    Every step draws a fresh batch of :func:`repeated_tokens` (``batch_size`` sequences, with
    ``generator``, ``first_token`` and ``distinct``), so the model (practically) never sees the same
    sequence twice: it can only lower its loss on the repeated half by reading the first
    half of the same sequence. ``half_length`` is the length ``n`` of each half, or a range
    ``(shortest, longest)``: every step then draws its ``n`` uniformly from that range (the
    sequences of one batch share it). A range is what makes the model learn induction.
    With one fixed ``n`` the token to predict is always ``n - 1`` positions before the
    query, and a head learns to attend there by position alone: its prefix-matching score
    is close to 1, but no previous-token head forms and nothing is matched (measured with
    both kinds of positions). When ``n`` changes from batch to batch, only the tokens can
    say where to look.

    The loss is the mean cross-entropy over every predicted token. ``learning_rate`` is a
    number or a function of the step (1, 2, …), e.g. a warm-up from
    :func:`~selfattn_lib.training.linear_warmup_decay`; weight decay acts on every parameter
    (all are matrices). With ``progress``, ten lines of progress are printed. The model is
    left in eval mode. The model's starting weights come from torch's global generator (seed
    it before building the model); the batches come from ``generator`` only.

    Shapes
    ------
    → an :class:`InductionHistory` with ``steps`` entries in each list; sequences of
    ``2 · n`` tokens, which must fit in the model's ``context_length`` (learned positions).

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> model = AttentionOnlyTransformer(AttentionOnlyConfig(8, context_length=8, d_model=8,
    ...                                                      n_heads=2))
    >>> history = train_induction_model(model, steps=20, batch_size=8, half_length=(2, 4),
    ...     generator=torch.Generator().manual_seed(0), learning_rate=1e-2)
    >>> history.steps, len(history.repeated_half_bits), set(history.half_lengths) <= {2, 3, 4}
    (20, 20, True)
    """
    if not isinstance(model, AttentionOnlyTransformer):
        raise TypeError(f"model must be an AttentionOnlyTransformer, got {type(model).__name__}")
    steps = check_positive_int("steps", steps)
    batch_size = check_positive_int("batch_size", batch_size)
    shortest, longest = _check_half_lengths(half_length, model.config)
    _check_generator(generator)
    if callable(learning_rate):
        schedule = learning_rate
    else:
        constant = check_positive_float(
            "learning_rate (a number or a function of the step)", learning_rate
        )

        def schedule(step: int) -> float:
            return constant

    if isinstance(weight_decay, bool) or not isinstance(weight_decay, numbers.Real):
        raise TypeError(f"weight_decay must be a real number ≥ 0, got {weight_decay!r}")
    if not (math.isfinite(weight_decay) and weight_decay >= 0):
        raise ValueError(f"weight_decay must be a finite number ≥ 0, got {weight_decay}")
    vocab_size = model.config.vocab_size
    _check_first_token(first_token, vocab_size)
    _check_distinct(distinct, longest, vocab_size, first_token)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=float(schedule(1)), weight_decay=weight_decay, betas=(0.9, 0.99)
    )
    history = InductionHistory()
    report_at = {math.ceil(steps * k / 10) for k in range(1, 11)}
    start = time.perf_counter()
    model.train()
    for step in range(1, steps + 1):
        rate = float(schedule(step))
        for group in optimizer.param_groups:
            group["lr"] = rate
        if shortest == longest:
            n = shortest
        else:
            n = int(torch.randint(shortest, longest + 1, (1,), generator=generator))
        tokens = repeated_tokens(
            batch_size,
            n,
            vocab_size,
            generator=generator,
            first_token=first_token,
            distinct=distinct,
        )  # (B, 2n)
        logits = model(tokens[:, :-1])  # (B, 2n - 1, V)
        losses = _token_losses(logits, tokens)  # (B, 2n - 1)
        loss = losses.mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        first_half, repeated_half = _half_means(losses.detach(), n)
        history.losses.append(loss.item())
        history.learning_rates.append(rate)
        history.half_lengths.append(n)
        history.first_half_bits.append(first_half / math.log(2))
        history.repeated_half_bits.append(repeated_half / math.log(2))
        history.seconds = time.perf_counter() - start
        if progress and step in report_at:
            _print_progress(history, steps, 1, 1)
    model.eval()
    return history


@torch.no_grad()
def in_context_loss(
    model: AttentionOnlyTransformer,
    tokens: Tensor,
    *,
    ablate: Iterable[tuple[int, int]] = (),
) -> tuple[float, float]:
    """The model's mean loss on the first half and on the repeated half of ``tokens``, in
    bits per token, with the heads in ``ablate`` switched off.

    With ``n = T / 2``: the first half is the predictions of tokens ``1 … n - 1`` (token 0
    has nothing before it), the repeated half the predictions of tokens ``n + 1 … 2n - 1``,
    each token of which follows a token that occurred before, ``n`` positions earlier. Token
    ``n``, the first of the copy, is left out of both: its predecessor is the last token of
    the first half, which had no successor yet. Both halves thus count ``n - 1`` predictions
    per sequence. On tokens drawn independently and uniformly, the first half costs at least
    ``log2`` of the number of possible tokens; drawn without repeats (the default of
    :func:`repeated_tokens`), a model that rules out the tokens already drawn pays less: 5.80
    bits instead of ``log2 63`` = 5.98 for halves of 16 tokens from ``V = 64`` after a fixed
    token 0. The difference between the two halves is the *in-context gain*.

    Shapes
    ------
    ``tokens``: ``(B, T)`` integer ids with ``T`` even and ``T ≥ 4``, normally from
    :func:`repeated_tokens` → two floats ``(first_half, repeated_half)``.

    Examples
    --------
    >>> model = AttentionOnlyTransformer(AttentionOnlyConfig(4, context_length=8, d_model=8,
    ...                                                      n_heads=2))
    >>> with torch.no_grad():
    ...     _ = model.unembedding.weight.zero_()  # every token equally likely
    >>> tokens = repeated_tokens(3, 4, 4, generator=torch.Generator().manual_seed(0))
    >>> [round(bits, 6) for bits in in_context_loss(model, tokens)]  # log2(4) on both halves
    [2.0, 2.0]
    """
    if not isinstance(model, AttentionOnlyTransformer):
        raise TypeError(f"model must be an AttentionOnlyTransformer, got {type(model).__name__}")
    tokens = _check_tokens(tokens, model.config.vocab_size)
    n_tokens = tokens.shape[1]
    if n_tokens % 2 or n_tokens < 4:
        raise ValueError(
            "tokens must have an even length T ≥ 4 (two halves of at least 2 tokens), got "
            f"shape {tuple(tokens.shape)}"
        )
    if tokens.shape[0] == 0:
        raise ValueError(f"tokens must hold at least one sequence, got shape {tuple(tokens.shape)}")
    was_training = model.training
    model.eval()
    logits = model(tokens[:, :-1], ablate=ablate)  # (B, T - 1, V)
    model.train(was_training)
    first_half, repeated_half = _half_means(_token_losses(logits, tokens), n_tokens // 2)
    return first_half / math.log(2), repeated_half / math.log(2)


def previous_token_scores(weights: Sequence[Tensor]) -> Tensor:
    """How much each head attends to the token just before the query: the mean weight of
    query ``i`` on key ``i - 1``, over the queries ``i = 1 … T - 1`` and the batch.

    A head that always attends to the previous token scores 1; a head that spreads its
    attention evenly over the ``i + 1`` tokens it can see scores the mean of ``1 / (i + 1)``.

    Shapes
    ------
    ``weights``: a list with one tensor ``(B, H, T, T)`` per layer, as the model returns
    them (``return_weights=True``), ``T ≥ 2`` → ``(L, H)``.

    Examples
    --------
    >>> previous = torch.eye(4).roll(-1, dims=1).tril()  # query i on key i - 1
    >>> previous[0, 0] = 1.0  # query 0 can only attend to itself
    >>> previous_token_scores([previous.expand(1, 2, 4, 4)])
    tensor([[1., 1.]])
    """
    stacked = _stack_weights(weights)  # (L, B, H, T, T)
    if stacked.shape[-1] < 2:
        raise ValueError(
            f"weights must cover T ≥ 2 tokens to have a previous token, got T = {stacked.shape[-1]}"
        )
    on_previous = stacked.diagonal(offset=-1, dim1=-2, dim2=-1)  # (L, B, H, T - 1)
    return on_previous.mean(dim=(1, 3))  # (L, H)


def prefix_matching_scores(weights: Sequence[Tensor], half_length: int) -> Tensor:
    """How much each head attends, on the repeated half, to the token just after the
    earlier occurrence of the query's token: Olsson et al.'s prefix-matching score.

    With ``n = half_length``, query ``i`` of the repeated half (``i = n … 2n - 1``) holds
    the token that was at ``i - n``; the token after that one is at ``i - n + 1``. The score
    is the mean weight of query ``i`` on key ``i - n + 1``, over those ``n`` queries and the
    batch. An induction head scores close to 1. A random token can also occur twice within
    the first half; the score still counts only the position ``i - n + 1``.

    Shapes
    ------
    ``weights``: a list with one tensor ``(B, H, T, T)`` per layer with ``T = 2 · n`` → ``(L, H)``.

    Examples
    --------
    >>> n = 3
    >>> induction = torch.zeros(2 * n, 2 * n)
    >>> for i in range(n, 2 * n):
    ...     induction[i, i - n + 1] = 1.0
    >>> prefix_matching_scores([induction.expand(1, 1, 6, 6)], half_length=n)
    tensor([[1.]])
    """
    stacked = _stack_weights(weights)  # (L, B, H, T, T)
    half_length = check_positive_int("half_length", half_length)
    n_tokens = stacked.shape[-1]
    if n_tokens != 2 * half_length:
        raise ValueError(
            f"weights must cover T = 2 · half_length = {2 * half_length} tokens, got T = "
            f"{n_tokens} (weights of shape {tuple(stacked.shape[1:])} per layer)"
        )
    on_next = stacked.diagonal(offset=-(half_length - 1), dim1=-2, dim2=-1)  # (L, B, H, n + 1)
    return on_next[..., 1:].mean(dim=(1, 3))  # (L, H): queries n … 2n - 1


def ov_circuit(model: AttentionOnlyTransformer, layer: int, head: int) -> Tensor:
    """One head's *OV circuit* through the embedding and the unembedding:
    ``W_E W_V^h W_O^h W_U`` (Elhage et al., 2021).

    Row ``s``, column ``t`` is how much the head, if it put all its attention on a token
    ``s``, would raise the logit of token ``t``, counting only the path
    embedding → this head → unembedding (the token's own embedding, not its position, and
    not what earlier layers added to it). With ``nn.Linear``'s convention, ``W_V^h`` is the
    transpose of rows ``h · D_h … (h + 1) · D_h - 1`` of ``w_v.weight`` and ``W_O^h`` the
    transpose of the same columns of ``w_o.weight``. Computed in float64.

    Shapes
    ------
    → ``(V, V)``, of rank at most ``D_h``.

    Examples
    --------
    >>> model = AttentionOnlyTransformer(AttentionOnlyConfig(5, context_length=4, d_model=8,
    ...                                                      n_heads=2))
    >>> tuple(ov_circuit(model, layer=1, head=0).shape)
    (5, 5)
    """
    left, right = _ov_factors(model, layer, head)  # (V, D_h), (D_h, V)
    return left @ right  # (V, V)


def copying_scores(model: AttentionOnlyTransformer) -> Tensor:
    """How much each head copies: a summary of the eigenvalues ``λ`` of its OV circuit
    (:func:`ov_circuit`), ``Σ λ / Σ |λ|`` (Elhage et al., 2021).

    A pure copy (a positive multiple of the identity) scores 1, a pure suppression (a
    negative multiple) -1. It is a heuristic, wrong both ways: every circuit whose non-zero
    eigenvalues are real and positive scores exactly 1, a head that always raises the same
    token ``k`` (the circuit ``1 e_kᵀ``) or ``I`` plus any strictly triangular matrix
    included; and off-diagonal entries can make eigenvalues complex, so a circuit whose
    every row has its largest entry on the diagonal can score far below 1 (``[[1, a, -a],
    [-a, 1, a], [a, -a, 1]]`` with ``a = 0.99``: 0.60). To see whether a head copies, look at
    the diagonal itself, e.g. how often a row's largest entry is its own token. The
    eigenvalues of a real matrix come in conjugate pairs, so ``Σ λ`` (the trace) is real;
    ``|λ|`` is the modulus. An all-zero circuit scores 0. The ``V × V`` circuit has rank at
    most ``D_h``: its non-zero eigenvalues are those of the ``D_h × D_h`` product of its two
    factors in the other order, which is what is computed (in float64).

    Limits: the circuit is the direct path from a token's embedding to the logits. It leaves
    out the position embedding, and for a head of the second layer what the first layer
    wrote into the residual stream (the paths through two heads), which is how an induction
    head finds its key but not what it copies. A model with layer norm would divide by a
    norm that this ignores (this model has none). And the score summarises a whole matrix
    in one number: a head can score high and still copy only some tokens well.

    Shapes
    ------
    → ``(L, H)`` float64 scores in ``[-1, 1]``.

    Examples
    --------
    >>> model = AttentionOnlyTransformer(AttentionOnlyConfig(5, context_length=4, d_model=8,
    ...                                                      n_heads=2))
    >>> scores = copying_scores(model)
    >>> tuple(scores.shape), bool((scores.abs() <= 1).all())
    ((2, 2), True)
    """
    if not isinstance(model, AttentionOnlyTransformer):
        raise TypeError(f"model must be an AttentionOnlyTransformer, got {type(model).__name__}")
    config = model.config
    scores = torch.zeros(config.n_layers, config.n_heads, dtype=torch.float64)  # (L, H)
    for layer in range(config.n_layers):
        for head in range(config.n_heads):
            scores[layer, head] = _copying_score(*_ov_factors(model, layer, head))
    return scores


def _copying_score(left: Tensor, right: Tensor) -> float:
    """``Σ λ / Σ |λ|`` over the eigenvalues ``λ`` of the circuit ``left @ right``
    ``(V, V)``, from the ``D_h × D_h`` product ``right @ left``, which has the same non-zero
    eigenvalues; 0 for an all-zero circuit. ``left``: ``(V, D_h)``, ``right``: ``(D_h, V)``."""
    eigenvalues = torch.linalg.eigvals(right @ left)  # (D_h,) complex
    total = eigenvalues.abs().sum()
    return (eigenvalues.sum().real / total).item() if total > 0 else 0.0


def _ov_factors(model: object, layer: object, head: object) -> tuple[Tensor, Tensor]:
    """``W_E W_V^h`` ``(V, D_h)`` and ``W_O^h W_U`` ``(D_h, V)`` in float64."""
    if not isinstance(model, AttentionOnlyTransformer):
        raise TypeError(f"model must be an AttentionOnlyTransformer, got {type(model).__name__}")
    config = model.config
    ((layer, head),) = _check_ablate(
        [(layer, head)], config.n_layers, config.n_heads, label="layer and head"
    )
    attention = model.layers[layer]
    d_head = config.d_model // config.n_heads
    rows = slice(head * d_head, (head + 1) * d_head)
    with torch.no_grad():
        w_e = model.token_embedding.weight.double()  # (V, D)
        w_v = attention.w_v.weight[rows].double()  # (D_h, D): v = x @ w_v.T
        w_o = attention.w_o.weight[:, rows].double()  # (D, D_h): out = v @ w_o.T
        w_u = model.unembedding.weight.double()  # (V, D): logits = out @ w_u.T
        return w_e @ w_v.T, w_o.T @ w_u.T  # (V, D_h), (D_h, V)


def _token_losses(logits: Tensor, tokens: Tensor) -> Tensor:
    """Cross-entropy (nats) of each prediction: logits ``(B, T - 1, V)`` of tokens ``(B, T)``
    → ``(B, T - 1)``, entry ``j`` the loss on token ``j + 1``."""
    losses = F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten(), reduction="none")
    return losses.view(tokens.shape[0], -1)  # (B, T - 1)


def _half_means(losses: Tensor, half_length: int) -> tuple[float, float]:
    """Mean loss on tokens ``1 … n - 1`` and on tokens ``n + 1 … 2n - 1``."""
    first_half = losses[:, : half_length - 1]  # (B, n - 1): tokens 1 … n - 1
    repeated_half = losses[:, half_length:]  # (B, n - 1): tokens n + 1 … 2n - 1
    return first_half.mean().item(), repeated_half.mean().item()


def _check_first_token(first_token: object, vocab_size: int) -> None:
    if first_token is None:
        return
    if isinstance(first_token, bool) or not isinstance(first_token, numbers.Integral):
        raise TypeError(f"first_token must be a token id or None, got {first_token!r}")
    if not 0 <= first_token < vocab_size:
        raise ValueError(
            f"first_token must be an id in 0 … {vocab_size - 1} (vocab_size = {vocab_size}), "
            f"got {first_token}"
        )
    if vocab_size < 2:
        raise ValueError("vocab_size must be at least 2 with a first_token (one id is taken)")


def _check_distinct(
    distinct: object, half_length: int, vocab_size: int, first_token: int | None
) -> bool:
    """``distinct`` as a bool, after checking that the pool holds enough ids for a half."""
    if not isinstance(distinct, bool):
        raise TypeError(f"distinct must be True or False, got {distinct!r}")
    drawn = half_length if first_token is None else half_length - 1
    pool = vocab_size if first_token is None else vocab_size - 1
    if distinct and drawn > pool:
        raise ValueError(
            f"half_length = {half_length} needs {drawn} different random ids, but "
            f"vocab_size = {vocab_size} leaves {pool}"
            + ("" if first_token is None else f" besides first_token = {first_token}")
            + ": use a shorter half, a larger vocabulary or distinct=False"
        )
    return distinct


def _check_half_lengths(half_length: object, config: AttentionOnlyConfig) -> tuple[int, int]:
    """``half_length`` (an int or a pair ``(shortest, longest)``) as ``(shortest, longest)``."""
    if isinstance(half_length, tuple | list):
        if len(half_length) != 2:
            raise TypeError(
                f"half_length must be a whole number or a pair (shortest, longest), got "
                f"{half_length!r}"
            )
        shortest = check_positive_int("half_length (shortest)", half_length[0])
        longest = check_positive_int("half_length (longest)", half_length[1])
        if shortest > longest:
            raise ValueError(
                f"half_length must be a range (shortest, longest) with shortest ≤ longest, "
                f"got {tuple(half_length)}"
            )
    else:
        shortest = longest = check_positive_int("half_length", half_length)
    if shortest < 2:
        raise ValueError(
            "half_length must be at least 2 (each half needs a token to predict), "
            f"got {half_length!r}"
        )
    if config.positions == "learned" and 2 * longest > config.context_length:
        raise ValueError(
            f"half_length = {half_length!r} makes sequences of up to {2 * longest} tokens, "
            f"longer than the model's context_length = {config.context_length}"
        )
    return shortest, longest


def _check_ablate(
    ablate: object, n_layers: int, n_heads: int, *, label: str = "ablate"
) -> list[tuple[int, int]]:
    """``ablate`` as a list of ``(layer, head)`` pairs of ints within range."""
    if isinstance(ablate, (str, bytes)) or not isinstance(ablate, Iterable):
        raise TypeError(f"{label} must be (layer, head) pairs of whole numbers, got {ablate!r}")
    pairs = []
    for pair in ablate:
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise TypeError(f"{label} must be (layer, head) pairs of whole numbers, got {pair!r}")
        for name, value, size in zip(("layer", "head"), pair, (n_layers, n_heads), strict=True):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise TypeError(f"{label}: {name} must be a whole number, got {value!r}")
            if not 0 <= value < size:
                raise ValueError(
                    f"{label}: {name} must be in 0 … {size - 1} (the model has {n_layers} "
                    f"layers of {n_heads} heads), got {value}"
                )
        pairs.append((int(pair[0]), int(pair[1])))
    return pairs


def _stack_weights(weights: object) -> Tensor:
    """A list of per-layer weights ``(B, H, T, T)`` → one tensor ``(L, B, H, T, T)``."""
    if isinstance(weights, Tensor) or not isinstance(weights, Sequence):
        raise TypeError(
            "weights must be a list with one tensor (B, H, T, T) per layer (as the model "
            f"returns with return_weights=True), got {type(weights).__name__}"
        )
    if not weights:
        raise ValueError("weights must hold at least one layer's weights, got an empty list")
    for index, layer_weights in enumerate(weights):
        if not isinstance(layer_weights, Tensor) or not layer_weights.is_floating_point():
            raise TypeError(
                f"weights[{index}] must be a floating-point tensor (B, H, T, T), got "
                f"{getattr(layer_weights, 'dtype', type(layer_weights).__name__)}"
            )
        if layer_weights.ndim != 4 or layer_weights.shape[-1] != layer_weights.shape[-2]:
            raise ValueError(
                f"weights[{index}] must have shape (B, H, T, T), got {tuple(layer_weights.shape)}"
            )
    shapes = {tuple(layer_weights.shape) for layer_weights in weights}
    if len(shapes) > 1:
        raise ValueError(f"every layer's weights must have the same shape, got {sorted(shapes)}")
    return torch.stack([layer_weights.detach() for layer_weights in weights])  # (L, B, H, T, T)
