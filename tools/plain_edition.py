"""The plain edition of a chapter: the same notebook in the Markdown that plain Jupyter,
JupyterLab and Google Colab render, without the MyST that only the book understands.

The book's notebooks use four MyST roles (``{cite}``, ``{doc}``, ``{ref}``, ``{term}``),
label targets ``(label)=`` and the directives of sphinx-exercise (```` ```{exercise} ````,
```` ```{solution-start} ```` … ```` ```{solution-end} ```` and ```` ```{solution} ````).
Plain Jupyter shows them as literal text and code blocks: an exercise loses its title and
difficulty, and its maths shows raw. The plain edition

- turns each ``{ref}`` and ``{doc}`` into a link to the published site's page and anchor (a
  relative link to another notebook does nothing in Colab), each ``{term}`` into a link to
  its entry of the site's glossary, and each ``{cite}`` into "[Author, year]" linked to the
  site's bibliography;
- drops the label targets;
- makes each exercise a heading, ``### Exercise 2.1 (easy, 1 point): Title``, followed by its
  text, and keeps its label, number, title, difficulty and points in the cell's metadata
  (``course.exercise``) for the student copies and the grader;
- quotes a "Common mistake" box (an ``{admonition}``) with its title in bold;
- keeps a "Going deeper" part's heading, says under it that the part is optional, and
  collapses it (``jp-MarkdownHeadingCollapsed``), as the site folds it;
- marks a solution with a heading, ``#### Solution to Exercise 2.1``, and folds its code cells
  where the app can (``jupyter.source_hidden`` in JupyterLab and Jupyter Notebook 7); a
  ``{solution}`` block inside a markdown cell becomes a ``<details>`` element;
- drops the figures' phone renderings (``PHONE_MIME``, which only the site shows): the
  notebook is smaller, and no app can show a figure twice.

``python -m tools.plain_edition --output DIR`` writes the plain edition of every published
notebook into ``DIR/notebooks/`` (student copies are made from it: tools/student_copies.py).
"""

from __future__ import annotations

import argparse
import copy
import functools
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from selfattn_lib.plotting.base import PHONE_MIME
from tools.repository import (
    ROOT,
    exercise_tag,
    parse_exercise,
    published_notebooks,
    read_notebook,
    site_url,
    toc_files,
    write_notebook,
)
from tools.stats import GOING_DEEPER

# A role: {name}`text <target>` or {name}`target`.
ROLE = re.compile(r"\{(?P<name>cite|doc|ref|term)\}`(?P<body>[^`]+)`")
EXPLICIT = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", re.DOTALL)
TARGET = re.compile(r"^\((?P<label>[A-Za-z0-9_:.-]+)\)=[ \t]*\n", re.MULTILINE)
HEADING = re.compile(r"^#{1,6} +(?P<title>.+?)[ \t]*$", re.MULTILINE)
# The heading this edition gives an exercise (PlainEdition.directive), as its readers find it
# again (the grader, the answer key): "### Exercise 2.1 (easy, 1 point): Title", or
# "### Exercise 3 (1 point): Title" in the appendix. A learner may change or drop the
# parenthesis.
EXERCISE_HEADING = re.compile(
    r"^#{2,4} (?P<heading>Exercise (?P<number>\d+(?:\.\d+)?)(?: \([^)]*\))?: "
    r"(?P<title>.+?))[ \t]*$",
    re.MULTILINE,
)
# A directive: its opening fence, name, argument, options (:key: value lines) and body.
DIRECTIVE = re.compile(
    r"^(?P<fence>`{3,}|:{3,})\{(?P<name>exercise|solution|solution-start|solution-end|admonition)\}"
    r"[ \t]*(?P<argument>[^\n]*)\n(?P<options>(?:[ \t]*:[\w-]+:[^\n]*\n)*)"
    r"(?P<body>.*?)^(?P=fence)[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
LABEL = re.compile(r"^[ \t]*:label:[ \t]*(\S+)", re.MULTILINE)
FENCED_CODE = re.compile(r"^(`{3,}|~{3,})[^\n]*\n.*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
OPTION = re.compile(r"^[ \t]*:(?P<key>[\w-]+):[ \t]*(?P<value>.*?)[ \t]*$", re.MULTILINE)
BIB_ENTRY = re.compile(r"^@\w+\{(?P<key>[^,\s]+),(?P<fields>.*?)^\}", re.MULTILINE | re.DOTALL)
GLOSSARY_BLOCK = re.compile(r"^```\{glossary\}\n(?P<body>.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
BIB_FIELD = r"^\s*{name}\s*=\s*\{{(?P<value>(?:[^{{}}]|\{{[^{{}}]*\}})*)\}}"


GOING_DEEPER_NOTE = "*Optional: skipping this part loses no thread of the chapter.*"


class UnknownReference(ValueError):
    """A ``{ref}``, ``{doc}``, ``{term}`` or ``{cite}`` whose target the course does not have."""


@dataclass(frozen=True)
class Target:
    """Where a label points: the page (its path without extension), the anchor on it and
    the words a link to it shows."""

    page: str
    anchor: str
    title: str


@dataclass(frozen=True)
class Exercise:
    label: str
    number: str
    title: str
    difficulty: str
    optional: bool
    points: int = 1

    @property
    def tag(self) -> str:
        """``"medium, 2 points"``: what the heading's parenthesis says."""
        return exercise_tag(self.difficulty, self.optional, self.points)


def chapter_number(path: Path) -> str:
    """``"2"`` for ``02_softmax.ipynb``; ``""`` for an appendix."""
    match = re.match(r"(\d+)_", path.name)
    return str(int(match.group(1))) if match else ""


def exercises_of(nb: nbformat.NotebookNode, path: Path) -> dict[str, Exercise]:
    """Every exercise of a notebook by label (read by ``tools.repository.parse_exercise``),
    numbered as the book numbers them."""
    prefix = chapter_number(path)
    parsed = [parse_exercise(cell.source) for cell in nb.cells if cell.cell_type == "markdown"]
    return {
        exercise.label: Exercise(
            label=exercise.label,
            number=f"{prefix}.{index}" if prefix else str(index),
            title=exercise.title,
            difficulty=exercise.level,
            optional=exercise.optional,
            points=exercise.points,
        )
        for index, exercise in enumerate((e for e in parsed if e is not None), start=1)
    }


def targets(root: Path = ROOT) -> dict[str, Target]:
    """Every label of the published notebooks: section targets (the heading after
    ``(label)=``) and exercises. (No chapter refers to a figure by {ref}; one that does gets
    an UnknownReference until figures are added here.)"""
    found: dict[str, Target] = {}
    for path in published_notebooks(root):
        page = path.relative_to(root).with_suffix("").as_posix()
        nb = read_notebook(path)
        for label, exercise in exercises_of(nb, path).items():
            found[label] = Target(page, label, f"Exercise {exercise.number}")
        for cell in nb.cells:
            if cell.cell_type != "markdown":
                continue
            for target in TARGET.finditer(cell.source):
                heading = HEADING.search(cell.source, target.end())
                title = heading["title"] if heading else target["label"]
                found[target["label"]] = Target(page, target["label"], title)
    return found


def page_titles(root: Path = ROOT) -> dict[str, str]:
    """The title (first heading) of every page of the book, by path without extension."""
    titles = {}
    for page in toc_files(root):
        notebook, markdown = root / f"{page}.ipynb", root / f"{page}.md"
        if notebook.is_file():
            cells = read_notebook(notebook).cells
            text = "\n".join(cell.source for cell in cells if cell.cell_type == "markdown")
        elif markdown.is_file():
            text = markdown.read_text(encoding="utf-8")
        else:
            continue
        heading = HEADING.search(text)
        titles[page] = heading["title"] if heading else page
    return titles


def bibliography(root: Path = ROOT) -> dict[str, str]:
    """``"Vaswani et al., 2017"`` for every entry of ``book/references.bib``, by key (the
    author-year labels the book shows)."""
    labels = {}
    text = (root / "book" / "references.bib").read_text(encoding="utf-8")
    for entry in BIB_ENTRY.finditer(text):
        fields = entry["fields"]
        author = re.search(BIB_FIELD.format(name="author"), fields, re.MULTILINE)
        year = re.search(BIB_FIELD.format(name="year"), fields, re.MULTILINE)
        names = [name.strip() for name in re.split(r"\s+and\s+", author["value"] if author else "")]
        last = [
            (name.split(",")[0] if "," in name else name.split()[-1]).strip("{} ")
            for name in names
            if name
        ]
        if not last:
            who = "Anonymous"
        elif len(last) == 1:
            who = last[0]
        elif len(last) == 2:
            who = f"{last[0]} and {last[1]}"
        else:
            who = f"{last[0]} et al."
        labels[entry["key"]] = f"{who}, {year['value'] if year else 'n.d.'}"
    return labels


def term_anchor(term: str) -> str:
    """The anchor Sphinx gives a glossary term (its ``make_id``): ``"term-"`` and the term
    without its non-ASCII characters (accents dropped, a dash gone), every run of other
    characters than letters, digits, ``.`` and ``_`` made one hyphen: ``"KV cache"`` →
    ``"term-KV-cache"``, ``"log–log plot"`` → ``"term-loglog-plot"``."""
    ascii_only = unicodedata.normalize("NFKD", term).encode("ascii", "ignore").decode("ascii")
    return "term-" + re.sub(r"[^a-zA-Z0-9._]+", "-", " ".join(ascii_only.split())).strip("-")


def glossary(root: Path = ROOT) -> dict[str, str]:
    """The anchor of every term of ``book/glossary.md``, by the term in lower case (a
    ``{term}`` role matches its term whatever the case). A synonym (a second term line of
    an entry) has an anchor of its own on the same entry."""
    text = (root / "book" / "glossary.md").read_text(encoding="utf-8")
    block = GLOSSARY_BLOCK.search(text)
    if not block:
        return {}
    terms = [
        line.strip()
        for line in block["body"].splitlines()
        if line.strip() and not line[0].isspace() and not line.startswith(":")
    ]
    return {term.lower(): term_anchor(term) for term in terms}


def collapse_blank_lines(text: str) -> str:
    """Runs of blank lines become one, except inside fenced code."""
    parts, end = [], 0
    for block in FENCED_CODE.finditer(text):
        parts += [re.sub(r"\n{3,}", "\n\n", text[end : block.start()]), block.group(0)]
        end = block.end()
    return "".join([*parts, re.sub(r"\n{3,}", "\n\n", text[end:])])


@dataclass
class Converter:
    """Turns the MyST of one notebook's markdown into plain Markdown (see the module)."""

    site: str
    page: str
    labels: dict[str, Target]
    titles: dict[str, str]
    citations: dict[str, str]
    exercises: dict[str, Exercise]
    terms: dict[str, str] = field(default_factory=dict)

    def url(self, page: str, anchor: str = "") -> str:
        return f"{self.site}{page}.html" + (f"#{anchor}" if anchor else "")

    def role(self, match: re.Match) -> str:
        name, body = match["name"], match["body"].strip()
        explicit = EXPLICIT.match(body)
        text, target = (explicit["text"], explicit["target"]) if explicit else ("", body)
        if name == "cite":
            keys = [key.strip() for key in target.split(",")]
            unknown = [key for key in keys if key not in self.citations]
            if unknown:
                raise UnknownReference(f"{self.page}: no bibliography entry {unknown}")
            cited = "; ".join(self.citations[key] for key in keys)
            return f"[[{cited}]]({self.url('book/bibliography')})"
        if name == "term":
            anchor = self.terms.get(" ".join(target.split()).lower())
            if anchor is None:
                raise UnknownReference(f"{self.page}: no glossary term {target!r}")
            return f"[{text or target}]({self.url('book/glossary', anchor)})"
        if name == "doc":
            page = (Path(self.page).parent / target).as_posix()
            page = re.sub(r"[^/]+/\.\./", "", page)
            if page not in self.titles:
                raise UnknownReference(f"{self.page}: no page {target!r}")
            return f"[{text or self.titles[page]}]({self.url(page)})"
        if target not in self.labels:
            raise UnknownReference(f"{self.page}: no label {target!r}")
        label = self.labels[target]
        return f"[{text or label.title}]({self.url(label.page, label.anchor)})"

    def roles(self, text: str) -> str:
        return ROLE.sub(self.role, text)

    def directive(self, match: re.Match) -> str:
        name = match["name"]
        options = dict(OPTION.findall(match["options"]))
        body = match["body"].strip("\n")
        if name == "exercise":
            exercise = self.exercises[options["label"]]
            return f"### Exercise {exercise.number} ({exercise.tag}): {exercise.title}\n\n{body}"
        if name == "solution-start":
            exercise = self.exercises[match["argument"].strip()]
            return (
                f"#### Solution to Exercise {exercise.number}\n\n"
                "*Try the exercise first: the solution follows (its code cells are folded "
                "where your notebook app can fold them).*"
            )
        if name == "solution-end":
            return "*End of the solution.*"
        if name == "admonition":
            quoted = "\n".join(f"> {line}".rstrip() for line in body.splitlines())
            return f"> **{match['argument'].strip()}**\n>\n{quoted}"
        exercise = self.exercises.get(match["argument"].strip())
        summary = f"Solution to Exercise {exercise.number}" if exercise else "Solution"
        return f"<details>\n<summary>{summary}</summary>\n\n{body}\n\n</details>"

    def markdown(self, source: str) -> str:
        source = TARGET.sub("", source)
        # A blank line on either side: a heading or an HTML block must stand alone.
        source = DIRECTIVE.sub(lambda match: f"\n\n{self.directive(match)}\n\n", source)
        return self.roles(collapse_blank_lines(source)).strip("\n")


@functools.cache
def _course(
    root: Path,
) -> tuple[dict[str, Target], dict[str, str], dict[str, str], dict[str, str]]:
    return targets(root), page_titles(root), bibliography(root), glossary(root)


def plain_edition(
    nb: nbformat.NotebookNode, path: Path, root: Path = ROOT
) -> nbformat.NotebookNode:
    """The plain edition of ``nb``, the notebook of the course at ``path`` (or a copy of it,
    such as a student copy), outputs kept."""
    labels, titles, citations, terms = _course(root)
    exercises = exercises_of(nb, path)
    converter = Converter(
        site=site_url(root),
        page=path.relative_to(root).with_suffix("").as_posix(),
        labels=labels,
        titles=titles,
        citations=citations,
        exercises=exercises,
        terms=terms,
    )
    plain = copy.deepcopy(nb)
    in_solution = False
    for cell in plain.cells:
        if cell.cell_type == "markdown":
            names = [directive["name"] for directive in DIRECTIVE.finditer(cell.source)]
            found = [label for label in LABEL.findall(cell.source) if label in exercises]
            cell.source = converter.markdown(cell.source)
            if "exercise" in names and found:
                exercise = exercises[found[0]]
                cell.metadata["course"] = {
                    "exercise": {
                        "label": exercise.label,
                        "number": exercise.number,
                        "title": exercise.title,
                        "difficulty": exercise.difficulty,
                        "optional": exercise.optional,
                        "points": exercise.points,
                    }
                }
            if GOING_DEEPER.match(cell.source.splitlines()[0] if cell.source else ""):
                # JupyterLab and Jupyter Notebook 7 open the part collapsed under its heading.
                cell.metadata["jp-MarkdownHeadingCollapsed"] = True
                heading, _, rest = cell.source.partition("\n")
                cell.source = f"{heading}\n\n{GOING_DEEPER_NOTE}\n{rest}".rstrip("\n")
            in_solution = (in_solution or "solution-start" in names) and (
                "solution-end" not in names
            )
            continue
        for output in cell.get("outputs", []):
            output.get("data", {}).pop(PHONE_MIME, None)
        if in_solution or "solution" in cell.metadata.get("tags", []):
            cell.metadata.setdefault("jupyter", {})["source_hidden"] = True
    return plain


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, required=True, help="where to write notebooks/")
    args = parser.parse_args(argv)
    for path in published_notebooks():
        destination = args.output / path.relative_to(ROOT)
        destination.parent.mkdir(parents=True, exist_ok=True)
        write_notebook(plain_edition(read_notebook(path), path), destination)
        print(f"wrote {destination}")


if __name__ == "__main__":
    main()
