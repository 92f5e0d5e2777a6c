"""The audit report's cross-system views (internal to :mod:`vpeval.report.audit`): the LID paper's table, overlaid
CCDF and EER-against-disclosure figure, and privacy against utility."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..analysis.attribution import worst_over_attackers
from ..analysis.readings import NEGATIVE_LID_READING
from ..errors import VpevalError
from ..plots.displays import legend_label
from .document import Draw, Figure, Paragraph, Section, Table

if TYPE_CHECKING:
    from ..pipeline.audit import SystemAudit


def _eer_vs_disclosure_section(results: dict[str, "SystemAudit"], condition: str = "oa", seed: int = 0) -> Section:
    """The LID paper's views across systems: the LID table (its Table 4: EER, ALID, PDR, NDR, LID+, LID-, LID_max
    per system and attacker, with the random-noise baseline at the same N), the overlaid LID CCDF (its Fig. 4)
    and EER against disclosure (its Fig. 5), one point per system/attacker."""
    import math

    from ..pipeline.analyses import lid_noise_baseline

    points, best, shapes = [], {}, {}
    for system, res in results.items():
        for attacker, by_type in res.type_metrics.items():
            if condition not in by_type or isinstance(res.linkage.get(attacker, {}).get(condition, ValueError()),
                                                      Exception):
                continue
            lk = res.linkage[attacker][condition]
            s = lk.lid.summary
            points.append({
                "system": system, "attacker": attacker, "condition": condition,
                "eer_rocch": by_type[condition]["eer_rocch"], "alid_bits": s.alid, "lid_max_bits": s.lid_max,
                "pdr": s.pdr, "ndr": s.ndr, "lid_plus_bits": s.lid_plus, "lid_minus_bits": s.lid_minus,
                "n_speakers": s.N, "n_probes": s.n,
                "eps_max_bits": by_type[condition]["eps_max_nats"] / math.log(2),
            })
            best.setdefault(system, {})[attacker] = lk
            m = res.matrices.get(attacker, {}).get(condition)
            if m is not None:
                shapes.setdefault((int(m.scores.shape[0]), int(m.scores.shape[1])), m)
    # per system the attacker with the highest ALID, by the attribution rule (ties: attacker name)
    best = {system: (w["attacker"], lks[w["attacker"]]) for system, lks in best.items()
            if (w := worst_over_attackers({a: lk.lid.summary.alid for a, lk in lks.items()}, "alid_bits",
                                          condition)) is not None}
    # the random-noise baseline: an attacker whose scores are noise, once per distinct (probes, N)
    baselines = {}
    for (n_probes, n_spk), m in shapes.items():
        try:
            baselines[(n_probes, n_spk)] = lid_noise_baseline(m.true_index, list(m.enrolled_speaker), seed=seed)
        except VpevalError as exc:  # too little data for the LID calibration: said, not fatal
            baselines[(n_probes, n_spk)] = exc
    sec = Section("eer-vs-disclosure", f"LID across systems and EER against disclosure ({condition})")
    sec.blocks.append(Paragraph(
        "One row per system and attacker (LID paper, Table 4): the ROCCH-EER of the verification trials beside the "
        "1-to-N local information disclosure (LID, bits) of the same attacker: ALID (mean), PDR / NDR (share of "
        "probes with LID > 0 / <= 0), LID+ / LID- (mean LID over those probes), LID_max; eps_max is the worst "
        "case of the verification trials. The random-noise rows are an attacker whose scores are noise "
        "(iid N(0, 1)) at the same N and probes, through the same chain: what chance alone shows. "
        "Systems with the same EER can differ widely in their worst cases (Sterns et al., LID paper, Fig. 5)."))

    def nan(v):
        return float("nan") if v is None else v

    rows = [[p["system"], p["attacker"], p["n_speakers"], 100 * p["eer_rocch"], p["alid_bits"], 100 * p["pdr"],
             100 * p["ndr"], nan(p["lid_plus_bits"]), nan(p["lid_minus_bits"]), p["lid_max_bits"],
             p["eps_max_bits"]] for p in points]
    base_data = []
    for (n_probes, n_spk), b in baselines.items():
        if isinstance(b, Exception):
            rows.append(["random-noise baseline", f"({n_probes} probes): {b}", n_spk] + [float("nan")] * 8)
            continue
        s = b.lid.summary
        rows.append(["random-noise baseline", f"noise scores, {n_probes} probes", n_spk, float("nan"), s.alid,
                     100 * s.pdr, 100 * s.ndr, nan(s.lid_plus), nan(s.lid_minus), s.lid_max, float("nan")])
        base_data.append({"n_probes": n_probes, "n_speakers": n_spk, "seed": seed, "alid_bits": s.alid,
                          "pdr": s.pdr, "ndr": s.ndr, "lid_plus_bits": s.lid_plus, "lid_minus_bits": s.lid_minus,
                          "lid_max_bits": s.lid_max})
    sec.blocks.append(Table(
        ["system", "attacker", "N", "EER ROCCH (%)", "ALID (bits)", "PDR (%)", "NDR (%)", "LID+ (bits)",
         "LID- (bits)", "LID_max (bits)", "eps_max (bits)"], rows, fmt="{:.3g}",
        caption="LID across systems, with the random-noise baseline at the same N"))
    negative = [p for p in points if p["alid_bits"] < 0]
    if negative:
        sec.blocks.append(Paragraph(
            "ALID below 0 (" + ", ".join(f"{p['system']} / {p['attacker']}: {p['alid_bits']:.3g} bits"
                                         for p in negative) + "): " + NEGATIVE_LID_READING + ".", kind="note"))
    sec.data = {"condition": condition, "points": points, "noise_baseline": base_data,
                "ccdf_attackers": {s: a for s, (a, _) in best.items()}}
    if not points:
        sec.blocks.append(Paragraph("No system/attacker has both an oa EER and a 1-to-N LID to plot.", kind="note"))
        return sec
    curves = [(f"{s} ({a})", lk.lid.lid, lk.lid.summary.N) for s, (a, lk) in best.items()]
    noise = [(f"random noise (N = {k[1]})", b.lid.lid, k[1]) for k, b in baselines.items()
             if not isinstance(b, Exception)]
    sec.blocks.append(Figure("lid_ccdf_systems", Draw(_draw_ccdf_systems, curves, noise),
                             "Share of probes whose LID is at least x bits (LID paper, Fig. 4): per system its "
                             "attacker with the highest ALID (named), and the random-noise baseline (grey, "
                             "dashed); dotted: log2 N.", size=(8.0, 4.5)))
    sec.blocks.append(Figure("points", Draw(_draw_eer_disclosure, points),
                             "EER (x) against disclosure in bits (y): circles ALID, up-triangles LID_max, "
                             "pluses LID+, down-triangles LID-, squares eps_max; one colour per system, one "
                             "vertical stroke per attacker (the table above names them).", size=(8.0, 4.5)))
    return sec


def _draw_ccdf_systems(fig, curves, noise):
    from ..plots import LIDCCDFDisplay

    ax = fig.add_subplot(1, 1, 1)
    for i, (label, lid, n) in enumerate(curves):
        LIDCCDFDisplay(lid, n, label=label).plot(ax, color=f"C{i % 10}")
    for label, lid, n in noise:
        LIDCCDFDisplay(lid, n, label=label).plot(ax, color="grey", ls="--")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)


_FIG5_MARKERS = (("alid_bits", "o", "ALID"), ("lid_max_bits", "^", "LID_max"), ("lid_plus_bits", "P", "LID+"),
                 ("lid_minus_bits", "v", "LID-"), ("eps_max_bits", "s", "eps_max"))


def _draw_eer_disclosure(fig, points):
    # one colour per system (every attacker of a system in its colour; the table names the attackers) and one
    # marker per disclosure measure: the legend stays short with any number of attackers
    from matplotlib.lines import Line2D

    ax = fig.add_subplot(1, 1, 1)
    systems = list(dict.fromkeys(p["system"] for p in points))
    colour = {s: f"C{i % 10}" for i, s in enumerate(systems)}
    for p in points:
        c = colour[p["system"]]
        x = 100 * p["eer_rocch"]
        ys = [(p.get(k), m) for k, m, _ in _FIG5_MARKERS if p.get(k) is not None]
        for y, m in ys:
            ax.plot([x], [y], m, color=c, alpha=0.8, ms=5)
        ax.plot([x, x], [min(y for y, _ in ys), max(y for y, _ in ys)], "-", color=c, lw=0.6, alpha=0.6)
    ax.axvline(50, ls=":", color="grey")
    ax.axhline(0, color="grey", lw=0.6)
    ax.set_xlim(0, 55)
    ax.set_xlabel("EER ROCCH (%) ; dotted: ideal 50 %")
    ax.set_ylabel("Disclosure (bits)")
    ax.grid(True, alpha=0.3)
    handles = [Line2D([], [], color=colour[s], lw=3, label=legend_label(s)) for s in systems]
    handles += [Line2D([], [], color="k", marker=m, ls="", label=n) for _, m, n in _FIG5_MARKERS]
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)


def _privacy_utility_section(results: dict[str, "SystemAudit"], utility: dict) -> Section:
    """One point per system and attacker: WER of the anonymized speech against the oa EER and ALID."""
    points = []
    for system, by_cond in utility.items():
        if "anonymized" not in by_cond or system not in results:
            continue
        res = results[system]
        for attacker, by_type in res.type_metrics.items():
            if "oa" not in by_type:
                continue
            lk = res.linkage.get(attacker, {}).get("oa")
            lk = None if isinstance(lk, Exception) else lk
            points.append({
                "system": system, "attacker": attacker, "wer_anonymized": by_cond["anonymized"].wer,
                "wer_original": by_cond["original"].wer if "original" in by_cond else None,
                "eer_rocch_oa": by_type["oa"]["eer_rocch"], "alid_oa_bits": None if lk is None else lk.lid.summary.alid,
            })
    sec = Section("privacy-utility", "Privacy against utility")
    sec.blocks.append(Paragraph(
        "Each point is one system and attacker: the word error rate of the recogniser on the anonymized speech "
        "(utility, lower is better) against the attacker's EER on oa trials (privacy, ideal 50 %) and ALID "
        "(bits disclosed by a 1-to-N search, ideal 0). A good anonymizer sits at low WER with EER near 50 % "
        "and ALID near 0."))
    sec.blocks.append(Table(["system", "attacker", "WER original (%)", "WER anonymized (%)", "EER oa ROCCH (%)",
                             "ALID oa (bits)"],
                            [[p["system"], p["attacker"],
                              float("nan") if p["wer_original"] is None else 100 * p["wer_original"],
                              100 * p["wer_anonymized"], 100 * p["eer_rocch_oa"],
                              float("nan") if p["alid_oa_bits"] is None else p["alid_oa_bits"]] for p in points],
                            fmt="{:.3g}"))
    if points:
        sec.blocks.append(Figure("points", Draw(_draw_privacy_utility, points),
                                 "WER of anonymized speech (x) against oa EER (left) and ALID (right)."))
    sec.data = {"points": points}
    return sec


def _draw_privacy_utility(fig, points):
    ax1, ax2 = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    for i, p in enumerate(points):
        c, lab = f"C{i % 10}", legend_label(f"{p['system']} / {p['attacker']}")
        ax1.plot([100 * p["wer_anonymized"]], [100 * p["eer_rocch_oa"]], "o", color=c, label=lab)
        if p["alid_oa_bits"] is not None:
            ax2.plot([100 * p["wer_anonymized"]], [p["alid_oa_bits"]], "o", color=c)
    ax1.axhline(50, ls=":", color="grey")
    ax2.axhline(0, ls=":", color="grey")
    ax1.set_xlabel("WER anonymized (%)")
    ax2.set_xlabel("WER anonymized (%)")
    ax1.set_ylabel("EER oa ROCCH (%); ideal 50")
    ax2.set_ylabel("ALID oa (bits); ideal 0")
    for ax in (ax1, ax2):
        ax.grid(True, alpha=0.3)
    ax1.legend(fontsize=7)
