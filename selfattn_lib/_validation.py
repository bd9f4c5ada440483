"""Argument checks shared by the NumPy modules (private).

Every public function converts and checks its arguments here first, so bad input fails early
with a ``ValueError`` or ``TypeError`` that names the argument and the shapes involved, instead
of a silent broadcast, a NumPy traceback from deep inside, or NaN.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike


def element(name: str, index: tuple[int, ...]) -> str:
    """Spell out one element of a named array for an error message, e.g. ``x[0, 2]``."""
    return f"{name}[{', '.join(str(int(i)) for i in index)}]" if index else name


def describe_shapes(**arrays: np.ndarray) -> str:
    """``"q has shape (2, 3), k has shape (2, 4)"`` for error messages."""
    return ", ".join(f"{name} has shape {array.shape}" for name, array in arrays.items())


def join_names(names: Iterable[str]) -> str:
    """``"q"``, ``"q and k"`` or ``"q, k and v"``."""
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def as_float_array(
    name: str, value: ArrayLike, *, layout: str | None = None, allow_neg_inf: bool = False
) -> np.ndarray:
    """Convert ``value`` to a real floating-point array and check it.

    Booleans and integers become float64; float16/32/64 keep their dtype. ``layout`` such as
    ``"(..., T_q, D_k)"`` fixes the number of dimensions (at least that many with ``...``).
    NaN and +inf are always rejected, -inf only unless ``allow_neg_inf``.
    """
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} could not be converted to an array: {error}") from None
    if array.dtype.kind in "biu":
        array = array.astype(np.float64)
    elif array.dtype.kind == "c":
        raise TypeError(f"{name} must be real, got complex dtype {array.dtype}")
    elif array.dtype.kind != "f":
        raise TypeError(f"{name} must be an array of numbers, got dtype {array.dtype}")
    if layout is not None:
        _check_layout(name, array, layout)
    if allow_neg_inf:
        bad, rule = np.isnan(array) | (array == np.inf), "NaN or +inf (-inf means weight 0)"
    else:
        bad, rule = ~np.isfinite(array), "NaN or infinity"
    if bad.any():
        index = tuple(np.argwhere(bad)[0])
        raise ValueError(
            f"{name} must not contain {rule}: {element(name, index)} is {array[index]}"
        )
    return array


def _check_layout(name: str, array: np.ndarray, layout: str) -> None:
    axes = [axis.strip() for axis in layout.strip("()").split(",") if axis.strip()]
    n_named = sum(axis != "..." for axis in axes)
    if "..." in axes:
        if array.ndim < n_named:
            raise ValueError(
                f"{name} must have shape {layout} (at least {n_named} dimensions), "
                f"got shape {array.shape}"
            )
    elif array.ndim != n_named:
        raise ValueError(f"{name} must have shape {layout}, got shape {array.shape}")


def as_bool_array(name: str, value: ArrayLike) -> np.ndarray:
    """Convert a mask to a boolean array; any other dtype is a ``TypeError``."""
    array = np.asarray(value)
    if array.dtype != np.bool_:
        raise TypeError(
            f"{name} must be a boolean array (True = may attend), got dtype {array.dtype}"
        )
    return array


def check_same_dims(what: str, part: int | slice, **arrays: np.ndarray) -> None:
    """Require ``array.shape[part]`` to be equal for all ``arrays`` (no broadcasting)."""
    if len({array.shape[part] for array in arrays.values()}) > 1:
        raise ValueError(
            f"{join_names(arrays)} must have the same {what}: {describe_shapes(**arrays)}"
        )


def check_mask_shape(mask_shape: tuple[int, ...], scores_shape: tuple[int, ...], axes: str) -> None:
    """The one rule for masks, NumPy and torch alike: a mask broadcasts to the scores' shape
    without changing it (every size is 1 or the scores' size, and no extra dimensions)."""
    fits = len(mask_shape) <= len(scores_shape) and all(
        size in (1, scores_size)
        for size, scores_size in zip(mask_shape[::-1], scores_shape[::-1], strict=False)
    )
    if not fits:
        raise ValueError(
            f"mask must broadcast to the shape of the attention scores {axes} without "
            f"changing it: mask has shape {tuple(mask_shape)}, the scores have shape "
            f"{tuple(scores_shape)}"
        )


def check_mask_for(scores_shape: tuple[int, ...], mask: ArrayLike) -> np.ndarray:
    """Check that a boolean ``mask`` broadcasts to ``scores_shape`` without changing it."""
    mask = as_bool_array("mask", mask)
    check_mask_shape(mask.shape, scores_shape, "(..., T_q, T_k)")
    return mask


def check_all_finite(what: str, result: np.ndarray) -> None:
    """Raise if ``result``, computed from finite inputs, overflowed its dtype."""
    if not np.isfinite(result).all():
        raise ValueError(
            f"{what} overflowed the range of {result.dtype} (result of shape "
            f"{np.shape(result)}): use smaller values or a wider dtype such as float64"
        )


def check_axis(axis: object, name: str, array: np.ndarray) -> int:
    """Return ``axis`` as a non-negative int, checking it is a valid axis of ``array``."""
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"axis must be an integer, got {type(axis).__name__}")
    if not -array.ndim <= axis < array.ndim:
        raise ValueError(
            f"axis {axis} is out of range for {name} with ndim {array.ndim} (shape {array.shape})"
        )
    return int(axis) % array.ndim


def check_positive_int(name: str, value: object) -> int:
    """Return ``value`` as an int, requiring a positive integer (``bool`` is not one here)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive integer, got {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value}")
    return int(value)


def check_positive_float(name: str, value: object) -> float:
    """Return ``value`` as a Python float, requiring a finite positive real number.

    A Python float (not a NumPy scalar) keeps float32 arrays float32 when multiplied by it.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a positive real number, got {value!r}")
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite positive number, got {value}")
    return value


def check_probability(name: str, value: object) -> float:
    """Return ``value`` as a float, requiring a real number in [0, 1) (a dropout rate)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a probability, a real number in [0, 1), got {value!r}")
    if not 0 <= value < 1:
        raise ValueError(f"{name} must be a probability in [0, 1), got {value!r}")
    return float(value)
