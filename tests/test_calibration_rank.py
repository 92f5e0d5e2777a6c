"""Rank LLR (worst-case paper Eq. 35) and RankCalibrator."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpeval.calibration.rank import RankCalibrator, rank_eps_max, rank_llr, validate_gamma
from vpeval.errors import VpevalError


def _slow_rank_llr(gamma):
    n = len(gamma)
    out = []
    for g in gamma:
        if g == 0:
            out.append(-math.inf)
        elif g == 1:
            out.append(math.inf)
        else:
            out.append(math.log(g * (n - 1) / (1 - g)))
    return np.array(out)


gammas = st.lists(st.integers(0, 50), min_size=2, max_size=12).filter(lambda c: sum(c) > 0).map(
    lambda c: np.array(c, dtype=float) / sum(c)
)


def test_issue_example():
    llr = rank_llr([0.55, 0.25, 0.15, 0.05])
    np.testing.assert_allclose(llr, [1.299283, 0.0, -0.635989, -1.845827], atol=5e-7)
    assert rank_eps_max([0.55, 0.25, 0.15, 0.05]) == pytest.approx(1.845827, abs=5e-7)


@pytest.mark.parametrize("n", [2, 3, 7, 1000])
def test_uniform_gamma_gives_zero(n):
    np.testing.assert_allclose(rank_llr(np.full(n, 1.0 / n)), 0.0, atol=1e-12)


def test_zero_and_one_give_explicit_infinities_never_nan():
    llr = rank_llr([0.0, 1.0, 0.0])
    np.testing.assert_array_equal(llr, [-np.inf, np.inf, -np.inf])
    llr = rank_llr([0.0, 0.7, 0.3])
    assert llr[0] == -np.inf and np.all(np.isfinite(llr[1:]))
    assert rank_eps_max([1.0, 0.0]) == np.inf


@settings(max_examples=200, deadline=None)
@given(gammas)
def test_matches_slow_oracle_and_never_nan(g):
    llr = rank_llr(g)
    assert not np.any(np.isnan(llr))
    np.testing.assert_allclose(llr, _slow_rank_llr(g), rtol=1e-12, atol=1e-12)


@settings(max_examples=100, deadline=None)
@given(gammas, st.randoms(use_true_random=False))
def test_elementwise_permutation_equivariance_and_monotone(g, rnd):
    perm = list(range(g.size))
    rnd.shuffle(perm)
    np.testing.assert_array_equal(rank_llr(g[perm]), rank_llr(g)[perm])
    order = np.argsort(g, kind="stable")
    sorted_llr = rank_llr(g)[order]
    assert np.array_equal(np.sort(sorted_llr), sorted_llr)  # LLR non-decreasing in gamma_k


@pytest.mark.parametrize(
    "gamma, match",
    [
        ([1.0], "at least two"),
        ([[0.5, 0.5]], "1-D"),
        ([0.5, 0.6], "sum to 1"),
        ([1.2, -0.2], "negative"),
        ([0.5, np.nan], "non-finite"),
        (["a", "b"], "probabilities"),
    ],
)
def test_bad_gamma(gamma, match):
    with pytest.raises(VpevalError, match=match):
        rank_llr(gamma)
    with pytest.raises(VpevalError, match=match):
        validate_gamma(gamma)


def test_rank_calibrator_fit_histogram_and_transform():
    cal = RankCalibrator(n_speakers=5).fit([1, 1, 1, 2, 5, 1, 2, 2, 1, 1])
    np.testing.assert_allclose(cal.gamma_, [0.6, 0.3, 0.0, 0.0, 0.1])
    np.testing.assert_array_equal(cal.transform([3, 1, 5]), rank_llr(cal.gamma_)[[2, 0, 4]])
    assert cal.transform([3])[0] == -np.inf
    assert cal.name == "rank"


def test_rank_calibrator_from_gamma_and_order_invariance():
    g = [0.55, 0.25, 0.15, 0.05]
    cal = RankCalibrator.from_gamma(g)
    np.testing.assert_allclose(cal.transform([4, 3, 2, 1]), rank_llr(g)[::-1])
    ranks = [1, 2, 2, 3, 1, 4, 1]
    a = RankCalibrator(4).fit(ranks).gamma_
    b = RankCalibrator(4).fit(ranks[::-1]).gamma_
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "n, ranks, match",
    [
        (None, [1, 2], "needs n_speakers"),
        (1, [1], ">= 2"),
        (3, [0, 1], "integers 1..3"),
        (3, [1, 4], "integers 1..3"),
        (3, [1.5, 2], "integers 1..3"),
        (3, [], "non-empty"),
    ],
)
def test_rank_calibrator_errors(n, ranks, match):
    with pytest.raises(VpevalError, match=match):
        RankCalibrator(n).fit(ranks)


def test_rank_calibrator_unfitted():
    with pytest.raises(VpevalError, match="not fitted"):
        RankCalibrator(3).transform([1])


def test_rank_calibrator_from_scores_uses_rank_histogram_tie_rules():
    # probe 0: true speaker (col 0) best; probe 1: true speaker (col 2) tied with col 1 for the top
    scores = np.array([[0.9, 0.1, 0.2], [0.1, 0.5, 0.5]])
    frac = RankCalibrator.from_scores(scores, [0, 2])
    np.testing.assert_allclose(frac.gamma_, [0.75, 0.25, 0.0])
    opt = RankCalibrator.from_scores(scores, [0, 2], ties="optimistic")
    np.testing.assert_allclose(opt.gamma_, [1.0, 0.0, 0.0])
    pes = RankCalibrator.from_scores(scores, [0, 2], ties="pessimistic")
    np.testing.assert_allclose(pes.gamma_, [0.5, 0.5, 0.0])
    np.testing.assert_array_equal(pes.transform([1, 2, 3]), rank_llr([0.5, 0.5, 0.0]))
