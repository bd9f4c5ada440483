"""Multi-query and grouped-query attention (chapter 13).

When a model writes one token at a time, every layer keeps the keys and values of all earlier
tokens (the KV cache of chapter 12): ``2 · L · H · D_h`` numbers per token. Multi-query
attention (Shazeer, 2019) gives all ``H`` query heads ONE shared key head and value head;
grouped-query attention (Ainslie et al., 2023) sits in between, with ``H_kv`` key/value heads
each shared by a group of ``H / H_kv`` query heads. The cache shrinks by ``H / H_kv`` and the
queries keep their ``H`` heads.

- :func:`repeat_kv` — the ``H_kv`` key/value heads repeated for the ``H`` query heads (query
  head ``h`` reads key/value head ``h // (H / H_kv)``);
- :class:`GroupedQueryAttention` — the attention module, a drop-in replacement for
  :class:`~selfattn_lib.layers.MultiHeadAttention` (``H_kv = H``) with optional rotary
  position embeddings (:mod:`selfattn_lib.rotary`) applied before the keys are cached;
- :func:`kv_cache_bytes` — the memory of a model's KV cache.
"""

from __future__ import annotations

import numbers

import torch
from torch import Tensor, nn

from selfattn_lib._validation import check_positive_float, check_positive_int, check_probability
from selfattn_lib.layers import (
    LayerCache,
    _attend,
    _check_attention_inputs,
    _check_cache,
    _init_projections,
    _split_into_heads,
)
from selfattn_lib.positional import ROPE_LAYOUTS
from selfattn_lib.rotary import apply_rotary


def repeat_kv(x: Tensor, n_rep: int) -> Tensor:
    """Repeat each key/value head ``n_rep`` times along the head axis, next to itself.

    Head ``j`` of the result is head ``j // n_rep`` of ``x``: the order of
    ``torch.repeat_interleave(x, n_rep, dim=1)``, of Llama's ``repeat_kv`` and of
    ``F.scaled_dot_product_attention(..., enable_gqa=True)``, so that consecutive query heads
    form a group. (``x.repeat(1, n_rep, 1, 1)`` tiles the heads instead, ``j % H_kv``: the
    same numbers in another order, which pairs queries with the wrong keys.) With ``n_rep = 1``
    the result is ``x`` itself.

    Shapes
    ------
    ``x``: ``(B, H_kv, T, D_h)`` → ``(B, H_kv · n_rep, T, D_h)``.

    Examples
    --------
    >>> x = torch.tensor([10.0, 20.0]).view(1, 2, 1, 1)  # two key/value heads
    >>> repeat_kv(x, 3).flatten().tolist()  # query heads 0-2 read head 0, 3-5 head 1
    [10.0, 10.0, 10.0, 20.0, 20.0, 20.0]
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"x must be a torch.Tensor (B, H_kv, T, D_h), got {type(x).__name__}")
    if x.ndim != 4:
        raise ValueError(f"x must have shape (B, H_kv, T, D_h), got shape {tuple(x.shape)}")
    n_rep = check_positive_int("n_rep", n_rep)
    if n_rep == 1:
        return x
    batch_size, n_kv_heads, n_tokens, d_head = x.shape
    grouped = (batch_size, n_kv_heads, n_rep, n_tokens, d_head)
    x = x[:, :, None].expand(grouped)  # (B, H_kv, n_rep, T, D_h), no copy yet
    return x.reshape(batch_size, n_kv_heads * n_rep, n_tokens, d_head)  # (B, H, T, D_h)


class GroupedQueryAttention(nn.Module):
    """Attention with ``H`` query heads and ``H_kv`` key/value heads, each shared by a group of
    ``H / H_kv`` consecutive query heads.

    ``n_kv_heads = n_heads`` is multi-head attention (and computes exactly what
    :class:`~selfattn_lib.layers.MultiHeadAttention` computes with the same weights),
    ``n_kv_heads = 1`` is multi-query attention, anything in between grouped-query attention.
    The projections are ``w_q``: ``D → D``, ``w_k`` and ``w_v``: ``D → H_kv · D_h`` and
    ``w_o``: ``D → D``, started as in :class:`~selfattn_lib.layers.MultiHeadAttention`
    (Xavier-uniform weights, zero biases). ``forward`` takes the same arguments, masks and
    cache as ``MultiHeadAttention.forward``, so the module can replace an
    :class:`~selfattn_lib.layers.EncoderLayer`'s ``self_attention``.

    A cache (:class:`~selfattn_lib.layers.LayerCache`) holds the keys and values with their
    ``H_kv`` heads (``H_kv / H`` of multi-head attention's bytes); they are repeated for the
    query heads (:func:`repeat_kv`) only after being read. With ``rotary`` set to a layout
    (``"half"`` or ``"interleaved"``), the queries and keys are rotated
    (:func:`~selfattn_lib.rotary.apply_rotary`) after the split into heads and before the keys
    are cached, at positions ``t + arange(T)`` where ``t`` is the number of tokens the cache
    has seen (0 without a cache). The module is then for self-attention: ``query``, ``key``
    and ``value`` are the same tokens.

    Shapes
    ------
    ``query``: ``(B, T_q, D)``, ``key`` and ``value``: ``(B, T_k, D)``, ``mask`` as for
    :class:`~selfattn_lib.layers.MultiHeadAttention` (broadcastable to ``(B, T_q, T_k)``, or
    per query head to ``(B, H, T_q, T_k)``) → ``output``: ``(B, T_q, D)`` and, when
    ``return_weights=True``, ``weights``: ``(B, H, T_q, T_k)``. Cached keys and values:
    ``(B, H_kv, t, D_h)``.

    Examples
    --------
    >>> attention = GroupedQueryAttention(d_model=8, n_heads=4, n_kv_heads=2, rotary="half")
    >>> x = torch.randn(3, 5, 8)  # (B, T, D)
    >>> output, weights = attention(x, x, x, return_weights=True)
    >>> tuple(output.shape), tuple(weights.shape), attention.w_k.out_features
    ((3, 5, 8), (3, 4, 5, 5), 4)
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        n_kv_heads: int,
        *,
        rotary: str | None = None,
        rope_base: float = 10000.0,
        bias: bool = True,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        self.n_heads = check_positive_int("n_heads", n_heads)
        self.n_kv_heads = check_positive_int("n_kv_heads", n_kv_heads)
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model must be divisible by n_heads: d_model = {d_model}, n_heads = {n_heads}"
            )
        if self.n_heads % self.n_kv_heads:
            raise ValueError(
                "n_kv_heads must divide n_heads (each key/value head serves a group of query "
                f"heads): n_heads = {n_heads}, n_kv_heads = {n_kv_heads}"
            )
        self.d_head = self.d_model // self.n_heads
        if rotary is not None and not isinstance(rotary, str):
            raise TypeError(f"rotary must be None or one of {ROPE_LAYOUTS}, got {rotary!r}")
        if rotary is not None and rotary not in ROPE_LAYOUTS:
            raise ValueError(f"rotary must be None or one of {ROPE_LAYOUTS}, got {rotary!r}")
        if rotary is not None and self.d_head % 2:
            raise ValueError(
                "rotary needs an even head size (features are rotated in pairs): "
                f"D_h = d_model / n_heads = {self.d_head}"
            )
        self.rotary = rotary
        self.rope_base = check_positive_float("rope_base", rope_base)
        d_kv = self.n_kv_heads * self.d_head
        self.w_q = nn.Linear(self.d_model, self.d_model, bias=bias)
        self.w_k = nn.Linear(self.d_model, d_kv, bias=bias)
        self.w_v = nn.Linear(self.d_model, d_kv, bias=bias)
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
        if cache is not None:
            cache = _check_cache(cache)
        q = _split_into_heads(self.w_q(query), self.n_heads)  # (B, H, T_q, D_h)
        k = _split_into_heads(self.w_k(key), self.n_kv_heads)  # (B, H_kv, T_k, D_h)
        v = _split_into_heads(self.w_v(value), self.n_kv_heads)  # (B, H_kv, T_k, D_h)
        if self.rotary is not None:
            if query.shape[1] != key.shape[1]:
                raise ValueError(
                    "with rotary positions the module is for self-attention: query, key and "
                    f"value must have the same length, got query of shape {tuple(query.shape)} "
                    f"and key of shape {tuple(key.shape)}"
                )
            start = 0 if cache is None else cache.length  # the position of the first new token
            positions = torch.arange(start, start + query.shape[1], device=query.device)  # (T,)
            q = apply_rotary(q, positions, layout=self.rotary, base=self.rope_base)
            k = apply_rotary(k, positions, layout=self.rotary, base=self.rope_base)
        if cache is not None:  # the earlier tokens' keys and values come first
            k, v = cache.extend(k, v)  # (B, H_kv, t + T_k, D_h)
        n_rep = self.n_heads // self.n_kv_heads
        k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)  # (B, H, t + T_k, D_h)
        merged, weights = _attend(q, k, v, mask, self.dropout, return_weights=return_weights)
        output = self.w_o(merged)  # (B, T_q, D)
        return (output, weights) if return_weights else output


def kv_cache_bytes(
    n_layers: int,
    n_kv_heads: int,
    d_head: int,
    n_tokens: int,
    *,
    batch_size: int = 1,
    bytes_per_number: int = 2,
) -> int:
    """The bytes of a KV cache: ``2 · L · B · H_kv · D_h · t · bytes_per_number``.

    Every layer keeps a key and a value of ``H_kv · D_h`` numbers for each of the ``t`` tokens
    of each of the ``B`` sequences. ``bytes_per_number`` is 2 for the 16-bit numbers
    (float16, bfloat16) that models are usually served with, 4 for float32. With
    ``n_kv_heads = H`` this is multi-head attention's cache, ``2 · L · B · D · t`` numbers.

    Shapes
    ------
    Sizes (``L``, ``H_kv``, ``D_h``, ``t``; ``t`` may be 0) → one int, in bytes.

    Examples
    --------
    >>> gqa = kv_cache_bytes(80, 8, 128, 4096)  # Llama 2 70B: 8 key/value heads, 4096 tokens
    >>> mha = kv_cache_bytes(80, 64, 128, 4096)  # the same model with 64 key/value heads
    >>> gqa / 2**30, mha / 2**30  # GiB
    (1.25, 10.0)
    """
    if isinstance(n_tokens, bool) or not isinstance(n_tokens, numbers.Integral):
        raise TypeError(f"n_tokens must be a whole number ≥ 0, got {n_tokens!r}")
    if n_tokens < 0:
        raise ValueError(f"n_tokens must be a whole number ≥ 0, got {n_tokens}")
    sizes = [
        check_positive_int(name, value)
        for name, value in (
            ("n_layers", n_layers),
            ("n_kv_heads", n_kv_heads),
            ("d_head", d_head),
            ("batch_size", batch_size),
            ("bytes_per_number", bytes_per_number),
        )
    ]
    n_layers, n_kv_heads, d_head, batch_size, bytes_per_number = sizes
    return 2 * n_layers * batch_size * n_kv_heads * d_head * int(n_tokens) * bytes_per_number
