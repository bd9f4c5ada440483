"""Run one notebook top to bottom in a fresh kernel and write a JSON report of what happened.

Not a test module: tests/notebook_envs.py runs it with the Python of another environment
(``<venv>/bin/python -I notebook_runner.py NOTEBOOK REPORT [--block-torch]``), so it may
import only what that environment has (nbclient, nbformat). ``-I`` keeps this file's folder,
which is inside the repository, off ``sys.path``.

Before the notebook's first cell, a prelude cell (which defines no names in the notebook's
namespace) installs recorders; after its last cell, a probe cell reports facts the tests
check: where Python and ``selfattn_lib`` come from, ``sys.path``, the versions in use, the
colour maps and colours of every figure the notebook showed, the width of each image, the
size of the smallest text drawn on it, the layout it was drawn for (a laptop's or a phone's)
and the words it shows, and every widget it made.
With ``--block-torch`` the prelude makes torch unimportable, as if it were not installed.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

PROBE_MARKER = "COURSE-PROBE:"

PRELUDE = r"""
def _course_prelude(block_torch):
    import sys
    import types

    import ipywidgets
    from matplotlib.backend_bases import FigureCanvasBase
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.cm import ScalarMappable
    from matplotlib.collections import Collection
    from matplotlib.colors import to_hex, to_rgba_array
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.text import Text

    if block_torch:
        # importlib.util.find_spec("torch") returns None and `import torch` fails, exactly
        # as when torch is not installed.
        sys.modules["torch"] = None
    record = types.ModuleType("_course_probe")
    record.cmaps, record.colours, record.widgets, record.errors = set(), set(), [], []
    # Per image the notebook showed: its width in pixels and the text drawn on it, each
    # piece's height in pixels of the image (points × dpi / 72, at the dpi it was drawn at).
    record.figures, record.drawn = [], None
    sys.modules["_course_probe"] = record

    def colours_of(artist):
        if isinstance(artist, ScalarMappable) and artist.get_array() is not None:
            record.cmaps.add(artist.get_cmap().name)
            return []
        if isinstance(artist, Line2D):
            found = []
            if artist.get_linestyle() not in ("None", "", " ") and artist.get_linewidth() > 0:
                found.append(artist.get_color())
            if artist.get_marker() not in (None, "None", "", " "):
                found += [artist.get_markerfacecolor(), artist.get_markeredgecolor()]
            return found
        if isinstance(artist, Patch):
            found = [artist.get_facecolor()] if artist.get_fill() else []
            return found + ([artist.get_edgecolor()] if artist.get_linewidth() > 0 else [])
        if isinstance(artist, Collection):
            return [*artist.get_facecolors(), *artist.get_edgecolors()]
        if isinstance(artist, Text) and artist.get_text().strip():
            return [artist.get_color()]
        return []

    def inspect_figure(figure):
        for artist in figure.findobj(lambda artist: artist.get_visible()):
            for colour in colours_of(artist):
                for rgba in to_rgba_array(colour):
                    if rgba[3] > 0:
                        record.colours.add((to_hex(rgba[:3]), type(artist).__name__))

    draw_text = RendererAgg.draw_text

    def recording_draw_text(self, gc, x, y, text, prop, *args, **kwargs):
        if record.drawn is not None and text.strip():
            record.drawn.append((prop.get_size_in_points() * self.dpi / 72, text))
        return draw_text(self, gc, x, y, text, prop, *args, **kwargs)

    RendererAgg.draw_text = recording_draw_text

    def png_width(target):
        data = target.getvalue() if hasattr(target, "getvalue") else b""
        if data[:8] != b"\x89PNG\r\n\x1a\n":
            return None
        return int.from_bytes(data[16:20], "big")

    print_figure = FigureCanvasBase.print_figure

    def recording_print_figure(self, *args, **kwargs):
        try:
            inspect_figure(self.figure)
        except Exception as error:  # the recorder must never break a notebook
            record.errors.append(repr(error))
        record.drawn = []
        try:
            result = print_figure(self, *args, **kwargs)
        finally:
            drawn, record.drawn = record.drawn, None
        width = png_width(args[0]) if args else None
        if width is not None and drawn:
            size, text = min(drawn)
            title = self.figure.get_suptitle() or next(
                (ax.get_title() for ax in self.figure.axes if ax.get_title()), ""
            )
            # The words of its labels, titles and legends (not its numbers): a figure's phone
            # rendering (selfattn_lib.plotting.for_the_page) must keep every one of them.
            words = {word for _, line in drawn for word in line.split() if word[0].isalpha()}
            record.figures.append(
                {
                    "width": width,
                    "smallest_text": size,
                    "text": text,
                    "title": title,
                    "id": id(self.figure),
                    "layout": getattr(self.figure, "course_layout", "laptop"),
                    "phone_of": getattr(self.figure, "course_phone_of", None),
                    "has_phone": hasattr(self.figure, "course_phone"),
                    "words": sorted(words),
                }
            )
        return result

    FigureCanvasBase.print_figure = recording_print_figure

    def widget_made(widget):
        record.widgets.append(
            {
                "class": type(widget).__name__,
                "module": type(widget).__module__,
                "control": isinstance(widget, ipywidgets.ValueWidget),
                "description": getattr(widget, "description", None),
                "disabled": getattr(widget, "disabled", False),
            }
        )

    ipywidgets.Widget.on_widget_constructed(widget_made)


_course_prelude(BLOCK_TORCH)
del _course_prelude
"""

PROBE = r"""
def _course_probe():
    import importlib.metadata
    import json
    import sys

    import selfattn_lib

    record = sys.modules["_course_probe"]
    versions = {}
    for name in ("numpy", "matplotlib", "ipywidgets", "ipykernel", "IPython", "torch"):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    facts = {
        "executable": sys.executable,
        "prefix": sys.prefix,
        "selfattn_lib": selfattn_lib.__file__,
        "sys_path": sys.path,
        "meta_path": [repr(finder) for finder in sys.meta_path],
        "versions": versions,
        "torch_imported": sys.modules.get("torch") is not None,
        "cmaps": sorted(record.cmaps),
        "colours": sorted(record.colours),
        "widgets": record.widgets,
        "figures": record.figures,
        "recorder_errors": record.errors,
    }
    print("COURSE-PROBE:" + json.dumps(facts))


_course_probe()
del _course_probe
"""


def main(notebook_path: str, report_path: str, block_torch: bool) -> None:
    nb = nbformat.read(notebook_path, as_version=4)
    original_cells = len(nb.cells)
    prelude = PRELUDE.replace("BLOCK_TORCH", repr(block_torch))
    nb.cells.insert(0, nbformat.v4.new_code_cell(prelude))
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="course",
        allow_errors=False,
        record_timing=False,
        resources={"metadata": {"path": str(Path(notebook_path).parent)}},
    )
    report: dict = {"error": None, "stderr": [], "probe": None}
    start = time.perf_counter()
    try:
        client.execute()
    except CellExecutionError as error:
        report["error"] = str(error)[-4000:]
    except Exception as error:  # a dead kernel or a timeout: report it, don't hide it
        report["error"] = f"{type(error).__name__}: {error}"[-4000:]
    report["seconds"] = round(time.perf_counter() - start, 2)
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and output.get("name") == "stderr":
                # Cell numbers of the notebook itself: the prelude is -1 ("before cell 0").
                report["stderr"].append({"cell": index - 1, "text": output["text"]})
            if index == original_cells + 1 and output.get("output_type") == "stream":
                for line in output["text"].splitlines():
                    if line.startswith(PROBE_MARKER):
                        report["probe"] = json.loads(line.removeprefix(PROBE_MARKER))
    with open(report_path, "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], block_torch="--block-torch" in sys.argv[3:])
