"""Similarity-rank disclosure computed from the rank distribution ``gamma`` of the true speaker.

Source: T. Backstrom, M. H. Vali, M. Nguyen, S. Rech, "Privacy disclosure of similarity rank in speech and
language processing" (arXiv:2508.05250); rank LLR: the worst-case paper, Eq. 35.

``gamma_k`` (``k = 1..N``, rank 1 = most similar) is the probability that a probe's true speaker is ranked
``k``-th among ``N`` enrolled speakers; estimate it with
:func:`vpeval.metrics.identification.rank_histogram` (which states the tie rule).  Against the uniform
``1/N`` of an attacker who learns nothing, the rank discloses

* per rank: ``d_k = log2(N gamma_k)`` bits (0 for a uniform gamma; positive where the true speaker is
  over-represented).  The worst-case paper prints this with a sign slip (``log2 1/(N gamma_k)``); the
  Backstrom et al. definition used here is ``log2(N gamma_k)``;
* ``MaxD = max_k d_k`` bits, the worst case over ranks;
* ``MeanD = sum_k gamma_k d_k = log2 N - H(gamma)`` bits (``H`` in bits, ``0 log 0 = 0``), the expected
  disclosure, i.e. the Kullback-Leibler divergence of ``gamma`` from uniform;
* ``IdR = gamma_1``, the identification rate (chance level ``1/N``);
* ``RS = #{k : gamma_k > 1/N} / N``, the share of ranks where the true speaker is more likely than chance.

The rank LLR of the worst-case paper (Eq. 35, nats) and its eps_max are reported beside them
(:mod:`vpeval.calibration.rank`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..calibration.rank import rank_llr, validate_gamma
from ..errors import VpevalError

__all__ = ["RankDisclosure", "rank_disclosure", "smooth_gamma"]


@dataclass(frozen=True)
class RankDisclosure:
    """Similarity-rank disclosure of one system.

    Attributes
    ----------
    gamma : ndarray of shape (N,)
        The rank distribution the numbers are computed from (after smoothing, if any).
    per_rank_bits : ndarray of shape (N,)
        ``log2(N gamma_k)`` bits; ``-inf`` where ``gamma_k = 0``.
    max_d : float
        ``MaxD`` in bits.
    mean_d : float
        ``MeanD = log2 N - H(gamma)`` in bits.
    idr : float
        ``IdR = gamma_1`` (probability, chance ``1/N``).
    rs : float
        Share of ranks with ``gamma_k > 1/N`` (in ``[0, 1]``).
    rank_llr : ndarray of shape (N,)
        Rank LLR of Eq. 35 of the worst-case paper, nats (``+-inf`` at ``gamma_k`` 1 or 0).
    rank_eps_max : float
        ``max_k |rank_llr_k|`` in nats.
    smoothing : str
        ``"none"`` or the smoothing applied to ``gamma`` (e.g. ``"laplace(alpha=1, n_probes=200)"``).
    """

    gamma: np.ndarray
    per_rank_bits: np.ndarray
    max_d: float
    mean_d: float
    idr: float
    rs: float
    rank_llr: np.ndarray
    rank_eps_max: float
    smoothing: str = "none"

    @property
    def n_speakers(self) -> int:
        return int(self.gamma.size)

    @property
    def rank_eps_max_bits(self) -> float:
        """eps_max of the rank LLR in bits."""
        return self.rank_eps_max / np.log(2)

    @property
    def rank_eps_max_log10(self) -> float:
        """eps_max of the rank LLR in log10 units."""
        return self.rank_eps_max / np.log(10)

    def to_dict(self) -> dict:
        """Plain-Python dict (lists and floats; infinities as ``float('inf')``), for JSON output."""
        return {
            "n_speakers": self.n_speakers,
            "smoothing": self.smoothing,
            "gamma": self.gamma.tolist(),
            "per_rank_bits": self.per_rank_bits.tolist(),
            "max_d_bits": self.max_d,
            "mean_d_bits": self.mean_d,
            "idr": self.idr,
            "rs": self.rs,
            "rank_llr_nats": self.rank_llr.tolist(),
            "rank_eps_max_nats": self.rank_eps_max,
            "rank_eps_max_bits": self.rank_eps_max_bits,
            "rank_eps_max_log10": self.rank_eps_max_log10,
        }


def smooth_gamma(gamma, n_probes: int, alpha: float = 1.0) -> np.ndarray:
    """Additive (Laplace, ``alpha = 1``) smoothing of a rank histogram.

    ``(n_probes * gamma_k + alpha) / (n_probes + alpha * N)``: ``alpha`` pseudo-probes at every rank.  It
    keeps every ``gamma_k`` strictly inside ``(0, 1)``, so per-rank disclosure and rank LLR are finite, and
    shrinks ``gamma`` toward uniform (it lowers MaxD and MeanD; the shrinkage vanishes as ``n_probes``
    grows).  ``n_probes`` is the number of probes the histogram was estimated from.

    Raises
    ------
    VpevalError
        Bad ``gamma``, ``n_probes < 1`` or ``alpha <= 0``.

    Examples
    --------
    >>> smooth_gamma([1.0, 0.0], n_probes=2)
    array([0.75, 0.25])
    """
    g = validate_gamma(gamma)
    if isinstance(n_probes, bool) or not isinstance(n_probes, (int, np.integer)) or n_probes < 1:
        raise VpevalError(f"n_probes must be a positive integer, got {n_probes!r}")
    alpha = float(alpha)
    if not np.isfinite(alpha) or alpha <= 0:
        raise VpevalError(f"alpha must be positive and finite, got {alpha!r}")
    return (n_probes * g + alpha) / (n_probes + alpha * g.size)


def rank_disclosure(gamma, *, smoothing: str | None = None, n_probes: int | None = None, alpha: float = 1.0):
    """Similarity-rank disclosure (Backstrom et al., arXiv:2508.05250) of a rank distribution, in bits.

    Parameters
    ----------
    gamma : array_like of shape (N,)
        ``P(true speaker at rank k)``, ``k = 1..N`` (rank 1 = most similar), ``N >= 2``; non-negative,
        summing to 1 within 1e-9.
    smoothing : {None, "none", "laplace"}
        ``"laplace"`` applies :func:`smooth_gamma` (needs ``n_probes``; ``alpha`` pseudo-probes per rank)
        before computing anything.  Default: none, the numbers are those of the histogram as given.
    n_probes : int, optional
        Number of probes behind ``gamma``; required for ``smoothing="laplace"``.
    alpha : float
        Pseudo-count per rank for Laplace smoothing.

    Returns
    -------
    RankDisclosure
        ``per_rank_bits = log2(N gamma_k)`` (``-inf`` at ``gamma_k = 0``), ``max_d``, ``mean_d =
        log2 N - H(gamma)`` (``0 log 0 = 0``), ``idr = gamma_1``, ``rs`` (share of ranks with
        ``gamma_k > 1/N``, strict), the rank LLR (nats) and its eps_max.

    Raises
    ------
    VpevalError
        Bad ``gamma`` or smoothing arguments.

    Notes
    -----
    Ties between scores are resolved before this function, when ``gamma`` is estimated
    (:func:`vpeval.metrics.identification.rank_histogram`: by default a tied probe spreads its mass uniformly
    over the tied ranks).  Empty ranks (``gamma_k = 0``) give ``-inf`` per-rank bits and contribute 0 to
    MeanD; ``gamma_1 = 1`` gives ``MaxD = MeanD = log2 N``.

    Examples
    --------
    >>> r = rank_disclosure([0.55, 0.25, 0.12, 0.08])
    >>> r.per_rank_bits.round(6)
    array([ 1.137504,  0.      , -1.058894, -1.643856])
    >>> round(r.mean_d, 6), round(r.max_d, 6), r.idr, r.rs
    (0.367051, 1.137504, 0.55, 0.25)
    """
    g = validate_gamma(gamma)
    label = "none"
    if smoothing in (None, "none"):
        pass
    elif smoothing == "laplace":
        if n_probes is None:
            raise VpevalError("smoothing='laplace' needs n_probes, the number of probes behind gamma")
        g = smooth_gamma(g, n_probes, alpha)
        label = f"laplace(alpha={alpha:g}, n_probes={int(n_probes)})"
    else:
        raise VpevalError(f"smoothing must be None, 'none' or 'laplace', got {smoothing!r}")
    n = g.size
    with np.errstate(divide="ignore"):
        bits = np.log2(n * g)
    pos = g > 0
    mean_d = float(np.sum(g[pos] * bits[pos]))
    llr = rank_llr(g)
    return RankDisclosure(
        gamma=g.copy(),
        per_rank_bits=bits,
        max_d=float(np.max(bits)),
        mean_d=mean_d,
        idr=float(g[0]),
        rs=float(np.count_nonzero(g > 1.0 / n) / n),
        rank_llr=llr,
        rank_eps_max=float(np.max(np.abs(llr))),
        smoothing=label,
    )
