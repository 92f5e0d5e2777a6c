"""Summaries of per-probe LIDs: ALID, PDR, NDR, LID+, LID-, LID_max (:func:`lid_summary`) and the LID
complementary CDF (:func:`lid_ccdf`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...errors import InvalidScoresError

__all__ = ["LIDSummary", "lid_summary", "lid_ccdf"]


@dataclass(frozen=True)
class LIDSummary:
    """Summary of per-probe LIDs (bits).

    Attributes
    ----------
    alid : float
        Average LID (bits).
    pdr : float
        Positive disclosure rate: share of probes with LID > 0.
    ndr : float
        Non-positive disclosure rate: share with LID <= 0 (``pdr + ndr = 1``).
    lid_plus : float or None
        Mean LID over probes with LID > 0 (bits); None when there is none (PDR = 0).
    lid_minus : float or None
        Mean LID over probes with LID <= 0 (bits); None when there is none (NDR = 0).
    lid_max : float
        Largest LID (bits); at most log2 N.
    n : int
        Number of probes.
    N : int or None
        Number of enrolled speakers when known (then ``lid_max <= log2 N``).
    """

    alid: float
    pdr: float
    ndr: float
    lid_plus: float | None
    lid_minus: float | None
    lid_max: float
    n: int
    N: int | None = None

    def to_dict(self) -> dict:
        return {
            "alid_bits": self.alid,
            "pdr": self.pdr,
            "ndr": self.ndr,
            "lid_plus_bits": self.lid_plus,
            "lid_minus_bits": self.lid_minus,
            "lid_max_bits": self.lid_max,
            "n_probes": self.n,
            "n_speakers": self.N,
            "log2_N": None if self.N is None else math.log2(self.N),
        }


def lid_summary(lid_values, n_speakers: int | None = None) -> LIDSummary:
    """ALID, PDR, NDR, LID+, LID-, LID_max of per-probe LIDs (Sterns et al.), all LIDs in bits.

    ``ALID = PDR * LID+ + NDR * LID-`` holds (an absent group contributes 0 and reports None).

    Parameters
    ----------
    lid_values : array_like of shape (n,)
        Per-probe LIDs in bits, e.g. from :func:`lid`. ``-inf`` is allowed (a probe whose true speaker got
        posterior 0; ALID and LID- are then ``-inf``).
    n_speakers : int, optional
        N; when given, LIDs above ``log2 N`` (beyond 1e-9 bits) are rejected.

    Returns
    -------
    LIDSummary

    Raises
    ------
    InvalidScoresError
        Empty, not 1-D, NaN or ``+inf``, or above ``log2 N``.

    Examples
    --------
    >>> s = lid_summary([1.2, -0.3, 0.5, -0.1, 0.0])
    >>> round(s.alid, 6), s.pdr, s.ndr, round(s.lid_plus, 6), round(s.lid_minus, 6), s.lid_max
    (0.26, 0.4, 0.6, 0.85, -0.133333, 1.2)
    """
    v = np.asarray(lid_values, dtype=np.float64)
    if v.ndim != 1 or v.size == 0:
        raise InvalidScoresError(f"lid_values: expected a non-empty 1-D array, got shape {v.shape}")
    bad = np.isnan(v) | (v == np.inf)
    if bad.any():
        raise InvalidScoresError(
            f"lid_values: {int(bad.sum())} value(s) are NaN or +inf (first at index {int(np.flatnonzero(bad)[0])})"
        )
    if n_speakers is not None:
        if int(n_speakers) < 1:
            raise InvalidScoresError(f"n_speakers must be >= 1, got {n_speakers}")
        top = math.log2(int(n_speakers))
        if (v > top + 1e-9).any():
            raise InvalidScoresError(f"lid_values: LID above log2 N = {top:.6f} bits is impossible")
    pos = v > 0
    n = v.size
    n_pos = int(pos.sum())
    return LIDSummary(
        alid=float(v.mean()),
        pdr=n_pos / n,
        ndr=(n - n_pos) / n,
        lid_plus=float(v[pos].mean()) if n_pos else None,
        lid_minus=float(v[~pos].mean()) if n_pos < n else None,
        lid_max=float(v.max()),
        n=n,
        N=None if n_speakers is None else int(n_speakers),
    )


def lid_ccdf(lid_values) -> tuple[np.ndarray, np.ndarray]:
    """Complementary CDF of LID: for each distinct value x, the percentage of probes with LID >= x.

    Returns
    -------
    x : ndarray, increasing distinct LIDs (bits)
    percent : ndarray, same length, 100 * #(LID >= x) / n (starts at 100, non-increasing)

    Examples
    --------
    >>> x, p = lid_ccdf([0.5, -1.0, 0.5, 2.0])
    >>> x.tolist(), p.tolist()
    ([-1.0, 0.5, 2.0], [100.0, 75.0, 25.0])
    """
    v = np.asarray(lid_values, dtype=np.float64)
    if v.ndim != 1 or v.size == 0 or np.isnan(v).any():
        raise InvalidScoresError("lid_values: expected a non-empty 1-D array without NaN")
    x, counts = np.unique(v, return_counts=True)
    at_least = np.cumsum(counts[::-1])[::-1]
    return x, 100.0 * at_least / v.size
