"""Benchmark: LID + CMC + rank histogram on a large synthetic probe x speaker matrix.

Targets (issue "1-to-N linkage"): time <= 2x one ``numpy.exp`` pass over the matrix, and extra memory
< 1 GB above the input. Extra memory is the tracemalloc peak of NumPy allocations made during a call
(the input is allocated before tracing starts).

Run:  PYTHONPATH=src python benchmarks/bench_linkage.py [--probes 20000] [--speakers 5000] [--pipeline]
"""

from __future__ import annotations

import argparse
import resource
import time
import tracemalloc

import numpy as np

from vpeval.metrics.identification import cmc, rank_counts, rank_histogram
from vpeval.metrics.linkage import lid, lid_pipeline

MB = 2**20


def measure(fn, repeat=3):
    """(best wall time in s, tracemalloc peak in MB) over ``repeat`` runs."""
    best, peak = float("inf"), 0
    for _ in range(repeat):
        tracemalloc.start()
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        peak = max(peak, tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        best = min(best, dt)
    return best, peak / MB


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--probes", type=int, default=20000)
    ap.add_argument("--speakers", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pipeline", action="store_true", help="also time lid_pipeline with a 1000-probe dev set")
    a = ap.parse_args()

    rng = np.random.default_rng(0)
    n, N = a.probes, a.speakers
    S = rng.standard_normal((n, N))
    ti = rng.integers(0, N, size=n)
    S[np.arange(n), ti] += 2.0
    print(f"matrix {n} x {N} float64 = {S.nbytes / MB:.0f} MB; numpy {np.__version__}")

    buf = [np.empty_like(S)]
    np.exp(S, out=buf[0])  # touch the output pages once
    t_exp_warm, _ = measure(lambda: np.exp(S, out=buf[0]), a.repeat)
    buf.clear()  # free the 0.8 GB before the measured calls
    t_exp_alloc, m_exp = measure(lambda: np.exp(S), a.repeat)

    t_lid, m_lid = measure(lambda: lid(S, ti), a.repeat)
    t_cmc, m_cmc = measure(lambda: cmc(S, ti), a.repeat)
    t_hist, m_hist = measure(lambda: rank_histogram(S, ti), a.repeat)

    def shared():
        lid(S, ti)
        c = rank_counts(S, ti)
        c.cmc()
        c.histogram()

    def fused():
        _, c = lid(S, ti, return_rank_counts=True)
        c.cmc()
        c.histogram()

    t_shared, m_shared = measure(shared, a.repeat)
    t_fused, m_fused = measure(fused, a.repeat)
    t_all = t_lid + t_cmc + t_hist

    rows = [
        ("numpy.exp(S, out=buf) (warm, baseline A)", t_exp_warm, None),
        ("numpy.exp(S) (allocating, baseline B)", t_exp_alloc, m_exp),
        ("lid(S, ti)", t_lid, m_lid),
        ("cmc(S, ti)", t_cmc, m_cmc),
        ("rank_histogram(S, ti)", t_hist, m_hist),
        ("lid + cmc + rank_histogram (3 calls)", t_all, max(m_lid, m_cmc, m_hist)),
        ("lid + one rank_counts -> cmc, histogram", t_shared, m_shared),
        ("lid(return_rank_counts=True) -> cmc, hist", t_fused, m_fused),
    ]
    print(f"{'step':44s} {'time s':>8s} {'/exp A':>7s} {'/exp B':>7s} {'peak MB':>8s}")
    for name, t, m in rows:
        ms = "-" if m is None else f"{m:.0f}"
        print(f"{name:44s} {t:8.3f} {t / t_exp_warm:7.2f} {t / t_exp_alloc:7.2f} {ms:>8s}")

    if a.pipeline:
        dev = rng.standard_normal((1000, N))
        dti = rng.integers(0, N, size=1000)
        dev[np.arange(1000), dti] += 2.0
        t_pipe, m_pipe = measure(lambda: lid_pipeline(dev, S, dti, ti), 1)
        print(f"{'lid_pipeline (dev 1000 x N, eval n x N)':44s} {t_pipe:8.3f} {t_pipe / t_exp_warm:7.2f} "
              f"{t_pipe / t_exp_alloc:7.2f} {m_pipe:8.0f}")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"max RSS of the process (input + everything above): {rss:.0f} MB")


if __name__ == "__main__":
    main()
