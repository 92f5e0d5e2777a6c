"""The whole LID chain (:func:`lid_pipeline`): z-norm, logistic calibration fitted on a development matrix
or speaker-grouped cross-fitting, softmax, LID, and the true speaker's ranks in the same scan."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from ...errors import InvalidScoresError
from ...ranks import RankCounts, _rank_block
from ...rowscan import _as_matrix, _as_true_index, _chunk_rows, _map_rows, _on_cluster
from .binned_fit import _fit_binned
from .histogram import _moment_histogram
from .posterior import _lid_from_log_p, _scan_block, _znorm_block
from .streaming_fit import _fit_calibration, _training_blocks
from .summary import LIDSummary, lid_summary

__all__ = ["DEFAULT_REGULARIZATION", "LIDPipelineResult", "lid_pipeline"]

#: Penalty weight of ``separable="regularize"``, passed to ``LogisticCalibrator(regularization=...)``.
DEFAULT_REGULARIZATION = 1e-3

#: False: every calibration fit streams Newton passes over the matrix (:func:`_fit_calibration`); True: one
#: scan into moment histograms, Newton on the bins (:func:`_fit_binned`, exact fallback when not provably
#: accurate). A module switch so that tests can compare the two.
_HISTOGRAM_FIT = True


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

    def probe_slopes(self, n_probes: int) -> np.ndarray:
        """The calibration slope (nats per z-unit) each of the ``n_probes`` evaluation probes' LLRs use: its fold's
        with cross-fitting, the one fit's with a development set; float64 of shape (n_probes,)."""
        return self.slope[np.zeros(n_probes, np.int64) if self.fold is None else np.asarray(self.fold)]

    def llr_rows(self, scores, start: int, stop: int) -> np.ndarray:
        """The chain's LLRs (nats) of rows ``start:stop`` of the evaluation matrix ``scores`` (shape (n_probes,
        N), the one this result came from): each row z-normalised and its fold's calibration applied,
        ``slope[f] * z + intercept[f]``; float64 of shape (stop - start, N)."""
        from .posterior import znorm_rows

        z = znorm_rows(np.asarray(scores[start:stop], dtype=np.float64))
        f = np.zeros(z.shape[0], np.int64) if self.fold is None else np.asarray(self.fold)[start:stop]
        return self.slope[f][:, None] * z + self.intercept[f][:, None]

    def llr_matrix(self, scores, rows: int = 4096) -> np.ndarray:
        """:meth:`llr_rows` of every row of ``scores``, computed in blocks of ``rows`` probes: float64 of the
        shape of ``scores``."""
        n = scores.shape[0]
        out = np.empty(scores.shape, dtype=np.float64)
        for a in range(0, n, rows):
            out[a:a + rows] = self.llr_rows(scores, a, min(a + rows, n))
        return out

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


def _speaker_folds(present: np.ndarray, n_folds: int, speaker_ids, seed: int, target=None, ti=None) -> dict:
    """Map each present speaker column to a fold: a seeded permutation of the speakers in a canonical order.

    The canonical order is by content: the SHA-256 of the speaker's sorted target scores (``target[r]`` the
    score of row ``r`` against its own column ``ti[r]``), so the folds, and every LID, do not depend on the
    speakers' or probes' names nor on the row and column order (renaming one speaker used to move the ALID by
    0.08 bit, the folds following the sorted ids). Speakers with identical target scores are ordered by id
    (``speaker_ids``), else by column. Without ``target`` the order is by id, else by column."""
    import hashlib

    if speaker_ids is not None:
        names = [str(speaker_ids[c]) for c in present]
    else:
        names = [f"{int(c):012d}" for c in present]
    if target is not None:
        order_rows = np.lexsort((target, ti))
        ts, tt = target[order_rows], ti[order_rows]
        starts = np.searchsorted(tt, present, side="left")
        ends = np.searchsorted(tt, present, side="right")
        content = [hashlib.sha256(np.ascontiguousarray(ts[a:b] + 0.0).tobytes()).hexdigest()
                   for a, b in zip(starts, ends)]
    else:
        content = [""] * len(present)
    order = sorted(range(len(present)), key=lambda i: (content[i], names[i]))
    perm = np.random.default_rng(seed).permutation(len(present))
    return {int(present[order[p]]): int(i % n_folds) for i, p in enumerate(perm)}


def _target_scores(ev, n: int, rows: int, ti: np.ndarray) -> np.ndarray:
    """Each row's score against its own speaker's column (one scan, on the cluster when ``ev`` is there)."""
    out = _map_rows(ev, n, rows, lambda start, block, t: block[np.arange(block.shape[0]), t][:, None], ti)
    return np.asarray(out, dtype=np.float64).reshape(-1)


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
        Enrolled speaker ids of the eval columns; only break ties between speakers whose target scores are
        identical in the fold assignment, which is otherwise by content (each speaker's sorted target scores)
        and so independent of names and of row and column order.
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
        ``vpeval.rowscan.CLUSTER_MIN_BYTES``, 64 MiB, are scanned here), dask arrays (e.g. a score
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
    Cost: two scans of the evaluation matrix (one with a development matrix, plus one of it), and with
    cross-fitting a first light one that reads each row's target score for the fold assignment. The first
    z-normalises every row and adds its z-scores into moment histograms, one per (probe fold, enrolled
    speaker's fold) x (target, non-target): bin width ``h = 2**-9`` z-units, per bin the count and the sums
    of ``d**j`` (j = 1..4, ``d`` the offset from the bin centre in units of ``h``); with numba installed and
    at least :data:`~vpeval.metrics.linkage.histogram.JIT_MIN_SCORES` (2**26) scores, in one compiled loop,
    else with NumPy passes and ``np.bincount``, bit-identical either way. Each fold's training set is a sum
    of these histograms, and Newton's method runs on the bins alone (:func:`_fit_binned`: the loss, gradient
    and Hessian sums are Taylor series around each bin centre; their remainder is bounded and
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
        spk_fold = _speaker_folds(present, k_folds, speaker_ids, seed, _target_scores(ev, n, rows, ti), ti)
        col_fold = np.full(n_cols, -1)
        for c, f in spk_fold.items():
            col_fold[c] = f
        fold = col_fold[ti]
        # a training probe's non-targets are the columns outside the held-out fold other than its own
        outside = np.array([np.count_nonzero(col_fold != f) for f in range(k_folds)])
        if (outside < 2).any():
            raise InvalidScoresError(
                f"cross-fitting with {present.size} probed speakers among {n_cols} enrolled leaves no non-target "
                "trial to fit the LID calibration on (with one fold held out, a training probe's only column is "
                "its own speaker's); enroll at least 3 speakers (distractors count) or give a development matrix")
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
