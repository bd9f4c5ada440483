"""The Transformer as a PyTorch model (chapter 10): embeddings, sinusoidal positions, the
encoder and decoder stacks of :mod:`selfattn_lib.layers` and the output projection, configured
by a :class:`TransformerConfig`; greedy decoding; parameter counts.

The layers are re-exported here, so ``from selfattn_lib.transformer import EncoderLayer``
works as it always has.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn

from selfattn_lib._validation import check_positive_int, check_probability
from selfattn_lib.layers import (  # noqa: F401 - re-exported: the chapters import them from here
    Decoder,
    DecoderLayer,
    Encoder,
    EncoderLayer,
    FeedForward,
    MultiHeadAttention,
    check_mask,
    masked_softmax,
)
from selfattn_lib.masks import padding_mask
from selfattn_lib.positional import sinusoidal_encoding


@dataclass(frozen=True)
class TransformerConfig:
    """The sizes and options of a :class:`Transformer`.

    ``share_embeddings`` makes the source and target embeddings one matrix (needs one shared
    vocabulary); ``tie_output`` makes the output projection reuse the target embedding
    matrix. The paper does both (section 3.4). ``pad_id`` is the padding token: keys that
    hold it are masked out (``None``: no padding). ``max_len`` is the longest sequence the
    positional encoding covers.

    Shapes
    ------
    Not an array: the model has embeddings ``(V, D)`` and ``n_layers`` encoder and decoder
    layers with ``H`` heads of ``D_h = D / H`` and a hidden feed-forward size ``d_ff``.

    Examples
    --------
    >>> TransformerConfig.base().d_ff, TransformerConfig.big().n_heads
    (2048, 16)
    """

    src_vocab_size: int
    tgt_vocab_size: int
    d_model: int = 512
    n_heads: int = 8
    d_ff: int = 2048
    n_layers: int = 6
    dropout: float = 0.1
    max_len: int = 512
    share_embeddings: bool = False
    tie_output: bool = False
    norm_first: bool = False
    pad_id: int | None = 0

    def __post_init__(self) -> None:
        for name in ("src_vocab_size", "tgt_vocab_size", "d_model", "n_heads", "d_ff"):
            check_positive_int(name, getattr(self, name))
        check_positive_int("n_layers", self.n_layers)
        check_positive_int("max_len", self.max_len)
        check_probability("dropout", self.dropout)
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model must be divisible by n_heads: d_model = {self.d_model}, "
                f"n_heads = {self.n_heads}"
            )
        if self.d_model % 2:
            raise ValueError(
                f"d_model must be even (sinusoidal positions come in sin/cos pairs), "
                f"got {self.d_model}"
            )
        if self.share_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            raise ValueError(
                "share_embeddings needs one vocabulary: src_vocab_size = "
                f"{self.src_vocab_size}, tgt_vocab_size = {self.tgt_vocab_size}"
            )
        if self.pad_id is not None:
            smallest = min(self.src_vocab_size, self.tgt_vocab_size)
            if isinstance(self.pad_id, bool) or not isinstance(self.pad_id, numbers.Integral):
                raise TypeError(f"pad_id must be an integer or None, got {self.pad_id!r}")
            if not 0 <= self.pad_id < smallest:
                raise ValueError(
                    f"pad_id must be a token of both vocabularies (0 … {smallest - 1}), "
                    f"got {self.pad_id}"
                )

    @classmethod
    def base(cls, vocab_size: int = 37000) -> TransformerConfig:
        """The paper's base model (Table 3): D = 512, 8 heads, d_ff = 2048, 6 layers,
        dropout 0.1, one shared vocabulary (about 37000 byte-pair tokens for
        English–German) with embeddings and output projection shared.

        Shapes
        ------
        Embeddings ``(vocab_size, 512)``.

        Examples
        --------
        >>> TransformerConfig.base().d_model
        512
        """
        return cls(vocab_size, vocab_size, share_embeddings=True, tie_output=True, max_len=512)

    @classmethod
    def big(cls, vocab_size: int = 37000) -> TransformerConfig:
        """The paper's big model (Table 3): D = 1024, 16 heads, d_ff = 4096, 6 layers,
        dropout 0.3, shared vocabulary, embeddings and output projection.

        Shapes
        ------
        Embeddings ``(vocab_size, 1024)``.

        Examples
        --------
        >>> TransformerConfig.big().d_ff
        4096
        """
        return cls(
            vocab_size,
            vocab_size,
            d_model=1024,
            n_heads=16,
            d_ff=4096,
            dropout=0.3,
            share_embeddings=True,
            tie_output=True,
        )


class Transformer(nn.Module):
    """The encoder–decoder Transformer of "Attention Is All You Need".

    Token embeddings are multiplied by ``√D`` and added to sinusoidal positional encodings
    (then dropout); the encoder reads the source, the decoder reads the target shifted right
    (it starts with a beginning-of-sequence token) under a causal mask and attends to the
    encoder's output; a linear layer maps each decoder position to logits over the target
    vocabulary. Padding tokens (``config.pad_id``) are masked out as keys.

    Shapes
    ------
    ``src``: ``(B, T_src)`` and ``tgt``: ``(B, T_tgt)`` token ids (integers) → logits
    ``(B, T_tgt, V_tgt)``; with ``return_weights=True`` also a dict of attention weights:
    ``"encoder"`` (a list with one ``(B, H, T_src, T_src)`` per layer), ``"decoder"``
    (``(B, H, T_tgt, T_tgt)`` per layer) and ``"cross"`` (``(B, H, T_tgt, T_src)`` per layer).

    Examples
    --------
    >>> config = TransformerConfig(11, 13, d_model=8, n_heads=2, d_ff=16, n_layers=2)
    >>> model = Transformer(config)
    >>> src, tgt = torch.randint(1, 11, (2, 5)), torch.randint(1, 13, (2, 4))
    >>> tuple(model(src, tgt).shape)
    (2, 4, 13)
    """

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        if not isinstance(config, TransformerConfig):
            raise TypeError(f"config must be a TransformerConfig, got {type(config).__name__}")
        self.config = config
        d_model = config.d_model
        self.src_embedding = nn.Embedding(config.src_vocab_size, d_model)
        self.tgt_embedding = (
            self.src_embedding
            if config.share_embeddings
            else nn.Embedding(config.tgt_vocab_size, d_model)
        )
        for embedding in dict.fromkeys((self.src_embedding, self.tgt_embedding)):  # in order
            nn.init.normal_(embedding.weight, std=d_model**-0.5)  # × √D gives unit variance
        positions = torch.from_numpy(sinusoidal_encoding(config.max_len, d_model))
        self.register_buffer("positions", positions.float(), persistent=False)  # (T_max, D)
        self.dropout = nn.Dropout(config.dropout)
        options = {"dropout": config.dropout, "norm_first": config.norm_first}
        self.encoder = Encoder(d_model, config.n_heads, config.d_ff, config.n_layers, **options)
        self.decoder = Decoder(d_model, config.n_heads, config.d_ff, config.n_layers, **options)
        self.output = nn.Linear(d_model, config.tgt_vocab_size, bias=False)
        if config.tie_output:
            self.output.weight = self.tgt_embedding.weight

    def embed(self, tokens: Tensor, embedding: nn.Embedding) -> Tensor:
        """``Dropout(embedding(tokens) · √D + PE)`` for a batch of token ids.

        Shapes
        ------
        ``tokens``: ``(B, T)`` → ``(B, T, D)``.

        Examples
        --------
        >>> model = Transformer(TransformerConfig(5, 5, d_model=4, n_heads=1, d_ff=8, n_layers=1))
        >>> tuple(model.embed(torch.tensor([[1, 2, 3]]), model.src_embedding).shape)
        (1, 3, 4)
        """
        n_tokens = tokens.shape[1]
        scaled = embedding(tokens) * math.sqrt(self.config.d_model)  # (B, T, D)
        return self.dropout(scaled + self.positions[:n_tokens].to(scaled.dtype))

    def encode(
        self, src: Tensor, return_weights: bool = False
    ) -> Tensor | tuple[Tensor, list[Tensor]]:
        """Run the encoder over the source tokens; the result is the decoder's ``memory``.

        Shapes
        ------
        ``src``: ``(B, T_src)`` → ``(B, T_src, D)`` (and the encoder's weights if asked).

        Examples
        --------
        >>> model = Transformer(TransformerConfig(5, 5, d_model=4, n_heads=1, d_ff=8, n_layers=1))
        >>> tuple(model.encode(torch.tensor([[1, 2, 3]])).shape)
        (1, 3, 4)
        """
        src = self._tokens("src", src, self.config.src_vocab_size)
        x = self.embed(src, self.src_embedding)  # (B, T_src, D)
        return self.encoder(x, self.padding_mask(src), return_weights=return_weights)

    def decode(
        self, tgt: Tensor, memory: Tensor, src: Tensor, return_weights: bool = False
    ) -> Tensor | tuple[Tensor, list[tuple[Tensor, Tensor]]]:
        """Logits for every target position, given the encoder's ``memory`` of ``src``.

        Position ``t`` sees target tokens ``0 … t`` only (causal mask) and every source token
        that is not padding; its logits are those of the token at ``t + 1``.

        Shapes
        ------
        ``tgt``: ``(B, T_tgt)``, ``memory``: ``(B, T_src, D)``, ``src``: ``(B, T_src)`` →
        logits ``(B, T_tgt, V_tgt)`` (and the decoder's weights if asked).

        Examples
        --------
        >>> model = Transformer(TransformerConfig(5, 7, d_model=4, n_heads=1, d_ff=8, n_layers=1))
        >>> src = torch.tensor([[1, 2, 3]])
        >>> tuple(model.decode(torch.tensor([[1, 4]]), model.encode(src), src).shape)
        (1, 2, 7)
        """
        tgt = self._tokens("tgt", tgt, self.config.tgt_vocab_size)
        src = self._tokens("src", src, self.config.src_vocab_size)
        n_tgt = tgt.shape[1]
        causal = torch.ones(n_tgt, n_tgt, dtype=torch.bool, device=tgt.device).tril()
        self_mask = causal & self.padding_mask(tgt)  # (B, T_tgt, T_tgt)
        x = self.embed(tgt, self.tgt_embedding)  # (B, T_tgt, D)
        decoded = self.decoder(x, memory, self_mask, self.padding_mask(src), return_weights)
        if return_weights:
            decoded, weights = decoded
            return self.output(decoded), weights  # (B, T_tgt, V_tgt)
        return self.output(decoded)  # (B, T_tgt, V_tgt)

    def forward(
        self, src: Tensor, tgt: Tensor, return_weights: bool = False
    ) -> Tensor | tuple[Tensor, dict[str, list[Tensor]]]:
        if not return_weights:
            return self.decode(tgt, self.encode(src), src)
        memory, encoder_weights = self.encode(src, return_weights=True)
        logits, decoder_weights = self.decode(tgt, memory, src, return_weights=True)
        return logits, {
            "encoder": encoder_weights,
            "decoder": [self_weights for self_weights, _ in decoder_weights],
            "cross": [cross_weights for _, cross_weights in decoder_weights],
        }

    def padding_mask(self, tokens: Tensor) -> Tensor | None:
        """``True`` for every key that is not padding, ready to broadcast over the queries.

        Shapes
        ------
        ``tokens``: ``(B, T_k)`` → ``(B, 1, T_k)``, or None when ``config.pad_id`` is None.

        Examples
        --------
        >>> model = Transformer(TransformerConfig(5, 5, d_model=4, n_heads=1, d_ff=8, n_layers=1))
        >>> model.padding_mask(torch.tensor([[3, 4, 0]]))
        tensor([[[ True,  True, False]]])
        """
        if self.config.pad_id is None:
            return None
        tokens = as_token_ids(tokens)
        mask = padding_mask(tokens=tokens.cpu().numpy(), pad_id=self.config.pad_id)  # (B, 1, T_k)
        return torch.from_numpy(mask).to(tokens.device)

    @torch.no_grad()
    def greedy_decode(
        self, src: Tensor, *, bos_id: int, eos_id: int, max_new_tokens: int
    ) -> Tensor:
        """Generate target tokens one at a time, each time taking the highest-scoring token.

        Starts every sequence with ``bos_id``; a sequence that has produced ``eos_id`` is
        continued with padding; stops when all have or after ``max_new_tokens`` tokens.
        Recomputes the decoder over the whole prefix at every step (chapter 11 adds a cache).

        Shapes
        ------
        ``src``: ``(B, T_src)`` → ``(B, 1 + n)`` with ``n ≤ max_new_tokens`` (``bos_id`` first).

        Examples
        --------
        >>> model = Transformer(TransformerConfig(5, 5, d_model=4, n_heads=1, d_ff=8, n_layers=1))
        >>> out = model.greedy_decode(torch.tensor([[1, 2]]), bos_id=1, eos_id=2, max_new_tokens=3)
        >>> out.shape[0], bool(out[0, 0] == 1)
        (1, True)
        """
        max_new_tokens = check_positive_int("max_new_tokens", max_new_tokens)
        if max_new_tokens + 1 > self.config.max_len:
            raise ValueError(
                f"max_new_tokens + 1 = {max_new_tokens + 1} exceeds config.max_len = "
                f"{self.config.max_len}"
            )
        memory = self.encode(src)  # (B, T_src, D)
        tokens = torch.full((src.shape[0], 1), bos_id, dtype=torch.long, device=src.device)
        finished = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
        pad_id = self.config.pad_id if self.config.pad_id is not None else eos_id
        for _ in range(max_new_tokens):
            logits = self.decode(tokens, memory, src)  # (B, T, V_tgt)
            next_token = logits[:, -1].argmax(dim=-1)  # (B,)
            next_token = next_token.masked_fill(finished, pad_id)
            tokens = torch.cat([tokens, next_token[:, None]], dim=1)  # (B, T + 1)
            finished |= next_token == eos_id
            if finished.all():
                break
        return tokens

    def _tokens(self, name: str, tokens: object, vocab_size: int) -> Tensor:
        tokens = as_token_ids(tokens, name)
        if tokens.shape[1] > self.config.max_len:
            raise ValueError(
                f"{name} has {tokens.shape[1]} tokens, more than config.max_len = "
                f"{self.config.max_len}"
            )
        if tokens.min() < 0 or tokens.max() >= vocab_size:
            raise ValueError(
                f"{name} must hold token ids in 0 … {vocab_size - 1}, got values from "
                f"{int(tokens.min())} to {int(tokens.max())}"
            )
        return tokens


def as_token_ids(tokens: object, name: str = "tokens") -> Tensor:
    """A batch of token ids as a ``torch.long`` tensor: the one check of every place where
    tokens come in (the model, the loss, the training loop).

    Integer ids of any width are accepted, as a torch tensor or a NumPy array; anything else is
    a ``TypeError``, and a shape other than ``(B, T)`` with ``B, T ≥ 1`` a ``ValueError``.

    Shapes
    ------
    ``tokens``: ``(B, T)`` → ``(B, T)``, dtype ``torch.long``.

    Examples
    --------
    >>> as_token_ids(np.array([[1, 2, 3]], dtype=np.int16))
    tensor([[1, 2, 3]])
    """
    if isinstance(tokens, np.ndarray):
        tokens = torch.from_numpy(tokens)
    integer = isinstance(tokens, Tensor) and not tokens.dtype.is_floating_point
    if not integer or tokens.dtype in (torch.bool, torch.complex64, torch.complex128):
        raise TypeError(
            f"{name} must be a tensor or array of integer token ids, got "
            f"{getattr(tokens, 'dtype', type(tokens).__name__)}"
        )
    if tokens.ndim != 2 or 0 in tokens.shape:
        raise ValueError(f"{name} must have shape (B, T) with B, T >= 1, got {tuple(tokens.shape)}")
    return tokens.long()


def check_token_id(name: str, value: object) -> int:
    """``value`` as an int, requiring a token id: an integer ``>= 0`` (``TypeError`` for any
    other kind of value, ``ValueError`` for a negative one).

    Shapes
    ------
    Not an array: one id → an ``int``.

    Examples
    --------
    >>> check_token_id("bos_id", np.int64(1))
    1
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a token id, an integer >= 0, got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be a token id, an integer >= 0, got {value!r}")
    return int(value)


def count_parameters(module: nn.Module) -> int:
    """The number of trainable numbers in ``module``, each shared tensor counted once.

    Shapes
    ------
    Not an array: a module → an ``int``.

    Examples
    --------
    >>> count_parameters(nn.Linear(512, 2048))  # 512 · 2048 weights + 2048 biases
    1050624
    """
    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}")
    return sum(parameter.numel() for parameter in module.parameters() if parameter.requires_grad)
