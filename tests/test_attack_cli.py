"""`vpeval attack` and `vpeval audit` with a train/ folder: trained attackers end to end on small data."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from vpeval.io.embeddings import write_embeddings
from vpeval.io.trials import Trials
from vpeval.metrics import eer

from test_attackers import synthetic


def _system(tmp_path, overlap=False):
    d = tmp_path / "sys"
    (d / "train").mkdir(parents=True)
    write_embeddings(d / "embeddings_ext-a.npz", synthetic(8, 4, 6, "ext-a", seed=0))
    write_embeddings(d / "embeddings_ext-b.npz", synthetic(8, 4, 8, "ext-b", seed=1))
    start = 4 if overlap else 100
    write_embeddings(d / "train" / "embeddings_ext-a.npz", synthetic(30, 4, 6, "ext-a", seed=10, start=start))
    write_embeddings(d / "train" / "embeddings_ext-b.npz", synthetic(30, 4, 8, "ext-b", seed=11, start=start))
    return d


def _app():
    from vpeval.cli.main import app

    return app


def _read_kaldi(folder):
    key = {tuple(line.split()[:2]): line.split()[2] == "target" for line in (folder / "trials").read_text().splitlines()}
    sc = {tuple(line.split()[:2]): float(line.split()[2]) for line in (folder / "scores").read_text().splitlines()}
    pairs = sorted(key)
    return Trials(np.array([sc[p] for p in pairs]), np.array([key[p] for p in pairs]))


def test_attack_writes_trials_scores_and_attacker(tmp_path):
    d = _system(tmp_path)
    out = tmp_path / "att"
    r = CliRunner().invoke(_app(), ["attack", str(d / "embeddings_ext-a.npz"), "--train",
                                    str(d / "train" / "embeddings_ext-a.npz"), "--backend", "plda", "--trained-on",
                                    "anonymized", "-o", str(out), "--types", "aa,oa", "--json"])
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    a = json.loads((out / "attacker.json").read_text())
    assert a == summary["attacker"]
    assert a["name"] == "ext-a/plda/anonymized" and a["backend"] == "plda" and a["training_speakers"] == 30
    assert sorted(summary["types"]) == ["aa", "oa"]
    # the written scores are the library's scores for the same attacker
    from vpeval.io.embeddings import read_embeddings
    from vpeval.pipeline import make_attackers

    ev, tr = read_embeddings(d / "embeddings_ext-a.npz"), read_embeddings(d / "train" / "embeddings_ext-a.npz")
    att = make_attackers({"ext-a": ev}, {"ext-a": tr}, backends=["plda"], conditions=["anonymized"])[-1]
    lib = att.build_trials(["aa"])["aa"]
    got = _read_kaldi(out / "aa")
    assert eer(got.tar, got.non) == eer(lib.tar, lib.non)
    np.testing.assert_allclose(np.sort(got.scores), np.sort(lib.scores), rtol=1e-15)
    assert (out / "one_to_n_aa.csv").is_file()


def test_attack_refuses_overlapping_speakers_and_bad_options(tmp_path):
    d = _system(tmp_path, overlap=True)
    args = ["attack", str(d / "embeddings_ext-a.npz"), "--train", str(d / "train" / "embeddings_ext-a.npz")]
    r = CliRunner().invoke(_app(), args + ["-o", str(tmp_path / "x")])
    assert r.exit_code == 2 and "first shared: 'S004'" in r.output
    assert not (tmp_path / "x").exists()
    r = CliRunner().invoke(_app(), args + ["-o", str(tmp_path / "y"), "--backend", "svm"])
    assert r.exit_code == 2 and "expected one of cosine" in r.output
    r = CliRunner().invoke(_app(), args + ["-o", str(tmp_path / "y"), "--trained-on", "both"])
    assert r.exit_code == 2 and "original or anonymized" in r.output


def test_audit_with_train_folder_fields_trained_and_fused_attackers(tmp_path):
    d = _system(tmp_path)
    out = tmp_path / "rep"
    r = CliRunner().invoke(_app(), ["audit", str(d), "-o", str(out), "-q", "--backend", "cosine", "--backend",
                                    "plda"])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "report.json").read_text())
    assert doc["schema_version"] == "3.5"  # 3.5: verdicts' deciding_attacker; 3.4: test.deciding_member; 3.3: population; 3.2: numbers to 10 digits; 3.1: Beyond-EER oaoo/oaaa; 3.0: the profile decides; 2.3: derived arrays left out; 2.2: pages, refs, compact; 2.1: test.protection; 2.0: the verdicts of the worst-case test; 1.3: comparisons, groups
    names = set(doc["attackers"])
    assert names == {"ext-a/cosine", "ext-b/cosine", "ext-a/plda/original", "ext-a/plda/anonymized",
                     "ext-b/plda/original", "ext-b/plda/anonymized", "fusion/original", "fusion/anonymized"}
    assert doc["attackers"]["fusion/original"]["members"] == ["ext-a/plda/original", "ext-b/plda/original"]
    assert doc["options"]["backends"] == ["cosine", "plda"]
    summary = next(s for s in doc["sections"] if s["id"] == "summary")["data"]["systems"]["sys"]
    assert summary["attacker_class"]["ext-a/plda/anonymized"]["aa"] == "semi-informed (back-end)"
    assert summary["attacker_class"]["ext-a/cosine"]["oa"] == "ignorant"
    assert summary["strongest"]["aa"]["eer"]["attacker"] in names
    assert any(i["name"] == "sys/train/embeddings_ext-a" for i in doc["inputs"])
    # the verdict comes first: one per system, decided by a named attacker, before every table and figure
    v = doc["verdicts"]["sys"]
    assert set(v) >= {"verdict", "sentence", "strongest_attacker", "worst_case", "p_value_familywise", "scorecard"}
    assert v["verdict"] in ("protects", "inconclusive", "partial", "leaks")
    assert v["strongest_attacker"] in names and v["strongest_attacker"] in v["sentence"]
    # the verdict is decided by the worst case over every attacker, not by the lowest EER: the deciding eps_max is
    # the one the summary reports for that attacker, and no attacker's eps_max on oa/aa exceeds it
    w = v["worst_case"]
    eps = {(a, t): by[t]["eps_max_nats"] / math.log(2) for a, by in summary["attackers"].items()
           for t in ("oa", "aa") if t in by}
    if w["statistic"] == "eps_max":
        assert w["value_bits"] == pytest.approx(eps[(v["strongest_attacker"], v["trial_type"])], rel=1e-9)
    assert w["value_bits"] >= max(eps.values()) * (1 - 1e-9)
    assert v["average"]["eer_rocch"] == min(by[t]["eer_rocch"] for by in summary["attackers"].values()
                                           for t in ("oa", "aa") if t in by)
    assert doc["sections"][0]["id"] == "verdict"
    page = (out / "report.html").read_text()
    start = page.index('id="verdict"')
    assert start < page.index("<table") and start < page.index("<img")
    # the main page: the verdict and the system's overview, not folded; on the appendix page (one system: one
    # page) the per-attacker sections are folded, the summary is not
    assert '<section id="overview"><h2>' in page and '<section id="verdict"><h2>' in page
    appendix = (out / "appendix.html").read_text()
    assert '<section id="verification-ext-a_cosine"><details>' in appendix
    assert '<section id="summary"><h2>' in appendix
    assert "<script" not in page and "<script" not in appendix
    # without fusion, and without a train folder only the cosine attackers remain
    r = CliRunner().invoke(_app(), ["audit", str(d), "-o", str(tmp_path / "r2"), "-q", "--backend", "lda",
                                    "--no-fusion"])
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "r2" / "report.json").read_text())
    assert set(doc["attackers"]) == {"ext-a/lda/original", "ext-a/lda/anonymized", "ext-b/lda/original",
                                     "ext-b/lda/anonymized"}


def test_audit_refuses_overlapping_training_speakers(tmp_path):
    d = _system(tmp_path, overlap=True)
    r = CliRunner().invoke(_app(), ["audit", str(d), "-o", str(tmp_path / "r"), "-q", "--backend", "plda"])
    assert r.exit_code == 2 and "disjoint" in r.output


def test_audit_without_train_folder_says_what_it_cannot_field(tmp_path):
    d = _system(tmp_path)
    import shutil

    shutil.rmtree(d / "train")
    r = CliRunner().invoke(_app(), ["audit", str(d), "-o", str(tmp_path / "r"), "-q", "--backend", "plda"])
    assert r.exit_code == 2 and "no attacker can be fielded" in r.output and "train/" in r.output
    r = CliRunner().invoke(_app(), ["audit", str(d), "-o", str(tmp_path / "r2"), "-q", "--backend", "cosine",
                                    "--backend", "lda"])
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "r2" / "report.json").read_text())
    assert set(doc["attackers"]) == {"ext-a/cosine", "ext-b/cosine"}
    notes = next(s for s in doc["sections"] if s["id"] == "attackers")
    html = (tmp_path / "r2" / "report.html").read_text()
    assert "lda not fielded" in html and "lda not fielded" in notes["data"]["notes"]["sys"][0]


def test_attack_force_replaces_only_an_earlier_output_and_whole(tmp_path):
    d = _system(tmp_path)
    ev, tr = str(d / "embeddings_ext-a.npz"), str(d / "train" / "embeddings_ext-a.npz")
    out = tmp_path / "f"
    base = ["attack", ev, "--train", tr, "-o", str(out)]
    assert CliRunner().invoke(_app(), base + ["--backend", "plda"]).exit_code == 0
    assert (out / "oa" / "scores").is_file()
    r = CliRunner().invoke(_app(), base + ["--backend", "lda", "--types", "aa"])
    assert r.exit_code == 3 and "--force" in r.output
    r = CliRunner().invoke(_app(), base + ["--backend", "lda", "--types", "aa", "--force"])
    assert r.exit_code == 0, r.output
    assert json.loads((out / "attacker.json").read_text())["backend"] == "lda"
    assert not (out / "oa").exists() and not (out / "one_to_n_oa.csv").exists()  # no stale plda results
    (out / "notes.txt").write_text("mine")
    r = CliRunner().invoke(_app(), base + ["--backend", "plda", "--force"])
    assert r.exit_code == 3 and "the earlier run did not write" in r.output and (out / "notes.txt").read_text() == "mine"
    (out / "notes.txt").unlink()
    r = CliRunner().invoke(_app(), ["attack", str(out / "one_to_n_aa.csv"), "--train", tr, "-o", str(out), "--force"])
    assert r.exit_code in (2, 3) and (out / "one_to_n_aa.csv").is_file()


def test_attack_option_misuse(tmp_path):
    d = _system(tmp_path)
    ev, tr = str(d / "embeddings_ext-a.npz"), str(d / "train" / "embeddings_ext-a.npz")
    r = CliRunner().invoke(_app(), ["attack", ev, "--train", tr, "-o", str(tmp_path / "a"), "--backend", "lda",
                                    "--backend", "plda"])
    assert r.exit_code == 2 and "given 2 times" in r.output
    r = CliRunner().invoke(_app(), ["attack", ev, "--train", tr, "-o", str(tmp_path / "a"), "--backend", "cosine"])
    assert r.exit_code == 2 and "learns nothing" in r.output
    r = CliRunner().invoke(_app(), ["attack", ev, "--train", str(d / "train" / "embeddings_ext-b.npz"), "-o",
                                    str(tmp_path / "a")])
    assert r.exit_code == 2 and "extractor 'ext-b'" in r.output
    assert not (tmp_path / "a").exists()


def test_two_concurrent_attacks_into_one_new_folder_cannot_both_win(tmp_path):
    import subprocess
    import sys

    d = _system(tmp_path)
    out = tmp_path / "race"
    cmd = [sys.executable, "-m", "vpeval.cli.main", "attack", str(d / "embeddings_ext-a.npz"), "--train",
           str(d / "train" / "embeddings_ext-a.npz"), "-o", str(out), "--json"]
    procs = [subprocess.Popen(cmd + ["--trained-on", c], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for c in ("original", "anonymized")]
    results = [(p.wait(timeout=300), p.stdout.read(), p.stderr.read()) for p in procs]
    codes = sorted(r[0] for r in results)
    assert codes == [0, 3], results
    winner = next(json.loads(r[1]) for r in results if r[0] == 0)
    loser = next(r[2] for r in results if r[0] == 3)
    final = json.loads((out / "attacker.json").read_text())
    assert final["trained_on"] == winner["attacker"]["trained_on"]
    assert "another vpeval run is writing" in loser or "exists and is not empty" in loser
    # whatever happened, the folder is one run's complete output: its scores are those of the attacker it names
    from vpeval.io.embeddings import read_embeddings
    from vpeval.pipeline import make_attackers

    ev, tr = read_embeddings(d / "embeddings_ext-a.npz"), read_embeddings(d / "train" / "embeddings_ext-a.npz")
    att = make_attackers({"ext-a": ev}, {"ext-a": tr}, backends=["plda"], conditions=[final["trained_on"]])[-1]
    lib = att.build_trials(["oa"])["oa"]
    np.testing.assert_allclose(np.sort(_read_kaldi(out / "oa").scores), np.sort(lib.scores), rtol=1e-15)


def test_audit_errors_name_the_system_and_a_file_named_train(tmp_path):
    d = _system(tmp_path)
    from vpeval.io.embeddings import read_embeddings

    tr = read_embeddings(d / "train" / "embeddings_ext-a.npz")
    write_embeddings(d / "train" / "embeddings_ext-a.npz", tr.select(tr.condition == "original"))
    r = CliRunner().invoke(_app(), ["audit", f"S1={d}", "-o", str(tmp_path / "r"), "-q", "--backend", "lda"])
    assert r.exit_code == 2 and "system 'S1'" in r.output and "no rows with condition 'anonymized'" in r.output
    import shutil

    shutil.rmtree(d / "train")
    (d / "train").write_text("not a folder")
    r = CliRunner().invoke(_app(), ["audit", str(d), "-o", str(tmp_path / "r"), "-q"])
    assert r.exit_code == 2 and "found a file" in r.output


def test_audit_prints_verdict_and_scorecard_without_cutting_names(tmp_path):
    d = _system(tmp_path)
    out = tmp_path / "rep"
    r = CliRunner().invoke(_app(), ["audit", str(d), "-o", str(out), "--backend", "cosine", "--backend", "plda"])
    assert r.exit_code == 0, r.output
    v = json.loads((out / "report.json").read_text())["verdicts"]["sys"]
    text = r.stdout
    assert f"sys: {v['verdict'].upper()}." in text
    assert v["strongest_attacker"] in text  # the sentence wraps at spaces, so the name stays whole
    assert "scorecard" in text and "highest ALID (bits)" in text
    assert "…" not in text  # rich's ellipsis: nothing is cut at 80 columns, long cells fold instead


def test_a_singular_plda_training_tells_the_command_line_user_what_to_do(tmp_path):
    """The advice names a command-line choice, not only a Python-only setting (issue 28)."""
    write_embeddings(tmp_path / "ev.npz", synthetic(8, 4, 8, "ext-a", seed=0))
    write_embeddings(tmp_path / "tr.npz", synthetic(3, 2, 8, "ext-a", seed=10, start=100))
    r = CliRunner().invoke(_app(), ["attack", str(tmp_path / "ev.npz"), "--train", str(tmp_path / "tr.npz"),
                                    "--backend", "plda", "-o", str(tmp_path / "o"), "--types", "oa"])
    assert r.exit_code == 2 and "within-speaker covariance is singular" in r.output
    assert "--backend lda or centred-cosine" in r.output
