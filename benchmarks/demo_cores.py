"""How many cores `vpeval demo` keeps busy, second by second, beside its progress timeline.

    python benchmarks/demo_cores.py OUT [--jobs N]

Runs ``benchmarks/demo_timeline.py OUT [--jobs N] -q`` in a child process (OUT must not exist) and samples the
machine-wide busy time from ``/proc/stat`` once a second meanwhile (Linux only). Prints the timeline, then one
``second:cores`` pair per sample (busy jiffies over all jiffies, times the number of CPUs) and the busy CPU
seconds of the whole run. The counters are machine-wide: run it on an otherwise idle machine and read the load
the timeline prints.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time


def _busy_total() -> tuple[int, int]:
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v) - v[3] - v[4], sum(v)  # all but idle and iowait; all


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    cmd = [sys.executable, os.path.join(here, "demo_timeline.py"), *sys.argv[1:], "-q"]
    ncpu = os.cpu_count() or 1
    samples: list[tuple[float, float]] = []
    stop = threading.Event()
    start = _busy_total()

    def sample() -> None:
        prev, t0 = _busy_total(), time.perf_counter()
        while not stop.wait(1.0):
            now = _busy_total()
            samples.append((time.perf_counter() - t0, (now[0] - prev[0]) / max(1, now[1] - prev[1]) * ncpu))
            prev = now

    th = threading.Thread(target=sample)
    th.start()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    stop.set()
    th.join()
    end = _busy_total()
    sys.stdout.write(proc.stderr)
    print(" ".join(f"{t:.0f}:{u:.1f}" for t, u in samples))
    hz = os.sysconf("SC_CLK_TCK")
    print(f"busy CPU over the run: {(end[0] - start[0]) / hz:.1f} s on {ncpu} CPUs")
    sys.exit(proc.returncode)


if __name__ == "__main__":
    main()
