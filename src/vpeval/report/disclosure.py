"""Report sections for worst-case disclosure per LLR estimator and for similarity-rank disclosure."""

from __future__ import annotations

import math

import numpy as np

from ..disclosure import DEFAULT_ESTIMATORS, worst_case_disclosure
from ..metrics.rank_disclosure import rank_disclosure
from ..plots.llr_curves import LLRCurvesDisplay
from .document import Figure, Paragraph, Section, Table

__all__ = ["disclosure_section", "rank_disclosure_section"]


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
            rows.append([r.estimator, "failed", "", "", "", "", "", "", "", r.error])
            continue
        rows.append([
            r.estimator,
            _fmt(r.eps_max_nats),
            _fmt(r.eps_max_bits),
            _fmt(r.eps_max_log10),
            f"{r.argmax_class}[{r.argmax_index}] @ {r.argmax_score:.6g}",
            _fmt(r.quantiles_nats[0.95]),
            _fmt(r.quantiles_nats[0.99]),
            " / ".join(f"{100 * r.share_above[k]:.2f}" for k in ("ln2", "ln10", "ln100")),
            str(r.n_attaining),
            "",
        ])
    return rows


_COLUMNS = ["estimator", "eps_max (nats)", "bits", "log10", "attained by", "q95 |LLR| (nats)",
            "q99 |LLR| (nats)", "% |LLR| > ln2 / ln10 / ln100", "# attaining", "error"]


def disclosure_section(tar, non, estimators=None, *, oracle=None, section_id="disclosure",
                       title="Worst-case disclosure per LLR estimator"):
    """A report section: the per-estimator table and the score -> LLR plot over the score histograms.

    ``oracle`` is an optional ``(tar_llr, non_llr, llr_function)`` triple (simulations).
    """
    est = DEFAULT_ESTIMATORS if estimators is None else estimators
    tar, non = np.asarray(tar, dtype=float), np.asarray(non, dtype=float)
    res = worst_case_disclosure(tar, non, est, oracle=None if oracle is None else oracle[:2])
    sec = Section(section_id, title)
    sec.blocks.append(Paragraph(
        "eps_max = max |LLR| over all trials, by LLR estimator (worst-case paper). LLRs in nats; bits = nats / "
        "ln 2, log10 = nats / ln 10. The upper quantiles of |LLR| are stable companions of the maximum; the "
        "shares count trials whose likelihood ratio exceeds 2, 10 or 100 either way. pav: plain PAV (infinite "
        "on a pure end bin); pav_laplace: privacy-ZEBRA end-point pseudo-trials; logistic: affine, prior "
        "removed; gaussian / student_t: one density per class. An estimator that could not be fitted is listed "
        "with its error."))
    sec.blocks.append(Table(_COLUMNS, _rows(res), caption="Worst-case disclosure"))

    def draw(fig):
        ax = fig.add_subplot(1, 1, 1)
        LLRCurvesDisplay.from_scores(tar, non, est, oracle=None if oracle is None else oracle[2]).plot(ax)

    if not (np.isfinite(tar).all() and np.isfinite(non).all()):
        sec.blocks.append(Paragraph("Scores include +-inf: no score -> LLR plot is drawn (its axis needs finite "
                                    "scores); the table covers every trial.", kind="note"))
        sec.data = res.to_dict()
        return sec, res
    sec.blocks.append(Figure("llr_curves", draw, "Score -> LLR (nats) of every estimator over the target (red) "
                                                  "and non-target (blue) score histograms.", size=(7.0, 4.8)))
    sec.data = res.to_dict()
    return sec, res



def rank_disclosure_section(gammas: dict, *, section_id: str = "rank-disclosure",
                            title: str = "Similarity-rank disclosure") -> Section:
    """Rank disclosure (Backstrom et al.) of rank histograms ``gamma`` per condition.

    Parameters
    ----------
    gammas : dict label -> ndarray of shape (N,)
        Rank histogram of the true speaker (fractional ties), e.g. ``IdentificationResult.gamma``.
    """
    sec = Section(section_id, title)
    sec.blocks.append(Paragraph(
        "gamma_k = share of probes whose true speaker ranks k-th among the N enrolled speakers (ties spread "
        "uniformly over the tied ranks). Per-rank disclosure log2(N gamma_k) bits (0 for a uniform gamma); MaxD = "
        "its maximum, MeanD = log2 N - H(gamma) bits, IdR = gamma_1, RS = share of ranks with gamma_k > 1/N. "
        "Rank-LLR = ln(gamma_k (N-1) / (1 - gamma_k)) nats assumes exchangeable non-target speakers; its "
        "eps_max is the largest |rank-LLR| over the ranks that occur."))
    rows, data = [], {}
    for label, g in gammas.items():
        rd = rank_disclosure(np.asarray(g, dtype=float))
        n = len(g)
        rows.append([label, n, math.log2(n), rd.max_d, rd.mean_d, rd.idr, 1 / n, rd.rs, rd.rank_eps_max])
        data[label] = rd.to_dict()
    sec.blocks.append(Table(["condition", "N", "log2 N (bits)", "MaxD (bits)", "MeanD (bits)", "IdR",
                             "chance IdR", "RS", "rank-LLR eps_max (nats)"], rows))
    sec.data = {"conditions": data}
    return sec
