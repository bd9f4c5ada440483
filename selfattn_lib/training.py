"""Training a :class:`~selfattn_lib.transformer.Transformer` and measuring it (chapter 10).

- :func:`shift_right` — the decoder's input under *teacher forcing*: the target shifted one
  place to the right, ``<bos>`` first;
- :func:`sequence_loss` — cross-entropy over the target tokens, padding ignored, with optional
  label smoothing (the paper uses ``ε = 0.1``);
- :func:`warmup_learning_rate` — the paper's learning-rate schedule (equation 3), and
  :func:`linear_warmup_decay`, a warm-up with a linear decay for short runs;
- :func:`train` — mini-batch training with Adam, shuffled by a ``torch.Generator``, with a
  text progress bar, returning a :class:`TrainingHistory`;
- :func:`predict` and :func:`exact_match` — greedy decoding of a whole data set and the
  fraction of outputs that are exactly right.

Training is deterministic: the batches and the dropout masks are drawn from the
``generator`` passed in (dropout inside :func:`torch.random.fork_rng`, so the global random
state is left untouched). The same seed on the same machine and PyTorch version gives the
same losses; other machines may differ in the last digits.
"""

from __future__ import annotations

import math
import numbers
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from selfattn_lib._validation import check_positive_float, check_positive_int
from selfattn_lib.tasks import Vocabulary
from selfattn_lib.transformer import Transformer, as_token_ids, check_token_id


def shift_right(tgt: Tensor, bos_id: int) -> Tensor:
    """The decoder's input for teacher forcing: ``<bos>``, then the target without its last
    token. Position ``t`` of the input holds target token ``t - 1``, so the decoder predicts
    token ``t`` having seen only the tokens before it.

    Shapes
    ------
    ``tgt``: ``(B, T)`` integer ids → ``(B, T)``.

    Examples
    --------
    >>> shift_right(torch.tensor([[7, 8, 9, 2]]), bos_id=1)
    tensor([[1, 7, 8, 9]])
    """
    tgt = as_token_ids(tgt, "tgt")
    bos_id = check_token_id("bos_id", bos_id)
    bos = torch.full_like(tgt[:, :1], bos_id)  # (B, 1)
    return torch.cat([bos, tgt[:, :-1]], dim=1)  # (B, T)


def sequence_loss(
    logits: Tensor, labels: Tensor, *, pad_id: int | None, label_smoothing: float = 0.0
) -> Tensor:
    """Mean cross-entropy of the logits against the labels, over the positions whose label
    is not ``pad_id`` (padding contributes nothing, however many padding tokens there are).

    With label smoothing ``ε`` the target distribution puts ``1 - ε`` on the right token and
    spreads ``ε`` evenly over all ``V`` tokens, as ``torch.nn.functional.cross_entropy`` does.

    Shapes
    ------
    ``logits``: ``(B, T, V)``, ``labels``: ``(B, T)`` → a scalar tensor.

    Examples
    --------
    >>> logits = torch.zeros(1, 2, 4)  # uniform over 4 tokens: loss ln 4 at each position
    >>> round(sequence_loss(logits, torch.tensor([[3, 0]]), pad_id=0).item(), 4)
    1.3863
    """
    if not isinstance(logits, Tensor) or not logits.is_floating_point() or logits.ndim != 3:
        raise TypeError(
            f"logits must be a floating-point tensor of shape (B, T, V), got "
            f"{getattr(logits, 'dtype', type(logits).__name__)} of shape "
            f"{tuple(getattr(logits, 'shape', ()))}"
        )
    labels = as_token_ids(labels, "labels")
    if labels.shape != logits.shape[:2]:
        raise ValueError(
            f"labels must have shape (B, T) = {tuple(logits.shape[:2])} to fit logits of "
            f"shape {tuple(logits.shape)}, got {tuple(labels.shape)}"
        )
    if not (isinstance(label_smoothing, numbers.Real) and 0 <= label_smoothing < 1):
        raise ValueError(f"label_smoothing must be in [0, 1), got {label_smoothing!r}")
    vocab_size = logits.shape[-1]
    ignore = -100 if pad_id is None else check_token_id("pad_id", pad_id)
    real = labels != ignore
    if real.any() and (labels[real].min() < 0 or labels[real].max() >= vocab_size):
        raise ValueError(f"labels must be token ids in 0 … {vocab_size - 1}")
    if not real.any():
        raise ValueError("every label is padding: there is nothing to compute a loss on")
    return F.cross_entropy(
        logits.reshape(-1, vocab_size),  # (B · T, V)
        labels.reshape(-1),  # (B · T,)
        ignore_index=ignore,
        label_smoothing=float(label_smoothing),
    )


def warmup_learning_rate(
    step: int, *, d_model: int, warmup_steps: int, factor: float = 1.0
) -> float:
    """The paper's schedule (section 5.3, equation 3), times ``factor``:
    ``lrate = factor · D^(-1/2) · min(step^(-1/2), step · warmup_steps^(-3/2))``.

    It rises linearly for ``warmup_steps`` steps, then decays like ``1 / √step``; the peak,
    at ``step = warmup_steps``, is ``factor / √(D · warmup_steps)``.

    Shapes
    ------
    Not an array: ``step`` (counted from 1) → a float.

    Examples
    --------
    >>> round(warmup_learning_rate(4000, d_model=512, warmup_steps=4000), 6)  # the peak
    0.000699
    """
    step = check_positive_int("step", step)
    d_model = check_positive_int("d_model", d_model)
    warmup_steps = check_positive_int("warmup_steps", warmup_steps)
    factor = check_positive_float("factor", factor)
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


def linear_warmup_decay(step: int, *, peak: float, warmup_steps: int, total_steps: int) -> float:
    """A learning rate that rises linearly to ``peak`` in ``warmup_steps`` steps, then falls
    linearly to almost zero at ``total_steps``: with ``w = warmup_steps``, ``n = total_steps``,
    ``peak · min(step / w, (n - step + 1) / (n - w + 1))``.

    For a short run it replaces the slow ``1 / √step`` decay of
    :func:`warmup_learning_rate`, which needs tens of thousands of steps to come down.

    Shapes
    ------
    Not an array: ``step`` (counted from 1 to ``total_steps``) → a float.

    Examples
    --------
    >>> [linear_warmup_decay(s, peak=1.0, warmup_steps=2, total_steps=5) for s in range(1, 6)]
    [0.5, 1.0, 0.75, 0.5, 0.25]
    """
    step = check_positive_int("step", step)
    warmup_steps = check_positive_int("warmup_steps", warmup_steps)
    total_steps = check_positive_int("total_steps", total_steps)
    peak = check_positive_float("peak", peak)
    if not warmup_steps < total_steps:
        raise ValueError(
            f"warmup_steps must be smaller than total_steps, got {warmup_steps} and {total_steps}"
        )
    if step > total_steps:
        raise ValueError(f"step must be at most total_steps = {total_steps}, got {step}")
    rising = step / warmup_steps
    falling = (total_steps - step + 1) / (total_steps - warmup_steps + 1)
    return float(peak) * min(rising, falling)


@dataclass
class TrainingHistory:
    """What :func:`train` measured: the loss and learning rate of every step, the mean loss
    of every epoch, and the wall-clock time (which varies from machine to machine).

    Shapes
    ------
    ``losses`` and ``learning_rates``: one float per step; ``epoch_losses``: one per epoch.

    Examples
    --------
    >>> history = TrainingHistory(losses=[2.0, 1.0], learning_rates=[1e-3, 1e-3])
    >>> history.steps
    2
    """

    losses: list[float] = field(default_factory=list)
    learning_rates: list[float] = field(default_factory=list)
    epoch_losses: list[float] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def steps(self) -> int:
        return len(self.losses)


def train(
    model: Transformer,
    src: Tensor | np.ndarray,
    tgt: Tensor | np.ndarray,
    *,
    bos_id: int,
    epochs: int,
    batch_size: int,
    generator: torch.Generator,
    learning_rate: float | Callable[[int], float] = 1e-3,
    label_smoothing: float = 0.0,
    betas: tuple[float, float] = (0.9, 0.98),
    eps: float = 1e-9,
    progress: bool = True,
) -> TrainingHistory:
    """Train ``model`` to write ``tgt`` from ``src`` with teacher forcing and Adam.

    Every epoch shuffles the examples (with ``generator``) into batches of ``batch_size``.
    For each batch the decoder reads :func:`shift_right` of the target and the loss is
    :func:`sequence_loss` against the target itself, padding ignored. ``learning_rate`` is a
    number or a function of the step (1, 2, …), e.g. a :func:`warmup_learning_rate` schedule;
    Adam's ``betas`` and ``eps`` default to the paper's (0.9, 0.98) and 1e-9. With
    ``progress``, ten lines evenly spread over the steps are printed to standard output: a
    text bar, the mean loss since the previous line and the time so far. The model is left in
    eval mode (dropout off).

    Shapes
    ------
    ``src``: ``(N, T_src)`` and ``tgt``: ``(N, T_tgt)`` integer ids (tensors or arrays) →
    a :class:`TrainingHistory` with ``epochs · ⌈N / batch_size⌉`` steps.

    Examples
    --------
    >>> from selfattn_lib.transformer import TransformerConfig
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> model = Transformer(TransformerConfig(6, 6, d_model=8, n_heads=2, d_ff=16, n_layers=1))
    >>> src = torch.tensor([[3, 4, 5], [5, 4, 3]])
    >>> history = train(model, src, src, bos_id=1, epochs=3, batch_size=2,
    ...                 generator=torch.Generator().manual_seed(0), progress=False)
    >>> history.steps, history.losses[-1] < history.losses[0]
    (3, True)
    """
    if not isinstance(model, Transformer):
        raise TypeError(f"model must be a selfattn_lib Transformer, got {type(model).__name__}")
    src = as_token_ids(src, "src")
    tgt = as_token_ids(tgt, "tgt")
    if src.shape[0] != tgt.shape[0]:
        raise ValueError(
            f"src and tgt must hold the same number of examples: src has shape "
            f"{tuple(src.shape)}, tgt has shape {tuple(tgt.shape)}"
        )
    epochs = check_positive_int("epochs", epochs)
    batch_size = check_positive_int("batch_size", batch_size)
    bos_id = check_token_id("bos_id", bos_id)
    _check_generator(generator)
    if callable(learning_rate):
        schedule = learning_rate
    else:
        constant = check_positive_float("learning_rate (a number or a function of the step)",
                                        learning_rate)  # fmt: skip

        def schedule(step: int) -> float:
            return constant

    n_examples = src.shape[0]
    steps_per_epoch = math.ceil(n_examples / batch_size)
    optimizer = torch.optim.Adam(model.parameters(), lr=schedule(1), betas=betas, eps=eps)
    history = TrainingHistory()
    total_steps = epochs * steps_per_epoch
    report_at = {math.ceil(total_steps * k / 10) for k in range(1, 11)}  # ten progress lines
    start = time.perf_counter()
    dropout_seed = int(torch.randint(2**62, (1,), generator=generator))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(dropout_seed)  # dropout masks, without touching the global state
        model.train()
        for epoch in range(1, epochs + 1):
            order = torch.randperm(n_examples, generator=generator)  # (N,)
            epoch_total = 0.0
            for batch in range(steps_per_epoch):
                rows = order[batch * batch_size : (batch + 1) * batch_size]  # (B,)
                src_batch, tgt_batch = src[rows], tgt[rows]  # (B, T_src), (B, T_tgt)
                step = history.steps + 1
                rate = float(schedule(step))
                for group in optimizer.param_groups:
                    group["lr"] = rate
                logits = model(src_batch, shift_right(tgt_batch, bos_id))  # (B, T_tgt, V)
                loss = sequence_loss(
                    logits, tgt_batch, pad_id=model.config.pad_id, label_smoothing=label_smoothing
                )
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                history.losses.append(loss.item())
                history.learning_rates.append(rate)
                epoch_total += loss.item()
                history.seconds = time.perf_counter() - start
                if progress and step in report_at:
                    _print_progress(history, total_steps, epoch, epochs)
            history.epoch_losses.append(epoch_total / steps_per_epoch)
        model.eval()
    return history


def _check_generator(generator: object) -> None:
    if not isinstance(generator, torch.Generator):
        raise TypeError(
            "generator must be a torch.Generator (torch.Generator().manual_seed(seed)), "
            f"got {type(generator).__name__}"
        )


def _print_progress(
    history: TrainingHistory, total_steps: int, epoch: int, epochs: int, width: int = 20
) -> None:
    """One line: a bar, the step and epoch, the mean loss since the previous line, the time."""
    step = history.steps
    filled = round(width * step / total_steps)
    bar = "█" * filled + "·" * (width - filled)
    since_last = history.losses[-max(1, math.ceil(total_steps / 10)) :]
    print(
        f"{bar} step {step:>{len(str(total_steps))}}/{total_steps}"
        f" (epoch {epoch}/{epochs})  loss {sum(since_last) / len(since_last):.4f}"
        f"  {history.seconds:5.1f} s",
        file=sys.stdout,
        flush=True,
    )


def predict(
    model: Transformer,
    src: Tensor | np.ndarray,
    vocabulary: Vocabulary,
    *,
    max_new_tokens: int,
    batch_size: int = 1000,
) -> list[str]:
    """Greedy outputs of ``model`` for every source, as text (``<eos>`` and after removed).

    Shapes
    ------
    ``src``: ``(N, T_src)`` integer ids → ``N`` strings.

    Examples
    --------
    >>> from selfattn_lib.tasks import VOCABULARY
    >>> from selfattn_lib.transformer import TransformerConfig
    >>> config = TransformerConfig(len(VOCABULARY), len(VOCABULARY), d_model=8, n_heads=2,
    ...                            d_ff=16, n_layers=1)
    >>> outputs = predict(Transformer(config).eval(), VOCABULARY.encode_batch(["1 May 2026"]),
    ...                   VOCABULARY, max_new_tokens=3)
    >>> len(outputs), len(outputs[0]) <= 3
    (1, True)
    """
    if not isinstance(model, Transformer):
        raise TypeError(f"model must be a selfattn_lib Transformer, got {type(model).__name__}")
    if not isinstance(vocabulary, Vocabulary):
        raise TypeError(f"vocabulary must be a Vocabulary, got {type(vocabulary).__name__}")
    src = as_token_ids(src, "src")
    batch_size = check_positive_int("batch_size", batch_size)
    outputs = []
    was_training = model.training
    model.eval()
    try:
        for start in range(0, src.shape[0], batch_size):
            generated = model.greedy_decode(
                src[start : start + batch_size],
                bos_id=vocabulary.bos_id,
                eos_id=vocabulary.eos_id,
                max_new_tokens=max_new_tokens,
            )  # (B, 1 + n)
            outputs.extend(vocabulary.decode(row[1:]) for row in generated)
    finally:
        model.train(was_training)
    return outputs


def exact_match(
    model: Transformer,
    src: Tensor | np.ndarray,
    targets: Sequence[str],
    vocabulary: Vocabulary,
    *,
    max_new_tokens: int | None = None,
    batch_size: int = 1000,
) -> float:
    """The fraction of sources whose greedy output equals the target text exactly (one wrong
    character, or a missing or extra one, makes an output wrong).

    ``max_new_tokens`` defaults to the longest target plus one (for ``<eos>``).

    Shapes
    ------
    ``src``: ``(N, T_src)`` integer ids, ``targets``: ``N`` strings → a float in [0, 1].

    Examples
    --------
    >>> from selfattn_lib.tasks import VOCABULARY
    >>> from selfattn_lib.transformer import TransformerConfig
    >>> config = TransformerConfig(len(VOCABULARY), len(VOCABULARY), d_model=8, n_heads=2,
    ...                            d_ff=16, n_layers=1)
    >>> model = Transformer(config)
    >>> 0.0 <= exact_match(model, VOCABULARY.encode_batch(["1 May 2026"]), ["2026-05-01"],
    ...                    VOCABULARY) <= 1.0
    True
    """
    if isinstance(targets, str) or not all(isinstance(text, str) for text in targets):
        raise TypeError("targets must be a sequence of strings (one per source)")
    targets = list(targets)
    if len(targets) != len(src):
        raise ValueError(
            f"src and targets must have the same length: {len(src)} sources, {len(targets)} targets"
        )
    if max_new_tokens is None:
        max_new_tokens = max(len(text) for text in targets) + 1
    outputs = predict(model, src, vocabulary, max_new_tokens=max_new_tokens, batch_size=batch_size)
    return sum(got == want for got, want in zip(outputs, targets, strict=True)) / len(targets)
