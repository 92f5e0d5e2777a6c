"""Log-likelihood ratios from the similarity rank of the true speaker.

A probe is compared with ``N`` enrolled speakers and the speakers are ranked by similarity (rank 1 = most
similar).  ``gamma_k`` is the probability that the probe's true speaker lands at rank ``k``.  The worst-case
paper (Eq. 35) turns it into a log-likelihood ratio for the proposition "the speaker at rank ``k`` is the
true speaker" against "it is a non-target speaker"::

    LLR(k) = ln( gamma_k * (N - 1) / (1 - gamma_k) )        [nats]

The numerator ``P(rank k | target) = gamma_k``.  The denominator ``P(rank k | non-target) =
(1 - gamma_k) / (N - 1)``: the ``N`` ranks of one probe form a permutation, so the ``N - 1`` non-target
entries share the remaining mass ``1 - gamma_k`` of rank ``k``.

**Exchangeability assumption.**  That denominator is exact for a non-target entry drawn at random among the
``N - 1`` impostors (whatever the impostors are like), but it is the rank probability of *every particular*
impostor only if the impostors are exchangeable, i.e. no impostor is systematically closer to the probe's
speaker than the others.  When some are (same sex, same accent, a twin), the rank LLR overstates the evidence
against close impostors and understates it against far ones.  ``docs/rank_llr_exchangeability.md`` measures
the drift on a simulation (:func:`vpeval.simulate.exchangeability_drift`).

**Degenerate ranks.**  ``gamma_k = 0`` gives ``-inf`` and ``gamma_k = 1`` gives ``+inf``, explicitly, never
NaN: with a histogram estimate of ``gamma`` an empty rank has a zero count.  Smooth ``gamma`` beforehand (e.g.
:func:`vpeval.metrics.rank_disclosure.smooth_gamma`) if finite values are wanted.
"""

from __future__ import annotations

import numpy as np

from ..errors import VpevalError
from ..ranks import rank_histogram

__all__ = ["rank_llr", "RankCalibrator", "validate_gamma"]

_SUM_TOL = 1e-9


def validate_gamma(gamma, name: str = "gamma") -> np.ndarray:
    """Return ``gamma`` as a float64 probability vector of length ``N >= 2``; raise otherwise.

    Requires a 1-D array of finite, non-negative numbers that sums to 1 within ``1e-9`` (absolute).
    The array is returned as given (not renormalised).
    """
    try:
        g = np.asarray(gamma, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise VpevalError(f"{name}: expected an array of probabilities ({exc})") from None
    if g.ndim != 1:
        raise VpevalError(f"{name}: expected a 1-D array of length N (ranks), got shape {g.shape}")
    if g.size < 2:
        raise VpevalError(f"{name}: at least two ranks (N >= 2) are needed, got {g.size}")
    if not np.all(np.isfinite(g)):
        raise VpevalError(f"{name}: contains non-finite values")
    if np.any(g < 0):
        raise VpevalError(f"{name}: contains negative probabilities (first at rank {int(np.argmax(g < 0)) + 1})")
    total = float(g.sum())
    if abs(total - 1.0) > _SUM_TOL:
        raise VpevalError(f"{name}: probabilities must sum to 1, got {total!r}")
    return g


def rank_llr(gamma) -> np.ndarray:
    """Rank LLR ``ln(gamma_k (N - 1) / (1 - gamma_k))`` of every rank (worst-case paper, Eq. 35), in nats.

    Parameters
    ----------
    gamma : array_like of shape (N,)
        ``gamma[k - 1] = P(true speaker at rank k)``, rank 1 = most similar; ``N >= 2``; non-negative,
        finite, summing to 1 (within 1e-9).

    Returns
    -------
    ndarray of shape (N,), float64
        LLR of rank ``k`` in nats.  ``gamma_k = 0`` -> ``-inf``, ``gamma_k = 1`` -> ``+inf`` (then every
        other rank is ``-inf``); never NaN.  A uniform ``gamma = 1/N`` gives 0 at every rank.

    Raises
    ------
    VpevalError
        If ``gamma`` is not a probability vector of length at least 2.

    Notes
    -----
    Assumes exchangeable non-target speakers (module docstring): the non-target rank probability is
    ``(1 - gamma_k) / (N - 1)``.  eps_max of the rank estimator is ``max_k |LLR(k)|`` over the ranks
    (:func:`rank_eps_max`).

    Examples
    --------
    >>> rank_llr([0.55, 0.25, 0.15, 0.05]).round(6)
    array([ 1.299283,  0.      , -0.635989, -1.845827])
    >>> rank_llr([0.5, 0.5, 0.0])
    array([0.69314718, 0.69314718,       -inf])
    """
    g = validate_gamma(gamma)
    n = g.size
    out = np.empty(n)
    zero = g == 0.0
    one = g >= 1.0
    mid = ~(zero | one)
    out[zero] = -np.inf
    out[one] = np.inf
    gm = g[mid]
    out[mid] = np.log(gm) + np.log(n - 1) - np.log1p(-gm)
    return out


def rank_eps_max(gamma) -> float:
    """``max_k |rank_llr(gamma)_k|`` in nats (``inf`` if some ``gamma_k`` is 0 or 1).

    Examples
    --------
    >>> round(rank_eps_max([0.55, 0.25, 0.15, 0.05]), 6)
    1.845827
    """
    return float(np.max(np.abs(rank_llr(gamma))))


__all__.append("rank_eps_max")


class RankCalibrator:
    """Map similarity ranks to LLRs (nats) through a rank histogram ``gamma`` (worst-case paper, Eq. 35).

    The rank plays the part of the score: :meth:`fit` takes the ranks of the target entries (the true
    speaker's rank in each probe's row, ``1..N``) and builds ``gamma`` as their histogram;
    :meth:`from_gamma` takes ``gamma`` directly (e.g. smoothed), :meth:`from_scores` computes it from a
    probe x speaker score matrix with :func:`vpeval.ranks.rank_histogram` and its tie rule.
    :meth:`transform` maps any ranks ``1..N`` to ``rank_llr(gamma)[rank - 1]``.

    Parameters
    ----------
    n_speakers : int or None
        ``N``.  Needed by :meth:`fit` (the histogram of observed ranks cannot tell how many ranks exist);
        ignored by :meth:`from_gamma`, which takes ``N = len(gamma)``.

    Attributes
    ----------
    gamma_ : ndarray of shape (N,)
    llr_ : ndarray of shape (N,)
        LLR of each rank in nats; ``+-inf`` for ranks with ``gamma_k`` equal to 1 or 0.

    Examples
    --------
    >>> cal = RankCalibrator(n_speakers=4).fit([1, 1, 2, 1, 3, 1, 2, 4])
    >>> cal.gamma_
    array([0.5  , 0.25 , 0.125, 0.125])
    >>> cal.transform([1, 2]).round(4)
    array([1.0986, 0.    ])
    """

    name = "rank"

    def __init__(self, n_speakers: int | None = None):
        self.n_speakers = n_speakers

    @classmethod
    def from_gamma(cls, gamma) -> "RankCalibrator":
        """A calibrator for a given rank distribution ``gamma`` (validated, length ``N >= 2``)."""
        g = validate_gamma(gamma)
        cal = cls(n_speakers=g.size)
        cal.gamma_ = g.copy()
        cal.llr_ = rank_llr(g)
        return cal

    @classmethod
    def from_scores(cls, score_matrix, true_index, ties: str = "fractional") -> "RankCalibrator":
        """A calibrator whose ``gamma`` is the rank histogram of a probe x speaker score matrix.

        ``gamma`` comes from :func:`vpeval.ranks.rank_histogram` with the given tie rule
        (``"fractional"``: a probe tied with others spreads its mass uniformly over the tied ranks;
        ``"optimistic"`` / ``"pessimistic"``: best / worst tied rank).
        """
        return cls.from_gamma(rank_histogram(score_matrix, true_index, ties=ties))

    def _ranks(self, ranks, name, n):
        r = np.asarray(ranks)
        if r.ndim != 1 or r.size == 0:
            raise VpevalError(f"{name}: expected a non-empty 1-D array of ranks, got shape {r.shape}")
        try:
            rf = r.astype(np.float64)
        except (TypeError, ValueError):
            raise VpevalError(f"{name}: ranks must be integers 1..{n}") from None
        if not np.all(np.isfinite(rf)) or np.any(rf != np.round(rf)) or np.any((rf < 1) | (rf > n)):
            raise VpevalError(
                f"{name}: ranks must be integers 1..{n}; fractional tie ranks need gamma from "
                "rank_histogram (RankCalibrator.from_gamma)"
            )
        return rf.astype(np.int64)

    def fit(self, tar, non=None) -> "RankCalibrator":
        """Estimate ``gamma`` as the histogram of the target ranks ``tar`` (integers ``1..N``).

        ``non`` (ranks of non-target entries) is accepted for interface symmetry and ignored: under the
        exchangeability assumption the non-target rank distribution follows from ``gamma``.
        """
        if self.n_speakers is None:
            raise VpevalError("RankCalibrator.fit needs n_speakers (N), the number of enrolled speakers")
        n = int(self.n_speakers)
        if n < 2:
            raise VpevalError(f"n_speakers must be >= 2, got {n}")
        r = self._ranks(tar, "tar", n)
        self.gamma_ = np.bincount(r - 1, minlength=n) / r.size
        self.llr_ = rank_llr(self.gamma_)
        return self

    def transform(self, ranks) -> np.ndarray:
        """LLR (nats) of each rank in ``ranks`` (integers ``1..N``)."""
        if not hasattr(self, "llr_"):
            raise VpevalError("RankCalibrator is not fitted; call fit or from_gamma first")
        r = self._ranks(ranks, "ranks", self.llr_.size)
        return self.llr_[r - 1]
