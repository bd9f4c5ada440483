"""A synthetic sequence-to-sequence task made in code: rewriting dates (chapter 10).

The task: read a date written for people — ``"21 November 2026"``, ``"21 Nov 2026"``,
``"November 21, 2026"`` or ``"Nov 21, 2026"`` — and write it in the ISO 8601 form
``"2026-11-21"``. Every example is generated from a calendar date, so there is nothing to
download and the right answer is known exactly (:meth:`datetime.date.isoformat`). The output
needs the input *reordered* (the year moves to the front, the day to the back) and the month
*translated* into digits, so a model's cross-attention has to learn where to look.

Text is split into characters. One :class:`Vocabulary` serves the source and the target: the
special tokens ``<pad>`` (id 0), ``<bos>`` (beginning of sequence) and ``<eos>`` (end of
sequence), then every character the dates use.

Dates from 1 January 1900 to 31 December 2099 are split once and for all into a training
part and a held-out part (:func:`is_held_out`: every tenth day), so a held-out date is never
seen in training, in any format. ``make_dataset(..., years=(2100, 2199))`` draws its days from
other years instead: years that a model trained on the calendar range has never seen.

NumPy and the standard library only; importing this module never imports torch.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from selfattn_lib._validation import check_positive_int

PAD, BOS, EOS = "<pad>", "<bos>", "<eos>"
SPECIAL_TOKENS: tuple[str, ...] = (PAD, BOS, EOS)

MONTHS: tuple[str, ...] = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)

# The four ways a date is written in the source, named by the pattern of its parts:
# d = day without a leading zero, MMMM = month name, MMM = its first three letters, yyyy = year.
DATE_FORMATS: tuple[str, ...] = ("d MMMM yyyy", "d MMM yyyy", "MMMM d, yyyy", "MMM d, yyyy")

FIRST_DATE = datetime.date(1900, 1, 1)
LAST_DATE = datetime.date(2099, 12, 31)
SPLITS: tuple[str, ...] = ("train", "held_out")

# The longest source ("September 30, 2026") and target ("2026-09-30" and <eos>).
MAX_SOURCE_LENGTH = max(len(f"{month} 30, 2026") for month in MONTHS)
MAX_TARGET_LENGTH = len("2026-09-30") + 1


@dataclass(frozen=True)
class Vocabulary:
    """Tokens and their ids: the special tokens first (``<pad>`` = 0), then characters.

    Shapes
    ------
    Not an array: ``len(vocabulary)`` tokens with ids ``0 … len - 1``.

    Examples
    --------
    >>> vocabulary = Vocabulary.from_characters("ab")
    >>> vocabulary.tokens, vocabulary.pad_id, vocabulary.bos_id, vocabulary.eos_id
    (('<pad>', '<bos>', '<eos>', 'a', 'b'), 0, 1, 2)
    """

    tokens: tuple[str, ...]

    def __post_init__(self) -> None:
        if isinstance(self.tokens, str) or not all(isinstance(t, str) for t in self.tokens):
            raise TypeError(f"tokens must be a tuple of strings, got {self.tokens!r}")
        if tuple(self.tokens[:3]) != SPECIAL_TOKENS:
            raise ValueError(f"the first tokens must be {SPECIAL_TOKENS}, got {self.tokens[:3]}")
        if len(set(self.tokens)) != len(self.tokens):
            raise ValueError("the tokens of a vocabulary must be distinct")
        if any(len(token) != 1 for token in self.tokens[3:]):
            raise ValueError("every token after the special tokens must be one character")

    @classmethod
    def from_characters(cls, characters: Iterable[str]) -> Vocabulary:
        """The vocabulary of the special tokens and the distinct ``characters``, sorted.

        Shapes
        ------
        ``characters``: any iterable of single characters → ``3 + (number distinct)`` tokens.

        Examples
        --------
        >>> len(Vocabulary.from_characters("banana"))  # <pad>, <bos>, <eos>, a, b, n
        6
        """
        if not isinstance(characters, Iterable):
            raise TypeError(f"characters must be an iterable of characters, got {characters!r}")
        return cls((*SPECIAL_TOKENS, *sorted(set(characters))))

    @property
    def pad_id(self) -> int:
        return self.tokens.index(PAD)

    @property
    def bos_id(self) -> int:
        return self.tokens.index(BOS)

    @property
    def eos_id(self) -> int:
        return self.tokens.index(EOS)

    def __len__(self) -> int:
        return len(self.tokens)

    def encode(self, text: str, *, add_eos: bool = False) -> list[int]:
        """The ids of the characters of ``text`` (and of ``<eos>`` if ``add_eos``).

        Shapes
        ------
        ``text`` of ``T`` characters → ``T`` ids (``T + 1`` with ``add_eos``).

        Examples
        --------
        >>> VOCABULARY.decode(VOCABULARY.encode("May 1, 2026"))
        'May 1, 2026'
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        index = {token: i for i, token in enumerate(self.tokens)}
        unknown = sorted({character for character in text if character not in index})
        if unknown:
            known = "".join(self.tokens[3:])
            raise ValueError(
                f"text {text!r} contains characters outside the vocabulary: {unknown}; "
                f"the known characters are {known!r}"
            )
        ids = [index[character] for character in text]
        return [*ids, self.eos_id] if add_eos else ids

    def encode_batch(
        self, texts: Sequence[str], *, add_eos: bool = False, length: int | None = None
    ) -> np.ndarray:
        """Encode several texts and pad them with ``<pad>`` (id 0) to one length.

        Shapes
        ------
        ``texts``: ``B`` strings → ``(B, T)`` int64, ``T`` = ``length`` or the longest.

        Examples
        --------
        >>> VOCABULARY.encode_batch(["12", "3"], add_eos=True).tolist()
        [[7, 8, 2], [9, 2, 0]]
        """
        if isinstance(texts, str):
            raise TypeError("texts must be a sequence of strings, not one string")
        encoded = [self.encode(text, add_eos=add_eos) for text in texts]
        longest = max((len(ids) for ids in encoded), default=0)
        if length is None:
            length = max(longest, 1)
        length = check_positive_int("length", length)
        if longest > length:
            raise ValueError(f"a text needs {longest} tokens, more than length = {length}")
        batch = np.full((len(encoded), length), self.pad_id, dtype=np.int64)  # (B, T)
        for row, ids in enumerate(encoded):
            batch[row, : len(ids)] = ids
        return batch

    def decode(self, ids: Iterable[int], *, stop_at_eos: bool = True) -> str:
        """The text of ``ids``: special tokens are left out, and with ``stop_at_eos``
        everything from the first ``<eos>`` on.

        Shapes
        ------
        ``ids``: ``T`` ids (a list, or a 1-D array or tensor) → a string.

        Examples
        --------
        >>> VOCABULARY.decode([1, 7, 8, 2, 9])  # <bos> 1 2 <eos> 3
        '12'
        """
        characters = []
        for token_id in ids:
            token_id = int(token_id)
            if not 0 <= token_id < len(self.tokens):
                raise ValueError(
                    f"id {token_id} is not in the vocabulary (ids 0 … {len(self.tokens) - 1})"
                )
            if token_id == self.eos_id and stop_at_eos:
                break
            if token_id >= len(SPECIAL_TOKENS):
                characters.append(self.tokens[token_id])
        return "".join(characters)


def format_date(date: datetime.date, date_format: str) -> str:
    """Write ``date`` in one of the :data:`DATE_FORMATS`.

    Shapes
    ------
    Not an array: a date → a string of at most :data:`MAX_SOURCE_LENGTH` characters.

    Examples
    --------
    >>> day = datetime.date(2026, 11, 21)
    >>> [format_date(day, date_format) for date_format in DATE_FORMATS]
    ['21 November 2026', '21 Nov 2026', 'November 21, 2026', 'Nov 21, 2026']
    """
    date = _check_date(date)
    month = MONTHS[date.month - 1]
    day, year = str(date.day), f"{date.year:04d}"
    texts = {
        "d MMMM yyyy": f"{day} {month} {year}",
        "d MMM yyyy": f"{day} {month[:3]} {year}",
        "MMMM d, yyyy": f"{month} {day}, {year}",
        "MMM d, yyyy": f"{month[:3]} {day}, {year}",
    }
    if date_format not in texts:
        raise ValueError(f"date_format must be one of {DATE_FORMATS}, got {date_format!r}")
    return texts[date_format]


def parse_date(text: str) -> datetime.date:
    """Read a date written in one of the :data:`DATE_FORMATS` (the inverse of
    :func:`format_date`); anything else is a ``ValueError`` that says what was expected.

    Shapes
    ------
    Not an array: a string → a date.

    Examples
    --------
    >>> parse_date("Nov 21, 2026").isoformat()
    '2026-11-21'
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    words = text.split(" ")
    months = {name: number for number, name in enumerate(MONTHS, start=1)}
    months.update({name[:3]: number for name, number in list(months.items())})
    if len(words) == 3 and words[1].endswith(","):  # "November 21, 2026"
        month_word, day_word, year_word = words[0], words[1][:-1], words[2]
    elif len(words) == 3:  # "21 November 2026"
        day_word, month_word, year_word = words
    else:
        day_word = month_word = year_word = ""
    valid_parts = (
        month_word in months
        and day_word.isdigit()
        and not day_word.startswith("0")
        and len(year_word) == 4
        and year_word.isdigit()
    )
    if not valid_parts:
        raise ValueError(
            f"text {text!r} is not a date in one of the formats {DATE_FORMATS}, "
            "e.g. '21 November 2026', '21 Nov 2026', 'November 21, 2026' or 'Nov 21, 2026'"
        )
    try:
        return datetime.date(int(year_word), months[month_word], int(day_word))
    except ValueError as error:
        raise ValueError(f"text {text!r} is not a date of the calendar: {error}") from None


def is_held_out(date: datetime.date) -> bool:
    """Whether ``date`` belongs to the held-out part: every tenth day, counted from
    1 January of the year 1 (``date.toordinal()`` divisible by 10).

    Shapes
    ------
    Not an array: a date → a bool.

    Examples
    --------
    >>> is_held_out(datetime.date(2026, 11, 20)), is_held_out(datetime.date(2026, 11, 21))
    (True, False)
    """
    return _check_date(date).toordinal() % 10 == 0


@dataclass(frozen=True)
class DateDataset:
    """Examples of the date task: texts, dates, and the token ids a model reads and writes.

    ``src_ids`` holds the source characters; ``tgt_ids`` the target characters followed by
    ``<eos>``: what the decoder must write. (The decoder *reads* the target shifted right,
    ``<bos>`` first: see :func:`selfattn_lib.training.shift_right`.)

    Shapes
    ------
    ``n`` examples: ``sources``, ``targets``, ``dates``, ``formats`` of length ``n``;
    ``src_ids``: ``(n, T_src)`` with ``T_src`` = :data:`MAX_SOURCE_LENGTH`; ``tgt_ids``:
    ``(n, T_tgt)`` with ``T_tgt`` = :data:`MAX_TARGET_LENGTH`; both int64, padded with 0.

    Examples
    --------
    >>> data = make_dataset(2, np.random.default_rng(0))
    >>> data.src_ids.shape, data.tgt_ids.shape
    ((2, 18), (2, 11))
    """

    sources: tuple[str, ...]
    targets: tuple[str, ...]
    dates: tuple[datetime.date, ...]
    formats: tuple[str, ...]
    src_ids: np.ndarray
    tgt_ids: np.ndarray

    def __len__(self) -> int:
        return len(self.sources)


def make_dataset(
    n: int,
    rng: np.random.Generator,
    *,
    split: str = "train",
    formats: Sequence[str] = DATE_FORMATS,
    vocabulary: Vocabulary | None = None,
    years: tuple[int, int] | None = None,
) -> DateDataset:
    """``n`` random examples of the date task from one part of the calendar split.

    Each example draws a day uniformly between :data:`FIRST_DATE` and :data:`LAST_DATE`
    among the days of ``split`` (``"train"`` or ``"held_out"``, see :func:`is_held_out`)
    and one of ``formats`` uniformly; the target is the ISO form ``yyyy-mm-dd``. The same
    ``rng`` state gives the same examples. ``years = (first, last)`` draws the days from 1
    January of ``first`` to 31 December of ``last`` instead (four-digit years, 1000 … 9999),
    e.g. years outside the calendar range, which training never sees.

    Shapes
    ------
    ``n`` → a :class:`DateDataset` with ``src_ids`` ``(n, 18)`` and ``tgt_ids`` ``(n, 11)``.

    Examples
    --------
    >>> data = make_dataset(3, np.random.default_rng(0))
    >>> data.sources[0], data.targets[0]
    ('15 Feb 2070', '2070-02-15')
    >>> VOCABULARY.decode(data.tgt_ids[0])
    '2070-02-15'
    >>> make_dataset(1, np.random.default_rng(0), years=(2100, 2199)).dates[0].year
    2185
    """
    n = check_positive_int("n", n)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"rng must be a numpy.random.Generator (np.random.default_rng(seed)), "
            f"got {type(rng).__name__}"
        )
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    formats = tuple(formats)
    if not formats or any(date_format not in DATE_FORMATS for date_format in formats):
        raise ValueError(f"formats must be a non-empty selection of {DATE_FORMATS}, got {formats}")
    vocabulary = VOCABULARY if vocabulary is None else vocabulary
    first_date, last_date = FIRST_DATE, LAST_DATE
    if years is not None:
        valid = (
            isinstance(years, tuple)
            and len(years) == 2
            and all(isinstance(y, int) and not isinstance(y, bool) for y in years)
            and 1000 <= years[0] <= years[1] <= 9999
        )
        if not valid:
            raise ValueError(
                f"years must be a pair (first, last) of four-digit years, first <= last, "
                f"got {years!r}"
            )
        first_date, last_date = datetime.date(years[0], 1, 1), datetime.date(years[1], 12, 31)

    first, last = first_date.toordinal(), last_date.toordinal()
    ordinals = np.arange(first, last + 1)  # every day of the calendar range
    in_split = (ordinals % 10 == 0) == (split == "held_out")
    chosen = rng.choice(ordinals[in_split], size=n)  # (n,)
    format_index = rng.integers(len(formats), size=n)  # (n,)
    dates = tuple(datetime.date.fromordinal(int(ordinal)) for ordinal in chosen)
    chosen_formats = tuple(formats[i] for i in format_index)
    sources = tuple(format_date(d, f) for d, f in zip(dates, chosen_formats, strict=True))
    targets = tuple(date.isoformat() for date in dates)
    return DateDataset(
        sources=sources,
        targets=targets,
        dates=dates,
        formats=chosen_formats,
        src_ids=vocabulary.encode_batch(sources, length=MAX_SOURCE_LENGTH),  # (n, T_src)
        tgt_ids=vocabulary.encode_batch(targets, add_eos=True, length=MAX_TARGET_LENGTH),
    )


def _check_date(date: object) -> datetime.date:
    if not isinstance(date, datetime.date) or isinstance(date, datetime.datetime):
        raise TypeError(f"date must be a datetime.date, got {type(date).__name__}")
    return date


# Every character a source or a target can contain: digits, "-", " ", "," and the letters
# of the month names.
VOCABULARY = Vocabulary.from_characters("0123456789-, " + "".join(MONTHS))
