"""Worst-case disclosure with every LLR estimator side by side.

The worst-case paper shows that the EER can be 50 % while single trials leak a lot, and that the worst case
``eps_max = max |LLR|`` over the trials depends heavily on how the LLRs are estimated: PAV is flat beyond the
extreme scores and infinite on pure end bins (Laplace smoothing caps it), logistic regression is affine and
blind to a variance difference, a Gaussian fit extrapolates quadratically, a Student-t fit less so.
:func:`worst_case_disclosure` therefore fits every requested estimator and reports, per estimator and with
the estimator named, eps_max in nats (bits and log10 beside it), the trial attaining it, the upper quantiles
of ``|LLR|`` as stable companions of the maximum, and the share of trials whose ``|LLR|`` exceeds
``ln 2``, ``ln 10`` and ``ln 100`` (likelihood ratio above 2, 10, 100 either way).
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from ._checks import as_tar_non
from .calibration.base import ScoreCalibrator
from .calibration.pav import PAVCalibrator
from .calibration.registry import DEFAULT_ESTIMATORS, ESTIMATORS, make_calibrator
from .errors import VpevalError

__all__ = [
    "ESTIMATORS",
    "DEFAULT_ESTIMATORS",
    "make_calibrator",
    "EstimatorDisclosure",
    "WorstCaseDisclosure",
    "worst_case_disclosure",
    "summarize_llrs",
    "EstimatorTable",
    "estimator_table",
    "TABLE_ESTIMATORS",
    "ESTIMATOR_LABELS",
]

#: Thresholds on ``|LLR|`` (nats) whose exceedance shares are reported.
THRESHOLDS = {"ln2": math.log(2), "ln10": math.log(10), "ln100": math.log(100)}

QUANTILES = (0.95, 0.99)


@dataclass(frozen=True)
class EstimatorDisclosure:
    """Worst-case disclosure of the trials under one LLR estimator.

    Attributes
    ----------
    estimator : str
        Estimator name (``"pav"``, ``"pav_laplace"``, ..., ``"oracle"``, or a custom calibrator's ``name``).
    error : str or None
        If the estimator failed (e.g. separable scores for ``logistic``, a constant class for ``gaussian``):
        the error message; every number is then NaN and the arrays are empty.
    eps_max_nats, eps_max_bits, eps_max_log10 : float
        ``max |LLR|`` over all evaluated trials, in nats, bits and log10 (may be ``inf``).
    argmax_class : str or None
        ``"target"`` or ``"nontarget"``: class of the trial attaining eps_max.
    argmax_index : int or None
        Its index in the ``tar`` or ``non`` array given (the evaluation arrays if given).
    argmax_score : float
        Its score.
    n_attaining : int
        Number of trials attaining eps_max exactly (PAV bins give many).
    quantiles_nats : dict
        ``{0.95: q, 0.99: q}``: quantiles of ``|LLR|`` (nats) over all trials, as the order statistic
        ``inf{v : share(|LLR| <= v) >= q}`` (numpy ``method="inverted_cdf"``, no interpolation, so never NaN).
    share_above : dict
        ``{"ln2": f, "ln10": f, "ln100": f}``: share of all trials (targets and non-targets pooled) with
        ``|LLR|`` strictly above ``ln 2``, ``ln 10``, ``ln 100``.
    tar_llr, non_llr : ndarray
        The LLRs (nats) of the evaluated trials.
    calibrator : object or None
        The fitted calibrator (``None`` for the oracle or on error).
    """

    estimator: str
    error: str | None
    eps_max_nats: float
    argmax_class: str | None
    argmax_index: int | None
    argmax_score: float
    n_attaining: int
    quantiles_nats: dict
    share_above: dict
    tar_llr: np.ndarray = field(repr=False)
    non_llr: np.ndarray = field(repr=False)
    calibrator: object = field(default=None, repr=False)

    @property
    def eps_max_bits(self) -> float:
        return self.eps_max_nats / math.log(2)

    @property
    def eps_max_log10(self) -> float:
        return self.eps_max_nats / math.log(10)

    def to_dict(self) -> dict:
        """Plain-Python dict of the summary numbers (no arrays), JSON-ready."""
        return {
            "estimator": self.estimator,
            "error": self.error,
            "eps_max_nats": self.eps_max_nats,
            "eps_max_bits": self.eps_max_bits,
            "eps_max_log10": self.eps_max_log10,
            "argmax": None
            if self.argmax_class is None
            else {"class": self.argmax_class, "index": self.argmax_index, "score": self.argmax_score},
            "n_attaining": self.n_attaining,
            "quantiles_abs_llr_nats": {f"{q:g}": v for q, v in self.quantiles_nats.items()},
            "share_abs_llr_above": dict(self.share_above),
        }


@dataclass(frozen=True)
class WorstCaseDisclosure:
    """Per-estimator worst-case disclosure (see :func:`worst_case_disclosure`).

    Attributes
    ----------
    results : dict
        Estimator name -> :class:`EstimatorDisclosure`, in the requested order (the oracle last, if given).
    n_tar, n_non : int
        Number of evaluated target and non-target trials.
    fitted_on : str
        ``"same"`` (LLRs of the training trials themselves) or ``"separate"`` (fitted on one set, applied to
        the evaluation set).
    """

    results: dict
    n_tar: int
    n_non: int
    fitted_on: str

    def __getitem__(self, name) -> EstimatorDisclosure:
        return self.results[name]

    def to_dict(self) -> dict:
        return {
            "n_tar": self.n_tar,
            "n_non": self.n_non,
            "fitted_on": self.fitted_on,
            "units": "eps_max and quantiles in nats (bits, log10 beside); shares are fractions of all trials",
            "estimators": [r.to_dict() for r in self.results.values()],
        }


def _failed(name, message):
    nan = float("nan")
    return EstimatorDisclosure(
        estimator=name,
        error=message,
        eps_max_nats=nan,
        argmax_class=None,
        argmax_index=None,
        argmax_score=nan,
        n_attaining=0,
        quantiles_nats={q: nan for q in QUANTILES},
        share_above={k: nan for k in THRESHOLDS},
        tar_llr=np.empty(0),
        non_llr=np.empty(0),
    )


def summarize_llrs(name, tar, non, tar_llr, non_llr, calibrator=None) -> EstimatorDisclosure:
    """Summary of given LLRs (nats) of target and non-target trials with scores ``tar``/``non``.

    The trial reported as attaining eps_max is, among all trials with ``|LLR| == eps_max``, the one with the
    highest score; between a target and a non-target at that score, the target; among equal trials of one
    class, the lowest index.  So the class and score reported do not depend on the input order.

    Raises
    ------
    VpevalError
        An LLR is NaN, or the shapes of scores and LLRs differ.
    """
    tar_llr = np.asarray(tar_llr, dtype=np.float64)
    non_llr = np.asarray(non_llr, dtype=np.float64)
    if tar_llr.shape != tar.shape or non_llr.shape != non.shape:
        raise VpevalError(f"{name}: LLR arrays do not match the score arrays in shape")
    if np.isnan(tar_llr).any() or np.isnan(non_llr).any():
        raise VpevalError(f"{name}: the estimator produced NaN LLRs")
    # |LLR| of both classes in one array (its halves are views), computed in place
    both = np.empty(tar_llr.size + non_llr.size)
    a_t, a_n = np.abs(tar_llr, out=both[:tar_llr.size]), np.abs(non_llr, out=both[tar_llr.size:])
    eps = float(both.max())
    hit_t, hit_n = np.flatnonzero(a_t == eps), np.flatnonzero(a_n == eps)
    best_t = hit_t[np.argmax(tar[hit_t])] if hit_t.size else None
    best_n = hit_n[np.argmax(non[hit_n])] if hit_n.size else None
    # np.argmax returns the first (lowest-index) maximum: the lowest index among equal top scores
    if best_n is None or (best_t is not None and tar[best_t] >= non[best_n]):
        cls, idx, score = "target", int(best_t), float(tar[best_t])
    else:
        cls, idx, score = "nontarget", int(best_n), float(non[best_n])
    share = {k: float(np.count_nonzero(both > v) / both.size) for k, v in THRESHOLDS.items()}
    # one partition for all quantiles (each is an order statistic: the same values as one call per quantile),
    # of ``both`` itself (it is not used afterwards)
    quant = dict(zip(QUANTILES, (float(v) for v in np.quantile(both, list(QUANTILES), method="inverted_cdf",
                                                               overwrite_input=True))))
    del a_t, a_n, both
    return EstimatorDisclosure(
        estimator=name,
        error=None,
        eps_max_nats=eps,
        argmax_class=cls,
        argmax_index=idx,
        argmax_score=score,
        n_attaining=int(hit_t.size + hit_n.size),
        quantiles_nats=quant,
        share_above=share,
        tar_llr=tar_llr,
        non_llr=non_llr,
        calibrator=calibrator,
    )


def worst_case_disclosure(
    tar,
    non,
    estimators=DEFAULT_ESTIMATORS,
    *,
    eval_tar=None,
    eval_non=None,
    oracle=None,
    keep_llrs: bool = True,
) -> WorstCaseDisclosure:
    """Worst-case disclosure ``eps_max = max |LLR|`` under several LLR estimators (worst-case paper).

    Parameters
    ----------
    tar, non : array_like of shape (n_tar,), (n_non,)
        Target and non-target scores the estimators are fitted on.
    estimators : sequence of str or ScoreCalibrator
        Names from :data:`ESTIMATORS` (default ``("pav", "pav_laplace", "logistic", "gaussian",
        "student_t")``) and/or unfitted calibrator objects (copied, never modified; reported under their
        ``name``).  Names must be unique.
    eval_tar, eval_non : array_like, optional
        If given (both), each estimator is fitted on ``tar``/``non`` and the disclosure is computed on these
        evaluation trials (dev/eval protocol).  Otherwise the training trials are evaluated themselves,
        which is the worst-case paper's setting (and PAV's optimistic in-sample fit).
    oracle : (array_like, array_like), optional
        Exact LLRs (nats) of the evaluated target and non-target trials (e.g. from :mod:`vpeval.simulate`);
        reported as estimator ``"oracle"``.
    keep_llrs : bool, default True
        False: each result's per-trial LLR arrays (``tar_llr``/``non_llr``) are left empty, which spares their
        memory and lets a PAV estimator fitted and evaluated on the same trials be evaluated on the sorted
        scores (its step function looked up in order; every number reported is the same).

    Returns
    -------
    WorstCaseDisclosure
        ``result[name]`` is an :class:`EstimatorDisclosure`.  An estimator that fails (separable training
        scores for ``logistic``, a constant class or fewer than two scores for ``gaussian``/``student_t``,
        infinite scores for the parametric fits) is reported with ``error`` set to its message and NaN
        numbers, not skipped.

    Raises
    ------
    VpevalError
        Bad score arrays (empty, NaN), an unknown or duplicate estimator name, only one of
        ``eval_tar``/``eval_non``, or oracle LLRs of the wrong shape.

    Notes
    -----
    Units: eps_max in nats, with bits (``/ ln 2``) and log10 (``/ ln 10``) beside it; privacy-ZEBRA's tags
    are defined on the log10 value.  Which estimator gives which eps_max is the point of the report: PAV
    without smoothing is ``inf`` as soon as the highest or lowest score bin is pure; ``pav_laplace`` uses the
    privacy-ZEBRA end-point pseudo-trials, ``pav_succession`` the per-bin rule of succession.  All
    estimators are invariant to trial order; PAV variants also to strictly increasing score transforms.

    Examples
    --------
    >>> r = worst_case_disclosure([0.2, 0.4, 0.6], [0.1, 0.3, 0.5], estimators=("pav", "pav_laplace"))
    >>> r["pav"].eps_max_nats, round(r["pav_laplace"].eps_max_bits, 12)
    (inf, 1.0)
    >>> r["pav_laplace"].argmax_class, r["pav_laplace"].argmax_score
    ('target', 0.6)
    """
    tar, non = as_tar_non(tar, non)
    if (eval_tar is None) != (eval_non is None):
        raise VpevalError("give both eval_tar and eval_non, or neither")
    if eval_tar is not None:
        e_tar, e_non = as_tar_non(eval_tar, eval_non)
        fitted_on = "separate"
    else:
        e_tar, e_non, fitted_on = tar, non, "same"
    if isinstance(estimators, (str, ScoreCalibrator)):
        estimators = (estimators,)
    if not len(estimators):
        raise VpevalError("no LLR estimator given; name at least one of " + ", ".join(ESTIMATORS))
    if oracle is not None and not (isinstance(oracle, (tuple, list)) and len(oracle) == 2):
        raise VpevalError("oracle must be a pair (tar_llr, non_llr) of arrays of oracle LLRs in nats")
    cals = []
    for est in estimators:
        if isinstance(est, str):
            cals.append((est, make_calibrator(est)))
        elif hasattr(est, "fit") and hasattr(est, "transform"):
            cals.append((None, copy.deepcopy(est)))
        else:
            raise VpevalError(f"estimators must be names or calibrator objects, got {est!r}")
    results = {}
    # the scores sorted once (ScoreCalibrator.fit sorts its input first, and skips that when sorted), and their tie
    # blocks merged once for both PAV variants; made when the first estimator needs them
    fit_on: dict = {}
    for name, cal in cals:
        error, on_sorted = None, False
        try:
            if type(cal).fit is ScoreCalibrator.fit:
                if "sorted" not in fit_on:
                    from .blocks import sorted_pair

                    fit_on["sorted"] = sorted_pair(tar, non)
                if type(cal) is PAVCalibrator:
                    if "blocks" not in fit_on:
                        from .blocks import merge_sorted

                        fit_on["blocks"] = merge_sorted(*fit_on["sorted"])
                    cal.fit_blocks(fit_on["blocks"])
                else:
                    cal.fit(*fit_on["sorted"])
            else:
                cal.fit(tar, non)
            # a PAV step function looked up at the sorted scores (a search in order, not at random) when no
            # per-trial LLR is kept: the summary needs the LLRs as a multiset, and the trial attaining eps_max is
            # found again in the input order (_summary_of_sorted)
            on_sorted = (not keep_llrs and fitted_on == "same" and type(cal) is PAVCalibrator
                         and "sorted" in fit_on)
            t_llr, n_llr = (cal.transform(e) for e in (fit_on["sorted"] if on_sorted else (e_tar, e_non)))
        except VpevalError as exc:
            error = f"{type(exc).__name__}: {exc}"
        # a calibrator object's name is read after fitting (PAVCalibrator names itself pav_laplace then)
        name = name or str(getattr(cal, "name", type(cal).__name__))
        if name in results or (oracle is not None and name == "oracle"):
            raise VpevalError(f"estimator names must be unique; {name!r} appears twice")
        if error is not None:
            results[name] = _failed(name, error)
        elif on_sorted:
            results[name] = _summary_of_sorted(name, e_tar, e_non, *fit_on["sorted"], t_llr, n_llr, cal)
        else:
            results[name] = summarize_llrs(name, e_tar, e_non, t_llr, n_llr, cal)
        if not keep_llrs:
            results[name] = _without_llrs(results[name])
        t_llr = n_llr = None
    if oracle is not None:
        o_t, o_n = oracle
        results["oracle"] = summarize_llrs("oracle", e_tar, e_non, o_t, o_n)
        if not keep_llrs:
            results["oracle"] = _without_llrs(results["oracle"])
    return WorstCaseDisclosure(results, int(e_tar.size), int(e_non.size), fitted_on)


def _without_llrs(r: EstimatorDisclosure) -> EstimatorDisclosure:
    empty = np.empty(0)
    return dataclasses.replace(r, tar_llr=empty, non_llr=empty)


def _summary_of_sorted(name, tar, non, s_tar, s_non, t_llr, n_llr, cal) -> EstimatorDisclosure:
    """:func:`summarize_llrs` of ``tar``/``non`` from the LLRs ``t_llr``/``n_llr`` of their sorted copies
    ``s_tar``/``s_non`` under a function of the score: the same summary. The LLRs as a multiset give eps_max,
    the quantiles and the shares; the trial attaining eps_max is the highest-scoring one (all trials of one
    score share its LLR), and among the input's trials of that score the lowest index, as summarize_llrs
    picks it."""
    r = summarize_llrs(name, s_tar, s_non, t_llr, n_llr, cal)
    orig = tar if r.argmax_class == "target" else non
    idx = int(np.flatnonzero(orig == r.argmax_score)[0])  # -0.0 == 0.0: the first of either sign, as argmax
    return dataclasses.replace(r, argmax_index=idx, argmax_score=float(orig[idx]))


# --------------------------------------------------------------------------------------------------------
# The worst-case paper's Table 3: EER beside eps_max per estimator, per system, and where the order changes

#: Columns of the estimator table when none are named: the PAV with its smoothing, the two parametric fits.
TABLE_ESTIMATORS = ("pav_laplace", "gaussian", "student_t")

#: Display names of the estimator table's columns (the smoothing of a PAV is named).
ESTIMATOR_LABELS = {
    "pav": "PAV (no smoothing)", "pav_laplace": "PAV (Laplace, privacy-ZEBRA)",
    "pav_succession": "PAV (rule of succession)", "logistic": "logistic", "gaussian": "Gaussian",
    "gaussian_shared": "Gaussian (shared variance)", "student_t": "Student-t", "rank": "rank (Eq. 35)",
}


@dataclass(frozen=True)
class EstimatorTable:
    """EER and eps_max per estimator for several systems (the worst-case paper's Table 3 layout).

    Attributes
    ----------
    systems : list of str
        System names, in the order given.
    estimators : list of str
        Estimator columns (``"rank"`` last when any system has a rank histogram).
    eer : dict
        System -> ROCCH-EER (fraction).
    eps_max_nats : dict
        System -> {estimator -> eps_max (nats; ``inf`` possible) or ``None`` (failed, or no 1-to-N matrix
        for ``rank``)}.
    errors : dict
        System -> {estimator -> why the value is ``None``}.
    order_changes : list of dict
        One entry per pair of systems ordered differently by two criteria (the EER, lower = more disclosure,
        and each estimator's eps_max, higher = more disclosure): ``{"systems": [a, b], "a_more":
        [criteria], "b_more": [criteria], "tied": [criteria]}``. Empty when every criterion agrees.
    """

    systems: list
    estimators: list
    eer: dict
    eps_max_nats: dict
    errors: dict
    order_changes: list

    def to_dict(self) -> dict:
        return {"systems": list(self.systems), "estimators": list(self.estimators),
                "estimator_labels": {e: ESTIMATOR_LABELS.get(e, e) for e in self.estimators},
                "units": "eer fraction (ROCCH); eps_max in nats",
                "rows": [{"system": s, "eer_rocch": self.eer[s], "eps_max_nats": dict(self.eps_max_nats[s]),
                          "errors": dict(self.errors[s])} for s in self.systems],
                "order_changes": [dict(c) for c in self.order_changes]}


def _pair_changes(systems, criteria):
    """Pairs ordered differently by the criteria (``criteria``: name -> {system -> disclosure value, higher =
    more disclosure, None = missing})."""
    out = []
    for i, a in enumerate(systems):
        for b in systems[i + 1:]:
            a_more, b_more, tied = [], [], []
            for name, vals in criteria.items():
                va, vb = vals[a], vals[b]
                if va is None or vb is None or (math.isnan(va) or math.isnan(vb)):
                    continue
                (a_more if va > vb else b_more if vb > va else tied).append(name)
            if a_more and b_more:
                out.append({"systems": [a, b], "a_more": a_more, "b_more": b_more, "tied": tied})
    return out


def estimator_table(systems, estimators=TABLE_ESTIMATORS, *, rank_gammas=None, disclosures=None) -> EstimatorTable:
    """EER beside eps_max under several LLR estimators for several systems, and where their orders disagree.

    Parameters
    ----------
    systems : mapping of str -> (tar, non)
        Target and non-target scores of each system (insertion order is the row order).
    estimators : sequence of str
        Names from :data:`ESTIMATORS` (default :data:`TABLE_ESTIMATORS`: Laplace PAV, Gaussian, Student-t);
        each fitted by :func:`worst_case_disclosure` on the system's own trials.
    rank_gammas : mapping of str -> array_like, optional
        Rank histogram ``gamma`` (``P(true speaker at rank k)``) of the systems that have a 1-to-N matrix; adds
        the column ``"rank"``: eps_max of the rank LLR (worst-case paper, Eq. 35;
        :func:`vpeval.metrics.rank_disclosure.rank_disclosure`). Systems without one get ``None`` there.
    disclosures : mapping of str -> WorstCaseDisclosure, optional
        Results of :func:`worst_case_disclosure` already computed on a system's own trials with every
        estimator of ``estimators`` (a report has them); used instead of fitting again.

    Returns
    -------
    EstimatorTable

    Raises
    ------
    VpevalError
        No systems, an unknown estimator, or a ``rank_gammas`` key that is not a system.

    Notes
    -----
    The EER is the ROCCH-EER (:func:`vpeval.rocch_eer`). A criterion orders two systems by its value: the
    lower EER and the higher eps_max count as more disclosure; a missing (failed) value is left out of that
    pair's comparison. The worst-case paper's point is that these orders differ: a Gaussian fit on heavy
    tails extrapolates a huge eps_max, the Laplace PAV cannot exceed its resolution.

    Examples
    --------
    >>> t = estimator_table({"a": ([0.0, 1.0, 2.0], [-1.0, 0.5]), "b": ([3.0, 4.0], [0.0, 1.0])},
    ...                     ("pav_laplace",))
    >>> t.estimators, round(t.eer["b"], 3)
    (['pav_laplace'], 0.0)
    """
    from .metrics.verification import rocch_eer

    names = list(systems)
    if not names:
        raise VpevalError("estimator_table needs at least one system")
    est = list(estimators)
    rank_gammas = dict(rank_gammas or {})
    unknown = [k for k in rank_gammas if k not in systems]
    if unknown:
        raise VpevalError(f"rank_gammas names systems that are not given: {unknown}")
    cols = est + (["rank"] if rank_gammas else [])
    eer, eps, errs = {}, {}, {}
    for s in names:
        tar, non = as_tar_non(*systems[s])
        eer[s] = float(rocch_eer(tar, non))
        res = (disclosures or {}).get(s)
        if res is None or any(e not in res.results for e in est):
            res = worst_case_disclosure(tar, non, est)
        eps[s], errs[s] = {}, {}
        for e in est:
            r = res[e]
            eps[s][e] = None if r.error is not None else r.eps_max_nats
            if r.error is not None:
                errs[s][e] = r.error
        if rank_gammas:
            if s in rank_gammas:
                from .metrics.rank_disclosure import rank_disclosure

                eps[s]["rank"] = float(rank_disclosure(rank_gammas[s]).rank_eps_max)
            else:
                eps[s]["rank"] = None
                errs[s]["rank"] = "no 1-to-N score matrix"
    criteria = {"EER": {s: -eer[s] for s in names}}
    criteria.update({e: {s: eps[s][e] for s in names} for e in cols})
    return EstimatorTable(names, cols, eer, eps, errs, _pair_changes(names, criteria))
