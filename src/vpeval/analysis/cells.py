"""The perfect-secrecy test of a large score file on cells of its score axis (internal to
:mod:`vpeval.analysis.nulls`).

Why
---
Trial relabelling of a member of ``n`` trials draws a uniform ``K``-subset of its ``n`` positions per relabelling
and reads eps_max and D_ECE from it: Omega(n) each, about 40 ms at ``n = 1e7``, and as much again per replicate of
the trial bootstrap. Both statistics read the labels only through counts of targets and trials per tie block.

What
----
Above :data:`CELLS_FROM_TRIALS` trials, a member's sorted tie blocks are pooled into *cells* by a rule that reads
the scores' order and tie blocks alone, never a label (:func:`cell_starts`): every tie block within
:data:`CELL_RESOLUTION` (``m``) trials of either end of the score axis is a cell of its own, and further in a cell
spans about ``1/m`` of its distance from the nearer end (plus the last tie block it holds: a tie block is never
split). At ``m = 512`` that is about ``2 m (1 + ln(n / 2m))`` cells: 10,400 at ``1e7`` trials, 12,800 at ``1e8``.

The test's statistics of such a member are eps_max and D_ECE of the cells' counts (the attacker whose decisions
are the cells: thresholds only at cell boundaries, :func:`cell_statistics`). Under trial relabelling the cells'
target counts are multivariate hypergeometric (sizes = the cells' trials, ``K`` drawn), whatever the
statistic, so a relabelling is one such draw, ``O(cells)`` (:func:`cell_target_rows`), and the test stays exact
(Monte-Carlo of the exact permutation test of these statistics). The trial bootstrap likewise draws the cells'
trial totals Multinomial(``n``; sizes ``/ n``) and their targets Binomial(total, the cell's target share): the
law of the cell counts of ``n`` trials drawn with replacement (:func:`cell_bootstrap_eps_max`).

What it changes
---------------
Thresholds only between cells can only lower eps_max (a maximum over fewer suffixes and prefixes of the
min-max formulas of :mod:`vpeval.analysis.worst_case`): the cells' eps_max is at most the member's, equal when
the extreme bins start within ``m`` trials of the ends, and otherwise lower by what moving a bin's start by about
``1/m`` of its distance from the end changes (at most 0.002 bits on 200 simulated 600,000-line files; 12.978
against 12.980 bits on a leaking 1e7-line file). The verdict shows it as that member's eps_max in the test.
D_ECE is that of the cells' PAV fit (within 1e-6 bits in the same simulations). The verification numbers (EER,
minDCF, Cllr, the privacy profile) are computed on the trials themselves, not on the cells. ``numpy``'s multivariate hypergeometric needs fewer than ``1e9`` trials; larger
members keep the positional relabelling.
"""

from __future__ import annotations

import math

import numpy as np

from .relabel import _d_ece_slots
from .worst_case import eps_max_from_block_counts

_LN2 = math.log(2.0)

#: Members of trial relabelling with at least this many trials (and fewer than :data:`CELLS_BELOW_TRIALS`) are
#: tested on cells (module docstring).
CELLS_FROM_TRIALS = 1 << 19

#: numpy's multivariate hypergeometric draw ("marginals") takes fewer than 1e9 items.
CELLS_BELOW_TRIALS = 1_000_000_000

#: ``m``: tie blocks within ``m`` trials of an end are cells of their own; further in, cells span about ``1/m`` of
#: their distance from the nearer end.
CELL_RESOLUTION = 512


def cell_starts(cum: np.ndarray, resolution: int | None = None) -> np.ndarray:
    """Index of the first tie block of every cell (ascending, ``0`` first), from the blocks' boundaries alone.

    Parameters
    ----------
    cum : ndarray of int, shape (B + 1,)
        ``[0, cumsum(block sizes)]`` of the tie blocks in ascending score order.
    resolution : int >= 1, optional
        ``m`` of the module docstring; default :data:`CELL_RESOLUTION`.

    Returns
    -------
    ndarray of int64, shape (C,)
        ``C <= B`` cells; cell ``c`` holds blocks ``starts[c]`` to ``starts[c + 1] - 1``.

    Notes
    -----
    Thresholds ``t_j = j`` for ``j < m`` and ``t_j = m e^((j - m) / m)`` beyond. In the lower half (blocks with
    fewer trials below them than above) a cell starts at the first block whose first position is at least some
    ``t_j``; in the upper half at the first block with fewer than some ``t_j`` trials above it; and at the first
    block of the upper half. So a block within ``m`` trials of an end is a cell of its own, and further in a cell
    starting ``d`` trials from its end holds the blocks that start within ``d (e^(1/m) - 1)`` (about ``d / m``)
    trials of it. ``O(C log B)``: one binary search per threshold.

    >>> cell_starts(np.arange(11), resolution=2).tolist()   # ten untied trials: the ends exact, the middle pooled
    [0, 1, 2, 4, 5, 6, 8, 9]
    """
    cum = np.asarray(cum)
    B, n = cum.size - 1, int(cum[-1])
    m = int(CELL_RESOLUTION if resolution is None else resolution)
    n_exp = max(0, math.ceil(m * math.log(max(n, m) / m)) + 1)
    t = np.r_[np.arange(m, dtype=np.float64), m * np.exp(np.arange(n_exp) / m)]
    t = t[t <= n]
    # the first block of the upper half: cum[b] + cum[b + 1] > n (the sum rises with b), by bisection
    lo, hi = 0, B
    while lo < hi:
        mid = (lo + hi) // 2
        if int(cum[mid]) + int(cum[mid + 1]) > n:
            hi = mid
        else:
            lo = mid + 1
    half = lo
    low = np.searchsorted(cum[:-1], t, side="left")
    up = np.searchsorted(cum[1:], n - t, side="right")
    starts = np.r_[0, low[low < half], half, up[up >= half]]
    return np.unique(starts[starts < B]).astype(np.int64)


def member_cells(cum: np.ndarray, is_tar: np.ndarray, resolution: int | None = None):
    """``(sizes, targets)`` of a member's cells (int64, shape (C,)): trials and observed targets per cell, from
    the block boundaries ``cum`` and the targets' flags in canonical order (``is_tar``, shape (n,))."""
    first = np.asarray(cum)[cell_starts(cum, resolution)]
    sizes = np.diff(np.r_[first, cum[-1]]).astype(np.int64)
    targets = np.add.reduceat(np.asarray(is_tar), first, dtype=np.int64)
    return sizes, targets


def cell_target_rows(sizes: np.ndarray, targets: np.ndarray, seed: int, rows: slice) -> np.ndarray:
    """Targets per cell of relabellings ``rows`` (row 0: the observed ``targets``), int64 shape (R, C).

    Relabelling ``r >= 1`` is a multivariate hypergeometric draw of ``K = targets.sum()`` from the cells' trials
    (the law of the cell counts of a uniform ``K``-subset of the positions), from its own stream
    ``default_rng([seed, 1, r])``: a row's draw depends on ``seed`` and ``r`` alone."""
    K = int(targets.sum())
    out = np.empty((rows.stop - rows.start, sizes.size), dtype=np.int64)
    for i, r in enumerate(range(rows.start, rows.stop)):
        out[i] = targets if r == 0 else np.random.default_rng([seed, 1, r]).multivariate_hypergeometric(
            sizes, K, method="marginals")
    return out


def cell_statistics(tc: np.ndarray, sizes: np.ndarray, t_stats) -> tuple[np.ndarray, np.ndarray]:
    """eps_max and D_ECE (bits; empty where not in ``t_stats``) of rows of cell target counts ``tc`` (shape
    (R, C)) over cells of ``sizes`` trials: the statistics of the attacker whose decisions are the cells."""
    R, C = tc.shape
    eps = eps_max_from_block_counts(tc, sizes[None, :]) / _LN2 if "eps_max" in t_stats else np.empty(0)
    if "d_ece" not in t_stats:
        return eps, np.empty(0)
    K, n = int(tc[0].sum()), int(sizes.sum())
    st = tc.reshape(-1).astype(np.float64)
    sn = (sizes[None, :] - tc).reshape(-1).astype(np.float64)
    row = np.repeat(np.arange(R), C) if R > 1 else None
    return eps, _d_ece_slots(st, sn, row, R, K, n)


def cell_bootstrap_eps_max(sizes: np.ndarray, targets: np.ndarray, rng, n_boot: int) -> np.ndarray:
    """eps_max (nats) of ``n_boot`` trial-bootstrap replicates on the cells: per replicate the cells' trials are
    Multinomial(``n``; sizes ``/ n``) and their targets Binomial(trials, targets ``/`` sizes), the law of the
    cell counts of ``n`` trials drawn with replacement (NaN where a replicate drew no target or no
    non-target)."""
    n = int(sizes.sum())
    share = targets / sizes
    out = np.empty(n_boot)
    step = max(1, (1 << 19) // sizes.size)  # replicates in chunks of about 2**19 cell counts
    for lo in range(0, n_boot, step):
        R = min(step, n_boot - lo)
        cc = rng.multinomial(n, sizes / n, size=R)
        tc = rng.binomial(cc, share)
        out[lo:lo + R] = eps_max_from_block_counts(tc, cc)
    return out


def on_cells(preps) -> tuple[tuple, str]:
    """``((attacker, trial type, cells), ...)`` of the members tested on cells, and the sentence the test's note
    ends with ('' when none is)."""
    celled = tuple((p.inp.attacker, p.inp.trial_type, int(p.cells.size)) for p in preps if p.cells is not None)
    if not celled:
        return (), ""
    n = len(preps)
    who = "The scores" if n == 1 else "Every attacker and trial type" if len(celled) == n else (
        f"{len(celled)} of the {n} attackers x trial types")
    counts = " and ".join(f"{c:,}" for c in sorted({c for *_, c in celled}))
    counts += " cell" if {c for *_, c in celled} == {1} else " cells"
    verb = "was" if who.startswith("Every") else "were"
    return celled, (f". {who} {verb} tested on {counts} of the score axis instead of single trials, as is every "
                    f"input of {CELLS_FROM_TRIALS:,} trials or more whose trials are relabelled one by one (tie blocks "
                    f"within {CELL_RESOLUTION} "
                    f"trials of either end kept apart, further in pooled by about 1/{CELL_RESOLUTION} of their "
                    "distance from the end): an exact test of the eps_max and D_ECE of thresholds between cells, "
                    "which are at most the trials' (docs/report.md)")
