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
    ATTACK_TYPES, ABOVE_HALF_FLAG, VERDICT_TYPES, AuditResult, aggregate_over_attackers, audit,
    strongest_attackers,
)
from ..analysis.verdict import DEFAULT_BUDGET_BITS
from ..backends import BACKENDS
from .channels import channel_blocks
from .document import Draw, Figure, Paragraph, Report, Section, Table, safe_filename
from .beyond import attributes_section, distinctiveness_section, embedding_section
from .groups import groups_section
from .compare import comparisons_section
from .disclosure import disclosure_section, rank_disclosure_section
from .linkage import linkage_section
from .population import population_section
from .utility import pitch_section, utility_section
from .stats import speaker_profile_section, uncertainty_section
from .verification import verification_section
from .units import LN2
from .verdict import verdict_section
from .audit_views import _eer_vs_disclosure_section, _privacy_utility_section  # noqa: F401
from .audit_summary import _fused_calibration_rows, _non_leak_verdict, summary_section  # noqa: F401
from .overview import FIGURE_CHOICES, assign_pages, overview_section

__all__ = ["audit_embeddings", "audit_systems", "render_audit", "audit_system", "SystemAudit",
           "aggregate_over_attackers", "REPORT_TYPES",
           "GROUP_TYPES", "field_attackers", "run_audits",
           "scorecard_rows"]


def featured_attackers(res: "SystemAudit", verdict: dict | None = None) -> list[str]:
    """The attackers of one system whose per-attacker figures the report draws: the strongest by ROCCH-EER on
    each attack trial type (:func:`strongest_attackers`) and the worst case of the verdict's evidence
    (``strongest_attacker``), sorted by name. The attacker the verdict's rule names as deciding
    (``deciding_attacker``) keeps its tables; its figures are drawn when it is one of these (drawing them too
    took the demo's report folder over its 5 MB and added about 27 figures to the ladder demo).

    Every other attacker keeps its tables (and every number in report.json); its figures are left out, the main
    page draws the DET curves and the summary the CMC of all attackers of the system. Empty
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
            f"({', '.join(featured)}; every attacker's figures with --figures all); the main page draws the DET "
            "curves of every attacker and the summary their CMC; this attacker's numbers are in the tables above "
            "and in report.json.", kind="note"))
    return sec


#: Trial types of the summary's combined figure (one column each).
COMBINED_TYPES = ("oa", "aa")


def _draw_all_attackers(fig, names: list[str], cmcs: dict, featured: list[str]) -> None:
    """CMC of every attacker of one system, one panel per trial type of :data:`COMBINED_TYPES`; the featured
    attackers are drawn thicker. (Their DET curves are on the main page, :func:`vpeval.report.overview.draw_det_all`.)
    ``names``: every attacker (colours follow this order); ``cmcs``: attacker -> trial type -> CMC array."""
    from ..plots import CMCDisplay

    types = [t for t in COMBINED_TYPES if any(t in by for by in cmcs.values())]
    style = {a: {"color": f"C{i % 10}", "ls": ("-", "--", "-.", ":")[(i // 10) % 4],
                 "lw": 2.2 if a in featured else 1.0} for i, a in enumerate(names)}
    for j, t in enumerate(types):
        ax = fig.add_subplot(1, len(types), 1 + j)
        for a, by_cond in cmcs.items():
            if t in by_cond:
                CMCDisplay(by_cond[t], label=a).plot(ax, **style[a])
        ax.set_title(f"CMC, {t} (dotted: chance)", fontsize=9)
        ax.legend(fontsize=6, loc="lower right")


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
        "trained on the training speakers' speech anonymized by this very system: on aa trials the semi-informed "
        "attacker the VoicePrivacy Challenge ranks systems by; on oa trials no VoicePrivacy class is defined for it "
        "(semi-informed is an a-a class), so the tables name it descriptively. A fusion attacker adds its members' "
        "scores with weights learnt by prior-weighted logistic regression on trials among the training speakers "
        "(members cross-fitted over "
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
    delta: float | None = None,
    alpha: float = 0.05,
    vpc_lists=None,
    figures: str = "strongest",
    adapt: dict | None = None,
    jobs: int = 1,
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
    delta : float in (0, 1) or None
        The verdict's delta (None: ``1 / (2 S)``; :mod:`vpeval.analysis.profiles`).
    vpc_lists : vpeval.pipeline.vpc.VPCLists, optional
        Score the challenge's enrolls/trials lists instead of vpeval's split (:func:`vpeval.audit`).
    figures : {"strongest", "all"}
        Per-attacker figures for the strongest attackers of each system only (default; the others stay data in
        their tables and report.json), or for every attacker.
    adapt : dict system -> AdaptInputs, optional
        Field the extractor-adapted attacker and the saturation check (:mod:`vpeval.pipeline.adapted`).
    jobs : int or vpeval.pipeline.jobs.Jobs
        Worker processes for the independent analyses (:func:`vpeval.audit`); the report does not depend on it. A
        running ``Jobs`` of several workers also draws the figures while the report is laid out
        (:class:`vpeval.report.writer.FigureDrafts`; pass the same pool to :func:`vpeval.report.writer.render_report`).

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
                   delta=delta,
                   utility=utility, pitch=pitch, progress=progress, vpc_lists=vpc_lists, adapt=adapt, jobs=jobs)
    from ..pipeline.jobs import Jobs
    from .writer import FigureDrafts

    # with a running pool of several jobs, the figures start drawing on it while the report is laid out
    drafts = FigureDrafts(jobs) if isinstance(jobs, Jobs) and jobs.parallel else None
    return render_audit(result, title=title, dataset=dataset, split=split, figures=figures, drafts=drafts)


def _lists_sentence(lists: dict) -> str:
    """What the trials of an audit on the challenge's lists are (``options["vpc_lists"]``)."""
    return (f"Trials: exactly the VoicePrivacy lists' {lists['n_trials']} trials ({lists['n_targets']} target) of "
            f"{', '.join(lists['trial_lists'])}, enrolled from {lists['enrolls']} by the "
            f"{lists['enroll_rule']['name']!r} rule ({lists['enroll_rule']['description']}), for every attacker; "
            "oaaa, aa-centroid and the 1-to-N searches use the lists' enrollment and tested utterances.")


def render_audit(result: AuditResult, *, title: str = "vpeval audit", dataset: str = "", split: str = "",
                 figures: str = "strongest", drafts=None) -> Report:
    """Lay out an :class:`~vpeval.analysis.audit.AuditResult` as the audit report (sections, tables, figures);
    ``dataset`` and ``split`` fill the VoicePrivacy-style rows of the groups section.

    The report has three depths (issue 27): the main page (``report.html``) holds the verdict block, the paired
    comparison, one section per system (:func:`vpeval.report.overview.overview_section`) and utility; every other
    section (every attacker x trial type x metric) is on an appendix page (``appendix.html`` for what spans the
    systems, ``appendix-<system>.html`` per system with several systems), linked from the main page.
    ``figures``: ``"strongest"`` draws per-attacker figures for the strongest attackers only, ``"all"`` for
    every attacker. ``drafts``: set as the report's ``drafts`` (:class:`vpeval.report.writer.FigureDrafts`)
    before the first section is added."""
    if figures not in FIGURE_CHOICES:
        raise VpevalError(f"figures={figures!r}: expected one of {', '.join(FIGURE_CHOICES)}")
    results, o = result.systems, result.options
    systems = o["systems"]
    seed, n_boot = o["seed"], o["n_boot"]
    report = Report(title, options={k: o[k] for k in ("trial_types", "seed", "n_boot", "n_perm", "systems",
                                                       "backends", "asnorm", "fusion")}, drafts=drafts)
    data = result.to_dict()
    report.extra["attackers"] = data["attackers"]
    verdicts, undecided = result.verdicts, result.undecided
    report.options.update({k: o[k] for k in ("verdict_perm", "budget_bits", "alpha", "delta")})
    if o.get("vpc_lists"):
        report.options["vpc_lists"] = o["vpc_lists"]
    report.extra["verdicts"] = verdicts
    if undecided:
        report.extra["verdicts_not_decided"] = undecided
    vsec = report.add(verdict_section(verdicts, scorecard_rows(verdicts), {s: len(r.type_metrics) for s, r in
                                                                            results.items()}, undecided=undecided))
    readings = {s: r for s, r in result.population.items() if r is not None and not isinstance(r, Exception)}
    multi_v = len(verdicts) + len(undecided or {}) > 1
    for s, r in readings.items():  # in the system's folded numbers: the page must stay within 8 screens
        if not r.sentence():
            continue
        line = "In a larger population, and over several recordings: " + r.sentence()
        fold = next((b for b in vsec.blocks if isinstance(b, Paragraph) and b.summary == (
            f"{s}: the numbers behind it" if multi_v else "The numbers behind it")), None)
        if fold is not None:
            fold.text += " " + line
        else:
            at = 1 + max((i for i, b in enumerate(vsec.blocks) if isinstance(b, Paragraph) and (
                b.kind.startswith("verdict-") or b.summary)), default=0)
            vsec.blocks.insert(at, Paragraph(line, kind="note", summary=(f"{s}: " if multi_v else "")
                                             + "in a larger population, and over several recordings"))
    if result.channels:  # content/prosody attackers: the voice-only verdict beside it, after the verdict sentences
        report.extra["channel_verdicts"] = data["channel_verdicts"]
        # after the verdict table and every system's sentences (in words, then the folded numbers)
        at = 1 + max((i for i, b in enumerate(vsec.blocks) if isinstance(b, Paragraph) and (
            b.kind.startswith("verdict-") or b.summary)), default=0)
        vsec.blocks[at:at] = channel_blocks(result.channels)
    # the answers next: which system protects better (paired), and per group; then the long evidence
    if "comparisons" in data:
        report.extra["comparisons"] = data["comparisons"]
        # the main page: the verdicts' worst cases and the strongest attackers' EERs; every row in the appendix
        report.add(comparisons_section(result.comparisons, result.comparison_notes, n_boot=n_boot, seed=seed,
                                       metrics=("share_beyond", "eer_rocch"),
                                       more="the appendix's paired comparison, and report.json"))
        every = comparisons_section(result.comparisons, [], n_boot=n_boot, seed=seed)
        every.id, every.title, every.data = "comparisons-all", "Paired comparison: every metric", {}
        report.add(every)
    featured = {system: featured_attackers(res, verdicts.get(system)) for system, res in results.items()}
    multi = len(systems) > 1
    utility, pitch = result.utility, result.pitch
    for system, res in results.items():  # the middle depth: one screenful per system, utility beside it
        sid = f"{safe_filename(system)}-" if multi else ""
        more = {"every attacker and trial type (summary)": "summary", "per gender, every attacker": "groups",
                "embedding structure": f"{sid}embedding"}
        if res.attributes:
            more["soft-biometric leakage"] = f"{sid}attributes"
        report.add(overview_section(system, res, featured=featured[system], multi=multi, dataset=dataset,
                                    split=split, links=more if o["group_by"] is not None else
                                    {k: v for k, v in more.items() if v != "groups"}))
        if system in utility:
            report.add(utility_section(utility[system], baseline="original" if "original" in utility[system] else None,
                                       section_id=f"{sid}utility", title=f"Utility: word error rate {system if multi else ''}".rstrip()))
        if pitch and system in pitch:
            report.add(pitch_section(pitch[system], section_id=f"{sid}pitch",
                                     title=f"Utility: pitch correlation {system if multi else ''}".rstrip()))
    if o["group_by"] is not None:
        sec = report.add(groups_section(results, dataset=dataset, split=split))
        if o.get("vpc_lists"):
            sec.blocks.insert(1, Paragraph(_lists_sentence(o["vpc_lists"])))
    summary = report.add(summary_section(results))
    for system, res in results.items():
        cmcs = {a: {t: link.identification.cmc for t, link in by.items() if not isinstance(link, Exception)}
                for a, by in res.linkage.items()}
        if any(t in by for by in cmcs.values() for t in COMBINED_TYPES):
            pre_s = f"{system}: " if len(results) > 1 else ""
            thick = [a for a in featured[system] if cmcs.get(a)]  # channel attackers have no 1-to-N search
            summary.blocks.append(Figure(
                f"all_attackers_{system}", Draw(_draw_all_attackers, list(res.trials), cmcs, featured[system]),
                f"{pre_s}CMC of every attacker with a 1-to-N search (the voice channel), on "
                f"{' and '.join(t for t in COMBINED_TYPES)} trials; thick lines: the strongest attackers "
                f"({', '.join(thick) or 'none of them searches 1-to-N'}), whose own sections also draw their "
                "figures. The DET curves of every attacker are on the main page.", size=(11.0, 5.0)))
    report.add(attackers_section(results)).folded = True
    report.add(_eer_vs_disclosure_section(results, seed=seed))
    anon = {f"{system} / {ext}": audit.results["anonymized"] for system, res in results.items()
            for ext, audit in res.attributes.items()
            if not isinstance(audit, Exception) and "anonymized" in getattr(audit, "results", {})}
    if len(anon) > 1:
        from .beyond import sbls_sensitivity_section

        report.add(sbls_sensitivity_section(anon)).folded = True
    if utility:
        report.add(_privacy_utility_section(results, utility))
    pre_sys = (lambda s: f"{s} / ") if len(systems) > 1 else (lambda s: "")
    expected = {f"{pre_sys(n)}{k}": _non_leak_verdict(k.split(" / ")[-1].split(" ")[0])
                for n, r in results.items() for k in r.assessments}
    expected = {k: v for k, v in expected.items() if v is not None}
    report.add(uncertainty_section(
        {f"{pre_sys(n)}{k}": v for n, r in results.items() for k, v in r.assessments.items()},
        expected_to_differ=expected,
        trial_counts={f"{pre_sys(n)}{a} / {t}": (int(m["n_tar"]), int(m["n_non"])) for n, r in results.items()
                      for a, by in r.type_metrics.items() for t, m in by.items()
                      if m.get("n_tar", 0) >= 1 and m.get("n_non", 0) >= 1},
        plot_labels=None if figures == "all" else  # the strongest attackers' attacks
        {f"{pre_sys(n)}{a} / {t}" for n in results for a in featured[n] for t in ATTACK_TYPES},
        # the page shows the attacks (1-to-N included); references and consistency checks are in report.json
        table_labels={f"{pre_sys(n)}{k}" for n, r in results.items() for k in r.assessments
                      if k.split(" / ")[-1].split(" ")[0] in ATTACK_TYPES})).folded = True
    report.add(speaker_profile_section(
        {f"{pre_sys(n)}{k}": v for n, r in results.items() for k, v in r.profiles.items()},
        table_labels={f"{pre_sys(n)}{a} / oa" for n in results for a in featured[n]})).folded = True
    for system, res in results.items():
        pre = f"{system} / " if multi else ""
        sid = f"{safe_filename(system)}-" if multi else ""
        feat = featured[system]

        def per_attacker(sec, attacker, _feat=feat, _system=system if multi else ""):
            # figures only for the strongest attackers (linked from the main page) unless all are asked for;
            # the others keep their tables (issue 27: 299 PNGs)
            keep = figures == "all" or not _feat or attacker in _feat
            return sec if keep else _without_figures(sec, _feat, _system)
        for attacker, by_type in res.trials.items():
            report.add(per_attacker(verification_section(
                by_type, summaries=res.summaries.get(attacker), section_id=f"{sid}verification-{attacker}",
                title=f"Verification and privacy-ZEBRA: {pre}attacker {attacker}"), attacker)).folded = True
        for attacker, by_type in res.trials.items():
            if "oa" in by_type:
                t = by_type["oa"]
                report.add(per_attacker(disclosure_section(
                    t.tar, t.non, result=res.disclosure.get(attacker), section_id=f"{sid}disclosure-{attacker}",
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
        if result.population.get(system) is not None:
            report.add(population_section(result.population[system], section_id=f"{sid}population",
                                          system=system if multi else "")).folded = True
        report.add(_optional_section(embedding_section, res.structure, f"{sid}embedding",
                                     f"Embedding structure: {pre}original vs anonymized"))
        report.add(_optional_section(distinctiveness_section, res.distinctiveness, f"{sid}distinctiveness",
                                     f"Voice distinctiveness (DeID, G_VD): {pre}".rstrip(": /")))
        if res.attributes:
            report.add(_optional_section(attributes_section, res.attributes, f"{sid}attributes",
                                         f"Soft-biometric leakage (SBLS): {pre}".rstrip(": /")))
    assign_pages(report, list(systems))
    return report


def audit_embeddings(sets: dict[str, EmbeddingSet], **kwargs) -> Report:
    """:func:`audit_systems` of a single system (attacker name -> EmbeddingSet)."""
    return audit_systems({"system": sets}, **kwargs)
