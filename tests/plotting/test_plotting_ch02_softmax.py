"""Tests of selfattn_lib.plotting.ch02_softmax: the figures of chapter 2."""

import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.text import Text

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
    # The weights to three decimals, as the chapter prints them: to two, it (0.1637) and
    # because (0.1621) would read as a tie.
    np.testing.assert_allclose(
        read_back(diagram.figure, "weights")[0], softmax(expected_scores), atol=0.0005
    )
    assert diagram.alt.startswith("Computed diagram: z (1 × 7) exp → exp(z) (1 × 7) ÷ total")
    assert diagram.alt.endswith("largest weight in each row: it → it 0.164.")
    width, _ = diagram.figure.get_size_inches()
    assert width <= plotting.COLUMN_WIDTH


def test_ch2_softmax_steps_rejects_rows_of_the_wrong_length():
    with pytest.raises(ValueError, match=r"weights must hold one number per token, shape \(2,\)"):
        plotting.softmax_steps(["a", "b"], [0.0, 1.0], [1.0, 2.7], 3.7, [1.0], query="a")
    with pytest.raises(ValueError, match="total must be one number"):
        plotting.softmax_steps(["a", "b"], [0.0, 1.0], [1.0, 2.7], [3.7], [0.3, 0.7], query="a")


# --- Small multiples, and their phone renderings -------------------------------------------


def _words(figure):
    """The words of every text drawn in a figure (titles, labels, ticks), not its numbers."""
    figure.canvas.draw()
    texts = [text.get_text() for text in figure.findobj(Text)]
    return {word for text in texts for word in text.split() if word[0].isalpha()}


TOKENS = ["the", "cat", "sat", "because", "it", "was", "tired"]
SCORES = np.array([0.30, 0.09, 0.07, 0.36, 0.37, 0.30, 0.09])


def test_ch2_weights_at_temperatures_draws_one_panel_per_temperature():
    from selfattn_lib.softmax import softmax

    fig = plotting.weights_at_temperatures(SCORES, TOKENS, [0.01, 0.1, 1, 10])
    assert fig.get_size_inches().tolist() == [plotting.COLUMN_WIDTH, 4.6]
    assert [ax.get_title() for ax in fig.axes] == ["τ = 0.01", "τ = 0.1", "τ = 1", "τ = 10"]
    assert [ax.get_ylabel() for ax in fig.axes] == ["softmax weight", "", "softmax weight", ""]
    heights = [bar.get_height() for bar in fig.axes[2].patches]
    np.testing.assert_allclose(heights, softmax(SCORES, temperature=1))
    assert [label.get_text() for label in fig.axes[3].get_xticklabels()] == TOKENS
    with pytest.raises(ValueError, match="temperatures is empty"):
        plotting.weights_at_temperatures(SCORES, TOKENS, [])


def test_ch2_weights_at_temperatures_stacks_its_panels_on_a_phone():
    laptop = plotting.weights_at_temperatures(SCORES, TOKENS, [0.01, 0.1, 1, 10])
    phone = plotting.weights_at_temperatures(SCORES, TOKENS, [0.01, 0.1, 1, 10], layout="phone")
    assert phone.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
    assert len({ax.get_position().x0 for ax in phone.axes}) == 1, "one panel a row"
    assert all(ax.get_ylabel() == "softmax weight" for ax in phone.axes)
    assert plotting.PHONE_MIME in laptop._repr_mimebundle_()
    assert _words(laptop) <= _words(phone)


def test_ch2_rows_and_columns_share_one_colour_scale_and_stack_on_a_phone():
    from selfattn_lib.softmax import softmax

    scores = np.outer(SCORES, SCORES) * 10
    rows, columns = softmax(scores, axis=-1), softmax(scores, axis=0)
    laptop = plotting.rows_and_columns(rows, columns, TOKENS)
    correct, wrong, colour_bar = laptop.axes
    np.testing.assert_allclose(correct.images[0].get_array(), rows)
    np.testing.assert_allclose(wrong.images[0].get_array(), columns)
    assert (correct.get_title(), wrong.get_title()) == (
        "Correct: each row (axis=-1)",
        "Wrong: axis=0",
    )
    top = max(rows.max(), columns.max())
    assert correct.images[0].get_clim() == wrong.images[0].get_clim() == (0.0, top)
    assert colour_bar.get_ylabel() == "weight"
    phone = plotting.rows_and_columns(rows, columns, TOKENS, layout="phone")
    assert phone.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
    correct, wrong, colour_bar = phone.axes
    assert correct.get_position().y0 > wrong.get_position().y1, "stacked"
    assert colour_bar.get_xlabel() == "weight", "a horizontal colour bar under the maps"
    assert _words(laptop) <= _words(phone)


def test_ch2_softmax_steps_fits_a_phone():
    weights = np.exp(SCORES) / np.exp(SCORES).sum()
    phone = plotting.softmax_steps(
        TOKENS, SCORES, np.exp(SCORES), np.exp(SCORES).sum(), weights, query="it", layout="phone"
    )
    assert phone.figure.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
