"""Shared fixtures: the course's configuration, and the notice printed when the browser
tests could not run."""

from __future__ import annotations

import pytest
from course import load_config

BROWSER_SKIP_REASON = "Debian's chromium and chromedriver are not installed"


@pytest.fixture(scope="session")
def config() -> dict:
    return load_config()


@pytest.fixture(scope="session")
def repository_url(config: dict) -> str:
    return config["repository"]["url"].rstrip("/")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Make a skipped browser test impossible to overlook."""
    skipped = terminalreporter.stats.get("skipped", [])
    if any(BROWSER_SKIP_REASON in str(report.longrepr) for report in skipped):
        terminalreporter.write_sep("!", "BROWSER TESTS SKIPPED", red=True, bold=True)
        terminalreporter.write_line(
            f"{BROWSER_SKIP_REASON}: the built site was NOT checked in a browser.\n"
            "Install them (Debian: apt-get install chromium chromium-driver) and run again.\n"
            "With CI set, these tests fail instead of skipping.",
            red=True,
        )
