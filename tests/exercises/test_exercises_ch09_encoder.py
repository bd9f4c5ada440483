"""Tests of the checkers of chapter 9 (selfattn_lib.exercises.ch09_encoder): each names
the mistake in typical wrong answers and accepts the usual correct alternatives. What every
checker promises is tested once, over REFERENCES, in test_exercises_registry.py."""

import numpy as np
import pytest

from selfattn_lib import exercises

# (Everything from here to the end of the block tests the checkers of chapter 9.)


def ch9_rms_norm(x, gain, eps):
    return x / np.sqrt((x**2).mean(axis=-1, keepdims=True) + eps) * gain


def ch9_rms_norm_by_length(x, gain, eps):
    d_model = x.shape[-1]
    length = np.linalg.norm(x, axis=-1, keepdims=True)
    return gain * x / np.sqrt(length**2 / d_model + eps)


def ch9_layer_norm(x, gain, bias, eps=1e-5, ddof=0, eps_outside=False):
    centred = x - x.mean(axis=-1, keepdims=True)
    spread = np.sqrt(x.var(axis=-1, ddof=ddof, keepdims=True))
    return gain * centred / (spread + eps if eps_outside else np.sqrt(spread**2 + eps)) + bias


def ch9_sublayer_connection(x, sublayer, norm, norm_first):
    return x + sublayer(norm(x)) if norm_first else norm(x + sublayer(x))


def ch9_encoder_layer(
    x, params, n_heads, mask, norm_first, ddof=0, relu=True, eps_outside=False, residual=True,
    swap_norms=False, eps=1e-5, activation=None, relu_after=False, keep=(True, True),
    add_normed=False, final_norm=False,
):  # fmt: skip
    """A NumPy encoder layer; the keyword arguments make the usual slips."""
    from selfattn_lib.multihead import multi_head_attention

    first, second = (2, 1) if swap_norms else (1, 2)
    keep_1, keep_2 = (float(residual and kept) for kept in keep)

    def norm(v, which):
        gain, bias = params[f"gain_{which}"], params[f"bias_{which}"]
        return ch9_layer_norm(v, gain, bias, eps=eps, ddof=ddof, eps_outside=eps_outside)

    def attend(v):
        return multi_head_attention(v, v, params["attention"], n_heads, mask)[0]

    def ffn(v):
        hidden = v @ params["w_1"] + params["b_1"]
        hidden = activation(hidden) if activation else np.maximum(hidden, 0.0) if relu else hidden
        out = hidden @ params["w_2"] + params["b_2"]
        return np.maximum(out, 0.0) if relu_after else out

    if norm_first:
        normed = norm(x, first)
        x = keep_1 * (normed if add_normed else x) + attend(normed)
        normed = norm(x, second)
        x = keep_2 * (normed if add_normed else x) + ffn(normed)
        return norm(x, 2) if final_norm else x
    x = norm(keep_1 * x + attend(x), first)
    return norm(keep_2 * x + ffn(x), second)


def ch9_encoder_layer_zeroed_padding(x, params, n_heads, mask, norm_first):
    out = ch9_encoder_layer(x, params, n_heads, mask, norm_first)
    if mask is not None:
        out[~mask[:, 0, :]] = 0.0  # the padding positions' outputs
    return out


def ch9_stub(*args):
    raise NotImplementedError


CH9_CHECKERS = {
    "rms_norm": (exercises.check_rms_norm, ch9_rms_norm),
    "sublayer_connection": (exercises.check_sublayer_connection, ch9_sublayer_connection),
    "encoder_layer_numpy": (exercises.check_encoder_layer_numpy, ch9_encoder_layer),
}


def assert_ch9_mistake(feedback, *fragments):
    assert feedback.attempted and not feedback.passed, feedback
    for fragment in fragments:
        assert fragment in feedback.message, (fragment, feedback.message)


def test_ch9_checkers_accept_other_correct_formulations():
    assert exercises.check_rms_norm(ch9_rms_norm_by_length).passed
    assert exercises.check_rms_norm(lambda x, g, eps: list(ch9_rms_norm(x, g, eps))).passed

    def post_then_pre(x, sublayer, norm, norm_first):
        if not norm_first:
            summed = x + sublayer(x)
            return norm(summed)
        return sublayer(norm(x)) + x

    assert exercises.check_sublayer_connection(post_then_pre).passed

    def float32_layer(x, params, n_heads, mask, norm_first):
        return ch9_encoder_layer(x, params, n_heads, mask, norm_first).astype(np.float32)

    assert exercises.check_encoder_layer_numpy(float32_layer).passed
    assert exercises.check_rms_norm(lambda x, g, eps: ch9_rms_norm(x, g, eps).astype("f4")).passed


def ch9_rms_norm_loop(x, gain, eps):
    flat = x.reshape(-1, x.shape[-1])
    rows = [gain * v / np.sqrt(np.mean(np.square(v)) + eps) for v in flat]
    return np.array(rows).reshape(x.shape)


def ch9_rms_norm_in_place(x, gain, eps):
    x /= np.sqrt(np.einsum("...d,...d->...", x, x)[..., None] / x.shape[-1] + eps)
    x *= gain
    return x


def ch9_sublayer_connection_copy(x, sublayer, norm, norm_first):
    if norm_first:
        out = x.copy()
        out += sublayer(norm(x))
        return out
    return norm(np.add(sublayer(x), x))


def ch9_attention_by_hand(v, attention, n_heads, mask):
    """Multi-head self-attention written out (a correct alternative to the library's)."""
    b, t, d = v.shape
    d_h = d // n_heads

    def heads(z):
        return z.reshape(b, t, n_heads, d_h).transpose(0, 2, 1, 3)

    q = heads(v @ attention.w_q + attention.b_q)
    k = heads(v @ attention.w_k + attention.b_k)
    values = heads(v @ attention.w_v + attention.b_v)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d_h)
    if mask is not None:
        scores = np.where(mask[:, None], scores, -1e9)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    merged = (weights @ values).transpose(0, 2, 1, 3).reshape(b, t, d)
    return merged @ attention.w_o + attention.b_o


def ch9_encoder_layer_by_hand(x, params, n_heads, mask, norm_first):
    def norm(v, which):
        mean = v.mean(axis=-1, keepdims=True)
        variance = ((v - mean) ** 2).mean(axis=-1, keepdims=True)
        normed = (v - mean) / np.sqrt(variance + 1e-5)
        return params[f"gain_{which}"] * normed + params[f"bias_{which}"]

    def ffn(v):
        hidden = np.clip(v @ params["w_1"] + params["b_1"], 0.0, None)
        return hidden @ params["w_2"] + params["b_2"]

    full = None if mask is None else np.broadcast_to(mask, (x.shape[0], x.shape[1], x.shape[1]))

    def attend(v):
        return ch9_attention_by_hand(v, params["attention"], n_heads, full)

    steps = ((attend, 1), (ffn, 2))
    for sublayer, which in steps:
        x = ch9_sublayer_connection(x, sublayer, lambda v, w=which: norm(v, w), norm_first)
    return x


def ch9_encoder_layer_einsum(x, params, n_heads, mask, norm_first):
    """Layer norm by ** 0.5, the feed-forward network with einsum, a loop over the two
    sublayers."""
    from selfattn_lib.multihead import multi_head_attention

    def norm(v, which):
        centred = v - v.mean(-1, keepdims=True)
        spread = ((centred**2).mean(-1, keepdims=True) + 1e-5) ** 0.5
        return centred / spread * params[f"gain_{which}"] + params[f"bias_{which}"]

    def ffn(v):
        hidden = np.einsum("btd,df->btf", v, params["w_1"]) + params["b_1"]
        return np.einsum("btf,fd->btd", hidden * (hidden > 0), params["w_2"]) + params["b_2"]

    def attend(v):
        return multi_head_attention(v, v, params["attention"], n_heads, mask=mask)[0]

    for which, sublayer in ((1, attend), (2, ffn)):
        if norm_first:
            x = x + sublayer(norm(x, which))
        else:
            x = norm(x + sublayer(x), which)
    return x


@pytest.mark.parametrize(
    ("checker", "answer"),
    [
        (exercises.check_rms_norm, ch9_rms_norm_loop),
        (exercises.check_rms_norm, ch9_rms_norm_in_place),
        (
            exercises.check_rms_norm,
            lambda x, g, eps: g * x * ((x * x).mean(-1, keepdims=True) + eps) ** -0.5,
        ),
        (exercises.check_sublayer_connection, ch9_sublayer_connection_copy),
        (exercises.check_encoder_layer_numpy, ch9_encoder_layer_by_hand),
        # Second review: more ways to write them right.
        (
            exercises.check_rms_norm,
            lambda x, g, eps: (
                x * (1 / np.sqrt(np.mean(np.square(x), axis=-1) + eps))[..., None] * g
            ),
        ),
        (
            exercises.check_rms_norm,
            lambda x, g, eps: np.apply_along_axis(
                lambda v: g * v / np.sqrt(v @ v / v.size + eps), -1, x
            ),
        ),
        (
            exercises.check_sublayer_connection,
            lambda x, f, n, first: np.add(x, f(n(x))) if first else n(np.add(x, f(x))),
        ),
        (exercises.check_encoder_layer_numpy, ch9_encoder_layer_einsum),
    ],
)
def test_ch9_checkers_accept_loops_hand_written_attention_and_copies(checker, answer):
    feedback = checker(answer)
    assert feedback.passed, feedback.message


def test_ch9_encoder_layer_numpy_built_on_the_torch_layer_breaks_the_prompts_rule():
    torch = pytest.importorskip("torch")
    from selfattn_lib.transformer import EncoderLayer, MultiHeadAttention

    def with_torch(x, params, n_heads, mask, norm_first):
        d_model, d_ff = params["w_1"].shape
        layer = EncoderLayer(d_model, n_heads, d_ff, norm_first=norm_first).double().eval()
        layer.self_attention = MultiHeadAttention.from_params(params["attention"], n_heads)
        with torch.no_grad():
            forward = layer.feed_forward
            forward.w_1.weight.copy_(torch.from_numpy(params["w_1"].T))
            forward.w_1.bias.copy_(torch.from_numpy(params["b_1"]))
            forward.w_2.weight.copy_(torch.from_numpy(params["w_2"].T))
            forward.w_2.bias.copy_(torch.from_numpy(params["b_2"]))
            for which in (1, 2):
                norm = getattr(layer, f"norm_{which}")
                norm.weight.copy_(torch.from_numpy(params[f"gain_{which}"]))
                norm.bias.copy_(torch.from_numpy(params[f"bias_{which}"]))
            torch_mask = None if mask is None else torch.from_numpy(mask)
            return layer(torch.from_numpy(x), torch_mask).numpy()

    feedback = exercises.check_encoder_layer_numpy(with_torch)
    assert feedback.attempted and not feedback.passed
    assert "gives the right result, but it calls `selfattn_lib.layers." in feedback.message


def test_ch9_checkers_accept_torch_tensors_that_require_grad():
    torch = pytest.importorskip("torch")

    def sublayer_as_tensor(x, sublayer, norm, norm_first):
        scale = torch.ones((), dtype=torch.float64, requires_grad=True)
        return scale * torch.from_numpy(
            np.asarray(ch9_sublayer_connection(x, sublayer, norm, norm_first))
        )

    assert exercises.check_sublayer_connection(sublayer_as_tensor).passed


def test_ch9_rms_norm_from_a_torch_module_breaks_the_prompts_rule():
    torch = pytest.importorskip("torch")

    def with_rms_module(x, gain, eps):
        module = torch.nn.RMSNorm(x.shape[-1], eps=eps, dtype=torch.float64)
        with torch.no_grad():
            module.weight.copy_(torch.from_numpy(gain))
        return module(torch.from_numpy(x))  # requires grad: the module's weight does

    feedback = exercises.check_rms_norm(with_rms_module)
    assert feedback.attempted and not feedback.passed
    assert "but it calls `torch." in feedback.message, feedback.message


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda x, g, eps: ch9_layer_norm(x, g, 0.0, eps), ["that is layer norm"]),
        (
            lambda x, g, eps: x / (np.sqrt((x**2).mean(-1, keepdims=True)) + eps) * g,
            ["eps is added after the square root"],
        ),
        (
            lambda x, g, eps: x / ((x**2).mean(-1, keepdims=True) + eps) * g,
            ["without the square root"],
        ),
        (
            lambda x, g, eps: x / np.sqrt((x**2).sum(-1, keepdims=True) + eps) * g,
            ["root MEAN square", "√D times too small"],
        ),
        (
            lambda x, g, eps: x / np.sqrt((x**2).mean(-1, keepdims=True) + eps),
            ["the gain is missing"],
        ),
        (lambda x, g, eps: x / np.sqrt((x**2).mean(-1, keepdims=True)) * g, ["eps is missing"]),
        (
            lambda x, g, eps: x / np.sqrt((x**2).mean(0, keepdims=True) + eps) * g,
            ["first axis", "axis=-1"],
        ),
        (lambda x, g, eps: x / np.sqrt((x**2).mean() + eps) * g, ["one mean square"]),
        (
            lambda x, g, eps: x / np.sqrt(x.var(-1, keepdims=True) + eps) * g,
            ["standard deviation", "root mean square of x itself"],
        ),
        (lambda x, g, eps: None, ["forget the `return`"]),
        (lambda x, g, eps: x[..., :-1], ["returned shape"]),
        # Mistakes written from the prompt alone (issue 27, round 3).
        (
            lambda x, g, eps: x / np.sqrt((x**2).mean(-2, keepdims=True) + eps) * g,
            ["averages over axis 1", "axis=-1"],
        ),
        (
            lambda x, g, eps: (
                x / np.sqrt((x**2).sum(-1, keepdims=True) / (x.shape[-1] - 1) + eps) * g
            ),
            ["D - 1"],
        ),
        (
            lambda x, g, eps: x / np.sqrt((x**2).mean(-1, keepdims=True) + eps) / g,
            ["divides by the gain"],
        ),
        (
            lambda x, g, eps: ch9_rms_norm(x * g, np.ones_like(g), eps),
            ["gain before normalising"],
        ),
        (
            lambda x, g, eps: x * np.sqrt((x**2).mean(-1, keepdims=True) + eps) * g,
            ["multiplies by the root mean square"],
        ),
        (
            lambda x, g, eps: x / (np.abs(x).mean(-1, keepdims=True) + eps) * g,
            ["mean ABSOLUTE value"],
        ),
        (
            lambda x, g, eps: x / np.sqrt((x**2).mean(-1) + eps) * g,
            ["lost that axis", "keepdims=True"],
        ),
        # Second review: eps squared was told 'eps is missing', a fixed eps 'off at index'.
        (
            lambda x, g, eps: x / np.sqrt((x**2).mean(-1, keepdims=True) + eps**2) * g,
            ["eps is squared"],
        ),
        (
            lambda x, g, eps: x / np.sqrt((x**2).mean(-1, keepdims=True) + 1e-5) * g,
            ["eps is fixed at 1e-05", "passes eps=1e-06", "use the argument"],
        ),
        (
            lambda x, g, eps: x / np.sqrt((x**2).mean(-1, keepdims=True) + 1e-6) * g,
            ["eps is fixed at 1e-06", "passes eps=0.0001"],
        ),
        # Third review: eps added after the division was told 'got 1.28767, expected 1.28767'.
        (
            lambda x, g, eps: x / np.sqrt((x**2).mean(-1, keepdims=True)) * g + eps,
            ["eps is added to the result", "inside the square root"],
        ),
        (
            lambda x, g, eps: (x / np.sqrt((x**2).mean(-1, keepdims=True)) + eps) * g,
            ["eps is added to the result"],
        ),
    ],
)
def test_ch9_rms_norm_names_typical_mistakes(answer, fragments):
    assert_ch9_mistake(exercises.check_rms_norm(answer), *fragments)


def ch9_sublayer_connection_in_place(x, sublayer, norm, norm_first):
    if norm_first:
        x += sublayer(norm(x))
        return x
    return norm(x + sublayer(x))


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda x, f, n, first: x + f(n(x)), ["norm_first=False", "this is pre-norm"]),
        (lambda x, f, n, first: n(x + f(x)), ["norm_first=True", "this is post-norm"]),
        (lambda x, f, n, first: x + n(f(x)), ["x + LN(Sublayer(x))", "popular blog post"]),
        (lambda x, f, n, first: n(f(x)), ["residual is missing"]),
        (lambda x, f, n, first: x + f(x), ["layer norm is missing"]),
        (lambda x, f, n, first: f(x), ["sublayer's output alone"]),
        (
            lambda x, f, n, first: n(x) + f(n(x)) if first else n(x + f(x)),
            ["NORMALISED input"],
        ),
        (
            lambda x, f, n, first: n(x + f(n(x))) if first else n(x + f(x)),
            ["normalises again after the addition"],
        ),
        (lambda x, f, n, first: None, ["forget the `return`"]),
        # Mistakes written from the prompt alone (issue 27, round 3).
        (
            lambda x, f, n, first: x + f(n(x)) if first else n(x + f(n(x))),
            ["also normalises the sublayer's INPUT"],
        ),
        (lambda x, f, n, first: x + n(f(n(x))), ["'sandwich'"]),
        (
            lambda x, f, n, first: f(n(x)) if first else n(x + f(x)),
            ["residual is missing", "without adding x"],
        ),
        (
            lambda x, f, n, first: x + f(n(x)) if first else n(x) + f(x),
            ["normalises x alone", "the SUM"],
        ),
        (ch9_sublayer_connection_in_place, ["changed the x it was given"]),
    ],
)
def test_ch9_sublayer_connection_names_typical_mistakes(answer, fragments):
    assert_ch9_mistake(exercises.check_sublayer_connection(answer), *fragments)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (
            lambda x, p, h, m, first: ch9_encoder_layer(x, p, h, m, not first),
            ["computed pre-norm", "asks for post-norm"],
        ),
        (
            lambda x, p, h, m, first: ch9_encoder_layer(x, p, h, None, first),
            ["ignores the mask"],
        ),
        (
            lambda x, p, h, m, first: ch9_encoder_layer(x, p, h, m, first, ddof=1),
            ["D - 1", "biased variance"],
        ),
        (
            lambda x, p, h, m, first: ch9_encoder_layer(x, p, h, m, first, relu=False),
            ["no ReLU"],
        ),
        (
            lambda x, p, h, m, first: ch9_encoder_layer(x, p, h, m, first, eps_outside=True),
            ["eps is added after the square root"],
        ),
        (
            lambda x, p, h, m, first: ch9_encoder_layer(x, p, h, m, first, residual=False),
            ["residual connections are missing"],
        ),
        (
            lambda x, p, h, m, first: ch9_encoder_layer(x, p, h, m, first, swap_norms=True),
            ["two layer norms are swapped"],
        ),
        (lambda x, p, h, m, first: x, ["returns x unchanged"]),
        (lambda x, p, h, m, first: 2 * x, ["is off at index"]),  # not a known slip: where
        (lambda x, p, h, m, first: x[:, :-1], ["returned shape"]),
        # Mistakes written from the prompt alone (issue 27, round 3).
        (
            lambda x, p, h, m, first: ch9_encoder_layer(x, p, h, m, first, keep=(True, False)),
            ["feed-forward sublayer has no residual"],
        ),
        (
            lambda x, p, h, m, first: ch9_encoder_layer(x, p, h, m, first, keep=(False, True)),
            ["attention sublayer has no residual"],
        ),
        (lambda x, p, h, m, first: ch9_encoder_layer(x, p, h, m, first, eps=1e-6), ["eps is 1e-6"]),
        (
            lambda x, p, h, m, first: ch9_encoder_layer(x, p, h, m, first, eps=1e-12),
            ["eps is missing"],
        ),
        (
            lambda x, p, h, m, first: ch9_encoder_layer(
                x, p, h, m, first, activation=lambda z: z / (1 + np.exp(-1.702 * z))
            ),
            ["uses GELU", "sigmoid approximation"],
        ),
        (
            lambda x, p, h, m, first: ch9_encoder_layer(
                x,
                p,
                h,
                m,
                first,
                activation=lambda z: 0.5 * z * (1 + np.tanh(0.7978845608 * (z + 0.044715 * z**3))),
            ),
            ["uses GELU"],
        ),  # fmt: skip
        (
            lambda x, p, h, m, first: ch9_encoder_layer(x, p, h, m, first, relu_after=True),
            ["ReLU to its output too"],
        ),
        (
            lambda x, p, h, m, first: (
                ch9_encoder_layer(x, p, h, m, first, add_normed=True)
                if first
                else ch9_encoder_layer(x, p, h, m, first)
            ),
            ["NORMALISED input"],
        ),
        (
            lambda x, p, h, m, first: ch9_encoder_layer(x, p, h, m, first, final_norm=True),
            ["normalises the layer's output once more"],
        ),
        (
            lambda x, p, h, m, first: ch9_encoder_layer(x, p, h, None if m is None else ~m, first),
            ["mask inverted"],
        ),
        (ch9_encoder_layer_zeroed_padding, ["outputs at the padding positions to 0"]),
    ],
)
def test_ch9_encoder_layer_numpy_names_typical_mistakes(answer, fragments):
    assert_ch9_mistake(exercises.check_encoder_layer_numpy(answer), *fragments)


# Every checker of the chapter with a correct answer: test_exercises_registry.py runs them.
REFERENCES = {
    **{checker.__name__: solution for checker, solution in CH9_CHECKERS.values()},
}
