"""Closed-set identification from a probe x enrolled-speaker score matrix.

An attacker holds N enrolled speakers and scores each probe (an anonymized utterance) against all of them.
This module gives the rank of the true speaker per probe, the rank histogram ``gamma`` (Backstrom et al.'s
similarity-rank distribution), the cumulative match characteristic (CMC, identification rate at rank k),
rank-k rates beside their chance level k/N, and the closed-set linkability (the probability that the true
speaker beats every other member of a random candidate set of size N').

The ranks themselves (:class:`RankCounts`, :func:`rank_counts`, :func:`true_speaker_rank`,
:func:`rank_histogram`, :func:`cmc`, the tie rules) live in :mod:`vpeval.ranks`, below both the metrics and
the calibrations, and are re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidScoresError
from ..ranks import TIE_RULES, RankCounts, _check_ties, _counts, cmc, rank_counts, rank_histogram, true_speaker_rank

__all__ = [
    "TIE_RULES",
    "RankCounts",
    "rank_counts",
    "true_speaker_rank",
    "rank_histogram",
    "cmc",
    "IdentificationResult",
    "identification_rates",
    "ClosedSetLinkability",
    "closed_set_linkability",
]


@dataclass(frozen=True)
class IdentificationResult:
    """Closed-set identification summary.

    Attributes
    ----------
    rates : dict int -> float
        Identification rate at rank k (``cmc[k-1]``) for each requested k (k > N is clipped to N).
    chance : dict int -> float
        ``k/N``, the rate of an attacker who guesses.
    cmc : ndarray of shape (N,)
    gamma : ndarray of shape (N,)
        Rank histogram.
    mean_rank : float
        Mean rank of the true speaker under the tie rule (chance: (N+1)/2).
    n_probes, n_speakers : int
    ties : str
    """

    rates: dict
    chance: dict
    cmc: np.ndarray = field(repr=False)
    gamma: np.ndarray = field(repr=False)
    mean_rank: float
    n_probes: int
    n_speakers: int
    ties: str

    def to_dict(self) -> dict:
        """JSON-ready dict (curves as lists)."""
        return {
            "ties": self.ties,
            "n_probes": self.n_probes,
            "n_speakers": self.n_speakers,
            "rates": {f"rank{k}": v for k, v in self.rates.items()},
            "chance": {f"rank{k}": v for k, v in self.chance.items()},
            "mean_rank": self.mean_rank,
            "cmc": self.cmc.tolist(),
            "gamma": self.gamma.tolist(),
        }


def identification_rates(
    score_matrix, true_index=None, ks=(1, 5, 10), ties: str = "fractional", *, chunk_rows=None
) -> IdentificationResult:
    """Rank-k identification rates with their chance levels k/N, CMC, rank histogram, mean rank.

    Parameters
    ----------
    score_matrix : array_like or dask.array of shape (n_probes, N), or RankCounts
    true_index : array_like of int, shape (n_probes,) (None with RankCounts)
    ks : iterable of int >= 1
        Ranks to report; a k above N is reported at N (rate 1, chance 1).
    ties : {"fractional", "optimistic", "pessimistic"}
    chunk_rows : int, optional

    Returns
    -------
    IdentificationResult

    Examples
    --------
    >>> r = identification_rates([[0.9, 0.5, 0.9], [0.1, 0.3, 0.2]], [0, 0], ks=(1, 2))
    >>> r.rates, r.chance
    ({1: 0.25, 2: 0.5}, {1: 0.3333333333333333, 2: 0.6666666666666666})
    """
    _check_ties(ties)
    counts = _counts(score_matrix, true_index, chunk_rows)
    n_cols = counts.n_speakers
    curve = counts.cmc(ties)
    rates, chance = {}, {}
    for k in ks:
        k = int(k)
        if k < 1:
            raise InvalidScoresError(f"ks: ranks start at 1, got {k}")
        kk = min(k, n_cols)
        rates[k] = float(curve[kk - 1])
        chance[k] = kk / n_cols
    return IdentificationResult(
        rates=rates,
        chance=chance,
        cmc=curve,
        gamma=counts.histogram(ties),
        mean_rank=float(counts.ranks(ties).mean()),
        n_probes=counts.n_probes,
        n_speakers=n_cols,
        ties=ties,
    )


# --------------------------------------------------------------------------------------------------------
# Closed-set linkability
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClosedSetLinkability:
    """Closed-set linkability as a function of the candidate-set size N'.

    Attributes
    ----------
    n_candidates : ndarray of int, shape (m,)
        Candidate-set sizes N' (the true speaker plus N' - 1 others).
    linkability : ndarray of float, shape (m,)
        P(true speaker outscores every other candidate) for each N'.
    chance : ndarray of float, shape (m,)
        ``1/N'``, the value for an uninformative attacker (uniform gamma).
    """

    n_candidates: np.ndarray
    linkability: np.ndarray
    chance: np.ndarray

    def to_dict(self) -> dict:
        return {
            "n_candidates": self.n_candidates.tolist(),
            "linkability": self.linkability.tolist(),
            "chance": self.chance.tolist(),
        }


def closed_set_linkability(gamma, n_candidates=None) -> ClosedSetLinkability:
    """Closed-set linkability / singling-out probability for random candidate sets (Vauquier et al.).

    The attacker is shown the true speaker together with ``N' - 1`` others drawn uniformly without
    replacement from the ``N - 1`` other enrolled speakers, and links the probe to the top-scoring
    candidate. If the true speaker has rank ``k`` among all N (strict order), it wins exactly when none of
    the ``k - 1`` speakers above it is drawn, a hypergeometric event::

        P(win | k, N') = C(N - k, N' - 1) / C(N - 1, N' - 1)
        L(N')          = sum_k gamma_k C(N - k, N' - 1) / C(N - 1, N' - 1)

    ``L(1) = 1``, ``L(N) = gamma_1`` (the rank-1 rate); a uniform gamma gives ``1/N'``.

    Ties: ``gamma`` carries the tie rule it was built with (:func:`rank_histogram`). With the
    ``"fractional"`` histogram the formula equals the probability under uniformly random tie-breaking
    *within the candidate set* (a tied block of e others, j of them drawn, wins with probability 1/(j+1)):
    averaging the strict-order formula over the uniformly spread tied ranks gives exactly that, by
    Vandermonde's identity. ``"optimistic"`` (ties won) and ``"pessimistic"`` (ties lost) histograms give
    the corresponding bounds.

    Parameters
    ----------
    gamma : array_like of shape (N,)
        Rank histogram (non-negative, summing to 1 within 1e-9).
    n_candidates : int or array_like of int, optional
        Candidate-set sizes N' in 1..N; default all of 1..N.

    Returns
    -------
    ClosedSetLinkability
        Probabilities (unitless, in [0, 1]) per N', with chance ``1/N'``.

    Raises
    ------
    InvalidScoresError
        gamma empty, negative, NaN or not summing to 1; N' outside 1..N.

    Notes
    -----
    Computed in O(N) per N' with the ratio recursion
    ``C(N-k, m+1)/C(N-1, m+1) = C(N-k, m)/C(N-1, m) * (N-k-m)/(N-1-m)``; all of 1..N costs O(N^2) time and
    O(N) memory.

    Examples
    --------
    >>> r = closed_set_linkability([0.5, 0.3, 0.2])
    >>> r.linkability.round(6).tolist()
    [1.0, 0.65, 0.5]
    """
    g = np.asarray(gamma, dtype=np.float64)
    if g.ndim != 1 or g.size == 0:
        raise InvalidScoresError(f"gamma: expected a non-empty 1-D array, got shape {g.shape}")
    if not np.isfinite(g).all() or (g < 0).any():
        raise InvalidScoresError("gamma: must be finite and non-negative")
    if abs(g.sum() - 1.0) > 1e-9:
        raise InvalidScoresError(f"gamma: must sum to 1, sums to {g.sum()!r}")
    n_cols = g.size
    if n_candidates is None:
        sizes = np.arange(1, n_cols + 1)
    else:
        sizes = np.atleast_1d(np.asarray(n_candidates))
        if sizes.dtype.kind not in "iu" or sizes.ndim != 1:
            raise InvalidScoresError("n_candidates: expected integers")
        if ((sizes < 1) | (sizes > n_cols)).any():
            raise InvalidScoresError(f"n_candidates: every N' must lie in 1..{n_cols}, got {sizes.tolist()}")
    wanted = {int(s) for s in sizes}
    top = max(wanted)
    out = {}
    k = np.arange(1, n_cols + 1, dtype=np.float64)
    h = np.ones(n_cols)  # m = 0 drawn others: the true speaker always wins
    for m in range(top):  # h holds C(N-k, m)/C(N-1, m)
        if m + 1 in wanted:
            out[m + 1] = min(float(g @ h), 1.0)
        if m + 1 < top:
            h *= np.maximum(n_cols - k - m, 0.0) / (n_cols - 1 - m)
    prob = np.array([out[int(s)] for s in sizes])
    return ClosedSetLinkability(sizes.astype(np.int64), prob, 1.0 / sizes)
