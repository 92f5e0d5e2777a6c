"""The one check every reader of vpeval makes before it reads a file: is it a file that ends?

A reader given a device (``/dev/zero``, ``/dev/urandom``, a terminal), a socket or a folder where it expects a
file would read for ever or fail with an unclear message (``vpeval verify /dev/zero`` grew to 24 GB reading
zeros). :func:`check_input_file` refuses those at once, before anything is read, with an
:class:`~vpeval.errors.InputFileError` that names the file, what it is and what was expected.

Accepted: regular files and pipes (FIFOs). A pipe is accepted because reading one is a documented workflow
(``vpeval report /dev/stdin``, a shell's ``<(command)``; ``docs/output.md``: the bytes are copied once and
hashed) and a pipe ends when its writer closes it; a device never ends. A path that does not exist is left to
the reader, which says so in its own words (a missing file is not this check's business).
"""

from __future__ import annotations

import os
import stat

from ..errors import InputFileError

__all__ = ["check_input_file", "file_kind", "read_utf8"]


def file_kind(mode: int) -> str:
    """What ``st_mode`` is, in words (``a regular file``, ``a folder``, ``a character device``, ...)."""
    for test, words in ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a folder"),
                        (stat.S_ISFIFO, "a pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
                        (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return words
    return "not a regular file"


def check_input_file(path, what: str = "a file") -> None:
    """Refuse ``path`` at once when it exists and is neither a regular file nor a pipe.

    Parameters
    ----------
    path : str or Path
        The file a reader is about to read (symbolic links are followed).
    what : str, default "a file"
        What the reader expects, for the message (e.g. ``"a score file"``).

    Raises
    ------
    InputFileError
        ``path`` is a folder, a device (``/dev/zero``, a terminal given as ``/dev/stdin``), a socket: ``path:
        is a character device, not a regular file; expected a score file``. Nothing has been read then.

    Examples
    --------
    >>> check_input_file("/dev/zero", "a score file")
    Traceback (most recent call last):
    ...
    vpeval.errors.InputFileError: /dev/zero: is a character device, not a regular file; expected a score file \
(devices never end: give a file, or pipe the data in)
    """
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError, TypeError):  # missing, a broken link, an unreadable folder: the reader says so
        return
    if stat.S_ISREG(mode) or stat.S_ISFIFO(mode):
        return
    kind = file_kind(mode)
    hint = (" (a folder is read only where a command says so)" if stat.S_ISDIR(mode)
            else " (devices never end: give a file, or pipe the data in)" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "")
    raise InputFileError(path, None, f"is {kind}, not a regular file; expected {what}{hint}")


#: Bytes :func:`read_utf8` looks at for NUL bytes before it reads the rest of a file.
_PEEK_BYTES = 1 << 16


def read_utf8(path, unreadable: str = "cannot be read") -> str:
    """The whole text of a UTF-8 file, a byte-order mark dropped.

    Raises
    ------
    InputFileError
        The file cannot be read (``unreadable`` and the system's reason), or is not UTF-8 (the line and byte of
        the first bad byte).
    """
    from pathlib import Path

    p = Path(path)
    try:
        with open(p, "rb") as fh:
            head = fh.read(_PEEK_BYTES)
            zero = head.find(b"\0")
            if zero >= 0:  # e.g. a sparse or binary file: refused before the rest is read into memory
                raise InputFileError(p, head[:zero].count(b"\n") + 1,
                                     f"binary data (a NUL byte at byte {zero}), not text")
            data = head + fh.read()
    except OSError as exc:
        raise InputFileError(p, None, f"{unreadable} ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputFileError(p, line, f"not UTF-8 text (byte {exc.start})") from None
