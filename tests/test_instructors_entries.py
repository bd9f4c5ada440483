"""The arithmetic of the chapters' stated minutes (tools/instructors_entries.py): read as
written, and shown back as written or in half hours."""

from __future__ import annotations

import pytest

from tools.instructors_entries import format_hours, format_minutes, parse_minutes


@pytest.mark.parametrize(
    "text, expected", [("30", (30, 30)), ("30–40", (30, 40)), ("5–10", (5, 10))]
)
def test_minutes_are_read_as_written(text, expected):
    assert parse_minutes(text) == expected
    assert format_minutes(expected) == text


@pytest.mark.parametrize("minutes, hours", [(30, "½"), (60, "1"), (195, "3½"), (355, "6")])
def test_hours_are_rounded_to_half_hours(minutes, hours):
    assert format_hours(minutes) == hours
