"""Tests of the checkers of chapter 4 (selfattn_lib.exercises.ch04_queries_keys_values): each names
the mistake in typical wrong answers and accepts the usual correct alternatives. What every
checker promises is tested once, over REFERENCES, in test_exercises_registry.py."""

import numpy as np
import pytest

from selfattn_lib import embeddings, exercises

CH4_FEATURE = {name: i for i, name in enumerate(embeddings.FEATURES)}


def ch4_softmax(scores, axis=-1):
    exponentials = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return exponentials / exponentials.sum(axis=axis, keepdims=True)


def ch4_one_query_attention(x, i, w_q, w_k, w_v, divide_by=None):
    q, k, v = x[i] @ w_q, x @ w_k, x @ w_v  # (d_k,), (T, d_k), (T, d_v)
    scores = k @ q / (np.sqrt(len(q)) if divide_by is None else divide_by)
    weights = ch4_softmax(scores)
    return weights @ v, weights


def ch4_one_feature_head(query_feature, strength, key_feature="animal"):
    """Projections of d_k = 1: the query reads one feature, the key another."""
    w_q, w_k = np.zeros((8, 1)), np.zeros((8, 1))
    w_q[CH4_FEATURE[query_feature], 0] = strength
    w_k[CH4_FEATURE[key_feature], 0] = 1.0
    return w_q, w_k


def ch4_design_projections():
    return ch4_one_feature_head("animal", 60.0)  # only "it", not "because", has an animal


def ch4_cross_attention(x_q, x_kv, w_q, w_k, w_v, axis=-1):
    q, k, v = x_q @ w_q, x_kv @ w_k, x_kv @ w_v
    weights = ch4_softmax(q @ k.T / np.sqrt(q.shape[-1]), axis=axis)
    return weights @ v, weights


def ch4_stub(*args):
    raise NotImplementedError


CH4_CHECKERS = {
    "one_query_attention": (exercises.check_one_query_attention, ch4_one_query_attention),
    "design_projections": (exercises.check_design_projections, ch4_design_projections),
    "cross_attention": (exercises.check_cross_attention, ch4_cross_attention),
}


@pytest.mark.parametrize("name", CH4_CHECKERS)
def test_ch4_reference_solutions_pass_and_stubs_are_not_attempted(name):
    checker, solution = CH4_CHECKERS[name]
    feedback = checker(solution)
    assert feedback.passed and feedback.attempted, feedback.message
    stub = checker(ch4_stub)
    assert not stub.passed and not stub.attempted
    assert "raise NotImplementedError" in stub.message


def assert_ch4_mistake(feedback, *fragments):
    assert feedback.attempted and not feedback.passed, feedback
    for fragment in fragments:
        assert fragment in feedback.message, feedback.message


def test_ch4_one_query_attention_names_the_scaling_mistakes():
    def unscaled(x, i, w_q, w_k, w_v):
        return ch4_one_query_attention(x, i, w_q, w_k, w_v, divide_by=1.0)

    def by_d_k(x, i, w_q, w_k, w_v):
        return ch4_one_query_attention(x, i, w_q, w_k, w_v, divide_by=w_q.shape[1])

    def by_sqrt_d(x, i, w_q, w_k, w_v):
        return ch4_one_query_attention(x, i, w_q, w_k, w_v, divide_by=np.sqrt(x.shape[1]))

    check = exercises.check_one_query_attention
    assert_ch4_mistake(check(unscaled), "unscaled(x, 0, w_q, w_k, w_v)", "did not divide")
    assert_ch4_mistake(check(by_d_k), "divided the scores by d_k = 3 instead of √d_k")
    assert_ch4_mistake(check(by_sqrt_d), "√D = √4 (the token size)")


def test_ch4_one_query_attention_names_order_and_role_mistakes():
    def w_times_x(x, i, w_q, w_k, w_v):
        q, k, v = w_q @ x[i], w_k @ x, w_v @ x
        weights = ch4_softmax(k @ q / np.sqrt(len(q)))
        return weights @ v, weights

    def swapped(x, i, w_q, w_k, w_v):
        return ch4_one_query_attention(x, i, w_k, w_q, w_v)

    def unweighted(x, i, w_q, w_k, w_v):
        _, weights = ch4_one_query_attention(x, i, w_q, w_k, w_v)
        return (x @ w_v).sum(axis=0), weights

    check = exercises.check_one_query_attention
    assert_ch4_mistake(check(w_times_x), "ValueError", "the projection is x @ w")
    assert_ch4_mistake(check(swapped), "use W_K for the query and W_Q for the keys")
    assert_ch4_mistake(check(unweighted), "ignores the weights")
    assert_ch4_mistake(check(lambda *a: 3), "must return a pair (output, weights)")


def test_ch4_design_projections_names_shape_and_strength_mistakes():
    check = exercises.check_design_projections
    transposed = check(lambda: (np.ones((1, 8)), np.ones((1, 8))))
    assert_ch4_mistake(transposed, "shape (1, 8) (it looks transposed)", "needs 8 rows")
    unequal = check(lambda: (np.ones((8, 3)), np.ones((8, 2))))
    assert_ch4_mistake(unequal, "w_q has 3 columns and w_k has 2", "same length d_k")
    too_weak = check(lambda: ch4_one_feature_head("animal", 50.0))
    assert_ch4_mistake(too_weak, "'cat' gets 0.893, not 0.9", "'it' attends most to 'cat'")
    identity = check(lambda: (np.eye(8), np.eye(8)))
    assert_ch4_mistake(identity, "'cat' gets 0.136, not 0.9")


def test_ch4_design_projections_names_a_query_that_it_and_because_share():
    check = exercises.check_design_projections
    # The chapter's head, made sharp enough for "it": "because" asks exactly the same.
    shared = check(lambda: ch4_one_feature_head("grammar", 80.0))
    assert_ch4_mistake(shared, "'it' and 'because' get the same query", "feature by feature")
    mixed = ch4_one_feature_head("animal", 60.0)
    mixed[0][CH4_FEATURE["grammar"], 0] = 5.0  # grammar still makes "because" ask for "cat"
    leaky = check(lambda: mixed)
    assert_ch4_mistake(leaky, "'because' puts 0.646 there", "'it' has and 'because' has not")


def test_ch4_cross_attention_names_axis_and_source_mistakes():
    def self_attention(x_q, x_kv, w_q, w_k, w_v):
        return ch4_cross_attention(x_q, x_q, w_q, w_k, w_v)

    def wrong_axis(x_q, x_kv, w_q, w_k, w_v):
        return ch4_cross_attention(x_q, x_kv, w_q, w_k, w_v, axis=0)

    def transposed(x_q, x_kv, w_q, w_k, w_v):
        output, weights = ch4_cross_attention(x_q, x_kv, w_q, w_k, w_v)
        return output, weights.T

    check = exercises.check_cross_attention
    assert_ch4_mistake(check(self_attention), "= (T_q, T_q)", "must come from x_kv")
    assert_ch4_mistake(check(wrong_axis), "columns summing to 1", "axis=-1")
    assert_ch4_mistake(check(transposed), "= (T_k, T_q)", "one row per QUERY")


# Every checker of the chapter with a correct answer: test_exercises_registry.py runs them.
REFERENCES = {
    **{checker.__name__: solution for checker, solution in CH4_CHECKERS.values()},
}


def ch4_every_query(x, i, w_q, w_k, w_v, transposed=False):
    """Right, but projects every token into a query to use one of them."""
    q = (w_q.T @ x.T).T if transposed else x @ w_q  # (T, d_k): T queries for one
    k, v = x @ w_k, x @ w_v
    weights = ch4_softmax(k @ q[i] / np.sqrt(q.shape[-1]))
    return weights @ v, weights


def test_ch4_one_query_counts_the_projections_it_makes():
    feedback = exercises.check_one_query_attention(ch4_every_query)
    assert feedback.attempted and not feedback.passed
    assert "made 60 multiplications with w_q" in feedback.message, feedback.message
    assert "x[2] @ w_q" in feedback.message
    transposed = exercises.check_one_query_attention(
        lambda *args: ch4_every_query(*args, transposed=True)
    )
    assert "made 60 multiplications with w_q" in transposed.message, transposed.message


def test_ch4_cross_attention_with_a_library_softmax_breaks_the_prompts_rule():
    from selfattn_lib.softmax import softmax

    def with_library(x_q, x_kv, w_q, w_k, w_v):
        q, k, v = x_q @ w_q, x_kv @ w_k, x_kv @ w_v
        weights = softmax(q @ k.T / np.sqrt(q.shape[-1]), axis=-1)
        return weights @ v, weights

    feedback = exercises.check_cross_attention(with_library)
    assert feedback.attempted and not feedback.passed
    assert "but it calls `selfattn_lib.softmax.softmax`" in feedback.message, feedback.message
