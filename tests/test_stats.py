"""Tests of vpeval.stats: speaker-level bootstrap and permutation chance floors."""

import math

import numpy as np
import pytest

from vpeval.errors import FewPermutationsWarning, VpevalError
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from vpeval.calibration.logistic import LogisticCalibrator
from vpeval.io.embeddings import EmbeddingSet
from vpeval.io.trials import Trials
from vpeval.metrics import d_ece, interp_eer, min_cllr, rocch_eer, zebra
from vpeval.metrics.linkage import lid, znorm_rows
from vpeval.pipeline import OneToN, build_trials, make_protocol
from vpeval.stats import (
    ALID,
    D_ECE,
    EER_INTERP,
    EER_ROCCH,
    EPS_MAX,
    LID_MAX,
    MIN_CLLR,
    RANK1,
    TRIAL_METRICS,
    VERDICT_CHANCE,
    VERDICT_LEAKS,
    StatMetric,
    StatsError,
    assess_one_to_n,
    assess_trials,
    bootstrap,
    bootstrap_ci,
    bootstrap_one_to_n,
    chance_floor,
    chance_floor_one_to_n,
    trial_speakers,
)
from vpeval.stats.one_to_n import _fit_null_slopes, _null_lids
from vpeval.stats.results import _p_value

PUBLIC = {
    "eer_rocch": lambda t: rocch_eer(t.tar, t.non),
    "eer_interp": lambda t: interp_eer(t.tar, t.non),
    "min_cllr": lambda t: min_cllr(t.tar, t.non),
    "d_ece": lambda t: d_ece(t.tar, t.non),
    "eps_max": lambda t: zebra(t.tar, t.non).eps_max,
}


def slow_twins():
    """The built-in metrics without their fast path: the generic path materialises every replicate."""
    return [StatMetric(m.key, m.name, m.unit, m.leak, PUBLIC[m.key]) for m in TRIAL_METRICS]


def simulated(seed, n_spk=8, n_tar=6, n_non=30, sep=1.0, ties=False):
    """Trials of ``n_spk`` probe speakers with per-speaker offsets; keys enroll = model, test = probe."""
    rng = np.random.default_rng(seed)
    b = rng.normal(0, 0.5, n_spk)
    tar = sep + b[:, None] + rng.normal(size=(n_spk, n_tar))
    non = rng.normal(size=(n_spk, n_non))
    scores = np.r_[tar.ravel(), non.ravel()]
    if ties:
        scores = np.round(scores, 0)
    spk = np.r_[np.repeat(np.arange(n_spk), n_tar), np.repeat(np.arange(n_spk), n_non)].astype(str)
    is_t = np.r_[np.ones(tar.size, bool), np.zeros(non.size, bool)]
    test = np.array([f"u{s}-{i % 3}" for i, s in enumerate(spk)])
    enroll = np.array([f"m{i % 5}" if not t else f"m{s}" for i, (s, t) in enumerate(zip(spk, is_t))])
    return Trials(scores, is_t, enroll, test), spk


# ------------------------------------------------------------------------------------- oracles


@pytest.mark.parametrize("ties", [False, True])
def test_bootstrap_fast_path_equals_generic_path(ties):
    t, spk = simulated(1, ties=ties)
    fast = bootstrap(t, TRIAL_METRICS, groups=spk, n_boot=40, seed=3)
    slow = bootstrap(t, slow_twins(), groups=spk, n_boot=40, seed=3)
    for k in fast:
        np.testing.assert_allclose(fast[k].replicates, slow[k].replicates, rtol=1e-12, atol=1e-12)
        assert fast[k].value == pytest.approx(PUBLIC[k](t), abs=1e-12)


@pytest.mark.parametrize("ties,within", [(False, "test"), (True, "test"), (False, "all"), (True, "enroll")])
def test_chance_fast_path_equals_generic_path(ties, within):
    t, _ = simulated(2, ties=ties)
    fast = chance_floor(t, TRIAL_METRICS, n_perm=30, seed=5, within=within)
    slow = chance_floor(t, slow_twins(), n_perm=30, seed=5, within=within)
    for k in fast:
        np.testing.assert_allclose(fast[k].null, slow[k].null, rtol=1e-12, atol=1e-12)
        assert fast[k].within == within


def test_bootstrap_replicate_is_the_metric_of_the_resampled_speakers():
    """Rebuild one replicate by hand: draw the speakers with the documented generator calls."""
    t, spk = simulated(4)
    res = bootstrap(t, EER_ROCCH, groups=spk, n_boot=3, seed=11)["eer_rocch"]
    names = np.unique(spk)
    draws = np.random.default_rng(11).integers(names.size, size=(3, names.size))
    for r in range(3):
        idx = np.concatenate([np.flatnonzero(spk == names[g]) for g in draws[r]])
        assert res.replicates[r] == pytest.approx(rocch_eer(t.scores[idx][t.is_target[idx]],
                                                            t.scores[idx][~t.is_target[idx]]), abs=1e-12)


def test_null_slope_equals_logistic_calibrator():
    rng = np.random.default_rng(0)
    s = rng.normal(size=(12, 7))
    z = znorm_rows(s)
    cols = rng.integers(7, size=(5, 12))
    tz = z[np.arange(12)[None, :], cols].sum(axis=1)
    a = _fit_null_slopes(z, tz, 12, np.zeros(5))
    for r in range(5):
        mask = np.zeros_like(z, bool)
        mask[np.arange(12), cols[r]] = True
        cal = LogisticCalibrator().fit(z[mask], z[~mask])
        assert a[r] == pytest.approx(cal.slope_, rel=1e-6, abs=1e-9)
    # with the ridge
    a = _fit_null_slopes(z, tz, 12, np.full(5, 1e-3))
    mask = np.zeros_like(z, bool)
    mask[np.arange(12), cols[0]] = True
    assert a[0] == pytest.approx(LogisticCalibrator(regularization=1e-3).fit(z[mask], z[~mask]).slope_, rel=1e-6)


def test_null_lids_equal_lid_of_refitted_slope():
    rng = np.random.default_rng(1)
    z = znorm_rows(rng.normal(size=(9, 6)))
    cols = rng.integers(6, size=(4, 9))
    out = _null_lids(z, cols)
    tz = z[np.arange(9)[None, :], cols].sum(axis=1)
    slopes = _fit_null_slopes(z, tz, 9, np.zeros(4))
    for r in range(4):
        np.testing.assert_allclose(out[r], lid(slopes[r] * z, cols[r]), atol=1e-9)


def _lids_one_row_at_a_time(z, cols, slopes):
    """The obvious oracle of _lids_at_slopes: one row at a time, each probe's scores shifted by the extreme
    that makes ``a (z - e)`` at most 0."""
    R, P = cols.shape
    N = z.shape[1]
    out = np.empty((R, P))
    for r in range(R):
        a = slopes[r]
        x = a * (z - (z.max(axis=1) if a >= 0 else z.min(axis=1))[:, None])
        out[r] = np.minimum((math.log(N) + x[np.arange(P), cols[r]] - np.log(np.exp(x).sum(axis=1))) / math.log(2.0),
                            math.log2(N))
    return out


@settings(max_examples=60, deadline=None)
@given(P=st.integers(1, 12), N=st.integers(2, 9), R=st.integers(1, 40), seed=st.integers(0, 2**32 - 1),
       chunk=st.sampled_from([1, 7, 50, 1 << 17]))
def test_lids_at_slopes_equal_the_row_at_a_time_oracle_to_the_last_bit(P, N, R, seed, chunk):
    import vpeval.stats.one_to_n as one_to_n

    rng = np.random.default_rng(seed)
    z = znorm_rows(rng.normal(size=(P, N)))
    cols = rng.integers(N, size=(R, P))
    slopes = rng.normal(size=R) * 4.0
    slopes[rng.random(R) < 0.2] = 0.0  # a zero slope: every model equally likely
    slopes[rng.random(R) < 0.1] = -0.0
    saved = one_to_n._LSE_CHUNK_ENTRIES
    one_to_n._LSE_CHUNK_ENTRIES = chunk  # chunks of one row up to all rows at once
    try:
        got = one_to_n._lids_at_slopes(z, cols, slopes)
    finally:
        one_to_n._LSE_CHUNK_ENTRIES = saved
    np.testing.assert_array_equal(got, _lids_one_row_at_a_time(z, cols, slopes))


def test_null_slopes_do_not_depend_on_which_labellings_are_fitted_together():
    # the Newton iterations run on chunks of labellings in reused work arrays (a labelling leaves its chunk when
    # it converges): a labelling's slope is the same fitted alone or among others, up to the rounding of the
    # matrix products, whose blocking depends on how many rows they hold
    rng = np.random.default_rng(5)
    s = rng.normal(size=(60, 40))
    s[np.arange(60), rng.integers(40, size=60)] += 1.5
    z = znorm_rows(s)
    tz = np.sort(rng.normal(size=50) * 8.0)
    lam = np.where(rng.random(50) < 0.3, 1e-3, 0.0)
    together = _fit_null_slopes(z, tz, 60, lam)
    alone = np.array([_fit_null_slopes(z, tz[i:i + 1], 60, lam[i:i + 1])[0] for i in range(50)])
    np.testing.assert_allclose(together, alone, rtol=0, atol=1e-12)


# ------------------------------------------------------------------------------------- hand cases


def test_interpolated_null_slopes_stay_within_the_stated_tolerance():
    # LID_SLOPE_GRID's comment (and docs/report.md) promise ALID within 1e-8 bits and LID_max within 1e-5 bits
    # of the exact refit of every labelling, for a 50 x 111 matrix and 200 labellings (largest seen on these
    # six: 3.3e-9 and 2.5e-6)
    from vpeval.metrics.linkage import znorm_rows
    from vpeval.stats.one_to_n import LID_SLOPE_GRID

    for seed in range(6):
        rng = np.random.default_rng(seed)
        s = rng.normal(size=(50, 111))
        s[np.arange(50), rng.integers(111, size=50)] += 2.5
        z = znorm_rows(s)
        cols = rng.integers(111, size=(200, 50))
        exact, grid = _null_lids(z, cols), _null_lids(z, cols, grid=LID_SLOPE_GRID)
        assert np.abs(exact.mean(axis=1) - grid.mean(axis=1)).max() < 1e-8
        assert np.abs(exact.max(axis=1) - grid.max(axis=1)).max() < 1e-5


def test_p_value_hand_computed():
    null = np.array([0.1, 0.2, 0.3, 0.4])
    assert _p_value(null, 0.3, "higher") == pytest.approx(3 / 5)  # 0.3 and 0.4, plus one
    assert _p_value(null, 0.3, "lower") == pytest.approx(4 / 5)
    assert _p_value(null, 0.05, "lower") == pytest.approx(1 / 5)
    # two-sided about the median (inverted_cdf median of 4 values = 0.2): |0.1-0.2|..: 0.1, 0, 0.1, 0.2
    assert _p_value(null, 0.45, "two-sided") == pytest.approx(1 / 5)
    assert _p_value(null, 0.3, "two-sided") == pytest.approx(4 / 5)


def test_separated_scores_leak_with_smallest_p():
    t = Trials(np.r_[np.arange(10, 20), np.arange(10)].astype(float), np.r_[np.ones(10, bool), np.zeros(10, bool)])
    res = chance_floor(t, TRIAL_METRICS, n_perm=99, seed=1, within="all")
    for k, r in res.items():
        assert r.verdict == VERDICT_LEAKS, k
        assert r.p_value == pytest.approx(0.01), k
        assert r.p_value_floor == pytest.approx(0.01) and r.to_dict()["p_value_floor"] == pytest.approx(0.01), k
    # too few permutations to ever reach alpha: said, not silently "indistinguishable from chance"
    with pytest.warns(FewPermutationsWarning, match="no metric can be called a leak"):
        few = chance_floor(t, TRIAL_METRICS, n_perm=15, seed=1, within="all")
    assert all(r.verdict == VERDICT_CHANCE for r in few.values())
    assert res["eer_rocch"].floor == res["eer_rocch"].q05  # lower leaks: the 5th percentile
    assert res["eps_max"].floor == res["eps_max"].q95


def test_identical_units_give_a_degenerate_interval():
    # Every speaker has the same trials: any resample gives the same counts up to a factor.
    one = ([2.0, 1.0, 0.0, -1.0], [True, True, False, False])
    scores = np.tile(one[0], 4)
    is_t = np.tile(one[1], 4)
    groups = np.repeat(list("abcd"), 4)
    r = bootstrap(Trials(scores, is_t), [EER_ROCCH, MIN_CLLR, D_ECE], groups=groups, n_boot=25)
    for v in r.values():
        assert v.low == v.high == pytest.approx(v.value)


def test_percentile_interval_is_order_statistics():
    t, spk = simulated(6)
    r = bootstrap(t, EER_INTERP, groups=spk, n_boot=40, seed=2, level=0.9)["eer_interp"]
    x = np.sort(r.replicates)
    assert r.low == x[math.ceil(40 * 0.05) - 1]
    assert r.high == x[math.ceil(40 * 0.95) - 1]


# ------------------------------------------------------------------------------------- must hold (issue 7)


def test_eps_max_identical_distributions_is_indistinguishable_from_chance():
    rng = np.random.default_rng(7)
    n_spk, per = 10, 5  # 50 targets
    tar = rng.normal(size=n_spk * per)
    non = rng.normal(size=(n_spk * per, 20))
    scores = np.r_[tar, non.ravel()]
    is_t = np.r_[np.ones(tar.size, bool), np.zeros(non.size, bool)]
    probe = np.r_[np.arange(tar.size), np.repeat(np.arange(tar.size), 20)].astype(str)
    t = Trials(scores, is_t, None, probe)
    r = chance_floor(t, EPS_MAX, n_perm=200, seed=0)["eps_max"]
    assert r.within == "test"
    assert r.value > 0  # sampling noise alone gives eps_max > 0 ...
    assert r.value <= r.floor  # ... inside the chance floor
    assert r.verdict == VERDICT_CHANCE


def test_eps_max_clearly_separated_leaks():
    rng = np.random.default_rng(8)
    tar = rng.normal(3.0, 1.0, 50)
    non = rng.normal(0.0, 1.0, (50, 20))
    is_t = np.r_[np.ones(50, bool), np.zeros(1000, bool)]
    probe = np.r_[np.arange(50), np.repeat(np.arange(50), 20)].astype(str)
    r = chance_floor(Trials(np.r_[tar, non.ravel()], is_t, None, probe), EPS_MAX, n_perm=200)["eps_max"]
    assert r.value > r.floor
    assert r.verdict == VERDICT_LEAKS


def test_false_leak_rate_under_perfect_secrecy_is_near_alpha():
    leaks = 0
    for seed in range(40):
        rng = np.random.default_rng(100 + seed)
        t = Trials(rng.normal(size=300), np.r_[np.ones(50, bool), np.zeros(250, bool)])
        leaks += chance_floor(t, EPS_MAX, n_perm=99, seed=seed, within="all")["eps_max"].verdict == VERDICT_LEAKS
    assert leaks <= 7  # expected 2 of 40 at alpha = 0.05; P(>= 8) < 0.001


@pytest.mark.slow
def test_bootstrap_eer_coverage_of_the_true_eer():
    """100 simulated systems x 200 replicates; the 95 % interval must cover the true EER ~95 % of the time.

    Targets N(mu + b_s, 1), non-targets N(c_s, 1) with speaker effects b_s ~ N(0, 0.7^2), c_s ~ N(0, 0.5^2):
    the population EER is Phi(-mu / (sqrt(1 + 0.49) + sqrt(1 + 0.25))).
    """
    K, mt, mn, mu = 30, 10, 50, 2.0
    true = norm.cdf(-mu / (math.sqrt(1.49) + math.sqrt(1.25)))
    hits = {"eer_interp": 0, "eer_rocch": 0}
    for rep in range(100):
        rng = np.random.default_rng(1000 + rep)
        b, c = rng.normal(0, 0.7, K), rng.normal(0, 0.5, K)
        tar = (mu + b[:, None] + rng.normal(size=(K, mt))).ravel()
        non = (c[:, None] + rng.normal(size=(K, mn))).ravel()
        g = np.r_[np.repeat(np.arange(K), mt), np.repeat(np.arange(K), mn)].astype(str)
        t = Trials(np.r_[tar, non], np.r_[np.ones(tar.size, bool), np.zeros(non.size, bool)])
        r = bootstrap(t, [EER_INTERP, EER_ROCCH], groups=g, n_boot=200, seed=rep)
        for k in hits:
            hits[k] += r[k].low <= true <= r[k].high
    for k, h in hits.items():
        assert 88 <= h <= 99, (k, h)


def test_trial_bootstrap_is_narrower_than_speaker_bootstrap_with_speaker_effects():
    rng = np.random.default_rng(3)
    K = 15
    b = rng.normal(0, 1.5, K)
    tar = (2 + b[:, None] + rng.normal(size=(K, 20))).ravel()
    non = rng.normal(size=(K, 40)).ravel()
    g = np.r_[np.repeat(np.arange(K), 20), np.repeat(np.arange(K), 40)].astype(str)
    t = Trials(np.r_[tar, non], np.r_[np.ones(tar.size, bool), np.zeros(non.size, bool)])
    spk = bootstrap(t, EER_ROCCH, groups=g, n_boot=300)["eer_rocch"]
    tri = bootstrap(t, EER_ROCCH, unit="trial", n_boot=300)["eer_rocch"]
    assert (spk.high - spk.low) > 1.3 * (tri.high - tri.low)


# ------------------------------------------------------------------------------------- properties


def test_same_seed_identical_and_seed_reported():
    t, spk = simulated(9)
    a = assess_trials(t, groups=spk, n_boot=30, n_perm=30, seed=4)
    b = assess_trials(t, groups=spk, n_boot=30, n_perm=30, seed=4)
    c = assess_trials(t, groups=spk, n_boot=30, n_perm=30, seed=5)
    for x, y in zip(a, b):
        assert x.to_dict() == y.to_dict()
        np.testing.assert_array_equal(x.boot.replicates, y.boot.replicates)
        np.testing.assert_array_equal(x.chance.null, y.chance.null)
        assert x.boot.n_boot == 30 and x.boot.seed == 4 and x.chance.n_perm == 30 and x.chance.seed == 4
    assert any(not np.array_equal(x.boot.replicates, z.boot.replicates) for x, z in zip(a, c))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), perm_seed=st.integers(0, 10_000), ties=st.booleans())
def test_order_invariance(seed, perm_seed, ties):
    t, spk = simulated(seed, n_spk=4, n_tar=3, n_non=8, ties=ties)
    p = np.random.default_rng(perm_seed).permutation(len(t))
    t2 = Trials(t.scores[p], t.is_target[p], t.enroll[p], t.test[p])
    for within in ("test", "all"):
        a = assess_trials(t, groups=spk, n_boot=15, n_perm=15, within=within)
        b = assess_trials(t2, groups=spk[p], n_boot=15, n_perm=15, within=within)
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x.boot.replicates, y.boot.replicates)
            np.testing.assert_array_equal(x.chance.null, y.chance.null)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_monotone_transform_invariance(seed):
    t, spk = simulated(seed, n_spk=4, n_tar=3, n_non=8)
    t2 = Trials(np.exp(2 * t.scores) - 5, t.is_target, t.enroll, t.test)
    a = assess_trials(t, groups=spk, n_boot=15, n_perm=15)
    b = assess_trials(t2, groups=spk, n_boot=15, n_perm=15)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x.boot.replicates, y.boot.replicates, atol=1e-12)
        np.testing.assert_allclose(x.chance.null, y.chance.null, atol=1e-12)


def test_renaming_speakers_keeping_their_order_changes_nothing():
    t, spk = simulated(12)
    a = bootstrap(t, groups=spk, n_boot=20)
    b = bootstrap(t, groups=np.char.add("spk-", spk), n_boot=20)
    for k in a:
        np.testing.assert_array_equal(a[k].replicates, b[k].replicates)


# ------------------------------------------------------------------------------------- pipeline trials


def toy_set():
    rng = np.random.default_rng(0)
    spk = [s for s in "ABCDE" for _ in range(4)] + ["F", "G"]
    utt = [f"{s}-{i}" for s in "ABCDE" for i in range(4)] + ["F-0", "G-0"]
    centres = {s: rng.normal(size=8) for s in "ABCDEFG"}
    emb_o = np.array([centres[s] + 0.3 * rng.normal(size=8) for s in spk])
    emb_a = np.array([0.2 * centres[s] + rng.normal(size=8) for s in spk])
    return EmbeddingSet(np.r_[emb_o, emb_a], utt * 2, spk * 2, ["original"] * 22 + ["anonymized"] * 22, "toy")


def test_trial_speakers_of_every_trial_type():
    es = toy_set()
    p = make_protocol(es)
    tr = build_trials(es, ["oa", "oaaa", "aa-centroid"], protocol=p)
    oa = trial_speakers(tr["oa"], p)
    assert set(oa) == {"A", "B", "C", "D", "E"}
    assert (oa[tr["oa"].is_target] == tr["oa"].enroll[tr["oa"].is_target]).all()
    oaaa = trial_speakers(tr["oaaa"], p)
    assert set(oaaa) == {"A", "B", "C", "D", "E"}
    np.testing.assert_array_equal(trial_speakers(tr["aa-centroid"]), tr["aa-centroid"].test)
    mapping = dict(zip(p.utterance_id.tolist(), p.speaker_id.tolist()))
    np.testing.assert_array_equal(trial_speakers(tr["oa"], mapping), oa)
    np.testing.assert_array_equal(trial_speakers(tr["oa"], side="enroll"), tr["oa"].enroll)
    with pytest.raises(StatsError, match="speaker_of"):
        trial_speakers(tr["oa"])
    with pytest.raises(StatsError, match="not in the utterance"):
        trial_speakers(tr["oa"], {"x": "y"})
    # oaaa (Beyond-EER): each probe's row holds its target (vs pseudo-Alice) and its impostors -> within test
    r = chance_floor(tr["oaaa"], EER_INTERP.with_leak("two-sided"), n_perm=20)["eer_interp"]
    assert r.within == "test" and r.floor is None and r.leak == "two-sided"
    r = chance_floor(tr["oa"], EER_ROCCH, n_perm=20)["eer_rocch"]
    assert r.within == "test"


# ------------------------------------------------------------------------------------- 1-to-N


def one_to_n_toy(seed=0, P=24, N=9, sep=2.0):
    rng = np.random.default_rng(seed)
    spk = np.array([f"s{i % 6}" for i in range(P)])
    ti = np.array([i % 6 for i in range(P)])
    s = rng.normal(size=(P, N))
    s[np.arange(P), ti] += sep
    return OneToN(s, ti, np.array([f"u{i:03d}" for i in range(P)]), spk, np.array([f"s{j}" for j in range(N)]),
                  "original", "anonymized")


def test_one_to_n_bootstrap_and_chance():
    m = one_to_n_toy()
    lidv = lid(1.5 * znorm_rows(m.scores), m.true_index)
    res = assess_one_to_n(m, lidv, n_boot=50, n_perm=50)
    by = {a.key: a for a in res}
    assert set(by) == {"rank1", "alid", "lid_max"}
    assert by["alid"].boot.value == pytest.approx(lidv.mean())
    assert by["lid_max"].boot.value == pytest.approx(lidv.max())
    assert by["alid"].boot.resampled == "probe speaker" and by["alid"].boot.n_units == 6
    for a in res:
        assert a.boot.low <= a.boot.value <= a.boot.high or a.key == "lid_max"
        assert a.chance.verdict == VERDICT_LEAKS
    assert by["lid_max"].boot.high <= lidv.max()
    # rank-1 alone without LIDs
    assert [a.key for a in assess_one_to_n(m, None, n_boot=10, n_perm=10)] == ["rank1"]
    with pytest.raises(StatsError, match="lid="):
        bootstrap_one_to_n(m, None, metrics=[ALID])


def test_one_to_n_uninformative_is_chance():
    m = one_to_n_toy(seed=3, P=60, N=12, sep=0.0)
    lidv = lid(0.3 * znorm_rows(m.scores), m.true_index)
    res = chance_floor_one_to_n(m, lidv, n_perm=200, seed=1)
    assert res["rank1"].verdict == VERDICT_CHANCE
    assert res["alid"].verdict == VERDICT_CHANCE
    # under the null, the rank-1 rate averages 1/N
    assert res["rank1"].null.mean() == pytest.approx(1 / 12, abs=0.01)


def test_one_to_n_row_order_invariance():
    m = one_to_n_toy(seed=5)
    lidv = lid(znorm_rows(m.scores), m.true_index)
    p = np.random.default_rng(0).permutation(m.n_probes)
    m2 = OneToN(m.scores[p], m.true_index[p], m.probe_id[p], m.probe_speaker[p], m.enrolled_speaker,
                "original", "anonymized")
    a = assess_one_to_n(m, lidv, n_boot=20, n_perm=20)
    b = assess_one_to_n(m2, lidv[p], n_boot=20, n_perm=20)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x.boot.replicates, y.boot.replicates, atol=1e-12)
        np.testing.assert_allclose(x.chance.null, y.chance.null, atol=1e-12)


def test_bootstrap_ci_dispatch():
    m = one_to_n_toy()
    assert bootstrap_ci(m, RANK1, n_boot=10).key == "rank1"
    lidv = lid(znorm_rows(m.scores), m.true_index)
    assert bootstrap_ci(m, LID_MAX, n_boot=10, lid=lidv).value == pytest.approx(lidv.max())
    t, spk = simulated(0)

    def mean_target_score(trials):
        return float(trials.tar.mean())

    r = bootstrap_ci(t, mean_target_score, groups=spk, n_boot=30)
    assert r.key == "mean_target_score" and r.value == pytest.approx(t.tar.mean())
    with pytest.raises(StatsError, match="1-to-N metric"):
        bootstrap_ci(t, RANK1)
    with pytest.raises(StatsError, match="must be Trials"):
        bootstrap_ci(m, EER_ROCCH)


# ------------------------------------------------------------------------------------- errors


def test_errors():
    t, spk = simulated(0)
    with pytest.raises(StatsError, match="groups=trial_speakers"):
        bootstrap(t)
    with pytest.raises(StatsError, match="n_boot"):
        bootstrap(t, groups=spk, n_boot=0)
    with pytest.raises(StatsError, match="level"):
        bootstrap(t, groups=spk, level=1.5)
    with pytest.raises(StatsError, match="seed"):
        bootstrap(t, groups=spk, seed=-1)
    with pytest.raises(StatsError, match="shape"):
        bootstrap(t, groups=spk[:-1])
    with pytest.raises(StatsError, match="leak"):
        EER_ROCCH.with_leak("up")
    with pytest.raises(StatsError, match="nothing to permute"):
        # each test key holds one class only
        chance_floor(Trials([1.0, 0.0], [True, False], None, ["a", "b"]), within="test")
    with pytest.raises(StatsError, match="target and one non-target"):
        chance_floor(Trials([1.0, 0.0], [True, True]), within="all")
    with pytest.raises(VpevalError, match="NaN"):  # a Trials object cannot hold NaN scores
        bootstrap(Trials([np.nan, 0.0], [True, False]), unit="trial")
    with pytest.raises(StatsError, match="distinct"):
        bootstrap(t, [EER_ROCCH, EER_ROCCH], groups=spk)
    with pytest.raises(StatsError, match="ProbeMetric"):
        bootstrap_one_to_n(one_to_n_toy(), metrics=[EER_ROCCH])
    # a unit structure where replicates lack a class is redrawn and counted
    t3 = Trials([1.0, 0.5, 0.0, -1.0], [True, True, False, False])
    r = bootstrap(t3, EER_ROCCH, groups=["a", "a", "b", "b"], n_boot=50)["eer_rocch"]
    assert r.n_redrawn > 0 and r.replicates.size == 50
    assert isinstance(StatsError("x"), ValueError)


def test_trial_unit_order_invariance_and_minus_inf_lid():
    t, _ = simulated(3)
    p = np.random.default_rng(1).permutation(len(t))
    t2 = Trials(t.scores[p], t.is_target[p], t.enroll[p], t.test[p])
    a = bootstrap(t, EER_ROCCH, unit="trial", n_boot=20)["eer_rocch"]
    b = bootstrap(t2, EER_ROCCH, unit="trial", n_boot=20)["eer_rocch"]
    np.testing.assert_array_equal(a.replicates, b.replicates)
    m = one_to_n_toy()
    lidv = np.zeros(m.n_probes)
    lidv[0] = -np.inf
    r = bootstrap_one_to_n(m, lidv, metrics=[ALID], n_boot=50)["alid"]
    assert not np.isnan(r.replicates).any()
    assert np.isinf(r.replicates).any() and (r.replicates[np.isfinite(r.replicates)] == 0).all()


@pytest.mark.parametrize("ties", [False, True])
def test_fast_paths_with_balanced_classes(ties):
    """Many targets: the run-merging path (pure-target and pure-non-target runs) against the generic path."""
    rng = np.random.default_rng(21)
    scores = np.r_[rng.normal(0.5, 1, 120), rng.normal(0, 1, 100)]
    if ties:
        scores = np.round(scores, 1)
    is_t = np.r_[np.ones(120, bool), np.zeros(100, bool)]
    spk = (np.arange(220) % 11).astype(str)
    t = Trials(scores, is_t)
    fast = chance_floor(t, TRIAL_METRICS, n_perm=25, seed=2, within="all")
    slow = chance_floor(t, slow_twins(), n_perm=25, seed=2, within="all")
    fb = bootstrap(t, TRIAL_METRICS, groups=spk, n_boot=25, seed=2)
    sb = bootstrap(t, slow_twins(), groups=spk, n_boot=25, seed=2)
    for k in fast:
        np.testing.assert_allclose(fast[k].null, slow[k].null, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(fb[k].replicates, sb[k].replicates, rtol=1e-12, atol=1e-12)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_duplicating_every_trial_keeps_plain_pav_replicates(seed):
    """Doubling every trial doubles every count: EERs, minCllr and D_ECE do not move; eps_max (Laplace) may."""
    t, spk = simulated(seed, n_spk=4, n_tar=3, n_non=8)
    t2 = Trials(np.r_[t.scores, t.scores], np.r_[t.is_target, t.is_target])
    ms = [EER_ROCCH, EER_INTERP, MIN_CLLR, D_ECE]
    a = bootstrap(t, ms, groups=spk, n_boot=15, seed=seed)
    b = bootstrap(t2, ms, groups=np.r_[spk, spk], n_boot=15, seed=seed)
    for k in a:
        np.testing.assert_allclose(a[k].replicates, b[k].replicates, atol=1e-12)
