"""Facts about the course that several test files need: where it is, its configuration, its
table of contents and its chapter notebooks."""

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


def chapter_notebooks() -> list[Path]:
    return sorted((ROOT / "notebooks").glob("*.ipynb"))


def read_notebook(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)
