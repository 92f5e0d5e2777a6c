"""1-to-N score matrix readers and the vpeval linkage command."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from vpeval.errors import InputFileError
from vpeval.io.matrix import ScoreMatrix, read_kaldi_score_matrix, read_score_matrix, score_matrix_from_table
from input_errors import expect_input_error

SPK = ["s1", "s2", "s3"]


def long_table(n_probes=4, seed=0, spk=SPK, gap=2.0):
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(n_probes):
        true = spk[u % len(spk)]
        for e in spk:
            rows.append((e, true, f"utt{u}", float(np.round(rng.normal() + (gap if e == true else 0.0), 6))))
    return pd.DataFrame(rows, columns=["enroll_spk", "trial_spk", "trial_id", "score"])


def write_csv(df, path):
    df.to_csv(path, index=False)
    return path


def test_roundtrip_csv_and_parquet_order_independent(tmp_path):
    df = long_table()
    a = read_score_matrix(write_csv(df, tmp_path / "a.csv"))
    shuffled = df.sample(frac=1.0, random_state=3)
    b = read_score_matrix(write_csv(shuffled, tmp_path / "b.csv"))
    shuffled.to_parquet(tmp_path / "c.parquet")
    c = read_score_matrix(tmp_path / "c.parquet")
    for m in (b, c):
        assert np.array_equal(m.scores, a.scores)
        assert m.probe_id.tolist() == a.probe_id.tolist() and m.true_index.tolist() == a.true_index.tolist()
    assert a.speaker_ids.tolist() == SPK
    assert a.probe_id.tolist() == ["utt0", "utt1", "utt2", "utt3"]
    assert a.true_index.tolist() == [0, 1, 2, 0]
    # entry check against the table
    row = df[(df.trial_id == "utt2") & (df.enroll_spk == "s1")].score.item()
    assert a.scores[2, 0] == row
    assert a.n_dropped == 0 and a.n_probes == 4 and a.n_speakers == 3


def test_pure_builder_from_arrays():
    df = long_table()
    m = score_matrix_from_table({c: df[c].to_numpy() for c in df.columns})
    assert m.scores.shape == (4, 3)
    direct = ScoreMatrix(m.scores, m.probe_id, m.probe_speaker, m.speaker_ids)
    assert direct.true_index.tolist() == m.true_index.tolist()


def test_missing_pairs_listed_with_count(tmp_path):
    df = long_table().drop(index=[1, 7])  # (utt0, s2) and (utt2, s2)
    p = write_csv(df, tmp_path / "m.csv")
    with pytest.raises(InputFileError) as ei:
        read_score_matrix(p)
    msg = str(ei.value)
    assert msg.startswith(str(p)) and "2 (probe, enrolled speaker) pair(s) have no score" in msg
    assert "'utt0' vs 's2'" in msg and "'utt2' vs 's2'" in msg


def test_duplicate_pair_names_both_lines(tmp_path):
    df = long_table()
    df = pd.concat([df, df.iloc[[4]]], ignore_index=True)
    p = write_csv(df, tmp_path / "d.csv")
    with pytest.raises(InputFileError, match=r"d\.csv:14: duplicate pair: speaker 's2' vs probe 'utt1' .*line 6"):
        read_score_matrix(p)


def test_nan_and_bad_scores_name_the_line(tmp_path):
    df = long_table().astype({"score": object})
    df.loc[5, "score"] = "NaN"
    with pytest.raises(InputFileError, match=r"n\.csv:7: score 'NaN' is not a number"):
        read_score_matrix(write_csv(df, tmp_path / "n.csv"))
    df.loc[5, "score"] = "abc"
    with pytest.raises(InputFileError, match=r"x\.csv:7: score 'abc'"):
        read_score_matrix(write_csv(df, tmp_path / "x.csv"))
    df.loc[5, "score"] = ""
    with pytest.raises(InputFileError, match=r"e\.csv:7: empty score"):
        read_score_matrix(write_csv(df, tmp_path / "e.csv"))


def test_inf_scores_are_kept(tmp_path):
    df = long_table().astype({"score": object})
    df.loc[0, "score"] = "inf"
    m = read_score_matrix(write_csv(df, tmp_path / "i.csv"))
    assert m.scores[0, 0] == np.inf


def test_unenrolled_probe_error_or_drop(tmp_path):
    df = long_table()
    extra = pd.DataFrame([(e, "s9", "uttX", 0.1) for e in SPK], columns=df.columns)
    p = write_csv(pd.concat([df, extra]), tmp_path / "u.csv")
    msg = r"1 probe\(s\) have a speaker who is not enrolled.*'uttX' \(speaker 's9', line 14\).*drop_unenrolled"
    with pytest.raises(InputFileError, match=msg):
        read_score_matrix(p)
    m = read_score_matrix(p, drop_unenrolled=True)
    assert m.n_dropped == 1 and m.n_probes == 4 and "uttX" not in m.probe_id.tolist()


def test_inconsistent_trial_speaker(tmp_path):
    df = long_table()
    df.loc[2, "trial_spk"] = "s2"  # utt0 says s1 on lines 2-3, s2 on line 4
    with pytest.raises(InputFileError, match=r"t\.csv:4: probe 'utt0' has trial_spk 's2' here but 's1' at line 2"):
        read_score_matrix(write_csv(df, tmp_path / "t.csv"))


def test_header_and_empty_errors(tmp_path):
    p = tmp_path / "h.csv"
    expect_input_error(read_score_matrix, p, "enroll,trial_spk,trial_id,score\na,a,u,0.1\n",
                       r"h\.csv:1: header lacks column\(s\) \['enroll_spk'\]")
    expect_input_error(read_score_matrix, p, "", "empty file")
    expect_input_error(read_score_matrix, p, "enroll_spk,trial_spk,trial_id,score\n", "no score rows")
    with pytest.raises(InputFileError, match="does not exist"):
        read_score_matrix(tmp_path / "nope.csv")
    df = long_table()
    df.loc[3, "trial_id"] = " "
    with pytest.raises(InputFileError, match=r"sp\.csv:5: empty trial_id"):
        read_score_matrix(write_csv(df, tmp_path / "sp.csv"))


def test_parquet_errors_use_rows(tmp_path):
    df = long_table()
    df.loc[3, "score"] = np.nan
    df.to_parquet(tmp_path / "p.parquet")
    with pytest.raises(InputFileError, match=r"p\.parquet: row 4: score"):
        read_score_matrix(tmp_path / "p.parquet")


def test_scorematrix_validation():
    with pytest.raises(InputFileError, match="not enrolled"):
        ScoreMatrix([[0.1, 0.2]], ["u"], ["x"], ["a", "b"])
    with pytest.raises(InputFileError, match="appears"):
        ScoreMatrix([[0.1, 0.2]], ["u"], ["a"], ["a", "a"])
    with pytest.raises(InputFileError, match="NaN"):
        ScoreMatrix([[0.1, np.nan]], ["u"], ["a"], ["a", "b"])
    with pytest.raises(InputFileError, match="shape"):
        ScoreMatrix([[0.1, 0.2]], ["u", "v"], ["a"], ["a", "b"])


# ---------------------------------------------------------------------------------------------- Kaldi


def write_kaldi(df, tmp_path, drop_target_of=None):
    key = tmp_path / "key"
    sc = tmp_path / "scores"
    key_lines, score_lines = [], []
    for r in df.itertuples():
        lab = "target" if r.enroll_spk == r.trial_spk and r.trial_id != drop_target_of else "nontarget"
        key_lines.append(f"{r.enroll_spk} {r.trial_id} {lab}")
        score_lines.append(f"{r.enroll_spk} {r.trial_id} {r.score!r}")
    key.write_text("\n".join(key_lines) + "\n")
    sc.write_text("\n".join(reversed(score_lines)) + "\n")
    return key, sc


def test_kaldi_equals_table(tmp_path):
    df = long_table()
    a = score_matrix_from_table(df)
    b = read_kaldi_score_matrix(*write_kaldi(df, tmp_path))
    assert np.array_equal(a.scores, b.scores) and a.true_index.tolist() == b.true_index.tolist()


def test_kaldi_errors(tmp_path):
    df = long_table()
    key, sc = write_kaldi(df, tmp_path, drop_target_of="utt1")
    with pytest.raises(InputFileError, match="'utt1' \\(speaker '<no target pair in the key>'"):
        read_kaldi_score_matrix(key, sc)
    m = read_kaldi_score_matrix(key, sc, drop_unenrolled=True)
    assert m.n_dropped == 1
    key, sc = write_kaldi(df, tmp_path)
    lines = sc.read_text().splitlines()
    sc.write_text("\n".join(lines[1:]) + "\n")
    with pytest.raises(InputFileError, match="pair has no score"):
        read_kaldi_score_matrix(key, sc)
    sc.write_text("\n".join(lines + ["s1 utt9 0.3"]) + "\n")
    with pytest.raises(InputFileError, match=r"scores:13: pair not in the key"):
        read_kaldi_score_matrix(key, sc)
    sc.write_text("\n".join(lines[:2] + ["s1 utt0 zero"] + lines[3:]) + "\n")
    with pytest.raises(InputFileError, match=r"scores:3: score 'zero' is not a number"):
        read_kaldi_score_matrix(key, sc)
    key.write_text(key.read_text().replace("s2 utt0 nontarget", "s2 utt0 target"))
    sc.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputFileError, match="marked target for two enrolled speakers"):
        read_kaldi_score_matrix(key, sc)
    key.write_text(key.read_text().replace("s2 utt0 target", "s2 utt0 Target"))
    with pytest.raises(InputFileError, match=r"key:2: label 'Target'"):
        read_kaldi_score_matrix(key, sc)


# ---------------------------------------------------------------------------------------------- CLI


@pytest.fixture
def app():
    typer = pytest.importorskip("typer")
    from vpeval.cli.linkage import register

    a = typer.Typer()
    register(a)

    @a.command("other")
    def other():  # a second command so that typer keeps the subcommand name
        pass

    return a


def test_cli_json_and_table(app, tmp_path):
    from typer.testing import CliRunner

    df = long_table(n_probes=60, seed=1, spk=[f"s{i}" for i in range(12)], gap=1.0)
    p = write_csv(df, tmp_path / "t.csv")
    runner = CliRunner()
    r = runner.invoke(app, ["linkage", str(p), "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["lid"]["mode"] == "cross-fit" and "cross-fitting" in d["lid"]["calibration"]
    assert d["input"]["n_speakers"] == 12 and d["identification"]["chance"]["rank1"] == pytest.approx(1 / 12)
    assert len(d["closed_set_linkability"]["linkability"]) == 12
    assert d["lid"]["strict_znorm"] is False
    r = runner.invoke(app, ["linkage", str(p), "--json", "--strict-znorm"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["lid"]["strict_znorm"] is True
    dev = write_csv(long_table(n_probes=60, seed=2, spk=[f"s{i}" for i in range(12)], gap=1.0), tmp_path / "d.csv")
    r = runner.invoke(app, ["linkage", str(p), "--dev", str(dev)])
    assert r.exit_code == 0, r.output
    assert "ALID" in r.output and "development matrix" in r.output and "rank k" in r.output


def test_cli_errors_exit_2(app, tmp_path):
    from typer.testing import CliRunner

    df = long_table().drop(index=[1])
    p = write_csv(df, tmp_path / "bad.csv")
    r = CliRunner().invoke(app, ["linkage", str(p)])
    assert r.exit_code == 2 and "have no score" in r.output and "Traceback" not in r.output
    sep = write_csv(long_table(n_probes=30, gap=50.0), tmp_path / "sep.csv")
    r = CliRunner().invoke(app, ["linkage", str(sep)])
    assert r.exit_code == 2 and "separable" in r.output
    r = CliRunner().invoke(app, ["linkage", str(sep), "--separable", "regularize", "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["lid"]["regularization"] == 1e-3


def test_cli_linkage_dev_given_the_evaluation_table_is_refused(app, tmp_path):
    # issue 28: `linkage --dev` with the evaluation table itself was accepted silently (an in-sample LID)
    from typer.testing import CliRunner

    df = long_table(n_probes=60, seed=1, spk=[f"s{i}" for i in range(12)], gap=1.0)
    p = write_csv(df, tmp_path / "t.csv")
    runner = CliRunner()
    r = runner.invoke(app, ["linkage", str(p), "--dev", str(p)])
    assert r.exit_code == 2 and "holds evaluation probes" in r.output and "Traceback" not in r.output
    # the same probes renamed are found by their scores
    renamed = df.assign(trial_id="dev-" + df["trial_id"])
    q = write_csv(renamed.iloc[: 12 * 30], tmp_path / "renamed.csv")
    r = runner.invoke(app, ["linkage", str(p), "--dev", str(q)])
    assert r.exit_code == 2 and "30 of its 30 probes have exactly the scores" in r.output
    # other probes that happen to share ids: accepted, with a warning
    other = write_csv(long_table(n_probes=60, seed=2, spk=[f"s{i}" for i in range(12)], gap=1.0), tmp_path / "d.csv")
    from vpeval.errors import DegenerateInputWarning

    with pytest.warns(DegenerateInputWarning, match=r"shares 60 probe id\(s\)"):
        r = runner.invoke(app, ["linkage", str(p), "--dev", str(other), "--no-verdict"])
    assert r.exit_code == 0, r.output
