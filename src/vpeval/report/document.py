"""A report as structured content (tables, figures, text) that the writers turn into JSON and HTML.

Sections never produce raw HTML: every string is escaped by the HTML writer, so identifiers from input
files (speaker ids, system names) cannot inject markup.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Table", "Figure", "Paragraph", "Section", "Report", "safe_filename"]


@dataclass
class Paragraph:
    text: str
    kind: str = "p"  # "p" or "note" or "warning"


@dataclass
class Table:
    """A table: ``columns`` header strings, ``rows`` of cells (str or float), optional caption.

    ``title_cells`` marks the first column as row headers. Floats are formatted by the writer with
    ``fmt`` (default 4 significant digits).
    """

    columns: list[str]
    rows: list[list[Any]]
    caption: str = ""
    fmt: str = "{:.4g}"


@dataclass
class Figure:
    """A plot: ``draw(fig)`` draws on a matplotlib Figure; saved as ``<name>.png`` beside the page."""

    name: str
    draw: Callable[[Any], None]
    caption: str = ""
    size: tuple[float, float] = (6.0, 4.5)


@dataclass
class Section:
    id: str
    title: str
    blocks: list[Paragraph | Table | Figure] = field(default_factory=list)
    data: dict = field(default_factory=dict)


@dataclass
class Report:
    title: str
    sections: list[Section] = field(default_factory=list)
    inputs: list[dict] = field(default_factory=list)
    options: dict = field(default_factory=dict)

    def add(self, section: Section) -> Section:
        if any(s.id == section.id for s in self.sections):
            raise ValueError(f"duplicate report section id {section.id!r}")
        self.sections.append(section)
        return section


def safe_filename(name: str, max_len: int = 60) -> str:
    """A file-name-safe form of ``name``: ASCII letters, digits, ``-`` and ``_`` only, never empty.

    >>> safe_filename("../sys A/<script>")
    'sys_A_script'
    """
    s = re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_-")[:max_len]
    return s or "x"
