"""All verification and privacy-ZEBRA numbers of one trial set from a single sort.

:func:`verification_summary` is what reports and the CLI call. Each number equals the public function
named in its ``function`` field (tests check this), but the tie blocks are built once.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from .._checks import as_tar_non
from ..errors import InvalidScoresError
from ..blocks import (
    bin_llr, bin_start_values, bins_on_grid, compress_runs, lookup_bins, merge_sorted_pair, operating_point_chunks,
    pav_bin_llr, pav_bins, sorted_pair,
)
from .verification import (
    _check_costs, _closest_eer, _linkability_core, _min_cllr, _normalised_dcf, _rocch_eer, _rocch_points, act_dcf, cllr,
    default_linkability_bins, linkability_caveat, warn_small_linkability,
)
from .zebra import d_ece_bins, zebra_tag

__all__ = ["MetricValue", "verification_summary"]


@dataclass(frozen=True)
class MetricValue:
    """One reported number with its unit, definition and the library call that reproduces it."""

    key: str
    name: str
    value: float  #: an int for counts (unit ``count``)
    unit: str
    definition: str
    function: str
    error: str | None = None  #: why the metric could not be computed (its value is then NaN)
    #: why the value may not mean what its definition says at these counts (e.g. linkability's small-sample bias)
    caveat: str | None = None

    def as_dict(self) -> dict:
        """JSON-ready: NaN (not computed) becomes ``None`` (``null``) with ``error`` saying why; +-inf become
        the strings ``"inf"`` / ``"-inf"`` (the rule of every vpeval JSON output)."""
        d = asdict(self)
        v = d["value"]
        if not isinstance(v, str) and not math.isfinite(v):
            d["value"] = None if math.isnan(v) else ("inf" if v > 0 else "-inf")
        if d["error"] is None:
            del d["error"]
        if d["caveat"] is None:
            del d["caveat"]
        return d


def prior_text(p: float) -> str:
    """A prior as shown in names and keys: 12 significant digits, or every digit when 12 would show another
    number (``0.9999999999999999`` is never shown as ``1``, nor ``1e-13`` next to ``1.0000000000001e-13``
    as the same)."""
    s = f"{float(p):.12g}"
    return s if float(s) == float(p) else repr(float(p))


def _blocks_of(b, st: np.ndarray, sn: np.ndarray) -> bool:
    """Whether ``b`` are the tie blocks of the ascending arrays ``st`` and ``sn``: strictly ascending values, and
    each block's slice of each class (by the cumulative counts) starting and ending at its value (enough, the
    classes being ascending). O(blocks + trials), no sort."""
    if not all(hasattr(b, a) for a in ("values", "n_tar", "n_non")):
        return False  # not a TieBlocks at all
    v = np.asarray(b.values)
    if v.size == 0 or (v.size > 1 and not bool((v[1:] > v[:-1]).all())):
        return False
    for x, counts in ((st, b.n_tar), (sn, b.n_non)):
        c = np.asarray(counts, dtype=np.int64)
        if c.size != v.size or (c < 0).any() or int(c.sum()) != x.size:
            return False
        if x.size > 1 and not bool((x[1:] >= x[:-1]).all()):
            return False
        held = np.flatnonzero(c)
        end = np.cumsum(c)[held]
        if not (bool((x[end - c[held]] == v[held]).all()) and bool((x[end - 1] == v[held]).all())):
            return False
    return True


def verification_summary(tar, non, p_targets=(0.01, 0.05), *, scores_are_llrs: bool = False,
                         return_llrs: bool = False, warn: bool = False, blocks=None):
    """Every verification and ZEBRA metric of one set of trials.

    Parameters
    ----------
    tar, non : array_like
        Target and non-target scores.
    p_targets : sequence of float
        Priors at which minDCF (and actDCF, when ``scores_are_llrs``) are reported; ``c_miss = c_fa = 1``.
    scores_are_llrs : bool
        If the scores are calibrated LLRs (nats), also report Cllr and actDCF (per prior) of the scores
        themselves.

    return_llrs : bool
        Also return the per-trial PAV LLRs (nats), plain and Laplace-smoothed, from the same sort.
    warn : bool
        Also issue the :class:`~vpeval.errors.SmallSampleWarning` of linkability when its counts are too few
        (:func:`vpeval.metrics.verification.linkability_caveat`). Off by default: the caveat is on the value either
        way (``caveat``; the commands show it in the JSON, the table's metric name and the report), and a warning
        on stderr would be mixed into ``--json`` output read by tools that merge the streams.
    blocks : vpeval.blocks.TieBlocks, optional
        The tie blocks of these scores when already at hand (:meth:`vpeval.io.trials.Trials.tie_blocks`, which
        the verdict made): ``tar`` and ``non`` must then be ascending (:meth:`~vpeval.io.trials.Trials.sorted_classes`)
        and are read as given, with no second sort or merge (a second of a 1e7-line file). The same numbers:
        the blocks of equal scores do not depend on how ``-0.0`` and ``0.0`` are ordered. InvalidScoresError
        if a class is not ascending or the blocks' counts are not the classes'.

    Returns
    -------
    list of MetricValue
        ROCCH-EER, interpolated EER, minDCF per prior, minCllr, D_ECE, eps_max (nats, bits, log10), the
        ZEBRA tag, linkability (finite scores only: with an infinite score its value is NaN and ``error`` says
        why; ``caveat`` says when its counts are too few for its histogram, below
        :data:`~vpeval.metrics.verification.LINKABILITY_MIN_PER_BIN` trials per bin of the sparser class), trial
        counts; plus Cllr and actDCF for LLR input.
    dict, only with ``return_llrs``
        ``{"pav": (tar_llr, non_llr), "pav_laplace": (tar_llr, non_llr)}``, equal to :func:`vpeval.pav_llr`.

    Notes
    -----
    One sort per class, one merge (binary search of the sorted targets in the sorted non-targets), two PAV
    fits; O(n log n) time and O(n) memory. Working memory, for ``n`` trials (input ``8 n`` bytes): the sorted
    copies (``8 n``), freed once merged; the merged values and the tie blocks, whose counts are int32 while
    there are fewer than ``2**31`` trials (at most ``16 n`` bytes, untied scores); the DET points are scanned in
    chunks; the blocks are then pooled into runs of one class (all PAV needs; about a third of the blocks for
    overlapping classes) before the PAV fits. With ``return_llrs`` each score's PAV bin is found by binary
    search on the bins' first scores and its LLR written straight into the returned arrays (``32 n`` bytes
    of output), with no argsort. Every number and LLR is bit-identical to the public functions.
    """
    tar, non = as_tar_non(tar, non)
    if isinstance(p_targets, (int, float)):
        p_targets = (p_targets,)
    p_targets = tuple(_check_costs(p, 1.0, 1.0)[0] for p in p_targets)
    keys = [f"{p:.12g}" for p in p_targets]
    if len(set(keys)) != len(keys):
        raise InvalidScoresError(f"p_targets must be distinct, got {list(p_targets)}")
    if blocks is None:
        st, sn = sorted_pair(tar, non)
    elif not _blocks_of(blocks, tar, non):
        raise InvalidScoresError(f"the blocks given are not those of these {tar.size} target and {non.size} "
                                 "non-target scores (or these are not ascending)")
    else:
        st, sn = tar, non
    n_bins = default_linkability_bins(tar.size)
    finite = bool(np.isfinite(st[[0, -1]]).all() and np.isfinite(sn[[0, -1]]).all())
    link = _linkability_core(st, sn, 1.0, n_bins) if finite else float("nan")
    n_inf = 0 if finite else int(np.sum(~np.isfinite(st)) + np.sum(~np.isfinite(sn)))
    # int32 counts while the full blocks exist (fewer than 2**31 trials), then the blocks pooled into class
    # runs, which is all PAV needs (see Notes)
    pair = [st, sn]
    del st, sn  # the merge empties ``pair``: the sorted copies go once the merged values exist
    held = [merge_sorted_pair(pair, np.int32 if tar.size + non.size < 2 ** 31 else np.int64) if blocks is None else
            blocks]
    eer_interp, min_dcfs = _det_numbers(held[0], p_targets)
    eer_closest = _closest_eer(held[0])  # on the full blocks: a pooled class run hides its inner points
    b = compress_runs(held)
    bins = pav_bins(b.n_tar, b.n_non)  # plain PAV, shared by ROCCH, minCllr and D_ECE
    out = [
        MetricValue("n_tar", "Target trials", int(b.total_tar), "count", "Number of target trials", "len(tar)"),
        MetricValue("n_non", "Non-target trials", int(b.total_non), "count", "Number of non-target trials",
                    "len(non)"),
        MetricValue("eer_rocch", "EER (ROCCH)", _rocch_eer(*_rocch_points(b, bins)), "fraction",
                    "Equal error rate of the ROC convex hull (BOSARIS rocch2eer); <= 0.5", "vpeval.rocch_eer"),
        MetricValue("eer_interp", "EER (interpolated)", eer_interp, "fraction",
                    "Crossing of pmiss = pfa on the straight-line-joined step DET points; may exceed 0.5",
                    "vpeval.eer(method='interp')"),
        MetricValue("eer_closest", "EER (closest point)", eer_closest, "fraction",
                    "Mean of pmiss and pfa where they are closest, in the ASVspoof/VoicePrivacy scripts' float "
                    "arithmetic, tied scores as blocks; may exceed 0.5", "vpeval.eer(method='closest')"),
    ]
    for p, v in zip(p_targets, min_dcfs):
        q = prior_text(p)
        out.append(MetricValue(f"min_dcf_{q}", f"minDCF (P_tar={q})", v, "normalised cost",
                               "Minimum over thresholds of the DCF normalised by min(p, 1-p); c_miss = c_fa = 1",
                               f"vpeval.min_dcf(p_target={q})"))
    out.append(MetricValue("min_cllr", "minCllr", _min_cllr(b, bins), "bits",
                           "Cllr after PAV calibration (ties pooled, no ramp)", "vpeval.min_cllr"))
    if scores_are_llrs:
        out.append(MetricValue("cllr", "Cllr", cllr(tar, non), "bits", "Cllr of the scores taken as LLRs (nats)",
                               "vpeval.cllr"))
        for p in p_targets:
            q = prior_text(p)
            out.append(MetricValue(
                f"act_dcf_{q}", f"actDCF (P_tar={q})", act_dcf(tar, non, p), "normalised cost",
                "DCF of the LLRs at the Bayes threshold ln((1-p)/p), normalised by min(p, 1-p)",
                f"vpeval.act_dcf(p_target={q})"))
    # privacy-ZEBRA
    d = d_ece_bins(b, bins)
    lap_bins = pav_bins(b.n_tar, b.n_non, pseudo=True)
    lap_llr, lap_t, lap_n = pav_bin_llr(b, True, lap_bins)
    eps = float(np.max(np.abs(lap_llr[(lap_t + lap_n) > 0])))  # bins holding real trials only
    out += [
        MetricValue("d_ece", "D_ECE (expected disclosure)", d, "bits",
                    "privacy-ZEBRA: integral over the prior of H(P) - ECE(P) of the PAV LLRs; 0 = no disclosure, "
                    "0.7213 = perfect separation", "vpeval.zebra(...).d_ece_bits"),
        MetricValue("eps_max", "eps_max (worst-case disclosure)", eps, "nats",
                    "max |LLR| over all trials, Laplace-smoothed PAV (privacy-ZEBRA)", "vpeval.zebra(...).eps_max"),
        MetricValue("eps_max_bits", "eps_max (bits)", eps / math.log(2), "bits", "eps_max in bits",
                    "vpeval.zebra(...).eps_max_bits"),
        MetricValue("eps_max_log10", "eps_max (log10)", eps / math.log(10), "log10",
                    "eps_max in log10 units (bans), the scale of the ZEBRA tags", "vpeval.zebra(...).eps_max_log10"),
        MetricValue("zebra_tag", "ZEBRA tag", zebra_tag(eps / math.log(10)), "category",
                    "0: [0, eps]; A: (eps, 1]; B: (1, 2]; C: (2, 4]; D: (4, 5]; E: (5, 6]; F: > 6 (log10)",
                    "vpeval.zebra(...).tag"),
    ]
    link_def = (f"Gomez-Barrero et al. 2018 global linkability, omega = 1, histogram of {n_bins} bins "
                "(max(10, min(n_tar/10, 100)))")
    if finite:
        out.append(MetricValue("linkability", "Linkability D<->sys", link, "fraction", link_def,
                               "vpeval.linkability",
                               caveat=(warn_small_linkability if warn else linkability_caveat)(
                                   int(b.total_tar), int(b.total_non), n_bins)))
    else:
        # the histogram's equal-width bins span [min, max] of the scores: with an infinite score every bin is
        # infinitely wide, and dropping the infinite trials would change the definition; so it is reported as
        # not computed, with the reason, instead of vanishing
        out.append(MetricValue("linkability", "Linkability D<->sys", float("nan"), "fraction", link_def,
                               "vpeval.linkability",
                               error=f"not computed: {n_inf} infinite score(s); the histogram bins span [min, max] "
                                     "of the scores and need finite scores"))
    if not return_llrs:
        return out
    # Per-trial LLRs: each score's PAV bin by binary search on the bins' first scores, written straight into
    # the returned arrays (no argsort, no per-trial index).
    plain = bin_llr(bins.n_tar, bins.n_non, b.total_tar, b.total_non)
    plain_start, _ = bin_start_values(b, bins)
    lap_start, keep = bin_start_values(b, lap_bins, pseudo=True)
    lap_llr = lap_llr[keep]
    del b, bins, lap_bins
    # one binary search per score serves both fits: both tables re-expressed on the union of their starts
    grid = np.union1d(plain_start, lap_start)
    tables = bins_on_grid(grid, plain_start, plain), bins_on_grid(grid, lap_start, lap_llr)
    (tp, tl), (np_, nl) = lookup_bins(tar, grid, *tables), lookup_bins(non, grid, *tables)
    return out, {"pav": (tp, np_), "pav_laplace": (tl, nl)}


def _det_numbers(b, p_targets) -> tuple[float, list[float]]:
    """Interpolated EER and minDCF per prior from one chunked pass over the DET points of the full blocks.

    The same numbers as :func:`vpeval.metrics.verification._interp_eer` and ``_min_normalised_dcf`` on
    :func:`vpeval.blocks.operating_points` (same point values, the same two points interpolated, exact minima),
    without the two full-length point arrays.
    """
    mins = [math.inf] * len(p_targets)
    eer = None
    prev = None  # (pmiss, pfa) of the point before the current chunk
    for pm, pf in operating_point_chunks(b):
        for q, p in enumerate(p_targets):
            mins[q] = min(mins[q], float(np.min(_normalised_dcf(pm, pf, p, 1.0, 1.0))))
        if eer is None:
            hit = pm - pf >= 0
            if hit.any():
                j = int(np.argmax(hit))
                dj = pm[j] - pf[j]
                if dj == 0:
                    eer = float(pm[j])
                else:
                    mp, fp = (pm[j - 1], pf[j - 1]) if j > 0 else prev
                    dp = mp - fp
                    lam = -dp / (dj - dp)
                    eer = float(mp + lam * (pm[j] - mp))
            prev = (pm[-1], pf[-1])
    return eer, mins
