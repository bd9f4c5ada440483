"""Point a fork of the course at itself: ``make retarget REPO=https://github.com/<owner>/<name>``.

The repository URL is defined once, in ``_config.yml`` (``repository.url``), but it is
spelled out wherever a reader needs it without the book: each notebook's Colab install cell
and its *Open in Colab* / *Launch Binder* links, the README, ``CITATION.cff``,
``pyproject.toml`` and the book's pages. This script replaces ``<owner>/<name>`` of the
configured URL by the fork's in every text file of the repository, and the ``cd <name>`` of
the clone instructions, as bytes: notebooks and every other file stay byte for byte the same
apart from the URL.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from tools.repository import ROOT, repository_url

GITHUB_URL = re.compile(
    r"^https://github\.com/(?P<owner>[A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))/"
    r"(?P<name>[A-Za-z0-9._-]+?)(?:\.git)?/?$"
)
# Hidden directories hold tools' state (.git, .venv*, caches), except these two; the others
# are built, downloaded or installed. None of them is a source of the course.
VISIBLE_HIDDEN_DIRECTORIES = {".github", ".ci"}
SKIPPED_DIRECTORIES = {"_build", "dist", "node_modules", "__pycache__"}


def is_skipped(relative: Path) -> bool:
    """Whether a path (relative to the repository) lies in a directory retarget leaves alone."""
    for part in relative.parts[:-1]:
        if part.startswith(".") and part not in VISIBLE_HIDDEN_DIRECTORIES:
            return True
        if part in SKIPPED_DIRECTORIES or part.endswith(".egg-info"):
            return True
    return False


@dataclass(frozen=True)
class Repository:
    owner: str
    name: str

    @property
    def slug(self) -> str:
        return f"{self.owner}/{self.name}"

    @property
    def url(self) -> str:
        return f"https://github.com/{self.slug}"


def parse_repository(url: str) -> Repository:
    """The owner and name of a GitHub repository URL; a clear error for anything else."""
    match = GITHUB_URL.match(url.strip())
    if not match or match.group("name") in {".", ".."}:
        raise ValueError(
            f"REPO must be a GitHub repository URL such as https://github.com/<owner>/<name>, "
            f"got {url!r} (Colab and Binder open notebooks from GitHub only)"
        )
    return Repository(match.group("owner"), match.group("name"))


def source_files(root: Path) -> list[Path]:
    """Every file of the repository that is not generated, cached or installed."""
    files = []
    for top, subdirectories, names in os.walk(root):
        directory = Path(top)
        relative = directory.relative_to(root)
        # Prune skipped directories instead of walking through them (.venv is large).
        subdirectories[:] = sorted(
            name for name in subdirectories if not is_skipped(relative / name / "x")
        )
        for name in sorted(names):
            path = directory / name
            if path.is_file() and not path.is_symlink():
                files.append(path)
    return files


def _slug_pattern(repository: Repository) -> re.Pattern[bytes]:
    # The slug as a whole path segment pair: after "/" (github.com/, /github/, /gh/), and not
    # followed by more of a repository name (another repository would start the same way).
    return re.compile(rb"(?<=/)" + re.escape(repository.slug.encode()) + rb"(?![\w.-])")


def _clone_directory_pattern(repository: Repository) -> re.Pattern[bytes]:
    return re.compile(rb"(?m)^([ \t]*cd[ \t]+)" + re.escape(repository.name.encode()) + rb"[ \t]*$")


def retarget(root: Path, url: str) -> dict[Path, int]:
    """Replace the configured repository by ``url`` under ``root``; the replacements per file."""
    new = parse_repository(url)
    old = parse_repository(repository_url(root))
    if old == new:
        return {}
    slug, clone_directory = _slug_pattern(old), _clone_directory_pattern(old)
    changed = {}
    for path in source_files(root):
        content = path.read_bytes()
        if old.name.encode() not in content:
            continue
        updated, n_urls = slug.subn(new.slug.encode(), content)
        updated, n_directories = clone_directory.subn(rb"\g<1>" + new.name.encode(), updated)
        if updated != content:
            path.write_bytes(updated)
            changed[path] = n_urls + n_directories
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", help="the fork's URL, https://github.com/<owner>/<name>")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        old = repository_url(args.root)
        changed = retarget(args.root, args.repo)
    except ValueError as error:
        print(f"retarget: {error}", file=sys.stderr)
        return 2
    if not changed:
        print(f"Nothing to do: the course already points at {old}.")
        return 0
    for path, count in changed.items():
        print(f"{path.relative_to(args.root)}: {count} replaced")
    new = parse_repository(args.repo).url
    print(f"\n{old} -> {new} in {len(changed)} files. Review with `git diff`, then commit.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
