#!/usr/bin/env python
"""Time and memory of the population curves and of combined probes against the number of enrolled speakers N.

A simulated calibrated Gaussian attacker (impostor LLRs ``N(-s^2/2, s^2)``, true LLRs ``N(s^2/2, s^2)``,
``s = 2``) with ``--per`` probes for each of ``--speakers`` speakers, scored against N enrolled speakers (the
probes' speakers and N - speakers distractors). For each N: the seconds and the traced peak of new memory
(``tracemalloc``, the input matrix excluded; NumPy reports to it) of
:func:`vpeval.metrics.linkage.population_curves` (default sizes up to N, extrapolated to 10 N and 100 N, 200
bootstrap replicates) and of :func:`vpeval.metrics.linkage.combine.combined_probes` (k = 1 .. ``--per``, four
rules), one run each, with the load average beside them. Also the time of one ``numpy.exp`` pass over the
matrix, the floor of any 1-to-N metric, measured before each row.

    python benchmarks/population.py --sizes 1000,3000,10000
    python benchmarks/population.py --sizes 200,500 --speakers 100    # smoke run
"""

from __future__ import annotations

import argparse
import os
import time
import tracemalloc

import numpy as np

from vpeval.metrics.linkage import default_population_sizes, population_curves
from vpeval.metrics.linkage.combine import combined_probes


def _matrix(n_enrolled: int, speakers: int, per: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    s = 2.0
    ti = np.repeat(np.arange(speakers), per)
    x = rng.normal(-s * s / 2, s, (ti.size, n_enrolled))
    x[np.arange(ti.size), ti] = rng.normal(s * s / 2, s, ti.size)
    return x, ti


def _measure(fn):
    tracemalloc.start()
    t = time.perf_counter()
    fn()
    sec = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return sec, peak / 2 ** 20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,3000,10000", help="numbers of enrolled speakers N, comma-separated")
    ap.add_argument("--speakers", type=int, default=1000, help="speakers the probes come from (at most N)")
    ap.add_argument("--per", type=int, default=4, help="probes per speaker")
    a = ap.parse_args()
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
          f"{a.speakers} speakers x {a.per} probes")
    print("| N | matrix | np.exp floor | population curves | peak new memory | combined k=1..%d | peak new memory "
          "| load |" % a.per)
    print("|---|---|---|---|---|---|---|---|")
    for n_enrolled in (int(v) for v in a.sizes.split(",")):
        x, ti = _matrix(n_enrolled, min(a.speakers, n_enrolled), a.per)
        load0 = os.getloadavg()[0]
        t = time.perf_counter()
        np.exp(x)
        floor = time.perf_counter() - t
        sizes = default_population_sizes(n_enrolled, [10 * n_enrolled, 100 * n_enrolled])
        pc, pm = _measure(lambda: population_curves(x, ti, sizes, speaker=ti))
        cc, cm = _measure(lambda: combined_probes(x, ti, range(1, a.per + 1)))
        print(f"| {n_enrolled:,} | {x.shape[0]:,} x {n_enrolled:,} ({x.nbytes / 2 ** 20:.0f} MiB) | {floor:.2f} s "
              f"| {pc:.1f} s | {pm:.0f} MiB | {cc:.1f} s | {cm:.0f} MiB | {load0:.1f} -> {os.getloadavg()[0]:.1f} |",
              flush=True)


if __name__ == "__main__":
    main()
