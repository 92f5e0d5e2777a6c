"""The one scan of the LID pipeline's calibration: moment histograms of the training z-scores.

:func:`_moment_histogram` z-normalises every row once and adds its z-scores into per-group moment histograms
(bin width :data:`_BIN_WIDTH`, per bin the count and the sums of ``d**j``, j = 1..4), summed per canonical
chunk of rows in row order, so the sums never depend on the block size, dask chunks or cluster blocks. The
binning is one compiled loop (:mod:`vpeval.metrics.moment_kernel`) for at least :data:`JIT_MIN_SCORES`
scores, NumPy passes and ``np.bincount`` otherwise: bit-identical either way. The fit on these histograms is
:mod:`vpeval.metrics.linkage.binned_fit`.
"""

from __future__ import annotations

import math
import threading
from functools import partial

import numpy as np

from ...rowscan import _ClusterMatrix, _map_pieces
from ..moment_kernel import compiled_accumulate
from .posterior import _znorm_block

#: Matrices with fewer scores than this are binned with NumPy (vpeval.metrics.moment_kernel): importing numba
#: and loading its cached loop costs about 0.5 s once per process (benchmarks/micro.py), and the loop saves
#: about 13 ns per score (BENCHMARKS.md), so it pays from a few 1e7 scores on (at 4.8e6 scores it was
#: measured 0.7 s slower).
JIT_MIN_SCORES = 2**26

#: Bin width of the moment histograms (z units; a power of two, so ``z / h`` is exact).
_BIN_WIDTH = 2.0 ** -9
#: Moments ``sum ((z - centre) / h)**j``, j = 0 .. _N_MOMENTS - 1, kept per bin.
_N_MOMENTS = 5
#: Most bins (all groups) a histogram may hold (5 moments x 8 bytes each: 80 MiB); a z range too wide for it
#: (e.g. rows with one score far from the rest, |z| up to sqrt(N)) makes the fit stream exactly instead.
_MAX_BINS = 2**21


def _canonical_rows(n_cols: int) -> int:
    """Rows per histogram chunk (about 2**21 scores): the partition that fixes every sum's order."""
    return max(1, -(-(2**21) // n_cols))


_BUFFERS = threading.local()


def _buffers(size: int):
    """Per-thread scratch arrays of ``size`` elements (float64 x3, int64), reused from chunk to chunk so
    that their pages are not faulted in again for every chunk (about 64 MiB for a chunk of 2**21 scores;
    released by :func:`_moment_histogram` at the end of the scan in its thread; a worker thread of a
    cluster keeps its own between tasks)."""
    got = getattr(_BUFFERS, "arrays", None)
    if got is None or got[0].size < size:
        got = (np.empty(size), np.empty(size), np.empty(size), np.empty(size, np.int64))
        _BUFFERS.arrays = got
    return tuple(a[:size] for a in got)


def _bin_chunk(x, t, rgrp, cgrp, n_rgrp: int, n_cgrp: int, name: str = "scores", start: int = 0,
               use_jit: bool = False):
    """Moment histogram of one canonical chunk of score rows ``x``, z-normalised here (:func:`_znorm_block`).

    Each z-score falls in bin ``k = floor(z / h)`` of centre ``h (k + 1/2)``; ``d = z / h - k - 1/2`` in
    [-1/2, 1/2). Group of a non-target score: ``rgrp[row] * n_cgrp + cgrp[col]``; of the target score of a
    row: ``n_rgrp * n_cgrp + rgrp[row]``. Returns ``(k_lo, hist, t_lo, t_hi)`` with ``hist[j, g, k - k_lo] =
    sum d**j`` and the exact extremes of the target z-scores per row group (+-inf where none); None when
    the bins would be more than :data:`_MAX_BINS`. The z-norm runs on sub-blocks that stay in the CPU cache.
    With ``use_jit`` and numba installed, the binning is one compiled loop
    (:mod:`vpeval.metrics.moment_kernel`); otherwise elementwise NumPy passes and five ``np.bincount`` over
    the whole chunk in row-major order. Both give bit-identical sums.
    """
    n_rows, n_cols = x.shape
    kernel = compiled_accumulate() if use_jit else None
    kf, d, p, idx = (a.reshape(n_rows, n_cols) for a in _buffers(n_rows * n_cols))
    sub = max(1, 2**18 // n_cols)
    zt = np.empty(n_rows)
    z_lo, z_hi = math.inf, -math.inf
    for s in range(0, n_rows, sub):
        e = min(n_rows, s + sub)
        z = _znorm_block(x[s:e], start + s, name, out=d[s:e])
        zt[s:e] = z[np.arange(e - s), t[s:e]]
        z_lo, z_hi = min(z_lo, float(z.min())), max(z_hi, float(z.max()))
        if kernel is not None:
            continue  # z stays in d, binned below in one compiled pass
        z *= 1.0 / _BIN_WIDTH
        np.floor(z, out=kf[s:e])
        z -= kf[s:e]
        z -= 0.5
    # floor(z / h) is non-decreasing in z, so the extreme bins are those of the extreme z-scores
    k_lo = math.floor(z_lo * (1.0 / _BIN_WIDTH))
    span = math.floor(z_hi * (1.0 / _BIN_WIDTH)) - k_lo + 1
    n_groups = n_rgrp * n_cgrp + n_rgrp
    if span * n_groups > _MAX_BINS:
        return None
    rgrp = np.asarray(rgrp, dtype=np.int64)
    row_off = rgrp * (n_cgrp * span) - k_lo
    col_off = np.ascontiguousarray(cgrp, dtype=np.int64) * span
    tgt_off = (n_rgrp * n_cgrp + rgrp) * span - k_lo
    if kernel is not None:
        hist = np.zeros((_N_MOMENTS, n_groups * span))
        kernel(d, np.ascontiguousarray(t, dtype=np.int64), row_off, col_off, tgt_off, 1.0 / _BIN_WIDTH, hist)
    else:
        # flat bin index, computed in float64 (exact: integers below 2**53) on cached sub-blocks
        row_off_f, col_off_f, tgt_off_f = row_off.astype(np.float64), col_off.astype(np.float64), tgt_off
        for s in range(0, n_rows, sub):
            e = min(n_rows, s + sub)
            r = np.arange(e - s)
            blk = kf[s:e]
            kt = blk[r, t[s:e]]
            blk += row_off_f[s:e, None]
            blk += col_off_f[None, :]
            blk[r, t[s:e]] = kt + tgt_off_f[s:e]
            idx[s:e] = blk
        flat, dd, pp = idx.ravel(), d.ravel(), p.ravel()
        hist = np.empty((_N_MOMENTS, n_groups * span))
        pp.fill(1.0)  # counts as float sums of ones, as the compiled loop adds them
        hist[0] = np.bincount(flat, weights=pp, minlength=n_groups * span)
        for j in range(1, _N_MOMENTS):
            if j == 1:
                w = dd
            else:
                np.multiply(dd if j == 2 else pp, dd, out=pp)
                w = pp
            hist[j] = np.bincount(flat, weights=w, minlength=n_groups * span)
    t_lo, t_hi = np.full(n_rgrp, np.inf), np.full(n_rgrp, -np.inf)
    np.minimum.at(t_lo, rgrp, zt)
    np.maximum.at(t_hi, rgrp, zt)
    return k_lo, hist.reshape(_N_MOMENTS, n_groups, span), t_lo, t_hi


class _MomentHistogram:
    """Sum of chunk histograms over a common bin range, added in chunk order (so the sums are fixed)."""

    def __init__(self, n_rgrp: int, n_cgrp: int):
        self.n_rgrp, self.n_cgrp = n_rgrp, n_cgrp
        self.k_lo, self.hist = None, None
        self.t_lo, self.t_hi = np.full(n_rgrp, np.inf), np.full(n_rgrp, -np.inf)

    def add(self, part):
        """Add one chunk's :func:`_bin_chunk` result; False (and nothing kept) when the range grows too wide."""
        if part is None or self.hist is False:
            self.hist = False
            return False
        k_lo, hist, t_lo, t_hi = part
        np.minimum(self.t_lo, t_lo, out=self.t_lo)
        np.maximum(self.t_hi, t_hi, out=self.t_hi)
        if self.hist is None:
            self.k_lo, self.hist = k_lo, hist.copy()
            return True
        lo = min(self.k_lo, k_lo)
        hi = max(self.k_lo + self.hist.shape[2], k_lo + hist.shape[2])
        if (hi - lo) * hist.shape[1] > _MAX_BINS:
            self.hist = False
            return False
        if lo < self.k_lo or hi > self.k_lo + self.hist.shape[2]:
            grown = np.zeros(self.hist.shape[:2] + (hi - lo,))
            grown[:, :, self.k_lo - lo : self.k_lo - lo + self.hist.shape[2]] = self.hist
            self.k_lo, self.hist = lo, grown
        self.hist[:, :, k_lo - self.k_lo : k_lo - self.k_lo + hist.shape[2]] += hist
        return True


def _histogram_piece(start, x, t, rgrp, *, cgrp, n_rgrp, n_cgrp, chunk, n_rows, name, use_jit=False):
    """One scanned piece: one histogram per canonical chunk it holds whole, and the raw rows of the chunks
    it holds only in part (completed by the caller, which bins them the same way)."""
    out = []
    s = 0
    while s < x.shape[0]:
        c = (start + s) // chunk
        e = min(x.shape[0], (c + 1) * chunk - start)
        whole = start + s == c * chunk and start + e == min((c + 1) * chunk, n_rows)
        if whole:
            out.append((c, True, _bin_chunk(x[s:e], t[s:e], rgrp[s:e], cgrp, n_rgrp, n_cgrp, name, start + s,
                                             use_jit)))
        else:
            _znorm_block(x[s:e], start + s, name)  # errors are raised where the rows are
            out.append((c, False, (start + s, np.array(x[s:e], dtype=np.float64), t[s:e].copy(), rgrp[s:e].copy())))
        s = e
    return out


def _moment_histogram(arr, ti, n, n_cols, rows, rgrp, cgrp, n_rgrp, n_cgrp, name) -> _MomentHistogram | None:
    """One scan: the moment histogram of every (row group, column group) of non-target scores and of every
    row group's target scores. Sums are taken per canonical chunk of :func:`_canonical_rows` rows and the
    chunks added in row order, whatever the scanned pieces (block size, cluster blocks, dask chunks). None
    when the z range needs more than :data:`_MAX_BINS` bins (the caller then fits by streaming)."""
    chunk = _canonical_rows(n_cols)
    use_jit = n * n_cols >= JIT_MIN_SCORES  # same sums either way (see vpeval.metrics.moment_kernel)
    fn = partial(_histogram_piece, cgrp=cgrp, n_rgrp=n_rgrp, n_cgrp=n_cgrp, chunk=chunk, n_rows=n, name=name,
                 use_jit=use_jit)
    # pieces aligned with the canonical chunks when the matrix is scanned here
    piece_rows = chunk if not isinstance(arr, _ClusterMatrix) else rows
    acc = _MomentHistogram(n_rgrp, n_cgrp)
    pending: list = []
    pending_id = None

    def flush():
        if pending:
            x = np.concatenate([p[1] for p in pending])
            acc.add(_bin_chunk(x, np.concatenate([p[2] for p in pending]), np.concatenate([p[3] for p in pending]),
                               cgrp, n_rgrp, n_cgrp, name, pending[0][0], use_jit))
            pending.clear()

    for parts in _map_pieces(arr, n, piece_rows, fn, ti, rgrp):
        for c, whole, payload in parts:
            if c != pending_id:
                flush()
                pending_id = c
            if whole:
                acc.add(payload)
            else:
                pending.append(payload)
    flush()
    _BUFFERS.arrays = None  # this thread's scratch arrays are not kept past the scan
    return acc if acc.hist is not False else None

