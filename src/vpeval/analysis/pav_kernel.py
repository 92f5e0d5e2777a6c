"""The PAV fit of many relabellings at once, as one compiled loop (internal to :mod:`vpeval.analysis.relabel`).

:func:`pav_target_blocks` takes the sorted tie blocks of each relabelling's targets and returns the blocks of
each relabelling's PAV fit as exact integer counts, in one pass with a stack (pool adjacent violators). Compiled
by numba (:func:`vpeval.jit.compiled`), it replaces the NumPy path of :func:`vpeval.analysis.relabel._d_ece_rows`
(about ten array passes and SciPy's isotonic regression per chunk) for members of at least
:data:`JIT_MIN_TARGETS` targets, and :func:`kept_blocks` turns a dense draw of
:func:`vpeval.analysis.relabel._k_of_n_sorted` into its target blocks in one pass. On a 1e7-line score file a
relabelling takes about 2.7x less time (``benchmarks/relabel_kernel.py``; BENCHMARKS.md has the figures).

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

__all__ = ["pav_target_blocks", "compiled_pav_target_blocks", "kept_blocks", "compiled_kept_blocks",
           "JIT_MIN_TARGETS"]

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
    target, so its contribution to D_ECE is 0), as in :func:`vpeval.analysis.relabel._d_ece_rows`. Each unit is
    pushed onto the row's stack and pooled with the block below while that block's proportion ``t / w`` is at
    least the unit's (``t_lo * w >= t * w_lo``, exact in int64 for ``n < 3e9``). Slow in plain Python;
    :func:`compiled_pav_target_blocks` returns the compiled form.
    """
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
    block : int64 array of shape (n,)
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


_KEPT_SIGNATURE = "void(uint16[::1], int64, int64[::1], int64[::1], int64[::1])"


def compiled_kept_blocks():
    """:func:`kept_blocks` compiled by numba, or None (numba missing, failing, or ``VPEVAL_JIT=0``)."""
    return compiled(kept_blocks, _KEPT_SIGNATURE)
