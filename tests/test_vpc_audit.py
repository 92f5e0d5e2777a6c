"""Audits on the official VoicePrivacy lists (issue 26 item 7): every attacker (trained back-ends, fusion) scores
exactly the enrolls/trials lists, so the per-gender rows, the verdict and the report rest on the lists' trials."""

import csv
import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import vpeval
from vpeval.errors import InputFileError, VpevalError
from vpeval.io.embeddings import write_embeddings
from vpeval.pipeline.vpc import VPCLists
from test_attackers import synthetic

runner = CliRunner()

#: five female and five male speakers, 8 utterances each: 3 enroll, 5 tested
SEX = {f"S{i:03d}": ("F" if i < 5 else "M") for i in range(10)}


def _world(tmp_path):
    ev = synthetic(10, 8, 6, "ext", seed=0)
    tr = synthetic(30, 4, 6, "ext", seed=10, start=100)
    utts = sorted(set(ev.utterance_id.tolist()))
    enrolls = [u for u in utts if int(u.split("-")[1]) < 3]
    (tmp_path / "enrolls").write_text("\n".join(enrolls) + "\n")
    files, listed = [], {}
    for g in "FM":
        spks = [s for s in sorted(SEX) if SEX[s] == g]
        tested = [u for u in utts if int(u.split("-")[1]) >= 3 and SEX["S" + u[1:4]] == g]
        lines = [f"{e} {u} {'target' if u[1:4] == e[1:] else 'nontarget'}" for e in spks for u in tested]
        f = tmp_path / f"trials_{g.lower()}"
        f.write_text("\n".join(lines) + "\n")
        files.append(f)
        listed[g] = lines
    md = pd.DataFrame({"utterance_id": ev.utterance_id, "speaker_id": ev.speaker_id, "condition": ev.condition,
                       "sex": [SEX[s] for s in ev.speaker_id]})
    return ev, tr, tmp_path / "enrolls", files, listed, md


def test_every_attacker_scores_the_lists_and_the_rows_count_them(tmp_path):
    ev, tr, enrolls, files, listed, md = _world(tmp_path)
    lists = VPCLists.read(enrolls, files)
    res = vpeval.audit({"sys": {"ext": ev}}, train={"sys": {"ext": tr}}, metadata={"sys": md}, n_boot=20, n_perm=20,
                       verdict_perm=49, backends=["cosine", "lda", "plda"], vpc_lists=lists, compare=False)
    sa = res.systems["sys"]
    assert "fusion/anonymized" in sa.trials and "ext/plda/original" in sa.trials  # trained back-ends and fusions
    every = listed["F"] + listed["M"]
    for att, by_type in sa.trials.items():
        for t in ("oo", "oa", "aa", "aaaa"):
            got = by_type[t]
            assert [f"{e} {u} {'target' if y else 'nontarget'}" for e, u, y in
                    zip(got.enroll, got.test, got.is_target)] == every, (att, t)
        np.testing.assert_array_equal(by_type["aaaa"].scores, by_type["aa"].scores)
        assert by_type["aaaa"].meta["target_eer"] == 0.0 and by_type["aa"].meta["target_eer"] == 0.5
        for t in ("oo", "oa", "aa"):  # the done-when: per-gender rows count exactly the lists' trials
            rows = {g.group: (g.n_tar, g.n_non) for g in sa.groups[att][t]}
            assert rows == {"F": (25, 100), "M": (25, 100)}, (att, t, rows)
    # the verdict's trial members are the listed trials
    assert res.verdicts["sys"]["verdict"] in ("leaks", "partial", "inconclusive", "protects")
    test = res.tests["sys"]
    assert test.scheme == "speaker-row" and {m.trial_type for m in test.members} == {"oa", "aa"}
    assert {m.statistic for m in test.members} == {"eps_max", "d_ece"}  # the listed trials only, no 1-to-N
    assert res.options["vpc_lists"]["n_trials"] == 250 and res.options["vpc_lists"]["enroll_rule"]["name"] == "vpc"
    # a trained attacker's listed scores are its back-end on the challenge rule's model
    plda = sa.attackers["ext/plda/anonymized"]
    direct = plda.build_vpc_trials(lists.enrolls, list(lists.trials), ["oa"])["oa"]
    np.testing.assert_array_equal(sa.trials["ext/plda/anonymized"]["oa"].scores, direct.scores)
    # without the lists the audit builds its own split: other counts
    own = vpeval.audit({"sys": {"ext": ev}}, metadata={"sys": md}, n_boot=20, n_perm=20, verdict_perm=None,
                       backends=["cosine"], compare=False)
    rows = {g.group: (g.n_tar, g.n_non) for g in own.systems["sys"].groups["ext/cosine"]["oa"]}
    assert rows != {"F": (25, 100), "M": (25, 100)}


def test_audit_cli_on_the_lists_writes_the_lists_counts(tmp_path):
    from vpeval.cli.main import app

    ev, tr, enrolls, files, listed, md = _world(tmp_path)
    sysdir = tmp_path / "sys"
    (sysdir / "train").mkdir(parents=True)
    write_embeddings(sysdir / "embeddings_ext.npz", ev)
    write_embeddings(sysdir / "train" / "embeddings_ext.npz", tr)
    md.to_csv(sysdir / "metadata.csv", index=False)
    out, table = tmp_path / "rep", tmp_path / "vpc.csv"
    args = ["audit", str(sysdir), "-o", str(out), "--backend", "cosine", "--backend", "plda", "--enroll-list",
            str(enrolls), "--vpc-trials", str(files[0]), "--vpc-trials", str(files[1]), "--vpc-table", str(table),
            "--n-perm", "49", "--json"]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader(table.open()))
    assert {r["attacker"] for r in rows} >= {"ext/cosine", "ext/plda/anonymized", "ext/plda/original"}
    for row in rows:
        want = {"F": (25, 100), "M": (25, 100), "all": (50, 200)}[row["gender"]]
        assert (int(row["target trials"]), int(row["non-target trials"])) == want, row
    rep = json.loads((out / "report.json").read_text())
    assert rep["options"]["vpc_lists"]["trial_lists"] == [str(f) for f in files]
    assert any(i["name"] == "vpc-lists/trials_f" for i in rep["inputs"])
    assert "verdict" in json.loads(r.stdout)["verdicts"]["sys"]
    # the options go together; a bad list line names file and line
    r = runner.invoke(app, ["audit", str(sysdir), "-o", str(tmp_path / "x"), "--vpc-trials", str(files[0])])
    assert r.exit_code == 2 and "--enroll-list" in r.output
    r = runner.invoke(app, ["audit", str(sysdir), "-o", str(tmp_path / "x"), "--enroll-rule", "vpc"])
    assert r.exit_code == 2 and "--vpc-trials" in r.output
    bad = tmp_path / "trials_bad"
    bad.write_text(files[0].read_text() + "S000 nope nontarget\n")
    r = runner.invoke(app, ["audit", str(sysdir), "-o", str(tmp_path / "y"), "--enroll-list", str(enrolls),
                            "--vpc-trials", str(bad), "--backend", "cosine", "--no-verdict"])
    assert r.exit_code == 2 and f"{bad}:126" in r.output and "nope" in r.output


def test_lists_protocol_and_errors(tmp_path):
    ev, tr, enrolls, files, listed, md = _world(tmp_path)
    lists = VPCLists.read(enrolls, files, enroll_rule="normalized")
    p = lists.protocol(ev)
    assert p.speakers.size == 10 and int(p.is_enroll.sum()) == 30 and int((~p.is_enroll).sum()) == 50
    with pytest.raises(VpevalError, match="enroll rule 'mean'"):
        VPCLists.read(enrolls, files, enroll_rule="mean")
    with pytest.raises(InputFileError):
        VPCLists.read(tmp_path / "missing", files)


def test_lists_audit_echoes_the_inputs_names_and_names_every_eer(tmp_path):
    """Issue 47 item 5, on an audit built from the user's VoicePrivacy lists: the exposed speakers are the speaker
    labels of the input (here S002, whose anonymized rows are its original ones, among them), the genders are
    written as the metadata writes them (f/m, not upper-cased) in the per-gender CSV, report.json and the page,
    and the CSV's EER column names its estimator (the challenge tables' 'EER (%)' is the closest-point EER)."""
    from vpeval.cli.main import app
    from vpeval.io.embeddings import EmbeddingSet

    ev, tr, enrolls, files, listed, md = _world(tmp_path)
    x = ev.embeddings.copy()
    n = len(x) // 2
    leak = np.flatnonzero(ev.speaker_id[:n] == "S002")
    x[n + leak] = x[leak]
    ev = EmbeddingSet(x, ev.utterance_id, ev.speaker_id, ev.condition, ev.extractor)
    md["sex"] = md["sex"].str.lower()
    sysdir = tmp_path / "sys"
    sysdir.mkdir()
    write_embeddings(sysdir / "embeddings_ext.npz", ev)
    md.to_csv(sysdir / "metadata.csv", index=False)
    out, table = tmp_path / "rep", tmp_path / "vpc.csv"
    r = runner.invoke(app, ["audit", str(sysdir), "-o", str(out), "--backend", "cosine", "--enroll-list",
                            str(enrolls), "--vpc-trials", str(files[0]), "--vpc-trials", str(files[1]),
                            "--vpc-table", str(table), "--n-perm", "99", "--jobs", "1", "--json"])
    assert r.exit_code == 0, r.output
    exposed = [e["speaker"] for e in json.loads(r.stdout)["verdicts"]["sys"]["exposed_speakers"]]
    assert "S002" in exposed and set(exposed) <= set(ev.speaker_id.tolist()), exposed
    rows = list(csv.DictReader(table.open()))
    assert {row["gender"] for row in rows} == {"f", "m", "all"}
    assert list(rows[0])[:6] == ["dataset", "split", "gender", "enrollment", "trial", "EER closest-point (%)"]
    eer_columns = [c for c in rows[0] if "EER" in c]
    assert all(any(w in c for w in ("closest-point", "interp", "ROCCH", "per-speaker")) for c in eer_columns), \
        eer_columns
    rep = json.loads((out / "report.json").read_text())
    groups = next(s for s in rep["sections"] if s["id"] == "groups")["data"]
    assert {row[2] for row in groups["vpc_rows"]} == {"f", "m", "all"}
    page = (out / "report.html").read_text() + "".join(p.read_text() for p in out.glob("appendix*.html"))
    assert "<td>f</td>" in page and "<td>m</td>" in page and "<td>F</td>" not in page and "<td>M</td>" not in page
