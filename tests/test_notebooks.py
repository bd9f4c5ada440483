"""Every chapter notebook has the shape of CONTRIBUTING.md ("How to add a chapter"), is
published in `_toc.yml` in reading order, and is committed with a clean top-to-bottom run.

nbval (run on the notebooks themselves) checks that the committed outputs are still what the
code produces; these tests check what nbval cannot: structure, links, metadata and tags.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from course import ROOT, chapter_notebooks, read_notebook, toc_files

NOTEBOOKS = chapter_notebooks()
SOLUTION_TAG = "solution"
WIDGET_TAGS = {"nbval-ignore-output", "remove-output"}
IGNORE_TAGS = {"nbval-ignore-output", "nbval-skip"}
DIRECTIVE = re.compile(r"^```\{(exercise|solution-start|solution-end)\}\s*(\S*)", re.MULTILINE)


def by_name(path: Path) -> str:
    return path.stem


@pytest.fixture(params=NOTEBOOKS, ids=by_name)
def notebook(request):
    return request.param, read_notebook(request.param)


def headings(nb) -> list[tuple[int, str]]:
    found = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        in_fence = False
        for line in cell.source.splitlines():
            if line.startswith("```"):
                in_fence = not in_fence
            match = re.match(r"^(#{1,6}) (.+)$", line)
            if match and not in_fence:
                found.append((len(match.group(1)), match.group(2).strip()))
    return found


def code_cells(nb) -> list:
    return [cell for cell in nb.cells if cell.cell_type == "code"]


def shows_image(cell) -> bool:
    return any("image/png" in output.get("data", {}) for output in cell.get("outputs", []))


def shows_widget(cell) -> bool:
    return any(
        "application/vnd.jupyter.widget-view+json" in output.get("data", {})
        for output in cell.get("outputs", [])
    )


def test_published_chapters_are_exactly_the_notebooks_in_reading_order():
    published = [file for file in toc_files() if file.startswith("notebooks/")]
    on_disk = [f"notebooks/{path.stem}" for path in NOTEBOOKS]
    assert published == on_disk, "every notebook is in _toc.yml, in order, and nothing else"
    numbers = [int(path.stem[:2]) for path in NOTEBOOKS]
    assert numbers == list(range(1, len(NOTEBOOKS) + 1)), "chapters are numbered 01, 02, …"
    for file in toc_files():
        assert any((ROOT / f"{file}{suffix}").exists() for suffix in (".md", ".ipynb")), file


def test_opening_cell_has_title_links_objectives_prerequisites_and_time(
    notebook, repository_url, config
):
    path, nb = notebook
    opening = nb.cells[0]
    assert opening.cell_type == "markdown"
    first_line = opening.source.splitlines()[0]
    assert re.match(r"^# [A-Z]", first_line), "starts with a '# Title' without a number"
    assert f"Chapter {int(path.stem[:2])} of" in opening.source

    github = repository_url.removeprefix("https://github.com/")
    branch = config["repository"]["branch"]
    colab = f"https://colab.research.google.com/github/{github}/blob/{branch}/notebooks/{path.name}"
    binder = f"https://mybinder.org/v2/gh/{github}/{branch}?urlpath=lab/tree/notebooks/{path.name}"
    assert f"[Open in Colab]({colab})" in opening.source
    assert f"[Launch Binder]({binder})" in opening.source
    for part in ("Learning objectives", "Prerequisites", "Estimated time"):
        assert part in opening.source, f"the opening cell names its {part.lower()}"


def test_setup_cell_installs_the_library_only_in_colab(notebook, repository_url):
    _, nb = notebook
    setup = code_cells(nb)[0]
    assert setup.source == (
        "# Setup: in Google Colab, install the course's helper library "
        "(elsewhere it is installed).\n"
        "import sys\n\n"
        'if "google.colab" in sys.modules:\n'
        f'    %pip install --quiet "selfattn-lib @ git+{repository_url}"'
    )
    imports = code_cells(nb)[1].source
    assert "import numpy as np" in imports
    assert re.search(r"default_rng\(\d+\)|manual_seed\(\d+\)", imports), "one explicit seed"


def test_headings_are_in_order_and_the_closing_sections_exist(notebook):
    _, nb = notebook
    found = headings(nb)
    assert [level for level, _ in found].count(1) == 1 and found[0][0] == 1
    for (previous, _), (level, title) in zip(found, found[1:], strict=False):
        assert level <= previous + 1, f"heading level skipped before {title!r}"
    titles = [title for level, title in found if level == 2]
    for section in ("Exercises", "Summary", "Further reading"):
        assert section in titles
    assert titles[-2:] == ["Summary", "Further reading"]
    assert any(title.startswith("Check") for _, title in found), "a 'Check it' section"


def test_exercises_have_checkers_and_hidden_solutions(notebook):
    _, nb = notebook
    labels, open_solution, solutions = [], None, []
    for cell in nb.cells:
        tags = set(cell.metadata.get("tags", []))
        if cell.cell_type == "markdown":
            for kind, label in DIRECTIVE.findall(cell.source):
                if kind == "exercise":
                    assert "\n:label: ex-" in cell.source, "exercises are labelled ex-…"
                    labels.append(re.search(r":label: (\S+)", cell.source).group(1))
                elif kind == "solution-start":
                    assert open_solution is None and label in labels
                    assert ":class: dropdown" in cell.source, "solutions are hidden until clicked"
                    open_solution, solutions = label, solutions + [label]
                else:
                    assert open_solution is not None
                    open_solution = None
        elif open_solution is not None:
            assert SOLUTION_TAG in tags, "code inside a solution is tagged 'solution'"
            assert "exercises.check_" in cell.source or "check_" in cell.source
        else:
            assert SOLUTION_TAG not in tags, "only solution code is tagged 'solution'"
    assert 3 <= len(labels) <= 5, "3–5 exercises"
    assert solutions == labels, "every exercise has one solution, in order"
    stubs = [cell for cell in code_cells(nb) if "raise NotImplementedError" in cell.source]
    assert len(stubs) >= len(labels), "each exercise starts from a stub"
    for stub in stubs:
        assert "check_" in stub.source, "each stub cell runs its checker"
        shown = "".join(
            output.get("text", "") + str(output.get("data", {})) for output in stub.outputs
        )
        assert "Not attempted yet" in shown, "the untouched stub does not break the run"


def test_figures_have_alt_text_and_captions(notebook):
    _, nb = notebook
    figures = [cell for cell in code_cells(nb) if shows_image(cell)]
    assert figures, "every chapter draws"
    for cell in figures:
        options = cell.metadata.get("mystnb", {})
        assert options.get("image", {}).get("alt", "").strip(), cell.source[:80]
        assert options.get("figure", {}).get("caption", "").strip(), cell.source[:80]


def test_widgets_are_tagged_and_have_a_static_counterpart(notebook):
    _, nb = notebook
    cells = nb.cells
    widget_positions = [i for i, cell in enumerate(cells) if shows_widget(cell)]
    assert widget_positions, "every chapter has a widget"
    for position in widget_positions:
        cell = cells[position]
        assert WIDGET_TAGS <= set(cell.metadata.get("tags", []))
        following = [c for c in cells[position + 1 : position + 4] if c.cell_type == "code"]
        assert any(shows_image(c) for c in following), "a static figure follows the widget"


def test_ignored_outputs_say_why(notebook):
    _, nb = notebook
    for cell in code_cells(nb):
        if IGNORE_TAGS & set(cell.metadata.get("tags", [])):
            assert cell.source.startswith("#"), "an exempted cell starts with its reason"


def test_committed_outputs_come_from_one_clean_run(notebook):
    _, nb = notebook
    counts = [cell.execution_count for cell in code_cells(nb)]
    assert counts == list(range(1, len(counts) + 1)), "run top to bottom in a fresh kernel"
    for cell in code_cells(nb):
        for output in cell.outputs:
            assert output.output_type != "error", cell.source[:80]
            assert output.get("name") != "stderr", f"stderr output in: {cell.source[:80]}"
    assert nb.metadata.kernelspec.name == "python3"
    assert "widgets" not in nb.metadata, "no widget state is committed"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=by_name)
def test_welcome_page_and_readme_list_every_published_chapter(path):
    assert f"{{doc}}`../notebooks/{path.stem}`" in (ROOT / "book" / "intro.md").read_text()
    assert f"`notebooks/{path.name}`" in (ROOT / "README.md").read_text()
