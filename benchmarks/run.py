#!/usr/bin/env python
"""Every benchmark of vpeval in one run: each operation beside its floor, measured in the same process.

Method (the same for every row that has a floor):

- the *floor* is the cheapest operation any implementation must at least perform on the same input: one
  ``numpy.sort`` of all the scores for trial metrics, one ``numpy.exp`` pass over the matrix for 1-to-N
  metrics, one ``pyarrow.csv.read_csv`` of the same file for readers and for the CLI run end to end;
- floor and operation run interleaved (floor, operation, floor, operation, ...) ``--repeat`` times (at least
  5), and the row reports the two medians and their ratio, so a change of machine load hits both alike;
- the 1-minute load average is read before and after each row and printed beside it;
- *traced extra memory* is the ``tracemalloc`` peak of one extra run of the operation (allocations made during
  the call, inputs excluded; NumPy and pyarrow report theirs to tracemalloc), also given as a multiple of the
  input's size; a CLI run reports the peak memory of the command with all its processes (the largest sum of their
  proportional set sizes, sampled; at least the main process's own peak resident set, ``os.wait4`` in a small
  launcher process, see ``run_cli``).

    python benchmarks/run.py                                   # every section at full size
    python benchmarks/run.py --only verification,reading       # some sections
    python benchmarks/run.py --read-lines 1000000 --quick      # smaller inputs for a smoke run
    python benchmarks/run.py --markdown > table.md             # the tables of BENCHMARKS.md

Sections: reading (1e7-line ``score label`` and Kaldi key + scores files, readers in-process and ``vpeval
verify`` as processes), report (``vpeval report`` on the 1e7-line ``score label`` file, verdict included),
verification (the bundle and every public function alone at
1e6 + 1e6 trials), estimators, linkage (LID fused scan; ``lid_pipeline`` with 5-fold speaker-grouped
cross-fitting), protocols, stats, verdict (the family-wise perfect-secrecy test of one attacker with 999
relabellings, speaker-level and trial-level), backends, audio, demo. Temporary files go to ``--tmp`` (default: the system
temporary folder) and are deleted at the end.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from contextlib import contextmanager
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import vpeval  # noqa: E402
from vpeval.metrics.summary import verification_summary  # noqa: E402

ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}


@dataclasses.dataclass
class Row:
    section: str
    name: str
    t_op: float
    floor: str = ""
    t_floor: float | None = None
    target: float | None = None  # ratio target, if the issue set one
    peak_mib: float | None = None
    input_mib: float | None = None
    mem_target: float | None = None  # target of peak / input
    rss_mib: float | None = None
    load: tuple[float, float] = (float("nan"), float("nan"))
    note: str = ""

    @property
    def ratio(self) -> float | None:
        return self.t_op / self.t_floor if self.t_floor else None


ROWS: list[Row] = []
REPEAT = 5


def load1() -> float:
    return os.getloadavg()[0]


def interleaved(op, floor, repeat=None):
    """Medians (op, floor) in s of ``repeat`` (>= 5 unless told) interleaved runs: floor, op, floor, op, ..."""
    n = REPEAT if repeat is None else repeat
    t_op, t_floor = [], []
    for _ in range(n):
        t0 = time.perf_counter()
        floor()
        t_floor.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        op()
        t_op.append(time.perf_counter() - t0)
    return float(np.median(t_op)), float(np.median(t_floor))


def traced(fn) -> float:
    """tracemalloc peak (MiB) of one call of ``fn``: memory allocated during the call, inputs excluded."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def measure(section, name, op, floor=None, floor_name="", *, target=None, input_bytes=None, mem_target=None,
            memory=True, repeat=None, note=""):
    l0 = load1()
    if floor is None:
        ts = []
        for _ in range(REPEAT if repeat is None else repeat):
            t0 = time.perf_counter()
            op()
            ts.append(time.perf_counter() - t0)
        t, tf = float(np.median(ts)), None
    else:
        t, tf = interleaved(op, floor, repeat)
    peak = traced(op) if memory else None
    r = Row(section, name, t, floor_name, tf, target, peak, None if input_bytes is None else input_bytes / 2**20,
            mem_target, None, (l0, load1()), note)
    ROWS.append(r)
    show(r)
    return r


#: A small Python process that forks and runs ``vpeval ARGS`` and writes the child's peak resident set (``wait4``)
#: to the file ``argv[1]``. Linux counts the resident set of the process that ``exec``s into a program in the
#: program's peak (``ru_maxrss``), so a child started straight from this script, which holds a large file's floor
#: arrays, would report at least this script's own size (at 1e8 lines both `verify` runs read 5,475 MiB so); forked
#: from this small launcher it reports its own.
_LAUNCH = (
    "import os, sys\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    code = 'from vpeval.cli.main import main; main()'\n"
    "    os.execv(sys.executable, [sys.executable, '-c', code, *sys.argv[2:]])\n"
    "_, status, usage = os.wait4(pid, 0)\n"
    "open(sys.argv[1], 'w').write(str(usage.ru_maxrss))\n"
    "sys.exit(os.waitstatus_to_exitcode(status))\n"
)


def _tree_pss_kib(root: int) -> int | None:
    """Proportional set size (KiB) of process ``root`` and all its descendants now (``/proc/PID/smaps_rollup``:
    pages shared between them, e.g. a forkserver's imports, counted once), or None where Linux's ``/proc`` does
    not tell it."""
    todo, total, seen = [root], 0, False
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as fh:
                todo += [int(c) for c in fh.read().split()]
            with open(f"/proc/{pid}/smaps_rollup") as fh:
                for line in fh:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
                        seen = True
                        break
        except (OSError, ValueError):  # gone meanwhile, or no such file here
            continue
    return total if seen else None


def run_cli(args, period: float = 0.1) -> tuple[float, float]:
    """(wall time s, peak memory MiB) of one ``vpeval`` run in a child process (output discarded), started
    through :data:`_LAUNCH`. The peak memory is that of the command with every process it starts (its worker
    processes and their forkserver): the largest sum of their proportional set sizes, sampled every ``period``
    seconds, or the main process's own peak resident set (``wait4``) where that is larger (a spike between two
    samples) or where ``/proc`` cannot be read (not Linux). Until 2026-12-07 the second alone was reported, which
    leaves out the workers: `verify` of 1e8 lines read 3,649 MiB so, 8,352 MiB with them."""
    import tempfile
    import threading

    with tempfile.TemporaryDirectory() as d:
        rss_file = os.path.join(d, "maxrss")
        peak_pss = [0]
        t0 = time.perf_counter()
        p = subprocess.Popen([sys.executable, "-c", _LAUNCH, rss_file, *args], env=ENV, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        done = threading.Event()

        def sample():
            while not done.wait(period):
                kib = _tree_pss_kib(p.pid)
                if kib is not None:
                    peak_pss[0] = max(peak_pss[0], kib)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, err = p.communicate()
        dt = time.perf_counter() - t0
        done.set()
        sampler.join()
        if p.returncode != 0:
            tail = err.decode(errors="replace")[-2000:]
            raise RuntimeError(f"vpeval {' '.join(args)} failed ({p.returncode}): {tail}")
        with open(rss_file) as fh:
            maxrss = int(fh.read())
    rss = maxrss / 1024 if sys.platform != "darwin" else maxrss / 2**20
    return dt, max(rss, peak_pss[0] / 1024)


def measure_cli(section, name, args, floor, floor_name, *, target=None, rss_target_mib=None, repeat=None, note=""):
    """Interleave an in-process floor with ``vpeval ARGS`` run as a child process. The floor is warmed up once
    (a first pyarrow read of the 1e7-line file took 0.8-1.2 s, later ones 0.35-0.6 s) and then timed five times
    before every run of the command, so that even one run (``--cli-repeat 1``) is set against a median of five
    floors."""
    l0 = load1()
    n = REPEAT if repeat is None else repeat
    t_op, t_floor, rss = [], [], []
    floor()
    for _ in range(n):
        for _ in range(5):
            t0 = time.perf_counter()
            floor()
            t_floor.append(time.perf_counter() - t0)
        dt, peak = run_cli(args)
        t_op.append(dt)
        rss.append(peak)
    extra = f"RSS target <= {rss_target_mib} MiB" if rss_target_mib else ""
    r = Row(section, name, float(np.median(t_op)), floor_name, float(np.median(t_floor)), target, None, None,
            None, max(rss), (l0, load1()), "; ".join(x for x in (extra, note) if x))
    ROWS.append(r)
    show(r)
    return r


def show(r: Row) -> None:
    ratio = f"{r.ratio:.2f}x" if r.ratio is not None else ""
    tgt = f" (target <= {r.target:g}x)" if r.target else ""
    mem = f"  peak memory (all processes) {r.rss_mib:.0f} MiB" if r.rss_mib is not None else ""
    if r.peak_mib is not None:
        mem = f"  traced {r.peak_mib:.0f} MiB"
        if r.input_mib:
            mem += f" = {r.peak_mib / r.input_mib:.1f}x input" + (f" (target <= {r.mem_target:g}x)" if r.mem_target
                                                                   else "")
    fl = f" | {r.floor} {r.t_floor:.3f} s" if r.t_floor is not None else ""
    print(f"[{r.section}] {r.name}: {r.t_op:.3f} s{fl} {ratio}{tgt}{mem}  load {r.load[0]:.1f}->{r.load[1]:.1f}"
          + (f"  {r.note}" if r.note else ""), file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------- reading


def _write_score_label(path: Path, n: int, rng) -> None:
    with open(path, "w") as fh:
        for i in range(0, n, 1_000_000):
            m = min(1_000_000, n - i)
            s = rng.normal(size=m) + 0.0
            lab = rng.random(m) < 0.5
            s[lab] += 2.0
            fh.write("\n".join(f"{a:.6f} {int(b)}" for a, b in zip(s.tolist(), lab.tolist())) + "\n")


def _write_kaldi(key: Path, scores: Path, n: int, rng) -> None:
    n_enr = 1000
    with open(key, "w") as fk, open(scores, "w") as fs:
        for i in range(0, n, 1_000_000):
            m = min(1_000_000, n - i)
            idx = np.arange(i, i + m)
            enr = idx % n_enr
            tst = idx // n_enr
            lab = rng.random(m) < 0.1
            s = rng.normal(size=m) + 2.0 * lab
            e = [f"spk{e:04d}" for e in enr.tolist()]
            t = [f"utt{t:07d}" for t in tst.tolist()]
            fk.write("\n".join(f"{a} {b} {'target' if c else 'nontarget'}" for a, b, c in zip(e, t, lab.tolist()))
                     + "\n")
            order = rng.permutation(m)  # score lines in another order than the key
            fs.write("\n".join(f"{e[j]} {t[j]} {s[j]:.6f}" for j in order.tolist()) + "\n")


def _pyarrow_read(*paths):
    import pyarrow.csv as pcsv

    def read():
        for p in paths:
            pcsv.read_csv(p, read_options=pcsv.ReadOptions(autogenerate_column_names=True),
                          parse_options=pcsv.ParseOptions(delimiter=" "))
    return read


@contextmanager
def _score_label_file(n_lines: int, tmp: Path):
    """A scratch folder below ``tmp`` holding ``scores.txt``, ``n_lines`` `score label` lines drawn from seed 10,
    removed on exit: yields (folder, file, the count as "1e6", the generator to draw further files from)."""
    rng = np.random.default_rng(10)
    d = Path(tempfile.mkdtemp(prefix="vpeval-bench-", dir=tmp))
    try:
        sl = d / "scores.txt"
        _write_score_label(sl, n_lines, rng)
        yield d, sl, f"{n_lines:.0e}".replace("+0", "").replace("+", ""), rng
    finally:
        shutil.rmtree(d, ignore_errors=True)


def bench_reading(n_lines: int, tmp: Path, repeat_cli: int):
    from vpeval.io.readers import read_score_label, read_trials_scores

    with _score_label_file(n_lines, tmp) as (d, sl, n, rng):
        floor = _pyarrow_read(sl)
        mb = sl.stat().st_size / 2**20
        measure("reading", f"read_score_label, {n} lines ({mb:.0f} MB)", lambda: read_score_label(sl), floor,
                "pyarrow.csv.read_csv", memory=False)
        measure_cli("reading", f"`vpeval verify FILE --json`, {n}-line score label file (process, end to end)",
                    ["verify", str(sl), "--json"], floor, "pyarrow.csv.read_csv (in-process)", target=8,
                    rss_target_mib=1024, repeat=repeat_cli)
        sl.unlink()
        key, sc = d / "key", d / "scores"
        _write_kaldi(key, sc, n_lines, rng)
        floor = _pyarrow_read(key, sc)
        measure("reading", f"read_trials_scores (Kaldi key + scores, {n} trials, score lines shuffled)",
                lambda: read_trials_scores(key, sc), floor, "pyarrow.csv.read_csv of both files", target=20,
                memory=False)
        measure_cli("reading", f"`vpeval verify SCORES --key KEY --json`, {n} Kaldi trials (process)",
                    ["verify", str(sc), "--key", str(key), "--json"], floor,
                    "pyarrow.csv.read_csv of both files (in-process)", target=20, repeat=repeat_cli)


def bench_report(n_lines: int, tmp: Path, repeat_cli: int):
    """``vpeval report`` on a ``score label`` file, verdict included (issue 22: within 60x the pyarrow read)."""
    with _score_label_file(n_lines, tmp) as (d, sl, n, _):
        out = d / "report"
        measure_cli("report", f"`vpeval report FILE`, {n}-line score label file, verdict included (process, end "
                    "to end)", ["report", str(sl), "-o", str(out), "-q", "--force"], _pyarrow_read(sl),
                    "pyarrow.csv.read_csv (in-process)", target=60, repeat=repeat_cli,
                    note="bootstrap intervals, chance floors, plots and the verdict's test (199 relabellings "
                         "above 2e6 trials, 200 bootstrap replicates)")


# ---------------------------------------------------------------------------------------------- verification


def bench_verification(n: int):
    rng = np.random.default_rng(0)
    tar, non = rng.normal(1.0, 1.0, n), rng.normal(-1.0, 1.5, n)
    both = np.concatenate([tar, non])
    nb = both.nbytes
    sort = lambda: np.sort(both)  # noqa: E731
    size = f"{n:,} + {n:,}"
    measure("verification", f"`verification_summary(tar, non, return_llrs=True)`, {size}: EERs, DET, minDCF, "
            "minCllr, D_ECE, eps_max, linkability, PAV LLRs plain and Laplace",
            lambda: verification_summary(tar, non, return_llrs=True), sort, "np.sort", target=4, input_bytes=nb,
            mem_target=4)
    measure("verification", f"`verification_summary(tar, non)` (no LLRs), {size}",
            lambda: verification_summary(tar, non), sort, "np.sort", input_bytes=nb)
    measure("verification", f"`zebra` alone, {size}", lambda: vpeval.zebra(tar, non), sort, "np.sort", target=3,
            input_bytes=nb)
    llr_t, llr_n = vpeval.pav_llr(tar, non)
    fns = {
        "rocch_eer": lambda: vpeval.rocch_eer(tar, non),
        "eer(method='interp')": lambda: vpeval.eer(tar, non, method="interp"),
        "det_curve": lambda: vpeval.det_curve(tar, non),
        "min_dcf(p_target=0.01)": lambda: vpeval.min_dcf(tar, non, 0.01),
        "min_cllr": lambda: vpeval.min_cllr(tar, non),
        "d_ece": lambda: vpeval.d_ece(tar, non),
        "pav_llr": lambda: vpeval.pav_llr(tar, non),
        "pav_llr(laplace=True)": lambda: vpeval.pav_llr(tar, non, laplace=True),
        "linkability": lambda: vpeval.linkability(tar, non),
        "cllr (of PAV LLRs)": lambda: vpeval.cllr(llr_t, llr_n),
        "act_dcf (of PAV LLRs)": lambda: vpeval.act_dcf(llr_t, llr_n, 0.01),
    }
    for name, fn in fns.items():
        measure("verification", f"`{name}` alone, {size}", fn, sort, "np.sort", target=5, input_bytes=nb)
    try:
        from sklearn.metrics import roc_curve
    except ImportError:
        return
    labels = np.r_[np.ones(n), np.zeros(n)]

    def ref():
        fpr, tpr, _ = roc_curve(labels, both)
        fnr = 1 - tpr
        i = np.nanargmin(np.abs(fnr - fpr))
        return (fnr[i] + fpr[i]) / 2

    measure("verification", f"reference: sklearn `roc_curve` + closest-point EER, {size}", ref, sort, "np.sort",
            input_bytes=nb, note="computes far less than the bundle")


# ---------------------------------------------------------------------------------------------- linkage


def _matrix(n_probes, n_spk, seed=2):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n_probes, n_spk))
    ti = rng.integers(0, n_spk, n_probes)
    x[np.arange(n_probes), ti] += 2.0
    return x, ti


def bench_linkage(n_probes: int, n_spk: int, pipeline: bool, repeat_pipeline: int):
    from vpeval.metrics.identification import identification_rates
    from vpeval.metrics.linkage import lid, lid_pipeline

    x, ti = _matrix(n_probes, n_spk)
    out = np.empty_like(x)
    exp = lambda: np.exp(x, out=out)  # noqa: E731
    size = f"{n_probes:,} x {n_spk:,}"

    def fused():
        _, counts = lid(x, ti, return_rank_counts=True)
        identification_rates(counts)

    measure("linkage", f"LID + CMC + rank histogram, {size} (one fused scan)", fused, exp, "np.exp pass",
            target=2, input_bytes=x.nbytes)
    if not pipeline:
        return
    import vpeval.metrics.linkage.histogram as histogram
    from vpeval.metrics.moment_kernel import compiled_accumulate

    n_rep = max(1, repeat_pipeline)
    jit = compiled_accumulate() is not None
    lid_pipeline(None, x, None, ti, n_folds=5)  # numba's import and compilation (or cache load) happen once
    measure("linkage", f"`lid_pipeline` with 5-fold speaker-grouped cross-fitting, {size}",
            lambda: lid_pipeline(None, x, None, ti, n_folds=5), exp, "np.exp pass", target=20,
            input_bytes=x.nbytes, repeat=n_rep, memory=n_rep > 0,
            note=f"{n_rep} interleaved run(s); moment binning " + ("compiled (numba)" if jit else
                                                                    "NumPy (numba not installed)"))
    if jit:
        saved = histogram.JIT_MIN_SCORES
        histogram.JIT_MIN_SCORES = float("inf")  # the NumPy bincount path, as without numba
        try:
            measure("linkage", f"`lid_pipeline` as above, without numba (NumPy binning), {size}",
                    lambda: lid_pipeline(None, x, None, ti, n_folds=5), exp, "np.exp pass",
                    input_bytes=x.nbytes, repeat=n_rep, memory=n_rep > 0, note=f"{n_rep} interleaved run(s)")
        finally:
            histogram.JIT_MIN_SCORES = saved


# ---------------------------------------------------------------------------------------------- others


def bench_estimators(n: int):
    from vpeval.disclosure import worst_case_disclosure

    rng = np.random.default_rng(1)
    tar, non = rng.normal(0.0, 2.0, n), rng.normal(0.0, 1.0, n)
    both = np.concatenate([tar, non])
    for est in ("pav", "pav_laplace", "logistic", "gaussian", "student_t"):
        measure("estimators", f"worst-case disclosure `{est}`, {n:,} + {n:,}",
                lambda: worst_case_disclosure(tar, non, estimators=(est,)), lambda: np.sort(both), "np.sort",
                input_bytes=both.nbytes, repeat=max(1, REPEAT if est != "student_t" else 3))


def bench_protocols(n_spk: int):
    from vpeval.io.embeddings import EmbeddingSet

    rng = np.random.default_rng(3)
    u, s, c, e = [], [], [], []
    for k in range(n_spk):
        centre = rng.normal(size=64)
        for j in range(10):
            for cond in ("original", "anonymized"):
                u.append(f"s{k}-{j}"), s.append(f"s{k}"), c.append(cond), e.append(centre + rng.normal(size=64))
    es = EmbeddingSet(np.array(e), u, s, c, "synthetic")
    emb = np.array(e)
    measure("protocols", f"`build_trials` oo/oa/aa, {n_spk} speakers x 10 utterances",
            lambda: vpeval.build_trials(es, ["oo", "oa", "aa"]), lambda: emb @ emb[: 2 * n_spk].T,
            "one matmul of all rows", repeat=3)


def bench_stats():
    from vpeval.stats import EER_ROCCH, bootstrap

    rng = np.random.default_rng(4)
    n_spk, per = 50, 260
    spk = np.repeat([f"s{i}" for i in range(n_spk)], per)
    is_t = rng.random(spk.size) < 1 / 26
    scores = rng.normal(size=spk.size) + 2 * is_t
    t_trials = vpeval.Trials(scores, is_t)
    measure("stats", f"speaker bootstrap, 200 replicates, {spk.size:,} trials",
            lambda: bootstrap(t_trials, [EER_ROCCH], groups=spk, n_boot=200, seed=0), lambda: np.sort(scores),
            "np.sort", note="ratio / 200 = sorts per replicate")


def bench_verdict(n: int):
    """The verdict's family-wise test for one attacker: 999 relabellings and 200 bootstrap replicates."""
    from vpeval.analysis import TrialInput, secrecy_test

    rng = np.random.default_rng(5)
    # speaker relabelling: 200 evaluation speakers x 5 probes against 200 + distractor models (every pair scored)
    n_spk, per = 200, 5
    n_models = max(n_spk, n // (n_spk * per))
    models = np.array([f"m{i:05d}" for i in range(n_models)])
    ps = np.repeat(np.arange(n_spk), per)
    pid = np.array([f"p{i:05d}" for i in range(ps.size)])
    tgt = np.zeros((ps.size, n_models), dtype=bool)
    tgt[np.arange(ps.size), ps] = True
    sc = rng.normal(size=tgt.shape) + 1.5 * tgt
    t = vpeval.Trials(sc.reshape(-1), tgt.reshape(-1), np.tile(models, ps.size), np.repeat(pid, n_models))
    inp = [TrialInput("a", "oa", t, np.tile(models, ps.size), np.repeat(models[ps], n_models))]
    flat = sc.reshape(-1)
    measure("verdict", f"secrecy_test, speaker relabelling, {flat.size:,} trials ({n_spk} speakers), 999 + 200",
            lambda: secrecy_test(inp, n_perm=999, n_boot=200), lambda: np.sort(flat), "np.sort", target=200,
            repeat=5, memory=False)
    lab = np.zeros(n, dtype=bool)
    lab[: n // 10] = True
    sl = rng.normal(size=n) + lab
    inp2 = [TrialInput("a", "scores", vpeval.Trials(sl, lab))]
    measure("verdict", f"secrecy_test, trial relabelling (score label), {n:,} trials, 999 + 200",
            lambda: secrecy_test(inp2, n_perm=999, n_boot=200), lambda: np.sort(sl), "np.sort", target=200,
            repeat=5, memory=False)


def bench_backends(n_spk: int):
    from vpeval.backends import PLDABackend

    rng = np.random.default_rng(5)
    d, per = 256, 10
    centres = rng.normal(size=(n_spk, d))
    x = np.repeat(centres, per, axis=0) + 0.7 * rng.normal(size=(n_spk * per, d))
    spk = np.repeat([f"s{i:05d}" for i in range(n_spk)], per)
    measure("backends", f"PLDA training, {n_spk:,} speakers x {per} embeddings, d={d}, 10 EM iterations",
            lambda: PLDABackend().fit(x, spk), lambda: np.linalg.eigh(x.T @ x), "X'X + eigh")
    plda = PLDABackend().fit(x, spk)
    n = 1000 if n_spk >= 1000 else 100
    e, te = x[:n], x[-n:]
    measure("backends", f"PLDA scoring, {n:,} x {n:,} trials, d={d}", lambda: plda.score(e, te),
            lambda: e @ te.T, "one matmul")


def bench_audio():
    data = ROOT.parent / "shared" / "data" / "librispeech-mini" / "test-other"
    files = sorted(data.rglob("*.flac"))[:10]
    if not files:
        print("[audio] skipped: no audio under ../shared", file=sys.stderr)
        return
    from vpeval.audio.anonymize import mcadams
    from vpeval.audio.embed import MfccStatsExtractor
    from vpeval.audio.io import read_audio

    xs = [read_audio(f) for f in files]
    dur = sum(x.size for x in xs) / 16000
    mcadams(xs[0], 0.8)  # warm-up: imports and numba compilation inside librosa
    r = measure("audio", "McAdams anonymization, 10 utterances", lambda: [mcadams(x, 0.8) for x in xs],
                memory=False, repeat=3)
    r.note = f"{dur / r.t_op:.0f}x real time (target >= 20x)"
    ext = MfccStatsExtractor()
    ext.embed(xs[0], 16000)
    r = measure("audio", "MFCC-statistics embedding, 10 utterances", lambda: [ext.embed(x, 16000) for x in xs],
                memory=False, repeat=3)
    r.note = f"{dur / r.t_op:.0f}x real time"
    try:
        from vpeval.audio.embed import get_extractor

        res = get_extractor("resemblyzer")
        res.embed(xs[0], 16000)
    except Exception as exc:  # extractor not installed
        print(f"[audio] resemblyzer skipped: {type(exc).__name__}", file=sys.stderr)
        return
    r = measure("audio", "resemblyzer embedding, 10 utterances", lambda: [res.embed(x, 16000) for x in xs],
                memory=False, repeat=3)
    r.note = f"{dur / r.t_op:.0f}x real time (target >= 50x)"


def bench_demo():
    with tempfile.TemporaryDirectory() as d:
        measure("demo", "`vpeval demo` (whole audit of the bundled example)",
                lambda: run_cli(["demo", "-o", os.path.join(d, "r"), "-q", "--force"]), memory=False, repeat=1,
                note="budget 60 s")


# ---------------------------------------------------------------------------------------------- output


def _fmt_t(t):
    return "" if t is None else (f"{t:.3f} s" if t < 10 else f"{t:.1f} s")


def print_markdown(header: str) -> None:
    print(header)
    print()
    sections = []
    for r in ROWS:
        if r.section not in sections:
            sections.append(r.section)
    for sec in sections:
        print(f"### {sec}")
        print()
        print("| operation | time (median) | floor (median, same run) | x floor | target | traced extra memory "
              "| load 1 min (before -> after) | note |")
        print("|---|---|---|---|---|---|---|---|")
        for r in ROWS:
            if r.section != sec:
                continue
            ratio = f"{r.ratio:.2f}" if r.ratio is not None else ""
            ok = ""
            if r.target and r.ratio is not None:
                ok = f"<= {r.target:g}x: " + ("met" if r.ratio <= r.target else "**not met**")
            mem = ""
            if r.peak_mib is not None:
                mem = f"{r.peak_mib:.0f} MiB"
                if r.input_mib:
                    mem += f" ({r.peak_mib / r.input_mib:.1f}x input"
                    if r.mem_target:
                        mem += f"; <= {r.mem_target:g}x: " + ("met" if r.peak_mib / r.input_mib <= r.mem_target
                                                              else "**not met**")
                    mem += ")"
            elif r.rss_mib is not None:
                mem = f"peak RSS {r.rss_mib:.0f} MiB"
            fl = f"{r.floor} {_fmt_t(r.t_floor)}" if r.t_floor is not None else ""
            note = r.note.replace("|", "/")
            print(f"| {r.name} | {_fmt_t(r.t_op)} | {fl} | {ratio} | {ok} | {mem} | "
                  f"{r.load[0]:.1f} -> {r.load[1]:.1f} | {note} |")
        print()


def machine() -> str:
    try:
        import scipy

        sp = f", SciPy {scipy.__version__}"
    except ImportError:
        sp = ""
    try:
        import pyarrow

        pa = f", pyarrow {pyarrow.__version__}"
    except ImportError:
        pa = ""
    try:
        import numba

        pa += f", numba {numba.__version__}"
    except ImportError:
        pa += ", numba not installed"
    mem = ""
    try:
        mem = f", {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB"
    except (ValueError, OSError, AttributeError):
        pass
    return (f"{platform.machine()}, {os.cpu_count()} cores{mem}, Python {platform.python_version()}, "
            f"NumPy {np.__version__}{sp}{pa}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")


def main():
    global REPEAT
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated sections: reading,report,verification,linkage,"
                    "estimators,protocols,stats,verdict,backends,audio,demo (default: all)")
    ap.add_argument("--repeat", type=int, default=5, help="interleaved repeats per row (>= 5 for the record)")
    ap.add_argument("--quick", action="store_true", help="10x smaller inputs (smoke run; not for the record)")
    ap.add_argument("--trials", type=int, default=1_000_000, help="trials per class for verification rows")
    ap.add_argument("--read-lines", type=int, default=10_000_000, help="lines of the reading benchmark files")
    ap.add_argument("--probes", type=int, default=20_000, help="probes of the 1-to-N matrix")
    ap.add_argument("--speakers", type=int, default=5_000, help="enrolled speakers of the 1-to-N matrix")
    ap.add_argument("--cli-repeat", type=int, default=None, help="repeats of the CLI process rows "
                    "(default: --repeat)")
    ap.add_argument("--pipeline-repeat", type=int, default=1, help="interleaved runs of the lid_pipeline row")
    ap.add_argument("--no-report", action="store_true", help="skip the report section when running all")
    ap.add_argument("--no-pipeline", action="store_true", help="skip the lid_pipeline row")
    ap.add_argument("--tmp", default=tempfile.gettempdir(), help="folder for the temporary 1e7-line files")
    ap.add_argument("--markdown", action="store_true", help="print the tables as Markdown on stdout")
    a = ap.parse_args()
    REPEAT = max(1, a.repeat)
    k = 10 if a.quick else 1
    runs = {
        "reading": lambda: bench_reading(a.read_lines // k, Path(a.tmp),
                                         a.cli_repeat if a.cli_repeat is not None else REPEAT),
        "report": lambda: bench_report(a.read_lines // k, Path(a.tmp),
                                       a.cli_repeat if a.cli_repeat is not None else REPEAT),
        "verification": lambda: bench_verification(a.trials // k),
        "linkage": lambda: bench_linkage(a.probes // k, a.speakers, not a.no_pipeline, a.pipeline_repeat),
        "estimators": lambda: bench_estimators(a.trials // k),
        "protocols": lambda: bench_protocols(1000 // k),
        "stats": bench_stats,
        "verdict": lambda: bench_verdict(a.trials // k),
        "backends": lambda: bench_backends(1000 // k),
        "audio": bench_audio,
        "demo": bench_demo,
    }
    chosen = [x for x in a.only.split(",") if x] or [x for x in runs if not (x == "report" and a.no_report)]
    unknown = [x for x in chosen if x not in runs]
    if unknown:
        ap.error(f"unknown section(s) {unknown}; choose from {list(runs)}")
    head = f"Machine: {machine()}. Load average (1, 5, 15 min) at start: " + ", ".join(
        f"{v:.2f}" for v in os.getloadavg())
    print(head, file=sys.stderr)
    for name in chosen:
        runs[name]()
    head += "; at end: " + ", ".join(f"{v:.2f}" for v in os.getloadavg()) + f". Repeats: {REPEAT} interleaved."
    if a.markdown:
        print_markdown(head)
    else:
        print(head)
        for r in ROWS:
            ratio = f"{r.ratio:8.2f}x" if r.ratio is not None else " " * 9
            print(f"{r.section:12s} {r.t_op:9.3f} s {ratio}  {r.name}")


if __name__ == "__main__":
    main()
