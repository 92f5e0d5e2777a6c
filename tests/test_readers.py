import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vpeval
from vpeval import read_columns, read_score_label, read_trials_scores
from vpeval.errors import InputFileError, VpevalError

KEY = "e1 t1 target\ne1 t2 nontarget\ne2 t1 nontarget\ne2 t3 target\n"
SCORES = "e2 t3 2.5\ne1 t1 1.5\ne2 t1 -0.5\ne1 t2 0.25\n"


def write(tmp_path, name, text, newline="\n"):
    p = tmp_path / name
    p.write_bytes(text.replace("\n", newline).encode())
    return p


def test_join_on_pairs(tmp_path):
    t = read_trials_scores(write(tmp_path, "key", KEY), write(tmp_path, "scores", SCORES))
    assert sorted(t.tar.tolist()) == [1.5, 2.5]
    assert sorted(t.non.tolist()) == [-0.5, 0.25]
    assert t.scores.dtype == np.float64
    assert list(zip(t.enroll, t.test))[0] == ("e1", "t1")


def test_no_concatenated_key_confusion(tmp_path):
    # ("a b", "c") vs ("a", "b c") cannot happen with whitespace fields, but ("ab","c") vs ("a","bc") can
    key = write(tmp_path, "key", "ab c target\na bc nontarget\n")
    sc = write(tmp_path, "scores", "a bc 0.1\nab c 0.9\n")
    t = read_trials_scores(key, sc)
    assert t.tar.tolist() == [0.9] and t.non.tolist() == [0.1]


def test_crlf_equals_lf(tmp_path):
    a = read_trials_scores(write(tmp_path, "k1", KEY), write(tmp_path, "s1", SCORES))
    b = read_trials_scores(write(tmp_path, "k2", KEY, "\r\n"), write(tmp_path, "s2", SCORES, "\r\n"))
    np.testing.assert_array_equal(a.scores, b.scores)
    assert vpeval.eer(a.tar, a.non) == vpeval.eer(b.tar, b.non)
    assert vpeval.min_cllr(a.tar, a.non) == vpeval.min_cllr(b.tar, b.non)


@pytest.mark.parametrize(
    "key, scores, where, words",
    [
        ("e1 t1 Target\n", "e1 t1 1\n", "key:1", "unknown label 'Target'"),
        ("e1 t1 target\ne1 t2\n", "e1 t1 1\n", "key:2", "expected 3 fields"),
        ("e1 t1 target\ne1 t1 nontarget\n", "e1 t1 1\n", "key:2", "already given on line 1"),
        (KEY, SCORES + "e1 t1 1.5\n", "scores:5", "scored twice with the same score"),
        (KEY, SCORES + "e1 t1 7\n", "scores:5", "conflicting score"),
        (KEY, "e2 t3 2.5\ne1 t1 nan\n", "scores:2", "NaN"),
        (KEY, "e2 t3 2.5\ne1 t1 abc\n", "scores:2", "'abc' is not a number"),
        (KEY, "e2 t3 2.5\ne1 t1 1\n", "scores:", "2 of 4 key trials have no score"),
        (KEY, SCORES + "e9 t9 1\n", "scores:", "1 scored trials are not in the key"),
        ("e1 t1 target\n", "e1 t1 1\n", "key + ", "no non-target trials"),
    ],
)
def test_key_score_errors(tmp_path, key, scores, where, words):
    k = write(tmp_path, "key", key)
    s = write(tmp_path, "scores", scores)
    with pytest.raises(InputFileError) as ei:
        read_trials_scores(k, s)
    msg = str(ei.value)
    assert where in msg and words in msg
    assert isinstance(ei.value, ValueError) and isinstance(ei.value, VpevalError)


def test_missing_keys_are_listed(tmp_path):
    k = write(tmp_path, "key", KEY)
    s = write(tmp_path, "scores", "e2 t3 2.5\n")
    with pytest.raises(InputFileError, match=r"3 of 4 .*\(e1 t1, key line 1\)"):
        read_trials_scores(k, s)


def test_score_label(tmp_path):
    t = read_score_label(write(tmp_path, "s", "0.5 1\n\n-1e3 0\ninf 1\n"))
    assert t.tar.tolist() == [0.5, np.inf] and t.non.tolist() == [-1000.0]
    for text, words in [("0.5 2\n", "label '2'"), ("0.5\n", "expected 2 fields"), ("x 1\n0 0\n", "not a number"),
                        ("", "no trials"), ("1 1\n2 1\n", "no non-target")]:
        with pytest.raises(InputFileError, match=words):
            read_score_label(write(tmp_path, "bad", text))


def test_score_direction(tmp_path):
    p = write(tmp_path, "s", "0.1 1\n0.9 0\n")
    assert vpeval.eer(*_tn(read_score_label(p))) == 0.5
    assert vpeval.eer(*_tn(read_score_label(p, higher_is_target=False))) == 0.0


def _tn(t):
    return t.tar, t.non


def test_columns_with_ignored_class(tmp_path):
    p = write(tmp_path, "asv", "- target 18.2\n- nontarget -3.5\n- spoof 1.0\n")
    t = read_columns(p, label_col=1, score_col=2, target="target", nontarget="nontarget", ignore="spoof")
    assert t.tar.tolist() == [18.2] and t.non.tolist() == [-3.5]
    with pytest.raises(InputFileError, match=r"asv:3: unknown label 'spoof'"):
        read_columns(p, label_col=1, score_col=2, target="target", nontarget="nontarget")


def test_csv_with_header_and_keys(tmp_path):
    p = write(tmp_path, "t.csv", "enroll,test,label,score\na,x,tgt,1.0\na,y,imp,0.5\nb,x,imp,0.2\na,x,imp,0.3\n")
    with pytest.raises(InputFileError, match=r"t.csv:5: trial \('a', 'x'\) already given on line 2"):
        read_columns(p, label_col="label", score_col="score", target="tgt", nontarget="imp", sep=",",
                     key_cols=("enroll", "test"))
    t = read_columns(p, label_col="label", score_col="score", target="tgt", nontarget="imp", sep=",")
    assert t.tar.tolist() == [1.0] and sorted(t.non.tolist()) == [0.2, 0.3, 0.5]
    with pytest.raises(InputFileError, match="header has no column"):
        read_columns(p, label_col="lab", score_col="score", target="tgt", nontarget="imp", sep=",")


def test_parquet_table(tmp_path):
    pd = pytest.importorskip("pandas")
    p = tmp_path / "t.parquet"
    pd.DataFrame({"label": ["target", "nontarget", "spoof"], "score": [1.0, 0.0, 9.0]}).to_parquet(p)
    t = read_columns(p, label_col="label", score_col="score", target="target", nontarget="nontarget",
                     ignore=["spoof"])
    assert t.tar.tolist() == [1.0] and t.non.tolist() == [0.0]
    with pytest.raises(InputFileError, match="unknown label 'spoof'"):
        read_columns(p, label_col="label", score_col="score", target="target", nontarget="nontarget")


@pytest.mark.parametrize("path", ["bulk", "line-by-line", "header", "parquet"])
def test_label_mapping_counts_every_row(tmp_path, monkeypatch, path):
    """Issue 47 item 5: a label mapping drops no row silently. read_columns records in meta["label_counts"] how
    many rows it read, per label of each class, and how many it ignored (a mapped label no row has counts 0);
    the bulk reader, the line-by-line reader and the Parquet reader agree."""
    rows = [("tgt", 1.0), ("spoof", 5.0), ("imp", 0.5), ("T", 2.0), ("spoof", 4.0), ("imp", 0.25), ("spoof", 3.0)]
    if path == "parquet":
        pd = pytest.importorskip("pandas")
        p = tmp_path / "t.parquet"
        pd.DataFrame({"label": [r[0] for r in rows], "score": [r[1] for r in rows]}).to_parquet(p)
        cols = ("label", "score")
    else:
        head = "label score\n" if path == "header" else ""
        p = write(tmp_path, "t.txt", head + "".join(f"{lab} {sc!r}\n\n" for lab, sc in rows))  # blank lines
        cols = ("label", "score") if path == "header" else (0, 1)
    if path == "line-by-line":
        import vpeval.io._fast as fast

        monkeypatch.setattr(fast, "read_table", lambda *a, **k: None)
    elif path in ("bulk", "header"):  # the bulk reader must take these files whole
        import vpeval.io.readers as readers

        monkeypatch.setattr(readers, "_rows", lambda *a, **k: pytest.fail("the line-by-line reader was used"))
    t = read_columns(p, label_col=cols[0], score_col=cols[1], target=["tgt", "T"], nontarget="imp",
                     ignore=["spoof", "dup"])
    assert sorted(t.tar.tolist()) == [1.0, 2.0] and len(t) == 4
    assert t.meta["label_counts"] == {"rows": 7, "target": {"T": 1, "tgt": 1}, "nontarget": {"imp": 2},
                                      "ignored": {"dup": 0, "spoof": 3}}
    from vpeval.io.label_counts import label_counts_text

    assert label_counts_text(t.meta["label_counts"]) == (
        "ignored 3 lines labelled 'dup' (0) or 'spoof' (3) (of 7); read 2 target trials (labels 'T' (1) or 'tgt' "
        "(1)) and 2 non-target trials (label 'imp')")


def test_unreadable_file(tmp_path):
    with pytest.raises(InputFileError, match="cannot read file"):
        read_score_label(tmp_path / "nope.txt")
    p = tmp_path / "bin"
    p.write_bytes(b"\xff\xfe garbage")
    with pytest.raises(InputFileError, match="not UTF-8"):
        read_score_label(p)
    p.write_bytes(b"\xff\xfe\x00garbage")  # a NUL byte: binary, said before the decoding is tried
    with pytest.raises(InputFileError, match=r"bin:1: binary data \(a NUL byte at byte 2\), not text"):
        read_score_label(p)


ids = st.text(alphabet="abcdefgh0123456789_-", min_size=1, max_size=6)


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(st.tuples(ids, ids), st.tuples(st.booleans(), st.floats(-1e6, 1e6, allow_nan=False)),
                    min_size=2, max_size=20),
    st.randoms(use_true_random=False),
    st.booleans(),
)
def test_roundtrip_any_order(tmp_path_factory, trials, rnd, crlf):
    if len({lab for lab, _ in trials.values()}) < 2:
        return
    d = tmp_path_factory.mktemp("rt")
    items = list(trials.items())
    nl = "\r\n" if crlf else "\n"
    key = nl.join(f"{e} {t} {'target' if lab else 'nontarget'}" for (e, t), (lab, _) in items) + nl
    rnd.shuffle(items)
    sc = nl.join(f"{e} {t} {s!r}" for (e, t), (_, s) in items) + nl
    (d / "k").write_bytes(key.encode())
    (d / "s").write_bytes(sc.encode())
    got = read_trials_scores(d / "k", d / "s")
    want = {k: v for k, v in trials.items()}
    for e, t, s, lab in zip(got.enroll, got.test, got.scores, got.is_target):
        assert want[(e, t)] == (lab, s)


def test_trials_repr_is_a_summary():
    t = vpeval.Trials(np.arange(2000.0), np.arange(2000) % 4 == 0, source="x.txt")
    r = repr(t)
    assert r == "Trials(n=2000, targets=500, non_targets=1500, keys=none, source='x.txt')"
    assert len(repr(vpeval.Trials(np.arange(3.0), np.array([1, 0, 1], bool), np.array(["a", "b", "c"]),
                                  np.array(["u", "v", "w"])))) < 120
