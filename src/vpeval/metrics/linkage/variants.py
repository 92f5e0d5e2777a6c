"""LID sensitivity: the LID chain with another calibration, without the row z-norm, or with another prior, and the
confident-misidentification statistic.

The LID of Sterns et al. (:func:`vpeval.metrics.linkage.lid_pipeline`) z-normalises each probe's row, calibrates
by an affine logistic map fitted on a development set and takes the softmax. Its reviewers ask how much the
numbers depend on these choices. :func:`lid_variant` runs the chain in memory with the choices exposed:

* ``calibration``: ``"logistic"`` (the default chain), ``"pav"`` (Laplace-smoothed PAV: monotone, non-parametric,
  flat beyond the training range) or ``"student_t"`` (one Student-t density per class: a non-affine LLR that can
  bend at the ends, as the exact LLR of a leaking share of probes does);
* ``znorm``: ``False`` calibrates the raw scores (each row's level and spread then enter the calibration);
* ``p_target``: the target prior of the logistic fit's weighting (default: the training proportion, ``1/N``);
  the intercept cancels in the softmax, but the weighting moves the slope, hence every LID.

:func:`confident_misidentification` measures the harm a negative LID can do: the share of probes whose most
probable *wrong* speaker has a posterior above a threshold (the search names someone else with confidence), and
the mean log-odds (bits) of that wrong speaker's posterior over those probes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...errors import InvalidScoresError
from .posterior import lid, softmax_posteriors, znorm_rows
from .summary import LIDSummary, lid_summary

__all__ = ["LIDVariant", "lid_variant", "confident_misidentification", "CALIBRATIONS"]

#: Calibrations of :func:`lid_variant` -> the :data:`vpeval.disclosure.ESTIMATORS` name fitted.
CALIBRATIONS = {"logistic": "logistic", "pav": "pav_laplace", "student_t": "student_t"}


def confident_misidentification(llr_matrix, true_index, threshold: float = 0.5) -> dict:
    """How often the 1-to-N search names a wrong speaker with confidence.

    Parameters
    ----------
    llr_matrix : array_like of shape (n_probes, N), N >= 2
        Calibrated LLRs (nats); the posterior is their row softmax (flat prior), as for LID.
    true_index : array_like of int, shape (n_probes,)
    threshold : float in (0, 1)
        Posterior above which the top wrong speaker counts as a confident misidentification (default 0.5: the
        wrong speaker is more probable than all the others together).

    Returns
    -------
    dict
        ``share``: fraction of probes whose top wrong speaker's posterior exceeds ``threshold``;
        ``mean_log_odds_bits``: mean of ``log2(q / (1 - q))`` over those probes (``q`` that posterior; NaN when
        there are none; ``inf`` if some ``q`` is 1); ``threshold``; ``n``.

    Examples
    --------
    >>> r = confident_misidentification([[0.0, 3.0, 0.0], [2.0, 0.0, 0.0]], [0, 0])
    >>> r["share"], round(r["mean_log_odds_bits"], 4)
    (0.5, 3.3281)
    """
    t = float(threshold)
    if not 0.0 < t < 1.0:
        raise InvalidScoresError(f"threshold must be in (0, 1), got {threshold!r}")
    post = softmax_posteriors(llr_matrix)
    ti = np.asarray(true_index, dtype=np.int64)
    if ti.shape != (post.shape[0],) or (ti < 0).any() or (ti >= post.shape[1]).any():
        raise InvalidScoresError("true_index: one column index per row of llr_matrix expected")
    wrong = post.copy()
    wrong[np.arange(post.shape[0]), ti] = -1.0
    q = wrong.max(axis=1)
    hit = q > t
    with np.errstate(divide="ignore"):
        lo = np.log2(q[hit]) - np.log2(1.0 - q[hit])
    return {"share": float(hit.mean()), "mean_log_odds_bits": float(lo.mean()) if hit.any() else float("nan"),
            "threshold": t, "n": int(post.shape[0])}


@dataclass(frozen=True)
class LIDVariant:
    """Result of :func:`lid_variant`.

    Attributes
    ----------
    calibration : str
    znorm : bool
    p_target : float or None
    lid : ndarray of shape (n_probes,), bits
    summary : LIDSummary
    misidentification : dict
        :func:`confident_misidentification` of the evaluation LLRs.
    """

    calibration: str
    znorm: bool
    p_target: float | None
    lid: np.ndarray
    summary: LIDSummary
    misidentification: dict

    def to_dict(self) -> dict:
        s = self.summary
        return {"calibration": self.calibration, "znorm": self.znorm, "p_target": self.p_target,
                "alid_bits": s.alid, "pdr": s.pdr, "ndr": s.ndr, "lid_plus_bits": s.lid_plus,
                "lid_minus_bits": s.lid_minus, "lid_max_bits": s.lid_max, "misidentification": self.misidentification}


def _target_split(m, ti):
    mask = np.zeros(m.shape, dtype=bool)
    mask[np.arange(m.shape[0]), ti] = True
    return m[mask], m[~mask]


def lid_variant(dev_scores, dev_true_index, eval_scores, eval_true_index, *, calibration: str = "logistic",
                znorm: bool = True, p_target: float | None = None, threshold: float = 0.5) -> LIDVariant:
    """The LID chain with its choices exposed, calibrated on a development matrix (in memory).

    Parameters
    ----------
    dev_scores, eval_scores : array_like of shape (n_dev, N_dev), (n_probes, N)
        Score matrices (higher = more similar), finite.
    dev_true_index, eval_true_index : array_like of int
        True-speaker columns.
    calibration : {"logistic", "pav", "student_t"}
        See the module docstring; fitted on the development matrix's target entries (true speaker) against
        all its other entries.
    znorm : bool
        z-normalise every row first (sample std), as the LID definition does.
    p_target : float in (0, 1), optional
        Prior weighting of the logistic fit (only with ``calibration="logistic"``).
    threshold : float
        Of :func:`confident_misidentification`.

    Returns
    -------
    LIDVariant

    Raises
    ------
    InvalidScoresError
        Bad shapes or values, ``p_target`` with a calibration other than logistic, unknown calibration.
    SeparableScoresError
        Logistic calibration on separable development scores (no finite slope).

    Notes
    -----
    With ``calibration="logistic"``, ``znorm=True`` and ``p_target=None`` the LIDs equal those of
    :func:`vpeval.metrics.linkage.lid_pipeline` with the same development matrix (to the fit's tolerance):
    the same chain, without its streaming machinery. Depends on neither the order of the rows nor of the
    columns (given the true indices).
    """
    from ...calibration.logistic import LogisticCalibrator
    from ...calibration.registry import make_calibrator

    if calibration not in CALIBRATIONS:
        raise InvalidScoresError(f"calibration must be one of {', '.join(CALIBRATIONS)}, got {calibration!r}")
    if p_target is not None and calibration != "logistic":
        raise InvalidScoresError("p_target applies to the logistic calibration only")
    if p_target is not None and not (0.0 < float(p_target) < 1.0 and math.isfinite(float(p_target))):
        raise InvalidScoresError(f"p_target must be in (0, 1), got {p_target!r}")
    dv = np.asarray(dev_scores, dtype=np.float64)
    ev = np.asarray(eval_scores, dtype=np.float64)
    for name, m in (("dev_scores", dv), ("eval_scores", ev)):
        if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 2 or not np.isfinite(m).all():
            raise InvalidScoresError(f"{name}: expected a finite 2-D matrix with at least 2 columns")
    dti, eti = np.asarray(dev_true_index, dtype=np.int64), np.asarray(eval_true_index, dtype=np.int64)
    for name, t, m in (("dev_true_index", dti, dv), ("eval_true_index", eti, ev)):
        if t.shape != (m.shape[0],) or (t < 0).any() or (t >= m.shape[1]).any():
            raise InvalidScoresError(f"{name}: one column index per row expected")
    if znorm:
        dv, ev = znorm_rows(dv), znorm_rows(ev)
    tar, non = _target_split(dv, dti)
    cal = LogisticCalibrator(p_target=p_target) if calibration == "logistic" else make_calibrator(
        CALIBRATIONS[calibration])
    cal.fit(tar, non)
    llr = cal.transform(ev.ravel()).reshape(ev.shape)
    values = lid(llr, eti)
    return LIDVariant(calibration, bool(znorm), None if p_target is None else float(p_target), values,
                      lid_summary(values, ev.shape[1]), confident_misidentification(llr, eti, threshold))
