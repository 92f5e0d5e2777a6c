"""The verdict rule (vpeval.analysis.verdict) at its boundaries on hand-made tests, and its rendering
(vpeval.report.verdict)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vpeval.analysis.secrecy import ExposedSpeaker, MemberTest, ProtectionBound, SecrecyTest, WorstCase
from vpeval.analysis.verdict import (
    DEFAULT_BUDGET_BITS, INCONCLUSIVE, LEAKS, PARTIAL, PROTECTS, VERDICT_RULE, VERDICTS, decide,
)
from vpeval.errors import VpevalError
from vpeval.report.document import Paragraph, Table
from vpeval.report.verdict import verdict_section


def test_(p=0.01, value=5.0, lo=4.0, hi=6.0, floor=2.0, ceiling=12.0, scheme="speaker", n_units=40,
          exposed=(), eer=0.4):
    """A SecrecyTest with the given numbers (bits), one eps_max member."""
    rejected = p <= 0.05
    w = WorstCase(value, "eps_max", "x/plda", "aa", floor, lo, hi, ceiling, value >= ceiling, 100, "m")
    m = MemberTest("x/plda", "aa", "eps_max", value, p, p, floor, eer)
    return SecrecyTest(scheme, "note", 999, 0, 0.05, p, rejected, [m], w, {"eps_max": floor}, list(exposed),
                       n_units, np.zeros(999))


test_.__test__ = False  # a factory, not a test


def test_vocabulary_and_default_budget():
    assert VERDICTS == (PROTECTS, INCONCLUSIVE, PARTIAL, LEAKS) == ("protects", "inconclusive", "partial", "leaks")
    assert DEFAULT_BUDGET_BITS == pytest.approx(math.log2(10))  # a likelihood ratio of 10


@pytest.mark.parametrize("lo, expected", [
    (DEFAULT_BUDGET_BITS + 1e-6, LEAKS),   # lower bound above the budget
    (DEFAULT_BUDGET_BITS, PARTIAL),        # at the budget: not "above"
    (math.log(10) / math.log(2), PARTIAL),  # an LR of exactly 10 computed another way (1 ulp above log2(10))
    (0.5, PARTIAL),
])
def test_rejected_leaks_iff_lower_bound_above_budget(lo, expected):
    assert decide(test_(p=0.001, lo=lo)).verdict == expected


@pytest.mark.parametrize("hi, floor, expected", [
    (3.0, 3.0, PROTECTS),
    (DEFAULT_BUDGET_BITS, 1.0, PROTECTS),              # within: <= budget
    (DEFAULT_BUDGET_BITS + 1e-6, 1.0, INCONCLUSIVE),   # the interval reaches above
    (1.0, DEFAULT_BUDGET_BITS + 1e-6, INCONCLUSIVE),   # the noise floor alone reaches above
])
def test_not_rejected_protects_iff_upper_bound_and_floor_within_budget(hi, floor, expected):
    v = decide(test_(p=0.5, lo=0.0, value=0.5, hi=hi, floor=floor))
    assert v.verdict == expected
    assert (v.more_units is None) == (expected == PROTECTS)


def test_alpha_boundary_is_inclusive():
    assert decide(test_(p=0.05, lo=9.0)).verdict == LEAKS
    assert decide(test_(p=0.0501, lo=9.0, hi=9.5, floor=9.0)).verdict == INCONCLUSIVE


def test_inconclusive_says_how_many_more_speakers():
    # max(U, F) = 6.64 = 2 x budget: 16 times the speakers if the bound shrinks as n^(-1/4) -> 150 more than 10
    v = decide(test_(p=0.5, lo=0.0, value=1.0, hi=2 * DEFAULT_BUDGET_BITS, floor=1.0, n_units=10))
    assert v.verdict == INCONCLUSIVE and v.more_units == 150
    assert "150 more evaluation speakers" in v.reason


def test_budget_is_an_option_and_checked():
    t = test_(p=0.001, lo=4.0)
    assert decide(t).verdict == LEAKS and decide(t, budget_bits=5.0).verdict == PARTIAL
    for bad in (0, -1.0, float("nan"), float("inf"), True, "3"):
        with pytest.raises(VpevalError, match="budget"):
            decide(t, budget_bits=bad)


def test_sentence_leads_with_worst_case_then_average_and_names_speakers():
    ex = [ExposedSpeaker(f"spk{i}", 9.0, 2.0, "eps_max", "x/plda", "aa") for i in range(7)]
    v = decide(test_(p=0.001, value=12.0, lo=11.0, hi=12.0, ceiling=12.0, exposed=ex, eer=0.45, floor=2.0,
                     n_units=10))
    s = v.sentence
    assert s.startswith("Worst case 12 bits (eps_max, attacker x/plda, aa; 90 % interval 11 to 12 bits, noise "
                        "floor 2 bits, at the ceiling of 12 bits for these trial counts: at least this much)")
    assert "exposed: 7 of 10 evaluation speakers (spk0, spk1, spk2, spk3, spk4 and 2 more)" in s
    assert "The EER, an average over trials, is 45 % at its lowest" in s and s.index("Worst case") < s.index("EER")
    assert "p <= 0.001, the smallest 999 relabellings can give" in v.reason
    assert "(a likelihood ratio of 10)" in v.reason
    assert s.endswith(f"Verdict 'leaks': {v.reason}.")
    assert any("at least this much" in w for w in v.warnings)


def test_non_speaker_scheme_is_warned():
    v = decide(test_(scheme="trial"))
    assert any(w.startswith("relabelling: ") for w in v.warnings)
    assert v.to_dict()["units"] == "trials"


def test_to_dict_is_the_one_json_shape():
    d = decide(test_()).to_dict()
    assert set(d) >= {"verdict", "reason", "sentence", "budget_bits", "alpha", "rejected", "p_value_familywise",
                      "family_size", "n_attackers", "worst_case", "exposed_speakers", "average",
                      "more_units_needed", "units", "n_units", "warnings", "test"}
    assert set(d["worst_case"]) >= {"value_bits", "floor_bits", "ci_low_bits", "ci_high_bits", "ceiling_bits",
                                    "at_ceiling", "interval_method", "attacker", "trial_type", "statistic"}


def test_section_opens_with_sentence_then_table_then_rule():
    v = {"A": decide(test_()).to_dict(), "B": decide(test_(p=0.5, lo=0.0, value=1.0, hi=2.0, floor=1.0)).to_dict()}
    sec = verdict_section(v)
    assert sec.id == "verdict"
    table = sec.blocks[0]  # every system's numbers first, then each sentence
    assert isinstance(table, Table)
    assert isinstance(sec.blocks[1], Paragraph) and sec.blocks[1].text.startswith("A: leaks. Worst case")
    assert sec.blocks[2].text.startswith("B: protects. ")
    assert table.rows[0][:2] == ["A", "leaks"] and table.rows[1][1] == "protects"
    assert any(isinstance(b, Paragraph) and b.text == VERDICT_RULE for b in sec.blocks)
    assert sec.data["vocabulary"] == list(VERDICTS)


def test_section_without_verdicts_says_so():
    sec = verdict_section({}, empty_note="nothing to decide")
    assert sec.blocks[0].text == "nothing to decide" and sec.blocks[0].kind == "warning"


def test_one_bit_is_singular_and_a_floor_above_the_budget_is_said():
    v = decide(test_(p=0.001, value=1.0, lo=0.5, hi=1.0, floor=5.0))
    assert v.verdict == PARTIAL and v.sentence.startswith("Worst case 1 bit (")
    assert any("'protects' cannot be reached here" in w for w in v.warnings)


def _with(t, **kw):
    import dataclasses

    return dataclasses.replace(t, **kw)


def test_no_protects_when_the_test_cannot_reject():
    t = _with(test_(p=0.5, lo=0.0, value=0.5, hi=1.0, floor=1.0), can_reject=False, log10_distinct=math.log10(6))
    v = decide(t)
    assert v.verdict == INCONCLUSIVE and "only about 6 distinct relabellings" in v.reason


def test_no_protects_when_no_attacker_could_show_the_budget():
    import dataclasses

    t = test_(p=0.5, lo=0.0, value=0.5, hi=1.0, floor=1.0)
    t = _with(t, worst=dataclasses.replace(t.worst, family_ceiling=2.17))
    v = decide(t)
    assert v.verdict == INCONCLUSIVE and "no attacker can show more than 2.17 bits" in v.reason


def _pooled(hi, floor, m=75):
    return ProtectionBound(1.0, "eps_max_pooled", "x/plda", "aa", m, floor, hi)


@pytest.mark.parametrize("hi, floor, expected", [
    (3.0, 1.0, PROTECTS),
    (DEFAULT_BUDGET_BITS, DEFAULT_BUDGET_BITS, PROTECTS),
    (DEFAULT_BUDGET_BITS + 1e-6, 1.0, INCONCLUSIVE),
    (1.0, DEFAULT_BUDGET_BITS + 1e-6, INCONCLUSIVE),
])
def test_protects_reads_the_pooled_worst_case_not_the_unpooled_floor(hi, floor, expected):
    """The Laplace-PAV floor of 7.8 bits (one target at the top) does not block 'protects'; the pooled bound does."""
    t = _with(test_(p=0.5, lo=0.0, value=5.0, hi=8.0, floor=7.8), protection=_pooled(hi, floor))
    v = decide(t)
    assert v.verdict == expected, v.reason
    if expected == PROTECTS:
        assert "at a resolution of 75 trials" in v.reason and "no speaker is exposed" in v.reason
    else:
        assert v.more_units >= 1 and "more evaluation speakers" in v.reason


def test_an_exposed_speaker_blocks_protects():
    ex = [ExposedSpeaker("spk3", 9.0, 8.0, "eps_max", "x/plda", "aa")]
    t = _with(test_(p=0.06, lo=0.0, value=9.0, hi=9.0, floor=7.8, exposed=ex), protection=_pooled(1.0, 1.0))
    v = decide(t)
    assert v.verdict == INCONCLUSIVE and v.more_units is None and "1 evaluation speakers are exposed" in v.reason


def test_the_pooled_bound_is_in_the_json():
    d = decide(_with(test_(p=0.5, lo=0.0, value=1.0, hi=2.0, floor=1.0), protection=_pooled(2.0, 1.0))).to_dict()
    assert d["test"]["protection"] == {"value_bits": 1.0, "statistic": "eps_max_pooled", "attacker": "x/plda",
                                       "trial_type": "aa", "resolution_trials": 75, "floor_bits": 1.0,
                                       "ci_high_bits": 2.0, "upper_bits": 2.0, "design": None,
                                       "ceiling_bits": None}


@pytest.mark.parametrize("ceiling, expected", [(3.49, INCONCLUSIVE), (2 * DEFAULT_BUDGET_BITS, PROTECTS),
                                               (None, PROTECTS)])
def test_protects_needs_a_pooled_ceiling_of_twice_the_budget(ceiling, expected):
    """A fresh user's 40 trials with 4 targets and a 1-SD leak read 'protects' (bound 2.62 bits) although the
    pooled worst case could not exceed 3.49 bits at all: the bound must have room to show disclosure."""
    import dataclasses

    pb = dataclasses.replace(_pooled(2.62, 1.0), ceiling=ceiling)
    v = decide(_with(test_(p=0.5, lo=0.0, value=1.0, hi=2.0, floor=1.0), protection=pb))
    assert v.verdict == expected, v.reason
    if expected == INCONCLUSIVE:
        assert "cannot exceed 3.49 bits even at perfect separation" in v.reason


def test_a_tiny_score_file_with_a_mild_leak_is_not_protects():
    from vpeval.analysis import TrialInput, secrecy_test
    from vpeval.io.trials import Trials

    rng = np.random.default_rng(2)
    lab = np.zeros(40, dtype=bool)
    lab[:4] = True
    t = secrecy_test([TrialInput("a", "scores", Trials(rng.normal(size=40) + lab, lab))], n_perm=199, n_boot=50)
    assert not t.rejected and t.protection.ceiling == pytest.approx(3.49, abs=0.01)
    assert decide(t).verdict == INCONCLUSIVE


def test_a_tiny_budget_does_not_overflow():
    v = decide(test_(p=0.5, lo=0.0, value=1.0, hi=2.0, floor=1.0), budget_bits=1e-200)
    assert v.verdict == INCONCLUSIVE and v.more_units == 10 ** 12


def test_no_protects_from_too_few_bootstrap_replicates():
    import dataclasses

    t = _with(test_(p=0.5, lo=0.0, value=1.0, hi=1.0, floor=1.0), protection=_pooled(1.0, 1.0))
    assert decide(t).verdict == PROTECTS
    few = _with(t, worst=dataclasses.replace(t.worst, n_boot=5))
    v = decide(few)
    assert v.verdict == INCONCLUSIVE and "5 bootstrap replicates" in v.reason


# --------------------------------------------------- 'more speakers' where every probe meets every model


def _crossed(hi, floor, S=10, P=50, M=111, p=0.5, lo=0.0, scheme="speaker", trials=None):
    """A test whose pooled bound comes from a member scoring P probes against M models (one target each)."""
    pb = ProtectionBound(1.0, "eps_max_pooled", "x/plda", "aa", 75, floor, hi,
                         {"trials": P * M if trials is None else trials, "targets": P, "probes": P, "models": M})
    return _with(test_(p=p, lo=lo, value=5.0, hi=8.0, floor=7.8, n_units=S, scheme=scheme), protection=pb)


def test_more_speakers_alone_cannot_decide_when_every_speaker_is_a_model():
    """10 speakers, 5 probes each, the 10 speakers the only models: a pooled block holds sqrt(P / M) = sqrt(5)
    targets whatever the number of speakers, so adding speakers of this design changes nothing. The n^(-1/4)
    count claimed 11 more speakers would decide it (bound 4 bits vs 3.32: (4 / 3.32)^4 = 2.10 x 10 speakers)."""
    v = decide(_crossed(hi=4.0, floor=1.0, S=10, P=50, M=10))
    assert v.verdict == INCONCLUSIVE and v.more_units is None, v.reason
    assert "more evaluation speakers alone would not" in v.reason and "every one of the 10 models" in v.reason, v.reason
    # p (U / b)^4 = 5 x (4 / log2 10)^4 = 10.5 probes per speaker would raise k enough (at the k^(-1/2) rate)
    assert "at that rate about 11 probes per speaker, with these speakers and models, would decide it" in v.reason
    assert v.to_dict()["more_units_needed"] is None


def test_more_speakers_with_distractors_counted_from_the_design():
    """The demo's design, 10 speakers x 5 probes against 111 models (101 distractors), bound 4.5 bits: the
    targets per pooled block must grow (4.5 / 3.32)^2 = 1.84 times, i.e. P'/M' = (50/111) 3.37 = 1.517;
    5 S' / (S' + 101) = 1.517 gives S' = 43.98: 34 more speakers (the n^(-1/4) count said 24)."""
    r = (50 / 111) * (4.5 / DEFAULT_BUDGET_BITS) ** 4
    assert math.ceil(r * 101 / (5 - r)) - 10 == 34  # the hand computation above
    v = decide(_crossed(hi=4.5, floor=1.0))
    assert v.verdict == INCONCLUSIVE and v.more_units == 34, v.reason
    assert "at least about 34 more evaluation speakers with 5 probes each" in v.reason, v.reason
    assert "faster than it does with so few targets" in v.reason
    # 6.6 bits: 5 S' / (S' + 101) would have to reach 7.0 > 5 probes per speaker: no number of speakers can
    v = decide(_crossed(hi=6.6, floor=1.0))
    assert v.more_units is None and "alone would not" in v.reason, v.reason


def test_other_designs_keep_the_n_quarter_law():
    # not every probe against every model (some trials missing), or no speakers as units: the old count
    for t in (_crossed(hi=4.5, floor=1.0, trials=50 * 111 - 7, S=40), _crossed(hi=4.5, floor=1.0, scheme="probe")):
        v = decide(t)
        n = t.n_units
        assert v.more_units == math.ceil(n * (4.5 / DEFAULT_BUDGET_BITS) ** 4) - n, v.reason
        assert "(if the bound shrinks as n^(-1/4))" in v.reason
    # with fewer than 2 / alpha speakers the count is at least what 'protects' needs (40 at alpha 5 %)
    v = decide(_crossed(hi=4.5, floor=1.0, trials=50 * 111 - 7))
    assert v.more_units == max(24, 40 - 10) == 30 and "needs at least 40" in v.reason, v.reason


@pytest.mark.parametrize("S, expected", [(39, INCONCLUSIVE), (40, PROTECTS)])
def test_protects_needs_two_over_alpha_speakers_under_speaker_relabelling(S, expected):
    """A leak confined to one speaker is kept in place by 1/S of the speaker relabellings: with fewer than
    2 / alpha speakers 'protects' is withheld even when everything else is within the budget."""
    v = decide(test_(p=0.5, lo=0.0, value=0.5, hi=1.0, floor=1.0, n_units=S))
    assert v.verdict == expected
    if expected == INCONCLUSIVE:
        assert v.more_units == 1 and "cannot be told from chance" in v.reason and "needs at least 40" in v.reason
    # probe and trial relabelling move every target on its own: no such condition
    assert decide(test_(p=0.5, lo=0.0, value=0.5, hi=1.0, floor=1.0, n_units=S, scheme="probe")).verdict == PROTECTS


def test_the_floor_warning_of_a_decided_verdict_reads_the_design_too():
    v = decide(_crossed(hi=1.0, floor=6.6, p=0.001, lo=5.0))
    assert v.verdict == LEAKS
    w = next(w for w in v.warnings if "'protects' cannot be reached here" in w)
    assert "more evaluation speakers alone would not" in w and "floor would stay above" in w, w


def test_the_design_of_the_pooled_bound_is_measured_on_its_member():
    from vpeval.analysis import secrecy_test
    from test_secrecy import design

    tr, mats = design(np.random.default_rng(0), n_spk=6, n_probe=3, n_dis=4)
    r = secrecy_test(tr, mats, n_perm=99, n_boot=20)
    d = r.protection.to_dict()["design"]
    if r.protection.statistic == "eps_max_pooled":
        assert d == {"trials": 18 * 10, "targets": 18, "probes": 18, "models": 10}
    else:
        assert d is None
    tr2, _ = design(np.random.default_rng(0), n_spk=6, n_probe=3, n_dis=4)
    r2 = secrecy_test(tr2, [], n_perm=99, n_boot=20)  # no 1-to-N member: the pooled bound is eps_max's
    assert r2.protection.statistic == "eps_max_pooled"
    assert r2.protection.design == {"trials": 180, "targets": 18, "probes": 18, "models": 10}


def test_a_speaker_exposed_above_the_budget_makes_a_rejected_system_leak():
    """A leak confined to a few speakers: the speaker bootstrap's lower bound stays low (replicates without the
    speaker), but the exposed speaker's own worst case is above the budget and the family-wise threshold."""
    above = [ExposedSpeaker("spk3", 9.3, 3.5, "eps_max", "x/plda", "aa")]
    v = decide(test_(p=0.001, lo=1.0, hi=9.5, value=9.3, exposed=above))
    assert v.verdict == LEAKS and "spk3" in v.reason and "exposed above it" in v.reason, v.reason
    # exposed, but its worst case within the budget (a threshold below the budget): still 'partial'
    within = [ExposedSpeaker("spk3", 3.0, 2.5, "eps_max", "x/plda", "aa")]
    assert decide(test_(p=0.001, lo=1.0, hi=9.5, value=9.3, exposed=within)).verdict == PARTIAL
    # not rejected: exposure alone never makes 'leaks'
    assert decide(test_(p=0.5, lo=1.0, hi=9.5, value=9.3, exposed=above)).verdict == INCONCLUSIVE


def test_the_rejection_names_the_statistics_that_reject():
    v = decide(test_(p=0.001, lo=4.0))
    assert "rejected family-wise by eps_max of x/plda, aa (p <= 0.001" in v.reason, v.reason
    assert "by" not in decide(test_(p=0.5, lo=0.0, hi=1.0, floor=1.0)).reason.split("(")[0]
