"""Student copies of the chapters: the notebooks without their worked solutions.

``make student`` writes one copy of every published notebook that has exercises into
``dist/student/``. A copy keeps everything a learner needs — the text, the code, the
figures, each exercise with its stub and its checker — and loses

- every solution: the markdown cells from ```` ```{solution-start} ```` to
  ```` ```{solution-end} ```` inclusive, every code cell tagged ``solution`` (with their
  outputs), and every ```` ```{solution} ```` block inside a markdown cell (the answers of
  the appendix's quiz), and the paragraph of each "Exercises" section that says where the
  solutions are (:data:`SOLUTIONS_PARAGRAPH`);
- the *Open in Colab* / *Launch Binder* links of the opening cell, which open the course's own
  notebook, solutions included.

A short note after the opening cell says that it is a student copy. The copy is written in
plain Markdown (tools/plain_edition.py), so that Jupyter, JupyterLab and Colab show each
exercise's title, difficulty and maths instead of raw MyST. The copy is then run top
to bottom in a fresh kernel, in an empty directory, and saved with the outputs of that run,
so no output can come from a solution (``--no-execute`` writes copies without outputs).

Learners' submitted copies are graded by ``make grade`` (tools/grade.py).
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from selfattn_lib.plotting.base import PHONE_RENDERINGS
from tools.plain_edition import plain_edition
from tools.repository import ROOT, published_notebooks, read_notebook, write_notebook

SOLUTION_TAG = "solution"
SOLUTION_START = re.compile(r"^```\{solution-start\}", re.MULTILINE)
SOLUTION_END = re.compile(r"^```\{solution-end\}", re.MULTILINE)
EXERCISE = re.compile(r"^```\{exercise\}", re.MULTILINE)
# A whole {solution} directive inside a markdown cell, fenced with backticks or colons.
SOLUTION_BLOCK = re.compile(
    r"^(?P<fence>`{3,}|:{3,})\{solution\}[^\n]*\n.*?^(?P=fence)[ \t]*$\n?",
    re.MULTILINE | re.DOTALL,
)
RUN_IT_LINK = re.compile(r"\]\(https://(colab\.research\.google\.com|mybinder\.org)/")
NOTE_ID = "student-copy-note"
NOTE = """\
> **Student copy.** This notebook has no worked solutions: after each exercise comes the
> next one, and *Run All* runs only your own code. Replace each `raise NotImplementedError`
> with your code and run the cell: its checker answers ✔ (correct), ✘ (not yet, with the
> reason) or ○ (not attempted)."""
# The paragraph of every chapter's "Exercises" section that tells where the solutions are
# (tests/test_student_copies.py checks that each chapter has it word for word). A copy has
# none, so it drops the paragraph.
SOLUTIONS_PARAGRAPH = """\
On the website each solution is hidden until you click it. In a notebook (Colab, Binder or
your own computer) the solution cells follow each checker: scroll past them to try first, and
run the cells one at a time — *Run All* also runs the solutions, which redefine your function."""
# What a checker's Feedback shows, by its first character (see selfattn_lib.exercises).
STATUS = {"✔": "correct", "✘": "not yet", "○": "not attempted"}


class SolutionMarkupError(ValueError):
    """The solution-start / solution-end markers of a notebook do not pair up."""


def has_exercises(nb: nbformat.NotebookNode) -> bool:
    return any(cell.cell_type == "markdown" and EXERCISE.search(cell.source) for cell in nb.cells)


def strip_solutions(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of ``nb`` without its solutions (marked markdown cells, tagged code cells and
    ``{solution}`` blocks in markdown)."""
    kept, inside = [], False
    for cell in nb.cells:
        starts = cell.cell_type == "markdown" and bool(SOLUTION_START.search(cell.source))
        ends = cell.cell_type == "markdown" and bool(SOLUTION_END.search(cell.source))
        if starts and inside:
            raise SolutionMarkupError(f"solution-start inside a solution: {cell.source[:80]!r}")
        if ends and not (inside or starts):
            raise SolutionMarkupError(f"solution-end without a start: {cell.source[:80]!r}")
        in_solution = inside or starts
        inside = in_solution and not ends
        if in_solution or SOLUTION_TAG in cell.metadata.get("tags", []):
            continue
        cell = copy.deepcopy(cell)
        if cell.cell_type == "markdown":
            source = SOLUTION_BLOCK.sub("", cell.source).rstrip()
            cell.source = _without_paragraph(source, SOLUTIONS_PARAGRAPH)
        kept.append(cell)
    if inside:
        raise SolutionMarkupError("a solution-start has no solution-end")
    stripped = copy.deepcopy(nb)
    stripped.cells = kept
    return stripped


def _without_paragraph(source: str, paragraph: str) -> str:
    paragraphs = re.split(r"\n\s*\n", source)
    return "\n\n".join(p for p in paragraphs if p.strip() != paragraph)


def _without_run_it_links(source: str) -> str:
    paragraphs = re.split(r"\n\s*\n", source)
    return "\n\n".join(p for p in paragraphs if not RUN_IT_LINK.search(p))


def student_copy(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The student copy of a chapter, not yet executed: every output cleared."""
    student = strip_solutions(nb)
    opening = student.cells[0]
    if opening.cell_type == "markdown":
        opening.source = _without_run_it_links(opening.source)
    note = nbformat.v4.new_markdown_cell(NOTE)
    note.id = NOTE_ID
    student.cells.insert(1, note)
    for cell in student.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cell.metadata.pop("execution", None)
    student.metadata.pop("widgets", None)
    return student


def execute(
    nb: nbformat.NotebookNode, workdir: Path, *, timeout: int = 600
) -> nbformat.NotebookNode:
    """Run ``nb`` top to bottom in a fresh kernel in ``workdir``, as ``make execute`` does but
    without the figures' phone renderings: a copy keeps no outputs, and a learner's Jupyter
    draws none."""
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        allow_errors=False,
        record_timing=False,
        store_widget_state=False,
        resources={"metadata": {"path": str(workdir)}},
    )
    client.execute(env={k: v for k, v in os.environ.items() if k != PHONE_RENDERINGS})
    nb.metadata.pop("widgets", None)
    return nb


@dataclass(frozen=True)
class CheckerResult:
    label: str
    status: str  # "correct", "not yet", "not attempted", "error" or "not run"
    message: str


def _exercise_label(source: str) -> str:
    match = re.search(r"^:label:\s*(\S+)", source, re.MULTILINE)
    return match.group(1) if match else source.splitlines()[0]


def checker_results(nb: nbformat.NotebookNode) -> list[CheckerResult]:
    """What the last checker of each exercise said in an executed notebook, in order (the
    tests read a freshly run student copy with it)."""
    results: list[CheckerResult] = []
    label, last = None, None

    def close() -> None:
        if label is None:
            return
        if last is None:
            results.append(CheckerResult(label, "not run", "no checker cell ran"))
            return
        errors = [out for out in last.outputs if out.output_type == "error"]
        if errors:
            results.append(CheckerResult(label, "error", f"{errors[0].ename}: {errors[0].evalue}"))
            return
        shown = [
            out.data.get("text/plain", "")
            for out in last.outputs
            if out.output_type in {"execute_result", "display_data"}
        ]
        for text in reversed(shown):
            if text[:1] in STATUS:
                results.append(CheckerResult(label, STATUS[text[0]], text[1:].strip()))
                return
        results.append(CheckerResult(label, "not run", "the checker showed no feedback"))

    for cell in nb.cells:
        if cell.cell_type == "markdown":
            # An exercise in MyST (the course's notebooks) or in plain Markdown, whose cell
            # keeps its label in its metadata (a student copy: tools/plain_edition.py).
            plain = cell.metadata.get("course", {}).get("exercise", {}).get("label")
            starts_exercise = bool(plain or EXERCISE.search(cell.source))
            if starts_exercise or re.match(r"#{1,2} ", cell.source):
                close()
                label = (plain or _exercise_label(cell.source)) if starts_exercise else None
                last = None
        elif label is not None and re.search(r"\bcheck_\w+\(", cell.source):
            last = cell
    close()
    return results


def write_student_copies(output: Path, *, run: bool = True) -> list[Path]:
    """Write the student copy of every published notebook with exercises into ``output``."""
    output.mkdir(parents=True, exist_ok=True)
    written = []
    for path in published_notebooks():
        nb = read_notebook(path)
        if not has_exercises(nb):
            continue
        student = plain_edition(student_copy(nb), path)
        if run:
            with tempfile.TemporaryDirectory() as workdir:
                execute(student, Path(workdir))
        target = output / path.name
        write_notebook(student, target)
        written.append(target)
        print(f"wrote {target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=ROOT / "dist" / "student")
    parser.add_argument(
        "--no-execute", action="store_true", help="write the copies without running them"
    )
    args = parser.parse_args(argv)
    write_student_copies(args.output, run=not args.no_execute)
    return 0


if __name__ == "__main__":
    sys.exit(main())
