"""Cross-references between the book's pages: the glossary defines the course's words and
links each to where it is taught, and the links of the glossary and of the appendix
("Pitfalls and myths") point at pages that exist and are published in `_toc.yml`.

The link checks fail while a page they point at is still being written (chapters 7–11 when
the glossary and the appendix were added). That is intended: the site build (`-n`) would fail
on the same links.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from course import ROOT, read_notebook, toc_files

GLOSSARY = ROOT / "book" / "glossary.md"
PITFALLS = ROOT / "notebooks" / "pitfalls.ipynb"
# {doc}`target` or {doc}`text <target>`
DOC_LINK = re.compile(r"\{doc\}`(?:[^`<]*<)?([^`<>]+)>?`")
TERM_REF = re.compile(r"\{term\}`(?:[^`<]*<)?([^`<>]+)>?`")
# Words the course teaches in Part II and III, which the glossary must have from the start.
REQUIRED_TERMS = [
    "multi-head attention",
    "head",
    "W_O",
    "positional encoding",
    "sinusoidal encoding",
    "residual connection",
    "layer normalization",
    "feed-forward network",
    "encoder",
    "decoder",
    "cross-attention",
    "teacher forcing",
    "greedy decoding",
    "exact match",
    "KV cache",
    "online softmax",
    "FlashAttention",
]


def glossary_entries() -> list[tuple[list[str], str]]:
    """(terms, definition) of every entry of the {glossary} directive of book/glossary.md."""
    text = GLOSSARY.read_text(encoding="utf-8")
    block = re.search(r"^```\{glossary\}\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    assert block, "book/glossary.md holds a ```{glossary} directive"
    entries, terms, definition = [], [], []
    for line in block.group(1).splitlines() + [""]:
        if line.startswith(" "):
            definition.append(line.strip())
            continue
        if definition:  # a blank line or the next term ends the entry
            entries.append((terms, " ".join(definition)))
            terms, definition = [], []
        if line.strip() and not line.startswith(":"):
            terms.append(line.strip())
    assert not terms, f"terms without a definition: {terms}"
    return entries


def published_target(link: str, page: Path) -> str | None:
    """The `_toc.yml` name of the page a {doc} link of `page` points at, if it exists."""
    target = (page.parent / link).resolve()
    for suffix in (".md", ".ipynb"):
        if target.with_suffix(suffix).exists():
            return target.relative_to(ROOT).as_posix()
    return None


def test_glossary_is_published():
    assert "book/glossary" in toc_files()


def test_glossary_terms_are_unique_and_cover_the_course():
    terms = [term.lower() for entry_terms, _ in glossary_entries() for term in entry_terms]
    assert len(terms) == len(set(terms)), "each term is defined once"
    assert len(glossary_entries()) >= 60, "every word the course uses"
    for required in REQUIRED_TERMS:
        assert required.lower() in terms, f"the glossary defines {required!r}"


def test_every_glossary_entry_links_to_where_it_is_taught():
    for terms, definition in glossary_entries():
        assert DOC_LINK.search(definition), f"{terms[0]}: the definition links a page with {{doc}}"
        sentences = definition.split(". ")
        assert len(sentences) <= 4, f"{terms[0]}: one or two sentences (and the links)"


@pytest.mark.parametrize(
    ("page", "text"),
    [
        (GLOSSARY, GLOSSARY.read_text(encoding="utf-8")),
        (
            PITFALLS,
            "\n".join(cell.source for cell in read_notebook(PITFALLS).cells)
            if PITFALLS.exists()
            else "",
        ),
    ],
    ids=["glossary", "pitfalls"],
)
def test_links_point_at_published_pages(page, text):
    """Fails until every chapter the page links to exists and is in `_toc.yml`."""
    published = set(toc_files())
    links = DOC_LINK.findall(text)
    assert links, f"{page.name} links other pages"
    missing = sorted({link for link in links if published_target(link, page) is None})
    assert not missing, f"{page.name} links pages that do not exist (yet): {missing}"
    unpublished = sorted(
        {link for link in links if published_target(link, page) not in published} - set(missing)
    )
    assert not unpublished, f"{page.name} links pages missing from _toc.yml: {unpublished}"


def test_term_references_name_glossary_entries():
    """Every {term}`…` in the book names a term of the glossary (Sphinx ignores case)."""
    terms = {term.lower() for entry_terms, _ in glossary_entries() for term in entry_terms}
    pages = sorted((ROOT / "book").glob("*.md")) + sorted((ROOT / "notebooks").glob("*.ipynb"))
    for page in pages:
        if page.suffix == ".ipynb":
            text = "\n".join(cell.source for cell in read_notebook(page).cells)
        else:
            text = page.read_text(encoding="utf-8")
        text = re.sub(r"``.*?``", "", text)  # a role shown as code is not a reference
        for term in TERM_REF.findall(text):
            assert term.lower() in terms, f"{page.name}: {{term}}`{term}` is not in the glossary"


# {doc}`../notebooks/<chapter>` and what follows it up to the next link: the sections it names.
CHAPTER_LINK = re.compile(r"\{doc\}`\.\./notebooks/([^`]+)`((?:[^{]|\{(?!doc|ref))*)")
ITALIC = re.compile(r"(?<![*\w])\*([^*]+)\*(?!\*)")


def headings(notebook: str) -> set[str]:
    """The headings of a chapter, without their "#" marks, backticks and "Going deeper: "."""
    found = set()
    for cell in read_notebook(ROOT / "notebooks" / f"{notebook}.ipynb").cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if match := re.match(r"^#{1,6} (.+)$", line):
                    found.add(
                        match.group(1).strip().replace("`", "").removeprefix("Going deeper: ")
                    )
    return found


def test_the_glossary_names_sections_that_exist():
    """Each entry names the section that teaches it, in italics after the chapter's link."""
    stale = [
        (notebook, section)
        for notebook, after in CHAPTER_LINK.findall(GLOSSARY.read_text(encoding="utf-8"))
        for section in (" ".join(found.split()) for found in ITALIC.findall(after))
        if section.replace("`", "") not in headings(notebook)
    ]
    assert not stale, f"sections the glossary names but the chapters no longer have: {stale}"
