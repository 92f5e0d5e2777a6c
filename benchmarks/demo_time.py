"""Wall time and peak memory of `vpeval demo`, measured interleaved for two source trees (e.g. before/after).

    python benchmarks/demo_time.py --src new=src --src old=/tmp/demo-old/src --runs 3 [-- --no-verdict]
    python benchmarks/demo_time.py --src default=src --src small=src --env small:VPEVAL_SMALL_PAGES=1

Each run is a fresh process, ``/usr/bin/time -v python -m vpeval.cli.main demo -o TMP -q [extra]``, with
``PYTHONPATH`` set to the given tree; the trees take turns (new, old, new, old, ...). Printed per run: wall
seconds, CPU seconds (user + sys, all threads), peak RSS (MiB) and the 1-minute load average before and after
(``/proc/loadavg``), then the medians. The machine is shared, so compare only runs of the same invocation,
read with their load; the CPU time is the steadier of the two on a loaded machine. ``--env NAME:VAR=VALUE`` sets
an environment variable for the runs of one named tree (the same tree may be given under two names).

Before every run a fixed reference workload is timed, the best of three (:data:`REFERENCE`: two processes at
once, each sorting the same 4e6 random floats five times and running a 2e6-step Python loop, as the demo keeps two
cores busy with NumPy and Python): this virtual machine's speed moves by a quarter within a day, and the demo's
wall time divided by the reference's (printed as "x reference") shows whether a change of the demo's time is the
code's or the machine's.
``--no-reference`` skips it.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile


def _load() -> float:
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


#: The reference workload of one process (see the module docstring); two run at once.
REFERENCE = (
    "import numpy as np\n"
    "x = np.random.default_rng(0).normal(size=4_000_000)\n"
    "for _ in range(5):\n"
    "    np.sort(x)\n"
    "t = 0\n"
    "for i in range(2_000_000):\n"
    "    t += i % 7\n"
)


def reference_seconds(turns: int = 3) -> float:
    """Wall seconds of two :data:`REFERENCE` processes started together (the later one to end), the least of
    ``turns`` (one turn alone read 1.69-2.34 s within ten minutes on an idle machine)."""
    import time

    best = math.inf
    for _ in range(turns):
        t0 = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, "-c", REFERENCE]) for _ in range(2)]
        for q in procs:
            if q.wait() != 0:
                raise SystemExit("the reference workload failed")
        best = min(best, time.perf_counter() - t0)
    return best


def run_once(src: str, extra: list[str], env_extra: dict | None = None) -> tuple[float, float, float]:
    out = tempfile.mkdtemp(prefix="vpeval-demo-time-")
    shutil.rmtree(out)
    env = dict(os.environ, PYTHONPATH=os.path.abspath(src), **(env_extra or {}))
    cmd = ["/usr/bin/time", "-v", sys.executable, "-m", "vpeval.cli.main", "demo", "-o", out, "-q", *extra]
    try:
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    if r.returncode != 0:
        raise SystemExit(f"{src}: demo failed ({r.returncode}):\n{r.stderr[-2000:]}")
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", r.stderr)
    h, m, s = wall.groups()
    seconds = 3600 * int(h or 0) + 60 * int(m) + float(s)
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1)) / 1024
    cpu = sum(float(re.search(rf"{k} time \(seconds\): ([\d.]+)", r.stderr).group(1)) for k in ("User", "System"))
    return seconds, cpu, rss


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", action="append", required=True, help="NAME=PATH of a source tree (repeatable)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--env", action="append", default=[], help="NAME:VAR=VALUE, set for tree NAME's runs")
    ap.add_argument("--no-reference", action="store_true", help="skip the reference workload before each run")
    ap.add_argument("extra", nargs="*", help="extra demo options (after --)")
    a = ap.parse_args(argv)
    trees = [s.split("=", 1) for s in a.src]
    envs: dict[str, dict] = {}
    for item in a.env:
        name, _, assign = item.partition(":")
        var, _, value = assign.partition("=")
        envs.setdefault(name, {})[var] = value
    times: dict[str, list[float]] = {n: [] for n, _ in trees}
    cpus: dict[str, list[float]] = {n: [] for n, _ in trees}
    ratios: dict[str, list[float]] = {n: [] for n, _ in trees}
    for k in range(a.runs):
        for name, path in trees:
            ref = None if a.no_reference else reference_seconds()
            before = _load()
            sec, cpu, rss = run_once(path, a.extra, envs.get(name))
            times[name].append(sec)
            cpus[name].append(cpu)
            if ref is not None:
                ratios[name].append(sec / ref)
            speed = "" if ref is None else f", reference {ref:.2f} s ({sec / ref:.1f} x reference)"
            print(f"run {k + 1} {name}{' ' + str(envs[name]) if name in envs else ''}: {sec:.1f} s wall, {cpu:.1f} s "
                  f"CPU, peak RSS {rss:.0f} MiB, load {before:.2f} -> {_load():.2f}{speed}", flush=True)
    for name, ts in times.items():
        rel = "" if not ratios[name] else f", {statistics.median(ratios[name]):.1f} x reference"
        print(f"{name}: median {statistics.median(ts):.1f} s wall ({', '.join(f'{t:.1f}' for t in ts)}), "
              f"{statistics.median(cpus[name]):.1f} s CPU ({', '.join(f'{t:.1f}' for t in cpus[name])}){rel} "
              f"over {len(ts)} runs")


if __name__ == "__main__":
    main()
