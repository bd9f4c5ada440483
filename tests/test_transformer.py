"""Tests of selfattn_lib.transformer: the whole model leaks nothing from the future,
counts the paper's parameters, decodes greedily, and refuses bad configurations and tokens."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from selfattn_lib.transformer import (  # noqa: E402
    Transformer,
    TransformerConfig,
    count_parameters,
)

pytestmark = pytest.mark.filterwarnings("error")
TOLERANCES = {"rtol": 1e-6, "atol": 1e-9}


# --- The whole model ------------------------------------------------------------------------

SMALL = TransformerConfig(
    src_vocab_size=11, tgt_vocab_size=13, d_model=8, n_heads=2, d_ff=16, n_layers=2, max_len=16
)


@pytest.fixture
def model() -> Transformer:
    torch.manual_seed(0)
    return Transformer(SMALL).double().eval()


def test_the_decoder_leaks_nothing_from_the_future(model):
    src = torch.tensor([[3, 4, 5, 6, 0], [7, 8, 9, 0, 0]])
    tgt = torch.tensor([[1, 2, 3, 4, 5, 6], [1, 7, 8, 9, 10, 11]])
    with torch.no_grad():
        logits = model(src, tgt)
        for position in range(tgt.shape[1]):
            changed = tgt.clone()
            changed[:, position + 1 :] = 12  # every later target token replaced
            again = model(src, changed)
            assert torch.allclose(again[:, : position + 1], logits[:, : position + 1])
            if position + 1 < tgt.shape[1]:
                assert not torch.allclose(again[:, position + 1 :], logits[:, position + 1 :])


def test_padding_the_source_further_changes_nothing(model):
    src = torch.tensor([[3, 4, 5]])
    padded = torch.tensor([[3, 4, 5, 0, 0, 0]])
    tgt = torch.tensor([[1, 2, 3]])
    with torch.no_grad():
        assert torch.allclose(model(src, tgt), model(padded, tgt))


def test_weights_of_every_layer_are_returned_on_request(model):
    src, tgt = torch.tensor([[3, 4, 5, 0]]), torch.tensor([[1, 2, 3]])
    with torch.no_grad():
        logits, weights = model(src, tgt, return_weights=True)
        assert torch.equal(logits, model(src, tgt))
    assert [tuple(w.shape) for w in weights["encoder"]] == [(1, 2, 4, 4)] * 2
    assert [tuple(w.shape) for w in weights["decoder"]] == [(1, 2, 3, 3)] * 2
    assert [tuple(w.shape) for w in weights["cross"]] == [(1, 2, 3, 4)] * 2
    for cross in weights["cross"]:
        assert not cross[..., 3].any()  # the padded source token gets no attention
        assert torch.allclose(cross.sum(-1), torch.ones(1, 2, 3, dtype=torch.float64))
    for self_weights in weights["decoder"]:
        assert not self_weights.triu(diagonal=1).any()  # nothing from the future


def test_greedy_decoding_takes_the_argmax_of_the_full_forward_pass(model):
    src = torch.tensor([[3, 4, 5, 6], [7, 8, 0, 0]])
    tokens = model.greedy_decode(src, bos_id=1, eos_id=2, max_new_tokens=6)
    assert tokens.shape[0] == 2 and tokens.shape[1] <= 7 and (tokens[:, 0] == 1).all()
    with torch.no_grad():
        for row in range(2):
            for step in range(1, tokens.shape[1]):
                if (tokens[row, 1:step] == 2).any():  # finished: padded from here on
                    assert tokens[row, step] == SMALL.pad_id
                    continue
                logits = model(src[row : row + 1], tokens[row : row + 1, :step])
                assert tokens[row, step] == logits[0, -1].argmax()


def test_sharing_and_tying_the_embeddings():
    shared = TransformerConfig(10, 10, d_model=8, n_heads=2, d_ff=16, n_layers=1)
    tied = Transformer(
        TransformerConfig(
            10,
            10,
            d_model=8,
            n_heads=2,
            d_ff=16,
            n_layers=1,
            share_embeddings=True,
            tie_output=True,
        )
    )
    assert tied.src_embedding is tied.tgt_embedding
    assert tied.output.weight is tied.tgt_embedding.weight
    untied = Transformer(shared)
    assert count_parameters(untied) - count_parameters(tied) == 2 * 10 * 8


def paper_count(
    vocab_size: int, d_model: int, d_ff: int, n_layers: int = 6, attention_bias: bool = True
) -> int:
    """The parameters of the paper's model counted from its description (section 3), with
    PyTorch's biases in every linear layer but the output (the paper does not say; its
    tensor2tensor code has none in W_Q, W_K, W_V, W_O: ``attention_bias=False``)."""
    attention = 4 * (d_model * d_model + (d_model if attention_bias else 0))  # W_Q, W_K, W_V, W_O
    feed_forward = d_model * d_ff + d_ff + d_ff * d_model + d_model
    norm = 2 * d_model
    encoder_layer = attention + feed_forward + 2 * norm
    decoder_layer = 2 * attention + feed_forward + 3 * norm
    return vocab_size * d_model + n_layers * (encoder_layer + decoder_layer)


@pytest.mark.parametrize(
    ("config", "reported", "expected"),
    [
        (TransformerConfig.base(), 65e6, paper_count(37000, 512, 2048)),
        (TransformerConfig.big(), 213e6, paper_count(37000, 1024, 4096)),
    ],
    ids=["base", "big"],
)
def test_the_papers_models_have_the_parameters_of_table_3(config, reported, expected):
    with torch.device("meta"):  # shapes only: no memory for 200 million numbers
        model = Transformer(config)
    assert count_parameters(model) == expected
    assert abs(expected - reported) / reported < 0.035  # not explained by the vocabulary: below


def test_no_one_vocabulary_gives_both_table_3_counts():
    """Chapter 10's vocabulary arithmetic: the count grows by D per token, so a count printed
    to the million (Table 3: base 65M, big 213M) fixes a range of vocabulary sizes. The big
    model's range lies below the base model's, and 37,000 (the paper's "about 37000") is in
    neither: no single vocabulary explains both counts."""

    def vocabularies(d_model: int, d_ff: int, millions: int) -> tuple[float, float]:
        layers = paper_count(0, d_model, d_ff)  # everything but the V x D embeddings
        return tuple(((millions + half) * 1e6 - layers) / d_model for half in (-0.5, 0.5))

    base, big = vocabularies(512, 2048, 65), vocabularies(1024, 4096, 213)
    assert [round(v) for v in (*big, *base)] == [35_296, 36_272, 39_769, 41_722]  # as printed
    assert big[1] < base[0]
    assert not any(low <= 37_000 <= high for low, high in (base, big))
    assert round(paper_count(37_000, 512, 2048) / 1e6) == 63  # not 65
    assert round(paper_count(37_000, 1024, 4096) / 1e6) == 214  # not 213


@pytest.mark.parametrize(
    ("config", "expected"),
    [(TransformerConfig.base(), 63_045_632), (TransformerConfig.big(), 214_171_648)],
    ids=["base", "big"],
)
def test_without_the_attention_biases_the_count_drops_by_72_tokens_worth(config, expected):
    """Chapter 10, the fold on Table 3: without biases in W_Q, W_K, W_V and W_O (as in the
    paper's tensor2tensor code) a model has 12 N D parameters fewer, 72 vocabulary tokens'
    worth (D per token), and still no one vocabulary gives both 65M and 213M."""
    with torch.device("meta"):
        model = Transformer(config)
    attention_biases = sum(
        module.bias.numel()
        for name, module in model.named_modules()
        if name.rsplit(".", 1)[-1] in {"w_q", "w_k", "w_v", "w_o"}
    )
    assert attention_biases == 12 * 6 * config.d_model == 72 * config.d_model
    assert count_parameters(model) - attention_biases == expected
    d_ff = config.d_ff
    assert paper_count(37_000, config.d_model, d_ff, attention_bias=False) == expected

    def vocabularies(d_model: int, d_ff: int, millions: int) -> tuple[float, float]:
        layers = paper_count(0, d_model, d_ff, attention_bias=False)
        return tuple(((millions + half) * 1e6 - layers) / d_model for half in (-0.5, 0.5))

    base, big = vocabularies(512, 2048, 65), vocabularies(1024, 4096, 213)
    assert big[1] < base[0] and not any(low <= 37_000 <= high for low, high in (base, big))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"d_model": 10, "n_heads": 4}, ValueError, "divisible by n_heads"),
        ({"d_model": 9, "n_heads": 3}, ValueError, "even"),
        ({"share_embeddings": True}, ValueError, "one vocabulary"),
        ({"pad_id": 12}, ValueError, "pad_id must be a token of both"),
        ({"pad_id": "0"}, TypeError, "pad_id"),
        ({"dropout": -0.1}, ValueError, "dropout"),
        ({"n_layers": 0}, ValueError, "n_layers"),
    ],
)
def test_bad_configurations_are_rejected(kwargs, error, match):
    with pytest.raises(error, match=match):
        TransformerConfig(src_vocab_size=11, tgt_vocab_size=13, **kwargs)


def test_transformer_needs_a_config():
    with pytest.raises(TypeError, match="TransformerConfig"):
        Transformer({"d_model": 8})


@pytest.mark.parametrize(
    ("src", "error", "match"),
    [
        (torch.tensor([[1.0, 2.0]]), TypeError, "integer token ids"),
        (torch.tensor([1, 2]), ValueError, r"shape \(B, T\)"),
        (torch.tensor([[1, 11]]), ValueError, r"0 … 10"),
        (torch.ones(1, 17, dtype=torch.long), ValueError, "max_len"),
    ],
)
def test_bad_token_ids_are_rejected(model, src, error, match):
    with pytest.raises(error, match=match):
        model(src, torch.tensor([[1, 2]]))


def test_greedy_decoding_cannot_outgrow_the_positional_encoding(model):
    with pytest.raises(ValueError, match="max_len"):
        model.greedy_decode(torch.tensor([[3]]), bos_id=1, eos_id=2, max_new_tokens=16)


def test_the_same_seed_gives_the_same_model():
    states = []
    for _ in range(2):
        torch.manual_seed(3)
        states.append(Transformer(SMALL).state_dict())
    assert all(torch.equal(states[0][name], states[1][name]) for name in states[0])


def test_tokens_of_any_integer_width_from_numpy_or_torch_are_accepted_everywhere():
    from selfattn_lib.training import shift_right

    model = Transformer(TransformerConfig(6, 6, d_model=4, n_heads=1, d_ff=8, n_layers=1)).eval()
    src = np.array([[1, 2, 3]], dtype=np.int16)
    expected = model.encode(torch.tensor([[1, 2, 3]]))
    for tokens in (src, torch.from_numpy(src), torch.tensor([[1, 2, 3]], dtype=torch.int32)):
        assert torch.equal(model.encode(tokens), expected)
        assert torch.equal(shift_right(tokens, 5), torch.tensor([[5, 1, 2]]))
    with pytest.raises(TypeError, match="integer token ids"):
        model.encode(torch.tensor([[1.0, 2.0]]))
