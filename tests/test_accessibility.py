"""Accessibility of the course, where each part of it is tested:

- every page of the built site: no serious or critical axe-core violation, figures with alt
  text and captions, rendering with the network off (tests/test_site.py);
- figures use colour-blind-safe colour maps and colours, and widgets are made of labelled,
  keyboard-operable ipywidgets controls: checked on every figure and widget each notebook
  actually makes, while it runs (tests/test_isolated_run.py);
- headings in order: chapter notebooks (tests/test_notebooks.py) and, here, the Markdown
  pages of the book: one title, then no level skipped, so a screen reader's outline of
  the page is complete.
"""

from __future__ import annotations

import re

import pytest
from course import ROOT, toc_files

MARKDOWN_PAGES = [file for file in toc_files() if (ROOT / f"{file}.md").is_file()]
FENCE = re.compile(r"^\s*(`{3,}|~{3,}|:{3,})")


def markdown_headings(text: str) -> list[tuple[int, str]]:
    """``(level, title)`` of every ATX heading outside code fences, directives and front
    matter."""
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":  # front matter
        end = lines.index("---", 1) if "---" in lines[1:] else 0
        lines = lines[end + 1 :]
    found, fence = [], None
    for line in lines:
        match = FENCE.match(line)
        if match:
            marker = match.group(1)
            if fence is None:
                fence = marker
            elif (
                marker[0] == fence[0]
                and len(marker) >= len(fence)
                and not line.strip()[len(marker) :].strip()
            ):
                fence = None
            continue
        heading = re.match(r"^(#{1,6})\s+(.+?)\s*#*\s*$", line)
        if heading and fence is None:
            found.append((len(heading.group(1)), heading.group(2)))
    return found


def test_heading_parser_ignores_code_and_directives():
    text = "---\ntitle: x\n---\n# A\n```python\n# not a heading\n```\n:::{note}\n## B\n:::\n## C"
    assert markdown_headings(text) == [(1, "A"), (2, "C")]


@pytest.mark.parametrize("page", MARKDOWN_PAGES)
def test_markdown_page_has_one_title_and_headings_in_order(page):
    headings = markdown_headings((ROOT / f"{page}.md").read_text(encoding="utf-8"))
    assert headings, "a page has a title"
    levels = [level for level, _ in headings]
    assert levels[0] == 1 and levels.count(1) == 1, f"one '# Title', first: {headings}"
    skipped = [
        (title, previous, level)
        for (previous, _), (level, title) in zip(headings, headings[1:], strict=False)
        if level > previous + 1
    ]
    assert skipped == [], "a heading may go at most one level deeper than the one before"
