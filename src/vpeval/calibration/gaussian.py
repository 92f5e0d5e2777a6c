"""Gaussian score calibration: one normal density per class, LLR in closed form.

Worst-case paper (section on LLR estimators): fitting a normal to the target and to the non-target scores and
taking the log-density difference is the classical parametric alternative to PAV.  It extrapolates: the LLR
is quadratic in the score (separate variances) or affine (shared variance), so eps_max over a sample can be
large where PAV, flat beyond the extreme scores, is bounded.  On the worst-case paper's counterexample
(equal means, different variances) this is the behaviour of the true LLR.
"""

from __future__ import annotations

import numpy as np

from .._checks import as_scores
from ..blocks import sorted_copy
from ..errors import InvalidScoresError
from .base import ScoreCalibrator

__all__ = ["GaussianCalibrator"]


def _pow2_exponent(*arrays) -> int:
    """The exponent ``e`` such that ``ldexp(x, -e)`` brings the largest magnitude of ``arrays`` into [0.5, 1).

    The LLR of a location-scale density fit is invariant under a common positive scale of training and test
    scores; dividing by an exact power of two first keeps means, squares and variances inside float64 for
    scores anywhere in 1e-300..1e300 (0 when every score is 0)."""
    m = max(float(np.max(np.abs(a))) for a in arrays)
    return int(np.frexp(m)[1]) if m > 0 else 0


def _training_scores(x, name: str) -> np.ndarray:
    """Finite 1-D float64 training scores of one class, sorted; at least two distinct values.

    Sorting makes every sum below independent of the input order, bit for bit.
    """
    arr = as_scores(x, name, allow_inf=False)
    if arr.size < 2:
        raise InvalidScoresError(f"{name}: at least two scores are needed to fit a density, got {arr.size}")
    arr = sorted_copy(arr)  # np.sort (a copy when already sorted, as after ScoreCalibrator.fit)
    if arr[0] == arr[-1]:
        raise InvalidScoresError(
            f"{name}: all {arr.size} scores equal {float(arr[0])!r}; the fitted variance would be zero and the "
            "LLR infinite everywhere but one point"
        )
    return arr


class GaussianCalibrator(ScoreCalibrator):
    """LLR from one maximum-likelihood normal density per class.

    ``LLR(s) = ln N(s; mu_tar, sigma_tar) - ln N(s; mu_non, sigma_non)`` nats, i.e.::

        ln(sigma_non / sigma_tar) - (s - mu_tar)^2 / (2 sigma_tar^2) + (s - mu_non)^2 / (2 sigma_non^2)

    Parameters
    ----------
    shared_variance : bool
        ``False`` (default): a variance per class (LLR quadratic in ``s``).  ``True``: one pooled
        maximum-likelihood variance ``(sum_tar (s - mu_tar)^2 + sum_non (s - mu_non)^2) / (n_tar + n_non)``
        (LLR affine in ``s``, as in linear discriminant analysis).

    Attributes
    ----------
    mu_tar_, mu_non_ : float
        Class means.
    sigma_tar_, sigma_non_ : float
        Maximum-likelihood standard deviations (divisor ``n``, not ``n - 1``); equal when shared.

    Raises
    ------
    InvalidScoresError
        From ``fit(tar, non)``: a class with fewer than two scores, a class whose scores are all equal (zero
        variance), NaN or infinite scores.  From ``transform(scores)``: NaN or infinite scores.
    NotFittedError
        ``transform`` before ``fit``.

    Notes
    -----
    The fit sorts each class first, so the fitted parameters (hence the LLRs) do not depend on the order of
    the trials, bit for bit.  The LLR is finite for every finite score short of float64 overflow of the
    quadratic term (``|s|`` beyond about ``1e154`` times the scale); there it is ``+-inf`` with the sign of
    the dominant term, never NaN.

    Examples
    --------
    >>> cal = GaussianCalibrator().fit([1.0, 3.0], [-1.0, 1.0])
    >>> cal.mu_tar_, cal.sigma_tar_, cal.mu_non_, cal.sigma_non_
    (2.0, 1.0, 0.0, 1.0)
    >>> cal.transform([0.0, 1.0, 2.0])   # equal variances: LLR = 2 s - 2
    array([-2.,  0.,  2.])
    """

    def __init__(self, shared_variance: bool = False):
        self.shared_variance = shared_variance

    @property
    def name(self) -> str:
        return "gaussian_shared" if self.shared_variance else "gaussian"

    def _fit(self, tar, non) -> None:
        tar = _training_scores(tar, "tar")
        non = _training_scores(non, "non")
        # fitted on scores scaled by an exact power of two (see _pow2_exponent); attributes in score units
        self._e = e = _pow2_exponent(tar, non)
        tar, non = np.ldexp(tar, -e), np.ldexp(non, -e)
        mu_t = float(np.sum(tar) / tar.size)
        mu_n = float(np.sum(non) / non.size)
        # the squared deviations of sorted scores fall, then rise: the stable sort (a merge sort that finds
        # ascending and descending runs) orders them in one merge, several times faster than the default sort
        # on millions of scores (benchmarks/report_parts.py); the sorted values, hence the sums, are the same
        ss_t = float(np.sum(np.sort((tar - mu_t) ** 2, kind="stable")))
        ss_n = float(np.sum(np.sort((non - mu_n) ** 2, kind="stable")))
        if self.shared_variance:
            sd = np.sqrt((ss_t + ss_n) / (tar.size + non.size))
            sd_t = sd_n = float(sd)
        else:
            sd_t = float(np.sqrt(ss_t / tar.size))
            sd_n = float(np.sqrt(ss_n / non.size))
        if not (sd_t > 0 and sd_n > 0 and np.isfinite(sd_t) and np.isfinite(sd_n)):
            raise InvalidScoresError(
                f"the fitted standard deviations ({sd_t!r}, {sd_n!r}) are not positive and finite; "
                "the scores are too close together or too large for float64"
            )
        self._scaled = (mu_t, mu_n, sd_t, sd_n)
        self.mu_tar_, self.mu_non_, self.sigma_tar_, self.sigma_non_ = (float(np.ldexp(v, e)) for v in self._scaled)

    def _transform(self, scores) -> np.ndarray:
        s = as_scores(scores, "scores", allow_inf=False)
        mu_t, mu_n, sd_t, sd_n = self._scaled
        with np.errstate(over="ignore", invalid="ignore"):
            s = np.ldexp(s, -self._e)
            zt = (s - mu_t) / sd_t
            zn = (s - mu_n) / sd_n
            llr = np.log(sd_n / sd_t) - 0.5 * zt * zt + 0.5 * zn * zn
            bad = ~np.isfinite(llr)
            if bad.any():
                # |s| so large that a squared z overflowed: the polynomial form c0 + s (c1 + c2 s) keeps the
                # sign of the dominant term instead of producing inf - inf = NaN
                vt, vn = sd_t**2, sd_n**2
                c2 = 0.5 / vn - 0.5 / vt
                c1 = mu_t / vt - mu_n / vn
                c0 = np.log(sd_n / sd_t) - 0.5 * mu_t**2 / vt + 0.5 * mu_n**2 / vn
                sb = s[bad]
                llr[bad] = c0 + sb * (c1 + c2 * sb)
        return llr
