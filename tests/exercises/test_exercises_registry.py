"""What every checker promises, tested once over all of them.

Each chapter's test module, ``test_exercises_<chapter module>.py``, holds a registry
``REFERENCES`` that maps each of the chapter's checkers to a correct answer. Over that registry:
the reference passes, an untouched stub is "not attempted", the messages call the learner's
function by its name, and no docstring hands over a passing answer. Each chapter module of
``selfattn_lib.exercises`` imports only the kit and the library's concept modules.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

from selfattn_lib import exercises

PACKAGE = Path(exercises.__file__).parent
CHAPTER_MODULES = sorted(
    info.name for info in pkgutil.iter_modules([str(PACKAGE)]) if info.name.startswith("ch")
)


def chapter_references(module: str) -> dict:
    return importlib.import_module(f"test_exercises_{module}").REFERENCES


REFERENCES = {
    (module, name): solution
    for module in CHAPTER_MODULES
    for name, solution in chapter_references(module).items()
}
IDS = [name for _, name in REFERENCES]


def checkers_of(module: str) -> dict:
    chapter = importlib.import_module(f"selfattn_lib.exercises.{module}")
    return {
        name: obj
        for name, obj in vars(chapter).items()
        if name.startswith("check_") and getattr(obj, "__module__", "") == chapter.__name__
    }


@pytest.mark.parametrize("module", CHAPTER_MODULES)
def test_every_checker_of_a_chapter_has_a_reference_and_is_exported(module):
    checkers = checkers_of(module)
    assert checkers, f"{module} defines no checker"
    assert set(checkers) == set(chapter_references(module)), module
    for name, checker in checkers.items():
        assert getattr(exercises, name) is checker, f"exercises.{name} is not {module}.{name}"


def stub(*args, **kwargs):
    raise NotImplementedError


def returns_none(*args, **kwargs):
    return None


@pytest.mark.parametrize(("module", "name"), REFERENCES, ids=IDS)
def test_the_reference_passes(module, name):
    feedback = getattr(exercises, name)(REFERENCES[module, name])
    assert feedback.passed and feedback.attempted, feedback.message
    assert repr(feedback).startswith("✔ Correct.")


@pytest.mark.parametrize(("module", "name"), REFERENCES, ids=IDS)
def test_an_untouched_stub_is_not_attempted(module, name):
    feedback = getattr(exercises, name)(stub)
    assert not feedback.passed and not feedback.attempted, feedback.message
    assert "NotImplementedError" in feedback.message


@pytest.mark.parametrize(("module", "name"), REFERENCES, ids=IDS)
def test_messages_call_the_function_by_the_learners_name(module, name):
    checker = getattr(exercises, name)
    feedback = checker(returns_none)
    assert not feedback.passed and feedback.attempted
    assert "returns_none" in feedback.message and "return" in feedback.message, feedback.message

    # A lambda has no usable name: the messages use the name the exercise asks for.
    default = next(iter(inspect.signature(checker).parameters))
    feedback = checker(lambda *args, **kwargs: None)
    assert default in feedback.message and "<lambda>" not in feedback.message, feedback.message


@pytest.mark.parametrize(("module", "name"), REFERENCES, ids=IDS)
def test_the_docstring_states_the_task_without_a_passing_answer(module, name):
    docstring = inspect.getdoc(getattr(exercises, name)) or ""
    assert "Expected signature" in docstring, name
    assert "✔ Correct" not in docstring and ".passed\nTrue" not in docstring, name


@pytest.mark.parametrize("module", CHAPTER_MODULES)
def test_no_text_of_a_checker_holds_code_to_copy(module):
    """Docstrings and messages (every string of the module) state the task and name mistakes;
    none holds a function to paste. The doctests' ``>>>`` lines feed the checker a wrong
    answer, which the test above shows fails."""
    tree = ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            for line in node.value.splitlines():
                if not line.lstrip().startswith(">>>"):
                    assert not re.search(r"\bdef \w+\(|\blambda\b", line), (module, line)


@pytest.mark.parametrize("module", ["_kit", *CHAPTER_MODULES])
def test_chapter_modules_import_only_the_kit_and_concept_modules(module):
    tree = ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from . import _kit, from ._kit import call
                base = ".".join(filter(None, ["selfattn_lib.exercises", base]))
            if base in ("selfattn_lib", "selfattn_lib.exercises"):
                imported.update(f"{base}.{alias.name}" for alias in node.names)
            else:
                imported.add(base)
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    ours = {name for name in imported if name.startswith("selfattn_lib.exercises.")}
    assert ours <= {"selfattn_lib.exercises._kit"}, f"{module} imports {sorted(ours)}"
    if module == "_kit":
        assert not {name for name in imported if name.startswith("selfattn_lib")}
