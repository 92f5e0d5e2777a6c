"""Attribution: which attacker reaches the worst value of a metric, and that attacker's own number.

Every table and sentence of an audit that names an attacker beside a number ("the strongest attacker",
"worst case over attackers", the scorecard) takes both from :func:`worst_over_attackers`, so a name can never
be paired with another attacker's number (issue 27: the aggregate oaaa row once named one attacker with the
interpolated EER of another).

"Worst" means worst for privacy, or for the anonymizer's own goal, metric by metric and trial type by trial type
(:func:`worse_direction`):

========================================  ==================================  =======================================
metric                                    trial type                          worst
========================================  ==================================  =======================================
EER (``eer_rocch``, ``eer_interp``, ...)  attacks (oa, aa, oaoa; ideal 50 %)  lowest (the attacker separates best)
minCllr (``min_cllr_bits``)               any                                 lowest (most information in the scores)
EER                                       aaaa, aa-centroid (ideal 0 %)     highest (the pseudo-voice is least
                                                                              consistent / distinct)
EER                                       oaoo, oaaa (ideal 50 %, two-sided)  farthest from 50 % in either direction
EER                                       reference (oo)                      lowest (the attacker's capability)
eps_max, D_ECE, ALID, LID_max, rank-1     any                                 highest (most disclosure)
========================================  ==================================  =======================================

Ties are broken by attacker name, then by trial type (sorted), so the choice does not depend on the order the
attackers were fielded.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..pipeline import TRIAL_TYPES
from ..pipeline.protocols.trials import TWO_SIDED_TYPES

__all__ = ["worse_direction", "worst_over_attackers", "HIGHER_IS_WORSE", "LOWER_IS_WORSE_EERS"]

#: Metrics whose largest value is the worst case for privacy on every trial type (disclosure, identification).
HIGHER_IS_WORSE = frozenset({"eps_max_nats", "d_ece_bits", "alid_bits", "lid_max_bits", "rank1", "linkability"})

#: Error rates: which way is worse depends on the trial type's ideal (:func:`worse_direction`).
LOWER_IS_WORSE_EERS = frozenset({"eer_rocch", "eer_interp", "eer_closest", "eer"})

#: Calibration-free information (bits): lower = more information in the scores, on every trial type.
_LOWER_IS_WORSE = frozenset({"min_cllr_bits"})


def worse_direction(metric: str, trial_type: str | None = None) -> str:
    """Which way ``metric`` is worse for privacy (or for the anonymizer's own goal) on ``trial_type``.

    Parameters
    ----------
    metric : str
        A key of the audit's per-attacker metrics (``eer_rocch``, ``eer_interp``, ``min_cllr_bits``,
        ``eps_max_nats``, ``d_ece_bits``, ``alid_bits``, ``lid_max_bits``, ``rank1``, ``linkability``).
    trial_type : str, optional
        A name of :data:`vpeval.pipeline.TRIAL_TYPES`; needed for error rates, whose worst side depends on the
        type's ideal (module docstring).

    Returns
    -------
    str
        ``"highest"``, ``"lowest"`` or ``"farthest from 50 %"``.

    Raises
    ------
    ValueError
        An unknown metric, or an error rate without a known trial type.

    >>> worse_direction("eer_rocch", "oa"), worse_direction("eer_rocch", "aaaa"), worse_direction("eps_max_nats")
    ('lowest', 'highest', 'highest')
    >>> worse_direction("eer_interp", "oaaa")
    'farthest from 50 %'
    """
    if metric in HIGHER_IS_WORSE:
        return "highest"
    if metric in _LOWER_IS_WORSE:
        return "lowest"
    if metric not in LOWER_IS_WORSE_EERS:
        raise ValueError(f"no stated direction for metric {metric!r}")
    if trial_type not in TRIAL_TYPES:
        raise ValueError(f"the worse side of an error rate depends on the trial type; got {trial_type!r}")
    if trial_type in TWO_SIDED_TYPES:
        return "farthest from 50 %"
    target = TRIAL_TYPES[trial_type].target_eer
    return "highest" if target == 0.0 else "lowest"


def _badness(direction: str, v: float) -> float:
    """A number that is larger the worse ``v`` is (NaN: never the worst)."""
    if v is None or not math.isfinite(v):
        return -math.inf
    if direction == "highest":
        return v
    if direction == "lowest":
        return -v
    return abs(v - 0.5)


def worst_over_attackers(values: Mapping, metric: str, trial_type: str | None = None, *,
                         by: str | None = None) -> dict | None:
    """The attacker with the worst value of ``metric`` (:func:`worse_direction`) and that attacker's own numbers.

    Parameters
    ----------
    values : mapping
        ``attacker -> metrics`` or ``(attacker, trial_type) -> metrics``, where ``metrics`` is a mapping of metric
        key -> number (an audit's ``type_metrics[attacker][trial_type]``), or a plain number (taken as
        ``metric``). With tuple keys the result also names the trial type.
    metric : str
        The metric to report (``value``).
    trial_type : str, optional
        The trial type of every value (for the direction of error rates); with tuple keys each key's own type
        is used.
    by : str, optional
        Rank the attackers on this metric instead of ``metric`` (e.g. oaaa ranks on ``eer_interp`` and reports the
        same attacker's ``eer_rocch``); default ``metric``.

    Returns
    -------
    dict or None
        ``{"attacker", ["trial_type",] "metric", "value", "by", "direction"}``: ``value`` is the chosen attacker's
        own ``metric``; None when no value is finite. Ties: attacker name, then trial type.

    Raises
    ------
    ValueError
        From :func:`worse_direction`.

    >>> rows = {"a": {"eer_rocch": 0.5, "eer_interp": 0.6}, "b": {"eer_rocch": 0.5, "eer_interp": 0.9}}
    >>> w = worst_over_attackers(rows, "eer_rocch", "oaaa", by="eer_interp")
    >>> w["attacker"], w["value"]
    ('b', 0.5)
    """
    by = by or metric

    def get(v, key):
        return v if not isinstance(v, Mapping) else v.get(key)

    def ttype(k):
        return k[1] if isinstance(k, tuple) else trial_type

    def order(k):
        bad = _badness(worse_direction(by, ttype(k)), get(values[k], by))
        return (-bad,) + ((k[0], k[1]) if isinstance(k, tuple) else (k, ""))

    keys = sorted((k for k in values if math.isfinite(_badness("highest", get(values[k], by)))), key=order)
    if not keys:
        return None
    k = keys[0]
    out = {"attacker": k[0] if isinstance(k, tuple) else k}
    if isinstance(k, tuple):
        out["trial_type"] = k[1]
    value = get(values[k], metric)
    out.update({"metric": metric, "value": None if value is None else float(value), "by": by,
                "direction": worse_direction(by, ttype(k))})
    return out
