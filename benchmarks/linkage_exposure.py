#!/usr/bin/env python
"""The verdict of `vpeval linkage` on 1-to-N tables by simulation: false exposures, false words, one-speaker leaks.

Tables of ``--speakers`` speakers x ``--probes`` probes, every probe scored against every speaker's model
(:func:`vpeval.analysis.families.one_to_n_verdict`, as the command decides), in three conditions:

- ``null``: every score ``N(0, 1)`` (perfect secrecy);
- ``null-pair``: perfect secrecy with a speaker's voice shared by its probes, ``0.7 u[speaker, model] + 0.71 e``
  (``u``, ``e`` standard normal; the pair effect of real speech, no special target pair);
- ``leak-1``: ``null`` with one speaker (s07) leaking: its probes score uniform in ``[6.5, 9.8]`` on its own model
  and at most 2.9 elsewhere (issue 48, item 1).

Reported per condition: the share of tables whose verdict lists any speaker other than the leaking one as
exposed (on the null conditions: any speaker at all), the share read ``leaks``, ``leaks`` or ``partial``, and
(``leak-1``) the share listing the leaking speaker, each with a Clopper-Pearson 95 % interval. A valid rule lists
an innocent speaker, and reads a perfectly secret table ``leaks``, in at most ``alpha`` of the tables.

    python benchmarks/linkage_exposure.py --runs 200 --markdown
    python benchmarks/linkage_exposure.py --runs 20              # smoke run
"""

from __future__ import annotations

import os
import platform
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from simulation_common import clopper_pearson, design_parser  # noqa: E402

from vpeval.analysis.families import one_to_n_verdict  # noqa: E402
from vpeval.io.matrix import ScoreMatrix  # noqa: E402

LEAKING = 7


def table(rng, condition: str, S: int, P: int) -> ScoreMatrix:
    """One simulated 1-to-N table (module docstring)."""
    spk = np.array([f"s{s:02d}" for s in range(S)])
    if condition == "null-pair":
        u = rng.standard_normal((S, S))
        sc = 0.7 * np.repeat(u, P, axis=0) + 0.71 * rng.standard_normal((S * P, S))
    else:
        sc = rng.standard_normal((S * P, S))
    if condition == "leak-1":
        r = slice(LEAKING * P, LEAKING * P + P)
        sc[r] = np.minimum(sc[r], 2.9)
        sc[r, LEAKING] = rng.uniform(6.5, 9.8, P)
    pid = np.array([f"{s}_p{p}" for s in spk for p in range(P)])
    return ScoreMatrix(sc, pid, np.repeat(spk, P), spk)


def main() -> None:
    ap = design_parser(__doc__, speakers=40, probes=5, distractors=0, runs=200, n_perm=199, seed=48)
    ap.add_argument("--conditions", default="null,null-pair,leak-1")
    a = ap.parse_args()
    leak_name = f"s{LEAKING:02d}"
    print(f"# {a.runs} tables per condition, {a.speakers} speakers x {a.probes} probes, n_perm {a.n_perm}, "
          f"alpha {a.alpha}, seed {a.seed}; {platform.node()}, load {os.getloadavg()[0]:.1f}", flush=True)
    rows = []
    for ci, cond in enumerate(a.conditions.split(",")):
        t0 = time.time()
        innocent = leaks = rejected = listed = 0
        for r in range(a.runs):
            rng = np.random.default_rng([a.seed, ci, r])
            m = table(rng, cond, a.speakers, a.probes)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                v = one_to_n_verdict(m, "t", n_perm=a.n_perm, n_boot=20, seed=r, alpha=a.alpha)
            names = {e.speaker for e in v.test.exposed}
            innocent += bool(names - ({leak_name} if cond == "leak-1" else set()))
            listed += leak_name in names
            leaks += v.verdict == "leaks"
            rejected += v.verdict in ("leaks", "partial")
        n = a.runs
        rows.append((cond, innocent, leaks, rejected, listed, n, time.time() - t0))
    fmt = (lambda k, n: f"{100 * k / n:.1f} % ({k}/{n}; {100 * clopper_pearson(k, n)[0]:.1f}-"
           f"{100 * clopper_pearson(k, n)[1]:.1f} %)")
    if a.markdown:
        print("| condition | innocent speaker exposed | `leaks` | `leaks` or `partial` | leaking speaker listed |")
        print("|---|---|---|---|---|")
    for cond, innocent, leaks, rejected, listed, n, dt in rows:
        cells = [cond, fmt(innocent, n), fmt(leaks, n), fmt(rejected, n), fmt(listed, n) if cond == "leak-1" else "-"]
        print(("| " + " | ".join(cells) + " |") if a.markdown else "  ".join(cells) + f"  ({dt:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
