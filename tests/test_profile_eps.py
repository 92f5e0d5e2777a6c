"""The privacy profile eps(delta) (vpeval.metrics.profile): hand cases, the brute-force oracle, properties,
the worst-case paper's counterexample, and the simultaneous bounds' guarantees."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpeval.errors import InvalidScoresError
from vpeval.metrics.profile import (DELTA_GRID, ProfileCounts, design_effect, privacy_profile_bits, profile_bounds,
                                    total_variation)

from helpers import shuffled
import oracles

small_scores = st.lists(st.integers(-4, 4).map(float), min_size=1, max_size=7)


def test_hand_cases():
    # targets outside, non-targets inside: the two-tailed region s < 1 or s >= 3 holds every target and no
    # non-target (no threshold does), so eps is infinite at every delta < 1
    assert privacy_profile_bits([3.0, 0.0], [1.0, 2.0], 0.0) == math.inf
    assert privacy_profile_bits([3.0, 0.0], [1.0, 2.0], 0.99) == math.inf
    # one target above both non-targets, one between: s >= 3 holds 1/2 of the targets and no non-target
    assert privacy_profile_bits([3.0, 1.5], [1.0, 2.0], 0.49) == math.inf
    assert privacy_profile_bits([3.0, 1.5], [1.0, 2.0], 0.5) == 0.0
    # identical distributions: 0 at every delta, also at delta = 0
    assert privacy_profile_bits([1.0, 2.0], [2.0, 1.0], 0.0) == 0.0
    # tar {0, 1, 1, 1}, non {0, 0, 0, 1}: s >= 1 holds 3/4 against 1/4; at delta = 1/4 the ratio (3/4 - 1/4)/(1/4) = 2
    assert privacy_profile_bits([0.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0], 0.25) == pytest.approx(1.0, abs=1e-12)
    # at delta = 0: ln 3 / ln 2 bits
    assert privacy_profile_bits([0.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0], 0.0) == pytest.approx(math.log2(3))


def test_ties_are_one_block():
    # all scores tied: no region separates anything
    assert privacy_profile_bits([1.0, 1.0], [1.0, 1.0, 1.0], 0.0) == 0.0


@settings(max_examples=150, deadline=None)
@given(small_scores, small_scores, st.sampled_from([0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75]))
def test_matches_brute_force(tar, non, delta):
    assert privacy_profile_bits(tar, non, delta) == pytest.approx(oracles.privacy_profile_bits(tar, non, delta),
                                                                  rel=1e-9, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(small_scores, small_scores, st.randoms(use_true_random=False))
def test_properties(tar, non, rnd):
    d = np.array([0.0, 0.1, 0.3])
    base = privacy_profile_bits(tar, non, d)
    t2, n2 = shuffled(rnd, tar, non)
    np.testing.assert_array_equal(privacy_profile_bits(t2, n2, d), base)  # order
    np.testing.assert_array_equal(privacy_profile_bits(np.exp(tar), np.exp(non), d), base)  # increasing map
    np.testing.assert_array_equal(privacy_profile_bits(-np.array(tar), -np.array(non), d), base)  # direction
    np.testing.assert_allclose(privacy_profile_bits(tar * 2, non * 2, d), base, rtol=1e-12)  # duplication
    np.testing.assert_array_equal(privacy_profile_bits(non, tar, d), base)  # swapping roles
    assert all(a >= b - 1e-12 for a, b in zip(base, base[1:]))  # non-increasing in delta
    tv = total_variation(tar, non)
    if tv < 1.0:  # at full separation some region holds all of one class and none of the other
        assert privacy_profile_bits(tar, non, tv) == 0.0


def test_relation_to_eps_max():
    # eps over thresholds at delta = 0 <= PAV eps_max (no smoothing) <= eps(0) over intervals
    rng = np.random.default_rng(3)
    tar = np.round(rng.normal(1.0, 1.0, 300), 1)
    non = np.round(rng.normal(0.0, 1.0, 900), 1)
    tar_llr, non_llr = oracles.pav_llr(tar, non, laplace=False)
    emax = max(np.abs(np.r_[tar_llr, non_llr])) / math.log(2)
    assert privacy_profile_bits(tar, non, 0.0) >= emax - 1e-9
    # threshold regions alone at delta = 0: ln of the largest TPR/FPR or FNR/TNR ratio, at most eps_max
    t = np.unique(np.r_[tar, non])
    tpr = (tar[None, :] >= t[:, None]).mean(1)
    fpr = (non[None, :] >= t[:, None]).mean(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.r_[tpr / fpr, fpr / tpr, (1 - tpr) / (1 - fpr), (1 - fpr) / (1 - tpr)]
    thr = np.log2(np.nanmax(r[np.isfinite(r)]))
    assert thr <= emax + 1e-9


def test_counterexample_needs_two_tailed_regions():
    # worst-case paper, Fig. 1: targets N(0, 2), non-targets N(0, 1) (variances); both tails favour the target
    rng = np.random.default_rng(0)
    tar = rng.normal(0.0, math.sqrt(2.0), 100_000)
    non = rng.normal(0.0, 1.0, 100_000)
    eps = privacy_profile_bits(tar, non, 0.05)
    # the oracle: the two-tailed region |s| >= c with the same delta, from the two normal laws
    from scipy.stats import norm
    c = np.linspace(0.0, 4.0, 4001)
    pt, pn = 2 * norm.sf(c / math.sqrt(2.0)), 2 * norm.sf(c)
    true = np.log2(np.max(np.where(pt > 0.05, (pt - 0.05) / pn, 0)))
    assert eps == pytest.approx(true, abs=0.12)
    # on the data: at least the best symmetric two-tailed region |s| >= c
    cs = np.linspace(1.5, 3.0, 301)
    et = np.array([(np.abs(tar) >= c).mean() for c in cs])
    en = np.array([(np.abs(non) >= c).mean() for c in cs])
    assert eps >= np.log2(np.max((et - 0.05) / en)) - 1e-9
    # a single threshold (either tail alone) shows much less: the one-tailed profile is smaller
    one_tail = np.log2(np.max(np.where(pt / 2 > 0.05, (pt / 2 - 0.05) / (pn / 2), 0)))
    assert eps > one_tail + 0.2


def test_bounds_bracket_the_estimate_and_truth():
    rng = np.random.default_rng(1)
    tar, non = rng.normal(0.5, 1.0, 2000), rng.normal(0.0, 1.0, 20_000)
    lo, hi = profile_bounds(tar, non, DELTA_GRID)
    est = privacy_profile_bits(tar, non, DELTA_GRID)
    assert (lo <= est + 1e-9).all() and (est <= hi + 1e-9).all()
    assert np.isinf(hi[0]) and np.isfinite(hi[-4:]).all()
    # the true profile of N(0.5, 1) vs N(0, 1) at delta = 0.05 (threshold regions suffice: monotone LR)
    from scipy.stats import norm
    t = np.linspace(-6, 8, 20001)
    pt, pn = norm.sf(t - 0.5), norm.sf(t)
    true = np.log2(np.max(np.where(pt > 0.05, (pt - 0.05) / pn, 0)))
    lo5, hi5 = profile_bounds(tar, non, 0.05)
    assert lo5 <= true <= hi5


def test_bounds_under_perfect_secrecy_certify_at_large_sizes():
    # the score-file size: 10,000 targets and 100,000 non-targets from one law
    rng = np.random.default_rng(2)
    lo, hi = profile_bounds(rng.normal(size=10_000), rng.normal(size=100_000), 0.01)
    assert lo == 0.0 and hi <= math.log2(10)


def test_bounds_see_a_fully_separated_share():
    # 5 % of targets above every non-target: at delta = 0.01 the lower bound must exceed 3.32 bits
    rng = np.random.default_rng(4)
    tar = np.r_[rng.normal(size=1900), rng.normal(20.0, 1.0, 100)]
    non = rng.normal(size=20_000)
    lo, hi = profile_bounds(tar, non, 0.01)
    assert lo > math.log2(10) and hi == math.inf


def test_more_members_and_design_effects_widen():
    rng = np.random.default_rng(5)
    tar, non = rng.normal(0.3, 1.0, 3000), rng.normal(size=30_000)
    lo1, hi1 = profile_bounds(tar, non, 0.05)
    lo2, hi2 = profile_bounds(tar, non, 0.05, n_members=10)
    lo3, hi3 = profile_bounds(tar, non, 0.05, deff_tar=3.0, deff_non=3.0)
    assert lo2 <= lo1 <= hi1 <= hi2 and lo3 <= lo1 and hi1 <= hi3


def test_design_effect():
    rng = np.random.default_rng(6)
    spk = np.repeat(np.arange(100), 20)
    s_ind = rng.normal(size=2000)
    s_clu = rng.normal(size=100)[spk] * 1.5 + rng.normal(size=2000) * 0.5
    lab = np.tile(np.r_[np.ones(5, bool), np.zeros(15, bool)], 100)
    d_ind = design_effect(s_ind, lab, spk)
    d_clu = design_effect(s_clu, lab, spk)
    assert max(d_ind) < 2.0 and min(d_clu) > 2.5 and d_clu[1] > d_clu[0]  # 15 trials a cluster against 5
    assert design_effect(s_ind, lab, np.zeros(2000))[0] == 500.0  # one cluster: one effective trial


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_design_effect_does_not_depend_on_the_order_of_the_trials(seed):
    """Bit for bit, both forms (a shuffled Kaldi key and score file changed its last digits: a breaker's find)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 400))
    spk = rng.integers(0, int(rng.integers(2, 30)), n)
    s = np.round(rng.normal(size=n) + 0.3 * spk, 1)  # ties and clusters
    lab = rng.random(n) < 0.3
    perm = rng.permutation(n)
    assert design_effect(s, lab, spk) == design_effect(s[perm], lab[perm], spk[perm])
    for a, b in zip(design_effect(s, lab, spk, by_share=True), design_effect(s[perm], lab[perm], spk[perm],
                                                                               by_share=True)):
        assert all(np.array_equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("bad", [-0.1, 1.0, float("nan"), [[0.1]]])
def test_bad_delta(bad):
    with pytest.raises(InvalidScoresError, match="delta"):
        privacy_profile_bits([1.0], [0.0], bad)


def test_bad_options():
    with pytest.raises(InvalidScoresError, match="alpha"):
        profile_bounds([1.0], [0.0], 0.1, alpha=1.5)
    with pytest.raises(InvalidScoresError, match="deff_tar"):
        profile_bounds([1.0], [0.0], 0.1, deff_tar=0.5)
    with pytest.raises(InvalidScoresError, match="n_members"):
        profile_bounds([1.0], [0.0], 0.1, n_members=0)


def test_design_effect_curve_reads_the_tails():
    # speaker effects in the middle of the range, none in the top tail: a perfectly separating attacker's
    # non-targets share their speaker's level, but the few above the rest come one per speaker
    rng = np.random.default_rng(7)
    spk = np.repeat(np.arange(50), 40)
    s = rng.normal(size=50)[spk] * 1.5 + rng.normal(size=2000) * 0.5
    lab = np.zeros(2000, bool)
    lab[::40] = True
    scalar = design_effect(s, lab, spk)[1]
    shares, values = design_effect(s, lab, spk, by_share=True)[1]
    assert (np.diff(shares) > 0).all() and (values >= 1).all() and shares[-1] == 0.5
    assert values.max() == pytest.approx(scalar, rel=0.5)
    # a curve is read at the shares up to twice the region's: bounds with the curve lie between no design
    # effect and the scalar one
    tar, non = s[lab] + 3.0, s[~lab]
    curve = design_effect(np.r_[tar, non], np.r_[np.ones(50, bool), np.zeros(1950, bool)], np.r_[spk[lab], spk[~lab]],
                          by_share=True)
    lo1 = profile_bounds(tar, non, 0.05)[0]
    lo_c = profile_bounds(tar, non, 0.05, deff_tar=curve[0], deff_non=curve[1])[0]
    lo_s = profile_bounds(tar, non, 0.05, deff_tar=max(curve[0][1]), deff_non=max(curve[1][1]))[0]
    assert lo_s <= lo_c <= lo1


@pytest.mark.parametrize("bad", [([0.1, 0.05], [2.0, 2.0]), ([0.1], [0.5]), ([0.7], [2.0]), ([0.1, 0.2], [2.0]),
                                 "x"])
def test_bad_design_effect_curves(bad):
    with pytest.raises(InvalidScoresError, match="deff_non"):
        profile_bounds([1.0, 2.0], [0.0, 0.5], 0.1, deff_non=bad)


@settings(max_examples=80, deadline=None)
@given(small_scores, small_scores, st.sampled_from([0.0, 0.5, 1.0, 3.32]))
def test_share_beyond_is_where_the_profile_meets_the_budget(tar, non, b):
    from vpeval.metrics.profile import share_beyond

    d = share_beyond(tar, non, b)
    assert 0.0 <= d <= 1.0  # 1 at perfect separation
    if d < 1.0:  # (the float d is within rounding of a share: compared just above it)
        assert oracles.privacy_profile_bits(tar, non, d + 1e-12) <= b + 1e-9
    if d > 1e-9:
        assert oracles.privacy_profile_bits(tar, non, d - 1e-9) > b


@settings(max_examples=100, deadline=None)
@given(small_scores, small_scores)
def test_dominance_counts_match_brute_force(tar, non):
    """For each count k of one class, the most trials of the other class in any interval (or two-tailed region)
    holding at most k of the first: the counts the bounds are maximised over."""
    from vpeval.blocks import tie_blocks
    from vpeval.metrics.profile import _dominance

    b = tie_blocks(np.array(tar), np.array(non))
    for n_p_blocks, n_q_blocks in ((b.n_tar, b.n_non), (b.n_non, b.n_tar)):
        cp, cq = np.r_[0, np.cumsum(n_p_blocks)], np.r_[0, np.cumsum(n_q_blocks)]
        K = cp.size - 1
        ks = np.arange(int(cq[-1]) + 1)
        m_int, m_two, m_low, m_two_low = _dominance(cp, cq, ks)
        assert (m_int == m_low).all() and (m_two == m_two_low).all()  # exact below 2 STRIDE_DIV
        for k in ks:
            best_in = max(cp[j] - cp[i] for i in range(K + 1) for j in range(i, K + 1) if cq[j] - cq[i] <= k)
            best_out = max(cp[-1] - (cp[j] - cp[i]) for i in range(K + 1) for j in range(i, K + 1)
                           if cq[-1] - (cq[j] - cq[i]) <= k)
            assert m_int[k] == best_in
            assert m_two[k] == best_out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-6, 6).map(float), min_size=5, max_size=40),
       st.lists(st.integers(-6, 6).map(float), min_size=5, max_size=40), st.integers(1, 3))
def test_strided_dominance_brackets_the_exact_counts(tar, non, div):
    """With starts read at a stride, the high counts are upper values and the low ones attained."""
    import vpeval.metrics.profile as P
    from vpeval.blocks import tie_blocks

    b = tie_blocks(np.array(tar), np.array(non))
    cp, cq = np.r_[0, np.cumsum(b.n_tar)], np.r_[0, np.cumsum(b.n_non)]
    ks = np.arange(int(cq[-1]) + 1)
    exact = P._dominance(cp, cq, ks)
    old = P.STRIDE_DIV
    P.STRIDE_DIV = div
    try:
        hi, two_hi, lo, two_lo = P._dominance(cp, cq, ks)
    finally:
        P.STRIDE_DIV = old
    assert (lo <= exact[0]).all() and (exact[0] <= hi).all()
    assert (two_lo <= exact[1]).all() and (exact[1] <= two_hi).all()



@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-30, 30).map(float), min_size=1, max_size=300),
       st.lists(st.integers(-30, 30).map(float), min_size=1, max_size=300), st.integers(1, 4))
def test_compiled_profile_loops_give_the_numpy_numbers(tar, non, div):
    """The compiled best-region step and dominance passes (used from JIT_MIN_BLOCKS tie blocks on) give exactly
    the NumPy path's counts and profile, strided counts included (STRIDE_DIV lowered so that they occur)."""
    pytest.importorskip("numba")
    import vpeval.metrics.profile as P

    def run(jit: bool):
        old = (P.JIT_MIN_BLOCKS, P.STRIDE_DIV, P.compiled_best_region, P.compiled_window_max,
               P.compiled_window_max_strided, P.compiled_window_max_by_count, P.compiled_fill_counts)
        P.JIT_MIN_BLOCKS, P.STRIDE_DIV = 0, div
        if not jit:
            P.compiled_best_region = P.compiled_window_max = P.compiled_window_max_strided = lambda: None
            P.compiled_window_max_by_count = P.compiled_fill_counts = lambda: None
        try:
            pc = P.ProfileCounts(np.array(tar), np.array(non))
            return pc._dom, pc.eps_bits(np.r_[0.0, DELTA_GRID])
        finally:
            (P.JIT_MIN_BLOCKS, P.STRIDE_DIV, P.compiled_best_region, P.compiled_window_max,
             P.compiled_window_max_strided, P.compiled_window_max_by_count, P.compiled_fill_counts) = old

    (dom_j, eps_j), (dom_n, eps_n) = run(True), run(False)
    assert np.array_equal(eps_j, eps_n)
    for a, b in zip(dom_j, dom_n):
        for x, y in zip(a, b):
            assert np.array_equal(x, y)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=80), st.lists(st.integers(0, 3), min_size=1, max_size=80),
       st.sampled_from([np.int32, np.int64]))
def test_compiled_fill_is_the_numpy_repeats(a, b, small):
    """The compiled fill of the dominance's per-trial arrays writes what NumPy's repeats write (the prefix counts,
    the reversed suffix counts, the start table), blocks of one class, empty and tied ones included."""
    pytest.importorskip("numba")
    from vpeval.metrics.profile_kernel import compiled_fill_counts, start_at_table

    k = min(len(a), len(b))
    cnt_p, cnt_q = np.array(a[:k], dtype=np.int64), np.array(b[:k], dtype=np.int64)
    cp, cq = np.r_[0, np.cumsum(cnt_p)], np.r_[0, np.cumsum(cnt_q)]
    n_p, n_q = int(cp[-1]), int(cq[-1])
    held = np.flatnonzero(cnt_q)
    first = np.r_[cq[held], n_q].astype(np.int64)
    want_pre = np.repeat(np.r_[cp[:k], n_p], np.r_[cnt_q, 1]).astype(small)
    want_suf = np.r_[np.repeat(n_p - cp[1:], cnt_q)[::-1], n_p].astype(small)
    pre, suf = np.empty(n_q + 1, dtype=small), np.empty(n_q + 1, dtype=small)
    for tied in (True, False):
        start_at = np.empty(n_q + 1 if tied else 0, dtype=np.int32)
        compiled_fill_counts()(cp, cq, pre, suf, first, start_at)
        assert np.array_equal(pre, want_pre) and np.array_equal(suf, want_suf)
        if tied:
            assert np.array_equal(start_at, start_at_table(first))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 60), st.integers(0, 2 ** 32 - 1), st.floats(0.0, 30.0))
def test_compiled_best_region_step_is_the_numpy_step(k, seed, x):
    """One Dinkelbach step: the compiled pass returns the NumPy path's value and region, ties included."""
    pytest.importorskip("numba")
    from vpeval.metrics.profile import _best_region
    from vpeval.metrics.profile_kernel import compiled_best_region

    rng = np.random.default_rng(seed)
    p, q = rng.integers(0, 3, k).astype(float), rng.integers(0, 3, k).astype(float)
    p, q = p / max(p.sum(), 1.0), q / max(q.sum(), 1.0)
    buf = np.empty(6)
    assert _best_region(p, q, x, compiled_best_region(), buf) == _best_region(p, q, x)


def test_profile_counts_from_the_trials_blocks_are_the_same():
    from vpeval.io.trials import Trials
    from vpeval.metrics.profile import ProfileCounts

    rng = np.random.default_rng(3)
    t = Trials(np.round(rng.normal(size=3000), 2), rng.random(3000) < 0.2)
    a, b = ProfileCounts(t.tar, t.non), ProfileCounts(None, None, blocks=t.tie_blocks())
    assert np.array_equal(a.eps_bits(), b.eps_bits())
    assert all(np.array_equal(x, y) for x, y in zip(a.bounds_bits(), b.bounds_bits()))
    with pytest.raises(InvalidScoresError, match="one target and one non-target"):
        ProfileCounts(None, None, blocks=Trials(np.r_[1.0, 2.0], np.r_[True, True]).tie_blocks())


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=2, max_size=200), st.integers(0, 2 ** 32 - 1))
def test_compiled_window_passes_read_int32_and_int64_counts_alike(steps, seed):
    """_dominance holds its per-trial prefix counts as int32 below 2**30 trials: every compiled signature of the
    window passes (all starts; every stride-th start; starts chosen by count, several counts a pass) gives the
    same counts as the plain Python loops on int64 counts, and a pass over several counts gives each count's
    numbers of a pass over it alone."""
    pytest.importorskip("numba")
    from vpeval.metrics import profile_kernel as PK

    win, strided, by_count = (PK.compiled_window_max(), PK.compiled_window_max_strided(),
                              PK.compiled_window_max_by_count())
    if win is None or strided is None or by_count is None:
        pytest.skip("numba cannot compile here (or VPEVAL_JIT=0)")
    rng = np.random.default_rng(seed)
    cpq = np.cumsum(np.r_[0, steps]).astype(np.int64)
    n_q = cpq.size - 1
    first = np.unique(np.r_[0, rng.integers(0, n_q, size=5), n_q]).astype(np.int64)
    p_start = cpq[first] - rng.integers(0, 2, size=first.size)
    start_at = PK.start_at_table(first)
    ks = np.unique(np.r_[0, 1, 2, rng.integers(0, n_q + 1, size=6)]).astype(np.int64)

    def passes(c, at, loops):
        w, s_lo, s_hi, b_lo, b_hi = (np.empty(ks.size, dtype=np.int64) for _ in range(5))
        loops[0](c, first, p_start, ks, n_q, w)
        loops[1](c, first, p_start, ks, 2, n_q, s_lo, s_hi)
        loops[2](c, first, p_start, at, ks, 2, n_q, b_lo, b_hi)
        return w, s_lo, s_hi, b_lo, b_hi

    want = passes(cpq, start_at.astype(np.int64), (PK.window_max, PK.window_max_strided, PK.window_max_by_count))
    for c in (cpq, cpq.astype(np.int32)):
        for at in (start_at.astype(np.int32), start_at.astype(np.int64)):
            assert all(np.array_equal(g, w) for g, w in zip(passes(c, at, (win, strided, by_count)), want))
    for j, k in enumerate(ks.tolist()):  # one count alone
        one = np.array([k], dtype=np.int64)
        lo, hi = np.empty(1, dtype=np.int64), np.empty(1, dtype=np.int64)
        by_count(cpq, first, p_start, start_at, one, 2, n_q, lo, hi)
        assert (lo[0], hi[0]) == (want[3][j], want[4][j])


def test_tied_scores_do_not_loosen_the_upper_bound():
    """Scores in one tie block allow two decisions only (everything or nothing), so eps(delta) = 0 and the upper
    bound stays near 0 at every size; rounding label-independent scores (fewer regions) does not raise it above
    the unrounded scores' (a tester found 9-12 bits growing with n: the strided starts were read by index, so one
    tie block between two read starts made the upper value that of the whole block)."""
    for n_tar in (4_200, 30_000):
        hi = ProfileCounts(np.zeros(n_tar), np.zeros(9 * n_tar)).bounds_bits(0.01)[1]
        assert hi < 0.15, (n_tar, hi)
    rng = np.random.default_rng(0)
    x, lab = rng.normal(size=300_000), rng.random(300_000) < 0.1
    his = [ProfileCounts(s[lab], s[~lab]).bounds_bits(0.01)[1] for s in (x, np.round(x, 1), np.round(x))]
    assert all(h <= his[0] + 0.02 for h in his[1:]) and his[0] < 0.5, his


def test_large_score_inputs_load_the_profile_loops_while_they_are_read(tmp_path, monkeypatch):
    """`vpeval verify` with the verdict starts loading the profile's compiled loops (numba's import and cache,
    about 0.8 s) before it reads a large score file, so that the two overlap; not for small files, not without
    the profile; the thread leaves every loop loaded."""
    import vpeval.cli.common as c
    from vpeval.metrics import profile_kernel as PK

    started = []
    real = PK.load_in_background
    monkeypatch.setattr(PK, "load_in_background", lambda: started.append(1))
    f = tmp_path / "s.txt"
    f.write_text("1 1\n0 0\n")  # 8 bytes
    monkeypatch.setattr("vpeval.jit.address_space_limited", lambda: False)
    for threshold, profile, want in ((8, True, [1]), (8, False, []), (9, True, [])):
        started.clear()
        monkeypatch.setattr(PK, "LOAD_AHEAD_BYTES", threshold)
        assert len(c.ScoreInputOptions().load(str(f), profile=profile)) == 2
        assert started == want, (threshold, profile)
    import vpeval.jit as jit

    monkeypatch.setattr(jit, "address_space_limited", lambda: True)  # ulimit -v: no thread (numba crashed in it)
    started.clear()
    c.ScoreInputOptions().load(str(f), profile=True)
    assert started == []
    pytest.importorskip("numba")
    real().join()
    from vpeval.jit import _DONE

    assert all(fn in _DONE for fn in (PK.window_max, PK.window_max_by_count, PK.window_max_strided, PK.best_region,
                                      PK.fill_counts))


def test_bounds_kept_quantiles_are_those_computed_afresh():
    """The beta quantiles kept per (level, design effects) give, at any later delta, level or design effect, the
    bounds a fresh object computes (the keep never answers for another level or design effect)."""
    rng = np.random.default_rng(3)
    tar, non = rng.normal(1.0, 1.0, 400), rng.normal(0.0, 1.0, 900)
    curve = (np.array([0.01, 0.1, 0.5]), np.array([2.0, 1.5, 1.2]))
    kept = ProfileCounts(tar, non)
    for delta, alpha, dt, dn, m in [(0.01, 0.05, 1.0, 1.0, 1), (0.2, 0.05, 1.0, 1.0, 1), (0.01, 0.1, 1.0, 1.0, 1),
                                    (0.05, 0.05, 2.0, 1.0, 1), (0.05, 0.05, curve, 1.0, 3), (0.3, 0.05, curve, 1.0, 3),
                                    (0.05, 0.05, 1.0, 1.0, 2)]:
        got = kept.bounds_bits(delta, alpha=alpha, deff_tar=dt, deff_non=dn, n_members=m)
        want = ProfileCounts(tar, non).bounds_bits(delta, alpha=alpha, deff_tar=dt, deff_non=dn, n_members=m)
        assert got == want


def test_passes_shared_with_a_helping_thread_give_the_same_counts_and_raise_in_the_owner():
    """run_passes: every task runs once, whoever takes it (the owner or a thread in help_with_passes); an error is
    raised by the owner even when the helper ran the failing task; a dominance computed while another thread helps
    gives the counts of one computed alone."""
    import threading
    import time

    import vpeval.metrics.profile as P
    from vpeval.metrics.profile_kernel import help_with_passes, run_passes

    ran, who = [], []

    def task(i):
        def go():
            time.sleep(0.01)
            ran.append(i)
            who.append(threading.current_thread().name)
        return go

    stop = threading.Event()

    def helper():
        while not stop.is_set():
            help_with_passes() or time.sleep(0.001)

    h = threading.Thread(target=helper, name="helper")
    h.start()
    try:
        run_passes([task(i) for i in range(40)])
        assert sorted(ran) == list(range(40))
        assert "helper" in who and threading.current_thread().name in who

        def bad():
            time.sleep(0.01)
            raise ValueError("pass failed")

        with pytest.raises(ValueError, match="pass failed"):
            run_passes([bad for _ in range(6)])
        rng = np.random.default_rng(5)
        tar, non = np.round(rng.normal(1.0, 1.0, 3000), 1), np.round(rng.normal(0.0, 1.0, 5000), 1)
        old = P.JIT_MIN_BLOCKS, P.STRIDE_DIV
        P.JIT_MIN_BLOCKS, P.STRIDE_DIV = 0, 2
        try:
            shared = P.ProfileCounts(tar, non)._dom
        finally:
            P.JIT_MIN_BLOCKS, P.STRIDE_DIV = old
    finally:
        stop.set()
        h.join()
    P.JIT_MIN_BLOCKS, P.STRIDE_DIV = 0, 2
    try:
        alone = P.ProfileCounts(tar, non)._dom
    finally:
        P.JIT_MIN_BLOCKS, P.STRIDE_DIV = old
    for a, b in zip(shared, alone):
        for x, y in zip(a, b):
            assert np.array_equal(x, y)
