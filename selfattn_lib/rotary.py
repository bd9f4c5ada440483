"""Rotary position embeddings inside attention, in PyTorch (chapter 13).

Chapter 8 derived RoPE in NumPy (:func:`selfattn_lib.positional.apply_rope`): each pair of
features of a query or key at position ``m`` is turned by the angle ``m · ω_i``, so that the
score of a query at ``m`` and a key at ``n`` depends on the positions only through
``n - m``. This module is its torch twin, the one a model calls on its queries and keys after
the split into heads (:class:`~selfattn_lib.grouped_query.GroupedQueryAttention`):

- :func:`apply_rotary` — both pair layouts, ``"half"`` (Hugging Face's ``rotate_half``,
  the default here as in most checkpoints) and ``"interleaved"`` (the RoFormer paper);
- :func:`apply_rotary_complex` — the same rotation written with complex numbers, as Meta's
  LLaMA reference code does: a pair ``(a, b)`` is the number ``a + ib`` and turning it by
  ``θ`` is multiplying it by ``e^{iθ}``.

The angles are :func:`selfattn_lib.positional.rope_angles` (one definition of the
frequencies for the whole course). Each row is rotated by its own absolute position, so a
model with a KV cache rotates the new tokens' keys at positions ``t, t + 1, …`` once, before
caching them, and never touches the cached keys again.
"""

from __future__ import annotations

import torch
from torch import Tensor

from selfattn_lib.positional import ROPE_LAYOUTS, rope_angles


def apply_rotary(
    x: Tensor, positions: Tensor, *, layout: str = "half", base: float = 10000.0
) -> Tensor:
    """Rotate each feature pair of ``x[..., t, :]`` by the angle ``positions[t] · ω_i``.

    A pair ``(a, b)`` becomes ``(a cos θ - b sin θ, a sin θ + b cos θ)``, that is
    ``x · cos + partner(x) · sin`` where ``partner`` puts ``-b`` in ``a``'s place and ``a`` in
    ``b``'s. With ``layout="half"`` pair ``i`` is features ``(i, i + D_h/2)`` and ``partner``
    is Hugging Face's ``rotate_half(x) = [-x[D_h/2:], x[:D_h/2]]``; with
    ``layout="interleaved"`` pair ``i`` is ``(2i, 2i + 1)``. The pairs and angles are those
    of :func:`selfattn_lib.positional.apply_rope`. The result has ``x``'s dtype and device,
    and gradients flow through it.

    Parameters
    ----------
    x
        Queries or keys, a floating-point tensor ``(..., T, D_h)`` with ``D_h`` even.
    positions
        The position of each of the ``T`` rows in the text, a 1-D integer tensor ``(T,)``
        (any whole numbers: only differences of positions reach the scores).
    layout
        ``"half"`` or ``"interleaved"`` (:data:`selfattn_lib.positional.ROPE_LAYOUTS`).
    base
        A finite positive number; ``ω_i = base^(-2i / D_h)``.

    Shapes
    ------
    ``x``: ``(..., T, D_h)``, ``positions``: ``(T,)`` → ``(..., T, D_h)``.

    Examples
    --------
    >>> x = torch.tensor([[1.0, 0.0, 0.0, 0.0]])  # (T, D_h) = (1, 4)
    >>> apply_rotary(x, torch.tensor([1]))  # pair (x_0, x_2) turned by 1 rad
    tensor([[0.5403, 0.0000, 0.8415, 0.0000]])
    >>> apply_rotary(x, torch.tensor([1]), layout="interleaved")  # pair (x_0, x_1)
    tensor([[0.5403, 0.8415, 0.0000, 0.0000]])
    """
    if not isinstance(layout, str):
        raise TypeError(f"layout must be a string, one of {ROPE_LAYOUTS}, got {layout!r}")
    if layout not in ROPE_LAYOUTS:
        raise ValueError(f"layout must be one of {ROPE_LAYOUTS}, got {layout!r}")
    angles = _rotary_angles(x, positions, base)  # (T, D_h / 2), float64
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)  # (T, D_h / 2)
    if layout == "half":
        half = x.shape[-1] // 2
        cos, sin = cos.repeat(1, 2), sin.repeat(1, 2)  # (T, D_h): pair i at i and i + D_h/2
        partner = torch.cat((-x[..., half:], x[..., :half]), dim=-1)  # (..., T, D_h)
    else:
        cos, sin = cos.repeat_interleave(2, -1), sin.repeat_interleave(2, -1)  # (T, D_h)
        partner = torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)  # (..., T, D_h)
    return x * cos + partner * sin  # (..., T, D_h)


def apply_rotary_complex(x: Tensor, positions: Tensor, *, base: float = 10000.0) -> Tensor:
    """The interleaved rotation of :func:`apply_rotary` with complex numbers, as in Meta's
    LLaMA code.

    Consecutive features ``(x_{2i}, x_{2i+1})`` are read as one complex number
    (``torch.view_as_complex``), multiplied by ``e^{i θ}`` with ``θ = positions[t] · ω_i``
    (``torch.polar(1, θ)``), and read back as pairs of reals (``torch.view_as_real``). As in
    that code the product is computed in float32 (float64 stays float64) and the result is
    returned in ``x``'s dtype.

    Shapes
    ------
    ``x``: ``(..., T, D_h)`` with ``D_h`` even, ``positions``: ``(T,)`` → ``(..., T, D_h)``.

    Examples
    --------
    >>> x = torch.tensor([[1.0, 0.0, 0.0, 0.0]])  # (T, D_h) = (1, 4)
    >>> apply_rotary_complex(x, torch.tensor([1]))  # 1 + 0i times e^{i · 1}
    tensor([[0.5403, 0.8415, 0.0000, 0.0000]])
    """
    angles = _rotary_angles(x, positions, base)  # (T, D_h / 2), float64
    work = x if x.dtype == torch.float64 else x.float()
    pairs = work.reshape(*x.shape[:-1], -1, 2)  # (..., T, D_h / 2, 2)
    numbers = torch.view_as_complex(pairs.contiguous())  # (..., T, D_h / 2), a_i + i b_i
    angles = angles.to(work.dtype)
    turns = torch.polar(torch.ones_like(angles), angles)  # (T, D_h / 2), e^{i θ}
    rotated = torch.view_as_real(numbers * turns)  # (..., T, D_h / 2, 2)
    return rotated.flatten(-2).to(x.dtype)  # (..., T, D_h)


def _rotary_angles(x: object, positions: object, base: float) -> Tensor:
    """Check ``x`` and ``positions``; return :func:`~selfattn_lib.positional.rope_angles`
    as a float64 tensor ``(T, D_h / 2)`` on ``x``'s device."""
    if not isinstance(x, Tensor) or not x.is_floating_point():
        raise TypeError(
            "x must be a floating-point torch.Tensor (..., T, D_h), got "
            f"{getattr(x, 'dtype', type(x).__name__)}"
        )
    if x.ndim < 2 or x.shape[-1] % 2:
        raise ValueError(
            "x must have shape (..., T, D_h) with D_h even (features are rotated in pairs), "
            f"got shape {tuple(x.shape)}"
        )
    if not isinstance(positions, Tensor) or positions.is_floating_point() or positions.is_complex():
        raise TypeError(
            "positions must be a 1-D integer torch.Tensor (T,), got "
            f"{getattr(positions, 'dtype', type(positions).__name__)}"
        )
    if positions.dtype == torch.bool:
        raise TypeError("positions must be integer positions (T,), got a boolean tensor")
    if positions.ndim != 1 or positions.shape[0] != x.shape[-2]:
        raise ValueError(
            "positions must hold one position per row of x: positions has shape "
            f"{tuple(positions.shape)}, x has shape {tuple(x.shape)} (T = {x.shape[-2]})"
        )
    angles = rope_angles(positions.cpu().numpy(), x.shape[-1], base=base)  # (T, D_h / 2)
    return torch.from_numpy(angles).to(x.device)
