"""Readers for verification trials and scores, with strict validation.

Formats read unchanged
----------------------
``key`` + ``scores`` (Kaldi, VoicePrivacy 2020-2026, privacy-ZEBRA)
    key lines ``enroll test target|nontarget``; score lines ``enroll test score``. Joined on the
    (enroll, test) pair.
``score label`` (anonymization toolkits)
    lines ``score label`` with label ``1`` (target) or ``0`` (non-target). No trial ids: a repeated line is
    another trial, with a :class:`~vpeval.errors.RepeatedTrialsWarning` (the key + scores format and tables
    with id columns refuse a repeated pair instead).
generic columns
    whitespace- or comma-separated files, columns by 0-based index (no header) or by header name, with an
    explicit label mapping (e.g. ASVspoof ``- target 18.2`` lines, ``spoof`` ignored); CSV and Parquet tables
    with named columns.

Rules: labels are case-sensitive (``Target`` is an error); lines may end in LF or CRLF; blank lines are
skipped; every other line must parse. Scores are float64, NaN is an error, ``inf`` is allowed, a finite score
beyond +-1e300 (:data:`MAX_FINITE_SCORE`) is an error (no float64 headroom is left for its span). Errors are
:class:`~vpeval.errors.InputFileError` with ``path:line:``. ``higher_is_target=False`` negates the scores so
that everything downstream sees higher = more target-like.
"""

from __future__ import annotations

import csv
import io
import math
import re
import warnings
from collections.abc import Iterable, Iterator

import numpy as np

from ..errors import InputFileError, RepeatedTrialsWarning
from .label_counts import label_counts
from .numbers import INFINITY, NUMBER, is_nan_word
from . import _fast
from .files import check_input_file, read_utf8
from .matrix import _exact_in_float64, _no_duplicate_columns, _read_parquet_table, _inexact_integer
from .trials import Trials

__all__ = ["read_trials_scores", "read_score_label", "read_columns", "read_scores_any", "read_id_list"]

KEY_LABELS = {"target": True, "nontarget": False}
_SHOW = 5  # how many missing keys an error lists


def _text(path) -> str:
    return read_utf8(path, "cannot read file")


def _raw_lines(path) -> list[str]:
    """Lines split on LF only (a CRLF's CR is dropped), so line numbers match what editors show."""
    lines = _text(path).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


def _lines(path) -> Iterator[tuple[int, str]]:
    """(1-based line number, stripped line) of non-blank lines; CRLF and LF alike."""
    for i, line in enumerate(_raw_lines(path), start=1):
        s = line.strip(" \t")
        if s:
            yield i, s


def _score(path, lineno, token) -> float:
    """A score field under the number rule of :mod:`vpeval.io.numbers` (infinities allowed, NaN not)."""
    if is_nan_word(token):
        raise InputFileError(path, lineno, f"score {token!r} is NaN; every trial needs a numeric score")
    if not (NUMBER.fullmatch(token) or INFINITY.fullmatch(token)):
        raise InputFileError(path, lineno, f"score {token!r} is not a number")
    v = float(token)
    if _inexact_integer(token, v):
        raise InputFileError(path, lineno, f"score {token!r} is an integer beyond 2**53, which float64 cannot hold "
                                           f"exactly (it would be read as {v:.17g}); rescale the scores")
    if math.isinf(v) and "inf" not in token.lower():
        raise InputFileError(path, lineno, f"score {token!r} is outside the float64 range")
    if v == 0.0 and any(c in "123456789" for c in token.lower().split("e")[0]):
        raise InputFileError(path, lineno, f"score {token!r} underflows float64 to 0")
    if math.isfinite(v) and abs(v) > MAX_FINITE_SCORE:
        raise InputFileError(path, lineno, f"score {v!r} is {_BEYOND}")
    return v


def _split(line: str) -> list[str]:
    """Fields separated by ASCII spaces and tabs (other Unicode spaces belong to the field)."""
    return [f for f in re.split(r"[ \t]+", line) if f]


def _fields(path, lineno, line, n, what) -> list[str]:
    f = _split(line)
    if len(f) != n:
        raise InputFileError(path, lineno, f"expected {n} fields ({what}), got {len(f)}: {line[:80]!r}")
    return f


#: The largest magnitude of a finite score read from a file. Beyond it the computations on the scores stop
#: being representable in float64 (max 1.8e308): a span max - min, a plot's padded axis, a sum of the scores
#: of up to 1e8 trials. 1e300 leaves that headroom; every scale-free result is tested up to this scale
#: (tests/test_scale_invariance.py). +-inf stays a valid score.
MAX_FINITE_SCORE = 1e300
_BEYOND = (f"finite, but beyond +-{MAX_FINITE_SCORE:g}, beyond the span float64 can compute on (differences, "
           "padded plot axes and sums overflow near 1.8e308); rescale the scores (every result but score-domain "
           "thresholds is invariant to a positive scale)")


def _check_magnitude(s: np.ndarray, source) -> None:
    """Raise InputFileError when a finite score of ``s`` is beyond +-:data:`MAX_FINITE_SCORE` (naming the
    first such trial, its value and the file's finite range). The line-by-line readers refuse such a score at
    its line first (:func:`_score`); this catches the scores of any other reader."""
    if not s.size:
        return
    with np.errstate(invalid="ignore"):
        big = np.isfinite(s) & (np.abs(s) > MAX_FINITE_SCORE)
    if big.any():
        i = int(np.flatnonzero(big)[0])
        fin = s[np.isfinite(s)]
        raise InputFileError(
            source, None,
            f"{int(big.sum())} finite score(s) beyond +-{MAX_FINITE_SCORE:g}, e.g. {s[i]!r} (trial {i + 1}; the "
            f"finite scores span {fin.min()!r} to {fin.max()!r}): finite, but beyond the span float64 can "
            "compute on (differences, padded plot axes and sums overflow near 1.8e308); rescale the scores "
            "(every result but score-domain thresholds is invariant to a positive scale)")


def _finish(scores, labels, enroll, test, source, higher_is_target) -> Trials:
    s = np.asarray(scores, dtype=np.float64)
    t = np.asarray(labels, dtype=bool)
    _check_magnitude(s, source)
    if not t.any():
        raise InputFileError(source, None, "no target trials; both classes are needed")
    if t.all():
        raise InputFileError(source, None, "no non-target trials; both classes are needed")
    if not higher_is_target:
        s = -s
    return Trials(s, t, enroll, test, source=str(source),
                  meta={"higher_is_target": bool(higher_is_target)})


def _warn_repeats(t: Trials, path, stacklevel: int = 3, ids: str = "without trial ids") -> Trials:
    """Warn (:class:`~vpeval.errors.RepeatedTrialsWarning`, naming ``path``, the count and the most repeated
    line) when trials without ids repeat a (score, label) pair; return ``t`` unchanged. O(n log n): each class
    sorted once (non-targets first, as the message's "first of the longest runs" is by label, then score).
    ``ids``: why the trials have no ids, in the message's words (a column file has them in columns not read)."""
    n = len(t)
    if n < 2:
        return t
    runs_of = []
    for lab, s in zip((False, True), t.sorted_classes()[::-1]):
        if s.size == 0:
            continue
        same = s[1:] == s[:-1]  # -0.0 == 0.0, as the parsed values are equal
        starts = np.flatnonzero(np.r_[True, ~same])  # first row of each run of equal scores
        runs_of.append((lab, s, starts, np.diff(np.r_[starts, s.size]), int(same.sum())))
    extra = sum(r[4] for r in runs_of)
    if extra:
        runs = np.concatenate([r[3] for r in runs_of])
        k = int(np.argmax(runs))  # the first (smallest label, then score) of the longest runs
        for lab, s, starts, r, _ in runs_of:
            if k < r.size:
                break
            k -= r.size
        score = s[starts[k]]
        if score == 0.0:  # the sign of the zero first read with this label (the old stable sort's first)
            score = t.scores[np.flatnonzero((t.scores == 0.0) & (t.is_target == lab))[0]]
        if not t.meta.get("higher_is_target", True):
            score = -score
        warnings.warn(
            f"{path}: {extra} of {n} trials repeat the score and label of an earlier line ({int((runs > 1).sum())} "
            f"distinct (score, label) pairs occur more than once; the most, score {float(score)!r} with label "
            f"{'target' if lab else 'non-target'}, {int(r[k])} times). Each line is counted as a "
            f"trial: {ids} vpeval cannot tell distinct trials that score alike (rounded scores) from a "
            "line or a file given twice by mistake, which should be removed.", RepeatedTrialsWarning,
            stacklevel=stacklevel)
    return t


def _all_in(trials: dict, other: dict, path, line_word: str, what: str) -> None:
    """Raise InputFileError at ``path``: "{n} {what}, e.g. (enroll test, {line_word} N), ..." naming the first
    trials of ``trials`` (``(enroll, test) -> (value, line)``) that ``other`` lacks; nothing if none."""
    absent = [k for k in trials if k not in other]
    if absent:
        show = ", ".join(f"({e} {t}, {line_word} {trials[(e, t)][1]})" for e, t in absent[:_SHOW])
        raise InputFileError(path, None, f"{len(absent)} {what}, e.g. {show}")


def read_trials_scores(key_path, scores_path, *, higher_is_target: bool = True) -> Trials:
    """Read a Kaldi/VoicePrivacy key and a score file and join them on the (enroll, test) pair.

    Parameters
    ----------
    key_path : path
        Lines ``enroll test target|nontarget``.
    scores_path : path
        Lines ``enroll test score``.
    higher_is_target : bool, default True
        Score direction. ``False`` negates scores.

    Returns
    -------
    Trials
        One trial per key line, in key order, with ``enroll`` and ``test`` keys.

    Raises
    ------
    InputFileError
        Wrong number of fields, unknown label (case-sensitive), unparsable or NaN score, a pair twice in
        either file (equal or conflicting), key pairs without a score or scores without a key pair (the first
        few are listed with the counts), an empty class.
    """
    check_input_file(key_path, "a Kaldi key file (enroll test target|nontarget)")
    check_input_file(scores_path, "a Kaldi score file (enroll test score)")
    fast = _fast_trials_scores(key_path, scores_path, higher_is_target)
    if fast is not None:
        return fast
    return _exact_trials_scores(key_path, scores_path, higher_is_target)


def _exact_trials_scores(key_path, scores_path, higher_is_target) -> Trials:
    """The line-by-line reader that defines the key + scores format (and words every error)."""
    key: dict[tuple[str, str], tuple[bool, int]] = {}
    for ln, line in _lines(key_path):
        e, t, lab = _fields(key_path, ln, line, 3, "enroll test target|nontarget")
        if lab not in KEY_LABELS:
            raise InputFileError(key_path, ln, f"unknown label {lab!r}; expected 'target' or 'nontarget'")
        if (e, t) in key:
            raise InputFileError(key_path, ln, f"trial ({e}, {t}) already given on line {key[(e, t)][1]}")
        key[(e, t)] = (KEY_LABELS[lab], ln)
    scores: dict[tuple[str, str], tuple[float, int]] = {}
    for ln, line in _lines(scores_path):
        e, t, s = _fields(scores_path, ln, line, 3, "enroll test score")
        v = _score(scores_path, ln, s)
        if (e, t) in scores:
            prev, pl = scores[(e, t)]
            how = "with the same score" if prev == v else f"with a conflicting score ({prev!r} vs {v!r})"
            raise InputFileError(scores_path, ln, f"trial ({e}, {t}) scored twice {how}; first on line {pl}")
        scores[(e, t)] = (v, ln)
    if not key:
        raise InputFileError(key_path, None, "no trials in key file")
    _all_in(key, scores, scores_path, "key line", f"of {len(key)} key trials have no score")
    _all_in(scores, key, scores_path, "line", f"scored trials are not in the key {key_path}")
    pairs = list(key)
    return _finish(
        [scores[p][0] for p in pairs], [key[p][0] for p in pairs],
        [p[0] for p in pairs], [p[1] for p in pairs],
        f"{key_path} + {scores_path}", higher_is_target,
    )


def read_score_label(path, *, higher_is_target: bool = True) -> Trials:
    """Read a two-column ``score label`` file (label ``1`` = target, ``0`` = non-target).

    The file has no trial ids, so every line is a trial: repeated lines (the same score and label) are kept,
    with a :class:`~vpeval.errors.RepeatedTrialsWarning` naming the file and how many trials repeat an earlier
    line (distinct trials may score alike; a line or a file given twice by mistake looks the same).

    Raises
    ------
    InputFileError
        A line without exactly two fields, a label other than ``1``/``0``, an unparsable or NaN score, an
        empty class, a finite score beyond +-1e300.

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "s.txt")
    >>> _ = open(p, "w").write("0.9 1\\r\\n0.1 0\\r\\n")
    >>> t = read_score_label(p); t.tar.tolist(), t.non.tolist()
    ([0.9], [0.1])
    """
    check_input_file(path, "a score file (score label)")
    fast = _fast_score_label(path, higher_is_target)
    return _warn_repeats(fast if fast is not None else _exact_score_label(path, higher_is_target), path)


def _exact_score_label(path, higher_is_target) -> Trials:
    """The line-by-line reader that defines the ``score label`` format (and words every error)."""
    scores, labels = [], []
    for ln, line in _lines(path):
        if len(_split(line)) == 3:
            raise InputFileError(path, ln, "expected 2 fields (score label), got 3; for Kaldi `enroll test "
                                 "score` files give the key with --key (or read_trials_scores)")
        s, lab = _fields(path, ln, line, 2, "score label")
        if lab not in ("1", "0"):
            raise InputFileError(path, ln, f"label {lab!r} must be 1 (target) or 0 (non-target)")
        scores.append(_score(path, ln, s))
        labels.append(lab == "1")
    if not scores:
        raise InputFileError(path, None, "no trials in file")
    return _finish(scores, labels, None, None, path, higher_is_target)


def _fast_score_label(path, higher_is_target):
    """The bulk (pyarrow) reading of a plainly valid ``score label`` file; None sends it to the exact reader."""
    for float_cols in ((0,), ()):  # scores parsed as numbers by the CSV reader; then, if need be, as text
        cols = _fast.read_table(path, 2, float_cols=float_cols)
        if cols is None:
            return None
        is1 = _fast.one_byte_flags(cols.pop(), b"1", b"0")
        if is1 is None:
            return None
        col = cols.pop()
        scores = _fast.scores_from_strings(col)
        if scores is not None:
            break
        if col.type == _fast._pa()[0].string():
            return None
    del col
    _fast.release_memory()
    return _finish(scores, is1, None, None, path, higher_is_target)


def _bool(chunked) -> np.ndarray:
    return np.asarray(chunked.to_numpy(zero_copy_only=False), dtype=bool)


def _fast_trials_scores(key_path, scores_path, higher_is_target):
    """Bulk (pyarrow) join of a plainly valid key and score file; None sends them to the exact reader.

    The pair (enroll, test) is joined as ``enroll + " " + test``; a field never holds a space, so the join is
    exact. With the key's pairs distinct, every scored pair found in the key and as many score lines as key
    lines, the score lines are a permutation of the key lines (checked by the positions covering the key).
    """
    key = _fast.read_table(key_path, 3)
    if key is None:
        return None
    sc = _fast.read_table(scores_path, 3)
    if sc is None or len(sc[0]) != len(key[0]):
        return None
    pa, pc, _ = _fast._pa()
    is_t, is_n = pc.equal(key[2], "target"), pc.equal(key[2], "nontarget")
    if not pc.all(pc.or_(is_t, is_n)).as_py():
        return None
    values = _fast.scores_from_strings(sc[2])
    if values is None:
        return None
    kpair = pc.binary_join_element_wise(key[0], key[1], " ").combine_chunks()
    spair = pc.binary_join_element_wise(sc[0], sc[1], " ")
    pos = pc.index_in(spair, value_set=kpair)
    del kpair, spair
    if pos.null_count:
        return None
    pos = pos.to_numpy().astype(np.intp, copy=False)
    n = pos.size
    covered = np.zeros(n, dtype=bool)
    covered[pos] = True
    if not covered.all():  # a key pair twice, or a pair scored twice
        return None
    scores = np.empty(n, dtype=np.float64)
    scores[pos] = values
    del values, pos, covered
    return _finish(scores, _bool(is_t), _fast.strings_to_numpy(key[0]), _fast.strings_to_numpy(key[1]),
                   f"{key_path} + {scores_path}", higher_is_target)


def _as_set(x) -> frozenset[str]:
    if isinstance(x, str):
        return frozenset([x])
    return frozenset(str(v) for v in x)


def _rows(path, sep) -> Iterator[tuple[int, list[str]]]:
    if sep is None:
        for ln, line in _lines(path):
            yield ln, _split(line)
        return
    text = "\n".join(_raw_lines(path))
    reader = csv.reader(io.StringIO(text), delimiter=sep)
    start = 1
    try:
        for row in reader:
            if any(c.strip() for c in row):
                yield start, [c.strip() for c in row]
            start = reader.line_num + 1
    except csv.Error as exc:
        raise InputFileError(path, reader.line_num, f"not readable as CSV ({exc})") from None


def read_columns(
    path,
    *,
    label_col: int | str,
    score_col: int | str,
    target: str | Iterable[str],
    nontarget: str | Iterable[str],
    ignore: str | Iterable[str] = (),
    sep: str | None = None,
    key_cols: tuple[int | str, int | str] | None = None,
    higher_is_target: bool = True,
) -> Trials:
    """Read labelled scores from a whitespace/CSV file or a Parquet table with an explicit label mapping.

    Parameters
    ----------
    path : path
        Text file, or ``.parquet`` table (then columns are names).
    label_col, score_col : int or str
        0-based column indices (file without header) or header names (the first non-blank line is the
        header). Both must be of the same kind.
    target, nontarget : str or iterable of str
        Label values meaning target and non-target (case-sensitive).
    ignore : str or iterable of str
        Label values whose rows are skipped on purpose (e.g. ``"spoof"``); any other label is an error.
    sep : str, optional
        ``None`` splits on runs of white space; ``","`` (or another character) reads CSV with quoting.
    key_cols : (col, col), optional
        Enrollment and test id columns; when given, a repeated pair is an error. Without them, rows repeating
        a (score, label) pair are kept, with a :class:`~vpeval.errors.RepeatedTrialsWarning` (as
        :func:`read_score_label`).
    higher_is_target : bool, default True

    Returns
    -------
    Trials
        With ``meta["label_counts"]`` (:func:`vpeval.io.label_counts.label_counts`): the rows read and, per label
        of the mapping, how many rows were read as target, as non-target and ignored.

    Raises
    ------
    InputFileError
        Missing column, short row, unknown label, unparsable or NaN score, duplicate key, empty class,
        overlapping label sets.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "asv.txt")
    >>> _ = open(p, "w").write("- target 18.2\\n- nontarget -3.5\\n- spoof 1.0\\n")
    >>> t = read_columns(p, label_col=1, score_col=2, target="target", nontarget="nontarget", ignore="spoof")
    >>> t.tar.tolist(), t.non.tolist()
    ([18.2], [-3.5])
    >>> t.meta["label_counts"]["ignored"]
    {'spoof': 1}
    """
    check_input_file(path, "a score table")
    if sep is not None and (not isinstance(sep, str) or len(sep) != 1 or sep in "\r\n\"" or sep.isalnum()):
        raise InputFileError(path, None, f"sep must be one separator character such as ',' or ';', got {sep!r}")
    tset, nset, iset = _as_set(target), _as_set(nontarget), _as_set(ignore)
    if (tset & nset) or (tset & iset) or (nset & iset):
        raise InputFileError(path, None, "target, nontarget and ignore label sets must not overlap")
    named = isinstance(label_col, str)
    if key_cols is not None and (not isinstance(key_cols, (tuple, list)) or len(key_cols) != 2):
        raise InputFileError(path, None, f"key_cols must be (enroll column, test column), got {key_cols!r}")
    if isinstance(score_col, str) != named or (key_cols and any(isinstance(c, str) != named for c in key_cols)):
        raise InputFileError(path, None, "columns must all be given as indices or all as header names")
    if str(path).endswith(".parquet"):
        return _no_ids(_read_parquet(path, label_col, score_col, tset, nset, iset, key_cols, higher_is_target),
                       path, key_cols)
    cols = [label_col, score_col] + list(key_cols or ())
    if not named and any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in cols):
        raise InputFileError(path, None, f"column indices must be integers >= 0, got {cols}")
    fast = _fast_columns(path, sep, named, cols, tset, nset, iset, bool(key_cols), higher_is_target)
    if fast is not None:
        return _no_ids(fast, path, key_cols)
    rows = _rows(path, sep)
    if named:
        try:
            _, header = next(rows)
        except StopIteration:
            raise InputFileError(path, None, "empty file; expected a header line") from None
        missing = [c for c in cols if c not in header]
        if missing:
            raise InputFileError(path, 1, f"header has no column(s) {missing}; found {header}")
        _no_duplicate_columns(path, 1, header)
        idx = [header.index(c) for c in cols]
    else:
        if any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in cols):
            raise InputFileError(path, None, f"column indices must be integers >= 0, got {cols}")
        idx = [int(c) for c in cols]
    need = max(idx) + 1
    scores, labels, keys, seen, counts = [], [], [], {}, {}
    for ln, f in rows:
        if len(f) < need:
            raise InputFileError(path, ln, f"expected at least {need} fields, got {len(f)}")
        lab = f[idx[0]]
        counts[lab] = counts.get(lab, 0) + 1
        if lab in iset:
            continue
        if lab not in tset and lab not in nset:
            raise InputFileError(
                path, ln,
                f"unknown label {lab!r}; expected one of target={sorted(tset)}, nontarget={sorted(nset)}"
                + (f", ignore={sorted(iset)}" if iset else ""),
            )
        scores.append(_score(path, ln, f[idx[1]]))
        labels.append(lab in tset)
        if key_cols:
            k = (f[idx[2]], f[idx[3]])
            if k in seen:
                raise InputFileError(path, ln, f"trial {k} already given on line {seen[k]}")
            seen[k] = ln
            keys.append(k)
    if not scores:
        raise InputFileError(path, None, "no target or non-target rows")
    enroll = [k[0] for k in keys] if key_cols else None
    test = [k[1] for k in keys] if key_cols else None
    t = _finish(scores, labels, enroll, test, path, higher_is_target)
    t.meta["label_counts"] = label_counts(counts, tset, nset, iset)
    return _no_ids(t, path, key_cols)


def _no_ids(t: Trials, path, key_cols) -> Trials:
    """``t``, after :func:`_warn_repeats` when the rows have no ids (``key_cols`` not given)."""
    # to read_columns' caller; the file's other columns may hold ids, which are not read
    return t if key_cols else _warn_repeats(t, path, stacklevel=4,
                                            ids="reading only the score and label columns (no trial ids),")


def _fast_columns(path, sep, named, cols, tset, nset, iset, with_keys, higher_is_target):
    """Bulk (pyarrow) reading of a plainly valid column file; None sends it to the exact reader."""
    table = _fast.read_table(path, None, sep=sep)
    if table is None:
        return None
    pa, pc, _ = _fast._pa()
    if named:
        header = [c[0].as_py() for c in table]
        if any(c not in header for c in cols) or len(set(header)) != len(header):
            return None
        idx = [header.index(c) for c in cols]
        table = [c.slice(1) for c in table]
    else:
        idx = [int(c) for c in cols]
        if max(idx) >= len(table):
            return None
    if len(table[0]) == 0:
        return None
    lab = table[idx[0]]
    in_t = pc.is_in(lab, value_set=pa.array(sorted(tset), type=pa.string()))
    in_n = pc.is_in(lab, value_set=pa.array(sorted(nset), type=pa.string()))
    in_i = pc.is_in(lab, value_set=pa.array(sorted(iset), type=pa.string()))
    if not pc.all(pc.or_(pc.or_(in_t, in_n), in_i)).as_py():
        return None
    keep = pc.invert(in_i)
    if not pc.any(keep).as_py():
        return None
    some_ignored = pc.any(in_i).as_py()
    pick = (lambda c: pc.filter(c, keep)) if some_ignored else (lambda c: c)  # noqa: E731
    scores = _fast.scores_from_strings(pick(table[idx[1]]))
    if scores is None:
        return None
    enroll = test = None
    if with_keys:
        e, t = pick(table[idx[2]]), pick(table[idx[3]])
        pair = pc.binary_join_element_wise(e, t, "\n")  # a field never holds a line break
        if pc.count_distinct(pair).as_py() != len(pair):
            return None
        enroll, test = _fast.strings_to_numpy(e), _fast.strings_to_numpy(t)
    out = _finish(scores, _bool(pick(in_t)), enroll, test, path, higher_is_target)
    vc = pc.value_counts(lab)
    out.meta["label_counts"] = label_counts(dict(zip(vc.field("values").to_pylist(), vc.field("counts").to_pylist())),
                                            tset, nset, iset)
    return out


def _read_parquet(path, label_col, score_col, tset, nset, iset, key_cols, higher_is_target) -> Trials:
    import pandas as pd

    df = _read_parquet_table(path)
    cols = [label_col, score_col] + list(key_cols or ())
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise InputFileError(path, None, f"no column(s) {missing}; found {list(df.columns)}")
    lab = df[label_col].astype(str).to_numpy()
    known = np.isin(lab, list(tset | nset | iset))
    if not known.all():
        r = int(np.flatnonzero(~known)[0])
        raise InputFileError(path, None, f"row {r}: unknown label {lab[r]!r}")
    keep = ~np.isin(lab, list(iset))
    col = df[score_col]
    if pd.api.types.is_bool_dtype(col) or not pd.api.types.is_numeric_dtype(col):
        raise InputFileError(path, None, f"score column {score_col!r} has dtype {col.dtype}; scores must have a "
                             "numeric type (write them as float64)")
    _exact_in_float64(path, col.to_numpy()[keep], "score")
    sc = pd.to_numeric(col, errors="coerce").to_numpy(dtype=np.float64)
    bad = keep & np.isnan(sc)
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise InputFileError(path, None, f"row {r}: score {df[score_col].iloc[r]!r} is not a number")
    enroll = test = None
    if key_cols:
        enroll = df[key_cols[0]].astype(str).to_numpy()[keep]
        test = df[key_cols[1]].astype(str).to_numpy()[keep]
        pairs = pd.Series(list(zip(enroll, test)))
        dup = pairs.duplicated()
        if dup.any():
            r = int(np.flatnonzero(keep)[int(np.flatnonzero(dup.to_numpy())[0])])
            raise InputFileError(path, None, f"row {r}: trial {pairs[dup].iloc[0]} given twice")
    out = _finish(sc[keep], np.isin(lab[keep], list(tset)), enroll, test, path, higher_is_target)
    values, n = np.unique(lab, return_counts=True)
    out.meta["label_counts"] = label_counts(dict(zip(values.tolist(), n.tolist())), tset, nset, iset)
    return out


def read_scores_any(scores_path, key_path=None, *, higher_is_target: bool = True) -> Trials:
    """Read a score file in whichever of the two standard formats it is.

    With ``key_path``: Kaldi key + scores (:func:`read_trials_scores`). Without: a ``score label`` file
    (:func:`read_score_label`). Nothing else is guessed.
    """
    if key_path is not None:
        return read_trials_scores(key_path, scores_path, higher_is_target=higher_is_target)
    return read_score_label(scores_path, higher_is_target=higher_is_target)


def read_id_list(path, what: str = "id") -> list[str]:
    """Read a list of identifiers, one per line (blank lines skipped; UTF-8, BOM and CRLF accepted).

    Raises
    ------
    InputFileError
        Unreadable or non-UTF-8 file, a line with more than one field, a repeated id, no ids at all.
    """
    check_input_file(path, f"a list of {what}s")
    out, seen = [], {}
    for ln, line in _lines(path):
        f = _split(line)
        if len(f) != 1:
            raise InputFileError(path, ln, f"expected one {what} per line, got {line[:80]!r}")
        if f[0] in seen:
            raise InputFileError(path, ln, f"{what} {f[0]!r} already listed on line {seen[f[0]]}")
        seen[f[0]] = ln
        out.append(f[0])
    if not out:
        raise InputFileError(path, None, f"no {what}s in file")
    return out
