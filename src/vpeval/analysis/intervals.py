"""The worst case's bootstrap interval (internal to :mod:`vpeval.analysis.secrecy`): when it can be a 90 %
interval at all (:func:`min_interval_units`, :func:`interval_refusal`) and the resampling units it rests on
(:func:`target_units`)."""

from __future__ import annotations

import math

import numpy as np

from .relabel import SPEAKER_SCHEMES

__all__ = ["WORST_CASE_LEVEL", "min_interval_units", "interval_refusal", "target_units"]

#: Level of the worst case's bootstrap interval.
WORST_CASE_LEVEL = 0.90


def min_interval_units(level: float = WORST_CASE_LEVEL) -> int:
    """The fewest resampling units a percentile bootstrap interval at ``level`` can rest on: the smallest ``n``
    whose ``C(2 n - 1, n)`` distinct resamples (multisets of ``n`` units drawn with replacement) reach
    :func:`vpeval.stats.results.min_replicates` (``level``), the replicates a percentile interval needs for one in
    each tail (19 at 90 %). With fewer units no number of replicates helps: the replicates take fewer distinct
    values than the tails need, and the interval is a span of repeated values (1 unit: every replicate the same
    trial, drawn once or more), not a 90 % interval. A floor, not a guarantee: the coverage above it is measured
    (docs/verdict_calibration.md).

    >>> min_interval_units(0.90), min_interval_units(0.95)
    (4, 5)
    """
    from ..stats.results import min_replicates

    need, n = min_replicates(level), 1
    while math.comb(2 * n - 1, n) < need:
        n += 1
    return n


def interval_refusal(target_units: int, n_boot: int, unit: str, level: float = WORST_CASE_LEVEL) -> str | None:
    """Why the worst case's interval at ``level`` is not computed, or None when it is: fewer ``unit`` holding
    targets than :func:`min_interval_units`, or fewer replicates than
    :func:`vpeval.stats.results.min_replicates`.

    >>> interval_refusal(1, 200, "target trials")[:95]
    'not computed: the worst case rests on 1 resampling unit holding targets (target trials); a 90 %'
    >>> interval_refusal(40, 200, "evaluation speakers") is None
    True
    """
    from ..stats.results import min_replicates

    need_u, need_r = min_interval_units(level), min_replicates(level)
    pct = f"{100 * level:g} %"
    if target_units < need_u:
        return (f"not computed: the worst case rests on {target_units} resampling unit"
                f"{'' if target_units == 1 else 's'} holding targets ({unit}); a {pct} bootstrap interval needs at "
                f"least {need_u} (n units have at most C(2n - 1, n) distinct resamples, "
                f"{math.comb(2 * need_u - 3, need_u - 1)} for {need_u - 1}, fewer than the {need_r} replicates "
                f"that put one in each {(100 - 100 * level) / 2:g} % tail)")
    if n_boot < need_r:
        return (f"not computed: {n_boot} bootstrap replicates; a {pct} percentile interval needs at least {need_r} "
                "(one in each tail; with fewer it is the replicates' min..max)")
    return None


def target_units(null, k: int, scheme: str) -> tuple[int, str]:
    """The resampling units holding targets of the member that owns column ``k`` (the worst case's), in words:
    its target trials (trial relabelling), probe utterances (probe), probe speakers with a target (speaker
    schemes), or a 1-to-N member's probe speakers."""
    kind, idx = null.owner[k]
    if kind == "l":
        m = null.lid_obs[idx][0].matrix
        return int(np.unique(np.asarray(m.probe_speaker, dtype=str)).size), "probe speakers"
    p = null.preps[idx]
    if scheme in SPEAKER_SCHEMES and p.inp.probe_speaker is not None:
        spk = np.asarray(p.inp.probe_speaker, dtype=str)[np.asarray(p.inp.trials.is_target, dtype=bool)]
        return int(np.unique(spk).size), "probe speakers with a target trial"
    return int(p.n_tar), ("probe utterances with a target trial" if scheme == "probe" else "target trials")
