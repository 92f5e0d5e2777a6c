"""Linkage against a population of a given size: rank-1 identification, ALID and LID_max as functions of the
number of enrolled speakers N', measured up to the data's N and extrapolated beyond it (:func:`population_curves`).

An attacker who searches a database of N' speakers links a probe to the top-scoring one. vpeval's 1-to-N
metrics hold for the N speakers the user enrolled; a deployment faces other sizes (legal-eval 2.1.0, Vauquier et
al., Interspeech 2025, reports linkability from 20 to 21,920 speakers). Two regimes:

**Measured (N' <= N).** The true speaker competes with ``m = N' - 1`` others drawn uniformly without
replacement from the probe's ``N - 1`` other enrolled speakers.

- Rank-1 identification (= closed-set linkability, :func:`~vpeval.metrics.identification.closed_set_linkability`:
  in a closed set the two are the same event) is exact. A probe with ``a`` others scoring above its true speaker
  and ``t`` tied with it wins with probability (ties broken uniformly at random within the drawn set)::

      P(m) = sum_{j=0..t} C(N-1-a-j, m) / ((t+1) C(N-1, m))
           = (C(N-a, m+1) - C(N-1-a-t, m+1)) / ((t+1) C(N-1, m))        (hockey-stick identity)

- LID of a probe at N' (bits, :mod:`vpeval.metrics.linkage`, its calibrated LLRs ``l`` kept as they are: the
  population changes who competes, not the attacker) is ``log2 N' + (l_t - logsumexp(l_t, l_S)) / ln 2`` for the
  drawn set ``S``; it is averaged over ``n_subsets`` random sets per probe (sampled, not exact; the intervals
  resample the probes' averages, not the sets). The sets of one draw are nested across N': the first ``N' - 1``
  entries of one random permutation of the positions of the probe's sorted impostors, shifted cyclically by a
  random shift of the probe's own, a uniform set of others for every probe and every N', drawn without regard to
  the order of the columns.

**Extrapolated (N' > N).** The model of Grother & Phillips ("Models of large population recognition
performance", CVPR 2004): a probe's ``N' - 1`` impostors are independent draws from one impostor distribution
``F``, the pooled impostor scores of all probes (every probe's own ``N - 1``; thinned to every ``s``-th order
statistic of each row beyond ``max_pool`` values, which keeps the answer free of the row order). The scores must
therefore be on one scale for every probe: the LID chain's z-normalised rows, whose LLRs are ``slope * z`` plus a
constant of the row (the slope of the probe's cross-fitting fold; the constant cancels in LID), or LLRs
themselves (``slope = 1``); pooling LLRs of folds with different slopes mixes scales, which the check below
catches. Its upper tail is extrapolated by a generalised Pareto distribution fitted (maximum likelihood,
``scipy.stats.genpareto``) to the excesses over the pooled ``1 - tail_share`` quantile ``u`` (peaks over
threshold; below ``u`` the empirical distribution). Then, per probe with true LLR ``g``::

    rank-1(N') = F(g)^(N' - 1)                      (F(g): impostors below g, half of those equal)
    LID(N')    = log2 N' + (w g - log(e^(w g) + S)) / ln 2,    S = the sum of N' - 1 impostor ratios e^(w x)

``S`` is drawn by Monte Carlo (``n_subsets`` draws per probe): the impostors above a cutoff (``u``, or higher
where more than :data:`_TAIL_DRAWS` of them are expected) one by one from the tail model, those below it by their
count (binomial) times their mean likelihood ratio plus a normal term of their variance (central limit: they are
bounded; mean and variance integrated from the model). Assumptions, stated in the output: impostors
independent of each other and of the probe (no wolves, no lambs beyond what the pooled distribution holds),
the enrolled speakers a random sample of the population, and the tail model beyond the largest impostor seen.
The check (``check``): the same model fitted on a random quarter of each probe's impostors predicts the measured
curves at the sizes between that quarter and N; the largest differences are reported.

Intervals: a bootstrap of the probes' speakers (``unit="speaker"``; of probes where no speaker is given), the
impostor model held fixed (its error is what the check shows), percentile intervals at ``level``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy import integrate, special, stats

from ... import rowscan
from ...errors import ExtrapolationWarning, InvalidScoresError, VpevalError, user_stacklevel
from .population_rows import block_rows, first_pass, row_fingerprints, row_zscores, second_pass

__all__ = ["PopulationCurves", "population_curves", "default_population_sizes", "row_fingerprints", "row_zscores"]

_LN2 = math.log(2.0)
#: The check's largest differences beyond which the extrapolation is flagged (:class:`ExtrapolationWarning`):
#: rank-1 (absolute) and ALID (bits). Under the model's own assumptions the check stayed within 0.015 and 0.05
#: on 300 x 400 tables (docs/beyond.md); a probe-dependent impostor spread gave 0.15 and 0.74.
CHECK_RANK1 = 0.05
CHECK_ALID_BITS = 0.25
#: Slack of a budget comparison (bits): LID is at most log2 N', which equals a budget of log2 10 up to rounding.
BUDGET_TOLERANCE_BITS = 1e-9
#: Largest population size (a trillion: beyond any population; the int64 arithmetic has room).
MAX_POPULATION = 10 ** 12
#: Fewest enrolled speakers in the check's quarter for its differences to be judged (``reliable`` is None below).
CHECK_MIN_FIT = 50
@dataclass(frozen=True)
class PopulationCurves:
    """Rank-1 identification, ALID and LID_max against the population size N' (:func:`population_curves`).

    Attributes
    ----------
    sizes : ndarray of int64, shape (m,)
        Population sizes N', ascending, distinct, each >= 2.
    measured : ndarray of bool, shape (m,)
        True where ``N' <= N`` (measured on the data); False where extrapolated by the impostor model.
    rank1, rank1_low, rank1_high : ndarray of float, shape (m,)
        Rank-1 identification rate (closed-set linkability), unitless in [0, 1], with its interval.
    chance : ndarray of float, shape (m,)
        ``1 / N'``.
    alid_bits, alid_low, alid_high : ndarray of float, shape (m,)
        Average LID (bits) with its interval.
    lid_max_bits, lid_max_low, lid_max_high : ndarray of float, shape (m,)
        Largest per-probe LID (bits, each probe's LID averaged over its drawn sets) with its interval.
    n_speakers : int
        N, the enrolled speakers of the data.
    n_probes : int
    model : dict
        The impostor model: ``threshold`` ``u`` and the GPD's ``scale`` (score units), ``tail_share``, the GPD's
        ``shape``, ``n_pool`` (impostor scores pooled), ``n_excess``.
    check : dict or None
        The model fitted on a random quarter of each probe's impostors (``n_fit`` speakers' worth) against the
        measured curves at sizes in ``(n_fit, N]``: ``sizes``, ``max_abs_rank1``, ``max_abs_alid_bits`` and
        ``reliable`` (both within :data:`CHECK_RANK1` and :data:`CHECK_ALID_BITS`; False gives an
        :class:`~vpeval.errors.ExtrapolationWarning` where sizes beyond N were asked for; None where the quarter
        holds fewer than :data:`CHECK_MIN_FIT` speakers, too few to judge); None where N is below 40.
    n_subsets, n_boot : int
    level : float
    unit : {"speaker", "probe"}
        What the bootstrap resamples.
    budget_bits : float or None
        The disclosure budget the curves were read against.
    within_budget_up_to : int or None
        The largest N' of ``sizes`` up to which LID_max stays within the budget (every smaller size too); None
        when even the smallest size exceeds it or no budget was given. Read on the estimate: a percentile
        bootstrap interval of a maximum never reaches above the largest value seen, so its upper end is the
        estimate itself.
    """

    sizes: np.ndarray
    measured: np.ndarray
    rank1: np.ndarray
    rank1_low: np.ndarray
    rank1_high: np.ndarray
    chance: np.ndarray
    alid_bits: np.ndarray
    alid_low: np.ndarray
    alid_high: np.ndarray
    lid_max_bits: np.ndarray
    lid_max_low: np.ndarray
    lid_max_high: np.ndarray
    n_speakers: int
    n_probes: int
    model: dict
    check: dict | None
    n_subsets: int
    n_boot: int
    level: float
    unit: str
    budget_bits: float | None = None
    within_budget_up_to: int | None = field(default=None)

    def to_dict(self) -> dict:
        """JSON-ready dict (curves as lists)."""
        out = {k: getattr(self, k).tolist() for k in (
            "sizes", "measured", "rank1", "rank1_low", "rank1_high", "chance", "alid_bits", "alid_low", "alid_high",
            "lid_max_bits", "lid_max_low", "lid_max_high")}
        out.update(n_speakers=self.n_speakers, n_probes=self.n_probes, model=self.model, check=self.check,
                   n_subsets=self.n_subsets, n_boot=self.n_boot, level=self.level, unit=self.unit,
                   budget_bits=self.budget_bits, within_budget_up_to=self.within_budget_up_to,
                   assumptions=ASSUMPTIONS)
        return out


#: The extrapolation's assumptions, as the output states them.
ASSUMPTIONS = ("beyond the enrolled N: a probe's impostors are independent draws from the pooled impostor score "
               "distribution of all probes (empirical below its upper tail, a generalised Pareto tail above), the "
               "enrolled speakers a random sample of the population, the attacker's calibration unchanged")


def largest_within_budget(values: np.ndarray, grid: np.ndarray, budget_bits: float | None) -> int | None:
    """The largest entry of ``grid`` (ascending) up to which every ``values`` entry (bits, same shape) is within
    ``budget_bits`` (with :data:`BUDGET_TOLERANCE_BITS` of slack for rounding); None when the first already
    exceeds it or no budget is given."""
    if budget_bits is None:
        return None
    ok = np.asarray(values) <= budget_bits + BUDGET_TOLERANCE_BITS
    if not ok[0]:
        return None
    return int(grid[-1] if ok.all() else grid[int(np.argmin(ok)) - 1])


def default_population_sizes(n_speakers: int, extra=()) -> np.ndarray:
    """N' = 2, 5, 10, 20, 50, ... up to N, N itself, and ``extra`` (sizes beyond N to extrapolate to),
    ascending and distinct; int64 of shape (m,)."""
    grid = [2]
    for p in range(0, 12):
        for f in (1, 2, 5):
            v = f * 10 ** p
            if 2 < v < n_speakers:
                grid.append(v)
    grid.append(int(n_speakers))
    return np.unique(np.array(grid + [int(e) for e in extra], dtype=np.int64))


def _log_comb(n, k):
    """log C(n, k) (float array), -inf where k > n or k < 0 or n < 0."""
    n = np.asarray(n, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    ok = (k >= 0) & (n >= k)
    with np.errstate(invalid="ignore"):
        v = special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)
    return np.where(ok, v, -np.inf)


def win_probability(above, tied, n_speakers: int, m: int) -> np.ndarray:
    """Probability that a probe's true speaker outscores ``m`` others drawn uniformly without replacement from
    its ``N - 1`` others (ties broken uniformly at random within the drawn set): the module docstring's
    closed form. ``above``, ``tied``: int arrays of shape (n,); ``0 <= m <= N - 1``. Returns float64 (n,)."""
    a = np.asarray(above, dtype=np.float64)
    t = np.asarray(tied, dtype=np.float64)
    N = float(n_speakers)
    if m == 0:
        return np.ones(a.shape)
    base = _log_comb(N - 1, m)
    hi = _log_comb(N - a, m + 1) - base
    lo = _log_comb(N - 1 - a - t, m + 1) - base
    with np.errstate(invalid="ignore", over="ignore"):
        # exp(hi) - exp(lo) = exp(hi) (1 - exp(lo - hi)); hi = -inf means no winning draw
        v = np.where(np.isfinite(hi), np.exp(hi) * -np.expm1(np.where(np.isfinite(lo), lo - hi, -np.inf)), 0.0)
    return np.clip(v / (t + 1.0), 0.0, 1.0)


#: Most tail values drawn one by one per sum of impostor likelihood ratios; below the cutoff they enter by
#: their count, mean and variance (central limit).
_TAIL_DRAWS = 1000
#: Most tail values drawn at once (memory: 8 bytes each, a few arrays).
_DRAW_BATCH = 4_000_000


@dataclass
class _Tail:
    """The pooled impostor distribution: sorted values up to ``u`` (empirical), a GPD of the excesses above."""

    below: np.ndarray  # sorted pooled impostor scores <= u
    n_pool: int
    u: float
    p_u: float  # share of the pool above u
    shape: float
    scale: float
    n_excess: int

    def cdf(self, x: np.ndarray) -> np.ndarray:
        """F(x), counting half the pooled values equal to x (mid-distribution function)."""
        x = np.asarray(x, dtype=np.float64)
        lo = np.searchsorted(self.below, x, "left")
        hi = np.searchsorted(self.below, x, "right")
        f = (lo + hi) / 2.0 / self.n_pool
        over = x > self.u
        if over.any():
            f[over] = 1.0 - self.p_u * stats.genpareto.sf(x[over] - self.u, self.shape, scale=self.scale)
        return f

    def _isf(self, q: np.ndarray) -> np.ndarray:
        """The GPD's inverse survival function at ``q`` in (0, 1]: ``scale ((q^-shape) - 1) / shape``
        (``-scale ln q`` at shape 0)."""
        if abs(self.shape) < 1e-12:
            return -self.scale * np.log(q)
        return self.scale * np.expm1(-self.shape * np.log(q)) / self.shape

    def _moments_below(self, c: float, w: float) -> tuple[float, float]:
        """E[LR 1{x <= c}] and E[LR^2 1{x <= c}] under the model (c >= u), LR = exp(w x)."""
        with np.errstate(over="ignore"):
            m1 = float(np.exp(w * self.below).sum()) / self.n_pool
            m2 = float(np.exp(2.0 * w * self.below).sum()) / self.n_pool
        if c > self.u:
            xi, sigma = self.shape, self.scale

            def pdf(y: float) -> float:  # the GPD's density, in closed form (scipy's costs 0.1 ms a call)
                if abs(xi) < 1e-12:
                    return math.exp(-y / sigma) / sigma
                z = 1.0 + xi * y / sigma
                return z ** (-1.0 / xi - 1.0) / sigma if z > 0 else 0.0

            for power in (1, 2):
                v = integrate.quad(lambda y: math.exp(power * w * (self.u + y)) * pdf(y), 0.0, c - self.u,
                                   limit=200)[0]
                if power == 1:
                    m1 += self.p_u * v
                else:
                    m2 += self.p_u * v
        return m1, m2

    def draw_sums(self, rng, m: int, size: int, w: float = 1.0) -> np.ndarray:
        """``size`` draws of the sum of ``m`` impostor likelihood ratios ``exp(w x)`` (module docstring): the
        values above a cutoff ``c`` (expected count at most :data:`_TAIL_DRAWS`) one by one from the GPD beyond
        ``c``, those below by their count times their mean plus a normal term of their variance."""
        p_c = min(self.p_u, _TAIL_DRAWS / max(m, 1))
        excess_c = 0.0 if p_c >= self.p_u else float(self._isf(np.array(p_c / self.p_u)))
        c = self.u + excess_c
        m1, m2 = self._moments_below(c, w)
        mean = m1 / (1.0 - p_c)
        var = max(m2 / (1.0 - p_c) - mean * mean, 0.0)
        n_tail = rng.binomial(m, p_c, size=size)
        n_bulk = m - n_tail
        out = np.maximum(n_bulk * mean + np.sqrt(n_bulk * var) * rng.standard_normal(size), 0.0)
        sf_c = float(stats.genpareto.sf(excess_c, self.shape, scale=self.scale))
        start = 0
        while start < size:  # batches of draws holding at most _DRAW_BATCH tail values
            stop = start + 1
            total = int(n_tail[start])
            while stop < size and total + int(n_tail[stop]) <= _DRAW_BATCH:
                total += int(n_tail[stop])
                stop += 1
            if total:
                x = self.u + self._isf((1.0 - rng.random(total)) * sf_c)  # q in (0, sf_c]
                counts = n_tail[start:stop]
                has = np.flatnonzero(counts)
                seg = np.r_[0, np.cumsum(counts[has])[:-1]]  # each draw's values are one contiguous run
                top = np.maximum.reduceat(x, seg)
                acc = np.add.reduceat(np.exp(w * (x - np.repeat(top, counts[has]))), seg)
                with np.errstate(over="ignore"):
                    out[start + has] += acc * np.exp(w * top)
            start = stop
        return out


def _fit_tail(pool: np.ndarray, tail_share: float) -> _Tail:
    """The impostor model of a sorted pool: empirical up to its ``1 - tail_share`` quantile, GPD above."""
    n = pool.size
    if n < 100:
        raise VpevalError(f"population curves: {n} pooled impostor scores are too few to model their tail "
                          "(at least 100 needed)")
    k = max(int(round(tail_share * n)), 20)
    u = float(pool[n - k - 1])
    excess = pool[n - k:] - u
    excess = excess[excess > 0]
    if excess.size < 10:
        raise VpevalError("population curves: the impostor scores' upper tail is a handful of tied values; "
                          "its shape cannot be fitted")
    shape, _, scale = stats.genpareto.fit(excess, floc=0.0)
    below = pool[pool <= u]
    return _Tail(below, n, u, (n - below.size) / n, float(shape), float(scale), int(excess.size))


def _model_values(tail: _Tail, g, w, sizes, n_subsets: int, seed, stream: int):
    """Per probe, the model's rank-1 probability and LID (bits) at each size: two arrays (n, len(sizes)). ``g``:
    the true scores, ``w``: each probe's slope (LLR = w * score + a row's constant). Each size draws from its own
    stream, ``default_rng([seed, stream, size])``: asking for other sizes changes no size's draws."""
    f = np.clip(tail.cdf(g), 0.0, 1.0)
    r1 = np.empty((g.size, len(sizes)))
    lid = np.empty((g.size, len(sizes)))
    with np.errstate(divide="ignore"):
        logf = np.log(f)
    slopes, group = np.unique(w, return_inverse=True)
    for j, s in enumerate(sizes):
        r1[:, j] = np.exp((s - 1) * logf)
        rng = np.random.default_rng([seed, stream, int(s)])
        for k, slope in enumerate(slopes.tolist()):  # one draw of sums per slope (a cross-fitting fold)
            idx = np.flatnonzero(group == k)
            S = tail.draw_sums(rng, int(s) - 1, idx.size * n_subsets, slope).reshape(idx.size, n_subsets)
            gt = slope * g[idx]
            with np.errstate(divide="ignore"):
                lse = np.logaddexp(gt[:, None], np.log(S))
            lid[idx, j] = (math.log(s) + (gt[:, None] - lse).mean(axis=1)) / _LN2
    return r1, lid


def _units(speaker, n: int):
    """Bootstrap unit of each row, coded by first appearance (not by the labels' order), and its name."""
    if speaker is None:
        return np.arange(n), "probe"
    _, first, inv = np.unique(np.asarray(speaker), return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    return rank[inv.ravel()], "speaker"


def _bootstrap(values: np.ndarray, units: np.ndarray, n_boot: int, rng, stat) -> np.ndarray:
    """``stat`` (over axis 0 of per-probe values) of ``n_boot`` resamples of the units: shape (n_boot, m)."""
    n_units = int(units.max()) + 1
    order = np.argsort(units, kind="stable")
    start = np.r_[0, np.cumsum(np.bincount(units, minlength=n_units))]
    out = np.empty((n_boot, values.shape[1]))
    for b in range(n_boot):
        pick = rng.integers(0, n_units, n_units)
        idx = np.concatenate([order[start[u]:start[u + 1]] for u in pick])
        out[b] = stat(values[idx])
    return out


def population_curves(scores, true_index, sizes=None, *, slope=None, speaker=None, znorm: bool = False,
                      n_subsets: int = 16, n_boot: int = 200, level: float = 0.95, tail_share: float = 0.05,
                      max_pool: int = 2_000_000, budget_bits: float | None = None, check: bool = True, seed: int = 0,
                      client=None) -> PopulationCurves:
    """Rank-1 identification, ALID and LID_max against the population size N' (module docstring).

    Parameters
    ----------
    scores : array_like or dask array of shape (n_probes, N)
        Every probe's scores against every enrolled speaker, on one scale for every probe: the LID chain's
        z-normalised rows (``znorm=True`` normalises them here), or calibrated LLRs (nats). Rank-1 uses only their
        order within a row; the impostor model pools them over the rows. Read in blocks of rows of 32 MiB; a
        dask array is computed block by block (on the cluster with ``client``).
    true_index : array_like of int, shape (n_probes,)
        Column of each probe's speaker.
    sizes : array_like of int, optional
        Population sizes N' >= 2 (any above N are extrapolated); default
        :func:`default_population_sizes` (up to N).
    slope : float or array_like of shape (n_probes,), optional
        Nats of LLR per score unit, per probe: the attacker's LLRs are ``slope * score`` plus a constant of the
        row, which LID does not depend on (the LID chain's fold slope of each probe; a fold fitted on scores that
        carry no identity may have a slope of 0 or below). Default 1: the scores are LLRs. Rank-1 follows the
        scores (higher: more alike), whatever the slope.
    speaker : array_like, shape (n_probes,), optional
        The bootstrap unit of each probe (its speaker); default the probe itself (then the output says so).
    znorm : bool
        Z-normalise every row first, as :func:`row_zscores` does (the same bits), one block at a time.
    n_subsets : int
        Random sets of others per probe (measured LID) and draws of the impostor sum (extrapolated LID).
    n_boot : int
        Bootstrap replicates (0: no intervals, the bounds equal the estimates).
    level : float
        Two-sided level of the percentile intervals, in (0, 1).
    tail_share : float
        Share of the pooled impostor scores above the tail model's threshold, in (0, 0.5] (at least 20 scores).
    max_pool : int
        Most impostor scores pooled for the model (each row thinned alike beyond it).
    budget_bits : float, optional
        Read LID_max against this budget (bits): ``within_budget_up_to``.
    check : bool
        Fit the model on a random quarter of each probe's impostors and compare it with the measured curves.
    seed : int
    client : distributed.Client, optional
        Scan the rows on this Dask cluster (a NumPy matrix is scattered once in row blocks, a dask array's blocks
        are computed there); only per-row values and the thinned impostor pools come back. The result is the
        same, bit for bit, as without a client.

    Returns
    -------
    PopulationCurves

    Raises
    ------
    InvalidScoresError
        Not a 2-D matrix, N < 2, NaN or infinite scores, a constant row with ``znorm`` or a slope times a score
        beyond float64 (naming the lowest such probe row, wherever the rows are scanned), NaN or infinite
        slopes, a true index outside ``0 .. N-1``, sizes that are not whole numbers in 2 .. 1e12, ``n_subsets``
        below 1, ``n_boot`` or ``seed`` below 0, ``max_pool`` below 100.
    VpevalError
        Extrapolation asked for with too few impostor scores to fit their tail.

    Notes
    -----
    Ties: rank-1 breaks ties uniformly at random within the drawn set (fractional); the model's ``F`` counts
    half of the impostors equal to the probe's score. Cost: two scans of the matrix in row blocks; the measured
    LID is O(n_subsets n N) time; the extrapolated LID draws at most ``n_subsets n`` x :data:`_TAIL_DRAWS` tail
    values per size N' (in batches of at most 4e6). Memory beyond the matrix: a few blocks of 32 MiB, O(n) per
    size and the pool (at most ``max_pool`` values, twice with the check). Results depend on the rows as a set
    (not their order) up to the Monte-Carlo draws, which are seeded and go by each row's place in an order
    fixed by its contents (a fingerprint of its sorted scores, its true score, its slope, then its speaker's
    name as a string); nothing depends on the order of the columns.
    """
    arr, n, N = rowscan._as_matrix(scores, "scores")
    if N < 2:
        raise InvalidScoresError("scores: at least 2 enrolled speakers are needed")
    w = np.asarray(1.0 if slope is None else slope, dtype=np.float64)
    if w.ndim == 0:
        w = np.full(n, float(w))
    if w.shape != (n,) or not np.isfinite(w).all():
        raise InvalidScoresError(f"slope: expected a finite number, or one per probe (shape ({n},))")
    ti = np.asarray(true_index)
    if ti.shape != (n,) or ti.dtype.kind not in "iu" or (ti < 0).any() or (ti >= N).any():
        raise InvalidScoresError(f"true_index: expected {n} integers in 0..{N - 1}")
    ti = ti.astype(np.int64)
    if speaker is not None and np.shape(speaker) != (n,):
        raise InvalidScoresError(f"speaker: expected one label per probe, shape ({n},), got {np.shape(speaker)}")
    sz = default_population_sizes(N) if sizes is None else _sizes(sizes)
    if not 0.0 < level < 1.0 or not 0.0 < tail_share <= 0.5:
        raise InvalidScoresError("level must lie in (0, 1) and tail_share in (0, 0.5]")
    for name, v, lo in (("n_subsets", n_subsets, 1), ("n_boot", n_boot, 0), ("max_pool", max_pool, 100),
                        ("seed", seed, 0)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < lo:
            raise InvalidScoresError(f"{name}: expected an integer >= {lo}, got {v!r}")
    meas = sz <= N
    m_sz, e_sz = sz[meas], sz[~meas]
    n_fit = max(10, N // 4)
    c_sz = default_population_sizes(N)  # the check's sizes: between its quarter and N
    c_sz = c_sz[(c_sz > n_fit) & (c_sz <= N)] if check and N >= 40 else c_sz[:0]
    both = np.union1d(m_sz, c_sz)  # measured once for the curves and the check (the same nested sets)

    arr = rowscan._on_cluster(arr, n, N, block_rows(N), client)
    fp, g, above, tied = first_pass(arr, n, ti, w, znorm)
    # the canonical order: rows by their contents, then by their speaker's name (rows alike in every value may
    # belong to different speakers, the bootstrap's units); pos[i] is row i's place in it, which its draws go by
    keys = (w, g, fp) if speaker is None else (np.unique(np.asarray(speaker).astype(str), return_inverse=True)[1]
                                               .reshape(-1), w, g, fp)
    row = np.lexsort(keys)
    pos = np.empty(n, dtype=np.int64)
    pos[row] = np.arange(n)
    rng = np.random.default_rng([seed, 1])
    perms = [rng.permutation(N - 1) for _ in range(n_subsets)]
    shifts = np.stack([rng.integers(0, N - 1, size=n) for _ in range(n_subsets)], axis=1)[pos]
    choice = check_shift = None
    if c_sz.size:
        crng = np.random.default_rng([seed, 3])
        choice = crng.choice(N - 1, n_fit - 1, replace=False)
        check_shift = crng.integers(0, N - 1, (n, 1))[pos, 0]
    lid_both, pool, check_pool = second_pass(arr, n, ti, w, shifts, perms, both.tolist(), max_pool, znorm,
                                             choice, check_shift)
    # from here on, every per-row array is in the canonical order
    g, above, tied, w, lid_both = g[row], above[row], tied[row], w[row], lid_both[row]
    speaker = None if speaker is None else np.asarray(speaker)[row]

    r1 = np.empty((n, sz.size))
    lid = np.empty((n, sz.size))
    for j, s in enumerate(m_sz):
        r1[:, j] = win_probability(above, tied, N, int(s) - 1)
    if m_sz.size:
        lid[:, :m_sz.size] = lid_both[:, np.searchsorted(both, m_sz)]
    model, chk, tail = None, None, None
    try:
        tail = _fit_tail(pool, tail_share)
    except VpevalError:
        if e_sz.size:
            raise
    if tail is not None:
        model = {"threshold": tail.u, "tail_share": tail.p_u, "shape": tail.shape, "scale": tail.scale,
                 "n_pool": tail.n_pool, "n_excess": tail.n_excess}
    if e_sz.size:
        why = []
        if N < 40:
            why.append(f"with {N} enrolled speakers the model cannot be checked (40 or more needed)")
        if tail.shape <= -1.0:
            why.append(f"the fitted tail's shape {tail.shape:.2f} is at or below -1, where its maximum-likelihood "
                       "fit is not regular (a tail that ends abruptly)")
        if why:
            warnings.warn(f"population curves: {'; '.join(why)}: the sizes beyond {N} rest on the model's "
                          "assumptions alone", ExtrapolationWarning, stacklevel=user_stacklevel())
        mr1, mlid = _model_values(tail, g, w, e_sz, n_subsets, seed, 2)
        r1[:, m_sz.size:] = mr1
        lid[:, m_sz.size:] = mlid
    if c_sz.size:
        # averaged as the curves are (over axis 0 of a 2-D array), so a size in both reads the same bits
        meas_r1 = np.column_stack([win_probability(above, tied, N, int(s) - 1) for s in c_sz]).mean(axis=0)
        meas_lid = lid_both[:, np.searchsorted(both, c_sz)].mean(axis=0)
        chk = _check(check_pool, g, w, n_fit, c_sz, meas_r1, meas_lid, tail_share, n_subsets, seed)
        if chk is not None:
            # a quarter of fewer than 50 speakers fits the tail on too few scores for its miss to mean much
            within = chk["max_abs_rank1"] <= CHECK_RANK1 and chk["max_abs_alid_bits"] <= CHECK_ALID_BITS
            chk["reliable"] = None if chk["n_fit"] < CHECK_MIN_FIT else bool(within)
            if chk["reliable"] is False and e_sz.size:
                warnings.warn(
                    f"population curves: the impostor model fitted on {chk['n_fit']} of the {N} enrolled speakers "
                    f"misses the measured curves by {chk['max_abs_rank1']:.3f} of rank-1 and "
                    f"{chk['max_abs_alid_bits']:.3f} bits of ALID (flagged beyond {CHECK_RANK1} and "
                    f"{CHECK_ALID_BITS}): the sizes beyond {N} are not to be relied on (are the scores of every "
                    "probe on one scale? z-normalise the rows)", ExtrapolationWarning, stacklevel=user_stacklevel())

    units, unit = _units(speaker, n)
    alpha = (1.0 - level) / 2.0

    def band(values, stat):
        est = stat(values)
        if n_boot <= 0:
            return est, est.copy(), est.copy()
        reps = _bootstrap(values, units, n_boot, np.random.default_rng([seed, 5]), stat)  # same draws per stat
        return est, np.quantile(reps, alpha, axis=0), np.quantile(reps, 1.0 - alpha, axis=0)

    r1_est, r1_lo, r1_hi = band(r1, lambda v: v.mean(axis=0))
    a_est, a_lo, a_hi = band(lid, lambda v: v.mean(axis=0))
    m_est, m_lo, m_hi = band(lid, lambda v: v.max(axis=0))
    within = largest_within_budget(m_est, sz, budget_bits)
    return PopulationCurves(sz, meas, r1_est, r1_lo, r1_hi, 1.0 / sz, a_est, a_lo, a_hi, m_est, m_lo, m_hi, N, n,
                            model or {}, chk, n_subsets, n_boot, level, unit, budget_bits, within)


def _sizes(sizes) -> np.ndarray:
    """Population sizes as distinct ascending int64: whole numbers in 2 .. :data:`MAX_POPULATION`, one list."""
    a = np.asarray(sizes)
    if a.ndim != 1 or a.size == 0 or a.dtype.kind not in "iuf":
        raise InvalidScoresError(f"sizes: expected a non-empty list of whole numbers, got {sizes!r}")
    if a.dtype.kind == "f" and not (np.isfinite(a).all() and (a == np.round(a)).all()):
        raise InvalidScoresError(f"sizes: population sizes are whole numbers, got {sizes!r}")
    if a.min() < 2 or a.max() > MAX_POPULATION:
        raise InvalidScoresError(f"sizes: population sizes lie in 2..{MAX_POPULATION:.0e}")
    return np.unique(a.astype(np.int64))


def _check(pool, g, w, n_fit, sizes, meas_r1, meas_lid, tail_share, n_subsets, seed) -> dict | None:
    """The model fitted on ``pool``, a random quarter of each probe's impostors (``n_fit - 1`` random positions of
    its sorted impostors, shifted by a random shift of the probe's own: a uniform subset for each), against the
    measured curves ``meas_r1``, ``meas_lid`` at ``sizes``; None where the quarter holds too few scores to fit."""
    try:
        tail = _fit_tail(pool, tail_share)
    except VpevalError:
        return None
    mr1, mlid = _model_values(tail, g, w, sizes, n_subsets, seed, 4)
    mr1, mlid = mr1.mean(axis=0), mlid.mean(axis=0)
    return {"n_fit": int(n_fit), "sizes": sizes.tolist(),
            "rank1_measured": meas_r1.tolist(), "rank1_model": mr1.tolist(),
            "alid_measured_bits": meas_lid.tolist(), "alid_model_bits": mlid.tolist(),
            "max_abs_rank1": float(np.max(np.abs(meas_r1 - mr1))),
            "max_abs_alid_bits": float(np.max(np.abs(meas_lid - mlid)))}
