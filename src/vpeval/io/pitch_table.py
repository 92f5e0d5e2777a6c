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
from .csv_table import read_named_csv
from .kaldi_write import atomic_write_bytes
from .numbers import NumberSyntaxError, parse_number

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
        Missing file, a header other than ``utterance_id,rho_f0`` (in any order; a BOM is skipped), a ragged
        row, an empty or repeated utterance id, a value that is not a number in [-1, 1], no rows; with the line.
    """
    from .files import check_input_file

    path = Path(path)
    check_input_file(path, "a pitch-correlation table (CSV)")
    if not path.is_file():
        raise InputFileError(path, None, "pitch correlation table does not exist")
    vals: dict[str, float] = {}
    for line, row in read_named_csv(path, ("utterance_id", "rho_f0"), key="utterance_id")[1]:
        u, text = row["utterance_id"], row["rho_f0"]
        try:
            v = math.nan if text == "" else parse_number(text, allow_nan=True)
        except NumberSyntaxError as exc:
            raise InputFileError(path, line, f"rho_f0 {exc}") from None
        if not (math.isnan(v) or -1.0 <= v <= 1.0):  # empty (as written) or NaN: undefined
            raise InputFileError(path, line, f"rho_f0 {v} is outside [-1, 1] (empty = undefined)")
        vals[u] = v
    if not vals:
        raise InputFileError(path, None, "no rows")
    vals = dict(sorted(vals.items()))
    ok = [v for v in vals.values() if not math.isnan(v)]
    return PitchCorrelationResult(vals, sum(ok) / len(ok) if ok else float("nan"), len(vals) - len(ok))
