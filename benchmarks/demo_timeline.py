"""Where the wall time of one `vpeval demo` goes: its progress messages with the seconds since start.

    python benchmarks/demo_timeline.py OUT [--jobs N]

Runs the demo in this process (OUT must not exist) and prints, to stderr, each progress message the first time its
step starts (the text before the first colon, i.e. per system and step), with the seconds since this script started,
then the end. One run; read it with the machine's load (printed before and after).
"""

from __future__ import annotations

import os
import sys
import time

T0 = time.perf_counter()


def main() -> None:
    import rich.status

    from vpeval.cli.main import main as vpeval_main

    out, extra = sys.argv[1], sys.argv[2:]
    update = rich.status.Status.update
    last = [None]

    def timed(self, status=None, **kw):
        if status is not None:
            step = str(status).split(":")[0]
            if step != last[0]:
                sys.stderr.write(f"{time.perf_counter() - T0:7.1f} s  {status}\n")
                last[0] = step
        return update(self, status, **kw)

    rich.status.Status.update = timed
    sys.stderr.write(f"load before: {os.getloadavg()[0]:.2f}\n")
    sys.argv = ["vpeval", "demo", "-o", out, *extra]
    try:
        vpeval_main()
    except SystemExit:
        pass
    finally:
        sys.stderr.write(f"{time.perf_counter() - T0:7.1f} s  end; load after: {os.getloadavg()[0]:.2f}\n")


if __name__ == "__main__":
    main()
