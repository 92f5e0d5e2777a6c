"""Global linkability D<->sys (Gomez-Barrero et al. 2018): slow oracle, bin-edge rule, omega, properties."""

import math

import numpy as np
from helpers import shuffled
import oracles
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from vpeval import linkability
from vpeval.metrics.summary import verification_summary


def _lk(tar, non, omega=1.0, n_bins=10):
    return linkability(np.asarray(tar, float), np.asarray(non, float), omega=omega, n_bins=n_bins)


# ------------------------------------------------------------------------------------------ hand cases


def test_bin_edge_rule_edge_scores_go_to_the_bin_above():
    """Scores 0..10, 10 bins: edges are the integers, bin i = [i, i+1), the last bin [9, 10].

    Mated scores at 3 share bin [3, 4) with no non-mated score, so D = 1 there. Were the bins closed on the
    right, 3 would join the non-mated 2.9, 2.95, 2.99 in (2, 3] and D would be 0 there.
    y_tar = 5/6 in bin 3 and 1/6 in bin 9 (shared with a non-mated 10: LR = (1/6)/(1/5) < 1, D = 0).
    Trapezoid over the centres of D * y_tar: only bin 3 is non-zero; its two half-intervals give 5/6.
    """
    tar, non = [3.0] * 5 + [10.0], [0.0, 2.9, 2.95, 2.99, 10.0]
    assert _lk(tar, non) == pytest.approx(5 / 6, abs=1e-15)
    assert oracles.linkability(tar, non) == pytest.approx(5 / 6, abs=1e-15)


def test_maximum_falls_in_the_last_bin():
    """The top edge belongs to the last bin: mated scores at the maximum alone there give D = 1."""
    tar, non = [0.0, 4.0, 4.0], [0.0, 0.0, 1.0]  # 4 bins [0,1) [1,2) [2,3) [3,4]
    # bins: tar 1/3, 0, 0, 2/3; non 2/3, 1/3, 0, 0. D: 0 (LR 1/2), 0, 0, 1 (pure mated).
    # trapezoid over centres 0.5..3.5: only the last point is non-zero: (1 * (2/3)) * 1 / 2 = 1/3
    assert _lk(tar, non, n_bins=4) == pytest.approx(1 / 3, abs=1e-15)


def test_pure_mated_bins_count_as_fully_linkable():
    """A bin with mated scores only has D = 1 (LR infinite), whatever omega."""
    tar, non = [1.0, 1.0, 2.0], [0.0, 0.0, 1.0]  # 2 bins: [0, 1) and [1, 2]
    # bin 0: tar 0, non 2/3; bin 1: tar 1 (all), non 1/3 -> LR 3 -> D = 2*3/4 - 1 = 1/2 at omega 1
    assert _lk(tar, non, n_bins=2) == pytest.approx(0.5 * 0.5 * 1.0, abs=1e-15)
    tar, non = [1.5, 2.0, 2.0], [0.0, 0.0, 0.5]  # bin 1 holds mated scores only: D = 1 for every omega
    for omega in (0.01, 1.0, 100.0):
        assert _lk(tar, non, omega, n_bins=2) == pytest.approx(0.5, abs=1e-15)


def test_omega_enters_as_a_prior_ratio_on_the_mated_side():
    """Two bins, LR = 3 in the upper one: D = 2 omega LR / (1 + omega LR) - 1 where omega LR > 1.

    omega = 2: omega LR = 6 -> D = 5/7; omega = 1/2: 3/2 -> D = 1/5; omega = 1/4: 3/4 < 1 -> D = 0.
    An inverted omega (LR / omega) would give 1/5 for omega = 2 and 5/7 for omega = 1/2.
    """
    tar, non = [1.0, 1.0, 2.0], [0.0, 0.0, 1.0]
    for omega, d in ((2.0, 5 / 7), (0.5, 1 / 5), (0.25, 0.0), (1 / 3, 0.0), (1.0, 0.5)):
        # the trapezoid over the two centres keeps half of the upper bin: D * y_tar * 1/2 with y_tar = 1
        assert _lk(tar, non, omega, n_bins=2) == pytest.approx(d / 2, abs=1e-15), omega
        assert oracles.linkability(tar, non, omega, n_bins=2) == pytest.approx(d / 2, abs=1e-15)


# ------------------------------------------------------------------------------------------ oracle


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
def test_matches_the_direct_histogram_oracle(seed, tied):
    rng = np.random.default_rng(seed)
    n_t, n_n = rng.integers(1, 60, 2)
    if tied:  # few distinct values, many of them on bin edges (integers over an integer range)
        tar = rng.integers(0, 9, n_t).astype(float)
        non = rng.integers(-2, 7, n_n).astype(float)
    else:
        tar, non = rng.normal(1.5, 1, n_t), rng.normal(0, 1.3, n_n)
    n_bins = int(rng.choice([1, 2, 3, 5, 10, 11, 20]))
    omega = float(rng.choice([0.1, 0.5, 1.0, 2.0, 7.5]))
    assert _lk(tar, non, omega, n_bins) == pytest.approx(oracles.linkability(tar, non, omega, n_bins), abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(-20, 20), min_size=1, max_size=30),
    st.lists(st.integers(-20, 20), min_size=1, max_size=30),
    st.sampled_from([0.25, 0.5, 1.0, 2.0, 4.0]),
    st.integers(1, 25),
)
def test_matches_oracle_on_tied_integer_scores(tar, non, omega, n_bins):
    """Integer scores put many ties on the edges; dyadic scale factors keep the float edges exact."""
    tar, non = np.array(tar, float) / 4, np.array(non, float) / 4
    assert _lk(tar, non, omega, n_bins) == pytest.approx(oracles.linkability(tar, non, omega, n_bins), abs=1e-12)


def test_default_bins_in_the_summary_match_the_oracle():
    rng = np.random.default_rng(7)
    tar, non = np.round(rng.normal(2, 1, 250), 1), np.round(rng.normal(0, 1, 400), 1)
    s = {m.key: m.value for m in verification_summary(tar, non)}
    assert s["linkability"] == pytest.approx(oracles.linkability(tar, non, 1.0, 25), abs=1e-12)  # 250 // 10


# ------------------------------------------------------------------------------------------ properties

finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)


@settings(max_examples=50, deadline=None)
@given(st.lists(finite, min_size=1, max_size=40), st.lists(finite, min_size=1, max_size=40),
       st.integers(-20, 20), st.integers(1, 30), st.randoms(use_true_random=False))
def test_invariant_under_positive_rescaling_and_order(tar, non, k, n_bins, rnd):
    """Equal-width bins over [min, max] scale with the scores; a power-of-two factor is exact in float64.

    Exact only while no score leaves the normal range: 5e-324 times 2**-1 is 0, a tie the input did not
    have, so such factors are skipped (the premise, not the metric, fails there).
    """
    tar, non = np.array(tar), np.array(non)
    base = _lk(tar, non, n_bins=n_bins)
    c = 2.0 ** k
    assume(all(np.array_equal((c * x) / c, x) for x in (tar, non)))
    assert _lk(c * tar, c * non, n_bins=n_bins) == pytest.approx(base, abs=1e-12)
    tar_l, non_l = shuffled(rnd, tar.tolist(), non.tolist())
    assert _lk(tar_l, non_l, n_bins=n_bins) == pytest.approx(base, abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_invariant_under_generic_positive_rescaling(seed):
    """Continuous scores (no score on an edge): any positive factor leaves the value unchanged."""
    rng = np.random.default_rng(seed)
    tar, non = rng.normal(1, 1, 80), rng.normal(0, 1, 120)
    for c in (1e-3, 0.37, 3.0, 1e5):
        assert _lk(c * tar, c * non, 0.7, 15) == pytest.approx(_lk(tar, non, 0.7, 15), abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.lists(finite, min_size=1, max_size=30), st.lists(finite, min_size=1, max_size=30), st.integers(1, 20))
def test_bounds_and_monotone_in_omega(tar, non, n_bins):
    values = [_lk(tar, non, om, n_bins) for om in (0.1, 0.5, 1.0, 2.0, 10.0)]
    # the trapezoid over float64 centres can exceed 1 by an ulp (the oracle, exact on the same float edges,
    # agrees: e.g. tar [0], non [31113, -233979], 9 bins gives 1 + 2.2e-16)
    assert all(0.0 <= v <= 1.0 + 1e-12 for v in values)
    assert all(a <= b + 1e-12 for a, b in zip(values, values[1:]))


def test_identical_classes_are_unlinkable_and_separated_classes_approach_one():
    x = np.linspace(0, 1, 101)
    assert _lk(x, x, n_bins=10) == 0.0
    # separated: every mated score in a pure bin -> D = 1 everywhere mated mass is; the trapezoid over the
    # centres loses half of the top bin: 1 - 1/2 * (1/n_bins) / (1/2) ... computed by the oracle as well
    tar, non = np.linspace(0.55, 1, 50), np.linspace(0, 0.45, 50)
    v = _lk(tar, non, n_bins=20)
    assert v == pytest.approx(oracles.linkability(tar, non, 1.0, 20), abs=1e-12)
    assert 0.9 < v < 1.0


def test_near_float_limits_falls_back_to_a_scaled_histogram():
    """hi - lo overflows float64: the value is that of the same scores divided by 2**1000 (exact)."""
    tar, non = np.array([1e308, 5e307, 1.0]), np.array([-1e308, -5e307, 0.0])
    assert _lk(tar, non) == pytest.approx(_lk(tar / 2.0**1000, non / 2.0**1000), abs=1e-12)
    assert math.isfinite(_lk(tar, non))


@pytest.mark.parametrize("c", [1e306, 1e307, 4e307, 8e307])
def test_a_huge_but_finite_range_is_scale_free(c):
    """hi - lo finite but n_trials * bin width overflows (densities were 0: linkability 0.98 or 0 instead of
    about 0.5 for scores scaled to 1e307 and 4e307)."""
    rng = np.random.default_rng(1)
    tar, non = rng.normal(1.5, 1, 60), rng.normal(0, 1, 600)
    m = max(np.abs(tar).max(), np.abs(non).max())
    tar, non = tar / m, non / m
    with np.errstate(over="raise", under="raise"):
        v = _lk(tar * c, non * c)
    assert v == pytest.approx(_lk(tar, non), abs=1e-9)
    assert 0.3 < v < 0.8


def test_tiny_score_range_uses_the_scaled_histogram():
    """A range of 1e-300: densities count / (n width) would overflow; the value is that of the scores
    multiplied by 2**1000 (exact), with no overflow."""
    tar, non = np.array([3e-300, 2e-300, 1e-300]), np.array([0.0, 1e-300, 5e-301])
    with np.errstate(all="raise"):
        v = _lk(tar, non, n_bins=4)
    assert v == pytest.approx(_lk(tar * 2.0**1000, non * 2.0**1000, n_bins=4), abs=1e-12)
