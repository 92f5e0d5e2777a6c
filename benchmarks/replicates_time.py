"""Bootstrap intervals and chance floors of one trial list shaped like the demo's (``assess_trials``, 200 + 200
replicates), with the batched replicate evaluation (vpeval.stats.batch) and with the one-replicate-at-a-time
loop, interleaved in one process.

    python benchmarks/replicates_time.py [--repeat 7]

Trials: 10 probe speakers x 5 probe utterances, each scored against 111 models (one of them the probe's
speaker): 50 target and 5,500 non-target trials, the shape of the demo's oo / oa / aa lists. Printed: the median
wall and CPU (process) time of each path over ``--repeat`` runs, taken in turns, and the 1-minute load average
before and after (``/proc/loadavg``). Both paths give identical results (checked here too).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import vpeval.stats.trial_bootstrap as tb
from vpeval.io.trials import Trials
from vpeval.stats import assess_trials


def _load() -> float:
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def demo_like_trials(seed: int = 0):
    rng = np.random.default_rng(seed)
    n_spk, per, n_models = 10, 5, 111
    probe_spk = np.repeat(np.arange(n_spk), per)
    probe_id = np.array([f"p{i:03d}" for i in range(probe_spk.size)])
    models = np.arange(n_models)
    is_t = probe_spk[:, None] == models[None, :]
    scores = rng.normal(size=is_t.shape) + 1.2 * is_t
    t = Trials(scores.reshape(-1), is_t.reshape(-1), np.tile([f"m{m:03d}" for m in models], probe_spk.size),
               np.repeat(probe_id, n_models))
    return t, np.repeat([f"s{s}" for s in probe_spk], n_models)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args(argv)
    trials, groups = demo_like_trials()
    wall: dict[bool, list[float]] = {False: [], True: []}
    cpu: dict[bool, list[float]] = {False: [], True: []}
    results = {}
    before = _load()
    for _ in range(a.repeat):
        for one_at_a_time in (False, True):
            tb._ONE_AT_A_TIME = one_at_a_time
            w0, c0 = time.perf_counter(), time.process_time()
            res = assess_trials(trials, groups=groups, n_boot=200, n_perm=200, seed=0)
            wall[one_at_a_time].append(time.perf_counter() - w0)
            cpu[one_at_a_time].append(time.process_time() - c0)
            results[one_at_a_time] = [(x.boot.low, x.boot.high, x.chance.p_value, x.chance.floor) for x in res]
    tb._ONE_AT_A_TIME = False
    same = results[False] == results[True]
    for k, name in ((False, "batched"), (True, "one at a time")):
        print(f"{name}: median {statistics.median(wall[k]) * 1e3:.1f} ms wall, "
              f"{statistics.median(cpu[k]) * 1e3:.1f} ms CPU over {a.repeat} runs")
    print(f"ratio (one at a time / batched, wall medians): "
          f"{statistics.median(wall[True]) / statistics.median(wall[False]):.1f}; identical results: {same}; "
          f"load {before:.2f} -> {_load():.2f}")


if __name__ == "__main__":
    main()
