"""PAV with the per-bin rule of succession ``(M_tar + 1) / (M + 2)``: a second smoothing convention.

The worst-case paper writes Laplace smoothing of PAV as the rule of succession applied inside every PAV bin:
a bin holding ``M_tar`` targets among ``M`` trials gets the posterior ``(M_tar + 1) / (M + 2)`` instead of
``M_tar / M``.  vpeval's default Laplace smoothing (:func:`vpeval.calibration.pav_llr` with
``laplace=True``) is the privacy-ZEBRA convention instead (pseudo-trials at the two end points, then PAV).
The two differ (issue example: targets ``[0.0]``, non-targets ``[0.3, -0.2, 0.05, 0.175, 0.175]`` give
eps_max ``ln(5/3)`` with end-point pseudo-trials and ``ln(5/2)`` with the per-bin rule), so this one has its
own name, ``pav_succession``, wherever it is reported.
"""

from __future__ import annotations

import numpy as np

from .._checks import as_tar_non
from .._docs import fill_doc
from ..blocks import pav_bins, tie_blocks
from .base import ScoreCalibrator

__all__ = ["pav_llr_succession", "PAVSuccessionCalibrator"]


def _succession_block_llr(b):
    """Per-tie-block LLR (nats) and the index of the first block of every PAV step."""
    bins = pav_bins(b.n_tar, b.n_non)
    t, n = bins.n_tar, bins.n_non
    # A PAV *step* is a maximal run of bins with the same posterior M_tar / M (exact integer comparison);
    # the isotonic solver may return adjacent blocks with equal fitted values separately.
    new = np.ones(t.size, dtype=bool)
    new[1:] = t[1:] * (t[:-1] + n[:-1]) != t[:-1] * (t[1:] + n[1:])
    first_bin = np.flatnonzero(new)
    mt = np.add.reduceat(t, first_bin).astype(np.float64)
    mn = np.add.reduceat(n, first_bin).astype(np.float64)
    llr = np.log(mt + 1) - np.log(mn + 1) - (np.log(b.total_tar) - np.log(b.total_non))
    step_start = bins.start[first_bin]
    sizes = np.diff(np.append(step_start, b.values.size))
    return np.repeat(llr, sizes), step_start, llr


@fill_doc
def pav_llr_succession(tar, non) -> tuple[np.ndarray, np.ndarray]:
    """PAV LLRs (nats) with the per-bin rule of succession (worst-case paper's smoothing convention).

    Plain PAV is fitted first (tied scores pooled into one block, as in :func:`vpeval.calibration.pav_llr`).
    Each PAV step (maximal run of equal posterior) with ``M_tar`` targets and ``M_non`` non-targets then gets
    the posterior ``(M_tar + 1) / (M_tar + M_non + 2)``, hence

    ``LLR = ln((M_tar + 1) / (M_non + 1)) - ln(N_tar / N_non)``

    with the real class counts ``N_tar``, ``N_non``.

    Parameters
    ----------
    tar, non : array_like of shape (n_tar,), (n_non,)
        Target and non-target scores (higher = more target-like; ``+-inf`` allowed, NaN not).

    Returns
    -------
    tar_llr, non_llr : ndarray of shape (n_tar,), (n_non,)
        Always finite.

    {raises_empty_nan}

    Notes
    -----
    Unlike plain PAV and the end-point Laplace convention, the result is **not monotone** in the score in
    general: a small step is pulled more toward 1/2 than a large one (issue example below: the lowest score
    gets the larger LLR).  It is invariant to trial order and to strictly increasing score transforms.
    Duplicating every trial changes it (the pseudo-counts weigh less).

    Examples
    --------
    >>> t, n = pav_llr_succession([0.0], [0.3, -0.2, 0.05, 0.175, 0.175])
    >>> np.round(t, 6).tolist(), np.round(n, 6).tolist()
    ([0.693147], [0.693147, 0.916291, 0.693147, 0.693147, 0.693147])
    """
    tar, non = as_tar_non(tar, non)
    b = tie_blocks(tar, non)
    block_llr, _, _ = _succession_block_llr(b)
    return block_llr[np.searchsorted(b.values, tar)], block_llr[np.searchsorted(b.values, non)]


class PAVSuccessionCalibrator(ScoreCalibrator):
    """PAV with the per-bin rule of succession, fitted on one set and applied to any scores.

    See :func:`pav_llr_succession` for the definition.  ``transform`` is the right-continuous step function
    of the fit, as for :class:`vpeval.calibration.PAVCalibrator`: a score takes the LLR of the step with the
    largest lower threshold ``<= score``; scores below the lowest training score take the first step's LLR.

    Attributes
    ----------
    thresholds_ : ndarray of shape (k,)
        Lowest training score of each PAV step, ascending.
    llr_ : ndarray of shape (k,)
        LLR (nats) of each step; finite, not necessarily monotone.

    Examples
    --------
    >>> cal = PAVSuccessionCalibrator().fit([0.2, 0.4, 0.6], [0.1, 0.3, 0.5])
    >>> np.round(cal.transform([0.0, 0.25, 0.55, 1.0]) / np.log(2), 12).tolist()
    [-1.0, 0.0, 0.0, 1.0]
    """

    name = "pav_succession"

    def _fit(self, tar, non):
        b = tie_blocks(tar, non)
        _, start, llr = _succession_block_llr(b)
        self.thresholds_ = b.values[start]
        self.llr_ = llr

    def _transform(self, scores):
        idx = np.searchsorted(self.thresholds_, scores, side="right") - 1
        return self.llr_[np.clip(idx, 0, None)]
