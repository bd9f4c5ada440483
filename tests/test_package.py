"""Package-level checks: every module imports without torch and its docstring examples run;
the NumPy modules' public functions document their shapes with an example and type hints."""

from __future__ import annotations

import ast
import doctest
import importlib
import importlib.util
import inspect
import pkgutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import selfattn_lib

pytestmark = pytest.mark.filterwarnings("error")

ROOT = Path(selfattn_lib.__file__).parent


def discover_modules() -> list[str]:
    """Every module of the package, subpackages included, found on disk (not from a list)."""
    return sorted(info.name for info in pkgutil.walk_packages([str(ROOT)], "selfattn_lib."))


def imports_torch(module_name: str) -> bool:
    """Whether the module imports torch when it is imported (a top-level ``import torch``)."""
    path = ROOT.joinpath(*module_name.split(".")[1:])
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        if any(name.split(".")[0] == "torch" for name in names):
            return True
    return False


ALL_MODULES = discover_modules()
TORCH_MODULES = [name for name in ALL_MODULES if imports_torch(name)]
TORCH_FREE_MODULES = [name for name in ALL_MODULES if name not in TORCH_MODULES]
CONCEPTS = [f"selfattn_lib.{name}" for name in selfattn_lib.CONCEPT_MODULES]
# Modules whose docstring examples must exist (not only pass): the concept modules and the
# exercise checkers of every chapter.
MUST_HAVE_EXAMPLES = [
    *CONCEPTS,
    *(name for name in ALL_MODULES if name.startswith("selfattn_lib.exercises.ch")),
]


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


HAVE_TORCH = importlib.util.find_spec("torch") is not None
DOCUMENTED_MODULES = [name for name in CONCEPTS if HAVE_TORCH or name not in TORCH_MODULES]
PUBLIC = [
    (module, name, obj) for module in DOCUMENTED_MODULES for name, obj in public_objects(module)
]


def test_importing_the_modules_does_not_import_torch():
    code = textwrap.dedent(
        f"""
        import sys
        import selfattn_lib
        for name in {TORCH_FREE_MODULES!r}:
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


@pytest.mark.parametrize("module_name", ALL_MODULES)
def test_docstring_examples_run(module_name):
    if module_name in TORCH_MODULES:
        pytest.importorskip("torch").manual_seed(0)
    module = importlib.import_module(module_name)
    results = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    if module_name in MUST_HAVE_EXAMPLES:
        assert results.attempted > 0, f"{module_name} has no examples"
    assert results.failed == 0, f"{results.failed} example(s) of {module_name} failed (see stdout)"


def test_the_concept_modules_are_listed_in_teaching_order_and_exist():
    assert len(set(CONCEPTS)) == len(CONCEPTS)
    assert set(CONCEPTS) <= set(ALL_MODULES), sorted(set(CONCEPTS) - set(ALL_MODULES))


def library_imports(module_name: str) -> set[str]:
    """The ``selfattn_lib`` modules that a module imports, anywhere in its code."""
    module = importlib.import_module(module_name)
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            if node.module == "selfattn_lib":
                found.update(f"selfattn_lib.{alias.name}" for alias in node.names)
    return {name for name in found if name.startswith("selfattn_lib.")}


@pytest.mark.parametrize("module_name", CONCEPTS)
def test_a_concept_module_imports_only_earlier_concepts(module_name):
    """similarity → softmax → attention → …: a concept builds only on what the course has
    taught before it (and on the private argument checks), never on figures or checkers."""
    earlier = set(CONCEPTS[: CONCEPTS.index(module_name)]) | {"selfattn_lib._validation"}
    later = library_imports(module_name) - earlier
    assert not later, f"{module_name} imports {sorted(later)}, which are not earlier concepts"


@pytest.mark.parametrize("module_name", selfattn_lib.CONCEPT_MODULES)
def test_every_concept_module_has_its_own_test_file(module_name):
    tests = Path(__file__).parent
    assert (tests / f"test_{module_name}.py").is_file(), f"tests/test_{module_name}.py is missing"
