"""Made-up chapter entries for the tests of the instructors' page's modules
(tools/instructors_*.py): chapters small enough to check a diagram or a plan by hand."""

from __future__ import annotations

from pathlib import Path

from tools.instructors_entries import Entry
from tools.repository import Chapter


def entry(number: int, needs: tuple[int, ...] = (), part: int = 0, minutes=None) -> Entry:
    """Chapter ``number`` of part ``part``, whose opening cell links the chapters ``needs`` as
    its prerequisites and states ``minutes``: (cells, exercises), by default (30, 20)."""
    stem = f"{number:02d}_topic"
    links = ", ".join(f"[chapter {n}]({n:02d}_topic.ipynb)" for n in needs)
    cells, exercises = minutes or (30, 20)
    chapter = Chapter(
        path=Path(f"notebooks/{stem}.ipynb"),
        title=f"Topic number {number}",
        number=number,
        prerequisites=links or "None.",
        estimated_time=f"About {cells + exercises} minutes: {cells} to read and run the cells, "
        f"{exercises} for the exercises.",
    )
    return Entry(chapter, f"notebooks/{stem}", f"Part {part}", part, numbered=True)
