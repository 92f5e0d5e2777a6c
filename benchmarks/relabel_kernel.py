"""One relabelling of a large score label file, with and without the compiled loops of
:mod:`vpeval.analysis.pav_kernel` (numba), and the parts it is made of.

    python benchmarks/relabel_kernel.py [--lines 10000000] [--repeat 7]

Writes a ``score label`` file as ``benchmarks/run.py``'s report section does (seed 10, half targets, scores
with six decimals, so about 4.6 million tie blocks for 1e7 lines), reads it, sorts it into the permutation
engine's tie blocks, and times, interleaved (one of each per round, ``--repeat`` rounds, medians):

- ``_member_rows`` of one relabelling (the draw, eps_max plain and pooled, D_ECE), compiled and NumPy paths;
- the draw alone (``_trial_target_blocks``) and D_ECE alone (``_d_ece_rows``), both paths;
- the PAV blocks of one relabelling by the compiled kernel (``pav_target_blocks``: a coarse hull, then the stack
  over the points it leaves) and by the compiled stack over every unit (``pav_target_blocks_every_unit``, the
  kernel before 2026-12-03 noon), checked equal.

The process keeps freed blocks and takes 4 KiB pages, as the ``vpeval`` command and its workers do
(:mod:`vpeval.pipeline.allocator`). The two paths' values are checked equal (bit for bit) on every round. The
1-minute load average is printed before and after. Needs numba (``pip install -e '.[fast]'``); without it both columns are the NumPy path.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))
from timing import Timings  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()

    from run import _write_score_label  # the report benchmark's file

    from vpeval.pipeline.allocator import reuse_large_blocks, small_pages

    reuse_large_blocks()  # as in the vpeval command and its workers
    small_pages()

    import vpeval.analysis.relabel as RL
    from vpeval.analysis.nulls import _member_rows
    from vpeval.analysis.secrecy import TrialInput
    from vpeval.io.readers import read_score_label

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "scores.txt"
        _write_score_label(path, a.lines, np.random.default_rng(10))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the repeated-lines warning of rounded scores
            trials = read_score_label(path)
    p = RL._prep_trials(TrialInput("scores", "scores", trials, None, None))
    jit = (RL.compiled_kept_blocks(), RL.compiled_pav_target_blocks())
    from vpeval.analysis import pav_kernel as PK
    from vpeval.jit import compiled

    every_unit = compiled(PK.pav_target_blocks_every_unit, PK._SIGNATURE)
    print(f"{p.block.size:,} trials, {p.n_tar:,} targets, {p.cum.size - 1:,} tie blocks; numba: "
          f"{'yes' if None not in jit else 'no'}; load {os.getloadavg()[0]:.2f}")

    def numpy_path(on: bool):
        RL.compiled_kept_blocks = (lambda: jit[0]) if on else (lambda: None)
        RL.compiled_pav_target_blocks = (lambda: jit[1]) if on else (lambda: None)

    stats = ("eps_max", "d_ece")
    timed = Timings()
    times = timed.times

    for r in range(1, a.repeat + 1):
        got = {}
        for on, label in ((True, "compiled"), (False, "NumPy")):
            numpy_path(on)
            got[label] = timed(f"one relabelling, {label}",
                               lambda: _member_rows(p, "trial", None, 0, [(r, r + 1)], stats))
            tb = timed(f"  draw (target blocks), {label}", lambda: RL._trial_target_blocks(p, "trial", None, 0,
                                                                                          slice(r, r + 1)))
            timed(f"  D_ECE, {label}", lambda: RL._d_ece_rows(p, tb))
        if not all(np.array_equal(x, y) for x, y in zip(got["compiled"], got["NumPy"])):
            raise SystemExit(f"round {r}: the compiled and NumPy paths differ")
        if every_unit is not None:
            blocks = {}
            for label, kernel in (("hull filter", jit[1]), ("every unit", every_unit)):
                out = [np.empty(tb.size, dtype=np.int64) for _ in range(3)]
                m = timed(f"  PAV blocks, compiled, {label}", lambda: kernel(tb, p.cum, int(p.cum[-1]), *out))
                blocks[label] = [o[:m] for o in out]
            if not all(np.array_equal(x, y) for x, y in zip(*blocks.values())):
                raise SystemExit(f"round {r}: the two PAV kernels differ")
    numpy_path(True)
    for name, ts in times.items():
        print(f"{name}: {1000 * np.median(ts):.1f} ms (median of {len(ts)})")
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
