"""Tie blocks: the shared O(n log n) sort behind every trial metric (internal).

Scores are merged and grouped into *blocks* of equal value, ascending. Each block carries its number of
target and non-target trials. Every rank-based metric (DET, both EERs, minDCF, PAV, minCllr, ZEBRA) is a
function of these counts only, which is why none of them depends on the order of the input lines and none
ever splits a block of tied scores.

Layering: this module sits below both :mod:`vpeval.metrics` and :mod:`vpeval.calibration` (it imports neither),
so both import it at module level; it is the one home of the tie-block, sorted-merge and PAV-bin primitives.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from ._checks import as_tar_non


@dataclass(frozen=True)
class TieBlocks:
    """Distinct scores ``values`` (ascending) with per-block counts ``n_tar`` and ``n_non`` (int64; int32 only
    while :func:`merge_sorted_pair` was asked for it, in the short-lived blocks of the summary and ``pav_llr``)."""

    values: np.ndarray
    n_tar: np.ndarray
    n_non: np.ndarray

    @property
    def total_tar(self) -> int:
        return int(self.n_tar.sum(dtype=np.int64))

    @property
    def total_non(self) -> int:
        return int(self.n_non.sum(dtype=np.int64))


#: Each class at least this large: the two classes are sorted at once, one in a helper thread (np.sort
#: releases the GIL), which halves the sorting time on an idle machine of two or more cores.
PARALLEL_SORT_MIN = 1 << 18


def sorted_copy(x: np.ndarray) -> np.ndarray:
    """``np.sort(x)`` of a 1-D float array, as a copy of ``x`` when ``x`` is already ascending (one comparison pass
    instead of a sort: callers that sort the scores once and hand them on, e.g.
    :func:`vpeval.disclosure.worst_case_disclosure` to each of its estimators, are not sorted again). The same
    values either way: an ascending array without zeros of both signs is its own sort (tied floats are equal bit
    for bit, except ``-0.0`` and ``0.0``, so arrays holding a zero are always sorted). A read-only ascending array
    is returned itself, not copied (nobody can write into it: e.g. :meth:`vpeval.io.trials.Trials.sorted_classes`
    handed to :func:`vpeval.metrics.verification_summary`, which would otherwise hold a second sorted copy of
    every score)."""
    x = np.asarray(x)
    if x.ndim == 1 and x.size > 1 and x.dtype.kind == "f" and bool((x[1:] >= x[:-1]).all()) and not (
            x[0] <= 0.0 <= x[-1] and np.count_nonzero(x == 0.0)):
        return x if not x.flags.writeable else x.copy()
    return np.sort(x)


def sorted_pair(tar: np.ndarray, non: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(np.sort(tar), np.sort(non))`` (:func:`sorted_copy`); for two large classes the sorts run in two threads
    (same arrays)."""
    if min(tar.size, non.size) < PARALLEL_SORT_MIN:
        return sorted_copy(tar), sorted_copy(non)
    out: list = [None]

    def sort_non():
        try:
            out[0] = sorted_copy(non)
        except MemoryError:  # retried below in the calling thread, where it surfaces (no thread traceback)
            pass

    helper = threading.Thread(target=sort_non, name="vpeval-sort")
    helper.start()
    try:
        st = sorted_copy(tar)
    finally:
        helper.join()
    if out[0] is None:  # the helper failed (e.g. out of memory): sort here, where errors surface
        out[0] = sorted_copy(non)
    return st, out[0]


def tie_blocks(tar, non) -> TieBlocks:
    """Group validated ``tar``/``non`` scores into ascending blocks of equal score."""
    tar, non = as_tar_non(tar, non)
    return merge_sorted(*sorted_pair(tar, non))


_CHUNK = 1 << 16  # elements per temporary in the chunked passes below (bounded working memory)


def merge_sorted(st: np.ndarray, sn: np.ndarray, count_dtype=np.int64) -> TieBlocks:
    """Tie blocks of two ascending arrays (targets ``st``, non-targets ``sn``); see :func:`merge_sorted_pair`."""
    return merge_sorted_pair([st, sn], count_dtype)


def merge_sorted_pair(pair: list, count_dtype=np.int64) -> TieBlocks:
    """Tie blocks of two ascending arrays (targets ``st``, non-targets ``sn``).

    The sorted targets fall into the blocks in order, ``n_tar[k]`` of them in block ``k`` (likewise the
    non-targets), so a per-block quantity reaches every sorted trial by ``np.repeat(per_block, n_tar)``.

    The merge is a binary search of the sorted targets in the non-targets: target ``i`` lands at ``i`` plus the
    number of non-targets strictly below it, and the non-targets fill the remaining positions in order, so
    targets precede tied non-targets (the order of a stable sort of the concatenation). Block counts are the
    differences of the running class counts at the block starts. Every pass runs in chunks of ``_CHUNK``
    elements: the working memory is the merged values (8 bytes per trial) and a class flag (1 byte per trial),
    with no permutation or per-trial index array.

    ``count_dtype`` is the integer type of ``n_tar``/``n_non``: int64 (the default) or, for callers that keep
    the blocks only briefly and have fewer than ``2**31`` trials, int32 to halve the blocks' counts.

    ``pair`` is the list ``[st, sn]``; it is emptied once the merged values exist, so the two sorted arrays are
    freed then if the caller keeps no other reference to them.
    """
    st, sn = pair
    pair.clear()
    nt, nn = st.size, sn.size
    n = nt + nn
    if np.dtype(count_dtype).itemsize < 8 and n >= 2 ** 31:
        raise ValueError("int32 block counts need fewer than 2**31 trials")
    # each target's merged position; the non-targets fill the other positions, in order
    is_tar = np.zeros(n, dtype=bool)
    for i in range(0, nt, _CHUNK):
        pos = np.searchsorted(sn, st[i:i + _CHUNK], side="left")
        pos += np.arange(i, i + pos.size)
        is_tar[pos] = True
        del pos
    v = np.empty(n, dtype=np.float64)
    v[is_tar] = st
    st = None
    np.logical_not(is_tar, out=is_tar)
    v[is_tar] = sn
    sn = None
    np.logical_not(is_tar, out=is_tar)
    new_block = np.empty(n, dtype=bool)
    new_block[0] = True
    np.not_equal(v[1:], v[:-1], out=new_block[1:])
    values = v[new_block]
    del v
    m = values.size
    n_tar = np.empty(m, dtype=count_dtype)  # first: targets before the block; then: targets in it
    n_non = np.empty(m, dtype=count_dtype)
    k = 0
    carry = 0
    for i in range(0, n, _CHUNK):
        t = is_tar[i:i + _CHUNK]
        s = new_block[i:i + _CHUNK]
        before = np.cumsum(t, dtype=np.int64)
        chunk_tar = int(before[-1])
        before -= t
        before += carry
        at = before[s]
        del before
        kk = at.size
        n_tar[k:k + kk] = at
        n_non[k:k + kk] = (np.flatnonzero(s) + i) - at  # non-targets before the block
        carry += chunk_tar
        k += kk
    del is_tar, new_block
    for c, total in ((n_tar, nt), (n_non, nn)):
        for i in range(0, m - 1, _CHUNK):
            j = min(i + _CHUNK, m - 1)
            c[i:j] = c[i + 1:j + 1] - c[i:j]  # the right side is evaluated before c[i:j] is written
        c[m - 1] = total - c[m - 1]
    return TieBlocks(values, n_tar, n_non)


def compress_runs(held: list) -> TieBlocks:
    """The blocks with every maximal run of adjacent one-class blocks pooled into one block (int64 counts).

    ``held`` is the list ``[blocks]``; it is emptied, so the full blocks are freed as soon as each of their
    arrays is compressed if the caller keeps no other reference. ``values`` holds the score of each run's first
    block. PAV (:func:`pav_bins`) pools such runs anyway, so the PAV bins of the compressed blocks have the
    same counts (their ``start`` then indexes the runs), and every PAV-based number (ROCCH, minCllr, D_ECE,
    the PAV LLR of a score) is the same; the DET points inside a run are lost, so the DET, the interpolated
    EER and minDCF must come from the full blocks.
    """
    b = held.pop()
    values, n_tar, n_non = b.values, b.n_tar, b.n_non
    del b
    first = _run_starts(n_tar, n_non)
    if first is None:
        return TieBlocks(values, n_tar.astype(np.int64, copy=False), n_non.astype(np.int64, copy=False))
    # sums in the counts' own type (a run holds fewer trials than the class), widened afterwards: a widening
    # reduceat would first cast the whole count array
    rt = np.add.reduceat(n_tar, first).astype(np.int64, copy=False)
    del n_tar
    rn = np.add.reduceat(n_non, first).astype(np.int64, copy=False)
    del n_non
    values = values[first]
    return TieBlocks(values, rt, rn)


def operating_point_chunks(b: TieBlocks):
    """The points of :func:`operating_points` chunk by chunk: yields ``(pmiss, pfa)`` of consecutive slices.

    The values are identical to :func:`operating_points` (running counts are integers below 2**53, exact in
    float64), without its two full-length arrays.
    """
    nt, nn = b.total_tar, b.total_non
    m = b.n_tar.size
    ct = cn = 0.0
    for i in range(0, m + 1, _CHUNK):
        j = min(i + _CHUNK, m + 1)
        pm = np.empty(j - i, dtype=np.float64)
        pf = np.empty(j - i, dtype=np.float64)
        pm[0], pf[0] = ct, cn
        np.cumsum(b.n_tar[i:j - 1], dtype=np.float64, out=pm[1:])
        np.cumsum(b.n_non[i:j - 1], dtype=np.float64, out=pf[1:])
        pm[1:] += ct
        pf[1:] += cn
        if j - 1 < m:
            ct = pm[-1] + float(b.n_tar[j - 1])
            cn = pf[-1] + float(b.n_non[j - 1])
        pm /= nt
        np.subtract(nn, pf, out=pf)
        pf /= nn
        yield pm, pf


def lookup_bins(x: np.ndarray, start_values: np.ndarray, *per_bin: np.ndarray) -> tuple[np.ndarray, ...]:
    """For each table of ``per_bin``: the entry of the bin each score of ``x`` lies in, in the order of ``x``.

    Bin ``k`` holds the scores from ``start_values[k]`` (the score of its first tie block) up to the next
    bin's; every score of ``x`` must be one of the blocks' scores, at or above ``start_values[0]``. A bin
    whose start value repeats the next one's holds no score of ``x`` (binary search takes the last bin
    starting at or below the score). One binary search per score serves all tables; it runs in chunks,
    writing into the returned arrays, with no sort or permutation of ``x``.
    """
    outs = tuple(np.empty(x.size, dtype=t.dtype) for t in per_bin)
    for i in range(0, x.size, _CHUNK):
        idx = np.searchsorted(start_values, x[i:i + _CHUNK], side="right")
        idx -= 1
        for t, o in zip(per_bin, outs):
            np.take(t, idx, out=o[i:i + _CHUNK])
    return outs


def bins_on_grid(grid: np.ndarray, start_values: np.ndarray, per_bin: np.ndarray) -> np.ndarray:
    """``per_bin`` of the bin (as in :func:`lookup_bins`) of each score of ``grid``, a superset of the bin
    start values: re-expresses one bin table on a finer common set of starts."""
    return per_bin[np.searchsorted(start_values, grid, side="right") - 1]


def bin_start_values(b: TieBlocks, bins: PAVBins, pseudo: bool = False):
    """Score of the first block of every PAV bin that holds real blocks, for :func:`lookup_bins`.

    Returns ``(start_values, keep)``: ``keep`` (``None`` without ``pseudo``) selects the bins that hold real
    blocks. Laplace bins (``pseudo``) index the blocks extended by the two pseudo-blocks (0 and ``len + 1``):
    their starts shift down by one, the first bin starts at the lowest score, and a bin of the top pseudo-block
    only is left out.
    """
    if not pseudo:
        return b.values[bins.start], None
    keep = bins.start <= b.n_tar.size
    return b.values[np.maximum(bins.start[keep] - 1, 0)], keep


def pav_trial_llrs(tar: np.ndarray, non: np.ndarray, laplace: bool) -> tuple[np.ndarray, np.ndarray]:
    """PAV LLRs (nats) of validated ``tar``/``non`` trials, in input order (the work of ``pav_llr``).

    One sort per class, the merge of :func:`merge_sorted_pair` (int32 counts below 2**31 trials), the blocks
    pooled into class runs, one PAV fit, then each score's bin by binary search: no argsort or scatter.
    """
    n = tar.size + non.size
    held = [merge_sorted_pair(list(sorted_pair(tar, non)), np.int32 if n < 2 ** 31 else np.int64)]
    b = compress_runs(held)
    bins = pav_bins(b.n_tar, b.n_non, pseudo=laplace)
    llr = bin_llr(bins.n_tar, bins.n_non, b.total_tar, b.total_non)
    start, keep = bin_start_values(b, bins, laplace)
    del b, bins
    if keep is not None:
        llr = llr[keep]
    (t,), (nn,) = lookup_bins(tar, start, llr), lookup_bins(non, start, llr)
    return t, nn


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


def _run_starts(n_tar: np.ndarray, n_non: np.ndarray):
    """First block of every maximal run of adjacent blocks that hold targets only, or non-targets only (a
    mixed block is a run of its own); ``None`` when every block is its own run."""
    kind = (n_non == 0).view(np.int8) - (n_tar == 0).view(np.int8)  # 1 targets only, -1 non-targets only
    new = np.empty(kind.size, dtype=bool)
    new[0] = True
    np.not_equal(kind[1:], kind[:-1], out=new[1:])
    new[1:] |= kind[1:] == 0
    del kind
    if new.all():
        return None
    return np.flatnonzero(new)


def _pure_runs(n_tar: np.ndarray, n_non: np.ndarray):
    """Maximal runs of adjacent blocks that hold targets only, or non-targets only; a mixed block is a run.

    Returns (first block of each run or ``None`` if every block is its own run, targets per run, non-targets
    per run); the counts are the inputs themselves when ``None``.
    """
    first = _run_starts(n_tar, n_non)
    if first is None:
        return None, n_tar, n_non
    return first, np.add.reduceat(n_tar, first), np.add.reduceat(n_non, first)


def _pav_starts(n_tar: np.ndarray, n_non: np.ndarray, pseudo: bool = False) -> np.ndarray:
    """First block index of every PAV bin (scipy's isotonic regression over block proportions).

    ``pseudo`` fits the sequence extended by one pseudo-block of one target and one non-target at each end
    (indices 0 and ``len + 1``), without materialising the extended counts.
    """
    # imported here: scipy.optimize takes about 0.3 s to import, which commands and imports that fit no PAV
    # (``import vpeval``, ``vpeval --help``, the 1-to-N commands) should not pay
    from scipy.optimize import isotonic_regression

    k = n_tar.size + (2 if pseudo else 0)
    w = np.empty(k, dtype=np.float64)
    y = np.empty(k, dtype=np.float64)
    body = slice(1, -1) if pseudo else slice(None)
    np.add(n_tar, n_non, out=w[body], dtype=np.float64)  # integer counts: exact
    np.divide(n_tar, w[body], out=y[body])
    if pseudo:
        w[0] = w[-1] = 2.0
        y[0] = y[-1] = 0.5
    res = isotonic_regression(y, weights=w, increasing=True)
    del w, y
    # a copy: scipy's ``blocks`` is a view into an array as long as the input
    return np.array(res.blocks[:-1], dtype=np.int64)


def _bin_sums(c: np.ndarray, at: np.ndarray, pseudo: bool) -> np.ndarray:
    """``np.add.reduceat(c_ext, at)`` of ``c`` (extended by a count of 1 at both ends when ``pseudo``)."""
    if not pseudo:
        return np.add.reduceat(c, at)
    e = np.clip(at - 1, 0, c.size)  # first real index of each bin
    nonempty = np.empty(e.size, dtype=bool)
    nonempty[:-1] = e[1:] > e[:-1]
    nonempty[-1] = e[-1] < c.size
    out = np.zeros(at.size, dtype=np.result_type(c.dtype, np.int64))
    # consecutive non-empty bins tile the real indices, so reduceat over their starts sums exactly each bin
    out[nonempty] = np.add.reduceat(c, e[nonempty])
    out[0] += 1
    out[-1] += 1
    return out


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
    at = _pav_starts(rt, rn, pseudo)  # bins as runs of class runs; their counts are sums of whole runs
    bt, bn = _bin_sums(rt, at, pseudo), _bin_sums(rn, at, pseudo)
    del rt, rn
    if first is not None:
        if pseudo:
            first = np.concatenate([[0], first + 1, [n_tar.size + 1]])
        at = first[at]
    return PAVBins(at, bt, bn)


def bin_llr(n_tar_bin, n_non_bin, total_tar: int, total_non: int) -> np.ndarray:
    """LLR (nats) of bins with the given counts: ``ln(T/N) - ln(Nt/Nn)``, +-inf for pure bins."""
    t = np.asarray(n_tar_bin, dtype=np.float64)
    n = np.asarray(n_non_bin, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return (np.log(t) - np.log(n)) - (np.log(total_tar) - np.log(total_non))


def pav_bin_llr(b: TieBlocks, laplace: bool, bins: PAVBins | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """PAV LLR (nats) of every PAV bin, with the bin's real target and non-target counts.

    ``laplace`` adds the privacy-ZEBRA end-point pseudo-trials for the fit; the counts returned leave them out,
    so ``np.repeat(llr, n_tar)`` are the LLRs of the sorted targets (a bin of pseudo-trials only has counts
    0). Equal to :func:`pav_block_llr` bin by bin, without a per-block array. ``bins`` may pass the result of
    ``pav_bins(b.n_tar, b.n_non, pseudo=laplace)`` when the caller has it already.
    """
    if bins is None:
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
