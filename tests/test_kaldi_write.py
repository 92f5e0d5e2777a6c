"""Tests of the Kaldi trials/scores writers and the 1-to-N long table writer."""

from __future__ import annotations

import math
import os
import struct
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpeval.errors import InvalidScoresError, VpevalError
from vpeval.io.kaldi_write import format_score, write_kaldi_scores, write_kaldi_trials, write_score_table
from vpeval.io.trials import Trials

AWKWARD = [0.1, -0.7071067811865476, 1e-300, -5e-324, 1.7976931348623157e308, 0.0, -0.0, 1 / 3, 2.0 ** 60,
           float("inf"), float("-inf")]


def _trials(scores, labels=None, enroll=None, test=None):
    n = len(scores)
    labels = [i % 2 == 0 for i in range(n)] if labels is None else labels
    enroll = [f"spk{i % 3}" for i in range(n)] if enroll is None else enroll
    test = [f"utt-{i:03d}" for i in range(n)] if test is None else test
    return Trials(np.array(scores, dtype=float), labels, enroll, test, "unit")


def _parse(path):
    return [line.split(" ") for line in Path(path).read_text(encoding="utf-8").split("\n")[:-1]]


def _bits(x):
    return struct.pack("<d", x)


def test_trials_and_scores_round_trip(tmp_path):
    t = _trials(AWKWARD)
    write_kaldi_trials(tmp_path / "trials", t)
    write_kaldi_scores(tmp_path / "scores", t)
    key, sc = _parse(tmp_path / "trials"), _parse(tmp_path / "scores")
    assert [r[:2] for r in key] == [r[:2] for r in sc] == [[e, x] for e, x in zip(t.enroll, t.test)]
    assert [r[2] for r in key] == ["target" if b else "nontarget" for b in t.is_target]
    assert [_bits(float(r[2])) for r in sc] == [_bits(x) for x in AWKWARD]  # bit-exact, -0.0 included
    # pandas reads the same files
    df = pd.read_csv(tmp_path / "trials", sep=" ", header=None, names=["enroll", "test", "label"])
    assert df.label.tolist() == [r[2] for r in key]
    assert (tmp_path / "trials").read_bytes().endswith(b"target\n")


def test_known_file_contents(tmp_path):
    t = Trials(np.array([0.5, -1e-5]), [True, False], ["A", "B"], ["u1", "u2"])
    write_kaldi_trials(tmp_path / "k", t)
    write_kaldi_scores(tmp_path / "s", t)
    assert (tmp_path / "k").read_text() == "A u1 target\nB u2 nontarget\n"
    assert (tmp_path / "s").read_text() == "A u1 0.5\nB u2 -1e-05\n"


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False))
def test_format_score_is_exact(x):
    s = format_score(x)
    assert _bits(float(s)) == _bits(x)
    assert " " not in s


def test_format_score_accepts_numpy_and_refuses_nan():
    assert format_score(np.float64(0.25)) == "0.25"
    assert format_score(np.float32(0.1)) == repr(float(np.float32(0.1)))
    with pytest.raises(InvalidScoresError):
        format_score(math.nan)


def test_empty_trials_write_empty_files(tmp_path):
    t = Trials(np.array([]), np.array([], bool), np.array([], str), np.array([], str))
    write_kaldi_trials(tmp_path / "k", t)
    assert (tmp_path / "k").read_text() == ""


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(enroll=["a b", "c"]), "white space"),
        (dict(test=["x\ty", "z"]), "white space"),
        (dict(enroll=["", "c"]), "empty"),
        (dict(enroll=["a", "a"], test=["u", "u"]), r"\('a', 'u'\) appears more than once"),
    ],
)
def test_bad_keys(tmp_path, kwargs, match):
    t = _trials([0.1, 0.2], **kwargs)
    for writer in (write_kaldi_trials, write_kaldi_scores):
        with pytest.raises(VpevalError, match=match):
            writer(tmp_path / "f", t)
    assert not (tmp_path / "f").exists()


def test_missing_keys_and_folder(tmp_path):
    with pytest.raises(VpevalError, match="no enroll/test keys"):
        write_kaldi_trials(tmp_path / "f", Trials(np.array([1.0]), [True]))
    with pytest.raises(VpevalError, match="does not exist"):
        write_kaldi_trials(tmp_path / "nope" / "f", _trials([1.0]))


def test_nan_refused_and_previous_file_kept(tmp_path):
    good = _trials([0.1, 0.2])
    write_kaldi_scores(tmp_path / "s", good)
    before = (tmp_path / "s").read_bytes()
    # a Trials object cannot even hold a NaN score
    with pytest.raises(InvalidScoresError, match="NaN"):
        write_kaldi_scores(tmp_path / "s", _trials([0.3, math.nan]))
    assert (tmp_path / "s").read_bytes() == before
    assert os.listdir(tmp_path) == ["s"]  # no temporary file left


def test_failure_during_write_leaves_target_untouched(tmp_path, monkeypatch):
    from vpeval.io import kaldi_write

    (tmp_path / "t").write_text("old\n")

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(kaldi_write.os, "replace", boom)
    with pytest.raises(OSError):
        write_kaldi_trials(tmp_path / "t", _trials([0.1]))
    assert (tmp_path / "t").read_text() == "old\n"
    assert os.listdir(tmp_path) == ["t"]


# ----------------------------------------------------------------------------- long table


def _table():
    return pd.DataFrame(
        {
            "enroll_spk": ["A", "B", "A", "B"],
            "trial_spk": ["A", "A", "B,x", "B,x"],
            "trial_id": ["u1", "u1", 'u"2', 'u"2'],
            "score": [0.1, -1 / 3, 1e-300, float("inf")],
        }
    )


def test_table_csv_round_trip_with_quoting(tmp_path):
    df = _table()
    write_score_table(tmp_path / "t.csv", df)
    back = pd.read_csv(tmp_path / "t.csv", dtype=str, keep_default_na=False)
    assert list(back.columns) == ["enroll_spk", "trial_spk", "trial_id", "score"]
    for c in ("enroll_spk", "trial_spk", "trial_id"):
        assert back[c].tolist() == df[c].tolist()
    assert [_bits(float(x)) for x in back.score] == [_bits(x) for x in df.score]
    assert (tmp_path / "t.csv").read_text().splitlines()[1] == "A,A,u1,0.1"


def test_table_parquet_round_trip(tmp_path):
    df = _table()
    write_score_table(tmp_path / "t.parquet", df)
    back = pd.read_parquet(tmp_path / "t.parquet")
    assert back["score"].dtype == np.float64
    assert back["score"].tolist() == df["score"].tolist()
    assert back["trial_id"].tolist() == df["trial_id"].tolist()


def test_table_from_one_to_n_is_complete(tmp_path):
    from vpeval.io.embeddings import EmbeddingSet
    from vpeval.pipeline import one_to_n

    rng = np.random.default_rng(3)
    utt = [f"s{i}-{j}" for i in range(4) for j in range(3)] + ["c0-0", "c1-0"]
    spk = [u.split("-")[0] for u in utt]
    n = len(utt)
    es = EmbeddingSet(rng.normal(size=(2 * n, 5)), utt * 2, spk * 2, ["original"] * n + ["anonymized"] * n)
    m = one_to_n(es)
    write_score_table(tmp_path / "t.csv", m)
    back = pd.read_csv(tmp_path / "t.csv", dtype=str)
    assert len(back) == m.n_probes * m.n_enrolled == 4 * 1 * 6
    pairs = set(zip(back.trial_id, back.enroll_spk))
    assert pairs == {(p, s) for p in m.probe_id.tolist() for s in m.enrolled_speaker.tolist()}
    assert (back.trial_spk == back.trial_id.str.split("-").str[0]).all()
    got = {(p, s): float(x) for p, s, x in zip(back.trial_id, back.enroll_spk, back.score)}
    for i, p in enumerate(m.probe_id):
        for j, s in enumerate(m.enrolled_speaker):
            assert got[(p, s)] == m.scores[i, j]


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda d: d.assign(extra=1), "columns"),
        (lambda d: d[["trial_id", "enroll_spk", "trial_spk", "score"]], "columns"),
        (lambda d: d.assign(score=[0.1, math.nan, 0.2, 0.3]), "row 1 has a NaN"),
        (lambda d: d.assign(trial_id=["", "a", "b", "c"]), "row 0: empty trial_id"),
    ],
)
def test_table_errors(tmp_path, mutate, match):
    with pytest.raises(VpevalError, match=match):
        write_score_table(tmp_path / "t.csv", mutate(_table()))
    assert not (tmp_path / "t.csv").exists()


def test_table_unknown_suffix(tmp_path):
    with pytest.raises(VpevalError, match="unknown table format '.tsv'"):
        write_score_table(tmp_path / "t.tsv", _table())
