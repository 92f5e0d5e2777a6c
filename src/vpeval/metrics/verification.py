"""Speaker-verification metrics over target (``tar``) and non-target (``non``) scores.

Conventions shared by every function here
-----------------------------------------
* **Decision rule**: a trial is accepted as target iff ``score >= t``. Hence
  ``pmiss(t) = #{tar < t} / Nt`` and ``pfa(t) = #{non >= t} / Nn``.
* **Thresholds** are every distinct score and ``+inf``; ``-inf`` gives the same operating point as the lowest
  score (pmiss 0, pfa 1). A block of tied scores is never split, so no result depends on the order of the
  input trials.
* **Scores** are float64, higher means "more likely target". ``+-inf`` scores are allowed; NaN or empty
  arrays raise :class:`~vpeval.errors.InvalidScoresError`.
* **Units**: error rates and DCFs are fractions in [0, 1] (not percent); Cllr in bits; LLRs in nats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._checks import as_real, as_tar_non
from .._docs import fill_doc
from ..errors import InvalidScoresError
from ..blocks import TieBlocks, bin_llr, operating_points, pav_bins, sorted_pair, tie_blocks
from .linkability_bins import (  # noqa: F401  (re-exported)
    LINKABILITY_MIN_PER_BIN, LINKABILITY_WARNING, default_linkability_bins, linkability_caveat, warn_small_linkability,
)

__all__ = [
    "DETCurve",
    "det_curve",
    "eer",
    "rocch_eer",
    "interp_eer",
    "closest_eer",
    "closest_eer_exact",
    "rocch",
    "min_dcf",
    "act_dcf",
    "cllr",
    "min_cllr",
    "linkability",
    "linkability_caveat",
    "LINKABILITY_MIN_PER_BIN",
]

_LN2 = math.log(2.0)


@dataclass(frozen=True)
class DETCurve:
    """Operating points of a detector, ordered by increasing threshold.

    Attributes
    ----------
    pmiss, pfa : ndarray of shape (m + 1,)
        Miss and false-alarm rates (fractions) at each threshold.
    thresholds : ndarray of shape (m + 1,)
        The ``m`` distinct scores ascending, then the label of the reject-all point (1, 0). Every label
        reproduces its point under the decision rule "accept iff score >= t":
        ``pmiss[i] = mean(tar < thresholds[i])``, ``pfa[i] = mean(non >= thresholds[i])``. The reject-all
        label is ``+inf`` when no score is ``+inf``; when a score is ``+inf`` no float threshold rejects it
        (``inf >= inf``), so that label is NaN, meaning "above every score" (``+inf`` appears once, as the
        threshold of the scores equal to ``+inf``).
    """

    pmiss: np.ndarray
    pfa: np.ndarray
    thresholds: np.ndarray


@fill_doc
def det_curve(tar, non) -> DETCurve:
    """Miss and false-alarm rates at every distinct threshold (the step DET curve).

    {parameters_tar_non}

    Returns
    -------
    DETCurve
        ``pmiss`` non-decreasing, ``pfa`` non-increasing, from (0, 1) at the lowest score to (1, 0) at
        ``+inf`` (NaN, "above every score", when a score is ``+inf``: see :class:`DETCurve`). Tied scores form
        one threshold.

    {raises_empty_nan}

    Notes
    -----
    Martin et al., "The DET curve in assessment of detection task performance", Eurospeech 1997. Plot on
    probit axes with :class:`vpeval.plots.DETDisplay`.

    Examples
    --------
    >>> c = det_curve([0.6, 0.8], [0.2, 0.6])
    >>> c.pmiss.tolist(), c.pfa.tolist()
    ([0.0, 0.0, 0.5, 1.0], [1.0, 0.5, 0.0, 0.0])
    """
    b = tie_blocks(tar, non)
    pmiss, pfa = operating_points(b)
    reject_all = np.nan if b.values[-1] == np.inf else np.inf  # see DETCurve.thresholds
    return DETCurve(pmiss, pfa, np.concatenate([b.values, [reject_all]]))


_CHUNK = 1 << 18  # elements per temporary in the scans below (bounded memory at any number of trials)


def _interp_eer(pmiss: np.ndarray, pfa: np.ndarray) -> float:
    # Points go from (pmiss 0, pfa 1) to (1, 0); d = pmiss - pfa rises from -1 to +1. The first j with
    # d >= 0 is found chunk by chunk, so no full-length temporary is made.
    j = pmiss.size - 1
    for i in range(0, pmiss.size, _CHUNK):
        hit = pmiss[i:i + _CHUNK] - pfa[i:i + _CHUNK] >= 0
        if hit.any():
            j = i + int(np.argmax(hit))
            break
    dj = pmiss[j] - pfa[j]
    if dj == 0:
        return float(pmiss[j])
    dp = pmiss[j - 1] - pfa[j - 1]
    lam = -dp / (dj - dp)
    return float(pmiss[j - 1] + lam * (pmiss[j] - pmiss[j - 1]))


@fill_doc
def interp_eer(tar, non) -> float:
    """Interpolated step-curve EER: where the straight-line-joined DET operating points cross pfa = pmiss.

    {parameters_tar_non}

    Returns
    -------
    float
        EER as a fraction in [0, 1]. It can exceed 0.5 when scores are reversed (worse than chance); the
        scores are never flipped automatically.

    Notes
    -----
    The operating points of :func:`det_curve` (one per distinct score, plus ``+inf``) are joined by straight
    lines in (pfa, pmiss) space and the crossing with the diagonal is returned. Where an operating point lies
    on the diagonal it is returned exactly. Ties are one point. This differs from the common "closest point,
    mean of pmiss and pfa" EER and from :func:`rocch_eer`.

    Examples
    --------
    >>> interp_eer([0.1, 0.2], [0.8, 0.9])
    1.0
    """
    b = tie_blocks(tar, non)
    return _interp_eer(*operating_points(b))


def _closest_eer(b: TieBlocks, chunk: int = 1 << 16, exact: bool = False) -> float:
    # Over the block operating points, pmiss - pfa rises strictly from -1 to +1 (every block holds a trial).
    # exact=False (the scripts' arithmetic): pmiss = miss / Nt and pfa = fa / Nn as float64, the distance
    # |pmiss - pfa| compared as the float it rounds to, the first smallest kept (numpy.argmin), the value
    # (pmiss + pfa) / 2 in float64 (numpy.mean of the two). exact=True: the distance compared exactly, in
    # integers |miss Nn - fa Nt|, so of two equally close points the first (lower threshold) is kept. The
    # points are visited in chunks of blocks (memory O(chunk)); a chunk starts with the last point before.
    nt, nn = b.total_tar, b.total_non
    wide = nt * nn >= 2**62  # beyond int64: Python integers
    best_gap, best = None, (0, nn)
    miss0, fa0 = 0, nn
    for start in range(0, max(b.n_tar.size, 1), chunk):
        miss = np.concatenate([[miss0], miss0 + np.cumsum(b.n_tar[start:start + chunk], dtype=np.int64)])
        fa = np.concatenate([[fa0], fa0 - np.cumsum(b.n_non[start:start + chunk], dtype=np.int64)])
        if not exact:
            gap = np.abs(miss / nt - fa / nn)
        elif wide:
            gap = np.abs(miss.astype(object) * nn - fa.astype(object) * nt)
        else:
            gap = np.abs(miss * nn - fa * nt)
        j = int(np.argmin(gap))
        if best_gap is None or gap[j] < best_gap:
            best_gap, best = gap[j], (int(miss[j]), int(fa[j]))
        miss0, fa0 = int(miss[-1]), int(fa[-1])
    if exact:
        return (best[0] * nn + best[1] * nt) / (2 * nt * nn)
    return float(np.mean([best[0] / nt, best[1] / nn]))


@fill_doc
def closest_eer(tar, non) -> float:
    """Closest-point EER as the ASVspoof / VoicePrivacy scripts compute it (float64 arithmetic).

    {parameters_tar_non}

    Returns
    -------
    float
        EER as a fraction in [0, 1] (reversed scores can give more than 0.5; they are never flipped).

    {raises_empty_nan}

    See Also
    --------
    closest_eer_exact : the same rule with the distances compared exactly.

    Notes
    -----
    The EER printed by the ASVspoof 2019 ``compute_eer`` (``eval_metrics.py``) and by the VoicePrivacy
    Challenge evaluation scripts that reuse it: over the operating points, ``pmiss = miss / N_tar`` and
    ``pfa = fa / N_non`` as float64, take the first point (lowest threshold, ``numpy.argmin``) with the
    smallest ``|pmiss - pfa|`` *as rounded to float64*, and return ``numpy.mean((pmiss, pfa))``. The
    rounded comparison is what the scripts do: of two points at the same exact distance, one on each side of
    the diagonal, rounding can make either look closer (``|1/3 - 1/2|`` rounds to 0.16666666666666669,
    ``|2/3 - 1/2|`` to 0.16666666666666663), so this function follows the scripts there, and
    :func:`closest_eer_exact` keeps the first of the exactly equally close points (on small tie-free inputs
    the two differ on about 4 % of cases).

    **Ties.** Here the operating points are those of :func:`det_curve`: one per *block* of tied scores (and
    ``+inf``), with the decision rule ``score >= t``. The scripts instead place one operating point after
    *every trial* of the sorted list, so a block of tied target and non-target scores is split into partial
    points whose values depend on the order of the tied trials (a stable sort after concatenating targets
    before non-targets). With no ties between scores the two agree exactly (the same float operations on the
    same points); with ties the scripts can land on a point inside a block, which no threshold realises, and
    which changes with the input order; this estimator never does.

    Examples
    --------
    >>> closest_eer([0.6, 0.8], [0.2, 0.7])
    0.5
    >>> closest_eer([0.5, 0.5], [0.5, 0.5])
    0.5
    >>> closest_eer([1, 2, 3], [0, 2.5])  # (1/3, 1/2), (2/3, 1/2) equally close; rounding favours the second
    0.5833333333333333
    """
    return _closest_eer(tie_blocks(tar, non))


@fill_doc
def closest_eer_exact(tar, non) -> float:
    """Closest-point EER with exact arithmetic: the rule of :func:`closest_eer` without the scripts' rounding.

    {parameters_tar_non}

    Returns
    -------
    float
        ``(pmiss + pfa) / 2`` at the block operating point with the smallest ``|pmiss - pfa|``, compared
        exactly (in integers ``|miss N_non - fa N_tar|``); of two equally close points (one on each side of the
        diagonal) the one with the lower threshold. The value is the exact fraction rounded once.

    {raises_empty_nan}

    Notes
    -----
    Differs from :func:`closest_eer` (and from the ASVspoof / VoicePrivacy scripts) only where two points are
    equally close and float rounding of their distances picks the second one.

    Examples
    --------
    >>> closest_eer_exact([1, 2, 3], [0, 2.5])  # (1/3, 1/2) and (2/3, 1/2) equally close: the lower threshold
    0.4166666666666667
    """
    return _closest_eer(tie_blocks(tar, non), exact=True)


def _rocch_points(b: TieBlocks, bins=None) -> tuple[np.ndarray, np.ndarray]:
    bins = pav_bins(b.n_tar, b.n_non) if bins is None else bins
    nt, nn = b.total_tar, b.total_non
    miss = np.concatenate([[0], np.cumsum(bins.n_tar)])
    fa = nn - np.concatenate([[0], np.cumsum(bins.n_non)])
    return miss / nt, fa / nn


def _rocch_eer(pmiss: np.ndarray, pfa: np.ndarray) -> float:
    # The hull vertices run from (pmiss 0, pfa 1) to (1, 0) and the hull is convex, so the EER is the crossing
    # of the hull with pmiss = pfa, found on the first segment where pmiss - pfa becomes >= 0.
    return _interp_eer(pmiss, pfa)


def rocch(tar, non) -> tuple[np.ndarray, np.ndarray]:
    """Vertices of the ROC convex hull (ROCCH), as (pmiss, pfa) ordered by increasing threshold.

    Parameters
    ----------
    tar, non : array_like
        Target and non-target scores.

    Returns
    -------
    pmiss, pfa : ndarray of shape (k + 1,)
        One vertex at the lower edge of each of the ``k`` PAV bins, then (1, 0).

    Notes
    -----
    The vertices of the ROCCH are the bin edges of the pool-adjacent-violators fit of the labels ordered by
    score (Fawcett & Niculescu-Mizil, "PAV and the ROC convex hull", Machine Learning 68, 2007; Brummer & du
    Preez, BOSARIS toolkit, 2011). Tied scores form one block before PAV, so the hull runs straight through a
    block of mixed labels.
    """
    return _rocch_points(tie_blocks(tar, non))


@fill_doc
def rocch_eer(tar, non) -> float:
    """ROCCH-EER: the equal error rate of the ROC convex hull (BOSARIS definition).

    {parameters_tar_non}

    Returns
    -------
    float
        EER as a fraction in [0, 0.5]. It never exceeds 0.5: the hull always contains the chance diagonal
        (random guessing), so reversed scores give 0.5, not more.

    {raises_empty_nan}

    Notes
    -----
    Brummer & de Villiers, "The BOSARIS toolkit", 2011 (``rocch2eer``); also Brummer & du Preez, Computer
    Speech and Language 20, 2006. The hull is obtained by PAV (see :func:`rocch`); the EER is where the hull
    crosses pmiss = pfa. Invariant under strictly increasing score transforms and trial order. This is the
    default EER of vpeval reports.

    Examples
    --------
    >>> rocch_eer([0.1, 0.2], [0.8, 0.9])
    0.5
    >>> rocch_eer([1, 1, 1, 1], [1, 1, 1, 1])
    0.5
    """
    return _rocch_eer(*rocch(tar, non))


@fill_doc
def eer(tar, non, method: str = "rocch") -> float:
    """Equal error rate, with the definition named.

    {parameters_tar_non}
    method : {"rocch", "interp", "closest", "closest-exact"}
        ``"rocch"``: :func:`rocch_eer` (BOSARIS ROC convex hull; default, <= 0.5).
        ``"interp"``: :func:`interp_eer` (crossing of the straight-line-joined step DET points; may exceed
        0.5).
        ``"closest"``: :func:`closest_eer` (mean of pmiss and pfa at the operating point where they are
        closest, the ASVspoof / VoicePrivacy scripts' EER and float arithmetic, with tied scores kept as
        blocks; may exceed 0.5). ``"closest-exact"``: :func:`closest_eer_exact` (the same, distances compared
        exactly).

    Returns
    -------
    float
        Fraction in [0, 1].

    Raises
    ------
    InvalidScoresError
        Empty arrays, NaN, or an unknown ``method``.

    Examples
    --------
    >>> eer([0.6, 0.7, 0.8], [0.1, 0.2, 0.3]), eer([0.6, 0.7, 0.8], [0.1, 0.2, 0.3], method="interp")
    (0.0, 0.0)
    """
    if method == "rocch":
        return rocch_eer(tar, non)
    if method == "interp":
        return interp_eer(tar, non)
    if method == "closest":
        return closest_eer(tar, non)
    if method == "closest-exact":
        return closest_eer_exact(tar, non)
    raise InvalidScoresError(f"method must be 'rocch', 'interp', 'closest' or 'closest-exact', got {method!r}")


def _check_costs(p_target, c_miss, c_fa) -> tuple[float, float, float]:
    return (as_real(p_target, "p_target", low=0.0, high=1.0), as_real(c_miss, "c_miss", low=0.0),
            as_real(c_fa, "c_fa", low=0.0))


def _log_weights(p_target, c_miss, c_fa) -> tuple[float, float]:
    """``(ln(c_miss p), ln(c_fa (1 - p)))`` without forming the products, which underflow or overflow for a
    prior near the smallest double or costs near 1e+-300."""
    return (math.log(c_miss) + math.log(p_target), math.log(c_fa) + math.log1p(-p_target))


def _normalised_dcf(pmiss, pfa, p_target, c_miss, c_fa):
    """``(a pmiss + b pfa) / min(a, b)`` with ``a = c_miss p``, ``b = c_fa (1 - p)``, as ``pmiss + (b/a) pfa`` or
    ``(a/b) pmiss + pfa``: only the ratio of the weights enters, computed from logs (no under/overflow for any
    representable prior and costs; a zero rate times an infinite ratio counts 0)."""
    la, lb = _log_weights(p_target, c_miss, c_fa)
    pmiss, pfa = np.asarray(pmiss, dtype=np.float64), np.asarray(pfa, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        if la <= lb:
            r = math.exp(lb - la) if lb - la < 709.0 else math.inf
            return pmiss + np.where(pfa > 0, r * pfa, 0.0)
        r = math.exp(la - lb) if la - lb < 709.0 else math.inf
        return np.where(pmiss > 0, r * pmiss, 0.0) + pfa


def _min_normalised_dcf(pmiss, pfa, p_target, c_miss, c_fa) -> float:
    """``min(_normalised_dcf(...))`` computed chunk by chunk (the same numbers, bounded temporaries)."""
    return float(min(np.min(_normalised_dcf(pmiss[i:i + _CHUNK], pfa[i:i + _CHUNK], p_target, c_miss, c_fa))
                     for i in range(0, pmiss.size, _CHUNK)))


def min_dcf(tar, non, p_target: float, c_miss: float = 1.0, c_fa: float = 1.0) -> float:
    """Minimum normalised detection cost over all thresholds.

    Parameters
    ----------
    tar, non : array_like of shape (n_tar,), (n_non,)
        Target and non-target scores (any scale; only their order matters).
    p_target : float in (0, 1)
        Prior probability of a target trial.
    c_miss, c_fa : float > 0
        Costs of a miss and of a false alarm.

    Returns
    -------
    float
        ``min_t [c_miss p pmiss(t) + c_fa (1-p) pfa(t)] / min(c_miss p, c_fa (1-p))``, in [0, 1]. Both trivial
        operating points (accept all, reject all) are thresholds, so the value never exceeds 1.

    Raises
    ------
    InvalidScoresError
        Empty arrays, NaN, ``p_target`` outside (0, 1), non-positive costs.

    Notes
    -----
    NIST SRE evaluation plans (e.g. SRE 2008, Eq. 1) with the normalisation of Brummer & du Preez (2006),
    Sec. 2. Tied scores are one threshold. Invariant under strictly increasing score transforms.

    Examples
    --------
    >>> min_dcf([0.5, 0.5], [0.5, 0.5], p_target=0.05)
    1.0
    """
    p_target, c_miss, c_fa = _check_costs(p_target, c_miss, c_fa)
    pmiss, pfa = operating_points(tie_blocks(tar, non))
    return _min_normalised_dcf(pmiss, pfa, p_target, c_miss, c_fa)


def act_dcf(tar_llr, non_llr, p_target: float, c_miss: float = 1.0, c_fa: float = 1.0) -> float:
    """Actual normalised detection cost of LLRs at the Bayes threshold.

    Parameters
    ----------
    tar_llr, non_llr : array_like
        Natural-log likelihood ratios (nats) of target and non-target trials.
    p_target, c_miss, c_fa : float
        As in :func:`min_dcf`.

    Returns
    -------
    float
        Normalised DCF at threshold ``eta = ln(c_fa (1 - p) / (c_miss p))``; a trial is accepted iff
        ``llr >= eta``. Can exceed 1 for badly calibrated LLRs.

    Raises
    ------
    InvalidScoresError
        Empty arrays, NaN, bad ``p_target`` or costs.

    Notes
    -----
    Brummer & du Preez (2006), Sec. 2.4: with calibrated LLRs the Bayes decision is ``llr >= eta``.
    actDCF - minDCF is the calibration loss at that operating point.

    Examples
    --------
    >>> act_dcf([2.0, -1.0], [-2.0, 0.5], p_target=0.5)
    1.0
    """
    p_target, c_miss, c_fa = _check_costs(p_target, c_miss, c_fa)
    tar_llr, non_llr = as_tar_non(tar_llr, non_llr)
    la, lb = _log_weights(p_target, c_miss, c_fa)
    eta = lb - la
    pmiss = float(np.mean(tar_llr < eta))
    pfa = float(np.mean(non_llr >= eta))
    return float(_normalised_dcf(pmiss, pfa, p_target, c_miss, c_fa))


@fill_doc
def cllr(tar_llr, non_llr) -> float:
    """Log-likelihood-ratio cost Cllr, in bits.

    Parameters
    ----------
    tar_llr, non_llr : array_like of shape (n_tar,), (n_non,)
        Natural-log likelihood ratios (nats). ``+-inf`` allowed.

    Returns
    -------
    float
        ``Cllr = 1/(2 ln 2) [mean softplus(-tar_llr) + mean softplus(non_llr)]`` bits, with
        ``softplus(x) = ln(1 + e^x)`` computed stably (``logaddexp(0, x)``). 0 for perfect, 1 for LLRs that
        are all 0, ``inf`` when a target has ``llr = -inf`` or a non-target ``+inf``.

    {raises_empty_nan}

    Notes
    -----
    Brummer & du Preez, "Application-independent evaluation of speaker detection", Computer Speech and
    Language 20 (2006), Eq. 32 (equal-prior cross entropy). Each mean is summed over the LLRs in ascending order
    (:func:`vpeval.blocks.sorted_pair`: no sort when they come sorted), so the value does not depend on the order
    of the trials, to the last bit; O(n log n) time.

    Examples
    --------
    >>> round(cllr([np.inf, 2.0], [-np.inf, -1.0]), 12)
    0.158764873791
    >>> cllr([0.0], [0.0])
    1.0
    """
    # sorted: numpy's pairwise sum depends on the order of its terms in the last bits
    tar_llr, non_llr = sorted_pair(*as_tar_non(tar_llr, non_llr))
    c_tar = float(np.mean(np.logaddexp(0.0, -tar_llr)))
    c_non = float(np.mean(np.logaddexp(0.0, non_llr)))
    return (c_tar + c_non) / (2.0 * _LN2)


def _min_cllr(b: TieBlocks, bins=None) -> float:
    bins = pav_bins(b.n_tar, b.n_non) if bins is None else bins
    llr = bin_llr(bins.n_tar, bins.n_non, b.total_tar, b.total_non)
    # Bins where a class is absent have llr = -+inf for the other class, contributing exactly 0.
    with np.errstate(invalid="ignore"):
        c_tar = np.where(bins.n_tar > 0, bins.n_tar * np.logaddexp(0.0, -llr), 0.0).sum() / b.total_tar
        c_non = np.where(bins.n_non > 0, bins.n_non * np.logaddexp(0.0, llr), 0.0).sum() / b.total_non
    return float((c_tar + c_non) / (2.0 * _LN2))


def min_cllr(tar, non) -> float:
    """Minimum Cllr: Cllr after optimal monotonic (PAV) calibration, in bits.

    Parameters
    ----------
    tar, non : array_like
        Target and non-target scores (any scale).

    Returns
    -------
    float
        ``cllr(*pav_llr(tar, non))`` in [0, 1] bits: 0 for separable scores, 1 when PAV finds no
        information.

    Notes
    -----
    Brummer & du Preez (2006), Sec. 4.4. PAV pools tied scores first (see :func:`vpeval.pav_llr`); no
    tie-breaking ramp is added. Toolkits that add a small monotonicity ramp (1e-6 / n per rank, as
    ``anonymization_metrics``) report values that differ from this in about the ninth decimal.
    Invariant under strictly increasing transforms and trial order.

    Examples
    --------
    >>> round(min_cllr([0.3, 0.5, 0.9], [0.1, 0.5, 0.5]), 12)
    0.666666666667
    """
    return _min_cllr(tie_blocks(tar, non))


def linkability(tar, non, omega: float = 1.0, n_bins: int | None = None) -> float:
    """Global linkability ``D<->sys`` of Gomez-Barrero et al., in [0, 1].

    Parameters
    ----------
    tar, non : array_like
        Mated (same speaker) and non-mated scores.
    omega : float > 0
        Prior ratio P(mated) / P(non-mated).
    n_bins : int, optional
        Number of equal-width histogram bins spanning [min, max] of all scores. Default
        ``max(10, min(n_tar // 10, 100))``: the rule of the ``anonymization_metrics`` toolkit
        (``min(n_tar // 10, 100)``) where it gives at least 10 bins, i.e. from 100 target trials on. Below that
        the toolkit's rule degenerates (no bin below 10 targets; one bin below 20, whose single-centre
        trapezoid is always 0, even for perfectly separated scores), so vpeval keeps 10 bins.

    Returns
    -------
    float
        ``D<->sys = integral p(s|mated) D<->(s) ds`` with ``D<->(s) = 2 omega LR(s)/(1 + omega LR(s)) - 1`` where
        ``omega LR(s) > 1`` and 0 elsewhere; ``D<->(s) = 1`` in bins with mated but no non-mated scores.

    Raises
    ------
    InvalidScoresError
        Empty arrays, NaN or inf scores, ``omega`` not a finite number > 0, ``n_bins`` not an integer >= 1.

    Notes
    -----
    Gomez-Barrero et al., "General framework to evaluate unlinkability in biometric template protection
    systems", IEEE TIFS 13(6), 2018, Eqs. 5-7. The densities are normalised histograms and the integral is
    the trapezoid rule over the bin centres, which is the discretisation of the published reference
    implementation (Maouche et al., Interspeech 2020) whose numbers we reproduce. Being a histogram
    estimate, it is *not* invariant under monotonic transforms of the scores; it is invariant to trial
    order. Bin ``i`` holds the scores ``e_i <= s < e_(i+1)``, the last bin also ``s = max``, with the float64
    edges ``e = numpy.linspace(min, max, n_bins + 1)`` of ``numpy.histogram`` (a score on an interior edge
    goes to the bin above it). If all scores are equal, or their range is too narrow for ``n_bins`` distinct float64 bin edges,
    the value is 0. With few bins the trapezoid over the centres leaves out
    half of the two end bins, so even perfectly separated scores can read below 1 (0.5 with 2 bins).

    **Small samples.** The histogram estimate is biased upwards: bins with few trials give noisy likelihood ratios,
    and ``D<->(s)`` keeps only their excess above 1. Its mean over *uninformative* scores (both classes ``N(0,
    1)``, true value 0), default bins, 400 draws each (``python benchmarks/linkability_bias.py --runs 400``;
    18 configurations there):

    ======  ==========  ====  ============  ====================
    target  non-target  bins  trials / bin  mean (95 % interval)
    ======  ==========  ====  ============  ====================
    1       100         10    0.1           0.734 (0.723-0.745)
    10      1,000       10    1             0.210 (0.203-0.217)
    100     1,000       10    10            0.061 (0.059-0.063)
    1,000   1,000       100   10            0.094 (0.094-0.095)
    1,000   30,000      100   10            0.058 (0.057-0.058)
    2,000   2,000       100   20            0.062 (0.061-0.063)
    2,500   2,500       100   25            0.054 (0.053-0.054)
    3,000   3,000       100   30            0.049 (0.048-0.049)
    10,000  10,000      100   100           0.024 (0.024-0.025)
    ======  ==========  ====  ============  ====================

    The bias follows the trials per bin of the sparser class, ``min(n_tar, n_non) / n_bins``, more than either
    count (equal counts are the worst case at a given value); it fell below 0.05 in every configuration measured
    from :data:`LINKABILITY_MIN_PER_BIN` = 30 on. Below that a :class:`~vpeval.errors.SmallSampleWarning` is
    issued (:func:`linkability_caveat`). With the default bins (at most 100) that needs at least 3,000 trials of
    each class; below 100 targets (10 bins) it is never met.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # 1 trial per bin: the small-sample caveat
    ...     linkability([1.0, 1.0], [0.0, 0.0], n_bins=2), linkability([0.0, 1.0], [0.0, 1.0], n_bins=2)
    (0.5, 0.0)
    """
    tar, non = as_tar_non(tar, non, allow_inf=False)
    omega = as_real(omega, "omega", low=0.0)
    if n_bins is None:
        n_bins = default_linkability_bins(tar.size)
    if isinstance(n_bins, (bool, np.bool_)) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
        raise InvalidScoresError(f"n_bins must be an integer >= 1, got {n_bins!r}")
    warn_small_linkability(tar.size, non.size, int(n_bins))
    return _linkability_core(*sorted_pair(tar, non), omega, int(n_bins))


def _linkability_core(st: np.ndarray, sn: np.ndarray, omega: float, n_bins: int) -> float:
    """Linkability from sorted finite scores; histogram counts by binary search on the bin edges."""
    lo, hi = min(st[0], sn[0]), max(st[-1], sn[-1])
    # The edges of numpy.histogram(range=(lo, hi)) in the scores' own units, so that a score on an edge
    # falls in the bin the definition (and the reference implementation) puts it in: dividing the scores by
    # a scale first moves computed edges by an ulp (0.3 vs 3 * 0.1) and sends edge scores to the bin below.
    with np.errstate(over="ignore", invalid="ignore"):
        edges = np.linspace(lo, hi, n_bins + 1)
    if not np.all(np.isfinite(edges)) or 0 < hi - lo < 1e-250 or hi - lo > 1e250:
        # hi - lo overflows near the float64 limits, or is so small that the densities count / (n width)
        # would overflow, or so large that n width overflows (densities 0, a pure-target bin everywhere):
        # scale to [-1, 1] (the statistic is invariant to a positive scale; only scores within an ulp of an
        # edge may then change bins)
        scale = max(abs(lo), abs(hi))
        st, sn, lo, hi = st / scale, sn / scale, lo / scale, hi / scale
        edges = np.linspace(lo, hi, n_bins + 1)
    if not np.all(np.diff(edges) > 0):
        # all scores equal, or a range too narrow for n_bins distinct float64 edges: no bin can separate
        # the classes, so nothing is linkable
        return 0.0
    centres = (edges[1:] + edges[:-1]) / 2
    width = np.diff(edges)

    def density(x):
        # bins [e_i, e_i+1), the last one closed, as numpy.histogram
        cum = np.searchsorted(x, edges, side="left")
        cum[-1] = x.size
        return np.diff(cum) / (x.size * width)

    y_tar, y_non = density(st), density(sn)
    olr = np.divide(omega * y_tar, y_non, out=np.full_like(y_tar, omega), where=y_non != 0)
    d = np.where(olr > 1, 2 * olr / (1 + olr) - 1, 0.0)
    d[(y_non == 0) & (y_tar != 0)] = 1.0
    return float(np.trapezoid(d * y_tar, centres))
