"""Score -> LLR curves of several estimators on one Axes, over the target/non-target score histograms."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._checks import as_tar_non
from ..errors import VpevalError
from .displays import legend_label

__all__ = ["LLRCurvesDisplay"]


def _bin_edges(lo: float, hi: float, bins: int) -> np.ndarray:
    """Equal-width histogram edges over ``[lo, hi]``: those of :func:`numpy.histogram_bin_edges` of scores spanning
    exactly that range (it reads only their extremes: the pooled scores need not be concatenated), with half as
    many bins, again and again, where the range holds too few floats for ``bins`` distinct edges (scores a few
    float steps apart), down to one bin."""
    while True:
        try:
            return np.histogram_bin_edges(np.array([lo, hi]), bins=bins)
        except ValueError:  # "Too many bins for data range"
            if bins == 1:
                raise
            bins = max(1, bins // 2)


@dataclass
class LLRCurvesDisplay:
    """Score -> LLR (nats) curves of LLR estimators, drawn over the two score histograms.

    Build with :meth:`from_scores` (fits the estimators) and draw with :meth:`plot`.  Like every vpeval
    display, it holds arrays only, imports matplotlib lazily, draws on a given Axes and never writes files.

    Attributes
    ----------
    grid : ndarray of shape (m,)
        Scores at which the curves are evaluated.
    curves : dict
        Estimator name -> LLRs (nats) on ``grid``, in drawing order; ``"oracle"`` if given.
    errors : dict
        Estimator name -> error message, for estimators that could not be fitted (not drawn; listed in the
        legend title).
    bin_edges : ndarray of shape (b + 1,)
    tar_density, non_density : ndarray of shape (b,)
        Histograms of the target and non-target scores, as densities over ``bin_edges``.
    label : str
    """

    grid: np.ndarray
    curves: dict
    bin_edges: np.ndarray
    tar_density: np.ndarray
    non_density: np.ndarray
    errors: dict = field(default_factory=dict)
    label: str = ""

    @classmethod
    def from_scores(
        cls,
        tar,
        non,
        estimators=None,
        *,
        oracle=None,
        n_points: int = 400,
        bins: int = 60,
        label: str = "",
    ) -> "LLRCurvesDisplay":
        """Fit every estimator on ``tar``/``non`` and evaluate it on a grid over the score range.

        Parameters
        ----------
        tar, non : array_like
            Finite target and non-target scores.
        estimators : sequence of str or calibrator objects, optional
            As in :func:`vpeval.disclosure.worst_case_disclosure` (default: its five estimators).
        oracle : callable, optional
            Exact score -> LLR (nats) map, e.g. ``SimulatedScores.model.llr``; drawn dashed as ``oracle``.
        n_points : int
            Grid size; the grid spans the pooled score range (plus 2 % on each side).
        bins : int
            Number of histogram bins (shared by both classes; fewer where the scores span too few floats for
            them, see :func:`_bin_edges`).
        """
        from ..disclosure import DEFAULT_ESTIMATORS, worst_case_disclosure

        tar, non = as_tar_non(tar, non, allow_inf=False)
        if n_points < 2 or bins < 1:
            raise VpevalError("n_points must be >= 2 and bins >= 1")
        res = worst_case_disclosure(tar, non, DEFAULT_ESTIMATORS if estimators is None else estimators)
        return cls.from_disclosure(res, tar, non, oracle=oracle, n_points=n_points, bins=bins, label=label)

    @classmethod
    def from_disclosure(cls, res, tar, non, *, oracle=None, n_points: int = 400, bins: int = 60,
                        label: str = "") -> "LLRCurvesDisplay":
        """As :meth:`from_scores`, from the calibrators already fitted by
        :func:`vpeval.disclosure.worst_case_disclosure` on the same ``tar``/``non`` (``res``), fitting nothing
        again (the report draws its table and this plot from one fit)."""
        tar, non = as_tar_non(tar, non, allow_inf=False)
        if n_points < 2 or bins < 1:
            raise VpevalError("n_points must be >= 2 and bins >= 1")
        lo, hi = float(min(tar.min(), non.min())), float(max(tar.max(), non.max()))
        pad = 0.02 * (hi - lo) if hi > lo else 1.0
        grid = np.linspace(lo - pad, hi + pad, n_points)
        curves, errors = {}, {}
        for name, r in res.results.items():
            if r.error is not None:
                errors[name] = r.error
            elif r.calibrator is not None:  # the oracle's LLRs have no calibrator: drawn from ``oracle`` below
                curves[name] = np.asarray(r.calibrator.transform(grid), dtype=np.float64)
        if oracle is not None:
            curves["oracle"] = np.asarray(oracle(grid), dtype=np.float64)
        edges = _bin_edges(lo, hi, bins)
        td, _ = np.histogram(tar, bins=edges, density=True)
        nd, _ = np.histogram(non, bins=edges, density=True)
        return cls(grid, curves, edges, td, nd, errors, label)

    def plot(self, ax=None, *, ylim=None, hist_alpha: float = 0.25, unit: str = "nats"):
        """Draw the histograms (right-hand density axis) and the LLR curves (left axis) on ``ax``.

        ``unit``: ``"nats"`` (the LLRs as held) or ``"bits"`` (divided by ln 2, the report's convention).
        ``ylim`` limits the LLR axis in that unit (default: the finite range of the curves, clipped to +-25
        nats or its equivalent; infinite PAV values are drawn at the edge).  Returns the LLR Axes.
        """
        if unit not in ("nats", "bits"):
            raise ValueError(f"unit must be 'nats' or 'bits', got {unit!r}")
        k = 1.0 if unit == "nats" else 1.0 / np.log(2.0)
        bound = 25.0 * k
        if ax is None:
            import matplotlib.pyplot as plt

            _, ax = plt.subplots()
        hist_ax = ax.twinx()
        widths = np.diff(self.bin_edges)
        hist_ax.bar(self.bin_edges[:-1], self.tar_density, widths, align="edge", alpha=hist_alpha,
                    color="tab:red", label="target scores")
        hist_ax.bar(self.bin_edges[:-1], self.non_density, widths, align="edge", alpha=hist_alpha,
                    color="tab:blue", label="non-target scores")
        hist_ax.set_ylabel("score density")
        hist_ax.set_ylim(bottom=0)
        ax.set_zorder(hist_ax.get_zorder() + 1)
        ax.patch.set_visible(False)
        if ylim is None:
            finite = [c[np.isfinite(c)] for c in self.curves.values()]
            finite = np.concatenate(finite) if finite else np.zeros(1)
            finite = finite if finite.size else np.zeros(1)
            ylim = (max(-bound, k * float(finite.min()) - 0.5), min(bound, k * float(finite.max()) + 0.5))
        for name, llr in self.curves.items():
            y = np.clip(k * llr, *ylim)
            style = {"ls": "--", "color": "black", "lw": 1.5} if name == "oracle" else {"lw": 1.5}
            ax.plot(self.grid, y, label=legend_label(str(name)), **style)
        ax.axhline(0.0, color="grey", lw=0.8, ls=":")
        ax.set_ylim(*ylim)
        ax.set_xlabel("score")
        ax.set_ylabel(f"LLR ({unit})")
        title = "not fitted: " + ", ".join(self.errors) if self.errors else None
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = hist_ax.get_legend_handles_labels()
        # below the axes: inside, "best" placement saw the curves only and covered the histograms of the twin axes
        ax.legend(h1 + h2, l1 + l2, title=title, fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.13),
                  ncol=min(4, len(h1 + h2)), frameon=False)
        if self.label:
            ax.set_title(legend_label(self.label))
        ax.grid(True, alpha=0.3)
        return ax
