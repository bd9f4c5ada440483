"""A tiny, hand-made set of word vectors for the first chapters.

Real embeddings (word2vec, GloVe, a Transformer's embedding table) are learned from large
corpora and have hundreds of unnamed dimensions. The course needs something a learner can
read: eight named features, each between 0 and 1, chosen by hand so that similarity is
visibly meaningful (``cat`` is closer to ``dog`` than to ``car``). Nothing is downloaded.

The vectors deliberately differ in length: frequent grammatical words are short, big
vehicles are long. That is what makes the dot product and the cosine disagree in chapter 1
and lets a token attend to a neighbour more than to itself in chapter 3.

Shapes
------
``embed`` returns ``(T, D)`` for ``T`` tokens and ``D = len(FEATURES) = 8``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

FEATURES: tuple[str, ...] = (
    "animal",
    "domestic",
    "vehicle",
    "food",
    "motion",
    "size",
    "place",
    "grammar",
)

# One row per word; columns in the order of FEATURES.
#              animal domestic vehicle food motion size place grammar
_TABLE: dict[str, tuple[float, ...]] = {
    # animals
    "cat":     (0.90, 0.80, 0.00, 0.00, 0.30, 0.20, 0.00, 0.00),
    "dog":     (0.90, 0.90, 0.00, 0.00, 0.50, 0.40, 0.00, 0.00),
    "kitten":  (0.80, 0.90, 0.00, 0.00, 0.20, 0.05, 0.00, 0.00),
    "lion":    (1.00, 0.00, 0.00, 0.00, 0.60, 0.80, 0.00, 0.00),
    "horse":   (0.90, 0.30, 0.30, 0.00, 0.80, 0.90, 0.00, 0.00),
    "animal":  (1.00, 0.20, 0.00, 0.00, 0.30, 0.30, 0.00, 0.00),
    "fish":    (0.60, 0.30, 0.00, 0.60, 0.30, 0.10, 0.00, 0.00),
    # vehicles
    "car":     (0.00, 0.30, 1.00, 0.00, 0.80, 0.60, 0.00, 0.00),
    "bus":     (0.00, 0.00, 1.00, 0.00, 0.70, 1.00, 0.00, 0.00),
    "bike":    (0.00, 0.20, 0.80, 0.00, 0.70, 0.20, 0.00, 0.00),
    "train":   (0.00, 0.00, 1.00, 0.00, 0.90, 1.00, 0.10, 0.00),
    # food
    "apple":   (0.00, 0.20, 0.00, 1.00, 0.00, 0.10, 0.00, 0.00),
    "bread":   (0.00, 0.40, 0.00, 0.90, 0.00, 0.10, 0.00, 0.00),
    "milk":    (0.10, 0.40, 0.00, 0.90, 0.00, 0.05, 0.00, 0.00),
    # things and places
    "mat":     (0.00, 0.60, 0.00, 0.00, 0.00, 0.20, 0.40, 0.00),
    "sofa":    (0.00, 0.80, 0.00, 0.00, 0.00, 0.50, 0.30, 0.00),
    "house":   (0.00, 0.90, 0.00, 0.00, 0.00, 0.80, 0.70, 0.00),
    "park":    (0.10, 0.10, 0.00, 0.00, 0.10, 0.60, 1.00, 0.00),
    "street":  (0.00, 0.00, 0.30, 0.00, 0.20, 0.50, 0.90, 0.00),
    "road":    (0.00, 0.00, 0.50, 0.00, 0.20, 0.50, 0.80, 0.00),
    # verbs and adjectives
    "sat":     (0.10, 0.30, 0.00, 0.00, 0.30, 0.00, 0.20, 0.10),
    "ran":     (0.20, 0.00, 0.00, 0.00, 1.00, 0.00, 0.10, 0.10),
    "chased":  (0.40, 0.00, 0.00, 0.00, 0.90, 0.00, 0.00, 0.10),
    "ate":     (0.20, 0.20, 0.00, 0.80, 0.20, 0.00, 0.00, 0.10),
    "drove":   (0.00, 0.00, 0.90, 0.00, 0.80, 0.00, 0.10, 0.10),
    "cross":   (0.00, 0.00, 0.10, 0.00, 0.70, 0.00, 0.40, 0.10),
    "tired":   (0.30, 0.20, 0.00, 0.00, 0.10, 0.00, 0.00, 0.10),
    "big":     (0.00, 0.00, 0.00, 0.00, 0.00, 1.00, 0.00, 0.10),
    "small":   (0.00, 0.10, 0.00, 0.00, 0.00, 0.10, 0.00, 0.10),
    # grammatical words: short vectors, mostly "grammar"
    "the":     (0.00, 0.00, 0.00, 0.00, 0.00, 0.00, 0.00, 0.50),
    "a":       (0.00, 0.00, 0.00, 0.00, 0.00, 0.00, 0.00, 0.45),
    "on":      (0.00, 0.00, 0.00, 0.00, 0.00, 0.00, 0.20, 0.40),
    "in":      (0.00, 0.00, 0.00, 0.00, 0.00, 0.00, 0.20, 0.40),
    "across":  (0.00, 0.00, 0.00, 0.00, 0.20, 0.00, 0.30, 0.40),
    "it":      (0.10, 0.00, 0.00, 0.00, 0.00, 0.00, 0.00, 0.60),
    "was":     (0.00, 0.00, 0.00, 0.00, 0.00, 0.00, 0.00, 0.50),
    "too":     (0.00, 0.00, 0.00, 0.00, 0.00, 0.10, 0.00, 0.40),
    "because": (0.00, 0.00, 0.00, 0.00, 0.00, 0.00, 0.00, 0.60),
    "didn't":  (0.00, 0.00, 0.00, 0.00, 0.10, 0.00, 0.00, 0.60),
}  # fmt: skip

#: The course's running example, carried from chapter 1 to chapter 6: every word has a
#: vector above, the pronoun *it* refers back to *cat*, and it is short enough for every
#: number of its attention to be drawn.
RUNNING_EXAMPLE = "the cat sat because it was tired"

_WORD_PATTERN = re.compile(r"[a-z]+(?:'[a-z]+)?")


def vocabulary() -> tuple[str, ...]:
    """All words that have a vector, in alphabetical order.

    Examples
    --------
    >>> "cat" in vocabulary()
    True
    """
    return tuple(sorted(_TABLE))


def tokenize(sentence: str) -> list[str]:
    """Split a sentence into lower-case word tokens, dropping punctuation.

    Examples
    --------
    >>> tokenize("The cat sat on the mat.")
    ['the', 'cat', 'sat', 'on', 'the', 'mat']
    """
    if not isinstance(sentence, str):
        raise TypeError(f"sentence must be a str, got {type(sentence).__name__}")
    return _WORD_PATTERN.findall(sentence.lower().replace("\u2019", "'"))


def embed(tokens: str | Sequence[str]) -> np.ndarray:
    """Stack the vectors of ``tokens`` (or of a sentence, tokenized first) into a matrix.

    Shapes
    ------
    ``tokens``: ``T`` words (or one string that :func:`tokenize` splits into ``T`` words).
    Returns ``(T, D)`` float64 with ``D = len(FEATURES)``: row ``t`` is the vector of token ``t``.

    Examples
    --------
    >>> embed("the cat").shape
    (2, 8)
    >>> float(embed(["cat"])[0, FEATURES.index("animal")])
    0.9
    """
    words = tokenize(tokens) if isinstance(tokens, str) else list(tokens)
    if not words:
        raise ValueError("tokens is empty: give at least one word")
    unknown = [word for word in words if word not in _TABLE]
    if unknown:
        raise ValueError(
            f"tokens contains words without a vector: {unknown}; "
            f"the vocabulary is {', '.join(vocabulary())}"
        )
    return np.array([_TABLE[word] for word in words], dtype=np.float64)  # (T, D)
