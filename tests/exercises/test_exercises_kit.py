"""Tests of selfattn_lib.exercises._kit: the shared pieces of every checker give the standard
messages, and one tolerance policy decides what counts as equal."""

import warnings

import numpy as np
import pytest

from selfattn_lib.exercises import _kit as kit


def test_feedback_reads_as_a_verdict():
    assert repr(kit.Feedback(True, True, "Well done.")) == "✔ Correct. Well done."
    assert repr(kit.Feedback(False, False, "Go.")) == "○ Not attempted yet. Go."
    assert repr(kit.Feedback(False, True, "Off.")) == "✘ Not yet. Off."
    assert bool(kit.Feedback(True, True, "")) and not kit.Feedback(False, True, "")


def test_run_checks_turns_the_first_problem_into_feedback():
    assert kit.run_checks(lambda: "Praise.") == kit.Feedback(True, True, "Praise.")

    def stub():
        raise kit.NotAttempted("Write it.")

    def wrong():
        raise kit.Mistake("Off by one.")

    assert kit.run_checks(stub) == kit.Feedback(False, False, "Write it.")
    assert kit.run_checks(wrong) == kit.Feedback(False, True, "Off by one.")


def test_call_reports_a_stub_as_not_attempted_and_an_error_with_its_arguments():
    def stub(x):
        raise NotImplementedError

    with pytest.raises(kit.NotAttempted, match="Replace `raise NotImplementedError`"):
        kit.call(stub, 1)
    with pytest.raises(kit.Mistake, match=r"ZeroDivisionError.*an array of shape \(2,\), 0"):
        kit.call(lambda x, y: 1 / y, np.ones(2), 0)
    with pytest.raises(kit.Mistake, match="expected a function, got int"):
        kit.call(3)


def test_call_quietly_silences_numpys_warnings(recwarn):
    assert np.isnan(kit.call_quietly(lambda: np.float64(0) / np.float64(0)))
    assert not recwarn.list


def test_call_quietly_silences_runtime_warnings_raised_outside_numpys_errstate(recwarn):
    def warns_of_overflow():
        warnings.warn("overflow encountered in my own exp", RuntimeWarning, stacklevel=1)
        return 1.0

    assert kit.call_quietly(warns_of_overflow) == 1.0
    assert np.isnan(kit.call_quietly(np.mean, np.array([])))  # "Mean of empty slice"
    assert not recwarn.list
    with pytest.warns(UserWarning, match="not a runtime warning"):  # other kinds still show
        kit.call_quietly(warnings.warn, "not a runtime warning")
    with pytest.warns(RuntimeWarning):  # and only inside the call
        warnings.warn("after the call", RuntimeWarning, stacklevel=1)


def test_call_on_copy_catches_a_function_that_changes_its_argument():
    def in_place(scores):
        scores -= scores.max()
        return scores

    with pytest.raises(kit.Mistake, match="changed the array it was given"):
        kit.call_on_copy(in_place, np.array([1.0, 2.0]))
    assert np.array_equal(kit.call_on_copy(lambda s: s - 1, np.array([1.0])), [0.0])
    assert np.isnan(kit.call_on_copy(lambda s: s[0], np.array([np.nan])))  # NaN is unchanged


def test_call_on_copy_names_the_argument_and_its_out_of_place_form():
    def powers_in_place(weights, factor):
        np.power(weights, factor, out=weights)
        return weights

    with pytest.raises(kit.Mistake) as caught:
        kit.call_on_copy(
            powers_in_place,
            np.array([0.2, 0.8]),
            2.0,
            argument="weights",
            in_place="weights **= factor",
        )
    assert str(caught.value) == (
        "your function changed the array `weights` it was given (for example with "
        "`weights **= factor`): compute `weights ** factor` into a new array, so that the "
        "caller's weights stay as they were"
    )


def test_name_of_prefers_the_learners_name_and_falls_back_for_lambdas():
    def my_softmax(x):
        return x

    assert kit.name_of(my_softmax, "softmax") == "my_softmax"
    assert kit.name_of(lambda x: x, "softmax") == "softmax"
    assert kit.name_of(np.exp, "softmax") == "exp"


@pytest.mark.parametrize(
    ("read", "fragment"),
    [
        (lambda r: kit.as_array(r, "f(x)"), "f(x) returned None: did you forget the `return`"),
        (lambda r: kit.as_result_array(r, np.zeros(2), "f(x)"), "forget the `return`"),
        (lambda r: kit.as_bool_array(r, np.zeros(2, bool), "f(x)"), "forget the `return`"),
        (lambda r: kit.as_int_array(r, np.zeros(2, int), "f(x)"), "forget the `return`"),
        (lambda r: kit.as_whole_number(r, "f(x)"), "forget the `return`"),
        (lambda r: kit.as_tuple(r, 2, "f(x)", "a pair"), "forget the `return`"),
    ],
)
def test_every_reader_gives_the_same_message_for_a_forgotten_return(read, fragment):
    with pytest.raises(kit.Mistake, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        read(None)


def test_as_result_array_checks_shape_and_finiteness():
    assert kit.as_result_array([1, 2], np.zeros(2), "f").dtype == np.float64
    with pytest.raises(kit.Mistake, match=r"returned shape \(3,\), expected \(\) \(a single"):
        kit.as_result_array([1, 2, 3], np.zeros(()), "f")
    with pytest.raises(kit.Mistake, match="NaN"):
        kit.as_result_array([np.nan, 1], np.zeros(2), "f")
    with pytest.raises(kit.Mistake, match="infinity"):
        kit.as_result_array([np.inf, 1], np.zeros(2), "f")
    with pytest.raises(kit.Mistake, match="must return numbers, got str"):
        kit.as_result_array("ab", np.zeros(2), "f")


def test_readers_of_masks_token_ids_counts_and_tuples():
    with pytest.raises(kit.Mistake, match="must be boolean"):
        kit.as_bool_array(np.array([1, 0]), np.zeros(2, bool), "mask")
    with pytest.raises(kit.Mistake, match="only True and False"):
        kit.as_bool_array(np.array([2, 0]), np.zeros(2, bool), "mask")
    with pytest.raises(kit.Mistake, match="token ids are integers"):
        kit.as_int_array(np.array([1.0, 2.0]), np.zeros(2, int), "shift")
    assert kit.as_whole_number(np.float64(12.0), "n") == 12
    with pytest.raises(kit.Mistake, match="a length is a whole number"):
        kit.as_whole_number(12.5, "n", "a length")
    with pytest.raises(kit.Mistake, match="one whole number"):
        kit.as_whole_number(True, "n")
    with pytest.raises(kit.Mistake, match="must return a pair"):
        kit.as_tuple([1, 2, 3], 2, "f", "a pair")


def test_plain_reads_tensors_that_require_grad():
    torch = pytest.importorskip("torch")
    tensor = torch.ones(2, requires_grad=True) * 2
    assert np.array_equal(kit.as_array(tensor, "f"), [2.0, 2.0])


def test_one_tolerance_policy_and_exact_integers():
    assert kit.equal(1.0, 1.0 + 1e-9) and not kit.equal(1.0, 1.0 + 1e-4)
    assert not kit.equal(np.zeros(2), np.zeros(3))
    assert not kit.equal(63_082_496, 63_082_497)  # integers compare exactly
    assert kit.equal(np.array([True, False]), np.array([True, False]))
    with pytest.raises(kit.Mistake, match=r"is off at index \(1,\): got 3, expected 2"):
        kit.assert_close(np.array([1.0, 3.0]), np.array([1.0, 2.0]), "w")


def test_match_known_mistakes_names_the_slip_and_skips_slips_equal_to_the_answer():
    expected = np.array([1.0, 2.0])
    catalogue = [(np.array([1.0, 2.0]), "a harmless slip here"), (expected * 2, "doubled")]
    assert kit.match_known_mistakes(expected, expected, catalogue, "f") is True
    with pytest.raises(kit.Mistake, match="^f: doubled$"):
        kit.match_known_mistakes(expected * 2, expected, catalogue, "f")
    with pytest.raises(kit.Mistake, match="^f returned 4 doubled$"):
        kit.match_known_mistakes(4, 2, [(4, "doubled")], "f returned 4", joiner=" ")
    assert kit.match_known_mistakes(expected * 3, expected, catalogue, "f") is False


def test_feedback_html_shows_the_verdict_and_wraps_the_escaped_message():
    feedback = kit.Feedback(passed=False, attempted=True, message="use `x @ y`, not <x * y>")
    assert feedback._repr_html_() == (
        '<p class="checker-feedback"><strong>✘ Not yet.</strong> '
        "use <code>x @ y</code>, not &lt;x * y&gt;</p>"
    )
    unpaired = kit.Feedback(passed=True, attempted=True, message="a ` alone")
    assert unpaired._repr_html_().endswith("<strong>✔ Correct.</strong> a ` alone</p>")
    assert kit.Feedback(False, False, "x").verdict == "○ Not attempted yet."


def test_library_calls_sees_the_learners_calls_however_written():
    torch = pytest.importorskip("torch")
    from selfattn_lib.multihead import split_heads as cut

    def with_torch(x):
        return torch.tensor(x).sum().item()  # a function, then a tensor's methods

    def aliased(x):
        return cut(x, 2)

    x = np.ones((1, 2, 4))
    assert kit.library_calls(with_torch, (x,), kit.TORCH) == [
        "torch.tensor",
        "torch.Tensor.sum",
        "torch.Tensor.item",
    ]
    assert kit.library_calls(aliased, (x,), kit.COURSE_LIBRARY) == [
        "selfattn_lib.multihead.split_heads"
    ]
    # The library function handed over as the answer itself.
    assert kit.library_calls(cut, (x, 2), kit.COURSE_LIBRARY) == [
        "selfattn_lib.multihead.split_heads"
    ]


def test_library_calls_counts_only_what_the_learner_calls():
    from selfattn_lib.multihead import split_heads

    def numpy_only(x):
        return np.swapaxes(x.reshape(1, 2, 2, 2), 1, 2)

    x = np.ones((1, 2, 4))
    assert kit.library_calls(numpy_only, (x,), kit.COURSE_LIBRARY) == []
    # split_heads calls the library's own validation: that is not the learner's doing.
    assert kit.library_calls(split_heads, (x, 2), ("selfattn_lib._validation",)) == []


def test_require_own_code_names_the_calls_and_the_rule():
    from selfattn_lib.softmax import softmax

    with pytest.raises(kit.Mistake, match=r"f gives the right result, but it calls `selfattn"):
        kit.require_own_code(lambda z: softmax(z), (np.ones(3),), kit.COURSE_LIBRARY, "f", "no")
    kit.require_own_code(lambda z: z, (np.ones(3),), kit.COURSE_LIBRARY, "f", "no")


@pytest.mark.parametrize(
    ("product", "expected"),
    [
        (lambda x, w: x @ w, 5 * 4 * 3),  # every row of x: T · D · d_k
        (lambda x, w: x[2] @ w, 4 * 3),  # one row: D · d_k
        (lambda x, w: (w.T @ x[2:3].T).T, 4 * 3),  # transposed
        (lambda x, w: np.einsum("d,de->e", x[2], w), 4 * 3),
        (lambda x, w: np.dot(x, w / 2.0), 5 * 4 * 3),  # scaled first: still counted
        (lambda x, w: (x[2][:, None] * w).sum(axis=0), 4 * 3),  # broadcasting
        (lambda x, w: x.sum() + w.sum(), 0),
        # Methods and conversions (review round 3 of issue 27: x.dot(w) and np.asarray(w)
        # projected every row uncounted).
        (lambda x, w: x.dot(w)[2], 5 * 4 * 3),
        (lambda x, w: w.T.dot(x[2]), 4 * 3),
        (lambda x, w: np.asarray(x).dot(w)[2], 5 * 4 * 3),
        (lambda x, w: (x @ np.asarray(w))[2], 5 * 4 * 3),
        (lambda x, w: (x @ np.array(w, dtype=np.float32))[2], 5 * 4 * 3),
        (lambda x, w: (x @ np.copy(w))[2], 5 * 4 * 3),
        (lambda x, w: (x @ np.ascontiguousarray(w.T).T)[2], 5 * 4 * 3),
        (lambda x, w: (x @ w.astype(np.float32))[2], 5 * 4 * 3),
        (lambda x, w: np.matmul(x, w)[2], 5 * 4 * 3),
        (lambda x, w: np.tensordot(x, w, axes=1)[2], 5 * 4 * 3),
        (lambda x, w: np.einsum("td,dk->tk", x, w, optimize=True)[2], 5 * 4 * 3),  # once
        (lambda x, w: (x @ np.concatenate([w[:2], w[2:]]))[2], 5 * 4 * 3),
        (lambda x, w: np.array([row @ w for row in x])[2], 5 * 4 * 3),
        (lambda x, w: np.vdot(x[2], w[:, 0]), 4),
        (lambda x, w: x @ np.array(w.tolist()), 0),  # numbers taken out: not followed
    ],
)
def test_multiplications_with_counts_the_products_with_one_argument(product, expected):
    x, w = np.ones((5, 4)), np.ones((4, 3))
    assert kit.multiplications_with(product, (x, w), index=1, depth=4) == expected


@pytest.mark.parametrize("name", ["vecdot", "matvec"])
def test_multiplications_with_counts_numpy_2s_vector_products(name):
    product = getattr(np, name, None)
    if product is None:
        pytest.skip(f"np.{name} is new in NumPy 2")
    x, w = np.ones((5, 4)), np.ones((4, 3))
    if name == "vecdot":
        answer = kit.multiplications_with(
            lambda x, w: product(x[2][:, None], w, axis=0), (x, w), 1, 4
        )
    else:
        answer = kit.multiplications_with(lambda x, w: product(w.T, x[2]), (x, w), 1, 4)
    assert answer == 4 * 3


def test_multiplications_with_keeps_the_largest_product_and_numpys_conversions():
    x, w = np.ones((5, 4)), np.ones((4, 3))
    asarray = np.asarray

    def two_products(x, w):
        return x[:2] @ w, x[2] @ np.asarray(w)

    counted = kit.multiplications_with(two_products, (x, w), index=1, depth=4)
    assert (counted, counted.largest) == (2 * 4 * 3 + 4 * 3, 2 * 4 * 3)
    # After the count NumPy's conversions are its own again, and give plain arrays.
    assert np.asarray is asarray
    assert type(np.asarray(np.ones(2).view(kit.CountedArray))) is np.ndarray


def test_switching_off_the_checkers_watch_is_a_mistake():
    import sys

    from selfattn_lib.softmax import softmax

    def unwatched(z):
        sys.setprofile(None)
        sys.settrace(None)
        return softmax(z)

    with pytest.raises(kit.Mistake, match="changed the Python tracer or profiler"):
        kit.library_calls(unwatched, (np.ones(3),), kit.COURSE_LIBRARY)
    with pytest.raises(kit.Mistake, match="changed the Python tracer or profiler"):
        kit.python_lines(unwatched, np.ones(3))


def kit_row_lengths(x):
    return np.linalg.norm(x, axis=-1)


@pytest.mark.parametrize(
    ("loop", "count"),
    [
        (lambda x: np.array([np.linalg.norm(row) for row in x]), "lines"),
        (lambda x: np.array(list(map(np.linalg.norm, x))), "rows"),  # NumPy's function, no line
        (lambda x: np.apply_along_axis(np.linalg.norm, 1, x), "rows"),  # NumPy's own loop
        (lambda x: np.array(list(map(np.ones(x.shape[-1]).__matmul__, x))), "rows"),  # built-in
        (lambda x: np.vectorize(np.dot, signature="(d),(d)->()")(x, x), "rows"),
        (lambda x: np.sqrt(sum(x[:, d] ** 2 for d in range(x.shape[1]))), "lines"),  # over D
        (lambda x: np.array(list(map(np.linalg.norm, x.tolist()))), "calls"),  # a copy, a list
        # Over a plain view of the arrays: NumPy's Python functions, called from the
        # learner's map or from NumPy's own loops, still count.
        (lambda x: np.array(list(map(np.linalg.norm, np.asarray(x)))), "calls"),
        (lambda x: np.apply_along_axis(sum, 1, np.asarray(x)), "calls"),
        (lambda x: np.vectorize(np.dot, signature="(d),(d)->()")(*[np.asarray(x)] * 2), "calls"),
    ],
)
def test_the_loop_detector_sees_loops_that_run_none_of_the_learners_lines(loop, count):
    small, large = (np.ones((3, 4)),), (np.ones((12, 8)),)
    counts_small, counts_large = kit.loop_counts(loop, *small), kit.loop_counts(loop, *large)
    assert getattr(counts_large, count) > getattr(counts_small, count)
    with pytest.raises(kit.Mistake, match="a loop runs once per item"):
        kit.require_no_python_loop(loop, small, large, "f")


@pytest.mark.parametrize(
    "vectorised",
    [
        kit_row_lengths,
        lambda x: np.sqrt(np.einsum("td,td->t", x, x)),
        lambda x: np.sqrt((x * x) @ np.ones(x.shape[-1])),
        lambda x: np.hypot.reduce(x, axis=-1),
        lambda x: [np.linalg.norm(part, axis=-1) for part in (x, x)][0],  # a loop of fixed size
        lambda x: np.einsum("id,jd->ij", x, x, optimize=True),
        lambda x: np.einsum("td,td->t", x, x, optimize="greedy"),
    ],
)
def test_the_loop_detector_counts_the_same_for_vectorised_code(vectorised):
    small, large = (np.ones((3, 4)),), (np.ones((12, 8)),)
    kit.require_no_python_loop(vectorised, small, large, "f")


def test_the_loop_detector_leaves_the_garbage_collector_and_the_arrays_as_they_were():
    import gc

    x = np.ones((3, 4))
    kit.require_no_python_loop(kit_row_lengths, (x,), (np.ones((6, 4)),), "f")
    assert gc.isenabled() and type(x) is np.ndarray
    seen = []
    kit.loop_counts(lambda x: seen.append(x), x)
    assert isinstance(seen[0], np.ndarray) and np.array_equal(seen[0], x)


def test_qualified_names_without_co_qualname_as_on_python_3_10():
    import sys
    from types import SimpleNamespace

    class Code:  # a code object as Python 3.10 has it: no co_qualname
        def __init__(self, code):
            self._code = code

        def __getattr__(self, name):
            if name == "co_qualname":
                raise AttributeError(name)
            return getattr(self._code, name)

    class Owner:
        def method(self):
            return sys._getframe()

        @classmethod
        def maker(cls):
            return sys._getframe()

    def function():
        return sys._getframe()

    frames = (Owner().method(), Owner.maker(), function())
    for frame, expected in zip(frames, ("Owner.method", "Owner.maker", "function"), strict=True):
        as_on_310 = SimpleNamespace(f_code=Code(frame.f_code), f_locals=frame.f_locals)
        assert kit._code_qualname(as_on_310).endswith(expected)
        assert kit._code_qualname(frame).endswith(expected)  # on this Python, whichever it is
        if hasattr(frame.f_code, "co_qualname"):  # Python 3.11 on
            assert kit._code_qualname(frame) == frame.f_code.co_qualname
    assert (
        kit._code_qualname(SimpleNamespace(f_code=Code(function().f_code), f_locals={}))
        == "function"
    )


def test_require_unrounded_names_a_result_rounded_for_printing():
    expected = np.array([0.123456, 2.5])
    with pytest.raises(kit.Mistake, match="rounded to 2 decimals"):
        kit.require_unrounded(expected.round(2), expected, "f")
    kit.require_unrounded(expected, expected, "f")
    kit.require_unrounded(np.array([1.0, 2.0]), np.array([1.0, 2.0]), "f")  # nothing to round


@pytest.mark.parametrize(
    "loop",
    [
        lambda x: np.array(list(map(sum, x.tolist()))),
        lambda x: np.array(list(map(np.ones(x.shape[-1]).dot, np.asarray(x)))),
        lambda x: np.array(list(map(sum, np.asarray(x) * 2))),
    ],
)
def test_the_loop_detector_does_not_see_a_built_in_looping_over_a_copy_or_plain_view(loop):
    # The limit the kit's docstring and chapter 1's prompt state: a built-in mapped over a
    # list, or over a plain ndarray view (np.asarray drops the view that counts rows), runs
    # in C from start to end and takes no row of the arrays given.
    small, large = kit.loop_counts(loop, np.ones((3, 4))), kit.loop_counts(loop, np.ones((12, 8)))
    assert small == large


def test_the_loop_detector_leaves_out_the_calls_numpy_makes_on_its_own():
    # np.einsum(..., optimize=True) parses each new pair of shapes in Python and caches the
    # result, so the first call on the larger input makes more calls inside NumPy, with no loop
    # over the items: they must not count.
    import sys

    einsum = lambda x, y: np.einsum("id,jd->ij", x, y, optimize=True)  # noqa: E731
    small, large = (np.ones((3, 4)), np.ones((5, 4))), (np.ones((12, 8)), np.ones((20, 8)))
    parse = getattr(getattr(np, "_core", None), "einsumfunc", None)
    parse = getattr(parse, "_parse_eq_to_batch_matmul", None)
    if not hasattr(parse, "cache_clear"):
        pytest.skip("this NumPy's einsum has no cached parser")

    def every_call(*arrays):
        count = [0]

        def profiler(frame, event, arg):
            count[0] += event in ("call", "c_call")

        watched = [array.view(kit._RowWatchedArray) for array in arrays]
        sys.setprofile(profiler)
        try:
            einsum(*watched)
        finally:
            sys.setprofile(None)
        return count[0]

    parse.cache_clear()
    first, again = every_call(*large), every_call(*large)
    assert first > again  # the parse, once per pair of shapes
    parse.cache_clear()
    kit.require_no_python_loop(einsum, small, large, "f")
