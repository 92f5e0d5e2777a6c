"""Reading and writing transcript files (references and recogniser output).

Two line formats are read; blank lines are skipped, LF or CRLF, UTF-8:

- **Kaldi** ``text`` files: ``<utterance_id> <word> <word> ...`` (the id is the first whitespace-separated
  field; the rest of the line, which may be empty, is the transcript).
- **Sphinx / CMU** ``transcription`` files: ``[<s>] <words> [</s>] (<utterance_id>)``, the id in
  parentheses at the end of the line (e.g. pocketsphinx's test data); ``<s>`` and ``</s>`` are dropped.

``fmt="auto"`` reads a file as Sphinx when *every* non-blank line ends with a parenthesised token without
spaces, and as Kaldi otherwise; pass ``fmt`` explicitly when a Kaldi file's lines all end in such a token.
Transcripts are kept as written (normalisation happens in :func:`vpeval.metrics.utility.wer`).
"""

from __future__ import annotations

import re
from pathlib import Path

from ...errors import InputFileError

__all__ = ["read_transcripts", "write_transcripts"]

_SPHINX = re.compile(r"^(?P<text>.*?)\s*\((?P<utt>[^()\s]+)\)\s*$")


def read_transcripts(path, *, fmt: str = "auto") -> dict[str, str]:
    """Read a transcript file into ``{utterance_id: text}``.

    Parameters
    ----------
    path : str or Path
    fmt : {"auto", "kaldi", "sphinx"}
        Line format (see the module doc).

    Returns
    -------
    dict
        utterance id -> transcript (words separated by single spaces; may be empty in Kaldi files).

    Raises
    ------
    InputFileError
        Missing or non-UTF-8 file, no transcript at all, a line that does not fit the format, or an
        utterance id given twice (naming both lines).

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "text")
    >>> _ = open(p, "w").write("u2 hello world\\nu1 it's fine\\n")
    >>> read_transcripts(p)
    {'u1': "it's fine", 'u2': 'hello world'}
    """
    if fmt not in ("auto", "kaldi", "sphinx"):
        raise ValueError(f"fmt must be 'auto', 'kaldi' or 'sphinx', got {fmt!r}")
    from ...io.files import check_input_file

    path = Path(path)
    check_input_file(path, "a transcript file")
    if not path.is_file():
        raise InputFileError(path, None, "transcript file does not exist")
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except UnicodeDecodeError as exc:
        raise InputFileError(path, None, f"is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    numbered = [(i + 1, ln.strip()) for i, ln in enumerate(lines) if ln.strip()]
    if not numbered:
        raise InputFileError(path, None, "no transcripts found (empty file)")
    if fmt == "auto":
        fmt = "sphinx" if all(_SPHINX.match(ln) for _, ln in numbered) else "kaldi"
    out: dict[str, str] = {}
    first: dict[str, int] = {}
    for no, ln in numbered:
        if fmt == "sphinx":
            m = _SPHINX.match(ln)
            if m is None:
                raise InputFileError(path, no, "expected '<s> words </s> (utterance_id)' (Sphinx transcription)")
            utt, words = m.group("utt"), m.group("text").split()
            if words[:1] == ["<s>"]:
                words = words[1:]
            if words[-1:] == ["</s>"]:
                words = words[:-1]
        else:
            fields = ln.split()
            utt, words = fields[0], fields[1:]
        if utt in out:
            raise InputFileError(path, no, f"utterance {utt!r} is also given on line {first[utt]}")
        out[utt] = " ".join(words)
        first[utt] = no
    return dict(sorted(out.items()))


def write_transcripts(path, transcripts: dict[str, str]) -> None:
    """Write ``{utterance_id: text}`` as a Kaldi ``text`` file, sorted by id (line breaks in a text become
    spaces).  Parent folders are created.

    Raises
    ------
    InputFileError
        An utterance id that is empty or contains whitespace (it would not read back).
    """
    path = Path(path)
    for utt in transcripts:
        if not utt or any(c.isspace() for c in utt):
            raise InputFileError(path, None, f"utterance id {utt!r} is empty or contains whitespace")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for utt in sorted(transcripts):
            text = " ".join(str(transcripts[utt]).split())
            fh.write(f"{utt} {text}".rstrip() + "\n")
