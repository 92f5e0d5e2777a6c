"""WER: hand cases, a slow dynamic-programming oracle, properties (order, duplication), errors."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("jiwer")

from vpeval.errors import VpevalError  # noqa: E402
from vpeval.metrics.utility import EmptyReferenceError, WERResult, wer, word_errors  # noqa: E402


def oracle_edit_distance(ref: list[str], hyp: list[str]) -> int:
    """Textbook Levenshtein distance over words (full DP table)."""
    d = [[0] * (len(hyp) + 1) for _ in range(len(ref) + 1)]
    for i in range(len(ref) + 1):
        d[i][0] = i
    for j in range(len(hyp) + 1):
        d[0][j] = j
    for i in range(1, len(ref) + 1):
        for j in range(1, len(hyp) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (ref[i - 1] != hyp[j - 1]))
    return d[-1][-1]


# --- hand cases --------------------------------------------------------------------------------------------

def test_substitution_only():
    e = word_errors("a b c d", "a x c d", normalizer="none")
    assert (e.hits, e.substitutions, e.deletions, e.insertions, e.n_ref) == (3, 1, 0, 0, 4)
    assert e.wer == 0.25


def test_deletion_only():
    e = word_errors("a b c d", "a c d", normalizer="none")
    assert (e.hits, e.substitutions, e.deletions, e.insertions) == (3, 0, 1, 0)
    assert e.wer == 0.25


def test_insertion_only_and_wer_above_one():
    e = word_errors("a b", "a x b", normalizer="none")
    assert (e.substitutions, e.deletions, e.insertions) == (0, 0, 1)
    assert e.wer == 0.5
    e = word_errors("a", "x y z", normalizer="none")  # 1 substitution + 2 insertions over 1 word
    assert e.errors == 3 and e.wer == 3.0


def test_mixed_edits():
    # ref: the cat sat on the mat ; hyp: a cat sat the mat down -> S(the->a), D(on), I(down)
    e = word_errors("the cat sat on the mat", "a cat sat the mat down", normalizer="none")
    assert (e.substitutions, e.deletions, e.insertions, e.hits) == (1, 1, 1, 4)
    assert e.wer == pytest.approx(3 / 6)


def test_identical_is_zero():
    assert word_errors("hello world", "hello world", normalizer="none").wer == 0.0


def test_empty_hypothesis_is_all_deletions():
    e = word_errors("one two three", "", normalizer="none")
    assert (e.hits, e.substitutions, e.deletions, e.insertions) == (0, 0, 3, 0)
    assert e.wer == 1.0
    # Whitespace only, or text that normalises to nothing, is an empty hypothesis too.
    assert word_errors("one two three", "   ", normalizer="none").deletions == 3


def test_empty_reference_is_an_error():
    with pytest.raises(EmptyReferenceError, match="utt7.*empty"):
        word_errors("", "hello", normalizer="none", utterance_id="utt7")
    with pytest.raises(EmptyReferenceError):
        wer({"a": "fine words", "b": "  "}, {"a": "fine words", "b": "x"}, normalizer="none")
    assert issubclass(EmptyReferenceError, VpevalError)


def test_reference_empty_after_normalisation_is_an_error():
    pytest.importorskip("whisper_normalizer")
    with pytest.raises(EmptyReferenceError, match="after normalisation"):
        word_errors("Uh, hmm.", "uh")


def test_corpus_wer_differs_from_mean_of_utterances():
    refs = {"long": "a b c d e f g h i j", "short": "k"}
    hyps = {"long": "a b c d e f g h i j", "short": "z"}
    r = wer(refs, hyps, normalizer="none")
    assert r.wer == pytest.approx(1 / 11)  # 1 edit over 11 reference words
    assert r.mean_utterance_wer == pytest.approx((0 + 1) / 2)
    assert (r.n_ref, r.errors, r.substitutions) == (11, 1, 1)


def test_corpus_counts_match_jiwer_on_the_whole_list():
    import jiwer

    refs = {"u1": "the cat sat on the mat", "u2": "hello there world", "u3": "a b c"}
    hyps = {"u1": "a cat sat the mat down", "u2": "hello world", "u3": "a b c d e"}
    r = wer(refs, hyps, normalizer="none")
    ids = sorted(refs)
    o = jiwer.process_words([refs[i] for i in ids], [hyps[i] for i in ids])
    assert (r.substitutions, r.deletions, r.insertions, r.hits) == (o.substitutions, o.deletions, o.insertions,
                                                                     o.hits)
    assert r.wer == pytest.approx(o.wer)


def test_normalisation_is_applied_to_both_sides():
    pytest.importorskip("whisper_normalizer")
    assert word_errors("Mr. Dashwood won't pay twenty five pounds.", "mister dashwood will not pay 25 pounds").wer == 0
    assert word_errors("Mr. Dashwood", "mister dashwood", normalizer="none").wer == 1.0


def test_sequences_are_paired_by_position():
    r = wer(["a b", "c"], ["a b", "d"], normalizer="none")
    assert [u.utterance_id for u in r.utterances] == ["0", "1"]
    assert r.errors == 1


def test_mismatched_utterances_are_an_error():
    with pytest.raises(VpevalError, match="no hypothesis.*'b'"):
        wer({"a": "x", "b": "y"}, {"a": "x"}, normalizer="none")
    with pytest.raises(VpevalError, match="no reference.*'c'"):
        wer({"a": "x"}, {"a": "x", "c": "y"}, normalizer="none")
    with pytest.raises(VpevalError, match="no utterances"):
        wer({}, {}, normalizer="none")
    with pytest.raises(VpevalError, match="must be str"):
        wer({"a": None}, {"a": "x"}, normalizer="none")
    with pytest.raises(VpevalError, match="unknown text normaliser"):
        wer({"a": "x"}, {"a": "x"}, normalizer="nope")


def test_to_dict_round_numbers():
    r = wer({"a": "x y"}, {"a": "x"}, normalizer="none")
    d = r.to_dict()
    assert d["wer"] == 0.5 and d["deletions"] == 1 and d["utterances"][0]["utterance_id"] == "a"
    assert isinstance(r, WERResult)


# --- oracle and properties ---------------------------------------------------------------------------------

words = st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=9)


@settings(max_examples=200, deadline=None)
@given(ref=words.filter(bool), hyp=words)
def test_errors_equal_the_dp_oracle_and_counts_are_consistent(ref, hyp):
    e = word_errors(" ".join(ref), " ".join(hyp), normalizer="none")
    assert e.errors == oracle_edit_distance(ref, hyp)
    assert e.hits + e.substitutions + e.deletions == len(ref)
    assert e.hits + e.substitutions + e.insertions == len(hyp)


corpus = st.lists(st.tuples(words.filter(bool), words), min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(pairs=corpus, seed=st.integers(0, 10_000))
def test_order_invariance_and_duplication(pairs, seed):
    refs = {f"u{i}": " ".join(r) for i, (r, _) in enumerate(pairs)}
    hyps = {f"u{i}": " ".join(h) for i, (_, h) in enumerate(pairs)}
    base = wer(refs, hyps, normalizer="none")
    keys = list(refs)
    random.Random(seed).shuffle(keys)
    shuffled = wer({k: refs[k] for k in keys}, {k: hyps[k] for k in reversed(keys)}, normalizer="none")
    assert shuffled == base
    dup = wer({**refs, **{k + "_dup": v for k, v in refs.items()}},
              {**hyps, **{k + "_dup": v for k, v in hyps.items()}}, normalizer="none")
    assert dup.wer == pytest.approx(base.wer)
    assert dup.mean_utterance_wer == pytest.approx(base.mean_utterance_wer)
    assert base.errors == sum(oracle_edit_distance(r, h) for r, h in pairs)


def test_missing_normaliser_package_names_the_extra(monkeypatch):
    import sys

    from vpeval import text

    text._whisper_english.cache_clear()
    monkeypatch.setitem(sys.modules, "whisper_normalizer.english", None)
    try:
        with pytest.raises(ImportError, match=r"vpeval\[utility\]"):
            wer({"a": "x"}, {"a": "x"})
    finally:
        text._whisper_english.cache_clear()
    # The plain comparison needs no normaliser package.
    assert wer({"a": "x"}, {"a": "x"}, normalizer="none").wer == 0.0
