"""Retargeting a fork and pinning a term (``make retarget REPO=… [TAG=…|BRANCH=…]``,
tools/retarget.py), and the repository URL agreeing with ``_config.yml`` everywhere it is
spelled out.

tests/test_notebooks.py checks each notebook's install cell and run-it links against
``_config.yml``; the last test here covers every other file.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from tools import instructors_page
from tools.repository import (
    ROOT,
    install_url,
    launch_links,
    load_config,
    pinned_ref,
    plain_branch,
    published_notebooks,
    read_notebook,
    repository_url,
)
from tools.retarget import (
    configured,
    is_skipped,
    main,
    parse_ref,
    parse_repository,
    retarget,
    source_files,
)
from tools.student_copies import student_copy

FORK = "https://github.com/a-teacher/attention-course-2027"
TERM = "autumn-2031"  # the tag a term is pinned to (no page names it)
MINI_CONFIG = "repository:\n  url: https://github.com/org/course\n  branch: plain\n"
# Every way a course link names its repository: github.com/<slug>, Colab's /github/<slug>/,
# Binder's /gh/<slug>/ and pip's git+https://github.com/<slug>, pinned or not (@<ref>).
COURSE_LINK = re.compile(
    r"(?:colab\.research\.google\.com/github|mybinder\.org/v2/gh|git\+https://github\.com)/"
    r"([\w.-]+/[\w.-]+?)(?=[/\\\"'\s)@]|$)"  # a backslash: a quote in a notebook's JSON
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


def assert_consistent(root: Path, url: str, ref: str) -> None:
    """Every install cell, run-it link and URL of the course at ``root`` is the one that its
    _config.yml defines, and that is ``url`` pinned to ``ref``."""
    config = load_config(root)
    assert configured(root) == replace(parse_repository(url), ref=ref)
    assert config["repository"]["branch"] == plain_branch(ref)
    package = f'"selfattn-lib @ {install_url(url, ref)}"'
    installs = 0
    for path in published_notebooks(root):
        nb = read_notebook(path)
        opening = nb.cells[0].source
        links = launch_links(path.relative_to(root), config)
        if "[Open in Colab](" in opening:
            assert f"[Open in Colab]({links['colab']})" in opening
            assert f"[Launch Binder]({links['binder']})" in opening
        # A student copy keeps the install cell: `make student` after retargeting installs
        # the fork's library at the pinned ref.
        for notebook in (nb, student_copy(nb)):
            setup = next(cell.source for cell in notebook.cells if cell.cell_type == "code")
            if "selfattn-lib @ git+" in setup:
                assert package in setup, path.name
                installs += 1
    assert installs, "the notebooks install the library in Colab"
    citation = yaml.safe_load((root / "CITATION.cff").read_text(encoding="utf-8"))
    assert citation["repository-code"] == url
    assert project_urls(root) == {url}
    # The instructors' page of the fork is what the generator makes from the fork.
    page = (root / "book" / "instructors.md").read_text(encoding="utf-8")
    assert page == instructors_page.render(root)


def test_a_retargeted_fork_is_consistent(fork):
    root, _ = fork
    assert_consistent(root, FORK, pinned_ref(load_config()))


@pytest.fixture(scope="module")
def pinned(tmp_path_factory) -> Path:
    """A copy of the course retargeted to the fork and pinned to the tag TERM at once."""
    root = copy_repository(tmp_path_factory.mktemp("pinned") / "course")
    assert retarget(root, FORK, TERM)
    return root


def test_a_term_pinned_to_a_tag_is_consistent(pinned):
    assert_consistent(pinned, FORK, TERM)


def test_pinning_adds_only_the_ref_to_the_retargeted_fork(pinned, fork):
    """The pinned copy is the unpinned fork with "@<ref>" after the install URL and
    "plain-<ref>" for "plain" in the configuration and the run-it links, byte for byte."""
    unpinned, _ = fork
    differ = set()
    for path in source_files(pinned):
        relative = path.relative_to(pinned)
        content = path.read_bytes()
        without_ref = content.replace(f"{FORK}@{TERM}".encode(), FORK.encode())
        without_ref = without_ref.replace(f"plain-{TERM}".encode(), b"plain")
        assert without_ref == (unpinned / relative).read_bytes(), relative
        if content != without_ref:
            differ.add(relative.parts[0])
    assert {"_config.yml", "notebooks", "book"} <= differ


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
    (tmp_path / "_config.yml").write_text(MINI_CONFIG)
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
    (tmp_path / "_config.yml").write_text(MINI_CONFIG)
    assert main(["https://gitlab.com/me/mine", "--root", str(tmp_path)]) == 2
    assert "GitHub repository URL" in capsys.readouterr().err


# --- Pinning, on a small made-up repository ------------------------------------------------

INSTALL = '"    %pip install --quiet \\"selfattn-lib @ git+https://github.com/{slug}{ref}\\""'
LINKS = (
    "[Open in Colab](https://colab.research.google.com/github/{slug}/blob/{branch}/nb/a.ipynb)"
    " [Launch Binder](https://mybinder.org/v2/gh/{slug}/{branch}?urlpath=lab/tree/nb/a.ipynb)"
)
# Neither the plain edition nor the install URL: left as they are, apart from the slug.
OTHERS = (
    "https://github.com/{slug}/blob/main/README.md git+https://github.com/org/course-extra "
    "https://github.com/{slug}/blob/plainer/x"
)


def notebook_text(slug: str, ref: str = "main") -> str:
    """A notebook's install cell, run-it links and other URLs, as the JSON of a notebook."""
    at = "" if ref == "main" else f"@{ref}"
    return "\n".join(
        [
            INSTALL.format(slug=slug, ref=at),
            LINKS.format(slug=slug, branch=plain_branch(ref)),
            OTHERS.format(slug=slug),
        ]
    )


@pytest.fixture
def course(tmp_path) -> Path:
    (tmp_path / "_config.yml").write_text(MINI_CONFIG + "  # branch: plain in a comment\n")
    (tmp_path / "nb").mkdir()
    (tmp_path / "nb" / "a.ipynb").write_text(notebook_text("org/course"))
    return tmp_path


def assert_pinned(root: Path, slug: str, ref: str) -> None:
    assert configured(root) == replace(parse_repository(f"https://github.com/{slug}"), ref=ref)
    assert (root / "nb" / "a.ipynb").read_text() == notebook_text(slug, ref)
    assert (root / "_config.yml").read_text().endswith("  # branch: plain in a comment\n")


def test_a_pin_is_set_changed_kept_and_removed(course):
    retarget(course, "https://github.com/me/mine", "v1.2.0")
    assert_pinned(course, "me/mine", "v1.2.0")
    assert retarget(course, "https://github.com/me/mine", "v1.2.0") == {}
    retarget(course, "https://github.com/me/mine", "term/spring-2027")
    assert_pinned(course, "me/mine", "term/spring-2027")
    retarget(course, "https://github.com/you/yours")  # another fork, the same term
    assert_pinned(course, "you/yours", "term/spring-2027")
    retarget(course, "https://github.com/org/course", "main")
    assert_pinned(course, "org/course", "main")


def test_a_pinned_ref_is_read_from_the_plain_editions_branch():
    assert pinned_ref({"repository": {"branch": "plain"}}) == "main"
    assert pinned_ref({"repository": {"branch": "plain-v1.2.0"}}) == "v1.2.0"
    for branch in ("main", "plain-", "gh-pages"):
        with pytest.raises(ValueError, match="repository.branch must be"):
            pinned_ref({"repository": {"branch": branch}})
    assert install_url("https://github.com/me/mine/", "main") == "git+https://github.com/me/mine"


@pytest.mark.parametrize("ref", ["v1.2.0", "spring-2027", "term/2027_a", "v2.0.0-rc.1"])
def test_parse_ref_accepts_tag_and_branch_names(ref):
    assert parse_ref(f" {ref} ") == ref


@pytest.mark.parametrize(
    "ref", ["", "-x", "a b", "a..b", "a@b", "x/", "x.", "x.lock", "a//b", "a/.b", 'v1"', "a#b"]
)
def test_parse_ref_rejects_what_git_or_pip_would_not_take(ref):
    with pytest.raises(ValueError, match="git tag or branch name"):
        parse_ref(ref)


@pytest.mark.parametrize("ref", ["plain", "plain-v1.2.0"])
def test_a_plain_edition_cannot_be_pinned(ref):
    with pytest.raises(ValueError, match="plain edition"):
        parse_ref(ref)


def test_a_configuration_without_its_branch_line_is_not_pinned(tmp_path):
    config = "repository:\n  url: https://github.com/org/course\n  branch: 'plain'\n"
    (tmp_path / "_config.yml").write_text(config)
    with pytest.raises(ValueError, match="_config.yml must say `branch: plain`"):
        retarget(tmp_path, "https://github.com/me/mine", "v1")
    assert (tmp_path / "_config.yml").read_text() == config, "nothing written"


def test_main_pins_to_a_tag_and_says_what_to_do_next(course, capsys):
    assert main(["https://github.com/me/mine", "--tag", "v1.2.0", "--root", str(course)]) == 0
    out = capsys.readouterr().out
    assert "https://github.com/org/course -> https://github.com/me/mine at v1.2.0" in out
    assert "git tag v1.2.0" in out and "plain-v1.2.0" in out and "make student" in out
    assert main(["https://github.com/me/mine", "--branch", "main", "--root", str(course)]) == 0
    assert_pinned(course, "me/mine", "main")


def test_main_takes_a_tag_or_a_branch_not_both(course, capsys):
    with pytest.raises(SystemExit) as error:
        main(["https://github.com/me/mine", "--tag", "v1", "--branch", "b", "--root", str(course)])
    assert error.value.code == 2 and "not allowed with" in capsys.readouterr().err
    assert main(["https://github.com/me/mine", "--tag", "a..b", "--root", str(course)]) == 2
    assert "git tag or branch name" in capsys.readouterr().err
    assert_pinned(course, "org/course", "main")


def make_retarget(*variables: str) -> subprocess.CompletedProcess:
    environment = {
        key: value for key, value in os.environ.items() if key not in {"REPO", "TAG", "BRANCH"}
    }
    return subprocess.run(
        ["make", "--no-print-directory", "-C", str(ROOT), "retarget", *variables],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
    )


def test_make_retarget_takes_a_tag_or_a_branch_not_both():
    result = make_retarget(f"REPO={FORK}", "TAG=v1.2.0", "BRANCH=spring")
    assert result.returncode != 0
    assert "TAG=<tag> or BRANCH=<branch>, not both" in result.stderr


def test_make_retarget_passes_the_ref_on():
    result = subprocess.run(
        ["make", "--dry-run", "--no-print-directory", "-C", str(ROOT), "-o", ".venv/.installed",
         "retarget", f"REPO={FORK}", "TAG=v1.2.0"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert f'-m tools.retarget "{FORK}" --tag "v1.2.0"' in result.stdout, result.stderr


def test_make_retarget_without_repo_says_how_to_call_it():
    result = make_retarget()
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
