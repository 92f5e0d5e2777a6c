r"""The perfect-secrecy test of a system: one permutation engine for every attacker, trial type and statistic,
adjusted family-wise (Westfall-Young max-T), with the worst case it decides on and its uncertainty.

Null hypothesis
---------------
*Perfect secrecy*: the attacker's scores carry no information on whether two recordings share a speaker
(privacy-ZEBRA's eps_max = 0, Nautsch et al., Interspeech 2020). Under it the speaker labels are exchangeable
given the scores, so relabelling speakers leaves the joint law of all scores and labels unchanged, and a
permutation test is exact (Good, "Permutation, Parametric and Bootstrap Tests of Hypotheses", 2005, Ch. 3).

Relabelling schemes (``scheme``), chosen from what the input says, the same relabelling for every member
------------------------------------------------------------------------------------------------------------
``"speaker"``
    Speakers are known (audits; 1-to-N tables; Kaldi trials whose every probe is a target of one model and is
    scored against every model). The *evaluation speakers* ``S`` are the probe speakers that are also enrolled.
    A permutation ``sigma`` of ``S`` gives enrolled model ``m`` the identity ``sigma(m)``: trial ``(m, probe)``
    is a target iff ``sigma(m)`` is the probe's speaker, and in a 1-to-N matrix the true column of a probe of
    speaker ``p`` becomes ``sigma^-1(p)``. All probes of a speaker move together (their shared voice is kept);
    models outside ``S`` (a cohort of distractors, never probed) keep their identity, so they stay non-targets
    (distractors enrolled differently are not exchangeable with evaluation speakers). Needs a complete design
    (every probe of a speaker in ``S`` scored against every model in ``S``), else ``"speaker-row"`` is used.
``"speaker-row"``
    Speakers and probe keys known, design incomplete (not every probe meets every model, e.g. sampled
    non-target trials): each evaluation speaker's probes move *together* to one model drawn uniformly, and
    independently per speaker, from the models every one of them met (:func:`~vpeval.analysis.relabel.row_design`
    chooses those models and probes from the design alone; probes of a speaker that cannot move with it are
    left out of the test, ``tested_share``). Exact under perfect secrecy when one speaker's probes are
    exchangeable across the models they all met; with a per-model effect (hub models) conservative, since two
    speakers may draw the same model (2.0 % false rejections at alpha 5 % measured); moving them independently (the ``"probe"`` scheme) would
    ignore their shared voice, which the pair effect of real speech makes anti-conservative (about 20 %
    false rejections at alpha 5 % in ``benchmarks/secrecy_size.py``).
``"probe"``
    Trial keys without speakers (a probe targets two models): within every test key (probe utterance) holding
    one target, the target moves to a uniformly random trial of that key. Assumes the probes of one speaker
    exchangeable with each other's rows (they are relabelled independently).
``"trial"``
    No keys (a ``score label`` file): a uniformly random set of as many trials as there are targets is
    labelled target. Assumes exchangeable trials, which speaker structure can break (trials of one speaker are
    not independent); the output says so.

Statistics (all in bits; "higher" = more disclosure)
----------------------------------------------------
Per attacker and verification trial type: ``eps_max`` (privacy-ZEBRA worst case ``max |LLR|`` under the
Laplace-smoothed PAV, Nautsch et al. 2020, Eq. 9; chosen because it is nonparametric, finite for any data and
never extrapolates beyond the observed scores: its ceiling at perfect separation is known,
:func:`~vpeval.analysis.worst_case.eps_max_ceiling_nats`) and ``d_ece`` (the expected disclosure, Eq. 8).
Per attacker and 1-to-N condition: ``lid_max`` and ``alid`` (Sterns et al.), with the LID calibration slope
refitted in-sample to each labelling, the observed one included (the same rule for the observed and permuted
labellings, so the test is exact; the cross-fitted LIDs of the report are evidence, not the test statistic).
The per-speaker worst case (largest ``|LLR|`` of a speaker's target trials) never exceeds ``eps_max``: its
maximum over speakers *is* the target side of eps_max, so it enters the test through eps_max and is used to
name the exposed speakers. Asked for (``statistics``, as :func:`~vpeval.analysis.families.one_to_n_verdict` does;
not by default, so audits keep their family): ``speaker_lid``, per 1-to-N member the largest *speaker LID* over
its evaluation speakers (:mod:`vpeval.metrics.linkage.speaker`: the mean LID of one speaker's probes under the
slope that suits it best, a function of that speaker's probe rows and the model it is given alone, so the table
of every speaker against every evaluation model is computed once and each relabelling reads it). It finds a leak
confined to one speaker, which the one fitted slope of LID_max and ALID averages away, and it names the exposed
speakers of its members in place of LID_max.

Family-wise adjustment
----------------------
Every statistic of every member is recomputed on the same ``n_perm`` relabellings (row 0: the observed labels).
Each statistic ``k`` is put on the scale of its own null spread, ``Z_{b,k} = (T_{b,k} - m_k) / (q_k - m_k)``
with ``m_k`` and ``q_k`` the median and 95th percentile of ``T_{.,k}`` over all relabellings (a symmetric
function of the rows, so exchangeability is kept); the adjusted p-value of ``k`` is
``#{b : max_k' Z_{b,k'} >= Z_{0,k}} / (n_perm + 1)`` (single-step max-T, Westfall & Young, "Resampling-Based
Multiple Testing", 1993, Algorithm 2.5; the observed labelling counts as one relabelling, Phipson & Smyth 2010).
Perfect secrecy is rejected iff the smallest adjusted p-value is ``<= alpha``: however many attackers, trial
types and statistics are added, the chance that a perfectly secret system is rejected stays ``<= alpha``.
(Min-P on the raw p-values, tried first, loses its power with many statistics: its adjusted p-value cannot fall
below the number of relabellings that top some column.) When the relabellings cannot reach ``alpha`` at all
(``1 / (n_perm + 1) > alpha``, or fewer distinct relabellings than ``1 / alpha``, e.g. 3 speakers have 6), a
:class:`~vpeval.errors.FewPermutationsWarning` is issued and ``can_reject`` is False.

The worst case and its uncertainty
----------------------------------
The *worst case* is the largest worst-case disclosure (``eps_max`` or ``lid_max``, both log2 evidence
factors, bits) over the family: the strongest attacker chosen on these data. Its *noise floor* is the 95th
percentile, over the relabellings, of the same family maximum (what the strongest of these attackers reaches
by chance at this sample size; selection included). Its interval is a speaker-level bootstrap of the family
maximum **with the strongest attacker re-selected in every replicate** (the selection's own variability is in
the interval): probe speakers are drawn with replacement, each drawn speaker's trials and probe rows enter
with its multiplicity, the LLRs are refitted per replicate (Laplace PAV) while the LID calibration is not.
The bootstrap of a maximum is not a coverage guarantee (Bickel & Freedman 1981, Sec. 6): its coverage at the
demo's design is measured and shipped (``benchmarks/verdict_calibration.py``, ``docs/verdict.md``). Speakers
whose own worst case exceeds the family-wise threshold of its statistic (the noise floor of that statistic's
family maximum) are listed as exposed; because the threshold is that of the family maximum, the chance that
any speaker of a perfectly secret system is listed is ``<= 1 - 0.95``. A speaker's worst case is read from the
attacker's calibration fitted on all speakers (PAV, LID slope): when some speakers leak, that calibration is
steeper, and a protected speaker whose trial happens to score high is listed too. That is disclosure the attacker
really achieves, but the per-speaker control is family-wise only under complete perfect secrecy. The speaker LID
has no such coupling: whatever other speakers leak, the values of the speakers whose probes carry no identity
keep their law under relabelling, and the threshold (a maximum over every speaker) can only be higher, so they
are named in at most ``alpha`` of the tables (measured: ``benchmarks/linkage_exposure.py``, docs/report.md). Its
exposed speakers also carry their rank-1 identification and its likelihood ratio's lower bound
(:class:`ExposedSpeaker`), which the verdict reads.

Results depend on the input only as a set (canonical orders everywhere) and on ``seed``.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..keys import sorted_codes
from ..errors import FewPermutationsWarning, VpevalError, user_stacklevel
from ..stats.results import order_statistic
from .members import OneToNInput, TrialInput, speakers_from_keys
from .intervals import WORST_CASE_LEVEL, interval_refusal, min_interval_units, target_units
from . import cells as _cells
from .nulls import NullFamily, null_family_steps
from .nulls import log10_distinct as _count_log10
from .profiles import member_profiles_started
from .relabel import SPEAKER_SCHEMES
from .resample import family_maximum
from .worst_case import eps_max_ceiling_nats

__all__ = ["TrialInput", "OneToNInput", "MemberTest", "ExposedSpeaker", "WorstCase", "SecrecyTest",
           "secrecy_test", "check_test_options", "speakers_from_keys", "SCHEMES", "WORST_CASE_STATISTICS",
           "STATISTICS", "WORST_CASE_LEVEL", "min_interval_units", "interval_refusal"]

_LN2 = math.log(2.0)
#: Comparisons of bit values computed along different float paths (PAV fit vs closed form) allow this much.
_ROUNDING = 1e-9
#: A worst case this close (bits) to its ceiling is read as at the ceiling (a regularised LID never reaches
#: log2 N exactly).
CEILING_TOLERANCE_BITS = 0.01
#: Most relabellings (and bootstrap replicates) one test may ask for (memory grows with them).
MAX_N_PERM = 100_000
SCHEMES = ("speaker", "speaker-row", "probe", "trial")
#: Statistics that are worst cases (log2 evidence factors) and so decide the magnitude against the budget.
WORST_CASE_STATISTICS = ("eps_max", "lid_max")
#: Every statistic a family may hold; ``speaker_lid`` (the largest speaker LID of a 1-to-N member) is asked for
#: by :func:`vpeval.analysis.families.one_to_n_verdict`, not by default (module docstring).
STATISTICS = ("eps_max", "d_ece", "lid_max", "alid", "speaker_lid")
_SCHEME_NOTES = {
    "speaker": "speaker identities permuted among the evaluation speakers (all probes of a speaker together)",
    "speaker-row": "each evaluation speaker's probes moved together to a model every one of them was scored "
                   "against",
    "probe": "each probe's target moved to a random model of its own row; assumes the probes of one speaker "
             "exchangeable (they are relabelled independently)",
    "trial": "trial labels permuted over all trials; assumes exchangeable trials (the input gives no usable "
             "speaker structure, so trials of one speaker are treated as independent; where they share speakers, "
             "17-22 % false rejections at alpha 5 % were measured: docs/verdict_calibration.md)",
}


@dataclass(frozen=True)
class MemberTest:
    """One statistic of one attacker and trial type in the family.

    ``value`` in bits; ``p_raw`` its own permutation p-value, ``p_adjusted`` the family-wise one; ``floor`` the
    95th percentile of its own null (bits); ``eer_rocch`` the member's ROCCH-EER (fraction; verification
    members only), evidence beside it.
    """

    attacker: str
    trial_type: str
    statistic: str
    value: float
    p_raw: float
    p_adjusted: float
    floor: float
    eer_rocch: float | None = None

    def to_dict(self) -> dict:
        return {"attacker": self.attacker, "trial_type": self.trial_type, "statistic": self.statistic,
                "value_bits": self.value, "p_raw": self.p_raw, "p_adjusted": self.p_adjusted,
                "floor_bits": self.floor, "eer_rocch": self.eer_rocch}


@dataclass(frozen=True)
class ExposedSpeaker:
    """A speaker whose own statistic exceeds the family-wise threshold of that statistic (bits).

    With ``statistic == "speaker_lid"`` (1-to-N members of a family that holds it) also the speaker's rank-1
    identification: ``rank1_hits`` of its ``n_probes`` probes rank its own model first (unique maximum of the row),
    and ``bound_bits`` is the lower confidence bound of the rank-1 likelihood ratio ``gamma (N - 1) / (1 - gamma)``
    in bits (:func:`vpeval.metrics.linkage.speaker.rank1_ratio_lower_bits`), simultaneous over every speaker of
    every such member at ``1 - alpha`` (``bound_level``, Bonferroni; probes independent given their speaker); None
    when no probe ranks its model first. None for the other statistics.
    """

    speaker: str
    value: float
    threshold: float
    statistic: str
    attacker: str
    trial_type: str
    rank1_hits: int | None = None
    n_probes: int | None = None
    n_models: int | None = None
    bound_bits: float | None = None
    bound_level: float | None = None

    def to_dict(self) -> dict:
        d = {"speaker": self.speaker, "value_bits": self.value, "threshold_bits": self.threshold,
             "statistic": self.statistic, "attacker": self.attacker, "trial_type": self.trial_type}
        if self.n_probes is not None:  # only where computed: audits' entries keep their fields
            d.update(rank1_hits=self.rank1_hits, n_probes=self.n_probes, n_models=self.n_models,
                     rank1_ratio_low_bits=self.bound_bits, bound_level=self.bound_level)
        return d


@dataclass(frozen=True)
class WorstCase:
    """The family's worst case (bits): who reaches it, its noise floor, interval and ceiling.

    ``ci_low``/``ci_high`` are the 5th and 95th percentiles of the re-selected bootstrap (two one-sided 95 %
    bounds, a 90 % interval), or None when the worst case rests on too few resampling units holding targets, or
    the bootstrap has too few replicates, for any 90 % interval (``interval_note`` says which and the minimum:
    :func:`interval_refusal`); ``ceiling`` the most this statistic can show at this sample size (``at_ceiling``:
    the value is there, within :data:`CEILING_TOLERANCE_BITS`, so it means "at least this much");
    ``family_ceiling`` the most any member of the family can show (at or below the budget, no verdict can say
    the budget is exceeded or ruled out).
    """

    value: float
    statistic: str
    attacker: str
    trial_type: str
    floor: float
    ci_low: float | None
    ci_high: float | None
    ceiling: float
    at_ceiling: bool
    n_boot: int
    interval_method: str
    family_ceiling: float = math.inf
    interval_note: str | None = None
    target_units: int | None = None

    def to_dict(self) -> dict:
        d = {"value_bits": self.value, "statistic": self.statistic, "attacker": self.attacker,
             "trial_type": self.trial_type, "floor_bits": self.floor, "ci_low_bits": self.ci_low,
             "ci_high_bits": self.ci_high, "ci_level": 0.90, "ceiling_bits": self.ceiling,
             "at_ceiling": self.at_ceiling, "family_ceiling_bits": self.family_ceiling, "n_boot": self.n_boot,
             "interval_method": self.interval_method}
        if self.interval_note is not None:  # only when refused: other outputs keep their fields
            d.update(interval_note=self.interval_note, target_units=self.target_units)
        return d


@dataclass(frozen=True)
class SecrecyTest:
    """Result of :func:`secrecy_test` (see the module docstring for every definition).

    Attributes
    ----------
    scheme, scheme_note : str
        The relabelling used and what it assumes.
    n_perm, seed : int
    alpha : float
    p_value : float
        Family-wise p-value (the smallest adjusted p-value).
    rejected : bool
        ``p_value <= alpha``: perfect secrecy rejected family-wise.
    members : list of MemberTest
    worst : WorstCase
    thresholds : dict statistic -> float
        Family-wise thresholds (bits): 95th percentile of the family maximum of each statistic under the null.
    exposed : list of ExposedSpeaker
        Most exposed first.
    n_units : int
        Evaluation speakers (``"speaker"``), probe speakers (``"speaker-row"``), probes (``"probe"``) or trials
        (``"trial"``): the resampling units.
    profiles : tuple of MemberProfile
        The members' privacy-profile inputs (:mod:`vpeval.analysis.profiles`), from which the verdict computes
        eps(delta) and its bounds at any delta (empty for hand-made tests).
    designs : tuple of dict
        Per verification member with keys, ``{trials, targets, probes, models}`` (distinct test and enroll ids):
        from which the verdict's plan tells whether speakers can be added to the same design.
    log10_distinct : float
        log10 of the number of distinct relabellings of the scheme (``|S|!``, the product of the probes' row
        sizes, or ``C(n, n_tar)``).
    can_reject : bool
        Whether any p-value ``<= alpha`` is reachable: ``1 / (n_perm + 1) <= alpha`` and at least ``1 / alpha``
        distinct relabellings.
    null_max : ndarray of shape (n_perm,)
        The family maximum of the worst-case statistics per relabelling (bits), for plots.
    boot_max : ndarray of shape (n_boot,)
        The family maximum per bootstrap replicate (bits; NaN where a replicate drew no target or no non-target
        trial): the replicates of :class:`WorstCase`'s interval. Two systems tested with the same ``seed`` and
        ``n_boot`` on the same resampling units draw the same units in replicate ``r``, so their replicates are
        paired (:func:`vpeval.analysis.comparison.compare_worst_cases`).
    boot_units : tuple of str
        The resampling units the bootstrap draws from (sorted; empty for the trial scheme).
    subfamilies : dict name -> SecrecyTest
        The tests of the sub-families asked for (``secrecy_test(..., subfamilies=...)``), on the same
        relabellings and draws; empty otherwise. Not part of :meth:`to_dict`.
    tested_share : float
        Share of the members' trials the test relabels (1 but for ``"speaker-row"``, which leaves out the probes
        that cannot move with their speaker).

    :meth:`to_dict` adds ``deciding_member``: the first member of :meth:`by_p` (None without members).
    """

    scheme: str
    scheme_note: str
    n_perm: int
    seed: int
    alpha: float
    p_value: float
    rejected: bool
    members: list
    worst: WorstCase
    thresholds: dict
    exposed: list
    n_units: int
    null_max: np.ndarray = field(repr=False)
    log10_distinct: float = math.inf
    can_reject: bool = True
    profiles: tuple = field(default=(), repr=False)
    designs: tuple = field(default=(), repr=False)
    boot_max: np.ndarray | None = field(default=None, repr=False)
    boot_units: tuple = field(default=(), repr=False)
    subfamilies: dict = field(default_factory=dict, repr=False)
    tested_share: float = 1.0
    cells: tuple = ()  # (attacker, trial type, cells) of each member tested on cells (vpeval.analysis.cells)

    def by_p(self) -> list:
        """The members, smallest adjusted p-value first (ties: statistic, attacker, trial type, so the order of
        the input never matters): the first is the one that decides a rejection, the order in which the verdict
        names the rejecting statistics."""
        return sorted(self.members, key=lambda m: (m.p_adjusted, m.statistic, m.attacker, m.trial_type))

    def to_dict(self) -> dict:
        first = self.by_p()[:1]
        return {"scheme": self.scheme, "scheme_note": self.scheme_note, "n_perm": self.n_perm, "seed": self.seed,
                "alpha": self.alpha, "p_value": self.p_value, "rejected": self.rejected,
                "n_units": self.n_units, "tested_share": self.tested_share,
                "log10_distinct_relabellings": self.log10_distinct,
                "can_reject": self.can_reject, "worst_case": self.worst.to_dict(),
                "thresholds_bits": dict(self.thresholds), "exposed_speakers": [e.to_dict() for e in self.exposed],
                "members": [m.to_dict() for m in self.members],
                "cells": [{"attacker": a, "trial_type": t, "cells": c} for a, t, c in self.cells],
                "deciding_member": {"attacker": first[0].attacker, "trial_type": first[0].trial_type,
                                    "statistic": first[0].statistic, "p_adjusted": first[0].p_adjusted}
                if first else None}


# ----------------------------------------------------------------------------------------- min-P


def _p_matrix(T: np.ndarray) -> np.ndarray:
    """``p[b, k] = #{b' : T[b', k] >= T[b, k]} / B`` per column (B rows)."""
    B = T.shape[0]
    P = np.empty_like(T)
    for k in range(T.shape[1]):
        col = T[:, k]
        srt = np.sort(col)
        P[:, k] = (B - np.searchsorted(srt, col, side="left")) / B
    return P


def _standardise(T: np.ndarray) -> np.ndarray:
    """Each column in units of its own null spread: ``(T - median) / (q95 - median)`` over all rows (observed
    included, a symmetric function of the rows, so the max-T test stays exact); ``max - median`` when the 95th
    percentile equals the median, 1 when the column is constant."""
    med, q95 = np.array([order_statistic(c, [0.5, 0.95]) for c in T.T]).T
    scale = q95 - med
    top = T.max(axis=0) - med
    scale = np.where(scale > 0, scale, np.where(top > 0, top, 1.0))
    return (T - med) / scale


def _exact_q(x: np.ndarray, q: float) -> float:
    return float(order_statistic(x, q))


# ----------------------------------------------------------------------------------------- the test


def check_test_options(n_perm, n_boot, seed, alpha) -> None:
    """:class:`VpevalError` unless ``19 <= n_perm <= MAX_N_PERM``, ``1 <= n_boot <= MAX_N_PERM``, ``seed >= 0``
    (integers) and ``0 < alpha < 1``: the options of :func:`secrecy_test`, checkable before any data is read."""
    for name, v, lo, hi in (("n_perm", n_perm, 19, MAX_N_PERM), ("n_boot", n_boot, 1, MAX_N_PERM),
                            ("seed", seed, 0, None)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo or (hi is not None and v > hi):
            raise VpevalError(f"{name} must be an integer >= {lo}" + (f" and <= {hi:,}" if hi else "")
                              + f", got {v!r}")
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise VpevalError(f"alpha must be in (0, 1), got {alpha!r}")


def secrecy_test(trials=(), one_to_n=(), *, n_perm: int = 999, n_boot: int = 200, seed: int = 0,
                 alpha: float = 0.05, statistics=("eps_max", "d_ece", "lid_max", "alid"),
                 subfamilies: dict | None = None, jobs=None) -> SecrecyTest:
    """Test perfect secrecy of one system over a family of attackers, trial types and statistics.

    Parameters
    ----------
    trials : sequence of TrialInput
        Verification trials per attacker and trial type.
    one_to_n : sequence of OneToNInput
        1-to-N matrices per attacker and condition (need speakers; :class:`vpeval.pipeline.OneToN`).
    n_perm : int >= 19
        Relabellings (the same for every member). The smallest reachable p-value is ``1 / (n_perm + 1)``. Where the
        family-wise p-value's Monte-Carlo interval holds ``alpha`` (:func:`near_alpha`), ten times as many are
        drawn (at most twice, up to :data:`MAX_N_PERM`); the result's ``n_perm`` is the last run's. With
        speaker relabelling and ``|S|! <= n_perm + 1`` every permutation is listed once instead (the result's
        ``n_perm`` is then ``|S|! - 1``), and likewise with trial relabelling and ``C(n, K) <= n_perm + 1``
        target subsets (members of equal ``n`` and ``K``; ``n_perm`` is then ``C(n, K) - 1``): exact, and
        independent of ``seed``.
    n_boot : int >= 1
        Speaker-bootstrap replicates of the worst case (re-selected per replicate).
    seed : int >= 0
    alpha : float in (0, 1)
    statistics : subset of :data:`STATISTICS`
        The family's statistics (trial statistics apply to ``trials``, the LID ones, ``speaker_lid`` included, to
        ``one_to_n``); at least one worst case (``eps_max`` or ``lid_max``) must apply. Default: all but
        ``speaker_lid`` (module docstring).
    subfamilies : dict name -> collection of attacker names, optional
        Sub-families decided as well, each over the members of its attackers alone, from the *same*
        relabellings and bootstrap draws (no second pass): e.g. ``{"voice": voice_attackers}`` for the verdict
        of the voice channel beside that of every channel (:mod:`vpeval.analysis.channels`). A sub-family's
        max-T over its own columns is a valid family-wise test of its own perfect secrecy, whatever the other
        members carry; it shares the family's scheme, units and ``n_perm``, so it is the test that
        :func:`secrecy_test` of its members alone would give whenever the family's relabelling scheme is the one
        its members would choose (speaker relabelling: the same result, bit for bit, at the family's final
        ``n_perm``).
    jobs : vpeval.pipeline.jobs.Jobs, optional
        A running pool whose worker processes share the relabellings of large members (at least
        :data:`vpeval.analysis.nulls.PARALLEL_TARGET_ENTRIES` relabellings x targets); the result is the same
        for any number of jobs. None: this process.

    Returns
    -------
    SecrecyTest
        With ``subfamilies``, their tests in its ``subfamilies`` attribute (name -> :class:`SecrecyTest`).

    Raises
    ------
    VpevalError
        No members, bad options, a sub-family naming an attacker outside the family or without a worst-case
        member, a member without both classes or with NaN scores, labels that contradict
        the given speakers, members with different evaluation speakers, fewer than 2 evaluation speakers.

    Examples
    --------
    >>> from vpeval.io.trials import Trials
    >>> rng = np.random.default_rng(0)
    >>> t = Trials(np.r_[rng.normal(2, 1, 200), rng.normal(0, 1, 2000)], np.r_[np.ones(200), np.zeros(2000)].astype(bool))
    >>> r = secrecy_test([TrialInput("asv", "oa", t)], n_perm=199, n_boot=50)
    >>> r.scheme, r.rejected, r.worst.statistic
    ('trial', True, 'eps_max')
    """
    from ..pipeline.jobs import drive

    return drive(secrecy_steps(trials, one_to_n, n_perm=n_perm, n_boot=n_boot, seed=seed, alpha=alpha,
                               statistics=statistics, subfamilies=subfamilies, jobs=jobs))


def secrecy_steps(trials=(), one_to_n=(), *, n_perm: int = 999, n_boot: int = 200, seed: int = 0,
                  alpha: float = 0.05, statistics=("eps_max", "d_ece", "lid_max", "alid"),
                  subfamilies: dict | None = None, jobs=None):
    """:func:`secrecy_test` in two steps (a generator that yields once, when the relabellings of its large
    members are on ``jobs``' workers, and returns the :class:`SecrecyTest`): with
    :class:`vpeval.pipeline.jobs.Started`, the caller computes other things meanwhile."""
    trials, one_to_n = list(trials), list(one_to_n)
    if not trials and not one_to_n:
        raise VpevalError("the perfect-secrecy test needs at least one member (trials or a 1-to-N matrix)")
    check_test_options(n_perm, n_boot, seed, alpha)
    unknown = set(statistics) - set(STATISTICS)
    if unknown:
        raise VpevalError(f"unknown statistics {sorted(unknown)}")
    t_stats = [s for s in ("eps_max", "d_ece") if s in statistics] if trials else []
    l_stats = [s for s in ("lid_max", "alid", "speaker_lid") if s in statistics] if one_to_n else []
    if not ({"eps_max", "lid_max"} & set(t_stats + l_stats)):
        raise VpevalError("the family needs a worst-case statistic: eps_max with trials or lid_max with 1-to-N")
    n_perm, n_boot, seed = int(n_perm), int(n_boot), int(seed)

    # sub-families are checked before the work: every attacker a member, a worst case among their statistics
    worst_of = ({i.attacker for i in trials} if "eps_max" in t_stats else set()) | (
        {i.attacker for i in one_to_n} if "lid_max" in l_stats else set())
    keeps = {str(name): frozenset(attackers) for name, attackers in (subfamilies or {}).items()}
    for name, keep in keeps.items():
        unknown = keep - {i.attacker for i in trials} - {i.attacker for i in one_to_n}
        if unknown:
            raise VpevalError(f"sub-family {name!r}: no member of the family is attacker {sorted(unknown)[0]!r}")
        if not keep & worst_of:
            raise VpevalError(f"sub-family {name!r} has no worst-case member (eps_max or lid_max)")
    profs = None
    designs = [_design_of(i) for i in trials]
    for extension in range(MAX_EXTENSIONS + 1):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            steps = null_family_steps(trials, one_to_n, n_perm, n_boot, seed, t_stats, l_stats, jobs)
            null = _step(steps)  # the members checked, a large member's relabellings on the workers
            if profs is None:  # in a thread, while this one and the workers relabel
                profs = member_profiles_started(trials, one_to_n)
            if null is None:
                yield
                while null is None:
                    null = _step(steps)
            test = _decide(null, None, float(alpha), n_boot, seed, profs.result(), designs)
        more = min(MAX_N_PERM, 10 * (n_perm + 1) - 1)
        if (extension == MAX_EXTENSIONS or null.exact or more <= n_perm
                or not near_alpha(test.p_value, null.n_perm, float(alpha))):
            break
        n_perm = more  # the p-value's Monte-Carlo error could decide the word: ten times the relabellings
    for w in caught:  # the warnings of the run that stands, once
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    profs = profs.result()
    subs = {name: _decide(null, keep, float(alpha), n_boot, seed, profs, designs) for name, keep in keeps.items()}
    return dataclasses.replace(test, subfamilies=subs) if subs else test


def _step(steps):
    """One step of a generator of steps: None while it has more, its return value at its end."""
    try:
        next(steps)
    except StopIteration as done:
        return done.value
    return None


#: Extensions of the relabellings when the family-wise p-value lies near alpha (:func:`near_alpha`).
MAX_EXTENSIONS = 2


def near_alpha(p_value: float, n_perm: int, alpha: float, level: float = 0.99) -> bool:
    """Whether the Monte-Carlo error of a permutation p-value could decide the test at ``alpha``: the
    Clopper-Pearson interval (``level``) of the share of relabellings at or above the observed statistic, from the
    ``p_value (n_perm + 1)`` counted among ``n_perm + 1``, contains ``alpha``.

    :func:`secrecy_test` then draws ten times the relabellings (the first ``n_perm`` are the same draws: their
    streams are seeded per row, or drawn in order from one stream), at most :data:`MAX_EXTENSIONS` times and up to
    :data:`MAX_N_PERM`, and decides on the last run alone. Looking again only where the first run could not tell
    changes the level by at most the chance that the first run's interval holds alpha and the two runs disagree.

    >>> near_alpha(0.05, 999, 0.05), near_alpha(0.001, 999, 0.05), near_alpha(0.3, 999, 0.05)
    (True, False, False)
    """
    from scipy.special import betaincinv  # the beta quantile; scipy.stats costs half a second to import

    B = n_perm + 1
    k = int(round(p_value * B))
    half = (1.0 - level) / 2.0
    lo = 0.0 if k == 0 else float(betaincinv(k, B - k + 1, half))
    hi = 1.0 if k >= B else float(betaincinv(k + 1, B - k, 1.0 - half))
    return lo <= alpha <= hi


def _design_of(inp: TrialInput) -> dict | None:
    t = inp.trials
    if t.enroll is None or t.test is None:
        return None
    return {"trials": len(t), "targets": int(t.is_target.sum()), "probes": int(sorted_codes(t.test)[0].size),
            "models": int(sorted_codes(t.enroll)[0].size)}


def _decide(null: NullFamily, keep: frozenset | None, alpha: float, n_boot: int, seed: int, profs=(),
            designs=()) -> SecrecyTest:
    """The max-T test, worst case, thresholds, exposed speakers and privacy-profile inputs over the members of attackers
    ``keep`` (all when None) from the family's shared null columns and bootstrap replicates; the
    :class:`~vpeval.errors.FewPermutationsWarning` is issued for the whole family only."""
    ks = [k for k, m in enumerate(null.meta) if keep is None or m[0] in keep]
    meta = [null.meta[k] for k in ks]
    t_keep = {null.owner[k][1] for k in ks if null.owner[k][0] == "t"}
    l_keep = {null.owner[k][1] for k in ks if null.owner[k][0] == "l"}
    preps = [p for i, p in enumerate(null.preps) if i in t_keep]
    lid_obs = [o for j, o in enumerate(null.lid_obs) if j in l_keep]
    one_to_n = [o[0] for o in lid_obs]
    scheme, n_perm = null.scheme, null.n_perm
    T = np.column_stack([null.cols[k] for k in ks])
    if np.isnan(T).any():
        raise VpevalError("a statistic of the perfect-secrecy test returned NaN")
    B = T.shape[0]
    P = _p_matrix(T)
    Z = _standardise(T)
    max_z = Z.max(axis=1)
    p_adj = np.array([np.count_nonzero(max_z >= Z[0, k]) / B for k in range(T.shape[1])])
    members = [MemberTest(a, tt, st, float(T[0, k]), float(P[0, k]), float(p_adj[k]),
                          _exact_q(T[1:, k], 0.95), e) for k, (a, tt, st, e) in enumerate(meta)]
    p_family = float(p_adj.min())

    # ---- worst case: family maximum over the worst-case statistics, its floor, thresholds
    wc = [k for k, m in enumerate(meta) if m[2] in WORST_CASE_STATISTICS]
    fam = T[:, wc]
    # ties: the member first in (statistic, attacker, trial type) order, so input order never matters
    order_wc = sorted(range(len(wc)), key=lambda j: (-fam[0, j], meta[wc[j]][2], meta[wc[j]][0], meta[wc[j]][1]))
    best = wc[order_wc[0]]
    null_max = fam[1:].max(axis=1)
    thresholds = {}
    for st in WORST_CASE_STATISTICS + ("speaker_lid",):
        kst = [k for k, m in enumerate(meta) if m[2] == st]
        if kst:
            thresholds[st] = _exact_q(T[1:, kst].max(axis=1), 0.95)

    # ---- exposed speakers (observed per-speaker statistics above the family-wise thresholds)
    speaker_obs = [(null.lid_obs[o[0]][0],) + tuple(o[1:]) for o in null.speaker_obs if o[0] in l_keep]
    exposed = _exposed(preps, lid_obs, thresholds, scheme, speaker_obs, alpha)

    # ---- bootstrap of the re-selected family maximum (the members' replicates on the same draws)
    boot_max = family_maximum(null.t_reps, null.l_reps, n_boot, t_keep, l_keep)
    reps = boot_max[np.isfinite(boot_max)] if np.isfinite(boot_max).any() else boot_max
    a, tt, st, _ = meta[best]

    def ceiling_of(attacker, trial_type, stat):
        if stat == "eps_max":
            pb = next(p for p in preps if (p.inp.attacker, p.inp.trial_type) == (attacker, trial_type))
            return eps_max_ceiling_nats(pb.n_tar, pb.n - pb.n_tar) / _LN2
        mi = next(i for i in one_to_n if (i.attacker, i.trial_type) == (attacker, trial_type))
        return math.log2(np.shape(mi.matrix.scores)[1])

    ceiling = ceiling_of(a, tt, st)
    family_ceiling = max(ceiling_of(meta[k][0], meta[k][1], meta[k][2]) for k in wc)
    value = float(T[0, best])
    units, unit_words = target_units(null, ks[best], scheme)
    refused = interval_refusal(units, n_boot, unit_words)
    lo_, hi_ = (None, None) if refused else (_exact_q(reps, 0.05), _exact_q(reps, 0.95))
    worst = WorstCase(value, st, a, tt, _exact_q(null_max, 0.95), lo_, hi_,
                      float(ceiling), bool(value >= ceiling - CEILING_TOLERANCE_BITS), n_boot,
                      "speaker bootstrap of the family maximum, strongest attacker re-selected in every replicate"
                      if scheme in SPEAKER_SCHEMES else
                      f"{'probe' if scheme == 'probe' else 'trial'} bootstrap of the family maximum, strongest "
                      "attacker re-selected in every replicate")
    worst = dataclasses.replace(worst, family_ceiling=float(family_ceiling), interval_note=refused,
                                target_units=int(units))
    log10_distinct = _count_log10(scheme, null.S, preps or null.preps, null.rows)
    can_reject = 1.0 / (n_perm + 1) <= alpha and log10_distinct >= math.log10(1.0 / alpha)
    if not can_reject and keep is None:
        warnings.warn(f"the perfect-secrecy test cannot reject at alpha = {alpha:g}: "
                      + (f"only about {10 ** log10_distinct:.3g} distinct relabellings exist"
                         if log10_distinct < math.log10(1.0 / alpha) else
                         f"{n_perm} relabellings reach p >= {1 / (n_perm + 1):.3g}")
                      + "; the verdict cannot be 'leaks' or 'partial'", FewPermutationsWarning,
                      stacklevel=user_stacklevel())
    kept_profiles = tuple(p for p in profs if keep is None or p.attacker in keep)
    kept_designs = tuple(d for d, p in zip(designs, profs) if d is not None and (keep is None or p.attacker in keep))
    note = _SCHEME_NOTES[scheme] + (f" ({null.scheme_reason})" if null.scheme_reason else "")
    if null.exact:
        note += f"; all {n_perm + 1} relabellings listed once (exact)"
    celled, said = _cells.on_cells(preps)
    note += said
    return SecrecyTest(scheme, note, n_perm, seed, alpha, p_family, bool(p_family <= alpha and can_reject), members,
                       worst, thresholds, exposed, null.n_units, null_max, float(log10_distinct), bool(can_reject),
                       kept_profiles, kept_designs, np.where(np.isfinite(boot_max), boot_max, np.nan),
                       null.boot_units, tested_share=null.tested, cells=celled)


def _exposed(preps, lid_obs, thresholds, scheme, speaker_obs=(), alpha: float = 0.05) -> list[ExposedSpeaker]:
    """The exposed speakers (module docstring), most exposed first. 1-to-N members with a speaker LID
    (``speaker_obs``: ``(input, speakers, values, hits, probes, N)``) name their speakers by it, with each one's
    rank-1 bound at ``alpha`` over all of their speakers; their LID_max no longer names speakers (the LIDs of one
    fitted slope, which a leaking speaker steepens for all)."""
    if scheme not in SPEAKER_SCHEMES:
        return []
    from ..blocks import pav_trial_llrs

    best: dict[str, ExposedSpeaker] = {}

    def offer(e: ExposedSpeaker):
        cur = best.get(e.speaker)
        if cur is None or (e.value, e.statistic, e.attacker) > (cur.value, cur.statistic, cur.attacker):
            best[e.speaker] = e

    thr = thresholds.get("eps_max")
    if thr is not None:
        for p in preps:
            t = p.inp.trials
            tar_llr, _ = pav_trial_llrs(t.tar, t.non, laplace=True)
            names, top = _speaker_max(np.asarray(p.inp.probe_speaker, dtype=str)[t.is_target], np.abs(tar_llr) / _LN2)
            for s, x in zip(names.tolist(), top.tolist()):
                if x > thr + _ROUNDING:  # two float paths to the same bin value must not list a speaker
                    offer(ExposedSpeaker(s, x, thr, "eps_max", p.inp.attacker, p.inp.trial_type))
    thr = thresholds.get("speaker_lid")
    by_speaker = {id(o[0]) for o in speaker_obs}
    if thr is not None and speaker_obs:
        from ..metrics.linkage.speaker import rank1_ratio_lower_bits

        level = alpha / sum(len(o[1]) for o in speaker_obs)  # every speaker of every member at once
        for i, names, values, hits, probes, N in speaker_obs:
            for s, x, k, n in zip(names.tolist(), values.tolist(), hits.tolist(), probes.tolist()):
                if x > thr + _ROUNDING:
                    offer(ExposedSpeaker(str(s), float(x), thr, "speaker_lid", i.attacker, i.trial_type, int(k),
                                         int(n), int(N), rank1_ratio_lower_bits(k, n, N, level), level))
    thr = thresholds.get("lid_max")
    if thr is not None:
        for i, lid, pspk in lid_obs:
            if id(i) in by_speaker:
                continue
            for s, x in zip(*(a.tolist() for a in _speaker_max(np.asarray(pspk, dtype=str), lid))):
                if x > thr + _ROUNDING:
                    offer(ExposedSpeaker(s, x, thr, "lid_max", i.attacker, i.trial_type))
    return sorted(best.values(), key=lambda e: (-e.value, e.speaker))


def _speaker_max(speakers: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``speakers`` (sorted) and the largest of ``values`` of each (one pass, no mask per speaker)."""
    names, codes = sorted_codes(speakers)
    top = np.full(names.size, -np.inf)
    np.maximum.at(top, codes, np.asarray(values, dtype=np.float64))
    return names, top
