"""tools/plain_edition.py: every chapter, and every student copy, rendered the way plain
Jupyter and Colab render Markdown (nbconvert's HTML exporter), shows no MyST role or
directive as text, and shows each exercise as a heading with its number, difficulty, title
and maths; the converter's pieces on small examples."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from bs4 import BeautifulSoup
from nbconvert import HTMLExporter

from tools.plain_edition import (
    GOING_DEEPER_NOTE,
    Converter,
    Exercise,
    Target,
    UnknownReference,
    bibliography,
    collapse_blank_lines,
    exercises_of,
    glossary,
    main,
    plain_edition,
    term_anchor,
)
from tools.repository import (
    ROOT,
    exercise_tag,
    published_notebooks,
    read_chapter,
    read_notebook,
    site_url,
)
from tools.student_copies import has_exercises, student_copy

NOTEBOOKS = published_notebooks()
# What plain Markdown would show of MyST: a role, a directive's fence, a label target.
RAW_MYST = re.compile(
    r"\{(cite|ref|doc|numref|term|eq)\}`|\{(exercise|solution[-\w]*|admonition|dropdown|note|warning)\}|^\([\w-]+\)=$",
    re.MULTILINE,
)


def rendered_markdown(nb: nbformat.NotebookNode) -> list[BeautifulSoup]:
    """Each markdown cell of ``nb`` as nbconvert renders it (outputs left out: only the
    text is checked)."""
    bare = nbformat.from_dict(nb)
    for cell in bare.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    html, _ = HTMLExporter(template_name="basic").from_notebook_node(bare)
    page = BeautifulSoup(html, "html.parser")
    return page.select(".jp-MarkdownCell .jp-RenderedMarkdown, .text_cell_render")


def check_renders_plainly(nb: nbformat.NotebookNode, path: Path) -> None:
    markdown = [cell for cell in nb.cells if cell.cell_type == "markdown"]
    rendered = rendered_markdown(nb)
    assert len(rendered) == len(markdown)
    for cell in rendered:
        text = cell.get_text("\n")
        raw = RAW_MYST.search(text)
        assert raw is None, f"raw MyST {raw[0]!r} in {text[:200]!r}"
        assert not cell.select("code[class*='language-{']"), "a directive shown as code"
    headings = [h.get_text(" ", strip=True).rstrip("¶ ") for c in rendered for h in c("h3")]
    # Each exercise: a heading, and its label, number, title and difficulty in metadata.
    exercises = [
        cell.metadata["course"]["exercise"]
        for cell in markdown
        if "exercise" in cell.metadata.get("course", {})
    ]
    assert [exercise["label"] for exercise in exercises] == [
        exercise.label for exercise in read_chapter(path).exercises
    ]
    for exercise in exercises:
        tag = exercise_tag(exercise["difficulty"], exercise["optional"], exercise["points"])
        assert f"Exercise {exercise['number']} ({tag}): {exercise['title']}" in headings
    # An exercise's maths is left as TeX for the notebook's MathJax, never in a code block.
    for source, cell in zip(markdown, rendered, strict=True):
        if "exercise" in source.metadata.get("course", {}) and "$" in source.source:
            assert "$" in cell.get_text()
            assert not any("$" in code.get_text() for code in cell("pre"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_a_chapter_renders_in_plain_jupyter_without_myst(path):
    plain = plain_edition(read_notebook(path), path)
    check_renders_plainly(plain, path)
    for cell in plain.cells:
        if "solution" in cell.metadata.get("tags", []):
            assert cell.metadata["jupyter"]["source_hidden"], "solutions are folded"
    nbformat.validate(plain)


@pytest.mark.parametrize(
    "path",
    [path for path in NOTEBOOKS if has_exercises(read_notebook(path))],
    ids=lambda path: path.stem,
)
def test_a_student_copy_renders_in_plain_jupyter_without_myst(path):
    copy = plain_edition(student_copy(read_notebook(path)), path)
    check_renders_plainly(copy, path)


# --- The pieces -----------------------------------------------------------------------------


def converter() -> Converter:
    return Converter(
        site="https://o.github.io/r/",
        page="notebooks/02_softmax",
        labels={"sec-x": Target("notebooks/06_masks", "sec-x", "Padding")},
        titles={"notebooks/06_masks": "Masks", "book/glossary": "Glossary"},
        citations={"a": "Vaswani et al., 2017", "b": "Bridle, 1990"},
        exercises={"ex-1": Exercise("ex-1", "2.1", "Predict", "easy", False)},
        terms={"kv cache": "term-KV-cache", "softmax": "term-softmax"},
    )


def test_roles_become_links_to_the_site():
    convert = converter().markdown
    assert convert("See {ref}`sec-x`.") == (
        "See [Padding](https://o.github.io/r/notebooks/06_masks.html#sec-x)."
    )
    assert convert("{ref}`the masks <sec-x>`") == (
        "[the masks](https://o.github.io/r/notebooks/06_masks.html#sec-x)"
    )
    assert convert("{doc}`06_masks`, {doc}`words <../book/glossary>`") == (
        "[Masks](https://o.github.io/r/notebooks/06_masks.html), "
        "[words](https://o.github.io/r/book/glossary.html)"
    )
    assert convert("{cite}`a,b`") == (
        "[[Vaswani et al., 2017; Bridle, 1990]](https://o.github.io/r/book/bibliography.html)"
    )
    assert convert("a {term}`KV Cache`, {term}`the normalised exponentials <softmax>`") == (
        "a [KV Cache](https://o.github.io/r/book/glossary.html#term-KV-cache), "
        "[the normalised exponentials](https://o.github.io/r/book/glossary.html#term-softmax)"
    )
    for unknown in ("{ref}`nowhere`", "{doc}`nowhere`", "{cite}`nobody`", "{term}`nothing`"):
        with pytest.raises(UnknownReference):
            convert(unknown)


def test_directives_become_headings_and_folds():
    convert = converter().markdown
    assert convert("(sec-y)=\n## Title") == "## Title"
    assert convert("```{exercise} Predict (easy)\n:label: ex-1\n\nDo $x$.\n```\nAfter.") == (
        "### Exercise 2.1 (easy, 1 point): Predict\n\nDo $x$.\n\nAfter."
    )
    assert convert("```{solution-start} ex-1\n:class: dropdown\n```\n\nWhy.").startswith(
        "#### Solution to Exercise 2.1\n\n*Try the exercise first"
    )
    assert convert("```{solution} ex-1\n:class: dropdown\n\nTwo.\n```") == (
        "<details>\n<summary>Solution to Exercise 2.1</summary>\n\nTwo.\n\n</details>"
    )
    assert collapse_blank_lines("a\n\n\n\nb\n```\nc\n\n\n\nd\n```") == (
        "a\n\nb\n```\nc\n\n\n\nd\n```"
    )


def test_a_common_mistake_box_becomes_a_quote_with_its_title():
    convert = converter().markdown
    box = (
        ":::{admonition} Common mistake: dividing by d_k\n:class: warning\n"
        "Use $\\sqrt{d_k}$.\n\nSee {ref}`sec-x`.\n:::"
    )
    assert convert(box) == (
        "> **Common mistake: dividing by d_k**\n>\n> Use $\\sqrt{d_k}$.\n>\n"
        "> See [Padding](https://o.github.io/r/notebooks/06_masks.html#sec-x)."
    )


def test_a_going_deeper_part_keeps_its_heading_says_it_is_optional_and_is_collapsed():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("## Softmax\n\nCore."),
        nbformat.v4.new_markdown_cell("### Going deeper: subnormal numbers\n\nDetails."),
        nbformat.v4.new_code_cell("print(1)"),
    ]
    plain = plain_edition(nb, ROOT / "notebooks" / "02_softmax.ipynb")
    part = plain.cells[1]
    assert part.source == (
        f"### Going deeper: subnormal numbers\n\n{GOING_DEEPER_NOTE}\n\nDetails."
    )
    assert part.metadata["jp-MarkdownHeadingCollapsed"] is True
    assert "jp-MarkdownHeadingCollapsed" not in plain.cells[0].metadata


def test_exercises_are_numbered_by_chapter_and_keep_their_difficulty():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("```{exercise} A (easy)\n:label: ex-a\n```"),
        nbformat.v4.new_markdown_cell(
            "```{exercise} B (hard, optional)\n:label: ex-b\n:points: 3\n```"
        ),
    ]
    found = exercises_of(nb, Path("notebooks/07_multi_head_attention.ipynb"))
    assert found["ex-b"] == Exercise("ex-b", "7.2", "B", "hard", True, 3)
    assert found["ex-b"].tag == "hard, optional, 3 points"
    assert found["ex-a"].tag == "easy, 1 point"  # no :points: option: worth 1
    assert exercises_of(nb, Path("notebooks/pitfalls.ipynb"))["ex-a"].number == "1"


def test_glossary_terms_and_their_synonyms_get_sphinx_s_anchors():
    terms = glossary()
    assert terms["arg max"] == "term-arg-max"
    assert terms["adam"] == "term-Adam"
    # A synonym is a term of its own on the same entry.
    assert terms["attention weight"] == "term-attention-weight"
    assert terms["weight"] == "term-weight"
    assert term_anchor("W_O") == "term-W_O"
    assert term_anchor("log–log plot") == "term-loglog-plot"


def test_citations_read_as_the_book_shows_them(tmp_path):
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "references.bib").write_text(
        "@article{one,\n  author = {Bridle, John S.},\n  year = {1990}\n}\n"
        "@article{two,\n  author = {Ba, Jimmy and Hinton, Geoffrey},\n  year = {2016}\n}\n"
        "@article{many,\n  author = {Vaswani, A. and Kaiser, {\\L}ukasz and Polosukhin, I.},\n"
        "  year = {2017}\n}\n",
        encoding="utf-8",
    )
    assert bibliography(tmp_path) == {
        "one": "Bridle, 1990",
        "two": "Ba and Hinton, 2016",
        "many": "Vaswani et al., 2017",
    }


def test_the_site_is_the_repository_s_github_pages(tmp_path):
    (tmp_path / "_config.yml").write_text(
        "repository:\n  url: https://github.com/Some-Org/a-course\n", encoding="utf-8"
    )
    assert site_url(tmp_path) == "https://some-org.github.io/a-course/"


def test_the_command_writes_every_published_notebook(tmp_path):
    main(["--output", str(tmp_path)])
    written = sorted(path.name for path in (tmp_path / "notebooks").glob("*.ipynb"))
    assert written == sorted(path.name for path in NOTEBOOKS)
    for path in (tmp_path / "notebooks").glob("*.ipynb"):
        nbformat.validate(nbformat.read(path, as_version=4))
