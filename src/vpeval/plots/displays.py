"""DET and ECE displays (scikit-learn style: ``from_scores`` computes, ``plot`` draws)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from ..calibration.pav import pav_llr
from ..metrics.verification import det_curve, rocch_eer
from ..metrics.zebra import ece_profile


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
    def from_scores(cls, tar, non, label: str = "") -> "DETDisplay":
        c = det_curve(tar, non)
        return cls(c.pmiss, c.pfa, rocch_eer(tar, non), label)

    def plot(self, ax=None, **kwargs):
        """Draw on ``ax`` (a new figure when None); returns the Axes. Rates are clipped to [1e-4, 1-1e-4]."""
        ax = _axes(ax)
        lo, hi = 1e-4, 1 - 1e-4
        x = norm.ppf(np.clip(self.pfa, lo, hi))
        y = norm.ppf(np.clip(self.pmiss, lo, hi))
        line = ax.plot(x, y, label=legend_label(f"{self.label} (ROCCH-EER {100 * self.eer:.2f} %)"), **kwargs)[0]
        e = norm.ppf(np.clip(self.eer, lo, hi))
        ax.plot([e], [e], "o", color=line.get_color(), ms=4)
        ticks = np.array([0.001, 0.01, 0.05, 0.2, 0.5, 0.8, 0.95])
        ax.set_xticks(norm.ppf(ticks), [f"{100 * t:g}" for t in ticks])
        ax.set_yticks(norm.ppf(ticks), [f"{100 * t:g}" for t in ticks])
        lim = norm.ppf([0.0005, 0.9995])
        ax.set_xlim(*lim)
        ax.set_ylim(*lim)
        ax.plot(lim, lim, ":", color="grey", lw=0.8)
        ax.set_xlabel("False-alarm rate (%)")
        ax.set_ylabel("Miss rate (%)")
        ax.grid(True, alpha=0.3)
        return ax


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
        plo = np.linspace(-7, 7, 141) if plo is None else np.asarray(plo, dtype=float)
        p = 1 / (1 + np.exp(-plo))
        ref = -(p * np.log2(p) + (1 - p) * np.log2(1 - p))
        t, n = pav_llr(tar, non)
        return cls(plo, ref, ece_profile(t, n, plo), label)

    def plot(self, ax=None, **kwargs):
        ax = _axes(ax)
        line = ax.plot(self.plo, self.pav, label=legend_label(f"{self.label} PAV"), **kwargs)[0]
        ax.fill_between(self.plo, self.pav, self.reference, color=line.get_color(), alpha=0.12)
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

    def plot(self, ax=None, **kwargs):
        ax = _axes(ax)
        x = np.sort(np.asarray(self.lid_values, dtype=float))
        share = 100 * (1 - np.arange(x.size) / x.size)  # % with LID >= x[i]
        line = ax.step(x, share, where="post", label=legend_label(self.label), **kwargs)[0]
        ax.axvline(np.log2(self.n_speakers), ls=":", color=line.get_color(), lw=0.8)
        ax.axvline(0, color="grey", lw=0.8)
        ax.set_xlabel("LID (bits); dotted: log2 N")
        ax.set_ylabel("Probes with LID >= x (%)")
        ax.set_ylim(0, 101)
        ax.grid(True, alpha=0.3)
        return ax
