"""The perfect-secrecy test of large members on cells of the score axis (vpeval.analysis.cells)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from vpeval.analysis import cells
from vpeval.analysis.members import TrialInput
from vpeval.analysis.relabel import _d_ece_rows, _prep_trials
from vpeval.analysis.resample import _trial_bootstrap_eps_max
from vpeval.analysis.secrecy import secrecy_test
from vpeval.analysis.worst_case import eps_max_from_target_blocks
from vpeval.io.trials import Trials


def _prep(n, seed, shift=0.0, decimals=None, share=0.2):
    rng = np.random.default_rng(seed)
    lab = rng.random(n) < share
    lab[:2] = [True, False]
    s = rng.normal(size=n) + shift * lab
    if decimals is not None:
        s = np.round(s, decimals)
    return _prep_trials(TrialInput("asv", "oa", Trials(s, lab)))


def test_cell_starts_hand_case():
    # 12 untied trials, m = 2: within 2 trials of an end every block alone; keys 0 1 2 2 3 3 | 3 3 2 2 1 0
    assert cells.cell_starts(np.arange(13), resolution=2).tolist() == [0, 1, 2, 4, 6, 8, 10, 11]
    # a tie block of 8 trials in the middle is never split: at m = 1 it joins the block below it (both 1 and 2
    # trials from the nearer end: key 1); at m = 2 and beyond every block is a cell
    cum = np.array([0, 1, 2, 10, 11, 12])
    assert cells.cell_starts(cum, resolution=1).tolist() == [0, 1, 3, 4]
    for m in (2, 100):
        assert cells.cell_starts(cum, resolution=m).tolist() == [0, 1, 2, 3, 4]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=400), st.integers(1, 40))
def test_cells_are_exact_near_the_ends_and_narrow_further_in(sizes, m):
    cum = np.r_[0, np.cumsum(sizes)]
    n = int(cum[-1])
    s = cells.cell_starts(cum, resolution=m)
    assert s[0] == 0 and (np.diff(s) > 0).all() and s[-1] < len(sizes)
    ends = np.r_[s, len(sizes)]
    for a, b in zip(ends[:-1], ends[1:]):
        lo, hi = int(cum[a]), int(cum[b - 1])  # first positions of the cell's first and last block
        if lo < m or n - int(cum[a + 1]) < m:  # a block near an end: a cell of its own
            assert b == a + 1
        elif b > a + 1 and lo < n - int(cum[b]):  # lower half: the blocks start within a factor e^(1/m)
            assert hi <= lo * math.exp(1.0 / m) + 1e-9


@settings(max_examples=40, deadline=None)
@given(st.integers(20, 400), st.integers(0, 10_000), st.sampled_from([None, 1]), st.floats(0.0, 3.0))
def test_cells_of_single_blocks_give_the_exact_statistics(n, seed, decimals, shift):
    p = _prep(n, seed, shift, decimals)
    sizes, tar = cells.member_cells(p.cum, p.is_tar, resolution=n + 1)
    assert sizes.tolist() == np.diff(p.cum).tolist()
    eps, dec = cells.cell_statistics(tar[None], sizes, ("eps_max", "d_ece"))
    tb = p.block[p.is_tar][None]
    assert eps[0] == pytest.approx(eps_max_from_target_blocks(tb, p.cum.astype(float))[0] / math.log(2), rel=1e-12)
    assert dec[0] == pytest.approx(_d_ece_rows(p, tb)[0], rel=1e-9, abs=1e-15)


@settings(max_examples=40, deadline=None)
@given(st.integers(20, 600), st.integers(0, 10_000), st.integers(1, 8), st.floats(0.0, 4.0))
def test_thresholds_between_cells_never_show_more_than_the_trials(n, seed, m, shift):
    p = _prep(n, seed, shift)
    sizes, tar = cells.member_cells(p.cum, p.is_tar, resolution=m)
    coarse = cells.cell_statistics(tar[None], sizes, ("eps_max",))[0][0]
    exact = eps_max_from_target_blocks(p.block[p.is_tar][None], p.cum.astype(float))[0] / math.log(2)
    assert coarse <= exact + 1e-12


def test_relabellings_keep_the_class_sizes_and_depend_on_their_row_alone():
    sizes = np.array([1, 1, 3, 7, 20, 7, 3, 1, 1])
    tar = np.array([0, 1, 1, 2, 5, 3, 0, 1, 0])
    rows = cells.cell_target_rows(sizes, tar, 5, slice(0, 6))
    assert (rows[0] == tar).all()
    assert (rows.sum(axis=1) == tar.sum()).all() and (rows >= 0).all() and (rows <= sizes).all()
    assert (cells.cell_target_rows(sizes, tar, 5, slice(3, 6)) == rows[3:]).all()
    # the law of a uniform K-subset: a cell's mean count is K * size / n
    many = cells.cell_target_rows(sizes, tar, 1, slice(1, 4001))
    assert np.allclose(many.mean(axis=0), tar.sum() * sizes / sizes.sum(), atol=0.15)


def test_cell_bootstrap_is_the_trial_bootstrap_of_single_blocks():
    # the same law as the position-level multinomial bootstrap (other draws): two-sample KS on 3,000 replicates
    p = _prep(60, 3, shift=1.0)
    sizes, tar = cells.member_cells(p.cum, p.is_tar, resolution=61)
    a = cells.cell_bootstrap_eps_max(sizes, tar, np.random.default_rng(1), 3000)
    b = _trial_bootstrap_eps_max(p, np.random.default_rng(2), 3000)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    assert stats.ks_2samp(a, b).pvalue > 1e-4


def _cells_everywhere(monkeypatch, m=4):
    monkeypatch.setattr(cells, "CELLS_FROM_TRIALS", 1)
    monkeypatch.setattr(cells, "CELL_RESOLUTION", m)


def test_the_test_on_cells_holds_its_level_and_rejects_a_leak(monkeypatch):
    """The relabelled rows and the observed row are one statistic: with 19 relabellings and alpha 0.1 a perfectly
    secret member is rejected in exactly 10 % of files (the observed row ranks uniformly among 20)."""
    _cells_everywhere(monkeypatch)
    rej = 0
    files = 300
    for seed in range(files):
        rng = np.random.default_rng(seed)
        lab = rng.random(200) < 0.3
        lab[:2] = [True, False]
        t = Trials(rng.normal(size=200), lab)
        r = secrecy_test([TrialInput("asv", "oa", t)], n_perm=19, n_boot=2, seed=seed, alpha=0.1,
                         statistics=("eps_max",))
        rej += r.rejected
    # Binomial(300, 0.1): 30 expected; outside 13..50 with probability < 1e-4
    assert 13 <= rej <= 50, rej
    t = Trials(np.r_[np.random.default_rng(0).normal(3, 1, 60), np.random.default_rng(1).normal(0, 1, 140)],
               np.r_[np.ones(60, bool), np.zeros(140, bool)])
    r = secrecy_test([TrialInput("asv", "oa", t)], n_perm=99, n_boot=20)
    assert r.rejected and "cells of the score axis" in r.scheme_note and r.cells
    assert r.to_dict()["deciding_member"]["p_adjusted"] == r.p_value  # the family-wise p is the smallest adjusted


def test_a_keyed_member_relabelled_by_trial_is_tested_on_cells_with_its_own_rocch_eer(monkeypatch):
    """Speakers known but not which trials share a probe: trial relabelling, and a member large enough goes on
    cells; its ROCCH EER (read from its own tie blocks, which it keeps) is the one without cells."""
    rng = np.random.default_rng(7)
    n = 1200
    spk = np.array([f"s{i}" for i in range(30)])
    model, probe = spk[rng.integers(0, 30, n)], spk[rng.integers(0, 30, n)]
    probe[:300] = model[:300]
    lab = model == probe
    t = Trials(np.round(rng.normal(size=n) + 0.5 * lab, 2), lab)
    member = [TrialInput("asv", "oa", t, model_speaker=model, probe_speaker=probe)]
    plain = secrecy_test(member, n_perm=49, n_boot=5)
    _cells_everywhere(monkeypatch, m=8)
    celled = secrecy_test(member, n_perm=49, n_boot=5)
    assert plain.scheme == celled.scheme == "trial" and "cells of the score axis" in celled.scheme_note
    assert [m.eer_rocch for m in celled.members] == [m.eer_rocch for m in plain.members]
