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

``--workers K`` runs the population curves on a local Dask cluster of K single-threaded worker processes
instead: the matrix is a dask array whose row blocks are drawn on the workers (the client never holds it), the
rows are z-normalised there (``znorm=True``); printed per N: the seconds (cluster start-up excluded, printed
apart), the client's traced peak of new memory, and the workers' peak resident set (sampled every 0.1 s).
``--check`` then also computes the same matrix in this process and compares every number of the curves.

    python benchmarks/population.py --workers 2 --sizes 3000,10000 --check

``--ks K1,K2,...`` measures the combinations against k instead, at the one N of ``--sizes``: for each K, the time
and traced memory of ``combined_probes`` for k = K alone and for k = 1..K, with ``max(K)`` probes per speaker.

    python benchmarks/population.py --ks 1,2,4,8 --sizes 3000 --speakers 500

``--validity R`` instead measures the extrapolation against a known truth, R simulated tables per condition
(``--probes`` probes of as many speakers, ``--enrolled`` enrolled, LLRs drawn directly; ``s = 2``):

- ``iid``: the model's own assumption, impostor LLRs ``N(-s^2/2, s^2)``, true LLRs ``N(s^2/2, s^2)``;
- ``wolves``: an enrolled speaker's effect shared by every probe, impostor ``a_j + e_ij`` with ``a_j ~ N(0, 1)``
  and ``e_ij ~ N(-s^2/2, s^2 - 1)`` (the same margin; new speakers of the population bring new effects);
- ``probe-scale``: each probe's impostors spread by its own factor, ``N(-s^2/2, (c_i s)^2)``, ``ln c_i ~ N(0,
  0.3^2)``, which the pooled distribution averages away.

The truth at each size beyond the table: rank-1 = ``mean_i F_i(g_i)^(N'-1)`` (closed form, each probe's own
impostor law), ALID by drawing every probe's ``N' - 1`` impostors (40 draws). Printed per condition and size: the
mean model-minus-truth error and the share of tables whose 95 % interval holds the truth (Clopper-Pearson
interval beside it).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
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


def _block(seed: int, start: int, rows: int, n_enrolled: int, ti: np.ndarray) -> np.ndarray:
    """Rows ``start .. start + rows`` of a simulated attacker's table, drawn from their own stream (the same
    values wherever they are drawn)."""
    rng = np.random.default_rng([seed, start])
    s = 2.0
    x = rng.normal(-s * s / 2, s, (rows, n_enrolled))
    x[np.arange(rows), ti] = rng.normal(s * s / 2, s, rows)
    return x


def _dask_matrix(n_enrolled: int, speakers: int, per: int, rows: int = 500, seed: int = 0):
    import dask
    import dask.array as da

    ti = np.repeat(np.arange(speakers), per)
    parts = [da.from_delayed(dask.delayed(_block)(seed, a, min(rows, ti.size - a), n_enrolled, ti[a:a + rows]),
                             (min(rows, ti.size - a), n_enrolled), np.float64) for a in range(0, ti.size, rows)]
    return da.concatenate(parts, axis=0), ti


def on_cluster(a) -> None:
    import threading

    import distributed
    import psutil

    t = time.perf_counter()
    with distributed.LocalCluster(n_workers=a.workers, processes=True, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=None, silence_logs=50) as local, distributed.Client(local) as c:
        print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, {a.workers} worker "
              f"processes (started in {time.perf_counter() - t:.1f} s), {a.speakers} speakers x {a.per} probes")
        print("| N | matrix | population curves | client's peak new memory | workers' peak RSS | same as in memory "
              "| load |")
        print("|---|---|---|---|---|---|---|")
        for n_enrolled in (int(v) for v in a.sizes.split(",")):
            x, ti = _dask_matrix(n_enrolled, min(a.speakers, n_enrolled), a.per)
            sizes = default_population_sizes(n_enrolled, [10 * n_enrolled, 100 * n_enrolled])
            peak, stop = [0], threading.Event()

            def sample():
                while not stop.wait(0.1):
                    rss = c.run(lambda: psutil.Process().memory_info().rss)
                    peak[0] = max(peak[0], max(rss.values()))

            th = threading.Thread(target=sample, daemon=True)
            load0 = os.getloadavg()[0]
            th.start()
            res = []
            sec, mem = _measure(lambda: res.append(population_curves(x, ti, sizes, speaker=ti, znorm=True,
                                                                     client=c)))
            stop.set()
            th.join()
            same = "not checked"
            if a.check:
                same = "yes" if population_curves(x.compute(), ti, sizes, speaker=ti, znorm=True).to_dict() == \
                    res[0].to_dict() else "**no**"
            print(f"| {n_enrolled:,} | {ti.size:,} x {n_enrolled:,} ({ti.size * n_enrolled * 8 / 2 ** 20:.0f} MiB) | "
                  f"{sec:.1f} s | {mem:.0f} MiB | {peak[0] / 2 ** 20:.0f} MiB | {same} | {load0:.1f} -> "
                  f"{os.getloadavg()[0]:.1f} |", flush=True)


def against_k(a) -> None:
    ks = [int(v) for v in a.ks.split(",")]
    n_enrolled = int(a.sizes.split(",")[0])
    x, ti = _matrix(n_enrolled, min(a.speakers, n_enrolled), max(ks))
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, N = {n_enrolled:,}, "
          f"{min(a.speakers, n_enrolled)} speakers x {max(ks)} probes ({x.nbytes / 2 ** 20:.0f} MiB)")
    print("| K | combined k = K | peak new memory | combined k = 1..K | peak new memory | load |")
    print("|---|---|---|---|---|---|")
    for k in ks:
        load0 = os.getloadavg()[0]
        one, one_m = _measure(lambda: combined_probes(x, ti, [k]))
        upto, upto_m = _measure(lambda: combined_probes(x, ti, range(1, k + 1)))
        print(f"| {k} | {one:.1f} s | {one_m:.0f} MiB | {upto:.1f} s | {upto_m:.0f} MiB | {load0:.1f} -> "
              f"{os.getloadavg()[0]:.1f} |", flush=True)


def _measure(fn):
    tracemalloc.start()
    t = time.perf_counter()
    fn()
    sec = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return sec, peak / 2 ** 20


def _validity_table(rng, condition: str, n_probe: int, n_enrolled: int, s: float = 2.0):
    """One simulated LLR table: matrix, true index, and each probe's impostor law (mean, sd) for new speakers."""
    ti = rng.permutation(n_enrolled)[:n_probe] if n_probe <= n_enrolled else rng.integers(0, n_enrolled, n_probe)
    mu = -s * s / 2
    if condition == "iid":
        sd = np.full(n_probe, s)
        x = rng.normal(mu, s, (n_probe, n_enrolled))
    elif condition == "wolves":
        sd = np.full(n_probe, s)
        x = rng.normal(0.0, 1.0, n_enrolled)[None, :] + rng.normal(mu, math.sqrt(s * s - 1), (n_probe, n_enrolled))
    else:  # probe-scale
        sd = s * np.exp(rng.normal(0.0, 0.3, n_probe))
        x = mu + sd[:, None] * rng.standard_normal((n_probe, n_enrolled))
    g = rng.normal(s * s / 2, s, n_probe)
    x[np.arange(n_probe), ti] = g
    return x, ti, g, np.full(n_probe, mu), sd


def _truth(rng, g, mu, sd, size: int, draws: int = 40):
    from scipy.stats import norm

    rank1 = float((norm.cdf(g, mu, sd) ** (size - 1)).mean())
    lids = np.empty(g.size)
    for i in range(g.size):
        S = np.exp(mu[i] + sd[i] * rng.standard_normal((draws, size - 1))).sum(axis=1)
        lids[i] = ((math.log(size) + g[i] - np.logaddexp(g[i], np.log(S))) / math.log(2)).mean()
    return rank1, float(lids.mean())


def validity(runs: int, n_probe: int, n_enrolled: int, sizes) -> None:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from simulation_common import clopper_pearson

    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {runs} tables per condition, {n_probe} probes, "
          f"{n_enrolled} enrolled; load {os.getloadavg()[0]:.1f}")
    print("| condition | N' | rank-1 truth (mean) | model - truth | covered | ALID truth (bits) | model - truth | "
          "covered |")
    print("|---|---|---|---|---|---|---|---|")
    for condition in ("iid", "wolves", "probe-scale"):
        rng = np.random.default_rng(50)
        rec = {size: [] for size in sizes}
        for r in range(runs):
            x, ti, g, mu, sd = _validity_table(rng, condition, n_probe, n_enrolled)
            c = population_curves(x, ti, sizes, n_boot=200, check=False, seed=r)
            for j, size in enumerate(sizes):
                t1, ta = _truth(rng, g, mu, sd, size)
                rec[size].append((c.rank1[j] - t1, c.rank1_low[j] <= t1 <= c.rank1_high[j], t1,
                                  c.alid_bits[j] - ta, c.alid_low[j] <= ta <= c.alid_high[j], ta))
        for size in sizes:
            a = np.array(rec[size], dtype=float)
            k1, ka = int(a[:, 1].sum()), int(a[:, 4].sum())
            l1, h1 = clopper_pearson(k1, runs)
            la, ha = clopper_pearson(ka, runs)
            print(f"| {condition} | {size:,} | {a[:, 2].mean():.4f} | {a[:, 0].mean():+.4f} | {k1}/{runs} "
                  f"({100 * l1:.0f}-{100 * h1:.0f} %) | {a[:, 5].mean():.3f} | {a[:, 3].mean():+.3f} | {ka}/{runs} "
                  f"({100 * la:.0f}-{100 * ha:.0f} %) |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,3000,10000", help="numbers of enrolled speakers N, comma-separated")
    ap.add_argument("--speakers", type=int, default=1000, help="speakers the probes come from (at most N)")
    ap.add_argument("--per", type=int, default=4, help="probes per speaker")
    ap.add_argument("--validity", type=int, default=0, metavar="R", help="measure the extrapolation instead (R tables "
                    "per condition)")
    ap.add_argument("--probes", type=int, default=300, help="--validity: probes (one per speaker)")
    ap.add_argument("--enrolled", type=int, default=400, help="--validity: enrolled speakers")
    ap.add_argument("--beyond", default="2000,20000", help="--validity: sizes beyond the table, comma-separated")
    ap.add_argument("--workers", type=int, default=0, metavar="K", help="run the curves on a local Dask cluster of K "
                    "worker processes")
    ap.add_argument("--check", action="store_true", help="--workers: compare with the in-memory curves")
    ap.add_argument("--ks", default=None, help="measure the combinations against these k instead (comma-separated)")
    a = ap.parse_args()
    if a.ks:
        against_k(a)
        return
    if a.workers:
        on_cluster(a)
        return
    if a.validity:
        validity(a.validity, a.probes, a.enrolled, [int(v) for v in a.beyond.split(",")])
        return
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
