"""DET and ECE displays (scikit-learn style: ``from_scores`` computes, ``plot`` draws)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._checks import as_tar_non
from ..blocks import TieBlocks, compress_runs, merge_sorted_pair, operating_points, pav_bin_llr, sorted_pair
from ..errors import InvalidScoresError
from ..metrics.verification import det_curve, rocch_eer
from ..metrics.zebra import _ece_profile_weighted


def legend_label(text: str) -> str:
    """A label shown literally: ``$`` would start mathtext, and a leading ``_`` hides a legend entry."""
    text = text.replace("$", r"\$")
    return "\u200b" + text if text.startswith("_") else text


def _axes(ax):
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots()
    return ax


@dataclass
class DETDisplay:
    """DET curve on normal-deviate (probit) axes.

    Attributes
    ----------
    pmiss, pfa : ndarray
        Operating points (fractions), from :func:`vpeval.det_curve`.
    eer : float
        ROCCH-EER (fraction), marked on the curve.
    label : str
    """

    pmiss: np.ndarray
    pfa: np.ndarray
    eer: float
    label: str = ""

    @classmethod
    def from_scores(cls, tar, non, label: str = "", eer: float | None = None) -> "DETDisplay":
        """The display of scores ``tar``/``non``; ``eer``: their ROCCH-EER when the caller has it already
        (e.g. from :func:`vpeval.verification_summary`), else computed here."""
        c = det_curve(tar, non)
        return cls(c.pmiss, c.pfa, rocch_eer(tar, non) if eer is None else float(eer), label)

    @classmethod
    def from_blocks(cls, blocks: TieBlocks, label: str = "", eer: float | None = None) -> "DETDisplay":
        """The display of the scores whose tie blocks are ``blocks`` (:func:`vpeval.blocks.tie_blocks`): the
        same curve as :meth:`from_scores` of those scores, without sorting them again."""
        from ..metrics.verification import _rocch_eer, _rocch_points

        pmiss, pfa = operating_points(blocks)
        return cls(pmiss, pfa, _rocch_eer(*_rocch_points(blocks)) if eer is None else float(eer), label)

    def plot(self, ax=None, floor=None, **kwargs):
        """Draw on ``ax`` (a new figure when None); returns the Axes.

        The axes span the rates the curves on ``ax`` use: from the smallest non-zero rate of any curve drawn
        there (at most 0.1 %, at least 0.01 %) to one minus it, with a labelled tick at every step of
        :data:`DET_TICKS` inside that span; zero rates sit on the edge. ``floor`` (one of :data:`DET_FLOORS`)
        sets the smallest rate shown instead, e.g. the :func:`det_floor` of all curves to be drawn. Extra keyword arguments (``ls``,
        ``marker``, ``color``...) go to the curve; ``eer_marker`` (default ``"o"``) marks the ROCCH-EER. Of a
        curve with more than 20,000 points, the line goes through those :func:`drawn_points` keeps (within about
        a tenth of a pixel of the full staircase); the display's ``pmiss``/``pfa`` keep every point.
        """
        from scipy.special import ndtri
        from scipy.stats import norm  # here, not at import: scipy.stats takes a noticeable part of a second

        ax = _axes(ax)
        eer_marker = kwargs.pop("eer_marker", "o")
        floor = det_floor(self.pfa, self.pmiss) if floor is None else floor
        first = not any(ln.get_gid() == "vpeval-det-diagonal" for ln in ax.lines)  # the axes' first curve
        if not first:  # keep the span of curves drawn before
            drawn = norm.cdf(ax.get_xlim()[0] + 0.12)
            floor = min(floor, min(DET_FLOORS, key=lambda f: abs(f - drawn)))
        lim = (norm.ppf(floor) - 0.12, -norm.ppf(floor) + 0.12)
        # of millions of points (a large trial list), those that differ on the figure (drawn_points); their
        # probits by scipy.special.ndtri, the function norm.ppf evaluates, without its argument checks and copies
        keep = drawn_points(self.pmiss, self.pfa, floor)
        x = ndtri(np.clip(np.asarray(self.pfa, float)[keep], floor, 1 - floor))
        y = ndtri(np.clip(np.asarray(self.pmiss, float)[keep], floor, 1 - floor))
        line = ax.plot(x, y, label=legend_label(f"{self.label} (ROCCH-EER {100 * self.eer:.2f} %)"), **kwargs)[0]
        line.set_gid("vpeval-det")
        e = norm.ppf(np.clip(self.eer, floor, 1 - floor))
        ax.plot([e], [e], eer_marker, color=line.get_color(), ms=4 if eer_marker == "o" else 6)
        ticks = np.array([t for t in DET_TICKS if floor <= t <= 1 - floor])
        at = norm.ppf(ticks)
        if not (np.array_equal(ax.get_xticks(), at) and np.array_equal(ax.get_yticks(), at)):
            # new tick labels only when the span changed: making them is most of the time of a curve on
            # an axes of many (the overview's 22 attackers per panel)
            labels = [f"{100 * t:g}" for t in ticks]
            ax.set_xticks(at, labels, rotation=90, fontsize=7)
            ax.set_yticks(at, labels, fontsize=7)
        ax.set_xlim(*lim)
        ax.set_ylim(*lim)
        if first:
            ax.plot(lim, lim, ":", color="grey", lw=0.8, gid="vpeval-det-diagonal")
            ax.set_xlabel("False-alarm rate (%)")
            ax.set_ylabel("Miss rate (%)")
            # once per axes: the axis keeps it for the ticks made later, and setting it again re-applies it to
            # every tick (a third of the time of a curve on the overview's panels of 22 attackers)
            ax.grid(True, alpha=0.3)
        else:
            next(ln for ln in ax.lines if ln.get_gid() == "vpeval-det-diagonal").set_data(lim, lim)
        return ax


#: Tick positions of DET axes (fractions), symmetric about 50 %; the axes show those inside their span.
DET_TICKS = (0.0001, 0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995,
             0.999, 0.9999)


#: The lowest rates a DET axis can start at (0.1, 0.05, 0.01 %).
DET_FLOORS = (1e-3, 5e-4, 1e-4)


def det_floor(pfa, pmiss) -> float:
    """The lowest rate the DET axes must show: the smallest non-zero rate, snapped down to 0.1, 0.05 or 0.01 %.

    Parameters
    ----------
    pfa, pmiss : array_like of shape (m,) and (k,)
        Operating points (fractions), in any order; NaN allowed.

    Returns
    -------
    float
        One of :data:`DET_FLOORS` (a fraction). Raises nothing.

    Notes
    -----
    A rate ``r`` counts by its distance from the nearer edge, ``min(r, 1 - r)``; rates of exactly 0 or 1 (and
    NaN) do not count; without any other, the floor is 0.1 %. Computed as the least of the smallest rate above
    0 and one minus the largest rate below 1 (the same number, without temporaries the size of the curve)."""
    m = 1.0
    for r in (np.asarray(pfa, float), np.asarray(pmiss, float)):
        if r.size:
            m = min(m, float(np.min(r, where=r > 0, initial=1.0)), 1.0 - float(np.max(r, where=r < 1, initial=0.0)))
    m = m if m < 1.0 else 1e-3  # no rate strictly between 0 and 1
    return next((f for f in DET_FLOORS if f <= m), DET_FLOORS[-1])


#: Drawn DET curves keep, of points that lie within one cell of this size (probit units, on both axes) in a row,
#: the first and the last: the drawn line is within ``sqrt(2)`` times it of the full staircase, about a tenth of
#: a pixel at the report's figure sizes (see :func:`drawn_points`).
DET_DRAW_STEP = 1e-3


def drawn_points(pmiss, pfa, floor: float, step: float = DET_DRAW_STEP) -> np.ndarray:
    """Indices (ascending) of the DET operating points a plot of the curve draws; all of them for a short curve.

    A curve of a large trial list has millions of points (one per distinct score) where a figure shows a few
    thousand pixels. For a curve in the order :func:`vpeval.det_curve` gives (``pmiss`` non-decreasing,
    ``pfa`` non-increasing), the plane of probits is cut into cells of ``step`` by lines at ``ndtri(rate) =
    j * step`` over the span the axes show (``floor`` to ``1 - floor``); the points kept are the first and the
    last, and the two on either side of every crossing of a line (one binary search per line and axis). Between
    two consecutive kept points, the points left out lie in one cell with them, so the drawn line stays within
    ``step * sqrt(2)`` probit units of the full one, and every point drawn is an operating point of the curve.
    Curves of up to 20,000 points, and curves not in that order, are drawn in full.

    Parameters
    ----------
    pmiss, pfa : array_like of shape (n,)
        The curve's operating points (fractions), e.g. :class:`DETDisplay`'s.
    floor : float
        The smallest rate the axes show (fraction, ``0 < floor < 0.5``; :func:`det_floor`); rates beyond
        ``floor`` and ``1 - floor`` are drawn on the edge.
    step : float
        Cell size in probit units (:data:`DET_DRAW_STEP`).

    Returns
    -------
    ndarray of int64, shape (k,)
        Ascending distinct indices into the points, ``0`` and ``n - 1`` included (``k = n`` for a curve drawn in
        full, else at most ``8 * ndtri(1 - floor) / step + 22``). Raises nothing; arrays of different
        lengths are drawn in full (``arange(n)``).

    Notes
    -----
    Not in any paper: a drawing device, the DET curve being that of Martin et al. (1997), "The DET curve in
    assessment of detection task performance", Eurospeech."""
    from scipy.special import ndtr, ndtri

    pmiss, pfa = np.asarray(pmiss, float), np.asarray(pfa, float)
    n = pmiss.size
    if n <= 20_000 or pfa.size != n:
        return np.arange(n)
    if not (np.all(pmiss[1:] >= pmiss[:-1]) and np.all(pfa[1:] <= pfa[:-1])):  # NaN fails both as well
        return np.arange(n)
    lim = float(-ndtri(floor))
    edges = ndtr(np.arange(math.floor(-lim / step) - 1, math.ceil(lim / step) + 2) * step)  # rates, ascending
    c_miss = np.searchsorted(pmiss, edges, side="left")  # first point at or above each line
    c_fa = n - np.searchsorted(pfa[::-1], edges, side="left")  # first point below each line (pfa descending)
    cross = np.concatenate([c_miss, c_miss - 1, c_fa, c_fa - 1, [0, n - 1]])
    return np.unique(np.clip(cross, 0, n - 1))


DET_STYLES = ("-", "--", "-.", ":")


def det_styles(curves) -> list[dict]:
    """Line styles for DET curves drawn on one axes, so that curves which coincide all stay visible.

    ``curves`` is a sequence of (pmiss, pfa) pairs. Each curve that repeats an earlier one (same operating
    points) gets the next dash pattern and a thinner line than the curve under it, and ``same_as`` names the
    index of the first curve it repeats (None for the first of its kind).
    """
    arrays = [tuple(np.asarray(v, float) for v in c) for c in curves]
    stairs: dict[int, np.ndarray] = {}  # each curve's staircase, made once (a figure compares every pair)

    def stair(i: int) -> np.ndarray:
        if i not in stairs:
            stairs[i] = _staircase(*arrays[i])
        return stairs[i]

    def same_curve(j: int, i: int) -> bool:
        (pm1, pf1), (pm2, pf2) = arrays[j], arrays[i]
        if pm1.shape != pm2.shape or pf1.shape != pf2.shape:
            # different numbers of thresholds can still trace the same staircase
            return bool(np.array_equal(stair(j), stair(i)))
        return bool(np.allclose(pm1, pm2, atol=1e-9) and np.allclose(pf1, pf2, atol=1e-9))

    out: list[dict] = []
    for i in range(len(arrays)):
        same = next((j for j in range(i) if same_curve(j, i)), None)
        if same is None:
            out.append({"ls": "-", "lw": 1.5, "same_as": None})
        else:
            k = 1 + sum(1 for o in out if o["same_as"] == same)
            out.append({"ls": DET_STYLES[k % len(DET_STYLES)], "lw": max(0.8, 1.5 - 0.25 * k), "same_as": same})
    return out


def _staircase(pm, pf) -> np.ndarray:
    """The distinct (pfa, pmiss) points, rounded to 1e-9, sorted by pfa then pmiss: (k, 2). The rows of
    ``np.unique(..., axis=0)``, by a lexsort and a neighbour comparison (a seventh of its time on a DET curve)."""
    r = np.round(np.c_[pf, pm], 9)
    r = r[np.lexsort((r[:, 1], r[:, 0]))]
    keep = np.ones(len(r), dtype=bool)
    np.any(r[1:] != r[:-1], axis=1, out=keep[1:])
    return r[keep]


@dataclass
class ECEDisplay:
    """privacy-ZEBRA ECE profile: empirical cross entropy (bits) against prior log-odds.

    Curves: the reference (uninformative, the binary entropy), the LLRs as given when they are LLRs, and
    the PAV-calibrated scores; the area between reference and PAV curves, over the prior, is D_ECE.
    """

    plo: np.ndarray
    reference: np.ndarray
    pav: np.ndarray
    label: str = ""

    @classmethod
    def from_scores(cls, tar, non, label: str = "", plo=None) -> "ECEDisplay":
        tar, non = as_tar_non(tar, non)
        return cls.from_blocks(merge_sorted_pair(list(sorted_pair(tar, non))), label, plo)

    @classmethod
    def from_blocks(cls, blocks: TieBlocks, label: str = "", plo=None) -> "ECEDisplay":
        """The display of the scores whose tie blocks are ``blocks`` (:func:`vpeval.blocks.tie_blocks`): the
        same profile as :meth:`from_scores` of those scores, without sorting them again."""
        plo = np.linspace(-7, 7, 141) if plo is None else np.asarray(plo, dtype=float)
        p = 1 / (1 + np.exp(-plo))
        ref = -(p * np.log2(p) + (1 - p) * np.log2(1 - p))
        if not np.isfinite(plo).all():
            raise InvalidScoresError("plo must be finite prior log-odds")
        # the PAV LLR of each bin with its counts (what ece_profile reduces the per-trial PAV LLRs to), from the
        # tie blocks instead of the per-trial LLRs and their distinct values
        llr, nt, nn = pav_bin_llr(compress_runs([blocks]), False)
        t, n = nt > 0, nn > 0
        return cls(plo, ref, _ece_profile_weighted(llr[t], nt[t].astype(np.float64), llr[n],
                                                   nn[n].astype(np.float64), plo), label)

    def plot(self, ax=None, *, fill: bool = True, reference: bool = True, **kwargs):
        """Draw the PAV curve; ``fill`` shades the D_ECE area up to the reference, ``reference`` draws the
        dotted reference (draw it once when several displays share one axes, and leave ``fill`` off there:
        overlapping shades hide each other)."""
        ax = _axes(ax)
        line = ax.plot(self.plo, self.pav, label=legend_label(f"{self.label} PAV"), **kwargs)[0]
        if fill:
            ax.fill_between(self.plo, self.pav, self.reference, color=line.get_color(), alpha=0.12)
        if reference:
            ax.plot(self.plo, self.reference, ":", color="grey", lw=1)
        ax.set_xlabel("Prior log-odds logit(P) (nats)")
        ax.set_ylabel("Empirical cross entropy (bits)")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        return ax


@dataclass
class CMCDisplay:
    """Cumulative match characteristic: identification rate at rank k (k = 1..N), log-scaled k, with the
    chance line k/N."""

    cmc: np.ndarray
    label: str = ""

    def plot(self, ax=None, **kwargs):
        ax = _axes(ax)
        k = np.arange(1, self.cmc.size + 1)
        line = ax.plot(k, 100 * self.cmc, label=legend_label(self.label), **kwargs)[0]
        ax.plot(k, 100 * k / k.size, ":", color=line.get_color(), lw=0.8)
        ax.set_xscale("log")
        ax.set_xlabel("Rank k (log scale)")
        ax.set_ylabel("Identification rate (%)")
        ax.set_ylim(0, 102)  # a curve at 100 % stays visible
        ax.grid(True, alpha=0.3)
        return ax


@dataclass
class LIDCCDFDisplay:
    """Share of probes (%) whose LID is at least x bits, with the log2 N ceiling marked."""

    lid_values: np.ndarray
    n_speakers: int
    label: str = ""

    def steps(self) -> tuple[np.ndarray, np.ndarray]:
        """The drawn step function as ``(x, percent)`` for ``ax.step(..., where="post")``.

        ``percent[j]`` holds on ``[x[j], x[j+1])``. The first point is the smallest LID with 100 %, then each
        distinct LID ``u`` carries ``100 #(LID > u) / n`` (the share at least any value just above ``u``, the
        value of :func:`vpeval.metrics.linkage.lid_ccdf` at the next distinct LID), so the curve drops to 0 at the
        largest LID. Tied LIDs make one step.
        """
        from ..metrics.linkage.summary import lid_ccdf

        u, pct = lid_ccdf(self.lid_values)  # pct[j] = % with LID >= u[j]
        above = np.append(pct[1:], 0.0)  # % with LID > u[j]
        return np.concatenate([u[:1], u]), np.concatenate([[100.0], above])

    def plot(self, ax=None, **kwargs):
        ax = _axes(ax)
        x, share = self.steps()
        line = ax.step(x, share, where="post", label=legend_label(self.label), **kwargs)[0]
        ax.axvline(np.log2(self.n_speakers), ls=":", color=line.get_color(), lw=0.8)
        ax.axvline(0, color="grey", lw=0.8)
        ax.set_xlabel("LID (bits); dotted: log2 N")
        ax.set_ylabel("Probes with LID >= x (%)")
        ax.set_ylim(0, 101)
        ax.grid(True, alpha=0.3)
        return ax
