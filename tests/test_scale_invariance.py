"""Results that are invariant under a positive rescaling of the scores stay so for every finite scale from
1e-300 to 1e300 (the scores are scaled before computing; no under/overflow may change the answer)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from vpeval.calibration.gaussian import GaussianCalibrator
from vpeval.calibration.student_t import StudentTCalibrator
from vpeval.metrics.linkage import znorm_rows
from vpeval.metrics.verification import act_dcf, linkability, min_dcf, operating_points
from vpeval.blocks import tie_blocks

# a scale 10**x, x anywhere in [-300, 300]
scales = st.floats(-300, 300, allow_nan=False).map(lambda x: 10.0 ** x)
seeds = st.integers(0, 2**32 - 1)


@settings(max_examples=60, deadline=None)
@given(seeds, scales)
def test_znorm_rows_is_scale_free(seed, c):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(3, 6)) * rng.uniform(0.5, 2.0)
    ref = znorm_rows(x)
    got = znorm_rows(x * c)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("c", [1e-300, 1e-200, 1e200, 1e300])
def test_znorm_rows_at_the_issue_scales(c):
    """1e-200 gave inf/NaN (squares underflow), 1e200 gave zeros (squares overflow)."""
    x = np.array([[0.8, 0.2, 0.1, 0.3], [3.0, -1.0, 2.0, 0.5]])
    np.testing.assert_allclose(znorm_rows(x * c), znorm_rows(x), rtol=1e-12, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(seeds, scales, st.booleans())
def test_gaussian_calibrator_is_scale_free(seed, c, shared):
    rng = np.random.default_rng(seed)
    tar, non = rng.normal(1.0, 2.0, 30), rng.normal(0.0, 1.0, 40)
    s = np.r_[tar, non, rng.normal(0.5, 3.0, 10)]
    ref = GaussianCalibrator(shared).fit(tar, non).transform(s)
    cal = GaussianCalibrator(shared).fit(tar * c, non * c)
    np.testing.assert_allclose(cal.transform(s * c), ref, rtol=1e-9, atol=1e-9)
    # the fitted parameters are in the caller's units
    assert cal.sigma_tar_ == pytest.approx(c * GaussianCalibrator(shared).fit(tar, non).sigma_tar_, rel=1e-12)


@settings(max_examples=12, deadline=None)
@given(seeds, scales)
def test_student_t_calibrator_is_scale_free(seed, c):
    """Up to the optimiser's tolerance (the standardised scores differ in the last bits between scales)."""
    rng = np.random.default_rng(seed)
    tar, non = rng.standard_t(5, 40) + 1.5, rng.standard_t(5, 50)
    s = np.r_[tar, non]
    ref = StudentTCalibrator().fit(tar, non).transform(s)
    got = StudentTCalibrator().fit(tar * c, non * c).transform(s * c)
    np.testing.assert_allclose(got, ref, rtol=1e-3, atol=2e-3)


@pytest.mark.parametrize("c", [1e-300, 1e-200, 1e200, 1e300])
def test_student_t_at_extreme_scales_does_not_blame_repeated_scores(c):
    rng = np.random.default_rng(3)
    tar, non = rng.normal(1, 1, 40), rng.normal(0, 1, 40)
    cal = StudentTCalibrator().fit(tar * c, non * c)  # used to raise "collapses onto repeated scores"
    assert np.isfinite(cal.transform(np.r_[tar, non] * c)).all()
    assert cal.scale_tar_ == pytest.approx(c * StudentTCalibrator().fit(tar, non).scale_tar_, rel=1e-3)


def _min_dcf_exact(tar, non, p, c_miss, c_fa) -> float:
    """Slow oracle: exact rational arithmetic over the tie-block operating points."""
    pmiss, pfa = operating_points(tie_blocks(np.asarray(tar, float), np.asarray(non, float)))
    a, b = Fraction(c_miss) * Fraction(p), Fraction(c_fa) * (1 - Fraction(p))
    norm = min(a, b)
    return float(min((a * Fraction(m) + b * Fraction(f)) / norm for m, f in zip(pmiss.tolist(), pfa.tolist())))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(-5, 5), min_size=1, max_size=12), st.lists(st.integers(-5, 5), min_size=1, max_size=12),
       st.one_of(st.floats(5e-324, 1e-290), st.floats(1e-290, 1.0, exclude_max=True),
                 st.sampled_from([5e-324, 1e-320, 2.2250738585072014e-308, 1 - 2.0**-53])),
       scales, st.floats(-300, 300).map(lambda x: 10.0 ** x))
def test_min_dcf_at_any_prior_and_cost_scale_matches_exact_arithmetic(tar, non, p, c, ratio):
    """Costs (c, c * ratio) and (1, ratio) give the same normalised DCF, and it is the exact one."""
    tar, non = np.array(tar, float) / 2, np.array(non, float) / 2
    want = _min_dcf_exact(tar, non, p, 1.0, ratio)
    assert 0.0 <= want <= 1.0
    assert min_dcf(tar, non, p, 1.0, ratio) == pytest.approx(want, rel=1e-9, abs=1e-300)
    assume(np.isfinite(c * ratio) and c * ratio > 0)
    assert min_dcf(tar, non, p, c, c * ratio) == pytest.approx(want, rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("p", [5e-324, 1e-320, 1e-310, 2.2250738585072014e-308, 1e-300])
def test_min_dcf_and_act_dcf_near_the_smallest_double(p):
    tar, non = [1.0, 2.0, 3.0], [0.0, 1.5, -1.0]
    assert min_dcf(tar, non, p) == pytest.approx(_min_dcf_exact(tar, non, p, 1.0, 1.0), rel=1e-12)
    assert min_dcf(tar, non, p, c_miss=1e-300) == pytest.approx(_min_dcf_exact(tar, non, p, 1e-300, 1.0), rel=1e-12)
    # act_dcf: the Bayes threshold ln((1-p)/p) is about 745 nats; no LLR here reaches it: reject all -> 1
    assert act_dcf(tar, non, p) == 1.0


@settings(max_examples=40, deadline=None)
@given(seeds, scales)
def test_linkability_under_any_positive_rescaling(seed, c):
    """Continuous scores (none on a bin edge at either scale): the value does not depend on the unit."""
    rng = np.random.default_rng(seed)
    tar, non = rng.normal(1, 1, 60), rng.normal(0, 1, 90)
    assert linkability(tar * c, non * c, 1.0, 12) == pytest.approx(linkability(tar, non, 1.0, 12), abs=1e-12)
