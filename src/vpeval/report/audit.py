"""The audit report of an anonymizer from speaker embeddings: every trial type for every attacker.

This is what ``vpeval demo`` runs on the bundled example and what ``vpeval audit`` runs on user embeddings. The
audit is data: the analyses run in :mod:`vpeval.pipeline.audit`, the decisions (verdicts, strongest attackers,
aggregates, comparisons) in :mod:`vpeval.analysis.audit`, which returns an
:class:`~vpeval.analysis.audit.AuditResult`; :func:`render_audit` lays it out and adds no numbers of its own.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import VpevalError
from ..io.embeddings import EmbeddingSet
from ..pipeline import TRIAL_TYPES
from ..pipeline.attackers import attacker_class
# the analyses run in the pipeline layer (re-exported here, where they were first defined)
from ..pipeline.audit import (  # noqa: F401
    GROUP_TYPES,
    REPORT_TYPES,
    SystemAudit,
    audit_system,
    comparison_inputs,
    field_attackers,
    run_audits,
)
from ..pipeline.audit import attackers_json  # noqa: F401  (re-exported, where it was first defined)
from ..pipeline.groups import DEFAULT_GROUP_BY
from ..analysis.audit import (  # noqa: F401  (re-exported, where they were first defined)
    ATTACK_TYPES, OAAA_COMPRESSION_FLAG, VERDICT_TYPES, AuditResult, aggregate_over_attackers, audit,
    strongest_attackers,
)
from ..analysis.verdict import DEFAULT_BUDGET_BITS
from ..backends import BACKENDS
from ..stats import VERDICT_CHANCE, VERDICT_LEAKS
from .channels import channel_blocks
from .document import Figure, Paragraph, Report, Section, Table, safe_filename
from .beyond import attributes_section, distinctiveness_section, embedding_section
from .groups import groups_section
from .compare import comparisons_section
from .disclosure import disclosure_section, rank_disclosure_section
from .linkage import linkage_section
from .utility import pitch_section, utility_section
from .stats import OAAA_VERDICT, speaker_profile_section, uncertainty_section
from .verification import verification_section
from .units import LN2, nats_to_bits
from .verdict import verdict_section
from .audit_views import _eer_vs_disclosure_section, _privacy_utility_section  # noqa: F401

__all__ = ["audit_embeddings", "audit_systems", "render_audit", "audit_system", "SystemAudit",
           "aggregate_over_attackers", "REPORT_TYPES",
           "GROUP_TYPES", "field_attackers", "run_audits",
           "scorecard_rows"]


def _non_leak_verdict(trial_type: str) -> str | None:
    """What a difference from chance means where it is not an identity leak (None: it is a leak)."""
    if trial_type in ("oo", "oaoo", "aaaa", "cross-profile"):
        return "differs from chance (expected)"
    if trial_type == "oaaa":
        return OAAA_VERDICT
    return None


def _eer_evidence(assessments, trial_type: str) -> tuple[str, str]:
    """Speaker-bootstrap CI (percent) and chance verdict of the ROCCH-EER from a type's assessments."""
    for a in assessments:
        if a.key == "eer_rocch":
            verdict = a.chance.verdict
            if verdict == VERDICT_LEAKS:
                verdict = _non_leak_verdict(trial_type) or verdict
            return f"[{100 * a.boot.low:.3g}, {100 * a.boot.high:.3g}]", verdict
    return "", ""


def featured_attackers(res: "SystemAudit", verdict: dict | None = None) -> list[str]:
    """The attackers of one system whose per-attacker figures the report draws: the strongest by ROCCH-EER on
    each attack trial type (:func:`strongest_attackers`) and the verdict's deciding attacker, sorted by name.

    Every other attacker keeps its tables (and every number in report.json); its figures are left out, and the
    summary's combined figure draws the DET and CMC curves of all attackers of the system on one page. Empty
    when no attack trial type was computed (then every attacker's figures are drawn).
    """
    names = {st["eer"]["attacker"] for st in strongest_attackers(res).values()}
    if verdict and verdict.get("strongest_attacker") in res.attackers:
        names.add(verdict["strongest_attacker"])
    return sorted(names)


def _without_figures(sec: Section, featured: list[str], system: str = "") -> Section:
    """``sec`` with its figures replaced by a note naming the attackers whose figures are drawn."""
    if any(isinstance(b, Figure) for b in sec.blocks):
        sec.blocks = [b for b in sec.blocks if not isinstance(b, Figure)]
        sec.blocks.append(Paragraph(
            f"Figures are drawn for the strongest attackers {'of ' + system + ' ' if system else ''}only "
            f"({', '.join(featured)}), and the summary draws the DET and CMC curves of every attacker together; "
            "this attacker's numbers are in the tables above and in report.json.", kind="note"))
    return sec


#: Trial types of the summary's combined figure (one column each).
COMBINED_TYPES = ("oa", "aa")


def _draw_all_attackers(fig, res: "SystemAudit", featured: list[str]) -> None:
    """DET (top row) and CMC (bottom row) of every attacker of one system, one column per trial type of
    :data:`COMBINED_TYPES`; the featured attackers are drawn thicker."""
    from ..plots import CMCDisplay, DETDisplay
    from ..plots.displays import det_floor

    types = [t for t in COMBINED_TYPES if any(t in by for by in res.trials.values())]
    names = list(res.trials)
    style = {a: {"color": f"C{i % 10}", "ls": ("-", "--", "-.", ":")[(i // 10) % 4],
                 "lw": 2.2 if a in featured else 1.0} for i, a in enumerate(names)}
    for j, t in enumerate(types):
        ax = fig.add_subplot(2, len(types), 1 + j)
        shown = [(a, DETDisplay.from_scores(by[t].tar, by[t].non, label=a)) for a, by in res.trials.items()
                 if t in by]
        floor = min(det_floor(d.pfa, d.pmiss) for _, d in shown)
        for a, d in shown:
            d.plot(ax, floor=floor, **style[a])
        ax.set_title(f"DET, {t}", fontsize=9)
        ax.legend(fontsize=6, loc="upper right")
        ax = fig.add_subplot(2, len(types), 1 + len(types) + j)
        for a, by_cond in res.linkage.items():
            link = by_cond.get(t)
            if link is not None and not isinstance(link, Exception):
                CMCDisplay(link.identification.cmc, label=a).plot(ax, **style[a])
        ax.set_title(f"CMC, {t} (dotted: chance)", fontsize=9)
        ax.legend(fontsize=6, loc="lower right")


def _assessment(res: "SystemAudit", group: str, key: str):
    return next((a for a in res.assessments.get(group, []) if a.key == key), None)


def scorecard_rows(verdicts: dict[str, dict]) -> list[list]:
    """One scorecard row per system from the ``scorecard`` of its verdict (:func:`vpeval.analysis.scorecard`)."""
    rows = []
    for system, v in verdicts.items():
        card = v["scorecard"]
        val = lambda k, scale=1.0: float("nan") if card.get(k) is None else scale * card[k]["value"]  # noqa: E731
        rows.append([system, v["verdict"], val("eer_rocch_oa", 100), val("eer_rocch_aa", 100),
                     val("eps_max_nats", 1 / LN2), val("alid_bits"), val("rank1", 100),
                     float("nan") if card["rank1_chance"] is None else 100 * card["rank1_chance"]])
    return rows


def attackers_section(results: dict[str, "SystemAudit"]) -> Section:
    """Who attacks: extractor, back-end, training condition and size, fusion members and weights."""
    multi = len(results) > 1
    sec = Section("attackers", "Attackers")
    sec.blocks.append(Paragraph(
        "Each attacker is a speaker-embedding extractor, a back-end and a training condition. 'none': a pretrained "
        "extractor scored by cosine similarity (on oa trials the VoicePrivacy ignorant attacker, on aa trials the "
        "lazy-informed one). 'original': a back-end (centred cosine, LDA, PLDA) trained on original speech of "
        "training speakers, who are disjoint from every evaluation speaker. 'anonymized': the same back-end "
        "trained on the training speakers' speech anonymized by this very system, the semi-informed attacker the "
        "VoicePrivacy Challenge ranks systems by. A fusion attacker adds its members' scores with weights learnt by "
        "prior-weighted logistic regression on trials among the training speakers (members cross-fitted over "
        "speaker folds), in its training condition only (oo or aa trials), so on oa trials it may read worse than "
        "its best member; its scores are LLRs in nats. Enrollment is speaker-level: the normalised mean of a "
        "speaker's normalised enrollment embeddings."))
    rows, fused = [], []
    for system, res in results.items():
        for name, att in res.attackers.items():
            d = att.describe()
            rows.append(([system] if multi else []) + [name, d["extractor"], d["backend"], d["trained_on"],
                                                       d["training_speakers"], ", ".join(d.get("members", []))])
            if att.members:
                w = d["fusion"]["weights"]
                folds = [fw for fw in d["fusion"].get("fold_weights", []) if fw is not None]
                nan = float("nan")
                fused += [([system] if multi else []) + [
                    name, m, w[m], min((fw[m] for fw in folds), default=nan),
                    max((fw[m] for fw in folds), default=nan)] for m in d["members"]]
                fused.append(([system] if multi else []) + [name, "(intercept)", d["fusion"]["intercept"], nan, nan])
        for note in res.notes + _asnorm_cap_notes(res):
            sec.blocks.append(Paragraph((f"{system}: " if multi else "") + note, kind="note"))
    lead = ["system"] if multi else []
    sec.blocks.append(Table(lead + ["attacker", "extractor", "back-end", "trained on", "training speakers",
                                    "fused members"], rows))
    if fused:
        sec.blocks.append(Table(lead + ["fusion", "member", "weight", "fold min", "fold max"], fused, fmt="{:.4g}",
                                caption="Fusion weights (LLR nats per unit of each member's score) and intercepts; "
                                        "fold min/max: the range of each weight refitted on each cross-fitting "
                                        "fold's held-out trials alone (blank: a fold's trials are separable). A "
                                        "wide range with a stable EER means nearly collinear members: read the "
                                        "weights as one solution among many, not as the members' importance"))
    sec.data = {"attackers": attackers_json(results), "notes": {system: list(res.notes)
                                                                for system, res in results.items()}}
    return sec


def _asnorm_cap_notes(res: "SystemAudit") -> list[str]:
    """One note per AS-norm attacker whose requested top-k exceeds its cohort (the cap applies)."""
    notes = []
    for name, att in res.attackers.items():
        st = att.describe().get("settings", {})
        req, used = st.get("asnorm_top_k_requested"), st.get("asnorm_top_k")
        if req is not None and used is not None and used < req:
            notes.append(f"{name}: AS-norm top-k {used}, not the requested {req}: the cohort has only {used} "
                         "training speakers, so every cohort score is used (plain symmetric S-norm over the "
                         "whole cohort)")
    return notes


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


def _oaaa_reading(res: "SystemAudit", attacker: str, m: dict) -> str:
    """One reading of an oaaa row, from its interpolated EER (flag) and that EER's two-sided chance test."""
    if m["eer_interp"] > OAAA_COMPRESSION_FLAG:
        return "identity-space compression (flagged)"
    if _chance_verdict(res, attacker, "oaaa", "eer_interp") == VERDICT_LEAKS:
        return ("compression (below the flag)" if m["eer_interp"] > 0.5
                else "anonymized voices spread further apart than the originals")
    return "no departure from 50 % detected"


def _summary_section(results: dict[str, "SystemAudit"]) -> Section:
    multi = len(results) > 1
    rows, ref_rows, cons_rows, oaaa_rows, arows, data, flags = [], [], [], [], [], {}, []
    for system, res in results.items():
        data[system] = {"attackers": res.type_metrics, "aggregate": aggregate_over_attackers(res.type_metrics)}
        for attacker, by_type in res.type_metrics.items():
            for name, m in by_type.items():
                tt = TRIAL_TYPES[name]
                lead = ([system] if multi else []) + [attacker, name]
                ci, verdict = _eer_evidence(res.assessments.get(f"{attacker} / {name}", []), name)
                if name in ATTACK_TYPES:  # the only rows with privacy colours and ZEBRA tags
                    rows.append(lead + [
                        attacker_class(res.attackers[attacker].trained_on, name), 100 * m["eer_rocch"], ci, verdict,
                        100 * m["eer_interp"], m["min_cllr_bits"], m["d_ece_bits"], nats_to_bits(m["eps_max_nats"]),
                        m["zebra_tag"]])
                elif name == "oaaa":
                    oaaa_rows.append(lead + [100 * m["eer_interp"], _oaaa_reading(res, attacker, m),
                                             100 * m["eer_rocch"], ci])
                elif tt.target_eer is None:  # reference: what the attacker achieves on original speech
                    ref_rows.append(lead + [100 * m["eer_rocch"], ci, 100 * m["eer_interp"], m["min_cllr_bits"]])
                else:  # pseudo-identity consistency / distinctness: ideal 0 %, beating chance is the goal
                    reading = {VERDICT_CHANCE: "not distinguishable from chance: goal missed"}.get(
                        _chance_verdict(res, attacker, name), "distinguishable: goal met")
                    cons_rows.append(lead + [100 * m["eer_rocch"], ci, reading, 100 * m["eer_interp"],
                                             tt.description])
        for t, a in data[system]["aggregate"].items():
            ideal = "reference" if a["target_eer"] is None else f"{100 * a['target_eer']:g} %"
            arows.append(([system] if multi else []) + [
                t, ideal, a["n_attackers"], 100 * a["eer_rocch_mean"], 100 * a["eer_rocch_worst"],
                a["worst_attacker"], 100 * a["eer_interp_worst"], nats_to_bits(a["eps_max_nats_worst"]),
                a["eps_max_attacker"]])
            if a.get("compression_flag"):
                flags += [f"{system} / {att}" if multi else att
                          for att, by in res.type_metrics.items()
                          if "oaaa" in by and by["oaaa"]["eer_interp"] > OAAA_COMPRESSION_FLAG]
    for system, res in results.items():
        data[system]["target_eer"] = {t: TRIAL_TYPES[t].target_eer for t in TRIAL_TYPES}
        data[system]["strongest"] = strongest_attackers(res)
        data[system]["attacker_class"] = {a: {t: attacker_class(res.attackers[a].trained_on, t) for t in by}
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
        "cross-profile) and the identity-space check (oaaa). The "
        "attacker class is the VoicePrivacy name of that attacker on that trial type. EERs in percent; minCllr, D_ECE "
        "and eps_max in bits (eps_max: Laplace-smoothed PAV, privacy-ZEBRA). oaoa and oaoo contain exactly the "
        "pairs of oa and oo and are not repeated here. aaaa contains exactly the pairs of aa, so its numbers are "
        "the same, read against the opposite ideal: aa asks whether a lazy-informed attacker re-identifies "
        "speakers (ideal 50 %), aaaa whether the anonymizer keeps one consistent pseudo-voice per speaker "
        "(ideal 0 %). oaaa is not an identity attack: it compares different-speaker pairs after and before "
        "anonymization; read its interpolated EER: well above 50 % (flagged above "
        f"{100 * OAAA_COMPRESSION_FLAG:g} %) means anonymized voices of different speakers are more alike than "
        "the originals (identity-space compression), well below 50 % that they are spread further apart. "
        "The CI is the speaker-level bootstrap interval and 'EER vs chance' the permutation-test verdict of the "
        "Uncertainty section (red: the attacker does better than chance, i.e. identity leaks); for aaaa and "
        "cross-profile the same test is read the other way round (differing from chance is the goal)."))
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
            cell_classes={"distinguishable: goal met": "ok", "not distinguishable from chance: goal missed": "partial"},
            caption="Pseudo-identity consistency and distinctness (aaaa, cross-profile): not attacks; ideal EER 0 %, "
                    "and differing from chance is the goal (no privacy colours or ZEBRA tags)"))
    if oaaa_rows:
        sec.blocks.append(Table(
            lead + ["attacker", "trial type", "EER interp (%)", "reading", "EER ROCCH (%)", "95 % CI (%)"],
            oaaa_rows, fmt="{:.3g}",
            cell_classes={"identity-space compression (flagged)": "partial"},
            caption=f"Identity-space check (oaaa, different-speaker pairs after vs before anonymization): not an "
                    f"attack; ideal interpolated EER 50 %, flagged above {100 * OAAA_COMPRESSION_FLAG:g} %. The "
                    "reading follows the interpolated EER; ROCCH-EER never exceeds 50 %, so it cannot show "
                    "compression and is given for reference only"))
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
        lead + ["trial type", "ideal EER", "attackers", "mean EER ROCCH (%)", "worst-case EER ROCCH (%)",
                "worst-case attacker", "its EER interp (%)", "worst eps_max (bits)", "eps_max attacker"], arows,
        fmt="{:.3g}",
        caption="Aggregated over attackers (worst case = most favourable to the adversary)"))
    if flags:
        sec.blocks.append(Paragraph(
            f"oaaa interpolated EER above {100 * OAAA_COMPRESSION_FLAG:g} % for attacker {', '.join(flags)}: "
            "anonymized voices of different speakers are scored as more alike than the originals (identity-space "
            "compression).", kind="warning"))
    sec.data = {"systems": data, "oaaa_compression_threshold": OAAA_COMPRESSION_FLAG}
    return sec


def _optional_section(build, results: dict, section_id: str, title: str) -> Section:
    """``build(results)`` over the attackers that could be analysed, with a note naming the others."""
    ok = {k: v for k, v in results.items() if not isinstance(v, Exception)}
    failed = {k: v for k, v in results.items() if isinstance(v, Exception)}
    sec = build(ok, section_id=section_id, title=title) if ok else Section(section_id, title)
    for name, exc in failed.items():
        sec.blocks.insert(0, Paragraph(f"Not computed for {name}: {exc}", kind="warning"))
        sec.data.setdefault("not_computed", {})[name] = str(exc)
    return sec


def audit_systems(
    systems: dict[str, dict[str, EmbeddingSet]],
    *,
    title: str = "vpeval audit",
    types=REPORT_TYPES,
    progress: Callable[[str], None] | None = None,
    seed: int = 0,
    metadata: dict | None = None,
    attributes=("sex",),
    n_boot: int = 200,
    n_perm: int = 200,
    utility: dict | None = None,
    pitch: dict | None = None,
    train: dict | None = None,
    backends=BACKENDS,
    asnorm: bool = False,
    fusion: bool = True,
    group_by: str | None = DEFAULT_GROUP_BY,
    dataset: str = "",
    split: str = "",
    compare: bool = True,
    client=None,
    verdict_perm: int | None = 999,
    budget_bits: float = DEFAULT_BUDGET_BITS,
    alpha: float = 0.05,
) -> Report:
    """Build the audit report of one or more anonymization systems, side by side.

    Parameters
    ----------
    systems : dict system name -> (dict attacker name -> EmbeddingSet)
        Each embedding set holds ``original`` and ``anonymized`` rows of the same utterances.
    types : iterable of str
        Trial types (names of :data:`vpeval.pipeline.TRIAL_TYPES`).
    progress : callable, optional
        Called with a short message before each step.
    seed : int
        Seed of every random step (LID cross-fitting folds, embedding-structure splits and permutations).
    metadata : dict system name -> pandas.DataFrame, optional
        Utterance metadata (``utterance_id, speaker_id, condition`` and attribute columns such as ``sex``),
        read with ``dtype=str``; enables the soft-biometric leakage section.
    attributes : tuple of str
        Metadata columns attacked as soft biometrics (those present are used).
    n_boot, n_perm : int
        Speaker-bootstrap replicates and chance-floor permutations per metric (:mod:`vpeval.stats`).
    utility : dict system name -> (dict condition -> WERResult), optional
        Word error rates (:func:`vpeval.metrics.utility.wer`) per condition (``original``, ``anonymized``);
        adds a utility section per system and the privacy-utility plot.
    pitch : dict system name -> PitchCorrelationResult, optional
        Pitch correlations rho_F0 (:func:`vpeval.metrics.utility.pitch_correlations`); adds a pitch section per
        system, after its WER section.
    train : dict system name -> (dict extractor -> EmbeddingSet), optional
        Attacker training speakers per system (original and anonymized rows, anonymized by that system),
        disjoint from every evaluation speaker. Without it only the untrained cosine attackers are fielded.
    backends : iterable of str
        Back-ends (:data:`vpeval.backends.BACKENDS`); trained ones are fielded once per training condition.
    asnorm : bool
        Also field every back-end with AS-norm (cohort: the training speakers).
    fusion : bool
        Field one linear fusion per training condition (of that condition's trained attackers).
    group_by : str or None
        Metadata column whose groups break down every oo/oa/aa row (default ``sex``; the ``groups`` section and
        its VoicePrivacy-style rows, :mod:`vpeval.pipeline.groups`); None for no breakdown.
    dataset, split : str
        Written in the ``dataset`` and ``split`` columns of the VoicePrivacy-style rows.
    compare : bool
        With two or more systems, the paired comparison (:mod:`vpeval.pipeline.compare`).
    client : distributed.Client, optional
        Compute the attackers' score matrices and the 1-to-N linkage on this Dask cluster; same report.
    verdict_perm : int or None
        Relabellings of the family-wise perfect-secrecy test behind the verdict (:mod:`vpeval.analysis`); None
        skips the verdict (the block then says so).
    budget_bits, alpha : float
        Disclosure budget (bits) and level of the verdict (:mod:`vpeval.analysis.verdict`).

    Returns
    -------
    Report
        ``report.extra["attackers"]`` describes every attacker (see :func:`attackers_json`). Sections: summary (per system x attacker x trial type, and aggregated over attackers), EER against
        disclosure, then per system: verification and privacy-ZEBRA and 1-to-N linkage per attacker,
        embedding structure, voice distinctiveness, soft-biometric leakage. Per-attacker figures are drawn for the
        strongest attackers of each system only (:func:`featured_attackers`); the summary draws the DET and CMC
        curves of every attacker in one figure per system.
    """
    for kind, names in [("system", list(systems))] + [(f"attacker of {s}", list(a)) for s, a in systems.items()]:
        safe = [safe_filename(n) for n in names]
        if len(set(safe)) != len(safe):
            raise VpevalError(f"{kind} names {names} are not distinct once made file-name safe "
                              f"({safe}); rename them")
    result = audit(systems, train=train, types=types, seed=seed, metadata=metadata, attributes=attributes,
                   n_boot=n_boot, n_perm=n_perm, backends=backends, asnorm=asnorm, fusion=fusion, group_by=group_by,
                   compare=compare, client=client, verdict_perm=verdict_perm, budget_bits=budget_bits, alpha=alpha,
                   utility=utility, pitch=pitch, progress=progress)
    return render_audit(result, title=title, dataset=dataset, split=split)


def render_audit(result: AuditResult, *, title: str = "vpeval audit", dataset: str = "", split: str = "") -> Report:
    """Lay out an :class:`~vpeval.analysis.audit.AuditResult` as the audit report (sections, tables, figures);
    ``dataset`` and ``split`` fill the VoicePrivacy-style rows of the groups section."""
    results, o = result.systems, result.options
    systems = o["systems"]
    seed, n_boot = o["seed"], o["n_boot"]
    report = Report(title, options={k: o[k] for k in ("trial_types", "seed", "n_boot", "n_perm", "systems",
                                                       "backends", "asnorm", "fusion")})
    data = result.to_dict()
    report.extra["attackers"] = data["attackers"]
    verdicts, undecided = result.verdicts, result.undecided
    report.options.update({k: o[k] for k in ("verdict_perm", "budget_bits", "alpha")})
    report.extra["verdicts"] = verdicts
    if undecided:
        report.extra["verdicts_not_decided"] = undecided
    vsec = report.add(verdict_section(verdicts, scorecard_rows(verdicts), {s: len(r.type_metrics) for s, r in
                                                                            results.items()}, undecided=undecided))
    if result.channels:  # content/prosody attackers: the voice-only verdict beside it, on the first screen
        report.extra["channel_verdicts"] = data["channel_verdicts"]
        vsec.blocks[1:1] = channel_blocks(result.channels)
    # the answers next: which system protects better (paired), and per group; then the long evidence
    if "comparisons" in data:
        report.extra["comparisons"] = data["comparisons"]
        report.add(comparisons_section(result.comparisons, result.comparison_notes, n_boot=n_boot, seed=seed))
    if o["group_by"] is not None:
        report.add(groups_section(results, dataset=dataset, split=split)).folded = True
    featured = {system: featured_attackers(res, verdicts.get(system)) for system, res in results.items()}
    summary = report.add(_summary_section(results))
    for system, res in results.items():
        if any(t in by for by in res.trials.values() for t in COMBINED_TYPES):
            pre_s = f"{system}: " if len(results) > 1 else ""
            summary.blocks.append(Figure(
                f"all_attackers_{system}", lambda fig, _r=res, _f=featured[system]: _draw_all_attackers(fig, _r, _f),
                f"{pre_s}DET curves (top) and CMC (bottom) of every attacker, on "
                f"{' and '.join(t for t in COMBINED_TYPES)} trials; thick lines: the strongest attackers "
                f"({', '.join(featured[system])}), whose own sections below also draw their figures.",
                size=(11.0, 10.0)))
    report.add(attackers_section(results)).folded = True
    report.add(_eer_vs_disclosure_section(results, seed=seed))
    anon = {f"{system} / {ext}": audit.results["anonymized"] for system, res in results.items()
            for ext, audit in res.attributes.items()
            if not isinstance(audit, Exception) and "anonymized" in getattr(audit, "results", {})}
    if len(anon) > 1:
        from .beyond import sbls_sensitivity_section

        report.add(sbls_sensitivity_section(anon)).folded = True
    utility, pitch = result.utility, result.pitch
    if utility:
        report.add(_privacy_utility_section(results, utility))
    pre_sys = (lambda s: f"{s} / ") if len(systems) > 1 else (lambda s: "")
    expected = {f"{pre_sys(n)}{k}": _non_leak_verdict(k.split(" / ")[-1].split(" ")[0])
                for n, r in results.items() for k in r.assessments}
    expected = {k: v for k, v in expected.items() if v is not None}
    report.add(uncertainty_section(
        {f"{pre_sys(n)}{k}": v for n, r in results.items() for k, v in r.assessments.items()},
        expected_to_differ=expected)).folded = True
    report.add(speaker_profile_section(
        {f"{pre_sys(n)}{k}": v for n, r in results.items() for k, v in r.profiles.items()})).folded = True
    multi = len(systems) > 1
    for system, res in results.items():
        pre = f"{system} / " if multi else ""
        sid = f"{safe_filename(system)}-" if multi else ""
        feat = featured[system]

        def per_attacker(sec, attacker, _feat=feat, _system=system if multi else ""):
            # figures only for the strongest attackers; the others keep their tables (issue 27: 299 PNGs)
            return sec if not _feat or attacker in _feat else _without_figures(sec, _feat, _system)
        for attacker, by_type in res.trials.items():
            report.add(per_attacker(verification_section(
                by_type, section_id=f"{sid}verification-{attacker}",
                title=f"Verification and privacy-ZEBRA: {pre}attacker {attacker}"), attacker)).folded = True
        for attacker, by_type in res.trials.items():
            if "oa" in by_type:
                t = by_type["oa"]
                report.add(per_attacker(disclosure_section(
                    t.tar, t.non, section_id=f"{sid}disclosure-{attacker}",
                    title=f"Worst-case disclosure per LLR estimator (oa): {pre}attacker {attacker}")[0], attacker)
                           ).folded = True
        for attacker, by_cond in res.linkage.items():
            report.add(per_attacker(_optional_section(linkage_section, by_cond, f"{sid}linkage-{attacker}",
                                                      f"1-to-N linkage: {pre}attacker {attacker}"), attacker)
                       ).folded = True
            ok = {k: v.identification.gamma for k, v in by_cond.items() if not isinstance(v, Exception)}
            if ok:
                probes = {k: v.identification.n_probes for k, v in by_cond.items() if not isinstance(v, Exception)}
                report.add(rank_disclosure_section(ok, n_probes=probes, section_id=f"{sid}rank-{attacker}",
                                                   title=f"Similarity-rank disclosure: {pre}attacker {attacker}")
                           ).folded = True
        report.add(_optional_section(embedding_section, res.structure, f"{sid}embedding",
                                     f"Embedding structure: {pre}original vs anonymized"))
        report.add(_optional_section(distinctiveness_section, res.distinctiveness, f"{sid}distinctiveness",
                                     f"Voice distinctiveness (DeID, G_VD): {pre}".rstrip(": /")))
        if system in utility:
            report.add(utility_section(utility[system], baseline="original" if "original" in utility[system] else None,
                                       section_id=f"{sid}utility", title=f"Utility: word error rate {pre}".rstrip(" /")))
        if pitch and system in pitch:
            report.add(pitch_section(pitch[system], section_id=f"{sid}pitch",
                                     title=f"Utility: pitch correlation {pre}".rstrip(" /")))
        if res.attributes:
            report.add(_optional_section(attributes_section, res.attributes, f"{sid}attributes",
                                         f"Soft-biometric leakage (SBLS): {pre}".rstrip(": /")))
    return report


def audit_embeddings(sets: dict[str, EmbeddingSet], **kwargs) -> Report:
    """:func:`audit_systems` of a single system (attacker name -> EmbeddingSet)."""
    return audit_systems({"system": sets}, **kwargs)
