"""Tests of the checkers of chapter 12 (selfattn_lib.exercises.ch12_language_model): each
names the mistake in typical wrong answers and accepts the usual correct alternatives. What
every checker promises is tested once, over REFERENCES, in test_exercises_registry.py."""

import numpy as np
import pytest
from test_tokenization import reference_merge  # scans from the left, as a learner would

from selfattn_lib import exercises

# --- correct answers, as a learner would write them ----------------------------------------


def ch12_softmax(scores, axis=-1):
    exponentials = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return exponentials / exponentials.sum(axis=axis, keepdims=True)


def ch12_next_token_probabilities(logits, temperature):
    return ch12_softmax(np.asarray(logits) / temperature)


def ch12_top_p_filter(probabilities, p):
    order = np.argsort(-probabilities, kind="stable")  # most probable first
    ranked = probabilities[order]
    before = np.cumsum(ranked) - ranked  # what the more probable tokens hold
    keep = np.zeros(len(probabilities), dtype=bool)
    keep[order[before < p]] = True
    kept = np.where(keep, probabilities, 0.0)
    return kept / kept.sum()


def ch12_apply_merges(ids, merges, vocab_size):
    for index, pair in enumerate(merges):
        ids = reference_merge(ids, pair, vocab_size + index)
    return ids


def ch12_counts(ids):
    counts = {}
    for pair in zip(ids, ids[1:], strict=False):
        counts[pair] = counts.get(pair, 0) + 1
    return counts


def ch12_train_bpe(
    ids, n_merges, vocab_size, *, choose=None, merge=reference_merge, first_id=None, stop_below=2
):
    """BPE training; the keywords make the slips of the tests below."""
    merges = []
    for index in range(n_merges):
        counts = ch12_counts(ids)
        if not counts or max(counts.values()) < stop_below:
            break  # no pair occurs twice
        pair = max(counts, key=counts.get) if choose is None else choose(counts)
        ids = merge(ids, pair, (vocab_size if first_id is None else first_id) + index)
        merges.append(pair)
    return merges


def ch12_stub(*args):
    raise NotImplementedError


CH12_CHECKERS = {
    "check_next_token_probabilities": ch12_next_token_probabilities,
    "check_top_p_filter": ch12_top_p_filter,
    "check_apply_merges": ch12_apply_merges,
    "check_train_bpe": ch12_train_bpe,
}


def assert_ch12_mistake(feedback, *fragments):
    assert feedback.attempted and not feedback.passed, feedback
    for fragment in fragments:
        assert fragment in feedback.message, (fragment, feedback.message)


@pytest.mark.parametrize("name", CH12_CHECKERS)
def test_ch12_checkers_pass_the_reference_and_report_the_stub_and_a_missing_return(name):
    checker = getattr(exercises, name)
    feedback = checker(CH12_CHECKERS[name])
    assert feedback.passed and feedback.attempted, feedback
    feedback = checker(ch12_stub)
    assert not feedback.attempted and "raise NotImplementedError" in feedback.message
    feedback = checker(lambda *args: None)
    assert_ch12_mistake(feedback, "returned None: did you forget the `return` statement?")


# --- next-token probabilities --------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        lambda logits, t: ch12_next_token_probabilities(logits, t).astype(np.float32),
        lambda logits, t: ch12_next_token_probabilities(logits, t).tolist(),
        # The power 1/T of the softmax, normalised again, is the same distribution.
        lambda logits, t: ch12_softmax(np.log(ch12_softmax(logits)) / t),
    ],
)
def test_ch12_next_token_probabilities_accepts_equivalent_answers(answer):
    feedback = exercises.check_next_token_probabilities(answer)
    assert feedback.passed, feedback.message


def ch12_no_max_subtraction(logits, temperature):
    exponentials = np.exp(logits / temperature)
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


def ch12_whole_batch(logits, temperature):
    scaled = logits / temperature
    exponentials = np.exp(scaled - scaled.max())
    return exponentials / exponentials.sum()


def ch12_column_max(logits, temperature):
    scaled = logits / temperature
    exponentials = np.exp(scaled - scaled.max(axis=0))
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


def ch12_without_keepdims(logits, temperature):
    scaled = logits / temperature
    exponentials = np.exp(scaled - scaled.max(axis=-1, keepdims=True))
    return exponentials / exponentials.sum(axis=-1)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda x, t: ch12_softmax(x) / t, ["divided by τ = 0.5 AFTER the softmax"]),
        (
            lambda x, t: ch12_softmax(ch12_softmax(x) / t),
            ["a second softmax", "it is not softmax(logits / τ)"],
        ),
        (lambda x, t: ch12_softmax(x) ** (1 / t), ["power 1/τ", "divide each row by its total"]),
        (
            lambda x, t: ch12_softmax(np.asarray(x) / t / t),
            ["divided by τ = 0.5 TWICE, that is by τ² = 0.25"],
        ),
        (lambda x, t: ch12_softmax(x / np.sqrt(t)), ["divided by √τ = 0.7071, not by τ = 0.5"]),
        (lambda x, t: ch12_softmax(x * t), ["MULTIPLIED by τ = 0.5"]),
        (ch12_no_max_subtraction, ["returned NaN", "e^1000 overflows", "largest logit"]),
        (lambda x, t: ch12_softmax(x / t, axis=0), ["each COLUMN sums to 1"]),
        (ch12_whole_batch, ["the whole batch sums to 1"]),
        (ch12_column_max, ["maximum subtracted was that of each COLUMN"]),
        (ch12_without_keepdims, ["could not be broadcast", "keepdims=True"]),
        (lambda x, t: np.exp(x / t), ["temperature=1) sums to 13.12", "not 1"]),
        (lambda x, t: ch12_softmax(x / t)[..., ::-1], ["is off at index ("]),
        (lambda x, t: ch12_softmax(x / t).T, ["returned shape (5, 3), expected (3, 5)"]),
    ],
)
def test_ch12_next_token_probabilities_names_typical_mistakes(answer, fragments):
    assert_ch12_mistake(exercises.check_next_token_probabilities(answer), *fragments)


def test_ch12_next_token_probabilities_turns_down_the_library():
    from selfattn_lib.sampling import temperature_probabilities
    from selfattn_lib.softmax import softmax

    feedback = exercises.check_next_token_probabilities(
        lambda logits, t: softmax(logits, temperature=t)
    )
    assert_ch12_mistake(feedback, "calls `selfattn_lib.softmax.softmax`", "NumPy only")
    feedback = exercises.check_next_token_probabilities(temperature_probabilities)
    assert_ch12_mistake(feedback, "calls `selfattn_lib.sampling.temperature_probabilities`")


def test_ch12_next_token_probabilities_does_not_accept_a_changed_argument():
    def in_place(logits, temperature):
        logits /= temperature
        return ch12_softmax(logits)

    assert_ch12_mistake(
        exercises.check_next_token_probabilities(in_place),
        "changed the array `logits` it was given (for example with `logits /= temperature`)",
        "compute `logits / temperature` into a new array",
    )


# --- top-p ---------------------------------------------------------------------------------


def ch12_top_p_loop(probabilities, p):
    kept, total = [], 0.0
    for token in sorted(range(len(probabilities)), key=lambda i: -probabilities[i]):
        kept.append(token)
        total += probabilities[token]
        if total >= p:
            break
    result = [0.0] * len(probabilities)
    for token in kept:
        result[token] = probabilities[token] / total
    return result


@pytest.mark.parametrize(
    "answer", [ch12_top_p_loop, lambda p, top: ch12_top_p_filter(p, top).astype(np.float32)]
)
def test_ch12_top_p_filter_accepts_equivalent_answers(answer):
    feedback = exercises.check_top_p_filter(answer)
    assert feedback.passed, feedback.message


def ch12_top_p_with(keep_rule, order_of=lambda p: np.argsort(-p, kind="stable"), renorm=True):
    def top_p_filter(probabilities, p):
        order = order_of(probabilities)
        running = np.cumsum(probabilities[order])
        keep = np.zeros(len(probabilities), dtype=bool)
        keep[order[keep_rule(running, probabilities[order], p)]] = True
        kept = np.where(keep, probabilities, 0.0)
        return kept / kept.sum() if renorm else kept

    return top_p_filter


def ch12_top_p_extend_by_one(probabilities, p):
    """Keeps the tokens below p, then each one's successor: nothing when the top token
    alone exceeds p."""
    order = np.argsort(-probabilities)
    below = np.cumsum(probabilities[order]) < p
    keep = np.zeros(len(probabilities), dtype=bool)
    keep[order[below | np.roll(below, 1)]] = True
    return np.where(keep, probabilities, 0.0) / max(probabilities[keep].sum(), 1e-300)


def ch12_top_p_nan_when_empty(probabilities, p):
    order = np.argsort(-probabilities)
    below = np.cumsum(probabilities[order]) < p
    keep = np.zeros(len(probabilities), dtype=bool)
    keep[order[below | np.roll(below, 1)]] = True
    kept = np.where(keep, probabilities, 0.0)
    return kept / kept.sum()


def ch12_top_p_ids(probabilities, p):
    order = np.argsort(-probabilities)
    before = np.cumsum(probabilities[order]) - probabilities[order]
    return order[before < p]


def ch12_top_p_mask(probabilities, p):
    return ch12_top_p_filter(probabilities, p) > 0


def ch12_top_p_in_place(probabilities, p):
    probabilities.sort()
    return ch12_top_p_filter(probabilities, p)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (ch12_top_p_with(lambda running, ranked, p: running < p), ["one token too few"]),
        (ch12_top_p_with(lambda running, ranked, p: running <= p), ["one token too few"]),
        (
            ch12_top_p_with(lambda running, ranked, p: running < p, renorm=False),
            ["one token too few"],
        ),
        (
            ch12_top_p_with(lambda running, ranked, p: running - ranked < p, renorm=False),
            ["the right tokens are kept", "sums to 0.65, not 1"],
        ),
        (
            ch12_top_p_with(
                lambda running, ranked, p: running - ranked < p,
                order_of=lambda probabilities: np.arange(len(probabilities)),
            ),
            ["in the order of their ids"],
        ),
        (
            ch12_top_p_with(lambda r, ranked, p: r - ranked < p, order_of=np.argsort),
            ["LEAST probable", "np.argsort(-probabilities)"],
        ),
        (ch12_top_p_extend_by_one, ["[0.05, 0.7, 0.15, 0.1], p=0.5", "kept no token at all"]),
        (ch12_top_p_nan_when_empty, ["returned NaN", "0.7, more than p = 0.5", "always kept"]),
        (
            lambda probabilities, p: np.zeros_like(probabilities),
            ["p=0.6): it kept no token at all: the most probable token is always kept"],
        ),
        (ch12_top_p_ids, ["returned the ids of the kept tokens, [1, 3]"]),
        (ch12_top_p_mask, ["returned a mask"]),
        (
            ch12_top_p_in_place,
            ["changed the array `probabilities` it was given", "caller's probabilities stay"],
        ),
        (
            ch12_top_p_with(lambda running, ranked, p: running - ranked < p - 0.2),
            ["keeps the tokens [1, 3, 6]", "has 5 tokens"],
        ),
    ],
)
def test_ch12_top_p_filter_names_typical_mistakes(answer, fragments):
    assert_ch12_mistake(exercises.check_top_p_filter(answer), *fragments)


def test_ch12_top_p_filter_turns_down_the_library():
    from selfattn_lib.sampling import top_p_filter

    assert_ch12_mistake(
        exercises.check_top_p_filter(top_p_filter),
        "gives the right result, but it calls `selfattn_lib.sampling.top_p_filter`",
    )


# --- apply_merges --------------------------------------------------------------------------


def ch12_apply_with_numpy(ids, merges, vocab_size):
    ids = np.array(ids)
    for index, (left, right) in enumerate(merges):
        out, i = [], 0
        while i < len(ids):
            if i + 1 < len(ids) and ids[i] == left and ids[i + 1] == right:
                out.append(vocab_size + index)
                i += 2
            else:
                out.append(ids[i])
                i += 1
        ids = np.array(out, dtype=np.int64)
    return ids


def ch12_apply_by_lowest_rank(ids, merges, vocab_size):
    """minbpe's encode: merge the present pair of lowest rank, everywhere, until none is left."""
    rank = {tuple(pair): index for index, pair in enumerate(merges)}
    while len(ids) >= 2:
        present = [pair for pair in zip(ids, ids[1:], strict=False) if pair in rank]
        if not present:
            break
        pair = min(present, key=rank.get)
        ids = reference_merge(ids, pair, vocab_size + rank[pair])
    return ids


@pytest.mark.parametrize(
    "answer",
    [
        ch12_apply_by_lowest_rank,
        ch12_apply_with_numpy,
        lambda ids, merges, v: tuple(ch12_apply_merges(ids, merges, v)),
    ],
)
def test_ch12_apply_merges_accepts_equivalent_answers(answer):
    feedback = exercises.check_apply_merges(answer)
    assert feedback.passed, feedback.message


def ch12_merge_collapsing_runs(ids, pair, new_id):
    """Marks every occurrence, overlapping ones too, then drops every second token."""
    starts = {i for i in range(len(ids) - 1) if (ids[i], ids[i + 1]) == tuple(pair)}
    return [new_id if i in starts else t for i, t in enumerate(ids) if i - 1 not in starts]


def ch12_merge_every_occurrence(ids, pair, new_id):
    """Each occurrence gives its own new token, overlapping ones too."""
    starts = {i for i in range(len(ids) - 1) if (ids[i], ids[i + 1]) == tuple(pair)}
    return [
        new_id if i in starts else t
        for i, t in enumerate(ids)
        if i in starts or i - 1 not in starts
    ]


def ch12_apply_backwards(ids, merges, vocab_size):
    for index in reversed(range(len(merges))):
        ids = reference_merge(ids, merges[index], vocab_size + index)
    return ids


def ch12_apply_leftmost_pair(ids, merges, vocab_size):
    table = {tuple(pair): vocab_size + index for index, pair in enumerate(merges)}
    ids = list(ids)
    changed = True
    while changed:
        changed = False
        for i in range(len(ids) - 1):
            if (ids[i], ids[i + 1]) in table:
                ids[i : i + 2] = [table[ids[i], ids[i + 1]]]
                changed = True
                break
    return ids


def ch12_apply_as_read(ids, merges, vocab_size):
    table = {tuple(pair): vocab_size + index for index, pair in enumerate(merges)}
    out = []
    for token in ids:
        out.append(token)
        while len(out) > 1 and (out[-2], out[-1]) in table:
            out[-2:] = [table[out[-2], out[-1]]]
    return out


def ch12_apply_by_training(ids, merges, vocab_size):
    for index in range(len(merges)):
        counts = ch12_counts(ids)
        if not counts:
            break
        ids = reference_merge(ids, max(counts, key=counts.get), vocab_size + index)
    return ids


def ch12_apply_with(merge=reference_merge, first_id=None):
    def apply_merges(ids, merges, vocab_size):
        for index, pair in enumerate(merges):
            ids = merge(ids, pair, (vocab_size if first_id is None else first_id) + index)
        return ids

    return apply_merges


def ch12_apply_in_place(ids, merges, vocab_size):
    for index, pair in enumerate(merges):
        i = 0
        while i < len(ids) - 1:
            if (ids[i], ids[i + 1]) == tuple(pair):
                ids[i : i + 2] = [vocab_size + index]
            i += 1
    return ids


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (ch12_apply_with(merge=ch12_merge_collapsing_runs), ["overlap itself", "(xx) x"]),
        (ch12_apply_with(merge=ch12_merge_every_occurrence), ["overlap itself", "(xx) x"]),
        (ch12_apply_with(first_id=0), ["numbered from 0", "vocab_size + i"]),
        (ch12_apply_backwards, ["from the last to the first", "merge 0 everywhere first"]),
        (ch12_apply_leftmost_pair, ["as it finds them from the left, whatever their rank"]),
        (ch12_apply_as_read, ["as it finds them from the left, whatever their rank"]),
        (ch12_apply_by_training, ["most frequent pairs of THIS sequence"]),
        (ch12_apply_in_place, ["changed the list it was given"]),
        (lambda ids, merges, v: [float(t) for t in ch12_apply_merges(ids, merges, v)], ["integer"]),
        (lambda ids, merges, v: [ch12_apply_merges(ids, merges, v)], ["one flat list"]),
        (lambda ids, merges, v: ch12_apply_merges(ids, merges, v)[:-1], ["different sequence"]),
        (
            lambda ids, merges, v: ch12_apply_merges(ids, merges, v) + [99],
            ["ids run from 0 to vocab_size + len(merges) − 1 = 5"],
        ),
    ],
)
def test_ch12_apply_merges_names_typical_mistakes(answer, fragments):
    assert_ch12_mistake(exercises.check_apply_merges(answer), *fragments)


def test_ch12_apply_merges_turns_down_the_library():
    from selfattn_lib.tokenization import apply_merges

    def with_the_library(ids, merges, vocab_size):
        return apply_merges(ids, merges, vocab_size=vocab_size).tolist()

    assert_ch12_mistake(
        exercises.check_apply_merges(with_the_library),
        "calls `selfattn_lib.tokenization.apply_merges`",
    )
    # As it is, the library's version takes vocab_size by keyword only.
    assert_ch12_mistake(exercises.check_apply_merges(apply_merges), "raised TypeError")


# --- train_bpe -----------------------------------------------------------------------------


def ch12_train_with_numpy(ids, n_merges, vocab_size):
    ids = np.array(ids)
    merges = np.zeros((n_merges, 2), dtype=np.int64)
    for index in range(n_merges):
        pairs = np.stack([ids[:-1], ids[1:]], axis=1)
        unique, first, counts = np.unique(pairs, axis=0, return_index=True, return_counts=True)
        if counts.max() < 2:
            return merges[:index]  # no pair occurs twice
        best = np.flatnonzero(counts == counts.max())
        merges[index] = unique[best[np.argmin(first[best])]]
        ids = np.array(reference_merge(ids.tolist(), tuple(merges[index]), vocab_size + index))
    return merges


def ch12_train_as_dict(ids, n_merges, vocab_size):
    return {
        tuple(pair): vocab_size + i
        for i, pair in enumerate(ch12_train_bpe(ids, n_merges, vocab_size))
    }


@pytest.mark.parametrize(
    "answer",
    [
        ch12_train_with_numpy,
        ch12_train_as_dict,
        lambda ids, n, v: [list(pair) for pair in ch12_train_bpe(ids, n, v)],
        lambda ids, n, v: tuple(ch12_train_bpe(ids, n, v)),
    ],
)
def test_ch12_train_bpe_accepts_equivalent_answers(answer):
    feedback = exercises.check_train_bpe(answer)
    assert feedback.passed, feedback.message


def ch12_count_without_overlaps(ids):
    counts, last = {}, {}
    for i, pair in enumerate(zip(ids, ids[1:], strict=False)):
        if last.get(pair) == i - 1:
            continue
        counts[pair] = counts.get(pair, 0) + 1
        last[pair] = i
    return counts


def ch12_train_without_overlapping_counts(ids, n_merges, vocab_size):
    merges = []
    for index in range(n_merges):
        counts = ch12_count_without_overlaps(ids)
        if max(counts.values()) < 2:
            break
        pair = max(counts, key=counts.get)
        ids = reference_merge(ids, pair, vocab_size + index)
        merges.append(pair)
    return merges


def ch12_train_counting_once(ids, n_merges, vocab_size):
    counts = ch12_counts(ids)
    return sorted(counts, key=counts.get, reverse=True)[:n_merges]


def ch12_smallest_of_the_best(counts):
    best = max(counts.values())
    return min(pair for pair, count in counts.items() if count == best)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (
            lambda ids, n, v: ch12_train_bpe(ids, n, v, choose=ch12_smallest_of_the_best),
            ["took the smallest pair", "occurs FIRST"],
        ),
        (
            lambda ids, n, v: ch12_train_bpe(ids, n, v, merge=ch12_merge_collapsing_runs),
            ["in the replacement, the pair of a merge can overlap itself"],
        ),
        (
            lambda ids, n, v: ch12_train_bpe(ids, n, v, merge=ch12_merge_every_occurrence),
            ["in the replacement, the pair of a merge can overlap itself"],
        ),
        (ch12_train_without_overlapping_counts, ["count EVERY adjacent pair"]),
        (ch12_train_counting_once, ["ORIGINAL sequence", "count the pairs again"]),
        (lambda ids, n, v: ch12_train_bpe(ids, n, v, first_id=0), ["numbered from 0"]),
        (lambda ids, n, v: ch12_train_bpe(ids, n - 1, v), ["returned 2 merges, expected 3"]),
        (
            lambda ids, n, v: ch12_train_bpe(ids, n, v, choose=lambda c: min(c, key=c.get)),
            ["merge 0 is (2, 0), which occurs once in", "most frequent pair there occurs 4 times"],
        ),
        (
            lambda ids, n, v: ch12_train_bpe(
                ids, n, v, choose=lambda c: max(reversed(list(c)), key=c.get)
            ),
            ["merge 1 is (1, 2), one of the pairs that occur 2 times", "(0, 3) occurs first"],
        ),
        (lambda ids, n, v: ch12_train_bpe(ids, n, v)[0], ["a list of pairs (left, right)"]),
        (
            lambda ids, n, v: [(float(a), float(b)) for a, b in ch12_train_bpe(ids, n, v)],
            ["must return integer token ids, got float64"],
        ),
    ],
)
def test_ch12_train_bpe_names_typical_mistakes(answer, fragments):
    assert_ch12_mistake(exercises.check_train_bpe(answer), *fragments)


def test_ch12_every_mistake_gets_its_own_message():
    """The cases are chosen so that no two slips give the same wrong answer where they are
    first caught: each gets a different message."""
    apply_slips = [
        ch12_apply_with(merge=ch12_merge_collapsing_runs),
        ch12_apply_with(first_id=0),
        ch12_apply_backwards,
        ch12_apply_leftmost_pair,
        ch12_apply_by_training,
    ]
    messages = [exercises.check_apply_merges(slip).message for slip in apply_slips]
    assert len(set(messages)) == len(messages)
    assert all("[1, 1, 1, 1, 1, 0, 1, 1, 1, 0]" in message for message in messages)
    train_slips = [
        lambda ids, n, v: ch12_train_bpe(ids, n, v, choose=ch12_smallest_of_the_best),
        lambda ids, n, v: ch12_train_bpe(ids, n, v, merge=ch12_merge_collapsing_runs),
        ch12_train_without_overlapping_counts,
        ch12_train_counting_once,
        lambda ids, n, v: ch12_train_bpe(ids, n, v, first_id=0),
    ]
    messages = [exercises.check_train_bpe(slip).message for slip in train_slips]
    assert len(set(messages)) == len(messages)
    assert all("[0, 1, 1, 1, 2, 0, 1, 1, 1, 2]" in message for message in messages)


def test_ch12_train_bpe_turns_down_the_library():
    from selfattn_lib.tokenization import train_bpe

    def with_the_library(ids, n_merges, vocab_size):
        return train_bpe(ids, n_merges, vocab_size=vocab_size)

    assert_ch12_mistake(
        exercises.check_train_bpe(with_the_library), "calls `selfattn_lib.tokenization.train_bpe`"
    )


# --- more plausible mistakes and correct variants, each checker -----------------------------
# Written from the prompts alone, as a learner would get them wrong: each is caught and its
# cause named.


def ch12_batch_maximum(logits, temperature):
    """One maximum for the whole batch: rows 2000 below it underflow to 0 / 0."""
    scaled = np.asarray(logits) / temperature
    exponentials = np.exp(scaled - scaled.max())
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


def ch12_row_mean_subtracted(logits, temperature):
    scaled = np.asarray(logits) / temperature
    exponentials = np.exp(scaled - scaled.mean(axis=-1, keepdims=True))
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


def ch12_batch_total(logits, temperature):
    scaled = np.asarray(logits) / temperature
    exponentials = np.exp(scaled - scaled.max(axis=-1, keepdims=True))
    return exponentials / exponentials.sum()


def ch12_next_token_row_by_row(logits, temperature):
    rows = np.atleast_2d(np.asarray(logits, dtype=np.float64)) / temperature
    result = np.empty_like(rows)
    for index, row in enumerate(rows):
        exponentials = np.exp(row - row.max())
        result[index] = exponentials / exponentials.sum()
    return result.reshape(np.shape(logits))


def ch12_next_token_log_sum_exp(logits, temperature):
    scaled = np.asarray(logits) / temperature
    return np.exp(scaled - np.logaddexp.reduce(scaled, axis=-1, keepdims=True))


def ch12_top_p_sorted(renorm):
    def top_p_filter(probabilities, p):
        ranked = np.sort(probabilities)[::-1]
        kept = np.where(np.cumsum(ranked) - ranked < p, ranked, 0.0)
        return kept / kept.sum() if renorm else kept

    return top_p_filter


def ch12_top_p_gathered(probabilities, p):
    """Puts the kept values back with the order the wrong way round: kept[order]."""
    order = np.argsort(-probabilities, kind="stable")
    ranked = probabilities[order]
    kept = np.where(np.cumsum(ranked) - ranked < p, ranked, 0.0)
    return (kept / kept.sum())[order]


def ch12_top_p_searchsorted(probabilities, p):
    order = np.argsort(-probabilities, kind="stable")
    n_kept = np.searchsorted(np.cumsum(probabilities[order]), p) + 1  # the first total ≥ p
    kept = np.zeros_like(probabilities)
    kept[order[:n_kept]] = probabilities[order[:n_kept]]
    return kept / kept.sum()


def ch12_top_p_ascending(probabilities, p):
    """Hugging Face's form: sort up, drop the tokens whose running total stays ≤ 1 − p."""
    order = np.argsort(probabilities, kind="stable")
    drop = np.cumsum(probabilities[order]) <= 1 - p
    kept = probabilities.copy()
    kept[order[drop]] = 0.0
    return kept / kept.sum()


def ch12_top_p_torch(probabilities, p):
    import torch

    ranked, order = torch.sort(torch.as_tensor(probabilities), descending=True)
    keep = torch.cumsum(ranked, 0) - ranked < p
    kept = torch.zeros_like(ranked)
    kept[order[keep]] = ranked[keep]
    return kept / kept.sum()


def ch12_top_p_heap(probabilities, p):
    import heapq

    heap = [(-probability, token) for token, probability in enumerate(probabilities)]
    heapq.heapify(heap)
    kept, total = [0.0] * len(probabilities), 0.0
    while total < p:
        negative, token = heapq.heappop(heap)
        kept[token], total = -negative, total - negative
    return [probability / total for probability in kept]


def ch12_top_p_at_the_kth_probability(probabilities, p):
    """Keeps every token at least as probable as the last one of the nucleus."""
    ranked = np.sort(probabilities)[::-1]
    last = ranked[np.argmax(np.cumsum(ranked) >= p)]
    kept = np.where(probabilities >= last, probabilities, 0.0)
    return kept / kept.sum()


def ch12_next_token_as_one_row_or_many(logits, temperature):
    rows = np.atleast_2d(logits) / temperature  # (B, V)
    exponentials = np.exp(rows - rows.max(axis=1)[:, None])
    result = exponentials / exponentials.sum(axis=1)[:, None]
    return result[0] if np.ndim(logits) == 1 else result


def ch12_merge_from_the_right(ids, pair, new_id):
    merged, i = [], len(ids)
    while i > 0:
        if i >= 2 and (ids[i - 2], ids[i - 1]) == tuple(pair):
            merged.append(new_id)
            i -= 2
        else:
            merged.append(ids[i - 1])
            i -= 1
    return merged[::-1]


def ch12_merge_first_only(ids, pair, new_id):
    for i in range(len(ids) - 1):
        if (ids[i], ids[i + 1]) == tuple(pair):
            return [*ids[:i], new_id, *ids[i + 2 :]]
    return list(ids)


def ch12_apply_merges_by_rank_table(ids, merges, vocab_size):
    """Each merge everywhere, through a dict from pair to new id, scanning from the left."""
    new_ids = {tuple(pair): vocab_size + index for index, pair in enumerate(merges)}
    for pair, new_id in new_ids.items():
        ids = reference_merge(list(ids), pair, new_id)
    return np.array(ids, dtype=np.int32)


def ch12_apply_merges_recursive(ids, merges, vocab_size):
    if not merges:
        return list(ids)
    *earlier, last = merges
    return reference_merge(
        ch12_apply_merges_recursive(ids, earlier, vocab_size),
        tuple(last),
        vocab_size + len(earlier),
    )


def ch12_apply_as_text(padded):
    """str.replace over the ids written as text: unpadded, '1 1' is found inside '1 11';
    padded (' 1 1 '), one match takes the space the next needs."""

    def apply_merges(ids, merges, vocab_size):
        pad = " " if padded else ""
        text = pad + " ".join(map(str, ids)) + pad
        for index, (left, right) in enumerate(merges):
            text = text.replace(f"{pad}{left} {right}{pad}", f"{pad}{vocab_size + index}{pad}")
        return [int(token) for token in text.split()]

    return apply_merges


def ch12_apply_as_text_with_regex(ids, merges, vocab_size):
    """Correct on text: a regular expression that matches whole ids only, without taking
    the space that follows (a lookahead)."""
    import re

    text = " ".join(map(str, ids))
    for index, (left, right) in enumerate(merges):
        text = re.sub(rf"(?<!\S){left} {right}(?!\S)", str(vocab_size + index), text)
    return [int(token) for token in text.split()]


def ch12_train_bpe_most_common(ids, n_merges, vocab_size):
    from collections import Counter

    ids, merges = list(ids), []
    for index in range(n_merges):
        (pair, count), *_ = Counter(zip(ids, ids[1:], strict=False)).most_common(1) or [(None, 0)]
        if count < 2:
            break
        merges.append(pair)
        ids = reference_merge(ids, pair, vocab_size + index)
    return merges


@pytest.mark.parametrize(
    ("name", "answer", "fragments"),
    [
        (
            "check_next_token_probabilities",
            ch12_batch_maximum,
            [
                "(logits of shape (3, 3), temperature=1) returned NaN in row 0, 2",
                "one maximum was subtracted for the whole batch (2002)",
                "each row's own maximum",
            ],
        ),
        (
            "check_next_token_probabilities",
            ch12_row_mean_subtracted,
            ["shape (3, 3)", "e^1000 overflows", "largest logit"],
        ),
        (
            "check_next_token_probabilities",
            lambda x, t: ch12_softmax(np.asarray(x)),
            ["temperature=0.5)", "the temperature has no effect"],
        ),
        (
            "check_next_token_probabilities",
            ch12_batch_total,
            ["each row was divided by the total of the WHOLE batch"],
        ),
        (
            "check_top_p_filter",
            ch12_top_p_with(lambda running, ranked, p: running - ranked <= p),
            ["[0.125, 0.5, 0.125, 0.25], p=0.75): it keeps one token too many", "(<, not <=)"],
        ),
        (
            "check_top_p_filter",
            ch12_top_p_sorted(renorm=True),
            ["p=0.6): the right probabilities are kept", "SORTED"],
        ),
        (
            "check_top_p_filter",
            ch12_top_p_sorted(renorm=False),
            ["SORTED order", "not renormalised"],
        ),
        (
            "check_top_p_filter",
            ch12_top_p_gathered,
            ["result = kept[order], which shuffles them again"],
        ),
        (
            "check_top_p_filter",
            ch12_top_p_with(lambda running, ranked, p: running - ranked < p, renorm=False),
            ["the right tokens are kept", "divide the kept probabilities by their total"],
        ),
        (
            "check_apply_merges",
            ch12_apply_with(merge=ch12_merge_from_the_right),
            ["vocab_size=3): it scans each merge from the RIGHT", "(xx) x"],
        ),
        (
            "check_apply_merges",
            ch12_apply_with(first_id=4),
            ["the new ids are off by one: merge 0 made 4", "makes 3"],
        ),
        (
            "check_apply_merges",
            ch12_apply_with(first_id=2),
            ["the new ids are off by one: merge 0 made 2", "makes 3"],
        ),
        (
            "check_apply_merges",
            ch12_apply_with(merge=ch12_merge_first_only),
            ["only the FIRST occurrence"],
        ),
        (
            "check_apply_merges",
            lambda ids, merges, v: ch12_apply_merges(ids, merges, v)[::-1],
            ["stand for the right ids, but in another order"],
        ),
        (
            "check_apply_merges",
            ch12_apply_as_text(padded=True),
            ["[(1, 1)], vocab_size=3): after each merged pair it skips the next token"],
        ),
        (
            "check_apply_merges",
            ch12_apply_as_text(padded=False),
            ["[(1, 1)], vocab_size=12): it matches the ids as text", "'1 11'"],
        ),
        (
            "check_train_bpe",
            lambda ids, n, v: ch12_train_bpe(ids, n, v, stop_below=1),
            ["([0, 1, 2, 0, 1, 2], n_merges=4, vocab_size=3): it goes on merging pairs that"],
        ),
        (
            "check_train_bpe",
            lambda ids, n, v: ch12_train_bpe(ids, n, v, stop_below=3),
            ["it stopped while a pair still occurred twice"],
        ),
        (
            "check_train_bpe",
            lambda ids, n, v: ch12_train_bpe(ids, n, v, first_id=v + 1),
            ["the new ids are off by one: round 0 made 4", "round 0 makes 3"],
        ),
        (
            "check_train_bpe",
            lambda ids, n, v: ch12_train_bpe(ids, n, v, first_id=v - 1),
            ["the new ids are off by one: round 0 made 2"],
        ),
        (
            "check_train_bpe",
            lambda ids, n, v: ch12_train_bpe(ids, n, v, merge=ch12_merge_from_the_right),
            ["in the replacement, it scans from the RIGHT", "(xx) x"],
        ),
        # Third review: slips that the checkers used to call only 'off' or 'sums to …'.
        (
            "check_next_token_probabilities",
            lambda x, t: ch12_softmax(np.asarray(x) - t),
            ["temperature=0.5)", "subtracted from every logit, which the softmax ignores"],
        ),
        (
            "check_next_token_probabilities",
            lambda x, t: np.log(ch12_next_token_probabilities(x, t)),
            ["temperature=1): these are LOG-probabilities"],
        ),
        (
            "check_next_token_probabilities",
            lambda x, t: np.round(ch12_next_token_probabilities(x, t), 3),
            ["temperature=1) is rounded to 3 decimals"],
        ),
        (
            "check_top_p_filter",
            lambda probabilities, p: ch12_top_p_filter(probabilities, p) * 0.65 / p,
            ["p=0.6): the right tokens are kept, but divided by p = 0.6", "own total, 0.65"],
        ),
        (
            "check_top_p_filter",
            lambda probabilities, p: np.round(ch12_top_p_filter(probabilities, p), 2),
            ["p=0.6) is rounded to 2 decimals"],
        ),
    ],
)
def test_ch12_checkers_name_more_mistakes(name, answer, fragments):
    assert_ch12_mistake(getattr(exercises, name)(answer), *fragments)


@pytest.mark.parametrize(
    ("name", "answer"),
    [
        ("check_next_token_probabilities", ch12_next_token_row_by_row),
        ("check_next_token_probabilities", ch12_next_token_log_sum_exp),
        (  # the row's maximum subtracted before the division by T: a shift all the same
            "check_next_token_probabilities",
            lambda x, t: ch12_softmax((np.asarray(x) - np.max(x, axis=-1, keepdims=True)) / t),
        ),
        ("check_top_p_filter", ch12_top_p_searchsorted),
        ("check_top_p_filter", ch12_top_p_torch),
        ("check_top_p_filter", ch12_top_p_heap),
        ("check_top_p_filter", ch12_top_p_at_the_kth_probability),
        ("check_next_token_probabilities", ch12_next_token_as_one_row_or_many),
        ("check_top_p_filter", ch12_top_p_ascending),
        ("check_apply_merges", ch12_apply_merges_by_rank_table),
        ("check_apply_merges", ch12_apply_merges_recursive),
        ("check_apply_merges", ch12_apply_as_text_with_regex),
        ("check_train_bpe", ch12_train_bpe_most_common),
    ],
)
def test_ch12_checkers_accept_more_correct_answers(name, answer):
    feedback = getattr(exercises, name)(answer)
    assert feedback.passed, feedback.message


# Every checker of the chapter with a correct answer: test_exercises_registry.py runs them.
REFERENCES = dict(CH12_CHECKERS)
