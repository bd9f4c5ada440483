"""Small fixes to the HTML that Jupyter Book 1's extensions produce, so that every page loads
without a console error.

sphinx-thebe 0.3.1 registers its inline configuration script (``const THEBE_JS_URL = …``)
both with Sphinx and with the already-initialised HTML builder, so the script appears twice
on every notebook page and the second ``const`` declaration throws a SyntaxError in the
browser. Dropping exact duplicates from the page's script list removes the error and changes
nothing else.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx


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


def setup(app: Sphinx) -> dict[str, Any]:
    # Run after every other extension has added its page scripts.
    app.connect("html-page-context", drop_duplicate_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
