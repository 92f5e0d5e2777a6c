"""The verdict rule (vpeval.analysis.verdict) at its boundaries on hand-made tests and profiles, on real
relabelling tests, and its rendering (vpeval.report.verdict)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vpeval.analysis.profiles import ProfileFamily
from vpeval.analysis.secrecy import ExposedSpeaker, MemberTest, SecrecyTest, WorstCase
from vpeval.analysis.verdict import (
    DEFAULT_BUDGET_BITS, INCONCLUSIVE, LEAKS, PARTIAL, PROTECTS, VERDICT_RULE, VERDICTS, decide,
)
from vpeval.errors import VpevalError
from vpeval.metrics.profile import DELTA_GRID
from vpeval.report.document import Paragraph, Table
from vpeval.report.verdict import verdict_section


def test_(p=0.01, value=5.0, floor=2.0, ceiling=12.0, scheme="speaker", n_units=40, exposed=(), eer=0.4):
    """A SecrecyTest with the given numbers (bits), one eps_max member."""
    rejected = p <= 0.05
    w = WorstCase(value, "eps_max", "x/plda", "aa", floor, value - 1, value + 1, ceiling, value >= ceiling, 100, "m")
    m = MemberTest("x/plda", "aa", "eps_max", value, p, p, floor, eer)
    return SecrecyTest(scheme, "note", 999, 0, 0.05, p, rejected, [m], w, {"eps_max": floor}, list(exposed),
                       n_units, np.zeros(999))


test_.__test__ = False  # a factory, not a test


def prof(lo, est, hi, delta=0.0125):
    """A hand-made family profile at ``delta`` (bits)."""
    g = np.zeros(len(DELTA_GRID))
    return ProfileFamily(delta, "given", 0.05, [], lo, est, hi,
                         {k: ("x/plda", "aa") for k in ("eps_low", "eps", "eps_high")}, np.asarray(DELTA_GRID), g,
                         g, g, "the probe's speaker")


def test_vocabulary_and_default_budget():
    assert VERDICTS == (PROTECTS, INCONCLUSIVE, PARTIAL, LEAKS) == ("protects", "inconclusive", "partial", "leaks")
    assert DEFAULT_BUDGET_BITS == pytest.approx(math.log2(10))  # a likelihood ratio of 10


B = DEFAULT_BUDGET_BITS


@pytest.mark.parametrize("lo, expected", [
    (B + 1e-6, LEAKS),                 # lower bound above the budget
    (B, PARTIAL),                      # at the budget: not "above"
    (math.log(10) / math.log(2), PARTIAL),  # an LR of exactly 10 computed another way (1 ulp above log2(10))
    (0.5, PARTIAL),
])
def test_rejected_leaks_iff_lower_bound_above_budget(lo, expected):
    assert decide(test_(p=0.001), profile=prof(lo, lo + 1, math.inf)).verdict == expected


@pytest.mark.parametrize("hi, rejected, expected", [
    (3.0, False, PROTECTS),
    (B, False, PROTECTS),               # within: <= budget
    (B + 1e-6, False, INCONCLUSIVE),    # the bound reaches above
    (math.inf, False, INCONCLUSIVE),
    (3.0, True, PROTECTS),              # rejected, but certified within the budget: a leak within it
    (B + 1e-6, True, PARTIAL),
])
def test_protects_iff_upper_bound_within_budget(hi, rejected, expected):
    v = decide(test_(p=0.001 if rejected else 0.5), profile=prof(0.0, 0.1, hi))
    assert v.verdict == expected, v.reason
    if expected == PROTECTS and rejected:
        assert "the leak stays within the budget" in v.reason


def test_alpha_boundary_is_inclusive():
    assert decide(test_(p=0.05), profile=prof(9.0, 9.5, math.inf)).verdict == LEAKS
    assert decide(test_(p=0.0501), profile=prof(9.0, 9.5, math.inf)).verdict == INCONCLUSIVE


def test_budget_and_delta_are_options_and_checked():
    t = test_(p=0.001)
    pr = prof(4.0, 5.0, 6.0)
    assert decide(t, profile=pr).verdict == LEAKS and decide(t, budget_bits=5.0, profile=pr).verdict == PARTIAL
    assert decide(t, budget_bits=6.0, profile=pr).verdict == PROTECTS
    for bad in (0, -1.0, float("nan"), float("inf"), True, "3"):
        with pytest.raises(VpevalError, match="budget"):
            decide(t, budget_bits=bad, profile=pr)
    for bad in (0, 1, -0.1, 1.5, True, "0.1", float("nan")):
        with pytest.raises(VpevalError, match="delta"):
            decide(t, delta=bad, profile=pr)
    with pytest.raises(VpevalError, match="no privacy profiles"):
        decide(t)  # a hand-made test carries no scores


def test_sentence_leads_with_the_deciding_numbers_then_the_worst_case_then_the_average():
    ex = [ExposedSpeaker(f"spk{i}", 9.0, 2.0, "eps_max", "x/plda", "aa") for i in range(7)]
    v = decide(test_(p=0.001, value=12.0, ceiling=12.0, exposed=ex, eer=0.45, floor=2.0, n_units=10),
               profile=prof(8.0, 9.0, math.inf, delta=0.05))
    s = v.sentence
    assert s.startswith("Privacy profile over 1 attacker: eps(5 %) = 9 bits, 95 % bounds 8 to inf bits (delta "
                        "given)"), s
    assert "Evidence: eps_max 12 bits at delta = 0 (attacker x/plda, aa; noise floor 2 bits; the ceiling" in s
    assert "exposed: 7 of 10 evaluation speakers (spk0, spk1, spk2, spk3, spk4 and 2 more)" in s
    assert "The EER, an average over trials, is 45 % at its lowest" in s
    assert s.index("Privacy profile") < s.index("Evidence") < s.index("EER")
    assert "p <= 0.001, the smallest 999 relabellings can give" in v.reason
    assert "the privacy profile's lower bound at delta = 5 % is 8 bits" in v.reason
    assert "(a likelihood ratio of 10)" in v.reason
    assert s.endswith(f"Verdict 'leaks': {v.reason}.")


def test_one_bit_is_singular_and_an_infinite_bound_is_explained():
    v = decide(test_(p=0.001, value=1.0), profile=prof(0.5, 1.0, math.inf))
    assert v.verdict == PARTIAL and "eps_max 1 bit at delta = 0" in v.sentence
    assert any("the upper bound is infinite" in w for w in v.warnings)


def test_non_speaker_scheme_is_warned():
    v = decide(test_(scheme="trial"), profile=prof(0.0, 0.1, 1.0))
    assert any(w.startswith("relabelling: ") for w in v.warnings)
    assert v.to_dict()["units"] == "trials"


def test_to_dict_is_the_one_json_shape():
    d = decide(test_(), profile=prof(1.0, 2.0, 3.0)).to_dict()
    assert set(d) >= {"verdict", "reason", "sentence", "budget_bits", "alpha", "rejected", "p_value_familywise",
                      "family_size", "n_attackers", "worst_case", "exposed_speakers", "average", "delta",
                      "eps_low_bits", "eps_bits", "eps_high_bits", "profile", "plan", "units", "n_units",
                      "warnings", "test"}
    assert (d["delta"], d["eps_low_bits"], d["eps_bits"], d["eps_high_bits"]) == (0.0125, 1.0, 2.0, 3.0)
    assert set(d["profile"]) >= {"delta", "delta_rule", "alpha", "unit", "strongest", "delta_grid",
                                 "eps_low_grid_bits", "eps_grid_bits", "eps_high_grid_bits", "members"}


def test_no_protects_claim_from_the_test_alone():
    import dataclasses

    t = dataclasses.replace(test_(p=0.5), can_reject=False, log10_distinct=math.log10(6))
    v = decide(t, profile=prof(0.0, 0.5, 5.0))
    assert v.verdict == INCONCLUSIVE and "only about 6 distinct relabellings" in v.reason
    # the bounds do not need relabellings: a certificate still holds
    assert decide(t, profile=prof(0.0, 0.5, 1.0)).verdict == PROTECTS


def test_section_opens_with_sentence_then_table_then_rule():
    v = {"A": decide(test_(), profile=prof(4.0, 5.0, 6.0)).to_dict(),
         "B": decide(test_(p=0.5, value=1.0, floor=1.0), profile=prof(0.0, 0.5, 2.0)).to_dict()}
    sec = verdict_section(v)
    assert sec.id == "verdict"
    table = sec.blocks[0]  # every system's numbers first, then each sentence
    assert isinstance(table, Table)
    # each system in plain words first, then its numbers
    assert isinstance(sec.blocks[1], Paragraph) and sec.blocks[1].text.startswith("A: leaks. An attacker can tell")
    assert sec.blocks[2].text.startswith("Privacy profile") and sec.blocks[2].summary == "A: the numbers behind it"
    assert sec.blocks[3].text.startswith("B: protects. No attacker tells beyond the budget")
    assert table.rows[0][:5] == ["A", "leaks", 1.25, 4.0, 6.0] and table.rows[1][1] == "protects"  # the bounds
    assert any(isinstance(b, Paragraph) and b.text == VERDICT_RULE for b in sec.blocks)
    assert sec.data["vocabulary"] == list(VERDICTS)


@pytest.mark.parametrize("p, lo, hi, word, says", [
    (0.001, 6.0, math.inf, LEAKS, "makes decisions at least 64 times more likely for the same speaker than for "
                                  "different ones on more than 1.25 % of the comparisons, beyond the budget of 10 times"),
    (0.5, 0.0, 2.0, PROTECTS, "none of their decisions is more than 4 times more likely for the same speaker"),
    (0.001, 1.0, math.inf, PARTIAL, "The recordings still reveal something of who is speaking (95 % confidence)"),
    (0.5, 0.0, math.inf, INCONCLUSIVE, "these data are too few to certify that none can within the budget of 10 times"),
])
def test_plain_sentence_says_what_an_attacker_can_do(p, lo, hi, word, says):
    ex = [ExposedSpeaker("spk1", 9.0, 2.0, "eps_max", "x/plda", "aa")]
    v = decide(test_(p=p, exposed=ex if word == LEAKS else ()), profile=prof(lo, lo + 0.5, hi))
    assert v.verdict == word and says in v.plain, v.plain
    assert v.to_dict()["plain"] == v.plain and "bits" not in v.plain and "eps" not in v.plain  # no jargon
    if word == LEAKS:
        assert "the strongest (x/plda, comparing anonymized recordings with each other)" in v.plain
        assert "1 of 40 speakers is individually exposed" in v.plain
    if word == PROTECTS:
        assert "apart from 1.25 % of the comparisons" in v.plain


def test_partial_says_what_an_exposed_speaker_is():
    """Beside 'partial', exposed speakers are not read as identified: the sentence says what exposed means."""
    ex = [ExposedSpeaker("spk1", 9.0, 2.0, "eps_max", "x/plda", "aa")]
    v = decide(test_(p=0.001, exposed=ex), profile=prof(1.0, 1.5, math.inf))
    assert v.verdict == PARTIAL
    assert ("1 of 40 speakers is individually exposed (each one's own trials carry identity, by how much is not "
            "shown)") in v.plain


def test_plain_sentence_says_when_its_confidence_needs_independent_trials():
    import dataclasses

    from vpeval.analysis.verdict import plain_sentence

    bare = dataclasses.replace(prof(8.0, 9.0, math.inf), unit="none (trials assumed independent)")
    s = plain_sentence(LEAKS, bare, test_(p=0.001, scheme="trial"), B)
    assert s.endswith("(95 % confidence, if the trials are independent).")


def test_plain_sentence_of_a_score_file_and_of_a_plan():
    from vpeval.analysis.verdict import plain_sentence

    t = test_(p=0.001, scheme="trial")
    import dataclasses

    pr = dataclasses.replace(prof(8.0, 9.0, math.inf), strongest={k: ("scores.txt", "scores")
                                                                  for k in ("eps_low", "eps", "eps_high")})
    s = plain_sentence(LEAKS, pr, t, B)
    assert "an attacker with these scores makes decisions at least 256 times" in s and "speakers" not in \
        s.split("recordings come from the same speaker")[1].split("different ones")[1]
    assert s.endswith("(95 % confidence).")  # one attacker: no "at once"
    s = plain_sentence(INCONCLUSIVE, prof(0.0, 0.1, 5.0), test_(p=0.5), B, {"factor": 3.04})
    assert s.endswith("a perfectly secret system would need about 3 times these data to be certified.")


def test_glossary_words_are_in_the_documentation():
    """Every word the report's glossary defines is a term of the documentation's glossary (with its paper)."""
    from pathlib import Path

    from vpeval.report.glossary import GLOSSARY, glossary_section

    lines = (Path(__file__).resolve().parents[1] / "docs" / "glossary.md").read_text(encoding="utf-8").splitlines()
    terms = {ln.strip() for ln in lines if ln and not ln.startswith((" ", "#", "`", "-", "*"))}
    for word, meaning in GLOSSARY:
        assert word in terms or f"{word} (bits)" in terms, word
        assert meaning.endswith((".", ").")), word
    sec = glossary_section()
    assert sec.folded and sec.id == "glossary" and len(sec.blocks[0].rows) == len(GLOSSARY)
    assert not glossary_section(page="appendix").folded  # the link lands on the definitions


def test_section_without_verdicts_says_so():
    sec = verdict_section({}, empty_note="nothing to decide")
    assert sec.blocks[0].text == "nothing to decide" and sec.blocks[0].kind == "warning"




# ----------------------------------------------------------------------------------------- on real tests


def _crossed_audit(rng, S=40, P=5, exposed=None, shift=0.0):
    """Every probe against every model: S speakers with P probes each, scores N(0, 1); the targets of speaker
    ``exposed`` above every non-target."""
    from vpeval.analysis import TrialInput
    from vpeval.io.trials import Trials

    spk = [f"s{i:02d}" for i in range(S)]
    enroll = np.repeat(spk, S * P)
    probe_spk = np.tile(np.repeat(spk, P), S)
    test = np.tile([f"{s}_{j}" for s in spk for j in range(P)], S)
    lab = enroll == probe_spk
    sc = rng.standard_normal(lab.size) + shift * lab
    if exposed is not None:
        sel = lab & (probe_spk == exposed)
        sc[sel] = 20.0 + rng.standard_normal(int(sel.sum()))
    t = Trials(sc, lab, enroll=enroll, test=test)
    return TrialInput("asv", "oa", t, enroll, probe_spk)


def test_one_fully_exposed_speaker_of_40_is_never_protects():
    from vpeval.analysis import secrecy_test

    for seed in range(3):
        rng = np.random.default_rng(seed)
        r = secrecy_test([_crossed_audit(rng, exposed="s07")], n_perm=199, n_boot=20, seed=seed)
        v = decide(r)
        assert v.profile.delta == pytest.approx(1 / 80)  # half of one speaker's share
        assert v.verdict != PROTECTS and v.profile.eps == math.inf, v.sentence


def test_an_inconclusive_audit_says_how_many_speakers_would_certify():
    from vpeval.analysis import secrecy_test

    r = secrecy_test([_crossed_audit(np.random.default_rng(4), S=20, P=5)], n_perm=199, n_boot=20)
    v = decide(r)
    # at delta = 1 / (2 S) more speakers never suffice with 5 probes each; more probes per speaker do
    assert v.verdict == INCONCLUSIVE and v.plan is not None and v.plan["probes_per_speaker"] > 5, v.reason
    assert "more speakers alone would not certify" in v.reason
    v = decide(r, delta=0.1)
    assert v.verdict == INCONCLUSIVE and v.plan["speakers"] > 20, v.reason
    assert "evaluation speakers of the same design" in v.reason


def test_the_rejection_names_the_statistics_that_reject():
    v = decide(test_(p=0.001), profile=prof(4.0, 5.0, 6.0))
    assert "rejected family-wise by eps_max of x/plda, aa (p <= 0.001" in v.reason, v.reason
    assert "by" not in decide(test_(p=0.5), profile=prof(0.0, 0.5, 1.0)).reason.split("(")[0]


def test_a_partial_rows_deciding_attacker_is_the_tests_smallest_p():
    """The verdict table names, for 'partial', the attacker whose statistic rejects perfect secrecy with the
    smallest adjusted p (ties by statistic, attacker, type, whatever the members' order), which the test's dict
    carries as its deciding member; not the largest upper bound's."""
    import itertools
    import types

    from vpeval.analysis.secrecy import MemberTest, SecrecyTest
    from vpeval.report.verdict import verdict_rows

    members = [MemberTest("b", "aa", "eps_max", 5.0, 0.01, 0.01, 3.0), MemberTest("c", "aa", "d_ece", 0.1, 0.004,
                                                                                  0.004, 0.05),
               MemberTest("a", "oa", "d_ece", 0.1, 0.004, 0.004, 0.05)]
    for order in itertools.permutations(members):
        first = SecrecyTest.by_p(types.SimpleNamespace(members=list(order)))[0]
        assert (first.attacker, first.trial_type) == ("a", "oa")
    v = {"verdict": "partial", "delta": 0.01, "eps_low_bits": 1.0, "eps_high_bits": float("inf"),
         "worst_case": {"value_bits": 5.0, "at_ceiling": False, "floor_bits": 3.0}, "average": None,
         "profile": {"strongest": {"eps_high": ["z", "aa"], "eps_low": ["y", "aa"]}},
         "p_value_familywise": 0.004, "test": {"n_perm": 999, "members": [m.to_dict() for m in members],
                                               "deciding_member": {"attacker": "a", "trial_type": "oa",
                                                                   "statistic": "d_ece", "p_adjusted": 0.004}},
         "exposed_speakers": [], "units": "evaluation speakers", "n_units": 10}
    assert verdict_rows({"s": v})[0][5] == "a (oa)"
    v["test"]["deciding_member"] = None
    assert verdict_rows({"s": v})[0][5] == "z (aa)"  # no members: the largest upper bound's, as before


def test_a_certified_leak_names_the_statistic_that_rejects():
    """`protects` with perfect secrecy rejected says which statistic rejects: a new user read 'rejected' beside an
    eps_max below its noise floor and took it for a contradiction (D_ECE had rejected)."""
    from vpeval.analysis.families import score_verdict
    from vpeval.io.trials import Trials

    rng = np.random.default_rng(2)
    lab = np.r_[np.ones(10_000, bool), np.zeros(100_000, bool)]
    v = score_verdict(Trials(rng.standard_normal(lab.size) + 0.3 * lab, lab), "s", n_perm=199, n_boot=20)
    assert v.verdict == "protects" and v.test.rejected, v.reason
    assert "perfect secrecy is rejected by D_ECE of s" in v.reason or "rejected by eps_max of s" in v.reason, v.reason


def test_member_profiles_run_in_a_thread_unless_the_address_space_is_limited(monkeypatch):
    """The profile counts run beside the perfect-secrecy test in a thread of their own, with the same members as
    in the caller's thread; under ``ulimit -v`` (numba crashed in helper threads there) in the caller's thread,
    and an error is raised by ``result()`` either way."""
    import threading

    import vpeval.analysis.profiles as P
    import vpeval.jit as jit
    from vpeval.analysis.members import TrialInput
    from vpeval.io.trials import Trials

    rng = np.random.default_rng(0)
    lab = rng.random(300) < 0.3
    t = Trials(rng.normal(size=300) + lab, lab)
    inp = [TrialInput("a", "oa", t)]
    where = []
    real = P.member_profiles

    def spy(trials, one_to_n):
        where.append(threading.current_thread().name)
        return real(trials, one_to_n)

    monkeypatch.setattr(P, "member_profiles", spy)
    for limited in (False, True):
        monkeypatch.setattr(jit, "address_space_limited", lambda limited=limited: limited)
        got = P.member_profiles_started(inp, []).result()
        assert [(m.attacker, m.n_tar, m.n_non) for m in got] == [("a", int(lab.sum()), int((~lab).sum()))]
        assert got[0].counts.eps_bits(0.05) == real(inp, []).pop().counts.eps_bits(0.05)
    assert where[0].startswith("vpeval-profiles") and where[1] == threading.current_thread().name

    def broken(trials, one_to_n):
        raise VpevalError("no target column")

    monkeypatch.setattr(P, "member_profiles", broken)
    for limited in (False, True):
        monkeypatch.setattr(jit, "address_space_limited", lambda limited=limited: limited)
        with pytest.raises(VpevalError, match="no target column"):
            P.member_profiles_started(inp, []).result()


def test_scores_reversed_get_a_note_beside_the_verdict():
    """A score input whose non-targets score above its targets (distances read as similarities) is flagged beside
    its verdict, whose attackers read a higher score as the same speaker (a breaker's find: a perfectly reversed
    file read 'inconclusive' without a word); the AUC in the note is the pairwise count's, ties half."""
    import re

    from vpeval.analysis.families import reversed_scores_note, score_verdict
    from vpeval.io.trials import Trials

    rng = np.random.default_rng(3)
    tar, non = np.round(rng.normal(0, 1, 60), 1), np.round(rng.normal(2, 1, 600), 1)
    note = reversed_scores_note(np.sort(tar), np.sort(non))
    auc = float(re.search(r"AUC ([0-9.e-]+)", note).group(1))
    oracle = np.mean([(t > n) + 0.5 * (t == n) for t in tar for n in non])
    assert auc == pytest.approx(oracle, rel=1e-3) and "--lower-is-target" in note
    assert reversed_scores_note(np.sort(non), np.sort(tar)) is None  # the right way round
    assert reversed_scores_note(np.sort(tar[:3]), np.sort(non[:3])) is None  # too few to tell
    null = np.sort(rng.normal(size=500))
    assert reversed_scores_note(null[::2], null[1::2]) is None
    t = Trials(np.r_[tar, non], np.r_[np.ones(tar.size, bool), np.zeros(non.size, bool)])
    v = score_verdict(t, n_perm=19, n_boot=20)
    assert any("wrong way round" in w for w in v.warnings)
    flipped = Trials(-t.scores, t.is_target)
    assert not any("wrong way round" in w for w in score_verdict(flipped, n_perm=19, n_boot=20).warnings)


def test_the_deciding_attacker_is_the_rules_and_the_tables(monkeypatch):
    """report.json's ``deciding_attacker`` is the attacker the verdict's rule names and the report's verdict table
    shows; ``strongest_attacker`` stays the worst case of the evidence (eps_max), which may be another one (an
    earlier note: report.json and the page named different attackers without saying why)."""
    import dataclasses

    from vpeval.analysis.families import verdict_dict
    from vpeval.analysis.verdict import deciding_attacker
    from vpeval.report.verdict import verdict_rows

    def profile(lo, hi):
        p = prof(lo, lo + 0.5, hi)
        return dataclasses.replace(p, strongest={"eps_low": ("low/plda", "oa"), "eps": ("est/plda", "aa"),
                                                 "eps_high": ("high/plda", "aa")})

    import vpeval.analysis.families as families

    monkeypatch.setattr(families, "scorecard", lambda res: {})  # the scorecard reads a whole audit
    cases = [(0.001, profile(6.0, 9.0), LEAKS, ("low/plda", "oa")),
             (0.5, profile(0.0, 2.0), PROTECTS, ("high/plda", "aa")),
             (0.5, profile(0.0, math.inf), INCONCLUSIVE, ("high/plda", "aa")),
             (0.001, profile(1.0, math.inf), PARTIAL, ("x/plda", "aa"))]  # the test's only member rejects
    for p, pr, word, want in cases:
        v = decide(test_(p=p), profile=pr).to_dict()
        assert v["verdict"] == word and deciding_attacker(v) == want, (word, deciding_attacker(v))
        assert verdict_rows({"s": v})[0][5] == f"{want[0]} ({want[1]})"
        d = verdict_dict(decide(test_(p=p), profile=pr), None)
        assert (d["deciding_attacker"], d["deciding_trial_type"]) == want and d["strongest_attacker"] == "x/plda"
