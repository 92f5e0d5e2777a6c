#!/usr/bin/env python
"""Peak memory of one `vpeval` command per process and in total: what its main process, its forkserver and each
worker process hold at their peaks.

    python benchmarks/process_memory.py -- verify FILE --json
    python benchmarks/process_memory.py --period 0.5 -- report FILE -o OUT

Runs ``vpeval ARGS`` (this tree's ``src``) as a child process and samples the proportional set size (``Pss``,
pages shared between the processes counted once: ``/proc/PID/smaps_rollup``; Linux only) of it and of every
descendant every ``--period`` seconds. Prints each process's peak (with its resident set then, and when), then the
largest total over the tree and when. A spike shorter than the period can be missed; ``benchmarks/run.py``'s
``run_cli`` gives the total alone, checked against the main process's own ``wait4`` peak.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}


def tree(root: int) -> list[int]:
    """``root`` and its descendants now."""
    todo, out = [root], []
    while todo:
        pid = todo.pop()
        out.append(pid)
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as fh:
                todo += [int(c) for c in fh.read().split()]
        except OSError:
            continue
    return out


def pss_rss_kib(pid: int) -> tuple[int, int] | None:
    """(Pss, Rss) of ``pid`` in KiB, or None when it is gone."""
    got = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                key = line.split(":")[0]
                if key in ("Pss", "Rss"):
                    got[key] = int(line.split()[1])
    except OSError:
        return None
    return got.get("Pss", 0), got.get("Rss", 0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--period", type=float, default=0.2, help="seconds between samples")
    ap.add_argument("args", nargs=argparse.REMAINDER, help="-- then the vpeval command's arguments")
    a = ap.parse_args()
    args = a.args[1:] if a.args[:1] == ["--"] else a.args
    if not args:
        ap.error("give the vpeval command after --")
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "vpeval.cli.main", *args], env=ENV, stdout=subprocess.DEVNULL)
    peak: dict[int, tuple[int, int, float]] = {}
    total = (0, 0.0)
    while p.poll() is None:
        now, s = time.perf_counter() - t0, 0
        for pid in tree(p.pid):
            got = pss_rss_kib(pid)
            if got is None:
                continue
            s += got[0]
            if got[0] > peak.get(pid, (0,))[0]:
                peak[pid] = (got[0], got[1], now)
        total = max(total, (s, now))
        time.sleep(a.period)
    wall = time.perf_counter() - t0
    print(f"vpeval {' '.join(args)}: exit {p.returncode}, {wall:.1f} s, load {os.getloadavg()[0]:.1f}")
    for pid, (pss, rss, when) in sorted(peak.items(), key=lambda kv: -kv[1][0]):
        role = "main" if pid == p.pid else "child"
        print(f"  pid {pid} ({role}): peak Pss {pss / 1024:,.0f} MiB (Rss {rss / 1024:,.0f} MiB) at {when:.1f} s")
    print(f"  all processes: peak Pss {total[0] / 1024:,.0f} MiB at {total[1]:.1f} s")
    sys.exit(p.returncode)


if __name__ == "__main__":
    main()
