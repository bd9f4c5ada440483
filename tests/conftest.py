"""Shared fixtures: the course's configuration; at the end of a run, the accessibility
audit's table and the notice printed when the browser tests could not run."""

from __future__ import annotations

import time

import pytest
from course import ROOT, load_config
from hypothesis import settings

# No test may depend on how fast the machine is: Hypothesis's default 200 ms deadline per
# example fails a property test on a loaded machine, so there is none, for every test.
settings.register_profile("course", deadline=None)
settings.load_profile("course")

BROWSER_SKIP_REASON = "Debian's chromium and chromedriver are not installed"
STARTED = pytest.StashKey[float]()


@pytest.fixture(scope="session")
def config() -> dict:
    return load_config()


@pytest.fixture(scope="session")
def repository_url(config: dict) -> str:
    return config["repository"]["url"].rstrip("/")


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[STARTED] = time.time()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Show the accessibility audit's table (written by tests/test_site.py in this run), and
    make a skipped browser test impossible to overlook."""
    table = ROOT / "_build" / "accessibility.txt"
    started = terminalreporter.config.stash.get(STARTED, time.time())
    if table.is_file() and table.stat().st_mtime >= started:
        terminalreporter.write_sep("-", "accessibility audit")
        terminalreporter.write(table.read_text(encoding="utf-8"))
    skipped = terminalreporter.stats.get("skipped", [])
    if any(BROWSER_SKIP_REASON in str(report.longrepr) for report in skipped):
        terminalreporter.write_sep("!", "BROWSER TESTS SKIPPED", red=True, bold=True)
        terminalreporter.write_line(
            f"{BROWSER_SKIP_REASON}: the built site was NOT checked in a browser.\n"
            "Install them (Debian: apt-get install chromium chromium-driver) and run again.\n"
            "With CI set, these tests fail instead of skipping.",
            red=True,
        )
