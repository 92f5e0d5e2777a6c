"""A report as structured content (tables, figures, text) that the writers turn into JSON and HTML.

Sections never produce raw HTML: every string is escaped by the HTML writer, so identifiers from input
files (speaker ids, system names) cannot inject markup.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Table", "Figure", "Draw", "Paragraph", "Links", "Section", "Report", "safe_filename", "page_file"]


@dataclass
class Paragraph:
    text: str
    kind: str = "p"  # "p", "note", "warning", or "verdict-<word>" (a verdict of the fixed vocabulary)
    #: when given, the paragraph is rendered folded (HTML ``<details>``) under this one-line summary
    summary: str = ""


@dataclass
class Table:
    """A table: ``columns`` header strings, ``rows`` of cells (str or float), optional caption.

    Floats are formatted by the writer with ``fmt`` (default 4 significant digits). ``cell_classes`` colours
    text cells by their content (``leak``: red, ``chance``: green, ``ok``: blue).
    """

    columns: list[str]
    rows: list[list[Any]]
    caption: str = ""
    fmt: str = "{:.4g}"
    cell_classes: dict[str, str] = field(default_factory=dict)  # cell text -> CSS class (e.g. verdicts)


class Draw:
    """A figure's ``draw`` that can be sent to a worker process: ``Draw(fn, *args)(fig)`` calls ``fn(fig, *args)``
    (``fn`` a module-level function, ``args`` picklable: the arrays it plots). The report writer draws such
    figures in worker processes when it has several jobs, any other callable in its own process."""

    __slots__ = ("fn", "args")

    def __init__(self, fn: Callable, *args):
        self.fn, self.args = fn, args

    def __call__(self, fig) -> None:
        self.fn(fig, *self.args)


@dataclass
class Figure:
    """A plot: ``draw(fig)`` draws on a matplotlib Figure; saved as ``<name>.png`` beside the page
    (a :class:`Draw` where it can be: then it may be drawn in a worker process)."""

    name: str
    draw: Callable[[Any], None]
    caption: str = ""
    size: tuple[float, float] = (6.0, 4.5)


@dataclass
class Links:
    """A line of links to other parts of the report: ``lead`` text, then ``items`` of (label, target).

    A target is a section id of the same report (``"#<id>"`` is not needed: the writer resolves the page the
    section is on) or, with ``external=True``, a relative file name written beside the page. Labels and targets
    are escaped like every other string.
    """

    lead: str
    items: list[tuple[str, str]] = field(default_factory=list)
    kind: str = "note"


@dataclass
class Section:
    """A titled part of the report. ``folded`` sections are rendered closed (HTML ``<details>``, no scripts):
    their title stays visible and one click opens them. ``page`` names the HTML page the section is on: ``""``
    for the main page (``report.html``), else an appendix page (``<page>.html`` beside it, see
    :func:`page_file`); report.json keeps every section whatever its page."""

    id: str
    title: str
    blocks: list[Paragraph | Table | Figure | Links] = field(default_factory=list)
    data: dict = field(default_factory=dict)
    folded: bool = False
    page: str = ""


@dataclass
class Report:
    title: str
    sections: list[Section] = field(default_factory=list)
    inputs: list[dict] = field(default_factory=list)
    options: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)  # further top-level report.json objects (e.g. "attackers")
    page_titles: dict = field(default_factory=dict)  # appendix page -> its title (Section.page)
    #: called with each section as it is added (e.g. :class:`vpeval.report.writer.FigureDrafts`, which starts
    #: drawing its figures on worker processes); not part of the report's content
    drafts: Callable[[Section], None] | None = field(default=None, repr=False, compare=False)

    def add(self, section: Section) -> Section:
        """Append ``section``; its id must stay unique once made file-name safe (it names anchors and PNGs).
        ``drafts``, when set, is then called with it."""
        mine = safe_filename(section.id)
        if any(safe_filename(s.id) == mine for s in self.sections):  # cached: an audit adds about 300
            from ..errors import VpevalError

            raise VpevalError(f"report section id {section.id!r} collides with an existing one once made "
                              "file-name safe; give the inputs names that differ in letters or digits")
        self.sections.append(section)
        if self.drafts is not None:
            self.drafts(section)
        return section


@functools.lru_cache(maxsize=4096)
def safe_filename(name: str, max_len: int = 60) -> str:
    """A file-name-safe form of ``name``: ASCII letters, digits, ``-`` and ``_`` only, never empty.

    A name with letters or digits of another script (``系统A``, ``Система``), or one longer than ``max_len``
    once made safe, gets the first 8 hex digits of the sha256 of its UTF-8 bytes appended (after its first
    ``max_len - 9`` characters), so that distinct names stay distinct: two long section ids that differ only
    after the cut (``pseudo-speaker-verification-.../anonymized`` and ``.../original``) no longer collide.

    >>> safe_filename("../sys A/<script>")
    'sys_A_script'
    >>> safe_filename("系统") != safe_filename("中文")
    True
    >>> a, b = (safe_filename("pseudo-speaker-verification-resemblyzer-ge2e/centred-cosine/" + c)
    ...         for c in ("anonymized", "original"))
    >>> a != b and len(a) == len(b) == 60
    True
    """
    s = re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_-")
    if len(s) > max_len or any(c.isalnum() and not c.isascii() for c in name):
        import hashlib

        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        return f"{s[: max_len - 9].strip('_-') or 'x'}-{digest}"
    return s[:max_len] or "x"


def page_file(page: str) -> str:
    """The HTML file of a report page: ``report.html`` for the main page (``""``), else ``<page>.html`` with
    ``page`` made file-name safe (:func:`safe_filename`).

    >>> page_file(""), page_file("appendix-mcadams")
    ('report.html', 'appendix-mcadams.html')
    """
    return "report.html" if not page else f"{safe_filename(page)}.html"


# a number as written in a sentence (not the digits of a name such as log10 or oa2)
_NUMBER = re.compile(r"(?<![A-Za-z_\d.])\d+(?:[.,]\d+)*")


def merge_sentences(texts) -> list[tuple[list[str], str]]:
    """The sentences of several systems with the numbers taken out, said once: systems whose sentences differ in
    their numbers only share one sentence, each number that differs written ``a / b / c`` in the order of the
    systems (the one they share once).

    Parameters
    ----------
    texts : dict system -> sentence, or iterable of (system, sentence) pairs
        A system may have several sentences (pairs); its second sentence of one form joins the other systems'
        second ones of that form.

    Returns
    -------
    list of (systems, sentence)
        In the order of each group's first system; a system whose sentence matches no other's is alone.

    Examples
    --------
    >>> merge_sentences({"a": "floor 5.9 bits, 3 more", "b": "floor 6 bits, 3 more", "c": "other"})
    [(['a', 'b'], 'floor 5.9 / 6 bits, 3 more'), (['c'], 'other')]
    """
    pairs = list(texts.items() if isinstance(texts, dict) else texts)
    groups: dict[tuple[str, int], list[tuple[str, str]]] = {}
    seen: dict[tuple[str, str], int] = {}
    for system, text in pairs:
        template = _NUMBER.sub("#", text)
        k = seen[system, template] = seen.get((system, template), -1) + 1
        groups.setdefault((template, k), []).append((system, text))
    out = []
    for (template, _), members in groups.items():
        systems = [s for s, _ in members]
        numbers = [_NUMBER.findall(t) for _, t in members]
        parts = template.split("#")
        text = parts[0]
        for i, rest in enumerate(parts[1:]):
            values = [n[i] for n in numbers]
            text += (values[0] if len(set(values)) == 1 else " / ".join(values)) + rest
        out.append((systems, text))
    return out
