"""The published notebooks as the instructors' page reads them: one :class:`Entry` per notebook,
in the order of ``_toc.yml``, with its part; the arithmetic of their stated minutes; and how
the page's prose names chapters and exercises."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tools.repository import ROOT, Chapter, Exercise, load_toc, published_notebooks, read_chapter


@dataclass
class Entry:
    """A published notebook with the toc part that holds it."""

    chapter: Chapter
    file: str  # as in _toc.yml: "notebooks/01_dot_product_similarity"
    part: str
    part_index: int
    numbered: bool

    @property
    def stem(self) -> str:
        return self.chapter.stem

    @property
    def name(self) -> str:
        """How prose refers to it: "chapter 3", or the title of an unnumbered notebook."""
        number = self.chapter.number
        return f"chapter {number}" if number is not None else self.chapter.title

    @property
    def short(self) -> str:
        """The label of its box in the diagram and its row in tables: "3" or "A"."""
        number = self.chapter.number
        return str(number) if number is not None else "–"

    @property
    def doc(self) -> str:
        """The target of a ``{doc}`` link from ``book/``."""
        return posixpath.relpath(self.file, "book")

    @property
    def html(self) -> str:
        """The chapter's page, relative to ``book/instructors.html``."""
        return self.doc + ".html"

    def minutes(self, part: str) -> tuple[int, int] | None:
        stated = self.chapter.minutes
        return parse_minutes(stated[part]) if stated else None


def parse_minutes(text: str) -> tuple[int, int]:
    """ "30–40" -> (30, 40), "25" -> (25, 25)."""
    low, _, high = text.partition("–")
    return int(low), int(high or low)


def format_minutes(span: tuple[int, int] | None) -> str:
    if span is None:
        return "—"
    low, high = span
    return f"{low}" if low == high else f"{low}–{high}"


def with_unit(span: tuple[int, int] | None) -> str:
    return f"{format_minutes(span)} min" if span else "—"


def in_minutes(span: tuple[int, int] | None) -> str:
    return f"{format_minutes(span)} minutes"


def total_minutes(spans: Iterable[tuple[int, int] | None]) -> tuple[int, int] | None:
    spans = [span for span in spans if span]
    if not spans:
        return None
    return sum(low for low, _ in spans), sum(high for _, high in spans)


def format_hours(minutes: int) -> str:
    """Minutes as hours, to the nearest half hour: 195 -> "3½"."""
    halves = max(1, int(minutes / 30 + 0.5))
    whole, half = divmod(halves, 2)
    return f"{whole or ''}{'½' if half else ''}" if whole or half else "0"


def join_names(names: Sequence[str]) -> str:
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def chapters_phrase(entries: Sequence[Entry]) -> str:
    """ "chapters 1 and 2", "chapter 3", or titles for unnumbered notebooks."""
    numbers = [str(e.chapter.number) for e in entries if e.chapter.number is not None]
    others = [e.chapter.title for e in entries if e.chapter.number is None]
    parts = []
    if numbers:
        parts.append(("chapter " if len(numbers) == 1 else "chapters ") + join_names(numbers))
    parts.extend(others)
    return join_names(parts)


def exercise_ref(exercise: Exercise) -> str:
    """A link to the exercise that shows its title (a role's text cannot hold ` < >)."""
    if not exercise.label:
        return exercise.title
    if re.search(r"[`<>]", exercise.title):
        return f"{{ref}}`{exercise.label}`"
    return f"{{ref}}`{exercise.title} <{exercise.label}>`"


def load_entries(root: Path = ROOT) -> list[Entry]:
    published = {
        path.relative_to(root).with_suffix("").as_posix() for path in published_notebooks(root)
    }
    entries = []
    for index, part in enumerate(load_toc(root)["parts"]):
        for item in part["chapters"]:
            if item["file"] in published:
                chapter = read_chapter(root / f"{item['file']}.ipynb")
                caption, numbered = part.get("caption", ""), bool(part.get("numbered"))
                entries.append(Entry(chapter, item["file"], caption, index, numbered))
    return entries
