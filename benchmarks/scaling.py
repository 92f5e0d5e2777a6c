#!/usr/bin/env python
"""How `vpeval verify` grows with the size of a score file: time and peak memory at 1e6, 1e7 and 1e8 lines.

For each size a `score label` file is written (half targets, target scores shifted by 2, six decimals; the same
design as the 1e7-line file of ``benchmarks/run.py``), then, interleaved: one ``pyarrow.csv.read_csv`` of the file
and one ``numpy.sort`` of its scores (the floors, in this process), ``vpeval verify FILE --json --no-verdict`` and
``vpeval verify FILE --json`` (the verdict: privacy profile, bounds, the perfect-secrecy test's relabellings and the
bootstrap of the worst case) and the same with ``--jobs 1`` (everything in one process) as child processes, with
their wall time and peak memory: that of the command with all its processes, its worker processes included
(``run.run_cli``: the largest sum of their proportional set sizes, sampled every 0.1 s; before 2026-12-07 this
table gave the main process's peak resident set alone).
Printed as a markdown table: the medians of ``--repeat`` turns (default 3 up to 1e7 lines, 1 beyond), the ratios
to the read, and the time per ``n log2 n`` relative to the smallest size (flat: n log n growth). A last row
extrapolates to 1e9 lines from the largest size measured, labelled as such: time by ``n log n``, memory linearly.

    python benchmarks/scaling.py                       # 1e6, 1e7, 1e8 (about 12 minutes; 1e8 needs ~16 GB)
    python benchmarks/scaling.py --lines 1e6,1e7 --tmp /tmp
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import run_cli  # noqa: E402  (wall s, peak RSS MiB) of one `vpeval` child process, this tree's src


def write_file(path: Path, n: int, seed: int = 10) -> None:
    """``n`` lines ``score label`` (space-separated), written in blocks of 1e7 lines by pyarrow."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    rng = np.random.default_rng(seed)
    opts = pcsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
    with open(path, "wb") as fh:
        for i in range(0, n, 10_000_000):
            m = min(10_000_000, n - i)
            lab = rng.random(m) < 0.5
            s = np.round(rng.normal(size=m) + 2.0 * lab, 6)
            pcsv.write_csv(pa.table({"s": s, "l": lab.astype(np.int8)}), fh, write_options=opts)


def read_floor(path: Path):
    import pyarrow.csv as pcsv

    return pcsv.read_csv(path, read_options=pcsv.ReadOptions(autogenerate_column_names=True),
                         parse_options=pcsv.ParseOptions(delimiter=" "))


def measure(n: int, tmp: Path, repeat: int) -> dict:
    d = Path(tempfile.mkdtemp(prefix="vpeval-scaling-", dir=tmp))
    try:
        f = d / "scores.txt"
        write_file(f, n)
        load0 = os.getloadavg()[0]
        scores = read_floor(f).column(0).to_numpy()
        t = {k: [] for k in ("read", "sort", "plain", "verdict", "one")}
        rss = {"plain": [], "verdict": [], "one": []}
        for _ in range(repeat):
            a = time.perf_counter()
            read_floor(f)
            t["read"].append(time.perf_counter() - a)
            a = time.perf_counter()
            np.sort(scores)
            t["sort"].append(time.perf_counter() - a)
            for k, extra in (("plain", ["--no-verdict"]), ("verdict", []), ("one", ["--jobs", "1"])):
                s, r = run_cli(["verify", str(f), "--json", *extra])
                t[k].append(s)
                rss[k].append(r)
        out = {k: statistics.median(v) for k, v in t.items()}
        out.update({f"rss_{k}": max(v) for k, v in rss.items()}, n=n, bytes=f.stat().st_size, load0=load0,
                   load1=os.getloadavg()[0], repeat=repeat)
        return out
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _n(n: float) -> str:
    return f"{n:.0e}".replace("e+0", "e").replace("e+", "e")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", default="1e6,1e7,1e8", help="sizes, comma-separated")
    ap.add_argument("--repeat", type=int, default=None, help="turns per size (default 3 up to 1e7 lines, 1 beyond)")
    ap.add_argument("--tmp", type=Path, default=Path(tempfile.gettempdir()), help="folder for the scratch files")
    a = ap.parse_args()
    sizes = [int(float(v)) for v in a.lines.split(",")]
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores")
    print("| lines | file | pyarrow read | one np.sort | verify --no-verdict | peak memory | verify (verdict) "
          "| peak memory | verdict, --jobs 1 | peak memory | verdict / read | s per n log2 n (x smallest) | turns "
          "| load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for n in sizes:
        r = measure(n, a.tmp, a.repeat or (3 if n <= 10_000_000 else 1))
        rows.append(r)
        per = r["verdict"] / (n * math.log2(n))
        base = rows[0]["verdict"] / (rows[0]["n"] * math.log2(rows[0]["n"]))
        print(f"| {_n(n)} | {r['bytes'] / 2 ** 20:,.0f} MiB | {r['read']:.2f} s | {r['sort']:.2f} s | {r['plain']:.1f} s "
              f"| {r['rss_plain']:,.0f} MiB | {r['verdict']:.1f} s | {r['rss_verdict']:,.0f} MiB "
              f"| {r['one']:.1f} s | {r['rss_one']:,.0f} MiB | {r['verdict'] / r['read']:.1f}x | {per / base:.2f} "
              f"| {r['repeat']} | {r['load0']:.1f} -> {r['load1']:.1f} |", flush=True)
    last = rows[-1]
    n9 = 1_000_000_000
    if 10_000_000 <= last["n"] < n9:  # from a size where start-up no longer dominates
        f = n9 * math.log2(n9) / (last["n"] * math.log2(last["n"]))
        print(f"| 1e9 (extrapolated from {_n(last['n'])}: time x n log n, memory x n) | | | | "
              f"{last['plain'] * f:,.0f} s | {last['rss_plain'] * n9 / last['n'] / 1024:,.0f} GiB | "
              f"{last['verdict'] * f:,.0f} s | {last['rss_verdict'] * n9 / last['n'] / 1024:,.0f} GiB | "
              f"{last['one'] * f:,.0f} s | {last['rss_one'] * n9 / last['n'] / 1024:,.0f} GiB | | | | |")


if __name__ == "__main__":
    main()
