"""Package-level checks: every module imports without torch and its docstring examples run;
the NumPy modules' public functions document their shapes with an example and type hints."""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import inspect
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.filterwarnings("error")

NUMPY_MODULES = [
    "selfattn_lib.similarity",
    "selfattn_lib.softmax",
    "selfattn_lib.attention",
    "selfattn_lib.masks",
    "selfattn_lib.multihead",
    "selfattn_lib.positional",
    "selfattn_lib.tasks",
]
# The helpers the chapters use next to the NumPy core.
ALL_MODULES = [
    *NUMPY_MODULES,
    "selfattn_lib.embeddings",
    "selfattn_lib.plotting",
    "selfattn_lib.widgets",
    "selfattn_lib.exercises",
]
# Part II builds on PyTorch: these modules import it (and are checked only where it is installed).
TORCH_MODULES = ["selfattn_lib.transformer"]


def public_objects(module_name: str) -> list[tuple[str, object]]:
    """Public functions and classes defined in the module, and the public methods of those
    classes (``Class.method``)."""
    module = importlib.import_module(module_name)
    found = []
    for name, obj in vars(module).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != module_name:
            continue
        if not (inspect.isfunction(obj) or inspect.isclass(obj)):
            continue  # e.g. a constant that is an instance of the module's class
        found.append((name, obj))
        if inspect.isclass(obj):
            found.extend(
                (f"{name}.{method_name}", method)
                for method_name, method in vars(obj).items()
                if not method_name.startswith("_")
                and isinstance(method, classmethod | staticmethod)
            )
    return found


DOCUMENTED_MODULES = NUMPY_MODULES + (TORCH_MODULES if importlib.util.find_spec("torch") else [])
PUBLIC = [
    (module, name, obj) for module in DOCUMENTED_MODULES for name, obj in public_objects(module)
]


def test_importing_the_modules_does_not_import_torch():
    code = textwrap.dedent(
        f"""
        import sys
        import selfattn_lib
        for name in {ALL_MODULES!r}:
            __import__(name)
        loaded = sorted(name for name in sys.modules if name.split(".")[0] == "torch")
        assert not loaded, loaded
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_every_module_has_public_functions():
    assert {module for module, _, _ in PUBLIC} == set(DOCUMENTED_MODULES)


@pytest.mark.parametrize(("module", "name", "obj"), PUBLIC, ids=[name for _, name, _ in PUBLIC])
def test_public_objects_document_shapes_with_an_example(module, name, obj):
    function = obj.__func__ if isinstance(obj, classmethod | staticmethod) else obj
    docstring = inspect.getdoc(function) or ""
    assert "Shapes\n------" in docstring, f"{module}.{name} has no 'Shapes' section"
    examples = docstring.partition("Examples\n--------\n")[2]
    assert ">>> " in examples, f"{module}.{name} has no example"


@pytest.mark.parametrize(
    ("module", "name", "obj"),
    [entry for entry in PUBLIC if not inspect.isclass(entry[2])],
    ids=[name for _, name, obj in PUBLIC if not inspect.isclass(obj)],
)
def test_public_functions_have_type_hints(module, name, obj):
    function = obj.__func__ if isinstance(obj, classmethod | staticmethod) else obj
    signature = inspect.signature(function)
    unannotated = [
        parameter.name
        for parameter in signature.parameters.values()
        if parameter.annotation is inspect.Parameter.empty and parameter.name != "cls"
    ]
    assert not unannotated, f"{module}.{name}: no type hint for {unannotated}"
    assert signature.return_annotation is not inspect.Signature.empty, f"{module}.{name}"


@pytest.mark.parametrize("module_name", ALL_MODULES + TORCH_MODULES)
def test_docstring_examples_run(module_name):
    if module_name in TORCH_MODULES:
        pytest.importorskip("torch").manual_seed(0)
    module = importlib.import_module(module_name)
    results = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert results.attempted > 0, f"{module_name} has no examples"
    assert results.failed == 0, f"{results.failed} example(s) of {module_name} failed (see stdout)"
