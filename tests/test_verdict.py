"""The verdict rule of the audit report (vpeval.report.verdict) at its boundaries, on hand-made evidence."""

from __future__ import annotations

import math

import pytest

from vpeval.report.document import Paragraph, Table
from vpeval.report.verdict import (
    INCONCLUSIVE, LEAK_EER, LEAKS, PARTIAL, PROTECTS, VERDICT_RULE, VERDICTS, AttackEvidence, decide,
    decide_system, verdict_section, verdict_sentence,
)


def ev(eer=0.4, low=0.3, high=0.5, beats=False, alid=None, rank1=None, attacker="x/cosine", trial_type="oa",
       eps=1.0):
    """Evidence with every linkage test absent unless given (alid / rank1 = bool: beats chance or not)."""
    return AttackEvidence(
        attacker=attacker, trial_type=trial_type, attacker_class="ignorant", eer=eer, eer_low=low, eer_high=high,
        eer_beats_chance=beats, eps_max_nats=eps,
        alid_bits=None if alid is None else 1.5, alid_beats_chance=alid,
        rank1=None if rank1 is None else 0.3, rank1_chance=None if rank1 is None else 0.1,
        rank1_beats_chance=rank1)


def test_vocabulary_is_fixed_and_ordered_by_severity():
    assert VERDICTS == (PROTECTS, INCONCLUSIVE, PARTIAL, LEAKS) == ("protects", "inconclusive", "partial", "leaks")
    assert LEAK_EER == 0.25


@pytest.mark.parametrize("high, expected", [
    (0.0, LEAKS),
    (math.nextafter(0.25, 0), LEAKS),   # just below the bound
    (0.25, PARTIAL),                     # the bound itself is not "entirely below"
    (0.30, PARTIAL),
])
def test_leaks_boundary_is_the_upper_end_of_the_interval(high, expected):
    assert decide(ev(eer=min(high, 0.2), low=0.0, high=high, beats=True))[0] == expected


def test_leaks_does_not_need_the_chance_test():
    # the interval alone decides "leaks" (a tiny permutation budget cannot veto it)
    assert decide(ev(eer=0.1, low=0.05, high=0.2, beats=False))[0] == LEAKS


@pytest.mark.parametrize("which", ["eer", "alid", "rank1"])
def test_any_test_beating_chance_makes_it_partial(which):
    kw = {"beats": which == "eer", "alid": which == "alid", "rank1": which == "rank1"}
    verdict, reason = decide(ev(low=0.3, high=0.5, **kw))
    assert verdict == PARTIAL
    assert {"eer": "EER", "alid": "ALID", "rank1": "rank-1"}[which] in reason


def test_reason_lists_every_test_that_beats_chance():
    assert "EER, ALID and rank-1 rate beat chance" in decide(ev(beats=True, alid=True, rank1=True))[1]
    assert "ALID beats chance" in decide(ev(alid=True, rank1=False))[1]


@pytest.mark.parametrize("low, expected", [
    (math.nextafter(0.25, 0), INCONCLUSIVE),  # cannot rule out a strong attacker
    (0.25, PROTECTS),                          # at the bound: ruled out
    (0.45, PROTECTS),
    (float("nan"), INCONCLUSIVE),              # no interval: nothing ruled out
])
def test_protects_needs_the_interval_at_or_above_the_bound(low, expected):
    assert decide(ev(eer=0.45, low=low, high=0.5, beats=False, alid=False, rank1=False))[0] == expected


def test_missing_interval_never_leaks():
    assert decide(ev(eer=0.1, low=float("nan"), high=float("nan"), beats=True))[0] == PARTIAL


def test_system_takes_the_most_severe_type_and_names_its_attacker():
    oa = ev(eer=0.3, low=0.26, high=0.4, beats=True, attacker="a/cosine", trial_type="oa")  # partial
    aa = ev(eer=0.1, low=0.0, high=0.2, attacker="b/plda/anonymized", trial_type="aa")       # leaks
    verdict, who, reason = decide_system([oa, aa])
    assert (verdict, who.attacker, who.trial_type) == (LEAKS, "b/plda/anonymized", "aa")
    assert decide_system([oa])[0] == PARTIAL
    calm = ev(eer=0.45, low=0.3, high=0.5, alid=False, rank1=False, trial_type="aa")
    assert decide_system([calm, ev(eer=0.45, low=0.3, high=0.5, trial_type="oa")])[0] == PROTECTS
    assert decide_system([calm, ev(eer=0.4, low=0.2, high=0.5, trial_type="oa")])[0] == INCONCLUSIVE


def test_system_ties_are_broken_by_lower_eer_then_order_then_name():
    a = ev(eer=0.30, low=0.26, high=0.4, beats=True, attacker="z", trial_type="oa")
    b = ev(eer=0.28, low=0.26, high=0.4, beats=True, attacker="y", trial_type="aa")
    assert decide_system([a, b])[1].attacker == "y"
    c = ev(eer=0.30, low=0.26, high=0.4, beats=True, attacker="a", trial_type="aa")
    assert decide_system([a, c])[1].attacker == "z"  # same severity and EER: first type given
    with pytest.raises(ValueError):
        decide_system([])


def test_sentence_names_attacker_and_numbers():
    e = AttackEvidence("m/plda/anonymized", "aa", "semi-informed", 0.05, 0.01, 0.12, True, 8.63,
                       alid_bits=6.78, alid_beats_chance=True, rank1=0.9, rank1_chance=0.01,
                       rank1_beats_chance=True)
    v, reason = decide(e)
    s = verdict_sentence(v, e, reason)
    for piece in ("m/plda/anonymized", "semi-informed", "aa trials", "5 %", "1 to 12 %", "ideal 50 %",
                  "eps_max 12.5 bits", "ALID 6.78 bits", "rank-1 identification 90 %", "chance 1 %", "'leaks'"):
        assert piece in s, piece
    assert s.count(". ") == 0 and s.endswith(".")  # one sentence
    # without linkage the sentence still reads
    s2 = verdict_sentence(*decide(ev())[:1], ev(), decide(ev())[1])
    assert "ALID" not in s2 and "rank-1" not in s2


def test_section_has_verdict_then_scorecard_then_rule():
    e = ev(eer=0.1, low=0.05, high=0.2)
    v, reason = decide(e)
    verdicts = {"sys": {"verdict": v, "sentence": verdict_sentence(v, e, reason)}}
    sec = verdict_section(verdicts, [["sys", v, "oa: x/cosine", 10.0, 5.0, 1.0, 1.5, 30.0, 10.0]], {"sys": 3})
    assert sec.id == "verdict" and not sec.folded
    kinds = [type(b) for b in sec.blocks]
    assert kinds == [Paragraph, Table, Paragraph, Paragraph]  # verdicts, scorecard, rule, units note
    assert sec.blocks[0].kind == "verdict-leaks" and sec.blocks[0].text.startswith("Verdict: leaks.")
    assert sec.blocks[2].text == VERDICT_RULE and sec.data["leak_eer"] == LEAK_EER
    assert sec.blocks[3].text.startswith("Units on this page") and sec.data["units"] == sec.blocks[3].text
    assert "3 attackers" in sec.blocks[1].caption
    empty = verdict_section({}, [], {})
    assert "no verdict" in empty.blocks[0].text
