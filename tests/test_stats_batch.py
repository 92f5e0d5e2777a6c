"""The batched replicate evaluation (vpeval.stats.batch) against the one-replicate-at-a-time path: bit-identical
values, on hand-made and random block counts, and whole bootstrap / chance-floor results with and without it."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vpeval.stats.trial_bootstrap as tb
from vpeval.blocks import TieBlocks, pav_bins
from vpeval.io.trials import Trials
from vpeval.stats import D_ECE, EER_INTERP, EER_ROCCH, EPS_MAX, MIN_CLLR, TRIAL_METRICS, bootstrap, chance_floor
from vpeval.stats.batch import _vertices, batchable, evaluate_rows
from vpeval.stats.trial_bootstrap import _compress_runs, _evaluate


def _one_by_one(metrics, n_tar, n_non, mode):
    out = np.empty((len(metrics), n_tar.shape[0]))
    for r in range(n_tar.shape[0]):
        t, n = n_tar[r], n_non[r]
        if mode == "runs":
            b = _compress_runs(t, n)
        else:  # _collapsed_blocks: empty blocks dropped, block values replaced by positions
            keep = (t + n) > 0
            b = TieBlocks(np.flatnonzero(keep).astype(np.float64), t[keep], n[keep])
        out[:, r] = _evaluate(metrics, b, None)
    return out


def _rows(draw_counts, R, M, seed):
    rng = np.random.default_rng(seed)
    t = rng.integers(0, draw_counts, size=(R, M))
    n = rng.integers(0, draw_counts, size=(R, M))
    # sparse rows: many empty and one-class blocks, as in bootstrap and permutation grids
    t[rng.random((R, M)) < 0.5] = 0
    n[rng.random((R, M)) < 0.3] = 0
    t[:, rng.integers(M)] += 1  # at least one of each class per row
    n[:, rng.integers(M)] += 1
    return t.astype(np.int64), n.astype(np.int64)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 12), st.integers(1, 40), st.integers(1, 6), st.sampled_from(["runs", "blocks"]),
       st.integers(0, 2**31))
def test_batch_equals_one_replicate_at_a_time(R, M, counts, mode, seed):
    t, n = _rows(counts, R, M, seed)
    got = evaluate_rows(TRIAL_METRICS, t, n, mode)
    want = _one_by_one(TRIAL_METRICS, t, n, mode)
    for r in np.flatnonzero((got != want).any(axis=0)):
        # only where scipy's float PAV split a run of exactly equal proportions (vpeval.stats.batch docstring)
        cb = _compress_runs(t[r], n[r])
        b = pav_bins(cb.n_tar, cb.n_non)
        ratios = [Fraction(int(a), int(a + c)) for a, c in zip(b.n_tar, b.n_non)]
        assert any(x == y for x, y in zip(ratios, ratios[1:]))
        keys = [m.key for m in TRIAL_METRICS]
        for k in ("eer_rocch", "eer_interp", "eps_max"):
            assert got[keys.index(k), r] == want[keys.index(k), r]
        assert np.allclose(got[:, r], want[:, r], rtol=1e-12, atol=0)


def test_batch_hand_made_rows():
    # Row 0: PAV pools everything into one bin (EERs 0.5); row 1: perfectly separated (EER 0); row 2: empty
    # blocks and ties at both ends; row 3: equal proportions in adjacent blocks (one bin, not two).
    t = np.array([[1, 0, 1, 0], [0, 0, 2, 3], [0, 1, 0, 2], [1, 2, 0, 3]])
    n = np.array([[1, 2, 1, 2], [4, 1, 0, 0], [0, 1, 0, 0], [1, 2, 5, 3]])
    got = evaluate_rows(TRIAL_METRICS, t, n, "runs")
    assert np.array_equal(got, _one_by_one(TRIAL_METRICS, t, n, "runs"))
    keys = [m.key for m in TRIAL_METRICS]
    assert got[keys.index("eer_rocch"), 1] == 0.0
    assert got[keys.index("min_cllr"), 1] == 0.0
    # row 3: proportions 1/2, 1/2, 0, 1/2 -> the first three pool (3 targets in 11 trials), then 1/2
    b = pav_bins(t[3], n[3])
    assert b.n_tar.tolist() == [3, 3] and b.n_non.tolist() == [8, 3]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=30))
def test_vertices_are_the_pav_bin_ends(blocks):
    t = np.array([b[0] for b in blocks] + [1], dtype=np.int64)
    n = np.array([b[1] for b in blocks] + [1], dtype=np.int64)
    keep = (t + n) > 0
    t, n = t[keep], n[keep]
    ct, cn = np.r_[0, np.cumsum(t)], np.r_[0, np.cumsum(n)]
    v = _vertices(ct[None], (ct + cn)[None])[0]
    bins = pav_bins(t, n)
    assert np.flatnonzero(v).tolist() == [0] + (np.r_[bins.start[1:], t.size]).tolist()


def test_batchable_only_for_builtin_metrics_and_small_grids():
    assert batchable(TRIAL_METRICS, 100, 10_000)
    assert not batchable(TRIAL_METRICS, 10_000, 10_000)
    assert not batchable(TRIAL_METRICS, 100, 1 << 26)
    from vpeval.stats import as_stat_metric

    assert not batchable([as_stat_metric(lambda tr: 0.0)], 100, 10_000)


def _speaker_trials(seed, n_spk=8, per=6, ties=False):
    rng = np.random.default_rng(seed)
    spk = np.repeat(np.arange(n_spk), per * n_spk)
    model = np.tile(np.repeat(np.arange(n_spk), per), n_spk)
    is_t = spk == model
    s = rng.normal(size=spk.size) + 1.5 * is_t
    if ties:
        s = np.round(s, 2)
    keep = ~is_t | (np.arange(spk.size) % 3 == 0)  # few targets: the permutations take the batched path
    spk, model, is_t, s = spk[keep], model[keep], is_t[keep], s[keep]
    test = np.array([f"u{a}_{i}" for i, a in enumerate(spk)])
    return Trials(s, is_t, np.array([f"s{m}" for m in model]), test), np.array([f"s{a}" for a in spk])


@pytest.mark.parametrize("seed,ties", [(0, False), (1, True), (2, True)])
def test_bootstrap_and_chance_floor_identical_with_and_without_batch(seed, ties, monkeypatch):
    trials, groups = _speaker_trials(seed, ties=ties)
    metrics = [EER_ROCCH, EER_INTERP, MIN_CLLR, D_ECE, EPS_MAX]
    import vpeval.stats.chance as chance_mod

    calls = []
    spy = lambda *a: calls.append(1) or evaluate_rows(*a)  # noqa: E731
    monkeypatch.setattr(chance_mod, "evaluate_rows", spy)
    monkeypatch.setattr(tb, "evaluate_rows", spy)
    fast_b = bootstrap(trials, metrics, groups=groups, n_boot=60, seed=seed)
    fast_c = chance_floor(trials, metrics, n_perm=60, seed=seed, within="all")
    fast_s = chance_floor(trials, metrics, n_perm=60, seed=seed, within="enroll")
    assert len(calls) == 3  # the batched path was taken
    monkeypatch.setattr(tb, "_ONE_AT_A_TIME", True)
    slow_b = bootstrap(trials, metrics, groups=groups, n_boot=60, seed=seed)
    slow_c = chance_floor(trials, metrics, n_perm=60, seed=seed, within="all")
    slow_s = chance_floor(trials, metrics, n_perm=60, seed=seed, within="enroll")
    for m in metrics:
        assert np.array_equal(fast_b[m.key].replicates, slow_b[m.key].replicates)
        assert (fast_b[m.key].low, fast_b[m.key].high) == (slow_b[m.key].low, slow_b[m.key].high)
        for f, s in ((fast_c, slow_c), (fast_s, slow_s)):
            assert np.array_equal(f[m.key].null, s[m.key].null)
            assert f[m.key].p_value == s[m.key].p_value and f[m.key].verdict == s[m.key].verdict


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 12), st.integers(1, 40), st.integers(0, 2**31 - 1), st.booleans())
def test_every_hull_path_marks_the_same_vertices_as_the_chain(R, P, seed, from_one):
    """batch._vertices_numpy (one PAV fit, checked exactly) and vpeval.stats.hull_kernel (compiled or not)
    against batch._vertices_chain (the rows in step): the same marks, repeated and collinear points, rows
    without trials and rows not starting at 0 included (steps of 0-2 targets and non-targets make many)."""
    from vpeval.stats.batch import _vertices_chain, _vertices_numpy
    from vpeval.stats.hull_kernel import compiled_hull_vertices, hull_vertices

    rng = np.random.default_rng(seed)
    steps = rng.integers(0, 3, size=(2, R, P))
    steps[:, :, 0] = int(from_one)
    ct, cn = (np.cumsum(s, axis=1).astype(np.int64) for s in steps)
    want = _vertices_chain(ct, ct + cn)
    np.testing.assert_array_equal(_vertices_numpy(ct, ct + cn), want)
    for fn in (hull_vertices, compiled_hull_vertices()):
        if fn is None:
            continue
        out = np.zeros((R, P), dtype=bool)
        fn(ct + cn, ct, out)
        np.testing.assert_array_equal(out, want)


def test_hull_rows_that_floating_point_pools_wrongly_are_redone_exactly(monkeypatch):
    """Blocks of about 2**21 targets whose proportions differ by about 2**-46, in 3,000 rows (shifted apart by up
    to 6,000): the floating-point PAV pools some of them wrongly; the exact check sends those rows to the chain,
    and every mark equals the chain's."""
    import vpeval.stats.batch as batch

    chain = batch._vertices_chain
    redone = []
    monkeypatch.setattr(batch, "_vertices_chain", lambda c, w: redone.append(c.shape[0]) or chain(c, w))
    rng = np.random.default_rng(7)
    R, P = 3000, 7
    t = rng.integers(1 << 20, 1 << 21, size=(R, 1)) + np.arange(P) * rng.integers(-1, 2, size=(R, P))
    n = t + 1 + rng.integers(0, 2, size=(R, P))
    t[:, 0] = n[:, 0] = 0
    ct, cn = np.cumsum(t, axis=1), np.cumsum(n, axis=1)
    got = batch._vertices_numpy(ct, ct + cn)
    assert 0 < sum(redone) < R  # some rows, not all, needed the chain
    np.testing.assert_array_equal(got, chain(ct, ct + cn))
