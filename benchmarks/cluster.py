"""Benchmark: anonymize + embed on a local Dask cluster (2 workers against 1), and 1-to-N linkage of a 1e8-score
matrix through dask with the peak memory of each worker.

Part 1 (needs ../shared/data/librispeech-mini and the audio extra): McAdams anonymization (alpha drawn per
utterance) then MFCC-statistics embedding of the 100 utterances of test-other (767 s of speech), timed in one
process, on a LocalCluster of 1 worker process and of 2 (one thread each; cluster start-up not included, it
is printed separately). The outputs of every run are compared with the single-process ones (audio bytes,
embedding rows).

Part 2: probes x speakers = 100,000 x 1,000 = 1e8 cosine scores built on the workers from synthetic 64-dim
embeddings (``vpeval.pipeline.cluster.score_matrix``: never held by the client), then
``linkage_analysis`` (z-norm, logistic calibration fitted by streaming passes on a 10,000 x 1,000 development
matrix, LID, ranks, CMC, closed-set linkability) with ``client=``. Worker memory is each worker process's
resident set size, sampled every 0.1 s (``client.run``), peak over the run; the client's own peak RSS is
printed beside it. ``--check`` also runs the in-memory path on the same matrix and compares every number.

Run:  PYTHONPATH=src python benchmarks/cluster.py [--skip-audio] [--skip-lid] [--check] [--probes 100000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT.parent / "shared" / "data" / "librispeech-mini" / "test-other"
MB = 2**20


def _files(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _cpu_seconds():
    import psutil

    t = psutil.Process().cpu_times()
    return t.user + t.system


def audio_part():
    from vpeval.audio.anonymize import anonymize_folder
    from vpeval.audio.embed import MfccStatsExtractor, embed_folder
    from vpeval.pipeline.cluster import cluster

    tmp = Path(tempfile.mkdtemp(prefix="vpeval-bench-cluster-"))
    try:
        runs = {}
        for label, workers in (("1 process (no cluster)", None), ("1 worker", 1), ("2 workers", 2)):
            t0 = time.perf_counter()
            with cluster(workers=workers) as client:
                start = time.perf_counter() - t0

                def cpu():  # CPU seconds of this process, plus of every worker process on a cluster
                    return _cpu_seconds() + (0.0 if client is None else sum(client.run(_cpu_seconds).values()))

                out = tmp / label.replace(" ", "_").replace("(", "").replace(")", "")
                c1, t1 = cpu(), time.perf_counter()
                df = anonymize_folder(REAL, out, alpha="utterance", seed=2024, quiet=True, client=client)
                t2 = time.perf_counter()
                es = embed_folder(out, MfccStatsExtractor(), condition="anonymized", quiet=True, client=client)
                t3 = time.perf_counter()
                c3 = cpu()
            runs[label] = (start, t2 - t1, t3 - t2, _files(out), es.embeddings.tobytes())
            print(f"{label:24s} start-up {start:5.1f} s  anonymize {t2 - t1:6.1f} s  embed {t3 - t2:5.2f} s  "
                  f"total {t3 - t1:6.1f} s  CPU {c3 - c1:6.1f} s  load {os.getloadavg()[0]:.1f}  ({len(df)} "
                  f"utterances, {df['duration_s'].sum():.0f} s of speech)", flush=True)
        ref = runs["1 process (no cluster)"]
        for label, r in runs.items():
            print(f"  {label}: files identical {r[3] == ref[3]}, embeddings identical {r[4] == ref[4]}")
        one, two = runs["1 worker"], runs["2 workers"]
        print(f"speed-up 2 workers / 1 worker (anonymize + embed): {(one[1] + one[2]) / (two[1] + two[2]):.2f}x")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def lid_part(n_probes: int, n_speakers: int, n_dev: int, check: bool):
    import psutil

    from vpeval.metrics.linkage import linkage_analysis
    from vpeval.pipeline.cluster import cluster, score_matrix
    from vpeval.pipeline.protocols import score_rows

    rng = np.random.default_rng(0)
    dim = 64
    models = rng.standard_normal((n_speakers, dim))
    models /= np.linalg.norm(models, axis=1, keepdims=True)

    def probes_of(n, seed):
        r = np.random.default_rng(seed)
        ti = r.integers(0, n_speakers, n)
        p = models[ti] + 1.5 * r.standard_normal((n, dim)) / np.sqrt(dim) * 4
        return p / np.linalg.norm(p, axis=1, keepdims=True), ti

    probes, ti = probes_of(n_probes, 1)
    dprobes, dti = probes_of(n_dev, 2)
    print(f"\n1-to-N: {n_probes} probes x {n_speakers} speakers = {n_probes * n_speakers:.3g} scores "
          f"({n_probes * n_speakers * 8 / MB:.0f} MiB as float64), dev {n_dev} x {n_speakers}", flush=True)

    def rss():
        return psutil.Process().memory_info().rss

    with cluster(workers=2) as client:
        base = client.run(rss)
        base["client"] = rss()
        peaks = dict(base)
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                try:
                    for w, v in dict(client.run(rss), client=rss()).items():
                        peaks[w] = max(peaks[w], v)
                except Exception:  # noqa: BLE001  (a sample lost while the cluster shuts down)
                    pass
                stop.wait(0.1)

        th = threading.Thread(target=sample, daemon=True)
        th.start()
        t0 = time.perf_counter()
        scores = score_matrix(probes, models, client=client)
        dev = score_matrix(dprobes, models, client=client)
        res = linkage_analysis(scores, ti, dev, dti, client=client)
        dt = time.perf_counter() - t0
        stop.set()
        th.join()
    print(f"linkage_analysis on 2 workers: {dt:.1f} s; ALID {res.lid.summary.alid:.4f} bits, rank-1 "
          f"{res.identification.rates[1]:.4f}, slope {res.lid.slope[0]:.6g}")
    for w in sorted(peaks):
        print(f"  {'' if w == 'client' else 'worker '}{w}: peak RSS {peaks[w] / MB:.0f} MiB (at start "
              f"{base[w] / MB:.0f} MiB)")
    if check:
        t0 = time.perf_counter()
        ref = linkage_analysis(score_rows(probes, models), ti, score_rows(dprobes, models), dti)
        print(f"in-memory path: {time.perf_counter() - t0:.1f} s; identical: "
              f"{ref.to_dict() == res.to_dict() and np.array_equal(ref.lid.lid, res.lid.lid)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-audio", action="store_true")
    ap.add_argument("--skip-lid", action="store_true")
    ap.add_argument("--check", action="store_true", help="also run the 1-to-N in memory and compare")
    ap.add_argument("--probes", type=int, default=100_000)
    ap.add_argument("--speakers", type=int, default=1_000)
    ap.add_argument("--dev", type=int, default=10_000)
    a = ap.parse_args()
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f} at start", flush=True)
    if not a.skip_audio:
        if not REAL.is_dir():
            sys.exit(f"{REAL} is absent (needs ../shared/data/librispeech-mini); use --skip-audio")
        audio_part()
    if not a.skip_lid:
        lid_part(a.probes, a.speakers, a.dev, a.check)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
