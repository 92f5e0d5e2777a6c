"""One number syntax in every reader (issue 48, item 9): a field is a number under vpeval.io.numbers' rule or
an error naming file and line, whichever reader (line by line, bulk pyarrow, NumPy) reads it."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpeval.errors import InputFileError
from vpeval.io.kaldi_segments import _read_segments
from vpeval.io.matrix import read_kaldi_score_matrix
from vpeval.io.numbers import NumberSyntaxError, is_nan_word, parse_number
from vpeval.io.pitch_table import read_pitch_table
from vpeval.io.readers import read_columns, read_score_label, read_trials_scores

#: characters of numbers and of what Python's float() also takes (separators, other digits, words)
_CHARS = "0123456789+-.eE_infatyIN\u0661\u0662"


def _expected(token: str):
    """The value under the rule (infinities allowed), or None when the rule refuses the token."""
    try:
        return parse_number(token, allow_inf=True)
    except NumberSyntaxError:
        return None


def _read_all(d: Path, token: str) -> dict:
    """token as a score / time / correlation in each reader: reader name -> value read, or the InputFileError.

    The files are written as UTF-8 whatever the locale (CI may run under an ASCII one): the readers read UTF-8.
    """
    out = {}

    def run(name, fn):
        try:
            out[name] = fn()
        except InputFileError as exc:
            out[name] = exc

    (d / "sl").write_text(f"{token} 1\n0.5 0\n", encoding="utf-8")
    run("score label", lambda: float(read_score_label(d / "sl").tar[0]))
    (d / "cols").write_text(f"{token},target\n0.5,nontarget\n", encoding="utf-8")
    run("columns", lambda: float(read_columns(d / "cols", label_col=1, score_col=0, target="target",
                                              nontarget="nontarget", sep=",").tar[0]))
    (d / "key").write_text("a u1 target\nb u1 nontarget\na u2 nontarget\nb u2 target\n", encoding="utf-8")
    (d / "scores").write_text(f"a u1 {token}\nb u1 0.5\na u2 0.1\nb u2 0.2\n", encoding="utf-8")
    run("kaldi trials", lambda: float(read_trials_scores(d / "key", d / "scores").scores[0]))
    run("kaldi matrix", lambda: float(read_kaldi_score_matrix(d / "key", d / "scores").scores[0, 0]))
    (d / "segments").write_text(f"u r1 0 {token}\n", encoding="utf-8")
    run("segments", lambda: _read_segments(d / "segments", {"r1": d / "r1.wav"}, {"r1": 1}, d / "wav.scp",
                                           False)["u"].end)
    (d / "pitch.csv").write_text(f"utterance_id,rho_f0\nu,{token}\n", encoding="utf-8")
    run("pitch table", lambda: read_pitch_table(d / "pitch.csv").utterances["u"])
    return out


def _check(token: str) -> None:
    want = _expected(token)
    with tempfile.TemporaryDirectory() as tmp:
        got = _read_all(Path(tmp), token)
    for name, v in got.items():
        if name == "pitch table" and is_nan_word(token):  # an undefined correlation, as an empty cell
            assert math.isnan(v), (token, v)
        elif want is None:  # refused by the rule: refused by every reader, at the token's line
            assert isinstance(v, InputFileError), (name, token, v)
            line = 2 if name == "pitch table" else 1  # below the CSV's header
            assert v.line == line and repr(token) in str(v), (name, token, str(v))
        elif isinstance(v, InputFileError):  # allowed by the rule, refused by the reader's own range only
            ranges = {"score label": abs(want) > 1e300, "columns": abs(want) > 1e300,
                      "kaldi trials": abs(want) > 1e300, "kaldi matrix": False,
                      "segments": not 0 < want < math.inf, "pitch table": not -1 <= want <= 1}
            assert ranges[name], (name, token, str(v))
        else:
            assert v == want, (name, token, v)


@pytest.mark.parametrize("token", ["1_0", "1__0", "_1", "\u0661\u0662", "1e400", "-1e400", "1e-400", "nan",
                                   "-nan", "0x10", "np.float64(0.5)", "++1", "1e", ".", "0.25", "-.5",
                                   "3.", "1E-2", "inf", "-Infinity"])
def test_every_reader_reads_the_same_numbers(token):
    _check(token)


@settings(max_examples=120, deadline=None)
@given(st.text(alphabet=_CHARS, min_size=1, max_size=7))
def test_every_reader_reads_the_same_numbers_random(token):
    _check(token)


def test_a_number_written_by_numpy_2_is_quoted_as_written(tmp_path):
    """`np.float64(6.08) 1` was reported as "score '6.08' is not a number" by the CLI (its message rewrite)."""
    from typer.testing import CliRunner

    from vpeval.cli.main import app

    p = tmp_path / "s.txt"
    p.write_text("np.float64(6.08) 1\n0.5 0\n", encoding="utf-8")
    r = CliRunner().invoke(app, ["verify", str(p)])
    assert r.exit_code == 2
    assert f"{p}:1: score 'np.float64(6.08)' is not a number" in r.output


@pytest.mark.parametrize("value", ["nan", "-nan", "inf", "0.9", "0"])
def test_verdict_alpha_out_of_range_says_finite_number_in_the_range(tmp_path, value):
    """`--alpha nan` was answered "Input should be less than or equal to 0.5" (typer's range check: NaN compares
    false with both bounds)."""
    from typer.testing import CliRunner

    from vpeval.cli.main import app

    f = tmp_path / "s.txt"
    f.write_text("0.9 1\n0.1 0\n", encoding="utf-8")
    r = CliRunner().invoke(app, ["verify", str(f), "--alpha", value])
    assert r.exit_code == 2
    assert "must be a finite number in [1e-06, 0.5]" in " ".join(r.output.replace("│", " ").split()), r.output


@pytest.mark.parametrize("value", ["nan", "inf", "1_0"])
def test_anonymize_alpha_must_be_a_finite_number(tmp_path, value):
    """`vpeval anonymize --alpha nan` said "alpha must be in (0, 1], got nan (above 1, pole angles ...)"; '1_0'
    was read as 10."""
    from typer.testing import CliRunner

    from vpeval.cli.main import app

    (tmp_path / "in").mkdir()
    r = CliRunner().invoke(app, ["anonymize", str(tmp_path / "in"), str(tmp_path / "out"), "--alpha", value])
    assert r.exit_code == 2
    assert f"--alpha must be a finite number in (0, 1], 'speaker' or 'utterance', got {value!r}" in r.output
