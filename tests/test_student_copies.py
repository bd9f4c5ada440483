"""Student copies (``make student``, tools/student_copies.py): every published notebook with
exercises loses its solutions and nothing else, and still runs top to bottom in a fresh kernel
with every checker reporting "not attempted"."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from tools.plain_edition import plain_edition
from tools.repository import chapter_notebooks, published_notebooks, read_chapter, read_notebook
from tools.student_copies import (
    NOTE_ID,
    SOLUTIONS_PARAGRAPH,
    SolutionMarkupError,
    checker_results,
    execute,
    has_exercises,
    strip_solutions,
    student_copy,
    write_student_copies,
)

WITH_EXERCISES = [path for path in published_notebooks() if has_exercises(read_notebook(path))]
SOLUTION_MARKER = re.compile(r"^```\{solution-(start|end)\}", re.MULTILINE)


def by_name(path: Path) -> str:
    return path.stem


def markdown(source: str, cell_id: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_markdown_cell(source)
    cell.id = cell_id
    return cell


def code(source: str, cell_id: str, tags: tuple[str, ...] = ()) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    cell.id = cell_id
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def notebook(*cells: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = list(cells)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return nb


def ids(nb: nbformat.NotebookNode) -> list[str]:
    return [cell.id for cell in nb.cells]


# --- On the course's notebooks ------------------------------------------------------------


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=by_name)
def test_a_copy_drops_the_solutions_and_keeps_everything_else(path):
    original = read_notebook(path)
    copy = student_copy(original)
    removed, inside = set(), False
    for cell in original.cells:
        marker = SOLUTION_MARKER.search(cell.source) if cell.cell_type == "markdown" else None
        if marker and marker.group(1) == "start":
            inside = True
        if inside or "solution" in cell.metadata.get("tags", []):
            removed.add(cell.id)
        if marker and marker.group(1) == "end":
            inside = False
    expected = [cell_id for cell_id in ids(original) if cell_id not in removed]
    assert ids(copy) == expected[:1] + [NOTE_ID] + expected[1:], "nothing else moves or goes"
    for cell in copy.cells:
        assert "solution" not in cell.metadata.get("tags", [])
        # No solution directive of any kind: start/end markers, nor a {solution} block.
        assert "{solution" not in cell.source, cell.source[:200]
    assert "colab.research.google.com" not in copy.cells[0].source, "links open the full notebook"
    assert "mybinder.org" not in copy.cells[0].source
    stubs = [cell for cell in copy.cells if "raise NotImplementedError" in cell.source]
    checked = [exercise for exercise in read_chapter(path).exercises if exercise.checker]
    assert len(stubs) >= len(checked), "every exercise keeps its stub"
    nbformat.validate(copy)
    # Nothing points the learner to solutions that are not there.
    text = "\n".join(cell.source for cell in copy.cells if cell.cell_type == "markdown")
    assert not re.search(r"(?i)scroll past|solution cells|runs the solutions", text)


@pytest.mark.parametrize("path", chapter_notebooks(), ids=by_name)
def test_every_chapter_says_where_its_solutions_are_in_the_words_a_copy_drops(path):
    paragraphs = [
        paragraph.strip()
        for cell in read_notebook(path).cells
        if cell.cell_type == "markdown"
        for paragraph in re.split(r"\n\s*\n", cell.source)
    ]
    assert paragraphs.count(SOLUTIONS_PARAGRAPH) == 1


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=by_name)
def test_a_copy_runs_top_to_bottom_with_every_exercise_not_attempted(path, tmp_path):
    # The copy as `make student` writes it: in plain Markdown (tools/plain_edition.py).
    copy = execute(plain_edition(student_copy(read_notebook(path)), path), tmp_path)
    for cell in copy.cells:
        for output in cell.get("outputs", []):
            assert output.get("name") != "stderr", f"stderr output in: {cell.source[:80]}"
    # Exercises with a checker say "not attempted"; others (a quiz, say) have none to run.
    expected = [
        (exercise.label, "not attempted" if exercise.checker else "not run")
        for exercise in read_chapter(path).exercises
    ]
    assert [(result.label, result.status) for result in checker_results(copy)] == expected


# --- The pieces, on small notebooks -------------------------------------------------------


def test_strip_solutions_removes_marked_cells_and_tagged_code():
    nb = notebook(
        markdown("# Title", "t"),
        markdown("```{exercise} E (easy)\n:label: ex-e\n```", "e"),
        code("raise NotImplementedError", "stub"),
        markdown("```{solution-start} ex-e\n:class: dropdown\n```", "s"),
        markdown("The idea.", "idea"),
        code("answer = 1", "answer", tags=("solution",)),
        markdown("```{solution-end}\n```", "end"),
        code("print('kept')", "after"),
        code("hidden = 2", "stray", tags=("solution",)),
    )
    assert ids(strip_solutions(nb)) == ["t", "e", "stub", "after"]
    assert len(nb.cells) == 9, "the original is left alone"


def test_a_solution_block_inside_a_markdown_cell_is_removed():
    quiz = (
        "```{exercise} Q\n:label: quiz-1\n\nWhat is 1 + 1?\n```\n\n"
        "```{solution} quiz-1\n:class: dropdown\n\nTwo.\n```\n"
    )
    colons = ":::{solution} quiz-2\nThree.\n:::\nAfter."
    stripped = strip_solutions(notebook(markdown(quiz, "q1"), markdown(colons, "q2")))
    assert [cell.source for cell in stripped.cells] == [
        "```{exercise} Q\n:label: quiz-1\n\nWhat is 1 + 1?\n```",
        "After.",
    ]


def test_a_solution_in_one_cell_is_removed():
    nb = notebook(
        markdown("# T", "t"),
        markdown("```{solution-start} ex\n```\nAll of it.\n```{solution-end}\n```", "both"),
        code("x = 1", "x"),
    )
    assert ids(strip_solutions(nb)) == ["t", "x"]


@pytest.mark.parametrize(
    "cells",
    [
        [markdown("```{solution-start} ex\n```", "s")],
        [markdown("```{solution-end}\n```", "e")],
        [markdown("```{solution-start} a\n```", "a"), markdown("```{solution-start} b\n```", "b")],
    ],
    ids=["unclosed", "end-without-start", "nested"],
)
def test_unpaired_solution_markers_are_an_error(cells):
    with pytest.raises(SolutionMarkupError):
        strip_solutions(notebook(markdown("# T", "t"), *cells))


def test_a_copy_has_a_note_no_run_it_links_and_no_outputs():
    opening = (
        "# Title\n\n*Chapter 9 of Self-Attention, Step by Step*\n\n"
        "[Open in Colab](https://colab.research.google.com/github/o/r/blob/main/x.ipynb) ·\n"
        "[Launch Binder](https://mybinder.org/v2/gh/o/r/main?urlpath=lab/tree/x.ipynb)\n\n"
        "The promise."
    )
    run = code("print(1)", "run")
    run.outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
    run.execution_count = 1
    copy = student_copy(notebook(markdown(opening, "open"), run))
    assert (
        copy.cells[0].source
        == "# Title\n\n*Chapter 9 of Self-Attention, Step by Step*\n\nThe promise."
    )
    assert copy.cells[1].id == NOTE_ID and "Student copy" in copy.cells[1].source
    assert copy.cells[2].outputs == [] and copy.cells[2].execution_count is None
    nbformat.validate(copy)


def feedback_cell(cell_id: str, text: str | None, error: bool = False) -> nbformat.NotebookNode:
    cell = code("exercises.check_something(f)", cell_id)
    if text is not None:
        cell.outputs = [nbformat.v4.new_output("execute_result", {"text/plain": text})]
    if error:
        cell.outputs = [
            nbformat.v4.new_output("error", ename="NameError", evalue="f", traceback=[])
        ]
    return cell


def test_checker_results_read_the_last_feedback_of_each_exercise():
    nb = notebook(
        markdown("# T", "t"),
        feedback_cell("before", "✔ Correct. Not an exercise."),
        markdown("```{exercise} A (easy)\n:label: ex-a\n```", "a"),
        feedback_cell("a1", "✘ Not yet. First try."),
        feedback_cell("a2", "✔ Correct. Well done."),
        markdown("```{exercise} B (medium)\n:label: ex-b\n```", "b"),
        feedback_cell("b1", "✘ Not yet. Wrong axis."),
        markdown("```{exercise} C (medium)\n:label: ex-c\n```", "c"),
        feedback_cell("c1", "○ Not attempted yet. Replace it."),
        markdown("```{exercise} D (hard)\n:label: ex-d\n```", "d"),
        feedback_cell("d1", None, error=True),
        markdown("```{exercise} E (hard)\n:label: ex-e\n```", "e"),
        markdown("## Summary", "summary"),
        feedback_cell("after", "✘ Not yet. Not an exercise either."),
    )
    results = [(r.label, r.status, r.message) for r in checker_results(nb)]
    assert results == [
        ("ex-a", "correct", "Correct. Well done."),
        ("ex-b", "not yet", "Not yet. Wrong axis."),
        ("ex-c", "not attempted", "Not attempted yet. Replace it."),
        ("ex-d", "error", "NameError: f"),
        ("ex-e", "not run", "no checker cell ran"),
    ]


def test_write_student_copies_writes_one_valid_notebook_per_chapter_with_exercises(tmp_path):
    written = write_student_copies(tmp_path / "student", run=False)
    assert [path.name for path in written] == [path.name for path in WITH_EXERCISES]
    assert sorted(p.name for p in (tmp_path / "student").iterdir()) == sorted(
        path.name for path in written
    )
    for path in written:
        nbformat.validate(nbformat.read(path, as_version=4))


def test_the_course_has_student_copies():
    assert WITH_EXERCISES, "at least one published notebook has exercises"
