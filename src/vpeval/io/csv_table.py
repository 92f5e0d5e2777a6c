"""CSV tables with a header, read by column name (the rule of every CSV table vpeval reads).

Columns are found by their header name, never by position: a table with its columns in another order reads the
same. A header with a column name twice, a column missing, or (for tables whose columns are all defined) a column
vpeval does not know is an error naming the file's header line; so is a row with another number of fields than
the header (a ragged row), and, when the table has a key column, an empty or repeated key. The file is UTF-8; a
byte-order mark at its start (as spreadsheet programs write) is skipped; LF and CRLF line ends alike; blank lines
are skipped; fields are stripped of surrounding white space. Line numbers are the file's (a quoted field may
span lines: a row is named by its first line).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

from ..errors import InputFileError
from .files import read_utf8

__all__ = ["read_named_csv"]


def _rows(path: Path, text: str):
    """(first line, stripped fields) of every non-blank CSV row."""
    reader = csv.reader(io.StringIO(text, newline=""))
    start = 1
    try:
        for row in reader:
            if any(c.strip() for c in row):
                yield start, [c.strip() for c in row]
            start = reader.line_num + 1
    except csv.Error as exc:
        raise InputFileError(path, reader.line_num, f"not readable as CSV ({exc})") from None


def read_named_csv(path, columns: Sequence[str], *, optional: Sequence[str] = (), others: bool = False,
                   key: str | None = None) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """The header and rows of a CSV table, each row a dict column name -> field (module docstring).

    Parameters
    ----------
    path : path-like
    columns : sequence of str
        Columns the header must have (in any order).
    optional : sequence of str
        Columns it may have.
    others : bool, default False
        Whether other columns are allowed (tables open to extra columns, such as metadata); they are then in
        the rows too. False: a column outside ``columns`` and ``optional`` is an error.
    key : str, optional
        A column of ``columns`` whose value names the row: an empty or repeated value is an error (naming the
        line of the first).

    Returns
    -------
    header : list of str
        The column names in file order.
    rows : list of (int, dict)
        (line, row) in file order; empty when the file has only its header.

    Raises
    ------
    InputFileError
        Unreadable or non-UTF-8 file, no header, an empty, repeated, missing or unknown column name, a ragged
        row, an empty or repeated key; with the file and line.
    """
    path = Path(path)
    rows = _rows(path, read_utf8(path))
    expected = ",".join(columns) + "".join(f"[,{c}]" for c in optional) + (",..." if others else "")
    try:
        hline, header = next(rows)
    except StopIteration:
        raise InputFileError(path, None, f"empty file; expected the header {expected}") from None
    seen: dict[str, int] = {}
    for i, name in enumerate(header):
        if not name:
            raise InputFileError(path, hline, f"column {i + 1} of the header has no name; expected {expected}")
        if name in seen:
            raise InputFileError(path, hline, f"column {name!r} appears twice in the header (columns {seen[name] + 1}"
                                 f" and {i + 1}); every column name must be unique")
        seen[name] = i
    missing = [c for c in columns if c not in seen]
    if missing:
        raise InputFileError(path, hline, f"missing column(s) {', '.join(map(repr, missing))} in the header; expected "
                             f"{expected} (in any order)")
    if not others:
        unknown = [c for c in header if c not in columns and c not in optional]
        if unknown:
            raise InputFileError(path, hline, f"unknown column(s) {', '.join(map(repr, unknown))} in the header; "
                                 f"expected {expected} (in any order)")
    out, first = [], {}
    for line, fields in rows:
        if len(fields) != len(header):
            raise InputFileError(path, line, f"expected {len(header)} fields ({','.join(header)}), got "
                                 f"{len(fields)}")
        row = dict(zip(header, fields))
        if key is not None:
            k = row[key]
            if not k:
                raise InputFileError(path, line, f"empty {key}")
            if k in first:
                raise InputFileError(path, line, f"{key} {k!r} is listed again (first on line {first[k]}); every "
                                     "row must have its own")
            first[k] = line
        out.append((line, row))
    return header, out
