"""privacy-ZEBRA's worst case eps_max (Laplace PAV) of many labellings at once, without a PAV fit (internal).

The verdict's permutation test recomputes eps_max for every relabelling of every attacker, so it needs eps_max
in O(K) per labelling (K targets) after one sort of the scores, vectorised over labellings.

Why no PAV is needed
--------------------
PAV LLRs are non-decreasing in the score, so ``max |LLR|`` over the real trials is attained in the PAV bin of the
lowest or of the highest real tie block. The isotonic (PAV) fit of weighted proportions has a closed form at
every position ``i`` (Barlow, Bartholomew, Bremner & Brunk, "Statistical inference under order restrictions",
1972, Thm. 1.4, the min-max formulas):

    f(i) = min_{b >= i} max_{a <= i} mean(a..b) = max_{a <= i} min_{b >= i} mean(a..b),

with ``mean(a..b)`` the pooled target proportion of blocks ``a..b``. With privacy-ZEBRA's Laplace smoothing the
sequence is extended by a pseudo-block of one target and one non-target below the lowest (index -1) and above
the highest block (index B). For the highest real block ``B - 1`` only ``b`` in ``{B - 1, B}`` exist, so

    f_top = min( max_{a <= B-1} T(a) / N(a),  max_{a <= B-1} (T(a) + 1) / (N(a) + 2) ),

where ``T(a)``, ``N(a)`` are the targets and trials in real blocks ``a..B-1`` and ``a = -1`` adds the lower
pseudo-block. Between two blocks holding targets ``T(a)`` is constant while ``N(a)`` falls as ``a`` rises, so the
maxima are attained at the blocks holding targets, at ``a = B - 1`` and at ``a = -1``. Symmetrically for the
lowest block with prefixes. The LLR of a bin is ``logit(P) - ln(Nt / Nn)`` with the real class totals
(:func:`vpeval.blocks.bin_llr`), and ``eps_max = max(|LLR(f_bot)|, |LLR(f_top)|)`` in nats.

Large labellings (more than :data:`PRUNE_MIN_TARGETS` targets) evaluate only the candidates that can be
extreme (:func:`_extremes_pruned`): along the targets the suffix counts never rise and the prefix counts never
fall, so a segment of candidates is bounded by the counts at its two ends, and only segments whose bound beats
the candidates at the ends of the sequence are evaluated. The result is the same float (a bound is a correctly
rounded quotient of integers, so it bounds the rounded candidates too); a labelling of 5e6 targets among 1e7 trials
takes about a millisecond instead of half a second (``tests/test_worst_case_pruned.py`` checks the identity).

:func:`eps_max_from_target_blocks` is checked against the PAV path (:mod:`vpeval.stats.metrics`, which fits
scipy's isotonic regression) in ``tests/test_secrecy.py``.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["eps_max_from_target_blocks", "eps_max_from_block_counts", "eps_max_unit_weighted", "eps_max_ceiling_nats"]


def _llr(p: np.ndarray, n_tar, n_non) -> np.ndarray:
    return np.log(p) - np.log1p(-p) - (np.log(n_tar) - np.log(n_non))


#: Labellings with more targets than this are evaluated by :func:`_extremes_pruned` (one labelling at a time, only
#: the candidates that can be extreme); fewer, all candidates of many labellings at once.
PRUNE_MIN_TARGETS = 1 << 14
#: Candidates evaluated outright at each end of a pruned labelling.
_PRUNE_EDGE = 2048
#: A pruned labelling's other candidates are cut into segments of about ``sqrt(d) / _PRUNE_ROOT`` targets at a
#: distance ``d`` (targets) from the end: a segment's bound then exceeds its candidates by about
#: ``1 / (_PRUNE_ROOT sqrt(d))`` relatively, below the spread of the proportions at that distance under the null
#: (about ``1 / sqrt(d)``), so few segments stay open; ``8 sqrt(K)`` segments in all.
_PRUNE_ROOT = 4
_CUTS: dict = {}


def _cuts(K: int) -> np.ndarray:
    """Segment ends ``edge = c_0 < c_1 < ... = K`` (distances from one end, in targets) of a pruned labelling."""
    key = (K, _PRUNE_EDGE, _PRUNE_ROOT)
    c = _CUTS.get(key)
    if c is None:
        out, d = [_PRUNE_EDGE], _PRUNE_EDGE
        while d < K:
            d = min(K, d + max(1, math.isqrt(d) // _PRUNE_ROOT))
            out.append(d)
        c = np.array(out, dtype=np.int64)
        if len(_CUTS) < 64:
            _CUTS[key] = c
    return c


def _ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The indices of the half-open ranges ``[lo_i, hi_i)``, concatenated."""
    ln = hi - lo
    if not ln.size:
        return np.zeros(0, dtype=np.int64)
    return np.repeat(lo - (np.cumsum(ln) - ln), ln) + np.arange(int(ln.sum()))


def _open_first(b1: np.ndarray, b2: np.ndarray, thresholds, sign: float):
    """Yield batches of the segments whose bounds ``(b1, b2)`` can still beat the current ``thresholds()``
    (``sign`` 1: bounds above them, -1: below; a NaN bound always can), the most promising first and batches
    doubling in size, until none can: the caller evaluates each batch and moves the thresholds."""
    done = np.zeros(b1.size, dtype=bool)
    batch = 16
    while True:
        t1, t2 = thresholds()
        gap = np.fmax(sign * (b1 - t1), sign * (b2 - t2))  # > 0: can beat; NaN from a NaN bound: must look
        gap = np.where(np.isnan(gap), np.inf, gap)
        gap[done] = -np.inf
        open_ = np.flatnonzero(gap > 0)
        if not open_.size:
            return
        if open_.size > batch:
            open_ = open_[np.argpartition(-gap[open_], batch)[:batch]]
        done[open_] = True
        yield np.sort(open_)
        batch *= 2


def _extremes_pruned(t_suf, n_suf, t_pre, n_pre, K: int, floors) -> tuple[float, float, float, float]:
    """The extreme candidates of the min-max formulas (module docstring) of one labelling of ``K`` targets,
    evaluating only the candidates that can be extreme; exactly the values of evaluating them all.

    ``t_suf(j)``, ``n_suf(j)``: targets and trials (or weights) of the suffix starting at target ``j``'s block;
    ``t_pre(j)``, ``n_pre(j)``: of the prefix ending below it; each a function of an index array returning exact
    integer-valued float64. Along ``j`` the suffix counts never rise and the prefix counts never fall, so over a
    segment ``a <= j < b`` the suffix candidates ``T / N`` and ``(T + 1) / (N + 2)`` are at most those of ``T(a)``
    over ``N(b - 1)``, and the prefix candidates at least those of ``T(a)`` over ``N(b - 1)`` (correctly rounded
    division is monotone, so the bounds hold for the float values too). The ``_PRUNE_EDGE`` candidates at each end
    are evaluated, then, the most promising first, every segment whose bound could still beat the best candidates
    so far (or the ``floors``: the whole-sequence and top-block terms the result is combined with, ``(m1, m2, q1,
    q2)``) is evaluated in full (:func:`_open_first`). A suffix (prefix)
    with ``N <= 0`` is no candidate. Returns ``(m1, m2, q1, q2)``: the largest suffix candidates (``-inf`` if
    none) and the smallest prefix candidates (``inf`` if none), without the floors.
    """
    c = _cuts(K) if K > 2 * _PRUNE_EDGE else np.array([K], dtype=np.int64)
    e = int(c[0])

    def suf(idx):
        t, n = t_suf(idx), n_suf(idx)
        with np.errstate(divide="ignore", invalid="ignore"):
            ok = n > 0
            return (np.where(ok, t / n, -np.inf).max(initial=-np.inf),
                    np.where(ok, (t + 1.0) / (n + 2.0), -np.inf).max(initial=-np.inf))

    def pre(idx):
        t, n = t_pre(idx), n_pre(idx)
        with np.errstate(divide="ignore", invalid="ignore"):
            ok = n > 0
            return (np.where(ok, t / n, np.inf).min(initial=np.inf),
                    np.where(ok, (t + 1.0) / (n + 2.0), np.inf).min(initial=np.inf))

    m1, m2 = suf(np.arange(K - e, K))
    q1, q2 = pre(np.arange(0, e))
    if c.size > 1:
        with np.errstate(divide="ignore", invalid="ignore"):
            lo, hi = K - c[1:], K - c[:-1]  # suffix side: segments [lo, hi) below the top edge
            t, n = t_suf(lo), n_suf(hi - 1)
            b1, b2 = t / n, (t + 1.0) / (n + 2.0)
            for take in _open_first(b1, b2, lambda: (max(m1, floors[0]), max(m2, floors[1])), 1.0):
                a1, a2 = suf(_ranges(lo[take], hi[take]))
                m1, m2 = max(m1, a1), max(m2, a2)
            lo, hi = c[:-1], c[1:]  # prefix side: segments [lo, hi) above the bottom edge
            t, n = t_pre(lo), n_pre(hi - 1)
            empty = n <= 0  # a segment of empty prefixes only holds no candidate
            b1 = np.where(empty, np.inf, t / n)
            b2 = np.where(empty, np.inf, (t + 1.0) / (n + 2.0))
            for take in _open_first(b1, b2, lambda: (min(q1, floors[2]), min(q2, floors[3])), -1.0):
                a1, a2 = pre(_ranges(lo[take], hi[take]))
                q1, q2 = min(q1, a1), min(q2, a2)
    return float(m1), float(m2), float(q1), float(q2)


def eps_max_from_target_blocks(tb: np.ndarray, cum: np.ndarray) -> np.ndarray:
    """eps_max (nats, Laplace PAV) of labellings given by the tie blocks of their targets.

    Parameters
    ----------
    tb : ndarray of int, shape (R, K)
        Per labelling (row), the tie-block index of each of its ``K`` targets, sorted ascending along the row
        (a block holding several targets appears several times).
    cum : ndarray of int or float64, shape (B + 1,)
        ``[0, cumsum(block sizes)]`` of the ``B`` tie blocks (ascending scores); ``cum[-1] = n`` trials. Passing
        it as float64 (exact up to 2**53) saves a conversion of the gathered values per call.

    Returns
    -------
    ndarray of float64, shape (R,)
        ``max |LLR|`` over the real trials, nats. Needs ``0 < K < n``.
    """
    tb = np.asarray(tb)
    R, K = tb.shape
    n = int(cum[-1])
    if not 0 < K < n:
        raise ValueError(f"eps_max needs at least one target and one non-target trial, got {K} of {n}")
    B = cum.size - 1
    nn = n - K
    if K > PRUNE_MIN_TARGETS:
        return np.array([_eps_max_one_pruned(row, cum, K, n, B) for row in tb])
    j = np.arange(K, dtype=np.float64)
    # trials in blocks below each target's block (float cum: one gather, no conversion pass)
    before = tb.astype(np.float64) if B == n else np.take(cum, tb).astype(np.float64, copy=False)  # B == n: untied
    buf = np.empty((R, K))
    with np.errstate(divide="ignore", invalid="ignore"):
        # suffixes starting at a target's block: T = K - j (a repeated block only adds smaller candidates)
        n_suf = np.subtract(n, before)
        m1 = np.maximum(np.divide(K - j, n_suf, out=buf).max(axis=1), (K + 1.0) / (n + 2.0))
        n_suf += 2.0
        m2 = np.maximum(np.divide(K + 1.0 - j, n_suf, out=buf).max(axis=1), (K + 2.0) / (n + 4.0))
        last_free = tb[:, -1] < B - 1  # the highest block holds no target: the suffix of that block alone
        m2 = np.where(last_free, np.maximum(m2, 1.0 / (cum[B] - cum[B - 1] + 2.0)), m2)
        f_top = np.minimum(m1, m2)
        # prefixes ending just below a target's block: T = j, N = before (only when that prefix is not empty; a
        # target-free lowest block is the j = 0 candidate's part). An empty prefix (before = 0) gives j / 0 = inf
        # or 0 / 0 = NaN (ignored by fmin) and, for the Laplace candidate, is excluded below.
        q1 = np.fmin.reduce(np.divide(j, before, out=buf), axis=1)
        before += 2.0
        q2 = np.divide(j + 1.0, before, out=buf)
        low = np.flatnonzero(tb[:, 0] == 0)  # empty prefixes exist only where a target is in the lowest block
        if low.size:
            q2[low] = np.where(before[low] > 2.0, q2[low], np.inf)
        q2 = q2.min(axis=1)
    q1 = np.fmin(np.fmin(q1, K / n), (K + 1.0) / (n + 2.0))
    q2 = np.minimum(np.minimum(q2, (K + 1.0) / (n + 2.0)), (K + 2.0) / (n + 4.0))
    f_bot = np.maximum(q1, q2)
    return np.maximum(np.abs(_llr(f_top, K, nn)), np.abs(_llr(f_bot, K, nn)))


def _eps_max_one_pruned(row: np.ndarray, cum: np.ndarray, K: int, n: int, B: int) -> float:
    """:func:`eps_max_from_target_blocks` of one labelling (sorted target blocks ``row``) by
    :func:`_extremes_pruned`: the same candidates and floors, so the same value."""
    def before(idx):  # gathered, then converted: no float copy of all of ``cum`` (exact below 2**53)
        return cum[row[idx]].astype(np.float64)

    def t_suf(idx):
        return K - idx.astype(np.float64)

    def n_suf(idx):
        return n - before(idx)

    def t_pre(idx):
        return idx.astype(np.float64)

    top = row[-1]
    top_free = 1.0 / (float(cum[B]) - float(cum[B - 1]) + 2.0) if top < B - 1 else -np.inf
    floors = ((K + 1.0) / (n + 2.0), max((K + 2.0) / (n + 4.0), top_free),
              min(K / n, (K + 1.0) / (n + 2.0)), min((K + 1.0) / (n + 2.0), (K + 2.0) / (n + 4.0)))
    m1, m2, q1, q2 = _extremes_pruned(t_suf, n_suf, t_pre, before, K, floors)
    return _combine(m1, m2, q1, q2, floors, float(K), float(n))


def eps_max_weighted_lazy(t_pre_at, n_pre_at, K: int, k_w: float, n_w: float, top_size: float,
                          top_tar: float) -> float:
    """eps_max (nats, Laplace PAV) of one weighted labelling by :func:`_extremes_pruned`: the value of
    :func:`_eps_max_at_targets` for one row, without evaluating every candidate, and reading the weights only
    through functions, so that they can be drawn only where :func:`_extremes_pruned` looks
    (:mod:`vpeval.analysis.trial_boot`).

    ``t_pre_at(idx)``: the weight of the targets before targets ``idx`` (ascending blocks; ``K`` targets of
    total weight ``k_w``; integer weights, weight-0 targets allowed: their candidates are dominated by those of
    the next drawn target, or are the empty suffix or prefix, which is no candidate); ``n_pre_at(idx)``: the
    weight of the trials in blocks strictly below the blocks of targets ``idx`` (both float64); ``n_w``: the
    total weight; ``top_size``, ``top_tar``: the weight of the highest block of positive weight and of its
    targets. NaN without drawn targets or without drawn non-targets.
    """
    if not (k_w > 0 and n_w - k_w > 0):
        return math.nan

    def t_suf(idx):
        return k_w - t_pre_at(idx)

    def n_suf(idx):
        return n_w - n_pre_at(idx)

    floors = ((k_w + 1.0) / (n_w + 2.0), max((k_w + 2.0) / (n_w + 4.0), 1.0 / (top_size + 2.0) if top_tar <= 0
                                              else -math.inf),
              min(k_w / n_w, (k_w + 1.0) / (n_w + 2.0)), min((k_w + 1.0) / (n_w + 2.0), (k_w + 2.0) / (n_w + 4.0)))
    m1, m2, q1, q2 = _extremes_pruned(t_suf, n_suf, t_pre_at, n_pre_at, K, floors)
    return _combine(m1, m2, q1, q2, floors, k_w, n_w)


def _combine(m1, m2, q1, q2, floors, k, n) -> float:
    """eps_max (nats) from the extreme candidates and the floors of :func:`_extremes_pruned` (as the vectorised
    paths combine them)."""
    f_top = np.array([min(max(m1, floors[0]), max(m2, floors[1]))])  # arrays: the ufunc loops of the other paths
    f_bot = np.array([max(min(q1, floors[2]), min(q2, floors[3]))])
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.maximum(np.abs(_llr(f_top, k, n - k)), np.abs(_llr(f_bot, k, n - k)))[0])


def eps_max_from_block_counts(n_tar: np.ndarray, n_all: np.ndarray) -> np.ndarray:
    """eps_max (nats, Laplace PAV) from per-block (possibly weighted) counts, vectorised over rows.

    Parameters
    ----------
    n_tar, n_all : ndarray of float, shape (R, B)
        Targets and all trials per tie block (ascending scores), e.g. bootstrap-weighted counts. Blocks with
        ``n_all == 0`` are allowed (they are empty).

    Returns
    -------
    ndarray of float64, shape (R,)
        NaN for a row without targets or without non-targets.
    """
    n_tar = np.atleast_2d(np.asarray(n_tar, dtype=np.float64))
    n_all = np.atleast_2d(np.asarray(n_all, dtype=np.float64))
    K = n_tar.sum(axis=1)
    n = n_all.sum(axis=1)
    # suffix and prefix sums at every block boundary (empty blocks only add repeated candidates)
    t_suf = np.cumsum(n_tar[:, ::-1], axis=1)[:, ::-1]
    a_suf = np.cumsum(n_all[:, ::-1], axis=1)[:, ::-1]
    t_pre = np.cumsum(n_tar, axis=1)
    a_pre = np.cumsum(n_all, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        m1 = np.where(a_suf > 0, t_suf / a_suf, -np.inf).max(axis=1)
        m2 = ((t_suf + 1.0) / (a_suf + 2.0)).max(axis=1)
        q1 = np.where(a_pre > 0, t_pre / a_pre, np.inf).min(axis=1)
        q2 = ((t_pre + 1.0) / (a_pre + 2.0)).min(axis=1)
        m1 = np.maximum(m1, (K + 1.0) / (n + 2.0))
        m2 = np.maximum(m2, (K + 2.0) / (n + 4.0))
        q1 = np.minimum(q1, (K + 1.0) / (n + 2.0))
        q2 = np.minimum(q2, (K + 2.0) / (n + 4.0))
        f_top, f_bot = np.minimum(m1, m2), np.maximum(q1, q2)
        out = np.maximum(np.abs(_llr(f_top, K, n - K)), np.abs(_llr(f_bot, K, n - K)))
    return np.where((K > 0) & (n - K > 0), out, np.nan)


def eps_max_ceiling_nats(n_tar: int, n_non: int) -> float:
    """The largest eps_max (nats, Laplace PAV) any labelling of ``n_tar`` targets and ``n_non`` non-targets can
    reach: that of perfect separation, ``ln(Nt + 1) + ln(Nn / Nt)`` at the top or ``ln(Nn + 1) + ln(Nt / Nn)``
    at the bottom, whichever is larger (the data cannot show more disclosure than this).

    >>> round(eps_max_ceiling_nats(50, 5500) / math.log(2), 2)
    12.45
    """
    if n_tar < 1 or n_non < 1:
        raise ValueError("the ceiling needs at least one trial of each class")
    return max(math.log(n_tar + 1) + math.log(n_non / n_tar), math.log(n_non + 1) + math.log(n_tar / n_non))


def eps_max_unit_weighted(unit: np.ndarray, block: np.ndarray, is_tar: np.ndarray, W: np.ndarray) -> np.ndarray:
    """eps_max (nats, Laplace PAV) of resamples that weight whole units (speakers, probes), in O(K) per resample.

    The same value as :func:`eps_max_from_block_counts` of the weighted block counts, with the candidates of
    the min-max formulas (module docstring) evaluated only where they can be extreme: at the blocks holding
    targets, over the whole sequence, and the highest non-empty block alone. Trials of weight 0 are absent.

    Parameters
    ----------
    unit, block : ndarray of int, shape (n,)
        Unit (``0 .. U-1``) and tie block (ascending scores) of every trial.
    is_tar : ndarray of bool, shape (n,)
    W : ndarray of float, shape (R, U)
        Non-negative weight of every unit in every resample.

    Returns
    -------
    ndarray of float64, shape (R,)
        NaN for a resample without targets or without non-targets.
    """
    W = np.atleast_2d(np.asarray(W, dtype=np.float64))
    U = W.shape[1]
    order = np.lexsort((unit, block))  # trials by block
    unit, block, is_tar = unit[order], block[order], is_tar[order]
    tpos = np.flatnonzero(is_tar)
    tb, tu = block[tpos], unit[tpos]
    K = tpos.size
    cut = np.searchsorted(block, tb, side="left")  # first trial of each target's block
    n_u = np.bincount(unit, minlength=U).astype(np.float64)
    n_w = W @ n_u
    wt = W[:, tu]  # (R, K) target weights, ascending blocks
    # the highest non-empty block of each resample, its weight and whether it holds a weighted target
    top_u = np.full(U, -1, dtype=np.int64)
    np.maximum.at(top_u, unit, block)
    present = W > 0
    top = np.where(present, top_u[None, :], -1).max(axis=1)
    if (K + 1) * U > UNIT_MATRIX_MAX:  # many units and targets (one unit per probe): no (K, U) matrices
        n_pre, top_size, top_tar = _unit_weighted_sums(unit, block, is_tar, W, cut, top)
        return _eps_max_at_targets(wt, n_pre, n_w, top_size, top_tar)
    # below[u, j]: trials of unit u in blocks below target j's block. The trials (by block) fall into K + 1
    # segments cut at the first trial of each target's block; count units per segment, then cumulate.
    seg = np.searchsorted(cut, np.arange(block.size), side="right")  # segment of each trial, 0 .. K
    per_seg = np.bincount(seg * U + unit, minlength=(K + 1) * U).reshape(K + 1, U)
    below = np.cumsum(per_seg[:K], axis=0).T.astype(np.float64)
    n_pre = W @ below
    # per candidate top block (some unit's highest), its trials and targets per unit
    cands = np.unique(top_u[top_u >= 0])
    sel = np.isin(block, cands)
    ci = np.searchsorted(cands, block[sel])
    cnt = np.zeros((cands.size, U))
    tcnt = np.zeros((cands.size, U))
    np.add.at(cnt, (ci, unit[sel]), 1.0)
    np.add.at(tcnt, (ci, unit[sel]), is_tar[sel].astype(np.float64))
    at = np.clip(np.searchsorted(cands, top), 0, max(cands.size - 1, 0))
    top_size = (W * cnt[at]).sum(axis=1)
    top_tar = (W * tcnt[at]).sum(axis=1)
    return _eps_max_at_targets(wt, n_pre, n_w, top_size, top_tar)


#: Above this many entries (targets + 1) x units, :func:`eps_max_unit_weighted` sums weights trial by trial
#: instead of through (K, U) count matrices (16.7 M entries, 134 MB each; an incomplete Kaldi design of 1.2e6
#: trials with one unit per probe needed 27 GB).
UNIT_MATRIX_MAX = 1 << 24


def _unit_weighted_sums(unit, block, is_tar, W, cut, top):
    """``(n_pre, top_size, top_tar)`` of :func:`eps_max_unit_weighted` from cumulative trial weights (trials by
    block), a few resamples at a time: O(n) time and at most about 2**22 floats per step. Sums of integer weights
    are exact, so they equal the matrix products of the other branch."""
    R, n = W.shape[0], block.size
    n_pre = np.empty((R, cut.size))
    top_size, top_tar = np.zeros(R), np.zeros(R)
    lo_top = np.searchsorted(block, top, side="left")
    hi_top = np.searchsorted(block, top, side="right")
    step = max(1, (1 << 22) // max(n, 1))
    for lo in range(0, R, step):
        rows = slice(lo, lo + step)
        w = W[rows][:, unit]  # (r, n) weight of every trial
        cw = np.zeros((w.shape[0], n + 1))
        np.cumsum(w, axis=1, out=cw[:, 1:])
        n_pre[rows] = cw[:, cut]
        r = np.arange(w.shape[0])
        top_size[rows] = cw[r, hi_top[rows]] - cw[r, lo_top[rows]]
        np.cumsum(w * is_tar, axis=1, out=cw[:, 1:])
        top_tar[rows] = cw[r, hi_top[rows]] - cw[r, lo_top[rows]]
    return n_pre, top_size, top_tar


def _eps_max_at_targets(wt, n_pre, n_w, top_size, top_tar) -> np.ndarray:
    """eps_max (nats, Laplace PAV) of weighted labellings from the candidates at the blocks holding targets.

    ``wt`` (R, K): weight of each target (ascending blocks, any weight >= 0); ``n_pre`` (R, K): weight of the
    trials in blocks strictly below each target's block; ``n_w`` (R,): total weight; ``top_size``, ``top_tar``
    (R,): weight of the highest block of positive weight and of its targets. NaN for a row without targets or
    without non-targets. The min-max formulas of the module docstring, as in :func:`eps_max_from_block_counts`.
    """
    wt = np.asarray(wt, dtype=np.float64)
    n_pre = np.asarray(n_pre, dtype=np.float64)
    k_w = wt.sum(axis=1)
    t_suf = np.cumsum(wt[:, ::-1], axis=1)[:, ::-1]
    n_suf = np.subtract(n_w[:, None], n_pre)
    buf = np.empty_like(t_suf)
    # an empty suffix (n_suf = 0, only at the end of a row: weight-0 targets at the top) or an empty prefix
    # (n_pre = 0, only at the start) is no candidate: those rows are masked, the rest run in place
    e_suf = np.flatnonzero(n_suf[:, -1] <= 0) if n_suf.size else np.zeros(0, dtype=np.int64)
    e_pre = np.flatnonzero(n_pre[:, 0] <= 0) if n_pre.size else np.zeros(0, dtype=np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(t_suf, n_suf, out=buf)
        if e_suf.size:
            buf[e_suf] = np.where(n_suf[e_suf] > 0, buf[e_suf], -np.inf)
        m1 = buf.max(axis=1, initial=-np.inf)
        np.divide(t_suf + 1.0, np.add(n_suf, 2.0, out=n_suf), out=buf)
        if e_suf.size:
            buf[e_suf] = np.where(n_suf[e_suf] > 2.0, buf[e_suf], -np.inf)
        m2 = buf.max(axis=1, initial=-np.inf)
        np.subtract(t_suf[:, :1].copy(), t_suf, out=t_suf)  # now t_pre: targets strictly before j (0 at j = 0)
        np.divide(t_suf, n_pre, out=buf)
        if e_pre.size:
            buf[e_pre] = np.where(n_pre[e_pre] > 0, buf[e_pre], np.inf)
        q1 = buf.min(axis=1, initial=np.inf)
        np.divide(t_suf + 1.0, n_pre + 2.0, out=buf)
        if e_pre.size:
            buf[e_pre] = np.where(n_pre[e_pre] > 0, buf[e_pre], np.inf)
        q2 = buf.min(axis=1, initial=np.inf)
        m1 = np.maximum(m1, (k_w + 1.0) / (n_w + 2.0))
        m2 = np.maximum(m2, (k_w + 2.0) / (n_w + 4.0))
        m2 = np.where(top_tar > 0, m2, np.maximum(m2, 1.0 / (top_size + 2.0)))
        q1 = np.minimum(np.minimum(q1, k_w / n_w), (k_w + 1.0) / (n_w + 2.0))
        q2 = np.minimum(np.minimum(q2, (k_w + 1.0) / (n_w + 2.0)), (k_w + 2.0) / (n_w + 4.0))
        f_top, f_bot = np.minimum(m1, m2), np.maximum(q1, q2)
        out = np.maximum(np.abs(_llr(f_top, k_w, n_w - k_w)), np.abs(_llr(f_bot, k_w, n_w - k_w)))
    return np.where((k_w > 0) & (n_w - k_w > 0), out, np.nan)
