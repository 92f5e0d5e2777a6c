"""Per-group results (issue 11 item 5, issue 15 item 3) and the paired comparison of systems (issue 11 item 6)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from vpeval.report.writer import resolve_refs
from vpeval.stats.results import order_statistic
from vpeval.cli.main import app
from vpeval.errors import VpevalError
from vpeval.io.speaker_groups import read_speaker_groups
from vpeval.io.trials import Trials
from vpeval.metrics.verification import rocch_eer
from vpeval.pipeline import (
    AttackData,
    GroupsError,
    compare_pair,
    compare_systems,
    group_breakdown,
    pooled_result,
    speaker_groups,
    trial_groups,
)
from vpeval.pipeline.protocols import OneToN
from vpeval.stats import bootstrap, draw_speakers, EER_ROCCH
from input_errors import expect_input_error

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "librispeech-mini"


def make_trials(speakers, shift, rng, n_probe=3):
    """Every probe of every speaker against every speaker model; targets shifted by ``shift``."""
    enroll, test, probe_spk, scores, lab = [], [], [], [], []
    for s in speakers:
        for k in range(n_probe):
            for e in speakers:
                tar = e == s
                enroll.append(e)
                test.append(f"{s}-{k}")
                probe_spk.append(s)
                lab.append(tar)
                scores.append(rng.normal(shift if tar else 0.0, 1.0))
    t = Trials(np.array(scores), np.array(lab), np.array(enroll), np.array(test), "synthetic")
    return t, np.array(probe_spk)


# ------------------------------------------------------------------------------------------------ groups


def test_trial_belongs_to_the_enrollment_speakers_group():
    t = Trials([0.9, 0.1, 0.8, 0.3], [1, 0, 1, 0], ["a", "a", "b", "b"], ["a-1", "b-1", "b-1", "a-1"])
    assert trial_groups(t, {"a": "f", "b": "m"}).tolist() == ["f", "f", "m", "m"]


def test_speaker_without_group_is_an_error_naming_it():
    t = Trials([0.9, 0.1], [1, 0], ["a", "zz"], ["a-1", "a-1"])
    with pytest.raises(GroupsError, match="'zz'.*no group in spk2gender"):
        trial_groups(t, {"a": "f"}, source="spk2gender")


def test_group_breakdown_by_hand():
    # group f: perfectly separated (EER 0); group m: target below every non-target (ROCCH-EER 0.5)
    t = Trials([5.0, 0.0, 0.1, 4.0, -1.0, 0.5, 0.7, -2.0],
               [1, 0, 0, 1, 1, 0, 0, 1],
               ["a", "a", "b", "b", "c", "c", "d", "d"],
               ["a-1", "b-1", "a-1", "b-1", "c-1", "d-1", "c-1", "d-1"])
    probes = ["a", "b", "a", "b", "c", "d", "c", "d"]
    res = group_breakdown(t, {"a": "f", "b": "f", "c": "m", "d": "m"}, probe_speakers=probes, n_boot=30, seed=1)
    assert [g.group for g in res] == ["f", "m"]
    f, m = res
    assert (f.n_tar, f.n_non, f.n_enroll_speakers, f.n_probe_speakers) == (2, 2, 2, 2)
    assert f.metrics["eer_rocch"].value == 0.0
    assert m.metrics["eer_rocch"].value == pytest.approx(rocch_eer([-1.0, -2.0], [0.5, 0.7]))
    assert m.metrics["eer_rocch"].value == 0.5
    assert f.resampled == "speaker" and f.metrics["eer_rocch"].n_boot == 30
    # the group's interval is the bootstrap of that group's trials alone
    sub = Trials([5.0, 0.0, 0.1, 4.0], [1, 0, 0, 1], ["a", "a", "b", "b"], ["a-1", "b-1", "a-1", "b-1"])
    ref = bootstrap(sub, [EER_ROCCH], groups=probes[:4], n_boot=30, seed=1)["eer_rocch"]
    assert np.array_equal(ref.replicates, f.metrics["eer_rocch"].replicates)


def test_groups_add_up_to_the_pooled_trials():
    rng = np.random.default_rng(3)
    t, probes = make_trials([f"s{i}" for i in range(8)], 2.0, rng)
    g = {f"s{i}": "f" if i % 2 else "m" for i in range(8)}
    res = group_breakdown(t, g, probe_speakers=probes, n_boot=20)
    pooled = pooled_result(t, probe_speakers=probes, n_boot=20)
    assert sum(r.n_tar for r in res) == pooled.n_tar == int(t.is_target.sum())
    assert sum(r.n_non for r in res) == pooled.n_non
    assert pooled.group == "all" and pooled.metrics["eer_rocch"].value == pytest.approx(rocch_eer(t.tar, t.non))


def test_group_without_targets_is_flagged_not_failed():
    t = Trials([0.9, 0.1, 0.3], [1, 0, 0], ["a", "a", "c"], ["a-1", "b-1", "a-1"])
    res = group_breakdown(t, {"a": "f", "c": "m"}, n_boot=10)
    m = [r for r in res if r.group == "m"][0]
    assert m.metrics == {} and "0 target" in m.note
    assert res[0].resampled == "enroll"


def test_group_alid_is_the_mean_lid_of_the_groups_probes():
    scores = np.zeros((4, 2))
    m = OneToN(scores, np.array([0, 0, 1, 1]), np.array(["p1", "p2", "p3", "p4"]), np.array(["a", "a", "b", "b"]),
               np.array(["a", "b"]), "o", "a")
    lid = np.array([1.0, 0.5, -0.25, 0.25])
    t = Trials([0.9, 0.1, 0.8, 0.3], [1, 0, 1, 0], ["a", "b", "b", "a"], ["p1", "p1", "p3", "p3"])
    res = group_breakdown(t, {"a": "f", "b": "m"}, probe_speakers=["a", "a", "b", "b"], one_to_n=m, lid=lid,
                          n_boot=10)
    assert res[0].alid.value == pytest.approx(0.75) and res[1].alid.value == pytest.approx(0.0)


def test_speaker_groups_from_metadata():
    import pandas as pd

    md = pd.DataFrame({"speaker_id": ["1", "1", "2", "3"], "sex": ["F", "F", "M", ""]})
    assert speaker_groups(md) == {"1": "F", "2": "M"}
    with pytest.raises(GroupsError, match="'1' has sex 'F' and 'M'"):
        speaker_groups(pd.DataFrame({"speaker_id": ["1", "1"], "sex": ["F", "M"]}))
    with pytest.raises(GroupsError, match="no 'accent' column"):
        speaker_groups(md, "accent")


def test_read_speaker_groups(tmp_path):
    p = tmp_path / "spk2gender"
    p.write_text("1272 m\n1462 f\n")
    assert read_speaker_groups(p) == {"1272": "m", "1462": "f"}
    expect_input_error(read_speaker_groups, p, "1272 m\n1462\n", r"spk2gender:2:.*2 fields")
    expect_input_error(read_speaker_groups, p, "1272 m\n1272 f\n", r"spk2gender:2:.*second time \(first on line 1\)")
    expect_input_error(read_speaker_groups, p, "", "no 'speaker group' line")
    # as the Kaldi data-folder reader: spk2gender holds m or f only (issue 28: F and f were two groups, x passed)
    expect_input_error(read_speaker_groups, p, "1272 f\n1462 F\n", r"spk2gender:2:.*must be 'm' or 'f'.*'F'")
    expect_input_error(read_speaker_groups, p, "1272 m\n1462 x\n", r"spk2gender:2:.*must be 'm' or 'f'.*'x'")
    # other files: any labels, but not two spellings of one label
    q = tmp_path / "accents.txt"
    q.write_text("1 scottish\n2 welsh\n3 x\n")
    assert read_speaker_groups(q) == {"1": "scottish", "2": "welsh", "3": "x"}
    expect_input_error(read_speaker_groups, q, "1 f\n2 m\n3 F\n", r"accents.txt:3:.*'F' differs from group 'f' "
                       r"\(line 1\) only in case")


def _kaldi_input(tmp_path, rng):
    t, _ = make_trials(["a", "b", "c", "d"], 3.0, rng)
    d = tmp_path / "sys"
    d.mkdir()
    (d / "trials").write_text("".join(f"{e} {u} {'target' if l else 'nontarget'}\n"
                                      for e, u, l in zip(t.enroll, t.test, t.is_target)))
    (d / "scores").write_text("".join(f"{e} {u} {s:.6f}\n" for e, u, s in zip(t.enroll, t.test, t.scores)))
    return d


def test_report_groups_option(tmp_path):
    d = _kaldi_input(tmp_path, np.random.default_rng(0))
    g = tmp_path / "spk2gender"
    g.write_text("a f\nb f\nc m\nd m\n")
    out = tmp_path / "rep"
    r = CliRunner().invoke(app, ["report", str(d), "--groups", str(g), "-o", str(out), "-q"])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "report.json").read_text())
    sec = next(s for s in doc["sections"] if s["id"] == "groups")
    rows = sec["data"]["systems"]["sys"]
    assert [x["group"] for x in rows] == ["all", "f", "m"]
    assert rows[1]["n_tar"] + rows[2]["n_tar"] == rows[0]["n_tar"] == 12
    assert rows[1]["resampled"] == "enroll"
    assert any(i["path"] == str(g) for i in doc["inputs"])


def test_report_groups_missing_speaker_and_bad_line(tmp_path):
    d = _kaldi_input(tmp_path, np.random.default_rng(0))
    g = tmp_path / "spk2gender"
    g.write_text("a f\nb f\nc m\n")
    r = CliRunner().invoke(app, ["report", str(d), "--groups", str(g), "-o", str(tmp_path / "r1")])
    assert r.exit_code == 2 and "'d'" in r.output and "spk2gender" in r.output
    g.write_text("a f\nb f g\n")
    r = CliRunner().invoke(app, ["report", str(d), "--groups", str(g), "-o", str(tmp_path / "r2")])
    assert r.exit_code == 2 and "spk2gender:2:" in r.output
    assert not (tmp_path / "r1").exists() and not (tmp_path / "r2").exists()


# ------------------------------------------------------------------------------------------------ comparisons


def _attacks(shift, seed, speakers, names=("x/cosine", "y/plda")):
    rng = np.random.default_rng(seed)
    out = {}
    for i, n in enumerate(names):
        t, probes = make_trials(speakers, shift + 0.5 * i, rng)
        out[n] = AttackData(t, probes)
    return out


SPK = [f"s{i:02d}" for i in range(12)]


def test_a_clearly_leakier_system_is_named():
    leaky, private = _attacks(4.0, 1, SPK), _attacks(0.0, 2, SPK)
    res = {c.metric: c for c in compare_pair("leaky", leaky, "private", private, trial_type="oa",
                                             metrics=("eer_rocch", "eps_max"), n_boot=100, seed=0)}
    eer = res["eer_rocch"]
    assert eer.diff < 0 and eer.high < 0 and eer.better == "private"
    assert eer.reading == ("oa, lowest ROCCH-EER (strongest attacker): private protects better than leaky against "
                           "the strongest attacker")
    # the observed values are the worst case over the attackers
    assert eer.value_a == pytest.approx(min(rocch_eer(d.trials.tar, d.trials.non) for d in leaky.values()))
    assert eer.attacker_a == "y/plda"  # the larger shift
    assert res["eps_max"].better == "private" and res["eps_max"].low > 0


def test_identical_systems_give_an_interval_around_zero():
    a = _attacks(1.0, 5, SPK)
    for c in compare_pair("A", a, "B", a, trial_type="aa", metrics=("eer_rocch", "eps_max"), n_boot=50):
        assert c.diff == 0 and c.low == 0 and c.high == 0 and c.better is None
        assert "no significant difference" in c.reading


def test_similar_systems_interval_contains_zero():
    a, b = _attacks(1.0, 5, SPK), _attacks(1.0, 6, SPK)
    for c in compare_pair("A", a, "B", b, trial_type="oa", metrics=("eer_rocch",), n_boot=200):
        assert c.low <= 0 <= c.high and c.better is None


@pytest.mark.parametrize("n_boot, level", [(60, 0.95), (20, 0.5)])
def test_swapping_systems_negates_the_difference_exactly(n_boot, level):
    # (20, 0.5): n_boot * (1 - level) / 2 = 5 exactly, where the order-statistic interval is not symmetric under
    # negation; the canonical order still makes the swap exact
    a, b = _attacks(2.0, 7, SPK), _attacks(0.5, 8, SPK)
    kw = dict(trial_type="oa", metrics=("eer_rocch", "eps_max"), n_boot=n_boot, seed=3, level=level)
    ab = compare_pair("A", a, "B", b, **kw)
    ba = compare_pair("B", b, "A", a, **kw)
    for x, y in zip(ab, ba):
        assert (x.system_a, x.system_b) == (y.system_b, y.system_a)
        assert x.diff == -y.diff and x.low == -y.high and x.high == -y.low and x.better == y.better


def test_pairing_uses_the_same_draw_for_both_systems():
    a, b = _attacks(2.0, 7, SPK, names=("x",)), _attacks(0.5, 8, SPK, names=("x",))
    c = compare_pair("A", a, "B", b, trial_type="oa", metrics=("eer_rocch",), n_boot=40, seed=9)[0]
    d = draw_speakers(SPK, n_boot=40, seed=9)
    ra = bootstrap(a["x"].trials, [EER_ROCCH], groups=a["x"].probe_speakers, draws=d)["eer_rocch"].replicates
    rb = bootstrap(b["x"].trials, [EER_ROCCH], groups=b["x"].probe_speakers, draws=d)["eer_rocch"].replicates
    a_ = (1 - 0.95) / 2  # as computed by the stats module
    # exact order statistics: the 5th of 200 at 2.5 % (numpy's inverted_cdf of the float level takes the 6th)
    lo, hi = order_statistic(ra - rb, [a_, 1 - a_])
    assert (c.low, c.high) == (lo, hi)


def test_metrics_bootstrapped_together_equal_one_by_one():
    """compare_pair bootstraps a system's trial metrics in one pass: each comparison equals the one asked alone,
    and the draws are those of the bootstrap with the same speakers and seed (test above)."""
    a, b = _attacks(2.0, 7, SPK), _attacks(0.5, 8, SPK)
    kw = dict(trial_type="oa", n_boot=30, seed=4)
    both = compare_pair("A", a, "B", b, metrics=("eps_max", "eer_rocch"), **kw)
    alone = [compare_pair("A", a, "B", b, metrics=(m,), **kw)[0] for m in ("eps_max", "eer_rocch")]
    assert both == alone
    cache: dict = {}  # a shared cache answers a later pair from the replicates of the first
    compare_pair("A", a, "B", b, metrics=("eer_rocch", "eps_max"), cache=cache, **kw)
    assert compare_pair("A", a, "C", b, metrics=("eps_max",), cache=cache, **kw)[0].diff == both[0].diff
    with pytest.raises(VpevalError, match="unknown metric"):
        compare_pair("A", a, "B", b, metrics=("eer",), **kw)


def test_only_shared_attackers_and_same_speakers():
    a = _attacks(2.0, 7, SPK, names=("x", "only-a"))
    b = _attacks(0.5, 8, SPK, names=("x",))
    c = compare_pair("A", a, "B", b, trial_type="oa", metrics=("eer_rocch",), n_boot=20)[0]
    assert c.n_attackers == 1 and c.attacker_a == "x"
    other = _attacks(0.5, 8, SPK[:-1], names=("x",))
    comps, notes = compare_systems({"A": {"oa": a}, "B": {"oa": other}}, metrics=("eer_rocch",), n_boot=20)
    assert comps == [] and "same probe speakers" in notes[0]


@pytest.mark.slow
def test_audit_two_systems_has_groups_comparisons_and_vpc_table(tmp_path):
    """A two-system audit (cosine only, small): per-sex rows, comparisons in report.json, the CSV."""
    npz = EXAMPLE / "embeddings_mfcc.npz"
    if not npz.exists():
        pytest.skip("bundled example missing")
    from vpeval.io.embeddings import read_embeddings, write_embeddings

    es = read_embeddings(npz)
    a = tmp_path / "a"
    b = tmp_path / "b"
    for d in (a, b):
        d.mkdir()
        (d / "metadata.csv").write_text((EXAMPLE / "metadata.csv").read_text())
    write_embeddings(a / npz.name, es)
    # system b: anonymized rows replaced by noise, so it clearly protects better on oa
    rng = np.random.default_rng(0)
    x = es.embeddings.copy()
    anon = np.asarray(es.condition) == "anonymized"
    x[anon] = rng.normal(size=(int(anon.sum()), x.shape[1]))
    write_embeddings(b / npz.name, type(es)(x, es.utterance_id, es.speaker_id, es.condition, es.extractor))
    out, csv_path = tmp_path / "rep", tmp_path / "vpc.csv"
    r = CliRunner().invoke(app, ["audit", f"A={a}", f"B={b}", "--backend", "cosine", "-o", str(out), "-q",
                                 "--vpc-table", str(csv_path), "--dataset", "libri-mini"])
    assert r.exit_code == 0, r.output
    doc = resolve_refs(json.loads((out / "report.json").read_text()))  # repeated parts are stored once
    assert doc["schema_version"] == "3.5"
    comps = doc["comparisons"]
    oa = [c for c in comps if c["trial_type"] == "oa" and c["metric"] == "eer_rocch"][0]
    assert oa["system_a"] == "A" and oa["better"] == "B" and oa["ci_high_fraction"] < 0
    # the verdicts' worst cases, compared on the verdicts' own replicates (one notion of the strongest attacker)
    wc = [c for c in comps if c["metric"] == "worst_case"]
    assert len(wc) == 1 and wc[0]["trial_type"] == "all" and wc[0]["unit"] == "bits"
    for side in "ab":
        v = doc["verdicts"][wc[0][f"system_{side}"]]["worst_case"]
        assert wc[0][f"value_{side}_bits"] == v["value_bits"] and wc[0][f"attacker_{side}"].startswith(v["attacker"])
    groups = next(s for s in doc["sections"] if s["id"] == "groups")
    rows = list(csv.DictReader(csv_path.open()))
    assert {r["gender"] for r in rows} == {"all", "F", "M"}
    assert {(r["enrollment"], r["trial"]) for r in rows} == {("o", "o"), ("o", "a"), ("a", "a")}
    assert rows[0]["dataset"] == "libri-mini" and rows[0]["split"] == "eval"
    assert len(rows) == len(groups["data"]["vpc_rows"])
    # the 'all' row is the summary's number
    summ = next(s for s in doc["sections"] if s["id"] == "summary")["data"]["systems"]["A"]["attackers"]
    row = [r for r in rows if r["system"] == "A" and r["gender"] == "all" and r["trial"] == "a"
           and r["enrollment"] == "o"][0]
    assert float(row["ROCCH-EER (%)"]) == pytest.approx(100 * summ[row["attacker"]]["oa"]["eer_rocch"], rel=1e-5)
    # every row, the pooled (mixed-gender) one included, has the clipped per-speaker mean EER, at most 50 %
    for r in rows:
        v = float(r["clipped per-speaker mean EER (%)"])
        assert 0.0 <= v <= 50.0
    # a second run refuses the CSV; --force replaces our own table but never another file
    r = CliRunner().invoke(app, ["audit", f"A={a}", "--backend", "cosine", "-o", str(tmp_path / "r2"), "-q",
                                 "--vpc-table", str(csv_path)])
    assert r.exit_code == 3 and "exists" in r.output
    other = tmp_path / "notes.csv"
    other.write_text("my,own\n")
    r = CliRunner().invoke(app, ["audit", f"A={a}", "--backend", "cosine", "-o", str(tmp_path / "r3"), "-q",
                                 "--vpc-table", str(other), "--force"])
    assert r.exit_code == 3 and other.read_text() == "my,own\n"
    r = CliRunner().invoke(app, ["audit", f"A={a}", "--backend", "cosine", "-o", str(tmp_path / "r4"), "-q",
                                 "--vpc-table", str(csv_path), "--force"])
    assert r.exit_code == 0, r.output
    assert {r["system"] for r in csv.DictReader(csv_path.open())} == {"A"}


def test_attribute_attacker_with_few_training_utterances_is_flagged():
    import pandas as pd

    from vpeval.io.embeddings import read_embeddings
    from vpeval.pipeline import make_protocol
    from vpeval.report.beyond import MIN_TRAIN_PER_CLASS, analyse_attributes, attributes_section

    npz = EXAMPLE / "embeddings_mfcc.npz"
    if not npz.exists():
        pytest.skip("bundled example missing")
    es = read_embeddings(npz)
    md = pd.read_csv(EXAMPLE / "metadata.csv", dtype=str, keep_default_na=False)
    sex = dict(zip(md["speaker_id"], md["sex"]))
    cohort = make_protocol(es).cohort_speakers
    few = [s for s in cohort if sex[s] == "F"][:3] + [s for s in cohort if sex[s] == "M"][:20]
    audit = analyse_attributes(es, md, ("sex",), train_speakers=few)
    assert audit.train_class_counts["sex"]["F"] < MIN_TRAIN_PER_CLASS <= audit.train_class_counts["sex"]["M"]
    assert audit.few_training() == {"sex": {"F": audit.train_class_counts["sex"]["F"]}}
    sec = attributes_section({"mfcc": audit})
    assert any("too few training utterances" in getattr(b, "text", "") for b in sec.blocks)
    assert sec.data["attackers"]["mfcc"]["few_training"] == {"sex": {"F": audit.train_class_counts["sex"]["F"]}}
    full = analyse_attributes(es, md, ("sex",))
    assert full.few_training() == {}


# ------------------------------------------------------------------------------------------------ output policy


def test_vpc_table_output_policy(tmp_path):
    """The per-gender CSV follows the one output policy: refused when present, --force replaces only a table
    whose manifest proves vpeval wrote it (an identical header alone proves nothing), never an input."""
    from vpeval.io.output import OutputExistsError, claim_file
    from vpeval.report.groups import VPC_COLUMNS, vpc_csv_text

    def write(target, text, **kw):
        with claim_file(target, command="audit --vpc-table", **kw) as claim:
            claim.path.write_text(text, encoding="utf-8")

    target = tmp_path / "sub" / "vpc.csv"
    target.parent.mkdir()
    write(target, vpc_csv_text([]))
    with target.open(newline="") as f:
        assert list(csv.reader(f)) == [VPC_COLUMNS]
    with pytest.raises(OutputExistsError, match="exists"):
        write(target, "x")
    write(target, vpc_csv_text([]), force=True)  # our own earlier table: replaced
    with pytest.raises(OutputExistsError, match="input"):
        write(target, "x", force=True, protect=[target])
    other = tmp_path / "notes.csv"
    other.write_text(vpc_csv_text([]))  # same header, but no manifest of ours
    with pytest.raises(OutputExistsError):
        write(other, "x", force=True)
    assert other.read_text() == vpc_csv_text([])
    # no temporary file is left behind; the manifest sits beside the table
    assert sorted(p.name for p in (tmp_path / "sub").iterdir() if not p.name.endswith("vpeval-lock")) == [
        ".vpc.csv.vpeval-manifest.json", "vpc.csv"]


# ------------------------------------------------------------------------------------------------ properties

from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=25, deadline=None)
@given(n_spk=st.integers(3, 8), seed=st.integers(0, 10_000), n_groups=st.integers(1, 3))
def test_groups_partition_the_trials_and_match_the_subset(n_spk, seed, n_groups):
    rng = np.random.default_rng(seed)
    speakers = [f"s{i}" for i in range(n_spk)]
    t, probes = make_trials(speakers, 1.5, rng, n_probe=2)
    groups = {s: f"g{rng.integers(n_groups)}" for s in speakers}
    res = group_breakdown(t, groups, probe_speakers=probes, n_boot=5, seed=seed)
    assert sum(r.n_tar + r.n_non for r in res) == len(t)
    assert [r.group for r in res] == sorted({groups[s] for s in speakers})
    g = trial_groups(t, groups)
    for r in res:
        m = g == r.group
        assert r.n_enroll_speakers == len(set(t.enroll[m].tolist()))
        if r.metrics:
            assert r.metrics["eer_rocch"].value == pytest.approx(rocch_eer(t.scores[m & t.is_target],
                                                                           t.scores[m & ~t.is_target]))


@settings(max_examples=15, deadline=None)
@given(shift_a=st.floats(0, 4), shift_b=st.floats(0, 4), seed=st.integers(0, 1000))
def test_comparison_antisymmetry_property(shift_a, shift_b, seed):
    a, b = _attacks(shift_a, seed, SPK[:6]), _attacks(shift_b, seed + 1, SPK[:6])
    ab = compare_pair("A", a, "B", b, trial_type="oa", metrics=("eer_rocch", "eps_max"), n_boot=20, seed=seed)
    ba = compare_pair("B", b, "A", a, trial_type="oa", metrics=("eer_rocch", "eps_max"), n_boot=20, seed=seed)
    for x, y in zip(ab, ba):
        assert x.diff == -y.diff and (x.low, x.high) == (-y.high, -y.low) and x.better == y.better
        assert x.low <= x.high


def test_clipped_per_speaker_mean_eer_by_hand():
    from vpeval.metrics import interp_eer
    from vpeval.pipeline.groups import clipped_speaker_mean_eer

    # A: perfectly separated (EER 0); B: its target below its non-target (EER 1, clipped to 0.5); C: no target
    t = Trials([0.9, 0.8, 0.1, 0.2, 0.1, 0.9, 0.3], [1, 1, 0, 0, 1, 0, 0],
               ["A", "A", "A", "A", "B", "B", "C"], ["a1", "a2", "b1", "c1", "b2", "a3", "a4"])
    assert interp_eer([0.1], [0.9]) == 1.0
    value, n = clipped_speaker_mean_eer(t)
    assert (value, n) == (0.25, 2)  # unclipped, the mean would be 0.5
    assert clipped_speaker_mean_eer(t, clip=1.0) == (0.5, 2)
    perm = np.random.default_rng(0).permutation(len(t))
    tp = Trials(t.scores[perm], t.is_target[perm], t.enroll[perm], t.test[perm])
    assert clipped_speaker_mean_eer(tp) == (value, n)
    # per group, and as a named column of the VoicePrivacy table
    res = group_breakdown(t, {"A": "f", "B": "m", "C": "m"}, n_boot=10)
    assert [(g.group, g.clipped_eer, g.clipped_eer_speakers) for g in res] == [("f", 0.0, 1), ("m", 0.5, 1)]
    assert res[1].to_dict()["clipped_speaker_mean_eer"] == 0.5
    from vpeval.report.groups import VPC_COLUMNS

    assert "clipped per-speaker mean EER (%)" in VPC_COLUMNS


def test_vpc_table_eer_column_is_the_closest_point_eer():
    """Issue 26: the VoicePrivacy table's EER is the scripts' closest-point EER (named so since issue 47: 'EER
    closest-point (%)', the challenge tables' 'EER (%)'), the interpolated EER and
    its interval beside it by name."""
    from vpeval.metrics import closest_eer, interp_eer

    # targets 0.9, 0.3, 0.8 and non-targets 0.5, 0.2, 0.4, 0.6, 0.1: closest-point 11/30, interpolated 1/3
    t = Trials([0.9, 0.3, 0.5, 0.2, 0.1, 0.8, 0.4, 0.6], [1, 1, 0, 0, 0, 1, 0, 0],
               ["a", "a", "a", "a", "b", "b", "b", "b"], ["a1", "a2", "b1", "b2", "b3", "b4", "a3", "a4"])
    res = group_breakdown(t, {"a": "f", "b": "f"}, n_boot=10)
    (f,) = res
    assert f.closest_eer == closest_eer(t.tar, t.non) == pytest.approx(11 / 30)
    assert f.to_dict()["closest_eer"] == f.closest_eer
    from vpeval.report.groups import VPC_COLUMNS

    assert VPC_COLUMNS[5] == "EER closest-point (%)"
    assert {"EER interp (%)", "EER interp 95% low (%)"} <= set(VPC_COLUMNS)
    assert f.closest_eer != interp_eer(t.tar, t.non)  # the example tells the two estimators apart
