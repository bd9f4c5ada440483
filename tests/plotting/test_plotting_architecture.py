"""Tests of selfattn_lib.plotting.architecture: an architecture diagram draws the blocks it is
given with the shapes a real module run recorded (read back from the figure's text), writes
its alt text from them, fits the column and refuses bad input."""

import pytest
import torch

from selfattn_lib.plotting.architecture import (
    INPUT,
    Block,
    Column,
    architecture,
    read_blocks,
    record_shapes,
    shapes_of,
)
from selfattn_lib.plotting.base import COLUMN_WIDTH, PHONE_COLUMN_WIDTH, drawn_for
from selfattn_lib.transformer import Transformer, TransformerConfig


def two_columns() -> tuple[Column, Column]:
    left = Column(
        "left",
        [Block("a", "input", (2, 3)), Block("b", "mix", (2, 3, 4), "attention"),
         Block("c", "add & norm", (2, 3, 4), "norm")],
        residuals=[("b", "c")],
        repeat=("b", "c", 6),
        side="left",
    )  # fmt: skip
    right = Column(
        "right", [Block("d", "input"), None, Block("e", "cross", (2, 5, 4), "attention")]
    )
    return left, right


def test_record_shapes_records_every_submodule_s_output_of_a_real_run():
    config = TransformerConfig(9, 7, d_model=8, n_heads=2, d_ff=16, n_layers=2)
    model = Transformer(config).eval()
    shapes = record_shapes(model, torch.ones(3, 5, dtype=torch.long), torch.ones(3, 4).long())
    assert shapes[""] == (3, 4, 7)
    assert shapes[INPUT] == (3, 5)
    assert shapes["encoder.layers.1.feed_forward"] == (3, 5, 8)
    assert shapes["decoder.layers.0.cross_attention"] == (3, 4, 8)  # first of (output, weights)
    assert shapes_of(shapes, "decoder.layers.0")["norm_3"] == (3, 4, 8)
    assert not any(module._forward_hooks for module in model.modules()), "hooks are removed"
    with pytest.raises(KeyError, match="no module"):
        shapes_of(shapes, "nowhere")
    with pytest.raises(TypeError, match="torch.nn.Module"):
        record_shapes(lambda x: x, 1)


def test_the_drawn_blocks_and_the_alt_text_are_the_given_ones():
    left, right = two_columns()
    diagram = architecture(left, right, links=[("c", "e", "memory")], title="t")
    assert read_blocks(diagram.figure) == {
        "a": ("input", "2 × 3"),
        "b": ("mix", "2 × 3 × 4"),
        "c": ("add & norm", "2 × 3 × 4"),
        "d": ("input", ""),
        "e": ("cross", "2 × 5 × 4"),
    }
    assert diagram.alt == (
        "Computed diagram: t. left, from the input up: input (2 × 3) → mix (2 × 3 × 4) → "
        "add & norm (2 × 3 × 4). From mix to add & norm: one layer, repeated 6 times. "
        "Residual paths: around mix into add & norm. right, from the input up: input → "
        "cross (2 × 5 × 4). Between the columns: add & norm into cross (memory)."
    )
    width, _ = diagram.figure.get_size_inches()
    assert width <= COLUMN_WIDTH
    assert "image/png" in diagram._repr_mimebundle_()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Block("k", "x", role="wrong"), "role must be"),
        (lambda: Block("k", "x", (2, 0)), "positive ints"),
        (lambda: Block("", "x"), "key and a label"),
        (lambda: Column("c", [None]), "no block"),
        (
            lambda: Column("c", [Block("a", "a"), Block("b", "b")], residuals=[("b", "a")]),
            "later one",
        ),
        (lambda: Column("c", [Block("a", "a")], repeat=("a", "z", 2)), "names no range"),
        (lambda: Column("c", [Block("a", "a")], repeat=("a", "a", 0)), "count"),
        (lambda: Column("c", [Block("a", "a")], side="top"), "side"),
        (lambda: architecture(), "at least one Column"),
        (
            lambda: architecture(Column("c", [Block("a", "a")]), Column("d", [Block("a", "a")])),
            "unique",
        ),
        (lambda: architecture(*two_columns(), links=[("a", "b")]), "different columns"),
        (lambda: architecture(Column("c", [Block("a", "a" * 120)])), "does not fit"),
    ],
)
def test_bad_input_is_refused_with_a_clear_message(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_on_a_phone_a_label_too_long_for_its_box_takes_two_lines():
    """Two columns side by side in a phone's 3.8 in: chapter 10's 'self_attention (causal
    mask)' is wider than a box there, so it wraps, and every row grows to hold it."""
    columns = [
        Column(
            "Encoder",
            [
                Block("x", "x", (1, 4)),
                Block("a", "self_attention (causal mask)", (1, 4), role="attention"),
            ],
        ),
        Column(
            "Decoder",
            [Block("y", "y", (1, 4)), Block("b", "cross_attention", (1, 4), role="attention")],
        ),
    ]
    laptop = architecture(*columns, links=[("a", "b")])
    with drawn_for("phone"):
        phone = architecture(*columns, links=[("a", "b")])
    assert read_blocks(laptop.figure)["a"][0] == "self_attention (causal mask)"
    assert read_blocks(phone.figure)["a"][0] == "self_attention\n(causal mask)"
    assert phone.figure.get_size_inches()[0] == PHONE_COLUMN_WIDTH
    assert phone.figure.get_size_inches()[1] > laptop.figure.get_size_inches()[1]
    assert phone.alt == laptop.alt, "the alt text keeps the label on one line"
