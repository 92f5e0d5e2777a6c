"""GaussianCalibrator: hand-computed fits, scipy oracle, degenerate input, invariances."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from helpers import shuffled
from vpeval.calibration.gaussian import GaussianCalibrator
from vpeval.errors import InvalidScoresError, VpevalError

finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
# classes with a spread that survives an affine map in float64 (tiny spreads are covered by the error tests)
classes = st.lists(finite, min_size=2, max_size=30).filter(
    lambda v: max(v) - min(v) > 1e-3 * (1 + max(abs(x) for x in v))
)


def test_hand_computed_separate_variances():
    # tar: mean 1, ML variance ((-2)^2 + 0 + 2^2) / 3 = 8/3 ; non: mean 0, variance 1
    cal = GaussianCalibrator().fit([-1.0, 1.0, 3.0], [-1.0, 1.0])
    assert cal.mu_tar_ == 1.0 and cal.mu_non_ == 0.0
    assert cal.sigma_tar_ == pytest.approx(np.sqrt(8 / 3), rel=1e-15)
    assert cal.sigma_non_ == 1.0
    # at s = 1: ln(1 / sqrt(8/3)) - 0 + 1/2
    assert cal.transform([1.0])[0] == pytest.approx(-0.5 * np.log(8 / 3) + 0.5, rel=1e-14)
    assert cal.name == "gaussian"


def test_hand_computed_shared_variance():
    # pooled ML variance: (8 + 2) / 5 = 2 ; LLR = (1 - 0) / 2 * s - (1 - 0) / 4
    cal = GaussianCalibrator(shared_variance=True).fit([-1.0, 1.0, 3.0], [-1.0, 1.0])
    assert cal.sigma_tar_ == cal.sigma_non_ == pytest.approx(np.sqrt(2.0), rel=1e-15)
    s = np.array([-2.0, 0.0, 0.5, 4.0])
    np.testing.assert_allclose(cal.transform(s), 0.5 * s - 0.25, rtol=1e-14, atol=1e-15)
    assert cal.name == "gaussian_shared"


def test_matches_scipy_logpdf_oracle():
    rng = np.random.default_rng(11)
    tar, non = rng.normal(1.3, 0.7, 500), rng.normal(-0.2, 1.9, 800)
    cal = GaussianCalibrator().fit(tar, non)
    s = np.linspace(-30, 30, 301)
    oracle = stats.norm.logpdf(s, tar.mean(), tar.std()) - stats.norm.logpdf(s, non.mean(), non.std())
    np.testing.assert_allclose(cal.transform(s), oracle, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("constant", [0.04, 0.3])
@pytest.mark.parametrize("shared", [False, True])
def test_constant_target_class_raises(constant, shared):
    with pytest.raises(InvalidScoresError, match="all 3 scores equal"):
        GaussianCalibrator(shared).fit([constant] * 3, [0.0, 0.02, 0.05, 0.08])


def test_constant_nontarget_class_raises():
    with pytest.raises(InvalidScoresError, match="non: all"):
        GaussianCalibrator().fit([0.0, 0.02, 0.05, 0.08], [0.1, 0.1])


@pytest.mark.parametrize(
    "tar, non, match",
    [
        ([1.0], [0.0, 1.0], "at least two"),
        ([1.0, 2.0], [0.0], "at least two"),
        ([1.0, np.nan], [0.0, 1.0], "NaN"),
        ([1.0, 2.0], [0.0, np.inf], "non-finite"),
        ([], [0.0, 1.0], "empty"),
        ([[1.0, 2.0]], [0.0, 1.0], "1-D"),
    ],
)
def test_bad_training_input(tar, non, match):
    with pytest.raises(VpevalError, match=match):
        GaussianCalibrator().fit(tar, non)


def test_bad_transform_input_and_unfitted():
    with pytest.raises(VpevalError, match="not fitted"):
        GaussianCalibrator().transform([0.0])
    cal = GaussianCalibrator().fit([0.0, 1.0], [1.0, 3.0])
    with pytest.raises(VpevalError, match="non-finite"):
        cal.transform([0.0, np.inf])


@settings(max_examples=60, deadline=None)
@given(classes, classes, st.randoms(use_true_random=False), st.booleans())
def test_order_invariance_bitwise(tar, non, rnd, shared):
    s = np.array(tar + non)
    a = GaussianCalibrator(shared).fit(tar, non).transform(s)
    tp, npm = shuffled(rnd, tar, non)
    b = GaussianCalibrator(shared).fit(tp, npm).transform(s)
    np.testing.assert_array_equal(a, b)


@settings(max_examples=60, deadline=None)
@given(classes, classes, st.floats(0.01, 100), st.floats(-100, 100), st.booleans())
def test_affine_invariance_and_duplication(tar, non, a, b, shared):
    tar, non = np.array(tar), np.array(non)
    s = np.concatenate([tar, non])
    base = GaussianCalibrator(shared).fit(tar, non).transform(s)
    moved = GaussianCalibrator(shared).fit(a * tar + b, a * non + b).transform(a * s + b)
    np.testing.assert_allclose(moved, base, rtol=1e-6, atol=1e-6 * (1 + np.max(np.abs(base))))
    dup = GaussianCalibrator(shared).fit(np.repeat(tar, 2), np.repeat(non, 2)).transform(s)
    np.testing.assert_allclose(dup, base, rtol=1e-9, atol=1e-9 * (1 + np.max(np.abs(base))))


def test_llr_finite_in_range_and_never_nan_at_overflow():
    cal = GaussianCalibrator().fit([0.0, 2.0, 4.0], [0.0, 0.1, 0.2])
    assert np.all(np.isfinite(cal.transform([-1e100, -1e10, 0.0, 1e10, 1e100])))
    huge = cal.transform([-1e300, 1e300])
    # sigma_non < sigma_tar: the non-target density falls faster, so the LLR tends to +inf on both sides
    np.testing.assert_array_equal(huge, [np.inf, np.inf])
    equal = GaussianCalibrator(shared_variance=True).fit([0.0, 2.0, 4.0], [0.0, 0.1, 0.2])
    out = equal.transform([-1e300, 1e300])
    assert out[0] < 0 < out[1] and not np.any(np.isnan(out))
