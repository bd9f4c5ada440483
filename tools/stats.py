"""How long each chapter is for a learner: ``make stats`` prints, per notebook, its core-path
words, folded words, total words, figures, computed diagrams, exercises, "Common mistake"
boxes and, when the site is built, its length in laptop screens.

- **Words** are the whitespace-separated words of the markdown cells.
- **Core words** leave out the opening cell, the exercise prompts, the solutions and the
  folded parts: what a learner reads on the way through the chapter.
- **Folded words** are the "Going deeper" parts. Such a part starts with a markdown cell
  whose first line is a heading ``### Going deeper: <title>`` and runs to the next heading
  of the same or a higher level. The site folds it (book/_ext/course_html.py) and the plain
  edition collapses its heading (tools/plain_edition.py).
- **Screens** are the page's scroll height divided by the window's height in headless
  Chromium at 1366×768, with the folded parts closed.

Every chapter keeps to the core path's budget (:data:`CORE_WORDS`, :data:`SCREENS`):
tests/test_stats.py checks the words, tests/test_site.py the screens.
"""

from __future__ import annotations

import argparse
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import nbformat

from tools.repository import ROOT, all_notebooks, parse_exercise, read_notebook

#: The core path's budget of a chapter: words and laptop screens.
CORE_WORDS = 3000
SCREENS = 30
#: At most this many "Common mistake" boxes per chapter, each linking to the appendix.
COMMON_MISTAKES = 2
LAPTOP = (1366, 768)

GOING_DEEPER = re.compile(r"^(?P<level>#{2,6}) Going deeper: (?P<title>\S.*)$")
HEADING = re.compile(r"^(?P<level>#{1,6}) \S")
COMMON_MISTAKE = re.compile(r"^(`{3,}|:{3,})\{admonition\} Common mistake: ", re.MULTILINE)
SOLUTION = re.compile(r"^(`{3,}|:{3,})\{solution(?P<part>-start|-end)?\}", re.MULTILINE)
FENCED_CODE = re.compile(r"^(`{3,}|~{3,}).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
DIAGRAM_ALT = "Computed diagram"


def words(text: str) -> int:
    return len(text.split())


def is_diagram(output: dict) -> bool:
    return "".join(output.get("data", {}).get("text/plain", "")).startswith(DIAGRAM_ALT)


def folded_cells(nb: nbformat.NotebookNode) -> set[int]:
    """The indices of the cells of every "Going deeper" part."""
    folded: set[int] = set()
    level = 0  # the level of the open part's heading; 0 when none is open
    for index, cell in enumerate(nb.cells):
        lines = (
            FENCED_CODE.sub("", cell.source).splitlines() if cell.cell_type == "markdown" else []
        )
        first = GOING_DEEPER.match(cell.source.splitlines()[0]) if lines else None
        levels = [len(match["level"]) for line in lines if (match := HEADING.match(line))]
        if level and not first and levels and min(levels) <= level:
            level = 0
        if first:
            level = len(first["level"])
        if level:
            folded.add(index)
    return folded


def going_deeper_headings_start_their_cells(nb: nbformat.NotebookNode) -> list[str]:
    """The "Going deeper" headings that do not start a markdown cell (a mistake: the plain
    edition collapses a heading by its cell, and this module counts a part by its cells)."""
    wrong = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for number, line in enumerate(cell.source.splitlines()):
            if GOING_DEEPER.match(line) and number:
                wrong.append(line)
    return wrong


@dataclass
class Stats:
    notebook: str
    core_words: int
    folded_words: int
    total_words: int
    figures: int
    diagrams: int
    exercises: int
    common_mistakes: int
    screens: float | None = None


def chapter_stats(path: Path) -> Stats:
    nb = read_notebook(path)
    folded = folded_cells(nb)
    core = folded_words = total = 0
    in_solution = False
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        count = words(cell.source)
        total += count
        parts = [match["part"] for match in SOLUTION.finditer(cell.source)]
        opens = "-start" in parts
        if index in folded:
            folded_words += count
        elif not (index == 0 or in_solution or opens or None in parts):
            if not parse_exercise(cell.source):
                core += count
        in_solution = (in_solution or opens) and "-end" not in parts
    outputs = [output for cell in nb.cells if cell.cell_type == "code" for output in cell.outputs]
    return Stats(
        notebook=path.stem,
        core_words=core,
        folded_words=folded_words,
        total_words=total,
        figures=sum("image/png" in output.get("data", {}) for output in outputs),
        diagrams=sum(is_diagram(output) for output in outputs),
        exercises=sum(bool(parse_exercise(cell.source)) for cell in nb.cells),
        common_mistakes=sum(
            len(COMMON_MISTAKE.findall(cell.source))
            for cell in nb.cells
            if cell.cell_type == "markdown"
        ),
    )


# The page's height with every "Going deeper" part closed (as a learner first sees it).
PAGE_HEIGHT = """
document.querySelectorAll("details.going-deeper").forEach(part => part.open = false);
return document.documentElement.scrollHeight;
"""


def screens(driver, url: str) -> float:
    """The length of the page at ``url`` in laptop screens: its scroll height over the
    window's height, in a Selenium ``driver`` whose window is :data:`LAPTOP`."""
    driver.set_window_size(*LAPTOP)
    driver.get(url)
    return screens_of_open_page(driver)


def screens_of_open_page(driver) -> float:
    """:func:`screens` of the page the ``driver`` shows now, in a window of :data:`LAPTOP`."""
    height = driver.execute_script(PAGE_HEIGHT)
    return height / driver.execute_script("return window.innerHeight;")


def _measure_screens(rows: list[Stats], site: Path) -> None:
    chromium, chromedriver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and chromedriver):
        print("chromium and chromedriver are not installed: screens are not measured")
        return
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless", "--no-sandbox", "--disable-gpu",
                     "--disable-background-networking"):  # fmt: skip
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)
    try:
        for row in rows:
            page = site / "notebooks" / f"{row.notebook}.html"
            if page.is_file():
                row.screens = screens(driver, page.resolve().as_uri())
    finally:
        driver.quit()


def table(rows: list[Stats]) -> str:
    header = (
        "notebook", "core", "folded", "total", "figures", "diagrams", "exercises",
        "mistakes", "screens",
    )  # fmt: skip
    lines = [" | ".join(header), " | ".join("---" for _ in header)]
    for row in rows:
        shown = "" if row.screens is None else f"{row.screens:.1f}"
        lines.append(
            f"{row.notebook} | {row.core_words} | {row.folded_words} | {row.total_words} | "
            f"{row.figures} | {row.diagrams} | {row.exercises} | {row.common_mistakes} | {shown}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--site",
        type=Path,
        default=ROOT / "_build" / "html",
        help="the built site, to measure screens (skipped when it is not built)",
    )
    args = parser.parse_args(argv)
    rows = [chapter_stats(path) for path in all_notebooks()]
    if (args.site / "notebooks").is_dir():
        _measure_screens(rows, args.site)
    print(table(rows))


if __name__ == "__main__":
    main()
