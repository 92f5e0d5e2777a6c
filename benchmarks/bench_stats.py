"""Time the uncertainty statistics on the bundled example, as `vpeval demo` would run them.

For each attacker: bootstrap + chance floor of the five headline verification metrics for the six report
trial types, of rank-1 / ALID / LID_max for the three 1-to-N conditions, and the per-speaker profile of the
oa attack. Prints one line per step and the total CPU time of this process (time.process_time, so that other
load on the machine inflates it less than wall-clock time).

    PYTHONPATH=src python benchmarks/bench_stats.py [n_boot] [n_perm]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pandas as pd

from vpeval.io.embeddings import read_embeddings
from vpeval.pipeline import build_trials, make_protocol, one_to_n
from vpeval.report.linkage import analyse_one_to_n
from vpeval.stats import assess_one_to_n, assess_trials, leak_for_trial_type, speaker_profile, trial_speakers

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "librispeech-mini"
TYPES = ("oo", "oa", "aa", "oaaa", "aaaa", "aa-centroid")


def main(n_boot=200, n_perm=200):
    md = pd.read_csv(EXAMPLE / "metadata.csv")
    total = 0.0
    for f in sorted(EXAMPLE.glob("embeddings_*.npz")):
        es = read_embeddings(f)
        p = make_protocol(es)
        trials = build_trials(es, TYPES, protocol=p)
        for name, t in trials.items():
            leak = leak_for_trial_type(name)
            t0 = time.process_time()
            assess_trials(t, groups=trial_speakers(t, p), n_boot=n_boot, n_perm=n_perm, leak=leak)
            dt = time.process_time() - t0
            total += dt
            print(f"{es.extractor:18s} {name:14s} {len(t):6d} trials  {dt:6.3f} s")
        for e, q in (("o", "o"), ("o", "a"), ("a", "a")):
            m = one_to_n(es, p, enroll=e, probe=q)
            la = analyse_one_to_n(m)
            t0 = time.process_time()
            assess_one_to_n(m, la.lid, n_boot=n_boot, n_perm=n_perm)
            if e + q == "oa":
                speaker_profile(trials["oa"], one_to_n=m, lid=la.lid, metadata=md)
            dt = time.process_time() - t0
            total += dt
            print(f"{es.extractor:18s} {e + q + ' 1-to-N':14s} {m.scores.size:6d} scores  {dt:6.3f} s"
                  + ("  (+ profile)" if e + q == "oa" else ""))
    print(f"total {total:.2f} s (n_boot={n_boot}, n_perm={n_perm})")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
