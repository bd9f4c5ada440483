"""How the grader (tools/grade.py) reads the course and a submission: the chapters' exercises,
setup cells and solutions from the course notebooks; a submission's cells, its chapter, each
exercise's stub cell matched by label; and the flags (solution cells, the course's own
notebook, tampering) found by reading the code, without running it."""

from __future__ import annotations

import ast
import json
import re
import symtable
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import nbformat
from IPython.core.inputtransformer2 import TransformerManager

from tools.plain_edition import EXERCISE_HEADING
from tools.repository import ROOT, chapter_notebooks, parse_exercise, read_notebook
from tools.student_copies import SOLUTION_TAG

SOLUTION_CELLS = "solution-cells"
COURSE_NOTEBOOK = "course-notebook"
TAMPERED_CHECKER = "tampered-checker"

MAX_NOTEBOOK_BYTES = 64 * 1024 * 1024
SOLUTION_START = re.compile(r"^```\{solution-start\}|^#{1,6} Solution to Exercise", re.MULTILINE)
SECTION = re.compile(r"^#{1,2} ")
CHECKER_CALL = re.compile(r"\b(check_\w+)\s*\(")
# Cell magics whose body is plain Python that runs as it is.
TRANSPARENT_CELL_MAGICS = re.compile(r"\A\s*%%(time|timeit|capture)\b[^\n]*\n")
# selfattn_lib's parts that no checker relies on: changing them is no tampering.
UNGUARDED = re.compile(r"\b(plotting|widgets)\b")
# A call of one of these names never runs while grading (chapter 10's training).
EXPENSIVE_CALLS = frozenset({"train"})


class NotANotebook(ValueError):
    """A submission that cannot be read as a Jupyter notebook."""


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


def parse_source(source: str, filename: str = "<unknown>") -> ast.Module:
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
        return parse_source(python_source(source))
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
    optional: bool  # its points are a bonus, not part of the chapter's maximum
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
                optional=exercise.optional,
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
    heading = EXERCISE_HEADING.search(cell.source)
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
