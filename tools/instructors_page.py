"""Write ``book/instructors.md``, the instructors' guide, from the chapter notebooks.

Everything the page says about a chapter — objectives, prerequisites, time, exercises with
their difficulty and checker, Colab and Binder links, its place in the dependency diagram and
in the suggested bundles — is read from the published notebooks (``_toc.yml``) and
``_config.yml``; the prose around it comes from ``tools/instructors_template.md``. So the page
cannot drift from the chapters: ``make instructors`` regenerates it (``make book`` does too),
and ``tests/test_instructors_page.py`` fails when the committed page differs from a fresh one.

    python -m tools.instructors_page          # write book/instructors.md
    python -m tools.instructors_page --check  # exit 1 if it is out of date
"""

from __future__ import annotations

import argparse
import math
import posixpath
import re
import sys
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path

from tools.answers import load_prose_answers
from tools.grade_run import Limits
from tools.repository import (
    LEVELS,
    ROOT,
    Chapter,
    Exercise,
    launch_links,
    load_config,
    load_toc,
    published_notebooks,
    read_chapter,
)

TEMPLATE = ROOT / "tools" / "instructors_template.md"
PAGE = ROOT / "book" / "instructors.md"
SESSION_MINUTES = 90
SESSIONS_PER_WEEK = 2
# The one-lecture path: the chapters that make self-attention itself, taught in one session.
ONE_LECTURE = ("03_self_attention_basics", "04_queries_keys_values")
# A whole term: one numbered chapter a week, then the appendix and a review.
TERM_WEEKS = 15
# Its graded labs, placed by hand: consecutive chapters, every numbered chapter in one (a test
# fails until a new chapter is). A lab is handed out in the week of its last chapter and is
# due a week later.
LABS = (
    ("01_dot_product_similarity", "02_softmax", "03_self_attention_basics"),
    ("04_queries_keys_values", "05_scaling", "06_masks"),
    ("07_multi_head_attention", "08_positional_encoding", "09_encoder_block"),
    ("10_decoder_and_cross_attention", "11_attention_at_scale", "12_gpt_from_the_pieces"),
    ("13_attention_in_modern_llms", "14_what_attention_heads_learn"),
)
# The part whose chapters, with everything they build on, make the language-model bundle.
LANGUAGE_MODEL_PART = "Part IV — Attention in today's language models"
# Colours of the parts in the diagram: selfattn_lib.plotting.OKABE_ITO (colour-blind safe).
PART_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9")
PLACEHOLDER = re.compile(r"\{\{ *(\w+) *\}\}")


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


def relink(markdown: str, source_dir: str = "notebooks", target_dir: str = "book") -> str:
    """Rewrite the relative link targets of ``markdown`` written in ``source_dir``."""

    def rewrite(match: re.Match[str]) -> str:
        target = match.group(2)
        if re.match(r"^[a-z]+:|^#|^/", target):
            return match.group(0)
        moved = posixpath.relpath(
            posixpath.normpath(posixpath.join(source_dir, target)), target_dir
        )
        return f"{match.group(1)}({moved})"

    def rewrite_role(match: re.Match[str]) -> str:
        text, target = match.group(1), match.group(2) or match.group(3)
        if target.startswith("/"):
            return match.group(0)
        moved = posixpath.relpath(
            posixpath.normpath(posixpath.join(source_dir, target)), target_dir
        )
        return f"{{doc}}`{text} <{moved}>`" if text else f"{{doc}}`{moved}`"

    markdown = re.sub(r"(\[[^\]]*\])\(([^)\s]+)\)", rewrite, markdown)
    return re.sub(r"\{doc\}`(?:([^`<]*?)\s*<([^`>]+)>|([^`<>]+))`", rewrite_role, markdown)


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


# --- The dependency graph ----------------------------------------------------------------


def prerequisites(entries: Sequence[Entry]) -> dict[str, list[str]]:
    """Each notebook's published prerequisites (stems), as its opening cell links them."""
    published = {entry.stem for entry in entries}
    return {
        entry.stem: [stem for stem in entry.chapter.prerequisite_stems if stem in published]
        for entry in entries
    }


def ancestors(graph: dict[str, list[str]]) -> dict[str, set[str]]:
    """Every notebook a notebook builds on, directly or not; a cycle is an error."""
    found: dict[str, set[str]] = {}

    def visit(node: str, path: tuple[str, ...]) -> set[str]:
        if node in path:
            raise ValueError(f"the prerequisites form a cycle: {' -> '.join(path + (node,))}")
        if node not in found:
            result: set[str] = set()
            for parent in graph[node]:
                result |= {parent} | visit(parent, path + (node,))
            found[node] = result
        return found[node]

    for node in graph:
        visit(node, ())
    return found


def transitive_reduction(graph: dict[str, list[str]]) -> dict[str, list[str]]:
    """The direct prerequisites that no other prerequisite already implies."""
    above = ancestors(graph)
    return {
        node: [p for p in parents if not any(p in above[q] for q in parents if q != p)]
        for node, parents in graph.items()
    }


# Where each chapter's box stands in the diagram: (column, row), placed by hand. The main line
# runs down column 0; chapter 8 (positions) branches off chapter 4 into column 1 and rejoins
# at chapter 9, and chapter 14 stands beside chapter 13: both build on chapter 12, neither on
# the other (in column 0 under 13, the arrow from 12 would cross 13's box). A new chapter gets
# a place here (a test fails until it has one).
PLACES: dict[str, tuple[int, int]] = {
    "01_dot_product_similarity": (0, 0),
    "02_softmax": (0, 1),
    "03_self_attention_basics": (0, 2),
    "04_queries_keys_values": (0, 3),
    "05_scaling": (0, 4),
    "08_positional_encoding": (1, 4),
    "06_masks": (0, 5),
    "07_multi_head_attention": (0, 6),
    "09_encoder_block": (0, 7),
    "10_decoder_and_cross_attention": (0, 8),
    "11_attention_at_scale": (0, 9),
    "12_gpt_from_the_pieces": (0, 10),
    "13_attention_in_modern_llms": (0, 11),
    "14_what_attention_heads_learn": (1, 11),
    "pitfalls": (0, 12),
}
BOX_WIDTH, LINE, H_GAP, V_GAP = 220, 18, 40, 26
MARGIN, LEGEND_LINE = 16, 20


def box_lines(entry: Entry) -> list[str]:
    heading = f"Chapter {entry.chapter.number}" if entry.chapter.number is not None else "Appendix"
    return [heading, *textwrap.wrap(entry.chapter.title, 28)]


def diagram_svg(entries: Sequence[Entry], places: dict[str, tuple[int, int]] | None = None) -> str:
    """The dependency diagram as inline SVG: boxes link to the chapters, arrows go from a
    prerequisite to the chapter that needs it (direct prerequisites only), each box where
    ``places`` (default :data:`PLACES`) puts it."""
    places = PLACES if places is None else places
    missing = [entry.stem for entry in entries if entry.stem not in places]
    if missing:
        raise ValueError(f"the diagram has no place for {missing}: add them to PLACES")
    cells = [places[entry.stem] for entry in entries]
    if len(set(cells)) != len(cells):
        raise ValueError("two chapters share a place in the diagram")
    graph = transitive_reduction(prerequisites(entries))
    box_height = 16 + LINE * max(len(box_lines(entry)) for entry in entries)  # one for all
    parts = list(dict.fromkeys((e.part_index, e.part) for e in entries))
    top = MARGIN + LEGEND_LINE * len(parts) + V_GAP // 2
    n_columns = 1 + max(column for column, _ in cells)
    n_rows = 1 + max(row for _, row in cells)
    width = 2 * MARGIN + n_columns * BOX_WIDTH + (n_columns - 1) * H_GAP
    height = top + n_rows * (box_height + V_GAP) - V_GAP + MARGIN

    def corner(stem: str) -> tuple[float, float]:
        column, row = places[stem]
        return MARGIN + column * (BOX_WIDTH + H_GAP), top + row * (box_height + V_GAP)

    lines = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chapter-map" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" '
        'aria-labelledby="chapter-map-title chapter-map-desc" '
        'style="max-width: 100%; height: auto; font-family: system-ui, sans-serif">',
        '<title id="chapter-map-title">How the chapters build on each other</title>',
        f'<desc id="chapter-map-desc">{escape(describe_graph(entries, graph))}</desc>',
        '<defs><marker id="chapter-map-arrow" viewBox="0 0 10 10" refX="9" refY="5" '
        'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M 0 0 L 10 5 L 0 10 z" fill="#333"/></marker></defs>',
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
    ]
    for row, (index, caption) in enumerate(parts):  # the legend: one line per part
        colour = PART_COLOURS[index % len(PART_COLOURS)]
        y = MARGIN + LEGEND_LINE * row
        lines.append(
            f'<rect x="{MARGIN}" y="{y}" width="14" height="14" rx="3" fill="{colour}" '
            f'fill-opacity="0.12" stroke="{colour}" stroke-width="2"/>'
        )
        lines.append(
            f'<text x="{MARGIN + 20}" y="{y + 12}" font-size="13" fill="#1a1a1a">'
            f"{escape(caption)}</text>"
        )
    occupied = set(cells)
    for child, parents in graph.items():  # arrows first, so that boxes cover their ends
        for parent in parents:
            column, row = places[parent]
            if any((column, r) in occupied for r in range(row + 1, places[child][1])):
                raise ValueError(f"the arrow {parent} → {child} would cross a box: move one")
            (x, y), (end_x, end_y) = corner(parent), corner(child)
            x, end_x = x + BOX_WIDTH / 2, end_x + BOX_WIDTH / 2
            y, end_y = y + box_height, end_y - 2  # the arrowhead ends at the box's edge
            turn = max(end_y - V_GAP, y)  # down the parent's column, then into the child's
            bend = (turn + end_y) / 2
            lines.append(
                f'<path d="M {x:.0f} {y} L {x:.0f} {turn} C {x:.0f} {bend} {end_x:.0f} {bend} '
                f'{end_x:.0f} {end_y}" fill="none" stroke="#333" stroke-width="1.5" '
                'marker-end="url(#chapter-map-arrow)"/>'
            )
    for entry in entries:
        x, y = corner(entry.stem)
        colour = PART_COLOURS[entry.part_index % len(PART_COLOURS)]
        text = box_lines(entry)
        label = f"{text[0]}: {entry.chapter.title}"
        lines.append(
            f'<a href="{escape(entry.html)}" aria-label="{escape(label)}" '
            'style="text-decoration: none">'
        )
        lines.append(
            f'<rect x="{x}" y="{y}" width="{BOX_WIDTH}" height="{box_height}" rx="6" '
            f'fill="{colour}" fill-opacity="0.12" stroke="{colour}" stroke-width="2"/>'
        )
        for row, line in enumerate(text):
            weight = ' font-weight="bold"' if row == 0 else ""
            lines.append(
                f'<text x="{x + BOX_WIDTH / 2:.0f}" y="{y + 21 + LINE * row}" text-anchor="middle" '
                f'font-size="13" fill="#1a1a1a"{weight}>{escape(line)}</text>'
            )
        lines.append("</a>")
    lines.append("</svg>")
    return "\n".join(lines)


def describe_graph(entries: Sequence[Entry], graph: dict[str, list[str]]) -> str:
    by_stem = {entry.stem: entry for entry in entries}
    sentences = []
    for entry in entries:
        parents = [by_stem[p] for p in graph[entry.stem]]
        name = entry.name[0].upper() + entry.name[1:]
        if parents:
            sentences.append(f"{name} builds on {join_names([p.name for p in parents])}.")
        else:
            sentences.append(f"{name} needs no earlier chapter.")
    return " ".join(sentences)


# --- The sections of the page -------------------------------------------------------------


def exercise_counts(chapter: Chapter) -> str:
    parts = []
    for level in LEVELS:
        required = sum(e.level == level and not e.optional for e in chapter.exercises)
        optional = sum(e.level == level and e.optional for e in chapter.exercises)
        if required:
            parts.append(f"{required} {level}")
        if optional:
            parts.append(f"{optional} {level} (optional)")
    unknown = sum(not e.level for e in chapter.exercises)
    if unknown:
        parts.append(f"{unknown} unrated")
    return " · ".join(parts) if parts else "—"


def overview(entries: Sequence[Entry]) -> str:
    graph = prerequisites(entries)
    blocks = []
    for part_index in dict.fromkeys(entry.part_index for entry in entries):
        members = [e for e in entries if e.part_index == part_index]
        rows = [
            f"**{members[0].part}**",
            "",
            "| ch. | chapter | in class | at home | exercises | builds on |",
            "|---|---|---|---|---|---|",
        ]
        for entry in members:
            class_time, home_time = entry.minutes("cells"), entry.minutes("exercises")
            needs = ", ".join(e.short for e in entries if e.stem in graph[entry.stem]) or "—"
            rows.append(
                f"| {entry.short} | {{doc}}`{entry.doc}` | {with_unit(class_time)} "
                f"| {with_unit(home_time)} | {exercise_counts(entry.chapter)} | {needs} |"
            )
        class_total = total_minutes(e.minutes("cells") for e in members)
        home_total = total_minutes(e.minutes("exercises") for e in members)
        n_exercises = sum(len(e.chapter.exercises) for e in members)
        if len(members) > 1:
            rows.append(
                f"| | **in total** | **{with_unit(class_total)}** | **{with_unit(home_total)}** "
                f"| **{n_exercises} exercises** | |"
            )
        blocks.append("\n".join(rows))
    return "\n\n".join(blocks)


def chapter_sections(entries: Sequence[Entry], config: dict) -> str:
    sections = []
    for entry in entries:
        chapter = entry.chapter
        links = launch_links(Path(entry.file + ".ipynb"), config)
        heading = (
            f"### Chapter {chapter.number} — {chapter.title}"
            if chapter.number is not None
            else f"### {chapter.title}"
        )
        lines = [
            heading,
            "",
            f"{{doc}}`Read it on this site <{entry.doc}>` · [Open in Colab]({links['colab']}) · "
            f"[Launch Binder]({links['binder']})"
            + (
                f" · student copy: `dist/student/{chapter.path.name}` (`make student`)"
                if chapter.exercises
                else ""
            ),
            "",
        ]
        class_time, home_time = entry.minutes("cells"), entry.minutes("exercises")
        if class_time and home_time:
            lines += [
                f"**Time.** In class {format_minutes(class_time)} minutes (reading and running the "
                f"cells), at home {format_minutes(home_time)} minutes (the exercises); about "
                f"{chapter.minutes['total']} minutes in all.",
                "",
            ]
        elif chapter.estimated_time:
            lines += [f"**Time.** {chapter.estimated_time}", ""]
        if chapter.prerequisites:
            lines += [f"**Prerequisites.** {relink(chapter.prerequisites)}", ""]
        if chapter.objectives:
            lines += ["**Learning objectives.** After this chapter learners can", ""]
            lines += [f"- {relink(objective)}" for objective in chapter.objectives]
            lines.append("")
        if chapter.exercises:
            checked = all(exercise.checker for exercise in chapter.exercises)
            lines += [
                "**Exercises**, each checked by a function of `selfattn_lib.exercises`:"
                if checked
                else "**Exercises**:",
                "",
                "| # | exercise | difficulty | points | checker |",
                "|---|---|---|---|---|",
            ]
            for number, exercise in enumerate(chapter.exercises, start=1):
                level = exercise.level or "—"
                if exercise.optional:
                    level += " (optional)"
                checker = f"`{exercise.checker}`" if exercise.checker else "—"
                lines.append(
                    f"| {number} | {exercise_ref(exercise)} | {level} | {exercise.points} "
                    f"| {checker} |"
                )
            required = sum(e.points for e in chapter.exercises if not e.optional)
            bonus = sum(e.points for e in chapter.exercises if e.optional)
            lines += [
                "",
                f"**Points.** {required} for the chapter"
                + (f", and {bonus} more for the optional exercise" if bonus else "")
                + (
                    " (each exercise's `:points:`, which `make grade` counts)."
                    if entry.chapter.number is not None
                    else " (one a question, marked by hand: `make grade` grades the chapters)."
                ),
            ]
            lines.append("")
        sections.append("\n".join(lines).rstrip())
    return "\n\n".join(sections)


def exercise_ref(exercise: Exercise) -> str:
    """A link to the exercise that shows its title (a role's text cannot hold ` < >)."""
    if not exercise.label:
        return exercise.title
    if re.search(r"[`<>]", exercise.title):
        return f"{{ref}}`{exercise.label}`"
    return f"{{ref}}`{exercise.title} <{exercise.label}>`"


def _entry_list(entries: Sequence[Entry]) -> str:
    return join_names([f"{{doc}}`{entry.doc}`" for entry in entries])


def one_lecture(entries: Sequence[Entry]) -> str:
    by_stem = {entry.stem: entry for entry in entries}
    missing = [stem for stem in ONE_LECTURE if stem not in by_stem]
    if missing:
        raise ValueError(f"the one-lecture path names unpublished notebooks: {missing}")
    lecture = [by_stem[stem] for stem in ONE_LECTURE]
    above = ancestors(prerequisites(entries))
    before = [e for e in entries if any(e.stem in above[s] for s in ONE_LECTURE)]
    before = [e for e in before if e.stem not in ONE_LECTURE]
    class_time = total_minutes(e.minutes("cells") for e in lecture)
    reading = total_minutes(e.minutes("cells") for e in before)
    easy = [
        f"{exercise_ref(exercise)} ({entry.name})"
        for entry in lecture
        for exercise in entry.chapter.exercises
        if exercise.level == "easy"
    ]
    spare = SESSION_MINUTES - class_time[1]
    lines = [
        f"Self-attention itself, from the weighted average to queries, keys and values, in one "
        f"{SESSION_MINUTES}-minute session.",
        "",
        f"- **Before** (reading at home, about {format_minutes(reading)} minutes): "
        f"{_entry_list(before)}.",
        f"- **In class** ({format_minutes(class_time)} minutes for the cells"
        + (
            f", leaving about {spare} minutes for questions and a first exercise"
            if spare > 0
            else ""
        )
        + f"): {_entry_list(lecture)}.",
        f"- **After** (homework): {join_names(easy) or 'the first exercise of each chapter'}; "
        "the medium ones for those who want more.",
    ]
    return "\n".join(lines)


def session_plan(members: Sequence[Entry], heading: str) -> str:
    """The chapters in reading order, as many per session as fit, their exercises as
    homework, and a last session for questions and the hard exercises."""
    sessions: list[list[Entry]] = []
    for entry in members:
        time = entry.minutes("cells") or (SESSION_MINUTES, SESSION_MINUTES)
        used = total_minutes(e.minutes("cells") for e in sessions[-1]) if sessions else None
        if sessions and used and used[1] + time[1] <= SESSION_MINUTES:
            sessions[-1].append(entry)
        else:
            sessions.append([entry])
    n_sessions = len(sessions) + 1  # and one for the hard exercises and questions
    weeks = math.ceil(n_sessions / SESSIONS_PER_WEEK)
    lines = [
        f"**{heading}** — {n_sessions} sessions, {weeks} "
        f"week{'s' if weeks > 1 else ''} at {SESSIONS_PER_WEEK} sessions a week:",
        "",
    ]
    for index, session in enumerate(sessions):
        week, day = divmod(index, SESSIONS_PER_WEEK)
        class_time = total_minutes(e.minutes("cells") for e in session)
        home_time = total_minutes(e.minutes("exercises") for e in session)
        lines.append(
            f"{index + 1}. Week {week + 1}, session {day + 1}: {chapters_phrase(session)} "
            f"({format_minutes(class_time)} minutes in class; homework: "
            f"{'their' if len(session) > 1 else 'its'} exercises, "
            f"{format_minutes(home_time)} minutes)."
        )
    week, day = divmod(len(sessions), SESSIONS_PER_WEEK)
    hard = sum(ex.level == "hard" for e in members for ex in e.chapter.exercises)
    lines.append(
        f"{n_sessions}. Week {week + 1}, session {day + 1}: questions, and "
        + (f"the {hard} hard exercises" if hard != 1 else "the hard exercise")
        + " worked through together."
    )
    return "\n".join(lines)


def modules(entries: Sequence[Entry]) -> str:
    blocks = []
    numbered_parts = dict.fromkeys(e.part_index for e in entries if e.numbered)
    for part_index in numbered_parts:
        members = [e for e in entries if e.part_index == part_index]
        blocks.append(session_plan(members, members[0].part))
    return "\n\n".join(blocks)


def language_models(entries: Sequence[Entry]) -> str:
    """The bundle for a course on language models: the chapters of the language-model part
    and every chapter they build on, directly or not (their prerequisites as their opening
    cells link them), in reading order."""
    graph = prerequisites(entries)
    above = ancestors(graph)
    targets = [e for e in entries if e.part == LANGUAGE_MODEL_PART]
    if not targets:
        raise ValueError(f"no published chapter in the part {LANGUAGE_MODEL_PART!r}")
    needed = {e.stem for e in targets}.union(*(above[e.stem] for e in targets))
    members = [e for e in entries if e.stem in needed and e.numbered]
    left_out = [e for e in entries if e.numbered and e.stem not in needed]
    intro = (
        f"For learners who come for language models: {chapters_phrase(targets)}, with every "
        f"chapter {'they build' if len(targets) > 1 else 'it builds'} on, directly or through "
        f"another chapter ({len(members)} chapters in all)."
    )
    if left_out:
        intro += f" Not needed for them: {chapters_phrase(left_out)}."
    return intro + "\n\n" + session_plan(members, "Language models")


def graded(exercises: Iterable[Exercise]) -> tuple[list[Exercise], list[Exercise]]:
    """The exercises that ``make grade`` grades (those with a checker): required, optional."""
    checked = [exercise for exercise in exercises if exercise.checker]
    return [e for e in checked if not e.optional], [e for e in checked if e.optional]


def points_phrase(exercises: Iterable[Exercise]) -> str:
    """ "4 exercises for 6 points", and the optional ones' bonus points."""
    required, optional = graded(exercises)
    phrase = f"{len(required)} exercises for {sum(e.points for e in required)} points"
    if optional:
        bonus = sum(e.points for e in optional)
        phrase += f", plus {len(optional)} optional for {bonus} bonus point{'s' * (bonus != 1)}"
    return phrase


def in_minutes(span: tuple[int, int] | None) -> str:
    return f"{format_minutes(span)} minutes"


@dataclass
class Lab:
    """A graded lab of the term: its chapters, the week it is handed out and the week due."""

    number: int
    chapters: list[Entry]
    handed_out: int
    due: int

    @property
    def exercises(self) -> list[Exercise]:
        return [exercise for entry in self.chapters for exercise in entry.chapter.exercises]


def term_plan(entries: Sequence[Entry]) -> tuple[dict[str, int], list[Lab]]:
    """The week of each numbered chapter (one a week, in reading order), and the labs of
    :data:`LABS`, which must hold every numbered chapter once, in reading order."""
    numbered = [entry for entry in entries if entry.chapter.number is not None]
    if len(numbered) >= TERM_WEEKS:
        raise ValueError(f"{len(numbered)} chapters, one a week, leave no week of a "
                         f"{TERM_WEEKS}-week term for the appendix and a review")  # fmt: skip
    if [stem for lab in LABS for stem in lab] != [entry.stem for entry in numbered]:
        raise ValueError(
            "LABS must hold every numbered chapter once, in reading order: "
            f"{[entry.stem for entry in numbered]}"
        )
    week = {entry.stem: index for index, entry in enumerate(numbered, start=1)}
    by_stem = {entry.stem: entry for entry in numbered}
    labs = [
        Lab(number, [by_stem[stem] for stem in lab], week[lab[-1]], week[lab[-1]] + 1)
        for number, lab in enumerate(LABS, start=1)
    ]
    return week, labs


def term(entries: Sequence[Entry]) -> str:
    week_of, labs = term_plan(entries)
    events: dict[int, list[str]] = {}
    for lab in labs:
        events.setdefault(lab.handed_out, []).append(
            f"Lab {lab.number} ({chapters_phrase(lab.chapters)}) handed out."
        )
        events.setdefault(lab.due, []).append(f"Lab {lab.number} due.")

    def item(week: int, text: str) -> str:
        return f"{week}. Week {week}: {text}" + "".join(f" {e}" for e in events.get(week, []))

    numbered = [entry for entry in entries if entry.stem in week_of]
    lines = [
        item(
            week_of[entry.stem],
            f"chapter {entry.chapter.number}, {{doc}}`{entry.doc}`. "
            f"{in_minutes(entry.minutes('cells'))} of cells in class; in the lab session, "
            f"{points_phrase(entry.chapter.exercises)} (about "
            f"{in_minutes(entry.minutes('exercises'))} of exercises).",
        )
        for entry in numbered
    ]
    lines += [
        item(week, "catching up, or a small project built on the course.")
        for week in range(len(numbered) + 1, TERM_WEEKS)
    ]
    appendix = "".join(
        f"the appendix, {{doc}}`{entry.doc}` (its quiz in class), and "
        for entry in entries
        if entry.stem not in week_of
    )
    lines.append(item(TERM_WEEKS, f"{appendix}a review of the term."))
    in_class = total_minutes(entry.minutes("cells") for entry in numbered)
    at_home = total_minutes(entry.minutes("exercises") for entry in numbered)
    exercises = [exercise for lab in labs for exercise in lab.exercises]
    lines += [
        "",
        f"In all: {in_minutes(in_class)} of chapters in class and {in_minutes(at_home)} of "
        f"exercises; the {len(labs)} labs grade {points_phrase(exercises)}.",
    ]
    return "\n".join(lines)


def labs(entries: Sequence[Entry]) -> str:
    blocks = []
    for lab in term_plan(entries)[1]:
        required, optional = graded(lab.exercises)
        points, bonus = sum(e.points for e in required), sum(e.points for e in optional)
        at_home = total_minutes(entry.minutes("exercises") for entry in lab.chapters)
        rows = [
            f"**Lab {lab.number} — {chapters_phrase(lab.chapters)}** (handed out in week "
            f"{lab.handed_out}, due in week {lab.due}; about {in_minutes(at_home)} of "
            f"exercises): {points} points" + (f", and {bonus} bonus points." if bonus else "."),
            "",
            "| ch. | exercise | difficulty | points |",
            "|---|---|---|---|",
        ]
        for entry in lab.chapters:
            for exercise in entry.chapter.exercises:
                if exercise.checker:
                    level = (exercise.level or "—") + (" (optional)" * exercise.optional)
                    worth = f"{exercise.points}" + (" (bonus)" * exercise.optional)
                    rows.append(f"| {entry.short} | {exercise_ref(exercise)} | {level} | {worth} |")
        total = f"**{points}**" + (f" (+{bonus} bonus)" if bonus else "")
        rows.append(f"| | **total** | | {total} |")
        blocks.append("\n".join(rows))
    return "\n\n".join(blocks)


def self_study(entries: Sequence[Entry]) -> str:
    """The whole course; notebooks whose time is not stated in minutes (the appendix, whose
    time is per item) are named after the total, not counted in it."""
    timed = [e for e in entries if e.chapter.minutes]
    untimed = [e for e in entries if not e.chapter.minutes]
    total = sum(int(e.chapter.minutes["total"]) for e in timed)
    n_exercises = sum(len(e.chapter.exercises) for e in timed)
    then = "".join(
        f" Then the appendix {{doc}}`{e.doc}` ({e.chapter.estimated_time[0].lower()}"
        f"{e.chapter.estimated_time[1:].rstrip('.')})."
        for e in untimed
    )
    return (
        f"All {len(timed)} chapters in reading order: about {total} minutes (some "
        f"{format_hours(total)} hours) with all {n_exercises} exercises, for instance one "
        f"chapter a day.{then} Each chapter runs on its own, so a learner who already knows a "
        "topic can skip its chapter; the diagram above shows what each chapter really needs."
    )


def inline_code(text: str) -> str:
    """``text`` as a Markdown code span, even when it contains backticks."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {text} {fence}" if longest else f"`{text}`"


def feedback_examples() -> str:
    """What a checker says to a right answer, a typical mistake and an untouched stub."""
    import numpy as np

    from selfattn_lib import exercises

    def right(a, b):
        return (np.asarray(a) * np.asarray(b)).sum(axis=-1)

    def summed_everything(a, b):
        return (np.asarray(a) * np.asarray(b)).sum()

    def stub(a, b):
        raise NotImplementedError

    cases = [
        ("a right answer, `(a * b).sum(axis=-1)`", right),
        ("`(a * b).sum()`, which adds up over every axis", summed_everything),
        ("the untouched stub", stub),
    ]
    lines = []
    for what, answer in cases:
        answer.__name__ = "dot_product_stacked"
        feedback = repr(exercises.check_dot_product(answer))
        lines.append(f"- to {what}: {inline_code(feedback)}")
    return "\n".join(lines)


def prose_questions(entries: Sequence[Entry]) -> str:
    """The questions in prose of the exercises' prompts, chapter by chapter, with their marking
    notes (tools/prose_answers.yml). Not their model answers: this page is public, and those
    are for the answer key alone (``make answers``, tools/answers.py)."""
    prose = load_prose_answers()
    blocks = []
    for entry in entries:
        asked = [(e, prose[e.label]) for e in entry.chapter.exercises if e.label in prose]
        if not asked:
            continue
        lines = [f"**{entry.name[0].upper()}{entry.name[1:]} — {entry.chapter.title}**", ""]
        for exercise, question in asked:
            lines.append(
                f"- {exercise_ref(exercise)}, 0–{question.full_marks} marks: “{question.question}”"
            )
            lines += [f"  - **{mark}**: {note}" for mark, note in question.marks.items()]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


# A row of CONTRIBUTING.md's table "Library functions that answer exercises":
# | `module.function` | `check_name` | chapter |   (tests/test_contributing.py keeps it true)
LIBRARY_ANSWER_ROW = re.compile(r"^\| `(\w+)\.(\w+)` \| `(check_\w+)` \| (\d+) \|$", re.MULTILINE)


def library_answers(root: Path = ROOT) -> list[tuple[str, str]]:
    """(``module.function``, checker) for every library function that answers an exercise, as
    CONTRIBUTING.md lists them."""
    text = (root / "CONTRIBUTING.md").read_text(encoding="utf-8")
    return [
        (f"{module}.{name}", checker)
        for module, name, checker, _ in LIBRARY_ANSWER_ROW.findall(text)
    ]


def library_answers_table(entries: Sequence[Entry], root: Path = ROOT) -> str:
    """The library functions that answer exercises, with the exercise each one answers."""
    by_checker = {
        exercise.checker: (entry, exercise)
        for entry in entries
        for exercise in entry.chapter.exercises
        if exercise.checker
    }
    lines = ["| library function | answers | chapter |", "|---|---|---|"]
    for function, checker in library_answers(root):
        entry, exercise = by_checker[checker]
        lines.append(f"| `selfattn_lib.{function}` | {exercise_ref(exercise)} | {entry.short} |")
    return "\n".join(lines)


def grade_limits() -> str:
    """The grader's default limits, as ``make grade`` applies them."""
    limits = Limits()
    return f"{limits.timeout:g} s, {limits.notebook_timeout:g} s and {limits.memory_mb} MB"


def render(root: Path = ROOT) -> str:
    entries = load_entries(root)
    config = load_config(root)
    pieces = {
        "overview": overview(entries),
        "diagram": '```{raw} html\n<div class="chapter-map" style="text-align: center">\n'
        + diagram_svg(entries)
        + "\n</div>\n```",
        "feedback_examples": feedback_examples(),
        "chapters": chapter_sections(entries, config),
        "one_lecture": one_lecture(entries),
        "modules": modules(entries),
        "language_models": language_models(entries),
        "self_study": self_study(entries),
        "term": term(entries),
        "term_weeks": str(TERM_WEEKS),
        "labs": labs(entries),
        "prose_questions": prose_questions(entries),
        "library_answers": library_answers_table(entries, root),
        "grade_limits": grade_limits(),
        "session_minutes": str(SESSION_MINUTES),
    }
    template = (root / TEMPLATE.relative_to(ROOT)).read_text(encoding="utf-8")
    used = set(PLACEHOLDER.findall(template))
    if used != set(pieces):
        raise ValueError(f"template placeholders {sorted(used)} != {sorted(pieces)}")
    return PLACEHOLDER.sub(lambda match: pieces[match.group(1)], template)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only check that it is up to date")
    args = parser.parse_args(argv)
    page = render()
    current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
    if args.check:
        if page != current:
            print(f"{PAGE.relative_to(ROOT)} is out of date: run `make instructors`.")
            return 1
        return 0
    if page != current:
        PAGE.write_text(page, encoding="utf-8")
        print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
