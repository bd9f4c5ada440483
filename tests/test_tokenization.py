"""Tests of selfattn_lib.tokenization: the character tokenizer, and byte-pair encoding
compared with a straightforward pure-Python implementation (minbpe's rules)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import PROPERTY_SETTINGS

from selfattn_lib.tokenization import (
    CharTokenizer,
    apply_merges,
    expand,
    merge_pair,
    merged_token_strings,
    train_bpe,
)

pytestmark = pytest.mark.filterwarnings("error")


# --- a pure-Python reference, written the plain way ----------------------------------------


def reference_merge(ids: list[int], pair: tuple[int, int], new_id: int) -> list[int]:
    """Replace ``pair`` by ``new_id``, scanning left to right and skipping merged tokens."""
    merged, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
            merged.append(new_id)
            i += 2
        else:
            merged.append(ids[i])
            i += 1
    return merged


def reference_train(ids, n_merges, vocab_size):
    """(merges, the final sequence, the number of replacements made in each round)."""
    ids, merges, replacements = list(ids), [], []
    for index in range(n_merges):
        counts: dict[tuple[int, int], int] = {}
        # A dict keeps its keys in the order of their first occurrence.
        for pair in zip(ids, ids[1:], strict=False):
            counts[pair] = counts.get(pair, 0) + 1
        if not counts or max(counts.values()) < 2:
            break
        pair = max(counts, key=counts.get)  # the first of equal counts: first occurrence
        merged = reference_merge(ids, pair, vocab_size + index)
        replacements.append(len(ids) - len(merged))
        ids = merged
        merges.append(pair)
    return merges, ids, replacements


def reference_apply(ids, merges, vocab_size):
    ids = list(ids)
    for index, pair in enumerate(merges):
        ids = reference_merge(ids, tuple(pair), vocab_size + index)
    return ids


def reference_expand(ids, merges, vocab_size):
    def base_ids(token):
        if token < vocab_size:
            return [token]
        left, right = merges[token - vocab_size]
        return base_ids(left) + base_ids(right)

    return [base for token in ids for base in base_ids(token)]


# --- strategies ----------------------------------------------------------------------------


@st.composite
def sequences(draw: st.DrawFn, max_size: int = 60) -> tuple[list[int], int]:
    """A sequence over a small alphabet, so that pairs and runs repeat; ``vocab_size`` may be
    far larger than the ids used (which makes train_bpe count pairs by sorting)."""
    n_used = draw(st.integers(1, 5))
    ids = draw(st.lists(st.integers(0, n_used - 1), max_size=max_size))
    vocab_size = n_used + draw(st.sampled_from([0, 3, 5000]))
    return ids, vocab_size


@st.composite
def well_formed_merges(draw: st.DrawFn, vocab_size: int) -> list[tuple[int, int]]:
    """Any merges a training could have made: merge i joins ids that exist before it."""
    n_merges = draw(st.integers(0, 8))
    return [
        (draw(st.integers(0, vocab_size + i - 1)), draw(st.integers(0, vocab_size + i - 1)))
        for i in range(n_merges)
    ]


# --- training ------------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(sequence=sequences(), n_merges=st.integers(1, 10))
def test_train_bpe_learns_the_merges_of_the_reference(sequence, n_merges):
    ids, vocab_size = sequence
    merges = train_bpe(ids, n_merges, vocab_size=vocab_size)
    expected, _, _ = reference_train(ids, n_merges, vocab_size)
    assert merges == expected
    assert all(type(a) is int and type(b) is int for a, b in merges)


@PROPERTY_SETTINGS
@given(sequence=sequences(), n_merges=st.integers(1, 10))
def test_apply_merges_reproduces_training_and_shortens_by_the_replacements(sequence, n_merges):
    ids, vocab_size = sequence
    merges = train_bpe(ids, n_merges, vocab_size=vocab_size)
    _, trained_sequence, replacements = reference_train(ids, n_merges, vocab_size)
    encoded = apply_merges(ids, merges, vocab_size=vocab_size)
    np.testing.assert_array_equal(encoded, np.array(trained_sequence, dtype=np.int64))
    assert encoded.dtype == np.int64
    assert len(ids) - len(encoded) == sum(replacements)
    assert all(count >= 1 for count in replacements)  # each learned merge shortened the text


def test_the_example_of_minbpe_and_wikipedia():
    text = "aaabdaaabac"
    tokenizer = CharTokenizer.from_text(text)  # a, b, c, d = 0, 1, 2, 3
    ids = tokenizer.encode(text)
    merges = train_bpe(ids, 5, vocab_size=4)
    # aa → 4, then (aa)a → 5 (it occurs before ab, with the same count), then 5b → 6; then
    # no pair occurs twice, so training stops after 3 of the 5 merges.
    assert merges == [(0, 0), (4, 0), (5, 1)]
    np.testing.assert_array_equal(apply_merges(ids, merges, vocab_size=4), [6, 3, 6, 0, 2])
    assert merged_token_strings(merges, tokenizer) == ["aa", "aaa", "aaab"]


def test_ties_go_to_the_pair_that_occurs_first_not_the_smallest():
    # (2, 3), (3, 0) and (0, 1) all occur twice; (2, 3) comes first.
    assert train_bpe([2, 3, 0, 1, 2, 3, 0, 1], 1, vocab_size=4) == [(2, 3)]


def test_overlapping_pairs_are_counted_and_replaced_left_to_right():
    assert train_bpe([0, 0, 0], 1, vocab_size=1) == [(0, 0)]  # (0, 0) occurs twice
    np.testing.assert_array_equal(apply_merges([0, 0, 0], [(0, 0)], vocab_size=1), [1, 0])
    np.testing.assert_array_equal(apply_merges([0] * 4, [(0, 0)], vocab_size=1), [1, 1])
    np.testing.assert_array_equal(
        apply_merges([0, 0, 0, 1, 0, 0, 0, 0, 0], [(0, 0)], vocab_size=2), [2, 0, 1, 2, 2, 0]
    )


def test_training_stops_when_no_pair_occurs_twice():
    assert train_bpe([0, 1, 2, 3], 3, vocab_size=4) == []
    assert train_bpe([0, 1, 0, 1], 3, vocab_size=2) == [(0, 1)]  # then 2 2 holds one pair
    assert train_bpe([], 2, vocab_size=3) == [] and train_bpe([1], 2, vocab_size=3) == []


def test_training_on_a_real_text_learns_its_words():
    text = "the cat and the hat and the bat sat on the mat. " * 20
    tokenizer = CharTokenizer.from_text(text)
    ids = tokenizer.encode(text)
    merges = train_bpe(ids, 12, vocab_size=len(tokenizer))
    strings = merged_token_strings(merges, tokenizer)
    # "at" occurs 5 times a line (cat, hat, bat, sat, mat); "th", "he", "e " and " t" occur 4
    # times, and "th" first; then "the".
    assert strings[:3] == ["at", "th", "the"]
    encoded = apply_merges(ids, merges, vocab_size=len(tokenizer))
    assert len(encoded) < len(ids) / 2
    assert tokenizer.decode(expand(encoded, merges, vocab_size=len(tokenizer))) == text


# --- encoding and decoding -----------------------------------------------------------------


@PROPERTY_SETTINGS
@given(sequence=sequences(), data=st.data())
def test_apply_merges_equals_the_reference_for_any_merges(sequence, data):
    ids, vocab_size = sequence
    merges = data.draw(well_formed_merges(vocab_size))
    encoded = apply_merges(ids, merges, vocab_size=vocab_size)
    np.testing.assert_array_equal(encoded, reference_apply(ids, merges, vocab_size))
    assert len(encoded) <= len(ids)  # never longer
    for pair in merges:  # no pair of a merge is left
        assert not any((a, b) == pair for a, b in zip(encoded[:-1], encoded[1:], strict=True))


@PROPERTY_SETTINGS
@given(sequence=sequences(), other=sequences(), n_merges=st.integers(1, 10), data=st.data())
def test_expand_undoes_apply_merges(sequence, other, n_merges, data):
    ids, vocab_size = sequence
    # Merges learned on one sequence, applied to another over the same base ids.
    other_ids = [token % vocab_size for token in other[0]]
    merges = train_bpe(other_ids, n_merges, vocab_size=vocab_size)
    encoded = apply_merges(ids, merges, vocab_size=vocab_size)
    np.testing.assert_array_equal(expand(encoded, merges, vocab_size=vocab_size), ids)
    any_merges = data.draw(well_formed_merges(vocab_size))
    encoded = apply_merges(ids, any_merges, vocab_size=vocab_size)
    expanded = expand(encoded, any_merges, vocab_size=vocab_size)
    np.testing.assert_array_equal(expanded, reference_expand(encoded, any_merges, vocab_size))
    np.testing.assert_array_equal(expanded, ids)


@PROPERTY_SETTINGS
@given(sequence=sequences(), data=st.data())
def test_merge_pair_is_one_step_of_the_reference(sequence, data):
    ids, vocab_size = sequence
    pair = (data.draw(st.integers(0, vocab_size)), data.draw(st.integers(0, vocab_size)))
    new_id = data.draw(st.integers(0, 2 * vocab_size))  # any id, even one already in use
    merged = merge_pair(ids, pair, new_id)
    assert merged.dtype == np.int64
    np.testing.assert_array_equal(merged, reference_merge(ids, pair, new_id))


def test_merge_pair_merges_one_in_two_of_overlapping_occurrences():
    np.testing.assert_array_equal(merge_pair([0, 0, 0, 1, 0, 0], (0, 0), 2), [2, 0, 1, 2])
    np.testing.assert_array_equal(merge_pair([0] * 5, [0, 0], 7), [7, 7, 0])
    np.testing.assert_array_equal(merge_pair([1, 2, 1, 2], (2, 1), 9), [1, 9, 2])


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        (([0, 1], (0,), 2), TypeError, r"pair must be a pair of token ids \(left, right\)"),
        (([0, 1], (0, 1.0), 2), TypeError, r"pair\[1\] must be a token id"),
        (([0, 1], (0, -1), 2), ValueError, r"pair\[1\] must be a token id .* got -1"),
        (([0, 1], (0, 1), True), TypeError, "new_id must be a token id"),
        (([0, -1], (0, 1), 2), ValueError, r"ids must be non-negative: ids\[1\] is -1"),
    ],
)
def test_merge_pair_rejects_bad_arguments(arguments, error, message):
    with pytest.raises(error, match=message):
        merge_pair(*arguments)


def test_expand_accepts_any_mix_of_base_and_merged_ids():
    merges = [(0, 1), (2, 2), (3, 4)]  # ab → 3, cc → 4, (ab)(cc) → 5
    np.testing.assert_array_equal(
        expand([5, 0, 4, 3], merges, vocab_size=3), [0, 1, 2, 2, 0, 2, 2, 0, 1]
    )


def test_no_merges_change_nothing_and_empty_sequences_stay_empty():
    np.testing.assert_array_equal(apply_merges([2, 0, 1], [], vocab_size=3), [2, 0, 1])
    assert apply_merges([], [(0, 1)], vocab_size=2).shape == (0,)
    assert expand([], [(0, 1)], vocab_size=2).dtype == np.int64


def test_merged_token_strings_spell_the_expanded_tokens():
    text = "the then there these they thee"
    tokenizer = CharTokenizer.from_text(text)
    merges = train_bpe(tokenizer.encode(text), 6, vocab_size=len(tokenizer))
    strings = merged_token_strings(merges, tokenizer)
    assert len(strings) == len(merges) and strings[0] == "th"
    for index, string in enumerate(strings):
        token = [len(tokenizer) + index]
        assert tokenizer.decode(expand(token, merges, vocab_size=len(tokenizer))) == string


def test_the_arguments_are_not_written_to():
    ids = np.array([0, 0, 0, 1, 0, 1])
    merges = np.array([[0, 1], [0, 0]])
    apply_merges(ids, merges, vocab_size=2)
    train_bpe(ids, 2, vocab_size=2)
    expand(np.array([3, 2]), merges, vocab_size=2)
    np.testing.assert_array_equal(ids, [0, 0, 0, 1, 0, 1])
    np.testing.assert_array_equal(merges, [[0, 1], [0, 0]])


# --- the character tokenizer ---------------------------------------------------------------


@PROPERTY_SETTINGS
@given(text=st.text(min_size=1, max_size=40))
def test_characters_round_trip_and_the_vocabulary_is_sorted(text):
    tokenizer = CharTokenizer.from_text(text)
    assert tokenizer.characters == tuple(sorted(set(text))) and len(tokenizer) == len(set(text))
    ids = tokenizer.encode(text)
    assert ids.dtype == np.int64 and ids.shape == (len(text),)
    assert [tokenizer.characters[i] for i in ids] == list(text)
    assert tokenizer.decode(ids) == text


def test_a_tokenizer_in_any_order_of_characters():
    tokenizer = CharTokenizer(("z", "a", "😀"))
    np.testing.assert_array_equal(tokenizer.encode("a😀za"), [1, 2, 0, 1])
    assert tokenizer.decode(np.array([2, 0])) == "😀z"
    assert tokenizer == CharTokenizer(["z", "a", "😀"]) != CharTokenizer(("a", "z", "😀"))
    assert tokenizer.encode("").shape == (0,) and tokenizer.decode([]) == ""


def test_an_unknown_character_is_named():
    tokenizer = CharTokenizer.from_text("abc")
    with pytest.raises(ValueError, match=r"not in the vocabulary: 'A', 'z'"):
        tokenizer.encode("abzcA")


@pytest.mark.parametrize(
    ("characters", "error", "message"),
    [
        ("abc", TypeError, "characters must be a tuple of single characters"),
        (("a", 1), TypeError, "characters must hold strings, got 1"),
        (("a", "bc"), ValueError, r"single characters, got 'bc' \(length 2\)"),
        (("a", "b", "a"), ValueError, r"distinct, got \['a'\] more than once"),
        ((), ValueError, "at least one character"),
    ],
)
def test_bad_characters_are_rejected(characters, error, message):
    with pytest.raises(error, match=message):
        CharTokenizer(characters)


def test_bad_text_and_ids_for_the_character_tokenizer():
    tokenizer = CharTokenizer.from_text("abc")
    with pytest.raises(TypeError, match="text must be a string"):
        CharTokenizer.from_text(["a", "b"])
    with pytest.raises(ValueError, match="text must hold at least one character"):
        CharTokenizer.from_text("")
    with pytest.raises(TypeError, match="text must be a string"):
        tokenizer.encode(b"abc")
    with pytest.raises(ValueError, match=r"ids must be ids in 0 … 2: ids\[1\] is 3"):
        tokenizer.decode([0, 3])
    with pytest.raises(TypeError, match="ids must be integer token ids"):
        tokenizer.decode([0.0, 1.0])


# --- bad input for BPE ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ids", "error", "message"),
    [
        ([0.0, 1.0], TypeError, "ids must be integer token ids, got dtype float64"),
        ([True, False], TypeError, "ids must be integer token ids, got dtype bool"),
        ("abc", TypeError, "ids must be integer token ids"),
        ([[0, 1]], ValueError, r"ids must be one sequence of token ids, shape \(T,\)"),
        ([0, 1, 3], ValueError, r"ids must be ids in 0 … 2: ids\[2\] is 3"),
        ([0, -1], ValueError, r"ids\[1\] is -1"),
    ],
)
def test_bad_ids_are_rejected(ids, error, message):
    with pytest.raises(error, match=message):
        train_bpe(ids, 2, vocab_size=3)
    with pytest.raises(error, match=message):
        apply_merges(ids, [(0, 1)], vocab_size=3)


@pytest.mark.parametrize(
    ("keywords", "error", "message"),
    [
        ({"n_merges": 0}, ValueError, "n_merges must be a positive integer, got 0"),
        ({"n_merges": 2.0}, TypeError, "n_merges must be a positive integer"),
        ({"vocab_size": 0}, ValueError, "vocab_size must be a positive integer"),
        ({"vocab_size": "3"}, TypeError, "vocab_size must be a positive integer"),
    ],
)
def test_bad_sizes_are_rejected(keywords, error, message):
    with pytest.raises(error, match=message):
        train_bpe(**{"ids": [0, 1], "n_merges": 2, "vocab_size": 3, **keywords})


@pytest.mark.parametrize(
    ("merges", "error", "message"),
    [
        ([(0, 1, 2)], ValueError, r"\(left, right\) pairs, shape \(n_merges, 2\), got shape"),
        ([0, 1], ValueError, r"shape \(n_merges, 2\), got shape \(2,\)"),
        ([(0.0, 1.0)], TypeError, "merges must be pairs of integer token ids"),
        ([(0, 1), (3, 4)], ValueError, r"merges\[1\] is \(3, 4\), .* only the ids 0 … 3 exist"),
        ([(0, -1)], ValueError, r"merges\[0\] is \(0, -1\)"),
    ],
)
def test_bad_merges_are_rejected(merges, error, message):
    for function in (apply_merges, expand):
        with pytest.raises(error, match=message):
            function([0, 1], merges, vocab_size=3)


def test_expand_rejects_ids_that_no_merge_made():
    with pytest.raises(ValueError, match=r"ids must be ids in 0 … 3: ids\[0\] is 4"):
        expand([4], [(0, 1)], vocab_size=3)


def test_merged_token_strings_needs_a_char_tokenizer():
    with pytest.raises(TypeError, match="tokenizer must be a CharTokenizer, got tuple"):
        merged_token_strings([(0, 1)], ("a", "b"))
    with pytest.raises(ValueError, match=r"merges\[0\] is \(0, 2\)"):
        merged_token_strings([(0, 2)], CharTokenizer(("a", "b")))
