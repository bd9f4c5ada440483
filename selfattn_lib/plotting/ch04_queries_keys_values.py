"""Figures of chapter 4, queries, keys and values: the two computed diagrams (the whole flow
X → Q, K, V → scores → weights → outputs, and the six steps of one query), the heatmap of
the weights when the query projection is scaled, a row of such heatmaps, one per scale, and
(for the appendix's pitfall "attention weights as explanations") the bars of two weight rows
that give the same output and of each value's contribution.

The diagrams draw the arrays the notebook computed and compute nothing themselves; their
grids take the course's role colours (queries blue, keys vermillion, values green)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from selfattn_lib.attention import scaled_dot_product_attention
from selfattn_lib.plotting.base import (
    OKABE_ITO,
    current_layout,
    for_the_page,
    heatmap,
    shared_colorbar,
    small_multiples,
)
from selfattn_lib.plotting.diagrams import Diagram, Grid, flow, grid_array


@for_the_page
def projected_attention_weights(
    x: Sequence[Sequence[float]],
    w_q: Sequence[Sequence[float]],
    w_k: Sequence[Sequence[float]],
    labels: Sequence[str],
    *,
    query_scale: float = 1.0,
    colorbar: bool = True,
    annotate: bool = True,
    ax: Axes | None = None,
) -> Figure:
    """Draw the attention weights ``softmax((X · s W_Q)(X W_K)ᵀ / √d_k)`` as a heatmap.

    ``query_scale`` (``s``) multiplies the query projection: 0 makes every query the zero
    vector (uniform weights), larger values sharpen every row, as a lower temperature would.
    The colours always run from 0 to 1, so panels for several scales compare: draw them with
    ``colorbar=False`` and give them one :func:`~selfattn_lib.plotting.shared_colorbar`.
    ``annotate=False`` leaves the numbers out of the cells (for small panels).

    Shapes
    ------
    ``x``: ``(T, D)``; ``w_q``, ``w_k``: ``(D, D_k)``; ``labels``: ``T`` strings.

    Examples
    --------
    >>> x = [[1.0, 0.0], [0.0, 1.0]]
    >>> fig = projected_attention_weights(x, [[1.0], [0.0]], [[1.0], [0.0]], ["a", "b"])
    >>> fig.axes[0].get_title()
    'weights with 1.0 × W_Q'
    """
    x = np.asarray(x, dtype=np.float64)
    w_q = np.asarray(w_q, dtype=np.float64)
    w_k = np.asarray(w_k, dtype=np.float64)
    if x.ndim != 2 or w_q.ndim != 2 or w_k.ndim != 2:
        raise ValueError("x, w_q and w_k must be matrices (T, D), (D, D_k), (D, D_k)")
    if w_q.shape != w_k.shape or w_q.shape[0] != x.shape[1]:
        raise ValueError(
            f"w_q {w_q.shape} and w_k {w_k.shape} must both be (D, D_k) with D = {x.shape[1]}"
        )
    queries, keys = x @ (query_scale * w_q), x @ w_k  # (T, D_k) each
    _, weights = scaled_dot_product_attention(queries, keys, keys)  # (T, T)
    return heatmap(
        weights,
        labels,
        labels,
        title=f"weights with {query_scale:.1f} × W_Q",
        colorbar_label="attention weight",
        vmin=0.0,
        vmax=1.0,  # the same colours for every scale, so panels compare
        annotate=annotate,
        colorbar=colorbar,
        ax=ax,
    )


@for_the_page
def query_scale_panels(
    x: Sequence[Sequence[float]],
    w_q: Sequence[Sequence[float]],
    w_k: Sequence[Sequence[float]],
    labels: Sequence[str],
    query_scales: Sequence[float],
) -> Figure:
    """Draw :func:`projected_attention_weights` once per query scale ``s``, as small multiples
    titled ``s = …`` with one shared colour bar from 0 to 1: side by side on a laptop (only
    the first panel names the queries), stacked on a phone (every panel keeps its axis titles).

    Shapes
    ------
    ``x``: ``(T, D)``; ``w_q``, ``w_k``: ``(D, D_k)``; ``labels``: ``T`` strings.

    Examples
    --------
    >>> x = [[1.0, 0.0], [0.0, 1.0]]
    >>> fig = query_scale_panels(x, [[1.0], [0.0]], [[1.0], [0.0]], ["a", "b"], [0.0, 2.0])
    >>> [ax.get_title() for ax in fig.axes[:2]]
    ['s = 0.0', 's = 2.0']
    """
    if not query_scales:
        raise ValueError("query_scales is empty: give at least one scale")
    phone = current_layout() == "phone"
    figure, panels = small_multiples(
        len(query_scales), columns=len(query_scales), panel_height=3.0 if phone else 2.6
    )
    for panel, query_scale in zip(panels, query_scales, strict=True):
        projected_attention_weights(
            x,
            w_q,
            w_k,
            labels,
            query_scale=query_scale,
            annotate=False,
            colorbar=False,
            ax=panel,
        )
        panel.set_title(f"s = {query_scale}")
    if not phone:  # side by side: one axis title for the row
        for panel in panels[1:]:
            panel.set_ylabel("")
    shared_colorbar(panels, "attention weight")  # 0 to 1 in every panel
    return figure


@for_the_page
def weights_and_contributions(
    weights_a: Sequence[float],
    weights_b: Sequence[float],
    contributions: Sequence[float],
) -> Figure:
    """Draw two panels of grouped bars, one bar pair per key: two rows of weights ``A`` and
    ``B`` (that give exactly the same output), then the weights ``a_j`` of ``A`` beside the
    lengths ``‖a_j v_j‖`` of the weighted values, its contributions. The figure draws the
    arrays it is given and computes nothing. On a phone the titles wrap and the legends go
    under the axes, where they cover no bar.

    Shapes
    ------
    ``weights_a``, ``weights_b``, ``contributions``: ``(T_k,)``.

    Examples
    --------
    >>> fig = weights_and_contributions([0.5, 0.5], [0.7, 0.3], [0.1, 0.4])
    >>> [ax.get_title() for ax in fig.axes]
    ['Two weight rows, exactly the same output', 'A large weight on a small value adds little']
    """
    rows = {
        name: np.asarray(values, dtype=np.float64)
        for name, values in (
            ("weights_a", weights_a),
            ("weights_b", weights_b),
            ("contributions", contributions),
        )
    }
    n_keys = rows["weights_a"].shape
    if len(n_keys) != 1 or any(row.shape != n_keys for row in rows.values()):
        raise ValueError(
            "weights_a, weights_b and contributions must be 1-D with one value per key, got "
            f"shapes {[row.shape for row in rows.values()]}"
        )
    phone = current_layout() == "phone"
    positions = np.arange(n_keys[0])
    figure, panels = small_multiples(2, columns=1, panel_height=3.6 if phone else 2.8)
    for ax, title, bars in [
        (panels[0], "Two weight rows, exactly the same output",
         [("weights A", rows["weights_a"], 0), ("weights B", rows["weights_b"], 1)]),
        (panels[1], "A large weight on a small value adds little",
         [("weight $a_j$", rows["weights_a"], 0),
          (r"contribution $\|a_j \mathbf{v}_j\|$", rows["contributions"], 2)]),
    ]:  # fmt: skip
        for offset, (label, heights, colour) in zip((-0.2, 0.2), bars, strict=True):
            ax.bar(positions + offset, heights, width=0.4, color=OKABE_ITO[colour], label=label)
        ax.set_title(textwrap.fill(title, 32) if phone else title)
        ax.set_xticks(positions, labels=[f"key {j}" for j in positions])
        ax.set_xlabel("key")
        ax.set_ylabel("weight or contribution")
        if phone:
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncols=2)
        else:
            ax.legend()
    return figure


def _break() -> str:
    """A title's break between its parts: a space on a laptop, a new line on a phone."""
    return "\n" if current_layout() == "phone" else " "


def _labels(name: str, labels: Sequence[str], count: int) -> list[str]:
    if len(labels) != count:
        raise ValueError(f"{name} must have {count} labels, got {len(labels)}")
    return list(labels)


@for_the_page
def attention_flow(
    tokens: Sequence[str],
    x: np.ndarray,
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    scaled_scores: np.ndarray,
    weights: np.ndarray,
    output: np.ndarray,
    *,
    features: Sequence[str],
    query_names: Sequence[str],
    key_names: Sequence[str],
    value_names: Sequence[str],
) -> Diagram:
    """Draw the whole flow of scaled dot-product self-attention on one sentence: the token
    matrix ``x``, its queries ``q``, keys ``k`` and values ``v``, the scaled scores
    ``Q Kᵀ / √d_k``, the weights (their row-wise softmax) and the outputs ``weights @ v``.
    The figure draws the arrays it is given and computes nothing.

    Shapes
    ------
    ``x``: ``(T, D)``; ``q``, ``k``: ``(T, D_k)``; ``v``: ``(T, D_v)``; ``scaled_scores``,
    ``weights``: ``(T, T)``; ``output``: ``(T, D_v)``. ``tokens``: ``T`` labels;
    ``features``: ``D``; ``query_names``, ``key_names``: ``D_k``; ``value_names``: ``D_v``.

    Examples
    --------
    >>> from selfattn_lib.plotting.diagrams import read_back
    >>> x = np.eye(2)
    >>> a = np.full((2, 2), 0.5)
    >>> d = attention_flow(["a", "b"], x, x, x, x, x, a, a @ x, features=["f", "g"],
    ...                    query_names=["f?", "g?"], key_names=["f", "g"],
    ...                    value_names=["f", "g"])
    >>> read_back(d.figure, "A").tolist()
    [[0.5, 0.5], [0.5, 0.5]]
    """
    x = grid_array("x", x, (None, None))
    n_tokens, n_features = x.shape
    q = grid_array("q", q, (n_tokens, None))
    d_k = q.shape[1]
    k = grid_array("k", k, (n_tokens, d_k))
    v = grid_array("v", v, (n_tokens, None))
    d_v = v.shape[1]
    scaled_scores = grid_array("scaled_scores", scaled_scores, (n_tokens, n_tokens))
    weights = grid_array("weights", weights, (n_tokens, n_tokens))
    output = grid_array("output", output, (n_tokens, d_v))
    tokens = _labels("tokens", tokens, n_tokens)
    return flow(
        Grid(
            "X",
            x,
            rows=tokens,
            cols=_labels("features", features, n_features),
            fmt=".1f",
            note="a row per token",
        ),
        "→",
        Grid(
            "Q",
            q,
            cols=_labels("query_names", query_names, d_k),
            role="query",
            fmt=".1f",
            note="X W_Q",
            row_names=tokens,
        ),
        Grid(
            "K",
            k,
            cols=_labels("key_names", key_names, d_k),
            role="key",
            fmt=".1f",
            note="X W_K",
            row_names=tokens,
        ),
        Grid(
            "V",
            v,
            cols=_labels("value_names", value_names, d_v),
            role="value",
            fmt=".1f",
            note="X W_V",
            row_names=tokens,
        ),
        f"Q Kᵀ / √{d_k} →",
        Grid(
            "S",
            scaled_scores,
            rows=tokens,
            cols=tokens,
            role="scores",
            fmt=".1f",
            note="scaled scores: query row · key column",
        ),
        "softmax →",
        Grid(
            "A",
            weights,
            rows=tokens,
            cols=tokens,
            role="weights",
            note="weights: each row sums to 1",
        ),
        "× V =",
        Grid(
            "Z",
            output,
            cols=_labels("value_names", value_names, d_v),
            role="output",
            note="outputs: A V",
            row_names=tokens,
        ),
        title=f"Self-attention on one sentence:{_break()}d_k = {d_k}, d_v = {d_v}",
    )


@for_the_page
def one_query_steps(
    tokens: Sequence[str],
    query_token: str,
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    scores: np.ndarray,
    scaled_scores: np.ndarray,
    weights: np.ndarray,
    weighted_values: np.ndarray,
    output: np.ndarray,
    *,
    query_names: Sequence[str],
    key_names: Sequence[str],
    value_names: Sequence[str],
) -> Diagram:
    """Draw the six steps of one query: (1) its query ``q`` and every key and value,
    (2) the dot products ``q · k_j``, (3) divided by ``√d_k``, the scores, (4) their softmax,
    (5) every value times its weight and (6) their sum, the output. One row per key token. The
    figure draws the arrays it is given and computes nothing.

    Shapes
    ------
    ``q``: ``(D_k,)``; ``k``: ``(T_k, D_k)``; ``v``, ``weighted_values``: ``(T_k, D_v)``;
    ``scores``, ``scaled_scores``, ``weights``: ``(T_k,)``; ``output``: ``(D_v,)``.

    Examples
    --------
    >>> from selfattn_lib.plotting.diagrams import read_back
    >>> k = np.eye(2)
    >>> w = np.array([0.5, 0.5])
    >>> d = one_query_steps(["a", "b"], "a", np.zeros(2), k, k, np.zeros(2), np.zeros(2),
    ...                     w, w[:, None] * k, w @ k, query_names=["f?", "g?"],
    ...                     key_names=["f", "g"], value_names=["f", "g"])
    >>> read_back(d.figure, "a").tolist()
    [[0.5], [0.5]]
    """
    k = grid_array("k", k, (None, None))
    n_keys, d_k = k.shape
    q = grid_array("q", q, (d_k,))
    v = grid_array("v", v, (n_keys, None))
    d_v = v.shape[1]
    columns = {}
    for name, array in (("scores", scores), ("scaled_scores", scaled_scores), ("weights", weights)):
        columns[name] = grid_array(name, array, (n_keys,))[:, None]  # drawn as a column
    weighted_values = grid_array("weighted_values", weighted_values, (n_keys, d_v))
    output = grid_array("output", output, (d_v,))
    tokens = _labels("tokens", tokens, n_keys)
    values = _labels("value_names", value_names, d_v)
    return flow(
        Grid(
            "q",
            q,
            cols=_labels("query_names", query_names, d_k),
            role="query",
            fmt=".1f",
            note="1. query",
        ),
        "·",
        Grid(
            "K",
            k,
            rows=tokens,
            cols=_labels("key_names", key_names, d_k),
            role="key",
            fmt=".1f",
            note="1. keys",
        ),
        "=",
        Grid("s", columns["scores"], role="scores", note="2. q·kⱼ"),
        f"÷√{d_k}",
        Grid("s′", columns["scaled_scores"], role="scores", note="3. scale"),
        "softmax",
        Grid("a", columns["weights"], role="weights", note="4. weights"),
        "×",
        Grid("V", v, rows=tokens, cols=values, role="value", fmt=".1f", note="1. values"),
        "=",
        Grid("aⱼvⱼ", weighted_values, cols=values, role="value", note="5. weigh"),
        "sum →",
        Grid("z", output, rows=[query_token], cols=values, role="output", note="6. sum"),
        title=f"One query, six steps: the query of “{query_token}”",
    )
