"""Tests of selfattn_lib.plotting.ch01_similarity: the figures of chapter 1."""

import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.text import Text

from selfattn_lib import embeddings, plotting, similarity
from selfattn_lib.plotting.diagrams import read_back


def test_similarity_geometry_states_the_values_in_the_title():
    fig = plotting.similarity_geometry([2.0, 0.0], [1.0, 1.0], title="two vectors")
    ax = fig.axes[0]
    assert isinstance(fig, Figure)
    assert ax.get_title() == (
        "two vectors\n|a| = 2.00, |b| = 1.41, θ = 45°\na·b = 2.00, cos θ = 0.71"
    )
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("component 1", "component 2")
    assert [text.get_text() for text in ax.texts if text.get_text()] == [
        "θ",
        r"$\mathbf{a}$",
        r"$\mathbf{b}$",
    ]


def test_similarity_geometry_draws_the_shadow_of_b_on_a():
    # b = (-1, 1) at 135° from a = (2, 0): its shadow on a's line runs from 0 to -1.
    ax = plotting.similarity_geometry([2.0, 0.0], [-1.0, 1.0]).axes[0]
    shadow = next(line for line in ax.lines if line.get_label() == "shadow of b on a")
    np.testing.assert_allclose(shadow.get_xydata(), [[0.0, 0.0], [-1.0, 0.0]], atol=1e-12)
    assert "a·b = -2.00, cos θ = -0.71" in ax.get_title()
    assert "θ = 135°" in ax.get_title()


def test_similarity_geometry_never_prints_minus_zero():
    angle = np.radians(90.0)
    ax = plotting.similarity_geometry([1.5, 0.0], [np.cos(angle), -np.sin(angle)]).axes[0]
    assert "a·b = 0.00, cos θ = 0.00" in ax.get_title()


def test_similarity_geometry_handles_a_zero_vector():
    ax = plotting.similarity_geometry([1.0, 0.0], [0.0, 0.0]).axes[0]
    assert ax.get_title().endswith("a·b = 0.00, cos θ undefined (zero vector)")
    assert "θ undefined" in ax.get_title()
    assert not ax.patches, "no angle is drawn"


def test_similarity_geometry_reach_fixes_a_square_frame_for_small_multiples():
    fig = Figure()
    left, right = fig.subplots(1, 2)
    assert plotting.similarity_geometry([1, 0], [0, 3], reach=4.0, ax=right) is fig
    assert right.get_xlim() == right.get_ylim() == (-4.0, 4.0)
    assert not left.lines
    automatic = plotting.similarity_geometry([1, 0], [0, 3]).axes[0]
    assert automatic.get_xlim()[1] >= 3.0


@pytest.mark.parametrize(
    ("a", "b", "reach", "message"),
    [
        ([1, 0, 0], [1, 0], None, r"a must have shape \(2,\), got \(3,\)"),
        ([1, 0], [np.nan, 0], None, "b contains NaN or infinity"),
        ([1, 0], [1, 1], 0.0, "reach must be a finite positive number"),
    ],
)
def test_similarity_geometry_rejects_bad_input(a, b, reach, message):
    with pytest.raises(ValueError, match=message):
        plotting.similarity_geometry(a, b, reach=reach)


# --- Computed diagrams: the drawn numbers, read back, against the concept functions ---------


def test_similarity_matrix_diagram_draws_the_dot_products_of_the_running_example():
    tokens = embeddings.tokenize(embeddings.RUNNING_EXAMPLE)
    x = embeddings.embed(tokens)  # (T, D) = (7, 8)
    diagram = plotting.similarity_matrix_diagram(tokens, embeddings.FEATURES, x, x @ x.T)
    drawn = read_back(diagram.figure, "S")  # (T, T), rounded to 2 decimals
    expected = similarity.similarity_matrix(embeddings.embed(embeddings.RUNNING_EXAMPLE))
    np.testing.assert_allclose(drawn, expected, rtol=0, atol=0.005 + 1e-12)
    # The hand-made features are whole tenths: one decimal shows them exactly.
    np.testing.assert_array_equal(read_back(diagram.figure, "X"), x)
    np.testing.assert_array_equal(read_back(diagram.figure, "Xᵀ"), x.T)
    assert diagram.alt.startswith(
        "Computed diagram: The similarity matrix of a sentence: S = X Xᵀ: "
        "X (7 × 8) × Xᵀ (8 × 7) = S (7 × 7)."
    )
    assert diagram.figure.get_size_inches()[0] <= plotting.COLUMN_WIDTH


def test_feature_products_draws_each_product_and_each_sum():
    words = ["cat", "dog", "car"]
    cat, dog, car = embeddings.embed(words)
    others = np.stack([dog, car])  # (2, D)
    diagram = plotting.feature_products(
        "cat",
        cat,
        ["dog", "car"],
        others,
        cat * others,
        (cat * others).sum(-1),
        embeddings.FEATURES,
    )
    sums = read_back(diagram.figure, "cat · word")[:, 0]
    expected = [similarity.dot_product(cat, dog), similarity.dot_product(cat, car)]
    np.testing.assert_allclose(sums, expected, rtol=0, atol=0.005 + 1e-12)
    products = read_back(diagram.figure, "products")  # (2, D)
    for row, other in zip(products, (dog, car), strict=True):
        # Each product is the dot product of cat with one feature of the other word alone.
        alone = [similarity.dot_product(cat, other * np.eye(8)[i]) for i in range(8)]
        np.testing.assert_allclose(row, alone, rtol=0, atol=0.005 + 1e-12)
    np.testing.assert_array_equal(read_back(diagram.figure, "dog, car"), others)
    assert "cat · word: dog [1.76]; car [0.60]." in diagram.alt
    # The element-wise product is drawn ⊙: "×" between grids is the matrix product of
    # similarity_matrix_diagram, and (1 × 8) times (2 × 8) is no matrix product.
    assert "cat (1 × 8) ⊙ dog, car (2 × 8) = products (2 × 8)" in diagram.alt
    assert "products: cat⊙dog [0.81, 0.72," in diagram.alt and "cat×" not in diagram.alt


def test_diagrams_show_two_decimals_when_the_inputs_are_not_whole_tenths():
    x = np.array([[0.05, 1.0], [0.5, 0.25]])
    diagram = plotting.similarity_matrix_diagram(["a", "b"], ["f", "g"], x, x @ x.T)
    np.testing.assert_array_equal(read_back(diagram.figure, "X"), x)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: plotting.similarity_matrix_diagram(
                ["a"], ["f", "g"], np.ones((2, 2)), np.ones((2, 2))
            ),
            "tokens must have 2 labels, got 1",
        ),
        (
            lambda: plotting.similarity_matrix_diagram(
                ["a", "b"], ["f", "g"], np.ones((2, 2)), np.ones((2, 3))
            ),
            r"scores must have shape \(T, T\) = \(2, 2\)",
        ),
        (
            lambda: plotting.feature_products(
                "a", np.ones(2), ["b"], np.ones((1, 3)), np.ones((1, 2)), np.ones(1), ["f", "g"]
            ),
            r"other_vectors must have shape \(n, D\) = \(1, 2\)",
        ),
        (
            lambda: plotting.feature_products(
                "a", np.ones(2), ["b"], np.ones((1, 2)), np.ones((1, 2)), np.ones(2), ["f", "g"]
            ),
            r"dot_products must have shape \(n,\) = \(1,\)",
        ),
    ],
)
def test_diagrams_reject_arrays_that_do_not_fit(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_angle_curves_stretch_the_dot_product_by_the_length_and_not_the_cosine():
    fig = plotting.angle_curves([0.0, 1.5], lengths=[0.5, 2.0], n_angles=5)  # 0°, 45°, ... 180°
    dot_axes, cos_axes = fig.axes
    expected = 1.5 * np.cos(np.radians([0, 45, 90, 135, 180]))  # |a| cos θ, for |b| = 1
    dots = [line.get_ydata() for line in dot_axes.lines[1:]]  # after the zero line
    np.testing.assert_allclose(dots[0], 0.5 * expected, atol=1e-12)
    np.testing.assert_allclose(dots[1], 2.0 * expected, atol=1e-12)
    for line in cos_axes.lines[1:]:
        np.testing.assert_allclose(line.get_ydata(), expected / 1.5, atol=1e-12)
    assert fig._suptitle.get_text() == "a is fixed, |a| = 1.5; b turns from 0° to 180°"
    with pytest.raises(ValueError, match="nonzero finite 2-D vector"):
        plotting.angle_curves([0.0, 0.0], lengths=[1.0])
    with pytest.raises(ValueError, match="one to three positive numbers"):
        plotting.angle_curves([1.0, 0.0], lengths=[1.0, 2.0, 3.0, 4.0])


def test_two_rankings_draws_both_measures_and_names_each_winner():
    words = ["cat", "horse", "tired"]
    dog, vectors = embeddings.embed(["dog"])[0], embeddings.embed(words)
    fig = plotting.two_rankings("dog", dog, words, vectors)
    dot_axes, cos_axes = fig.axes
    heights = [[bar.get_height() for bar in ax.patches] for ax in (dot_axes, cos_axes)]
    np.testing.assert_allclose(heights[0], [similarity.dot_product(dog, v) for v in vectors])
    np.testing.assert_allclose(heights[1], [similarity.cosine_similarity(dog, v) for v in vectors])
    assert dot_axes.get_title() == "dot product with dog: horse wins"
    assert cos_axes.get_title() == "cosine with dog: cat wins"
    with pytest.raises(ValueError, match="vectors must have shape"):
        plotting.two_rankings("dog", dog, words, vectors[:, :3])


def test_dot_and_cosine_matrices_draw_every_pair_of_tokens():
    tokens = embeddings.tokenize(embeddings.RUNNING_EXAMPLE)
    x = embeddings.embed(tokens)
    fig = plotting.dot_and_cosine_matrices(x, tokens)
    dot_axes, cos_axes = fig.axes[:2]  # then their two colour bars
    np.testing.assert_allclose(dot_axes.images[0].get_array(), x @ x.T)
    norms = np.linalg.norm(x, axis=-1)
    np.testing.assert_allclose(cos_axes.images[0].get_array(), x @ x.T / np.outer(norms, norms))
    assert [label.get_text() for label in cos_axes.get_yticklabels()] == tokens
    with pytest.raises(ValueError, match="tokens"):
        plotting.dot_and_cosine_matrices(x, tokens[:-1])


# --- Drawn for a phone ----------------------------------------------------------------------


def _texts(figure):
    """Every text drawn in a figure: titles, axis and tick labels, legends, cell values."""
    figure.canvas.draw()
    return {text.get_text() for text in figure.findobj(Text) if text.get_text()}


def test_word_features_draws_a_row_per_word_and_a_column_per_feature():
    words = ["cat", "dog", "car"]
    x = embeddings.embed(words)
    fig = plotting.word_features(x, words, embeddings.FEATURES, title="three words")
    ax, colour_bar = fig.axes
    np.testing.assert_allclose(ax.images[0].get_array(), x)
    assert ax.get_title() == "three words"
    assert (ax.get_xlabel(), ax.get_ylabel(), colour_bar.get_ylabel()) == (
        "feature",
        "word",
        "feature value",
    )
    assert [label.get_text() for label in ax.get_yticklabels()] == words
    assert [label.get_text() for label in ax.get_xticklabels()] == list(embeddings.FEATURES)
    assert [text.get_text() for text in ax.texts[:2]] == [f"{x[0, 0]:.1f}", f"{x[0, 1]:.1f}"]
    assert fig.get_size_inches().tolist() == [plotting.COLUMN_WIDTH, 3.7]
    with pytest.raises(ValueError, match="words must have 3 labels"):
        plotting.word_features(x, words[:2], embeddings.FEATURES)


def test_word_features_on_a_phone_wraps_its_title_and_puts_its_colour_bar_below():
    words = ["the", "cat", "sat", "because", "it", "was", "tired", "dog", "car"]
    x = embeddings.embed(words)
    title = "The running example, then dog and car: one row per word"
    laptop = plotting.word_features(x, words, embeddings.FEATURES, title=title)
    phone = plotting.word_features(x, words, embeddings.FEATURES, title=title, layout="phone")
    assert phone.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
    ax, colour_bar = phone.axes
    assert "\n" in ax.get_title() and ax.get_title().split() == title.split()
    assert colour_bar.get_xlabel() == "feature value", "a horizontal colour bar"
    assert colour_bar.get_position().y1 < ax.get_position().y0, "under the map"
    assert _words(laptop) <= _words(phone)


def _words(figure):
    return {word for text in _texts(figure) for word in text.split() if word[0].isalpha()}


@pytest.mark.parametrize(
    "draw",
    [
        lambda **layout: plotting.angle_curves([1.5, 0.0], [0.5, 1.0, 2.0], **layout),
        lambda **layout: plotting.two_rankings(
            "dog",
            embeddings.embed(["dog"])[0],
            ["cat", "kitten", "horse", "tired", "animal", "car"],
            embeddings.embed(["cat", "kitten", "horse", "tired", "animal", "car"]),
            **layout,
        ),
        lambda **layout: plotting.dot_and_cosine_matrices(
            embeddings.embed(embeddings.tokenize(embeddings.RUNNING_EXAMPLE)),
            embeddings.tokenize(embeddings.RUNNING_EXAMPLE),
            **layout,
        ),
        lambda **layout: plotting.similarity_geometry([2.0, 0.5], [0.6, 1.6], **layout),
    ],
    ids=["angle_curves", "two_rankings", "dot_and_cosine_matrices", "similarity_geometry"],
)
def test_chapter_1_figures_stack_their_panels_on_a_phone_and_keep_every_word(draw):
    laptop, phone = draw(), draw(layout="phone")
    assert phone.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
    assert plotting.PHONE_MIME in laptop._repr_mimebundle_()
    panels = [ax for ax in phone.axes if ax.get_label() != "<colorbar>"]
    assert len({round(ax.get_position().x0, 2) for ax in panels}) == 1, "one column of panels"
    assert _words(laptop) <= _words(phone)


def test_chapter_1_diagrams_wrap_their_titles_on_a_phone():
    tokens = embeddings.tokenize(embeddings.RUNNING_EXAMPLE)
    x = embeddings.embed(tokens)
    phone = plotting.similarity_matrix_diagram(
        tokens, embeddings.FEATURES, x, x @ x.T, layout="phone"
    )
    assert phone.figure.get_size_inches()[0] <= plotting.PHONE_COLUMN_WIDTH
    assert "The similarity matrix of a sentence:\nS = X Xᵀ" in _texts(phone.figure)
    np.testing.assert_allclose(read_back(phone.figure, "S"), np.round(x @ x.T, 2))
    cat, others = embeddings.embed(["cat"])[0], embeddings.embed(["dog", "car"])
    products = plotting.feature_products(
        "cat", cat, ["dog", "car"], others, cat * others, (cat * others).sum(-1),
        embeddings.FEATURES, layout="phone",
    )  # fmt: skip
    # Eight two-decimal products and their labels need a little more than 3.8 in.
    assert products.figure.get_size_inches()[0] == 3.95
    assert "Dot products with cat:\nmultiply feature by feature, then add up" in _texts(
        products.figure
    )
