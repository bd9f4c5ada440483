"""The Transformer's layers as PyTorch modules (chapters 7 and 9 to 10).

One class per idea, in the order the course builds them:

- :class:`MultiHeadAttention` — the torch twin of
  :func:`selfattn_lib.multihead.multi_head_attention`;
- :class:`FeedForward` — the position-wise network ``max(0, x W_1 + b_1) W_2 + b_2``;
- :class:`EncoderLayer` and :class:`DecoderLayer` — attention and feed-forward sublayers, each
  wrapped in a residual connection and a layer norm (the torch twins of
  :func:`selfattn_lib.encoder.encoder_layer`);
- :class:`Encoder` and :class:`Decoder` — stacks of layers;
- :class:`LayerCache` — the keys and values one attention layer has computed so far, for
  generating one token at a time (chapter 12).

Layer norm placement. The paper puts it *after* each residual addition ("post-norm"):
``x = LayerNorm(x + Sublayer(x))``. Most later models put it *before* the sublayer
("pre-norm"): ``x = x + Sublayer(LayerNorm(x))``, plus one final layer norm after the stack.
The residual path then runs from input to output untouched by any norm; at initialisation
the last layer's gradients shrink with depth instead of staying large as in post-norm
(Xiong et al., 2020; chapter 9 measures them), though pre-norm models are still usually
trained with a learning-rate warm-up.
``norm_first=False`` (the default) is the paper's post-norm,
``norm_first=True`` is pre-norm, with the same meaning as in ``torch.nn.TransformerEncoderLayer``.

Conventions as in the NumPy modules: batch-first shapes ``(B, T, D)``; boolean masks where
``True`` means "may attend" (``torch.nn.MultiheadAttention`` and ``torch.nn.Transformer*``
use the opposite), broadcastable to ``(B, T_q, T_k)`` or, with a head axis, to
``(B, H, T_q, T_k)``; a query with nothing to attend to gets zero weights, never NaN; weights
are returned only when asked (``return_weights=True``) and never stored on the module.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from selfattn_lib._validation import check_mask_shape, check_positive_int, check_probability
from selfattn_lib.multihead import MultiHeadParams

#: The feed-forward network's activations: the paper's ReLU, and GELU in its exact form (GPT-1
#: and GPT-2 use GELU; their code computes a tanh approximation of it).
ACTIVATIONS = {"relu": torch.relu, "gelu": F.gelu}


def _check_activation(activation: object) -> str:
    """``activation`` if it names one of :data:`ACTIVATIONS`, else a clear error."""
    if not isinstance(activation, str) or activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {tuple(ACTIVATIONS)}, got {activation!r}")
    return activation


class MultiHeadAttention(nn.Module):
    """Multi-head attention: ``Concat(head_1, …, head_H) W_O`` with
    ``head_h = softmax(Q_h K_hᵀ / √D_h) V_h``.

    The projections are ``nn.Linear`` layers ``w_q``, ``w_k``, ``w_v`` and ``w_o`` of shape
    ``D → D``; the heads are slices of ``D_h = D / H`` features of the projected vectors.
    Each weight starts Xavier-uniform as its own ``D × D`` matrix (standard deviation
    ``√(1/D)``), and biases at zero. ``nn.MultiheadAttention`` starts differently: it draws
    ``W_Q``, ``W_K`` and ``W_V`` Xavier-uniform as one ``3D × D`` matrix (``√2`` times smaller)
    and ``W_O`` as a plain ``nn.Linear`` (``√3`` times smaller). Given the same weights, the
    two compute the same outputs (tests/test_layers.py).
    Dropout (training only) acts on the attention weights, as in PyTorch.

    With a ``cache`` (:class:`LayerCache`), the projected keys and values of this call are
    appended to those of earlier calls, and the queries attend to all of them: a decoder that
    generates one token at a time projects only the newest token (chapter 12). The mask then
    covers every key, cached ones included: ``(T_q, t + T_k)``.

    Shapes
    ------
    ``query``: ``(B, T_q, D)``, ``key`` and ``value``: ``(B, T_k, D)``, ``mask``: boolean,
    broadcastable to ``(B, T_q, T_k)`` without changing that shape (e.g. ``(T_q, T_k)``
    or a padding mask ``(B, 1, T_k)``) or, per head, to ``(B, H, T_q, T_k)`` (e.g.
    ``(B, 1, 1, T_k)``, as in ``F.scaled_dot_product_attention``) → ``output``:
    ``(B, T_q, D)`` and, when ``return_weights=True``, ``weights``: ``(B, H, T_q, T_k)``.

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
        self.dropout = nn.Dropout(check_probability("dropout", dropout))
        _init_projections(self.w_q, self.w_k, self.w_v, self.w_o)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        mask: Tensor | None = None,
        return_weights: bool = False,
        *,
        cache: LayerCache | None = None,
    ) -> Tensor | tuple[Tensor, Tensor]:
        _check_attention_inputs(self.d_model, query, key, value)
        q = self._split_heads(self.w_q(query))  # (B, H, T_q, D_h)
        k = self._split_heads(self.w_k(key))  # (B, H, T_k, D_h)
        v = self._split_heads(self.w_v(value))  # (B, H, T_k, D_h)
        if cache is not None:  # the earlier tokens' keys and values come first
            k, v = _check_cache(cache).extend(k, v)  # (B, H, t + T_k, D_h)
        merged, weights = _attend(q, k, v, mask, self.dropout, return_weights=return_weights)
        output = self.w_o(merged)  # (B, T_q, D)
        return (output, weights) if return_weights else output

    def _split_heads(self, x: Tensor) -> Tensor:
        return _split_into_heads(x, self.n_heads)  # (B, H, T, D_h)

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
    acts on the hidden layer, as in ``torch.nn.TransformerEncoderLayer``. With
    ``activation="gelu"``, ``GELU(z) = z Φ(z)`` (``Φ`` the standard normal's distribution
    function, as ``F.gelu``) replaces ``max(0, z)``, as in GPT-1, GPT-2 and BERT, whose code uses
    a tanh approximation of it: smooth, and slightly negative for small negative ``z``.

    Shapes
    ------
    ``x``: ``(B, T, D)`` → ``(B, T, D)`` (hidden layer ``(B, T, d_ff)``).

    Examples
    --------
    >>> feed_forward = FeedForward(d_model=8, d_ff=32)
    >>> tuple(feed_forward(torch.randn(2, 3, 8)).shape)
    (2, 3, 8)
    """

    def __init__(
        self, d_model: int, d_ff: int, *, dropout: float = 0.0, activation: str = "relu"
    ) -> None:
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        self.activation = _check_activation(activation)
        self.w_1 = nn.Linear(self.d_model, check_positive_int("d_ff", d_ff))
        self.w_2 = nn.Linear(d_ff, self.d_model)
        self.dropout = nn.Dropout(check_probability("dropout", dropout))

    def forward(self, x: Tensor) -> Tensor:
        _check_sequences(self.d_model, x=x)
        hidden = self.dropout(ACTIVATIONS[self.activation](self.w_1(x)))  # (B, T, d_ff)
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
    weights ``(B, H, T, T)``. With a ``cache`` (:class:`LayerCache` holding ``t`` earlier
    tokens), ``mask`` is ``(T, t + T)`` and the weights ``(B, H, T, t + T)``: with a causal
    mask this layer is a decoder layer without cross-attention (chapter 12's GPT).

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
        activation: str = "relu",
    ) -> None:
        super().__init__()
        self.self_attention = MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.feed_forward = FeedForward(d_model, d_ff, dropout=dropout, activation=activation)
        self.norm_1 = nn.LayerNorm(d_model, eps=eps)
        self.norm_2 = nn.LayerNorm(d_model, eps=eps)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = bool(norm_first)

    def forward(
        self,
        x: Tensor,
        mask: Tensor | None = None,
        return_weights: bool = False,
        *,
        cache: LayerCache | None = None,
    ) -> Tensor | tuple[Tensor, Tensor]:
        if self.norm_first:
            normed = self.norm_1(x)
            attended, weights = _attention_and_weights(
                self.self_attention, normed, normed, mask, return_weights, cache
            )
            x = x + self.dropout(attended)  # (B, T, D)
            x = x + self.dropout(self.feed_forward(self.norm_2(x)))
        else:
            attended, weights = _attention_and_weights(
                self.self_attention, x, x, mask, return_weights, cache
            )
            x = self.norm_1(x + self.dropout(attended))  # (B, T, D)
            x = self.norm_2(x + self.dropout(self.feed_forward(x)))
        return (x, weights) if return_weights else x

    @classmethod
    def from_torch(cls, layer: nn.TransformerEncoderLayer) -> EncoderLayer:
        """A copy of ``torch.nn.TransformerEncoderLayer`` (ReLU or GELU) with its weights.

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
        activation: str = "relu",
    ) -> None:
        super().__init__()
        self.self_attention = MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.cross_attention = MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.feed_forward = FeedForward(d_model, d_ff, dropout=dropout, activation=activation)
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
            attended, self_weights = _attention_and_weights(
                self.self_attention, normed, normed, self_mask, return_weights
            )
            x = x + self.dropout(attended)  # (B, T_q, D)
            attended, cross_weights = _attention_and_weights(
                self.cross_attention, self.norm_2(x), memory, memory_mask, return_weights
            )
            x = x + self.dropout(attended)
            x = x + self.dropout(self.feed_forward(self.norm_3(x)))
        else:
            attended, self_weights = _attention_and_weights(
                self.self_attention, x, x, self_mask, return_weights
            )
            x = self.norm_1(x + self.dropout(attended))  # (B, T_q, D)
            attended, cross_weights = _attention_and_weights(
                self.cross_attention, x, memory, memory_mask, return_weights
            )
            x = self.norm_2(x + self.dropout(attended))
            x = self.norm_3(x + self.dropout(self.feed_forward(x)))
        return (x, (self_weights, cross_weights)) if return_weights else x

    @classmethod
    def from_torch(cls, layer: nn.TransformerDecoderLayer) -> DecoderLayer:
        """A copy of ``torch.nn.TransformerDecoderLayer`` (ReLU or GELU) with its weights.

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


class _Stack(nn.Module):
    """What the encoder and the decoder share: ``n_layers`` layers of one kind, run in turn,
    and a final layer norm when the layers are pre-norm."""

    layer: type[nn.Module]  # EncoderLayer or DecoderLayer

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        n_layers: int,
        *,
        dropout: float = 0.0,
        norm_first: bool = False,
        activation: str = "relu",
    ) -> None:
        super().__init__()
        options = {"dropout": dropout, "norm_first": norm_first, "activation": activation}
        self.layers = nn.ModuleList(
            self.layer(d_model, n_heads, d_ff, **options)
            for _ in range(check_positive_int("n_layers", n_layers))
        )
        self.norm = nn.LayerNorm(d_model) if norm_first else None

    def _run(self, x: Tensor, return_weights: bool, *inputs: Tensor | None) -> Tensor | tuple:
        all_weights = []
        for layer in self.layers:
            # Every layer computes its weights in full, as chapter 10's model was trained;
            # chapter 12's GPT asks for them only when it needs them (the fused kernel).
            x, weights = layer(x, *inputs, return_weights=True)  # (B, T, D)
            all_weights.append(weights)
        if self.norm is not None:
            x = self.norm(x)
        return (x, all_weights) if return_weights else x


class Encoder(_Stack):
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

    layer = EncoderLayer

    def forward(
        self, x: Tensor, mask: Tensor | None = None, return_weights: bool = False
    ) -> Tensor | tuple[Tensor, list[Tensor]]:
        return self._run(x, return_weights, mask)


class Decoder(_Stack):
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

    layer = DecoderLayer

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        self_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        return_weights: bool = False,
    ) -> Tensor | tuple[Tensor, list[tuple[Tensor, Tensor]]]:
        return self._run(x, return_weights, memory, self_mask, memory_mask)


class LayerCache:
    """The keys and values that one attention layer has computed so far: a KV cache.

    A model that writes one token at a time gives every layer its own cache; at each step the
    layer appends the new tokens' keys and values (:meth:`extend`) and attends with the new
    queries to everything cached. The cache is explicit state owned by the caller (nothing is
    kept on the module), and it holds the keys and values after the projections and the split
    into heads.

    Shapes
    ------
    ``keys`` and ``values``: ``(B, H, t, D_h)`` after ``t`` tokens (``None`` before the first).

    Examples
    --------
    >>> cache = LayerCache()
    >>> keys, values = cache.extend(torch.zeros(1, 2, 3, 4), torch.ones(1, 2, 3, 4))
    >>> keys, values = cache.extend(torch.zeros(1, 2, 1, 4), torch.ones(1, 2, 1, 4))
    >>> cache.length, tuple(keys.shape), cache.nbytes
    (4, (1, 2, 4, 4), 256)
    """

    def __init__(self) -> None:
        self.keys: Tensor | None = None
        self.values: Tensor | None = None

    @property
    def length(self) -> int:
        """How many tokens the cache holds (``t``)."""
        return 0 if self.keys is None else self.keys.shape[2]

    @property
    def nbytes(self) -> int:
        """The memory of the cached keys and values: ``2 · B · H · t · D_h`` numbers."""
        if self.keys is None or self.values is None:
            return 0
        return sum(tensor.numel() * tensor.element_size() for tensor in (self.keys, self.values))

    def extend(self, keys: Tensor, values: Tensor) -> tuple[Tensor, Tensor]:
        """Append new keys and values along the token axis; return everything cached.

        Shapes
        ------
        ``keys``, ``values``: ``(B, H, T, D_h)`` → both ``(B, H, t + T, D_h)``.
        """
        for name, tensor in (("keys", keys), ("values", values)):
            if not isinstance(tensor, Tensor):
                raise TypeError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
            if tensor.ndim != 4:
                raise ValueError(
                    f"{name} must be a tensor of shape (B, H, T, D_h), got "
                    f"{tuple(getattr(tensor, 'shape', ()))}"
                )
        if keys.shape != values.shape:
            raise ValueError(
                f"keys and values must have the same shape: {tuple(keys.shape)} and "
                f"{tuple(values.shape)}"
            )
        if self.keys is not None and self.values is not None:
            cached = self.keys.shape
            if (cached[0], cached[1], cached[3]) != (keys.shape[0], keys.shape[1], keys.shape[3]):
                raise ValueError(
                    "new keys must match the cached ones in B, H and D_h: the cache holds "
                    f"{tuple(cached)}, the new keys have shape {tuple(keys.shape)}"
                )
            keys = torch.cat([self.keys, keys], dim=2)  # (B, H, t + T, D_h)
            values = torch.cat([self.values, values], dim=2)  # (B, H, t + T, D_h)
        self.keys, self.values = keys, values
        return keys, values


def _check_cache(cache: object) -> LayerCache:
    if not isinstance(cache, LayerCache):
        raise TypeError(f"cache must be a LayerCache or None, got {type(cache).__name__}")
    return cache


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
    mask = check_mask(mask, tuple(scores.shape))
    has_key = mask.any(dim=-1, keepdim=True)  # (..., T_q, 1)
    # An empty row gets finite scores (so the softmax is defined), then weights of zero.
    scores = scores.masked_fill(~mask, float("-inf")).masked_fill(~has_key, 0.0)
    return torch.softmax(scores, dim=-1).masked_fill(~mask, 0.0)  # (..., T_q, T_k)


def check_mask(mask: object, scores_shape: tuple[int, ...]) -> Tensor:
    """Check that ``mask`` is a boolean tensor that broadcasts to the scores' shape
    ``(B, T_q, T_k)`` or, with heads, ``(B, H, T_q, T_k)``, without changing it; return it.
    The shape rule is the NumPy functions' (``selfattn_lib._validation.check_mask_shape``).

    Shapes
    ------
    ``mask``: ``(T_q, T_k)``, ``(B, 1, T_k)``, ``(B, T_q, T_k)``, ``(B, 1, 1, T_k)`` or any
    shape with 1 in place of a size → the same tensor.

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
    axes = "(B, H, T_q, T_k)" if len(scores_shape) == 4 else "(B, T_q, T_k)"
    check_mask_shape(tuple(mask.shape), tuple(scores_shape), axes)
    return mask


def _init_projections(*projections: nn.Linear) -> None:
    """Xavier-uniform weights and zero biases: how the course's attention modules start
    (:class:`MultiHeadAttention`, :class:`~selfattn_lib.grouped_query.GroupedQueryAttention`)."""
    for projection in projections:
        nn.init.xavier_uniform_(projection.weight)
        if projection.bias is not None:
            nn.init.zeros_(projection.bias)


def _check_attention_inputs(d_model: int, query: Tensor, key: Tensor, value: Tensor) -> None:
    _check_sequences(d_model, query=query, key=key, value=value)
    if key.shape[:2] != value.shape[:2] or query.shape[0] != key.shape[0]:
        raise ValueError(
            "query, key and value must have the same batch size and key and value the "
            f"same length: query has shape {tuple(query.shape)}, key has shape "
            f"{tuple(key.shape)}, value has shape {tuple(value.shape)}"
        )


def _split_into_heads(x: Tensor, n_heads: int) -> Tensor:
    batch_size, n_tokens, width = x.shape
    x = x.view(batch_size, n_tokens, n_heads, width // n_heads)  # (B, T, H, D_h)
    return x.transpose(1, 2)  # (B, H, T, D_h)


def _attend(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None,
    dropout: nn.Module,
    *,
    return_weights: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """Scaled dot-product attention of heads already split, with the mask rules of
    :class:`MultiHeadAttention`; returns the merged heads ``(B, T_q, H · D_h)`` (before
    ``W_O``) and, when ``return_weights``, the weights ``(B, H, T_q, T_k)`` (else None).

    The weights are computed in full only when asked for, or when dropout acts on them.
    Otherwise PyTorch's fused ``F.scaled_dot_product_attention`` computes the same numbers
    without storing the ``T_q × T_k`` weights (up to rounding; tests/test_layers.py). A mask
    with a query that sees no key always takes the explicit path, whose zero weights are the
    library's rule."""
    batch_size, n_heads, t_q, d_head = q.shape
    t_k = k.shape[2]
    if mask is not None and getattr(mask, "ndim", 0) == 4:  # already has a head axis
        mask = check_mask(mask, (batch_size, n_heads, t_q, t_k))
    elif mask is not None:
        mask = check_mask(mask, (batch_size, t_q, t_k))
        mask = mask.view((1,) * (3 - mask.ndim) + mask.shape).unsqueeze(1)  # (B or 1, 1, T_q, T_k)
    dropping = dropout.training and dropout.p > 0
    every_query_sees_a_key = (
        mask is None or mask.device.type == "meta" or bool(mask.any(dim=-1).all())
    )  # on the meta device (shapes only) there is nothing to check
    if return_weights or dropping or not every_query_sees_a_key:
        scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)  # (B, H, T_q, T_k)
        weights = masked_softmax(scores, mask)  # (B, H, T_q, T_k)
        heads = dropout(weights) @ v  # (B, H, T_q, D_h)
    else:
        weights = None
        heads = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (B, H, T_q, D_h)
    merged = heads.transpose(1, 2).reshape(batch_size, t_q, n_heads * d_head)  # (B, T_q, D)
    return merged, weights


def _attention_and_weights(
    attention: nn.Module,
    query: Tensor,
    memory: Tensor,
    mask: Tensor | None,
    return_weights: bool,
    cache: LayerCache | None = None,
) -> tuple[Tensor, Tensor | None]:
    """A sublayer's attention of ``query`` over ``memory`` (keys and values alike): its output
    and, only when ``return_weights``, its weights (else None, and the fused path runs)."""
    result = attention(query, memory, memory, mask, return_weights, cache=cache)
    return result if return_weights else (result, None)


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
    if activation is F.relu or isinstance(activation, nn.ReLU):
        name = "relu"
    elif activation is F.gelu or (
        isinstance(activation, nn.GELU) and activation.approximate == "none"
    ):
        name = "gelu"
    else:
        raise ValueError("only layers with the ReLU or the (exact) GELU activation can be copied")
    if not layer.self_attn.batch_first:
        raise ValueError("only batch_first=True layers can be copied (the course is batch-first)")
    return {
        "d_model": layer.self_attn.embed_dim,
        "n_heads": layer.self_attn.num_heads,
        "d_ff": layer.linear1.out_features,
        "dropout": layer.dropout.p,
        "norm_first": layer.norm_first,
        "eps": layer.norm1.eps,
        "activation": name,
    }


def _copy_torch_feed_forward_and_norms(layer: nn.Module, module: nn.Module, n_norms: int) -> None:
    with torch.no_grad():
        module.feed_forward.w_1.load_state_dict(layer.linear1.state_dict())
        module.feed_forward.w_2.load_state_dict(layer.linear2.state_dict())
        for index in range(1, n_norms + 1):
            getattr(module, f"norm_{index}").load_state_dict(
                getattr(layer, f"norm{index}").state_dict()
            )
