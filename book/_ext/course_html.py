"""Small fixes to the HTML that Jupyter Book 1's extensions produce, so that every page loads
without a console error and passes the accessibility audit (axe-core, in tests/test_site.py).

sphinx-thebe 0.3.1 registers its inline configuration script (``const THEBE_JS_URL = …``)
both with Sphinx and with the already-initialised HTML builder, so the script appears twice
on every notebook page and the second ``const`` declaration throws a SyntaxError in the
browser. Dropping exact duplicates from the page's script list removes the error and changes
nothing else.

A figure opens at full size when clicked (its image is wrapped in a link to itself). A figure
with a phone rendering (``selfattn_lib.plotting.for_the_page``: the notebook's output holds
it beside the ``image/png``, under ``PHONE_MIME``) is shown as a ``<picture>``: the phone
rendering on a narrow screen, the laptop's elsewhere. A
solution's title opens the solution when clicked: its link back to the exercise becomes
plain text (see ``SOLUTION_TITLE_LINK``).

A "Going deeper" part, a section whose heading starts with "Going deeper:", is folded: its
heading stays (in its place and in the page's contents) and everything under it is wrapped
in a closed ``<details>`` element that says it is optional. tools/stats.py counts the same
parts as folded and tools/plain_edition.py collapses their headings in Jupyter.

An exercise may say what it is worth, ``:points: 2`` beside its ``:label:`` (read by the grader,
tools/grade.py, and the instructors' page). sphinx-exercise knows no such option, so the
``exercise`` directive is extended to accept it and to show it in the title's parenthesis:
"Title (medium)" becomes "Title (medium, 2 points)", as in the plain edition.

Four accessibility fixes (axe rules in brackets), each the smallest change that works:

- docutils 0.21 marks each bibliography entry ``role="doc-biblioentry"``, a role ARIA 1.3
  deprecates and no longer allows on a ``div``, so the entries' ``role="list"`` container
  has no list items [aria-required-children, critical]. The entries become list items.
- pydata-sphinx-theme 0.17's search button is labelled "Search" while it shows
  "Search Ctrl+K", so its name does not contain its visible text
  [label-content-name-mismatch, serious]. Without the ``aria-label`` the name is the text.
- Its colour-mode button's icons carry titles ("Light", "Dark", …) that are not part of the
  button's name "Color mode" [label-content-name-mismatch, serious]. The icons become
  decorative (Font Awesome hides an icon without a title from screen readers); the button
  keeps its name and tooltip.
- The theme's logo link at the top of the sidebar, the only content outside every landmark
  [region, moderate], is wrapped in a ``nav`` landmark named "Course home".

The theme fixes edit the theme's own templates as they are loaded, and fail the build if a
theme update changes the text they expect, rather than silently doing nothing.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

from selfattn_lib.plotting.base import PHONE_MIME


def drop_duplicate_scripts(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    unique = []
    for script in context.get("script_files", []):
        # The copies differ only in a filename of None versus "" (inline scripts).
        attributes = getattr(script, "attributes", {})
        key = (getattr(script, "filename", script) or "", tuple(sorted(attributes.items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


# sphinx-exercise titles a solution "Solution to <a href="#exercise">Exercise 2.1 (…)</a>". The
# link fills most of the title that sphinx-togglebutton makes clickable, so a click on it
# jumps back to the exercise instead of opening the solution (on a phone only the chevron
# is left). The link becomes plain text; the exercise is just above its solution anyway.
SOLUTION_TITLE_LINK = re.compile(
    r'(<div class="solution[^"]*"[^>]*>\s*<p class="admonition-title">[^<]*)'
    r'<a class="reference internal" href="[^"]*">(.*?)</a>'
)


def solution_titles_open_the_solution(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    if "body" in context:
        context["body"] = SOLUTION_TITLE_LINK.sub(r"\1<span>\2</span>", context["body"])


# A figure is shown at most as wide as the column; a click opens its image at full size.
FIGURE_IMAGE = re.compile(r'(<figure [^>]*>\s*)(<img [^>]*\bsrc="([^"]+)"[^>]*>)')


def figures_open_at_full_size(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    if "body" in context:
        context["body"] = FIGURE_IMAGE.sub(
            r'\1<a class="figure-full-size" href="\3" title="Open the figure at full size">'
            r"\2</a>",
            context["body"],
        )


# Below this window width a phone rendering is shown. A laptop's figure (at most 727 px wide,
# its text 11 px tall) keeps its text at 9 px or more in a column of 595 px or more, which a
# window of about 650 px has (the column is the window less about 52 px of margins).
PHONE_MEDIA = "(max-width: 650px)"


def phone_renderings(notebook: Path, images: Path) -> dict[str, str]:
    """Write each phone rendering of ``notebook``'s figures into ``images`` (the site's
    ``_images``) and return, for the file name of each laptop image (myst-nb names an image
    by the SHA-256 of its bytes), the file name of its phone rendering."""
    found = {}
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "image/png" in data and PHONE_MIME in data:
                laptop = base64.b64decode("".join(data["image/png"]))
                phone = base64.b64decode("".join(data[PHONE_MIME]))
                name = f"{hashlib.sha256(phone).hexdigest()}.png"
                images.mkdir(parents=True, exist_ok=True)
                (images / name).write_bytes(phone)
                found[f"{hashlib.sha256(laptop).hexdigest()}.png"] = name
    return found


def without_phone_renderings(app: Sphinx, docname: str, source: list[str]) -> None:
    """Hide a notebook's phone renderings from myst-nb, which would warn that it knows no such
    MIME type: :func:`figures_with_phone_renderings` reads them from the notebook itself."""
    if PHONE_MIME not in source[0] or not str(app.env.doc2path(docname)).endswith(".ipynb"):
        return
    notebook = json.loads(source[0])
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            output.get("data", {}).pop(PHONE_MIME, None)
    source[0] = json.dumps(notebook)


IMAGE = re.compile(r'<img [^>]*\bsrc="(?P<folder>[^"]*?)(?P<name>[0-9a-f]{64}\.png)"[^>]*>')


def figures_with_phone_renderings(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    source = Path(app.env.doc2path(pagename))
    if "body" not in context or source.suffix != ".ipynb":
        return
    phone = phone_renderings(source, Path(app.outdir) / "_images")

    def picture(image: re.Match) -> str:
        name = phone.get(image["name"])
        if name is None:
            return image[0]
        return (
            f'<picture><source media="{PHONE_MEDIA}" srcset="{image["folder"]}{name}">'
            f"{image[0]}</picture>"
        )

    context["body"] = IMAGE.sub(picture, context["body"])


def bibliography_entries_as_list_items(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    if "body" in context:
        context["body"] = context["body"].replace('role="doc-biblioentry"', 'role="listitem"')


# Theme template -> (pattern, replacement, how many times the pattern must occur).
THEME_TEMPLATE_FIXES: dict[str, tuple[str, str, int]] = {
    "search-button-field.html": (re.escape(" aria-label=\"{{ _('Search') }}\""), "", 1),
    "theme-switcher.html": (r'(<i class="theme-switch[^>]*?) title="[^"]*"', r"\1", 3),
    "navbar-logo.html": (
        r'(?s)(<a class="navbar-brand logo".*</a>)',
        r'<nav aria-label="Course home">\1</nav>',
        1,
    ),
}


def fix_theme_templates(app: Sphinx) -> None:
    templates = getattr(app.builder, "templates", None)
    if templates is None:  # not an HTML builder
        return
    get_source = templates.get_source

    def fixed_source(environment: Any, template: str) -> tuple[str, str | None, Any]:
        source, filename, uptodate = get_source(environment, template)
        if template in THEME_TEMPLATE_FIXES:
            pattern, replacement, expected = THEME_TEMPLATE_FIXES[template]
            source, count = re.subn(pattern, replacement, source)
            if count != expected:
                raise ExtensionError(
                    f"course_html: the theme's {template} changed; revisit its fix "
                    f"({count} matches of {pattern!r}, expected {expected})"
                )
        return source, filename, uptodate

    templates.get_source = fixed_source


GOING_DEEPER = "Going deeper:"
GOING_DEEPER_SUMMARY = (
    '<details class="going-deeper"><summary>Optional: show this part. '
    "Skipping it loses no thread of the chapter.</summary>"
)


def fold_going_deeper_parts(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    for section in doctree.findall(nodes.section):
        title = section.children[0] if section.children else None
        if isinstance(title, nodes.title) and title.astext().startswith(GOING_DEEPER):
            section["classes"].append("going-deeper")
            section.insert(1, nodes.raw("", GOING_DEEPER_SUMMARY, format="html"))
            section.append(nodes.raw("", "</details>", format="html"))


def points_in_title(title: str, points: int) -> str:
    """``"Title (medium)"`` and 2 → ``"Title (medium, 2 points)"``; a title without a
    parenthesis gets one.

    >>> points_in_title("Softmax by hand (easy)", 1)
    'Softmax by hand (easy, 1 point)'
    """
    worth = f"{points} point{'s' if points != 1 else ''}"
    if title.endswith(")"):
        return f"{title[:-1]}, {worth})"
    return f"{title} ({worth})"


def exercise_with_points(app: Sphinx) -> None:
    """Let sphinx-exercise's ``exercise`` directive take a ``:points:`` option and show it."""
    from docutils.parsers.rst import directives
    from sphinx_exercise.directive import ExerciseDirective

    class Exercise(ExerciseDirective):
        option_spec = {**ExerciseDirective.option_spec, "points": directives.nonnegative_int}

        def run(self) -> list[Any]:
            if "points" in self.options and self.arguments:
                self.arguments[0] = points_in_title(self.arguments[0], self.options["points"])
            return super().run()

    app.add_directive("exercise", Exercise, override=True)


def setup(app: Sphinx) -> dict[str, Any]:
    app.setup_extension("sphinx_exercise")
    exercise_with_points(app)
    # Run after every other extension has added its page scripts.
    app.connect("html-page-context", drop_duplicate_scripts, priority=900)
    app.connect("html-page-context", bibliography_entries_as_list_items, priority=900)
    app.connect("html-page-context", solution_titles_open_the_solution, priority=900)
    app.connect("html-page-context", figures_open_at_full_size, priority=900)
    app.connect("html-page-context", figures_with_phone_renderings, priority=901)
    app.connect("builder-inited", fix_theme_templates)
    app.connect("source-read", without_phone_renderings)
    app.connect("doctree-resolved", fold_going_deeper_parts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
