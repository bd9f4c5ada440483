"""The prerequisite graph of the instructors' page (tools/instructors_graph.py): the notebooks
linked in each opening cell, reduced to the direct prerequisites, and the diagram that draws
exactly those, one box per chapter, as well-formed SVG described in words."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from made_up_entries import entry

from tools.instructors_entries import load_entries
from tools.instructors_graph import (
    PLACES,
    ancestors,
    diagram_svg,
    prerequisites,
    transitive_reduction,
)
from tools.repository import Chapter

SVG = "{http://www.w3.org/2000/svg}"


def test_transitive_reduction_keeps_only_the_edges_no_longer_path_implies():
    graph = {"a": [], "b": ["a"], "c": ["a", "b"], "d": ["b"], "e": ["a", "d", "c"]}
    assert transitive_reduction(graph) == {
        "a": [],
        "b": ["a"],
        "c": ["b"],
        "d": ["b"],
        "e": ["d", "c"],
    }


def test_a_cycle_of_prerequisites_is_an_error():
    with pytest.raises(ValueError, match="cycle"):
        ancestors({"a": ["b"], "b": ["c"], "c": ["a"]})


def boxes_and_arrows(svg: str) -> tuple[dict[str, tuple[float, float, float, float]], list]:
    root = ET.fromstring(svg)  # well-formed XML
    boxes = {}
    for link in root.iter(f"{SVG}a"):
        rect = link.find(f"{SVG}rect")
        boxes[link.get("href")] = tuple(
            float(rect.get(name)) for name in ("x", "y", "width", "height")
        )
    arrows = [path for path in root.iter(f"{SVG}path") if path.get("marker-end")]
    return boxes, arrows


def arrow_ends(svg: str) -> set[tuple[str, str]]:
    """(from, to) for every arrow, by the boxes its start and end touch."""
    boxes, arrows = boxes_and_arrows(svg)

    def box_at(x: float, y: float) -> str:
        (href,) = [h for h, (bx, by, bw, bh) in boxes.items() if bx <= x <= bx + bw and
                   by - 3 <= y <= by + bh + 3]  # fmt: skip
        return href

    ends = set()
    for arrow in arrows:
        numbers = [float(n) for n in re.findall(r"-?[\d.]+", arrow.get("d"))]
        ends.add((box_at(*numbers[:2]), box_at(*numbers[-2:])))
    return ends


def test_the_diagram_draws_one_box_per_chapter_and_one_arrow_per_direct_prerequisite():
    # 1 → 2 → 3 → 4 (4 also names 2, which 3 implies); 5 needs 2 and sits beside 3.
    entries = [entry(1), entry(2, (1,)), entry(3, (2,)), entry(4, (2, 3)), entry(5, (2,))]
    places = {"01_topic": (0, 0), "02_topic": (0, 1), "03_topic": (0, 2), "04_topic": (0, 3)}
    places["05_topic"] = (1, 2)
    svg = diagram_svg(entries, places)
    boxes, arrows = boxes_and_arrows(svg)
    assert sorted(boxes) == [f"../notebooks/{n:02d}_topic.html" for n in range(1, 6)]
    href = "../notebooks/{:02d}_topic.html".format
    assert arrow_ends(svg) == {(href(1), href(2)), (href(2), href(3)), (href(3), href(4)),
                               (href(2), href(5))}  # fmt: skip
    placed = list(boxes.values())
    for i, (x, y, w, h) in enumerate(placed):
        for x2, y2, w2, h2 in placed[i + 1 :]:
            assert x + w <= x2 or x2 + w2 <= x or y + h <= y2 or y2 + h2 <= y, "boxes overlap"


def test_the_diagram_refuses_a_layout_it_cannot_draw():
    entries = [entry(1), entry(2, (1,)), entry(3, (1,))]
    with pytest.raises(ValueError, match="no place for"):
        diagram_svg(entries, {"01_topic": (0, 0), "02_topic": (0, 1)})
    with pytest.raises(ValueError, match="share a place"):
        diagram_svg(entries, {"01_topic": (0, 0), "02_topic": (0, 1), "03_topic": (0, 1)})
    with pytest.raises(ValueError, match="cross a box"):  # 1 → 3 would run through 2
        diagram_svg(entries, {"01_topic": (0, 0), "02_topic": (0, 1), "03_topic": (0, 2)})


def test_the_courses_diagram_draws_exactly_the_notebooks_prerequisites():
    entries = load_entries()
    graph = transitive_reduction(prerequisites(entries))
    by_stem = {entry.stem: entry.html for entry in entries}
    expected = {(by_stem[parent], by_stem[child]) for child, ps in graph.items() for parent in ps}
    assert expected and arrow_ends(diagram_svg(entries)) == expected
    assert set(PLACES) == set(by_stem), "every published notebook has a place, no other"


def test_the_diagram_is_described_in_words():
    entries = [entry(1), entry(2, (1,)), entry(3, (1, 2))]
    svg = diagram_svg(entries, {f"0{n}_topic": (0, n) for n in (1, 2, 3)})
    description = ET.fromstring(svg).find(f"{SVG}desc").text
    assert description == (
        "Chapter 1 needs no earlier chapter. Chapter 2 builds on chapter 1. "
        "Chapter 3 builds on chapter 2."
    )


def test_prerequisites_are_the_notebooks_linked_in_the_order_named():
    chapter = Chapter(
        path=Path("notebooks/09_x.ipynb"),
        title="X",
        number=9,
        prerequisites="{doc}`chapter 4 <04_d>`, [chapter 2](02_b.ipynb), {doc}`07_g` and "
        "[chapter 2 again](../notebooks/02_b.ipynb); the {doc}`../book/glossary`.",
    )
    assert chapter.prerequisite_stems == ["04_d", "02_b", "07_g"]
