"""The ``vpeval`` console script. Ctrl-C while the command line's libraries load (about half a second, before
:func:`vpeval.cli.common.start_process` installs the command's handling) ends the process quietly with exit code
130, as an interrupted command does, instead of a KeyboardInterrupt traceback from inside an import (a tester's
find); nothing has been read or written by then. So does one that reaches the top before a command's own
handling of it (while the process starts or the options are parsed): the cleanups on its way have run."""

from __future__ import annotations

import os
import signal
import sys

from .oom import out_of_memory, out_of_memory_exit


def _interrupted_while_loading(signum, frame) -> None:
    sys.stderr.write("vpeval: interrupted\n")
    sys.stderr.flush()
    os._exit(130)


def _one_blas_thread_under_a_memory_limit() -> None:
    """Under ``ulimit -v`` or ``ulimit -d``, OpenBLAS starts with one thread unless the user chose a number: with
    several, its start inside numpy's or scipy's import spun forever retrying a failed allocation (a breaker's find
    at 200-260 MB, even on a 4-line file); with one, the command ends with its out-of-memory line. Set before the
    first import of numpy; no effect without such a limit."""
    from ..jit import address_space_limited  # the same test as the helper threads' guard; imports no numpy

    if address_space_limited() and "OPENBLAS_NUM_THREADS" not in os.environ:
        os.environ["OPENBLAS_NUM_THREADS"] = "1"


def main() -> None:
    _one_blas_thread_under_a_memory_limit()
    # a process started with SIGINT ignored (a background job of a script, nohup) keeps ignoring it, as its
    # parent does: a Ctrl-C meant for the foreground must not end it (a tester's `timeout -s INT` of the test
    # suite ended a vpeval started by a test, which the suite, ignoring it, survived)
    ours = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    previous = signal.signal(signal.SIGINT, _interrupted_while_loading) if ours else None
    try:
        from .main import main as run
    except (MemoryError, ImportError, OSError) as exc:
        if not out_of_memory(exc):
            raise
        out_of_memory_exit()

    if ours:
        signal.signal(signal.SIGINT, previous)
    try:
        run()
    except KeyboardInterrupt:  # before a command's own handling took over (starting up, parsing the options)
        sys.stderr.write("vpeval: interrupted\n")
        raise SystemExit(130) from None
    except MemoryError:  # before a command's own handling of it, or after it (vpeval.cli.main.main)
        out_of_memory_exit()
