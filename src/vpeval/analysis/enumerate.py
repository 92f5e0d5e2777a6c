"""Every relabelling listed once, for the trial scheme of the perfect-secrecy test (internal).

A trial relabelling of a member with ``n`` trials and ``k`` targets is a ``k``-subset of the ``n`` canonical
trial positions (:mod:`vpeval.analysis.relabel`). When there are few of them (``C(n, k) <= n_perm + 1``, e.g. 5
trials with 2 targets: 10), drawing ``n_perm`` at random repeats some and misses others, and the p-value then
depends on the seed; listing each once makes the permutation distribution exact and the p-value seed-free, as
:func:`~vpeval.analysis.relabel._speaker_perms` does for speaker permutations when ``|S|! <= n_perm + 1``
(Good, "Permutation, Parametric and Bootstrap Tests of Hypotheses", 2005, Ch. 3: the exact test enumerates
the whole permutation group, here the ``C(n, k)`` cosets of label-preserving permutations).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

__all__ = ["n_k_subsets", "k_subsets_at_most", "all_k_subsets"]

#: Most rows :func:`all_k_subsets` builds (the CLI's largest --n-perm is 100,000: 100,001 relabellings).
MAX_SUBSETS = 1_000_000


def n_k_subsets(n: int, k: int) -> int:
    """``C(n, k)``, the number of ``k``-subsets of ``n`` positions (0 when ``k > n``).

    >>> n_k_subsets(5, 2), n_k_subsets(3, 0), n_k_subsets(2, 3)
    (10, 1, 0)
    """
    n, k = _sizes(n, k)
    return math.comb(n, k)


def k_subsets_at_most(n: int, k: int, limit: int) -> bool:
    """Whether ``C(n, k) <= limit``, in O(min(j, k, n - k)) small-integer steps, ``j`` the first index with
    ``C(n, j) > limit``.

    :func:`n_k_subsets` computes ``C(n, k)`` in full: an integer of about ``n`` bits for ``k = n / 2``, which
    ``math.comb`` takes seconds to build at ``n = 1e6`` and minutes at ``n = 1e7`` (a 1e7-line score file with
    half targets). Deciding whether the subsets can be listed only needs the bound: ``C(n, j)`` grows with
    ``j`` up to ``j = min(k, n - k) <= n / 2``, so it is built term by term (``C(n, j + 1) = C(n, j) (n - j) /
    (j + 1)``, exact integers) and the loop stops at the first term above ``limit``.

    Raises
    ------
    ValueError
        ``n`` or ``k`` not integers ``>= 0``, or ``limit`` not an integer.

    >>> k_subsets_at_most(5, 2, 10), k_subsets_at_most(5, 2, 9), k_subsets_at_most(10**7, 5 * 10**6, 1000)
    (True, False, False)
    >>> k_subsets_at_most(2, 3, 0)  # no 3-subset of 2 positions: C(2, 3) = 0
    True
    """
    n, k = _sizes(n, k)
    if isinstance(limit, (bool, np.bool_)) or not isinstance(limit, (int, np.integer)):
        raise ValueError(f"limit must be an integer, got {limit!r}")
    limit = int(limit)
    if k > n:
        return 0 <= limit
    c = 1
    for j in range(min(k, n - k)):
        if c > limit:
            return False
        c = c * (n - j) // (j + 1)
    return c <= limit


def all_k_subsets(n: int, k: int, first=None) -> np.ndarray:
    """Every ``k``-subset of ``0 .. n-1`` once, each ascending, rows in lexicographic order.

    Parameters
    ----------
    n, k : int
        Positions and subset size, ``0 <= k <= n``.
    first : array_like of int, optional
        One ``k``-subset (e.g. the observed targets' positions, in any order) to put in row 0; the other rows
        keep their lexicographic order. The relabelling test's row 0 is the observed labelling.

    Returns
    -------
    ndarray of shape (C(n, k), k), int64
        Row ``r`` holds the positions of the ``r``-th subset, ascending. ``k = 0``: one empty row.

    Raises
    ------
    ValueError
        ``n`` or ``k`` not integers with ``0 <= k <= n``; more than :data:`MAX_SUBSETS` subsets (call it only
        when ``C(n, k) <= n_perm + 1``); ``first`` not a ``k``-subset of ``0 .. n-1`` (repeated or out of range
        positions, wrong size).

    Examples
    --------
    >>> all_k_subsets(4, 2).tolist()
    [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]]
    >>> all_k_subsets(4, 2, first=[3, 1]).tolist()
    [[1, 3], [0, 1], [0, 2], [0, 3], [1, 2], [2, 3]]
    """
    n, k = _sizes(n, k)
    if k > n:
        raise ValueError(f"subset size k = {k} exceeds the n = {n} positions")
    count = math.comb(n, k)
    if count > MAX_SUBSETS:
        raise ValueError(f"C({n}, {k}) = {count:,} subsets exceed {MAX_SUBSETS:,}; draw relabellings instead")
    flat = np.fromiter(itertools.chain.from_iterable(itertools.combinations(range(n), k)), dtype=np.int64,
                       count=count * k)
    rows = flat.reshape(count, k)
    if first is None:
        return rows
    raw = np.asarray(first)
    if raw.dtype.kind not in "iu" and raw.size:
        raise ValueError(f"first must be integer positions, got dtype {raw.dtype}")
    f = np.sort(raw.astype(np.int64).reshape(-1))
    if f.size != k or (k and (f[0] < 0 or f[-1] >= n or np.any(np.diff(f) == 0))):
        raise ValueError(f"first must be {k} distinct positions in 0 .. {n - 1}, got {np.asarray(first).tolist()}")
    r = _rank(f, n)
    return np.concatenate([rows[r:r + 1], rows[:r], rows[r + 1:]])


def _rank(subset: np.ndarray, n: int) -> int:
    """Lexicographic rank of an ascending ``k``-subset of ``0 .. n-1`` (the combinatorial number system)."""
    k = subset.size
    rank, prev = 0, -1
    for i, c in enumerate(subset.tolist()):
        for v in range(prev + 1, c):  # subsets that take v (< c) at place i come first
            rank += math.comb(n - 1 - v, k - 1 - i)
        prev = c
    return rank


def _sizes(n, k) -> tuple[int, int]:
    for name, v in (("n", n), ("k", k)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {v!r}")
    return int(n), int(k)
