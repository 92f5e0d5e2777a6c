"""The built-in trial metrics of many bootstrap or permutation replicates at once (internal).

:func:`~vpeval.stats.bootstrap` and :func:`~vpeval.stats.chance_floor` evaluate the metrics of
:data:`~vpeval.stats.TRIAL_METRICS` on every replicate. One replicate at a time, that is about a hundred small
NumPy calls and two PAV fits per replicate, which dominates an audit of small trial lists (e.g. 50 target trials:
about 1 ms per replicate). Here every replicate is a row of block counts over one common grid of tie blocks
(empty blocks allowed), and all rows are evaluated together:

* the PAV bins (plain and with privacy-ZEBRA's Laplace pseudo-blocks) come from the greatest convex minorant of
  each row's cumulative (weight, targets) points: its strict vertices end the bins. They are found by one
  pool-adjacent-violators fit over all rows (:func:`scipy.optimize.isotonic_regression`) whose pools are then
  checked in exact integer arithmetic, rows failing the check redone by Andrew's monotone chain (all rows in
  step, a Python loop over the points), or by the chain compiled with numba where it is installed. Only grids
  of at most :data:`MAX_POINTS` points are batched; larger ones keep the one-replicate-at-a-time path.
* every elementwise step (LLRs, ``logaddexp``, the ECE integrand, the EER interpolation) is one array operation
  over all rows; the per-row sums and dot products are taken on each row's own contiguous slice, in the order
  the one-replicate path uses, so that **every value is bit-identical** to that path (tests compare them).

Exactness: the hull test compares integer cross products (below ``2**63`` for grids of fewer than
:data:`MAX_TRIALS` trials), so the bins are those of exact arithmetic: the maximal runs of equal fitted value.
These are the bins of :func:`vpeval.blocks.pav_bins` except where scipy's floating-point PAV leaves two adjacent
bins of exactly equal target proportion apart (its pooled means are weighted sums of rounded proportions: seen
in 2 of 200 bootstrap replicates of a list of 5,500 + 5,500 trials (vpeval's earlier ``oaaa``), never on the demo's small
grids); there minCllr and D_ECE can differ in the last bits (the other metrics do not), and this path has the
exact value.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import isotonic_regression

from ..metrics.zebra import _expected_ece_tar_nats
from .metrics import (
    _d_ece_blocks,
    _eer_interp_blocks,
    _eer_rocch_blocks,
    _eps_max_blocks,
    _min_cllr_blocks,
)

__all__ = ["MAX_POINTS", "MAX_TRIALS", "batchable", "evaluate_rows"]

#: Largest grid (number of cumulative points, blocks + 1) evaluated in batch: chosen when the monotone chain's loop
#: over the points was the only NumPy path (beyond it, that loop cost more than one PAV fit per replicate); not
#: measured again for the checked PAV fit, which is cheaper.
MAX_POINTS = 512
#: Largest number of trials of a replicate evaluated in batch (exact cross products, module docstring).
MAX_TRIALS = 1 << 25
_LN2 = math.log(2.0)

_KINDS = {
    _eer_rocch_blocks: "eer_rocch",
    _eer_interp_blocks: "eer_interp",
    _min_cllr_blocks: "min_cllr",
    _d_ece_blocks: "d_ece",
    _eps_max_blocks: "eps_max",
}


def batchable(metrics, n_points: int, n_trials: int) -> bool:
    """Whether :func:`evaluate_rows` handles these metrics on a grid of ``n_points`` points (blocks + 1)."""
    return (n_points <= MAX_POINTS and n_trials < MAX_TRIALS
            and all(m.blocks is not None and m.blocks in _KINDS for m in metrics))


def _cum(c: np.ndarray) -> np.ndarray:
    out = np.zeros((c.shape[0], c.shape[1] + 1), dtype=np.int64)
    np.cumsum(c, axis=1, out=out[:, 1:])
    return out


def _vertices(ct: np.ndarray, w: np.ndarray) -> np.ndarray:
    """(R, P) bool: the points that end a PAV bin (plus point 0), for cumulative targets ``ct`` and weights
    ``w`` (both int64, nondecreasing along a row; a point repeated (an empty block) is marked at most once).

    The strict vertices of each row's lower convex hull: a point is dropped when it is on or above the line from
    the point before it to the next one (integer cross products, exact), so collinear points, i.e. blocks whose
    PAV fit equals their neighbour's, end no bin. The compiled loop of :mod:`vpeval.stats.hull_kernel` where
    numba is there and the batch is large enough, else :func:`_vertices_numpy`; the same marks.
    """
    from .hull_kernel import JIT_MIN_POINTS, compiled_hull_vertices

    if w.size >= JIT_MIN_POINTS:
        fn = compiled_hull_vertices()
        if fn is not None:
            out = np.zeros(w.shape, dtype=bool)
            fn(np.ascontiguousarray(w, dtype=np.int64), np.ascontiguousarray(ct, dtype=np.int64), out)
            return out
    return _vertices_numpy(ct, w)


def _vertices_numpy(ct: np.ndarray, w: np.ndarray) -> np.ndarray:
    """:func:`_vertices` in NumPy and SciPy: one pool-adjacent-violators fit over all rows, then an exact check.

    The nonempty blocks of all rows, concatenated row after row, get one
    :func:`scipy.optimize.isotonic_regression` (proportions of targets, weighted by trials, row ``r`` shifted
    by ``2 r`` so that no pool crosses rows): its pools are the candidate bins. Floating point can pool two
    blocks whose exact proportions differ by a rounding error or keep apart two of equal proportion, so each
    row's candidate is then checked in exact integer arithmetic: every point on or above its bin's chord, and
    the slopes of consecutive bins nondecreasing (equal slopes join their bins). A row failing the check (and
    a row without trials) is redone by :func:`_vertices_chain`. The marks are therefore those of the chain,
    point for point (tested against it), at about a third of its cost on the demo's 200-row batches.
    """
    R, P = w.shape
    out = np.zeros((R, P), dtype=bool)
    out[:, 0] = True
    if P == 1:
        return out
    dw = np.diff(w, axis=1)
    idx = np.flatnonzero(dw > 0)  # nonempty blocks, row after row, ascending within a row
    K = idx.size
    if K == 0:
        return _vertices_chain(ct, w)
    r, j = np.divmod(idx, P - 1)
    wf, cf = w.reshape(-1), ct.reshape(-1)
    end = idx + r + 1  # flat index of the point each block ends at
    X, Y, wk = wf[end], cf[end], dw.reshape(-1)[idx]
    first = np.empty(K, dtype=bool)  # first nonempty block of its row
    first[0] = True
    np.not_equal(r[1:], r[:-1], out=first[1:])
    sx, sy = np.empty(K, dtype=np.int64), np.empty(K, dtype=np.int64)  # the point each block starts from
    sx[1:], sy[1:] = X[:-1], Y[:-1]
    sx[first], sy[first] = wf[r[first] * P], cf[r[first] * P]
    y = (Y - sy) / wk + 2.0 * r
    pools = isotonic_regression(y, weights=wk.astype(np.float64), increasing=True).blocks[:-1]
    starts = first.copy()
    starts[pools] = True
    bs = np.flatnonzero(starts)  # first block of each bin
    be = np.empty_like(bs)  # last block of each bin
    be[:-1], be[-1] = bs[1:] - 1, K - 1
    b = np.cumsum(starts) - 1  # bin of each block
    x0, y0 = sx[bs], sy[bs]
    dx, dy = X[be] - x0, Y[be] - y0
    # exact check: each point on or above its bin's chord; slopes of a row's consecutive bins nondecreasing
    below = (X - x0[b]) * dy[b] > (Y - y0[b]) * dx[b]
    same_row = ~first[bs[1:]]
    lhs, rhs = dy[:-1] * dx[1:], dy[1:] * dx[:-1]
    bad = np.zeros(R, dtype=bool)
    bad[r[below]] = True
    bad[r[be[:-1][same_row & (lhs > rhs)]]] = True
    bad[np.bincount(r, minlength=R) == 0] = True
    ends = be[np.append(~(same_row & (lhs == rhs)), True)]
    # a bin ends at the last repeat of its end point (an empty block repeats a point), as in the chain
    last = np.append(first[1:], True)  # last nonempty block of its row
    pt = np.where(last[ends], P - 1, j[np.minimum(ends + 1, K - 1)])
    out[r[ends], pt] = True
    if bad.any():
        out[bad] = _vertices_chain(ct[bad], w[bad])
    return out


def _vertices_chain(ct: np.ndarray, w: np.ndarray) -> np.ndarray:
    """:func:`_vertices` by Andrew's monotone chain with all rows in step (one Python iteration per point): the
    reference for :func:`_vertices_numpy` and the compiled loop, and its fallback."""
    R, P = w.shape
    base = np.arange(R) * P  # flat index of each row's point 0
    wf, cf = w.reshape(-1), ct.reshape(-1)
    stack = np.zeros((R, P), dtype=np.intp)  # flat point indices
    sf = stack.reshape(-1)
    stack[:, 0] = base
    h = base + 1  # flat index of the first free stack slot (point 0 is on every hull)
    for i in range(1, P):
        xi, yi = wf[base + i], cf[base + i]
        act = np.flatnonzero(h - base >= 2)  # rows with at least two points on the stack
        while act.size:
            ha = h[act]
            o, a = sf[ha - 2], sf[ha - 1]
            xo, yo = wf[o], cf[o]
            pop = (wf[a] - xo) * (yi[act] - yo) <= (cf[a] - yo) * (xi[act] - xo)
            act = act[pop]
            h[act] -= 1
            act = act[h[act] - base[act] >= 2]
        sf[h] = base + i
        h += 1
    out = np.zeros(R * P, dtype=bool)
    keep = np.arange(P) < (h - base)[:, None]
    out[stack[keep]] = True
    return out.reshape(R, P)


def _prev_index(mask: np.ndarray) -> np.ndarray:
    """(R, P): for each point, the largest index <= it where ``mask`` holds (-1 if none)."""
    idx = np.where(mask, np.arange(mask.shape[1]), -1)
    return np.maximum.accumulate(idx, axis=1)


def _interp_eer_rows(pmiss: np.ndarray, pfa: np.ndarray, points: np.ndarray) -> np.ndarray:
    """:func:`vpeval.metrics.verification._interp_eer` of each row's subsequence of ``points`` (same arithmetic)."""
    R = pmiss.shape[0]
    rows = np.arange(R)
    d = pmiss - pfa
    hit = points & (d >= 0)
    j = np.argmax(hit, axis=1)
    none = ~hit[rows, j]
    last = _prev_index(points)
    j = np.where(none, last[:, -1], j)
    jp = last[rows, np.maximum(j - 1, 0)]
    dj = d[rows, j]
    dp = d[rows, jp]
    pj, pp = pmiss[rows, j], pmiss[rows, jp]
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = -dp / (dj - dp)
        val = pp + lam * (pj - pp)
    return np.where(dj == 0, pj, val)


def _bins(ct: np.ndarray, cn: np.ndarray, vert: np.ndarray):
    """Flat bins of every row from its vertices: (row, first vertex index, end index, n_tar, n_non), rows in
    order and bins ascending within a row."""
    prev = _prev_index(vert)
    ends = vert.copy()
    ends[:, 0] = False
    r, e = np.nonzero(ends)
    p = prev[r, e - 1]
    return r, p, e, ct[r, e] - ct[r, p], cn[r, e] - cn[r, p]


def _row_slices(rows: np.ndarray, R: int) -> np.ndarray:
    return np.r_[0, np.cumsum(np.bincount(rows, minlength=R))]


def _llr(t, n, nt, nn):
    # the arithmetic of vpeval.blocks.bin_llr
    t = t.astype(np.float64)
    n = n.astype(np.float64)
    with np.errstate(divide="ignore"):
        return (np.log(t) - np.log(n)) - (np.log(nt) - np.log(nn))


def evaluate_rows(metrics, n_tar: np.ndarray, n_non: np.ndarray, mode: str) -> np.ndarray:
    """Values of ``metrics`` (all with a fast path in ``_KINDS``) for every row of block counts.

    Parameters
    ----------
    metrics : sequence of StatMetric
    n_tar, n_non : int arrays of shape (R, M)
        Targets and non-targets per tie block (ascending score), one replicate per row; empty blocks allowed.
        Every row holds at least one target and one non-target.
    mode : {"runs", "blocks"}
        The blocks the one-replicate path hands to the interpolated EER: ``"runs"`` those of
        ``trial_bootstrap._compress_runs`` (empty blocks dropped, runs of one-class blocks merged), ``"blocks"``
        those of ``trial_bootstrap._collapsed_blocks`` (empty blocks dropped).

    Returns
    -------
    ndarray, shape (len(metrics), R)
        Bit-identical to ``_evaluate(metrics, blocks of the row)`` of :mod:`vpeval.stats.trial_bootstrap`.
    """
    kinds = [_KINDS[m.blocks] for m in metrics]
    T = np.asarray(n_tar, dtype=np.int64)
    N = np.asarray(n_non, dtype=np.int64)
    R, M = T.shape
    ct, cn = _cum(T), _cum(N)
    nt, nn = ct[:, -1], cn[:, -1]
    res: dict[str, np.ndarray] = {}
    ntf, nnf = nt.astype(np.float64), nn.astype(np.float64)
    pmiss = ct / ntf[:, None]
    pfa = (nn[:, None] - cn) / nnf[:, None]

    if "eer_interp" in kinds:
        nonempty = (T + N) > 0
        points = np.ones((R, M + 1), dtype=bool)
        if mode == "blocks":
            points[:, 1:] = nonempty
        elif mode == "runs":
            code = np.where(N == 0, 1, np.where(T == 0, 2, 0))
            nxt = np.where(nonempty, np.arange(M), M)
            nxt = np.minimum.accumulate(nxt[:, ::-1], axis=1)[:, ::-1]  # first nonempty block >= j
            after = np.full((R, M), M)
            after[:, :-1] = nxt[:, 1:]  # first nonempty block > j
            code_ext = np.concatenate([code, np.full((R, 1), -1)], axis=1)
            next_code = np.take_along_axis(code_ext, after, axis=1)
            points[:, 1:] = nonempty & ((code == 0) | (next_code != code))
        else:
            raise ValueError(f"mode must be 'runs' or 'blocks', got {mode!r}")
        res["eer_interp"] = _interp_eer_rows(pmiss, pfa, points)

    if {"eer_rocch", "min_cllr", "d_ece"} & set(kinds):
        vert = _vertices(ct, ct + cn)
        if "eer_rocch" in kinds:
            res["eer_rocch"] = _interp_eer_rows(pmiss, pfa, vert)
        if {"min_cllr", "d_ece"} & set(kinds):
            r, _, _, bt, bn = _bins(ct, cn, vert)
            off = _row_slices(r, R)
            llr = _llr(bt, bn, nt[r], nn[r])
            if "min_cllr" in kinds:
                with np.errstate(invalid="ignore"):
                    et = np.where(bt > 0, bt * np.logaddexp(0.0, -llr), 0.0)
                    en = np.where(bn > 0, bn * np.logaddexp(0.0, llr), 0.0)
                out = np.empty(R)
                for i in range(R):
                    a, b = off[i], off[i + 1]
                    c_tar = et[a:b].sum() / nt[i]
                    c_non = en[a:b].sum() / nn[i]
                    out[i] = (c_tar + c_non) / (2.0 * _LN2)
                res["min_cllr"] = out
            if "d_ece" in kinds:
                tp, np_ = bt > 0, bn > 0
                x = np.concatenate([llr[tp], -llr[np_]])
                wgt = np.concatenate([bt[tp] / nt[r[tp]], bn[np_] / nn[r[np_]]])
                row = np.concatenate([r[tp], r[np_]])
                part = np.concatenate([np.zeros(int(tp.sum()), np.int8), np.ones(int(np_.sum()), np.int8)])
                order = np.lexsort((part, row))  # per row: its target bins, then its non-target bins
                e = _expected_ece_tar_nats(x[order])
                wgt = wgt[order]
                off2 = _row_slices(row, R)
                out = np.empty(R)
                for i in range(R):
                    a, b = off2[i], off2[i + 1]
                    out[i] = (0.5 - np.dot(wgt[a:b], e[a:b])) / _LN2
                res["d_ece"] = out

    if "eps_max" in kinds:
        # the sequence extended by one target and one non-target below and above (Laplace pseudo-blocks)
        ctx = np.empty((R, M + 3), dtype=np.int64)
        cnx = np.empty((R, M + 3), dtype=np.int64)
        ctx[:, 0] = cnx[:, 0] = 0
        ctx[:, 1:-1] = ct + 1
        cnx[:, 1:-1] = cn + 1
        ctx[:, -1] = ct[:, -1] + 2
        cnx[:, -1] = cn[:, -1] + 2
        vert = _vertices(ctx, ctx + cnx)
        r, p, e, bt, bn = _bins(ctx, cnx, vert)
        # a bin of a pseudo-block alone holds no trial (pav_block_llr drops it)
        pseudo_only = ((p == 0) | (e == M + 2)) & (bt + bn == 2)
        r, bt, bn = r[~pseudo_only], bt[~pseudo_only], bn[~pseudo_only]
        a = np.abs(_llr(bt, bn, nt[r], nn[r]))
        out = np.full(R, -np.inf)
        np.maximum.at(out, r, a)
        res["eps_max"] = out

    return np.stack([res[k] for k in kinds])
