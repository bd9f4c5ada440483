"""How the grader (tools/grade.py) runs a submission's exercises: worker processes
(tools/grade_worker.py) with time and memory limits, a new one after an exercise that hangs,
dies or tampers, and the rows of one submission."""

from __future__ import annotations

import ast
import json
import math
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.grade_course import (
    CHECKER_CALL,
    TAMPERED_CHECKER,
    Analysis,
    Cell,
    Chapter,
    CourseExercise,
    Found,
    NotANotebook,
    analyse,
    context_statements,
    find_exercises,
    global_names,
    identify_chapter,
    parse_python,
    parse_source,
    prompt_label,
    python_source,
    read_submission,
)
from tools.grade_worker import (
    CORRECT,
    NOT_ATTEMPTED,
    NOT_YET,
    SYNTAX_ERROR,
    TAMPERED,
    keep_definitions,
)
from tools.student_copies import SOLUTION_TAG

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

# The flag of a submission with a row that a person should read: any status but the
# checker's own verdicts (and tampering, which has its own flag).
NEEDS_REVIEW = "needs-review"
VERDICTS = frozenset({CORRECT, NOT_YET, NOT_ATTEMPTED, TAMPERED})


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
    row = Row(student, chapter, "", status, 0, 0, message)
    return Graded(student, chapter, [row], {NEEDS_REVIEW})


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
    exercises, needed, earlier = [], set(), []
    for match in found:
        source = python_source(match.stub.source)
        tree = parse_source(source)
        needed |= global_names(ast.unparse(keep_definitions(tree)))
        functions = [match.exercise.function, match.function]
        cell = {"source": source, "filename": f"<cell {match.stub.number}>"}
        exercises.append(
            {
                "label": match.exercise.label,
                "checker": match.exercise.checker,
                "functions": [name for name in dict.fromkeys(functions) if name],
                **cell,
                # A function written for an earlier exercise may be used again.
                "earlier": list(earlier),
            }
        )
        earlier.append(cell)
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
        # An optional exercise's points are a bonus: on top of the chapter's maximum.
        most = 0 if exercise.optional else exercise.points
        return Row(student, chapter.stem, exercise.label, status, points, most, message)

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
                parse_source(python_source(match.stub.source), f"<cell {match.stub.number}>")
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
    if any(row.status not in VERDICTS for row in ordered):
        analysis.flags.add(NEEDS_REVIEW)
    return Graded(student, chapter.stem, ordered, analysis.flags)
