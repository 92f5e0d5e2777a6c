"""Validation of arrays and parameters handed to metric functions (internal)."""

from __future__ import annotations

import math

import numpy as np

from .errors import InvalidScoresError


def as_scores(x, name: str, *, allow_inf: bool = True) -> np.ndarray:
    """Return ``x`` as a 1-D float64 array; raise on empty, NaN, non-numeric or wrong shape.

    Only real numbers are accepted (float, int or unsigned dtypes): booleans, strings, complex numbers,
    objects and masked arrays are errors rather than silent conversions. ``name`` is used in the message.
    """
    if isinstance(x, np.ma.MaskedArray):
        raise InvalidScoresError(f"{name}: masked arrays are not accepted; drop the masked entries explicitly")
    try:
        raw = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise InvalidScoresError(f"{name}: expected an array of numbers ({exc})") from None
    if raw.dtype.kind not in "fiu":
        raise InvalidScoresError(f"{name}: expected real numbers, got an array of dtype {raw.dtype}")
    if raw.dtype.kind in "iu" and raw.size:
        lim = 2 ** 53  # beyond this float64 rounds integers, and ties or orders of scores could change
        hi, lo = raw.max(), raw.min()
        if hi > lim or lo < -lim:
            bad = hi if hi > lim else lo
            raise InvalidScoresError(f"{name}: integer {bad} is beyond 2**53, which float64 cannot hold exactly; "
                                     "rescale the scores (e.g. subtract their median) first")
    elif raw.dtype.kind == "f" and raw.dtype.itemsize > 8 and raw.size:
        conv = raw.astype(np.float64)
        lost = np.isfinite(raw) & (conv.astype(raw.dtype) != raw)
        if lost.any():
            raise InvalidScoresError(f"{name}: value {raw[np.flatnonzero(lost)[0]]!r} is not exactly a float64 "
                                     f"(dtype {raw.dtype}); convert the scores to float64 explicitly")
    arr = raw.astype(np.float64, copy=False)
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


def one_of(value, name: str, choices: tuple, error: type[Exception] = InvalidScoresError):
    """Return ``value`` if it is one of ``choices``, else raise ``error``: "{name} must be one of {choices}, got
    {value!r}"."""
    if value not in choices:
        raise error(f"{name} must be one of {choices}, got {value!r}")
    return value


def as_tar_non(tar, non, *, allow_inf: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Validate a (target, non-target) pair of score arrays."""
    return as_scores(tar, "tar", allow_inf=allow_inf), as_scores(non, "non", allow_inf=allow_inf)


def as_real(v, name: str, *, low: float | None = None, high: float | None = None, open_low=True,
            open_high=True, finite: bool = True) -> float:
    """A real-number parameter: no bools or strings, finite unless told, inside the given bounds."""
    shown = shown_value(v)
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise InvalidScoresError(f"{name} must be a real number, got {shown}")
    f = float(v)
    if math.isnan(f) or (finite and math.isinf(f)):
        raise InvalidScoresError(f"{name} must be a finite number, got {shown}")
    if low is not None and (f < low or (open_low and f == low)):
        raise InvalidScoresError(f"{name} must be {'>' if open_low else '>='} {low:g}, got {shown}")
    if high is not None and (f > high or (open_high and f == high)):
        raise InvalidScoresError(f"{name} must be {'<' if open_high else '<='} {high:g}, got {shown}")
    return f


def shown_value(v) -> str:
    """``repr`` of a value for a message, NumPy scalars as the Python number (``nan``, not ``np.float64(nan)``)."""
    return repr(v.item()) if isinstance(v, np.generic) else repr(v)
