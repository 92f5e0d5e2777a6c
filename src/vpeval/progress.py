"""A progress bar on stderr for long loops over items (utterances, tasks), shared by the audio commands and the
cluster's task mapping; it writes nothing when ``quiet`` is true."""

from __future__ import annotations

import sys

__all__ = ["track"]


def track(iterable, *, total: int, description: str, quiet: bool):
    """Iterate with a rich progress bar on stderr (nothing when ``quiet`` is true)."""
    if quiet:
        yield from iterable
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    console = Console(file=sys.stderr)
    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    ) as progress:
        task = progress.add_task(description, total=total)
        for x in iterable:
            yield x
            progress.advance(task)
