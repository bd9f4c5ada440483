"""Tests of tools/stats.py and, through it, of the chapters' length: the core path of every
chapter stays within its budget of words and draws at least one computed diagram, "Going
deeper" parts are marked so that the site, the plain edition and the count agree, and each
chapter keeps at most two short "Common mistake" boxes that link to the appendix."""

import re

import nbformat
import pytest

from tools.repository import chapter_notebooks, read_notebook
from tools.stats import (
    COMMON_MISTAKE,
    COMMON_MISTAKES,
    CORE_WORDS,
    chapter_stats,
    folded_cells,
    going_deeper_headings_start_their_cells,
)


def notebook(*sources: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    for source in sources:
        if source.startswith("CODE"):
            nb.cells.append(nbformat.v4.new_code_cell(source.removeprefix("CODE ")))
        else:
            nb.cells.append(nbformat.v4.new_markdown_cell(source))
    return nb


def test_a_going_deeper_part_runs_to_the_next_heading_of_its_level_or_higher():
    nb = notebook(
        "# Title",
        "## Section\n\nCore words.",
        "### Going deeper: subnormal numbers\n\nFolded words.",
        "CODE print(1)",
        "#### A subheading inside\n\nStill folded.\n\n```python\n# not a heading\n```",
        "### Next subsection\n\nCore again.",
        "## Going deeper: another\n\nFolded.",
        "## Summary",
    )
    assert folded_cells(nb) == {2, 3, 4, 6}


def test_words_of_the_opening_exercises_solutions_and_folded_parts_are_not_core(tmp_path):
    nb = notebook(
        "# Title\n\nopening words here",
        "one two three",
        "```{exercise} Do it (easy)\n:label: ex\nprompt words\n```",
        "```{solution-start} ex\n```\nsolution words",
        "CODE x = 1",
        "more solution words\n```{solution-end}\n```",
        "### Going deeper: details\n\nfolded words",
        "## Summary\n\nfour five",
    )
    path = tmp_path / "01_test.ipynb"
    nbformat.write(nb, path)
    stats = chapter_stats(path)
    assert stats.core_words == len("one two three ## Summary four five".split())
    assert stats.folded_words == len("### Going deeper: details folded words".split())
    assert stats.exercises == 1


def test_going_deeper_headings_must_start_their_cell():
    nb = notebook("Some text.\n\n### Going deeper: hidden in the middle\n\nText.")
    assert going_deeper_headings_start_their_cells(nb) == ["### Going deeper: hidden in the middle"]


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda path: path.stem)
def test_the_core_path_of_every_chapter_stays_within_its_budget(path):
    stats = chapter_stats(path)
    assert stats.core_words <= CORE_WORDS, (
        f"{path.stem}: {stats.core_words} core words; fold a deep dive into a 'Going deeper' "
        f"part or move it to the appendix (budget {CORE_WORDS})"
    )
    assert stats.diagrams >= 1, (
        f"{path.stem} teaches a flow or an architecture: draw it as a computed diagram"
    )


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda path: path.stem)
def test_going_deeper_parts_and_common_mistakes_are_marked_as_the_tools_expect(path):
    nb = read_notebook(path)
    assert not going_deeper_headings_start_their_cells(nb)
    boxes = [
        cell.source[match.start() :]
        for cell in nb.cells
        if cell.cell_type == "markdown"
        for match in COMMON_MISTAKE.finditer(cell.source)
    ]
    assert len(boxes) <= COMMON_MISTAKES, f"{path.stem}: at most {COMMON_MISTAKES} boxes"
    for box in boxes:
        assert re.search(r"\{(ref|doc)\}`[^`]*pitfalls", box) or "{ref}`pitfall" in box, (
            f"{path.stem}: a Common mistake box links to its appendix entry: {box[:80]}"
        )
