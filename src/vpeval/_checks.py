"""Validation of arrays handed to metric functions (internal)."""

from __future__ import annotations

import numpy as np

from .errors import InvalidScoresError


def as_scores(x, name: str, *, allow_inf: bool = True) -> np.ndarray:
    """Return ``x`` as a 1-D float64 array; raise on empty, NaN or wrong shape.

    ``name`` is used in the error message (e.g. ``"tar"``).
    """
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidScoresError(f"{name}: expected an array of numbers ({exc})") from None
    if arr.ndim != 1:
        raise InvalidScoresError(f"{name}: expected a 1-D array, got shape {arr.shape}")
    if arr.size == 0:
        raise InvalidScoresError(f"{name}: is empty; at least one score is needed")
    bad = np.isnan(arr) if allow_inf else ~np.isfinite(arr)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        what = "NaN" if allow_inf else "non-finite values"
        raise InvalidScoresError(
            f"{name}: contains {what} ({int(bad.sum())} of {arr.size}; first at index {i})"
        )
    return arr


def as_tar_non(tar, non, *, allow_inf: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Validate a (target, non-target) pair of score arrays."""
    return as_scores(tar, "tar", allow_inf=allow_inf), as_scores(non, "non", allow_inf=allow_inf)
