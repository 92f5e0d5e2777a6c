#!/usr/bin/env python
"""The small measurements behind the notes of BENCHMARKS.md, each beside what it replaced, in one process.

    python benchmarks/micro.py

Rows (medians of ``--repeat`` interleaved runs, the 1-minute load average printed before and after):

- z-norm of one 2 MiB block (52 x 5,000 scores) into fresh arrays vs into a reused ``out`` array;
- checking 5e6 score strings: a regular expression over every value vs one ``bytes.translate`` of the bytes;
- a fresh Python process that imports pyarrow and makes one ``pa.array`` (which imports pandas) vs one that
  only reads a CSV (which does not);
- a fresh Python process that loads the compiled moment loop (numba import + cached compilation) vs one that
  only imports vpeval's linkage module;
- the PAV bins of a demo-shaped bootstrap batch (200 rows of 308 cumulative points, 0-3 targets and non-targets
  per block, targets rising along the row): the monotone chain with the rows in step vs one checked PAV fit
  (vpeval.stats.batch), and the chain compiled with numba (where installed) vs the checked PAV fit;
- the null LIDs of 1,000 random labellings of a demo-shaped 1-to-N matrix (153 probes x 111 models, z-normed
  scores, each probe's true model 2.5 above the rest): the slopes fitted at 64 knots (grid 33) and linearly
  interpolated (before) vs fitted at 16 knots (grid 8) and interpolated by the cubic Hermite spline through
  their derivatives (``vpeval.stats.one_to_n._null_lids``), with each one's largest ALID and LID_max error
  against the exact refit of every labelling; and the log-sum-exp of those LIDs at 1,000 slopes: ``a z`` shifted
  by ``a max z`` in a second pass (before) vs ``a (z - max z)`` in one (``_lids_at_slopes``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}


def interleaved(a, b, repeat):
    ta, tb = [], []
    for _ in range(repeat):
        for fn, ts in ((a, ta), (b, tb)):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
    return float(np.median(ta)), float(np.median(tb))


def row(name, a_name, b_name, a, b, repeat, unit=1e3, suffix="ms"):
    l0 = os.getloadavg()[0]
    ta, tb = interleaved(a, b, repeat)
    print(f"{name}: {a_name} {ta * unit:.3g} {suffix} | {b_name} {tb * unit:.3g} {suffix} | ratio {ta / tb:.1f} "
          f"| load {l0:.1f}->{os.getloadavg()[0]:.1f}")


def process(code):
    return lambda: subprocess.run([sys.executable, "-c", code], check=True, env=ENV)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    import pyarrow as pa

    from vpeval.io import _fast
    from vpeval.metrics.linkage.posterior import _znorm_block

    x = np.random.default_rng(0).normal(size=(52, 5000))
    out = np.empty_like(x)
    many = np.random.default_rng(1).normal(size=(20000, 5000))  # blocks of a large matrix, one after another
    k = [0]

    def fresh():
        s = (k[0] % 384) * 52
        k[0] += 1
        _znorm_block(many[s : s + 52], 0, "x")

    def reused():
        s = (k[0] % 384) * 52
        k[0] += 1
        _znorm_block(many[s : s + 52], 0, "x", out=out)

    row("z-norm of a 2 MiB block", "fresh arrays", "reused out", lambda: [fresh() for _ in range(50)],
        lambda: [reused() for _ in range(50)], a.repeat, unit=1e3 / 50)

    col = pa.chunked_array([pa.array([f"{v:.6f}" for v in np.random.default_rng(2).normal(size=5_000_000)])])
    regex = r"^[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?)$"
    import pyarrow.compute as pc

    row("checking 5e6 score strings", "regex per value", "bytes.translate",
        lambda: pc.all(pc.match_substring_regex(col, regex)).as_py(),
        lambda: all(not _fast.chunk_bytes(c).tobytes().translate(None, _fast._SCORE_BYTES) for c in col.chunks),
        a.repeat)

    row("fresh process", "pyarrow + pa.array (imports pandas)", "pyarrow only",
        process("import pyarrow as pa; pa.array([1.0])"), process("import pyarrow, pyarrow.compute"), a.repeat)
    row("fresh process", "load the compiled moment loop", "import vpeval.metrics.linkage",
        process("from vpeval.metrics.moment_kernel import compiled_accumulate as c; assert c() is not None"),
        process("import vpeval.metrics.linkage"), a.repeat)

    from vpeval.stats.batch import _vertices_chain, _vertices_numpy
    from vpeval.stats.hull_kernel import compiled_hull_vertices

    rng = np.random.default_rng(3)
    steps = rng.integers(0, 4, size=(2, 200, 308))
    steps[:, :, 0] = 0
    steps[0] = (steps[0] * np.linspace(0.0, 3.0, 308) ** 2).astype(np.int64)
    ct, cn = (np.cumsum(s, axis=1).astype(np.int64) for s in steps)
    w = ct + cn
    assert np.array_equal(_vertices_chain(ct, w), _vertices_numpy(ct, w))
    row("PAV bins of 200 x 308 points", "monotone chain, rows in step", "checked PAV fit",
        lambda: _vertices_chain(ct, w), lambda: _vertices_numpy(ct, w), a.repeat)
    jit = compiled_hull_vertices()
    if jit is not None:
        row("PAV bins of 200 x 308 points", "compiled chain (numba)", "checked PAV fit",
            lambda: jit(w, ct, np.zeros(w.shape, dtype=bool)), lambda: _vertices_numpy(ct, w), a.repeat)

    null_lids(a.repeat)


def null_lids(repeat):
    from vpeval.metrics.linkage import znorm_rows
    from vpeval.stats.one_to_n import _fit_null_slopes, _lids_at_slopes, _null_lids, order_statistic

    rng = np.random.default_rng(4)
    s = rng.normal(size=(153, 111))
    s[np.arange(153), rng.integers(111, size=153)] += 2.5
    z = znorm_rows(s)
    cols = rng.integers(111, size=(1000, 153))
    tz = z[np.arange(153)[None, :], cols].sum(axis=1)

    def linear33():  # the code before: the same knots at grid 33, np.interp (no labelling here is separable)
        knots = np.unique(np.r_[order_statistic(tz, np.linspace(0.0, 1.0, 33)), np.linspace(tz.min(), tz.max(), 33)])
        return _lids_at_slopes(z, cols, np.interp(tz, knots, _fit_null_slopes(z, knots, 153, np.zeros(knots.size))))

    exact = _null_lids(z, cols)
    for name, got in (("linear, grid 33", linear33()), ("Hermite, grid 8", _null_lids(z, cols, grid=8))):
        print(f"null LIDs, {name}: largest error ALID {np.abs(got.mean(1) - exact.mean(1)).max():.2g} bits, "
              f"LID_max {np.abs(got.max(1) - exact.max(1)).max():.2g} bits")
    row("null LIDs of 1,000 labellings, 153 x 111", "linear, grid 33", "Hermite, grid 8", linear33,
        lambda: _null_lids(z, cols, grid=8), repeat)

    slopes = rng.normal(size=1000) * 0.3 + 0.5

    def two_pass():  # the code before, in the same chunks
        rows, zmax, zmin = np.arange(153), z.max(axis=1), z.min(axis=1)
        out, work = np.empty((1000, 153)), np.empty((7,) + z.shape)
        for lo in range(0, 1000, 7):
            a = slopes[lo:lo + 7]
            x = work[:a.size]
            np.multiply(a[:, None, None], z[None, :, :], out=x)
            xt = x[np.arange(a.size)[:, None], rows[None, :], cols[lo:lo + 7]]
            mx = np.where(a[:, None] >= 0.0, a[:, None] * zmax[None, :], a[:, None] * zmin[None, :])
            np.subtract(x, mx[:, :, None], out=x)
            np.exp(x, out=x)
            out[lo:lo + 7] = np.minimum((np.log(111) + xt - mx - np.log(x.sum(axis=2))) / np.log(2.0), np.log2(111))
        return out

    assert np.abs(two_pass() - _lids_at_slopes(z, cols, slopes)).max() < 1e-12
    row("LIDs at 1,000 slopes, 153 x 111", "shift in a second pass", "one pass over a (z - max z)", two_pass,
        lambda: _lids_at_slopes(z, cols, slopes), repeat)


if __name__ == "__main__":
    main()
