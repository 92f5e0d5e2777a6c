r"""The privacy profile eps(delta) of an attacker's scores, exact, with simultaneous confidence bounds.

Definition (hypothesis-testing differential privacy)
----------------------------------------------------
Read an attacker as a test between ``T`` ("same speaker", the target trials) and ``N`` ("different speakers").
It is *(eps, delta)-indistinguishable* over a family ``F`` of decision regions when every ``A`` in ``F`` has

    ``P_T(A) <= e^eps P_N(A) + delta``  and  ``P_N(A) <= e^eps P_T(A) + delta``

(Wasserman & Zhou, JASA 2010, Def. 2.1 and Thm. 2.4; Kairouz, Oh & Viswanath, ICML 2015, Thm. 2.1; Dong, Roth &
Su, JRSS-B 2022, Sec. 2). The *privacy profile* is the smallest such eps for each delta:

    ``eps(delta) = max(0, max over A in F and both orders (P, Q) in {(P_T, P_N), (P_N, P_T)} of
    ln((P(A) - delta) / Q(A)))``,  over the ``A`` with ``P(A) > delta``

(``+inf`` when such an ``A`` has ``Q(A) = 0``). Here ``P_T``, ``P_N`` are the empirical distributions of the
scores as given: the shares of target and of non-target trials in ``A``.

The region family ``F``: every *interval* of scores and every complement of one, i.e. the thresholds
(``s >= t`` and ``s < t``), the bands ``a <= s < b`` and the two-tailed regions ``s < a or s >= b``. Regions are cut
between distinct scores only, so a block of tied scores is never split. The two-tailed regions are needed for
attackers that are not monotone in their score: in the worst-case paper's counterexample (targets ``N(0, 2)``,
non-targets ``N(0, 1)``, Fig. 1) both tails favour the target and no threshold region sees it (tested).

Units: eps in bits here (``log2`` of a likelihood ratio), delta a probability (a share of trials).

Relation to eps_max (privacy-ZEBRA, Nautsch et al., Interspeech 2020, Eq. 9, without Laplace smoothing)
------------------------------------------------------------------------------------------------------
``eps_thresholds(0) <= eps_max(PAV) <= eps(0)``: a threshold region's ratio ``P_T/P_N`` is the slope of a chord of
the ROC from its end, at most the steepest segment of the ROC convex hull, which is PAV's largest likelihood
ratio (and likewise at the other end); every PAV bin is an interval of scores, so its ratio is one of ``F``'s.
With intervals in ``F``, ``eps(0)`` is the largest ratio of any single tie block (a ratio of sums never exceeds
the largest ratio of its parts), hence ``+inf`` whenever a block holds one class only: ``eps(0)``, the worst case,
cannot be bounded from finite data, which is why the verdict decides at a ``delta > 0``. ``eps(delta)`` is
non-increasing in delta and is 0 from ``delta = TV`` on, the total-variation distance of ``P_T`` and ``P_N`` over
``F`` (at ``e^eps = 1`` the condition reads ``P(A) - Q(A) <= delta``).

Computation
-----------
For a ratio ``x = e^eps`` let ``g(x) = max over A in F of P(A) - x Q(A)``. Over intervals this is the largest sum of
a contiguous run of the per-block weights ``p_k - x q_k`` (a running minimum of their prefix sums); over
complements it is ``1 - x`` minus the smallest such sum. ``eps(delta) = ln x*`` for the root of
``g(x) = delta``, found by Dinkelbach's iteration ``x <- (P(A) - delta) / Q(A)`` at the maximising region ``A``
(Dinkelbach, Management Science 1967), which ends, exactly, at the attaining region in a few steps: each step
O(K) for K tie blocks, O(n log n) in all with the sort.

Confidence bounds (:func:`profile_bounds`)
------------------------------------------
The region the attacker would use is chosen on the data, so the bounds hold for every region at once. Let the
target scores be i.i.d. from a continuous law with ``n`` trials. A region holding ``k`` of them lies inside the
open interval (or the open two-tailed region) between the targets just outside it, whose probability is
distributed as ``Beta(k + 1, n - k)`` (uniform spacings; David & Nagaraja, "Order Statistics", 2003, Sec. 6.4),
so its Clopper-Pearson upper bound ``B^-1(1 - g; k + 1, n - k)`` bounds ``P_T(A)``; a region holding ``k`` of them
contains the closed interval between the outermost ones (``Beta(k - 1, n - k + 2)``) or the two closed tails up to
them (``Beta(k, n - k + 1)``), whose lower quantiles bound it from below. For each ``k`` there are at most
``n + 2`` such spacings; level ``g_k = a w_k / (n + 2)`` with ``w_k = 1 / ((k + 1)(k + 2))`` (summing to 1 over
``k``, weighted to the small counts where eps is decided) makes the bounds hold for every region and every ``k``
at once with probability ``>= 1 - a`` per class and side (Bonferroni). The four families (upper and lower, targets
and non-targets) get ``alpha / 4`` each, so ``eps_low(delta) <= eps(delta) <= eps_high(delta)`` holds for every
delta at once with probability ``>= 1 - alpha`` (``alpha / m`` for a family of ``m`` attackers: the certificate
holds for all of them at once).

Then ``eps_high(delta) = max over A of ln((U_T(A) - delta) / L_N(A))`` (and the mirror order), maximised exactly by
dominance: for each count ``k`` of the denominator's class, only the region with the most of the numerator's class
among those holding at most ``k`` matters (computed for ``k <= 64`` exactly, then on a grid of ratio 1.05 with
the conservative end of each grid cell, so ``eps_high`` is an upper bound of the exact maximum); ``eps_low`` likewise
with the lower and upper bounds exchanged (grid points only: a lower bound of its maximum).

Dependence: trials that share a speaker are not independent. The bounds then use Kish's *effective* sample size,
``n / deff`` (counts scaled alike), with the design effect ``deff`` of the class's share of trials beyond a
threshold, estimated from the clusters (:func:`design_effect`): a number, or a curve over the share of the class's
own trials in a tail (``by_share``), read for a region holding ``k`` of ``n`` trials at the shares up to
``2 min(k, n - k) / n`` (the largest there, and at least the rarest estimated share's). That is an approximation,
whose coverage is measured by simulation (``docs/verdict_calibration.md``).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from .._checks import as_real, as_tar_non
from ..blocks import TieBlocks, tie_blocks
from ..errors import InvalidScoresError
from .design_effect import DEFF_SHARES, design_effect  # noqa: F401 - re-exported: importable from here
from .design_effect import check_deff as _check_deff, deff_at as _deff_at, deff_key as _deff_key
from .profile_kernel import (JIT_MIN_BLOCKS, compiled_best_region, compiled_fill_counts, compiled_window_max,
                             compiled_window_max_by_count, compiled_window_max_strided, read_by_count, run_passes,
                             start_at_table)

__all__ = ["privacy_profile_bits", "profile_bounds", "share_beyond", "share_beyond_blocks", "ProfileCounts",
           "design_effect", "typical_bounds_bits", "total_variation", "DELTA_GRID", "EXACT_COUNTS", "GRID_RATIO"]

_LN2 = math.log(2.0)
#: Shares of trials (sums of per-block shares in floats) within this much are equal.
_SHARE_TOL = 1e-12
#: A grid of delta for the profile's figure and table (log-spaced, 1e-4 to 0.5).
DELTA_GRID = np.array([1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5])
#: Denominator counts ``k`` handled one by one in the bounds' maximisation; beyond, a geometric grid.
EXACT_COUNTS = 64
#: Ratio of the geometric grid of counts beyond :data:`EXACT_COUNTS`.
GRID_RATIO = 1.05


def _blocks(tar, non) -> TieBlocks:
    tar, non = as_tar_non(tar, non)
    return tie_blocks(tar, non)


def _deltas(delta) -> tuple[np.ndarray, bool]:
    d = np.asarray(delta, dtype=float)
    scalar = d.ndim == 0
    d = np.atleast_1d(d)
    if d.ndim != 1 or d.size == 0 or not np.isfinite(d).all() or (d < 0).any() or (d >= 1).any():
        raise InvalidScoresError(f"delta must be a number or 1-D array of numbers in [0, 1), got {delta!r}")
    return d, scalar


# ------------------------------------------------------------------------------------------- point estimate


def _best_region(p: np.ndarray, q: np.ndarray, x: float, kern=None, buf=None) -> tuple[float, tuple]:
    """``max over A in F of p(A) - x q(A)`` and the attaining region: ``("in", i, j)`` for blocks ``i..j-1``,
    ``("out", i, j)`` for its complement (``p``, ``q``: per-block shares). ``kern``: the compiled
    :func:`~vpeval.metrics.profile_kernel.best_region` (same result, one pass), writing to ``buf`` (6 floats)."""
    if kern is not None:
        kern(p, q, float(x), buf)
        v_in, v_out = float(buf[0]), float(buf[3])
        if v_out > v_in:
            return v_out, ("out", int(buf[4]), int(buf[5]))
        return v_in, ("in", int(buf[1]), int(buf[2]))
    c = np.empty(p.size + 1)
    c[0] = 0.0
    np.cumsum(p - x * q, out=c[1:])
    lo = np.minimum.accumulate(c)
    j_in = int(np.argmax(c - lo))
    v_in = float(c[j_in] - lo[j_in])
    i_in = int(np.argmin(c[:j_in + 1]))
    hi = np.maximum.accumulate(c)
    j_out = int(np.argmin(c - hi))
    v_out = float(c[-1] - (c[j_out] - hi[j_out]))  # = (1 - x) - (smallest run sum), with c[-1] = 1 - x
    i_out = int(np.argmax(c[:j_out + 1]))
    if v_out > v_in:
        return v_out, ("out", i_out, j_out)
    return v_in, ("in", i_in, j_in)


def _counts(cum: np.ndarray, region: tuple) -> int:
    kind, i, j = region
    inside = int(cum[j] - cum[i])
    return inside if kind == "in" else int(cum[-1]) - inside


def _eps_one_order(cp: np.ndarray, cq: np.ndarray, deltas: np.ndarray) -> np.ndarray:
    """``max over A of ln((P(A) - delta) / Q(A))`` per delta (0 floor, nats), from the prefix counts of the
    numerator's class ``cp`` and the denominator's ``cq`` over the blocks (Dinkelbach's iteration)."""
    n_p, n_q = int(cp[-1]), int(cq[-1])
    p, q = np.empty(cp.size - 1), np.empty(cq.size - 1)
    # the counts' differences written as floats (exact below 2**53) and divided in place: the same floats as
    # diff(c) / n, without the integer and second float arrays (memory at 1e7 trials: both orders run at once)
    np.subtract(cp[1:], cp[:-1], out=p, casting="unsafe")
    np.subtract(cq[1:], cq[:-1], out=q, casting="unsafe")
    p /= n_p
    q /= n_q
    # regions without the denominator's class: P(A) up to the largest run of q-free blocks or the tails outside q
    free = q == 0
    best_free = 0.0
    if free.any():
        edges = np.flatnonzero(np.diff(np.r_[0, free.astype(np.int8), 0]) != 0).reshape(-1, 2)
        run = float((cp[edges[:, 1]] - cp[edges[:, 0]]).max()) / n_p
        nz = np.flatnonzero(~free)
        tails = float(p[:nz[0]].sum() + p[nz[-1] + 1:].sum()) if nz.size else 1.0
        best_free = max(run, tails)
    out = np.zeros(deltas.size)
    x = 1.0
    kern = compiled_best_region() if p.size >= JIT_MIN_BLOCKS else None
    buf = np.empty(6)
    # the largest delta first: eps is non-increasing in delta, so each root is a valid (lower) start for the next
    # smaller delta's iteration, which then needs fewer steps
    for m in np.argsort(-deltas, kind="stable"):
        d = float(deltas[m])
        if best_free > d + _SHARE_TOL:
            out[m] = math.inf
            continue
        for _ in range(200):
            v, region = _best_region(p, q, x, kern, buf)
            if v <= d + _SHARE_TOL:  # shares differ by >= 1 / n_p n_q > 1e-12 unless equal: float rounding
                break
            kp, kq = _counts(cp, region), _counts(cq, region)
            if kq == 0:  # a q-free region with P(A) > delta was ruled out above; rounding only
                break
            nxt = (kp / n_p - d) / (kq / n_q)
            if not nxt > x * (1 + 1e-15):
                x = max(x, nxt)
                break
            x = nxt
        out[m] = math.log(x) if x > 1.0 else 0.0
    return out


def privacy_profile_bits(tar, non, delta=DELTA_GRID):
    """The attacker's privacy profile eps(delta), in bits, over intervals and their complements (exact).

    Parameters
    ----------
    tar, non : array-like of shape (n_tar,), (n_non,)
        Target and non-target scores (higher = more target-like; the profile does not depend on the direction).
    delta : float or array-like of shape (n_delta,)
        Values in ``[0, 1)``; default :data:`DELTA_GRID`.

    Returns
    -------
    float or ndarray of shape (n_delta,)
        ``eps(delta)`` in bits (``log2``), ``>= 0``; ``inf`` where a region without one class holds more than
        ``delta`` of the other (e.g. always at ``delta = 0`` when some tie block holds one class only).

    Raises
    ------
    InvalidScoresError
        Empty classes, NaN scores, delta outside ``[0, 1)``.

    Notes
    -----
    Definition, region family, relation to eps_max and algorithm: module docstring. Depends on the scores
    only through their order and ties: invariant under any strictly increasing (or decreasing) transform, the
    order of the input, and duplicating every trial.

    Examples
    --------
    One target above both non-targets, one between them: ``s >= 3`` holds half of the targets and no
    non-target, so eps is infinite below delta = 1/2 and 0 from there on.

    >>> privacy_profile_bits([3.0, 1.5], [1.0, 2.0], [0.49, 0.5]).tolist()
    [inf, 0.0]

    ``s >= 1`` holds 3/4 of the targets and 1/4 of the non-targets: at delta = 1/4, ``(3/4 - 1/4) / (1/4) = 2``.

    >>> round(float(privacy_profile_bits([0.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0], 0.25)), 9)
    1.0
    """
    return ProfileCounts(tar, non, bounds=False).eps_bits(delta)


def _beyond(p: np.ndarray, q: np.ndarray, x: float) -> float:
    """``max(0, max over A in F of p(A) - x q(A))`` from per-block shares (both orders are the caller's)."""
    return max(0.0, _best_region(p, q, x)[0])


def share_beyond_blocks(n_tar: np.ndarray, n_non: np.ndarray, budget_bits: float):
    """:func:`share_beyond` from per-block (weighted) counts of the tie blocks, ascending scores: arrays of shape
    ``(K,)`` give a float, of shape ``(R, K)`` one value per row (e.g. bootstrap replicates; NaN for a row without
    one class)."""
    t, n = np.asarray(n_tar, dtype=float), np.asarray(n_non, dtype=float)
    x = 2.0 ** float(budget_bits)
    if t.ndim == 1:
        pt, pn = t / t.sum(), n / n.sum()
        return min(1.0, max(_beyond(pt, pn, x), _beyond(pn, pt, x)))  # 1 + 2e-16 by rounding at separation
    with np.errstate(invalid="ignore", divide="ignore"):
        pt, pn = t / t.sum(axis=1, keepdims=True), n / n.sum(axis=1, keepdims=True)
    return np.clip(np.maximum(_beyond_rows(pt, pn, x), _beyond_rows(pn, pt, x)), 0.0, 1.0)


def _beyond_rows(p: np.ndarray, q: np.ndarray, x: float) -> np.ndarray:
    """:func:`_beyond` of every row of ``p``, ``q`` (shape ``(R, K)``) at once."""
    c = np.zeros((p.shape[0], p.shape[1] + 1))
    np.cumsum(p - x * q, axis=1, out=c[:, 1:])
    inside = (c - np.minimum.accumulate(c, axis=1)).max(axis=1)
    outside = c[:, -1] - (c - np.maximum.accumulate(c, axis=1)).min(axis=1)
    return np.maximum(inside, outside)


def share_beyond(tar, non, budget_bits: float) -> float:
    """The smallest delta at which eps(delta) is within ``budget_bits``: the share of trials beyond the budget.

    ``delta*(b) = max(0, max over A in F of P(A) - 2^b Q(A))`` over both orders of the classes (module docstring:
    ``eps(delta) <= b`` iff every region has ``P(A) - 2^b Q(A) <= delta``), a share in ``[0, 1]``. Unlike eps at a
    fixed delta it is finite for every attacker, so it orders systems whose profiles are infinite at that delta
    (:func:`vpeval.analysis.comparison.compare_profiles`): 0 when no decision of the attacker exceeds a likelihood
    ratio of ``2^b`` at all, 1 at perfect separation.

    Parameters
    ----------
    tar, non : array-like of shape (n_tar,), (n_non,)
    budget_bits : float >= 0

    Returns
    -------
    float

    Raises
    ------
    InvalidScoresError
        Empty classes, NaN scores, a negative or non-finite budget.

    Examples
    --------
    >>> share_beyond([3.0, 1.5], [1.0, 2.0], 1.0)   # s >= 3 holds half of the targets and no non-target
    0.5
    >>> share_beyond([0.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0], 1.0)  # 3/4 - 2 (1/4)
    0.25
    """
    b = as_real(budget_bits, "budget_bits", low=0.0, open_low=False)
    blk = _blocks(tar, non)
    return share_beyond_blocks(blk.n_tar, blk.n_non, b)


def total_variation(tar, non) -> float:
    """``max over A in F of |P_T(A) - P_N(A)|``: the smallest delta with ``eps(delta) = 0`` (a share, no unit;
    equal to the Kolmogorov-Smirnov distance when ``F`` holds intervals; ties never split)."""
    b = _blocks(tar, non)
    c = np.r_[0.0, np.cumsum(b.n_tar / b.total_tar - b.n_non / b.total_non)]
    return float(max(c.max() - c.min(), 0.0))


# ------------------------------------------------------------------------------------------- bounds


#: From ``k = 2 STRIDE_DIV`` on, the dominance of a count ``k`` is read from every ``k // STRIDE_DIV``-th start only
#: (:func:`_dominance`): O(n) per count would cost minutes on 1e7 trials.
STRIDE_DIV = 64


def _dominance(cp: np.ndarray, cq: np.ndarray, ks: np.ndarray):
    """For each count ``k`` in ``ks``: the most numerator-class trials among regions holding at most ``k`` of the
    denominator's class (``cp``, ``cq``: prefix counts over the blocks), as
    ``(m_int_high, m_two_high, m_int_low, m_two_low)`` (int64, each of the shape of ``ks``).

    Intervals: a best interval starts at 0 or right after a block holding the denominator's class (any other start
    moves down over blocks of the numerator's class alone, gaining trials at no cost) and ends at the start of the
    block of the ``(k + 1)``-th denominator trial from there. For ``k >= 2 STRIDE_DIV`` only every
    ``k // STRIDE_DIV``-th start is read: ``m_int_low`` is the best of those windows (attained: a valid lower
    value), ``m_int_high`` the best of those windows given ``g`` more trials, ``g`` the most denominator trials
    between two read starts (every window lies inside one of them: a valid upper value); below, both are exact.
    Two-tailed regions (a prefix with at most ``k1`` and a suffix with at most ``k - k1`` denominator trials; they
    never overlap while ``k < n_q``): every split ``k1`` below ``2 STRIDE_DIV``; beyond, every
    ``k // STRIDE_DIV``-th split, ``m_two_low`` the best of those (attained) and ``m_two_high`` the best pairing of
    a cell's right-end prefix with its left-end suffix (both counts are non-decreasing in their own ``k``: a valid
    upper value for every split inside the cell).
    """
    n_p, n_q = int(cp[-1]), int(cq[-1])
    K = cp.size - 1
    # cpq[t]: numerator trials below the block of denominator trial t (t = n_q: all); suf[k2]: numerator trials
    # above the block of denominator trial n_q - 1 - k2 (k2 = n_q: all); with the start table below, the only
    # per-trial arrays; int32 from 2**20 denominator trials on while the numerator's are below 2**30 (every sum of
    # a prefix and a suffix count below stays under 2**31): memory at 1e8 trials (on small inputs mixed
    # int32/int64 arithmetic costs more than it saves)
    small = np.int32 if n_q >= 1 << 20 and n_p < 2 ** 30 else np.int64
    # the starts: 0 and right after each block holding the denominator's class, written as the first
    # denominator trial at or above them (n_q after the last such block)
    held = np.flatnonzero(cq[1:] != cq[:-1])  # the blocks holding denominator trials, ascending
    first, p_start = np.empty(held.size + 1, dtype=np.int64), np.empty(held.size + 1, dtype=np.int64)
    np.take(cq, held, out=first[:-1])
    first[-1] = n_q
    held += 1
    np.take(cp, held, out=p_start[1:])  # numerator trials below each start
    p_start[0] = 0
    del held
    # tied denominator scores (fewer starts than denominator trials): the starts read are chosen by count, not by
    # index (profile_kernel.read_by_count), or one large tie block between two read starts would make the upper
    # value that of the whole block (a tester's find: one tie block, whose only decisions are all or nothing, read
    # eps_high 9-12 bits growing with n)
    tied = first.size < n_q + 1
    big = K >= JIT_MIN_BLOCKS
    fill = compiled_fill_counts() if big else None
    if fill is not None:  # one compiled pass writes the three (profile_kernel.fill_counts)
        cpq, suf = np.empty(n_q + 1, dtype=small), np.empty(n_q + 1, dtype=small)
        start_at = np.empty(n_q + 1 if tied else 0, dtype=np.int32 if first.size < 2 ** 31 else np.int64)
        fill(cp, cq, cpq, suf, first, start_at)
        start_at = start_at if tied else None
    else:  # NumPy: repeats of the per-block values
        reps = np.empty(K + 1, dtype=np.int64)  # denominator trials per block, then a 1 for the end
        np.subtract(cq[1:], cq[:-1], out=reps[:K])
        reps[K] = 1
        vals = np.empty(K + 1, dtype=small)  # the repeated values, written in place (no int64 temporaries)
        vals[:K] = cp[:K]
        vals[K] = n_p
        cpq = np.repeat(vals, reps)
        # the repeat of the reversed arrays is the reversed repeat
        np.subtract(n_p, cp[1:], out=vals[:K], casting="unsafe")
        suf = np.empty(n_q + 1, dtype=small)
        suf[:n_q] = np.repeat(vals[:K], reps[:K])[::-1]
        suf[n_q] = n_p
        del vals, reps
        start_at = start_at_table(first) if tied else None
    m_hi, m_lo, t_hi, t_lo = (np.empty(ks.size, dtype=np.int64) for _ in range(4))
    # prefix with at most k1 denominator trials: up to the block of trial k1; suffix with at most k2: from just
    # after the block of trial n_q - 1 - k2 (both non-decreasing in their count)
    pre = cpq[:n_q + 1]
    # large inputs: the interval counts in compiled passes over the starts (the same counts; no temporaries),
    # those read at every start all in one pass
    every = np.flatnonzero((ks < 2 * STRIDE_DIV) & (ks < n_q))
    kern = compiled_window_max() if big and every.size else None
    done = np.zeros(ks.size, dtype=bool)
    strides = np.maximum(1, ks // STRIDE_DIV)
    head = (cpq, first, p_start) + (() if start_at is None else (start_at,))
    grouped = (compiled_window_max_strided if start_at is None else compiled_window_max_by_count)() if big else None
    sel = (ks < n_q) & (strides > 1) & (grouped is not None)

    def every_pass():
        got = np.empty(every.size, dtype=np.int64)
        kern(cpq, first, p_start, np.ascontiguousarray(ks[every], dtype=np.int64), n_q, got)
        m_lo[every], done[every] = got, True

    def stride_pass(st):  # one compiled pass for all the counts of one stride
        rows = np.flatnonzero(sel & (strides == st))
        lo, hi = np.empty(rows.size, dtype=np.int64), np.empty(rows.size, dtype=np.int64)
        grouped(*head, np.ascontiguousarray(ks[rows], dtype=np.int64), st, n_q, lo, hi)
        m_lo[rows], m_hi[rows], done[rows] = lo, hi, True

    # each pass writes its own rows; another thread may run some (profile_kernel.help_with_passes)
    run_passes(([every_pass] if kern is not None else [])
               + [lambda st=st: stride_pass(st) for st in np.unique(strides[sel]).tolist()])
    for r, k in enumerate(ks):
        k = int(k)
        if k >= n_q:
            m_hi[r] = m_lo[r] = t_hi[r] = t_lo[r] = n_p
            continue
        stride = int(strides[r])
        if not done[r] and stride > 1 and start_at is not None:
            m_lo[r], m_hi[r] = read_by_count(cpq, first, p_start, start_at, k, stride, n_q)
        elif not done[r]:
            f, ps = first[::stride], p_start[::stride]
            m_lo[r] = int((cpq[np.minimum(f + k, n_q)] - ps).max())
            if stride > 1:
                gap = int(np.diff(np.r_[f, n_q]).max())
                m_hi[r] = int((cpq[np.minimum(f + k + gap, n_q)] - ps).max())
        k1 = np.r_[np.arange(0, k, stride), k]
        t_lo[r] = int((pre[k1] + suf[k - k1]).max())
        if stride == 1:
            m_hi[r], t_hi[r] = m_lo[r], t_lo[r]
        else:
            t_hi[r] = max(t_lo[r], int((pre[k1[1:]] + suf[k - k1[:-1]]).max()))
    return m_hi, t_hi, m_lo, t_lo


def _count_grid(n_q: int) -> np.ndarray:
    """0..EXACT_COUNTS one by one, then a geometric grid of ratio GRID_RATIO, ending at ``n_q``."""
    ks = list(range(min(EXACT_COUNTS, n_q) + 1))
    k = float(ks[-1])
    while ks[-1] < n_q:
        k *= GRID_RATIO
        ks.append(min(n_q, int(math.ceil(k))))
    return np.unique(np.asarray(ks, dtype=np.int64))


def _level(k, n_eff: float, a: float) -> np.ndarray:
    """Per-spacing level of count ``k`` (module docstring): ``a w_k / (n + 2)``."""
    k = np.asarray(k, dtype=float)
    return a / ((k + 1.0) * (k + 2.0) * (n_eff + 2.0))


def _upper(k, n: int, deff, a: float) -> np.ndarray:
    """Simultaneous upper bound on the probability of any region holding ``k`` of ``n`` trials."""
    dk = _deff_at(deff, k, n)
    ne, ke = n / dk, np.asarray(k, dtype=float) / dk
    # the upper tail's quantile directly: 1 - level rounds to 1.0 for levels below 1e-16
    u = special.betainccinv(ke + 1.0, np.maximum(ne - ke, 1e-12), _level(ke, ne, a))
    return np.where(ke >= ne, 1.0, u)


def _lower(k, n: int, deff, a: float, interval: bool) -> np.ndarray:
    """Simultaneous lower bound on the probability of any interval (``interval``) or two-tailed/threshold region
    holding ``k`` of ``n`` trials."""
    dk = _deff_at(deff, k, n)
    ne, ke = n / dk, np.asarray(k, dtype=float) / dk
    shape = ke - 1.0 if interval else ke
    lv = _level(ke, ne, a)
    with np.errstate(invalid="ignore"):
        low = special.betaincinv(np.maximum(shape, 1e-12), ne - shape + 1.0, lv)
    return np.where(shape <= 0, 0.0, low)


def _bounds_one_order(n_p, n_q, ks, m_int, m_two, m_int_low, m_two_low, d, deff_p, deff_q, a, parts=None):
    """(eps_low, eps_high) in nats for the order (P, Q) = (numerator class, denominator class), per delta, from
    the dominance counts at the denominator counts ``ks`` (:func:`_dominance`: ``m_int``, ``m_two`` upper values
    for the upper bound, ``m_int_low``, ``m_two_low`` attained ones for the lower). ``parts``: the
    :func:`_bound_parts` of these arguments when the caller kept them (they do not depend on ``d``)."""
    u_int, u_two, l_int, l_two, lp_int, lp_two, uq = (
        _bound_parts(n_p, n_q, ks, m_int, m_two, m_int_low, m_two_low, deff_p, deff_q, a) if parts is None else parts)
    hi = np.zeros(d.size)
    lo = np.zeros(d.size)
    with np.errstate(divide="ignore", invalid="ignore"):
        for m, dd in enumerate(d):
            num = np.r_[u_int, u_two] - dd
            den = np.r_[l_int, l_two]
            r = np.where(num > 0, np.where(den > 0, num / den, np.inf), 0.0)
            hi[m] = math.log(r.max()) if r.max() > 1.0 else 0.0
            num = np.r_[lp_int, lp_two] - dd
            r = np.where(num > 0, num / np.r_[uq, uq], 0.0)
            lo[m] = math.log(r.max()) if r.max() > 1.0 else 0.0
    return lo, hi


def _bound_parts(n_p, n_q, ks, m_int, m_two, m_int_low, m_two_low, deff_p, deff_q, a) -> tuple:
    """The simultaneous probability bounds :func:`_bounds_one_order` combines, independent of delta:
    ``(u_int, u_two, l_int, l_two, lp_int, lp_two, uq)`` (beta quantiles, the costly part)."""
    exact = ks <= EXACT_COUNTS
    # eps_high: U_P(most P-trials among regions with <= k Q-trials) over L_Q of the fewest Q-trials they may hold
    # (k itself where counted one by one; the grid cell's lower end + 1 beyond, conservative)
    k_low = np.where(exact, ks, np.r_[0, ks[:-1]] + 1)
    u_int, u_two = _upper(m_int, n_p, deff_p, a), _upper(m_two, n_p, deff_p, a)
    l_int, l_two = _lower(k_low, n_q, deff_q, a, True), _lower(k_low, n_q, deff_q, a, False)
    # eps_low: L_P of the regions found over U_Q of their k (grid points only: attained regions)
    lp_int, lp_two = _lower(m_int_low, n_p, deff_p, a, True), _lower(m_two_low, n_p, deff_p, a, False)
    uq = _upper(ks, n_q, deff_q, a)
    return u_int, u_two, l_int, l_two, lp_int, lp_two, uq


def profile_bounds(tar, non, delta=DELTA_GRID, *, alpha: float = 0.05, deff_tar: float = 1.0,
                   deff_non: float = 1.0, n_members: int = 1):
    """Simultaneous lower and upper confidence bounds on the privacy profile eps(delta), in bits.

    Parameters
    ----------
    tar, non : array-like of shape (n_tar,), (n_non,)
    delta : float or array-like of shape (n_delta,), in ``[0, 1)``
    alpha : float in (0, 1)
        ``eps_low <= eps <= eps_high`` at every delta at once with probability ``>= 1 - alpha`` (for i.i.d.
        trials of continuous scores; module docstring).
    deff_tar, deff_non : float >= 1 or (shares, values)
        Design effects (:func:`design_effect`, a number or a curve over shares): the bounds use ``n / deff``
        trials of each class.
    n_members : int >= 1
        The bounds are made at ``alpha / n_members`` (Bonferroni), so that those of ``n_members`` attackers hold
        together.

    Returns
    -------
    (eps_low, eps_high) : floats or ndarrays of shape (n_delta,)
        In bits; ``eps_high`` is ``inf`` where the data cannot exclude a region holding more than ``delta`` of one
        class and none of the other (too few trials for that delta).

    Raises
    ------
    InvalidScoresError
        Empty classes, NaN scores, a delta outside ``[0, 1)``, alpha outside (0, 1), a design effect below 1 or a
        bad ``n_members``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> lo, hi = profile_bounds(rng.normal(size=10_000), rng.normal(size=100_000), 0.01)
    >>> float(lo), round(float(hi), 2)   # a likelihood ratio of at most 2^0.97 = 2.0 beyond delta = 1 %
    (0.0, 0.97)
    """
    _deltas(delta)  # checked before the work
    return ProfileCounts(tar, non).bounds_bits(delta, alpha=alpha, deff_tar=deff_tar, deff_non=deff_non,
                                               n_members=n_members)


#: The largest class size :func:`typical_bounds_bits` takes: scipy's negative-binomial quantile aborts the process
#: (boost throws) near 1e15 trials (a tester's `vpeval plan --speakers 2000`); 1e12 is beyond any evaluation.
MAX_PLANNED_TRIALS = 1e12


def typical_bounds_bits(n_tar: float, n_non: float, delta: float, *, alpha: float = 0.05, deff_tar: float = 1.0,
                      deff_non: float = 1.0, n_members: int = 1) -> float:
    """``eps_high(delta)`` (bits) of a typical perfectly secret sample of ``n_tar`` targets and ``n_non``
    non-targets: how far the bound alone keeps a perfect system from zero at this size.

    In such a sample (the two classes in random order) the regions holding at most ``k`` of one class hold, at
    most, about the largest of ``n_q`` negative-binomial counts of the other class before the ``(k + 1)``-th
    trial of the first (a scan statistic; its ``1 - 1 / n_q`` quantile is used), the dominance counts of
    :func:`profile_bounds` in closed form. It is what :func:`vpeval.analysis.profiles.plan` searches on; its
    agreement with simulated perfectly secret samples is measured in ``docs/verdict_calibration.md``.

    Parameters
    ----------
    n_tar, n_non : float >= 1
        Class sizes (trials; need not be integers: a planned design).
    delta : float in [0, 1)
    alpha, deff_tar, deff_non, n_members
        As in :func:`profile_bounds`.

    Returns
    -------
    float
        ``eps_high(delta)`` in bits; ``inf`` where the size cannot bound a region of that share.

    Raises
    ------
    InvalidScoresError
        Sizes outside ``[1, MAX_PLANNED_TRIALS]``, a delta outside ``[0, 1)``, options as :func:`profile_bounds`.
    """
    if not (1 <= n_tar <= MAX_PLANNED_TRIALS and 1 <= n_non <= MAX_PLANNED_TRIALS):
        raise InvalidScoresError(f"the class sizes must each be between 1 and 1e12 trials, got {n_tar:g} and {n_non:g}")
    deff_tar, deff_non = _check_deff(deff_tar, "deff_tar"), _check_deff(deff_non, "deff_non")
    d, _ = _deltas(delta)
    a = as_real(alpha, "alpha", low=0.0, high=1.0) / (4.0 * int(n_members))
    from scipy import stats  # here alone: importing it costs half a second a process
    hi = 0.0
    for n_p, n_q, dp, dq in ((n_tar, n_non, deff_tar, deff_non), (n_non, n_tar, deff_non, deff_tar)):
        ks = _count_grid(int(math.floor(n_q)))
        # the largest of about n_q windows, each holding a negative-binomial count of P-trials before its
        # (k + 1)-th Q-trial (trials of the two classes in random order), at its 1 - 1/n_q quantile
        scan = stats.nbinom.isf(1.0 / (n_q + 1.0), ks + 1.0, n_q / (n_p + n_q))
        m = np.minimum(n_p, np.maximum((ks + 1.0) * (n_p / n_q), scan))
        hi = max(hi, float(_bounds_one_order(n_p, n_q, ks, m, m, m, m, d, dp, dq, a)[1][0]))
    return hi / _LN2


class ProfileCounts:
    """What the profile and its bounds are computed from, kept for any delta, level and design effect.

    Holds, for one attacker's scores, the prefix counts of both classes over the tie blocks (O(K) for K blocks)
    and, unless ``bounds=False``, for each order of the classes the dominance counts at the grid of denominator
    counts (module docstring; the costly part of the bounds, O(K log K) per grid count).

    Parameters
    ----------
    tar, non : array-like of shape (n_tar,), (n_non,)
        Ignored when ``blocks`` is given (pass None).
    bounds : bool
        Compute the dominance counts (needed by :meth:`bounds_bits`).
    blocks : vpeval.blocks.TieBlocks, optional
        The tie blocks of these scores when already at hand (e.g. :meth:`vpeval.io.trials.Trials.tie_blocks`,
        which the verification bundle and the figures share): no second sort.

    Raises
    ------
    InvalidScoresError
        Empty classes, NaN scores.
    """

    def __init__(self, tar, non, *, bounds: bool = True, blocks=None):
        b = _blocks(tar, non) if blocks is None else blocks
        if blocks is not None and not (int(np.sum(b.n_tar)) > 0 and int(np.sum(b.n_non)) > 0):
            raise InvalidScoresError("the profile needs at least one target and one non-target score")
        if blocks is not None and np.isnan(b.values).any():
            raise InvalidScoresError("scores contain NaN")
        self.ct = np.r_[0, np.cumsum(b.n_tar, dtype=np.int64)]
        self.cn = np.r_[0, np.cumsum(b.n_non, dtype=np.int64)]
        self.n_tar, self.n_non = int(self.ct[-1]), int(self.cn[-1])
        self._dom = None
        self._eps: dict = {}  # delta -> eps (bits), filled by eps_bits
        self._parts: dict = {}  # (level, design effects) -> _bound_parts of both orders, filled by bounds_bits
        if bounds:
            self._dom = []
            for cp, cq in ((self.ct, self.cn), (self.cn, self.ct)):
                ks = _count_grid(int(cq[-1]))
                self._dom.append((int(cp[-1]), int(cq[-1]), ks, *_dominance(cp, cq, ks)))

    def eps_bits(self, delta=DELTA_GRID):
        """:func:`privacy_profile_bits` of these scores (each delta computed once per object: a family and its
        sub-families ask for the same ones)."""
        d, scalar = _deltas(delta)
        todo = np.array([x for x in dict.fromkeys(d.tolist()) if x not in self._eps])
        if todo.size:
            got = np.maximum(*_both_orders(_eps_one_order, self.ct, self.cn, todo)) / _LN2
            self._eps.update(zip(todo.tolist(), got.tolist()))
        eps = np.array([self._eps[x] for x in d.tolist()])
        return float(eps[0]) if scalar else eps

    def bounds_bits(self, delta=DELTA_GRID, *, alpha: float = 0.05, deff_tar: float = 1.0, deff_non: float = 1.0,
                    n_members: int = 1):
        """:func:`profile_bounds` of these scores (same parameters, returns and errors)."""
        d, scalar = _deltas(delta)
        a = as_real(alpha, "alpha", low=0.0, high=1.0)
        dt, dn = _check_deff(deff_tar, "deff_tar"), _check_deff(deff_non, "deff_non")
        if isinstance(n_members, bool) or not isinstance(n_members, (int, np.integer)) or n_members < 1:
            raise InvalidScoresError(f"n_members must be an integer >= 1, got {n_members!r}")
        if self._dom is None:
            raise InvalidScoresError("these ProfileCounts were made with bounds=False")
        a4 = a / (4.0 * int(n_members))
        # the beta quantiles depend on the level and design effects, not on delta: kept for the next delta
        key = (a4, _deff_key(dt), _deff_key(dn))
        if key not in self._parts:
            self._parts[key] = (_bound_parts(*self._dom[0], dt, dn, a4), _bound_parts(*self._dom[1], dn, dt, a4))
        p1, p2 = self._parts[key]
        lo1, hi1 = _bounds_one_order(*self._dom[0], d, dt, dn, a4, parts=p1)
        lo2, hi2 = _bounds_one_order(*self._dom[1], d, dn, dt, a4, parts=p2)
        lo, hi = np.maximum(lo1, lo2) / _LN2, np.maximum(hi1, hi2) / _LN2
        return (float(lo[0]), float(hi[0])) if scalar else (lo, hi)


def _both_orders(fn, ct, cn, *args) -> tuple:
    """``(fn(ct, cn, *args), fn(cn, ct, *args))``, the second in a thread from JIT_MIN_BLOCKS blocks on (the
    compiled loops release the GIL: two cores halve the point estimate of a 1e7-line file, 0.9 s)."""
    if ct.size <= JIT_MIN_BLOCKS or compiled_best_region() is None:
        return fn(ct, cn, *args), fn(cn, ct, *args)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        other = pool.submit(fn, cn, ct, *args)
        return fn(ct, cn, *args), other.result()
