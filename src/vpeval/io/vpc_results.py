"""Outputs of the VoicePrivacy Challenge 2024 evaluation toolkit, read as the toolkit writes them.

Two kinds of files (Voice-Privacy-Challenge-2024 repository, ``evaluation/privacy/asv/asv.py``,
``evaluate_asv.py``, ``utils/data_io.py`` and the recipe's ``02_run.sh``):

* **ASV score files**: ``exp/<asv model>/<distance>_out/<enroll set>-<test set>/scores``, one line per trial
  ``<enroll speaker> <test utterance> <score>`` (space-separated, no header; pandas ``to_csv``), in the order of
  the data folder's ``trials`` file. The labels are not in it: they come from the Kaldi ``trials`` file of the
  test set (``data/<dataset>_<split>_trials_<gender>/trials``: ``<speaker> <utterance> target|nontarget``).
  The folder names carry the condition: ``<dataset>_<split>_enrolls<suffix>`` and
  ``<dataset>_<split>_trials_<gender><suffix>``, where a non-empty ``<suffix>`` (the anonymization suffix,
  e.g. ``_mcadams``) marks anonymized data.
* **Summary tables** ``results_summary/result_for_rank<suffix>``: the original and the anonymized run's
  ``results_*.txt`` concatenated; each block ``---- <name> results ----`` is a pandas ``DataFrame.to_string()``
  (index column first). The ASV blocks (``ASV_eval``, ``ASV_eval^anon``) have the columns
  ``dataset split gender enrollment trial EER`` (percent), and optionally ``EER-ci_lower EER-ci_upper``.
  Other blocks (SER, ASR) and the ``---- Time: ... ----`` lines are skipped.

Nothing is changed in those files; errors name the file and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputFileError
from .numbers import NumberSyntaxError, is_nan_word, parse_number

__all__ = ["VPCScoreFile", "read_result_for_rank", "find_vpc_score_files"]

_BLOCK = re.compile(r"^----\s*(?P<name>.+?)\s+results\s*----\s*$")
_ASV_COLUMNS = ["dataset", "split", "gender", "enrollment", "trial", "EER"]
#: ``<dataset>_<split>_enrolls<suffix>-<dataset>_<split>_trials_<gender><suffix>``; the dataset name may hold
#: underscores (``my_corpus_dev_enrolls-...``: the shortest dataset name for which the rest matches), the split and
#: the gender do not.
_FOLDER = re.compile(r"^(?P<ds>.+?)_(?P<split>[^_]+)_enrolls(?P<esuf>.*)-(?P=ds)_(?P=split)_trials_(?P<g>[^_]+)"
                     r"(?P<tsuf>.*)$")


_PERCENT_COLUMNS = ("EER", "EER-ci_lower", "EER-ci_upper")
#: How pandas' ``to_string`` prints a missing value: a cell "not defined" (e.g. the EER of a condition without
#: trials), not an error.
_UNDEFINED = ("NaN", "nan", "-nan", "+nan", "None", "<NA>", "NaT")


def _percent(path: Path, line: int, block: str, column: str, text: str) -> float | None:
    """A percentage cell: None when not defined (:data:`_UNDEFINED`), else a number in [0, 100]."""
    if text in _UNDEFINED or is_nan_word(text):
        return None
    try:
        v = parse_number(text)
    except NumberSyntaxError as exc:
        raise InputFileError(path, line, f"ASV block {block!r}: {column} {exc.text!r} {exc.reason}; expected a "
                             "percentage in [0, 100] (or NaN where not defined)") from None
    if not 0.0 <= v <= 100.0:
        raise InputFileError(path, line, f"ASV block {block!r}: {column} {text!r} is outside [0, 100]; the table's "
                             "EERs are percentages")
    return v


def read_result_for_rank(path) -> list[dict]:
    """The ASV rows of a toolkit summary table (``result_for_rank*`` or ``results_*.txt``).

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    list of dict
        One per ASV row, in file order: ``block`` (e.g. ``ASV_eval^anon``), ``dataset``, ``split``, ``gender``,
        ``enrollment``, ``trial`` (``original`` or ``anon``), ``eer`` (percent, as printed; None when the cell is
        not defined: ``NaN`` as pandas prints it), ``eer_ci_lower`` and ``eer_ci_upper`` (percent, or None when
        the table has no interval or the cell is not defined), ``not_defined`` (the columns among ``EER``,
        ``EER-ci_lower``, ``EER-ci_upper`` whose cell is NaN), ``line``.

    Raises
    ------
    InputFileError
        Missing or non-UTF-8 file; an ASV block whose header lacks a column of the format or names one twice, a
        row with another number of fields than its header, an EER (or interval end) that is not a number
        (:mod:`vpeval.io.numbers`: ``1_0`` is refused), infinite, beyond float64 (``1e400``) or outside [0, 100];
        no ASV row at all. With file and line.
    """
    from .files import check_input_file

    path = Path(path)
    check_input_file(path, "the toolkit's summary table (result_for_rank*)")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputFileError(path, None, f"cannot be read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise InputFileError(path, None, "is not UTF-8 text") from None
    rows: list[dict] = []
    block, header = None, None
    for i, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith("----"):
            m = _BLOCK.match(line)
            block = m.group("name") if m and m.group("name").upper().startswith("ASV") else None
            header = None
            continue
        if block is None or not line:
            continue
        fields = line.split()
        if header is None:
            missing = [c for c in _ASV_COLUMNS if c not in fields]
            if missing:
                raise InputFileError(path, i, f"ASV block {block!r}: header lacks column {missing[0]!r} "
                                     f"(expected {' '.join(_ASV_COLUMNS)})")
            twice = sorted({c for c in fields if fields.count(c) > 1})
            if twice:
                raise InputFileError(path, i, f"ASV block {block!r}: column {twice[0]!r} appears twice in the header")
            header = fields
            continue
        if len(fields) != len(header) + 1:  # the DataFrame index comes first
            raise InputFileError(path, i, f"ASV block {block!r}: expected {len(header) + 1} fields (index and "
                                 f"{' '.join(header)}), got {len(fields)}")
        rec = dict(zip(header, fields[1:]))
        values, undefined = {}, []
        for col in _PERCENT_COLUMNS:
            if col in rec:
                values[col] = _percent(path, i, block, col, rec[col])
                if values[col] is None:
                    undefined.append(col)
        rows.append({"block": block, "dataset": rec["dataset"], "split": rec["split"], "gender": rec["gender"],
                     "enrollment": rec["enrollment"], "trial": rec["trial"], "eer": values["EER"],
                     "eer_ci_lower": values.get("EER-ci_lower"), "eer_ci_upper": values.get("EER-ci_upper"),
                     "not_defined": undefined, "line": i})
    if not rows:
        raise InputFileError(path, None, "holds no ASV results block ('---- ASV_eval results ----' and a table)")
    return rows


@dataclass(frozen=True)
class VPCScoreFile:
    """One ASV score file of the toolkit and the condition its folder name gives.

    Attributes
    ----------
    path : Path
        The ``scores`` file.
    model : str
        ``anon`` when the ASV model's folder (a component of the path) starts with ``asv_anon``, else ``orig``.
    dataset, split, gender : str
    enrollment, trial : str
        ``original`` or ``anon`` (the toolkit's words): ``anon`` when the set name carries a suffix.
    test_set : str
        The test set without suffix, ``<dataset>_<split>_trials_<gender>``: the data folder holding ``trials``.
    """

    path: Path
    model: str
    dataset: str
    split: str
    gender: str
    enrollment: str
    trial: str
    test_set: str


def find_vpc_score_files(root) -> list[VPCScoreFile]:
    """Every toolkit ASV score file below ``root`` (``.../<enroll set>-<test set>/scores``), sorted by path.

    Folders whose name does not have the toolkit's form are ignored (listed nowhere else, so nothing is
    guessed). Raises InputFileError when ``root`` is not a folder or holds no such file.
    """
    root = Path(root)
    if not root.is_dir():
        raise InputFileError(root, None, "is not a folder")
    out = []
    for p in sorted(root.rglob("scores")):
        m = _FOLDER.match(p.parent.name)
        if not p.is_file() or m is None:
            continue
        rel = p.relative_to(root).parts
        model = "anon" if any(part.startswith("asv_anon") for part in rel[:-1]) else "orig"
        out.append(VPCScoreFile(p, model, m.group("ds"), m.group("split"), m.group("g"),
                                "anon" if m.group("esuf") else "original", "anon" if m.group("tsuf") else "original",
                                f"{m.group('ds')}_{m.group('split')}_trials_{m.group('g')}"))
    if not out:
        raise InputFileError(root, None, "holds no VoicePrivacy ASV score file "
                             "(<dataset>_<split>_enrolls[suffix]-<dataset>_<split>_trials_<gender>[suffix]/scores)")
    return out
