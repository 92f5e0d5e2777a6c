"""Time and peak memory of building every trial type from synthetic embeddings.

Run: PYTHONPATH=src python benchmarks/bench_protocols.py [n_speakers] [n_utts] [n_cohort] [dim]
"""

from __future__ import annotations

import resource
import sys
import time

import numpy as np

from vpeval.io.embeddings import EmbeddingSet
from vpeval.pipeline import build_trials, one_to_n


def main(n_spk=1000, n_utt=10, n_cohort=250, dim=256):
    rng = np.random.default_rng(0)
    utt = [f"{s}-1-{u:04d}" for s in range(n_spk) for u in range(n_utt)]
    utt += [f"c{c}-2-0000" for c in range(n_cohort)]
    spk = [u.split("-")[0] for u in utt]
    n = len(utt)
    cond = ["original"] * n + ["anonymized"] * n
    es = EmbeddingSet(rng.normal(size=(2 * n, dim)), utt * 2, spk * 2, cond, "bench")
    t0 = time.perf_counter()
    m = one_to_n(es)
    t1 = time.perf_counter()
    trials = build_trials(es)
    t2 = time.perf_counter()
    total = sum(len(t) for t in trials.values())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{n_spk} speakers x {n_utt} utts + {n_cohort} cohort, d={dim}: 1-to-N {m.scores.shape} in {t1 - t0:.2f} s; "
          f"all 8 types ({total:,} trials) in {t2 - t1:.2f} s; peak RSS {peak:.0f} MiB")


if __name__ == "__main__":
    main(*map(int, sys.argv[1:]))
