"""CONTRIBUTING.md's list of library functions that answer exercises is complete and true:
instructors rely on it to know what the library hands a student. Each of them computes a right
answer, and its checker turns it down: a learner's function that calls it does not pass."""

from __future__ import annotations

import importlib
import inspect
import warnings

import pytest
from course import ROOT

import selfattn_lib
from selfattn_lib import exercises
from tools.instructors_page import library_answers

RIGHT_BUT_CALLS = "gives the right result, but it calls `selfattn_lib."


def listed() -> set[tuple[str, str]]:
    return set(library_answers(ROOT))


def right_answer_pairs() -> dict[tuple[str, str], str]:
    """Every (public concept function, checker) pair in which the function's results are
    right, with the checker's verdict: passed, or turned down for calling the library."""
    pytest.importorskip("torch")
    found = {}
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
                if feedback.passed or RIGHT_BUT_CALLS in feedback.message:
                    found[(f"{module_name}.{name}", checker_name)] = repr(feedback)
    return found


def test_the_list_of_answers_in_the_library_is_complete_and_true():
    assert listed(), "CONTRIBUTING.md lists no answer"
    answers = right_answer_pairs()
    assert listed() == set(answers)
    passing = {pair: verdict for pair, verdict in answers.items() if RIGHT_BUT_CALLS not in verdict}
    assert not passing, "a library function passes a checker as it is"
