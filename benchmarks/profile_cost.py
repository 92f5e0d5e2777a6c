#!/usr/bin/env python
"""The privacy profile's cost on one attacker's scores: its parts beside one ``numpy.sort`` of all the scores.

Parts (vpeval.metrics.profile): ``ProfileCounts`` (the tie blocks and the bounds' dominance counts),
``bounds_bits`` over the 12-delta grid, ``eps_bits`` over the same grid (Dinkelbach passes per delta). Floor and
parts run interleaved ``--repeat`` times; the medians, their ratio and the load are printed.

    python benchmarks/profile_cost.py                      # 1e5 + 1e6 trials
    python benchmarks/profile_cost.py --targets 1000000 --nontargets 9000000
"""

from __future__ import annotations

import argparse
import os

import numpy as np
from timing import Timings  # benchmarks/ is the script's folder, first on sys.path

from vpeval.metrics.profile import DELTA_GRID, ProfileCounts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--targets", type=int, default=100_000)
    ap.add_argument("--nontargets", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    tar, non = rng.normal(0.2, 1.0, a.targets), rng.normal(size=a.nontargets)
    both = np.r_[tar, non]
    load0 = os.getloadavg()[0]
    timed = Timings()
    times = timed.times

    for _ in range(a.repeat):
        timed("floor: numpy.sort of all scores", lambda: np.sort(both))
        c = timed("ProfileCounts (blocks, dominance counts)", lambda: ProfileCounts(tar, non))
        timed("bounds_bits over the delta grid", lambda: c.bounds_bits(DELTA_GRID))
        timed("eps_bits over the delta grid", lambda: c.eps_bits(DELTA_GRID))
    floor = float(np.median(times["floor: numpy.sort of all scores"]))
    print(f"{a.targets:,} targets + {a.nontargets:,} non-targets; {a.repeat} interleaved repeats; load "
          f"{load0:.2f} -> {os.getloadavg()[0]:.2f}")
    for name, ts in times.items():
        m = float(np.median(ts))
        print(f"{name:45s} {m:8.3f} s  {m / floor:7.1f}x floor")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
