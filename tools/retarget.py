"""Point a fork of the course at itself, and pin a term to a tag or branch:
``make retarget REPO=https://github.com/<owner>/<name> [TAG=<tag> | BRANCH=<branch>]``.

The repository URL is defined once, in ``_config.yml`` (``repository.url``), but it is
spelled out wherever a reader needs it without the book: each notebook's Colab install cell
and its *Open in Colab* / *Launch Binder* links, the README, ``CITATION.cff``,
``pyproject.toml`` and the book's pages. This script replaces ``<owner>/<name>`` of the
configured URL by the fork's in every text file of the repository, and the ``cd <name>`` of
the clone instructions, as bytes: notebooks and every other file stay byte for byte the same
apart from the URL (and the ref, below).

With a tag or branch (a *ref*), it also pins the course to it: the install cells install
``git+<url>@<ref>``, and ``repository.branch`` in ``_config.yml`` and the run-it links name
``plain-<ref>``, the plain edition that .github/workflows/book.yml builds from that ref
(``plain`` is main's; tools.repository.plain_branch). So learners install the checkers of
that ref for the whole term. ``BRANCH=main`` removes a pin; without a ref, a pin is kept.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from tools.repository import (
    DEFAULT_REF,
    PLAIN,
    ROOT,
    install_url,
    load_config,
    pinned_ref,
    plain_branch,
)

GITHUB_URL = re.compile(
    r"^https://github\.com/(?P<owner>[A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))/"
    r"(?P<name>[A-Za-z0-9._-]+?)(?:\.git)?/?$"
)
# Hidden directories hold tools' state (.git, .venv*, caches), except these two; the others
# are built, downloaded or installed. None of them is a source of the course.
VISIBLE_HIDDEN_DIRECTORIES = {".github", ".ci"}
SKIPPED_DIRECTORIES = {"_build", "dist", "node_modules", "__pycache__"}
# A tag or branch name that git, pip (``git+URL@ref``) and a branch "plain-<ref>" all accept:
# no "..", "//", "@", spaces or other specials, not ending in "/", "." or ".lock".
REF = re.compile(r"^(?!.*(?:\.\.|//|\.lock$|/\.))[A-Za-z0-9][A-Za-z0-9._/-]*(?<![./])$")


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
    ref: str = DEFAULT_REF  # the tag or branch the course is pinned to; main: not pinned

    @property
    def slug(self) -> str:
        return f"{self.owner}/{self.name}"

    @property
    def url(self) -> str:
        return f"https://github.com/{self.slug}"

    def __str__(self) -> str:
        return self.url if self.ref == DEFAULT_REF else f"{self.url} at {self.ref}"


def parse_repository(url: str) -> Repository:
    """The owner and name of a GitHub repository URL; a clear error for anything else."""
    match = GITHUB_URL.match(url.strip())
    if not match or match.group("name") in {".", ".."}:
        raise ValueError(
            f"REPO must be a GitHub repository URL such as https://github.com/<owner>/<name>, "
            f"got {url!r} (Colab and Binder open notebooks from GitHub only)"
        )
    return Repository(match.group("owner"), match.group("name"))


def configured(root: Path = ROOT) -> Repository:
    """The repository and ref that ``_config.yml`` points the course at."""
    config = load_config(root)
    return replace(parse_repository(config["repository"]["url"]), ref=pinned_ref(config))


def parse_ref(ref: str) -> str:
    """A tag or branch to pin the course to; a clear error for anything else."""
    ref = ref.strip()
    if not REF.match(ref):
        raise ValueError(
            f"TAG or BRANCH must be a git tag or branch name such as v1.2.0 or spring-2027, "
            f"got {ref!r}"
        )
    if ref == PLAIN or ref.startswith(f"{PLAIN}-"):
        raise ValueError(
            f"{ref!r} is a plain edition's branch, built from another ref: pin that ref instead"
        )
    return ref


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


def _pin_patterns(old: Repository, new: Repository) -> list[tuple[re.Pattern[bytes], bytes]]:
    """The install URL with its ref (``git+https://github.com/<slug>[@<ref>]``) and the
    run-it links with the plain edition's branch (Colab's ``/github/<slug>/blob/<branch>/``,
    Binder's ``/gh/<slug>/<branch>?``), each as a whole: not followed by more of a name."""
    old_install, new_install = install_url(old.url, old.ref), install_url(new.url, new.ref)
    old_branch = re.escape(plain_branch(old.ref).encode())
    return [
        (re.compile(re.escape(old_install.encode()) + rb"(?![\w.@/-])"), new_install.encode()),
        (
            re.compile(rb"(?<=/)" + re.escape(old.slug.encode()) + rb"(/blob/|/)" + old_branch
                       + rb"(?![\w.-])"),
            new.slug.encode() + rb"\g<1>" + plain_branch(new.ref).encode(),
        ),
    ]  # fmt: skip


def _config_branch_pattern(old: Repository, new: Repository) -> tuple[re.Pattern[bytes], bytes]:
    """``repository.branch`` in ``_config.yml``, where the ref is defined."""
    old_branch = re.escape(plain_branch(old.ref).encode())
    return (
        re.compile(rb"(?m)^([ \t]+branch:[ \t]*)" + old_branch + rb"(?![\w.-])"),
        rb"\g<1>" + plain_branch(new.ref).encode(),
    )


def retarget(root: Path, url: str, ref: str | None = None) -> dict[Path, int]:
    """Replace the configured repository by ``url`` under ``root`` and pin the course to
    ``ref``, a tag or branch (``"main"`` removes a pin; None keeps the current one). Returns
    the number of replacements per changed file."""
    old = configured(root)
    new = replace(parse_repository(url), ref=old.ref if ref is None else parse_ref(ref))
    if old == new:
        return {}
    # The pinned URLs first: they hold the old slug, which the last two patterns replace.
    patterns = _pin_patterns(old, new) if old.ref != new.ref else []
    patterns += [
        (_slug_pattern(old), new.slug.encode()),
        (_clone_directory_pattern(old), rb"\g<1>" + new.name.encode()),
    ]
    config, config_patterns = root / "_config.yml", patterns
    if old.ref != new.ref:
        branch = _config_branch_pattern(old, new)
        if len(branch[0].findall(config.read_bytes())) != 1:
            raise ValueError(f"_config.yml must say `branch: {plain_branch(old.ref)}` once")
        config_patterns = [branch, *patterns]
    changed = {}
    for path in source_files(root):
        content = path.read_bytes()
        if old.name.encode() not in content:
            continue
        todo = config_patterns if path == config else patterns
        updated, count = content, 0
        for pattern, replacement in todo:
            updated, n = pattern.subn(replacement, updated)
            count += n
        if updated != content:
            path.write_bytes(updated)
            changed[path] = count
    return changed


def next_steps(new: Repository, kind: str) -> str:
    """What to do after retargeting: commit, push the pinned ref, make the student copies."""
    steps = ["- Review with `git diff`, then commit."]
    if new.ref != DEFAULT_REF:
        branch = plain_branch(new.ref)
        if kind == "branch":
            build = (
                f"after each push to {new.ref}, run the workflow Book on it (Actions > Book > "
                f"Run workflow): it builds the branch's plain edition, {branch}"
            )
        else:
            build = f".github/workflows/book.yml then builds its plain edition, {branch}"
        steps.append(
            f"- Push main and the {kind} {new.ref} to the fork"
            + (f" (a new tag: `git tag {new.ref}` first)" if kind != "branch" else "")
            + f"; {build}, which the run-it links open."
        )
    steps.append(
        f"- Run `make student` again: the copies' install cell installs "
        f"{install_url(new.url, new.ref)}."
    )
    return "\n".join(steps)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", help="the fork's URL, https://github.com/<owner>/<name>")
    ref = parser.add_mutually_exclusive_group()
    ref.add_argument("--tag", help="pin the course to this tag (make retarget TAG=...)")
    ref.add_argument("--branch", help="pin it to this branch; --branch main removes a pin")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    kind = "tag" if args.tag is not None else "branch" if args.branch is not None else "ref"
    try:
        old = configured(args.root)
        changed = retarget(args.root, args.repo, args.tag if kind == "tag" else args.branch)
    except ValueError as error:
        print(f"retarget: {error}", file=sys.stderr)
        return 2
    new = configured(args.root)
    if not changed:
        print(f"Nothing to do: the course already points at {new}.")
        return 0
    for path, count in changed.items():
        print(f"{path.relative_to(args.root)}: {count} replaced")
    print(f"\n{old} -> {new} in {len(changed)} files. Next:")
    print(next_steps(new, kind))
    return 0


if __name__ == "__main__":
    sys.exit(main())
