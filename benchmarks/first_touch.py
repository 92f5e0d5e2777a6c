#!/usr/bin/env python
"""What a process pays to touch memory for the first time, against touching memory it has freed and taken back.

    python benchmarks/first_touch.py [--mib 250] [--rounds 4]
    python benchmarks/first_touch.py --pages [--mib 500] [--rounds 3]

Allocates and fills an array of ``--mib`` MiB (float64 ones), frees it, and does so ``--rounds`` times in this
process; prints each round's time and the 1-minute load average. On a virtual machine whose host backs guest
memory lazily, the first round pays a fault per page the guest has not used lately and the later rounds reuse
pages the process had (the figure BENCHMARKS.md quotes for the report's serial start); elsewhere all rounds cost
about the same. Run it twice in a row: the second process may find pages the first one left warm.

``--pages``: ``--rounds`` pairs of fresh processes, one after the other, each filling one array of ``--mib`` MiB
once: one with NumPy's default (huge pages advised for arrays of 4 MiB or more; ``NUMPY_MADVISE_HUGEPAGE``
removed from its environment) and one that calls :func:`vpeval.pipeline.allocator.small_pages` first (what
the ``vpeval`` command and its workers do). Prints per process the fill's time, its system CPU and its minor
page faults (``getrusage``), and the load average; the medians per kind at the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np


_FILL = """
import resource, sys, time
if sys.argv[2] == "small":
    from vpeval.pipeline.allocator import small_pages
    if not small_pages():
        raise SystemExit("small_pages() did not apply")
import numpy as np
t0 = time.perf_counter()
x = np.ones((int(sys.argv[1]) << 20) // 8)
dt = time.perf_counter() - t0
r = resource.getrusage(resource.RUSAGE_SELF)
print(dt, r.ru_stime, r.ru_minflt)
"""


def _pages(mib: int, rounds: int) -> None:
    env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    seen = {"default": [], "small": []}
    print(f"{mib} MiB per process")
    for r in range(rounds):
        for kind in seen:
            load = os.getloadavg()[0]
            out = subprocess.run([sys.executable, "-c", _FILL, str(mib), kind], env=env, capture_output=True,
                                 text=True, check=True).stdout.split()
            dt, sys_s, faults = float(out[0]), float(out[1]), int(out[2])
            seen[kind].append(dt)
            print(f"round {r + 1} {kind:>7}: fill {dt:.3f} s ({1000 * dt / mib:.2f} ms per MiB), system CPU "
                  f"{sys_s:.2f} s, {faults} minor faults; load {load:.2f}")
    for kind, t in seen.items():
        print(f"median {kind:>7}: {statistics.median(t):.3f} s ({1000 * statistics.median(t) / mib:.2f} ms per MiB)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=int, default=None, help="MiB per array (default 250; 500 with --pages)")
    ap.add_argument("--rounds", type=int, default=None, help="rounds (default 4; 3 with --pages)")
    ap.add_argument("--pages", action="store_true", help="huge pages against 4 KiB pages, in fresh processes")
    a = ap.parse_args()
    if a.pages:
        _pages(a.mib or 500, a.rounds or 3)
        return
    a.mib, a.rounds = a.mib or 250, a.rounds or 4
    print(f"load {os.getloadavg()[0]:.2f}; {a.mib} MiB per round")
    for r in range(a.rounds):
        t0 = time.perf_counter()
        x = np.ones((a.mib << 20) // 8)
        dt = time.perf_counter() - t0
        del x
        print(f"round {r + 1}: {dt:.3f} s ({1000 * dt / a.mib:.2f} ms per MiB)")


if __name__ == "__main__":
    main()
