"""Every published notebook runs with Google Colab's versions of the libraries: ipywidgets 7,
an older NumPy, Matplotlib, IPython and ipykernel (tests/envs/colab.txt, made by `make test`
in `.venv-colab`), with the course's helper library installed as Colab installs it: a wheel
built from the working tree, whose dependencies pip must find already met (the package's
loose lower bounds), so it changes none of Colab's packages. Each notebook is copied alone
into an empty directory and run there in a fresh kernel.

Outputs are NOT compared here (the committed outputs come from requirements.txt's versions,
and e.g. NumPy's printing may differ between versions): a notebook passes if it runs without
an error and writes nothing to stderr (deprecation warnings included).

A separate file from tests/test_isolated_run.py so that pytest-xdist (`--dist loadfile`)
runs the two environments on different workers, in parallel.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from course import ROOT
from notebook_envs import (
    check_ran_from_the_wheel,
    environment,
    install_course_wheel,
    published_notebooks,
    run_notebook,
)

NOTEBOOKS = published_notebooks()


def pinned(name: str) -> dict[str, str]:
    pins = {}
    for line in (ROOT / "tests" / "envs" / f"{name}.txt").read_text().splitlines():
        requirement = line.split("#")[0].strip()
        if "==" in requirement:
            package, version = requirement.split("==")
            pins[package.strip().lower()] = version.strip()
    return pins


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    venv = environment("colab")
    install_course_wheel(venv, tmp_path_factory.mktemp("wheel"))
    return venv


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.stem)
def test_notebook_runs_with_colabs_versions(venv, notebook, tmp_path: Path):
    outcome = run_notebook(venv, notebook, tmp_path)
    print(f"{notebook.stem}: {outcome['seconds']:.1f} s in {venv.name}")
    check_ran_from_the_wheel(outcome, venv)
    versions = {name.lower(): version for name, version in outcome["probe"]["versions"].items()}
    for package in ("ipywidgets", "numpy", "matplotlib", "ipython", "ipykernel"):
        assert versions[package] == pinned("colab")[package], "installing the wheel kept Colab's"
