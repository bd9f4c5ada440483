"""Facts about the course that several test files need: where it is, its configuration, its
table of contents, its chapter notebooks and its appendix."""

from __future__ import annotations

from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parent.parent


def load_config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))


def toc_files() -> list[str]:
    """Every file of `_toc.yml`, in reading order (root first), without extension."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    files = [toc["root"]]
    for part in toc["parts"]:
        files.extend(chapter["file"] for chapter in part["chapters"])
    return files


def toc_parts() -> list[tuple[str, list[str]]]:
    """The parts of `_toc.yml` in order: (caption, files without extension)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return [
        (part["caption"], [chapter["file"] for chapter in part["chapters"]])
        for part in toc["parts"]
    ]


def chapter_notebooks() -> list[Path]:
    """The numbered chapters, `notebooks/NN_topic.ipynb`, in reading order."""
    return sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def appendix_notebooks() -> list[Path]:
    """Every other notebook: the appendix ("Pitfalls and myths"), which has no number."""
    chapters = set(chapter_notebooks())
    return sorted(path for path in (ROOT / "notebooks").glob("*.ipynb") if path not in chapters)


def all_notebooks() -> list[Path]:
    """Chapters in reading order, then the appendix."""
    return chapter_notebooks() + appendix_notebooks()


def read_notebook(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)
