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
    sec.data = {"attackers": data}
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
