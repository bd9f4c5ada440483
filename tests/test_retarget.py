"""Retargeting a fork (``make retarget REPO=…``, tools/retarget.py), and the repository URL
agreeing with ``_config.yml`` everywhere it is spelled out.

tests/test_notebooks.py checks each notebook's install cell and run-it links against
``_config.yml``; the last test here covers every other file.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tools import instructors_page
from tools.repository import (
    ROOT,
    launch_links,
    load_config,
    published_notebooks,
    read_notebook,
    repository_url,
)
from tools.retarget import is_skipped, main, parse_repository, retarget, source_files

FORK = "https://github.com/a-teacher/attention-course-2027"
# Every way a course link names its repository: github.com/<slug>, Colab's /github/<slug>/,
# Binder's /gh/<slug>/ and pip's git+https://github.com/<slug>.
COURSE_LINK = re.compile(
    r"(?:colab\.research\.google\.com/github|mybinder\.org/v2/gh|git\+https://github\.com)/"
    r"([\w.-]+/[\w.-]+?)(?=[/\"'\s)]|$)"
)


def project_urls(root: Path) -> set[str]:
    """The URLs of pyproject.toml's [project.urls] table."""
    text = (root / "pyproject.toml").read_text(encoding="utf-8")
    table = re.search(r"^\[project\.urls\]\n(.*?)(?:^\[|\Z)", text, re.MULTILINE | re.DOTALL)
    return set(re.findall(r'^\w+ = "([^"]+)"', table.group(1), re.MULTILINE)) if table else set()


def copy_repository(target: Path) -> Path:
    def ignore(directory: str, names: list[str]) -> list[str]:
        relative = Path(directory).relative_to(ROOT)
        return [name for name in names if is_skipped(relative / name / "x")]

    shutil.copytree(ROOT, target, ignore=ignore, symlinks=True)
    return target


@pytest.fixture(scope="module")
def fork(tmp_path_factory) -> tuple[Path, dict[Path, int]]:
    root = copy_repository(tmp_path_factory.mktemp("fork") / "course")
    return root, retarget(root, FORK)


def test_retarget_leaves_nothing_of_the_old_url(fork):
    root, changed = fork
    old = parse_repository(repository_url())
    assert changed, "retarget changed files"
    for path in source_files(root):
        content = path.read_bytes()
        assert old.slug.encode() not in content, path.relative_to(root)
        assert not re.search(rb"(?m)^\s*cd " + re.escape(old.name.encode()) + rb"\s*$", content)
    assert repository_url(root) == FORK
    assert "cd attention-course-2027" in (root / "book" / "intro.md").read_text()


def test_retarget_changes_only_the_url_byte_for_byte(fork):
    root, changed = fork
    old, new = parse_repository(repository_url()), parse_repository(FORK)
    for path in changed:
        original = (ROOT / path.relative_to(root)).read_bytes()
        expected = original.replace(old.slug.encode(), new.slug.encode())
        expected = re.sub(
            rb"(?m)^(\s*cd )" + re.escape(old.name.encode()) + rb"(\s*)$",
            rb"\g<1>" + new.name.encode() + rb"\g<2>",
            expected,
        )
        assert path.read_bytes() == expected, path.relative_to(root)
    for path in source_files(root):
        if path not in changed:
            assert path.read_bytes() == (ROOT / path.relative_to(root)).read_bytes()


def test_a_retargeted_fork_is_consistent(fork):
    root, _ = fork
    config = load_config(root)
    for path in published_notebooks(root):
        nb = read_notebook(path)
        opening = nb.cells[0].source
        setup = next(cell.source for cell in nb.cells if cell.cell_type == "code")
        links = launch_links(path.relative_to(root), config)
        if "[Open in Colab](" in opening:
            assert f"[Open in Colab]({links['colab']})" in opening
            assert f"[Launch Binder]({links['binder']})" in opening
        if "selfattn-lib @ git+" in setup:
            assert f'"selfattn-lib @ git+{FORK}"' in setup
    citation = yaml.safe_load((root / "CITATION.cff").read_text(encoding="utf-8"))
    assert citation["repository-code"] == FORK
    assert project_urls(root) == {FORK}
    # The instructors' page of the fork is what the generator makes from the fork.
    page = (root / "book" / "instructors.md").read_text(encoding="utf-8")
    assert page == instructors_page.render(root)


def test_retarget_twice_changes_nothing_more(fork):
    root, _ = fork
    assert retarget(root, FORK) == {}
    assert retarget(root, FORK + ".git/") == {}


@pytest.mark.parametrize(
    "url, slug",
    [
        ("https://github.com/me/fork", "me/fork"),
        ("https://github.com/me/fork/", "me/fork"),
        ("https://github.com/me/fork.git", "me/fork"),
        ("  https://github.com/Some-Org/my.course_2  ", "Some-Org/my.course_2"),
    ],
)
def test_parse_repository_accepts_github_urls(url, slug):
    assert parse_repository(url).slug == slug


@pytest.mark.parametrize(
    "url",
    [
        "",
        "me/fork",
        "github.com/me/fork",
        "http://github.com/me/fork",
        "https://gitlab.com/me/fork",
        "https://github.com/me",
        "https://github.com/me/fork/tree/main",
        'https://github.com/me/fo"rk',
        "https://github.com/-me/fork",
    ],
)
def test_parse_repository_rejects_anything_else(url):
    with pytest.raises(ValueError, match="GitHub repository URL"):
        parse_repository(url)


def test_a_repository_whose_name_only_starts_the_same_is_left_alone(tmp_path):
    (tmp_path / "_config.yml").write_text("repository:\n  url: https://github.com/org/course\n")
    other = "https://github.com/org/course-extra and https://github.com/org/course.old\n"
    (tmp_path / "README.md").write_text(f"Ours: https://github.com/org/course/blob/x.\n{other}")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "x.md").write_text("https://github.com/org/course\n")
    retarget(tmp_path, "https://github.com/me/mine")
    assert (tmp_path / "README.md").read_text() == (
        f"Ours: https://github.com/me/mine/blob/x.\n{other}"
    )
    assert "org/course" in (tmp_path / ".venv" / "x.md").read_text(), "tool state is left alone"


def test_main_explains_a_bad_url(tmp_path, capsys):
    (tmp_path / "_config.yml").write_text("repository:\n  url: https://github.com/org/course\n")
    assert main(["https://gitlab.com/me/mine", "--root", str(tmp_path)]) == 2
    assert "GitHub repository URL" in capsys.readouterr().err


def test_make_retarget_without_repo_says_how_to_call_it():
    environment = {key: value for key, value in os.environ.items() if key != "REPO"}
    result = subprocess.run(
        ["make", "--no-print-directory", "-C", str(ROOT), "retarget"],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
    )
    assert result.returncode != 0
    assert "make retarget REPO=https://github.com/<owner>/<name>" in result.stderr


def test_every_course_link_in_the_repository_points_at_the_configured_repository():
    slug = parse_repository(repository_url()).slug
    found = {}
    for path in source_files(ROOT):
        if path.relative_to(ROOT).parts[0] == "tests":
            continue  # tests make up repositories of their own
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for link in COURSE_LINK.findall(text):
            found.setdefault(link, set()).add(path.relative_to(ROOT).as_posix())
    assert found, "the notebooks link to the repository"
    assert {link: files for link, files in found.items() if link != slug} == {}
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert citation["repository-code"] == repository_url()
    assert project_urls(ROOT) == {repository_url()}
