"""Kish's design effect of trials that share a speaker, for the privacy profile's bounds
(:mod:`vpeval.metrics.profile`): how many independent trials a class's share beyond a threshold is worth when
trials cluster by speaker (or probe)."""

from __future__ import annotations

import math

import numpy as np

from .._checks import as_real
from ..errors import InvalidScoresError

__all__ = ["design_effect", "DEFF_SHARES", "deff_at", "deff_key", "check_deff"]


#: Shares (of a class's own trials, in its tails) at which :func:`design_effect` estimates the curve.
DEFF_SHARES = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 0.5)


def design_effect(scores, is_target, clusters, quantiles=(0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95,
                                                          0.99, 0.999), *, by_share: bool = False):
    """Kish design effects ``(deff_tar, deff_non)`` of each class's share of trials at or above a threshold.

    Parameters
    ----------
    scores : array-like of shape (n,)
    is_target : array-like of bool, shape (n,)
    clusters : array-like of shape (n,)
        The unit each trial depends through (e.g. its probe's speaker); trials of one cluster are correlated.
    quantiles : sequence of float in (0, 1)
        Thresholds at these quantiles of all scores.

    Returns
    -------
    (deff_tar, deff_non) : floats >= 1, or with ``by_share`` pairs ``(shares, values)``
        Per class, the largest over the thresholds of the cluster-robust variance of the share of its trials at
        or above the threshold, ``G / (G - 1) sum_g (sum_{i in g} (y_i - p))^2 / n^2``, over the binomial
        ``p (1 - p) / n`` (Kish, "Survey Sampling", 1965, Sec. 8.2), and at least 1. A class in fewer than 2
        clusters gets ``n`` (one effective trial). Thresholds where the share is 0 or 1 are skipped.

        With ``by_share``: per class a curve instead, the design effect of its share in each tail at the class's
        own quantiles ``q`` and ``1 - q`` for ``q`` in :data:`DEFF_SHARES` (the larger of the two tails), only
        where at least 5 of its trials are beyond (rarer shares cannot be estimated; the bounds use the rarest
        estimated one there, :func:`profile_bounds`). Regions of the attacker's decisions are mostly rare, and
        the dependence of rare exceedances differs from that of the median: a perfectly separating attacker's
        non-targets, say, share a speaker effect in the middle of their range but none above every target.

    Raises
    ------
    InvalidScoresError
        Mismatched lengths, NaN scores.
    """
    s = np.asarray(scores, dtype=float)
    y = np.asarray(is_target, dtype=bool)
    g = np.asarray(clusters)
    if s.ndim != 1 or y.shape != s.shape or g.shape != s.shape:
        raise InvalidScoresError(f"scores, is_target and clusters must be 1-D of one length, got {s.shape}, "
                                 f"{y.shape}, {g.shape}")
    if np.isnan(s).any():
        raise InvalidScoresError("scores: contains NaN")
    thr = np.quantile(s, quantiles) if s.size else np.array([])
    if by_share:
        return tuple(_deff_curve(s[y == cls], g[y == cls]) for cls in (True, False))
    out = []
    for cls in (True, False):
        sel = y == cls
        n = int(sel.sum())
        _, gi = np.unique(g[sel], return_inverse=True)
        n_g = int(gi.max()) + 1 if n else 0
        if n_g < 2:
            out.append(float(max(n, 1)))
            continue
        sc = s[sel]
        got = [_cluster_deff((sc >= t).astype(float), gi, n_g) for t in thr]
        out.append(float(max([1.0] + [v for v in got if v is not None])))
    return out[0], out[1]


def _cluster_deff(z: np.ndarray, gi: np.ndarray, n_g: int) -> float | None:
    """Kish design effect of the mean of the 0/1 array ``z`` over clusters ``gi`` (None when ``z`` is constant).
    Each cluster's sum of ``z - p`` is its count of ones less ``p`` times its size, from exact integer counts, so
    the value does not depend on the order of the trials (summing ``z - p`` in trial order changed its last digits
    when a Kaldi file's lines were shuffled: a breaker's find)."""
    n = z.size
    ones = np.bincount(gi, weights=z, minlength=n_g)  # whole numbers, exact in float64 in any order
    k = float(ones.sum())
    p = k / n
    if k <= 0.0 or k >= n:
        return None
    sums = ones - p * np.bincount(gi, minlength=n_g)
    return max(1.0, n_g / (n_g - 1) * float(np.dot(sums, sums)) / n ** 2 / (p * (1 - p) / n))


def _deff_curve(sc: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The design-effect curve of one class (:func:`design_effect` with ``by_share``)."""
    n = sc.size
    _, gi = np.unique(g, return_inverse=True)
    n_g = int(gi.max()) + 1 if n else 0
    if n_g < 2:
        return np.array([0.5]), np.array([float(max(n, 1))])
    srt = np.sort(sc)
    shares, values = [], []
    for q in DEFF_SHARES:
        k = int(math.floor(q * n))
        if k < 5:
            continue
        worst = None
        for z in (sc >= srt[n - k], sc <= srt[k - 1]):  # the top and the bottom tail, ties whole
            v = _cluster_deff(z.astype(float), gi, n_g)
            if v is not None:
                worst = v if worst is None else max(worst, v)
        if worst is not None:
            shares.append(q)
            values.append(worst)
    if not shares:
        return np.array([0.5]), np.array([1.0])
    return np.asarray(shares), np.asarray(values)


def deff_at(deff, k, n) -> np.ndarray:
    """The design effect for regions holding ``k`` of ``n`` trials: ``deff`` itself when a number; from a curve
    ``(shares, values)`` (:func:`design_effect` with ``by_share=True``) the largest value at the shares up to twice
    the region's folded share ``min(k, n - k) / n`` (the rarest estimated share at least)."""
    k = np.asarray(k, dtype=float)
    if isinstance(deff, (int, float, np.integer, np.floating)):
        return np.full(k.shape, float(deff))
    shares, values = (np.asarray(x, dtype=float) for x in deff)
    if shares.size == 0:
        return np.ones(k.shape)
    env = np.maximum.accumulate(values)  # shares ascending: the largest value at or below each share
    s = np.maximum(np.minimum(k, n - k) / n * 2.0, shares[0])
    return env[np.searchsorted(shares, s, side="right") - 1]


def deff_key(deff):
    """A hashable key of a checked design effect (a number, or a curve of two arrays)."""
    return deff if np.ndim(deff) == 0 else tuple(np.asarray(x, dtype=float).tobytes() for x in deff)


def check_deff(deff, name: str):
    """A design effect: a number >= 1, or a curve ``(shares, values)`` of equal lengths, shares ascending in
    (0, 0.5], values >= 1."""
    if isinstance(deff, (int, float, np.integer, np.floating, bool, np.bool_)):
        return as_real(deff, name, low=1.0, open_low=False)
    try:
        shares, values = (np.asarray(x, dtype=float) for x in deff)
    except (TypeError, ValueError):
        raise InvalidScoresError(f"{name} must be a number >= 1 or a pair (shares, values), got {deff!r}") from None
    if (shares.shape != values.shape or shares.ndim != 1 or not np.isfinite(values).all() or (values < 1).any()
            or (shares.size and ((shares <= 0).any() or (shares > 0.5).any() or (np.diff(shares) <= 0).any()))):
        raise InvalidScoresError(f"{name}: a curve needs ascending shares in (0, 0.5] and values >= 1 of one length")
    return shares, values
