"""The environments the course runs in, besides `.venv`, agree with requirements.txt.

- Binder (`binder/`): the requirements layer holds no local path or editable install, so
  Binder (repo2docker) installs it before copying the repository and can cache it across
  commits; it pins the versions of requirements.txt; `postBuild` installs the course's
  package; `runtime.txt` names a Python the package supports.
- The wheel-only environment of tests/test_isolated_run.py pins requirements.txt's versions.
- The Colab environment of tests/test_colab_run.py meets the package's own dependencies.
"""

from __future__ import annotations

import importlib.metadata
import os
import re

import pytest
from course import ROOT
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

BINDER = ROOT / "binder"
# What the notebooks import; every environment that runs them pins these.
RUNTIME = {"numpy", "matplotlib", "ipywidgets", "torch"}


def requirement_lines(path) -> list[str]:
    lines = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split(" #")[0].strip()
        if line and not line.startswith("#"):
            lines.append(line)
    return lines


def pins(path) -> dict[str, Version]:
    """Exactly pinned packages (``name==version``) of a requirements file."""
    found = {}
    for line in requirement_lines(path):
        if line.startswith("-"):
            continue
        requirement = Requirement(line)
        (specifier,) = requirement.specifier
        assert specifier.operator == "==", f"{path.name}: {line} is not pinned exactly"
        found[canonicalize_name(requirement.name)] = Version(specifier.version)
    return found


def public(version: Version) -> Version:
    """The version without a local label: 2.13.0+cpu -> 2.13.0."""
    return Version(version.public)


def package_metadata():
    """The course package's metadata, as installed from pyproject.toml (make reinstalls it
    whenever pyproject.toml changes)."""
    return importlib.metadata.metadata("selfattn-lib")


def test_binder_requirements_hold_no_local_path_so_binder_can_cache_them():
    for line in requirement_lines(BINDER / "requirements.txt"):
        if line.startswith("-"):
            option = line.split()[0]
            assert option in {"--extra-index-url", "--index-url"}, f"{line}: local or editable"
            continue
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            pytest.fail(f"{line!r} is a path or URL, not a requirement")
        assert requirement.url is None, f"{line}: a direct reference"


def test_binder_pins_the_versions_of_requirements_txt():
    ours, binder = pins(ROOT / "requirements.txt"), pins(BINDER / "requirements.txt")
    assert RUNTIME <= set(binder), "Binder pins every package the notebooks import"
    shared = set(ours) & set(binder)
    assert {name: public(binder[name]) for name in shared} == {name: ours[name] for name in shared}


def test_binder_torch_is_the_cpu_build_from_pytorchs_cpu_index():
    lines = requirement_lines(BINDER / "requirements.txt")
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in lines
    assert pins(BINDER / "requirements.txt")["torch"].local == "cpu"


def test_binder_postbuild_installs_the_course_package():
    post_build = BINDER / "postBuild"
    script = post_build.read_text(encoding="utf-8")
    assert script.startswith("#!/bin/bash") and "set -euo pipefail" in script
    assert re.search(r"^python -m pip install (--\S+ )*\.$", script, re.MULTILINE), script
    assert os.access(post_build, os.X_OK), "postBuild must be executable"


def test_binder_python_is_one_the_package_supports():
    runtime = (BINDER / "runtime.txt").read_text(encoding="utf-8").strip()
    match = re.fullmatch(r"python-(\d+\.\d+)", runtime)
    assert match, runtime
    assert Version(match.group(1)) in SpecifierSet(package_metadata()["Requires-Python"])


def test_wheel_only_environment_pins_the_versions_of_requirements_txt():
    ours, isolated = pins(ROOT / "requirements.txt"), pins(ROOT / "tests/envs/isolated.txt")
    assert RUNTIME | {"ipykernel", "nbclient"} <= set(isolated)
    shared = set(ours) & set(isolated)
    assert {name: isolated[name] for name in shared} == {name: ours[name] for name in shared}


def test_colab_environment_meets_the_packages_dependencies():
    """Colab installs the package over its own versions: the loose lower bounds of
    pyproject.toml must accept them (tests/test_colab_run.py checks pip changes nothing)."""
    colab = pins(ROOT / "tests/envs/colab.txt")
    assert RUNTIME | {"ipykernel", "ipython", "nbclient"} <= set(colab)
    for line in package_metadata().get_all("Requires-Dist"):
        requirement = Requirement(line)  # e.g. 'torch>=2.2; extra == "torch"'
        version = colab[canonicalize_name(requirement.name)]
        assert requirement.specifier.contains(version), f"Colab's {version} vs {line}"
