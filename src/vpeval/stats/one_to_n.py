"""Resampling of 1-to-N results: probe-speaker bootstrap (:func:`bootstrap_one_to_n`), chance floors with
the LID calibration refitted per permuted labelling (:func:`chance_floor_one_to_n`), both together
(:func:`assess_one_to_n`).

Definitions: :mod:`vpeval.stats`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit

from ..metrics.identification import rank_counts
from ..metrics.linkage import DEFAULT_REGULARIZATION, znorm_rows
from .metrics import PROBE_METRICS, ProbeMetric, StatsError
from .results import (
    Assessment,
    BootstrapResult,
    ChanceResult,
    SpeakerDraws,
    _boot_result,
    _chance_result,
    _check_count,
    _check_level,
    _check_seed,
    _draw_weights,
    _warn_few_permutations,
    order_statistic,
)

__all__ = ["bootstrap_one_to_n", "chance_floor_one_to_n", "assess_one_to_n", "LID_SLOPE_GRID"]

#: Knots of the LID slope's interpolation in T_z (:func:`_null_lids`: cubic Hermite, with the exact derivative of
#: the fitted slope at each knot), in the chance floors here and in the verdict's relabellings
#: (:mod:`vpeval.analysis.relabel`). On 50 x 111 matrices and 200 labellings, ALID stays within 1e-8 bits and
#: LID_max within 1e-5 bits of the exact refit of every labelling (largest seen on six: 3.3e-9 and 2.5e-6;
#: tests/test_stats.py); on a demo-shaped 153 x 111 matrix and 1,000 labellings 2.4e-10 and 2.8e-7 bits, against
#: 2.4e-8 and 3.1e-5 for the linear interpolation at 33 it replaced (``python benchmarks/micro.py``), with a
#: fifth of the fitted knots.
LID_SLOPE_GRID = 8


def _probe_metrics(metrics) -> list[ProbeMetric]:
    if isinstance(metrics, ProbeMetric):
        metrics = [metrics]
    ms = list(metrics)
    for m in ms:
        if not isinstance(m, ProbeMetric):
            raise StatsError(f"1-to-N metrics must be ProbeMetric (RANK1, ALID, LID_MAX), got {m!r}")
    if not ms:
        raise StatsError("no metrics given")
    return ms


def _lid_values(lid, n_probes: int):
    if lid is None:
        return None
    v = lid
    for _ in range(2):  # LinkageAnalysis -> LIDPipelineResult -> per-probe array
        v = getattr(v, "lid", v)
    v = np.asarray(v, dtype=np.float64)
    if v.shape != (n_probes,):
        raise StatsError(f"lid: expected one LID per probe row, shape ({n_probes},), got {v.shape}")
    if np.isnan(v).any():
        raise StatsError("lid: contains NaN")
    return v


def _rank1_credit(m) -> np.ndarray:
    c = rank_counts(m.scores, m.true_index)
    return np.where(c.n_greater == 0, 1.0 / (c.n_tied + 1.0), 0.0)


def _per_probe(m, metrics, lid) -> dict[str, np.ndarray]:
    vals = {}
    if any(x.values == "rank1" for x in metrics):
        vals["rank1"] = _rank1_credit(m)
    if any(x.values == "lid" for x in metrics):
        if lid is None:
            raise StatsError("the LID metrics need lid= (per-probe LIDs or the LIDPipelineResult)")
        vals["lid"] = lid
    return vals


def _aggregate(metric: ProbeMetric, v: np.ndarray) -> float:
    return float(v.mean() if metric.aggregate == "mean" else v.max())


def bootstrap_one_to_n(m, lid=None, *, metrics=PROBE_METRICS, n_boot: int = 1000, seed: int = 0,
                       level: float = 0.95, draws: SpeakerDraws | None = None) -> dict[str, BootstrapResult]:
    """Bootstrap of 1-to-N metrics by resampling probe speakers' rows.

    Parameters
    ----------
    m : vpeval.pipeline.OneToN
        Score matrix with ``probe_speaker`` (the resampling unit) and ``true_index``.
    lid : array_like of shape (n_probes,), LIDPipelineResult or LinkageAnalysis, optional
        Per-probe LIDs (bits) in the row order of ``m``; needed for ALID and LID_max. They are resampled
        as they are (the calibration is not refitted).
    metrics : sequence of ProbeMetric
        Default :data:`~vpeval.stats.PROBE_METRICS` (rank-1, ALID, LID_max); without ``lid`` only the
        rank-1 rate is possible.
    n_boot, seed, level, draws
        As in :func:`~vpeval.stats.bootstrap` (``draws`` over probe speakers).

    Returns
    -------
    dict key -> BootstrapResult (``resampled = "probe speaker"``)
    """
    ms = _probe_metrics(metrics)
    n_boot = _check_count(n_boot, "n_boot")
    level = _check_level(level)
    seed = _check_seed(seed)
    vals = _per_probe(m, ms, _lid_values(lid, m.n_probes))
    names, gid = np.unique(np.asarray(m.probe_speaker, dtype=str), return_inverse=True)
    gid = gid.reshape(-1)
    G = names.size
    if draws is not None:
        w, n_boot, seed = draws.columns(names, "1-to-N matrix"), draws.n_boot, draws.seed
        if not (w.sum(axis=1) > 0).all():
            raise StatsError("1-to-N matrix: a shared bootstrap replicate draws none of its probe speakers")
    else:
        w, _ = _draw_weights(np.random.default_rng(seed), G, n_boot, lambda w: np.ones(w.shape[0], bool))
    count = np.bincount(gid, minlength=G).astype(np.float64)
    out = {}
    for x in ms:
        v = vals[x.values]
        if x.aggregate == "mean":
            sums = np.bincount(gid, weights=v, minlength=G)
            with np.errstate(invalid="ignore"):  # a -inf LID: keep 0 * -inf out of the sum
                reps = np.where(w > 0, w * sums[None, :], 0.0).sum(axis=1) / (w @ count)
        else:
            gmax = np.full(G, -np.inf)
            np.maximum.at(gmax, gid, v)
            reps = np.where(w > 0, gmax[None, :], -np.inf).max(axis=1)
        out[x.key] = _boot_result(x, _aggregate(x, v), reps, level, n_boot, seed, "probe speaker", G, 0)
    return out


def _fit_null_slopes(z: np.ndarray, tz_sum: np.ndarray, n_tar: int, lam: np.ndarray,
                     derivative: bool = False):
    """Logistic slopes (on z) for many labellings of the same matrix, by Newton's method, vectorised.

    Objective per labelling (mean over all ``n`` entries): ``[sum_all softplus(a z + c) - (a T_z + c n_tar)]
    / n + lam (a sd)^2 / 2``, i.e. LogisticCalibrator's unweighted maximum likelihood (prior log-odds
    absorbed in ``c``) with its ridge on the standardised slope where ``lam > 0``. The label-dependent part is
    only ``T_z``, the sum of the target z-scores. The rows of ``z`` are z-normalised (each sums to 0), so the
    first Newton step from ``a = 0, c = logit(n_tar / n)`` needs no pass over the data. A step that raises
    the gradient norm is halved (a safeguard that is rarely used near the optimum of this convex problem).

    With ``derivative``, also returns ``da / dT_z`` at each solution: differentiating the two optimality
    conditions in ``T_z`` gives ``H (da, dc) = (1 / n, 0)``, so ``da / dT_z = h_cc / (n det H)`` (``H`` the
    Hessian of the objective above, at the last iterate, whose gradient is below 1e-13).
    """
    zf = z.reshape(-1)
    n = zf.size
    sd2 = float(zf.var())
    mz, mz2 = float(zf.mean()), float(np.mean(zf * zf))
    R = tz_sum.size
    p0 = n_tar / n
    h0 = p0 * (1.0 - p0)
    c = np.full(R, math.log(n_tar) - math.log(n - n_tar))
    # Newton step at a = 0 (gradient and Hessian in closed form).
    ga0 = p0 * mz - tz_sum / n
    haa, hac, hcc = h0 * mz2 + lam * sd2, h0 * mz, h0
    det = haa * hcc - hac * hac
    prev_a, prev_c = np.zeros(R), c.copy()
    prev_g = np.abs(ga0)
    da, dc = -(hcc * ga0) / det, (hac * ga0) / det
    a, c = prev_a + da, prev_c + dc
    step = np.ones(R)
    active = np.ones(R, bool)
    chunk = max(1, min(R, (1 << 18) // n))  # the rows of one matrix product: its blocking, hence its rounding,
    # depends on them, so this stays what it was (the slopes are the same to the last bit)
    # two work arrays reused by every chunk and iteration (new arrays each time cost more in first touches of
    # their pages than the fit itself); the same operations in the same order as on fresh arrays
    work_s, work_h = np.empty((chunk, n)), np.empty((chunk, n))
    zf2 = zf * zf
    dadt = np.empty(R) if derivative else None
    for _ in range(200):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        for lo in range(0, idx.size, chunk):
            j = idx[lo:lo + chunk]
            s, h = work_s[:j.size], work_h[:j.size]
            np.multiply(a[j, None], zf[None, :], out=s)
            np.add(s, c[j, None], out=s)
            expit(s, out=s)
            np.subtract(1.0, s, out=h)
            np.multiply(s, h, out=h)
            ga = ((s @ zf) - tz_sum[j]) / n + lam[j] * a[j] * sd2
            gc = (s.sum(axis=1) - n_tar) / n
            haa = (h @ zf2) / n + lam[j] * sd2
            hac = (h @ zf) / n
            hcc = h.sum(axis=1) / n
            g = np.maximum(np.abs(ga), np.abs(gc))
            if derivative:
                dadt[j] = hcc / ((haa * hcc - hac * hac) * n)
            done = g < 1e-13
            worse = (g > prev_g[j]) & ~done
            # worse: halve the last step from the previous point; else take a Newton step from here.
            wa = j[worse]
            step[wa] *= 0.5
            a[wa] = 0.5 * (prev_a[wa] + a[wa])
            c[wa] = 0.5 * (prev_c[wa] + c[wa])
            ok = ~worse & ~done
            jo = j[ok]
            det = haa[ok] * hcc[ok] - hac[ok] ** 2
            da = -(hcc[ok] * ga[ok] - hac[ok] * gc[ok]) / det
            dc = -(haa[ok] * gc[ok] - hac[ok] * ga[ok]) / det
            prev_a[jo], prev_c[jo], prev_g[jo] = a[jo], c[jo], g[ok]
            step[jo] = 1.0
            a[jo] += da
            c[jo] += dc
            stalled = ok.copy()
            stalled[ok] = np.maximum(np.abs(da), np.abs(dc)) < 1e-14 * (1 + np.abs(a[jo]))
            active[j[done | stalled | (step[j] < 1e-12)]] = False
    return (a, dadt) if derivative else a


def _null_lids(z: np.ndarray, cols: np.ndarray, seed_unused=None, grid: int | None = None) -> np.ndarray:
    """Per-probe LIDs (bits) of many labellings: ``cols`` (R, P) true columns; slope refitted per labelling.

    The fitted slope depends on the labelling only through ``T_z`` (the sum of its target z-scores, see
    :func:`_fit_null_slopes`). With ``grid`` set (and more than ``2 grid`` labellings), the slopes of the
    non-separable labellings are fitted exactly at ``grid`` order statistics of their ``T_z`` values (evenly
    spaced levels, both extremes included) and at ``grid`` evenly spaced values between the extremes, and
    interpolated in ``T_z`` between them by the cubic Hermite spline through the fitted slopes and their exact
    derivatives (:class:`scipy.interpolate.CubicHermiteSpline`): one fixed, symmetric function of all
    labellings' ``T_z`` values, so a permutation test that treats every labelling alike stays exact, at a
    fraction of the cost (accuracy: :data:`LID_SLOPE_GRID`).
    """
    R, P = cols.shape
    N = z.shape[1]
    rows = np.arange(P)
    zt = z[rows[None, :], cols]  # (R, P) target z-scores
    tz_sum = zt.sum(axis=1)
    # Separability of each labelling: min target vs max non-target (and the reverse).
    order = np.argsort(z, axis=1)
    top1, top2 = z[rows, order[:, -1]], z[rows, order[:, -2]]
    bot1, bot2 = z[rows, order[:, 0]], z[rows, order[:, 1]]
    non_max = np.where(cols == order[:, -1][None, :], top2[None, :], top1[None, :]).max(axis=1)
    non_min = np.where(cols == order[:, 0][None, :], bot2[None, :], bot1[None, :]).min(axis=1)
    sep = (zt.min(axis=1) >= non_max) | (zt.max(axis=1) <= non_min)
    lam = np.where(sep, DEFAULT_REGULARIZATION, 0.0)
    if grid is not None and R > 2 * grid and not sep.all():
        from scipy.interpolate import CubicHermiteSpline

        free = ~sep
        v = tz_sum[free]
        # knots spaced evenly both in level and in value: dense where labellings are, no wide gap in the tails
        knots = np.unique(np.r_[order_statistic(v, np.linspace(0.0, 1.0, grid)),
                                np.linspace(v.min(), v.max(), grid)])
        a_k, d_k = _fit_null_slopes(z, knots, P, np.zeros(knots.size), derivative=True)
        slopes = np.empty(R)
        slopes[free] = a_k[0] if knots.size == 1 else CubicHermiteSpline(knots, a_k, d_k)(v)
        if sep.any():
            slopes[sep] = _fit_null_slopes(z, tz_sum[sep], P, lam[sep])
    else:
        slopes = _fit_null_slopes(z, tz_sum, P, lam)
    return _lids_at_slopes(z, cols, slopes)


#: Entries of the work array of :func:`_lids_at_slopes` (rows x probes x models): 1 MiB of float64, reused by
#: every chunk (a new array per chunk cost more in first touches of its pages than the chunking saved).
_LSE_CHUNK_ENTRIES = 1 << 17


def _lids_at_slopes(z: np.ndarray, cols: np.ndarray, slopes: np.ndarray) -> np.ndarray:
    """Per-probe LIDs (bits, shape (R, P)) of labellings ``cols`` (R, P) at their slopes ``slopes`` (R,):
    ``min(log N + a z[p, c] - log sum_j exp(a z[p, j]), log N) / log 2`` with ``a = slopes[r]``, ``c = cols[r, p]``.

    Computed as ``log N + x[p, c] - log sum_j exp(x[p, j])`` with ``x[p, j] = a (z[p, j] - e_p)``, ``e_p`` the
    probe's largest score for ``a >= 0`` and its smallest otherwise (``x <= 0``, exactly 0 at the extreme: no
    overflow, and no cancellation between ``a z[p, c]`` and the shift). Rows are computed in chunks of
    :data:`_LSE_CHUNK_ENTRIES` entries, in place in one work array (a few numpy calls per chunk instead of per
    row), the rows of each sign of ``a`` together; every value is the same as computed one row at a time."""
    R, P = cols.shape
    N = z.shape[1]
    rows = np.arange(P)
    shifted = (z - z.max(axis=1)[:, None], z - z.min(axis=1)[:, None])  # for a >= 0, for a < 0
    out = np.empty((R, P))
    step = max(1, min(R, _LSE_CHUNK_ENTRIES // max(1, z.size)))
    work = np.empty((step,) + z.shape)
    negative = slopes < 0.0
    for d, idx in zip(shifted, (np.flatnonzero(~negative), np.flatnonzero(negative))):
        for lo in range(0, idx.size, step):
            j = idx[lo:lo + step]
            x = work[:j.size]
            np.multiply(slopes[j][:, None, None], d[None, :, :], out=x)
            xt = x[np.arange(j.size)[:, None], rows[None, :], cols[j]]  # a (z[p, c] - e_p)
            np.exp(x, out=x)
            out[j] = np.minimum((math.log(N) + xt - np.log(x.sum(axis=2))) / math.log(2.0), math.log2(N))
    return out


def chance_floor_one_to_n(m, lid=None, *, metrics=PROBE_METRICS, n_perm: int = 1000, seed: int = 0,
                          alpha: float = 0.05) -> dict[str, ChanceResult]:
    """Chance floor of 1-to-N metrics: each probe's true speaker drawn uniformly among the N enrolled.

    Parameters
    ----------
    m : vpeval.pipeline.OneToN
    lid : array_like or LIDPipelineResult, optional
        The observed per-probe LIDs (bits); needed for ALID / LID_max. Under the null they are recomputed
        with a logistic slope refitted to each permuted labelling, in-sample (module docstring); the slopes of
        the labellings that are not separable are fitted at :data:`LID_SLOPE_GRID` knots of their target z-score
        sum and interpolated between them (:func:`_null_lids`; as in the verdict's relabellings).
    metrics, n_perm, seed, alpha
        As in :func:`chance_floor`.

    Returns
    -------
    dict key -> ChanceResult (``within = "probe row"``)
    """
    ms = _probe_metrics(metrics)
    n_perm = _check_count(n_perm, "n_perm")
    seed = _check_seed(seed)
    alpha = _check_level(alpha, "alpha")
    _warn_few_permutations(n_perm, alpha)
    lid_v = _lid_values(lid, m.n_probes)
    vals = _per_probe(m, ms, lid_v)
    P, N = m.n_probes, m.n_enrolled
    if N < 2:
        raise StatsError("chance floor of a 1-to-N search needs at least 2 enrolled speakers")
    # Canonical row order (probe id), so that draws do not depend on the input row order.
    order = np.argsort(np.asarray(m.probe_id, dtype=str), kind="stable")
    s = np.asarray(m.scores, dtype=np.float64)[order]
    cols = np.random.default_rng(seed).integers(N, size=(n_perm, P))
    null_vals = {}
    if "rank1" in vals:
        rmax = s.max(axis=1)
        nmax = np.count_nonzero(s == rmax[:, None], axis=1)
        hit = s[np.arange(P)[None, :], cols] == rmax[None, :]
        null_vals["rank1"] = np.where(hit, 1.0 / nmax[None, :], 0.0)
    if "lid" in vals:
        null_vals["lid"] = _null_lids(znorm_rows(s), cols, grid=LID_SLOPE_GRID)
    out = {}
    for x in ms:
        nv = null_vals[x.values]
        null = nv.mean(axis=1) if x.aggregate == "mean" else nv.max(axis=1)
        out[x.key] = _chance_result(x, _aggregate(x, vals[x.values]), null, alpha, n_perm, seed, "probe row")
    return out


def assess_one_to_n(m, lid=None, *, metrics=None, n_boot: int = 200, n_perm: int = 200, seed: int = 0,
                    level: float = 0.95, alpha: float = 0.05) -> list[Assessment]:
    """:func:`bootstrap_one_to_n` and :func:`chance_floor_one_to_n` together, one Assessment per metric.

    ``metrics`` defaults to rank-1, ALID and LID_max when ``lid`` is given, else rank-1 only.
    """
    if metrics is None:
        metrics = PROBE_METRICS if lid is not None else [x for x in PROBE_METRICS if x.values == "rank1"]
    ms = _probe_metrics(metrics)
    boot = bootstrap_one_to_n(m, lid, metrics=ms, n_boot=n_boot, seed=seed, level=level)
    ch = chance_floor_one_to_n(m, lid, metrics=ms, n_perm=n_perm, seed=seed, alpha=alpha)
    return [Assessment(boot[x.key], ch[x.key]) for x in ms]
