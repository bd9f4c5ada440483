"""Tests of selfattn_lib.plotting.ch02_softmax: the figures of chapter 2."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from selfattn_lib import plotting


def test_ch2_temperature_weights_draws_the_softmax_at_that_temperature():
    from selfattn_lib.softmax import softmax

    scores = np.array([1.0, 3.0, 2.0, -1.0])
    fig = plotting.temperature_weights(scores, ["a", "b", "c", "d"], temperature=0.5)
    ax = fig.axes[0]
    heights = [patch.get_height() for patch in ax.patches]
    np.testing.assert_allclose(heights, softmax(scores / 0.5), rtol=1e-12)
    assert [label.get_text() for label in ax.get_xticklabels()] == ["a", "b", "c", "d"]
    assert (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) == ("τ = 0.5", "", "softmax weight")
    assert {label.get_rotation() for label in ax.get_xticklabels()} == {30.0}
    assert ax.get_ylim() == (0.0, 1.15)
    uniform_line = ax.lines[-1]
    assert list(uniform_line.get_ydata()) == [0.25, 0.25]
    assert "1/4" in [text.get_text() for text in ax.texts]


def test_ch2_temperature_weights_goes_from_argmax_to_uniform_and_splits_ties():
    labels = ["a", "b", "c"]
    cold = plotting.temperature_weights([2.0, 2.0, 0.0], labels, temperature=1e-3)
    np.testing.assert_allclose([p.get_height() for p in cold.axes[0].patches], [0.5, 0.5, 0.0])
    hot = plotting.temperature_weights([2.0, 1.0, 0.0], labels, temperature=1e4)
    np.testing.assert_allclose([p.get_height() for p in hot.axes[0].patches], 1 / 3, rtol=1e-3)


@pytest.mark.parametrize("temperature", [0.0, -1.0])
def test_ch2_temperature_weights_rejects_a_non_positive_temperature(temperature):
    with pytest.raises(ValueError, match="temperature"):
        plotting.temperature_weights([1.0, 2.0], ["a", "b"], temperature)


def test_ch2_temperature_weights_rejects_a_matrix_and_draws_into_given_axes():
    with pytest.raises(ValueError, match=r"one row of shape \(T_k,\), got shape \(1, 2\)"):
        plotting.temperature_weights([[1.0, 2.0]], ["a", "b"], 1.0)
    fig = Figure()
    left, right = fig.subplots(1, 2)
    assert plotting.temperature_weights([1.0, 2.0], ["a", "b"], 2.0, ax=right) is fig
    assert len(left.patches) == 0 and right.get_title() == "τ = 2"


def test_ch2_softmax_steps_draws_the_softmax_of_the_running_example():
    from selfattn_lib import embeddings, similarity
    from selfattn_lib.plotting.diagrams import read_back
    from selfattn_lib.softmax import log_sum_exp, softmax

    tokens = embeddings.tokenize(embeddings.RUNNING_EXAMPLE)
    vectors = embeddings.embed(tokens)  # (T, D)
    scores = vectors @ vectors[tokens.index("it")]  # (T,), as the notebook computes them
    exponentials = np.exp(scores)
    diagram = plotting.softmax_steps(
        tokens, scores, exponentials, exponentials.sum(), exponentials / exponentials.sum(),
        query="it",
    )  # fmt: skip
    # Computed again, independently, by the concept functions.
    expected_scores = similarity.similarity_matrix(vectors)[tokens.index("it")]
    np.testing.assert_allclose(read_back(diagram.figure, "z")[0], expected_scores, atol=0.005)
    np.testing.assert_allclose(
        read_back(diagram.figure, "exp(z)")[0], np.exp(expected_scores), atol=0.005
    )
    np.testing.assert_allclose(
        read_back(diagram.figure, "total")[0, 0],
        np.exp(log_sum_exp(expected_scores)),
        atol=0.005,
    )
    np.testing.assert_allclose(
        read_back(diagram.figure, "weights")[0], softmax(expected_scores), atol=0.005
    )
    assert diagram.alt.startswith("Computed diagram: z (1 × 7) exp → exp(z) (1 × 7) ÷ total")
    assert diagram.alt.endswith("largest weight in each row: it → because, it 0.16 each.")
    width, _ = diagram.figure.get_size_inches()
    assert width <= plotting.COLUMN_WIDTH


def test_ch2_softmax_steps_rejects_rows_of_the_wrong_length():
    with pytest.raises(ValueError, match=r"weights must hold one number per token, shape \(2,\)"):
        plotting.softmax_steps(["a", "b"], [0.0, 1.0], [1.0, 2.7], 3.7, [1.0], query="a")
    with pytest.raises(ValueError, match="total must be one number"):
        plotting.softmax_steps(["a", "b"], [0.0, 1.0], [1.0, 2.7], [3.7], [0.3, 0.7], query="a")
