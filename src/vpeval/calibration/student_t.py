"""Student-t score calibration: one maximum-likelihood Student-t density per class.

Worst-case paper (LLR estimators): heavier tails than the normal make the fitted LLR less explosive at
extreme scores when the scores have outliers; for normal data the fitted degrees of freedom grow and the
estimate approaches :class:`~vpeval.calibration.gaussian.GaussianCalibrator` (the Student-t density tends to
the normal as ``df -> inf``).
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import stats

from .._checks import as_scores
from ..errors import InvalidScoresError
from .base import ScoreCalibrator
from .gaussian import _training_scores

__all__ = ["StudentTCalibrator"]


def _fit_t(x: np.ndarray, df, name: str):
    """ML Student-t fit of sorted scores ``x``: returns ``(df, loc, scale)``.

    The scores are standardised first (affine equivariance of maximum likelihood: the fit of
    ``(x - m) / sd`` mapped back is the fit of ``x``), which keeps scipy's optimiser in a well-scaled region
    whatever the score units.
    """
    m = float(np.sum(x) / x.size)
    sd = float(np.sqrt(np.sum(np.sort((x - m) ** 2)) / x.size))
    z = (x - m) / sd
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if df is None:
            d, loc, scale = stats.t.fit(z)
        else:
            d, loc, scale = stats.t.fit(z, fix_df=df)
    d, loc, scale = float(d), m + sd * float(loc), sd * float(scale)
    if not (np.isfinite(d) and d > 0 and np.isfinite(loc) and np.isfinite(scale) and scale > 0):
        raise InvalidScoresError(
            f"{name}: the Student-t maximum-likelihood fit failed (df={d!r}, loc={loc!r}, scale={scale!r})"
        )
    return d, loc, scale


class StudentTCalibrator(ScoreCalibrator):
    """LLR from one maximum-likelihood Student-t density per class (``scipy.stats.t.fit``).

    ``LLR(s) = ln t(s; df_tar, loc_tar, scale_tar) - ln t(s; df_non, loc_non, scale_non)`` nats.

    Parameters
    ----------
    df : float or None
        ``None`` (default): degrees of freedom fitted per class together with location and scale.  A
        positive number fixes them (both classes); ``df = inf`` is not allowed, use
        :class:`~vpeval.calibration.gaussian.GaussianCalibrator`.

    Attributes
    ----------
    df_tar_, loc_tar_, scale_tar_ : float
    df_non_, loc_non_, scale_non_ : float
        Fitted parameters of the two classes.

    Raises
    ------
    InvalidScoresError
        From ``fit(tar, non)``: a class with fewer than two scores or with all scores equal, NaN or infinite
        scores, or an optimiser result that is not finite.  From ``transform(scores)``: NaN or infinite
        scores.
    NotFittedError
        ``transform`` before ``fit``.

    Notes
    -----
    Each class is sorted and standardised before fitting, so the result does not depend on trial order or
    on the scale of the scores.  With very few scores (two or three) the likelihood is maximised at a huge
    ``df``: the fit is then a normal in all but name.  The LLR is finite for every finite score; it grows
    like ``(df_non - df_tar) ln|s|`` in the tails when the fitted ``df`` differ, quadratically only in the
    normal limit.  Runtime is dominated by scipy's Nelder-Mead optimiser (a few hundred log-likelihood
    evaluations per class).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> cal = StudentTCalibrator().fit(rng.standard_t(3, 3000) + 2, rng.standard_t(3, 3000))
    >>> 2 < cal.df_tar_ < 5 and 2 < cal.df_non_ < 5
    True
    """

    name = "student_t"

    def __init__(self, df: float | None = None):
        self.df = df

    def _fit(self, tar, non) -> None:
        df = self.df
        if df is not None:
            df = float(df)
            if not (np.isfinite(df) and df > 0):
                raise InvalidScoresError(f"df must be None or a positive finite number, got {self.df!r}")
        tar = _training_scores(tar, "tar")
        non = _training_scores(non, "non")
        self.df_tar_, self.loc_tar_, self.scale_tar_ = _fit_t(tar, df, "tar")
        self.df_non_, self.loc_non_, self.scale_non_ = _fit_t(non, df, "non")

    def _transform(self, scores) -> np.ndarray:
        s = as_scores(scores, "scores", allow_inf=False)
        return stats.t.logpdf(s, self.df_tar_, self.loc_tar_, self.scale_tar_) - stats.t.logpdf(
            s, self.df_non_, self.loc_non_, self.scale_non_
        )
