"""Attackers (extractor x back-end x training condition), disjointness, fusion across extractors."""

from __future__ import annotations

import numpy as np
import pytest

from vpeval.io.embeddings import EmbeddingSet
from vpeval.pipeline.attackers import ADAPTED_ON_OA, ANON_TRAINED_ON_OA
from vpeval.pipeline import (
    ProtocolError,
    attacker_class,
    build_trials,
    check_disjoint,
    fuse_attackers,
    make_attackers,
    make_protocol,
    speaker_models,
)


def synthetic(speakers, per, d, extractor, seed, shift=0.0, start=0):
    """Original and 'anonymized' (rotated + noisier) embeddings of the same utterances."""
    rng = np.random.default_rng(seed)
    rot, _ = np.linalg.qr(np.random.default_rng(99).normal(size=(d, d)))
    centres = rng.normal(size=(speakers, d)) + shift
    rows, utt, spk = [], [], []
    for i in range(speakers):
        for j in range(per):
            rows.append(centres[i] + 0.4 * rng.normal(size=d))
            utt.append(f"u{start + i:03d}-{j:02d}")
            spk.append(f"S{start + i:03d}")
    x = np.array(rows)
    anon = x @ rot + 0.3 * rng.normal(size=x.shape)
    return EmbeddingSet(np.vstack([x, anon]), utt * 2, spk * 2, ["original"] * len(utt) + ["anonymized"] * len(utt),
                        extractor)


@pytest.fixture(scope="module")
def data():
    sets, train = {}, {}
    for k, (ext, d) in enumerate((("ext-a", 6), ("ext-b", 8))):
        sets[ext] = synthetic(6, 4, d, ext, seed=k)
        train[ext] = synthetic(30, 4, d, ext, seed=10 + k, start=100)
    return sets, train


def test_attacker_classes():
    assert attacker_class("none", "oa") == "ignorant"
    assert attacker_class("original", "oa") == "ignorant"
    assert attacker_class("none", "aa") == "lazy-informed"
    assert attacker_class("original", "aa") == "lazy-informed"
    assert attacker_class("anonymized", "aa") == "semi-informed (back-end)"
    assert attacker_class("anonymized", "aa", adapted=True) == "semi-informed (extractor adapted)"
    # semi-informed is defined on a-a only: an anonymized-trained back-end on o-a trials gets a descriptive name
    assert attacker_class("anonymized", "oa") == attacker_class("anonymized", "oaoa") == ANON_TRAINED_ON_OA
    assert attacker_class("anonymized", "oa", adapted=True) == ADAPTED_ON_OA
    assert "VoicePrivacy" in ANON_TRAINED_ON_OA and "semi-informed" not in ANON_TRAINED_ON_OA
    assert attacker_class("anonymized", "oo") == "reference"
    for t in ("aaaa", "aa-centroid"):
        assert attacker_class("anonymized", t) == "not an attack"
    # Beyond-EER's oaoo / oaaa: attacks with oa's targets (original enrollment)
    assert attacker_class("none", "oaoo") == attacker_class("original", "oaaa") == "ignorant"
    assert attacker_class("anonymized", "oaaa") == ANON_TRAINED_ON_OA


def test_training_speakers_must_be_disjoint(data):
    sets, train = data
    es = sets["ext-a"]
    clash = synthetic(3, 4, 6, "ext-a", seed=5, start=4)  # S004, S005 are evaluation speakers, S006 is not
    with pytest.raises(ProtocolError, match=r"2 training speaker\(s\) of 'ext-a' are also evaluation speakers.*\(first shared: 'S004', 'S005'\)"):
        check_disjoint(clash, es)
    with pytest.raises(ProtocolError, match="disjoint"):
        make_attackers({"ext-a": es}, {"ext-a": clash})
    check_disjoint(train["ext-a"], es)


def test_without_training_only_cosine(data):
    sets, _ = data
    atts = make_attackers(sets)
    assert [a.name for a in atts] == ["ext-a/cosine", "ext-b/cosine"]
    assert all(a.trained_on == "none" and a.training_speakers == 0 for a in atts)
    # identical to the plain protocol
    t = atts[0].build_trials(["oa"])["oa"]
    np.testing.assert_array_equal(t.scores, build_trials(sets["ext-a"], ["oa"])["oa"].scores)


def test_every_backend_and_condition_and_their_scores(data):
    sets, train = data
    atts = make_attackers(sets, train, asnorm=True, top_k=5)
    names = [a.name for a in atts]
    assert names[:8] == [
        "ext-a/cosine", "ext-a/cosine+asnorm/original", "ext-a/cosine+asnorm/anonymized",
        "ext-a/centred-cosine/original", "ext-a/centred-cosine+asnorm/original",
        "ext-a/centred-cosine/anonymized", "ext-a/centred-cosine+asnorm/anonymized", "ext-a/lda/original"]
    assert len(names) == 2 * (3 + 3 * 4)
    plda = next(a for a in atts if a.name == "ext-b/plda/anonymized")
    assert plda.describe()["trained_on"] == "anonymized" and plda.describe()["training_speakers"] == 30
    # scores are the back-end's scores of (unit speaker model, unit probe)
    es = sets["ext-b"]
    p = make_protocol(es)
    t = plda.build_trials(["aa"], protocol=p)["aa"]
    spk, models = speaker_models(es, p, "anonymized")
    probe_ids, _ = p.probes()
    rows = [int(np.flatnonzero((es.utterance_id == u) & (es.condition == "anonymized"))[0]) for u in probe_ids]
    want = plda.model.score(models, es.embeddings[rows]).T.reshape(-1)
    np.testing.assert_allclose(t.scores, want, rtol=1e-12)
    assert t.meta["backend"] == "plda" and t.meta["attacker"] == "ext-b/plda/anonymized"


def test_trial_scores_do_not_depend_on_row_order(data):
    sets, train = data
    perm = np.random.default_rng(4).permutation(len(train["ext-a"]))
    tr = train["ext-a"]
    shuffled = EmbeddingSet(tr.embeddings[perm], tr.utterance_id[perm], tr.speaker_id[perm], tr.condition[perm],
                            tr.extractor)
    es = sets["ext-a"]
    pe = np.random.default_rng(5).permutation(len(es))
    es2 = EmbeddingSet(es.embeddings[pe], es.utterance_id[pe], es.speaker_id[pe], es.condition[pe], es.extractor)
    a = make_attackers({"ext-a": es}, {"ext-a": tr}, backends=["plda", "lda"])
    b = make_attackers({"ext-a": es2}, {"ext-a": shuffled}, backends=["plda", "lda"])
    for x, y in zip(a, b):
        tx, ty = x.build_trials(["oa", "aa"]), y.build_trials(["oa", "aa"])
        for k in tx:
            np.testing.assert_array_equal(tx[k].scores, ty[k].scores)


def test_fusion_combines_members_with_reported_weights(data):
    sets, train = data
    atts = make_attackers(sets, train, backends=["lda", "plda"], conditions=["anonymized"])
    fused = fuse_attackers(atts, train, seed=0)
    assert fused.name == "fusion/anonymized" and fused.backend == "fusion"
    d = fused.describe()
    assert d["members"] == [a.name for a in atts]
    assert set(d["fusion"]["weights"]) == set(d["members"])
    trials = fused.build_trials(["aa", "oa"])
    parts = [a.build_trials(["aa"])["aa"].scores for a in atts]
    w = fused.model.weights_
    np.testing.assert_allclose(trials["aa"].scores, sum(wk * s for wk, s in zip(w, parts)) + fused.model.intercept_)
    # 1-to-N matrix agrees with the flattened trials
    m = fused.one_to_n(enroll="o", probe="a")
    np.testing.assert_allclose(np.sort(m.scores.reshape(-1)), np.sort(trials["oa"].scores))
    # the same seed gives the same weights; fusion of one attacker is refused
    np.testing.assert_array_equal(fuse_attackers(atts, train, seed=0).model.weights_, w)
    with pytest.raises(ProtocolError, match="at least two"):
        fuse_attackers(atts[:1], train)
    with pytest.raises(ProtocolError, match="one training condition"):
        fuse_attackers(make_attackers(sets, train, backends=["cosine", "lda"])[:2], train)


def test_bad_requests(data):
    sets, train = data
    with pytest.raises(ProtocolError, match="unknown back-end"):
        make_attackers(sets, train, backends=["svm"])
    only_orig = {k: v.select(v.condition == "original") for k, v in train.items()}
    with pytest.raises(ProtocolError, match="no rows with condition 'anonymized'"):
        make_attackers(sets, only_orig)
    with pytest.raises(ProtocolError, match="no evaluation embeddings"):
        make_attackers({"ext-a": sets["ext-a"]}, train)


def test_api_misuse_gets_clear_errors(data):
    sets, train = data
    atts = make_attackers(sets, train, backends=["lda", "plda"], conditions=["anonymized"])
    with pytest.raises(ProtocolError, match="listed twice"):
        fuse_attackers([atts[0], atts[0]], train)
    with pytest.raises(ProtocolError, match="no training embeddings for extractor 'ext-a'"):
        fuse_attackers(atts, {})
    fuse_attackers(atts, train, folds=np.int64(2))
    with pytest.raises(ProtocolError, match="backend must be a fitted"):
        build_trials(sets["ext-a"], ["aa"], backend="plda")
    tr = train["ext-a"]
    emb = tr.embeddings.copy()
    bad_row = int(np.flatnonzero(tr.condition == "anonymized")[7])
    emb[bad_row] = 0.0
    from vpeval.io.embeddings import EmbeddingSet

    zero = EmbeddingSet(emb, tr.utterance_id, tr.speaker_id, tr.condition, tr.extractor)
    with pytest.raises(ProtocolError, match=f"utterance '{tr.utterance_id[bad_row]}' \\(anonymized\\) is the zero"):
        make_attackers({"ext-a": sets["ext-a"]}, {"ext-a": zero}, backends=["plda"])


def test_fusion_reports_actual_cllr_where_applied_and_fold_spread(data):
    from vpeval.metrics.verification import cllr
    from vpeval.pipeline.audit import audit_system
    from vpeval.report.audit import _fused_calibration_rows

    sets, train = data
    atts = make_attackers(sets, train, backends=["lda", "plda"], conditions=["anonymized"])
    fused = fuse_attackers(atts, train, seed=0)
    d = fused.describe()["fusion"]
    assert d["learnt_on_trials"] == "aa"
    assert len(d["fold_weights"]) == 2 and all(set(fw) == set(d["weights"]) for fw in d["fold_weights"] if fw)
    fitted = [fw for fw in d["fold_weights"] if fw is not None]
    if len(fitted) == 2:
        for m in d["weights"]:
            assert d["weight_spread"][m] == pytest.approx(abs(fitted[0][m] - fitted[1][m]))
    res = audit_system(sets, attackers=(atts + [fused], []), types=("oa", "aa"), n_boot=20, n_perm=20,
                       group_by=None)
    tm = res.type_metrics
    for t in ("oa", "aa"):
        tr = res.trials["fusion/anonymized"][t]
        assert tm["fusion/anonymized"][t]["actual_cllr_bits"] == pytest.approx(cllr(tr.tar, tr.non), rel=1e-12)
        assert tm["fusion/anonymized"][t]["llr_learnt_on"] == "aa"
        assert "actual_cllr_bits" not in tm[atts[0].name][t]  # a back-end's scores are not LLRs
    rows = {r[1]: r for r in _fused_calibration_rows({"s": res})}
    assert set(rows) == {"oa", "aa"}
    assert "weights learnt on aa trials applied to oa" in rows["oa"][-1]
    assert "applied to" not in rows["aa"][-1]


def test_asnorm_cap_is_said_in_the_report_and_json(data):
    from vpeval.pipeline.audit import SystemAudit
    from vpeval.report.audit import _asnorm_cap_notes

    sets, train = data
    atts = make_attackers({"ext-a": sets["ext-a"]}, {"ext-a": train["ext-a"]}, backends=["plda"], asnorm=True,
                          top_k=200, conditions=["original"])
    res = SystemAudit({}, {}, {}, attackers={a.name: a for a in atts})
    capped = next(a for a in atts if a.backend == "plda+asnorm")
    st = capped.describe()["settings"]
    assert (st["asnorm_top_k"], st["asnorm_top_k_requested"], st["asnorm_cohort"]) == (30, 200, 30)
    notes = _asnorm_cap_notes(res)
    assert notes == [f"{capped.name}: AS-norm top-k 30, not the requested 200: the cohort has only 30 training "
                     "speakers, so every cohort score is used (plain symmetric S-norm over the whole cohort)"]
    atts = make_attackers({"ext-a": sets["ext-a"]}, {"ext-a": train["ext-a"]}, backends=["plda"], asnorm=True,
                          top_k=10, conditions=["original"])
    assert _asnorm_cap_notes(SystemAudit({}, {}, {}, attackers={a.name: a for a in atts})) == []


def test_evaluation_embeddings_copied_into_training_are_detected(data):
    sets, train = data
    tr, es = train["ext-a"], sets["ext-a"]
    emb = tr.embeddings.copy()
    emb[5] = es.embeddings[7]                                   # a copy under a training speaker's id
    copied = EmbeddingSet(emb, tr.utterance_id, tr.speaker_id, tr.condition, tr.extractor)
    with pytest.raises(ProtocolError, match=rf"1 training embedding\(s\) of 'ext-a' are identical to evaluation "
                                            rf"embeddings \(first: training utterance '{tr.utterance_id[5]}'.*"
                                            rf"'{es.utterance_id[7]}'"):
        check_disjoint(copied, es)
    with pytest.raises(ProtocolError, match="identical to evaluation"):
        make_attackers({"ext-a": es}, {"ext-a": copied}, backends=["plda"])
    # a copy that went through float32 storage is found too; a near-copy (real noise) is not a copy
    emb[5] = es.embeddings[7].astype(np.float32)
    with pytest.raises(ProtocolError, match="identical to evaluation"):
        check_disjoint(EmbeddingSet(emb, tr.utterance_id, tr.speaker_id, tr.condition, tr.extractor), es)
    emb[5] = es.embeddings[7] + 1e-3
    check_disjoint(EmbeddingSet(emb, tr.utterance_id, tr.speaker_id, tr.condition, tr.extractor), es)
    # a constant row on both sides (the prosody statistics of silence) is not called a copy: said as constant
    e_emb = es.embeddings.copy()
    e_emb[7] = 2.5
    emb[5] = 2.5
    ev = EmbeddingSet(e_emb, es.utterance_id, es.speaker_id, es.condition, es.extractor)
    with pytest.raises(ProtocolError, match=rf"training utterance '{tr.utterance_id[5]}' .* has a constant 'ext-a' "
                                            rf"row \(every value 2\.5\), as has evaluation utterance "
                                            rf"'{es.utterance_id[7]}': not a measurement of speech") as exc:
        check_disjoint(EmbeddingSet(emb, tr.utterance_id, tr.speaker_id, tr.condition, tr.extractor), ev)
    assert "copied" not in str(exc.value)
