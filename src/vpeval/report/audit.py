"""The audit report of an anonymizer from speaker embeddings: every trial type for every attacker.

This is what ``vpeval demo`` runs on the bundled example and what ``vpeval audit`` runs on user
embeddings. Each section is built from library calls only; the report adds no numbers of its own.
"""

from __future__ import annotations

from collections.abc import Callable

from ..io.embeddings import EmbeddingSet
from ..io.trials import Trials
from ..metrics.summary import verification_summary
from ..pipeline import TRIAL_TYPES, build_trials, one_to_n
from .document import Paragraph, Report, Section, Table
from .linkage import analyse_one_to_n, linkage_section
from .verification import verification_section

__all__ = ["audit_embeddings", "REPORT_TYPES"]

#: Trial types shown in the report; oaoa and oaoo contain exactly the pairs of oa and oo.
REPORT_TYPES = ("oo", "oa", "aa", "oaaa", "aaaa", "cross-profile")

#: oaaa interpolated EER above this is flagged as identity-space compression (anonymized voices of different
#: speakers scored as more alike than the original voices).
OAAA_COMPRESSION_FLAG = 0.60


def aggregate_over_attackers(data: dict[str, dict[str, dict]]) -> dict[str, dict]:
    """Mean and worst case over attackers of each trial type's EERs and eps_max.

    The worst case is the attacker most favourable to the privacy adversary: the lowest EER for attack types
    (ideal 50 %) and the highest EER for pseudo-identity consistency/distinctness (ideal 0 %: a high EER
    there means the anonymizer fails its own goal); eps_max is always the largest. Reference types (oo) report
    the best attacker (lowest EER), i.e. the attackers' capability.
    """
    out: dict[str, dict] = {}
    types = {t for by in data.values() for t in by}
    for t in [t for t in TRIAL_TYPES if t in types]:
        rows = [by[t] for by in data.values() if t in by]
        target = TRIAL_TYPES[t].target_eer
        eer = [r["eer_rocch"] for r in rows]
        interp = [r["eer_interp"] for r in rows]
        worst = max if target == 0.0 else min
        out[t] = {
            "target_eer": target,
            "n_attackers": len(rows),
            "eer_rocch_mean": sum(eer) / len(eer),
            "eer_rocch_worst": worst(eer),
            "eer_interp_mean": sum(interp) / len(interp),
            "eer_interp_worst": worst(interp),
            "eps_max_nats_worst": max(r["eps_max_nats"] for r in rows),
            "worst_attacker": [a for a, by in data.items() if t in by and by[t]["eer_rocch"] == worst(eer)][0],
        }
        if t == "oaaa":
            out[t]["compression_flag"] = max(interp) > OAAA_COMPRESSION_FLAG
    return out


def _summary_section(trials: dict[str, dict[str, Trials]]) -> Section:
    rows, data = [], {}
    for attacker, by_type in trials.items():
        data[attacker] = {}
        for name, t in by_type.items():
            s = {m.key: m.value for m in verification_summary(t.tar, t.non)}
            tt = TRIAL_TYPES[name]
            target = "reference" if tt.target_eer is None else f"{100 * tt.target_eer:g} %"
            rows.append([attacker, name, target, 100 * s["eer_rocch"], 100 * s["eer_interp"], s["min_cllr"],
                         s["d_ece"], s["eps_max"], s["zebra_tag"], tt.description])
            data[attacker][name] = {
                "target_eer": tt.target_eer, "eer_rocch": s["eer_rocch"], "eer_interp": s["eer_interp"],
                "min_cllr_bits": s["min_cllr"], "d_ece_bits": s["d_ece"], "eps_max_nats": s["eps_max"],
                "zebra_tag": s["zebra_tag"], "n_tar": s["n_tar"], "n_non": s["n_non"],
            }
    sec = Section("summary", "Summary: every trial type for every attacker")
    sec.blocks.append(Paragraph(
        "One row per attacker (speaker-embedding extractor) and trial type. EERs in percent; the target column "
        "says what an ideal anonymizer reaches (50 % for attacks, 0 % for pseudo-identity consistency and "
        "distinctness; 'reference' rows show what the attacker achieves on original speech). minCllr and D_ECE "
        "in bits; eps_max in nats (Laplace-smoothed PAV, privacy-ZEBRA). oaoa and oaoo contain exactly the "
        "pairs of oa and oo and are not repeated here. For oaaa read the interpolated EER: above 50 % means "
        "anonymized voices of different speakers are more alike than the originals (identity-space "
        "compression)."))
    sec.blocks.append(Table(
        ["attacker", "trial type", "ideal EER", "EER ROCCH (%)", "EER interp (%)", "minCllr (bits)",
         "D_ECE (bits)", "eps_max (nats)", "ZEBRA tag", "what it measures"], rows, fmt="{:.3g}"))
    agg = aggregate_over_attackers(data)
    arows = []
    for t, a in agg.items():
        ideal = "reference" if a["target_eer"] is None else f"{100 * a['target_eer']:g} %"
        arows.append([t, ideal, a["n_attackers"], 100 * a["eer_rocch_mean"], 100 * a["eer_rocch_worst"],
                      a["worst_attacker"], 100 * a["eer_interp_worst"], a["eps_max_nats_worst"]])
    sec.blocks.append(Table(
        ["trial type", "ideal EER", "attackers", "mean EER ROCCH (%)", "worst-case EER ROCCH (%)",
         "worst-case attacker", "worst-case EER interp (%)", "worst eps_max (nats)"], arows, fmt="{:.3g}",
        caption="Aggregated over attackers (worst case = most favourable to the adversary)"))
    flag = agg.get("oaaa", {}).get("compression_flag")
    if flag:
        sec.blocks.append(Paragraph(
            f"oaaa interpolated EER above {100 * OAAA_COMPRESSION_FLAG:g} % for at least one attacker: anonymized "
            "voices of different speakers are scored as more alike than the originals (identity-space "
            "compression).", kind="warning"))
    sec.data = {"attackers": data, "aggregate": agg, "oaaa_compression_threshold": OAAA_COMPRESSION_FLAG}
    return sec


def audit_embeddings(
    sets: dict[str, EmbeddingSet],
    *,
    title: str = "vpeval audit",
    types=REPORT_TYPES,
    progress: Callable[[str], None] | None = None,
    seed: int = 0,
) -> Report:
    """Build the audit report of embedding sets (one per attacker / extractor).

    Parameters
    ----------
    sets : dict attacker name -> EmbeddingSet
        Each with ``original`` and ``anonymized`` rows of the same utterances.
    types : iterable of str
        Trial types (names of :data:`vpeval.pipeline.TRIAL_TYPES`).
    progress : callable, optional
        Called with a short message before each step.
    seed : int
        Seed of the speaker-grouped cross-fitting folds of the LID calibration.

    Returns
    -------
    Report
    """
    say = progress or (lambda msg: None)
    report = Report(title, options={"trial_types": list(types), "attackers": list(sets), "seed": seed})
    trials: dict[str, dict[str, Trials]] = {}
    for attacker, es in sets.items():
        say(f"building trials for {attacker}")
        trials[attacker] = build_trials(es, types)
    report.add(_summary_section(trials))
    for attacker, by_type in trials.items():
        say(f"verification metrics for {attacker}")
        report.add(verification_section(by_type, section_id=f"verification-{attacker}",
                                        title=f"Verification and privacy-ZEBRA: attacker {attacker}"))
    for attacker, es in sets.items():
        say(f"1-to-N linkage for {attacker}")
        results = {f"{e}{p}": analyse_one_to_n(one_to_n(es, enroll=e, probe=p), seed=seed)
                   for e, p in (("o", "o"), ("o", "a"), ("a", "a"))}
        report.add(linkage_section(results, section_id=f"linkage-{attacker}",
                                   title=f"1-to-N linkage: attacker {attacker}"))
    return report
