"""A small GPT: a decoder-only language model built from the course's layers (chapter 12).

Take chapter 10's decoder and remove its cross-attention: what is left, masked
self-attention and a feed-forward network, is an :class:`~selfattn_lib.layers.EncoderLayer`
under a causal mask. A GPT is a stack of such layers (pre-norm, with a final layer norm, as
in GPT-2) between a token embedding plus a learned position embedding and an output
projection that reuses the token embedding matrix (weight tying). It is trained to predict
every next token of a text at once, and it writes text one token at a time
(:func:`generate`), optionally with a KV cache (:class:`KVCache`, one
:class:`~selfattn_lib.layers.LayerCache` per layer) so that each step projects only the
newest token.

Chapter 13 gives the model the options of today's language models, each off by default
(the default model is chapter 12's, parameter for parameter): rotary position embeddings
instead of the learned ones (``positions="rope"``, :mod:`selfattn_lib.rotary`), fewer key and
value heads than query heads (``n_kv_heads``, :mod:`selfattn_lib.grouped_query`), and a
sliding window with attention sinks (``window``, ``n_sinks``,
:mod:`selfattn_lib.sliding_window`), whose cache stops growing.

- :class:`GPTConfig` and :class:`GPT` — the model;
- :func:`causal_mask_after` — the causal mask of new tokens that follow ``t`` cached ones;
- :func:`train_language_model` — next-token training on random windows of a text;
- :func:`bits_per_token` — the validation loss in bits;
- :func:`generate` — greedy decoding or sampling (:mod:`selfattn_lib.sampling`), with or
  without the cache.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from selfattn_lib._validation import check_positive_int, check_probability
from selfattn_lib.grouped_query import GroupedQueryAttention
from selfattn_lib.layers import Encoder, LayerCache, _check_activation
from selfattn_lib.sampling import greedy_token, next_token_probabilities, sample_token
from selfattn_lib.sliding_window import WindowCache, window_mask
from selfattn_lib.training import TrainingHistory, _check_generator, _print_progress

#: How a :class:`GPT` knows where each token is: a learned position embedding added to the
#: token embeddings (GPT-2), or rotary embeddings applied to the queries and keys (RoPE).
POSITIONS = ("learned", "rope")


@dataclass(frozen=True)
class GPTConfig:
    """The sizes and options of a :class:`GPT`.

    ``context_length`` is the longest sequence the model reads with learned positions (its
    position embedding has one row per position); with ``positions="rope"`` there is no such
    table and it is only the length of the training windows. ``d_ff`` is the feed-forward
    network's width. The options of chapter 13, all off by default:

    - ``positions``: ``"learned"`` (GPT-2) or ``"rope"`` (rotary embeddings in every layer,
      ``"half"`` layout, which needs an even ``D_h``);
    - ``n_kv_heads``: the number of key/value heads ``H_kv``, a divisor of ``n_heads``
      (``None``: as many as query heads; 1: multi-query attention);
    - ``window``: sliding-window attention, a query sees itself and the ``window - 1``
      tokens before it (``None``: every earlier token);
    - ``n_sinks``: with a window, the first ``n_sinks`` tokens stay visible to every later
      query (attention sinks).

    Two details of GPT-2, which chapter 12 measures:

    - ``gpt2_init`` (on by default): GPT-2's starting weights, every weight matrix drawn from
      ``N(0, 0.02²)`` and those that write into the residual stream (each layer's ``W_O`` and
      ``W_2``) from ``N(0, (0.02 / √(2L))²)``, biases zero. Off, the layers start as they do
      alone: Xavier-uniform attention projections and PyTorch's default for ``nn.Linear``.
      The embeddings start at ``N(0, 0.02²)`` either way;
    - ``activation``: the feed-forward network's ``"relu"`` (the default, the paper's) or
      ``"gelu"`` (GPT-2's, here in its exact form; GPT-2's code uses a tanh approximation).

    Shapes
    ------
    Not an array: the model has embeddings ``(V, D)`` and, with learned positions,
    ``(context_length, D)``, and ``n_layers`` layers of ``H`` query heads and ``H_kv``
    key/value heads of ``D_h = D / H``.

    Examples
    --------
    >>> GPTConfig(vocab_size=100).d_model
    64
    >>> GPTConfig(vocab_size=100, positions="rope", n_kv_heads=1, window=16, n_sinks=4).window
    16
    """

    vocab_size: int
    context_length: int = 128
    d_model: int = 64
    n_heads: int = 4
    d_ff: int = 256
    n_layers: int = 2
    dropout: float = 0.0
    positions: str = "learned"
    n_kv_heads: int | None = None
    window: int | None = None
    n_sinks: int = 0
    activation: str = "relu"
    gpt2_init: bool = True

    def __post_init__(self) -> None:
        for name in ("vocab_size", "context_length", "d_model", "n_heads", "d_ff", "n_layers"):
            check_positive_int(name, getattr(self, name))
        check_probability("dropout", self.dropout)
        _check_activation(self.activation)
        if not isinstance(self.gpt2_init, bool):
            raise TypeError(f"gpt2_init must be True or False, got {self.gpt2_init!r}")
        _check_heads_and_positions(self.d_model, self.n_heads, self.positions)
        if self.n_kv_heads is not None:
            check_positive_int("n_kv_heads", self.n_kv_heads)
            if self.n_heads % self.n_kv_heads:
                raise ValueError(
                    f"n_kv_heads must divide n_heads: n_heads = {self.n_heads}, "
                    f"n_kv_heads = {self.n_kv_heads}"
                )
        if self.window is not None:
            check_positive_int("window", self.window)
        if isinstance(self.n_sinks, bool) or not isinstance(self.n_sinks, numbers.Integral):
            raise TypeError(f"n_sinks must be a whole number ≥ 0, got {self.n_sinks!r}")
        if self.n_sinks < 0:
            raise ValueError(f"n_sinks must be a whole number ≥ 0, got {self.n_sinks}")
        if self.n_sinks and self.window is None:
            raise ValueError(
                f"n_sinks = {self.n_sinks} needs a window: attention sinks stay visible when "
                "a sliding window has passed them (set window)"
            )


class KVCache:
    """One :class:`~selfattn_lib.layers.LayerCache` per layer of a :class:`GPT`; with a
    ``window``, one :class:`~selfattn_lib.sliding_window.WindowCache` per layer.

    Shapes
    ------
    Each layer's keys and values: ``(B, H_kv, t, D_h)`` after ``t`` tokens; in all
    ``2 · L · B · t · H_kv · D_h`` numbers (``2 · L · B · t · D`` when ``H_kv = H``). With a
    window, at most ``n_sinks + window - 1`` tokens are held instead of ``t``.

    Examples
    --------
    >>> cache = KVCache(n_layers=2)
    >>> cache.length, cache.nbytes
    (0, 0)
    >>> type(KVCache(n_layers=2, window=8, n_sinks=1).layers[0]).__name__
    'WindowCache'
    """

    def __init__(self, n_layers: int, *, window: int | None = None, n_sinks: int = 0) -> None:
        n_layers = check_positive_int("n_layers", n_layers)
        if window is not None:
            self.layers = [WindowCache(window, n_sinks=n_sinks) for _ in range(n_layers)]
            self.window, self.n_sinks = self.layers[0].window, self.layers[0].n_sinks
            return
        if isinstance(n_sinks, bool) or not isinstance(n_sinks, numbers.Integral):
            raise TypeError(f"n_sinks must be a whole number ≥ 0, got {n_sinks!r}")
        if n_sinks != 0:
            raise ValueError(f"n_sinks = {n_sinks} needs a window (set window)")
        self.layers = [LayerCache() for _ in range(n_layers)]
        self.window, self.n_sinks = None, 0

    @property
    def length(self) -> int:
        """How many tokens the cache has seen: the position of the next token (a window cache
        holds fewer)."""
        return self.layers[0].length

    @property
    def nbytes(self) -> int:
        """The memory of every layer's cached keys and values, in bytes."""
        return sum(layer.nbytes for layer in self.layers)


class GPT(nn.Module):
    """A decoder-only Transformer language model in the style of GPT-2.

    ``logits = LN(layers(E[tokens] + P[positions])) Eᵀ``: token embeddings ``E`` plus learned
    position embeddings ``P`` (both drawn with standard deviation 0.02, as in nanoGPT and
    Hugging Face's GPT-2; OpenAI's released GPT-2 code draws ``P`` with 0.01), then dropout,
    ``n_layers`` pre-norm :class:`~selfattn_lib.layers.EncoderLayer` under a causal mask, a
    final layer norm, and the output projection, which is the token embedding
    matrix itself (``output.weight is token_embedding.weight``). The layers start from
    GPT-2's weights unless ``config.gpt2_init`` is off. The attention weights are computed
    only when asked for (``return_weights=True``); otherwise every layer runs PyTorch's fused
    attention, which is what makes training fast.

    With a ``cache`` (:meth:`new_cache`), the tokens given are taken to follow the ones the
    cache holds: their positions start at ``cache.length``, their queries attend to the cached
    keys as well, and their keys and values are appended to the cache.

    The options of :class:`GPTConfig`: with ``positions="rope"`` there is no position
    embedding (``position_embedding is None``) and every layer's ``self_attention`` is a
    :class:`~selfattn_lib.grouped_query.GroupedQueryAttention` that rotates its queries and
    keys; the model then reads sequences of any length. With ``n_kv_heads`` other than
    ``n_heads`` the layers' ``self_attention`` is a ``GroupedQueryAttention`` too. With a
    ``window``, the causal mask becomes
    :func:`~selfattn_lib.sliding_window.window_mask` (with ``n_sinks`` sinks) and the
    cache's layers are :class:`~selfattn_lib.sliding_window.WindowCache`.

    Shapes
    ------
    ``tokens``: ``(B, T)`` integer ids → logits ``(B, T, V)``; with ``return_weights=True``
    also a list with each layer's self-attention weights ``(B, H, T, T_k)``: ``T_k = t + T``
    with ``t`` cached tokens, fewer with a window cache.

    Examples
    --------
    >>> model = GPT(GPTConfig(vocab_size=10, context_length=8, d_model=8, n_heads=2, d_ff=16))
    >>> tuple(model(torch.tensor([[1, 2, 3]])).shape)
    (1, 3, 10)
    """

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        if not isinstance(config, GPTConfig):
            raise TypeError(f"config must be a GPTConfig, got {type(config).__name__}")
        self.config = config
        self.token_embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.position_embedding = (
            nn.Embedding(config.context_length, config.d_model)
            if config.positions == "learned"
            else None  # rotary positions act inside attention
        )
        for embedding in (self.token_embedding, self.position_embedding):
            if embedding is not None:
                nn.init.normal_(embedding.weight, std=0.02)
        self.dropout = nn.Dropout(config.dropout)
        self.blocks = Encoder(
            config.d_model,
            config.n_heads,
            config.d_ff,
            config.n_layers,
            dropout=config.dropout,
            norm_first=True,  # with the final layer norm self.blocks.norm
            activation=config.activation,
        )
        n_kv_heads = config.n_heads if config.n_kv_heads is None else config.n_kv_heads
        if config.positions == "rope" or n_kv_heads != config.n_heads:
            for layer in self.blocks.layers:
                layer.self_attention = GroupedQueryAttention(
                    config.d_model,
                    config.n_heads,
                    n_kv_heads,
                    rotary="half" if config.positions == "rope" else None,
                    dropout=config.dropout,
                )
        self.output = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.output.weight = self.token_embedding.weight  # tied
        if config.gpt2_init:
            _gpt2_init(self.blocks.layers)

    def new_cache(self) -> KVCache:
        """An empty KV cache for this model.

        Shapes
        ------
        One :class:`~selfattn_lib.layers.LayerCache` per layer, or with a window one
        :class:`~selfattn_lib.sliding_window.WindowCache`.
        """
        config = self.config
        return KVCache(config.n_layers, window=config.window, n_sinks=config.n_sinks)

    def forward(
        self, tokens: Tensor, *, cache: KVCache | None = None, return_weights: bool = False
    ) -> Tensor | tuple[Tensor, list[Tensor]]:
        tokens = _check_tokens(tokens, self.config.vocab_size)
        start = 0 if cache is None else _check_model_cache(cache, self.config).length
        n_new = tokens.shape[1]
        if self.position_embedding is None:  # rotary positions: applied in every layer
            x = self.token_embedding(tokens)  # (B, T, D)
        else:
            if start + n_new > self.config.context_length:
                raise ValueError(
                    f"the model reads at most context_length = {self.config.context_length} "
                    f"tokens: got {n_new} new tokens after {start} cached ones"
                )
            positions = torch.arange(start, start + n_new, device=tokens.device)  # (T,)
            x = self.token_embedding(tokens) + self.position_embedding(positions)  # (B, T, D)
        x = self.dropout(x)
        mask = self._mask(start, n_new, cache, tokens.device)  # (T, T_k)
        layer_caches = [None] * self.config.n_layers if cache is None else cache.layers
        all_weights = []
        for layer, layer_cache in zip(self.blocks.layers, layer_caches, strict=True):
            if return_weights:
                x, weights = layer(x, mask, return_weights=True, cache=layer_cache)  # (B, T, D)
                all_weights.append(weights)
            else:
                x = layer(x, mask, cache=layer_cache)  # (B, T, D)
        logits = self.output(self.blocks.norm(x))  # (B, T, V)
        return (logits, all_weights) if return_weights else logits

    def _mask(self, start: int, n_new: int, cache: KVCache | None, device: torch.device) -> Tensor:
        """The mask of ``n_new`` tokens at positions ``start, …`` over the keys they see:
        causal, or with a window :func:`~selfattn_lib.sliding_window.window_mask` over the
        positions of the keys the (window) cache will return."""
        if self.config.window is None:
            return causal_mask_after(start, n_new, device=device)  # (T, t + T)
        query_positions = torch.arange(start, start + n_new, device=device)  # (T,)
        if cache is None:
            key_positions = query_positions  # (T,)
        else:
            key_positions = cache.layers[0].key_positions(n_new)  # (n_held + T,)
        config = self.config
        return window_mask(query_positions, key_positions, config.window, n_sinks=config.n_sinks)


def _gpt2_init(layers: nn.ModuleList) -> None:
    """GPT-2's starting weights for the layers (the embeddings already start as in GPT-2):
    every weight matrix from ``N(0, 0.02²)``, the residual-writing ``W_O`` and ``W_2`` with the
    standard deviation divided by ``√(2L)``, one factor for each of the ``2L`` sublayers whose
    outputs add up in the residual stream; every bias zero."""
    residual_std = 0.02 / math.sqrt(2 * len(layers))
    for layer in layers:
        for module in layer.modules():
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, std=0.02)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
        for writer in (layer.self_attention.w_o, layer.feed_forward.w_2):
            nn.init.normal_(writer.weight, std=residual_std)


def causal_mask_after(n_cached: int, n_new: int, *, device: torch.device | None = None) -> Tensor:
    """The causal mask of ``n_new`` tokens that follow ``n_cached`` earlier ones: new token
    ``i`` (at position ``n_cached + i``) may attend to every key at a position up to its own.

    Shapes
    ------
    → boolean ``(n_new, n_cached + n_new)``; ``n_cached = 0`` gives the square causal mask.

    Examples
    --------
    >>> causal_mask_after(2, 2).int()
    tensor([[1, 1, 1, 0],
            [1, 1, 1, 1]], dtype=torch.int32)
    """
    if isinstance(n_cached, bool) or not isinstance(n_cached, int):
        raise TypeError(f"n_cached must be a whole number ≥ 0, got {n_cached!r}")
    if n_cached < 0:
        raise ValueError(f"n_cached must be a whole number ≥ 0, got {n_cached}")
    n_new = check_positive_int("n_new", n_new)
    full = torch.ones(n_new, n_cached + n_new, dtype=torch.bool, device=device)
    return full.tril(diagonal=n_cached)  # (T, t + T)


def train_language_model(
    model: GPT,
    ids: Tensor | np.ndarray,
    *,
    steps: int,
    batch_size: int,
    generator: torch.Generator,
    learning_rate: float | Callable[[int], float] = 3e-3,
    weight_decay: float = 0.01,
    progress: bool = False,
) -> TrainingHistory:
    """Train ``model`` to predict every next token of ``ids`` with AdamW.

    Each step draws ``batch_size`` windows of ``context_length + 1`` consecutive tokens at
    random positions (with ``generator``); the model reads the first ``context_length`` and
    the loss is the mean cross-entropy against the same window shifted by one. Weight decay
    acts on the parameters with two dimensions (weight matrices and embeddings), not on
    biases and layer norms, as in nanoGPT. ``learning_rate`` is a number or a function of the
    step (1, 2, …). With ``progress``, ten lines of progress are printed. The model is left in
    eval mode.

    Shapes
    ------
    ``ids``: ``(N,)`` token ids with ``N > context_length`` → a
    :class:`~selfattn_lib.training.TrainingHistory` with ``steps`` losses (in nats).

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> model = GPT(GPTConfig(vocab_size=3, context_length=4, d_model=8, n_heads=2, d_ff=16))
    >>> history = train_language_model(model, torch.tensor([0, 1, 2] * 10), steps=30,
    ...     batch_size=4, generator=torch.Generator().manual_seed(0), learning_rate=1e-2)
    >>> history.losses[-1] < history.losses[0]
    True
    """
    if not isinstance(model, GPT):
        raise TypeError(f"model must be a GPT, got {type(model).__name__}")
    context = model.config.context_length
    ids = _check_tokens(ids, model.config.vocab_size, name="ids", layout="(N,)", ndim=1)
    if ids.shape[0] <= context:
        raise ValueError(
            f"ids must hold more than context_length = {context} tokens, got {ids.shape[0]}"
        )
    steps = check_positive_int("steps", steps)
    batch_size = check_positive_int("batch_size", batch_size)
    _check_generator(generator)
    schedule = learning_rate if callable(learning_rate) else (lambda step: learning_rate)
    decayed = [p for p in model.parameters() if p.ndim == 2]
    others = [p for p in model.parameters() if p.ndim != 2]
    optimizer = torch.optim.AdamW(
        [{"params": decayed, "weight_decay": weight_decay}, {"params": others, "weight_decay": 0}],
        lr=float(schedule(1)),
        betas=(0.9, 0.99),
    )
    offsets = torch.arange(context + 1)  # (T + 1,)
    history = TrainingHistory()
    report_at = {math.ceil(steps * k / 10) for k in range(1, 11)}
    start = time.perf_counter()
    model.train()
    for step in range(1, steps + 1):
        rate = float(schedule(step))
        for group in optimizer.param_groups:
            group["lr"] = rate
        starts = torch.randint(ids.shape[0] - context, (batch_size, 1), generator=generator)
        windows = ids[starts + offsets]  # (B, T + 1)
        logits = model(windows[:, :-1])  # (B, T, V)
        loss = F.cross_entropy(logits.flatten(0, 1), windows[:, 1:].flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        history.losses.append(loss.item())
        history.learning_rates.append(rate)
        history.seconds = time.perf_counter() - start
        if progress and step in report_at:
            _print_progress(history, steps, 1, 1)
    model.eval()
    return history


@torch.no_grad()
def bits_per_token(model: GPT, ids: Tensor | np.ndarray, *, batch_size: int = 64) -> float:
    """The model's mean cross-entropy on ``ids``, in bits per token.

    The tokens are cut into consecutive windows of ``context_length + 1`` that overlap by one
    token, so that every token but the first is predicted exactly once; a token at the start
    of a window is predicted from less context than a running model would have, which makes
    the number slightly pessimistic. A left-over shorter window at the end is scored too.

    Shapes
    ------
    ``ids``: ``(N,)`` with ``N ≥ 2`` → one float: the mean over ``N - 1`` predictions.

    Examples
    --------
    >>> model = GPT(GPTConfig(vocab_size=4, context_length=4, d_model=8, n_heads=2, d_ff=8))
    >>> with torch.no_grad():
    ...     _ = model.output.weight.zero_()  # every token equally likely
    >>> round(bits_per_token(model, torch.tensor([0, 1, 2, 3, 0, 1, 2])), 6)
    2.0
    """
    if not isinstance(model, GPT):
        raise TypeError(f"model must be a GPT, got {type(model).__name__}")
    ids = _check_tokens(ids, model.config.vocab_size, name="ids", layout="(N,)", ndim=1)
    if ids.shape[0] < 2:
        raise ValueError(f"ids must hold at least 2 tokens, got {ids.shape[0]}")
    batch_size = check_positive_int("batch_size", batch_size)
    context = model.config.context_length
    n_full = (ids.shape[0] - 1) // context
    total = 0.0
    was_training = model.training
    model.eval()
    if n_full:
        windows = ids[: n_full * context + 1].unfold(0, context + 1, context)  # (n, T + 1)
    for first in range(0, n_full, batch_size):
        batch = windows[first : first + batch_size]  # (B, T + 1)
        logits = model(batch[:, :-1])  # (B, T, V)
        total += F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten(), reduction="sum")
    rest = ids[n_full * context :]  # (r,) with 1 ≤ r ≤ T
    if rest.shape[0] > 1:
        logits = model(rest[None, :-1])  # (1, r - 1, V)
        total += F.cross_entropy(logits[0], rest[1:], reduction="sum")
    model.train(was_training)
    return float(total) / (ids.shape[0] - 1) / math.log(2)


@torch.no_grad()
def generate(
    model: GPT,
    prompt: Tensor | np.ndarray | list[int],
    n_new_tokens: int,
    *,
    rng: np.random.Generator | None = None,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    greedy: bool = False,
    use_cache: bool = True,
) -> np.ndarray:
    """Continue ``prompt`` by ``n_new_tokens`` tokens, one at a time.

    Each step turns the logits of the last position into a distribution with
    :func:`~selfattn_lib.sampling.next_token_probabilities` (temperature, then top-k, then
    top-p) and draws the next token from it with ``rng``, or takes the most likely token
    when ``greedy``. Without the cache, every step runs the model over the whole sequence
    so far; with it (``use_cache=True``), the first step reads the prompt and every later
    step reads only the newest token. Both give the same tokens up to rounding: the two
    compute the same numbers in a different order, so a near-tie can in rare cases go the
    other way. With learned positions, once the text is longer than the model's
    ``context_length``, every step reads only its last ``context_length`` tokens, as
    nanoGPT does, without the cache: cached keys were computed at positions the tokens no
    longer have. With rotary ones the model reads the whole text, cache or not.

    Shapes
    ------
    ``prompt``: ``(T_p,)`` token ids with ``1 ≤ T_p ≤ context_length`` (any length with
    rotary positions) → ``(T_p + n_new_tokens,)`` ids, the prompt first.

    Examples
    --------
    >>> model = GPT(GPTConfig(vocab_size=5, context_length=8, d_model=8, n_heads=2, d_ff=8))
    >>> generate(model, [1, 2], 3, greedy=True).shape
    (5,)
    """
    if not isinstance(model, GPT):
        raise TypeError(f"model must be a GPT, got {type(model).__name__}")
    tokens = _check_tokens(prompt, model.config.vocab_size, name="prompt", layout="(T_p,)", ndim=1)
    if tokens.shape[0] == 0:
        raise ValueError("prompt must hold at least one token")
    n_new_tokens = check_positive_int("n_new_tokens", n_new_tokens)
    context = model.config.context_length
    learned = model.position_embedding is not None
    if learned and tokens.shape[0] > context:
        raise ValueError(
            f"prompt ({tokens.shape[0]} tokens) exceeds the model's context_length = {context}"
        )
    if not greedy and not isinstance(rng, np.random.Generator):
        raise TypeError(
            "sampling needs rng, a NumPy Generator (np.random.default_rng(seed)); "
            f"got {type(rng).__name__} (or pass greedy=True)"
        )
    was_training = model.training
    model.eval()
    cache = model.new_cache() if use_cache else None
    written = tokens.tolist()
    step_input = tokens[None]  # (1, T_p)
    for _ in range(n_new_tokens):
        if learned and len(written) > context:  # the window slides: the last T tokens only
            cache, step_input = None, torch.tensor([written[-context:]])  # (1, T)
        logits = model(step_input, cache=cache)[0, -1].double().numpy()  # (V,)
        if greedy:
            token = int(greedy_token(logits))
        else:
            probabilities = next_token_probabilities(
                logits, temperature=temperature, top_k=top_k, top_p=top_p
            )
            token = int(sample_token(probabilities, rng))
        written.append(token)
        step_input = (
            torch.tensor([[token]]) if cache is not None else torch.tensor([written])
        )  # (1, 1) or (1, t)
    model.train(was_training)
    return np.array(written, dtype=np.int64)


def _check_tokens(
    tokens: object, vocab_size: int, *, name: str = "tokens", layout: str = "(B, T)", ndim: int = 2
) -> Tensor:
    if isinstance(tokens, (list, tuple, np.ndarray)):
        array = np.asarray(tokens)
        tokens = torch.as_tensor(array.astype(np.int64) if array.size == 0 else array)
    if not isinstance(tokens, Tensor) or tokens.is_floating_point() or tokens.dtype == torch.bool:
        raise TypeError(
            f"{name} must be integer token ids {layout}, got "
            f"{getattr(tokens, 'dtype', type(tokens).__name__)}"
        )
    if tokens.ndim != ndim:
        raise ValueError(f"{name} must have shape {layout}, got {tuple(tokens.shape)}")
    has_values = tokens.numel() and tokens.device.type != "meta"  # meta: shapes only
    if has_values and (tokens.min() < 0 or tokens.max() >= vocab_size):
        raise ValueError(
            f"{name} must be ids in 0 … {vocab_size - 1}, got values from "
            f"{int(tokens.min())} to {int(tokens.max())}"
        )
    return tokens.long()


def _check_model_cache(cache: object, config: GPTConfig) -> KVCache:
    if not isinstance(cache, KVCache):
        raise TypeError(f"cache must be a KVCache (model.new_cache()), got {type(cache).__name__}")
    if len(cache.layers) != config.n_layers:
        raise ValueError(
            f"cache has {len(cache.layers)} layers, the model has n_layers = {config.n_layers}"
        )
    if (cache.window, cache.n_sinks) != (config.window, config.n_sinks):
        raise ValueError(
            f"cache was made for window = {cache.window}, n_sinks = {cache.n_sinks}; the model "
            f"has window = {config.window}, n_sinks = {config.n_sinks} (use model.new_cache())"
        )
    return cache


def _check_heads_and_positions(d_model: int, n_heads: int, positions: object) -> None:
    """What a model's config checks about its heads and positions (this GPT and chapter 14's
    attention-only model): heads that split ``D`` evenly, and a known kind of positions, with
    an even head size for rotary ones (features are rotated in pairs)."""
    if d_model % n_heads:
        raise ValueError(
            f"d_model must be divisible by n_heads: d_model = {d_model}, n_heads = {n_heads}"
        )
    if not isinstance(positions, str):
        raise TypeError(f"positions must be one of {POSITIONS}, got {positions!r}")
    if positions not in POSITIONS:
        raise ValueError(f"positions must be one of {POSITIONS}, got {positions!r}")
    if positions == "rope" and (d_model // n_heads) % 2:
        raise ValueError(
            'positions="rope" needs an even head size (features are rotated in pairs): '
            f"D_h = d_model / n_heads = {d_model // n_heads}"
        )
