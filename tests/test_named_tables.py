"""CSV tables are read by column name (issue 48, item 2): another column order reads the same; an unknown,
missing or repeated column, a repeated row, a ragged row and a non-finite value are errors naming file and line;
a UTF-8 byte-order mark is skipped."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpeval.audio.prosody import FEATURES
from vpeval.cli.channels import _read_table
from vpeval.errors import InputFileError

COLUMNS = ("utterance_id",) + FEATURES


def _values(n_rows: int, seed: int = 0) -> dict[str, list[str]]:
    rng = np.random.default_rng(seed)
    out = {"utterance_id": [f"u{i}" for i in range(n_rows)]}
    for f in FEATURES:
        out[f] = [repr(float(v)) for v in rng.normal(size=n_rows)]
    return out


def _csv(values: dict[str, list[str]], order, bom: bool = False) -> str:
    n = len(values["utterance_id"])
    lines = [",".join(order)] + [",".join(values[c][i] for c in order) for i in range(n)]
    return ("\ufeff" if bom else "") + "\n".join(lines) + "\n"


@settings(max_examples=30, deadline=None)
@given(st.permutations(COLUMNS), st.booleans(), st.sampled_from(["\n", "\r\n"]))
def test_prosody_columns_in_any_order_read_the_same(order, bom, newline):
    values = _values(4)
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "p.csv"
        p.write_bytes(_csv(values, COLUMNS).encode())
        want = _read_table(p)
        p.write_bytes(_csv(values, order, bom).replace("\n", newline).encode("utf-8"))
        got = _read_table(p)
    assert list(got) == list(want)
    for u in want:
        np.testing.assert_array_equal(got[u], want[u])
    # the values are the table's, in FEATURES order whatever the file's
    np.testing.assert_array_equal(want["u2"], [float(values[f][2]) for f in FEATURES])


def _error(tmp_path, text: str, match: str, line):
    p = tmp_path / "prosody_original.csv"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(InputFileError, match=match) as e:
        _read_table(p)
    assert e.value.path == str(p) and e.value.line == line, str(e.value)
    return str(e.value)


def test_prosody_renamed_repeated_or_missing_columns_are_refused(tmp_path):
    values = _values(3)
    renamed = ["utterance_id", "logf0_med"] + list(FEATURES[1:])
    values["logf0_med"] = values["logf0_median"]
    msg = _error(tmp_path, _csv(values, renamed), "missing column", 1)
    assert "'logf0_median'" in msg
    _error(tmp_path, _csv(values, list(COLUMNS) + ["logf0_med"]), "unknown column.*'logf0_med'", 1)
    _error(tmp_path, _csv(values, list(COLUMNS) + ["logf0_iqr"]), "'logf0_iqr' appears twice", 1)
    _error(tmp_path, "utterance_id\nu0\n", "missing column", 1)


def test_prosody_repeated_row_ragged_row_and_non_finite_values_name_the_line(tmp_path):
    values = _values(3)
    text = _csv(values, COLUMNS)
    lines = text.splitlines()
    msg = _error(tmp_path, "\n".join(lines + [lines[2]]) + "\n", "listed again", 5)  # the row of u1 again
    assert "first on line 3" in msg
    _error(tmp_path, "\n".join(lines[:2] + [lines[2] + ",0.5"] + lines[3:]) + "\n", "expected 14 fields", 3)
    _error(tmp_path, "\n".join(lines[:3] + [lines[3].rsplit(",", 1)[0]]) + "\n", "got 13", 4)
    for bad in ("nan", "inf", "-Infinity", "1e400", "1_0", ""):
        row = lines[2].split(",")
        row[5] = bad
        msg = _error(tmp_path, "\n".join(lines[:2] + [",".join(row)] + lines[3:]) + "\n", FEATURES[4], 3)
        assert repr(bad) in msg


def test_prosody_table_with_a_byte_order_mark_is_read(tmp_path):
    """A BOM (spreadsheet programs write one) was "said to lack its header"."""
    p = tmp_path / "p.csv"
    p.write_bytes(_csv(_values(2), COLUMNS, bom=True).encode("utf-8"))
    assert list(_read_table(p)) == ["u0", "u1"]


def test_pitch_table_by_name(tmp_path):
    from vpeval.io.pitch_table import read_pitch_table

    p = tmp_path / "pitch_correlation.csv"
    p.write_bytes("\ufeffrho_f0,utterance_id\r\n0.5,a\r\n,b\r\n".encode("utf-8"))
    r = read_pitch_table(p)
    assert r.utterances["a"] == 0.5 and np.isnan(r.utterances["b"])
    for text, match, line in [("utterance_id,rho_f0,rho_f0\na,0.5,0.4\n", "appears twice", 1),
                              ("utterance_id,rho_f0,extra\na,0.5,x\n", "unknown column", 1),
                              ("utterance_id,rho_f0\na,0.5\na,0.4\n", "listed again", 3),
                              ("utterance_id,rho_f0\na,0.5,0.4\n", "expected 2 fields", 2)]:
        p.write_text(text)
        with pytest.raises(InputFileError, match=match) as e:
            read_pitch_table(p)
        assert e.value.line == line


def test_metadata_tables_by_name(tmp_path):
    from vpeval.audio.io import read_speaker_metadata
    from vpeval.cli.common import read_metadata_csv

    p = tmp_path / "metadata.csv"
    p.write_bytes("\ufeffspeaker_id,utterance_id,sex\nS1,aa,F\n".encode("utf-8"))
    assert read_speaker_metadata(p) == {"aa": "S1"}
    assert read_metadata_csv(p).to_dict("list") == {"speaker_id": ["S1"], "utterance_id": ["aa"], "sex": ["F"]}
    for text, match, line in [("utterance_id,speaker_id,speaker_id\naa,S1,S2\n", "appears twice", 1),
                              ("utterance_id,speaker_id,sex\naa,S1\n", "expected 3 fields", 2)]:
        p.write_text(text)
        for read in (read_speaker_metadata, read_metadata_csv):
            with pytest.raises(InputFileError, match=match) as e:
                read(p)
            assert e.value.line == line


def test_parquet_embeddings_with_a_column_twice_are_refused(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from vpeval.io.embeddings import read_embeddings

    cols = [pa.array(["u1", "u2"]), pa.array(["s1", "s2"]), pa.array(["s2", "s1"]), pa.array(["original"] * 2),
            pa.array([[0.1, 0.2], [0.3, 0.4]])]
    p = tmp_path / "e.parquet"
    pq.write_table(pa.Table.from_arrays(cols, names=["utterance_id", "speaker_id", "speaker_id", "condition",
                                                     "embedding"]), p)
    with pytest.raises(InputFileError, match="'speaker_id' appears more than once"):
        read_embeddings(p)
