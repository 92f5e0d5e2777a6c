"""Named LLR estimators: one registry for the calibration layer and everything above it.

:mod:`vpeval.calibration.crossval` (cross-fitted LLRs by estimator name) and :mod:`vpeval.disclosure`
(worst-case disclosure per estimator) both resolve names here, so neither imports the other.
"""

from __future__ import annotations

from ..errors import VpevalError
from .base import ScoreCalibrator
from .gaussian import GaussianCalibrator
from .logistic import LogisticCalibrator
from .pav import PAVCalibrator
from .pav_succession import PAVSuccessionCalibrator
from .student_t import StudentTCalibrator

__all__ = ["ESTIMATORS", "DEFAULT_ESTIMATORS", "make_calibrator"]

#: Named LLR estimators: name -> factory of an unfitted calibrator.
ESTIMATORS = {
    "pav": lambda: PAVCalibrator(laplace=False),
    "pav_laplace": lambda: PAVCalibrator(laplace=True),
    "pav_succession": PAVSuccessionCalibrator,
    "logistic": LogisticCalibrator,
    "gaussian": lambda: GaussianCalibrator(shared_variance=False),
    "gaussian_shared": lambda: GaussianCalibrator(shared_variance=True),
    "student_t": StudentTCalibrator,
}

#: The estimators a worst-case disclosure analysis runs unless told otherwise.
DEFAULT_ESTIMATORS = ("pav", "pav_laplace", "logistic", "gaussian", "student_t")


def make_calibrator(name: str) -> ScoreCalibrator:
    """A fresh, unfitted calibrator for an estimator name of :data:`ESTIMATORS`.

    Raises
    ------
    VpevalError
        Unknown name (the message lists the known ones).
    """
    try:
        return ESTIMATORS[name]()
    except KeyError:
        raise VpevalError(f"unknown LLR estimator {name!r}; known: {', '.join(ESTIMATORS)}") from None
