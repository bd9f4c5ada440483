"""Checkers for the exercises of every chapter (being split into one module per chapter)."""

import importlib as _importlib
import pkgutil as _pkgutil

from selfattn_lib.exercises._legacy import *  # noqa: F403
from selfattn_lib.exercises._legacy import Feedback  # noqa: F401

_CHAPTERS = sorted(info.name for info in _pkgutil.iter_modules(__path__))  # noqa: F405
for _name in _CHAPTERS:
    if _name.startswith("ch"):
        _module = _importlib.import_module(f"{__name__}.{_name}")
        globals().update({n: getattr(_module, n) for n in dir(_module) if n.startswith("check_")})

# Transitional: the old tests reach some private reference helpers by name.
from selfattn_lib.exercises import _legacy  # noqa: E402

globals().update({n: v for n, v in vars(_legacy).items() if n.startswith("_ch")})
