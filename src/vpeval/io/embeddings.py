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
============== ============ ==========================================================

``(utterance_id, condition)`` is the key: the original and the anonymized version of one utterance share the
utterance id, so matched pairs can be formed across conditions.

A Parquet table has the columns ``utterance_id, speaker_id, condition, embedding`` (the last a list of
floats of the same length in every row).
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputFileError

__all__ = ["EmbeddingSet", "read_embeddings", "write_embeddings", "check_conditions"]


@dataclass(frozen=True)
class EmbeddingSet:
    """Embeddings of utterances with their identities.

    Attributes
    ----------
    embeddings : ndarray of shape (n, d), float64
    utterance_id, speaker_id, condition : ndarray of shape (n,), str
    extractor : str
    """

    embeddings: np.ndarray
    utterance_id: np.ndarray
    speaker_id: np.ndarray
    condition: np.ndarray
    extractor: str = "unknown"

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
        )

    def concat(self, other: "EmbeddingSet", *, name=None) -> "EmbeddingSet":
        """Rows of ``self`` followed by those of ``other`` (same dimension and extractor required).

        Parameters
        ----------
        other : EmbeddingSet
        name : str or Path, optional
            The file the rows are being added to (e.g. ``embed --append``'s output), named in errors instead
            of ``<EmbeddingSet>``.

        Raises
        ------
        InputFileError
            Another extractor or dimension, or an (utterance, condition) key present in both.
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
        joined = EmbeddingSet.__new__(EmbeddingSet)
        for field, value in (("embeddings", np.vstack([self.embeddings, other.embeddings])),
                             ("utterance_id", np.concatenate([self.utterance_id, other.utterance_id])),
                             ("speaker_id", np.concatenate([self.speaker_id, other.speaker_id])),
                             ("condition", np.concatenate([self.condition, other.condition])),
                             ("extractor", self.extractor)):
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
    path = Path(path)
    if not path.exists():
        raise InputFileError(path, None, "file does not exist")
    if path.suffix == ".parquet":
        import pandas as pd

        try:
            df = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises several types for bad files
            raise InputFileError(path, None, f"not a readable Parquet file ({exc})") from None
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
                )
        except InputFileError:
            raise
        except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
            raise InputFileError(path, None, f"not a readable .npz embeddings file ({exc})") from None
        es = EmbeddingSet.__new__(EmbeddingSet)
    for k, v in fields.items():
        object.__setattr__(es, k, v)
    _validate(es, path)
    return es


def check_conditions(es: EmbeddingSet, path, allowed=("original", "anonymized")) -> None:
    """Raise :class:`InputFileError` naming ``path`` when a row of ``es`` has a condition not in ``allowed``."""
    present = np.unique(es.condition)
    bad = [c for c in present.tolist() if c not in allowed]
    if bad:
        row = int(np.flatnonzero(es.condition == bad[0])[0])
        raise InputFileError(path, None, f"row {row}: unknown condition label {bad[0]!r} (expected "
                             f"{' or '.join(repr(a) for a in allowed)})")


def write_embeddings(path, es: EmbeddingSet, *, dtype=np.float32) -> None:
    """Write ``es`` to ``path`` (``.npz``, compressed) atomically.

    ``dtype`` is the on-disk precision of the embeddings (float32 by default: half the size, and the
    rounding (relative 6e-8) is far below any effect on cosine scores).
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
    )
    os.replace(tmp, path)
