"""The verdict block of an audit: per system one word from a fixed vocabulary, decided by the strongest attacker.

The rule (also written on the page and in ``docs/report.md``)
--------------------------------------------------------------
For each attack trial type (oa, aa; oaoa when oa is absent) the *strongest attacker* is the one with the lowest
ROCCH-EER (:func:`vpeval.report.audit.strongest_attackers`, ties broken by name). Its evidence is its ROCCH-EER
with the 95 % speaker-bootstrap interval ``[low, high]`` and the permutation chance test of that EER, and, from the
1-to-N linkage of the same attacker on the same trial type, the chance tests of its ALID and rank-1 rate.
Each type gets, checked in this order:

``leaks``
    ``high < LEAK_EER`` (25 %): with 95 % confidence the attacker's EER lies in the better half of the range
    between a perfect attacker (0 %) and chance (50 %).
``partial``
    otherwise, if the EER, the ALID or the rank-1 rate beats chance (permutation test, ``p <= alpha``).
``inconclusive``
    otherwise, if ``low < LEAK_EER``: nothing beats chance, but the interval cannot rule out a strong attacker
    (too few speakers or trials).
``protects``
    otherwise: nothing beats chance and the interval lies at or above 25 %.

The system's verdict is the most severe over the attack types (leaks > partial > inconclusive > protects), and
the attacker that decided it is named (ties: lower EER, then trial-type order, then name). Picking the strongest
of many attackers favours the adversary, so the rule errs towards the more severe word, never towards
``protects``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..stats import VERDICT_LEAKS
from .document import Paragraph, Section, Table
from .units import UNITS_NOTE

__all__ = [
    "PROTECTS", "PARTIAL", "LEAKS", "INCONCLUSIVE", "VERDICTS", "LEAK_EER", "VERDICT_RULE", "AttackEvidence",
    "decide", "decide_system", "verdict_sentence", "verdict_section",
]

PROTECTS = "protects"
INCONCLUSIVE = "inconclusive"
PARTIAL = "partial"
LEAKS = "leaks"
#: The fixed vocabulary, least to most severe.
VERDICTS = (PROTECTS, INCONCLUSIVE, PARTIAL, LEAKS)

#: A strongest attacker whose ROCCH-EER interval lies entirely below this (fraction) makes the verdict "leaks".
LEAK_EER = 0.25

VERDICT_RULE = (
    "How the verdict is decided. Per attack trial type (oa, aa) the strongest attacker is the one with the lowest "
    "ROCCH-EER. 'leaks': the upper end of its 95 % speaker-bootstrap interval is below "
    f"{100 * LEAK_EER:g} % (with 95 % confidence it sits in the better half between a perfect attacker, 0 %, and "
    "chance, 50 %). 'partial': otherwise, its EER, its ALID or its rank-1 rate beats chance (permutation test, "
    "p <= 0.05). 'inconclusive': nothing beats chance but the interval still reaches below "
    f"{100 * LEAK_EER:g} % (too few speakers to rule out a strong attacker). 'protects': nothing beats chance and "
    f"the whole interval is at or above {100 * LEAK_EER:g} %. The system gets the most severe verdict over the "
    "attack types. Choosing the strongest of many attackers favours the adversary: the rule errs towards the "
    "more severe word, never towards 'protects'."
)


@dataclass(frozen=True)
class AttackEvidence:
    """What the verdict rule reads about one attacker on one attack trial type.

    Attributes
    ----------
    attacker, trial_type, attacker_class : str
    eer : float
        ROCCH-EER (fraction).
    eer_low, eer_high : float
        Its speaker-bootstrap interval (fraction; NaN when unavailable).
    eer_beats_chance : bool
        The permutation test of the EER says the attacker does better than chance.
    eps_max_nats : float
    alid_bits, rank1, rank1_chance : float or None
        1-to-N linkage of the same attacker and trial type (None when not computed); ``rank1_chance`` = 1/N.
    alid_beats_chance, rank1_beats_chance : bool or None
        Their permutation tests (None when not computed).
    """

    attacker: str
    trial_type: str
    attacker_class: str
    eer: float
    eer_low: float
    eer_high: float
    eer_beats_chance: bool
    eps_max_nats: float
    alid_bits: float | None = None
    alid_beats_chance: bool | None = None
    rank1: float | None = None
    rank1_chance: float | None = None
    rank1_beats_chance: bool | None = None

    def metrics(self) -> dict:
        """The numbers behind the verdict, JSON-ready (EER and rank-1 as fractions)."""
        return {
            "trial_type": self.trial_type, "attacker_class": self.attacker_class,
            "eer_rocch": self.eer, "eer_rocch_ci_low": self.eer_low, "eer_rocch_ci_high": self.eer_high,
            "eer_rocch_beats_chance": self.eer_beats_chance, "eps_max_nats": self.eps_max_nats,
            "alid_bits": self.alid_bits, "alid_beats_chance": self.alid_beats_chance,
            "rank1": self.rank1, "rank1_chance": self.rank1_chance, "rank1_beats_chance": self.rank1_beats_chance,
        }


def decide(ev: AttackEvidence) -> tuple[str, str]:
    """The verdict of one attacker on one attack trial type and the reason in words (see the module docstring).

    >>> ev = AttackEvidence("a", "oa", "ignorant", 0.2, 0.1, 0.2499, True, 3.0)
    >>> decide(ev)[0]
    'leaks'
    """
    pct = lambda x: f"{100 * x:.3g} %"  # noqa: E731
    if ev.eer_high < LEAK_EER:  # NaN compares False: no interval, no "leaks" from it
        return LEAKS, f"its EER interval lies entirely below {pct(LEAK_EER)}"
    beats = [name for name, b in (("EER", ev.eer_beats_chance), ("ALID", ev.alid_beats_chance),
                                  ("rank-1 rate", ev.rank1_beats_chance)) if b]
    if beats:
        said = beats[0] if len(beats) == 1 else ", ".join(beats[:-1]) + " and " + beats[-1]
        return PARTIAL, (f"its {said} beat{'s' if len(beats) == 1 else ''} chance, but its EER "
                         f"interval reaches {pct(LEAK_EER)} or more")
    if not ev.eer_low >= LEAK_EER:  # also NaN: a missing interval cannot rule out a strong attacker
        return INCONCLUSIVE, (f"nothing beats chance, but its EER interval reaches below {pct(LEAK_EER)}: too "
                              "little data to rule out a strong attacker")
    return PROTECTS, f"nothing beats chance and its EER interval lies at or above {pct(LEAK_EER)}"


def decide_system(evidence: list[AttackEvidence]) -> tuple[str, AttackEvidence, str]:
    """The most severe verdict over ``evidence`` (one entry per attack trial type), the evidence that decided it
    and the reason. Ties: lower EER, then the order of ``evidence``, then attacker name."""
    if not evidence:
        raise ValueError("no attack evidence to decide a verdict from")
    decided = [(decide(ev), i, ev) for i, ev in enumerate(evidence)]
    (verdict, reason), _, ev = min(
        decided, key=lambda d: (-VERDICTS.index(d[0][0]), d[2].eer, d[1], d[2].attacker))
    return verdict, ev, reason


def _num(x: float | None, fmt: str = "{:.3g}") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return fmt.format(x)


def verdict_sentence(verdict: str, ev: AttackEvidence, reason: str) -> str:
    """One plain-language sentence: the strongest attacker, its numbers, the verdict and why."""
    s = (f"The strongest attacker, {ev.attacker} ({ev.attacker_class}, {ev.trial_type} trials), reaches a "
         f"ROCCH-EER of {_num(100 * ev.eer)} % (95 % interval {_num(100 * ev.eer_low)} to "
         f"{_num(100 * ev.eer_high)} %; ideal 50 %), eps_max {_num(ev.eps_max_nats / math.log(2))} bits")
    if ev.alid_bits is not None:
        s += f", ALID {_num(ev.alid_bits)} bits"
    if ev.rank1 is not None:
        s += f" and rank-1 identification {_num(100 * ev.rank1)} %"
        if ev.rank1_chance is not None:
            s += f" (chance {_num(100 * ev.rank1_chance)} %)"
    return s + f": {reason}, so the verdict is '{verdict}'."


def verdict_section(verdicts: dict[str, dict], scorecard_rows: list[list], n_attackers: dict[str, int]) -> Section:
    """The block the page opens with: per system the verdict and its sentence, the scorecard, the rule."""
    multi = len(verdicts) > 1
    sec = Section("verdict", "Verdict: does the anonymizer hide who is speaking?")
    for system, v in verdicts.items():
        lead = f"{system}: {v['verdict']}. " if multi else f"Verdict: {v['verdict']}. "
        sec.blocks.append(Paragraph(lead + v["sentence"], kind=f"verdict-{v['verdict']}"))
    if not verdicts:
        sec.blocks.append(Paragraph("No attack trial type (oa, aa) was computed, so there is no verdict.",
                                    kind="warning"))
    counts = sorted(set(n_attackers.values())) or [0]
    n = str(counts[0]) if len(counts) == 1 else f"{counts[0]} to {counts[-1]}"
    sec.blocks.append(Table(
        ["system", "verdict", "decided on", "lowest EER oa (%)", "lowest EER aa (%)", "highest eps_max (bits)",
         "highest ALID (bits)", "highest rank-1 (%)", "rank-1 chance (%)"],
        scorecard_rows, fmt="{:.3g}",
        caption=f"Scorecard: worst case over the {n} attackers per system (lowest EER, ideal 50 %; highest "
                "disclosure, ideal 0), each from whichever attacker reaches it, which may differ from the one "
                "the sentence above names; the attacker behind each number is in report.json (verdicts) and the "
                "summary below",
        cell_classes={LEAKS: "leak", PARTIAL: "partial", PROTECTS: "chance", INCONCLUSIVE: "ok"}))
    sec.blocks.append(Paragraph(VERDICT_RULE, kind="note"))
    sec.blocks.append(Paragraph(UNITS_NOTE, kind="note"))
    sec.data = {"verdicts": verdicts, "rule": VERDICT_RULE, "leak_eer": LEAK_EER, "vocabulary": list(VERDICTS),
                "units": UNITS_NOTE}
    return sec
