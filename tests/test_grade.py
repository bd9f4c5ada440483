"""The class grader (``make grade``: tools/grade.py, grade_course.py, grade_run.py and
grade_worker.py), end to end on a folder of made-up submissions built here from the course's
own notebooks: every way a submission can go wrong is a row with its exact status, and the run
never stops early."""

from __future__ import annotations

import copy
import csv
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest

from selfattn_lib import embeddings
from selfattn_lib.exercises.ch01_similarity import _CH1_NEAREST_WORDS
from tools.grade import (
    GRADES_COLUMNS,
    SUMMARY_COLUMNS,
    HiddenCasesError,
    load_hidden,
    main,
    submissions_in,
)
from tools.grade_course import context_statements, identify_chapter, load_course, read_submission
from tools.grade_run import Limits, grade_submission
from tools.grade_worker import keep_definitions
from tools.plain_edition import plain_edition
from tools.repository import ROOT, chapter_notebooks, parse_exercise, read_chapter, read_notebook
from tools.student_copies import student_copy

CH1 = ROOT / "notebooks" / "01_dot_product_similarity.ipynb"
CH10 = ROOT / "notebooks" / "10_decoder_and_cross_attention.ipynb"
CH1_LABELS = ["ex-ch1-dot-product", "ex-ch1-cosine", "ex-ch1-cosine-matrix", "ex-ch1-nearest"]
CH10_LABELS = [
    "ex-ch10-shift-right",
    "ex-ch10-decoder-self-mask",
    "ex-ch10-greedy-decode",
    "ex-ch10-transformer-parameters",
    "ex-ch10-break-the-model",
]
# Short limits keep the test fast; no assertion depends on how fast the machine is.
TIMEOUT, NOTEBOOK_TIMEOUT = 5, 120

# --- Answers a learner might write (not the course's solution code) ---

DOT = """\
def dot_product_stacked(a, b):
    return np.einsum("...d,...d->...", a, b)


exercises.check_dot_product(dot_product_stacked)"""

COSINE = """\
def cosine_similarity_stacked(a, b):
    lengths = np.sqrt((a * a).sum(axis=-1)) * np.sqrt((b * b).sum(axis=-1))
    if np.any(lengths == 0):
        raise ValueError("a zero vector has no direction")
    return np.einsum("...d,...d->...", a, b) / lengths


exercises.check_cosine_similarity(cosine_similarity_stacked)"""

COSINE_ONE_NORM = """\
def cosine_similarity_stacked(a, b):
    return (a * b).sum(axis=-1) / (np.linalg.norm(a) * np.linalg.norm(b))


exercises.check_cosine_similarity(cosine_similarity_stacked)"""

MATRIX = """\
def cosine_similarity_matrix(x, y):
    x = x / np.linalg.norm(x, axis=1)[:, None]
    y = y / np.linalg.norm(y, axis=1)[:, None]
    return x @ y.T


exercises.check_cosine_similarity_matrix(cosine_similarity_matrix)"""

NEAREST = """\
def nearest_neighbour(word, words, vectors):
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cosines = unit @ unit[words.index(word)]
    cosines[words.index(word)] = -np.inf
    return words[int(np.argmax(cosines))]


exercises.check_nearest_neighbour(nearest_neighbour)"""

ENDLESS = """\
def dot_product_stacked(a, b):
    while True:
        pass


exercises.check_dot_product(dot_product_stacked)"""

EXITS = """\
import os


def cosine_similarity_stacked(a, b):
    os._exit(1)


exercises.check_cosine_similarity(cosine_similarity_stacked)"""

SEGFAULT = """\
import ctypes


def nearest_neighbour(word, words, vectors):
    return ctypes.string_at(0)


exercises.check_nearest_neighbour(nearest_neighbour)"""

# 6 GiB of address space, never touched: only the grader's memory limit makes it fail.
TOO_MUCH_MEMORY = """\
def cosine_similarity_matrix(x, y):
    np.empty(6 * 2**30, dtype=np.uint8)
    return x @ y.T


exercises.check_cosine_similarity_matrix(cosine_similarity_matrix)"""

NETWORK = """\
import socket


def nearest_neighbour(word, words, vectors):
    socket.create_connection(("127.0.0.1", 9), timeout=1)
    return "cat"


exercises.check_nearest_neighbour(nearest_neighbour)"""

# A constant at the top of the cell: only definitions and imports run.
MATRIX_WITH_CONSTANT = """\
EPSILON = np.finfo(float).tiny  # computed: the grader does not run it (a literal would run)


def cosine_similarity_matrix(x, y):
    x = x / (np.linalg.norm(x, axis=1, keepdims=True) + EPSILON)
    y = y / (np.linalg.norm(y, axis=1, keepdims=True) + EPSILON)
    return x @ y.T


exercises.check_cosine_similarity_matrix(cosine_similarity_matrix)"""

IMPORT_ERROR = """\
import a_module_nobody_has


def cosine_similarity_matrix(x, y):
    return a_module_nobody_has.cosine(x, y)


exercises.check_cosine_similarity_matrix(cosine_similarity_matrix)"""

# The function has another name than the stub's: the name the cell hands its checker counts.
RENAMED = NEAREST.replace("nearest_neighbour", "closest_word").replace(
    "check_closest_word", "check_nearest_neighbour"
)

# Uses the function of the first exercise's cell: in a notebook that works, here it cannot.
COSINE_REUSING_DOT = """\
def cosine_similarity_stacked(a, b):
    lengths = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    return dot_product_stacked(a, b) / lengths


exercises.check_cosine_similarity(cosine_similarity_stacked)"""

SYNTAX_ERROR = """\
def dot_product_stacked(a, b)
    return (a * b).sum(axis=-1)


exercises.check_dot_product(dot_product_stacked)"""

# Reassigns the checker at the top level: that line never runs, the real checker grades.
STATIC_TAMPERING = """\
def cosine_similarity_stacked(a, b):
    return (a * b).sum(axis=-1)


exercises.check_cosine_similarity = lambda function: "✔ Correct."
exercises.check_cosine_similarity(cosine_similarity_stacked)"""

# Changes the checkers' kit while the checker runs: every later check would pass.
RUNTIME_TAMPERING = """\
def cosine_similarity_matrix(x, y):
    from selfattn_lib.exercises import _kit

    _kit.run_checks = lambda checks: _kit.Feedback(True, True, "fooled")
    return x @ y.T


exercises.check_cosine_similarity_matrix(cosine_similarity_matrix)"""

NEAREST_IS_ITSELF = """\
def nearest_neighbour(word, words, vectors):
    return word


exercises.check_nearest_neighbour(nearest_neighbour)"""

HIDDEN = """\
import numpy as np

from selfattn_lib import embeddings


def kitten(nearest_neighbour):
    words = embeddings.vocabulary()
    vectors = embeddings.embed(words)
    got = nearest_neighbour("kitten", list(words), vectors)
    expected = {expected!r}
    return got == expected, f"nearest_neighbour('kitten', ...) returned {{got!r}}"


HIDDEN = {{"ex-ch1-nearest": [kitten]}}
"""


def nearest(word: str, words: list[str], vectors: np.ndarray) -> str:
    """The reference for the hard-wired answer and the hidden case."""
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cosines = unit @ unit[words.index(word)]
    cosines[words.index(word)] = -np.inf
    return words[int(np.argmax(cosines))]


def hard_wired() -> str:
    """A nearest_neighbour that knows only the words the public checker asks about."""
    words = list(embeddings.vocabulary())
    vectors = embeddings.embed(words)
    table = {word: nearest(word, words, vectors) for word in _CH1_NEAREST_WORDS}
    return (
        f"def nearest_neighbour(word, words, vectors):\n    return {table!r}[word]\n\n\n"
        "exercises.check_nearest_neighbour(nearest_neighbour)"
    )


# --- Building submissions from the course's notebooks ---


def label_of(cell: nbformat.NotebookNode) -> str:
    exercise = parse_exercise(cell.source) if cell.cell_type == "markdown" else None
    return cell.metadata.get("course", {}).get("exercise", {}).get("label") or (
        exercise.label if exercise else ""
    )


def prompt(nb: nbformat.NotebookNode, label: str) -> int:
    return next(index for index, cell in enumerate(nb.cells) if label_of(cell) == label)


def stub(nb: nbformat.NotebookNode, label: str) -> int:
    start = prompt(nb, label)
    return next(
        index for index in range(start, len(nb.cells)) if nb.cells[index].cell_type == "code"
    )


def student(path: Path, answers: dict[str, str] | None = None) -> nbformat.NotebookNode:
    """The student copy of a chapter (as ``make student`` makes it), with some answers."""
    nb = plain_edition(student_copy(read_notebook(path)), path)
    for label, source in (answers or {}).items():
        nb.cells[stub(nb, label)].source = source
    return nb


def with_solutions(path: Path) -> nbformat.NotebookNode:
    """The student copy with the course's solution cells pasted into the stubs."""
    course = read_notebook(path)
    answers, label = {}, ""
    for cell in course.cells:
        label = label_of(cell) or label
        if "solution" in cell.metadata.get("tags", []):
            answers.setdefault(label, cell.source)
    return student(path, answers)


def without(nb: nbformat.NotebookNode, index: int) -> nbformat.NotebookNode:
    nb = copy.deepcopy(nb)
    del nb.cells[index]
    return nb


def without_course_metadata(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """As an app that drops unknown metadata saves it: exercises keep only their headings."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        cell.metadata.pop("course", None)
    return nb


def with_extra_exercise(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb = copy.deepcopy(nb)
    extra = nbformat.v4.new_markdown_cell("### Exercise 1.9 (easy): My own exercise\n\nMine.")
    nb.cells.insert(stub(nb, CH1_LABELS[-1]) + 1, extra)
    return nb


def submissions() -> dict[str, nbformat.NotebookNode | str]:
    """Every made-up submission: a notebook, or the text of a file that is not one."""
    copy_ch1 = student(CH1)
    return {
        "correct": student(CH1, dict(zip(CH1_LABELS, [DOT, COSINE, MATRIX, NEAREST], strict=True))),
        "partial": without_course_metadata(
            student(CH1, {CH1_LABELS[0]: DOT, CH1_LABELS[1]: COSINE_ONE_NORM})
        ),
        "stub": copy_ch1,
        "endless": student(
            CH1, dict(zip(CH1_LABELS, [ENDLESS, COSINE, TOO_MUCH_MEMORY, NETWORK], strict=True))
        ),
        "exits": student(
            CH1,
            dict(zip(CH1_LABELS, [DOT, EXITS, MATRIX, SEGFAULT], strict=True)),
        ),
        "no_prompt": without(
            student(CH1, {CH1_LABELS[1]: COSINE, CH1_LABELS[2]: MATRIX_WITH_CONSTANT}),
            prompt(copy_ch1, CH1_LABELS[1]),
        ),
        "no_stub": without(
            student(
                CH1,
                {CH1_LABELS[0]: DOT, CH1_LABELS[1]: COSINE_REUSING_DOT, CH1_LABELS[3]: NEAREST},
            ),
            stub(copy_ch1, CH1_LABELS[2]),
        ),
        "tampered": student(
            CH1,
            {
                CH1_LABELS[1]: STATIC_TAMPERING,
                CH1_LABELS[2]: RUNTIME_TAMPERING,
                CH1_LABELS[3]: NEAREST_IS_ITSELF,
            },
        ),
        "course_copy": read_notebook(CH1),
        # Named like chapter 1; its content is chapter 10's.
        "zoe_chapter1": with_solutions(CH10),
        "hard_wired": with_extra_exercise(student(CH1, {CH1_LABELS[3]: hard_wired()})),
        "syntax": student(
            CH1, dict(zip(CH1_LABELS, [SYNTAX_ERROR, COSINE, IMPORT_ERROR, RENAMED], strict=True))
        ),
        "broken": '{"cells": [{"cell_type": "code", "source": "x = 1"',
        "essay": "My answers are in my head.",
    }


# What each exercise is worth, from the course's own notebooks.
POINTS = {
    exercise.label: exercise.points
    for path in chapter_notebooks()
    for exercise in read_chapter(path).exercises
}
EXPECTED = {
    "correct": ["correct", "correct", "correct", "correct"],
    "partial": ["correct", "not yet", "not attempted", "not attempted"],
    "stub": ["not attempted"] * 4,
    "endless": ["timeout", "correct", "not yet", "not yet"],
    "exits": ["correct", "crashed", "correct", "crashed"],
    "no_prompt": ["not attempted", "missing", "not yet", "not attempted"],
    "no_stub": ["correct", "not yet", "missing stub", "correct"],
    "tampered": ["not attempted", "not yet", "tampered", "not yet"],
    "course_copy": ["not attempted"] * 4,
    "zoe_chapter1": ["correct"] * 5,
    "hard_wired": ["not attempted", "not attempted", "not attempted", "failed hidden case"],
    "syntax": ["syntax error", "correct", "error", "correct"],
}
VERDICTS = {"correct", "not yet", "not attempted", "tampered"}
FLAGS = {
    "course_copy": "course-notebook;solution-cells",
    "zoe_chapter1": "solution-cells",
    "tampered": "tampered-checker",
}


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as file:
        return list(csv.DictReader(file))


def write_submissions(root: Path) -> tuple[Path, Path]:
    """Write the made-up submissions into ``root/submissions`` and the instructor's hidden
    cases into ``root/hidden.py``; ``make bench`` times the grader on them too."""
    folder = root / "submissions"
    folder.mkdir()
    for name, submission in submissions().items():
        if isinstance(submission, str):
            suffix = ".txt" if name == "essay" else ".ipynb"
            (folder / f"{name}{suffix}").write_text(submission, encoding="utf-8")
        else:
            nbformat.write(submission, folder / f"{name}.ipynb")
    (folder / ".DS_Store").write_text("not a submission", encoding="utf-8")
    words = list(embeddings.vocabulary())
    hidden = root / "hidden.py"
    hidden.write_text(
        HIDDEN.format(expected=nearest("kitten", words, embeddings.embed(words))),
        encoding="utf-8",
    )
    return folder, hidden


GRADING_OPTIONS = [
    "-j",
    "2",
    "--timeout",
    str(TIMEOUT),
    "--notebook-timeout",
    str(NOTEBOOK_TIMEOUT),
]


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> tuple[list[dict[str, str]], list[dict[str, str]], Path]:
    """Grade the folder once, through the command line, as ``make grade`` does."""
    root = tmp_path_factory.mktemp("grading")
    folder, hidden = write_submissions(root)
    out = root / "grades"
    assert main([str(folder), *GRADING_OPTIONS, "--hidden", str(hidden), "--out", str(out)]) == 0
    return read_csv(out / "grades.csv"), read_csv(out / "summary.csv"), out


def rows_of(rows: list[dict[str, str]], name: str) -> list[dict[str, str]]:
    return [row for row in rows if row["student"] == name]


def test_every_submission_is_graded_and_nothing_stops_the_run(graded):
    rows, summary, out = graded
    names = sorted(submissions())
    assert [line["student"] for line in summary] == names, "one summary line per file"
    assert sorted({row["student"] for row in rows}) == names
    with (out / "grades.csv").open(encoding="utf-8") as file:
        assert file.readline().strip() == ",".join(GRADES_COLUMNS)
    with (out / "summary.csv").open(encoding="utf-8") as file:
        assert file.readline().strip() == ",".join(SUMMARY_COLUMNS)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_exercise_gets_its_exact_status(graded, name):
    rows = [row for row in rows_of(graded[0], name) if row["status"] != "extra"]
    labels = CH10_LABELS if name == "zoe_chapter1" else CH1_LABELS
    chapter = "10_decoder_and_cross_attention" if name == "zoe_chapter1" else CH1.stem
    assert [(row["chapter"], row["exercise"]) for row in rows] == [
        (chapter, label) for label in labels
    ]
    assert [row["status"] for row in rows] == EXPECTED[name]
    for row in rows:
        worth = str(POINTS[row["exercise"]])  # the course notebook's :points:
        assert row["max_points"] == worth
        assert row["points"] == (worth if row["status"] == "correct" else "0")
        assert row["message"], "every row says why"


def test_the_summary_adds_up_points_and_shows_flags(graded):
    rows, summary, _ = graded
    for line in summary:
        name = line["student"]
        if name in EXPECTED:
            labels = CH10_LABELS if name == "zoe_chapter1" else CH1_LABELS
            statuses = dict(zip(labels, EXPECTED[name], strict=True))
            scored = sum(POINTS[label] for label, status in statuses.items() if status == "correct")
            assert line["points"] == str(scored)
            assert line["max_points"] == str(sum(POINTS[label] for label in labels))
        else:
            assert (line["points"], line["max_points"]) == ("0", "0")
        # Any status but the checker's verdicts (or tampering, flagged apart) needs a reader.
        statuses = EXPECTED.get(name, ["not a notebook"])
        review = any(status not in VERDICTS for status in statuses)
        flags = [*filter(None, FLAGS.get(name, "").split(";")), *["needs-review"] * review]
        assert line["flags"] == ";".join(sorted(flags)), name


def test_files_that_are_not_notebooks_are_one_row_each(graded):
    for name in ("broken", "essay"):
        (row,) = rows_of(graded[0], name)
        assert (row["chapter"], row["exercise"], row["status"]) == ("", "", "not a notebook")
        assert "not a Jupyter notebook" in row["message"]


def test_messages_say_what_happened_in_full(graded):
    rows = {(row["student"], row["exercise"]): row["message"] for row in graded[0]}
    assert "did not finish within 5 s" in rows[("endless", CH1_LABELS[0])]
    assert "exit code 1" in rows[("exits", CH1_LABELS[1])]
    assert "SIGSEGV" in rows[("exits", CH1_LABELS[3])]
    assert "MemoryError" in rows[("endless", CH1_LABELS[2])]
    assert "without network access" in rows[("endless", CH1_LABELS[3])]
    # Exercise 2 may use exercise 1's function: it gets the checker's verdict on itself.
    assert "A zero vector has no direction" in rows[("no_stub", CH1_LABELS[1])]
    assert "not in the notebook" in rows[("no_prompt", CH1_LABELS[1])]
    assert "calls check_cosine_similarity" in rows[("no_prompt", CH1_LABELS[1])]
    assert "`EPSILON` is assigned at the top" in rows[("no_prompt", CH1_LABELS[2])]
    assert "line 1 of cell" in rows[("syntax", CH1_LABELS[0])]
    assert "ModuleNotFoundError" in rows[("syntax", CH1_LABELS[2])]
    assert "_kit.run_checks" in rows[("tampered", CH1_LABELS[2])]
    static = rows[("tampered", CH1_LABELS[1])]
    assert "assigns exercises.check_cosine_similarity" in static
    assert "but hidden case 1 (kitten) raised KeyError" in rows[("hard_wired", CH1_LABELS[3])]
    # The checker's own words, never shortened: the longest message is kept whole.
    longest = max(graded[0], key=lambda row: len(row["message"]))
    assert len(longest["message"]) > 100 and not longest["message"].endswith("…")


def test_an_exercise_the_chapter_does_not_have_is_an_extra_row(graded):
    extras = [row for row in graded[0] if row["status"] == "extra"]
    assert [(row["student"], row["max_points"]) for row in extras] == [("hard_wired", "0")]
    assert "Exercise 1.9" in extras[0]["message"]


# --- Pieces, without grading processes ---


def test_only_definitions_and_imports_of_a_cell_run():
    import ast

    tree = ast.parse(STATIC_TAMPERING + "\nimport os\nos._exit(1)\n")
    kept = keep_definitions(tree)
    assert [type(node).__name__ for node in kept.body] == ["FunctionDef", "Import"]


def test_grading_chapter_10_never_trains():
    chapter = next(chapter for chapter in load_course() if chapter.number == 10)
    needed = {"model", "memory_one", "src_one", "history", "accuracy"}
    statements = context_statements(chapter, needed)
    assert any(statement.startswith("model = Transformer(") for statement in statements)
    assert not any(re.search(r"\btrain\(", statement) for statement in statements)
    assert context_statements(chapter, set()) == []


def test_points_come_from_the_directive():
    assert parse_exercise("```{exercise} A (easy)\n:label: ex-a\n:points: 3\n```").points == 3
    assert parse_exercise("```{exercise} A (easy)\n:label: ex-a\n```").points == 1
    with pytest.raises(ValueError, match="whole number"):
        parse_exercise("```{exercise} A\n:points: many\n```")


def test_the_chapter_is_found_by_title_when_no_label_is_left(tmp_path):
    nb = student(CH1)
    for cell in nb.cells:
        cell.metadata.pop("course", None)
        if cell.cell_type == "markdown" and cell.source.startswith("### Exercise"):
            cell.source = "A prompt without its heading."
    path = tmp_path / "renamed_ch10.ipynb"
    nbformat.write(nb, path)
    chapter = identify_chapter(read_submission(path), load_course())
    assert chapter is not None and chapter.stem == CH1.stem


def test_hidden_cases_files_are_checked(tmp_path):
    course = load_course()
    good = tmp_path / "good.py"
    good.write_text('HIDDEN = {"ex-ch1-cosine": [lambda f: (True, "")]}\n', encoding="utf-8")
    assert list(load_hidden(good, course)) == ["ex-ch1-cosine"]
    for text, error in [
        ('HIDDEN = {"ex-nope": []}\n', "no exercise label"),
        ("CASES = {}\n", "must define HIDDEN"),
        ('HIDDEN = {"ex-ch1-cosine": [1]}\n', "list of functions"),
        ("raise RuntimeError('oops')\n", "RuntimeError: oops"),
    ]:
        bad = tmp_path / "bad.py"
        bad.write_text(text, encoding="utf-8")
        with pytest.raises(HiddenCasesError, match=error):
            load_hidden(bad, course)
    assert main([str(tmp_path), "--hidden", str(tmp_path / "missing.py")]) == 2


def test_a_notebook_of_no_chapter_and_json_of_no_notebook_are_one_row_each(tmp_path):
    course = load_course()
    holiday = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# My holiday")])
    nbformat.write(holiday, tmp_path / "holiday.ipynb")
    (tmp_path / "data.ipynb").write_text('{"cells_count": 3}', encoding="utf-8")
    graded = grade_submission(tmp_path / "holiday.ipynb", course)
    assert [(row.status, row.max_points) for row in graded.rows] == [("unknown chapter", 0)]
    graded = grade_submission(tmp_path / "data.ipynb", course)
    assert [row.status for row in graded.rows] == ["not a notebook"]
    assert "it has no cells" in graded.rows[0].message


def test_students_are_file_stems_unless_two_files_share_one(tmp_path):
    for name in ("ada.ipynb", "bob.ipynb", "bob.py", ".hidden.ipynb"):
        (tmp_path / name).write_text("", encoding="utf-8")
    (tmp_path / ".ipynb_checkpoints").mkdir()
    assert sorted(submissions_in(tmp_path)) == ["ada", "bob.ipynb", "bob.py"]


def test_the_notebook_time_limit_stops_one_submission_only(tmp_path):
    path = tmp_path / "slow.ipynb"
    nbformat.write(student(CH1, {CH1_LABELS[0]: ENDLESS}), path)
    limits = Limits(timeout=60, notebook_timeout=12)
    graded = grade_submission(path, load_course(), limits)
    assert [row.status for row in graded.rows] == ["timeout", "not run", "not run", "not run"]
    assert "notebook's time limit of 12 s" in graded.rows[0].message


def test_make_grade_writes_to_an_ignored_folder():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^grade:.*\n(\t.*\n)*\t.*-m tools\.grade .*\$\(SUBMISSIONS\)", makefile, re.M)
    assert "grades/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()


def test_student_copies_no_longer_grade():
    source = (ROOT / "tools" / "student_copies.py").read_text(encoding="utf-8")
    assert "--grade" not in source and "def grade(" not in source


def test_the_instructors_pages_example_is_what_the_grader_writes(graded):
    """The excerpts of summary.csv and grades.csv on the instructors' page ("The grading
    workflow", written in tools/instructors_template.md) are lines that grading this folder
    wrote, verbatim: the page shows real output without running the grader."""
    out = graded[2]
    page = (ROOT / "book" / "instructors.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```text\n(.*?)^```$", page, re.MULTILINE | re.DOTALL)
    for columns, name in ((SUMMARY_COLUMNS, "summary.csv"), (GRADES_COLUMNS, "grades.csv")):
        header = ",".join(columns)
        (example,) = [block.splitlines() for block in blocks if block.startswith(f"{header}\n")]
        written = (out / name).read_text(encoding="utf-8").splitlines()
        assert len(example) > 2, f"the page shows a few lines of {name}"
        stale = [line for line in example if line not in written]
        assert stale == [], f"copy these lines of {name} anew into tools/instructors_template.md"


def test_an_optional_exercise_is_a_bonus_on_top_of_the_chapters_maximum(tmp_path):
    chapter_2 = ROOT / "notebooks" / "02_softmax.ipynb"
    nbformat.write(with_solutions(chapter_2), tmp_path / "ada.ipynb")
    graded = grade_submission(tmp_path / "ada.ipynb", load_course())
    optional = {
        exercise.label for exercise in read_chapter(chapter_2).exercises if exercise.optional
    }
    assert optional, "chapter 2 has an optional exercise"
    for row in graded.rows:
        assert row.status == "correct", row.message
        assert row.max_points == (0 if row.exercise in optional else POINTS[row.exercise])
    assert graded.points == graded.max_points + sum(POINTS[label] for label in optional)
