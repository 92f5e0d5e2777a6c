"""One screenful per audited system: the middle depth of the audit page (issue 27).

The audit page reads in three depths: the verdict block (first screen), then one section per system built here
(its strongest attackers per attack trial type, the worst case and the average over attackers, the per-gender
VoicePrivacy rows of the strongest attackers, one figure), then the appendix pages with every attacker x trial
type x metric (:func:`assign_pages`). Every number here is taken from the audit's own results
(``SystemAudit.type_metrics``, :func:`~vpeval.analysis.audit.strongest_attackers`, :func:`group_rows`), with the
attacker it belongs to; nothing is recomputed.
"""

from __future__ import annotations


from ..analysis.attribution import worst_over_attackers
from ..analysis.audit import strongest_attackers
from ..pipeline.attackers import attacker_class
from ..stats import VERDICT_CHANCE, VERDICT_LEAKS
from .document import Draw, Figure, Links, Paragraph, Section, Table, safe_filename
from .groups import group_rows, interval_text
from .units import nats_to_bits

__all__ = ["FIGURE_CHOICES", "overview_section", "appendix_page", "assign_pages", "draw_det_all"]

#: Values of ``--figures``: per-attacker figures for the strongest attackers only, or for every attacker.
FIGURE_CHOICES = ("strongest", "all")

#: Trial types of the overview's DET figure (one panel each).
DET_TYPES = ("oa", "aa")


def appendix_page(system: str | None, multi: bool) -> str:
    """The appendix page of ``system`` (``appendix-<system>``; the single page ``appendix`` when the report has
    one system or for sections about every system, ``system=None``)."""
    return f"appendix-{safe_filename(system)}" if multi and system is not None else "appendix"


#: The rates (%) labelled on the short y axes of :func:`draw_det_all` (the ticks stay at every DET rate).
_SHORT_DET_LABELS = {"0.01", "0.1", "1", "5", "20", "80", "95", "99", "99.9", "99.99"}


def draw_det_all(fig, scores: dict, featured: list[str]) -> None:
    """DET curves of every attacker of one system, one panel per trial type of :data:`DET_TYPES`; the featured
    (strongest) attackers thick and in the legend, the others thin grey (their curves are in the appendix).
    ``scores``: attacker -> trial type -> ``(tar, non)``."""
    from ..plots import DETDisplay
    from ..plots.displays import det_floor

    types = [t for t in DET_TYPES if any(t in by for by in scores.values())]
    for j, t in enumerate(types):
        ax = fig.add_subplot(1, len(types), 1 + j)
        shown = [(a, DETDisplay.from_scores(*by[t], label=a)) for a, by in sorted(scores.items()) if t in by]
        floor = min(det_floor(d.pfa, d.pmiss) for _, d in shown)
        for i, (a, d) in enumerate(a_d for a_d in shown if a_d[0] not in featured):
            before = len(ax.lines)
            d.plot(ax, floor=floor, color="0.75", lw=0.8)
            ax.lines[before].set_label("other attackers" if i == 0 else "_nolegend_")
        for k, (a, d) in enumerate(a_d for a_d in shown if a_d[0] in featured):
            d.plot(ax, floor=floor, color=f"C{k % 10}", lw=2.0)
        ax.set_title(f"DET, {t}", fontsize=9)
        ax.legend(fontsize=6, loc="upper right")
        # a short panel: label every other rate on the probit axis (all of them overlapped near 1 % and 99 %)
        ax.set_yticks(ax.get_yticks(), [lab.get_text() if lab.get_text() in _SHORT_DET_LABELS else ""
                                        for lab in ax.get_yticklabels()], fontsize=7)


def _ci(assessments, key: str, m: dict) -> str:
    """The bootstrap interval (percent) of ``key``, with the exact binomial interval on ``m``'s trial counts
    beside it when the bootstrap's has zero width (:func:`vpeval.report.groups.interval_text`)."""
    a = next((a for a in assessments if a.key == key), None)
    return "" if a is None else interval_text(100 * a.boot.low, 100 * a.boot.high, 100 * a.boot.value,
                                              int(m.get("n_tar", 0)), int(m.get("n_non", 0)), replace=True)


def _chance(assessments, key: str) -> str:
    a = next((a for a in assessments if a.key == key), None)
    return "" if a is None else a.chance.verdict


def overview_section(system: str, res, *, featured: list[str], multi: bool, dataset: str = "", split: str = "",
                     links: dict[str, str] | None = None) -> Section:
    """The main page's section of one audited system.

    Parameters
    ----------
    system : str
    res : SystemAudit
    featured : list of str
        The attackers whose own sections draw figures (:func:`vpeval.report.audit.featured_attackers`); each is
        linked from here.
    multi : bool
        The report has several systems (section ids are prefixed by the system's safe name).
    dataset, split : str
        The VoicePrivacy columns of the per-gender rows.
    links : dict label -> section id, optional
        Further sections of this system linked from the section (e.g. its appendix sections).

    Returns
    -------
    Section
        id ``<system>-overview`` (``overview`` with one system); ``data`` = ``{"strongest": {type: {"attacker",
        "eer_rocch", "eer_interp", "eps_max_nats", "eer_rocch_mean", "n_attackers", "eps_max_attacker",
        "eps_max_nats_largest"}}, "featured": [...]}``: the rows of the first table, each
        number with the attacker it belongs to (the full results are in the summary and groups sections).
    """
    sid = f"{safe_filename(system)}-" if multi else ""
    sec = Section(f"{sid}overview", f"{system}: strongest attackers, worst case and average, per gender"
                  if multi else "Strongest attackers, worst case and average, per gender")
    for note in res.notes:  # what could not be fielded (e.g. trained back-ends without training speakers)
        sec.blocks.append(Paragraph(note, kind="note"))
    strongest = strongest_attackers(res)
    rows, data, cosine = [], {}, []
    # attacker names and intervals stay on one line (a name broken at its hyphen doubles a row's height)
    nowrap = {a: "nw" for a in res.type_metrics}
    for t, st in strongest.items():
        a = st["eer"]["attacker"]
        m = res.type_metrics[a][t]
        ass = res.assessments.get(f"{a} / {t}", [])
        names = sorted(x for x, by in res.type_metrics.items() if t in by)
        mean = sum(res.type_metrics[x][t]["eer_rocch"] for x in names) / len(names)
        # the appendix's rule (analysis.attribution): the largest, ties to the first name
        w = worst_over_attackers({x: res.type_metrics[x][t] for x in names}, "eps_max_nats", t)
        eps = names[0] if w is None else w["attacker"]
        cls = attacker_class(res.attackers[a].trained_on, t, res.attackers[a].adapted is not None)
        rows.append([t, a, cls, 100 * m["eer_rocch"],
                     _ci(ass, "eer_rocch", m), _chance(ass, "eer_rocch"), nats_to_bits(m["eps_max_nats"]),
                     100 * mean, nats_to_bits(res.type_metrics[eps][t]["eps_max_nats"]), eps])
        data[t] = {"attacker": a, "eer_rocch": m["eer_rocch"], "eer_interp": m["eer_interp"],
                   "eps_max_nats": m["eps_max_nats"], "eer_rocch_mean": mean, "n_attackers": len(names),
                   "eps_max_attacker": eps, "eps_max_nats_largest": res.type_metrics[eps][t]["eps_max_nats"]}
        cos = st["cosine"]
        if cos is not None and cos["attacker"] != a:  # the one thing the table does not say
            e_cos = res.type_metrics[cos["attacker"]][t]["eer_rocch"]
            cosine.append(f"{t}: the lowest ROCCH-EER ({100 * m['eer_rocch']:.3g} %) is that of {a}; the plain "
                          f"cosine attacker {cos['attacker']} reads {100 * e_cos:.3g} %: reporting it alone would "
                          f"overstate privacy by {100 * (e_cos - m['eer_rocch']):.3g} EER points.")
    if cosine:  # one box for every trial type
        sec.blocks.append(Paragraph(" ".join(cosine), kind="warning"))
    if rows:
        counts = sorted({d["n_attackers"] for d in data.values()})
        sec.blocks.append(Table(
            ["trial type", "strongest attacker", "attacker class", "EER ROCCH (%)", "95 % CI (%)",
             "EER vs chance", "eps_max (bits)", "mean EER ROCCH (%)", "largest eps_max (bits)", "its attacker"],
            rows, fmt="{:.3g}", cell_classes={**nowrap, **{r[4]: "nw" for r in rows},
                                              VERDICT_LEAKS: "leak", VERDICT_CHANCE: "chance"},
            caption="Per attack type: strongest attacker (lowest ROCCH-EER) and its numbers; mean of the "
                    f"{', '.join(str(c) for c in counts)} attackers; largest eps_max (ideal: 50 %, 0 bits); "
                    "'exact': the bootstrap interval has zero width, the exact binomial one is shown"))
    vpc = [r for r in group_rows(system, res, dataset=dataset, split=split)
           if r["enrollment"] + r["trial"] in data and r["attacker"] == data[r["enrollment"] + r["trial"]]["attacker"]]
    if vpc:
        order = {"oa": 0, "aa": 1}
        vpc.sort(key=lambda r: (order.get(r["enrollment"] + r["trial"], 2), r["gender"] == "all", r["gender"]))

        def ci(r):
            return interval_text(r["EER interp 95% low (%)"], r["EER interp 95% high (%)"], r["EER interp (%)"],
                                 r["target trials"], r["non-target trials"], replace=True)
        sec.blocks.append(Table(
            ["trial type", "attacker", "gender", "enrolled speakers", "EER (VPC, closest point) (%)",
             "EER interp (%) [95 % CI]", "EER ROCCH (%)", "eps_max (bits)", "ALID (bits)"],
            [[r["enrollment"] + r["trial"], r["attacker"], r["gender"], r["enrolled speakers"], r["EER closest-point (%)"],
              f"{r['EER interp (%)']:.3g} {ci(r)}".strip(),
              r["ROCCH-EER (%)"], r["eps_max (bits)"], r["ALID (bits)"]] for r in vpc], fmt="{:.3g}",
            cell_classes={**nowrap, **{f"{r['EER interp (%)']:.3g} {ci(r)}".strip(): "nw"
                                       for r in vpc}},
            caption="Per gender (VoicePrivacy split: by the enrollment speaker; 'all' pools both) for the strongest "
                    "attackers ('exact' as above); every attacker: the groups section"))
    if any(t in by for by in res.trials.values() for t in DET_TYPES):
        sec.blocks.append(Figure(
            "det", Draw(draw_det_all, {a: {t: (tr.tar, tr.non) for t, tr in by.items() if t in DET_TYPES}
                                       for a, by in res.trials.items()}, list(featured)),
            f"DET curves on {' and '.join(DET_TYPES)} trials: the strongest attackers in colour, every other "
            "attacker in grey (their EERs: the summary in the appendix; their own figures: --figures all).",
            size=(10.0, 2.9)))
    sec.blocks.append(Links("Each strongest attacker's tables and figures:",
                            [(a, f"{sid}verification-{a}") for a in featured]))
    if links:
        sec.blocks.append(Links(f"Everything else about {system}:" if multi else "Everything else:",
                                list(links.items())))
    sec.data = {"strongest": data, "featured": list(featured)}
    return sec


def assign_pages(report, systems: list[str]) -> None:
    """Put every section of an audit report on its page: the verdict, comparisons, the per-system overviews and
    the utility sections stay on the main page; sections about every system go to ``appendix``, those of one
    system to that system's appendix page (:func:`appendix_page`). Titles of the pages go to
    ``report.page_titles``."""
    multi = len(systems) > 1
    main = {"verdict", "comparisons", "privacy-utility"}  # "comparisons-all": the appendix
    prefixes = {f"{safe_filename(s)}-": s for s in systems} if multi else {}
    for sec in report.sections:
        sid = sec.id
        system = next((s for p, s in prefixes.items() if sid.startswith(p)), None)
        local = sid[len(safe_filename(system)) + 1:] if system else sid
        if sid in main or local in ("overview", "utility", "pitch"):
            sec.page = ""
        else:
            sec.page = appendix_page(system, multi)
    report.page_titles["appendix"] = "appendix (every system)" if multi else "appendix"
    for s in systems if multi else []:
        report.page_titles[appendix_page(s, True)] = f"appendix ({s})"
