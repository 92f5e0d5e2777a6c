#!/usr/bin/env python
"""The parts of ``vpeval report`` that the 2026-12-03 round made faster, each beside what it replaced, in one
process (the figures of BENCHMARKS.md, "less work per estimator, nothing sent or sorted twice").

    python benchmarks/report_parts.py [--n 5000000] [--repeat 7]

Rows (medians of ``--repeat`` interleaved runs; the 1-minute load average printed before and after), each with a
check that both sides give the same values (or, for the two fits, the same fit to the stated tolerance):

- the 16-bit uniforms of one relabelling of ``2 n`` positions: ``integers(0, 2**16, dtype=uint16)`` vs the four
  16-bit parts of full-range 64-bit draws (``vpeval.analysis.relabel._uniform_u16``; same law, other values);
- the sum of squared deviations of ``n`` sorted scores: default sort vs stable sort (the same sorted values);
- the Student-t log-density of ``n`` scores: ``scipy.stats.t.logpdf`` vs ``_t_logpdf`` (bit for bit);
- the cell of 50,000 positions among 75,000 cells of ``2 n`` positions: ``searchsorted`` vs a gather from a
  per-position table (the bootstrap's lookup; the same cells);
- the logistic fit of ``n`` + ``n`` scores: Newton from 0 vs from the fit of a sample (slope within 1e-12);
- the Student-t fit of ``n`` normal scores with six decimals (as a class of ``benchmarks/run.py``'s report file):
  L-BFGS-B run to its end vs stopped where its line searches stall (parameters within 1e-8 relative; evaluations
  counted).

Rows of the second round (2026-12-03, late morning):

- the scores of a ``score label`` file of ``2 n + 1`` lines that holds a ``0.000000``: read as text and cast (what
  a zero used to cost) vs the CSV reader's float parse (kept now that a zero without an exponent cannot be an
  underflow); bit for bit the same;
- the DET floor of the curve of ``n`` + ``n`` scores: the former concatenating formula vs ``det_floor``;
- that curve drawn on an Agg canvas: every operating point vs the points ``drawn_points`` keeps;
- both PAV estimators' worst-case disclosure of ``n`` + ``n`` scores: with the per-trial LLRs kept (evaluated in
  input order) vs ``keep_llrs=False`` (evaluated at the sorted scores); the same summaries.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def interleaved(a, b, repeat):
    ta, tb = [], []
    out = [None, None]
    for _ in range(repeat):
        for i, (fn, ts) in enumerate(((a, ta), (b, tb))):
            t0 = time.perf_counter()
            out[i] = fn()
            ts.append(time.perf_counter() - t0)
    return float(np.median(ta)), float(np.median(tb)), out


def row(name, before, after, same):
    print(f"| {name} | {1000 * before:.1f} ms | {1000 * after:.1f} ms | {before / after:.2f}x | {same} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=5_000_000)
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    n, rep = a.n, max(5, a.repeat)

    import vpeval.calibration.logistic as L
    import vpeval.calibration.student_t as S
    from scipy import stats
    from vpeval.analysis.relabel import _U16_FROM_U64_MIN, _uniform_u16

    print(f"load {os.getloadavg()[0]:.2f}; n = {n:,}; medians of {rep} interleaved runs\n")
    print("| part | before | after | before / after | check |")
    print("|---|---|---|---|---|")
    rng = np.random.default_rng(1)

    m = max(2 * n, _U16_FROM_U64_MIN)  # the size from which the 64-bit cut is used
    b, c, (u_old, u_new) = interleaved(lambda: rng.integers(0, 1 << 16, m, dtype=np.uint16),
                                       lambda: _uniform_u16(rng, m), rep)
    # the same law: the means of both are 32767.5 within 6 standard errors
    se = 18918.6 / np.sqrt(m)
    ok = abs(u_old.mean() - 32767.5) < 6 * se and abs(u_new.mean() - 32767.5) < 6 * se and u_new.dtype == np.uint16
    row(f"16-bit uniforms of one relabelling of {m:,} positions", b, c, "same law (means)" if ok else "FAILED")

    x = np.sort(np.round(rng.normal(size=n), 6))
    dev = (x - x.mean()) ** 2
    b, c, (s_old, s_new) = interleaved(lambda: np.sum(np.sort(dev)), lambda: np.sum(np.sort(dev, kind="stable")),
                                       rep)
    row(f"sum of sorted squared deviations of {n:,} sorted scores", b, c, "equal" if s_old == s_new else "FAILED")

    z = rng.standard_t(5, n) * 1.3 + 0.2
    b, c, (l_old, l_new) = interleaved(lambda: stats.t.logpdf(z, 5712.04, 0.01, 0.99),
                                       lambda: S._t_logpdf(z, 5712.04, 0.01, 0.99), rep)
    row(f"Student-t log-density of {n:,} scores", b, c, "equal" if np.array_equal(l_old, l_new) else "FAILED")

    bounds = np.unique(np.r_[0, rng.integers(1, m, 75_000), m]).astype(np.int64)
    cell_of = np.empty(m + 1, dtype=np.int32)
    cell_of[:m] = np.repeat(np.arange(bounds.size - 1, dtype=np.int32), np.diff(bounds))
    cell_of[m] = bounds.size - 1
    q = rng.integers(0, m + 1, 50_000)
    b, c, (c_old, c_new) = interleaved(lambda: np.searchsorted(bounds, q, side="right") - 1, lambda: cell_of[q],
                                       rep * 20)
    row(f"cells of 50,000 positions among {bounds.size - 1:,} cells", b, c,
        "equal" if np.array_equal(c_old, c_new) else "FAILED")

    tar, non = np.sort(rng.normal(1.5, 1.2, n)), np.sort(rng.normal(-0.5, 1.0, n))
    warm_from = L._WARM_START_TRIALS

    def cold():
        L._WARM_START_TRIALS = 10 ** 15
        try:
            return L.LogisticCalibrator().fit(tar, non)
        finally:
            L._WARM_START_TRIALS = warm_from

    b, c, (f_old, f_new) = interleaved(cold, lambda: L.LogisticCalibrator().fit(tar, non), max(5, rep // 2))
    ok = abs(f_new.slope_ - f_old.slope_) <= 1e-12 * abs(f_old.slope_)
    row(f"logistic fit of {n:,} + {n:,} scores", b, c, "slope within 1e-12" if ok else "FAILED")

    zs = np.sort(np.round(rng.normal(size=n), 6))  # as a class of the report benchmark's file (six decimals)
    calls = []
    nll = S._nll_t

    def counted(*args, **kw):
        calls.append(1)
        return nll(*args, **kw)

    stall = S._STALL_EVALUATIONS
    S._nll_t = counted
    counts = {}

    def fit(stop):
        S._STALL_EVALUATIONS = stall if stop else 10 ** 9
        calls.clear()
        try:
            return S._fit_t(zs, None, "x", "lbfgs")
        finally:
            counts[stop] = len(calls)
            S._STALL_EVALUATIONS = stall

    try:
        b, c, (t_old, t_new) = interleaved(lambda: fit(False), lambda: fit(True), 5)
    finally:
        S._nll_t = nll
    ok = np.allclose(t_new, t_old, rtol=1e-8)
    row(f"Student-t fit of {n:,} normal scores ({counts[False]} -> {counts[True]} evaluations)", b, c,
        "within 1e-8" if ok else "FAILED")
    second_round(n, rep, rng)
    print(f"\nload {os.getloadavg()[0]:.2f}")


def second_round(n, rep, rng) -> None:
    """The rows of the round of 2026-12-03, late morning (see the module docstring)."""
    import tempfile

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from vpeval.blocks import tie_blocks
    from vpeval.disclosure import worst_case_disclosure
    from vpeval.io import _fast
    from vpeval.plots.displays import DETDisplay, det_floor

    tar, non = np.round(rng.normal(1, 1, n), 6), np.round(rng.normal(0, 1, n), 6)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "scores.txt")
        with open(path, "w") as f:
            f.write("\n".join(f"{v:.6f} {lab}" for v, lab in zip(np.r_[tar, non].tolist(), [1] * n + [0] * n)))
            f.write("\n0.000000 1\n")  # a zero as written, as the report benchmark's file has a few

        def scores(float_cols):
            return _fast.scores_from_strings(_fast.read_table(path, 2, float_cols=float_cols)[0])

        b, c, (s_old, s_new) = interleaved(lambda: scores(()), lambda: scores((0,)), rep)
    row(f"scores of a {2 * n + 1:,}-line score label file holding a 0.000000: parsed as text and cast vs the CSV "
        "reader's float parse", b, c, "equal bit for bit" if np.array_equal(s_old.view(np.int64), s_new.view(np.int64))
        else "FAILED")

    d = DETDisplay.from_blocks(tie_blocks(tar, non), eer=0.3)

    def old_floor():
        r = np.concatenate([d.pfa, d.pmiss])
        r = np.minimum(r, 1 - r)
        pos = r[r > 0]
        m = float(pos.min()) if pos.size else 1e-3
        return next((f for f in (1e-3, 5e-4, 1e-4) if f <= m), 1e-4)

    b, c, (f_old, f_new) = interleaved(old_floor, lambda: det_floor(d.pfa, d.pmiss), rep)
    row(f"DET floor of {d.pmiss.size:,} operating points", b, c, "equal" if f_old == f_new else "FAILED")

    def draw(all_points):
        from scipy.special import ndtri

        fig = plt.figure(figsize=(6, 6))
        ax = fig.add_subplot(1, 1, 1)
        if all_points:  # the curve as it was drawn: every operating point
            ax.plot(ndtri(np.clip(d.pfa, f_new, 1 - f_new)), ndtri(np.clip(d.pmiss, f_new, 1 - f_new)))
        else:
            d.plot(ax, floor=f_new)
        fig.canvas.draw()
        out = np.asarray(fig.canvas.buffer_rgba()).copy()
        plt.close(fig)
        return out

    b, c, (img_old, img_new) = interleaved(lambda: draw(True), lambda: draw(False), rep)
    row(f"DET curve of {d.pmiss.size:,} operating points drawn (Agg)", b, c, "same image size" if
        img_old.shape == img_new.shape else "FAILED")

    est = ("pav", "pav_laplace")
    b, c, (w_old, w_new) = interleaved(lambda: worst_case_disclosure(tar, non, est),
                                       lambda: worst_case_disclosure(tar, non, est, keep_llrs=False), rep)
    same = all(w_old[e].to_dict() == w_new[e].to_dict() for e in est)
    row(f"worst-case disclosure, both PAV estimators, {n:,} + {n:,} scores: LLRs kept vs not", b, c,
        "same summaries" if same else "FAILED")


if __name__ == "__main__":
    main()
