"""Time the whole verification bundle against one numpy sort of the same scores.

Bundle: both EERs, DET, minDCF, Cllr, minCllr, PAV LLRs with and without Laplace, privacy-ZEBRA, once
through the public functions one by one and once through ``verification_summary`` (one shared sort).

    python benchmarks/bench_core.py [--n 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

import vpeval
from vpeval.metrics.summary import verification_summary


def best(f, repeat):
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000, help="trials per class")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    tar = rng.normal(1.0, 1.0, a.n)
    non = rng.normal(-1.0, 1.5, a.n)
    both = np.concatenate([tar, non])

    t_sort = best(lambda: np.sort(both), a.repeat)

    def one_by_one():
        vpeval.eer(tar, non)
        vpeval.eer(tar, non, method="interp")
        vpeval.det_curve(tar, non)
        vpeval.min_dcf(tar, non, 0.01)
        vpeval.cllr(tar, non)
        vpeval.min_cllr(tar, non)
        vpeval.pav_llr(tar, non)
        vpeval.pav_llr(tar, non, laplace=True)
        vpeval.zebra(tar, non)

    t_all = best(one_by_one, a.repeat)
    t_sum = best(lambda: verification_summary(tar, non), a.repeat)
    tracemalloc.start()
    verification_summary(tar, non)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"n = {a.n:,} + {a.n:,} trials")
    print(f"numpy.sort of all scores      {t_sort:8.3f} s   1.00x")
    print(f"verification_summary (bundle) {t_sum:8.3f} s   {t_sum / t_sort:5.2f}x   peak {peak / 2**20:.0f} MiB "
          f"({peak / both.nbytes:.1f}x the input)")
    print(f"each public function once     {t_all:8.3f} s   {t_all / t_sort:5.2f}x")
    print(f"pav_llr alone                 {best(lambda: vpeval.pav_llr(tar, non), a.repeat) / t_sort:5.2f}x")


if __name__ == "__main__":
    main()
