"""The bootstrap of the family maximum (internal to :mod:`vpeval.analysis.secrecy`): resampling units
(speakers, probes) or trials drawn with replacement, eps_max evaluated at the target blocks only, the strongest
attacker re-selected in every replicate."""

from __future__ import annotations

import math

import numpy as np

from ..keys import sorted_codes
from .cells import cell_bootstrap_eps_max
from .relabel import SPEAKER_SCHEMES, _TrialPrep, index_in
from .trial_boot import lazy_trial_bootstrap
from .worst_case import PRUNE_MIN_TARGETS, _eps_max_at_targets, eps_max_unit_weighted

_LN2 = math.log(2.0)


def _bootstrap_worst(preps, lid_obs, scheme, S, n_boot, seed, t_stats, l_stats):
    """Replicates of every member's worst-case statistic on the same draws, from which the family maximum (and
    any sub-family's) is re-selected per replicate.

    Returns ``(t_reps, l_reps, n_units, names)``: ``t_reps[i]`` is the eps_max of ``preps[i]`` per replicate
    (bits, shape ``(n_boot,)``; -inf where a replicate drew no target or no non-target trial; ``t_reps`` empty
    without ``eps_max``), ``l_reps[j]`` the LID_max of ``lid_obs[j]`` per replicate (empty without ``lid_max``
    or units), the number of units, and the sorted unit names."""
    rng = np.random.default_rng([seed, 2])
    kind = {"speaker": "probe", "speaker-row": "probe", "probe": "test"}.get(scheme)  # the unit's key of each trial
    if scheme in SPEAKER_SCHEMES:
        keys = [p.codes(kind)[0] for p in preps] + [pspk for _, _, pspk in lid_obs]
    elif scheme == "probe":
        keys = [p.codes(kind)[0] for p in preps]
    names_arr = sorted_codes(np.concatenate(keys))[0] if kind is not None else None  # sorted, distinct
    names = None if names_arr is None else names_arr.tolist()
    if names is not None:
        U = len(names)
        W = rng.multinomial(U, np.full(U, 1.0 / U), size=n_boot).astype(np.float64)
    t_reps, l_reps = [], []
    if "eps_max" in t_stats:
        for p in preps:
            if names is not None:
                reps = np.empty(n_boot)
                unit = p.index_of(kind, names_arr)
                step = max(1, (1 << 22) // max(p.n_tar, U, 1))
                for lo in range(0, n_boot, step):  # O(K) per replicate: candidates at the target blocks only
                    sl = slice(lo, lo + step)
                    reps[sl] = eps_max_unit_weighted(unit, p.block, p.is_tar, W[sl]) / _LN2
            else:
                reps = _trial_bootstrap_eps_max(p, rng, n_boot) / _LN2
            # NaN (no target or no non-target drawn) reads as absent from the maximum
            t_reps.append(np.where(np.isnan(reps), -np.inf, reps))
    if "lid_max" in l_stats and names is not None:
        for _, lid, pspk in lid_obs:
            g = index_in(names_arr, pspk)
            gmax = np.full(len(names), -np.inf)
            np.maximum.at(gmax, g, lid)
            l_reps.append(np.where(W > 0, gmax[None, :], -np.inf).max(axis=1))
    n_units = len(names) if names is not None else int(preps[0].cum[-1])
    return t_reps, l_reps, n_units, tuple(names or ())


def family_maximum(t_reps, l_reps, n_boot: int, t_keep=None, l_keep=None) -> np.ndarray:
    """Per replicate, the maximum over the kept members of :func:`_bootstrap_worst`'s replicates (all when
    ``t_keep``/``l_keep`` is None; -inf where no kept member has a value): the worst case."""
    out = np.full(n_boot, -np.inf)
    for i, plain in enumerate(t_reps):
        if t_keep is None or i in t_keep:
            out = np.fmax(out, plain)
    for j, v in enumerate(l_reps):
        if l_keep is None or j in l_keep:
            out = np.fmax(out, v)
    return out


def _trial_bootstrap_eps_max(p: _TrialPrep, rng, n_boot: int):
    """eps_max (nats) of ``n_boot`` trial-bootstrap replicates (``n`` trials drawn with replacement), O(n)
    per replicate for the draw and O(K) for eps_max: the candidates of the min-max formulas at the blocks
    holding targets and the highest drawn block alone (:mod:`vpeval.analysis.worst_case`); the same values as
    :func:`~vpeval.analysis.worst_case.eps_max_from_block_counts` of the weighted block counts.

    Members with more than ``PRUNE_MIN_TARGETS`` targets are resampled by
    :func:`~vpeval.analysis.trial_boot.lazy_trial_bootstrap`: the same multinomial bootstrap, its multiplicities
    drawn in two stages and only where eps_max looks (about 65 ms instead of 200 ms per replicate of 1e7 trials);
    the values are those of the completed weights, the draws (for a seed) other than those of ``n`` indices."""
    if p.cells is not None:  # a member tested on cells: their counts' bootstrap (vpeval.analysis.cells)
        return cell_bootstrap_eps_max(p.cells, p.cell_tar, rng, n_boot)
    if int(p.n_tar) > PRUNE_MIN_TARGETS:  # large members: the same bootstrap, drawn where eps_max looks
        return lazy_trial_bootstrap(p, rng, n_boot)
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
        wtd = wt[drawn].astype(np.float64)[None]
        out[r] = _eps_max_at_targets(wtd, cw[start[drawn]].astype(np.float64)[None], n_w,
                                     np.array([float(cw[p.cum[top + 1]] - cw[p.cum[top]])]),
                                     np.array([float(wt[lo:hi].sum())]))[0]
    return out
