"""Slow, obvious reference implementations used to check the fast code."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from scipy.special import expit


def operating_points(tar, non):
    """(pmiss, pfa) at each distinct score and +inf, by direct counting."""
    ts = sorted(set(tar) | set(non)) + [math.inf]
    pts = []
    for t in ts:
        pmiss = sum(1 for x in tar if x < t) / len(tar)
        pfa = sum(1 for x in non if x >= t) / len(non)
        pts.append((pmiss, pfa))
    return pts


def interp_eer(tar, non):
    pts = operating_points(tar, non)
    for (m0, f0), (m1, f1) in zip(pts, pts[1:]):
        if m0 == f0:
            return m0
        if (m0 - f0) < 0 <= (m1 - f1):
            lam = (f0 - m0) / ((m1 - f1) - (m0 - f0))
            return m0 + lam * (m1 - m0)
    return pts[-1][0]


def _cross(o, a, b):
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def rocch_eer(tar, non):
    """EER of the upper convex hull of the ROC points (pfa, pd), computed geometrically."""
    pts = sorted({(f, 1 - m) for m, f in operating_points(tar, non)} | {(0.0, 0.0), (1.0, 1.0)})
    hull = []
    for p in pts:  # upper hull, left to right
        while len(hull) >= 2 and _cross(hull[-2], hull[-1], p) >= 0:
            hull.pop()
        hull.append(p)
    # EER: pfa = pmiss = 1 - pd on the hull
    for (x0, y0), (x1, y1) in zip(hull, hull[1:]):
        g0, g1 = x0 - (1 - y0), x1 - (1 - y1)
        if g0 <= 0 <= g1:
            if g1 == g0:
                return x0
            lam = -g0 / (g1 - g0)
            return x0 + lam * (x1 - x0)
    raise AssertionError("hull does not cross the diagonal")


def min_dcf(tar, non, p, c_miss=1.0, c_fa=1.0):
    norm = min(c_miss * p, c_fa * (1 - p))
    return min((c_miss * p * m + c_fa * (1 - p) * f) / norm for m, f in operating_points(tar, non))


def pav_llr(tar, non, laplace=False):
    """Exact PAV over tie blocks with Fractions; returns llr per trial (nats), input order."""
    vals = sorted(set(tar) | set(non))
    blocks = [[sum(1 for x in tar if x == v), sum(1 for x in non if x == v)] for v in vals]
    if laplace:
        blocks = [[1, 1]] + blocks + [[1, 1]]
    # stack of [tar, non, n_blocks]
    stack = []
    for t, n in blocks:
        stack.append([t, n, 1])
        while len(stack) > 1 and Fraction(stack[-2][0], stack[-2][0] + stack[-2][1]) > Fraction(
            stack[-1][0], stack[-1][0] + stack[-1][1]
        ):
            t2, n2, k2 = stack.pop()
            stack[-1][0] += t2
            stack[-1][1] += n2
            stack[-1][2] += k2
    post = []
    for t, n, k in stack:
        post += [(t, n)] * k
    if laplace:
        post = post[1:-1]
    prior = math.log(len(tar)) - math.log(len(non))

    def llr(tn):
        t, n = tn
        if n == 0:
            return math.inf
        if t == 0:
            return -math.inf
        return math.log(t) - math.log(n) - prior

    by_val = {v: llr(post[i]) for i, v in enumerate(vals)}
    return [by_val[x] for x in tar], [by_val[x] for x in non]


def cllr(tar_llr, non_llr):
    def sp(x):
        if x == math.inf:
            return math.inf
        if x == -math.inf:
            return 0.0
        return math.log1p(math.exp(x)) if x < 30 else x + math.log1p(math.exp(-x))

    return (sum(sp(-x) for x in tar_llr) / len(tar_llr) + sum(sp(x) for x in non_llr) / len(non_llr)) / (
        2 * math.log(2)
    )


def linkability(tar, non, omega=1.0, n_bins=10):
    """Global linkability D<->sys (Gomez-Barrero et al., IEEE TIFS 2018, Eqs. 5-7) by direct counting.

    Bins: equal width over [min, max] of all scores, edges ``lo + i * ((hi - lo) / n_bins)`` (the last edge
    ``hi`` itself, as numpy.histogram's float64 edges), bin i holding ``e_i <= s < e_(i+1)`` and the last bin
    also ``s = hi``. Each score is placed by comparing it with every edge in turn. The densities, the local
    measure ``D(s) = 2 omega LR / (1 + omega LR) - 1`` where ``omega LR > 1`` (1 where a bin holds mated
    scores only) and the trapezoid over the bin centres of ``D * p(s|mated)`` are then done in exact
    rational arithmetic on those float edges.
    """
    tar, non = [float(x) for x in tar], [float(x) for x in non]
    lo, hi = min(tar + non), max(tar + non)
    step = (hi - lo) / n_bins
    edges = [lo + i * step for i in range(n_bins)] + [hi]
    if any(b <= a for a, b in zip(edges, edges[1:])):
        return 0.0

    def bin_of(s):
        for i in range(n_bins - 1):
            if edges[i] <= s < edges[i + 1]:
                return i
        return n_bins - 1

    count_t, count_n = [0] * n_bins, [0] * n_bins
    for s in tar:
        count_t[bin_of(s)] += 1
    for s in non:
        count_n[bin_of(s)] += 1
    E = [Fraction(e) for e in edges]
    w = [E[i + 1] - E[i] for i in range(n_bins)]
    y_t = [Fraction(count_t[i], len(tar)) / w[i] for i in range(n_bins)]
    y_n = [Fraction(count_n[i], len(non)) / w[i] for i in range(n_bins)]
    om = Fraction(omega)
    d = []
    for yt, yn in zip(y_t, y_n):
        if yn == 0:
            d.append(Fraction(1) if yt != 0 else Fraction(0))  # an empty bin adds nothing either way
            continue
        olr = om * yt / yn
        d.append(2 * olr / (1 + olr) - 1 if olr > 1 else Fraction(0))
    centres = [(E[i] + E[i + 1]) / 2 for i in range(n_bins)]
    f = [d[i] * y_t[i] for i in range(n_bins)]
    area = sum((centres[i + 1] - centres[i]) * (f[i] + f[i + 1]) / 2 for i in range(n_bins - 1))
    return float(area)


def closest_eer(tar, non):
    """Closest-point EER over the block operating points, exact in fractions; first of equally close points."""
    ts = sorted(set(tar) | set(non)) + [math.inf]
    best = None
    for t in ts:
        pmiss = Fraction(sum(1 for x in tar if x < t), len(tar))
        pfa = Fraction(sum(1 for x in non if x >= t), len(non))
        gap = abs(pmiss - pfa)
        if best is None or gap < best[0]:
            best = (gap, (pmiss + pfa) / 2)
    return float(best[1])


def block_points(tar, non):
    """(pmiss, pfa) as Fractions at every block operating point (thresholds: the distinct scores, then inf)."""
    ts = sorted(set(tar) | set(non)) + [math.inf]
    return [(Fraction(sum(1 for x in tar if x < t), len(tar)), Fraction(sum(1 for x in non if x >= t), len(non)))
            for t in ts]


def asvspoof_compute_eer(tar, non):
    """The ASVspoof 2019 ``compute_eer`` (eval_metrics.py) rebuilt from its description, float arithmetic and
    all: per-trial operating points of the stably sorted list (targets first), frr = cumulative targets / Nt,
    far = remaining non-targets / Nn, argmin of |frr - far| in float64, numpy.mean of the pair."""
    tar, non = np.asarray(tar, dtype=float), np.asarray(non, dtype=float)
    scores = np.concatenate([tar, non])
    labels = np.concatenate([np.ones(tar.size), np.zeros(non.size)])[np.argsort(scores, kind="mergesort")]
    tar_sums = np.cumsum(labels)
    non_sums = non.size - (np.arange(1, scores.size + 1) - tar_sums)
    frr = np.concatenate([[0.0], tar_sums / tar.size])
    far = np.concatenate([[1.0], non_sums / non.size])
    i = int(np.argmin(np.abs(frr - far)))
    return float(np.mean((frr[i], far[i])))


def script_closest_eer(tar, non):
    """The ASVspoof 2019 ``compute_eer`` rule rebuilt from its description: one operating point after every
    trial of the list sorted stably (targets first among ties), rejecting scores up to and including it."""
    scores = list(tar) + list(non)
    labels = [1] * len(tar) + [0] * len(non)
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    pts = [(Fraction(0), Fraction(1))]
    n_miss, n_fa = 0, len(non)
    for i in order:
        if labels[i]:
            n_miss += 1
        else:
            n_fa -= 1
        pts.append((Fraction(n_miss, len(tar)), Fraction(n_fa, len(non))))
    gap, val = min(((abs(m - f), (m + f) / 2) for m, f in pts), key=lambda p: p[0])
    return float(val)


def logistic_llr_fit(tar, non, regularization=None, iterations=60):
    """Slow full-data logistic calibration ``LLR = w s + b``: plain Newton on every trial at once.

    Minimises ``(sum softplus(-(w t + c)) + sum softplus(w n + c)) / (Nt + Nn) + lam (w sd)**2 / 2`` over
    ``(w, c)`` (``sd`` the population std of all training scores; ``lam`` = ``regularization`` or 0) and
    returns ``(w, c - log(Nt / Nn))``: maximum likelihood with the training prior log-odds removed. Newton
    steps (with halving while the loss rises) in coordinates centred on the score mean, for conditioning.
    """
    tar, non = np.asarray(tar, float), np.asarray(non, float)
    s = np.concatenate([tar, non])
    y = np.concatenate([np.ones(tar.size), np.zeros(non.size)])
    m, sd = s.mean(), s.std()
    x = (s - m) / sd
    lam = 0.0 if regularization is None else float(regularization)

    def loss(v):
        eta = v[0] * x + v[1]
        return np.mean(np.where(y == 1, np.logaddexp(0, -eta), np.logaddexp(0, eta))) + 0.5 * lam * v[0] ** 2

    v = np.zeros(2)
    for _ in range(iterations):
        eta = v[0] * x + v[1]
        p = expit(eta)
        g = np.array([np.mean((p - y) * x), np.mean(p - y)]) + [lam * v[0], 0.0]
        q = p * (1 - p)
        h = np.array([[np.mean(q * x * x) + lam, np.mean(q * x)], [np.mean(q * x), np.mean(q)]])
        step = np.linalg.solve(h, g)
        t = 1.0
        while loss(v - t * step) > loss(v) + 1e-15 * abs(loss(v)) and t > 1e-8:
            t /= 2
        v = v - t * step
    w = v[0] / sd
    return w, v[1] - w * m - (math.log(tar.size) - math.log(non.size))


def privacy_profile_bits(tar, non, delta):
    """eps(delta) in bits by brute force: every region cut between distinct scores (intervals and their
    complements), both orders, ln((P(A) - delta) / Q(A)) with exact fractions."""
    cuts = [-math.inf] + sorted(set(tar) | set(non)) + [math.inf]
    nt, nn = len(tar), len(non)
    best = 0.0
    for i in range(len(cuts)):
        for j in range(i, len(cuts)):
            a, b = cuts[i], cuts[j]
            kt = sum(1 for x in tar if a <= x < b) if a != -math.inf else sum(1 for x in tar if x < b)
            kn = sum(1 for x in non if a <= x < b) if a != -math.inf else sum(1 for x in non if x < b)
            for ct, cn in ((kt, kn), (nt - kt, nn - kn)):
                for p, q in ((Fraction(ct, nt), Fraction(cn, nn)), (Fraction(cn, nn), Fraction(ct, nt))):
                    if p > delta:
                        if q == 0:
                            return math.inf
                        best = max(best, math.log2(float((p - Fraction(delta)) / q)))
    return best
