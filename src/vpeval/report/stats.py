"""Report sections for uncertainty (bootstrap intervals, chance floors, verdicts) and per-speaker profiles.

Every number comes from :mod:`vpeval.stats`; these functions only lay them out.
"""

from __future__ import annotations

import math
import textwrap

from ..analysis.readings import EXACT_INTERVAL_NOTE, exact_eer_interval
from ..stats import VERDICT_CHANCE, VERDICT_LEAKS, Assessment, SpeakerProfile
from .document import Draw, Figure, Paragraph, Section, Table
from .units import LN2, display_unit, to_display
from ..plots.displays import legend_label

__all__ = ["uncertainty_section", "speaker_profile_section", "uncertainty_entries"]


def _ci_text(a: Assessment) -> str:
    k, _ = display_unit(a.boot.unit)
    return f"[{k * a.boot.low:.4g}, {k * a.boot.high:.4g}]"


def _floor_text(c) -> str:
    """The chance floor in display units (as :attr:`vpeval.stats.ChanceResult.floor_text`)."""
    k, _ = display_unit(c.unit)
    if c.leak == "higher":
        return f"{k * c.q95:.4g} (p95)"
    if c.leak == "lower":
        return f"{k * c.q05:.4g} (p5)"
    return f"[{k * c.q025:.4g}, {k * c.q975:.4g}]"


TWO_SIDED_VERDICT = "differs from 50 % beyond chance (see the reading in the summary)"


def uncertainty_section(
    assessments: dict[str, list[Assessment]],
    *,
    section_id: str = "uncertainty",
    title: str = "Uncertainty and chance floors",
    plot_metric: str | None = "eps_max",
    expected_to_differ=(),
    trial_counts: dict | None = None,
    plot_labels=None,
    table_labels=None,
) -> Section:
    """One table row per (group, metric): value, unit, 95 % CI, chance floor, p-value, verdict.

    Parameters
    ----------
    assessments : dict label -> list of Assessment
        E.g. ``{"resemblyzer-ge2e / oa": assess_trials(...), "resemblyzer-ge2e / oa (1-to-N)":
        assess_one_to_n(...)}``; labels are shown as given (the writer escapes them).
    section_id, title : str
    plot_metric : str or None
        Key of a metric to draw as a small interval plot (value, CI and chance floor per group); None for
        no plot, and no plot either when no group has that metric.
    expected_to_differ : dict label -> str, or collection of str
        Labels whose difference from chance is not a privacy leak, with the verdict text to show instead of
        "beats chance" (a plain collection uses "differs from chance (expected)").
    trial_counts : dict label -> (n_tar, n_non), optional
        Target and non-target trial counts of a label's verification trials: an EER row whose bootstrap interval
        has zero width then also shows the exact interval (:func:`vpeval.analysis.readings.exact_eer_interval`).
    plot_labels : collection of str, optional
        The labels drawn in the plot (default: every label); ``data`` keeps every label.
    table_labels : collection of str, optional
        The labels shown in the table (default: every label); a note counts the others, whose numbers are in
        ``data`` (report.json).

    Returns
    -------
    Section
        ``data["groups"][label][metric key] = {"bootstrap": ..., "chance": ...}`` (see
        :meth:`vpeval.stats.BootstrapResult.to_dict` and :meth:`vpeval.stats.ChanceResult.to_dict`).
    """
    sec = Section(section_id, title)
    boots = [a.boot for v in assessments.values() for a in v]
    chances = [a.chance for v in assessments.values() for a in v]
    n_boot = sorted({b.n_boot for b in boots})
    n_perm = sorted({c.n_perm for c in chances})
    seeds = sorted({b.seed for b in boots} | {c.seed for c in chances})
    levels = sorted({b.level for b in boots})
    units = sorted({b.resampled for b in boots})
    withins = sorted({c.within for c in chances})
    alphas = sorted({c.alpha for c in chances})

    def join(xs):
        return ", ".join(str(x) for x in xs) if xs else "-"

    sec.blocks.append(Paragraph(
        "Values, intervals and floors in percent (EERs, rank-1) or bits (minCllr, D_ECE, eps_max, ALID, LID_max). "
        f"Confidence intervals: speaker-level percentile bootstrap ({join(n_boot)} replicates, seed "
        f"{join(seeds)}, level {join(levels)}, resampled units: {join(units)}): the speakers of the probes are drawn "
        "with replacement and all their trials enter once per draw; the enrolled models are held fixed. Chance "
        "floor: "
        f"the same metric under perfect secrecy, by permuting the target labels ({join(n_perm)} permutations; "
        f"within: {join(withins)}; 'test' = inside each probe utterance, 'probe row' = a random true speaker per "
        "1-to-N probe, 'all' = over all trials). The floor is the 95th percentile of that null distribution for "
        "metrics where higher values disclose more (D_ECE, eps_max, ALID, LID_max, rank-1) and the 5th percentile "
        "where lower values disclose more (EER, minCllr of an attack); two-sided rows show the central 95 % of the "
        f"null. p = (1 + #null at least as extreme) / (1 + permutations); the verdict is 'beats chance' when p <= "
        f"{join(alphas)}, else 'indistinguishable from chance'. Where differing from chance is the goal or is "
        "not an identity leak (original-speech references oo, pseudo-identity consistency aaaa and distinctness "
        "aa-centroid; and oaoo and oaaa, ideal 50 %, where both directions are departures), the verdict "
        "reads 'differs from chance' or 'differs from 50 %' with what that means instead of 'beats chance'. A zero-width interval of an "
        "EER is followed by an exact Clopper-Pearson interval on the label's trial counts (" + EXACT_INTERVAL_NOTE[
            EXACT_INTERVAL_NOTE.index("Bonferroni"):].rstrip(".") + "). Intervals of extremes (eps_max, "
        "LID_max) and of values at a bound (e.g. EER 0) are degenerate by nature; for them the chance floor is "
        "the stronger evidence. The smallest reachable p is "
        f"{join([f'{1 / (1 + n):.3g}' for n in n_perm])}."))
    rows, data = [], {}
    for label, items in assessments.items():
        data[label] = {}
        for a in items:
            c = a.chance
            verdict = c.verdict
            if label in expected_to_differ and verdict == VERDICT_LEAKS:
                verdict = (expected_to_differ[label] if isinstance(expected_to_differ, dict)
                           else "differs from chance (expected)")
            data[label][a.key] = a.to_dict()
            if table_labels is not None and label not in table_labels:
                continue
            value, unit = to_display(a.boot.value, a.boot.unit)
            ci = _ci_text(a)
            counts = (trial_counts or {}).get(label)
            if counts and a.key.startswith("eer") and a.boot.low == a.boot.high and 0 <= a.boot.value <= 1:
                lo, hi = exact_eer_interval(a.boot.value, *counts)
                ci += f" degenerate; exact [{100 * lo:.4g}, {100 * hi:.4g}]"
            rows.append([label, a.boot.name, unit, value, ci, _floor_text(c), c.p_value,
                         c.p_value_floor, verdict])
    level = join([f"{100 * x:g} %" for x in levels])
    sec.blocks.append(Table(
        ["system / condition", "metric", "unit", "value", f"{level} CI", "chance floor", "p-value",
         "smallest reachable p", "verdict"],
        rows, caption="Every headline number with its speaker-level interval and its chance floor",
        cell_classes={VERDICT_LEAKS: "leak", VERDICT_CHANCE: "chance", "differs from chance (expected)": "ok",
                      TWO_SIDED_VERDICT: "partial"}))
    hidden = [label for label in assessments if table_labels is not None and label not in table_labels]
    if hidden:
        sec.blocks.append(Paragraph(
            f"{len(hidden)} further groups (references, pseudo-identity checks and other trial types) are in "
            "report.json only (this section's data), with the same fields.", kind="note"))
    if plot_metric is not None:
        pts = [(label, a) for label, items in assessments.items() for a in items if a.key == plot_metric
               and (plot_labels is None or label in plot_labels)]
        if pts:
            name, unit = pts[0][1].boot.name, display_unit(pts[0][1].boot.unit)[1]
            sec.blocks.append(Figure(
                plot_metric, Draw(_draw_intervals, pts, name, unit),
                f"{name}: value (dot) with its {level} speaker-bootstrap interval (bar) and the chance floor "
                "(grey tick: the value a perfectly private system stays within 95 % of the time).",
                size=(6.0, 0.5 + 0.38 * len(pts))))
    common, metrics = _factor(data)
    sec.data = {
        "groups": data, "common": common, "metrics": metrics,
        "n_boot": n_boot, "n_perm": n_perm, "seeds": seeds, "level": levels, "alpha": alphas,
        "interval": "percentile (order statistics), speaker-level bootstrap",
    }
    return sec


_PARTS = ("bootstrap", "chance")


def _same(values) -> bool:
    first = values[0]
    return all(type(v) is type(first) and v == first for v in values)  # NaN is never equal: never factored


def _factor(data: dict) -> tuple[dict, dict]:
    """Factor the fields repeated in every entry of ``data[label][key] = {"bootstrap": {...}, "chance": {...}}``
    out of the entries, in place: ``common[part]`` holds the fields equal in every entry (replicates, seed,
    level, method...), ``metrics[key][part]`` those equal in every entry of one metric (its key, name, unit, the
    direction of its chance test); each entry keeps the rest. :func:`uncertainty_entries` puts them back."""
    entries = [(key, d) for by in data.values() for key, d in by.items()]
    for _, d in entries:
        _drop_derived_chance(d)
    common: dict = {part: {} for part in _PARTS}
    metrics: dict = {}
    if not entries:
        return common, metrics
    for part in _PARTS:
        fields = set.intersection(*(set(d[part]) for _, d in entries))
        for f in sorted(fields - {"value"}):
            if _same([d[part][f] for _, d in entries]):
                common[part][f] = entries[0][1][part][f]
    for key in dict.fromkeys(k for k, _ in entries):
        mine = [d for k, d in entries if k == key]
        metrics[key] = {}
        for part in _PARTS:
            fields = set.intersection(*(set(d[part]) for d in mine)) - set(common[part]) - {"value"}
            metrics[key][part] = {f: mine[0][part][f] for f in sorted(fields) if _same([d[part][f] for d in mine])}
    for key, d in entries:
        for part in _PARTS:
            for f in list(common[part]) + list(metrics[key][part]):
                d[part].pop(f, None)
    return common, metrics


#: The quantile of the null distribution that is the chance floor, by the direction of the leak.
_FLOOR_QUANTILE = {"higher": "q95", "lower": "q05"}


def _drop_derived_chance(d: dict) -> None:
    """Drop, in place, the two numbers of an entry's chance part that repeat others (schema 2.3): ``value`` (the
    bootstrap's ``value``) and ``floor`` (its ``q95`` when higher values leak, its ``q05`` when lower ones do);
    :func:`uncertainty_entries` puts them back. Dropped only when equal, so nothing is lost."""
    b, c = d.get("bootstrap"), d.get("chance")
    if not isinstance(b, dict) or not isinstance(c, dict):
        return
    if "value" in c and "value" in b and _same([c["value"], b["value"]]):
        del c["value"]
    q = _FLOOR_QUANTILE.get(c.get("leak"))
    if q is not None and "floor" in c and q in c and _same([c["floor"], c[q]]):
        del c["floor"]


def _restore_chance(d: dict) -> dict:
    """An entry (common fields merged back) with the chance ``value`` and ``floor`` of :func:`_drop_derived_chance`
    put back."""
    c = d.get("chance")
    if isinstance(c, dict):
        if "value" not in c and "value" in d.get("bootstrap", {}):
            c["value"] = d["bootstrap"]["value"]
        q = _FLOOR_QUANTILE.get(c.get("leak"))
        if "floor" not in c and q in c:
            c["floor"] = c[q]
    return d


def uncertainty_entries(data: dict) -> dict:
    """The full entries of an uncertainty section's data (report.json): ``{label: {metric key: {"bootstrap":
    {...}, "chance": {...}}}}`` with the fields stored once in ``common`` and ``metrics`` put back in every
    entry, and the chance part's ``value`` and ``floor`` (schema 2.3: the bootstrap's value, and the q95 or q05
    of the null by the direction ``leak``) put back, as :meth:`vpeval.stats.Assessment.to_dict` gives them.

    Parameters
    ----------
    data : dict
        The ``data`` of an ``uncertainty`` section (schema 2.2 or later; older ones are returned as they are).

    Returns
    -------
    dict
        New dicts; ``data`` is not changed.
    """
    common, metrics = data.get("common", {}), data.get("metrics", {})
    return {label: {key: _restore_chance({part: {**common.get(part, {}), **metrics.get(key, {}).get(part, {}),
                                                 **d[part]} for part in d})
                    for key, d in by.items()}
            for label, by in data["groups"].items()}


def _draw_intervals(fig, pts, name, unit):
    ax = fig.add_subplot(1, 1, 1)
    for i, (label, a) in enumerate(pts):
        y = len(pts) - 1 - i
        b, c = a.boot, a.chance
        k, _ = display_unit(b.unit)
        colour = "#c0392b" if c.verdict == VERDICT_LEAKS else "#2c7fb8"
        ax.plot([k * b.low, k * b.high], [y, y], color=colour, lw=2)
        ax.plot([k * b.value], [y], "o", color=colour, ms=5)
        for f in ([c.floor] if c.floor is not None else [c.q025, c.q975]):
            if f is not None and math.isfinite(f):
                ax.plot([k * f, k * f], [y - 0.3, y + 0.3], color="grey", lw=1.5)
    ax.set_yticks(range(len(pts)), [legend_label(p[0]) for p in reversed(pts)], fontsize=7)
    # wrapped: the attackers' names push the axes right, and a long label centred under them left the figure
    ax.set_xlabel(textwrap.fill(f"{name} ({unit})" if unit else name, 45), fontsize=9)
    ax.set_ylim(-0.7, len(pts) - 0.3)
    ax.grid(True, axis="x", alpha=0.3)


#: Subgroup summary columns shown in the page (report.json keeps every column).
_SUBGROUP_COLUMNS = {
    "n_speakers": "speakers",
    "mean_worst_abs_llr_nats": "mean worst |LLR| (bits)",
    "max_worst_abs_llr_nats": "max worst |LLR| (bits)",
    "mean_lid_mean_bits": "mean LID (bits)",
    "max_lid_max_bits": "max LID (bits)",
    "mean_rank1_rate": "mean rank-1 rate (%)",
}

_COLUMNS = [
    ("speaker_id", "speaker"),
    ("n_target_trials", "target trials"),
    ("worst_abs_llr_bits", "worst |LLR| (bits)"),
    ("max_llr_nats", "max LLR (bits)"),
    ("n_probes", "probes"),
    ("lid_mean_bits", "mean LID (bits)"),
    ("lid_max_bits", "max LID (bits)"),
    ("rank1_rate", "rank-1 rate (%)"),
]

#: Profile columns shown in other units on the page (factor): nats -> bits, rates -> percent.
_SCALE = {"max_llr_nats": 1 / LN2, "mean_worst_abs_llr_nats": 1 / LN2, "max_worst_abs_llr_nats": 1 / LN2,
          "rank1_rate": 100.0, "mean_rank1_rate": 100.0}
#: Columns of report.json not repeated on the page (the same number in another unit).
_NOT_SHOWN = {"worst_abs_llr_nats"}


def _scaled(key, v):
    v = _cell(v)
    return v * _SCALE[key] if key in _SCALE and isinstance(v, float) else v


def _cell(v):
    if v is None:
        return float("nan")
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return v
    return str(v)


def speaker_profile_section(
    profiles: dict[str, SpeakerProfile],
    *,
    top: int | None = 20,
    section_id: str = "speaker-profile",
    title: str = "Per-speaker privacy profile",
    table_labels=None,
) -> Section:
    """Tables of the most exposed speakers (and subgroup summaries) per profiled attack.

    Parameters
    ----------
    profiles : dict label -> SpeakerProfile
        E.g. ``{"resemblyzer-ge2e / oa": speaker_profile(trials["oa"], one_to_n=m, lid=lid, metadata=md)}``.
    top : int or None
        Rows shown per profile (the most exposed first); None shows all. ``data`` always holds all rows.
    section_id, title : str
    table_labels : collection of str, optional
        The profiles shown as tables (default: all); the others are in ``data`` only, and a sentence says how
        many.

    Returns
    -------
    Section
        ``data["profiles"][label]`` = :meth:`vpeval.stats.SpeakerProfile.to_dict` for every profile.
    """
    sec = Section(section_id, title)
    sec.blocks.append(Paragraph(
        "One row per evaluation speaker, most exposed first (largest worst |LLR|, then largest LID, then "
        "rank-1 rate). Worst |LLR|: the largest absolute Laplace-smoothed PAV log-likelihood ratio (privacy-"
        "ZEBRA) among the speaker's target trials, with the PAV fitted on all trials of the attack; it never "
        "exceeds the attack's eps_max. LID (bits, Sterns et al.): mean and max over the speaker's probes; 0 = "
        "nothing disclosed, log2 N = certain identification. Rank-1 rate: share of the speaker's probes whose "
        "true speaker scores highest among the N enrolled (ties share the credit); chance is 1/N."))
    data = {}
    hidden = [label for label in profiles if table_labels is not None and label not in table_labels]
    if hidden:
        sec.blocks.append(Paragraph(
            f"Shown: the strongest attackers' profiles (those linked from the main page); the profiles of the other "
            f"{len(hidden)} attacks are in report.json (this section's data.profiles, every column)."))
    for label, p in profiles.items():
        data[label] = p.to_dict()
        if label in hidden:
            continue
        tab = p.table
        cols = [(k, h) for k, h in _COLUMNS if k in tab.columns]
        extra = [c for c in tab.columns if c not in dict(_COLUMNS) and c not in _NOT_SHOWN]
        shown = tab if top is None else tab.head(int(top))
        rows = [[_scaled(k, r[k]) for k, _ in cols] + [_cell(r[c]) for c in extra]
                for r in shown.to_dict(orient="records")]
        bits = []
        if p.eps_max_nats is not None:
            bits.append(f"eps_max of the attack {p.eps_max_nats / LN2:.4g} bits")
        if p.n_enrolled:
            bits.append(f"N = {p.n_enrolled} enrolled, chance rank-1 rate {100 / p.n_enrolled:.3g} %")
        more = "" if top is None or len(tab) <= int(top) else f"; the {int(top)} most exposed of {len(tab)} shown"
        sec.blocks.append(Table([h for _, h in cols] + extra, rows,
                                caption=f"{label}" + (f" ({'; '.join(bits)}{more})" if bits or more else "")))
        for attr, summ in p.subgroups.items():
            keep = [c for c in summ.columns if c in _SUBGROUP_COLUMNS or c == attr]
            srows = [[_scaled(c, r[c]) for c in keep] for r in summ.to_dict(orient="records")]
            sec.blocks.append(Table([_SUBGROUP_COLUMNS.get(c, str(c)) for c in keep], srows,
                                    caption=f"{label}: speakers grouped by {attr} (all columns in report.json)"))
    sec.data = {"profiles": data}
    return sec
