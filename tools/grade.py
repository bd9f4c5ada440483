"""Grade a class's submitted notebooks with the course's own checkers: ``make grade``.

::

    make grade SUBMISSIONS=submissions/            # writes grades/grades.csv, grades/summary.csv
    python -m tools.grade DIR [-j N] [--timeout S] [--notebook-timeout S] [--hidden FILE]
                              [--out DIR] [--memory MB]

Every file in ``DIR`` (hidden files aside) is one learner's submission; the learner is the
file's stem. A submission is graded without running it top to bottom:

1. **Its chapter** is the course notebook (``notebooks/NN_*.ipynb``) that shares the most
   exercise labels with it (the ``:label:`` of a MyST ``{exercise}``, or the
   ``course.exercise`` metadata of the plain edition that student copies are made in), or
   else whose title it has. Its file name plays no part.
2. **Its exercises** are the course notebook's, matched to the submission by label. An
   exercise's code is the last code cell between its prompt and the next exercise, solution
   or section heading that calls the exercise's checker (else that defines its function):
   its *stub cell*. A missing prompt or stub, and a prompt the chapter does not have, is a
   row of its own; a cell is never graded for an exercise whose prompt it does not follow.
3. **Each submission runs** in a fresh process (``tools/grade_worker.py``, with the Python
   that runs this tool): the chapter's setup cells, the few statements of the chapter that
   the learner's functions use (:func:`context_statements`: definitions such as a helper
   function or a table of features, never a training run), then for each exercise, in a
   fresh copy of that namespace, only the *definitions and imports* of its stub cell, and
   the checker named in the course notebook's stub cell, taken from the installed
   :mod:`selfattn_lib.exercises` before any learner code ran. A learner's
   ``exercises.check_x = …`` therefore never runs; it is reported as the flag
   ``tampered-checker``. The process has a memory limit (``--memory``), no network, a time
   limit per exercise (``--timeout``) and per notebook (``--notebook-timeout``); after an
   exercise that hangs, ends the process or tampers, a new process grades the remaining
   ones. Submissions are graded ``-j`` at a time.
4. **Hidden cases** (``--hidden FILE``) run after an exercise passes its public checker.

The chapter-10 checkers need no trained model: they test the learner's functions on small
arrays and made-up "models" of their own (``selfattn_lib/exercises/ch10_decoder.py``), so
grading never trains. A learner's function that uses a trained model (say a copy of the
solution's ``next_token_logits``) sees the chapter's model as initialised, untrained.

Hidden cases
------------
A Python file known only to the instructor defines ``HIDDEN``: for each exercise label, a
list of cases. A case is called with the learner's function and returns
``(passed: bool, message: str)``; a case that raises fails with the exception as message::

    import numpy as np

    def unseen_shapes(cosine_similarity_stacked):
        a, b = np.ones((2, 3, 5)), np.arange(30.0).reshape(2, 3, 5) + 1
        got = np.asarray(cosine_similarity_stacked(a, b))
        return got.shape == (2, 3), f"shape {got.shape} for inputs of shape (2, 3, 5)"

    HIDDEN = {"ex-ch1-cosine": [unseen_shapes]}

The file runs once in the grader (to check it: unknown labels are an error) and once in each
grading process, before any learner code.

Output
------
``OUT/grades.csv`` has one row per exercise (columns ``student, chapter, exercise, status,
points, max_points, message``; the message is never shortened) and ``OUT/summary.csv`` one per
student (``student, chapter, points, max_points, flags``). An exercise is worth the
``:points:`` option of its directive (tools.repository.parse_exercise), else 1, and scores
its points only when ``correct``.
The statuses:

- ``correct``, ``not yet`` (the checker's message says what is wrong), ``not attempted`` (the
  stub still raises ``NotImplementedError``), ``failed hidden case`` (passed the public
  checker only);
- ``error`` (the cell's definitions raise, or it defines no function to check),
  ``syntax error``, ``timeout``, ``crashed`` (the process died: ``os._exit``, a segfault;
  a ``MemoryError`` the learner's function raises is ``not yet``), ``tampered`` (the
  learner's function changed the checkers while they ran), ``not run`` (the notebook's time
  limit ran out first);
- ``missing`` (no prompt cell with the exercise's label), ``missing stub`` (a prompt but no
  code cell for it), ``extra`` (a prompt the chapter does not have, or a second one);
- for a whole submission: ``not a notebook``, ``unknown chapter``, ``grader error`` (the
  course's setup failed, or a bug of this tool: reported rather than stopping the run).

The flags: ``solution-cells`` (cells tagged ``solution``, or a function definition identical
to one of the course's solutions), ``course-notebook`` (its code cells are the course
notebook's), ``tampered-checker`` (code that reassigns a checker or something of
``selfattn_lib``, or a ``tampered`` exercise).

The grader runs learners' code: the limits guard against mistakes and naive cheating, not
against an attacker. Run it in a container or a throwaway VM.
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import math
import os
import re
import runpy
import select
import signal
import subprocess
import symtable
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import nbformat
from IPython.core.inputtransformer2 import TransformerManager

from tools.grade_worker import (
    CORRECT,
    SYNTAX_ERROR,
    TAMPERED,
    keep_definitions,
)
from tools.repository import ROOT, chapter_notebooks, parse_exercise, read_notebook

WORKER = Path(__file__).resolve().with_name("grade_worker.py")

# Statuses this module adds to the worker's (correct, not yet, not attempted, failed hidden
# case, error, syntax error, tampered).
TIMEOUT = "timeout"
CRASHED = "crashed"
NOT_RUN = "not run"
MISSING = "missing"
MISSING_STUB = "missing stub"
EXTRA = "extra"
NOT_A_NOTEBOOK = "not a notebook"
UNKNOWN_CHAPTER = "unknown chapter"
GRADER_ERROR = "grader error"

SOLUTION_CELLS = "solution-cells"
COURSE_NOTEBOOK = "course-notebook"
TAMPERED_CHECKER = "tampered-checker"

GRADES_COLUMNS = ("student", "chapter", "exercise", "status", "points", "max_points", "message")
SUMMARY_COLUMNS = ("student", "chapter", "points", "max_points", "flags")

MAX_NOTEBOOK_BYTES = 64 * 1024 * 1024
SOLUTION_TAG = "solution"
SOLUTION_START = re.compile(r"^```\{solution-start\}|^#{1,6} Solution to Exercise", re.MULTILINE)
SECTION = re.compile(r"^#{1,2} ")
# The plain edition's exercise heading: "### Exercise 2.1 (easy): Title" (tools/plain_edition.py).
PLAIN_EXERCISE = re.compile(
    r"^#{2,4} Exercise (?P<number>\d+\.\d+)(?: \([^)]*\))?: (?P<title>.+?)[ \t]*$", re.MULTILINE
)
CHECKER_CALL = re.compile(r"\b(check_\w+)\s*\(")
# Cell magics whose body is plain Python that runs as it is.
TRANSPARENT_CELL_MAGICS = re.compile(r"\A\s*%%(time|timeit|capture)\b[^\n]*\n")
# selfattn_lib's parts that no checker relies on: changing them is no tampering.
UNGUARDED = re.compile(r"\b(plotting|widgets)\b")
# A call of one of these names never runs while grading (chapter 10's training).
EXPENSIVE_CALLS = frozenset({"train"})


class NotANotebook(ValueError):
    """A submission that cannot be read as a Jupyter notebook."""


class HiddenCasesError(ValueError):
    """A ``--hidden`` file that does not define ``HIDDEN`` as described in the docstring."""


# --- Reading notebooks --------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """One cell of a notebook: its position (0-based), kind, source and tags."""

    index: int
    kind: str
    source: str
    tags: tuple[str, ...] = ()
    label: str = ""  # the exercise label in the metadata of a plain-edition prompt

    @property
    def number(self) -> int:
        """The cell's 1-based position, as a message names it."""
        return self.index + 1


def cells_of(nb: nbformat.NotebookNode) -> list[Cell]:
    """The cells of a notebook read by nbformat."""
    return [_cell(index, cell) for index, cell in enumerate(nb.cells)]


def _cell(index: int, cell: Any) -> Cell:
    source = cell.get("source", "")
    if isinstance(source, list):
        source = "".join(source)
    metadata = cell.get("metadata") or {}
    tags = metadata.get("tags") or []
    course = metadata.get("course")
    exercise = course.get("exercise") if isinstance(course, dict) else None
    label = exercise.get("label") if isinstance(exercise, dict) else ""
    return Cell(
        index=index,
        kind=str(cell.get("cell_type", "")),
        source=source if isinstance(source, str) else "",
        tags=tuple(tag for tag in tags if isinstance(tag, str)) if isinstance(tags, list) else (),
        label=label if isinstance(label, str) else "",
    )


def read_submission(path: Path) -> list[Cell]:
    """The cells of a submitted notebook; :class:`NotANotebook` says why it is not one."""
    try:
        size = path.stat().st_size
        if size > MAX_NOTEBOOK_BYTES:
            raise NotANotebook(f"the file has {size:,} bytes, more than a notebook should")
        text = path.read_bytes().decode("utf-8")
        data = json.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise NotANotebook(f"the file is not a Jupyter notebook (JSON): {error}") from error
    if not isinstance(data, dict) or not ("cells" in data or "worksheets" in data):
        raise NotANotebook("the file is JSON but not a Jupyter notebook: it has no cells")
    if "worksheets" in data:  # nbformat 3: let nbformat convert it
        try:
            data = nbformat.reads(text, as_version=4)
        except Exception as error:  # noqa: BLE001 - any reading failure is this row
            raise NotANotebook(f"the notebook (format 3) cannot be read: {error}") from error
    cells = data.get("cells")
    if not isinstance(cells, list) or not all(isinstance(cell, dict) for cell in cells):
        raise NotANotebook("the notebook's cells are not a list of cells")
    return [_cell(index, cell) for index, cell in enumerate(cells)]


_PER_THREAD = threading.local()


# CPython 3.11 keeps the parser's recursion depth in state shared between threads: ast.parse
# or symtable in two threads at once can fail with "SystemError: AST constructor recursion
# depth mismatch". Submissions are read in parallel threads, so the compiler is used by one
# thread at a time.
_COMPILER = threading.RLock()


def _parse(source: str, filename: str = "<unknown>") -> ast.Module:
    with _COMPILER:
        return ast.parse(source, filename)


def _symtable(source: str, filename: str) -> symtable.SymbolTable:
    with _COMPILER:
        return symtable.symtable(source, filename, "exec")


def python_source(source: str) -> str:
    """A code cell's source as plain Python: IPython's magics and ``!`` commands become
    ``get_ipython()`` calls; ``%%time``-like cell magics are dropped (their body stays)."""
    source = TRANSPARENT_CELL_MAGICS.sub("", source, count=1)
    if not hasattr(_PER_THREAD, "transformer"):  # submissions are read in parallel threads
        _PER_THREAD.transformer = TransformerManager()
    return _PER_THREAD.transformer.transform_cell(source)


def parse_python(source: str) -> ast.Module | None:
    """The syntax tree of a code cell, or None when it is not valid Python."""
    try:
        return _parse(python_source(source))
    except (SyntaxError, ValueError):
        return None


def defined_names(tree: ast.Module) -> set[str]:
    """The names a cell binds at its top level (definitions, imports, assignments)."""
    try:
        table = _symtable(ast.unparse(tree), "<cell>")
    except SyntaxError:  # valid to the parser, not to the compiler
        return set()
    return {
        symbol.get_name()
        for symbol in table.get_symbols()
        if symbol.is_assigned() or symbol.is_imported()
    }


def global_names(source: str) -> set[str]:
    """The global names ``source`` reads: at its top level and inside its functions and
    classes (when they are called).

    Examples
    --------
    >>> sorted(global_names("def f(x):\\n    return np.sum(x) * SCALE"))
    ['SCALE', 'np']
    """
    try:
        table = _symtable(source, "<source>")
    except SyntaxError:  # valid to the parser, not to the compiler
        return set()
    names = {symbol.get_name() for symbol in table.get_symbols() if symbol.is_referenced()}
    stack = list(table.get_children())
    while stack:
        child = stack.pop()
        names |= {
            symbol.get_name()
            for symbol in child.get_symbols()
            if symbol.is_global() and symbol.is_referenced()
        }
        stack.extend(child.get_children())
    return names


def _called_name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name):
            return node.func.id
        if isinstance(node.func, ast.Attribute):
            return node.func.attr
    return ""


def _root_name(node: ast.AST) -> str:
    """``exercises`` for ``exercises.check_x`` or ``vars(exercises)["check_x"]``."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        if isinstance(node, ast.Call):
            if not node.args:
                return ""
            node = node.args[0]
        else:
            node = node.value
    return node.id if isinstance(node, ast.Name) else ""


# --- The course -------------------------------------------------------------------------


@dataclass(frozen=True)
class Statement:
    """A top-level statement of a chapter, before its exercises, with the names it needs."""

    source: str
    binds: frozenset[str]  # names it (re)binds completely
    modifies: frozenset[str]  # names it changes in place (x[k] = …, x.a = …)
    needs: frozenset[str]  # global names it reads
    expensive: bool  # calls something that grading never runs (training)


@dataclass(frozen=True)
class CourseExercise:
    """An exercise of the course notebook: its label, title, points and checker."""

    label: str
    title: str
    number: str  # "2.1": the plain edition's number
    points: float
    checker: str  # its checker in selfattn_lib.exercises ("" when the stub calls none)
    function: str  # the name its stub cell hands to the checker


@dataclass
class Chapter:
    """What the grader needs of a course notebook."""

    stem: str
    title: str
    number: int | None
    exercises: list[CourseExercise]
    setup: list[str]  # its leading code cells, as Python without magics
    statements: list[Statement]  # its code before the first exercise
    solution_functions: set[str]  # ast.dump of every function its solutions define
    code: list[str]  # the source of every code cell, stripped

    @property
    def labels(self) -> set[str]:
        return {exercise.label for exercise in self.exercises}


def checker_call(tree: ast.Module | None) -> tuple[str, str]:
    """(checker, name of its first argument) of the first ``check_…(name)`` call in a cell."""
    for node in ast.walk(tree) if tree else ():
        name = _called_name(node)
        if name.startswith("check_"):
            argument = node.args[0] if node.args else None
            return name, argument.id if isinstance(argument, ast.Name) else ""
    return "", ""


def _statements(tree: ast.Module) -> list[Statement]:
    statements = []
    for node in tree.body:
        source = ast.unparse(node)
        table = _symtable(source, "<statement>")
        binds = {
            symbol.get_name()
            for symbol in table.get_symbols()
            if symbol.is_assigned() or symbol.is_imported()
        }
        modifies = set()
        for inner in ast.walk(node):
            targets = []
            if isinstance(inner, ast.Assign):
                targets = inner.targets
            elif isinstance(inner, ast.AugAssign | ast.AnnAssign):
                targets = [inner.target]
            for target in targets:
                if isinstance(target, ast.Attribute | ast.Subscript) and _root_name(target):
                    modifies.add(_root_name(target))
        expensive = any(_called_name(inner) in EXPENSIVE_CALLS for inner in ast.walk(node))
        statements.append(
            Statement(
                source=source,
                binds=frozenset(binds),
                modifies=frozenset(modifies),
                needs=frozenset(global_names(source)),
                expensive=expensive,
            )
        )
    return statements


def _without_ipython_calls(tree: ast.Module) -> str:
    """A setup cell without its top-level magics (``%matplotlib inline``)."""
    kept = [
        node
        for node in tree.body
        if not (isinstance(node, ast.Expr) and "get_ipython" in ast.unparse(node))
    ]
    return ast.unparse(ast.Module(body=kept, type_ignores=[]))


def load_chapter(path: Path) -> Chapter:
    """Read a course notebook: its exercises, setup, code and solutions."""
    cells = cells_of(read_notebook(path))
    opening = cells[0].source if cells and cells[0].kind == "markdown" else ""
    title = re.search(r"^# (.+)$", opening, re.MULTILINE)
    number = re.search(r"Chapter (\d+) of", opening)
    chapter = Chapter(
        stem=path.stem,
        title=title.group(1).strip() if title else path.stem,
        number=int(number.group(1)) if number else None,
        exercises=[],
        setup=[],
        statements=[],
        solution_functions=set(),
        code=[cell.source.strip() for cell in cells if cell.kind == "code"],
    )
    leading = True
    first_prompt = next(
        (cell.index for cell in cells if cell.kind == "markdown" and parse_exercise(cell.source)),
        len(cells),
    )
    taught: set[str] = set()  # functions defined outside the solutions
    solutions: set[str] = set()
    for cell in cells[1:]:
        tree = parse_python(cell.source) if cell.kind == "code" else None
        if cell.kind != "code":
            leading = False
            continue
        functions = {
            ast.dump(node)
            for node in (tree.body if tree else [])
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        if SOLUTION_TAG in cell.tags:
            solutions |= functions
            continue
        taught |= functions
        if tree is None:
            continue
        if leading:
            chapter.setup.append(_without_ipython_calls(tree))
        elif cell.index < first_prompt:
            chapter.statements.extend(_statements(tree))
    chapter.solution_functions = solutions - taught
    for prompt, span in _exercise_spans(cells, lambda cell: parse_exercise(cell.source)):
        exercise = parse_exercise(cells[prompt].source)
        stubs = [cell for cell in span if SOLUTION_TAG not in cell.tags]
        calls = [checker_call(parse_python(cell.source)) for cell in stubs]
        checker, function = next((call for call in calls if call[0]), ("", ""))
        chapter.exercises.append(
            CourseExercise(
                label=exercise.label,
                title=exercise.title,
                number=f"{chapter.number}.{len(chapter.exercises) + 1}",
                points=exercise.points,
                checker=checker,
                function=function,
            )
        )
    return chapter


@cache
def load_course(root: Path = ROOT) -> tuple[Chapter, ...]:
    """Every numbered chapter of the course, in order."""
    return tuple(load_chapter(path) for path in chapter_notebooks(root))


def context_statements(chapter: Chapter, needed: Iterable[str]) -> list[str]:
    """The chapter's statements (before its exercises) that bind the ``needed`` names, and
    those they need in turn, in the chapter's order; never one that trains.

    A learner's function may use what the chapter defined before its exercises (a helper such
    as chapter 2's ``softmax_with_temperature``, chapter 4's ``feature`` table); only those
    statements run, so grading costs no figures, widgets or training.
    """
    wanted = set(needed)
    chosen = []
    for statement in reversed(chapter.statements):
        if statement.expensive or not (statement.binds | statement.modifies) & wanted:
            continue
        chosen.append(statement.source)
        wanted -= statement.binds - statement.needs
        wanted |= statement.needs
    return chosen[::-1]


# --- A submission's exercises -------------------------------------------------------------


def _is_boundary(cell: Cell) -> bool:
    return cell.kind == "markdown" and bool(
        SOLUTION_START.search(cell.source) or SECTION.match(cell.source)
    )


def _exercise_spans(
    cells: list[Cell], prompt_label: Callable[[Cell], Any]
) -> list[tuple[int, list[Cell]]]:
    """(index of each prompt cell, the code cells after it up to the next prompt, solution
    or section heading)."""
    spans: list[tuple[int, list[Cell]]] = []
    current: list[Cell] | None = None
    for cell in cells:
        if cell.kind == "markdown" and prompt_label(cell):
            current = []
            spans.append((cell.index, current))
        elif _is_boundary(cell):
            current = None
        elif cell.kind == "code" and current is not None:
            current.append(cell)
    return spans


def prompt_label(cell: Cell, chapter: Chapter | None = None) -> str:
    """The exercise label of a prompt cell (metadata, MyST ``:label:`` or, in a chapter, the
    plain edition's heading), "" for a cell that is no prompt, or "?<heading>" for an
    exercise heading the chapter does not know."""
    if cell.kind != "markdown":
        return ""
    if cell.label:
        return cell.label
    exercise = parse_exercise(cell.source)
    if exercise:
        return exercise.label or f"?{exercise.title}"
    heading = PLAIN_EXERCISE.search(cell.source)
    if not heading:
        return ""
    known = chapter.exercises if chapter else []
    for exercise in known:  # by title, else by number (a learner may retitle it)
        if exercise.title == heading.group("title"):
            return exercise.label
    for exercise in known:
        if exercise.number == heading.group("number"):
            return exercise.label
    return f"?{heading.group(0).lstrip('#').strip()}"


def identify_chapter(cells: list[Cell], course: Iterable[Chapter]) -> Chapter | None:
    """The chapter sharing the most exercise labels with the submission, else the one whose
    title (or "Chapter N of") its first heading has."""
    course = list(course)
    labels = {prompt_label(cell) for cell in cells} - {""}
    best = max(course, key=lambda chapter: len(chapter.labels & labels), default=None)
    if best is not None and best.labels & labels:
        return best
    text = "\n".join(cell.source for cell in cells[:3] if cell.kind == "markdown")
    title = re.search(r"^# (.+?)[ \t]*$", text, re.MULTILINE)
    number = re.search(r"Chapter (\d+) of", text)
    for chapter in course:
        if title and title.group(1) == chapter.title:
            return chapter
    for chapter in course:
        if number and int(number.group(1)) == chapter.number:
            return chapter
    return None


@dataclass
class Found:
    """Where a course exercise is in a submission."""

    exercise: CourseExercise
    prompt: Cell | None = None
    stub: Cell | None = None
    function: str = ""  # the name the submission's stub hands to the checker


def stub_cell(span: list[Cell], exercise: CourseExercise) -> tuple[Cell | None, str]:
    """(the stub cell of an exercise in its span, the name it hands to the checker): the
    last cell that calls the exercise's checker, else the last that defines its function."""
    candidates = [cell for cell in span if SOLUTION_TAG not in cell.tags]
    for cell in reversed(candidates):
        if exercise.checker and exercise.checker in CHECKER_CALL.findall(cell.source):
            checker, function = checker_call(parse_python(cell.source))
            return cell, function if checker == exercise.checker else ""
    for cell in reversed(candidates):
        if exercise.function and re.search(rf"^def {exercise.function}\b", cell.source, re.M):
            return cell, ""
    return None, ""


def find_exercises(cells: list[Cell], chapter: Chapter) -> tuple[list[Found], list[str]]:
    """Each course exercise's prompt and stub cell in a submission, and a message for each
    prompt that is not one of the chapter's exercises (or repeats one)."""
    found = {exercise.label: Found(exercise) for exercise in chapter.exercises}
    extras = []
    for prompt, span in _exercise_spans(cells, lambda cell: prompt_label(cell, chapter)):
        cell = cells[prompt]
        label = prompt_label(cell, chapter)
        match = found.get(label)
        if match is None:
            name = label[1:] if label.startswith("?") else label
            extras.append(
                f"cell {cell.number} is an exercise that {chapter.stem} does not have "
                f"({name}); not graded"
            )
        elif match.prompt is not None:
            extras.append(
                f"cell {cell.number} repeats the prompt of {label} (first in cell "
                f"{match.prompt.number}); only the first is graded"
            )
        else:
            match.prompt = cell
            match.stub, match.function = stub_cell(span, match.exercise)
    return list(found.values()), extras


# --- Flags --------------------------------------------------------------------------------


def tampering(tree: ast.Module, aliases: set[str], checkers: set[str]) -> list[str]:
    """What a cell does to the checkers: assignments to (or deletions of) attributes of
    ``selfattn_lib``'s modules and functions (``aliases``), rebinding a checker's name,
    defining a function named like one, ``setattr``/``delattr`` on them."""
    found = []
    for node in ast.walk(tree):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign | ast.Delete):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in checkers:
            found.append(f"line {node.lineno} defines a function named {node.name}")
        elif (
            isinstance(node, ast.Call)
            and _called_name(node) in {"setattr", "delattr"}
            and _root_name(node) in aliases
        ):
            found.append(f"line {node.lineno} calls {ast.unparse(node)}")
        for target in targets:
            for part in ast.walk(target):
                changes_library = (
                    isinstance(part, ast.Attribute | ast.Subscript) and _root_name(part) in aliases
                )
                rebinds_checker = isinstance(part, ast.Name) and part.id in checkers
                if changes_library or rebinds_checker:
                    verb = "deletes" if isinstance(node, ast.Delete) else "assigns"
                    found.append(f"line {node.lineno} {verb} {ast.unparse(part)}")
                    break
    return found


def library_aliases(trees: Iterable[ast.Module]) -> set[str]:
    """The names a notebook gives ``selfattn_lib`` and what it imports from it: the checkers
    and the concept modules they compute answers with (figures and widgets aside)."""
    aliases = {"selfattn_lib", "exercises", "kit", "_kit"}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for name in node.names:
                    if name.name.split(".")[0] == "selfattn_lib" and not UNGUARDED.search(
                        name.name
                    ):
                        aliases.add((name.asname or name.name).split(".")[0])
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "selfattn_lib"
            ):
                if UNGUARDED.search(node.module):
                    continue
                aliases.update(
                    name.asname or name.name
                    for name in node.names
                    if not UNGUARDED.fullmatch(name.name)
                )
    return aliases


@dataclass
class Analysis:
    """What the grader notices about a submission's code cells as a whole."""

    flags: set[str] = field(default_factory=set)
    tampering: dict[int, list[str]] = field(default_factory=dict)  # cell index -> what
    definitions: dict[int, set[str]] = field(default_factory=dict)  # cell index -> names


def analyse(cells: list[Cell], chapter: Chapter) -> Analysis:
    """Flags (solution cells, the course's notebook, tampering) and each cell's names."""
    analysis = Analysis()
    code = [cell for cell in cells if cell.kind == "code"]
    trees = {cell.index: parse_python(cell.source) for cell in code}
    aliases = library_aliases(tree for tree in trees.values() if tree)
    checkers = {exercise.checker for exercise in chapter.exercises if exercise.checker}
    for cell in code:
        tree = trees[cell.index]
        if SOLUTION_TAG in cell.tags:
            analysis.flags.add(SOLUTION_CELLS)
        if tree is None:
            continue
        functions = {
            ast.dump(node)
            for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        if functions & chapter.solution_functions:
            analysis.flags.add(SOLUTION_CELLS)
        found = tampering(tree, aliases, checkers)
        if found:
            analysis.tampering[cell.index] = found
            analysis.flags.add(TAMPERED_CHECKER)
        analysis.definitions[cell.index] = defined_names(tree)
    if [cell.source.strip() for cell in code] == chapter.code:
        analysis.flags.add(COURSE_NOTEBOOK)
    return analysis


# --- Running the exercises ----------------------------------------------------------------


@dataclass(frozen=True)
class Limits:
    """Time and memory limits of the grading processes."""

    timeout: float = 30.0  # seconds per exercise
    notebook_timeout: float = 300.0  # seconds per submission
    memory_mb: int = 4096  # address space of a grading process
    output_mb: int = 16  # size of the files it may write (its output included)


@dataclass
class Run:
    """What one grading process reported."""

    results: dict[str, tuple[str, str]] = field(default_factory=dict)
    setup_failure: str = ""


def _stderr_tail(path: Path, lines: int = 12) -> str:
    """The last lines the grading process wrote (faulthandler's traceback after a crash),
    without the list of extension modules that follows the traceback."""
    try:
        text = path.read_bytes()[-4000:].decode("utf-8", errors="replace")
    except OSError:
        return ""
    kept = [line for line in text.strip().splitlines() if not line.startswith("Extension modules")]
    return "\n".join(kept[-lines:]).strip()


SIGNALS = {
    "SIGSEGV": "a segmentation fault",
    "SIGXCPU": "more CPU time than the notebook's time limit",
    "SIGKILL": "perhaps the machine ran out of memory",
}


def _death(
    returncode: int | None,
    stderr: str,
    limits: Limits,
    when: str = "while this exercise was checked",
) -> str:
    """Why the grading process died, for a learner."""
    if returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        reason = f"the process running your code was killed by {name} {when}"
        if name in SIGNALS:
            reason += f" ({SIGNALS[name]})"
    else:
        reason = (
            f"the process running your code ended (exit code {returncode}) {when}: your code "
            "called os._exit, or Python itself crashed"
        )
    if "MemoryError" in stderr:
        reason += f"; it ran out of memory (the limit is {limits.memory_mb} MB)"
    return reason + (f". Its last output:\n{stderr}" if stderr else "")


def run_worker(job: dict[str, Any], limits: Limits, deadline: float) -> Run:
    """Start one grading process on ``job`` and collect its results until it finishes, dies
    or runs out of time; the exercise it was on when it died or hung gets its row."""
    run = Run()
    labels = [exercise["label"] for exercise in job["exercises"]]
    with tempfile.TemporaryDirectory(prefix="grade-", ignore_cleanup_errors=True) as tmp:
        directory = Path(tmp)
        (directory / "work").mkdir()
        job_path = directory / "job.json"
        job_path.write_text(json.dumps(job), encoding="utf-8")
        stderr_path = directory / "stderr.txt"
        env = {
            **os.environ,
            "MPLBACKEND": "Agg",
            "PYTHONDONTWRITEBYTECODE": "1",
            **{
                name: "1" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
            },
        }
        with open(stderr_path, "wb") as stderr:
            process = subprocess.Popen(
                [sys.executable, "-I", str(WORKER), str(job_path)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd=directory / "work",
                env=env,
                start_new_session=True,
            )
        current, started, ended, buffer = "", 0.0, "", b""
        try:
            descriptor = process.stdout.fileno()
            while not ended:
                limit = min(deadline, started + limits.timeout) if current else deadline
                remaining = limit - time.monotonic()
                if remaining <= 0:
                    ended = "timeout"
                    break
                readable, _, _ = select.select([descriptor], [], [], remaining)
                if not readable:
                    continue
                chunk = os.read(descriptor, 65536)
                if not chunk:
                    ended = "died"
                    break
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    try:
                        event = json.loads(line)
                    except ValueError:
                        continue
                    kind = event.get("event") if isinstance(event, dict) else None
                    if kind == "start":
                        current, started = str(event.get("label")), time.monotonic()
                    elif kind == "result":
                        label = str(event.get("label"))
                        status = str(event.get("status", GRADER_ERROR))
                        run.results[label] = (status, str(event.get("message", "")))
                        current = ""
                    elif kind == "setup-failed":
                        run.setup_failure = str(event.get("message"))
                if all(label in run.results for label in labels):
                    ended = "finished"
        finally:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            returncode = process.wait()
            process.stdout.close()
        if current and ended == "timeout":
            if time.monotonic() >= deadline and started + limits.timeout > deadline:
                message = (
                    f"the notebook's time limit of {limits.notebook_timeout:g} s ran out while "
                    "this exercise was checked"
                )
            else:
                message = (
                    f"the check did not finish within {limits.timeout:g} s: an endless loop, "
                    "or far too much work"
                )
            run.results[current] = (TIMEOUT, message)
        elif current and ended == "died":
            run.results[current] = (CRASHED, _death(returncode, _stderr_tail(stderr_path), limits))
        elif ended == "died" and not run.setup_failure and not run.results:
            run.setup_failure = _death(
                returncode, _stderr_tail(stderr_path), limits, "during the course's setup"
            )
    return run


def run_exercises(job: dict[str, Any], limits: Limits) -> dict[str, tuple[str, str]]:
    """(status, message) of every exercise of ``job``: a fresh grading process after each
    one that hung, crashed or tampered, until all are graded or the notebook's time is up."""
    deadline = time.monotonic() + limits.notebook_timeout
    results: dict[str, tuple[str, str]] = {}
    pending = list(job["exercises"])
    while pending:
        if time.monotonic() >= deadline:
            for exercise in pending:
                results[exercise["label"]] = (
                    NOT_RUN,
                    f"not run: the notebook's time limit of {limits.notebook_timeout:g} s ran "
                    "out before this exercise",
                )
            break
        run = run_worker({**job, "exercises": pending}, limits, deadline)
        results.update(run.results)
        left = [exercise for exercise in pending if exercise["label"] not in run.results]
        if run.setup_failure or (len(left) == len(pending) and time.monotonic() < deadline):
            why = run.setup_failure or "the grading process stopped without grading it"
            for exercise in left:
                results[exercise["label"]] = (GRADER_ERROR, why)
            break
        pending = left
    return results


# --- Grading a submission -----------------------------------------------------------------


@dataclass
class Row:
    """One line of grades.csv."""

    student: str
    chapter: str
    exercise: str
    status: str
    points: float
    max_points: float
    message: str


@dataclass
class Graded:
    """A graded submission: its rows and its line of summary.csv."""

    student: str
    chapter: str
    rows: list[Row]
    flags: set[str] = field(default_factory=set)

    @property
    def points(self) -> float:
        return sum(row.points for row in self.rows)

    @property
    def max_points(self) -> float:
        return sum(row.max_points for row in self.rows)


def _whole(student: str, status: str, message: str, chapter: str = "") -> Graded:
    return Graded(student, chapter, [Row(student, chapter, "", status, 0, 0, message)])


def _hint_for_name_error(message: str, stub: Cell, analysis: Analysis) -> str:
    """Add where a name the learner's function missed is defined in their notebook."""
    missing = re.search(r"NameError: name '(\w+)' is not defined", message)
    if not missing:
        return message
    name = missing.group(1)
    if name in analysis.definitions.get(stub.index, set()):
        return (
            f"{message.rstrip('.')}. Note: `{name}` is assigned at the top of this exercise's "
            "cell, but the grader runs only the cell's definitions and imports: set it inside "
            "the function"
        )
    elsewhere = [
        index
        for index, names in sorted(analysis.definitions.items())
        if name in names and index != stub.index
    ]
    if not elsewhere:
        return message
    return (
        f"{message.rstrip('.')}. Note: `{name}` is defined in cell {elsewhere[0] + 1} of "
        "your notebook, but each exercise is graded from its own cell, of which only the "
        "definitions and imports run: define or import it in this exercise's cell"
    )


def worker_job(
    found: list[Found], chapter: Chapter, hidden: Path | None, limits: Limits
) -> dict[str, Any]:
    """The job of a grading process (format: tools/grade_worker.py) for the exercises of
    ``found`` that have a stub cell."""
    exercises, needed = [], set()
    for match in found:
        source = python_source(match.stub.source)
        tree = _parse(source)
        needed |= global_names(ast.unparse(keep_definitions(tree)))
        functions = [match.exercise.function, match.function]
        exercises.append(
            {
                "label": match.exercise.label,
                "checker": match.exercise.checker,
                "functions": [name for name in dict.fromkeys(functions) if name],
                "source": source,
                "filename": f"<cell {match.stub.number}>",
            }
        )
    return {
        "setup": chapter.setup,
        "context": context_statements(chapter, needed),
        "hidden": str(hidden.resolve()) if hidden else None,
        "memory_mb": limits.memory_mb,
        "output_mb": limits.output_mb,
        # A backstop should the grader itself die: the kernel ends the process.
        "cpu_seconds": math.ceil(limits.notebook_timeout) + 10,
        "exercises": exercises,
    }


def grade_submission(
    path: Path,
    course: Iterable[Chapter],
    limits: Limits | None = None,
    hidden: Path | None = None,
    student: str | None = None,
) -> Graded:
    """Grade one submitted notebook; every failure is a row, never an exception."""
    student = student or path.stem
    limits = limits or Limits()
    try:
        return _grade(path, list(course), limits, hidden, student)
    except Exception as error:  # noqa: BLE001 - a bug here must not stop the class's run
        where = traceback.extract_tb(error.__traceback__)[-1]
        return _whole(
            student,
            GRADER_ERROR,
            f"the grader failed on this submission: {type(error).__name__}: {error} "
            f"({Path(where.filename).name}, line {where.lineno})",
        )


def _grade(
    path: Path, course: list[Chapter], limits: Limits, hidden: Path | None, student: str
) -> Graded:
    try:
        cells = read_submission(path)
    except NotANotebook as error:
        return _whole(student, NOT_A_NOTEBOOK, str(error))
    chapter = identify_chapter(cells, course)
    if chapter is None:
        labels = sorted({prompt_label(cell) for cell in cells} - {""})
        return _whole(
            student,
            UNKNOWN_CHAPTER,
            "no chapter of the course has this notebook's exercises or title "
            f"(exercise labels found: {', '.join(labels) or 'none'})",
        )
    found, extras = find_exercises(cells, chapter)
    analysis = analyse(cells, chapter)
    rows: dict[str, Row] = {}
    runnable = []

    def row(exercise: CourseExercise, status: str, message: str) -> Row:
        points = exercise.points if status == CORRECT else 0
        return Row(student, chapter.stem, exercise.label, status, points, exercise.points, message)

    for match in found:
        exercise = match.exercise
        if match.prompt is None:
            orphans = [
                cell.number
                for cell in cells
                if cell.kind == "code"
                and SOLUTION_TAG not in cell.tags
                and exercise.checker in CHECKER_CALL.findall(cell.source)
            ]
            message = (
                f"the prompt cell of this exercise ({exercise.label}) is not in the notebook, "
                "so no code cell is graded for it"
            )
            if orphans:
                message += (
                    f" (cell {orphans[0]} calls {exercise.checker}: put the exercise's prompt "
                    "cell back above it)"
                )
            rows[exercise.label] = row(exercise, MISSING, message)
        elif match.stub is None:
            rows[exercise.label] = row(
                exercise,
                MISSING_STUB,
                f"no code cell after the prompt (cell {match.prompt.number}) calls "
                f"{exercise.checker} or defines {exercise.function}",
            )
        elif parse_python(match.stub.source) is None:
            try:
                _parse(python_source(match.stub.source), f"<cell {match.stub.number}>")
                detail = "it cannot be read as Python"
            except SyntaxError as error:
                detail = f"{error.msg} (line {error.lineno} of cell {match.stub.number})"
            rows[exercise.label] = row(exercise, SYNTAX_ERROR, detail)
        else:
            runnable.append(match)
    results = (
        run_exercises(worker_job(runnable, chapter, hidden, limits), limits) if runnable else {}
    )
    for match in runnable:
        status, message = results.get(
            match.exercise.label, (GRADER_ERROR, "the grading process gave no result")
        )
        if status == TAMPERED:
            analysis.flags.add(TAMPERED_CHECKER)
        message = _hint_for_name_error(message, match.stub, analysis)
        if status != CRASHED and "MemoryError" in message:
            message = (
                f"{message.rstrip('.')}. Note: each grading process may use at most "
                f"{limits.memory_mb} MB."
            )
        if match.stub.index in analysis.tampering:
            message = (
                message.rstrip(".")
                + ". Note: this cell tampers with the checkers ("
                + "; ".join(analysis.tampering[match.stub.index])
                + "): the grader runs only the cell's definitions and imports, checks them with "
                "the course's own checker and reports changes made while they run as tampered."
            )
        rows[match.exercise.label] = row(match.exercise, status, message)
    ordered = [rows[exercise.label] for exercise in chapter.exercises]
    ordered += [Row(student, chapter.stem, "", EXTRA, 0, 0, message) for message in extras]
    return Graded(student, chapter.stem, ordered, analysis.flags)


# --- The class ----------------------------------------------------------------------------


def load_hidden(path: Path, course: Iterable[Chapter]) -> dict[str, list[Callable[..., Any]]]:
    """The hidden cases of ``path``, checked: :class:`HiddenCasesError` says what is wrong."""
    if not path.is_file():
        raise HiddenCasesError(f"no hidden cases file at {path}")
    try:
        hidden = runpy.run_path(str(path)).get("HIDDEN")
    except Exception as error:  # noqa: BLE001 - the instructor's file: say what failed
        raise HiddenCasesError(f"{path} raised {type(error).__name__}: {error}") from error
    if not isinstance(hidden, dict):
        raise HiddenCasesError(f"{path} must define HIDDEN = {{exercise label: [case, ...]}}")
    labels = {exercise.label for chapter in course for exercise in chapter.exercises}
    for label, cases in hidden.items():
        if label not in labels:
            raise HiddenCasesError(
                f"{path}: HIDDEN names {label!r}, which is no exercise label of the course"
            )
        if not isinstance(cases, list | tuple) or not all(callable(case) for case in cases):
            raise HiddenCasesError(f"{path}: HIDDEN[{label!r}] must be a list of functions")
    return hidden


def submissions_in(directory: Path) -> dict[str, Path]:
    """{student: file} for every file of ``directory`` (hidden files aside); a student is the
    file's stem, or its name when two files share a stem."""
    files = sorted(
        path for path in directory.iterdir() if path.is_file() and not path.name.startswith(".")
    )
    stems = [path.stem for path in files]
    return {path.stem if stems.count(path.stem) == 1 else path.name: path for path in files}


def _points(value: float) -> str:
    return f"{value:g}"


def write_csvs(graded: list[Graded], out: Path) -> tuple[Path, Path]:
    """Write ``grades.csv`` and ``summary.csv`` into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    grades, summary = out / "grades.csv", out / "summary.csv"
    with grades.open("w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(GRADES_COLUMNS)
        for submission in graded:
            for row in submission.rows:
                writer.writerow(
                    [
                        row.student,
                        row.chapter,
                        row.exercise,
                        row.status,
                        _points(row.points),
                        _points(row.max_points),
                        row.message,
                    ]
                )
    with summary.open("w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(SUMMARY_COLUMNS)
        for submission in graded:
            writer.writerow(
                [
                    submission.student,
                    submission.chapter,
                    _points(submission.points),
                    _points(submission.max_points),
                    ";".join(sorted(submission.flags)),
                ]
            )
    return grades, summary


def grade_directory(
    directory: Path,
    *,
    jobs: int | None = None,
    limits: Limits | None = None,
    hidden: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[Graded]:
    """Grade every submission in ``directory``, ``jobs`` at a time, sorted by student."""
    course = load_course()
    if hidden is not None:
        load_hidden(hidden, course)
    submissions = submissions_in(directory)
    graded = []
    limits = limits or Limits()
    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
        futures = {
            pool.submit(grade_submission, path, course, limits, hidden, student): student
            for student, path in submissions.items()
        }
        try:
            for done, future in enumerate(as_completed(futures), start=1):
                submission = future.result()
                graded.append(submission)
                if progress:
                    flags = f" [{', '.join(sorted(submission.flags))}]" if submission.flags else ""
                    progress(
                        f"[{done}/{len(futures)}] {submission.student}: "
                        f"{_points(submission.points)}/{_points(submission.max_points)} "
                        f"{submission.chapter or submission.rows[0].status}{flags}"
                    )
        except KeyboardInterrupt:  # finish the submissions being graded, start no other
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    return sorted(graded, key=lambda submission: submission.student)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("submissions", type=Path, help="a directory of submitted notebooks")
    parser.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="submissions graded at once (default: the number of CPUs)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=Limits.timeout,
        help="seconds per exercise (default: %(default)s)",
    )
    parser.add_argument(
        "--notebook-timeout",
        type=float,
        default=Limits.notebook_timeout,
        help="seconds per submission (default: %(default)s)",
    )
    parser.add_argument(
        "--memory",
        type=int,
        default=Limits.memory_mb,
        help="MB of address space per grading process (default: %(default)s)",
    )
    parser.add_argument("--hidden", type=Path, help="a Python file of hidden cases (HIDDEN)")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("grades"),
        help="where to write grades.csv and summary.csv (default: grades/)",
    )
    args = parser.parse_args(argv)
    if not args.submissions.is_dir():
        parser.error(f"{args.submissions} is not a directory of submissions")
    if args.jobs < 1 or args.timeout <= 0 or args.notebook_timeout <= 0 or args.memory <= 0:
        parser.error("-j, --timeout, --notebook-timeout and --memory must be positive")
    limits = Limits(
        timeout=args.timeout, notebook_timeout=args.notebook_timeout, memory_mb=args.memory
    )
    try:
        graded = grade_directory(
            args.submissions,
            jobs=args.jobs,
            limits=limits,
            hidden=args.hidden.resolve() if args.hidden else None,
            progress=lambda line: print(line, file=sys.stderr),
        )
    except HiddenCasesError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    grades, summary = write_csvs(graded, args.out)
    print(f"wrote {grades} and {summary} ({len(graded)} submissions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
