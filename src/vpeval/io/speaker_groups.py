"""Reader of a speaker -> group map in the Kaldi ``spk2gender`` layout (``speaker group`` per line)."""

from __future__ import annotations

from pathlib import Path

from ..errors import InputFileError

__all__ = ["read_speaker_groups"]


def read_speaker_groups(path) -> dict[str, str]:
    """Read a Kaldi ``spk2gender``-style map: one ``speaker group`` pair per line, separated by whitespace.

    Any group labels are accepted (``f``/``m`` in Kaldi and the VoicePrivacy data, or e.g. an accent); they are
    kept as written.

    Parameters
    ----------
    path : path-like

    Returns
    -------
    dict speaker id -> group, in file order

    Raises
    ------
    InputFileError
        Unreadable file, not UTF-8, a line without exactly two fields (blank lines included), a speaker given
        twice, or no line at all; the message names the file and line.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputFileError(p, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise InputFileError(p, None, f"cannot be read ({exc.strerror or exc})") from None
    out: dict[str, str] = {}
    first: dict[str, int] = {}
    for i, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if len(fields) != 2:
            raise InputFileError(p, i, f"expected 'speaker group' (2 fields), found {len(fields)} field(s)")
        spk, grp = fields
        if spk in out:
            raise InputFileError(p, i, f"speaker {spk!r} is given a second time (first on line {first[spk]})")
        out[spk], first[spk] = grp, i
    if not out:
        raise InputFileError(p, None, "no 'speaker group' line")
    return out
