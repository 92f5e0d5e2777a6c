"""Report sections for verification metrics and privacy-ZEBRA."""

from __future__ import annotations

import numpy as np

from ..io.trials import Trials
from ..metrics.summary import verification_summary
from ..plots import DETDisplay, ECEDisplay
from ..plots.displays import DET_STYLES, det_floor, det_styles
from .document import Draw, Figure, Paragraph, Section, Table
from .units import HIDDEN_KEYS, display_metrics

__all__ = ["verification_section", "verification_summaries", "verification_entries"]


def verification_summaries(systems: dict, p_targets=(0.01, 0.05), scores_are_llrs: bool = False) -> dict:
    """The numbers of :func:`verification_section`, which a worker can compute and send back without the scores.

    Parameters
    ----------
    systems : dict
        name -> :class:`Trials`, or name -> ``(tar, non)`` float64 arrays of shapes (n_tar,), (n_non,), e.g.
        ``Trials.sorted_classes()`` (every number is order-invariant, and sorted classes are not sorted again).
    p_targets, scores_are_llrs
        As in :func:`vpeval.metrics.summary.verification_summary`.

    Returns
    -------
    dict
        name -> the list of :class:`~vpeval.metrics.summary.MetricValue` of
        :func:`~vpeval.metrics.summary.verification_summary` (units and definitions in each value).

    Raises
    ------
    InvalidScoresError
        What :func:`~vpeval.metrics.summary.verification_summary` raises (an empty class, NaN scores).
    """
    return {n: verification_summary(*(t.sorted_classes() if isinstance(t, Trials) else t), p_targets,
                                    scores_are_llrs=scores_are_llrs) for n, t in systems.items()}


def verification_section(systems: dict[str, Trials], p_targets=(0.01, 0.05), section_id="verification",
                         title="Verification and privacy-ZEBRA", scores_are_llrs: bool = False,
                         summaries: dict | None = None) -> Section:
    """One column per system/condition: EERs, minDCF, minCllr, D_ECE, eps_max, ZEBRA tag, linkability.

    Parameters
    ----------
    systems : dict name -> Trials
    p_targets : priors for minDCF
    summaries : dict, optional
        :func:`verification_summaries` of ``systems`` with the same ``p_targets`` and ``scores_are_llrs``, when
        already computed (e.g. by a worker); else computed here.
    """
    names = list(systems)
    if summaries is None:
        summaries = verification_summaries(systems, p_targets, scores_are_llrs)
    # Metrics are matched by key: a metric can be missing for one system.
    order: dict[str, object] = {}
    for n in names:
        for m in summaries[n]:
            order.setdefault(m.key, m)
    rows = []
    shown = {n: {k: (name, v, u, d) for k, name, v, u, d in display_metrics(summaries[n])} for n in names}
    for key, m in order.items():
        if key in HIDDEN_KEYS:  # the same eps_max in nats and log10: shown once, in bits
            continue
        first = next(shown[n][key] for n in names if key in shown[n])
        vals = [shown[n][key][1] if key in shown[n] else float("nan") for n in names]
        if m.unit == "count":
            vals = [int(v) for v in vals]
        rows.append([first[0], first[2]] + vals + [first[3]])
    sec = Section(section_id, title)
    sec.blocks.append(Paragraph(
        "Attacker scores of each system/condition. EERs in percent, minCllr, D_ECE and eps_max in bits "
        "(report.json keeps EERs as fractions and eps_max also in nats and log10). EER is given by two "
        "named estimators: ROCCH (BOSARIS convex hull, never above 50 %) and the interpolated step curve (can "
        "exceed 50 %; scores are never flipped). A perfectly private system has EER 50 %, minCllr 1 bit, D_ECE 0 "
        "and eps_max 0 (tag 0). A dash marks a metric that is undefined for that input (linkability needs finite "
        "scores)."))
    sec.blocks.append(Table(["metric", "unit"] + names + ["definition"], rows, caption="Verification metrics"))
    small = [n for n in names if any(m.key == "linkability" and m.caveat for m in summaries[n])]
    if small:
        from ..metrics.verification import LINKABILITY_MIN_PER_BIN

        sec.blocks.append(Paragraph(
            f"Linkability of {', '.join(small[:5])}{f' and {len(small) - 5} more' if len(small) > 5 else ''}: "
            f"fewer than {LINKABILITY_MIN_PER_BIN} trials per histogram bin, biased upwards (uninformative scores "
            "read 0.73 at 1 target and 99 non-targets): an upper estimate."))
    blocks = _SystemBlocks(systems, uses=2)  # the DET and the ECE profile read the same tie blocks
    sec.blocks.append(Figure(
        "det", Draw(_draw_det, blocks, {n: _value(summaries[n], "eer_rocch") for n in names}),
        "DET curves (probit axes, ticks over the whole span drawn); dots mark the ROCCH-EER; a curve that "
        "repeats another is dashed over it, its EER marked by a cross, and named in the legend.",
        size=(6.0, 6.0)))
    sec.blocks.append(Figure(
        "ece", Draw(_draw_ece, blocks),
        "privacy-ZEBRA ECE profile: cross entropy (bits) of the PAV-calibrated scores against the prior "
        "log-odds, below the dotted uninformative reference (the gap to it is shaded when one curve is drawn). "
        "D_ECE is the gap integrated uniformly over the prior P (not over its log-odds). A curve that repeats "
        "another is dashed over it and named in the legend.", size=(6.0, 5.0)))
    # a metric's definition and library call once per section when they are the same for every system (trial
    # type); one that differs (linkability names its bin count, which follows the trial count) stays in each value
    same = {key for key in order if len({(m.definition, m.function) for n in names for m in summaries[n]
                                         if m.key == key}) == 1}
    # likewise a metric's name and unit (schema 2.3: they were a third of an audit's verification sections)
    labelled = {key for key in order if len({(m.name, m.unit) for n in names for m in summaries[n]
                                             if m.key == key}) == 1}
    sec.data = {
        "systems": {n: {m.key: {k: v for k, v in m.as_dict().items()
                                if not (m.key in same and k in ("definition", "function"))
                                and not (m.key in labelled and k in _LABEL_FIELDS)}
                        for m in summaries[n]} for n in names},
        "metrics": {key: {"name": m.name, "unit": m.unit} for key, m in order.items() if key in labelled},
        "definitions": {key: {"definition": m.definition, "function": m.function} for key, m in order.items()
                        if key in same},
        "p_targets": list(p_targets),
    }
    return sec


_LABEL_FIELDS = ("key", "name", "unit")


def verification_entries(data: dict, *, definitions: bool = True) -> dict:
    """The values of a verification section's data (report.json) with the fields stored once put back:
    ``{system: {metric key: {key, name, value, unit[, definition, function][, error]}}}`` as
    :meth:`vpeval.metrics.summary.MetricValue.as_dict` gives them.

    Parameters
    ----------
    data : dict
        The ``data`` of a ``verification`` section (any schema; fields already in a value are kept).
    definitions : bool
        Put ``definitions.<key>`` (definition, library call) back too; ``False`` keeps a value to its key,
        name, number, unit and error.

    Returns
    -------
    dict
        New dicts; ``data`` is not changed.
    """
    labels, defs = data.get("metrics", {}), data.get("definitions", {}) if definitions else {}
    order = ("key", "name", "value", "unit", "definition", "function", "error", "caveat")  # MetricValue's fields

    def full(key, v):
        d = {"key": key, **labels.get(key, {}), **defs.get(key, {}), **v}
        return {**{f: d[f] for f in order if f in d}, **{f: x for f, x in d.items() if f not in order}}

    return {n: {key: full(key, v) for key, v in by_key.items()} for n, by_key in data["systems"].items()}


def _value(summary, key: str):
    return next((m.value for m in summary if m.key == key), None)


class _SystemBlocks:
    """The tie blocks of each system's scores (:func:`vpeval.blocks.tie_blocks`) for the figures of one section:
    sorted and merged once by the first figure drawn in a process and kept for the others (the DET and the ECE
    profile of 1e7 trials read the same blocks: one sort and merge instead of two), then let go after ``uses``
    reads. Pickled (for a worker) without them."""

    def __init__(self, systems: dict[str, Trials], uses: int):
        self.systems, self.uses, self._blocks, self._read = systems, uses, None, 0

    def items(self):
        """``(name, TieBlocks)`` of every system, in order."""
        blocks = self._blocks
        if blocks is None:  # Trials are validated scores: the tie blocks of their sorted classes (kept by them)
            blocks = {n: t.tie_blocks() for n, t in self.systems.items()}
        self._read += 1
        self._blocks = blocks if self._read < self.uses else None
        return blocks.items()

    def __getstate__(self):
        return {"systems": self.systems, "uses": self.uses, "_blocks": None, "_read": 0}


def _draw_det(fig, systems, eers=None):
    ax = fig.add_subplot(1, 1, 1)
    eers = eers or {}
    if not isinstance(systems, _SystemBlocks):
        systems = _SystemBlocks(systems, uses=1)
    shown = [DETDisplay.from_blocks(b, label=name, eer=eers.get(name)) for name, b in systems.items()]
    # curves that coincide (aa and aaaa often have identical scores) are dashed over each other, not hidden
    styles = det_styles([(d.pmiss, d.pfa) for d in shown])
    # one span for all curves, so none is clipped at a narrower edge drawn before a wider one
    floor = min((det_floor(d.pfa, d.pmiss) for d in shown), default=None)
    for d, st in zip(shown, styles):
        if st["same_as"] is not None:
            d.label = f"{d.label} [same curve as {shown[st['same_as']].label}]"
        d.plot(ax, floor=floor, ls=st["ls"], lw=st["lw"], eer_marker="o" if st["same_as"] is None else "x")
    if len(shown) <= _DET_LEGEND_INSIDE:
        ax.legend(fontsize=7, loc="upper right")
        return
    # many systems: the legend goes below the axes, in columns, and the figure grows to hold every entry (inside
    # the axes the entries beyond its height were cut off)
    ncol = 1 if len(shown) <= 16 else 2  # three columns of "name (ROCCH-EER x %)" overflow 6 inches
    rows = -(-len(shown) // ncol)
    w, h = fig.get_size_inches()
    fig.set_size_inches(w, h + 0.13 * rows + 0.4)
    ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=ncol, frameon=False)


_DET_LEGEND_INSIDE = 8  # systems whose legend fits in the corner of the DET axes


def _draw_ece(fig, systems):
    ax = fig.add_subplot(1, 1, 1)
    if not isinstance(systems, _SystemBlocks):
        systems = _SystemBlocks(systems, uses=1)
    shown = [ECEDisplay.from_blocks(b, label=name) for name, b in systems.items()]
    one = len(shown) == 1
    ax.plot(shown[0].plo, shown[0].reference, ":", color="grey", lw=1.2, label="reference (no information)")
    drawn = []
    for d in shown:
        # a curve that repeats an earlier one (aa and aaaa share their scores) is dashed over it and named
        same = next((e for e in drawn if np.allclose(e.pav, d.pav, atol=1e-9)), None)
        if same is not None:
            d.label = f"{d.label} [same curve as {same.label}]"
            n = sum(1 for e in drawn if e.label.endswith(f"[same curve as {same.label}]"))
            d.plot(ax, fill=False, reference=False, ls=DET_STYLES[(1 + n) % len(DET_STYLES)], lw=1.0)
        else:
            d.plot(ax, fill=one, reference=False, lw=1.5)
        drawn.append(d)
    # a curve at 0 (perfect separation, e.g. aa-centroid) stays above the axis line
    ax.set_ylim(bottom=-0.03 * max(1.0, float(ax.get_ylim()[1])))
    # below the axes, so that no curve is hidden under the legend
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3, frameon=False)
