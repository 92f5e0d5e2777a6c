r"""Paired comparison of the verdict's worst case between systems: one notion of the strongest attacker's
uncertainty for the verdict and the comparison.

The verdict's interval (:class:`~vpeval.analysis.secrecy.WorstCase`) is a bootstrap over the evaluation speakers
of the *family maximum*: the largest worst case (eps_max or LID_max, bits) over every attacker, attack trial type
and 1-to-N condition, with the strongest attacker **re-selected in every replicate**. Two systems audited on the
same speakers and tested with the same ``seed`` and ``n_boot`` draw the same speakers in replicate ``r``
(:attr:`~vpeval.analysis.secrecy.SecrecyTest.boot_max`), so the replicates are paired: the difference ``A - B``
of the two family maxima per replicate has a percentile interval whose shared speaker-to-speaker variation
cancels, exactly as in the headline comparisons of :mod:`vpeval.pipeline.compare`, which also re-select inside
each replicate. On the observed data the compared values are the two verdicts' worst cases.

A lower worst case protects better; an interval that excludes 0 names that system (95 % level, not corrected
for the other comparisons). Replicates where either system's maximum is undefined (a replicate without a target
or a non-target trial) are left out of the interval. Pairs tested on different units (other speakers, a trial or
probe scheme, other ``seed`` or ``n_boot``) are not paired and are noted instead.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from scipy import sparse

from ..errors import VpevalError
from ..pipeline.compare import HEADLINE_METRICS, Comparison, comparison_reading
from ..stats.results import order_statistic
from .secrecy import SecrecyTest

__all__ = ["WORST_CASE_METRIC", "SHARE_METRIC", "compare_worst_cases", "compare_profiles", "share_replicates"]

#: The key of the verdict's worst case among the comparisons' metrics (:data:`vpeval.pipeline.compare.HEADLINE_METRICS`).
WORST_CASE_METRIC = "worst_case"
#: The key of the share of trials beyond the budget (:func:`compare_profiles`).
SHARE_METRIC = "share_beyond"
#: The comparisons' trial type for the family maximum, which spans every attack trial type.
ALL_TYPES = "all"


def _unpaired(ta: SecrecyTest, tb: SecrecyTest) -> str | None:
    """Why two systems' speaker bootstraps cannot be paired, or None: both need speaker relabelling on the same
    speakers."""
    if ta.scheme != "speaker" or tb.scheme != "speaker":
        return "not both tested by speaker relabelling (no shared speakers to pair the bootstrap on)"
    if ta.boot_units != tb.boot_units:
        return "not evaluated on the same speakers"
    return None


def _pair(a: str, ta: SecrecyTest, b: str, tb: SecrecyTest, level: float) -> Comparison:
    if b < a:  # canonical order, so that swapping the systems negates the result exactly
        return _pair(b, tb, a, ta, level).swapped()
    ok = np.isfinite(ta.boot_max) & np.isfinite(tb.boot_max)
    diff_reps = ta.boot_max[ok] - tb.boot_max[ok]
    half = (1.0 - level) / 2.0
    lo, hi = order_statistic(diff_reps, [half, 1.0 - half])
    better = b if lo > 0 else (a if hi < 0 else None)  # lower disclosure protects better
    wa, wb = ta.worst, tb.worst
    return Comparison(a, b, ALL_TYPES, WORST_CASE_METRIC, HEADLINE_METRICS[WORST_CASE_METRIC][1], wa.value, wb.value,
                      f"{wa.attacker} ({wa.trial_type}, {wa.statistic})",
                      f"{wb.attacker} ({wb.trial_type}, {wb.statistic})", wa.value - wb.value, float(lo), float(hi),
                      level, int(ok.sum()), ta.seed, len(ta.boot_units),
                      len({m.attacker for m in ta.members} & {m.attacker for m in tb.members}), better,
                      comparison_reading(a, b, ALL_TYPES, WORST_CASE_METRIC, better))


def compare_worst_cases(tests: Mapping[str, SecrecyTest], *, level: float = 0.95) -> tuple[list[Comparison],
                                                                                           list[str]]:
    """Every pair of systems (input order, each pair once): the paired difference of their verdicts' worst cases.

    Parameters
    ----------
    tests : mapping system -> SecrecyTest
        Each system's perfect-secrecy test (:func:`~vpeval.analysis.secrecy.secrecy_test`).
    level : float in (0, 1)
        Level of the percentile interval of ``A - B`` (bits).

    Raises
    ------
    VpevalError
        ``level`` outside (0, 1).

    Returns
    -------
    (comparisons, notes)
        One :class:`~vpeval.pipeline.compare.Comparison` per pairable pair (``metric = "worst_case"``, unit
        ``bits``, ``trial_type = "all"``; ``attacker_*`` name the attacker, trial type and statistic of each
        observed worst case; ``n_boot`` counts the replicates defined for both); ``notes`` say which pairs are
        not paired and why.

    Examples
    --------
    >>> from vpeval.analysis import TrialInput, secrecy_test
    >>> from vpeval.io.trials import Trials
    >>> rng = np.random.default_rng(0)
    >>> spk = np.repeat([f"s{i}" for i in range(6)], 4)           # 6 speakers, 4 probes each
    >>> probe = np.array([f"{s}-{k}" for s, k in zip(spk, np.tile(range(4), 6))])
    >>> models = np.unique(spk)
    >>> def system(leak):
    ...     s = rng.standard_normal((24, 6)) + leak * (spk[:, None] == models[None, :])
    ...     t = Trials(s.ravel(), (spk[:, None] == models[None, :]).ravel(), np.tile(models, 24),
    ...                np.repeat(probe, 6))
    ...     inp = TrialInput("att", "oa", t, np.tile(models, 24), np.repeat(spk, 6))
    ...     return secrecy_test([inp], n_perm=99, n_boot=100, seed=1)
    >>> (c,), notes = compare_worst_cases({"leaky": system(4.0), "private": system(0.0)})
    >>> c.better, notes
    ('private', [])
    """
    if not (isinstance(level, (int, float)) and 0.0 < level < 1.0):
        raise VpevalError(f"level must be in (0, 1), got {level!r}")
    names = list(tests)
    out, notes = [], []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            ta, tb = tests[a], tests[b]
            why = _unpaired(ta, tb)
            if why is None and (ta.seed, ta.worst.n_boot) != (tb.seed, tb.worst.n_boot):
                why = "tested with another seed or number of bootstrap replicates"
            elif why is None and (ta.boot_max is None or tb.boot_max is None):
                why = "no bootstrap replicates"
            elif why is None and not (np.isfinite(ta.boot_max) & np.isfinite(tb.boot_max)).any():
                why = "no bootstrap replicate defines both worst cases"
            if why:
                notes.append(f"worst case: {a} and {b} are not compared: {why}")
                continue
            out.append(_pair(a, ta, b, tb, level))
    return out, notes


def _member_runs(p, names: np.ndarray):
    """Target and non-target counts of a profile member per unit and run (sparse, shape ``(U + 1, K)``: ``U =
    names.size`` units, row ``U`` the trials without a unit, whose weight is always 1; ``K`` runs in ascending
    score order), then the same per run alone (shape ``(K,)``).

    A run is a maximal stretch of tie blocks holding one class only, or one block holding both. Merging such
    stretches leaves :func:`~vpeval.metrics.profile.share_beyond_blocks` unchanged under any non-negative weights:
    inside a run of one class every block's ``p - x q`` has the same sign (or is 0), and a best region never
    starts or ends inside a stretch of one sign. The runs number at most ``2 min(n_tar, n_non) + 1`` plus the mixed
    blocks, where the tie blocks number up to the trials.
    """
    scores, is_tar, clusters = p.source
    _, block = np.unique(scores, return_inverse=True)
    block = block.reshape(-1)
    is_tar = np.asarray(is_tar, dtype=bool).reshape(-1)
    U = names.size
    unit = np.full(scores.size, U, dtype=np.int64)
    if clusters is not None and U:
        pos = np.searchsorted(names, clusters)
        ok = (pos < U) & (names[np.minimum(pos, U - 1)] == clusters)
        unit[ok] = pos[ok]
    B = int(block.max()) + 1
    has_t = np.bincount(block[is_tar], minlength=B) > 0
    has_n = np.bincount(block[~is_tar], minlength=B) > 0
    kind = has_t.astype(np.int8) + 2 * has_n.astype(np.int8)  # 1: targets only, 2: non-targets only, 3: both
    starts = np.r_[True, (kind[1:] != kind[:-1]) | (kind[1:] == 3)]
    run = np.cumsum(starts) - 1  # run of every block
    K = int(run[-1]) + 1
    rb = run[block]

    def counts(mask):
        cells, c = np.unique(unit[mask] * K + rb[mask], return_counts=True)
        return sparse.csc_array((c.astype(float), (cells // K, cells % K)), shape=(U + 1, K))

    return counts(is_tar), counts(~is_tar), np.bincount(rb[is_tar], minlength=K), np.bincount(rb[~is_tar], minlength=K)


def share_replicates(test: SecrecyTest, budget_bits: float, *, n_boot: int = 200, seed: int | None = None,
                     cache: dict | None = None, name: str = ""):
    """One system's side of :func:`compare_profiles`: (observed family share beyond the budget, its attacker,
    per-replicate shares of shape ``(n_boot,)``) on the replicate weights every pair with this system's speakers
    uses (``default_rng([seed, 3])`` multinomial draws over ``test.boot_units``; ``seed`` None: the test's own).
    ``cache``: a dict that remembers it under ``name`` and the draws' settings. Needs a test with privacy
    profiles."""
    from .verdict import check_budget

    b = check_budget(budget_bits)
    s = test.seed if seed is None else int(seed)
    units = np.asarray(test.boot_units, dtype=str)
    key = (name, s, int(n_boot), b, tuple(units.tolist()))
    if cache is not None and key in cache:
        return cache[key]
    rng = np.random.default_rng([s, 3])
    W = rng.multinomial(units.size, np.full(units.size, 1.0 / units.size), size=n_boot).astype(float)
    got = _share_replicates(test, b, W, units)
    if cache is not None:
        cache[key] = got
    return got


def _share_replicates(test: SecrecyTest, budget_bits: float, W: np.ndarray, names: np.ndarray):
    """(observed family share beyond the budget, its attacker, per-replicate family shares) of one system.

    ``W``: replicate weights of shape ``(R, names.size)`` (integer counts as floats: every weighted count below is
    an exact integer)."""
    from ..metrics.profile import share_beyond_blocks

    best = None
    R = W.shape[0]
    reps = np.full(R, -np.inf)
    w1 = np.c_[W, np.ones(R)].T  # (U + 1, R): the trials without a unit weigh 1 in every replicate
    for p in test.profiles:
        t, n, t0, n0 = _member_runs(p, names)
        v = share_beyond_blocks(t0, n0, budget_bits)
        key = (-v, p.attacker, p.trial_type)  # ties: by name, so the input order never matters
        if best is None or key < best[0]:
            best = (key, v, f"{p.attacker} ({p.trial_type})")
        step = max(1, (1 << 21) // t0.size)  # (step, K) weighted counts in memory at a time
        for lo in range(0, R, step):
            w = w1[:, lo:lo + step]
            v = share_beyond_blocks((t.T @ w).T, (n.T @ w).T, budget_bits)
            reps[lo:lo + step] = np.fmax(reps[lo:lo + step], np.where(np.isfinite(v), v, -np.inf))
    return best[1], best[2], reps


def compare_profiles(tests: Mapping[str, SecrecyTest], budget_bits: float, *, level: float = 0.95,
                     n_boot: int = 200, seed: int | None = None, cache: dict | None = None
                     ) -> tuple[list[Comparison], list[str]]:
    """Every pair of systems: the paired difference of their shares of trials beyond the budget.

    The compared value is each system's largest, over its attackers and trial types, of
    :func:`vpeval.metrics.profile.share_beyond`: the smallest delta at which eps(delta) is within the budget, i.e.
    the share of trials on which some attacker's decisions carry more than the budget. It is finite where eps at
    the verdict's delta is not, so it orders systems whose profiles all read infinite there (or whose eps_max all
    sit at the ceiling). Replicates draw the evaluation speakers with replacement (``default_rng([seed, 3])``, the
    same draws for both systems of a pair, which are evaluated on the same speakers), every trial weighted by its
    probe speaker's multiplicity, and re-select the strongest attacker in each; the interval is the percentile
    interval of ``A - B``. A lower share protects better.

    Parameters
    ----------
    tests : mapping system -> SecrecyTest
        With their members' privacy profiles (:func:`~vpeval.analysis.secrecy.secrecy_test`).
    budget_bits : float > 0
    level : float in (0, 1)
    n_boot : int >= 1
    seed : int or None
        None: each test's own seed.
    cache : dict, optional
        Each system's replicates already computed by :func:`share_replicates` with the same ``cache`` (e.g. as
        each test arrived); the same values as computed here.

    Returns
    -------
    (comparisons, notes)
        One :class:`~vpeval.pipeline.compare.Comparison` per pairable pair (``metric = "share_beyond"``, unit
        ``fraction``, ``trial_type = "all"``); ``notes`` say which pairs are not paired and why.

    Raises
    ------
    VpevalError
        ``level`` outside (0, 1), ``n_boot < 1``, a bad budget.
    """
    from .verdict import check_budget

    b = check_budget(budget_bits)
    if not (isinstance(level, (int, float)) and 0.0 < level < 1.0):
        raise VpevalError(f"level must be in (0, 1), got {level!r}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
        raise VpevalError(f"n_boot must be an integer >= 1, got {n_boot!r}")
    names = list(tests)
    out, notes, cache = [], [], ({} if cache is None else cache)
    for i, a in enumerate(names):
        for bname in names[i + 1:]:
            ta, tb = tests[a], tests[bname]
            why = _unpaired(ta, tb)
            if why is None and (not ta.profiles or not tb.profiles):
                why = "no privacy profiles"
            if why:
                notes.append(f"share beyond the budget: {a} and {bname} are not compared: {why}")
                continue
            s = ta.seed if seed is None else int(seed)
            ra, rb = (share_replicates(t, b, n_boot=n_boot, seed=s, cache=cache, name=name)
                      for name, t in ((a, ta), (bname, tb)))
            out.append(_share_pair(a, ra, bname, rb, level, s, len(ta.boot_units),
                                   len({p.attacker for p in ta.profiles} & {p.attacker for p in tb.profiles})))
    return out, notes


def _share_pair(a, ra, b, rb, level, seed, n_units, n_att) -> Comparison:
    if b < a:
        return _share_pair(b, rb, a, ra, level, seed, n_units, n_att).swapped()
    (va, wa, reps_a), (vb, wb, reps_b) = ra, rb
    ok = np.isfinite(reps_a) & np.isfinite(reps_b)
    half = (1.0 - level) / 2.0
    lo, hi = order_statistic(reps_a[ok] - reps_b[ok], [half, 1.0 - half])
    better = b if lo > 0 else (a if hi < 0 else None)
    return Comparison(a, b, ALL_TYPES, SHARE_METRIC, HEADLINE_METRICS[SHARE_METRIC][1], va, vb, wa, wb, va - vb,
                      float(lo), float(hi), level, int(ok.sum()), seed, n_units, n_att, better,
                      comparison_reading(a, b, ALL_TYPES, SHARE_METRIC, better))
