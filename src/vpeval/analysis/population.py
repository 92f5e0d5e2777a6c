"""An audited system's linkage risk against the population size and for repeated recordings
(:func:`population_reading`): the population curves and combined probes of :mod:`vpeval.metrics.linkage` for the
system's strongest 1-to-N attacker, original speech beside anonymized speech."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import VpevalError
from ..metrics.linkage import default_population_sizes, population_curves
from ..metrics.linkage.population import row_zscores
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
            n, top = oa.within_budget_up_to, int(oa.sizes[-1])
            who = f"searching anonymized speech, attacker {self.attacker}"
            if n is None:
                parts.append(f"{who} exceeds the budget of {b:.2f} bits for some probe at every population size shown")
            elif n >= top:
                parts.append(f"{who} keeps every probe's LID within the budget of {b:.2f} bits in populations of up "
                             f"to {top:,} speakers")
            else:
                parts.append(f"{who} keeps every probe's LID within the budget of {b:.2f} bits only in populations "
                             f"of up to {n:,} speakers (among fewer than {2 ** b:.3g} no search can exceed it) and "
                             "exceeds it for some probe beyond")
            r1 = float(oa.rank1[-1])
            parts.append(f"its rank-1 identification rate is {100 * r1:.2g} % among {top:,} speakers "
                         f"({'extrapolated' if not oa.measured[-1] else 'measured'}; chance {100 / top:.2g} %)")
        c = self.combined
        if c is not None:
            k, most = c.within_budget_up_to.get("sum"), int(c.ks[-1])
            parts.append("the largest speaker's LID over their recordings summed exceeds the budget from one "
                         "recording on" if not k else
                         (f"the largest speaker's LID stays within the budget with up to {k} recordings summed"
                          if k > 1 else "the largest speaker's LID stays within the budget for one recording")
                         + (f" and exceeds it with {k + 1}" if k < most else f" (all {most} combined)"))
        return ("; ".join(parts) + ".") if parts else ""

    def to_dict(self) -> dict:
        return {"attacker": self.attacker, "budget_bits": self.budget_bits,
                "curves": {c: v.to_dict() for c, v in self.curves.items()},
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
        curves[cond] = population_curves(row_zscores(m.scores), ti, sizes, slope=link.lid.probe_slopes(ti.size),
                                         speaker=ti, budget_bits=budget_bits, n_boot=n_boot, seed=seed)
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
