"""The environment of every pytest run, whichever files it is given (`pytest notebooks/X.ipynb`
loads this file, not tests/conftest.py): the notebook kernels that nbval and the other
notebook runs start inherit it."""

import os
import re
from pathlib import Path

# The settings of the committed outputs (tests/committed_outputs.mk says why); `make test`
# has already exported them.
for name, value in re.findall(
    r"^export (\w+) = (\S+)$",
    (Path(__file__).parent / "tests" / "committed_outputs.mk").read_text(encoding="utf-8"),
    re.MULTILINE,
):
    os.environ.setdefault(name, value)

# One thread for PyTorch (and NumPy's BLAS) in every test process and every notebook kernel
# they start: pytest-xdist runs two workers on CI's 2 cores, and a thread that waits for a
# busy core stalls every small operation. test_language_model's 120 training steps of a tiny
# GPT took 118 s in a loaded `make test` with two threads, 1.3 s alone. The committed outputs
# do not depend on it: strict nbval of every notebook passes with one thread and with two.
os.environ.setdefault("OMP_NUM_THREADS", "1")
