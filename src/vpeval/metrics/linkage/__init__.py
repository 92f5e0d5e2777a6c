"""Local information disclosure (LID) of 1-to-N linkage.

Source: Sterns et al., "Local information disclosure" (LID) of speaker linkage: the attacker scores an
anonymized probe against N enrolled speakers and turns the scores into a posterior over the N speakers.
Per probe i, with true speaker t(i)::

    z_ij   = (s_ij - mean_j s_ij) / std_j s_ij              row-wise z-norm, sample std (ddof = 1)
    l_ij   = w z_ij + b                                       LLRs in nats, (w, b) from a logistic fit
    p_ij   = exp(l_ij) / sum_k exp(l_ik)                      posterior under a flat prior over speakers
    LID_i  = log2(N p_i,t(i))                                 bits

LID_i is the information (bits) the probe gives about its speaker over a uniform guess: 0 at chance,
log2 N when the posterior is certain and right, negative when the probe points away from its speaker.
Since the softmax is invariant to adding a constant to a row, the intercept b cancels: only the slope w
matters. Summaries: ALID = mean LID, PDR = share of probes with LID > 0, NDR = share with LID <= 0,
LID+ / LID- = mean LID over those two groups, LID_max = max LID; ALID = PDR LID+ + NDR LID-.

Everything here scans matrices in row blocks (see :mod:`vpeval.metrics.identification`), so the extra
memory is bounded by a few blocks of ``chunk_rows x N`` float64 whatever the number of probes; dask arrays
are accepted by :func:`lid` and :func:`lid_pipeline`.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from functools import partial

import numpy as np
from scipy.special import expit

from ...calibration.logistic import add_slope_ridge, newton_minimize
from ...errors import InvalidScoresError, SeparableScoresError
from ..identification import (
    RankCounts,
    _as_matrix,
    _as_true_index,
    _check_nan,
    _chunk_rows,
    _iter_blocks,
    _ClusterMatrix,
    _map_pieces,
    _map_rows,
    _on_cluster,
    _rank_block,
    _recount_rows,
)
from ..moment_kernel import compiled_accumulate

__all__ = [
    "znorm_rows",
    "softmax_posteriors",
    "lid",
    "LIDSummary",
    "lid_summary",
    "lid_ccdf",
    "LIDPipelineResult",
    "lid_pipeline",
    "DEFAULT_REGULARIZATION",
    "LinkageAnalysis",
    "linkage_analysis",
]

#: Penalty weight of ``separable="regularize"``, passed to ``LogisticCalibrator(regularization=...)``.
DEFAULT_REGULARIZATION = 1e-3

_LN2 = math.log(2.0)

#: Matrices with fewer scores than this are binned with NumPy (vpeval.metrics.moment_kernel): importing numba
#: and loading its cached loop costs about 0.5 s once per process (benchmarks/micro.py), and the loop saves
#: about 13 ns per score (BENCHMARKS.md), so it pays from a few 1e7 scores on (at 4.8e6 scores it was
#: measured 0.7 s slower).
JIT_MIN_SCORES = 2**26

#: False: every calibration fit streams Newton passes over the matrix (:func:`_fit_calibration`); True: one
#: scan into moment histograms, Newton on the bins (:func:`_fit_binned`, exact fallback when not provably
#: accurate). A module switch so that tests can compare the two.
_HISTOGRAM_FIT = True


# --------------------------------------------------------------------------------------------------------
# z-norm
# --------------------------------------------------------------------------------------------------------


def _znorm_block(x: np.ndarray, start: int, name: str, out: np.ndarray | None = None) -> np.ndarray:
    """z-normalise each row of a float64 block into ``out`` (a float64 array of x's shape, not ``x``
    itself; a new array when None) and return it. Errors name the global row.

    Exact for any positive scale of a row (rows are rescaled by a power of two first). ``out`` lets the
    moment scan write the z-scores straight into the buffer it bins from."""
    n_cols = x.shape[1]
    if n_cols < 2:
        raise InvalidScoresError(f"{name}: z-normalisation needs at least 2 speakers per row, got {n_cols}")
    mx, mn = x.max(axis=1), x.min(axis=1)
    bad = ~(np.isfinite(mx) & np.isfinite(mn))  # a NaN makes the max NaN; an infinity shows in max or min
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        what = "NaN" if np.isnan(x[i]).any() else "an infinite score"
        raise InvalidScoresError(
            f"{name}: probe row {start + i} contains {what}; z-normalisation needs finite scores"
        )
    const = mx == mn
    if const.any():
        rows = np.flatnonzero(const)
        raise InvalidScoresError(
            f"{name}: {rows.size} probe row(s) have the same score for every speaker (first: row "
            f"{start + int(rows[0])}); their standard deviation is 0 and the z-score is undefined"
        )
    # z is invariant to a positive scale of the row: each row is first brought to magnitude [0.5, 1) by an exact
    # power of two, so that scores anywhere in 1e-300..1e300 neither overflow (mean, squares) nor underflow
    # (a product with 2**-e where that power is a normal number, else ldexp: the same correctly rounded values)
    z = np.empty_like(x, dtype=np.float64) if out is None else out
    e = np.frexp(np.maximum(np.abs(mx), np.abs(mn)))[1]
    if (np.abs(e) <= 1000).all():
        if e.any():
            x = np.multiply(x, np.ldexp(1.0, -e)[:, None], out=z)
    else:
        x = np.ldexp(x, -e[:, None], out=z)
    mu = x.mean(axis=1)
    np.subtract(x, mu[:, None], out=z)
    sd = np.sqrt(np.einsum("ij,ij->i", z, z) / (n_cols - 1))
    z /= sd[:, None]
    return z


def znorm_rows(matrix, *, chunk_rows: int | None = None) -> np.ndarray:
    """Row-wise z-normalisation with the sample standard deviation (LID paper, first step).

    ``z_ij = (s_ij - m_i) / sd_i`` with ``m_i`` the row mean and ``sd_i`` the row's sample standard
    deviation (``ddof=1``, divisor N - 1).

    Parameters
    ----------
    matrix : array_like or dask.array of shape (n_probes, N), N >= 2
        Scores, finite.
    chunk_rows : int, optional
        Rows per block while computing (the output is one NumPy array of the input's size).

    Returns
    -------
    ndarray of shape (n_probes, N), float64

    Raises
    ------
    InvalidScoresError
        Not 2-D, empty, N < 2, NaN or inf, or a constant row (standard deviation 0: named by row).

    Examples
    --------
    >>> znorm_rows([[0.8, 0.2, 0.1, 0.3]]).round(6).tolist()
    [[1.447352, -0.482451, -0.804084, -0.160817]]
    """
    arr, n, n_cols = _as_matrix(matrix, "matrix")
    rows = _chunk_rows(n_cols, chunk_rows)
    out = np.empty((n, n_cols), dtype=np.float64)
    for start, x in _iter_blocks(arr, n, rows):
        out[start : start + x.shape[0]] = _znorm_block(x, start, "matrix")
    return out


# --------------------------------------------------------------------------------------------------------
# Softmax posterior and LID
# --------------------------------------------------------------------------------------------------------


def _row_max(x: np.ndarray, start, name: str) -> np.ndarray:
    """Row maxima; raise for NaN, all -inf rows, rows with two +inf. ``start``: as in ``_check_nan``."""
    m = x.max(axis=1)
    _check_nan(x, m, start, name)

    def row(i):
        return start + i if np.isscalar(start) else int(start[i])

    neg = m == -np.inf
    if neg.any():
        i = int(np.flatnonzero(neg)[0])
        raise InvalidScoresError(
            f"{name}: every LLR of probe row {row(i)} is -inf; its posterior over speakers is undefined"
        )
    pos = m == np.inf
    if pos.any():
        cnt = np.count_nonzero(x[pos] == np.inf, axis=1)
        if (cnt > 1).any():
            i = int(np.flatnonzero(pos)[int(np.flatnonzero(cnt > 1)[0])])
            raise InvalidScoresError(
                f"{name}: probe row {row(i)} has {int(cnt.max())} LLRs equal to +inf; its posterior "
                "over speakers is undefined (inf/inf)"
            )
    return m


def _log_p_true_careful(x: np.ndarray, ti: np.ndarray, start, name: str) -> np.ndarray:
    """ln p(true speaker | probe) per row, log-sum-exp around the row maximum; handles +-inf."""
    r = x.shape[0]
    t = x[np.arange(r), ti]
    m = _row_max(x, start, name)
    pos = m == np.inf
    shift = np.where(pos, 0.0, m)
    with np.errstate(over="ignore", invalid="ignore"):
        buf = x - shift[:, None]
        np.exp(buf, out=buf)
        total = buf.sum(axis=1)  # >= 1 on finite rows: the row maximum contributes exp(0)
        log_p = (t - shift) - np.log(total)
    if pos.any():
        # Exactly one +inf in the row (checked): all the mass sits on that speaker.
        log_p[pos] = np.where(t[pos] == np.inf, 0.0, -np.inf)
    return log_p


def _scan_block(x, ti, start, name, diff, mask=None):
    """ln p(true) per row of an LLR block, and (if ``mask`` is given) the rank counts of the same block.

    Fast path, one subtraction shared by both: ``d = x - x_true``; ranks compare ``d`` with 0 and
    ``ln p_true = -ln(sum_j exp(d_j))`` (the true speaker's own term is exp(0) = 1, so the sum is >= 1 and
    ln p_true <= 0). Rows where that sum is not finite (NaN, an LLR more than ~709 nats above the true
    one, +-inf) or where the true LLR is infinite are redone by :func:`_log_p_true_careful`, which
    shifts by the row maximum and raises for undefined rows.
    """
    r = x.shape[0]
    t = x[np.arange(r), ti]
    d = diff[:r]
    with np.errstate(over="ignore", invalid="ignore"):
        np.subtract(x, t[:, None], out=d)
        counts = _rank_block(x, t, d, mask[:r], start, name, check=False) if mask is not None else None
        np.exp(d, out=d)
        total = np.add.reduce(d, axis=1)
        log_p = -np.log(total)
    redo = ~(np.isfinite(total) & np.isfinite(t))
    if redo.any():
        rows = np.flatnonzero(redo)
        log_p[rows] = _log_p_true_careful(x[rows], ti[rows], start + rows, name)
        if counts is not None:  # every row whose d-based counts could be wrong is among these
            _recount_rows(x, t, rows, counts[0], counts[1], start, name)
    return log_p, counts


def softmax_posteriors(llr_matrix, *, chunk_rows: int | None = None) -> np.ndarray:
    """Posterior over the N enrolled speakers per probe: row-wise softmax of LLRs (nats), flat prior.

    Computed with log-sum-exp (subtract the row maximum first), so huge LLRs do not overflow. A row with one
    ``+inf`` puts probability 1 on that speaker; ``-inf`` entries get 0.

    Parameters
    ----------
    llr_matrix : array_like or dask.array of shape (n_probes, N)
    chunk_rows : int, optional

    Returns
    -------
    ndarray of shape (n_probes, N), float64, rows summing to 1.

    Raises
    ------
    InvalidScoresError
        NaN; a row that is all ``-inf`` or holds two or more ``+inf``.

    Examples
    --------
    >>> z = znorm_rows([[0.8, 0.2, 0.1, 0.3]])
    >>> softmax_posteriors(2 * z).round(6).tolist()
    [[0.932614, 0.019656, 0.010331, 0.037399]]
    >>> softmax_posteriors([[1000.0, 0.0, -5.0]]).tolist()
    [[1.0, 0.0, 0.0]]
    """
    arr, n, n_cols = _as_matrix(llr_matrix, "llr_matrix")
    rows = _chunk_rows(n_cols, chunk_rows)
    out = np.empty((n, n_cols), dtype=np.float64)
    for start, x in _iter_blocks(arr, n, rows):
        m = _row_max(x, start, "llr_matrix")
        pos = m == np.inf
        shift = np.where(pos, 0.0, m)
        with np.errstate(over="ignore", invalid="ignore"):
            e = np.exp(x - shift[:, None])
            e /= e.sum(axis=1, keepdims=True)
        if pos.any():
            e[pos] = (x[pos] == np.inf).astype(np.float64)
        out[start : start + x.shape[0]] = e
    return out


def _lid_from_log_p(log_p: np.ndarray, n_cols: int) -> np.ndarray:
    # (ln N + ln p) / ln 2 is exactly 0 for identical rows (ln p = -ln N exactly there); the minimum with
    # log2 N removes the last-ulp excess that division by ln 2 could create.
    return np.minimum((math.log(n_cols) + log_p) / _LN2, math.log2(n_cols))


def _lid_block(start, x, tib, *, counts: bool):
    """Per row of an LLR block: ``[ln p_true]`` or ``[ln p_true, n_greater, n_tied]`` (see :func:`lid`)."""
    diff = np.empty_like(x)
    mask = np.empty(x.shape, dtype=bool) if counts else None
    log_p, c = _scan_block(x, tib, start, "llr_matrix", diff, mask)
    return log_p[:, None] if c is None else np.column_stack([log_p, c[0], c[1]])


def lid(llr_matrix, true_index, *, chunk_rows: int | None = None, return_rank_counts: bool = False,
        client=None):
    """Local information disclosure per probe, in bits (Sterns et al., LID definition).

    ``LID_i = log2(N p_i)`` where ``p_i`` is the softmax posterior of the true speaker over the N
    enrolled speakers (flat prior), computed by log-sum-exp.

    Parameters
    ----------
    llr_matrix : array_like or dask.array of shape (n_probes, N)
        Calibrated LLRs in nats (any per-row constant cancels; e.g. ``w * znorm_rows(S) + b``).
    true_index : array_like of int, shape (n_probes,)
        Column of each probe's true speaker.
    chunk_rows : int, optional
        Rows per block (default about 2 MiB per temporary); results do not depend on it.
    return_rank_counts : bool
        Also return the :class:`~vpeval.metrics.identification.RankCounts` of the true speaker in the same
        scan (ranks of the LLRs, equal to the ranks of the scores for any strictly increasing score -> LLR
        map), ready for ``cmc``/``rank_histogram`` without a second pass.
    client : distributed.Client, optional
        Scan the row blocks on this Dask cluster (a NumPy matrix is scattered to it first; a dask array's
        blocks are computed on the workers); only per-row results come back. Results are identical to the
        scan without a client: every value is computed from its own row alone.

    Returns
    -------
    ndarray of shape (n_probes,), float64, bits
        (and a RankCounts when ``return_rank_counts``)
        ``LID_i <= log2 N``; 0 for a row of identical LLRs; ``-inf`` when the true speaker's posterior is
        exactly 0 (its LLR is ``-inf`` or another speaker's is ``+inf``).

    Raises
    ------
    InvalidScoresError
        Not 2-D, empty, NaN anywhere, a row that is all ``-inf`` or holds two or more ``+inf`` (posterior
        undefined), ``true_index`` of the wrong length or out of range.

    Examples
    --------
    >>> lid(2 * znorm_rows([[0.8, 0.2, 0.1, 0.3]]), [0]).round(6).tolist()
    [1.899352]
    >>> lid([[1000.0, 0.0, -5.0], [np.inf, 0.0, -5.0]], [0, 0]).round(6).tolist()
    [1.584963, 1.584963]
    """
    arr, n, n_cols = _as_matrix(llr_matrix, "llr_matrix")
    ti = _as_true_index(true_index, n, n_cols)
    rows = _chunk_rows(n_cols, chunk_rows)
    if client is not None:
        per_row = _map_rows(_on_cluster(arr, n, n_cols, rows, client), n, rows,
                            partial(_lid_block, counts=bool(return_rank_counts)), ti)
        values = _lid_from_log_p(per_row[:, 0], n_cols)
        if return_rank_counts:
            return values, RankCounts(per_row[:, 1].astype(np.intp), per_row[:, 2].astype(np.intp), n_cols)
        return values
    out = np.empty(n, dtype=np.float64)
    diff = np.empty((min(rows, n), n_cols))
    mask = np.empty((min(rows, n), n_cols), dtype=bool) if return_rank_counts else None
    n_greater = np.empty(n, dtype=np.intp) if return_rank_counts else None
    n_tied = np.empty(n, dtype=np.intp) if return_rank_counts else None
    for start, x in _iter_blocks(arr, n, rows):
        r = x.shape[0]
        out[start : start + r], counts = _scan_block(x, ti[start : start + r], start, "llr_matrix", diff, mask)
        if counts is not None:
            n_greater[start : start + r], n_tied[start : start + r] = counts
    values = _lid_from_log_p(out, n_cols)
    if return_rank_counts:
        return values, RankCounts(n_greater, n_tied, n_cols)
    return values


# --------------------------------------------------------------------------------------------------------
# Summary
# --------------------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------------------
# Pipeline: z-norm -> logistic calibration -> LID
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LIDPipelineResult:
    """Result of :func:`lid_pipeline`.

    Attributes
    ----------
    lid : ndarray of shape (n_probes,)
        Per-probe LID of the evaluation matrix (bits).
    summary : LIDSummary
    p_true : ndarray of shape (n_probes,)
        Posterior of the true speaker (``2**lid / N``); compare with the chance line 1/N.
    slope, intercept : ndarray of shape (n_fits,)
        Fitted calibration ``LLR = slope * z + intercept`` (nats per z-unit, nats); one entry with a
        development set, one per fold with cross-fitting. The intercept does not affect LID.
    regularized : ndarray of bool, shape (n_fits,)
        True where the training scores were separable and the L2 penalty (``separable="regularize"``) was
        used.
    mode : {"dev", "cross-fit"}
    n_folds : int
        1 in ``"dev"`` mode.
    fold : ndarray of int, shape (n_probes,) or None
        Cross-fitting fold of each probe (the calibration its LLRs used); None in ``"dev"`` mode.
    calibration : str
        One sentence saying how the calibration was obtained (for reports).
    regularization : float or None
        The penalty weight used where ``regularized`` is true; None when every fit is unpenalised.
    rank_counts : RankCounts
        Ranks of the true speaker in the raw evaluation scores, from the same scan (for ``cmc`` etc.).
    strict_znorm : bool
        Cross-fitting only: True when each training row was z-normalised over the training folds' columns
        only (:func:`lid_pipeline`).
    """

    lid: np.ndarray = field(repr=False)
    summary: LIDSummary
    p_true: np.ndarray = field(repr=False)
    slope: np.ndarray
    intercept: np.ndarray
    regularized: np.ndarray
    mode: str
    n_folds: int
    fold: np.ndarray | None = field(repr=False)
    calibration: str
    regularization: float | None = None
    rank_counts: RankCounts | None = field(default=None, repr=False)
    strict_znorm: bool = False

    def to_dict(self) -> dict:
        return {
            "mode": self.mode,
            "strict_znorm": self.strict_znorm,
            "regularization": self.regularization,
            "calibration": self.calibration,
            "n_folds": self.n_folds,
            "slope": self.slope.tolist(),
            "intercept": self.intercept.tolist(),
            "regularized": self.regularized.tolist(),
            "summary": self.summary.to_dict(),
        }


def _fit_calibration(row_map, separable, regularization, context, theta0=None):
    """Logistic calibration ``LLR = w z + b`` fitted by streaming Newton passes over training blocks.

    ``row_map(fn)`` applies ``fn(z, rows, true_col, keep) -> (k, m)`` to every block of training rows and
    stacks the results in row order (see :func:`_training_blocks`): ``z`` the z-scores of a block of training
    rows (k, N), ``true_col`` each row's true-speaker column, and ``keep`` the (k, N) mask of its non-target
    entries; the blocks are scanned here or, for a matrix on a Dask cluster, on its workers. The objective
    is exactly that of :class:`vpeval.calibration.LogisticCalibrator` (unpenalised maximum likelihood with the
    training prior log-odds removed; with ``separable="regularize"`` on separable data, its named ridge on the
    standardised slope), but no pass holds more than one block. Every sum is formed per row first and then
    over all rows in row order, so the result does not depend on the block size. Returns ``(w, b,
    regularised)``.
    """

    def row_sums(fn):
        """Sum over all training rows of per-row sums ``fn(z, rows, t, keep) -> (k, m)``, block by block."""
        per_row = row_map(fn)
        return None if per_row is None else per_row.sum(axis=0)

    def moments(z, rows, t, keep):
        zt = z[rows, t]
        zn = np.where(keep, z, 0.0)
        return np.column_stack([np.ones_like(zt), keep.sum(axis=1), zt + zn.sum(axis=1),
                                zt * zt + (zn * zn).sum(axis=1)])

    def extremes(z, rows, t, keep):
        zt = z[rows, t]
        return np.column_stack([zt, zt, np.where(keep, z, np.inf).min(axis=1),
                                np.where(keep, z, -np.inf).max(axis=1)])

    n_t, n_n, s1, s2 = row_sums(moments)
    n_t, n_n = int(n_t), int(n_n)
    ext = row_map(extremes)
    t_min, t_max = float(ext[:, 0].min()), float(ext[:, 1].max())
    n_min, n_max = float(ext[:, 2].min()), float(ext[:, 3].max())
    if n_t == 0 or n_n == 0:
        raise InvalidScoresError(f"{context}: the calibration needs target and non-target training trials")
    if t_min == t_max == n_min == n_max:
        raise InvalidScoresError(f"{context}: all training z-scores are equal; the slope is not identifiable")
    lam = None
    if t_min >= n_max or t_max <= n_min:
        if separable == "error":
            raise SeparableScoresError(
                f"{context}: the z-normalised target and non-target training scores are separable (targets in "
                f"[{t_min:.6g}, {t_max:.6g}], non-targets in [{n_min:.6g}, {n_max:.6g}]), so the unpenalised "
                "logistic calibration has no finite slope and LID is undefined. This is expected for "
                "unanonymized speech; pass separable='regularize' (CLI: --separable regularize) to fit with "
                f"LogisticCalibrator(regularization={regularization:g}) instead (LIDs then depend on it)."
            )
        lam = float(regularization)
    n = n_t + n_n
    plo = math.log(n_t) - math.log(n_n)  # training prior log-odds, removed from the fitted LLRs
    mu = s1 / n
    sd = math.sqrt(max(s2 / n - mu * mu, 0.0)) or 1.0

    def evaluate(theta):
        """Mean loss, gradient and Hessian in (slope on standardised z, intercept)."""
        a, c = theta

        def terms(z, rows, t, keep):
            u = (z - mu) / sd
            eta = a * u + c + plo
            sign = np.where(keep, 1.0, 0.0)
            sign[rows, t] = -1.0  # targets: loss softplus(-eta); non-targets: softplus(eta); others: none
            w = np.abs(sign)
            loss = np.logaddexp(0.0, sign * eta) * w
            r = sign * expit(sign * eta)  # d loss / d eta (0 where w = 0)
            q = expit(eta) * expit(-eta) * w  # d2 loss / d eta2
            return np.column_stack([loss.sum(axis=1), (r * u).sum(axis=1), r.sum(axis=1),
                                    (q * u * u).sum(axis=1), (q * u).sum(axis=1), q.sum(axis=1)])

        f, ga, gc, haa, hac, hcc = row_sums(terms) / n
        g = np.array([ga, gc])
        h = np.array([[haa, hac], [hac, hcc]])
        return add_slope_ridge(f, g, h, lam, a), g, h

    theta, _ = newton_minimize(evaluate, theta0)
    a, c = theta
    return a / sd, c - a * mu / sd, lam is not None


def _training_block(start, x, t, ok, col_ok, cols, name, strict_znorm):
    """``(z, true_col, keep)`` of the training rows (``ok``) of one block, or None (see _training_blocks)."""
    if not ok.any():
        return None
    if strict_znorm:
        xs = np.asarray(x)[ok]
        z = np.zeros_like(xs, dtype=np.float64)
        z[:, cols] = _znorm_block(xs[:, cols], start, f"{name} (training columns only)")
    else:
        z = _znorm_block(x, start, name)[ok]
    t = t[ok]
    keep = np.broadcast_to(col_ok, z.shape).copy()
    keep[np.arange(z.shape[0]), t] = False
    return z, t, keep


def _training_blocks(arr, ti, n, n_cols, rows, row_ok, col_ok, name, strict_znorm=False):
    """The ``row_map`` of :func:`_fit_calibration` over the training rows, one row block at a time (rows
    z-normalised on the fly, so nothing but one block is ever held), here or on the cluster holding ``arr``.

    Training rows: ``row_ok``; non-targets (``keep``): columns with ``col_ok`` other than the true speaker's
    (the true speaker's column is always the target of a training row). Each row is z-normalised over all
    its columns, or with ``strict_znorm`` over the ``col_ok`` columns only (the others are then set to 0 and
    never used: they are not in ``keep``).
    """
    if not row_ok.any():
        raise InvalidScoresError(f"{name}: no training probes")
    if int(((col_ok.sum() - col_ok[ti]) * row_ok).sum()) == 0:
        raise InvalidScoresError(f"{name}: no non-target trials to fit the calibration")
    cols = np.flatnonzero(col_ok)

    def row_map(fn):
        def block_fn(start, x, t, ok):
            b = _training_block(start, x, t, ok, col_ok, cols, name, strict_znorm)
            return None if b is None else fn(b[0], np.arange(b[0].shape[0]), b[1], b[2])

        return _map_rows(arr, n, rows, block_fn, ti, row_ok)

    return row_map


# --------------------------------------------------------------------------------------------------------
# One-scan calibration: binned moments of the training z-scores
# --------------------------------------------------------------------------------------------------------

#: Bin width of the moment histograms (z units; a power of two, so ``z / h`` is exact).
_BIN_WIDTH = 2.0 ** -9
#: Moments ``sum ((z - centre) / h)**j``, j = 0 .. _N_MOMENTS - 1, kept per bin.
_N_MOMENTS = 5
#: Fitted parameters are taken from the histograms only when the bound on their truncation error is below
#: this (relative to the standardised slope); otherwise the exact streaming fit is run (see _fit_binned).
_BINNED_TOL = 1e-11
#: Most bins (all groups) a histogram may hold (5 moments x 8 bytes each: 80 MiB); a z range too wide for it
#: (e.g. rows with one score far from the rest, |z| up to sqrt(N)) makes the fit stream exactly instead.
_MAX_BINS = 2**21


def _canonical_rows(n_cols: int) -> int:
    """Rows per histogram chunk (about 2**21 scores): the partition that fixes every sum's order."""
    return max(1, -(-(2**21) // n_cols))


def _sigmoid_derivative_terms(n_max: int) -> list:
    """``d^n sigmoid / d eta^n`` for n = 0..n_max as {(a, b): coef} meaning sum coef s**a t**b, with
    ``s = sigmoid(eta)``, ``t = sigmoid(-eta)`` (from ``s' = s t``, ``t' = -s t``)."""
    terms = [{(1, 0): 1.0}]
    for _ in range(n_max):
        nxt: dict = {}
        for (a, b), c in terms[-1].items():
            if a:
                nxt[(a, b + 1)] = nxt.get((a, b + 1), 0.0) + a * c
            if b:
                nxt[(a + 1, b)] = nxt.get((a + 1, b), 0.0) - b * c
        terms.append({k: v for k, v in nxt.items() if v != 0.0})
    return terms


_SIG_TERMS = _sigmoid_derivative_terms(12)


def _sigmoid_derivatives(eta: np.ndarray, n_max: int) -> list:
    s, t = expit(eta), expit(-eta)
    out = []
    for terms in _SIG_TERMS[: n_max + 1]:
        acc = np.zeros_like(eta)
        for (a, b), c in terms.items():
            acc += c * s**a * t**b
        out.append(acc)
    return out


_SIG_SUP: dict = {}


def _sigmoid_ratio_sup(n: int) -> float:
    """An upper bound of ``sup |sigmoid^(n)(eta)| / (s t)`` over all eta, n >= 1 (``s t = sigmoid'``).

    For n >= 1 every term of :data:`_SIG_TERMS` has a >= 1 and b >= 1, so ``sigmoid^(n) = s t P(s)`` with
    ``P(s) = sum c s**(a-1) (1-s)**(b-1)``; its maximum on a grid of 10**6 + 1 points of [0, 1], plus the
    grid spacing times a bound of ``|P'|`` (degree times the sum of |c| times 2**degree), bounds ``|P|``."""
    if n not in _SIG_SUP:
        s = np.linspace(0.0, 1.0, 10**6 + 1)
        t = 1.0 - s
        terms = _SIG_TERMS[n]
        poly = sum(c * s ** (a - 1) * t ** (b - 1) for (a, b), c in terms.items())
        degree = max(a + b - 2 for a, b in terms)
        slack = 1e-6 * degree * sum(abs(c) for c in terms.values()) * 2.0**degree
        _SIG_SUP[n] = float(np.max(np.abs(poly))) + slack
    return _SIG_SUP[n]


_BUFFERS = threading.local()


def _buffers(size: int):
    """Per-thread scratch arrays of ``size`` elements (float64 x3, int64), reused from chunk to chunk so
    that their pages are not faulted in again for every chunk (about 64 MiB for a chunk of 2**21 scores;
    released by :func:`_moment_histogram` at the end of the scan in its thread; a worker thread of a
    cluster keeps its own between tasks)."""
    got = getattr(_BUFFERS, "arrays", None)
    if got is None or got[0].size < size:
        got = (np.empty(size), np.empty(size), np.empty(size), np.empty(size, np.int64))
        _BUFFERS.arrays = got
    return tuple(a[:size] for a in got)


def _bin_chunk(x, t, rgrp, cgrp, n_rgrp: int, n_cgrp: int, name: str = "scores", start: int = 0,
               use_jit: bool = False):
    """Moment histogram of one canonical chunk of score rows ``x``, z-normalised here (:func:`_znorm_block`).

    Each z-score falls in bin ``k = floor(z / h)`` of centre ``h (k + 1/2)``; ``d = z / h - k - 1/2`` in
    [-1/2, 1/2). Group of a non-target score: ``rgrp[row] * n_cgrp + cgrp[col]``; of the target score of a
    row: ``n_rgrp * n_cgrp + rgrp[row]``. Returns ``(k_lo, hist, t_lo, t_hi)`` with ``hist[j, g, k - k_lo] =
    sum d**j`` and the exact extremes of the target z-scores per row group (+-inf where none); None when
    the bins would be more than :data:`_MAX_BINS`. The z-norm runs on sub-blocks that stay in the CPU cache.
    With ``use_jit`` and numba installed, the binning is one compiled loop
    (:mod:`vpeval.metrics.moment_kernel`); otherwise elementwise NumPy passes and five ``np.bincount`` over
    the whole chunk in row-major order. Both give bit-identical sums.
    """
    n_rows, n_cols = x.shape
    kernel = compiled_accumulate() if use_jit else None
    kf, d, p, idx = (a.reshape(n_rows, n_cols) for a in _buffers(n_rows * n_cols))
    sub = max(1, 2**18 // n_cols)
    zt = np.empty(n_rows)
    z_lo, z_hi = math.inf, -math.inf
    for s in range(0, n_rows, sub):
        e = min(n_rows, s + sub)
        z = _znorm_block(x[s:e], start + s, name, out=d[s:e])
        zt[s:e] = z[np.arange(e - s), t[s:e]]
        z_lo, z_hi = min(z_lo, float(z.min())), max(z_hi, float(z.max()))
        if kernel is not None:
            continue  # z stays in d, binned below in one compiled pass
        z *= 1.0 / _BIN_WIDTH
        np.floor(z, out=kf[s:e])
        z -= kf[s:e]
        z -= 0.5
    # floor(z / h) is non-decreasing in z, so the extreme bins are those of the extreme z-scores
    k_lo = math.floor(z_lo * (1.0 / _BIN_WIDTH))
    span = math.floor(z_hi * (1.0 / _BIN_WIDTH)) - k_lo + 1
    n_groups = n_rgrp * n_cgrp + n_rgrp
    if span * n_groups > _MAX_BINS:
        return None
    rgrp = np.asarray(rgrp, dtype=np.int64)
    row_off = rgrp * (n_cgrp * span) - k_lo
    col_off = np.ascontiguousarray(cgrp, dtype=np.int64) * span
    tgt_off = (n_rgrp * n_cgrp + rgrp) * span - k_lo
    if kernel is not None:
        hist = np.zeros((_N_MOMENTS, n_groups * span))
        kernel(d, np.ascontiguousarray(t, dtype=np.int64), row_off, col_off, tgt_off, 1.0 / _BIN_WIDTH, hist)
    else:
        # flat bin index, computed in float64 (exact: integers below 2**53) on cached sub-blocks
        row_off_f, col_off_f, tgt_off_f = row_off.astype(np.float64), col_off.astype(np.float64), tgt_off
        for s in range(0, n_rows, sub):
            e = min(n_rows, s + sub)
            r = np.arange(e - s)
            blk = kf[s:e]
            kt = blk[r, t[s:e]]
            blk += row_off_f[s:e, None]
            blk += col_off_f[None, :]
            blk[r, t[s:e]] = kt + tgt_off_f[s:e]
            idx[s:e] = blk
        flat, dd, pp = idx.ravel(), d.ravel(), p.ravel()
        hist = np.empty((_N_MOMENTS, n_groups * span))
        pp.fill(1.0)  # counts as float sums of ones, as the compiled loop adds them
        hist[0] = np.bincount(flat, weights=pp, minlength=n_groups * span)
        for j in range(1, _N_MOMENTS):
            if j == 1:
                w = dd
            else:
                np.multiply(dd if j == 2 else pp, dd, out=pp)
                w = pp
            hist[j] = np.bincount(flat, weights=w, minlength=n_groups * span)
    t_lo, t_hi = np.full(n_rgrp, np.inf), np.full(n_rgrp, -np.inf)
    np.minimum.at(t_lo, rgrp, zt)
    np.maximum.at(t_hi, rgrp, zt)
    return k_lo, hist.reshape(_N_MOMENTS, n_groups, span), t_lo, t_hi


class _MomentHistogram:
    """Sum of chunk histograms over a common bin range, added in chunk order (so the sums are fixed)."""

    def __init__(self, n_rgrp: int, n_cgrp: int):
        self.n_rgrp, self.n_cgrp = n_rgrp, n_cgrp
        self.k_lo, self.hist = None, None
        self.t_lo, self.t_hi = np.full(n_rgrp, np.inf), np.full(n_rgrp, -np.inf)

    def add(self, part):
        """Add one chunk's :func:`_bin_chunk` result; False (and nothing kept) when the range grows too wide."""
        if part is None or self.hist is False:
            self.hist = False
            return False
        k_lo, hist, t_lo, t_hi = part
        np.minimum(self.t_lo, t_lo, out=self.t_lo)
        np.maximum(self.t_hi, t_hi, out=self.t_hi)
        if self.hist is None:
            self.k_lo, self.hist = k_lo, hist.copy()
            return True
        lo = min(self.k_lo, k_lo)
        hi = max(self.k_lo + self.hist.shape[2], k_lo + hist.shape[2])
        if (hi - lo) * hist.shape[1] > _MAX_BINS:
            self.hist = False
            return False
        if lo < self.k_lo or hi > self.k_lo + self.hist.shape[2]:
            grown = np.zeros(self.hist.shape[:2] + (hi - lo,))
            grown[:, :, self.k_lo - lo : self.k_lo - lo + self.hist.shape[2]] = self.hist
            self.k_lo, self.hist = lo, grown
        self.hist[:, :, k_lo - self.k_lo : k_lo - self.k_lo + hist.shape[2]] += hist
        return True


def _histogram_piece(start, x, t, rgrp, *, cgrp, n_rgrp, n_cgrp, chunk, n_rows, name, use_jit=False):
    """One scanned piece: one histogram per canonical chunk it holds whole, and the raw rows of the chunks
    it holds only in part (completed by the caller, which bins them the same way)."""
    out = []
    s = 0
    while s < x.shape[0]:
        c = (start + s) // chunk
        e = min(x.shape[0], (c + 1) * chunk - start)
        whole = start + s == c * chunk and start + e == min((c + 1) * chunk, n_rows)
        if whole:
            out.append((c, True, _bin_chunk(x[s:e], t[s:e], rgrp[s:e], cgrp, n_rgrp, n_cgrp, name, start + s,
                                             use_jit)))
        else:
            _znorm_block(x[s:e], start + s, name)  # errors are raised where the rows are
            out.append((c, False, (start + s, np.array(x[s:e], dtype=np.float64), t[s:e].copy(), rgrp[s:e].copy())))
        s = e
    return out


def _moment_histogram(arr, ti, n, n_cols, rows, rgrp, cgrp, n_rgrp, n_cgrp, name) -> _MomentHistogram | None:
    """One scan: the moment histogram of every (row group, column group) of non-target scores and of every
    row group's target scores. Sums are taken per canonical chunk of :func:`_canonical_rows` rows and the
    chunks added in row order, whatever the scanned pieces (block size, cluster blocks, dask chunks). None
    when the z range needs more than :data:`_MAX_BINS` bins (the caller then fits by streaming)."""
    chunk = _canonical_rows(n_cols)
    use_jit = n * n_cols >= JIT_MIN_SCORES  # same sums either way (see vpeval.metrics.moment_kernel)
    fn = partial(_histogram_piece, cgrp=cgrp, n_rgrp=n_rgrp, n_cgrp=n_cgrp, chunk=chunk, n_rows=n, name=name,
                 use_jit=use_jit)
    # pieces aligned with the canonical chunks when the matrix is scanned here
    piece_rows = chunk if not isinstance(arr, _ClusterMatrix) else rows
    acc = _MomentHistogram(n_rgrp, n_cgrp)
    pending: list = []
    pending_id = None

    def flush():
        if pending:
            x = np.concatenate([p[1] for p in pending])
            acc.add(_bin_chunk(x, np.concatenate([p[2] for p in pending]), np.concatenate([p[3] for p in pending]),
                               cgrp, n_rgrp, n_cgrp, name, pending[0][0], use_jit))
            pending.clear()

    for parts in _map_pieces(arr, n, piece_rows, fn, ti, rgrp):
        for c, whole, payload in parts:
            if c != pending_id:
                flush()
                pending_id = c
            if whole:
                acc.add(payload)
            else:
                pending.append(payload)
    flush()
    _BUFFERS.arrays = None  # this thread's scratch arrays are not kept past the scan
    return acc if acc.hist is not False else None


def _fit_binned(acc: _MomentHistogram, nt_groups, t_groups, separable, regularization, context, exact_fit):
    """Logistic calibration of :func:`_fit_calibration` from the moment histograms of its training scores.

    Every sum over training scores that Newton's method needs, ``sum phi(alpha z + beta) z**m`` with ``phi`` the
    softplus, the sigmoid or its derivative and m <= 2, is expanded around each bin centre ``c``
    (``z = c + h d``, ``|d| <= 1/2``, ``eta_c = alpha c + beta``, ``e = |alpha| h / 2``)::

        phi(eta_c + alpha h d) = sum_{j <= J_m} phi^(j)(eta_c) (alpha h)**j d**j / j! + R,   J_m = 4 - m,

    and ``z**m`` is expanded exactly, so the stored moments ``sum d**j`` (j <= 4) give each sum up to the
    remainders. For the two gradient sums (``phi`` = sigmoid up to sign, m = 0, 1; remainder orders k = 5, 4)::

        |R| <= K_k max_bin(s t) e**k / k!,   max_bin(s t) <= s(eta_c) t(eta_c) exp(e),

    where ``sigmoid^(k) = s t P_k(s)`` (s = sigmoid, t = 1 - s) and ``K_k >= sup |P_k|`` on [0, 1]
    (:func:`_sigmoid_ratio_sup`); the second inequality holds because ``|d ln(s t) / d eta| <= 1``. Summed
    over each bin (times ``|z| <= |c| + h/2`` for m = 1) this bounds the gradient error ``g_err`` at the
    solution. The parameters are accepted when ``||H^-1|| ||g_err||`` (H the Hessian of the mean loss) is
    below ``1e-11 |a|`` (a the standardised slope), so they equal the exact fit to about 1e-11 relative
    (rounding of the float64 sums aside). Otherwise, and whenever the bins cannot decide separability
    (extreme target and non-target scores in one bin), ``exact_fit(theta0)`` runs the exact streaming
    Newton passes, started from the binned solution. Returns ``(w, b, regularised, exact_used)``.
    """
    if acc is None:  # z range too wide for the bins
        return (*exact_fit(None), True)
    h = _BIN_WIDTH
    nt = acc.hist[:, nt_groups].sum(axis=1)
    tg = acc.hist[:, t_groups].sum(axis=1)
    n_n, n_t = int(round(nt[0].sum())), int(round(tg[0].sum()))
    if n_t == 0 or n_n == 0:
        raise InvalidScoresError(f"{context}: the calibration needs target and non-target training trials")
    t_min = float(acc.t_lo[[g - acc.n_rgrp * acc.n_cgrp for g in t_groups]].min())
    t_max = float(acc.t_hi[[g - acc.n_rgrp * acc.n_cgrp for g in t_groups]].max())
    occupied = np.flatnonzero(nt[0] > 0)
    n_lo_edge = h * (acc.k_lo + occupied[0])  # n_min in [n_lo_edge, n_lo_edge + h)
    n_hi_edge = h * (acc.k_lo + occupied[-1] + 1)  # n_max in [n_hi_edge - h, n_hi_edge)
    sep_up = t_min >= n_hi_edge  # certainly t_min >= n_max
    sep_down = t_max <= n_lo_edge  # certainly t_max <= n_min
    undecided = (not sep_up and t_min >= n_hi_edge - h) or (not sep_down and t_max < n_lo_edge + h)
    separable_data = sep_up or sep_down
    if undecided or (separable_data and separable == "error"):
        return (*exact_fit(None), True)
    lam = float(regularization) if separable_data else None

    centre = {}
    moments = {}
    for cls, hst in (("n", nt), ("t", tg)):
        keep = hst[0] > 0
        centre[cls] = h * (acc.k_lo + np.flatnonzero(keep) + 0.5)
        moments[cls] = hst[:, keep]
    n = n_t + n_n
    plo = math.log(n_t) - math.log(n_n)

    # A[m][j] = sum over each bin of z**m d**j / j! h**j ... precisely: sum_l C(m,l) c**(m-l) h**l M_{j+l}
    def power_sums(cls, m):
        c, mom = centre[cls], moments[cls]
        n_j = _N_MOMENTS - m
        return np.array([sum(math.comb(m, l) * c ** (m - l) * h**l * mom[j + l] for l in range(m + 1))
                         for j in range(n_j)])

    A = {cls: [power_sums(cls, m) for m in range(3)] for cls in ("n", "t")}
    s1 = float(A["n"][1][0].sum() + A["t"][1][0].sum())
    s2 = float(A["n"][2][0].sum() + A["t"][2][0].sum())
    mu = s1 / n
    sd = math.sqrt(max(s2 / n - mu * mu, 0.0)) or 1.0
    fact = [float(math.factorial(j)) for j in range(_N_MOMENTS + 1)]

    def series(derivs, a_m, step):
        """sum over bins and j of derivs[j] * a_m[j] * step**j / j!"""
        total = 0.0
        for j in range(a_m.shape[0]):
            total += float(np.dot(derivs[j], a_m[j])) * step**j / fact[j]
        return total

    def evaluate(theta):
        a, c = theta
        alpha = a / sd
        beta = c + plo - a * mu / sd
        step = alpha * h
        sums = np.zeros(6)  # loss, R0, R1, Q0, Q1, Q2
        for cls in ("n", "t"):
            eta = alpha * centre[cls] + beta
            D = _sigmoid_derivatives(eta, _N_MOMENTS)
            if cls == "n":
                loss = [np.logaddexp(0.0, eta)] + D[: _N_MOMENTS - 1]
                r = D[:_N_MOMENTS]
            else:
                tneg = expit(-eta)
                loss = [np.logaddexp(0.0, -eta), -tneg] + D[1 : _N_MOMENTS - 1]
                r = [-tneg] + D[1:_N_MOMENTS]
            q = D[1 : _N_MOMENTS + 1]
            am = A[cls]
            sums += [series(loss, am[0], step), series(r, am[0], step), series(r, am[1], step),
                     series(q, am[0], step), series(q, am[1], step), series(q, am[2], step)]
        f, r0, r1, q0, q1, q2 = sums / n
        g = np.array([(r1 - mu * r0) / sd, r0])
        haa = (q2 - 2 * mu * q1 + mu * mu * q0) / (sd * sd)
        hac = (q1 - mu * q0) / sd
        hm = np.array([[haa, hac], [hac, q0]])
        return add_slope_ridge(f, g, hm, lam, a), g, hm

    theta, _ = newton_minimize(evaluate)
    a, c = theta
    # truncation bound of the gradient (see docstring): per bin, |remainder of sigmoid at order k| <=
    # K_k max_bin(s t) e**k / k!, with max over the bin of s t <= (s t)(centre) exp(e) (|d ln(s t)/d eta| <= 1)
    e = abs(a / sd) * h / 2
    alpha, beta = a / sd, c + plo - a * mu / sd
    k0, k1 = _N_MOMENTS, _N_MOMENTS - 1  # remainder orders of the sums of r and of r z
    err_r0 = err_r1 = 0.0
    for cls in ("n", "t"):
        eta = alpha * centre[cls] + beta
        st = expit(eta) * expit(-eta) * math.exp(e)
        count = moments[cls][0]
        err_r0 += float(np.dot(st, count)) * _sigmoid_ratio_sup(k0) * e**k0 / fact[k0]
        err_r1 += float(np.dot(st, count * (np.abs(centre[cls]) + h / 2))) * _sigmoid_ratio_sup(k1) * e**k1 / fact[k1]
    err_g = np.array([(err_r1 + abs(mu) * err_r0) / sd, err_r0]) / n
    _, _, hm = evaluate(theta)
    try:
        bound = float(np.linalg.norm(np.linalg.inv(hm), 2) * np.linalg.norm(err_g))
    except np.linalg.LinAlgError:
        bound = math.inf
    if not (bound <= _BINNED_TOL * abs(a)):
        w, b, reg = exact_fit(theta)
        return w, b, reg, True
    return a / sd, c - a * mu / sd, lam is not None, False


def _eval_block(start, x, tib, fb, *, slopes, intercepts):
    """Per evaluation row: ``[ln p_true, n_greater, n_tied]`` (z-norm, LLR with the row's calibration, LID
    scan; ranks of the raw scores). Counts are exact in float64 (below 2**53)."""
    r = x.shape[0]
    diff = np.empty_like(x)
    mask = np.empty(x.shape, dtype=bool)
    z = _znorm_block(x, start, "eval_scores")  # also rejects NaN and inf
    # Ranks of the raw scores, in the same pass (the calibration cannot change them, rounding aside).
    t_raw = x[np.arange(r), tib]
    np.subtract(x, t_raw[:, None], out=diff)
    g, e = _rank_block(x, t_raw, diff, mask, start, "eval_scores")
    if slopes.size == 1:
        z *= slopes[0]
        z += intercepts[0]
    else:
        z *= slopes[fb][:, None]
        z += intercepts[fb][:, None]
    log_p, _ = _scan_block(z, tib, start, "LLRs", diff)
    return np.column_stack([log_p, g, e])


def _speaker_folds(present: np.ndarray, n_folds: int, speaker_ids, seed: int) -> dict:
    """Map each present speaker column to a fold, independent of column order when ids are given."""
    if speaker_ids is not None:
        keys = [str(speaker_ids[c]) for c in present]
    else:
        keys = [f"{int(c):012d}" for c in present]
    order = sorted(range(len(present)), key=lambda i: keys[i])
    perm = np.random.default_rng(seed).permutation(len(present))
    return {int(present[order[p]]): int(i % n_folds) for i, p in enumerate(perm)}


def lid_pipeline(
    dev_scores,
    eval_scores,
    dev_true_index=None,
    eval_true_index=None,
    *,
    n_folds: int = 5,
    speaker_ids=None,
    separable: str = "error",
    regularization: float = DEFAULT_REGULARIZATION,
    seed: int = 0,
    chunk_rows: int | None = None,
    strict_znorm: bool = False,
    client=None,
) -> LIDPipelineResult:
    """Whole LID chain of Sterns et al.: z-norm, logistic calibration fitted on dev, softmax, LID.

    1. Every row of both matrices is z-normalised (:func:`znorm_rows`, sample std).
    2. A logistic calibration ``LLR = w z + b`` (nats) is fitted on the development matrix: targets are
       the true-speaker entries, non-targets all others; unpenalised maximum likelihood with the training
       prior log-odds removed (:class:`vpeval.calibration.logistic.LogisticCalibrator`).
    3. The evaluation LLR matrix gives per-probe LIDs (:func:`lid`) and their summary.

    Without a development set (``dev_scores=None``), **speaker-grouped cross-fitting**: the evaluation
    probes' true speakers are dealt into ``n_folds`` folds; the probes of each fold get LLRs from a
    calibration fitted on the probes of the other folds, with every trial against an enrolled speaker of
    the held-out fold also left out of the fit. So no speaker is ever calibrated on its own trials.

    What still crosses the folds (default, ``strict_znorm=False``): step 1 z-normalises each *training* row
    over all ``N`` columns, so the scores of that row against the held-out fold's enrolled speakers still
    enter the row's mean and standard deviation (though never the fit as trials). The held-out speakers thus
    shape the z-scores the calibration is fitted on, by an amount that shrinks as ``N`` grows (one fold holds
    about ``N / n_folds`` columns). The evaluation rows are always z-normalised over all ``N`` columns, as the
    LID definition requires. ``strict_znorm=True`` z-normalises each training row over the training folds'
    columns only (enrolled speakers without probes included), so nothing of the held-out fold enters the
    fit at all; the price is a small mismatch between training z-scores (about ``N (1 - 1/n_folds)``
    columns) and evaluation z-scores (``N`` columns). A development matrix (``dev_scores``) has neither issue.

    Parameters
    ----------
    dev_scores : array_like or dask.array of shape (n_dev, N_dev), or None
        Development score matrix (higher = more similar); ``None`` for cross-fitting.
    eval_scores : array_like or dask.array of shape (n_probes, N)
    dev_true_index, eval_true_index : array_like of int
        True-speaker columns of the dev and eval rows (``dev_true_index`` None iff ``dev_scores`` is).
    n_folds : int
        Folds for cross-fitting (at most the number of distinct eval speakers; at least 2 speakers).
    speaker_ids : sequence of str of length N, optional
        Enrolled speaker ids of the eval columns; makes the fold assignment independent of column order.
    separable : {"error", "regularize"}
        What to do when the training scores are perfectly separable (common for unanonymized speech: the
        maximum-likelihood slope is then infinite). ``"error"`` (default) raises
        :class:`~vpeval.errors.SeparableScoresError`; ``"regularize"`` refits that training set (only that
        one) with ``LogisticCalibrator(regularization=regularization)``, the ridge penalty
        ``regularization * (w * sd)**2 / 2`` on the standardised slope added to the prior-weighted mean
        logistic loss (intercept unpenalised), and flags the fit in ``regularized``. LIDs then depend on
        ``regularization`` (a smaller penalty gives a steeper slope and LIDs closer to log2 N for rank-1
        probes), so report it.
    regularization : float
        Penalty weight for ``separable="regularize"`` (default :data:`DEFAULT_REGULARIZATION` = 1e-3).
    seed : int
        Seed of the fold assignment.
    chunk_rows : int, optional
        Rows per block.
    strict_znorm : bool
        Cross-fitting only: z-normalise each training row over the training folds' columns only (see
        above). Ignored with a development matrix.
    client : distributed.Client, optional
        Run every scan (z-norm, the calibration's moment scan or streaming passes, LID and ranks) on this
        Dask cluster, one task per row block: NumPy matrices are scattered to the workers once (those smaller than
        ``vpeval.metrics.identification.CLUSTER_MIN_BYTES``, 64 MiB, are scanned here), dask arrays (e.g. a score
        matrix built from embeddings by :func:`vpeval.pipeline.cluster.score_matrix`) are computed there
        block by block, and only per-row results (a few numbers per probe) and the calibration's moment
        histograms come back. Results are identical to the run without a client: every per-row value depends
        on its own row only, and every sum over rows is formed per canonical chunk of rows (fixed by N, not by
        the blocks; a chunk cut by a block boundary is completed on the client) and the chunks are added on
        the client in row order in both cases.

    Returns
    -------
    LIDPipelineResult

    Raises
    ------
    InvalidScoresError
        Bad shapes, NaN/inf, constant rows, fewer than 2 distinct speakers for cross-fitting, bad options.
    SeparableScoresError
        Separable training scores with ``separable="error"``.

    Notes
    -----
    Cost: two scans of the evaluation matrix (one with a development matrix, plus one of it). The first
    z-normalises every row and adds its z-scores into moment histograms, one per (probe fold, enrolled
    speaker's fold) x (target, non-target): bin width ``h = 2**-9`` z-units, per bin the count and the sums
    of ``d**j`` (j = 1..4, ``d`` the offset from the bin centre in units of ``h``); with numba installed and
    at least :data:`JIT_MIN_SCORES` (2**26) scores, in one compiled loop, else with NumPy
    passes and ``np.bincount``, bit-identical either way. Each fold's training set
    is a sum of these histograms, and Newton's method runs on the bins alone (:func:`_fit_binned`: the loss,
    gradient and Hessian sums are Taylor series around each bin centre; their remainder is bounded and
    checked after convergence, so the parameters equal the exact full-data fit to about 1e-11 relative).
    The second scan applies each probe's fold calibration, the softmax and LID, and counts ranks. The exact
    streaming Newton passes over the matrix (about ten per fit, each recomputing the z-scores block by block)
    are still used where the bins cannot vouch for the result: with ``strict_znorm=True`` (each fold has its
    own z-scores), when the remainder bound is too loose (very steep slopes, e.g. a tiny ``regularization``
    on separable scores; they start from the binned solution), when the extreme target and non-target
    z-scores share a bin (separability is then decided exactly), and when the z range needs more than
    2**21 bins (a row with one score far from the rest). Either way the fit minimises exactly the
    objective of :class:`~vpeval.calibration.LogisticCalibrator`.

    Memory: every matrix is scanned in row blocks (about 2**21 scores at a time for the histograms), and the
    histograms hold at most 2**21 bins of 5 sums each, so extra memory stays bounded whatever the number of
    probes.
    """
    if separable not in ("error", "regularize"):
        raise InvalidScoresError(f"separable must be 'error' or 'regularize', got {separable!r}")
    if not (regularization > 0 and math.isfinite(regularization)):
        raise InvalidScoresError(f"regularization must be a positive number, got {regularization!r}")
    if eval_true_index is None:
        raise InvalidScoresError("eval_true_index is required")
    ev, n, n_cols = _as_matrix(eval_scores, "eval_scores")
    ti = _as_true_index(eval_true_index, n, n_cols)
    rows = _chunk_rows(n_cols, chunk_rows)
    ev = _on_cluster(ev, n, n_cols, rows, client)
    if speaker_ids is not None and len(speaker_ids) != n_cols:
        raise InvalidScoresError(f"speaker_ids: expected {n_cols} ids (one per column), got {len(speaker_ids)}")

    if dev_scores is not None:
        if dev_true_index is None:
            raise InvalidScoresError("dev_true_index is required with dev_scores")
        dv, n_dev, n_cols_dev = _as_matrix(dev_scores, "dev_scores")
        dti = _as_true_index(dev_true_index, n_dev, n_cols_dev)
        dv = _on_cluster(dv, n_dev, n_cols_dev, _chunk_rows(n_cols_dev, chunk_rows), client)
        blocks = _training_blocks(
            dv, dti, n_dev, n_cols_dev, _chunk_rows(n_cols_dev, chunk_rows),
            np.ones(n_dev, bool), np.ones(n_cols_dev, bool), "dev_scores",
        )
        if not _HISTOGRAM_FIT:
            w, b, reg = _fit_calibration(blocks, separable, regularization, "development matrix")
        else:
            acc = _moment_histogram(dv, dti, n_dev, n_cols_dev, _chunk_rows(n_cols_dev, chunk_rows),
                                    np.zeros(n_dev, np.int64), np.zeros(n_cols_dev, np.int64), 1, 1, "dev_scores")
            w, b, reg, _ = _fit_binned(
                acc, [0], [1], separable, regularization, "development matrix",
                lambda th: _fit_calibration(blocks, separable, regularization, "development matrix", th))
        slopes, intercepts, regs = np.array([w]), np.array([b]), np.array([reg])
        fold = None
        k_folds = 1
        mode = "dev"
        note = (
            f"logistic calibration fitted on a separate development matrix ({n_dev} probes x "
            f"{n_cols_dev} speakers)"
            + (f", L2-regularised (regularization={regularization:g}) because its scores are separable" if reg else "")
        )
    else:
        if dev_true_index is not None:
            raise InvalidScoresError("dev_true_index given without dev_scores")
        present = np.unique(ti)
        if present.size < 2:
            raise InvalidScoresError(
                "cross-fitting needs probes of at least 2 distinct speakers; give a development matrix"
            )
        if int(n_folds) < 2:
            raise InvalidScoresError(f"n_folds must be >= 2, got {n_folds}")
        k_folds = min(int(n_folds), present.size)
        spk_fold = _speaker_folds(present, k_folds, speaker_ids, seed)
        col_fold = np.full(n_cols, -1)
        for c, f in spk_fold.items():
            col_fold[c] = f
        fold = col_fold[ti]
        slopes, intercepts, regs = np.empty(k_folds), np.empty(k_folds), np.zeros(k_folds, bool)
        binned = _HISTOGRAM_FIT and not strict_znorm
        if binned:
            # one scan: moment histograms per (probe fold, enrolled-speaker fold or none) x (target, non-target)
            acc = _moment_histogram(ev, ti, n, n_cols, rows, fold.astype(np.int64), (col_fold + 1).astype(np.int64),
                                    k_folds, k_folds + 1, "eval_scores")
        for f in range(k_folds):
            blocks = _training_blocks(ev, ti, n, n_cols, rows, fold != f, col_fold != f, "eval_scores",
                                      strict_znorm=bool(strict_znorm))
            context = f"cross-fitting fold {f + 1} of {k_folds}"
            if binned:
                nt_groups = [r * (k_folds + 1) + c for r in range(k_folds) if r != f
                             for c in range(k_folds + 1) if c - 1 != f]
                t_groups = [k_folds * (k_folds + 1) + r for r in range(k_folds) if r != f]
                slopes[f], intercepts[f], regs[f], _ = _fit_binned(
                    acc, nt_groups, t_groups, separable, regularization, context,
                    partial(_fit_calibration, blocks, separable, regularization, context))
            else:
                slopes[f], intercepts[f], regs[f] = _fit_calibration(blocks, separable, regularization, context)
        mode = "cross-fit"
        note = (
            f"no development set: speaker-grouped cross-fitting with {k_folds} folds (each probe's "
            "calibration was fitted without any trial of its own speaker or of the other speakers in its "
            "fold; "
            + ("training rows z-normalised over the training folds' columns only, strict)" if strict_znorm else
               "their columns still enter the training rows' z-norm mean and standard deviation)")
            + (
                f"; {int(regs.sum())} fold(s) L2-regularised (regularization={regularization:g}) because separable"
                if regs.any()
                else ""
            )
        )

    per_row = _map_rows(ev, n, rows, partial(_eval_block, slopes=slopes, intercepts=intercepts), ti,
                        np.zeros(n, np.intp) if fold is None else fold)
    log_p = per_row[:, 0]
    n_greater, n_tied = per_row[:, 1].astype(np.intp), per_row[:, 2].astype(np.intp)
    values = _lid_from_log_p(log_p, n_cols)
    return LIDPipelineResult(
        lid=values,
        summary=lid_summary(values, n_cols),
        p_true=np.exp(log_p),
        slope=slopes,
        intercept=intercepts,
        regularized=regs,
        mode=mode,
        n_folds=k_folds,
        fold=fold,
        calibration=note,
        regularization=float(regularization) if regs.any() else None,
        rank_counts=RankCounts(n_greater, n_tied, n_cols),
        strict_znorm=bool(strict_znorm) and mode == "cross-fit",
    )


# --------------------------------------------------------------------------------------------------------
# Everything at once (CLI and report)
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LinkageAnalysis:
    """LID pipeline, closed-set identification and closed-set linkability of one evaluation matrix.

    Attributes
    ----------
    lid : LIDPipelineResult
    identification : vpeval.metrics.identification.IdentificationResult
    closed_set : vpeval.metrics.identification.ClosedSetLinkability
        For every candidate-set size N' = 1..N.
    n_probe_speakers : int or None
        Number of distinct enrolled speakers that are the true speaker of at least one evaluation probe (the
        other ``N - n_probe_speakers`` enrolled speakers are distractors); None when not known.
    """

    lid: LIDPipelineResult
    identification: object
    closed_set: object
    n_probe_speakers: int | None = None

    def to_dict(self) -> dict:
        return {
            "lid": self.lid.to_dict(),
            "identification": self.identification.to_dict(),
            "closed_set_linkability": self.closed_set.to_dict(),
        }


def linkage_analysis(
    eval_scores,
    eval_true_index,
    dev_scores=None,
    dev_true_index=None,
    *,
    ks=(1, 5, 10),
    ties: str = "fractional",
    chunk_rows: int | None = None,
    client=None,
    **pipeline_options,
) -> LinkageAnalysis:
    """Run :func:`lid_pipeline`, :func:`~vpeval.metrics.identification.identification_rates` and
    :func:`~vpeval.metrics.identification.closed_set_linkability` on one evaluation matrix.

    Ranks use the raw evaluation scores, counted in the pipeline's scan. Extra keyword
    arguments go to :func:`lid_pipeline` (``n_folds``, ``speaker_ids``, ``separable``, ``regularization``,
    ``seed``, ``strict_znorm``). With ``client`` (a ``distributed.Client``) every scan of the matrices runs
    on that Dask cluster (see :func:`lid_pipeline`); the results are identical. Raises what those functions
    raise.
    """
    from ..identification import closed_set_linkability, identification_rates

    lid_res = lid_pipeline(
        dev_scores, eval_scores, dev_true_index, eval_true_index, chunk_rows=chunk_rows, client=client,
        **pipeline_options
    )
    ident = identification_rates(lid_res.rank_counts, ks=ks, ties=ties)
    n_probe = int(np.unique(np.asarray(eval_true_index)).size)
    return LinkageAnalysis(lid_res, ident, closed_set_linkability(ident.gamma), n_probe_speakers=n_probe)
