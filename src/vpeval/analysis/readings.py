"""Readings: the one line a reader needs beside a number that is easy to misread.

* oaoo and oaaa (Beyond-EER's attack-resistance types: pseudo-Alice against Alice, among original or anonymized
  impostors; ideal EER 50 %) are read on their interpolated EER, which can pass 50 %, per attacker, and
  summarised per training condition (:func:`two_sided_by_condition`): above 50 % a pseudo-voice sits further
  from its source than another real speaker does (oaoo) or pseudo-voices of different speakers sit closer to
  each other than to their sources (oaaa: identity-space compression); below 50 % the pseudo-voice is linked
  to its source. The reading can depend on what the attacker was trained on, so none is given for the system.
* aaaa and aa-centroid (pseudo-identity consistency and distinctness; ideal EER 0 %) have a stated goal bound
  (:data:`CONSISTENCY_GOAL_EER`): beating chance is not enough (:func:`consistency_reading`).
* A bootstrap interval over few speakers can have zero width ("0 to 0 %"); :func:`exact_eer_interval` gives an
  exact binomial (Clopper-Pearson) interval on the trial counts beside it.
* eps_max at the Laplace-PAV ceiling of its trial counts (:func:`at_eps_max_ceiling`) is a lower bound of the
  disclosure, not a measurement of it.
* A negative ALID / LID (:data:`NEGATIVE_LID_READING`) means the attacker is confidently wrong.
"""

from __future__ import annotations

import math

from ..stats import VERDICT_CHANCE, VERDICT_LEAKS
from .worst_case import eps_max_ceiling_nats

__all__ = ["CONSISTENCY_GOAL_EER", "EXACT_INTERVAL_NOTE", "NEGATIVE_LID_READING", "ABOVE_HALF_FLAG",
           "consistency_reading", "two_sided_reading", "two_sided_by_condition", "exact_eer_interval",
           "at_eps_max_ceiling", "CONDITION_NAMES", "ABOVE_HALF_READINGS"]

#: An oaoo / oaaa interpolated EER above this is flagged (the reading of :data:`ABOVE_HALF_READINGS`).
ABOVE_HALF_FLAG = 0.60
#: What an oaoo / oaaa EER above 50 % means (Beyond-EER, Sec. 3.2).
ABOVE_HALF_READINGS = {
    "oaoo": "pseudo-voices further from their sources than other speakers are",
    "oaaa": "identity-space compression",
}

#: The goal of pseudo-identity consistency / distinctness (aaaa, aa-centroid; ideal EER 0 %): an EER whose
#: 95 % interval reaches no higher than this (5 %). Beating chance alone does not meet it.
CONSISTENCY_GOAL_EER = 0.05

#: The line beside a negative ALID or LID.
NEGATIVE_LID_READING = ("a negative LID/ALID means the attacker is confidently wrong: its search makes the true "
                        "speaker less likely than a random guess would, worse than chance for those probes (a "
                        "miscalibrated or misled attacker, not privacy)")

#: The line beside an EER interval that the speaker bootstrap gave zero width.
EXACT_INTERVAL_NOTE = (
    "'degenerate': the speaker bootstrap gave a zero-width interval (every resample of the few speakers reads the "
    "same EER), which is not a certainty; beside it an exact interval: Clopper-Pearson on the target and "
    "non-target trial counts (Bonferroni over the two, 95 % jointly; at zero errors the exact rule of three), "
    "counting trials as if independent, so still narrower than the truth.")

#: Plain names of the training conditions (``Attacker.trained_on``).
CONDITION_NAMES = {"none": "untrained (plain cosine)", "original": "trained on original speech",
                   "anonymized": "trained on anonymized speech"}

READ_LINKED = "pseudo-voices linked to their sources (the attack succeeds)"
READ_NONE = "no departure from 50 % detected"


def flagged(trial_type: str) -> str:
    """The reading of an oaoo / oaaa EER above :data:`ABOVE_HALF_FLAG`."""
    return f"{ABOVE_HALF_READINGS[trial_type]} (flagged)"


def two_sided_reading(trial_type: str, eer_interp: float, chance_verdict: str | None) -> str:
    """One reading of an oaoo or oaaa row from its interpolated EER (the flag) and that EER's two-sided chance
    verdict (``"beats chance"``: it differs from 50 % beyond chance, in either direction).

    >>> two_sided_reading("oaaa", 0.9, None)
    'identity-space compression (flagged)'
    >>> two_sided_reading("oaoo", 0.55, "beats chance")
    'pseudo-voices further from their sources than other speakers are (below the flag)'
    >>> two_sided_reading("oaaa", 0.2, "beats chance")
    'pseudo-voices linked to their sources (the attack succeeds)'
    >>> two_sided_reading("oaaa", 0.45, "indistinguishable from chance")
    'no departure from 50 % detected'
    """
    if trial_type not in ABOVE_HALF_READINGS:
        raise ValueError(f"no two-sided reading for trial type {trial_type!r}")
    if eer_interp > ABOVE_HALF_FLAG:
        return flagged(trial_type)
    if chance_verdict == VERDICT_LEAKS:
        return f"{ABOVE_HALF_READINGS[trial_type]} (below the flag)" if eer_interp > 0.5 else READ_LINKED
    return READ_NONE


def consistency_reading(eer: float, ci_high: float | None, chance_verdict: str | None,
                        bound: float = CONSISTENCY_GOAL_EER) -> str:
    """The reading of a pseudo-identity consistency / distinctness row (aaaa, aa-centroid; ideal EER 0 %).

    ``ci_high`` is the upper end of the EER's interval (the speaker bootstrap's, or the exact interval's where the
    bootstrap has zero width, :func:`exact_eer_interval`). Met only when that upper end is at most ``bound``;
    "not shown" when the EER is within the bound but its interval reaches above it (too few trials to show the
    goal); missed when the EER is above the bound or does not even differ from chance.

    >>> consistency_reading(0.18, 0.25, "beats chance")
    'goal missed: EER above the 5 % goal (consistent beyond chance only)'
    >>> consistency_reading(0.01, 0.03, "beats chance")
    'goal met: EER at most 5 %'
    >>> consistency_reading(0.0, 0.084, "beats chance")
    'goal not shown: EER within 5 %, but its interval reaches 8.4 %'
    """
    if chance_verdict == VERDICT_CHANCE:
        return "goal missed: not distinguishable from chance"
    if eer > bound:
        return f"goal missed: EER above the {100 * bound:g} % goal (consistent beyond chance only)"
    if ci_high is None or not math.isfinite(ci_high) or ci_high <= bound:
        return f"goal met: EER at most {100 * bound:g} %"
    return f"goal not shown: EER within {100 * bound:g} %, but its interval reaches {100 * ci_high:.3g} %"


def two_sided_by_condition(trial_type: str, rows: dict[str, dict], trained_on: dict[str, str],
                           verdicts: dict[str, str | None]) -> list:
    """oaoo or oaaa readings (:func:`two_sided_reading`) summarised per training condition (attackers trained on
    original speech can read compression where attackers trained on anonymized speech link the pseudo-voices).

    Parameters
    ----------
    trial_type : {"oaoo", "oaaa"}
    rows : dict attacker -> metrics
        Each attacker's metrics of that type (``eer_interp`` as a fraction).
    trained_on : dict attacker -> str
        ``none``, ``original`` or ``anonymized`` (a fusion's own condition).
    verdicts : dict attacker -> str or None
        The chance verdict of each attacker's interpolated EER.

    Returns
    -------
    list of dict
        Per condition present (none, original, anonymized): ``{condition, name, n_attackers, readings:
        {reading: {attackers, eer_interp_min, eer_interp_max}}, sentence}``; attackers sorted by name.
    """
    out = []
    for cond in ("none", "original", "anonymized"):
        names = sorted(a for a in rows if trained_on.get(a) == cond)
        if not names:
            continue
        groups: dict[str, list[str]] = {}
        for a in names:
            groups.setdefault(two_sided_reading(trial_type, rows[a]["eer_interp"], verdicts.get(a)), []).append(a)
        readings = {r: {"attackers": g, "eer_interp_min": min(rows[a]["eer_interp"] for a in g),
                        "eer_interp_max": max(rows[a]["eer_interp"] for a in g)}
                    for r, g in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))}
        parts = []
        for r, g in readings.items():
            lo, hi = 100 * g["eer_interp_min"], 100 * g["eer_interp_max"]
            span = f"{lo:.3g} %" if f"{lo:.3g}" == f"{hi:.3g}" else f"{lo:.3g} to {hi:.3g} %"
            parts.append(f"{r} in {len(g['attackers'])} ({span})")
        out.append({"condition": cond, "name": CONDITION_NAMES[cond], "n_attackers": len(names),
                    "readings": readings,
                    "sentence": f"{CONDITION_NAMES[cond]} ({len(names)}): " + "; ".join(parts)})
    return out


def _cp(k: int, n: int, level: float) -> tuple[float, float]:
    """Two-sided Clopper-Pearson interval of ``k`` successes in ``n`` trials at ``level``."""
    from scipy.special import betaincinv  # the beta quantile without scipy.stats' per-call overhead

    a = (1.0 - level) / 2
    lo = 0.0 if k == 0 else float(betaincinv(k, n - k + 1, a))
    hi = 1.0 if k == n else float(betaincinv(k + 1, n - k, 1 - a))
    return lo, hi


def exact_eer_interval(eer: float, n_tar: int, n_non: int, level: float = 0.95) -> tuple[float, float]:
    """An exact binomial interval of an EER from its trial counts, for where the bootstrap degenerates.

    At the EER threshold about ``eer * n_tar`` of the ``n_tar`` target trials are misses and ``eer * n_non`` of
    the ``n_non`` non-target trials false alarms (counts rounded). Each error rate gets a two-sided
    Clopper-Pearson interval at ``1 - (1 - level) / 2`` (Bonferroni over the two classes); the EER interval runs
    from the smaller lower end to the larger upper end. At 0 errors the upper end is
    ``1 - ((1 - level) / 4)^(1/n)``, the exact form of the rule of three (about ``4.4 / n`` at level 0.95;
    ``3 / n`` is the one-sided 95 % bound of one class). Trials are counted as if independent, which they are
    not (speakers repeat), so the interval is a floor of the true uncertainty; it says how far an EER of 0 % over
    a few dozen target trials is from a proof of 0 %.

    Parameters
    ----------
    eer : float
        The EER as a fraction in [0, 1].
    n_tar, n_non : int
        Target and non-target trial counts (>= 1 each).
    level : float
        Joint confidence level, in (0, 1).

    Returns
    -------
    (low, high) : tuple of float, fractions

    Raises
    ------
    ValueError
        Counts below 1, an EER outside [0, 1] or a level outside (0, 1).

    >>> lo, hi = exact_eer_interval(0.0, 50, 5500)
    >>> lo, round(hi, 4)
    (0.0, 0.0839)
    """
    if n_tar < 1 or n_non < 1:
        raise ValueError("an exact EER interval needs at least one trial of each class")
    if not 0.0 <= eer <= 1.0 or not 0.0 < level < 1.0:
        raise ValueError(f"eer must be in [0, 1] and level in (0, 1); got {eer}, {level}")
    each = 1.0 - (1.0 - level) / 2
    (l1, h1), (l2, h2) = _cp(round(eer * n_tar), n_tar, each), _cp(round(eer * n_non), n_non, each)
    return min(l1, l2), max(h1, h2)


def at_eps_max_ceiling(eps_max_nats: float, n_tar: int, n_non: int, rtol: float = 1e-9) -> bool:
    """Whether eps_max (nats, Laplace PAV) sits at the most its trial counts can show
    (:func:`vpeval.analysis.worst_case.eps_max_ceiling_nats`): then it is a lower bound of the disclosure.

    >>> at_eps_max_ceiling(eps_max_ceiling_nats(50, 5500), 50, 5500), at_eps_max_ceiling(1.0, 50, 5500)
    (True, False)
    """
    if n_tar < 1 or n_non < 1 or not math.isfinite(eps_max_nats):
        return False
    return eps_max_nats >= eps_max_ceiling_nats(n_tar, n_non) * (1 - rtol)
