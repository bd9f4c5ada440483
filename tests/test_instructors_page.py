"""The instructors' page (book/instructors.md, made by tools/instructors_page.py): committed
exactly as the generator writes it from the notebooks, listing every published notebook, with
a dependency diagram that draws the prerequisites the notebooks state."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from course import toc_files

from tools import instructors_page as page
from tools.repository import Chapter, launch_links, load_config, published_notebooks, read_chapter

SVG = "{http://www.w3.org/2000/svg}"


def by_name(path: Path) -> str:
    return path.stem


@pytest.fixture(scope="module")
def committed() -> str:
    return page.PAGE.read_text(encoding="utf-8")


def test_the_committed_page_is_what_the_generator_writes(committed):
    assert committed == page.render(), "book/instructors.md is out of date: run `make instructors`"
    assert page.main(["--check"]) == 0


def test_the_page_is_published_before_the_reference_part():
    files = toc_files()
    assert "book/instructors" in files
    assert files.index("book/instructors") < files.index("book/notation")


@pytest.mark.parametrize("path", published_notebooks(), ids=by_name)
def test_every_published_notebook_has_its_section_links_and_box(path, committed):
    chapter = read_chapter(path)
    links = launch_links(path, load_config())
    assert f"[Open in Colab]({links['colab']})" in committed
    assert f"[Launch Binder]({links['binder']})" in committed
    assert f"{{doc}}`Read it on this site <../notebooks/{path.stem}>`" in committed
    assert f'href="../notebooks/{path.stem}.html"' in committed, "a box in the diagram"
    for exercise in chapter.exercises:
        assert f"<{exercise.label}>`" in committed or f"{{ref}}`{exercise.label}`" in committed
    for objective in chapter.objectives:
        assert page.relink(objective) in committed


# --- The pieces ----------------------------------------------------------------------------


def entry(number: int, needs: tuple[int, ...] = (), part: int = 0, minutes=None) -> page.Entry:
    stem = f"{number:02d}_topic"
    links = ", ".join(f"[chapter {n}]({n:02d}_topic.ipynb)" for n in needs)
    cells, exercises = minutes or (30, 20)
    chapter = Chapter(
        path=Path(f"notebooks/{stem}.ipynb"),
        title=f"Topic number {number}",
        number=number,
        prerequisites=links or "None.",
        estimated_time=f"About {cells + exercises} minutes: {cells} to read and run the cells, "
        f"{exercises} for the exercises.",
    )
    return page.Entry(chapter, f"notebooks/{stem}", f"Part {part}", part, numbered=True)


def test_transitive_reduction_keeps_only_the_edges_no_longer_path_implies():
    graph = {"a": [], "b": ["a"], "c": ["a", "b"], "d": ["b"], "e": ["a", "d", "c"]}
    assert page.transitive_reduction(graph) == {
        "a": [],
        "b": ["a"],
        "c": ["b"],
        "d": ["b"],
        "e": ["d", "c"],
    }


def test_a_cycle_of_prerequisites_is_an_error():
    with pytest.raises(ValueError, match="cycle"):
        page.ancestors({"a": ["b"], "b": ["c"], "c": ["a"]})


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
    svg = page.diagram_svg(entries, places)
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
        page.diagram_svg(entries, {"01_topic": (0, 0), "02_topic": (0, 1)})
    with pytest.raises(ValueError, match="share a place"):
        page.diagram_svg(entries, {"01_topic": (0, 0), "02_topic": (0, 1), "03_topic": (0, 1)})
    with pytest.raises(ValueError, match="cross a box"):  # 1 → 3 would run through 2
        page.diagram_svg(entries, {"01_topic": (0, 0), "02_topic": (0, 1), "03_topic": (0, 2)})


def test_the_courses_diagram_draws_exactly_the_notebooks_prerequisites():
    entries = page.load_entries()
    graph = page.transitive_reduction(page.prerequisites(entries))
    by_stem = {entry.stem: entry.html for entry in entries}
    expected = {(by_stem[parent], by_stem[child]) for child, ps in graph.items() for parent in ps}
    assert expected and arrow_ends(page.diagram_svg(entries)) == expected
    assert set(page.PLACES) == set(by_stem), "every published notebook has a place, no other"


def test_the_diagram_is_described_in_words():
    entries = [entry(1), entry(2, (1,)), entry(3, (1, 2))]
    svg = page.diagram_svg(entries, {f"0{n}_topic": (0, n) for n in (1, 2, 3)})
    description = ET.fromstring(svg).find(f"{SVG}desc").text
    assert description == (
        "Chapter 1 needs no earlier chapter. Chapter 2 builds on chapter 1. "
        "Chapter 3 builds on chapter 2."
    )


def test_sessions_of_a_module_fit_their_minutes_and_keep_reading_order():
    entries = [entry(n, (n - 1,) if n > 1 else (), minutes=(m, 20)) for n, m in
               [(1, 40), (2, 45), (3, 30), (4, 80), (5, 20)]]  # fmt: skip
    text = page.modules(entries)
    sessions = re.findall(r"session \d: chapters? ([\d, and]+) \((\d+) minutes in class", text)
    assert [(names, int(minutes)) for names, minutes in sessions] == [
        ("1 and 2", 85),
        ("3", 30),
        ("4", 80),
        ("5", 20),
    ]
    assert "5. Week 3, session 1: questions" in text


@pytest.mark.parametrize(
    "text, expected", [("30", (30, 30)), ("30–40", (30, 40)), ("5–10", (5, 10))]
)
def test_minutes_are_read_as_written(text, expected):
    assert page.parse_minutes(text) == expected
    assert page.format_minutes(expected) == text


@pytest.mark.parametrize("minutes, hours", [(30, "½"), (60, "1"), (195, "3½"), (355, "6")])
def test_hours_are_rounded_to_half_hours(minutes, hours):
    assert page.format_hours(minutes) == hours


def test_links_of_the_notebooks_are_rewritten_for_the_book_folder():
    text = "[Chapter 1](01_a.ipynb), [notation](../book/notation.md), [web](https://x.org/a.md)"
    assert page.relink(text) == (
        "[Chapter 1](../notebooks/01_a.ipynb), [notation](notation.md), [web](https://x.org/a.md)"
    )


def test_doc_roles_of_the_notebooks_are_rewritten_too():
    text = "{doc}`01_a`, {doc}`chapter 2 <02_b>`, {doc}`../book/glossary`, {doc}`/abs`"
    assert page.relink(text) == (
        "{doc}`../notebooks/01_a`, {doc}`chapter 2 <../notebooks/02_b>`, {doc}`glossary`, "
        "{doc}`/abs`"
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


def test_code_spans_survive_backticks():
    assert page.inline_code("plain") == "`plain`"
    assert page.inline_code("use `x` here") == "`` use `x` here ``"


# --- A whole term and its graded labs ------------------------------------------------------


def test_the_term_takes_every_chapter_once_a_week_in_reading_order(committed):
    entries = page.load_entries()
    numbered = [entry for entry in entries if entry.chapter.number is not None]
    weeks, labs = page.term_plan(entries)
    assert list(weeks) == [entry.stem for entry in numbered]
    assert list(weeks.values()) == list(range(1, len(numbered) + 1))
    assert max(weeks.values()) < page.TERM_WEEKS, "a last week for the appendix and a review"
    plan = page.term(entries)
    assert re.findall(r"^(\d+)\. Week (\d+):", plan, re.M) == [
        (str(week), str(week)) for week in range(1, page.TERM_WEEKS + 1)
    ]
    for entry in numbered:
        assert f"chapter {entry.chapter.number}, {{doc}}`{entry.doc}`." in plan
    assert f"### A whole term ({page.TERM_WEEKS} weeks)" in committed and plan in committed


def test_each_lab_is_handed_out_after_its_chapters_and_due_before_the_next(committed):
    weeks, labs = page.term_plan(page.load_entries())
    assert len(labs) == 5, "the template's heading says five"
    assert "### Five graded labs" in committed
    for lab, after in zip(labs, labs[1:] + [None], strict=True):
        assert lab.handed_out == max(weeks[entry.stem] for entry in lab.chapters)
        assert lab.due == lab.handed_out + 1 <= page.TERM_WEEKS
        assert after is None or lab.due <= after.handed_out


def test_the_labs_grade_every_checked_exercise_once_with_its_points(committed):
    """Each lab's table lists the exercises of its chapters that have a checker, with their
    :points: from the notebooks, and its total row adds them up; optional ones are bonus."""
    graded = {
        exercise.label: exercise
        for path in published_notebooks()
        for exercise in read_chapter(path).exercises
        if exercise.checker
    }
    text = page.labs(page.load_entries())
    assert text in committed
    listed = []
    blocks = re.split(r"^(?=\*\*Lab \d+ — )", text, flags=re.M)[1:]
    assert len(blocks) == len(page.LABS)
    for block in blocks:
        row = r"^\| \d+ \| \{ref\}`(?:[^`<]*<)?([\w-]+)>?` \| [^|]+ \| (\d+)( \(bonus\))? \|$"
        rows = re.findall(row, block, re.M)
        points = [(graded[label], int(worth), bool(bonus)) for label, worth, bonus in rows]
        for exercise, worth, bonus in points:
            assert (worth, bonus) == (exercise.points, exercise.optional), exercise.label
        required = sum(worth for _, worth, bonus in points if not bonus)
        extra = sum(worth for _, worth, bonus in points if bonus)
        total = f"| | **total** | | **{required}**" + (f" (+{extra} bonus)" if extra else "")
        assert f"{total} |" in block
        assert f"): {required} points" in block
        listed += [exercise.label for exercise, _, _ in points]
    assert sorted(listed) == sorted(graded) and len(set(listed)) == len(listed)


def test_labs_must_hold_every_numbered_chapter_in_reading_order(monkeypatch):
    entries = [entry(1), entry(2, (1,)), entry(3, (2,))]
    monkeypatch.setattr(page, "LABS", (("01_topic",), ("02_topic", "03_topic")))
    assert [lab.due for lab in page.term_plan(entries)[1]] == [2, 4]
    for labs in [(("01_topic",), ("03_topic", "02_topic")), (("01_topic", "02_topic"),)]:
        monkeypatch.setattr(page, "LABS", labs)
        with pytest.raises(ValueError, match="every numbered chapter once"):
            page.term_plan(entries)
    monkeypatch.setattr(page, "TERM_WEEKS", 3)
    with pytest.raises(ValueError, match="leave no week"):
        page.term_plan(entries)
