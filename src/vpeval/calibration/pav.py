"""Pool-adjacent-violators (PAV) calibration: the optimal monotonic score -> LLR map.

Sources: Zadrozny & Elkan (KDD 2002) for PAV calibration; Brummer & du Preez, Computer Speech and Language
20 (2006), Sec. 4.4 (PAV LLRs and minCllr); Nautsch et al., "The privacy ZEBRA", Interspeech 2020, Sec. 3
(Laplace's rule at the end points).
"""

from __future__ import annotations

import numpy as np

from .._checks import as_tar_non
from .._docs import fill_doc
from ..blocks import pav_block_llr, pav_trial_llrs, tie_blocks
from .base import ScoreCalibrator

__all__ = ["pav_llr", "PAVCalibrator"]


@fill_doc
def pav_llr(tar, non, laplace: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """PAV LLRs (nats) of every target and non-target trial.

    Parameters
    ----------
    tar, non : array_like of shape (n_tar,), (n_non,)
        Target and non-target scores (any scale; higher = more target-like).
    laplace : bool, default False
        Laplace smoothing in the privacy-ZEBRA convention: one pseudo-target and one pseudo-non-target
        below the lowest score and again above the highest, then PAV, then the pseudo-trials are dropped.

    Returns
    -------
    tar_llr, non_llr : ndarray of shape (n_tar,), (n_non,)
        ``LLR = logit(P) - ln(Nt / Nn)`` where ``P`` is the PAV posterior of the trial's bin and ``Nt``,
        ``Nn`` are the real (not pseudo) counts. Without smoothing, bins holding one class only give
        ``+-inf``; with smoothing every LLR is finite.

    {raises_empty_nan}

    Notes
    -----
    Tied scores are pooled into one block before PAV, so tied trials share one LLR whatever their labels or
    input order. No tie-breaking ramp is added (privacy-ZEBRA's tag ``0`` must stay reachable). Duplicating
    every trial leaves the plain PAV LLRs unchanged; the Laplace LLRs change, because the two pseudo-trial
    pairs weigh less against doubled counts.

    Examples
    --------
    >>> t, n = pav_llr([0.3, 0.5, 0.9], [0.1, 0.5, 0.5], laplace=True)
    >>> np.round(t / np.log(2), 12).tolist(), np.round(n / np.log(2), 12).tolist()
    ([0.0, 0.0, 1.0], [-1.0, 0.0, 0.0])
    """
    tar, non = as_tar_non(tar, non)
    return pav_trial_llrs(tar, non, laplace)


class PAVCalibrator(ScoreCalibrator):
    """PAV calibration fitted on one set of scores and applied to any other.

    Parameters
    ----------
    laplace : bool, default False
        Laplace smoothing at the end points (see :func:`pav_llr`).

    Attributes
    ----------
    thresholds_ : ndarray of shape (k,)
        Lowest training score of each PAV bin, ascending.
    llr_ : ndarray of shape (k,)
        LLR (nats) of each bin; non-decreasing.

    Notes
    -----
    ``transform`` is the right-continuous step function of the fit: a score ``s`` gets the LLR of the bin
    with the largest threshold ``<= s``. Scores below the lowest training score take the first bin's LLR and
    scores above the highest the last bin's (constant extrapolation); scores between two bins take the lower
    bin's. On the training scores ``transform`` equals :func:`pav_llr`.

    Examples
    --------
    >>> cal = PAVCalibrator(laplace=True).fit([0.6, 0.7, 0.8], [0.1, 0.2, 0.3])
    >>> np.round(cal.transform([0.0, 0.45, 0.65, 9.0]) / np.log(4), 12).tolist()
    [-1.0, -1.0, 1.0, 1.0]
    """

    name = "pav"

    def __init__(self, laplace: bool = False):
        self.laplace = laplace

    def fit_blocks(self, blocks) -> "PAVCalibrator":
        """Fit on the tie blocks of the training scores: the same fit as ``fit(tar, non)``, without sorting and
        merging the scores again (a caller fitting both PAV variants on millions of scores merges them once).

        Parameters
        ----------
        blocks : vpeval.blocks.TieBlocks
            :func:`vpeval.blocks.tie_blocks` of validated ``tar``, ``non`` (``values`` ascending, shape (B,);
            ``n_tar``, ``n_non`` int64 counts of shape (B,), each class non-empty).

        Returns
        -------
        PAVCalibrator
            ``self``, fitted (``thresholds_``, ``llr_`` in nats, ``n_tar_``, ``n_non_``).
        """
        self._fit_blocks(blocks)
        self.n_tar_, self.n_non_ = blocks.total_tar, blocks.total_non
        return self

    def _fit(self, tar, non):
        self._fit_blocks(tie_blocks(tar, non))

    def _fit_blocks(self, b):
        block_llr = pav_block_llr(b, self.laplace)
        # Keep one threshold per run of equal LLR (the PAV bins as seen from the real blocks).
        keep = np.concatenate([[True], block_llr[1:] != block_llr[:-1]])
        self.thresholds_ = b.values[keep]
        self.llr_ = block_llr[keep]
        self.name = "pav_laplace" if self.laplace else "pav"

    def _transform(self, scores):
        idx = np.searchsorted(self.thresholds_, scores, side="right") - 1
        return self.llr_[np.clip(idx, 0, None)]
