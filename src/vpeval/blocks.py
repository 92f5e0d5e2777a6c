"""Tie blocks: the shared O(n log n) sort behind every trial metric (internal).

Scores are merged and grouped into *blocks* of equal value, ascending. Each block carries its number of
target and non-target trials. Every rank-based metric (DET, both EERs, minDCF, PAV, minCllr, ZEBRA) is a
function of these counts only, which is why none of them depends on the order of the input lines and none
ever splits a block of tied scores.

Layering: this module sits below both :mod:`vpeval.metrics` and :mod:`vpeval.calibration` (it imports neither),
so both import it at module level; it is the one home of the tie-block, sorted-merge and PAV-bin primitives.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import isotonic_regression

from ._checks import as_tar_non


@dataclass(frozen=True)
class TieBlocks:
    """Distinct scores ``values`` (ascending) with per-block counts ``n_tar`` and ``n_non`` (int64)."""

    values: np.ndarray
    n_tar: np.ndarray
    n_non: np.ndarray

    @property
    def total_tar(self) -> int:
        return int(self.n_tar.sum())

    @property
    def total_non(self) -> int:
        return int(self.n_non.sum())


def tie_blocks(tar, non) -> TieBlocks:
    """Group validated ``tar``/``non`` scores into ascending blocks of equal score."""
    tar, non = as_tar_non(tar, non)
    return merge_sorted(np.sort(tar), np.sort(non))


def merge_sorted(st: np.ndarray, sn: np.ndarray) -> TieBlocks:
    """Tie blocks of two ascending arrays (targets ``st``, non-targets ``sn``).

    The sorted targets fall into the blocks in order, ``n_tar[k]`` of them in block ``k`` (likewise the
    non-targets), so a per-block quantity reaches every sorted trial by ``np.repeat(per_block, n_tar)``
    (:func:`scatter_blocks`). Working memory: one merge permutation and the blocks, no per-trial block index.
    """
    nt = st.size
    both = np.concatenate([st, sn])
    # A stable sort of two sorted runs is a linear merge (timsort); targets precede tied non-targets.
    order = np.argsort(both, kind="stable")
    v = both[order]
    del both
    is_tar = order < nt
    del order
    new_block = np.empty(v.size, dtype=bool)
    new_block[0] = True
    np.not_equal(v[1:], v[:-1], out=new_block[1:])
    starts = np.flatnonzero(new_block)
    del new_block
    values = v[starts]
    del v
    n_tar = np.add.reduceat(is_tar, starts, dtype=np.int64)
    del is_tar
    n_non = np.empty(starts.size, dtype=np.int64)
    np.subtract(starts[1:], starts[:-1], out=n_non[:-1])
    n_non[-1] = st.size + sn.size - starts[-1]
    del starts
    n_non -= n_tar
    return TieBlocks(values, n_tar, n_non)


def scatter_blocks(per_block: np.ndarray, counts: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Per-trial values in input order from per-block values.

    ``order`` is the argsort of one class's scores and ``counts`` that class's per-block counts
    (``TieBlocks.n_tar`` or ``n_non``): the k-th sorted trial lies in the block ``np.repeat`` assigns it.
    """
    out = np.empty(order.size, dtype=per_block.dtype)
    out[order] = np.repeat(per_block, counts)
    return out


def operating_points(b: TieBlocks) -> tuple[np.ndarray, np.ndarray]:
    """(pmiss, pfa) at thresholds ``b.values`` followed by ``+inf``; length ``len(values) + 1``.

    Decision rule: accept as target iff ``score >= t``.
    """
    nt, nn = b.total_tar, b.total_non
    # Counts are integers below 2**53, so accumulating them in float64 is exact.
    pmiss = np.empty(b.n_tar.size + 1, dtype=np.float64)
    pmiss[0] = 0.0
    np.cumsum(b.n_tar, dtype=np.float64, out=pmiss[1:])  # targets strictly below each threshold
    pmiss /= nt
    pfa = np.empty(b.n_non.size + 1, dtype=np.float64)
    pfa[0] = 0.0
    np.cumsum(b.n_non, dtype=np.float64, out=pfa[1:])
    np.subtract(nn, pfa, out=pfa)  # non-targets at or above
    pfa /= nn
    return pmiss, pfa


@dataclass(frozen=True)
class PAVBins:
    """Pooled PAV bins over tie blocks.

    ``start`` holds, for every PAV bin, the index of its first tie block; ``n_tar``/``n_non`` are the exact
    integer counts of the bin, so posteriors are exact ratios and never depend on float summation.
    """

    start: np.ndarray
    n_tar: np.ndarray
    n_non: np.ndarray


def _pure_runs(n_tar: np.ndarray, n_non: np.ndarray):
    """Maximal runs of adjacent blocks that hold targets only, or non-targets only; a mixed block is a run.

    Returns (first block of each run, targets per run, non-targets per run).
    """
    kind = (n_non == 0).view(np.int8) - (n_tar == 0).view(np.int8)  # 1 targets only, -1 non-targets only
    new = np.empty(kind.size, dtype=bool)
    new[0] = True
    np.not_equal(kind[1:], kind[:-1], out=new[1:])
    new[1:] |= kind[1:] == 0
    del kind
    first = np.flatnonzero(new)
    del new
    return first, np.add.reduceat(n_tar, first), np.add.reduceat(n_non, first)


def _pav_starts(n_tar: np.ndarray, n_non: np.ndarray) -> np.ndarray:
    """First block index of every PAV bin (scipy's isotonic regression over block proportions)."""
    w = np.add(n_tar, n_non, dtype=np.float64)  # integer counts: exact
    res = isotonic_regression(n_tar / w, weights=w, increasing=True)
    del w
    return np.asarray(res.blocks[:-1], dtype=np.int64)


def pav_bins(n_tar: np.ndarray, n_non: np.ndarray, *, pseudo: bool = False) -> PAVBins:
    """Pool adjacent violators over blocks with counts ``n_tar``/``n_non`` (ascending score order).

    The isotonic (non-decreasing) least-squares fit of the block target proportions, weighted by block
    size, is computed by :func:`scipy.optimize.isotonic_regression`; the bins it returns are then re-counted
    exactly from the integer block counts. ``pseudo=True`` adds privacy-ZEBRA's Laplace pseudo-blocks (one
    target and one non-target below the lowest and above the highest block) and returns the bins of the
    extended sequence (block index 0 and ``len(n_tar) + 1`` are the pseudo-blocks).

    Adjacent blocks of one class only (proportion exactly 0 or 1) are pooled before the fit. scipy pools
    equal adjacent values itself, summing integer-valued weights exactly, so the bins are the same; the fit
    runs over class runs instead of blocks (about a third of the blocks for overlapping score classes).
    """
    first, rt, rn = _pure_runs(n_tar, n_non)
    if pseudo:
        one = np.ones(1, dtype=np.int64)
        rt, rn = np.concatenate([one, rt, one]), np.concatenate([one, rn, one])
        first = np.concatenate([[0], first + 1, [n_tar.size + 1]])
    at = _pav_starts(rt, rn)  # bins as runs of class runs; their counts are sums of whole runs
    return PAVBins(first[at], np.add.reduceat(rt, at), np.add.reduceat(rn, at))


def bin_llr(n_tar_bin, n_non_bin, total_tar: int, total_non: int) -> np.ndarray:
    """LLR (nats) of bins with the given counts: ``ln(T/N) - ln(Nt/Nn)``, +-inf for pure bins."""
    t = np.asarray(n_tar_bin, dtype=np.float64)
    n = np.asarray(n_non_bin, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return (np.log(t) - np.log(n)) - (np.log(total_tar) - np.log(total_non))


def pav_bin_llr(b: TieBlocks, laplace: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """PAV LLR (nats) of every PAV bin, with the bin's real target and non-target counts.

    ``laplace`` adds the privacy-ZEBRA end-point pseudo-trials for the fit; the counts returned leave them out,
    so ``np.repeat(llr, n_tar)`` are the LLRs of the sorted targets (a bin of pseudo-trials only has counts
    0). Equal to :func:`pav_block_llr` bin by bin, without a per-block array.
    """
    bins = pav_bins(b.n_tar, b.n_non, pseudo=laplace)
    llr = bin_llr(bins.n_tar, bins.n_non, b.total_tar, b.total_non)
    n_tar, n_non = bins.n_tar, bins.n_non
    if laplace:
        n_tar, n_non = n_tar.copy(), n_non.copy()
        for c in (n_tar, n_non):
            c[0] -= 1
            c[-1] -= 1
    return llr, n_tar, n_non


def pav_block_llr(b: TieBlocks, laplace: bool) -> np.ndarray:
    """PAV LLR (nats) of every tie block; ``laplace`` adds the privacy-ZEBRA end-point pseudo-trials."""
    bins = pav_bins(b.n_tar, b.n_non, pseudo=laplace)
    llr = bin_llr(bins.n_tar, bins.n_non, b.total_tar, b.total_non)
    n_ext = b.n_tar.size + (2 if laplace else 0)
    sizes = np.diff(np.append(bins.start, n_ext))
    block_llr = np.repeat(llr, sizes)
    if laplace:
        block_llr = block_llr[1:-1]
    return block_llr
