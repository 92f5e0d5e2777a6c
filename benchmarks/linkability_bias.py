#!/usr/bin/env python
"""The small-sample bias of the histogram linkability D<->sys, by simulation (issue 48, item 3).

Uninformative scores (targets and non-targets both ``N(0, 1)``: the true linkability is 0) at the counts below,
with the default bins of :func:`vpeval.linkability`; per configuration the mean over ``--runs`` draws with a 95 %
normal interval of that mean, and the trials per bin of the sparser class, ``min(n_tar, n_non) / n_bins``, which
the rule :data:`vpeval.metrics.verification.LINKABILITY_MIN_PER_BIN` reads.

    python benchmarks/linkability_bias.py --runs 400
"""

from __future__ import annotations

import argparse
import os
import platform
import warnings

import numpy as np

from vpeval.errors import SmallSampleWarning
from vpeval.metrics.verification import default_linkability_bins, linkability

CONFIGS = [(1, 100), (2, 100), (5, 100), (10, 1000), (20, 1000), (50, 1000), (100, 1000), (100, 30000),
           (300, 1000), (1000, 1000), (1000, 30000), (2000, 2000), (2000, 20000), (2500, 2500), (2500, 25000),
           (3000, 3000), (3000, 30000), (10000, 10000)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=400)
    ap.add_argument("--seed", type=int, default=48)
    a = ap.parse_args()
    print(f"# {a.runs} draws per configuration, seed {a.seed}; {platform.node()}, load {os.getloadavg()[0]:.1f}")
    print("| target | non-target | bins | trials / bin | mean (95 % interval) |")
    print("|---|---|---|---|---|")
    for k, (nt, nn) in enumerate(CONFIGS):
        rng = np.random.default_rng([a.seed, k])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SmallSampleWarning)
            v = np.array([linkability(rng.standard_normal(nt), rng.standard_normal(nn)) for _ in range(a.runs)])
        b = default_linkability_bins(nt)
        h = 1.96 * v.std(ddof=1) / np.sqrt(a.runs)
        m = v.mean()
        print(f"| {nt:,} | {nn:,} | {b} | {min(nt, nn) / b:.3g} | {m:.3f} ({m - h:.3f}-{m + h:.3f}) |", flush=True)


if __name__ == "__main__":
    main()
