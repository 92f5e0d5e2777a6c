"""Linear logistic-regression fusion: recovery of known weights, prior weighting, separability, invariances."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from vpeval.calibration import LogisticCalibrator
from vpeval.calibration.fusion import LinearFusion, linearly_separable, overlap_certified, quasi_separation
from vpeval.errors import InvalidScoresError, SeparableScoresError


def gaussian_scores(n, seed=0):
    # Equal-covariance Gaussian classes: the true LLR is linear, w = C^-1 (m_t - m_n),
    # b = -(m_t' C^-1 m_t - m_n' C^-1 m_n) / 2.
    rng = np.random.default_rng(seed)
    c = np.array([[1.0, 0.5, 0.0], [0.5, 2.0, 0.3], [0.0, 0.3, 0.5]])
    mt, mn = np.array([1.0, 1.5, 0.5]), np.array([-0.5, 0.0, 0.0])
    ci = np.linalg.inv(c)
    w = ci @ (mt - mn)
    b = -0.5 * (mt @ ci @ mt - mn @ ci @ mn)
    return rng.multivariate_normal(mt, c, size=n), rng.multivariate_normal(mn, c, size=n), w, b


def test_recovers_known_weights_on_simulated_scores():
    tar, non, w, b = gaussian_scores(40000)
    f = LinearFusion().fit(tar, non)
    np.testing.assert_allclose(f.weights_, w, atol=0.06)
    assert f.intercept_ == pytest.approx(b, abs=0.06)
    np.testing.assert_allclose(f.transform(tar[:3]), tar[:3] @ f.weights_ + f.intercept_)


def test_matches_generic_optimiser_with_prior_weighting():
    tar, non, _, _ = gaussian_scores(300, seed=1)
    tar, non = tar[:100], non  # unequal class sizes
    p = 0.2
    plo = np.log(p / (1 - p))

    def objective(theta):
        lt = tar @ theta[:3] + theta[3] + plo
        ln = non @ theta[:3] + theta[3] + plo
        return p * np.mean(np.logaddexp(0, -lt)) + (1 - p) * np.mean(np.logaddexp(0, ln))

    ref = minimize(objective, np.zeros(4), method="BFGS", options={"gtol": 1e-10}).x
    f = LinearFusion(p_target=p).fit(tar, non)
    np.testing.assert_allclose(f.weights_, ref[:3], atol=1e-4)
    assert f.intercept_ == pytest.approx(ref[3], abs=1e-4)


def test_one_system_equals_logistic_calibration():
    tar, non, _, _ = gaussian_scores(500, seed=2)
    f = LinearFusion(p_target=0.3).fit(tar[:, :1], non[:, :1])
    c = LogisticCalibrator(p_target=0.3).fit(tar[:, 0], non[:, 0])
    assert f.weights_[0] == pytest.approx(c.slope_, rel=1e-8)
    assert f.intercept_ == pytest.approx(c.intercept_, rel=1e-8, abs=1e-10)


def test_order_invariant_bit_for_bit_and_duplication_invariant():
    tar, non, _, _ = gaussian_scores(400, seed=3)
    f1 = LinearFusion().fit(tar, non)
    rng = np.random.default_rng(0)
    f2 = LinearFusion().fit(tar[rng.permutation(400)], non[rng.permutation(400)])
    np.testing.assert_array_equal(f1.weights_, f2.weights_)
    assert f1.intercept_ == f2.intercept_
    f3 = LinearFusion().fit(np.vstack([tar, tar]), np.vstack([non, non]))
    np.testing.assert_allclose(f3.weights_, f1.weights_, rtol=1e-8)


def test_separable_scores_refused_unless_regularised():
    tar = np.array([[1.0, 0.0], [2.0, 1.0], [1.5, -1.0]])
    non = np.array([[-1.0, 0.0], [-2.0, 1.0], [0.5, 3.0]])
    assert linearly_separable(tar, non)
    with pytest.raises(SeparableScoresError, match="linearly separable"):
        LinearFusion().fit(tar, non)
    f = LinearFusion(regularization=1.0).fit(tar, non)
    assert np.isfinite(f.weights_).all() and f.weights_[0] > 0
    overlapping_tar, overlapping_non = np.vstack([tar, [[-1.5, 0.5]]]), np.vstack([non, [[1.2, 0.1]]])
    assert not linearly_separable(overlapping_tar, overlapping_non)
    LinearFusion().fit(overlapping_tar, overlapping_non)


def test_bad_input():
    tar, non, _, _ = gaussian_scores(50)
    with pytest.raises(InvalidScoresError, match="fitted on 3"):
        LinearFusion().fit(tar, non).transform(non[:, :2])
    with pytest.raises(InvalidScoresError, match="NaN"):
        LinearFusion().fit(np.vstack([tar, [[np.nan, 0, 0]]]), non)
    with pytest.raises(InvalidScoresError, match="same training score"):
        LinearFusion().fit(np.c_[tar[:, :2], np.ones(50)], np.c_[non[:, :2], np.ones(50)])
    with pytest.raises(InvalidScoresError, match="2 names for 3 systems"):
        LinearFusion(names=["a", "b"]).fit(tar, non)
    d = LinearFusion(names=["a", "b", "c"]).fit(tar, non).describe()
    assert list(d["weights"]) == ["a", "b", "c"] and d["n_tar"] == 50


@pytest.mark.parametrize("tar, non", [
    ([[0.0], [1.0]], [[-1.0], [0.0]]),                                          # issue 28: weight 34.19 before
    ([[0.0, 0.0], [1.0, 1.0], [2.0, 0.5]], [[-1.0, -1.0], [0.0, 0.0], [-2.0, 0.3]]),  # 19.1 and 15.3 before
    ([[0.0, 5.0], [1.0, -3.0], [3.0, 0.0]], [[-2.0, 1.0], [0.0, 7.0], [0.0, -4.0]]),  # two ties at s_1 = 0
    ([[1.0, 1.0], [2.0, 2.0], [0.0, 0.0]], [[0.0, 0.0], [-1.0, -1.0], [-3.0, -3.0]]),  # collinear members, tie
])
def test_quasi_separated_scores_refused_unless_regularised(tar, non):
    tar, non = np.asarray(tar), np.asarray(non)
    assert not linearly_separable(tar, non)          # no strict separation: the ties are on the hyperplane
    d = quasi_separation(tar, non)
    assert d is not None and d["n_on"] >= 2 and d["n_off"] >= 1
    y = np.r_[np.ones(len(tar)), -np.ones(len(non))]
    margins = y * (np.vstack([tar, non]) @ d["weights"] + d["intercept"])
    assert margins.min() > -1e-7 and margins.max() > 0.5
    with pytest.raises(SeparableScoresError, match="quasi-separated"):
        LinearFusion().fit(tar, non)
    f = LinearFusion(regularization=1.0).fit(tar, non)
    assert np.isfinite(f.weights_).all() and f.converged_


def test_quasi_separation_is_not_claimed_for_overlap_or_collinear_overlap():
    tar, non, _, _ = gaussian_scores(200, seed=5)
    assert quasi_separation(tar, non) is None
    # a tie of one target with one non-target, the rest overlapping: finite weights
    assert quasi_separation(np.array([[0.0], [1.0], [-0.5]]), np.array([[0.0], [-1.0], [0.7]])) is None
    # identical member columns (all margins of the collinear direction are 0) with overlap
    t, n = np.array([[0.0, 0.0], [1.0, 1.0], [-1.0, -1.0]]), np.array([[0.5, 0.5], [-2.0, -2.0]])
    assert quasi_separation(t, n) is None
    # ... but a difference of the members seen on one target only is a direction of recession
    assert quasi_separation(t + [[0, 1e-3], [0, 0], [0, 0]], n) is not None


def _rows(tar, non):
    """Rows y_i (s_i, 1) of overlap_certified."""
    tar, non = np.asarray(tar, float), np.asarray(non, float)
    return np.vstack([np.c_[tar, np.ones(len(tar))], -np.c_[non, np.ones(len(non))]])


def test_overlap_certificate_by_hand():
    # tar {1, 2}, non {2, 1}: equal weights sum the rows (1,1) + (2,1) - (2,1) - (1,1) to 0: overlap proved
    assert overlap_certified(_rows([[1.0], [2.0]], [[2.0], [1.0]]), np.ones(4))
    # ... and weights far from a certificate are projected onto one (all stay positive)
    assert overlap_certified(_rows([[1.0], [2.0]], [[2.0], [1.0]]), np.array([1.0, 1.2, 0.9, 1.1]))
    # tar {2, 3}, non {0, 1}: separated, so no positive weights can sum the rows to 0
    rng = np.random.default_rng(0)
    for _ in range(50):
        assert not overlap_certified(_rows([[2.0], [3.0]], [[0.0], [1.0]]), rng.uniform(0.01, 1.0, 4))
    # collinear members: the rows do not span R^3, nothing is proved (the linear program decides)
    t, n = np.array([[0.0, 0.0], [1.0, 1.0], [-1.0, -1.0]]), np.array([[0.5, 0.5], [-2.0, -2.0]])
    assert not overlap_certified(_rows(t, n), np.ones(5))
    assert not overlap_certified(_rows([[1.0], [2.0]], [[2.0], [1.0]]), np.array([1.0, np.nan, 1.0, 1.0]))


def test_fusion_of_overlapping_scores_needs_no_linear_program(monkeypatch):
    import scipy.optimize

    tar, non, _, _ = gaussian_scores(2000, seed=7)
    expected = LinearFusion().fit(tar, non)

    def refuse(*a, **k):
        raise AssertionError("the linear program was run")

    monkeypatch.setattr(scipy.optimize, "linprog", refuse)
    got = LinearFusion().fit(tar, non)
    np.testing.assert_array_equal(got.weights_, expected.weights_)
    assert got.intercept_ == expected.intercept_
    with pytest.raises(AssertionError, match="linear program"):  # separated trials still reach it
        LinearFusion().fit(tar + [[10.0, 0.0, 0.0]], non)


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 3), st.integers(-3, 3), st.booleans()), min_size=2, max_size=12),
       st.lists(st.floats(0.01, 1.0), min_size=12, max_size=12))
def test_overlap_certificate_never_contradicts_the_linear_program(points, weights):
    # small integer scores: ties, separation, quasi-separation and overlap all occur
    tar = np.array([p[:2] for p in points if p[2]], float).reshape(-1, 2)
    non = np.array([p[:2] for p in points if not p[2]], float).reshape(-1, 2)
    if len(tar) == 0 or len(non) == 0:
        return
    a = _rows(tar, non)
    if overlap_certified(a, np.array(weights[: len(a)])):
        assert quasi_separation(tar, non) is None
    try:
        LinearFusion().fit(tar, non)
    except SeparableScoresError as exc:
        assert quasi_separation(tar, non) is not None or "did not converge" in str(exc)
    except InvalidScoresError:  # a member with one score on every trial
        pass
    else:
        assert quasi_separation(tar, non) is None
