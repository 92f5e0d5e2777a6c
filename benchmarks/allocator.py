"""The verdict on a large score label file with and without vpeval's allocator setting (vpeval.pipeline.allocator).

    python benchmarks/allocator.py [--lines 10000000] [--tmp DIR]

Writes the `score label` file of ``benchmarks/run.py`` (seed 10, half targets), then runs
``vpeval.analysis.score_verdict`` on it in two fresh processes, one calling ``reuse_large_blocks()`` first and one
not (``MALLOC_*`` and ``GLIBC_TUNABLES`` removed from both environments), and prints for each: the verdict's wall
seconds, the process's user and system CPU seconds, minor page faults and peak RSS (``getrusage``), with the
1-minute load average before and after. One run each; read them with the load.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import resource, sys, time, warnings
from vpeval.pipeline.allocator import reuse_large_blocks
if sys.argv[2] == "tuned":
    assert reuse_large_blocks()
from vpeval.analysis.families import score_verdict
from vpeval.io.readers import read_score_label
warnings.simplefilter("ignore")
t = read_score_label(sys.argv[1])
t0 = time.perf_counter()
score_verdict(t)
wall = time.perf_counter() - t0
r = resource.getrusage(resource.RUSAGE_SELF)
print(f"{sys.argv[2]}: verdict {wall:.1f} s wall; process user {r.ru_utime:.1f} s, system {r.ru_stime:.1f} s, "
      f"{r.ru_minflt / 1e6:.2f} M minor faults, peak RSS {r.ru_maxrss / 1024:.0f} MiB")
"""


def _load() -> str:
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=10_000_000)
    ap.add_argument("--tmp", default=None)
    a = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import _score_label_file

    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    with _score_label_file(a.lines, Path(a.tmp or tempfile.gettempdir())) as (_, path, n, _rng):
        print(f"{n} lines", flush=True)
        for mode in ("plain", "tuned"):
            before = _load()
            out = subprocess.run([sys.executable, "-c", CHILD, str(path), mode], env=env, capture_output=True,
                                 text=True, check=True).stdout.strip()
            print(f"{out}; load {before} -> {_load()}", flush=True)


if __name__ == "__main__":
    main()
