"""The Transformer as PyTorch modules (chapters 7, 9 and 10).

One class per idea, in the order the course builds them:

- :class:`MultiHeadAttention` — the torch twin of
  :func:`selfattn_lib.multihead.multi_head_attention`;
- :class:`FeedForward` — the position-wise network ``max(0, x W_1 + b_1) W_2 + b_2``;
- :class:`EncoderLayer` and :class:`DecoderLayer` — attention and feed-forward sublayers, each
  wrapped in a residual connection and a layer norm;
- :class:`Encoder` and :class:`Decoder` — stacks of layers;
- :class:`Transformer` — embeddings, sinusoidal positions, encoder, decoder and the output
  projection, configured by a :class:`TransformerConfig`.

Layer norm placement. The paper puts it *after* each residual addition ("post-norm"):
``x = LayerNorm(x + Sublayer(x))``. Most later models put it *before* the sublayer
("pre-norm"): ``x = x + Sublayer(LayerNorm(x))``, plus one final layer norm after the stack.
The residual path then runs from input to output untouched by any norm; at initialisation
the gradients of the last layers are smaller and better behaved than with post-norm, and
training is stable without a learning-rate warm-up (Xiong et al., 2020; chapter 9 measures it).
``norm_first=False`` (the default) is the paper's post-norm,
``norm_first=True`` is pre-norm, with the same meaning as in ``torch.nn.TransformerEncoderLayer``.

Conventions as in the NumPy modules: batch-first shapes ``(B, T, D)``; boolean masks where
``True`` means "may attend" (``torch.nn.MultiheadAttention`` and ``torch.nn.Transformer*``
use the opposite); a query with nothing to attend to gets zero weights, never NaN; weights
are returned only when asked (``return_weights=True``) and never stored on the module.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from selfattn_lib._validation import check_positive_int
from selfattn_lib.multihead import MultiHeadParams
from selfattn_lib.positional import sinusoidal_encoding


class MultiHeadAttention(nn.Module):
    """Multi-head attention: ``Concat(head_1, …, head_H) W_O`` with
    ``head_h = softmax(Q_h K_hᵀ / √D_h) V_h``.

    The projections are ``nn.Linear`` layers ``w_q``, ``w_k``, ``w_v`` and ``w_o`` of shape
    ``D → D``; the heads are slices of ``D_h = D / H`` features of the projected vectors.
    Weights start Xavier-uniform and biases at zero, as in ``nn.MultiheadAttention``.
    Dropout (training only) acts on the attention weights, as in PyTorch.

    Shapes
    ------
    ``query``: ``(B, T_q, D)``, ``key`` and ``value``: ``(B, T_k, D)``, ``mask``: boolean,
    broadcastable to ``(B, T_q, T_k)`` without changing that shape (e.g. ``(T_q, T_k)``
    or a padding mask ``(B, 1, T_k)``) → ``output``: ``(B, T_q, D)`` and, when
    ``return_weights=True``, ``weights``: ``(B, H, T_q, T_k)``.

    Examples
    --------
    >>> attention = MultiHeadAttention(d_model=8, n_heads=2)
    >>> x = torch.randn(3, 5, 8)  # (B, T, D)
    >>> output, weights = attention(x, x, x, return_weights=True)
    >>> tuple(output.shape), tuple(weights.shape)
    ((3, 5, 8), (3, 2, 5, 5))
    """

    def __init__(
        self, d_model: int, n_heads: int, *, bias: bool = True, dropout: float = 0.0
    ) -> None:
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        self.n_heads = check_positive_int("n_heads", n_heads)
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model must be divisible by n_heads: d_model = {d_model}, n_heads = {n_heads}"
            )
        self.d_head = self.d_model // self.n_heads
        self.w_q = nn.Linear(self.d_model, self.d_model, bias=bias)
        self.w_k = nn.Linear(self.d_model, self.d_model, bias=bias)
        self.w_v = nn.Linear(self.d_model, self.d_model, bias=bias)
        self.w_o = nn.Linear(self.d_model, self.d_model, bias=bias)
        self.dropout = nn.Dropout(_probability("dropout", dropout))
        for projection in (self.w_q, self.w_k, self.w_v, self.w_o):
            nn.init.xavier_uniform_(projection.weight)
            if projection.bias is not None:
                nn.init.zeros_(projection.bias)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        mask: Tensor | None = None,
        return_weights: bool = False,
    ) -> Tensor | tuple[Tensor, Tensor]:
        _check_sequences(self.d_model, query=query, key=key, value=value)
        if key.shape[:2] != value.shape[:2] or query.shape[0] != key.shape[0]:
            raise ValueError(
                "query, key and value must have the same batch size and key and value the "
                f"same length: query has shape {tuple(query.shape)}, key has shape "
                f"{tuple(key.shape)}, value has shape {tuple(value.shape)}"
            )
        batch_size, t_q, t_k = query.shape[0], query.shape[1], key.shape[1]
        q = self._split_heads(self.w_q(query))  # (B, H, T_q, D_h)
        k = self._split_heads(self.w_k(key))  # (B, H, T_k, D_h)
        v = self._split_heads(self.w_v(value))  # (B, H, T_k, D_h)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)  # (B, H, T_q, T_k)
        if mask is not None:
            mask = check_mask(mask, (batch_size, t_q, t_k)).unsqueeze(-3)  # (…, 1, T_q, T_k)
        weights = masked_softmax(scores, mask)  # (B, H, T_q, T_k)
        heads = self.dropout(weights) @ v  # (B, H, T_q, D_h)
        merged = heads.transpose(1, 2).reshape(batch_size, t_q, self.d_model)  # (B, T_q, D)
        output = self.w_o(merged)  # (B, T_q, D)
        return (output, weights) if return_weights else output

    def _split_heads(self, x: Tensor) -> Tensor:
        batch_size, n_tokens, _ = x.shape
        x = x.view(batch_size, n_tokens, self.n_heads, self.d_head)  # (B, T, H, D_h)
        return x.transpose(1, 2)  # (B, H, T, D_h)

    @classmethod
    def from_params(cls, params: MultiHeadParams, n_heads: int) -> MultiHeadAttention:
        """The module holding the NumPy parameters of :mod:`selfattn_lib.multihead`.

        ``nn.Linear`` computes ``x @ weight.T``, so each weight is the transpose of the
        NumPy ``w`` used as ``x @ w``. The module gets the parameters' dtype (float64 for
        exact comparisons).

        Shapes
        ------
        ``params`` with ``d_model = D`` → a module with ``D → D`` projections.

        Examples
        --------
        >>> import numpy as np
        >>> params = MultiHeadParams.init(4, np.random.default_rng(0))
        >>> MultiHeadAttention.from_params(params, n_heads=2).w_q.weight.dtype
        torch.float64
        """
        if not isinstance(params, MultiHeadParams):
            raise TypeError(f"params must be a MultiHeadParams, got {type(params).__name__}")
        module = cls(params.d_model, n_heads, bias=params.b_q is not None)
        module.to(torch.from_numpy(params.w_q).dtype)
        with torch.no_grad():
            for name in ("q", "k", "v", "o"):
                projection = getattr(module, f"w_{name}")
                projection.weight.copy_(torch.from_numpy(getattr(params, f"w_{name}").T))
                if projection.bias is not None:
                    projection.bias.copy_(torch.from_numpy(getattr(params, f"b_{name}")))
        return module

    def to_params(self) -> MultiHeadParams:
        """The module's weights as NumPy :class:`~selfattn_lib.multihead.MultiHeadParams`.

        Shapes
        ------
        A module with ``D → D`` projections → weights ``(D, D)``, biases ``(D,)`` or None.

        Examples
        --------
        >>> MultiHeadAttention(6, 3, bias=False).to_params().b_o is None
        True
        """
        arrays = {}
        for name in ("q", "k", "v", "o"):
            projection = getattr(self, f"w_{name}")
            arrays[f"w_{name}"] = projection.weight.detach().cpu().numpy().T.copy()
            if projection.bias is not None:
                arrays[f"b_{name}"] = projection.bias.detach().cpu().numpy().copy()
        return MultiHeadParams(**arrays)

    @classmethod
    def from_torch(cls, layer: nn.MultiheadAttention) -> MultiHeadAttention:
        """A copy of ``torch.nn.MultiheadAttention``'s weights (same dtype, same results).

        PyTorch keeps the query, key and value projections stacked in one
        ``in_proj_weight`` of shape ``(3D, D)``; they are split into ``w_q``, ``w_k``, ``w_v``.

        Shapes
        ------
        ``layer`` with ``embed_dim = D`` → a module with ``D → D`` projections.

        Examples
        --------
        >>> torch_layer = nn.MultiheadAttention(8, 4, batch_first=True)
        >>> MultiHeadAttention.from_torch(torch_layer).n_heads
        4
        """
        if not isinstance(layer, nn.MultiheadAttention):
            raise TypeError(f"layer must be a nn.MultiheadAttention, got {type(layer).__name__}")
        if not layer._qkv_same_embed_dim or layer.bias_k is not None:
            raise ValueError("only layers with kdim = vdim = embed_dim and no add_bias_kv")
        has_bias = layer.in_proj_bias is not None
        module = cls(layer.embed_dim, layer.num_heads, bias=has_bias, dropout=layer.dropout)
        module.to(layer.in_proj_weight.dtype)
        with torch.no_grad():
            for projection, weight in zip(
                (module.w_q, module.w_k, module.w_v), layer.in_proj_weight.chunk(3), strict=True
            ):
                projection.weight.copy_(weight)
            module.w_o.weight.copy_(layer.out_proj.weight)
            if has_bias:
                for projection, bias in zip(
                    (module.w_q, module.w_k, module.w_v), layer.in_proj_bias.chunk(3), strict=True
                ):
                    projection.bias.copy_(bias)
                module.w_o.bias.copy_(layer.out_proj.bias)
        return module


class FeedForward(nn.Module):
    """The position-wise feed-forward network ``FFN(x) = max(0, x W_1 + b_1) W_2 + b_2``.

    The same two-layer network is applied to every position separately; ``d_ff`` (2048 in
    the paper, four times ``D``) is the width of its hidden layer. Dropout (training only)
    acts on the hidden layer, as in ``torch.nn.TransformerEncoderLayer``.

    Shapes
    ------
    ``x``: ``(B, T, D)`` → ``(B, T, D)`` (hidden layer ``(B, T, d_ff)``).

    Examples
    --------
    >>> feed_forward = FeedForward(d_model=8, d_ff=32)
    >>> tuple(feed_forward(torch.randn(2, 3, 8)).shape)
    (2, 3, 8)
    """

    def __init__(self, d_model: int, d_ff: int, *, dropout: float = 0.0) -> None:
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        self.w_1 = nn.Linear(self.d_model, check_positive_int("d_ff", d_ff))
        self.w_2 = nn.Linear(d_ff, self.d_model)
        self.dropout = nn.Dropout(_probability("dropout", dropout))

    def forward(self, x: Tensor) -> Tensor:
        _check_sequences(self.d_model, x=x)
        hidden = self.dropout(torch.relu(self.w_1(x)))  # (B, T, d_ff)
        return self.w_2(hidden)  # (B, T, D)


class EncoderLayer(nn.Module):
    """One encoder layer: self-attention, then the feed-forward network, each with a residual
    connection and a layer norm (post-norm as in the paper, or pre-norm with ``norm_first``).

    Post-norm: ``x = LN(x + Dropout(SelfAttention(x)))``, ``x = LN(x + Dropout(FFN(x)))``.
    Pre-norm: ``x = x + Dropout(SelfAttention(LN(x)))``, ``x = x + Dropout(FFN(LN(x)))``.

    Shapes
    ------
    ``x``: ``(B, T, D)``, ``mask``: broadcastable to ``(B, T, T)`` (usually a padding mask
    ``(B, 1, T)``) → ``(B, T, D)`` and, when ``return_weights=True``, the self-attention
    weights ``(B, H, T, T)``.

    Examples
    --------
    >>> layer = EncoderLayer(d_model=8, n_heads=2, d_ff=16)
    >>> tuple(layer(torch.randn(2, 5, 8)).shape)
    (2, 5, 8)
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        *,
        dropout: float = 0.0,
        norm_first: bool = False,
        eps: float = 1e-5,
    ) -> None:
        super().__init__()
        self.self_attention = MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.feed_forward = FeedForward(d_model, d_ff, dropout=dropout)
        self.norm_1 = nn.LayerNorm(d_model, eps=eps)
        self.norm_2 = nn.LayerNorm(d_model, eps=eps)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = bool(norm_first)

    def forward(
        self, x: Tensor, mask: Tensor | None = None, return_weights: bool = False
    ) -> Tensor | tuple[Tensor, Tensor]:
        if self.norm_first:
            normed = self.norm_1(x)
            attended, weights = self.self_attention(normed, normed, normed, mask, True)
            x = x + self.dropout(attended)  # (B, T, D)
            x = x + self.dropout(self.feed_forward(self.norm_2(x)))
        else:
            attended, weights = self.self_attention(x, x, x, mask, True)
            x = self.norm_1(x + self.dropout(attended))  # (B, T, D)
            x = self.norm_2(x + self.dropout(self.feed_forward(x)))
        return (x, weights) if return_weights else x

    @classmethod
    def from_torch(cls, layer: nn.TransformerEncoderLayer) -> EncoderLayer:
        """A copy of ``torch.nn.TransformerEncoderLayer`` (ReLU activation) with its weights.

        Shapes
        ------
        ``layer`` with ``d_model = D`` → a layer for inputs ``(B, T, D)``.

        Examples
        --------
        >>> torch_layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)
        >>> EncoderLayer.from_torch(torch_layer).feed_forward.w_1.out_features
        16
        """
        if not isinstance(layer, nn.TransformerEncoderLayer):
            raise TypeError(
                f"layer must be a nn.TransformerEncoderLayer, got {type(layer).__name__}"
            )
        module = cls(**_torch_layer_options(layer))
        module.to(layer.linear1.weight.dtype)
        module.self_attention = MultiHeadAttention.from_torch(layer.self_attn)
        _copy_torch_feed_forward_and_norms(layer, module, n_norms=2)
        return module


class DecoderLayer(nn.Module):
    """One decoder layer: masked self-attention, cross-attention over the encoder's output
    (``memory``), then the feed-forward network; each with a residual connection and a layer
    norm (post-norm as in the paper, or pre-norm with ``norm_first``).

    The layer applies the masks it is given: pass a causal ``self_mask`` when the decoder must
    not look ahead (:class:`Transformer` does).

    Shapes
    ------
    ``x``: ``(B, T_q, D)``, ``memory``: ``(B, T_k, D)``, ``self_mask``: broadcastable to
    ``(B, T_q, T_q)``, ``memory_mask``: broadcastable to ``(B, T_q, T_k)`` → ``(B, T_q, D)``
    and, when ``return_weights=True``, ``(self_weights, cross_weights)`` of shapes
    ``(B, H, T_q, T_q)`` and ``(B, H, T_q, T_k)``.

    Examples
    --------
    >>> layer = DecoderLayer(d_model=8, n_heads=2, d_ff=16)
    >>> x, memory = torch.randn(2, 4, 8), torch.randn(2, 6, 8)
    >>> output, (self_weights, cross_weights) = layer(x, memory, return_weights=True)
    >>> tuple(output.shape), tuple(cross_weights.shape)
    ((2, 4, 8), (2, 2, 4, 6))
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        *,
        dropout: float = 0.0,
        norm_first: bool = False,
        eps: float = 1e-5,
    ) -> None:
        super().__init__()
        self.self_attention = MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.cross_attention = MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.feed_forward = FeedForward(d_model, d_ff, dropout=dropout)
        self.norm_1 = nn.LayerNorm(d_model, eps=eps)
        self.norm_2 = nn.LayerNorm(d_model, eps=eps)
        self.norm_3 = nn.LayerNorm(d_model, eps=eps)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = bool(norm_first)

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        self_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        return_weights: bool = False,
    ) -> Tensor | tuple[Tensor, tuple[Tensor, Tensor]]:
        if self.norm_first:
            normed = self.norm_1(x)
            attended, self_weights = self.self_attention(normed, normed, normed, self_mask, True)
            x = x + self.dropout(attended)  # (B, T_q, D)
            normed = self.norm_2(x)
            attended, cross_weights = self.cross_attention(
                normed, memory, memory, memory_mask, True
            )
            x = x + self.dropout(attended)
            x = x + self.dropout(self.feed_forward(self.norm_3(x)))
        else:
            attended, self_weights = self.self_attention(x, x, x, self_mask, True)
            x = self.norm_1(x + self.dropout(attended))  # (B, T_q, D)
            attended, cross_weights = self.cross_attention(x, memory, memory, memory_mask, True)
            x = self.norm_2(x + self.dropout(attended))
            x = self.norm_3(x + self.dropout(self.feed_forward(x)))
        return (x, (self_weights, cross_weights)) if return_weights else x

    @classmethod
    def from_torch(cls, layer: nn.TransformerDecoderLayer) -> DecoderLayer:
        """A copy of ``torch.nn.TransformerDecoderLayer`` (ReLU activation) with its weights.

        Shapes
        ------
        ``layer`` with ``d_model = D`` → a layer for inputs ``(B, T, D)``.

        Examples
        --------
        >>> torch_layer = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, batch_first=True)
        >>> DecoderLayer.from_torch(torch_layer).cross_attention.n_heads
        2
        """
        if not isinstance(layer, nn.TransformerDecoderLayer):
            raise TypeError(
                f"layer must be a nn.TransformerDecoderLayer, got {type(layer).__name__}"
            )
        module = cls(**_torch_layer_options(layer))
        module.to(layer.linear1.weight.dtype)
        module.self_attention = MultiHeadAttention.from_torch(layer.self_attn)
        module.cross_attention = MultiHeadAttention.from_torch(layer.multihead_attn)
        _copy_torch_feed_forward_and_norms(layer, module, n_norms=3)
        return module


class Encoder(nn.Module):
    """A stack of ``n_layers`` :class:`EncoderLayer` (with a final layer norm when pre-norm).

    Shapes
    ------
    ``x``: ``(B, T, D)``, ``mask``: broadcastable to ``(B, T, T)`` → ``(B, T, D)`` and, when
    ``return_weights=True``, a list with each layer's weights ``(B, H, T, T)``.

    Examples
    --------
    >>> encoder = Encoder(d_model=8, n_heads=2, d_ff=16, n_layers=3)
    >>> output, weights = encoder(torch.randn(2, 5, 8), return_weights=True)
    >>> tuple(output.shape), len(weights)
    ((2, 5, 8), 3)
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        n_layers: int,
        *,
        dropout: float = 0.0,
        norm_first: bool = False,
    ) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, n_heads, d_ff, dropout=dropout, norm_first=norm_first)
            for _ in range(check_positive_int("n_layers", n_layers))
        )
        self.norm = nn.LayerNorm(d_model) if norm_first else None

    def forward(
        self, x: Tensor, mask: Tensor | None = None, return_weights: bool = False
    ) -> Tensor | tuple[Tensor, list[Tensor]]:
        all_weights = []
        for layer in self.layers:
            x, weights = layer(x, mask, return_weights=True)  # (B, T, D)
            all_weights.append(weights)
        if self.norm is not None:
            x = self.norm(x)
        return (x, all_weights) if return_weights else x


class Decoder(nn.Module):
    """A stack of ``n_layers`` :class:`DecoderLayer` (with a final layer norm when pre-norm).

    Shapes
    ------
    ``x``: ``(B, T_q, D)``, ``memory``: ``(B, T_k, D)``, masks as in :class:`DecoderLayer`
    → ``(B, T_q, D)`` and, when ``return_weights=True``, a list with each layer's
    ``(self_weights, cross_weights)``.

    Examples
    --------
    >>> decoder = Decoder(d_model=8, n_heads=2, d_ff=16, n_layers=2)
    >>> tuple(decoder(torch.randn(2, 4, 8), torch.randn(2, 6, 8)).shape)
    (2, 4, 8)
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        n_layers: int,
        *,
        dropout: float = 0.0,
        norm_first: bool = False,
    ) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            DecoderLayer(d_model, n_heads, d_ff, dropout=dropout, norm_first=norm_first)
            for _ in range(check_positive_int("n_layers", n_layers))
        )
        self.norm = nn.LayerNorm(d_model) if norm_first else None

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        self_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        return_weights: bool = False,
    ) -> Tensor | tuple[Tensor, list[tuple[Tensor, Tensor]]]:
        all_weights = []
        for layer in self.layers:
            x, weights = layer(x, memory, self_mask, memory_mask, return_weights=True)
            all_weights.append(weights)
        if self.norm is not None:
            x = self.norm(x)
        return (x, all_weights) if return_weights else x


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
        _probability("dropout", self.dropout)
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
    encoder's output; a linear layer maps each decoder position to scores (logits) over the
    target vocabulary. Padding tokens (``config.pad_id``) are masked out as keys.

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
        self._check_tokens("src", src, self.config.src_vocab_size)
        x = self.embed(src, self.src_embedding)  # (B, T_src, D)
        return self.encoder(x, self.padding_mask(src), return_weights=return_weights)

    def decode(
        self, tgt: Tensor, memory: Tensor, src: Tensor, return_weights: bool = False
    ) -> Tensor | tuple[Tensor, list[tuple[Tensor, Tensor]]]:
        """Logits for every target position, given the encoder's ``memory`` of ``src``.

        Position ``t`` sees target tokens ``0 … t`` only (causal mask) and every source token
        that is not padding; its logits score the token at ``t + 1``.

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
        self._check_tokens("tgt", tgt, self.config.tgt_vocab_size)
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
        return (tokens != self.config.pad_id).unsqueeze(1)  # (B, 1, T_k)

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

    def _check_tokens(self, name: str, tokens: Tensor, vocab_size: int) -> None:
        if not isinstance(tokens, Tensor) or tokens.dtype not in (torch.long, torch.int):
            raise TypeError(
                f"{name} must be a tensor of integer token ids, got "
                f"{getattr(tokens, 'dtype', type(tokens).__name__)}"
            )
        if tokens.ndim != 2 or tokens.shape[1] == 0:
            raise ValueError(
                f"{name} must have shape (B, T) with T >= 1, got {tuple(tokens.shape)}"
            )
        if tokens.shape[1] > self.config.max_len:
            raise ValueError(
                f"{name} has {tokens.shape[1]} tokens, more than config.max_len = "
                f"{self.config.max_len}"
            )
        if tokens.numel() and (tokens.min() < 0 or tokens.max() >= vocab_size):
            raise ValueError(
                f"{name} must hold token ids in 0 … {vocab_size - 1}, got values from "
                f"{int(tokens.min())} to {int(tokens.max())}"
            )


def masked_softmax(scores: Tensor, mask: Tensor | None) -> Tensor:
    """Softmax over the keys (last axis) where ``mask`` is ``True``; a query row with nothing
    to attend to gets zero weights (not NaN, and no NaN gradients either).

    Shapes
    ------
    ``scores``: ``(..., T_q, T_k)``, ``mask``: boolean broadcastable to it, or None →
    weights of the shape of ``scores``.

    Examples
    --------
    >>> masked_softmax(torch.zeros(2, 3), torch.tensor([[True, True, False], [False] * 3]))
    tensor([[0.5000, 0.5000, 0.0000],
            [0.0000, 0.0000, 0.0000]])
    """
    if mask is None:
        return torch.softmax(scores, dim=-1)
    has_key = mask.any(dim=-1, keepdim=True)  # (..., T_q, 1)
    # An empty row gets finite scores (so the softmax is defined), then weights of zero.
    scores = scores.masked_fill(~mask, float("-inf")).masked_fill(~has_key, 0.0)
    return torch.softmax(scores, dim=-1).masked_fill(~mask, 0.0)  # (..., T_q, T_k)


def check_mask(mask: object, scores_shape: tuple[int, int, int]) -> Tensor:
    """Check that ``mask`` is a boolean tensor that broadcasts to ``(B, T_q, T_k)``
    without changing that shape; return it.

    Shapes
    ------
    ``mask``: ``(T_q, T_k)``, ``(B, 1, T_k)``, ``(B, T_q, T_k)`` or any shape with 1 in place
    of a size → the same tensor.

    Examples
    --------
    >>> tuple(check_mask(torch.ones(1, 4, dtype=torch.bool), (2, 3, 4)).shape)
    (1, 4)
    """
    if not isinstance(mask, Tensor):
        raise TypeError(f"mask must be a boolean torch.Tensor, got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise TypeError(
            f"mask must be boolean (True = may attend), got dtype {mask.dtype}; note that "
            "torch.nn.MultiheadAttention's masks mean the opposite"
        )
    fits = mask.ndim <= 3 and all(
        size in (1, expected)
        for size, expected in zip(mask.shape[::-1], scores_shape[::-1], strict=False)
    )
    if not fits:
        raise ValueError(
            "mask must broadcast to (B, T_q, T_k) without changing it: mask has shape "
            f"{tuple(mask.shape)}, (B, T_q, T_k) is {tuple(scores_shape)}"
        )
    return mask


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
    return sum(parameter.numel() for parameter in module.parameters() if parameter.requires_grad)


def _check_sequences(d_model: int, **tensors: Tensor) -> None:
    for name, tensor in tensors.items():
        if not isinstance(tensor, Tensor) or not tensor.is_floating_point():
            raise TypeError(
                f"{name} must be a floating-point torch.Tensor, got "
                f"{getattr(tensor, 'dtype', type(tensor).__name__)}"
            )
        if tensor.ndim != 3 or tensor.shape[-1] != d_model:
            raise ValueError(
                f"{name} must have shape (B, T, D) with D = d_model = {d_model}, "
                f"got shape {tuple(tensor.shape)}"
            )


def _torch_layer_options(layer: nn.TransformerEncoderLayer | nn.TransformerDecoderLayer) -> dict:
    activation = getattr(layer, "activation", None)
    if activation is not torch.nn.functional.relu and not isinstance(activation, nn.ReLU):
        raise ValueError("only layers with the ReLU activation (the paper's) can be copied")
    if not layer.self_attn.batch_first:
        raise ValueError("only batch_first=True layers can be copied (the course is batch-first)")
    return {
        "d_model": layer.self_attn.embed_dim,
        "n_heads": layer.self_attn.num_heads,
        "d_ff": layer.linear1.out_features,
        "dropout": layer.dropout.p,
        "norm_first": layer.norm_first,
        "eps": layer.norm1.eps,
    }


def _copy_torch_feed_forward_and_norms(layer: nn.Module, module: nn.Module, n_norms: int) -> None:
    with torch.no_grad():
        module.feed_forward.w_1.load_state_dict(layer.linear1.state_dict())
        module.feed_forward.w_2.load_state_dict(layer.linear2.state_dict())
        for index in range(1, n_norms + 1):
            getattr(module, f"norm_{index}").load_state_dict(
                getattr(layer, f"norm{index}").state_dict()
            )


def _probability(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value < 1:
        raise ValueError(f"{name} must be a probability in [0, 1), got {value!r}")
    return float(value)
