"""Runs of one system under further profile keys (``anonymized@KEY`` rows): reading, validation, and Beyond-EER's
cross-profile trials in an audit."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from vpeval.errors import InputFileError
from vpeval.io.embeddings import (EmbeddingSet, check_conditions, profile_key, read_embeddings, split_profile_runs,
                                  write_embeddings)

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "librispeech-mini"


def _app():
    from vpeval.cli.main import app

    return app


def test_profile_conditions_are_checked_and_split():
    es = EmbeddingSet(np.eye(4), ["u1", "u1", "u1", "u1"], ["s"] * 4,
                      ["anonymized@b", "original", "anonymized", "anonymized@a"], "x")
    check_conditions(es, "f.npz", profiles=True)
    with pytest.raises(InputFileError, match="unknown condition label 'anonymized@b'"):
        check_conditions(es, "f.npz")  # not where profile runs are not read (training folders)
    for bad in ("anonymized@", "anonymized@a b", "anonymized@a@b", "anonymised@a"):
        wrong = EmbeddingSet(np.eye(1), ["u"], ["s"], [bad], "x")
        with pytest.raises(InputFileError, match="f.npz.*row 0"):
            check_conditions(wrong, "f.npz", profiles=True)
    main, runs = split_profile_runs(es)
    assert main.condition.tolist() == ["original", "anonymized"] and list(runs) == ["a", "b"]
    assert np.array_equal(runs["b"].embeddings, np.eye(4)[[0]])
    assert profile_key("anonymized@a") == "a" and profile_key("original") is None
    same, none = split_profile_runs(main)
    assert same is main and none == {}


def _one_run_system(tmp_path):
    """The example's McAdams system without its second run (rows ``anonymized@p2``)."""
    d = tmp_path / "one"
    d.mkdir()
    for e in ("mfcc", "resemblyzer"):
        es = read_embeddings(EXAMPLE / f"embeddings_{e}.npz")
        write_embeddings(d / f"embeddings_{e}.npz", es.select(es.condition != "anonymized@p2"))
    meta = pd.read_csv(EXAMPLE / "metadata.csv", dtype=str, keep_default_na=False)
    meta[meta["condition"] != "anonymized@p2"].to_csv(d / "metadata.csv", index=False)
    return d


def test_audit_scores_cross_profile_for_a_system_with_two_runs(tmp_path):
    """The bundled example holds a second run of McAdams under profile key p2 (make_example.py, step 6)."""
    one = _one_run_system(tmp_path)
    out = tmp_path / "rep"
    res = CliRunner().invoke(_app(), ["audit", f"two={EXAMPLE}", f"one={one}", "-o", str(out), "--no-verdict",
                                      "--backend", "cosine", "--no-fusion"])
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "report.json").read_text())
    summary = next(s for s in doc["sections"] if s["id"] == "summary")["data"]
    by = summary["systems"]["two"]["attackers"]["mfcc-stats/cosine"]
    n_probes, n_models = by["oa"]["n_tar"], 1 + by["oa"]["n_non"] // by["oa"]["n_tar"]
    # targets: each key-1 probe against its own model; non-targets: every key-2 probe against every model
    assert (by["cross-profile"]["n_tar"], by["cross-profile"]["n_non"]) == (n_probes, n_probes * n_models)
    assert (by["cross-profile-same-source"]["n_tar"], by["cross-profile-same-source"]["n_non"]) == (n_probes,
                                                                                                  n_probes)
    # the targets are aaaa's: the same pairs of the same run
    assert by["cross-profile"]["n_tar"] == by["aaaa"]["n_tar"]
    one = summary["systems"]["one"]["attackers"]["mfcc-stats/cosine"]
    assert "cross-profile" not in one
    # the two systems' single-run types agree: the further run changes nothing else
    for t in ("oo", "oa", "aa", "aaaa", "aa-centroid"):  # report.json writes a repeated object as a reference
        assert one[t] == {"$ref": f"/sections/{doc['sections'].index(next(s for s in doc['sections'] if s['id'] == 'summary'))}"
                          f"/data/systems/two/attackers/mfcc-stats~1cosine/{t}"} or one[t] == by[t], t
    beyond = summary["beyond_eer"]
    assert "cross-profile" in beyond["two"] and "cross-profile" not in beyond["one"]
    scored = [m["cross-profile"]["eer_interp"] for m in summary["systems"]["two"]["attackers"].values()
              if "cross-profile" in m]  # the voice attackers (content and prosody have no second run)
    assert len(scored) >= 2 and beyond["two"]["cross-profile"]["n_attackers"] == len(scored)
    assert beyond["two"]["cross-profile"]["mean"] == pytest.approx(sum(scored) / len(scored), rel=1e-9)
    page = (out / "report.html").read_text() + (out / "appendix.html").read_text()
    assert "one run" in page and "cross-profile-same-source" in page
    # the renewal subset gets a reading of its own
    assert summary["systems"]["two"]["readings"]["cross-profile-same-source"]
    readings = summary["systems"]["two"]["readings"]
    assert set(readings["cross-profile"]) == {a for a, m in summary["systems"]["two"]["attackers"].items()
                                              if "cross-profile" in m} >= {"mfcc-stats/cosine",
                                                                           "resemblyzer-ge2e/cosine"}


def test_audit_names_missing_metadata_of_a_profile_run(tmp_path):
    d = _one_run_system(tmp_path)
    write_embeddings(d / "embeddings_mfcc.npz", read_embeddings(EXAMPLE / "embeddings_mfcc.npz"))
    res = CliRunner().invoke(_app(), ["audit", str(d), "-o", str(tmp_path / "rep"), "--no-verdict",
                                      "--backend", "cosine"])
    assert res.exit_code != 0
    assert "condition 'anonymized@p2'" in res.output and "metadata.csv" in res.output


def test_training_folders_refuse_profile_rows(tmp_path):
    d = _one_run_system(tmp_path)
    (d / "metadata.csv").unlink()
    (d / "train").mkdir()
    tr = read_embeddings(EXAMPLE / "train" / "embeddings_mfcc.npz")
    bad = tr.concat(EmbeddingSet(tr.embeddings[:1], ["x-1"], ["x"], ["anonymized@k2"], tr.extractor,
                                 None, tr.extractor_info))
    write_embeddings(d / "train" / "embeddings_mfcc.npz", bad)
    res = CliRunner().invoke(_app(), ["audit", str(d), "-o", str(tmp_path / "rep"), "--no-verdict"])
    assert res.exit_code != 0 and "anonymized@k2" in res.output and "train" in res.output


def test_embed_checks_the_label_against_the_anonymization_record(tmp_path):
    """`vpeval embed` reads anonymization.csv (written by `vpeval anonymize`): anonymized audio is never embedded as
    original, and a run under profile key K never under another key's label."""
    from vpeval.cli.audio import check_profile_record
    from vpeval.errors import VpevalError

    run = tmp_path / "run"
    run.mkdir()
    check_profile_record(run, "original")  # no record: not checked (another anonymizer's output)
    (run / "anonymization.csv").write_text("utterance_id,speaker_id,alpha,profile\nu1,s,0.7,k2\n")
    check_profile_record(run, "anonymized")
    check_profile_record(run, "anonymized@k2")
    with pytest.raises(VpevalError, match="anonymization.csv: the audio was anonymized under 'k2', but the "
                                          "condition names profile key 'k3'"):
        check_profile_record(run, "anonymized@k3")
    with pytest.raises(VpevalError, match="holds anonymized audio"):
        check_profile_record(run, "original")
    (run / "anonymization.csv").write_text("utterance_id,speaker_id,alpha\nu1,s,0.7\n")
    with pytest.raises(VpevalError, match="under no profile key"):
        check_profile_record(run, "anonymized@k2")
    res = CliRunner().invoke(_app(), ["embed", str(run), "-o", str(tmp_path / "e.npz"), "-c", "anonymized@k2"])
    assert res.exit_code == 2 and "no profile key" in res.output and not (tmp_path / "e.npz").exists()


@pytest.mark.parametrize("command", ["trials", "attack"])
def test_trials_and_attack_set_aside_profile_runs_and_count_them(tmp_path, command):
    """`vpeval trials` / `attack` refused every evaluation file of the bundled example once it held a second run
    (unknown condition 'anonymized@p2'). They build no cross-profile type, so those rows are set aside, counted in
    the summary and on the terminal, and the trials are those of the file without them."""
    one = _one_run_system(tmp_path)
    extra = (["--train", str(EXAMPLE / "train" / "embeddings_mfcc.npz"), "--backend", "lda"]
             if command == "attack" else [])
    outs = {}
    for name, src in (("both", EXAMPLE / "embeddings_mfcc.npz"), ("one", one / "embeddings_mfcc.npz")):
        out = tmp_path / f"out-{name}"
        res = CliRunner().invoke(_app(), [command, str(src), "-o", str(out), "--types", "oa", *extra, "--json"])
        assert res.exit_code == 0, res.output
        outs[name] = (json.loads(res.stdout), (out / "oa" / "scores").read_text())
    assert outs["both"][0]["set_aside_rows"] == {"anonymized@p2": 201} and "set_aside_rows" not in outs["one"][0]
    assert outs["both"][1] == outs["one"][1]
    res = CliRunner().invoke(_app(), [command, str(EXAMPLE / "embeddings_mfcc.npz"), "-o", str(tmp_path / "t"),
                                      "--types", "oa", *extra])
    assert res.exit_code == 0 and "set aside 201 rows of condition 'anonymized@p2'" in " ".join(res.output.split())


@pytest.mark.parametrize("command", ["embedding", "attributes", "distinctiveness"])
def test_beyond_identity_commands_count_the_rows_they_do_not_read(tmp_path, command):
    """embedding, attributes and distinctiveness read the original and anonymized rows: the example's
    anonymized@p2 rows were passed over without a word; now they are counted (stderr line, set_aside_rows)."""
    extra = ["--metadata", str(EXAMPLE / "metadata.csv")] if command == "attributes" else []
    res = CliRunner().invoke(_app(), [command, str(EXAMPLE / "embeddings_mfcc.npz"), *extra, "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["set_aside_rows"] == {"anonymized@p2": 201}
    assert "set aside 201 rows of condition 'anonymized@p2'" in res.stderr
    one = _one_run_system(tmp_path)
    extra = ["--metadata", str(one / "metadata.csv")] if command == "attributes" else []
    res = CliRunner().invoke(_app(), [command, str(one / "embeddings_mfcc.npz"), *extra, "--json"])
    assert res.exit_code == 0 and "set_aside_rows" not in json.loads(res.stdout) and res.stderr == ""
