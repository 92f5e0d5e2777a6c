"""An audited system's linkage risk against the population size and for repeated recordings
(:func:`population_reading`): the population curves and combined probes of :mod:`vpeval.metrics.linkage` for the
system's strongest 1-to-N attacker, original speech beside anonymized speech."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import VpevalError
from ..metrics.linkage import default_population_sizes, population_curves
from ..metrics.linkage.population import ASSUMPTIONS
from ..metrics.linkage.combine import combined_probes
from .profiles import default_delta

__all__ = ["PopulationReading", "population_reading", "EXTRAPOLATE_TO", "COMBINE_UP_TO"]

#: Population sizes an audit extrapolates to (those above the enrolled N).
EXTRAPOLATE_TO = (1_000, 10_000, 100_000, 1_000_000)
#: Most probes of one speaker an audit combines.
COMBINE_UP_TO = 3
#: The 1-to-N conditions drawn: the attacker searching original speech (what anonymization is measured
#: against) and anonymized probes among original enrollments (the attack).
CONDITIONS = {"oo": "original speech (oo)", "oa": "anonymized probes, original enrollment (oa)"}


@dataclass(frozen=True)
class PopulationReading:
    """One system's population curves and combined probes.

    Attributes
    ----------
    attacker : str
        The attacker read: the one whose anonymized search (oa) has the highest ALID (ties: first by name).
    curves : dict condition -> PopulationCurves
        ``"oo"`` and ``"oa"`` where the attacker has them (:data:`CONDITIONS`).
    combined : CombinedProbes or None
        k = 1 .. :data:`COMBINE_UP_TO` oa probes of one speaker combined (None: no speaker has two probes).
    budget_bits : float
    """

    attacker: str
    curves: dict
    combined: object
    budget_bits: float

    def sentence(self) -> str:
        """What the curves say against the budget, in one sentence."""
        oa = self.curves.get("oa")
        b = self.budget_bits
        parts = []
        if oa is not None:
            sizes = [int(v) for v in oa.sizes]
            n, top = oa.within_budget_up_to, sizes[-1]
            who = f"searching original enrollments with anonymized probes (oa), attacker {self.attacker}"
            ceiling = 2.0 ** b  # no LID exceeds log2 N' bits: nothing can exceed the budget below this size
            if n is not None and n >= top:
                parts.append(f"{who} keeps every probe's LID within the budget of {b:.2f} bits in populations of up "
                             f"to {top:,} speakers")
            else:
                first = sizes[0] if n is None else sizes[sizes.index(n) + 1]
                parts.append(f"{who} lets some probe's LID exceed the budget of {b:.2f} bits in a population of "
                             f"{first:,} speakers, the smallest size shown where it does" + (
                                 f" (among {ceiling:.3g} or fewer no search can exceed it)" if first > ceiling
                                 and (n is None or n <= ceiling * (1 + 1e-9)) else
                                 "" if n is None else f" (and stays within it up to {n:,})"))
            r1, chance = float(oa.rank1[-1]), 1.0 / top
            how = "extrapolated" if not oa.measured[-1] else "measured"
            parts.append(f"its rank-1 identification rate among {top:,} speakers is no better than chance ({how})"
                         if r1 <= chance else
                         f"its rank-1 identification rate among {top:,} speakers is {100 * r1:.2g} %, "
                         f"{r1 / chance:.3g} times chance ({how})")
        c = self.combined
        if c is not None:
            k, most = c.within_budget_up_to.get("sum"), int(c.ks[-1])
            if not k:
                parts.append("the largest speaker's LID exceeds the budget with a single recording")
            elif k == 1:
                parts.append("the largest speaker's LID stays within the budget with one recording and exceeds it "
                             "with two summed")
            elif k < most:
                parts.append(f"the largest speaker's LID, summing up to {k} of their recordings, stays within the "
                             f"budget, and exceeds it with {k + 1}")
            else:
                parts.append(f"the largest speaker's LID stays within the budget summing up to {most} of their "
                             f"recordings (the most combined; {int(c.n_speakers[-1])} speakers have {most})")
        return ("; ".join(parts) + ".") if parts else ""

    def to_dict(self) -> dict:
        """JSON-ready: the curves as :meth:`PopulationCurves.to_dict` gives them, to 4 significant digits, without
        LID_max's interval (a percentile interval of a maximum tops out at the estimate), their check summed up
        (its sizes, largest differences and reliability, not the per-size arrays) and the model's assumptions
        once: report.json keeps what the page shows, at the precision the estimates have."""
        curves = {}
        for c, v in self.curves.items():
            d = v.to_dict()
            d.pop("assumptions")
            for key in ("lid_max_low", "lid_max_high"):  # a maximum's percentile interval: the estimate above
                d.pop(key)
            for key in ("rank1", "rank1_low", "rank1_high", "alid_bits", "alid_low", "alid_high", "lid_max_bits"):
                d[key] = [float(f"{x:.4g}") for x in d[key]]  # 4 digits: the Monte-Carlo error is larger
            if d["check"] is not None:
                d["check"] = {k: d["check"][k] for k in ("n_fit", "sizes", "max_abs_rank1", "max_abs_alid_bits",
                                                         "reliable") if k in d["check"]}
            curves[c] = d
        return {"attacker": self.attacker, "budget_bits": self.budget_bits, "assumptions": ASSUMPTIONS,
                "curves": curves,
                "combined_probes": None if self.combined is None else self.combined.to_dict(),
                "sentence": self.sentence()}


def _strongest(res) -> str | None:
    """The attacker whose oa search has the highest ALID (ties: the first name), or None."""
    best = None
    for name in sorted(res.linkage):
        link = res.linkage[name].get("oa")
        if link is None or isinstance(link, Exception) or name not in res.matrices:
            continue
        alid = float(link.lid.summary.alid)
        if best is None or alid > best[0]:
            best = (alid, name)
    return None if best is None else best[1]


def population_reading(res, *, budget_bits: float, delta: float | None = None, seed: int = 0,
                       extrapolate_to=EXTRAPOLATE_TO, combine_up_to: int = COMBINE_UP_TO,
                       n_boot: int = 200) -> PopulationReading | None:
    """The population curves (oo and oa) and the combined oa probes of a system's strongest 1-to-N attacker.

    Parameters
    ----------
    res : vpeval.pipeline.audit.SystemAudit
        One audited system (its ``linkage`` analyses and ``matrices``).
    budget_bits : float
        The verdict's budget (bits).
    delta : float, optional
        The verdict's delta for the combined probes' eps; default ``1 / (2 S)``, ``S`` the oa probes' speakers.
    seed : int
    extrapolate_to : iterable of int
        Sizes beyond the enrolled N to extrapolate to (those at or below N are measured anyway).
    combine_up_to : int
        Most probes of one speaker combined.
    n_boot : int
        Bootstrap replicates of the intervals.

    Returns
    -------
    PopulationReading or None
        None where no attacker searches 1-to-N (e.g. only content or prosody attackers).

    Raises
    ------
    VpevalError
        What :func:`~vpeval.metrics.linkage.population_curves` raises (too few impostor scores to extrapolate).
    """
    name = _strongest(res)
    if name is None:
        return None
    curves = {}
    combined = None
    for cond in CONDITIONS:
        link, m = res.linkage[name].get(cond), res.matrices[name].get(cond)
        if link is None or isinstance(link, Exception) or m is None:
            continue
        ti = np.asarray(m.true_index)
        sizes = default_population_sizes(m.n_enrolled, [s for s in extrapolate_to if s > m.n_enrolled])
        curves[cond] = population_curves(m.scores, ti, sizes, slope=link.lid.probe_slopes(ti.size), speaker=ti,
                                         znorm=True, budget_bits=budget_bits, n_boot=n_boot, seed=seed)
        if cond == "oa":
            llr = link.lid.llr_matrix(m.scores)
            most = int(np.bincount(ti).max())
            if most >= 2:
                d = default_delta(int(np.unique(ti).size)) if delta is None else delta
                combined = combined_probes(llr, ti, range(1, min(most, combine_up_to) + 1), rules=("sum", "mean"),
                                           delta=d, budget_bits=budget_bits, n_boot=n_boot, seed=seed)
    if not curves:
        raise VpevalError(f"attacker {name}: no 1-to-N matrix to read the population curves of")
    return PopulationReading(name, curves, combined, float(budget_bits))
