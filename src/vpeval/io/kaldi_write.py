"""Writers for Kaldi/VoicePrivacy trial and score files and for 1-to-N long score tables.

Formats (one trial per line, fields separated by one space, ``\\n`` line ends, UTF-8):

* ``trials`` (the key): ``<enroll> <test> target|nontarget``
* ``scores``: ``<enroll> <test> <score>``, the score written with :func:`format_score`: Python's shortest
  repr of the float64 value (``0.1``, ``-0.7071067811865475``, ``1e-05``, ``inf``, ``-inf``), which reads back
  bit-exactly with ``float()``.
* 1-to-N long table (``.csv`` or ``.parquet``): columns ``enroll_spk,trial_spk,trial_id,score``, one row per
  (probe, enrolled speaker); ``trial_spk`` is the probe's true speaker. CSV scores use :func:`format_score`;
  Parquet stores float64.

Every writer is atomic: it writes a temporary file in the target folder and renames it over the target
(``os.replace``), so a reader never sees a half-written file and a failed write leaves any previous file
untouched.

Examples
--------
>>> format_score(0.1), format_score(-2.5e-17), format_score(float("inf"))
('0.1', '-2.5e-17', 'inf')
"""

from __future__ import annotations

import csv
import io
import os
import tempfile
from pathlib import Path

import numpy as np

from ..errors import InvalidScoresError, VpevalError
from .trials import Trials

__all__ = [
    "atomic_write_bytes",
    "format_score",
    "write_kaldi_trials",
    "write_kaldi_scores",
    "write_score_table",
]

TABLE_COLUMNS = ("enroll_spk", "trial_spk", "trial_id", "score")


def format_score(x) -> str:
    """Shortest text that reads back (``float(text)``) to exactly the float64 ``x``; NaN is refused.

    Raises
    ------
    InvalidScoresError
        ``x`` is NaN.
    """
    v = float(x)
    if v != v:
        raise InvalidScoresError("cannot write a NaN score")
    return repr(v)


def atomic_write_bytes(path, write) -> None:
    """Call ``write(fileobj)`` on a temporary file next to ``path`` and rename it to ``path``."""
    path = Path(path)
    if not path.parent.is_dir():
        raise VpevalError(f"{path}: folder {path.parent} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(tmp, 0o666 & ~mask)  # mkstemp makes 0600; written files follow the umask
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def _check_keys(trials: Trials) -> tuple[np.ndarray, np.ndarray]:
    if trials.enroll is None or trials.test is None:
        raise VpevalError(f"{trials.source}: trials have no enroll/test keys; Kaldi files need them")
    for name, keys in (("enroll", trials.enroll), ("test", trials.test)):
        if keys.size == 0:
            continue
        bad = np.flatnonzero((np.char.str_len(keys) == 0) | _has_space(keys))
        if bad.size:
            raise VpevalError(
                f"{trials.source}: trial {int(bad[0])}: {name} key {str(keys[bad[0]])!r} is empty or contains "
                "white space; Kaldi keys are single tokens"
            )
    if len(trials):
        pairs = np.char.add(np.char.add(trials.enroll, "\x1f"), trials.test)
        uniq, counts = np.unique(pairs, return_counts=True)
        if (counts > 1).any():
            e, t = uniq[counts > 1][0].split("\x1f")
            raise VpevalError(f"{trials.source}: trial ({str(e)!r}, {str(t)!r}) appears more than once")
    return trials.enroll, trials.test


def _has_space(keys: np.ndarray) -> np.ndarray:
    return np.array([any(c.isspace() for c in k) for k in keys.tolist()], dtype=bool)


def write_kaldi_trials(path, trials: Trials) -> None:
    """Write the key file ``<enroll> <test> target|nontarget`` of ``trials`` (in their order), atomically.

    Raises
    ------
    VpevalError
        Missing keys, an empty key or one with white space, a repeated (enroll, test) pair, a missing folder.
    """
    enroll, test = _check_keys(trials)
    labels = np.where(trials.is_target, "target", "nontarget")
    text = "".join(f"{e} {t} {lab}\n" for e, t, lab in zip(enroll.tolist(), test.tolist(), labels.tolist()))
    atomic_write_bytes(path, lambda f: f.write(text.encode("utf-8")))


def write_kaldi_scores(path, trials: Trials) -> None:
    """Write the score file ``<enroll> <test> <score>`` of ``trials`` (in their order), atomically.

    Scores are written with :func:`format_score` (bit-exact round trip).

    Raises
    ------
    VpevalError
        As :func:`write_kaldi_trials`; :class:`~vpeval.errors.InvalidScoresError` for a NaN score.
    """
    enroll, test = _check_keys(trials)
    nan = np.flatnonzero(np.isnan(trials.scores))
    if nan.size:
        raise InvalidScoresError(f"{trials.source}: trial {int(nan[0])} has a NaN score ({nan.size} in all)")
    text = "".join(
        f"{e} {t} {float.__repr__(s)}\n" for e, t, s in zip(enroll.tolist(), test.tolist(), trials.scores.tolist())
    )
    atomic_write_bytes(path, lambda f: f.write(text.encode("utf-8")))


def write_score_table(path, table) -> None:
    """Write a 1-to-N long table ``enroll_spk,trial_spk,trial_id,score`` as CSV or Parquet, atomically.

    Parameters
    ----------
    path : str or Path
        ``.csv`` or ``.parquet`` (chosen by suffix).
    table : vpeval.pipeline.OneToN or pandas.DataFrame
        Anything with a ``to_frame()`` method returning the table, or the table itself with exactly those
        four columns (extra columns are refused so nothing is dropped silently).

    Raises
    ------
    VpevalError
        Unknown suffix, wrong columns, an empty id.
    InvalidScoresError
        A NaN score.
    """
    path = Path(path)
    df = table.to_frame() if hasattr(table, "to_frame") else table
    if list(df.columns) != list(TABLE_COLUMNS):
        raise VpevalError(f"{path}: table columns {list(df.columns)}, expected {list(TABLE_COLUMNS)}")
    scores = np.asarray(df["score"], dtype=np.float64)
    nan = np.flatnonzero(np.isnan(scores))
    if nan.size:
        raise InvalidScoresError(f"{path}: row {int(nan[0])} has a NaN score ({nan.size} in all)")
    ids = {c: np.asarray(df[c], dtype=str) for c in TABLE_COLUMNS[:3]}
    for c, v in ids.items():
        empty = np.flatnonzero(np.char.str_len(v) == 0) if v.size else np.array([], int)
        if empty.size:
            raise VpevalError(f"{path}: row {int(empty[0])}: empty {c}")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(TABLE_COLUMNS)
        w.writerows(
            zip(ids["enroll_spk"].tolist(), ids["trial_spk"].tolist(), ids["trial_id"].tolist(),
                map(float.__repr__, scores.tolist()))
        )
        data = buf.getvalue().encode("utf-8")
        atomic_write_bytes(path, lambda f: f.write(data))
    elif suffix == ".parquet":
        import pandas as pd

        out = pd.DataFrame({**{c: ids[c] for c in TABLE_COLUMNS[:3]}, "score": scores})
        atomic_write_bytes(path, lambda f: out.to_parquet(f, index=False))
    else:
        raise VpevalError(f"{path}: unknown table format {str(path.suffix)!r}; use .csv or .parquet")
