"""Report section of one system's linkage against the population size and for repeated recordings
(:class:`vpeval.analysis.population.PopulationReading`)."""

from __future__ import annotations

import numpy as np

from ..analysis.population import CONDITIONS
from .document import Draw, Figure, Paragraph, Section, Table

__all__ = ["population_section"]


def population_section(reading, *, section_id: str = "population", system: str = "") -> Section:
    """The curves of the system's strongest 1-to-N attacker on original and anonymized speech (a figure of
    rank-1 and ALID against N', a table), the combined probes, and the reading against the budget.

    ``reading``: a :class:`~vpeval.analysis.population.PopulationReading`, None (no attacker searches 1-to-N)
    or the error that stopped it; ``sec.data`` = ``reading.to_dict()`` (report.json carries the curves)."""
    pre = f"{system}: " if system else ""
    sec = Section(section_id, f"Linkage against the population size: {pre}".rstrip(": ")
                  + ("" if not hasattr(reading, "attacker") else f" (attacker {reading.attacker})"))
    if reading is None:
        sec.blocks.append(Paragraph("No attacker of this system searches 1-to-N (the voice channel): no curves."))
        return sec
    if isinstance(reading, Exception):
        sec.blocks.append(Paragraph(f"Not computed: {reading}", kind="note"))
        return sec
    first = next(iter(reading.curves.values()))
    sec.blocks.append(Paragraph(
        f"{reading.sentence()[0].upper()}{reading.sentence()[1:]} The attacker is the system's strongest 1-to-N "
        f"search (the highest ALID on anonymized probes); the population is that of the enrolled speakers "
        f"(N = {first.n_speakers:,}), subsampled for smaller N' and extrapolated beyond by a model: "
        + first.to_dict()["assumptions"] + " (docs/beyond.md). Intervals: bootstrap of the probes' speakers, "
        f"{100 * first.level:g} %."))
    for cond, c in reading.curves.items():
        if c.check is not None and c.check.get("reliable") is False:
            sec.blocks.append(Paragraph(
                f"{CONDITIONS[cond]}: fitted on {c.check['n_fit']} of the {c.n_speakers} enrolled speakers, the model "
                f"misses the measured curves by {c.check['max_abs_rank1']:.3f} of rank-1 and "
                f"{c.check['max_abs_alid_bits']:.3f} bits of ALID: the extrapolated sizes are not to be relied on.",
                kind="note"))
    sec.blocks.append(Figure("population", Draw(_draw, {k: v.to_dict() for k, v in reading.curves.items()}),
                             "Rank-1 identification (left; dotted: chance 1/N') and ALID (right) against the "
                             "population size N', with their intervals; solid up to the enrolled N (measured), "
                             "dashed beyond it (the model).", size=(10.0, 4.0)))
    rows = []
    for cond, c in reading.curves.items():
        for j, size in enumerate(c.sizes.tolist()):
            rows.append([CONDITIONS[cond], f"{size:,}", "measured" if c.measured[j] else "model",
                         100 * float(c.rank1[j]), f"{100 * c.rank1_low[j]:.3g}-{100 * c.rank1_high[j]:.3g}",
                         float(c.alid_bits[j]), f"{c.alid_low[j]:.3g}-{c.alid_high[j]:.3g}",
                         float(c.lid_max_bits[j])])
    sec.blocks.append(Table(["condition", "N'", "", "rank-1 (%)", "interval", "ALID (bits)", "interval",
                             "LID_max (bits)"], rows, caption="Against the population size"))
    cp = reading.combined
    if cp is not None:
        d = cp.rows["sum"]
        rows = [[int(k), int(cp.n_speakers[j]), "all" if cp.exact[j] else f"{cp.max_subsets} drawn",
                 float(d["alid_bits"][j]), f"{d['alid_low'][j]:.3g}-{d['alid_high'][j]:.3g}",
                 100 * float(d["rank1"][j]),
                 float(d["speaker_lid_max_bits"][j]), float(d["eps_bits"][j]), float(cp.rows["mean"]["alid_bits"][j])]
                for j, k in enumerate(cp.ks.tolist())]
        sec.blocks.append(Table(
            ["k recordings", "speakers", "sets", "ALID (bits)", "interval", "rank-1 (%)",
             "largest speaker's LID (bits)",
             f"eps at delta {cp.delta:.3g} (bits)", "ALID, mean of LLRs (bits)"], rows,
            caption=f"{CONDITIONS['oa']}: k probes of one speaker, LLRs summed (Bayes' rule for independent "
                    "recordings); the last column averages them instead"))
    sec.data = reading.to_dict()
    return sec


def _draw(fig, curves: dict) -> None:
    ax1, ax2 = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    for i, (cond, c) in enumerate(curves.items()):
        sizes = np.asarray(c["sizes"], dtype=float)
        meas = np.asarray(c["measured"], dtype=bool)
        for ax, (est, lo, hi) in ((ax1, ("rank1", "rank1_low", "rank1_high")),
                                  (ax2, ("alid_bits", "alid_low", "alid_high"))):
            y = np.asarray(c[est], dtype=float)
            ax.fill_between(sizes, c[lo], c[hi], color=f"C{i}", alpha=0.2, linewidth=0)
            last = int(np.flatnonzero(meas)[-1]) if meas.any() else 0
            ax.plot(sizes[:last + 1], y[:last + 1], color=f"C{i}", label=CONDITIONS[cond])
            if not meas.all():
                ax.plot(sizes[last:], y[last:], color=f"C{i}", ls="--")
    first = next(iter(curves.values()))
    sizes = np.asarray(first["sizes"], dtype=float)
    ax1.plot(sizes, 1.0 / sizes, ls=":", color="grey", label="chance 1/N'")
    for ax, label in ((ax1, "rank-1 identification rate"), (ax2, "ALID (bits)")):
        ax.set_xscale("log")
        ax.axvline(first["n_speakers"], color="grey", lw=0.8)
        ax.set_xlabel("population size N' (grey line: the enrolled N)")
        ax.set_ylabel(label)
    ax1.set_yscale("log")
    ax1.legend(fontsize=7)
