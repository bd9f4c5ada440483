"""Tests of the checkers of chapter 14 (selfattn_lib.exercises.ch14_attention_heads): each
names the mistake in typical wrong answers and accepts the usual correct alternatives. What
every checker promises is tested once, over REFERENCES, in test_exercises_registry.py."""

import warnings

import numpy as np
import pytest

from selfattn_lib import exercises

# --- correct answers, as a learner would write them ----------------------------------------


def ch14_diagonal(weights, offset):
    """The weights of query i on key i + offset, for every query that has that key."""
    return weights.diagonal(offset=offset, axis1=-2, axis2=-1)  # (B, H, T - |offset|)


def ch14_previous_token_score(weights):
    return ch14_diagonal(weights, -1).mean(axis=(0, 2))


def ch14_prefix_matching_with(*, offset=lambda n: 1 - n, queries=slice(1, None)):
    """The prefix-matching score; the keywords make the slips of the tests below: the key
    ``i + offset(n)`` and which entries of that diagonal are averaged."""

    def prefix_matching_score(weights, half_length):
        on_key = ch14_diagonal(weights, offset(half_length))
        return on_key[..., queries].mean(axis=(0, 2))

    return prefix_matching_score


ch14_prefix_matching_score = ch14_prefix_matching_with()


def ch14_log_softmax(logits):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def ch14_token_losses(logits, targets, *, log_softmax=ch14_log_softmax, base=2.0):
    """The loss of each prediction, ``(B, T − 1)``, in logarithms to ``base``."""
    picked = np.take_along_axis(log_softmax(logits), targets[..., None], axis=-1)[..., 0]
    return -picked / np.log(base)


def ch14_half_losses_with(*, first=None, repeated=None, targets=None, **token_losses):
    """The two halves' losses; the keywords make the slips of the tests below: the slices
    of each half, the targets and how each loss is computed."""

    def half_losses(logits, tokens):
        n = tokens.shape[1] // 2
        chosen = tokens[:, 1:] if targets is None else targets(tokens)
        losses = ch14_token_losses(logits, chosen, **token_losses)
        first_half = losses[:, : n - 1] if first is None else losses[:, first(n)]
        repeated_half = losses[:, n:] if repeated is None else losses[:, repeated(n)]
        return first_half.mean(), repeated_half.mean()

    return half_losses


ch14_half_losses = ch14_half_losses_with()


def ch14_eigenvalues(w_e, w_v, w_o, w_u):
    return np.linalg.eigvals(w_e @ w_v @ w_o @ w_u)  # (V,) complex


def ch14_copying_score(w_e, w_v, w_o, w_u):
    eigenvalues = ch14_eigenvalues(w_e, w_v, w_o, w_u)
    return eigenvalues.sum().real / np.abs(eigenvalues).sum()


def ch14_stub(*args):
    raise NotImplementedError


CH14_CHECKERS = {
    "check_previous_token_score": ch14_previous_token_score,
    "check_prefix_matching_score": ch14_prefix_matching_score,
    "check_half_losses": ch14_half_losses,
    "check_copying_score": ch14_copying_score,
}


def assert_ch14_mistake(feedback, *fragments):
    assert feedback.attempted and not feedback.passed, feedback
    for fragment in fragments:
        assert fragment in feedback.message, (fragment, feedback.message)


@pytest.mark.parametrize("name", CH14_CHECKERS)
def test_ch14_checkers_pass_the_reference_and_report_the_stub_and_a_missing_return(name):
    checker = getattr(exercises, name)
    feedback = checker(CH14_CHECKERS[name])
    assert feedback.passed and feedback.attempted, feedback
    feedback = checker(ch14_stub)
    assert not feedback.attempted and "raise NotImplementedError" in feedback.message
    feedback = checker(lambda *args: None)
    assert_ch14_mistake(feedback, "returned None: did you forget the `return` statement?")


def test_ch14_importing_the_checkers_does_not_import_torch():
    import subprocess
    import sys

    code = (
        "import sys; import selfattn_lib.exercises.ch14_attention_heads; "
        "assert 'torch' not in sys.modules"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# --- the previous-token score --------------------------------------------------------------


def ch14_previous_head_by_head(weights):
    batch, n_heads, n_tokens, _ = weights.shape
    scores = []
    for head in range(n_heads):
        total = 0.0
        for b in range(batch):
            for i in range(1, n_tokens):
                total += weights[b, head, i, i - 1]
        scores.append(total / (batch * (n_tokens - 1)))
    return scores


def ch14_previous_in_torch(weights):
    import torch

    weights = torch.from_numpy(weights)
    return torch.diagonal(weights, offset=-1, dim1=-2, dim2=-1).mean(dim=(0, 2))


def ch14_previous_by_mask(weights):
    n_tokens = weights.shape[-1]
    below = np.eye(n_tokens, k=-1, dtype=bool)
    return (weights * below).sum(axis=(-2, -1)).mean(axis=0) / (n_tokens - 1)


@pytest.mark.parametrize(
    "answer",
    [
        ch14_previous_head_by_head,
        ch14_previous_in_torch,
        ch14_previous_by_mask,
        lambda weights: ch14_previous_token_score(weights.astype(np.float32)),
        lambda weights: ch14_previous_token_score(weights).tolist(),
    ],
)
def test_ch14_previous_token_score_accepts_equivalent_answers(answer):
    feedback = exercises.check_previous_token_score(answer)
    assert feedback.passed, feedback.message


def ch14_previous_with_query_0_on_itself(weights):
    n_tokens = weights.shape[-1]
    keys = np.maximum(np.arange(n_tokens) - 1, 0)  # query 0 "attends to" key 0
    return weights[:, :, np.arange(n_tokens), keys].mean(axis=(0, 2))


def ch14_previous_rolled(axis):
    def previous_token_score(weights):
        return ch14_diagonal(np.roll(weights, 1, axis=axis), 0).mean(axis=(0, 2))

    return previous_token_score


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (
            lambda w: ch14_diagonal(w, 0).mean(axis=(0, 2)),
            ["(weights of shape (2, 3, 5, 5)): this is the weight of each query on ITSELF"],
        ),
        (lambda w: ch14_diagonal(w, 0)[..., 1:].mean(axis=(0, 2)), ["on ITSELF"]),
        (
            lambda w: ch14_diagonal(w, 1).mean(axis=(0, 2)),
            ["it is 0 for every head", "key i + 1, the NEXT token"],
        ),
        (
            ch14_previous_rolled(-1),
            ["the mean is over all T = 5 queries", "np.roll", "T − 1 = 4 of them"],
        ),
        (
            ch14_previous_with_query_0_on_itself,
            ["query 0 is counted", "its weight on key 0 (its weight on itself, always 1)"],
        ),
        (ch14_previous_rolled(-2), ["it reads query i − 1 on key i, ABOVE the diagonal"]),
        (
            lambda w: np.full(w.shape[1], ch14_diagonal(w, -1).mean()),
            ["every head got the same score, the mean over the heads"],
        ),
        (
            lambda w: ch14_diagonal(w, -1).sum(axis=-1).mean(axis=0),
            ["SUMMED over the 4 queries"],
        ),
        (
            lambda w: ch14_diagonal(w, -1).mean(axis=-1).sum(axis=0),
            ["SUMMED over the 2 sequences of the batch"],
        ),
        (
            lambda w: ch14_diagonal(w, -1).mean(),
            ["returned shape (), a single number: the mean over the heads as well"],
        ),
        (
            lambda w: ch14_diagonal(w, -1).mean(axis=-1),
            ["returned shape (2, 3), one score per sequence and head", "shape (H,) = (3,)"],
        ),
        (
            lambda w: ch14_diagonal(w, -1).mean(axis=0),
            ["returned shape (3, 4), one number per head and query (T − 1 = 4)"],
        ),
        (lambda w: ch14_diagonal(w, -1).mean(axis=(1, 2)), ["one number per sequence"]),
        (lambda w: ch14_diagonal(w, -1), ["one weight per sequence, head and query"]),
        (
            lambda w: ch14_previous_token_score(w) + 0.01,
            ["(weights of shape (2, 3, 5, 5)) is off at index ("],
        ),
    ],
)
def test_ch14_previous_token_score_names_typical_mistakes(answer, fragments):
    assert_ch14_mistake(exercises.check_previous_token_score(answer), *fragments)


# --- the prefix-matching score -------------------------------------------------------------


def ch14_prefix_head_by_head(weights, half_length):
    batch, n_heads, n_tokens, _ = weights.shape
    scores = np.zeros(n_heads)
    for head in range(n_heads):
        for i in range(half_length, n_tokens):
            scores[head] += weights[:, head, i, i - half_length + 1].sum()
    return scores / (batch * half_length)


def ch14_prefix_by_indexing(weights, half_length):
    queries = np.arange(half_length, 2 * half_length)
    return weights[:, :, queries, queries - half_length + 1].mean(axis=(0, 2))


def ch14_prefix_in_torch(weights, half_length):
    import torch

    on_key = torch.from_numpy(weights).diagonal(offset=1 - half_length, dim1=-2, dim2=-1)
    return on_key[..., 1:].mean(dim=(0, 2))


@pytest.mark.parametrize(
    "answer",
    [
        ch14_prefix_head_by_head,
        ch14_prefix_by_indexing,
        ch14_prefix_in_torch,
        lambda w, n: ch14_prefix_matching_score(w.astype(np.float32), n),
        lambda w, n: tuple(ch14_prefix_matching_score(w, n)),
    ],
)
def test_ch14_prefix_matching_score_accepts_equivalent_answers(answer):
    feedback = exercises.check_prefix_matching_score(answer)
    assert feedback.passed, feedback.message


def ch14_prefix_mirrored(weights, half_length):
    """The sign slip i + n − 1: queries of the first half on keys of the second."""
    queries = np.arange(half_length)
    return weights[:, :, queries, queries + half_length - 1].mean(axis=(0, 2))


def ch14_prefix_rolled(weights, half_length):
    rolled = np.roll(weights, half_length - 1, axis=-1)  # key i − n + 1 wraps around
    return ch14_diagonal(rolled, 0).mean(axis=(0, 2))


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (
            ch14_prefix_matching_with(offset=lambda n: -n, queries=slice(None)),
            ["half_length=4): this is the weight on key i − n, the EARLIER COPY", "duplicate"],
        ),
        (
            ch14_prefix_matching_with(offset=lambda n: 2 - n, queries=slice(2, None)),
            ["key i − n + 2, one position too far"],
        ),
        (
            ch14_prefix_matching_with(offset=lambda n: -n - 1, queries=slice(None)),
            ["key i − n − 1, the token BEFORE the earlier copy"],
        ),
        (
            ch14_prefix_matching_with(offset=lambda n: -1, queries=slice(3, None)),
            ["the previous-token score of the repeated half"],
        ),
        (
            ch14_prefix_matching_with(queries=slice(None)),
            ["query n − 1 = 3, the last of the FIRST half", "i = n … 2n − 1 = 4 … 7"],
        ),
        (ch14_prefix_rolled, ["the queries of the first half went into the mean"]),
        (
            ch14_prefix_matching_with(queries=slice(2, None)),
            ["query n = 4, the first of the repeated half, is left out"],
        ),
        (
            ch14_prefix_matching_with(queries=slice(1, -1)),
            ["the last query, 2n − 1 = 7, is left out"],
        ),
        (ch14_prefix_mirrored, ["it is 0 for every head", "the wrong half"]),
        (
            lambda w, n: np.full(w.shape[1], ch14_prefix_matching_score(w, n).mean()),
            ["every head got the same score"],
        ),
        (
            lambda w, n: ch14_diagonal(w, 1 - n)[..., 1:].sum(axis=-1).mean(axis=0),
            ["SUMMED over the 4 queries"],
        ),
        (
            lambda w, n: ch14_diagonal(w, 1 - n)[..., 1:].mean(axis=-1),
            ["returned shape (2, 3), one score per sequence and head"],
        ),
        (
            lambda w, n: ch14_diagonal(w, 1 - n)[..., 1:].mean(axis=0),
            ["returned shape (3, 4), one number per head and query (n = 4)"],
        ),
        (
            lambda w, n: ch14_prefix_matching_score(w, n) * 0.9,
            ["half_length=4) is off at index ("],
        ),
    ],
)
def test_ch14_prefix_matching_score_names_typical_mistakes(answer, fragments):
    assert_ch14_mistake(exercises.check_prefix_matching_score(answer), *fragments)


# --- the loss on the two halves ------------------------------------------------------------


def ch14_naive_log_softmax(logits):
    return np.log(np.exp(logits) / np.exp(logits).sum(axis=-1, keepdims=True))


def ch14_half_losses_in_torch(logits, tokens):
    import torch
    import torch.nn.functional as F

    n = tokens.shape[1] // 2
    logits, tokens = torch.from_numpy(logits), torch.from_numpy(tokens)
    losses = F.cross_entropy(logits.transpose(1, 2), tokens[:, 1:], reduction="none")
    bits = losses / np.log(2)
    return bits[:, : n - 1].mean(), bits[:, n:].mean()


def ch14_half_losses_sequence_by_sequence(logits, tokens):
    n = tokens.shape[1] // 2
    first, repeated = [], []
    for sequence_logits, sequence in zip(logits, tokens, strict=True):
        for t in range(len(sequence) - 1):
            row = sequence_logits[t] - sequence_logits[t].max()
            loss = (np.log(np.exp(row).sum()) - row[sequence[t + 1]]) / np.log(2)  # bits
            if t + 1 < n:
                first.append(loss)
            elif t + 1 > n:
                repeated.append(loss)
    return float(np.mean(first)), float(np.mean(repeated))


@pytest.mark.parametrize(
    "answer",
    [
        ch14_half_losses_with(log_softmax=ch14_naive_log_softmax),  # no overflow here
        ch14_half_losses_in_torch,
        ch14_half_losses_sequence_by_sequence,
        lambda logits, tokens: np.array(ch14_half_losses(logits, tokens)),
        lambda logits, tokens: list(ch14_half_losses(logits.astype(np.float32), tokens)),
    ],
)
def test_ch14_half_losses_accepts_equivalent_answers(answer):
    feedback = exercises.check_half_losses(answer)
    assert feedback.passed, feedback.message


def ch14_unshifted(tokens):
    return tokens[:, :-1]


def ch14_half_losses_over_positions(logits, tokens):
    def over_positions(x):
        shifted = x - x.max(axis=1, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))

    return ch14_half_losses_with(log_softmax=over_positions)(logits, tokens)


def ch14_half_losses_mean_of_all(logits, tokens):
    mean = ch14_token_losses(logits, tokens[:, 1:]).mean()
    return mean, mean


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (
            ch14_half_losses_with(base=np.e),
            ["tokens of shape (3, 10)): these are nats (natural logarithms), not bits"],
        ),
        (ch14_half_losses_with(base=10.0), ["base-10 logarithms"]),
        (
            ch14_half_losses_with(targets=ch14_unshifted),
            ["logits[:, t] was compared with tokens[:, t]", "tokens[:, t + 1]"],
        ),
        (
            ch14_half_losses_with(log_softmax=lambda logits: logits),
            ["minus the raw logit of the right token", "log-softmax"],
        ),
        (ch14_half_losses_over_positions, ["taken over the positions (axis 1)"]),
        (ch14_half_losses_mean_of_all, ["the mean loss over every prediction"]),
        (
            lambda logits, tokens: (np.mean(ch14_half_losses(logits, tokens)),) * 2,
            ["the mean over both halves"],
        ),
        (lambda logits, tokens: ch14_half_losses(logits, tokens)[::-1], ["halves are swapped"]),
        (
            ch14_half_losses_with(first=lambda n: slice(0, n)),
            [
                "tokens of shape (3, 10)): the first half counts the prediction of token "
                "n = 5, the first of the copy",
                "n − 1 = 4 predictions",
            ],
        ),
        (
            ch14_half_losses_with(first=lambda n: slice(1, n)),
            ["the first half is shifted by one token", "tokens 1 … n − 1 = 1 … 4"],
        ),
        (
            ch14_half_losses_with(repeated=lambda n: slice(n - 1, None)),
            ["the repeated half counts the prediction of token n = 5", "belongs to neither"],
        ),
        (
            ch14_half_losses_with(repeated=lambda n: slice(n + 1, None)),
            ["the repeated half is shifted by one token", "tokens n + 1 … 2n − 1 = 6 … 9"],
        ),
        (
            ch14_half_losses_with(repeated=lambda n: slice(n - 1, -1)),
            ["the repeated half averages the predictions of tokens n … 2n − 2"],
        ),
        (
            lambda logits, tokens: ch14_half_losses(logits, tokens)[0],
            ["must return a pair of numbers (first, repeated), got float64"],
        ),
        (
            lambda logits, tokens: tuple(
                ch14_token_losses(logits, tokens[:, 1:])[:, part].mean(axis=1)
                for part in (slice(0, 4), slice(5, None))
            ),
            ["returned one loss per sequence, shape (3,): average over the batch too"],
        ),
        (
            lambda logits, tokens: (ch14_half_losses(logits, tokens)[0], 0.5),
            ["): the repeated half (in bits) is off: got 0.5, expected 0.716"],
        ),
        (
            lambda logits, tokens: (np.log(0.0), 1.0),
            ["the first half returned infinity. Look for the log of 0"],
        ),
    ],
)
def test_ch14_half_losses_names_typical_mistakes(answer, fragments):
    assert_ch14_mistake(exercises.check_half_losses(answer), *fragments)


# --- the copying score of an OV circuit ----------------------------------------------------


def ch14_copying_small(w_e, w_v, w_o, w_u):
    """The D_h × D_h product of the two factors in the other order: the same non-zero
    eigenvalues, without the V × V circuit."""
    eigenvalues = np.linalg.eigvals((w_o @ w_u) @ (w_e @ w_v))
    return float(np.trace((w_o @ w_u) @ (w_e @ w_v)) / np.abs(eigenvalues).sum())


def ch14_copying_in_torch(w_e, w_v, w_o, w_u):
    import torch

    circuit = torch.from_numpy(w_e @ w_v @ w_o @ w_u)
    eigenvalues = torch.linalg.eigvals(circuit)
    return eigenvalues.sum().real / eigenvalues.abs().sum()


@pytest.mark.parametrize(
    "answer",
    [
        ch14_copying_small,
        ch14_copying_in_torch,
        lambda *matrices: ch14_copying_score(*(m.astype(np.float32) for m in matrices)),
        lambda *matrices: np.array(ch14_copying_score(*matrices)),
    ],
)
def test_ch14_copying_score_accepts_equivalent_answers(answer):
    feedback = exercises.check_copying_score(answer)
    assert feedback.passed, feedback.message


def ch14_copying_with(score):
    """A score computed from the circuit by ``score(circuit, eigenvalues)``."""

    def copying_score(w_e, w_v, w_o, w_u):
        circuit = w_e @ w_v @ w_o @ w_u
        return score(circuit, np.linalg.eigvals(circuit))

    return copying_score


def ch14_singular_values(circuit, eigenvalues):
    singular_values = np.linalg.svd(circuit, compute_uv=False)
    return singular_values.sum() / np.abs(singular_values).sum()


def ch14_eigvalsh(circuit, eigenvalues):
    symmetric = np.linalg.eigvalsh(circuit)
    return symmetric.sum() / np.abs(symmetric).sum()


def ch14_largest_sign(circuit, eigenvalues):
    return np.sign(eigenvalues[np.argmax(np.abs(eigenvalues))].real)


def ch14_score_of(w_left, w_right):
    eigenvalues = np.linalg.eigvals(w_left @ w_right)
    return eigenvalues.sum().real / np.abs(eigenvalues).sum()


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (
            ch14_copying_with(ch14_singular_values),
            ["w_u of shape (6, 9)): it is 1.0, but this circuit scores 0.1236", "singular"],
        ),
        (
            ch14_copying_with(lambda c, ev: ev.sum().real / ev.real.sum()),
            ["it is 1.0", "the real parts Re λ in the denominator"],
        ),
        (
            ch14_copying_with(lambda c, ev: ev.sum().real / np.abs(ev.real).sum()),
            ["the denominator is Σ |Re λ|, the real parts only"],
        ),
        (
            ch14_copying_with(lambda c, ev: np.trace(c) / np.linalg.norm(c)),
            ["the trace divided by the Frobenius norm"],
        ),
        (
            ch14_copying_with(lambda c, ev: np.trace(c) / np.abs(np.diag(c)).sum()),
            ["the trace divided by Σ |diagonal|"],
        ),
        (
            ch14_copying_with(lambda c, ev: np.trace(c) / np.linalg.norm(c, "nuc")),
            ["the denominator is the sum of the singular values"],
        ),
        (ch14_copying_with(lambda c, ev: np.trace(c)), ["this is Σ λ, the trace, not divided"]),
        (ch14_copying_with(ch14_largest_sign), ["the sign of the largest eigenvalue only"]),
        (ch14_copying_with(ch14_eigvalsh), ["np.linalg.eigvalsh (or eigh) assumes a symmetric"]),
        (
            ch14_copying_with(lambda c, ev: ev.sum() / np.abs(ev).sum()),
            ["returned a complex number, 0.1236+", "Return its real part"],
        ),
        (
            lambda w_e, w_v, w_o, w_u: 0.1 + 0.5j,
            ["returned a complex number with an imaginary part, 0.1+0.5j"],
        ),
        (
            lambda w_e, w_v, w_o, w_u: ch14_score_of(w_v, w_o),
            ["the score of W_V W_O alone (D × D)"],
        ),
        (
            lambda w_e, w_v, w_o, w_u: ch14_score_of(w_e, w_u),
            ["the score of W_E W_U, the path from token to logits that skips the head"],
        ),
        (
            lambda w_e, w_v, w_o, w_u: ch14_score_of(w_e, w_v),
            ["raised LinAlgError", "Eigenvalues need a square matrix"],
        ),
        (
            lambda *matrices: np.array([ch14_copying_score(*matrices)]),
            ["returned shape (1,), expected () (a single number)"],
        ),
        (
            lambda *matrices: ch14_copying_score(*matrices) + 0.01,
            ["w_u of shape (6, 9)) is off: got 0.133"],
        ),
    ],
)
def test_ch14_copying_score_names_typical_mistakes(answer, fragments):
    assert_ch14_mistake(exercises.check_copying_score(answer), *fragments)


def ch14_previous_by_the_library(weights):
    import torch

    from selfattn_lib.induction import previous_token_scores

    return previous_token_scores([torch.from_numpy(weights)])[0]


def ch14_prefix_by_the_library(weights, half_length):
    import torch

    from selfattn_lib.induction import prefix_matching_scores

    return prefix_matching_scores([torch.from_numpy(weights)], half_length)[0].numpy()


def ch14_halves_by_the_library(logits, tokens):
    import torch

    from selfattn_lib import induction

    losses = induction._token_losses(torch.from_numpy(logits), torch.from_numpy(tokens))
    first, repeated = induction._half_means(losses, tokens.shape[1] // 2)
    return first / np.log(2), repeated / np.log(2)


def ch14_copying_by_the_library(w_e, w_v, w_o, w_u):
    import torch

    from selfattn_lib import induction

    return induction._copying_score(torch.from_numpy(w_e @ w_v), torch.from_numpy(w_o @ w_u))


@pytest.mark.parametrize(
    ("name", "answer", "called"),
    [
        ("check_previous_token_score", ch14_previous_by_the_library, "previous_token_scores"),
        ("check_prefix_matching_score", ch14_prefix_by_the_library, "prefix_matching_scores"),
        ("check_half_losses", ch14_halves_by_the_library, "_token_losses"),
        ("check_copying_score", ch14_copying_by_the_library, "_copying_score"),
    ],
)
def test_ch14_checkers_turn_down_the_library(name, answer, called):
    pytest.importorskip("torch")
    assert_ch14_mistake(
        getattr(exercises, name)(answer),
        f"gives the right result, but it calls `selfattn_lib.induction.{called}`",
        "the exercise is to write it yourself",
    )


def test_ch14_every_mistake_gets_its_own_message():
    """The first case of each checker tells the slips apart: each gets a different message."""
    checks = {
        exercises.check_previous_token_score: [
            lambda w: ch14_diagonal(w, 0).mean(axis=(0, 2)),
            lambda w: ch14_diagonal(w, 1).mean(axis=(0, 2)),
            ch14_previous_rolled(-1),
            ch14_previous_with_query_0_on_itself,
            ch14_previous_rolled(-2),
            lambda w: np.full(w.shape[1], ch14_diagonal(w, -1).mean()),
            lambda w: ch14_diagonal(w, -1).sum(axis=-1).mean(axis=0),
            lambda w: ch14_diagonal(w, -1).mean(axis=-1).sum(axis=0),
        ],
        exercises.check_prefix_matching_score: [
            ch14_prefix_matching_with(offset=lambda n: -n, queries=slice(None)),
            ch14_prefix_matching_with(offset=lambda n: 2 - n, queries=slice(2, None)),
            ch14_prefix_matching_with(offset=lambda n: -n - 1, queries=slice(None)),
            ch14_prefix_matching_with(offset=lambda n: -1, queries=slice(3, None)),
            ch14_prefix_matching_with(queries=slice(None)),
            ch14_prefix_rolled,
            ch14_prefix_matching_with(queries=slice(2, None)),
            ch14_prefix_matching_with(queries=slice(1, -1)),
            ch14_prefix_mirrored,
        ],
        exercises.check_half_losses: [
            ch14_half_losses_with(base=np.e),
            ch14_half_losses_with(base=10.0),
            ch14_half_losses_with(targets=ch14_unshifted),
            ch14_half_losses_with(log_softmax=lambda logits: logits),
            ch14_half_losses_over_positions,
            ch14_half_losses_mean_of_all,
            lambda logits, tokens: ch14_half_losses(logits, tokens)[::-1],
            ch14_half_losses_with(first=lambda n: slice(0, n)),
            ch14_half_losses_with(first=lambda n: slice(1, n)),
            ch14_half_losses_with(repeated=lambda n: slice(n - 1, None)),
            ch14_half_losses_with(repeated=lambda n: slice(n + 1, None)),
            ch14_half_losses_with(repeated=lambda n: slice(n - 1, -1)),
        ],
        exercises.check_copying_score: [
            ch14_copying_with(ch14_singular_values),
            ch14_copying_with(lambda c, ev: ev.sum().real / np.abs(ev.real).sum()),
            ch14_copying_with(lambda c, ev: np.trace(c) / np.linalg.norm(c)),
            ch14_copying_with(lambda c, ev: np.trace(c) / np.abs(np.diag(c)).sum()),
            ch14_copying_with(lambda c, ev: np.trace(c) / np.linalg.norm(c, "nuc")),
            ch14_copying_with(lambda c, ev: np.trace(c)),
            ch14_copying_with(ch14_largest_sign),
            ch14_copying_with(ch14_eigvalsh),
            lambda w_e, w_v, w_o, w_u: ch14_score_of(w_v, w_o),
            lambda w_e, w_v, w_o, w_u: ch14_score_of(w_e, w_u),
        ],
    }
    for checker, slips in checks.items():
        messages = [checker(slip).message for slip in slips]
        assert len(set(messages)) == len(messages), messages
        arguments = {message.partition("(")[2].partition(")")[0] for message in messages}
        assert len(arguments) == 1, messages  # all caught by the first case


# --- more plausible mistakes and correct variants, each checker -----------------------------
# Written from the prompts alone, as a learner would get them wrong: each is caught and its
# cause named.


def ch14_previous_over_t(weights):
    """The weights on the previous token summed, then divided by B · T."""
    batch, _, n_tokens, _ = weights.shape
    return ch14_diagonal(weights, -1).sum(axis=(0, 2)) / (batch * n_tokens)


def ch14_previous_masked_mean(weights):
    below = np.eye(weights.shape[-1], k=-1)  # (T, T): 1 on the previous token
    return (weights * below).mean(axis=(0, 2, 3))


def ch14_previous_largest(weights):
    n_tokens = weights.shape[-1]
    largest = weights[:, :, 1:].argmax(axis=-1)  # (B, H, T − 1)
    return (largest == np.arange(n_tokens - 1)).mean(axis=(0, 2))


def ch14_prefix_over_2n(weights, half_length):
    return ch14_prefix_matching_score(weights, half_length) / 2


def ch14_prefix_default_axes(weights, half_length):
    """np.diagonal over its default axes, batch and head: an empty diagonal here, whose mean
    NumPy only warns about outside the tests (pytest turns the warning into an error)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.diagonal(weights, offset=1 - half_length)[..., 1:].mean(axis=(0, 2))


def ch14_prefix_largest(weights, half_length):
    queries = np.arange(half_length, 2 * half_length)
    largest = weights[:, :, queries].argmax(axis=-1)  # (B, H, n)
    return (largest == queries - half_length + 1).mean(axis=(0, 2))


def ch14_prefix_masked(weights, half_length):
    n_tokens = 2 * half_length
    mask = np.zeros((n_tokens, n_tokens))
    queries = np.arange(half_length, n_tokens)
    mask[queries, queries - half_length + 1] = 1.0
    return (weights * mask).sum(axis=(2, 3)).mean(axis=0) / half_length


def ch14_half_losses_reduced(reduce):
    """The losses of each half reduced by ``reduce(losses of one half, (B, n − 1))``."""

    def half_losses(logits, tokens):
        n = tokens.shape[1] // 2
        losses = ch14_token_losses(logits, tokens[:, 1:])
        return reduce(losses[:, : n - 1]), reduce(losses[:, n:])

    return half_losses


def ch14_half_losses_entropy(logits, tokens):
    n = tokens.shape[1] // 2
    log_probs = ch14_log_softmax(logits)
    entropy = -(np.exp(log_probs) * log_probs).sum(axis=-1) / np.log(2)  # (B, 2n − 1)
    return entropy[:, : n - 1].mean(), entropy[:, n:].mean()


def ch14_half_losses_of_mean_probability(logits, tokens):
    n = tokens.shape[1] // 2
    probabilities = 2.0 ** -ch14_token_losses(logits, tokens[:, 1:])  # (B, 2n − 1)
    return -np.log2(probabilities[:, : n - 1].mean()), -np.log2(probabilities[:, n:].mean())


def ch14_half_losses_with_masks(logits, tokens):
    n = tokens.shape[1] // 2
    losses = ch14_token_losses(logits, tokens[:, 1:])  # (B, 2n − 1)
    predicted = np.arange(1, 2 * n)  # the token each loss predicts
    first, repeated = predicted < n, predicted > n
    return losses[:, first].mean(), losses[:, repeated].mean()


def ch14_real_eigenvalues_only(circuit, eigenvalues):
    real = eigenvalues[np.abs(eigenvalues.imag) < 1e-9].real
    return real.sum() / np.abs(real).sum()


@pytest.mark.parametrize(
    ("name", "answer", "fragments"),
    [
        (
            "check_previous_token_score",
            ch14_previous_over_t,
            ["the mean is over all T = 5 queries", "divided by T"],
        ),
        (
            "check_previous_token_score",
            lambda w: np.diagonal(w, offset=-1).mean(axis=(0, 2)),
            ["returned shape (5,), one number per position", "axis1=-2, axis2=-1"],
        ),
        ("check_previous_token_score", ch14_previous_masked_mean, ["over all T × T = 25 entries"]),
        (
            "check_previous_token_score",
            ch14_previous_largest,
            ["how often key i − 1 gets the LARGEST weight"],
        ),
        (
            "check_previous_token_score",
            lambda w: w.diagonal(offset=-1, axis1=-1, axis2=-2).mean(axis=(0, 2)),
            ["it is 0 for every head", "the NEXT token"],
        ),
        (  # the diagonal's first n entries: queries n − 1 … 2n − 2
            "check_prefix_matching_score",
            lambda w, n: ch14_diagonal(w, 1 - n)[..., :n].mean(axis=(0, 2)),
            ["it counts query n − 1 = 3", "leaves out the last query, 2n − 1 = 7"],
        ),
        (  # summed over the batch and the queries
            "check_prefix_matching_score",
            lambda w, n: ch14_diagonal(w, 1 - n)[..., 1:].sum(axis=(0, 2)),
            ["a prefix-matching score is a mean of attention weights, between 0 and 1"],
        ),
        (
            "check_previous_token_score",
            lambda w: ch14_diagonal(w, -1).sum(axis=(0, 2)),
            ["a previous-token score is a mean of attention weights"],
        ),
        (
            "check_prefix_matching_score",
            ch14_prefix_over_2n,
            ["the mean is over all 2n = 8 queries"],
        ),
        (
            "check_prefix_matching_score",
            ch14_prefix_largest,
            ["how often key i − n + 1 gets the LARGEST weight"],
        ),
        (
            "check_prefix_matching_score",
            ch14_prefix_default_axes,
            ["returned shape (8,), one number per position (T = 8)", "axis1=-2"],
        ),
        (
            "check_prefix_matching_score",
            ch14_prefix_matching_with(offset=lambda n: n - 1, queries=slice(None)),
            ["it is 0 for every head", "keys AFTER their queries"],
        ),
        (
            "check_half_losses",
            ch14_half_losses_reduced(lambda losses: losses.sum(axis=1).mean()),
            ["tokens of shape (3, 10)): each half is a SUM over its n − 1 = 4 predictions"],
        ),
        (
            "check_half_losses",
            ch14_half_losses_reduced(lambda losses: losses.sum()),
            ["each half is a SUM over its n − 1 = 4 predictions and the 3 sequences"],
        ),
        ("check_half_losses", ch14_half_losses_entropy, ["this is the ENTROPY of each prediction"]),
        (
            "check_half_losses",
            ch14_half_losses_of_mean_probability,
            ["the first half is minus the log of the MEAN probability"],
        ),
        (
            "check_half_losses",
            ch14_half_losses_with(repeated=lambda n: slice(n, -1)),
            ["the repeated half leaves out the prediction of the last token, 2n − 1 = 9"],
        ),
        (
            "check_half_losses",
            ch14_half_losses_with(first=lambda n: slice(0, n - 2)),
            ["the first half leaves out the prediction of token n − 1 = 4"],
        ),
        (
            "check_half_losses",
            lambda logits, tokens: (
                ch14_half_losses(logits, tokens)[0],
                ch14_half_losses_reduced(lambda losses: losses.sum(axis=1).mean())(logits, tokens)[
                    1
                ],
            ),
            ["the repeated half is a SUM over its predictions per sequence"],
        ),
        (
            "check_copying_score",
            ch14_copying_with(ch14_real_eigenvalues_only),
            ["w_u of shape (6, 9)): only the REAL eigenvalues were counted"],
        ),
        (
            "check_copying_score",
            ch14_copying_with(lambda c, ev: np.trace(c) / np.abs(c).sum()),
            ["the trace divided by the sum of |entries| of the whole circuit"],
        ),
        (
            "check_copying_score",
            ch14_copying_with(lambda c, ev: np.abs(ev.sum()) / np.abs(ev).sum()),
            ["the numerator is |Σ λ|, which is never negative"],
        ),
        (
            "check_copying_score",
            ch14_copying_with(lambda c, ev: ev.sum().real / np.abs(ev).max()),
            ["the denominator is the largest |λ| only"],
        ),
        # Third review: slips that the checkers used to call only 'off'.
        (
            "check_previous_token_score",
            lambda w: np.median(ch14_diagonal(w, -1), axis=(0, 2)),
            ["(2, 3, 5, 5)): this is the MEDIAN of the weights on key i − 1"],
        ),
        (  # the share of what the query does not keep on itself
            "check_previous_token_score",
            lambda w: (ch14_diagonal(w, -1) / (1 - ch14_diagonal(w, 0)[..., 1:])).mean(axis=(0, 2)),
            ["divided by what the query does not keep on itself", "a share of ALL its attention"],
        ),
        (
            "check_previous_token_score",
            lambda w: np.round(ch14_previous_token_score(w), 2),
            ["(2, 3, 5, 5)) is rounded to 2 decimals"],
        ),
        (
            "check_prefix_matching_score",
            lambda w, n: np.median(ch14_diagonal(w, 1 - n)[..., 1:], axis=(0, 2)),
            ["half_length=4): this is the MEDIAN of the weights on key i − n + 1"],
        ),
        (
            "check_prefix_matching_score",
            lambda w, n: np.round(ch14_prefix_matching_score(w, n), 2),
            ["half_length=4) is rounded to 2 decimals"],
        ),
        (
            "check_half_losses",
            lambda logits, tokens: tuple(2.0 ** np.array(ch14_half_losses(logits, tokens))),
            ["tokens of shape (3, 10)): these are perplexities"],
        ),
        (
            "check_half_losses",
            lambda logits, tokens: tuple(np.round(ch14_half_losses(logits, tokens), 2)),
            ["tokens of shape (3, 10)): the first half is rounded to 2 decimals"],
        ),
        (
            "check_copying_score",
            ch14_copying_with(lambda c, ev: ev.sum().real / np.sqrt((np.abs(ev) ** 2).sum())),
            ["w_u of shape (6, 9)): the denominator is √(Σ |λ|²)"],
        ),
        (
            "check_copying_score",
            ch14_copying_with(lambda c, ev: np.abs(ev.real).sum() / np.abs(ev).sum()),
            ["the numerator is Σ |Re λ|, which is never negative"],
        ),
        (
            "check_copying_score",
            lambda *matrices: round(float(ch14_copying_score(*matrices)), 2),
            ["w_u of shape (6, 9)) is rounded to 2 decimals"],
        ),
    ],
)
def test_ch14_checkers_name_more_mistakes(name, answer, fragments):
    assert_ch14_mistake(getattr(exercises, name)(answer), *fragments)


@pytest.mark.parametrize(
    ("name", "answer"),
    [
        (  # the main diagonal of the block of queries 1 … and keys … T − 2
            "check_previous_token_score",
            lambda w: ch14_diagonal(w[:, :, 1:, :-1], 0).mean(axis=(0, 2)),
        ),
        (
            "check_previous_token_score",
            lambda w: (
                np.einsum("bhij,ij->h", w, np.eye(w.shape[-1], k=-1))
                / (w.shape[0] * (w.shape[-1] - 1))
            ),
        ),
        ("check_prefix_matching_score", ch14_prefix_masked),
        (  # a loop over heads, sequences and queries, in float32
            "check_previous_token_score",
            lambda w: np.array(
                [
                    np.mean(
                        [w[b, h, i, i - 1] for b in range(len(w)) for i in range(1, w.shape[-1])]
                    )
                    for h in range(w.shape[1])
                ],
                dtype=np.float32,
            ),
        ),
        (
            "check_copying_score",
            lambda w_e, w_v, w_o, w_u: ch14_score_of(w_e @ w_v @ w_o @ w_u, np.eye(len(w_e))),
        ),
        (  # np.linalg.eig's eigenvalues
            "check_copying_score",
            ch14_copying_with(
                lambda c, ev: (lambda e: e.sum().real / np.abs(e).sum())(np.linalg.eig(c)[0])
            ),
        ),
        ("check_half_losses", ch14_half_losses_with_masks),
        (
            "check_half_losses",
            ch14_half_losses_with(
                base=2.0, log_softmax=lambda x: x - np.logaddexp.reduce(x, -1)[..., None]
            ),
        ),
        (  # the same ratio, as a ratio of means
            "check_copying_score",
            ch14_copying_with(lambda c, ev: ev.real.mean() / np.abs(ev).mean()),
        ),
        (  # the transposed circuit has the same eigenvalues
            "check_copying_score",
            lambda w_e, w_v, w_o, w_u: ch14_copying_score(w_u.T, w_o.T, w_v.T, w_e.T),
        ),
    ],
)
def test_ch14_checkers_accept_more_correct_answers(name, answer):
    feedback = getattr(exercises, name)(answer)
    assert feedback.passed, feedback.message


# Every checker of the chapter with a correct answer: test_exercises_registry.py runs them.
REFERENCES = dict(CH14_CHECKERS)
