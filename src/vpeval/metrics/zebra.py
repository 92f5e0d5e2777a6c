"""privacy-ZEBRA: expected (D_ECE) and worst-case (eps_max) disclosure of an attacker's scores.

Source: Nautsch, Patino, Tomashenko, Yamagishi, Noe, Bonastre, Todisco, Evans, "The Privacy ZEBRA: Zero
Evidence Biometric Recognition Assessment", Interspeech 2020 (Eqs. 6-9, Table 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._checks import as_real, as_tar_non
from .._docs import fill_doc
from ..errors import InvalidScoresError
from ..blocks import bin_llr, pav_bin_llr, pav_block_llr, tie_blocks

__all__ = ["ZebraResult", "zebra", "zebra_tag", "d_ece", "ece_profile"]

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_EPS = float(np.finfo(np.float64).eps)

#: Upper (closed) bounds of the tags A..E in log10 units; above the last bound the tag is F.
TAG_BOUNDS_LOG10 = (("A", 1.0), ("B", 2.0), ("C", 4.0), ("D", 5.0), ("E", 6.0))


def zebra_tag(eps_max_log10: float) -> str:
    """privacy-ZEBRA categorical tag of a worst-case disclosure given in log10 units.

    Parameters
    ----------
    eps_max_log10 : float >= 0
        ``max |LLR|`` in log10 (bans).

    Returns
    -------
    str
        ``"0"`` for [0, machine epsilon] (perfect secrecy), ``"A"`` (eps, 1], ``"B"`` (1, 2], ``"C"`` (2, 4],
        ``"D"`` (4, 5], ``"E"`` (5, 6], ``"F"`` above 6 (including inf). Intervals are closed on the right.

    Raises
    ------
    InvalidScoresError
        Negative or NaN input.

    Notes
    -----
    Nautsch et al. (2020), Table 1 (verbal scale after ENFSI).

    Examples
    --------
    >>> [zebra_tag(x) for x in (0, 1e-20, 0.5, 1, 2, 6, float("inf"))]
    ['0', '0', 'A', 'A', 'B', 'E', 'F']
    """
    x = as_real(eps_max_log10, "eps_max_log10", low=0.0, open_low=False, finite=False)
    if x <= _EPS:
        return "0"
    for tag, upper in TAG_BOUNDS_LOG10:
        if x <= upper:
            return tag
    return "F"


def _expected_ece_tar_nats(llr: np.ndarray) -> np.ndarray:
    """``integral_0^1 P ln(1 + e^-llr (1-P)/P) dP`` (nats), elementwise, stable for all llr in [-inf, inf].

    With ``a = e^-llr`` the integral is ``(a - 1/4 - 3a^2/4 + (a^2/2) ln a) / (1 - a)^2 + 1/4``; for
    ``llr < 0`` the same is evaluated in ``b = 1/a`` and near ``llr = 0`` by its Taylor series.
    """
    x = np.asarray(llr, dtype=np.float64)
    out = np.empty_like(x)
    small = np.abs(x) < 0.05
    pos = (x >= 0.05) & np.isfinite(x)
    neg = (x <= -0.05) & np.isfinite(x)
    # llr -> +inf: 0; llr -> -inf: +inf.
    out[x == np.inf] = 0.0
    out[x == -np.inf] = np.inf
    a = np.exp(-x[pos])
    out[pos] = (a - 0.25 - 0.75 * a * a - 0.5 * a * a * x[pos]) / (1 - a) ** 2 + 0.25
    b = np.exp(x[neg])
    out[neg] = (-0.25 * b * b + b - 0.75 - 0.5 * x[neg]) / (1 - b) ** 2 + 0.25
    # Taylor series about llr = 0; the truncation error below |llr| = 0.05 is under 1e-15.
    s = x[small]
    coef = (1 / 4, -1 / 6, 1 / 24, -1 / 360, -1 / 1440, 1 / 10080, 1 / 60480, -1 / 302400)
    out[small] = np.polynomial.polynomial.polyval(s, coef)
    return out


def d_ece(tar, non, laplace: bool = False) -> float:
    """Expected disclosure D_ECE of the PAV-calibrated scores, in bits.

    Parameters
    ----------
    tar, non : array_like
        Target and non-target scores.
    laplace : bool, default False
        Use Laplace-smoothed PAV LLRs (see :func:`vpeval.pav_llr`) instead of plain PAV.

    Returns
    -------
    float
        ``D_ECE = integral_0^1 [H(P) - ECE(P)] dP`` bits, where ``H`` is the binary entropy (the ECE of an
        uninformative system) and ``ECE(P)`` the empirical cross entropy of the PAV LLRs at prior ``P``. 0 for
        uninformative scores; ``1/ln 4 = 0.7213`` bits at perfect separation (plain PAV).

    Notes
    -----
    Nautsch et al. (2020), Eq. 8, with the prior integrated uniformly over [0, 1] in closed form (no grid).
    Invariant under strictly increasing transforms and trial order.

    Examples
    --------
    >>> round(d_ece([0.6, 0.7, 0.8], [0.1, 0.2, 0.3]), 6), round(1 / math.log(4), 6)
    (0.721348, 0.721348)
    >>> d_ece([1, 1], [1, 1])
    0.0
    """
    tar, non = as_tar_non(tar, non)
    return d_ece_blocks(tie_blocks(tar, non), laplace)


def d_ece_bins(b, bins) -> float:
    """:func:`d_ece` (plain PAV) from tie blocks and their PAV bins: the LLR is constant on a bin."""
    llr = bin_llr(bins.n_tar, bins.n_non, b.total_tar, b.total_non)
    t, n = bins.n_tar > 0, bins.n_non > 0
    e_tar = np.dot(bins.n_tar[t], _expected_ece_tar_nats(llr[t])) / b.total_tar
    e_non = np.dot(bins.n_non[n], _expected_ece_tar_nats(-llr[n])) / b.total_non
    return float((0.5 - (e_tar + e_non)) / _LN2)


def d_ece_blocks(b, laplace: bool = False) -> float:
    """:func:`d_ece` of prepared tie blocks (internal building block of the summaries)."""
    block_llr = pav_block_llr(b, laplace)
    # integral_0^1 H(P) dP = 1/2 nats. A class absent from a block contributes nothing (its llr may be
    # infinite there).
    e_tar = np.dot(b.n_tar[b.n_tar > 0], _expected_ece_tar_nats(block_llr[b.n_tar > 0])) / b.total_tar
    e_non = np.dot(b.n_non[b.n_non > 0], _expected_ece_tar_nats(-block_llr[b.n_non > 0])) / b.total_non
    return float((0.5 - (e_tar + e_non)) / _LN2)


def ece_profile(tar_llr, non_llr, plo) -> np.ndarray:
    """Empirical cross entropy (bits) of LLRs at prior log-odds ``plo``.

    Parameters
    ----------
    tar_llr, non_llr : array_like
        LLRs in nats.
    plo : array_like of shape (k,)
        Prior log-odds ``logit(P)``.

    Returns
    -------
    ndarray of shape (k,)
        ``ECE = P mean log2(1 + e^-(llr+plo)) [targets] + (1-P) mean log2(1 + e^(llr+plo)) [non-targets]``.

    Notes
    -----
    Ramos & Gonzalez-Rodriguez, "Reliable support: measuring calibration of likelihood ratios", Forensic
    Science International 230 (2013), Eq. 3; plotted in privacy-ZEBRA (Nautsch et al. 2020, Fig. 1).
    """
    tar_llr, non_llr = as_tar_non(tar_llr, non_llr)
    plo = np.atleast_1d(np.asarray(plo, dtype=np.float64))
    if not np.isfinite(plo).all():
        raise InvalidScoresError("plo must be finite prior log-odds")
    # calibrated LLRs (PAV) take few distinct values: evaluate each distinct value once, weighted by its count
    # (1e7 PAV LLRs at 141 priors: 0.2 s instead of 25 s); equal to the plain means up to rounding
    return _ece_profile_weighted(*_distinct_weighted(tar_llr), *_distinct_weighted(non_llr), plo)


def _ece_profile_weighted(tv: np.ndarray, tw, nv: np.ndarray, nw, plo: np.ndarray) -> np.ndarray:
    """:func:`ece_profile` of the LLR values ``tv``/``nv`` (nats) counted ``tw``/``nw`` times (float64 counts,
    or None for once each) at the finite prior log-odds ``plo`` (float64, shape (k,))."""
    p = 1.0 / (1.0 + np.exp(-plo))
    out = np.empty_like(plo)
    for i, (lo, pi) in enumerate(zip(plo, p)):
        out[i] = (pi * _weighted_mean(np.logaddexp(0.0, -(tv + lo)), tw)
                  + (1 - pi) * _weighted_mean(np.logaddexp(0.0, nv + lo), nw)) / _LN2
    return out


def _distinct_weighted(x: np.ndarray):
    """``(values, counts)`` of ``x`` when it has at most a quarter as many distinct values as entries, else
    ``(x, None)`` (the sort then costs more than it saves)."""
    if x.size < 1024:
        return x, None
    u, c = np.unique(x, return_counts=True)
    return (u, c.astype(np.float64)) if 4 * u.size <= x.size else (x, None)


def _weighted_mean(v: np.ndarray, w) -> float:
    return float(v.mean()) if w is None else float(np.dot(v, w) / w.sum())


@dataclass(frozen=True)
class ZebraResult:
    """privacy-ZEBRA result.

    Attributes
    ----------
    d_ece_bits : float
        Expected disclosure (plain PAV), bits.
    eps_max : float
        Worst-case disclosure ``max |LLR|`` over all trials, nats (Laplace-smoothed PAV LLRs).
    eps_max_bits, eps_max_log10 : float
        The same in bits and in log10 (bans).
    tag : str
        Categorical tag ``"0"``..``"F"`` of ``eps_max_log10``.
    n_tar, n_non : int
    """

    d_ece_bits: float
    eps_max: float
    eps_max_bits: float
    eps_max_log10: float
    tag: str
    n_tar: int
    n_non: int

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@fill_doc
def zebra(tar, non) -> ZebraResult:
    """privacy-ZEBRA: expected and worst-case disclosure with its categorical tag.

    Parameters
    ----------
    tar, non : array_like of shape (n_tar,), (n_non,)
        Target and non-target scores of the attacker.

    Returns
    -------
    ZebraResult
        ``d_ece_bits`` from plain PAV LLRs (:func:`d_ece`); ``eps_max`` = ``max |LLR|`` in nats over the
        Laplace-smoothed PAV LLRs of all trials (finite by construction), with bits and log10 beside it, and
        the tag of :func:`zebra_tag`.

    {raises_empty_nan}

    Notes
    -----
    Nautsch et al. (2020), Eqs. 8-9 and Table 1. No monotonicity ramp is added, so uninformative scores
    give exactly ``eps_max = 0`` and tag ``"0"`` when the classes have equal size; with unequal sizes the
    pseudo-trials (one of each class at each end) pull a pooled bin away from the real prior, so fully tied
    scores with 3 targets and 2 non-targets give ``ln(9/8)``. eps_max is invariant under strictly increasing score
    transforms and trial order; it depends on the counts through the Laplace pseudo-trials.

    Examples
    --------
    >>> r = zebra([0.2, 0.4, 0.6], [0.1, 0.3, 0.5])
    >>> round(r.eps_max, 6) == round(math.log(2), 6), r.tag
    (True, 'A')
    """
    tar, non = as_tar_non(tar, non)
    b = tie_blocks(tar, non)
    llr, n_t, n_n = pav_bin_llr(b, laplace=True)
    eps = float(np.max(np.abs(llr[(n_t + n_n) > 0])))  # bins holding real trials only
    return ZebraResult(
        d_ece_bits=d_ece_blocks(b),  # = d_ece(tar, non), from the same blocks
        eps_max=eps,
        eps_max_bits=eps / _LN2,
        eps_max_log10=eps / _LN10,
        tag=zebra_tag(eps / _LN10),
        n_tar=int(tar.size),
        n_non=int(non.size),
    )
