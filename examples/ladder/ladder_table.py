#!/usr/bin/env python
"""Print the ladder's one-screen table (README) from a ``vpeval demo`` report folder.

Usage::

    vpeval demo -o ladder-report && python examples/ladder/ladder_table.py ladder-report

One row per system, in the report's order: the verdict over every attacker and channel; the privacy profile at
the verdict's delta, eps(delta) in bits with its 95 % family-wise bounds; the voice channel's verdict on its own
with its bounds; the lowest ROCCH-EER of any attacker (the field's number, an average); and the content
attacker's ROCCH-EER on oa and aa trials (TF-IDF of the Whisper transcripts: the words survive every system).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

CONTENT = "content-tfidf/centred-cosine/original"


def _bits(x) -> float:
    return float("inf") if x in ("inf", "Infinity") else float(x)


def _eps(v: dict) -> str:
    def f(x):
        x = _bits(x)
        return "inf" if math.isinf(x) else f"{x:.2f}"

    return f"{f(v['eps_bits'])} [{f(v['eps_low_bits'])}, {f(v['eps_high_bits'])}]"


def rows(doc: dict) -> list[dict]:
    """The table's rows from a report.json document (refs resolved)."""
    summary = next(s for s in doc["sections"] if s["id"] == "summary")["data"]["systems"]
    out = []
    for system, v in doc["verdicts"].items():
        voice = (doc.get("channel_verdicts", {}).get(system) or {}).get("voice") or v
        content = summary[system]["attackers"].get(CONTENT, {})
        out.append({
            "system": system,
            "verdict": v["verdict"],
            "eps": _eps(v),
            "voice": f"{voice['verdict']}, {_eps(voice)}",
            "lowest_eer": f"{100 * v['average']['eer_rocch']:.1f}",
            "content_eer": " / ".join(f"{100 * content[t]['eer_rocch']:.1f}" if t in content else "-"
                                      for t in ("oa", "aa")),
            "delta": v["delta"],
        })
    return out


def table(doc: dict) -> str:
    r = rows(doc)
    delta = r[0]["delta"]
    lines = [f"| system | verdict | eps({100 * delta:.2g} %) bits [95 % bounds] | voice channel alone | "
             "lowest EER (%) | content attacker EER oa / aa (%) |", "|---|---|---|---|---|---|"]
    lines += [f"| {x['system']} | {x['verdict']} | {x['eps']} | {x['voice']} | {x['lowest_eer']} | "
              f"{x['content_eer']} |" for x in r]
    return "\n".join(lines)


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.exit("usage: python ladder_table.py REPORT_DIR")
    try:
        from vpeval.report.writer import resolve_refs
    except ImportError:  # a source checkout without installing
        sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
        from vpeval.report.writer import resolve_refs
    doc = resolve_refs(json.loads((Path(args[0]) / "report.json").read_text()))
    print(table(doc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
