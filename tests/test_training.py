"""Tests of selfattn_lib.training: teacher forcing, the loss (padding ignored, label
smoothing), the paper's learning-rate schedule, deterministic training whose loss goes down,
greedy evaluation, and clear errors for bad arguments."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from selfattn_lib import tasks, training
from selfattn_lib.tasks import VOCABULARY
from selfattn_lib.transformer import Transformer, TransformerConfig

pytestmark = pytest.mark.filterwarnings("error")


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny models train fastest on one thread, and a second thread competing with other
    work for a core slows training down many times."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def tiny_model(seed: int = 0, vocab_size: int = 8, **options) -> Transformer:
    torch.manual_seed(seed)
    config = TransformerConfig(
        vocab_size,
        vocab_size,
        d_model=16,
        n_heads=2,
        d_ff=32,
        n_layers=1,
        max_len=32,
        share_embeddings=True,  # (two separate embeddings are initialised in a set's order)
        **options,
    )
    return Transformer(config)


def copy_task(n: int = 64, length: int = 5, vocab_size: int = 8, seed: int = 0):
    """Sources of random tokens 3 … V-1; the target is the source followed by <eos> (2)."""
    generator = torch.Generator().manual_seed(seed)
    src = torch.randint(3, vocab_size, (n, length), generator=generator)  # (N, T)
    tgt = torch.cat([src, torch.full((n, 1), 2)], dim=1)  # (N, T + 1)
    return src, tgt


def run(model: Transformer, src, tgt, seed: int = 0, **options) -> training.TrainingHistory:
    arguments = {"bos_id": 1, "epochs": 2, "batch_size": 16, "progress": False, **options}
    return training.train(
        model, src, tgt, generator=torch.Generator().manual_seed(seed), **arguments
    )


# --- shift_right ---


def test_shift_right_puts_bos_first_and_drops_the_last_token():
    tgt = torch.tensor([[7, 8, 9, 2], [5, 2, 0, 0]])
    shifted = training.shift_right(tgt, bos_id=1)
    assert shifted.tolist() == [[1, 7, 8, 9], [1, 5, 2, 0]]
    assert shifted.dtype == torch.long and tgt.tolist() == [[7, 8, 9, 2], [5, 2, 0, 0]]
    from_numpy = training.shift_right(np.array([[4, 5]], dtype=np.int32), bos_id=1)
    assert from_numpy.tolist() == [[1, 4]] and from_numpy.dtype == torch.long


@pytest.mark.parametrize(
    ("tgt", "bos_id", "error", "message"),
    [
        (torch.tensor([1, 2, 3]), 1, ValueError, r"tgt must have shape \(B, T\)"),
        (torch.tensor([[1.0, 2.0]]), 1, TypeError, "integer token ids"),
        ([[1, 2]], 1, TypeError, "integer token ids"),
        (torch.tensor([[1, 2]]), -1, ValueError, "bos_id must be a token id"),
        (torch.tensor([[1, 2]]), True, TypeError, "bos_id must be a token id"),
        (torch.tensor([[1, 2]]), "1", TypeError, "bos_id must be a token id"),
    ],
)
def test_shift_right_rejects_bad_input(tgt, bos_id, error, message):
    with pytest.raises(error, match=message):
        training.shift_right(tgt, bos_id)


# --- sequence_loss ---


def test_the_loss_ignores_padding_positions():
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 4, 6, generator=generator)  # (B, T, V)
    labels = torch.tensor([[3, 4, 2, 0], [5, 2, 0, 0]])  # 0 = padding
    loss = training.sequence_loss(logits, labels, pad_id=0)
    real = labels != 0
    expected = F.cross_entropy(logits[real], labels[real])  # mean over the 5 real positions
    torch.testing.assert_close(loss, expected)
    changed = logits.clone()
    changed[~real] = 100.0 * torch.randn(int((~real).sum()), 6, generator=generator)
    assert training.sequence_loss(changed, labels, pad_id=0) == loss  # padding: no effect
    without_pad_id = training.sequence_loss(logits, labels, pad_id=None)
    assert without_pad_id != loss  # with no pad id every position counts


def test_label_smoothing_mixes_the_target_with_a_uniform_distribution():
    logits = torch.randn(1, 3, 5, generator=torch.Generator().manual_seed(1))
    labels = torch.tensor([[1, 4, 0]])
    epsilon = 0.1
    log_probs = logits.log_softmax(dim=-1)[0, :2]  # the two real positions, (2, V)
    target = torch.full((2, 5), epsilon / 5)
    target[0, 1] += 1 - epsilon
    target[1, 4] += 1 - epsilon
    expected = -(target * log_probs).sum(dim=-1).mean()
    loss = training.sequence_loss(logits, labels, pad_id=0, label_smoothing=epsilon)
    torch.testing.assert_close(loss, expected)


@pytest.mark.parametrize(
    ("logits", "labels", "options", "error", "message"),
    [
        (torch.zeros(2, 3), torch.zeros(2, 3, dtype=torch.long), {}, TypeError, r"\(B, T, V\)"),
        (torch.zeros(1, 3, 4, dtype=torch.long), torch.zeros(1, 3), {}, TypeError, "floating"),
        (torch.zeros(1, 3, 4), torch.ones(1, 2, dtype=torch.long), {}, ValueError, "shape"),
        (torch.zeros(1, 2, 4), torch.tensor([[1, 4]]), {}, ValueError, r"token ids in 0 … 3"),
        (torch.zeros(1, 2, 4), torch.tensor([[0, 0]]), {}, ValueError, "every label is padding"),
        (
            torch.zeros(1, 2, 4),
            torch.tensor([[1, 2]]),
            {"label_smoothing": 1.0},
            ValueError,
            "label_smoothing",
        ),
    ],
)
def test_sequence_loss_rejects_bad_input(logits, labels, options, error, message):
    with pytest.raises(error, match=message):
        training.sequence_loss(logits, labels, pad_id=0, **options)


# --- warmup_learning_rate ---


def test_the_warmup_schedule_is_the_papers_formula():
    d_model, warmup = 512, 4000
    for step in (1, 10, 3999, 4000, 4001, 100_000):
        expected = d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)
        assert training.warmup_learning_rate(
            step, d_model=d_model, warmup_steps=warmup
        ) == pytest.approx(expected)
    rates = [training.warmup_learning_rate(s, d_model=64, warmup_steps=100) for s in range(1, 400)]
    peak = int(np.argmax(rates)) + 1
    assert peak == 100 and rates[peak - 1] == pytest.approx(1 / math.sqrt(64 * 100))
    assert np.allclose(np.diff(rates[:100]), rates[0])  # a straight line up from 0
    assert rates[399 - 1] == pytest.approx(rates[99] * math.sqrt(100 / 399))  # 1 / √step
    assert training.warmup_learning_rate(5, d_model=64, warmup_steps=100, factor=2.0) == (
        pytest.approx(2 * rates[4])
    )


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"step": 0}, ValueError, "step must be a positive integer"),
        ({"d_model": 0}, ValueError, "d_model must be a positive integer"),
        ({"warmup_steps": 1.5}, TypeError, "warmup_steps must be a positive integer"),
        ({"factor": 0.0}, ValueError, "factor must be a finite positive number"),
        ({"factor": "1"}, TypeError, "factor must be a positive real number"),
    ],
)
def test_the_warmup_schedule_rejects_bad_arguments(arguments, error, message):
    with pytest.raises(error, match=message):
        training.warmup_learning_rate(
            **{"step": 1, "d_model": 64, "warmup_steps": 10, "factor": 1.0, **arguments}
        )


def test_linear_warmup_decay_rises_then_falls_to_almost_zero():
    rates = [
        training.linear_warmup_decay(s, peak=3e-3, warmup_steps=40, total_steps=320)
        for s in range(1, 321)
    ]
    assert int(np.argmax(rates)) + 1 == 40 and max(rates) == pytest.approx(3e-3)
    assert np.allclose(np.diff(rates[:40]), 3e-3 / 40)
    assert np.allclose(np.diff(rates[39:]), -3e-3 / 281)
    assert rates[-1] == pytest.approx(3e-3 / 281) and min(rates) > 0


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"step": 11}, "step must be at most total_steps = 10"),
        ({"warmup_steps": 10}, "warmup_steps must be smaller than total_steps"),
        ({"peak": -1.0}, "peak must be a finite positive number"),
        ({"step": 0}, "step must be a positive integer"),
    ],
)
def test_linear_warmup_decay_rejects_bad_arguments(arguments, message):
    options = {"step": 1, "peak": 1e-3, "warmup_steps": 2, "total_steps": 10, **arguments}
    with pytest.raises(ValueError, match=message):
        training.linear_warmup_decay(**options)


# --- train ---


def test_training_is_deterministic_and_leaves_the_global_random_state_alone():
    src, tgt = copy_task()
    first_model, second_model = tiny_model(dropout=0.1), tiny_model(dropout=0.1)
    state = torch.random.get_rng_state()
    first = run(first_model, src, tgt, seed=3)
    assert torch.equal(torch.random.get_rng_state(), state)
    second = run(second_model, src, tgt, seed=3)
    assert first.losses == second.losses and first.steps == 2 * 4
    for a, b in zip(first_model.parameters(), second_model.parameters(), strict=True):
        assert torch.equal(a, b)
    other = run(tiny_model(dropout=0.1), src, tgt, seed=4)
    assert other.losses != first.losses  # another generator, other batches and dropout


def test_the_loss_goes_down_and_the_model_is_left_in_eval_mode():
    src, tgt = copy_task(n=128)
    model = tiny_model(dropout=0.0)
    history = run(model, src, tgt, epochs=6, learning_rate=1e-2)
    assert history.steps == 6 * 8 and len(history.epoch_losses) == 6
    assert history.epoch_losses[-1] < 0.5 * history.epoch_losses[0]
    assert history.learning_rates == [1e-2] * history.steps
    assert history.seconds > 0 and not model.training


def test_a_schedule_sets_the_learning_rate_of_every_step():
    src, tgt = copy_task(n=32)
    model = tiny_model()
    history = run(model, src, tgt, learning_rate=lambda step: 1e-3 * step)
    assert history.learning_rates == pytest.approx([1e-3, 2e-3, 3e-3, 4e-3])


def test_padding_columns_change_nothing():
    src, tgt = copy_task(n=32)
    padded_src = torch.cat([src, torch.zeros(32, 3, dtype=torch.long)], dim=1)  # 3 more pads
    padded_tgt = torch.cat([tgt, torch.zeros(32, 2, dtype=torch.long)], dim=1)
    plain = run(tiny_model(dropout=0.0), src, tgt)  # dropout masks would depend on the shapes
    padded = run(tiny_model(dropout=0.0), padded_src, padded_tgt)
    np.testing.assert_allclose(padded.losses, plain.losses, rtol=1e-5)


def test_progress_prints_ten_lines_to_stdout_only(capsys):
    src, tgt = copy_task(n=160)  # 10 batches of 16 per epoch
    run(tiny_model(), src, tgt, epochs=3, progress=True)
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert captured.err == ""
    assert len(lines) == 10
    assert " step  3/30 (epoch 1/3)  loss " in lines[0] and lines[0].startswith("██")
    assert " step 30/30 (epoch 3/3)  loss " in lines[-1] and lines[-1].count("█") == 20
    run(tiny_model(), src[:32], tgt[:32], epochs=1, progress=True)  # 2 steps: 2 lines
    assert len(capsys.readouterr().out.splitlines()) == 2


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        ({"model": torch.nn.Linear(2, 2)}, TypeError, "model must be a selfattn_lib Transformer"),
        ({"src": torch.zeros(3, 4, dtype=torch.long)}, ValueError, "same number of examples"),
        ({"tgt": torch.zeros(32, 6)}, TypeError, "tgt must be a tensor or array of integer"),
        ({"epochs": 0}, ValueError, "epochs must be a positive integer"),
        ({"batch_size": 2.0}, TypeError, "batch_size must be a positive integer"),
        ({"generator": 0}, TypeError, "generator must be a torch.Generator"),
        ({"learning_rate": -1.0}, ValueError, "learning_rate .* must be a finite positive number"),
        ({"learning_rate": "x"}, TypeError, "learning_rate .* must be a positive real number"),
        ({"bos_id": None}, TypeError, "bos_id must be a token id"),
    ],
)
def test_train_rejects_bad_arguments(change, error, message):
    src, tgt = copy_task(n=32)
    arguments = {
        "model": tiny_model(),
        "src": src,
        "tgt": tgt,
        "bos_id": 1,
        "epochs": 1,
        "batch_size": 8,
        "generator": torch.Generator().manual_seed(0),
        "progress": False,
        **change,
    }
    model, src, tgt = arguments.pop("model"), arguments.pop("src"), arguments.pop("tgt")
    with pytest.raises(error, match=message):
        training.train(model, src, tgt, **arguments)


# --- predict and exact_match ---


def test_predict_decodes_greedy_outputs_and_exact_match_counts_them():
    model = tiny_model(vocab_size=len(VOCABULARY)).eval()
    data = tasks.make_dataset(6, np.random.default_rng(0))
    outputs = training.predict(model, data.src_ids, VOCABULARY, max_new_tokens=11, batch_size=4)
    generated = model.greedy_decode(
        torch.from_numpy(data.src_ids), bos_id=1, eos_id=2, max_new_tokens=11
    )
    assert outputs == [VOCABULARY.decode(row[1:]) for row in generated]
    options = {"max_new_tokens": 11}
    assert training.exact_match(model, data.src_ids, outputs, VOCABULARY, **options) == 1.0
    half = outputs[:3] + [output + "!" for output in outputs[3:]]
    assert training.exact_match(model, data.src_ids, half, VOCABULARY, **options) == 0.5


def test_exact_match_of_a_trained_copy_model():
    vocabulary = tasks.Vocabulary.from_characters("abcde")
    texts = ["".join(np.random.default_rng(i).choice(list("abcde"), size=4)) for i in range(256)]
    src = vocabulary.encode_batch(texts)
    tgt = vocabulary.encode_batch(texts, add_eos=True)
    model = tiny_model(vocab_size=len(vocabulary), dropout=0.0)
    run(model, src, tgt, epochs=40, batch_size=32, learning_rate=1e-2)
    assert training.exact_match(model, src, texts, vocabulary) >= 0.95


def test_evaluation_rejects_bad_arguments():
    model = tiny_model(vocab_size=len(VOCABULARY))
    src = VOCABULARY.encode_batch(["1 May 2026"])
    with pytest.raises(ValueError, match="1 sources, 2 targets"):
        training.exact_match(model, src, ["2026-05-01", "x"], VOCABULARY)
    with pytest.raises(TypeError, match="targets must be a sequence of strings"):
        training.exact_match(model, src, "2026-05-01", VOCABULARY)
    with pytest.raises(TypeError, match="vocabulary must be a Vocabulary"):
        training.predict(model, src, VOCABULARY.tokens, max_new_tokens=3)
    with pytest.raises(TypeError, match="model must be a selfattn_lib Transformer"):
        training.predict(torch.nn.Linear(2, 2), src, VOCABULARY, max_new_tokens=3)
