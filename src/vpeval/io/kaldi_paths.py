"""Where a relative ``wav.scp`` path of a Kaldi data folder points (``paths_from``).

Kaldi programs open a ``wav.scp`` path as given, so a relative path is relative to the folder the recipe runs in
(the working folder, e.g. ``egs/<corpus>/s5``): ``paths_from="cwd"``. vpeval writes the paths of the folders it
makes relative to the data folder itself, so that a folder can be moved as a whole
(:func:`vpeval.io.kaldi_data.write_kaldi_data_folder`), and has always read them that way: ``paths_from="data"``,
the default, kept so that every folder vpeval wrote and every script that reads one keeps working.

A wrong base is never taken silently: with ``check_files``, a relative path that does not exist from the chosen
base but does from the other one is an error naming both files and the option that reads it; with the default
(``paths_from=None``, i.e. ``"data"`` not chosen explicitly), a relative path that exists from *both* bases as
two different files is an error too (the folder is ambiguous: say which base). Absolute paths are used as they
are.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import InputFileError, VpevalError

__all__ = ["PATHS_FROM", "check_paths_from", "resolve_wav_path"]

#: Bases of relative ``wav.scp`` paths, name -> meaning.
PATHS_FROM = {
    "data": "the data folder holding wav.scp (vpeval's default; the folders vpeval writes)",
    "cwd": "the working folder the command runs in (as Kaldi recipes resolve them)",
}

_OPTION = {"data": "--paths-from data (paths_from='data')", "cwd": "--paths-from cwd (paths_from='cwd')"}


def check_paths_from(paths_from) -> str | None:
    """``paths_from`` if it is None or a name of :data:`PATHS_FROM`; else a :class:`VpevalError`."""
    if paths_from is not None and paths_from not in PATHS_FROM:
        raise VpevalError(f"paths_from {paths_from!r}: expected one of {', '.join(PATHS_FROM)}")
    return paths_from


def _base(name: str, folder: Path) -> Path:
    return folder if name == "data" else Path(os.getcwd())


def resolve_wav_path(spec: str, folder: Path, scp: Path, line: int, utt: str, *, paths_from=None,
                     check_files: bool = True) -> Path:
    """The audio file of one ``wav.scp`` entry (module docstring).

    Parameters
    ----------
    spec : str
        The path as written in ``wav.scp``.
    folder : Path
        The data folder.
    scp, line, utt
        ``wav.scp``, the entry's line and its id, for messages.
    paths_from : {None, "data", "cwd"}
        Base of a relative path; None is ``"data"`` with the ambiguity check.
    check_files : bool
        Check that the file exists (and, by default, that the other base does not hold a different one).

    Returns
    -------
    Path
        ``folder / spec`` from the data folder (as before), ``<working folder>/spec`` (absolute) from the
        working folder, ``spec`` when absolute.

    Raises
    ------
    InputFileError
        A missing file (naming the other base's file when that one exists), or, by default, two different
        files from the two bases.
    """
    chosen = paths_from or "data"
    p = Path(spec)
    if p.is_absolute():
        if check_files and not p.is_file():
            raise InputFileError(scp, line, f"audio file of utterance {utt!r} does not exist: {p}")
        return p
    here = folder / p if chosen == "data" else Path(os.getcwd()) / p
    if not check_files:
        return here
    other_name = "cwd" if chosen == "data" else "data"
    other = _base(other_name, folder) / p
    if not here.is_file():
        if other.is_file():
            raise InputFileError(
                scp, line, f"audio file of utterance {utt!r} does not exist from the {PATHS_FROM[chosen]}: {here}; "
                f"the relative path {spec!r} exists from the {PATHS_FROM[other_name]}: {other}. If that is the file "
                f"meant, give {_OPTION[other_name]}")
        raise InputFileError(scp, line, f"audio file of utterance {utt!r} does not exist: {here}")
    if paths_from is None and other.is_file() and not os.path.samefile(here, other):
        raise InputFileError(
            scp, line, f"the relative path {spec!r} of utterance {utt!r} names two different files: {here} from "
            f"the data folder (the default) and {other} from the working folder (as Kaldi recipes read it); say "
            f"which with --paths-from data or --paths-from cwd (paths_from=)")
    return here
