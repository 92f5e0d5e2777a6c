"""Metrics as objects the resampling functions understand: a value, a unit and a direction of leakage.

A :class:`StatMetric` wraps any callable ``metric(trials) -> float`` over
:class:`~vpeval.io.trials.Trials`. The ready-made ones (:data:`EER_ROCCH`, :data:`EER_INTERP`,
:data:`MIN_CLLR`, :data:`D_ECE`, :data:`EPS_MAX`) also carry a fast path over weighted tie blocks: the
scores are sorted once, and every bootstrap or permutation replicate only re-counts targets and
non-targets per block (no new sort). The fast path gives exactly the same numbers as the public functions
(tests check it on tied and untied data).

A :class:`ProbeMetric` is a per-probe quantity of a 1-to-N search (rank-1 credit, LID) with its aggregate
(mean or max) over probes: :data:`RANK1`, :data:`ALID`, :data:`LID_MAX`.

``leak`` says in which direction a value shows *more* disclosure than chance: ``"higher"`` (D_ECE,
eps_max, ALID, LID_max, rank-1), ``"lower"`` (EER and minCllr of an attack: an EER below chance leaks) or
``"two-sided"`` (e.g. the ``oaoo``/``oaaa`` EERs, ideal 50 %, where both directions are departures).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from .._checks import one_of
from ..errors import VpevalError
from ..io.trials import Trials
from ..blocks import TieBlocks, bin_llr, operating_points, pav_bins, pav_block_llr
from ..metrics.verification import _interp_eer, interp_eer, min_cllr, rocch_eer
from ..metrics.zebra import _expected_ece_tar_nats, d_ece, zebra

__all__ = [
    "LEAK_DIRECTIONS",
    "StatMetric",
    "ProbeMetric",
    "as_stat_metric",
    "EER_ROCCH",
    "EER_INTERP",
    "MIN_CLLR",
    "D_ECE",
    "EPS_MAX",
    "RANK1",
    "ALID",
    "LID_MAX",
    "TRIAL_METRICS",
    "PROBE_METRICS",
    "leak_for_trial_type",
]

LEAK_DIRECTIONS = ("higher", "lower", "two-sided")
_LN2 = math.log(2.0)


class StatsError(VpevalError):
    """Bad input or options for the resampling statistics of :mod:`vpeval.stats`."""


def _check_leak(leak: str) -> str:
    return one_of(leak, "leak", LEAK_DIRECTIONS, StatsError)


@dataclass(frozen=True)
class StatMetric:
    """A scalar metric of a set of trials, with what the resampling statistics need to know about it.

    Parameters
    ----------
    key : str
        Short identifier (``"eer_rocch"``), used as the key of result dictionaries.
    name : str
        Human-readable name for reports.
    unit : str
        ``"fraction"``, ``"bits"``, ``"nats"``, ...
    leak : {"higher", "lower", "two-sided"}
        Direction in which the value shows more disclosure than chance.
    func : callable ``func(trials) -> float``
        Evaluates the metric on :class:`~vpeval.io.trials.Trials` (the generic path: resampled trials are
        materialised, with repeated trials for a speaker drawn several times).
    definition : str
        One sentence for reports.
    blocks : callable, optional
        Fast path ``blocks(ev) -> float`` over an internal cache of weighted tie blocks; only the built-in
        metrics have one. Must agree with ``func``, and may only use the blocks' order and counts: the
        resampling code merges runs of single-class blocks and replaces block score values by positions,
        which is exact for rank-based metrics only (estimators that use score values, e.g. Gaussian fits,
        must use ``func``).

    Calling the object evaluates ``func``: ``EER_ROCCH(trials)``.
    """

    key: str
    name: str
    unit: str
    leak: str
    func: Callable[[Trials], float] = field(repr=False)
    definition: str = ""
    blocks: Callable | None = field(default=None, repr=False)

    def __post_init__(self):
        _check_leak(self.leak)

    def __call__(self, trials: Trials) -> float:
        return float(self.func(trials))

    def with_leak(self, leak: str) -> "StatMetric":
        """The same metric read in another direction (e.g. ``"two-sided"`` for the oaoo and oaaa EERs)."""
        return replace(self, leak=_check_leak(leak))


def as_stat_metric(metric, leak: str | None = None) -> StatMetric:
    """Wrap a plain callable ``metric(trials) -> float`` (or return a StatMetric, optionally re-directed).

    A plain callable gets ``key = name = metric.__name__``, unit ``""`` and the given ``leak`` (default
    ``"higher"``).
    """
    if isinstance(metric, StatMetric):
        return metric if leak is None else metric.with_leak(leak)
    if isinstance(metric, ProbeMetric):
        raise StatsError(f"{metric.key} is a 1-to-N probe metric; pass a OneToN, not Trials")
    if not callable(metric):
        raise StatsError(f"metric must be a StatMetric or a callable metric(trials) -> float, got {metric!r}")
    name = getattr(metric, "__name__", "metric")
    return StatMetric(name, name, "", leak or "higher", metric, "user-supplied callable")


# ----------------------------------------------------------------------------------------- fast path


class BlockEval:
    """Weighted tie blocks of one replicate with the PAV fits computed at most once (internal)."""

    __slots__ = ("b", "nt", "nn", "_bins", "_llr_laplace")

    def __init__(self, b: TieBlocks):
        self.b = b
        self.nt = b.total_tar
        self.nn = b.total_non
        self._bins = None
        self._llr_laplace = None

    @property
    def bins(self):
        if self._bins is None:
            self._bins = pav_bins(self.b.n_tar, self.b.n_non)
        return self._bins

    @property
    def block_llr_laplace(self) -> np.ndarray:
        if self._llr_laplace is None:
            self._llr_laplace = pav_block_llr(self.b, laplace=True)
        return self._llr_laplace


def _eer_rocch_blocks(ev: BlockEval) -> float:
    bins = ev.bins
    miss = np.concatenate([[0], np.cumsum(bins.n_tar)]) / ev.nt
    fa = (ev.nn - np.concatenate([[0], np.cumsum(bins.n_non)])) / ev.nn
    return _interp_eer(miss, fa)


def _eer_interp_blocks(ev: BlockEval) -> float:
    return _interp_eer(*operating_points(ev.b))


def _min_cllr_blocks(ev: BlockEval) -> float:
    bins = ev.bins
    llr = bin_llr(bins.n_tar, bins.n_non, ev.nt, ev.nn)
    with np.errstate(invalid="ignore"):
        c_tar = np.where(bins.n_tar > 0, bins.n_tar * np.logaddexp(0.0, -llr), 0.0).sum() / ev.nt
        c_non = np.where(bins.n_non > 0, bins.n_non * np.logaddexp(0.0, llr), 0.0).sum() / ev.nn
    return float((c_tar + c_non) / (2.0 * _LN2))


def _d_ece_blocks(ev: BlockEval) -> float:
    # Every block of a PAV bin has the bin's LLR, so the block sums of vpeval.d_ece are bin sums here.
    bins = ev.bins
    llr = bin_llr(bins.n_tar, bins.n_non, ev.nt, ev.nn)
    t, n = bins.n_tar > 0, bins.n_non > 0
    # One call for both classes: targets at llr, non-targets at -llr, each weighted by count / class total.
    e = _expected_ece_tar_nats(np.concatenate([llr[t], -llr[n]]))
    w = np.concatenate([bins.n_tar[t] / ev.nt, bins.n_non[n] / ev.nn])
    return float((0.5 - np.dot(w, e)) / _LN2)


def _eps_max_blocks(ev: BlockEval) -> float:
    return float(np.max(np.abs(ev.block_llr_laplace)))


EER_ROCCH = StatMetric(
    "eer_rocch", "EER (ROCCH)", "fraction", "lower", lambda t: rocch_eer(t.tar, t.non),
    "Equal error rate of the ROC convex hull (BOSARIS rocch2eer), <= 0.5; vpeval.rocch_eer", _eer_rocch_blocks,
)
EER_INTERP = StatMetric(
    "eer_interp", "EER (interpolated)", "fraction", "lower", lambda t: interp_eer(t.tar, t.non),
    "Crossing of pmiss = pfa on the straight-line-joined step DET points, may exceed 0.5; "
    "vpeval.eer(method='interp')", _eer_interp_blocks,
)
MIN_CLLR = StatMetric(
    "min_cllr", "minCllr", "bits", "lower", lambda t: min_cllr(t.tar, t.non),
    "Cllr after PAV calibration (ties pooled, no ramp); 1 bit = no information; vpeval.min_cllr",
    _min_cllr_blocks,
)
D_ECE = StatMetric(
    "d_ece", "D_ECE (expected disclosure)", "bits", "higher", lambda t: d_ece(t.tar, t.non),
    "privacy-ZEBRA expected disclosure of the plain PAV LLRs, integrated over the prior; vpeval.d_ece",
    _d_ece_blocks,
)
EPS_MAX = StatMetric(
    "eps_max", "eps_max (worst-case disclosure, Laplace PAV)", "nats", "higher",
    lambda t: zebra(t.tar, t.non).eps_max,
    "privacy-ZEBRA max |LLR| over all trials, Laplace-smoothed PAV LLRs; vpeval.zebra(...).eps_max",
    _eps_max_blocks,
)

#: The headline verification metrics with a fast path, in report order.
TRIAL_METRICS = (EER_ROCCH, EER_INTERP, MIN_CLLR, D_ECE, EPS_MAX)


# ----------------------------------------------------------------------------------------- 1-to-N


@dataclass(frozen=True)
class ProbeMetric:
    """A 1-to-N metric: an aggregate (``"mean"`` or ``"max"``) of one value per probe.

    Parameters
    ----------
    key, name, unit, leak, definition
        As in :class:`StatMetric`.
    values : {"rank1", "lid"}
        Which per-probe value is aggregated: ``"rank1"`` the rank-1 credit of the true speaker (1 when it
        scores strictly highest, ``1/(e+1)`` when tied with ``e`` others at the top: the fractional tie
        rule; 0 otherwise), ``"lid"`` the probe's LID in bits (Sterns et al.).
    aggregate : {"mean", "max"}
    """

    key: str
    name: str
    unit: str
    leak: str
    values: str
    aggregate: str
    definition: str = ""

    def __post_init__(self):
        _check_leak(self.leak)
        if self.values not in ("rank1", "lid") or self.aggregate not in ("mean", "max"):
            raise StatsError(f"ProbeMetric {self.key}: values must be rank1/lid and aggregate mean/max")


RANK1 = ProbeMetric(
    "rank1", "Rank-1 identification rate", "fraction", "higher", "rank1", "mean",
    "Share of probes whose true speaker scores highest among the N enrolled (fractional ties); chance 1/N",
)
ALID = ProbeMetric(
    "alid", "ALID (average LID)", "bits", "higher", "lid", "mean",
    "Mean over probes of LID = log2(N p_true) (Sterns et al.); 0 = chance",
)
LID_MAX = ProbeMetric(
    "lid_max", "LID_max", "bits", "higher", "lid", "max",
    "Largest per-probe LID (Sterns et al.); at most log2 N",
)

#: The 1-to-N metrics, in report order.
PROBE_METRICS = (RANK1, ALID, LID_MAX)


def leak_for_trial_type(trial_type: str) -> dict[str, str]:
    """Direction overrides for the trial types of :data:`vpeval.pipeline.TRIAL_TYPES`.

    Beyond-EER's ``oaoo`` and ``oaaa`` (:data:`vpeval.pipeline.protocols.trials.TWO_SIDED_TYPES`) depart from
    their ideal 50 % EER in both directions (above 50 %: a pseudo-voice further from its source than another
    speaker, or identity-space compression), so both EERs are read ``"two-sided"``; every other type keeps the
    defaults of the metrics (empty dict).

    Examples
    --------
    >>> leak_for_trial_type("oaaa")
    {'eer_rocch': 'two-sided', 'eer_interp': 'two-sided'}
    >>> leak_for_trial_type("oa")
    {}
    """
    if trial_type in ("oaoo", "oaaa"):
        return {"eer_rocch": "two-sided", "eer_interp": "two-sided"}
    return {}
