"""Tests of the checkers of chapter 3 (selfattn_lib.exercises.ch03_self_attention): each names
the mistake in typical wrong answers and accepts the usual correct alternatives. What every
checker promises is tested once, over REFERENCES, in test_exercises_registry.py."""

import numpy as np

from selfattn_lib import exercises


def ch3_stable_softmax(scores, axis=-1):
    exponentials = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return exponentials / exponentials.sum(axis=axis, keepdims=True)


def ch3_spotlight_output(x, position):
    return ch3_stable_softmax(x @ x[position]) @ x


def ch3_batched_self_attention(x):
    weights = ch3_stable_softmax(x @ x.transpose(0, 2, 1), axis=-1)
    return weights @ x, weights


def ch3_attends_most_to_itself(x):
    scores = x @ x.T
    return np.diag(scores) >= scores.max(axis=-1)


def ch3_stub(*args):
    raise NotImplementedError


CH3_CHECKERS = {
    "spotlight_output": (exercises.check_spotlight_output, ch3_spotlight_output),
    "batched_self_attention": (
        exercises.check_batched_self_attention,
        ch3_batched_self_attention,
    ),
    "attends_most_to_itself": (
        exercises.check_attends_most_to_itself,
        ch3_attends_most_to_itself,
    ),
}


def assert_ch3_mistake(feedback, *fragments):
    assert feedback.attempted and not feedback.passed, feedback
    for fragment in fragments:
        assert fragment in feedback.message, feedback.message


def test_ch3_spotlight_output_names_typical_mistakes():
    checker = exercises.check_spotlight_output

    def my_output(x, position):
        return None

    assert_ch3_mistake(checker(my_output), "my_output(x, 0)", "forget the `return`")
    assert_ch3_mistake(checker(lambda x, p: (x @ x[p]) @ x), "raw scores as weights")
    assert_ch3_mistake(checker(lambda x, p: np.exp(x @ x[p]) @ x), "without dividing")
    assert_ch3_mistake(
        checker(lambda x, p: ch3_stable_softmax(x @ x[p]) @ (x @ x[p])),
        "returned a single number",
        "not of their scores",
    )
    assert_ch3_mistake(
        checker(lambda x, p: ch3_stable_softmax(x @ x[p])), "returned 5 numbers", "weights"
    )
    assert_ch3_mistake(checker(lambda x, p: x.mean(axis=0)), "plain average")
    assert_ch3_mistake(checker(lambda x, p: x[p] + 0.0), "own vector")

    def naive(x, position):
        weights = np.exp(x @ x[position])
        return (weights / weights.sum()) @ x

    assert_ch3_mistake(checker(naive), "overflows", "Subtract the largest score")


def test_ch3_batched_self_attention_names_typical_mistakes():
    checker = exercises.check_batched_self_attention

    def wrong_axis(x):
        weights = ch3_stable_softmax(x @ x.transpose(0, 2, 1), axis=-2)
        return weights @ x, weights

    assert_ch3_mistake(checker(wrong_axis), "COLUMNS", "axis=-1")

    def full_transpose(x):
        weights = ch3_stable_softmax(x @ x.T)
        return weights @ x, weights

    assert_ch3_mistake(checker(full_transpose), "reverses ALL the axes", "swapaxes")

    def no_keepdims(x):
        exponentials = np.exp(x @ x.transpose(0, 2, 1))
        weights = exponentials / exponentials.sum()
        return weights @ x, weights

    assert_ch3_mistake(checker(no_keepdims), "do not sum to one")

    def transposed_weights(x):
        _, weights = ch3_batched_self_attention(x)
        return weights.transpose(0, 2, 1) @ x, weights

    assert_ch3_mistake(checker(transposed_weights), "transposed weights")
    assert_ch3_mistake(checker(lambda x: ch3_batched_self_attention(x)[0]), "pair (output")

    def naive(x):
        exponentials = np.exp(x @ x.transpose(0, 2, 1))
        weights = exponentials / exponentials.sum(axis=-1, keepdims=True)
        return weights @ x, weights

    assert_ch3_mistake(checker(naive), "overflow", "maximum")


def test_ch3_attends_most_to_itself_names_typical_mistakes():
    checker = exercises.check_attends_most_to_itself

    def strict(x):
        scores = x @ x.T
        return np.diag(scores) > scores.max(axis=-1)

    assert_ch3_mistake(checker(strict), "no token attends most to itself", ">=")

    def by_argmax(x):
        return np.argmax(x @ x.T, axis=-1) == np.arange(len(x))

    assert_ch3_mistake(checker(by_argmax), "positions [4]", "argmax picks only the FIRST")

    def by_column(x):
        weights = ch3_stable_softmax(x @ x.T)
        return np.diag(weights) >= weights.max(axis=0)

    assert_ch3_mistake(checker(by_column), "COLUMN")
    assert_ch3_mistake(
        checker(lambda x: ch3_attends_most_to_itself(x).astype(int)), "expected booleans"
    )
    assert_ch3_mistake(checker(lambda x: np.ones(len(x), dtype=bool)), "positions [0, 3]")


def test_ch3_attends_most_to_itself_tolerates_rounding_of_the_own_score():
    # The own score computed a second way can lose to itself by one rounding step.
    def two_ways(x):
        return (x @ x.T <= np.einsum("td,td->t", x, x)[:, None]).all(axis=-1)

    assert exercises.check_attends_most_to_itself(two_ways).passed


def test_ch3_batched_self_attention_accepts_a_list_pair():
    def as_list(x):
        output, weights = ch3_batched_self_attention(x)
        return [output, weights]

    assert exercises.check_batched_self_attention(as_list).passed


def ch3_unshuffle(shuffled, order):
    return shuffled[np.argsort(order)]


def test_ch3_unshuffle_passes_both_inverses_and_names_typical_mistakes():
    checker = exercises.check_unshuffle
    assert checker(ch3_unshuffle).passed

    def by_assignment(shuffled, order):
        original = np.empty_like(shuffled)
        original[order] = shuffled
        return original

    assert checker(by_assignment).passed
    assert not checker(ch3_stub).attempted
    assert_ch3_mistake(checker(lambda s, o: s[o]), "a second time", "np.argsort(order)")
    assert_ch3_mistake(checker(lambda s, o: s + 0.0), "shuffled rows unchanged")
    assert_ch3_mistake(checker(lambda s, o: s[:3]), "returned shape (3, 3), expected (5, 3)")

    def my_unshuffle(shuffled, order):
        return None

    assert_ch3_mistake(checker(my_unshuffle), "my_unshuffle(shuffled", "forget the `return`")


# Every checker of the chapter with a correct answer: test_exercises_registry.py runs them.
REFERENCES = {
    **{checker.__name__: solution for checker, solution in CH3_CHECKERS.values()},
    "check_unshuffle": ch3_unshuffle,
}


def test_ch3_batched_self_attention_rejects_a_loop_over_the_batch():
    def one_at_a_time(x):
        pairs = [ch3_batched_self_attention(sequence[None]) for sequence in x]
        return tuple(np.concatenate(parts) for parts in zip(*pairs, strict=True))

    assert_ch3_mistake(
        exercises.check_batched_self_attention(one_at_a_time), "a loop runs once per item"
    )


def test_ch3_spotlight_output_with_the_library_softmax_breaks_the_prompts_rule():
    from selfattn_lib.softmax import softmax

    feedback = exercises.check_spotlight_output(lambda x, position: softmax(x @ x[position]) @ x)
    assert feedback.attempted and not feedback.passed
    assert "gives the right result, but it calls `selfattn_lib.softmax.softmax`" in feedback.message
