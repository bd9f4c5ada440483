"""From text to token ids: characters, and a tiny byte-pair encoding (chapter 12).

A language model reads integer token ids. The simplest tokenizer gives each distinct
character of a text its own id (:class:`CharTokenizer`). Byte-pair encoding (BPE; Sennrich et
al. 2016, as in Karpathy's minbpe) then learns longer tokens from the text itself
(:func:`train_bpe`): it repeatedly finds the most frequent pair of adjacent tokens and
replaces it by a new token, so that frequent words and word pieces become single tokens and
the same text needs fewer of them.

- :func:`train_bpe` learns the merges from a sequence of ids;
- :func:`apply_merges` encodes a sequence with them, merge 0 everywhere, then merge 1, …:
  the same steps training took, so it reproduces the training sequence exactly;
- :func:`expand` turns merged ids back into the base ids, the inverse of
  :func:`apply_merges`;
- :func:`merge_pair` is one merge step, what :func:`train_bpe` and :func:`apply_merges`
  repeat;
- :func:`merged_token_strings` spells out each merged token, e.g. ``"th"``, ``" the"``.

The ids of a vocabulary of ``vocab_size`` base tokens are ``0 … vocab_size − 1``; the token
made by merge ``i`` has the id ``vocab_size + i``. Sequences are 1-D, of length ``T``.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from selfattn_lib._validation import check_positive_int

#: Above this many possible pair codes, pairs are counted by sorting (``np.unique``) instead
#: of with one counter per possible pair (``np.bincount``).
_MAX_PAIR_COUNTERS = 1 << 21


@dataclass(frozen=True)
class CharTokenizer:
    """A vocabulary of single characters: character ``characters[i]`` has the id ``i``.

    Build it from a text with :meth:`from_text` (its distinct characters, sorted); there
    are no special tokens.

    Shapes
    ------
    Not an array: :meth:`encode` turns a text of ``T`` characters into ids ``(T,)`` and
    :meth:`decode` turns ids ``(T,)`` back into the text.

    Examples
    --------
    >>> tokenizer = CharTokenizer.from_text("hello")
    >>> tokenizer.characters, len(tokenizer)
    (('e', 'h', 'l', 'o'), 4)
    >>> tokenizer.encode("hole")
    array([1, 3, 2, 0])
    >>> tokenizer.decode([2, 0])
    'le'
    """

    characters: tuple[str, ...]
    # The code points in increasing order and the id of each, for encode's lookup.
    _sorted_codes: np.ndarray = field(init=False, repr=False, compare=False)
    _ids_of_sorted: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        characters = self.characters
        if isinstance(characters, str) or not isinstance(characters, Sequence):
            raise TypeError(
                f"characters must be a tuple of single characters, got {type(characters).__name__}"
            )
        characters = tuple(characters)
        for character in characters:
            if not isinstance(character, str):
                raise TypeError(
                    f"characters must hold strings, got {character!r} ({type(character).__name__})"
                )
            if len(character) != 1:
                raise ValueError(
                    f"characters must hold single characters, got {character!r} "
                    f"(length {len(character)})"
                )
        if not characters:
            raise ValueError("characters must hold at least one character")
        repeated = sorted({c for c in characters if characters.count(c) > 1})
        if repeated:
            raise ValueError(f"characters must be distinct, got {repeated} more than once")
        codes = np.array([ord(c) for c in characters], dtype=np.int64)
        order = np.argsort(codes)
        object.__setattr__(self, "characters", characters)
        object.__setattr__(self, "_sorted_codes", codes[order])
        object.__setattr__(self, "_ids_of_sorted", order.astype(np.int64))

    @classmethod
    def from_text(cls, text: str) -> CharTokenizer:
        """The tokenizer of the distinct characters of ``text``, in sorted order.

        Shapes
        ------
        ``text``: a string of ``T ≥ 1`` characters → a tokenizer with
        ``V ≤ T`` tokens.

        Examples
        --------
        >>> CharTokenizer.from_text("banana").characters
        ('a', 'b', 'n')
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        if not text:
            raise ValueError("text must hold at least one character, got ''")
        return cls(tuple(sorted(set(text))))

    def __len__(self) -> int:
        return len(self.characters)

    def encode(self, text: str) -> np.ndarray:
        """The id of each character of ``text``.

        Shapes
        ------
        ``text``: a string of ``T`` characters → int64 ids ``(T,)``.

        Examples
        --------
        >>> CharTokenizer(("a", "b")).encode("abba")
        array([0, 1, 1, 0])
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")  # (T,)
        codes = codes.astype(np.int64)
        slots = np.searchsorted(self._sorted_codes, codes)  # (T,)
        slots = np.minimum(slots, len(self._sorted_codes) - 1)
        known = self._sorted_codes[slots] == codes  # (T,)
        if not known.all():
            unknown = sorted(set(text[i] for i in np.flatnonzero(~known)[:1000]))
            shown = ", ".join(repr(c) for c in unknown[:10])
            raise ValueError(
                f"text holds characters that are not in the vocabulary: {shown}"
                + (" …" if len(unknown) > 10 else "")
            )
        return self._ids_of_sorted[slots]

    def decode(self, ids: ArrayLike) -> str:
        """The text of a sequence of ids.

        Shapes
        ------
        ``ids``: ``(T,)`` integers in ``0 … V − 1`` → a string of ``T`` characters.

        Examples
        --------
        >>> CharTokenizer(("a", "b")).decode([1, 0, 0])
        'baa'
        """
        ids = _as_ids("ids", ids, len(self))
        return "".join(map(self.characters.__getitem__, ids.tolist()))


def train_bpe(ids: ArrayLike, n_merges: int, *, vocab_size: int) -> list[tuple[int, int]]:
    """Learn up to ``n_merges`` byte-pair merges from a sequence of base token ids.

    Each round counts every pair of adjacent tokens of the current sequence (overlapping
    pairs too: ``a a a`` holds ``(a, a)`` twice, as minbpe counts with
    ``zip(ids, ids[1:])``) and picks the most frequent; of pairs with equal counts, the
    one that occurs first in the sequence. Round ``i`` gives the new token the id
    ``vocab_size + i`` and replaces every occurrence of the pair, scanning from left to
    right without overlaps (``a a a`` becomes ``(aa) a``). Training stops early, with fewer
    merges, when no pair occurs twice: a token that would be used only once is not worth its
    place in the vocabulary (minbpe would go on merging pairs that occur once).

    The rounds are vectorised: each pair is coded as ``left · size + right`` and counted at
    once (``np.bincount``), and the replacement finds every occurrence at once, taking
    every other one in a run of equal tokens.

    Shapes
    ------
    ``ids``: ``(T,)`` integers in ``0 … vocab_size − 1`` → a list of at most ``n_merges``
    pairs ``(left, right)``, in the order learned.

    Examples
    --------
    >>> train_bpe([0, 1, 0, 1, 2, 0, 1, 2], 3, vocab_size=3)  # "ababcabc"
    [(0, 1), (3, 2)]
    """
    ids = _as_ids("ids", ids, check_positive_int("vocab_size", vocab_size))
    n_merges = check_positive_int("n_merges", n_merges)
    base = vocab_size + n_merges  # larger than every id, so a pair's code is unique
    merges: list[tuple[int, int]] = []
    for round_index in range(n_merges):
        if ids.size < 2:
            break
        codes = ids[:-1] * base + ids[1:]  # (T - 1,)
        counts = _pair_counts(codes, base * base)  # (T - 1,): the count of each position's pair
        best = counts.max()
        if best < 2:
            break
        first = int(np.argmax(counts == best))  # the first position of a most frequent pair
        pair = (int(ids[first]), int(ids[first + 1]))
        ids = _replace_pair(ids, pair, vocab_size + round_index)
        merges.append(pair)
    return merges


def apply_merges(ids: ArrayLike, merges: ArrayLike, *, vocab_size: int) -> np.ndarray:
    """Encode a sequence of base ids with learned merges, in the order they were learned.

    Merge 0 replaces its pair everywhere (from left to right, without overlaps), then merge
    1 does, and so on: exactly the steps :func:`train_bpe` took, so on its own training
    sequence this gives the sequence training ended with. On any sequence, no pair of a
    merge is left at the end.

    Shapes
    ------
    ``ids``: ``(T,)`` integers in ``0 … vocab_size − 1``; ``merges``: ``(n_merges, 2)``
    pairs → int64 ids ``(T',)`` with ``T' ≤ T``.

    Examples
    --------
    >>> apply_merges([0, 1, 2, 0, 0, 0], [(0, 1), (3, 2), (0, 0)], vocab_size=3)
    array([4, 5, 0])
    """
    vocab_size = check_positive_int("vocab_size", vocab_size)
    ids = _as_ids("ids", ids, vocab_size)
    merges = _as_merges(merges, vocab_size)
    for index, (left, right) in enumerate(merges.tolist()):
        ids = _replace_pair(ids, (left, right), vocab_size + index)
    return ids


def expand(ids: ArrayLike, merges: ArrayLike, *, vocab_size: int) -> np.ndarray:
    """Turn merged tokens back into the base ids they stand for: the inverse of
    :func:`apply_merges`.

    The merges are undone from the last to the first, each merged token split into its
    pair, so ``expand(apply_merges(x, merges), merges)`` is ``x``.

    Shapes
    ------
    ``ids``: ``(T',)`` integers in ``0 … vocab_size + n_merges − 1``; ``merges``:
    ``(n_merges, 2)`` → int64 base ids ``(T,)`` with ``T ≥ T'``.

    Examples
    --------
    >>> expand([4, 5, 0], [(0, 1), (3, 2), (0, 0)], vocab_size=3)
    array([0, 1, 2, 0, 0, 0])
    """
    vocab_size = check_positive_int("vocab_size", vocab_size)
    merges = _as_merges(merges, vocab_size)
    ids = _as_ids("ids", ids, vocab_size + len(merges))
    for index in range(len(merges) - 1, -1, -1):
        merged = ids == vocab_size + index  # (T',)
        if not merged.any():
            continue
        expanded = np.repeat(ids, np.where(merged, 2, 1))  # each merged token twice
        starts = np.flatnonzero(merged) + np.arange(np.count_nonzero(merged))
        expanded[starts] = merges[index, 0]
        expanded[starts + 1] = merges[index, 1]
        ids = expanded
    return ids


def merge_pair(ids: ArrayLike, pair: tuple[int, int], new_id: int) -> np.ndarray:
    """One step of byte-pair encoding: replace each occurrence of ``pair`` by ``new_id``.

    The sequence is scanned from left to right, and a merged pair is not looked at again, so
    occurrences that overlap (in a run ``x x x`` of the pair ``(x, x)``) are merged one in
    two: ``x x x`` becomes ``(xx) x``. :func:`train_bpe` and :func:`apply_merges` are this
    step, repeated.

    Shapes
    ------
    ``ids``: ``(T,)`` non-negative integers → int64 ids ``(T − n,)``, where ``n`` is the
    number of occurrences replaced.

    Examples
    --------
    >>> merge_pair([0, 0, 0, 1, 0, 0], (0, 0), 2)
    array([2, 0, 1, 2])
    """
    new_id = _check_id("new_id", new_id)
    if not isinstance(pair, tuple | list) or len(pair) != 2:
        raise TypeError(f"pair must be a pair of token ids (left, right), got {pair!r}")
    left, right = (_check_id(f"pair[{index}]", token) for index, token in enumerate(pair))
    ids = _as_ids("ids", ids)
    return _replace_pair(ids, (left, right), new_id)


def merged_token_strings(merges: ArrayLike, tokenizer: CharTokenizer) -> list[str]:
    """The text of each merged token, for a tokenizer's characters as the base tokens.

    Shapes
    ------
    ``merges``: ``(n_merges, 2)`` → a list of ``n_merges`` strings, the token of merge ``i``
    (id ``len(tokenizer) + i``) at index ``i``.

    Examples
    --------
    >>> tokenizer = CharTokenizer((" ", "e", "h", "t"))
    >>> merged_token_strings([(3, 2), (4, 1), (0, 5)], tokenizer)
    ['th', 'the', ' the']
    """
    if not isinstance(tokenizer, CharTokenizer):
        raise TypeError(f"tokenizer must be a CharTokenizer, got {type(tokenizer).__name__}")
    vocab_size = len(tokenizer)
    merges = _as_merges(merges, vocab_size)
    strings = list(tokenizer.characters)
    for left, right in merges.tolist():
        strings.append(strings[left] + strings[right])
    return strings[vocab_size:]


# --- the vectorised steps ---


def _pair_counts(codes: np.ndarray, n_codes: int) -> np.ndarray:
    """How often the pair at each position occurs in the whole sequence (overlaps counted)."""
    if n_codes <= max(_MAX_PAIR_COUNTERS, 8 * codes.size):
        return np.bincount(codes, minlength=n_codes)[codes]
    _, inverse, counts = np.unique(codes, return_inverse=True, return_counts=True)
    return counts[inverse]


def _replace_pair(ids: np.ndarray, pair: tuple[int, int], new_id: int) -> np.ndarray:
    """Replace each occurrence of ``pair`` by ``new_id``, from left to right, no overlaps."""
    left, right = pair
    starts = (ids[:-1] == left) & (ids[1:] == right)  # (T - 1,), overlapping occurrences
    if not starts.any():
        return ids
    if left == right:
        # Occurrences overlap only inside a run of equal tokens x x x …, where consecutive
        # positions all match. Scanning from the left takes the 1st, 3rd, 5th … of each run.
        position = np.arange(starts.size)
        run_begins = starts & ~np.concatenate([[False], starts[:-1]])
        run_start = np.maximum.accumulate(np.where(run_begins, position, 0))
        starts &= (position - run_start) % 2 == 0
    at = np.flatnonzero(starts)
    replaced = ids.copy()
    replaced[at] = new_id
    return np.delete(replaced, at + 1)  # (T - len(at),)


# --- argument checks ---


def _as_ids(name: str, value: ArrayLike, n_tokens: int | None = None) -> np.ndarray:
    """``value`` as a 1-D int64 array of ids in ``0 … n_tokens − 1`` (any non-negative ids
    without ``n_tokens``)."""
    try:
        ids = np.asarray(value)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} could not be converted to an array: {error}") from None
    if ids.size == 0 and ids.dtype.kind in "fiu":
        ids = ids.astype(np.int64)  # np.asarray([]) is float64
    if ids.dtype.kind not in "iu":
        raise TypeError(f"{name} must be integer token ids, got dtype {ids.dtype}")
    if ids.ndim != 1:
        raise ValueError(f"{name} must be one sequence of token ids, shape (T,), got {ids.shape}")
    outside = (ids < 0) if n_tokens is None else (ids < 0) | (ids >= n_tokens)
    if outside.any():
        position = int(np.argmax(outside))
        allowed = "non-negative" if n_tokens is None else f"ids in 0 … {n_tokens - 1}"
        raise ValueError(f"{name} must be {allowed}: {name}[{position}] is {ids[position]}")
    return ids.astype(np.int64)


def _check_id(name: str, value: object) -> int:
    """``value`` as an int, requiring a non-negative integer (a token id)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a token id (a non-negative integer), got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be a token id (a non-negative integer), got {value}")
    return int(value)


def _as_merges(value: ArrayLike, vocab_size: int) -> np.ndarray:
    """``value`` as an ``(n_merges, 2)`` int64 array in which merge ``i`` joins ids that
    exist before it, ``0 … vocab_size + i − 1``."""
    try:
        merges = np.asarray(value)
    except (TypeError, ValueError) as error:
        raise ValueError(f"merges could not be converted to an array: {error}") from None
    if merges.size == 0 and merges.dtype.kind in "fiu":
        merges = merges.reshape(0, 2).astype(np.int64)
    if merges.dtype.kind not in "iu":
        raise TypeError(f"merges must be pairs of integer token ids, got dtype {merges.dtype}")
    if merges.ndim != 2 or merges.shape[1] != 2:
        raise ValueError(
            "merges must be a sequence of (left, right) pairs, shape (n_merges, 2), got "
            f"shape {merges.shape}"
        )
    merges = merges.astype(np.int64)
    limit = vocab_size + np.arange(len(merges))[:, None]  # (n_merges, 1): ids before merge i
    bad = (merges < 0) | (merges >= limit)
    if bad.any():
        index = int(np.argmax(bad.any(axis=1)))
        raise ValueError(
            f"merges[{index}] is {tuple(merges[index].tolist())}, but before merge {index} "
            f"only the ids 0 … {vocab_size + index - 1} exist (vocab_size = {vocab_size})"
        )
    return merges
