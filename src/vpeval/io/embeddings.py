"""Speaker embeddings on disk: ``.npz`` files and Parquet tables.

Format of an embeddings ``.npz`` file (written by :func:`write_embeddings`):

============== ============ ==========================================================
array          dtype        meaning
============== ============ ==========================================================
embeddings     float32/64   shape (n, d), one row per utterance
utterance_id   str          shape (n,), utterance identifier (e.g. ``1688-142285-0000``)
speaker_id     str          shape (n,), speaker identifier
condition      str          shape (n,), ``original`` or ``anonymized`` (any label is kept)
extractor      str          shape (), name of the extractor (e.g. ``mfcc-stats``)
input_rate_hz  int64        shape (n,), optional: sampling rate (Hz) of each row's audio file as read,
                            before vpeval resampled it to 16 kHz; 0 = not known (rows joined
                            from a file without it)
extractor_info str          shape (), optional: the extractor record, JSON text: which model file
                            (name, size, sha256), features, package version or settings made
                            the rows (:mod:`vpeval.io.extractor_info`); checked strictly when
                            present, files without it stay valid
============== ============ ==========================================================

``(utterance_id, condition)`` is the key: the original and the anonymized version of one utterance share the
utterance id, so matched pairs can be formed across conditions.

A Parquet table has the columns ``utterance_id, speaker_id, condition, embedding`` (the last a list of
floats of the same length in every row). It may carry the extractor record as JSON text under the key
``extractor_info`` of its schema metadata (``pyarrow.Table.replace_schema_metadata``), read and checked as in a
``.npz`` file; vpeval writes no Parquet embeddings itself.

Joining rows (:meth:`EmbeddingSet.concat`, ``vpeval embed --append``, several files given to one command) needs
the same extractor name, dimension and, where both sides record one, the same extractor record: rows of another
model file (another sha256) or other features are refused. When only one side records it, the joined rows keep
none (their provenance is no longer one record) and an :class:`~vpeval.errors.ExtractorRecordWarning` says so.
"""

from __future__ import annotations

import os
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import ExtractorRecordWarning, InputFileError
from ._fast import arrow_source
from .extractor_info import check_extractor_info, dump_extractor_info, parse_extractor_info, record_difference

__all__ = ["EmbeddingSet", "read_embeddings", "write_embeddings", "check_conditions", "read_extractor_info",
           "PROFILE_CONDITION_PREFIX", "profile_key", "valid_profile_key", "split_profile_runs"]


@dataclass(frozen=True)
class EmbeddingSet:
    """Embeddings of utterances with their identities.

    Attributes
    ----------
    embeddings : ndarray of shape (n, d), float64
    utterance_id, speaker_id, condition : ndarray of shape (n,), str
    extractor : str
    input_rate_hz : ndarray of shape (n,), int64, or None
        Sampling rate of each row's audio file before it was resampled to 16 kHz (0 = not known); None when
        the embeddings came without it.
    extractor_info : dict or None
        The extractor record (:mod:`vpeval.io.extractor_info`: model file name, size and sha256, features,
        package version or settings), checked on construction (its ``name`` and ``dim`` must be the set's) and
        kept as a copy; None when the embeddings came without it.
    """

    embeddings: np.ndarray
    utterance_id: np.ndarray
    speaker_id: np.ndarray
    condition: np.ndarray
    extractor: str = "unknown"
    input_rate_hz: np.ndarray | None = None
    extractor_info: dict | None = None

    def __post_init__(self):
        x = self.extractor
        if isinstance(x, np.ndarray) and x.ndim == 0 and x.dtype.kind == "U":
            x = str(x)
        if not isinstance(x, str) or not x:
            raise InputFileError("<EmbeddingSet>", None, f"extractor must be a non-empty name (str), got {x!r:.80}")
        object.__setattr__(self, "extractor", x)
        raw = np.asarray(self.embeddings)
        if raw.dtype.kind not in "fiu":
            raise InputFileError("<EmbeddingSet>", None, f"embeddings must be real numbers, got dtype {raw.dtype}")
        emb = raw.astype(np.float64)
        object.__setattr__(self, "embeddings", emb)
        for name in ("utterance_id", "speaker_id", "condition"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=str))
        if self.input_rate_hz is not None:
            r = np.asarray(self.input_rate_hz)
            if r.dtype.kind not in "iu":
                raise InputFileError("<EmbeddingSet>", None, f"input_rate_hz must hold integers, got dtype {r.dtype}")
            object.__setattr__(self, "input_rate_hz", r.astype(np.int64))
        if self.extractor_info is not None:  # type and JSON checks; name and dim in _validate
            object.__setattr__(self, "extractor_info", check_extractor_info(self.extractor_info, "<EmbeddingSet>"))
        _validate(self, "<EmbeddingSet>")

    def __len__(self) -> int:
        return self.embeddings.shape[0]

    def __repr__(self) -> str:
        """One line whatever the size: extractor, utterances x dimension, speakers, rows per condition (sorted by
        name, the first 5; the same for any row order). The arrays are the attributes."""
        n, d = self.embeddings.shape
        names, counts = np.unique(self.condition, return_counts=True)
        shown = ", ".join(f"{c!r}: {k}" for c, k in zip(names[:5].tolist(), counts[:5].tolist()))
        more = f", ... {names.size - 5} more" if names.size > 5 else ""
        return (f"EmbeddingSet(extractor={self.extractor!r}, {n} utterances x {d} dimensions, "
                f"{np.unique(self.speaker_id).size} speakers, conditions {{{shown}{more}}})")

    def select(self, mask) -> "EmbeddingSet":
        """Rows where the boolean ``mask`` is true, as a new set."""
        mask = np.asarray(mask, dtype=bool)
        return EmbeddingSet(
            self.embeddings[mask],
            self.utterance_id[mask],
            self.speaker_id[mask],
            self.condition[mask],
            self.extractor,
            None if self.input_rate_hz is None else self.input_rate_hz[mask],
            self.extractor_info,
        )

    def concat(self, other: "EmbeddingSet", *, name=None) -> "EmbeddingSet":
        """Rows of ``self`` followed by those of ``other`` (same dimension and extractor required).

        Parameters
        ----------
        other : EmbeddingSet
        name : str or Path, optional
            The file the rows are being added to (e.g. ``embed --append``'s output), named in errors instead
            of ``<EmbeddingSet>``.

        Returns
        -------
        EmbeddingSet
            With the extractor record both sides share; with none (and an
            :class:`~vpeval.errors.ExtractorRecordWarning`) when only one side has one.

        Raises
        ------
        InputFileError
            Another extractor or dimension, another extractor record (e.g. another model file, told apart by its
            sha256, or other features), or an (utterance, condition) key present in both.
        """
        where = "<EmbeddingSet>" if name is None else str(name)
        if other.extractor != self.extractor:
            raise InputFileError(
                where, None,
                f"cannot join embeddings of extractor {other.extractor!r} to {self.extractor!r}",
            )
        if other.embeddings.shape[1] != self.embeddings.shape[1]:
            raise InputFileError(
                where, None,
                f"cannot join embeddings of dimension {other.embeddings.shape[1]} to {self.embeddings.shape[1]}",
            )
        info = self.extractor_info
        if self.extractor_info is not None and other.extractor_info is not None:
            diff = record_difference(self.extractor_info, other.extractor_info)
            if diff is not None:
                raise InputFileError(where, None, f"cannot join embeddings of extractor {other.extractor!r} made by "
                                     f"{diff}")
        elif self.extractor_info is not None or other.extractor_info is not None:
            info = None
            which = ("its rows record no extractor (model file, features or version), the rows joined to it do"
                     if self.extractor_info is None else
                     "the rows joined to it record no extractor (model file, features or version), its rows do")
            warnings.warn(f"{where}: {which}; the joined rows keep no extractor record", ExtractorRecordWarning,
                          stacklevel=2)
        joined = EmbeddingSet.__new__(EmbeddingSet)
        for field, value in (("embeddings", np.vstack([self.embeddings, other.embeddings])),
                             ("utterance_id", np.concatenate([self.utterance_id, other.utterance_id])),
                             ("speaker_id", np.concatenate([self.speaker_id, other.speaker_id])),
                             ("condition", np.concatenate([self.condition, other.condition])),
                             ("extractor", self.extractor),
                             ("input_rate_hz", None if self.input_rate_hz is None and other.input_rate_hz is None
                              else np.concatenate([np.zeros(len(s), np.int64) if s.input_rate_hz is None
                                                   else s.input_rate_hz for s in (self, other)])),
                             ("extractor_info", info)):
            object.__setattr__(joined, field, value)
        _validate(joined, where)
        return joined


def _validate(es: EmbeddingSet, path) -> None:
    emb = es.embeddings
    if emb.ndim != 2 or emb.shape[0] == 0 or emb.shape[1] == 0:
        raise InputFileError(path, None, f"embeddings must be a non-empty 2-D array, got shape {emb.shape}")
    n = emb.shape[0]
    for name in ("utterance_id", "speaker_id", "condition"):
        arr = getattr(es, name)
        if arr.shape != (n,):
            raise InputFileError(
                path, None, f"{name} has shape {arr.shape}, expected ({n},) to match the embeddings"
            )
        empty = np.flatnonzero(np.char.str_len(arr) == 0)
        if empty.size:
            raise InputFileError(path, None, f"row {int(empty[0])}: empty {name}")
    if es.input_rate_hz is not None:
        if es.input_rate_hz.shape != (n,):
            raise InputFileError(path, None, f"input_rate_hz has shape {es.input_rate_hz.shape}, expected ({n},) "
                                 "to match the embeddings")
        if (es.input_rate_hz < 0).any():
            raise InputFileError(path, None, f"row {int(np.flatnonzero(es.input_rate_hz < 0)[0])}: negative "
                                 "input_rate_hz")
    if es.extractor_info is not None:
        check_extractor_info(es.extractor_info, path, name=es.extractor, dim=emb.shape[1])
    bad = ~np.isfinite(emb).all(axis=1)
    if bad.any():
        rows = np.flatnonzero(bad)
        raise InputFileError(
            path, None,
            f"{rows.size} embedding row(s) contain NaN or inf (first: row {int(rows[0])}, "
            f"utterance {str(es.utterance_id[rows[0]])!r})",
        )
    keys = np.char.add(np.char.add(es.utterance_id, "\x1f"), es.condition)
    uniq, counts = np.unique(keys, return_counts=True)
    if (counts > 1).any():
        dup = uniq[counts > 1][0].split("\x1f")
        raise InputFileError(path, None, f"utterance {dup[0]!r} appears more than once in condition {dup[1]!r}")


def read_embeddings(path) -> EmbeddingSet:
    """Read an embeddings ``.npz`` file or Parquet table (format in the module docstring).

    Raises
    ------
    InputFileError
        Missing arrays/columns, mismatched lengths, NaN or inf rows, duplicate (utterance, condition) keys.
    """
    from .files import check_input_file

    path = Path(path)
    if not path.exists():
        raise InputFileError(path, None, "file does not exist")
    check_input_file(path, "an embeddings file (.npz or .parquet)")
    if path.suffix == ".parquet":
        from .matrix import _read_parquet_table

        df = _read_parquet_table(path)  # a column name twice is an error (pandas would keep one of them)
        need = ["utterance_id", "speaker_id", "condition", "embedding"]
        missing = [c for c in need if c not in df.columns]
        if missing:
            raise InputFileError(path, None, f"missing column(s) {missing}; expected {need}")
        cells = df["embedding"].tolist()
        for row, c in enumerate(cells):
            if c is None or np.ndim(c) != 1 or np.asarray(c).dtype.kind not in "fiu":
                raise InputFileError(path, None, f"row {row}: embedding must be a list of numbers, got {c!r:.60}")
        lengths = np.array([len(c) for c in cells])
        if len(df) and (lengths != lengths[0]).any():
            row = int(np.flatnonzero(lengths != lengths[0])[0])
            raise InputFileError(path, None, f"row {row}: embedding has {lengths[row]} values, expected {lengths[0]}")
        emb = np.array(cells, dtype=np.float64)
        es = EmbeddingSet.__new__(EmbeddingSet)
        fields = dict(
            embeddings=emb,
            utterance_id=np.asarray(df["utterance_id"].astype(str), dtype=str),
            speaker_id=np.asarray(df["speaker_id"].astype(str), dtype=str),
            condition=np.asarray(df["condition"].astype(str), dtype=str),
            extractor=str(df.attrs.get("extractor", "unknown")),
            input_rate_hz=None,
            extractor_info=_parquet_extractor_info(path),
        )
    else:
        try:
            is_zip = zipfile.is_zipfile(path)
        except OSError as exc:
            raise InputFileError(path, None, f"cannot be read ({exc.strerror or exc})") from None
        if not is_zip:
            raise InputFileError(path, None, "not a .npz archive (a .npz file is a zip archive of NumPy arrays, "
                                 "as written by `vpeval embed` or numpy.savez)")
        try:
            with np.load(path, allow_pickle=False) as z:
                missing = [k for k in ("embeddings", "utterance_id", "speaker_id", "condition") if k not in z]
                if missing:
                    raise InputFileError(
                        path, None,
                        f"missing array(s) {missing}; expected embeddings, utterance_id, speaker_id, condition",
                    )
                if z["embeddings"].dtype.kind not in "fiu":
                    raise InputFileError(path, None, f"embeddings must be real numbers, got {z['embeddings'].dtype}")
                for k in ("utterance_id", "speaker_id", "condition"):
                    if z[k].dtype.kind not in "USiu":
                        raise InputFileError(path, None, f"{k} must hold text (or integer) labels, got dtype "
                                             f"{z[k].dtype}")
                extractor = "unknown"
                if "extractor" in z:
                    x = z["extractor"]
                    if x.ndim != 0 or x.dtype.kind != "U" or not str(x):
                        raise InputFileError(path, None, "extractor must be one non-empty text value (a 0-d "
                                             f"string array), got dtype {x.dtype} and shape {x.shape}")
                    extractor = str(x)
                fields = dict(
                    embeddings=np.asarray(z["embeddings"], dtype=np.float64),
                    utterance_id=z["utterance_id"].astype(str),
                    speaker_id=z["speaker_id"].astype(str),
                    condition=z["condition"].astype(str),
                    extractor=extractor,
                    input_rate_hz=None,
                    extractor_info=None,
                )
                if "extractor_info" in z:
                    fields["extractor_info"] = _npz_extractor_info(z["extractor_info"], path)
                if "input_rate_hz" in z:
                    if z["input_rate_hz"].dtype.kind not in "iu":
                        raise InputFileError(path, None, "input_rate_hz must hold integers, got dtype "
                                             f"{z['input_rate_hz'].dtype}")
                    fields["input_rate_hz"] = z["input_rate_hz"].astype(np.int64)
        except InputFileError:
            raise
        except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
            raise InputFileError(path, None, f"not a readable .npz embeddings file ({exc})") from None
        es = EmbeddingSet.__new__(EmbeddingSet)
    for k, v in fields.items():
        object.__setattr__(es, k, v)
    _validate(es, path)
    return es


def read_extractor_info(path) -> dict | None:
    """The extractor record of an embeddings file (``.npz`` or Parquet), without reading its rows; None when it has
    none.

    Checked as :func:`read_embeddings` checks it, except that its ``name`` and ``dim`` are not compared with the
    file's (that needs the rows: read the file with :func:`read_embeddings` for the whole check).

    Raises
    ------
    InputFileError
        An unreadable file, or a record that breaks the format (:mod:`vpeval.io.extractor_info`).
    """
    from .files import check_input_file

    path = Path(path)
    check_input_file(path, "an embeddings file (.npz or .parquet)")
    if path.suffix == ".parquet":
        return _parquet_extractor_info(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            if "extractor_info" not in z:
                return None
            x = z["extractor_info"]
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise InputFileError(path, None, f"not a readable .npz embeddings file ({exc})") from None
    return _npz_extractor_info(x, path)


def _npz_extractor_info(x: np.ndarray, path) -> dict:
    if x.ndim != 0 or x.dtype.kind != "U":
        raise InputFileError(path, None, "extractor_info must be one text value (a 0-d string array of JSON), got "
                             f"dtype {x.dtype} and shape {x.shape}")
    return parse_extractor_info(str(x), path)


def _parquet_extractor_info(path) -> dict | None:
    """The record under the key ``extractor_info`` of a Parquet file's schema metadata, or None."""
    import pyarrow.parquet as pq

    try:
        with arrow_source(path) as src:
            meta = pq.read_schema(src).metadata or {}
    except Exception as exc:  # pyarrow raises several types for bad files
        raise InputFileError(path, None, f"not a readable Parquet file ({exc})") from None
    raw = meta.get(b"extractor_info")
    if raw is None:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputFileError(path, None, "extractor_info (schema metadata) is not UTF-8 text") from None
    return parse_extractor_info(text, path)


#: Condition label of a further anonymization run of a system under another pseudo-identity profile key:
#: ``anonymized@<key>`` (``vpeval anonymize --profile KEY``, then ``vpeval embed -c anonymized@KEY``).
PROFILE_CONDITION_PREFIX = "anonymized@"


def profile_key(condition: str) -> str | None:
    """The profile key of a condition label ``anonymized@<key>``, or None for any other label.

    Examples
    --------
    >>> profile_key("anonymized@p2"), profile_key("anonymized")
    ('p2', None)
    """
    c = str(condition)
    return c[len(PROFILE_CONDITION_PREFIX):] if c.startswith(PROFILE_CONDITION_PREFIX) else None


def valid_profile_key(key: str) -> bool:
    """Whether ``key`` can name a profile run: non-empty printable text without white space or ``@``."""
    return bool(key) and not any(ch.isspace() or not ch.isprintable() or ch == "@" for ch in key)


def check_conditions(es: EmbeddingSet, path, allowed=("original", "anonymized"), *, profiles: bool = False) -> None:
    """Raise :class:`InputFileError` naming ``path`` when a row of ``es`` has a condition not in ``allowed``
    (with ``profiles``, labels ``anonymized@<key>`` are allowed too: a key is printable text without white space
    or ``@``)."""
    present = np.unique(es.condition)
    bad = [c for c in present.tolist() if c not in allowed and not (
        profiles and profile_key(c) is not None and valid_profile_key(profile_key(c)))]
    if bad:
        row = int(np.flatnonzero(np.isin(es.condition, bad))[0])  # the first in the file
        raise InputFileError(path, None, f"row {row}: unknown condition label {str(es.condition[row])!r} (expected "
                             f"{' or '.join(repr(a) for a in allowed)}"
                             + (f", or {PROFILE_CONDITION_PREFIX}KEY for a run under another profile key"
                                if profiles else "") + ")")


def split_profile_runs(es: EmbeddingSet) -> tuple[EmbeddingSet, dict[str, EmbeddingSet]]:
    """The rows of ``es`` without profile runs, and each run ``anonymized@<key>`` as its own set.

    Parameters
    ----------
    es : EmbeddingSet
        Rows of any conditions (``n`` rows, dimension ``d``).

    Returns
    -------
    main : EmbeddingSet
        The rows of every other condition, in their order (``es`` itself when there is no profile run).
    runs : dict of str to EmbeddingSet
        Profile key -> that run's rows (condition labels kept), keys sorted; empty without profile runs.

    Examples
    --------
    >>> es = EmbeddingSet(np.eye(3), ["u1", "u1", "u1"], ["s"] * 3, ["original", "anonymized", "anonymized@k2"], "x")
    >>> main, runs = split_profile_runs(es)
    >>> main.condition.tolist(), list(runs), runs["k2"].condition.tolist()
    (['original', 'anonymized'], ['k2'], ['anonymized@k2'])
    """
    keys = np.array([profile_key(c) or "" for c in es.condition.tolist()], dtype=object)
    runs = {k: es.select(keys == k) for k in sorted(set(keys.tolist()) - {""})}
    return (es.select(keys == "") if runs else es), runs


def write_embeddings(path, es: EmbeddingSet, *, dtype=np.float32) -> None:
    """Write ``es`` to ``path`` (``.npz``, compressed) atomically.

    ``dtype`` is the on-disk precision of the embeddings (float32 by default: half the size, and the
    rounding (relative 6e-8) is far below any effect on cosine scores). The extractor record, when ``es`` has
    one, is stored as the ``extractor_info`` array (canonical JSON text: keys sorted).
    """
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(
        tmp,
        embeddings=es.embeddings.astype(dtype),
        utterance_id=es.utterance_id,
        speaker_id=es.speaker_id,
        condition=es.condition,
        extractor=np.array(es.extractor),
        **({} if es.input_rate_hz is None else {"input_rate_hz": es.input_rate_hz.astype(np.int64)}),
        **({} if es.extractor_info is None else {"extractor_info": np.array(dump_extractor_info(es.extractor_info))}),
    )
    os.replace(tmp, path)
