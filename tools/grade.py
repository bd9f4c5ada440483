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
submitted file (``student, chapter, points, max_points, flags``). An exercise is worth the
``:points:`` option of its directive (tools.repository.parse_exercise), else 1, and scores
its points only when ``correct``. An optional exercise's points are a bonus: its row has
``max_points`` 0, so a summary's points can exceed its maximum.
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
``selfattn_lib``, or a ``tampered`` exercise), ``needs-review`` (a row whose status is not a
checker's verdict: timeout, crashed, error, syntax error, not run, missing, extra, failed
hidden case, not a notebook, …: read its message before trusting the points).

The grader runs learners' code: the limits guard against mistakes and naive cheating, not
against an attacker. Run it in a container or a throwaway VM.
"""

from __future__ import annotations

import argparse
import csv
import os
import runpy
import sys
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from tools.grade_course import Chapter, load_course
from tools.grade_run import Graded, Limits, grade_submission

GRADES_COLUMNS = ("student", "chapter", "exercise", "status", "points", "max_points", "message")
SUMMARY_COLUMNS = ("student", "chapter", "points", "max_points", "flags")


class HiddenCasesError(ValueError):
    """A ``--hidden`` file that does not define ``HIDDEN`` as described in the docstring."""


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
