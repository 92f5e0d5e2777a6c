"""Report section for 1-to-N linkage: LID (Sterns et al.), CMC / rank-k identification, closed-set
linkability."""

from __future__ import annotations

import math

import numpy as np

from ..analysis.readings import NEGATIVE_LID_READING
from ..metrics.linkage import LinkageAnalysis
from ..pipeline.analyses import analyse_one_to_n  # noqa: F401  (runs in the pipeline layer; re-exported)
from ..plots import CMCDisplay, LIDCCDFDisplay
from ..plots.displays import legend_label
from .document import Draw, Figure, Paragraph, Section, Table

__all__ = ["linkage_section", "analyse_one_to_n", "linkage_condition_arrays"]


def linkage_section(results: dict[str, LinkageAnalysis], *, section_id: str = "linkage",
                    title: str = "1-to-N linkage: LID and identification") -> Section:
    """Tables and plots of LID summaries, rank-k identification and closed-set linkability per condition.

    ``data`` = ``{conditions: {label: {lid, identification (without cmc), lid_values_bits}}}``; the CMC and the
    closed-set linkability follow from ``identification.gamma`` (:func:`linkage_condition_arrays`)."""
    names = list(results)
    sec = Section(section_id, title)
    sec.blocks.append(Paragraph(
        "Each probe is searched among all N enrolled speakers (" + _enrolled_text(results) + "). LID (local information disclosure, bits) = log2(N p_true): how many bits the search gains over "
        "a random guess; 0 = nothing, log2 N = certain identification. Scores are z-normalised per probe and "
        "calibrated by logistic regression with speaker-grouped cross-fitting (no speaker is calibrated on its "
        "own trials). A negative LID means the search made the true speaker less likely than a random guess for "
        "that probe. PDR = share of probes with LID > 0 (NDR = 1 - PDR); LID+ and LID- are the mean LID over "
        "those probes; LID_max the largest. 'mean slope w' is the fitted calibration slope (nats of LLR per "
        "z-normalised score unit, averaged over the cross-fitting folds); 'separable: regularised' says the "
        "calibration trials of some fold were perfectly separable, so the named ridge penalty was used (the ML "
        "slope is infinite there). Ranks use the fractional tie rule (a tie spreads over the tied ranks)."))
    rows, data = [], {}
    for n in names:
        r = results[n]
        s = r.lid.summary
        reg = "yes (ridge {:g})".format(r.lid.regularization) if r.lid.regularized.any() else "no"
        rows.append([n, s.N, math.log2(s.N), s.alid, 100 * s.pdr, s.lid_plus if s.lid_plus is not None else float("nan"),
                     s.lid_minus if s.lid_minus is not None else float("nan"), s.lid_max,
                     float(np.mean(r.lid.slope)), reg])
        # the CMC and the closed-set linkability are functions of gamma alone: recomputed by
        # linkage_condition_arrays, not stored (schema 2.3)
        data[n] = {"lid": r.lid.to_dict(),
                   "identification": {k: v for k, v in r.identification.to_dict().items() if k != "cmc"},
                   "lid_values_bits": r.lid.lid.tolist()}
    sec.blocks.append(Table(
        ["condition", "N", "log2 N (bits)", "ALID (bits)", "PDR (%)", "LID+ (bits)", "LID- (bits)", "LID_max (bits)",
         "mean slope w", "separable: regularised"], rows, caption="Local information disclosure"))
    negative = [n for n in names if results[n].lid.summary.alid < 0]
    if negative:
        sec.blocks.append(Paragraph(
            f"ALID below 0 ({', '.join(f'{n}: {results[n].lid.summary.alid:.3g} bits' for n in negative)}): "
            + NEGATIVE_LID_READING + ".", kind="note"))
    idrows = []
    for n in names:
        ident = results[n].identification
        idrows.append([n] + [v for k in sorted(ident.rates) for v in (100 * ident.rates[k], 100 * ident.chance[k])]
                      + [ident.mean_rank, (ident.n_speakers + 1) / 2])
    ks = sorted(results[names[0]].identification.rates)
    sec.blocks.append(Table(
        ["condition"] + [c for k in ks for c in (f"rank-{k} (%)", f"chance rank-{k} (%)")]
        + ["mean rank", "chance mean rank"], idrows, caption="Rank-k identification (fractional ties)"))
    sec.blocks.append(Figure("lid_ccdf", Draw(_draw_ccdf, results),
                             "Share of probes whose LID is at least x bits; dotted: log2 N."))
    sec.blocks.append(Figure("p_true", Draw(_draw_p_true, results),
                             "Posterior of the true speaker per probe (log scale); dotted: chance 1/N. Mass to "
                             "the right of the line is disclosure (LID > 0)."))
    sec.blocks.append(Figure("cmc", Draw(_draw_cmc, results),
                             "CMC: identification rate against rank; dotted: chance k/N."))
    sec.data = {"conditions": data}
    return sec


def linkage_condition_arrays(condition: dict) -> dict:
    """The arrays of one condition of a linkage section (report.json ``conditions.<type>``, references resolved)
    that are functions of its rank histogram ``identification.gamma`` and are not stored (schema 2.3):
    ``{"cmc": vpeval.ranks.cmc_from_gamma(gamma), "closed_set_linkability":
    vpeval.closed_set_linkability(gamma).to_dict()}``, equal to what the report stored up to schema 2.2.

    Raises
    ------
    InvalidScoresError
        ``gamma`` is not a rank histogram.
    """
    from ..metrics.identification import closed_set_linkability
    from ..ranks import cmc_from_gamma

    g = np.asarray(condition["identification"]["gamma"], dtype=float)
    return {"cmc": cmc_from_gamma(g).tolist(), "closed_set_linkability": closed_set_linkability(g).to_dict()}


def _enrolled_text(results: dict[str, LinkageAnalysis]) -> str:
    """Who the N enrolled speakers are, with every count taken from the results (per condition if they differ)."""
    counts = {}
    for n, r in results.items():
        N = int(r.identification.n_speakers)
        k = r.n_probe_speakers
        counts[n] = (f"N = {N}" if k is None else
                     f"N = {N}: the {k} evaluation speaker{'s' if k != 1 else ''} the probes come from and "
                     f"{N - k} distractor{'s' if N - k != 1 else ''} of the cohort")
    texts = set(counts.values())
    if len(texts) == 1:
        return texts.pop()
    return "; ".join(f"{n}: {t}" for n, t in counts.items())


def _draw_ccdf(fig, results):
    ax = fig.add_subplot(1, 1, 1)
    for n, r in results.items():
        LIDCCDFDisplay(r.lid.lid, r.lid.summary.N, label=n).plot(ax)
    ax.legend(fontsize=8)


def _draw_p_true(fig, results):
    ax = fig.add_subplot(1, 1, 1)
    n = next(iter(results.values())).lid.summary.N
    lo = min(float(np.min(r.lid.p_true[r.lid.p_true > 0], initial=1.0 / n)) for r in results.values())
    bins = np.logspace(np.log10(max(lo, 1e-12)), 0, 40)
    for i, (name, r) in enumerate(results.items()):
        ax.hist(np.clip(r.lid.p_true, bins[0], 1), bins=bins, histtype="step", color=f"C{i}",
                label=legend_label(name))
    ax.axvline(1 / n, ls=":", color="grey")
    ax.set_xscale("log")
    ax.set_xlabel("p_true (posterior of the true speaker)")
    ax.set_ylabel("probes")
    ax.legend(fontsize=8)


def _draw_cmc(fig, results):
    ax = fig.add_subplot(1, 1, 1)
    for n, r in results.items():
        CMCDisplay(r.identification.cmc, label=n).plot(ax)
    ax.legend(fontsize=8)
