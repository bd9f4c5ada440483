"""The instructors' answer key (``make answers``, tools/answers.py) and the model answers and
marking notes of the prose questions (tools/prose_answers.yml): every question a prompt asks in
prose has an entry, quoted from its prompt; every number of a model answer comes from the
notebook; the key covers every exercise, in plain Markdown; and the public instructors' page
shows the marking notes but no model answer. Nothing is executed."""

from __future__ import annotations

import math
import re
from pathlib import Path

import nbformat
import pytest
import yaml

from tools import answers, instructors_page, retarget
from tools.plain_edition import DIRECTIVE
from tools.repository import (
    ROOT,
    load_config,
    parse_exercise,
    published_notebooks,
    read_chapter,
    read_notebook,
)
from tools.student_copies import has_exercises, strip_solutions

WITH_EXERCISES = [path for path in published_notebooks() if has_exercises(read_notebook(path))]
PROSE = answers.load_prose_answers()

# A prompt asks something in prose when, outside its code and maths, it has a question mark or
# asks to explain, predict, derive or use the function ("Then use it: how many …?").
CODE_OR_MATHS = re.compile(r"\$\$.*?\$\$|\$[^$]*\$|`[^`]*`", re.DOTALL)
ASKS = re.compile(
    r"\?|\b(?:explain|predict|then use it|then find|redo the derivation)\b", re.IGNORECASE
)
# A number as prose and outputs write it: 12500, 12,500 (thousands), 0.436; not the 16 of
# float16 or the 1 of ch1. LaTeX's thin space joins digits too (20\,000).
NUMBER = re.compile(r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?(?!\w)")


def by_name(path: Path) -> str:
    return path.stem


def numbers(text: str) -> list[str]:
    return NUMBER.findall(re.sub(r"(?<=\d)\\,(?=\d{3})", "", text))


def stated_in(number: str, text: str) -> bool:
    """Whether ``text`` states ``number``, exactly or to as many decimals as it has
    (0.436 is stated by an output of 0.436038, 12,500 by 12500)."""
    decimals = len(number.partition(".")[2])
    value = float(number.replace(",", ""))
    return any(
        math.isclose(round(float(found.replace(",", "")), decimals), value, abs_tol=1e-12)
        for found in numbers(text)
    )


def words(text: str) -> str:
    return " ".join(text.split())


def asks_in_prose(prompt: str) -> bool:
    return bool(ASKS.search(CODE_OR_MATHS.sub(" ", prompt)))


def course_exercises() -> list[tuple[Path, str, str]]:
    """(notebook, label, prompt in MyST) of every exercise of the published notebooks."""
    found = []
    for path in published_notebooks():
        for cell in read_notebook(path).cells:
            exercise = parse_exercise(cell.source) if cell.cell_type == "markdown" else None
            if exercise:
                found.append((path, exercise.label, answers.prompt_of(cell.source)))
    return found


EXERCISES = course_exercises()
PROMPTS = {label: prompt for _, label, prompt in EXERCISES}


@pytest.fixture(scope="module")
def keys() -> dict[str, answers.ExerciseKey]:
    return {
        key.exercise.label: key
        for path in WITH_EXERCISES
        for key in answers.exercise_keys(path, PROSE)
    }


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    output = tmp_path_factory.mktemp("answers")
    answers.write_answer_key(output)
    return output


# --- tools/prose_answers.yml -----------------------------------------------------------------


def test_every_entry_is_an_exercise_of_the_course():
    assert set(PROSE) - set(PROMPTS) == set()
    assert len(PROSE) >= 12


def test_every_question_asked_in_prose_has_an_entry():
    """An exercise without a checker (the appendix's quiz) is all prose: its own {solution}
    block is its model answer, and the key shows it (the next tests)."""
    checkers = {e.label: e.checker for path in WITH_EXERCISES for e in read_chapter(path).exercises}
    asking = {label for label, prompt in PROMPTS.items() if asks_in_prose(prompt)}
    assert {"ex-ch1-dot-product", "ex-ch3-attends-most-to-itself", "quiz-1"} <= asking
    assert {label for label in asking if checkers[label]} - set(PROSE) == set()


@pytest.mark.parametrize("label", list(PROSE))
def test_each_question_is_quoted_from_its_prompt(label):
    assert words(PROSE[label].question) in words(PROMPTS[label])


@pytest.mark.parametrize("label", list(PROSE))
def test_every_number_of_a_model_answer_comes_from_the_notebook(label, keys):
    """The prompt, the solution's cells or the outputs they were committed with state it: a
    number of the answer is produced by the chapter's code, not typed in by hand."""
    key = keys[label]
    notebook = "\n".join(
        [PROMPTS[label], *(cell.source + "\n" + cell.output for cell in key.solution)]
    )
    unstated = [n for n in numbers(PROSE[label].answer) if not stated_in(n, notebook)]
    assert unstated == [], f"{label}: numbers in no output, solution or prompt"


@pytest.mark.parametrize("label", list(PROSE))
def test_the_marking_notes_do_not_give_the_answer_away(label):
    """They are on the public instructors' page: no number of the model answer that the
    prompt does not state."""
    entry = PROSE[label]
    answer_only = {n for n in numbers(entry.answer) if not stated_in(n, PROMPTS[label])}
    notes = " ".join(entry.marks.values())
    assert [n for n in numbers(notes) if n in answer_only] == []


def test_numbers_are_read_as_written():
    assert numbers("T = 12,500 in float16 for ch1; 20\\,000 and 0.436, (3, 6, 9)") == [
        "12,500",
        "20000",
        "0.436",
        "3",
        "6",
        "9",
    ]
    assert stated_in("0.436", "tau = 0.436038") and not stated_in("0.437", "tau = 0.436038")
    assert stated_in("1,050,624", "1050624") and not stated_in("16", "float16")


@pytest.mark.parametrize(
    "entry, problem",
    [
        ({"question": "Why?", "marks": {1: "a", 0: "b"}}, "no answer"),
        ({"question": "Why?", "answer": "So.", "marks": {2: "a", 0: "b"}}, "run down to 0"),
        ({"question": "Why?", "answer": "So.", "marks": {1: "a"}}, "run down to 0"),
    ],
)
def test_a_malformed_entry_is_refused(tmp_path, entry, problem):
    path = tmp_path / "prose_answers.yml"
    path.write_text(yaml.safe_dump({"ex-x": entry}), encoding="utf-8")
    with pytest.raises(ValueError, match=problem):
        answers.load_prose_answers(path)


# --- The answer key -----------------------------------------------------------------------


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=by_name)
def test_the_solutions_are_what_the_student_copies_drop(path, keys):
    nb = read_notebook(path)
    kept = {cell.id for cell in strip_solutions(nb).cells}
    dropped_code = [c for c in nb.cells if c.id not in kept and c.cell_type == "code"]
    labels = [exercise.label for exercise in read_chapter(path).exercises]
    in_key = [cell for label in labels for cell in keys[label].solution]
    assert [cell.source for cell in in_key if cell.cell_type == "code"] == [
        cell.source for cell in dropped_code
    ]
    for label in labels:
        assert keys[label].solution, f"{label} has no solution in the key"


def test_the_key_has_a_file_per_chapter_and_an_index(written):
    files = sorted(path.name for path in written.iterdir())
    assert files == sorted([answers.INDEX, *(f"{path.stem}.md" for path in WITH_EXERCISES)])
    index = (written / answers.INDEX).read_text(encoding="utf-8")
    for path in WITH_EXERCISES:
        assert f"]({path.stem}.md)" in index


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=by_name)
def test_the_key_has_every_exercise_with_its_solution_outputs_and_prose(path, written, keys):
    text = (written / f"{path.stem}.md").read_text(encoding="utf-8")
    for exercise in read_chapter(path).exercises:
        key = keys[exercise.label]
        assert f"## {key.heading}\n" in text, exercise.label
        assert key.heading.startswith(f"Exercise {key.number} (") and exercise.title in key.heading
        assert key.prompt in text
        for cell in key.solution:
            assert cell.source.rstrip() in text and cell.output.rstrip() in text
        if exercise.label in PROSE:
            entry = PROSE[exercise.label]
            assert entry.answer in text and entry.question in text
            assert all(note in text for note in entry.marks.values())


def test_the_key_shows_committed_outputs_as_text():
    stream = nbformat.v4.new_output("stream", text="T = 12500: 80.0 GB\n")
    result = nbformat.v4.new_output(
        "execute_result", {"text/plain": "✔ Correct.", "text/html": "b"}
    )
    figure = nbformat.v4.new_output("display_data", {"image/png": "", "text/plain": "<Figure>"})
    error = nbformat.v4.new_output("error", ename="ValueError", evalue="no", traceback=[])
    assert answers.output_text([stream, result, figure, error]) == (
        "T = 12500: 80.0 GB\n✔ Correct.\n[a figure]\nValueError: no\n"
    )
    assert answers.fenced("```python\nx\n```", "text").startswith("````text\n")


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=by_name)
def test_the_key_has_no_myst_left(path, written):
    text = (written / f"{path.stem}.md").read_text(encoding="utf-8")
    assert not DIRECTIVE.search(text)
    assert not re.search(r"\{(?:ref|doc|cite|solution|exercise)[-\w]*\}", text)
    assert not re.search(r"^\(\S+\)=|^:(?:label|class|points):", text, re.MULTILINE)


def test_the_key_stays_out_of_git_the_site_and_the_student_copies():
    assert answers.OUTPUT.relative_to(ROOT).as_posix() == "dist/answers"
    assert "dist/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert "dist" in load_config()["exclude_patterns"], "Jupyter Book must not read dist/"
    assert "dist" in retarget.SKIPPED_DIRECTORIES
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^answers:.*\n\trm -rf dist/answers\n\t.*--output dist/answers$",
                     makefile, re.MULTILINE)  # fmt: skip
    # `make student` writes (and removes) only dist/student, never the key beside it.
    student = re.search(r"^student:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE).group(1)
    assert "dist/answers" not in student and "dist/student" in student


def test_the_instructors_page_lists_the_marking_notes_but_no_model_answer():
    page = words(instructors_page.PAGE.read_text(encoding="utf-8"))
    assert "### Marking the prose questions" in page and "make answers" in page
    for entry in PROSE.values():
        assert words(entry.question) in page
        assert all(words(note) in page for note in entry.marks.values())
        sentences = [s for s in re.split(r"(?<=[.:;])\s+", entry.answer) if len(s) > 30]
        leaked = [sentence for sentence in sentences if sentence in page]
        assert leaked == [], f"{entry.label}'s model answer is on the public page"
