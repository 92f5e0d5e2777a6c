"""Write a :class:`~vpeval.report.document.Report` as ``report.json`` + ``report.html`` + PNG figures.

Writes are atomic: everything goes into a temporary folder beside the target, which is renamed into place
at the end. An existing non-empty output folder is refused unless ``force=True``; then it is replaced only
after the new report is complete.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import html
import json
import math
import os
import re
import shutil
import tempfile
from pathlib import Path

from .. import __version__
from ..errors import VpevalError
from .document import Figure, Paragraph, Report, Table, safe_filename

__all__ = ["write_report", "check_output_folder", "check_output_file", "write_file", "OutputExistsError", "sha256_file", "SCHEMA_VERSION"]

SCHEMA_VERSION = "1.3"


class OutputExistsError(VpevalError):
    """The output folder exists and is not empty, and ``force`` was not given."""


def sha256_file(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _jsonable(x):
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return x
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):  # numpy scalars
        return _jsonable(x.item())
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
        "sections": [{"id": s.id, "title": s.title, "data": s.data} for s in report.sections],
    }
    return json.dumps(_jsonable(doc), indent=2, sort_keys=False, allow_nan=False) + "\n"


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;max-width:1100px;padding:1em 2em;
color:#222;line-height:1.45}
h1{font-size:1.6em;border-bottom:2px solid #345;padding-bottom:.2em}h2{font-size:1.25em;margin-top:2em;color:#234}
table{border-collapse:collapse;margin:.8em 0;font-size:.9em}th,td{border:1px solid #ccd;padding:.25em .6em;
text-align:left;vertical-align:top}th{background:#eef2f7}td.num{text-align:right;font-variant-numeric:tabular-nums}
caption{caption-side:top;text-align:left;font-weight:600;padding:.3em 0}figure{margin:1em 0}
figure img{max-width:100%;border:1px solid #dde}figcaption{font-size:.85em;color:#555}
.note{color:#555;font-size:.9em}.warning{background:#fff4e0;border-left:4px solid #e90;padding:.4em .8em}
td.leak{background:#fde2e0;color:#8b1a10;font-weight:600}td.chance{background:#e3f4e1;color:#1d5e20}
td.ok{background:#e6eef8;color:#1f4e79}td.partial{background:#fff0d6;color:#7a4a00;font-weight:600}
nav a{margin-right:1em}footer{margin-top:3em;font-size:.8em;color:#777}
details>summary{cursor:pointer}details>summary h2{display:inline-block;margin:1em 0 .3em}
nav details>summary{color:#345;font-size:.9em}
p[class^=verdict-]{font-size:1.05em;padding:.5em .9em;border-left:6px solid #888;background:#f3f3f3}
p.verdict-leaks{border-color:#c0392b;background:#fde2e0}p.verdict-partial{border-color:#e69500;background:#fff0d6}
p.verdict-protects{border-color:#2e7d32;background:#e3f4e1}p.verdict-inconclusive{border-color:#1f4e79;background:#e6eef8}
#verdict h2{margin-top:.6em}
.scroll{overflow-x:auto;max-width:100%}.scroll>table{margin:.4em 0}
p,figcaption{overflow-wrap:anywhere}
"""


def _cell(v, fmt, classes=None) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return '<td class="num">—</td>'
        if math.isinf(v):
            return f'<td class="num">{"∞" if v > 0 else "−∞"}</td>'
        return f'<td class="num">{html.escape(fmt.format(v))}</td>'
    if isinstance(v, int) and not isinstance(v, bool):
        return f'<td class="num">{v}</td>'
    cls = (classes or {}).get(str(v))
    return f'<td class="{html.escape(cls)}">{html.escape(str(v))}</td>' if cls else f"<td>{html.escape(str(v))}</td>"


def report_html(report: Report, figure_files: dict[int, str], generated_at: str) -> str:
    e = html.escape
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(report.title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{e(report.title)}</h1>",
        # the contents list is folded: with many attackers it would fill the first screen
        f"<nav><details><summary>Contents ({len(report.sections)} sections)</summary>"
        + "".join(f'<a href="#{e(safe_filename(s.id))}">{e(s.title)}</a>' for s in report.sections)
        + "</details></nav>",
    ]
    for s in report.sections:
        if s.folded:
            out.append(f'<section id="{e(safe_filename(s.id))}"><details><summary><h2>{e(s.title)}</h2></summary>')
        else:
            out.append(f'<section id="{e(safe_filename(s.id))}"><h2>{e(s.title)}</h2>')
        for b in s.blocks:
            if isinstance(b, Paragraph):
                cls = "" if b.kind == "p" else f' class="{e(b.kind)}"'
                out.append(f"<p{cls}>{e(b.text)}</p>")
            elif isinstance(b, Table):
                rows = "".join("<tr>" + "".join(_cell(c, b.fmt, b.cell_classes) for c in r) + "</tr>" for r in b.rows)
                head = "".join(f"<th>{e(c)}</th>" for c in b.columns)
                cap = f"<caption>{e(b.caption)}</caption>" if b.caption else ""
                # a wide table (many systems or attackers) scrolls inside its own box, never the page
                out.append(f'<div class="scroll"><table>{cap}<thead><tr>{head}</tr></thead>'
                           f"<tbody>{rows}</tbody></table></div>")
            elif isinstance(b, Figure):
                fn = figure_files[id(b)]
                out.append(
                    f'<figure><img src="{e(fn)}" alt="{e(b.caption or b.name)}">'
                    f"<figcaption>{e(b.caption)}</figcaption></figure>"
                )
        out.append("</details></section>" if s.folded else "</section>")
    inputs = "".join(
        f"<tr><td>{e(str(i.get('name', '')))}</td><td>{e(str(i.get('path', '')))}</td>"
        f"<td><code>{e(str(i.get('sha256', '')))}</code></td></tr>"
        for i in report.inputs
    )
    out.append(
        '<section id="reproducibility"><h2>Reproducibility</h2>'
        f"<p>vpeval {e(__version__)}; report schema {SCHEMA_VERSION}; generated {e(generated_at)}.</p>"
        f'<div class="scroll"><table><thead><tr><th>input</th><th>path</th><th>sha256</th></tr></thead>'
        f"<tbody>{inputs}</tbody></table></div>"
        f"<p class=\"note\">Options: {e(json.dumps(_jsonable(report.options), sort_keys=True))}</p></section>"
    )
    out.append("<footer>Written by vpeval. Every number has its unit: error rates in percent, disclosure in bits "
               "on this page; report.json keeps machine units named in each field.</footer></body></html>")
    return "\n".join(out) + "\n"


def _render_figures(report: Report, folder: Path) -> dict[int, str]:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    # TeX is never used; names from input files are escaped where they are drawn (plots.legend_label)
    rc = {"text.usetex": False}

    names: dict[int, str] = {}
    used: set[str] = set()
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
            with matplotlib.rc_context(rc):
                fig = plt.figure(figsize=b.size, dpi=100)
                try:
                    b.draw(fig)
                    fig.tight_layout()
                    # no timestamp in the PNG metadata: same inputs give identical files
                    fig.savefig(folder / fn, format="png", metadata={"Software": None})
                finally:
                    plt.close(fig)
            names[id(b)] = fn
    return names


def _is_report_folder(folder: Path) -> bool:
    """True when ``folder`` holds nothing but what an earlier vpeval report wrote (its JSON, its page and the
    figures that page shows)."""
    rj = folder / "report.json"
    try:
        if json.loads(rj.read_text(encoding="utf-8")).get("schema") != "vpeval-report":
            return False
    except (OSError, ValueError, AttributeError):
        return False
    try:
        page = (folder / "report.html").read_text(encoding="utf-8")
    except OSError:
        return False
    written = {"report.json", "report.html"} | set(re.findall(r'<img src="([^"/]+\.png)"', page))
    return all(f.is_file() and f.name in written for f in folder.iterdir())


def _check_target(out: Path, force: bool, protect, is_ours=None,
                  ours: str = "an earlier vpeval report (report.json + figures)") -> None:
    if out.exists() and not out.is_dir():
        raise OutputExistsError(f"{out}: exists and is not a folder")
    if out.name in ("", ".", "..") or out.resolve() == Path.cwd().resolve() or out.resolve() == Path.home():
        raise OutputExistsError(f"{out}: name a new output folder, not the current or home folder")
    if not out.exists() or not any(out.iterdir()):
        return
    if not force:
        raise OutputExistsError(
            f"{out}: exists and is not empty; choose another folder or pass --force to replace it"
        )
    resolved = out.resolve()
    for p in protect:
        rp = Path(p).resolve()
        if rp == resolved or resolved in rp.parents:
            raise OutputExistsError(f"{out}: contains the input {p}; --force will not replace it")
    if not (is_ours or _is_report_folder)(out):
        raise OutputExistsError(
            f"{out}: --force only replaces {ours}, and this folder holds other files; choose another folder"
        )


def check_output_folder(out_dir, *, force: bool = False, protect=(), is_ours=None, ours: str | None = None) -> None:
    """Raise :class:`OutputExistsError` now if the output folder ``out_dir`` may not be written.

    Refused: a file in the way, the current or home folder, a non-empty folder without ``force``, and with
    ``force`` a folder holding one of the ``protect`` paths or one that ``is_ours(folder)`` (default: an
    earlier vpeval report) does not recognise as an earlier output of the same command (described by ``ours``).
    """
    kw = {} if ours is None else {"ours": ours}
    _check_target(Path(out_dir), force, protect, is_ours, **kw)


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def write_report(report: Report, out_dir, *, force: bool = False, generated_at: str | None = None,
                 protect=()) -> Path:
    """Write ``report.json``, ``report.html`` and the figures into ``out_dir`` atomically.

    Parameters
    ----------
    report : Report
    out_dir : path
        Created if missing. If it exists and is not empty, :class:`OutputExistsError` is raised and nothing
        is changed, unless ``force=True``.
    generated_at : str, optional
        Timestamp to record (ISO 8601, UTC by default). It is the only field that differs between runs on
        the same input.

    Returns
    -------
    Path
        ``out_dir``.
    """
    out = Path(out_dir)
    _check_target(out, force, protect)
    generated_at = generated_at or _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes 0700; a report folder follows the umask
    try:
        figs = _render_figures(report, tmp)
        (tmp / "report.json").write_text(report_json(report, generated_at), encoding="utf-8",
                                         errors="backslashreplace")
        (tmp / "report.html").write_text(report_html(report, figs, generated_at), encoding="utf-8",
                                         errors="backslashreplace")
        install_folder(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def install_folder(tmp: Path, out: Path) -> None:
    """Move the finished folder ``tmp`` to ``out``, replacing an existing ``out`` only once ``tmp`` is in place
    to be renamed (the old folder is moved aside first and deleted last)."""
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        os.replace(out, old / "x")
        os.replace(tmp, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, out)


def check_output_file(path, *, force: bool = False, protect=(), is_ours=None, ours: str = "an earlier output") -> None:
    """Raise :class:`OutputExistsError` now if the single output file ``path`` may not be written.

    Refused: a folder in the way, an existing file without ``force``, and with ``force`` one of the ``protect``
    inputs or a file that ``is_ours(path)`` does not recognise as an earlier output of the same command
    (described by ``ours``).
    """
    p = Path(path)
    if p.is_dir():
        raise OutputExistsError(f"{p}: is a folder; name a file")
    if not p.exists():
        return
    if not force:
        raise OutputExistsError(f"{p}: exists; choose another file or pass --force to replace it")
    for q in protect:
        if Path(q).resolve() == p.resolve():
            raise OutputExistsError(f"{p}: is an input; --force will not replace it")
    if is_ours is None or not is_ours(p):
        raise OutputExistsError(f"{p}: --force only replaces {ours}, and this file is something else")


def write_file(path, text: str, *, force: bool = False, protect=(), is_ours=None, ours: str = "an earlier output"):
    """Write ``text`` (UTF-8) to ``path`` atomically (a temporary file beside it, renamed into place) after
    :func:`check_output_file`. Returns ``path`` as a Path."""
    p = Path(path)
    check_output_file(p, force=force, protect=protect, is_ours=is_ours, ours=ours)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.tmp-", dir=p.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return p
