"""Tests of selfattn_lib.embeddings: the hand-made vectors behave as the chapters claim."""

import numpy as np
import pytest

from selfattn_lib import embeddings


def test_vectors_have_one_named_feature_per_column():
    vectors = embeddings.embed(list(embeddings.vocabulary()))
    assert vectors.shape == (len(embeddings.vocabulary()), len(embeddings.FEATURES))
    assert vectors.dtype == np.float64
    assert ((vectors >= 0) & (vectors <= 1)).all()
    assert (np.linalg.norm(vectors, axis=1) > 0).all()


def test_similarity_is_meaningful():
    cat, dog, car, apple = embeddings.embed("cat dog car apple")
    assert cat @ dog > cat @ car
    assert cat @ dog > cat @ apple


def test_lengths_differ_so_dot_and_cosine_can_disagree():
    norms = np.linalg.norm(embeddings.embed("the bus"), axis=1)
    assert norms[1] > 2 * norms[0]


def test_tokenize_lowercases_and_drops_punctuation():
    assert embeddings.tokenize("The animal didn’t cross.") == ["the", "animal", "didn't", "cross"]


def test_embed_a_sentence_equals_embedding_its_tokens():
    sentence = "The cat sat on the mat."
    np.testing.assert_array_equal(
        embeddings.embed(sentence), embeddings.embed(embeddings.tokenize(sentence))
    )


def test_unknown_words_are_named():
    with pytest.raises(ValueError, match=r"without a vector: \['unicorn'\]"):
        embeddings.embed("the unicorn")


@pytest.mark.parametrize(("tokens", "error"), [([], ValueError), ("", ValueError)])
def test_empty_input_is_rejected(tokens, error):
    with pytest.raises(error, match="tokens is empty"):
        embeddings.embed(tokens)


def test_tokenize_needs_a_string():
    with pytest.raises(TypeError, match="sentence must be a str, got int"):
        embeddings.tokenize(3)
