"""Write a :class:`~vpeval.report.document.Report` as ``report.json`` + ``report.html`` + PNG figures.

Writes follow the output policy of :mod:`vpeval.io.output` (refuse an existing output, ``--force`` only
over an earlier output proved by its manifest, a lock against concurrent writers, atomic install).
"""

from __future__ import annotations

import datetime as _dt
import html
import json
import math
from json.encoder import encode_basestring_ascii
from pathlib import Path

from .._version import __version__
from ..io.output import OutputExistsError, claim_folder, sha256_file
from .document import Draw, Figure, Links, Paragraph, Report, Table, page_file, safe_filename
from .inputs import extractor_lines, page_paths

__all__ = ["write_report", "render_report", "FigureDrafts", "png_bytes", "OutputExistsError", "sha256_file",
           "SCHEMA_VERSION", "resolve_refs", "REF_MIN_CHARS"]

SCHEMA_VERSION = "3.5"  # 3.5: audits' verdicts add deciding_attacker and deciding_trial_type (the attacker the verdict's rule names, as the verdict table shows); 3.4: each verdict test's deciding_member (the member of the smallest adjusted p-value, which a partial verdict's table row names) and cells (the members tested on cells of their score axis); 3.3: each system's section "population" (its strongest 1-to-N attacker's curves against the population size, oo and oa, and combined probes; data = PopulationReading.to_dict()); 3.2: inputs[].label_counts (score inputs read with a label mapping), every score-input option in options, the per-gender column 'EER (%)' renamed 'EER closest-point (%)'; numbers rounded to 10 significant digits; trial type cross-profile (one run) renamed aa-centroid, cross-profile and cross-profile-same-source across profile keys (anonymized@KEY rows); 3.1: oaoo/oaaa as Beyond-EER builds them (oa targets, oo/aa impostors), readings.oaoo, aggregate above_half_flag and summary above_half_flag (were compression_flag, oaaa_compression_threshold); the JSON also gains test.tested_share; 3.0: verdicts decided by the privacy profile (delta, eps_low/eps/eps_high_bits, profile, plan; test.protection and more_units_needed gone); 2.3: inputs[].extractor_info (the embedding file's extractor record, when it has one); arrays that are functions of other stored ones left out (rank disclosure per rank, CMC, closed-set linkability), verification names and units and the chance value and floor stored once; 2.2: repeated arrays and objects stored once ({"$ref": JSON pointer}), compact JSON, "pages" and each section's "page"; 2.1: test.protection (the pooled bound of "protects") replaces test.floor_bound_bits; 2.0: verdicts from the family-wise worst-case test (fields replaced); 1.3: null for not computed




# C0/C1 control characters (tab and newline excepted) and the bidirectional controls that reorder text
_CONTROL = "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"


def _escape(text) -> str:
    """HTML-escaped ``text`` with control and bidirectional-control characters (from ids in input files)
    shown as visible escapes (``\\x1b``, ``\\u202e``): escaped, never passed raw into the page nor dropped."""
    import re

    def visible(m):
        c = ord(m.group())
        return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"

    return re.sub(_CONTROL, visible, html.escape(str(text)))


#: Significant digits of every finite float in report.json: a relative rounding of at most 5e-11, far below the
#: resolution of any estimate in it (intervals of whole percent), and a third of the file's size saved.
JSON_DIGITS = 10


def _text(s: str) -> str:
    """``s`` without lone surrogates (:func:`_jsonable`); unchanged when it has none."""
    if s.isascii():
        return s
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _jsonable(x, digits: int | None = None):
    """JSON-ready copy of ``x``. The rule of every vpeval JSON output: NaN (a number that could not be computed;
    an ``error`` field beside it says why) is ``null``; +-inf are the strings ``"inf"`` and ``"-inf"``. With
    ``digits``, finite floats are rounded to that many significant digits (report.json: :data:`JSON_DIGITS`). A
    string holding the surrogate escapes of a name's undecodable bytes (a file name under an ASCII locale) is
    written as the name's UTF-8 text, its other bytes as backslash escapes (valid UTF-8 JSON)."""
    if isinstance(x, str):
        return _text(x)
    if isinstance(x, float):
        if math.isnan(x):
            return None
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return x if digits is None else float(f"{x:.{digits}g}")
    if isinstance(x, dict):
        return {_text(str(k)): _jsonable(v, digits) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v, digits) for v in x]
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):  # numpy scalars
        return _jsonable(x.item(), digits)
    return x


def report_json(report: Report, generated_at: str) -> str:
    doc = {
        "schema": "vpeval-report",
        "schema_version": SCHEMA_VERSION,
        "vpeval_version": __version__,
        "generated_at": generated_at,
        "title": report.title,
        "inputs": report.inputs,
        "options": report.options,
        **{k: v for k, v in report.extra.items() if k not in ("schema", "sections")},
        "pages": {page_file(p): _page_title(report, p) for p in report_pages(report)},
        "sections": [{"id": s.id, "title": s.title, "page": page_file(s.page), "data": s.data}
                     for s in report.sections],
    }
    # compact (no indentation: it doubled the file) and every repeated array or object stored once
    return json.dumps(_store_once(_jsonable(doc, JSON_DIGITS)), separators=(",", ":"), sort_keys=False,
                      allow_nan=False) + "\n"


#: Arrays and objects whose compact JSON is at least this long are stored once: a later equal one is written as
#: ``{"$ref": "<JSON pointer to the first>"}`` (RFC 6901). Shorter ones cost less than their reference.
REF_MIN_CHARS = 200


def _pointer_part(key) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


def _store_once(doc):
    """``doc`` (JSON-ready) with every array or object of at least :data:`REF_MIN_CHARS` characters that equals
    one met earlier in document order replaced by ``{"$ref": pointer}`` to that first occurrence. The first
    occurrence is kept whole (its own repeated parts may be references too); :func:`resolve_refs` undoes it."""
    first: dict[str, str] = {}

    def walk(x, pointer: str):
        # returns (the value to write, the compact JSON of the original value)
        if isinstance(x, dict):
            items = [(k, walk(v, f"{pointer}/{_pointer_part(k)}")) for k, v in x.items()]
            text = "{" + ",".join(f"{_json_key(k)}:{t}" for k, (_, t) in items) + "}"
            out = {k: v for k, (v, _) in items}
        elif isinstance(x, list):
            items = [walk(v, f"{pointer}/{i}") for i, v in enumerate(x)]
            text = "[" + ",".join(t for _, t in items) + "]"
            out = [v for v, _ in items]
        else:
            return x, _json_leaf(x)
        if len(text) >= REF_MIN_CHARS and pointer:
            if text in first:
                return {"$ref": first[text]}, text
            first[text] = pointer
        return out, text

    return walk(doc, "")[0]


def _json_key(k) -> str:
    return encode_basestring_ascii(k) if type(k) is str else json.dumps(k)


def _json_leaf(x) -> str:
    """``json.dumps(x, allow_nan=False)`` of a leaf, without its machinery for the common types (the walk of
    :func:`_store_once` encodes every leaf of report.json: 3.3 s of the demo's main process with json.dumps)."""
    if x is None:
        return "null"
    if x is True:
        return "true"
    if x is False:
        return "false"
    t = type(x)
    if t is str:
        return encode_basestring_ascii(x)
    if t is int:
        return int.__repr__(x)
    if t is float and math.isfinite(x):
        return float.__repr__(x)
    return json.dumps(x, allow_nan=False)  # anything else, and the error a non-finite float gets


def resolve_refs(doc):
    """A report.json document (as loaded by :func:`json.load`) with every ``{"$ref": pointer}`` replaced by the
    value it points to (RFC 6901 JSON pointer into the same document), recursively.

    Parameters
    ----------
    doc : dict
        The loaded report.json.

    Returns
    -------
    dict
        A new document; equal arrays and objects are the same Python objects (do not modify them in place).

    Raises
    ------
    VpevalError
        A reference points at nothing.

    Examples
    --------
    >>> resolve_refs({"a": [1, 2], "b": {"$ref": "/a"}})
    {'a': [1, 2], 'b': [1, 2]}
    """
    from ..errors import VpevalError

    def target(pointer: str):
        x = doc
        for part in pointer.split("/")[1:]:
            part = part.replace("~1", "/").replace("~0", "~")
            try:
                x = x[int(part)] if isinstance(x, list) else x[part]
            except (KeyError, IndexError, ValueError):
                raise VpevalError(f"report.json: the reference {pointer!r} points at nothing") from None
        return x

    def walk(x):
        if isinstance(x, dict):
            if len(x) == 1 and isinstance(x.get("$ref"), str):
                return walk(target(x["$ref"]))
            return {k: walk(v) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v) for v in x]
        return x

    return walk(doc)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;max-width:1180px;padding:1em 2em;
color:#222;line-height:1.45}
h1{font-size:1.6em;border-bottom:2px solid #345;padding-bottom:.2em}h2{font-size:1.25em;margin-top:1.5em;color:#234}p{margin:.6em 0}
table{border-collapse:collapse;margin:.8em 0;font-size:.9em;line-height:1.3}th,td{border:1px solid #ccd;
padding:.15em .5em;text-align:left;vertical-align:top}th{background:#eef2f7}td.num{text-align:right;font-variant-numeric:tabular-nums}
caption{caption-side:top;text-align:left;font-weight:600;padding:.3em 0}figure{margin:1em 0}
figure img{max-width:100%;border:1px solid #dde}figcaption{font-size:.85em;color:#555}
.note{color:#555;font-size:.9em}.warning{background:#fff4e0;border-left:4px solid #e90;padding:.4em .8em}
td.leak{background:#fde2e0;color:#8b1a10;font-weight:600}td.chance{background:#e3f4e1;color:#1d5e20}
td.ok{background:#e6eef8;color:#1f4e79}td.partial{background:#fff0d6;color:#7a4a00;font-weight:600}
nav a{margin-right:1em}footer{margin-top:3em;font-size:.8em;color:#777}
details>summary{cursor:pointer}section>details>summary{margin:1.6em 0 .3em}
details>summary h2{display:inline;margin:0}
nav details>summary{color:#345;font-size:.9em}
p[class^=verdict-]{font-size:1.05em;padding:.5em .9em;border-left:6px solid #888;background:#f3f3f3}
p.verdict-leaks{border-color:#c0392b;background:#fde2e0}p.verdict-partial{border-color:#e69500;background:#fff0d6}
p.verdict-protects{border-color:#2e7d32;background:#e3f4e1}p.verdict-inconclusive{border-color:#1f4e79;background:#e6eef8}
#verdict h2{margin-top:.6em}p.subtitle{margin:-.4em 0 .3em;color:#345;font-size:.95em}
.scroll{overflow-x:auto;max-width:100%}.scroll>table{margin:.4em 0}
p,figcaption{overflow-wrap:anywhere}td{max-width:32em;overflow-wrap:break-word}
table.repro{table-layout:fixed;width:100%}table.repro td{overflow-wrap:anywhere}
table.repro td:nth-child(3){width:45%}table.repro code{word-break:break-all}
nav.pages{margin:.4em 0}nav.pages a{margin-right:1em}td.nw{white-space:nowrap}
""" + ",".join(f".r{j} td:nth-child({j})" for j in range(1, 31)) + "{text-align:right;font-variant-numeric:tabular-nums}\n"
#: Columns 1..30 of a table whose cells are all numbers are right-aligned by the table's class ``r<j>`` (one
#: attribute per table instead of ``class="num"`` on each of its cells: a third of an audit appendix's bytes).
_RIGHT_COLUMNS = 30


def _numeric_columns(b) -> set[int]:
    """1-based columns (at most :data:`_RIGHT_COLUMNS`) of table ``b`` whose every cell is a number."""
    def number(v):
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    if not b.rows:
        return set()
    n = min(len(b.columns), _RIGHT_COLUMNS)
    return {j + 1 for j in range(n) if all(j < len(r) and number(r[j]) for r in b.rows)}


#: Names without spaces longer than this (characters) may break after each "/" in a table cell (:func:`_cell`).
_BREAK_NAMES_FROM = 36


def _cell(v, fmt, classes=None, aligned: bool = False) -> str:
    """One ``<td>``; a number gets ``class="num"`` unless its column is right-aligned by the table (``aligned``)."""
    td = "<td>" if aligned else '<td class="num">'
    if isinstance(v, float):
        if math.isnan(v):
            return f"{td}—</td>"
        if math.isinf(v):
            return f'{td}{"∞" if v > 0 else "−∞"}</td>'
        return f"{td}{_escape(fmt.format(v + 0.0))}</td>"  # + 0.0: a negative zero reads 0, not -0
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{td}{v}</td>"
    cls = (classes or {}).get(str(v))
    # a long name without spaces (an attacker's extractor/back-end/condition) may break after each "/": it is one
    # word to the browser, which otherwise widens its column until the table scrolls (a tester's find); shorter
    # names stay whole (rows that wrap make the page longer)
    text = _escape(str(v))
    if len(text) > _BREAK_NAMES_FROM and " " not in text:
        text = text.replace("/", "/<wbr>")
    return f'<td class="{_escape(cls)}">{text}</td>' if cls else f"<td>{text}</td>"


def _href(report: Report, target: str, page: str) -> str:
    """The link to ``target`` from ``page``: a section id of ``report`` (``#id`` on its own page, ``<page>.html#id``
    on another), else ``target`` as given (a file written beside the page)."""
    sec = next((s for s in report.sections if s.id == target), None)
    if sec is None:
        return target
    anchor = f"#{safe_filename(sec.id)}"
    return anchor if sec.page == page else page_file(sec.page) + anchor


def report_pages(report: Report) -> list[str]:
    """The pages of ``report`` in order of their first section: ``""`` (the main page, always) first."""
    pages = [""]
    for s in report.sections:
        if s.page not in pages:
            pages.append(s.page)
    return pages


def _page_title(report: Report, page: str) -> str:
    return report.page_titles.get(page, page) if page else report.title


#: Titles longer than this (characters) are shown as a heading and a subtitle (:func:`report_html`).
_LONG_TITLE = 90


def report_html(report: Report, figure_files: dict[int, str], generated_at: str, page: str = "") -> str:
    """The HTML of one page of ``report``: the main page (``page=""``, with the links to every appendix page and
    the reproducibility table) or an appendix page (with a link back to the main page)."""
    e = _escape
    sections = [s for s in report.sections if s.page == page]
    others = [p for p in report_pages(report) if p != page]
    heading = report.title if not page else f"{report.title}: {_page_title(report, page)}"
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(heading)}</title><style>{_CSS}</style></head><body>",
    ]
    # a long title (the demo's lists every system's description) is cut at its first colon: a short heading and
    # the rest as a subtitle, so that the verdict table starts on the first screen
    head, sep, rest = heading.partition(": ")
    out += ([f"<h1>{e(head)}</h1>", f'<p class="subtitle">{e(rest)}</p>'] if sep and len(heading) > _LONG_TITLE
            else [f"<h1>{e(heading)}</h1>"])
    if page:
        out.append(f'<nav class="pages"><a href="{e(page_file(""))}">Back to the main page</a>'
                   + "".join(f'<a href="{e(page_file(p))}">{e(_page_title(report, p))}</a>' for p in others if p)
                   + "</nav>")
    # the contents list is folded: with many attackers it would fill the first screen
    out.append(f"<nav><details><summary>Contents ({len(sections)} sections)</summary>"
               + "".join(f'<a href="#{e(safe_filename(s.id))}">{e(s.title)}</a>' for s in sections)
               + "</details></nav>")
    for s in sections:
        if s.folded:
            out.append(f'<section id="{e(safe_filename(s.id))}"><details><summary><h2>{e(s.title)}</h2></summary>')
        else:
            out.append(f'<section id="{e(safe_filename(s.id))}"><h2>{e(s.title)}</h2>')
        for b in s.blocks:
            if isinstance(b, Paragraph):
                cls = "" if b.kind == "p" else f' class="{e(b.kind)}"'
                if b.summary:  # folded: one line, opened by a click (no scripts)
                    out.append(f"<details{cls}><summary>{e(b.summary)}</summary><p>{e(b.text)}</p></details>")
                else:
                    out.append(f"<p{cls}>{e(b.text)}</p>")
            elif isinstance(b, Links):
                links = ", ".join(f'<a href="{e(_href(report, t, page))}">{e(label)}</a>' for label, t in b.items)
                out.append(f'<p class="links {e(b.kind)}">{e(b.lead)} {links}</p>')
            elif isinstance(b, Table):
                right = _numeric_columns(b)
                rows = "".join("<tr>" + "".join(_cell(c, b.fmt, b.cell_classes, j + 1 in right)
                                                for j, c in enumerate(r)) + "</tr>" for r in b.rows)
                head = "".join(f"<th>{e(c)}</th>" for c in b.columns)
                cap = f"<caption>{e(b.caption)}</caption>" if b.caption else ""
                tcls = f' class="{" ".join(f"r{j}" for j in sorted(right))}"' if right else ""
                # a wide table (many systems or attackers) scrolls inside its own box, never the page
                out.append(f'<div class="scroll"><table{tcls}>{cap}<thead><tr>{head}</tr></thead>'
                           f"<tbody>{rows}</tbody></table></div>")
            elif isinstance(b, Figure):
                fn = figure_files[id(b)]
                out.append(
                    f'<figure><img src="{e(fn)}" alt="{e(b.caption or b.name)}">'
                    f"<figcaption>{e(b.caption)}</figcaption></figure>"
                )
        out.append("</details></section>" if s.folded else "</section>")
    if not page:
        appendices = [p for p in others if p]
        if appendices:
            out.append('<section id="appendix-pages"><h2>Appendix pages</h2><p class="links">Every attacker, trial '
                       "type and metric, with the figures of the strongest attackers: "
                       + ", ".join(f'<a href="{e(page_file(p))}">{e(_page_title(report, p))}</a>' for p in appendices)
                       + ". report.json holds every number of every page.</p></section>")
        inputs = "".join(  # no machine paths on the page (paths relative to the inputs' common folder); report.json
            # keeps the full paths and hashes
            f"<tr><td>{e(str(i.get('name', '')))}</td><td>{e(rel)}</td>"
            f"<td><code>{e(str(i.get('sha256', ''))[:16])}</code></td></tr>"
            for i, rel in zip(report.inputs, page_paths(report.inputs))
        )
        # which extractor (model file and its sha256, features, version) made the embedding inputs
        extractors = "".join(f'<p class="note">Extractor {e(line)}</p>' for line in extractor_lines(report.inputs))
        out.append(
            '<section id="reproducibility"><h2>Reproducibility</h2>'
            f"<p>vpeval {e(__version__)}; report schema {SCHEMA_VERSION}; generated {e(generated_at)}.</p>"
            # the inputs (one row per file) fold: with several systems they would fill more than a screen
            f"<details><summary>Inputs ({len(report.inputs)} files: name, path relative to the common input folder, "
            "sha256 (first 16 hex digits; full in report.json))</summary>"
            f'<div class="scroll"><table class="repro"><thead><tr><th>input</th><th>path</th><th>sha256</th></tr>'
            f"</thead><tbody>{inputs}</tbody></table></div></details>{_labels_note(report.inputs)}"
            f"{_rates_note(report.inputs)}{extractors}"
            # the options fold too: their JSON filled four lines of the main page (report.json has them)
            f"<details><summary>Options ({len(report.options)} settings, as in report.json)</summary>"
            f"<p class=\"note\">{e(json.dumps(_jsonable(report.options), sort_keys=True))}</p></details></section>"
        )
    out.append("<footer>Written by vpeval. Every number has its unit: error rates in percent, disclosure in bits "
               "on this page; report.json keeps machine units named in each field.</footer></body></html>")
    return "\n".join(out) + "\n"


def _labels_note(inputs: list) -> str:
    """What the label mapping (--target/--nontarget/--ignore) did with each score input read with one
    (``label_counts``: rows ignored, rows read per class), as an HTML note; '' when no input has one."""
    from ..io.label_counts import label_counts_text

    parts = [f"{i.get('name', '')}: " + label_counts_text(
        i["label_counts"], "rows" if str(i.get("path", "")).endswith(".parquet") else "lines")
        for i in inputs if i.get("label_counts")]
    if not parts:
        return ""
    return "<p class=\"note\">Label mapping of the score inputs: " + html.escape("; ".join(parts)) + ".</p>"


def _rates_note(inputs: list) -> str:
    """The sampling rates of the audio behind the embedding inputs that record them (``input_rates_hz``), as
    an HTML note; '' when none does."""
    parts = []
    for i in inputs:
        rates = i.get("input_rates_hz")
        if rates:
            parts.append(f"{i.get('name', '')}: " + ", ".join(
                f"{'unknown rate' if int(r) == 0 else f'{int(r)} Hz'} ({n} rows)"
                for r, n in sorted(rates.items(), key=lambda kv: int(kv[0]))))
    if not parts:
        return ""
    return ("<p class=\"note\">Sampling rates of the embedded audio (vpeval works at 16 kHz; files at other rates "
            "were resampled to it on read): " + html.escape("; ".join(parts)) + ".</p>")


class FigureDrafts:
    """Figures drawn while their report is still being built: set as ``Report.drafts``, it draws each added
    section's :class:`~vpeval.report.document.Draw` figures at once, and :func:`render_report` writes those PNGs
    instead of drawing them again (the same bytes, :func:`png_bytes`).

    ``jobs``: a running pool of several jobs (:class:`~vpeval.pipeline.jobs.Jobs`) draws them on its workers
    while this process lays out the rest of the report (with one job nothing is started early); None draws them
    here, when the section is added: for a caller that would otherwise wait idle for its workers (``vpeval
    report`` while the verdict's relabellings run). A figure whose ``draw`` or ``size`` was replaced after its
    section was added is drawn again at rendering."""

    def __init__(self, jobs=None):
        self.jobs = jobs
        self._started: dict[int, tuple] = {}

    def __call__(self, section) -> None:
        if self.jobs is not None and not self.jobs.parallel:
            return
        for b in section.blocks:
            if not isinstance(b, Figure):
                continue
            if self.jobs is None and isinstance(b.draw, Draw):
                self._started[id(b)] = (b, b.draw, b.size, _Drawn(png_bytes(b.draw, b.size)))
            elif self.jobs is not None and _picklable_draw(b.draw):
                self._started[id(b)] = (b, b.draw, b.size, self.jobs.submit(png_bytes, b.draw, b.size))

    def take(self, figure: Figure):
        """The started drawing of ``figure`` (``.get()`` gives its PNG bytes), or None."""
        got = self._started.pop(id(figure), None)
        if got is None or got[0] is not figure or got[1] is not figure.draw or got[2] != figure.size:
            return None
        return got[3]


class _Drawn:
    """A figure drafted in this process: ``get()`` gives its PNG bytes."""

    __slots__ = ("png",)

    def __init__(self, png: bytes):
        self.png = png

    def get(self) -> bytes:
        return self.png


def png_bytes(draw, size: tuple[float, float]) -> bytes:
    """The PNG file :func:`draw_figure` writes for ``draw`` and ``size``, as bytes."""
    import io

    buf = io.BytesIO()
    draw_figure(draw, size, buf)
    return buf.getvalue()


def _render_figures(report: Report, folder: Path, jobs: int = 1, meanwhile=None) -> dict[int, str]:
    """Draw every figure of ``report`` into ``folder``; with ``jobs`` > 1 the :class:`~vpeval.report.document.Draw`
    figures are drawn in worker processes (:mod:`vpeval.pipeline.jobs`; same files), the others here meanwhile;
    those ``report.drafts`` (:class:`FigureDrafts`) started already are taken from it. ``meanwhile(names)`` is
    called once every file name is known and the workers' figures are started (e.g. to write the pages, which
    need the names alone). Returns ``id(figure) -> file name``."""
    from ..pipeline.jobs import using

    names: dict[int, str] = {}
    used: set[str] = set()
    todo = []
    for s in report.sections:
        for b in s.blocks:
            if not isinstance(b, Figure):
                continue
            base = safe_filename(f"{s.id}_{b.name}")
            fn, k = f"{base}.png", 1
            while fn in used:
                k += 1
                fn = f"{base}_{k}.png"
            used.add(fn)
            todo.append((b, folder / fn))
            names[id(b)] = fn
    drafts = report.drafts if isinstance(report.drafts, FigureDrafts) else None
    early = [None if drafts is None else drafts.take(b) for b, _ in todo]
    with using(jobs) as pool:  # a Draw of picklable data goes to a worker; anything else is drawn here
        away = [e is None and pool.parallel and _picklable_draw(b.draw) for (b, _), e in zip(todo, early)]
        sent = [pool.submit(draw_figure, b.draw, b.size, path) for (b, path), a in zip(todo, away) if a]
        if meanwhile is not None:
            meanwhile(names)
        for (b, path), a, e in zip(todo, away, early):
            if not a and e is None:
                draw_figure(b.draw, b.size, path)
        for (b, path), e in zip(todo, early):
            if e is not None:
                path.write_bytes(e.get())
        for r in sent:
            r.get()
    return names


def _picklable_draw(draw) -> bool:
    import pickle

    if not isinstance(draw, Draw):
        return False
    try:
        pickle.dumps(draw)
        return True
    except (TypeError, AttributeError, pickle.PicklingError):
        return False


def draw_figure(draw, size: tuple[float, float], path: Path) -> None:
    """``draw(fig)`` on a new matplotlib figure of ``size`` inches at 100 dpi, laid out tight (by the layout
    engine, within the one drawing of the canvas), saved as a PNG at ``path`` (:func:`_save_png`); the Agg
    backend, never TeX."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    # TeX is never used; names from input files are escaped where they are drawn (plots.legend_label)
    with matplotlib.rc_context({"text.usetex": False}):
        fig = plt.figure(figsize=size, dpi=100, layout="tight")
        try:
            draw(fig)
            _save_png(fig, path)
        finally:
            plt.close(fig)


def _save_png(fig, path) -> None:
    """``fig`` drawn on its Agg canvas, as a PNG of at most 256 colours (line plots need no more; a third to a
    quarter of the size of the full-colour file) at ``path`` (or a binary file object), without a timestamp
    in its metadata (same inputs give identical files). The canvas's pixels are quantized directly: no
    full-colour PNG is encoded and decoded on the way."""
    from PIL import Image

    fig.canvas.draw()
    w, h = fig.canvas.get_width_height(physical=True)
    im = Image.frombuffer("RGBA", (w, h), fig.canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
    # fast octree: a third of median cut's time and smaller files on line plots (measured on a DET figure)
    im.convert("RGB").quantize(colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE).save(
        path, format="PNG", optimize=True)


def render_report(report: Report, folder, *, generated_at: str | None = None, jobs: int = 1) -> Path:
    """Write ``report.json``, ``report.html`` and the figures into the existing, empty ``folder`` (no checks:
    callers claim their output with :mod:`vpeval.io.output` first). ``jobs``: worker processes drawing the
    figures (:mod:`vpeval.pipeline.jobs`; the files do not depend on it)."""
    folder = Path(folder)
    generated_at = generated_at or _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()
    if any(s.id == "verdict" for s in report.sections) and not any(s.id == "glossary" for s in report.sections):
        from .glossary import glossary_section

        # the verdict block links its words here: on the appendix page where the report has one
        report.add(glossary_section(page="appendix" if any(s.page == "appendix" for s in report.sections) else ""))
    def pages(figs):  # written while the workers draw (the pages need the figures' file names alone)
        (folder / "report.json").write_text(report_json(report, generated_at), encoding="utf-8",
                                            errors="backslashreplace")
        for page in report_pages(report):
            (folder / page_file(page)).write_text(report_html(report, figs, generated_at, page), encoding="utf-8",
                                                  errors="backslashreplace")

    _render_figures(report, folder, jobs, meanwhile=pages)
    report.drafts = None  # taken: the report holds no pool any more
    return folder


def write_report(report: Report, out_dir, *, force: bool = False, generated_at: str | None = None,
                 protect=(), command: str = "report", jobs: int = 1) -> Path:
    """Write ``report.json``, ``report.html`` and the figures into ``out_dir`` under the output policy.

    Parameters
    ----------
    report : Report
    out_dir : path
        Created if missing. If it exists and is not empty, :class:`OutputExistsError` is raised and nothing
        is changed, unless ``force=True`` and its manifest proves it an earlier report (see
        :mod:`vpeval.io.output`: manifest, lock, atomic install).
    generated_at : str, optional
        Timestamp to record (ISO 8601, UTC by default). It is the only field that differs between runs on
        the same input.
    protect : paths
        Inputs that ``--force`` must never replace.
    command : str
        The command recorded in the manifest (report, audit or demo).
    jobs : int
        Worker processes drawing the figures (:mod:`vpeval.pipeline.jobs`; -1: every usable core); the files do
        not depend on it.

    Returns
    -------
    Path
        ``out_dir``.
    """
    with claim_folder(out_dir, command=command, force=force, protect=protect) as claim:
        render_report(report, claim.path, generated_at=generated_at, jobs=jobs)
    return Path(out_dir)
