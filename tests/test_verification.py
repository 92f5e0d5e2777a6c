import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vpeval
from vpeval import (
    act_dcf, cllr, det_curve, eer, interp_eer, linkability, min_cllr, min_dcf, pav_llr, rocch_eer, zebra,
)
from vpeval.errors import InvalidScoresError, VpevalError

from helpers import shuffled
import oracles

# ---------------------------------------------------------------- hand-computed cases


def test_all_tied_scores():
    tar, non = [1, 1, 1, 1], [1, 1, 1, 1]
    assert eer(tar, non) == 0.5
    assert eer(tar, non, method="interp") == 0.5
    assert min_dcf(tar, non, 0.01) == 1.0
    assert min_cllr(tar, non) == 1.0
    assert zebra(tar, non).eps_max == 0.0
    t, n = pav_llr(tar, non)
    assert np.all(t == 0) and np.all(n == 0)
    t, n = pav_llr(tar, non, laplace=True)
    assert np.all(t == 0) and np.all(n == 0)


def test_min_dcf_ties_either_order():
    assert min_dcf([0.5, 0.5], [0.5, 0.5], p_target=0.05) == 1.0
    assert min_dcf([0.5, 0.5][::-1], [0.5, 0.5], p_target=0.05) == 1.0


def test_min_dcf_never_above_one():
    assert min_dcf([0.1, 0.2, 0.35], [0.3, 0.8, 0.9], p_target=0.9) == 1.0


def test_separable():
    tar, non = [0.6, 0.7, 0.8], [0.1, 0.2, 0.3]
    assert eer(tar, non) == 0.0 and interp_eer(tar, non) == 0.0
    assert min_cllr(tar, non) == 0.0
    assert zebra([0.6, 0.7, 0.8], [0.1, 0.2, 0.3]).eps_max == pytest.approx(math.log(4), abs=1e-15)
    t, n = pav_llr(tar, non)
    assert np.all(np.isposinf(t)) and np.all(np.isneginf(n))
    # plain PAV eps_max is infinite
    assert max(np.abs(t).max(), np.abs(n).max()) == math.inf
    t, n = pav_llr(tar, non, laplace=True)
    np.testing.assert_allclose(t, [math.log(4)] * 3, rtol=0, atol=1e-15)
    np.testing.assert_allclose(n, [-math.log(4)] * 3, rtol=0, atol=1e-15)


def test_laplace_pav_with_ties():
    t, n = pav_llr([0.3, 0.5, 0.9], [0.1, 0.5, 0.5], laplace=True)
    np.testing.assert_allclose(t, [0, 0, math.log(2)], atol=1e-15)
    np.testing.assert_allclose(n, [-math.log(2), 0, 0], atol=1e-15)
    assert min_cllr([0.3, 0.5, 0.9], [0.1, 0.5, 0.5]) == pytest.approx(2 / 3, abs=1e-15)


def test_reversed_scores_are_not_flipped():
    assert interp_eer([0.1, 0.2], [0.8, 0.9]) == 1.0
    assert rocch_eer([0.1, 0.2], [0.8, 0.9]) == 0.5


def test_cllr_with_infinities():
    assert cllr([np.inf, 2], [-np.inf, -1]) == pytest.approx(0.158764873791, abs=1e-12)
    assert cllr([-np.inf, 2], [-1]) == math.inf
    assert cllr([0.0], [0.0]) == 1.0


def test_act_dcf_bayes_threshold():
    # p=0.5: threshold 0; one miss of two targets, one false alarm of two non-targets
    assert act_dcf([2.0, -1.0], [-2.0, 0.5], p_target=0.5) == pytest.approx(1.0)
    # perfectly calibrated separated LLRs cost nothing
    assert act_dcf([5.0], [-5.0], p_target=0.01) == 0.0
    # a llr exactly at the threshold is accepted (score >= t)
    assert act_dcf([0.0], [-1.0], p_target=0.5) == 0.0


def test_det_curve_shape_and_ends():
    c = det_curve([3, 1, 2, 2], [0, 2, 5])
    assert c.pmiss[0] == 0 and c.pfa[0] == 1 and c.pmiss[-1] == 1 and c.pfa[-1] == 0
    assert np.all(np.diff(c.pmiss) >= 0) and np.all(np.diff(c.pfa) <= 0)
    assert c.thresholds[-1] == np.inf  # reject all; NaN when a score is +inf (test_report_numbers)


@pytest.mark.parametrize("bad", [[], [np.nan, 1.0], [[1.0, 2.0]]])
def test_bad_arrays_raise_our_error(bad):
    for f in (eer, rocch_eer, interp_eer, min_cllr, cllr, lambda t, n: min_dcf(t, n, 0.1), zebra, pav_llr):
        with pytest.raises(InvalidScoresError):
            f(bad, [0.0, 1.0])
        with pytest.raises(VpevalError):
            f([0.0, 1.0], bad)
    assert issubclass(InvalidScoresError, ValueError)


def test_bad_parameters():
    with pytest.raises(InvalidScoresError):
        eer([1], [0], method="bogus")
    with pytest.raises(InvalidScoresError):
        min_dcf([1], [0], p_target=1.0)
    with pytest.raises(InvalidScoresError):
        min_dcf([1], [0], p_target=0.5, c_fa=0)
    with pytest.raises(InvalidScoresError):
        linkability([1], [0], omega=0)


# ---------------------------------------------------------------- published numbers


def _scores_1(shared):
    t = vpeval.read_score_label(shared / "reference_vectors" / "anonymization_metrics_scores_1.txt")
    return t.tar, t.non


def test_anonymization_metrics_reference(shared):
    tar, non = _scores_1(shared)
    assert tar.size == 100 and non.size == 100
    assert tar.mean() == pytest.approx(3.0077259531982308, abs=1e-12)
    assert non.mean() == pytest.approx(1.4462666150080412, abs=1e-12)
    assert tar.std() == pytest.approx(0.11097579928810934, abs=1e-12)
    assert non.std() == pytest.approx(0.7184156570301649, abs=1e-12)
    assert cllr(tar, non) == pytest.approx(1.2601658561658864, abs=1e-12)
    assert rocch_eer(tar, non) == pytest.approx(0.016666666666666666, abs=1e-12)
    assert linkability(tar, non, omega=1.0) == pytest.approx(0.5063636363636363, abs=1e-9)


def test_min_cllr_reference_and_its_ramp(shared):
    """The published minCllr includes the toolkit's monotonicity ramp (+1e-6 i/N on the PAV LLRs in
    score order). Rebuilding that ramp on our PAV LLRs reproduces it to 1e-12; our own value, without the
    ramp, differs by about 1.6e-9 and only because of it."""
    tar, non = _scores_1(shared)
    published = 0.06332590373152217
    t_llr, n_llr = pav_llr(tar, non)
    scores = np.concatenate([non, tar])
    llr = np.concatenate([n_llr, t_llr])
    order = np.argsort(scores, kind="mergesort")
    ramped = llr.copy()
    ramped[order] += np.arange(scores.size) * 1e-6 / scores.size
    assert cllr(ramped[non.size:], ramped[:non.size]) == pytest.approx(published, abs=1e-12)
    assert min_cllr(tar, non) == pytest.approx(published, abs=2e-9)
    assert min_cllr(tar, non) == pytest.approx(cllr(t_llr, n_llr), abs=1e-15)


def test_asvspoof_targets_vs_nontargets(shared):
    t = vpeval.read_columns(
        shared / "data" / "asvspoof2019_la_dev_asv_scores.txt",
        label_col=1, score_col=2, target="target", nontarget="nontarget", ignore="spoof",
    )
    assert (t.tar.size, t.non.size) == (1484, 5768)
    # The "closest point, mean of pmiss and pfa" step EER published for this file: 2.42653 %.
    c = det_curve(t.tar, t.non)
    i = np.argmin(np.abs(c.pmiss - c.pfa))
    assert (c.pmiss[i] + c.pfa[i]) / 2 == pytest.approx(0.0242653, abs=5e-8)
    assert eer(t.tar, t.non, method="closest") == pytest.approx(0.0242653, abs=5e-8)
    # our named estimators bracket it sensibly
    assert rocch_eer(t.tar, t.non) <= interp_eer(t.tar, t.non)
    assert abs(interp_eer(t.tar, t.non) - 0.0242653) < 1e-3


# ---------------------------------------------------------------- oracles and properties

tied = st.lists(st.integers(0, 6).map(float), min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(tied, tied, st.sampled_from([0.01, 0.1, 0.5, 0.9]))
def test_fast_equals_oracle(tar, non, p):
    assert interp_eer(tar, non) == pytest.approx(oracles.interp_eer(tar, non), abs=1e-12)
    assert rocch_eer(tar, non) == pytest.approx(oracles.rocch_eer(tar, non), abs=1e-12)
    assert min_dcf(tar, non, p) == pytest.approx(oracles.min_dcf(tar, non, p), abs=1e-12)
    ot, on = oracles.pav_llr(tar, non)
    ft, fn = pav_llr(tar, non)
    np.testing.assert_allclose(ft, ot, atol=1e-12)
    np.testing.assert_allclose(fn, on, atol=1e-12)
    lt, ln = oracles.pav_llr(tar, non, laplace=True)
    ft, fn = pav_llr(tar, non, laplace=True)
    np.testing.assert_allclose(ft, lt, atol=1e-12)
    np.testing.assert_allclose(fn, ln, atol=1e-12)
    assert min_cllr(tar, non) == pytest.approx(oracles.cllr(*oracles.pav_llr(tar, non)), abs=1e-12)


# Scores on a grid of 1/8 keep ties exact and stay distinct under the transform below.
floats = st.lists(st.integers(-400, 400).map(lambda k: k / 8), min_size=1, max_size=25)


def _summary(tar, non):
    z = zebra(tar, non)
    return np.array([
        rocch_eer(tar, non), interp_eer(tar, non), min_dcf(tar, non, 0.05), min_dcf(tar, non, 0.5),
        min_cllr(tar, non), z.eps_max, z.d_ece_bits,
    ])


@settings(max_examples=200, deadline=None)
@given(floats, floats, st.randoms(use_true_random=False))
def test_order_invariance(tar, non, rnd):
    a = _summary(tar, non)
    t2, n2 = shuffled(rnd, tar, non)
    np.testing.assert_array_equal(a, _summary(t2, n2))


@settings(max_examples=200, deadline=None)
@given(floats, floats)
def test_monotone_transform_invariance(tar, non):
    a = _summary(tar, non)
    f = lambda x: np.exp(np.asarray(x, dtype=float) / 10.0) * 5 - 2  # strictly increasing  # noqa: E731
    np.testing.assert_allclose(_summary(f(tar), f(non)), a, atol=1e-12)


@settings(max_examples=200, deadline=None)
@given(floats, floats)
def test_duplicating_every_trial(tar, non):
    a = _summary(tar, non)
    b = _summary(tar * 2, non * 2)
    # everything but eps_max (Laplace pseudo-trials weigh less against doubled counts)
    np.testing.assert_allclose(np.delete(b, 5), np.delete(a, 5), atol=1e-12)
    t, n = pav_llr(tar, non)
    t2, n2 = pav_llr(tar * 2, non * 2)
    np.testing.assert_allclose(t2[: len(tar)], t, atol=1e-12)


@settings(max_examples=200, deadline=None)
@given(floats, floats)
def test_bounds_and_orderings(tar, non):
    assert 0.0 <= rocch_eer(tar, non) <= 0.5
    assert rocch_eer(tar, non) <= interp_eer(tar, non) + 1e-12
    assert 0.0 <= min_dcf(tar, non, 0.3) <= 1.0
    mc = min_cllr(tar, non)
    assert -1e-12 <= mc <= 1.0 + 1e-12
    t, n = pav_llr(tar, non, laplace=True)
    assert cllr(tar, non) >= mc - 1e-12
    assert cllr(t, n) >= mc - 1e-12
    assert np.isfinite(t).all() and np.isfinite(n).all()


@settings(max_examples=100, deadline=None)
@given(floats, floats)
def test_swapping_roles(tar, non):
    # Swapping classes and negating scores is the same detector: every rank metric is unchanged.
    neg = lambda x: [-v for v in x]  # noqa: E731
    np.testing.assert_allclose(
        [rocch_eer(tar, non), interp_eer(tar, non), min_cllr(tar, non), zebra(tar, non).eps_max],
        [rocch_eer(neg(non), neg(tar)), interp_eer(neg(non), neg(tar)), min_cllr(neg(non), neg(tar)),
         zebra(neg(non), neg(tar)).eps_max],
        atol=1e-12,
    )


# ---------------------------------------------------------------- Cllr with unequal class sizes


def test_cllr_is_the_mean_of_the_two_class_means_hand_cases():
    """Cllr = (mean_tar softplus(-llr) + mean_non softplus(llr)) / (2 ln 2): the classes weigh equally.

    One target at LLR 0 (ln 2 nats) and three non-targets at -inf (0 nats): (ln 2 + 0) / (2 ln 2) = 1/2 bit;
    pooling all four trials would give 1/4.
    Three targets at ln 3 (each ln(4/3)) and one non-target at ln 3 (ln 4): (ln(4/3) + ln 4) / (2 ln 2)
    = (4 ln 2 - ln 3) / (2 ln 2) = 2 - log2(3) / 2; pooling would give (3 ln(4/3) + ln 4) / (4 ln 2).
    """
    assert cllr([0.0], [-np.inf, -np.inf, -np.inf]) == pytest.approx(0.5, abs=1e-15)
    ln3 = math.log(3)
    assert cllr([ln3] * 3, [ln3]) == pytest.approx(2 - math.log2(3) / 2, abs=1e-15)
    assert cllr([ln3], [ln3] * 5) == pytest.approx(2 - math.log2(3) / 2, abs=1e-15)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-30, 30), min_size=1, max_size=15), st.lists(st.floats(-30, 30), min_size=1, max_size=15),
       st.integers(2, 5))
def test_cllr_does_not_depend_on_class_sizes(tar_llr, non_llr, k):
    """Repeating every target trial k times (and not the non-targets) leaves Cllr unchanged."""
    assert cllr(np.repeat(tar_llr, k), non_llr) == pytest.approx(cllr(tar_llr, non_llr), rel=1e-12, abs=1e-15)
    assert cllr(tar_llr, np.repeat(non_llr, k)) == pytest.approx(cllr(tar_llr, non_llr), rel=1e-12, abs=1e-15)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-40, 40), min_size=1, max_size=300), st.lists(st.floats(-40, 40), min_size=1, max_size=300),
       st.randoms(use_true_random=False))
def test_cllr_does_not_depend_on_the_order_of_the_trials_to_the_last_bit(tar_llr, non_llr, rnd):
    # numpy's pairwise sum rounds differently for another order of its terms: the means run over sorted LLRs
    t, n = list(tar_llr), list(non_llr)
    rnd.shuffle(t)
    rnd.shuffle(n)
    assert cllr(t, n) == cllr(tar_llr, non_llr)


def test_cllr_order_matters_to_an_unsorted_sum_here():
    # the case the test above guards: these LLRs summed in two orders differ in the last bits
    rng = np.random.default_rng(0)
    x = rng.normal(size=1000) * 10
    v = np.logaddexp(0.0, -x)
    assert np.mean(v) != np.mean(v[::-1]) or np.mean(v) != np.mean(rng.permutation(v))
    assert cllr(x, x) == cllr(x[::-1], rng.permutation(x))


def test_min_cllr_unequal_class_sizes_hand_cases():
    """Fully tied: PAV LLR = logit(1/4) - ln(1/3) = 0 -> 1 bit. Separable: 0 bits. One pooled bin of 1
    target and 1 non-target above 2 non-targets: LLRs ln 3 (= ln(1/1) - ln(1/3)) and -inf, giving
    (ln(4/3) + [2 * 0 + ln 4] / 3) / (2 ln 2)."""
    assert min_cllr([0.5], [0.5, 0.5, 0.5]) == pytest.approx(1.0, abs=1e-15)
    assert min_cllr([1.0], [0.0, 0.0, 0.5]) == 0.0
    ln3 = math.log(3)
    expect = (math.log(4 / 3) + math.log(4) / 3) / (2 * math.log(2))
    assert min_cllr([1.0], [0.0, 0.0, 1.0]) == pytest.approx(expect, abs=1e-15)
    assert cllr([ln3], [-np.inf, -np.inf, ln3]) == pytest.approx(expect, abs=1e-15)
