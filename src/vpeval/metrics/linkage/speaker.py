r"""Per-speaker linkage: how well one speaker's probes point to one enrolled model, free of the other speakers.

The LID of :mod:`vpeval.metrics.linkage` (Sterns et al.) calibrates every probe with *one* slope fitted on all
probes. When a single speaker of ``S`` leaks (its probes top their own model by far, the others are noise), that
slope is fitted mostly on noise: it stays small, and the leaking speaker's LID stays far below ``log2 N``
(1-1.6 bits measured for one speaker of 40 with 5 probes each, where ``log2 40 = 5.32`` bits is reachable), while
the slope the leak steepens raises the LIDs of every other speaker too. A statistic of one speaker must depend on
that speaker's probes alone. Two are given here, both over the row-z-normalised scores of
:func:`~vpeval.metrics.linkage.znorm_rows` (each probe's row over all ``N`` enrolled models, distractors included):

*Speaker LID* (bits), of speaker ``g`` (probes ``P_g``) towards model column ``c``::

    SLID_g(c) = max_{a in A} (1 / |P_g|) sum_{p in P_g} log2(N softmax(a z_p)_c)

the mean LID of the speaker's probes under the slope ``a`` (nats of LLR per unit of z-score) that suits this
speaker and model best, over the grid ``A`` = {0} U :data:`SPEAKER_LID_SLOPES` U {+inf}. ``a = 0`` gives 0, so
``SLID >= 0``; the limit ``a -> +inf`` gives ``log2 N - mean_p log2(t_p)`` when ``c`` holds the row maximum of every
probe (``t_p`` models tied at it), else ``-inf``; hence ``0 <= SLID <= log2 N``. The mean over a speaker's probes
is concave in ``a`` (a log-softmax of a linear function), so the grid maximum is within the grid's step of the
exact supremum. It is an in-sample, optimistic figure: a test statistic (its null is found by relabelling, as
:mod:`vpeval.analysis.secrecy` does), not an estimate of what a calibrated attacker achieves.

*Rank-1 hits*: the probes of the speaker whose model is the unique maximum of their row. For a speaker whose own
model tops ``k`` of its ``n`` probes, the decision "accept the model that tops the probe's row" has
``P(accept | same speaker) = gamma`` and ``P(accept | a different enrolled speaker, drawn uniformly) <= (1 - gamma)
/ (N - 1)`` (each row has one top), a likelihood ratio of at least ``gamma (N - 1) / (1 - gamma)`` (the rank-LLR of
the worst-case paper, Eq. 35, at rank 1, without its exchangeability assumption, since the "different" model is
drawn uniformly): :func:`rank1_ratio_lower_bits` bounds it from below with the Clopper-Pearson bound of ``gamma``
(probes independent given their speaker).
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import InvalidScoresError

__all__ = ["SPEAKER_LID_SLOPES", "speaker_lid_table", "rank1_hits", "rank1_ratio_lower_bits"]

_LN2 = math.log(2.0)

#: The finite positive slopes (nats of LLR per unit of row z-score) of the speaker LID's grid: 40 values evenly
#: spaced in log from 1/16 to 256 (neighbours 1.24 times apart); 0 and +inf are added by :func:`speaker_lid_table`.
SPEAKER_LID_SLOPES = np.geomspace(1.0 / 16.0, 256.0, 40)

#: Probe rows x models per block of :func:`speaker_lid_table` (bounds its working memory to a few such arrays).
_BLOCK_ENTRIES = 1 << 21


def _check(z, group, columns, n_groups):
    z = np.asarray(z, dtype=np.float64)
    if z.ndim != 2 or z.shape[1] < 2:
        raise InvalidScoresError(f"z: expected a (n_probes, N) matrix with N >= 2, got shape {z.shape}")
    if not np.isfinite(z).all():
        raise InvalidScoresError("z: the speaker LID needs finite z-scores")
    group = np.asarray(group, dtype=np.int64).reshape(-1)
    columns = np.asarray(columns, dtype=np.int64).reshape(-1)
    if group.size != z.shape[0]:
        raise InvalidScoresError(f"group: expected one speaker index per probe row ({z.shape[0]}), got {group.size}")
    G = int(group.max()) + 1 if n_groups is None and group.size else int(n_groups or 0)
    if group.size and (group.min() < 0 or group.max() >= G):
        raise InvalidScoresError(f"group: speaker indices must lie in [0, {G}), got {group.min()}..{group.max()}")
    counts = np.bincount(group, minlength=G)
    if (counts == 0).any():
        raise InvalidScoresError(f"group: speaker {int(np.flatnonzero(counts == 0)[0])} has no probe row")
    if columns.size and (columns.min() < 0 or columns.max() >= z.shape[1]):
        raise InvalidScoresError(f"columns: model indices must lie in [0, {z.shape[1]})")
    return z, group, columns, G, counts


def speaker_lid_table(z, group, columns, n_groups: int | None = None, *, slopes=SPEAKER_LID_SLOPES) -> np.ndarray:
    """Speaker LID (bits) of every speaker towards every model of ``columns`` (module docstring).

    Parameters
    ----------
    z : array_like of shape (n_probes, N), N >= 2
        Row-z-normalised scores (:func:`~vpeval.metrics.linkage.znorm_rows`), finite; every enrolled model a column.
    group : array_like of int, shape (n_probes,)
        Speaker index of each probe row, in ``[0, n_groups)``; every speaker has at least one row.
    columns : array_like of int, shape (C,)
        The model columns to evaluate (e.g. the evaluation speakers' models, in the order of ``group``'s speakers).
    n_groups : int, optional
        Number of speakers (default ``max(group) + 1``).
    slopes : array_like of float > 0
        The finite slopes of the grid (nats per unit of z); 0 and +inf are always included.

    Returns
    -------
    ndarray of shape (n_groups, C), float64
        ``T[g, c]``: the speaker LID of speaker ``g`` towards model ``columns[c]``, in bits, in ``[0, log2 N]``.
        Depends on speaker ``g``'s rows alone.

    Raises
    ------
    InvalidScoresError
        Shapes that disagree, non-finite z-scores, a speaker without rows, indices out of range.

    Examples
    --------
    >>> z = np.array([[3.0, 0.0, 0.0, -3.0], [2.0, 1.0, -1.0, -2.0], [0.0, 1.0, 0.0, -1.0]])
    >>> T = speaker_lid_table(z, [0, 0, 1], [0, 1, 3])
    >>> float(T[0, 0]), float(T[1, 1])  # speaker 0's model tops both its rows, speaker 1's its only row: log2 4
    (2.0, 2.0)
    >>> float(T[0, 2])  # model 3 is the bottom of speaker 0's rows: the best slope is 0
    0.0
    """
    z, group, columns, G, counts = _check(z, group, columns, n_groups)
    P, N = z.shape
    slopes = np.asarray(slopes, dtype=np.float64).reshape(-1)
    if slopes.size and not (np.isfinite(slopes).all() and (slopes > 0).all()):
        raise InvalidScoresError("slopes: finite positive values expected")
    order = np.argsort(group, kind="stable")
    z, group = z[order], group[order]
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    C = columns.size
    log_n = math.log(N)
    best = np.zeros((G, C))  # a = 0
    sums = np.zeros((slopes.size, G, C))
    inf_sum = np.zeros((G, C))  # the limit a -> +inf, in nats
    rows = max(1, _BLOCK_ENTRIES // max(N, 1))
    for lo in range(0, P, rows):
        zb = z[lo:lo + rows]
        gb = group[lo:lo + rows]
        top = zb.max(axis=1)
        at_top = zb == top[:, None]
        ties = at_top.sum(axis=1)
        lim = np.where(at_top[:, columns], -np.log(ties)[:, None], -np.inf)
        _add_rows(inf_sum, gb, lim)
        d = zb - top[:, None]  # <= 0: exp never overflows
        for k, a in enumerate(slopes):
            x = a * d
            lse = np.log(np.exp(x).sum(axis=1))  # >= 0: the top entry contributes exp(0)
            ls = x[:, columns] - lse[:, None]
            _add_rows(sums[k], gb, ls)
    mean = sums / counts[None, :, None]
    best = np.maximum(best, ((mean + log_n) / _LN2).max(axis=0, initial=0.0))
    with np.errstate(invalid="ignore"):
        lim = (inf_sum / counts[:, None] + log_n) / _LN2
    best = np.maximum(best, np.where(np.isnan(lim), -np.inf, lim))
    return np.minimum(best, math.log2(N))


def _add_rows(out: np.ndarray, g: np.ndarray, v: np.ndarray) -> None:
    """``out[g[i]] += v[i]`` for sorted ``g`` (contiguous groups), by ``np.add.reduceat``."""
    cut = np.r_[0, np.flatnonzero(np.diff(g)) + 1]
    out[g[cut]] += np.add.reduceat(v, cut, axis=0)


def rank1_hits(z, group, columns, n_groups: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per speaker, the probes whose model ``columns[g]`` is the unique maximum of their row, and its probes.

    Parameters
    ----------
    z : array_like of shape (n_probes, N)
        Scores or row-z-normalised scores (the row order is what counts).
    group : array_like of int, shape (n_probes,)
        Speaker index of each probe row, in ``[0, n_groups)``.
    columns : array_like of int, shape (n_groups,)
        Each speaker's own model column.
    n_groups : int, optional

    Returns
    -------
    hits, n : ndarray of int64, shape (n_groups,)
        Rank-1 hits (ties at the top count as misses) and probes per speaker.
    """
    z, group, columns, G, counts = _check(z, group, columns, n_groups)
    if columns.size != G:
        raise InvalidScoresError(f"columns: expected one model per speaker ({G}), got {columns.size}")
    own = z[np.arange(z.shape[0]), columns[group]]
    unique_top = (own[:, None] >= z).all(axis=1) & ((z == own[:, None]).sum(axis=1) == 1)
    return np.bincount(group, weights=unique_top, minlength=G).astype(np.int64), counts.astype(np.int64)


def rank1_ratio_lower_bits(hits: int, n: int, n_models: int, level: float) -> float | None:
    """Lower confidence bound (bits) of the rank-1 likelihood ratio ``gamma (N - 1) / (1 - gamma)`` of one
    speaker (module docstring).

    Parameters
    ----------
    hits, n : int
        Rank-1 hits of the speaker's ``n >= 1`` probes (``0 <= hits <= n``).
    n_models : int >= 2
        ``N``, the enrolled models of each row.
    level : float in (0, 1)
        The one-sided error of the bound (e.g. ``alpha / S`` for a bound that holds for ``S`` speakers at once).

    Returns
    -------
    float or None
        ``log2(g (N - 1) / (1 - g))`` with ``g`` the one-sided Clopper-Pearson lower bound of ``gamma`` at
        ``level`` (``level ** (1 / n)`` when every probe hits); None when ``hits = 0`` (no lower bound above 0).

    Examples
    --------
    >>> round(rank1_ratio_lower_bits(5, 5, 40, 0.05 / 40), 3)  # 5 of 5 probes, 40 speakers, Bonferroni
    3.796
    >>> rank1_ratio_lower_bits(0, 5, 40, 0.05) is None
    True
    """
    from scipy.stats import beta

    hits, n, N = int(hits), int(n), int(n_models)
    if not (n >= 1 and 0 <= hits <= n and N >= 2 and 0.0 < level < 1.0):
        raise InvalidScoresError(f"rank1_ratio_lower_bits: need 0 <= hits <= n, n >= 1, N >= 2, level in (0, 1); "
                                 f"got hits={hits}, n={n}, N={N}, level={level}")
    if hits == 0:
        return None
    g = level ** (1.0 / n) if hits == n else float(beta.ppf(level, hits, n - hits + 1))
    if g <= 0.0:
        return None
    return math.log2(g * (N - 1) / (1.0 - g))
