"""The compiled PAV of many relabellings (vpeval.analysis.pav_kernel) against the NumPy path of
relabel._d_ece_rows (SciPy's isotonic fit): the same PAV blocks, so bit-identical D_ECE."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vpeval.analysis.pav_kernel as PK
from vpeval.analysis import relabel as RL


def _prep(size: np.ndarray, k: int) -> RL._TrialPrep:
    blk = np.repeat(np.arange(size.size), size)
    return RL._TrialPrep(None, None, blk, np.r_[0, np.cumsum(size)], None, k, bool((size == 1).all()))


def _rows(p: RL._TrialPrep, R: int, rng) -> np.ndarray:
    n = p.block.size
    return np.array([np.sort(p.block[rng.choice(n, p.n_tar, replace=False)]) for _ in range(R)])


def _d_ece_with(kernel, p: RL._TrialPrep, tb: np.ndarray) -> np.ndarray:
    R, K = tb.shape
    n = int(p.cum[-1])
    out = [np.empty(R * K, dtype=np.int64) for _ in range(3)]
    m = kernel(np.ascontiguousarray(tb, dtype=np.int64), p.cum, n, *out)
    bt = out[0][:m].astype(np.float64)
    return RL._d_ece_from_blocks(bt, out[1][:m] - bt, out[2][:m], R, K, n)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(sizes=st.lists(st.integers(1, 5), min_size=2, max_size=60), seed=st.integers(0, 2**32 - 1),
       R=st.integers(1, 5), untied=st.booleans())
def test_plain_loop_equals_the_scipy_path_bit_for_bit(sizes, seed, R, untied):
    size = np.ones(sum(sizes), dtype=np.int64) if untied else np.array(sizes)
    n = int(size.sum())
    rng = np.random.default_rng(seed)
    p = _prep(size, int(rng.integers(1, n)))
    tb = _rows(p, R, rng)
    ref = RL._d_ece_rows(p, tb)  # K below JIT_MIN_TARGETS: the NumPy path
    assert np.array_equal(_d_ece_with(PK.pav_target_blocks, p, tb), ref)
    np.testing.assert_allclose(ref, RL._d_ece_rows_loop(p, tb), rtol=0, atol=1e-12)


def _skewed_rows(blk: np.ndarray, k: int, R: int, rng) -> np.ndarray:
    """Rows whose targets crowd where a random weight is high: leaking relabellings, with many PAV blocks."""
    n = blk.size
    rows = []
    for _ in range(R):
        w = np.exp(rng.normal(0.0, 4.0) * np.linspace(0.0, 1.0, n) + rng.normal(0.0, 1.0, n))
        rows.append(np.sort(blk[rng.choice(n, k, replace=False, p=w / w.sum())]))
    return np.array(rows, dtype=np.int64)


def _blocks(kernel, tb, cum, n):
    out = [np.empty(tb.size, dtype=np.int64) for _ in range(3)]
    m = kernel(np.ascontiguousarray(tb, dtype=np.int64), cum, n, *out)
    return [o[:m] for o in out]


@settings(max_examples=150, deadline=None, derandomize=True)
@given(n_blocks=st.integers(2, 3000), tied=st.booleans(), seed=st.integers(0, 2**32 - 1),
       share=st.floats(0.0, 1.0), skewed=st.booleans(), R=st.integers(1, 3))
def test_hull_filter_gives_the_blocks_of_the_stack_over_every_unit(n_blocks, tied, seed, share, skewed, R):
    """pav_target_blocks (a coarse hull, then the stack over the points on or below it, runs of targets above
    it skipped) against the stack over every unit, as plain Python: the same blocks, null and leaking rows, up
    to 3000 blocks (subsamples of 2 to 46 targets)."""
    rng = np.random.default_rng(seed)
    size = rng.integers(1, 4, n_blocks) if tied else np.ones(n_blocks, dtype=np.int64)
    cum = np.r_[0, np.cumsum(size)].astype(np.int64)
    n = int(cum[-1])
    blk = np.repeat(np.arange(n_blocks), size)
    k = min(n - 1, max(1, int(share * n)))
    tb = _skewed_rows(blk, k, R, rng) if skewed else _rows(RL._TrialPrep(None, None, blk, cum, None, k, not tied), R,
                                                            rng)
    got, ref = _blocks(PK.pav_target_blocks, tb, cum, n), _blocks(PK.pav_target_blocks_every_unit, tb, cum, n)
    assert all(np.array_equal(a, b) for a, b in zip(got, ref))


def test_compiled_hull_filter_agrees_on_large_null_and_leaking_rows():
    pytest.importorskip("numba")
    from vpeval.jit import compiled

    fast = PK.compiled_pav_target_blocks()
    slow = compiled(PK.pav_target_blocks_every_unit, PK._SIGNATURE)
    rng = np.random.default_rng(8)
    size = rng.integers(1, 4, 400_000)
    cum = np.r_[0, np.cumsum(size)].astype(np.int64)
    n = int(cum[-1])
    blk = np.repeat(np.arange(size.size), size)
    p = RL._TrialPrep(None, None, blk, cum, None, n // 2, False)
    for tb in (_rows(p, 3, rng), _skewed_rows(blk, n // 3, 3, rng)):
        got, ref = _blocks(fast, tb, cum, n), _blocks(slow, tb, cum, n)
        assert all(np.array_equal(a, b) for a, b in zip(got, ref))


def test_blocks_are_the_maximal_level_sets_hand_computed():
    # 6 trials in 6 blocks; targets at blocks 1, 2, 4: units (block 1 alone: 1 of 1), (block 2 + 3: 1 of 2),
    # (block 4 + 5: 1 of 2). The first is above the second, so they pool: 2 of 3, then 2/3 >= 1/2 pools again:
    # one block of 3 targets in 5 trials (block 0 below the lowest target is left out).
    tb = np.array([[1, 2, 4]])
    out = [np.empty(3, dtype=np.int64) for _ in range(3)]
    m = PK.pav_target_blocks(tb, np.arange(7), 6, *out)
    assert m == 1 and out[0][0] == 3 and out[1][0] == 5 and out[2][0] == 0
    # equal proportions pool too: targets at 0 and 2 of 4 untied trials give units 1/2 and 1/2 -> one block
    m = PK.pav_target_blocks(np.array([[0, 2]]), np.arange(5), 4, *out)
    assert m == 1 and (out[0][0], out[1][0]) == (2, 4)
    # increasing proportions stay apart: targets at 1 and 3 of 4 -> units 1/2 and 1/1
    m = PK.pav_target_blocks(np.array([[1, 3]]), np.arange(5), 4, *out)
    assert m == 2 and list(out[0][:2]) == [1, 1] and list(out[1][:2]) == [2, 1]


def test_merge_level_ties_pools_equal_neighbours_within_a_row_only():
    bt, bn, brow = np.array([1.0, 2.0, 1.0, 1.0]), np.array([1.0, 2.0, 1.0, 3.0]), np.array([0, 0, 1, 1])
    t, nn, r = RL._merge_level_ties(bt, bn, brow)
    assert list(t) == [3.0, 1.0, 1.0] and list(nn) == [3.0, 1.0, 3.0] and list(r) == [0, 1, 1]


def test_compiled_loop_is_used_on_large_rows_and_agrees():
    pytest.importorskip("numba")
    assert PK.compiled_pav_target_blocks() is not None
    rng = np.random.default_rng(3)
    size = rng.integers(1, 4, 150_000)
    n = int(size.sum())
    p = _prep(size, n // 2)
    assert p.n_tar >= PK.JIT_MIN_TARGETS
    tb = _rows(p, 2, rng)
    got = RL._d_ece_rows(p, tb)  # the compiled path
    orig = RL.compiled_pav_target_blocks
    RL.compiled_pav_target_blocks = lambda: None
    try:
        ref = RL._d_ece_rows(p, tb)
    finally:
        RL.compiled_pav_target_blocks = orig
    assert np.array_equal(got, ref)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(sizes=st.lists(st.integers(1, 4), min_size=3, max_size=300), seed=st.integers(0, 2**32 - 1),
       share=st.floats(0.13, 0.95))
def test_kept_blocks_equals_the_position_draw(sizes, seed, share):
    """The compiled-path draw (kept_blocks, here as plain Python) gives the blocks of the positions the NumPy
    draw gives, from the same random stream."""
    size = np.array(sizes)
    n = int(size.sum())
    k = min(n - 1, max(1, int(share * n)))
    blk = np.repeat(np.arange(size.size), size).astype(np.int64)
    least = RL._U16_FROM_U64_MIN
    try:
        for RL._U16_FROM_U64_MIN in (least, 1):  # 16-bit draws, and 16-bit parts of 64-bit ones
            ref = blk[RL._k_of_n_sorted(np.random.default_rng(seed), n, k)]
            got = RL._k_of_n_sorted(np.random.default_rng(seed), n, k, blocks=blk, kept=PK.kept_blocks)
            assert np.array_equal(got, ref)
            assert np.array_equal(RL._k_of_n_sorted(np.random.default_rng(seed), n, k, blocks=blk), ref)
    finally:
        RL._U16_FROM_U64_MIN = least


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_relabellings_of_a_large_member_are_the_same_with_and_without_numba(monkeypatch, dtype):
    """A trial-scheme member above JIT_MIN_TARGETS: target blocks, eps_max (plain and pooled, the latter read
    through the block map) and D_ECE of its relabellings are bit-identical with VPEVAL_JIT on and off, with the
    per-trial blocks as int64 and as int32 (a score file without keys), and the compiled path is taken."""
    pytest.importorskip("numba")
    from vpeval.analysis.nulls import _member_rows

    rng = np.random.default_rng(11)
    size = rng.integers(1, 4, 3000)
    n = int(size.sum())
    blk = np.repeat(np.arange(size.size), size).astype(dtype)
    p = RL._TrialPrep(None, None, blk, np.r_[0, np.cumsum(size)], np.zeros(n, bool), n // 3, False)
    p.is_tar[np.sort(rng.choice(n, p.n_tar, replace=False))] = True
    monkeypatch.setattr(RL, "JIT_MIN_TARGETS", 16)
    stats = ("eps_max", "d_ece")
    fast = _member_rows(p, "trial", None, 5, [(0, 4), (4, 9)], stats)
    tb_fast = RL._trial_target_blocks(p, "trial", None, 5, slice(0, 9))
    calls = []
    kept = RL.compiled_kept_blocks()
    monkeypatch.setattr(RL, "compiled_kept_blocks", lambda: (lambda *a: calls.append(1) or kept(*a)))
    RL._trial_target_blocks(p, "trial", None, 5, slice(0, 9))
    assert calls  # the compiled draw, whatever the blocks' dtype
    monkeypatch.setattr(RL, "compiled_kept_blocks", lambda: None)
    monkeypatch.setattr(RL, "compiled_pav_target_blocks", lambda: None)
    slow = _member_rows(p, "trial", None, 5, [(0, 4), (4, 9)], stats)
    assert np.array_equal(RL._trial_target_blocks(p, "trial", None, 5, slice(0, 9)), tb_fast)
    for a, b in zip(fast, slow):
        assert a.size == 9 and np.array_equal(a, b)
