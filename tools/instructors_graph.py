"""How the chapters build on each other: the prerequisite graph that the notebooks' opening
cells state, and the diagram of the instructors' page that draws it (inline SVG)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from html import escape

from tools.instructors_entries import Entry, join_names

# Colours of the parts in the diagram: selfattn_lib.plotting.OKABE_ITO (colour-blind safe).
PART_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9")


def prerequisites(entries: Sequence[Entry]) -> dict[str, list[str]]:
    """Each notebook's published prerequisites (stems), as its opening cell links them."""
    published = {entry.stem for entry in entries}
    return {
        entry.stem: [stem for stem in entry.chapter.prerequisite_stems if stem in published]
        for entry in entries
    }


def ancestors(graph: dict[str, list[str]]) -> dict[str, set[str]]:
    """Every notebook a notebook builds on, directly or not; a cycle is an error."""
    found: dict[str, set[str]] = {}

    def visit(node: str, path: tuple[str, ...]) -> set[str]:
        if node in path:
            raise ValueError(f"the prerequisites form a cycle: {' -> '.join(path + (node,))}")
        if node not in found:
            result: set[str] = set()
            for parent in graph[node]:
                result |= {parent} | visit(parent, path + (node,))
            found[node] = result
        return found[node]

    for node in graph:
        visit(node, ())
    return found


def transitive_reduction(graph: dict[str, list[str]]) -> dict[str, list[str]]:
    """The direct prerequisites that no other prerequisite already implies."""
    above = ancestors(graph)
    return {
        node: [p for p in parents if not any(p in above[q] for q in parents if q != p)]
        for node, parents in graph.items()
    }


# Where each chapter's box stands in the diagram: (column, row), placed by hand. The main line
# runs down column 0; chapter 8 (positions) branches off chapter 4 into column 1 and rejoins
# at chapter 9, and chapter 14 stands beside chapter 13: both build on chapter 12, neither on
# the other (in column 0 under 13, the arrow from 12 would cross 13's box). A new chapter gets
# a place here (a test fails until it has one).
PLACES: dict[str, tuple[int, int]] = {
    "01_dot_product_similarity": (0, 0),
    "02_softmax": (0, 1),
    "03_self_attention_basics": (0, 2),
    "04_queries_keys_values": (0, 3),
    "05_scaling": (0, 4),
    "08_positional_encoding": (1, 4),
    "06_masks": (0, 5),
    "07_multi_head_attention": (0, 6),
    "09_encoder_block": (0, 7),
    "10_decoder_and_cross_attention": (0, 8),
    "11_attention_at_scale": (0, 9),
    "12_gpt_from_the_pieces": (0, 10),
    "13_attention_in_modern_llms": (0, 11),
    "14_what_attention_heads_learn": (1, 11),
    "pitfalls": (0, 12),
}
BOX_WIDTH, LINE, H_GAP, V_GAP = 220, 18, 40, 26
MARGIN, LEGEND_LINE = 16, 20


def box_lines(entry: Entry) -> list[str]:
    heading = f"Chapter {entry.chapter.number}" if entry.chapter.number is not None else "Appendix"
    return [heading, *textwrap.wrap(entry.chapter.title, 28)]


def diagram_svg(entries: Sequence[Entry], places: dict[str, tuple[int, int]] | None = None) -> str:
    """The dependency diagram as inline SVG: boxes link to the chapters, arrows go from a
    prerequisite to the chapter that needs it (direct prerequisites only), each box where
    ``places`` (default :data:`PLACES`) puts it."""
    places = PLACES if places is None else places
    missing = [entry.stem for entry in entries if entry.stem not in places]
    if missing:
        raise ValueError(f"the diagram has no place for {missing}: add them to PLACES")
    cells = [places[entry.stem] for entry in entries]
    if len(set(cells)) != len(cells):
        raise ValueError("two chapters share a place in the diagram")
    graph = transitive_reduction(prerequisites(entries))
    box_height = 16 + LINE * max(len(box_lines(entry)) for entry in entries)  # one for all
    parts = list(dict.fromkeys((e.part_index, e.part) for e in entries))
    top = MARGIN + LEGEND_LINE * len(parts) + V_GAP // 2
    n_columns = 1 + max(column for column, _ in cells)
    n_rows = 1 + max(row for _, row in cells)
    width = 2 * MARGIN + n_columns * BOX_WIDTH + (n_columns - 1) * H_GAP
    height = top + n_rows * (box_height + V_GAP) - V_GAP + MARGIN

    def corner(stem: str) -> tuple[float, float]:
        column, row = places[stem]
        return MARGIN + column * (BOX_WIDTH + H_GAP), top + row * (box_height + V_GAP)

    lines = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chapter-map" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" '
        'aria-labelledby="chapter-map-title chapter-map-desc" '
        'style="max-width: 100%; height: auto; font-family: system-ui, sans-serif">',
        '<title id="chapter-map-title">How the chapters build on each other</title>',
        f'<desc id="chapter-map-desc">{escape(describe_graph(entries, graph))}</desc>',
        '<defs><marker id="chapter-map-arrow" viewBox="0 0 10 10" refX="9" refY="5" '
        'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M 0 0 L 10 5 L 0 10 z" fill="#333"/></marker></defs>',
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
    ]
    for row, (index, caption) in enumerate(parts):  # the legend: one line per part
        colour = PART_COLOURS[index % len(PART_COLOURS)]
        y = MARGIN + LEGEND_LINE * row
        lines.append(
            f'<rect x="{MARGIN}" y="{y}" width="14" height="14" rx="3" fill="{colour}" '
            f'fill-opacity="0.12" stroke="{colour}" stroke-width="2"/>'
        )
        lines.append(
            f'<text x="{MARGIN + 20}" y="{y + 12}" font-size="13" fill="#1a1a1a">'
            f"{escape(caption)}</text>"
        )
    occupied = set(cells)
    for child, parents in graph.items():  # arrows first, so that boxes cover their ends
        for parent in parents:
            column, row = places[parent]
            if any((column, r) in occupied for r in range(row + 1, places[child][1])):
                raise ValueError(f"the arrow {parent} → {child} would cross a box: move one")
            (x, y), (end_x, end_y) = corner(parent), corner(child)
            x, end_x = x + BOX_WIDTH / 2, end_x + BOX_WIDTH / 2
            y, end_y = y + box_height, end_y - 2  # the arrowhead ends at the box's edge
            turn = max(end_y - V_GAP, y)  # down the parent's column, then into the child's
            bend = (turn + end_y) / 2
            lines.append(
                f'<path d="M {x:.0f} {y} L {x:.0f} {turn} C {x:.0f} {bend} {end_x:.0f} {bend} '
                f'{end_x:.0f} {end_y}" fill="none" stroke="#333" stroke-width="1.5" '
                'marker-end="url(#chapter-map-arrow)"/>'
            )
    for entry in entries:
        x, y = corner(entry.stem)
        colour = PART_COLOURS[entry.part_index % len(PART_COLOURS)]
        text = box_lines(entry)
        label = f"{text[0]}: {entry.chapter.title}"
        lines.append(
            f'<a href="{escape(entry.html)}" aria-label="{escape(label)}" '
            'style="text-decoration: none">'
        )
        lines.append(
            f'<rect x="{x}" y="{y}" width="{BOX_WIDTH}" height="{box_height}" rx="6" '
            f'fill="{colour}" fill-opacity="0.12" stroke="{colour}" stroke-width="2"/>'
        )
        for row, line in enumerate(text):
            weight = ' font-weight="bold"' if row == 0 else ""
            lines.append(
                f'<text x="{x + BOX_WIDTH / 2:.0f}" y="{y + 21 + LINE * row}" text-anchor="middle" '
                f'font-size="13" fill="#1a1a1a"{weight}>{escape(line)}</text>'
            )
        lines.append("</a>")
    lines.append("</svg>")
    return "\n".join(lines)


def describe_graph(entries: Sequence[Entry], graph: dict[str, list[str]]) -> str:
    by_stem = {entry.stem: entry for entry in entries}
    sentences = []
    for entry in entries:
        parents = [by_stem[p] for p in graph[entry.stem]]
        name = entry.name[0].upper() + entry.name[1:]
        if parents:
            sentences.append(f"{name} builds on {join_names([p.name for p in parents])}.")
        else:
            sentences.append(f"{name} needs no earlier chapter.")
    return " ".join(sentences)
