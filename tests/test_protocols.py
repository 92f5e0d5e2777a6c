"""Tests of the trial protocol builder (vpeval.pipeline.protocols) and the ``vpeval trials`` command."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpeval.errors import InputFileError, VpevalError
from vpeval.io.embeddings import EmbeddingSet, write_embeddings
from vpeval.pipeline import (
    TRIAL_TYPES,
    ProtocolError,
    build_trials,
    check_metadata,
    make_protocol,
    one_to_n,
)
from vpeval.pipeline.protocols.trials import PROFILE_TYPES

# ----------------------------------------------------------------------------- the tiny hand-made set
# Speakers A, B, C with 4 utterances each (2 enroll + 2 probes), cohort D, E with one utterance each.
# Original embeddings are chosen so that some models and scores are easy to compute by hand.
ORIG = {
    "A-0": [1, 0, 0], "A-1": [0, 1, 0], "A-2": [3, 0, 4], "A-3": [1, 1, 0],
    "B-0": [0, 0, 2], "B-1": [0, 0, 5], "B-2": [0, 3, 4], "B-3": [1, 0, 1],
    "C-0": [1, 1, 1], "C-1": [2, 2, 2], "C-2": [-1, 0, 0], "C-3": [0, -1, 1],
    "D-0": [0, 2, 0], "E-0": [-1, -1, 0],
}
ANON = {
    "A-0": [0, 1, 1], "A-1": [0, 2, 2], "A-2": [1, 2, 2], "A-3": [2, 1, 0],
    "B-0": [1, 0, 0], "B-1": [1, 1, 0], "B-2": [0, 1, 0], "B-3": [4, 0, 3],
    "C-0": [0, 0, 1], "C-1": [1, 0, 1], "C-2": [1, 1, 1], "C-3": [-1, 2, 0],
    "D-0": [5, 5, 0], "E-0": [0, -3, 4],
}


def tiny_set(extractor="toy") -> EmbeddingSet:
    utt = list(ORIG) + list(ANON)
    spk = [u.split("-")[0] for u in utt]
    cond = ["original"] * len(ORIG) + ["anonymized"] * len(ANON)
    emb = np.array(list(ORIG.values()) + list(ANON.values()), dtype=float)
    return EmbeddingSet(emb, utt, spk, cond, extractor)


def permuted(es: EmbeddingSet, perm) -> EmbeddingSet:
    perm = np.asarray(perm)
    return EmbeddingSet(es.embeddings[perm], es.utterance_id[perm], es.speaker_id[perm], es.condition[perm],
                        es.extractor)


# ----------------------------------------------------------------------------- a slow obvious oracle


def _unit(v):
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def _model(vectors):
    units = [_unit(v) for v in vectors]
    return _unit([sum(c) / len(units) for c in zip(*units)])


def _cos(u, v):
    return sum(a * b for a, b in zip(u, v))


def oracle(es: EmbeddingSet, enroll: dict, probes: dict, name: str, cohort_impostors=True):
    """Set of (enroll key, test key, is_target, score) from the written definitions, with plain loops."""
    emb = {(u, c): list(map(float, e)) for u, c, e in zip(es.utterance_id, es.condition, es.embeddings)}
    lab = {"o": "original", "a": "anonymized"}
    model_spk = sorted(enroll) if cohort_impostors else sorted(s for s in enroll if probes.get(s))
    out = []

    def verification(ec, pc, nec=None, npc=None):
        """Targets in conditions (ec, pc), non-targets in (nec, npc) (Beyond-EER's Table 2), default the same."""
        for s in sorted(probes):
            for u in probes[s]:
                for t in model_spk:
                    same = s == t
                    e, c = (ec, pc) if same or nec is None else (nec, npc)
                    m = _model([emb[(v, lab[e])] for v in enroll[t]])
                    out.append((t, u, same, _cos(m, _unit(emb[(u, lab[c])]))))

    if name == "oo":
        verification("o", "o")
    elif name in ("oa", "oaoa"):
        verification("o", "a")
    elif name in ("aa", "aaaa"):
        verification("a", "a")
    elif name == "oaoo":  # Alice vs pseudo-Alice against Alice vs Bob
        verification("o", "a", "o", "o")
    elif name == "oaaa":  # Alice vs pseudo-Alice against pseudo-Alice vs pseudo-Bob
        verification("o", "a", "a", "a")
    elif name == "aa-centroid":
        for s in sorted(probes):
            prof = _model([emb[(v, "anonymized")] for v in probes[s]])
            for t in model_spk:
                m = _model([emb[(v, "anonymized")] for v in enroll[t]])
                out.append((t, s, s == t, _cos(m, prof)))
    return out


def split_dicts(protocol):
    enroll, probes = {}, {}
    for u, s, e in zip(protocol.utterance_id, protocol.speaker_id, protocol.is_enroll):
        (enroll if e else probes).setdefault(str(s), []).append(str(u))
    return enroll, probes


def expected_counts(name, K, KC, P, cohort_impostors=True):
    """Counts (n_trials, n_targets) as the formulas of the module docstring."""
    M = K + KC if cohort_impostors else K
    if name == "aa-centroid":
        return K * M, K
    return P * M, P


# ----------------------------------------------------------------------------- split


def test_default_split_sorted_half_and_cohort():
    p = make_protocol(tiny_set())
    assert p.evaluation_speakers.tolist() == ["A", "B", "C"]
    assert p.cohort_speakers.tolist() == ["D", "E"]
    assert p.speakers.tolist() == ["A", "B", "C", "D", "E"]
    assert p.enroll_utterances("A") == ("A-0", "A-1")
    assert p.probe_utterances("A") == ("A-2", "A-3")
    assert p.enroll_utterances("D") == ("D-0",) and p.probe_utterances("D") == ()


@pytest.mark.parametrize("n, n_enroll", [(1, 1), (2, 1), (3, 2), (4, 2), (5, 3), (10, 5), (11, 6)])
def test_default_split_counts(n, n_enroll):
    utt = [f"s-{i:04d}" for i in range(n)][::-1]  # reversed: the split sorts
    es = EmbeddingSet(np.ones((n, 2)), utt, ["s"] * n, ["original"] * n)
    p = make_protocol(es)
    assert p.enroll_utterances("s") == tuple(f"s-{i:04d}" for i in range(n_enroll))
    assert len(p.probe_utterances("s")) == n - n_enroll


def test_split_sorts_as_strings_not_numbers():
    utt = ["s-10", "s-9", "s-2", "s-1"]
    es = EmbeddingSet(np.ones((4, 2)), utt, ["s"] * 4, ["original"] * 4)
    assert make_protocol(es).enroll_utterances("s") == ("s-1", "s-10")


def test_explicit_enroll_list():
    es = tiny_set()
    p = make_protocol(es, ["A-3", "B-0", "C-0", "C-1", "C-2", "D-0", "E-0"])
    assert p.enroll_utterances("A") == ("A-3",) and p.probe_utterances("A") == ("A-0", "A-1", "A-2")
    assert p.cohort_speakers.tolist() == ["D", "E"]
    assert p.probe_utterances("C") == ("C-3",)
    t = build_trials(es, ["oo"], protocol=p)["oo"]
    assert len(t) == 5 * 7 and t.is_target.sum() == 7


def test_explicit_list_with_all_utterances_of_a_speaker_makes_it_cohort():
    es = tiny_set()
    p = make_protocol(es, ["A-0", "A-1", "A-2", "A-3", "B-0", "C-0", "D-0", "E-0"])
    assert p.cohort_speakers.tolist() == ["A", "D", "E"]


@pytest.mark.parametrize(
    "enroll, match",
    [
        (["A-0", "C-0", "D-0", "E-0"], "speaker 'B' has 4 probe utterance"),
        (["A-0", "B-0", "C-0", "D-0", "E-0", "Z-9"], "not in the embeddings"),
        (["A-0", "A-0", "B-0", "C-0"], "more than once"),
        ([], "empty"),
    ],
)
def test_explicit_list_errors(enroll, match):
    with pytest.raises(ProtocolError, match=match):
        make_protocol(tiny_set(), enroll)


def test_speaker_without_enrollment_is_an_error_even_through_the_protocol_class():
    from vpeval.pipeline import Protocol

    with pytest.raises(ProtocolError, match="no enrollment utterance"):
        Protocol(["a", "b", "c"], ["X", "X", "Y"], [True, False, False])


def test_utterance_with_two_speakers_is_an_error():
    es = tiny_set()
    spk = es.speaker_id.copy()
    spk[len(ORIG) + 2] = "B"  # anonymized A-2 claims speaker B
    bad = EmbeddingSet(es.embeddings, es.utterance_id, spk, es.condition, es.extractor)
    with pytest.raises(ProtocolError, match="'A-2' has speaker"):
        make_protocol(bad)


# ----------------------------------------------------------------------------- counts, labels, scores


def test_exact_counts_per_type_on_tiny_set():
    es = tiny_set()
    K, KC, P = 3, 2, 6
    for cohort in (True, False):
        trials = build_trials(es, cohort_impostors=cohort)
        assert list(trials) == [t for t in TRIAL_TYPES if t not in PROFILE_TYPES]
        for name, t in trials.items():
            n, n_tar = expected_counts(name, K, KC, P, cohort)
            assert (len(t), int(t.is_target.sum())) == (n, n_tar), name
            assert t.source == name and t.meta["type"] == name and t.meta["extractor"] == "toy"
            assert t.meta["n_speakers"] == K and t.meta["n_cohort"] == KC and t.meta["n_probes"] == P


def test_concrete_numbers_on_tiny_set():
    t = build_trials(tiny_set())
    assert (len(t["oo"]), len(t["oaaa"]), len(t["aa-centroid"])) == (30, 30, 15)


@pytest.mark.parametrize("name", [t for t in TRIAL_TYPES if t not in PROFILE_TYPES])
@pytest.mark.parametrize("cohort", [True, False])
def test_matches_slow_oracle(name, cohort):
    es = tiny_set()
    p = make_protocol(es)
    got = build_trials(es, [name], protocol=p, cohort_impostors=cohort)[name]
    want = oracle(es, *split_dicts(p), name, cohort)
    assert len(got) == len(want)
    w = {(e, t): (lab, s) for e, t, lab, s in want}
    assert len(w) == len(want)
    for e, t, lab, s in zip(got.enroll, got.test, got.is_target, got.scores):
        wl, ws = w[(str(e), str(t))]
        assert bool(lab) == wl
        assert s == pytest.approx(ws, abs=1e-14)


def test_hand_computed_scores():
    t = build_trials(tiny_set(), ["oo", "oa", "aa-centroid"])
    oo, oa, cp = t["oo"], t["oa"], t["aa-centroid"]

    def score(tr, e, x):
        return float(tr.scores[(tr.enroll == e) & (tr.test == x)][0])

    # model A (original) = unit(mean([1,0,0], [0,1,0])) = [1,1,0]/sqrt2; probe A-2 = [3,0,4]/5
    assert score(oo, "A", "A-2") == pytest.approx(0.6 / math.sqrt(2), abs=1e-15)
    # model B (original) = [0,0,1]; probe A-3 = [1,1,0]/sqrt2 -> 0
    assert score(oo, "B", "A-3") == pytest.approx(0.0, abs=1e-15)
    # model D (cohort, original) = [0,1,0]; anonymized probe B-3 = [4,0,3]/5 -> 0; probe C-3 = [-1,2,0]/sqrt5
    assert score(oa, "D", "B-3") == pytest.approx(0.0, abs=1e-15)
    assert score(oa, "D", "C-3") == pytest.approx(2 / math.sqrt(5), abs=1e-15)
    # cross-profile: model A (anonymized) = [0,1,1]/sqrt2; profile A = unit([1,2,2]/3 + [2,1,0]/sqrt5)
    pa = np.array([1, 2, 2]) / 3 + np.array([2, 1, 0]) / math.sqrt(5)
    pa /= np.linalg.norm(pa)
    assert score(cp, "A", "A") == pytest.approx(float(pa @ np.array([0, 1, 1]) / math.sqrt(2)), abs=1e-15)


def test_labels_follow_speakers():
    es = tiny_set()
    p = make_protocol(es)
    spk_of = dict(zip(p.utterance_id.tolist(), p.speaker_id.tolist()))
    trials = build_trials(es, protocol=p)
    for name in ("oo", "oa", "aa", "oaoa", "oaoo", "oaaa", "aaaa"):
        t = trials[name]
        same = np.array([spk_of[x] == e for e, x in zip(t.enroll, t.test)])
        assert (t.is_target == same).all(), name
    cp = trials["aa-centroid"]
    assert (cp.is_target == (cp.enroll == cp.test)).all()


def test_no_probe_in_its_own_enrollment():
    es = tiny_set()
    p = make_protocol(es)
    enroll, probes = split_dicts(p)
    for s, us in probes.items():
        assert not set(us) & set(enroll[s])
    # Changing a probe's embeddings (both conditions) must change no model: scores of every other probe stay.
    trials = build_trials(es, protocol=p)
    emb = es.embeddings.copy()
    emb[es.utterance_id == "A-2"] = [7.0, -3.0, 0.5]
    changed = build_trials(EmbeddingSet(emb, es.utterance_id, es.speaker_id, es.condition, "toy"), protocol=p)
    for name in ("oo", "oa", "aa", "oaaa"):
        other = np.char.find(trials[name].test, "A-2") < 0
        assert (trials[name].scores[other] == changed[name].scores[other]).all(), name
        assert not (trials[name].scores[~other] == changed[name].scores[~other]).all(), name
    # cross-profile: A's probe profile changes, every model stays
    cp0, cp1 = trials["aa-centroid"], changed["aa-centroid"]
    assert (cp0.scores[cp0.test != "A"] == cp1.scores[cp1.test != "A"]).all()


def test_paper_types_repeat_vpc_pairs_exactly():
    t = build_trials(tiny_set())
    for new, old in (("oaoa", "oa"), ("aaaa", "aa")):
        for f in ("scores", "is_target", "enroll", "test"):
            assert (getattr(t[new], f) == getattr(t[old], f)).all()
        assert t[new].meta["same_pairs_as"] == old
    assert t["aaaa"].meta["target_eer"] == 0.0 and t["aa"].meta["target_eer"] == 0.5
    assert t["oo"].meta["target_eer"] is None


@pytest.mark.parametrize("name, impostors", [("oaoo", "oo"), ("oaaa", "aa")])
def test_beyond_eer_types_take_oa_targets_and_their_own_impostors(name, impostors):
    """Beyond-EER Table 2: the target half is always Alice vs pseudo-Alice (oa); only the impostors change."""
    t = build_trials(tiny_set())
    x = t[name]
    for f in ("is_target", "enroll", "test"):
        assert (getattr(x, f) == getattr(t["oa"], f)).all()
    assert np.array_equal(x.tar, t["oa"].tar) and np.array_equal(x.non, t[impostors].non)
    assert x.meta["target_eer"] == 0.5 and x.meta["composed_of"] == ["oa", impostors]
    assert (x.meta["enroll_condition"], x.meta["test_condition"]) == ("original", "anonymized")
    want = {"oo": ("original", "original"), "aa": ("anonymized", "anonymized")}[impostors]
    assert (x.meta["nontarget_enroll_condition"], x.meta["nontarget_test_condition"]) == want


def test_compose_trials_refuses_lists_of_other_pairs():
    from vpeval.pipeline.protocols.trials import compose_trials

    t = build_trials(tiny_set())
    with pytest.raises(ProtocolError, match="same \\(enroll, test\\) pairs"):
        compose_trials(t["oa"], t["aa-centroid"], "oaoo", {})
    shuffled = t["oo"].select(np.r_[np.ones(len(t["oo"]) - 1, bool), False])
    with pytest.raises(ProtocolError):
        compose_trials(t["oa"], shuffled, "oaoo", {})


def test_cohort_impostors_off_drops_cohort_models():
    t = build_trials(tiny_set(), cohort_impostors=False)
    for name, tr in t.items():
        assert set(tr.enroll.tolist()) == {"A", "B", "C"}, name


def test_keys_unique_in_every_type():
    for name, t in build_trials(tiny_set()).items():
        pairs = list(zip(t.enroll.tolist(), t.test.tolist()))
        assert len(set(pairs)) == len(pairs), name


# ----------------------------------------------------------------------------- 1-to-N


def test_one_to_n_matrix_and_table():
    es = tiny_set()
    m = one_to_n(es)  # default oa
    assert m.scores.shape == (6, 5) and m.scores.dtype == np.float64
    assert m.enrolled_speaker.tolist() == ["A", "B", "C", "D", "E"]
    assert m.probe_id.tolist() == ["A-2", "A-3", "B-2", "B-3", "C-2", "C-3"]
    assert (m.enrolled_speaker[m.true_index] == m.probe_speaker).all()
    assert m.enroll_condition == "original" and m.probe_condition == "anonymized"
    df = m.to_frame()
    assert list(df.columns) == ["enroll_spk", "trial_spk", "trial_id", "score"]
    assert len(df) == 30 and not df.duplicated(["enroll_spk", "trial_id"]).any()
    full = {(e, x) for e in m.enrolled_speaker.tolist() for x in m.probe_id.tolist()}
    assert set(zip(df.enroll_spk, df.trial_id)) == full
    assert (df.trial_spk == df.trial_id.str.split("-").str[0]).all()
    oa = build_trials(es, ["oa"])["oa"]
    lookup = {(e, x): s for e, x, s in zip(oa.enroll, oa.test, oa.scores)}
    assert all(lookup[(e, x)] == s for e, x, s in zip(df.enroll_spk, df.trial_id, df.score))
    assert np.array_equal(m.target_scores, oa.tar)


def test_one_to_n_condition_letters():
    with pytest.raises(ProtocolError, match="'o' or 'a'"):
        one_to_n(tiny_set(), enroll="original")


# ----------------------------------------------------------------------------- order invariance


@settings(max_examples=30, deadline=None)
@given(st.permutations(list(range(2 * len(ORIG)))))
def test_row_order_does_not_matter(perm):
    es = tiny_set()
    ref = build_trials(es)
    got = build_trials(permuted(es, perm))
    for name in ref:
        for f in ("scores", "is_target", "enroll", "test"):
            assert np.array_equal(getattr(ref[name], f), getattr(got[name], f)), (name, f)
    a, b = one_to_n(es), one_to_n(permuted(es, perm))
    assert np.array_equal(a.scores, b.scores) and np.array_equal(a.probe_id, b.probe_id)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.integers(min_value=1, max_value=6), min_size=2, max_size=6),
    st.booleans(),
    st.randoms(use_true_random=False),
)
def test_counts_formulas_on_random_layouts(n_utts, cohort, rnd):
    """Any number of speakers/utterances: counts follow the formulas; the oracle agrees."""
    if sum(1 for n in n_utts if n >= 2) == 0:
        n_utts = n_utts + [2]
    utt, spk = [], []
    for i, n in enumerate(n_utts):
        for j in range(n):
            utt.append(f"s{i}-{j}")
            spk.append(f"s{i}")
    rng = np.random.default_rng(rnd.randint(0, 2**32 - 1))
    n = len(utt)
    es = EmbeddingSet(rng.normal(size=(2 * n, 4)), utt * 2, spk * 2, ["original"] * n + ["anonymized"] * n)
    p = make_protocol(es)
    K = sum(1 for n in n_utts if n >= 2)
    KC = len(n_utts) - K
    P = sum(n // 2 for n in n_utts if n >= 2)
    if (K + KC if cohort else K) < 2:
        with pytest.raises(ProtocolError, match="at least two"):
            build_trials(es, protocol=p, cohort_impostors=cohort)
        return
    trials = build_trials(es, protocol=p, cohort_impostors=cohort)
    for name, t in trials.items():
        assert (len(t), int(t.is_target.sum())) == expected_counts(name, K, KC, P, cohort), name
    want = {(e, x): (lab, s) for e, x, lab, s in oracle(es, *split_dicts(p), "oaaa", cohort)}
    got = trials["oaaa"]
    for e, x, lab, s in zip(got.enroll, got.test, got.is_target, got.scores):
        assert want[(e, x)][0] == bool(lab) and s == pytest.approx(want[(e, x)][1], abs=1e-12)


# ----------------------------------------------------------------------------- errors


def test_missing_condition_for_an_utterance():
    es = tiny_set()
    keep = ~((es.utterance_id == "B-3") & (es.condition == "anonymized"))
    bad = es.select(keep)
    with pytest.raises(ProtocolError, match=r"probe utterance\(s\) have no embedding in condition 'anonymized' "
                                            r"\(first: 'B-3'\)"):
        build_trials(bad, ["oa"])
    build_trials(bad, ["oo"])  # fine: only original embeddings needed
    keep = ~((es.utterance_id == "D-0") & (es.condition == "original"))
    with pytest.raises(ProtocolError, match="enroll utterance.*'original'.*'D-0'"):
        build_trials(es.select(keep), ["oa"])


def test_missing_condition_entirely():
    es = tiny_set()
    orig = es.select(es.condition == "original")
    with pytest.raises(ProtocolError, match="no embeddings with condition 'anonymized'"):
        build_trials(orig)
    assert len(build_trials(orig, ["oo"])["oo"]) == 30
    with pytest.raises(ProtocolError, match="no embeddings with condition 'original'"):
        build_trials(es.select(es.condition == "anonymized"), ["oaaa"])


def test_unknown_condition_label_and_renaming():
    es = tiny_set()
    cond = np.where(es.condition == "anonymized", "mcadams", es.condition)
    other = EmbeddingSet(es.embeddings, es.utterance_id, es.speaker_id, cond, "toy")
    with pytest.raises(ProtocolError, match="unknown condition label 'mcadams'"):
        build_trials(other)
    renamed = build_trials(other, ["oa"], anonymized="mcadams")["oa"]
    assert np.array_equal(renamed.scores, build_trials(es, ["oa"])["oa"].scores)
    assert renamed.meta["test_condition"] == "mcadams"
    with pytest.raises(ProtocolError, match="both"):
        build_trials(es, original="x", anonymized="x")


def test_bad_types():
    with pytest.raises(ProtocolError, match="unknown trial type 'ao'"):
        build_trials(tiny_set(), ["ao"])
    with pytest.raises(ProtocolError, match="more than once"):
        build_trials(tiny_set(), ["oo", "oo"])
    with pytest.raises(ProtocolError, match="no trial types"):
        build_trials(tiny_set(), [])


def test_zero_embedding_is_an_error():
    es = tiny_set()
    emb = es.embeddings.copy()
    emb[0] = 0.0
    with pytest.raises(ProtocolError, match="'A-0' has a zero vector"):
        build_trials(EmbeddingSet(emb, es.utterance_id, es.speaker_id, es.condition), ["oo"])


def test_model_with_zero_mean_is_an_error():
    es = tiny_set()
    emb = es.embeddings.copy()
    emb[1] = [-1.0, 0.0, 0.0]  # A-1 = -A-0: the mean of A's enrollment is 0
    with pytest.raises(ProtocolError, match="model of speaker 'A' has a zero vector"):
        build_trials(EmbeddingSet(emb, es.utterance_id, es.speaker_id, es.condition), ["oo"])


def test_all_cohort_is_an_error():
    es = EmbeddingSet(np.eye(3), ["a", "b", "c"], ["A", "B", "C"], ["original"] * 3)
    with pytest.raises(ProtocolError, match="no probe"):
        build_trials(es, ["oo"])


def test_errors_are_vpeval_errors():
    assert issubclass(ProtocolError, VpevalError) and issubclass(ProtocolError, ValueError)


# ----------------------------------------------------------------------------- metadata


def _metadata(es):
    return pd.DataFrame({"utterance_id": es.utterance_id, "speaker_id": es.speaker_id, "condition": es.condition,
                         "sex": "F"})


def test_metadata_ok_and_mismatches():
    es = tiny_set()
    check_metadata(es, _metadata(es))
    check_metadata(es, _metadata(es).drop(columns="condition").drop_duplicates("utterance_id"))
    md = _metadata(es)
    md.loc[3, "speaker_id"] = "Z"
    with pytest.raises(InputFileError, match=r"meta.csv:5: utterance 'A-3' has speaker 'Z'"):
        check_metadata(es, md, source="meta.csv")
    with pytest.raises(InputFileError, match="'E-0' \\(condition 'anonymized'\\) is in the embeddings"):
        check_metadata(es, _metadata(es).iloc[:-1], source="meta.csv")
    with pytest.raises(InputFileError, match="missing column"):
        check_metadata(es, _metadata(es).drop(columns="speaker_id"))
    with pytest.raises(InputFileError, match="meta.csv:4: repeated"):
        check_metadata(es, pd.concat([_metadata(es).iloc[:2], _metadata(es).iloc[:2]]), source="meta.csv")


# ----------------------------------------------------------------------------- CLI


def read_scores(path):
    """Parse a Kaldi scores file with plain ``float()`` (exact for repr-formatted numbers)."""
    rows = [line.split(" ") for line in Path(path).read_text().splitlines()]
    assert all(len(r) == 3 for r in rows)
    return pd.DataFrame({"e": [r[0] for r in rows], "t": [r[1] for r in rows], "s": [float(r[2]) for r in rows]})


def _cli():
    import typer
    from typer.testing import CliRunner

    from vpeval.cli.protocols import register

    app = typer.Typer()
    register(app)

    @app.callback()
    def _main():  # keep "trials" a subcommand
        pass

    return app, CliRunner()


def test_cli_writes_everything(tmp_path: Path):
    es = tiny_set()
    write_embeddings(tmp_path / "emb.npz", es, dtype=np.float64)
    _metadata(es).to_csv(tmp_path / "meta.csv", index=False)
    app, runner = _cli()
    out = tmp_path / "out"
    r = runner.invoke(app, ["trials", str(tmp_path / "emb.npz"), "-o", str(out), "--metadata",
                            str(tmp_path / "meta.csv"), "--json"])
    assert r.exit_code == 0, r.output
    import json

    summary = json.loads(r.stdout)
    ref = build_trials(es)
    for name, t in ref.items():
        key = pd.read_csv(out / name / "trials", sep=" ", header=None, names=["e", "t", "lab"], dtype=str)
        sc = read_scores(out / name / "scores")
        assert key.e.tolist() == t.enroll.tolist() and key.t.tolist() == t.test.tolist()
        assert (key.lab == np.where(t.is_target, "target", "nontarget")).all()
        assert np.array_equal(sc.s.to_numpy(), t.scores)
        assert summary["types"][name]["n_trials"] == len(t)
    assert sorted(summary["one_to_n"]) == ["aa", "oa", "oo"]
    table = pd.read_csv(out / "one_to_n_oa.csv", dtype=str)
    scores = np.array([float(x) for x in table.score])
    assert len(table) == 30 and np.array_equal(scores, one_to_n(es).scores.reshape(-1))
    prot = pd.read_csv(out / "protocol.csv")
    assert (prot.role == "enroll").sum() == 8 and (prot.role == "probe").sum() == 6


def test_cli_types_enroll_list_and_parquet(tmp_path: Path):
    es = tiny_set()
    write_embeddings(tmp_path / "emb.npz", es)
    (tmp_path / "enroll.txt").write_text("A-0\nB-0\n\nC-0\nD-0\nE-0\n")
    app, runner = _cli()
    r = runner.invoke(app, ["trials", str(tmp_path / "emb.npz"), "-o", str(tmp_path / "o"), "--types", "oa",
                            "--types", "aa-centroid", "--enroll-list", str(tmp_path / "enroll.txt"),
                            "--table-format", "parquet", "--no-cohort-impostors"])
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == [
        ".vpeval-manifest.json", "aa-centroid", "oa", "one_to_n_oa.parquet", "protocol.csv"]
    assert len((tmp_path / "o" / "oa" / "trials").read_text().splitlines()) == 9 * 3
    assert len(pd.read_parquet(tmp_path / "o" / "one_to_n_oa.parquet")) == 9 * 5


def test_cli_errors_exit_2_with_message(tmp_path: Path):
    es = tiny_set()
    write_embeddings(tmp_path / "a.npz", es.select(es.condition == "original"))
    write_embeddings(tmp_path / "b.npz", EmbeddingSet(es.embeddings[es.condition == "anonymized"],
                                                      es.utterance_id[es.condition == "anonymized"],
                                                      es.speaker_id[es.condition == "anonymized"],
                                                      es.condition[es.condition == "anonymized"], "other"))
    app, runner = _cli()
    r = runner.invoke(app, ["trials", str(tmp_path / "a.npz"), str(tmp_path / "b.npz"), "-o", str(tmp_path)])
    assert r.exit_code == 2 and "extractor 'other' differs from 'toy'" in r.output and "b.npz" in r.output
    r = runner.invoke(app, ["trials", str(tmp_path / "a.npz"), "-o", str(tmp_path / "x")])
    assert r.exit_code == 2 and "no embeddings with condition 'anonymized'" in r.output
    r = runner.invoke(app, ["trials", str(tmp_path / "a.npz"), "-o", str(tmp_path / "x"), "--types", "oo,zz"])
    assert r.exit_code == 2 and "unknown trial type 'zz'" in r.output
    (tmp_path / "enroll.txt").write_text("A-0\nB-0 C-0\n")
    r = runner.invoke(app, ["trials", str(tmp_path / "a.npz"), "-o", str(tmp_path / "x"), "--types", "oo",
                            "--enroll-list", str(tmp_path / "enroll.txt")])
    assert r.exit_code == 2 and "enroll.txt:2:" in r.output
    r = runner.invoke(app, ["trials", str(tmp_path / "missing.npz"), "-o", str(tmp_path / "x")])
    assert r.exit_code == 2 and "does not exist" in r.output
    assert "Traceback" not in r.output


def test_cli_two_files_of_same_extractor_are_joined(tmp_path: Path):
    es = tiny_set()
    write_embeddings(tmp_path / "o.npz", es.select(es.condition == "original"), dtype=np.float64)
    write_embeddings(tmp_path / "a.npz", es.select(es.condition == "anonymized"), dtype=np.float64)
    app, runner = _cli()
    r = runner.invoke(app, ["trials", str(tmp_path / "o.npz"), str(tmp_path / "a.npz"), "-o", str(tmp_path / "x"),
                            "--types", "oa"])
    assert r.exit_code == 0, r.output
    sc = read_scores(tmp_path / "x" / "oa" / "scores")
    assert np.array_equal(sc.s.to_numpy(), build_trials(es, ["oa"])["oa"].scores)


# ----------------------------------------------------------------------------- bundled data (when present)

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "librispeech-mini"


@pytest.mark.skipif(not EXAMPLE.is_dir(), reason="bundled example not built yet")
def test_bundled_example_counts():
    from vpeval.io.embeddings import read_embeddings

    files = sorted(EXAMPLE.glob("embeddings_*.npz"))
    if not files:
        pytest.skip("no embedding files in the bundled example")
    for f in files:
        es = read_embeddings(f)
        es = es.select(es.condition != "anonymized@p2")  # the second run enters the cross-profile types only
        p = make_protocol(es)
        K, KC = p.evaluation_speakers.size, p.cohort_speakers.size
        P = int((~p.is_enroll).sum())
        assert (K, KC, P) == (10, 101, 50)
        for name, t in build_trials(es, protocol=p).items():
            assert (len(t), int(t.is_target.sum())) == expected_counts(name, K, KC, P), (f.name, name)


def test_protocol_class_sorts_rows_and_finds_repeats():
    from vpeval.pipeline import Protocol

    p = Protocol(["b", "c", "a"], ["X", "Y", "X"], [False, True, True])
    assert p.utterance_id.tolist() == ["a", "b", "c"]
    assert p.speaker_id.tolist() == ["X", "X", "Y"] and p.is_enroll.tolist() == [True, False, True]
    with pytest.raises(ProtocolError, match="'a' is listed more than once"):
        Protocol(["a", "b", "a"], ["X", "X", "X"], [True, False, True])
    with pytest.raises(ProtocolError, match="equal length"):
        Protocol(["a", "b"], ["X"], [True, False])


def test_speaker_of_and_one_to_n_select():
    es = tiny_set()
    p = make_protocol(es)
    assert p.speaker_of(["C-3", "A-0"]).tolist() == ["C", "A"]
    with pytest.raises(ProtocolError, match="'Q-1' is not in the protocol"):
        p.speaker_of(["A-0", "Q-1"])
    m = one_to_n(es, p)
    sub = m.select(m.probe_speaker != "B")
    assert sub.scores.shape == (4, 5) and sub.probe_id.tolist() == ["A-2", "A-3", "C-2", "C-3"]
    assert (sub.enrolled_speaker[sub.true_index] == sub.probe_speaker).all()
    assert np.array_equal(sub.scores, m.scores[[0, 1, 4, 5]])
    with pytest.raises(ProtocolError, match="shape"):
        m.select([True, False])


def test_embedding_set_repr_is_one_short_line_whatever_the_size():
    """print(EmbeddingSet) dumped every array (the dataclass repr); now a summary, the same for any row order."""
    rng = np.random.default_rng(0)
    n, d = 3000, 192
    spk = np.array([f"s{i % 37}" for i in range(n)])
    cond = np.where(np.arange(n) % 3 == 0, "original", "anonymized")
    es = EmbeddingSet(rng.normal(size=(n, d)), [f"u{i}" for i in range(n)], spk, cond, "ecapa")
    want = ("EmbeddingSet(extractor='ecapa', 3000 utterances x 192 dimensions, 37 speakers, "
            "conditions {'anonymized': 2000, 'original': 1000})")
    assert repr(es) == str(es) == want
    assert repr(permuted(es, rng.permutation(n))) == want
    many = EmbeddingSet(np.zeros((7, 2)), list("abcdefg"), list("xxxyyyz"), list("gfedcba"))
    assert repr(many) == ("EmbeddingSet(extractor='unknown', 7 utterances x 2 dimensions, 3 speakers, conditions "
                          "{'a': 1, 'b': 1, 'c': 1, 'd': 1, 'e': 1, ... 2 more})")


def test_cross_key_trials_follow_the_paper_with_a_slow_oracle():
    """Beyond-EER's cross-profile over two keys (here the two condition labels of the tiny set stand for two
    profile runs): targets within key 1, non-targets key 1 against key 2, same source included."""
    from vpeval.pipeline.protocols import cross_key_trials

    es = tiny_set()
    p = make_protocol(es)
    got = cross_key_trials(es, ("original", "anonymized"), protocol=p)
    enroll, probes = split_dicts(p)
    emb = {(u, c): list(map(float, e)) for u, c, e in zip(es.utterance_id, es.condition, es.embeddings)}
    want = {}
    for s in sorted(probes):
        for u in probes[s]:
            for t in sorted(enroll):
                m = _model([emb[(v, "original")] for v in enroll[t]])
                if t == s:
                    want[(t, u)] = (True, _cos(m, _unit(emb[(u, "original")])))
                want[(t, u + "@anonymized")] = (False, _cos(m, _unit(emb[(u, "anonymized")])))
    cx = got["cross-profile"]
    assert len(cx) == len(want) and cx.meta["target_eer"] == 0.0
    for e, x, lab, s in zip(cx.enroll, cx.test, cx.is_target, cx.scores):
        wl, ws = want[(str(e), str(x))]
        assert bool(lab) == wl and s == pytest.approx(ws, abs=1e-14)
    ss = got["cross-profile-same-source"]
    assert np.array_equal(ss.tar, cx.tar)
    non_keys = [(e, x) for e, x, lab in zip(ss.enroll, ss.test, ss.is_target) if not lab]
    assert all(x.startswith(f"{e}-") for e, x in non_keys) and len(non_keys) == sum(map(len, probes.values()))
    # the probe speaker of every trial, the suffix of the other key removed
    from vpeval.stats import trial_speakers

    np.testing.assert_array_equal(trial_speakers(cx, p), p.speaker_of(np.char.replace(cx.test, "@anonymized", "")))
    with pytest.raises(ProtocolError, match="two or more different"):
        cross_key_trials(es, ("original", "original"))
    with pytest.raises(ProtocolError, match="missing"):
        cross_key_trials(es, ("original", "p2"))
    with pytest.raises(ProtocolError, match="unexpected"):
        cross_key_trials(es.concat(_relabelled(es, "anonymized", "p3")), ("original", "anonymized"))


def _relabelled(es, label, new):
    keep = es.condition == label
    return EmbeddingSet(es.embeddings[keep], es.utterance_id[keep], es.speaker_id[keep],
                        np.full(int(keep.sum()), new), es.extractor)


def test_cross_key_trials_pool_the_other_keys():
    """With three keys, the non-targets are key 1's models against the probes of keys 2 and 3 together (each
    key's scores those of the two-key lists), the targets those of key 1 alone."""
    from vpeval.pipeline.protocols import cross_key_trials

    es = tiny_set()
    k3 = _relabelled(es, "anonymized", "k3")
    k3 = EmbeddingSet(k3.embeddings[:, ::-1].copy(), k3.utterance_id, k3.speaker_id, k3.condition, k3.extractor)
    three = es.concat(k3)
    three = EmbeddingSet(three.embeddings[::-1], three.utterance_id[::-1], three.speaker_id[::-1],
                         three.condition[::-1], three.extractor)  # row order never matters
    p = make_protocol(es)
    both = cross_key_trials(three, ("original", "anonymized", "k3"), protocol=p)["cross-profile"]
    two = {k: cross_key_trials(three.select(np.isin(three.condition, ["original", k])), ("original", k),
                               protocol=p)["cross-profile"] for k in ("anonymized", "k3")}
    assert np.array_equal(both.tar, two["k3"].tar)
    pairs = {(str(e), str(x)): s for t in two.values() for e, x, s, lab in zip(t.enroll, t.test, t.scores,
                                                                                  t.is_target) if not lab}
    got = {(str(e), str(x)): s for e, x, s, lab in zip(both.enroll, both.test, both.scores, both.is_target)
           if not lab}
    assert got == pairs and both.meta["profiles"] == ["original", "anonymized", "k3"]
