"""The scatter-add of the one-scan calibration of :func:`vpeval.metrics.linkage.lid_pipeline`.

Every z-score of the evaluation matrix is added to a *moment histogram*: bin ``k = floor(z / h)``, offset
``d = z / h - k - 1/2`` in [-1/2, 1/2), and per bin the sums ``sum d**j`` for j = 0..4 (j = 0 counts). This
module holds the loop that does it for one chunk of rows, in one pass over the z-scores, compiled with
numba when numba is installed (``pip install 'vpeval[fast]'``; the ``test`` extra lists it, and the ``audio`` and
``embed`` extras bring it through librosa). Without numba, :func:`vpeval.metrics.linkage.lid_pipeline` does the same work with
NumPy: elementwise passes and five ``np.bincount`` calls (about 3x slower on the whole pipeline).

**The two give bit-identical histograms**: both form ``u = z * (1/h)`` (exact, h a power of two),
``k = floor(u)``, ``d = (u - k) - 1/2``, the powers as ``d*d``, ``(d*d)*d``, ``((d*d)*d)*d``, and add them to
their bins one score at a time in row-major order, which is the order of ``np.bincount``. So results never
depend on whether numba is installed (on this machine or on a cluster's workers). Set the environment
variable ``VPEVAL_JIT=0`` to use the NumPy path anyway.

The compiled function is made by :func:`vpeval.jit.compiled` and cached by numba on disk. The first use in a
process imports numba (about 0.4 s) and compiles or loads it, so :func:`vpeval.metrics.linkage.lid_pipeline` uses it only for matrices of at least
:data:`vpeval.metrics.linkage.histogram.JIT_MIN_SCORES` (2**26, about 67 million) scores.
"""

from __future__ import annotations

import numpy as np

from ..jit import compiled

__all__ = ["accumulate_moments", "compiled_accumulate"]


def accumulate_moments(z, t, row_off, col_off, tgt_off, inv_h, hist):
    """Add the moment sums of one chunk of z-scores to ``hist`` (in place; the plain-Python form of the loop).

    Parameters
    ----------
    z : float64 array of shape (n_rows, n_cols), C-contiguous
        z-normalised scores.
    t : int64 array of shape (n_rows,)
        Column of each row's target score.
    row_off : int64 array of shape (n_rows,)
        Flat offset of each row's non-target histogram (its row group's first bin minus the chunk's lowest
        bin index ``k_lo``).
    col_off : int64 array of shape (n_cols,)
        Offset of each column's group within the row group.
    tgt_off : int64 array of shape (n_rows,)
        Flat offset of each row's target histogram, minus ``k_lo``.
    inv_h : float
        ``1 / h``, h the bin width (a power of two, so ``z * inv_h`` is exact).
    hist : float64 array of shape (5, n_bins), C-contiguous
        ``hist[j, i] += d**j`` for the bin ``i = floor(z * inv_h) + offset`` of every score.

    Notes
    -----
    The caller guarantees every index is inside ``hist`` (the offsets come from the chunk's own minimum and
    maximum bin). Slow in plain Python; :func:`compiled_accumulate` returns the compiled form.
    """
    n_rows, n_cols = z.shape
    for r in range(n_rows):
        ro = row_off[r]
        tr = t[r]
        for c in range(n_cols):
            u = z[r, c] * inv_h
            k = np.floor(u)
            d = u - k
            d = d - 0.5
            if c == tr:
                i = np.int64(k) + tgt_off[r]
            else:
                i = np.int64(k) + ro + col_off[c]
            d2 = d * d
            d3 = d2 * d
            hist[0, i] += 1.0
            hist[1, i] += d
            hist[2, i] += d2
            hist[3, i] += d3
            hist[4, i] += d3 * d


_SIGNATURE = "void(float64[:, ::1], int64[::1], int64[::1], int64[::1], int64[::1], float64, float64[:, ::1])"


def compiled_accumulate():
    """:func:`accumulate_moments` compiled by numba (releasing the GIL), or None when numba is not installed,
    cannot compile here, or ``VPEVAL_JIT=0`` is set (:func:`vpeval.jit.compiled`). Tried once per process."""
    return compiled(accumulate_moments, _SIGNATURE)
