"""Report section of the paired comparison of systems (:mod:`vpeval.pipeline.compare`): it lays the numbers out
in the page's units (EER in %, eps_max and ALID in bits); report.json keeps machine units named in each field."""

from __future__ import annotations

import math

from ..pipeline.compare import HEADLINE_METRICS
from .document import Paragraph, Section, Table

__all__ = ["comparisons_section", "display_scale", "order_line", "SHORT_NAMES"]

_LN2 = math.log(2.0)


def display_scale(unit: str) -> tuple[float, str]:
    """Factor and unit that turn a machine unit into the page's: fraction -> %, nats -> bits, bits -> bits."""
    return {"fraction": (100.0, "%"), "nats": (1.0 / _LN2, "bits"), "bits": (1.0, "bits")}.get(unit, (1.0, unit))


#: Short metric names of the main page's comparison table (the appendix's table gives the full ones).
SHORT_NAMES = {"worst_case": "verdict's worst case", "eer_rocch": "lowest ROCCH-EER", "eps_max": "largest eps_max",
               "alid": "largest ALID", "share_beyond": "share of trials beyond the budget"}


def order_line(comparisons: list, metric: str = "share_beyond") -> tuple[list[str], str] | None:
    """The systems in order of ``metric`` on trial type ``all`` (lower protects better), in one line.

    Systems are sorted by their value (ties by name); between two neighbours the line says ``<`` where their paired
    comparison names one system as protecting better (its 95 % interval excludes 0) and ``~`` where it does not.
    Only neighbours are read, so the line is a summary, not a test of every pair (the table has every pair).

    Returns
    -------
    (list of str, str) or None
        The systems in order and the line; None with fewer than two systems or a neighbour pair not compared.

    Examples
    --------
    >>> from types import SimpleNamespace as C
    >>> cs = [C(system_a="a", system_b="b", trial_type="all", metric="share_beyond", unit="fraction",
    ...         value_a=0.9, value_b=0.1, better="b"),
    ...       C(system_a="a", system_b="c", trial_type="all", metric="share_beyond", unit="fraction",
    ...         value_a=0.9, value_b=0.85, better=None),
    ...       C(system_a="b", system_b="c", trial_type="all", metric="share_beyond", unit="fraction",
    ...         value_a=0.1, value_b=0.85, better="b")]
    >>> order_line(cs)[1]
    'b (10 %) < c (85 %) ~ a (90 %)'
    """
    pairs = {frozenset((c.system_a, c.system_b)): c for c in comparisons
             if c.metric == metric and c.trial_type == "all"}
    value = {}
    for c in pairs.values():
        value[c.system_a], value[c.system_b] = c.value_a, c.value_b
    if len(value) < 2:
        return None
    order = sorted(value, key=lambda s: (value[s], s))
    unit = next(iter(pairs.values())).unit
    k, u = display_scale(unit)
    parts = [f"{order[0]} ({k * value[order[0]]:.4g} {u})"]
    for a, b in zip(order, order[1:]):
        c = pairs.get(frozenset((a, b)))
        if c is None:
            return None
        parts.append(("<" if c.better is not None else "~") + f" {b} ({k * value[b]:.4g} {u})")
    return order, " ".join(parts)


def comparisons_section(comparisons: list, notes: list[str], *, n_boot: int, seed: int, metrics=None,
                        more: str = "") -> Section:
    """One row per pair of systems, trial type and headline metric: both values, the difference with its paired
    speaker-bootstrap interval, and the reading. ``data`` = ``{comparisons: [Comparison.to_dict()], notes,
    method}``: every comparison, whatever ``metrics`` shows.

    ``metrics``: the metric keys whose rows the table shows (default: every one); ``more``: where the other rows
    are shown, said in a note under the table when rows are left out. With ``metrics`` the table is the short
    one: short metric names (:data:`SHORT_NAMES`, defined in the method paragraph) and the reading without what
    the row already says (the systems, trial type and metric: "no significant difference", "A protects
    better"); ``data`` keeps the full readings."""
    sec = Section("comparisons", "Paired comparison of the systems")
    method = (
        "First the share of trials beyond the budget (the smallest delta with every attacker's eps(delta) within "
        "it; lower protects better) and the verdicts' worst cases (trial type 'all'); then per attack type the worst case over the attackers both systems faced (matched by name): "
        f"the lowest ROCCH-EER, the largest eps_max and the largest ALID. A paired speaker bootstrap ({n_boot} "
        f"replicates, seed {seed}) draws the same speakers for both systems and every attacker and re-selects the "
        "strongest attacker in each replicate. The difference is A - B with its 95 % percentile interval; a higher "
        "EER, or a lower eps_max or ALID, protects better; when the interval excludes 0 the system that protects "
        "better is named, otherwise 'no significant difference' (95 % level, not corrected for the several "
        "comparisons).")
    sec.blocks.append(Paragraph(method))
    ranked = order_line(comparisons)
    if ranked is not None and "<" in ranked[1]:  # all '~': the table already says no pair differs
        sec.blocks.append(Paragraph(
            f"Order by the share of trials beyond the budget (lower protects better): {ranked[1]}; '<' where the "
            "paired 95 % interval of the two neighbours excludes 0, '~' where it does not."))
    rows = []
    shown = [c for c in comparisons if metrics is None or c.metric in metrics]
    if metrics is not None:  # in the order the metrics are asked for
        shown.sort(key=lambda c: list(metrics).index(c.metric))
    for c in shown:
        k, unit = display_scale(c.unit)
        name = HEADLINE_METRICS[c.metric][0] if c.metric in HEADLINE_METRICS else c.metric
        reading = c.reading
        if metrics is not None:  # the short table: the row names the systems, the type and the metric
            name = SHORT_NAMES.get(c.metric, name)
            reading = "no significant difference" if c.better is None else f"{c.better} protects better"
        a, b = k * c.value_a, k * c.value_b
        if c.metric == "share_beyond":  # the order line's 4 digits: 99.98 and 99.25, not 100 and 99.2 beside 0.737
            a, b = f"{a:.4g}", f"{b:.4g}"
        rows.append([c.system_a, c.system_b, c.trial_type, f"{name} ({unit})", a, b,
                     k * c.diff, f"[{k * c.low:.3g}, {k * c.high:.3g}]", reading])
    if rows:
        sec.blocks.append(Table(["system A", "system B", "trial type", "metric", "A", "B", "A - B", "95 % CI",
                                 "reading"], rows, fmt="{:.3g}",
                                caption="Paired differences (EER in %, worst case, eps_max and ALID in bits)"))
    if len(shown) < len(comparisons):
        left = sorted({HEADLINE_METRICS.get(c.metric, (c.metric,))[0] for c in comparisons if c not in shown})
        sec.blocks.append(Paragraph(f"{len(comparisons) - len(shown)} further comparisons ({'; '.join(left)}): "
                                    f"{more or 'report.json'}.", kind="note"))
    for n in notes:
        sec.blocks.append(Paragraph(n, kind="note"))
    sec.data = {"comparisons": [c.to_dict() for c in comparisons], "notes": list(notes), "method": method,
                **({"order": ranked[0], "order_line": ranked[1]} if ranked is not None else {})}
    return sec
