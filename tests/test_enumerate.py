"""Every k-subset of n listed once (vpeval.analysis.enumerate), for exact trial relabellings when
C(n, k) <= n_perm + 1: checked against itertools, hand-listed cases and the combinatorial identities."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpeval.analysis.enumerate import MAX_SUBSETS, all_k_subsets, k_subsets_at_most, n_k_subsets


def test_five_trials_two_targets_by_hand():
    """The breaker's case: 5 trials, 2 targets, C(5, 2) = 10 relabellings, fewer than any n_perm >= 19."""
    got = all_k_subsets(5, 2)
    assert got.dtype == np.int64 and got.shape == (10, 2)
    assert got.tolist() == [[0, 1], [0, 2], [0, 3], [0, 4], [1, 2], [1, 3], [1, 4], [2, 3], [2, 4], [3, 4]]
    # observed targets at positions 4 and 1 go first; the rest keep their order
    assert all_k_subsets(5, 2, first=np.array([4, 1])).tolist() == [
        [1, 4], [0, 1], [0, 2], [0, 3], [0, 4], [1, 2], [1, 3], [2, 3], [2, 4], [3, 4]]


@pytest.mark.parametrize("n, k, rows", [(3, 0, [[]]), (3, 3, [[0, 1, 2]]), (1, 1, [[0]]), (0, 0, [[]])])
def test_edges(n, k, rows):
    got = all_k_subsets(n, k)
    assert got.shape == (len(rows), k) and got.tolist() == rows
    assert n_k_subsets(n, k) == len(rows)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 11).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.randoms(use_true_random=False))))
def test_matches_itertools_and_puts_first_first(case):
    n, k, rnd = case
    want = [list(c) for c in itertools.combinations(range(n), k)]  # the slow oracle: lexicographic by definition
    got = all_k_subsets(n, k)
    assert got.tolist() == want and len(want) == n_k_subsets(n, k) == math.comb(n, k)
    if k:
        # each position is a target in exactly C(n-1, k-1) relabellings: the enumeration is uniform
        assert np.bincount(got.reshape(-1), minlength=n).tolist() == [math.comb(n - 1, k - 1)] * n
    obs = rnd.sample(range(n), k)  # any order
    moved = all_k_subsets(n, k, first=np.array(obs, dtype=np.int64))
    assert moved[0].tolist() == sorted(obs)
    assert moved[1:].tolist() == [r for r in want if r != sorted(obs)]


def test_refuses_bad_sizes_and_bad_first():
    for n, k in ((2, 3), (-1, 0), (3, -1), (3.0, 1), (True, 1)):
        with pytest.raises(ValueError):
            all_k_subsets(n, k)
    with pytest.raises(ValueError, match="exceed"):
        all_k_subsets(40, 20)  # C(40, 20) = 1.4e11: never listed
    assert math.comb(40, 20) > MAX_SUBSETS
    for bad in ([0, 0], [0, 5], [-1, 2], [1], [0.0, 1.0]):
        with pytest.raises(ValueError, match="first"):
            all_k_subsets(5, 2, first=bad)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 60), st.integers(0, 70), st.integers(-2, 10**6))
def test_bounded_count_agrees_with_the_full_count(n, k, limit):
    """k_subsets_at_most(n, k, limit) is exactly C(n, k) <= limit (the bound the trial relabelling's exact
    listing asks), without building C(n, k) when it is large."""
    assert k_subsets_at_most(n, k, limit) == (math.comb(n, k) <= limit)
    c = math.comb(n, k)
    assert k_subsets_at_most(n, k, c) and (c == 0 or not k_subsets_at_most(n, k, c - 1))


def test_bounded_count_is_fast_for_a_large_score_file():
    """1e7 trials with half targets: C(n, k) has about 1e7 bits (minutes for math.comb); the bound needs a few
    terms. Timed loosely (a wall-clock bound far above the microseconds it takes, far below the minutes)."""
    import time

    t0 = time.perf_counter()
    assert not k_subsets_at_most(10**7, 5 * 10**6, 100_001)
    assert k_subsets_at_most(10**7, 10**7 - 1, 10**7) and not k_subsets_at_most(10**7, 1, 10**7 - 1)
    assert time.perf_counter() - t0 < 1.0
    with pytest.raises(ValueError):
        k_subsets_at_most(5, 2, 1.5)
    with pytest.raises(ValueError):
        k_subsets_at_most(-1, 2, 3)
