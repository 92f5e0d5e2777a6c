"""Bulk parsing of whitespace- and comma-separated score files with pyarrow (the happy path of the readers).

The readers in :mod:`vpeval.io.readers` and :mod:`vpeval.io.matrix` define what a valid file is, line by line,
in Python. Line-by-line Python costs about 5 microseconds and one or more Python objects per line, which
dominates reading files of millions of trials. This module reads the same files with ``pyarrow.csv``
(multi-threaded, columns kept as Arrow arrays, no Python object per line) and validates whole columns at once.

It only ever *accepts a subset* of what the line-by-line readers accept, with the same values: whenever a file
is not plainly valid under the rules below, the functions here return ``None`` and the caller runs its exact
reader, which then either raises the error (with file and line) or returns the result itself. So the error
messages, the line numbers and every corner case (CRLF, BOM, blank lines, non-ASCII digits, duplicate pairs)
stay decided by one implementation.

Rules of the fast path (anything else -> ``None``):

- the file is UTF-8 (a BOM is skipped); every CR is part of a CRLF line end;
- whitespace files: fields are separated by ASCII spaces and tabs, lines may carry leading/trailing ones;
  blank lines are skipped; every non-blank line has the same number of fields;
- CSV files (``sep`` given): ASCII only, no quote character, no ASCII "information separator" bytes
  (``\\x1c``-``\\x1f``, which Python's ``str.strip`` treats as white space), the same number of fields on
  every line;
- a score is ``[+-]`` ASCII decimal digits with an optional fraction and exponent, or ``inf``/``infinity``
  in any ASCII case; it converts to the float64 Python's ``float`` gives (Arrow's parser rounds correctly);
  it is not NaN, does not overflow to infinity and does not underflow to zero.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["read_table", "scores_from_strings", "strings_to_numpy", "ascii_bytes"]

# The readers' number rule, restricted to ASCII (RE2 syntax). Non-ASCII text never takes the fast path.
_NUMBER_RE2 = r"^[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?)$"
_NONZERO_MANTISSA_RE2 = r"^[+-]?[0-9.]*[1-9]"
_MAX_FIELDS = 256  # wider files take the exact reader


def _pa():
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    return pa, pc, pcsv


_CHUNK = 1 << 24


def _scan(path, sep):
    """Read the file in chunks: (plain, ok). ``ok`` False: a lone CR or an unreadable file (-> exact reader).

    ``plain`` False: a whitespace file with tabs, which pyarrow cannot split as it is (runs of spaces and
    leading or trailing spaces show up as empty fields after parsing, see :func:`read_table`); or a CSV file
    that is not ASCII or holds quotes or information-separator bytes (then ``ok`` is False too). Memory: one
    chunk; only memchr-speed searches.
    """
    plain = True
    prev = b""
    n_cr = n_crlf = 0
    try:
        with open(path, "rb") as fh:
            while True:
                chunk = fh.read(_CHUNK)
                if not chunk:
                    break
                if b"\r" in chunk:
                    n_cr += chunk.count(b"\r")
                    n_crlf += chunk.count(b"\r\n")
                if prev == b"\r" and chunk[:1] == b"\n":
                    n_crlf += 1
                if sep is None:
                    plain = plain and b"\t" not in chunk
                elif b'"' in chunk or not chunk.isascii() or any(bytes([c]) in chunk for c in range(0x1C, 0x20)):
                    return False, False  # CSV that is not plain goes to the exact reader
                prev = chunk[-1:]
    except OSError:
        return False, False
    return plain, n_cr == n_crlf


def _load(path):
    """File bytes without a UTF-8 BOM, or None if unreadable."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return data


def _normalise_whitespace(data: bytes) -> bytes:
    """One ASCII space between fields, none at line starts and ends (tabs count as spaces)."""
    if b"\t" in data:
        data = data.replace(b"\t", b" ")
    while b"  " in data:
        data = data.replace(b"  ", b" ")
    if b" \n" in data:
        data = data.replace(b" \n", b"\n")
    if b" \r\n" in data:
        data = data.replace(b" \r\n", b"\r\n")
    if b"\n " in data:
        data = data.replace(b"\n ", b"\n")
    if data.startswith(b" "):
        data = data[1:]
    if data.endswith(b" "):
        data = data[:-1]
    return data


def read_table(path, n_fields: int | None, *, sep: str | None = None, min_fields: int = 1):
    """The columns of a delimited text file as Arrow string arrays, or None (-> exact reader).

    Parameters
    ----------
    path : path
    n_fields : int or None
        Required number of fields on every line; None accepts any common count >= ``min_fields``.
    sep : str or None
        None: runs of ASCII spaces/tabs separate fields. A character: CSV without quoting; fields are
        stripped of white space and rows whose fields are all blank are dropped.
    min_fields : int

    Returns
    -------
    list of pyarrow.ChunkedArray (one per column, type string) or None
    """
    try:
        pa, pc, pcsv = _pa()
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        return None
    try:
        regular = Path(path).is_file()
    except (OSError, ValueError):
        regular = False
    if not regular:  # a pipe or /dev/stdin can be read once only: the exact reader reads it
        return None
    plain, ok = _scan(path, sep)
    if not ok:
        return None
    cols = _parse(path, sep, plain, n_fields, min_fields)
    if cols is None and sep is None and plain:
        # a run of spaces, or spaces at a line's start or end: parse again from single-spaced text
        cols = _parse(path, sep, False, n_fields, min_fields)
    return cols


def _parse(path, sep, plain, n_fields, min_fields):
    pa, pc, pcsv = _pa()
    if plain:
        source = str(path)
    else:  # whitespace file with tabs or runs of spaces: normalise to single spaces in memory
        data = _load(path)
        if data is None:
            return None
        source = pa.py_buffer(_normalise_whitespace(data))
        del data
    delim = " " if sep is None else sep
    try:
        table = pcsv.read_csv(
            source,
            read_options=pcsv.ReadOptions(autogenerate_column_names=True, use_threads=True,
                                          block_size=1 << 24),
            parse_options=pcsv.ParseOptions(delimiter=delim, quote_char=False, double_quote=False,
                                            escape_char=False, newlines_in_values=False,
                                            ignore_empty_lines=True),
            convert_options=pcsv.ConvertOptions(check_utf8=True, column_types={f"f{i}": pa.string() for i in range(_MAX_FIELDS)}, strings_can_be_null=False,
                                                null_values=[], true_values=[], false_values=[],
                                                auto_dict_encode=False, include_columns=None,
                                                timestamp_parsers=[]),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, UnicodeDecodeError, OSError):
        return None
    del source
    if n_fields is not None and table.num_columns != n_fields:
        return None
    if table.num_columns < min_fields or table.num_rows == 0:
        return None
    if table.num_columns > _MAX_FIELDS:
        return None
    cols = list(table.columns)
    if sep is None:
        for c in cols:
            if pc.any(pc.equal(pc.binary_length(c), 0)).as_py():
                return None  # an empty field: two separators in a row
    if sep is not None:
        cols = [pc.utf8_trim_whitespace(c) for c in cols]
        blank = None
        for c in cols:
            e = pc.equal(pc.binary_length(c), 0)
            blank = e if blank is None else pc.and_(blank, e)
        if pc.any(blank).as_py():
            keep = pc.invert(blank)
            cols = [pc.filter(c, keep) for c in cols]
            if len(cols[0]) == 0:
                return None
    return cols


def release_memory() -> None:
    """Hand memory Arrow no longer uses back to the system (its pool keeps freed pages otherwise)."""
    pa = _pa()[0]
    pa.default_memory_pool().release_unused()


def scores_from_strings(col) -> np.ndarray | None:
    """float64 scores of an Arrow string column under the readers' number rule, or None (-> exact reader)."""
    pa, pc, _ = _pa()
    if not pc.all(pc.match_substring_regex(col, _NUMBER_RE2)).as_py():
        return None
    try:
        v = pc.cast(col, pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    out = np.array(v.to_numpy(), dtype=np.float64)  # owned by NumPy: Arrow's pool can give its pages back
    del v
    inf = np.isinf(out)
    if inf.any():
        tok = pc.filter(col, pa.array(inf))
        if not pc.all(pc.match_substring_regex(tok, "[iI]")).as_py():
            return None  # a finite-looking number overflowed
    zero = out == 0.0
    if zero.any():
        tok = pc.filter(col, pa.array(zero))
        if pc.any(pc.match_substring_regex(tok, _NONZERO_MANTISSA_RE2)).as_py():
            return None  # a nonzero number underflowed to 0
    return out


def ascii_bytes(col) -> bool:
    """True if every value of the Arrow string column is ASCII."""
    _, pc, _ = _pa()
    return bool(pc.all(pc.string_is_ascii(col)).as_py()) if len(col) else True


def strings_to_numpy(col) -> np.ndarray:
    """A NumPy ``str`` array of an Arrow string column; without a Python object per value when ASCII."""
    pa, pc, _ = _pa()
    n = len(col)
    if n == 0:
        return np.array([], dtype=str)
    if not ascii_bytes(col):
        return np.asarray(col.to_numpy(zero_copy_only=False), dtype=str)
    width = max(1, int(pc.max(pc.binary_length(col)).as_py()))
    if max(len(c) for c in col.chunks) * width >= 2**31 - 1:  # padded chunk beyond 32-bit offsets
        return np.asarray(col.to_numpy(zero_copy_only=False), dtype=str)
    out = np.empty(n, dtype=f"S{width}")
    pos = 0
    for chunk in pc.utf8_rpad(col, width=width, padding="\x00").chunks:
        m = len(chunk)
        if m == 0:
            continue
        start = int(np.frombuffer(chunk.buffers()[1], dtype=np.int32, count=chunk.offset + 1)[chunk.offset])
        out[pos:pos + m] = np.frombuffer(chunk.buffers()[2], dtype=f"S{width}", count=m, offset=start)
        pos += m
    return out.astype(f"U{width}")


def plain_ascii(col) -> bool:
    """ASCII without vertical tab, form feed or information separators (all white space to ``str.split``)."""
    _, pc, _ = _pa()
    return ascii_bytes(col) and not pc.any(pc.match_substring_regex(col, "[\\x0b\\x0c\\x1c-\\x1f]")).as_py()


def line_numbers(path, n_rows: int) -> np.ndarray | None:
    """Lines 1..n_rows if the file has no blank line (so row i is line i + 1); None otherwise."""
    n_nl = 0
    last = b""
    try:
        with open(path, "rb") as fh:
            while True:
                chunk = fh.read(_CHUNK)
                if not chunk:
                    break
                n_nl += chunk.count(b"\n")
                last = chunk[-1:]
    except OSError:
        return None
    n_lines = n_nl + (1 if last not in (b"", b"\n") else 0)
    return np.arange(1, n_rows + 1) if n_lines == n_rows else None
