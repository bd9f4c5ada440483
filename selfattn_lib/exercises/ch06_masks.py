"""Checkers for the exercises of chapter 6, masks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from selfattn_lib import attention, softmax
from selfattn_lib.exercises import _kit as kit


def check_look_back_mask(look_back_mask: Callable[[int, int], Any]) -> kit.Feedback:
    """Check the learner's sliding-window causal mask (chapter 6, exercise 1).

    Expected signature: ``look_back_mask(t: int, window: int) -> np.ndarray``, a boolean mask
    with ``True`` where query ``i`` may attend key ``j``: the key is not in the future and at
    most ``window - 1`` positions back, ``i - window < j <= i``. So every query sees
    ``window`` keys (fewer at the start), itself included; ``window >= t`` gives the ordinary
    causal mask.

    Shapes
    ------
    → ``(T, T)`` = ``(T_q, T_k)`` with ``T = t``, dtype bool: rows are queries, columns keys.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_look_back_mask(lambda t, window: None)
    ✘ Not yet. look_back_mask(5, window=2) returned None: did you forget the `return`
    statement?
    """
    name = kit.name_of(look_back_mask, "look_back_mask")

    def band(t: int, low: int, high: int) -> np.ndarray:
        """True where ``low <= i - j <= high``."""
        offset = np.arange(t)[:, None] - np.arange(t)[None, :]  # (T, T): i - j
        return (offset >= low) & (offset <= high)

    def checks() -> str:
        for t, window in ((5, 2), (4, 4), (6, 1), (3, 10)):
            expected = band(t, 0, window - 1)
            what = f"{name}({t}, window={window})"
            got = kit.as_bool_array(kit.call(look_back_mask, t, window), expected, what)
            if np.array_equal(got, expected):
                continue
            if np.array_equal(got, ~expected):
                raise kit.Mistake(
                    f"{what} is True exactly where it should be False: that is the "
                    "'True = ignore' convention of torch.nn.MultiheadAttention. In this course "
                    "True means 'may attend'"
                )
            if np.array_equal(got, expected & ~np.eye(t, dtype=bool)):
                raise kit.Mistake(
                    f"{what} is False on the diagonal, so no token may look at itself (and the "
                    "first query sees nothing at all), as `np.tril(..., k=-1)` would do. The "
                    "window counts the query itself: keys i - window < j <= i"
                )
            if (got & ~band(t, 0, t)).any():
                i, j = np.argwhere(got & ~band(t, 0, t))[0]
                raise kit.Mistake(
                    f"{what}[{i}, {j}] is True: query {i} may look at the FUTURE key {j}. "
                    "Rows are queries and columns keys; only keys j <= i are allowed"
                )
            if window < t and np.array_equal(got, band(t, 0, t)):
                raise kit.Mistake(
                    f"{what} is the plain causal mask: every query sees all the keys before it. "
                    f"The window hides the keys more than window - 1 = {window - 1} positions "
                    "back: keep only i - window < j <= i"
                )
            if np.array_equal(got, band(t, 0, window)):
                raise kit.Mistake(
                    f"{what} lets each query see {window + 1} keys, one too many: with the "
                    "query itself included, the window keys are i - window < j <= i"
                )
            if np.array_equal(got, band(t, 0, window - 2)):
                raise kit.Mistake(
                    f"{what} lets each query see only {window - 1} "
                    f"key{'' if window == 2 else 's'}, one too few: the "
                    "query itself counts, so the keys are i - window < j <= i"
                )
            i, j = np.argwhere(got != expected)[0]
            raise kit.Mistake(
                f"{what}[{i}, {j}] is {bool(got[i, j])}, expected {bool(expected[i, j])}: "
                f"query {i} may attend key {j} only if {i} - {window} < {j} <= {i}"
            )
        kit.require_own_code(
            look_back_mask, (5, 2), ("selfattn_lib.sliding_window",), name, kit.WRITE_IT_YOURSELF
        )
        return (
            "Your look-back mask is right: every query sees itself and the window - 1 keys "
            "before it, never the future."
        )

    return kit.run_checks(checks)


def check_left_padding_mask(left_padding_mask: Callable[[np.ndarray, int], Any]) -> kit.Feedback:
    """Check the learner's mask for a left-padded batch (chapter 6, exercise 2).

    Expected signature: ``left_padding_mask(lengths: np.ndarray, max_len: int) ->
    np.ndarray``, a boolean mask of a batch padded at the START: sequence ``b``'s
    ``lengths[b]`` real tokens are its LAST positions, so the mask is ``True`` on them and
    ``False`` on the padding in front of them.

    Shapes
    ------
    ``lengths``: ``(B,)`` → ``(B, 1, T_k)`` with ``T_k = max_len``, dtype bool: the axis of
    size 1 broadcasts over the queries of the ``(B, T_q, T_k)`` scores.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_left_padding_mask(lambda lengths, max_len: None)
    ✘ Not yet. left_padding_mask([3, 1, 5], max_len=5) returned None: did you forget the
    `return` statement?
    """
    name = kit.name_of(left_padding_mask, "left_padding_mask")

    def checks() -> str:
        cases = ((np.array([3, 1, 5]), 5), (np.array([2, 4]), 6), (np.array([0, 3]), 3))
        for lengths, max_len in cases:
            positions = np.arange(max_len)
            start = (max_len - lengths)[:, None]  # (B, 1): first real position

            def as_mask(is_real: np.ndarray) -> np.ndarray:
                return is_real[:, None, :]  # (B, 1, T_k)

            expected = as_mask(positions >= start)
            what = f"{name}({kit.show(lengths)}, max_len={max_len})"
            result = kit.call(left_padding_mask, lengths.copy(), max_len)
            shape = np.shape(result) if result is not None else None
            if shape == expected.shape[::2]:
                raise kit.Mistake(
                    f"{what} returned shape {shape} = (B, T_k). It needs an axis of size 1 for "
                    f"the queries, (B, 1, T_k) = {expected.shape}, so that it broadcasts over "
                    "the (B, T_q, T_k) scores: add it with `[:, None, :]`"
                )
            if shape == (expected.shape[0], max_len, 1):
                raise kit.Mistake(
                    f"{what} returned shape {shape} = (B, T_k, 1): that would hide padding "
                    "QUERIES, not padding keys. The mask runs along the keys, the last axis: "
                    f"(B, 1, T_k) = {expected.shape}"
                )
            got = kit.as_bool_array(result, expected, what)
            if np.array_equal(got, expected):
                continue
            if np.array_equal(got, ~expected):
                raise kit.Mistake(
                    f"{what} is True on the padding and False on the real tokens: in this "
                    "course True means 'may attend', so the real tokens are True"
                )
            if np.array_equal(got, as_mask(positions < lengths[:, None])):
                raise kit.Mistake(
                    f"{what} is the mask of a RIGHT-padded batch (real tokens first). Here the "
                    "padding comes first: the real tokens are the last lengths[b] positions"
                )
            if np.array_equal(got, as_mask(positions > start)):
                raise kit.Mistake(
                    f"{what} hides the first real token of every sequence: the real tokens "
                    "start at position max_len - length, so use `>=`, not `>`"
                )
            if np.array_equal(got, as_mask(positions >= start - 1)):
                raise kit.Mistake(
                    f"{what} lets every sequence see one padding position too many: the real "
                    "tokens start at position max_len - length, not one before it"
                )
            if np.array_equal(got, as_mask(positions >= (lengths.max() - lengths)[:, None])):
                raise kit.Mistake(
                    f"{what} pads every sequence to lengths.max() = {lengths.max()}, the "
                    f"longest sequence, but the batch has max_len = {max_len} positions: the "
                    "real tokens of sequence b start at max_len - lengths[b]"
                )
            empty_rows = lengths == 0
            if (
                empty_rows.any()
                and got[empty_rows].all()
                and np.array_equal(got[~empty_rows], expected[~empty_rows])
            ):
                raise kit.Mistake(
                    f"{what} makes every position of the sequence of length 0 real: it has no "
                    "real token at all. (A slice such as `[-length:]` takes the whole row when "
                    "length is 0, because -0 is 0)"
                )
            b, _, j = np.argwhere(got != expected)[0]
            raise kit.Mistake(
                f"{what}[{b}, 0, {j}] is {bool(got[b, 0, j])}: sequence {b} has length "
                f"{lengths[b]}, so position {j} is {'real' if expected[b, 0, j] else 'padding'}"
            )
        return (
            "Your left-padding mask is right: the padding in front is hidden, the real tokens "
            "at the end are visible, in the shape (B, 1, T_k)."
        )

    return kit.run_checks(checks)


def check_masked_attention(masked_attention: Callable[..., Any]) -> kit.Feedback:
    """Check the learner's masked scaled dot-product attention (chapter 6, exercise 3).

    Expected signature: ``masked_attention(q, k, v, mask) -> (output, weights)`` with a
    boolean ``mask`` (``True`` = may attend). Masked keys get weight exactly 0, and a query
    that may attend to nothing gets zero weights and a zero output (not NaN, not uniform
    weights). One case has a key whose score is about 1000, hidden from one query and allowed
    for the other: a softmax that does not subtract each row's maximum overflows there, and
    masking after the softmax then dividing by the row sums leaves nothing to divide.

    Shapes
    ------
    ``q``: ``(B, T_q, D_k)``, ``k``: ``(B, T_k, D_k)``, ``v``: ``(B, T_k, D_v)``, ``mask``:
    broadcastable to ``(B, T_q, T_k)`` → ``output``: ``(B, T_q, D_v)``, ``weights``:
    ``(B, T_q, T_k)``.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_masked_attention(lambda q, k, v, mask: None)
    ✘ Not yet. masked_attention(q, k, v, mask of all True) returned None: did you forget the
    `return` statement?
    """
    name = kit.name_of(masked_attention, "masked_attention")
    rng = np.random.default_rng(6)
    q = rng.normal(size=(2, 3, 4))  # (B, T_q, D_k)
    k = rng.normal(size=(2, 5, 4))  # (B, T_k, D_k)
    v = rng.normal(size=(2, 5, 2))  # (B, T_k, D_v)
    plain = np.ones((2, 3, 5), dtype=bool)
    tril = np.tril(np.ones((3, 5), dtype=bool))  # (T_q, T_k)
    keys_ok = (np.arange(5) < np.array([4, 2])[:, None])[:, None, :]  # (B, 1, T_k)
    masked = tril & keys_ok  # (B, T_q, T_k)
    masked[1, 0] = False  # a query that may look at nothing
    # Key 2 scores about 1000 for both queries: hidden from query 0, allowed for query 1.
    q_far = np.array([[[10.0, 0.0, 0.0, 0.0], [10.0, 0.5, 0.0, 0.0]]])  # (1, T_q, D_k)
    k_far = np.array([[[0.3, 1.0, 0.0, 0.0], [-0.2, 0.0, 1.0, 0.0], [200.0, 0.0, 0.0, 0.0]]])
    v_far = rng.normal(size=(1, 3, 2))  # (1, T_k, D_v)
    far_mask = np.array([[[True, True, False], [True, True, True]]])  # (1, T_q, T_k)

    def weights_for(q: np.ndarray, k: np.ndarray, allowed: np.ndarray, scale: float) -> np.ndarray:
        """Masked softmax of ``q kᵀ · scale``, zeros for a row with nothing to attend to."""
        return attention.scaled_dot_product_attention(q, k, k, mask=allowed, scale=scale)[1]

    def check_one(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray, what: str) -> None:
        (b_size, t_q, d_k), (t_k, d_v) = q.shape, v.shape[1:]
        allowed = np.broadcast_to(mask, (b_size, t_q, t_k))  # (B, T_q, T_k)
        # Fully masked rows get zero weights and a zero output.
        expected_out, expected_w = attention.scaled_dot_product_attention(q, k, v, mask=allowed)
        result = kit.call_quietly(masked_attention, q.copy(), k.copy(), v.copy(), mask.copy())
        out_raw, w_raw = kit.as_tuple(result, 2, what, "a pair (output, weights)")
        if np.shape(out_raw) == expected_w.shape and np.shape(w_raw) == expected_out.shape:
            raise kit.Mistake(
                f"{what} returned (weights, output): return them the other way round, "
                "(output, weights)"
            )
        w_values = kit.values_like(w_raw, expected_w)
        empty = ~allowed.any(axis=-1)  # (B, T_q)
        if w_values is not None:
            stuck = ~empty & (np.isnan(w_values).any(axis=-1) | (w_values == 0).all(axis=-1))
            if stuck.any():
                b, i = (int(n) for n in np.argwhere(stuck)[0])
                row_scores = q[b, i] @ k[b].T / np.sqrt(d_k)  # (T_k,)
                top = int(row_scores.argmax())
                got = "NaN" if np.isnan(w_values[b, i]).any() else "all 0"
                if not allowed[b, i, top]:
                    raise kit.Mistake(
                        f"in {what} query {i} may attend to keys "
                        f"{', '.join(str(j) for j in np.flatnonzero(allowed[b, i]))}, yet its "
                        f"weights are {got}. Its hidden key {top} scores about "
                        f"{row_scores[top]:.0f}, far above the others: a softmax over ALL the "
                        "keys gives that key all the weight (the others underflow to 0), and "
                        "masking AFTER the softmax then leaves nothing to renormalise. Mask the "
                        "SCORES, then take the softmax"
                    )
                if row_scores.max() > 700:
                    raise kit.Mistake(
                        f"the weights of {what} are {got} for query {i}, whose largest score "
                        f"is about {row_scores.max():.0f}: np.exp of it overflows to inf, and "
                        "inf / inf is NaN. Subtract each row's largest score before np.exp "
                        "(a stable softmax)"
                    )
            if empty.any() and np.isnan(w_values[empty]).all():
                raise kit.Mistake(
                    f"the weights of {what} are NaN for query 0 of sequence 1, which may "
                    "attend to nothing: its scores are all -inf and softmax divides 0 by 0. "
                    "Give such a row zero weights (shift it by 0, divide only where the total "
                    "is positive)"
                )
        w = kit.as_result_array(w_raw, expected_w, f"the weights of {what}")
        if empty.any() and np.allclose(w[empty], 1 / w.shape[-1]):
            raise kit.Mistake(
                f"in {what} query 0 of sequence 1 may attend to nothing, yet it got the "
                f"uniform weights 1/{w.shape[-1]}: that is the -1e9 leak. With a large finite "
                "number every score of the row is the same, so softmax spreads the weight over "
                "the masked keys. Give such a row zero weights"
            )
        if (w[allowed] == 0).all():
            raise kit.Mistake(
                f"in {what} every allowed key got weight 0: is the mask inverted? True means "
                "'may attend', so keep the scores where the mask is True and set the others "
                "to -inf"
            )
        if (w[~allowed] != 0).any():
            b, i, j = np.argwhere(~allowed & (w != 0))[0]
            raise kit.Mistake(
                f"in {what} key {j} of query {i} in sequence {b} is masked but got weight "
                f"{w[b, i, j]:.3g}: set masked scores to -inf before the softmax, so that "
                "their weights are exactly 0"
            )
        sums = w.sum(axis=-1)
        if not np.allclose(sums[~empty], 1.0):
            raise kit.Mistake(
                f"the rows of the weights of {what} sum to {kit.show(sums.round(3))}: that is "
                "what masking AFTER the softmax gives (zeroing weights leaves rows that no "
                "longer sum to one). Mask the SCORES, then take the softmax"
            )
        scales = [
            (1.0, "those of unscaled scores Q Kᵀ: divide the scores by √d_k before the softmax"),
            (1 / d_k, f"scaled by 1/d_k = 1/{d_k}: divide by the square root of d_k"),
            (
                1 / np.sqrt(d_v),
                f"scaled by 1/√{d_v}, the size of the values: d_k = {d_k} is the last axis of "
                "q and k",
            ),
            (
                1 / np.sqrt(t_k),
                f"scaled by 1/√{t_k}, the number of keys: d_k = {d_k} is the last axis of q and k",
            ),
            (
                1 / np.sqrt(t_q),
                f"scaled by 1/√{t_q}, the number of queries: d_k = {d_k} is the last axis of "
                "q and k",
            ),
        ]
        if not kit.match_known_mistakes(
            w,
            expected_w,
            [(weights_for(q, k, allowed, scale), message) for scale, message in scales],
            f"the weights of {what} are",
            joiner=" ",
        ):
            kit.assert_close(w, expected_w, f"the weights of {what}")
        if np.shape(out_raw) == (b_size, t_q, d_k) != expected_out.shape:
            raise kit.Mistake(
                f"the output of {what} has shape {np.shape(out_raw)}, with d_k = {d_k} "
                "columns: it averages the queries or the keys. Average the VALUES v, "
                f"(B, T_q, D_v) = {expected_out.shape}"
            )
        out = kit.as_result_array(out_raw, expected_out, f"the output of {what}")
        unmasked = softmax.softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(d_k), axis=-1) @ v
        kit.match_known_mistakes(
            out,
            expected_out,
            [(unmasked, "comes from the weights before the mask: use the masked weights")],
            f"the output of {what}",
            joiner=" ",
        )
        kit.assert_close(out, expected_out, f"the output of {what}")

    def checks() -> str:
        check_one(q, k, v, plain, f"{name}(q, k, v, mask of all True)")
        check_one(q, k, v, keys_ok, f"{name}(q, k, v, padding mask of shape (2, 1, 5))")
        check_one(q, k, v, masked, f"{name}(q, k, v, mask of shape (2, 3, 5) with an empty row)")
        check_one(
            q_far,
            k_far,
            v_far,
            far_mask,
            f"{name}(q, k, v, mask of shape (1, 2, 3) hiding a key that scores about 1000)",
        )
        kit.require_own_code(
            masked_attention,
            (q, k, v, masked),
            (*kit.COURSE_LIBRARY, *kit.TORCH),
            name,
            "the exercise asks for NumPy only, without selfattn_lib",
        )
        return (
            "Your masked attention is right: masked keys get exactly 0, the mask broadcasts, "
            "a key scoring far above the others is handled, and a query with nothing to attend "
            "to gets zeros, never NaN or uniform weights."
        )

    return kit.run_checks(checks)


def check_dependence(dependence: Callable[[Callable[..., Any], np.ndarray], Any]) -> kit.Feedback:
    """Check the learner's exact dependence test, the leak detector (chapter 6, exercise 4).

    Expected signature: ``dependence(attend, x) -> np.ndarray``. ``attend`` maps one sequence
    ``x`` to one output per position; entry ``(i, j)`` of the result is ``True`` when output
    ``i`` changes, in any bit, once token ``j`` of ``x`` is replaced by a clearly different
    vector, and ``False`` when output ``i`` stays exactly the same. A causal layer gives the
    lower triangle, diagonal included. ``x`` itself must be left unchanged. The checker tries
    a running sum, attention with no mask, a causal mask and a look-back window, two causal
    layers that leak a tiny amount of the future (the second less than 1e-12, so a threshold
    of that size misses it), and a causal layer in which each token
    reaches each later output through one feature only (so an output that changes in one
    feature must count as changed).

    Shapes
    ------
    ``x``: ``(T, D)``; ``attend(x)``: ``(T, D_out)`` → ``(T, T)`` = ``(T_out, T_in)``, dtype
    bool: rows are outputs, columns the input tokens that were changed.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_dependence(lambda attend, x: None)
    ✘ Not yet. dependence(running sum, x of shape (5, 4)) returned None: did you forget the
    `return` statement?
    """
    name = kit.name_of(dependence, "dependence")
    x = np.random.default_rng(6).normal(size=(5, 4))  # (T, D)
    t = len(x)
    lower = np.tril(np.ones((t, t), dtype=bool))  # (T, T): j <= i
    window = lower & ~np.tril(np.ones((t, t), dtype=bool), k=-2)  # i - 2 < j <= i

    def attend_with(mask: np.ndarray | None) -> Callable[[np.ndarray], np.ndarray]:
        def attend(x: np.ndarray) -> np.ndarray:
            return attention.scaled_dot_product_attention(x, x, x, mask=mask)[0]  # (T, D)

        return attend

    def leaky_attend(hidden_score: float) -> Callable[[np.ndarray], np.ndarray]:
        """Causal attention whose hidden scores are ``hidden_score``, not -inf. With -20 the
        future gets weights between 9e-12 and 5e-10 here, with -25 between 6e-14 and 3e-12:
        far below np.allclose's tolerance, but not zero, and (at -25) far above the rounding
        of the outputs, so that every clearly different token shows it. At -30 the smallest
        change would be about one ulp of the outputs."""

        def attend(x: np.ndarray) -> np.ndarray:
            scores = attention.attention_scores(x, x)  # (T, T)
            weights = softmax.softmax(np.where(lower, scores, hidden_score))
            return weights @ x  # (T, D)

        return attend

    # The weights each leaky layer gives the future, for the feedback: (smallest, largest).
    leaks = {
        hidden: (float(w[~lower].min()), float(w[~lower].max()))
        for hidden in (-20.0, -25.0)
        for w in [softmax.softmax(np.where(lower, attention.attention_scores(x, x), hidden))]
    }

    def feature_shift(x: np.ndarray) -> np.ndarray:
        """Feature f of output i is feature f of token i - f (0 before the start): a causal
        layer in which token j reaches output i through feature i - j alone."""
        out = np.zeros_like(x)  # (T, D)
        for f in range(x.shape[1]):
            out[f:, f] = x[: len(x) - f, f]
        return out

    reach = lower & ~np.tril(np.ones((t, t), dtype=bool), k=-x.shape[1])  # 0 <= i - j < D

    cases = (
        ("running sum", lambda x: np.cumsum(x, axis=0), lower),
        ("attention with a causal mask", attend_with(lower), lower),
        ("attention with no mask", attend_with(None), np.ones((t, t), dtype=bool)),
        ("attention with a look-back window of 2", attend_with(window), window),
        ("causal attention that leaks a little", leaky_attend(-20.0), np.ones((t, t), dtype=bool)),
        (
            "causal attention that leaks very little",
            leaky_attend(-25.0),
            np.ones((t, t), dtype=bool),
        ),
        ("a layer that shifts feature f back by f positions", feature_shift, reach),
    )

    def checks() -> str:
        for label, attend, expected in cases:
            what = f"{name}({label}, x of shape {x.shape})"
            given = x.copy()
            result = kit.call_quietly(dependence, attend, given)
            if not np.array_equal(given, x):
                raise kit.Mistake(
                    f"{what} changed the array x it was given. Change a copy "
                    "(`changed = x.copy()`), one token at a time, so that every other test "
                    "starts from the original sentence"
                )
            got = kit.as_bool_array(result, expected, what)
            if np.array_equal(got, expected):
                continue
            if np.array_equal(got.T, expected):
                raise kit.Mistake(
                    f"{what} is the transpose of the right table: entry (i, j) says whether "
                    "OUTPUT i changes when INPUT token j changes, so changing token j fills "
                    "column j"
                )
            if "leaks" in label and np.array_equal(got & lower, lower):
                low, high = leaks[-20.0 if label.endswith("a little") else -25.0]
                missed = (
                    "the future does not reach"
                    if np.array_equal(got, lower)
                    else ("only some future tokens reach")
                )
                raise kit.Mistake(
                    f"{what} says {missed} earlier outputs, but this layer leaks: its hidden "
                    f"keys get weights of {low:.0e} to {high:.0e}, so the earlier outputs do "
                    "change, by less than a tolerance such as np.allclose's or a threshold. A "
                    "leak test must compare exactly (np.array_equal, or `!=`), after a clearly "
                    f"different change of token j: a weight of {low:.0e} times a change of "
                    "1e-13 is lost in rounding"
                )
            if label.startswith("a layer that shifts") and not got.any():
                raise kit.Mistake(
                    f"{what} is False everywhere, but in this layer token j changes ONE feature "
                    "of each later output (feature i - j of output i). An output has changed "
                    "when ANY of its features changed: `.any(axis=-1)`, not `.all(axis=-1)`"
                )
            if label.startswith("a layer that shifts") and np.array_equal(
                got, np.eye(t, dtype=bool)
            ):
                raise kit.Mistake(
                    f"{what} sees only the diagonal, but in this layer token j reaches output "
                    "i through feature i - j alone: change EVERY feature of token j (add 1 to "
                    "the whole vector) and compare EVERY feature of the outputs"
                )
            if not got.any():
                raise kit.Mistake(
                    f"{what} is False everywhere: no output ever changed. Does the changed "
                    "copy really differ from x at token j? Give token j a clearly different "
                    "vector (for example add 1 to it)"
                )
            i, j = (int(n) for n in np.argwhere(got != expected)[0])
            raise kit.Mistake(
                f"{what}[{i}, {j}] is {bool(got[i, j])}, but output {i} "
                f"{'changes' if expected[i, j] else 'stays exactly the same'} when token {j} "
                "is replaced"
            )
        return (
            "Your leak detector is right: it changes one token at a time, in a copy, and "
            f"compares exactly, so even a weight of {leaks[-25.0][0]:.0e} on a future token "
            "shows."
        )

    return kit.run_checks(checks)
