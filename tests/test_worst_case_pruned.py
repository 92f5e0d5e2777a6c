"""eps_max of large labellings from the candidates that can be extreme (worst_case._extremes_pruned): the same
floats as evaluating every candidate, for the relabellings (eps_max_from_target_blocks) and the trial bootstrap
(resample._trial_bootstrap_eps_max), checked with the pruning forced on small inputs (tiny edges and segments,
so that every branch runs) and on inputs above the real threshold."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpeval.analysis import relabel as RL
from vpeval.analysis import resample as RS
from vpeval.analysis import worst_case as W


@contextmanager
def tiny_pruning():
    """Prune from 1 target on, 1 candidate outright at each end, segments of sqrt(distance) targets."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(W, "PRUNE_MIN_TARGETS", 0)
        mp.setattr(RS, "PRUNE_MIN_TARGETS", 0)
        mp.setattr(W, "_PRUNE_EDGE", 1)
        mp.setattr(W, "_PRUNE_ROOT", 1)
        yield mp


def _full(tb, cum):
    with pytest.MonkeyPatch.context() as m:
        m.setattr(W, "PRUNE_MIN_TARGETS", 10**12)
        return W.eps_max_from_target_blocks(tb, cum)


def _labelling(rng, n_blocks, kind):
    size = rng.integers(1, 4, size=n_blocks) if rng.random() < 0.5 else np.ones(n_blocks, dtype=np.int64)
    blk = np.repeat(np.arange(size.size), size)
    n = blk.size
    share = {"null": np.full(n, rng.choice([0.05, 0.5, 0.95])), "signal": np.linspace(0, 1, n) ** 3,
             "reversed": np.linspace(1, 0, n) ** 3, "wave": 0.5 + 0.45 * np.sin(np.linspace(0, 30, n))}[kind]
    lab = rng.random(n) < share
    if not 0 < lab.sum() < n:
        lab[0], lab[-1] = not lab[-1], not lab[0]
        lab[0], lab[-1] = True, False
    return size, blk, lab


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 400), st.sampled_from(["null", "signal", "reversed", "wave"]), st.integers(0, 2**31))
def test_pruned_relabelling_eps_max_is_bit_identical(n_blocks, kind, seed):
    rng = np.random.default_rng(seed)
    size, blk, lab = _labelling(rng, n_blocks, kind)
    cum = np.r_[0, np.cumsum(size)].astype(np.float64)
    rows = np.stack([np.sort(blk[lab]), np.sort(blk[rng.permutation(lab)])])
    with tiny_pruning():
        got = W.eps_max_from_target_blocks(rows, cum)
        np.testing.assert_array_equal(got, _full(rows, cum))


def _completed_reference(lw, blk, lab):
    """eps_max of the replicate's completed weights by the full weighted block counts."""
    w = lw.complete().astype(float)
    ref = W.eps_max_from_block_counts(np.bincount(blk, weights=w * lab)[None], np.bincount(blk, weights=w)[None])[0]
    return w, ref


@settings(max_examples=80, deadline=None)
@given(st.integers(2, 300), st.sampled_from(["null", "signal", "reversed", "wave"]), st.integers(0, 2**31),
       st.integers(1, 50))
def test_lazy_bootstrap_replicate_is_the_eps_max_of_its_completed_weights(n_blocks, kind, seed, m):
    """A lazily drawn trial-bootstrap replicate (trial_boot) gives the eps_max of its weights
    completed afterwards (every cell drawn), by the independent full block-count path; pruning forced tiny."""
    from vpeval.analysis import trial_boot as TB

    rng = np.random.default_rng(seed)
    size, blk, lab = _labelling(rng, n_blocks, kind)
    cum = np.r_[0, np.cumsum(size)]
    p = RL._TrialPrep(None, None, blk, cum, lab, int(lab.sum()), bool((size == 1).all()))
    with tiny_pruning():
        member = TB._Member(p)
        for _ in range(3):
            lw = member.draw(rng)
            got = member.replicate(lw)
            w, ref = _completed_reference(lw, blk, lab)
            assert w.sum() == blk.size and (w >= 0).all()
            np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12, equal_nan=True)


def test_lazy_bootstrap_draws_the_multinomial_bootstrap():
    """The two-stage draw has the law of n indices drawn with replacement: per-position multiplicities with mean
    1 and variance 1 - 1/n, covariance -1/n between positions, and eps_max replicates distributed as those of
    integers + bincount (two-sample Kolmogorov-Smirnov test, 600 replicates each)."""
    from scipy.stats import ks_2samp

    from vpeval.analysis import trial_boot as TB

    rng = np.random.default_rng(5)
    size, blk, lab = _labelling(rng, 120, "signal")
    n = blk.size
    cum = np.r_[0, np.cumsum(size)]
    p = RL._TrialPrep(None, None, blk, cum, lab, int(lab.sum()), bool((size == 1).all()))
    with tiny_pruning() as mp:
        member = TB._Member(p)
        ws, lazy = [], []
        for _ in range(600):
            lw = member.draw(rng)
            lazy.append(member.replicate(lw))
            ws.append(lw.complete())
        ws = np.array(ws, dtype=float)
        assert (ws.sum(axis=1) == n).all()
        np.testing.assert_allclose(ws.mean(axis=0).mean(), 1.0, atol=0.01)
        np.testing.assert_allclose(ws.var(axis=0).mean(), 1 - 1 / n, atol=0.03)
        cov = np.cov(ws.T)
        np.testing.assert_allclose(cov[~np.eye(n, dtype=bool)].mean(), -1 / n, atol=0.004)
        mp.setattr(RS, "PRUNE_MIN_TARGETS", 10**12)
        plain = RS._trial_bootstrap_eps_max(p, np.random.default_rng(6), 600)
    assert ks_2samp(lazy, plain).pvalue > 0.001


@pytest.mark.parametrize("kind", ["null", "signal", "reversed"])
def test_real_threshold_large_labelling(kind):
    """Above the real PRUNE_MIN_TARGETS (default edges and segments): the same floats for the relabellings, and
    the lazy bootstrap's replicates are the eps_max of their completed weights."""
    from vpeval.analysis import trial_boot as TB

    rng = np.random.default_rng(11)
    size, blk, lab = _labelling(rng, 60_000, kind)
    assert lab.sum() > W.PRUNE_MIN_TARGETS
    cum = np.r_[0, np.cumsum(size)]
    rows = np.stack([np.sort(blk[lab]), np.sort(blk[rng.permutation(lab)])])
    np.testing.assert_array_equal(W.eps_max_from_target_blocks(rows, cum.astype(float)),
                                  _full(rows, cum.astype(float)))
    p = RL._TrialPrep(None, None, blk, cum, lab, int(lab.sum()), bool((size == 1).all()))
    member = TB._Member(p)
    for seed in range(2):
        lw = member.draw(np.random.default_rng(seed))
        got = member.replicate(lw)
        _, ref = _completed_reference(lw, blk, lab)
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
    out = RS._trial_bootstrap_eps_max(p, np.random.default_rng(3), 3)  # the lazy path above the threshold
    assert out.shape == (3,) and np.isfinite(out).all()


def test_segments_cover_every_candidate_once():
    for K in (W._PRUNE_EDGE + 1, 10_000, 5_000_000):
        c = W._cuts(K)
        assert c[0] == W._PRUNE_EDGE and c[-1] == K and (np.diff(c) >= 1).all()
    lo, hi = np.array([0, 5, 9]), np.array([2, 5, 12])
    assert W._ranges(lo, hi).tolist() == [0, 1, 9, 10, 11]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([-1.5, -0.0, 0.0, 0.25, 2.0, np.inf, -np.inf, np.nan]), min_size=0, max_size=12),
       st.booleans())
def test_sorted_copy_is_np_sort_bit_for_bit(values, presort):
    """blocks.sorted_copy (which skips the sort of ascending input) returns np.sort's array exactly, signed zeros
    and NaN included, and never the input object itself."""
    from vpeval.blocks import sorted_copy

    x = np.array(values, dtype=np.float64)
    if presort:
        x = np.sort(x)
    got = sorted_copy(x)
    want = np.sort(x)
    assert got is not x and got.dtype == want.dtype
    assert np.array_equal(got.view(np.uint64), want.view(np.uint64))


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 300), st.sampled_from(["null", "signal", "reversed", "wave"]), st.integers(0, 2**31))
def test_one_row_d_ece_equals_the_rows_path(n_blocks, kind, seed):
    """relabel._d_ece_rows of one labelling (the path large inputs take, without row bookkeeping) gives the
    floats it gives for the same labelling among other rows, tied and untied, and the one-fit-per-row oracle."""
    rng = np.random.default_rng(seed)
    size, blk, lab = _labelling(rng, n_blocks, kind)
    cum = np.r_[0, np.cumsum(size)]
    p = RL._TrialPrep(None, None, blk, cum, lab, int(lab.sum()), bool((size == 1).all()))
    rows = np.stack([np.sort(blk[lab]), np.sort(blk[rng.permutation(lab)]), np.sort(blk[rng.permutation(lab)])])
    many = RL._d_ece_rows(p, rows)
    one = np.array([RL._d_ece_rows(p, r[None])[0] for r in rows])
    np.testing.assert_array_equal(one, many)
    np.testing.assert_allclose(one, RL._d_ece_rows_loop(p, rows), rtol=1e-9, atol=1e-12)
