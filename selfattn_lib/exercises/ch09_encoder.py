"""Checkers for the exercises of chapter 9, the encoder block."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from selfattn_lib import encoder
from selfattn_lib.exercises import _kit as kit


def _slipped_layer_norm(
    x: np.ndarray,
    gain: np.ndarray,
    bias: np.ndarray,
    eps: float = 1e-5,
    *,
    ddof: int = 0,
    eps_outside: bool = False,
) -> np.ndarray:
    """Layer norm with the usual slips (the catalogue of known mistakes): ``ddof=1`` divides
    the variance by D − 1, ``eps_outside`` adds eps after the square root."""
    centred = x - x.mean(axis=-1, keepdims=True)
    variance = x.var(axis=-1, keepdims=True, ddof=ddof)
    spread = np.sqrt(variance) + eps if eps_outside else np.sqrt(variance + eps)
    return gain * centred / spread + bias


def check_rms_norm(rms_norm: Callable[..., Any]) -> kit.Feedback:
    """Check the learner's RMSNorm (chapter 9, exercise 1).

    Expected signature: ``rms_norm(x: np.ndarray, gain: np.ndarray, eps: float) -> np.ndarray``:
    every vector along the last axis is divided by its root mean square (with ``eps`` added to
    the mean of the squares, under the root) and multiplied element-wise by ``gain``. No mean is
    subtracted and there is no bias.

    Shapes
    ------
    ``x``: ``(..., D)``, ``gain``: ``(D,)``, ``eps``: a number → the shape of ``x``.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_rms_norm(lambda x, gain, eps: None)
    ✘ Not yet. rms_norm(x of shape (2, 3, 5), gain, eps=1e-06) returned None: did you forget the
    `return` statement?
    """
    name = kit.name_of(rms_norm, "rms_norm")
    rng = np.random.default_rng(9)
    cases = (
        (rng.normal(loc=2.0, size=(2, 3, 5)), rng.normal(loc=1.0, size=5), 1e-6),
        (rng.normal(size=(4, 6)), rng.normal(loc=1.0, size=6), 1e-6),
        (rng.normal(scale=1e-3, size=(3, 4)), rng.normal(loc=1.0, size=4), 1e-4),
    )

    def mistakes(x: np.ndarray, gain: np.ndarray, eps: float) -> list[tuple[np.ndarray, str]]:
        mean_square = (x**2).mean(axis=-1, keepdims=True)
        found = [
            (
                _slipped_layer_norm(x, gain, 0.0, eps),
                "it subtracts each vector's mean first: that is layer norm. RMSNorm does not "
                "centre; it divides x itself by its root mean square sqrt(mean(x²) + eps)",
            ),
            (
                x / (np.sqrt(mean_square) + eps) * gain,
                "eps is added after the square root; it goes inside, sqrt(mean(x²) + eps), as "
                "in layer norm (it matters for vectors of tiny length)",
            ),
            (
                x / np.sqrt(x.var(axis=-1, keepdims=True) + eps) * gain,
                "it divides by the standard deviation, which subtracts the mean inside; "
                "RMSNorm divides by the root mean square of x itself, sqrt(mean(x²) + eps)",
            ),
            (
                x / (mean_square + eps) * gain,
                "it divides by the mean square without the square root, so the result does "
                "not have a root mean square of 1",
            ),
            (
                x / np.sqrt((x**2).sum(axis=-1, keepdims=True) + eps) * gain,
                "it divides by the length sqrt(sum(x²)) instead of the root MEAN square "
                "sqrt(mean(x²)): the result is √D times too small",
            ),
            (
                x / np.sqrt(mean_square + eps),
                "the gain is missing: multiply the normalised vector by gain, feature by feature",
            ),
            (
                x / np.sqrt(mean_square + eps**2) * gain,
                "eps is squared: add eps itself to the mean square, sqrt(mean(x²) + eps)",
            ),
            *(  # off by eps only: 6 digits would show 'got 1.28767, expected 1.28767'
                (
                    wrong,
                    "eps is added to the result; it goes inside the square root, "
                    "sqrt(mean(x²) + eps), where it keeps tiny vectors from being blown up",
                )
                for wrong in (
                    x / np.sqrt(mean_square) * gain + eps,
                    (x / np.sqrt(mean_square) + eps) * gain,
                )
            ),
            (
                x / np.sqrt(mean_square) * gain,
                "eps is missing: add it to the mean square inside the square root, which "
                "keeps tiny vectors from being blown up (and a zero vector from giving NaN)",
            ),
            *(
                (
                    x / np.sqrt(mean_square + fixed) * gain,
                    f"eps is fixed at {fixed:g}, but this call passes eps={eps:g}: use the "
                    "argument",
                )
                for fixed in (1e-5, 1e-6)
                if fixed != eps
            ),
            *(
                (
                    x / np.sqrt((x**2).mean(axis=axis, keepdims=True) + eps) * gain,
                    f"it averages over {'the first axis' if axis == 0 else f'axis {axis}'}: "
                    "the statistics of RMSNorm, like those of layer norm, are taken over the "
                    "features of ONE vector, the last axis (axis=-1, keepdims=True)",
                )
                for axis in range(x.ndim - 1)
            ),
            (
                x / np.sqrt((x**2).sum(axis=-1, keepdims=True) / (x.shape[-1] - 1) + eps) * gain,
                "it divides the sum of the squares by D - 1: the root MEAN square divides by "
                "D (there is no mean to correct for)",
            ),
            (
                x / np.sqrt(mean_square + eps) / gain,
                "it divides by the gain: the normalised vector is MULTIPLIED by the gain",
            ),
            (
                x * gain / np.sqrt(((x * gain) ** 2).mean(axis=-1, keepdims=True) + eps),
                "it applies the gain before normalising, so the gain cancels out: take the "
                "root mean square of x itself, then multiply the normalised vector by the gain",
            ),
            (
                x * np.sqrt(mean_square + eps) * gain,
                "it multiplies by the root mean square instead of dividing by it",
            ),
            (
                x / (np.abs(x).mean(axis=-1, keepdims=True) + eps) * gain,
                "it divides by the mean ABSOLUTE value; RMSNorm divides by the square root of "
                "the mean of the SQUARES, sqrt(mean(x²) + eps)",
            ),
            (
                x / np.sqrt((x**2).mean() + eps) * gain,
                "it uses one mean square for the whole array: each vector along the last axis "
                "needs its own (axis=-1, keepdims=True)",
            ),
        ]
        return found

    def checks() -> str:
        undecided = None  # a wrong result that several slips explain: a later case decides
        for index, (x, gain, eps) in enumerate(cases):
            what = f"{name}(x of shape {x.shape}, gain, eps={eps:g})"
            expected = encoder.rms_norm(x, gain, eps)
            try:
                result = kit.plain(kit.call_quietly(rms_norm, x.copy(), gain.copy(), eps))
            except kit.Mistake as error:
                if "could not be broadcast" not in str(error):
                    raise
                raise kit.Mistake(
                    f"{error}. The mean over the last axis lost that axis, so it no longer "
                    "lines up with the D features of x: keep it (axis=-1, keepdims=True)"
                ) from error
            got = kit.as_result_array(result, expected, what)
            if kit.equal(got, expected, atol=1e-10):
                continue
            slips = [
                message
                for wrong, message in mistakes(x, gain, eps)
                if not kit.equal(wrong, expected, atol=1e-10) and kit.equal(got, wrong, atol=1e-10)
            ]
            if undecided is not None:
                slips = [message for message in slips if message in undecided[1]] or slips
            if len(slips) == 1 or (slips and index == len(cases) - 1):
                raise kit.Mistake(f"{what}: {slips[0]}")
            if slips:  # e.g. eps squared or missing, when eps² is too small to tell
                undecided = (what, slips)
                continue
            kit.assert_close(got, expected, what, atol=1e-10)
        if undecided is not None:
            raise kit.Mistake(f"{undecided[0]}: {undecided[1][0]}")
        kit.require_own_code(
            rms_norm,
            cases[0],
            (*kit.TORCH, "selfattn_lib.encoder.rms_norm"),
            name,
            "the exercise is to write it yourself, with NumPy",
        )
        return (
            "Your RMSNorm is right: every vector is divided by its root mean square (eps "
            "inside the square root) and scaled by the gain — layer norm without the centring "
            "and the bias, as in T5 and LLaMA."
        )

    return kit.run_checks(checks)


def check_sublayer_connection(sublayer_connection: Callable[..., Any]) -> kit.Feedback:
    """Check the learner's residual connection with layer norm (chapter 9, exercise 2).

    Expected signature: ``sublayer_connection(x, sublayer, norm, norm_first) -> array`` where
    ``sublayer`` and ``norm`` are functions. Post-norm (``norm_first=False``, the paper's) adds
    the sublayer's output to its input ``x`` and normalises the sum; pre-norm
    (``norm_first=True``) runs the sublayer on the normalised ``x`` and adds its output to ``x``
    itself.

    Shapes
    ------
    ``x``: ``(B, T, D)``; ``sublayer``, ``norm``: ``(B, T, D)`` → ``(B, T, D)``; the result:
    ``(B, T, D)``.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_sublayer_connection(lambda x, sublayer, norm, norm_first: None)
    ✘ Not yet. sublayer_connection(x, sublayer, norm, norm_first=False) returned None: did you
    forget the `return` statement?
    """
    name = kit.name_of(sublayer_connection, "sublayer_connection")
    rng = np.random.default_rng(90)
    x = rng.normal(loc=0.5, scale=2.0, size=(2, 4, 6))  # (B, T, D)
    weight, shift = rng.normal(size=(6, 6)) / np.sqrt(6), rng.normal(size=6)
    gain, bias = rng.normal(loc=1.0, scale=0.3, size=6), rng.normal(scale=0.5, size=6)

    def sublayer(v: np.ndarray) -> np.ndarray:
        return np.tanh(np.asarray(v) @ weight + shift)  # (B, T, D)

    def norm(v: np.ndarray) -> np.ndarray:
        return _slipped_layer_norm(np.asarray(v), gain, bias)  # (B, T, D)

    post = norm(x + sublayer(x))
    pre = x + sublayer(norm(x))
    common = [
        (
            x + norm(sublayer(x)),
            "that is x + LN(Sublayer(x)): the norm is inside the residual branch (the order "
            "of a popular blog post). The paper adds first and normalises the sum, "
            "LN(x + Sublayer(x)); pre-norm normalises the sublayer's INPUT, x + Sublayer(LN(x))",
        ),
        (
            norm(sublayer(x)),
            "the residual is missing: the input x must be added to the sublayer's output",
        ),
        (x + sublayer(x), "the layer norm is missing"),
        (
            sublayer(x),
            "it returns the sublayer's output alone: add x and apply the norm",
        ),
        (
            sublayer(norm(x)),
            "the residual is missing: it returns F(LN(x)) alone, without adding x",
        ),
        (
            x + norm(sublayer(norm(x))),
            "it normalises both the sublayer's input and its output (a 'sandwich'), inside "
            "the residual branch: post-norm is LN(x + Sublayer(x)), pre-norm "
            "x + Sublayer(LN(x)), one norm each",
        ),
    ]
    cases = {
        False: [
            (
                pre,
                "with norm_first=False this is pre-norm, x + Sublayer(LN(x)). norm_first=False "
                "is the paper's post-norm: LN(x + Sublayer(x))",
            ),
            (
                norm(x + sublayer(norm(x))),
                "it also normalises the sublayer's INPUT: post-norm runs the sublayer on x "
                "itself and normalises only the sum, LN(x + Sublayer(x))",
            ),
            (
                norm(x) + sublayer(x),
                "it normalises x alone and adds the sublayer's output after the norm: "
                "post-norm normalises the SUM, LN(x + Sublayer(x))",
            ),
            *common,
        ],
        True: [
            (
                post,
                "with norm_first=True this is post-norm, LN(x + Sublayer(x)). norm_first=True "
                "means pre-norm: x + Sublayer(LN(x))",
            ),
            (
                norm(x) + sublayer(norm(x)),
                "it adds the NORMALISED input: in pre-norm the residual carries x itself, "
                "x + Sublayer(LN(x)), so the identity path from input to output has no norm "
                "on it",
            ),
            (
                norm(x + sublayer(norm(x))),
                "it normalises again after the addition: in pre-norm nothing sits on the "
                "residual path, x + Sublayer(LN(x)); the stack normalises once, at the end",
            ),
            *common,
        ],
    }

    def checks() -> str:
        for norm_first, expected in ((False, post), (True, pre)):
            what = f"{name}(x, sublayer, norm, norm_first={norm_first})"
            given = x.copy()
            result = kit.call_quietly(sublayer_connection, given, sublayer, norm, norm_first)
            if not np.array_equal(given, x):
                raise kit.Mistake(
                    f"{what} changed the x it was given (e.g. with `x += …`): the caller's "
                    "x must stay as it was, so compute the sum into a new array"
                )
            got = kit.as_result_array(kit.plain(result), expected, what)
            if np.allclose(got, expected, rtol=1e-6, atol=1e-9):
                continue
            for wrong, message in cases[norm_first]:
                if np.allclose(got, wrong, rtol=1e-6, atol=1e-9):
                    raise kit.Mistake(f"{what}: {message}")
            kit.assert_close(got, expected, what)
        kit.require_own_code(
            sublayer_connection,
            (x, sublayer, norm, True),
            ("selfattn_lib.encoder.sublayer_connection",),
            name,
            kit.WRITE_IT_YOURSELF,
        )
        return (
            "Your sublayer connection is right: post-norm normalises the sum, LN(x + F(x)); "
            "pre-norm leaves the residual path alone, x + F(LN(x))."
        )

    return kit.run_checks(checks)


def _slipped_encoder_layer(
    x: np.ndarray,
    params: dict[str, Any],
    n_heads: int,
    mask: np.ndarray | None,
    norm_first: bool,
    *,
    ddof: int = 0,
    eps: float = 1e-5,
    eps_outside: bool = False,
    activation: str = "relu",
    relu_output: bool = False,
    residual: tuple[bool, bool] = (True, True),
    add_normed: bool = False,
    swap_norms: bool = False,
    invert_mask: bool = False,
    final_norm: str | None = None,
) -> np.ndarray:
    """An encoder layer with the usual slips (the catalogue of known mistakes), one per flag;
    the right answer is :func:`selfattn_lib.encoder.encoder_layer`. ``residual`` keeps the
    attention sublayer's and the feed-forward sublayer's residual; ``add_normed`` makes a
    pre-norm residual carry the normalised input; ``final_norm`` (``"gain_2"`` or ``"unit"``)
    normalises a pre-norm layer's output once more."""
    from selfattn_lib.multihead import multi_head_attention

    first, second = ("2", "1") if swap_norms else ("1", "2")
    if invert_mask and mask is not None:
        mask = ~mask

    def norm(v: np.ndarray, which: str) -> np.ndarray:
        gain, bias = params[f"gain_{which}"], params[f"bias_{which}"]
        return _slipped_layer_norm(v, gain, bias, eps, ddof=ddof, eps_outside=eps_outside)

    def attend(v: np.ndarray) -> np.ndarray:
        return multi_head_attention(v, v, params["attention"], n_heads, mask=mask)[0]

    def feed_forward(v: np.ndarray) -> np.ndarray:
        hidden = v @ params["w_1"] + params["b_1"]  # (B, T, d_ff)
        if activation == "relu":
            hidden = np.maximum(hidden, 0.0)
        elif activation == "gelu":  # the exact GELU, x Φ(x)
            hidden = hidden * 0.5 * (1.0 + np.vectorize(math.erf)(hidden / math.sqrt(2.0)))
        elif activation == "gelu_tanh":  # its tanh approximation
            inner = math.sqrt(2.0 / math.pi) * (hidden + 0.044715 * hidden**3)
            hidden = 0.5 * hidden * (1.0 + np.tanh(inner))
        elif activation == "gelu_sigmoid":  # its sigmoid approximation, x σ(1.702 x)
            hidden = hidden / (1.0 + np.exp(-1.702 * hidden))
        out = hidden @ params["w_2"] + params["b_2"]  # (B, T, D)
        return np.maximum(out, 0.0) if relu_output else out

    keep_attention, keep_ffn = (1.0 if kept else 0.0 for kept in residual)
    if norm_first:
        normed = norm(x, first)
        x = keep_attention * (normed if add_normed else x) + attend(normed)
        normed = norm(x, second)
        x = keep_ffn * (normed if add_normed else x) + feed_forward(normed)
        if final_norm == "gain_2":
            return norm(x, "2")
        if final_norm == "unit":
            return _slipped_layer_norm(x, 1.0, 0.0, eps)
        return x
    x = norm(keep_attention * x + attend(x), first)
    return norm(keep_ffn * x + feed_forward(x), second)


def check_encoder_layer_numpy(encoder_layer_numpy: Callable[..., Any]) -> kit.Feedback:
    """Check the learner's NumPy encoder layer (chapter 9, exercise 3).

    Expected signature: ``encoder_layer_numpy(x, params, n_heads, mask, norm_first) ->
    np.ndarray``: one encoder layer, multi-head self-attention and then the feed-forward network
    (ReLU between its two linear maps), each wrapped in a residual connection with a layer norm
    (eps ``1e-5``). Post-norm (``norm_first=False``) normalises each sum of a sublayer's input
    and output, pre-norm (``norm_first=True``) normalises each sublayer's input. ``mask`` is
    boolean (``True`` = may attend) or ``None``. ``params`` is a dict with ``"attention"`` (a
    :class:`~selfattn_lib.multihead.MultiHeadParams`), the feed-forward network's ``"w_1"``,
    ``"b_1"``, ``"w_2"``, ``"b_2"`` and the layer norms' ``"gain_1"``, ``"bias_1"``
    (attention sublayer), ``"gain_2"``, ``"bias_2"`` (feed-forward sublayer). The result equals
    :class:`selfattn_lib.transformer.EncoderLayer` with the same weights.

    Shapes
    ------
    ``x``: ``(B, T, D)``; ``mask``: broadcastable to ``(B, T_q, T_k)`` with ``T_q = T_k = T``;
    ``"w_1"``: ``(D, d_ff)``, ``"b_1"``: ``(d_ff,)``, ``"w_2"``: ``(d_ff, D)``, ``"b_2"`` and
    the gains and biases: ``(D,)`` → ``(B, T, D)``.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_encoder_layer_numpy(lambda x, params, n_heads, mask, norm_first: None)
    ✘ Not yet. encoder_layer_numpy(x of shape (2, 4, 8), params, n_heads=2, a mask of shape
    (2, 1, 4), norm_first=False) returned None: did you forget the `return` statement?
    """
    name = kit.name_of(encoder_layer_numpy, "encoder_layer_numpy")
    rng = np.random.default_rng(909)
    padding = (np.arange(4) < np.array([4, 2])[:, None])[:, None, :]  # (B, 1, T)
    cases = (
        (
            rng.normal(size=(2, 4, 8)),
            encoder.init_encoder_layer_params(8, 16, rng),
            2,
            padding,
            False,
        ),
        (
            rng.normal(size=(2, 4, 8)),
            encoder.init_encoder_layer_params(8, 16, rng),
            2,
            padding,
            True,
        ),
        (rng.normal(size=(3, 5, 8)), encoder.init_encoder_layer_params(8, 12, rng), 4, None, False),
    )
    slips = (
        (
            {"ddof": 1},
            "the layer norm divides the variance by D - 1 (np.var's ddof=1 or "
            "torch.var's default); layer norm uses the biased variance, divided by D",
        ),
        (
            {"eps_outside": True},
            "eps is added after the square root; layer norm computes "
            "(x - mean) / sqrt(variance + eps)",
        ),
        (
            {"eps": 1e-6},
            "the layer norm's eps is 1e-6; the prompt's is 1e-5 (nn.LayerNorm's default)",
        ),
        (
            {"eps": 0.0},
            "the layer norm's eps is missing (or far below 1e-5): "
            "(x - mean) / sqrt(variance + 1e-5)",
        ),
        (
            {"activation": "none"},
            "the feed-forward network has no ReLU between W_1 and W_2: "
            "FFN(x) = max(0, x W_1 + b_1) W_2 + b_2",
        ),
        (
            {"activation": "gelu"},
            "the feed-forward network uses GELU; the paper's (and the prompt's) is the ReLU, "
            "max(0, x W_1 + b_1) W_2 + b_2",
        ),
        *(
            (
                {"activation": form},
                f"the feed-forward network uses GELU ({approximation}); the paper's is the "
                "ReLU, max(0, x W_1 + b_1) W_2 + b_2",
            )
            for form, approximation in (
                ("gelu_tanh", "its tanh approximation"),
                ("gelu_sigmoid", "its sigmoid approximation"),
            )
        ),
        (
            {"relu_output": True},
            "the feed-forward network applies a ReLU to its output too: the ReLU sits only "
            "between W_1 and W_2, FFN(x) = max(0, x W_1 + b_1) W_2 + b_2",
        ),
        (
            {"residual": (False, False)},
            "the residual connections are missing: add each sublayer's input to its output",
        ),
        (
            {"residual": (False, True)},
            "the attention sublayer has no residual connection: add its input to its output "
            "(the feed-forward sublayer's residual is there)",
        ),
        (
            {"residual": (True, False)},
            "the feed-forward sublayer has no residual connection: add its input to its "
            "output (the attention sublayer's residual is there)",
        ),
        (
            {"add_normed": True},
            "the residual carries the NORMALISED input: in pre-norm it carries x itself, "
            "x + Sublayer(LN(x))",
        ),
        (
            {"swap_norms": True},
            "the two layer norms are swapped: gain_1 and bias_1 belong "
            "to the attention sublayer, gain_2 and bias_2 to the feed-forward sublayer",
        ),
        (
            {"invert_mask": True},
            "it passes the mask inverted (PyTorch's True = padding convention): here the "
            "mask is True where a token MAY attend, as multi_head_attention expects",
        ),
        *(
            (
                {"final_norm": final},
                "it normalises the layer's output once more: a pre-norm layer has no norm "
                "after its second sum (a pre-norm STACK ends with one, after its last layer)",
            )
            for final in ("gain_2", "unit")
        ),
    )

    def check_one(x, params, n_heads, mask, norm_first) -> None:
        what = (
            f"{name}(x of shape {x.shape}, params, n_heads={n_heads}, "
            f"{'mask=None' if mask is None else f'a mask of shape {mask.shape}'}, "
            f"norm_first={norm_first})"
        )
        expected = encoder.encoder_layer(x, params, n_heads, mask, norm_first)
        copied = {key: value for key, value in params.items()}
        mask_arg = None if mask is None else mask.copy()
        result = kit.call_quietly(
            encoder_layer_numpy, x.copy(), copied, n_heads, mask_arg, norm_first
        )
        got = kit.as_result_array(kit.plain(result), expected, what)
        if np.allclose(got, expected, rtol=1e-7, atol=1e-9):
            return
        if np.allclose(got, x, rtol=1e-7, atol=1e-9):
            raise kit.Mistake(
                f"{what} returns x unchanged: apply the two sublayers, attention and then the "
                "feed-forward network, each with its residual connection and layer norm"
            )
        if np.allclose(got, encoder.encoder_layer(x, params, n_heads, mask, not norm_first)):
            placement = ("post-norm", "pre-norm") if norm_first else ("pre-norm", "post-norm")
            raise kit.Mistake(
                f"{what} computed {placement[0]}, but norm_first={norm_first} asks for "
                f"{placement[1]}"
            )
        if mask is not None and np.allclose(
            got, encoder.encoder_layer(x, params, n_heads, None, norm_first)
        ):
            raise kit.Mistake(
                f"{what} ignores the mask: pass it to multi_head_attention, so that no token "
                "attends to the padding"
            )
        for flags, message in slips:
            wrong = _slipped_encoder_layer(x, params, n_heads, mask, norm_first, **flags)
            if not np.allclose(wrong, expected, rtol=1e-7, atol=1e-9) and np.allclose(
                got, wrong, rtol=1e-7, atol=1e-9
            ):
                raise kit.Mistake(f"{what}: {message}")
        if mask is not None:
            padded = ~np.broadcast_to(mask, (x.shape[0], 1, x.shape[1]))[:, 0, :]  # (B, T)
            zeroed = np.where(padded[..., None], 0.0, expected)  # (B, T, D)
            if padded.any() and np.allclose(got, zeroed, rtol=1e-7, atol=1e-9):
                raise kit.Mistake(
                    f"{what} sets the outputs at the padding positions to 0: the layer "
                    "computes them like any other position (the mask only keeps real tokens "
                    "from reading them), as EncoderLayer does"
                )
        kit.assert_close(got, expected, what)

    def checks() -> str:
        for case in cases:
            check_one(*case)
        kit.require_own_code(
            encoder_layer_numpy,
            cases[0],
            (
                *kit.TORCH,
                "selfattn_lib.encoder.encoder_layer",
                "selfattn_lib.layers",
                "selfattn_lib.transformer",
            ),
            name,
            (
                "the exercise is to write the layer yourself, with NumPy (the library's "
                "multi_head_attention is allowed)"
            ),
        )
        return (
            "Your encoder layer is right, post-norm and pre-norm, with and without a padding "
            "mask: it computes what selfattn_lib's EncoderLayer and PyTorch's "
            "nn.TransformerEncoderLayer compute."
        )

    return kit.run_checks(checks)
