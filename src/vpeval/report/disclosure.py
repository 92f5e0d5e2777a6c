"""Report sections for worst-case disclosure per LLR estimator and for similarity-rank disclosure."""

from __future__ import annotations

import math

import numpy as np

from ..analysis.worst_case import eps_max_ceiling_nats
from ..disclosure import DEFAULT_ESTIMATORS, worst_case_disclosure
from ..metrics.rank_disclosure import rank_disclosure
from ..plots.llr_curves import LLRCurvesDisplay
from .document import Draw, Figure, Paragraph, Section, Table

__all__ = ["disclosure_section", "disclosure_parts", "trials_disclosure_section", "input_order",
           "rank_disclosure_section", "rank_condition_arrays", "RANK_DERIVED"]


def _fmt(v, spec="{:.4g}"):
    if v is None:
        return "-"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
    return spec.format(v)


def _rows(result):
    rows = []
    for r in result.results.values():
        if r.error is not None:
            rows.append([r.estimator, "failed", "", "", "", "", "", r.error])
            continue
        rows.append([
            r.estimator,
            _fmt(r.eps_max_bits),
            f"{r.argmax_class}[{r.argmax_index}] @ {r.argmax_score:.6g}",
            _fmt(r.quantiles_nats[0.95] / _LN2),
            _fmt(r.quantiles_nats[0.99] / _LN2),
            " / ".join(f"{100 * r.share_above[k]:.2f}" for k in ("ln2", "ln10", "ln100")),
            str(r.n_attaining),
            "",
        ])
    return rows


_LN2 = math.log(2.0)
_COLUMNS = ["estimator", "eps_max (bits)", "attained by", "q95 |LLR| (bits)", "q99 |LLR| (bits)",
            "% trials with LR > 2 / 10 / 100 either way", "# attaining", "error"]


def disclosure_section(tar, non, estimators=None, *, oracle=None, section_id="disclosure",
                       title="Worst-case disclosure per LLR estimator", keep_llrs: bool = True, result=None,
                       display=None):
    """A report section: the per-estimator table and the score -> LLR plot over the score histograms.

    ``oracle`` is an optional ``(tar_llr, non_llr, llr_function)`` triple (simulations). Returns the section and
    the :class:`~vpeval.disclosure.WorstCaseDisclosure`; ``keep_llrs=False`` leaves its per-trial LLR arrays
    empty (the section needs none of them; on a worker process, 80 MB per estimator not sent back for 1e7
    trials). ``result``: that disclosure already computed from ``tar`` and ``non`` (e.g. by the audit's workers):
    laid out, not computed again; an exception there is raised. ``display``: its
    :class:`~vpeval.plots.llr_curves.LLRCurvesDisplay`, computed with it (:func:`disclosure_parts`). The plot
    is computed here otherwise, when the section is made: its figure holds the curves and histograms (a few
    hundred numbers), not the scores, so the section is small to send between processes.
    """
    tar, non = np.asarray(tar, dtype=float), np.asarray(non, dtype=float)
    if isinstance(result, BaseException):
        raise result
    if result is not None:
        res = result
    else:
        est = DEFAULT_ESTIMATORS if estimators is None else estimators
        res = worst_case_disclosure(tar, non, est, oracle=None if oracle is None else oracle[:2],
                                    keep_llrs=keep_llrs)
    sec = Section(section_id, title)
    sec.blocks.append(Paragraph(
        "eps_max = max |LLR| over all trials, by LLR estimator (worst-case paper), in bits (report.json also has "
        "nats and log10). The upper quantiles of |LLR| are stable companions of the maximum; the "
        "shares count trials whose likelihood ratio exceeds 2, 10 or 100 either way. pav: plain PAV (infinite "
        "on a pure end bin); pav_laplace: privacy-ZEBRA end-point pseudo-trials; logistic: affine, prior "
        "removed; gaussian / student_t: one density per class. An estimator that could not be fitted is listed "
        "with its error."))
    sec.blocks.append(Table(_COLUMNS, _rows(res), caption="Worst-case disclosure"))
    infinite = [r.estimator for r in res.results.values() if r.error is None and math.isinf(r.eps_max_nats)]
    ceiling = eps_max_ceiling_nats(tar.size, non.size) if tar.size and non.size else math.inf
    beyond = [f"{r.estimator} ({_fmt(r.eps_max_bits, '{:.3g}')} bits)" for r in res.results.values()
              if r.error is None and math.isfinite(r.eps_max_nats) and r.eps_max_nats > ceiling * (1 + 1e-9)
              and r.estimator != "oracle"]
    extra = {"ceiling_bits": ceiling / _LN2, "beyond_ceiling": beyond}
    if beyond:
        sec.blocks.append(Paragraph(
            f"{', '.join(beyond)}: above {_fmt(ceiling / _LN2, '{:.3g}')} bits, the most any labelling of "
            f"{tar.size} target and {non.size} non-target trials can show (the Laplace-PAV eps_max of perfect "
            "separation). That worst case is an extrapolation of the fitted densities' tails beyond the data, not a "
            "measurement; the verdict uses the Laplace PAV, which cannot extrapolate.", kind="warning"))
    if infinite:
        sec.blocks.append(Paragraph(
            f"eps_max of {', '.join(infinite)} is infinite by construction, not a measurement: plain PAV gives the "
            "lowest or highest score bin a likelihood ratio of 0 or infinity whenever that bin holds trials of one "
            "class only, which almost always happens at the ends. The headline eps_max of this report (summary, "
            "verdict, scorecard) is pav_laplace, the privacy-ZEBRA Laplace-smoothed PAV, which stays finite.",
            kind="note"))

    if not (np.isfinite(tar).all() and np.isfinite(non).all()):
        sec.blocks.append(Paragraph("Scores include +-inf: no score -> LLR plot is drawn (its axis needs finite "
                                    "scores); the table covers every trial.", kind="note"))
        sec.data = {**res.to_dict(), **extra}
        return sec, res
    if display is None:  # the calibrators of the table, not a second fit
        display = LLRCurvesDisplay.from_disclosure(res, tar, non, oracle=None if oracle is None else oracle[2])
    sec.blocks.append(Figure("llr_curves", Draw(_draw_llr_display, display),
                             "Score -> LLR (bits) of every estimator over the target (red) and non-target (blue) "
                             "score histograms.", size=(7.0, 4.8)))
    sec.data = {**res.to_dict(), **extra}
    return sec, res


def _draw_llr_display(fig, display) -> None:
    display.plot(fig.add_subplot(1, 1, 1), unit="bits")


def disclosure_parts(tar, non, estimators=None):
    """:func:`vpeval.disclosure.worst_case_disclosure` of ``tar``/``non`` without per-trial LLRs and its score ->
    LLR plot (:class:`~vpeval.plots.llr_curves.LLRCurvesDisplay`; None where a score is infinite), the two parts
    :func:`disclosure_section` lays out; e.g. on a worker process, from the sorted classes
    (:meth:`vpeval.io.trials.Trials.sorted_classes`), which are then not sorted again (read-only views are
    used, so an ascending input is not copied): what travels back is the table and the plot, not the scores.
    The trial that attains each eps_max is then indexed in the order of ``tar``/``non`` as given
    (:func:`input_order`)."""
    views = []
    for a in (tar, non):
        v = np.asarray(a, dtype=float).view()
        v.flags.writeable = False  # sorted_pair hands a read-only ascending array on as it is
        views.append(v)
    tar, non = views
    res = worst_case_disclosure(tar, non, DEFAULT_ESTIMATORS if estimators is None else estimators,
                                keep_llrs=False)
    finite = bool(np.isfinite(tar).all() and np.isfinite(non).all())
    return res, (LLRCurvesDisplay.from_disclosure(res, tar, non) if finite else None)


def trials_disclosure_section(trials, name: str, parts):
    """:func:`disclosure_section` of ``trials`` (:class:`~vpeval.io.trials.Trials`, input ``name``) from
    ``parts``, the :func:`disclosure_parts` of its sorted classes (:meth:`~vpeval.io.trials.Trials.sorted_classes`),
    each eps_max's trial indexed in the input order (:func:`input_order`): the section ``vpeval report`` shows."""
    res, display = parts
    return disclosure_section(*trials.sorted_classes(), section_id=f"disclosure-{name}",
                              title=f"Worst-case disclosure per LLR estimator: {name}",
                              result=input_order(res, trials.scores, trials.is_target), display=display)


def input_order(res, scores, is_target):
    """``res`` (:class:`~vpeval.disclosure.WorstCaseDisclosure` of the sorted classes of the trials ``scores``,
    ``is_target``) with each estimator's ``argmax_index`` and ``argmax_score`` those of the first trial of the
    input's class, in input order, whose score equals the reported one (``-0.0 == 0.0``: the first of either
    sign), as :func:`~vpeval.disclosure.worst_case_disclosure` reports them for the classes in input order:
    every estimator's LLR is a function of the score, so all trials of that score attain eps_max. O(n) per
    estimator, no copy of a class.

    ``scores`` float array of shape (n,) and ``is_target`` bool array of shape (n,): the trials in input order,
    oriented as ``res`` was computed (negated for ``--lower-is-target``). Failed estimators are returned as they
    are. Raises IndexError when a reported score is not among the input's trials of its class (``res`` of other
    trials)."""
    import dataclasses

    scores, is_target = np.asarray(scores), np.asarray(is_target, dtype=bool)
    out = {}
    for name, r in res.results.items():
        if r.error is not None or r.argmax_class is None:
            out[name] = r
            continue
        label = is_target if r.argmax_class == "target" else ~is_target
        pos = int(np.flatnonzero((scores == r.argmax_score) & label)[0])
        out[name] = dataclasses.replace(r, argmax_index=int(np.count_nonzero(label[:pos])),
                                        argmax_score=float(scores[pos]))
    return dataclasses.replace(res, results=out)


def rank_disclosure_section(gammas: dict, *, n_probes: dict | None = None, section_id: str = "rank-disclosure",
                            title: str = "Similarity-rank disclosure") -> Section:
    """Rank disclosure (Backstrom et al.) of rank histograms ``gamma`` per condition.

    Parameters
    ----------
    gammas : dict label -> ndarray of shape (N,)
        Rank histogram of the true speaker (fractional ties), e.g. ``IdentificationResult.gamma``.
    n_probes : dict label -> int, optional
        Probes behind each ``gamma``: adds the rank-LLR eps_max of the Laplace-smoothed histogram
        (:func:`vpeval.metrics.rank_disclosure.smooth_gamma`, one pseudo-probe per rank), the headline when the
        raw one is infinite.

    ``data`` = ``{conditions: {label: RankDisclosure.to_dict() without the arrays derived from gamma}}``, the
    Laplace one under ``laplace`` with its ``n_probes`` and ``alpha`` and without its gamma; the per-rank arrays
    (:data:`RANK_DERIVED`) are recomputed by :func:`rank_condition_arrays` (schema 2.3).
    """
    n_probes = n_probes or {}
    sec = Section(section_id, title)
    sec.blocks.append(Paragraph(
        "gamma_k = share of probes whose true speaker ranks k-th among the N enrolled speakers (ties spread "
        "uniformly over the tied ranks). Per-rank disclosure log2(N gamma_k) bits (0 for a uniform gamma); MaxD = "
        "its maximum, MeanD = log2 N - H(gamma) bits, IdR = gamma_1 (in %), RS = share of ranks with gamma_k > 1/N. "
        "Rank-LLR = ln(gamma_k (N-1) / (1 - gamma_k)) (shown in bits) assumes exchangeable non-target speakers; its "
        "eps_max is the largest |rank-LLR| over the ranks. With fewer probes than ranks some ranks are empty "
        "(gamma_k = 0), where the rank-LLR is minus infinity: the raw eps_max is then infinite by construction and "
        "says nothing. The headline is the eps_max of the Laplace-smoothed histogram (one pseudo-probe per rank), "
        "which is finite; the raw one is given beside it."))
    rows, data = [], {}
    for label, g in gammas.items():
        rd = rank_disclosure(np.asarray(g, dtype=float))
        n = len(g)
        smooth = None
        if label in n_probes:
            smooth = rank_disclosure(np.asarray(g, dtype=float), smoothing="laplace", n_probes=int(n_probes[label]),
                                     alpha=_RANK_ALPHA)
        rows.append([label, n, math.log2(n), rd.max_d, rd.mean_d, 100 * rd.idr, 100 / n, rd.rs,
                     float("nan") if smooth is None else smooth.rank_eps_max_bits, rd.rank_eps_max_bits])
        data[label] = _without_derived(rd.to_dict(), keep_gamma=True)
        if smooth is not None:
            data[label]["laplace"] = {**_without_derived(smooth.to_dict(), keep_gamma=False),
                                      "n_probes": int(n_probes[label]), "alpha": _RANK_ALPHA}
    sec.blocks.append(Table(["condition", "N", "log2 N (bits)", "MaxD (bits)", "MeanD (bits)", "IdR (%)",
                             "chance IdR (%)", "RS", "rank-LLR eps_max, Laplace (bits)",
                             "raw rank-LLR eps_max (bits)"], rows))
    sec.data = {"conditions": data}
    return sec


_RANK_ALPHA = 1.0  # pseudo-probes per rank of the Laplace-smoothed histogram

#: Arrays of :meth:`RankDisclosure.to_dict` that are a pure function of ``gamma`` (and, smoothed, of ``n_probes``
#: and ``alpha``): left out of the report (schema 2.3), recomputed bit for bit by one call of
#: :func:`vpeval.metrics.rank_disclosure.rank_disclosure`.
RANK_DERIVED = ("per_rank_bits", "rank_llr_nats")


def _without_derived(d: dict, *, keep_gamma: bool) -> dict:
    """``d`` (a :meth:`RankDisclosure.to_dict`) without the per-rank arrays derived from its gamma, and without the
    smoothed gamma itself (``keep_gamma=False``: ``smooth_gamma(gamma, n_probes, alpha)`` of the raw one)."""
    drop = set(RANK_DERIVED) | (set() if keep_gamma else {"gamma"})
    return {k: v for k, v in d.items() if k not in drop}


def rank_condition_arrays(condition: dict) -> dict:
    """The per-rank arrays of one condition of a rank-disclosure section (report.json ``conditions.<type>``, its
    references resolved), recomputed from its stored ``gamma`` and the Laplace ``n_probes`` and ``alpha``:
    ``{"per_rank_bits", "rank_llr_nats", "laplace": {"gamma", "per_rank_bits", "rank_llr_nats"}}`` (the last only
    when the condition has ``laplace``), as the report stored them up to schema 2.2. Equivalent to
    ``vpeval.rank_disclosure(gamma)`` and ``vpeval.rank_disclosure(gamma, smoothing="laplace", n_probes=n)``.

    Raises
    ------
    VpevalError
        ``gamma`` is not a rank distribution (:func:`vpeval.metrics.rank_disclosure.rank_disclosure`).
    """
    g = np.asarray(condition["gamma"], dtype=float)
    raw = rank_disclosure(g)
    out = {"per_rank_bits": raw.per_rank_bits.tolist(), "rank_llr_nats": raw.rank_llr.tolist()}
    lap = condition.get("laplace")
    if lap is not None:
        sm = rank_disclosure(g, smoothing="laplace", n_probes=int(lap["n_probes"]), alpha=float(lap["alpha"]))
        out["laplace"] = {"gamma": sm.gamma.tolist(), "per_rank_bits": sm.per_rank_bits.tolist(),
                          "rank_llr_nats": sm.rank_llr.tolist()}
    return out


def estimator_table_section(table, *, section_id="estimator-table",
                            title="EER and eps_max per LLR estimator (worst-case paper, Table 3)") -> Section:
    """Report section of a :class:`vpeval.disclosure.EstimatorTable`: one row per system, and a paragraph naming
    the pairs of systems whose order changes between the EER and the estimators."""
    from ..disclosure import ESTIMATOR_LABELS

    lab = [ESTIMATOR_LABELS.get(e, e) for e in table.estimators]
    sec = Section(section_id, title)
    sec.blocks.append(Paragraph(
        "Per system: the ROCCH-EER and the worst case eps_max = max |LLR| (nats) under each LLR estimator, each fitted "
        "on the system's own trials. The worst-case paper's point: the EER and the estimators need not rank the "
        "systems alike (a Gaussian fit extrapolates heavy tails into huge LLRs; the Laplace PAV cannot exceed its "
        "resolution)."))
    rows = [[s, 100 * table.eer[s]] + [float("nan") if table.eps_max_nats[s][e] is None else table.eps_max_nats[s][e]
                                       for e in table.estimators] for s in table.systems]
    sec.blocks.append(Table(["system", "ROCCH-EER (%)"] + [f"{x} (nats)" for x in lab], rows,
                            caption="ROCCH-EER beside eps_max per estimator"))
    if table.order_changes:
        def names(xs):
            return ", ".join(ESTIMATOR_LABELS.get(x, x) for x in xs)

        text = " ".join(f"{c['systems'][0]} discloses more than {c['systems'][1]} by {names(c['a_more'])}, less by "
                        f"{names(c['b_more'])}." for c in table.order_changes)
        sec.blocks.append(Paragraph("The order of systems changes between criteria: " + text, kind="note"))
    else:
        sec.blocks.append(Paragraph("The order of the systems is the same under the EER and every estimator."))
    sec.data = table.to_dict()
    return sec

