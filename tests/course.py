"""Facts about the course that the tests need. They are known in one place,
``tools/repository.py``; this module only names them for the tests (``from course import …``)."""

from tools.repository import (  # noqa: F401 - re-exported for the tests
    ROOT,
    all_notebooks,
    appendix_notebooks,
    chapter_notebooks,
    load_config,
    read_notebook,
    toc_files,
    toc_parts,
)

# The widest a figure is shown in the book's content column on a laptop (1366 x 768, with a
# classic 15-px scroll bar), in CSS pixels: a wider image is shrunk to it (tests/test_site.py
# measures it). And the page's small print (captions, code): the smallest a figure's text
# may be shown at (tests/test_isolated_run.py).
COLUMN_PX = 727
SMALLEST_TEXT_PX = 11
# The same on a phone: the column of a 390 x 844 screen in Chromium's mobile emulation
# (tests/test_site.py measures it), and the smallest a figure's text may be shown there.
PHONE_COLUMN_PX = 338
PHONE_SMALLEST_TEXT_PX = 9
