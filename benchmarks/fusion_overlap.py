"""How many of the demo's fusion fits need the separation linear program, and what each check costs.

    python benchmarks/fusion_overlap.py OUT

Runs ``vpeval demo -o OUT -q -j 1 --no-verdict`` in this process with
:func:`vpeval.calibration.fusion.overlap_certified` and :func:`~vpeval.calibration.fusion.quasi_separation` timed
(``time.perf_counter`` around each call), and prints per fusion fit whether the fit's own weights proved overlap,
then the counts and the median time of each kind of check. One process, so the times are those of an unloaded
process on this machine; read them with the load printed beside them.
"""

from __future__ import annotations

import os
import statistics
import sys
import time


def main() -> None:
    import vpeval.calibration.fusion as fusion

    calls: dict[str, list[float]] = {"certified": [], "not certified": [], "linear program": []}

    def timed(fn, kind_of):
        def run(*args, **kwargs):
            t = time.perf_counter()
            value = fn(*args, **kwargs)
            calls[kind_of(value)].append(time.perf_counter() - t)
            return value
        return run

    fusion.overlap_certified = timed(fusion.overlap_certified,
                                     lambda ok: "certified" if ok else "not certified")
    fusion.quasi_separation = timed(fusion.quasi_separation, lambda d: "linear program")
    from vpeval.cli.main import main as vpeval_main

    sys.stderr.write(f"load before: {os.getloadavg()[0]:.2f}\n")
    sys.argv = ["vpeval", "demo", "-o", sys.argv[1], "-q", "-j", "1", "--no-verdict"]
    try:
        vpeval_main()
    except SystemExit:
        pass
    for kind, ts in calls.items():
        med = f"{1000 * statistics.median(ts):.1f} ms median" if ts else "-"
        print(f"{kind}: {len(ts)} calls, {med}")
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
