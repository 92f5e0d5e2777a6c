"""The terminal console of every command: rich's, with one exit code of vpeval's own."""

from __future__ import annotations

import os
import sys

from rich.console import Console as _RichConsole

#: Exit code when the output's reader closed the pipe early (`vpeval verify F | head -1`): 128 + SIGPIPE, as the
#: shell reports for its own tools.
EXIT_BROKEN_PIPE = 141


class Console(_RichConsole):
    """:class:`rich.console.Console` whose closed output pipe (``vpeval verify F | head -1``) ends the command
    quietly with :data:`EXIT_BROKEN_PIPE`; rich's own :meth:`on_broken_pipe` (documented for subclassing) exits
    with 1, vpeval's code for an internal error."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        except (OSError, ValueError):
            pass
        raise SystemExit(EXIT_BROKEN_PIPE)


__all__ = ["Console", "EXIT_BROKEN_PIPE"]
