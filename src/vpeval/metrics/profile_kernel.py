"""The privacy profile's two hot loops (:mod:`vpeval.metrics.profile`) as plain loops that numba compiles
(:func:`vpeval.jit.compiled`): one Dinkelbach step's best region, and the exact dominance counts of the small
counts. Each gives the same numbers as the NumPy path it replaces (the same float operations in the same order;
tests/test_profile_eps.py checks both paths against each other), only without the temporaries: on 1e7 trials
the profile went from seconds per pass to a fraction (BENCHMARKS.md).
"""

from __future__ import annotations

import numpy as np

from ..jit import compiled

__all__ = ["best_region", "window_max", "compiled_best_region", "compiled_window_max", "JIT_MIN_BLOCKS"]

#: Inputs of at least this many tie blocks use the compiled loops (when numba is installed): below it, importing
#: numba (about 0.4 s a process) costs more than the loops save.
JIT_MIN_BLOCKS = 200_000


def best_region(p, q, x, out):
    """One Dinkelbach step over intervals and complements: ``max over A of p(A) - x q(A)``.

    ``p``, ``q``: float64 per-block shares, shape (K,); ``x``: the current ratio. With ``c`` the prefix sums of
    ``p - x q`` (``c[0] = 0``), writes ``out = (v_in, i_in, j_in, v_out, i_out, j_out)``: the best interval
    ``c[j] - c[i]`` (``j`` the first maximiser of ``c[j] - min(c[:j + 1])``, ``i`` the first minimiser of
    ``c[:j + 1]``) and the best complement ``c[K] - (c[j] - c[i])`` (``j`` the first minimiser of
    ``c[j] - max(c[:j + 1])``, ``i`` the first maximiser of ``c[:j + 1]``): the ties resolved as ``numpy.argmax``
    and ``numpy.argmin`` resolve them in the NumPy path.
    """
    c = 0.0
    lo, lo_i, hi, hi_i = 0.0, 0, 0.0, 0
    best_in, bi, bj = 0.0, 0, 0  # j = 0: c[0] - lo[0] = 0
    best_out_run, oi, oj = 0.0, 0, 0  # c[0] - hi[0] = 0
    for j in range(1, p.size + 1):
        c = c + (p[j - 1] - x * q[j - 1])
        if c < lo:
            lo, lo_i = c, j
        if c > hi:
            hi, hi_i = c, j
        d_in = c - lo
        if d_in > best_in:
            best_in, bi, bj = d_in, lo_i, j
        d_out = c - hi
        if d_out < best_out_run:
            best_out_run, oi, oj = d_out, hi_i, j
    out[0] = best_in
    out[1] = bi
    out[2] = bj
    out[3] = c - best_out_run
    out[4] = oi
    out[5] = oj


_BEST_SIGNATURE = "void(float64[::1], float64[::1], float64, float64[::1])"


def compiled_best_region():
    """:func:`best_region` compiled by numba, or None (numba missing, failing, or ``VPEVAL_JIT=0``)."""
    return compiled(best_region, _BEST_SIGNATURE)


def window_max(cpq, first, p_start, ks, n_q, out):
    """For each count ``ks[r]``: ``max over s of cpq[min(first[s] + k, n_q)] - p_start[s]``, written to
    ``out[r]`` (int64): the most numerator trials in an interval starting at start ``s`` and holding at most
    ``k`` denominator trials (:func:`vpeval.metrics.profile._dominance`, every start read)."""
    for r in range(ks.size):
        out[r] = -1
    for s in range(first.size):
        f, base = first[s], p_start[s]
        for r in range(ks.size):
            e = f + ks[r]
            v = cpq[e if e < n_q else n_q] - base
            if v > out[r]:
                out[r] = v


#: ``cpq`` int64 or int32 (:func:`vpeval.metrics.profile._dominance` holds it as int32 from 2**20 trials on)
_WINDOW_SIGNATURE = ["void(int64[::1], int64[::1], int64[::1], int64[::1], int64, int64[::1])",
                     "void(int32[::1], int64[::1], int64[::1], int64[::1], int64, int64[::1])"]


def compiled_window_max():
    """:func:`window_max` compiled by numba, or None (numba missing, failing, or ``VPEVAL_JIT=0``)."""
    return compiled(window_max, _WINDOW_SIGNATURE)


def window_max_strided(cpq, first, p_start, k, stride, n_q, out):
    """The interval counts of one count ``k`` read at every ``stride``-th start (:func:`vpeval.metrics.profile._dominance`):
    ``out[0]`` the best of those windows (``max cpq[min(first[s] + k, n_q)] - p_start[s]``, attained),
    ``out[1]`` the best of them given ``g`` more denominator trials, ``g`` the most denominator trials between
    two read starts (``n_q`` closing the last): an upper value for every window."""
    gap = 0
    s = 0
    while s < first.size:
        nxt = first[s + stride] if s + stride < first.size else n_q
        if nxt - first[s] > gap:
            gap = nxt - first[s]
        s += stride
    lo, hi = -1, -1
    s = 0
    while s < first.size:
        f, base = first[s], p_start[s]
        e = f + k
        v = cpq[e if e < n_q else n_q] - base
        if v > lo:
            lo = v
        e = e + gap
        v = cpq[e if e < n_q else n_q] - base
        if v > hi:
            hi = v
        s += stride
    out[0] = lo
    out[1] = hi


_STRIDED_SIGNATURE = ["void(int64[::1], int64[::1], int64[::1], int64, int64, int64, int64[::1])",
                      "void(int32[::1], int64[::1], int64[::1], int64, int64, int64, int64[::1])"]


def compiled_window_max_strided():
    """:func:`window_max_strided` compiled by numba, or None (numba missing, failing, or ``VPEVAL_JIT=0``)."""
    return compiled(window_max_strided, _STRIDED_SIGNATURE)


def window_max_by_count(cpq, first, p_start, start_at, k, step, n_q, out):
    """:func:`vpeval.metrics.profile._read_by_count` in one pass over the starts read (each found from the last
    by the next multiple of ``step`` above its ``first``; the one after it looked up for its gap), without their
    arrays: ``out[0]`` the best window read (attained), ``out[1]`` the best of them given each one's gap (the same
    numbers)."""
    last = first.size - 1
    lo, hi = -1, -1
    r = start_at[0]
    while True:
        q = (first[r] // step + 1) * step  # the next multiple of step above this start's first
        nxt = start_at[q] if q <= n_q else last
        if nxt == r:  # r is the last start
            nxt = -1
        g = first[nxt - 1] - first[r] if nxt > r + 1 else 0
        e = first[r] + k
        v = cpq[e if e < n_q else n_q] - p_start[r]
        if v > lo:
            lo = v
        e = e + g
        v = cpq[e if e < n_q else n_q] - p_start[r]
        if v > hi:
            hi = v
        if nxt < 0:
            break
        r = nxt
    out[0] = lo
    out[1] = hi


_BY_COUNT_SIGNATURE = [f"void({c}[::1], int64[::1], int64[::1], {s}[::1], int64, int64, int64, int64[::1])"
                       for c in ("int64", "int32") for s in ("int32", "int64")]


def compiled_window_max_by_count():
    """:func:`window_max_by_count` compiled by numba, or None (numba missing, failing, or ``VPEVAL_JIT=0``)."""
    return compiled(window_max_by_count, _BY_COUNT_SIGNATURE)
