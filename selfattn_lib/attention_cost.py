"""What attention costs, counted rather than timed (chapter 11).

Times depend on the machine and on what else it is doing; these counts do not. The score
matrix of ``B`` sequences and ``H`` heads holds ``B · H · T_q · T_k`` numbers, and computing
attention takes ``2 · T_q · T_k · (D_k + D_v)`` floating-point operations per head: both grow
with the square of the sequence length.
"""

from __future__ import annotations

import math

from selfattn_lib._validation import check_positive_int


def score_matrix_bytes(batch: int, heads: int, t_q: int, t_k: int, bytes_per_number: int) -> int:
    """The memory of a ``(B, H, T_q, T_k)`` matrix of attention scores, in bytes.

    Shapes
    ------
    Integers only: the matrix has shape ``(batch, heads, t_q, t_k)``; ``bytes_per_number`` is
    8 for float64, 4 for float32 and 2 for float16 and bfloat16.

    Examples
    --------
    >>> score_matrix_bytes(8, 32, 2048, 2048, 4) / 2**30  # GiB, float32
    4.0
    """
    sizes = {"batch": batch, "heads": heads, "t_q": t_q, "t_k": t_k}
    count = math.prod(check_positive_int(name, value) for name, value in sizes.items())
    return count * check_positive_int("bytes_per_number", bytes_per_number)


def longest_sequence(memory_bytes: int, batch: int, heads: int, bytes_per_number: int) -> int:
    """The largest ``T`` whose ``(B, H, T, T)`` score matrix fits in ``memory_bytes``.

    ``T = ⌊√(M / (B · H · bytes))⌋``: doubling the memory buys only √2 times the length.

    Shapes
    ------
    Integers only: the matrix ``(batch, heads, T, T)`` of ``bytes_per_number``-byte numbers.

    Examples
    --------
    >>> longest_sequence(80 * 10**9, batch=8, heads=32, bytes_per_number=2)
    12500
    """
    memory_bytes = check_positive_int("memory_bytes", memory_bytes)
    per_entry = score_matrix_bytes(batch, heads, 1, 1, bytes_per_number)
    return math.isqrt(memory_bytes // per_entry)


def attention_flops(t_q: int, t_k: int, d_k: int, d_v: int) -> int:
    """Floating-point operations of one head's attention: ``Q Kᵀ`` and ``weights @ V``.

    Each product of an ``(m, n)`` and an ``(n, p)`` matrix takes ``2 · m · n · p`` operations
    (a multiplication and an addition per term), as PyTorch's ``FlopCounterMode`` counts them;
    the softmax's ``O(T_q · T_k)`` operations are not counted.

    Shapes
    ------
    Integers only: ``q`` ``(t_q, d_k)``, ``k`` ``(t_k, d_k)``, ``v`` ``(t_k, d_v)``.

    Examples
    --------
    >>> attention_flops(2048, 2048, 64, 64) / attention_flops(1024, 1024, 64, 64)
    4.0
    """
    sizes = {"t_q": t_q, "t_k": t_k, "d_k": d_k, "d_v": d_v}
    t_q, t_k, d_k, d_v = (check_positive_int(name, value) for name, value in sizes.items())
    return 2 * t_q * t_k * d_k + 2 * t_q * t_k * d_v


def tile_working_bytes(
    block_q: int, block_k: int, d_k: int, d_v: int, bytes_per_number: int
) -> dict[str, int]:
    """The memory one step of blocked attention (online softmax) works in, part by part,
    when the queries are cut into blocks too, as in FlashAttention.

    One step holds a block of ``block_q`` queries, a block of ``block_k`` keys and values,
    their ``block_q × block_k`` tile of scores, the running maximum and sum of each query
    (``2 · block_q`` numbers) and the accumulator ``block_q × d_v``. None of it depends on
    the sequence length: that is why the blocks fit in a processor's small, fast memory.

    Shapes
    ------
    Integers only: the query block ``(block_q, d_k)``, the key block ``(block_k, d_k)``, the
    value block ``(block_k, d_v)``; ``bytes_per_number`` as in :func:`score_matrix_bytes`.

    Examples
    --------
    >>> parts = tile_working_bytes(64, 64, 64, 64, 4)
    >>> parts["tile of scores"], parts["running max and sum"], sum(parts.values())
    (16384, 512, 82432)
    """
    sizes = {"block_q": block_q, "block_k": block_k, "d_k": d_k, "d_v": d_v}
    block_q, block_k, d_k, d_v = (check_positive_int(name, value) for name, value in sizes.items())
    size = check_positive_int("bytes_per_number", bytes_per_number)
    return {
        "block of queries": block_q * d_k * size,
        "block of keys and values": block_k * (d_k + d_v) * size,
        "tile of scores": block_q * block_k * size,
        "running max and sum": 2 * block_q * size,
        "accumulator": block_q * d_v * size,
    }
