"""Cross-references between the book's pages: the glossary defines the course's words and
links each to where it is taught, and the links of the glossary and of the appendix
("Pitfalls and myths") point at pages that exist and are published in `_toc.yml`.

The link checks fail while a page they point at is still being written (chapters 7–11 when
the glossary and the appendix were added). That is intended: the site build (`-n`) would fail
on the same links.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from course import ROOT, read_notebook, toc_files

from selfattn_lib import masks
from selfattn_lib.multihead import split_heads
from selfattn_lib.softmax import softmax
from selfattn_lib.transformer import TransformerConfig

GLOSSARY = ROOT / "book" / "glossary.md"
PITFALLS = ROOT / "notebooks" / "pitfalls.ipynb"
# {doc}`target` or {doc}`text <target>`
DOC_LINK = re.compile(r"\{doc\}`(?:[^`<]*<)?([^`<>]+)>?`")
TERM_REF = re.compile(r"\{term\}`(?:[^`<]*<)?([^`<>]+)>?`")
# Words the course teaches in Part II and III, which the glossary must have from the start.
REQUIRED_TERMS = [
    "multi-head attention",
    "head",
    "W_O",
    "positional encoding",
    "sinusoidal encoding",
    "residual connection",
    "layer normalization",
    "feed-forward network",
    "encoder",
    "decoder",
    "cross-attention",
    "teacher forcing",
    "greedy decoding",
    "exact match",
    "KV cache",
    "online softmax",
    "FlashAttention",
]


def glossary_entries() -> list[tuple[list[str], str]]:
    """(terms, definition) of every entry of the {glossary} directive of book/glossary.md."""
    text = GLOSSARY.read_text(encoding="utf-8")
    block = re.search(r"^```\{glossary\}\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    assert block, "book/glossary.md holds a ```{glossary} directive"
    entries, terms, definition = [], [], []
    for line in block.group(1).splitlines() + [""]:
        if line.startswith(" "):
            definition.append(line.strip())
            continue
        if definition:  # a blank line or the next term ends the entry
            entries.append((terms, " ".join(definition)))
            terms, definition = [], []
        if line.strip() and not line.startswith(":"):
            terms.append(line.strip())
    assert not terms, f"terms without a definition: {terms}"
    return entries


def published_target(link: str, page: Path) -> str | None:
    """The `_toc.yml` name of the page a {doc} link of `page` points at, if it exists."""
    target = (page.parent / link).resolve()
    for suffix in (".md", ".ipynb"):
        if target.with_suffix(suffix).exists():
            return target.relative_to(ROOT).as_posix()
    return None


def test_glossary_is_published():
    assert "book/glossary" in toc_files()


def test_glossary_terms_are_unique_and_cover_the_course():
    terms = [term.lower() for entry_terms, _ in glossary_entries() for term in entry_terms]
    assert len(terms) == len(set(terms)), "each term is defined once"
    assert len(glossary_entries()) >= 60, "every word the course uses"
    for required in REQUIRED_TERMS:
        assert required.lower() in terms, f"the glossary defines {required!r}"


def test_every_glossary_entry_links_to_where_it_is_taught():
    for terms, definition in glossary_entries():
        assert DOC_LINK.search(definition), f"{terms[0]}: the definition links a page with {{doc}}"
        sentences = definition.split(". ")
        assert len(sentences) <= 4, f"{terms[0]}: one or two sentences (and the links)"


@pytest.mark.parametrize(
    ("page", "text"),
    [
        (GLOSSARY, GLOSSARY.read_text(encoding="utf-8")),
        (
            PITFALLS,
            "\n".join(cell.source for cell in read_notebook(PITFALLS).cells)
            if PITFALLS.exists()
            else "",
        ),
    ],
    ids=["glossary", "pitfalls"],
)
def test_links_point_at_published_pages(page, text):
    """Fails until every chapter the page links to exists and is in `_toc.yml`."""
    published = set(toc_files())
    links = DOC_LINK.findall(text)
    assert links, f"{page.name} links other pages"
    missing = sorted({link for link in links if published_target(link, page) is None})
    assert not missing, f"{page.name} links pages that do not exist (yet): {missing}"
    unpublished = sorted(
        {link for link in links if published_target(link, page) not in published} - set(missing)
    )
    assert not unpublished, f"{page.name} links pages missing from _toc.yml: {unpublished}"


def test_term_references_name_glossary_entries():
    """Every {term}`…` in the book names a term of the glossary (Sphinx ignores case)."""
    terms = {term.lower() for entry_terms, _ in glossary_entries() for term in entry_terms}
    pages = sorted((ROOT / "book").glob("*.md")) + sorted((ROOT / "notebooks").glob("*.ipynb"))
    for page in pages:
        if page.suffix == ".ipynb":
            text = "\n".join(cell.source for cell in read_notebook(page).cells)
        else:
            text = page.read_text(encoding="utf-8")
        text = re.sub(r"``.*?``", "", text)  # a role shown as code is not a reference
        for term in TERM_REF.findall(text):
            assert term.lower() in terms, f"{page.name}: {{term}}`{term}` is not in the glossary"


# {doc}`../notebooks/<chapter>` and what follows it up to the next link: the sections it names.
CHAPTER_LINK = re.compile(r"\{doc\}`\.\./notebooks/([^`]+)`((?:[^{]|\{(?!doc|ref))*)")
ITALIC = re.compile(r"(?<![*\w])\*([^*]+)\*(?!\*)")


def headings(notebook: str) -> set[str]:
    """The headings of a chapter, without their "#" marks, backticks and "Going deeper: "."""
    found = set()
    for cell in read_notebook(ROOT / "notebooks" / f"{notebook}.ipynb").cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if match := re.match(r"^#{1,6} (.+)$", line):
                    found.add(
                        match.group(1).strip().replace("`", "").removeprefix("Going deeper: ")
                    )
    return found


def test_the_glossary_names_sections_that_exist():
    """Each entry names the section that teaches it, in italics after the chapter's link."""
    stale = [
        (notebook, section)
        for notebook, after in CHAPTER_LINK.findall(GLOSSARY.read_text(encoding="utf-8"))
        for section in (" ".join(found.split()) for found in ITALIC.findall(after))
        if section.replace("`", "") not in headings(notebook)
    ]
    assert not stale, f"sections the glossary names but the chapters no longer have: {stale}"


# --- What the glossary states, computed ----------------------------------------------------


def definition(term: str) -> str:
    """The definition of the glossary entry that has `term` among its terms."""
    found = [text for terms, text in glossary_entries() if term in terms]
    assert len(found) == 1, f"one glossary entry defines {term!r}"
    return found[0]


def test_glossary_float16_limits():
    """bfloat16, overflow / underflow: 65,504 is float16's largest number, 65,520 rounds to
    infinity; below the smallest normal number values lose precision before they are 0, and
    NumPy signals underflow there already (IEEE 754: a tiny, inexact result)."""
    assert "65,504" in definition("bfloat16") and "65,520" in definition("bfloat16")
    assert np.finfo(np.float16).max == 65504
    assert np.float16(65519) == 65504
    with np.errstate(over="ignore"):  # the overflow is the point
        assert np.isinf(np.float16(65520))
    assert "subnormal" in definition("underflow")
    subnormal = np.float16(1e-7)
    assert 0 < subnormal < np.finfo(np.float16).smallest_normal
    assert subnormal != np.float32(1e-7)  # fewer significant digits
    assert np.float16(1e-8) == 0
    assert "below the smallest normal number" in definition("underflow")
    with np.errstate(under="raise"), pytest.raises(FloatingPointError, match="underflow"):
        np.float32(1e-30) * np.float32(1e-10)  # 1e-40: subnormal, not zero
    with np.errstate(under="ignore"):
        assert np.float32(1e-30) * np.float32(1e-10) > 0


def test_glossary_score_is_scaled_from_chapter_4_on_as_chapter_4_says():
    """The glossary's "score" agrees with chapter 4, which makes the scaled dot products the
    scores from there on and calls the unscaled ones dot products in its six steps."""
    text = definition("score")
    assert "in chapters 1–3" in text and "from chapter 4 on" in text
    assert "scaled score" not in text
    chapter_4 = read_notebook(ROOT / "notebooks" / "04_queries_keys_values.ipynb")
    prose = " ".join(
        " ".join(cell.source.split()) for cell in chapter_4.cells if cell.cell_type == "markdown"
    )
    assert (
        "from here on the {term}`scores <score>`, what the softmax is applied to, are the "
        "scaled dot products" in prose
    )
    assert "2. dot products: $s_j" in prose and "giving the scores $s'_j$" in prose


def hand_written_softmax(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    """A stable softmax written by hand with NumPy, as chapter 2 writes it: the total of the
    exponentials is kept in the scores' dtype."""
    exponentials = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return exponentials / exponentials.sum(axis=axis, keepdims=True)


def test_glossary_stable_softmax_total_goes_wrong_in_a_float16_sum_not_in_the_libraries():
    """NumPy adds float16 numbers along the last axis in float32 but stores the total as
    float16: a total from 65,520 on overflows (65,519 rounds down to 65,504), and what counts is
    the total, not the number of keys; along another axis it adds in float16, where a total of
    ones stops at 2,048. torch.softmax and selfattn_lib's softmax keep the total in float32
    along any dimension."""
    text = definition("stable softmax")
    assert "overflows once the total reaches 65,520" in text and "1/2,048 each" in text
    assert "`selfattn_lib`'s softmax add it up in float32" in text
    assert "long float16 row" not in text, "many keys: length is the Euclidean norm"
    with np.errstate(over="ignore"):
        fits = hand_written_softmax(np.zeros(65_519, dtype=np.float16))
        assert (fits == np.float16(1 / 65_519)).all()
        assert not hand_written_softmax(np.zeros(65_520, dtype=np.float16)).any()
    spread = np.random.default_rng(0).normal(size=200_000).astype(np.float16)  # (T_k,)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow: the total stays near 5,000
        assert abs(hand_written_softmax(spread).astype(np.float64).sum() - 1) < 1e-2
    assert np.float16(2_048) + np.float16(1) == 2_048  # a float16 total of ones stops there
    assert np.ones(5_000, dtype=np.float16).sum() == 5_000  # not float16 running sums
    assert (np.ones((5_000, 2), dtype=np.float16).sum(axis=0) == 2_048).all()  # float16 ones
    row = np.zeros(70_000, dtype=np.float16)  # 70,000 equal scores, as the appendix shows
    with np.errstate(over="ignore"):
        assert np.isinf(np.ones(70_000, dtype=np.float16).sum())
        assert not hand_written_softmax(row).any(), "the float16 total overflows: every weight 0"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow, no warning
        columns = hand_written_softmax(np.zeros((4_096, 2), dtype=np.float16), axis=0)
        assert (columns == np.float16(1 / 2_048)).all()
        # selfattn_lib's softmax: right along both axes, without a warning
        assert (softmax(row) == np.float16(1 / 70_000)).all()
        down = softmax(np.zeros((4_096, 2), dtype=np.float16), axis=0)
        assert (down == np.float16(1 / 4_096)).all()
    for dtype in (torch.float16, torch.bfloat16):
        weights = torch.softmax(torch.zeros(70_000, dtype=dtype), dim=-1)
        assert torch.allclose(weights.double(), torch.tensor(1 / 70_000).double(), rtol=1e-2)
        down = torch.softmax(torch.zeros(4_096, 2, dtype=dtype), dim=0)
        assert (down.double() == 1 / 4_096).all()


def test_glossary_rank_collapse_residuals_slow_it_layer_norm_does_not_stop_it():
    """48 random layers of attention and feed-forward networks (D = 32, 4 heads, 8 tokens) at
    PyTorch's default initialisation: the tokens' relative spread shrinks with residual
    connections, with post-norm as without layer normalization, and more slowly with pre-norm."""
    text = definition("rank collapse")
    assert "relative to their size" in text and "more slowly with pre-norm" in text
    torch.manual_seed(0)
    d_model, n_layers = 32, 48
    attentions = [
        torch.nn.MultiheadAttention(d_model, 4, batch_first=True, dtype=torch.float64)
        for _ in range(n_layers)
    ]
    ffns = [
        torch.nn.Sequential(
            torch.nn.Linear(d_model, 4 * d_model),
            torch.nn.ReLU(),
            torch.nn.Linear(4 * d_model, d_model),
        ).double()
        for _ in range(n_layers)
    ]
    x = torch.randn(1, 8, d_model, dtype=torch.float64)  # (B, T, D)

    def spread(h):
        return ((h - h.mean(dim=1, keepdim=True)).norm() / h.norm()).item()

    def norm(h):
        return F.layer_norm(h, (d_model,))

    def identity(h):
        return h

    def run(variant):
        h = x
        with torch.no_grad():
            for attention, ffn in zip(attentions, ffns, strict=True):
                if variant == "pre-norm":
                    z = norm(h)
                    h = h + attention(z, z, z, need_weights=False)[0]
                    h = h + ffn(norm(h))
                else:
                    after = norm if variant == "post-norm" else identity
                    h = after(h + attention(h, h, h, need_weights=False)[0])
                    h = after(h + ffn(h))
        return spread(h)

    start, residual, post, pre = spread(x), run("residual"), run("post-norm"), run("pre-norm")
    assert residual < start / 4 and post < start / 4, "the collapse still comes"
    assert pre > 2 * max(residual, post), "pre-norm slows it"


def test_glossary_arg_max_with_ties_shares_the_weight():
    assert "tied" in definition("arg max")
    weights = softmax(np.array([2.0, 2.0, 1.0]), temperature=1e-3)
    np.testing.assert_allclose(weights, [0.5, 0.5, 0.0], atol=1e-12)


def test_glossary_causal_mask_is_aligned_bottom_right():
    assert "j \\le i + T_k - T_q" in definition("causal mask")
    t_q, t_k = 2, 5
    i, j = np.indices((t_q, t_k))
    np.testing.assert_array_equal(masks.causal_mask(t_q, t_k), j <= i + t_k - t_q)
    np.testing.assert_array_equal(masks.causal_mask(4), np.tril(np.ones((4, 4), dtype=bool)))


def test_glossary_label_smoothing_spreads_epsilon_over_all_tokens():
    """ε/V on every token, the right one included, as PyTorch's `label_smoothing` does."""
    assert "all $V$ tokens" in definition("label smoothing")
    epsilon, vocab, right = 0.1, 7, 3
    logits = torch.randn(1, vocab, generator=torch.Generator().manual_seed(0))
    target = torch.full((1, vocab), epsilon / vocab)
    target[0, right] += 1 - epsilon
    by_hand = -(target * F.log_softmax(logits, dim=-1)).sum()
    pytorch = F.cross_entropy(logits, torch.tensor([right]), label_smoothing=epsilon)
    assert torch.allclose(by_hand, pytorch)
    others_only = torch.full((1, vocab), epsilon / (vocab - 1))  # ε over the others
    others_only[0, right] = 1 - epsilon
    assert not torch.allclose(-(others_only * F.log_softmax(logits, dim=-1)).sum(), pytorch)


def test_glossary_copying_score_is_one_for_a_head_that_raises_one_fixed_token():
    """A heuristic: the identity scores 1, minus the identity -1, and so does (+1) a circuit
    that raises token 0 whatever the head reads, 1 e_0ᵀ, which does not copy."""
    assert "heuristic" in definition("copying score")

    def copying_score(circuit):
        eigenvalues = np.linalg.eigvals(circuit)
        return eigenvalues.sum().real / np.abs(eigenvalues).sum()

    raises_token_0 = np.ones((6, 1)) @ np.eye(6)[:1]  # every row: +1 on token 0
    assert copying_score(np.eye(6)) == pytest.approx(1)
    assert copying_score(-np.eye(6)) == pytest.approx(-1)
    assert copying_score(raises_token_0) == pytest.approx(1)
    assert (raises_token_0.argmax(axis=-1) != np.arange(6)).sum() == 5  # writes another token


def test_glossary_model_dimension_of_the_paper():
    assert "512" in definition("model dimension") and "1,024" in definition("model dimension")
    assert TransformerConfig.base().d_model == 512 and TransformerConfig.big().d_model == 1024


def test_glossary_uses_length_for_the_norm_and_dimension_for_d_k():
    """One meaning for "length": the Euclidean norm. A vector's number of entries is its
    dimension (d_k and d_v); "sequence length" counts tokens."""
    assert definition("length").startswith("The Euclidean length")
    for term in ("d_k", "d_v"):
        assert definition(term).startswith("The dimension"), term
        assert "length of one" not in definition(term), term


def test_glossary_dot_product_a_longer_vector_scores_lower_when_it_points_away():
    """The sign of a · b is that of cos θ: doubling a key doubles its score, so a key that
    points away from the query scores lower, and gets a smaller weight, when it is longer."""
    text = definition("dot product")
    assert "its sign is that of" in text and "lower if it points away" in text
    query = np.array([1.0, 0.0])
    keys = np.array([[0.2, 1.0], [-0.5, 0.0], [-1.0, 0.0]])  # key 2 = twice key 1
    scores = keys @ query
    assert scores[2] == 2 * scores[1] < scores[1] < 0
    weights = softmax(scores)
    assert weights[2] < weights[1], "the longer key pointing away gets the smaller weight"


def test_glossary_d_k_equals_the_model_dimension_only_by_convention():
    """d_k = D / H in the paper; chapter 4's single head has D = 8 and d_k = 2."""
    text = definition("d_k")
    assert "unless there is one head" not in text and "$D = 8$, $d_k = 2$" in text
    chapter_4 = read_notebook(ROOT / "notebooks" / "04_queries_keys_values.ipynb")
    code = "\n".join(cell.source for cell in chapter_4.cells if cell.cell_type == "code")
    assert "W_Q = np.zeros((8, 2))  # (D, D_k)" in code


def test_notation_defines_the_head_size_it_uses_in_formulas():
    """The Attention table writes W_V^h as D × D_h: D_h is a formula symbol there, D / h."""
    text = (ROOT / "book" / "notation.md").read_text(encoding="utf-8")
    attention = text.split("## Attention", 1)[1].split("\n## ", 1)[0]
    assert "| $D_h$ |" in attention and "$D_h = d_k = d_v = D / h$" in attention
    assert "$D \\times D_h$" in attention
    heads = split_heads(np.zeros((1, 5, 12)), 4)  # (B, T, D) -> (B, H, T, D_h)
    assert heads.shape == (1, 4, 5, 12 // 4)
