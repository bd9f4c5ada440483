"""One error policy for the whole public API, walked function by function.

Every public function and class of the concept modules is called once with an argument of
the wrong kind, which must raise ``TypeError``, and once with a value of the right kind that
is wrong, which must raise ``ValueError``; both messages name the argument. A public callable
added without an entry here fails ``test_every_public_callable_has_an_entry``.
"""

from __future__ import annotations

import datetime
import importlib
import inspect
from collections.abc import Callable

import numpy as np
import pytest

import selfattn_lib

torch = pytest.importorskip("torch")

from selfattn_lib import induction, language_model, multihead, tasks, transformer  # noqa: E402
from selfattn_lib.tokenization import CharTokenizer  # noqa: E402

RNG = np.random.default_rng(0)
X = RNG.normal(size=(2, 3, 4))  # (B, T, D)
PARAMS = multihead.MultiHeadParams.init(4, np.random.default_rng(1))
CONFIG = transformer.TransformerConfig(5, 5, d_model=4, n_heads=1, d_ff=8, n_layers=1, max_len=8)
MODEL = transformer.Transformer(CONFIG)
TOKENS = torch.tensor([[1, 2, 3]])
VOCABULARY = tasks.Vocabulary(("<pad>", "<bos>", "<eos>", "a", "b"))
PROBABILITIES = np.full((2, 3, 4), 0.25)  # (B, T, V): rows of next-token probabilities
LM_CONFIG = language_model.GPTConfig(5, context_length=4, d_model=4, n_heads=1, d_ff=8)
LM_MODEL = language_model.GPT(LM_CONFIG)
INDUCTION_CONFIG = induction.AttentionOnlyConfig(5, context_length=4, d_model=4, n_heads=1)
INDUCTION_MODEL = induction.AttentionOnlyTransformer(INDUCTION_CONFIG)


def encoder_params() -> dict:
    from selfattn_lib.encoder import init_encoder_layer_params

    return init_encoder_layer_params(4, 8, np.random.default_rng(2))


def state() -> tuple:
    from selfattn_lib.online_softmax import softmax_state

    return softmax_state(np.ones((2, 3)), np.ones((3, 2)))


# name: (valid keyword arguments, wrong kind {argument: value}, wrong value {argument: value})
Case = tuple[Callable[[], dict], dict, dict]
CASES: dict[str, Case] = {
    "similarity.dot_product": (lambda: {"a": X, "b": X}, {"a": "x"}, {"b": X[:, :, :2]}),
    "similarity.cosine_similarity": (
        lambda: {"a": X, "b": X},
        {"a": "x"},
        {"b": np.zeros_like(X)},
    ),
    "similarity.similarity_matrix": (
        lambda: {"x": X[0], "y": X[1]},
        {"measure": 3},
        {"measure": "angle"},
    ),
    "softmax.softmax": (lambda: {"x": X}, {"axis": 1.5}, {"temperature": 0.0}),
    "softmax.log_sum_exp": (lambda: {"x": X}, {"x": "x"}, {"axis": 3}),
    "softmax.softmax_in_place": (lambda: {"scores": X.copy()}, {"temperature": "1"}, {"axis": 5}),
    "kernel_regression.kernel_weights": (
        lambda: {"queries": X[0, 0], "keys": X[0, 1], "width": 1.0},
        {"width": "1"},
        {"keys": X[0]},
    ),
    "kernel_regression.kernel_regression": (
        lambda: {"queries": X[0, 0], "keys": X[0, 1], "values": X[0, 2], "width": 1.0},
        {"values": "y"},
        {"values": X[0, 2, :3]},
    ),
    "attention.simple_self_attention": (lambda: {"x": X}, {"x": "x"}, {"x": X[0, 0]}),
    "attention.attention_scores": (lambda: {"q": X, "k": X}, {"scale": "1"}, {"scale": -1.0}),
    "attention.scaled_dot_product_attention": (
        lambda: {"q": X, "k": X, "v": X},
        {"mask": np.ones((3, 3))},
        {"mask": np.ones((4, 3), dtype=bool)},
    ),
    "masks.causal_mask": (lambda: {"t_q": 3}, {"t_q": 2.5}, {"t_q": 0}),
    "masks.padding_mask": (
        lambda: {"lengths": [1, 2], "max_len": 3},
        {"lengths": [1.0, 2.0]},
        {"lengths": [1, 4]},
    ),
    "masks.combine_masks": (
        lambda: {"masks": (np.ones((2, 3), dtype=bool), np.ones(3, dtype=bool))},
        {"masks": (np.ones((2, 3)),)},
        {"masks": (np.ones((2, 3), dtype=bool), np.ones(2, dtype=bool))},
    ),
    "multihead.split_heads": (lambda: {"x": X, "n_heads": 2}, {"n_heads": 2.0}, {"n_heads": 3}),
    "multihead.merge_heads": (lambda: {"x": X[None]}, {"x": "x"}, {"x": X[0]}),
    "multihead.MultiHeadParams": (
        lambda: {"w_q": PARAMS.w_q, "w_k": PARAMS.w_k, "w_v": PARAMS.w_v, "w_o": PARAMS.w_o},
        {"w_q": "w"},
        {"w_k": np.ones((4, 3))},
    ),
    "multihead.MultiHeadParams.init": (
        lambda: {"d_model": 4, "rng": np.random.default_rng(0)},
        {"rng": 0},
        {"d_model": 0},
    ),
    "multihead.multi_head_attention": (
        lambda: {"x_q": X, "x_kv": X, "params": PARAMS, "n_heads": 2},
        {"params": {}},
        {"n_heads": 3},
    ),
    "positional.sinusoidal_encoding": (
        lambda: {"max_len": 4, "d_model": 4},
        {"max_len": "4"},
        {"d_model": 3},
    ),
    "positional.rope_angles": (
        lambda: {"positions": [0, 1, 2], "d_model": 4},
        {"d_model": "4"},
        {"d_model": 3},
    ),
    "positional.apply_rope": (
        lambda: {"x": X, "positions": [0, 1, 2]},
        {"x": "x"},
        {"positions": [0, 1]},
    ),
    "encoder.layer_norm": (
        lambda: {"x": X, "gain": np.ones(4), "bias": np.zeros(4)},
        {"eps": "1"},
        {"gain": np.ones(3)},
    ),
    "encoder.rms_norm": (lambda: {"x": X, "gain": np.ones(4)}, {"x": "x"}, {"eps": 0.0}),
    "encoder.feed_forward": (
        lambda: {
            "x": X,
            "w_1": np.ones((4, 8)),
            "b_1": np.ones(8),
            "w_2": np.ones((8, 4)),
            "b_2": np.ones(4),
        },  # fmt: skip
        {"w_1": "w"},
        {"w_2": np.ones((4, 4))},
    ),
    "encoder.sublayer_connection": (
        lambda: {"x": X, "sublayer": np.tanh, "norm": np.tanh, "norm_first": False},
        {"norm": 1},
        {"sublayer": lambda v: v[0]},
    ),
    "encoder.init_encoder_layer_params": (
        lambda: {"d_model": 4, "d_ff": 8, "rng": np.random.default_rng(0)},
        {"rng": 0},
        {"d_ff": 0},
    ),
    "encoder.encoder_layer": (
        lambda: {"x": X, "params": encoder_params(), "n_heads": 2},
        {"params": []},
        {"params": {"w_1": 1}},
    ),
    "layers.MultiHeadAttention": (
        lambda: {"d_model": 4, "n_heads": 2},
        {"dropout": "0.1"},
        {"n_heads": 3},
    ),
    "layers.MultiHeadAttention.from_params": (
        lambda: {"params": PARAMS, "n_heads": 2},
        {"params": {}},
        {"n_heads": 3},
    ),
    "layers.MultiHeadAttention.from_torch": (
        lambda: {"layer": torch.nn.MultiheadAttention(4, 2, batch_first=True)},
        {"layer": torch.nn.Linear(4, 4)},
        {"layer": torch.nn.MultiheadAttention(4, 2, kdim=3, vdim=3, batch_first=True)},
    ),
    "layers.FeedForward": (lambda: {"d_model": 4, "d_ff": 8}, {"d_ff": "8"}, {"dropout": 1.5}),
    "layers.EncoderLayer": (
        lambda: {"d_model": 4, "n_heads": 2, "d_ff": 8},
        {"dropout": "0.1"},
        {"n_heads": 3},
    ),
    "layers.EncoderLayer.from_torch": (
        lambda: {"layer": torch.nn.TransformerEncoderLayer(4, 2, 8, batch_first=True)},
        {"layer": torch.nn.Linear(4, 4)},
        {"layer": torch.nn.TransformerEncoderLayer(4, 2, 8, batch_first=False)},
    ),
    "layers.DecoderLayer": (
        lambda: {"d_model": 4, "n_heads": 2, "d_ff": 8},
        {"d_ff": None},
        {"dropout": -0.1},
    ),
    "layers.DecoderLayer.from_torch": (
        lambda: {"layer": torch.nn.TransformerDecoderLayer(4, 2, 8, batch_first=True)},
        {"layer": torch.nn.Linear(4, 4)},
        {"layer": torch.nn.TransformerDecoderLayer(4, 2, 8, batch_first=False)},
    ),
    "layers.Encoder": (
        lambda: {"d_model": 4, "n_heads": 2, "d_ff": 8, "n_layers": 2},
        {"n_layers": "2"},
        {"n_layers": 0},
    ),
    "layers.Decoder": (
        lambda: {"d_model": 4, "n_heads": 2, "d_ff": 8, "n_layers": 2},
        {"dropout": "0"},
        {"n_layers": -1},
    ),
    "layers.masked_softmax": (
        lambda: {"scores": torch.zeros(2, 3), "mask": torch.ones(2, 3, dtype=torch.bool)},
        {"mask": torch.ones(2, 3)},
        {"mask": torch.ones(4, 3, dtype=torch.bool)},
    ),
    "layers.check_mask": (
        lambda: {"mask": torch.ones(3, 4, dtype=torch.bool), "scores_shape": (2, 3, 4)},
        {"mask": np.ones((3, 4), dtype=bool)},
        {"mask": torch.ones(3, 5, dtype=torch.bool)},
    ),
    "transformer.TransformerConfig": (
        lambda: {
            "src_vocab_size": 8,
            "tgt_vocab_size": 8,
            "d_model": 4,
            "n_heads": 1,
            "d_ff": 8,
            "n_layers": 1,
        },  # fmt: skip
        {"dropout": "0.1"},
        {"n_heads": 3},
    ),
    "transformer.TransformerConfig.base": (
        lambda: {"vocab_size": 100},
        {"vocab_size": "100"},
        {"vocab_size": 0},
    ),
    "transformer.TransformerConfig.big": (
        lambda: {"vocab_size": 100},
        {"vocab_size": 1.5},
        {"vocab_size": -1},
    ),
    "transformer.Transformer": (lambda: {"config": CONFIG}, {"config": {}}, None),
    "transformer.as_token_ids": (
        lambda: {"tokens": TOKENS},
        {"tokens": torch.tensor([[1.0]])},
        {"tokens": torch.tensor([1, 2])},
    ),
    "transformer.check_token_id": (
        lambda: {"name": "bos_id", "value": 1},
        {"value": "1"},
        {"value": -1},
    ),
    "transformer.count_parameters": (lambda: {"module": MODEL}, {"module": "model"}, None),
    "tasks.Vocabulary": (
        lambda: {"tokens": ("<pad>", "<bos>", "<eos>", "a")},
        {"tokens": ("<pad>", "<bos>", "<eos>", 1)},
        {"tokens": ("<pad>", "<bos>", "<eos>", "a", "a")},
    ),
    "tasks.Vocabulary.from_characters": (
        lambda: {"characters": "abc"},
        {"characters": 3},
        {"characters": ["ab"]},
    ),
    "tasks.format_date": (
        lambda: {"date": datetime.date(2026, 1, 1), "date_format": "d MMMM yyyy"},
        {"date": "2026-01-01"},
        {"date_format": "yyyy"},
    ),
    "tasks.parse_date": (lambda: {"text": "1 January 2026"}, {"text": 1}, {"text": "soon"}),
    "tasks.is_held_out": (lambda: {"date": datetime.date(2026, 1, 1)}, {"date": "x"}, None),
    "tasks.make_dataset": (
        lambda: {"n": 3, "rng": np.random.default_rng(0)},
        {"rng": 0},
        {"split": "validation"},
    ),
    "training.shift_right": (
        lambda: {"tgt": TOKENS, "bos_id": 1},
        {"bos_id": "1"},
        {"bos_id": -1},
    ),
    "training.sequence_loss": (
        lambda: {"logits": torch.zeros(1, 3, 5), "labels": TOKENS, "pad_id": 0},
        {"labels": torch.zeros(1, 3)},
        {"labels": torch.tensor([[1, 2]])},
    ),
    "training.warmup_learning_rate": (
        lambda: {"step": 1, "d_model": 4, "warmup_steps": 10},
        {"factor": "1"},
        {"factor": -1.0},
    ),
    "training.linear_warmup_decay": (
        lambda: {"step": 1, "peak": 1.0, "warmup_steps": 2, "total_steps": 5},
        {"peak": "1"},
        {"step": 6},
    ),
    "training.train": (
        lambda: {
            "model": MODEL,
            "src": TOKENS,
            "tgt": TOKENS,
            "bos_id": 1,
            "epochs": 1,
            "batch_size": 1,
            "generator": torch.Generator().manual_seed(0),
            "progress": False,
        },  # fmt: skip
        {"learning_rate": "x"},
        {"epochs": 0},
    ),
    "training.predict": (
        lambda: {"model": MODEL, "src": TOKENS, "vocabulary": VOCABULARY, "max_new_tokens": 2},
        {"vocabulary": "abc"},
        {"max_new_tokens": 0},
    ),
    "training.exact_match": (
        lambda: {"model": MODEL, "src": TOKENS, "targets": ["ab"], "vocabulary": VOCABULARY},
        {"targets": "ab"},
        {"targets": ["a", "b"]},
    ),
    "attention_cost.score_matrix_bytes": (
        lambda: {"batch": 1, "heads": 1, "t_q": 2, "t_k": 2, "bytes_per_number": 4},
        {"t_q": 2.0},
        {"heads": 0},
    ),
    "attention_cost.longest_sequence": (
        lambda: {"memory_bytes": 10**6, "batch": 1, "heads": 1, "bytes_per_number": 4},
        {"memory_bytes": "1 MB"},
        {"memory_bytes": -1},
    ),
    "attention_cost.tile_working_bytes": (
        lambda: {"block_q": 2, "block_k": 2, "d_k": 4, "d_v": 4, "bytes_per_number": 4},
        {"block_k": 2.5},
        {"d_v": 0},
    ),
    "attention_cost.attention_flops": (
        lambda: {"t_q": 2, "t_k": 2, "d_k": 4, "d_v": 4},
        {"d_v": None},
        {"d_k": 0},
    ),
    "kv_cache.attend_with_cache": (
        lambda: {
            "q_new": X[:, :1],
            "k_new": X[:, :1],
            "v_new": X[:, :1],
            "k_cache": X,
            "v_cache": X,
        },  # fmt: skip
        {"k_cache": "k"},
        {"v_cache": X[:, :2]},
    ),
    "online_softmax.softmax_state": (
        lambda: {"scores": np.ones((2, 3)), "values": np.ones((3, 2))},
        {"scores": "s"},
        {"values": np.ones((4, 2))},
    ),
    "online_softmax.merge_states": (
        lambda: {"state_a": state(), "state_b": state()},
        {"state_a": 1.0},
        {"state_b": (np.ones(2), -np.ones(2), np.ones((2, 2)))},
    ),
    "online_softmax.state_output": (
        lambda: {"state": state()},
        {"state": "s"},
        {"state": (np.ones(2), np.zeros(2), np.ones((2, 2)))},
    ),
    "online_softmax.running_statistics": (
        lambda: {"row": np.arange(5.0), "block_size": 2},
        {"block_size": 2.0},
        {"row": np.ones((2, 2))},
    ),
    "online_softmax.causal_blocked_attention": (
        lambda: {"q": X[0], "k": X[0], "v": X[0], "block_size": 2},
        {"block_size": "2"},
        {"k": X[0, :2]},
    ),
    "sampling.temperature_probabilities": (
        lambda: {"logits": X},
        {"temperature": "1"},
        {"temperature": 0.0},
    ),
    "sampling.top_k_filter": (
        lambda: {"probabilities": PROBABILITIES, "k": 2},
        {"k": 2.0},
        {"k": 5},
    ),
    "sampling.top_p_filter": (
        lambda: {"probabilities": PROBABILITIES, "p": 0.9},
        {"p": "0.9"},
        {"p": 1.5},
    ),
    "sampling.next_token_probabilities": (
        lambda: {"logits": X, "temperature": 0.8, "top_k": 3, "top_p": 0.9},
        {"top_k": 2.5},
        {"top_p": 0.0},
    ),
    "sampling.greedy_token": (lambda: {"logits": X}, {"logits": "x"}, {"logits": X[..., :0]}),
    "sampling.sample_token": (
        lambda: {"probabilities": PROBABILITIES, "rng": np.random.default_rng(0)},
        {"rng": 0},
        {"probabilities": PROBABILITIES * 2},
    ),
    "tokenization.CharTokenizer": (
        lambda: {"characters": ("a", "b")},
        {"characters": ("a", 1)},
        {"characters": ("a", "a")},
    ),
    "tokenization.CharTokenizer.from_text": (lambda: {"text": "ab"}, {"text": 3}, {"text": ""}),
    "tokenization.train_bpe": (
        lambda: {"ids": [0, 1, 0, 1], "n_merges": 2, "vocab_size": 2},
        {"n_merges": 2.0},
        {"ids": [0, 2]},
    ),
    "tokenization.apply_merges": (
        lambda: {"ids": [0, 1, 0, 1], "merges": [(0, 1)], "vocab_size": 2},
        {"merges": [(0.0, 1.0)]},
        {"merges": [(0, 2)]},
    ),
    "tokenization.expand": (
        lambda: {"ids": [2, 0], "merges": [(0, 1)], "vocab_size": 2},
        {"ids": [2.0]},
        {"ids": [3]},
    ),
    "tokenization.merge_pair": (
        lambda: {"ids": [0, 1, 0, 1], "pair": (0, 1), "new_id": 2},
        {"pair": "ab"},
        {"new_id": -1},
    ),
    "tokenization.merged_token_strings": (
        lambda: {"merges": [(0, 1)], "tokenizer": CharTokenizer(("a", "b"))},
        {"tokenizer": ("a", "b")},
        {"merges": [(0, 2)]},
    ),
    "rotary.apply_rotary": (
        lambda: {"x": torch.ones(2, 3, 4), "positions": torch.arange(3)},
        {"positions": [0, 1, 2]},
        {"layout": "pairs"},
    ),
    "rotary.apply_rotary_complex": (
        lambda: {"x": torch.ones(2, 3, 4), "positions": torch.arange(3)},
        {"x": np.ones((2, 3, 4))},
        {"positions": torch.arange(2)},
    ),
    "grouped_query.repeat_kv": (
        lambda: {"x": torch.ones(1, 2, 3, 4), "n_rep": 2}, {"n_rep": 2.0}, {"n_rep": 0},
    ),
    "grouped_query.GroupedQueryAttention": (
        lambda: {"d_model": 8, "n_heads": 4, "n_kv_heads": 2, "rotary": "half"},
        {"rotary": 1},
        {"n_kv_heads": 3},
    ),
    "grouped_query.kv_cache_bytes": (
        lambda: {"n_layers": 2, "n_kv_heads": 2, "d_head": 4, "n_tokens": 3},
        {"n_tokens": 1.5},
        {"bytes_per_number": 0},
    ),
    "sliding_window.window_mask": (
        lambda: {"query_positions": torch.arange(3), "key_positions": torch.arange(3),
                 "window": 2},
        {"key_positions": torch.arange(3.0)},
        {"query_positions": torch.arange(6).view(2, 3)},
    ),
    "sliding_window.sliding_window_mask": (
        lambda: {"n_tokens": 4, "window": 2, "n_sinks": 1}, {"window": 2.5}, {"n_sinks": -1},
    ),
    "sliding_window.WindowCache": (
        lambda: {"window": 4, "n_sinks": 1}, {"n_sinks": 1.0}, {"window": 0},
    ),
    "language_model.GPTConfig": (lambda: {"vocab_size": 5}, {"vocab_size": "5"},
                                 {"vocab_size": 0}),
    "language_model.GPT": (lambda: {"config": LM_CONFIG}, {"config": "config"}, None),
    "language_model.KVCache": (lambda: {"n_layers": 2}, {"n_layers": 2.0}, {"n_layers": 0}),
    "language_model.causal_mask_after": (
        lambda: {"n_cached": 1, "n_new": 2}, {"n_cached": "1"}, {"n_cached": -1},
    ),
    "language_model.train_language_model": (
        lambda: {"model": LM_MODEL, "ids": torch.arange(5).repeat(2), "steps": 1,
                 "batch_size": 2, "generator": torch.Generator().manual_seed(0)},
        {"generator": 0},
        {"steps": 0},
    ),
    "language_model.bits_per_token": (
        lambda: {"model": LM_MODEL, "ids": torch.tensor([0, 1, 2])},
        {"ids": torch.ones(3)},
        {"ids": torch.tensor([1])},
    ),
    "language_model.generate": (
        lambda: {"model": LM_MODEL, "prompt": [1, 2], "n_new_tokens": 2, "greedy": True},
        {"prompt": [1.5]},
        {"n_new_tokens": 0},
    ),
    "flash_attention.tile_schedule": (
        lambda: {"t_q": 5, "t_k": 5, "block_q": 2, "block_k": 3},
        {"causal": "yes"},
        {"t_q": 0},
    ),
    "flash_attention.tiled_attention": (
        lambda: {"q": X, "k": X, "v": X, "block_q": 2, "block_k": 2},
        {"traffic": []},
        {"block_q": 0},
    ),
    "flash_attention.naive_attention": (
        lambda: {"q": X, "k": X, "v": X, "causal": True},
        {"causal": 1},
        {"v": X[:, :2]},
    ),
    "flash_attention.naive_traffic": (
        lambda: {"t_q": 4, "t_k": 4, "d_k": 2, "d_v": 2},
        {"d_k": 2.0},
        {"t_k": 0},
    ),
    "flash_attention.tiled_traffic": (
        lambda: {"t_q": 4, "t_k": 6, "d_k": 2, "d_v": 2, "block_q": 2, "block_k": 4},
        {"block_k": "4"},
        {"causal": True},
    ),
    "induction.repeated_tokens": (
        lambda: {"n_sequences": 2, "half_length": 3, "vocab_size": 5,
                 "generator": torch.Generator().manual_seed(0)},
        {"first_token": 1.5},
        {"first_token": 5},
    ),
    "induction.AttentionOnlyConfig": (
        lambda: {"vocab_size": 5, "context_length": 4, "d_model": 4, "n_heads": 1},
        {"positions": 1},
        {"n_heads": 3},
    ),
    "induction.AttentionOnlyTransformer": (
        lambda: {"config": INDUCTION_CONFIG}, {"config": "config"}, None,
    ),
    "induction.train_induction_model": (
        lambda: {"model": INDUCTION_MODEL, "steps": 1, "batch_size": 2, "half_length": 2,
                 "generator": torch.Generator().manual_seed(0)},
        {"half_length": 2.0},
        {"half_length": (3, 2)},
    ),
    "induction.in_context_loss": (
        lambda: {"model": INDUCTION_MODEL, "tokens": torch.tensor([[0, 1, 0, 1]])},
        {"tokens": torch.ones(1, 4)},
        {"ablate": [(2, 0)]},
    ),
    "induction.previous_token_scores": (
        lambda: {"weights": [torch.full((1, 1, 2, 2), 0.5)]},
        {"weights": torch.full((1, 1, 2, 2), 0.5)},
        {"weights": [torch.ones(1, 1, 1, 1)]},
    ),
    "induction.prefix_matching_scores": (
        lambda: {"weights": [torch.full((1, 1, 4, 4), 0.25)], "half_length": 2},
        {"half_length": 2.0},
        {"half_length": 3},
    ),
    "induction.ov_circuit": (
        lambda: {"model": INDUCTION_MODEL, "layer": 1, "head": 0},
        {"layer": 1.0},
        {"head": 1},
    ),
    "induction.copying_scores": (lambda: {"model": INDUCTION_MODEL}, {"model": "model"}, None),
}  # fmt: skip
# Records that hold what a function computed and check nothing themselves.
NOT_CALLED = {"tasks.DateDataset": "a record made by make_dataset",
              "training.TrainingHistory": "a record filled by train",
              "layers.LayerCache": "filled by attention; extend checks its input",
              "induction.InductionHistory": "a record filled by train_induction_model"}  # fmt: skip


def public_callables() -> dict[str, Callable]:
    found = {}
    for module_name in selfattn_lib.CONCEPT_MODULES:
        module = importlib.import_module(f"selfattn_lib.{module_name}")
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            if not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            found[f"{module_name}.{name}"] = obj
            if inspect.isclass(obj):
                for method, value in vars(obj).items():
                    if not method.startswith("_") and isinstance(value, classmethod):
                        found[f"{module_name}.{name}.{method}"] = getattr(obj, method)
    return found


PUBLIC = public_callables()


def call(name: str, kwargs: dict) -> object:
    function = PUBLIC[name]
    if name == "masks.combine_masks":
        return function(*kwargs["masks"])
    return function(**kwargs)


def test_every_public_callable_has_an_entry():
    assert set(PUBLIC) == set(CASES) | set(NOT_CALLED)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_valid_call_works(name):
    call(name, CASES[name][0]())


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_wrong_kind_of_value_is_a_type_error_naming_the_argument(name):
    valid, wrong_kind, _ = CASES[name]
    (argument,) = wrong_kind
    kwargs = {**valid(), **wrong_kind}
    with pytest.raises(TypeError) as error:
        call(name, kwargs)
    named = kwargs.get("name", argument) if name.endswith("check_token_id") else argument
    assert named.rstrip("s") in str(error.value), error.value


@pytest.mark.parametrize("name", sorted(name for name, case in CASES.items() if case[2]))
def test_a_wrong_value_is_a_value_error_naming_the_argument(name):
    valid, _, wrong_value = CASES[name]
    (argument,) = wrong_value
    kwargs = {**valid(), **wrong_value}
    with pytest.raises(ValueError) as error:
        call(name, kwargs)
    named = kwargs.get("name", argument) if name.endswith("check_token_id") else argument
    message = str(error.value)
    assert named.rstrip("s") in message or named.split("_")[0] in message, message
