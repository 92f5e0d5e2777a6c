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

import contextlib
import math
import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

__all__ = ["read_table", "scores_from_strings", "strings_to_numpy", "ascii_bytes", "chunk_bytes", "one_byte_flags",
           "has_empty"]

_NONZERO_MANTISSA = re.compile(r"[+-]?[0-9.]*[1-9]")  # a mantissa digit 1-9 before any exponent
_INF_WORD = re.compile(r"[+-]?[iI]")  # "inf"/"infinity", not a number that overflowed
_MAX_FIELDS = 256  # wider files take the exact reader


def _map_threads(fn, items):
    """``[fn(x) for x in items]``, run on up to ``os.cpu_count()`` threads when there is more than one item."""
    items = list(items)
    workers = min(len(items), os.cpu_count() or 1)
    if workers < 2:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(workers, thread_name_prefix="vpeval-read") as ex:
        return list(ex.map(fn, items))


def _pa():
    """pyarrow and the two modules the reader uses. Under ``ulimit -v`` without room for pyarrow's import (it maps
    about 165 MiB; :data:`_AS_IMPORT`), MemoryError instead: the import's C++ start-up aborted (exit 134) or
    crashed (exit 139) there, where the command cannot report it (a find at 360-380 MiB)."""
    import sys

    if "pyarrow.csv" not in sys.modules:
        left = address_space_left()
        if left is not None and left < _AS_IMPORT:
            raise MemoryError(f"{left / 2**20:.0f} MiB of address space left under ulimit -v; importing pyarrow "
                              f"takes about {_AS_IMPORT / 2**20:.0f} MiB")
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    return pa, pc, pcsv


_CHUNK = 1 << 24


def _file_chunks(path):
    """The file's bytes in chunks of :data:`_CHUNK` (raises OSError as ``open``/``read`` do)."""
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            yield chunk


#: A number rounds to 0.0 only below 2.5e-324 (half the smallest subnormal). Written with fewer than this many
#: zeros after its point and an exponent of at most two digits (leading zeros aside: ``e-99`` at most) it is at
#: least 1e-220 * 1e-99 = 1e-319: a file without a run of this many ``0`` bytes and without a longer exponent
#: holds no nonzero number that underflows (a margin below the 223 zeros the bound allows).
_UNDERFLOW_ZEROS = 220
#: Bytes at a chunk's end whose exponents are read with the next chunk (an ``e`` there may continue in it).
_EXP_CARRY = 16


def _long_exponent(buf: bytes, final: bool) -> bool:
    """Whether an ``e``/``E`` in ``buf`` starts an exponent of three or more digits after its sign and leading
    zeros (``e-400``, ``E+0123``), one vectorised pass. Where ``buf`` ends before that is decided, the answer is
    True (undecided counts as long); ``final`` False: the last :data:`_EXP_CARRY` bytes are not read (the caller
    passes them again with the next chunk)."""
    a = np.frombuffer(buf, dtype=np.uint8)
    n = a.size
    pos = np.flatnonzero((a == 0x65) | (a == 0x45))
    if not final:
        pos = pos[pos < n - _EXP_CARRY]
    if pos.size == 0:
        return False
    j = pos + 1
    if (j + 2 >= n).any():
        return True
    j = j + ((a[j] == 0x2B) | (a[j] == 0x2D))
    while True:  # the exponent's leading zeros
        if (j + 2 >= n).any():
            return True
        z = a[j] == 0x30
        if not z.any():
            break
        j = j + z
    digit = [(a[j + d] >= 0x30) & (a[j + d] <= 0x39) for d in range(3)]
    return bool((digit[0] & digit[1] & digit[2]).any())


def _scan(path, sep, numeric=False):
    """Read the file in chunks: (plain, ok, numeric, zeros_exact). ``ok`` False: a lone CR, a NUL byte or an
    unreadable file (-> exact reader). ``numeric`` (computed only when asked): every byte is one of
    :data:`_SCORE_BYTES` or white space. ``zeros_exact`` (only with ``numeric``): no exponent of three or more
    digits (:func:`_long_exponent`) and no run of :data:`_UNDERFLOW_ZEROS` zeros, so every number the file holds
    that parses to 0.0 is written as a zero.

    ``plain`` False: a whitespace file with tabs, which pyarrow cannot split as it is (runs of spaces and
    leading or trailing spaces show up as empty fields after parsing, see :func:`read_table`); or a CSV file
    that is not ASCII or holds quotes or information-separator bytes (then ``ok`` is False too). Memory: one
    chunk; only memchr-speed searches.
    """
    plain = True
    prev = b""
    n_cr = n_crlf = 0
    only_numbers = zeros_exact = numeric
    tail = b""  # the end of the previous chunk, for a run of zeros across two chunks
    carry = b""  # its last bytes, whose exponents are read with this chunk
    zeros = b"0" * _UNDERFLOW_ZEROS
    try:
        for chunk in _file_chunks(path):
            if b"\0" in chunk:  # binary (or sparse) data: the exact reader names the byte at once
                return False, False, False, False
            if b"\r" in chunk:
                n_cr += chunk.count(b"\r")
                n_crlf += chunk.count(b"\r\n")
            if prev == b"\r" and chunk[:1] == b"\n":
                n_crlf += 1
            if only_numbers and chunk.translate(None, _NUMERIC_FILE_BYTES):
                only_numbers = False
            if only_numbers and zeros_exact and (zeros in tail + chunk[:len(zeros)] or zeros in chunk or (
                    any(e in chunk or e in carry for e in (b"e", b"E")) and _long_exponent(carry + chunk, False))):
                zeros_exact = False
            tail, carry = chunk[-len(zeros):], (carry + chunk)[-_EXP_CARRY:]
            if sep is None:
                plain = plain and b"\t" not in chunk
            elif b'"' in chunk or not chunk.isascii() or any(bytes([c]) in chunk for c in range(0x1C, 0x20)):
                return False, False, False, False  # CSV that is not plain goes to the exact reader
            prev = chunk[-1:]
    except OSError:
        return False, False, False, False
    if only_numbers and zeros_exact and _long_exponent(carry, final=True):
        zeros_exact = False
    return plain, n_cr == n_crlf, only_numbers, only_numbers and zeros_exact


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


def read_table(path, n_fields: int | None, *, sep: str | None = None, min_fields: int = 1, float_cols=()):
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
    float_cols : sequence of int
        Whitespace files only: when every byte of the file is one of :data:`_SCORE_BYTES` or white space,
        these columns are parsed as float64 by the CSV reader itself (Arrow's parser; the same values as its
        string-to-double cast, see :func:`scores_from_strings`), which spares the column of strings. They are
        returned so only when every 0.0 among them is a zero as written: a file with an exponent or a long run
        of zeros (see :data:`_UNDERFLOW_ZEROS`) whose float columns hold a 0.0 is parsed as strings instead,
        whose text tells an underflow.

    Returns
    -------
    list of pyarrow.ChunkedArray (one per column, type string, or float64 for ``float_cols``) or None
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
    plain, ok, numeric, zeros_exact = _scan(path, sep, numeric=bool(float_cols) and sep is None)
    if not ok:
        return None
    if numeric:
        cols = _parse(path, sep, plain, n_fields, min_fields, float_cols)
        if cols is not None and (zeros_exact or not any(_has_zero(cols[i]) for i in float_cols if i < len(cols))):
            return cols
    cols = _parse(path, sep, plain, n_fields, min_fields)
    if cols is None and sep is None and plain:
        # a run of spaces, or spaces at a line's start or end: parse again from single-spaced text
        cols = _parse(path, sep, False, n_fields, min_fields)
    return cols


def _address_space_limited() -> bool:
    """:func:`vpeval.jit.address_space_limited`. pyarrow then aborts the process when an allocation of its default
    pool (mimalloc, which reserves address space in large segments) fails inside the reader (a tester: exit 134
    under 0.6 GB), or cannot start its threads: :func:`_parse` then reads in the calling thread with the system
    allocator (passed to this read: no process-wide setting), where a failure is a MemoryError the command
    reports (exit 4)."""
    from ..jit import address_space_limited

    return address_space_limited()


#: Address space Arrow's CSV reader took per byte of file under ``ulimit -v`` (system allocator, one thread), with a
#: margin: a 34 MB file aborted the process with 244 MB left and was read with 394 MB (a breaker's 3e6-line file).
#: The base was 64 MiB until scipy's BLAS came to be loaded before the read under a limit (vpeval.cli.memory
#: .load_scipy_blas): then a 1e6-line file passed the check at 590 MiB and Arrow aborted once in a loaded test run
#: (a failed 11 MB malloc); 128 MiB leaves room for the address space's fragments.
_AS_PER_FILE_BYTE, _AS_BASE = 9, 128 << 20


#: Address space (bytes) importing pyarrow and its CSV and compute modules maps, with room to spare (measured:
#: 165 MiB on this project's machine).
_AS_IMPORT = 192 << 20


def address_space_left() -> int | None:
    """Bytes of address space left under ``ulimit -v``: the limit less this process's ``VmSize`` (Linux
    ``/proc/self/status``); None without a limit or where either number is unknown."""
    import resource

    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit == resource.RLIM_INFINITY:
        return None
    try:
        with open("/proc/self/status") as fh:
            vm = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
    except (OSError, StopIteration, ValueError, IndexError):
        return None
    return limit - vm


def _check_address_space(n_bytes: int) -> None:
    """Raise MemoryError when the address space left under ``ulimit -v`` (:func:`address_space_left`) is below
    what reading ``n_bytes`` of file takes (:data:`_AS_PER_FILE_BYTE`); the command then ends with its
    out-of-memory line (exit 4) instead of Arrow's abort (exit 134). Nothing where either number is unknown."""
    left = address_space_left()
    if left is None:
        return
    if left < _AS_PER_FILE_BYTE * n_bytes + _AS_BASE:
        raise MemoryError(f"{left / 2**20:.0f} MiB of address space left under ulimit -v; reading "
                          f"{n_bytes / 2**20:.0f} MiB of scores takes about "
                          f"{(_AS_PER_FILE_BYTE * n_bytes + _AS_BASE) / 2**20:.0f} MiB")


def arrow_path(path) -> str | None:
    """``path`` as pyarrow opens it: the name's bytes (``os.fsencode``) decoded as UTF-8, which pyarrow encodes
    back to the same bytes whatever the locale (under an ASCII locale Python's name of a non-ASCII file holds
    surrogate escapes, which pyarrow refused: "surrogates not allowed", a breaker's find); None when the bytes
    are not UTF-8 (read the file in Python then, :func:`arrow_source`)."""
    try:
        return os.fsencode(path).decode("utf-8")
    except UnicodeDecodeError:
        return None


@contextlib.contextmanager
def arrow_source(path):
    """What to give pyarrow (or pandas' Parquet reader) for the file ``path``: its name (:func:`arrow_path`), or
    the file opened in Python for a name pyarrow cannot encode."""
    name = arrow_path(path)
    if name is not None:
        yield name
        return
    with open(path, "rb") as fh:
        yield fh


def _parse(path, sep, plain, n_fields, min_fields, float_cols=()):
    pa, pc, pcsv = _pa()
    if plain and arrow_path(path) is not None:
        source = arrow_path(path)
    else:  # whitespace file with tabs or runs of spaces (or a name pyarrow cannot encode): normalise in memory
        data = _load(path)
        if data is None:
            return None
        source = pa.py_buffer(_normalise_whitespace(data))
        del data
    delim = " " if sep is None else sep
    limited = _address_space_limited()
    if limited:  # Arrow's CSV reader aborts the process when an allocation fails: refuse before, as running out
        _check_address_space(source.size if hasattr(source, "size") else os.path.getsize(path))
    try:
        table = pcsv.read_csv(
            source, memory_pool=pa.system_memory_pool() if limited else None,
            read_options=pcsv.ReadOptions(autogenerate_column_names=True, use_threads=not limited,
                                          block_size=1 << 24),
            parse_options=pcsv.ParseOptions(delimiter=delim, quote_char=False, double_quote=False,
                                            escape_char=False, newlines_in_values=False,
                                            ignore_empty_lines=True),
            convert_options=pcsv.ConvertOptions(check_utf8=True, column_types={
                f"f{i}": pa.float64() if i in float_cols else pa.string() for i in range(_MAX_FIELDS)},
                                                strings_can_be_null=False,
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
    if sep is None and any(has_empty(c) for c in cols if c.type == pa.string()):
        return None  # an empty field: two separators in a row, or one at a line's start or end
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


def _has_zero(col) -> bool:
    """True if the float64 Arrow column holds a 0.0 or -0.0."""
    return any(not _float64_view(chunk).all() for chunk in col.chunks)


def release_memory() -> None:
    """Hand memory Arrow no longer uses back to the system (its pool keeps freed pages otherwise)."""
    pa = _pa()[0]
    pa.default_memory_pool().release_unused()


def _offsets(chunk) -> np.ndarray:
    """The ``len(chunk) + 1`` int32 value offsets of one Arrow ``string`` array chunk (a view)."""
    n = len(chunk)
    return np.frombuffer(chunk.buffers()[1], dtype=np.int32, count=chunk.offset + n + 1)[chunk.offset :]


def has_empty(col) -> bool:
    """True if some value of the Arrow ``string`` column is empty (two equal offsets in a row).

    Compares the offsets in slices of 2**16, so no column-sized temporary is made (an Arrow length kernel
    allocates one and costs about 10x more in a fresh process)."""
    return any(_chunk_has_empty(chunk) for chunk in col.chunks)


def _chunk_has_empty(chunk) -> bool:
    step = 1 << 16
    n = len(chunk)
    off = _offsets(chunk)
    for s in range(0, n, step):
        seg = off[s : s + step + 1]
        if (seg[1:] == seg[:-1]).any():
            return True
    return False


def chunk_bytes(chunk) -> memoryview:
    """The bytes of all values of one Arrow ``string`` array chunk, back to back (no copy)."""
    off = _offsets(chunk)
    data = chunk.buffers()[2]
    if data is None:  # every value empty
        return memoryview(b"")
    return memoryview(data)[int(off[0]) : int(off[-1])]


#: Every byte a score may hold under the number rule, NaN excluded (no "a"): digits, signs, point, exponent,
#: and the letters of "inf" and "infinity".
_SCORE_BYTES = b"0123456789+-.eEiInNfFtTyY"
_NUMERIC_FILE_BYTES = _SCORE_BYTES + b" \t\r\n"


def scores_from_strings(col) -> np.ndarray | None:
    """float64 scores of an Arrow string column under the readers' number rule, or None (-> exact reader).

    Every value must consist of the bytes of :data:`_SCORE_BYTES` and parse under Arrow's string-to-double
    cast; a finite value beyond 2**53 in magnitude also gives None (the exact reader refuses integers there).
    Over those bytes Arrow's parser accepts exactly the rule's forms (``[+-]`` decimal digits with an optional
    fraction and exponent, ``inf``/``infinity`` in any case) and gives Python's ``float`` value;
    ``tests/test_fast_readers.py`` checks that against Python on random strings of these bytes. (A
    regular expression over every value said the same at about 6x the cost, ``benchmarks/micro.py``.)"""
    pa, pc, _ = _pa()
    if col.type == pa.float64():  # parsed by the CSV reader from a file of number bytes (read_table)
        out = np.empty(len(col), dtype=np.float64)
        pos = 0
        for chunk in col.chunks:
            out[pos : pos + len(chunk)] = _float64_view(chunk)
            pos += len(chunk)
        # read_table returns a float column only when its zeros are zeros as written (no underflow); the two
        # checks below read the extremes alone (no column-sized temporaries: new pages cost here)
        lo, hi = (float(out.min()), float(out.max())) if out.size else (0.0, 0.0)
        if not -math.inf < lo <= hi < math.inf:
            return None  # an inf: only its text tells an overflow (read it as strings)
        if max(-lo, hi) >= 2.0 ** 53:
            return None  # maybe an integer float64 rounds: only its text tells (the exact reader refuses it)
        return out
    for chunk in col.chunks:
        if chunk_bytes(chunk).tobytes().translate(None, _SCORE_BYTES):
            return None  # some other byte: NaN, non-ASCII digits, "1_0", ... (the exact reader decides)
    out = np.empty(len(col), dtype=np.float64)  # owned by NumPy: Arrow's pool can give its pages back
    ends = np.cumsum([len(c) for c in col.chunks]).tolist()
    starts = [0] + ends[:-1]

    def convert(i):
        """Cast chunk i and copy it into its slice of ``out``; False if Arrow's parser rejects a value."""
        try:
            v = pc.cast(col.chunk(i), pa.float64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return False
        out[starts[i] : ends[i]] = _float64_view(v)
        return True

    # the chunks are cast in threads (Arrow's kernels release the GIL), each straight into its slice
    if not all(_map_threads(convert, range(col.num_chunks))):
        return None
    inf = np.flatnonzero(np.isinf(out))
    if inf.size and not _token_matches(col, inf, _INF_WORD).all():
        return None  # a finite-looking number overflowed
    zero = np.flatnonzero(out == 0.0)
    if zero.size and _token_matches(col, zero, _NONZERO_MANTISSA).any():
        return None  # a nonzero number underflowed to 0
    if (np.abs(out[np.isfinite(out)]) >= 2.0 ** 53).any():
        return None  # maybe an integer float64 rounds: the exact reader decides from the text
    return out


_FEW = 10_000  # up to this many values are matched in Python; more with Arrow's regex kernel


def _token_matches(col, rows, pattern) -> np.ndarray:
    """Whether each value at ``rows`` (ascending) of an ASCII string column matches ``pattern`` at its start."""
    if rows.size <= _FEW:
        return np.array([bool(pattern.match(t)) for t in tokens_at(col, rows)])
    pa, pc, _ = _pa()
    hit = pc.match_substring_regex(col.take(pa.array(rows)), "^" + pattern.pattern)
    return np.asarray(hit.to_numpy(zero_copy_only=False), dtype=bool)


def _float64_view(arr) -> np.ndarray:
    """NumPy view of a null-free Arrow float64 array (no copy; unlike ``to_numpy`` it never imports pandas,
    which pyarrow does on first use, 0.2 s)."""
    return np.frombuffer(arr.buffers()[1], dtype=np.float64, count=arr.offset + len(arr))[arr.offset :]


def tokens_at(col, rows: np.ndarray) -> list:
    """The values at ``rows`` (ascending global row numbers) of an ASCII Arrow string column, as str."""
    out = []
    base = 0
    for chunk in col.chunks:
        n = len(chunk)
        lo, hi = np.searchsorted(rows, [base, base + n])
        if hi > lo:
            off = _offsets(chunk)
            data = memoryview(chunk.buffers()[2])
            for r in (rows[lo:hi] - base).tolist():
                out.append(data[off[r] : off[r + 1]].tobytes().decode("ascii"))
        base += n
    return out


def one_byte_flags(col, yes: bytes, no: bytes) -> np.ndarray | None:
    """Bool array (value == ``yes``) of an Arrow string column whose every value is the single byte ``yes``
    or ``no``; None if any value is anything else (-> exact reader). One byte per value, no Arrow kernel."""
    out = np.empty(len(col), dtype=bool)
    pos = 0
    for chunk in col.chunks:
        n = len(chunk)
        b = np.frombuffer(chunk_bytes(chunk), dtype=np.uint8)
        if b.size != n or _chunk_has_empty(chunk):  # some value is not exactly one byte long
            return None
        if n:
            np.equal(b, yes[0], out=out[pos : pos + n])
            if np.count_nonzero(b == no[0]) != n - np.count_nonzero(out[pos : pos + n]):
                return None
        pos += n
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
        for chunk in _file_chunks(path):
            n_nl += chunk.count(b"\n")
            last = chunk[-1:]
    except OSError:
        return None
    n_lines = n_nl + (1 if last not in (b"", b"\n") else 0)
    return np.arange(1, n_rows + 1) if n_lines == n_rows else None
