"""lid_pipeline's one-scan calibration (moment histograms, Newton on the bins) against slow oracles."""

from __future__ import annotations

import math

import dask.array as da
import numpy as np
import pytest

import vpeval.metrics.linkage.binned_fit as binned_fit
import vpeval.metrics.linkage.histogram as histogram
import vpeval.metrics.linkage.pipeline as pipeline
from helpers import count_calls
from oracles import logistic_llr_fit
from vpeval.errors import SeparableScoresError
from vpeval.metrics.linkage import lid, lid_pipeline, znorm_rows


def _matrix(seed, n, N, gap=1.5):
    rng = np.random.default_rng(seed)
    ti = rng.integers(0, N, n)
    ti[:N] = np.arange(min(n, N))  # most speakers present
    S = rng.normal(size=(n, N))
    S[np.arange(n), ti] += gap
    return S, ti


def _trials(S, ti, rows, cols):
    """Training trials of rows ``rows``: z over all columns; targets the true column, non-targets ``cols``."""
    z = znorm_rows(S)
    tar = z[rows, ti[rows]]
    keep = np.zeros(S.shape, bool)
    keep[np.ix_(rows, cols)] = True
    keep[np.arange(S.shape[0]), ti] = False
    return tar, z[keep]


def _check_against_oracle(S, ti, r, regularization=None):
    for f in range(r.n_folds):
        held = np.unique(ti[r.fold == f])
        rows = np.flatnonzero(r.fold != f)
        cols = np.setdiff1d(np.arange(S.shape[1]), held)
        w, b = logistic_llr_fit(*_trials(S, ti, rows, cols), regularization=regularization)
        assert r.slope[f] == pytest.approx(w, rel=1e-9), f
        assert r.intercept[f] == pytest.approx(b, rel=1e-9, abs=1e-11), f


def _with_legacy(fn):
    old = pipeline._HISTOGRAM_FIT
    pipeline._HISTOGRAM_FIT = False
    try:
        return fn()
    finally:
        pipeline._HISTOGRAM_FIT = old


@pytest.mark.parametrize("seed,n,N,gap", [(0, 60, 8, 1.0), (1, 300, 37, 2.0), (2, 150, 400, 3.0), (3, 500, 20, 0.3)])
def test_parameters_equal_the_full_data_fit(seed, n, N, gap):
    S, ti = _matrix(seed, n, N, gap)
    r = lid_pipeline(None, S, None, ti, n_folds=5)
    _check_against_oracle(S, ti, r)
    # and the whole result equals the former streaming fit (to the 1e-11 the bins are held to)
    old = _with_legacy(lambda: lid_pipeline(None, S, None, ti, n_folds=5))
    assert np.allclose(r.slope, old.slope, rtol=1e-11, atol=0)
    assert np.allclose(r.lid, old.lid, rtol=1e-11, atol=1e-11)
    assert np.array_equal(r.fold, old.fold)


def test_ties_and_extreme_z_ranges():
    S, ti = _matrix(4, 240, 30)
    S = np.round(S, 1)  # many ties, many z-scores in one bin
    S[5] *= 1e300  # scale of a row does not matter
    S[6] *= 1e-300
    S[7, (ti[7] + 1) % 30] = 1e6  # one huge non-target: z near sqrt(N), the rest of the row in a narrow band
    S[8, ti[8]] = -1e6  # a target far below
    r = lid_pipeline(None, S, None, ti, n_folds=4)
    _check_against_oracle(S, ti, r)
    old = _with_legacy(lambda: lid_pipeline(None, S, None, ti, n_folds=4))
    assert np.allclose(r.lid, old.lid, rtol=1e-11, atol=1e-11)


def test_dev_mode_and_regularized_fits():
    D, dti = _matrix(5, 200, 25)
    E, eti = _matrix(6, 100, 25)
    r = lid_pipeline(D, E, dti, eti)
    w, b = logistic_llr_fit(*_trials(D, dti, np.arange(200), np.arange(25)))
    assert r.slope[0] == pytest.approx(w, rel=1e-9) and r.intercept[0] == pytest.approx(b, rel=1e-9)
    # separable training data: regularised fits (steep slopes), still equal to the oracle
    S, ti = _matrix(7, 200, 15, gap=12.0)
    with pytest.raises(SeparableScoresError, match="targets in"):
        lid_pipeline(None, S, None, ti, n_folds=3)
    r = lid_pipeline(None, S, None, ti, n_folds=3, separable="regularize", regularization=1e-2)
    assert r.regularized.all()
    _check_against_oracle(S, ti, r, regularization=1e-2)


@pytest.fixture
def exact_fits(monkeypatch):
    """The calls to the exact logistic fit (pipeline._fit_calibration) while the test runs, one entry a call."""
    return count_calls(monkeypatch, pipeline, "_fit_calibration")


def test_steep_slopes_fall_back_to_the_exact_fit(monkeypatch, exact_fits):
    """A slope so steep that the bins' Taylor bound fails (or a tolerance of 0) runs the exact fit."""
    calls = exact_fits
    S, ti = _matrix(8, 200, 15, gap=12.0)
    r = lid_pipeline(None, S, None, ti, n_folds=3, separable="regularize", regularization=1e-7)
    _check_against_oracle(S, ti, r, regularization=1e-7)
    n_steep = len(calls)
    monkeypatch.setattr(binned_fit, "_BINNED_TOL", 0.0)
    calls.clear()
    S2, ti2 = _matrix(9, 100, 12)
    r2 = lid_pipeline(None, S2, None, ti2, n_folds=3)
    assert len(calls) == 3  # every fold fell back
    _check_against_oracle(S2, ti2, r2)
    monkeypatch.setattr(binned_fit, "_BINNED_TOL", 1e-11)
    calls.clear()
    lid_pipeline(None, S2, None, ti2, n_folds=3)
    assert calls == []  # ordinary slopes never need it
    assert n_steep == 3  # tiny penalty on separable data: flat Hessian, the bound fails


def _same_row_values(values, target_value, n, N):
    """Every row holds the same scores (so the same z-scores); the true column gets ``target_value``."""
    rng = np.random.default_rng(n)
    ti = np.arange(n) % N
    rest = list(values)
    rest.remove(target_value)
    S = np.empty((n, N))
    for i in range(n):
        S[i, ti[i]] = target_value
        others = [j for j in range(N) if j != ti[i]]
        S[i, others] = rng.permutation(rest)
    return S, ti


def test_separability_decided_exactly_when_extremes_share_a_bin(exact_fits):
    """Target and non-target extremes within one bin width: the exact fit decides (and names the ranges)."""
    calls = exact_fits
    eps = 1e-9  # far below a bin width: both values fall in one bin
    values = [0.0, 1.0, 2.5, 3.0, 3.0 + eps, -1.0]
    # targets just above every non-target: separable
    S, ti = _same_row_values(values, 3.0 + eps, 60, 6)
    with pytest.raises(SeparableScoresError, match="targets in"):
        lid_pipeline(None, S, None, ti, n_folds=2)
    assert calls
    # targets just below the largest non-target: not separable, fitted exactly
    calls.clear()
    S, ti = _same_row_values(values, 3.0, 60, 6)
    S[:, :] += np.random.default_rng(0).normal(scale=1e-3, size=S.shape) * (S < 2.9)  # not all rows identical
    r = lid_pipeline(None, S, None, ti, n_folds=2)
    assert len(calls) == 2 and not r.regularized.any()
    _check_against_oracle(S, ti, r)


def test_row_order_and_piece_invariance(monkeypatch):
    S, ti = _matrix(11, 180, 16)
    S = np.round(S, 1)  # few distinct z-scores: many per bin, so the sums depend on their order
    ids = [f"s{j:02d}" for j in range(16)]
    r = lid_pipeline(None, S, None, ti, n_folds=4, speaker_ids=ids)
    perm = np.random.default_rng(3).permutation(180)
    p = lid_pipeline(None, S[perm], None, ti[perm], n_folds=4, speaker_ids=ids)
    assert np.allclose(p.slope, r.slope, rtol=1e-12) and np.allclose(p.lid, r.lid[perm], atol=1e-12)
    # small canonical chunks: pieces of a dask array (7 rows) cut them, the caller completes them: identical
    monkeypatch.setattr(histogram, "_canonical_rows", lambda n_cols: 10)
    a = lid_pipeline(None, S, None, ti, n_folds=4, speaker_ids=ids)
    b = lid_pipeline(None, da.from_array(S, chunks=(7, -1)), None, ti, n_folds=4, speaker_ids=ids)
    c = lid_pipeline(None, S, None, ti, n_folds=4, speaker_ids=ids, chunk_rows=3)
    for x in (b, c):
        assert np.array_equal(x.slope, a.slope) and np.array_equal(x.intercept, a.intercept)
        assert np.array_equal(x.lid, a.lid)
    assert np.allclose(a.slope, r.slope, rtol=1e-12)


@pytest.mark.parametrize("alpha", [0.5, 4.0, 40.0])
def test_bin_series_within_the_stated_bound(alpha):
    """The per-bin Taylor sums of sigmoid(alpha z + beta) z**m against direct sums, within the remainder."""
    rng = np.random.default_rng(int(alpha * 10))
    z = np.concatenate([rng.normal(size=(1, 20000)), rng.normal(3, 1, size=(1, 20000))], axis=1)
    beta = -1.3
    k_lo, hist, _, _ = histogram._bin_chunk(z, np.array([0]), np.array([0]), np.zeros(z.shape[1], np.int64), 1, 1)
    z = znorm_rows(z)  # the scores it binned
    mom = hist.sum(axis=1)  # the target group holds one score: add it back, all scores together
    h = histogram._BIN_WIDTH
    centre = h * (k_lo + np.arange(mom.shape[1]) + 0.5)
    M = histogram._N_MOMENTS
    D = binned_fit._sigmoid_derivatives(alpha * centre + beta, M)
    e = abs(alpha) * h / 2
    for m in (0, 1):
        series = sum(
            float(np.dot(D[j], sum(math.comb(m, l) * centre ** (m - l) * h**l * mom[j + l] for l in range(m + 1))))
            * (alpha * h) ** j / math.factorial(j)
            for j in range(M - m)
        )
        direct = float(np.sum(1 / (1 + np.exp(-(alpha * z + beta))) * z**m))
        # the per-bin bound of _fit_binned: K (s t)(centre) exp(e) e**k / k! times sum over the bin of |z|**m
        eta = alpha * centre + beta
        st = 1 / (1 + np.exp(-eta)) / (1 + np.exp(eta)) * math.exp(e)
        bound = binned_fit._sigmoid_ratio_sup(M - m) * e ** (M - m) / math.factorial(M - m) * float(
            np.dot(st, mom[0] * (np.abs(centre) + h / 2) ** m))
        assert abs(series - direct) <= bound + 1e-14 * float(np.sum(np.abs(z) ** m))  # + rounding of the sums
        # and one order fewer is visibly worse for steep slopes (the moments are used)
        if alpha >= 40:
            coarse = sum(
                float(np.dot(D[j], mom[j] if m == 0 else centre * mom[j] + h * mom[j + 1])) * (alpha * h) ** j
                / math.factorial(j) for j in range(1))
            assert abs(coarse - direct) > 100 * abs(series - direct)


def test_lid_uses_each_folds_calibration():
    S, ti = _matrix(12, 120, 10)
    r = lid_pipeline(None, S, None, ti, n_folds=3)
    z = znorm_rows(S)
    for f in range(3):
        idx = np.flatnonzero(r.fold == f)
        assert np.allclose(r.lid[idx], lid(r.slope[f] * z[idx] + r.intercept[f], ti[idx]), atol=1e-12)


def test_too_wide_a_z_range_streams_exactly(monkeypatch, exact_fits):
    """More bins than _MAX_BINS: no histogram is kept, every fold is fitted by the exact streaming passes."""
    calls = exact_fits
    S, ti = _matrix(13, 120, 12)
    ref = lid_pipeline(None, S, None, ti, n_folds=3)
    assert calls == []
    monkeypatch.setattr(histogram, "_MAX_BINS", 100)
    r = lid_pipeline(None, S, None, ti, n_folds=3)
    assert len(calls) == 3
    assert np.allclose(r.slope, ref.slope, rtol=1e-12)
    _check_against_oracle(S, ti, r)


def test_moment_histograms_do_not_depend_on_the_pieces(monkeypatch):
    """Sums are formed per canonical chunk (cut chunks completed by the caller) and added in row order: the
    histograms are bit-identical whatever pieces the matrix is scanned in."""
    monkeypatch.setattr(histogram, "_canonical_rows", lambda n_cols: 10)
    rng = np.random.default_rng(14)
    n, N = 60, 3000  # about 10 scores per bin and chunk: the order of the sums shows in the last bits
    S = rng.normal(size=(n, N))
    ti = rng.integers(0, N, n)
    rg, cg = np.zeros(n, np.int64), np.zeros(N, np.int64)
    ref = histogram._moment_histogram(S, ti, n, N, 10, rg, cg, 1, 1, "S")
    for arr, rows in ((da.from_array(S, chunks=(7, -1)), 10), (da.from_array(S, chunks=(13, -1)), 4)):
        got = histogram._moment_histogram(arr, ti, n, N, rows, rg, cg, 1, 1, "S")
        assert got.k_lo == ref.k_lo and np.array_equal(got.hist, ref.hist)
        assert np.array_equal(got.t_lo, ref.t_lo) and np.array_equal(got.t_hi, ref.t_hi)
    # the same scores summed piece by piece (not per chunk) differ in the last bits: the test can tell
    pieces = histogram._MomentHistogram(1, 1)
    for s in range(0, n, 7):
        pieces.add(histogram._bin_chunk(S[s : s + 7], ti[s : s + 7], rg[s : s + 7], cg, 1, 1))
    assert not np.array_equal(pieces.hist, ref.hist)
