"""Report section and VoicePrivacy-style table of results per speaker group (e.g. sex: the VPC f/m split).

The numbers come from :func:`vpeval.pipeline.group_breakdown` (groups) and from the audit's pooled results
(the ``all`` rows); this module only lays them out. The grouping rule is that module's: a trial belongs to the
group of its *enrollment* speaker.
"""

from __future__ import annotations

import csv
import io
import math

from ..analysis.readings import EXACT_INTERVAL_NOTE, NEGATIVE_LID_READING, exact_eer_interval
from .document import Paragraph, Section, Table

__all__ = ["VPC_COLUMNS", "GROUP_RULE", "group_rows", "groups_section", "score_groups_section", "vpc_csv_text",
           "group_entries"]

_LN2 = math.log(2.0)

#: Columns of the per-group CSV: first those of the VoicePrivacy results tables (their 'EER (%)' named by its
#: estimator, the scripts' closest point), then vpeval's own; units in the names (EERs in percent, disclosure in
#: bits), every EER named by its estimator.
VPC_COLUMNS = [
    "dataset", "split", "gender", "enrollment", "trial", "EER closest-point (%)",
    "system", "attacker", "attacker class", "enrolled speakers", "probe speakers", "target trials",
    "non-target trials", "EER interp (%)", "EER interp 95% low (%)", "EER interp 95% high (%)", "ROCCH-EER (%)", "ROCCH-EER 95% low (%)",
    "ROCCH-EER 95% high (%)", "minCllr (bits)", "D_ECE (bits)", "eps_max (bits)", "eps_max 95% low (bits)",
    "eps_max 95% high (bits)", "ALID (bits)", "ALID 95% low (bits)", "ALID 95% high (bits)",
    "clipped per-speaker mean EER (%)",
]

GROUP_RULE = (
    "A trial belongs to the group of its enrollment speaker (the model's speaker): target trials fall in their "
    "speaker's group, and a non-target trial of a female model against a male probe in the female group (the "
    "VoicePrivacy trial lists hold same-gender trials only, so their non-targets differ). Intervals: 95 % "
    "speaker-level percentile bootstrap inside the group (probe speakers resampled, same seed and replicates as "
    "the Uncertainty section). ALID: mean LID of the probes whose true speaker is in the group, calibration "
    "fitted on all probes. The 'all' rows are the pooled results of the other sections. 'EER closest-point (%)' "
    "is the closest-point EER of the VoicePrivacy scripts (their tables' 'EER (%)'; no interval); the "
    "interpolated step-curve EER (may exceed 50 %) with its interval and the ROCCH-EER are beside it by name; "
    "eps_max is the Laplace-smoothed "
    "PAV eps_max of privacy-ZEBRA, in bits (nats / ln 2). The 'all' row pools every trial of the oo/oa/aa "
    "type, both genders and the cross-gender non-targets included: the mixed-gender row beside the per-gender "
    "ones. 'Clipped per-speaker mean EER': each enrolled speaker's interpolated EER over the trials enrolled on "
    "it, clipped at 50 %, averaged with equal weight per speaker (speakers without target or non-target trials "
    "left out), so that a few far-above-chance speakers do not dominate."
)


def _cond(trial_type: str) -> tuple[str, str]:
    return trial_type[0], trial_type[1]


def _b(boot, scale=1.0):
    """(value, low, high) of a BootstrapResult (or ``None``) times ``scale``; NaN when absent."""
    nan = float("nan")
    if boot is None:
        return nan, nan, nan
    return scale * boot.value, scale * boot.low, scale * boot.high


def group_rows(system: str, res, *, dataset: str = "", split: str = "") -> list[dict]:
    """One dict per (attacker, trial type in oo/oa/aa, group or ``all``) of one audited system, keyed by
    :data:`VPC_COLUMNS` (numbers as floats in the units of the column names; NaN where not computed)."""
    from ..keys import sorted_codes
    from ..pipeline.attackers import attacker_class
    from ..pipeline.groups import pooled_eers

    def _n_distinct(a):
        return sorted_codes(a)[0].size

    rows = []
    for attacker, by_type in res.groups.items():
        for tname, groups in by_type.items():
            enr, tri = _cond(tname)
            cls = attacker_class(res.attackers[attacker].trained_on, tname,
                                 res.attackers[attacker].adapted is not None)
            pooled = {a.key: a.boot for a in res.assessments.get(f"{attacker} / {tname}", [])}
            link = {a.key: a.boot for a in res.assessments.get(f"{attacker} / {tname} 1-to-N", [])}
            m = res.type_metrics[attacker][tname]
            probes = res.probe_speakers.get(attacker, {}).get(tname)
            t = res.trials[attacker][tname]
            # computed with the audit (on its workers); a SystemAudit built without them: here
            all_clipped, all_closest = res.pooled_eers.get(attacker, {}).get(tname) or pooled_eers(t)
            entries = [("all", _n_distinct(t.enroll) if t.enroll is not None else 0,
                        0 if probes is None else _n_distinct(probes), int(m["n_tar"]), int(m["n_non"]), pooled,
                        link.get("alid"), all_clipped, all_closest)]
            entries += [(g.group, g.n_enroll_speakers, g.n_probe_speakers, g.n_tar, g.n_non, g.metrics, g.alid,
                         g.clipped_eer, g.closest_eer) for g in groups]
            for label, n_enr, n_probe, n_tar, n_non, ms, alid, clipped, closest in entries:
                eer = _b(ms.get("eer_interp"), 100)
                roc = _b(ms.get("eer_rocch"), 100)
                eps = _b(ms.get("eps_max"), 1 / _LN2)
                al = _b(alid)
                rows.append(dict(zip(VPC_COLUMNS, [
                    dataset, split, label, enr, tri, 100 * closest, system, attacker, cls, n_enr, n_probe, n_tar,
                    n_non, eer[0], eer[1], eer[2], roc[0], roc[1], roc[2], _b(ms.get("min_cllr"))[0], _b(ms.get("d_ece"))[0],
                    eps[0], eps[1], eps[2], al[0], al[1], al[2], 100 * clipped])))
    return rows


def interval_text(lo, hi, value: float | None = None, n_tar: int = 0, n_non: int = 0, *,
                  replace: bool = False) -> str:
    """``[lo, hi]``; a zero-width EER interval (percent ``value``) is followed by the exact binomial interval on
    its trial counts (:func:`vpeval.analysis.readings.exact_eer_interval`), or with ``replace`` replaced by it
    (``exact [a, b]``: for narrow tables whose caption says so)."""
    if math.isnan(lo):
        return ""
    text = f"[{lo:.3g}, {hi:.3g}]"
    if value is not None and lo == hi and n_tar >= 1 and n_non >= 1 and 0 <= value <= 100:
        elo, ehi = exact_eer_interval(value / 100, int(n_tar), int(n_non))
        exact = f"exact [{100 * elo:.3g}, {100 * ehi:.3g}]"
        text = exact if replace else f"{text} degenerate; {exact}"
    return text


def groups_section(results: dict, *, dataset: str = "", split: str = "") -> Section:
    """The folded per-group section of an audit: one row per system x attacker x trial type x group.

    ``results``: system name -> SystemAudit. ``data`` = ``{group_by: {system: column or null}, notes: {system:
    text}, rule, systems: {system: {attacker: {trial type: [GroupResult.to_dict()]}}}, vpc_columns, vpc_rows}``;
    ``vpc_rows`` are the :func:`group_rows` as lists in the order of ``vpc_columns``.
    """
    multi = len(results) > 1
    sec = Section("groups", "Results per speaker group (VoicePrivacy gender split)")
    by = sorted({r.group_by for r in results.values() if r.group_by})
    sec.blocks.append(Paragraph(
        f"Every oo, oa and aa row broken down by the speakers' {' / '.join(by) or 'group'}, beside the pooled "
        "('all') row. " + GROUP_RULE))
    table, vpc, notes, data = [], [], {}, {}
    for system, res in results.items():
        if res.group_note:
            notes[system] = res.group_note
            sec.blocks.append(Paragraph((f"{system}: " if multi else "") + res.group_note, kind="note"))
        data[system] = {a: {t: [g.to_dict() for g in gs] for t, gs in by_t.items()} for a, by_t in res.groups.items()}
        rows = group_rows(system, res, dataset=dataset, split=split)
        vpc += rows
        order = {"oa": 0, "aa": 1, "oo": 2}
        for r in sorted(rows, key=lambda r: (r["attacker"], order[r["enrollment"] + r["trial"]],
                                             r["gender"] != "all", r["gender"])):
            table.append(([system] if multi else []) + [
                r["attacker"], r["enrollment"] + r["trial"], r["gender"], r["enrolled speakers"],
                r["target trials"], r["non-target trials"], r["ROCCH-EER (%)"],
                interval_text(r["ROCCH-EER 95% low (%)"], r["ROCCH-EER 95% high (%)"], r["ROCCH-EER (%)"],
                    r["target trials"], r["non-target trials"]), r["EER interp (%)"],
                r["EER closest-point (%)"], r["clipped per-speaker mean EER (%)"], r["minCllr (bits)"],
                r["D_ECE (bits)"], r["eps_max (bits)"], r["ALID (bits)"],
                interval_text(r["ALID 95% low (bits)"], r["ALID 95% high (bits)"])])
    if table:
        sec.blocks.append(Table(
            (["system"] if multi else []) + [
                "attacker", "trial type", "group", "enrolled speakers", "target trials", "non-target trials",
                "EER ROCCH (%)", "95 % CI (%)", "EER interp (%)", "EER closest-point (VPC) (%)",
                "clipped per-speaker mean EER (%)", "minCllr (bits)", "D_ECE (bits)", "eps_max (bits)", "ALID (bits)",
                "ALID 95 % CI (bits)"],
            table, fmt="{:.3g}",
            caption="Per group: oa and aa are attacks (ideal EER 50 %, disclosure 0), oo the reference on original "
                    "speech; 'all' = every trial"))
        if any("degenerate" in str(c) for row in table for c in row):
            sec.blocks.append(Paragraph(EXACT_INTERVAL_NOTE, kind="note"))
        negative = [r for r in vpc if r["ALID (bits)"] < 0]
        if negative:
            sec.blocks.append(Paragraph(f"ALID below 0 in {len(negative)} row{'s' if len(negative) > 1 else ''} "
                                        f"(lowest {min(r['ALID (bits)'] for r in negative):.3g} bits): "
                                        + NEGATIVE_LID_READING + ".", kind="note"))
    elif not notes:
        sec.blocks.append(Paragraph("No speaker groups: the audit was given no metadata.", kind="note"))
    common, per_metric = _factor_bootstraps(data)
    sec.data = {"group_by": {s: r.group_by for s, r in results.items()}, "notes": notes, "rule": GROUP_RULE,
                "bootstrap_common": common, "bootstrap_metrics": per_metric,
                # one list per row in the order of vpc_columns (not a dict per row: the 28 column names
                # repeated in each of hundreds of rows were a third of the section)
                "systems": data, "vpc_columns": list(VPC_COLUMNS), "vpc_rows": [[r[c] for c in VPC_COLUMNS] for r in vpc]}
    return sec


def _bootstraps(data: dict):
    """Every (metric key, bootstrap dict) of the group entries of ``data`` (system -> attacker -> type -> list)."""
    for by_att in data.values():
        for by_type in by_att.values():
            for entries in by_type.values():
                for e in entries:
                    for key, b in (e.get("metrics") or {}).items():
                        yield key, b
                    if isinstance(e.get("alid"), dict):
                        yield "alid", e["alid"]


def _factor_bootstraps(data: dict) -> tuple[dict, dict]:
    """Store the fields repeated in every bootstrap result of the group entries once, in place: ``common`` those
    equal in all (level, method, replicates, seed), ``per_metric[key]`` those equal in all of one metric (key,
    name, unit, resampled units); :func:`group_entries` puts them back."""
    boots = list(_bootstraps(data))
    if not boots:
        return {}, {}

    def same(values):
        return all(type(v) is type(values[0]) and v == values[0] for v in values)  # NaN never: kept per entry

    fields = set.intersection(*(set(b) for _, b in boots)) - {"value", "ci_low", "ci_high"}
    common = {f: boots[0][1][f] for f in sorted(fields) if same([b[f] for _, b in boots])}
    per_metric = {}
    for key in dict.fromkeys(k for k, _ in boots):
        mine = [b for k, b in boots if k == key]
        fs = set.intersection(*(set(b) for b in mine)) - set(common) - {"value", "ci_low", "ci_high"}
        per_metric[key] = {f: mine[0][f] for f in sorted(fs) if same([b[f] for b in mine])}
    for key, b in boots:
        for f in list(common) + list(per_metric[key]):
            b.pop(f, None)
    return common, per_metric


def group_entries(data: dict) -> dict:
    """The group entries of a groups section's data (report.json, audits) with the fields stored once
    (``bootstrap_common``, ``bootstrap_metrics``) put back into every bootstrap result, as
    ``GroupResult.to_dict()`` gives them: ``{system: {attacker: {trial type: [entry]}}}``; ``data`` is not
    changed."""
    common, per_metric = data.get("bootstrap_common", {}), data.get("bootstrap_metrics", {})

    def full(key, b):
        return {**common, **per_metric.get(key, {}), **b}

    def entry(e):
        e = dict(e)
        if isinstance(e.get("metrics"), dict):
            e["metrics"] = {k: full(k, b) for k, b in e["metrics"].items()}
        if isinstance(e.get("alid"), dict):
            e["alid"] = full("alid", e["alid"])
        return e

    return {s: {a: {t: [entry(e) for e in es] for t, es in by_t.items()} for a, by_t in by_a.items()}
            for s, by_a in data["systems"].items()}


def score_groups_section(results: dict, *, source: str, seed: int, n_boot: int) -> Section:
    """Per-group rows of a score-file report (``vpeval report --groups``): ``results`` = input name -> list of
    GroupResult, the pooled ``all`` first. ``data`` = ``{source, rule, seed, n_boot, systems: {name:
    [GroupResult.to_dict()]}}``."""
    sec = Section("groups", "Results per speaker group")
    rule = (f"Groups from {source} (Kaldi spk2gender layout). A trial belongs to the group of its enrollment "
            "speaker (the first field of the trials); every enrollment speaker must have a group. Intervals: "
            f"95 % percentile bootstrap over the enrolled speakers of the group ({n_boot} replicates, seed {seed}; "
            "score files do not say the probe's speaker). eps_max in bits (nats / ln 2).")
    sec.blocks.append(Paragraph(rule))
    rows = []
    for name, groups in results.items():
        for g in groups:
            roc, eer, eps = _b(g.metrics.get("eer_rocch"), 100), _b(g.metrics.get("eer_interp"), 100), \
                _b(g.metrics.get("eps_max"), 1 / _LN2)
            rows.append([name, g.group, g.n_enroll_speakers, g.n_tar, g.n_non, roc[0], interval_text(roc[1], roc[2]), eer[0],
                         100 * g.clipped_eer, _b(g.metrics.get("min_cllr"))[0], _b(g.metrics.get("d_ece"))[0], eps[0], g.note or ""])
    sec.blocks.append(Table(["input", "group", "enrolled speakers", "target trials", "non-target trials",
                             "EER ROCCH (%)", "95 % CI (%)", "EER interp (%)", "clipped per-speaker mean EER (%)",
                             "minCllr (bits)", "D_ECE (bits)", "eps_max (bits)", "note"], rows, fmt="{:.3g}"))
    sec.data = {"source": source, "rule": rule, "seed": seed, "n_boot": n_boot,
                "systems": {n: [g.to_dict() for g in gs] for n, gs in results.items()}}
    return sec


def _fmt(v) -> str:
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:.6g}"
    return str(v)


def vpc_csv_text(rows: list) -> str:
    """The rows of :func:`group_rows` (dicts, or lists in the order of :data:`VPC_COLUMNS` as in the groups
    section's ``vpc_rows``) as CSV text (header :data:`VPC_COLUMNS`; empty cell = not computed)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(VPC_COLUMNS)
    for r in rows:
        w.writerow([_fmt(r[c]) for c in VPC_COLUMNS] if isinstance(r, dict) else [_fmt(v) for v in r])
    return buf.getvalue()
