"""Run the published notebooks in another Python environment, where the course's helper
library comes only from a freshly built wheel (as in Colab, which builds one from git).

The environments (`.venv-isolated`, `.venv-colab`) are made by `make test` from
`tests/envs/<name>.txt`: their packages are cached between runs, but the wheel is built from
the files git tracks (as they are in the working tree) and installed again in every test
session, and every notebook is copied
alone into a new, empty directory and run there in a fresh kernel of that environment. So a
notebook that reads a file of the repository, or relies on the editable install of `.venv`,
fails here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from course import ROOT

from selfattn_lib.plotting.base import PHONE_RENDERINGS
from tools.repository import published_notebooks  # noqa: F401 - for the run tests

RUNNER = Path(__file__).with_name("notebook_runner.py")
# Copied to build the wheel: the repository without its environments, builds and caches.
NOT_SOURCES = shutil.ignore_patterns(
    ".git", ".venv*", "_build", "build", "dist", "node_modules", "__pycache__", "*.egg-info",
    ".pytest_cache", ".hypothesis", ".ruff_cache", ".ipynb_checkpoints",
)  # fmt: skip
# Kernel start-up noise that is not the notebook's own output (none is known to be needed yet).
HARMLESS_STDERR: tuple[str, ...] = ()


def environment(name: str) -> Path:
    """The virtual environment `.venv-<name>`; skip (fail under CI) when make has not made it
    from the current `tests/envs/<name>.txt`."""
    venv = ROOT / f".venv-{name}"
    stamp, spec = venv / ".installed", ROOT / "tests" / "envs" / f"{name}.txt"
    if not stamp.is_file() or stamp.stat().st_mtime < spec.stat().st_mtime:
        message = (
            f"{venv.name} is missing or older than {spec.name}: "
            f"run `make {stamp.relative_to(ROOT)}` (make test does)"
        )
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return venv


def install_course_wheel(venv: Path, workdir: Path) -> str:
    """Build the wheel from a copy of the working tree and install it into ``venv`` without
    an index: pip may add nothing, so the environment must already satisfy its dependencies.
    Returns pip's output (for failure messages)."""
    python = str(venv / "bin" / "python")
    source, wheels = workdir / "source", workdir / "wheels"
    copy_sources(source)
    quiet = ["--quiet", "--no-index", "--disable-pip-version-check"]
    build = [python, "-m", "pip", "wheel", *quiet, "--no-deps", "--no-build-isolation"]
    steps = [
        [*build, "--wheel-dir", str(wheels), str(source)],
        [python, "-m", "pip", "uninstall", "--yes", "--quiet", "selfattn-lib"],
    ]
    log = ""
    for step in steps:
        result = subprocess.run(step, capture_output=True, text=True, check=False)
        log += result.stdout + result.stderr
        assert result.returncode == 0, log
    (wheel,) = wheels.glob("selfattn_lib-*.whl")
    install = [python, "-m", "pip", "install", *quiet, str(wheel)]
    result = subprocess.run(install, capture_output=True, text=True, check=False)
    log += result.stdout + result.stderr
    assert result.returncode == 0, f"the wheel's dependencies are not met in {venv.name}:\n{log}"
    return log


def copy_sources(destination: Path) -> None:
    """Copy what Colab's ``pip install git+URL`` would see: in a git checkout, only the files
    git tracks (a new module that was never added fails here, as it would in Colab), as they
    are in the working tree; elsewhere (an unpacked archive) the tree without environments."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if listed.returncode != 0:
        shutil.copytree(ROOT, destination, ignore=NOT_SOURCES)
        return
    for name in filter(None, listed.stdout.split("\0")):
        if (ROOT / name).is_file():  # a tracked file deleted in the working tree is gone
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, destination / name)


def clean_environment(venv: Path, home: Path, *, phone_renderings: bool) -> dict[str, str]:
    """Environment variables for the kernel: none of the test run's Python or Jupyter
    settings, a private IPython profile and Jupyter data directory with one kernel spec, and
    the figures' phone renderings only if ``phone_renderings`` (selfattn_lib.plotting)."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTHON", "JUPYTER", "IPYTHON", "PYTEST", "VIRTUAL_ENV", "MPL"))
        and key != PHONE_RENDERINGS
    }
    if phone_renderings:
        env[PHONE_RENDERINGS] = "1"
    kernel = home / "jupyter" / "kernels" / "course"
    kernel.mkdir(parents=True)
    python = str(venv / "bin" / "python")
    spec = {
        "argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"Python ({venv.name})",
        "language": "python",
    }
    (kernel / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
    env.update(
        PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        IPYTHONDIR=str(home / "ipython"),
        JUPYTER_DATA_DIR=str(home / "jupyter"),
        JUPYTER_CONFIG_DIR=str(home / "jupyter-config"),
        JUPYTER_RUNTIME_DIR=str(home / "jupyter-runtime"),
        JUPYTER_PLATFORM_DIRS="1",
    )
    return env


def run_notebook(
    venv: Path,
    notebook: Path,
    tmp: Path,
    *,
    block_torch: bool = False,
    phone_renderings: bool = False,
) -> dict:
    """Copy ``notebook`` alone into an empty directory and run it there with ``venv``'s
    Python; return the runner's report (see tests/notebook_runner.py). The figures are drawn
    for a phone too only if ``phone_renderings``: as a learner runs it, they are not."""
    work, home = tmp / "work", tmp / "home"
    work.mkdir()
    shutil.copy2(notebook, work / notebook.name)
    report = tmp / "report.json"
    command = [str(venv / "bin" / "python"), "-I", str(RUNNER), notebook.name, str(report)]
    result = subprocess.run(
        command + (["--block-torch"] if block_torch else []),
        cwd=work,
        env=clean_environment(venv, home, phone_renderings=phone_renderings),
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert result.returncode == 0 and report.is_file(), result.stdout + result.stderr
    outcome = json.loads(report.read_text(encoding="utf-8"))
    outcome["runner_stderr"] = result.stderr
    outcome["unexpected_stderr"] = [
        entry for entry in outcome["stderr"] if not entry["text"].startswith(HARMLESS_STDERR)
    ]
    return outcome


def check_ran_from_the_wheel(outcome: dict, venv: Path) -> None:
    """The notebook ran without error or stderr output, in ``venv``, importing the installed
    wheel and nothing from the repository."""
    assert outcome["error"] is None, outcome["error"] + "\n" + outcome["runner_stderr"][-2000:]
    assert outcome["unexpected_stderr"] == [], "the notebook writes to stderr"
    probe = outcome["probe"]
    assert probe is not None, outcome["runner_stderr"][-2000:]
    assert Path(probe["prefix"]) == venv, probe["executable"]
    site_packages = venv / "lib"
    library = Path(probe["selfattn_lib"])
    assert library.is_relative_to(site_packages) and "site-packages" in library.parts, library
    # The environments live in the repository's folder; nothing else of it may be importable.
    from_repository = [
        entry
        for entry in probe["sys_path"]
        if Path(entry or ".").is_relative_to(ROOT) and not Path(entry).is_relative_to(venv)
    ]
    assert from_repository == [], "nothing of the repository is importable"
    assert not any("editable" in finder.lower() for finder in probe["meta_path"])
