#!/usr/bin/env python
"""Every benchmark of vpeval in one run, printed as one table of ratios.

Each row times one vpeval operation against its *floor* (the cheapest NumPy operation that any
implementation must at least perform: one sort of the scores for trial metrics, one ``exp`` pass for a
score matrix) and, where a reference implementation is installed, against it. Peak memory is the
tracemalloc peak of allocations made during the call (inputs excluded).

    python benchmarks/run.py            # full sizes (1e6 + 1e6 trials, 20,000 x 5,000 matrix), ~2-4 min
    python benchmarks/run.py --quick    # 10x smaller, for a smoke run

The per-family scripts beside this one (bench_core.py, bench_linkage.py, bench_audio.py, ...) give more
detail. Results and the machine they ran on are recorded in BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import vpeval  # noqa: E402
from vpeval.metrics.summary import verification_summary  # noqa: E402

ROWS: list[tuple] = []


def timed(fn, repeat=3):
    """(best wall time in s, tracemalloc peak in MiB of the last run)."""
    best = float("inf")
    for i in range(repeat):
        if i == repeat - 1:
            tracemalloc.start()
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return best, peak / 2**20


def row(name, t, floor_name, t_floor, peak=None, ref_name="", t_ref=None, note=""):
    ROWS.append((name, t, floor_name, t_floor, peak, ref_name, t_ref, note))


def bench_verification(n, repeat):
    rng = np.random.default_rng(0)
    tar, non = rng.normal(1.0, 1.0, n), rng.normal(-1.0, 1.5, n)
    both = np.concatenate([tar, non])
    t_sort, _ = timed(lambda: np.sort(both), repeat)

    def bundle():
        verification_summary(tar, non, return_llrs=True)

    t, peak = timed(bundle, repeat)
    ref_name, t_ref = "", None
    try:
        from sklearn.metrics import roc_curve

        labels = np.r_[np.ones(n), np.zeros(n)]

        def ref():
            fpr, tpr, _ = roc_curve(labels, both)
            fnr = 1 - tpr
            i = np.nanargmin(np.abs(fnr - fpr))
            return (fnr[i] + fpr[i]) / 2

        ref_name, (t_ref, _) = "sklearn roc_curve EER", timed(ref, repeat)
    except ImportError:
        pass
    row(f"verification bundle ({n:,}+{n:,})", t, "np.sort", t_sort, peak, ref_name, t_ref,
        "EERs, DET, minDCF, minCllr, D_ECE, eps_max, linkability, PAV x2")
    t1, _ = timed(lambda: vpeval.rocch_eer(tar, non), repeat)
    row("rocch_eer alone", t1, "np.sort", t_sort, None, ref_name, t_ref)


def bench_estimators(n, repeat):
    try:
        from vpeval.disclosure import worst_case_disclosure
    except ImportError:
        return
    rng = np.random.default_rng(1)
    tar, non = rng.normal(0.0, 2.0, n), rng.normal(0.0, 1.0, n)
    t_sort, _ = timed(lambda: np.sort(np.concatenate([tar, non])), repeat)
    for est in ("pav", "pav_laplace", "logistic", "gaussian", "student_t"):
        t, peak = timed(lambda: worst_case_disclosure(tar, non, estimators=(est,)), 1)
        row(f"worst-case disclosure: {est}", t, "np.sort", t_sort, peak)


def bench_linkage(n_probes, n_spk, repeat):
    from vpeval.metrics.identification import identification_rates
    from vpeval.metrics.linkage import lid

    rng = np.random.default_rng(2)
    x = rng.normal(size=(n_probes, n_spk))
    ti = rng.integers(0, n_spk, n_probes)
    x[np.arange(n_probes), ti] += 2.0
    out = np.empty_like(x)
    t_exp, _ = timed(lambda: np.exp(x, out=out), repeat)

    def fused():
        _, counts = lid(x, ti, return_rank_counts=True)
        identification_rates(counts)

    t, peak = timed(fused, repeat)
    row(f"LID + CMC + rank histogram ({n_probes:,} x {n_spk:,})", t, "np.exp pass", t_exp, peak,
        note=f"input {x.nbytes / 2**20:.0f} MiB")


def bench_protocols(n_spk):
    from vpeval.io.embeddings import EmbeddingSet

    rng = np.random.default_rng(3)
    u, s, c, e = [], [], [], []
    for k in range(n_spk):
        centre = rng.normal(size=64)
        for j in range(10):
            for cond in ("original", "anonymized"):
                u.append(f"s{k}-{j}"), s.append(f"s{k}"), c.append(cond), e.append(centre + rng.normal(size=64))
    es = EmbeddingSet(np.array(e), u, s, c, "synthetic")
    t, peak = timed(lambda: vpeval.build_trials(es, ["oo", "oa", "aa"]), 1)
    prod = np.array(e[: 5 * n_spk]) @ np.array(e[: n_spk]).T
    t_floor, _ = timed(lambda: np.array(e) @ np.array(e[: 2 * n_spk]).T, 1)
    del prod
    row(f"build_trials oo/oa/aa ({n_spk} speakers x 10 utts)", t, "one matmul of all rows", t_floor, peak)


def bench_stats(repeat):
    from vpeval.stats import EER_ROCCH, bootstrap

    rng = np.random.default_rng(4)
    n_spk, per = 50, 260
    spk = np.repeat([f"s{i}" for i in range(n_spk)], per)
    is_t = rng.random(spk.size) < 1 / 26
    scores = rng.normal(size=spk.size) + 2 * is_t
    t_trials = vpeval.Trials(scores, is_t)
    t_sort, _ = timed(lambda: np.sort(scores), repeat)
    t, peak = timed(lambda: bootstrap(t_trials, [EER_ROCCH], groups=spk, n_boot=200, seed=0), 1)
    row(f"speaker bootstrap, 200 replicates ({spk.size:,} trials)", t, "np.sort", t_sort, peak,
        note="per replicate: {:.1f} sorts".format(t / 200 / t_sort))


def bench_audio():
    data = ROOT.parent / "shared" / "data" / "librispeech-mini" / "test-other"
    files = sorted(data.rglob("*.flac"))[:10]
    if not files:
        return
    from vpeval.anonymize import mcadams
    from vpeval.embed import MfccStatsExtractor
    from vpeval.io.audio import read_audio

    xs = [read_audio(f) for f in files]
    dur = sum(x.size for x in xs) / 16000
    mcadams(xs[0], 0.8)  # warm-up: imports and numba compilation inside librosa
    t, _ = timed(lambda: [mcadams(x, 0.8) for x in xs], 1)
    row("McAdams anonymization (10 utts)", t, "real time", dur, note=f"{dur / t:.0f}x real time (target >= 20x)")
    ext = MfccStatsExtractor()
    ext.embed(xs[0], 16000)
    t, _ = timed(lambda: [ext.embed(x, 16000) for x in xs], 1)
    row("MFCC-stats embedding (10 utts)", t, "real time", dur, note=f"{dur / t:.0f}x real time")
    try:
        from vpeval.embed import get_extractor

        res = get_extractor("resemblyzer")
        res.embed(xs[0], 16000)
        t, _ = timed(lambda: [res.embed(x, 16000) for x in xs], 1)
        row("resemblyzer embedding (10 utts)", t, "real time", dur, note=f"{dur / t:.0f}x real time (target >= 50x)")
    except Exception as exc:  # extractor not installed
        row("resemblyzer embedding", float("nan"), "real time", dur, note=f"skipped: {type(exc).__name__}")


def interleaved(op, floor, repeat=5):
    """Medians of ``repeat`` interleaved runs of ``op`` and ``floor`` (floor, op, floor, op, ...), in s."""
    t_op, t_floor = [], []
    for _ in range(max(5, repeat)):
        t0 = time.perf_counter()
        floor()
        t_floor.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        op()
        t_op.append(time.perf_counter() - t0)
    return float(np.median(t_op)), float(np.median(t_floor))


def bench_backends(n_spk, repeat):
    """PLDA training on n_spk speakers x 10 embeddings (d = 256) and scoring of a 1000 x 1000 trial matrix."""
    from vpeval.backends import PLDABackend

    rng = np.random.default_rng(5)
    d, per = 256, 10
    centres = rng.normal(size=(n_spk, d))
    x = np.repeat(centres, per, axis=0) + 0.7 * rng.normal(size=(n_spk * per, d))
    spk = np.repeat([f"s{i:05d}" for i in range(n_spk)], per)
    t, t_floor = interleaved(lambda: PLDABackend().fit(x, spk), lambda: np.linalg.eigh(x.T @ x), repeat)
    tracemalloc.start()
    plda = PLDABackend().fit(x, spk)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    row(f"PLDA training ({n_spk:,} spk x {per} emb, d={d}; 10 EM iterations)", t, "X'X + eigh", t_floor, peak)
    n = 1000 if n_spk >= 1000 else 100
    e, te = x[:n], x[-n:]
    t, t_floor = interleaved(lambda: plda.score(e, te), lambda: e @ te.T, repeat)
    tracemalloc.start()
    plda.score(e, te)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    row(f"PLDA scoring ({n:,} x {n:,} = {n * n:,} trials, d={d})", t, "one matmul", t_floor, peak)


def bench_demo():
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "vpeval.cli.main", "demo", "-o", os.path.join(d, "r"), "-q"],
                       check=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
        row("vpeval demo (whole audit, bundled example)", time.perf_counter() - t0, "1 minute budget", 60.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10x smaller inputs")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated subset: verification,estimators,linkage,"
                    "protocols,stats,backends,audio,demo")
    a = ap.parse_args()
    k = 10 if a.quick else 1
    runs = {
        "verification": lambda: bench_verification(1_000_000 // k, a.repeat),
        "estimators": lambda: bench_estimators(1_000_000 // k, a.repeat),
        "linkage": lambda: bench_linkage(20_000 // k, 5_000, a.repeat),
        "protocols": lambda: bench_protocols(1000 // k),
        "stats": lambda: bench_stats(a.repeat),
        "backends": lambda: bench_backends(1000 // k, a.repeat),
        "audio": bench_audio,
        "demo": bench_demo,
    }
    chosen = [x for x in a.only.split(",") if x] or list(runs)
    for name in chosen:
        runs[name]()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"numpy {np.__version__}, load average {os.getloadavg()[0]:.1f}")
    head = f"{'operation':58s} {'time s':>8s} {'floor':>22s} {'x floor':>8s} {'peak MiB':>9s}  reference / note"
    print(head)
    print("-" * len(head))
    for name, t, fname, tf, peak, rname, tr, note in ROWS:
        ratio = t / tf if tf else float("nan")
        ref = f"{rname}: {tr:.3f} s ({t / tr:.2f}x)" if tr else ""
        pk = f"{peak:9.0f}" if peak is not None else f"{'':9s}"
        print(f"{name:58s} {t:8.3f} {fname:>22s} {ratio:8.2f} {pk}  {'; '.join(x for x in (ref, note) if x)}")


if __name__ == "__main__":
    main()
