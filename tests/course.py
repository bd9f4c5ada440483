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
