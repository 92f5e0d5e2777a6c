"""Affine logistic-regression calibration with the training prior removed (BOSARIS style)."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit

from .._checks import as_real
from ..errors import InvalidScoresError, SeparableScoresError
from .base import ScoreCalibrator

__all__ = ["LogisticCalibrator"]


def add_slope_ridge(f: float, g: np.ndarray, h: np.ndarray, lam, a: float) -> float:
    """Add the ridge ``lam * a**2 / 2`` on the slope ``a`` (``theta[0]``) to an objective ``f`` with gradient
    ``g`` and Hessian ``h`` (both changed in place); returns the new ``f``. ``lam`` None: no penalty."""
    if lam is not None:
        f += 0.5 * lam * a * a
        g[0] += lam * a
        h[0, 0] += lam
    return f


def newton_minimize(evaluate, theta0=None, max_iter: int = 100):
    """Minimise a smooth convex function by Newton's method with backtracking.

    ``evaluate(theta) -> (f, gradient, Hessian)``; ``theta0`` (default ``zeros(2)``) sets the number of
    parameters. Iterates until the gradient vanishes to rounding (steps
    that change ``f`` only below its rounding are still taken while they shrink the gradient). Returns
    ``(theta, converged)`` with ``converged`` = max-abs gradient below 1e-8.
    """
    theta = np.zeros(2) if theta0 is None else np.asarray(theta0, dtype=float)
    f, g, h = evaluate(theta)
    for _ in range(max_iter):
        if np.max(np.abs(g)) < 1e-15:
            break
        step = np.linalg.solve(h + 1e-14 * np.eye(theta.size), g)
        t = 1.0
        while True:
            cand = theta - t * step
            fc, gc, hc = evaluate(cand)
            sufficient = fc <= f - 1e-4 * t * float(g @ step)
            rounding = fc <= f + 1e-14 * max(1.0, abs(f)) and np.max(np.abs(gc)) < np.max(np.abs(g))
            if sufficient or rounding or t < 1e-10:
                break
            t /= 2
        if not (sufficient or rounding):
            break
        theta, f, g, h = cand, fc, gc, hc
    return theta, bool(np.max(np.abs(g)) < 1e-8)


#: From this many training scores on, the fit starts at the fit of a sample (see LogisticCalibrator._fit).
_WARM_START_TRIALS = 1 << 20
_WARM_START_SAMPLE = 1 << 16


def _objective(zt: np.ndarray, zn: np.ndarray, p: float, plo: float, lam):
    """``evaluate(theta) -> (f, gradient, Hessian)`` of the prior-weighted logistic loss of standardised target
    scores ``zt`` and non-target scores ``zn`` (weights ``p / n_tar`` and ``(1 - p) / n_non``), with the slope
    ridge ``lam`` (None: none)."""
    wt, wn = p / zt.size, (1.0 - p) / zn.size
    # four work arrays reused by every evaluation (in place: the same operations, so the same values; on
    # millions of scores allocating the temporaries anew costs more than the arithmetic)
    bufs = [np.empty(max(zt.size, zn.size)) for _ in range(4)]

    def evaluate(theta):
        a, b = theta
        f, g, h = 0.0, np.zeros(2), np.zeros((2, 2))
        for z, w, sign in ((zt, wt, -1.0), (zn, wn, 1.0)):
            eta, neg, e1, e2 = (x[:z.size] for x in bufs)
            np.multiply(z, a, out=eta)
            eta += b
            eta += plo  # eta = a z + b + plo
            np.negative(eta, out=neg)
            f += w * float(np.logaddexp(0.0, neg if sign < 0 else eta, out=e1).sum())
            expit(neg, out=e2)  # expit(-eta)
            expit(eta, out=e1)  # expit(eta)
            r = np.multiply(e2 if sign < 0 else e1, w * sign, out=eta)  # w sign expit(sign eta)
            r_sum = float(r.sum())
            rz_sum = float(np.multiply(r, z, out=eta).sum())
            q = np.multiply(e1, w, out=neg)
            np.multiply(q, e2, out=q)  # w expit(eta) expit(-eta)
            q_sum = float(q.sum())
            qz = np.multiply(q, z, out=e1)
            qz_sum = float(qz.sum())
            qzz_sum = float(np.multiply(qz, z, out=e2).sum())
            g += (rz_sum, r_sum)
            h += ((qzz_sum, qz_sum), (qz_sum, q_sum))
        return add_slope_ridge(f, g, h, lam, a), g, h

    return evaluate


class LogisticCalibrator(ScoreCalibrator):
    """LLR = ``slope * score + intercept`` (nats) by maximum likelihood logistic regression.

    Parameters
    ----------
    p_target : float in (0, 1), optional
        Prior weighting as in BOSARIS ``train_binary_classifier``: the objective is
        ``p/Nt sum softplus(-(a s + b + plo)) + (1-p)/Nn sum softplus(a s + b + plo)`` with
        ``plo = logit(p)``. ``None`` (default) uses the training proportion ``Nt/(Nt+Nn)``, which is plain
        unweighted maximum likelihood. In both cases the prior log-odds are removed, so the output are LLRs,
        not posterior log-odds.
    regularization : float, optional
        ``None`` (default): unpenalised maximum likelihood; perfectly or quasi-perfectly separable training
        scores raise :class:`~vpeval.errors.SeparableScoresError`, because the slope then runs to infinity.
        A float ``lam > 0`` adds the named "ridge on the standardised slope" penalty
        ``lam * (a * sd)^2 / 2`` (nats per unit weight, ``sd`` the standard deviation of all training scores),
        which makes the fit finite on separable data; only use it when asked for, and report it.

    Attributes
    ----------
    slope_, intercept_ : float
        Fitted LLR map.
    converged_ : bool
        True when Newton's method reached a gradient (max-abs) below 1e-8.

    Raises
    ------
    SeparableScoresError
        ``regularization is None`` and ``min(tar) >= max(non)`` or ``max(tar) <= min(non)``.
    InvalidScoresError
        Non-finite training scores, fewer than one score per class, bad ``p_target``.

    Notes
    -----
    Brummer & du Preez (2006), Sec. 6 and Brummer & de Villiers, BOSARIS toolkit (2011), linear calibration.
    The optimum is invariant to trial order. Transforming new scores is an affine map; +-inf scores give
    +-inf LLRs (for a positive slope). Newton's method (exact Hessian, backtracking) runs until the gradient
    vanishes to rounding; from 2**20 training scores on it starts at the fit of an evenly spaced sample of
    2**16 scores of each sorted class (3 or 4 passes over all the scores instead of about 8; the same optimum).

    Examples
    --------
    >>> cal = LogisticCalibrator().fit([0.0, 1.0, 2.0, 3.0], [-1.0, 0.5, 1.5])
    >>> round(cal.slope_, 6) > 0
    True
    """

    name = "logistic"

    def __init__(self, p_target: float | None = None, regularization: float | None = None):
        self.p_target = p_target
        self.regularization = regularization

    def _fit(self, tar, non):
        if not (np.isfinite(tar).all() and np.isfinite(non).all()):
            raise InvalidScoresError("logistic calibration needs finite training scores (inf found)")
        lam = self.regularization
        if lam is not None:
            lam = as_real(lam, "regularization", low=0.0)
        if tar.min() == tar.max() == non.min() == non.max():
            raise InvalidScoresError(
                "all training scores are equal: the slope is not identifiable (the scores carry no information)")
        if lam is None and (tar.min() >= non.max() or tar.max() <= non.min()):
            raise SeparableScoresError(
                "target and non-target training scores are perfectly separable "
                f"(targets in [{tar.min():.6g}, {tar.max():.6g}], non-targets in [{non.min():.6g}, "
                f"{non.max():.6g}]): the maximum-likelihood slope is infinite. Use more overlapping training "
                "data, another estimator (PAV with Laplace smoothing), or ask for LogisticCalibrator("
                "regularization=...) explicitly."
            )
        p = tar.size / (tar.size + non.size)
        if self.p_target is not None:
            p = as_real(self.p_target, "p_target", low=0.0, high=1.0)
        plo = math.log(p) - math.log1p(-p)
        # Standardise for conditioning; map back at the end.
        allv = np.concatenate([tar, non])
        # Moments on pre-scaled scores, so that |scores| near the float64 limits do not overflow.
        scale = float(np.abs(allv).max())
        mu, sd = float((allv / scale).mean()) * scale, float((allv / scale).std()) * scale
        zt, zn = (tar - mu) / sd, (non - mu) / sd
        theta0 = None
        if zt.size + zn.size >= _WARM_START_TRIALS:
            # Newton's method from 0 takes 8 passes over millions of scores; started at the fit of an evenly
            # spaced sample of each sorted class (about 65,536 scores of each; the loss weighs each class by its
            # prior, so the two may be thinned differently), the full fit needs 3 or 4
            kt, kn = (max(1, z.size // _WARM_START_SAMPLE) for z in (zt, zn))
            st, sn = zt[kt // 2::kt], zn[kn // 2::kn]
            if not (st.min() >= sn.max() or st.max() <= sn.min()):  # a separable sample would run off
                theta_s, ok = newton_minimize(_objective(st, sn, p, plo, lam))
                theta0 = theta_s if ok else None
        evaluate = _objective(zt, zn, p, plo, lam)
        theta, converged = newton_minimize(evaluate, theta0)
        a, b = (float(v) for v in theta)
        self.converged_ = converged
        self.slope_ = a / sd
        self.intercept_ = b - a * mu / sd
        self.p_effective_ = p

    def _transform(self, scores):
        with np.errstate(invalid="ignore"):
            return self.slope_ * scores + self.intercept_
