import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import shuffled
from vpeval import LogisticCalibrator, PAVCalibrator, pav_llr
from vpeval.calibration import NotFittedError
from vpeval.errors import InvalidScoresError, SeparableScoresError


@pytest.mark.parametrize("laplace", [False, True])
def test_pav_calibrator_matches_pav_llr_on_training_scores(laplace):
    rng = np.random.default_rng(3)
    tar = np.round(rng.normal(1, 1, 60), 1)
    non = np.round(rng.normal(0, 1, 90), 1)
    cal = PAVCalibrator(laplace=laplace).fit(tar, non)
    t, n = pav_llr(tar, non, laplace=laplace)
    np.testing.assert_array_equal(cal.transform(tar), t)
    np.testing.assert_array_equal(cal.transform(non), n)
    assert np.all(np.diff(cal.llr_) > 0)


def test_pav_calibrator_extrapolation_and_gaps():
    cal = PAVCalibrator(laplace=True).fit([0.6, 0.7, 0.8], [0.1, 0.2, 0.3])
    ln4 = math.log(4)
    np.testing.assert_allclose(cal.transform([-100, 0.1, 0.45, 0.6, 0.65, 1e9]), [-ln4, -ln4, -ln4, ln4, ln4, ln4])


def test_not_fitted():
    with pytest.raises(NotFittedError):
        PAVCalibrator().transform([1.0])


def test_logistic_separable_raises():
    with pytest.raises(SeparableScoresError, match="separable"):
        LogisticCalibrator().fit([1, 2], [-2, -1])
    # quasi-separation (touching at one value) has no finite optimum either
    with pytest.raises(SeparableScoresError):
        LogisticCalibrator().fit([1, 2], [-2, 1])
    # only when asked: a named regulariser gives a finite fit
    cal = LogisticCalibrator(regularization=0.01).fit([1, 2], [-2, -1])
    assert math.isfinite(cal.slope_) and cal.slope_ > 0


def test_logistic_matches_closed_form_gaussian_case():
    # Equal-variance Gaussians: the true LLR is affine with slope d/sigma^2 and intercept -d(mu_t+mu_n)/(2 s^2)
    rng = np.random.default_rng(7)
    tar = rng.normal(2.0, 1.0, 200_000)
    non = rng.normal(0.0, 1.0, 300_000)
    cal = LogisticCalibrator().fit(tar, non)
    assert cal.slope_ == pytest.approx(2.0, abs=0.03)
    assert cal.intercept_ == pytest.approx(-2.0, abs=0.03)


def test_logistic_prior_weighting_changes_little_for_well_specified_model():
    rng = np.random.default_rng(8)
    tar, non = rng.normal(1, 1, 50_000), rng.normal(-1, 1, 50_000)
    a = LogisticCalibrator().fit(tar, non)
    b = LogisticCalibrator(p_target=0.01).fit(tar, non)
    assert a.slope_ == pytest.approx(b.slope_, abs=0.05)
    with pytest.raises(InvalidScoresError):
        LogisticCalibrator(p_target=1.5).fit(tar, non)
    with pytest.raises(InvalidScoresError):
        LogisticCalibrator().fit([np.inf, 1.0], [0.0, 2.0])


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(-20, 20), min_size=2, max_size=30), st.lists(st.integers(-20, 20), min_size=2, max_size=30),
       st.randoms(use_true_random=False))
def test_logistic_order_invariant(tar, non, rnd):
    try:
        a = LogisticCalibrator().fit(tar, non)
    except (SeparableScoresError, InvalidScoresError):  # separable, or all scores equal
        return
    t2, n2 = shuffled(rnd, tar, non)
    b = LogisticCalibrator().fit(t2, n2)
    assert a.slope_ == pytest.approx(b.slope_, rel=1e-6, abs=1e-8)
    assert a.intercept_ == pytest.approx(b.intercept_, rel=1e-6, abs=1e-8)


def test_logistic_all_tied_is_not_separable():
    with pytest.raises(InvalidScoresError, match="not identifiable"):
        LogisticCalibrator().fit([1, 1], [1, 1])


def test_logistic_extreme_scale():
    rng = np.random.default_rng(0)
    t, n = rng.normal(1, 1, 100), rng.normal(-1, 1, 100)
    a = LogisticCalibrator().fit(t, n)
    b = LogisticCalibrator().fit(t * 1e300, n * 1e300)
    assert b.slope_ * 1e300 == pytest.approx(a.slope_, rel=1e-9)
    assert b.intercept_ == pytest.approx(a.intercept_, rel=1e-9)


def test_logistic_fit_of_a_million_scores_starts_at_a_sample_fit(monkeypatch):
    """From 2**20 training scores the Newton iterations start at the fit of an evenly spaced sample of each
    sorted class: fewer passes over all the scores (3 or 4 instead of 8), the same fit to rounding."""
    import vpeval.calibration.logistic as L

    rng = np.random.default_rng(9)
    tar, non = rng.normal(1.5, 1.2, 300_000), rng.normal(-0.5, 1.0, 800_000)
    full_passes = []
    objective = L._objective

    def counted(zt, zn, *a):
        evaluate = objective(zt, zn, *a)
        if zt.size + zn.size == tar.size + non.size:  # a pass over all the scores
            return lambda th: full_passes.append(1) or evaluate(th)
        return evaluate

    monkeypatch.setattr(L, "_objective", counted)
    warm = L.LogisticCalibrator().fit(tar, non)
    n_warm = len(full_passes)
    monkeypatch.setattr(L, "_WARM_START_TRIALS", 10 ** 12)
    full_passes.clear()
    cold = L.LogisticCalibrator().fit(tar, non)
    assert warm.converged_ and cold.converged_ and n_warm <= 4 < len(full_passes)
    assert warm.slope_ == pytest.approx(cold.slope_, rel=1e-12)
    assert warm.intercept_ == pytest.approx(cold.intercept_, rel=1e-12, abs=1e-14)
