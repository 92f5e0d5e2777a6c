"""LLR estimators with one interface: ``fit(tar, non)`` then ``transform(scores)`` -> LLRs in nats."""

from .base import NotFittedError, ScoreCalibrator
from .logistic import LogisticCalibrator
from .pav import PAVCalibrator, pav_llr

__all__ = ["ScoreCalibrator", "NotFittedError", "PAVCalibrator", "LogisticCalibrator", "pav_llr"]
