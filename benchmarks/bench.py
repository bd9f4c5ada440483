"""Measure the course on this machine and write ``benchmarks/results.md`` (run: ``make bench``).

Four measurements, each in one run:

1. every published notebook executed top to bottom in a fresh kernel: wall time (including
   kernel start) and the kernel's peak resident memory, and for a chapter that trains a
   model what it printed about the training: its time, and the bits per character of a
   language model or the scores of chapter 14's induction head;
2. a clean build of the book (``jupyter-book build`` into an empty directory), which shows
   the notebooks' committed outputs;
3. ``selfattn_lib.attention.scaled_dot_product_attention`` (NumPy) against
   ``torch.nn.functional.scaled_dot_product_attention`` on the CPU, same inputs and dtype;
4. ``make grade`` on the made-up class of ``tests/test_grade.py`` (every way a submission can
   go wrong, and a chapter 10 notebook), with the test's options;
5. a training step of chapter 12's GPT against the same step of a peer built from PyTorch's
   own ``nn.TransformerEncoderLayer``, on one thread as the chapter trains.

Benchmarks are not tests: nothing in ``make test`` depends on a timing. The targets below are
the ones the course promises on a 2-core machine; a missed target is reported, not hidden.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tools.repository import ROOT, published_notebooks

RESULTS = ROOT / "benchmarks" / "results.md"
TARGET_SECONDS = {
    "10_decoder_and_cross_attention": 90,
    "11_attention_at_scale": 30,
    "12_gpt_from_the_pieces": 90,  # three trainings: the model and two of its options
    "13_attention_in_modern_llms": 120,
    "14_what_attention_heads_learn": 150,
}
# What a training chapter prints about its model, read from the run's own outputs: chapter 12's
# training time (target 45 s, one thread) and bits per character of the baselines and the
# model. Only at the start of a line: chapter 14's "GPT training:" is read below. Chapter 14
# prints a "training:" line too, for its attention-only model; each chapter's table applies
# its target.
TRAINING_LINE = re.compile(
    r"^training: (?P<steps>\d+) steps in (?P<training>[\d.]+) s", re.MULTILINE
)
BITS_LINE = re.compile(
    r"bits per character: unigram (?P<unigram>[\d.]+), bigram (?P<bigram>[\d.]+), "
    r"model (?P<model>[\d.]+)"
)
# Chapter 13 trains chapter 12's model twice, with learned positions and with RoPE: both
# trainings together (target 60 s) and the bits per character of each.
RETRAINING_LINE = re.compile(
    r"training: (?P<runs>\d+) × (?P<run_steps>\d+) steps in (?P<retraining>[\d.]+) s"
)
POSITIONS_LINE = re.compile(
    r"bits per character: learned (?P<learned>[\d.]+), RoPE (?P<rope>[\d.]+)"
)
# Chapter 14 trains its attention-only model (target 90 s, the "training:" line above) and
# retrains chapter 12's GPT: the phase change, the induction head's prefix-matching score, and
# the in-context gain with and without that head.
GPT_TRAINING_LINE = re.compile(
    r"^GPT training: (?P<gpt_steps>\d+) steps in (?P<gpt_training>[\d.]+) s", re.MULTILINE
)
PHASE_CHANGE_LINE = re.compile(r"^phase change at step (?P<phase_step>\d+)", re.MULTILINE)
INDUCTION_HEAD_LINE = re.compile(
    r"^induction head: layer (?P<induction_layer>\d+) head (?P<induction_head>\d+), "
    r"previous-token (?P<induction_previous>[\d.]+), prefix-matching (?P<prefix>[\d.]+)",
    re.MULTILINE,
)
GAIN_LINE = re.compile(
    r"^in-context gain: (?P<gain>-?[\d.]+) bits; without the induction head: "
    r"(?P<gain_without>-?[\d.]+)",
    re.MULTILINE,
)
TARGET_TRAINING_SECONDS = 45  # chapter 12's model, on one thread
TARGET_RETRAINING_SECONDS = 60  # chapter 13's two
TARGET_BITS = 2.35  # chapter 12's model on the validation text
TARGET_INDUCTION_TRAINING_SECONDS = 90
TARGET_BELOW_BIGRAM = 0.5  # bits per character
DEFAULT_TARGET_SECONDS = 10
ATTENTION_SIZES = [(1, 8, 128, 64), (1, 8, 512, 64), (1, 8, 1024, 64)]  # (B, H, T, D)
TARGET_RATIO = 3.0  # NumPy within 3x of PyTorch at T = 512, D = 64
TARGET_GRADING_SECONDS = 60  # the test folder, chapter 10 included, on 2 cores
# A training step of chapter 12's GPT (V = 103, T = 64, D = 64, 4 heads, d_ff = 256, 2 layers,
# 32 windows) against the peer's: the median of 3 interleaved runs of 100 steps, each after 10
# warm-up steps, on one thread.
STEP_CONFIG = {"vocab_size": 103, "context_length": 64, "d_model": 64, "n_heads": 4,
               "d_ff": 256, "n_layers": 2}  # fmt: skip
STEP_RUNS, STEP_STEPS, STEP_WARMUP, STEP_BATCH = 3, 100, 10, 32
TARGET_STEP_RATIO = 1.1


def execute_one(path: Path) -> dict:
    """Run one notebook in a fresh kernel (in this process); time it and read the kernel's
    peak memory, which the operating system reports once the kernel has exited."""
    import nbclient
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": "."}}
    )
    with tempfile.TemporaryDirectory() as directory:  # like Colab: the notebook alone
        os.chdir(directory)
        start = time.perf_counter()
        client.execute()
        seconds = time.perf_counter() - start
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # Linux: KiB
    return {"seconds": seconds, "peak_mib": peak_kib / 1024, **model_report(notebook)}


def model_report(notebook) -> dict:
    """What a notebook printed about the model it trains, if it trains one: the training time,
    and the bits per character (chapters 12 and 13) or the induction head's scores (chapter
    14)."""
    printed = "".join(
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    )
    found = {}
    patterns = (TRAINING_LINE, BITS_LINE, RETRAINING_LINE, POSITIONS_LINE)
    patterns += (GPT_TRAINING_LINE, PHASE_CHANGE_LINE, INDUCTION_HEAD_LINE, GAIN_LINE)
    for pattern in patterns:
        match = pattern.search(printed)
        if match:
            found.update({key: float(value) for key, value in match.groupdict().items()})
    return found


def printed_number(row: dict, key: str, spec: str) -> str:
    """A number a notebook printed, formatted, or a dash if it did not print that line."""
    return format(row[key], spec) if key in row else "—"


def measure_notebooks() -> list[dict]:
    rows = []
    for path in published_notebooks():
        print(f"executing {path.name} …", flush=True)
        result = subprocess.run(
            [sys.executable, "-m", "benchmarks.bench", "--execute-one", str(path)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            sys.exit(f"{path.name} failed:\n{result.stderr[-3000:]}")
        rows.append({"name": path.stem, **json.loads(result.stdout.splitlines()[-1])})
    return rows


def measure_book_build() -> float:
    print("building the book from scratch …", flush=True)
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    with tempfile.TemporaryDirectory() as output:
        start = time.perf_counter()
        subprocess.run(
            [str(jupyter_book), "build", ".", "-W", "-n", "--keep-going", "--path-output", output],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        return time.perf_counter() - start


def best_time(function, repeats: int = 7) -> float:
    function()  # warm up: first calls allocate and load code
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def measure_attention() -> list[dict]:
    import numpy as np
    import torch
    import torch.nn.functional as F

    from selfattn_lib.attention import scaled_dot_product_attention

    print("timing attention …", flush=True)
    rows = []
    for dtype in (np.float32, np.float64):
        for batch_size, n_heads, n_tokens, d_head in ATTENTION_SIZES:
            rng = np.random.default_rng(0)
            shape = (batch_size, n_heads, n_tokens, d_head)
            q, k, v = (rng.normal(size=shape).astype(dtype) for _ in range(3))
            tq, tk, tv = (torch.from_numpy(array) for array in (q, k, v))
            ours = best_time(lambda q=q, k=k, v=v: scaled_dot_product_attention(q, k, v))
            theirs = best_time(
                lambda tq=tq, tk=tk, tv=tv: F.scaled_dot_product_attention(tq, tk, tv)
            )
            rows.append(
                {
                    "dtype": np.dtype(dtype).name,
                    "shape": shape,
                    "numpy_ms": ours * 1e3,
                    "torch_ms": theirs * 1e3,
                    "ratio": ours / theirs,
                }
            )
    return rows


def measure_grading() -> dict:
    """Grade the made-up submissions of tests/test_grade.py as ``make grade`` does, timed."""
    import csv

    sys.path.insert(0, str(ROOT / "tests"))
    from test_grade import GRADING_OPTIONS, write_submissions

    from tools.grade import main as grade

    with tempfile.TemporaryDirectory() as directory:
        folder, hidden = write_submissions(Path(directory))
        out = Path(directory) / "grades"
        start = time.perf_counter()
        grade([str(folder), *GRADING_OPTIONS, "--hidden", str(hidden), "--out", str(out)])
        seconds = time.perf_counter() - start
        with (out / "grades.csv").open(encoding="utf-8", newline="") as file:
            rows = list(csv.DictReader(file))
    return {
        "seconds": seconds,
        "submissions": len({row["student"] for row in rows}),
        "rows": len(rows),
        "options": " ".join(GRADING_OPTIONS),
    }


def peer_gpt(vocab_size: int, context_length: int, d_model: int, n_heads: int, d_ff: int,
             n_layers: int):  # fmt: skip
    """Chapter 12's GPT built from PyTorch's own layers: token and learned position embeddings,
    ``nn.TransformerEncoderLayer(norm_first=True)`` layers called with a causal mask and
    ``is_causal=True``, a final layer norm and the tied output."""
    import torch
    from torch import nn

    class PeerGPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.token_embedding = nn.Embedding(vocab_size, d_model)
            self.position_embedding = nn.Embedding(context_length, d_model)
            self.layers = nn.ModuleList(
                nn.TransformerEncoderLayer(
                    d_model, n_heads, d_ff, dropout=0.0, batch_first=True, norm_first=True
                )
                for _ in range(n_layers)
            )
            self.norm = nn.LayerNorm(d_model)

        def forward(self, tokens):
            n_tokens = tokens.shape[1]
            positions = torch.arange(n_tokens, device=tokens.device)
            x = self.token_embedding(tokens) + self.position_embedding(positions)
            causal = nn.Transformer.generate_square_subsequent_mask(n_tokens)
            for layer in self.layers:
                x = layer(x, src_mask=causal, is_causal=True)
            return self.norm(x) @ self.token_embedding.weight.T  # tied output

    return PeerGPT()


def measure_step_times() -> dict:
    """Chapter 12's GPT and its peer, trained by the same loop (the library's AdamW groups and
    windows) on the same random ids: the seconds per step of each, on one thread."""
    import statistics

    import torch
    import torch.nn.functional as F

    from selfattn_lib.language_model import GPT, GPTConfig

    print("timing a training step of the GPT and its peer …", flush=True)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    ids = torch.randint(STEP_CONFIG["vocab_size"], (100_000,))
    offsets = torch.arange(STEP_CONFIG["context_length"] + 1)
    models = {"course": GPT(GPTConfig(**STEP_CONFIG)), "peer": peer_gpt(**STEP_CONFIG)}
    optimizers = {}
    for name, model in models.items():
        decayed = [p for p in model.parameters() if p.ndim == 2]
        others = [p for p in model.parameters() if p.ndim != 2]
        optimizers[name] = torch.optim.AdamW(
            [{"params": decayed, "weight_decay": 0.01}, {"params": others, "weight_decay": 0}],
            lr=1e-3,
            betas=(0.9, 0.99),
        )
        model.train()

    def run(name: str, steps: int) -> float:
        model, optimizer = models[name], optimizers[name]
        generator = torch.Generator().manual_seed(0)
        start = time.perf_counter()
        for _ in range(steps):
            starts = torch.randint(
                len(ids) - len(offsets) + 1, (STEP_BATCH, 1), generator=generator
            )
            windows = ids[starts + offsets]  # (B, T + 1)
            logits = model(windows[:, :-1])  # (B, T, V)
            loss = F.cross_entropy(logits.flatten(0, 1), windows[:, 1:].flatten())
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        return (time.perf_counter() - start) / steps

    seconds = {name: [] for name in models}
    for _ in range(STEP_RUNS):  # interleaved: a change in the machine's load hits both
        for name in models:
            run(name, STEP_WARMUP)
            seconds[name].append(run(name, STEP_STEPS))
    torch.set_num_threads(threads)
    median = {name: statistics.median(times) for name, times in seconds.items()}
    return {"course_ms": median["course"] * 1e3, "peer_ms": median["peer"] * 1e3,
            "ratio": median["course"] / median["peer"]}  # fmt: skip


def report(
    notebooks: list[dict],
    book_seconds: float,
    attention: list[dict],
    grading: dict,
    step_times: dict,
) -> str:
    import numpy as np
    import torch

    lines = [
        "# Benchmarks",
        "",
        "Written by `make bench` (`benchmarks/bench.py`); measured in one run on "
        f"{platform.machine()} with {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"NumPy {np.__version__}, PyTorch {torch.__version__} "
        f"({torch.get_num_threads()} threads). Timings vary from run to run and machine to "
        "machine; nothing in `make test` depends on them.",
        "",
        "## Chapters, each in a fresh kernel",
        "",
        "Wall time includes starting the kernel; memory is the kernel's peak resident size.",
        "",
        "| notebook | time (s) | target (s) | peak memory (MiB) |",
        "|---|---:|---:|---:|",
    ]
    missed, attention_missed = [], False
    for row in notebooks:
        target = TARGET_SECONDS.get(row["name"], DEFAULT_TARGET_SECONDS)
        mark = "" if row["seconds"] <= target else " ✘"
        if mark:
            missed.append(f"`{row['name']}` took {row['seconds']:.1f} s (target {target} s)")
        lines.append(
            f"| `{row['name']}` | {row['seconds']:.1f}{mark} | {target} | {row['peak_mib']:.0f} |"
        )
    total = sum(row["seconds"] for row in notebooks)
    lines += [
        f"| **all, one after another** | {total:.1f} | | |",
        "",
        "## The book",
        "",
        "A clean `make book` (from the committed outputs, which strict nbval checks): "
        f"**{book_seconds:.1f} s**.",
        "",
        "## NumPy attention against PyTorch's",
        "",
        "`selfattn_lib.attention.scaled_dot_product_attention` (NumPy, with its argument checks)"
        " against `torch.nn.functional.scaled_dot_product_attention` on the CPU, same inputs and "
        "dtype, no mask; the best of 7 runs each.",
        "",
        "| dtype | (B, H, T, D) | NumPy (ms) | PyTorch (ms) | NumPy / PyTorch |",
        "|---|---|---:|---:|---:|",
    ]
    for row in attention:
        lines.append(
            f"| {row['dtype']} | {row['shape']} | {row['numpy_ms']:.2f} | "
            f"{row['torch_ms']:.2f} | {row['ratio']:.2f} |"
        )
    for row in attention:
        if row["shape"][2:] == (512, 64) and row["ratio"] > TARGET_RATIO:
            attention_missed = True
            missed.append(
                f"NumPy attention ({row['dtype']}, T = 512, D = 64) is {row['ratio']:.1f}x "
                f"slower than PyTorch's (target {TARGET_RATIO:.0f}x)"
            )
    trained = [row for row in notebooks if "model" in row]
    if trained:
        lines += [
            "",
            "## Language models",
            "",
            "What the chapter's training printed in the run above: its training time and, on the "
            "held-out 10 % of the text, the bits per character of the unigram and bigram "
            "baselines and of the trained model.",
            "",
            "| notebook | steps | training (s) | unigram | bigram | model | model − bigram |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
    for row in trained:
        gain = row["bigram"] - row["model"]
        slow = " ✘" if row["training"] > TARGET_TRAINING_SECONDS else ""
        lines.append(
            f"| `{row['name']}` | {row['steps']:.0f} | {row['training']:.1f}{slow} | "
            f"{row['unigram']:.2f} | {row['bigram']:.2f} | "
            f"{row['model']:.2f}{' ✘' if row['model'] > TARGET_BITS else ''} | "
            f"{-gain:+.2f}{' ✘' if gain < TARGET_BELOW_BIGRAM else ''} |"
        )
        if row["training"] > TARGET_TRAINING_SECONDS:
            missed.append(
                f"`{row['name']}` trained for {row['training']:.1f} s "
                f"(target {TARGET_TRAINING_SECONDS} s)"
            )
        if row["model"] > TARGET_BITS:
            missed.append(
                f"`{row['name']}`'s model scores {row['model']:.2f} bits per character "
                f"(target {TARGET_BITS})"
            )
        if gain < TARGET_BELOW_BIGRAM:
            missed.append(
                f"`{row['name']}`'s model is {gain:.2f} bits per character below the bigram "
                f"(target {TARGET_BELOW_BIGRAM})"
            )
    retrained = [row for row in notebooks if "rope" in row]
    if retrained:
        lines += [
            "",
            "## Positions: learned against RoPE",
            "",
            "Chapter 12's model trained again with learned positions and with RoPE, same "
            "recipe and seeds: both trainings together, and the validation bits per character "
            "of each.",
            "",
            "| notebook | trainings | training (s) | learned | RoPE | RoPE − learned |",
            "|---|---:|---:|---:|---:|---:|",
        ]
    for row in retrained:
        slow = row["retraining"] > TARGET_RETRAINING_SECONDS
        lines.append(
            f"| `{row['name']}` | {row['runs']:.0f} × {row['run_steps']:.0f} | "
            f"{row['retraining']:.1f}{' ✘' if slow else ''} | {row['learned']:.2f} | "
            f"{row['rope']:.2f} | {row['rope'] - row['learned']:+.2f} |"
        )
        if slow:
            missed.append(
                f"`{row['name']}` trained for {row['retraining']:.1f} s "
                f"(target {TARGET_RETRAINING_SECONDS} s)"
            )
    induction = [row for row in notebooks if "prefix" in row]
    if induction:
        lines += [
            "",
            "## Induction heads",
            "",
            "Chapter 14's attention-only model on repeated random tokens: its training, the "
            "step of the phase change, the head with the highest prefix-matching score, and "
            "the in-context gain (first half's loss minus the repeated half's, in bits per "
            "token) with all heads and with that head switched off; then chapter 12's GPT, "
            "retrained.",
            "",
            "| notebook | steps | training (s) | phase change (step) | induction head | "
            "prefix-matching | gain (bits) | without the head | GPT training (s) |",
            "|---|---:|---:|---:|---|---:|---:|---:|---:|",
        ]
    for row in induction:
        slow = row.get("training", 0) > TARGET_INDUCTION_TRAINING_SECONDS
        lines.append(
            f"| `{row['name']}` | {printed_number(row, 'steps', '.0f')} | "
            f"{printed_number(row, 'training', '.1f')}{' ✘' if slow else ''} | "
            f"{printed_number(row, 'phase_step', '.0f')} | "
            f"layer {row['induction_layer']:.0f} · head {row['induction_head']:.0f} | "
            f"{row['prefix']:.2f} | {printed_number(row, 'gain', '.2f')} | "
            f"{printed_number(row, 'gain_without', '.2f')} | "
            f"{printed_number(row, 'gpt_training', '.1f')} |"
        )
        if slow:
            missed.append(
                f"`{row['name']}` trained for {row['training']:.1f} s "
                f"(target {TARGET_INDUCTION_TRAINING_SECONDS} s)"
            )
    lines += [
        "",
        "## Grading a class",
        "",
        f"`make grade` on the {grading['submissions']} made-up submissions of "
        f"`tests/test_grade.py` ({grading['rows']} rows: a timeout, crashes, tampering, files "
        f"that are not notebooks, a chapter 10 notebook, hidden cases), with "
        f"`{grading['options']}`: **{grading['seconds']:.1f} s** "
        f"(target {TARGET_GRADING_SECONDS} s).",
    ]
    if grading["seconds"] > TARGET_GRADING_SECONDS:
        missed.append(
            f"grading the test folder took {grading['seconds']:.1f} s "
            f"(target {TARGET_GRADING_SECONDS} s)"
        )
    slower = step_times["ratio"] > TARGET_STEP_RATIO
    lines += [
        "",
        "## A training step: the course's GPT against PyTorch's layers",
        "",
        "Chapter 12's GPT and a peer of the same sizes built from `nn.TransformerEncoderLayer` "
        "(pre-norm, causal mask with `is_causal=True`, tied embeddings), trained by the same "
        f"loop on {STEP_BATCH} windows of {STEP_CONFIG['context_length']} tokens, one thread: "
        f"the median of {STEP_RUNS} interleaved runs of {STEP_STEPS} steps, each after "
        f"{STEP_WARMUP} warm-up steps.",
        "",
        "| course (ms per step) | peer (ms per step) | course / peer | target |",
        "|---:|---:|---:|---:|",
        f"| {step_times['course_ms']:.1f} | {step_times['peer_ms']:.1f} | "
        f"{step_times['ratio']:.2f}{' ✘' if slower else ''} | {TARGET_STEP_RATIO} |",
    ]
    if slower:
        missed.append(
            f"a training step of the course's GPT takes {step_times['ratio']:.2f} times the "
            f"peer's (target {TARGET_STEP_RATIO})"
        )
    lines += ["", "## Targets", ""]
    if missed:
        lines += [f"- Missed: {item}." for item in missed]
    if len(missed) > attention_missed:
        lines += [
            "",
            "A chapter's time includes starting its kernel and importing NumPy, Matplotlib and "
            "PyTorch, and varies from run to run with the load of the machine.",
        ]
    if attention_missed:
        lines += [
            "",
            "Why the NumPy version is slower: it checks its arguments (a pass over every input "
            "for NaN and infinity, and one over the scores for overflow), subtracts the row "
            "maximum and exponentiates in separate passes over the `(B, H, T, T)` scores, and "
            "keeps the whole weight matrix, while PyTorch's CPU kernel fuses these steps.",
        ]
    if not missed:
        lines.append(
            "All met: every chapter under 10 s (chapter 10 under 90 s, chapter 11 under 30 s, "
            f"chapter 12 under 90 s with its model's training under {TARGET_TRAINING_SECONDS} s "
            f"and the model at {TARGET_BITS} bits per character or less and at least "
            f"{TARGET_BELOW_BIGRAM} below the bigram, chapter 13 under 120 s with its two "
            f"trainings under {TARGET_RETRAINING_SECONDS} s, chapter 14 under 150 s with its "
            f"model's training under {TARGET_INDUCTION_TRAINING_SECONDS} s), "
            f"a training step of chapter 12's GPT within {TARGET_STEP_RATIO} times its peer's, "
            "the NumPy attention within 3x of PyTorch's at T = 512, D = 64, and the test "
            f"class graded in under {TARGET_GRADING_SECONDS} s."
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--execute-one", type=Path, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.execute_one:
        print(json.dumps(execute_one(arguments.execute_one.resolve())))
        return
    notebooks = measure_notebooks()
    book_seconds = measure_book_build()
    attention = measure_attention()
    grading = measure_grading()
    step_times = measure_step_times()
    text = report(notebooks, book_seconds, attention, grading, step_times)
    RESULTS.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
