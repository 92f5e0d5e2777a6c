"""Results of the resampling analyses (intervals, chance floors, verdicts) and the checks and helpers they share.

Definitions: :mod:`vpeval.stats` (package docstring).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..errors import FewPermutationsWarning
from .metrics import ProbeMetric, StatMetric, StatsError, as_stat_metric

__all__ = ["BootstrapResult", "ChanceResult", "Assessment", "SpeakerDraws", "draw_speakers", "VERDICT_LEAKS",
           "VERDICT_CHANCE"]


#: the chance test's word when the metric beats its permutation null (p <= alpha); deliberately not the
#: verdict vocabulary (protects / inconclusive / partial / leaks, vpeval.analysis.verdict)
VERDICT_LEAKS = "beats chance"


VERDICT_CHANCE = "indistinguishable from chance"


_UNITS = ("speaker", "enroll", "test", "trial")


_MAX_REDRAW_ROUNDS = 1000


def _finite_or_str(v):
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else ("inf" if v > 0 else ("-inf" if v < 0 else None))  # JSON rule: NaN -> null


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


def order_statistic(x, q):
    """The ``q``-quantile of ``x`` as an order statistic: ``x_(k)``, ``k = ceil(R q)`` (1-based, clipped to
    ``[1, R]``), the ``inf{v : share(x <= v) >= q}`` of Hyndman & Fan's type 1 (NumPy ``inverted_cdf``).

    ``R q`` is rounded to 9 decimals before the ceiling, so a level computed in floating point indexes the
    intended order statistic: ``(1 - 0.95) / 2`` is 0.025000000000000022, and of 200 replicates the 5th
    smallest (not the 6th) is the 2.5 % quantile. Never interpolates, so infinite values stay exact.

    Parameters
    ----------
    x : array_like of shape (R,), R >= 1
    q : float or array_like of floats in [0, 1]

    Returns
    -------
    float64 scalar or ndarray shaped like ``q``

    Raises
    ------
    ValueError
        Empty ``x`` or ``q`` outside [0, 1].

    >>> float(order_statistic(np.arange(1.0, 201.0), (1 - 0.95) / 2))
    5.0
    """
    v = np.sort(np.asarray(x, dtype=np.float64).reshape(-1))
    if v.size == 0:
        raise ValueError("order_statistic of an empty array")
    qa = np.asarray(q, dtype=np.float64)
    if ((qa < 0) | (qa > 1)).any():
        raise ValueError(f"quantile level must be in [0, 1], got {q!r}")
    k = np.clip(np.ceil(np.round(v.size * qa, 9)).astype(np.int64), 1, v.size)
    return v[k - 1]


def min_replicates(level: float) -> int:
    """The fewest bootstrap replicates ``R`` whose two-sided percentile interval can claim the level ``level``:
    ``ceil(2 / (1 - level)) - 1`` (39 at 0.95, 199 at 0.99, 19 at 0.90).

    Rule: ``R`` replicates cut the line into ``R + 1`` pieces, each holding a further replicate with probability
    ``1 / (R + 1)`` (exchangeability); a tail of probability ``a = (1 - level) / 2`` must hold at least one piece,
    ``(R + 1) a >= 1``. With fewer, :func:`order_statistic` gives the interval ``[min, max]`` of the replicates,
    whose coverage is only ``(R - 1) / (R + 1)`` (1/3 at R = 2; one replicate gives a zero-width interval that
    excludes the estimate itself), yet it would be labelled ``level``. At the minimum, ``[min, max]`` has the level
    exactly (Davison & Hinkley, "Bootstrap Methods and their Application", 1997, Sec. 5.2: choose ``R`` with
    ``(R + 1) a`` an integer). ``2 / (1 - level)`` is rounded to 9 decimals first, as in :func:`order_statistic`.

    >>> min_replicates(0.95), min_replicates(0.9), min_replicates(0.99)
    (39, 19, 199)
    """
    return max(1, math.ceil(round(2.0 / (1.0 - float(level)), 9)) - 1)


def check_replicates(n_boot: int, level: float = 0.95, name: str = "n_boot") -> int:
    """``n_boot``, or :class:`StatsError` when fewer than :func:`min_replicates` (``level``): the message says how
    many the level needs and why."""
    need = min_replicates(level)
    if n_boot < need:
        raise StatsError(f"{name} = {n_boot} bootstrap replicates cannot give a {100 * level:g} % interval: it needs "
                         f"at least {need} (ceil(2 / (1 - level)) - 1, so that each {100 * (1 - level) / 2:g} % "
                         f"tail holds a replicate); with fewer the interval is the replicates' min..max, whose "
                         f"coverage is only (R - 1) / (R + 1) = {100 * (n_boot - 1) / (n_boot + 1):.0f} %")
    return n_boot


def _quantile(x: np.ndarray, q) -> np.ndarray:
    return order_statistic(x, q)


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
    "beats chance")."""
    if 1.0 / (1.0 + n_perm) > alpha:
        warnings.warn(f"{n_perm} permutations: the smallest reachable p-value 1/{n_perm + 1} = "
                      f"{1.0 / (1.0 + n_perm):.3g} is above alpha = {alpha:g}, so no metric can be called a leak; "
                      f"use at least {math.ceil(1.0 / alpha) - 1} (99 reach p = 0.01)",
                      FewPermutationsWarning, stacklevel=stacklevel)


def _check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or int(seed) < 0:
        raise StatsError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


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



@dataclass(frozen=True)
class SpeakerDraws:
    """Fixed speaker-bootstrap draws, shared by several analyses (paired bootstrap).

    Give the same ``SpeakerDraws`` to :func:`~vpeval.stats.bootstrap` or :func:`~vpeval.stats.bootstrap_one_to_n`
    of two systems evaluated on the same speakers, and replicate ``r`` of both uses the same resampled speakers:
    the replicates of a difference between them are the differences of their replicates.

    Attributes
    ----------
    speakers : ndarray of str, shape (n_speakers,)
        The units, sorted and distinct.
    counts : ndarray of int, shape (n_boot, n_speakers)
        How many times replicate ``r`` draws speaker ``j`` (each row sums to ``n_speakers``).
    seed : int
    """

    speakers: np.ndarray
    counts: np.ndarray
    seed: int

    @property
    def n_boot(self) -> int:
        return int(self.counts.shape[0])

    def columns(self, names: np.ndarray, source: str = "trials") -> np.ndarray:
        """Counts (n_boot, len(names)) of the units ``names`` (every name must be one of ``speakers``)."""
        idx = np.searchsorted(self.speakers, names)
        idx = np.minimum(idx, self.speakers.size - 1)
        bad = self.speakers[idx] != names
        if bad.any():
            raise StatsError(f"{source}: speaker {str(np.asarray(names)[bad][0])!r} is not among the shared "
                             "bootstrap draws' speakers")
        return self.counts[:, idx]


def draw_speakers(speakers, n_boot: int = 1000, seed: int = 0) -> SpeakerDraws:
    """Draw ``n_boot`` speaker-bootstrap replicates over ``speakers`` (with replacement, uniformly).

    The draws are those :func:`~vpeval.stats.bootstrap` makes with the same seed over the same sorted speakers
    before any redraw, so they depend only on the speaker *set* and the seed (Efron & Tibshirani, An
    Introduction to the Bootstrap, 1993, ch. 6: resampling the independent units, here speakers).

    Parameters
    ----------
    speakers : array_like of str, shape (n,)
        Speaker ids; repeats are allowed and count once.
    n_boot : int >= 1
        Number of replicates.
    seed : int >= 0

    Returns
    -------
    SpeakerDraws
        ``counts`` of shape (n_boot, n_distinct_speakers).

    Raises
    ------
    StatsError
        No speakers, ``n_boot < 1`` or a bad seed.

    Examples
    --------
    >>> d = draw_speakers(["b", "a", "c"], n_boot=4, seed=1)
    >>> d.speakers.tolist(), d.counts.shape, d.counts.sum(axis=1).tolist()
    (['a', 'b', 'c'], (4, 3), [3, 3, 3, 3])
    """
    n_boot = _check_count(n_boot, "n_boot")
    seed = _check_seed(seed)
    names = np.unique(np.asarray(speakers, dtype=str))
    if names.size == 0:
        raise StatsError("draw_speakers: no speakers")
    w, _ = _draw_weights(np.random.default_rng(seed), names.size, n_boot, lambda w: np.ones(w.shape[0], bool))
    return SpeakerDraws(names, w, seed)


def _boot_result(m, value, reps, level, n_boot, seed, desc, n_units, redrawn) -> BootstrapResult:
    if np.isnan(reps).any():
        raise StatsError(f"metric {m.key} returned NaN on a bootstrap replicate")
    a = (1.0 - level) / 2.0
    lo, hi = _quantile(reps, [a, 1.0 - a])
    return BootstrapResult(m.key, m.name, m.unit, float(value), float(lo), float(hi), level, n_boot, seed,
                           desc, int(n_units), int(redrawn), reps)


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
