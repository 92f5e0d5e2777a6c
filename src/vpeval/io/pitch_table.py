"""Per-utterance pitch correlations on disk: ``pitch_correlation.csv`` with columns ``utterance_id,rho_f0``.

Written by ``vpeval utility --pitch --save-pitch FILE``; read by ``vpeval audit`` from
``SYSTEM/pitch_correlation.csv``. ``rho_f0`` is written with Python's shortest exact float repr; an undefined
value (NaN, see :func:`vpeval.metrics.utility.pitch_correlation`) is written as an empty field.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from ..errors import InputFileError
from ..metrics.utility import PitchCorrelationResult
from .kaldi_write import atomic_write_bytes

__all__ = ["write_pitch_table", "read_pitch_table"]


def write_pitch_table(path, result: PitchCorrelationResult) -> None:
    """Write ``utterance_id,rho_f0`` rows (sorted by id), atomically."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["utterance_id", "rho_f0"])
    for u, v in result.utterances.items():
        w.writerow([u, "" if math.isnan(v) else repr(float(v))])
    data = buf.getvalue().encode("utf-8")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, lambda f: f.write(data))


def read_pitch_table(path) -> PitchCorrelationResult:
    """Read a pitch-correlation table back (mean over the defined values, as :func:`pitch_correlations`).

    Raises
    ------
    InputFileError
        Missing file or columns, an empty or repeated utterance id, a value that is not a number in [-1, 1],
        no rows; with the line.
    """
    from .files import check_input_file

    path = Path(path)
    check_input_file(path, "a pitch-correlation table (CSV)")
    if not path.is_file():
        raise InputFileError(path, None, "pitch correlation table does not exist")
    vals: dict[str, float] = {}
    with open(path, newline="", encoding="utf-8") as fh:
        r = csv.DictReader(fh)
        if r.fieldnames is None or not {"utterance_id", "rho_f0"} <= set(r.fieldnames):
            raise InputFileError(path, 1, "expected the columns utterance_id,rho_f0")
        for row in r:
            line = r.line_num
            u = (row["utterance_id"] or "").strip()
            if not u:
                raise InputFileError(path, line, "empty utterance_id")
            if u in vals:
                raise InputFileError(path, line, f"utterance {u!r} is listed again")
            text = (row["rho_f0"] or "").strip()
            if text == "":
                vals[u] = float("nan")
                continue
            try:
                v = float(text)
            except ValueError:
                raise InputFileError(path, line, f"rho_f0 {text!r} is not a number") from None
            if not -1.0 <= v <= 1.0:
                raise InputFileError(path, line, f"rho_f0 {v} is outside [-1, 1] (empty = undefined)")
            vals[u] = v
    if not vals:
        raise InputFileError(path, None, "no rows")
    vals = dict(sorted(vals.items()))
    ok = [v for v in vals.values() if not math.isnan(v)]
    return PitchCorrelationResult(vals, sum(ok) / len(ok) if ok else float("nan"), len(vals) - len(ok))
