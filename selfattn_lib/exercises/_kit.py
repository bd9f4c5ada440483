"""The checkers' kit: feedback, calling the learner's function, reading its result, and naming
known mistakes.

Every chapter module of :mod:`selfattn_lib.exercises` builds its checkers from these pieces,
so that the same situation gets the same words in every chapter:

- :class:`Feedback` is what a checker returns; :func:`run_checks` turns the first
  :class:`Mistake` (or :class:`NotAttempted`) raised by a checker's ``checks()`` into one.
- :func:`call` calls the learner's function: an untouched stub (``NotImplementedError``) means
  "not attempted", any other exception is a mistake that names the arguments.
- ``as_…`` functions read a result: ``None`` always gets the same "did you forget the
  ``return``" message, then the shape, dtype and finiteness are checked.
- :func:`python_lines` counts the lines of Python the learner's code runs, and
  :func:`require_no_python_loop` turns work that grows with the input (:func:`loop_counts`)
  into feedback: lines of the learner's Python, the calls its code makes (or NumPy's
  ``np.vectorize`` and ``np.apply_along_axis`` make for it) and rows taken one at a time out
  of the arrays it is given. A loop over the inputs written with ``for``, a comprehension,
  ``np.vectorize``, ``np.apply_along_axis``, or ``map`` of a Python function (the learner's or
  a library's, such as ``np.linalg.norm``) or of anything over the arrays as given grows at
  least one of them. A built-in that loops in C over a copy or a plain view of the inputs
  (``map(sum, x.tolist())``, ``map(y.dot, np.asarray(x))``) runs no Python and takes no row
  of the arrays given: it is not seen.
- :func:`require_own_code` turns down a right answer that calls what the prompt rules out
  (PyTorch, this library, or the library's own answer to the exercise), seen by a profiler;
  :func:`multiplications_with` counts the work done with one argument (a
  :class:`CountedArray`), for prompts that say how much to compute.
- :func:`match_known_mistakes` compares a result with a catalogue of known wrong answers,
  under one tolerance policy (:data:`RTOL`, :data:`ATOL`; integers compare exactly), and
  :func:`require_unrounded` names a result rounded for printing.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import html
import re
import sys
import sysconfig
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Relative and absolute tolerance for "equal" results, in every chapter. A checker passes a
#: tighter ``atol`` only where the exercise itself is about precision.
RTOL = 1e-6
ATOL = 1e-8


@dataclass(frozen=True)
class Feedback:
    """The outcome of a checker: whether the answer passed, and a message for the learner.

    Examples
    --------
    >>> Feedback(passed=False, attempted=True, message="Rows must sum to one.")
    ✘ Not yet. Rows must sum to one.
    """

    passed: bool
    attempted: bool
    message: str

    def __bool__(self) -> bool:
        return self.passed

    @property
    def verdict(self) -> str:
        """``"✔ Correct."``, ``"○ Not attempted yet."`` or ``"✘ Not yet."``."""
        if self.passed:
            return "✔ Correct."
        return "✘ Not yet." if self.attempted else "○ Not attempted yet."

    def __repr__(self) -> str:
        return f"{self.verdict} {self.message}"

    def _repr_html_(self) -> str:
        """The verdict in bold, then the message, as a paragraph that wraps to the width of
        the notebook or the page (a plain-text output is one line that does not wrap)."""
        parts = html.escape(self.message, quote=False).split("`")
        # Odd-numbered parts were between backticks: code.
        message = "".join(
            f"<code>{part}</code>" if index % 2 else part for index, part in enumerate(parts)
        )
        if len(parts) % 2 == 0:  # an unpaired backtick: show the text as it is
            message = html.escape(self.message, quote=False)
        message = message.replace("\n", "<br>")
        return f'<p class="checker-feedback"><strong>{self.verdict}</strong> {message}</p>'


class Mistake(Exception):
    """Raised inside a checker to stop at the first problem found; its text is the feedback."""


class NotAttempted(Exception):
    """Raised inside a checker when the learner's function is still the stub."""


NOT_ATTEMPTED = "Replace `raise NotImplementedError` with your code, then run the check again."


def run_checks(checks: Callable[[], str]) -> Feedback:
    """Run a checker's ``checks()``: its return value is the praise, its first
    :class:`Mistake` the feedback."""
    try:
        praise = checks()
    except NotAttempted as stub:
        return Feedback(passed=False, attempted=False, message=str(stub))
    except Mistake as mistake:
        return Feedback(passed=False, attempted=True, message=str(mistake))
    return Feedback(passed=True, attempted=True, message=praise)


def name_of(function: Callable[..., Any], default: str) -> str:
    """The learner's name for ``function``, or ``default`` for a lambda or a callable object."""
    name = getattr(function, "__name__", "")
    return name if isinstance(name, str) and name.isidentifier() else default


def describe_arguments(args: tuple[Any, ...]) -> str:
    """``"an array of shape (2, 3), 4"``: the arguments of a call, for a message."""
    parts = []
    for arg in args:
        try:
            array = np.asarray(arg)
        except Exception:  # noqa: BLE001 - anything that is not array-like is shown as is
            parts.append(type(arg).__name__)
            continue
        parts.append(f"an array of shape {array.shape}" if array.ndim else repr(arg))
    return ", ".join(parts) if parts else "no arguments"


def call(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call the learner's function, turning its failures into feedback."""
    if not callable(function):
        raise Mistake(f"expected a function, got {type(function).__name__}")
    try:
        return function(*args, **kwargs)
    except NotImplementedError as error:
        raise NotAttempted(NOT_ATTEMPTED) from error
    except Exception as error:  # noqa: BLE001 - any error of the learner's code is feedback
        raise Mistake(
            f"your function raised {type(error).__name__}: {error} "
            f"(called with {describe_arguments(args)})"
        ) from error


# Code from these directories is not the learner's: the standard library, installed packages
# (NumPy's np.vectorize included) and this library.
_NOT_LEARNER_CODE = tuple(
    {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    | {__file__.rsplit("/", 2)[0]}
)


def python_lines(function: Callable[..., Any], *args: Any) -> int:
    """How many lines of the learner's own Python code ``function(*args)`` runs: lines in
    frames whose code lies outside the standard library, installed packages and this library.
    A loop over the inputs runs its body once per element, so the count grows with the input;
    vectorised NumPy code runs the same few lines whatever the size."""
    tracer, count = _learner_line_tracer()
    _call_watched(function, args, sys.settrace, sys.gettrace, tracer)
    return count[0]


def _learner_line_tracer() -> tuple[Any, list[int]]:
    """A tracer for ``sys.settrace`` that counts the lines run in frames of the learner's own
    code (outside :data:`_NOT_LEARNER_CODE`), and the one-element list it counts into."""
    count = [0]

    def local(frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            count[0] += 1
        return local

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if event == "call" and not frame.f_code.co_filename.startswith(_NOT_LEARNER_CODE):
            return local
        return None

    return tracer, count


def _call_watched(
    function: Callable[..., Any],
    args: tuple[Any, ...],
    install: Callable[[Any], None],
    installed: Callable[[], Any],
    hook: Any,
) -> None:
    """Call ``function(*args)`` quietly with ``hook`` installed as the tracer or profiler
    (``sys.settrace`` / ``sys.setprofile``), then put back the one that was there."""
    _call_hooked(function, args, [(install, installed, hook)])


def _call_hooked(
    function: Callable[..., Any],
    args: tuple[Any, ...],
    hooks: list[tuple[Callable[[Any], None], Callable[[], Any], Any]],
) -> None:
    """Call ``function(*args)`` quietly with every ``(install, installed, hook)`` of ``hooks``
    installed, then put back what was there. The garbage collector waits meanwhile, so that no
    finaliser of unrelated objects runs inside the count."""
    previous = [installed() for _, installed, _ in hooks]
    collecting = gc.isenabled()
    gc.disable()
    for install, _, hook in hooks:
        install(hook)
    try:
        call_quietly(function, *args)
        still_watched = all(installed() is hook for _, installed, hook in hooks)
    finally:
        for (install, _, _), before in zip(hooks, previous, strict=True):
            install(before)
        if collecting:
            gc.enable()
    if not still_watched:
        raise Mistake(
            "your function changed the Python tracer or profiler (sys.settrace, "
            "sys.setprofile), through which the checker watches how it works: leave them alone"
        )


class _RowWatchedArray(np.ndarray):
    """An array that counts the rows taken out of it one at a time, by iterating over it
    (``for``, ``map``, ``zip``, ``sum``, ``list``) or by indexing it with one integer
    (``x[i]``); the arrays computed from it (``x / 2``, ``x.T``) count too. The count lives
    in :attr:`rows`, a one-element list shared by all of them."""

    rows: list[int] | None = None

    def __array_finalize__(self, obj: Any) -> None:
        self.rows = getattr(obj, "rows", None)

    def _took(self, how_many: int = 1) -> None:
        if self.rows is not None:
            self.rows[0] += how_many

    def __iter__(self) -> Any:
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        for index in range(len(self)):
            self._took()
            yield super().__getitem__(index)

    def __getitem__(self, key: Any) -> Any:
        first = key[0] if isinstance(key, tuple) and key else key
        if isinstance(first, int | np.integer) and not isinstance(first, bool):
            self._took()
        return super().__getitem__(key)


@dataclass(frozen=True)
class LoopCounts:
    """What :func:`loop_counts` saw one call of the learner's function do."""

    lines: int  #: lines of the learner's own Python code
    calls: int  #: calls made by the learner's code, or by NumPy's loops for it
    rows: int  #: rows taken one at a time out of the arrays it was given


def _numpy_loop_codes() -> frozenset[Any]:
    """The code of NumPy's functions that call a function once per item in Python
    (``np.vectorize``, ``np.apply_along_axis``): the calls they make count as the learner's."""
    import inspect

    functions = [
        getattr(np.vectorize, "_vectorize_call", None),
        getattr(np.vectorize, "_vectorize_call_with_signature", None),
        np.apply_along_axis,
    ]
    codes = set()
    for function in functions:
        code = getattr(inspect.unwrap(function), "__code__", None) if function else None
        if code is not None:
            codes.add(code)
    return frozenset(codes)


_NUMPY_LOOP_CODES = _numpy_loop_codes()


def loop_counts(function: Callable[..., Any], *args: Any) -> LoopCounts:
    """Run ``function(*args)`` once and count the work that a loop repeats per item: the lines
    of the learner's own Python (as :func:`python_lines`); the calls its own code makes,
    built-ins included, and those that NumPy's loops (``np.vectorize``,
    ``np.apply_along_axis``) make for it, so that ``map(np.linalg.norm, x)`` counts one call
    per row; and the rows taken one at a time out of the array arguments, which are passed as
    views that count them (``map(f, x)`` over a built-in ``f`` runs no Python at all, but
    takes every row of ``x``).

    Calls that library code makes on its own are not counted: a vectorised function may take
    another branch for larger inputs (``np.einsum(..., optimize=True)`` makes more calls
    inside NumPy) without any loop over the items."""
    tracer, lines = _learner_line_tracer()
    calls, rows = 0, [0]

    def profiler(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls
        if event not in ("call", "c_call"):
            return
        # A Python function's caller is the frame below it (for map(np.linalg.norm, x), the
        # frame that called map); a built-in runs in its caller's frame.
        caller = frame.f_back if event == "call" else frame
        if caller is not None and (caller.f_code in _NUMPY_LOOP_CODES or _is_learner_frame(caller)):
            calls += 1

    watched = []
    for arg in args:
        if type(arg) is np.ndarray:
            arg = arg.view(_RowWatchedArray)
            arg.rows = rows
        watched.append(arg)
    _call_hooked(
        function,
        tuple(watched),
        [(sys.settrace, sys.gettrace, tracer), (sys.setprofile, sys.getprofile, profiler)],
    )
    return LoopCounts(lines=lines[0], calls=calls, rows=rows[0])


def _shapes(args: tuple[Any, ...]) -> str:
    """``"(3, 4) and (5, 4)"``: the shapes of the array arguments of a call, for a message."""
    shapes = [str(np.shape(arg)) if isinstance(arg, np.ndarray) else repr(arg) for arg in args]
    return shapes[0] if len(shapes) == 1 else f"{', '.join(shapes[:-1])} and {shapes[-1]}"


def require_no_python_loop(
    function: Callable[..., Any], small: tuple[Any, ...], large: tuple[Any, ...], what: str
) -> None:
    """Raise a :class:`Mistake` when ``function`` does more of the work that a loop repeats
    (:func:`loop_counts`) for the ``large`` arguments than for the ``small`` ones. The
    function runs once before the counts, so that what a first call does once (an import, a
    cache filled) is not counted."""
    call_quietly(function, *small)
    small_counts, large_counts = loop_counts(function, *small), loop_counts(function, *large)
    for count, done in (
        ("lines", "ran {} lines of Python"),
        ("rows", "took {} rows or entries of its arguments one at a time"),
        ("calls", "made {} function calls"),
    ):
        before, after = getattr(small_counts, count), getattr(large_counts, count)
        if after > before:
            raise Mistake(
                f"{what} {done.format(before)} for inputs of shape {_shapes(small)}, and "
                f"{after} for {_shapes(large)}: a loop runs once per item of the input, "
                "whether it is written as `for`, a comprehension, `map`, `np.vectorize` or "
                "`np.apply_along_axis`. Work on whole arrays instead (matrix products and "
                "broadcasting)"
            )


#: What the prompts rule out, for :func:`require_own_code`: a module (all of it) or one function.
TORCH = ("torch",)
COURSE_LIBRARY = ("selfattn_lib",)


def _code_qualname(frame: Any) -> str:
    """The qualified name of the function ``frame`` runs: ``code.co_qualname`` from Python
    3.11 on; on Python 3.10, which lacks it, the name of the class that holds the method
    (found through the frame's first argument, ``self`` or ``cls``) and the function's name."""
    code = frame.f_code
    qualname = getattr(code, "co_qualname", None)
    if isinstance(qualname, str):
        return qualname
    name = code.co_name
    if code.co_argcount and code.co_varnames[0] in ("self", "cls"):
        owner = frame.f_locals.get(code.co_varnames[0])
        for klass in (owner if isinstance(owner, type) else type(owner)).__mro__:
            held = klass.__dict__.get(name)
            held = getattr(getattr(held, "__func__", held), "__code__", None)  # classmethod
            if held is not None and (held.co_filename, held.co_firstlineno) == (
                code.co_filename,
                code.co_firstlineno,
            ):
                return f"{klass.__qualname__}.{name}"
    return name


def _qualified_name(frame: Any, event: str, arg: Any) -> str:
    """``"torch.tensor"``, ``"torch.Tensor.sum"``, ``"selfattn_lib.multihead.split_heads"``:
    the function a profiler ``call`` (Python) or ``c_call`` (built-in) event enters."""
    if event == "call":
        return f"{frame.f_globals.get('__name__', '')}.{_code_qualname(frame)}"
    owner = getattr(arg, "__self__", None)
    module = getattr(arg, "__module__", None)
    if module is None and owner is not None and not isinstance(owner, type(sys)):
        module = type(owner).__module__
    name = getattr(arg, "__qualname__", "") or getattr(arg, "__name__", "")
    if name.startswith("_VariableFunctionsClass."):  # torch.tensor, torch.argmax, …
        name = name.removeprefix("_VariableFunctionsClass.")
    return f"{module or ''}.{name}"


def _is_learner_frame(frame: Any) -> bool:
    """Whether ``frame`` runs the learner's code, or is :func:`call` handing the checker's
    arguments straight to the function it was given (a library function passed as the answer)."""
    code = frame.f_code
    return code is call.__code__ or not code.co_filename.startswith(_NOT_LEARNER_CODE)


def library_calls(
    function: Callable[..., Any], args: tuple[Any, ...], banned: Iterable[str]
) -> list[str]:
    """The functions of ``banned`` (modules such as ``"torch"``, or single functions such as
    ``"selfattn_lib.multihead.split_heads"``) that the learner's own code calls while
    ``function(*args)`` runs, in the order of their first call.

    A profiler sees every call, however it is written (``torch.tensor``, a tensor's method,
    ``from selfattn_lib.multihead import split_heads as s``), but only calls made by the
    learner count: the library calling itself, or NumPy, is not the learner's doing."""
    prefixes = tuple(banned)
    found: dict[str, None] = {}

    def profiler(frame: Any, event: str, arg: Any) -> None:
        if event not in ("call", "c_call"):
            return
        caller = frame.f_back if event == "call" else frame
        if caller is None or not _is_learner_frame(caller):
            return
        name = _qualified_name(frame, event, arg)
        if any(name == prefix or name.startswith(f"{prefix}.") for prefix in prefixes):
            found.setdefault(name)

    _call_watched(function, args, sys.setprofile, sys.getprofile, profiler)
    return list(found)


def require_own_code(
    function: Callable[..., Any],
    args: tuple[Any, ...],
    banned: Iterable[str],
    what: str,
    rule: str,
) -> None:
    """Raise a :class:`Mistake` when the learner's code calls one of ``banned`` (see
    :func:`library_calls`): the prompt asked for the work to be done another way, ``rule``."""
    called = library_calls(function, args, banned)
    if called:
        names = ", ".join(f"`{name}`" for name in called[:3])
        raise Mistake(f"{what} gives the right result, but it calls {names}: {rule}")


#: The rule of an exercise whose answer the library holds, for :func:`require_own_code`.
WRITE_IT_YOURSELF = (
    "the exercise is to write it yourself (the library's version is there to compare with, "
    "after the checker has passed yours)"
)


def call_quietly(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """:func:`call` with NumPy's floating-point warnings and every ``RuntimeWarning`` switched
    off.

    Checks feed inputs that make wrong answers overflow or divide 0 by 0 (a naive softmax, a
    missing length check). The checker explains that in words, so no ``RuntimeWarning`` line
    reaches the notebook's stderr: neither NumPy's floating-point warnings (``np.errstate``)
    nor one raised otherwise (``np.mean`` of an empty slice, ``math`` or torch code, the
    learner's own ``warnings.warn``).
    """
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return call(function, *args, **kwargs)


def call_on_copy(
    function: Callable[..., Any],
    array: np.ndarray,
    *args: Any,
    argument: str = "",
    in_place: str = "scores -= scores.max()",
) -> Any:
    """Call ``function(copy of array, *args)`` quietly and complain if it changed its argument.

    The message names the argument (``argument``, the prompt's name for ``array``, if given)
    and the usual way to change it in place (``in_place``, such as ``"weights **= factor"``),
    whose out-of-place form it recommends.

    Examples
    --------
    >>> def in_place(weights, factor):
    ...     weights **= factor
    ...     return weights / weights.sum()
    >>> weights = np.array([1.0, 2.0])
    >>> call_on_copy(in_place, weights, 2, argument="weights", in_place="weights **= factor")
    Traceback (most recent call last):
    ...
    selfattn_lib.exercises._kit.Mistake: your function changed the array `weights` it was \
given (for example with `weights **= factor`): compute `weights ** factor` into a new array, \
so that the caller's weights stay as they were
    """
    given = array.copy()
    result = call_quietly(function, given, *args)
    if not np.array_equal(given, array, equal_nan=array.dtype.kind in "fc"):
        out_of_place = re.sub(r" (\*\*|[-+*/@]|//)= ", r" \1 ", in_place)
        named = f" `{argument}`" if argument else ""
        raise Mistake(
            f"your function changed the array{named} it was given (for example with "
            f"`{in_place}`): compute `{out_of_place}` into a new array, so that the caller's "
            f"{argument or 'scores'} stay as they were"
        )
    return result


def show(array: Any) -> str:
    """An array as a short Python list for a message, e.g. ``[1000.0, 1001.0]``."""
    return str(np.asarray(array).tolist())


# --- Counting the work ---

#: NumPy's products: each counts ``depth`` multiplications for every number it gives.
_PRODUCT_FUNCTIONS = (np.dot, np.vdot, np.einsum, np.tensordot, np.inner)
_PRODUCT_UFUNCS = tuple(
    getattr(np, name) for name in ("matmul", "vecdot", "matvec", "vecmat") if hasattr(np, name)
)
#: NumPy functions whose result only takes the shape of a counted array, not its numbers.
_SHAPE_ONLY = (np.zeros_like, np.ones_like, np.empty_like, np.full_like)
#: NumPy's conversions that hand back a plain array for a :class:`CountedArray`. While
#: :func:`multiplications_with` runs, those the learner's code calls keep the counting.
_CONVERSIONS = (
    "array",
    "asarray",
    "ascontiguousarray",
    "asfortranarray",
    "asarray_chkfinite",
    "copy",
)
# Nested products (np.einsum(..., optimize=True) calls np.tensordot) count once, at the top.
_INSIDE_A_PRODUCT = [0]


def _counted_among(arrays: Iterable[Any], default: CountedArray) -> CountedArray:
    """The first :class:`CountedArray` with a counter among ``arrays`` and the lists in them,
    else ``default``."""
    for array in arrays:
        if isinstance(array, CountedArray) and array.counter is not None:
            return array
        if isinstance(array, list | tuple):
            found = _counted_among(array, default)
            if found is not default:
                return found
    return default


class CountedArray(np.ndarray):
    """An array that counts the multiplications made with it: ``a @ …``, ``… @ a.T``,
    ``a.dot(…)``, ``np.dot``, ``np.vdot``, ``np.einsum``, ``np.tensordot``, ``np.inner``,
    ``np.matmul`` (and NumPy 2's ``np.vecdot``, ``np.matvec``, ``np.vecmat``) and ``*``, with
    any view, slice or copy of it, with it divided or multiplied by a number, and with arrays
    NumPy makes from it (``np.concatenate``, ``np.stack``, ``np.pad`` …). Each entry of a
    product counts ``depth`` multiplications, the length of the axis the product sums over: a
    product of ``(b_q, D_k)`` queries with ``(b_k, D_k)`` counted keys counts ``b_q · b_k · D_k``.

    An array with ``counter`` None counts nothing, but its products with a counted one are
    counted (``x.dot(w)`` is ``x``'s method: :func:`multiplications_with` hands the learner
    such arrays for its other arguments)."""

    counter: list[int] | None = None
    depth: int = 1  # the multiplications behind one entry of a product

    def __array_finalize__(self, obj: Any) -> None:
        self.counter = getattr(obj, "counter", None)
        self.depth = getattr(obj, "depth", 1)

    def _count(self, result: Any, multiplications: int) -> None:
        if self.counter is not None and not _INSIDE_A_PRODUCT[0]:
            self.counter[0] += int(multiplications)

    @staticmethod
    def _kept(result: Any, source: CountedArray) -> Any:
        """``result`` counting as ``source`` does (lists and tuples of arrays too)."""
        if isinstance(result, list | tuple):
            return type(result)(CountedArray._kept(part, source) for part in result)
        if not isinstance(result, np.ndarray) or not result.shape:
            return result
        kept = result.view(CountedArray)
        kept.counter, kept.depth = source.counter, source.depth
        return kept

    def dot(self, b: Any, out: Any = None) -> Any:  # the method, counted like np.dot
        return np.dot(self, b, out=out)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        source = _counted_among(inputs, self)
        plain = [np.asarray(x) if isinstance(x, CountedArray) else x for x in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(
                np.asarray(x) if isinstance(x, CountedArray) else x for x in kwargs["out"]
            )
        result = getattr(ufunc, method)(*plain, **kwargs)
        if method != "__call__" or not isinstance(result, np.ndarray):
            return result
        scalars = [np.ndim(x) == 0 for x in plain]
        if ufunc in _PRODUCT_UFUNCS:
            source._count(result, result.size * source.depth)
            return result
        if ufunc is np.multiply and not any(scalars):
            source._count(result, result.size)
            return result
        # Element-wise work on the array alone (k / √D, -k, k * 2) keeps counting.
        if not result.shape:
            return result
        counted = result.view(CountedArray)
        counted.counter, counted.depth = source.counter, source.depth
        return counted

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        source = _counted_among((*args, *kwargs.values()), self)
        if func not in _PRODUCT_FUNCTIONS:
            result = super().__array_function__(func, types, args, kwargs)
            if func in _SHAPE_ONLY or source.counter is None:
                return result
            return self._kept(result, source)  # the same numbers, moved about
        _INSIDE_A_PRODUCT[0] += 1
        try:
            result = np.asarray(super().__array_function__(func, types, args, kwargs))
        finally:
            _INSIDE_A_PRODUCT[0] -= 1
        source._count(result, result.size * source.depth)
        return result


class Multiplications(int):
    """A count of multiplications (:func:`multiplications_with`) that also holds ``largest``,
    the multiplications of the largest single product among them."""

    largest: int = 0


class _Tally(list):
    """The counter of a :class:`CountedArray`, ``[total]``, that also keeps the largest
    single product (the multiplications behind one matrix product or one ``*``)."""

    largest = 0

    def __setitem__(self, index: Any, value: Any) -> None:
        self.largest = max(self.largest, value - self[index])
        super().__setitem__(index, value)


@contextlib.contextmanager
def _conversions_keep_counting() -> Iterator[None]:
    """While active, ``np.asarray(w)``, ``np.array(w, dtype=…)``, ``np.copy(w)`` … of a
    :class:`CountedArray` ``w`` return one that counts as ``w`` does, when the learner's code
    calls them (NumPy's own calls and the kit's, which drop the counting on purpose, get a
    plain array as usual)."""
    originals = {name: getattr(np, name) for name in _CONVERSIONS}

    def following(convert: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(convert)
        def converted(a: Any, *args: Any, **kwargs: Any) -> Any:
            result = convert(a, *args, **kwargs)
            if (
                isinstance(a, CountedArray)
                and type(result) is np.ndarray
                and _is_learner_frame(sys._getframe(1))
            ):
                result = CountedArray._kept(result, a)
            return result

        return converted

    for name, convert in originals.items():
        setattr(np, name, following(convert))
    try:
        yield
    finally:
        for name, convert in originals.items():
            setattr(np, name, convert)


def multiplications_with(
    function: Callable[..., Any], args: tuple[Any, ...], index: int, depth: int
) -> Multiplications:
    """How many multiplications ``function(*args)`` makes with its argument number ``index``
    (a :class:`CountedArray` with this ``depth``; the other arrays are passed as copies that
    count nothing themselves, so that their method ``.dot`` is followed too). ``largest`` of
    the count is the largest single product.

    Followed: the products of :class:`CountedArray`, with the argument, its views, slices and
    copies (``w.T``, ``w[0]``, ``w.copy()``, ``w.astype(…)``), the conversions the learner's
    code makes (``np.asarray(w)``, ``np.array(w)``, ``np.copy(w)``, ``np.ascontiguousarray(w)``
    …) and arrays NumPy builds from it (``np.concatenate``, ``np.stack`` …). Not followed: the
    numbers taken out of it (``w.tolist()``, ``float(w[0, 0])``) and other libraries
    (``torch.from_numpy(w)``).

    Examples
    --------
    >>> x, w = np.ones((5, 4)), np.ones((4, 3))  # (T, D), (D, D_k)
    >>> int(multiplications_with(lambda x, w: x[2] @ w, (x, w), index=1, depth=4))  # D · D_k
    12
    >>> int(multiplications_with(lambda x, w: x.dot(np.asarray(w))[2], (x, w), 1, 4))  # T · D · D_k
    60
    """
    tally = _Tally([0])
    given = [
        arg.copy().view(CountedArray) if isinstance(arg, np.ndarray) else arg for arg in args
    ]  # copies, which count nothing …
    counted = given[index] = np.array(args[index], dtype=np.float64).view(CountedArray)
    counted.counter, counted.depth = tally, depth  # … but the one argument
    with _conversions_keep_counting():
        call_quietly(function, *given)
    total = Multiplications(tally[0])
    total.largest = tally.largest
    return total


# --- Reading the learner's result ---


def require_result(result: Any, what: str) -> Any:
    """``result``, unless it is ``None`` (a forgotten ``return``)."""
    if result is None:
        raise Mistake(f"{what} returned None: did you forget the `return` statement?")
    return result


def plain(result: Any) -> Any:
    """A torch tensor (even one that requires grad) as a NumPy array; anything else as is.

    Learners may build an answer from ``torch.nn`` layers and return their output as it is;
    NumPy cannot read a tensor that requires grad.
    """
    detach = getattr(result, "detach", None)
    if callable(detach) and callable(getattr(result, "numpy", None)):
        return detach().cpu().numpy()
    return result


def as_array(result: Any, what: str) -> np.ndarray:
    """``result`` as a float64 array of any shape (lists, arrays and CPU tensors work)."""
    require_result(result, what)
    try:
        return np.asarray(plain(result), dtype=np.float64)
    except (TypeError, ValueError, RuntimeError) as error:
        raise Mistake(
            f"{what} must return an array of numbers, got {type(result).__name__}"
        ) from error


def as_result_array(result: Any, expected: np.ndarray, what: str) -> np.ndarray:
    """``result`` as a float64 array that is shaped like ``expected`` and finite."""
    require_result(result, what)
    try:
        got = np.asarray(plain(result), dtype=np.float64)
    except (TypeError, ValueError, RuntimeError) as error:
        raise Mistake(f"{what} must return numbers, got {type(result).__name__}") from error
    expected_shape = np.shape(expected)
    if got.shape != expected_shape:
        raise Mistake(
            f"{what} returned shape {got.shape}, expected {expected_shape}"
            + (" (a single number)" if expected_shape == () else "")
        )
    if np.isnan(got).any():
        raise Mistake(f"{what} returned NaN (not a number): look for 0/0 or inf - inf")
    if np.isinf(got).any():
        raise Mistake(f"{what} returned infinity: a number overflowed")
    return got


def values_like(result: Any, expected: np.ndarray) -> np.ndarray | None:
    """``result`` as a float64 array if it has the shape of ``expected``, else None.

    Used to explain NaN and infinity before :func:`as_result_array` rejects them; results
    that are None, not numbers or wrongly shaped are left to :func:`as_result_array`.
    """
    if result is None:
        return None
    try:
        values = np.asarray(plain(result), dtype=np.float64)
    except (TypeError, ValueError, RuntimeError):
        return None
    return values if values.shape == np.shape(expected) else None


def explain_non_finite(result: Any, expected: np.ndarray, what: str, explanation: str) -> None:
    """Raise ``explanation`` if ``result`` has the expected shape but holds NaN or infinity."""
    values = values_like(result, expected)
    if values is not None and not np.isfinite(values).all():
        kind = "NaN (not a number)" if np.isnan(values).any() else "infinity"
        raise Mistake(f"{what} returned {kind}. {explanation}")


def as_bool_array(result: Any, expected: np.ndarray, what: str) -> np.ndarray:
    """``result`` as a boolean array shaped like ``expected`` (a mask)."""
    got = np.asarray(plain(require_result(result, what)))
    if got.shape != np.shape(expected):
        raise Mistake(f"{what} returned shape {got.shape}, expected {np.shape(expected)}")
    if got.dtype != np.bool_:
        if not np.isin(got, (0, 1)).all():
            raise Mistake(f"{what} must hold only True and False, got {show(got)}")
        raise Mistake(
            f"{what} returned dtype {got.dtype}, but a mask must be boolean: NumPy indexes "
            "with 0/1 integers as positions, not as a mask. Use dtype=bool (or `.astype(bool)`)"
        )
    return got


def as_int_array(result: Any, expected: np.ndarray, what: str) -> np.ndarray:
    """``result`` as an integer array shaped like ``expected`` (token ids)."""
    require_result(result, what)
    try:
        got = np.asarray(plain(result))
    except (TypeError, ValueError, RuntimeError) as error:
        raise Mistake(f"{what} must return an array of token ids, got {type(result)}") from error
    if got.shape != np.shape(expected):
        raise Mistake(f"{what} returned shape {got.shape}, expected {np.shape(expected)}")
    if not np.issubdtype(got.dtype, np.integer):
        raise Mistake(
            f"{what} returned dtype {got.dtype}: token ids are integers (an embedding looks "
            "them up by index), so keep the integer dtype of the target"
        )
    return got


def as_whole_number(result: Any, what: str, noun: str = "a count") -> int:
    """``result`` as a Python int, if it is one whole number (int, NumPy integer or float)."""
    require_result(result, what)
    result = plain(result)
    if isinstance(result, bool) or np.ndim(result) != 0:
        raise Mistake(f"{what} must return one whole number, got {result!r}")
    try:
        value = float(result)
    except (TypeError, ValueError) as error:
        raise Mistake(f"{what} must return a number, got {type(result).__name__}") from error
    if not np.isfinite(value) or value != int(value):
        raise Mistake(f"{what} returned {result!r}; {noun} is a whole number")
    return int(value)


def as_tuple(result: Any, length: int, what: str, description: str) -> tuple[Any, ...]:
    """``result`` as a tuple of ``length`` things; ``description`` names them for the learner,
    e.g. ``"a pair (output, weights)"``."""
    require_result(result, what)
    if not isinstance(result, tuple | list) or len(result) != length:
        raise Mistake(f"{what} must return {description}, got {type(result).__name__}")
    return tuple(result)


# --- Comparing with the right answer and with known wrong ones ---


def equal(got: Any, expected: Any, *, rtol: float = RTOL, atol: float = ATOL) -> bool:
    """Whether two results agree: same shape and, for numbers, equal within the tolerances
    (integers exactly)."""
    got, expected = np.asarray(got), np.asarray(expected)
    if got.shape != expected.shape:
        return False
    if got.dtype == np.bool_ or expected.dtype == np.bool_:
        return bool(np.array_equal(got, expected))
    if np.issubdtype(got.dtype, np.integer) and np.issubdtype(expected.dtype, np.integer):
        return bool(np.array_equal(got, expected))
    with np.errstate(all="ignore"):
        return bool(np.allclose(got, expected, rtol=rtol, atol=atol))


def assert_close(
    got: np.ndarray, expected: np.ndarray, what: str, *, rtol: float = RTOL, atol: float = ATOL
) -> None:
    """Raise "``what`` is off at index …: got …, expected …" unless ``got`` equals
    ``expected`` within the tolerances."""
    if equal(got, expected, rtol=rtol, atol=atol):
        return
    got, expected = np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if got.shape != expected.shape:
        raise Mistake(f"{what} has shape {got.shape}, expected {expected.shape}")
    index = np.unravel_index(np.argmax(np.abs(got - expected)), got.shape) if got.ndim else ()
    where = f" at index {tuple(int(i) for i in index)}" if got.ndim else ""
    raise Mistake(f"{what} is off{where}: got {got[index]:.6g}, expected {expected[index]:.6g}")


def require_unrounded(got: Any, expected: Any, what: str) -> None:
    """Raise a :class:`Mistake` when ``got`` is ``expected`` rounded to a few decimals (0 to
    5, where rounding changes it): a result rounded for printing."""
    for decimals in range(6):
        rounded = np.round(np.asarray(expected, dtype=np.float64), decimals)
        if not equal(rounded, expected) and equal(got, rounded):
            raise Mistake(
                f"{what} is rounded to {decimals} decimals: return the exact values, and "
                "round only where you print them"
            )


def match_known_mistakes(
    got: Any,
    expected: Any,
    mistakes: Iterable[tuple[Any, str]],
    what: str,
    *,
    rtol: float = RTOL,
    atol: float = ATOL,
    joiner: str = ": ",
) -> bool:
    """Compare ``got`` with the right answer and with a catalogue of known wrong ones.

    ``mistakes`` holds ``(wrong result, explanation)`` pairs: the results the usual slips give
    on this input. Returns True when ``got`` equals ``expected``; raises
    ``what + joiner + explanation`` for the first slip ``got`` equals (a slip whose result
    equals the right one here is skipped: it cannot be told apart); returns False when ``got``
    is wrong in a way the catalogue does not know, so that the caller says how it is off.
    Every comparison uses :func:`equal` with the same tolerances.
    """
    if equal(got, expected, rtol=rtol, atol=atol):
        return True
    for wrong, explanation in mistakes:
        if not equal(wrong, expected, rtol=rtol, atol=atol) and equal(
            got, wrong, rtol=rtol, atol=atol
        ):
            raise Mistake(f"{what}{joiner}{explanation}")
    return False
