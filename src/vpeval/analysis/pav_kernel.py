"""The PAV fit of many relabellings at once, as one compiled loop (internal to :mod:`vpeval.analysis.relabel`).

:func:`pav_target_blocks` takes the sorted tie blocks of each relabelling's targets and returns the blocks of
each relabelling's PAV fit as exact integer counts, with a stack (pool adjacent violators) over the points a
coarse convex hull leaves in play. Compiled
by numba (:func:`vpeval.jit.compiled`), it replaces the NumPy path of :func:`vpeval.analysis.relabel._d_ece_rows`
(about ten array passes and SciPy's isotonic regression per chunk) for members of at least
:data:`JIT_MIN_TARGETS` targets, and :func:`kept_blocks` turns a dense draw of
:func:`vpeval.analysis.relabel._k_of_n_sorted` into its target blocks in one pass. On a 1e7-line score file a
relabelling takes about 3.4x less time (55 against 189 ms; ``benchmarks/relabel_kernel.py``, 2026-12-03; BENCHMARKS.md
has the figures).

**The two paths give the same PAV blocks.** The fit is unique, and both return its *maximal* level sets: the
stack pools whenever the lower block's proportion is at least the upper one's, compared exactly as integer
cross-products, so no two adjacent blocks it returns have equal proportions; the NumPy path pools equal
neighbours after SciPy's fit (:func:`vpeval.analysis.relabel._merge_level_ties`). Both then compute D_ECE from
the same integer counts with the same NumPy code, in the same order, so D_ECE is bit-identical. The one caveat
is SciPy's: its fit compares floating-point weighted means, which could misorder two blocks whose exact
proportions differ in the 14th digit; the tests compare the paths bit for bit on hypothesis-drawn inputs.
"""

from __future__ import annotations

import numpy as np

from ..jit import compiled

__all__ = ["pav_target_blocks", "pav_target_blocks_every_unit", "compiled_pav_target_blocks", "kept_blocks",
           "compiled_kept_blocks", "JIT_MIN_TARGETS"]

#: Relabellings of at least this many targets each use the compiled loop when numba is installed: below it,
#: importing numba (about 0.4 s a process) costs more than the loop saves.
JIT_MIN_TARGETS = 1 << 16


def pav_target_blocks(tb, cum, n, out_t, out_w, out_row):
    """The PAV blocks of every relabelling (row of ``tb``), written to ``out_*``; returns their number ``m``.

    Parameters
    ----------
    tb : int64 array of shape (R, K), C-contiguous
        Per relabelling, the tie block of each of its ``K`` targets, ascending along the row (a block holding
        several targets appears several times).
    cum : int64 array of shape (B + 1,)
        ``[0, cumsum(block sizes)]`` of the ``B`` tie blocks in ascending score order.
    n : int
        Trials, ``cum[B]``.
    out_t, out_w, out_row : int64 arrays of shape (R * K,)
        Filled in ``[0, m)`` with each PAV block's targets, trials, and row, rows ascending and blocks
        ascending within a row.

    Notes
    -----
    A *unit* is a block holding targets with the target-free blocks above it (up to the next block holding
    targets, or the top); the trials below a row's lowest target block are left out (their PAV block has no
    target, so its contribution to D_ECE is 0), as in :func:`vpeval.analysis.relabel._d_ece_rows`. The PAV fit
    over the units is the greatest convex minorant of their cumulative points ``(x, y)`` = (trials, targets)
    before each unit, from ``(0, 0)`` to the end ``(n - cum[lowest target block], K)``; its blocks are the
    pieces between the minorant's vertices (Barlow et al., *Statistical Inference under Order Restrictions*,
    1972, ch. 1; maximal pieces: collinear points are not vertices). Two passes per row:

    1. The lower convex hull of a subsample: the unit starts at (or just before) every ``L``-th target and the
       end. Its vertices are points of the set, so the full minorant lies on or below it, and a point strictly
       above it is no vertex of the minorant.
    2. A stack over the points on or below that hull only, each pooled with the block below while that block's
       proportion ``t / w`` is at least its own (``t_lo * w >= t * w_lo``). The minorant of these candidates
       is the full one (they include all its vertices). A run of ``L`` targets whose lowest possible point (its
       first target's count, its last target's trials) is strictly above the hull is skipped without reading
       it.

    Every comparison is exact in int64 (cross-products below ``2 K n``, so for ``n < 2e9`` trials). Under
    perfect secrecy a relabelling's points hug one line, and on a 1e7-line score file about 340 of 3.3 million
    unit starts remained in pass 2: 10 ms a relabelling instead of 46 ms for the stack over every unit
    (``benchmarks/relabel_kernel.py``, medians of 7). The blocks are the same (the stack over every unit is the
    tests' oracle). Slow in plain Python; :func:`compiled_pav_target_blocks` returns the compiled form.
    """
    R, K = tb.shape
    L = max(2, min(_SUBSAMPLE, K // _SUBSAMPLE))
    hx = np.empty((K + L - 1) // L + 2, dtype=np.int64)  # the subsample's hull: vertices (x, y)
    hy = np.empty((K + L - 1) // L + 2, dtype=np.int64)
    m = 0
    for r in range(R):
        c0 = cum[tb[r, 0]]
        end_x = n - c0
        # pass 1: hull of the unit starts at or before targets L, 2L, ... and of the end point
        h = 1
        hx[0] = 0
        hy[0] = 0
        for s in range(L, K + L, L):
            if s < K:
                j = s
                b = tb[r, j]
                while j > 0 and tb[r, j - 1] == b:  # back to the first target of its block: a unit start
                    j -= 1
                if j <= hy[h - 1]:
                    continue
                x = cum[b] - c0
                y = np.int64(j)
            else:
                x = end_x
                y = np.int64(K)
            # drop the last vertex while it is on or above the chord from the one before it to (x, y)
            while h >= 2 and (hy[h - 1] - hy[h - 2]) * (x - hx[h - 2]) >= (y - hy[h - 2]) * (hx[h - 1] - hx[h - 2]):
                h -= 1
            hx[h] = x
            hy[h] = y
            h += 1
        # pass 2: PAV (a stack of blocks) over the points on or below that hull
        base = m
        tt = np.int64(0)  # the stack's top (out_t[m - 1], out_w[m - 1]) kept at hand
        tw = np.int64(1)
        px = np.int64(0)  # the last point pushed
        py = np.int64(0)
        k = 0  # the hull segment of the current x: hx[k] < x <= hx[k + 1] (or k = 0)
        b = tb[r, 0]
        i = 1
        while i <= K:
            if i < K:
                if i + L <= K:  # targets i .. i + L - 1: y >= i and x <= xe, below the hull nowhere?
                    xe = cum[tb[r, i + L - 1]] - c0
                    kk = k
                    while xe > hx[kk + 1]:
                        kk += 1
                    dx = hx[kk + 1] - hx[kk]
                    if i * dx > hy[kk] * dx + (hy[kk + 1] - hy[kk]) * (xe - hx[kk]):
                        k = kk
                        b = tb[r, i + L - 1]
                        i += L
                        continue
                nb = tb[r, i]
                x = cum[nb] - c0
                y = np.int64(i)
                while x > hx[k + 1]:
                    k += 1
                # a unit start on or below the hull (both tests without a branch: ties are unpredictable)
                cand = (nb != b) & ((y - hy[k]) * (hx[k + 1] - hx[k]) <= (hy[k + 1] - hy[k]) * (x - hx[k]))
                b = nb
                i += 1
                if not cand:
                    continue
            else:
                x = end_x
                y = np.int64(K)
                i += 1
            t = y - py
            w = x - px
            px = x
            py = y
            while m > base and tt * w >= t * tw:
                t += tt
                w += tw
                m -= 1
                if m > base:
                    tt = out_t[m - 1]
                    tw = out_w[m - 1]
            out_t[m] = t
            out_w[m] = w
            tt = t
            tw = w
            m += 1
        for q in range(base, m):
            out_row[q] = r
    return m


def pav_target_blocks_every_unit(tb, cum, n, out_t, out_w, out_row):
    """:func:`pav_target_blocks` by the stack over every unit, without the hull's filter: the slow, obvious
    oracle of the tests and of ``benchmarks/relabel_kernel.py`` (the compiled loop of vpeval 0.2 up to
    2026-12-03). The same parameters and blocks."""
    R, K = tb.shape
    m = 0
    for r in range(R):
        base = m
        tt = np.int64(0)  # the stack's top (out_t[m - 1], out_w[m - 1]) kept at hand
        tw = np.int64(1)
        b = tb[r, 0]
        t = np.int64(1)
        for i in range(1, K + 1):
            nb = tb[r, i] if i < K else -1
            if nb == b:  # another target of the unit's block
                t += 1
                continue
            w = (cum[nb] if i < K else n) - cum[b]
            while m > base and tt * w >= t * tw:
                t += tt
                w += tw
                m -= 1
                if m > base:
                    tt = out_t[m - 1]
                    tw = out_w[m - 1]
            out_t[m] = t
            out_w[m] = w
            tt = t
            tw = w
            m += 1
            b = nb
            t = np.int64(1)
        for q in range(base, m):
            out_row[q] = r
    return m


#: Pass 1 of :func:`pav_target_blocks` takes every ``L``-th target, ``L = max(2, min(64, K // 64))``.
_SUBSAMPLE = 64


_SIGNATURE = "int64(int64[:, ::1], int64[::1], int64, int64[::1], int64[::1], int64[::1])"


def compiled_pav_target_blocks():
    """:func:`pav_target_blocks` compiled by numba, or None (numba missing, failing, or ``VPEVAL_JIT=0``)."""
    return compiled(pav_target_blocks, _SIGNATURE)


def kept_blocks(u, threshold, drop, block, out):
    """The tie blocks of the positions a dense draw keeps, ascending, written to ``out``.

    Position ``i`` is drawn when ``u[i] < threshold``; of the drawn positions, in ascending order, those whose
    rank (0-based) is in ``drop`` are removed again; ``out`` (length ``k``, the number that remain) receives
    ``block[i]`` of each remaining position. The same as ``block[np.delete(np.flatnonzero(u < threshold),
    drop)]`` (:func:`vpeval.analysis.relabel._k_of_n_sorted` followed by the gather of the blocks) in one pass,
    without the position arrays.

    Parameters
    ----------
    u : uint16 array of shape (n,)
    threshold : int
    drop : int64 array of shape (d,)
        The ranks to remove, ascending and distinct.
    block : int64 or int32 array of shape (n,)
        The tie block of every position.
    out : int64 array of shape (k,)

    Notes
    -----
    Between two dropped ranks the loop has no data-dependent branch (half the positions are drawn: a branch
    would be mispredicted every other position): every position's block is written at the next free slot,
    which only the drawn ones advance. The dropped position is then skipped; after the last one the loop stops
    once ``k`` are kept (the drawn positions after that are all dropped ones).
    """
    k = out.size
    i = 0
    m = 0
    rank = 0
    for d in range(drop.size):
        stop = drop[d]
        while rank < stop:
            keep = np.int64(u[i] < threshold)
            out[m] = block[i]
            m += keep
            rank += keep
            i += 1
        while u[i] >= threshold:  # the dropped position
            i += 1
        i += 1
        rank += 1
    while m < k:
        keep = np.int64(u[i] < threshold)
        out[m] = block[i]
        m += keep
        i += 1


#: blocks as int64 or int32 (a score file without keys: its per-trial blocks are int32 below 2**31 blocks, half the
#: memory at 1e8 trials)
_KEPT_SIGNATURE = ["void(uint16[::1], int64, int64[::1], int64[::1], int64[::1])",
                   "void(uint16[::1], int64, int64[::1], int32[::1], int64[::1])"]


def compiled_kept_blocks():
    """:func:`kept_blocks` compiled by numba, or None (numba missing, failing, or ``VPEVAL_JIT=0``)."""
    return compiled(kept_blocks, _KEPT_SIGNATURE)
