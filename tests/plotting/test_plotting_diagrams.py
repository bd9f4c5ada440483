"""Tests of selfattn_lib.plotting.diagrams: a computed diagram draws exactly the arrays it is
given (read back from the figure's text), writes its alt text from them, and refuses bad
input."""

import numpy as np
import pytest

from selfattn_lib import attention, embeddings, masks
from selfattn_lib.plotting.diagrams import Diagram, Grid, flow, read_back

TOKENS = ["the", "cat", "sat"]


def test_the_drawn_numbers_are_the_concept_functions_results():
    x = embeddings.embed(TOKENS)  # (T, D)
    output, weights = attention.scaled_dot_product_attention(x, x, x)
    diagram = flow(
        Grid("X", x, rows=TOKENS, cols=embeddings.FEATURES),
        "→",
        Grid("A", weights, rows=TOKENS, cols=TOKENS, role="weights"),
        "×",
        Grid("Y", output, rows=TOKENS, role="output"),
    )
    # Computed again, independently of the arrays handed to the drawing.
    again_output, again_weights = attention.scaled_dot_product_attention(
        embeddings.embed("the cat sat"), embeddings.embed("the cat sat"),
        embeddings.embed("the cat sat"),
    )  # fmt: skip
    np.testing.assert_allclose(read_back(diagram.figure, "A"), again_weights, atol=0.005)
    np.testing.assert_allclose(read_back(diagram.figure, "Y"), again_output, atol=0.005)


def test_masks_tokens_and_minus_infinity_are_drawn_as_marks():
    mask = masks.causal_mask(3)
    scores = np.where(mask, 1.0, -np.inf)
    batch = np.array([["the", "cat", "<pad>"], ["it", "was", "tired"]])
    diagram = flow(
        Grid("M", mask, rows=TOKENS, cols=TOKENS, role="mask"),
        Grid("S", scores, role="scores"),
        Grid("batch", batch),
    )
    assert read_back(diagram.figure, "M").tolist() == mask.tolist()
    assert read_back(diagram.figure, "S").tolist() == scores.tolist()
    assert read_back(diagram.figure, "batch").tolist() == batch.tolist()
    assert "M, what each row may attend to: the: the; cat: the, cat;" in diagram.alt
    assert "batch: the cat <pad> | it was tired." in diagram.alt


def test_the_alt_text_names_every_shape_and_the_largest_weights():
    weights = np.array([[0.1, 0.9], [0.6, 0.4]])
    diagram = flow(
        Grid("S", [[0.0, 2.2], [0.4, 0.0]], role="scores"),
        "softmax →",
        Grid("A", weights, rows=["a", "b"], cols=["a", "b"], role="weights"),
        title="two tokens",
    )
    assert diagram.alt.startswith(
        "Computed diagram: two tokens: S (2 × 2) softmax → A (2 × 2). "
        "S: row 1 [0.00, 2.20]; row 2 [0.40, 0.00]."
    )
    assert diagram.alt.endswith("A, largest weight in each row: a → b 0.90; b → a 0.60.")


def test_tied_weights_are_named_in_full_never_won_by_the_first_token():
    """Weights that print the same are tied: chapter 4's 'cat' row (1/7 each) once read
    'cat → the 0.14', and chapter 6's padded rows '<pad> → the 0.33'."""
    tokens = ["the", "dog", "ran", "<pad>"]
    weights = np.array(
        [
            [0.25] * 4,
            [1 / 3, 1 / 3, 1 / 3, 0.0],
            [0.7, 0.1, 0.1, 0.1],
            [0.0] * 4,
            [0.4, 0.4, 0.15, 0.05],
        ]
    )
    rows = [*tokens, "x"]
    diagram = flow(Grid("A", weights, rows=rows, cols=tokens, role="weights"))
    assert diagram.alt.endswith(
        "A, largest weight in each row: the spread evenly over the, dog, ran, <pad> (0.25 each); "
        "dog spread evenly over the, dog, ran (0.33 each); ran → the 0.70; "
        "<pad> attends to nothing; x → the, dog 0.40 each."
    )
    # Tied at the printed precision only: 0.334 and 0.333 both print 0.33, "about" equal.
    near = flow(Grid("B", [[0.334, 0.333, 0.333]], cols=["a", "b", "c"], role="weights"))
    assert near.alt.endswith("row 1 spread evenly over a, b, c (about 0.33 each).")


def test_a_notebook_shows_the_png_with_the_alt_text_as_its_text():
    diagram = flow(Grid("v", [1.0, -2.0]))
    bundle = diagram._repr_mimebundle_()
    assert bundle["image/png"].startswith(b"\x89PNG")
    assert bundle["text/plain"] == diagram.alt
    assert read_back(diagram.figure, "v").tolist() == [[1.0, -2.0]]
    assert isinstance(diagram, Diagram)


def test_row_names_name_the_rows_of_a_grid_drawn_without_labels():
    weights = [[0.7, 0.3], [0.4, 0.6]]
    beside = flow(
        Grid("A", weights, rows=["a", "b"], cols=["a", "b"], role="weights"),
        Grid("B", weights, cols=["a", "b"], role="weights", row_names=["a", "b"]),
    )
    assert "B, largest weight in each row: a → a 0.70; b → b 0.60." in beside.alt
    assert "row 1" not in beside.alt
    assert read_back(beside.figure, "B").tolist() == weights  # drawn as before
    with pytest.raises(ValueError, match="3 rows labels for 2 rows"):
        Grid("B", weights, row_names=["a", "b", "c"])


def test_text_stays_legible_and_the_figure_fits_the_column():
    x = embeddings.embed("the cat sat because it was tired")
    diagram = flow(
        Grid("X", x, rows=list("abcdefg"), cols=embeddings.FEATURES),
        "×",
        Grid("W", np.ones((8, 2))),
    )
    width, _ = diagram.figure.get_size_inches()
    assert width <= 7.2
    sizes = {
        text.get_fontsize() for text in diagram.figure.findobj(lambda a: hasattr(a, "get_fontsize"))
    }
    assert min(sizes) >= 8


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: Grid("x", np.ones((2, 2, 2))), ValueError, "1-D or 2-D"),
        (lambda: Grid("x", [[np.nan]]), ValueError, "NaN"),
        (lambda: Grid("x", np.ones((2, 2)), rows=["a"]), ValueError, "1 rows labels"),
        (lambda: Grid("x", [1.0], role="colour"), ValueError, "role"),
        (lambda: Grid("x", [object()]), TypeError, "dtype"),
        (lambda: flow(), ValueError, "at least one Grid"),
        (lambda: flow(Grid("x", [1.0]), Grid("x", [2.0])), ValueError, "unique"),
        (lambda: flow(Grid("x", np.ones((2, 40)))), ValueError, "wider than the figure"),
        (lambda: flow(Grid("x", [1.0]), 3), TypeError, "operator strings"),
    ],
)
def test_bad_input_gets_a_clear_error(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_read_back_names_a_missing_grid():
    with pytest.raises(ValueError, match="no grid named 'Z'"):
        read_back(flow(Grid("x", [1.0])).figure, "Z")


def test_an_operator_and_its_grid_wider_than_the_figure_are_refused():
    grid = Grid("g", np.zeros((1, 6)))
    with pytest.raises(ValueError, match="'a long operator →' and grid 'g' are wider"):
        flow(Grid("f", [[1.0]]), "a long operator →", grid, width=2.6)
