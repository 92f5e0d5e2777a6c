"""Rank of the true speaker in each row of a probe x enrolled-speaker score matrix, under a tie rule.

One scan counts, per probe, the enrolled speakers scoring above and equal to the true speaker
(:class:`RankCounts`); every rank-based reading follows from those counts: the rank per probe, the rank
histogram ``gamma`` (Backstrom et al.'s similarity-rank distribution) and the cumulative match
characteristic (CMC). :mod:`vpeval.metrics.identification` re-exports them beside the identification rates;
:class:`vpeval.calibration.rank.RankCalibrator` builds its ``gamma`` with :func:`rank_histogram`.

Conventions
-----------
* Score matrix: shape ``(n_probes, N)``, float; row ``i`` holds probe ``i``'s scores against the N enrolled
  speakers, higher means "more likely the same speaker". ``true_index[i]`` is the column of probe ``i``'s
  speaker (closed set: every probe's speaker is enrolled). ``+inf`` and ``-inf`` are legal scores; NaN is
  not.
* Rank of the true speaker: ``1 + g`` where ``g`` is the number of other enrolled speakers whose score is
  strictly greater than the true speaker's, when no other score equals it. With ``e`` other speakers tied
  with the true one, the tied block occupies ranks ``g + 1 .. g + e + 1`` and the *tie rule* decides:

  ``"fractional"`` (default)
      the probe's unit mass is spread uniformly over the ``e + 1`` tied ranks: the expectation under
      breaking the tie uniformly at random. The per-probe rank is then the mid-rank ``g + 1 + e / 2``.
  ``"optimistic"``
      the true speaker wins every tie (rank ``g + 1``), the attacker's best case.
  ``"pessimistic"``
      the true speaker loses every tie (rank ``g + e + 1``).

* Memory: every function scans the matrix in blocks of rows, so the temporaries never exceed
  ``chunk_rows x N`` values (by default about 2 MiB per temporary, whatever the matrix size). Each row
  needs two vectorised comparisons against the true score, O(N); nothing is sorted. A ``dask.array``
  (optional dependency) is accepted and computed block by block with the same results; NumPy memory maps
  work as they are.

Layering: this module sits below :mod:`vpeval.metrics` and :mod:`vpeval.calibration` (it imports neither), so
both import it at module level.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._checks import one_of
from ._docs import fill_doc
from .errors import InvalidScoresError
from .rowscan import _as_matrix, _as_true_index, _check_nan, _chunk_rows, _iter_blocks

__all__ = ["TIE_RULES", "RankCounts", "rank_counts", "true_speaker_rank", "rank_histogram", "cmc", "cmc_from_gamma"]

TIE_RULES = ("fractional", "optimistic", "pessimistic")


def cmc_from_gamma(gamma) -> np.ndarray:
    """The CMC of a rank histogram: ``min(cumsum(gamma), 1)`` with the last value exactly 1 (what :func:`cmc`
    returns for the matrix ``gamma`` was counted from; report.json keeps ``gamma`` only).

    Parameters
    ----------
    gamma : array_like of shape (N,)
        Rank histogram (:func:`rank_histogram`), N >= 1.

    Returns
    -------
    ndarray of shape (N,), float64, non-decreasing, last value 1.

    Raises
    ------
    InvalidScoresError
        ``gamma`` not a non-empty 1-D array of finite numbers.

    Examples
    --------
    >>> cmc_from_gamma([0.25, 0.25, 0.5]).tolist()
    [0.25, 0.5, 1.0]
    """
    g = np.asarray(gamma, dtype=np.float64)
    if g.ndim != 1 or g.size == 0 or not np.isfinite(g).all():
        raise InvalidScoresError(f"gamma: expected a non-empty 1-D array of finite numbers, got shape {g.shape}")
    curve = np.minimum(np.cumsum(g), 1.0)
    curve[-1] = 1.0
    return curve


def _count_dtype(n_cols: int):
    # Summing a bool mask viewed as uint8 into uint16 is the fastest exact count while N < 2**16.
    return np.uint16 if n_cols < 2**16 else np.int64


def _rank_block(x, t, d, mask, start, name, check=True):
    """Counts (n_greater, n_tied) for a block, given ``d = x - t[:, None]``.

    For finite t, ``x - t > 0`` iff ``x > t`` and ``x - t == 0`` iff ``x == t`` (IEEE subtraction of
    distinct floats never gives 0, and overflow keeps the sign), so the comparisons run on ``d``. Rows
    whose ``d`` has a non-finite sum (NaN somewhere, or +inf and -inf both present, or t = +-inf) are
    checked for NaN and recounted directly on ``x``. ``check=False`` skips that test: the caller then
    owns it (the LID scan detects the same rows from its sum of exp(d)) and must call
    :func:`_recount_rows` for them.
    """
    cdt = _count_dtype(x.shape[1])
    np.greater(d, 0.0, out=mask)
    g = mask.view(np.uint8).sum(axis=1, dtype=cdt).astype(np.intp)
    np.equal(d, 0.0, out=mask)
    e = mask.view(np.uint8).sum(axis=1, dtype=cdt).astype(np.intp) - 1
    if check:
        with np.errstate(invalid="ignore"):
            odd = ~np.isfinite(np.add.reduce(d, axis=1))
        if odd.any():
            _recount_rows(x, t, np.flatnonzero(odd), g, e, start, name)
    return g, e


def _recount_rows(x, t, rows, g, e, start, name):
    """Raise for NaN in ``x[rows]``, else recount those rows by direct comparison with ``t`` (in place)."""
    xb = x[rows]
    glob = start + rows if np.isscalar(start) else np.asarray(start)[rows]
    _check_nan(xb, xb.max(axis=1), glob, name)
    tb = t[rows][:, None]
    g[rows] = np.count_nonzero(xb > tb, axis=1)
    e[rows] = np.count_nonzero(xb == tb, axis=1) - 1


def _check_ties(ties: str) -> str:
    return one_of(ties, "ties", TIE_RULES)


@dataclass(frozen=True)
class RankCounts:
    """Per-probe counts that determine the rank of the true speaker under any tie rule.

    Attributes
    ----------
    n_greater : ndarray of shape (n_probes,), int
        Number of other enrolled speakers scoring strictly above the true speaker.
    n_tied : ndarray of shape (n_probes,), int
        Number of other enrolled speakers scoring exactly the true speaker's score.
    n_speakers : int
        N, the number of enrolled speakers (columns).
    """

    n_greater: np.ndarray
    n_tied: np.ndarray
    n_speakers: int

    @property
    def n_probes(self) -> int:
        return int(self.n_greater.shape[0])

    def ranks(self, ties: str = "fractional") -> np.ndarray:
        """Rank of the true speaker per probe (1 = best), float64; see the module docstring for ``ties``."""
        _check_ties(ties)
        g = self.n_greater.astype(np.float64)
        if ties == "optimistic":
            return g + 1.0
        if ties == "pessimistic":
            return g + self.n_tied + 1.0
        return g + 1.0 + self.n_tied / 2.0

    def histogram(self, ties: str = "fractional") -> np.ndarray:
        """gamma_k, k = 1..N: share of probes whose true speaker is at rank k (sums to 1)."""
        _check_ties(ties)
        n_cols, n = self.n_speakers, self.n_probes
        g, e = self.n_greater, self.n_tied
        if ties == "optimistic":
            return np.bincount(g, minlength=n_cols) / n
        if ties == "pessimistic":
            return np.bincount(g + e, minlength=n_cols) / n
        untied = e == 0
        mass = np.bincount(g[untied], minlength=n_cols).astype(np.float64)
        if not untied.all():
            gt, et = g[~untied], e[~untied]
            w = 1.0 / (et + 1.0)
            # Difference array: +w at the first tied rank, -w one past the last; cumulative sum spreads it.
            diff = np.bincount(gt, weights=w, minlength=n_cols + 1) - np.bincount(
                gt + et + 1, weights=w, minlength=n_cols + 1
            )
            mass += np.maximum(np.cumsum(diff)[:n_cols], 0.0)
        return mass / n

    def cmc(self, ties: str = "fractional") -> np.ndarray:
        """Identification rate at ranks 1..N: P(rank <= k); non-decreasing, last value exactly 1."""
        return cmc_from_gamma(self.histogram(ties))


def rank_counts(score_matrix, true_index, *, chunk_rows: int | None = None) -> RankCounts:
    """Count, per probe, the enrolled speakers scoring above and equal to the true speaker.

    One pass over the matrix in row blocks (two vectorised comparisons per row, O(N), no sorting).

    Parameters
    ----------
    score_matrix : array_like or dask.array of shape (n_probes, N)
        Scores of each probe against each enrolled speaker (higher = more similar). ``+-inf`` allowed.
    true_index : array_like of int, shape (n_probes,)
        Column of the true speaker of each probe.
    chunk_rows : int, optional
        Rows per block (default: about 2 MiB of float64 per block). Results do not depend on it.

    Returns
    -------
    RankCounts

    Raises
    ------
    InvalidScoresError
        Not 2-D, empty, NaN anywhere, ``true_index`` of the wrong length, not integer, or out of range.

    Examples
    --------
    >>> c = rank_counts([[0.9, 0.5, 0.9], [0.1, 0.3, 0.2]], [0, 0])
    >>> c.n_greater.tolist(), c.n_tied.tolist()
    ([0, 2], [1, 0])
    """
    arr, n, n_cols = _as_matrix(score_matrix, "score_matrix")
    ti = _as_true_index(true_index, n, n_cols)
    rows = _chunk_rows(n_cols, chunk_rows)
    n_greater = np.empty(n, dtype=np.intp)
    n_tied = np.empty(n, dtype=np.intp)
    mask = np.empty((min(rows, n), n_cols), dtype=bool)
    diff = np.empty((min(rows, n), n_cols), dtype=np.float64)
    for start, x in _iter_blocks(arr, n, rows):
        r = x.shape[0]
        t = x[np.arange(r), ti[start : start + r]]
        d = diff[:r]
        with np.errstate(invalid="ignore"):
            np.subtract(x, t[:, None], out=d)
        g, e = _rank_block(x, t, d, mask[:r], start, "score_matrix")
        n_greater[start : start + r] = g
        n_tied[start : start + r] = e
    return RankCounts(n_greater, n_tied, n_cols)


def _counts(score_matrix, true_index, chunk_rows) -> RankCounts:
    if isinstance(score_matrix, RankCounts):
        if true_index is not None:
            raise InvalidScoresError("true_index must be None when RankCounts are passed instead of a matrix")
        return score_matrix
    return rank_counts(score_matrix, true_index, chunk_rows=chunk_rows)


def true_speaker_rank(score_matrix, true_index, ties: str = "fractional", *, chunk_rows=None) -> np.ndarray:
    """Rank of the true speaker for every probe (1 = top score).

    Parameters
    ----------
    score_matrix, true_index, chunk_rows
        As in :func:`rank_counts`; a :class:`RankCounts` may be passed instead of the matrix (then
        ``true_index=None``) to avoid a second scan.
    ties : {"fractional", "optimistic", "pessimistic"}
        Tie rule (module docstring). ``"fractional"`` returns mid-ranks, so ranks may end in ``.5``.

    Returns
    -------
    ndarray of shape (n_probes,), float64

    Examples
    --------
    >>> S = [[0.9, 0.5, 0.9], [0.1, 0.3, 0.2]]
    >>> true_speaker_rank(S, [0, 0]).tolist(), true_speaker_rank(S, [0, 0], "pessimistic").tolist()
    ([1.5, 3.0], [2.0, 3.0])
    """
    _check_ties(ties)
    return _counts(score_matrix, true_index, chunk_rows).ranks(ties)


@fill_doc
def rank_histogram(score_matrix, true_index, ties: str = "fractional", *, chunk_rows=None) -> np.ndarray:
    """Rank histogram gamma of the true speaker (similarity-rank distribution).

    Source: T. Backstrom, M. H. Vali, M. Nguyen, S. Rech, "Privacy disclosure of similarity rank in speech
    and language processing" (arXiv:2508.05250): gamma_k = P(true identity at similarity rank k), estimated
    by the histogram over probes.

    ``gamma[k-1]`` estimates P(true speaker at rank k), k = 1..N, as the share of probes at rank k; under
    the ``"fractional"`` tie rule a probe tied with ``e`` others contributes ``1/(e+1)`` to each of its tied
    ranks. Feed it to the rank-disclosure metrics (per-rank disclosure ``log2(N gamma_k)`` bits) or to
    :func:`closed_set_linkability`.

    {parameters_rank_matrix}

    Returns
    -------
    gamma : ndarray of shape (N,), float64, non-negative, sums to 1 (up to rounding).

    {raises_rank_matrix}

    Examples
    --------
    >>> S = [[0.9, 0.5, 0.9], [0.1, 0.3, 0.2]]
    >>> rank_histogram(S, [0, 0]).tolist()
    [0.25, 0.25, 0.5]
    """
    _check_ties(ties)
    return _counts(score_matrix, true_index, chunk_rows).histogram(ties)


@fill_doc
def cmc(score_matrix, true_index, ties: str = "fractional", *, chunk_rows=None) -> np.ndarray:
    """Cumulative match characteristic: identification rate at ranks 1..N.

    ``cmc[k-1]`` = share of probes whose true speaker is among the k top-scoring enrolled speakers
    (closed-set identification, e.g. Bolle et al., *Guide to Biometrics*, 2004, ch. 5). Chance level for
    an uninformative attacker is ``k/N``. Ties follow ``ties`` (module docstring); ``"fractional"`` equals
    the expected rate when ties are broken uniformly at random.

    {parameters_rank_matrix}

    Returns
    -------
    ndarray of shape (N,), float64 in [0, 1], non-decreasing, last value 1.

    {raises_rank_matrix}

    Examples
    --------
    >>> S = [[0.9, 0.5, 0.9], [0.1, 0.3, 0.2]]
    >>> cmc(S, [0, 0]).tolist(), cmc(S, [0, 0], "optimistic").tolist()
    ([0.25, 0.5, 1.0], [0.5, 0.5, 1.0])
    """
    _check_ties(ties)
    return _counts(score_matrix, true_index, chunk_rows).cmc(ties)
