"""The terminal's per-system table of an audit (``vpeval audit`` / ``vpeval demo``) and the readings beside it.

oaoo and oaaa are shown as the page shows them: their interpolated EER (the ROCCH-EER cannot exceed 50 % and
would hide a departure upwards), marked ``!`` above the flag; their reading is given per training condition of
the attackers (it depends on what they were trained on), and aaaa / aa-centroid against their stated goal
bound (with the cross-profile types of a system anonymized under two or more profile keys), never as one
banner for the system.
"""

from __future__ import annotations

from rich import box

from ..analysis.attribution import worst_over_attackers
from ..analysis.readings import ABOVE_HALF_READINGS
from ..pipeline.protocols.trials import CONSISTENCY_TYPES, TWO_SIDED_TYPES
from .console import Console
from rich.markup import escape
from rich.table import Table as RichTable

__all__ = ["print_title", "print_system_table", "cell", "reading_lines"]


def print_title(console, text: str) -> None:
    """A table's title as a line of its own above it, wrapped at the console's width between words, in rich's
    title style (rich wraps a table's own title at the table's width, which is narrower, and cropped part of a long
    title where the table filled the console)."""
    console.print(escape(text), style="table.title", overflow="fold")


def cell(t: str, m: dict, flag: float) -> str:
    """The table cell of trial type ``t``: the interpolated EER for oaoo and oaaa (``!`` above ``flag``), else the
    ROCCH-EER, in percent with one decimal."""
    if t in TWO_SIDED_TYPES:
        return f"{100 * m['eer_interp']:.1f}" + ("!" if m["eer_interp"] > flag else "")
    return f"{100 * m['eer_rocch']:.1f}"


def reading_lines(data: dict, flag: float) -> list[str]:
    """The lines under a system's table: oaoo and oaaa per training condition, then the consistency types (aaaa,
    aa-centroid, cross-profile types) against their goal (from the summary section's ``readings`` of that system)."""
    readings = data.get("readings", {})
    lines = []
    for t in TWO_SIDED_TYPES:
        if readings.get(t):
            lines.append(f"{t} (interpolated EER, ideal 50 %; '!' above {100 * flag:g} %: "
                         f"{ABOVE_HALF_READINGS[t]}), read per training condition of the attackers:")
            lines += [f"  {c['sentence']}" for c in readings[t]]
    goal = readings.get("consistency_goal_eer")
    for t in CONSISTENCY_TYPES:
        got = readings.get(t)
        if not got:
            continue
        met = sorted(a for a, r in got.items() if r.startswith("goal met"))
        unshown = sorted(a for a, r in got.items() if r.startswith("goal not shown"))
        w = worst_over_attackers({a: data["attackers"][a][t] for a in got}, "eer_rocch", t)
        lines.append(f"{t} (ideal 0 %; goal: EER at most {100 * goal:g} % over its 95 % interval): met by "
                     f"{len(met)} of {len(got)} attackers"
                     + (f", within it but not shown (interval above) for {len(unshown)}" if unshown else "")
                     + f"; highest EER {100 * w['value']:.3g} % ({w['attacker']}: "
                     f"{got[w['attacker']]})")
    return lines


def print_system_table(console: Console, name: str, data: dict, flag: float) -> None:
    """One system's attacker x trial type table (ROCCH-EER; oaoo and oaaa interpolated) and its reading lines."""
    print_title(console, f"{name}: EER (%) per attacker and trial type (ideal in header; ROCCH-EER, oaoo and oaaa "
                "interpolated EER)")
    table = RichTable(box=box.SIMPLE_HEAD)
    # long names wrap at their " / " separators (never cut); the numbers stay on the name's first line
    table.add_column("attacker", overflow="fold", min_width=min(20, max(len(p) for a in data["attackers"]
                                                                          for p in a.split("/")) + 2))
    # channels lack some types; the renewal subset is read in the lines below only (the table fits 80 columns)
    types = [t for t in dict.fromkeys(t for by in data["attackers"].values() for t in by)
             if t != "cross-profile-same-source"]
    for t in types:
        ideal = data["target_eer"].get(t)
        head = "\n".join(w + "-" for w in t.split("-"))[:-1] + ("\ninterp" if t in TWO_SIDED_TYPES else "")
        table.add_column(f"{head}\n({'ref' if ideal is None else f'{100 * ideal:g}'})", overflow="fold",
                         justify="right", max_width=8)
    for att, by in data["attackers"].items():
        table.add_row(escape(att.replace("/", " / ")), *[cell(t, by[t], flag) if t in by else "" for t in types])
    console.print(table)
    for line in reading_lines(data, flag):
        console.print(escape(f"  {line}"), overflow="fold")
