"""VoicePrivacy lists end to end: a Kaldi data folder (subset of ../shared/data/librispeech-mini) goes through
``anonymize`` -> ``embed`` -> ``trials`` with an ``enrolls`` list and per-gender ``trials`` files."""

import json
import shutil

import numpy as np
import pytest
from typer.testing import CliRunner

from vpeval.errors import InputFileError
from vpeval.io.embeddings import EmbeddingSet, read_embeddings
from vpeval.io.kaldi_data import VPCTrial, read_kaldi_data_folder, read_vpc_enrolls, read_vpc_trials
from vpeval.io.readers import read_trials_scores
from vpeval.pipeline.vpc import build_vpc_trials
from input_errors import expect_input_error

runner = CliRunner()

# three short utterances of two female and two male test-other speakers (about 40 s of audio in all)
PICK = {"367": ("0000", "0006", "0009"), "533": ("0000", "0006", "0009"),
        "1688": ("0002", "0009", "0005"), "2033": ("0005", "0004", "0007")}
SEX = {"367": "f", "533": "f", "1688": "m", "2033": "m"}


def _data_folder(shared, d):
    src = shared / "data" / "librispeech-mini" / "test-other"
    d.mkdir()
    wav, u2s = [], []
    for spk, nums in PICK.items():
        for k, n in enumerate(nums):
            f = next((src / spk).glob(f"{spk}-*-{n}.flac"))
            if k == 0:  # one file inside the folder, listed by a relative path
                (d / "audio").mkdir(exist_ok=True)
                shutil.copy(f, d / "audio" / f.name)
                wav.append(f"{f.stem} audio/{f.name}")
            else:
                wav.append(f"{f.stem} {f}")
            u2s.append(f"{f.stem} {spk}")
    (d / "wav.scp").write_text("\n".join(sorted(wav)) + "\n")
    (d / "utt2spk").write_text("\n".join(sorted(u2s)) + "\n")
    (d / "spk2gender").write_text("".join(f"{s} {g}\n" for s, g in sorted(SEX.items())))
    return d


def _lists(tmp_path, utts):
    by_spk = {}
    for u in sorted(utts):
        by_spk.setdefault(u.split("-")[0], []).append(u)
    enrolls = [v[0] for v in by_spk.values()]
    (tmp_path / "enrolls").write_text("\n".join(enrolls) + "\n")
    for g in "fm":
        spks = [s for s in by_spk if SEX[s] == g]
        lines = [f"{e} {u} {'target' if u.split('-')[0] == e else 'nontarget'}"
                 for e in spks for s in spks for u in by_spk[s][1:]]
        (tmp_path / f"trials_{g}").write_text("\n".join(lines) + "\n")
    return tmp_path / "enrolls", [tmp_path / "trials_f", tmp_path / "trials_m"]


def test_data_folder_through_anonymize_embed_trials(shared, tmp_path):
    from vpeval.cli.main import app

    data = _data_folder(shared, tmp_path / "data")
    anon = tmp_path / "anon"
    r = runner.invoke(app, ["anonymize", str(data), str(anon), "--alpha", "speaker", "--seed", "1", "-q", "--json"])
    assert r.exit_code == 0, r.output
    # the output is a data folder that the next command takes unchanged
    k = read_kaldi_data_folder(anon)
    assert sorted(k.utt2spk) == sorted(read_kaldi_data_folder(data).utt2spk)
    assert all(p.parent == anon / "wav" for p in k.wav.values())
    assert k.sex == {"1688": "M", "2033": "M", "367": "F", "533": "F"}
    assert (anon / "spk2utt").is_file() and (anon / "anonymization.csv").is_file()
    sysdir = tmp_path / "system"
    emb = sysdir / "embeddings_mfcc.npz"
    for folder, cond, extra in ((data, "original", []), (anon, "anonymized", ["--append"])):
        r = runner.invoke(app, ["embed", str(folder), "-o", str(emb), "-c", cond, "-q",
                                "--metadata-out", str(sysdir / "metadata.csv")] + extra)
        assert r.exit_code == 0, r.output
    es = read_embeddings(emb)
    assert len(es) == 24
    import pandas as pd

    md = pd.read_csv(sysdir / "metadata.csv", dtype=str)
    assert len(md) == 24 and set(md["condition"]) == {"original", "anonymized"}
    assert set(md.loc[md["speaker_id"] == "367", "sex"]) == {"F"}

    enrolls, trial_files = _lists(tmp_path, k.utt2spk)
    out = tmp_path / "trials_out"
    args = ["trials", str(emb), "-o", str(out), "--enroll-list", str(enrolls), "--json"]
    for f in trial_files:
        args += ["--vpc-trials", str(f)]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    assert set(summary["types"]) == {"oo", "oa", "aa"} and summary["one_to_n"] == {}
    # exactly the listed trials: 2 enrollment speakers x 4 test utterances per gender = 16
    listed = [ln.split() for f in trial_files for ln in f.read_text().splitlines()]
    for t in ("oo", "oa", "aa"):
        got = read_trials_scores(out / t / "trials", out / t / "scores")
        assert [[e, u, "target" if y else "nontarget"] for e, u, y in zip(got.enroll, got.test, got.is_target)] \
            == listed
        assert summary["types"][t]["n_trials"] == 16 and summary["types"][t]["n_targets"] == 8
    # scores = cosine of the speaker-level enrollment model and the test embedding
    got = read_trials_scores(out / "oa" / "trials", out / "oa" / "scores")
    e, u = got.enroll[0], got.test[0]
    unit = lambda x: x / np.linalg.norm(x)  # noqa: E731
    enr = [x for x in enrolls.read_text().split() if x.startswith(e + "-")]
    o = es.condition == "original"
    model = unit(sum(unit(es.embeddings[o & (es.utterance_id == x)][0]) for x in enr))
    probe = unit(es.embeddings[(es.condition == "anonymized") & (es.utterance_id == u)][0])
    assert got.scores[0] == pytest.approx(float(model @ probe), abs=1e-12)
    # an unknown id names file and line
    bad = tmp_path / "trials_bad"
    bad.write_text(trial_files[0].read_text() + "367 no-such-utt nontarget\n")
    r = runner.invoke(app, ["trials", str(emb), "-o", str(tmp_path / "x"), "--enroll-list", str(enrolls),
                            "--vpc-trials", str(bad)])
    assert r.exit_code == 2 and f"{bad}:9" in r.output and "no-such-utt" in r.output


def _es():
    emb = np.array([[1.0, 0], [0.6, 0.8], [0, 1.0], [0.8, 0.6]])
    return EmbeddingSet(np.r_[emb, emb[::-1]], ["a1", "a2", "b1", "b2"] * 2, ["A", "A", "B", "B"] * 2,
                        ["original"] * 4 + ["anonymized"] * 4)


def test_hand_scores_and_conditions():
    es = _es()
    tr = [VPCTrial("t", 1, "A", "a2", True), VPCTrial("t", 2, "B", "a2", False), VPCTrial("t", 3, "A", "b2", False)]
    out = build_vpc_trials(es, {"a1": 1, "b1": 2}, tr)
    # oo: model A = (1, 0), model B = (0, 1); a2 = (0.6, 0.8), b2 = (0.8, 0.6)
    np.testing.assert_allclose(out["oo"].scores, [0.6, 0.8, 0.8])
    # anonymized rows are the originals reversed: a1 -> (0.8, 0.6), a2 -> (0, 1), b1 -> (0.6, 0.8), b2 -> (1, 0)
    np.testing.assert_allclose(out["oa"].scores, [0.0, 1.0, 1.0])
    np.testing.assert_allclose(out["aa"].scores, [0.6, 0.8, 0.8])
    assert out["oa"].is_target.tolist() == [True, False, False] and out["oa"].enroll.tolist() == ["A", "B", "A"]


@pytest.mark.parametrize("trial, needle", [
    (VPCTrial("t", 7, "C", "a2", True), "no enrollment utterance"),
    (VPCTrial("t", 7, "A", "zz", True), "no embedding"),
    (VPCTrial("t", 7, "A", "a1", True), "also an enrollment utterance"),
    (VPCTrial("t", 7, "A", "b2", True), "labelled target"),
    (VPCTrial("t", 7, "B", "b2", False), "labelled nontarget"),
])
def test_id_errors_name_file_and_line(trial, needle):
    with pytest.raises(InputFileError, match=needle) as e:
        build_vpc_trials(_es(), {"a1": 1, "b1": 2}, [trial])
    assert "t:7" in str(e.value)


def test_list_readers(tmp_path):
    p = tmp_path / "enrolls"
    p.write_text("a1\nb1\n")
    assert read_vpc_enrolls(p) == {"a1": 1, "b1": 2}
    expect_input_error(read_vpc_enrolls, p, "a1\na1\n", "again")
    with pytest.raises(InputFileError, match="enrolls:1"):
        build_vpc_trials(_es(), {"zz": 1}, [VPCTrial("t", 1, "A", "a2", True)], enrolls_source=str(p))
    t = tmp_path / "trials"
    expect_input_error(read_vpc_trials, t, "A a2 target\nB a2 maybe\n", "trials:2")
    expect_input_error(read_vpc_trials, t, "A a2 target\nA a2 target\n", "trials:2")
    t.write_text("A a2 target\nB a2 nontarget\n")
    assert [(x.line, x.enroll_speaker, x.is_target) for x in read_vpc_trials(t)] == [(1, "A", True), (2, "B", False)]


def _rule_es():
    # the issue's example: enrollment (1, 0) and (0, 3) of speaker A; test (1, 1) of A and (2, -1) of B
    emb = np.array([[1.0, 0], [0, 3], [1, 1], [2, -1]])
    return EmbeddingSet(emb, ["a1", "a2", "a3", "b1"], ["A", "A", "A", "B"], ["original"] * 4)


@pytest.mark.parametrize("rule, expected", [("vpc", [0.894427, -0.141421]), ("normalized", [1.0, 0.316228]),
                                            (None, [0.894427, -0.141421])])
def test_enroll_rule_issue_example(rule, expected):
    tr = [VPCTrial("t", 1, "A", "a3", True), VPCTrial("t", 2, "A", "b1", False)]
    kw = {} if rule is None else {"enroll_rule": rule}
    out = build_vpc_trials(_rule_es(), {"a1": 1, "a2": 2}, tr, types=["oo"], **kw)["oo"]
    np.testing.assert_allclose(out.scores, expected, atol=5e-7)
    # exact values: model (0.5, 1.5) under vpc, (1, 1)/sqrt(2) under normalized
    exact = [2 / np.sqrt(5), -0.5 / np.sqrt(12.5)] if rule != "normalized" else [1.0, 1 / np.sqrt(10)]
    np.testing.assert_allclose(out.scores, exact, rtol=1e-14)
    assert out.meta["enroll_rule"] == (rule or "vpc")


def test_enroll_rule_input_order_and_unknown():
    tr = [VPCTrial("t", 1, "A", "a3", True), VPCTrial("t", 2, "A", "b1", False)]
    es = _rule_es()
    perm = [3, 1, 2, 0]
    es2 = EmbeddingSet(es.embeddings[perm], es.utterance_id[perm], es.speaker_id[perm], es.condition[perm])
    a = build_vpc_trials(es, {"a1": 1, "a2": 2}, tr, types=["oo"])["oo"].scores
    b = build_vpc_trials(es2, {"a2": 1, "a1": 2}, tr, types=["oo"])["oo"].scores
    assert a.tolist() == b.tolist()
    from vpeval.errors import VpevalError

    with pytest.raises(VpevalError, match="enroll rule 'mean'"):
        build_vpc_trials(es, {"a1": 1, "a2": 2}, tr, types=["oo"], enroll_rule="mean")


def test_enroll_rule_cli(tmp_path):
    from vpeval.cli.main import app
    from vpeval.io.embeddings import write_embeddings

    es = _rule_es()
    emb = tmp_path / "e.npz"
    write_embeddings(emb, EmbeddingSet(np.r_[es.embeddings, es.embeddings], list(es.utterance_id) * 2,
                                       list(es.speaker_id) * 2, ["original"] * 4 + ["anonymized"] * 4))
    (tmp_path / "enrolls").write_text("a1\na2\n")
    (tmp_path / "trials_f").write_text("A a3 target\nA b1 nontarget\n")
    for rule, expected in ((None, [0.894427, -0.141421]), ("vpc", [0.894427, -0.141421]),
                           ("normalized", [1.0, 0.316228])):
        out = tmp_path / f"out_{rule}"
        args = ["trials", str(emb), "-o", str(out), "--enroll-list", str(tmp_path / "enrolls"),
                "--vpc-trials", str(tmp_path / "trials_f"), "--json"] + (["--enroll-rule", rule] if rule else [])
        r = runner.invoke(app, args)
        assert r.exit_code == 0, r.output
        summary = json.loads(r.stdout)
        assert summary["enroll_rule"]["name"] == (rule or "vpc")
        got = read_trials_scores(out / "oa" / "trials", out / "oa" / "scores")
        np.testing.assert_allclose(got.scores, expected, atol=5e-7)
    r = runner.invoke(app, ["trials", str(emb), "-o", str(tmp_path / "bad"), "--enroll-rule", "vpc"])
    assert r.exit_code == 2 and "--enroll-rule" in r.output and "--vpc-trials" in r.output


def _lists_for(es, tmp_path, gender_of):
    """enrolls (first utterance of each speaker) and per-gender trials lists (same-gender pairs, as the
    challenge's), written as files; returns their paths and the listed lines."""
    by_spk = {}
    for u, s in sorted(set(zip(es.utterance_id.tolist(), es.speaker_id.tolist()))):
        by_spk.setdefault(s, []).append(u)
    (tmp_path / "enrolls").write_text("".join(v[0] + "\n" for v in by_spk.values()))
    files, listed = [], []
    for g in sorted(set(gender_of.values())):
        spks = [s for s in by_spk if gender_of[s] == g]
        lines = [f"{e} {u} {'target' if e == s else 'nontarget'}" for e in spks for s in spks for u in by_spk[s][1:]]
        (tmp_path / f"trials_{g}").write_text("\n".join(lines) + "\n")
        files.append(tmp_path / f"trials_{g}")
        listed += lines
    return tmp_path / "enrolls", files, listed


def test_backend_scores_exactly_the_listed_pairs():
    from vpeval.backends import get_backend
    from test_attackers import synthetic

    es = synthetic(6, 4, 6, "ext", seed=0)
    tr = synthetic(30, 4, 6, "ext", seed=10, start=100)
    o = tr.condition == "original"
    be = get_backend("plda").fit(tr.embeddings[o], tr.speaker_id[o])
    enrolls = {f"u{i:03d}-00": i + 1 for i in range(6)}
    trials = [VPCTrial("t", k + 1, f"S{i:03d}", f"u{j:03d}-{m:02d}", i == j)
              for k, (i, j, m) in enumerate((i, j, m) for i in range(6) for j in range(6) for m in (1, 2, 3))]
    for rule in ("vpc", "normalized"):
        out = build_vpc_trials(es, enrolls, trials, ["oa"], backend=be, enroll_rule=rule)["oa"]
        cos = build_vpc_trials(es, enrolls, trials, ["oa"], enroll_rule=rule)["oa"]
        assert out.meta["backend"] == "plda" and len(out) == len(trials) == 108
        o_rows = {u: x for u, c, x in zip(es.utterance_id, es.condition, es.embeddings) if c == "original"}
        a_rows = {u: x for u, c, x in zip(es.utterance_id, es.condition, es.embeddings) if c == "anonymized"}
        for k in (0, 7, 50, 107):  # each score is the back-end's score of that one pair
            t = trials[k]
            x = o_rows[f"u{t.enroll_speaker[1:]}-00"][None]
            model = x if rule == "vpc" else x / np.linalg.norm(x)
            want = be.score(model, a_rows[t.test_utterance][None])[0, 0]
            assert out.scores[k] == pytest.approx(want, rel=1e-9, abs=1e-12)
        assert not np.allclose(out.scores, cos.scores)


def test_attack_on_the_official_lists_keeps_their_trial_counts(tmp_path):
    """Issue 26 'done when': a trained attacker on the enrolls + per-gender trials lists gives exactly the lists'
    trials (counts per gender), not a split of its own."""
    from vpeval.cli.main import app
    from vpeval.io.embeddings import write_embeddings
    from test_attackers import synthetic

    ev, tr = synthetic(6, 4, 6, "ext", seed=0), synthetic(30, 4, 6, "ext", seed=10, start=100)
    write_embeddings(tmp_path / "ev.npz", ev)
    write_embeddings(tmp_path / "tr.npz", tr)
    gender_of = {f"S{i:03d}": "f" if i < 3 else "m" for i in range(6)}
    enrolls, files, listed = _lists_for(ev, tmp_path, gender_of)
    out = tmp_path / "att"
    args = ["attack", str(tmp_path / "ev.npz"), "--train", str(tmp_path / "tr.npz"), "--backend", "plda",
            "--trained-on", "anonymized", "-o", str(out), "--enroll-list", str(enrolls), "--json"]
    for f in files:
        args += ["--vpc-trials", str(f)]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    assert set(summary["types"]) == {"oo", "oa", "aa"} and summary["enroll_rule"]["name"] == "vpc"
    assert summary["attacker"]["name"] == "ext/plda/anonymized"
    for t in ("oo", "oa", "aa"):
        got = read_trials_scores(out / t / "trials", out / t / "scores")
        assert [f"{e} {u} {'target' if y else 'nontarget'}" for e, u, y in zip(got.enroll, got.test, got.is_target)] \
            == listed
        for g in "fm":
            n = [ln for ln in listed if gender_of[ln.split()[0]] == g]
            assert sum(gender_of[e] == g for e in got.enroll) == len(n) == 3 * 3 * 3
            assert sum(gender_of[e] == g and y for e, y in zip(got.enroll, got.is_target)) == 9
