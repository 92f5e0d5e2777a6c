r"""The verdict: one word per system from the perfect-secrecy test and the attackers' privacy profile.

The rule (also in ``docs/report.md``)
-------------------------------------
Every attacker, attack trial type and statistic of the system is tested for perfect secrecy family-wise at
level ``alpha`` (:mod:`vpeval.analysis.secrecy`: max-T over relabellings). Every member also gets its *privacy
profile* ``eps(delta)`` (:mod:`vpeval.metrics.profile`): the smallest ``eps`` such that every decision region
``A`` of its scores (thresholds, bands and two-tailed regions) has ``P(A | same) <= e^eps P(A | different) +
delta`` and the mirror image; with simultaneous bounds ``eps_low <= eps <= eps_high`` over every member and delta
at once, at level ``1 - alpha`` (:mod:`vpeval.analysis.profiles`). At the stated ``delta`` (``--delta``; default
``1 / (2 S)`` for ``S`` speakers, 1 % without speakers) and the budget ``b`` (``--budget-bits``):

``protects``
    ``eps_high(delta) <= b`` for every member: with confidence ``1 - alpha``, no attacker of the family has a
    decision whose likelihood ratio exceeds ``2^b``, except on at most a share ``delta`` of the trials (a leak
    confined to fewer trials than that is within the certificate, by definition).
``leaks``
    perfect secrecy rejected family-wise and either ``eps_low(delta) > b`` for some member (with confidence, some
    attacker's decisions carry more than the budget on more than ``delta`` of the trials), or an *identified
    speaker*: an exposed speaker of a 1-to-N member whose own model ranks first for so many of its probes that the
    lower confidence bound of its rank-1 likelihood ratio exceeds the budget (simultaneous over every speaker of
    those members, probes independent given their speaker; :class:`~vpeval.analysis.secrecy.ExposedSpeaker`).
    The profile is a statement about the population of speakers and cannot show one speaker of ``S`` beyond
    ``delta = 1 / (2 S)`` (a speaker's trials are counted as few independent ones by their design effect); the
    second route states what the data do show of that speaker. ``decided_by`` says which route decided.
``partial``
    rejected, but neither: the scores carry identity, not shown beyond the budget at this delta.
``inconclusive``
    not rejected, and the data cannot certify the budget (``eps_high > b``): the verdict says how much data would
    (:func:`vpeval.analysis.profiles.plan`).

One number decides and the same number is shown: the headline is ``eps_low``, ``eps`` and ``eps_high`` at delta of
the strongest members. eps_max (privacy-ZEBRA's worst case, ``delta = 0`` under Laplace-smoothed PAV) stays as
evidence with its ceiling and noise floor: no finite sample can bound it from above, so it decides nothing.
Comparisons with the budget allow a relative ``1e-9`` (a likelihood ratio of exactly 10 is not "above" 10).

Default budget: ``log2(10) = 3.32`` bits, i.e. a likelihood ratio of 10 (eps_max of 1 in log10 units): the upper
edge of privacy-ZEBRA's least-disclosing non-zero tag ``A`` (Nautsch et al., Interspeech 2020, Table 1), and
the upper end of "limited/weak support" on the verbal likelihood-ratio scales of forensic reporting (ENFSI
Guideline for Evaluative Reporting, 2015: LR 2-10).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..errors import VpevalError
from .profiles import ProfileFamily, check_budget, check_delta, plan, profile_family
from .secrecy import SecrecyTest

__all__ = ["PROTECTS", "INCONCLUSIVE", "PARTIAL", "LEAKS", "VERDICTS", "DEFAULT_BUDGET_BITS", "VERDICT_RULE",
           "Verdict", "decide", "check_budget", "exposed_names", "plain_sentence", "deciding_attacker"]

PROTECTS = "protects"
INCONCLUSIVE = "inconclusive"
PARTIAL = "partial"
LEAKS = "leaks"
#: The fixed vocabulary, least to most severe.
VERDICTS = (PROTECTS, INCONCLUSIVE, PARTIAL, LEAKS)

#: Default disclosure budget: a likelihood ratio of 10 (privacy-ZEBRA tag A's upper edge), in bits.
DEFAULT_BUDGET_BITS = math.log2(10.0)

VERDICT_RULE = (
    "How the verdict is decided. Each attacker's privacy profile eps(delta): no decision it can make from its scores "
    "(a threshold, a band or two tails) is more than 2^eps times likelier for the same speaker than for different "
    "speakers, or the reverse, except on a share delta of the trials; its bounds eps_low and eps_high hold for every "
    "attacker and delta at once at 1 - alpha (Clopper-Pearson bounds on every region; a speaker's trials counted as "
    "fewer independent ones by their design effect). 'protects': eps_high within the budget (default 3.32 bits, a "
    "likelihood ratio of 10) for every attacker at delta (default 1 / (2 S), half of one speaker's share); 'leaks': "
    "perfect secrecy rejected by a family-wise permutation test (max-T over every attacker, trial type and "
    "statistic, speaker identities relabelled) and either eps_low above the budget for some attacker or, in a 1-to-N "
    "search, an exposed speaker identified beyond it (the lower bound of its rank-1 likelihood ratio, for all "
    "speakers at once at 1 - alpha); 'partial': rejected, not 'leaks'; "
    "'inconclusive': not rejected and not certified (the verdict says how much data would). eps_max (delta = 0) and "
    "the EER are evidence only. The deciding attacker: of the largest eps_low (leaks), the test's smallest p "
    "(partial), else of the largest eps_high."
)


_UNIT_WORDS = {"speaker": "evaluation speakers", "speaker-row": "probe speakers", "probe": "probe utterances", "trial": "trials"}


@dataclass(frozen=True)
class Verdict:
    """One system's verdict with everything behind it (JSON: :meth:`to_dict`).

    Attributes
    ----------
    verdict : str
        One of :data:`VERDICTS`.
    reason, sentence : str
        Why, in the rule's words; the sentence of numbers behind the verdict (profile, evidence, exposed
        speakers, EER, reason).
    plain : str
        One sentence for a reader without statistics, the page's and terminal's first: what the strongest
        attacker can do, to how many speakers, with what confidence (:func:`plain_sentence`).
    budget_bits : float
    test : SecrecyTest
    average : dict or None
        The lowest ROCCH-EER over the verification members ``{attacker, trial_type, eer_rocch}`` (evidence).
    profile : ProfileFamily
        The family's privacy profile at ``delta``, the numbers that decide.
    decided_by : str or None
        ``leaks`` only: ``"profile"`` (``eps_low(delta)`` above the budget) or ``"speaker"`` (an identified speaker,
        :attr:`identified`; the profile's bound is not above the budget).
    identified : list of ExposedSpeaker
        The exposed speakers whose rank-1 bound (``bound_bits``) exceeds the budget, most exposed first.
    plan : dict or None
        ``inconclusive`` and ``partial`` only: how much data a perfectly secret system would need to be certified at
        this delta and budget (:func:`vpeval.analysis.profiles.plan`; for ``partial``, whose system is not perfectly
        secret, a lower bound on what its certificate needs); None when even 10,000 times the data would not.
    warnings : list of str
    """

    verdict: str
    reason: str
    sentence: str
    budget_bits: float
    test: SecrecyTest
    average: dict | None
    profile: ProfileFamily
    plan: dict | None = None
    warnings: list = field(default_factory=list)
    plain: str = ""
    decided_by: str | None = None
    identified: list = field(default_factory=list)

    def to_dict(self) -> dict:
        t = self.test
        return {
            "verdict": self.verdict, "plain": self.plain, "reason": self.reason, "sentence": self.sentence,
            "budget_bits": self.budget_bits, "alpha": t.alpha, "rejected": t.rejected,
            "p_value_familywise": t.p_value, "family_size": len(t.members),
            "n_attackers": len({m.attacker for m in t.members}),
            "worst_case": t.worst.to_dict(), "exposed_speakers": [e.to_dict() for e in t.exposed],
            "average": self.average, "delta": self.profile.delta, "eps_low_bits": self.profile.eps_low,
            "eps_bits": self.profile.eps, "eps_high_bits": self.profile.eps_high, "profile": self.profile.to_dict(),
            "plan": self.plan, "decided_by": self.decided_by,
            "identified_speakers": [e.speaker for e in self.identified],
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


#: Relative tolerance of the budget comparisons (bits from different float paths).
_TOL = 1e-9


_STAT_WORDS = {"eps_max": "eps_max", "d_ece": "D_ECE", "lid_max": "LID_max", "alid": "ALID",
               "speaker_lid": "speaker LID"}


def _deciders(test: SecrecyTest, shown: int = 2) -> str:
    """Which statistics reject (adjusted p <= alpha): ' by D_ECE of asv, oa' when at most ``shown`` do (smallest
    p first), else ' by 77 of 128 statistics (eps_max 20, D_ECE 25, ...)'; '' if none does on its own."""
    rej = [m for m in test.by_p() if m.p_adjusted <= test.alpha]
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


def _budget(b: float) -> str:
    lr = f"{2 ** b:.3g}" if b < 1000 else f"2^{b:.4g}"  # 2 ** 1024 overflows a float
    return f"the budget of {_bits(b)} (a likelihood ratio of {lr})"


def decide(test: SecrecyTest, budget_bits: float = DEFAULT_BUDGET_BITS, delta: float | None = None, *,
           profile: ProfileFamily | None = None) -> Verdict:
    """The verdict of one system from its perfect-secrecy test and its members' privacy profiles (rule: module
    docstring).

    Parameters
    ----------
    test : SecrecyTest
    budget_bits : float > 0
        Disclosure budget in bits (default :data:`DEFAULT_BUDGET_BITS`, a likelihood ratio of 10).
    delta : float in (0, 1) or None
        The share of trials the certificate may leave out; None: :func:`vpeval.analysis.profiles.default_delta`.
    profile : ProfileFamily, optional
        The family's profile, when already computed (else from ``test.profiles`` at ``delta``).

    Returns
    -------
    Verdict

    Raises
    ------
    VpevalError
        A budget that is not a finite number > 0, a delta outside (0, 1), a test without profiles and no
        ``profile``.
    """
    b = check_budget(budget_bits)
    check_delta(delta)
    if profile is None:
        if not test.profiles:
            raise VpevalError("this perfect-secrecy test carries no privacy profiles (made by hand?); pass profile=")
        profile = profile_family(list(test.profiles), alpha=test.alpha, delta=delta)
    tol = _TOL * max(1.0, b)  # bit values from different float paths: an LR of exactly 10 is not "above" 10
    pr = profile
    identified = [e for e in test.exposed if getattr(e, "bound_bits", None) is not None and e.bound_bits > b + tol]
    decided_by = None
    at = _at(pr)
    warnings = []
    if pr.eps_high <= b + tol:
        verdict = PROTECTS
        reason = (f"every attacker's privacy profile at delta = {_d(pr.delta)} is certified within {_budget(b)}: "
                  f"eps_high {_bits(pr.eps_high)} ({_who(pr, 'eps_high')}), with confidence {1 - test.alpha:g} "
                  "for all attackers at once"
                  + (f"; perfect secrecy is rejected{_deciders(test)} ({_p(test)}), but the leak stays within the "
                     "budget"
                     if test.rejected else ""))
    elif test.rejected and pr.eps_low > b + tol:
        verdict, decided_by = LEAKS, "profile"
        reason = (f"perfect secrecy is rejected family-wise{_deciders(test)} ({_p(test)}; alpha {test.alpha:g}) "
                  f"and the privacy profile's lower bound at delta = {_d(pr.delta)} is {_bits(pr.eps_low)} "
                  f"({_who(pr, 'eps_low')}), above {_budget(b)}")
    elif test.rejected and identified:
        verdict, decided_by = LEAKS, "speaker"
        reason = (f"perfect secrecy is rejected family-wise{_deciders(test)} ({_p(test)}; alpha {test.alpha:g}) "
                  f"and {_identified_words(identified, b)}; the privacy profile at delta = {_d(pr.delta)} "
                  f"(lower bound {_bits(pr.eps_low)}) does not show it on more than delta of the trials")
    elif test.rejected:
        verdict = PARTIAL
        reason = (f"perfect secrecy is rejected family-wise{_deciders(test)} ({_p(test)}; alpha {test.alpha:g}), "
                  f"but at delta = {_d(pr.delta)} the profile's lower bound {_bits(pr.eps_low)} is within "
                  f"{_budget(b)} and its upper bound {_bits(pr.eps_high)} is not: the scores carry identity, not "
                  "shown beyond the budget")
    else:
        verdict = INCONCLUSIVE
        reason = (f"perfect secrecy is not rejected ({_p(test)}), but the data cannot certify {_budget(b)} at "
                  f"delta = {_d(pr.delta)}: eps_high {_bits(pr.eps_high)} ({_who(pr, 'eps_high')})")
        if not test.can_reject:
            reason += (f"; and the test cannot reject at alpha {test.alpha:g} with these data ("
                       + (f"only about {10 ** test.log10_distinct:.3g} distinct relabellings exist"
                          if test.log10_distinct < math.log10(1.0 / test.alpha) else
                          f"{test.n_perm} relabellings reach p >= {1 / (test.n_perm + 1):.3g}") + ")")
    plan_ = None
    if verdict in (INCONCLUSIVE, PARTIAL) and test.profiles:
        # partial: the data cannot bound the leak; what a perfectly secret system of this design would need is a
        # lower bound on what a certificate of this one needs
        plan_ = plan(pr, list(test.profiles), b, design=_design(test))
        reason += "; " + ("to certify, " if verdict == PARTIAL else "") + _plan_words(plan_, pr)
    if math.isinf(pr.eps_high) and verdict in (INCONCLUSIVE, PARTIAL):
        warnings.append(f"at delta = {_d(pr.delta)} the upper bound is infinite: with these trial counts a region "
                        "holding more than delta of one class and none of the other cannot be excluded; a larger "
                        "delta or more trials would bound it")
    if getattr(test.worst, "interval_note", None):
        warnings.append(f"the worst case's 90 % interval is {test.worst.interval_note}")
    if test.scheme != "speaker":
        warnings.append(f"relabelling: {test.scheme_note}")
    if "none" in pr.unit:
        warnings.append("the profile's bounds assume independent trials (no speaker or probe is known): trials "
                        "that share a speaker make them too narrow")
    eers = [m for m in test.members if m.eer_rocch is not None]
    average = None
    if eers:
        low = min(eers, key=lambda m: (m.eer_rocch, m.attacker, m.trial_type))
        average = {"attacker": low.attacker, "trial_type": low.trial_type, "eer_rocch": low.eer_rocch}
    sentence = _sentence(verdict, reason, test, average, pr, at)
    return Verdict(verdict, reason, sentence, b, test, average, pr, plan_, warnings,
                   plain_sentence(verdict, pr, test, b, plan_, identified if decided_by == "speaker" else None),
                   decided_by, identified)


def _identified_words(identified, b: float) -> str:
    """'speaker s07 is identified beyond the budget ... by attacker a: its own model ranks first among 40 for 5 of its
    5 probes, a rank-1 likelihood ratio of at least 13.9 (3.8 bits; ...)'."""
    e = identified[0]
    where = "" if e.trial_type in ("scores", "1-to-N") else f", {e.trial_type}"
    more = "" if len(identified) == 1 else (f" ({len(identified) - 1} more speaker(s) too: "
                                             + ", ".join(x.speaker for x in identified[1:4])
                                             + (" ..." if len(identified) > 4 else "") + ")")
    return (f"speaker {e.speaker} is identified beyond {_budget(b)} by attacker {e.attacker}{where}: its own model "
            f"ranks first among {e.n_models} for {e.rank1_hits} of its {e.n_probes} probes, a rank-1 likelihood ratio "
            f"of at least {2 ** e.bound_bits:.3g} ({_bits(e.bound_bits)}; one-sided Clopper-Pearson at "
            f"{e.bound_level:.3g}, alpha over the speakers, so for all of them at once; probes independent given "
            f"their speaker){more}")


#: What an attack trial type compares, in words.
_COMPARES = {"oa": "original recordings against anonymized ones", "aa": "anonymized recordings with each other",
             "oaoa": "original recordings against anonymized ones"}


def _times(bits: float) -> str:
    """A likelihood ratio of ``bits`` in words: '59 times', 'without bound'."""
    if math.isinf(bits):
        return "without bound"
    r = 2.0 ** min(bits, 1000.0)
    return f"{r:.2g} times" if r < 10 else f"{r:,.0f} times" if r < 1e6 else f"{r:.2g} times"


def plain_sentence(verdict: str, pr: ProfileFamily, test: SecrecyTest, budget_bits: float,
                   plan_: dict | None = None, identified=None) -> str:
    """The verdict in one sentence for a reader without statistics: what the strongest attacker can do (as a
    likelihood ratio, "times more likely for the same speaker than for different ones"), on what share of the
    comparisons (delta), to how many speakers, and with what confidence (family-wise over every attacker).

    The numbers are those that decide (:func:`decide`): the profile's lower bound for ``leaks``, its upper bound
    for ``protects``; ``inconclusive`` names the data a certificate needs (``plan_``). A bound in bits ``b`` is
    said as the likelihood ratio ``2^b`` ("59 times"; an infinite one "without bound"). Where nothing ties trials
    to speakers or probes (profile unit ``none``: a bare score file) the confidence is said to hold
    only for independent trials: on speaker-structured score files the test's size was measured at 17-22 % for a
    nominal 5 % (docs/verdict_calibration.md, section 3).

    Parameters
    ----------
    verdict : str
        One of :data:`VERDICTS`.
    pr : ProfileFamily
        The family's profile at the verdict's delta (bits).
    test : SecrecyTest
        The family-wise perfect-secrecy test (attackers, alpha, exposed speakers, relabelling scheme).
    budget_bits : float
        The budget in bits.
    plan_ : dict, optional
        :func:`vpeval.analysis.profiles.plan`'s answer (``factor``), for ``inconclusive`` and ``partial``.
    identified : list of ExposedSpeaker, optional
        ``leaks`` decided by identified speakers (not by the profile): the sentence names them and the lower bound
        of the first one's rank-1 likelihood ratio.

    Returns
    -------
    str
        One sentence, without the words eps, delta or bits.

    Examples
    --------
    >>> _times(3.3219280948873622), _times(float("inf"))
    ('10 times', 'without bound')
    """
    n_att = len({m.attacker for m in test.members})
    conf = f"{100 * (1 - test.alpha):g} % confidence" + (f", for all {n_att} attackers at once" if n_att > 1 else "")
    if "none" in pr.unit:  # nothing known of speakers or probes: the level needs independent trials
        conf += ", if the trials are independent"
    share = f"{100 * pr.delta:.3g} % of the comparisons"
    allowed = f"the budget of {_times(budget_bits)}"
    speakers = ""
    if test.scheme == "speaker":  # speakers known: say how many are exposed one by one
        k = len(test.exposed)
        speakers = (f"; {k} of {test.n_units} speakers {'is' if k == 1 else 'are'} individually exposed" if k else
                    "; no single speaker is shown exposed by their own trials alone (a weaker test: few trials "
                    "each, tested for every speaker at once)")
    if verdict == LEAKS and identified:
        e, k = identified[0], len(identified)
        who = (f"speaker {e.speaker} is" if k == 1 else
               f"{k} speakers ({', '.join(x.speaker for x in identified[:3])}{' ...' if k > 3 else ''}) are")
        return (f"An attacker can pick out individual speakers: {who} recognised among {e.n_models} enrolled "
                f"speakers ({e.attacker}), the own speaker's model coming first at least {_times(e.bound_bits)} "
                f"more often than a different speaker's, beyond {allowed}{speakers} ({conf}, for every speaker at "
                "once).")
    if verdict == LEAKS:
        a, t = pr.strongest["eps_low"]
        who = ("an attacker with these scores" if t == "scores" else
               f"the strongest ({a}" + (f", comparing {_COMPARES[t]})" if t in _COMPARES else ")"))
        return (f"An attacker can tell whether two recordings come from the same speaker: {who} makes decisions at least {_times(pr.eps_low)} more likely for the same speaker than for different "
                f"ones on more than {share}, beyond {allowed}{speakers} ({conf}).")
    if verdict == PROTECTS:
        return (f"No attacker tells beyond the budget whether two recordings come from the same speaker: apart from "
                f"{share}, none of their decisions is more than {_times(pr.eps_high)} more likely for the same "
                f"speaker than for different ones, within {allowed} ({conf}).")
    if verdict == PARTIAL:
        more = "" if not plan_ or plan_.get("factor", 1.0) <= 1.0 else (
            f" Ruling one out would take at least about {_factor(plan_['factor'])} times these data (what a perfectly "
            "secret system would need).")
        if test.scheme == "speaker" and test.exposed:  # "exposed" is not "identified": say what it is here
            speakers += " (each one's own trials carry identity, by how much is not shown)"
        return (f"The recordings still reveal something of who is speaking ({conf}), but not how much: these data "
                f"neither show an attacker beyond {allowed} on more than {share} nor rule one out{speakers}.{more}")
    more = "" if not plan_ else (f"; a perfectly secret system would need about {_factor(plan_['factor'])} times these data "
                                 "to be certified")
    return (f"No attacker was shown to reveal who is speaking, but these data are too few to certify that none can "
            f"within {allowed} (apart from {share}){more}.")


def _factor(x: float) -> str:
    """A data multiple in words' precision: '3.5', '12', '120' (not '1.2e+02')."""
    return f"{x:.2g}" if x < 10 else f"{x:,.0f}" if x < 100 else f"{float(f'{x:.2g}'):,.0f}"


def _d(delta: float) -> str:
    return f"{100 * delta:.3g} %"


def _who(pr: ProfileFamily, key: str) -> str:
    a, t = pr.strongest[key]
    return f"attacker {a}" + ("" if t == "scores" else f", {t}")


def _at(pr: ProfileFamily) -> str:
    return (f"eps({_d(pr.delta)}) = {_b(pr.eps)} bits, 95 % bounds {_b(pr.eps_low)} to {_bits(pr.eps_high)}"
            if abs(pr.alpha - 0.05) < 1e-12 else
            f"eps({_d(pr.delta)}) = {_b(pr.eps)} bits, {100 * (1 - pr.alpha):g} % bounds {_b(pr.eps_low)} to "
            f"{_bits(pr.eps_high)}")


def _design(test: SecrecyTest):
    """``(S, P, M)`` when every member's trials cross every probe with every model (an audit), else None."""
    if test.scheme != "speaker" or not test.designs:
        return None
    d = max(test.designs, key=lambda x: x["trials"])
    S = int(test.n_units)
    if d["trials"] != d["probes"] * d["models"] or d["targets"] != d["probes"] or not 1 <= S <= d["models"]:
        return None
    return S, int(d["probes"]), int(d["models"])


def _plan_words(pl: dict | None, pr: ProfileFamily) -> str:
    if pl is None:
        return ("even 10,000 times these data would not certify a perfectly secret system at this delta: a larger "
                "delta would")
    if pl.get("factor", 1.0) <= 1.0:
        return "a perfectly secret system of this size could be certified"
    if "probes_per_speaker" in pl:
        return (f"more speakers alone would not certify a perfectly secret system here (at delta = 1 / (2 S) the "
                "share to bound shrinks as fast as the targets grow); about "
                f"{pl['probes_per_speaker']:,} probes per speaker with these speakers and models would "
                f"({pl['n_tar']:,} target and {pl['n_non']:,} non-target trials for {pl['attacker']}"
                f"{_assumed(pl)})")
    if "speakers" in pl:
        return (f"a perfectly secret system would be certified with about {pl['speakers']:,} evaluation speakers "
                f"of the same design ({pl['n_tar']:,} target and {pl['n_non']:,} non-target trials for "
                f"{pl['attacker']}, delta {_d(pl['delta'])}{_assumed(pl)}; a lower bound: real scores need a little "
                "more)")
    return (f"a perfectly secret system would be certified with about {pl['factor']:.3g} times the trials "
            f"({pl['n_tar']:,} target and {pl['n_non']:,} non-target trials for {pl['attacker']}{_assumed(pl)}; a "
            "lower bound: real scores need a little more)")


def _assumed(pl: dict) -> str:
    """What a plan's count assumes, in words: the design effects measured on the data and the members sharing
    alpha, which ``vpeval plan`` takes as ``--design-effect``, ``--nontarget-design-effect`` and ``--attackers``
    (1, 1 and 1 unless given, so its count for the same design differs where these do)."""
    if "deff_tar" not in pl:
        return ""
    m = pl["n_members"]
    return (f", with the design effects measured here, {pl['deff_tar']:.3g} for targets and {pl['deff_non']:.3g} "
            f"for non-targets, and {m} attacker{'s' if m != 1 else ''} x trial types sharing alpha: `vpeval plan "
            f"{pl.get('plan_args', '...')} --design-effect {pl['deff_tar']:.3g} --nontarget-design-effect "
            f"{pl['deff_non']:.3g} --attackers {m}` counts the same")


def _sentence(verdict: str, reason: str, test: SecrecyTest, average: dict | None, pr: ProfileFamily,
              at: str) -> str:
    w = test.worst
    n_att = len({m.attacker for m in test.members})
    # the attacker whose bound decides is named in the reason
    s = f"Privacy profile over {n_att} attacker{'s' if n_att != 1 else ''}: {at} (delta {pr.delta_rule})"
    stat = {"eps_max": "eps_max", "lid_max": "LID_max"}[w.statistic]
    where = "" if w.trial_type == "scores" else f", {w.trial_type}"
    s += (f". Evidence: {stat} {_bits(w.value)} at delta = 0 (attacker {w.attacker}{where}; noise floor "
          f"{_bits(w.floor)}" + ("; the ceiling for these trial counts" if w.at_ceiling else "") + ")")
    if test.exposed:
        first = test.exposed[0]
        by = (f"; speaker LID of {first.speaker} {_bits(first.value)}, threshold {_bits(first.threshold)}"
              if first.statistic == "speaker_lid" else "")
        s += (f"; exposed: {len(test.exposed)} of {test.n_units} {_UNIT_WORDS[test.scheme]} "
              f"({exposed_names(test.exposed)}{by})")
    if average is not None:
        where = "" if average["trial_type"] == "scores" else f", {average['trial_type']}"
        s += (f". The EER, an average over trials, is {100 * average['eer_rocch']:.3g} % at its lowest "
              f"({average['attacker']}{where}; ideal 50 %)")
    return s + f". Verdict '{verdict}': {reason}."


def exposed_names(exposed, shown: int = 5) -> str:
    """The first ``shown`` exposed speakers' names and how many more (one wording for sentence and table)."""
    names = ", ".join(e["speaker"] if isinstance(e, dict) else e.speaker for e in exposed[:shown])
    return names + (f" and {len(exposed) - shown} more" if len(exposed) > shown else "")


def deciding_attacker(v: dict) -> tuple[str, str]:
    """``(attacker, trial type)`` of the attacker :data:`VERDICT_RULE` names as deciding a verdict, from its
    :meth:`Verdict.to_dict` form: the identified speaker's attacker (a 1-to-N leak decided by a speaker), the
    member of the test's smallest adjusted p-value (``partial``), else the profile's attacker of the largest
    ``eps_low`` (``leaks``) or ``eps_high`` (``protects``, ``inconclusive``). Not the worst case of the evidence
    (``worst_case``: the largest eps_max or LID_max at delta = 0), which may be another attacker."""
    a, t = v["profile"]["strongest"]["eps_low" if v["verdict"] == LEAKS else "eps_high"]
    if v.get("decided_by") == "speaker":  # an identified speaker decided: its attacker
        e = next(e for e in v["exposed_speakers"] if e["speaker"] == v["identified_speakers"][0])
        return e["attacker"], e["trial_type"]
    if v["verdict"] == PARTIAL:  # the test's rejection decided: the statistic of the smallest adjusted p
        m = (v.get("test") or {}).get("deciding_member")
        if m is not None:
            return m["attacker"], m["trial_type"]
    return a, t
