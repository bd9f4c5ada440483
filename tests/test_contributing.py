"""CONTRIBUTING.md's list of library functions that answer exercises is complete and true:
instructors rely on it to know what the library hands a student."""

from __future__ import annotations

import importlib
import inspect
import re
import warnings

import pytest
from course import ROOT

import selfattn_lib
from selfattn_lib import exercises

ROW = re.compile(r"^\| `(\w+)\.(\w+)` \| `(check_\w+)` \| (\d+) \|$", re.MULTILINE)


def listed() -> set[tuple[str, str]]:
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    return {(f"{module}.{name}", checker) for module, name, checker, _ in ROW.findall(text)}


def passing_pairs() -> set[tuple[str, str]]:
    """Every (public concept function, checker) pair in which the function passes."""
    pytest.importorskip("torch")
    found = set()
    for module_name in selfattn_lib.CONCEPT_MODULES:
        module = importlib.import_module(f"selfattn_lib.{module_name}")
        for name, function in vars(module).items():
            if name.startswith("_") or not inspect.isfunction(function):
                continue
            if function.__module__ != module.__name__:
                continue
            for checker_name in exercises.__all__:
                if not checker_name.startswith("check_"):
                    continue
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    feedback = getattr(exercises, checker_name)(function)
                if feedback.passed:
                    found.add((f"{module_name}.{name}", checker_name))
    return found


def test_the_list_of_answers_in_the_library_is_complete_and_true():
    assert listed(), "CONTRIBUTING.md lists no answer"
    assert listed() == passing_pairs()
