"""Import of the VoicePrivacy 2024 toolkit's outputs: small files in its formats, written here."""

import csv
import json
import re

import numpy as np
import pytest
from typer.testing import CliRunner

from vpeval.errors import InputFileError
from vpeval.io.readers import read_trials_scores
from vpeval.io.vpc_results import find_vpc_score_files, read_result_for_rank
from vpeval.metrics import closest_eer
from vpeval.report.vpc_import import IMPORT_COLUMNS, import_vpc_outputs

# result_for_rank as 02_run.sh writes it: results_orig.txt, a blank line, results_anon.txt (DataFrame.to_string)
TABLE = """---- Time: 28-03-24_19:00 ----

---- SER results ----
   dataset split       ser      UAR  ACC_sad  ACC_neu  ACC_ang  ACC_hap
                               mean     mean     mean     mean     mean
0  IEMOCAP   dev      anon  55.6146  32.9580  57.9720  64.4438  67.0860

---- ASV_eval results ----
  dataset split gender enrollment     trial     EER
0   libri   dev      f   original  original  0.000
3   libri   dev      m   original  original   1.000

---- ASR results ----
  dataset split       asr     WER
0   libri   dev  original   1.807

---- Time: 28-03-24_21:23 ----

---- ASV_eval^anon results ----
   dataset split gender enrollment trial     EER
2    libri   dev      f       anon  anon  25.000
"""

SPK = ["1", "2", "3", "4"]


def _write_run(root):
    """Data folder with trials keys, and score files of three conditions (one without a table row)."""
    data, exp = root / "data", root / "exp"
    key_lines, utts = [], {s: [f"{s}-10-000{k}" for k in range(2)] for s in SPK}
    for e in SPK:
        for s in SPK:
            for u in utts[s]:
                key_lines.append((e, u, e == s))
    (data / "libri_dev_trials_f").mkdir(parents=True)
    (data / "libri_dev_trials_f" / "trials").write_text(
        "".join(f"{e} {u} {'target' if t else 'nontarget'}\n" for e, u, t in key_lines))
    rng = np.random.default_rng(0)
    runs = {"asv_orig/cos_out/libri_dev_enrolls-libri_dev_trials_f": 3.0,  # well separated
            "asv_anon_mcadams/cos_out/libri_dev_enrolls_mcadams-libri_dev_trials_f_mcadams": 0.8,
            "asv_orig/cos_out/libri_dev_enrolls-libri_dev_trials_f_mcadams": 0.3}  # oa: no table row
    for d, sep in runs.items():
        (exp / d).mkdir(parents=True)
        # the toolkit's score file: "enroll trial score", no header, in the key's order
        (exp / d / "scores").write_text("".join(
            f"{e} {u} {float(sep * t + rng.normal())}\n" for e, u, t in key_lines))
    (root / "result_for_rank_mcadams").write_text(TABLE)
    return root / "result_for_rank_mcadams", exp, data


def test_read_result_for_rank_asv_rows_only(tmp_path):
    p = tmp_path / "r"
    p.write_text(TABLE)
    rows = read_result_for_rank(p)
    assert [(r["block"], r["gender"], r["enrollment"], r["trial"], r["eer"], r["line"]) for r in rows] == [
        ("ASV_eval", "f", "original", "original", 0.0, 10), ("ASV_eval", "m", "original", "original", 1.0, 11),
        ("ASV_eval^anon", "f", "anon", "anon", 25.0, 21)]
    assert rows[0]["eer_ci_lower"] is None
    ci = ("---- ASV_eval results ----\n  dataset split gender enrollment     trial    EER  EER-ci_lower  EER-ci_upper\n"
          "0   libri   dev      f   original  original  9.815         8.962        11.807\n")
    p.write_text(ci)
    (r,) = read_result_for_rank(p)
    assert (r["eer"], r["eer_ci_lower"], r["eer_ci_upper"]) == (9.815, 8.962, 11.807)


@pytest.mark.parametrize("text, line, needle", [
    ("---- ASV_eval results ----\n  dataset split gender trial EER\n", 2, "lacks column 'enrollment'"),
    ("---- ASV_eval results ----\n  dataset split gender enrollment trial EER\n0 libri dev f original\n", 3,
     "expected 7 fields"),
    ("---- ASV_eval results ----\n  dataset split gender enrollment trial EER\n0 libri dev f o o x\n", 3,
     "not a number"),
])
def test_result_table_errors_name_file_and_line(tmp_path, text, line, needle):
    p = tmp_path / "r"
    p.write_text(text)
    with pytest.raises(InputFileError, match=needle) as e:
        read_result_for_rank(p)
    assert f"r:{line}" in str(e.value)
    p.write_text("---- SER results ----\n a b\n")
    with pytest.raises(InputFileError, match="no ASV results"):
        read_result_for_rank(p)


def test_score_files_found_with_their_conditions(tmp_path):
    _, exp, _ = _write_run(tmp_path)
    got = [(f.model, f.gender, f.enrollment, f.trial, f.test_set) for f in find_vpc_score_files(exp)]
    assert got == [("anon", "f", "anon", "anon", "libri_dev_trials_f"),
                   ("orig", "f", "original", "original", "libri_dev_trials_f"),
                   ("orig", "f", "original", "anon", "libri_dev_trials_f")]


def test_a_dataset_name_with_underscores_is_recognised_in_its_folder_names(tmp_path):
    for folder, ds in (("my_corpus_dev_enrolls-my_corpus_dev_trials_f", "my_corpus"),
                       ("my_corpus_dev_enrolls_anon-my_corpus_dev_trials_m_anon", "my_corpus"),
                       ("libri_test_enrolls-libri_test_trials_f", "libri")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "scores").write_text("a b 0.5\n")
    got = sorted((f.dataset, f.split, f.gender, f.enrollment, f.trial, f.test_set)
                 for f in find_vpc_score_files(tmp_path))
    assert got == [("libri", "test", "f", "original", "original", "libri_test_trials_f"),
                   ("my_corpus", "dev", "f", "original", "original", "my_corpus_dev_trials_f"),
                   ("my_corpus", "dev", "m", "anon", "anon", "my_corpus_dev_trials_m")]


def test_import_puts_vpeval_beside_the_challenge(tmp_path):
    table, exp, data = _write_run(tmp_path)
    res = import_vpc_outputs(table, exp, data, n_boot=50, seed=1)
    rows = res["rows"]
    # the challenge's rows first, in its order and with its printed values; then the score file without a row
    assert [(r["block"], r["gender"], r["EER (%)"]) for r in rows] == [
        ("ASV_eval", "f", 0.0), ("ASV_eval", "m", 1.0), ("ASV_eval^anon", "f", 25.0),
        ("scores (orig model)", "f", None)]
    assert res["unmatched_table_rows"] == [11]  # no score file for the male row
    assert rows[1]["vpeval closest-point EER (%)"] is None
    for r in (rows[0], rows[2], rows[3]):
        t = read_trials_scores(data / "libri_dev_trials_f" / "trials", r["score file"])
        assert r["vpeval closest-point EER (%)"] == pytest.approx(100 * closest_eer(t.tar, t.non))
        assert (r["target trials"], r["non-target trials"]) == (8, 24)
        assert r["EER interp 95% low (%)"] <= r["vpeval EER interp (%)"] <= r["EER interp 95% high (%)"]
        assert 0 <= r["clipped per-speaker mean EER (%)"] <= 50
    assert "asv_anon_mcadams" in rows[2]["score file"] and rows[3]["trial"] == "anon"
    # worst case over the attack rows (anonymized test side): the largest eps_max, the lowest EER
    attacks = [2, 3]
    assert res["worst_case"]["eps_max"]["row"] in attacks
    low = min(attacks, key=lambda i: rows[i]["vpeval closest-point EER (%)"])
    assert res["worst_case"]["eer"]["row"] == low
    # the same seed gives the same numbers
    assert import_vpc_outputs(table, exp, data, n_boot=50, seed=1)["rows"] == rows


def test_cli_writes_csv_and_json(tmp_path):
    from vpeval.cli.main import app

    table, exp, data = _write_run(tmp_path)
    out = tmp_path / "imp"
    r = CliRunner().invoke(app, ["vpc-import", str(table), "--scores", str(exp), "--data", str(data), "-o",
                                 str(out), "--n-boot", "39", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "vpc_import.json").read_text())
    assert doc["columns"] == IMPORT_COLUMNS and len(doc["rows"]) == 4
    with open(out / "vpc_import.csv", newline="") as f:
        got = list(csv.DictReader(f))
    assert list(got[0])[:7] == ["block", "dataset", "split", "gender", "enrollment", "trial", "EER (%)"]
    assert got[2]["EER (%)"] == "25" and got[1]["vpeval closest-point EER (%)"] == ""
    # a missing trials key names the file
    (data / "libri_dev_trials_f" / "trials").unlink()
    r = CliRunner().invoke(app, ["vpc-import", str(table), "--scores", str(exp), "--data", str(data), "-o",
                                 str(tmp_path / "x")])
    assert r.exit_code == 2 and "trials" in r.output and "does not exist" in r.output


def test_cli_refuses_an_existing_output_before_any_work(tmp_path, monkeypatch):
    from vpeval.cli.main import app
    import vpeval.report.vpc_import as vi

    table, exp, data = _write_run(tmp_path)
    out = tmp_path / "imp"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    monkeypatch.setattr(vi, "import_vpc_outputs", lambda *a, **k: pytest.fail("work done before the refusal"))
    r = CliRunner().invoke(app, ["vpc-import", str(table), "--scores", str(exp), "--data", str(data), "-o", str(out)])
    assert r.exit_code == 3 and (out / "mine.txt").read_text() == "keep"


def test_import_gives_each_attack_row_the_score_verdict(tmp_path):
    """Issue 26 item 5: the verdict of the worst-case rule per attack row, the attacker being the scores as given,
    with speakers relabelled (the keys name the enrolled speakers; every probe meets every model of its list)."""
    from vpeval.analysis.families import score_verdict
    from vpeval.report.vpc_import import row_name

    table, exp, data = _write_run(tmp_path)
    vopts = {"budget_bits": 1.0, "n_perm": 99, "alpha": 0.05}
    res = import_vpc_outputs(table, exp, data, n_boot=39, seed=1, verdict=vopts)
    rows = res["rows"]
    attacks = [i for i, r in enumerate(rows) if r["trial"] == "anon"]
    assert attacks == [2, 3] and sorted(v["row"] for v in res["verdicts"].values()) == attacks
    for i in attacks:
        name = row_name(rows[i])
        v = res["verdicts"][name]
        t = read_trials_scores(data / "libri_dev_trials_f" / "trials", rows[i]["score file"])
        want = score_verdict(t, name, n_boot=39, seed=1, **vopts).to_dict()
        assert v["test"]["scheme"] == "speaker" and v["verdict"] == want["verdict"] == rows[i]["verdict"]
        assert v["worst_case"] == want["worst_case"] and v["test"]["p_value"] == want["test"]["p_value"]
    assert rows[0]["verdict"] is None  # the o-o reference is no attack
    assert "verdicts" not in import_vpc_outputs(table, exp, data, n_boot=39, seed=1)


def test_import_verdict_reads_a_leak(tmp_path):
    """Ten speakers, anonymized scores that still separate them: 'leaks' by speaker relabelling and the profile's
    lower bound (at 8 speakers x 3 probes a 4-SD leak reads 'partial': its lower bound at delta = 1/16 stays at
    2.5 bits, too few trials to show more)."""
    from vpeval.cli.main import app

    spk = [f"s{k}" for k in range(10)]
    data, exp = tmp_path / "data", tmp_path / "exp"
    (data / "libri_test_trials_m").mkdir(parents=True)
    lines = [(e, f"{s}-1-000{j}", e == s) for e in spk for s in spk for j in range(5)]
    (data / "libri_test_trials_m" / "trials").write_text(
        "".join(f"{e} {u} {'target' if t else 'nontarget'}\n" for e, u, t in lines))
    d = exp / "asv_orig/cos_out/libri_test_enrolls-libri_test_trials_m_x"
    d.mkdir(parents=True)
    rng = np.random.default_rng(3)
    d.joinpath("scores").write_text("".join(f"{e} {u} {6.0 * t + rng.normal():.6f}\n" for e, u, t in lines))
    table = tmp_path / "results_anon.txt"
    table.write_text("---- ASV_eval results ----\n  dataset split gender enrollment trial EER\n"
                     "0 libri test m original anon 1.0\n")
    out = tmp_path / "imp"
    r = CliRunner().invoke(app, ["vpc-import", str(table), "--scores", str(exp), "--data", str(data), "-o", str(out),
                                 "--n-boot", "39", "--n-perm", "199", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "vpc_import.json").read_text())
    (v,) = doc["verdicts"].values()
    assert v["verdict"] == "leaks" and v["test"]["scheme"] == "speaker" and v["row"] == 0
    assert json.loads(r.stdout)["verdicts"] == doc["verdicts"]
    with open(out / "vpc_import.csv", newline="") as f:
        assert [row["verdict"] for row in csv.DictReader(f)] == ["leaks"]
    r = CliRunner().invoke(app, ["vpc-import", str(table), "--scores", str(exp), "--data", str(data), "-o",
                                 str(tmp_path / "imp2"), "--n-boot", "39"])
    assert r.exit_code == 0 and r.output.lstrip().startswith("ASV_eval libri test m original-anon: LEAKS")
    r = CliRunner().invoke(app, ["vpc-import", str(table), "--scores", str(exp), "--data", str(data), "-o",
                                 str(tmp_path / "imp3"), "--n-boot", "39", "--no-verdict", "--json"])
    assert r.exit_code == 0 and "verdicts" not in json.loads(r.stdout)


# ---- issue 48 item 6: EER cells that are not defined (NaN) or out of range

@pytest.mark.parametrize("cell", ["NaN", "nan", "-nan"])
def test_a_nan_eer_cell_is_not_defined(tmp_path, cell):
    p = tmp_path / "r"
    p.write_text(TABLE.replace("25.000", cell))
    rows = read_result_for_rank(p)
    assert rows[2]["eer"] is None and rows[2]["not_defined"] == ["EER"] and rows[0]["not_defined"] == []


@pytest.mark.parametrize("cell, words", [("inf", "infinite"), ("-inf", "infinite"), ("1e400", "float64 range"),
                                         ("-3", r"outside \[0, 100\]"),
                                         ("150", r"outside \[0, 100\]"), ("100.5", r"outside \[0, 100\]"), ("1_0", "not a number"),
                                         ("\u0661\u0662", "not a number")])
def test_an_out_of_range_eer_cell_names_file_and_line(tmp_path, cell, words):
    p = tmp_path / "r"
    p.write_text(TABLE.replace("25.000", cell))
    with pytest.raises(InputFileError, match=words) as e:
        read_result_for_rank(p)
    assert e.value.line == 21 and repr(cell) in str(e.value)
    ci = ("---- ASV_eval results ----\n  dataset split gender enrollment trial EER EER-ci_lower EER-ci_upper\n"
          f"0 libri dev f original original 9.8 {cell} 11.8\n")
    p.write_text(ci)
    with pytest.raises(InputFileError, match="EER-ci_lower") as e:
        read_result_for_rank(p)
    assert e.value.line == 3
    p.write_text("---- ASV_eval results ----\n  dataset split gender enrollment trial EER EER\n")
    with pytest.raises(InputFileError, match="'EER' appears twice"):
        read_result_for_rank(p)


def test_cli_shows_a_nan_eer_as_not_defined_and_refuses_inf_in_one_line(tmp_path):
    """`vpc-import` on a table whose EER cell was NaN, -nan, inf or 1e400 crashed ("Out of range float values are
    not JSON compliant") or printed nan."""
    from vpeval.cli.main import app

    table, exp, data = _write_run(tmp_path)
    table.write_text(TABLE.replace("25.000", "NaN"))
    out = tmp_path / "imp"
    r = CliRunner().invoke(app, ["vpc-import", str(table), "--scores", str(exp), "--data", str(data), "-o",
                                 str(out), "--n-boot", "39", "--no-verdict"], env={"COLUMNS": "400"})
    assert r.exit_code == 0, r.output
    assert "not defined" in r.output and not re.search(r"\bnan\b", r.output.lower())
    doc = json.loads((out / "vpc_import.json").read_text())
    assert doc["rows"][2]["EER (%)"] is None
    assert doc["not_defined"] == [{"row": 2, "column": "EER (%)", "line": 21}]
    with open(out / "vpc_import.csv", newline="") as f:
        got = list(csv.DictReader(f))
    assert got[2]["EER (%)"] == "not defined" and got[3]["EER (%)"] == ""  # not defined vs absent (no table row)
    for cell in ("inf", "1e400"):
        table.write_text(TABLE.replace("25.000", cell))
        r = CliRunner().invoke(app, ["vpc-import", str(table), "--scores", str(exp), "--data", str(data), "-o",
                                     str(tmp_path / f"x{cell}"), "--n-boot", "39", "--no-verdict"])
        assert r.exit_code == 2 and r.output.count("\n") == 1 and f"{table}:21: ASV block" in r.output, r.output
        assert not (tmp_path / f"x{cell}").exists()


# ---- issue 48 item 3: too few bootstrap replicates for a 95 % interval

@pytest.mark.parametrize("n", ["1", "19", "38"])
def test_cli_refuses_fewer_replicates_than_a_95_interval_needs(tmp_path, n):
    """`--n-boot 1` printed '95 %' intervals that excluded their own estimate (1-39 replicates give min..max)."""
    from vpeval.cli.main import app

    table, exp, data = _write_run(tmp_path)
    out = tmp_path / "imp"
    r = CliRunner().invoke(app, ["vpc-import", str(table), "--scores", str(exp), "--data", str(data), "-o",
                                 str(out), "--n-boot", n])
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
    assert f"--n-boot = {n} bootstrap replicates cannot give a 95 % interval: it needs at least 39" in r.output
    assert not out.exists()
    from vpeval.stats import StatsError

    with pytest.raises(StatsError, match="at least 39"):
        import_vpc_outputs(table, exp, data, n_boot=int(n))


@pytest.mark.parametrize("level", [0.5, 0.8, 0.9, 0.95, 0.975, 0.99, 0.999])
def test_min_replicates_is_the_fewest_with_a_replicate_in_each_tail(level):
    """R = min_replicates(level) is the smallest R with (R + 1) (1 - level) / 2 >= 1; below it the percentile
    interval of order_statistic is the replicates' [min, max]."""
    from fractions import Fraction

    from vpeval.stats.results import min_replicates, order_statistic

    need = min_replicates(level)
    a = (1 - Fraction(str(level))) / 2
    assert (need + 1) * a >= 1 > need * a
    for r in range(1, need):
        x = np.arange(1.0, r + 1)
        lo, hi = order_statistic(x, [(1 - level) / 2, 1 - (1 - level) / 2])
        assert (lo, hi) == (1.0, float(r))
