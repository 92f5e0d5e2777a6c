#!/usr/bin/env python
"""Size and power of the perfect-secrecy test on cells (vpeval.analysis.cells) against the positional test, by
simulation on large score files.

Each run writes nothing: it draws a ``score label`` input of ``--lines`` i.i.d. trials (``--share`` targets, scores
``N(0, 1)`` plus ``--shift`` for the targets, rounded to ``--decimals``: tied scores as real files have) and tests
it twice on the same draw, with the same seed: on cells (the default above
:data:`vpeval.analysis.cells.CELLS_FROM_TRIALS` trials) and positionally (the cells switched off), with the
statistics eps_max and D_ECE, ``--n-perm`` relabellings, alpha 5 %. Printed per condition (``--shifts``; 0 is
perfect secrecy): each test's rejection rate with a Clopper-Pearson 95 % interval, how often the two decisions
differ, and the largest difference of the observed eps_max and D_ECE (bits) between the two (the cells' statistic
against the trials'). Trials are exchangeable here, so both tests are exact: their rates under perfect secrecy
must be at most alpha within the interval.

    python benchmarks/cells_size.py --runs 100 --lines 600000 --shifts 0,0.02
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import beta

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from vpeval.analysis import cells  # noqa: E402
from vpeval.analysis.members import TrialInput  # noqa: E402
from vpeval.analysis.secrecy import secrecy_test  # noqa: E402
from vpeval.io.trials import Trials  # noqa: E402


def _ci(k: int, n: int) -> str:
    lo = 0.0 if k == 0 else beta.ppf(0.025, k, n - k + 1)
    hi = 1.0 if k == n else beta.ppf(0.975, k + 1, n - k)
    return f"{100 * k / n:.1f} % ({100 * lo:.1f}-{100 * hi:.1f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--lines", type=int, default=600_000)
    ap.add_argument("--share", type=float, default=0.1)
    ap.add_argument("--decimals", type=int, default=4)
    ap.add_argument("--shifts", default="0,0.02")
    ap.add_argument("--n-perm", type=int, default=199)
    ap.add_argument("--seed", type=int, default=2026)
    a = ap.parse_args()
    if a.lines < cells.CELLS_FROM_TRIALS:
        ap.error(f"--lines below {cells.CELLS_FROM_TRIALS:,}: the test would not use cells")
    t0 = time.time()
    load0 = os.getloadavg()[0]
    print(f"{a.runs} runs per condition, {a.lines:,} lines, {100 * a.share:g} % targets, scores rounded to "
          f"{a.decimals} decimals, eps_max and D_ECE, n_perm {a.n_perm}, alpha 0.05, seed {a.seed}")
    print("\n| target shift | rejected on cells | rejected positionally | decisions differ | cells (typical) | "
          "largest |eps_max cells - trials| (bits) | largest |D_ECE cells - trials| (bits) |")
    print("|---|---|---|---|---|---|---|")
    for shift in (float(x) for x in a.shifts.split(",")):
        rej = {"cells": 0, "trials": 0}
        differ, d_eps, d_dece, n_cells = 0, 0.0, 0.0, []
        for r in range(a.runs):
            rng = np.random.default_rng([a.seed, r, int(shift * 1e6)])
            lab = rng.random(a.lines) < a.share
            s = np.round(rng.normal(size=a.lines) + shift * lab, a.decimals)
            fam = [TrialInput("asv", "scores", Trials(s, lab))]
            got = {}
            for how in ("cells", "trials"):
                old = cells.CELLS_FROM_TRIALS
                cells.CELLS_FROM_TRIALS = old if how == "cells" else cells.CELLS_BELOW_TRIALS
                try:
                    got[how] = secrecy_test(fam, n_perm=a.n_perm, n_boot=1, seed=r, statistics=("eps_max", "d_ece"))
                finally:
                    cells.CELLS_FROM_TRIALS = old
                rej[how] += got[how].rejected
            differ += got["cells"].rejected != got["trials"].rejected
            obs = {how: {m.statistic: m.value for m in t.members} for how, t in got.items()}
            d_eps = max(d_eps, abs(obs["cells"]["eps_max"] - obs["trials"]["eps_max"]))
            d_dece = max(d_dece, abs(obs["cells"]["d_ece"] - obs["trials"]["d_ece"]))
            n_cells.append(got["cells"].cells[0][2])  # (attacker, trial type, cells) of the one member
        print(f"| {shift:g} | {_ci(rej['cells'], a.runs)} | {_ci(rej['trials'], a.runs)} | {differ} of {a.runs} | "
              f"{int(np.median(n_cells)):,} | {d_eps:.2g} | {d_dece:.2g} |")
    print(f"\n{time.time() - t0:.0f} s on {platform.machine()} (python {platform.python_version()}), load "
          f"{load0:.1f} -> {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
