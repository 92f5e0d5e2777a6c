"""The audit's summary section (:func:`summary_section`): every trial type for every attacker in tables with
their own ideal and reading, the readings that depend on the attacker (oaoo / oaaa per training condition, the
consistency goal of aaaa, aa-centroid and the cross-profile types), the aggregate over attackers and Beyond-EER's per-system table of its five trial
types (:func:`vpeval.analysis.audit.beyond_eer_table`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..analysis.audit import (ABOVE_HALF_FLAG, ATTACK_TYPES, BEYOND_EER_TYPES, aggregate_over_attackers,
                              beyond_eer_table, strongest_attackers)
from ..analysis.readings import (CONSISTENCY_GOAL_EER, EXACT_INTERVAL_NOTE, at_eps_max_ceiling,
                                 consistency_reading, exact_eer_interval, flagged, two_sided_by_condition,
                                 two_sided_reading)
from ..pipeline import TRIAL_TYPES
from ..pipeline.attackers import attacker_class
from ..pipeline.protocols.trials import CONSISTENCY_TYPES, PROFILE_TYPES, TWO_SIDED_TYPES
from ..stats import VERDICT_CHANCE, VERDICT_LEAKS
from .document import Paragraph, Section, Table
from .groups import interval_text
from .stats import TWO_SIDED_VERDICT
from .units import nats_to_bits

if TYPE_CHECKING:
    from ..pipeline.audit import SystemAudit

__all__ = ["summary_section", "system_readings"]

def _non_leak_verdict(trial_type: str) -> str | None:
    """What a difference from chance means where it is not an identity leak (None: it is a leak)."""
    if trial_type == "oo" or trial_type in CONSISTENCY_TYPES:
        return "differs from chance (expected)"
    if trial_type in TWO_SIDED_TYPES:
        return TWO_SIDED_VERDICT
    return None


def _eer_evidence(assessments, trial_type: str, m: dict | None = None) -> tuple[str, str]:
    """Speaker-bootstrap CI (percent) and chance verdict of the ROCCH-EER from a type's assessments; a
    zero-width interval is followed by the exact binomial interval on the trial counts of ``m`` (``n_tar``,
    ``n_non``; :func:`vpeval.analysis.readings.exact_eer_interval`)."""
    for a in assessments:
        if a.key == "eer_rocch":
            verdict = a.chance.verdict
            if verdict == VERDICT_LEAKS:
                verdict = _non_leak_verdict(trial_type) or verdict
            m = m or {}
            ci = interval_text(100 * a.boot.low, 100 * a.boot.high, 100 * a.boot.value, int(m.get("n_tar", 0)),
                               int(m.get("n_non", 0)))
            return ci, verdict
    return "", ""


def _assessment(res: "SystemAudit", group: str, key: str):
    return next((a for a in res.assessments.get(group, []) if a.key == key), None)


def _fused_calibration_rows(results: dict[str, "SystemAudit"]) -> list[list]:
    """One row per fused attacker (its scores are LLRs) and trial type: the trial type its weights were learnt
    on, actual Cllr and minCllr in bits, and a reading that flags weights applied to another trial type and an
    actual Cllr above 1 bit (worse than the uninformative LLR 0)."""
    multi = len(results) > 1
    rows = []
    for system, res in results.items():
        for attacker, by_type in res.type_metrics.items():
            for name, m in by_type.items():
                if "actual_cllr_bits" not in m:
                    continue
                readings = []
                if m["llr_learnt_on"] != name:
                    readings.append(f"weights learnt on {m['llr_learnt_on']} trials applied to {name}")
                readings.append("worse than no information (above 1 bit)" if m["actual_cllr_bits"] > 1 else
                                "calibrated as LLRs" if m["actual_cllr_bits"] - m["min_cllr_bits"] < 0.1 else
                                "informative, miscalibrated")
                rows.append(([system] if multi else []) + [attacker, name, m["llr_learnt_on"],
                                                           m["actual_cllr_bits"], m["min_cllr_bits"],
                                                           "; ".join(readings)])
    return rows


def _chance_verdict(res: "SystemAudit", attacker: str, trial_type: str, key: str = "eer_rocch") -> str:
    a = _assessment(res, f"{attacker} / {trial_type}", key)
    return "" if a is None else a.chance.verdict


def _two_sided_reading(res: "SystemAudit", attacker: str, trial_type: str, m: dict) -> str:
    """One reading of an oaoo / oaaa row, from its interpolated EER (flag) and that EER's two-sided chance test."""
    return two_sided_reading(trial_type, m["eer_interp"], _chance_verdict(res, attacker, trial_type, "eer_interp"))


def system_readings(res: "SystemAudit") -> dict:
    """The readings of one system that depend on the attacker, for the page and the terminal: oaoo and oaaa per
    training condition (:func:`vpeval.analysis.readings.two_sided_by_condition`) and, per consistency type (aaaa,
    aa-centroid, cross-profile types), each attacker's reading against :data:`CONSISTENCY_GOAL_EER`."""
    out: dict = {"consistency_goal_eer": CONSISTENCY_GOAL_EER}
    for t in TWO_SIDED_TYPES:
        rows = {a: by[t] for a, by in res.type_metrics.items() if t in by}
        if rows:
            out[t] = two_sided_by_condition(t, rows, {a: res.attackers[a].trained_on for a in rows},
                                            {a: _chance_verdict(res, a, t, "eer_interp") for a in rows})
    for t in CONSISTENCY_TYPES:
        got = {}
        for a, by in res.type_metrics.items():
            if t in by:
                ci = _assessment(res, f"{a} / {t}", "eer_rocch")
                high = None if ci is None else ci.boot.high
                if ci is not None and ci.boot.low == ci.boot.high and by[t].get("n_tar") and by[t].get("n_non"):
                    high = exact_eer_interval(ci.boot.value, int(by[t]["n_tar"]), int(by[t]["n_non"]))[1]
                got[a] = consistency_reading(by[t]["eer_rocch"], high, _chance_verdict(res, a, t))
        if got:
            out[t] = got
    return out


def summary_section(results: dict[str, "SystemAudit"]) -> Section:
    multi = len(results) > 1
    rows, ref_rows, cons_rows, oaaa_rows, arows, data, ceilings = [], [], [], [], [], {}, []
    for system, res in results.items():
        data[system] = {"attackers": res.type_metrics, "aggregate": aggregate_over_attackers(res.type_metrics),
                        "readings": system_readings(res)}
        for attacker, by_type in res.type_metrics.items():
            for name, m in by_type.items():
                tt = TRIAL_TYPES[name]
                lead = ([system] if multi else []) + [attacker, name]
                ci, verdict = _eer_evidence(res.assessments.get(f"{attacker} / {name}", []), name, m)
                if name in ATTACK_TYPES:  # the only rows with privacy colours and ZEBRA tags
                    eps = nats_to_bits(m["eps_max_nats"])
                    if at_eps_max_ceiling(m["eps_max_nats"], int(m.get("n_tar", 0)), int(m.get("n_non", 0))):
                        eps = f"{eps:.3g} (ceiling: at least)"
                        ceilings.append(f"{system} / {attacker} / {name}" if multi else f"{attacker} / {name}")
                    rows.append(lead + [
                        attacker_class(res.attackers[attacker].trained_on, name,
                                       res.attackers[attacker].adapted is not None), 100 * m["eer_rocch"], ci, verdict,
                        100 * m["eer_interp"], m["min_cllr_bits"], m["d_ece_bits"], eps, m["zebra_tag"]])
                elif name in TWO_SIDED_TYPES:
                    oaaa_rows.append(lead + [100 * m["eer_interp"], _two_sided_reading(res, attacker, name, m),
                                             100 * m["eer_rocch"], ci])
                elif tt.target_eer is None:  # reference: what the attacker achieves on original speech
                    ref_rows.append(lead + [100 * m["eer_rocch"], ci, 100 * m["eer_interp"], m["min_cllr_bits"]])
                else:  # pseudo-identity consistency / distinctness: ideal 0 %, beating chance is the goal
                    reading = data[system]["readings"][name][attacker]
                    cons_rows.append(lead + [100 * m["eer_rocch"], ci, reading, 100 * m["eer_interp"],
                                             tt.description])
        for t, a in data[system]["aggregate"].items():
            ideal = "reference" if a["target_eer"] is None else f"{100 * a['target_eer']:g} %"
            w, e = a["worst"], a["eps_max"]  # name and numbers from one attribution (analysis.attribution)
            nan = float("nan")
            arows.append(([system] if multi else []) + [t, ideal, a["n_attackers"], 100 * a["eer_rocch_mean"]] + (
                ["no finite EER", "", nan, nan] if w is None else
                [f"{w['direction']} {'interp' if w['by'] == 'eer_interp' else 'ROCCH'}-EER", w["attacker"],
                 100 * w["eer_rocch"], 100 * w["eer_interp"]]) + (
                ["", nan] if e is None else [e["attacker"], nats_to_bits(e["eps_max_nats"])]))
    for system, res in results.items():
        data[system]["target_eer"] = {t: TRIAL_TYPES[t].target_eer for t in TRIAL_TYPES}
        data[system]["strongest"] = strongest_attackers(res)
        data[system]["attacker_class"] = {
            a: {t: attacker_class(res.attackers[a].trained_on, t, res.attackers[a].adapted is not None) for t in by}
            for a, by in res.type_metrics.items()}
    sec = Section("summary", "Summary: every trial type for every attacker")
    for system in results:
        for t, st in data[system]["strongest"].items():
            weaker = st["cosine"] is not None and st["cosine"]["attacker"] != st["eer"]["attacker"]
            sec.blocks.append(Paragraph(("" if not multi else f"{system}: ") + st["sentence"],
                                        kind="warning" if weaker else "p"))
    sec.blocks.append(Paragraph(
        "One row per attacker (extractor / back-end / training condition, see Attackers) and trial type, in four "
        "tables with their own ideal and reading: attacks (oa, aa; the only rows with privacy colours and ZEBRA "
        "tags), the reference on original speech (oo), pseudo-identity consistency and distinctness (aaaa, "
        "aa-centroid; cross-profile and its same-source subset where the system was run with two or more profile "
        "keys) and Beyond-EER's attack resistance with other impostors (oaoo, oaaa). The "
        "attacker class is the VoicePrivacy name of that attacker on that trial type. EERs in percent; minCllr, D_ECE "
        "and eps_max in bits (eps_max: Laplace-smoothed PAV, privacy-ZEBRA). oaoa contains exactly the "
        "pairs of oa and is not repeated here. aaaa contains exactly the pairs of aa, so its numbers are "
        "the same, read against the opposite ideal: aa asks whether a lazy-informed attacker re-identifies "
        "speakers (ideal 50 %), aaaa whether the anonymizer keeps one consistent pseudo-voice per speaker "
        "(ideal 0 %). oaoo and oaaa keep oa's targets (Alice's original model against pseudo-Alice) and take "
        "their impostors from original speech (oaoo: Alice against Bob) or anonymized speech (oaaa: pseudo-Alice "
        "against pseudo-Bob); read their interpolated EER, ideal 50 %: above 50 % (flagged above "
        f"{100 * ABOVE_HALF_FLAG:g} %) a pseudo-voice sits further from its source than another real speaker "
        "does (oaoo) or pseudo-voices of different speakers sit closer to each other than to their sources "
        "(oaaa: identity-space compression); below 50 % pseudo-voices are linked to their sources. "
        "The CI is the speaker-level bootstrap interval and 'EER vs chance' the permutation-test verdict of the "
        "Uncertainty section (red: the attacker does better than chance, i.e. identity leaks); for the "
        "consistency types the same test is read the other way round (differing from chance is needed, and the goal is "
        f"an EER no higher than {100 * CONSISTENCY_GOAL_EER:g} % over its whole interval)."))
    lead = ["system"] if multi else []
    sec.blocks.append(Table(
        lead + ["attacker", "trial type", "attacker class", "EER ROCCH (%)", "95 % CI (%)", "EER vs chance",
                "EER interp (%)", "minCllr (bits)", "D_ECE (bits)", "eps_max (bits)", "ZEBRA tag"], rows,
        fmt="{:.3g}", cell_classes={VERDICT_LEAKS: "leak", VERDICT_CHANCE: "chance"},
        caption="Attacks (oa, aa): ideal EER 50 %, ideal disclosure 0; red: the attacker does better than chance "
                "(identity leaks), green: indistinguishable from chance"))
    if ref_rows:
        sec.blocks.append(Table(
            lead + ["attacker", "trial type", "EER ROCCH (%)", "95 % CI (%)", "EER interp (%)", "minCllr (bits)"],
            ref_rows, fmt="{:.3g}",
            caption="Reference (oo, original speech): what each attacker achieves without anonymization; the lower "
                    "the EER, the more capable the attacker (no ideal, no privacy reading)"))
    if cons_rows:
        sec.blocks.append(Table(
            lead + ["attacker", "trial type", "EER ROCCH (%)", "95 % CI (%)", "reading", "EER interp (%)",
                    "what it measures"], cons_rows, fmt="{:.3g}",
            cell_classes={f"goal met: EER at most {100 * CONSISTENCY_GOAL_EER:g} %": "ok",
                          "goal missed: not distinguishable from chance": "partial",
                          f"goal missed: EER above the {100 * CONSISTENCY_GOAL_EER:g} % goal (consistent beyond "
                          "chance only)": "partial"},  # "goal not shown: ..." (too few trials) stays uncoloured
            caption="Pseudo-identity consistency and distinctness (aaaa, aa-centroid, cross-profile types): not "
                    "attacks; ideal EER 0 %. "
                    f"Goal: an EER whose 95 % interval reaches no higher than {100 * CONSISTENCY_GOAL_EER:g} % (the "
                    "exact interval where the bootstrap's has zero width); beating chance alone does not meet it, "
                    "and an EER within the goal whose interval reaches above it is 'not shown' (too few trials); no "
                    "privacy colours or ZEBRA tags"))
    if oaaa_rows:
        sec.blocks.append(Table(
            lead + ["attacker", "trial type", "EER interp (%)", "reading", "EER ROCCH (%)", "95 % CI (%)"],
            oaaa_rows, fmt="{:.3g}",
            cell_classes={**{flagged(t): "partial" for t in TWO_SIDED_TYPES},
                          "pseudo-voices linked to their sources (the attack succeeds)": "leak"},
            caption=f"Attack resistance with other impostors (Beyond-EER's oaoo: original impostors, oaaa: "
                    f"anonymized impostors; targets those of oa): ideal interpolated EER 50 %, flagged above "
                    f"{100 * ABOVE_HALF_FLAG:g} %. The reading follows the interpolated EER; the ROCCH-EER never "
                    "exceeds 50 %, so it cannot show a departure upwards and is given for reference only"))
    cal_rows = _fused_calibration_rows(results)
    if cal_rows:
        sec.blocks.append(Table(
            lead + ["attacker", "trial type", "weights learnt on", "actual Cllr (bits)", "minCllr (bits)",
                    "reading"], cal_rows, fmt="{:.3g}",
            cell_classes={"worse than no information (above 1 bit)": "partial"},
            caption="Calibration of the fused LLRs on every trial type they are applied to: actual Cllr (the "
                    "LLRs as given) beside minCllr (after the best monotonic recalibration); their difference is "
                    "the calibration loss. An LLR of 0 on every trial has an actual Cllr of 1 bit; above it the "
                    "fused scores mislead as LLRs, although their ranking (EER, minCllr) may still be good. "
                    "Weights learnt on one trial type and applied to another are flagged"))
    sec.blocks.append(Table(
        lead + ["trial type", "ideal EER", "attackers", "mean EER ROCCH (%)", "worst case picked by",
                "worst-case attacker", "its EER ROCCH (%)", "its EER interp (%)", "largest eps_max: attacker",
                "its eps_max (bits)"], arows,
        fmt="{:.3g}",
        caption="Aggregated over attackers. The worst case is the attacker worst for privacy or for the "
                "anonymizer's goal, by a stated rule per trial type: the lowest ROCCH-EER on attacks (ideal 50 %) "
                "and references (the attackers' capability), the highest on consistency types (ideal 0 %), the "
                "interpolated EER farthest from 50 % on oaoo and oaaa; every number beside an attacker is that "
                "attacker's own"))
    beyond = beyond_eer_table({s: r.type_metrics for s, r in results.items()})
    b_rows = [[s] + [f"{100 * c['mean']:.1f} ± {100 * c['half_width']:.1f}" if (c := row.get(t)) else
                     "one run" if t in PROFILE_TYPES else "" for t in BEYOND_EER_TYPES] for s, row in beyond.items()]
    if any(any(c and c != "one run" for c in r[1:]) for r in b_rows):
        sec.blocks.append(Table(
            ["system"] + [f"{t} ({100 * TRIAL_TYPES[t].target_eer:g} %)" for t in BEYOND_EER_TYPES], b_rows,
            caption="Beyond-EER's table (arXiv 2609.18673, Table 4 layout): per system and trial type, the mean "
                    "interpolated EER over the attackers (%) ± the half-width of a 95 % bootstrap interval of that "
                    "mean (B = 10,000 draws of the attackers); ideal EER in the header. oaoa, oaoo, oaaa: attack "
                    "resistance (oaoa holds the pairs of oa); aaaa: pseudo-identity consistency; cross-profile: "
                    "distinctness across profile keys (a system anonymized with two or more keys; 'one run': it was "
                    "given one; each key's targets against the other keys' probes, the same source speaker "
                    "included; with more keys, each attacker's list pools them; its mean is over the voice attackers, the content "
                    "and prosody ones having no second run)"))
    for system in results:
        for t in TWO_SIDED_TYPES:
            for c in data[system]["readings"].get(t, []):
                warn = flagged(t) in c["readings"] or "pseudo-voices linked to their sources (the attack succeeds)" \
                    in c["readings"]
                sec.blocks.append(Paragraph(
                    ("" if not multi else f"{system}: ") + f"{t} (interpolated EER, ideal 50 %, flagged above "
                    f"{100 * ABOVE_HALF_FLAG:g} %), attackers {c['sentence']}. The reading depends on what the "
                    "attacker was trained on.", kind="warning" if warn else "p"))
    if ceilings:
        sec.blocks.append(Paragraph(
            f"eps_max at the estimator's ceiling for its trial counts ({', '.join(ceilings)}): perfect separation, "
            "the most these trials can show; read it as 'at least this much', not as a measurement.", kind="note"))
    if any("degenerate" in str(c) for r in rows + ref_rows + cons_rows + oaaa_rows for c in r):
        sec.blocks.append(Paragraph(EXACT_INTERVAL_NOTE, kind="note"))
    sec.data = {"systems": data, "above_half_flag": ABOVE_HALF_FLAG, "beyond_eer": beyond}
    return sec
