"""Sliding-window attention and attention sinks (chapter 13).

Causal attention lets the query at position ``p`` read every key at ``s ≤ p``: the cost of
one step, and the memory of the KV cache, grow with the length of the text. A *sliding window*
keeps only the ``window`` most recent keys, the query's own included: ``p - s < window``
(Longformer, Beltagy et al. 2020; Mistral 7B, Jiang et al. 2023). Each layer then reads
a fixed number of keys and the cache holds at most ``window - 1`` of them between steps.
Information still travels further than the window: a token's output at layer ``l`` already
mixes what its window saw at layer ``l - 1``, so after ``L`` layers the output at ``p``
can depend on tokens up to ``L · (window - 1)`` positions back.

*Attention sinks* (Xiao et al. 2024, "Efficient Streaming Language Models with Attention
Sinks"): trained language models put much of their attention weight on the first tokens of
a text, whatever those tokens are: a query's weights must sum to one, and the first tokens,
visible to every query, are where the model learns to put weight it does not need.
Dropping those tokens when the window slides past them changes every later output, and
the model degrades; keeping the first ``n_sinks`` tokens visible to every query restores
it. The mask rule is then: ``s ≤ p`` and (``p - s < window`` or ``s < n_sinks``).

- :func:`window_mask` — the rule for any query and key positions (a cache's keys included);
- :func:`sliding_window_mask` — the ``(T, T)`` mask of one sequence;
- :class:`WindowCache` — a :class:`~selfattn_lib.layers.LayerCache` that evicts the keys
  and values no later query can see, so its memory stops growing.

Libraries count the window differently: FlashAttention's ``window_size=(left, right)``
counts the keys *before* and after the query, so this module's ``window`` is ``left + 1``
with ``right = 0``. Positions are the tokens' positions in the text. With rotary positions
the keys are cached already rotated at those positions, so a sink's distance to the query
keeps growing; StreamingLLM instead numbers the positions inside the cache, which needs the
keys rotated after reading them from the cache.
"""

from __future__ import annotations

import numbers

import torch
from torch import Tensor

from selfattn_lib._validation import check_positive_int
from selfattn_lib.layers import LayerCache


def window_mask(
    query_positions: Tensor, key_positions: Tensor, window: int, *, n_sinks: int = 0
) -> Tensor:
    """Which keys each query may attend to under a sliding window with attention sinks.

    The query at position ``p`` may attend the key at position ``s`` if and only if
    ``s ≤ p`` and (``p - s < window`` or ``s < n_sinks``): ``window`` counts the query itself
    (``window=1`` sees only itself), and the first ``n_sinks`` tokens of the text stay
    visible to every later query. A ``window`` at least as long as the text gives the
    causal mask.

    Shapes
    ------
    ``query_positions``: ``(T_q,)`` and ``key_positions``: ``(T_k,)`` integers ≥ 0 →
    boolean ``(T_q, T_k)`` (True = may attend), on ``query_positions``' device.

    Examples
    --------
    >>> window_mask(torch.arange(5), torch.arange(5), 2, n_sinks=1).int()
    tensor([[1, 0, 0, 0, 0],
            [1, 1, 0, 0, 0],
            [1, 1, 1, 0, 0],
            [1, 0, 1, 1, 0],
            [1, 0, 0, 1, 1]], dtype=torch.int32)
    >>> window_mask(torch.tensor([9]), torch.tensor([0, 7, 8, 9]), 3).int()  # one new query
    tensor([[0, 1, 1, 1]], dtype=torch.int32)
    """
    query_positions = _check_positions("query_positions", query_positions, "(T_q,)")
    key_positions = _check_positions("key_positions", key_positions, "(T_k,)")
    window = check_positive_int("window", window)
    n_sinks = _check_count("n_sinks", n_sinks)
    key_positions = key_positions.to(query_positions.device)
    offsets = query_positions[:, None] - key_positions[None, :]  # (T_q, T_k): p - s
    is_sink = key_positions[None, :] < n_sinks  # (1, T_k)
    return (offsets >= 0) & ((offsets < window) | is_sink)  # (T_q, T_k)


def sliding_window_mask(n_tokens: int, window: int, *, n_sinks: int = 0) -> Tensor:
    """The sliding-window mask of one sequence of ``n_tokens`` tokens (:func:`window_mask`
    with the positions ``0 … T - 1`` for both queries and keys).

    Shapes
    ------
    ``n_tokens`` (``T``) → boolean ``(T, T)``; each row ``p`` holds ``min(p + 1, window)``
    recent keys plus the sinks before them.

    Examples
    --------
    >>> sliding_window_mask(4, 2).int()
    tensor([[1, 0, 0, 0],
            [1, 1, 0, 0],
            [0, 1, 1, 0],
            [0, 0, 1, 1]], dtype=torch.int32)
    """
    positions = torch.arange(check_positive_int("n_tokens", n_tokens))  # (T,)
    return window_mask(positions, positions, window, n_sinks=n_sinks)  # (T, T)


class WindowCache(LayerCache):
    """A :class:`~selfattn_lib.layers.LayerCache` for sliding-window attention: it keeps
    only the keys and values that a later query can still see.

    :meth:`extend` returns the keys and values held so far followed by the new ones (all
    that the new queries, masked with :func:`window_mask` at :meth:`key_positions`, may
    need), then evicts the rest: it keeps the sinks (positions ``< n_sinks``) and the
    positions ``≥ length - window + 1``, at most ``n_sinks + window - 1`` keys. Its memory
    stops growing once the window is full, however long the text. ``length`` counts every
    token seen (the position of the next one), not the keys held.

    This version copies the kept keys after each step, which keeps the code short; a
    production cache writes into a fixed buffer in place (Mistral's "rolling buffer" stores
    position ``i`` in slot ``i mod window``).

    Shapes
    ------
    ``keys`` and ``values``: ``(B, H, n_held, D_h)`` with
    ``n_held ≤ n_sinks + window - 1`` (``None`` before the first :meth:`extend`);
    ``positions``: ``(n_held,)``.

    Examples
    --------
    >>> cache = WindowCache(window=3, n_sinks=1)
    >>> for _ in range(6):  # one token at a time
    ...     keys, values = cache.extend(torch.zeros(1, 2, 1, 4), torch.zeros(1, 2, 1, 4))
    >>> tuple(keys.shape), cache.length, cache.positions.tolist()
    ((1, 2, 4, 4), 6, [0, 4, 5])
    >>> cache.key_positions(2).tolist()  # what the next extend with 2 tokens returns
    [0, 4, 5, 6, 7]
    """

    def __init__(self, window: int, *, n_sinks: int = 0) -> None:
        super().__init__()
        self.window = check_positive_int("window", window)
        self.n_sinks = _check_count("n_sinks", n_sinks)
        self._length = 0
        self._positions = torch.zeros(0, dtype=torch.long)  # (n_held,)

    @property
    def length(self) -> int:
        """How many tokens the cache has seen: the position of the next token."""
        return self._length

    @property
    def positions(self) -> Tensor:
        """The positions of the keys held, in order: a LongTensor ``(n_held,)``."""
        return self._positions.clone()

    def key_positions(self, n_new: int) -> Tensor:
        """The positions of the keys that the next :meth:`extend` with ``n_new`` tokens
        returns: the positions held, then ``length, …, length + n_new - 1``.

        Shapes
        ------
        ``n_new`` → a LongTensor ``(n_held + n_new,)``.
        """
        n_new = _check_count("n_new", n_new)
        new = torch.arange(self._length, self._length + n_new, device=self._positions.device)
        return torch.cat([self._positions, new])  # (n_held + n_new,)

    def extend(self, keys: Tensor, values: Tensor) -> tuple[Tensor, Tensor]:
        """Append new keys and values; return everything held before plus the new ones, then
        keep only the sinks and the last ``window - 1`` tokens.

        Shapes
        ------
        ``keys``, ``values``: ``(B, H, T, D_h)`` → both ``(B, H, n_held + T, D_h)``,
        at the positions :meth:`key_positions` ``(T)`` gave.
        """
        # LayerCache checks the input and concatenates: (B, H, n_held + T, D_h) each.
        all_keys, all_values = super().extend(keys, values)
        n_new = all_keys.shape[2] - self._positions.shape[0]
        positions = self.key_positions(n_new).to(all_keys.device)  # (n_held + T,)
        self._length += n_new
        # A later query sits at p ≥ length and sees p - s < window: s ≥ length - window + 1.
        oldest_visible = self._length - self.window + 1
        keep = (positions < self.n_sinks) | (positions >= oldest_visible)  # (n_held + T,)
        self.keys = all_keys[:, :, keep]  # (B, H, n_kept, D_h)
        self.values = all_values[:, :, keep]  # (B, H, n_kept, D_h)
        self._positions = positions[keep]  # (n_kept,)
        return all_keys, all_values


def _check_positions(name: str, positions: object, layout: str) -> Tensor:
    is_integer = isinstance(positions, Tensor) and not (
        positions.is_floating_point() or positions.is_complex() or positions.dtype == torch.bool
    )
    if not is_integer:
        raise TypeError(
            f"{name} must be a 1-D integer torch.Tensor {layout} of token positions, got "
            f"{getattr(positions, 'dtype', type(positions).__name__)}"
        )
    if positions.ndim != 1:
        raise ValueError(f"{name} must have shape {layout}, got shape {tuple(positions.shape)}")
    if positions.numel() and positions.device.type != "meta" and positions.min() < 0:
        raise ValueError(f"{name} must be positions ≥ 0, got {int(positions.min())}")
    return positions


def _check_count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a whole number ≥ 0, got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be a whole number ≥ 0, got {value}")
    return int(value)
