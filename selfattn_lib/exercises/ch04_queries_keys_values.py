"""Checkers for the exercises of chapter 4, queries, keys and values."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from selfattn_lib import attention, embeddings, softmax
from selfattn_lib.exercises import _kit as kit

# The relative tolerance of these checkers: an answer computed in float32 (7 significant
# digits) from scores up to about 50 is off by a few parts in a million (measured: 1.2e-6 in
# the cross-attention checker, beyond kit.RTOL), and every known mistake by far more.
_CH4_RTOL = 1e-5
_CH4_ATOL = 1e-9

_CH4_SHAPE_HINT = (
    ". Shapes: x is (T, D) and each projection is (D, d_k) or (D, d_v), so the projection is "
    "x @ w (W @ X or a transposed W do not fit)"
)


_CH4_CROSS_SHAPE_HINT = (
    ". Shapes: x_q is (T_q, D), x_kv is (T_k, D) and each projection (D, d_k) or (D, d_v), so "
    "a projection is x @ w; the weights (T_q, T_k) then multiply values of shape (T_k, d_v), "
    "which come from x_kv"
)


def _ch4_call(
    function: Callable[..., Any],
    what: str,
    arguments: dict[str, Any],
    hint: str = _CH4_SHAPE_HINT,
) -> Any:
    """Call the learner's function with copies of ``arguments`` (the prompt's names and their
    values): a shape error from ``@`` gets ``hint`` about the shapes, one from broadcasting a
    hint about ``keepdims``, and an argument changed in place is named."""
    given = {
        name: value.copy() if isinstance(value, np.ndarray) else value
        for name, value in arguments.items()
    }
    try:
        result = kit.call_quietly(function, *given.values())
    except kit.Mistake as mistake:
        text = str(mistake)
        if "broadcast" in text:
            raise kit.Mistake(
                f"{text}. A maximum or a sum over axis=-1 drops that axis, (T_q, T_k) -> "
                "(T_q,): keep it with keepdims=True, (T_q, 1), so that it lines up with "
                "the rows"
            ) from mistake
        if "matmul" in text or "not aligned" in text or "shapes" in text:
            raise kit.Mistake(text + hint) from mistake
        raise
    for name, value in arguments.items():
        if isinstance(value, np.ndarray) and not np.array_equal(given[name], value):
            raise kit.Mistake(
                f"{what} changed its argument `{name}` in place, so the caller's array is no "
                f"longer what it was: compute into a new array (`{name} / c`, not "
                f"`{name} /= c`)"
            )
    return result


def _ch4_output_and_weights(
    result: Any, what: str, output_shape: tuple[int, ...], weights_shape: tuple[int, ...]
) -> tuple[Any, Any]:
    """The pair ``(output, weights)`` the learner returned; the pair the other way round is
    named (the two shapes differ in every check)."""
    if not isinstance(result, tuple | list) or len(result) != 2:
        raise kit.Mistake(
            f"{what} must return a pair (output, weights), got {type(result).__name__}"
        )
    first, second = result
    if (
        kit.values_like(first, np.empty(weights_shape)) is not None
        and kit.values_like(second, np.empty(output_shape)) is not None
    ):
        raise kit.Mistake(
            f"{what} returned (weights, output): return them in the order (output, weights), "
            "like the library's attention functions"
        )
    return result[0], result[1]


def _ch4_attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float) -> tuple:
    return attention.scaled_dot_product_attention(q, k, v, scale=scale)


def _ch4_one_query_case(seed: int, t: int = 5) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(t, 4)).round(1)  # (T, D) = (5, 4)
    w_q = rng.normal(scale=1.5, size=(4, 3)).round(1)  # (D, D_k) = (4, 3)
    w_k = rng.normal(scale=1.5, size=(4, 3)).round(1)  # (D, D_k)
    w_v = rng.normal(size=(4, 2)).round(1)  # (D, D_v) = (4, 2)
    return x, w_q, w_k, w_v


def check_one_query_attention(one_query_attention: Callable[..., Any]) -> kit.Feedback:
    """Check the six steps for one query, from the tokens and the projections (ch. 4, ex. 1).

    Expected signature: ``one_query_attention(x, i, w_q, w_k, w_v) -> (output, weights)`` with
    ``i`` the index of the query token. ``weights`` holds ``softmax(q_i · k_j / √d_k)`` over the
    keys ``j``, ``output`` is the weighted sum of the value vectors.

    Shapes
    ------
    ``x``: ``(T, D)``, ``w_q``, ``w_k``: ``(D, D_k)``, ``w_v``: ``(D, D_v)`` → ``output``:
    ``(D_v,)``, ``weights``: ``(T_k,)`` with ``T_k = T``.

    Examples
    --------
    The answer is a pair, so a function that forgets its ``return`` is told what to return:

    >>> check_one_query_attention(lambda x, i, w_q, w_k, w_v: None)
    ✘ Not yet. one_query_attention(x, 0, w_q, w_k, w_v) must return a pair (output, weights),
    got NoneType
    """
    name = kit.name_of(one_query_attention, "one_query_attention")

    def check_one(seed: int, i: int) -> None:
        x, w_q, w_k, w_v = _ch4_one_query_case(seed)
        what = f"{name}(x, {i}, w_q, w_k, w_v)"
        result = _ch4_call(
            one_query_attention, what, {"x": x, "i": i, "w_q": w_q, "w_k": w_k, "w_v": w_v}
        )
        q, k, v = x @ w_q, x @ w_k, x @ w_v  # (T, D_k), (T, D_k), (T, D_v)
        expected_output, expected = _ch4_attend(q, k, v, 1 / np.sqrt(3))
        expected_output, expected = expected_output[i], expected[i]
        output, weights = _ch4_output_and_weights(
            result, what, expected_output.shape, expected.shape
        )
        weights = kit.as_result_array(weights, expected, f"the weights of {what}")
        if not kit.equal(weights, expected, rtol=_CH4_RTOL, atol=_CH4_ATOL):
            d_k, d, t = 3, 4, len(x)
            wrong_scales = (
                (1.0, "did not divide the dot products by √d_k (here √3)"),
                (1 / d_k, "divided the dot products by d_k = 3 instead of √d_k = √3"),
                (1 / np.sqrt(d), "divided by √D = √4 (the tokens' dimension) instead of √d_k = √3"),
                (1 / np.sqrt(t), "divided by √T (the number of tokens) instead of √d_k = √3"),
            )
            for scale, explanation in wrong_scales:
                if np.allclose(weights, _ch4_attend(q, k, v, scale)[1][i]):
                    raise kit.Mistake(f"the weights of {what} are off: you {explanation}")
            # softmax_j(q_j · k_i): swapped projections and a softmax down column i of the
            # whole matrix give the same numbers; the work done with w_k tells them apart.
            if np.allclose(weights, softmax.softmax(k[i] @ q.T / np.sqrt(d_k))):
                with_w_k = kit.multiplications_with(
                    one_query_attention, (x, i, w_q, w_k, w_v), index=3, depth=d
                )
                if with_w_k <= d * d_k:
                    raise kit.Mistake(
                        f"the weights of {what} use W_K for the query and W_Q for the keys: "
                        "the query is x_i @ w_q, the keys are x @ w_k"
                    )
                raise kit.Mistake(
                    f"the weights of {what} score key {i} against every query, q_j · k_{i}, "
                    f"instead of query {i} against every key: either the softmax ran down "
                    f"column {i} of the score matrix (over the queries, axis 0) or w_q and "
                    f"w_k are swapped. Take the softmax of query {i}'s own row, over the keys"
                )
            without_self = k @ q[i] / np.sqrt(d_k)
            without_self[i] = -np.inf
            if np.allclose(weights, softmax.softmax(without_self)):
                raise kit.Mistake(
                    f"the weights of {what} leave token {i} out: query {i} is scored against "
                    "every key, its own included"
                )
            if np.allclose(weights, softmax.softmax(x @ x[i] / np.sqrt(d_k))) or np.allclose(
                weights, softmax.softmax(x @ x[i])
            ):
                raise kit.Mistake(
                    f"the weights of {what} score the token vectors x_i · x_j, as in chapter "
                    "3: score the query x_i @ w_q against the keys x_j @ w_k"
                )
            if np.allclose(weights, k @ q[i] / np.sqrt(d_k)):
                raise kit.Mistake(
                    f"the weights of {what} are the scores themselves, q·k_j/√d_k: apply "
                    "softmax to turn them into weights"
                )
            if not np.isclose(weights.sum(), 1.0):
                raise kit.Mistake(f"the weights of {what} sum to {weights.sum():.6g}, not 1")
            kit.assert_close(
                weights, expected, f"the weights of {what}", rtol=_CH4_RTOL, atol=_CH4_ATOL
            )
        for_x = kit.values_like(output, weights @ x)  # (D,): the token vectors weighted
        if for_x is not None and np.allclose(for_x, weights @ x):
            raise kit.Mistake(
                f"the output of {what} has {x.shape[1]} numbers, one per feature of a token: it "
                "weights the token vectors x_j. Weight the values, v_j = x_j @ w_v"
            )
        for_k = kit.values_like(output, weights @ k)  # (D_k,): the keys weighted
        if for_k is not None and np.allclose(for_k, weights @ k):
            raise kit.Mistake(
                f"the output of {what} weights the keys: the output is the weighted sum of "
                "the values, v_j = x_j @ w_v"
            )
        output = kit.as_result_array(output, expected_output, f"the output of {what}")
        if kit.equal(output, expected_output, rtol=_CH4_RTOL, atol=_CH4_ATOL):
            return
        if any(np.allclose(output, ignored) for ignored in (v.sum(axis=0), v.mean(axis=0), v[i])):
            raise kit.Mistake(f"the output of {what} ignores the weights: sum weights[j] * v_j")
        kit.assert_close(
            output, expected_output, f"the output of {what}", rtol=_CH4_RTOL, atol=_CH4_ATOL
        )

    def checks() -> str:
        for seed, i in ((40, 0), (41, 3), (42, 4)):
            check_one(seed, i)
        # The work, by behaviour: the multiplications made with W_Q (one query: D · d_k).
        x, w_q, w_k, w_v = _ch4_one_query_case(40)
        n_tokens, (d, d_k) = len(x), w_q.shape
        counted = kit.multiplications_with(
            one_query_attention, (x, 2, w_q, w_k, w_v), index=2, depth=d
        )
        one_query = d * d_k
        if counted > one_query:
            right = (
                f"the result is right, but the checker counts {counted} multiplications with "
                f"w_q in {name}(x, 2, w_q, w_k, w_v), at D = {d} for each number a product "
                f"with w_q gives, where query 2's own vector, x[2] @ w_q, takes D · d_k = "
                f"{one_query}"
            )
            if counted == n_tokens * one_query:
                raise kit.Mistake(
                    f"{right}: {counted} is the work of projecting all {n_tokens} tokens (every "
                    "query, Q = X W_Q). Project only the query you need"
                )
            if counted % one_query == 0:
                raise kit.Mistake(
                    f"{right}: {counted} is the work of {counted // one_query} query vectors. "
                    "Compute query 2's once, and no other"
                )
            raise kit.Mistake(
                f"{right}, and your other products with w_q (such as w_q @ w_k.T, whose "
                f"{d} × {d} numbers count {d} each) are work the prompt does not ask for: "
                "compute that one query vector, then score the keys with it"
            )
        return (
            "All six steps are right: project, take the dot product with every key, divide by "
            "√d_k, softmax, weight the values, sum — and you projected only the query you "
            "needed."
        )

    return kit.run_checks(checks)


# The course's running example, "the cat sat because it was tired": (T, D) = (7, 8).
_CH4_TOKENS = embeddings.tokenize(embeddings.RUNNING_EXAMPLE)
_CH4_IT, _CH4_BECAUSE, _CH4_CAT = (_CH4_TOKENS.index(w) for w in ("it", "because", "cat"))


def check_design_projections(design_projections: Callable[[], Any]) -> kit.Feedback:
    """Check projections that tell *it* from *because* (chapter 4, exercise 3).

    Expected signature: ``design_projections() -> (w_q, w_k)``, two projections with the same
    ``d_k >= 1`` of the learner's choice. With the vectors of the running sentence "the cat sat
    because it was tired" (``embeddings.embed``) as the rows of ``X``, the weights
    ``softmax(X w_q (X w_k)ᵀ / √d_k)`` must give *it* a weight of at least 0.9 on *cat*, and
    *because* a weight of at most 0.5 on *cat*.

    Shapes
    ------
    no arguments → ``w_q``, ``w_k``: ``(D, D_k)`` with ``D = 8``; ``X``: ``(T, D) = (7, 8)`` and
    its weights ``(T_q, T_k) = (7, 7)``.

    Examples
    --------
    The answer is a pair, so a function that forgets its ``return`` is told what to return:

    >>> check_design_projections(lambda: None)
    ✘ Not yet. design_projections() must return a pair (w_q, w_k)
    """
    name = kit.name_of(design_projections, "design_projections")
    x = embeddings.embed(_CH4_TOKENS)  # (T, D) = (7, 8)
    n_features = x.shape[1]

    def as_matrix(value: Any, label: str) -> np.ndarray:
        try:
            matrix = np.asarray(kit.plain(value), dtype=np.float64)
        except (TypeError, ValueError, RuntimeError) as error:
            raise kit.Mistake(f"{label} must be a matrix of numbers") from error
        if matrix.ndim != 2:
            raise kit.Mistake(f"{label} must be a matrix (D, d_k), got shape {matrix.shape}")
        if not np.isfinite(matrix).all():
            raise kit.Mistake(f"{label} contains NaN or infinity")
        if matrix.shape[0] != n_features:
            flipped = " (it looks transposed)" if matrix.shape[1] == n_features else ""
            raise kit.Mistake(
                f"{label} has shape {matrix.shape}{flipped}: it maps a token of "
                f"D = {n_features} features to d_k numbers, so it needs {n_features} rows, "
                f"shape ({n_features}, d_k)"
            )
        return matrix

    def row(weights: np.ndarray) -> str:
        return ", ".join(f"{word} {w:.3f}" for word, w in zip(_CH4_TOKENS, weights, strict=True))

    def checks() -> str:
        result = kit.call(design_projections)
        if not isinstance(result, tuple | list) or len(result) != 2:
            raise kit.Mistake(f"{name}() must return a pair (w_q, w_k)")
        w_q = as_matrix(result[0], f"the w_q of {name}()")
        w_k = as_matrix(result[1], f"the w_k of {name}()")
        if w_q.shape[1] != w_k.shape[1]:
            raise kit.Mistake(
                f"w_q has {w_q.shape[1]} columns and w_k has {w_k.shape[1]}: queries and keys "
                "must have the same dimension d_k, or their dot products are undefined"
            )
        if w_q.shape[1] == 0:
            raise kit.Mistake(
                f"w_q and w_k of {name}() have no columns: d_k must be at least 1, or every "
                "query and key is empty and every score 0"
            )
        q, k = x @ w_q, x @ w_k  # (T, D_k) each
        try:
            weights = attention.scaled_dot_product_attention(q, k, k)[1]  # (T, T)
        except ValueError as error:  # scores beyond the range of float64
            largest = max(np.abs(w_q).max(), np.abs(w_k).max())
            raise kit.Mistake(
                f"the scores q·k/√d_k of your projections do not fit in a float64 (your "
                f"largest entry is {largest:.3g}): use smaller entries. A "
                "score a few units above its rivals is enough for a weight of 0.9"
            ) from error
        on_it, on_because = weights[_CH4_IT, _CH4_CAT], weights[_CH4_BECAUSE, _CH4_CAT]
        if on_because > 0.5 and np.allclose(q[_CH4_IT], q[_CH4_BECAUSE]):
            raise kit.Mistake(
                f"'it' and 'because' get the same query, so the same weights ({on_it:.3f} on "
                "'cat'): your w_q reads only features the two words share. Compare their "
                "vectors feature by feature and build the query from the one that differs"
            )
        if on_it < 0.9:
            favourite = _CH4_TOKENS[int(np.argmax(weights[_CH4_IT]))]
            raise kit.Mistake(
                f"the weights of 'it' are ({row(weights[_CH4_IT])}): 'cat' gets {on_it:.3f}, "
                f"not 0.9 ('it' attends most to '{favourite}'). Make the score of 'cat', "
                "q_it · k_cat / √d_k, a few units larger than the other scores of 'it'"
            )
        if on_because > 0.5:
            raise kit.Mistake(
                f"'it' puts {on_it:.3f} on 'cat', but 'because' puts {on_because:.3f} there, "
                "not at most 0.5: the query of 'because' still asks for 'cat'. Build the "
                "query from a feature that 'it' has and 'because' has not"
            )
        return (
            f"'it' puts {on_it:.3f} of its weight on 'cat', 'because' only {on_because:.3f}: "
            "your query reads the animal feature, the one in which the two words differ."
        )

    return kit.run_checks(checks)


def check_cross_attention(cross_attention: Callable[..., Any]) -> kit.Feedback:
    """Check cross-attention with T_q ≠ T_k (chapter 4, exercise 2).

    Expected signature: ``cross_attention(x_q, x_kv, w_q, w_k, w_v) -> (output, weights)``:
    queries from ``x_q``, keys and values from ``x_kv``; ``weights`` is ``softmax(Q Kᵀ / √d_k)``
    over the keys and ``output`` the weighted sum of the values.

    Shapes
    ------
    ``x_q``: ``(T_q, D)``, ``x_kv``: ``(T_k, D)``, ``w_q``, ``w_k``: ``(D, D_k)``, ``w_v``:
    ``(D, D_v)`` → ``output``: ``(T_q, D_v)``, ``weights``: ``(T_q, T_k)``.

    Examples
    --------
    The answer is a pair, so a function that forgets its ``return`` is told what to return:

    >>> check_cross_attention(lambda x_q, x_kv, w_q, w_k, w_v: None)
    ✘ Not yet. cross_attention(x_q of shape (2, 4), x_kv of shape (5, 4), ...) must return a
    pair (output, weights), got NoneType
    """
    name = kit.name_of(cross_attention, "cross_attention")

    def check_one(seed: int, t_q: int) -> None:
        x_kv, w_q, w_k, w_v = _ch4_one_query_case(seed, t=5)  # T_k = 5
        x_q = np.random.default_rng(seed + 100).normal(size=(t_q, 4)).round(1)  # (T_q, D)
        what = f"{name}(x_q of shape {x_q.shape}, x_kv of shape {x_kv.shape}, ...)"
        result = _ch4_call(
            cross_attention,
            what,
            {"x_q": x_q, "x_kv": x_kv, "w_q": w_q, "w_k": w_k, "w_v": w_v},
            hint=_CH4_CROSS_SHAPE_HINT,
        )
        q, k, v = x_q @ w_q, x_kv @ w_k, x_kv @ w_v
        d_k, t_k = w_q.shape[1], len(x_kv)
        expected_output, expected = _ch4_attend(q, k, v, 1 / np.sqrt(d_k))
        output, weights = _ch4_output_and_weights(
            result, what, expected_output.shape, expected.shape
        )
        got = kit.as_array(weights, f"the weights of {what}")
        if got.shape != expected.shape:
            roles_swapped = _ch4_attend(x_kv @ w_q, x_q @ w_k, x_q @ w_v, 1 / np.sqrt(d_k))[1]
            if got.shape == roles_swapped.shape and np.allclose(got, roles_swapped):
                raise kit.Mistake(
                    f"the weights of {what} have shape {got.shape} = (T_k, T_q): the queries "
                    "were made from x_kv and the keys from x_q. The queries come from x_q, "
                    "the keys and values from x_kv"
                )
            if got.shape == (t_q, t_q):
                raise kit.Mistake(
                    f"the weights of {what} have shape {got.shape} = (T_q, T_q): the keys (and "
                    "values) must come from x_kv, giving (T_q, T_k)"
                )
            if got.shape == (t_k, t_k):
                raise kit.Mistake(
                    f"the weights of {what} have shape {got.shape} = (T_k, T_k): the queries "
                    "must come from x_q, giving (T_q, T_k)"
                )
            if got.shape == expected.shape[::-1]:
                raise kit.Mistake(
                    f"the weights of {what} have shape {got.shape} = (T_k, T_q): one row per "
                    "QUERY is needed, scores q @ k.T / √d_k of shape (T_q, T_k)"
                )
        got = kit.as_result_array(weights, expected, f"the weights of {what}")
        if not kit.equal(got, expected, rtol=_CH4_RTOL, atol=_CH4_ATOL):
            if np.allclose(got, softmax.softmax(q @ k.T / np.sqrt(d_k), axis=0)):
                raise kit.Mistake(
                    f"the weights of {what} have columns summing to 1: take the softmax over "
                    "the keys (axis=-1), one row per query"
                )
            wrong_scales = (
                (1.0, "divide the dot products by √d_k"),
                (1 / d_k, f"divide the dot products by √d_k = √{d_k}, not by d_k = {d_k}"),
                (
                    1 / np.sqrt(x_q.shape[1]),
                    f"divide by √d_k = √{d_k}, not by √D (the tokens' dimension)",
                ),
                (1 / np.sqrt(t_k), f"divide by √d_k = √{d_k}, not by √T_k (the number of keys)"),
                (
                    1 / np.sqrt(t_q),
                    f"divide by √d_k = √{d_k}, not by √T_q (the number of queries)",
                ),
            )
            for scale, explanation in wrong_scales:
                if not np.isclose(scale, 1 / np.sqrt(d_k)) and np.allclose(
                    got, _ch4_attend(q, k, v, scale)[1]
                ):  # (√T_q = √d_k when T_q = 3: that scale is right there)
                    raise kit.Mistake(f"the weights of {what} are off: {explanation}")
            if np.allclose(got, softmax.softmax((x_q @ w_k) @ (x_kv @ w_q).T / np.sqrt(d_k))):
                raise kit.Mistake(
                    f"the weights of {what} use w_k for the queries and w_q for the keys: "
                    "the queries are x_q @ w_q, the keys x_kv @ w_k"
                )
            unprojected = x_q @ x_kv.T  # (T_q, T_k): the token vectors scored directly
            if any(
                np.allclose(got, softmax.softmax(unprojected / divisor))
                for divisor in (1.0, np.sqrt(d_k), np.sqrt(x_q.shape[1]))
            ):
                raise kit.Mistake(
                    f"the weights of {what} score the token vectors, x_q @ x_kv.T: project "
                    "them first, queries x_q @ w_q and keys x_kv @ w_k"
                )
            if np.allclose(got, q @ k.T / np.sqrt(d_k)):
                raise kit.Mistake(
                    f"the weights of {what} are the scores themselves, q @ k.T / √d_k: apply "
                    "softmax to each row to turn them into weights"
                )
            if not np.allclose(got.sum(axis=-1), 1.0):
                together = " (the whole matrix sums to one)" if np.isclose(got.sum(), 1.0) else ""
                raise kit.Mistake(
                    f"the rows of the weights of {what} do not sum to one{together}: normalise "
                    "each query's row on its own, with axis=-1 and keepdims=True"
                )
            kit.assert_close(
                got, expected, f"the weights of {what}", rtol=_CH4_RTOL, atol=_CH4_ATOL
            )
        for wrong_values, explanation in (
            (k, "the keys x_kv @ w_k"),
            (x_kv, "the token vectors x_kv themselves"),
        ):
            values = kit.values_like(output, got @ wrong_values)
            if values is not None and np.allclose(values, got @ wrong_values):
                raise kit.Mistake(
                    f"the output of {what} weights {explanation}: the values are x_kv @ w_v"
                )
        output = kit.as_result_array(output, expected_output, f"the output of {what}")
        kit.assert_close(
            output, expected_output, f"the output of {what}", rtol=_CH4_RTOL, atol=_CH4_ATOL
        )

    def checks() -> str:
        for seed, t_q in ((50, 2), (51, 3)):
            check_one(seed, t_q)
        x_kv, w_q, w_k, w_v = _ch4_one_query_case(50, t=5)
        kit.require_own_code(
            cross_attention,
            (x_kv[:2], x_kv, w_q, w_k, w_v),
            (*kit.COURSE_LIBRARY, *kit.TORCH, "scipy"),
            name,
            "the exercise asks for plain NumPy, with a softmax of your own",
        )
        return (
            "Right: queries from one sequence, keys and values from the other; the weights "
            "are (T_q, T_k) and the output (T_q, d_v)."
        )

    return kit.run_checks(checks)
