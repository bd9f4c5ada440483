"""The instructors' answer key: ``make answers`` writes ``dist/answers/``.

One Markdown file per published notebook with exercises (``dist/answers/02_softmax.md`` …)
and an index, ``dist/answers/index.md``. For each exercise the key gives its number, title,
difficulty, points and checker, its prompt, its solution as the notebook holds it and, where
the prompt asks a question in prose, the model answer and the marking notes of
``tools/prose_answers.yml``. A solution is what the student copies leave out
(``tools.student_copies.strip_solutions``): the cells from ``{solution-start}`` to
``{solution-end}`` and the code cells tagged ``solution``, shown with the text of the outputs
the notebook was committed with (nothing is executed), or the ``{solution}`` block of a quiz
question. The MyST of the book is turned into plain Markdown as in the plain edition
(``tools.plain_edition``): references become links to the published site.

The key is for instructors only. It lives in ``dist/``, which git, the book
(``_config.yml``'s ``exclude_patterns``) and ``make retarget`` leave alone, beside the student
copies (``dist/student/``), which never contain it. The public instructors' page lists the
prose questions with their marking notes, never the model answers.

    python -m tools.answers                 # write dist/answers/
    python -m tools.answers --output DIR
"""

from __future__ import annotations

import argparse
import copy
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import yaml

import selfattn_lib
from tools.plain_edition import DIRECTIVE, EXERCISE_HEADING, plain_edition
from tools.repository import (
    ROOT,
    Chapter,
    Exercise,
    parse_exercise,
    published_notebooks,
    read_chapter,
    read_notebook,
)
from tools.student_copies import has_exercises, strip_solutions

PROSE_ANSWERS = ROOT / "tools" / "prose_answers.yml"
OUTPUT = ROOT / "dist" / "answers"
INDEX = "index.md"
SOLUTION_MARKERS = {"solution-start", "solution-end"}
WIDGET = "application/vnd.jupyter.widget-view+json"


@dataclass(frozen=True)
class ProseAnswer:
    """The prose question of an exercise's prompt, its model answer and how to mark it."""

    label: str
    question: str
    answer: str
    marks: dict[int, str]  # mark -> what earns it, from the full mark down to 0

    @property
    def full_marks(self) -> int:
        return max(self.marks)


def load_prose_answers(path: Path = PROSE_ANSWERS) -> dict[str, ProseAnswer]:
    """The entries of ``tools/prose_answers.yml`` by exercise label, in the file's order."""
    entries = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    answers = {}
    for label, entry in entries.items():
        missing = {"question", "answer", "marks"} - set(entry or {})
        if missing:
            raise ValueError(f"{path.name}: {label} has no {', '.join(sorted(missing))}")
        marks = {int(mark): " ".join(str(note).split()) for mark, note in entry["marks"].items()}
        if list(marks) != list(range(max(marks), -1, -1)) or len(marks) < 2:
            raise ValueError(f"{path.name}: {label}'s marks must run down to 0, one by one")
        answers[label] = ProseAnswer(
            label=label,
            question=" ".join(entry["question"].split()),
            answer=" ".join(entry["answer"].split()),
            marks=marks,
        )
    return answers


@dataclass
class SolutionCell:
    """A cell of a solution, in plain Markdown or code, with its committed outputs as text."""

    cell_type: str  # "markdown" or "code"
    source: str
    output: str = ""


@dataclass
class ExerciseKey:
    exercise: Exercise
    heading: str  # "Exercise 2.1 (easy, 1 point): Title", as the plain edition numbers it
    prompt: str  # in plain Markdown
    solution: list[SolutionCell] = field(default_factory=list)
    prose: ProseAnswer | None = None

    @property
    def number(self) -> str:
        return self.heading.split()[1]


def prompt_of(source: str) -> str:
    """The text of the ``{exercise}`` directive of a markdown cell, as written (MyST)."""
    for directive in DIRECTIVE.finditer(source):
        if directive["name"] == "exercise":
            return directive["body"].strip()
    raise ValueError(f"no exercise in {source[:80]!r}")


def output_text(outputs: list) -> str:
    """The committed outputs of a code cell as the text a terminal would show."""
    parts = []
    for output in outputs:
        if output.output_type == "stream":
            parts.append(output.text)
            continue
        if output.output_type == "error":
            text = f"{output.ename}: {output.evalue}"
        elif any(kind.startswith("image/") for kind in output.data):
            text = "[a figure]"
        elif WIDGET in output.data:
            text = "[an interactive widget]"
        else:
            text = output.data.get("text/plain", "")
        parts.append(text if text.endswith("\n") else text + "\n")
    return "".join(parts)


def _split_off_solutions(nb: nbformat.NotebookNode) -> tuple[nbformat.NotebookNode, list[str]]:
    """A copy of ``nb`` in which each solution is cells of its own, without its markers, and
    the role of each of its cells: "exercise", "solution" or ""."""
    stripped = {cell.id: cell for cell in strip_solutions(nb).cells}
    cells, roles = [], []
    for cell in nb.cells:
        if cell.id not in stripped:  # a cell of a solution
            cell = copy.deepcopy(cell)
            if cell.cell_type == "markdown":
                cell.source = DIRECTIVE.sub(
                    lambda match: "" if match["name"] in SOLUTION_MARKERS else match[0],
                    cell.source,
                ).strip()
            if cell.source:
                cells.append(cell)
                roles.append("solution")
            continue
        is_exercise = cell.cell_type == "markdown" and parse_exercise(cell.source)
        cells.append(stripped[cell.id])  # a quiz question without its {solution} block
        roles.append("exercise" if is_exercise else "")
        if is_exercise:
            for block in DIRECTIVE.finditer(cell.source):
                if block["name"] == "solution":
                    cells.append(nbformat.v4.new_markdown_cell(block["body"].strip()))
                    roles.append("solution")
    split = copy.deepcopy(nb)
    split.cells = cells
    return split, roles


def exercise_keys(
    path: Path, prose: dict[str, ProseAnswer] | None = None, root: Path = ROOT
) -> list[ExerciseKey]:
    """The key of every exercise of the notebook at ``path``, in order."""
    prose = load_prose_answers() if prose is None else prose
    nb = read_notebook(path)
    exercises = {exercise.label: exercise for exercise in read_chapter(path).exercises}
    split, roles = _split_off_solutions(nb)
    plain = plain_edition(split, path, root)
    keys: list[ExerciseKey] = []
    for role, cell, plain_cell in zip(roles, split.cells, plain.cells, strict=True):
        if role == "exercise":
            label = parse_exercise(cell.source).label
            heading = EXERCISE_HEADING.search(plain_cell.source)
            prompt = plain_cell.source[: heading.start()] + plain_cell.source[heading.end() :]
            keys.append(
                ExerciseKey(
                    exercise=exercises[label],
                    heading=heading["heading"],
                    prompt=prompt.strip(),
                    prose=prose.get(label),
                )
            )
        elif role == "solution":
            if not keys:
                raise ValueError(f"{path.name}: a solution before the first exercise")
            output = output_text(cell.outputs) if cell.cell_type == "code" else ""
            keys[-1].solution.append(SolutionCell(cell.cell_type, plain_cell.source, output))
    return keys


# --- The Markdown of the key ----------------------------------------------------------------


def fenced(text: str, info: str = "") -> str:
    """``text`` as a fenced code block, with a fence longer than any run of backticks in it."""
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}{info}\n{text.rstrip()}\n{fence}"


def chapter_title(chapter: Chapter) -> str:
    number = chapter.number
    return f"Chapter {number}: {chapter.title}" if number is not None else chapter.title


def prose_scale(key: ExerciseKey) -> str:
    return f"0–{key.prose.full_marks}, by hand" if key.prose else "—"


def exercise_markdown(key: ExerciseKey) -> str:
    exercise = key.exercise
    checked = (
        f"checked by `{exercise.checker}`" if exercise.checker else "marked by hand (no checker)"
    )
    about = f"Label `{exercise.label}` · {checked}"
    if key.prose:
        about += (
            f" · a prose question, marked by hand: 0–{key.prose.full_marks} on top of the "
            f"checker's {exercise.points}"
        )
    lines = [f"## {key.heading}", "", about + ".", "", "### Prompt", "", key.prompt, ""]
    lines += ["### Solution", ""]
    for cell in key.solution:
        if cell.cell_type == "markdown":
            lines += [cell.source, ""]
            continue
        lines += [fenced(cell.source, "python"), ""]
        if cell.output:
            lines += ["Output, as committed:", "", fenced(cell.output, "text"), ""]
    if not key.solution:
        lines += ["*The notebook has no solution for this exercise.*", ""]
    if key.prose:
        lines += [
            f"### Prose question (marked by hand, 0–{key.prose.full_marks})",
            "",
            f"> {key.prose.question}",
            "",
            f"**Model answer.** {key.prose.answer}",
            "",
            "**Marking.**",
            "",
            *(f"- **{mark}**: {note}" for mark, note in key.prose.marks.items()),
            "",
        ]
    return "\n".join(lines).rstrip() + "\n"


def chapter_markdown(chapter: Chapter, keys: list[ExerciseKey], source: str) -> str:
    lines = [
        f"# Answer key — {chapter_title(chapter)}",
        "",
        "*For instructors: do not hand this file to learners.* Made by `make answers` from "
        f"`{source}` (its solutions and the outputs it was committed with) and "
        "`tools/prose_answers.yml` (the prose questions).",
        "",
        "| exercise | difficulty | points | checker | prose question |",
        "|---|---|---|---|---|",
    ]
    for key in keys:
        exercise = key.exercise
        level = (exercise.level or "—") + (" (optional)" if exercise.optional else "")
        checker = f"`{exercise.checker}`" if exercise.checker else "by hand"
        lines.append(
            f"| {key.number} {exercise.title} | {level} | {exercise.points} | {checker} "
            f"| {prose_scale(key)} |"
        )
    lines.append("")
    return "\n".join(lines) + "\n" + "\n".join(exercise_markdown(key) for key in keys)


def commit_phrase() -> str:
    """``" from commit 1a2b3c4"``, or nothing outside a git checkout."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""
    return f" from commit {commit}"


def index_markdown(chapters: list[tuple[Chapter, list[ExerciseKey], str]]) -> str:
    lines = [
        "# Answer key",
        "",
        "*For instructors: do not hand these files to learners, and do not publish them.*",
        "",
        f"Written for `selfattn-lib` {selfattn_lib.__version__}{commit_phrase()}: write it "
        "again (`make answers`) after changing a chapter or `tools/prose_answers.yml`.",
        "",
        "For every exercise: its prompt, the solution with the outputs the notebook was "
        "committed with and, where the prompt also asks a question in prose, a model answer "
        "and marking notes. The checkers' points are what `make grade` counts; the prose "
        "questions are marked by hand on top of them, on the scale given with each (0–2 for "
        "an explanation, 0–1 for a number to read off). The appendix's quiz has no checker: "
        "mark it by hand, one point a question.",
        "",
        "| chapter | exercises | points | prose questions (marks) |",
        "|---|---|---|---|",
    ]
    for chapter, keys, file in chapters:
        required = sum(key.exercise.points for key in keys if not key.exercise.optional)
        bonus = sum(key.exercise.points for key in keys if key.exercise.optional)
        asked = [key.prose for key in keys if key.prose]
        marks = sum(question.full_marks for question in asked)
        lines.append(
            f"| [{chapter_title(chapter)}]({file}) | {len(keys)} "
            f"| {required}{f' (+{bonus} optional)' if bonus else ''} "
            f"| {f'{len(asked)} ({marks})' if asked else '—'} |"
        )
    return "\n".join(lines) + "\n"


def write_answer_key(output: Path = OUTPUT, root: Path = ROOT) -> list[Path]:
    """Write the answer key of every published notebook with exercises, and its index."""
    prose = load_prose_answers(root / PROSE_ANSWERS.relative_to(ROOT))
    output.mkdir(parents=True, exist_ok=True)
    chapters, written = [], []
    for path in published_notebooks(root):
        if not has_exercises(read_notebook(path)):
            continue
        keys = exercise_keys(path, prose, root)
        chapter, target = read_chapter(path), output / f"{path.stem}.md"
        source = path.relative_to(root).as_posix()
        target.write_text(chapter_markdown(chapter, keys, source), encoding="utf-8")
        chapters.append((chapter, keys, target.name))
        written.append(target)
    index = output / INDEX
    index.write_text(index_markdown(chapters), encoding="utf-8")
    for target in [index, *written]:
        print(f"wrote {target.relative_to(root) if target.is_relative_to(root) else target}")
    return [index, *written]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    write_answer_key(args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
