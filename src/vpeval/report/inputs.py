"""How the page names its inputs: no machine paths (report.json keeps them, with the full hashes)."""

from __future__ import annotations

import os
from pathlib import PurePath

__all__ = ["page_paths"]


def page_paths(inputs: list[dict]) -> list[str]:
    """Each input's ``path`` relative to the folder all inputs share (POSIX separators), as the page shows it.

    The common folder itself is a path of the machine the report ran on and is not shown; a single input shows
    its file name. Inputs without a path give ``""``.

    >>> page_paths([{"path": "/home/u/ex/a.npz"}, {"path": "/home/u/ex/train/b.npz"}, {}])
    ['a.npz', 'train/b.npz', '']
    """
    paths = [str(i.get("path", "") or "") for i in inputs]
    given = [os.path.abspath(p) for p in paths if p]
    if not given:
        return paths
    base = os.path.commonpath([os.path.dirname(p) for p in given])
    return [PurePath(os.path.relpath(os.path.abspath(p), base)).as_posix() if p else "" for p in paths]
