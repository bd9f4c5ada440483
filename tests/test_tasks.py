"""Tests of selfattn_lib.tasks: the date task is deterministic, its targets are the right ISO
dates, encoding and decoding are inverse, the two splits never share a date, and bad input
gets clear errors."""

from __future__ import annotations

import datetime

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from selfattn_lib import tasks
from selfattn_lib.tasks import VOCABULARY

DATES = st.dates(min_value=tasks.FIRST_DATE, max_value=tasks.LAST_DATE)


def test_the_vocabulary_starts_with_the_special_tokens():
    assert VOCABULARY.tokens[:3] == ("<pad>", "<bos>", "<eos>")
    assert (VOCABULARY.pad_id, VOCABULARY.bos_id, VOCABULARY.eos_id) == (0, 1, 2)
    assert len(VOCABULARY) == len(set(VOCABULARY.tokens)) == 42
    assert list(VOCABULARY.tokens[3:]) == sorted(VOCABULARY.tokens[3:])


def test_same_seed_same_examples_other_seed_other_examples():
    first = tasks.make_dataset(50, np.random.default_rng(7))
    again = tasks.make_dataset(50, np.random.default_rng(7))
    other = tasks.make_dataset(50, np.random.default_rng(8))
    assert first.sources == again.sources and first.targets == again.targets
    np.testing.assert_array_equal(first.src_ids, again.src_ids)
    np.testing.assert_array_equal(first.tgt_ids, again.tgt_ids)
    assert first.sources != other.sources


def test_every_target_is_the_iso_date_of_its_source():
    data = tasks.make_dataset(400, np.random.default_rng(0))
    for source, target, date, date_format in zip(
        data.sources, data.targets, data.dates, data.formats, strict=True
    ):
        python_format = {
            "d MMMM yyyy": "%d %B %Y",
            "d MMM yyyy": "%d %b %Y",
            "MMMM d, yyyy": "%B %d, %Y",
            "MMM d, yyyy": "%b %d, %Y",
        }[date_format]
        parsed = datetime.datetime.strptime(source, python_format).date()
        assert parsed == date
        assert target == date.isoformat() == parsed.strftime("%Y-%m-%d")


def test_all_formats_and_the_whole_calendar_range_occur():
    data = tasks.make_dataset(2000, np.random.default_rng(1))
    assert set(data.formats) == set(tasks.DATE_FORMATS)
    assert min(data.dates).year == 1900 and max(data.dates).year == 2099
    assert {date.month for date in data.dates} == set(range(1, 13))
    assert {date.day for date in data.dates} == set(range(1, 32))


def test_ids_are_the_padded_encodings_of_the_texts():
    data = tasks.make_dataset(100, np.random.default_rng(2))
    assert data.src_ids.shape == (100, tasks.MAX_SOURCE_LENGTH) == (100, 18)
    assert data.tgt_ids.shape == (100, tasks.MAX_TARGET_LENGTH) == (100, 11)
    assert data.src_ids.dtype == data.tgt_ids.dtype == np.int64
    for row, (source, target) in enumerate(zip(data.sources, data.targets, strict=True)):
        assert VOCABULARY.decode(data.src_ids[row]) == source
        assert VOCABULARY.decode(data.tgt_ids[row]) == target
        assert (data.src_ids[row, len(source) :] == VOCABULARY.pad_id).all()
        assert data.tgt_ids[row, len(target)] == VOCABULARY.eos_id
    assert len(data) == 100


@given(date=DATES, date_format=st.sampled_from(tasks.DATE_FORMATS))
def test_encode_decode_and_format_parse_round_trip(date, date_format):
    text = tasks.format_date(date, date_format)
    assert len(text) <= tasks.MAX_SOURCE_LENGTH
    assert VOCABULARY.decode(VOCABULARY.encode(text)) == text
    assert VOCABULARY.decode(VOCABULARY.encode(text, add_eos=True)) == text
    assert tasks.parse_date(text) == date


def test_decode_stops_at_eos_and_skips_special_tokens():
    ids = [VOCABULARY.bos_id, *VOCABULARY.encode("12"), VOCABULARY.eos_id, *VOCABULARY.encode("3")]
    assert VOCABULARY.decode(ids) == "12"
    assert VOCABULARY.decode(ids, stop_at_eos=False) == "123"
    assert VOCABULARY.decode(np.array([VOCABULARY.pad_id] * 3)) == ""


def test_the_splits_never_share_a_date():
    rng = np.random.default_rng(3)
    train = tasks.make_dataset(5000, rng)
    held_out = tasks.make_dataset(1000, rng, split="held_out")
    assert not set(train.dates) & set(held_out.dates)
    assert not any(tasks.is_held_out(date) for date in train.dates)
    assert all(tasks.is_held_out(date) for date in held_out.dates)


def test_every_tenth_day_is_held_out():
    days = [tasks.FIRST_DATE + datetime.timedelta(days=i) for i in range(1000)]
    held = [tasks.is_held_out(day) for day in days]
    assert sum(held) == 100
    first = held.index(True)
    assert all(held[i] == ((i - first) % 10 == 0) for i in range(1000))


def test_formats_can_be_restricted():
    data = tasks.make_dataset(50, np.random.default_rng(4), formats=["MMM d, yyyy"])
    assert set(data.formats) == {"MMM d, yyyy"}
    assert all("," in source for source in data.sources)


def test_years_outside_the_calendar_range_can_be_drawn():
    data = tasks.make_dataset(300, np.random.default_rng(5), split="held_out", years=(2100, 2199))
    assert {date.year for date in data.dates} <= set(range(2100, 2200))
    assert all(tasks.is_held_out(date) for date in data.dates)
    assert all(
        tasks.parse_date(source).isoformat() == target
        for source, target in zip(data.sources, data.targets, strict=True)
    )
    default = tasks.make_dataset(20, np.random.default_rng(5))
    same = tasks.make_dataset(20, np.random.default_rng(5), years=(1900, 2099))
    assert default.sources == same.sources  # the calendar range is the default


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"n": 0}, ValueError, "n must be a positive integer"),
        ({"n": 2.5}, TypeError, "n must be a positive integer"),
        ({"rng": 0}, TypeError, "rng must be a numpy.random.Generator"),
        ({"split": "test"}, ValueError, "split must be one of"),
        ({"formats": ["yyyy-MM-dd"]}, ValueError, "formats must be a non-empty selection"),
        ({"formats": []}, ValueError, "formats must be a non-empty selection"),
        ({"years": (2199, 2100)}, ValueError, "years must be a pair"),
        ({"years": (99, 2100)}, ValueError, "years must be a pair"),
        ({"years": [2100, 2199]}, ValueError, "years must be a pair"),
    ],
)
def test_make_dataset_rejects_bad_arguments(kwargs, error, message):
    arguments = {"n": 3, "rng": np.random.default_rng(0), **kwargs}
    with pytest.raises(error, match=message):
        tasks.make_dataset(**arguments)


def test_encoding_rejects_unknown_characters_and_bad_types():
    with pytest.raises(ValueError, match=r"outside the vocabulary: \['/', 'x'\]"):
        VOCABULARY.encode("x1/2")
    with pytest.raises(TypeError, match="text must be a string"):
        VOCABULARY.encode(12)
    with pytest.raises(TypeError, match="not one string"):
        VOCABULARY.encode_batch("May 1, 2026")
    with pytest.raises(ValueError, match="needs 3 tokens, more than length = 2"):
        VOCABULARY.encode_batch(["123"], length=2)
    with pytest.raises(ValueError, match="id 42 is not in the vocabulary"):
        VOCABULARY.decode([42])


def test_vocabulary_rejects_a_bad_token_list():
    with pytest.raises(ValueError, match="the first tokens must be"):
        tasks.Vocabulary(("a", "<pad>", "<bos>", "<eos>"))
    with pytest.raises(ValueError, match="distinct"):
        tasks.Vocabulary(("<pad>", "<bos>", "<eos>", "a", "a"))
    with pytest.raises(ValueError, match="one character"):
        tasks.Vocabulary(("<pad>", "<bos>", "<eos>", "ab"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("2026-11-21", "is not a date in one of the formats"),
        ("21 Novembre 2026", "is not a date in one of the formats"),
        ("21 November 26", "is not a date in one of the formats"),
        ("05 Nov 2026", "is not a date in one of the formats"),
        ("31 February 2026", "is not a date of the calendar"),
        ("", "is not a date in one of the formats"),
    ],
)
def test_parse_date_says_what_is_wrong(text, message):
    with pytest.raises(ValueError, match=message):
        tasks.parse_date(text)


def test_format_date_rejects_bad_input():
    with pytest.raises(ValueError, match="date_format must be one of"):
        tasks.format_date(datetime.date(2026, 1, 1), "yyyy")
    with pytest.raises(TypeError, match="date must be a datetime.date"):
        tasks.format_date("2026-01-01", "d MMMM yyyy")
    with pytest.raises(TypeError, match="date must be a datetime.date"):
        tasks.is_held_out(datetime.datetime(2026, 1, 1))
