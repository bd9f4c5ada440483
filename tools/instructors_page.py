"""Write ``book/instructors.md``, the instructors' guide, from the chapter notebooks.

Everything the page says about a chapter — objectives, prerequisites, time, exercises with
their difficulty and checker, Colab and Binder links, its place in the dependency diagram and
in the suggested bundles — is read from the published notebooks (``_toc.yml``) and
``_config.yml``; the prose around it comes from ``tools/instructors_template.md``. So the page
cannot drift from the chapters: ``make instructors`` regenerates it (``make book`` does too),
and ``tests/test_instructors_page.py`` fails when the committed page differs from a fresh one.

This module fills the template's placeholders and writes the sections that only format what
the notebooks state (the overview, chapter by chapter, grading). The rest is in
``tools/instructors_entries.py`` (the notebooks as entries, their minutes, how prose names
them), ``tools/instructors_graph.py`` (the prerequisite graph and its diagram) and
``tools/instructors_bundles.py`` (the suggested bundles: sessions, one lecture, the term, its
labs, self-study).

    python -m tools.instructors_page          # write book/instructors.md
    python -m tools.instructors_page --check  # exit 1 if it is out of date
"""

from __future__ import annotations

import argparse
import posixpath
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from tools.answers import load_prose_answers
from tools.grade_run import Limits
from tools.instructors_bundles import (
    SESSION_MINUTES,
    TERM_WEEKS,
    labs,
    language_models,
    modules,
    one_lecture,
    self_study,
    term,
)
from tools.instructors_entries import (
    Entry,
    exercise_ref,
    format_minutes,
    load_entries,
    total_minutes,
    with_unit,
)
from tools.instructors_graph import diagram_svg, prerequisites
from tools.repository import LEVELS, ROOT, Chapter, launch_links, load_config

TEMPLATE = ROOT / "tools" / "instructors_template.md"
PAGE = ROOT / "book" / "instructors.md"
PLACEHOLDER = re.compile(r"\{\{ *(\w+) *\}\}")


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
