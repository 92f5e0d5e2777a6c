"""StudentTCalibrator: ML optimality, recovery of df, agreement with the Gaussian as df grows, errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from helpers import count_calls, shuffled
from vpeval.calibration.gaussian import GaussianCalibrator
from vpeval.calibration.student_t import StudentTCalibrator
from vpeval.errors import InvalidScoresError, VpevalError


def _loglik(x, df, loc, scale):
    return float(np.sum(stats.t.logpdf(x, df, loc, scale)))


def test_fit_is_a_local_likelihood_maximum_and_not_worse_than_scipy_raw():
    rng = np.random.default_rng(3)
    tar, non = 5 + 0.2 * rng.standard_t(4, 1500), 0.3 * rng.standard_t(6, 1500)
    cal = StudentTCalibrator().fit(tar, non)
    for x, (df, loc, scale) in [
        (tar, (cal.df_tar_, cal.loc_tar_, cal.scale_tar_)),
        (non, (cal.df_non_, cal.loc_non_, cal.scale_non_)),
    ]:
        best = _loglik(x, df, loc, scale)
        for f in (0.97, 1.03):
            assert best >= _loglik(x, df * f, loc, scale) - 1e-6
            assert best >= _loglik(x, df, loc, scale * f) - 1e-6
            assert best >= _loglik(x, df, loc + (f - 1) * scale, scale) - 1e-6
        # scipy fitted on the raw (unstandardised) scores reaches no higher likelihood
        assert best >= _loglik(x, *stats.t.fit(x)) - 1e-3


DATASETS = {
    "normal-300": lambda r: r.normal(0, 1, 300),
    "t1.5-2000": lambda r: r.standard_t(1.5, 2000),
    "t30-5000": lambda r: 3 + 0.01 * r.standard_t(30, 5000),
    "cauchy-50": lambda r: r.standard_cauchy(50),
    "two-points": lambda r: np.array([0.0, 1.0]),
    "three-points": lambda r: np.array([0.0, 1.0, 1.0]),
}


@pytest.mark.parametrize("data", DATASETS, ids=list(DATASETS))
def test_lbfgs_reaches_the_likelihood_of_scipy_t_fit(data):
    """scipy.stats.t.fit is the oracle: the default fitter must reach at least its log-likelihood."""
    x = DATASETS[data](np.random.default_rng(1))
    other = np.array([-1.0, 0.5, 2.0, 4.0])
    fast = StudentTCalibrator().fit(x, other)
    ref = StudentTCalibrator(fitter="scipy").fit(x, other)
    ll_fast = _loglik(x, fast.df_tar_, fast.loc_tar_, fast.scale_tar_)
    ll_ref = _loglik(x, ref.df_tar_, ref.loc_tar_, ref.scale_tar_)
    assert ll_fast >= ll_ref - 1e-6, (ll_fast, ll_ref)


@pytest.mark.parametrize("fitter", ["lbfgs", "scipy"])
@pytest.mark.parametrize("x", [[0.0, 0, 0, 0, 1], [0, 1, 2, 2, 2, 2, 2, 3.0]])
def test_collapse_onto_repeated_scores_raises(fitter, x):
    with pytest.raises(InvalidScoresError, match="no maximum.*scores equal"):
        StudentTCalibrator(fitter=fitter).fit(x, [-1.0, 0.5, 2.0, 4.0])


def test_bad_fitter():
    with pytest.raises(VpevalError, match="fitter"):
        StudentTCalibrator(fitter="newton").fit([0.0, 1.0], [1.0, 2.0])


def test_recovers_heavy_tails_and_llr_is_logpdf_difference():
    rng = np.random.default_rng(0)
    tar, non = rng.standard_t(3, 4000) + 2, rng.standard_t(3, 4000)
    cal = StudentTCalibrator().fit(tar, non)
    assert 2.3 < cal.df_tar_ < 4.0 and 2.3 < cal.df_non_ < 4.0
    s = np.linspace(-50, 50, 11)
    expect = np.array([
        stats.t.logpdf(v, cal.df_tar_, cal.loc_tar_, cal.scale_tar_)
        - stats.t.logpdf(v, cal.df_non_, cal.loc_non_, cal.scale_non_)
        for v in s
    ])
    np.testing.assert_allclose(cal.transform(s), expect, rtol=1e-12)
    # heavy tails: the LLR grows only logarithmically, far from the Gaussian's quadratic explosion
    assert np.max(np.abs(cal.transform([-1e3, 1e3]))) < 10


@pytest.mark.parametrize("fitter", ["lbfgs", "scipy"])
def test_fixed_df_converges_to_gaussian(fitter):
    rng = np.random.default_rng(7)
    tar, non = rng.normal(1.0, 2.0, 3000), rng.normal(0.0, 1.0, 3000)
    s = np.linspace(-6, 6, 121)
    gauss = GaussianCalibrator().fit(tar, non).transform(s)
    gaps = []
    for df in (10.0, 1e3, 1e5, 1e7):
        cal = StudentTCalibrator(df=df, fitter=fitter).fit(tar, non)
        assert cal.df_tar_ == pytest.approx(df) and cal.df_non_ == pytest.approx(df)
        gaps.append(np.max(np.abs(cal.transform(s) - gauss)))
    assert all(a > b for a, b in zip(gaps, gaps[1:])), gaps
    assert gaps[-1] < 1e-4


def test_fitted_on_large_gaussian_samples_agrees_with_gaussian():
    """Normal data: fitted df large, LLR within 0.05 nats of the Gaussian fit over +-3 sigma of each class."""
    rng = np.random.default_rng(5)
    tar, non = rng.normal(0.0, 2.0, 30000), rng.normal(0.0, 1.0, 30000)
    t = StudentTCalibrator().fit(tar, non)
    g = GaussianCalibrator().fit(tar, non)
    assert min(t.df_tar_, t.df_non_) > 100
    s = np.linspace(-3, 3, 61)
    assert np.max(np.abs(t.transform(s) - g.transform(s))) < 0.05


@pytest.mark.parametrize("constant", [0.04, 0.3])
def test_constant_class_raises(constant):
    with pytest.raises(InvalidScoresError, match="all 3 scores equal"):
        StudentTCalibrator().fit([constant] * 3, [0.0, 0.02, 0.05, 0.08])


@pytest.mark.parametrize(
    "kw, tar, non, match",
    [
        ({}, [1.0], [0.0, 1.0], "at least two"),
        ({}, [1.0, np.nan], [0.0, 1.0], "NaN"),
        ({}, [1.0, 2.0], [-np.inf, 1.0], "non-finite"),
        ({"df": 0.0}, [1.0, 2.0], [0.0, 1.0], "df must be"),
        ({"df": np.inf}, [1.0, 2.0], [0.0, 1.0], "df must be"),
    ],
)
def test_bad_input(kw, tar, non, match):
    with pytest.raises(VpevalError, match=match):
        StudentTCalibrator(**kw).fit(tar, non)


def test_unfitted_and_bad_transform():
    with pytest.raises(VpevalError, match="not fitted"):
        StudentTCalibrator().transform([1.0])
    cal = StudentTCalibrator().fit([0.0, 1.0, 2.5], [1.0, 3.0, 3.5])
    with pytest.raises(VpevalError, match="NaN|non-finite"):
        cal.transform([np.nan])
    assert np.all(np.isfinite(cal.transform([-1e6, 0.0, 1e6])))


@settings(max_examples=15, deadline=None)
@given(st.randoms(use_true_random=False), st.integers(0, 2**32 - 1))
def test_order_invariance_bitwise(rnd, seed):
    rng = np.random.default_rng(seed)
    tar, non = list(rng.normal(1, 1, 40)), list(rng.standard_t(5, 50))
    s = np.array(tar + non)
    a = StudentTCalibrator().fit(tar, non).transform(s)
    tar, non = shuffled(rnd, tar, non)
    np.testing.assert_array_equal(StudentTCalibrator().fit(tar, non).transform(s), a)


def test_scale_equivariance():
    rng = np.random.default_rng(9)
    tar, non = rng.standard_t(4, 300) + 1, rng.standard_t(4, 300)
    s = np.linspace(-5, 5, 21)
    base = StudentTCalibrator().fit(tar, non).transform(s)
    moved = StudentTCalibrator().fit(1e-3 * tar + 7, 1e-3 * non + 7).transform(1e-3 * s + 7)
    np.testing.assert_allclose(moved, base, atol=1e-4)


@pytest.mark.parametrize("df", [0.05, 0.3, 1.0, 4.0, 1e3])
def test_half_width_is_the_half_maximum_point(df):
    from vpeval.calibration.student_t import _half_width

    hw = _half_width(df, 2.5)
    assert stats.t.pdf(1.0 + hw, df, 1.0, 2.5) == pytest.approx(stats.t.pdf(1.0, df, 1.0, 2.5) / 2, rel=1e-12)


def test_ties_in_genuinely_heavy_tailed_data_are_not_a_collapse():
    """Rounded Cauchy scores have many ties, yet the fit covers many distinct scores: accepted."""
    rng = np.random.default_rng(5)
    x = np.round(rng.standard_cauchy(2000), 2)
    assert np.unique(x).size < x.size
    cal = StudentTCalibrator().fit(x, rng.normal(0, 1, 50))
    assert 0.7 < cal.df_tar_ < 1.4 and 0.8 < cal.scale_tar_ < 1.25
    # the same decision after an affine map of the scores
    cal2 = StudentTCalibrator().fit(7 * x - 3, rng.normal(0, 1, 50))
    assert cal2.df_tar_ == pytest.approx(cal.df_tar_, rel=1e-4)


def test_collapse_needs_df_below_the_multiplicity_bound():
    """k/n > df/(df+1) is the unboundedness condition: half the scores tied at 0 collapse; a single
    score of a wide, continuous sample does not."""
    with pytest.raises(InvalidScoresError, match="no maximum"):
        StudentTCalibrator().fit([0.0] * 5 + [-3.1, -1.2, 0.7, 2.2, 5.0], [-1.0, 0.5, 2.0, 4.0])
    x = np.random.default_rng(2).normal(0, 1, 40)
    StudentTCalibrator().fit(np.append(x, [x[0]] * 2), [-1.0, 0.5, 2.0, 4.0])


@pytest.mark.parametrize("seed", [1, 2])
def test_lbfgs_stops_where_its_line_searches_stall(monkeypatch, seed):
    """On 20,000 normal scores the mean log-likelihood is flat to its last bits near the optimum: L-BFGS-B's
    line searches then fail for a dozen evaluations or more before it gives up. The fit stops after
    _STALL_EVALUATIONS of them, with fewer evaluations, at the full run's point or one within 1e-8 of it
    (relative) whose likelihood is no lower than 1e-12 relative below it."""
    from vpeval.calibration import student_t as S

    z = np.sort(np.random.default_rng(seed).normal(size=20_000))
    calls = count_calls(monkeypatch, S, "_nll_t")
    stopped = S._fit_t(z, None, "x", "lbfgs")
    n_stopped, stall = len(calls), S._STALL_EVALUATIONS
    monkeypatch.setattr(S, "_STALL_EVALUATIONS", 10 ** 9)
    calls.clear()
    full = S._fit_t(z, None, "x", "lbfgs")
    assert n_stopped <= len(calls) - stall
    np.testing.assert_allclose(stopped, full, rtol=1e-8)
    assert _loglik(z, *stopped) >= _loglik(z, *full) - 1e-12 * abs(_loglik(z, *full))


@settings(max_examples=80, deadline=None)
@given(st.floats(0.05, 1e8), st.floats(-1e6, 1e6), st.floats(1e-6, 1e6), st.integers(0, 2**32 - 1))
def test_t_logpdf_is_scipys_bit_for_bit(df, loc, scale, seed):
    """The transform's Student-t log-density (df-only terms computed once) equals scipy.stats.t.logpdf exactly."""
    from vpeval.calibration.student_t import _t_logpdf

    x = np.random.default_rng(seed).normal(loc, 4 * scale, 257)
    assert np.array_equal(_t_logpdf(x, df, loc, scale), stats.t.logpdf(x, df, loc, scale))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([-1.0, -0.0, 0.0, 0.5, 2.0]) | st.floats(-3, 3, allow_nan=False), min_size=1,
                max_size=30), st.booleans())
def test_distinct_values_of_sorted_scores_are_those_of_np_unique(values, presorted):
    """The collapse check's one-pass distinct values of sorted scores equal np.unique's (values with their sign,
    first positions, counts); unsorted input goes to np.unique itself."""
    from vpeval.calibration.student_t import _distinct_sorted

    z = np.sort(np.array(values)) if presorted else np.array(values)
    got, want = _distinct_sorted(z), np.unique(z, return_index=True, return_counts=True)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype
    np.testing.assert_array_equal(np.signbit(got[0]), np.signbit(want[0]))
