"""CLI: vpeval disclosure / vpeval simulate, registered on a fresh Typer app."""

import json
import math

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from vpeval.cli.disclosure import register
from vpeval.io.readers import read_score_label


@pytest.fixture(scope="module")
def app():
    a = typer.Typer()
    register(a)
    return a


runner = CliRunner()


def _write_score_label(path, tar, non):
    path.write_text("".join(f"{s} 1\n" for s in tar) + "".join(f"{s} 0\n" for s in non))


def test_disclosure_json_table2(app, tmp_path):
    f = tmp_path / "s.txt"
    _write_score_label(f, [0.2, 0.4, 0.6], [0.1, 0.3, 0.5])
    res = runner.invoke(app, ["disclosure", str(f), "--json", "--estimators", "pav,pav_laplace,pav_succession"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    est = {e["estimator"]: e for e in d["disclosure"]["estimators"]}
    assert est["pav"]["eps_max_nats"] == "inf"
    assert est["pav_laplace"]["eps_max_nats"] == pytest.approx(math.log(2))
    assert est["pav_laplace"]["eps_max_bits"] == pytest.approx(1.0)


def test_disclosure_kaldi_key_positional_and_table(app, tmp_path):
    key, scores = tmp_path / "trials", tmp_path / "scores"
    key.write_text("a x target\na y nontarget\nb y target\nb x nontarget\nc x target\nc y nontarget\n")
    scores.write_text("a x 2.0\na y -1.0\nb y 1.5\nb x 0.3\nc x 0.1\nc y 0.5\n")
    res = runner.invoke(app, ["disclosure", str(scores), "--key", str(key)], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "pav_laplace" in res.stdout and "student_t" in res.stdout


def test_disclosure_reports_failed_estimator(app, tmp_path):
    f = tmp_path / "s.txt"
    _write_score_label(f, [1, 2], [-2, -1])
    res = runner.invoke(app, ["disclosure", str(f), "--json"])
    assert res.exit_code == 0
    est = {e["estimator"]: e for e in json.loads(res.stdout)["disclosure"]["estimators"]}
    assert est["logistic"]["error"].startswith("SeparableScoresError")


def test_disclosure_bad_input_exit_2(app, tmp_path):
    f = tmp_path / "s.txt"
    f.write_text("0.1 1\nnan 0\n")
    res = runner.invoke(app, ["disclosure", str(f)])
    assert res.exit_code == 2 and "Traceback" not in res.output
    res = runner.invoke(app, ["disclosure", str(f), "--estimators", "nope"])
    assert res.exit_code == 2 and "unknown LLR estimator" in res.output


def test_simulate_writes_scores_and_comparison(app, tmp_path):
    out = tmp_path / "sim"
    res = runner.invoke(app, ["simulate", "-o", str(out), "--n", "300", "--n-probes", "500", "--seed", "3",
                              "-q"])
    assert res.exit_code == 0, res.output
    t = read_score_label(out / "scores.txt")
    assert t.tar.size == 300 and t.non.size == 300
    from vpeval.simulate import counterexample

    sim = counterexample(300, seed=3)
    np.testing.assert_array_equal(np.sort(t.tar), np.sort(sim.tar))  # exact float round trip
    comp = json.loads((out / "comparison.json").read_text())
    assert comp["eer_exact"] == pytest.approx(0.5)
    assert set(comp["llr_error_vs_oracle"]) == {"pav", "pav_laplace", "logistic", "gaussian", "student_t"}
    assert comp["llr_error_vs_oracle"]["gaussian"]["mean_abs_error_nats"] < 0.5
    assert comp["rank"]["n_speakers"] == 10 and len(comp["rank"]["gamma_exact"]) == 10
    assert (out / "report" / "report.html").exists() and any((out / "report").glob("*.png"))
    assert len((out / "oracle_llr.txt").read_text().splitlines()) == 600
    # existing folder: refuse without --force (exit 3), replace with it
    res = runner.invoke(app, ["simulate", "-o", str(out), "--n", "50"])
    assert res.exit_code == 3
    res = runner.invoke(app, ["simulate", "-o", str(out), "--n", "50", "--kind", "equal-variance", "--force",
                              "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["n_tar"] == 50 and "rank" not in json.loads(res.stdout)
    # a folder holding anything else is never replaced
    (out / "notes.txt").write_text("mine")
    res = runner.invoke(app, ["simulate", "-o", str(out), "--n", "50", "--force"])
    assert res.exit_code == 3 and (out / "notes.txt").read_text() == "mine"


def test_simulate_bad_kind(app, tmp_path):
    res = runner.invoke(app, ["simulate", "-o", str(tmp_path / "x"), "--kind", "weird"])
    assert res.exit_code == 2 and "--kind" in res.output


def _one_to_n_table(path, rows):
    path.write_text("enroll_spk,trial_spk,trial_id,score\n" + "".join(f"{e},{t},{i},{s}\n" for e, t, i, s in rows))


def test_rank_disclosure_command(app, tmp_path):
    # 4 probes against speakers A, B: true speaker ranked first in 3 probes, second in 1
    rows = []
    for i, (spk, sa, sb) in enumerate([("A", 0.9, 0.1), ("A", 0.8, 0.3), ("B", 0.2, 0.7), ("B", 0.6, 0.4)]):
        rows += [("A", spk, f"p{i}", sa), ("B", spk, f"p{i}", sb)]
    f = tmp_path / "t.csv"
    _one_to_n_table(f, rows)
    res = runner.invoke(app, ["rank-disclosure", str(f), "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["gamma"] == [0.75, 0.25]
    assert d["max_d_bits"] == pytest.approx(math.log2(1.5))
    assert d["input"]["n_probes"] == 4 and d["input"]["ties"] == "fractional"
    res = runner.invoke(app, ["rank-disclosure", str(f), "--smoothing", "laplace"], env={"COLUMNS": "120"})
    assert res.exit_code == 0, res.output
    assert "MaxD" in res.stdout and "laplace(alpha=1, n_probes=4)" in res.stdout
    res = runner.invoke(app, ["rank-disclosure", str(f), "--ties", "weird"])
    assert res.exit_code == 2
    # --drop-unenrolled: the dropped probes are counted on the terminal too, not only in --json (issue 47 item 5)
    _one_to_n_table(f, rows + [("A", "C", "p9", 0.5), ("B", "C", "p9", 0.4)])
    res = runner.invoke(app, ["rank-disclosure", str(f), "--drop-unenrolled"], env={"COLUMNS": "200"})
    said = " ".join(res.stdout.split())
    assert res.exit_code == 0 and "4 probes x 2 speakers" in said
    assert "; 1 probe dropped: speaker not enrolled (--drop-unenrolled)" in said
    res = runner.invoke(app, ["rank-disclosure", str(f), "--drop-unenrolled", "--json"])
    assert json.loads(res.stdout)["input"]["n_dropped_unenrolled"] == 1


def test_the_attaining_trial_is_named_by_its_ids_or_its_place(tmp_path):
    """Below the table, the trial that attains eps_max: by its enrollment and test ids for a Kaldi input, by its
    1-based place among the input's trials of its class otherwise (a breaker read the 0-based index as a line)."""
    from typer.testing import CliRunner

    from vpeval.cli.main import app

    (tmp_path / "trials").write_text("a u1 target\na u2 nontarget\nb u1 nontarget\nb u2 target\na u3 target\n"
                                     "b u3 nontarget\n")
    (tmp_path / "scores").write_text("a u1 0.9\na u2 0.2\nb u1 0.1\nb u2 0.8\na u3 0.7\nb u3 0.3\n")
    (tmp_path / "sl.txt").write_text("0.9 1\n0.2 0\n0.8 1\n0.1 0\n0.7 1\n0.3 0\n")
    out = CliRunner().invoke(app, ["disclosure", str(tmp_path / "scores"), "--key", str(tmp_path / "trials")],
                             terminal_width=200).output
    assert "trial (enrollment " in out and ", test u" in out, out
    out = CliRunner().invoke(app, ["disclosure", str(tmp_path / "sl.txt")], terminal_width=200).output
    assert "trial no. " in out and "of the input's" in out, out
