"""Row z-norm, softmax posterior over the enrolled speakers, and LID per probe (Sterns et al.).

:func:`znorm_rows` (sample standard deviation, exact for any positive scale of a row),
:func:`softmax_posteriors` (log-sum-exp, +-inf handled) and :func:`lid` (``log2(N p_true)`` bits per probe,
optionally with the true speaker's rank counts from the same scan). The block kernels here
(:func:`_znorm_block`, :func:`_scan_block`, :func:`_lid_from_log_p`) are reused by the fitted pipeline
(:mod:`vpeval.metrics.linkage.pipeline`) and the moment histograms (:mod:`vpeval.metrics.linkage.histogram`).
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from ...errors import InvalidScoresError
from ...ranks import RankCounts, _rank_block, _recount_rows
from ...rowscan import _as_matrix, _as_true_index, _check_nan, _chunk_rows, _iter_blocks, _map_rows, _on_cluster

__all__ = ["znorm_rows", "softmax_posteriors", "lid"]

_LN2 = math.log(2.0)


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
