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
    swap_norms=False,
):  # fmt: skip
    """A NumPy encoder layer; the keyword arguments make the usual slips."""
    from selfattn_lib.multihead import multi_head_attention

    first, second = (2, 1) if swap_norms else (1, 2)
    keep = 1.0 if residual else 0.0

    def norm(v, which):
        gain, bias = params[f"gain_{which}"], params[f"bias_{which}"]
        return ch9_layer_norm(v, gain, bias, ddof=ddof, eps_outside=eps_outside)

    def attend(v):
        return multi_head_attention(v, v, params["attention"], n_heads, mask)[0]

    def ffn(v):
        hidden = v @ params["w_1"] + params["b_1"]
        return (np.maximum(hidden, 0.0) if relu else hidden) @ params["w_2"] + params["b_2"]

    if norm_first:
        x = keep * x + attend(norm(x, first))
        return keep * x + ffn(norm(x, second))
    x = norm(keep * x + attend(x), first)
    return norm(keep * x + ffn(x), second)


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
    ],
)
def test_ch9_rms_norm_names_typical_mistakes(answer, fragments):
    assert_ch9_mistake(exercises.check_rms_norm(answer), *fragments)


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
        (lambda x, p, h, m, first: x, ["is off at index"]),
        (lambda x, p, h, m, first: x[:, :-1], ["returned shape"]),
    ],
)
def test_ch9_encoder_layer_numpy_names_typical_mistakes(answer, fragments):
    assert_ch9_mistake(exercises.check_encoder_layer_numpy(answer), *fragments)


# Every checker of the chapter with a correct answer: test_exercises_registry.py runs them.
REFERENCES = {
    **{checker.__name__: solution for checker, solution in CH9_CHECKERS.values()},
}
