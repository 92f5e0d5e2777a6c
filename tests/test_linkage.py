"""LID: z-norm, softmax posterior, per-probe LID, summaries, pipeline with dev set or cross-fitting."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpeval.calibration.logistic import LogisticCalibrator
from vpeval.errors import InvalidScoresError, SeparableScoresError, VpevalError
from vpeval.metrics.linkage import (
    lid,
    lid_ccdf,
    lid_pipeline,
    lid_summary,
    linkage_analysis,
    softmax_posteriors,
    znorm_rows,
)

ROW = [[0.8, 0.2, 0.1, 0.3]]


# ---------------------------------------------------------------------------------------------- must hold


def test_issue_example_zscores_posteriors_lid():
    z = znorm_rows(ROW)
    assert np.allclose(z, [[1.447352, -0.482451, -0.804084, -0.160817]], atol=1e-6)
    for b in (0.0, -3.7, 12.0):  # any intercept
        llr = 2.0 * z + b
        assert np.allclose(softmax_posteriors(llr), [[0.932614, 0.019656, 0.010331, 0.037399]], atol=1e-6)
        assert lid(llr, [0])[0] == pytest.approx(1.899352, abs=1e-6)


def test_issue_example_summary():
    s = lid_summary([1.2, -0.3, 0.5, -0.1, 0.0])
    assert s.alid == pytest.approx(0.26)
    assert s.pdr == pytest.approx(0.4) and s.ndr == pytest.approx(0.6)
    assert s.lid_plus == pytest.approx(0.85)
    assert s.lid_minus == pytest.approx(-0.133333, abs=1e-6)
    assert s.lid_max == 1.2
    assert s.n == 5


def test_overflow_rows():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow or invalid-value warning may escape either
        p = softmax_posteriors([[1000.0, 0.0, -5.0]])
        assert p.tolist() == [[1.0, 0.0, 0.0]]
        v = lid([[1000.0, 0.0, -5.0], [np.inf, 0.0, -5.0]], [0, 0])
        assert np.allclose(v, math.log2(3), atol=1e-12) and v[0] == v[1]
        assert softmax_posteriors([[np.inf, 0.0, -5.0]]).tolist() == [[1.0, 0.0, 0.0]]


@pytest.mark.parametrize(
    "row,match",
    [
        ([-np.inf, -np.inf, -np.inf], "every LLR .* is -inf"),
        ([np.inf, np.inf, 0.0], "2 LLRs equal to \\+inf"),
        ([0.1, np.nan, 0.0], "NaN"),
    ],
)
def test_undefined_rows_raise(row, match):
    with pytest.raises(InvalidScoresError, match=match):
        lid([[0.0, 1.0, 2.0], row], [0, 0])
    with pytest.raises(InvalidScoresError):
        softmax_posteriors([row])


def test_true_speaker_with_zero_posterior_gives_minus_inf_not_nan():
    v = lid([[0.0, np.inf, 1.0], [-np.inf, 0.0, 1.0]], [0, 0])
    assert v.tolist() == [-np.inf, -np.inf]
    s = lid_summary(v)
    assert s.alid == -np.inf and s.lid_minus == -np.inf and s.lid_plus is None and s.pdr == 0.0


def test_identical_rows_give_zero():
    for N in (1, 2, 3, 7, 261, 5000):
        llr = np.full((4, N), 0.37)
        llr[1] = -1e300
        llr[2] = 1e300
        assert lid(llr, [0, N - 1, N // 2, 0]).tolist() == [0.0] * 4


def test_lid_at_most_log2_n_extreme_values():
    rng = np.random.default_rng(0)
    for N in (2, 3, 10, 261):
        llr = rng.normal(scale=50.0, size=(200, N))
        ti = np.argmax(llr, axis=1)
        llr[np.arange(200), ti] += 1e6  # certain and right
        v = lid(llr, ti)
        assert (v <= math.log2(N)).all()
        assert v.max() == math.log2(N)


# ---------------------------------------------------------------------------------------------- oracle


def slow_lid(L, ti):
    out = []
    for row, t in zip(np.asarray(L, dtype=float).tolist(), ti):
        # p_true = 1 / sum_j exp(l_j - l_t): a different algorithm from log-sum-exp around the maximum
        denom = sum(math.exp(v - row[t]) for v in row)
        out.append(math.log2(len(row) / denom))
    return np.array(out)


@pytest.mark.parametrize("seed", range(5))
def test_against_slow_oracle(seed):
    rng = np.random.default_rng(seed)
    n, N = 40, int(rng.integers(2, 30))
    L = rng.normal(scale=3.0, size=(n, N))
    ti = rng.integers(0, N, size=n)
    assert np.allclose(lid(L, ti), slow_lid(L, ti), atol=1e-10)


def test_znorm_matches_numpy_sample_std():
    rng = np.random.default_rng(1)
    S = rng.normal(size=(13, 6)) * 5 + 2
    ref = (S - S.mean(axis=1, keepdims=True)) / S.std(axis=1, ddof=1, keepdims=True)
    assert np.allclose(znorm_rows(S), ref, atol=1e-12)
    assert np.allclose(znorm_rows(S, chunk_rows=4), ref, atol=1e-12)


@pytest.mark.parametrize(
    "S,match",
    [
        ([[0.1, 0.1, 0.1], [0.0, 1.0, 2.0]], "same score for every speaker .*row 0"),
        ([[0.0, 1.0], [0.1, 0.1]], "row 1"),
        ([[0.1], [0.2]], "at least 2 speakers"),
        ([[0.0, np.inf, 1.0]], "infinite"),
        ([[0.0, np.nan, 1.0]], "NaN"),
    ],
)
def test_znorm_errors(S, match):
    with pytest.raises(InvalidScoresError, match=match):
        znorm_rows(S)


# ---------------------------------------------------------------------------------------------- properties

finite = st.floats(-30, 30, allow_nan=False, allow_infinity=False)
mats = st.integers(1, 9).flatmap(
    lambda N: st.lists(st.lists(finite, min_size=N, max_size=N), min_size=1, max_size=12)
)


@settings(max_examples=60, deadline=None)
@given(mats, st.randoms(use_true_random=False))
def test_order_invariance_and_bound(rows, rnd):
    L = np.array(rows)
    n, N = L.shape
    ti = np.array([rnd.randrange(N) for _ in range(n)])
    v = lid(L, ti)
    assert (v <= math.log2(N)).all() and np.isfinite(v).all()
    col = np.array(rnd.sample(range(N), N))
    row = np.array(rnd.sample(range(n), n))
    v2 = lid(L[row][:, col], np.argsort(col)[ti[row]])
    assert np.allclose(v2, v[row], atol=1e-12)
    s1, s2 = lid_summary(v), lid_summary(v2)
    # equal up to the rounding of a sum taken in another order
    assert s1.alid == pytest.approx(s2.alid, abs=1e-12) and s1.pdr == s2.pdr
    assert s1.lid_max == pytest.approx(s2.lid_max, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-20, 5, allow_nan=False), min_size=1, max_size=30))
def test_summary_identity(values):
    s = lid_summary(values)
    total = s.pdr * (s.lid_plus or 0.0) + s.ndr * (s.lid_minus or 0.0)
    assert total == pytest.approx(s.alid, abs=1e-9)
    assert s.pdr + s.ndr == pytest.approx(1.0)
    assert s.lid_max == max(values)


def test_summary_errors_and_bound():
    with pytest.raises(InvalidScoresError, match="NaN or \\+inf"):
        lid_summary([0.1, np.nan])
    with pytest.raises(InvalidScoresError, match="NaN or \\+inf"):
        lid_summary([np.inf])
    with pytest.raises(InvalidScoresError):
        lid_summary([])
    with pytest.raises(InvalidScoresError, match="log2 N"):
        lid_summary([2.5], n_speakers=4)
    s = lid_summary([2.0, 0.0], n_speakers=4)
    assert s.N == 4 and s.to_dict()["log2_N"] == 2.0 and s.lid_minus == 0.0


def test_ccdf():
    x, p = lid_ccdf([0.5, -1.0, 0.5, 2.0])
    assert x.tolist() == [-1.0, 0.5, 2.0] and p.tolist() == [100.0, 75.0, 25.0]


# ---------------------------------------------------------------------------------------------- memory paths


@pytest.mark.parametrize("chunk", [1, 3, 64])
def test_chunked_equals_unchunked(chunk):
    rng = np.random.default_rng(2)
    L = rng.normal(scale=4, size=(37, 11))
    L[5, 3] = np.inf
    L[6, 0] = -np.inf
    ti = rng.integers(0, 11, size=37)
    ti[5] = 3
    assert np.array_equal(lid(L, ti, chunk_rows=chunk), lid(L, ti))
    assert np.array_equal(softmax_posteriors(L, chunk_rows=chunk), softmax_posteriors(L))
    assert np.array_equal(znorm_rows(L[7:], chunk_rows=chunk), znorm_rows(L[7:]))


def test_dask_equals_numpy():
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(3)
    L = rng.normal(scale=4, size=(45, 13))
    ti = rng.integers(0, 13, size=45)
    D = da.from_array(L, chunks=(10, 5))
    assert np.array_equal(lid(D, ti, chunk_rows=7), lid(L, ti))
    assert np.array_equal(znorm_rows(D), znorm_rows(L))
    dev = rng.normal(size=(40, 13))
    dev[np.arange(40), np.arange(40) % 13] += 1.0
    a = lid_pipeline(da.from_array(dev, chunks=(9, 13)), D, np.arange(40) % 13, ti, chunk_rows=6)
    b = lid_pipeline(dev, L, np.arange(40) % 13, ti)
    assert np.array_equal(a.lid, b.lid) and np.array_equal(a.slope, b.slope)


# ---------------------------------------------------------------------------------------------- pipeline


def synthetic(seed, n=120, N=12, gap=1.2):
    rng = np.random.default_rng(seed)
    ti = np.arange(n) % N
    S = rng.normal(size=(n, N))
    S[np.arange(n), ti] += gap
    return S, ti


def oracle_tar_non(S, ti, rows, cols, strict=False):
    """Training trials by hand; ``strict``: z-normalise each row over ``cols`` (plus its true column) only."""
    tar, non = [], []
    for i in rows:
        row = np.asarray(S[i], dtype=float)
        ref = row[sorted(set(cols) | {ti[i]})] if strict else row
        z = (row - ref.mean()) / ref.std(ddof=1)
        for j in range(len(row)):
            if j == ti[i]:
                tar.append(z[j])
            elif j in cols:
                non.append(z[j])
    return np.array(tar), np.array(non)


def test_pipeline_with_dev_set():
    D, dti = synthetic(0)
    E, eti = synthetic(1)
    r = lid_pipeline(D, E, dti, eti)
    tar, non = oracle_tar_non(D, dti, range(len(D)), set(range(D.shape[1])))
    cal = LogisticCalibrator().fit(tar, non)
    assert r.slope[0] == pytest.approx(cal.slope_, rel=1e-9)
    assert r.intercept[0] == pytest.approx(cal.intercept_, rel=1e-9, abs=1e-12)
    expect = lid(cal.slope_ * znorm_rows(E) + cal.intercept_, eti)
    assert np.allclose(r.lid, expect, atol=1e-12)
    assert np.allclose(r.p_true, 2.0 ** r.lid / E.shape[1])
    assert r.mode == "dev" and r.fold is None and r.n_folds == 1 and "development" in r.calibration
    assert r.summary.alid > 0 and r.regularization is None


def test_pipeline_cross_fit_never_trains_on_own_speaker():
    E, eti = synthetic(2, n=150, N=15)
    r = lid_pipeline(None, E, None, eti, n_folds=4)
    assert r.mode == "cross-fit" and r.n_folds == 4 and "cross-fitting" in r.calibration
    # every speaker in exactly one fold, all probes of one speaker in the same fold
    for s in np.unique(eti):
        assert len(set(r.fold[eti == s].tolist())) == 1
    z = znorm_rows(E)
    for f in range(4):
        held = set(np.unique(eti[r.fold == f]).tolist())
        rows = [i for i in range(len(E)) if eti[i] not in held]
        cols = set(range(E.shape[1])) - held
        tar, non = oracle_tar_non(E, eti, rows, cols)
        cal = LogisticCalibrator().fit(tar, non)
        assert r.slope[f] == pytest.approx(cal.slope_, rel=1e-9)
        idx = np.flatnonzero(r.fold == f)
        assert np.allclose(r.lid[idx], lid(cal.slope_ * z[idx] + cal.intercept_, eti[idx]), atol=1e-12)


def test_cross_fit_held_out_scores_do_not_move_their_calibration():
    E, eti = synthetic(3, n=100, N=10)
    r = lid_pipeline(None, E, None, eti, n_folds=5)
    f = int(r.fold[0])
    E2 = E.copy()
    held = np.flatnonzero(r.fold == f)
    E2[held] *= 7.0  # change only the held-out probes of fold f ...
    E2[held, eti[held]] = E[held, eti[held]]  # ... but not their target scores, which place speakers in folds
    r2 = lid_pipeline(None, E2, None, eti, n_folds=5)
    np.testing.assert_array_equal(r2.fold, r.fold)
    assert r2.slope[f] == r.slope[f]


def test_cross_fit_folds_do_not_depend_on_names_or_order():
    # issue 28: renaming one speaker moved the ALID (1.007 -> 0.931 bits), the folds following the sorted ids
    E, eti = synthetic(4, n=120, N=12)
    ids = np.array([f"spk{c:02d}" for c in range(12)])
    r = lid_pipeline(None, E, None, eti, n_folds=3, speaker_ids=ids)
    renamed = ids.copy()
    renamed[eti[0]] = "zzz-renamed"
    r2 = lid_pipeline(None, E, None, eti, n_folds=3, speaker_ids=renamed)
    np.testing.assert_array_equal(r2.fold, r.fold)
    assert r2.summary.alid == r.summary.alid
    # columns and rows permuted (ids follow their columns): the same fold per probe, the same ALID
    rng = np.random.default_rng(1)
    cp, rp = rng.permutation(12), rng.permutation(len(E))
    inv = np.argsort(cp)
    r3 = lid_pipeline(None, E[rp][:, cp], None, inv[eti[rp]], n_folds=3, speaker_ids=ids[cp])
    np.testing.assert_array_equal(r3.fold, r.fold[rp])
    assert r3.summary.alid == pytest.approx(r.summary.alid, abs=1e-12)


def test_cross_fit_default_znorm_sees_held_out_columns_strict_does_not():
    E, eti = synthetic(5, n=100, N=10)
    r = lid_pipeline(None, E, None, eti, n_folds=5)
    s = lid_pipeline(None, E, None, eti, n_folds=5, strict_znorm=True)
    assert not r.strict_znorm and s.strict_znorm and r.to_dict()["strict_znorm"] is False
    assert "still enter" in r.calibration and "strict" in s.calibration
    assert np.array_equal(r.fold, s.fold)
    f = int(r.fold[0])
    held = np.unique(eti[r.fold == f])
    # change only the training rows' scores against the held-out fold's enrolled speakers
    E2 = E.copy()
    train_rows = r.fold != f
    E2[np.ix_(train_rows, held)] += np.random.default_rng(9).normal(scale=3.0, size=(train_rows.sum(), held.size))
    r2 = lid_pipeline(None, E2, None, eti, n_folds=5)
    s2 = lid_pipeline(None, E2, None, eti, n_folds=5, strict_znorm=True)
    assert abs(r2.slope[f] - r.slope[f]) > 1e-3  # default: they move fold f's calibration through the z-norm
    assert s2.slope[f] == pytest.approx(s.slope[f], rel=1e-12)  # strict: they do not
    # strict slopes against the hand-built trials: rows z-normalised over the training folds' columns
    for g in range(5):
        hg = set(np.unique(eti[s.fold == g]).tolist())
        rows = [i for i in range(len(E)) if eti[i] not in hg]
        cols = set(range(E.shape[1])) - hg
        cal = LogisticCalibrator().fit(*oracle_tar_non(E, eti, rows, cols, strict=True))
        assert s.slope[g] == pytest.approx(cal.slope_, rel=1e-9)
        assert s.intercept[g] == pytest.approx(cal.intercept_, rel=1e-9, abs=1e-12)
        # evaluation rows keep the full z-norm over all N columns
        idx = np.flatnonzero(s.fold == g)
        assert np.allclose(s.lid[idx], lid(cal.slope_ * znorm_rows(E)[idx] + cal.intercept_, eti[idx]), atol=1e-12)
    # chunked equals unchunked; with a development matrix the option is moot
    assert np.array_equal(lid_pipeline(None, E, None, eti, n_folds=5, strict_znorm=True, chunk_rows=7).slope,
                          s.slope)
    D, dti = synthetic(6)
    assert not lid_pipeline(D, E, dti, eti, strict_znorm=True).strict_znorm


def test_cross_fit_invariant_to_speaker_order_given_ids():
    E, eti = synthetic(4, n=90, N=9)
    ids = np.array([f"spk{j}" for j in range(9)])
    perm = np.random.default_rng(0).permutation(9)
    inv = np.argsort(perm)
    rows = np.random.default_rng(1).permutation(90)
    a = lid_pipeline(None, E, None, eti, speaker_ids=ids, n_folds=3)
    b = lid_pipeline(None, E[rows][:, perm], None, inv[eti[rows]], speaker_ids=ids[perm], n_folds=3)
    assert np.allclose(b.lid, a.lid[rows], atol=1e-12)
    assert np.allclose(np.sort(a.slope), np.sort(b.slope), rtol=1e-9)


def test_pipeline_separable_error_and_regularize():
    E, eti = synthetic(5, gap=12.0)
    with pytest.raises(SeparableScoresError, match="separable='regularize'"):
        lid_pipeline(None, E, None, eti)
    with pytest.raises(SeparableScoresError, match="development matrix"):
        lid_pipeline(E, E, eti, eti)
    r = lid_pipeline(None, E, None, eti, separable="regularize", regularization=1e-2)
    assert r.regularized.all() and r.regularization == 1e-2 and "regularised" in r.calibration
    assert np.isfinite(r.slope).all() and (r.slope > 0).all()
    assert (r.lid <= math.log2(E.shape[1])).all() and r.summary.alid > 0
    weaker = lid_pipeline(None, E, None, eti, separable="regularize", regularization=1e-4)
    assert (weaker.slope > r.slope).all()  # a smaller penalty, a steeper slope
    # non-separable data is never regularised even when allowed
    E2, eti2 = synthetic(6)
    r2 = lid_pipeline(None, E2, None, eti2, separable="regularize")
    assert not r2.regularized.any() and r2.regularization is None


@pytest.mark.parametrize("chunk", [1, 5])
def test_pipeline_chunked_equals_unchunked(chunk):
    E, eti = synthetic(7, n=60, N=8)
    a = lid_pipeline(None, E, None, eti, chunk_rows=chunk)
    b = lid_pipeline(None, E, None, eti)
    assert np.array_equal(a.lid, b.lid) and np.array_equal(a.slope, b.slope)


def test_pipeline_option_errors():
    E, eti = synthetic(8, n=30, N=5)
    with pytest.raises(VpevalError, match="separable"):
        lid_pipeline(None, E, None, eti, separable="cap")
    with pytest.raises(VpevalError, match="regularization"):
        lid_pipeline(None, E, None, eti, regularization=0.0)
    with pytest.raises(VpevalError, match="eval_true_index"):
        lid_pipeline(None, E)
    with pytest.raises(VpevalError, match="dev_true_index"):
        lid_pipeline(E, E, None, eti)
    with pytest.raises(VpevalError, match="at least 2 distinct speakers"):
        lid_pipeline(None, E, None, np.zeros(30, dtype=int))
    with pytest.raises(VpevalError, match="n_folds"):
        lid_pipeline(None, E, None, eti, n_folds=1)
    with pytest.raises(VpevalError, match="speaker_ids"):
        lid_pipeline(None, E, None, eti, speaker_ids=["a"])


def test_linkage_analysis_bundles_everything():
    E, eti = synthetic(9, n=80, N=10, gap=2.0)
    res = linkage_analysis(E, eti, ks=(1, 5))
    d = res.to_dict()
    assert set(d) == {"lid", "identification", "closed_set_linkability"}
    assert res.identification.rates[1] == res.closed_set.linkability[-1]
    assert res.identification.rates[1] > 0.3 and res.lid.summary.alid > 0.5


def careful_lid(L, ti):
    """Python log-sum-exp around the row maximum (the textbook form)."""
    out = []
    for row, t in zip(np.asarray(L, dtype=float).tolist(), ti):
        m = max(row)
        lse = m + math.log(sum(math.exp(v - m) for v in row))
        out.append(math.log2(len(row)) + (row[t] - lse) / math.log(2))
    return np.array(out)


def test_fast_and_fallback_paths_agree_with_textbook():
    rng = np.random.default_rng(12)
    n, N = 60, 9
    L = rng.normal(scale=400.0, size=(n, N))  # many rows have an LLR > 709 nats above the true one
    ti = rng.integers(0, N, size=n)
    L[0, :] = -np.inf
    L[0, ti[0]] = 3.0  # others impossible: LID = log2 N
    L[1, (ti[1] + 1) % N] = -np.inf
    v = lid(L, ti)
    ok = np.ones(n, bool)
    ok[0] = False
    assert np.allclose(v[ok], careful_lid(L[ok], ti[ok]), atol=1e-9, rtol=1e-12)
    assert v[0] == math.log2(N)
    assert np.array_equal(lid(L, ti, chunk_rows=4), v)


def test_lid_can_return_rank_counts_of_the_same_scan():
    from vpeval.metrics.identification import cmc, rank_counts

    rng = np.random.default_rng(13)
    L = rng.integers(-2, 3, size=(40, 7)).astype(float)
    L[3, 2] = np.inf
    L[4, :] = -np.inf
    L[4, 1] = 0.0
    ti = rng.integers(0, 7, size=40)
    ti[4] = 1
    v, counts = lid(L, ti, return_rank_counts=True, chunk_rows=6)
    ref = rank_counts(L, ti)
    assert np.array_equal(v, lid(L, ti))
    assert np.array_equal(counts.n_greater, ref.n_greater) and np.array_equal(counts.n_tied, ref.n_tied)
    assert np.array_equal(cmc(counts, None), cmc(L, ti))


def test_pipeline_rank_counts_are_raw_score_ranks():
    from vpeval.metrics.identification import rank_counts

    E, eti = synthetic(14, n=50, N=7)
    E = np.round(E, 1)  # ties
    r = lid_pipeline(None, E, None, eti, n_folds=3, chunk_rows=8)
    ref = rank_counts(E, eti)
    assert np.array_equal(r.rank_counts.n_greater, ref.n_greater)
    assert np.array_equal(r.rank_counts.n_tied, ref.n_tied)


@pytest.mark.parametrize("n_eval,n_distractors", [(5, 7), (3, 0)])
def test_report_text_takes_speaker_counts_from_the_data(n_eval, n_distractors):
    """The linkage section names the numbers of evaluation speakers and distractors of the data it shows."""
    from vpeval.report.linkage import linkage_section

    rng = np.random.default_rng(n_eval)
    N = n_eval + n_distractors
    true_index = np.repeat(np.arange(n_eval), 6)
    scores = rng.normal(size=(true_index.size, N))
    scores[np.arange(true_index.size), true_index] += 1.0
    res = linkage_analysis(scores, true_index, speaker_ids=np.array([f"s{i}" for i in range(N)]),
                           separable="regularize")
    assert res.n_probe_speakers == n_eval
    text = linkage_section({"anonymized": res}).blocks[0].text
    assert f"N = {N}: the {n_eval} evaluation speakers the probes come from and {n_distractors} distractor" in text
    assert "10" not in text


def test_cross_fitting_with_two_speakers_and_no_distractor_says_what_is_missing():
    """Two enrolled speakers: holding one out leaves each training probe only its own column (no non-target)."""
    from vpeval.errors import InvalidScoresError
    from vpeval.metrics.linkage import lid_pipeline

    s = np.array([[1.0, 0.2], [0.1, 0.9], [0.8, 0.3], [0.2, 0.7]])
    with pytest.raises(InvalidScoresError, match="enroll at least 3 speakers .distractors count. or give a development"):
        lid_pipeline(None, s, eval_true_index=np.array([0, 1, 0, 1]))
    # one distractor column is enough
    s3 = np.c_[s, [0.0, 0.1, 0.2, 0.3]]
    assert np.isfinite(lid_pipeline(None, s3, eval_true_index=np.array([0, 1, 0, 1]), separable="regularize").lid).all()


def test_cli_errors_name_the_table_and_the_trial_not_the_argument(tmp_path):
    """`eval_scores: ... row 0` named the library's argument; the CLI names the file and the probe (issue 28)."""
    from typer.testing import CliRunner

    from vpeval.cli.main import app

    rng = np.random.default_rng(1)
    rows = ["enroll_spk,trial_spk,trial_id,score"]
    for s in "ABCD":
        for j in range(3):
            rows += [f"{e},{s},{s}{j},{0.5 if (s, j) == ('B', 1) else round(float(rng.random()), 3)}" for e in "ABCD"]
    table = tmp_path / "lt.csv"
    table.write_text("\n".join(rows) + "\n")
    r = CliRunner().invoke(app, ["linkage", str(table), "--no-verdict", "--folds", "2"])
    assert r.exit_code == 2
    assert f"{table}: 1 probe row(s) have the same score for every speaker" in r.output and "(trial B1)" in r.output
    assert "eval_scores" not in r.output


def test_report_section_leaves_out_what_gamma_gives_and_it_comes_back_exactly():
    """Schema 2.3: a linkage section stores no CMC and no closed-set linkability; both follow from gamma."""
    import json

    from vpeval.report.linkage import linkage_condition_arrays, linkage_section
    from vpeval.report.writer import _jsonable

    E, eti = synthetic(9, n=80, N=10, gap=2.0)
    res = linkage_analysis(E, eti, ks=(1, 5))
    sec = linkage_section({"oa": res})
    cond = json.loads(json.dumps(_jsonable(sec.data)))["conditions"]["oa"]
    assert "cmc" not in cond["identification"] and "closed_set_linkability" not in cond
    back = linkage_condition_arrays(cond)
    assert back["cmc"] == res.identification.cmc.tolist()
    assert back["closed_set_linkability"] == res.closed_set.to_dict()


def test_an_error_about_the_one_input_names_it(tmp_path):
    """A library error on the only table (cross-fitting with probes of one speaker) names the file (a breaker
    found it named none)."""
    from typer.testing import CliRunner

    from vpeval.cli.main import app

    f = tmp_path / "one.csv"
    f.write_text("enroll_spk,trial_spk,trial_id,score\na,a,p1,0.9\nb,a,p1,0.1\na,a,p2,0.8\nb,a,p2,0.3\n")
    res = CliRunner().invoke(app, ["linkage", str(f)])
    assert res.exit_code == 2 and f"{f}: cross-fitting needs probes of at least 2" in " ".join(res.output.split())
