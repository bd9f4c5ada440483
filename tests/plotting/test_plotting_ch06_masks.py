"""Tests of selfattn_lib.plotting.ch06_masks: the figures of chapter 6."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from selfattn_lib import plotting

CH6_TOKENS = [["the", "cat", "sat"], ["dogs", "bark", "<pad>"]]


def ch6_weights_of(fig, panel):
    return np.asarray(fig.axes[panel].images[0].get_array())


def test_ch6_mask_and_weights_draws_mask_and_weights_per_sequence():
    scores = np.random.default_rng(0).normal(size=(2, 3, 3))
    fig = plotting.mask_and_weights(scores, CH6_TOKENS, [3, 2], "both")
    assert len(fig.axes) == 5  # 4 heatmaps and the one colour bar they share
    np.testing.assert_array_equal(ch6_weights_of(fig, 0), np.tril(np.ones((3, 3))))
    np.testing.assert_array_equal(
        ch6_weights_of(fig, 2), [[1, 0, 0], [1, 1, 0], [1, 1, 0]]
    )  # the <pad> key is hidden from every query
    weights = ch6_weights_of(fig, 3)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0)
    assert weights[0, 1] == 0 and (weights[:, 2] == 0).all()
    assert fig.axes[0].get_title() == "mask: both (length 3)"
    assert [label.get_text() for label in fig.axes[3].get_yticklabels()] == CH6_TOKENS[1]


@pytest.mark.parametrize(
    ("kind", "sees_future", "sees_padding"),
    [("none", True, True), ("padding", True, False), ("causal", False, True)],
)
def test_ch6_mask_and_weights_kinds(kind, sees_future, sees_padding):
    fig = plotting.mask_and_weights(np.zeros((2, 3, 3)), CH6_TOKENS, [3, 2], kind)
    padded_mask = ch6_weights_of(fig, 2)
    assert bool(padded_mask[0, 1]) is sees_future
    assert bool(padded_mask[2, 2]) is sees_padding


def test_ch6_mask_and_weights_rejects_bad_input_and_draws_into_given_axes():
    with pytest.raises(ValueError, match="kind must be one of"):
        plotting.mask_and_weights(np.zeros((2, 3, 3)), CH6_TOKENS, [3, 2], "future")
    with pytest.raises(ValueError, match=r"scores must have shape \(B, T, T\)"):
        plotting.mask_and_weights(np.zeros((2, 3, 4)), CH6_TOKENS, [3, 2], "both")
    with pytest.raises(ValueError, match="tokens must be 2 lists of 3 labels"):
        plotting.mask_and_weights(np.zeros((2, 3, 3)), CH6_TOKENS[:1], [3, 2], "both")
    with pytest.raises(ValueError, match="2 \\* B = 4 axes"):
        plotting.mask_and_weights(
            np.zeros((2, 3, 3)), CH6_TOKENS, [3, 2], "both", axes=Figure().subplots(1, 2)
        )
    fig = Figure()
    axes = fig.subplots(2, 4)
    assert (
        plotting.mask_and_weights(np.zeros((2, 3, 3)), CH6_TOKENS, [3, 2], "causal", axes=axes[1])
        is fig
    )
    assert axes[0, 0].get_title() == "" and axes[1, 0].get_title() == "mask: causal (length 3)"


def test_ch6_mask_and_weights_share_one_colour_scale_and_fit_the_column():
    scores = np.random.default_rng(1).normal(size=(2, 3, 3))
    fig = plotting.mask_and_weights(scores, CH6_TOKENS, [3, 2], "padding")
    assert fig.get_size_inches()[0] <= plotting.COLUMN_WIDTH
    heatmaps = fig.axes[:4]
    assert {ax.images[0].get_clim() for ax in heatmaps} == {(0.0, 1.0)}
    positions = [ax.get_subplotspec().get_geometry()[:2] for ax in heatmaps]
    assert positions == [(2, 2)] * 4  # one row (mask, weights) per sequence
    assert fig.axes[4].get_ylabel() == "weight (mask: 1 = may attend)"
    grid = plotting.small_multiples(12, columns=3)
    _, panels = grid
    for column, kind in enumerate(["padding", "causal", "both"]):
        plotting.mask_and_weights(
            scores, CH6_TOKENS, [3, 2], kind, colorbar=False, axes=panels[column::3]
        )
    assert len(grid[0].axes) == 12  # no colour bar until the caller adds one
    assert panels[2].get_title() == "mask: both (length 3)"
    assert panels[3].get_title() == "attention weights"
    plotting.shared_colorbar(panels, "weight")
    assert len(grid[0].axes) == 13


# --- The computed diagrams: the drawn values are the concept functions' own results. ---

CH6_SENTENCE = "the cat sat because it was tired"


def ch6_batch():
    """The chapter's batch: the running sentence and 'the dog ran', padded with zero vectors."""
    from selfattn_lib import embeddings

    sentences = [embeddings.tokenize(CH6_SENTENCE), embeddings.tokenize("the dog ran")]
    t = max(len(sentence) for sentence in sentences)
    tokens = [sentence + ["<pad>"] * (t - len(sentence)) for sentence in sentences]
    pad = np.zeros(len(embeddings.FEATURES))
    x = np.array(
        [
            [pad if word == "<pad>" else embeddings.embed([word])[0] for word in row]
            for row in tokens
        ]
    )
    return tokens, np.array([len(sentence) for sentence in sentences]), x


def test_ch6_next_word_mask_draws_the_causal_mask_and_the_next_words():
    from selfattn_lib import embeddings, masks
    from selfattn_lib.plotting.diagrams import read_back

    tokens = embeddings.tokenize(CH6_SENTENCE)
    diagram = plotting.next_word_mask(tokens, masks.causal_mask(len(tokens)), tokens[1:] + ["."])
    # Independently: position i may see the words 0..i, and must predict word i + 1.
    drawn = read_back(diagram.figure, "causal mask")
    expected = np.arange(7)[None, :] <= np.arange(7)[:, None]
    np.testing.assert_array_equal(drawn, expected)
    assert read_back(diagram.figure, "next word")[:, 0].tolist() == [
        "cat", "sat", "because", "it", "was", "tired", "."
    ]  # fmt: skip
    assert diagram.alt.startswith("Computed diagram: ")
    assert "because: the, cat, sat, because;" in diagram.alt
    assert diagram.figure.get_size_inches()[0] <= plotting.COLUMN_WIDTH


def test_ch6_padded_batch_draws_the_padding_mask_and_the_masked_weights():
    from selfattn_lib import attention, masks
    from selfattn_lib.plotting.diagrams import read_back

    tokens, lengths, x = ch6_batch()
    key_mask = masks.padding_mask(lengths, 7)  # (B, 1, T)
    _, weights = attention.scaled_dot_product_attention(x, x, x, mask=key_mask)
    diagram = plotting.padded_batch(tokens, key_mask[:, 0], weights, sequence=1)

    # Computed again, independently: softmax over the real keys of 'the dog ran' only.
    short = x[1]  # (T, D)
    scores = short @ short.T / np.sqrt(short.shape[-1])
    real = np.exp(scores[:, :3] - scores[:, :3].max(axis=-1, keepdims=True))
    expected = np.zeros((7, 7))
    expected[:, :3] = real / real.sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(
        read_back(diagram.figure, "weights of sentence 2"), expected, atol=0.005
    )
    assert (read_back(diagram.figure, "weights of sentence 2")[:, 3:] == 0).all()
    np.testing.assert_array_equal(
        read_back(diagram.figure, "padding mask"), [[True] * 7, [True] * 3 + [False] * 4]
    )
    assert read_back(diagram.figure, "batch").tolist() == tokens
    assert "sentence 2: 0, 1, 2." in diagram.alt
    assert diagram.figure.get_size_inches()[0] <= plotting.COLUMN_WIDTH


def test_ch6_diagrams_refuse_arrays_that_do_not_fit():
    tokens = ["a", "b"]
    with pytest.raises(ValueError, match=r"mask must be a \(2, 2\) boolean array"):
        plotting.next_word_mask(tokens, np.ones((2, 2)), ["b", "c"])
    with pytest.raises(ValueError, match="targets must hold one word per token"):
        plotting.next_word_mask(tokens, np.eye(2, dtype=bool), ["b"])
    batch = [["a", "b"], ["c", "<pad>"]]
    key_mask = np.array([[True, True], [True, False]])
    with pytest.raises(ValueError, match=r"key_mask must be a \(2, 2\) boolean array"):
        plotting.padded_batch(batch, key_mask[:1], np.zeros((2, 2, 2)), sequence=0)
    with pytest.raises(ValueError, match=r"weights must have shape \(B, T, T\)"):
        plotting.padded_batch(batch, key_mask, np.zeros((2, 2)), sequence=0)
    with pytest.raises(ValueError, match="sequence must be a sequence index"):
        plotting.padded_batch(batch, key_mask, np.zeros((2, 2, 2)), sequence=2)
    with pytest.raises(ValueError, match="all of one length"):
        plotting.padded_batch([["a", "b"], ["c"]], key_mask, np.zeros((2, 2, 2)), sequence=0)


def test_ch6_padded_batch_draws_its_batch_transposed_on_a_phone():
    from selfattn_lib import attention, masks
    from selfattn_lib.plotting.diagrams import read_back

    tokens, lengths, x = ch6_batch()
    key_mask = masks.padding_mask(lengths, 7)[:, 0]  # (B, T)
    _, weights = attention.scaled_dot_product_attention(x, x, x, mask=key_mask[:, None])
    phone = plotting.padded_batch(tokens, key_mask, weights, sequence=1, layout="phone")
    assert phone.figure.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
    assert read_back(phone.figure, "batchᵀ").T.tolist() == tokens  # a column per sentence
    np.testing.assert_array_equal(read_back(phone.figure, "padding mask"), key_mask)
    laptop = plotting.padded_batch(tokens, key_mask, weights, sequence=1)
    np.testing.assert_array_equal(
        read_back(phone.figure, "weights of sentence 2"),
        read_back(laptop.figure, "weights of sentence 2"),
    )


def test_ch6_weights_by_mask_draws_one_heatmap_per_mask_with_one_colour_bar():
    from selfattn_lib import attention, masks

    tokens, lengths, x = ch6_batch()
    kinds = {
        "padding": masks.padding_mask(lengths, 7)[1],
        "causal": masks.causal_mask(7),
    }
    drawn = {
        kind: attention.scaled_dot_product_attention(x[1], x[1], x[1], mask=mask)[1]
        for kind, mask in kinds.items()
    }
    fig = plotting.weights_by_mask(drawn, tokens[1])
    (padding, causal), bar = fig.axes[:2], fig.axes[2]
    assert len(fig.axes) == 3 and bar.get_ylabel() == "attention weight"
    assert [padding.get_title(), causal.get_title()] == ["mask: padding", "mask: causal"]
    np.testing.assert_array_equal(causal.images[0].get_array(), drawn["causal"])
    assert causal.images[0].get_clim() == (0.0, 1.0) and not causal.texts
    assert (padding.get_ylabel(), causal.get_ylabel()) == ("query", "")  # one per row
    assert [t.get_text() for t in padding.get_xticklabels()] == tokens[1]
    phone = plotting.weights_by_mask(drawn, tokens[1], layout="phone")
    assert phone.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
    assert {ax.get_subplotspec().get_gridspec().ncols for ax in phone.axes[:2]} == {1}  # stacked
    assert [ax.get_ylabel() for ax in phone.axes[:2]] == ["query", "query"]
    with pytest.raises(ValueError, match="weights is empty"):
        plotting.weights_by_mask({}, tokens[1])
