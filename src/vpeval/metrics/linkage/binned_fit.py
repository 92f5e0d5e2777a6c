"""Newton's method for the LID pipeline's calibration on the moment histograms, with Taylor bounds.

:func:`_fit_binned` expands every sum that Newton's method needs around each bin centre (derivatives of the
sigmoid from :func:`_sigmoid_derivatives`) and accepts the result only when the bound on the truncation error
(:func:`_sigmoid_ratio_sup`) shows it equals the exact fit to about :data:`_BINNED_TOL`; otherwise it runs
the exact streaming fit (:mod:`vpeval.metrics.linkage.streaming_fit`) from the binned solution.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit

from ...calibration.logistic import add_slope_ridge, newton_minimize
from ...errors import InvalidScoresError
from .histogram import _BIN_WIDTH, _N_MOMENTS, _MomentHistogram

#: Fitted parameters are taken from the histograms only when the bound on their truncation error is below
#: this (relative to the standardised slope); otherwise the exact streaming fit is run (see _fit_binned).
_BINNED_TOL = 1e-11


def _sigmoid_derivative_terms(n_max: int) -> list:
    """``d^n sigmoid / d eta^n`` for n = 0..n_max as {(a, b): coef} meaning sum coef s**a t**b, with
    ``s = sigmoid(eta)``, ``t = sigmoid(-eta)`` (from ``s' = s t``, ``t' = -s t``)."""
    terms = [{(1, 0): 1.0}]
    for _ in range(n_max):
        nxt: dict = {}
        for (a, b), c in terms[-1].items():
            if a:
                nxt[(a, b + 1)] = nxt.get((a, b + 1), 0.0) + a * c
            if b:
                nxt[(a + 1, b)] = nxt.get((a + 1, b), 0.0) - b * c
        terms.append({k: v for k, v in nxt.items() if v != 0.0})
    return terms


_SIG_TERMS = _sigmoid_derivative_terms(12)


def _sigmoid_derivatives(eta: np.ndarray, n_max: int) -> list:
    """``[d^n sigmoid / d eta^n (eta) for n = 0..n_max]`` from :data:`_SIG_TERMS`, with ``s`` and ``t`` each
    evaluated directly (no ``1 - s``: no cancellation where ``s`` is near 1). The powers are tabled once by
    repeated multiplication (``**`` on an array costs a ``pow`` call per entry: this was 5 s of the demo)."""
    s, t = expit(eta), expit(-eta)
    top = n_max + 1  # the largest exponent of s or t in the terms up to n_max
    sp, tp = [np.ones_like(eta), s], [np.ones_like(eta), t]
    for _ in range(2, top + 1):
        sp.append(sp[-1] * s)
        tp.append(tp[-1] * t)
    out = []
    for terms in _SIG_TERMS[: n_max + 1]:
        acc = np.zeros_like(eta)
        for (a, b), c in terms.items():
            acc += c * (sp[a] * tp[b])
        out.append(acc)
    return out


_SIG_SUP: dict = {}


def _sigmoid_ratio_sup(n: int) -> float:
    """An upper bound of ``sup |sigmoid^(n)(eta)| / (s t)`` over all eta, n >= 1 (``s t = sigmoid'``).

    For n >= 1 every term of :data:`_SIG_TERMS` has a >= 1 and b >= 1, so ``sigmoid^(n) = s t P(s)`` with
    ``P(s) = sum c s**(a-1) (1-s)**(b-1)``; its maximum on a grid of 10**6 + 1 points of [0, 1], plus the
    grid spacing times a bound of ``|P'|`` (degree times the sum of |c| times 2**degree), bounds ``|P|``."""
    if n not in _SIG_SUP:
        s = np.linspace(0.0, 1.0, 10**6 + 1)
        t = 1.0 - s
        terms = _SIG_TERMS[n]
        poly = sum(c * s ** (a - 1) * t ** (b - 1) for (a, b), c in terms.items())
        degree = max(a + b - 2 for a, b in terms)
        slack = 1e-6 * degree * sum(abs(c) for c in terms.values()) * 2.0**degree
        _SIG_SUP[n] = float(np.max(np.abs(poly))) + slack
    return _SIG_SUP[n]



def _fit_binned(acc: _MomentHistogram, nt_groups, t_groups, separable, regularization, context, exact_fit):
    """Logistic calibration of :func:`_fit_calibration` from the moment histograms of its training scores.

    Every sum over training scores that Newton's method needs, ``sum phi(alpha z + beta) z**m`` with ``phi`` the
    softplus, the sigmoid or its derivative and m <= 2, is expanded around each bin centre ``c``
    (``z = c + h d``, ``|d| <= 1/2``, ``eta_c = alpha c + beta``, ``e = |alpha| h / 2``)::

        phi(eta_c + alpha h d) = sum_{j <= J_m} phi^(j)(eta_c) (alpha h)**j d**j / j! + R,   J_m = 4 - m,

    and ``z**m`` is expanded exactly, so the stored moments ``sum d**j`` (j <= 4) give each sum up to the
    remainders. For the two gradient sums (``phi`` = sigmoid up to sign, m = 0, 1; remainder orders k = 5, 4)::

        |R| <= K_k max_bin(s t) e**k / k!,   max_bin(s t) <= s(eta_c) t(eta_c) exp(e),

    where ``sigmoid^(k) = s t P_k(s)`` (s = sigmoid, t = 1 - s) and ``K_k >= sup |P_k|`` on [0, 1]
    (:func:`_sigmoid_ratio_sup`); the second inequality holds because ``|d ln(s t) / d eta| <= 1``. Summed
    over each bin (times ``|z| <= |c| + h/2`` for m = 1) this bounds the gradient error ``g_err`` at the
    solution. The parameters are accepted when ``||H^-1|| ||g_err||`` (H the Hessian of the mean loss) is
    below ``1e-11 |a|`` (a the standardised slope), so they equal the exact fit to about 1e-11 relative
    (rounding of the float64 sums aside). Otherwise, and whenever the bins cannot decide separability
    (extreme target and non-target scores in one bin), ``exact_fit(theta0)`` runs the exact streaming
    Newton passes, started from the binned solution. Returns ``(w, b, regularised, exact_used)``.
    """
    if acc is None:  # z range too wide for the bins
        return (*exact_fit(None), True)
    h = _BIN_WIDTH
    nt = acc.hist[:, nt_groups].sum(axis=1)
    tg = acc.hist[:, t_groups].sum(axis=1)
    n_n, n_t = int(round(nt[0].sum())), int(round(tg[0].sum()))
    if n_t == 0 or n_n == 0:
        raise InvalidScoresError(f"{context}: the calibration needs target and non-target training trials")
    t_min = float(acc.t_lo[[g - acc.n_rgrp * acc.n_cgrp for g in t_groups]].min())
    t_max = float(acc.t_hi[[g - acc.n_rgrp * acc.n_cgrp for g in t_groups]].max())
    occupied = np.flatnonzero(nt[0] > 0)
    n_lo_edge = h * (acc.k_lo + occupied[0])  # n_min in [n_lo_edge, n_lo_edge + h)
    n_hi_edge = h * (acc.k_lo + occupied[-1] + 1)  # n_max in [n_hi_edge - h, n_hi_edge)
    sep_up = t_min >= n_hi_edge  # certainly t_min >= n_max
    sep_down = t_max <= n_lo_edge  # certainly t_max <= n_min
    undecided = (not sep_up and t_min >= n_hi_edge - h) or (not sep_down and t_max < n_lo_edge + h)
    separable_data = sep_up or sep_down
    if undecided or (separable_data and separable == "error"):
        return (*exact_fit(None), True)
    lam = float(regularization) if separable_data else None

    centre = {}
    moments = {}
    for cls, hst in (("n", nt), ("t", tg)):
        keep = hst[0] > 0
        centre[cls] = h * (acc.k_lo + np.flatnonzero(keep) + 0.5)
        moments[cls] = hst[:, keep]
    n = n_t + n_n
    plo = math.log(n_t) - math.log(n_n)

    # A[m][j] = sum over each bin of z**m d**j / j! h**j ... precisely: sum_l C(m,l) c**(m-l) h**l M_{j+l}
    def power_sums(cls, m):
        c, mom = centre[cls], moments[cls]
        n_j = _N_MOMENTS - m
        return np.array([sum(math.comb(m, l) * c ** (m - l) * h**l * mom[j + l] for l in range(m + 1))
                         for j in range(n_j)])

    A = {cls: [power_sums(cls, m) for m in range(3)] for cls in ("n", "t")}
    s1 = float(A["n"][1][0].sum() + A["t"][1][0].sum())
    s2 = float(A["n"][2][0].sum() + A["t"][2][0].sum())
    mu = s1 / n
    sd = math.sqrt(max(s2 / n - mu * mu, 0.0)) or 1.0
    fact = [float(math.factorial(j)) for j in range(_N_MOMENTS + 1)]

    def series(derivs, a_m, step):
        """sum over bins and j of derivs[j] * a_m[j] * step**j / j!"""
        total = 0.0
        for j in range(a_m.shape[0]):
            total += float(np.dot(derivs[j], a_m[j])) * step**j / fact[j]
        return total

    def evaluate(theta):
        a, c = theta
        alpha = a / sd
        beta = c + plo - a * mu / sd
        step = alpha * h
        sums = np.zeros(6)  # loss, R0, R1, Q0, Q1, Q2
        for cls in ("n", "t"):
            eta = alpha * centre[cls] + beta
            D = _sigmoid_derivatives(eta, _N_MOMENTS)
            if cls == "n":
                loss = [np.logaddexp(0.0, eta)] + D[: _N_MOMENTS - 1]
                r = D[:_N_MOMENTS]
            else:
                tneg = expit(-eta)
                loss = [np.logaddexp(0.0, -eta), -tneg] + D[1 : _N_MOMENTS - 1]
                r = [-tneg] + D[1:_N_MOMENTS]
            q = D[1 : _N_MOMENTS + 1]
            am = A[cls]
            sums += [series(loss, am[0], step), series(r, am[0], step), series(r, am[1], step),
                     series(q, am[0], step), series(q, am[1], step), series(q, am[2], step)]
        f, r0, r1, q0, q1, q2 = sums / n
        g = np.array([(r1 - mu * r0) / sd, r0])
        haa = (q2 - 2 * mu * q1 + mu * mu * q0) / (sd * sd)
        hac = (q1 - mu * q0) / sd
        hm = np.array([[haa, hac], [hac, q0]])
        return add_slope_ridge(f, g, hm, lam, a), g, hm

    theta, _ = newton_minimize(evaluate)
    a, c = theta
    # truncation bound of the gradient (see docstring): per bin, |remainder of sigmoid at order k| <=
    # K_k max_bin(s t) e**k / k!, with max over the bin of s t <= (s t)(centre) exp(e) (|d ln(s t)/d eta| <= 1)
    e = abs(a / sd) * h / 2
    alpha, beta = a / sd, c + plo - a * mu / sd
    k0, k1 = _N_MOMENTS, _N_MOMENTS - 1  # remainder orders of the sums of r and of r z
    err_r0 = err_r1 = 0.0
    for cls in ("n", "t"):
        eta = alpha * centre[cls] + beta
        st = expit(eta) * expit(-eta) * math.exp(e)
        count = moments[cls][0]
        err_r0 += float(np.dot(st, count)) * _sigmoid_ratio_sup(k0) * e**k0 / fact[k0]
        err_r1 += float(np.dot(st, count * (np.abs(centre[cls]) + h / 2))) * _sigmoid_ratio_sup(k1) * e**k1 / fact[k1]
    err_g = np.array([(err_r1 + abs(mu) * err_r0) / sd, err_r0]) / n
    _, _, hm = evaluate(theta)
    try:
        bound = float(np.linalg.norm(np.linalg.inv(hm), 2) * np.linalg.norm(err_g))
    except np.linalg.LinAlgError:
        bound = math.inf
    if not (bound <= _BINNED_TOL * abs(a)):
        w, b, reg = exact_fit(theta)
        return w, b, reg, True
    return a / sd, c - a * mu / sd, lam is not None, False
