"""The instructors' page (book/instructors.md, made by tools/instructors_page.py): committed
exactly as the generator writes it from the notebooks, listing every published notebook with
its links, its objectives and a box in the diagram. Its parts have tests of their own:
tests/test_instructors_entries.py, test_instructors_graph.py (the dependency diagram) and
test_instructors_bundles.py (the suggested bundles, the term and its labs)."""

from __future__ import annotations

from pathlib import Path

import pytest
from course import toc_files

from tools import instructors_page as page
from tools.repository import launch_links, load_config, published_notebooks, read_chapter


def by_name(path: Path) -> str:
    return path.stem


@pytest.fixture(scope="module")
def committed() -> str:
    return page.PAGE.read_text(encoding="utf-8")


def test_the_committed_page_is_what_the_generator_writes(committed):
    assert committed == page.render(), "book/instructors.md is out of date: run `make instructors`"
    assert page.main(["--check"]) == 0


def test_the_page_is_published_before_the_reference_part():
    files = toc_files()
    assert "book/instructors" in files
    assert files.index("book/instructors") < files.index("book/notation")


@pytest.mark.parametrize("path", published_notebooks(), ids=by_name)
def test_every_published_notebook_has_its_section_links_and_box(path, committed):
    chapter = read_chapter(path)
    links = launch_links(path, load_config())
    assert f"[Open in Colab]({links['colab']})" in committed
    assert f"[Launch Binder]({links['binder']})" in committed
    assert f"{{doc}}`Read it on this site <../notebooks/{path.stem}>`" in committed
    assert f'href="../notebooks/{path.stem}.html"' in committed, "a box in the diagram"
    for exercise in chapter.exercises:
        assert f"<{exercise.label}>`" in committed or f"{{ref}}`{exercise.label}`" in committed
    for objective in chapter.objectives:
        assert page.relink(objective) in committed


def test_links_of_the_notebooks_are_rewritten_for_the_book_folder():
    text = "[Chapter 1](01_a.ipynb), [notation](../book/notation.md), [web](https://x.org/a.md)"
    assert page.relink(text) == (
        "[Chapter 1](../notebooks/01_a.ipynb), [notation](notation.md), [web](https://x.org/a.md)"
    )


def test_doc_roles_of_the_notebooks_are_rewritten_too():
    text = "{doc}`01_a`, {doc}`chapter 2 <02_b>`, {doc}`../book/glossary`, {doc}`/abs`"
    assert page.relink(text) == (
        "{doc}`../notebooks/01_a`, {doc}`chapter 2 <../notebooks/02_b>`, {doc}`glossary`, "
        "{doc}`/abs`"
    )


def test_code_spans_survive_backticks():
    assert page.inline_code("plain") == "`plain`"
    assert page.inline_code("use `x` here") == "`` use `x` here ``"
