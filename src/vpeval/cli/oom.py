"""The end of a process whose memory ran out outside a command's own handling (:func:`vpeval.cli.common.handle_errors`):
the same out-of-memory line and exit code. A module of its own that imports nothing at its top, so that it loads
where little memory is left."""

from __future__ import annotations

import os
import sys

#: The out-of-memory line when even composing the detailed one (:func:`vpeval.cli.memory.memory_message`) runs
#: out; encoded now, while there is memory.
_OUT_OF_MEMORY = (b"vpeval: error: out of memory (the machine's memory or the address-space limit, ulimit -v, "
                  b"ran out). Nothing was written.\n")
#: :data:`vpeval.cli.common.EXIT_MEMORY` (not imported here: that module loads typer)
_EXIT_MEMORY = 4


def out_of_memory_exit():
    """End a process whose memory ran out outside a command's own handling (importing the libraries, parsing the
    options, the command-line framework's own objects) as a command's does: the out-of-memory line on stderr and
    exit code 4, never a traceback (a tester's find under ``ulimit -v`` 290 MiB: a MemoryError raised in
    ``contextlib.ExitStack.__init__``, with its traceback). The cleanups on the way up have run."""
    try:
        from .memory import memory_message

        line = f"vpeval: error: {memory_message({})}\n".encode()
    except (MemoryError, ImportError):
        line = _OUT_OF_MEMORY
    try:
        sys.stderr.flush()
    except (MemoryError, OSError, ValueError):
        pass
    try:
        os.write(2, line)
    except OSError:
        pass
    raise SystemExit(_EXIT_MEMORY)


def out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` says memory ran out: a MemoryError, or an import that could not map its library under
    ``ulimit -v`` (:func:`vpeval.cli.memory.address_space_exhausted`)."""
    if isinstance(exc, MemoryError):
        return True
    try:
        from .memory import address_space_exhausted

        return isinstance(exc, (ImportError, OSError)) and address_space_exhausted(exc)
    except (MemoryError, ImportError):
        return isinstance(exc, (ImportError, OSError)) and "Cannot allocate memory" in str(exc)


__all__ = ["out_of_memory", "out_of_memory_exit"]
