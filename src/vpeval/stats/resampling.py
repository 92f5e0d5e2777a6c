r"""Speaker-level bootstrap confidence intervals and permutation chance floors.

Bootstrap (:func:`bootstrap`, :func:`bootstrap_ci`)
----------------------------------------------------
Trials are not independent: every trial of a speaker shares that speaker's voice, so resampling trials
gives intervals that are far too narrow. The resampling **unit** is the speaker (Efron & Tibshirani, "An
Introduction to the Bootstrap", 1993, Ch. 6 and 13; the "subsets bootstrap" of Bolle, Ratha & Pankanti,
"Error analysis of pattern recognition systems: the subsets bootstrap", CVIU 93, 2004): draw as many
speakers as there are, with replacement, uniformly; every trial of a drawn speaker enters the replicate
once per draw (with multiplicity); the metric is recomputed on the replicate. The interval is the
**percentile interval** of the replicates with order statistics: for ``R`` replicates sorted ascending and
``a = (1 - level) / 2`` it is ``[x_(ceil(R a)), x_(ceil(R (1 - a)))]`` (1-based; Hyndman & Fan type 1,
NumPy ``method="inverted_cdf"``), which never interpolates between infinite values.

**Which speaker a trial belongs to** (``unit="speaker"``): the speaker of the *test* side, i.e. of the
probe utterance. This is the speaker whose privacy the trial attacks; for a target trial it is also the
model's speaker. Non-target trials of a probe go with the probe, so the enrolled models (including a
never-probed cohort) are held fixed: intervals are conditional on the attacker's gallery. Get the
per-trial speakers with :func:`trial_speakers`. ``unit="enroll"`` resamples enrolled models instead,
``unit="test"`` probe utterances (test keys) and ``unit="trial"`` single trials (for comparison only).

A replicate that lacks target or non-target trials is redrawn (its count is reported as ``n_redrawn``), so
every replicate has both classes. For 1-to-N data (:class:`~vpeval.pipeline.OneToN`) the probe rows are
resampled by their speaker (``probe_speaker``); the LID calibration is not refitted (its uncertainty is not
in the interval).

**Worst-case metrics** (eps_max, LID_max) are extremes, and the bootstrap of an extreme is known to be
unreliable (Bickel & Freedman, Ann. Statist. 9, 1981, Sec. 6): a replicate can only reuse the observed
probes, so the upper end of a LID_max interval never exceeds the observed LID_max. Read those intervals as
the spread over speaker subsets, not as coverage guarantees; the chance floor is the sounder evidence there.

Chance floor (:func:`chance_floor`)
-----------------------------------
The distribution of the metric under **perfect secrecy** at the same sample sizes and trial structure,
by a permutation test (Good, "Permutation, Parametric and Bootstrap Tests of Hypotheses", 2005, Ch. 3):
under perfect secrecy a probe's score against its true model is exchangeable with its scores against
the other models, so the labels are permuted **within each test key** (each probe utterance keeps its
number of targets: with one true model per probe the target is a uniformly random model of that probe's
row). ``within="all"`` permutes the labels over all trials keeping the total counts (scores swapped
across the target / non-target split); ``within="enroll"`` within each model; ``within="auto"`` (default)
is ``"test"`` when every target trial shares its test key with at least one non-target, else ``"all"``
(e.g. the ``oaaa`` trials, whose test keys are one class each). The result says which was used.

Reported: the null quantiles, the **chance floor** = the one-sided 95 % critical value in the direction of
leakage (95th percentile for metrics where higher leaks, 5th percentile where lower leaks, such as the EER
of an attack), the permutation **p-value** ``(1 + #{null at least as extreme as observed}) / (1 + n_perm)``
(Phipson & Smyth, Stat. Appl. Genet. Mol. Biol. 9, 2010) where "at least as extreme" is ``>=`` for
``leak="higher"``, ``<=`` for ``"lower"`` and ``|null - median| >= |observed - median|`` for
``"two-sided"``, and the verdict ``"leaks"`` when ``p <= alpha`` (default 0.05), else
``"indistinguishable from chance"``.

For 1-to-N data the true speaker of each probe row is drawn uniformly among the N enrolled speakers.
Rank-1 credit is then evaluated on the raw scores. LID is recomputed with a logistic calibration
**refitted to each permuted labelling** (same objective as :class:`~vpeval.calibration.LogisticCalibrator`:
unweighted maximum likelihood on the row-z-normalised scores, with the ridge of
:data:`~vpeval.metrics.linkage.DEFAULT_REGULARIZATION` only if a permuted labelling is separable), fitted
in-sample on all rows, not cross-fitted. An in-sample fit overfits towards the drawn labels, so the floor
is slightly higher than a cross-fitted one: the verdict "leaks" is conservative.

Every result depends on the input only as a set (trial order does not matter) and on ``seed``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit

from ..errors import FewPermutationsWarning
from ..io.trials import Trials
from ..blocks import TieBlocks
from ..metrics.identification import rank_counts
from ..metrics.linkage import DEFAULT_REGULARIZATION, znorm_rows
from .metrics import (
    PROBE_METRICS,
    TRIAL_METRICS,
    BlockEval,
    ProbeMetric,
    StatMetric,
    StatsError,
    as_stat_metric,
)

__all__ = [
    "StatsError",
    "BootstrapResult",
    "ChanceResult",
    "Assessment",
    "trial_speakers",
    "bootstrap",
    "bootstrap_ci",
    "chance_floor",
    "assess_trials",
    "bootstrap_one_to_n",
    "chance_floor_one_to_n",
    "assess_one_to_n",
    "VERDICT_LEAKS",
    "VERDICT_CHANCE",
]

VERDICT_LEAKS = "leaks"
VERDICT_CHANCE = "indistinguishable from chance"
_UNITS = ("speaker", "enroll", "test", "trial")
_MAX_REDRAW_ROUNDS = 1000


# --------------------------------------------------------------------------------------------- results


def _finite_or_str(v):
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else ("inf" if v > 0 else ("-inf" if v < 0 else "nan"))


@dataclass(frozen=True)
class BootstrapResult:
    """Percentile bootstrap interval of one metric.

    Attributes
    ----------
    key, name, unit : str
        The metric.
    value : float
        The metric on the original trials.
    low, high : float
        Percentile interval (order statistics, see the module docstring).
    level : float
        Nominal coverage, e.g. 0.95.
    n_boot : int
        Replicates.
    seed : int
    resampled : str
        The resampling unit (``"speaker"``, ``"enroll"``, ``"test"``, ``"trial"``, ``"probe speaker"``).
    n_units : int
        Number of distinct units resampled.
    n_redrawn : int
        Replicates redrawn because they lacked targets or non-targets.
    replicates : ndarray of shape (n_boot,)
        The metric on every replicate, in draw order.
    """

    key: str
    name: str
    unit: str
    value: float
    low: float
    high: float
    level: float
    n_boot: int
    seed: int
    resampled: str
    n_units: int
    n_redrawn: int = 0
    replicates: np.ndarray = field(default=None, repr=False)

    def to_dict(self) -> dict:
        return {
            "key": self.key, "name": self.name, "unit": self.unit, "value": _finite_or_str(self.value),
            "ci_low": _finite_or_str(self.low), "ci_high": _finite_or_str(self.high), "level": self.level,
            "method": "percentile (order statistics)", "n_boot": self.n_boot, "seed": self.seed,
            "resampled": self.resampled, "n_units": self.n_units, "n_redrawn": self.n_redrawn,
        }


@dataclass(frozen=True)
class ChanceResult:
    """Permutation chance floor and verdict of one metric.

    Attributes
    ----------
    key, name, unit, leak : str
        The metric and its direction of leakage.
    value : float
        Observed value.
    floor : float or None
        One-sided 95 % critical value under perfect secrecy: the 95th null percentile for ``leak="higher"``,
        the 5th for ``"lower"``; None for ``"two-sided"`` (see ``q025``/``q975``).
    q025, q05, q50, q95, q975 : float
        Null quantiles (order statistics).
    p_value : float
        ``(1 + #{null at least as extreme}) / (1 + n_perm)``.
    p_value_floor : float (property)
        ``1 / (1 + n_perm)``, the smallest reachable p-value; reported beside ``p_value``.
    alpha : float
    verdict : str
        :data:`VERDICT_LEAKS` (``p_value <= alpha``) or :data:`VERDICT_CHANCE`.
    n_perm, seed : int
    within : str
        How labels were permuted (``"test"``, ``"enroll"``, ``"all"``, ``"strata"``, ``"probe row"``).
    null : ndarray of shape (n_perm,)
    """

    key: str
    name: str
    unit: str
    leak: str
    value: float
    floor: float | None
    q025: float
    q05: float
    q50: float
    q95: float
    q975: float
    p_value: float
    alpha: float
    verdict: str
    n_perm: int
    seed: int
    within: str
    null: np.ndarray = field(default=None, repr=False)

    @property
    def floor_text(self) -> str:
        """The floor as report text: ``"<= x"``/``">= x"``, or the central 95 % range when two-sided."""
        if self.leak == "higher":
            return f"{self.q95:.4g} (p95)"
        if self.leak == "lower":
            return f"{self.q05:.4g} (p5)"
        return f"[{self.q025:.4g}, {self.q975:.4g}]"

    @property
    def p_value_floor(self) -> float:
        """Smallest reachable p-value, ``1 / (1 + n_perm)``."""
        return 1.0 / (1.0 + self.n_perm)

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in ("key", "name", "unit", "leak", "p_value", "p_value_floor", "alpha",
                                           "verdict", "n_perm", "seed", "within")}
        for k in ("value", "floor", "q025", "q05", "q50", "q95", "q975"):
            d[k] = _finite_or_str(getattr(self, k))
        return d


@dataclass(frozen=True)
class Assessment:
    """A metric with its bootstrap interval and its chance floor (one row of the uncertainty table)."""

    boot: BootstrapResult
    chance: ChanceResult

    @property
    def key(self) -> str:
        return self.boot.key

    def to_dict(self) -> dict:
        return {"bootstrap": self.boot.to_dict(), "chance": self.chance.to_dict()}


# --------------------------------------------------------------------------------------------- helpers


def _quantile(x: np.ndarray, q) -> np.ndarray:
    return np.quantile(np.asarray(x, dtype=np.float64), q, method="inverted_cdf")


def _check_count(n, name, minimum=1) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or int(n) < minimum:
        raise StatsError(f"{name} must be an integer >= {minimum}, got {n!r}")
    return int(n)


def _check_level(level: float, name="level") -> float:
    if not (isinstance(level, (int, float)) and 0.0 < float(level) < 1.0):
        raise StatsError(f"{name} must be in (0, 1), got {level!r}")
    return float(level)


def _warn_few_permutations(n_perm: int, alpha: float, stacklevel: int = 3) -> None:
    """:class:`~vpeval.errors.FewPermutationsWarning` when ``1 / (1 + n_perm) > alpha`` (no verdict can say
    "leaks")."""
    if 1.0 / (1.0 + n_perm) > alpha:
        warnings.warn(f"{n_perm} permutations: the smallest reachable p-value 1/{n_perm + 1} = "
                      f"{1.0 / (1.0 + n_perm):.3g} is above alpha = {alpha:g}, so no metric can be called a leak; "
                      f"use at least {math.ceil(1.0 / alpha) - 1} (99 reach p = 0.01)",
                      FewPermutationsWarning, stacklevel=stacklevel)


def _check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or int(seed) < 0:
        raise StatsError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def _strip_condition(keys: np.ndarray) -> np.ndarray:
    """``'1688@o'`` -> ``'1688'`` (the condition suffix of the ``oaaa`` keys of build_trials)."""
    keys = np.asarray(keys, dtype=str)
    ok = np.char.endswith(keys, "@o") | np.char.endswith(keys, "@a")
    if not ok.all():
        raise StatsError(f"oaaa trial key {str(keys[~ok][0])!r} has no '@o'/'@a' condition suffix")
    return np.array([k[:-2] for k in keys.tolist()], dtype=str)


def trial_speakers(trials: Trials, speaker_of=None, *, side: str = "test") -> np.ndarray:
    """The speaker of every trial, for speaker-level resampling.

    Parameters
    ----------
    trials : Trials
        With ``enroll`` and ``test`` keys.
    speaker_of : Protocol or mapping or callable, optional
        Maps test keys (utterance ids) to speaker ids: a :class:`vpeval.pipeline.Protocol` (its
        ``speaker_of``), a mapping ``{utterance_id: speaker_id}`` or a callable on an array of keys. Not needed
        for ``side="enroll"`` or for ``cross-profile`` trials, whose keys are speaker ids.
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
    Trials made by :func:`vpeval.pipeline.build_trials` are recognised by ``meta["type"]``: ``oaaa`` keys
    carry a ``@o``/``@a`` condition suffix, which is removed; ``cross-profile`` test keys are speaker ids.
    """
    if side not in ("test", "enroll"):
        raise StatsError(f"side must be 'test' or 'enroll', got {side!r}")
    keys = trials.test if side == "test" else trials.enroll
    if keys is None:
        raise StatsError(f"{trials.source}: trials have no {side} keys; pass the speakers explicitly")
    kind = trials.meta.get("type")
    if kind == "oaaa":
        keys = _strip_condition(keys)
    if side == "enroll" or kind == "cross-profile":
        return np.asarray(keys, dtype=str)
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
    if unit not in _UNITS:
        raise StatsError(f"unit must be one of {_UNITS}, got {unit!r}")
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
    names, inv = np.unique(g, return_inverse=True)
    return inv.reshape(-1), names, desc


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


def _as_metrics(metrics, leak=None) -> list[StatMetric]:
    if isinstance(metrics, (StatMetric, ProbeMetric)) or callable(metrics):
        metrics = [metrics]
    ms = [as_stat_metric(m) for m in metrics]
    if leak:
        for i, m in enumerate(ms):
            if m.key in leak:
                ms[i] = m.with_leak(leak[m.key])
    keys = [m.key for m in ms]
    if len(set(keys)) != len(keys):
        raise StatsError(f"metric keys must be distinct, got {keys}")
    if not ms:
        raise StatsError("no metrics given")
    return ms


def _draw_weights(rng, n_units: int, n_boot: int, ok) -> tuple[np.ndarray, int]:
    """Multiplicities (n_boot, n_units) of units drawn with replacement; rows failing ``ok`` redrawn."""
    def draw(k):
        idx = rng.integers(n_units, size=(k, n_units))
        flat = idx + (np.arange(k) * n_units)[:, None]
        return np.bincount(flat.reshape(-1), minlength=k * n_units).reshape(k, n_units)

    w = draw(n_boot)
    bad = ~ok(w)
    redrawn = 0
    rounds = 0
    while bad.any():
        rounds += 1
        if rounds > _MAX_REDRAW_ROUNDS:
            raise StatsError("bootstrap: almost no replicate has both target and non-target trials; "
                             "the resampling unit holds one class only")
        k = int(bad.sum())
        redrawn += k
        w[bad] = draw(k)
        bad = ~ok(w)
    return w, redrawn


# --------------------------------------------------------------------------------------------- bootstrap


def bootstrap(
    trials: Trials,
    metrics=TRIAL_METRICS,
    *,
    groups=None,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    unit: str = "speaker",
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


def _boot_result(m, value, reps, level, n_boot, seed, desc, n_units, redrawn) -> BootstrapResult:
    if np.isnan(reps).any():
        raise StatsError(f"metric {m.key} returned NaN on a bootstrap replicate")
    a = (1.0 - level) / 2.0
    lo, hi = _quantile(reps, [a, 1.0 - a])
    return BootstrapResult(m.key, m.name, m.unit, float(value), float(lo), float(hi), level, n_boot, seed,
                           desc, int(n_units), int(redrawn), reps)


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


# --------------------------------------------------------------------------------------------- chance floor


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
            _, inv = np.unique(keys, return_inverse=True)
            inv = inv.reshape(-1)
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


def _p_value(null: np.ndarray, value: float, leak: str) -> float:
    if leak == "higher":
        k = np.count_nonzero(null >= value)
    elif leak == "lower":
        k = np.count_nonzero(null <= value)
    else:
        c = float(_quantile(null, 0.5))
        with np.errstate(invalid="ignore"):
            k = np.count_nonzero(np.abs(null - c) >= abs(value - c))
    return float((1.0 + k) / (1.0 + null.size))


def _chance_result(m, value, null, alpha, n_perm, seed, within) -> ChanceResult:
    if np.isnan(null).any():
        raise StatsError(f"metric {m.key} returned NaN on a permutation")
    q025, q05, q50, q95, q975 = (float(v) for v in _quantile(null, [0.025, 0.05, 0.5, 0.95, 0.975]))
    p = _p_value(null, value, m.leak)
    floor = q95 if m.leak == "higher" else (q05 if m.leak == "lower" else None)
    return ChanceResult(m.key, m.name, m.unit, m.leak, float(value), floor, q025, q05, q50, q95, q975, p,
                        alpha, VERDICT_LEAKS if p <= alpha else VERDICT_CHANCE, n_perm, seed, within, null)


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
        Override directions, e.g. ``{"eer_interp": "two-sided"}`` for ``oaaa``.

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
    ('leaks', 0.01, 'all')
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
    stratum_of = np.repeat(np.arange(starts.size), sizes)
    cum = np.r_[0, np.cumsum(srt.size)]
    many = 8 * int(is_t.sum()) > B  # many targets: count per block; few: work on the target blocks only
    for r in range(n_perm):
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
        chosen = np.concatenate([fixed_tar, chosen]) if fixed_tar.size else chosen
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


# --------------------------------------------------------------------------------------------- 1-to-N


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
                       level: float = 0.95) -> dict[str, BootstrapResult]:
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
    n_boot, seed, level
        As in :func:`bootstrap`.

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


def _fit_null_slopes(z: np.ndarray, tz_sum: np.ndarray, n_tar: int, lam: np.ndarray) -> np.ndarray:
    """Logistic slopes (on z) for many labellings of the same matrix, by Newton's method, vectorised.

    Objective per labelling (mean over all ``n`` entries): ``[sum_all softplus(a z + c) - (a T_z + c n_tar)]
    / n + lam (a sd)^2 / 2``, i.e. LogisticCalibrator's unweighted maximum likelihood (prior log-odds
    absorbed in ``c``) with its ridge on the standardised slope where ``lam > 0``. The label-dependent part is
    only ``T_z``, the sum of the target z-scores. The rows of ``z`` are z-normalised (each sums to 0), so the
    first Newton step from ``a = 0, c = logit(n_tar / n)`` needs no pass over the data. A step that raises
    the gradient norm is halved (a safeguard that is rarely used near the optimum of this convex problem).
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
    chunk = max(1, (1 << 18) // n)
    for _ in range(200):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        for lo in range(0, idx.size, chunk):
            j = idx[lo:lo + chunk]
            s = expit(a[j, None] * zf[None, :] + c[j, None])
            h = s * (1.0 - s)
            ga = ((s @ zf) - tz_sum[j]) / n + lam[j] * a[j] * sd2
            gc = (s.sum(axis=1) - n_tar) / n
            haa = (h @ (zf * zf)) / n + lam[j] * sd2
            hac = (h @ zf) / n
            hcc = h.sum(axis=1) / n
            g = np.maximum(np.abs(ga), np.abs(gc))
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
    return a


def _null_lids(z: np.ndarray, cols: np.ndarray, seed_unused=None) -> np.ndarray:
    """Per-probe LIDs (bits) of many labellings: ``cols`` (R, P) true columns; slope refitted per labelling."""
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
    slopes = _fit_null_slopes(z, tz_sum, P, lam)
    out = np.empty((R, P))
    for r in range(R):
        x = slopes[r] * z
        mx = x.max(axis=1)
        lse = mx + np.log(np.exp(x - mx[:, None]).sum(axis=1))
        out[r] = np.minimum((math.log(N) + x[rows, cols[r]] - lse) / math.log(2.0), math.log2(N))
    return out


def chance_floor_one_to_n(m, lid=None, *, metrics=PROBE_METRICS, n_perm: int = 1000, seed: int = 0,
                          alpha: float = 0.05) -> dict[str, ChanceResult]:
    """Chance floor of 1-to-N metrics: each probe's true speaker drawn uniformly among the N enrolled.

    Parameters
    ----------
    m : vpeval.pipeline.OneToN
    lid : array_like or LIDPipelineResult, optional
        The observed per-probe LIDs (bits); needed for ALID / LID_max. Under the null they are recomputed
        with a logistic slope refitted to each permuted labelling, in-sample (module docstring).
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
        null_vals["lid"] = _null_lids(znorm_rows(s), cols)
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
