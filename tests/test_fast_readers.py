"""The bulk (pyarrow) readers agree with the line-by-line readers that define the formats.

Every public reader first tries :mod:`vpeval.io._fast`; when that declines, the exact line-by-line reader
decides. These properties fuzz files (separators, blank lines, CRLF, BOM, odd number spellings, non-ASCII
text, duplicates) and check that the public reader returns bit-identical arrays to the exact reader, or raises
the very same error.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vpeval.errors import InputFileError
from vpeval.io import _fast, readers

NUMBERS = st.one_of(
    st.floats(allow_nan=False, width=64).map(repr),
    st.floats(allow_nan=False, width=64).map(lambda v: f"{v:.3e}"),
    st.integers(-10**30, 10**30).map(str),
    st.sampled_from([
        "1.", ".5", "+.5e3", "-0", "+0.0", "0e5", "00012", "inf", "-Infinity", "+INF", "iNfInItY", "nan", "-nan",
        "NaN", "1e999", "-1e400", "1e-400", "0.0e-999", "4.9e-324", "2.5e-324", "1.7976931348623157e308",
        "1_0", "0x10", "１", "٣", "1e", "e5", ".", "+", "1.5.2", "1e5.0", "ınf", "infinit", "１.5", "1,5", "",
        "\u00a01", "1\u00a0", "9007199254740993", "18446744073709551617",
    ]),
)
IDS = st.one_of(st.sampled_from(["a", "b", "c", "spk1", "x-y", "é", "a\u00a0b", "Ω"]),
                st.text(alphabet=st.characters(blacklist_characters=" \t\r\n", blacklist_categories=("Cs",)),
                        min_size=1, max_size=4))
SEP = st.sampled_from([" ", " ", " ", "\t", "  ", " \t "])
EOL = st.sampled_from(["\n", "\n", "\r\n", " \n", "\t\r\n", "\r"])


def _same(fast_call, exact_call):
    """Public reader == exact reader: same arrays bit for bit, or the same error message."""
    try:
        want = exact_call()
    except InputFileError as exc:
        with pytest.raises(InputFileError) as got:
            fast_call()
        assert str(got.value) == str(exc)
        return
    except ValueError:  # the exact reader's own limits (e.g. float() of odd Unicode): public must not differ
        with pytest.raises(ValueError):
            fast_call()
        return
    got = fast_call()
    np.testing.assert_array_equal(got.scores.view(np.int64), want.scores.view(np.int64))
    np.testing.assert_array_equal(got.is_target, want.is_target)
    for name in ("enroll", "test"):
        a, b = getattr(got, name), getattr(want, name)
        assert (a is None) == (b is None)
        if a is not None:
            assert a.tolist() == b.tolist()
    assert got.source == want.source


def _join(lines, seps, eols, blank, lead):
    out = []
    for i, fields in enumerate(lines):
        s = seps[i % len(seps)]
        out.append((" " if lead and i == 1 else "") + s.join(fields) + eols[i % len(eols)])
        if blank and i == 0:
            out.append("\n")
    return "".join(out)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(NUMBERS, st.sampled_from(["1", "0", "1", "0", "2", "01", "1.0", "１"])),
                     min_size=1, max_size=12),
       seps=st.lists(SEP, min_size=1, max_size=3), eols=st.lists(EOL, min_size=1, max_size=3),
       blank=st.booleans(), lead=st.booleans(), bom=st.booleans(), third=st.booleans())
def test_score_label_fast_equals_exact(tmp_path, rows, seps, eols, blank, lead, bom, third):
    lines = [list(r) + (["x"] if third and i == 0 else []) for i, r in enumerate(rows)]
    p = tmp_path / "sl.txt"
    p.write_bytes((b"\xef\xbb\xbf" if bom else b"") + _join(lines, seps, eols, blank, lead).encode())
    _same(lambda: readers.read_score_label(p), lambda: readers._exact_score_label(p, True))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pairs=st.lists(st.tuples(IDS, IDS), min_size=1, max_size=10),
       labels=st.lists(st.sampled_from(["target", "nontarget", "target", "nontarget", "Target", "tar"]),
                       min_size=10, max_size=10),
       scores=st.lists(NUMBERS, min_size=10, max_size=10), perm=st.randoms(use_true_random=False),
       drop=st.booleans(), dup_key=st.booleans(), dup_score=st.booleans(),
       seps=st.lists(SEP, min_size=1, max_size=2), eols=st.lists(EOL, min_size=1, max_size=2),
       bom=st.booleans())
def test_trials_scores_fast_equals_exact(tmp_path, pairs, labels, scores, perm, drop, dup_key, dup_score,
                                         seps, eols, bom):
    klines = [[e, t, labels[i]] for i, (e, t) in enumerate(pairs)]
    slines = [[e, t, scores[i]] for i, (e, t) in enumerate(pairs)]
    perm.shuffle(slines)
    if drop and len(slines) > 1:
        slines.pop()
    if dup_key:
        klines.append(list(klines[0]))
    if dup_score:
        slines.append(list(slines[-1]))
    k, s = tmp_path / "key", tmp_path / "scores"
    k.write_bytes((b"\xef\xbb\xbf" if bom else b"") + _join(klines, seps, eols, False, False).encode())
    s.write_bytes(_join(slines, seps[::-1], eols, False, False).encode())
    _same(lambda: readers.read_trials_scores(k, s), lambda: readers._exact_trials_scores(k, s, True))


def test_fast_path_is_taken_for_plain_files(tmp_path):
    """The bulk reader does accept ordinary files (so the properties above test two implementations)."""
    p = tmp_path / "s"
    p.write_text("0.5 1\r\n\n-1e3\t0\n  inf 1 \n")
    assert readers._fast_score_label(p, True) is not None
    k, s = tmp_path / "k", tmp_path / "sc"
    k.write_text("a x target\nb x nontarget\n")
    s.write_text("b x 0.25\na x 1.5\n")
    t = readers._fast_trials_scores(k, s, True)
    assert t.scores.tolist() == [1.5, 0.25] and t.enroll.tolist() == ["a", "b"]


def test_zero_scores_are_parsed_as_numbers_unless_a_number_could_have_underflowed(tmp_path, monkeypatch):
    """A score file with zeros as written is read by the CSV reader's own float parse (no second read as text);
    an exponent or a long run of zeros (a number below the smallest subnormal) sends it to the text route,
    whose token check sees the underflow. Both give the exact reader's values, signed zeros included, or its
    error."""
    calls = []
    real = _fast._parse

    def parse(*a, **k):
        calls.append(tuple(a[5]) if len(a) > 5 else ())
        return real(*a, **k)

    monkeypatch.setattr(_fast, "_parse", parse)
    tiny = "0." + "0" * 330 + "1"  # 1e-331 rounds to 0.0
    cases = [("0.000000 1\n-0.0 0\n0.25 1\n-1.5 0\n", [(0,)]),
             ("0 1\n1.5e3 0\n-2.5E-07 1\n", [(0,)]),  # exponents of two digits at most: no underflow
             ("0 1\n1.5e-300 0\n0.5 0\n", [(0,), ()]),  # a three-digit exponent: the zero might be an underflow
             ("0 1\n1e-400 0\n0.5 1\n", [(0,), ()]),  # ... and here is one, which the text route refuses
             ("0 1\n1e-0000400 0\n0.5 1\n", [(0,), ()]),  # the same, its exponent's leading zeros aside
             ("0 1\n" + tiny + " 0\n0.5 1\n", [(0,), ()]),  # the text route refuses the underflow
             ("0." + "0" * 200 + "1 1\n0 0\n", [(0,)]),  # 200 zeros: 1e-201 is no underflow
             ("0." + "0" * 230 + "1e-99 1\n0 0\n", [(0,), ()])]  # 230 zeros and e-99: 1e-330 underflows
    for text, want_calls in cases:
        calls.clear()
        p = tmp_path / "z.txt"
        p.write_text(text)
        _same(lambda: readers.read_score_label(p), lambda: readers._exact_score_label(p, True))
        calls.clear()
        readers._fast_score_label(p, True)
        assert calls == want_calls, text[:40]


def test_strings_to_numpy_keeps_values():
    pa = pytest.importorskip("pyarrow")
    col = pa.chunked_array([pa.array(["ab", "a", "xyz"]), pa.array([]).cast(pa.string()),
                            pa.array(["q", "Ωé"])])
    assert _fast.strings_to_numpy(col).tolist() == ["ab", "a", "xyz", "q", "Ωé"]
    sliced = pa.chunked_array([pa.array(["s1", "long-id", "z"]).slice(1)])
    assert _fast.strings_to_numpy(sliced).tolist() == ["long-id", "z"]


SCORE_TEXT = st.one_of(
    st.text(alphabet=st.sampled_from(list(_fast._SCORE_BYTES.decode())), min_size=1, max_size=12),
    NUMBERS.filter(lambda v: v and set(v) <= set(_fast._SCORE_BYTES.decode())),
)


@settings(max_examples=3000, deadline=None, derandomize=True)
@given(st.lists(SCORE_TEXT, min_size=1, max_size=20))
def test_arrow_parse_over_the_score_bytes_is_pythons_float(values):
    """The premise of scores_from_strings: over the bytes of _SCORE_BYTES, what Arrow's cast accepts Python's
    float accepts too, with the same value (and the column as a whole is accepted only then)."""
    pa = pytest.importorskip("pyarrow")
    pc = pytest.importorskip("pyarrow.compute")
    for v in values:
        try:
            got = pc.cast(pa.array([v]), pa.float64())[0].as_py()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
        want = float(v)  # raises if Python rejects what Arrow accepted: the test fails
        assert got == want and np.signbit(got) == np.signbit(want), v
    out = _fast.scores_from_strings(pa.chunked_array([pa.array(values)]))
    if out is not None:
        assert out.tolist() == [float(v) for v in values]


def test_scores_from_strings_declines_other_bytes():
    pa = pytest.importorskip("pyarrow")
    for bad in ["nan", "1_0", "１", "0x10", "1,5", "nan(1)", "1 "]:
        assert _fast.scores_from_strings(pa.chunked_array([pa.array(["1.5", bad])])) is None, bad
    assert _fast.scores_from_strings(pa.chunked_array([pa.array(["1.5", "-2e3"]).slice(1)])).tolist() == [-2000.0]


def test_one_byte_flags():
    pa = pytest.importorskip("pyarrow")
    col = pa.chunked_array([pa.array(["1", "0", "1"]).slice(1), pa.array([]).cast(pa.string()), pa.array(["1"])])
    assert _fast.one_byte_flags(col, b"1", b"0").tolist() == [False, True, True]
    for bad in (["1", "10"], ["1", "2"], ["01"], ["1", " "]):
        assert _fast.one_byte_flags(pa.chunked_array([pa.array(bad)]), b"1", b"0") is None, bad


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)).filter(lambda c: c != (0, 0)),
                min_size=1, max_size=40), st.booleans())
def test_pav_bins_over_class_runs_equal_the_fit_over_blocks(counts, pseudo):
    """Pooling runs of one-class blocks before scipy's PAV gives the very bins of the fit over all blocks."""
    from vpeval import blocks

    n_tar = np.array([c[0] for c in counts], dtype=np.int64)
    n_non = np.array([c[1] for c in counts], dtype=np.int64)
    got = blocks.pav_bins(n_tar, n_non, pseudo=pseudo)
    if pseudo:
        n_tar, n_non = np.r_[1, n_tar, 1], np.r_[1, n_non, 1]
    start = blocks._pav_starts(n_tar, n_non)  # scipy over every block, nothing pooled
    assert got.start.tolist() == start.tolist()
    assert got.n_tar.tolist() == np.add.reduceat(n_tar, start).tolist()
    assert got.n_non.tolist() == np.add.reduceat(n_non, start).tolist()


LABELS = st.sampled_from(["target", "nontarget", "spoof", "tgt", "imp"] * 4 + ["Target", "-", "bonafide"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(IDS, IDS, LABELS, NUMBERS), min_size=1, max_size=10),
       sep=st.sampled_from([None, None, ",", ";"]), header=st.booleans(), keys=st.booleans(),
       blank=st.booleans(), eols=st.lists(EOL, min_size=1, max_size=2), pad=st.sampled_from(["", " ", "\t"]),
       dup=st.booleans())
def test_read_columns_fast_equals_exact(tmp_path, monkeypatch, rows, sep, header, keys, blank, eols, pad, dup):
    names = ["enroll", "test", "label", "score"]
    lines = [[e, t, lab, v] for e, t, lab, v in rows]
    if dup:
        lines.append(list(lines[0]))
    joiner = (sep or " ")
    body = [pad + (pad + joiner + pad).join(f) + pad for f in ([names] if header else []) + lines]
    text = "".join(b + eols[i % len(eols)] + ("\n" if blank and i == 1 else "") for i, b in enumerate(body))
    p = tmp_path / "cols.txt"
    p.write_bytes(text.encode())
    if header:
        kw = dict(label_col="label", score_col="score", key_cols=("enroll", "test") if keys else None)
    else:
        kw = dict(label_col=2, score_col=3, key_cols=(0, 1) if keys else None)
    kw.update(target=["target", "tgt"], nontarget=["nontarget", "imp"], ignore="spoof", sep=sep)

    def exact():
        with monkeypatch.context() as m:
            m.setattr(readers, "_fast_columns", lambda *a, **k: None)
            return readers.read_columns(p, **kw)

    _same(lambda: readers.read_columns(p, **kw), exact)


def test_read_columns_fast_path_is_taken(tmp_path):
    p = tmp_path / "asv.csv"
    p.write_text("enroll,test,label,score\na,x,tgt,1.0\na,y,imp,0.5\nb,x, spoof ,3\nb,y,imp,0.25\n")
    kw = dict(label_col="label", score_col="score", target="tgt", nontarget="imp", ignore="spoof", sep=",",
              key_cols=("enroll", "test"))
    t = readers._fast_columns(p, ",", True, ["label", "score", "enroll", "test"], frozenset(["tgt"]),
                              frozenset(["imp"]), frozenset(["spoof"]), True, True)
    assert t is not None and t.scores.tolist() == [1.0, 0.5, 0.25]
    assert t.enroll.tolist() == ["a", "a", "b"] and t.test.tolist() == ["x", "y", "y"]
    assert readers.read_columns(p, **kw).scores.tolist() == [1.0, 0.5, 0.25]


def test_a_pipe_is_read_once_by_the_exact_reader(tmp_path):
    """Non-regular files (pipes, /dev/stdin) skip the bulk path, which would consume them."""
    import os
    import threading

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    threading.Thread(target=lambda: fifo.write_text("0.5 1\n0.25 0\n"), daemon=True).start()
    t = readers.read_score_label(fifo)
    assert t.tar.tolist() == [0.5] and t.non.tolist() == [0.25]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["", "0", "00", "000"]), st.integers(0, 999), st.sampled_from("eE"),
                          st.sampled_from(["", "+", "-"])), min_size=1, max_size=6),
       st.integers(1, 40))
def test_long_exponents_are_found_across_chunks(exps, chunk):
    """The file scan finds an exponent of three or more digits (leading zeros aside) wherever its chunks end (it
    reads each chunk's last bytes again with the next one): zeros read as floats are trusted exactly when the
    file has none."""
    import tempfile

    text = "".join(f"1.5{e}{sign}{zeros}{v} 1\n" for zeros, v, e, sign in exps) + "0 0\n"
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "s.txt"
        p.write_text(text)
        saved, _fast._CHUNK = _fast._CHUNK, chunk
        try:
            zeros_exact = _fast._scan(p, None, numeric=True)[3]
        finally:
            _fast._CHUNK = saved
    assert zeros_exact == (not any(v >= 100 for _, v, _, _ in exps))
