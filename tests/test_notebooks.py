"""Every notebook has the shape of CONTRIBUTING.md, is published in `_toc.yml` in reading order,
and is committed with a clean top-to-bottom run.

Two kinds of notebook live in `notebooks/`: the numbered chapters (`NN_topic.ipynb`, "How to
add a chapter") and the appendix ("Pitfalls and myths", `pitfalls.ipynb`), which has no number,
no exercises and no widget, but one item per pitfall and a quiz. Checks that hold for both are
parametrized over both; the rest are specific to one kind.

nbval (run on the notebooks themselves) checks that the committed outputs are still what the
code produces; these tests check what nbval cannot: structure, links, metadata and tags.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from course import (
    ROOT,
    all_notebooks,
    appendix_notebooks,
    chapter_notebooks,
    read_notebook,
    toc_files,
    toc_parts,
)

from tools.repository import LEVELS, install_url, pinned_ref, read_chapter

NOTEBOOKS = chapter_notebooks()
APPENDIX = appendix_notebooks()
PITFALLS = ROOT / "notebooks" / "pitfalls.ipynb"
SOLUTION_TAG = "solution"
WIDGET_TAGS = {"nbval-ignore-output", "remove-output"}
IGNORE_TAGS = {"nbval-ignore-output", "nbval-skip"}
DIRECTIVE = re.compile(r"^```\{(exercise|solution-start|solution-end)\}\s*(\S*)", re.MULTILINE)
# The appendix's groups, in the order of the chapters they belong to, then the quiz.
APPENDIX_GROUPS = [
    "How to read this appendix",
    "Similarity and scores",
    "Softmax",
    "Scaling",
    "Masks",
    "Multi-head attention",
    "Positional information",
    "The encoder block",
    "Decoder and training",
    "Attention at scale",
    "Language models",
    "Modern attention",
    "Interpretation",
    "Self-check quiz",
    "Further reading",
]
PITFALL_LABEL = re.compile(r"^\((pitfall-[a-z0-9-]+)\)=$")
CHAPTER_LINK = re.compile(r"\{doc\}`\.\./notebooks/(\d\d)_([a-z0-9_]+)`")
PITFALL_REF = re.compile(r"\{ref\}`(?:[^`<]*<)?(pitfall-[a-z0-9-]+)>?`")


def by_name(path: Path) -> str:
    return path.stem


@pytest.fixture(params=NOTEBOOKS, ids=by_name)
def notebook(request):
    """A numbered chapter."""
    return request.param, read_notebook(request.param)


@pytest.fixture(params=all_notebooks(), ids=by_name)
def any_notebook(request):
    """A chapter or the appendix: for the checks both must pass."""
    return request.param, read_notebook(request.param)


@pytest.fixture(scope="module")
def pitfalls():
    assert PITFALLS.exists(), "the appendix notebooks/pitfalls.ipynb exists"
    return read_notebook(PITFALLS)


def headings(nb) -> list[tuple[int, str]]:
    return [(level, title) for level, title, _ in headings_with_cells(nb)]


def headings_with_cells(nb) -> list[tuple[int, str, int]]:
    """(level, title, index of the cell) of every markdown heading outside code fences."""
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        in_fence = False
        for line in cell.source.splitlines():
            if line.startswith("```"):
                in_fence = not in_fence
            match = re.match(r"^(#{1,6}) (.+)$", line)
            if match and not in_fence:
                found.append((len(match.group(1)), match.group(2).strip(), index))
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


def assert_heading_levels(found: list[tuple[int, str]]) -> None:
    """One `#` title first, and no level skipped on the way down."""
    assert [level for level, _ in found].count(1) == 1 and found[0][0] == 1
    for (previous, _), (level, title) in zip(found, found[1:], strict=False):
        assert level <= previous + 1, f"heading level skipped before {title!r}"


def assert_run_links(opening: str, path: Path, repository_url: str, config: dict) -> None:
    """The plain Colab and Binder links of the opening cell point at this notebook."""
    github = repository_url.removeprefix("https://github.com/")
    branch = config["repository"]["branch"]
    colab = f"https://colab.research.google.com/github/{github}/blob/{branch}/notebooks/{path.name}"
    binder = f"https://mybinder.org/v2/gh/{github}/{branch}?urlpath=lab/tree/notebooks/{path.name}"
    assert f"[Open in Colab]({colab})" in opening
    assert f"[Launch Binder]({binder})" in opening


def pitfall_items(nb) -> list[tuple[str, str, str]]:
    """(label, title, text) of every `###` item of the appendix.

    An item starts a markdown cell with its label and heading; its text is the markdown of
    that cell and of the cells up to the next heading.
    """
    found = headings_with_cells(nb)
    items = []
    for position, (level, title, index) in enumerate(found):
        if level != 3:
            continue
        end = found[position + 1][2] if position + 1 < len(found) else len(nb.cells)
        assert end > index, f"item {title!r} is the only heading of its cell"
        lines = nb.cells[index].source.splitlines()
        assert lines[1:2] == [f"### {title}"], f"item {title!r}: label line, then heading"
        label = PITFALL_LABEL.match(lines[0])
        assert label, f"item {title!r} has a MyST label (pitfall-…)= on the line before it"
        cells = nb.cells[index:end]
        text = "\n".join(cell.source for cell in cells if cell.cell_type == "markdown")
        items.append((label.group(1), title, text))
    return items


# --- Publication ---------------------------------------------------------------------------


def test_published_chapters_are_exactly_the_notebooks_in_reading_order():
    published = [
        file for file in toc_files() if re.match(r"^notebooks/\d\d_", file)
    ]  # the numbered chapters, in the order of the toc
    on_disk = [f"notebooks/{path.stem}" for path in NOTEBOOKS]
    assert published == on_disk, "every chapter is in _toc.yml, in order, and nothing else"
    numbers = [int(path.stem[:2]) for path in NOTEBOOKS]
    assert numbers == list(range(1, len(NOTEBOOKS) + 1)), "chapters are numbered 01, 02, …"
    for file in toc_files():
        assert any((ROOT / f"{file}{suffix}").exists() for suffix in (".md", ".ipynb")), file


def test_appendix_is_published_after_the_chapters_and_before_the_reference():
    parts = toc_parts()
    captions = [caption for caption, _ in parts]
    assert "Appendix" in captions and captions[-1] == "Reference", captions
    position = captions.index("Appendix")
    assert position == len(captions) - 2, "the Appendix comes just before the Reference"
    chapter_parts = [
        index
        for index, (_, files) in enumerate(parts)
        if any(re.match(r"^notebooks/\d\d_", file) for file in files)
    ]
    assert all(index < position for index in chapter_parts), "after every part with chapters"
    appendix = parts[position][1]
    assert [f"notebooks/{path.stem}" for path in APPENDIX] == [
        file for file in appendix if file.startswith("notebooks/")
    ], "every unnumbered notebook is in the Appendix part, and only those"
    assert "book/glossary" in appendix
    elsewhere = [
        file for index, (_, files) in enumerate(parts) if index != position for file in files
    ]
    assert not set(elsewhere) & set(appendix), "published once"


@pytest.mark.parametrize("path", all_notebooks(), ids=by_name)
def test_welcome_page_and_readme_list_every_published_notebook(path):
    assert f"{{doc}}`../notebooks/{path.stem}`" in (ROOT / "book" / "intro.md").read_text()
    assert f"`notebooks/{path.name}`" in (ROOT / "README.md").read_text()


# --- Shape of a chapter --------------------------------------------------------------------


def test_opening_cell_has_title_links_objectives_prerequisites_and_time(
    notebook, repository_url, config
):
    path, nb = notebook
    opening = nb.cells[0]
    assert opening.cell_type == "markdown"
    first_line = opening.source.splitlines()[0]
    assert re.match(r"^# [A-Z]", first_line), "starts with a '# Title' without a number"
    assert f"Chapter {int(path.stem[:2])} of" in opening.source
    assert_run_links(opening.source, path, repository_url, config)
    for part in ("Learning objectives", "Prerequisites", "Estimated time"):
        assert part in opening.source, f"the opening cell names its {part.lower()}"


def test_headings_are_in_order_and_the_closing_sections_exist(notebook):
    _, nb = notebook
    found = headings(nb)
    assert_heading_levels(found)
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


# The instructors' page (tools/instructors_page.py) reads these two from every chapter.


def test_exercise_titles_state_their_difficulty_from_easy_to_hard(notebook):
    path, _ = notebook
    exercises = read_chapter(path).exercises
    for exercise in exercises:
        assert exercise.level, (
            f"{exercise.label}: the title ends with (easy), (medium) or (hard), "
            "or (hard, optional) and so on"
        )
    ranks = [LEVELS.index(exercise.level) for exercise in exercises]
    assert ranks == sorted(ranks), "exercises go from easy to hard"


def test_every_exercise_declares_its_points(any_notebook):
    """The grader (tools/grade.py) and the instructors' page count ``:points:``; an exercise
    without it would silently be worth the default 1."""
    path, nb = any_notebook
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("```{exercise}"):
            assert re.search(r"^:points:[ \t]*[1-9]\d*[ \t]*$", cell.source, re.MULTILINE), (
                f"{path.name}: {cell.source.splitlines()[0]} needs `:points: N` beside its label"
            )


def test_estimated_time_splits_class_and_home(notebook):
    path, _ = notebook
    minutes = read_chapter(path).minutes
    assert minutes, (
        'the opening cell says "**Estimated time.** About N minutes: A to read and run the '
        'cells, B for the exercises." (A and B like 30 or 30–40)'
    )


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


def test_chapter_links_to_the_pitfalls_that_concern_it(notebook, pitfalls):
    """Every chapter links, with {ref}`pitfall-…`, to at least one item of the appendix, and
    every such link names an existing item. (New chapters need these links too: add a
    "**Pitfalls.**" cell just before their `## Summary`.)"""
    _, nb = notebook
    labels = {label for label, _, _ in pitfall_items(pitfalls)}
    text = "\n".join(cell.source for cell in nb.cells if cell.cell_type == "markdown")
    linked = set(PITFALL_REF.findall(text))
    assert linked, "the chapter links to its items of the appendix with {ref}`pitfall-…`"
    assert linked <= labels, f"links to missing items: {sorted(linked - labels)}"


# --- Shape of the appendix -----------------------------------------------------------------


def test_appendix_opening_cell_has_title_links_and_the_parts_of_a_chapter(
    pitfalls, repository_url, config
):
    opening = pitfalls.cells[0]
    assert opening.cell_type == "markdown"
    assert re.match(r"^# [A-Z]", opening.source.splitlines()[0])
    assert "Appendix of Self-Attention, Step by Step" in opening.source
    assert_run_links(opening.source, PITFALLS, repository_url, config)
    for part in ("Learning objectives", "Prerequisites", "Estimated time"):
        assert part in opening.source


def test_appendix_groups_are_in_order(pitfalls):
    found = headings(pitfalls)
    assert_heading_levels(found)
    assert [title for level, title in found if level == 2] == APPENDIX_GROUPS


def test_every_appendix_item_is_labelled_and_links_to_its_chapter(pitfalls):
    items = pitfall_items(pitfalls)
    assert len(items) >= 30, "the appendix collects the pitfalls of the whole course"
    labels = [label for label, _, _ in items]
    assert len(set(labels)) == len(labels), "labels are unique"
    for label, _, text in items:
        explained = re.search(r"^Explained in: (.+)\.$", text, re.MULTILINE)
        assert explained, f"{label}: the item ends with 'Explained in: {{doc}}`…`.'"
        links = CHAPTER_LINK.findall(explained.group(1))
        assert links, f"{label}: 'Explained in' links a chapter"
        assert all(1 <= int(number) <= len(NOTEBOOKS) for number, _ in links), label
        assert "**Fix.**" in text, f"{label}: the item states the fix"


def test_appendix_checks_the_claims_of_every_seed_post(pitfalls):
    """Claims quoted from a seed post are cited; all five seed posts are covered."""
    items = pitfall_items(pitfalls)
    for label, _, text in items:
        if "popular" in text.split("**Fix.**")[0]:
            assert "{cite}`seed_" in text, f"{label}: a quoted popular claim cites its post"
    texts = "\n".join(text for *_, text in items)
    cited = set(re.findall(r"\{cite\}`(seed_[a-z0-9_]+)`", texts))
    bibliography = (ROOT / "book" / "references.bib").read_text(encoding="utf-8")
    seeds = set(re.findall(r"^@\w+\{(seed_[a-z0-9_]+),", bibliography, re.MULTILINE))
    assert len(seeds) == 5 and cited == seeds, f"seed posts without an item: {seeds - cited}"


def test_appendix_quiz_hides_its_answers(pitfalls):
    start = next(
        index for level, title, index in headings_with_cells(pitfalls) if title == "Self-check quiz"
    )
    quiz = "\n".join(cell.source for cell in pitfalls.cells[start:] if cell.cell_type == "markdown")
    questions = re.findall(r"^```\{exercise\}.*\n:label: (quiz-\d+)$", quiz, re.MULTILINE)
    answers = re.findall(r"^```\{solution\} (quiz-\d+)\n:class: dropdown$", quiz, re.MULTILINE)
    assert len(questions) >= 5, "a short quiz"
    assert answers == questions, "every question has one answer, hidden until clicked"


# --- For every notebook --------------------------------------------------------------------


def test_setup_cell_installs_the_library_only_in_colab(any_notebook, repository_url, config):
    _, nb = any_notebook
    setup = code_cells(nb)[0]
    # From the configured repository, at the ref the course is pinned to (make retarget).
    package = f"selfattn-lib @ {install_url(repository_url, pinned_ref(config))}"
    assert setup.source == (
        "# Setup: in Google Colab, install the course's helper library.\n"
        "import sys\n\n"
        'if "google.colab" in sys.modules:\n'
        f'    %pip install --quiet "{package}"'
    )
    imports = code_cells(nb)[1].source
    assert "import numpy as np" in imports
    assert re.search(r"default_rng\(\d+\)|manual_seed\(\d+\)", imports), "one explicit seed"


def test_figures_have_alt_text_and_captions(any_notebook):
    _, nb = any_notebook
    figures = [cell for cell in code_cells(nb) if shows_image(cell)]
    assert figures, "every notebook draws"
    for cell in figures:
        options = cell.metadata.get("mystnb", {})
        assert options.get("image", {}).get("alt", "").strip(), cell.source[:80]
        assert options.get("figure", {}).get("caption", "").strip(), cell.source[:80]


def test_computed_diagrams_carry_the_alt_text_written_from_their_arrays(any_notebook):
    """A computed diagram (selfattn_lib.plotting.diagrams) shows its generated alt text as its
    text version; the site's alt text, in the cell's metadata, must be that same text, so it
    can never describe numbers other than the drawn ones."""
    _, nb = any_notebook
    for cell in code_cells(nb):
        for output in cell.get("outputs", []):
            text = "".join(output.get("data", {}).get("text/plain", ""))
            if text.startswith("Computed diagram"):
                alt = cell.metadata.get("mystnb", {}).get("image", {}).get("alt", "")
                assert alt == text, f"set the cell's mystnb.image.alt to: {text}"


def test_ignored_outputs_say_why_in_metadata_not_to_the_learner(any_notebook):
    """An exempted cell keeps its reason in its metadata (``course.not-compared``); its code,
    which learners read, says nothing about the tests."""
    _, nb = any_notebook
    for cell in code_cells(nb):
        reason = cell.metadata.get("course", {}).get("not-compared", "")
        if IGNORE_TAGS & set(cell.metadata.get("tags", [])):
            assert len(reason.split()) >= 4, f"say why it is not compared: {cell.source[:80]}"
        else:
            assert not reason, "only a cell whose output is not compared has a reason"
        assert not re.search(r"(?i)not compared|nbval|static site removes", cell.source), (
            cell.source[:120]
        )


def test_committed_outputs_come_from_one_clean_run(any_notebook):
    _, nb = any_notebook
    counts = [cell.execution_count for cell in code_cells(nb)]
    assert counts == list(range(1, len(counts) + 1)), "run top to bottom in a fresh kernel"
    for cell in code_cells(nb):
        for output in cell.outputs:
            assert output.output_type != "error", cell.source[:80]
            assert output.get("name") != "stderr", f"stderr output in: {cell.source[:80]}"
    assert nb.metadata.kernelspec.name == "python3"
    assert "widgets" not in nb.metadata, "no widget state is committed"


CLOCKS = re.compile(r"\b(perf_counter|process_time|monotonic|time\.time|timeit)\b")
TIMED = re.compile(r"second|time|speed|slope|_ms\b|elapsed")


def test_no_cell_asserts_on_a_measured_time(any_notebook):
    """Times depend on the machine and its load: a cell that reads a clock shows its times as
    an illustration (its output is not compared) and asserts nothing; counts are asserted."""
    _, nb = any_notebook
    for cell in code_cells(nb):
        source = "".join(cell.source)
        if CLOCKS.search(source):
            assert "nbval-ignore-output" in cell.metadata.get("tags", []), source[:200]
            for line in re.findall(r"^\s*assert\b.*$", source, re.MULTILINE):
                assert not TIMED.search(line), f"an assertion on a time: {line.strip()}"


# An object's default repr, as a cell's last line shows it (`torch.manual_seed(0)` returns the
# generator): noise to a learner, and its address changes from run to run.
DEFAULT_REPR = re.compile(r"<[\w.]+(?: object)? at 0x[0-9a-fA-F]+>")


def test_no_output_shows_an_object_s_default_repr(any_notebook):
    _, nb = any_notebook
    for cell in code_cells(nb):
        for output in cell.outputs:
            text = "".join(output.get("data", {}).get("text/plain", "")) + "".join(
                output.get("text", "")
            )
            assert not DEFAULT_REPR.search(text), f"a stray output in: {cell.source[:80]}"


# Inside a formula, a line that begins like a Markdown block (a list item, a quote, a heading,
# a numbered item) ends the paragraph in some renderers: the rest shows as raw TeX, and a `+`
# reads as a bullet (chapter 1's first fold once did this). Put the operator at the end of the
# line before instead.
BLOCK_START = re.compile(r"^\s*([+*>#-]|\d+[.)])(\s|$)")
FORMULA = re.compile(r"\$\$(.+?)\$\$|(?<![\\$])\$(?!\$)(.+?)(?<![\\$])\$", re.DOTALL)
CODE = re.compile(r"```.*?```|`[^`]*`", re.DOTALL)


def lines_read_as_blocks(markdown: str) -> list[str]:
    """The lines inside ``$…$`` or ``$$…$$`` (after a formula's first) that begin a block.

    >>> lines_read_as_blocks("$a\\n+ b$ and $$x\\n= y$$")
    ['+ b']
    """
    found = []
    for formula in FORMULA.finditer(CODE.sub("", markdown)):
        body = formula.group(1) or formula.group(2)
        found += [line.strip() for line in body.split("\n")[1:] if BLOCK_START.match(line)]
    return found


def test_the_rule_finds_a_line_that_starts_a_list_inside_a_formula():
    assert lines_read_as_blocks("By $a^2\n+ b^2$ we get") == ["+ b^2"]
    assert lines_read_as_blocks("$$\nx\n- y\n$$") == ["- y"]
    assert lines_read_as_blocks("$$\nx\n1. y\n$$") == ["1. y"]
    assert lines_read_as_blocks("$a +\nb$, then\n- a list item $c$") == []
    assert lines_read_as_blocks("`$x\n+ y$`") == []


@pytest.mark.parametrize(
    "page", [*all_notebooks(), *sorted((ROOT / "book").glob("*.md"))], ids=by_name
)
def test_no_line_inside_a_formula_begins_like_a_markdown_block(page):
    if page.suffix == ".ipynb":
        texts = [cell.source for cell in read_notebook(page).cells if cell.cell_type == "markdown"]
    else:
        texts = [page.read_text(encoding="utf-8")]
    found = [line for text in texts for line in lines_read_as_blocks(text)]
    assert found == [], f"move the operator to the end of the line before: {found}"
