"""The suggested bundles of the instructors' page (tools/instructors_bundles.py): sessions that
fit their minutes in reading order, and a whole term, one chapter a week, whose graded labs
take every checked exercise once, with its points."""

from __future__ import annotations

import re

import pytest
from made_up_entries import entry

from tools import instructors_bundles as bundles
from tools.instructors_entries import load_entries
from tools.instructors_page import PAGE
from tools.repository import published_notebooks, read_chapter


@pytest.fixture(scope="module")
def committed() -> str:
    return PAGE.read_text(encoding="utf-8")


def test_sessions_of_a_module_fit_their_minutes_and_keep_reading_order():
    entries = [entry(n, (n - 1,) if n > 1 else (), minutes=(m, 20)) for n, m in
               [(1, 40), (2, 45), (3, 30), (4, 80), (5, 20)]]  # fmt: skip
    text = bundles.modules(entries)
    sessions = re.findall(r"session \d: chapters? ([\d, and]+) \((\d+) minutes in class", text)
    assert [(names, int(minutes)) for names, minutes in sessions] == [
        ("1 and 2", 85),
        ("3", 30),
        ("4", 80),
        ("5", 20),
    ]
    assert "5. Week 3, session 1: questions" in text


# --- A whole term and its graded labs ------------------------------------------------------


def test_the_term_takes_every_chapter_once_a_week_in_reading_order(committed):
    entries = load_entries()
    numbered = [entry for entry in entries if entry.chapter.number is not None]
    weeks, labs = bundles.term_plan(entries)
    assert list(weeks) == [entry.stem for entry in numbered]
    assert list(weeks.values()) == list(range(1, len(numbered) + 1))
    assert max(weeks.values()) < bundles.TERM_WEEKS, "a last week for the appendix and a review"
    plan = bundles.term(entries)
    assert re.findall(r"^(\d+)\. Week (\d+):", plan, re.M) == [
        (str(week), str(week)) for week in range(1, bundles.TERM_WEEKS + 1)
    ]
    for week_entry in numbered:
        assert f"chapter {week_entry.chapter.number}, {{doc}}`{week_entry.doc}`." in plan
    assert f"### A whole term ({bundles.TERM_WEEKS} weeks)" in committed and plan in committed


def test_each_lab_is_handed_out_after_its_chapters_and_due_before_the_next(committed):
    weeks, labs = bundles.term_plan(load_entries())
    assert len(labs) == 5, "the template's heading says five"
    assert "### Five graded labs" in committed
    for lab, after in zip(labs, labs[1:] + [None], strict=True):
        assert lab.handed_out == max(weeks[entry.stem] for entry in lab.chapters)
        assert lab.due == lab.handed_out + 1 <= bundles.TERM_WEEKS
        assert after is None or lab.due <= after.handed_out


def test_the_labs_grade_every_checked_exercise_once_with_its_points(committed):
    """Each lab's table lists the exercises of its chapters that have a checker, with their
    :points: from the notebooks, and its total row adds them up; optional ones are bonus."""
    graded = {
        exercise.label: exercise
        for path in published_notebooks()
        for exercise in read_chapter(path).exercises
        if exercise.checker
    }
    text = bundles.labs(load_entries())
    assert text in committed
    listed = []
    blocks = re.split(r"^(?=\*\*Lab \d+ — )", text, flags=re.M)[1:]
    assert len(blocks) == len(bundles.LABS)
    for block in blocks:
        row = r"^\| \d+ \| \{ref\}`(?:[^`<]*<)?([\w-]+)>?` \| [^|]+ \| (\d+)( \(bonus\))? \|$"
        rows = re.findall(row, block, re.M)
        points = [(graded[label], int(worth), bool(bonus)) for label, worth, bonus in rows]
        for exercise, worth, bonus in points:
            assert (worth, bonus) == (exercise.points, exercise.optional), exercise.label
        required = sum(worth for _, worth, bonus in points if not bonus)
        extra = sum(worth for _, worth, bonus in points if bonus)
        total = f"| | **total** | | **{required}**" + (f" (+{extra} bonus)" if extra else "")
        assert f"{total} |" in block
        assert f"): {required} points" in block
        listed += [exercise.label for exercise, _, _ in points]
    assert sorted(listed) == sorted(graded) and len(set(listed)) == len(listed)


def test_labs_must_hold_every_numbered_chapter_in_reading_order(monkeypatch):
    entries = [entry(1), entry(2, (1,)), entry(3, (2,))]
    monkeypatch.setattr(bundles, "LABS", (("01_topic",), ("02_topic", "03_topic")))
    assert [lab.due for lab in bundles.term_plan(entries)[1]] == [2, 4]
    for labs in [(("01_topic",), ("03_topic", "02_topic")), (("01_topic", "02_topic"),)]:
        monkeypatch.setattr(bundles, "LABS", labs)
        with pytest.raises(ValueError, match="every numbered chapter once"):
            bundles.term_plan(entries)
    monkeypatch.setattr(bundles, "TERM_WEEKS", 3)
    with pytest.raises(ValueError, match="leave no week"):
        bundles.term_plan(entries)
