"""The exact logistic calibration ``LLR = w z + b`` of the LID pipeline, by streaming Newton passes.

:func:`_fit_calibration` minimises exactly the objective of :class:`vpeval.calibration.LogisticCalibrator`
over the z-normalised training scores, recomputing the z-scores block by block in every pass
(:func:`_training_blocks`), so no pass holds more than one block of rows. The one-scan binned fit
(:mod:`vpeval.metrics.linkage.binned_fit`) falls back to it whenever the bins cannot vouch for the result.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit

from ...calibration.logistic import add_slope_ridge, newton_minimize
from ...errors import InvalidScoresError, SeparableScoresError
from ...rowscan import _map_rows
from .posterior import _znorm_block


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
