"""The privacy profile display: eps(delta) with its simultaneous band, the budget line and the delta that decides."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidScoresError
from .displays import _axes, legend_label


@dataclass
class ProfileDisplay:
    """eps(delta) of a family of attackers (their maxima) with the band of its bounds, on a log delta axis.

    Attributes
    ----------
    delta : ndarray of shape (n,)
        Increasing, in (0, 1).
    eps, eps_low, eps_high : ndarray of shape (n,)
        Bits; ``inf`` where unbounded (drawn at the top of the axes, at a tick labelled with the infinity sign, the
        band's with an arrow).
    budget_bits : float
    delta_decides : float or None
        The delta of the verdict (a vertical line).
    label : str

    Raises
    ------
    InvalidScoresError
        Arrays of different lengths, a delta grid that is not increasing in (0, 1).
    """

    delta: np.ndarray
    eps: np.ndarray
    eps_low: np.ndarray
    eps_high: np.ndarray
    budget_bits: float
    delta_decides: float | None = None
    label: str = ""

    def __post_init__(self):
        self.delta, self.eps, self.eps_low, self.eps_high = (np.asarray(a, dtype=float) for a in (
            self.delta, self.eps, self.eps_low, self.eps_high))
        n = self.delta.size
        if not (self.eps.size == self.eps_low.size == self.eps_high.size == n) or n < 2:
            raise InvalidScoresError("the profile's arrays must have one equal length >= 2")
        if not ((self.delta > 0).all() and (self.delta < 1).all() and (np.diff(self.delta) > 0).all()):
            raise InvalidScoresError("the profile's delta grid must be increasing in (0, 1)")

    def top_bits(self) -> float:
        """The height the axes end at: above every finite value and the budget (infinite values are drawn there)."""
        finite = np.concatenate([v[np.isfinite(v)] for v in (self.eps, self.eps_low, self.eps_high)])
        hi = max([self.budget_bits] + finite.tolist())
        return float(1.15 * hi + 0.5)

    def plot(self, ax=None, top: float | None = None, legend: bool = True):
        """Draw on ``ax`` (a new figure when None); returns the Axes. ``top``: the height for infinite values (default
        :meth:`top_bits`); ``legend``: draw the legend (below the axes)."""
        ax = _axes(ax)
        top = self.top_bits() if top is None else float(top)

        def clip(v):
            return np.where(np.isfinite(v), v, top)

        d = self.delta
        ax.fill_between(d, clip(self.eps_low), clip(self.eps_high), color="C0", alpha=0.25,
                        label="95 % band (every attacker, every delta)")
        ax.plot(d, clip(self.eps), ".-", color="C0", lw=1.8, label=legend_label(self.label or "eps(delta)"))
        inf = ~np.isfinite(self.eps_high)
        if inf.any():
            ax.plot(d[inf], np.full(inf.sum(), top), "^", color="C0", ms=5, label="unbounded above")
        ax.axhline(self.budget_bits, color="C3", ls="--", lw=1.2, label=f"budget {self.budget_bits:.3g} bits")
        if self.delta_decides is not None and math.isfinite(self.delta_decides):
            ax.axvline(self.delta_decides, color="grey", ls=":", lw=1.2,
                       label=f"delta of the verdict {100 * self.delta_decides:.3g} %")
        ax.set_xscale("log")
        ax.set_ylim(0, top * 1.05)
        if not all(np.isfinite(v).all() for v in (self.eps, self.eps_low, self.eps_high)):
            # the infinite values' level is labelled as such: a tick "inf" at the top, the finite ticks below a gap,
            # so that nobody reads the height they are drawn at as a number of bits
            finite = [t for t in ax.get_yticks() if 0 <= t <= top - 0.1 * top]
            ax.set_yticks(finite + [top], [f"{t:g}" for t in finite] + ["\u221e"])
            ax.axhline(top, color="0.6", lw=0.8, ls="-", zorder=0)
        ax.set_xlabel("delta (share of trials left out)")
        ax.set_ylabel("eps (bits)")
        ax.grid(True, alpha=0.3, which="both")
        if legend:
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0.0, -0.22), ncol=3, frameon=False)
        return ax
