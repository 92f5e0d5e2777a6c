"""Slow, obvious reference implementations used to check the fast code."""

from __future__ import annotations

import math
from fractions import Fraction


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
