"""Reader of a speaker -> group map in the Kaldi ``spk2gender`` layout (``speaker group`` per line)."""

from __future__ import annotations

from pathlib import Path

from ..errors import InputFileError

__all__ = ["read_speaker_groups"]


def read_speaker_groups(path) -> dict[str, str]:
    """Read a Kaldi ``spk2gender``-style map: one ``speaker group`` pair per line, separated by whitespace.

    A file named ``spk2gender`` is read by the rule of the Kaldi data-folder reader
    (:func:`vpeval.io.kaldi_data.read_kaldi_data`): every group must be ``m`` or ``f``, exactly (``F``, ``x`` are
    errors there and here). Any other file may hold any group labels (e.g. an accent), kept as written, but two
    labels that differ only in case (``F`` and ``f``) are refused: they would be reported as two groups.

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
        twice, no line at all, a ``spk2gender`` group other than ``m``/``f``, or (other files) two group labels
        that differ only in case; the message names the file and line.
    """
    from .kaldi_data import GENDERS

    from .files import check_input_file

    p = Path(path)
    check_input_file(p, "a speaker-group file (speaker group per line)")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputFileError(p, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise InputFileError(p, None, f"cannot be read ({exc.strerror or exc})") from None
    out: dict[str, str] = {}
    first: dict[str, int] = {}
    label_line: dict[str, tuple[str, int]] = {}  # case-folded label -> (label as first written, line)
    kaldi = p.name == "spk2gender"
    for i, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if len(fields) != 2:
            raise InputFileError(p, i, f"expected 'speaker group' (2 fields), found {len(fields)} field(s)")
        spk, grp = fields
        if spk in out:
            raise InputFileError(p, i, f"speaker {spk!r} is given a second time (first on line {first[spk]})")
        if kaldi and grp not in GENDERS:
            raise InputFileError(p, i, f"gender of speaker {spk!r} must be 'm' or 'f' (a Kaldi spk2gender file), "
                                       f"got {grp!r}")
        seen = label_line.setdefault(grp.casefold(), (grp, i))
        if seen[0] != grp:
            raise InputFileError(p, i, f"group {grp!r} differs from group {seen[0]!r} (line {seen[1]}) only in "
                                       "case; they would be reported as two groups: write one spelling")
        out[spk], first[spk] = grp, i
    if not out:
        raise InputFileError(p, None, "no 'speaker group' line")
    return out
