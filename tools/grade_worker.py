"""The child process of ``tools/grade.py``: grades the exercises of one submission.

The grader starts this file with the course's Python, in a fresh process for each submission
(and a fresh one again after an exercise that hung, crashed or tampered with the checkers),
in an empty working directory::

    python -I tools/grade_worker.py JOB.json

``JOB.json`` says what to run (written by ``tools.grade_run.worker_job``)::

    {
      "setup": ["<python source>", ...],     # the course chapter's setup cells, run in full
      "context": ["<python source>", ...],   # cheap statements of the chapter that the
                                             # learner's definitions use, each run on its own
      "hidden": "/path/to/hidden.py" | null, # the instructor's hidden cases (tools/grade.py)
      "memory_mb": 4096, "output_mb": 16,    # resource limits of this process
      "cpu_seconds": 310,
      "exercises": [
        {"label": "ex-ch1-cosine", "checker": "check_cosine_similarity",
         "functions": ["cosine_similarity_stacked"],  # names to hand to the checker, in order
         "source": "<python source of the learner's cell>", "filename": "<cell 55>",
         "earlier": [{"source": …, "filename": …}, ...]},  # the exercise cells before it
        ...
      ]
    }

Before any learner code runs, the process limits its address space (``RLIMIT_AS``: a
``MemoryError`` instead of a machine out of memory), its CPU time (a backstop: the grader
ends it on time), the size of files it writes (``RLIMIT_FSIZE``) and core dumps, blocks
outgoing connections (``socket.socket.connect`` and friends raise ``PermissionError``),
points its standard input at ``/dev/null`` and its standard output at its standard error (a
file the grader reads when the process dies).
Events go, one JSON object per line, to the standard output it started with:

- ``{"event": "ready"}`` once the course's setup ran, or ``{"event": "setup-failed",
  "message": …}``;
- ``{"event": "start", "label": …}`` before each exercise, and
  ``{"event": "result", "label": …, "status": …, "message": …}`` after it.

For each exercise only the function and class definitions, the imports and the names bound to
literals of the learner's cell run (:func:`keep_definitions`), after those of the learner's
earlier exercise cells (a function written for one exercise may serve the next), in a copy of
the chapter's namespace, and the checker is
the one :mod:`selfattn_lib.exercises` held before any learner code ran. If the learner's code
changed the checkers, their kit, NumPy's functions or the builtins while it ran, the exercise
is reported as ``tampered`` and the process ends: the grader starts a new one for the rest.

This is a guard against mistakes and naive cheating, not a sandbox: the learner's code runs
with the grader's user rights. Grade untrusted submissions in a container or a throwaway VM.
The grader's tests (tests/test_grade.py) run this file end to end.
"""

from __future__ import annotations

import ast
import builtins
import faulthandler
import json
import os
import resource
import runpy
import signal
import socket
import sys
import traceback
import types
from collections.abc import Callable
from typing import Any

# The statuses of an exercise that this process reports (tools/grade_run.py adds the others).
CORRECT = "correct"
NOT_YET = "not yet"
NOT_ATTEMPTED = "not attempted"
FAILED_HIDDEN = "failed hidden case"
ERROR = "error"
SYNTAX_ERROR = "syntax error"
TAMPERED = "tampered"

# What a learner's cell may contribute: definitions and imports, nothing that runs on its own.
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)
# Modules whose attributes the checkers rely on: a change while the learner's code ran is
# tampering (selfattn_lib's modules are added by name prefix).
WATCHED_MODULES = ("builtins", "math", "numpy", "numpy.linalg")


def _is_literal(node: ast.AST) -> bool:
    """A constant written out: ``1e-12``, ``-3``, ``"pad"``, ``(1, 2)``, ``[0.5, 2 ** 10]``."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp):
        return _is_literal(node.operand)
    if isinstance(node, ast.BinOp):
        return _is_literal(node.left) and _is_literal(node.right)
    if isinstance(node, ast.Tuple | ast.List):
        return all(_is_literal(element) for element in node.elts)
    return False


def _is_constant_assignment(node: ast.AST) -> bool:
    """``EPSILON = 1e-12``: names bound to literals, which cost nothing to run."""
    return (
        isinstance(node, ast.Assign)
        and all(isinstance(target, ast.Name) for target in node.targets)
        and _is_literal(node.value)
    )


def keep_definitions(tree: ast.Module) -> ast.Module:
    """``tree`` with only its top-level function and class definitions, imports and names
    bound to literals (``EPSILON = 1e-12``).

    Examples
    --------
    >>> tree = ast.parse("import numpy as np\\nx = 1\\ny = np.ones(3)\\ndef f(): return x\\nf()")
    >>> [type(node).__name__ for node in keep_definitions(tree).body]
    ['Import', 'Assign', 'FunctionDef']
    """
    kept = [
        node for node in tree.body if isinstance(node, DEFINITIONS) or _is_constant_assignment(node)
    ]
    return ast.Module(body=kept, type_ignores=[])


def limit_resources(memory_mb: int, output_mb: int, cpu_seconds: int) -> None:
    """Cap this process's address space, CPU time and written file size, and switch off core
    dumps."""
    memory = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    # The grader ends a process on time; this ends it should the grader die first.
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 5))
    output = output_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_FSIZE, (output, output))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Past the file size limit a write fails with EFBIG instead of killing the process.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def block_network() -> None:
    """Make every outgoing connection (and name lookup) raise ``PermissionError``."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError("the grader runs submissions without network access")

    for name in ("connect", "connect_ex", "sendto", "sendmsg"):
        setattr(socket.socket, name, refuse)
    socket.create_connection = refuse
    socket.getaddrinfo = refuse


def _watched() -> dict[str, types.ModuleType]:
    return {
        name: module
        for name, module in list(sys.modules.items())
        if isinstance(module, types.ModuleType)
        and (name in WATCHED_MODULES or name == "selfattn_lib" or name.startswith("selfattn_lib."))
    }


def snapshot() -> dict[tuple[str, ...], Any]:
    """What the checkers rely on: every attribute of the watched modules, the attributes of
    the classes they define and the code of their functions (the objects themselves, so
    that a replaced object is never mistaken for a new one with a recycled ``id``)."""
    state: dict[tuple[str, ...], Any] = {}
    for name, module in _watched().items():
        state[(name,)] = module
        for attribute, value in list(vars(module).items()):
            state[(name, attribute)] = value
            if isinstance(value, types.FunctionType):
                state[(name, attribute, "__code__")] = value.__code__
                state[(name, attribute, "__defaults__")] = value.__defaults__
            elif isinstance(value, type) and value.__module__ == name:
                for member, inner in list(vars(value).items()):
                    state[(name, attribute, member)] = inner
    return state


def changed_since(before: dict[tuple[str, ...], Any]) -> list[str]:
    """The attributes of ``before`` that are now missing or bound to another object."""
    after = snapshot()
    missing = object()
    changed = [key for key, value in before.items() if after.get(key, missing) is not value]
    # A replaced function also has new code: name the function once.
    return sorted(".".join(key) for key in changed if key[:-1] not in changed)


def describe(error: BaseException) -> str:
    """``"ValueError: message (line 3 of cell 12)"``: an exception for a message, with
    the deepest line of the learner's cell it went through."""
    try:
        detail = str(error)
    except Exception:  # noqa: BLE001 - a learner's exception whose __str__ fails
        detail = ""
    text = f"{type(error).__name__}: {detail}" if detail else type(error).__name__
    frames = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if frame.filename[:5] == "<cell"
    ]
    if frames:
        text += f" (line {frames[-1].lineno} of {frames[-1].filename.strip('<>')})"
    return text


def load_hidden(path: str | None) -> dict[str, list[Callable[[Any], Any]]]:
    """The instructor's hidden cases: ``HIDDEN`` of the file at ``path`` (tools/grade.py)."""
    if not path:
        return {}
    return {label: list(cases) for label, cases in runpy.run_path(path)["HIDDEN"].items()}


def run_hidden_cases(function: Any, cases: list[Callable[[Any], Any]]) -> str | None:
    """The message of the first hidden case ``function`` fails, else None."""
    for number, case in enumerate(cases, start=1):
        name = getattr(case, "__name__", "case")
        try:
            outcome = case(function)
            passed, message = outcome
        except Exception as error:  # noqa: BLE001 - a failing case is feedback, not a crash
            return f"hidden case {number} ({name}) raised {describe(error)}"
        if not passed:
            return f"hidden case {number} ({name}) failed: {message}"
    return None


def define_earlier(cells: list[dict[str, str]], namespace: dict[str, Any]) -> None:
    """Run the definitions of the learner's earlier exercise cells in ``namespace``, so that
    an exercise may use a function written for an earlier one (a cell that fails to parse or
    to run is skipped here: its own exercise reports it)."""
    for cell in cells:
        try:
            code = compile(keep_definitions(ast.parse(cell["source"])), cell["filename"], "exec")
            exec(code, namespace)  # noqa: S102
        except BaseException:  # noqa: BLE001, S110 - reported by the cell's own exercise
            continue


def grade_exercise(
    exercise: dict[str, Any],
    namespace: dict[str, Any],
    checker: Callable[[Any], Any],
    feedback_type: type,
    hidden: list[Callable[[Any], Any]],
) -> tuple[str, str]:
    """(status, message) for one exercise: the learner's definitions, then the checker,
    then the hidden cases."""
    filename = exercise["filename"]
    try:
        tree = ast.parse(exercise["source"], filename)
    except SyntaxError as error:
        return SYNTAX_ERROR, f"{error.msg} (line {error.lineno} of {filename.strip('<>')})"
    learner = dict(namespace)  # a fresh copy: one exercise cannot rebind another's names
    define_earlier(exercise.get("earlier", []), learner)
    try:
        code = compile(keep_definitions(tree), filename, "exec")
    except SyntaxError as error:  # found only by the compiler, e.g. a misplaced nonlocal
        return SYNTAX_ERROR, f"{error.msg} (line {error.lineno} of {filename.strip('<>')})"
    try:
        exec(code, learner)  # noqa: S102
    except BaseException as error:  # noqa: BLE001 - SystemExit too: it is the learner's code
        return ERROR, f"running the definitions of your cell raised {describe(error)}"
    names = exercise["functions"]
    function = next((learner[name] for name in names if callable(learner.get(name))), None)
    if function is None:
        defined = sorted(
            node.name
            for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        )
        return ERROR, (
            f"your cell defines no function `{names[0]}` for {exercise['checker']} "
            f"(it defines: {', '.join(defined) or 'nothing'})"
        )
    try:
        feedback = checker(function)
    except BaseException as error:  # noqa: BLE001 - e.g. sys.exit() inside the function
        return ERROR, f"the check stopped: your code raised {describe(error)}"
    if type(feedback) is not feedback_type:
        return TAMPERED, f"the checker returned {type(feedback).__name__}, not its Feedback"
    if not feedback.attempted:
        return NOT_ATTEMPTED, feedback.message
    if not feedback.passed:
        return NOT_YET, feedback.message
    failed = run_hidden_cases(function, hidden)
    if failed:
        return FAILED_HIDDEN, f"passed the public checker, but {failed}"
    return CORRECT, feedback.message


def main(job_path: str) -> None:
    """Run the job at ``job_path``, writing its events; ends with ``os._exit`` so that no
    thread or ``atexit`` hook of the learner's code can keep the process alive."""
    with open(job_path, encoding="utf-8") as file:
        job = json.load(file)
    events = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)

    def emit(**event: Any) -> None:
        events.write(json.dumps(event) + "\n")

    # The learner's prints go to stderr (a file), never into the events; input() gets EOF.
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    faulthandler.enable()
    limit_resources(job["memory_mb"], job["output_mb"], job["cpu_seconds"])
    block_network()

    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    try:
        for number, source in enumerate(job["setup"], start=1):
            exec(compile(source, f"<course setup cell {number}>", "exec"), namespace)  # noqa: S102
        for source in job["context"]:
            try:
                exec(compile(source, "<course context>", "exec"), namespace)  # noqa: S102
            except Exception as error:  # noqa: BLE001 - a learner's NameError will say so
                print(f"grader: a course statement failed: {describe(error)}", file=sys.stderr)
        from selfattn_lib import exercises
        from selfattn_lib.exercises._kit import Feedback

        checkers = {name: getattr(exercises, name) for name in exercises.__all__}
        hidden = load_hidden(job["hidden"])
    except BaseException as error:  # noqa: BLE001 - reported to the grader, which says so
        emit(event="setup-failed", message=f"the course's setup failed: {describe(error)}")
        events.close()
        os._exit(1)
    baseline = snapshot()
    emit(event="ready")
    for exercise in job["exercises"]:
        emit(event="start", label=exercise["label"])
        status, message = grade_exercise(
            exercise,
            namespace,
            checkers[exercise["checker"]],
            Feedback,
            hidden.get(exercise["label"], []),
        )
        changed = changed_since(baseline)
        if changed:
            status = TAMPERED
            message = (
                "your code changed what the checkers rely on while it ran ("
                + ", ".join(changed[:5])
                + (", …" if len(changed) > 5 else "")
                + "), so its verdict cannot be trusted"
            )
        emit(event="result", label=exercise["label"], status=status, message=message)
        if changed:
            break  # the grader starts a fresh process for the remaining exercises
    events.close()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1])
