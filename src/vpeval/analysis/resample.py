"""The bootstrap of the family maximum (internal to :mod:`vpeval.analysis.secrecy`): resampling units
(speakers, probes) or trials drawn with replacement, eps_max evaluated at the target blocks only, the strongest
attacker re-selected in every replicate."""

from __future__ import annotations

import math

import numpy as np

from .relabel import _TrialPrep
from .worst_case import _eps_max_at_targets, eps_max_unit_weighted

_LN2 = math.log(2.0)


def _bootstrap_worst(preps, lid_obs, scheme, S, n_boot, seed, t_stats, l_stats):
    """Replicates of the family maximum of the worst-case statistics, re-selected per replicate (-inf where a
    replicate has no member with both classes), the number of units and the sorted unit names."""
    rng = np.random.default_rng([seed, 2])
    if scheme == "speaker":
        names = sorted(set().union(*[set(np.asarray(p.inp.probe_speaker, dtype=str).tolist()) for p in preps],
                                   *[set(pspk.tolist()) for _, _, pspk in lid_obs]))
    elif scheme == "probe":
        names = sorted(set().union(*[set(p.inp.trials.test.tolist()) for p in preps]))
    else:
        names = None
    if names is not None:
        U = len(names)
        W = rng.multinomial(U, np.full(U, 1.0 / U), size=n_boot).astype(np.float64)
    reps = np.full(n_boot, -np.inf)
    if "eps_max" in t_stats:
        for p in preps:
            if names is not None:
                pos = {s: k for k, s in enumerate(names)}
                src = p.inp.probe_speaker if scheme == "speaker" else p.inp.trials.test
                unit = np.array([pos[s] for s in np.asarray(src, dtype=str)[p.order].tolist()], dtype=np.int64)
                step = max(1, (1 << 22) // max(p.n_tar, U, 1))
                for lo in range(0, n_boot, step):  # O(K) per replicate: candidates at the target blocks only
                    v = eps_max_unit_weighted(unit, p.block, p.is_tar, W[lo:lo + step]) / _LN2
                    reps[lo:lo + step] = np.fmax(reps[lo:lo + step], v)
            else:
                reps = np.fmax(reps, _trial_bootstrap_eps_max(p, rng, n_boot) / _LN2)
    if "lid_max" in l_stats and names is not None:
        pos = {s: k for k, s in enumerate(names)}
        for _, lid, pspk in lid_obs:
            g = np.array([pos[s] for s in pspk.tolist()], dtype=np.int64)
            gmax = np.full(len(names), -np.inf)
            np.maximum.at(gmax, g, lid)
            reps = np.fmax(reps, np.where(W > 0, gmax[None, :], -np.inf).max(axis=1))
    n_units = len(names) if names is not None else int(preps[0].block.size)
    return reps, n_units, tuple(names or ())


def _trial_bootstrap_eps_max(p: _TrialPrep, rng, n_boot: int) -> np.ndarray:
    """eps_max (nats) of ``n_boot`` trial-bootstrap replicates (``n`` trials drawn with replacement), O(n)
    per replicate for the draw and O(K) for eps_max: the candidates of the min-max formulas at the blocks
    holding targets and the highest drawn block alone (:mod:`vpeval.analysis.worst_case`); the same values as
    :func:`~vpeval.analysis.worst_case.eps_max_from_block_counts` of the weighted block counts."""
    n = p.block.size
    tpos = np.flatnonzero(p.is_tar)
    tb = p.block[tpos]
    start = p.cum[tb]  # first canonical position of each target's block
    out = np.empty(n_boot)
    n_w = np.array([float(n)])
    cw = np.zeros(n + 1, dtype=np.int64)
    for r in range(n_boot):
        d = rng.integers(n, size=n)
        w = np.bincount(d, minlength=n)
        np.cumsum(w, out=cw[1:])
        wt = w[tpos]
        top = p.block[int(np.searchsorted(cw, n)) - 1]  # the highest block of positive weight
        lo, hi = np.searchsorted(tb, [top, top + 1])
        drawn = np.flatnonzero(wt)  # targets of weight 0 are absent (their candidates are dominated)
        out[r] = _eps_max_at_targets(wt[drawn].astype(np.float64)[None], cw[start[drawn]].astype(np.float64)[None],
                                     n_w, np.array([float(cw[p.cum[top + 1]] - cw[p.cum[top]])]),
                                     np.array([float(wt[lo:hi].sum())]))[0]
    return out
