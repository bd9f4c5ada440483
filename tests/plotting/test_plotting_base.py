"""Tests of selfattn_lib.plotting.base: labelled, colour-blind-safe primitives that refuse bad
input."""

import base64

import numpy as np
import pytest
from matplotlib.figure import Figure

from selfattn_lib import plotting
from selfattn_lib.plotting.diagrams import Grid, flow


def test_heatmap_labels_colorbar_and_annotations():
    fig = plotting.heatmap(
        np.array([[0.1, 0.9], [0.5, 0.5]]),
        ["the", "cat"],
        ["the", "cat"],
        title="weights",
        colorbar_label="weight",
    )
    ax, colorbar = fig.axes
    assert isinstance(fig, Figure)
    assert [label.get_text() for label in ax.get_xticklabels()] == ["the", "cat"]
    assert [label.get_text() for label in ax.get_yticklabels()] == ["the", "cat"]
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("key", "query", "weights")
    assert colorbar.get_ylabel() == "weight"
    assert sorted(text.get_text() for text in ax.texts) == ["0.10", "0.50", "0.50", "0.90"]
    assert ax.images[0].get_cmap().name == plotting.SEQUENTIAL_CMAP


def test_heatmap_signed_data_is_centred_on_zero():
    fig = plotting.heatmap(np.array([[-2.0, 1.0]]), ["q"], ["a", "b"], annotate=False)
    image = fig.axes[0].images[0]
    assert image.get_cmap().name == plotting.DIVERGING_CMAP
    assert image.norm.vmin == -2.0 and image.norm.vmax == 2.0
    assert len(fig.axes[0].texts) == 0


def test_heatmap_annotation_contrast_follows_the_cell_colour():
    fig = plotting.heatmap(np.array([[0.0, 1.0]]), ["q"], ["dark", "light"])
    dark, light = fig.axes[0].texts
    assert (dark.get_color(), light.get_color()) == ("white", "black")


@pytest.mark.parametrize(
    ("matrix", "rows", "cols", "message"),
    [
        (np.zeros(3), ["a"], ["a"], r"2-D \(T_q, T_k\), got shape \(3,\)"),
        (np.zeros((2, 2)), ["a"], ["a", "b"], r"shape \(2, 2\): 1 row_labels and 2 col_labels"),
        (np.array([[np.nan]]), ["a"], ["a"], "NaN"),
    ],
)
def test_heatmap_rejects_bad_input(matrix, rows, cols, message):
    with pytest.raises(ValueError, match=message):
        plotting.heatmap(matrix, rows, cols)


def test_bar_chart_draws_one_labelled_bar_per_value():
    fig = plotting.bar_chart(np.array([0.25, 0.75]), ["a", "b"], ylabel="weight", ylim=(0, 1))
    ax = fig.axes[0]
    assert [patch.get_height() for patch in ax.patches] == [0.25, 0.75]
    assert [label.get_text() for label in ax.get_xticklabels()] == ["a", "b"]
    assert ax.get_ylim() == (0.0, 1.0)


def test_bar_chart_rejects_label_mismatch():
    with pytest.raises(ValueError, match=r"values has shape \(2,\), there are 3 labels"):
        plotting.bar_chart(np.ones(2), ["a", "b", "c"])


def test_vectors_2d_draws_labelled_arrows_in_a_square_frame():
    fig = plotting.vectors_2d({"cat": [0.9, 0.1], "car": [0.0, 1.0]}, xlabel="animal")
    ax = fig.axes[0]
    assert [text.get_text() for text in ax.texts] == ["", "cat", "", "car"]
    assert ax.get_xlim() == ax.get_ylim()
    assert ax.get_xlabel() == "animal"


def test_vectors_2d_rejects_non_2d_vectors():
    with pytest.raises(ValueError, match=r"vectors\['x'\] must have shape \(2,\), got \(3,\)"):
        plotting.vectors_2d({"x": [1, 2, 3]})


def test_axes_can_be_passed_for_small_multiples():
    fig = Figure()
    left, right = fig.subplots(1, 2)
    assert plotting.bar_chart(np.ones(2), ["a", "b"], ax=right) is fig
    assert len(left.patches) == 0 and len(right.patches) == 2


def test_one_contrast_rule_for_every_annotated_figure():
    assert plotting.text_colour((1.0, 1.0, 1.0)) == "black"
    assert plotting.text_colour((0.0, 0.0, 0.0, 1.0)) == "white"
    fig = plotting.heatmap(np.array([[0.0, 1.0]]), ["q"], ["a", "b"])
    image, texts = fig.axes[0].images[0], fig.axes[0].texts
    for text, value in zip(texts, [0.0, 1.0], strict=True):
        assert text.get_color() == plotting.text_colour(image.cmap(image.norm(value)))


def test_heatmap_colour_limits_give_panels_one_scale():
    fig = plotting.heatmap(np.array([[0.2, 0.4]]), ["q"], ["a", "b"], vmin=0.0, vmax=1.0)
    assert fig.axes[0].images[0].get_clim() == (0.0, 1.0)
    default = plotting.heatmap(np.array([[0.2, 0.4]]), ["q"], ["a", "b"])
    assert default.axes[0].images[0].get_clim() == (0.0, 0.4)


def test_small_multiples_fill_rows_of_at_most_three_and_hide_the_rest():
    fig, axes = plotting.small_multiples(5, panel_height=2.0)
    assert len(axes) == 5 and fig.get_size_inches().tolist() == [plotting.COLUMN_WIDTH, 4.0]
    assert [ax.get_visible() for ax in fig.axes] == [True] * 5 + [False]
    assert len(plotting.small_multiples(2)[0].axes) == 2
    with pytest.raises(ValueError, match="n_panels"):
        plotting.small_multiples(0)
    with pytest.raises(TypeError):
        plotting.small_multiples(2.5)


def test_shared_colorbar_is_one_bar_for_panels_of_one_scale():
    fig, axes = plotting.small_multiples(3)
    for ax in axes:
        plotting.heatmap(np.eye(2), ["a", "b"], ["a", "b"], vmax=1.0, colorbar=False, ax=ax)
    plotting.shared_colorbar(axes, "weight")
    assert len(fig.axes) == 4  # three panels and one colour bar
    assert fig.axes[-1].get_ylabel() == "weight"
    other = plotting.small_multiples(2)[1]
    plotting.heatmap(np.eye(2), ["a", "b"], ["a", "b"], colorbar=False, ax=other[0])
    plotting.heatmap(2 * np.eye(2), ["a", "b"], ["a", "b"], colorbar=False, ax=other[1])
    with pytest.raises(ValueError, match="share one colour scale"):
        plotting.shared_colorbar(other)
    with pytest.raises(ValueError, match="show an image"):
        plotting.shared_colorbar(plotting.small_multiples(1)[1])


# --- Drawn for a laptop's column and for a phone's -----------------------------------------


def test_small_multiples_stack_their_panels_for_a_phone():
    with plotting.drawn_for("phone"):
        fig, axes = plotting.small_multiples(4, columns=2, panel_height=2.0)
        two, _ = plotting.small_multiples(4, columns=3, phone_columns=2)
        narrow, _ = plotting.small_multiples(1, width=3.0)
    assert fig.get_size_inches().tolist() == [plotting.PHONE_COLUMN_WIDTH, 8.0]
    assert len({ax.get_subplotspec().colspan.start for ax in axes}) == 1, "one column"
    assert two.get_size_inches().tolist() == [plotting.PHONE_COLUMN_WIDTH, 4.8]
    assert narrow.get_size_inches()[0] == 3.0
    assert plotting.current_layout() == "laptop", "the layout ends with the block"
    with pytest.raises(ValueError, match="phone_columns must be >= 1"):
        plotting.small_multiples(2, phone_columns=0)


def test_a_single_axes_is_at_most_as_wide_as_a_phone_s_column():
    with plotting.drawn_for("phone"):
        fig = plotting.heatmap(np.eye(7), list("abcdefg"), list("abcdefg"))
    assert fig.get_size_inches()[0] == plotting.PHONE_COLUMN_WIDTH
    with pytest.raises(ValueError, match="layout must be one of"):
        with plotting.drawn_for("tablet"):
            pass


def test_a_figure_function_for_the_page_carries_its_phone_rendering(monkeypatch):
    monkeypatch.setenv(plotting.PHONE_RENDERINGS, "1")  # as `make execute` runs a notebook
    calls = []

    @plotting.for_the_page
    def weights_figure(matrix, *, title="", ax=None):
        calls.append(plotting.current_layout())
        return plotting.heatmap(matrix, ["a", "b"], ["a", "b"], title=title, ax=ax)

    matrix = np.array([[0.2, 0.8], [0.5, 0.5]])
    laptop = weights_figure(matrix, title="w")
    assert calls == ["laptop"] and not hasattr(laptop, "course_layout")
    bundle = laptop._repr_mimebundle_()
    assert calls == ["laptop", "phone"], "drawn again, for a phone, when it is shown"
    png = base64.b64decode(bundle[plotting.PHONE_MIME])
    assert png.startswith(b"\x89PNG") and int.from_bytes(png[16:20], "big") <= 380
    phone = laptop.course_phone()
    assert phone.course_layout == "phone" and phone.axes[0].get_title() == "w"
    # A panel of the caller's figure is not a figure of its own, whether the axes come as
    # one, a list or the NumPy array of Figure.subplots.
    fig, axes = plotting.small_multiples(2)
    assert not hasattr(weights_figure(matrix, ax=axes[0]), "course_phone")

    @plotting.for_the_page
    def panels(*, axes=None):
        return axes.flat[0].figure if axes is not None else plotting.small_multiples(2)[0]

    grid = Figure().subplots(1, 2)
    assert not hasattr(panels(axes=grid), "course_phone")
    assert hasattr(panels(), "course_phone")


def test_a_figure_is_drawn_for_a_phone_only_where_the_environment_asks_for_it(monkeypatch):
    """Colab, Binder and Jupyter show a figure's image/png alone: there it is drawn once."""
    calls = []

    @plotting.for_the_page
    def weights_figure(matrix):
        calls.append(plotting.current_layout())
        return plotting.heatmap(matrix, ["a", "b"], ["a", "b"])

    monkeypatch.delenv(plotting.PHONE_RENDERINGS, raising=False)
    laptop = weights_figure(np.eye(2))
    diagram = plotting.for_the_page(flow)(Grid("v", [1.0, -2.0]))
    assert laptop._repr_mimebundle_() == {} and calls == ["laptop"]
    assert plotting.PHONE_MIME not in diagram._repr_mimebundle_()
    monkeypatch.setenv(plotting.PHONE_RENDERINGS, "1")
    assert plotting.PHONE_MIME in laptop._repr_mimebundle_() and calls == ["laptop", "phone"]
    assert plotting.PHONE_MIME in diagram._repr_mimebundle_()
