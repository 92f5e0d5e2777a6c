"""The interface shared by vpeval's LLR estimators."""

from __future__ import annotations

import numpy as np

from .._checks import as_scores
from ..blocks import sorted_copy
from ..errors import VpevalError

__all__ = ["ScoreCalibrator", "NotFittedError"]


class NotFittedError(VpevalError):
    """``transform`` was called before ``fit``."""


class ScoreCalibrator:
    """Base class: fit on target/non-target scores, map any scores to LLRs in nats.

    Subclasses implement ``_fit(tar, non)`` and ``_transform(scores)``; this class validates input
    (1-D float64, no NaN, non-empty) and fitted state.
    """

    name = "calibrator"

    def fit(self, tar, non):
        """Fit on target scores ``tar`` (n_tar,) and non-target scores ``non`` (n_non,); returns ``self``."""
        # Sorted copies: iterative fits (logistic, Student-t) then see the same floating-point sums whatever the
        # order of the input trials, so the fit is bit-for-bit order invariant.
        tar = sorted_copy(as_scores(tar, "tar"))  # np.sort, skipped for input sorted already
        non = sorted_copy(as_scores(non, "non"))
        self._fit(tar, non)
        self.n_tar_, self.n_non_ = tar.size, non.size
        return self

    def transform(self, scores) -> np.ndarray:
        """LLRs (nats) of ``scores``, shape preserved for 1-D input."""
        if not hasattr(self, "n_tar_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted yet; call fit(tar, non) first")
        return self._transform(as_scores(scores, "scores"))

    def fit_transform(self, tar, non) -> tuple[np.ndarray, np.ndarray]:
        """Fit on ``tar``/``non`` and return their own LLRs ``(tar_llr, non_llr)`` in nats."""
        self.fit(tar, non)
        return self.transform(tar), self.transform(non)

    def _fit(self, tar: np.ndarray, non: np.ndarray) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _transform(self, scores: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError
