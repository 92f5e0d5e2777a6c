"""Linkage from repeated recordings: LID, rank-1 identification and the privacy profile of k probes of one speaker
combined (:func:`combined_probes`).

A speaker who releases k anonymized recordings gives the attacker k pieces of evidence; the LID paper
(``shared/seeds/lid_linkage_003.txt``) lists cross-session fusion as an open limitation, and vpeval otherwise
scores each probe alone. Here the attacker's calibrated LLRs ``l_p`` (nats, one row of N enrolled speakers per
probe ``p``) of a set ``P`` of ``k`` probes of one speaker are combined into one row ``c`` by a rule:

- ``"sum"``: ``c_j = sum_p l_pj``, Bayes' rule for probes independent given the speaker (the same as the product
  of the probes' posteriors: each probe's normaliser is the same for every column and cancels);
- ``"mean"``: ``c_j = mean_p l_pj``, score averaging (the ranks of ``"sum"``, a softmax k times cooler);
- ``"max"``: ``c_j = max_p l_pj``, the best-matching recording decides;
- ``"posterior"``: ``c_j = log(mean_p softmax(l_p)_j)``, the probes' posteriors averaged.

Then as for one probe: LID = ``log2 N + (c_t - logsumexp(c)) / ln 2`` bits for the true column ``t``, rank-1
identification = ``c_t`` above every other column (ties shared: ``1 / (1 + tied others)``), and the privacy
profile eps(delta) (bits, :func:`vpeval.metrics.profile.privacy_profile_bits`) of the combined rows' true entries
(targets) against their other entries (non-targets).

The sets: for a speaker with ``n_s >= k`` probes, every one of its ``C(n_s, k)`` k-subsets where there are at most
``max_subsets`` of them (exact), otherwise ``max_subsets`` drawn uniformly (sampled, with replacement among
subsets: the output says which). A speaker's values are averaged over its sets; ALID, rank-1 and LID_max are over
the speakers holding at least ``k`` probes (each speaker weighs the same, however many probes it has), with a
bootstrap of those speakers (percentile intervals, the sets held fixed). ``k = 1`` is every probe alone,
averaged per speaker first.
"""

from __future__ import annotations

import itertools
import math
import zlib
from dataclasses import dataclass

import numpy as np
from scipy import special

from ...errors import InvalidScoresError
from ..profile import privacy_profile_bits
from .population import largest_within_budget, row_fingerprints

__all__ = ["COMBINE_RULES", "CombinedProbes", "combined_probes"]

_LN2 = math.log(2.0)
#: The aggregation rules (module docstring).
COMBINE_RULES = ("sum", "mean", "max", "posterior")


@dataclass(frozen=True)
class CombinedProbes:
    """LID, rank-1 identification and the privacy profile of k combined probes (:func:`combined_probes`).

    Attributes
    ----------
    ks : ndarray of int64, shape (m,)
        The numbers of combined probes.
    rules : tuple of str
    n_speakers : ndarray of int64, shape (m,)
        Speakers holding at least k probes (the ones each k is measured on: the speakers differ between ks).
    alid_one_bits : ndarray of float, shape (m,)
        ALID (bits) of single probes over the same speakers as each k (each speaker's probes alone, averaged,
        then over those speakers): what combining adds is ``rows[rule]["alid_bits"] - alid_one_bits``, not the
        difference between two ks, whose speakers differ.
    exact : ndarray of bool, shape (m,)
        True where every speaker's every k-subset was used.
    rows : dict rule -> dict
        Per rule, arrays of shape (m,): ``alid_bits``, ``alid_low``, ``alid_high``, ``rank1``, ``rank1_low``,
        ``rank1_high``, ``speaker_lid_max_bits`` (the largest speaker's LID, each speaker's averaged over its
        sets: not the largest probe's), ``speaker_lid_max_low``, ``speaker_lid_max_high``, ``eps_bits`` (eps at
        ``delta``).
    delta : float
    n_enrolled : int
        N, the columns every combined row is scored over.
    level : float
    n_boot, max_subsets : int
    budget_bits : float or None
    notes : tuple of str
        What was not computed and why (a profile over ``max_profile_trials``).
    within_budget_up_to : dict rule -> int or None
        The largest k up to which the largest speaker's LID stays within the budget (every smaller k too); None
        when k = 1 already exceeds it or no budget was given. Read on the estimate: a percentile bootstrap
        interval of a maximum never reaches above the largest value seen.
    """

    ks: np.ndarray
    rules: tuple
    n_speakers: np.ndarray
    exact: np.ndarray
    rows: dict
    delta: float
    n_enrolled: int
    level: float
    n_boot: int
    max_subsets: int
    budget_bits: float | None
    within_budget_up_to: dict
    notes: tuple = ()
    alid_one_bits: np.ndarray | None = None

    def to_dict(self) -> dict:
        """JSON-ready dict (arrays as lists)."""
        return {"ks": self.ks.tolist(), "rules": list(self.rules), "n_speakers": self.n_speakers.tolist(),
                "exact": self.exact.tolist(),
                "rows": {r: {k: [None if math.isnan(e) else e for e in v.tolist()] for k, v in d.items()}
                         for r, d in self.rows.items()},
                "delta": self.delta, "n_enrolled": self.n_enrolled, "level": self.level, "n_boot": self.n_boot,
                "max_subsets": self.max_subsets, "budget_bits": self.budget_bits,
                "within_budget_up_to": self.within_budget_up_to, "notes": list(self.notes),
                "alid_one_bits": None if self.alid_one_bits is None else self.alid_one_bits.tolist()}


def _combine(block: np.ndarray, rule: str) -> np.ndarray:
    """Combined rows of ``block`` (shape (sets, k, N)) by ``rule``: shape (sets, N)."""
    if rule == "sum":
        return block.sum(axis=1)
    if rule == "mean":
        return block.mean(axis=1)
    if rule == "max":
        return block.max(axis=1)
    log_post = block - special.logsumexp(block, axis=2, keepdims=True)
    return special.logsumexp(log_post, axis=1) - math.log(block.shape[1])


def _subsets(n_s: int, k: int, max_subsets: int, rng) -> tuple[np.ndarray, bool]:
    """The k-subsets of ``range(n_s)`` (rows of an int array): all when at most ``max_subsets``, else that
    many drawn uniformly."""
    if math.comb(n_s, k) <= max_subsets:
        return np.array(list(itertools.combinations(range(n_s), k)), dtype=np.int64).reshape(-1, k), True
    keys = rng.random((max_subsets, n_s))
    return np.sort(np.argpartition(keys, k - 1, axis=1)[:, :k], axis=1), False


def _bootstrap_rows(per: np.ndarray, n_boot: int, rng, stat) -> np.ndarray:
    """``stat`` over axis 0 of ``per`` (speakers x values) for ``n_boot`` resamples of the speakers."""
    n = per.shape[0]
    return np.array([stat(per[rng.integers(0, n, n)]) for _ in range(n_boot)])


def combined_probes(llr_matrix, true_index, ks, *, rules=COMBINE_RULES, profile_rules=("sum",), delta: float = 0.05,
                    max_profile_trials: int = 20_000_000, max_subsets: int = 200, n_boot: int = 200,
                    level: float = 0.95, budget_bits: float | None = None, seed: int = 0) -> CombinedProbes:
    """LID, rank-1 identification and eps(delta) of k probes of one speaker combined (module docstring).

    Parameters
    ----------
    llr_matrix : array_like of shape (n_probes, N)
        Calibrated LLRs (nats) of every probe against every enrolled speaker (e.g. the LID chain's).
    true_index : array_like of int, shape (n_probes,)
        Column of each probe's speaker; probes with the same column are one speaker's recordings.
    ks : iterable of int >= 1
        Numbers of probes to combine; a k that no speaker holds is refused.
    rules : iterable of str
        Any of :data:`COMBINE_RULES`.
    profile_rules : iterable of str
        The rules whose privacy profile is computed (it sorts every combined row's ``N - 1`` non-target
        entries, the costly part); ``eps_bits`` is NaN for the others.
    max_profile_trials : int
        Most combined non-target entries a profile is computed on (about 64 bytes each while it runs); a k with
        more gets NaN and a line in ``notes`` saying so.
    delta : float
        The privacy profile is read at this delta, in (0, 1).
    max_subsets : int
        Most k-subsets per speaker (all of them below it, else sampled).
    n_boot : int
        Bootstrap replicates of the speakers (0: the bounds equal the estimates).
    level : float
        Two-sided level of the intervals.
    budget_bits : float, optional
        Read LID_max's interval against this budget (bits).
    seed : int

    Returns
    -------
    CombinedProbes

    Raises
    ------
    InvalidScoresError
        Not a 2-D finite matrix, true index out of range, an unknown rule, k < 1 or held by no speaker, delta
        or level outside (0, 1).

    Notes
    -----
    Order: a speaker's sets come from a stream keyed by its true LLRs, its rows are ordered by their contents,
    and the bootstrap resamples the speakers sorted by their values: the result depends on neither the order of
    the rows nor that of the columns (nor on the speakers' names). Cost: ``sum over k of (speakers x sets x k x
    N)`` operations, memory one speaker's sets at a time, and, for each profiled rule and k, every combined row
    (``speakers x sets x N`` values, sorted for the profile).
    """
    x = np.asarray(llr_matrix, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] < 2:
        raise InvalidScoresError(f"llr_matrix: expected a 2-D array with at least 2 columns, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise InvalidScoresError("llr_matrix: LLRs must be finite")
    n, N = x.shape
    ti = np.asarray(true_index)
    if ti.shape != (n,) or ti.dtype.kind not in "iu" or (ti < 0).any() or (ti >= N).any():
        raise InvalidScoresError(f"true_index: expected {n} integers in 0..{N - 1}")
    rules = tuple(rules)
    profiled = tuple(r for r in rules if r in tuple(profile_rules))
    bad = [r for r in rules + tuple(profile_rules) if r not in COMBINE_RULES]
    if bad or not rules:
        raise InvalidScoresError(f"rules: expected some of {', '.join(COMBINE_RULES)}, got {list(rules)}")
    if not 0.0 < delta < 1.0 or not 0.0 < level < 1.0:
        raise InvalidScoresError("delta and level must lie in (0, 1)")
    ks = np.unique(np.asarray(list(ks), dtype=np.int64))
    counts = np.bincount(ti, minlength=N)
    if ks.size == 0 or ks[0] < 1 or ks[-1] > counts.max():
        raise InvalidScoresError(f"ks: expected numbers of probes from 1 to {int(counts.max())} (the most probes "
                                 f"one speaker has), got {ks.tolist()}")
    # rows in an order fixed by their contents: by speaker, then by a fingerprint of each row's sorted LLRs (the
    # same bits whatever the column order) and its true LLR
    g = x[np.arange(n), ti]
    order = np.lexsort((g, row_fingerprints(x), ti))
    x, ti, g = x[order], ti[order], g[order]
    starts = np.r_[0, np.cumsum(counts)]
    alpha = (1.0 - level) / 2.0
    keys = ("alid_bits", "alid_low", "alid_high", "rank1", "rank1_low", "rank1_high", "speaker_lid_max_bits",
            "speaker_lid_max_low", "speaker_lid_max_high", "eps_bits")
    rows = {r: {k: np.empty(ks.size) for k in keys} for r in rules}
    n_spk = np.empty(ks.size, dtype=np.int64)
    exact = np.ones(ks.size, dtype=bool)
    notes = []
    # each speaker's single-probe LID, averaged over its probes: the baseline of every k on the same speakers
    single = np.full(N, np.nan)
    for s in np.flatnonzero(counts).tolist():
        rows_s = x[starts[s]:starts[s + 1]]
        single[s] = ((math.log(N) + rows_s[:, s] - special.logsumexp(rows_s, axis=1)) / _LN2).mean()
    alid_one = np.array([np.sort(single[counts >= k]).mean() for k in ks.tolist()])
    for j, k in enumerate(ks.tolist()):
        speakers = np.flatnonzero(counts >= k)
        n_sets = sum(min(math.comb(int(c), k), max_subsets) for c in counts[speakers])
        profile_now = profiled if n_sets * (N - 1) <= max_profile_trials else ()
        if profiled and not profile_now:
            notes.append(f"k = {k}: no privacy profile, {n_sets * (N - 1):,} combined non-target entries exceed "
                         f"max_profile_trials = {max_profile_trials:,}")
        n_spk[j] = speakers.size
        per = {r: np.empty((speakers.size, 2)) for r in rules}  # per speaker: mean LID, rank-1
        tar = {r: [] for r in rules}
        non = {r: [] for r in rules}
        for i, s in enumerate(speakers.tolist()):
            # each speaker's sets from a stream of its own, keyed by its true LLRs (not by its column)
            key = zlib.crc32(np.sort(g[starts[s]:starts[s + 1]]).tobytes())
            sets, full = _subsets(int(counts[s]), k, max_subsets, np.random.default_rng([seed, k, key]))
            exact[j] &= full
            block = x[starts[s]:starts[s + 1]][sets]  # (sets, k, N)
            for r in rules:
                c = _combine(block, r)
                ct = c[:, s]
                lid = (math.log(N) + ct - special.logsumexp(c, axis=1)) / _LN2
                above = (c > ct[:, None]).sum(axis=1)
                tied = (c == ct[:, None]).sum(axis=1) - 1
                per[r][i] = lid.mean(), np.where(above == 0, 1.0 / (1.0 + tied), 0.0).mean()
                if r in profile_now:
                    tar[r].append(ct)
                    non[r].append(np.delete(c, s, axis=1).ravel())
        for r in rules:
            p = per[r][np.lexsort(per[r].T[::-1])]  # the speakers in an order fixed by their values
            est = np.array([p[:, 0].mean(), p[:, 1].mean(), p[:, 0].max()])
            if n_boot > 0:
                reps = _bootstrap_rows(p, n_boot, np.random.default_rng([seed, k, 0]),
                                       lambda q: np.array([q[:, 0].mean(), q[:, 1].mean(), q[:, 0].max()]))
                lo, hi = np.quantile(reps, alpha, axis=0), np.quantile(reps, 1.0 - alpha, axis=0)
            else:
                lo, hi = est, est
            d = rows[r]
            d["alid_bits"][j], d["rank1"][j], d["speaker_lid_max_bits"][j] = est
            d["alid_low"][j], d["rank1_low"][j], d["speaker_lid_max_low"][j] = lo
            d["alid_high"][j], d["rank1_high"][j], d["speaker_lid_max_high"][j] = hi
            d["eps_bits"][j] = (float(privacy_profile_bits(np.concatenate(tar[r]), np.concatenate(non[r]),
                                                           delta=delta)) if r in profile_now else float("nan"))
            tar[r], non[r] = [], []  # freed before the next rule's profile
    within = {r: largest_within_budget(rows[r]["speaker_lid_max_bits"], ks, budget_bits) for r in rules}
    return CombinedProbes(ks, rules, n_spk, exact, rows, float(delta), N, level, n_boot, max_subsets, budget_bits,
                          within, tuple(notes), alid_one)
