"""The files around the course: CITATION.cff, the version and CHANGELOG.md, the GitHub
workflows, and the `make` commands that the README, CONTRIBUTING.md and the book's pages tell
people to run."""

from __future__ import annotations

import re
from datetime import date

import pytest
import yaml
from course import ROOT

import selfattn_lib
from tools.repository import pinned_ref, plain_branch, repository_url

WORKFLOWS = ROOT / ".github" / "workflows"
CPU_TORCH = "https://download.pytorch.org/whl/cpu"
# The keys CFF 1.2.0 allows at the top level (schema.json, "properties").
CFF_KEYS = {
    "abstract",
    "authors",
    "cff-version",
    "commit",
    "contact",
    "date-released",
    "doi",
    "identifiers",
    "keywords",
    "license",
    "license-url",
    "message",
    "preferred-citation",
    "references",
    "repository",
    "repository-artifact",
    "repository-code",
    "title",
    "type",
    "url",
    "version",
}


@pytest.fixture(scope="module")
def citation() -> dict:
    # Dates stay strings, as in the CFF schema (YAML would otherwise read a datetime.date).
    text = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    return yaml.load(text, Loader=yaml.BaseLoader)


def test_citation_is_valid_cff_1_2_0(citation):
    assert set(citation) <= CFF_KEYS, set(citation) - CFF_KEYS
    for key in ("cff-version", "message", "title", "authors"):
        assert citation.get(key), f"CFF requires {key}"
    assert citation["cff-version"] == "1.2.0"
    assert citation["type"] in {"software", "dataset"}
    for author in citation["authors"]:
        assert author.get("name") or author.get("family-names"), "a person or an entity"
    date.fromisoformat(citation["date-released"])  # YYYY-MM-DD
    # One SPDX identifier: CFF 1.2.0 reads a list of licences as a choice between them.
    assert citation["license"] in {"MIT", "CC-BY-4.0"}


def test_citation_matches_the_configuration_and_the_package(citation):
    assert citation["repository-code"] == repository_url()
    assert citation["version"] == selfattn_lib.__version__
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert citation["title"] == config["title"]


# --- Versions: selfattn_lib.__version__ is the one version (CONTRIBUTING.md, "Releasing") ----

# Keep a Changelog's section headings: "## [Unreleased]", "## [1.2.0] - 2026-11-25".
RELEASE = re.compile(r"^## \[(?P<version>[^\]]+)\](?: - (?P<date>\S+))?[ \t]*$", re.MULTILINE)
SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$")


def changelog_releases() -> list[tuple[str, str]]:
    """(version, date) of every section of CHANGELOG.md, top first ("Unreleased" has none)."""
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    return [(match["version"], match["date"] or "") for match in RELEASE.finditer(text)]


def toml_table(text: str, name: str) -> str:
    """The lines of the table ``[name]`` of a TOML file (tomllib needs Python 3.11)."""
    match = re.search(rf"^\[{re.escape(name)}\]\n(.*?)(?=^\[|\Z)", text, re.M | re.S)
    return match.group(1) if match else ""


def test_the_version_is_defined_once_in_the_package():
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    project = toml_table(pyproject, "project")
    assert not re.search(r"^version\s*=", project, re.M), "no second version"
    assert re.search(r'^dynamic = \["version"\]$', project, re.M)
    dynamic = toml_table(pyproject, "tool.setuptools.dynamic")
    assert re.search(r'^version = \{ attr = "selfattn_lib\.__version__" \}$', dynamic, re.M)
    assert SEMVER.match(selfattn_lib.__version__), selfattn_lib.__version__


def test_the_version_is_the_latest_release_of_the_changelog(citation):
    releases = changelog_releases()
    assert releases and releases[0] == ("Unreleased", ""), "changes wait under [Unreleased]"
    released = releases[1:]
    assert released, "at least one release"
    version, released_on = released[0]
    assert version == selfattn_lib.__version__, "bump __version__ with the changelog"
    assert (citation["version"], citation["date-released"]) == (version, released_on)
    for version, released_on in released:
        assert SEMVER.match(version), version
        date.fromisoformat(released_on)  # YYYY-MM-DD
    numbers = [tuple(int(part) for part in version.split(".")) for version, _ in released]
    assert numbers == sorted(numbers, reverse=True) and len(set(numbers)) == len(numbers)
    dates = [released_on for _, released_on in released]
    assert dates == sorted(dates, reverse=True), "newest first"


def test_contributing_says_how_to_release():
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text[text.index("## Releasing") :]
    for step in ("__version__", "CHANGELOG.md", "CITATION.cff", "git tag v", "git push origin"):
        assert step in section, step


def workflow(name: str) -> dict:
    loaded = yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))
    # YAML 1.1 reads the key `on` as True.
    loaded["on"] = loaded.pop(True, loaded.get("on"))
    return loaded


def steps(job: dict) -> tuple[list[str], list[str]]:
    uses = [step["uses"].split("@")[0] for step in job["steps"] if "uses" in step]
    runs = [step["run"] for step in job["steps"] if "run" in step]
    return uses, runs


def test_the_book_workflow_builds_with_make_book_and_deploys_to_pages():
    book = workflow("book.yml")
    assert book["on"]["push"]["branches"] == ["main"]
    assert book["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    assert book["env"]["PIP_EXTRA_INDEX_URL"] == CPU_TORCH
    build, deploy = book["jobs"]["build"], book["jobs"]["deploy"]
    uses, runs = steps(build)
    assert uses == [
        "actions/checkout",
        "actions/setup-python",
        "actions/configure-pages",
        "actions/upload-pages-artifact",
    ]
    python = next(step for step in build["steps"] if "setup-python" in step.get("uses", ""))
    assert python["with"]["python-version"] == "3.11"
    assert runs == ["make book"], "the README's command"
    upload = next(step for step in build["steps"] if "upload-pages" in step.get("uses", ""))
    assert upload["with"]["path"] == "_build/html"
    assert deploy["needs"] == "build"
    assert deploy["environment"]["name"] == "github-pages"
    assert steps(deploy)[0] == ["actions/deploy-pages"]


def test_the_book_workflow_rebuilds_the_plain_edition_of_each_ref(config):
    """main's plain edition, and one for every tag (a release, or a term pinned with make
    retarget TAG=…), each pinned to the ref it is built from and pushed to the branch that
    its _config.yml then names (tools.repository.plain_branch)."""
    book = workflow("book.yml")
    assert book["on"]["push"]["tags"] == ["**"]
    # A tag's run waits in a group of its own, so that no push to main cancels it.
    assert (
        book["concurrency"]["group"] == "${{ github.ref_type == 'tag' && github.ref || 'pages' }}"
    )
    plain = book["jobs"]["plain"]
    assert plain["if"] == "github.ref_name != 'plain' && !startsWith(github.ref_name, 'plain-')"
    assert plain["permissions"] == {"contents": "write"}
    runs = "\n".join(steps(plain)[1])
    in_order = [
        'python -m tools.retarget "https://github.com/${GITHUB_REPOSITORY}"',
        '"--${GITHUB_REF_TYPE}" "${GITHUB_REF_NAME}"',  # --branch main, --tag v1.2.0
        "python -m tools.plain_edition --output .",
        'print(load_config()["repository"]["branch"])',
        'git switch --create "${branch}"',
        'git push --force origin "${branch}"',
    ]
    positions = [runs.find(line) for line in in_order]
    assert -1 not in positions and positions == sorted(positions), positions
    branch = config["repository"]["branch"]
    assert branch != "main", "the launch links open the plain edition, not the MyST source"
    assert branch == plain_branch(pinned_ref(config))
    assert plain_branch("main") == "plain" and plain_branch("v1.2.0") == "plain-v1.2.0"


def test_the_test_workflow_runs_ci_run_on_pull_requests():
    tests = workflow("tests.yml")
    assert "pull_request" in tests["on"]
    job = tests["jobs"]["test"]
    assert job["runs-on"] == "ubuntu-latest"
    assert job["container"] == "python:3.11-bookworm", "Python 3.11 on Debian, for chromium"
    assert job["env"]["PIP_EXTRA_INDEX_URL"] == CPU_TORCH
    uses, runs = steps(job)
    assert uses[0] == "actions/checkout"
    assert runs == [".ci/run"]
    ci_run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "apt-get install" in ci_run and "chromium chromium-driver" in ci_run
    assert re.search(r"^make test\b", ci_run, re.MULTILINE), "the README's command"


def test_the_python_version_is_the_same_everywhere():
    runtime = (ROOT / "binder" / "runtime.txt").read_text(encoding="utf-8").strip()
    assert runtime == "python-3.11"
    assert "Python 3.11" in (ROOT / "README.md").read_text(encoding="utf-8")


def makefile_targets() -> set[str]:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([A-Za-z][\w-]*):(?!=)", makefile, re.MULTILINE))


DOCUMENTS = ["README.md", "CONTRIBUTING.md", *sorted(p.name for p in (ROOT / "book").glob("*.md"))]


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_make_command_in_the_documentation_exists(document):
    path = ROOT / document if (ROOT / document).exists() else ROOT / "book" / document
    # A command is code: `make x` inline, or a line of a code block that starts with make.
    text = path.read_text(encoding="utf-8")
    commands = set(re.findall(r"(?:`|^[ \t]*)make ([a-z][\w-]*)", text, re.MULTILINE))
    assert commands - makefile_targets() == set()


def test_student_copies_go_to_dist_which_make_clean_removes():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^student:.*\n(\t.*\n)*\t.*--output dist/student", makefile, re.MULTILINE)
    assert re.search(r"^clean:.*\n\trm -rf .*\bdist\b", makefile, re.MULTILINE)
    assert "dist/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()


def test_the_readme_documents_the_commands_people_need():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for command in ("make book", "make test", "make lab", "make student", "make retarget REPO="):
        assert command in readme


def test_the_wheel_ships_every_module_of_the_package(tmp_path):
    """Colab installs the wheel: a subpackage that package discovery missed would be absent
    there while every test in the repository passed."""
    import subprocess
    import sys
    import zipfile

    from notebook_envs import copy_sources

    source, wheels = tmp_path / "source", tmp_path / "wheels"
    copy_sources(source)
    build = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-index", "--no-deps"]
    build += ["--no-build-isolation", "--wheel-dir", str(wheels), str(source)]
    result = subprocess.run(build, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    # The version setuptools reads from selfattn_lib.__version__ (pyproject.toml's dynamic).
    (wheel,) = wheels.glob(f"selfattn_lib-{selfattn_lib.__version__}-*.whl")
    shipped = {name for name in zipfile.ZipFile(wheel).namelist() if name.endswith(".py")}
    package = source / "selfattn_lib"
    modules = {path.relative_to(source).as_posix() for path in package.rglob("*.py")}
    assert {"selfattn_lib/__init__.py", "selfattn_lib/exercises/__init__.py"} <= modules
    assert modules == shipped, sorted(modules ^ shipped)


def test_no_property_test_has_a_deadline():
    """A loaded machine must not fail a test: Hypothesis runs without its time limit."""
    from hypothesis import settings

    assert settings.default.deadline is None
