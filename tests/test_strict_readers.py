"""Strict input everywhere (issue 12, reader items): duplicate columns, non-numeric Parquet scores, integers
beyond 2**53, non-UTF-8 and infinite scores in 1-to-N tables, lid's matrix and chunk_rows, verify's options.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vpeval
from vpeval.errors import InputFileError, InvalidScoresError
from vpeval.io.matrix import read_kaldi_score_matrix, read_score_matrix, score_matrix_from_table
from vpeval.io.readers import read_columns



def long_table(n_probes=4, seed=0, spk=("s1", "s2", "s3")):
    rng = np.random.default_rng(seed)
    rows = [(e, spk[u % len(spk)], f"utt{u}", float(np.round(rng.normal() + 2.0 * (e == spk[u % len(spk)]), 6)))
            for u in range(n_probes) for e in spk]
    return pd.DataFrame(rows, columns=["enroll_spk", "trial_spk", "trial_id", "score"])


def write_csv(df, path):
    df.to_csv(path, index=False)
    return path


def test_duplicate_column_in_1_to_n_csv_is_refused(tmp_path):
    p = tmp_path / "d.csv"
    p.write_text("enroll_spk,trial_spk,trial_id,score,score\ns1,s1,u1,1,0\ns2,s1,u1,0.5,0\n")
    with pytest.raises(InputFileError, match=r"d\.csv:1: column 'score' appears more than once"):
        read_score_matrix(p)


def test_duplicate_column_in_parquet_and_tables_is_refused(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    t = pa.table([pa.array(["a", "b"]), pa.array(["a", "a"]), pa.array(["u", "u"]), pa.array([1.0, 0.0]),
                  pa.array([0.0, 0.0])], names=["enroll_spk", "trial_spk", "trial_id", "score", "score"])
    p = tmp_path / "d.parquet"
    pq.write_table(t, p)
    with pytest.raises(InputFileError, match=r"d\.parquet: column 'score' appears more than once"):
        read_score_matrix(p)
    with pytest.raises(InputFileError, match="column 'score' appears more than once"):
        read_columns(p, label_col="trial_spk", score_col="score", target="a", nontarget="b")
    df = pd.DataFrame([["a", "a", "u", 1.0, 0.0]], columns=["enroll_spk", "trial_spk", "trial_id", "score", "score"])
    with pytest.raises(InputFileError, match="appears more than once"):
        score_matrix_from_table(df)


def test_duplicate_header_in_text_columns_is_refused(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("label,score,score\ntarget,1.0,0\nnontarget,0.5,0\n")
    with pytest.raises(InputFileError, match=r"t\.csv:1: column 'score' appears more than once"):
        read_columns(p, label_col="label", score_col="score", target="target", nontarget="nontarget", sep=",")


@pytest.mark.parametrize("values", [["1e999", "0.5"], [b"1.0", b"0.5"]])
def test_parquet_text_scores_are_refused(tmp_path, values):
    pytest.importorskip("pyarrow")
    df = pd.DataFrame({"label": ["target", "nontarget"], "score": values})
    p = tmp_path / "s.parquet"
    df.to_parquet(p)
    with pytest.raises(InputFileError, match="scores must have a numeric type"):
        read_columns(p, label_col="label", score_col="score", target="target", nontarget="nontarget")
    m = long_table().astype({"score": str})
    q = tmp_path / "m.parquet"
    m.to_parquet(q)
    with pytest.raises(InputFileError, match="scores must have a numeric type"):
        read_score_matrix(q)


def test_integers_beyond_2_53_are_refused_not_rounded(tmp_path):
    big = 2 ** 62
    tar = np.array([big, big + 2], dtype=np.int64)
    non = np.array([big + 1, big + 3], dtype=np.int64)
    with pytest.raises(InvalidScoresError, match=r"beyond 2\*\*53"):
        vpeval.rocch_eer(tar, non)
    with pytest.raises(InvalidScoresError, match=r"beyond 2\*\*53"):
        vpeval.rocch_eer(tar.astype(np.uint64), non.astype(np.uint64))
    # exactly representable integers still work
    assert vpeval.rocch_eer(np.array([3, 4]), np.array([1, 2])) == 0.0
    df = pd.DataFrame({"label": ["target", "target", "nontarget", "nontarget"], "score": np.r_[tar, non]})
    p = tmp_path / "big.parquet"
    df.to_parquet(p)
    with pytest.raises(InputFileError, match=r"big\.parquet: row 1: score .* beyond 2\*\*53"):
        read_columns(p, label_col="label", score_col="score", target="target", nontarget="nontarget")
    m = long_table()
    m["score"] = np.arange(len(m), dtype=np.int64) + big
    with pytest.raises(InputFileError, match=r"beyond 2\*\*53"):
        score_matrix_from_table(m)


@pytest.mark.parametrize("many", [False, True])
def test_text_integers_beyond_2_53_are_refused_not_rounded(tmp_path, many):
    # issue 28: read as float64 these four read EER 33.3 % instead of 25 %
    from vpeval.io.readers import read_score_label, read_trials_scores

    rows = [("9007199254740993", "1"), ("9007199254740992", "0"), ("9007199254740994", "0"),
            ("9007199254740995", "1")]
    pad = [(f"{0.001 * i:.3f}", str(i % 2)) for i in range(20000)] if many else []  # the bulk (Arrow) path too
    p = tmp_path / "s.txt"
    p.write_text("".join(f"{s} {lab}\n" for s, lab in pad + rows))
    with pytest.raises(InputFileError, match=rf"s\.txt:{len(pad) + 1}: score '9007199254740993' is an integer "
                                             r"beyond 2\*\*53"):
        read_score_label(p)
    q = tmp_path / "cols.txt"
    q.write_text("label score\n" + "".join(f"{'t' if lab == '1' else 'n'} {s}\n" for s, lab in pad + rows))
    with pytest.raises(InputFileError, match=r"beyond 2\*\*53"):
        read_columns(q, label_col="label", score_col="score", target="t", nontarget="n")
    key, sc = tmp_path / "trials", tmp_path / "scores"
    key.write_text("".join(f"e{i} u{i} {'target' if lab == '1' else 'nontarget'}\n"
                           for i, (s, lab) in enumerate(pad + rows)))
    sc.write_text("".join(f"e{i} u{i} {s}\n" for i, (s, lab) in enumerate(pad + rows)))
    with pytest.raises(InputFileError, match=rf"scores:{len(pad) + 1}: .*beyond 2\*\*53"):
        read_trials_scores(key, sc)
    # exactly representable: 2**53 itself, decimals and exponents (which are rounded like any decimal) pass
    p.write_text("9007199254740992 1\n-9007199254740992 0\n1e300 1\n9007199254740993.0 0\n")
    t = read_score_label(p)
    assert t.tar.tolist() == [2.0 ** 53, 1e300]


def test_kaldi_matrix_text_integers_beyond_2_53_are_refused(tmp_path):
    key, sc = tmp_path / "trials", tmp_path / "scores"
    key.write_text("A u1 target\nB u1 nontarget\nA u2 nontarget\nB u2 target\n")
    sc.write_text("A u1 1\nB u1 9007199254740993\nA u2 0\nB u2 1\n")
    with pytest.raises(InputFileError, match=r"scores:2: score '9007199254740993' is an integer beyond 2\*\*53"):
        read_kaldi_score_matrix(key, sc)
    csv = tmp_path / "m.csv"
    csv.write_text("enroll_spk,trial_spk,trial_id,score\nA,A,u1,1\nB,A,u1,-9007199254740993\nA,B,u2,0\nB,B,u2,1\n")
    with pytest.raises(InputFileError, match=r"m\.csv:3: score '-9007199254740993' is an integer beyond 2\*\*53"):
        read_score_matrix(csv)


def test_long_double_that_is_not_a_float64_is_refused():
    if np.finfo(np.longdouble).nmant <= 52:
        pytest.skip("long double is float64 on this platform")
    x = np.array([1, 2], dtype=np.longdouble) + np.longdouble(2) ** -60
    with pytest.raises(InvalidScoresError, match="not exactly a float64"):
        vpeval.rocch_eer(x, np.array([0.0, 0.5]))


def test_non_utf8_1_to_n_tables_name_file_and_line(tmp_path):
    p = tmp_path / "nu.csv"
    p.write_bytes(b"enroll_spk,trial_spk,trial_id,score\ns1,s1,u1,1\ns2,s1,u\xff1,0.1\n")
    with pytest.raises(InputFileError, match=r"nu\.csv:3: not UTF-8 text"):
        read_score_matrix(p)
    k, s = tmp_path / "key", tmp_path / "scores"
    k.write_bytes(b"s1 u1 target\ns2 u1 nontarget\n")
    s.write_bytes(b"s1 u1 1.0\ns2 u\xe91 0.5\n")
    with pytest.raises(InputFileError, match=r"scores:2: not UTF-8 text"):
        read_kaldi_score_matrix(k, s)


def test_infinite_score_in_1_to_n_table_names_file_and_line(tmp_path):
    from typer.testing import CliRunner

    from vpeval.cli.main import app

    df = long_table(n_probes=9).astype({"score": object})
    df.loc[7, "score"] = "inf"
    p = write_csv(df, tmp_path / "i.csv")
    r = CliRunner().invoke(app, ["linkage", str(p), "--json"])
    assert r.exit_code == 2
    assert "i.csv:9:" in r.output and "finite" in r.output
    k, s = tmp_path / "key", tmp_path / "scores"
    k.write_text("".join(f"{e} {u} {'target' if e == t else 'nontarget'}\n"
                         for e, t, u, _ in long_table(n_probes=9).itertuples(index=False)))
    s.write_text("".join(f"{e} {u} {'-inf' if i == 4 else v}\n"
                         for i, (e, t, u, v) in enumerate(long_table(n_probes=9).itertuples(index=False))))
    r = CliRunner().invoke(app, ["linkage", str(s), "--key", str(k), "--json"])
    assert r.exit_code == 2 and "scores:5:" in r.output


def test_lid_refuses_bool_matrix_and_fractional_chunk_rows():
    m = np.array([[1.0, 0.0], [0.2, 0.9]])
    ti = np.array([0, 1])
    with pytest.raises(InvalidScoresError, match="dtype bool"):
        vpeval.lid(m > 0.5, ti)
    for bad in (1.5, 2.0, True):
        with pytest.raises(InvalidScoresError, match="chunk_rows must be a whole number"):
            vpeval.lid(m, ti, chunk_rows=bad)
    assert vpeval.lid(m, ti, chunk_rows=np.int64(1)) is not None


def test_verify_refuses_column_options_with_key(tmp_path):
    from typer.testing import CliRunner

    from vpeval.cli.main import app

    k, s = tmp_path / "key", tmp_path / "scores"
    k.write_text("a x target\nb x nontarget\n")
    s.write_text("a x 1.0\nb x 0.5\n")
    ok = CliRunner().invoke(app, ["verify", str(s), "--key", str(k), "--json"])
    assert ok.exit_code == 0
    for extra in (["--label-col", "2"], ["--score-col", "2"], ["--sep", ","]):
        r = CliRunner().invoke(app, ["verify", str(s), "--key", str(k), "--json", *extra])
        assert r.exit_code == 2 and "do not apply" in r.output


TOKENS = st.one_of(st.floats(allow_nan=False).map(repr), st.sampled_from(["inf", "nan", "x", "", "1e999", "１"]),
                   st.text(max_size=3))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.sampled_from(["s1", "s2", "s3", "s1", "s2", "", " s1"]), st.sampled_from(["s1", "s2"]),
                               st.sampled_from(["u1", "u2", "u3"]), TOKENS), min_size=1, max_size=10),
       header=st.sampled_from(["enroll_spk,trial_spk,trial_id,score", "enroll_spk,trial_spk,trial_id,score,score",
                               "trial_spk,enroll_spk,score,trial_id", "enroll_spk,trial_id,score"]))
def test_fuzz_1_to_n_csv_reader_only_raises_input_errors(tmp_path, rows, header):
    """Whatever the table holds, the reader returns a valid matrix or raises InputFileError naming the file;
    the bulk (pyarrow) path and the pandas path agree (same matrix or same message)."""
    import csv

    from vpeval.io import matrix as mx

    p = tmp_path / "f.csv"
    names = header.split(",")
    with open(p, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(names)
        for e, t, u, v in rows:
            rec = {"enroll_spk": e, "trial_spk": t, "trial_id": u, "score": v}
            w.writerow([rec.get(c, "0") for c in names])
    def slow():
        saved = mx._fast_long_csv
        mx._fast_long_csv = lambda path: None
        try:
            return read_score_matrix(p)
        finally:
            mx._fast_long_csv = saved

    try:
        want = slow()
    except InputFileError as exc:
        assert str(p) in str(exc)
        with pytest.raises(InputFileError) as got:
            read_score_matrix(p)
        assert str(got.value) == str(exc)
        return
    sm = read_score_matrix(p)
    assert not np.isnan(sm.scores).any()
    assert sm.scores.shape == (sm.probe_id.size, sm.speaker_ids.size)
    np.testing.assert_array_equal(sm.scores, want.scores)
    for name in ("probe_id", "probe_speaker", "speaker_ids"):
        assert getattr(sm, name).tolist() == getattr(want, name).tolist()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.tuples(st.sampled_from(["s1", "s2", "é"]), st.sampled_from(["u1", "u2"]), TOKENS),
                      min_size=1, max_size=8), sep=st.sampled_from([" ", "\t", "  "]))
def test_fuzz_kaldi_matrix_reader_only_raises_input_errors(tmp_path, lines, sep):
    k, s = tmp_path / "key", tmp_path / "scores"
    k.write_text("".join(f"{e}{sep}{u}{sep}{'target' if e == 's1' else 'nontarget'}\n" for e, u, _ in lines))
    s.write_text("".join(f"{e}{sep}{u}{sep}{v}\n" for e, u, v in lines), encoding="utf-8")
    try:
        sm = read_kaldi_score_matrix(k, s)
    except InputFileError as exc:
        assert str(k) in str(exc) or str(s) in str(exc)
        return
    assert not np.isnan(sm.scores).any()


@pytest.mark.parametrize("big", ["1.7e308", "-9.18e307", "1.0000001e300"])
def test_finite_scores_beyond_1e300_are_refused_in_every_format(tmp_path, big):
    """A finite score near the float64 limit: its span, a plot's padded axis and sums overflow (vpeval report
    exited 2 with 'contains NaN' after the plot's axis became -inf..inf); refused on reading, naming the file,
    the value and what is wrong. +-inf and +-1e300 stay valid."""
    sl = tmp_path / "s.txt"
    sl.write_text(f"0.5 1\n{big} 0\n0.1 0\n")
    key, sc = tmp_path / "key", tmp_path / "scores"
    key.write_text("a x target\na y nontarget\na z nontarget\n")
    sc.write_text(f"a x 0.5\na y {big}\na z 0.1\n")
    for read, where in ((lambda: vpeval.read_score_label(sl), f"{sl}:2:"),
                        (lambda: vpeval.read_trials_scores(key, sc), f"{sc}:2:"),
                        (lambda: read_columns(sl, label_col=1, score_col=0, target="1", nontarget="0"), f"{sl}:2:")):
        with pytest.raises(InputFileError, match=r"beyond \+-1e\+300") as e:
            read()
        msg = str(e.value)
        assert msg.startswith(where) and repr(float(big)) in msg, msg
        assert "finite, but beyond" in msg and "span float64" in msg and "rescale" in msg, msg
    # the line of the file, not the trial's number: blank lines and comments do not count as trials
    sl.write_text(f"0.5 1\n\n0.2 0\n\n{big} 0\n0.1 0\n")
    with pytest.raises(InputFileError, match=rf"^{re.escape(str(sl))}:5: score {re.escape(repr(float(big)))}"):
        vpeval.read_score_label(sl)
    sl.write_text("1e300 1\n-1e300 0\ninf 1\n-inf 0\n")
    t = vpeval.read_score_label(sl)
    assert t.scores.tolist() == [1e300, -1e300, np.inf, -np.inf]


def test_repeated_lines_without_ids_are_kept_with_a_warning_naming_the_file_and_count(tmp_path):
    """A score label file has no trial ids: repeated lines may be distinct trials (kept, every line a trial),
    but vpeval says so (RepeatedTrialsWarning: file, count, most repeated pair), where they passed silently.
    Files with ids refuse a repeated pair (checked elsewhere); the same score with the other label is no
    repeat."""
    import warnings

    from vpeval.errors import RepeatedTrialsWarning

    p = tmp_path / "s.txt"
    p.write_text("0.5 1\n0.5 1\n0.2 0\n0.1 0\n0.2 0\n0.2 0\n0.5 0\n-0.0 0\n0.0 0\n")
    crlf = tmp_path / "crlf.txt"  # BOM + CRLF: read by the exact line reader rather than the bulk one
    crlf.write_bytes(b"\xef\xbb\xbf" + p.read_bytes().replace(b"\n", b"\r\n"))
    for path, read in ((p, lambda q: vpeval.read_score_label(q)),
                       (crlf, lambda q: vpeval.read_score_label(q)),
                       (p, lambda q: vpeval.read_score_label(q, higher_is_target=False)),
                       (p, lambda q: read_columns(q, label_col=1, score_col=0, target="1", nontarget="0"))):
        with pytest.warns(RepeatedTrialsWarning) as rec:
            t = read(path)
        assert len(t) == 9 and len(rec) == 1
        msg = str(rec[0].message)
        assert msg.startswith(f"{path}: 4 of 9 trials repeat the score and label of an earlier line (3 distinct"), msg
        assert "score 0.2 with label non-target, 3 times" in msg, msg
        assert rec[0].filename == __file__  # attributed to the caller's line
    p.write_text("0.5 1\n0.5 0\n0.2 0\n0.1 0\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(vpeval.read_score_label(p)) == 4
        assert len(read_columns(p, label_col=1, score_col=0, target="1", nontarget="0")) == 4
    p.write_text("a x 0.5 1\nb x 0.5 1\na y 0.2 0\nb y 0.2 0\n")  # with ids: distinct trials, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(read_columns(p, label_col=3, score_col=2, target="1", nontarget="0", key_cols=(0, 1))) == 4


def test_repeated_lines_warning_in_the_cli(tmp_path):
    from typer.testing import CliRunner

    from vpeval.cli.main import app

    p = tmp_path / "s.txt"
    p.write_text("0.9 1\n0.9 1\n0.3 1\n0.1 0\n0.4 0\n0.2 0\n")
    r = CliRunner().invoke(app, ["verify", str(p), "--no-verdict"])
    assert r.exit_code == 0, r.output
    assert f"vpeval: warning: {p}: 1 of 6 trials repeat the score and label" in r.stderr, r.stderr


def test_repeat_warning_matches_a_lexsort_oracle():
    """_warn_repeats sorts each class once (not a lexsort of all trials); its message (count, distinct repeated
    pairs, the first of the longest runs by label then score, the sign of a repeated zero as first read) is the
    one of the plain lexsort over (label, score), checked on 300 random small inputs."""
    import warnings as w_

    import numpy as np

    import vpeval
    from vpeval.io.readers import _warn_repeats

    def oracle(t):
        order = np.lexsort((t.scores, t.is_target))
        s, lab = t.scores[order], t.is_target[order]
        same = (s[1:] == s[:-1]) & (lab[1:] == lab[:-1])
        if not same.any():
            return None
        starts = np.flatnonzero(np.r_[True, ~same])
        runs = np.diff(np.r_[starts, s.size])
        k = int(np.argmax(runs))
        score = s[starts[k]] if t.meta.get("higher_is_target", True) else -s[starts[k]]
        return (f"{int(same.sum())} of {s.size} trials", f"({int((runs > 1).sum())} distinct",
                f"score {float(score)!r} with label {'target' if lab[starts[k]] else 'non-target'}, {int(runs[k])} "
                "times")

    rng = np.random.default_rng(7)
    seen = 0
    for i in range(300):
        n = int(rng.integers(2, 40))
        vals = rng.choice([-0.0, 0.0, 1.0, -2.5, 3.0], size=n) if i % 2 else np.round(rng.normal(size=n), 1)
        lab = rng.random(n) < rng.random()
        lab[0], lab[-1] = True, False
        t = vpeval.Trials(vals, lab, meta={"higher_is_target": bool(i % 3)})
        with w_.catch_warnings(record=True) as got:
            w_.simplefilter("always")
            _warn_repeats(t, "f")
        want = oracle(t)
        assert (len(got) == 1) == (want is not None)
        if want is not None:
            seen += 1
            assert all(part in str(got[0].message) for part in want), (str(got[0].message), want)
    assert seen > 100


def test_trials_sort_their_classes_once_and_do_not_pickle_them(tmp_path):
    """Trials.sorted_classes: np.sort of each class, read-only, the same arrays on the next call (the reader's
    repeated-lines check sorted them already); a pickled copy carries the trials, not the sorted classes."""
    import pickle

    p = tmp_path / "s.txt"
    p.write_text("0.5 1\n0.5 1\n-0.0 0\n0.0 0\n0.3 0\n2 1\n")
    with pytest.warns(Warning):
        t = vpeval.read_score_label(p)
    st, sn = t.sorted_classes()
    assert st.tolist() == sorted(t.tar.tolist()) and sn.tolist() == sorted(t.non.tolist())
    assert t.sorted_classes()[0] is st and not st.flags.writeable and not sn.flags.writeable
    copy = pickle.loads(pickle.dumps(t))
    assert "_sorted" not in copy.__dict__ and np.array_equal(copy.scores, t.scores)
    assert np.array_equal(copy.sorted_classes()[1], sn)


def test_trials_merge_their_tie_blocks_once_and_do_not_pickle_them(tmp_path):
    """Trials.tie_blocks: vpeval.blocks.tie_blocks of the trials, read-only, the same object on the next call; a
    pickled copy carries the trials, not the blocks (and merges its own, equal ones)."""
    import pickle

    from vpeval.blocks import tie_blocks

    p = tmp_path / "s.txt"
    p.write_text("0.5 1\n0.5 0\n-0.0 0\n0.0 1\n0.3 0\n2 1\n")
    t = vpeval.read_score_label(p)
    b, want = t.tie_blocks(), tie_blocks(t.tar, t.non)
    for name in ("values", "n_tar", "n_non"):
        np.testing.assert_array_equal(getattr(b, name), getattr(want, name))
        assert getattr(b, name).dtype == getattr(want, name).dtype and not getattr(b, name).flags.writeable
    assert t.tie_blocks() is b
    copy = pickle.loads(pickle.dumps(t))
    assert "_blocks" not in copy.__dict__ and np.array_equal(copy.tie_blocks().n_tar, b.n_tar)
