#!/usr/bin/env python
"""Before/after of the verdict's trial-relabelling test on one machine at one load: two source trees in turns.

The ``--only verdict`` row of ``run.py`` compares the test with one ``np.sort`` of the scores; a change of the
code is best judged by running the old and the new code in turns, under the same load. Each turn is a child
process that imports vpeval from one tree, builds the trial row's input (1e6 ``score label`` trials, 10 %
targets, ``run.py``'s seed), times ``np.sort`` (median of 5 around the test) and one ``secrecy_test`` with
999 relabellings and 200 bootstrap replicates (wall and CPU time of the process: on a loaded machine the CPU
time says more), and prints its p-value and bootstrap interval (the bootstrap
draws are the same in both trees, so the interval shows whether results moved).

    git archive OLD_COMMIT src | tar -x -C /tmp/old     # the tree to compare with
    python benchmarks/verdict_ab.py /tmp/old/src src --pairs 3
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

CHILD = r"""
import sys, time, os
sys.path.insert(0, sys.argv[1])
import numpy as np
import vpeval
from vpeval.analysis import TrialInput, secrecy_test
n = int(sys.argv[2])
rng = np.random.default_rng(5)
lab = np.zeros(n, dtype=bool)
lab[: int(n * float(sys.argv[3]))] = True
sl = rng.normal(size=n) + lab
inp = [TrialInput("a", "scores", vpeval.Trials(sl, lab))]
secrecy_test(inp, n_perm=19, n_boot=2)  # imports and first-call costs outside the timing
tf = []
for _ in range(3):
    t0 = time.perf_counter(); np.sort(sl); tf.append(time.perf_counter() - t0)
l0 = os.getloadavg()[0]
t0, c0 = time.perf_counter(), time.process_time()
r = secrecy_test(inp, n_perm=999, n_boot=200)
t, cpu = time.perf_counter() - t0, time.process_time() - c0
for _ in range(2):
    t0 = time.perf_counter(); np.sort(sl); tf.append(time.perf_counter() - t0)
print(f"{sys.argv[1]}: secrecy_test {t:.2f} s (CPU {cpu:.2f} s), np.sort {np.median(tf):.4f} s, ratio {t / np.median(tf):.0f}, "
      f"load {l0:.1f} -> {os.getloadavg()[0]:.1f}; p = {r.p_value}, worst case {r.worst.value:.4f} bits, "
      f"interval ({r.worst.ci_low:.4f}, {r.worst.ci_high:.4f})", flush=True)
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", nargs=2, help="two folders holding the vpeval package (e.g. /tmp/old/src src)")
    ap.add_argument("--pairs", type=int, default=3, help="turns of each tree (default 3)")
    ap.add_argument("--trials", type=int, default=1_000_000)
    ap.add_argument("--share", type=float, default=0.1, help="share of target trials (default 0.1, run.py's row)")
    a = ap.parse_args()
    for _ in range(a.pairs):
        for tree in a.trees:
            subprocess.run([sys.executable, "-c", CHILD, os.path.abspath(tree), str(a.trials), str(a.share)],
                           check=True)


if __name__ == "__main__":
    main()
