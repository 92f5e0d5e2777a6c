"""Report section of one system's linkage against the population size and for repeated recordings
(:class:`vpeval.analysis.population.PopulationReading`)."""

from __future__ import annotations

import numpy as np

from ..analysis.population import CONDITIONS
from ..metrics.linkage.population import ASSUMPTIONS
from .document import Draw, Figure, Paragraph, Section, Table

__all__ = ["population_section"]


def population_section(reading, *, section_id: str = "population", system: str = "") -> Section:
    """The curves of the system's strongest 1-to-N attacker on original and anonymized speech (a figure of
    rank-1 and ALID against N', a table of the attack), and the reading against the budget (population size and
    combined recordings, whose numbers are in ``sec.data``).

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
        f"search (the highest ALID on anonymized probes, chosen on these same data: its curves lean high, and "
        f"their intervals do not account for the choice; the verdict may rest on another attacker, of verification "
        f"or of another channel); the population is that of the enrolled speakers "
        f"(N = {first.n_speakers:,}), subsampled for smaller N' and extrapolated beyond by a model: "
        + ASSUMPTIONS + " (docs/beyond.md). Intervals: bootstrap of the probes' speakers, "
        f"{100 * first.level:g} %."))
    for cond, c in reading.curves.items():
        k = c.check
        if k is None:
            text = (f"{CONDITIONS[cond]}: with {c.n_speakers} enrolled speakers the model cannot be checked (40 or "
                    "more needed): the sizes beyond rest on its assumptions alone.")
        else:
            verdict = {True: "within the model's own error", False: "more than the model's own error: the sizes "
                       "beyond are not to be relied on", None: "too few speakers in the quarter to judge the model "
                       "by: the sizes beyond rest on its assumptions alone"}[k.get("reliable")]
            text = (f"Check, {CONDITIONS[cond]}: fitted on a quarter of each probe's impostors ({k['n_fit']} of "
                    f"{c.n_speakers} speakers), the model misses the measured curves at N' = {k['sizes'][0]:,} to "
                    f"{k['sizes'][-1]:,} by at most {k['max_abs_rank1']:.3f} of rank-1 and "
                    f"{k['max_abs_alid_bits']:.3f} bits of ALID ({verdict}).")
        sec.blocks.append(Paragraph(text, kind="note" if k is not None and k.get("reliable") else "warning"))
    sec.blocks.append(Figure("population", Draw(_draw, {k: v.to_dict() for k, v in reading.curves.items()}),
                             "Rank-1 identification (left; dotted: chance 1/N') and ALID (right) against the "
                             "population size N', the attack (oa) with its interval; solid up to the enrolled N "
                             "(grey line: measured), dashed beyond it (the model).", size=(6.4, 2.5)))
    oa = reading.curves.get("oa")
    if oa is not None:
        rows = [[f"{size:,}", "measured" if oa.measured[j] else "model", _share(oa.rank1[j]),
                 f"[{_share(oa.rank1_low[j])}, {_share(oa.rank1_high[j])}]", _share(oa.chance[j]),
                 f"{oa.alid_bits[j]:.3g}", f"[{oa.alid_low[j]:.3g}, {oa.alid_high[j]:.3g}]",
                 f"{oa.lid_max_bits[j]:.3g}"]
                for j, size in enumerate(oa.sizes.tolist()) if size in (10, 100) or size >= oa.n_speakers]
        sec.blocks.append(Table(["N'", "", "rank-1 (%)", "interval", "chance (%)", "ALID (bits)", "interval",
                                 "LID_max (bits)"], rows,
                                caption=f"{CONDITIONS['oa']} against the population size (each probe weighs the "
                                        "same)"))
    sec.data = reading.to_dict()
    return sec


#: Legend labels of the conditions
_SHORT = {"oo": "original (oo)", "oa": "anonymized probes (oa)"}


def _share(p: float) -> str:
    """A probability in percent, tiny ones floored: 3 significant digits, '< 1e-06' below a millionth of one %."""
    v = 100.0 * float(p)
    return "0" if v == 0 else "< 1e-06" if v < 1e-6 else f"{v:.3g}"


def _draw(fig, curves: dict) -> None:
    ax1, ax2 = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    first = next(iter(curves.values()))
    sizes = np.asarray(first["sizes"], dtype=float)
    floor = 0.1 / sizes.max()  # a tenth of the smallest chance level: lower rates are all 'never'
    for i, (cond, c) in enumerate(curves.items()):
        sizes = np.asarray(c["sizes"], dtype=float)
        meas = np.asarray(c["measured"], dtype=bool)
        width = 2.6 if i == 0 else 1.2  # the first drawn thicker: where both conditions coincide both stay seen
        for ax, (est, lo, hi), clip in ((ax1, ("rank1", "rank1_low", "rank1_high"), floor),
                                        (ax2, ("alid_bits", "alid_low", "alid_high"), None)):
            y, ylo, yhi = (np.asarray(c[k], dtype=float) for k in (est, lo, hi))
            if clip is not None:
                y, ylo, yhi = np.maximum(y, clip), np.maximum(ylo, clip), np.maximum(yhi, clip)
            if cond == "oa":  # the attack's band; the original speech's line alone, for a lighter figure
                ax.fill_between(sizes, ylo, yhi, color=f"C{i}", alpha=0.15, linewidth=0)
            last = int(np.flatnonzero(meas)[-1]) if meas.any() else 0
            ax.plot(sizes[:last + 1], y[:last + 1], color=f"C{i}", lw=width, label=_SHORT[cond])
            if not meas.all():
                ax.plot(sizes[last:], y[last:], color=f"C{i}", lw=width, ls="--")
    sizes = np.asarray(first["sizes"], dtype=float)
    ax1.plot(sizes, 1.0 / sizes, ls=":", color="grey", label="chance 1/N'")
    for ax, label in ((ax1, "rank-1 identification rate"), (ax2, "ALID (bits)")):
        ax.set_xscale("log")
        ax.axvline(first["n_speakers"], color="grey", lw=0.8)
        ax.set_xlabel("population size N'")
        ax.set_ylabel(label)
    ax1.set_yscale("log")
    ax1.set_ylim(floor, 1.5)
    if any(min(c["rank1"]) < floor for c in curves.values()):  # a rate of 0 is drawn on the floor: say so
        ax1.annotate("floor: rate 0 (own speaker never first)", xy=(0.98, 0.035), xycoords="axes fraction",
                     ha="right", va="bottom", fontsize=6, color="grey")
    ax1.legend(fontsize=6)
