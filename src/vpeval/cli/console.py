"""The terminal console of every command: rich's, with one exit code of vpeval's own."""

from __future__ import annotations

import os
import sys

from rich.console import Console as _RichConsole

#: Exit code when the output's reader closed the pipe early (`vpeval verify F | head -1`): 128 + SIGPIPE, as the
#: shell reports for its own tools.
EXIT_BROKEN_PIPE = 141


def _silence_stdout() -> None:
    """Point standard output at the null device: nothing more is written to the closed pipe (no second error when
    the interpreter flushes at exit)."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def printable_streams() -> None:
    """Standard output and error write a character their encoding lacks as a backslash escape (``\\xf6``) instead
    of failing: under an ASCII locale (``LC_ALL=C``) a file name or speaker id with ``ö`` ended the command with a
    UnicodeEncodeError, reported as bad text (a breaker's find). Nothing changes under a UTF-8 locale."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if "utf" not in (stream.encoding or "").lower():
                stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):  # replaced by a caller (pytest's capture) or closed
            pass


class Console(_RichConsole):
    """:class:`rich.console.Console` whose closed output pipe (``vpeval verify F | head -1``) ends the command
    quietly with :data:`EXIT_BROKEN_PIPE`; rich's own :meth:`on_broken_pipe` (documented for subclassing) exits
    with 1, vpeval's code for an internal error."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        _silence_stdout()
        raise SystemExit(EXIT_BROKEN_PIPE)


def print_item(console, label: str, text: str) -> None:
    """One indented ``label: text`` item (a verdict's numbers, a note) wrapped at the console's width between
    words, its continuation lines indented under the text, so that the items stay apart in a long output (rich
    wraps a line back to the margin)."""
    import textwrap

    from rich.markup import escape

    width = max(40, console.width)
    console.print(escape(textwrap.fill(f"{label}: {text}", width=width, initial_indent="  ", subsequent_indent="    ",
                                       break_on_hyphens=False)), overflow="fold")


def flush_stdout() -> None:
    """Flush what the command printed; when the reader of the output has closed the pipe (`vpeval verify F |
    head -1`, output still buffered at the end), leave quietly with exit code 141, as the shell's own tools do."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        raise SystemExit(EXIT_BROKEN_PIPE) from None
    except (OSError, ValueError):  # stdout closed or not a file: nothing to flush
        pass


__all__ = ["Console", "EXIT_BROKEN_PIPE", "flush_stdout", "print_item"]
