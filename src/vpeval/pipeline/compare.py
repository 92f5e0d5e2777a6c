r"""Paired comparison of anonymization systems audited on the same speakers: a speaker-level paired bootstrap.

What is compared
----------------
For each attack trial type (oa, aa) and each headline metric, one number per system, the **worst case over the
attackers both systems faced** (attackers are matched by name: extractor / back-end / training condition; an
attacker fielded for one system only is left out, so neither system is judged against an attacker the other
never met):

``eer_rocch``
    the lowest ROCCH-EER (fraction): the EER of the strongest attacker, the number the verdict is read from;
``eps_max``
    the largest privacy-ZEBRA eps_max (Laplace-smoothed PAV; nats in the machine fields);
``alid``
    the largest 1-to-N ALID (bits) over the attackers whose linkage was computed for both systems.

The strongest attacker is chosen **inside each replicate** (the minimum or maximum is taken over the attackers
on the replicate's data), not fixed at the observed one: the statistic compared is the worst case itself, so
the interval carries the uncertainty of which attacker is strongest. On the observed data it equals the
scorecard's number. This is the verdict's notion too: its interval re-selects the strongest attacker in every
replicate of a speaker bootstrap, and the verdicts' worst cases themselves are compared on those replicates
(:func:`vpeval.analysis.comparison.compare_worst_cases`, metric ``worst_case``, trial type ``all``).

The paired bootstrap
--------------------
The two systems must have the same probe speakers on that trial type (else the pair is skipped with a note).
``n_boot`` replicates draw the speakers with replacement (:func:`vpeval.stats.draw_speakers`, seeded); replicate
``r`` uses **the same draw for both systems and every attacker** (trials go with their probe speaker, 1-to-N rows
with theirs), so the speaker-to-speaker variation shared by both systems cancels in the difference. The
difference ``A - B`` is computed per replicate; its 95 % interval is the percentile interval (order statistics,
as in :mod:`vpeval.stats.trial_bootstrap`). Each pair is computed in sorted name order and negated for the other
order, so ``diff(B, A) = -diff(A, B)`` exactly, interval included.

Reading: for the EER a higher value protects better; for eps_max and ALID a lower one. An interval that
excludes 0 names the system that protects better; otherwise "no significant difference" (at the 95 % level,
not corrected for the several metrics and types compared).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..errors import VpevalError
from ..io.trials import Trials
from ..stats import ALID, EER_ROCCH, EPS_MAX, StatsError, bootstrap, bootstrap_one_to_n, draw_speakers
from ..stats.results import order_statistic

__all__ = ["AttackData", "Comparison", "HEADLINE_METRICS", "PAIRED_METRICS", "compare_systems", "compare_pair",
           "comparison_reading"]

#: metric key -> (name, machine unit, True when a higher value protects better, worst case over attackers)
HEADLINE_METRICS = {
    "eer_rocch": ("lowest ROCCH-EER (strongest attacker)", "fraction", True, min),
    "eps_max": ("largest eps_max", "nats", False, max),
    "alid": ("largest ALID", "bits", False, max),
    # the verdict's family maximum over every attack trial type (vpeval.analysis.comparison; trial type "all")
    "worst_case": ("verdict's worst case (largest eps_max or LID_max over every attacker and trial type)", "bits",
                   False, max),
    # the share of trials beyond the budget: the smallest delta at which every attacker's eps(delta) is within it
    # (vpeval.analysis.comparison.compare_profiles; trial type "all")
    "share_beyond": ("share of trials beyond the budget (smallest delta with every attacker's eps(delta) within it)",
                     "fraction", False, max),
}
#: The metrics :func:`compare_pair` bootstraps per trial type (the worst case is compared from the verdicts' own
#: replicates, :func:`vpeval.analysis.comparison.compare_worst_cases`).
PAIRED_METRICS = ("eer_rocch", "eps_max", "alid")


@dataclass(frozen=True)
class AttackData:
    """One attacker on one trial type of one system: its trials with their probe speakers, and optionally its
    1-to-N matrix of the same condition with the per-probe LIDs (bits)."""

    trials: Trials
    probe_speakers: np.ndarray
    one_to_n: object | None = None
    lid: np.ndarray | None = None


@dataclass(frozen=True)
class Comparison:
    """The paired difference ``A - B`` of one headline metric on one trial type.

    Attributes
    ----------
    system_a, system_b, trial_type, metric, unit : str
        ``unit`` is the machine unit of ``value_*``, ``diff``, ``low``, ``high`` (``fraction``, ``nats``, ``bits``).
    value_a, value_b : float
        The worst case over the shared attackers on the observed data.
    attacker_a, attacker_b : str
        The attacker that gives it.
    diff, low, high : float
        ``value_a - value_b`` and its percentile interval.
    level : float
    n_boot, seed, n_speakers : int
    n_attackers : int
        Shared attackers the worst case is taken over.
    better : str or None
        The system that protects better when the interval excludes 0, else None.
    reading : str
        One line in words.
    """

    system_a: str
    system_b: str
    trial_type: str
    metric: str
    unit: str
    value_a: float
    value_b: float
    attacker_a: str
    attacker_b: str
    diff: float
    low: float
    high: float
    level: float
    n_boot: int
    seed: int
    n_speakers: int
    n_attackers: int
    better: str | None
    reading: str

    def swapped(self) -> "Comparison":
        """The same comparison read ``B - A``."""
        return Comparison(self.system_b, self.system_a, self.trial_type, self.metric, self.unit, self.value_b,
                          self.value_a, self.attacker_b, self.attacker_a, -self.diff, -self.high, -self.low,
                          self.level, self.n_boot, self.seed, self.n_speakers, self.n_attackers, self.better,
                          comparison_reading(self.system_b, self.system_a, self.trial_type, self.metric, self.better))

    def to_dict(self) -> dict:
        u = self.unit
        return {
            "system_a": self.system_a, "system_b": self.system_b, "trial_type": self.trial_type,
            "metric": self.metric, "unit": u, f"value_a_{u}": self.value_a, f"value_b_{u}": self.value_b,
            "attacker_a": self.attacker_a, "attacker_b": self.attacker_b, f"diff_{u}": self.diff,
            f"ci_low_{u}": self.low, f"ci_high_{u}": self.high, "level": self.level, "n_boot": self.n_boot,
            "seed": self.seed, "n_speakers": self.n_speakers, "n_attackers": self.n_attackers,
            "better": self.better, "reading": self.reading,
        }


def comparison_reading(a: str, b: str, trial_type: str, metric: str, better: str | None) -> str:
    """The comparison of ``a`` and ``b`` in one line (``better``: the system that protects better, or None)."""
    name = HEADLINE_METRICS[metric][0]
    if better is None:
        return f"{trial_type}, {name}: no significant difference between {a} and {b}"
    worse = b if better == a else a
    return f"{trial_type}, {name}: {better} protects better than {worse} against the strongest attacker"


def _replicates(attacks: Mapping[str, AttackData], metrics, draws) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """metric -> (observed value per attacker, replicates (n_attackers, n_boot)) on shared draws. ``metrics``:
    ``["alid"]`` alone, or trial metrics (``eer_rocch``, ``eps_max``), bootstrapped together: the replicates are
    made once per attacker for all of them (the same values as one call per metric; nothing is redrawn)."""
    if list(metrics) == ["alid"]:
        r = [bootstrap_one_to_n(d.one_to_n, d.lid, metrics=[ALID], draws=draws)[ALID.key] for d in attacks.values()]
        return {"alid": (np.asarray([x.value for x in r]), np.asarray([x.replicates for x in r]))}
    ms = [EER_ROCCH if metric == "eer_rocch" else EPS_MAX for metric in metrics]
    rs = [bootstrap(d.trials, ms, groups=d.probe_speakers, draws=draws) for d in attacks.values()]
    return {metric: (np.asarray([r[m.key].value for r in rs]), np.asarray([r[m.key].replicates for r in rs]))
            for metric, m in zip(metrics, ms)}


def _cached(cache: dict, key: tuple, compute):
    if key not in cache:
        cache[key] = compute()
    return cache[key]


def _speakers(attacks: Mapping[str, AttackData], names) -> frozenset:
    """The probe speakers of attackers ``names``."""
    out = set()
    for k in names:
        out |= set(np.asarray(attacks[k].probe_speakers, dtype=str).tolist())
    return frozenset(out)


def compare_pair(a: str, attacks_a: Mapping[str, AttackData], b: str, attacks_b: Mapping[str, AttackData], *,
                 trial_type: str, metrics=PAIRED_METRICS, n_boot: int = 200, seed: int = 0,
                 level: float = 0.95, cache: dict | None = None) -> list[Comparison]:
    """Paired bootstrap of the headline ``metrics`` between systems ``a`` and ``b`` on one trial type.

    Parameters
    ----------
    a, b : str
        System names (distinct).
    attacks_a, attacks_b : mapping attacker name -> AttackData
        The attackers of each system on ``trial_type``; only names present in both are used.
    metrics : iterable of str
        Keys of :data:`PAIRED_METRICS`; ``alid`` uses the attackers with a 1-to-N matrix in both systems and is
        left out when there is none.
    n_boot, seed, level
        Replicates, seed of the shared draws, interval level.
    cache : dict, optional
        Replicates and probe speakers already computed for a system (keyed by system name, metric, trial type,
        attackers and draws), so that comparing one system with several others bootstraps it once; pass the same
        dict to every call on the same data. A system's trial metrics are bootstrapped in one pass over the same
        replicates (their values do not depend on which others are asked for).

    Returns
    -------
    list of Comparison, ``A - B``, in the order of ``metrics``.

    Raises
    ------
    VpevalError
        Same names, no shared attacker, different probe speakers (the pairing needs the same speakers), or a
        metric not in :data:`PAIRED_METRICS`.
    """
    if a == b:
        raise VpevalError(f"cannot compare system {a!r} with itself")
    if b < a:  # canonical order, so that swapping the systems negates the result exactly
        return [c.swapped() for c in compare_pair(b, attacks_b, a, attacks_a, trial_type=trial_type,
                                                  metrics=metrics, n_boot=n_boot, seed=seed, level=level,
                                                  cache=cache)]
    metrics = list(metrics)
    if unknown := [m for m in metrics if m not in PAIRED_METRICS]:
        raise VpevalError(f"paired comparison: unknown metric(s) {unknown}; expected some of {list(PAIRED_METRICS)}")
    shared = sorted(set(attacks_a) & set(attacks_b))
    if not shared:
        raise VpevalError(f"{trial_type}: systems {a!r} and {b!r} share no attacker")
    cache = {} if cache is None else cache
    sa, sb = (_cached(cache, ("speakers", name, trial_type, tuple(shared)), lambda att=att: _speakers(att, shared))
              for name, att in ((a, attacks_a), (b, attacks_b)))
    if sa != sb:
        raise VpevalError(f"{trial_type}: systems {a!r} and {b!r} are not evaluated on the same probe speakers "
                          f"({len(sa)} and {len(sb)}, {len(sa ^ sb)} not in both); a paired comparison needs the "
                          "same speakers")
    draws = draw_speakers(sorted(sa), n_boot=n_boot, seed=seed)
    alpha = (1.0 - level) / 2.0
    out = []
    for metric in metrics:
        name, unit, higher_protects, worst = HEADLINE_METRICS[metric]
        names = shared
        if metric == "alid":
            names = [k for k in shared if attacks_a[k].one_to_n is not None and attacks_b[k].one_to_n is not None
                     and attacks_a[k].lid is not None and attacks_b[k].lid is not None]
            if not names:
                continue
        # the trial metrics of a system are bootstrapped together, on first need (the same values as one by one)
        together = [metric] if metric == "alid" else list(dict.fromkeys(m for m in metrics if m != "alid"))
        key = (trial_type, tuple(names), draws.seed, draws.n_boot, tuple(draws.speakers.tolist()))
        try:
            for system, attacks in ((a, attacks_a), (b, attacks_b)):
                if (system, metric) + key not in cache:
                    got = _replicates({k: attacks[k] for k in names}, together, draws)
                    cache.update({(system, m) + key: v for m, v in got.items()})
            (oa, ra), (ob, rb) = cache[(a, metric) + key], cache[(b, metric) + key]
        except StatsError as exc:
            raise VpevalError(f"{trial_type}, {metric}: {exc}") from None
        pick = np.argmin if worst is min else np.argmax
        ia, ib = int(pick(oa)), int(pick(ob))
        agg = (lambda r: r.min(axis=0)) if worst is min else (lambda r: r.max(axis=0))  # noqa: E731
        diff_reps = agg(ra) - agg(rb)  # the worst case taken inside each replicate
        lo, hi = order_statistic(diff_reps, [alpha, 1.0 - alpha])
        diff = float(oa[ia] - ob[ib])
        better = None
        if lo > 0:
            better = a if higher_protects else b
        elif hi < 0:
            better = b if higher_protects else a
        out.append(Comparison(a, b, trial_type, metric, unit, float(oa[ia]), float(ob[ib]), names[ia], names[ib],
                              diff, float(lo), float(hi), level, draws.n_boot, draws.seed, int(len(sa)),
                              len(names), better, comparison_reading(a, b, trial_type, metric, better)))
    return out


def compare_systems(systems: Mapping[str, Mapping[str, Mapping[str, AttackData]]], *, types=("oa", "aa"),
                    metrics=PAIRED_METRICS, n_boot: int = 200, seed: int = 0,
                    level: float = 0.95) -> tuple[list[Comparison], list[str]]:
    """Every pair of systems (in input order, each pair once) on every trial type of ``types``.

    Parameters
    ----------
    systems : mapping system -> (mapping trial type -> (mapping attacker -> AttackData))

    Returns
    -------
    (comparisons, notes)
        ``notes`` say which pairs or types could not be compared and why (e.g. different speakers).
    """
    names = list(systems)
    out, notes, cache = [], [], {}
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            for t in types:
                if t not in systems[a] or t not in systems[b]:
                    continue
                try:
                    out += compare_pair(a, systems[a][t], b, systems[b][t], trial_type=t, metrics=metrics,
                                        n_boot=n_boot, seed=seed, level=level, cache=cache)
                except VpevalError as exc:
                    notes.append(f"{a} vs {b}: {exc}")
    return out, notes
