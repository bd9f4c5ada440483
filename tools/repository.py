"""Facts about the repository that every tool, test and benchmark needs, in one place: its
root, its configuration, its table of contents, its notebooks (published ones from
``_toc.yml``) and the parts of a chapter's opening cell."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parent.parent

# A chapter's exercise directive: ```{exercise} Title (easy|medium|hard[, optional])
EXERCISE = re.compile(r"^```\{exercise\}[ \t]*(?P<title>.*)$", re.MULTILINE)
DIFFICULTY = re.compile(
    r"^(?P<title>.+?) \((?P<level>easy|medium|hard)(?P<optional>, optional)?\)$"
)
LEVELS = ("easy", "medium", "hard")
# "**Estimated time.** About 60 minutes: 35 to read and run the cells, 25 for the exercises."
MINUTES = r"\d+(?:–\d+)?"
TIME = re.compile(
    rf"About (?P<total>\d+) minutes: (?P<cells>{MINUTES}) to read and run the cells"
    rf".*?(?P<exercises>{MINUTES}) for the exercises",
    re.DOTALL,
)


def load_config(root: Path = ROOT) -> dict:
    return yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))


def repository_url(root: Path = ROOT) -> str:
    """The course repository, ``https://github.com/<owner>/<name>``, from ``_config.yml``."""
    return load_config(root)["repository"]["url"].rstrip("/")


# The ref the course is pinned to is written once, in _config.yml's repository.branch: the
# branch of the plain edition built from it (.github/workflows/book.yml builds one per ref).
# "plain" is main's (the install cells install the default branch); "plain-<ref>" is the
# plain edition of the tag or branch <ref>, and the install cells install <ref>.
DEFAULT_REF = "main"
PLAIN = "plain"


def plain_branch(ref: str) -> str:
    """The branch of the plain edition built from ``ref``.

    >>> plain_branch("main"), plain_branch("v1.2.0")
    ('plain', 'plain-v1.2.0')
    """
    return PLAIN if ref == DEFAULT_REF else f"{PLAIN}-{ref}"


def pinned_ref(config: dict) -> str:
    """The tag or branch the course is pinned to (``"main"``: not pinned), read from the plain
    edition's branch in ``_config.yml``."""
    branch = config["repository"].get("branch", "")
    if branch == PLAIN:
        return DEFAULT_REF
    if branch.startswith(f"{PLAIN}-") and len(branch) > len(PLAIN) + 1:
        return branch.removeprefix(f"{PLAIN}-")
    raise ValueError(
        f"_config.yml's repository.branch must be {PLAIN} or {PLAIN}-<ref>, got {branch!r}"
    )


def install_url(url: str, ref: str = DEFAULT_REF) -> str:
    """What each notebook's Colab install cell installs from the repository ``url``:
    ``git+<url>``, or ``git+<url>@<ref>`` when the course is pinned to a tag or branch
    (the ``pip install "selfattn-lib @ git+…"`` that tests/test_notebooks.py checks)."""
    url = f"git+{url.rstrip('/')}"
    return url if ref == DEFAULT_REF else f"{url}@{ref}"


def site_url(root: Path = ROOT) -> str:
    """The published site, ``https://<owner>.github.io/<name>/``: GitHub Pages of the course
    repository (.github/workflows/book.yml publishes it there)."""
    owner, name = repository_url(root).removeprefix("https://github.com/").split("/")
    return f"https://{owner.lower()}.github.io/{name}/"


def load_toc(root: Path = ROOT) -> dict:
    return yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))


def toc_files(root: Path = ROOT) -> list[str]:
    """Every file of ``_toc.yml``, in reading order (root first), without extension."""
    return [load_toc(root)["root"], *(file for _, files in toc_parts(root) for file in files)]


def toc_parts(root: Path = ROOT) -> list[tuple[str, list[str]]]:
    """The parts of ``_toc.yml`` in order: (caption, files without extension)."""
    return [
        (part.get("caption", ""), [chapter["file"] for chapter in part["chapters"]])
        for part in load_toc(root)["parts"]
    ]


def published_notebooks(root: Path = ROOT) -> list[Path]:
    """Every notebook of ``_toc.yml``, in reading order."""
    files = (root / f"{file}.ipynb" for file in toc_files(root))
    return [path for path in files if path.is_file()]


def chapter_notebooks(root: Path = ROOT) -> list[Path]:
    """The numbered chapters, ``notebooks/NN_topic.ipynb``, in reading order (published or not)."""
    return sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def appendix_notebooks(root: Path = ROOT) -> list[Path]:
    """Every other notebook: the appendix ("Pitfalls and myths"), which has no number."""
    chapters = set(chapter_notebooks(root))
    return sorted(path for path in (root / "notebooks").glob("*.ipynb") if path not in chapters)


def all_notebooks(root: Path = ROOT) -> list[Path]:
    """Chapters in reading order, then the appendix."""
    return chapter_notebooks(root) + appendix_notebooks(root)


def read_notebook(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def write_notebook(nb: nbformat.NotebookNode, path: Path) -> None:
    """Write as Jupyter and nbconvert do (``nbformat.write``), so a saved notebook is unchanged."""
    nbformat.write(nb, path)


@dataclass
class Exercise:
    label: str
    title: str
    level: str  # "easy", "medium", "hard" or "" when the title does not say
    optional: bool
    checker: str  # the name of its checker in selfattn_lib.exercises, or ""
    points: int = 1  # its ``:points:`` option: what the grader and the instructors' page count

    @property
    def tag(self) -> str:
        return exercise_tag(self.level, self.optional, self.points)


@dataclass
class Chapter:
    """What a notebook says about itself in its opening cell and its exercises."""

    path: Path
    title: str
    number: int | None
    objectives: list[str] = field(default_factory=list)
    prerequisites: str = ""
    estimated_time: str = ""
    exercises: list[Exercise] = field(default_factory=list)

    @property
    def stem(self) -> str:
        return self.path.stem

    @property
    def prerequisite_stems(self) -> list[str]:
        """The notebooks the prerequisites link to, in the order they are named."""
        text = self.prerequisites
        # Markdown links [chapter 2](02_softmax.ipynb), or {doc}`02_softmax` and
        # {doc}`chapter 2 <../notebooks/02_softmax>` roles, relative to notebooks/.
        links = re.findall(r"\]\((?:\.\./notebooks/)?([\w-]+)\.ipynb\)", text)
        roles = re.findall(r"\{doc\}`(?:[^`<]*<)?(?:\.\./notebooks/)?([\w-]+)>?`", text)
        found = sorted(
            (match.start(), stem)
            for stem in set(links + roles)
            for match in re.finditer(re.escape(stem), text)
        )
        return list(dict.fromkeys(stem for _, stem in found))

    @property
    def minutes(self) -> dict[str, str] | None:
        """``{"total", "cells", "exercises"}`` as written (e.g. "30–40"), or None."""
        match = TIME.search(self.estimated_time)
        return match.groupdict() if match else None


def _paragraph_after(source: str, heading: str) -> str:
    """The text of the paragraph that starts with ``**heading.**`` (without the heading)."""
    match = re.search(rf"\*\*{re.escape(heading)}\.\*\*(.*?)(?:\n\s*\n|\Z)", source, re.DOTALL)
    return " ".join(match.group(1).split()) if match else ""


def _objectives(source: str) -> list[str]:
    match = re.search(
        r"\*\*Learning objectives\.\*\*.*?\n\s*\n(.*?)(?:\n\s*\n|\Z)", source, re.DOTALL
    )
    if not match:
        return []
    items = re.split(r"^- ", match.group(1), flags=re.MULTILINE)
    return [" ".join(item.split()) for item in items if item.strip()]


def exercise_tag(level: str, optional: bool, points: int) -> str:
    """What an exercise title's parenthesis says on the site and in the plain edition.

    >>> exercise_tag("hard", True, 3)
    'hard, optional, 3 points'
    """
    parts = [level] if level else []
    parts += ["optional"] if optional else []
    return ", ".join([*parts, f"{points} point{'s' if points != 1 else ''}"])


def parse_exercise(source: str) -> Exercise | None:
    """The exercise of a markdown cell with an ``{exercise}`` directive, else None."""
    match = EXERCISE.search(source)
    if not match:
        return None
    label = re.search(r"^:label:\s*(\S+)", source, re.MULTILINE)
    points = re.search(r"^:points:[ \t]*(\S*)[ \t]*$", source, re.MULTILINE)
    if points and not points.group(1).isdigit():
        raise ValueError(f"an exercise's :points: must be a whole number, got {points.group(1)!r}")
    title = match.group("title").strip()
    graded = DIFFICULTY.match(title)
    return Exercise(
        label=label.group(1) if label else "",
        title=graded.group("title") if graded else title,
        level=graded.group("level") if graded else "",
        optional=bool(graded and graded.group("optional")),
        checker="",
        points=int(points.group(1)) if points else 1,
    )


def read_chapter(path: Path) -> Chapter:
    nb = read_notebook(path)
    opening = nb.cells[0].source if nb.cells and nb.cells[0].cell_type == "markdown" else ""
    title = re.search(r"^# (.+)$", opening, re.MULTILINE)
    number = re.search(r"Chapter (\d+) of", opening)
    chapter = Chapter(
        path=path,
        title=title.group(1).strip() if title else path.stem,
        number=int(number.group(1)) if number else None,
        objectives=_objectives(opening),
        prerequisites=_paragraph_after(opening, "Prerequisites"),
        estimated_time=_paragraph_after(opening, "Estimated time"),
    )
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            exercise = parse_exercise(cell.source)
            if exercise:
                chapter.exercises.append(exercise)
        elif chapter.exercises and not chapter.exercises[-1].checker:
            checker = re.search(r"exercises\.(check_\w+)\(", cell.source)
            if checker:
                chapter.exercises[-1].checker = checker.group(1)
    return chapter


def launch_links(path: Path, config: dict, root: Path = ROOT) -> dict[str, str]:
    """The *Open in Colab* and *Launch Binder* URLs of a notebook, from ``_config.yml``."""
    github = config["repository"]["url"].rstrip("/").removeprefix("https://github.com/")
    branch = config["repository"]["branch"]
    notebook = path.relative_to(root).as_posix() if path.is_absolute() else path.as_posix()
    return {
        "colab": f"https://colab.research.google.com/github/{github}/blob/{branch}/{notebook}",
        "binder": f"https://mybinder.org/v2/gh/{github}/{branch}?urlpath=lab/tree/{notebook}",
    }
