"""Student-t score calibration: one maximum-likelihood Student-t density per class.

Worst-case paper (LLR estimators): heavier tails than the normal make the fitted LLR less explosive at
extreme scores when the scores have outliers; for normal data the fitted degrees of freedom grow and the
estimate approaches :class:`~vpeval.calibration.gaussian.GaussianCalibrator` (the Student-t density tends to
the normal as ``df -> inf``).
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import optimize, special, stats

from .._checks import as_scores
from ..errors import InvalidScoresError
from .base import ScoreCalibrator
from .gaussian import _pow2_exponent, _training_scores

__all__ = ["StudentTCalibrator"]


_LOG_DF_BOUNDS = (np.log(0.05), np.log(1e8))

#: The fitted peak counts as collapsed onto a score when its half width at half maximum is below this share
#: of the distance from that score to the nearest other score (see :func:`_collapsed_onto`).
_COLLAPSE_GAP = 0.5


def _half_width(df: float, scale: float) -> float:
    """Half width at half maximum of a Student-t density: ``scale * sqrt(df (2**(2/(df+1)) - 1))``.

    Solves ``(1 + r**2/df)**(-(df+1)/2) = 1/2`` for ``r``; tends to ``scale sqrt(2 ln 2)`` (the normal's)
    as ``df -> inf`` and to ``scale sqrt(3 df)`` as ``df -> 0``.  Same units as ``scale``.
    """
    return float(scale * np.sqrt(df * np.expm1(2.0 * np.log(2.0) / (df + 1.0))))


def _collapsed_onto(z: np.ndarray, df: float, loc: float, scale: float):
    """The score the fit ``(df, loc, scale)`` of sorted scores ``z`` collapses onto, or None.

    A Student-t fit with ``df`` held fixed has a likelihood that grows without bound as ``scale -> 0`` with
    ``loc`` on a score repeated ``k`` times out of ``n`` iff ``k / n > df / (df + 1)``, i.e.
    ``df < k / (n - k)`` (Kent & Tyler 1991, "Redescending M-estimates of multivariate location and
    scatter", Ann. Statist. 19(4), condition of Theorem 1 with dimension p = 1): the ``k`` copies contribute
    ``-k ln scale`` to the log-likelihood and every other score, far in the tail, ``df ln scale``.  On that
    degenerate ridge there is no stationary point (the scale score equation ``sum w r**2 = n`` needs
    ``df > k / (n - k)`` when ``k`` residuals are zero), so wherever an optimiser stops is arbitrary and must
    not be accepted.  The fit is declared collapsed onto the score ``x0`` nearest ``loc`` when

    1. ``df < k / (n - k)`` (the fitted degrees of freedom are below the unboundedness bound for ``x0``), and
    2. the fitted peak is narrow relative to the spread of the data around ``x0``: its half-maximum
       interval ``loc +- hw`` lies within half a gap of ``x0``, ``|loc - x0| + hw < _COLLAPSE_GAP * gap``,
       with ``hw`` the peak's half width at half maximum (:func:`_half_width`, which involves both
       ``scale`` and ``df``) and ``gap`` the distance from ``x0`` to the nearest other score (all in the same
       units), so the peak holds no score but copies of ``x0``.

    A genuine local maximum has a peak covering many scores, so its half width is of the order of the
    data's spread, not a fraction of one gap; on the ridge the half width is orders of magnitude below the
    gap wherever the optimiser stopped, so the decision does not hinge on optimiser tolerances.
    """
    vals, first, counts = _distinct_sorted(z)
    if vals.size < 2:
        return None
    i = int(np.argmin(np.abs(vals - loc)))
    k, n = int(counts[i]), z.size
    if not df < k / (n - k):
        return None
    gap = float(np.min(np.abs(np.delete(vals, i) - vals[i])))
    hw = _half_width(df, scale)
    if abs(float(vals[i]) - loc) + hw < _COLLAPSE_GAP * gap:
        return int(first[i]), k
    return None


def _distinct_sorted(z: np.ndarray):
    """``np.unique(z, return_index=True, return_counts=True)`` of an ascending ``z`` in one pass over the runs of
    equal values (np.unique would sort again, by a stable argsort for the indices); an unsorted ``z`` goes to
    np.unique. The same arrays either way."""
    if z.size < 2 or not bool((z[1:] >= z[:-1]).all()):
        return np.unique(z, return_index=True, return_counts=True)
    new = np.empty(z.size, dtype=bool)
    new[0] = True
    np.not_equal(z[1:], z[:-1], out=new[1:])
    first = np.flatnonzero(new)
    return z[first], first, np.diff(first, append=z.size)


def _t_logpdf(x: np.ndarray, df: float, loc: float, scale: float) -> np.ndarray:
    """``scipy.stats.t.logpdf(x, df, loc, scale)`` (natural log) for finite ``x`` and finite ``df > 0``,
    ``scale > 0``: the same operations as SciPy's (its ``t_logpdf``), with the terms that depend on ``df`` alone
    computed once instead of on arrays the size of ``x`` (SciPy broadcasts ``df``; ``benchmarks/report_parts.py``
    times both). The tests compare both bit for bit."""
    z = (x - loc) / scale
    head = np.log(special.poch(0.5 * df, 0.5)) - 0.5 * (np.log(df) + np.log(np.pi))
    return head - (df + 1) / 2 * np.log1p(z * z / df) - np.log(scale)


def _nll_t(u, z, bufs=None):
    """Mean negative log-likelihood of a Student-t and its gradient in ``u = (ln df, loc, ln scale)``.

    ``bufs``: three float64 arrays of ``z``'s shape reused across the optimiser's calls (the same operations in
    place, so the same values; on millions of scores allocating the temporaries anew costs more than the
    arithmetic), or None.
    """
    n = z.size
    v, m, s = np.exp(u[0]), u[1], np.exp(u[2])
    r, r2, t = bufs if bufs is not None else (np.empty_like(z), np.empty_like(z), np.empty_like(z))
    np.subtract(z, m, out=r)
    np.divide(r, s, out=r)
    np.multiply(r, r, out=r2)
    np.divide(r2, v, out=t)
    q_sum = np.log1p(t, out=t).sum()  # sum of q = log1p(r2 / v)
    np.add(v, r2, out=t)
    np.divide(v + 1, t, out=t)  # w = (v + 1) / (v + r2)
    wr_sum = np.multiply(t, r, out=r).sum()
    wr2_sum = np.multiply(t, r2, out=r2).sum()
    ll = n * (special.gammaln((v + 1) / 2) - special.gammaln(v / 2) - 0.5 * np.log(v * np.pi) - u[2])
    ll -= 0.5 * (v + 1) * q_sum
    d_loc = wr_sum / s
    d_log_scale = wr2_sum - n
    d_df = n * (0.5 * special.digamma((v + 1) / 2) - 0.5 * special.digamma(v / 2) - 0.5 / v)
    d_df += -0.5 * q_sum + 0.5 * wr2_sum / v
    return -ll / n, -np.array([v * d_df, d_loc, d_log_scale]) / n


#: The L-BFGS-B fit stops once this many evaluations in a row since its last accepted step found no lower
#: value than that step's, if the step's gradient is below :data:`_STALL_GRADIENT` (see :func:`_fit_t_lbfgs`).
_STALL_EVALUATIONS = 10
_STALL_GRADIENT = 1e-6


class _Stalled(Exception):
    """Raised inside the objective when the optimiser can make no more progress."""


def _fit_t_lbfgs(z, df):
    """ML fit of standardised scores by L-BFGS-B with the analytic gradient; ``df`` fixed if not None.

    Near the optimum the mean log-likelihood of millions of scores is flat to the last bits, and its gradient
    in ``ln df`` (scaled by ``df``) keeps a rounding residue above ``gtol``: L-BFGS-B then runs line searches
    that cannot find a lower value, about 30 evaluations, before it gives up and returns its last accepted
    step. The fit stops at that step as soon as :data:`_STALL_EVALUATIONS` evaluations in a row since it was
    accepted have found no lower value (a line search that succeeds finds a lower value within its first few
    trial steps) and that step's gradient is below :data:`_STALL_GRADIENT` (the mean log-likelihood of the
    standardised scores, per unit of each parameter: flat far beyond any digit the fit reports). L-BFGS-B
    would stop at that step or, rarely, make a last step that changes the fit in about its 9th digit.
    """
    if df is None:
        bounds = [_LOG_DF_BOUNDS, (None, None), (-30.0, 30.0)]
        u0 = np.array([np.log(10.0), float(np.median(z)), 0.0])
    else:
        bounds = [(np.log(df), np.log(df)), (None, None), (-30.0, 30.0)]
        u0 = np.array([np.log(df), float(np.median(z)), 0.0])
    bufs = tuple(np.empty(z.shape) for _ in range(3))
    # the last accepted step (its value and gradient), evaluations since, and the last few evaluations
    step = {"u": u0.copy(), "f": np.inf, "g": np.inf, "since": 0, "seen": []}

    def objective(u):
        f, g = _nll_t(u, z, bufs)
        step["seen"] = [(u.copy(), g)] + step["seen"][:7]
        if step["f"] == np.inf and np.array_equal(u, step["u"]):
            step["f"], step["g"] = f, float(np.abs(g).max())  # the starting point
        elif f < step["f"]:
            step["since"] = 0
        else:
            step["since"] += 1
            if step["since"] >= _STALL_EVALUATIONS and step["g"] < _STALL_GRADIENT:
                raise _Stalled
        return f, g

    def accepted(intermediate_result):
        x = intermediate_result.x
        g = next((g for u, g in step["seen"] if np.array_equal(u, x)), None)
        step.update(u=x.copy(), f=float(intermediate_result.fun), since=0,
                    g=np.inf if g is None else float(np.abs(g).max()))

    try:
        res = optimize.minimize(objective, u0, jac=True, method="L-BFGS-B", bounds=bounds, callback=accepted,
                                options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 1000})
        x = res.x
    except _Stalled:
        x = step["u"]
    return float(np.exp(x[0])), float(x[1]), float(np.exp(x[2]))


def _fit_t(x: np.ndarray, df, name: str, fitter: str, shown=None):
    """ML Student-t fit of sorted scores ``x``: returns ``(df, loc, scale)``.

    The scores are standardised first (affine equivariance of maximum likelihood: the fit of
    ``(x - m) / sd`` mapped back is the fit of ``x``), which keeps the optimiser in a well-scaled region
    whatever the score units.
    """
    shown = x if shown is None else shown  # the scores in the caller's units, for messages
    m = float(np.sum(x) / x.size)
    sd = float(np.sqrt(np.sum(np.sort((x - m) ** 2, kind="stable")) / x.size))  # one merge (see gaussian)
    if not (np.isfinite(sd) and sd > 0):
        raise InvalidScoresError(f"{name}: the spread of the scores (standard deviation {sd!r} after scaling) is "
                                 "not a positive finite float64; the scores are too close together to fit a density")
    z = (x - m) / sd
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if fitter == "lbfgs":
            d, loc, scale = _fit_t_lbfgs(z, df)
        elif df is None:
            d, loc, scale = stats.t.fit(z)
        else:
            d, loc, scale = stats.t.fit(z, fix_df=df)
    hit = _collapsed_onto(z, float(d), float(loc), float(scale)) if np.isfinite([d, loc, scale]).all() else None
    if hit is not None:
        j, k = hit
        raise InvalidScoresError(
            f"{name}: the Student-t likelihood has no maximum: the fit collapses onto repeated scores (scale "
            f"-> 0 with df {float(d):.3g} < k/(n-k) = {k}/{x.size - k}; {k} of {x.size} scores equal "
            f"{float(shown[j])!r}). Use the gaussian or a PAV estimator for such discrete scores."
        )
    d, loc, scale = float(d), m + sd * float(loc), sd * float(scale)
    if not (np.isfinite(d) and d > 0 and np.isfinite(loc) and np.isfinite(scale) and scale > 0):
        raise InvalidScoresError(
            f"{name}: the Student-t maximum-likelihood fit failed (df={d!r}, loc={loc!r}, scale={scale!r})"
        )
    return d, loc, scale


class StudentTCalibrator(ScoreCalibrator):
    """LLR from one maximum-likelihood Student-t density per class.

    ``LLR(s) = ln t(s; df_tar, loc_tar, scale_tar) - ln t(s; df_non, loc_non, scale_non)`` nats.

    Parameters
    ----------
    df : float or None
        ``None`` (default): degrees of freedom fitted per class together with location and scale.  A
        positive number fixes them (both classes); ``df = inf`` is not allowed, use
        :class:`~vpeval.calibration.gaussian.GaussianCalibrator`.
    fitter : {"lbfgs", "scipy"}
        How the likelihood is maximised.  ``"lbfgs"`` (default): L-BFGS-B (``scipy.optimize``) on
        ``(ln df, loc, ln scale)`` with the analytic gradient of the Student-t log-likelihood, ``df`` bounded
        to ``[0.05, 1e8]`` (at ``1e8`` the log-density differs from a normal's by under 3e-5 nats within +-10 scales).
        ``"scipy"``: ``scipy.stats.t.fit`` (Nelder-Mead on the raw parameters).  Both maximise the same
        likelihood; the test suite checks that ``"lbfgs"`` reaches at least the likelihood of
        ``scipy.stats.t.fit``.  ``"lbfgs"`` is about 20 to 100 times faster on large samples and, on
        heavy-tailed data, sometimes finds a higher likelihood where Nelder-Mead stops early.

    Attributes
    ----------
    df_tar_, loc_tar_, scale_tar_ : float
    df_non_, loc_non_, scale_non_ : float
        Fitted parameters of the two classes.

    Raises
    ------
    InvalidScoresError
        From ``fit(tar, non)``: a class with fewer than two scores or with all scores equal, NaN or infinite
        scores, a likelihood without maximum (repeated scores: with a free ``df`` the density can pile up on
        a repeated value; see Notes for the exact criterion), or an optimiser result that is not finite.  From ``transform(scores)``: NaN or infinite scores.
    NotFittedError
        ``transform`` before ``fit``.

    Notes
    -----
    Each class is sorted and standardised before fitting, so the result does not depend on trial order or
    on the scale of the scores.  With very few scores (two or three) the likelihood is maximised at a huge
    ``df``: the fit is then a normal in all but name (``df`` at its upper bound ``1e8`` with
    ``fitter="lbfgs"``).  The LLR is finite for every finite score; it grows
    like ``(df_non - df_tar) ln|s|`` in the tails when the fitted ``df`` differ, quadratically only in the
    normal limit.

    Collapse criterion.  With ``k`` of ``n`` scores equal to one value ``x0``, the Student-t likelihood at
    fixed ``df`` is unbounded (``scale -> 0``, ``loc = x0``) iff ``df < k / (n - k)`` (Kent & Tyler 1991,
    p = 1).  A fit is refused as collapsed when its ``df`` is below that bound for the score ``x0`` nearest
    ``loc`` *and* its peak, the interval ``loc +- hw`` with ``hw = scale * sqrt(df (2**(2/(df+1)) - 1))``
    its half width at half maximum, lies within half the distance from ``x0`` to the nearest other score.  Both quantities are ratios within the data (scale relative to the data's spacing, ``df``
    relative to the multiplicity of ``x0``), so the decision is invariant under affine maps of the scores and
    under duplicating every trial, and it does not depend on where the optimiser stopped on the ridge.
    Runtime: a few dozen log-likelihood evaluations per class with ``"lbfgs"`` (the fit stops where
    L-BFGS-B's line searches stall at a flat optimum, see ``_fit_t_lbfgs``), a few hundred with ``"scipy"``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> cal = StudentTCalibrator().fit(rng.standard_t(3, 3000) + 2, rng.standard_t(3, 3000))
    >>> 2 < cal.df_tar_ < 5 and 2 < cal.df_non_ < 5
    True
    """

    name = "student_t"

    def __init__(self, df: float | None = None, fitter: str = "lbfgs"):
        self.df = df
        self.fitter = fitter

    def _fit(self, tar, non) -> None:
        df = self.df
        if df is not None:
            df = float(df)
            if not (np.isfinite(df) and df > 0):
                raise InvalidScoresError(f"df must be None or a positive finite number, got {self.df!r}")
        if self.fitter not in ("lbfgs", "scipy"):
            raise InvalidScoresError(f"fitter must be 'lbfgs' or 'scipy', got {self.fitter!r}")
        tar = _training_scores(tar, "tar")
        non = _training_scores(non, "non")
        # fitted on scores scaled by an exact power of two, so that no mean or variance under/overflows for
        # scores anywhere in 1e-300..1e300 (the LLR is invariant under a common scale); attributes in score units
        self._e = e = _pow2_exponent(tar, non)
        self._tar_fit = _fit_t(np.ldexp(tar, -e), df, "tar", self.fitter, shown=tar)
        self._non_fit = _fit_t(np.ldexp(non, -e), df, "non", self.fitter, shown=non)
        self.df_tar_, self.loc_tar_, self.scale_tar_ = self._tar_fit[0], *(float(np.ldexp(v, e))
                                                                          for v in self._tar_fit[1:])
        self.df_non_, self.loc_non_, self.scale_non_ = self._non_fit[0], *(float(np.ldexp(v, e))
                                                                          for v in self._non_fit[1:])

    def _transform(self, scores) -> np.ndarray:
        s = np.ldexp(as_scores(scores, "scores", allow_inf=False), -self._e)
        return _t_logpdf(s, *self._tar_fit) - _t_logpdf(s, *self._non_fit)
