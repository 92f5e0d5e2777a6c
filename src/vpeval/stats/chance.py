"""Permutation chance floors of trial metrics under perfect secrecy, with verdicts (:func:`chance_floor`),
and both analyses together (:func:`assess_trials`).

Definitions (permutation scheme, p-value, verdict): :mod:`vpeval.stats`.
"""

from __future__ import annotations

import numpy as np

from ..keys import sorted_codes
from ..io.trials import Trials
from .metrics import TRIAL_METRICS, StatsError
from .results import (
    Assessment,
    ChanceResult,
    _as_metrics,
    _chance_result,
    _check_count,
    _check_level,
    _check_seed,
    _warn_few_permutations,
)
from . import trial_bootstrap as _trial_bootstrap
from .batch import batchable, evaluate_rows
from .trial_bootstrap import _blocks_from_counts, _collapsed_blocks, _compress_runs, _evaluate, _sort, bootstrap

__all__ = ["chance_floor", "assess_trials"]


def _strata(trials: Trials, within) -> tuple[np.ndarray, str]:
    n = len(trials)
    if isinstance(within, str):
        if within == "all":
            return np.zeros(n, dtype=np.intp), "all"
        if within in ("test", "enroll", "auto"):
            keys = trials.test if within in ("test", "auto") else trials.enroll
            if keys is None:
                if within == "auto":
                    return np.zeros(n, dtype=np.intp), "all"
                raise StatsError(f"{trials.source}: trials have no {within} keys for within={within!r}")
            _, inv = sorted_codes(keys)  # np.unique's inverse, remembered for the trials' shared key arrays
            if within == "auto":
                k = inv.max() + 1
                has_non = np.bincount(inv[~trials.is_target], minlength=k) > 0
                if not has_non[inv[trials.is_target]].all():
                    return np.zeros(n, dtype=np.intp), "all"
                return inv, "test"
            return inv, within
        raise StatsError(f"within must be 'auto', 'test', 'enroll', 'all' or an array of strata, got {within!r}")
    s = np.asarray(within)
    if s.shape != (n,):
        raise StatsError(f"within: expected one stratum per trial, shape ({n},), got {s.shape}")
    _, inv = np.unique(s.astype(str), return_inverse=True)
    return inv.reshape(-1), "strata"


def _target_block_grid(sb: np.ndarray, size: np.ndarray, cum: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Block counts of permutations given the sorted tie blocks ``sb`` (R, k) of their k targets, over a grid
    common to all rows: ``[segment 0, target block 0, segment 1, ..., target block k-1, segment k]``. A block
    drawn j times holds j targets at its first occurrence; its repeats and the segments between them are empty.
    Segments hold the non-targets of the target-free blocks between two target blocks (see
    ``trial_bootstrap._collapsed_blocks``, whose blocks are the non-empty ones of a row)."""
    R, k = sb.shape
    first = np.ones((R, k), dtype=bool)
    first[:, 1:] = sb[:, 1:] != sb[:, :-1]
    nxt = np.where(first, np.arange(k), k)
    nxt = np.minimum.accumulate(nxt[:, ::-1], axis=1)[:, ::-1]  # first first-occurrence >= j
    nxt_after = np.full((R, k), k)
    nxt_after[:, :-1] = nxt[:, 1:]
    run = np.where(first, nxt_after - np.arange(k), 0)
    n_tar = np.zeros((R, 2 * k + 1), dtype=np.int64)
    n_non = np.zeros((R, 2 * k + 1), dtype=np.int64)
    n_tar[:, 1::2] = run
    n_non[:, 1::2] = np.where(first, size[sb] - run, 0)
    n_non[:, 0] = cum[sb[:, 0]]
    n_non[:, 2:-1:2] = np.where(first[:, 1:], cum[sb[:, 1:]] - cum[sb[:, :-1] + 1], 0)
    n_non[:, -1] = cum[-1] - cum[sb[:, -1] + 1]
    return n_tar, n_non


def chance_floor(
    trials: Trials,
    metrics=TRIAL_METRICS,
    *,
    n_perm: int = 1000,
    seed: int = 0,
    within="auto",
    alpha: float = 0.05,
    leak: dict | None = None,
) -> dict[str, ChanceResult]:
    """Chance floor of metrics under perfect secrecy by a permutation test, with a verdict per metric.

    Parameters
    ----------
    trials : Trials
    metrics : StatMetric, callable or sequence of them
        Default :data:`~vpeval.stats.TRIAL_METRICS`. A plain callable is taken as ``leak="higher"`` unless
        ``leak`` says otherwise.
    n_perm : int
        Permutations (>= 1). The smallest reachable p-value is ``1 / (1 + n_perm)``.
    seed : int
    within : {"auto", "test", "enroll", "all"} or array_like of shape (n_trials,)
        Strata inside which the target labels are permuted (module docstring); an array gives explicit
        strata.
    alpha : float in (0, 1)
        Level of the verdict.
    leak : dict key -> {"higher", "lower", "two-sided"}, optional
        Override directions, e.g. ``{"eer_interp": "two-sided"}`` for ``oaoo`` and ``oaaa``.

    Returns
    -------
    dict key -> ChanceResult

    Raises
    ------
    StatsError
        Bad options, no trials of a class, NaN scores.

    Examples
    --------
    >>> from vpeval.io.trials import Trials
    >>> from vpeval.stats import EPS_MAX
    >>> t = Trials([0.9, 0.1, 0.8, 0.3, 0.7, 0.6] * 3, [1, 0] * 9)
    >>> r = chance_floor(t, EPS_MAX, n_perm=99, within="all")["eps_max"]
    >>> r.verdict, round(r.p_value, 2), r.within
    ('beats chance', 0.01, 'all')
    """
    ms = _as_metrics(metrics, leak)
    n_perm = _check_count(n_perm, "n_perm")
    seed = _check_seed(seed)
    alpha = _check_level(alpha, "alpha")
    _warn_few_permutations(n_perm, alpha)
    is_t = trials.is_target
    if not is_t.any() or is_t.all():
        raise StatsError(f"{trials.source}: needs at least one target and one non-target trial")
    srt = _sort(trials)
    strata, how = _strata(trials, within)
    B = srt.values.size
    n_tar0 = np.bincount(srt.block[is_t], minlength=B)
    observed = _evaluate(ms, _blocks_from_counts(srt, n_tar0, srt.size - n_tar0), lambda: trials)

    # Canonical order: by stratum, then score, so that draws do not depend on the input order.
    order = np.lexsort((trials.scores, strata))
    st = strata[order]
    blk = srt.block[order]
    n = st.size
    starts = np.flatnonzero(np.r_[True, st[1:] != st[:-1]])
    sizes = np.diff(np.r_[starts, n])
    k_tar = np.add.reduceat(is_t[order].astype(np.int64), starts)
    mixed = (k_tar > 0) & (k_tar < sizes)
    fixed_tar = np.flatnonzero(np.repeat(k_tar == sizes, sizes))  # strata of targets only keep them
    if not mixed.any():
        raise StatsError(
            f"{trials.source}: no stratum of within={how!r} holds both targets and non-targets, so there is "
            "nothing to permute; use within='all'"
        )
    ms_starts, ms_sizes, ms_k = starts[mixed], sizes[mixed], k_tar[mixed]
    single = bool((ms_k == 1).all())
    rng = np.random.default_rng(seed)
    need_trials = any(m.blocks is None for m in ms)
    nulls = np.empty((len(ms), n_perm))
    if single:
        draws = ms_starts[None, :] + np.floor(rng.random((n_perm, ms_starts.size)) * ms_sizes).astype(np.intp)

    def _chosen(r):
        """Canonical positions of the targets of permutation ``r`` (called for r = 0, 1, ... in turn: the
        draws of the generator follow that order)."""
        if single:
            chosen = draws[r]
        elif starts.size == 1:
            chosen = rng.permutation(n)[: k_tar[0]]
        else:
            key = stratum_of + rng.random(n)
            pos = np.argsort(key, kind="stable")  # canonical positions, grouped by stratum
            rank = np.empty(n, dtype=np.intp)
            rank[pos] = np.arange(n) - np.repeat(starts, sizes)
            chosen = np.flatnonzero((rank < np.repeat(k_tar, sizes)) & np.repeat(mixed, sizes))
        return np.concatenate([fixed_tar, chosen]) if fixed_tar.size else chosen

    stratum_of = np.repeat(np.arange(starts.size), sizes)
    cum = np.r_[0, np.cumsum(srt.size)]
    many = 8 * int(is_t.sum()) > B  # many targets: count per block; few: work on the target blocks only
    k_chosen = int(fixed_tar.size + ms_k.sum())
    if not many and not _trial_bootstrap._ONE_AT_A_TIME and batchable(ms, 2 * k_chosen + 2, n):
        # every permutation at once (vpeval.stats.batch: bit-identical to the loop below, same draws)
        if single:  # the draws are made already: every row at once
            chosen = np.concatenate([np.broadcast_to(fixed_tar, (n_perm, fixed_tar.size)), draws], axis=1)
        else:
            chosen = np.empty((n_perm, k_chosen), dtype=np.intp)
            for r in range(n_perm):
                chosen[r] = _chosen(r)
        n_tar, n_non = _target_block_grid(np.sort(blk[chosen], axis=1), srt.size, cum)
        nulls = evaluate_rows(ms, n_tar, n_non, "blocks")
        return {m.key: _chance_result(m, observed[i], nulls[i], alpha, n_perm, seed, how)
                for i, m in enumerate(ms)}
    for r in range(n_perm):
        chosen = _chosen(r)
        if many:
            n_tar = np.bincount(blk[chosen], minlength=B)
            b = _compress_runs(n_tar, srt.size - n_tar)
        else:
            tb, n_tar_tb = np.unique(blk[chosen], return_counts=True)
            b = _collapsed_blocks(tb, n_tar_tb, srt.size, cum)

        def make_trials(chosen=chosen):
            lab = np.zeros(n, dtype=bool)
            lab[chosen] = True
            return Trials(trials.scores[order], lab,
                          None if trials.enroll is None else trials.enroll[order],
                          None if trials.test is None else trials.test[order], trials.source, dict(trials.meta))

        nulls[:, r] = _evaluate(ms, b, make_trials if need_trials else None)
    return {m.key: _chance_result(m, observed[i], nulls[i], alpha, n_perm, seed, how) for i, m in enumerate(ms)}


def assess_trials(
    trials: Trials,
    metrics=TRIAL_METRICS,
    *,
    groups=None,
    unit: str = "speaker",
    within="auto",
    n_boot: int = 200,
    n_perm: int = 200,
    seed: int = 0,
    level: float = 0.95,
    alpha: float = 0.05,
    leak: dict | None = None,
) -> list[Assessment]:
    """:func:`bootstrap` and :func:`chance_floor` of the same metrics: one :class:`Assessment` per metric.

    Defaults (200 replicates and 200 permutations) are those of ``vpeval demo``; the smallest reachable
    p-value is then 1/201.
    """
    ms = _as_metrics(metrics, leak)
    boot = bootstrap(trials, ms, groups=groups, n_boot=n_boot, seed=seed, level=level, unit=unit)
    ch = chance_floor(trials, ms, n_perm=n_perm, seed=seed, within=within, alpha=alpha)
    return [Assessment(boot[m.key], ch[m.key]) for m in ms]
