#!/usr/bin/env python
"""Where the CPU of one ``vpeval report`` run goes: the main process and each call its workers compute.

    python benchmarks/report_cpu.py [--lines 10000000] [--jobs 2] [--repeat 3] [--src SRC ...]

Writes the ``score label`` file of ``benchmarks/run.py``'s report section (``--lines`` lines, seed 10), then runs
``vpeval report FILE -o OUT -q --jobs N`` once per ``--src`` (a tree's ``src`` folder; default: this checkout's),
interleaved (every tree once per round, ``--repeat`` rounds), and prints per tree the medians over the rounds of: the wall time, the main process's own CPU (``getrusage`` at its exit), and
the CPU of every worker call grouped by function (each worker's ``time.process_time`` before and after the call,
recorded by a wrapper of ``vpeval.pipeline.jobs._call`` that a ``sitecustomize`` module installs in every
process of the run; the first call of a worker includes its start-up). The 1-minute load average is printed
before and after. A measuring aid: it changes no result.
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

_SITECUSTOMIZE = '''
import os, time
if os.environ.get("VPEVAL_CALL_TRACE"):
    if not os.environ.get("VPEVAL_CALL_TRACE_MAIN"):  # the run's own process (its children inherit the mark)
        import atexit, resource
        os.environ["VPEVAL_CALL_TRACE_MAIN"] = str(os.getpid())
        def _main_cpu():
            r = resource.getrusage(resource.RUSAGE_SELF)
            with open(os.environ["VPEVAL_CALL_TRACE"], "a") as f:
                f.write(f"{os.getpid()} __main__ 0 {r.ru_utime + r.ru_stime}\\n")
        atexit.register(_main_cpu)
    import vpeval.pipeline.jobs as _jobs
    _call = _jobs._call
    def _traced(fn, args, kwargs, ship=True):
        before = time.process_time()
        try:
            return _call(fn, args, kwargs, ship)
        finally:
            with open(os.environ["VPEVAL_CALL_TRACE"], "a") as f:
                f.write(f"{os.getpid()} {getattr(fn, '__name__', fn)} {before} {time.process_time()}\\n")
    _jobs._call = _traced
'''


def _run(src, sl, d, jobs) -> dict:
    """One ``vpeval report`` with the tree ``src``: {"wall", "main", "calls", function name: CPU seconds}."""
    trace = d / "trace.txt"
    trace.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(d / "site"), src]), "VPEVAL_CALL_TRACE": str(trace)}
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "vpeval.cli.main", "report", str(sl), "-o", str(d / "out"), "-q",
                          "--force", "--jobs", str(jobs)], env=env, stderr=subprocess.DEVNULL)
    _, status, _ = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"vpeval report failed with {src}")
    by_fn: dict = collections.defaultdict(float)
    last: dict = {}
    lines = [line.split() for line in trace.read_text().splitlines()]
    main_pid, main_cpu = next((pid, float(after)) for pid, fn, _, after in lines if fn == "__main__")
    for pid, fn, before, after in lines:
        if fn == "__main__":
            continue
        # a worker's first call also carries its start-up (the CPU since the worker started)
        start = float(before) if pid in last or pid == main_pid else 0.0
        by_fn[fn] += float(after) - start
        last[pid] = float(after)
    calls = sum(by_fn.values())
    if jobs == 1:  # the calls ran in the main process: its CPU includes them
        main_cpu -= calls
    return {"wall": wall, "main": main_cpu, "calls": calls, **by_fn}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=10_000_000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--src", action="append", default=None, help="a tree's src folder (repeatable)")
    a = ap.parse_args()
    srcs = a.src or [str(ROOT / "src")]

    from run import _write_score_label

    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        (d / "site").mkdir()
        (d / "site" / "sitecustomize.py").write_text(_SITECUSTOMIZE)
        sl = d / "scores.txt"
        _write_score_label(sl, a.lines, np.random.default_rng(10))
        print(f"load {os.getloadavg()[0]:.2f}; {a.lines:,} lines; --jobs {a.jobs}")
        runs: dict = {src: [] for src in srcs}
        for _ in range(max(1, a.repeat)):
            for src in srcs:
                runs[src].append(_run(src, sl, d, a.jobs))
        for src, rs in runs.items():
            med = {k: float(np.median([r.get(k, 0.0) for r in rs])) for k in rs[0]}
            print(f"\n{src}: wall {med.pop('wall'):.1f} s; main process CPU {med.pop('main'):.1f} s; worker calls "
                  f"{med.pop('calls'):.1f} s (medians of {len(rs)})")
            for fn, cpu in sorted(med.items(), key=lambda kv: -kv[1]):
                print(f"  {fn}: {cpu:.1f} s")
        print(f"\nload {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
