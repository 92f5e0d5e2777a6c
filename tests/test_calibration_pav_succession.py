"""Per-bin rule-of-succession PAV: hand cases, slow oracle, invariances."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpeval.calibration import pav_llr
from vpeval.calibration.pav_succession import PAVSuccessionCalibrator, pav_llr_succession


def _slow_oracle(tar, non):
    """PAV by repeated pooling of adjacent violators on tie-pooled blocks, then the per-step rule."""
    values = sorted(set(tar) | set(non))
    blocks = [[tar.count(v), non.count(v), [v]] for v in values]
    changed = True
    while changed:
        changed = False
        for i in range(len(blocks) - 1):
            (t1, n1, _), (t2, n2, _) = blocks[i], blocks[i + 1]
            if t1 * (t2 + n2) >= t2 * (t1 + n1):  # violator or equal posterior: pool into one step
                blocks[i] = [t1 + t2, n1 + n2, blocks[i][2] + blocks[i + 1][2]]
                del blocks[i + 1]
                changed = True
                break
    llr = {}
    for t, n, vs in blocks:
        for v in vs:
            llr[v] = math.log((t + 1) / (n + 1)) - math.log(len(tar) / len(non))
    return np.array([llr[v] for v in tar]), np.array([llr[v] for v in non])


def test_issue_example_and_non_monotonicity():
    t, n = pav_llr_succession([0.0], [0.3, -0.2, 0.05, 0.175, 0.175])
    assert n[1] == np.max(np.abs(np.concatenate([t, n])))
    # the lowest score: a bin with one non-target, (0 + 1) / (1 + 2), odds 1/2, prior odds 1/5
    assert n[1] == pytest.approx(math.log(5 / 2), abs=1e-15)
    assert t[0] == pytest.approx(math.log(2), abs=1e-15) and n[0] == t[0]  # (1 + 1) / (5 + 2) with prior odds 1/5
    assert n[1] > n[0]  # lower score, higher LLR: not monotone


def test_table2_example1_matches_laplace_there():
    t, n = pav_llr_succession([0.2, 0.4, 0.6], [0.1, 0.3, 0.5])
    np.testing.assert_allclose(t, [0, 0, math.log(2)], atol=1e-15)
    np.testing.assert_allclose(n, [-math.log(2), 0, 0], atol=1e-15)


scores = st.lists(st.integers(-6, 6).map(float), min_size=1, max_size=15)


@settings(max_examples=200, deadline=None)
@given(scores, scores)
def test_against_slow_oracle(tar, non):
    t, n = pav_llr_succession(tar, non)
    ot, on = _slow_oracle(tar, non)
    np.testing.assert_allclose(t, ot, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(n, on, rtol=1e-12, atol=1e-12)
    assert np.all(np.isfinite(t)) and np.all(np.isfinite(n))


@settings(max_examples=100, deadline=None)
@given(scores, scores, st.randoms(use_true_random=False))
def test_order_and_monotone_transform_invariance(tar, non, rnd):
    t, n = pav_llr_succession(tar, non)
    pt, pn = rnd.sample(range(len(tar)), len(tar)), rnd.sample(range(len(non)), len(non))
    t2, n2 = pav_llr_succession(np.array(tar)[pt], np.array(non)[pn])
    np.testing.assert_array_equal(t2, t[pt])
    np.testing.assert_array_equal(n2, n[pn])
    t3, n3 = pav_llr_succession(np.exp(tar), np.exp(non))
    np.testing.assert_array_equal(t3, t)
    np.testing.assert_array_equal(n3, n)


@settings(max_examples=100, deadline=None)
@given(scores, scores)
def test_same_steps_as_plain_pav(tar, non):
    """Where plain PAV gives equal LLRs the per-bin rule does too (it works on the same steps).

    (Not conversely: steps 3/4 and 1/1 both get succession odds 2.)"""
    t, n = pav_llr_succession(tar, non)
    pt, pn = pav_llr(tar, non)
    a, b = np.concatenate([t, n]), np.concatenate([pt, pn])
    same_pav = b[:, None] == b[None, :]
    assert np.all((a[:, None] == a[None, :])[same_pav])


@settings(max_examples=100, deadline=None)
@given(scores, scores)
def test_calibrator_matches_function_on_training_scores(tar, non):
    cal = PAVSuccessionCalibrator().fit(tar, non)
    t, n = pav_llr_succession(tar, non)
    np.testing.assert_array_equal(cal.transform(tar), t)
    np.testing.assert_array_equal(cal.transform(non), n)
    assert cal.name == "pav_succession"
    # constant extrapolation below / above the training range
    assert cal.transform([-100.0])[0] == cal.llr_[0] and cal.transform([100.0])[0] == cal.llr_[-1]
