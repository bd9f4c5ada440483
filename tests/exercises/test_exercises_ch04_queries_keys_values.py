"""Tests of the checkers of chapter 4 (selfattn_lib.exercises.ch04_queries_keys_values): each names
the mistake in typical wrong answers and accepts the usual correct alternatives. What every
checker promises is tested once, over REFERENCES, in test_exercises_registry.py.

For every checker, the tables below hold plausible wrong answers written from the exercise's
prompt alone (each with the words of the feedback that name its cause) and correct variants
(loops, einsum, other libraries, other dtypes), which must pass."""

import numpy as np
import pytest

from selfattn_lib import embeddings, exercises

CH4_FEATURE = {name: i for i, name in enumerate(embeddings.FEATURES)}


def ch4_softmax(scores, axis=-1):
    exponentials = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return exponentials / exponentials.sum(axis=axis, keepdims=True)


def ch4_one_query_attention(x, i, w_q, w_k, w_v, divide_by=None):
    q, k, v = x[i] @ w_q, x @ w_k, x @ w_v  # (D_k,), (T, D_k), (T, D_v)
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


# --- Exercise 1: one query, from tokens to output ---


def ch4_every_query(x, i, w_q, w_k, w_v, transposed=False):
    """Right, but projects every token into a query to use one of them."""
    q = (w_q.T @ x.T).T if transposed else x @ w_q  # (T, D_k): T queries for one
    k, v = x @ w_k, x @ w_v
    weights = ch4_softmax(k @ q[i] / np.sqrt(q.shape[-1]))
    return weights @ v, weights


def ch4_one_query_with(weights_of, output_of=None):
    """A one_query_attention whose weights are ``weights_of(q, k, x, i)`` (q: all queries) and
    whose output is ``output_of(weights, x, k, v)`` (the weighted values by default)."""

    def one_query_attention(x, i, w_q, w_k, w_v):
        q_i, k, v = x[i] @ w_q, x @ w_k, x @ w_v
        weights = weights_of(q_i, k, x, i, w_q)
        output = weights @ v if output_of is None else output_of(weights, x, k, v)
        return output, weights

    return one_query_attention


def ch4_scaled_by(divide_by):
    return ch4_one_query_with(lambda q, k, x, i, w_q: ch4_softmax(k @ q / divide_by(x, q)))


def ch4_column_softmax(q_i, k, x, i, w_q):
    scores = (x @ w_q) @ k.T / np.sqrt(k.shape[1])  # (T, T)
    return ch4_softmax(scores, axis=0)[:, i]


def ch4_without_self(q_i, k, x, i, w_q):
    scores = k @ q_i / np.sqrt(len(q_i))
    scores[i] = -np.inf
    return ch4_softmax(scores)


def ch4_swapped_everywhere(x, i, w_q, w_k, w_v):
    q, k, v = x @ w_k, x @ w_q, x @ w_v  # the whole matrix, roles swapped
    weights = ch4_softmax(q @ k.T / np.sqrt(q.shape[1]))[i]
    return weights @ v, weights


def ch4_w_times_x(x, i, w_q, w_k, w_v):
    q, k, v = w_q @ x[i], w_k @ x, w_v @ x
    weights = ch4_softmax(k @ q / np.sqrt(len(q)))
    return weights @ v, weights


def ch4_project_all_then_one(x, i, w_q, w_k, w_v, project):
    """Right, but ``project(w_q)`` makes every token's query to use one of them."""
    q = project(w_q)[i]  # (D_k,), one row of (T, D_k)
    weights = ch4_softmax((x @ w_k) @ q / np.sqrt(len(q)))
    return weights @ (x @ w_v), weights


def ch4_query_twice(x, i, w_q, w_k, w_v):
    d_k = len(x[i] @ w_q)  # the query made once to read its size ...
    q = x[i] @ w_q  # ... and again to use it
    weights = ch4_softmax((x @ w_k) @ q / np.sqrt(d_k))
    return weights @ (x @ w_v), weights


def ch4_w_q_scaled_in_place(x, i, w_q, w_k, w_v):
    w_q /= np.sqrt(w_q.shape[1])  # the division by √d_k, done once on the projection
    return ch4_one_query_attention(x, i, w_q, w_k, w_v, divide_by=1.0)


CH4_ONE_QUERY_MISTAKES = {
    "every query projected": (ch4_every_query, ("counts 60 multiplications with w_q",)),
    "no division by √d_k": (ch4_scaled_by(lambda x, q: 1.0), ("did not divide",)),
    "divided by d_k": (
        ch4_scaled_by(lambda x, q: len(q)),
        ("divided the dot products by d_k = 3 instead of √d_k",),
    ),
    "divided by √D": (
        ch4_scaled_by(lambda x, q: np.sqrt(x.shape[1])),
        ("√D = √4 (the tokens' dimension)",),
    ),
    "divided by √T": (ch4_scaled_by(lambda x, q: np.sqrt(len(x))), ("√T (the number of tokens)",)),
    "w_q and w_k swapped": (
        lambda x, i, w_q, w_k, w_v: ch4_one_query_attention(x, i, w_k, w_q, w_v),
        ("use W_K for the query and W_Q for the keys",),
    ),
    "softmax down a column of the whole matrix": (
        ch4_one_query_with(ch4_column_softmax),
        ("softmax ran down column", "over the queries, axis 0"),
    ),
    "w_q and w_k swapped in the whole matrix": (
        ch4_swapped_everywhere,
        ("score key", "w_q and w_k are swapped"),
    ),
    "W @ x": (ch4_w_times_x, ("ValueError", "the projection is x @ w")),
    "no softmax": (
        ch4_one_query_with(lambda q, k, x, i, w_q: k @ q / np.sqrt(len(q))),
        ("the scores themselves", "apply softmax"),
    ),
    "the query's own key left out": (ch4_one_query_with(ch4_without_self), ("leave token",)),
    "the token vectors scored, as in chapter 3": (
        ch4_one_query_with(lambda q, k, x, i, w_q: ch4_softmax(x @ x[i] / np.sqrt(len(q)))),
        ("score the token vectors", "x_j @ w_k"),
    ),
    "the token vectors weighted": (
        ch4_one_query_with(
            lambda q, k, x, i, w_q: ch4_softmax(k @ q / np.sqrt(len(q))),
            lambda weights, x, k, v: weights @ x,
        ),
        ("weights the token vectors", "x_j @ w_v"),
    ),
    "the keys weighted": (
        ch4_one_query_with(
            lambda q, k, x, i, w_q: ch4_softmax(k @ q / np.sqrt(len(q))),
            lambda weights, x, k, v: weights @ k,
        ),
        ("weights the keys",),
    ),
    "the values summed without weights": (
        ch4_one_query_with(
            lambda q, k, x, i, w_q: ch4_softmax(k @ q / np.sqrt(len(q))),
            lambda weights, x, k, v: v.sum(axis=0),
        ),
        ("ignores the weights",),
    ),
    "the mean of the values": (
        ch4_one_query_with(
            lambda q, k, x, i, w_q: ch4_softmax(k @ q / np.sqrt(len(q))),
            lambda weights, x, k, v: v.mean(axis=0),
        ),
        ("ignores the weights",),
    ),
    "(weights, output) order": (
        lambda *args: ch4_one_query_attention(*args)[::-1],
        ("returned (weights, output)",),
    ),
    "not a pair": (lambda *args: 3, ("must return a pair (output, weights)",)),
    "the bilinear form x_i W_Q W_Kᵀ Xᵀ": (
        lambda x, i, w_q, w_k, w_v: (lambda w: (w @ (x @ w_v), w))(
            ch4_softmax(x[i] @ (w_q @ w_k.T) @ x.T / np.sqrt(w_q.shape[1]))
        ),
        # w_q @ w_k.T gives D × D = 16 numbers, counted at D = 4 each. It never projects
        # every token, and the message no longer says so (review round 3, finding 16).
        (
            "counts 64 multiplications with w_q",
            "at D = 4 for each number",
            "x[2] @ w_q",
            "such as w_q @ w_k.T",
        ),
    ),
    # The common NumPy idioms for Q = X W_Q, then one row of it (review round 3, finding 1:
    # the method .dot and np.asarray were not followed, and these passed).
    "every query projected with x.dot(w_q)": (
        lambda x, i, w_q, w_k, w_v: ch4_project_all_then_one(x, i, w_q, w_k, w_v, x.dot),
        ("counts 60 multiplications", "projecting all 5 tokens"),
    ),
    "every query projected through np.asarray(w_q)": (
        lambda x, i, w_q, w_k, w_v: ch4_project_all_then_one(
            x, i, np.asarray(w_q), w_k, w_v, lambda w: x @ w
        ),
        ("counts 60 multiplications", "projecting all 5 tokens"),
    ),
    "every query projected with np.array(x) and np.dot": (
        lambda x, i, w_q, w_k, w_v: ch4_project_all_then_one(
            x, i, w_q, w_k, w_v, lambda w: np.dot(np.array(x), np.array(w))
        ),
        ("counts 60 multiplications", "projecting all 5 tokens"),
    ),
    # An in-place change of an argument changes the caller's array (the brief of round 3:
    # the checker passed copies and never looked).
    "w_q divided by √d_k in place": (
        ch4_w_q_scaled_in_place,
        ("changed its argument `w_q` in place", "`w_q / c`, not `w_q /= c`"),
    ),
    "the query vector computed twice": (
        ch4_query_twice,
        ("counts 24 multiplications", "the work of 2 query vectors", "once"),
    ),
}


def ch4_one_query_loops(x, i, w_q, w_k, w_v):
    q = x[i] @ w_q
    scores = np.array([q @ (row @ w_k) for row in x]) / np.sqrt(len(q))
    weights = ch4_softmax(scores)
    output = np.zeros(w_v.shape[1])
    for weight, row in zip(weights, x, strict=True):
        output += weight * (row @ w_v)
    return output, weights


def ch4_one_query_as_arrays(x, i, w_q, w_k, w_v):
    x, w_q, w_k, w_v = (np.asarray(a, dtype=float) for a in (x, w_q, w_k, w_v))
    q = x[i].dot(w_q)  # (D_k,): the method, on one row
    weights = ch4_softmax(x.dot(w_k).dot(q) / np.sqrt(q.size))
    return weights.dot(x.dot(w_v)), weights


CH4_ONE_QUERY_VARIANTS = {
    "loops": ch4_one_query_loops,
    "np.asarray of the arguments and the method .dot": ch4_one_query_as_arrays,
    "w_q.T.dot(x[i])": lambda x, i, w_q, w_k, w_v: ch4_project_all_then_one(
        x, 0, w_q, w_k, w_v, lambda w: w.T.dot(x[i])[None]
    ),
    "einsum": lambda x, i, w_q, w_k, w_v: (lambda w: (np.einsum("t,tv->v", w, x @ w_v), w))(
        ch4_softmax(
            np.einsum("k,tk->t", np.einsum("d,dk->k", x[i], w_q), x @ w_k) / np.sqrt(w_q.shape[1])
        )
    ),
    "a (1, d_k) query": lambda x, i, w_q, w_k, w_v: (lambda w: (w @ (x @ w_v), w))(
        ch4_softmax((x[i : i + 1] @ w_q) @ (x @ w_k).T / np.sqrt(w_k.shape[1]))[0]
    ),
    "w_qᵀ @ x_i": lambda x, i, w_q, w_k, w_v: (lambda w: (w @ (x @ w_v), w))(
        ch4_softmax((x @ w_k) @ (w_q.T @ x[i]) / np.sqrt(w_q.shape[1]))
    ),
    "w_q divided by √d_k first": lambda x, i, w_q, w_k, w_v: ch4_one_query_attention(
        x, i, w_q / np.sqrt(w_q.shape[1]), w_k, w_v, divide_by=1.0
    ),
    "weights @ x, then @ w_v": lambda x, i, w_q, w_k, w_v: (lambda w: ((w @ x) @ w_v, w))(
        ch4_one_query_attention(x, i, w_q, w_k, w_v)[1]
    ),
    "lists": lambda *args: [list(part) for part in ch4_one_query_attention(*args)],
    "an unstable softmax (no overflow here)": lambda x, i, w_q, w_k, w_v: (
        lambda e: ((e / e.sum()) @ (x @ w_v), e / e.sum())
    )(np.exp((x @ w_k) @ (x[i] @ w_q) / np.sqrt(w_q.shape[1]))),
    "float32 throughout": lambda x, i, w_q, w_k, w_v: ch4_one_query_attention(
        *(a.astype(np.float32) for a in (x,)), i, *(a.astype(np.float32) for a in (w_q, w_k, w_v))
    ),
    "only the query in float32": lambda x, i, w_q, w_k, w_v: (
        lambda q: (lambda w: (w @ (x @ w_v), w))(ch4_softmax((x @ w_k) @ q / np.sqrt(w_k.shape[1])))
    )(x[i].astype(np.float32) @ w_q.astype(np.float32)),
    "the query as a row times w_q, summed": lambda x, i, w_q, w_k, w_v: (
        lambda q: (lambda w: (w @ (x @ w_v), w))(ch4_softmax((x @ w_k) @ q / np.sqrt(w_k.shape[1])))
    )((x[i][:, None] * w_q).sum(axis=0)),
}


def test_ch4_one_query_attention_accepts_torch():
    torch = pytest.importorskip("torch")

    def with_torch(x, i, w_q, w_k, w_v):
        x, w_q, w_k, w_v = (torch.from_numpy(a) for a in (x, w_q, w_k, w_v))
        q, k, v = x[i] @ w_q, x @ w_k, x @ w_v
        weights = torch.softmax(k @ q / q.shape[0] ** 0.5, dim=0)
        return weights @ v, weights

    feedback = exercises.check_one_query_attention(with_torch)
    assert feedback.passed, feedback.message


def test_ch4_one_query_attention_accepts_torch_in_float32():
    torch = pytest.importorskip("torch")

    def with_torch(x, i, w_q, w_k, w_v):
        x, w_q, w_k, w_v = (torch.tensor(a, dtype=torch.float32) for a in (x, w_q, w_k, w_v))
        q, k, v = x[i] @ w_q, x @ w_k, x @ w_v
        weights = torch.softmax(k @ q / q.shape[0] ** 0.5, dim=0)
        return weights @ v, weights

    feedback = exercises.check_one_query_attention(with_torch)
    assert feedback.passed, feedback.message


def test_ch4_one_query_attention_uses_the_learners_name():
    def unscaled(x, i, w_q, w_k, w_v):
        return ch4_one_query_attention(x, i, w_q, w_k, w_v, divide_by=1.0)

    feedback = exercises.check_one_query_attention(unscaled)
    assert_ch4_mistake(feedback, "unscaled(x, 0, w_q, w_k, w_v)", "did not divide")


# --- Exercise 3: tell "it" from "because" ---


def ch4_leaky_head():
    w_q, w_k = ch4_one_feature_head("animal", 60.0)
    w_q[CH4_FEATURE["grammar"], 0] = 5.0  # grammar still makes "because" ask for "cat"
    return w_q, w_k


def ch4_the_chapters_head(strength):
    w_q, w_k = np.zeros((8, 2)), np.zeros((8, 2))
    w_q[CH4_FEATURE["grammar"]] = strength, -strength
    w_k[CH4_FEATURE["animal"], 0] = w_k[CH4_FEATURE["grammar"], 1] = 1.0
    return w_q, w_k


CH4_DESIGN_MISTAKES = {
    "transposed": (
        lambda: (np.ones((1, 8)), np.ones((1, 8))),
        ("shape (1, 8) (it looks transposed)", "needs 8 rows"),
    ),
    "vectors, not matrices": (
        lambda: tuple(m[:, 0] for m in ch4_design_projections()),
        ("must be a matrix (D, d_k)",),
    ),
    "different d_k": (
        lambda: (np.ones((8, 3)), np.ones((8, 2))),
        ("w_q has 3 columns and w_k has 2", "same dimension d_k"),
    ),
    "d_k = 0": (lambda: (np.zeros((8, 0)), np.zeros((8, 0))), ("d_k must be at least 1",)),
    "entries so large the scores overflow": (
        lambda: tuple(1e200 * m for m in ch4_design_projections()),
        ("do not fit in a float64", "smaller entries"),
    ),
    "NaN entries": (lambda: (np.full((8, 1), np.nan), np.ones((8, 1))), ("NaN or infinity",)),
    "too weak (c = 50)": (
        lambda: ch4_one_feature_head("animal", 50.0),
        ("'cat' gets 0.893, not 0.9", "'it' attends most to 'cat'", "a few units larger"),
    ),
    "identity projections": (lambda: (np.eye(8), np.eye(8)), ("'cat' gets 0.136, not 0.9",)),
    "the key reads the wrong feature": (
        lambda: ch4_one_feature_head("animal", 60.0, key_feature="grammar"),
        ("'it' attends most to 'because'",),
    ),
    "the chapter's head": (
        lambda: ch4_the_chapters_head(8.0),
        ("'it' and 'because' get the same query", "feature by feature"),
    ),
    "the chapter's head, sharper": (
        lambda: ch4_one_feature_head("grammar", 80.0),
        ("'it' and 'because' get the same query",),
    ),
    "a query that still reads grammar": (
        ch4_leaky_head,
        ("'because' puts 0.646 there", "'it' has and 'because' has not"),
    ),
    "three matrices": (
        lambda: (*ch4_design_projections(), np.eye(8)),
        ("must return a pair (w_q, w_k)",),
    ),
}


def ch4_two_column_head():
    w_q, w_k = np.zeros((8, 2)), np.zeros((8, 2))
    w_q[CH4_FEATURE["animal"]] = 60.0, 60.0
    w_k[CH4_FEATURE["animal"], 0] = w_k[CH4_FEATURE["domestic"], 1] = 1.0
    return w_q, w_k


def ch4_animal_minus_grammar():
    w_q, w_k = ch4_one_feature_head("animal", 100.0)
    w_q[CH4_FEATURE["grammar"], 0] = -5.0  # reads grammar too, and still passes
    return w_q, w_k


CH4_DESIGN_VARIANTS = {
    "d_k = 2, an animal and a domestic key": ch4_two_column_head,
    "a query that also reads grammar, against it": ch4_animal_minus_grammar,
    "lists of lists": lambda: tuple(m.tolist() for m in ch4_design_projections()),
    "integers": lambda: tuple(m.astype(int) for m in ch4_one_feature_head("animal", 100.0)),
    "a domestic key": lambda: ch4_one_feature_head("animal", 60.0, key_feature="domestic"),
}


def test_ch4_design_projections_praises_what_every_passing_query_does():
    # A passing query need not read the animal feature alone (round 2 of issue 27): the
    # praise says only what the checker established, that it reads the animal feature.
    feedback = exercises.check_design_projections(ch4_animal_minus_grammar)
    assert feedback.passed, feedback.message
    assert "your query reads the animal feature" in feedback.message
    assert "the one feature" not in feedback.message


def test_ch4_design_projections_reads_tensors_that_require_grad():
    # Projections found by gradient descent come back as tensors that require grad.
    torch = pytest.importorskip("torch")

    def found_by_training():
        return tuple(
            torch.tensor(m, requires_grad=True) for m in ch4_one_feature_head("animal", 60.0)
        )

    feedback = exercises.check_design_projections(found_by_training)
    assert feedback.passed, feedback.message
    parameters = exercises.check_design_projections(
        lambda: tuple(torch.nn.Parameter(torch.from_numpy(m)) for m in ch4_design_projections())
    )
    assert parameters.passed, parameters.message


# --- Exercise 2: cross-attention ---


def ch4_cross_with(project, weights_of=None, output_of=None):
    """A cross_attention: ``project(x_q, x_kv, w_q, w_k, w_v) -> (q, k, v)``, then the weights
    ``weights_of(q, k)`` and the output ``output_of(weights, q, k, v, x_kv)``."""

    def cross_attention(x_q, x_kv, w_q, w_k, w_v):
        q, k, v = project(x_q, x_kv, w_q, w_k, w_v)
        if weights_of is None:
            weights = ch4_softmax(q @ k.T / np.sqrt(q.shape[-1]))
        else:
            weights = weights_of(q, k)
        output = weights @ v if output_of is None else output_of(weights, q, k, v, x_kv)
        return output, weights

    return cross_attention


def ch4_cross_projections(x_q, x_kv, w_q, w_k, w_v):
    return x_q @ w_q, x_kv @ w_k, x_kv @ w_v


def ch4_cross_weights(weights_of):
    return ch4_cross_with(ch4_cross_projections, weights_of)


def ch4_cross_normalised(shift_axis, keepdims, sum_axis=-1):
    """A cross_attention whose softmax subtracts the maximum over ``shift_axis`` and divides by
    the sum over ``sum_axis``."""

    def weights_of(q, k):
        scores = q @ k.T / np.sqrt(q.shape[-1])
        exponentials = np.exp(scores - scores.max(axis=shift_axis, keepdims=keepdims))
        return exponentials / exponentials.sum(axis=sum_axis, keepdims=keepdims)

    return ch4_cross_weights(weights_of)


def ch4_cross_centred_in_place(x_q, x_kv, w_q, w_k, w_v):
    x_kv -= x_kv.mean(axis=0)  # a shift of the keys' tokens: harmless for the weights ...
    return ch4_cross_attention(x_q, x_kv, w_q, w_k, w_v)  # ... but the caller's x_kv changed


CH4_CROSS_MISTAKES = {
    "keys and values from x_q": (
        ch4_cross_with(lambda x_q, x_kv, w_q, w_k, w_v: (x_q @ w_q, x_q @ w_k, x_q @ w_v)),
        ("= (T_q, T_q)", "must come from x_kv"),
    ),
    "queries from x_kv": (
        ch4_cross_with(lambda x_q, x_kv, w_q, w_k, w_v: (x_kv @ w_q, x_kv @ w_k, x_kv @ w_v)),
        ("= (T_k, T_k)", "must come from x_q"),
    ),
    "the two sequences swapped": (
        ch4_cross_with(lambda x_q, x_kv, w_q, w_k, w_v: (x_kv @ w_q, x_q @ w_k, x_q @ w_v)),
        ("queries were made from x_kv and the keys from x_q",),
    ),
    "values from x_q": (
        ch4_cross_with(lambda x_q, x_kv, w_q, w_k, w_v: (x_q @ w_q, x_kv @ w_k, x_q @ w_v)),
        ("ValueError", "which come from x_kv"),
    ),
    "weights transposed": (
        lambda *args: (lambda o, w: (o, w.T))(*ch4_cross_attention(*args)),
        ("= (T_k, T_q)", "one row per QUERY"),
    ),
    "softmax over the queries (axis 0)": (
        lambda *args: ch4_cross_attention(*args, axis=0),
        ("columns summing to 1", "axis=-1"),
    ),
    "no division by √d_k": (
        ch4_cross_weights(lambda q, k: ch4_softmax(q @ k.T)),
        ("divide the dot products by √d_k",),
    ),
    "divided by d_k": (
        ch4_cross_weights(lambda q, k: ch4_softmax(q @ k.T / q.shape[-1])),
        ("not by d_k = 3",),
    ),
    "divided by √D": (
        ch4_cross_weights(lambda q, k: ch4_softmax(q @ k.T / 2.0)),
        ("not by √D (the tokens' dimension)",),
    ),
    "divided by √T_k": (
        ch4_cross_weights(lambda q, k: ch4_softmax(q @ k.T / np.sqrt(len(k)))),
        ("not by √T_k (the number of keys)",),
    ),
    "no softmax": (
        ch4_cross_weights(lambda q, k: q @ k.T / np.sqrt(q.shape[-1])),
        ("the scores themselves", "apply softmax"),
    ),
    "the whole matrix normalised together": (
        ch4_cross_normalised(None, False, sum_axis=None),
        ("the whole matrix sums to one", "keepdims=True"),
    ),
    "max and sum without keepdims": (
        ch4_cross_normalised(-1, False),
        ("broadcast", "keepdims=True"),
    ),
    "values made with w_k": (
        ch4_cross_with(lambda x_q, x_kv, w_q, w_k, w_v: (x_q @ w_q, x_kv @ w_k, x_kv @ w_k)),
        ("weights the keys x_kv @ w_k", "x_kv @ w_v"),
    ),
    "the token vectors weighted": (
        ch4_cross_with(ch4_cross_projections, output_of=lambda w, q, k, v, x_kv: w @ x_kv),
        ("weights the token vectors x_kv", "x_kv @ w_v"),
    ),
    "(weights, output) order": (
        lambda *args: ch4_cross_attention(*args)[::-1],
        ("returned (weights, output)",),
    ),
    "divided by √T_q": (
        ch4_cross_weights(lambda q, k: ch4_softmax(q @ k.T / np.sqrt(len(q)))),
        ("not by √T_q (the number of queries)",),
    ),
    "x_kv centred in place": (
        ch4_cross_centred_in_place,
        ("changed its argument `x_kv` in place",),
    ),
    "w_q and w_k swapped": (
        lambda x_q, x_kv, w_q, w_k, w_v: ch4_cross_attention(x_q, x_kv, w_k, w_q, w_v),
        ("use w_k for the queries and w_q for the keys",),
    ),
    "the token vectors scored without projections": (
        lambda x_q, x_kv, w_q, w_k, w_v: (lambda w: (w @ (x_kv @ w_v), w))(
            ch4_softmax(x_q @ x_kv.T / np.sqrt(w_q.shape[1]))
        ),
        ("score the token vectors, x_q @ x_kv.T", "project them first"),
    ),
}


def ch4_cross_loop(x_q, x_kv, w_q, w_k, w_v):
    outputs, weights = [], []
    k, v = x_kv @ w_k, x_kv @ w_v
    for token in x_q:
        q = token @ w_q
        row = ch4_softmax(k @ q / np.sqrt(len(q)))
        weights.append(row)
        outputs.append(row @ v)
    return np.array(outputs), np.array(weights)


CH4_CROSS_VARIANTS = {
    "one query at a time": ch4_cross_loop,
    "einsum": ch4_cross_with(
        ch4_cross_projections,
        lambda q, k: ch4_softmax(np.einsum("qd,kd->qk", q, k) / np.sqrt(k.shape[1])),
    ),
    "the largest score of the whole matrix subtracted": ch4_cross_normalised(None, True),
    "w_q divided by √d_k first": ch4_cross_with(
        lambda x_q, x_kv, w_q, w_k, w_v: (x_q @ (w_q / np.sqrt(3)), x_kv @ w_k, x_kv @ w_v),
        lambda q, k: ch4_softmax(q @ k.T),
    ),
    "lists": lambda *args: tuple(part.tolist() for part in ch4_cross_attention(*args)),
    "float32 throughout": lambda *args: ch4_cross_attention(*(a.astype(np.float32) for a in args)),
}


# Every checker's tables: each mistake is rejected with the words that name its cause, each
# correct variant passes.
CH4_TABLES = (
    (exercises.check_one_query_attention, CH4_ONE_QUERY_MISTAKES, CH4_ONE_QUERY_VARIANTS),
    (exercises.check_design_projections, CH4_DESIGN_MISTAKES, CH4_DESIGN_VARIANTS),
    (exercises.check_cross_attention, CH4_CROSS_MISTAKES, CH4_CROSS_VARIANTS),
)
CH4_MISTAKES = {
    f"{checker.__name__}: {mistake}": (checker, *entry)
    for checker, mistakes, _ in CH4_TABLES
    for mistake, entry in mistakes.items()
}
CH4_VARIANTS = {
    f"{checker.__name__}: {variant}": (checker, answer)
    for checker, _, variants in CH4_TABLES
    for variant, answer in variants.items()
}


@pytest.mark.parametrize("case", CH4_MISTAKES)
def test_ch4_checkers_name_the_cause_of_each_plausible_mistake(case):
    checker, wrong, fragments = CH4_MISTAKES[case]
    assert_ch4_mistake(checker(wrong), *fragments)


@pytest.mark.parametrize("case", CH4_VARIANTS)
def test_ch4_checkers_accept_correct_variants(case):
    checker, answer = CH4_VARIANTS[case]
    feedback = checker(answer)
    assert feedback.passed, feedback.message


# Every checker of the chapter with a correct answer: test_exercises_registry.py runs them.
REFERENCES = {
    **{checker.__name__: solution for checker, solution in CH4_CHECKERS.values()},
}


def test_ch4_one_query_counts_the_projections_it_makes():
    feedback = exercises.check_one_query_attention(ch4_every_query)
    assert feedback.attempted and not feedback.passed
    assert "counts 60 multiplications with w_q" in feedback.message, feedback.message
    assert "x[2] @ w_q" in feedback.message
    transposed = exercises.check_one_query_attention(
        lambda *args: ch4_every_query(*args, transposed=True)
    )
    assert "counts 60 multiplications with w_q" in transposed.message, transposed.message


def test_ch4_cross_attention_with_a_library_softmax_breaks_the_prompts_rule():
    from selfattn_lib.softmax import softmax

    def with_library(x_q, x_kv, w_q, w_k, w_v):
        q, k, v = x_q @ w_q, x_kv @ w_k, x_kv @ w_v
        weights = softmax(q @ k.T / np.sqrt(q.shape[-1]), axis=-1)
        return weights @ v, weights

    feedback = exercises.check_cross_attention(with_library)
    assert feedback.attempted and not feedback.passed
    assert "but it calls `selfattn_lib.softmax.softmax`" in feedback.message, feedback.message
