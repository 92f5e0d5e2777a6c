"""Benchmark: every LLR estimator on 1e6 target + 1e6 non-target trials (fit + transform of all trials).

Times are reported in seconds and relative to one ``numpy.sort`` of the 2e6 pooled scores (the floor of any
rank-based metric).  Run: ``PYTHONPATH=src python benchmarks/bench_estimators.py [--n 1000000] [--repeat 3]``.
Scores: the worst-case paper's counterexample (targets N(0, 2^2), non-targets N(0, 1)), seed 0.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from vpeval.disclosure import ESTIMATORS, make_calibrator, worst_case_disclosure
from vpeval.simulate import counterexample


def best_of(fn, repeat):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="trials per class")
    ap.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    ap.add_argument("--skip-scipy-t", action="store_true", help="skip the slow scipy.stats.t.fit comparison")
    args = ap.parse_args()
    sim = counterexample(args.n, seed=0)
    pooled = np.concatenate([sim.tar, sim.non])
    t_sort = best_of(lambda: np.sort(pooled), args.repeat)
    print(f"n = {args.n} + {args.n} trials; numpy sort of {pooled.size}: {t_sort * 1e3:.1f} ms")
    print(f"{'estimator':16s} {'seconds':>9s} {'x sort':>8s}")
    for name in ESTIMATORS:
        def run():
            cal = make_calibrator(name).fit(sim.tar, sim.non)
            cal.transform(sim.tar)
            cal.transform(sim.non)

        t = best_of(run, args.repeat)
        print(f"{name:16s} {t:9.3f} {t / t_sort:8.1f}")
    from vpeval.calibration.student_t import StudentTCalibrator

    def run_scipy():
        cal = StudentTCalibrator(fitter="scipy").fit(sim.tar, sim.non)
        cal.transform(sim.tar)
        cal.transform(sim.non)

    if not args.skip_scipy_t:
        t = best_of(run_scipy, 1)
        print(f"{'student_t(scipy)':16s} {t:9.3f} {t / t_sort:8.1f}   (scipy.stats.t.fit, for comparison)")
    t = best_of(lambda: worst_case_disclosure(sim.tar, sim.non), 1)
    print(f"{'worst_case_disclosure (5 default estimators)':s}: {t:.3f} s = {t / t_sort:.1f} x sort")


if __name__ == "__main__":
    main()
