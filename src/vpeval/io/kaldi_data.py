"""Kaldi data folders (``wav.scp``, ``utt2spk``, ``spk2utt``, ``spk2gender``, ``text``) as audio input and output.

A folder is a Kaldi data folder when it holds a file ``wav.scp``. The files read (UTF-8, one record a line,
fields separated by whitespace, as in Kaldi's ``utils/validate_data_dir.sh``):

================ ======================================== =================================================
file             line                                     rule
================ ======================================== =================================================
``wav.scp``      ``<utt> <path>``                         required. ``<path>`` is the rest of the line: a
                                                          plain file path, relative paths resolved against
                                                          the data folder, or the working folder as in
                                                          Kaldi recipes (``paths_from``,
                                                          :mod:`vpeval.io.kaldi_paths`). Piped commands (``... |``) are
                                                          refused and **never executed**; so are Kaldi's
                                                          other extended file names (``-`` for stdin,
                                                          ``ark:``/``scp:`` specifiers, ``file.ark:123``
                                                          byte offsets, ``[...]`` ranges, leading ``|``).
``utt2spk``      ``<utt> <spk>``                          required; exactly the utterances of ``wav.scp``
                                                          (of ``segments`` when that file is present).
``segments``     ``<utt> <recording> <start> <end>``      optional; utterances as time ranges (seconds) of
                                                          the recordings ``wav.scp`` then lists by
                                                          recording id; ``end`` = ``-1`` means to the end
                                                          of the recording. ``0 <= start < end``; segments
                                                          of one recording must not overlap; with
                                                          ``check_files`` a segment must lie inside its
                                                          recording.
``spk2utt``      ``<spk> <utt> <utt> ...``                optional; if present it must agree with
                                                          ``utt2spk``.
``spk2gender``   ``<spk> m|f``                            optional; if present exactly the speakers of
                                                          ``utt2spk`` (Kaldi's rule).
``text``         ``<utt> <words...>``                     optional; if present exactly the utterances of
                                                          ``utt2spk`` (Kaldi's rule).
================ ======================================== =================================================

Kaldi's own rules (``utils/validate_data_dir.sh``) are checked too, each error naming file, line and rule:

* every file is sorted by its first field in C (byte) order, keys unique (``check_sorted_and_uniq``);
* ``utt2spk`` is also sorted by speaker (``sort -k2 -C``: ordered by the line from its second field on, then
  by the whole line); the cure is speaker ids that prefix their utterance ids (``<speaker>-<utterance>``);
* ``spk2utt``, expanded line by line, is ``utt2spk`` line for line;
* ``spk2gender`` lists exactly the speakers of ``utt2spk``; ``text`` exactly its utterances;
* ids hold no whitespace (a line splits at the first blanks).

Every error is an :class:`~vpeval.errors.InputFileError` naming the file and the line. Blank lines,
duplicate keys and malformed lines are errors, never skipped. Sex from ``spk2gender`` is reported as
``M``/``F`` (the spelling of vpeval's metadata tables, e.g. the bundled example's ``metadata.csv``).

:func:`write_kaldi_data_folder` writes a data folder back (sorted by key, as Kaldi requires; ``spk2utt``
derived from ``utt2spk``), so the output of ``vpeval anonymize`` on a data folder is itself a data folder.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputFileError
from .files import check_input_file
from .kaldi_rules import _check_id, _check_sorted_unique, _check_speaker_order, _lines, speaker_order_problem
from .kaldi_paths import check_paths_from, resolve_wav_path
from .kaldi_segments import KaldiSegment, _read_segments, _segment_lines
from .kaldi_write import atomic_write_bytes as _atomic_write


def atomic_write_bytes(path, data: bytes) -> None:
    _atomic_write(path, lambda f: f.write(data))

__all__ = [
    "KaldiDataFolder",
    "is_kaldi_data_folder",
    "read_kaldi_data_folder",
    "write_kaldi_data_folder",
    "speaker_order_problem",
    "kaldi_metadata_table",
    "KaldiSegment",
    "VPCTrial",
    "read_vpc_enrolls",
    "read_vpc_trials",
    "GENDERS",
]

GENDERS = {"m": "M", "f": "F"}
"""``spk2gender`` values and the sex label vpeval gives them."""

_ARK_OFFSET = re.compile(r":\d+$")


@dataclass(frozen=True)
class KaldiDataFolder:
    """The contents of a Kaldi data folder.

    Attributes
    ----------
    folder : Path
    wav : dict str -> Path
        Utterance id -> audio file (relative paths of ``wav.scp`` joined to ``folder``), sorted by id.
    utt2spk : dict str -> str
        Utterance id -> speaker id, the same keys as ``wav``.
    sex : dict str -> str or None
        Speaker id -> ``"M"``/``"F"`` from ``spk2gender``; None when the file is absent.
    text : dict str -> str or None
        Utterance id -> transcript (the rest of the line, inner whitespace kept); None when absent.
    wav_line : dict str -> int
        Line of ``wav.scp`` of each utterance (of ``segments`` when present), for error messages.
    segments : dict str -> KaldiSegment or None
        Utterance id -> its time range when the folder has a ``segments`` file; ``wav`` then maps each
        utterance to the audio file of its recording. None without ``segments``.
    """

    folder: Path
    wav: dict
    utt2spk: dict
    sex: dict | None = None
    text: dict | None = None
    wav_line: dict = field(default_factory=dict)
    segments: dict | None = None

    def speaker_sex(self) -> dict | None:
        """Utterance id -> sex (``M``/``F``), or None without ``spk2gender``."""
        if self.sex is None:
            return None
        return {u: self.sex[s] for u, s in self.utt2spk.items()}


def is_kaldi_data_folder(path) -> bool:
    """True if ``path`` is a folder holding a ``wav.scp`` file."""
    p = Path(path)
    return p.is_dir() and (p / "wav.scp").is_file()


def _split_key(path: Path, i: int, line: str, what: str) -> tuple[str, str]:
    parts = line.strip().split(None, 1)
    if len(parts) < 2:
        raise InputFileError(path, i, f"expected '<{what}> <value>', got {line.strip()!r}")
    return parts[0], parts[1].strip()


def _keyed(path: Path, what: str) -> tuple[dict[str, str], dict[str, int]]:
    out: dict[str, str] = {}
    where: dict[str, int] = {}
    for i, line in _lines(path):
        key, rest = _split_key(path, i, line, what)
        if key in out:
            raise InputFileError(path, i, f"{what} {key!r} is listed again (first on line {where[key]})")
        out[key] = rest
        where[key] = i
    return out, where


def _check_plain_path(path: Path, i: int, utt: str, spec: str) -> None:
    if spec.endswith("|") or spec.startswith("|"):
        raise InputFileError(
            path, i,
            f"utterance {utt!r} is given by a piped command ({spec!r}); vpeval never runs commands from "
            "wav.scp: write the audio to files first (run the command yourself) and list the file paths",
        )
    reason = None
    if spec == "-":
        reason = "'-' (standard input)"
    elif spec.startswith(("ark:", "scp:", "ark,", "scp,")):
        reason = "an ark:/scp: specifier"
    elif _ARK_OFFSET.search(spec):
        reason = "an archive byte offset (file:offset)"
    elif spec.endswith("]"):
        reason = "a [...] range or channel specifier"
    if reason is not None:
        raise InputFileError(
            path, i,
            f"utterance {utt!r} is given by a Kaldi extended file name ({spec!r}: {reason}); vpeval reads "
            "plain FLAC/WAV file paths only: extract the audio to files first",
        )


def read_kaldi_data_folder(folder, *, check_files: bool = True, paths_from: str | None = None) -> KaldiDataFolder:
    """Read a Kaldi data folder (format in the module docstring).

    Parameters
    ----------
    folder : str or Path
        Folder with ``wav.scp`` and ``utt2spk`` (and optionally ``spk2utt``, ``spk2gender``, ``text``).
    check_files : bool, default True
        Also check that every audio file of ``wav.scp`` exists (error naming its line).
    paths_from : {None, "data", "cwd"}
        Base of relative ``wav.scp`` paths (:mod:`vpeval.io.kaldi_paths`): the data folder (``"data"``, also the
        default None, which moreover refuses a relative path naming two different files from the two bases) or
        the working folder (``"cwd"``, as Kaldi recipes read them). With ``check_files``, a path missing from the
        chosen base but present from the other is an error naming both.

    Returns
    -------
    KaldiDataFolder

    Raises
    ------
    InputFileError
        Missing ``wav.scp``/``utt2spk``; a blank, malformed or duplicate line; a piped command or other
        extended file name in ``wav.scp``; an utterance in ``wav.scp`` but not in ``utt2spk`` or the reverse;
        ``spk2utt`` disagreeing with ``utt2spk``; a ``spk2gender`` value other than ``m``/``f`` or a speaker
        without one; a ``text`` utterance not in ``wav.scp``; a missing audio file. Always with file and line.
    """
    check_paths_from(paths_from)
    folder = Path(folder)
    scp = folder / "wav.scp"
    if not scp.is_file():
        raise InputFileError(folder, None, "not a Kaldi data folder (no wav.scp)")
    u2s_path = folder / "utt2spk"
    if not u2s_path.is_file():
        raise InputFileError(u2s_path, None, "a Kaldi data folder needs utt2spk (utterance -> speaker)")
    seg_path = folder / "segments"
    has_segments = seg_path.is_file()
    specs, wav_line = _keyed(scp, "recording" if has_segments else "utterance")
    wav: dict[str, Path] = {}
    for utt, spec in specs.items():
        i = wav_line[utt]
        _check_plain_path(scp, i, utt, spec)
        wav[utt] = resolve_wav_path(spec, folder, scp, i, utt, paths_from=paths_from, check_files=check_files)
    if not wav:
        raise InputFileError(scp, None, "lists no utterance")
    _check_sorted_unique(scp, wav_line, "recording" if has_segments else "utterance")
    segments = None
    if has_segments:
        segments = _read_segments(seg_path, wav, wav_line, scp, check_files)
        wav = {u: wav[sg.recording] for u, sg in segments.items()}
        wav_line = {u: sg.line for u, sg in segments.items()}
        scp = seg_path  # utterances are listed (and checked against utt2spk) by segments from here on
    utt2spk, u2s_line = _keyed(u2s_path, "utterance")
    for utt, spk in utt2spk.items():
        if len(spk.split()) != 1:
            raise InputFileError(u2s_path, u2s_line[utt], f"expected '<utterance> <speaker>', got {spk!r} "
                                 f"after {utt!r}")
    _check_sorted_unique(u2s_path, u2s_line, "utterance")
    _check_speaker_order(u2s_path)
    for utt, spk in utt2spk.items():
        if utt not in wav:
            raise InputFileError(u2s_path, u2s_line[utt], f"utterance {utt!r} is not in {scp}")
    for utt in wav:
        if utt not in utt2spk:
            raise InputFileError(scp, wav_line[utt], f"utterance {utt!r} has no speaker in {u2s_path}")
    s2u_path = folder / "spk2utt"
    if s2u_path.is_file():
        s2u, s2u_line = _keyed(s2u_path, "speaker")
        seen: dict[str, str] = {}
        for spk, rest in s2u.items():
            for utt in rest.split():
                if utt2spk.get(utt) != spk:
                    raise InputFileError(s2u_path, s2u_line[spk], f"utterance {utt!r} under speaker {spk!r} "
                                         f"disagrees with {u2s_path} ({utt2spk.get(utt)!r})")
                if utt in seen:
                    raise InputFileError(s2u_path, s2u_line[spk], f"utterance {utt!r} is listed twice")
                seen[utt] = spk
        for utt in utt2spk:
            if utt not in seen:
                raise InputFileError(u2s_path, u2s_line[utt], f"utterance {utt!r} is missing from {s2u_path}")
        _check_sorted_unique(s2u_path, s2u_line, "speaker")
        # Kaldi: spk2utt expanded line by line (utils/spk2utt_to_utt2spk.pl) must be utt2spk, line for line
        expanded = [(u, spk) for spk, rest in s2u.items() for u in rest.split()]
        for (u, spk), (v, _) in zip(expanded, utt2spk.items()):
            if u != v:
                raise InputFileError(s2u_path, s2u_line[spk], f"utterance {u!r} of speaker {spk!r} is out of "
                                     f"order: Kaldi requires spk2utt, expanded line by line, to list the utterances in the "
                                     f"order of {u2s_path} (validate_data_dir.sh: 'spk2utt and utt2spk do not "
                                     f"seem to match'); regenerate it with utils/utt2spk_to_spk2utt.pl")
    sex = None
    g_path = folder / "spk2gender"
    if g_path.is_file():
        genders, g_line = _keyed(g_path, "speaker")
        _check_sorted_unique(g_path, g_line, "speaker")
        speakers = set(utt2spk.values())
        for spk, line in g_line.items():
            if spk not in speakers:
                raise InputFileError(g_path, line, f"speaker {spk!r} has no utterance in {u2s_path}: Kaldi "
                                     "requires the speakers of spk2gender and spk2utt to be the same "
                                     "(validate_data_dir.sh); remove the line (utils/fix_data_dir.sh does)")
        sex = {}
        for spk, g in genders.items():
            if g not in GENDERS:
                raise InputFileError(g_path, g_line[spk], f"gender of speaker {spk!r} must be 'm' or 'f', got {g!r}")
            sex[spk] = GENDERS[g]
        for utt, spk in utt2spk.items():
            if spk not in sex:
                raise InputFileError(u2s_path, u2s_line[utt], f"speaker {spk!r} has no line in {g_path}")
        sex = {s: sex[s] for s in sorted(set(utt2spk.values()))}
    text = None
    t_path = folder / "text"
    if t_path.is_file():
        text = {}
        where: dict[str, int] = {}
        for i, line in _lines(t_path):
            parts = line.strip().split(None, 1)
            utt = parts[0]
            if utt in text:
                raise InputFileError(t_path, i, f"utterance {utt!r} is listed again (first on line {where[utt]})")
            if utt not in wav:
                raise InputFileError(t_path, i, f"utterance {utt!r} is not in {scp}")
            text[utt] = " ".join(parts[1].split()) if len(parts) > 1 else ""
            where[utt] = i
        _check_sorted_unique(t_path, where, "utterance")
        for utt in utt2spk:
            if utt not in text:
                raise InputFileError(u2s_path, u2s_line[utt], f"utterance {utt!r} has no line in {t_path}: Kaldi "
                                     "requires the utterances of text and utt2spk to be the same "
                                     "(validate_data_dir.sh); give it a line (an empty transcript is '<utt>' "
                                     "alone) or remove the utterance")
        text = dict(sorted(text.items()))
    order = sorted(wav)
    return KaldiDataFolder(
        folder, {u: wav[u] for u in order}, {u: utt2spk[u] for u in order}, sex, text,
        {u: wav_line[u] for u in order}, None if segments is None else {u: segments[u] for u in order},
    )


def kaldi_metadata_table(data: KaldiDataFolder, condition: str):
    """Utterance metadata of a data folder as vpeval's metadata table (the audit's ``metadata.csv``).

    Parameters
    ----------
    data : KaldiDataFolder
    condition : str
        Value of the ``condition`` column (``original`` or ``anonymized``).

    Returns
    -------
    pandas.DataFrame
        Columns ``utterance_id, speaker_id, condition`` and ``sex`` (``M``/``F``, only when the folder has
        ``spk2gender``), one row per utterance sorted by id, all strings.
    """
    import pandas as pd

    utts = list(data.wav)
    cols = {"utterance_id": utts, "speaker_id": [data.utt2spk[u] for u in utts], "condition": [condition] * len(utts)}
    if data.sex is not None:
        cols["sex"] = [data.sex[data.utt2spk[u]] for u in utts]
    return pd.DataFrame(cols, dtype=str)


@dataclass(frozen=True)
class VPCTrial:
    """One line of a VoicePrivacy ``trials`` file: ``<enroll_speaker> <test_utterance> target|nontarget``."""

    source: str
    line: int
    enroll_speaker: str
    test_utterance: str
    is_target: bool


def read_vpc_enrolls(path) -> dict[str, int]:
    """Read a VoicePrivacy ``enrolls`` list: one enrollment utterance id per line.

    Returns
    -------
    dict str -> int
        Utterance id -> line number, in file order.

    Raises
    ------
    InputFileError
        Missing or non-UTF-8 file, a blank line, a line with more than one field, a repeated id, an empty file.
    """
    path = Path(path)
    check_input_file(path, "a VoicePrivacy enrollment list (one utterance id per line)")
    if not path.exists():
        raise InputFileError(path, None, "enrollment list does not exist")
    out: dict[str, int] = {}
    for i, line in _lines(path):
        f = line.split()
        if len(f) != 1:
            raise InputFileError(path, i, f"expected one utterance id per line, got {line.strip()[:80]!r}")
        if f[0] in out:
            raise InputFileError(path, i, f"utterance {f[0]!r} is listed again (first on line {out[f[0]]})")
        out[f[0]] = i
    if not out:
        raise InputFileError(path, None, "lists no enrollment utterance")
    return out


def read_vpc_trials(path) -> list[VPCTrial]:
    """Read a VoicePrivacy / Kaldi ``trials`` list: ``<enroll_speaker> <test_utterance> target|nontarget``.

    Raises
    ------
    InputFileError
        Missing or non-UTF-8 file, a blank line, a line without exactly three fields, a label other than
        ``target``/``nontarget``, a repeated (speaker, utterance) pair, an empty file; with file and line.
    """
    path = Path(path)
    check_input_file(path, "a trials list (<enroll_speaker> <test_utterance> target|nontarget)")
    if not path.exists():
        raise InputFileError(path, None, "trials file does not exist")
    out: list[VPCTrial] = []
    seen: dict[tuple[str, str], int] = {}
    for i, line in _lines(path):
        f = line.split()
        if len(f) != 3:
            raise InputFileError(path, i, f"expected '<enroll_speaker> <test_utterance> target|nontarget', got "
                                 f"{line.strip()[:80]!r}")
        if f[2] not in ("target", "nontarget"):
            raise InputFileError(path, i, f"label must be 'target' or 'nontarget', got {f[2]!r}")
        key = (f[0], f[1])
        if key in seen:
            raise InputFileError(path, i, f"trial {f[0]} {f[1]} is listed again (first on line {seen[key]})")
        seen[key] = i
        out.append(VPCTrial(str(path), i, f[0], f[1], f[2] == "target"))
    if not out:
        raise InputFileError(path, None, "lists no trial")
    return out


def write_kaldi_data_folder(folder, wav: dict, utt2spk: dict, *, sex: dict | None = None,
                            text: dict | None = None, segments: dict | None = None) -> None:
    """Write ``wav.scp``, ``utt2spk``, ``spk2utt`` and, when given, ``spk2gender``, ``text`` and ``segments``.

    Parameters
    ----------
    folder : str or Path
        Output folder (created). Files are written atomically; existing ones are replaced.
    wav : dict str -> str or Path
        Utterance id -> audio file. Paths inside ``folder`` are written relative to it (POSIX form), so the
        folder can be moved as a whole; others are written as given.
    utt2spk : dict str -> str
        Utterance id -> speaker id, the same keys as ``wav``.
    sex : dict str -> str, optional
        Speaker id -> ``M``/``F`` (or ``m``/``f``), written as ``spk2gender``.
    text : dict str -> str, optional
        Utterance id -> transcript, written as ``text``.
    segments : dict str -> (str, float, float or None) or KaldiSegment, optional
        Utterance id -> (recording id, start s, end s or None for "to the end"), written as ``segments``
        (times as the shortest decimal that reads back exactly; None as ``-1``). ``wav`` then maps
        *recording* ids to audio files, and ``utt2spk`` has the keys of ``segments``.

    Raises
    ------
    InputFileError
        Ids that are empty or hold whitespace, paths with a line break or ending in ``|``, keys of ``wav``
        and ``utt2spk`` that differ, a speaker without sex, an unknown sex value, ``text`` keys that differ
        from ``utt2spk``'s, or speaker ids whose order contradicts the utterance ids' order (Kaldi's
        speaker-order rule, module docstring): every folder written passes Kaldi's ``validate_data_dir.sh``
        rules checked by :func:`read_kaldi_data_folder`, or nothing is written.
    """
    folder = Path(folder)
    seg_lines = None
    if segments is not None:
        seg_lines = _segment_lines(folder, wav, utt2spk, segments)
    elif set(wav) != set(utt2spk):
        raise InputFileError(folder, None, "wav and utt2spk must list the same utterances")
    for utt in utt2spk:
        _check_id("utterance", utt)
        _check_id("speaker", utt2spk[utt])
    bad = speaker_order_problem({str(u): str(s) for u, s in utt2spk.items()})
    if bad is not None:
        u, v = bad
        raise InputFileError(folder / "utt2spk", None, f"refused: utterances {u!r} (speaker {utt2spk[u]!r}) and "
                             f"{v!r} (speaker {utt2spk[v]!r}) are in opposite orders by utterance and by speaker, "
                             "so Kaldi's validate_data_dir.sh would reject the folder; make each speaker id a "
                             "prefix of its utterance ids ('<speaker>-<utterance>') and write again")
    if text is not None and set(text) != set(utt2spk):
        odd = sorted(set(text) ^ set(utt2spk))[0]
        raise InputFileError(folder / "text", None, f"refused: utterance {odd!r} is in only one of text and "
                             "utt2spk; Kaldi requires the same utterances in both")
    root = folder.resolve()
    scp, u2s = [], []
    for utt in sorted(utt2spk):
        u2s.append(f"{utt} {utt2spk[utt]}\n")
    for utt in sorted(wav):
        _check_id("utterance" if segments is None else "recording", utt)
        p = Path(wav[utt])
        try:
            shown = p.resolve().relative_to(root).as_posix()
        except ValueError:
            shown = str(p)
        if "\n" in shown or "\r" in shown or shown.strip() != shown or shown.endswith("|") or not shown:
            raise InputFileError(p, None, "cannot be written to wav.scp (line break, surrounding blanks or '|')")
        scp.append(f"{utt} {shown}\n")
    spk2utt: dict[str, list[str]] = {}
    for utt in sorted(utt2spk):
        spk2utt.setdefault(utt2spk[utt], []).append(utt)
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(folder / "wav.scp", "".join(scp).encode("utf-8"))
    atomic_write_bytes(folder / "utt2spk", "".join(u2s).encode("utf-8"))
    if seg_lines is not None:
        atomic_write_bytes(folder / "segments", "".join(seg_lines).encode("utf-8"))
    atomic_write_bytes(folder / "spk2utt",
                       "".join(f"{s} {' '.join(us)}\n" for s, us in sorted(spk2utt.items())).encode("utf-8"))
    if sex is not None:
        inverse = {v: k for k, v in GENDERS.items()}
        lines = []
        for spk in sorted(spk2utt):
            g = str(sex.get(spk, ""))
            g = inverse.get(g, g)
            if g not in GENDERS:
                raise InputFileError(folder / "spk2gender", None, f"speaker {spk!r} has sex {sex.get(spk)!r}; "
                                     "expected M/F or m/f")
            lines.append(f"{spk} {g}\n")
        atomic_write_bytes(folder / "spk2gender", "".join(lines).encode("utf-8"))
    if text is not None:
        lines = []
        for utt in sorted(text):
            _check_id("utterance", utt)
            words = " ".join(str(text[utt]).split())
            lines.append(f"{utt} {words}\n" if words else f"{utt}\n")
        atomic_write_bytes(folder / "text", "".join(lines).encode("utf-8"))


def relative_audio_path(utt: str, source: Path) -> Path:
    """Output path (relative to an output data folder) of utterance ``utt``: ``wav/<utt><suffix>``."""
    if "/" in utt or "\\" in utt or utt in (".", "..") or os.sep in utt:
        raise InputFileError(source, None, f"utterance id {utt!r} cannot be used as a file name")
    return Path("wav") / (utt + source.suffix)
