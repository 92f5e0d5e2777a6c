"""fit_apply and speaker-grouped cross-validated calibration."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpeval.calibration.crossval import crossval_llr, fit_apply, speaker_folds
from vpeval.calibration.gaussian import GaussianCalibrator
from vpeval.errors import SeparableScoresError, VpevalError


class Spy:
    """Records which scores every fit saw and which scores every transform mapped."""

    name = "spy"
    log = []

    def fit(self, tar, non):
        self.train = set(np.concatenate([tar, non]).tolist())
        self.inner = GaussianCalibrator().fit(tar, non)
        return self

    def transform(self, scores):
        Spy.log.append((self.train, set(np.asarray(scores).tolist())))
        return self.inner.transform(scores)


def _trials(n_spk=8, per=12, seed=0, pairs=False):
    rng = np.random.default_rng(seed)
    spk = np.repeat([f"s{i}" for i in range(n_spk)], per)
    lab = np.tile(np.arange(per) % 2 == 0, n_spk)
    scores = rng.normal(0, 1, spk.size) + 2 * lab  # continuous: every score identifies its trial
    if pairs:
        other = np.where(lab, spk, rng.permutation(spk))
        other = np.where((other == spk) & ~lab, np.roll(spk, per), other)
        return scores, lab, np.stack([spk, other], axis=1)
    return scores, lab, spk


def test_fit_apply_is_fit_then_transform():
    out = fit_apply("gaussian", [1.0, 3.0], [-1.0, 1.0], [0.0, 2.0])
    np.testing.assert_array_equal(out, GaussianCalibrator().fit([1.0, 3.0], [-1.0, 1.0]).transform([0.0, 2.0]))
    cal = GaussianCalibrator()
    fit_apply(cal, [1.0, 3.0], [-1.0, 1.0], [0.0])
    assert not hasattr(cal, "mu_tar_")  # the argument is copied, not fitted


def test_two_folds_by_hand():
    scores = np.array([2.0, 1.5, 0.1, -0.2, 1.8, 0.3, -0.4, 0.0])
    labels = np.array([1, 1, 0, 0, 1, 1, 0, 0])
    spk = np.array(list("aaaabbbb"))
    llr = crossval_llr(scores, labels, spk, "gaussian", n_folds=2)
    a, b = spk == "a", spk == "b"
    lab = labels == 1
    np.testing.assert_array_equal(llr[a], fit_apply("gaussian", scores[b & lab], scores[b & ~lab], scores[a]))
    np.testing.assert_array_equal(llr[b], fit_apply("gaussian", scores[a & lab], scores[a & ~lab], scores[b]))


@pytest.mark.parametrize("pairs", [False, True])
def test_no_speaker_is_calibrated_on_its_own_trials(pairs):
    scores, lab, groups = _trials(pairs=pairs)
    Spy.log = []
    crossval_llr(scores, lab, groups, Spy(), n_folds=4)
    g2 = groups if groups.ndim == 2 else groups[:, None]
    spk_of = {s: set(row) for s, row in zip(scores.tolist(), g2.tolist())}
    covered = set()
    for train, mapped in Spy.log:
        train_spk = set().union(*(spk_of[s] for s in train))
        mapped_spk = set().union(*(spk_of[s] for s in mapped))
        assert not (train_spk & mapped_spk)
        assert not (train & mapped)
        covered |= mapped
    assert covered == set(scores.tolist())  # every trial mapped exactly once overall
    assert sum(len(m) for _, m in Spy.log) == scores.size


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10**6), st.booleans(), st.randoms(use_true_random=False))
def test_order_invariance(seed, pairs, rnd):
    scores, lab, groups = _trials(n_spk=16, seed=seed, pairs=pairs)
    a = crossval_llr(scores, lab, groups, "gaussian", n_folds=5)
    perm = rnd.sample(range(scores.size), scores.size)
    b = crossval_llr(scores[perm], lab[perm], groups[perm], "gaussian", n_folds=5)
    np.testing.assert_array_equal(b, a[perm])


def test_speaker_folds_balanced_and_order_free():
    spk = ["a"] * 5 + ["b"] * 4 + ["c"] * 3 + ["d"] * 2 + ["e"]
    f = speaker_folds(spk, 2)
    assert f == speaker_folds(spk[::-1], 2)
    load = [sum(1 for s in spk if f[s] == k) for k in (0, 1)]
    assert sorted(load) == [7, 8]


def test_labels_accept_strings():
    scores, lab, spk = _trials()
    words = np.where(lab, "target", "nontarget")
    np.testing.assert_array_equal(
        crossval_llr(scores, words, spk, "gaussian", 2), crossval_llr(scores, lab, spk, "gaussian", 2)
    )


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"n_folds": 1}, "n_folds must be"),
        ({"n_folds": 99}, "exceeds the number of distinct speakers"),
        ({"labels": np.array(["target", "impostor"] * 48)}, "'target' or 'nontarget'"),
        ({"labels": np.arange(96)}, "booleans, 0/1"),
        ({"groups": np.zeros((96, 3))}, "groups: expected shape"),
        ({"labels": np.ones(5)}, "labels: expected shape"),
    ],
)
def test_errors(kw, match):
    scores, lab, spk = _trials()
    args = {"scores": scores, "labels": lab, "groups": spk, "calibrator": "gaussian", "n_folds": 2}
    args.update(kw)
    with pytest.raises(VpevalError, match=match):
        crossval_llr(**args)


def test_fold_without_a_class_and_separable_fold_errors_name_the_fold():
    scores = np.array([1.0, 2.0, -1.0, -2.0, 0.5, -0.5])
    lab = np.array([1, 1, 0, 0, 1, 0])
    with pytest.raises(VpevalError, match=r"fold\(s\) \[\d\] leaves 0 target"):
        crossval_llr(scores[:4], lab[:4], np.array(list("aabb")), "pav", n_folds=2)
    with pytest.raises(VpevalError, match=r"without speaker fold\(s\) \[0\]: tar: at least two"):
        crossval_llr(scores, lab, np.array(list("aabbcc")), "gaussian", n_folds=3)
    with pytest.raises(SeparableScoresError, match=r"without speaker fold\(s\)"):
        crossval_llr(scores, lab, np.array(list("abcabc")), "logistic", n_folds=3)
