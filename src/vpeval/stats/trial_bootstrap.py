"""Speaker-level bootstrap of trial metrics (:func:`bootstrap`, :func:`bootstrap_ci`) and the trial's speaker
(:func:`trial_speakers`).

Definitions (resampling unit, percentile interval, redrawn replicates): :mod:`vpeval.stats`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..keys import sorted_codes
from .._checks import one_of
from ..io.trials import Trials
from ..blocks import TieBlocks
from .metrics import (
    TRIAL_METRICS,
    BlockEval,
    ProbeMetric,
    StatsError,
    as_stat_metric,
)
from .batch import batchable, evaluate_rows
from .one_to_n import bootstrap_one_to_n
from .results import (
    BootstrapResult,
    SpeakerDraws,
    _UNITS,
    _as_metrics,
    _boot_result,
    _check_count,
    _check_level,
    _check_seed,
    _draw_weights,
)

__all__ = ["trial_speakers", "bootstrap", "bootstrap_ci"]

#: Tests set this to compare the one-replicate-at-a-time path with the batched one (vpeval.stats.batch).
_ONE_AT_A_TIME = False


def trial_speakers(trials: Trials, speaker_of=None, *, side: str = "test") -> np.ndarray:
    """The speaker of every trial, for speaker-level resampling.

    Parameters
    ----------
    trials : Trials
        With ``enroll`` and ``test`` keys.
    speaker_of : Protocol or mapping or callable, optional
        Maps test keys (utterance ids) to speaker ids: a :class:`vpeval.pipeline.Protocol` (its
        ``speaker_of``), a mapping ``{utterance_id: speaker_id}`` or a callable on an array of keys. Not needed
        for ``side="enroll"`` or for ``aa-centroid`` trials, whose keys are speaker ids.
    side : {"test", "enroll"}
        ``"test"`` (default): the probe's speaker, the resampling unit of :func:`bootstrap`.
        ``"enroll"``: the enrolled model's id (model ids are speaker ids in vpeval protocols and in
        VoicePrivacy / Kaldi trial lists).

    Returns
    -------
    ndarray of str, shape (n_trials,)

    Raises
    ------
    StatsError
        Keys missing, a test key unknown to ``speaker_of``, or ``speaker_of`` missing where needed.

    Notes
    -----
    Trials made by :func:`vpeval.pipeline.build_trials` are recognised by ``meta["type"]``: ``aa-centroid``
    test keys are speaker ids; the ``cross-profile`` types of :func:`vpeval.pipeline.protocols.cross_key_trials`
    carry the suffix ``@<key>`` on the probes of other profile keys (``meta["profiles"]``), removed before the
    lookup.
    """
    if side not in ("test", "enroll"):
        raise StatsError(f"side must be 'test' or 'enroll', got {side!r}")
    keys = trials.test if side == "test" else trials.enroll
    if keys is None:
        raise StatsError(f"{trials.source}: trials have no {side} keys; pass the speakers explicitly")
    kind = trials.meta.get("type")
    if side == "enroll" or kind == "aa-centroid":
        return np.asarray(keys, dtype=str)
    if kind in ("cross-profile", "cross-profile-same-source"):
        tags = tuple(f"@{k}" for k in trials.meta.get("profiles", [])[1:])
        # each distinct key stripped once (a probe meets every model: far fewer keys than trials)
        u, inv = sorted_codes(keys)
        keys = np.asarray([next((x[: -len(t)] for t in tags if x.endswith(t)), x) for x in u.tolist()],
                          dtype=str)[inv]
    if speaker_of is None:
        raise StatsError(
            f"{trials.source}: the test keys are utterance ids; pass speaker_of (the Protocol, or a mapping "
            "utterance id -> speaker id) to know the probe speakers"
        )
    if hasattr(speaker_of, "speaker_of") and callable(speaker_of.speaker_of):
        try:
            return np.asarray(speaker_of.speaker_of(keys), dtype=str)
        except ValueError as exc:
            raise StatsError(f"{trials.source}: {exc}") from None
    if isinstance(speaker_of, Mapping):
        out = []
        for k in keys.tolist():
            if k not in speaker_of:
                raise StatsError(f"{trials.source}: test key {k!r} is not in the utterance -> speaker mapping")
            out.append(str(speaker_of[k]))
        return np.asarray(out, dtype=str)
    if callable(speaker_of):
        out = np.asarray(speaker_of(keys), dtype=str)
        if out.shape != keys.shape:
            raise StatsError(f"speaker_of returned shape {out.shape}, expected {keys.shape}")
        return out
    raise StatsError(f"speaker_of must be a Protocol, a mapping or a callable, got {type(speaker_of).__name__}")


def _groups(trials: Trials, unit: str, groups) -> tuple[np.ndarray, np.ndarray, str]:
    """(unit index per trial, sorted unit names, description)."""
    one_of(unit, "unit", _UNITS, StatsError)
    n = len(trials)
    if groups is not None:
        if unit != "speaker":
            raise StatsError("groups can only be given with unit='speaker'")
        g = np.asarray(groups, dtype=str)
        if g.shape != (n,):
            raise StatsError(f"groups: expected one speaker per trial, shape ({n},), got {g.shape}")
        desc = "speaker"
    elif unit == "speaker":
        raise StatsError(
            f"{trials.source}: unit='speaker' needs the speaker of every trial: pass "
            "groups=trial_speakers(trials, protocol) (the probe's speaker), or choose unit='enroll'/'test'/'trial'"
        )
    elif unit == "trial":
        # Units in a canonical order (by score, then label), so that results do not depend on input order.
        gid = np.empty(n, dtype=np.intp)
        gid[np.lexsort((trials.is_target, trials.scores))] = np.arange(n)
        return gid, np.arange(n).astype(str), "trial"
    else:
        g = trials.enroll if unit == "enroll" else trials.test
        if g is None:
            raise StatsError(f"{trials.source}: trials have no {unit} keys for unit={unit!r}")
        desc = unit
    names, inv = sorted_codes(g)  # np.unique's two arrays, remembered for the trials' shared key arrays
    return inv, names, desc


@dataclass(frozen=True)
class _Sorted:
    """Trials sorted once: tie block of every trial, block values and sizes."""

    values: np.ndarray  # (B,) distinct scores ascending
    block: np.ndarray  # (n,) block index of each trial (input order)
    size: np.ndarray  # (B,) trials per block


def _sort(trials: Trials) -> _Sorted:
    s = trials.scores
    if s.size == 0:
        raise StatsError(f"{trials.source}: no trials")
    if np.isnan(s).any():
        raise StatsError(f"{trials.source}: scores contain NaN")
    values, inv, size = np.unique(s, return_inverse=True, return_counts=True)
    return _Sorted(values, inv.reshape(-1), size)


def _blocks_from_counts(srt: _Sorted, n_tar: np.ndarray, n_non: np.ndarray) -> TieBlocks:
    keep = (n_tar + n_non) > 0
    return TieBlocks(srt.values[keep], n_tar[keep].astype(np.int64), n_non[keep].astype(np.int64))


def _count_matrix(rows, cols, n_rows, n_cols):
    """Sparse (n_cols x n_rows) count matrix, transposed for ``matrix @ weights``."""
    from scipy.sparse import csr_matrix

    return csr_matrix((np.ones(rows.size), (cols, rows)), shape=(n_cols, n_rows))


def _collapsed_blocks(tb: np.ndarray, n_tar_tb: np.ndarray, size: np.ndarray, cum: np.ndarray) -> TieBlocks:
    """Tie blocks with every run of target-free blocks collapsed into one block.

    ``tb``: ascending indices of the blocks holding targets, ``n_tar_tb`` their target counts, ``size`` the
    trials per block, ``cum = [0, cumsum(size)]``. Collapsing a run of consecutive target-free blocks
    changes none of the built-in metrics: on the DET/ROC the run's points lie on one segment of constant
    pmiss (both EERs are unchanged), and the PAV fit, being the unique weighted least-squares isotonic fit,
    is constant on any run of equal observed proportions (0 here), so the PAV LLRs of its trials, hence
    minCllr, D_ECE and eps_max, are unchanged. Block score values are not used by these metrics; they are
    replaced by their positions.
    """
    K = tb.size
    n_tar = np.zeros(2 * K + 1, dtype=np.int64)
    n_non = np.zeros(2 * K + 1, dtype=np.int64)
    n_tar[1::2] = n_tar_tb
    n_non[1::2] = size[tb] - n_tar_tb
    lo = np.r_[0, tb + 1]
    hi = np.r_[tb, size.size]
    n_non[0::2] = cum[hi] - cum[lo]
    keep = (n_tar + n_non) > 0
    return TieBlocks(np.flatnonzero(keep).astype(np.float64), n_tar[keep], n_non[keep])


def _compress_runs(n_tar: np.ndarray, n_non: np.ndarray) -> TieBlocks:
    """Tie blocks from per-block counts, dropping empty blocks and merging runs of consecutive blocks that
    hold targets only, or non-targets only (see :func:`_collapsed_blocks` for why no metric changes: a run
    of pure-target blocks lies on a segment of constant pfa and has PAV proportion 1 throughout)."""
    n_tar = np.asarray(n_tar)
    n_non = np.asarray(n_non)
    keep = (n_tar + n_non) > 0
    t, nn = n_tar[keep], n_non[keep]
    code = np.where(nn == 0, 1, np.where(t == 0, 2, 0))
    new = np.empty(code.size, dtype=bool)
    new[0] = True
    np.not_equal(code[1:], code[:-1], out=new[1:])
    new |= code == 0
    starts = np.flatnonzero(new)
    return TieBlocks(starts.astype(np.float64), np.add.reduceat(t, starts).astype(np.int64),
                     np.add.reduceat(nn, starts).astype(np.int64))


def _evaluate(metrics, b: TieBlocks, make_trials) -> list[float]:
    ev = BlockEval(b)
    out = []
    for m in metrics:
        if m.blocks is not None:
            out.append(float(m.blocks(ev)))
        else:
            out.append(float(m.func(make_trials())))
    return out


def bootstrap(
    trials: Trials,
    metrics=TRIAL_METRICS,
    *,
    groups=None,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    unit: str = "speaker",
    draws: SpeakerDraws | None = None,
) -> dict[str, BootstrapResult]:
    """Speaker-level bootstrap percentile intervals of several metrics from the same replicates.

    Parameters
    ----------
    trials : Trials
    metrics : StatMetric, callable or sequence of them
        Default :data:`~vpeval.stats.TRIAL_METRICS` (both EERs, minCllr, D_ECE, eps_max). A plain callable
        ``metric(trials) -> float`` is evaluated on materialised replicate trials (slower); the built-in
        metrics re-count tie blocks instead of re-sorting.
    groups : array_like of str, shape (n_trials,)
        The speaker of every trial for ``unit="speaker"``; use :func:`trial_speakers` (the probe's speaker).
    n_boot : int
        Replicates (>= 1).
    seed : int
        Seed of ``numpy.random.default_rng``; the same seed gives identical replicates.
    level : float in (0, 1)
        Nominal coverage of the percentile interval.
    unit : {"speaker", "enroll", "test", "trial"}
        Resampling unit (module docstring).
    draws : SpeakerDraws, optional
        Fixed draws (:func:`~vpeval.stats.draw_speakers`) over a set of units holding every unit of these
        trials; then ``n_boot`` and ``seed`` come from them and nothing is redrawn: a replicate without target
        or non-target trials raises :class:`StatsError` (paired bootstrap of two systems, see
        :mod:`vpeval.pipeline.compare`).

    Returns
    -------
    dict key -> BootstrapResult

    Raises
    ------
    StatsError
        Bad options, missing groups/keys, no trials, NaN scores, or a unit structure where replicates
        almost never hold both classes.

    Notes
    -----
    Cost: one sort of the scores, then per replicate two weighted counts over the trials and at most two
    PAV fits over the blocks (O(n) each). Every replicate holds at least one target and one non-target
    (others are redrawn and counted in ``n_redrawn``).

    Examples
    --------
    >>> from vpeval.io.trials import Trials
    >>> from vpeval.stats import EER_INTERP
    >>> t = Trials([0.9, 0.1, 0.8, 0.3, 0.7, 0.6], [1, 0, 1, 0, 1, 0])
    >>> r = bootstrap(t, EER_INTERP, groups=["a", "a", "b", "b", "c", "c"], n_boot=50, seed=1)["eer_interp"]
    >>> r.value, r.n_boot, r.seed, r.resampled, bool(r.low <= r.high)
    (0.0, 50, 1, 'speaker', True)
    """
    ms = _as_metrics(metrics)
    n_boot = _check_count(n_boot, "n_boot")
    level = _check_level(level)
    seed = _check_seed(seed)
    gid, names, desc = _groups(trials, unit, groups)
    srt = _sort(trials)
    is_t = trials.is_target
    G = names.size
    tar_per_unit = np.bincount(gid[is_t], minlength=G)
    non_per_unit = np.bincount(gid[~is_t], minlength=G)
    if tar_per_unit.sum() == 0 or non_per_unit.sum() == 0:
        raise StatsError(f"{trials.source}: needs at least one target and one non-target trial")

    B = srt.values.size
    n_tar0 = np.bincount(srt.block[is_t], minlength=B)
    n_non0 = srt.size - n_tar0
    observed = _evaluate(ms, _blocks_from_counts(srt, n_tar0, n_non0), lambda: trials)

    if draws is not None:
        w, redrawn, n_boot, seed = draws.columns(names, trials.source), 0, draws.n_boot, draws.seed
        if not ((w @ tar_per_unit > 0) & (w @ non_per_unit > 0)).all():
            raise StatsError(f"{trials.source}: a shared bootstrap replicate has no target or no non-target "
                             "trial; fixed draws cannot be redrawn")
    else:
        rng = np.random.default_rng(seed)
        w, redrawn = _draw_weights(
            rng, G, n_boot, lambda w: (w @ tar_per_unit > 0) & (w @ non_per_unit > 0)
        )
    # Per unit: targets and non-targets in each block holding a target, and non-targets in each run of
    # target-free blocks between them (collapsed, see _collapsed_blocks).
    tb = np.flatnonzero(n_tar0)
    K = tb.size
    k_t = np.searchsorted(tb, srt.block[is_t])
    b_n = srt.block[~is_t]
    k_n = np.searchsorted(tb, b_n)
    in_tb = (k_n < K) & (tb[np.minimum(k_n, K - 1)] == b_n)
    g_t, g_n = gid[is_t], gid[~is_t]
    c_tar = _count_matrix(g_t, k_t, G, K)
    c_non_tb = _count_matrix(g_n[in_tb], k_n[in_tb], G, K)
    c_seg = _count_matrix(g_n[~in_tb], k_n[~in_tb], G, K + 1)
    need_trials = any(m.blocks is None for m in ms)
    if not _ONE_AT_A_TIME and batchable(ms, 2 * K + 2, int((w @ (tar_per_unit + non_per_unit)).max())):
        # every replicate at once (vpeval.stats.batch: bit-identical to the loop below)
        n_tar = np.zeros((n_boot, 2 * K + 1), dtype=np.int64)
        n_non = np.zeros((n_boot, 2 * K + 1), dtype=np.int64)
        wt = np.ascontiguousarray(w.T, dtype=np.float64)
        n_tar[:, 1::2] = np.rint(c_tar @ wt).T
        n_non[:, 1::2] = np.rint(c_non_tb @ wt).T
        n_non[:, 0::2] = np.rint(c_seg @ wt).T
        reps = evaluate_rows(ms, n_tar, n_non, "runs")
        return {m.key: _boot_result(m, observed[i], reps[i], level, n_boot, seed, desc, G, redrawn)
                for i, m in enumerate(ms)}
    reps = np.empty((len(ms), n_boot))
    n_tar = np.zeros(2 * K + 1)
    n_non = np.zeros(2 * K + 1)
    for r in range(n_boot):
        wr = w[r]
        n_tar[1::2] = c_tar @ wr
        n_non[1::2] = c_non_tb @ wr
        n_non[0::2] = c_seg @ wr

        def make_trials(wr=wr):
            mult = wr[gid]
            idx = np.repeat(np.arange(len(trials)), mult)
            return Trials(trials.scores[idx], is_t[idx],
                          None if trials.enroll is None else trials.enroll[idx],
                          None if trials.test is None else trials.test[idx], trials.source, dict(trials.meta))

        reps[:, r] = _evaluate(ms, _compress_runs(n_tar, n_non), make_trials if need_trials else None)
    return {m.key: _boot_result(m, observed[i], reps[i], level, n_boot, seed, desc, G, redrawn)
            for i, m in enumerate(ms)}


def bootstrap_ci(trials, metric, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95,
                 unit: str = "speaker", groups=None, lid=None) -> BootstrapResult:
    """Speaker-level percentile bootstrap interval of one metric.

    Parameters
    ----------
    trials : Trials or vpeval.pipeline.OneToN
        Verification trials (see :func:`bootstrap`) or a 1-to-N matrix (see :func:`bootstrap_one_to_n`;
        its probe rows are resampled by speaker).
    metric : StatMetric, ProbeMetric or callable ``metric(trials) -> float``
    n_boot, seed, level, unit, groups
        As in :func:`bootstrap` (``unit``/``groups`` only for Trials).
    lid : array_like or LIDPipelineResult, optional
        Per-probe LIDs for the LID metrics of a OneToN.

    Returns
    -------
    BootstrapResult

    Examples
    --------
    >>> from vpeval.io.trials import Trials
    >>> from vpeval.stats import EER_ROCCH
    >>> t = Trials([0.9, 0.1, 0.8, 0.3, 0.7, 0.6], [1, 0, 1, 0, 1, 0], ["a", "b"] * 3, ["x", "y"] * 3)
    >>> r = bootstrap_ci(t, EER_ROCCH, unit="enroll", n_boot=20)
    >>> r.n_boot, r.seed, r.resampled
    (20, 0, 'enroll')
    """
    is_matrix = hasattr(trials, "probe_speaker") and hasattr(trials, "true_index")
    if isinstance(metric, ProbeMetric):
        if not is_matrix:
            raise StatsError(f"{metric.key} is a 1-to-N metric: pass a OneToN, not {type(trials).__name__}")
        return bootstrap_one_to_n(trials, lid, metrics=[metric], n_boot=n_boot, seed=seed, level=level)[metric.key]
    if not isinstance(trials, Trials):
        raise StatsError(f"trials must be Trials (or a OneToN with a ProbeMetric), got {type(trials).__name__}")
    m = as_stat_metric(metric)
    return bootstrap(trials, [m], groups=groups, n_boot=n_boot, seed=seed, level=level, unit=unit)[m.key]
