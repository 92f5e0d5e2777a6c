"""Voice similarity matrices, DeID and G_VD (vpeval.metrics.distinctiveness)."""

import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit
from scipy.stats import ortho_group

from vpeval.calibration import LogisticCalibrator, pav_llr
from vpeval.errors import DegenerateInputWarning
from vpeval.metrics.distinctiveness import (
    DistinctivenessError,
    deid,
    diagonal_dominance,
    gvd,
    similarity_matrix,
    voice_distinctiveness,
)

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "librispeech-mini"


def _speakers(n_spk=6, per=5, d=16, spread=0.6, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_spk, d))
    X = np.repeat(centres, per, axis=0) + spread * rng.normal(size=(n_spk * per, d))
    spk = np.repeat([f"s{i}" for i in range(n_spk)], per)
    utt = np.array([f"s{i // per}-{i % per}" for i in range(n_spk * per)])
    return rng, X, spk, utt


# ------------------------------------------------------------------------------------------ hand cases


def test_diagonal_dominance_deid_gvd_by_hand():
    M = [[0.9, 0.2, 0.1], [0.3, 0.8, 0.2], [0.1, 0.1, 0.7]]
    # diagonal mean 0.8; off-diagonal mean (0.2+0.1+0.3+0.2+0.1+0.1)/6 = 1/6
    assert diagonal_dominance(M) == pytest.approx(0.8 - 1 / 6)
    assert diagonal_dominance(np.array(M).T) == pytest.approx(0.8 - 1 / 6)
    m_oo = [[0.9, 0.1], [0.1, 0.9]]  # D = 0.8
    assert deid(m_oo, [[0.5, 0.5], [0.5, 0.5]]) == 1.0
    assert deid(m_oo, m_oo) == 0.0
    assert deid(m_oo, [[0.1, 0.9], [0.9, 0.1]]) == 0.0  # |.|: an inverted matrix is as identifying
    assert deid(m_oo, [[0.7, 0.3], [0.3, 0.7]]) == pytest.approx(0.5)
    assert gvd(m_oo, m_oo) == 0.0
    assert gvd(m_oo, [[0.6, 0.2], [0.2, 0.6]]) == pytest.approx(10 * math.log10(0.5))
    assert gvd([[0.6, 0.2], [0.2, 0.6]], m_oo) == pytest.approx(10 * math.log10(2))


def test_degenerate_matrices():
    flat = [[0.5, 0.5], [0.5, 0.5]]
    with pytest.raises(DistinctivenessError, match="D_diag\\(M_oo\\) = 0"):
        deid(flat, flat)
    with pytest.raises(DistinctivenessError, match="D_diag\\(M_oo\\) = 0"):
        gvd(flat, flat)
    with pytest.warns(DegenerateInputWarning):
        assert gvd([[1, 0], [0, 1]], flat) == -math.inf
    with pytest.raises(DistinctivenessError, match="square"):
        diagonal_dominance([[1, 2, 3]])
    with pytest.raises(DistinctivenessError, match="square"):
        diagonal_dominance([[1]])
    with pytest.raises(DistinctivenessError, match="NaN"):
        diagonal_dominance([[1, np.nan], [0, 1]])


def test_similarity_matrix_by_hand():
    M = similarity_matrix([1.0, 3.0, -1.0, 0.0, -2.0, 2.0], ["a", "a", "a", "b", "b", "b"],
                          ["a", "a", "b", "a", "a", "b"], ["a", "b"])
    np.testing.assert_allclose(M, expit([[2.0, -1.0], [-1.0, 2.0]]))
    with pytest.raises(DistinctivenessError, match="no utterance pair"):
        similarity_matrix([1.0], ["a"], ["a"], ["a", "b"])
    with pytest.raises(DistinctivenessError, match="not in speakers"):
        similarity_matrix([1.0], ["a"], ["z"], ["a", "b"])
    with pytest.raises(DistinctivenessError, match="entry"):
        similarity_matrix([1.0], ["a"], ["a"], ["a"], entry="mean")


# ------------------------------------------------------------------------------------------ must-hold


@pytest.mark.parametrize("calibration", ["pav-laplace", "logistic", "none"])
@pytest.mark.parametrize("fit_on", ["each", "oo"])
@pytest.mark.parametrize("entry", ["sigmoid", "llr"])
def test_identical_conditions_give_deid_0_and_gvd_0(calibration, fit_on, entry):
    _, X, spk, utt = _speakers()
    r = voice_distinctiveness(X, X.copy(), spk, utt, calibration=calibration, fit_on=fit_on, entry=entry)
    assert r.deid == pytest.approx(0.0, abs=1e-12)
    assert r.gvd_db == pytest.approx(0.0, abs=1e-9)
    np.testing.assert_allclose(r.m_oa, r.m_oo, atol=1e-12)


def _three_speakers():
    # 3 speakers x 2 utterances, near the axes e_0, e_1, e_2: every same-speaker cosine (about 0.99) is above
    # every different-speaker cosine (at most about 0.2): separable scores
    E = np.eye(3)
    X = np.array([E[k] + 0.1 * E[(k + j) % 3] for k in range(3) for j in (1, 2)])
    spk = np.repeat(["A", "B", "C"], 2)
    return X, spk


def test_pair_counting_by_hand_on_three_speakers():
    X, spk = _three_speakers()
    # Laplace PAV on separable scores, pseudo-trials (1 tar + 1 non) below and above: the bottom block pools
    # with every non-target, the top block with every target; LLR = logit(P) - ln(Nt/Nn), real counts.
    # ordered pairs (default): 6 targets, 24 non-targets per matrix
    #   non: P = 1/26 -> ln(1/25) - ln(6/24) = ln(4/25); tar: P = 7/8 -> ln 7 - ln(1/4) = ln 28
    # unordered (oo, aa): 3 targets, 12 non-targets
    #   non: P = 1/14 -> ln(1/13) - ln(3/12) = ln(4/13); tar: P = 4/5 -> ln 4 - ln(1/4) = ln 16
    r = voice_distinctiveness(X, X.copy(), spk, entry="llr")
    assert r.pairs == "ordered" and r.to_dict()["pairs"] == "ordered"
    for m in (r.m_oo, r.m_oa, r.m_aa):
        np.testing.assert_allclose(np.diag(m), np.log(28), rtol=1e-12)
        np.testing.assert_allclose(m[~np.eye(3, dtype=bool)], np.log(4 / 25), rtol=1e-12)
    assert r.d_oo == pytest.approx(np.log(28 * 25 / 4), rel=1e-12)
    assert r.deid == 0.0 and r.gvd_db == 0.0  # the identity anonymizer: exactly, with the double count
    u = voice_distinctiveness(X, X.copy(), spk, pairs="unordered")  # sigmoid entries
    # oo, aa: sigmoid(ln 16) = 16/17, sigmoid(ln 4/13) = 4/17; oa keeps its 30 distinct ordered trials:
    # 28/29 and 4/29. DeID = 1 - (24/29) / (12/17) = -5/29, G_VD = 0
    for m, (dg, off) in ((u.m_oo, (16 / 17, 4 / 17)), (u.m_aa, (16 / 17, 4 / 17)), (u.m_oa, (28 / 29, 4 / 29))):
        np.testing.assert_allclose(np.diag(m), dg, rtol=1e-12)
        np.testing.assert_allclose(m[~np.eye(3, dtype=bool)], off, rtol=1e-12)
    assert u.d_oo == pytest.approx(12 / 17, rel=1e-12) and u.d_oa == pytest.approx(24 / 29, rel=1e-12)
    assert u.deid == pytest.approx(-5 / 29, rel=1e-12) and u.gvd_db == pytest.approx(0.0, abs=1e-12)
    # plain averaging and the unpenalised logistic fit do not see the double count
    for cal in ("none",):
        a = voice_distinctiveness(X, X.copy(), spk, calibration=cal)
        b = voice_distinctiveness(X, X.copy(), spk, calibration=cal, pairs="unordered")
        np.testing.assert_array_equal(a.m_oo, b.m_oo)
    with pytest.raises(DistinctivenessError, match="pairs must be one of"):
        voice_distinctiveness(X, X, spk, pairs="both")


def test_unordered_pairs_do_not_change_logistic_calibration():
    rng, X, spk, utt = _speakers(seed=4)
    A = X + 0.8 * rng.normal(size=X.shape)
    a = voice_distinctiveness(X, A, spk, utt, calibration="logistic")
    b = voice_distinctiveness(X, A, spk, utt, calibration="logistic", pairs="unordered")
    # maximum likelihood is invariant to duplicating every trial
    np.testing.assert_allclose(a.m_oo, b.m_oo, atol=1e-6)
    np.testing.assert_allclose(a.m_aa, b.m_aa, atol=1e-6)


def test_speaker_independent_anonymization_is_de_identified_and_loses_distinctiveness():
    rng, X, spk, utt = _speakers(n_spk=8, per=6, seed=2)
    A = rng.normal(size=X.shape)  # anonymized voices carry no trace of the speaker
    r = voice_distinctiveness(X, A, spk, utt)
    assert r.deid > 0.8
    assert r.gvd_db < -6


def test_rotation_keeps_distinctiveness_but_de_identifies_against_originals():
    rng, X, spk, utt = _speakers(n_spk=8, per=6, d=16, spread=0.4, seed=3)
    A = X @ ortho_group.rvs(16, random_state=1)  # a consistent pseudo-voice per speaker, unrelated to oo
    r = voice_distinctiveness(X, A, spk, utt)
    assert r.gvd_db == pytest.approx(0.0, abs=1e-9)  # aa scores equal oo scores exactly
    assert r.deid > 0.6


def test_calibrated_llrs_are_averaged_not_raw_scores():
    # oracle: a slow, literal implementation of the definition with the library's PAV (Laplace)
    _, X, spk, utt = _speakers(n_spk=4, per=4, seed=5)
    rng = np.random.default_rng(9)
    A = X + 1.5 * rng.normal(size=X.shape)
    r = voice_distinctiveness(X, A, spk, utt)
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    V = A / np.linalg.norm(A, axis=1, keepdims=True)
    speakers = sorted(set(spk))
    for key, (P, Q) in {"oo": (U, U), "oa": (U, V), "aa": (V, V)}.items():
        pairs = [(i, j) for i in range(len(spk)) for j in range(len(spk)) if i != j]
        tar = [P[i] @ Q[j] for i, j in pairs if spk[i] == spk[j]]
        non = [P[i] @ Q[j] for i, j in pairs if spk[i] != spk[j]]
        tl, nl = pav_llr(tar, non, laplace=True)
        llr = {}
        ti = ni = 0
        for i, j in pairs:
            if spk[i] == spk[j]:
                llr[i, j] = tl[ti]
                ti += 1
            else:
                llr[i, j] = nl[ni]
                ni += 1
        M = np.empty((4, 4))
        for a, sa in enumerate(speakers):
            for b, sb in enumerate(speakers):
                vals = [llr[i, j] for i, j in pairs if spk[i] == sa and spk[j] == sb]
                M[a, b] = 1 / (1 + math.exp(-sum(vals) / len(vals)))
        np.testing.assert_allclose(getattr(r, f"m_{key}"), M, atol=1e-12)
    raw = voice_distinctiveness(X, A, spk, utt, calibration="none")
    assert abs(raw.deid - r.deid) > 1e-3  # averaging raw scores (VoicePAT) is a different number


def test_fit_on_oo_applies_the_oo_calibrator_to_every_matrix():
    rng, X, spk, utt = _speakers(n_spk=5, per=4, spread=1.0, seed=6)
    A = X + rng.normal(size=X.shape)
    r = voice_distinctiveness(X, A, spk, utt, calibration="logistic", fit_on="oo", entry="llr")
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    V = A / np.linalg.norm(A, axis=1, keepdims=True)
    off = ~np.eye(len(spk), dtype=bool)
    same = (spk[:, None] == spk[None, :])
    S = U @ U.T
    cal = LogisticCalibrator().fit(S[off & same], S[off & ~same])
    Soa = U @ V.T
    # entry (s0, s1) of M_oa in nats: mean of the oo map applied to the oa scores of that block
    blk = (spk[:, None] == "s0") & (spk[None, :] == "s1")
    assert r.m_oa[0, 1] == pytest.approx(np.mean(cal.slope_ * Soa[blk] + cal.intercept_), abs=1e-9)


def test_oa_matrix_is_not_symmetrised():
    rng, X, spk, utt = _speakers(n_spk=4, per=4, seed=8)
    A = X + 0.8 * rng.normal(size=X.shape)
    r = voice_distinctiveness(X, A, spk, utt, entry="llr")
    assert not np.allclose(r.m_oa, r.m_oa.T)
    np.testing.assert_allclose(r.m_oo, r.m_oo.T, atol=1e-12)


# ------------------------------------------------------------------------------------------ properties


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_row_order_and_scale_do_not_matter(seed):
    rng0, X, spk, utt = _speakers(n_spk=5, per=3, seed=11)
    A = X + rng0.normal(size=X.shape)
    a = voice_distinctiveness(X, A, spk, utt)
    p = np.random.default_rng(seed).permutation(len(spk))
    b = voice_distinctiveness(3.0 * X[p], 0.5 * A[p], spk[p], utt[p])  # cosine: row scale is irrelevant
    assert a.deid == pytest.approx(b.deid, abs=1e-12)
    assert a.gvd_db == pytest.approx(b.gvd_db, abs=1e-9)
    np.testing.assert_allclose(a.m_oa, b.m_oa, atol=1e-12)


# ------------------------------------------------------------------------------------------ errors


def test_input_errors():
    _, X, spk, utt = _speakers(n_spk=3, per=2)
    with pytest.raises(DistinctivenessError, match="single utterance"):
        voice_distinctiveness(X[:-1], X[:-1], spk[:-1], utt[:-1])
    with pytest.raises(DistinctivenessError, match="at least 2 speakers"):
        voice_distinctiveness(X[:2], X[:2], spk[:2], utt[:2])
    with pytest.raises(DistinctivenessError, match="same shape"):
        voice_distinctiveness(X, X[:, :3], spk, utt)
    with pytest.raises(DistinctivenessError, match="calibration"):
        voice_distinctiveness(X, X, spk, utt, calibration="pav")
    with pytest.raises(DistinctivenessError, match="fit_on"):
        voice_distinctiveness(X, X, spk, utt, fit_on="aa")
    with pytest.raises(DistinctivenessError, match="distinct"):
        voice_distinctiveness(X, X, spk, np.zeros(len(spk)).astype(str))
    Z = X.copy()
    Z[0] = 0
    with pytest.raises(DistinctivenessError, match="zero vector"):
        voice_distinctiveness(Z, X, spk, utt)


# ------------------------------------------------------------------------------------------ bundled example


def _deid_gvd_second_implementation(X, Y, spk, utt):
    """DeID and G_VD from scratch (Noe et al. 2020 definitions as written in the module docstring).

    Independent of vpeval's code path: cosine scores by explicit row normalisation; one PAV-Laplace
    calibration per matrix by scikit-learn's IsotonicRegression (which pools tied scores) on the matrix's
    ordered pairs of distinct utterances plus one pseudo-target and one pseudo-non-target below the lowest
    and above the highest score, LLR = logit(P) - ln(Nt/Nn) with the real counts; entries = sigmoid of the
    mean LLR per speaker pair by explicit loops; D_diag, DeID and G_VD by their formulas.
    """
    from sklearn.isotonic import IsotonicRegression

    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    Yn = Y / np.linalg.norm(Y, axis=1, keepdims=True)
    n = len(spk)
    off = ~np.eye(n, dtype=bool)
    same = (spk[:, None] == spk[None, :])[off]
    speakers = sorted(set(spk))

    def matrix(S):
        s = S[off]
        lo, hi = s.min() - 1.0, s.max() + 1.0
        x = np.concatenate([s, [lo, lo, hi, hi]])
        y = np.concatenate([same.astype(float), [1.0, 0.0, 1.0, 0.0]])
        p = IsotonicRegression().fit(x, y).predict(s)
        llr = np.log(p) - np.log1p(-p) - math.log(same.sum() / (~same).sum())
        L = np.full(S.shape, np.nan)
        L[off] = llr
        M = np.empty((len(speakers), len(speakers)))
        for i, a in enumerate(speakers):
            for j, b in enumerate(speakers):
                M[i, j] = expit(np.nanmean(L[np.ix_(spk == a, spk == b)]))
        return M

    def d_diag(M):
        k = M.shape[0]
        return abs(np.trace(M) / k - (M.sum() - np.trace(M)) / (k * (k - 1)))

    m_oo = matrix(Xn @ Xn.T.copy())
    m_oa = matrix(Xn @ Yn.T.copy())
    m_aa = matrix(Yn @ Yn.T.copy())
    return 1 - d_diag(m_oa) / d_diag(m_oo), 10 * math.log10(d_diag(m_aa) / d_diag(m_oo))


#: Regression guard only: the values vpeval printed for the bundled example when this test was written
#: (PAV-Laplace fitted per matrix, sigmoid entries, 10 test-other speakers x 10 utterances). The independent
#: check is the second implementation above; these catch a change of the example data or of its pipeline.
REGRESSION_GUARD_BUNDLED = {"mfcc": (0.816, 0.11), "resemblyzer": (0.639, -0.76)}


def test_bundled_example_deid_and_gvd():
    from vpeval.io.embeddings import read_embeddings
    from vpeval.pipeline import make_protocol
    from vpeval.report.beyond import analyse_distinctiveness, matched_pairs

    for name, (deid_guard, gvd_guard) in REGRESSION_GUARD_BUNDLED.items():
        es = read_embeddings(EXAMPLE / f"embeddings_{name}.npz")
        r = analyse_distinctiveness(es)
        assert r.speakers.size == 10 and r.n_utterances == 100
        assert r.d_oo > 0.9  # original voices are told apart
        X, Y, spk, utt = matched_pairs(es, speakers=make_protocol(es).evaluation_speakers)
        deid_ref, gvd_ref = _deid_gvd_second_implementation(X, Y, np.asarray(spk).astype(str), utt)
        assert r.deid == pytest.approx(deid_ref, abs=1e-9), name
        assert r.gvd_db == pytest.approx(gvd_ref, abs=1e-7), name
        assert r.deid == pytest.approx(deid_guard, abs=0.0005), name
        assert r.gvd_db == pytest.approx(gvd_guard, abs=0.005), name
    # each unordered oo/aa pair counted once instead of twice (measured): DeID mfcc 0.8149 (-0.0015),
    # resemblyzer 0.6388 (-0.0005); G_VD mfcc +0.120 dB (+0.009), resemblyzer -0.795 dB (-0.033)
    twice = analyse_distinctiveness(read_embeddings(EXAMPLE / "embeddings_resemblyzer.npz"))
    once = analyse_distinctiveness(read_embeddings(EXAMPLE / "embeddings_resemblyzer.npz"), pairs="unordered")
    assert 0 < twice.deid - once.deid < 0.002
    assert 0 < twice.gvd_db - once.gvd_db < 0.05
    es = read_embeddings(EXAMPLE / "embeddings_mfcc.npz")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        analyse_distinctiveness(es, calibration="logistic")
