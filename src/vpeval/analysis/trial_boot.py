"""The trial bootstrap of large members, drawn only where eps_max looks (internal to
:mod:`vpeval.analysis.resample`).

A replicate of the trial bootstrap draws ``n`` trials with replacement: the multiplicities ``w`` of the ``n``
canonical positions are Multinomial(``n``; ``1/n``, ..., ``1/n``). eps_max of a replicate
(:func:`~vpeval.analysis.worst_case.eps_max_weighted_lazy`) reads the weights only through cumulative sums at
some positions, and most of those at a few fixed positions (the segment ends of
:func:`~vpeval.analysis.worst_case._extremes_pruned`). The positions are therefore cut into *cells* at those fixed
positions, and a replicate is drawn in two stages, which give the same joint law as drawing ``n`` indices:

1. the cells' totals ``c`` are Multinomial(``n``; cell sizes ``/ n``) (the sum of multinomial counts over
   groups of categories is multinomial over the groups), and each cell's target total is Binomial(``c``, targets
   of the cell ``/`` its size) (given ``c``, the cell's ``c`` draws are uniform over its positions);
2. a cell's multiplicities are drawn only when eps_max needs a cumulative sum inside it: given its two totals,
   the target and non-target draws are uniform over the cell's targets and non-targets (``integers`` and
   ``bincount``).

The values of a replicate are those of :func:`~vpeval.analysis.worst_case.eps_max_weighted_lazy` of the
completed weights (checked in ``tests/test_worst_case_pruned.py`` by completing every cell afterwards), the law
of the weights is the multinomial bootstrap's; only the random draws differ from drawing ``n`` indices, so for
the same seed the replicates are other draws of the same bootstrap. A replicate costs about ``sqrt(K)`` cells
and the cells it opens, instead of ``n`` draws and counts.
"""

from __future__ import annotations

import numpy as np

from . import worst_case as _wc
from .worst_case import _ranges, eps_max_weighted_lazy


def cell_bounds(tpos: np.ndarray, starts: list, n: int) -> np.ndarray:
    """Sorted distinct cell boundaries (positions, ``0`` and ``n`` included): the positions at which
    :func:`~vpeval.analysis.worst_case._extremes_pruned` bounds its segments, for every ``starts`` array (first
    position of each target's block); ``tpos``: the targets' canonical positions."""
    K = tpos.size
    pts = [np.array([0, n], dtype=np.int64)]
    edge_n = _wc._PRUNE_EDGE  # read at call time (the tests shrink it)
    if K > 2 * edge_n:
        c = _wc._cuts(K)
        lo_s, hi_s = K - c[1:], K - c[:-1]  # suffix segments [lo, hi)
        lo_p, hi_p = c[:-1], c[1:]  # prefix segments
        pts += [tpos[lo_s], tpos[lo_p]]
        pts += [st[hi_s - 1] for st in starts] + [st[hi_p - 1] for st in starts]
        # the candidates evaluated outright at both ends: their own positions and block starts, so that they
        # are read from the cell totals (where targets are sparse, the lowest 2,048 span many trials)
        edge = np.r_[np.arange(edge_n), np.arange(K - edge_n, K)]
        pts += [tpos[edge]] + [st[edge] for st in starts]
    return np.unique(np.concatenate(pts).astype(np.int64))


class LazyWeights:
    """Multinomial bootstrap multiplicities of ``n`` positions, drawn cell by cell on demand (module docstring).

    ``member``: the :class:`_Member` (cell boundaries, target flags and their cumulative count, and work arrays
    of ``n`` entries reused by its replicates). ``before(x)`` returns ``(W(< x), TW(< x))``, the weight and the
    target weight of the positions below ``x`` (float64 arrays), drawing the cells it needs (all cells a call
    needs at once).
    """

    def __init__(self, rng, member):
        self.rng, self.m = rng, member
        bounds = member.bounds
        n = int(bounds[-1])
        size = np.diff(bounds)
        k_c = np.diff(member.tar_cum[bounds])  # targets per cell
        self.cc = rng.multinomial(n, size / n)
        self.tc = rng.binomial(self.cc, k_c / size)
        self.CW = np.r_[0, np.cumsum(self.cc)]
        self.CT = np.r_[0, np.cumsum(self.tc)]
        self.drawn = np.zeros(size.size, dtype=bool)

    def _draw(self, cells: np.ndarray) -> None:
        """Draw the multiplicities of ``cells`` (distinct, not drawn yet, ascending) into the member's arrays."""
        m, rng = self.m, self.rng
        a, b = m.bounds[cells], m.bounds[cells + 1]
        pos = _ranges(a, b)  # the cells' positions, cell by cell
        tm = m.is_tar[pos]
        kc = m.tar_cum[b] - m.tar_cum[a]
        nc = (b - a) - kc
        w = np.empty(pos.size, dtype=np.int64)
        for mask, k, draws in ((tm, kc, self.tc[cells]), (~tm, nc, self.cc[cells] - self.tc[cells])):
            first = np.cumsum(k) - k  # each cell's first entry among the selected positions
            j = rng.integers(0, np.repeat(k, draws)) + np.repeat(first, draws)  # uniform within its cell
            w[mask] = np.bincount(j, minlength=int(k.sum()))
        m.w[pos] = w
        # exclusive prefix sums within each cell, offset by the cell's start totals
        cell_of = np.repeat(np.arange(cells.size), b - a)
        cs = np.cumsum(w) - w
        cst = np.cumsum(np.where(tm, w, 0))
        cst -= np.where(tm, w, 0)
        start = np.cumsum(b - a) - (b - a)
        m.pw[pos] = cs - cs[start][cell_of] + self.CW[cells][cell_of]  # exact in m.pw's dtype: at most n
        m.pt[pos] = cst - cst[start][cell_of] + self.CT[cells][cell_of]
        self.drawn[cells] = True

    def before(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        m = self.m
        x = np.asarray(x, dtype=np.int64)
        c = m.cell_of[x]  # x = n: c = number of cells, off = 0
        W = self.CW[c].astype(np.float64)
        T = self.CT[c].astype(np.float64)
        inner = np.flatnonzero(x != m.bounds[c])
        if inner.size:
            need = c[inner]
            need = need[~self.drawn[need]]  # the cells not drawn yet (most queried cells are), then distinct
            if need.size:
                self._draw(np.unique(need))
            W[inner] = m.pw[x[inner]]
            T[inner] = m.pt[x[inner]]
        return W, T

    def top_position(self) -> int:
        """The highest position of positive weight."""
        c = int(np.flatnonzero(self.cc)[-1])
        if not self.drawn[c]:
            self._draw(np.array([c]))
        a, b = int(self.m.bounds[c]), int(self.m.bounds[c + 1])
        return a + int(np.flatnonzero(self.m.w[a:b])[-1])

    def complete(self) -> np.ndarray:
        """Every position's multiplicity (drawing the cells not drawn yet): the replicate's full weights."""
        need = np.flatnonzero(~self.drawn)
        if need.size:
            self._draw(need)
        return self.m.w.copy()


class _Member:
    """What every replicate of one member needs: target positions, their blocks' first positions, the cell
    boundaries and the cumulative target count."""

    def __init__(self, p):
        self.p = p
        n = p.block.size
        # positions and counts up to n as int32 below 2**31 trials (half the memory of int64: 1e8 trials hold
        # these arrays in a worker of their own); every value exact, read back as float64 where used
        idx = np.int32 if n < 2 ** 31 else np.int64
        self.tpos = np.flatnonzero(p.is_tar).astype(idx)
        self.start = p.cum[p.block[self.tpos]].astype(idx)
        starts = [self.start]
        self.bounds = cell_bounds(self.tpos, starts, n)
        # the cell of every position 0..n (n: the number of cells), i.e. searchsorted(bounds, x, "right") - 1
        # as one gather instead of a binary search per query
        n_cells = self.bounds.size - 1
        dtype = np.int32 if n_cells < 2 ** 31 else np.int64
        self.cell_of = np.empty(n + 1, dtype=dtype)
        self.cell_of[:n] = np.repeat(np.arange(n_cells, dtype=dtype), np.diff(self.bounds))
        self.cell_of[n] = n_cells
        self.tar_cum = np.zeros(n + 1, dtype=idx)
        np.cumsum(p.is_tar, out=self.tar_cum[1:], dtype=idx)
        self.is_tar = p.is_tar
        # per-position work arrays, valid on the cells the current replicate has drawn (multiplicities and
        # cumulative weights are integers of at most n; pages of cells never drawn are never touched)
        self.w = np.zeros(n, dtype=idx)
        self.pw = np.zeros(n, dtype=idx)
        self.pt = np.zeros(n, dtype=idx)

    def draw(self, rng) -> LazyWeights:
        return LazyWeights(rng, self)

    def replicate(self, lw: LazyWeights) -> float:
        """eps_max (nats) of the replicate ``lw``."""
        p, tpos = self.p, self.tpos
        K, k_w, n_w = tpos.size, float(lw.CT[-1]), float(p.block.size)

        def t_pre(idx):
            return lw.before(tpos[idx])[1]

        top = int(p.block[lw.top_position()])
        (w0, w1), (t0, t1) = lw.before(np.array([p.cum[top], p.cum[top + 1]]))
        return eps_max_weighted_lazy(t_pre, lambda idx: lw.before(self.start[idx])[0], K, k_w, n_w,
                                     float(w1 - w0), float(t1 - t0))


def lazy_trial_bootstrap(p, rng, n_boot: int) -> np.ndarray:
    """eps_max (nats) of ``n_boot`` trial-bootstrap replicates of member ``p`` (a
    :class:`~vpeval.analysis.relabel._TrialPrep`), drawn lazily (module docstring)."""
    m = _Member(p)
    return np.array([m.replicate(m.draw(rng)) for _ in range(n_boot)], dtype=np.float64)
