r"""The verdict: one word per system from the perfect-secrecy test and the worst case against a disclosure budget.

The rule (also in ``docs/report.md``)
-------------------------------------
The system's family (every attacker, attack trial type and statistic, :mod:`vpeval.analysis.secrecy`) is tested
for perfect secrecy family-wise at level ``alpha``. The *worst case* ``W`` is the largest worst-case disclosure
of the family (eps_max or LID_max, bits), with a 90 % interval ``[L, U]`` (strongest attacker re-selected in
every bootstrap replicate) and its noise floor ``F`` (95th percentile of the family maximum under perfect
secrecy). With the budget ``b`` (bits, ``--budget-bits``):

``leaks``
    perfect secrecy rejected family-wise, and ``L > b`` (with 95 % confidence the strongest attacker's worst
    case exceeds the budget) or a speaker is exposed above the budget (its own worst case exceeds both ``b``
    and the family-wise threshold of its statistic: a leak confined to a few speakers, which the speaker
    bootstrap's ``L`` cannot show, since a replicate misses a given speaker with probability
    ``(1 - 1/S)^S``, about 37 %).
``partial``
    rejected, but ``L <= b`` and no speaker exposed above the budget: the scores do carry identity, within (or
    not surely beyond) the budget.
``inconclusive``
    not rejected, but the data cannot rule out disclosure above the budget: the *pooled* worst case's bound
    ``max(U_m, F_m)`` exceeds ``b`` or a speaker is exposed (below). The verdict says about how many more
    resampling units (speakers) would bring the bound under the budget if it shrinks as ``n^(-1/4)`` (the
    resolution ``m`` grows as ``sqrt(n)``, and a block of ``m`` trials estimates its LLR to about
    ``1/sqrt(m)``); where every probe meets every model it computes the count from the design instead, or says
    that more speakers alone will not decide it (below). Also ``inconclusive`` when the test cannot reject at ``alpha`` at all (too few relabellings
    or speakers) and when no attacker could show more than the budget even at perfect separation (the family's
    ceiling is ``<= b``).
``protects``
    not rejected, no speaker exposed, and ``max(U_m, F_m) <= b`` (``U_m`` from at least
    :data:`MIN_BOOT_PROTECTS` bootstrap replicates, else ``inconclusive``), where the pooled worst case could
    have shown well more than ``b`` (its ceiling at perfect separation at least :data:`CEILING_FACTOR_PROTECTS`
    times ``b``; else ``inconclusive``: tiny inputs, e.g. 4 targets in 40 trials, whose pooled bound can barely
    reach the budget); with speaker relabelling also at
    least :func:`min_speakers_protects` (``2 / alpha``, 40 at 5 %) evaluation speakers, since with fewer a leak
    confined to one speaker cannot be told from chance.

Why ``protects`` reads a pooled worst case (:class:`~vpeval.analysis.secrecy.ProtectionBound`): no finite
data can rule out a large LLR on a single trial, and privacy-ZEBRA's Laplace-PAV eps_max cannot even rule it out
under perfect secrecy: its pseudo-block of one target and one non-target carries the LLR ``ln(Nn / Nt)``, so a
single target at the top of the scores (probability ``Nt / N``) reads ``log2(2 Nn / Nt)`` bits at every sample
size (6.8 bits at the demo's 50 targets in 5,550 trials), and its noise floor never falls under a budget below
that. "The data rule out disclosure above the budget" is therefore said at a resolution: the strongest evidence
the attacker's scores give when the ``m = ceil(sqrt(n))`` highest and lowest trials are pooled
(:func:`~vpeval.analysis.worst_case.eps_max_pooled_nats`; LID_max as it is). Its floor under perfect secrecy
falls towards 0 as the trials grow at a fixed share of targets, and ``m / n`` falls to 0, so disclosure over any
fixed share of the trials is eventually measured in full: ``protects`` is reachable with enough trials. In audits,
where every probe meets every one of ``M`` models, the target share is ``1 / M`` and a pooled block holds about
``sqrt(P / M)`` targets however many speakers are added: there the floor falls only slowly (measured in
``docs/verdict_calibration.md``: ``protects`` in 7.5 % of perfectly secret audits at 40 speakers). So
there the "more speakers" count of an ``inconclusive`` verdict comes from the design: adding speakers (each with
the ``p = P / S`` probes per speaker seen, and enrolled) raises a pooled block's targets ``k`` only towards
``sqrt(p)``; if the bound would stay above the budget even when shrinking as ``k^(-1/2)``, the verdict says that
more speakers alone will not decide it and how many probes per speaker would, else it gives the count as a lower
bound (with one or two targets per block the bound falls more slowly than ``k^(-1/2)``).
Disclosure confined to fewer than ``m`` trials is what the exposed speakers and the test itself (which reads
the unpooled eps_max) are there for: either blocks ``protects``.

Comparisons with the budget allow a relative ``1e-9`` (a likelihood ratio of exactly 10 is not "above" 10).

The EER stays in the sentence as evidence of the average, never as the decider.

Default budget: ``log2(10) = 3.32`` bits, i.e. a likelihood ratio of 10 (eps_max of 1 in log10 units): the upper
edge of privacy-ZEBRA's least-disclosing non-zero tag ``A`` (Nautsch et al., Interspeech 2020, Table 1), and
the upper end of "limited/weak support" on the verbal likelihood-ratio scales of forensic reporting (ENFSI
Guideline for Evaluative Reporting, 2015: LR 2-10). An attacker whose strongest evidence about any trial stays
within a factor of 10 cannot move a 1:1 prior beyond 10:1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..errors import VpevalError
from .secrecy import ProtectionBound, SecrecyTest

__all__ = ["PROTECTS", "INCONCLUSIVE", "PARTIAL", "LEAKS", "VERDICTS", "DEFAULT_BUDGET_BITS", "VERDICT_RULE",
           "Verdict", "decide", "check_budget", "exposed_names", "min_speakers_protects"]

PROTECTS = "protects"
INCONCLUSIVE = "inconclusive"
PARTIAL = "partial"
LEAKS = "leaks"
#: The fixed vocabulary, least to most severe.
VERDICTS = (PROTECTS, INCONCLUSIVE, PARTIAL, LEAKS)

#: Default disclosure budget: a likelihood ratio of 10 (privacy-ZEBRA tag A's upper edge), in bits.
DEFAULT_BUDGET_BITS = math.log2(10.0)

VERDICT_RULE = (
    "How the verdict is decided. Null hypothesis: perfect secrecy (the scores carry no information on who is "
    "speaking). Every attacker, attack trial type and statistic (eps_max and D_ECE of the verification trials, "
    "LID_max and ALID of the 1-to-N search, all in bits) is recomputed on the same relabellings (of speaker "
    "identities where speakers are known), and the p-values are adjusted family-wise (Westfall-Young max-T on "
    "statistics standardised by their own null spread), so fielding more attackers "
    "cannot raise the chance of calling a perfectly secret system leaking above alpha. The worst case is the "
    "largest eps_max or LID_max over all attackers, with a 90 % interval from a bootstrap over speakers (over "
    "probes or trials when the input has no speakers) that re-selects the strongest attacker in every "
    "replicate, and its noise floor (what the strongest attacker reaches by chance at this sample size). The "
    "disclosure budget (default 3.32 bits = a likelihood ratio of 10, privacy-ZEBRA's tag A; --budget-bits) is "
    "the most evidence about any trial the audit tolerates. 'leaks': perfect secrecy rejected and the interval's "
    "lower end above the budget, or a speaker exposed above it (its own worst case beyond both the budget and "
    "what chance gives family-wise); 'partial': rejected, neither; 'inconclusive': not "
    "rejected, and disclosure above the budget is not ruled out; 'protects': not rejected, no speaker exposed, "
    "and the worst case at a resolution of sqrt(n) trials (eps_max with the sqrt(n) highest and lowest scores "
    "pooled, since no data can rule out a large LLR on one trial; LID_max as it is) has its upper bound and "
    "noise floor within the budget, where that worst case could show at least twice the budget at all (tiny "
    "inputs cannot); where speakers are relabelled, 'protects' also needs at least 2 / alpha "
    "evaluation speakers (40 at 5 %), since with fewer a leak confined to one speaker cannot be told from "
    "chance. At alpha = 5 %, about 1 in 20 "
    "perfectly secret inputs is still rejected (that is what the level means; measured: 4 % of 200 simulated "
    "audits). The EER is an average and decides nothing."
)


def check_budget(budget_bits: float) -> float:
    """``budget_bits`` as a float, or :class:`VpevalError` unless it is a finite number > 0."""
    if isinstance(budget_bits, bool) or not isinstance(budget_bits, (int, float)) or not (
            math.isfinite(budget_bits) and budget_bits > 0):
        raise VpevalError(f"the disclosure budget must be a finite number of bits > 0, got {budget_bits!r}")
    return float(budget_bits)


_UNIT_WORDS = {"speaker": "evaluation speakers", "probe": "probe utterances", "trial": "trials"}


@dataclass(frozen=True)
class Verdict:
    """One system's verdict with everything behind it (JSON: :meth:`to_dict`).

    Attributes
    ----------
    verdict : str
        One of :data:`VERDICTS`.
    reason, sentence : str
        Why, in words; the plain-language sentence the page and terminal open with.
    budget_bits : float
    test : SecrecyTest
    average : dict or None
        The lowest ROCCH-EER over the verification members ``{attacker, trial_type, eer_rocch}`` (evidence).
    more_units : int or None
        ``inconclusive`` only: about how many more resampling units (speakers) would decide it; where every probe
        meets every model (an audit's design) a lower bound computed from the design, and None when more
        speakers alone cannot decide it (the reason then says how many probes per speaker would).
    warnings : list of str
    """

    verdict: str
    reason: str
    sentence: str
    budget_bits: float
    test: SecrecyTest
    average: dict | None
    more_units: int | None
    warnings: list = field(default_factory=list)

    def to_dict(self) -> dict:
        t = self.test
        return {
            "verdict": self.verdict, "reason": self.reason, "sentence": self.sentence,
            "budget_bits": self.budget_bits, "alpha": t.alpha, "rejected": t.rejected,
            "p_value_familywise": t.p_value, "family_size": len(t.members),
            "n_attackers": len({m.attacker for m in t.members}),
            "worst_case": t.worst.to_dict(), "exposed_speakers": [e.to_dict() for e in t.exposed],
            "average": self.average, "more_units_needed": self.more_units,
            "units": _UNIT_WORDS[t.scheme], "n_units": t.n_units, "warnings": list(self.warnings),
            "test": t.to_dict(),
        }


def _b(x: float) -> str:
    return f"{x:.3g}"


def _bits(x: float) -> str:
    """``x`` bits in words: '1 bit', '12.5 bits'."""
    return f"{_b(x)} bit" + ("" if _b(x) == "1" else "s")


def _p(test: SecrecyTest) -> str:
    """The family-wise p-value, as 'p <= 1/(n + 1)' when it is the smallest the relabellings can give."""
    floor = 1.0 / (test.n_perm + 1)
    if test.p_value <= floor * (1 + 1e-9):
        return f"p <= {floor:.3g}, the smallest {test.n_perm} relabellings can give"
    return f"p = {test.p_value:.3g}"


#: Fewest bootstrap replicates whose 95th percentile is not simply their maximum ('protects' needs that bound).
MIN_BOOT_PROTECTS = 20
#: 'protects' needs the pooled worst case's ceiling (perfect separation) at least this many times the budget: where
#: the statistic cannot reach far beyond the budget at all, its bootstrap distribution is truncated near the budget
#: and its 95th percentile cannot rule out disclosure above it (a fresh-user trial: 4 targets in 40 trials with a
#: 1-SD leak, pooled ceiling 3.49 bits, came out 'protects' with a bound of 2.62 bits).
CEILING_FACTOR_PROTECTS = 2.0
#: Relative tolerance of the budget comparisons (bits from different float paths).
_TOL = 1e-9


def _more_units(n: int, upper: float, b: float) -> int:
    """Units to add so that ``upper`` shrinks to ``b`` if it scales as ``n^(-1/4)`` (capped at 10**12)."""
    ratio = min(upper / b, 1e3)
    return int(max(1, min(10 ** 12, math.ceil(n * ratio ** 4) - n)))


def _crossed(test: SecrecyTest, pb: ProtectionBound) -> tuple[int, int, int] | None:
    """``(S, P, M)``: evaluation speakers, probes and models when the pooled bound's member scores every probe
    against every model with one target each (an audit's design: target share ``1 / M``), speakers being the
    units and every speaker a model; else None (then the share does not fall as speakers are added)."""
    d = pb.design
    if test.scheme != "speaker" or not d or pb.statistic != "eps_max_pooled":
        return None
    S, P, M = int(test.n_units), int(d["probes"]), int(d["models"])
    if d["trials"] != P * M or d["targets"] != P or not 1 <= S <= M:
        return None
    return S, P, M


def _more_speakers_crossed(S: int, P: int, M: int, upper: float, b: float) -> int | None:
    """Speakers to add to a crossed design (:func:`_crossed`) so that ``upper`` shrinks to ``b``, each with the
    ``P / S`` probes per speaker seen and enrolled as a model (the ``M - S`` other models kept), if the bound
    shrinks as ``k^(-1/2)`` in the targets ``k`` of a pooled block; None when no number of speakers can.

    A pooled block of ``m = sqrt(n)`` of the ``n = P M`` trials holds ``k = m / M = sqrt(P / M)`` targets under
    perfect secrecy. At a fixed target share ``k`` grows as ``n^(1/2)``, which is :func:`_more_units`' law
    ``n^(-1/4)``; here ``P' / M' = p S' / (S' + D)`` (``p = P / S`` probes per speaker, ``D = M - S``) stays
    below ``p`` however many speakers are added, so ``k`` stays below ``sqrt(p)``. The law ``k^(-1/2)`` (a block
    of ``k`` targets estimates its LLR to about ``1 / sqrt(k)``) holds for many targets per block; with the one
    or two of an audit the measured bound falls more slowly (``docs/verdict_calibration.md``), so the count is a
    lower bound.
    """
    p, D = P / S, M - S
    r = (P / M) * min(upper / b, 1e3) ** 4  # the P' / M' that brings the bound to b
    if r >= p:
        return None
    return int(max(1, min(10 ** 12, math.ceil(r * D / (p - r)) - S)))


def _more_words(test: SecrecyTest, pb: ProtectionBound, x: float, b: float, what: str) -> tuple[int | None, str]:
    """(the count, the words) for how many more units would bring ``what`` (``x`` bits) within the budget; the
    words are followed by 'would decide it' or 'would be needed'."""
    units = _UNIT_WORDS[test.scheme]
    cross = _crossed(test, pb)
    if cross is None:
        more = _more_units(test.n_units, x, b)
        return more, f"about {more:,} more {units} (if the {what} shrinks as n^(-1/4))"
    S, P, M = cross
    p = P / S
    more = _more_speakers_crossed(S, P, M, x, b)
    design = (f"every probe here meets every one of the {M:,} models, so a pooled block holds about "
              f"{math.sqrt(P / M):.2g} targets, and at most sqrt({p:.3g} probes per speaker) = {math.sqrt(p):.2g} "
              "however many speakers are added")
    if more is None:
        probes = p * min(x / b, 1e3) ** 4
        return None, (f"more {units} alone would not decide it ({design}: the {what} would stay above the budget "
                      f"even if it shrank as that count^(-1/2)); at that rate about {math.ceil(probes):,} probes per "
                      "speaker, with these speakers and models,")
    return more, (f"at least about {more:,} more {units} with {p:.3g} probes each ({design}; counted as if the "
                  f"{what} shrank as that count^(-1/2), faster than it does with so few targets)")


def min_speakers_protects(alpha: float) -> int:
    """Fewest evaluation speakers with which speaker relabelling can support ``protects``: ``ceil(2 / alpha)``
    (40 at alpha = 5 %).

    Speaker relabelling (the null of an audit) keeps any one speaker's model-probe pairing in place in ``1 / S``
    of the relabellings, and those relabellings show that speaker's leak too: a leak confined to one speaker
    gives a family-wise p-value near ``1 / S`` or above, however strong it is, so with ``S <= 1 / alpha`` the
    test cannot reject it, and the pooled bound (a block of ``sqrt(n)`` trials holds more than one speaker's
    targets) can dilute it under the budget. Measured (``docs/verdict_calibration.md``, one speaker's target
    scores raised by 12 standard deviations): rejected in 42.5 % of 40 audits at 10 speakers, 72.5 % at 20 (one
    of them called ``protects`` under the rule without this condition), 100 % at 40. ``2 / alpha`` is where the
    measured rejection reached 100 %; below it ``protects`` is withheld (``inconclusive``, naming how many more
    speakers are needed).

    >>> min_speakers_protects(0.05), min_speakers_protects(0.01)
    (40, 200)
    """
    return int(math.ceil(2.0 / alpha - 1e-9))


def _few_speakers(S: int, need: int) -> str:
    return (f"with {S} evaluation speakers a leak confined to one speaker cannot be told from chance (1/{S} of the "
            f"speaker relabellings keep its pairing in place), so 'protects' needs at least {need} (2 / alpha)")


_STAT_WORDS = {"eps_max": "eps_max", "d_ece": "D_ECE", "lid_max": "LID_max", "alid": "ALID"}


def _deciders(test: SecrecyTest, shown: int = 2) -> str:
    """Which statistics reject (adjusted p <= alpha): ' by D_ECE of asv, oa' when at most ``shown`` do (smallest
    p first), else ' by 77 of 128 statistics (eps_max 20, D_ECE 25, ...)'; '' if none does on its own."""
    rej = sorted((m for m in test.members if m.p_adjusted <= test.alpha),
                 key=lambda m: (m.p_adjusted, m.statistic, m.attacker, m.trial_type))
    if not rej:
        return ""
    if len(rej) <= shown:
        return " by " + "; ".join(f"{_STAT_WORDS.get(m.statistic, m.statistic)} of {m.attacker}"
                                  + ("" if m.trial_type == "scores" else f", {m.trial_type}") for m in rej)
    counts = {}
    for m in rej:
        counts[m.statistic] = counts.get(m.statistic, 0) + 1
    per = ", ".join(f"{_STAT_WORDS.get(k, k)} {counts[k]}" for k in _STAT_WORDS if k in counts)
    return f" by {len(rej)} of {len(test.members)} statistics ({per})"


def _resolution(pb: ProtectionBound) -> str:
    """What the pooled worst case is, in words."""
    if pb.statistic == "lid_max":
        return "the strongest attacker's worst case (LID_max)"
    return (f"the strongest attacker's worst case at a resolution of {pb.resolution:,} trials (eps_max with the "
            f"{pb.resolution:,} highest and lowest scores pooled)")


def _budget(b: float) -> str:
    lr = f"{2 ** b:.3g}" if b < 1000 else f"2^{b:.4g}"  # 2 ** 1024 overflows a float
    return f"the budget of {_bits(b)} (a likelihood ratio of {lr})"


def decide(test: SecrecyTest, budget_bits: float = DEFAULT_BUDGET_BITS) -> Verdict:
    """The verdict of one system from its perfect-secrecy test (rule: module docstring).

    Parameters
    ----------
    test : SecrecyTest
    budget_bits : float > 0
        Disclosure budget in bits (default :data:`DEFAULT_BUDGET_BITS`, a likelihood ratio of 10).

    Returns
    -------
    Verdict

    Raises
    ------
    VpevalError
        A budget that is not a finite number > 0.
    """
    b = check_budget(budget_bits)
    w = test.worst
    pb = test.protection
    if pb is None:  # a hand-made test without the pooled statistics: the worst case itself
        pb = ProtectionBound(w.value, w.statistic, w.attacker, w.trial_type, 1, w.floor, w.ci_high)
    tol = _TOL * max(1.0, b)  # bit values from different float paths: an LR of exactly 10 is not "above" 10
    need = min_speakers_protects(test.alpha)
    few = test.scheme == "speaker" and test.n_units < need  # a one-speaker leak cannot be told from chance
    more = None
    warnings = []
    res = _resolution(pb)
    if test.rejected:
        over = [e for e in test.exposed if e.value > b + tol]  # each above its family-wise threshold too
        verdict = LEAKS if w.ci_low > b + tol or over else PARTIAL
        reason = (f"perfect secrecy is rejected family-wise{_deciders(test)} ({_p(test)}; alpha {test.alpha:g}) "
                  f"and the worst case's lower bound {_bits(w.ci_low)} is "
                  + ("above " if w.ci_low > b + tol else "within ") + _budget(b))
        if over and w.ci_low <= b + tol:  # the exposed speakers decide it (else the sentence lists them)
            reason += (", but "
                       + f"{len(over)} {_UNIT_WORDS[test.scheme]} ({exposed_names(over)}) are exposed above it: "
                       "each one's worst case exceeds both the budget and what the strongest attacker reaches by "
                       "chance family-wise (a speaker bootstrap misses a given speaker in about 37 % of its "
                       "replicates, so its lower bound cannot show a leak confined to a few speakers)")
    elif not test.can_reject:
        verdict = INCONCLUSIVE
        reason = (f"the test cannot reject perfect secrecy at alpha {test.alpha:g} with these data: "
                  + (f"only about {10 ** test.log10_distinct:.3g} distinct relabellings exist (too few "
                     f"{_UNIT_WORDS[test.scheme]})" if test.log10_distinct < math.log10(1.0 / test.alpha) else
                     f"{test.n_perm} relabellings reach p >= {1 / (test.n_perm + 1):.3g}"))
    elif w.family_ceiling <= b + tol:
        verdict = INCONCLUSIVE
        reason = (f"perfect secrecy is not rejected ({_p(test)}), but with these trial counts no attacker can show "
                  f"more than {_bits(w.family_ceiling)} (perfect separation), at or below {_budget(b)}: the data "
                  "cannot tell whether the budget is kept")
    elif w.n_boot < MIN_BOOT_PROTECTS:
        verdict = INCONCLUSIVE
        reason = (f"perfect secrecy is not rejected ({_p(test)}), but {w.n_boot} bootstrap replicates cannot give "
                  f"the upper bound 'protects' needs (at least {MIN_BOOT_PROTECTS}: the 95th percentile)")
    elif pb.ceiling is not None and pb.ceiling < CEILING_FACTOR_PROTECTS * b - tol:
        verdict = INCONCLUSIVE
        reason = (f"perfect secrecy is not rejected ({_p(test)}), but with these trial counts {res} cannot exceed "
                  f"{_bits(pb.ceiling)} even at perfect separation, less than twice {_budget(b)}: its bound is "
                  "too coarse here to rule out disclosure above the budget (more trials, and targets among them, "
                  "would decide it)")
    elif pb.upper <= b + tol and not test.exposed and not few:
        verdict = PROTECTS
        reason = (f"perfect secrecy is not rejected ({_p(test)}), no speaker is exposed, and {res} stays within "
                  f"{_budget(b)} (pooled upper bound {_bits(pb.ci_high)}, pooled noise floor {_bits(pb.floor)})")
    else:
        verdict = INCONCLUSIVE
        if test.exposed:
            reason = (f"perfect secrecy is not rejected ({_p(test)}), but {len(test.exposed)} "
                      f"{_UNIT_WORDS[test.scheme]} are exposed, so disclosure above {_budget(b)} is not ruled out")
        elif pb.upper <= b + tol:  # within the budget: only the number of speakers stands in the way
            more = need - test.n_units
            reason = (f"perfect secrecy is not rejected ({_p(test)}) and {res} stays within {_budget(b)} (pooled "
                      f"upper bound {_bits(pb.ci_high)}, pooled noise floor {_bits(pb.floor)}), but "
                      f"{_few_speakers(test.n_units, need)}; at least {more:,} more evaluation speakers would "
                      "decide it")
        else:
            more, words = _more_words(test, pb, pb.upper, b, "bound")
            reason = (f"perfect secrecy is not rejected ({_p(test)}), but the data cannot rule out {res} above "
                      f"{_budget(b)} (pooled upper bound {_bits(pb.ci_high)}, pooled noise floor {_bits(pb.floor)}); "
                      f"{words} would decide it")
            if few:
                reason += f"; and {_few_speakers(test.n_units, need)}"
                if more is not None:
                    more = max(more, need - test.n_units)
    if pb.floor > b + tol and verdict != INCONCLUSIVE:
        warnings.append(f"at this sample size the noise floor of {res} ({_bits(pb.floor)}: what the strongest "
                        f"attacker reaches by chance) exceeds {_budget(b)}, so 'protects' cannot be reached here; "
                        f"{_more_words(test, pb, pb.floor, b, 'floor')[1]} would be needed")
    if w.at_ceiling:
        warnings.append(f"the worst case {_bits(w.value)} sits at the most {w.statistic} can show with these "
                        f"trial counts ({_bits(w.ceiling)}): read it as 'at least this much'")
    if test.scheme != "speaker":
        warnings.append(f"relabelling: {test.scheme_note}")
    eers = [m for m in test.members if m.eer_rocch is not None]
    average = None
    if eers:
        low = min(eers, key=lambda m: (m.eer_rocch, m.attacker, m.trial_type))
        average = {"attacker": low.attacker, "trial_type": low.trial_type, "eer_rocch": low.eer_rocch}
    sentence = _sentence(verdict, reason, test, average, b)
    return Verdict(verdict, reason, sentence, b, test, average, more, warnings)


def _sentence(verdict: str, reason: str, test: SecrecyTest, average: dict | None, b: float) -> str:
    w = test.worst
    n_att = len({m.attacker for m in test.members})
    stat = {"eps_max": "eps_max", "lid_max": "LID_max"}[w.statistic]
    where = "" if w.trial_type == "scores" else f", {w.trial_type}"  # a score file: the attacker is the file
    s = (f"Worst case {_bits(w.value)} ({stat}, attacker {w.attacker}{where}; 90 % interval "
         f"{_b(w.ci_low)} to {_bits(w.ci_high)}, noise floor {_bits(w.floor)}"
         + (f", at the ceiling of {_bits(w.ceiling)} for these trial counts: at least this much" if w.at_ceiling
            else "")
         + f") over {n_att} attacker{'s' if n_att != 1 else ''} and {len(test.members)} statistics")
    if test.exposed:
        s += (f"; exposed: {len(test.exposed)} of {test.n_units} {_UNIT_WORDS[test.scheme]} "
              f"({exposed_names(test.exposed)})")
    if average is not None:
        where = "" if average["trial_type"] == "scores" else f", {average['trial_type']}"
        s += (f". The EER, an average over trials, is {100 * average['eer_rocch']:.3g} % at its lowest "
              f"({average['attacker']}{where}; ideal 50 %)")
    return s + f". Verdict '{verdict}': {reason}."


def exposed_names(exposed, shown: int = 5) -> str:
    """The first ``shown`` exposed speakers' names and how many more (one wording for sentence and table)."""
    names = ", ".join(e["speaker"] if isinstance(e, dict) else e.speaker for e in exposed[:shown])
    return names + (f" and {len(exposed) - shown} more" if len(exposed) > shown else "")
