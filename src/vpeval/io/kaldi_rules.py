"""Kaldi's data-folder rules (``utils/validate_data_dir.sh``) shared by the reader and the writer of
:mod:`vpeval.io.kaldi_data`: line reading, sorted and unique keys in C order, the speaker order of ``utt2spk``."""

from __future__ import annotations

from pathlib import Path

from ..errors import InputFileError
from .files import check_input_file

__all__ = ["speaker_order_problem"]


def _lines(path: Path):
    """(line number, line without its end) of a UTF-8 text file; blank lines are errors."""
    check_input_file(path, "a Kaldi data file (text, one record per line)")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputFileError(path, None, f"cannot be read ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputFileError(path, line, "is not valid UTF-8 text") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for i, line in enumerate(lines, start=1):
        line = line.rstrip("\r")
        if "\r" in line:  # CR-only line ends would glue every record into one line and its path
            raise InputFileError(path, i, "a carriage return (CR) inside the line: the file has CR-only (classic "
                                          "Mac) line ends; convert them to LF, e.g. tr '\\r' '\\n'")
        if not line.strip():
            raise InputFileError(path, i, "blank line (Kaldi data files have one record on every line)")
        yield i, line


_FIX = "sort it with LC_ALL=C (Kaldi's utils/fix_data_dir.sh does)"


def _check_sorted_unique(path: Path, where: dict[str, int], what: str) -> None:
    """Kaldi's ``check_sorted_and_uniq``: first fields strictly increasing in C (byte) order.

    ``where`` maps each key to its line, in file order (duplicates are already errors of :func:`_keyed`).
    Python compares strings by code point, which is the byte order of their UTF-8 encoding.
    """
    prev = None
    for key, line in where.items():
        if prev is not None and not prev[0] < key:
            raise InputFileError(path, line, f"{what} {key!r} comes after {prev[0]!r} (line {prev[1]}): Kaldi "
                                 f"requires the file sorted by its first field in C (byte) order "
                                 f"(validate_data_dir.sh: 'not sorted or has duplicates'); {_FIX}")
        prev = (key, line)


def _check_speaker_order(path: Path) -> None:
    """Kaldi's ``sort -k2 -C utt2spk``: lines ordered by (the line from its second field on, whole line)."""
    prev = None
    for i, line in _lines(path):
        body = line.lstrip()
        first = body.split(None, 1)[0]
        key = (line[len(line) - len(body) + len(first):], line)
        if prev is not None and key < prev[0]:
            raise InputFileError(path, i, f"line {i} ({line.strip()!r}) sorts before line {prev[1]} "
                                 f"({prev[2]!r}) by speaker: Kaldi requires utt2spk sorted by speaker as well as "
                                 "by utterance (validate_data_dir.sh: 'not in sorted order when sorted first on "
                                 "speaker-id'); make each speaker id a prefix of its utterance ids, e.g. "
                                 "'<speaker>-<utterance>'")
        prev = (key, i, line.strip())


def speaker_order_problem(utt2spk: dict) -> tuple[str, str] | None:
    """The first two utterances that break Kaldi's speaker-order rule, or None.

    Parameters
    ----------
    utt2spk : dict str -> str
        Utterance id -> speaker id (ids without whitespace).

    Returns
    -------
    (str, str) or None
        Utterances ``u < v`` (consecutive in C order) whose speakers are in the opposite order, i.e. the file
        ``utt2spk`` sorted by utterance would not also be sorted by speaker (``sort -k2 -C``).
    """
    utts = sorted(utt2spk)
    for u, v in zip(utts, utts[1:]):
        if (utt2spk[v], f"{v} {utt2spk[v]}") < (utt2spk[u], f"{u} {utt2spk[u]}"):
            return u, v
    return None


def _check_id(kind: str, value: str) -> str:
    value = str(value)
    if not value or any(c.isspace() for c in value):
        raise InputFileError("<kaldi data>", None, f"{kind} id {value!r} is empty or holds whitespace")
    return value
