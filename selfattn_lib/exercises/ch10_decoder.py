"""Checkers for the exercises of chapter 10, decoder and cross-attention."""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

from selfattn_lib.exercises import _kit as kit


def check_shift_right(shift_right: Callable[..., Any]) -> kit.Feedback:
    """Check the learner's decoder input for teacher forcing (chapter 10, exercise 1).

    Expected signature: ``shift_right(tgt: np.ndarray, bos_id: int) -> np.ndarray``: the
    decoder's input for a batch of targets ``tgt`` (integer ids), every target token moved one
    place to the right, the last one dropped and ``bos_id`` in the first place. The input
    ``tgt`` must not be changed.

    Shapes
    ------
    ``tgt``: ``(B, T)`` → ``(B, T)``, integer ids.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_shift_right(lambda tgt, bos_id: None)
    ✘ Not yet. shift_right([[7, 8, 9, 2], [5, 2, 0, 0]], bos_id=1) returned None: did you forget
    the `return` statement?
    """
    name = kit.name_of(shift_right, "shift_right")
    cases = (
        (np.array([[7, 8, 9, 2], [5, 2, 0, 0]]), 1),
        (np.array([[4, 11, 6, 12, 2], [9, 9, 9, 2, 0], [3, 2, 0, 0, 0]]), 3),
        (np.array([[6]]), 1),
    )

    def check_one(tgt: np.ndarray, bos_id: int) -> None:
        what = f"{name}({kit.show(tgt)}, bos_id={bos_id})"
        bos = np.full((tgt.shape[0], 1), bos_id)  # (B, 1)
        expected = np.concatenate([bos, tgt[:, :-1]], axis=1)  # (B, T)
        given = tgt.copy()
        result = kit.call(shift_right, given, bos_id)
        if not np.array_equal(given, tgt):
            raise kit.Mistake(
                f"{what} changed the target it was given (e.g. by assigning into it): the "
                "loss still needs the unshifted target, so build a new array"
            )
        if result is not None and np.shape(result) == (tgt.shape[0], tgt.shape[1] + 1):
            raise kit.Mistake(
                f"{what} returned shape {np.shape(result)}: one column too many. Put <bos> in "
                "front AND drop the last target token, so that input and target have the same "
                "length T and input t holds target token t - 1"
            )
        shorter = (tgt.shape[0], tgt.shape[1] - 1)
        if result is not None and np.shape(result) == shorter:
            short = np.asarray(kit.plain(result))
            if np.array_equal(short, tgt[:, :-1]):
                raise kit.Mistake(
                    f"{what} returned shape {shorter}: it drops the last target token but "
                    "puts no <bos> in front. Column 0 must be bos_id, so that input and target "
                    "have the same length T"
                )
            if np.array_equal(short, np.concatenate([bos, tgt[:, :-2]], axis=1)):
                raise kit.Mistake(
                    f"{what} returned shape {shorter}: it drops the last TWO target tokens. "
                    "Drop only the last one, so that input and target have the same length T"
                )
        if result is not None and np.shape(result) == (tgt.size,):
            raise kit.Mistake(
                f"{what} returned a flat array of shape {np.shape(result)}: the batch was "
                "flattened (np.insert, np.append and np.delete do that without an axis). Shift "
                "each sequence along axis 1 and keep the shape (B, T)"
            )
        got = kit.as_int_array(result, expected, what)
        if np.array_equal(got, expected):
            return
        column = got[:, 0]
        if np.array_equal(got[:, 1:], expected[:, 1:]) and (column == column[0]).all():
            raise kit.Mistake(
                f"{what} puts {column[0]} in column 0, not bos_id = {bos_id}: use the argument"
            )
        pad = np.zeros_like(tgt[:, :1])
        wrong = [
            (
                tgt,
                "returns the target itself, unshifted: position t would read the very token "
                "it must predict. Put <bos> in front and drop the last token",
            ),
            (
                np.concatenate([tgt[:, 1:], pad], axis=1),
                "shifts the target to the LEFT: input t would then be target token t + 1, the "
                "very token position t must predict, so the model could simply copy it",
            ),
            (
                np.roll(tgt, 1, axis=1),
                "rolls the target (np.roll), so the LAST target token comes first. Column 0 "
                "must be <bos> (bos_id): at the first step nothing has been written yet",
            ),
            (
                np.concatenate([bos, tgt[:, 1:]], axis=1),
                "writes <bos> over the first target token instead of shifting the target: the "
                "first token then never appears in the input, and the others are not moved",
            ),
            (
                np.concatenate([tgt[:, :-1], bos], axis=1),
                "puts <bos> at the END. It belongs in column 0, in front of the target",
            ),
            (
                np.concatenate([bos, np.where(tgt == 2, 0, tgt)[:, :-1]], axis=1),
                "replaces <eos> (id 2 here) by <pad> (id 0) in the input: shift the target as "
                "it is, <eos> included. Nothing else changes; the padding after it is hidden "
                "by the mask and left out of the loss",
            ),
        ]
        if tgt.shape[0] > 1:
            wrong.append(
                (
                    np.concatenate([np.full((1, tgt.shape[1]), bos_id), tgt[:-1]], axis=0),
                    "shifts along axis 0, the batch axis: each sequence is shifted along its "
                    "own tokens, axis 1",
                )
            )
        kit.match_known_mistakes(got, expected, wrong, what, joiner=" ")
        b, t = np.argwhere(got != expected)[0]
        raise kit.Mistake(
            f"{what}[{b}, {t}] is {got[b, t]}, expected {expected[b, t]} "
            f"({'bos_id' if t == 0 else f'target token {t - 1}'})"
        )

    def checks() -> str:
        for tgt, bos_id in cases:
            check_one(tgt, bos_id)
        kit.require_own_code(
            shift_right,
            cases[0],
            (*kit.TORCH, "selfattn_lib.training.shift_right"),
            name,
            "the exercise is to write it yourself, with NumPy",
        )
        return (
            "Your shift is right: <bos> first, then the target without its last token, so "
            "the decoder's input t is target token t - 1 and every position predicts the "
            "token it has not seen."
        )

    return kit.run_checks(checks)


def check_decoder_self_mask(decoder_self_mask: Callable[..., Any]) -> kit.Feedback:
    """Check the learner's mask for the decoder's self-attention (chapter 10, exercise 2).

    Expected signature: ``decoder_self_mask(tgt: np.ndarray, pad_id: int) -> np.ndarray``, a
    boolean mask for a batch of decoder inputs ``tgt``: ``True`` where query ``i`` may attend
    key ``j``, that is ``j <= i`` (causal) AND token ``j`` of that sequence is not padding. Only
    the padding keys are hidden, not the rows of the padding queries as well (with padding in
    front, some rows are empty anyway).

    Shapes
    ------
    ``tgt``: ``(B, T)`` → ``(B, T_q, T_k)`` with ``T_q = T_k = T``, dtype bool: rows are
    queries, columns keys.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_decoder_self_mask(lambda tgt, pad_id: None)
    ✘ Not yet. decoder_self_mask([[9, 9, 1, 0, 4], [1, 3, 2, 9, 9]], pad_id=9) returned None:
    did you forget the `return` statement?
    """
    name = kit.name_of(decoder_self_mask, "decoder_self_mask")
    cases = (
        (np.array([[9, 9, 1, 0, 4], [1, 3, 2, 9, 9]]), 9),  # padding in front, then behind
        (np.array([[1, 7, 8, 9], [1, 5, 2, 0], [1, 6, 0, 0]]), 0),
    )

    def check_one(tgt: np.ndarray, pad_id: int) -> None:
        t = tgt.shape[1]
        what = f"{name}({kit.show(tgt)}, pad_id={pad_id})"
        causal = np.tril(np.ones((t, t), dtype=bool))  # (T, T)
        real = tgt != pad_id  # (B, T)
        expected = causal & real[:, None, :]  # (B, T, T): hide padding KEYS
        result = kit.call(decoder_self_mask, tgt.copy(), pad_id)
        shape = np.shape(result) if result is not None else None
        if shape == (t, t):
            raise kit.Mistake(
                f"{what} returned shape {shape} = (T, T): one mask for the whole batch. The "
                "padding differs from sequence to sequence, so the mask needs the batch axis: "
                f"(B, T, T) = {expected.shape}"
            )
        if shape == (tgt.shape[0], 1, t, t):
            raise kit.Mistake(
                f"{what} returned shape {shape}, with an axis for the heads: the prompt asks "
                f"for (B, T, T) = {expected.shape} (the attention inserts the head axis itself)"
            )
        if shape in ((tgt.shape[0], 1, t), (tgt.shape[0], t)):
            raise kit.Mistake(
                f"{what} returned shape {shape}: that is only the padding part. Combine it "
                f"with the causal (T, T) mask into the (B, T, T) = {expected.shape} mask"
            )
        got = kit.as_bool_array(result, expected, what)
        if np.array_equal(got, expected):
            return
        both_rows_and_keys = expected & real[:, :, None]
        wrong = [
            (
                ~expected,
                "is True exactly where it should be False: that is PyTorch's 'True = ignore' "
                "convention (nn.TransformerDecoderLayer's tgt_mask). Here True = may attend",
            ),
            (
                np.broadcast_to(causal, expected.shape),
                "is only the causal mask: the padding keys stay visible (to every token after "
                "them when a sequence is padded in front). AND it with the padding mask "
                "(tgt != pad_id) of the keys",
            ),
            (
                np.broadcast_to(real[:, None, :], expected.shape),
                "hides the padding but not the future: every position could read the tokens "
                "after it, the ones it is trained to predict. AND it with the causal mask",
            ),
            (
                causal & real[:, :, None],
                "hides padding QUERIES (rows) instead of padding KEYS (columns), so the real "
                "tokens can still attend the padding. The padding mask runs along the keys, "
                "shape (B, 1, T): `(tgt != pad_id)[:, None, :]`",
            ),
            (
                both_rows_and_keys,
                "also hides the rows of the padding queries: the mask is causal AND padding "
                "KEYS (columns), nothing more (the padding queries' outputs are ignored by the "
                "loss anyway)",
            ),
            (
                expected | (np.eye(t, dtype=bool) & ~real[:, :, None]),
                "lets each padding query attend itself (the diagonal), so that no row is "
                "empty: the prompt's mask is causal AND padding keys, nothing more. A row "
                "left empty gets weights 0 in selfattn_lib's attention (chapter 6)",
            ),
            (
                np.triu(np.ones((t, t), dtype=bool)) & real[:, None, :],
                "lets each query see the FUTURE (the upper triangle) instead of the past: "
                "query i may attend keys j <= i, the lower triangle, np.tril",
            ),
            (
                np.tril(np.ones((t, t), dtype=bool), k=-1) & real[:, None, :],
                "hides the diagonal: a position must see its own token too (the token it "
                "has just read), so keys j <= i, diagonal included",
            ),
            (
                causal & (tgt != 0)[:, None, :],
                f"treats 0 as the padding, but pad_id = {pad_id} here: use the argument",
            ),
            (
                causal & (tgt > pad_id)[:, None, :],
                "keeps only the keys with ids ABOVE pad_id (tgt > pad_id): every id but pad_id "
                "is a real token, so test tgt != pad_id",
            ),
            (
                causal & (tgt == pad_id)[:, None, :],
                "is True at the padding keys and False at the real ones: the padding part of "
                "the mask is tgt != pad_id (True = may attend)",
            ),
            (
                np.tril(np.ones((t, t), dtype=bool), k=1) & real[:, None, :],
                "lets each query see one token ahead (np.tril with k=1): query i may attend "
                "keys j <= i only, np.tril with the default k=0",
            ),
        ]
        kit.match_known_mistakes(got, expected, wrong, what, joiner=" ")
        b, i, j = np.argwhere(got != expected)[0]
        raise kit.Mistake(
            f"{what}[{b}, {i}, {j}] is {bool(got[b, i, j])}: query {i} may attend key {j} only "
            f"if {j} <= {i} and token {j} of sequence {b} is not padding"
        )

    def checks() -> str:
        for tgt, pad_id in cases:
            check_one(tgt, pad_id)
        return (
            "Your mask is right: causal AND padding keys hidden, shape (B, T, T). "
            "selfattn_lib's Transformer.decode builds the same mask."
        )

    return kit.run_checks(checks)


def _ch10_layers(d_model: int, d_ff: int) -> tuple[int, int]:
    """Parameters of one post-norm encoder layer and one decoder layer (with biases)."""
    attention = 4 * d_model * d_model + 4 * d_model  # W_Q, W_K, W_V, W_O and biases
    feed_forward = 2 * d_model * d_ff + d_ff + d_model  # W_1, W_2 and biases
    norm = 2 * d_model  # gain and bias
    return attention + feed_forward + 2 * norm, 2 * attention + feed_forward + 3 * norm


def _ch10_transformer_count(vocab_size: int, d_model: int, d_ff: int, n_layers: int, tied: bool):
    encoder_layer, decoder_layer = _ch10_layers(d_model, d_ff)
    embeddings = (1 if tied else 3) * vocab_size * d_model
    return embeddings + n_layers * (encoder_layer + decoder_layer)


def check_transformer_parameters(transformer_parameters: Callable[..., Any]) -> kit.Feedback:
    """Check the learner's parameter count of the whole Transformer (chapter 10, exercise 4).

    Expected signature: ``transformer_parameters(vocab_size: int, d_model: int, d_ff: int,
    n_layers: int, tied: bool) -> int``: the trainable numbers of the paper's (post-norm)
    encoder–decoder with ``n_layers`` encoder and ``n_layers`` decoder layers, biases in every
    linear layer except the output projection (which has none), as PyTorch's layers have them
    (the paper does not say; its tensor2tensor code has none in W_Q, W_K, W_V, W_O), a gain and
    a bias in every layer norm, and no final layer norm. With ``tied`` one matrix serves as
    source embedding, target embedding and output projection; without, there are three such
    matrices. The sinusoidal positions are not parameters.

    Shapes
    ------
    ``vocab_size``, ``d_model``, ``d_ff``, ``n_layers``: whole numbers, ``tied``: a bool → one
    whole number. Each embedding matrix and the output projection: ``(V, D)`` with
    ``V = vocab_size`` and ``D = d_model``.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_transformer_parameters(lambda vocab_size, d_model, d_ff, n_layers, tied: None)
    ✘ Not yet. transformer_parameters(37000, 512, 2048, 6, True) returned None: did you forget
    the `return` statement?
    """
    name = kit.name_of(transformer_parameters, "transformer_parameters")
    cases = (
        (37000, 512, 2048, 6, True),
        (37000, 1024, 4096, 6, True),
        (42, 64, 128, 2, True),
        (100, 8, 32, 3, False),
        (37000, 512, 2048, 6, False),
    )

    def as_count(result: Any, what: str) -> int:
        return kit.as_whole_number(result, what, "a number of parameters")

    def mistakes(vocab_size: int, d_model: int, d_ff: int, n_layers: int, tied: bool):
        right = _ch10_transformer_count(vocab_size, d_model, d_ff, n_layers, tied)
        encoder_layer, decoder_layer = _ch10_layers(d_model, d_ff)
        attention = 4 * d_model * d_model + 4 * d_model
        vd = vocab_size * d_model
        found = [
            (
                right - n_layers * (attention + 2 * d_model),
                "each decoder layer is counted like an encoder layer. A decoder layer has TWO "
                "attention blocks (masked self-attention and cross-attention, 4 D² + 4 D "
                "each) and THREE layer norms",
            ),
            (
                right - n_layers * attention,
                "each decoder layer has two attention blocks, self-attention and "
                "cross-attention (4 D² + 4 D each); you counted one",
            ),
            (  # the same count for every input: one message names both causes
                right - n_layers * 2 * d_model,
                "2 D per encoder-decoder layer pair is missing: either a decoder layer's "
                "third layer norm (one after each of its three sublayers, 2 D parameters "
                "each), or the feed-forward networks' bias b_2 (D numbers in every encoder "
                "and every decoder layer)",
            ),
            (
                right - n_layers * 2 * d_ff,
                "the feed-forward networks' first bias b_1 is missing: d_ff numbers in every "
                "encoder and every decoder layer",
            ),
            (
                right - n_layers * decoder_layer,
                "the decoder layers are missing: the model has n_layers of them besides the "
                "n_layers encoder layers",
            ),
            (
                right - n_layers * encoder_layer,
                "the encoder layers are missing: the model has n_layers of them besides the "
                "n_layers decoder layers",
            ),
            (
                right + vocab_size,
                "the output projection has no bias in this count (nor in the paper's code); drop "
                "the V bias terms",
            ),
            (
                right - n_layers * 3 * 4 * d_model,
                "the attention blocks' biases are missing: each of W_Q, W_K, W_V and W_O has "
                "a bias of D numbers, 4 D per block (three blocks per encoder-decoder layer "
                "pair)",
            ),
            (
                right - n_layers * 3 * d_model,
                "W_O's bias is missing: each attention block has four biases of D numbers, for "
                "W_Q, W_K, W_V and the output projection W_O (4 D per block, three blocks per "
                "encoder-decoder layer pair)",
            ),
            (
                right - n_layers * 3 * (d_model * d_model + d_model),
                "each attention block has FOUR D × D projections with their biases, W_Q, W_K, "
                "W_V and the output projection W_O: you counted three",
            ),
            (
                right - n_layers * 5 * d_model,
                "the layer norms' biases are missing: each layer norm has a gain AND a bias, "
                "2 D numbers (five layer norms per encoder-decoder layer pair)",
            ),
            (
                right - n_layers * 10 * d_model,
                "the layer norms are missing: each has a gain and a bias, 2 D numbers, two in "
                "an encoder layer and three in a decoder layer",
            ),
            (
                right - n_layers * 2 * (d_ff + d_model),
                "the feed-forward networks' biases are missing: b_1 has d_ff numbers and b_2 "
                "D, in every encoder and decoder layer",
            ),
            (
                right - n_layers * (3 * 4 * d_model + 2 * (d_ff + d_model)),
                "the linear layers' biases are missing: every linear layer but the output "
                "layer has one (4 D per attention block, d_ff + D per feed-forward network)",
            ),
            (
                right - (n_layers - 1) * (encoder_layer + decoder_layer),
                "it counts one encoder layer and one decoder layer: the model has n_layers of each",
            ),
            (
                right + 2 * n_layers * (2 * d_model + 1) * (4 * d_model - d_ff),
                "the feed-forward networks are 4 D wide here, but their width is the argument d_ff",
            ),
            *(
                (
                    right + copies * max_len * d_model,
                    f"it counts positions ({max_len} × D"
                    f"{', for the source and the target' if copies == 2 else ''}) as parameters: "
                    "the sinusoidal positions are computed, not learned",
                )
                for max_len in (512, 5000)
                for copies in (1, 2)
            ),
            *(
                (
                    right + extra * d_model,
                    "there is no final layer norm after the paper's post-norm stacks (pre-norm "
                    f"models and nn.Transformer add one to each stack: 4 D more; you added "
                    f"{extra} D)",
                )
                for extra in (4, 8)
            ),
        ]
        if tied:
            found += [
                (
                    right + 2 * vd,
                    "with tied embeddings the source embedding, the target embedding and the "
                    "output projection are ONE V × D matrix, counted once, not three times",
                ),
                (right - vd, "the embedding matrix (V × D) is missing"),
                (
                    right + vd,
                    "with tied embeddings the output layer reuses the embedding matrix: one "
                    "V × D matrix in all, not a second one for the output",
                ),
            ]
        else:
            found += [
                (
                    right - vd,
                    "untied, there are three V × D matrices: the source embedding, the "
                    "target embedding and the output projection; you counted two",
                ),
                (
                    right - 2 * vd,
                    "untied, the source embedding, the target embedding and the output "
                    "projection are three separate V × D matrices; you counted one",
                ),
            ]
        return found

    def checks() -> str:
        undecided = None  # a wrong count that two slips explain: a later case tells them apart
        for case in cases:
            what = f"{name}{case}"
            got = as_count(kit.call(transformer_parameters, *case), what)
            expected = _ch10_transformer_count(*case)
            if got == expected:
                continue
            slips = {message for wrong, message in mistakes(*case) if wrong == got}
            if not slips:
                raise kit.Mistake(f"{what} returned {got:,}, expected {expected:,}")
            if undecided is not None:
                slips = (slips & undecided[1]) or slips
            if len(slips) == 1:
                raise kit.Mistake(f"{what} returned {got:,}: {slips.pop()}")
            undecided = (undecided[0] if undecided else f"{what} returned {got:,}", slips)
        if undecided is not None:
            raise kit.Mistake(f"{undecided[0]}: {' Or: '.join(sorted(undecided[1]))}")
        kit.require_own_code(
            transformer_parameters,
            cases[0],
            (*kit.COURSE_LIBRARY, *kit.TORCH),
            name,
            "the exercise is to count with a formula, without building a model",
        )
        return (
            "Your count is right: 63,082,496 parameters for the base model and 214,245,376 "
            "for the big one with a shared vocabulary of 37,000 tokens, as count_parameters "
            "finds."
        )

    return kit.run_checks(checks)


class _Ch10Model:
    """A stand-in for a model: logits for the next token, recording every prefix it is
    given. ``rule(prefix)`` names the token with the largest logit."""

    def __init__(self, rule: Callable[[list[int]], int], vocab_size: int = 12) -> None:
        self.rule, self.vocab_size, self.prefixes = rule, vocab_size, []

    def __call__(self, prefix: Any) -> np.ndarray:
        prefix = [int(token) for token in np.asarray(prefix).ravel()]
        self.prefixes.append(prefix)
        best = self.rule(prefix)
        ranks = (np.arange(self.vocab_size) * 7 + len(prefix)) % self.vocab_size
        logits = -1.0 - 0.1 * ranks  # (V,): the other tokens, all below the best
        logits[best] = 2.0
        return logits


def check_greedy_decode(greedy_decode: Callable[..., Any]) -> kit.Feedback:
    """Check the learner's greedy decoding loop (chapter 10, exercise 3).

    Expected signature: ``greedy_decode(next_token_logits, bos_id: int, eos_id: int,
    max_new_tokens: int) -> list[int]``. ``next_token_logits(prefix)`` takes the list of ids
    written so far (``bos_id`` first) and returns the logits of the next token. The result
    starts with ``bos_id``, then adds the token with the largest logit again and again: it
    stops after adding ``eos_id`` (which is kept) or after ``max_new_tokens`` new tokens.

    Shapes
    ------
    ``next_token_logits``: a list of ids → ``(V,)``, one logit per token of the vocabulary; the
    result: a list of at most ``max_new_tokens + 1`` ids.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_greedy_decode(lambda next_token_logits, bos_id, eos_id, max_new_tokens: None)
    ✘ Not yet. greedy_decode(a model that writes 7 3 9 5 <eos>, bos_id=1, eos_id=2,
    max_new_tokens=10) returned None: did you forget the `return` statement?
    """
    name = kit.name_of(greedy_decode, "greedy_decode")
    bos_id, eos_id = 1, 2
    answer = [7, 3, 9, 5, eos_id]

    def spell(prefix: list[int]) -> int:
        """Writes ``answer`` whatever the source, then <eos>."""
        return answer[min(len(prefix) - 1, len(answer) - 1)]

    def chain(prefix: list[int]) -> int:
        """Depends on the whole prefix and never writes <eos>."""
        return 3 + (sum(prefix) * 5 + len(prefix)) % 9

    def at_once(prefix: list[int]) -> int:
        return eos_id

    def special(prefix: list[int]) -> int:
        """Writes <bos> and <pad> (id 0) like any other token: only <eos> ends the output."""
        return (5, bos_id, 0, 4, bos_id, 6)[(len(prefix) - 1) % 6]

    def reference(rule: Callable[[list[int]], int], max_new_tokens: int) -> list[int]:
        tokens = [bos_id]
        for _ in range(max_new_tokens):
            tokens.append(rule(tokens))
            if tokens[-1] == eos_id:
                break
        return tokens

    def as_ids(result: Any, what: str) -> list[int]:
        kit.require_result(result, what)
        try:
            values = np.asarray(result)
        except (TypeError, ValueError, RuntimeError) as error:
            raise kit.Mistake(f"{what} must return a list of token ids") from error
        if values.ndim == 2 and values.shape[0] == 1:
            values = values[0]
        if values.ndim != 1 or not np.issubdtype(values.dtype, np.integer):
            raise kit.Mistake(
                f"{what} must return a flat list of integer token ids, got {values.dtype} "
                f"values of shape {values.shape}"
            )
        return [int(value) for value in values]

    def check_one(rule: Callable[[list[int]], int], max_new_tokens: int, label: str) -> None:
        model = _Ch10Model(rule)
        what = f"{name}({label}, bos_id={bos_id}, eos_id={eos_id}, max_new_tokens={max_new_tokens})"
        got = as_ids(kit.call(greedy_decode, model, bos_id, eos_id, max_new_tokens), what)
        expected = reference(rule, max_new_tokens)
        for index, prefix in enumerate(model.prefixes):
            if index and len(prefix) == 1:
                raise kit.Mistake(
                    f"{what} called next_token_logits with {prefix}, one token: pass the "
                    "WHOLE prefix written so far, <bos> first. (Without a KV cache the decoder "
                    "recomputes every position; its last position gives the next token.)"
                )
            if not prefix or prefix[0] != bos_id:
                raise kit.Mistake(
                    f"{what} called next_token_logits with {prefix}: the prefix must start "
                    f"with <bos> (bos_id = {bos_id}), as the decoder's input did in training"
                )
        if got == expected:
            again = as_ids(
                kit.call(greedy_decode, _Ch10Model(rule), bos_id, eos_id, max_new_tokens), what
            )
            if again != got:
                raise kit.Mistake(
                    f"{what} gave two different answers: greedy decoding never samples"
                )
            return
        if got == expected[1:]:
            raise kit.Mistake(
                f"{what} returned {got} without <bos> at the start: return the whole "
                "sequence, bos_id first (as Transformer.greedy_decode does)"
            )
        if expected[-1] == eos_id and got == expected[:-1]:
            raise kit.Mistake(
                f"{what} returned {got}: it stops at <eos> but leaves it out. Keep <eos> at "
                "the end: it tells the reader the output is complete"
            )
        if len(got) > len(expected) and got[: len(expected)] == expected:
            if expected[-1] == eos_id:
                raise kit.Mistake(
                    f"{what} keeps writing after <eos> ({got}): stop as soon as the chosen "
                    "token is eos_id"
                )
            raise kit.Mistake(
                f"{what} returned {len(got) - 1} new tokens, more than max_new_tokens = "
                f"{max_new_tokens} (count the tokens added after <bos>)"
            )
        if len(got) < len(expected) and expected[: len(got)] == got:
            if got[-1] != eos_id and got[-1] in (bos_id, 0) and len(got) > 1:
                raise kit.Mistake(
                    f"{what} returned {got}: it stops at token {got[-1]}, which is not "
                    f"eos_id = {eos_id}. Only <eos> ends the output; any other token the "
                    "model picks is written like the rest"
                )
            raise kit.Mistake(
                f"{what} returned {got}, only {len(got) - 1} new tokens: it should add up to "
                f"max_new_tokens = {max_new_tokens} (stopping earlier only at <eos>)"
            )
        lowest = [bos_id]
        for _ in range(max_new_tokens):
            lowest.append(int(np.argmin(_Ch10Model(rule)(lowest))))
            if lowest[-1] == eos_id:
                break
        if got == lowest:
            raise kit.Mistake(f"{what} takes the LOWEST logit each time: use np.argmax")
        step = next(
            (i for i, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b), None
        )
        if step and got[:step] == expected[:step]:
            raise kit.Mistake(
                f"{what} returned {got}: after {got[:step]} it wrote token {got[step]}, but "
                f"the largest logit is token {expected[step]}'s. Greedy decoding takes the "
                "arg max at every step, never a sample"
            )
        raise kit.Mistake(f"{what} returned {got}, expected {expected}")

    def checks() -> str:
        check_one(spell, 10, "a model that writes 7 3 9 5 <eos>")
        check_one(spell, 3, "a model that writes 7 3 9 5 <eos>")
        check_one(chain, 6, "a model that never writes <eos>")
        check_one(at_once, 4, "a model that writes <eos> at once")
        check_one(special, 6, "a model that writes <bos> and <pad> as ordinary tokens")
        kit.require_own_code(
            greedy_decode,
            (_Ch10Model(chain), bos_id, eos_id, 6),
            kit.TORCH,
            name,
            "the exercise asks for plain Python or NumPy, without PyTorch",
        )
        return (
            "Your greedy decoding is right: the whole prefix in, the arg max out, stop at "
            "<eos> (kept) or after max_new_tokens."
        )

    return kit.run_checks(checks)


# The explanations the break-the-model exercise names (chapter 10, exercise 5), and why each
# wrong one does not fit what the learner measured.
_CH10_EXPLANATIONS = {
    "too short": (
        "the training did not stop too early: its loss fell as low as the loss of the real "
        "model after all its steps, in a fraction of the steps. It learned something, only "
        "not the task: look at what it writes"
    ),
    "no source": (
        "removing the shift changes only what the decoder reads of the TARGET; its "
        "cross-attention reads the source exactly as before"
    ),
    "copies its input": "",
    "memorised": (
        "the model cannot have memorised the dates: 50 steps see 4,800 of them, drawn at "
        "random from tens of thousands of training days, and it writes the TRAINING dates no "
        "better (try training.exact_match on them)"
    ),
}
# Every run of the exercise (the date model trained without the shift, 50 steps of 96
# examples) writes no held-out date right: exact match 0.000 for seeds 0-4, and for half or a
# quarter of the model, or twice the steps (tests/exercises/test_exercises_ch10_decoder.py).
_CH10_BROKEN_EXACT_MATCH = (0.0, 0.05)


def check_break_the_model(conclusion: Callable[..., Any]) -> kit.Feedback:
    """Check the learner's conclusion about the date model trained without the shift (chapter
    10, exercise 5). The checker never trains: it checks the explanation chosen and that the
    measured exact match lies in the range every correct run falls in.

    Expected signature: ``conclusion() -> dict``: ``{"explanation": name, "exact_match":
    number}``, where ``name`` is one of ``"too short"``, ``"no source"``,
    ``"copies its input"`` and ``"memorised"`` (the explanations the exercise describes), and
    ``number`` is the held-out exact match the learner measured, a fraction from 0 to 1,
    written as a literal.

    Shapes
    ------
    Not an array: no argument → a dict with a string and a number.

    Examples
    --------
    A function that forgets its ``return`` gets the standard reminder:

    >>> check_break_the_model(lambda: None)
    ✘ Not yet. conclusion() returned None: did you forget the `return` statement?
    """
    name = kit.name_of(conclusion, "conclusion")
    what = f"{name}()"
    low, high = _CH10_BROKEN_EXACT_MATCH

    def checks() -> str:
        result = kit.require_result(kit.call(conclusion), what)
        if not isinstance(result, dict) or set(result) != {"explanation", "exact_match"}:
            raise kit.Mistake(
                f'{what} must return a dict with two keys, "explanation" and '
                f'"exact_match", got {result!r}'
            )
        explanation, measured = result["explanation"], kit.plain(result["exact_match"])
        if isinstance(explanation, str):
            explanation = " ".join(explanation.lower().split()).replace("memorized", "memorised")
        if explanation not in _CH10_EXPLANATIONS:
            names = ", ".join(repr(key) for key in _CH10_EXPLANATIONS)
            raise kit.Mistake(f'{what}["explanation"] is {explanation!r}: choose one of {names}')
        if isinstance(measured, np.ndarray) and measured.shape == ():
            measured = measured[()]  # a 0-d array, e.g. from a tensor
        if isinstance(measured, bool | np.bool_) or not isinstance(measured, numbers.Real):
            raise kit.Mistake(
                f'{what}["exact_match"] must be the number you measured, got {measured!r}'
            )
        measured = float(measured)
        if not 0 <= measured <= 100:
            raise kit.Mistake(
                f'{what}["exact_match"] is {measured}: an exact match is a fraction of the '
                "held-out dates, from 0 to 1"
            )
        if measured > 1:
            raise kit.Mistake(
                f'{what}["exact_match"] is {measured}: give it as a fraction from 0 to 1 '
                "(as training.exact_match returns it), not in percent"
            )
        if not low <= measured <= high:
            raise kit.Mistake(
                f'{what}["exact_match"] is {measured}, the exact match of a model that writes '
                f"dates: trained without the shift, every run gets at most {high} right. Check "
                "that your loop feeds the decoder the target itself (not shift_right of it), "
                "and that you measured with greedy decoding (training.exact_match) on the "
                "held-out dates"
            )
        if explanation != "copies its input":
            raise kit.Mistake(
                f'{what}["explanation"] is {explanation!r}, but {_CH10_EXPLANATIONS[explanation]}'
            )
        return (
            f"Your conclusion is right: {measured:.3f} of the held-out dates. Without the "
            "shift, position t of the decoder reads the very token it must predict, so the "
            "model learns to copy its input; when it writes, position t holds the token "
            "before, and copying it is wrong."
        )

    return kit.run_checks(checks)
