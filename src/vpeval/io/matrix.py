"""1-to-N score matrices: every probe scored against every enrolled speaker.

Formats read
------------
Long table (CSV with a header line, or Parquet), one row per (enrolled speaker, probe) pair::

    enroll_spk,trial_spk,trial_id,score
    1688,1688,1688-142285-0000,0.83
    1998,1688,1688-142285-0000,0.12
    ...

``enroll_spk`` is the enrolled speaker, ``trial_id`` the probe (utterance), ``trial_spk`` the probe's
true speaker (the same on every row of one probe), ``score`` a number (higher = more similar; ``inf``
allowed, NaN not). Every probe must be scored against every enrolled speaker exactly once (the enrolled
set is the set of ``enroll_spk`` values).

Kaldi / VoicePrivacy key + scores (two whitespace-separated files over the same pairs)::

    key:     <enroll_spk> <trial_id> target|nontarget
    scores:  <enroll_spk> <trial_id> <score>

The probe's speaker is the enrolled speaker marked ``target`` for it; a probe with no ``target`` pair has
a speaker who is not enrolled.

Closed set: a probe whose speaker is not enrolled has no true column. That is an error unless
``drop_unenrolled=True``, which drops such probes and reports how many in ``ScoreMatrix.n_dropped``.

Rows of the matrix are probes sorted by id, columns enrolled speakers sorted by id, so the result does
not depend on the order of the input lines. Line numbers in errors are 1-based file lines (the CSV
header is line 1); for Parquet and in-memory tables they are 1-based row numbers, marked as such.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InputFileError
from . import _fast
from .numbers import NumberSyntaxError, parse_number

__all__ = ["ScoreMatrix", "score_matrix_from_table", "read_score_matrix", "read_kaldi_score_matrix",
           "require_finite_scores"]

COLUMNS = ("enroll_spk", "trial_spk", "trial_id", "score")
_SHOW = 5  # how many offending items an error message lists


@dataclass(frozen=True)
class ScoreMatrix:
    """Probe x enrolled-speaker scores with identities.

    Attributes
    ----------
    scores : ndarray of shape (n_probes, N), float64
    probe_id : ndarray of shape (n_probes,), str
    probe_speaker : ndarray of shape (n_probes,), str
        True speaker of each probe; must be one of ``speaker_ids``.
    speaker_ids : ndarray of shape (N,), str, unique
        Enrolled speakers (columns).
    n_dropped : int
        Probes dropped because their speaker was not enrolled (only with ``drop_unenrolled=True``).
    true_index : ndarray of shape (n_probes,), intp (derived)
        Column of each probe's speaker.

    Raises
    ------
    InputFileError
        Shapes that disagree, NaN scores, duplicate ids, a probe speaker not among ``speaker_ids``.
    """

    scores: np.ndarray
    probe_id: np.ndarray
    probe_speaker: np.ndarray
    speaker_ids: np.ndarray
    n_dropped: int = 0
    true_index: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        src = "<ScoreMatrix>"
        scores = np.asarray(self.scores, dtype=np.float64)
        object.__setattr__(self, "scores", scores)
        for name in ("probe_id", "probe_speaker", "speaker_ids"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=str))
        if scores.ndim != 2 or 0 in scores.shape:
            raise InputFileError(src, None, f"scores must be a non-empty 2-D matrix, got shape {scores.shape}")
        n, n_cols = scores.shape
        for name, want in (("probe_id", n), ("probe_speaker", n), ("speaker_ids", n_cols)):
            if getattr(self, name).shape != (want,):
                raise InputFileError(src, None, f"{name} has shape {getattr(self, name).shape}, expected ({want},)")
        for name in ("probe_id", "speaker_ids"):
            u, c = np.unique(getattr(self, name), return_counts=True)
            if (c > 1).any():
                raise InputFileError(src, None, f"{name}: {_q(u[c > 1][0])} appears {int(c.max())} times")
        if np.isnan(scores).any():
            i, j = (int(v[0]) for v in np.nonzero(np.isnan(scores)))
            raise InputFileError(
                src, None, f"NaN score for probe {_q(self.probe_id[i])} vs speaker {_q(self.speaker_ids[j])}"
            )
        order = np.argsort(self.speaker_ids)
        pos = np.searchsorted(self.speaker_ids, self.probe_speaker, sorter=order)
        pos = np.minimum(pos, n_cols - 1)
        idx = order[pos]
        bad = self.speaker_ids[idx] != self.probe_speaker
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputFileError(
                src, None,
                f"{int(bad.sum())} probe(s) have a speaker that is not enrolled (first: probe "
                f"{_q(self.probe_id[i])}, speaker {_q(self.probe_speaker[i])}); the closed set needs every probe's "
                "speaker among the columns",
            )
        object.__setattr__(self, "true_index", idx.astype(np.intp))

    @property
    def n_probes(self) -> int:
        return int(self.scores.shape[0])

    @property
    def n_speakers(self) -> int:
        return int(self.scores.shape[1])


def _q(v) -> str:
    """Quote an id for messages (plain str repr, also for numpy strings)."""
    return repr(str(v))


class _Lines:
    """Maps 0-based data rows to what an error message calls them."""

    def __init__(self, source, n_rows, line_base, line_numbers):
        self.source = source
        if line_numbers is not None:
            self.lines = np.asarray(line_numbers)
        elif line_base is not None:
            self.lines = np.arange(n_rows) + line_base
        else:
            self.lines = None

    def loc(self, i: int) -> str:
        return f"row {i + 1}" if self.lines is None else f"line {int(self.lines[i])}"

    def fail(self, i: int, problem: str):
        if self.lines is None:
            raise InputFileError(self.source, None, f"row {i + 1}: {problem}")
        raise InputFileError(self.source, int(self.lines[i]), problem)


def score_matrix_from_table(
    table,
    *,
    drop_unenrolled: bool = False,
    source: str = "<table>",
    line_base: int | None = None,
    line_numbers=None,
) -> ScoreMatrix:
    """Build a :class:`ScoreMatrix` from a long table (pure: no file access).

    Parameters
    ----------
    table : pandas.DataFrame or mapping of column name -> 1-D array
        Columns ``enroll_spk, trial_spk, trial_id, score`` (extra columns are ignored).
    drop_unenrolled : bool
        Drop probes whose ``trial_spk`` is not among the ``enroll_spk`` values (counted in ``n_dropped``)
        instead of raising.
    source : str
        Name used in error messages (the file path when called by the readers).
    line_base : int, optional
        File line of data row 0 (2 for a CSV with a header); None reports 1-based row numbers.
    line_numbers : array_like of int, optional
        File line of every data row (overrides ``line_base``; for files with blank lines).

    Returns
    -------
    ScoreMatrix
        Probes sorted by id, speakers sorted by id.

    Raises
    ------
    InputFileError
        Missing column; empty id; a score that is not a number or is NaN; a probe whose ``trial_spk``
        differs between rows; a duplicate (enroll_spk, trial_id) pair; missing pairs (the first few listed
        with the count); a probe speaker who is not enrolled (unless ``drop_unenrolled``).

    Examples
    --------
    >>> sm = score_matrix_from_table({
    ...     "enroll_spk": ["a", "b", "a", "b"], "trial_spk": ["a", "a", "b", "b"],
    ...     "trial_id": ["u1", "u1", "u2", "u2"], "score": [0.9, 0.1, 0.3, 0.4]})
    >>> sm.scores.tolist(), sm.true_index.tolist()
    ([[0.9, 0.1], [0.3, 0.4]], [0, 1])
    """
    import pandas as pd

    columns = table if isinstance(table, pd.DataFrame) else dict(table)
    names = [str(c) for c in columns.columns] if isinstance(columns, pd.DataFrame) else [str(c) for c in columns]
    _no_duplicate_columns(source, None, names)
    missing = [c for c in COLUMNS if c not in names]
    if missing:
        raise InputFileError(source, None, f"missing column(s) {missing}; expected {list(COLUMNS)}")
    if isinstance(columns, dict) and not (all(_plain_array(columns[c], "U") for c in COLUMNS[:3])
                                          and _plain_array(columns["score"], "iuf")):
        columns = pd.DataFrame(columns)  # lists, Series, objects: pandas sorts out the types
    n_rows = len(columns[COLUMNS[0]])
    if n_rows == 0:
        raise InputFileError(source, None, "no score rows")
    where = _Lines(source, n_rows, line_base, line_numbers)
    ids = {}
    for c in ("enroll_spk", "trial_spk", "trial_id"):
        col = columns[c]
        if isinstance(col, np.ndarray):  # a str array (the bulk readers): no Python object per row
            null = np.zeros(col.shape, dtype=bool)
            arr = np.char.strip(col)
        else:
            null = col.isna().to_numpy()
            arr = col.astype(str).str.strip().to_numpy(dtype=str)
        empty = null | (np.char.str_len(arr) == 0)
        if empty.any():
            where.fail(int(np.flatnonzero(empty)[0]), f"empty {c}")
        ids[c] = arr
    raw = columns["score"]
    if isinstance(raw, np.ndarray):
        _exact_in_float64(source, raw, "score")
        score = raw.astype(np.float64, copy=False)
        raw_at = raw.__getitem__
    else:
        if pd.api.types.is_numeric_dtype(raw) and not pd.api.types.is_bool_dtype(raw):
            _exact_in_float64(source, raw.to_numpy(), "score")
        score = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
        raw_at = raw.iloc.__getitem__
    bad = np.isnan(score)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        where.fail(i, f"score {_q(raw_at(i))} is not a number (NaN is not allowed); "
              f"{int(bad.sum())} such row(s)")
    for i in np.flatnonzero(np.isfinite(score) & (np.abs(score) >= 2.0 ** 53)):  # text integers float64 rounds
        if isinstance(raw_at(i), str) and _inexact_integer(raw_at(i), float(score[i])):
            where.fail(int(i), f"score {_q(raw_at(i))} is an integer beyond 2**53, which float64 cannot hold "
                               "exactly; rescale the scores")

    speakers, e_code = np.unique(ids["enroll_spk"], return_inverse=True)
    probes, t_code, first_row = _unique_first(ids["trial_id"])
    n, n_cols = probes.size, speakers.size

    # One speaker per probe.
    probe_spk = ids["trial_spk"][first_row]
    clash = probe_spk[t_code] != ids["trial_spk"]
    if clash.any():
        i = int(np.flatnonzero(clash)[0])
        where.fail(i, f"probe {_q(ids['trial_id'][i])} has trial_spk {_q(ids['trial_spk'][i])} here but "
              f"{_q(probe_spk[t_code[i]])} at {where.loc(int(first_row[t_code[i]]))}")

    key = t_code.astype(np.int64) * n_cols + e_code
    seen = np.zeros(n * n_cols, dtype=bool)
    seen[key] = True
    n_cells = int(seen.sum())
    if n_cells < key.size:
        order = np.argsort(key, kind="stable")
        ks = key[order]
        dup = np.flatnonzero(ks[1:] == ks[:-1])
        i_first, i_again = int(order[dup[0]]), int(order[dup[0] + 1])
        where.fail(i_again,
              f"duplicate pair: speaker {_q(ids['enroll_spk'][i_again])} vs probe {_q(ids['trial_id'][i_again])} "
              f"was already scored at {where.loc(i_first)}; {key.size - n_cells} duplicate row(s) in all")
    if n_cells < n * n_cols:
        holes = np.flatnonzero(~seen)
        shown = ", ".join(
            f"{_q(probes[h // n_cols])} vs {_q(speakers[h % n_cols])} (probe first at "
            f"{where.loc(int(first_row[h // n_cols]))})"
            for h in holes[:_SHOW]
        )
        raise InputFileError(
            source, None,
            f"{holes.size} (probe, enrolled speaker) pair(s) have no score; every probe must be scored against "
            f"all {n_cols} enrolled speakers. First missing: {shown}",
        )
    del seen

    enrolled = np.isin(probe_spk, speakers)
    n_dropped = int((~enrolled).sum())
    if n_dropped and not drop_unenrolled:
        j = np.flatnonzero(~enrolled)
        shown = ", ".join(
            f"{_q(probes[p])} (speaker {_q(probe_spk[p])}, {where.loc(int(first_row[p]))})" for p in j[:_SHOW]
        )
        raise InputFileError(
            source, None,
            f"{n_dropped} probe(s) have a speaker who is not enrolled (closed-set linkage needs the true speaker "
            f"among the {n_cols} enroll_spk values): {shown}. Pass drop_unenrolled=True (CLI: --drop-unenrolled) "
            "to drop them",
        )
    if n_dropped == n:
        raise InputFileError(source, None, "no probe has an enrolled speaker; nothing left after dropping")

    mat = np.empty((n, n_cols), dtype=np.float64)
    mat[t_code, e_code] = score
    keep = enrolled
    return ScoreMatrix(mat[keep], probes[keep], probe_spk[keep], speakers, n_dropped=n_dropped)


def _no_duplicate_columns(source, line, names) -> None:
    """A column name given twice is an error (a reader would otherwise pick one, or rename the other)."""
    seen = set()
    for c in names:
        if c in seen:
            raise InputFileError(source, line, f"column {c!r} appears more than once in the header; "
                                 "every column name must be unique")
        seen.add(c)


def _utf8_error(path: Path) -> InputFileError | None:
    """The file:line error of a file that is not UTF-8 (None if it decodes)."""
    data = path.read_bytes()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return InputFileError(path, line, f"not UTF-8 text (byte {exc.start})")
    return None


def _parquet_columns(path: Path) -> list[str]:
    import pyarrow.parquet as pq

    with _fast.arrow_source(path) as src:
        return list(pq.read_schema(src).names)


def _read_parquet_table(path: Path):
    """A Parquet file as a pandas DataFrame, its header checked for a column name given twice.

    Raises
    ------
    InputFileError
        A duplicate column name, or a file pyarrow cannot read (it raises several types for bad files).
    """
    import pandas as pd

    try:
        _no_duplicate_columns(path, None, _parquet_columns(path))
        with _fast.arrow_source(path) as src:
            return pd.read_parquet(src)
    except InputFileError:
        raise
    except Exception as exc:  # pyarrow raises several types for corrupt files
        raise InputFileError(path, None, f"not a readable Parquet file ({exc})") from None


def _plain_array(col, kinds: str) -> bool:
    """A 1-D NumPy array of one of the dtype kinds (str ids, real scores), used as it is."""
    return isinstance(col, np.ndarray) and col.ndim == 1 and col.dtype.kind in kinds


def _unique_first(values: np.ndarray):
    """Sorted unique values, inverse codes, and the first row of each value."""
    uniq, first, inv = np.unique(values, return_index=True, return_inverse=True)
    return uniq, inv, first


def read_score_matrix(path, *, drop_unenrolled: bool = False) -> ScoreMatrix:
    """Read a 1-to-N long table (``.csv`` or ``.parquet``) into a :class:`ScoreMatrix`.

    Format and checks: module docstring and :func:`score_matrix_from_table`. Errors name the file and
    line (CSV, header = line 1) or row (Parquet).

    Raises
    ------
    InputFileError
    """
    import pandas as pd

    from .files import check_input_file

    path = Path(path)
    if not path.exists():
        raise InputFileError(path, None, "file does not exist")
    check_input_file(path, "a 1-to-N score table (.csv or .parquet)")
    if path.suffix.lower() in (".parquet", ".pq"):
        df = _read_parquet_table(path)
        _check_parquet_scores(path, df)
        return score_matrix_from_table(df, drop_unenrolled=drop_unenrolled, source=str(path), line_base=None)
    fast = _fast_long_csv(path)
    if fast is not None:
        return score_matrix_from_table(fast, drop_unenrolled=drop_unenrolled, source=str(path), line_base=2)
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
    except pd.errors.ParserError as exc:
        raise InputFileError(path, None, f"not a readable CSV table ({exc})") from None
    except pd.errors.EmptyDataError:
        raise InputFileError(path, 1, f"empty file; expected the header {','.join(COLUMNS)}") from None
    except UnicodeDecodeError:
        raise _utf8_error(path) from None
    _no_duplicate_columns(path, 1, _csv_header(path))
    df.columns = [str(c).strip() for c in df.columns]
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise InputFileError(path, 1, f"header lacks column(s) {missing}; expected {','.join(COLUMNS)}")
    empty_score = df["score"].str.strip() == ""
    if empty_score.any():
        i = int(np.flatnonzero(empty_score.to_numpy())[0])
        raise InputFileError(path, i + 2, "empty score")
    return score_matrix_from_table(df, drop_unenrolled=drop_unenrolled, source=str(path), line_base=2)


def _fast_long_csv(path: Path):
    """Bulk (pyarrow) columns of a plain long CSV table, or None (-> the pandas reader, which words errors).

    Plain: ASCII, no quotes, no blanks or tabs anywhere (so no field needs stripping), no blank line, a header
    with every column of :data:`COLUMNS` once, every score a plain number.
    """
    with open(path, "rb") as fh:
        head = fh.read(1 << 16)
    if b" " in head or b"\t" in head:
        return None
    cols = _fast.read_table(path, None, sep=",")
    if cols is None:
        return None
    header = [c[0].as_py() for c in cols]
    if len(set(header)) != len(header) or any(c not in header for c in COLUMNS):
        return None
    if _fast.line_numbers(path, len(cols[0])) is None:
        return None
    pc = _fast._pa()[1]
    picked = {c: cols[header.index(c)].slice(1) for c in COLUMNS}
    if any(pc.any(pc.match_substring_regex(v, "[ \\t]")).as_py() for v in picked.values()):
        return None
    score = _fast.scores_from_strings(picked["score"])
    if score is None:
        return None
    return {c: _fast.strings_to_numpy(picked[c]) for c in COLUMNS[:3]} | {"score": score}


def _csv_header(path: Path) -> list[str]:
    """The raw header names of a CSV table (before any renaming of repeats), stripped."""
    import csv

    with open(path, encoding="utf-8-sig", newline="") as fh:
        for row in csv.reader(fh):
            if row:
                return [c.strip() for c in row]
    return []


def _check_parquet_scores(path: Path, df) -> None:
    """Parquet scores must have a numeric type; integers must be exact in float64."""
    import pandas as pd

    if "score" not in df.columns:
        return
    col = df["score"]
    if pd.api.types.is_bool_dtype(col) or not pd.api.types.is_numeric_dtype(col):
        raise InputFileError(path, None, f"score column has type {col.dtype}; scores must have a numeric type "
                             "(write them as float64)")
    _exact_in_float64(path, col.to_numpy(), "score")


def _exact_in_float64(source, values: np.ndarray, name: str) -> None:
    """Refuse integers (or long doubles) beyond 2**53, which float64 would round."""
    values = np.asarray(values)
    if values.dtype.kind in "iu" and values.size:
        if values.dtype.kind == "u":
            big = values > np.uint64(2 ** 53)
        else:
            big = (values > 2 ** 53) | (values < -(2 ** 53))
        if big.any():
            r = int(np.flatnonzero(big)[0])
            raise InputFileError(source, None, f"row {r + 1}: {name} {values[r]} is an integer beyond 2**53, which "
                                 "float64 cannot hold exactly; rescale the scores")
    elif values.dtype.kind == "f" and values.dtype.itemsize > 8:
        conv = values.astype(np.float64)
        lost = np.isfinite(values) & (conv.astype(values.dtype) != values)
        if lost.any():
            r = int(np.flatnonzero(lost)[0])
            raise InputFileError(source, None, f"row {r + 1}: {name} {values[r]!r} is not exactly a float64; "
                                 "scores are read as float64")


# An integer written without a point or an exponent: beyond 2**53 float64 would round it (as Parquet's integer
# columns, such scores are refused rather than silently changed).
_INTEGER = re.compile(r"[+-]?[0-9]+")


def _inexact_integer(token: str, value: float) -> bool:
    """Whether the score text ``token`` is an integer beyond 2**53 in magnitude, which float64 (its parsed
    ``value``) cannot hold exactly (text score readers refuse it)."""
    token = token.strip()
    return abs(value) >= 2.0 ** 53 and bool(_INTEGER.fullmatch(token)) and abs(int(token)) > 2 ** 53


def _refuse_inexact_integers(path, tokens, values: np.ndarray, lines) -> None:
    """Refuse score tokens that are integers beyond 2**53 (float64 rounds them), naming the file and line."""
    for i in np.flatnonzero(np.isfinite(values) & (np.abs(values) >= 2.0 ** 53)):
        if _inexact_integer(str(tokens[i]), float(values[i])):
            raise InputFileError(path, int(lines[i]), f"score {str(tokens[i])!r} is an integer beyond 2**53, which "
                                 f"float64 cannot hold exactly (it would be read as {values[i]:.17g}); rescale the "
                                 "scores")


def require_finite_scores(sm: ScoreMatrix, path, key=None, what: str = "this analysis") -> None:
    """Raise an error naming the file and line of the first infinite score of ``sm`` (if any).

    A second, narrow pass over the file finds the line of that (probe, speaker) cell; for Parquet the row.
    """
    inf = np.isinf(sm.scores)
    if not inf.any():
        return
    i, j = (int(v[0]) for v in np.nonzero(inf))
    probe, spk = str(sm.probe_id[i]), str(sm.speaker_ids[j])
    path = Path(path)
    line, row = _locate_cell(path, key is not None, probe, spk)
    where = "" if row is None else f"row {row}: "
    raise InputFileError(
        path, line,
        f"{where}score of probe {_q(probe)} vs speaker {_q(spk)} is {sm.scores[i, j]}; {what} needs finite "
        f"scores ({int(inf.sum())} infinite score(s) in all)",
    )


def _locate_cell(path: Path, kaldi: bool, probe: str, spk: str):
    """(line, row) of the (speaker, probe) cell in a table file; row only for Parquet."""
    if kaldi:
        with open(path, encoding="utf-8") as fh:
            for lineno, text in enumerate(fh, 1):
                parts = text.split()
                if len(parts) == 3 and parts[0] == spk and parts[1] == probe:
                    return lineno, None
        return None, None
    if path.suffix.lower() in (".parquet", ".pq"):
        import pandas as pd

        with _fast.arrow_source(path) as src:
            df = pd.read_parquet(src, columns=["enroll_spk", "trial_id"])
        hit = (df["enroll_spk"].astype(str).str.strip() == spk) & (df["trial_id"].astype(str).str.strip() == probe)
        return None, int(np.flatnonzero(hit.to_numpy())[0]) + 1
    import csv

    with open(path, encoding="utf-8-sig", newline="") as fh:
        reader = csv.reader(fh, skipinitialspace=True)
        header = None
        for row in reader:
            if not row:
                continue
            if header is None:
                header = [c.strip() for c in row]
                e, t = header.index("enroll_spk"), header.index("trial_id")
                continue
            if len(row) > max(e, t) and row[e].strip() == spk and row[t].strip() == probe:
                return reader.line_num, None
    return None, None


def _read_three_columns(path: Path, what: str):
    if not path.exists():
        raise InputFileError(path, None, "file does not exist")
    fast = _fast_three_columns(path, what == "score")
    if fast is not None:
        return fast
    err = _utf8_error(path)
    if err is not None:
        raise err
    a, b, c, lines = [], [], [], []
    with open(path, encoding="utf-8") as fh:
        for lineno, text in enumerate(fh, 1):
            parts = text.split()
            if not parts:
                continue
            if len(parts) != 3:
                raise InputFileError(path, lineno, f"expected 3 fields '<enroll> <test> <{what}>', got {len(parts)}")
            a.append(parts[0])
            b.append(parts[1])
            c.append(parts[2])
            lines.append(lineno)
    if not a:
        raise InputFileError(path, None, "no trials")
    return np.array(a, dtype=str), np.array(b, dtype=str), c, np.array(lines)


def _fast_three_columns(path: Path, numeric: bool):
    """Bulk (pyarrow) reading of a three-column file without blank lines; None -> the exact reader.

    Only ASCII fields without the characters Python's ``str.split`` also splits on (vertical tab, form feed,
    information separators) take this path, so the fields are the exact reader's.
    """
    cols = _fast.read_table(path, 3)
    if cols is None or not all(_fast.plain_ascii(c) for c in cols):
        return None
    lines = _fast.line_numbers(path, len(cols[0]))
    if lines is None:
        return None
    if numeric:
        third = _fast.scores_from_strings(cols[2])
        if third is None:
            return None
    else:
        third = _fast.strings_to_numpy(cols[2])
    return _fast.strings_to_numpy(cols[0]), _fast.strings_to_numpy(cols[1]), third, lines


def read_kaldi_score_matrix(key_path, scores_path, *, drop_unenrolled: bool = False) -> ScoreMatrix:
    """Read a Kaldi/VoicePrivacy key and score file covering every (enrolled speaker, probe) pair.

    key lines ``<enroll_spk> <trial_id> target|nontarget``; score lines ``<enroll_spk> <trial_id> <score>``
    (module docstring). The probe's speaker is its ``target`` pair's enrolled speaker.

    Raises
    ------
    InputFileError
        Malformed lines, unknown labels, a probe with two ``target`` pairs, pairs in one file but not the
        other (first few listed), duplicates, missing pairs, unenrolled probes (unless ``drop_unenrolled``);
        errors name the file and line.
    """
    from .files import check_input_file

    key_path, scores_path = Path(key_path), Path(scores_path)
    check_input_file(key_path, "a Kaldi key file (enroll_spk trial_id target|nontarget)")
    check_input_file(scores_path, "a Kaldi score file (enroll_spk trial_id score)")
    ke, kt, klab, kline = _read_three_columns(key_path, "target|nontarget")
    se, st, sval, sline = _read_three_columns(scores_path, "score")
    labels = np.array(klab, dtype=str)
    unknown = ~np.isin(labels, ["target", "nontarget"])
    if unknown.any():
        i = int(np.flatnonzero(unknown)[0])
        raise InputFileError(key_path, int(kline[i]), f"label {_q(labels[i])}; expected 'target' or 'nontarget'")
    if not isinstance(sval, np.ndarray):  # the exact reader's text (the bulk reader's are checked numbers)
        for i, v in enumerate(sval):  # the one number syntax (NumPy would read '1_0' as 10, like float)
            try:
                parse_number(v, allow_inf=True)
            except NumberSyntaxError as exc:
                raise InputFileError(scores_path, int(sline[i]), f"score {exc}") from None
    scores = np.array(sval, dtype=np.float64)
    nan = np.isnan(scores)
    if nan.any():
        i = int(np.flatnonzero(nan)[0])
        raise InputFileError(scores_path, int(sline[i]), "score is NaN")
    _refuse_inexact_integers(scores_path, sval, scores, sline)

    # Key duplicates, then the probe speaker from the target pairs.
    kkey = np.char.add(np.char.add(ke, "\x1f"), kt)
    uk, kfirst, kcount = np.unique(kkey, return_index=True, return_counts=True)
    if (kcount > 1).any():
        dup = uk[kcount > 1][0]
        rows = np.flatnonzero(kkey == dup)
        raise InputFileError(key_path, int(kline[rows[1]]), f"duplicate pair (first at line {int(kline[rows[0]])})")
    tgt = labels == "target"
    tprobe, tcount = np.unique(kt[tgt], return_counts=True)
    if (tcount > 1).any():
        p = tprobe[tcount > 1][0]
        rows = np.flatnonzero(tgt & (kt == p))
        raise InputFileError(
            key_path, int(kline[rows[1]]),
            f"probe {_q(p)} is marked target for two enrolled speakers (also line {int(kline[rows[0]])})",
        )
    spk_of = dict(zip(kt[tgt].tolist(), ke[tgt].tolist()))

    # Scores must cover exactly the key's pairs.
    skey = np.char.add(np.char.add(se, "\x1f"), st)
    in_key = np.isin(skey, uk)
    if not in_key.all():
        j = np.flatnonzero(~in_key)
        raise InputFileError(
            scores_path, int(sline[j[0]]),
            f"pair not in the key {key_path}; {j.size} such line(s) (first few at lines "
            f"{[int(sline[x]) for x in j[:_SHOW]]})",
        )
    in_scores = np.isin(uk, skey)
    if not in_scores.all():
        j = np.flatnonzero(~in_scores)
        raise InputFileError(
            key_path, int(kline[kfirst[j[0]]]),
            f"pair has no score in {scores_path}; {j.size} such pair(s) (first few at lines "
            f"{[int(kline[kfirst[x]]) for x in j[:_SHOW]]})",
        )
    # A probe without a target pair has a speaker who is not enrolled; the placeholder contains spaces, so
    # it cannot equal a (whitespace-free) Kaldi speaker id.
    trial_spk = np.array([spk_of.get(t, "<no target pair in the key>") for t in st.tolist()], dtype=str)
    table = {"enroll_spk": se, "trial_spk": trial_spk, "trial_id": st, "score": scores}
    return score_matrix_from_table(
        table, drop_unenrolled=drop_unenrolled, source=str(scores_path), line_numbers=sline
    )
