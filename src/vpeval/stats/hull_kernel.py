"""The lower convex hull of many rows of cumulative points, as one compiled loop (internal to
:mod:`vpeval.stats.batch`).

:func:`hull_vertices` is Andrew's monotone chain over each row in turn, with the same exact integer test as the
NumPy chain :func:`vpeval.stats.batch._vertices_chain` (which runs every row in step, one Python iteration per
point): a point is dropped when it lies on or above the line from the point before it to the next one, so
collinear points and repeated points (empty blocks) end no bin, and every row keeps its point 0. The marks are
identical (tested on hypothesis-drawn inputs against the chain, as are those of the NumPy path
:func:`vpeval.stats.batch._vertices_numpy`, one PAV fit over all rows checked exactly). On a batch shaped like
the ladder demo's bootstraps (200 rows of 308 points) the chain in NumPy took 18.8 ms, the checked PAV fit 7.3 ms
and this loop compiled 0.63 ms (``python benchmarks/micro.py``, medians of 9, load 2.1).
"""

from __future__ import annotations

import numpy as np

from ..jit import compiled

__all__ = ["hull_vertices", "compiled_hull_vertices", "JIT_MIN_POINTS"]

#: Batches of at least this many points (rows x points) use the compiled loop when numba is installed: below
#: it, importing numba once per process (about 0.4 s) is not repaid.
JIT_MIN_POINTS = 1 << 14


def hull_vertices(w, ct, out):
    """Mark the strict lower-hull vertices of each row's points ``(w[r, i], ct[r, i])`` in ``out``.

    Parameters
    ----------
    w, ct : int64 arrays of shape (R, P), C-contiguous
        Cumulative weights (trials) and targets, nondecreasing along a row.
    out : bool array of shape (R, P), C-contiguous, all False
        Set True at every vertex (point 0 included). Every cross product is exact in int64 (below ``2 P^2``
        times the largest count).
    """
    R, P = w.shape
    stack = np.empty(P, dtype=np.int64)
    for r in range(R):
        stack[0] = 0
        h = 1
        for i in range(1, P):
            xi = w[r, i]
            yi = ct[r, i]
            while h >= 2:
                o = stack[h - 2]
                a = stack[h - 1]
                xo = w[r, o]
                yo = ct[r, o]
                if (w[r, a] - xo) * (yi - yo) <= (ct[r, a] - yo) * (xi - xo):
                    h -= 1
                else:
                    break
            stack[h] = i
            h += 1
        for k in range(h):
            out[r, stack[k]] = True


_SIGNATURE = "void(int64[:, ::1], int64[:, ::1], boolean[:, ::1])"


def compiled_hull_vertices():
    """:func:`hull_vertices` compiled by numba, or None (numba missing, failing, or ``VPEVAL_JIT=0``)."""
    return compiled(hull_vertices, _SIGNATURE)
