#!/usr/bin/env python
"""What a process pays to touch memory for the first time, against touching memory it has freed and taken back.

    python benchmarks/first_touch.py [--mib 250] [--rounds 4]

Allocates and fills an array of ``--mib`` MiB (float64 ones), frees it, and does so ``--rounds`` times in this
process; prints each round's time and the 1-minute load average. On a virtual machine whose host backs guest
memory lazily, the first round pays a fault per page the guest has not used lately and the later rounds reuse
pages the process had (the figure BENCHMARKS.md quotes for the report's serial start); elsewhere all rounds cost
about the same. Run it twice in a row: the second process may find pages the first one left warm.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=int, default=250)
    ap.add_argument("--rounds", type=int, default=4)
    a = ap.parse_args()
    print(f"load {os.getloadavg()[0]:.2f}; {a.mib} MiB per round")
    for r in range(a.rounds):
        t0 = time.perf_counter()
        x = np.ones((a.mib << 20) // 8)
        dt = time.perf_counter() - t0
        del x
        print(f"round {r + 1}: {dt:.3f} s ({1000 * dt / a.mib:.2f} ms per MiB)")


if __name__ == "__main__":
    main()
