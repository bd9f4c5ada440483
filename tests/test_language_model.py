"""The GPT of chapter 12: parity with a model built from torch.nn layers, causality, the KV
cache, training, bits per token and generation; and chapter 13's options: rotary positions,
grouped-query attention, sliding windows with attention sinks and their caches."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from selfattn_lib.grouped_query import GroupedQueryAttention, kv_cache_bytes
from selfattn_lib.language_model import (
    GPT,
    GPTConfig,
    KVCache,
    bits_per_token,
    causal_mask_after,
    generate,
    train_language_model,
)
from selfattn_lib.layers import EncoderLayer, LayerCache, MultiHeadAttention
from selfattn_lib.sliding_window import WindowCache, window_mask

SMALL = GPTConfig(vocab_size=11, context_length=12, d_model=16, n_heads=4, d_ff=24, n_layers=3)


def small_model(seed: int = 0, config: GPTConfig = SMALL) -> GPT:
    torch.manual_seed(seed)
    return GPT(config).double().eval()


class TorchGPT(nn.Module):
    """The same model written with torch.nn's own layers (the reference)."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.token_embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.position_embedding = nn.Embedding(config.context_length, config.d_model)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(
                config.d_model,
                config.n_heads,
                config.d_ff,
                dropout=0.0,
                batch_first=True,
                norm_first=True,
                activation=config.activation,
            )
            for _ in range(config.n_layers)
        )
        self.norm = nn.LayerNorm(config.d_model)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        n_tokens = tokens.shape[1]
        x = self.token_embedding(tokens) + self.position_embedding.weight[:n_tokens]
        causal = nn.Transformer.generate_square_subsequent_mask(n_tokens, dtype=x.dtype)
        for layer in self.layers:
            x = layer(x, src_mask=causal, is_causal=True)
        return self.norm(x) @ self.token_embedding.weight.T


def copied_from_torch(reference: TorchGPT, config: GPTConfig) -> GPT:
    model = GPT(config).double().eval()
    with torch.no_grad():
        model.token_embedding.weight.copy_(reference.token_embedding.weight)
        model.position_embedding.weight.copy_(reference.position_embedding.weight)
        model.blocks.norm.load_state_dict(reference.norm.state_dict())
    model.blocks.layers = nn.ModuleList(
        EncoderLayer.from_torch(layer) for layer in reference.layers
    )
    return model


@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("batch, n_tokens", [(1, 1), (2, 5), (3, 12)])
def test_logits_equal_a_model_built_from_torch_nn_layers(batch, n_tokens, activation):
    torch.manual_seed(1)
    config = replace(SMALL, activation=activation)
    reference = TorchGPT(config).double().eval()
    model = copied_from_torch(reference, config)
    tokens = torch.randint(0, SMALL.vocab_size, (batch, n_tokens))
    with torch.no_grad():
        ours, theirs = model(tokens), reference(tokens)
    assert ours.shape == (batch, n_tokens, SMALL.vocab_size)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-12)


def test_output_projection_is_the_token_embedding():
    model = GPT(SMALL)
    assert model.output.weight is model.token_embedding.weight
    n_tied = sum(p.numel() for p in model.parameters())
    assert n_tied == sum(p.numel() for p in dict(model.named_parameters()).values())
    assert "output.weight" not in dict(model.named_parameters())  # counted once


@pytest.mark.parametrize("n_layers", [2, 8])
def test_gpt2_init_draws_every_matrix_at_0_02_and_the_residual_writers_smaller(n_layers):
    """GPT-2's starting weights (the default): N(0, 0.02²) for every weight matrix and both
    embeddings, 0.02 / √(2L) for each layer's W_O and W_2, zero biases."""
    torch.manual_seed(0)
    config = GPTConfig(vocab_size=500, context_length=400, d_model=128, d_ff=512,
                       n_layers=n_layers)  # fmt: skip
    model = GPT(config)
    for embedding in (model.token_embedding, model.position_embedding):
        assert abs(embedding.weight.std().item() - 0.02) < 0.001
    writers = {"self_attention.w_o.weight", "feed_forward.w_2.weight"}
    for layer in model.blocks.layers:
        for name, parameter in layer.named_parameters():
            if name.endswith("bias") and "norm" not in name:
                assert not parameter.any(), name
            elif parameter.ndim == 2:
                std = 0.02 / math.sqrt(2 * n_layers) if name in writers else 0.02
                assert abs(parameter.std().item() / std - 1) < 0.05, name
                assert abs(parameter.mean().item()) < 0.1 * std, name


def test_without_gpt2_init_only_the_two_embeddings_start_at_0_02():
    """The layers then start as they do alone (Xavier-uniform attention, PyTorch's nn.Linear
    default), as chapter 12's measurement of the option compares."""
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=500, context_length=400, d_model=64, gpt2_init=False))
    for embedding in (model.token_embedding, model.position_embedding):
        assert abs(embedding.weight.std().item() - 0.02) < 0.001
    matrices = [p for name, p in model.blocks.named_parameters() if p.ndim == 2]
    assert matrices and all(p.std().item() > 0.03 for p in matrices)  # PyTorch's defaults
    biases = [p for name, p in model.blocks.named_parameters() if name.endswith("w_1.bias")]
    assert all(p.any() for p in biases)


def test_a_later_token_never_changes_an_earlier_prediction():
    model = small_model()
    tokens = torch.randint(0, SMALL.vocab_size, (2, 10))
    changed = tokens.clone()
    changed[:, 6:] = (changed[:, 6:] + 1) % SMALL.vocab_size
    with torch.no_grad():
        before, after = model(tokens), model(changed)
    torch.testing.assert_close(before[:, :6], after[:, :6], rtol=0, atol=0)
    assert not torch.allclose(before[:, 6:], after[:, 6:])


def test_weights_are_causal():
    model = small_model()
    _, weights = model(torch.randint(0, 11, (2, 7)), return_weights=True)
    assert len(weights) == SMALL.n_layers
    for layer_weights in weights:
        assert layer_weights.shape == (2, SMALL.n_heads, 7, 7)
        assert torch.all(layer_weights.triu(diagonal=1) == 0)
        torch.testing.assert_close(layer_weights.sum(-1), torch.ones(2, SMALL.n_heads, 7).double())


@pytest.mark.parametrize("chunks", [(1,) * 9, (4, 1, 1, 3), (9,), (2, 7)])
def test_the_cache_gives_the_logits_of_the_full_sequence(chunks):
    model = small_model()
    tokens = torch.randint(0, SMALL.vocab_size, (2, sum(chunks)))
    cache = model.new_cache()
    pieces, start = [], 0
    with torch.no_grad():
        full = model(tokens)
        for size in chunks:
            pieces.append(model(tokens[:, start : start + size], cache=cache))
            start += size
    assert cache.length == sum(chunks)
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, rtol=0, atol=1e-12)


def test_cache_memory_is_two_numbers_per_layer_token_and_feature():
    model = small_model()
    cache = model.new_cache()
    with torch.no_grad():
        model(torch.zeros(3, 5, dtype=torch.long), cache=cache)
    layers, d_model = SMALL.n_layers, SMALL.d_model
    assert cache.nbytes == 2 * layers * 3 * 5 * d_model * 8  # float64
    assert KVCache(2).nbytes == 0 and KVCache(2).length == 0


def test_the_cache_stops_at_the_context_length():
    model = small_model()
    cache = model.new_cache()
    with torch.no_grad():
        model(torch.zeros(1, 10, dtype=torch.long), cache=cache)
        with pytest.raises(ValueError, match="context_length = 12.*3 new tokens after 10"):
            model(torch.zeros(1, 3, dtype=torch.long), cache=cache)


@pytest.mark.parametrize(
    "n_cached, n_new, expected",
    [
        (0, 3, [[1, 0, 0], [1, 1, 0], [1, 1, 1]]),
        (2, 1, [[1, 1, 1]]),
        (1, 2, [[1, 1, 0], [1, 1, 1]]),
    ],
)
def test_causal_mask_after(n_cached, n_new, expected):
    assert causal_mask_after(n_cached, n_new).int().tolist() == expected


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: causal_mask_after(-1, 2), ValueError, "n_cached"),
        (lambda: causal_mask_after(1, 0), ValueError, "n_new"),
        (lambda: GPT("config"), TypeError, "GPTConfig"),
        (lambda: GPTConfig(10, d_model=10, n_heads=4), ValueError, "divisible"),
        (lambda: GPTConfig(0), ValueError, "vocab_size"),
        (lambda: GPTConfig(10, dropout=1.5), ValueError, "dropout"),
        (lambda: small_model()(torch.ones(1, 3)), TypeError, "integer token ids"),
        (lambda: small_model()(torch.tensor([1, 2])), ValueError, r"\(B, T\)"),
        (lambda: small_model()(torch.tensor([[1, 11]])), ValueError, r"0 … 10"),
        (lambda: small_model()(torch.zeros(1, 13).long()), ValueError, "context_length"),
        (lambda: small_model()(torch.zeros(1, 2).long(), cache=[]), TypeError, "KVCache"),
        (lambda: small_model()(torch.zeros(1, 2).long(), cache=KVCache(1)), ValueError, "layers"),
        (lambda: KVCache(0), ValueError, "n_layers"),
    ],
)
def test_bad_input_gets_a_clear_error(call, error, message):
    with pytest.raises(error, match=message):
        call()


def periodic(n: int) -> torch.Tensor:
    return torch.tensor([0, 1, 2, 3, 4] * n)


def test_training_learns_a_periodic_text_and_is_reproducible():
    config = GPTConfig(vocab_size=5, context_length=8, d_model=16, n_heads=2, d_ff=32)

    def run():
        torch.manual_seed(0)
        model = GPT(config)
        history = train_language_model(
            model, periodic(40), steps=60, batch_size=8,
            generator=torch.Generator().manual_seed(0), learning_rate=1e-2,
        )  # fmt: skip
        return model, history

    model, history = run()
    _, again = run()
    assert history.losses == again.losses
    assert history.steps == 60 and len(history.learning_rates) == 60
    assert history.losses[0] > 1.0 and history.losses[-1] < 0.1
    assert not model.training
    assert bits_per_token(model, periodic(6)) < 0.2


def test_training_follows_the_schedule_and_prints_ten_lines(capsys):
    model = GPT(GPTConfig(vocab_size=5, context_length=4, d_model=8, n_heads=2, d_ff=8))
    history = train_language_model(
        model, periodic(5), steps=20, batch_size=2, generator=torch.Generator().manual_seed(0),
        learning_rate=lambda step: step * 1e-4, progress=True,
    )  # fmt: skip
    assert history.learning_rates == pytest.approx([step * 1e-4 for step in range(1, 21)])
    assert len(capsys.readouterr().out.splitlines()) == 10


def test_training_uses_adamw_with_beta_2_0_99_and_pytorchs_epsilon(monkeypatch):
    """Chapter 12: Adam as in chapter 10 but with β₂ = 0.99 and ε = 1e-8 (chapter 10's
    training.train: the paper's 0.98 and 1e-9), plus weight decay."""
    made = []

    class Recorded(torch.optim.AdamW):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(torch.optim, "AdamW", Recorded)
    model = GPT(GPTConfig(vocab_size=5, context_length=4, d_model=8, n_heads=2, d_ff=8))
    train_language_model(
        model, periodic(5), steps=1, batch_size=2, generator=torch.Generator().manual_seed(0)
    )
    (optimizer,) = made
    assert optimizer.defaults["betas"] == (0.9, 0.99) and optimizer.defaults["eps"] == 1e-8
    decays = sorted(group["weight_decay"] for group in optimizer.param_groups)
    assert decays == [0, 0.01]


def test_weight_decay_leaves_biases_and_norms_alone():
    model = GPT(GPTConfig(vocab_size=5, context_length=4, d_model=8, n_heads=2, d_ff=8))
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.fill_(1.0)
    frozen = {name: p.clone() for name, p in model.named_parameters()}
    train_language_model(
        model, periodic(5), steps=1, batch_size=2, generator=torch.Generator().manual_seed(0),
        learning_rate=1e-3, weight_decay=0.5,
    )  # fmt: skip
    # With all-equal parameters the gradient of a layer norm's gain can be 0; decay would
    # still move it. Norm gains and biases without gradient stay exactly as they were.
    for name, parameter in model.named_parameters():
        if parameter.ndim == 1 and parameter.grad is None:
            assert torch.equal(parameter, frozen[name]), name


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"model": "gpt"}, TypeError, "GPT"),
        ({"ids": periodic(1)[:4]}, ValueError, "more than context_length"),
        ({"ids": torch.ones(10)}, TypeError, "integer"),
        ({"steps": 0}, ValueError, "steps"),
        ({"batch_size": -1}, ValueError, "batch_size"),
        ({"generator": 0}, TypeError, "torch.Generator"),
    ],
)
def test_training_rejects_bad_input(kwargs, error, message):
    model = GPT(GPTConfig(vocab_size=5, context_length=4, d_model=8, n_heads=2, d_ff=8))
    arguments = {
        "model": model, "ids": periodic(4), "steps": 2, "batch_size": 2,
        "generator": torch.Generator().manual_seed(0),
    }  # fmt: skip
    arguments.update(kwargs)
    model_argument, ids = arguments.pop("model"), arguments.pop("ids")
    with pytest.raises(error, match=message):
        train_language_model(model_argument, ids, **arguments)


@pytest.mark.parametrize("n_tokens", [2, 12, 13, 14, 30, 37])
def test_bits_per_token_scores_every_token_but_the_first_once(n_tokens):
    model = small_model()
    ids = torch.randint(
        0, SMALL.vocab_size, (n_tokens,), generator=torch.Generator().manual_seed(3)
    )
    context = SMALL.context_length
    total, start = 0.0, 0
    with torch.no_grad():
        while start < n_tokens - 1:  # windows of context + 1 tokens that overlap by one
            window = ids[start : start + context + 1]
            logits = model(window[None, :-1])[0]
            total += F.cross_entropy(logits, window[1:], reduction="sum").item()
            start += context
    expected = total / (n_tokens - 1) / math.log(2)
    assert bits_per_token(model, ids, batch_size=2) == pytest.approx(expected, rel=1e-12)


def test_a_model_that_knows_nothing_scores_log2_of_the_vocabulary():
    model = small_model()
    with torch.no_grad():
        model.output.weight.zero_()
    assert bits_per_token(model, torch.arange(11).repeat(3)) == pytest.approx(math.log2(11))


def test_bits_per_token_rejects_bad_input():
    with pytest.raises(ValueError, match="at least 2"):
        bits_per_token(small_model(), torch.tensor([1]))
    with pytest.raises(TypeError, match="GPT"):
        bits_per_token("model", torch.tensor([1, 2]))


def test_greedy_generation_is_the_same_with_and_without_the_cache():
    model = small_model(seed=4)
    prompt = [3, 1, 4]
    cached = generate(model, prompt, 9, greedy=True)
    full = generate(model, prompt, 9, greedy=True, use_cache=False)
    assert cached.tolist() == full.tolist()
    assert cached[:3].tolist() == prompt and cached.shape == (12,)
    with torch.no_grad():  # each new token is the arg max given everything before it
        logits = model(torch.from_numpy(cached[None, :-1]))[0]
    assert logits[2:].argmax(dim=-1).tolist() == cached[3:].tolist()


def test_sampling_is_reproducible_with_a_seeded_generator():
    model = small_model(seed=5)
    runs = [
        generate(model, [1], 11, rng=np.random.default_rng(7), temperature=1.5, top_p=0.9)
        for _ in range(2)
    ]
    uncached = generate(
        model, [1], 11, rng=np.random.default_rng(7), temperature=1.5, top_p=0.9, use_cache=False
    )
    assert runs[0].tolist() == runs[1].tolist() == uncached.tolist()
    assert runs[0].min() >= 0 and runs[0].max() < SMALL.vocab_size
    other = generate(model, [1], 11, rng=np.random.default_rng(8), temperature=1.5)
    assert other.tolist() != runs[0].tolist()


@pytest.mark.parametrize("use_cache", [True, False])
def test_past_the_context_length_each_step_reads_the_last_context_length_tokens(use_cache):
    """As nanoGPT: the window slides, and every step reads the last T tokens afresh."""
    model = small_model(seed=4)
    prompt = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    written = generate(model, prompt, 20, greedy=True, use_cache=use_cache).tolist()
    expected = list(prompt)
    with torch.no_grad():
        for _ in range(20):
            window = torch.tensor([expected[-SMALL.context_length :]])
            expected.append(int(model(window)[0, -1].argmax()))
    assert written == expected


def test_top_k_of_one_is_greedy():
    model = small_model(seed=6)
    sampled = generate(model, [2, 2], 8, rng=np.random.default_rng(0), top_k=1)
    assert sampled.tolist() == generate(model, [2, 2], 8, greedy=True).tolist()


@pytest.mark.parametrize(
    "args, kwargs, error, message",
    [
        (([1], 3), {}, TypeError, "rng"),
        (([1] * 13, 3), {"greedy": True}, ValueError, "context_length = 12"),
        (([], 3), {"greedy": True}, ValueError, "at least one token"),
        (([1], 0), {"greedy": True}, ValueError, "n_new_tokens"),
        (([1.5], 2), {"greedy": True}, TypeError, "integer"),
    ],
)
def test_generation_rejects_bad_input(args, kwargs, error, message):
    with pytest.raises(error, match=message):
        generate(small_model(), *args, **kwargs)


# Chapter 13's options: rotary positions, grouped-query attention, sliding windows and sinks.

ROPE = replace(SMALL, positions="rope")
EXACT = {"rtol": 0, "atol": 1e-12}


def logits_in_chunks(model: GPT, tokens: torch.Tensor, chunks: tuple[int, ...]) -> torch.Tensor:
    cache, pieces, start = model.new_cache(), [], 0
    with torch.no_grad():
        for size in chunks:
            pieces.append(model(tokens[:, start : start + size], cache=cache))
            start += size
    assert cache.length == start
    return torch.cat(pieces, dim=1)


def test_the_default_options_build_chapter_12s_model():
    config = GPTConfig(vocab_size=11)
    assert (config.positions, config.n_kv_heads, config.window, config.n_sinks) == (
        "learned", None, None, 0,
    )  # fmt: skip
    assert (config.activation, config.gpt2_init) == ("relu", True)
    model = small_model()
    assert isinstance(model.position_embedding, nn.Embedding)
    for layer in model.blocks.layers:
        assert type(layer.self_attention) is MultiHeadAttention
    assert all(type(layer) is LayerCache for layer in model.new_cache().layers)
    explicit = small_model(config=replace(SMALL, positions="learned", n_kv_heads=SMALL.n_heads))
    assert list(explicit.state_dict()) == list(model.state_dict())
    for name, tensor in model.state_dict().items():
        assert torch.equal(explicit.state_dict()[name], tensor), name


def test_a_rope_model_has_no_position_embedding_and_rotates_in_every_layer():
    model = small_model(config=ROPE)
    assert model.position_embedding is None
    assert not any("position_embedding" in name for name, _ in model.named_parameters())
    for layer in model.blocks.layers:
        attention = layer.self_attention
        assert isinstance(attention, GroupedQueryAttention)
        assert (attention.rotary, attention.n_kv_heads) == ("half", SMALL.n_heads)
    n_learned = sum(p.numel() for p in small_model().parameters())
    n_rope = sum(p.numel() for p in model.parameters())
    assert n_learned - n_rope == SMALL.context_length * SMALL.d_model


def test_a_rope_model_trains_and_its_cache_gives_the_logits_of_the_full_sequence():
    torch.manual_seed(0)
    model = GPT(replace(ROPE, vocab_size=5, context_length=8))
    history = train_language_model(
        model, periodic(40), steps=30, batch_size=8, generator=torch.Generator().manual_seed(0),
        learning_rate=1e-2,
    )  # fmt: skip
    assert history.losses[-1] < history.losses[0] / 2
    model.double()
    tokens = periodic(4)[None, :17]  # (1, 17): longer than context_length = 8
    with torch.no_grad():
        full = model(tokens)
    torch.testing.assert_close(logits_in_chunks(model, tokens, (1,) * 17), full, **EXACT)
    torch.testing.assert_close(logits_in_chunks(model, tokens, (5, 1, 8, 3)), full, **EXACT)


@pytest.mark.parametrize("window, n_sinks", [(None, 0), (4, 1)])
def test_a_rope_model_reads_and_writes_past_its_context_length(window, n_sinks):
    model = small_model(config=replace(ROPE, window=window, n_sinks=n_sinks), seed=4)
    with torch.no_grad():
        assert model(torch.zeros(2, 3 * SMALL.context_length, dtype=torch.long)).shape[1] == 36
    cached = generate(model, [3, 1, 4], 20, greedy=True)
    assert cached.shape == (23,)
    assert cached.tolist() == generate(model, [3, 1, 4], 20, greedy=True, use_cache=False).tolist()


def test_a_rope_model_is_causal_and_depends_on_order():
    model = small_model(config=ROPE)
    tokens = torch.randint(0, SMALL.vocab_size, (2, 10), generator=torch.Generator().manual_seed(0))
    changed = tokens.clone()
    changed[:, 6:] = (changed[:, 6:] + 1) % SMALL.vocab_size
    swapped = tokens.clone()
    swapped[:, [1, 2]] = tokens[:, [2, 1]]
    with torch.no_grad():
        before, after, reordered = model(tokens), model(changed), model(swapped)
    torch.testing.assert_close(before[:, :6], after[:, :6], rtol=0, atol=0)
    assert not torch.allclose(before[:, 3:], reordered[:, 3:])  # the order is seen


@pytest.mark.parametrize("positions", ["learned", "rope"])
@pytest.mark.parametrize("n_kv_heads", [1, 2])
def test_grouped_query_models_cache_n_kv_heads(positions, n_kv_heads):
    config = replace(SMALL, positions=positions, n_kv_heads=n_kv_heads)
    model, reference = (
        small_model(config=config),
        small_model(config=replace(config, n_kv_heads=None)),
    )
    for layer in model.blocks.layers:
        attention = layer.self_attention
        assert isinstance(attention, GroupedQueryAttention)
        assert attention.n_kv_heads == n_kv_heads
        assert attention.rotary == ("half" if positions == "rope" else None)
    tokens = torch.randint(0, SMALL.vocab_size, (3, 9), generator=torch.Generator().manual_seed(1))
    caches = model.new_cache(), reference.new_cache()
    with torch.no_grad():
        full = model(tokens)
        model(tokens, cache=caches[0])
        reference(tokens, cache=caches[1])
    torch.testing.assert_close(logits_in_chunks(model, tokens, (4, 1, 1, 3)), full, **EXACT)
    assert caches[0].nbytes * SMALL.n_heads == caches[1].nbytes * n_kv_heads
    d_head = SMALL.d_model // SMALL.n_heads
    expected = kv_cache_bytes(
        SMALL.n_layers, n_kv_heads, d_head, 9, batch_size=3, bytes_per_number=8
    )
    assert caches[0].nbytes == expected


WINDOWED = [
    pytest.param(positions, window, n_sinks, id=f"{positions}-window{window}-sinks{n_sinks}")
    for positions in ("learned", "rope")
    for window, n_sinks in ((3, 0), (3, 2), (1, 1), (5, 4))
]


@pytest.mark.parametrize("positions, window, n_sinks", WINDOWED)
@pytest.mark.parametrize("chunks", [(1,) * 12, (4, 1, 5, 2)])
def test_a_window_cache_gives_the_logits_of_the_full_windowed_pass(
    positions, window, n_sinks, chunks
):
    config = replace(SMALL, positions=positions, window=window, n_sinks=n_sinks, n_kv_heads=2)
    model = small_model(config=config)
    tokens = torch.randint(0, SMALL.vocab_size, (2, 12), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        full, weights = model(tokens, return_weights=True)
    allowed = window_mask(torch.arange(12), torch.arange(12), window, n_sinks=n_sinks)
    for layer_weights in weights:
        assert torch.all(layer_weights[..., ~allowed] == 0)
    cache = model.new_cache()
    assert all(isinstance(layer, WindowCache) for layer in cache.layers)
    torch.testing.assert_close(logits_in_chunks(model, tokens, chunks), full, **EXACT)


@pytest.mark.parametrize("n_sinks", [0, 2])
def test_a_rope_window_cache_streams_past_the_context_length_in_bounded_memory(n_sinks):
    window, n_tokens = 4, 3 * SMALL.context_length
    model = small_model(config=replace(ROPE, window=window, n_sinks=n_sinks, n_kv_heads=1))
    tokens = torch.randint(0, 11, (1, n_tokens), generator=torch.Generator().manual_seed(3))
    cache, pieces, sizes = model.new_cache(), [], []
    with torch.no_grad():
        full = model(tokens)
        for position in range(n_tokens):
            pieces.append(model(tokens[:, position : position + 1], cache=cache))
            sizes.append(cache.nbytes)
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, **EXACT)
    assert cache.length == n_tokens
    held = n_sinks + window - 1
    d_head = SMALL.d_model // SMALL.n_heads
    assert max(sizes) == kv_cache_bytes(SMALL.n_layers, 1, d_head, held, bytes_per_number=8)
    assert len(set(sizes[held:])) == 1  # it stops growing once the window is full
    assert sizes[:held] == sorted(sizes[:held])


@pytest.mark.parametrize("positions", ["learned", "rope"])
def test_a_window_as_long_as_the_sequence_is_the_causal_model(positions):
    config = replace(SMALL, positions=positions)
    tokens = torch.randint(0, 11, (2, 10), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        causal = small_model(config=config)(tokens)
        for window in (10, 12, 100):
            windowed = small_model(config=replace(config, window=window, n_sinks=window // 4))
            torch.testing.assert_close(windowed(tokens), causal, rtol=0, atol=0)
        narrow = small_model(config=replace(config, window=9))(tokens)
    torch.testing.assert_close(narrow[:, :9], causal[:, :9], rtol=0, atol=0)
    assert not torch.allclose(narrow[:, 9], causal[:, 9])


def test_a_learned_window_model_still_stops_at_the_context_length():
    model = small_model(config=replace(SMALL, window=4))
    cache = model.new_cache()
    with torch.no_grad():
        model(torch.zeros(1, 10, dtype=torch.long), cache=cache)
        with pytest.raises(ValueError, match="context_length = 12"):
            model(torch.zeros(1, 3, dtype=torch.long), cache=cache)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: GPTConfig(11, positions="sinusoidal"), ValueError, "positions must be one of"),
        (lambda: GPTConfig(11, positions=None), TypeError, "positions"),
        (lambda: GPTConfig(11, d_model=12, n_heads=4, positions="rope"), ValueError, "even head"),
        (lambda: GPTConfig(11, n_kv_heads=3), ValueError, "n_kv_heads must divide n_heads"),
        (lambda: GPTConfig(11, n_kv_heads=0), ValueError, "n_kv_heads"),
        (lambda: GPTConfig(11, n_kv_heads=2.0), TypeError, "n_kv_heads"),
        (lambda: GPTConfig(11, window=0), ValueError, "window"),
        (lambda: GPTConfig(11, window="4"), TypeError, "window"),
        (lambda: GPTConfig(11, window=4, n_sinks=-1), ValueError, "n_sinks"),
        (lambda: GPTConfig(11, window=4, n_sinks=1.0), TypeError, "n_sinks"),
        (lambda: GPTConfig(11, n_sinks=2), ValueError, "n_sinks = 2 needs a window"),
        (lambda: GPTConfig(11, activation="swish"), ValueError, "activation must be one of"),
        (lambda: GPTConfig(11, gpt2_init=1), TypeError, "gpt2_init must be True or False"),
        (lambda: KVCache(2, n_sinks=1), ValueError, "needs a window"),
        (lambda: KVCache(2, window=0), ValueError, "window"),
        (
            lambda: small_model()(torch.zeros(1, 2).long(), cache=KVCache(3, window=4)),
            ValueError,
            "cache was made for window = 4.*the model has window = None",
        ),
        (
            lambda: small_model(config=replace(SMALL, window=4))(
                torch.zeros(1, 2).long(), cache=KVCache(3)
            ),
            ValueError,
            "use model.new_cache",
        ),
    ],
)
def test_bad_options_get_a_clear_error(call, error, message):
    with pytest.raises(error, match=message):
        call()
