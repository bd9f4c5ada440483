"""Chapter 14's induction diagnostics: the repeated-token data, the attention-only model
(parity with PyTorch's attention, causality, zero ablation), the per-head scores on
hand-made attention patterns and weights, the in-context loss and reproducible training."""

from __future__ import annotations

import inspect
import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from strategies import PROPERTY_SETTINGS, seeds

from selfattn_lib import induction
from selfattn_lib.grouped_query import GroupedQueryAttention
from selfattn_lib.induction import (
    AttentionOnlyConfig,
    AttentionOnlyTransformer,
    InductionHistory,
    copying_scores,
    in_context_loss,
    ov_circuit,
    prefix_matching_scores,
    previous_token_scores,
    repeated_tokens,
    train_induction_model,
)
from selfattn_lib.layers import MultiHeadAttention
from selfattn_lib.rotary import apply_rotary
from selfattn_lib.training import linear_warmup_decay

SMALL = AttentionOnlyConfig(
    vocab_size=11, context_length=12, d_model=12, n_heads=3, positions="learned"
)


def small_model(seed: int = 0, config: AttentionOnlyConfig = SMALL) -> AttentionOnlyTransformer:
    torch.manual_seed(seed)
    return AttentionOnlyTransformer(config).double().eval()


def tokens_of(seed: int, n_sequences: int = 3, half_length: int = 5, vocab_size: int = 11):
    generator = torch.Generator().manual_seed(seed)
    return repeated_tokens(n_sequences, half_length, vocab_size, generator=generator)


# ---------------------------------------------------------------- data


@given(
    n_sequences=st.integers(1, 4),
    half_length=st.integers(1, 6),
    vocab_size=st.integers(2, 9),
    first_token=st.one_of(st.none(), st.integers(0, 8)),
    distinct=st.booleans(),
    seed=seeds,
)
@PROPERTY_SETTINGS
def test_repeated_tokens_repeat_their_first_half(
    n_sequences, half_length, vocab_size, first_token, distinct, seed
):
    first_token = None if first_token is None else first_token % vocab_size
    arguments = {
        "generator": torch.Generator().manual_seed(seed),
        "first_token": first_token,
        "distinct": distinct,
    }
    pool = vocab_size if first_token is None else vocab_size - 1  # the ids drawn from
    drawn = half_length if first_token is None else half_length - 1
    if distinct and drawn > pool:
        with pytest.raises(ValueError, match="half_length"):
            repeated_tokens(n_sequences, half_length, vocab_size, **arguments)
        return
    tokens = repeated_tokens(n_sequences, half_length, vocab_size, **arguments)
    assert tokens.shape == (n_sequences, 2 * half_length)
    assert tokens.dtype == torch.int64
    assert torch.equal(tokens[:, :half_length], tokens[:, half_length:])
    assert 0 <= tokens.min() and tokens.max() < vocab_size
    if first_token is not None:
        assert (tokens[:, 0] == first_token).all()
        assert (tokens[:, 1:half_length] != first_token).all()  # the others never are
    if distinct:
        assert all(len(set(half)) == half_length for half in tokens[:, :half_length].tolist())


@pytest.mark.parametrize("distinct", [True, False])
def test_repeated_tokens_draw_every_other_id_uniformly(distinct):
    """At every position of the first half (but the first), with or without repeats."""
    generator = torch.Generator().manual_seed(0)
    tokens = repeated_tokens(20_000, 5, 6, generator=generator, first_token=2, distinct=distinct)
    for position in range(1, 5):
        counts = torch.bincount(tokens[:, position], minlength=6)  # (V,)
        assert counts[2] == 0
        others = counts[[0, 1, 3, 4, 5]].double()
        assert (others / others.sum() - 0.2).abs().max() < 0.015  # 20 000 draws: σ ≈ 0.003
    free = repeated_tokens(2000, 5, 6, generator=generator, first_token=None, distinct=distinct)
    assert set(free[:, 0].tolist()) == set(range(6))  # the first token is random too


def test_the_one_token_rule_predicts_every_token_of_chapter_14s_repeated_halves():
    """Chapter 14's task: with no token twice in a half, each token of the repeated half
    has exactly one earlier occurrence, n positions back, and the token that followed it
    is the next one: "copy what followed the earlier occurrence" is never ambiguous."""
    n = 16
    tokens = repeated_tokens(500, n, 64, generator=torch.Generator().manual_seed(10_000))
    for row in tokens.tolist():
        for i in range(n, 2 * n - 1):  # the queries that predict tokens n + 1 … 2n − 1
            earlier = [j for j in range(i) if row[j] == row[i]]
            assert earlier == [i - n] and row[earlier[0] + 1] == row[i + 1]


def test_drawn_with_replacement_most_halves_repeat_a_token():
    """Why chapter 14 draws without replacement: with halves of 16 among 63 ids, 84 % of
    the sequences would hold a token twice in a half, 1 − 63! / (48! · 63^15)."""
    tokens = repeated_tokens(
        4000, 16, 64, generator=torch.Generator().manual_seed(0), distinct=False
    )
    share = sum(len(set(half)) < 16 for half in tokens[:, :16].tolist()) / 4000
    expected = 1 - math.prod((63 - k) / 63 for k in range(15))
    assert expected == pytest.approx(0.84, abs=0.005) and share == pytest.approx(expected, abs=0.02)


def test_repeated_tokens_are_reproducible_and_leave_the_global_generator_alone():
    state = torch.random.get_rng_state()
    assert torch.equal(tokens_of(3), tokens_of(3))
    assert not torch.equal(tokens_of(3), tokens_of(4))
    assert torch.equal(torch.random.get_rng_state(), state)


@pytest.mark.parametrize(
    ("kwargs", "error", "named"),
    [
        ({"n_sequences": 0}, ValueError, "n_sequences"),
        ({"half_length": 2.0}, TypeError, "half_length"),
        ({"vocab_size": -1}, ValueError, "vocab_size"),
        ({"generator": 0}, TypeError, "generator"),
        ({"first_token": 5}, ValueError, "first_token"),
        ({"first_token": True}, TypeError, "first_token"),
        ({"vocab_size": 1}, ValueError, "vocab_size"),
        ({"half_length": 6}, ValueError, "half_length = 6 needs 5 different random ids"),
        ({"half_length": 6, "first_token": None}, ValueError, "vocab_size = 5 leaves 5"),
        ({"distinct": 1}, TypeError, "distinct"),
    ],
)
def test_repeated_tokens_reject_bad_arguments(kwargs, error, named):
    arguments = {
        "n_sequences": 2,
        "half_length": 3,
        "vocab_size": 5,
        "generator": torch.Generator(),
        **kwargs,
    }
    with pytest.raises(error, match=named):
        repeated_tokens(**arguments)


# ---------------------------------------------------------------- the model


def reference_logits(model: AttentionOnlyTransformer, tokens: torch.Tensor) -> torch.Tensor:
    """The same model computed with F.scaled_dot_product_attention and explicit weights."""
    config = model.config
    d_head = config.d_model // config.n_heads
    x = model.token_embedding.weight[tokens] + model.position_embedding.weight[: tokens.shape[1]]
    for attention in model.layers:
        heads = [
            (x @ getattr(attention, name).weight.T)
            .unflatten(-1, (config.n_heads, d_head))
            .transpose(1, 2)
            for name in ("w_q", "w_k", "w_v")
        ]
        attended = F.scaled_dot_product_attention(*heads, is_causal=True)  # (B, H, T, D_h)
        x = x + attended.transpose(1, 2).flatten(-2) @ attention.w_o.weight.T
    return x @ model.unembedding.weight.T


@pytest.mark.parametrize("seed", range(3))
def test_the_model_matches_pytorch_attention_in_float64(seed):
    model = small_model(seed)
    tokens = tokens_of(seed, half_length=6)
    logits, weights = model(tokens, return_weights=True)
    assert logits.shape == (3, 12, 11) and logits.dtype == torch.float64
    assert torch.allclose(logits, reference_logits(model, tokens), atol=1e-10)
    assert len(weights) == 2 and all(w.shape == (3, 3, 12, 12) for w in weights)
    for layer_weights in weights:
        assert torch.allclose(layer_weights.sum(-1), torch.ones(3, 3, 12, dtype=torch.float64))
        assert (layer_weights.triu(diagonal=1) == 0).all()  # causal


def test_the_rotary_model_matches_pytorch_attention_on_rotated_queries_and_keys():
    config = AttentionOnlyConfig(11, context_length=12, d_model=12, n_heads=2, positions="rope")
    model = small_model(1, config)
    tokens = tokens_of(1, half_length=6)
    positions = torch.arange(12)
    x = model.token_embedding.weight[tokens]
    for attention in model.layers:
        q, k, v = (
            (x @ getattr(attention, name).weight.T).unflatten(-1, (2, 6)).transpose(1, 2)
            for name in ("w_q", "w_k", "w_v")
        )
        q, k = apply_rotary(q, positions), apply_rotary(k, positions)
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, T, D_h)
        x = x + attended.transpose(1, 2).flatten(-2) @ attention.w_o.weight.T
    assert torch.allclose(model(tokens), x @ model.unembedding.weight.T, atol=1e-10)
    _, weights = model(tokens, return_weights=True)
    _, ablated = model(tokens, return_weights=True, ablate=[(1, 1)])
    assert torch.equal(weights[0], ablated[0]) and torch.equal(weights[1][:, 0], ablated[1][:, 0])
    assert (ablated[1][:, 1] == 0).all()


def test_the_model_has_no_feed_forward_norm_or_bias_and_untied_embeddings():
    model = small_model()
    names = {name for name, _ in model.named_parameters()}
    assert names == {
        "token_embedding.weight",
        "position_embedding.weight",
        *(f"layers.{i}.w_{p}.weight" for i in range(2) for p in "qkvo"),
        "unembedding.weight",
    }
    assert all(isinstance(layer, MultiHeadAttention) for layer in model.layers)
    assert model.unembedding.weight is not model.token_embedding.weight


@pytest.mark.parametrize("positions", ["learned", "rope"])
def test_a_later_token_never_changes_an_earlier_logit(positions):
    config = AttentionOnlyConfig(11, context_length=12, d_model=12, n_heads=2, positions=positions)
    model = small_model(1, config)
    tokens = tokens_of(1, half_length=6)
    changed = tokens.clone()
    changed[:, 7:] = (changed[:, 7:] + 1) % 11
    assert torch.allclose(model(tokens)[:, :7], model(changed)[:, :7], atol=1e-12)
    assert not torch.allclose(model(tokens)[:, 7:], model(changed)[:, 7:])


def test_rotary_positions_use_grouped_query_attention_and_read_any_length():
    config = AttentionOnlyConfig(11, context_length=4, d_model=12, n_heads=2, positions="rope")
    model = small_model(0, config)
    assert model.position_embedding is None
    assert all(isinstance(layer, GroupedQueryAttention) for layer in model.layers)
    assert all(layer.rotary == "half" for layer in model.layers)
    assert model(tokens_of(0, half_length=6)).shape == (3, 12, 11)  # longer than context_length
    with pytest.raises(ValueError, match="context_length"):
        small_model()(tokens_of(0, half_length=7))


@pytest.mark.parametrize(
    ("kwargs", "error", "named"),
    [
        ({"d_model": 10}, ValueError, "d_model"),
        ({"positions": "sinusoidal"}, ValueError, "positions"),
        ({"positions": 1}, TypeError, "positions"),
        ({"d_model": 6, "n_heads": 2, "positions": "rope"}, ValueError, "rope"),
        ({"n_layers": 0}, ValueError, "n_layers"),
        ({"vocab_size": 2.0}, TypeError, "vocab_size"),
    ],
)
def test_the_config_rejects_bad_sizes(kwargs, error, named):
    with pytest.raises(error, match=named):
        AttentionOnlyConfig(**{"vocab_size": 11, "d_model": 12, "n_heads": 3, **kwargs})


# ---------------------------------------------------------------- ablation


def head_output(model, tokens, layer: int, head: int) -> torch.Tensor:
    """What one head adds to the residual stream: its weights times its values, through
    its slice of W_O."""
    d_head = model.config.d_model // model.config.n_heads
    rows = slice(head * d_head, (head + 1) * d_head)
    n_tokens = tokens.shape[1]
    causal = torch.ones(n_tokens, n_tokens, dtype=torch.bool).tril()
    residual = model.token_embedding.weight[tokens] + model.position_embedding.weight[:n_tokens]
    for earlier in model.layers[:layer]:
        residual = residual + earlier(residual, residual, residual, causal)
    attention = model.layers[layer]
    _, weights = model(tokens, return_weights=True)
    values = residual @ attention.w_v.weight[rows].T  # (B, T, D_h)
    return weights[layer][:, head] @ values @ attention.w_o.weight[:, rows].T  # (B, T, D)


@pytest.mark.parametrize("no_heads", [(), [], iter(()), set()])
def test_ablating_no_head_changes_nothing(no_heads):
    model = small_model(2)
    tokens = tokens_of(2, half_length=6)
    logits, weights = model(tokens, return_weights=True)
    ablated, ablated_weights = model(tokens, return_weights=True, ablate=no_heads)
    assert torch.equal(logits, ablated)
    assert all(torch.equal(a, b) for a, b in zip(weights, ablated_weights, strict=True))


@pytest.mark.parametrize("head", range(3))
def test_ablating_a_last_layer_head_removes_exactly_its_own_term(head):
    model = small_model(3)
    tokens = tokens_of(3, half_length=6)
    logits, weights = model(tokens, return_weights=True)
    ablated, ablated_weights = model(tokens, return_weights=True, ablate=[(1, head)])
    assert torch.equal(weights[0], ablated_weights[0])  # the first layer does not depend on it
    others = [h for h in range(3) if h != head]
    assert torch.equal(weights[1][:, others], ablated_weights[1][:, others])
    assert (ablated_weights[1][:, head] == 0).all()
    term = head_output(model, tokens, 1, head) @ model.unembedding.weight.T  # (B, T, V)
    assert torch.allclose(logits - ablated, term, atol=1e-10)


def test_ablating_a_first_layer_head_changes_the_second_layer_through_the_residual():
    model = small_model(4)
    tokens = tokens_of(4, half_length=6)
    _, weights = model(tokens, return_weights=True)
    _, ablated_weights = model(tokens, return_weights=True, ablate=[(0, 1)])
    assert torch.equal(weights[0][:, [0, 2]], ablated_weights[0][:, [0, 2]])
    assert (ablated_weights[0][:, 1] == 0).all()
    assert not torch.allclose(weights[1], ablated_weights[1])  # the next layer reads it


def test_ablating_every_head_leaves_the_direct_path():
    model = small_model(5)
    tokens = tokens_of(5, half_length=6)
    every_head = [(layer, head) for layer in range(2) for head in range(3)]
    direct = (
        model.token_embedding.weight[tokens] + model.position_embedding.weight[:12]
    ) @ model.unembedding.weight.T
    assert torch.allclose(model(tokens, ablate=every_head), direct, atol=1e-12)


@pytest.mark.parametrize(
    ("ablate", "error", "message"),
    [
        ([(2, 0)], ValueError, "layer"),
        ([(0, 3)], ValueError, "head"),
        ([(0, -1)], ValueError, "head"),
        ([(0,)], TypeError, "pairs"),
        ("01", TypeError, "ablate"),
        (3, TypeError, "ablate"),
        ([(0, 1.0)], TypeError, "head"),
        ([(True, 0)], TypeError, "layer"),
    ],
)
def test_bad_ablations_are_rejected(ablate, error, message):
    with pytest.raises(error, match=message):
        small_model()(tokens_of(0), ablate=ablate)


# ---------------------------------------------------------------- attention scores


def previous_token_pattern(n_tokens: int) -> torch.Tensor:
    pattern = torch.zeros(n_tokens, n_tokens)
    pattern[0, 0] = 1.0
    pattern[torch.arange(1, n_tokens), torch.arange(n_tokens - 1)] = 1.0
    return pattern  # (T, T)


def induction_pattern(half_length: int) -> torch.Tensor:
    pattern = torch.eye(2 * half_length)  # attend to itself where there is nothing to match
    for query in range(half_length, 2 * half_length):
        pattern[query] = 0.0
        pattern[query, query - half_length + 1] = 1.0
    return pattern  # (T, T)


def test_hand_made_patterns_score_one_where_they_should():
    n = 4
    uniform = torch.ones(2 * n, 2 * n).tril()
    uniform = uniform / uniform.sum(-1, keepdim=True)
    layer = torch.stack([previous_token_pattern(2 * n), induction_pattern(n), uniform])[None]
    previous = previous_token_scores([layer, layer])  # (L, H) = (2, 3)
    prefix = prefix_matching_scores([layer, layer], half_length=n)
    assert previous.shape == prefix.shape == (2, 3)
    expected_uniform = sum(1 / (i + 1) for i in range(1, 2 * n)) / (2 * n - 1)
    assert torch.allclose(previous[0], torch.tensor([1.0, 0.0, expected_uniform]))
    expected_uniform = sum(1 / (i + 1) for i in range(n, 2 * n)) / n
    assert torch.allclose(prefix[1], torch.tensor([0.0, 1.0, expected_uniform]))


def test_with_half_length_2_the_previous_token_is_the_induction_target():
    pattern = previous_token_pattern(4)[None, None]  # query i on key i - 1 = i - 2 + 1
    assert prefix_matching_scores([pattern], 2).item() == 1.0


@given(seed=seeds, half_length=st.integers(1, 4))
@PROPERTY_SETTINGS
def test_scores_of_any_attention_pattern_lie_between_0_and_1(seed, half_length):
    generator = torch.Generator().manual_seed(seed)
    n_tokens = 2 * half_length
    scores = torch.randn(2, 3, n_tokens, n_tokens, generator=generator) * 3
    causal = torch.ones(n_tokens, n_tokens, dtype=torch.bool).tril()
    weights = torch.softmax(scores.masked_fill(~causal, -math.inf), dim=-1)
    for layer_scores in (
        previous_token_scores([weights, weights.flip(1)]),
        prefix_matching_scores([weights], half_length),
    ):
        assert ((layer_scores >= 0) & (layer_scores <= 1)).all()
    assert torch.allclose(
        previous_token_scores([weights])[0], weights.diagonal(-1, -2, -1).mean(dim=(0, 2))
    )


def test_scores_read_the_weights_the_model_returns():
    model = small_model(6)
    _, weights = model(tokens_of(6, half_length=6), return_weights=True)
    assert previous_token_scores(weights).shape == (2, 3)
    assert prefix_matching_scores(weights, 6).shape == (2, 3)


@pytest.mark.parametrize(
    ("weights", "half_length", "error", "message"),
    [
        (torch.ones(1, 1, 4, 4), 2, TypeError, "list"),
        ([], 2, ValueError, "empty"),
        ([torch.ones(1, 4, 4)], 2, ValueError, r"\(B, H, T, T\)"),
        ([torch.ones(1, 1, 4, 3)], 2, ValueError, r"\(B, H, T, T\)"),
        ([torch.ones(1, 1, 4, 4, dtype=torch.long)], 2, TypeError, "floating"),
        ([torch.ones(1, 1, 4, 4), torch.ones(1, 1, 6, 6)], 2, ValueError, "same shape"),
        ([torch.ones(1, 1, 6, 6)], 2, ValueError, "half_length"),
        ([torch.ones(1, 1, 4, 4)], 0, ValueError, "half_length"),
    ],
)
def test_bad_weights_are_rejected(weights, half_length, error, message):
    with pytest.raises(error, match=message):
        prefix_matching_scores(weights, half_length)


def test_a_single_token_has_no_previous_token():
    with pytest.raises(ValueError, match="T ≥ 2"):
        previous_token_scores([torch.ones(1, 1, 1, 1)])


# ---------------------------------------------------------------- copying


def set_identity_circuit(model: AttentionOnlyTransformer, layer: int, head: int, sign: float):
    """Weights with W_E W_V^h W_O^h W_U = sign · I (V = D_h = 4 of D = 8)."""
    vocab_size, d_model = model.token_embedding.weight.shape
    d_head = d_model // model.config.n_heads
    identity = torch.eye(vocab_size, d_model, dtype=torch.float64)  # (V, D): first V features
    rows = slice(head * d_head, (head + 1) * d_head)
    with torch.no_grad():
        model.token_embedding.weight.copy_(identity)
        model.unembedding.weight.copy_(identity)
        attention = model.layers[layer]
        attention.w_v.weight[rows] = torch.eye(d_head, d_model, dtype=torch.float64)
        attention.w_o.weight[:, rows] = sign * torch.eye(d_model, d_head, dtype=torch.float64)


@pytest.mark.parametrize(("sign", "expected"), [(1.0, 1.0), (-1.0, -1.0), (0.0, 0.0)])
def test_copying_score_of_an_identity_circuit_is_its_sign(sign, expected):
    model = small_model(0, AttentionOnlyConfig(4, context_length=4, d_model=8, n_heads=2))
    set_identity_circuit(model, layer=1, head=1, sign=sign)
    assert torch.allclose(ov_circuit(model, 1, 1), sign * torch.eye(4, dtype=torch.float64))
    assert copying_scores(model)[1, 1].item() == pytest.approx(expected, abs=1e-12)


def test_a_rotation_copies_nothing():
    model = small_model(0, AttentionOnlyConfig(4, context_length=4, d_model=8, n_heads=2))
    set_identity_circuit(model, layer=0, head=0, sign=1.0)
    turn = torch.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=torch.float64)  # eigenvalues ±i
    with torch.no_grad():
        model.layers[0].w_o.weight[:4, :4] = torch.block_diag(turn, turn)
    assert copying_scores(model)[0, 0].item() == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize(("vocab_size", "d_head"), [(9, 4), (7, 1), (5, 5)])
def test_the_copying_score_of_two_factors_is_that_of_their_full_circuit(vocab_size, d_head):
    """From the small product right @ left, with the full V × V circuit's eigenvalues
    (negative and complex ones included, V - D_h of them zero)."""
    generator = torch.Generator().manual_seed(vocab_size + d_head)
    left = torch.randn(vocab_size, d_head, generator=generator, dtype=torch.float64)
    right = torch.randn(d_head, vocab_size, generator=generator, dtype=torch.float64)
    eigenvalues = torch.linalg.eigvals(left @ right)  # (V,) complex
    expected = (eigenvalues.sum().real / eigenvalues.abs().sum()).item()
    score = induction._copying_score(left, right)
    assert isinstance(score, float) and score == pytest.approx(expected, abs=1e-10)
    assert induction._copying_score(left, -right) == pytest.approx(-expected, abs=1e-10)
    assert induction._copying_score(left, 0 * right) == 0.0


def test_the_copying_score_is_1_for_circuits_that_do_not_copy():
    """The score is a heuristic: 1 for every circuit whose non-zero eigenvalues are real and
    positive. A head that always raises the same token, and the identity plus 10 times a
    strictly upper-triangular matrix, score 1 although most rows' largest entry is not
    their own token; a copy (the identity) scores 1 with every row's largest on the
    diagonal."""
    vocab_size = 8
    ones, fixed = torch.ones(vocab_size, 1, dtype=torch.float64), torch.zeros(1, vocab_size)
    fixed[0, 3] = 1.0  # the circuit 1 e_3ᵀ: every token raises token 3's logit
    generator = torch.Generator().manual_seed(0)
    upper = torch.randn(vocab_size, vocab_size, generator=generator, dtype=torch.float64)
    triangular = torch.eye(vocab_size, dtype=torch.float64) + 10 * upper.triu(1)
    identity = torch.eye(vocab_size, dtype=torch.float64)
    for left, right, own_largest in (
        (ones, fixed.double(), 1 / vocab_size),  # only row 3's largest is its own
        (triangular, identity, None),
        (identity, identity, 1.0),
    ):
        assert induction._copying_score(left, right) == pytest.approx(1.0, abs=1e-12)
        circuit = left @ right  # (V, V)
        share = (circuit.argmax(dim=1) == torch.arange(vocab_size)).double().mean().item()
        if own_largest is None:
            assert share < 0.5  # rows above the last few: a large entry right of the diagonal
        else:
            assert share == pytest.approx(own_largest)


def test_the_copying_score_can_be_low_for_a_circuit_whose_rows_peak_on_the_diagonal():
    """The converse fails too (copying_scores' docstring): every row's largest entry is its
    own token, yet two eigenvalues are complex (1 ± 1.71i) and the score is 0.60."""
    a = 0.99
    circuit = torch.tensor([[1, a, -a], [-a, 1, a], [a, -a, 1]], dtype=torch.float64)
    assert torch.equal(circuit.argmax(dim=1), torch.arange(3))
    identity = torch.eye(3, dtype=torch.float64)
    assert round(induction._copying_score(circuit, identity), 2) == 0.60


def test_an_ideal_first_half_of_distinct_tokens_costs_less_than_log2_63():
    """in_context_loss' docstring: drawn without repeats after a fixed token 0, the 15
    predicted tokens of a half of 16 come from 63, 62, … 49 tokens not yet drawn."""
    ideal = sum(math.log2(k) for k in range(49, 64)) / 15
    assert (round(ideal, 2), round(math.log2(63), 2)) == (5.80, 5.98)


def full_circuit_by_modules(model, layer: int, head: int) -> torch.Tensor:
    """The OV circuit by running the modules on every token's embedding with the other
    heads' value features set to zero."""
    attention = model.layers[layer]
    d_head = model.config.d_model // model.config.n_heads
    values = attention.w_v(model.token_embedding.weight)  # (V, D)
    keep = torch.zeros_like(values)
    keep[:, head * d_head : (head + 1) * d_head] = 1.0
    return model.unembedding(attention.w_o(values * keep)).detach()  # (V, V)


@pytest.mark.parametrize("seed", range(3))
def test_ov_circuit_and_copying_scores_match_the_full_matrix(seed):
    model = small_model(seed)
    scores = copying_scores(model)
    assert scores.shape == (2, 3) and scores.dtype == torch.float64
    for layer in range(2):
        for head in range(3):
            circuit = ov_circuit(model, layer, head)
            assert torch.allclose(circuit, full_circuit_by_modules(model, layer, head), atol=1e-10)
            eigenvalues = torch.linalg.eigvals(circuit)  # (V,): V - D_h of them are 0
            expected = eigenvalues.sum().real / eigenvalues.abs().sum()
            assert scores[layer, head].item() == pytest.approx(expected.item(), abs=1e-6)


def test_copying_scores_ignore_the_position_embedding():
    model = small_model(7)
    before = copying_scores(model)
    with torch.no_grad():
        model.position_embedding.weight.normal_()
    assert torch.equal(copying_scores(model), before)


@pytest.mark.parametrize(
    ("layer", "head", "error"), [(2, 0, ValueError), (0, 3, ValueError), (0.0, 0, TypeError)]
)
def test_ov_circuit_rejects_heads_the_model_does_not_have(layer, head, error):
    with pytest.raises(error, match="layer and head"):
        ov_circuit(small_model(), layer, head)


# ---------------------------------------------------------------- loss and training


def test_in_context_loss_counts_the_halves_as_documented():
    model = small_model(8)
    tokens = tokens_of(8, half_length=6)
    losses = F.cross_entropy(model(tokens[:, :-1]).transpose(1, 2), tokens[:, 1:], reduction="none")
    first, repeated = in_context_loss(model, tokens)
    assert first == pytest.approx(losses[:, 0:5].mean().item() / math.log(2))  # tokens 1 … 5
    assert repeated == pytest.approx(losses[:, 6:11].mean().item() / math.log(2))  # 7 … 11
    ablated = in_context_loss(model, tokens, ablate=[(1, 0)])
    ablated_logits = model(tokens[:, :-1], ablate=[(1, 0)])
    expected = F.cross_entropy(ablated_logits[:, 6:].transpose(1, 2), tokens[:, 7:])
    assert ablated[1] == pytest.approx(expected.item() / math.log(2))


def test_in_context_loss_keeps_the_mode_and_needs_two_halves():
    model = small_model().train()
    in_context_loss(model, tokens_of(0))
    assert model.training
    with pytest.raises(ValueError, match="even"):
        in_context_loss(model, tokens_of(0)[:, :-1])
    with pytest.raises(ValueError, match="T ≥ 4"):
        in_context_loss(model, tokens_of(0)[:, :2])
    with pytest.raises(TypeError, match="AttentionOnlyTransformer"):
        in_context_loss(torch.nn.Linear(2, 2), tokens_of(0))


TINY = AttentionOnlyConfig(
    vocab_size=6, context_length=8, d_model=8, n_heads=2, positions="learned"
)


def train_tiny(seed: int, **kwargs) -> tuple[AttentionOnlyTransformer, InductionHistory]:
    torch.manual_seed(seed)
    model = AttentionOnlyTransformer(TINY)
    arguments = {
        "steps": 12,
        "batch_size": 4,
        "half_length": (2, 4),
        "generator": torch.Generator().manual_seed(seed),
        "learning_rate": 1e-2,
        **kwargs,
    }
    return model, train_induction_model(model, **arguments)


def test_training_is_reproducible_with_a_seed():
    model_a, history_a = train_tiny(0)
    model_b, history_b = train_tiny(0)
    _, history_c = train_tiny(1)
    assert history_a.losses == history_b.losses
    assert history_a.repeated_half_bits == history_b.repeated_half_bits
    assert history_a.half_lengths == history_b.half_lengths
    assert history_a.losses != history_c.losses
    for a, b in zip(model_a.parameters(), model_b.parameters(), strict=True):
        assert torch.equal(a, b)


def test_training_records_every_step():
    schedule = lambda step: linear_warmup_decay(step, peak=1e-2, warmup_steps=3, total_steps=12)  # noqa: E731
    model, history = train_tiny(2, learning_rate=schedule)
    assert not model.training
    assert history.steps == 12
    assert history.learning_rates == [schedule(step) for step in range(1, 13)]
    assert set(history.half_lengths) <= {2, 3, 4} and len(set(history.half_lengths)) > 1
    for name in ("first_half_bits", "repeated_half_bits", "half_lengths"):
        assert len(getattr(history, name)) == 12
    assert all(bits > 0 for bits in history.first_half_bits + history.repeated_half_bits)
    assert history.seconds > 0


def test_a_fixed_half_length_is_used_at_every_step():
    _, history = train_tiny(3, half_length=3)
    assert history.half_lengths == [3] * 12


def test_training_lowers_the_loss_on_the_repeated_half():
    torch.manual_seed(0)
    model = AttentionOnlyTransformer(AttentionOnlyConfig(6, context_length=8, d_model=16,
                                                         n_heads=1))  # fmt: skip
    generator = torch.Generator().manual_seed(0)
    tokens = repeated_tokens(200, 4, 6, generator=generator)
    before = in_context_loss(model, tokens)
    train_induction_model(
        model, steps=60, batch_size=32, half_length=4, generator=generator, learning_rate=1e-2
    )
    first, repeated = in_context_loss(model, tokens)
    assert repeated < before[1] - 0.5 and repeated < first - 0.5


def test_progress_prints_ten_lines(capsys):
    train_tiny(4, steps=20, progress=True)
    assert len(capsys.readouterr().out.strip().splitlines()) == 10


@pytest.mark.parametrize(
    ("kwargs", "error", "named"),
    [
        ({"half_length": 5}, ValueError, "context_length"),
        ({"half_length": (4, 2)}, ValueError, "half_length"),
        ({"half_length": (1, 3)}, ValueError, "half_length"),
        ({"half_length": (2, 3, 4)}, TypeError, "half_length"),
        ({"half_length": (2, 3.0)}, TypeError, "half_length"),
        ({"steps": 0}, ValueError, "steps"),
        ({"batch_size": 2.0}, TypeError, "batch_size"),
        ({"generator": 0}, TypeError, "generator"),
        ({"learning_rate": -1.0}, ValueError, "learning_rate"),
        ({"weight_decay": -0.1}, ValueError, "weight_decay"),
        ({"weight_decay": "0"}, TypeError, "weight_decay"),
        ({"first_token": 6}, ValueError, "first_token"),
    ],
)
def test_training_rejects_bad_arguments(kwargs, error, named):
    with pytest.raises(error, match=named):
        train_tiny(0, **kwargs)


def test_training_needs_an_attention_only_model():
    with pytest.raises(TypeError, match="AttentionOnlyTransformer"):
        train_induction_model(
            torch.nn.Linear(2, 2), steps=1, batch_size=1, half_length=2,
            generator=torch.Generator(),
        )  # fmt: skip


# ---------------------------------------------------------------- documentation


PUBLIC = [
    obj
    for name, obj in vars(induction).items()
    if not name.startswith("_")
    and (inspect.isfunction(obj) or inspect.isclass(obj))
    and obj.__module__ == induction.__name__
]


@pytest.mark.parametrize("obj", PUBLIC, ids=[obj.__name__ for obj in PUBLIC])
def test_every_public_callable_documents_shapes_with_an_example(obj):
    docstring = inspect.getdoc(obj) or ""
    assert "Shapes\n------" in docstring
    assert ">>> " in docstring.partition("Examples\n--------\n")[2]
