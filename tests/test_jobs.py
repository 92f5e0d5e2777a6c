"""Local worker processes (vpeval.pipeline.jobs, --jobs): the same results, warnings and errors as one process."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import pytest

from vpeval.errors import VpevalError
from vpeval.pipeline.jobs import Jobs, resolve_jobs, usable_cores, using, warmed

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "librispeech-mini"


class _Odd(VpevalError):
    """An error whose constructor takes two arguments: it does not survive pickling as it is."""

    def __init__(self, path, problem):
        super().__init__(f"{path}: {problem}")


def _warn_and_return(x):
    warnings.warn(f"about {x}", UserWarning)
    return x * 2


def _sum_of_shared(x):
    from vpeval.pipeline.jobs import opened

    a = opened(x)
    return type(a).__name__, a.dtype.str, a.shape, int(a.sum()), a.flags.c_contiguous


def _raise_vpeval(msg):
    raise VpevalError(msg)


def _raise_odd():
    raise _Odd("a.txt", "bad line")


@pytest.mark.parametrize("value", [0, -2, 1.5, True, "2"])
def test_bad_jobs_are_refused(value):
    with pytest.raises(VpevalError, match="jobs must be"):
        resolve_jobs(value)


def test_minus_one_is_every_usable_core_and_more_are_refused():
    assert resolve_jobs(-1) == usable_cores() >= 1
    assert resolve_jobs(1) == 1
    with pytest.raises(VpevalError, match="more than the"):
        resolve_jobs(usable_cores() + 1)
    with pytest.raises(VpevalError, match="more than the"):
        resolve_jobs(10 ** 20)


needs_two = pytest.mark.skipif(usable_cores() < 2, reason="needs two usable cores")


@pytest.mark.parametrize("n", [1, pytest.param(2, marks=needs_two)])
def test_results_warnings_and_errors_come_back_where_taken(n):
    with Jobs(n) as jobs:
        assert jobs.parallel == (n > 1)
        ok = jobs.submit(_warn_and_return, 21)
        bad = jobs.submit(_raise_vpeval, "no speakers")
        odd = jobs.submit(_raise_odd)
        root = jobs.submit(math.sqrt, 16.0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert ok.get() == 42
            assert ok.get() == 42  # taken twice (a cached analysis): its warnings are raised each time
        assert [str(w.message) for w in caught] == ["about 21", "about 21"]
        with pytest.raises(VpevalError, match="no speakers"):
            bad.get()
        with pytest.raises(VpevalError, match="a.txt: bad line"):  # the message survives the trip
            odd.get()
        assert root.get() == 4.0


# THP_enabled of a fresh process and of one of its workers, under the environment given
_WORKER_PAGES = """
import pathlib
from vpeval.pipeline.jobs import Jobs

def thp(status):
    return [line.split()[1] for line in status.splitlines() if line.startswith("THP_enabled:")]

own = thp(pathlib.Path("/proc/self/status").read_text())
with Jobs(2) as jobs:
    seen = thp(jobs.submit(pathlib.Path.read_text, pathlib.Path("/proc/self/status")).get())
print(own, seen)
"""


@needs_two
@pytest.mark.parametrize("opt_in", [False, True])
def test_workers_take_small_pages_only_when_the_user_opted_in(opt_in):
    import os
    import subprocess
    import sys

    if not sys.platform.startswith("linux"):
        pytest.skip("Linux prctl")
    env = {k: v for k, v in os.environ.items() if k not in ("NUMPY_MADVISE_HUGEPAGE", "VPEVAL_SMALL_PAGES")}
    if opt_in:
        env["VPEVAL_SMALL_PAGES"] = "1"
    out = subprocess.run([sys.executable, "-c", _WORKER_PAGES], capture_output=True, text=True, check=True,
                         env=env).stdout
    own, seen = out.strip().split("] [")
    own, seen = own.strip("[]' "), seen.strip("[]' ")
    if not seen:
        pytest.skip("/proc has no THP_enabled line (Linux < 5.0)")
    # opted in: the workers have huge pages off; by default they are as their parent, which is left alone
    assert seen == ("0" if opt_in else own)


@pytest.mark.parametrize("n", [1, pytest.param(2, marks=needs_two)])
def test_warmed_pool_starts_its_workers_at_once_and_is_shared_by_using(n):
    import os

    with warmed(n) as pool:
        assert pool.parallel == (n > 1)
        with using(pool) as same:  # a running pool is used as it is, and left running
            assert same is pool
            pids = {same.submit(os.getpid).get() for _ in range(4)}
        assert pool.submit(math.sqrt, 9.0).get() == 3.0
        # one job: this process; several: the workers warm_up started (no new process per call)
        assert pids == {os.getpid()} if n == 1 else (os.getpid() not in pids and len(pids) <= n)


def _slow_pid():
    import os
    import time

    time.sleep(1.5)
    return os.getpid()


def test_warm_up_calls_wait_for_the_workers_to_start_not_for_each_other(monkeypatch):
    """_ready returns once the pool's count of started workers reaches n (so that every warm-up call starts a
    worker of its own), and a call of the caller's queued among the warm-up calls holds up no other worker."""
    import multiprocessing
    import os
    import threading
    import time

    from vpeval.pipeline import jobs as jobs_mod

    count = multiprocessing.get_context("spawn").Value("i", 1)
    monkeypatch.setattr(jobs_mod, "_STARTED", (count, 2))
    threading.Timer(0.3, lambda: setattr(count, "value", 2)).start()
    t0 = time.monotonic()
    jobs_mod._ready()
    assert time.monotonic() - t0 >= 0.25
    t0 = time.monotonic()
    jobs_mod._ready()  # all up: at once
    assert time.monotonic() - t0 < 0.1
    if usable_cores() < 2:
        return
    with Jobs(2) as pool:
        pool.warm_up()
        slow, quick = pool.submit(_slow_pid), pool.submit(os.getpid)
        quick_pid, t_quick = quick.get(), time.monotonic()
        slow_pid, t_slow = slow.get(), time.monotonic()
    assert quick_pid != slow_pid and t_quick < t_slow - 0.5


def _plot_line(fig, y):
    fig.add_subplot().plot([0.0, 1.0], [0.0, y])


@needs_two
def test_shared_arrays_reach_the_workers_once_and_their_folder_goes_with_the_pool(monkeypatch):
    """Jobs.share: one job gives the array itself; several write it once and the workers map it (a plain,
    C-contiguous array of the same values); close() removes the folder; a folder that cannot be written gives
    the array itself (pickled with each call, as without sharing)."""
    import os
    import pickle
    import tempfile

    import numpy as np

    from vpeval.pipeline.jobs import SharedArray, opened

    a = np.arange(3 * 7, dtype=np.int64).reshape(3, 7)
    with Jobs(1) as one:
        assert one.share(a) is not None and np.shares_memory(one.share(a), a)
    with Jobs(2) as pool:
        h = pool.share(a)
        assert isinstance(h, SharedArray) and len(pickle.dumps(h)) < 200
        folder = os.path.dirname(h.path)
        assert np.array_equal(opened(h), a) and opened(a) is a
        assert pool.submit(_sum_of_shared, h).get() == ("ndarray", a.dtype.str, (3, 7), int(a.sum()), True)
        assert pool.submit(_sum_of_shared, pool.share(a[:, ::2])).get()[2:4] == ((3, 4), int(a[:, ::2].sum()))
    assert not os.path.exists(folder)

    def refuse(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tempfile, "mkdtemp", refuse)
    with Jobs(2) as pool:
        assert pool.share(a) is a
        assert pool.submit(_sum_of_shared, pool.share(a)).get()[3] == int(a.sum())


def test_large_shared_integers_travel_as_int32_where_their_values_fit_and_come_back_as_they_were():
    import numpy as np

    from vpeval.pipeline.jobs import _NARROW_MIN, opened

    small = np.arange(_NARROW_MIN, dtype=np.int64) - _NARROW_MIN // 2
    cases = [
        (small * 65536, "<i4"),  # from -2**31 exactly to 2**31 - 2**16: still fits
        (np.r_[small, 2**31], "<i8"),  # one value too large: written as it is
        (np.r_[small, -2**31 - 1], "<i8"),
        (small[:-1], "<i8"),  # below _NARROW_MIN elements: as it is
        (np.abs(small).astype(np.uint64), "<i4"),
        (small.astype(np.float64), "<f8"),
    ]
    with Jobs(2) as pool:
        for a, written in cases:
            h = pool.share(a)
            assert np.load(h.path, mmap_mode="r").dtype.str == written
            back = opened(h)
            assert back.dtype == a.dtype and np.array_equal(back, a) and back.flags.c_contiguous
        got = pool.submit(_sum_of_shared, pool.share(small * 65536)).get()
        assert got == ("ndarray", "<i8", small.shape, int((small * 65536).sum()), True)


def test_a_shared_file_that_cannot_be_written_is_removed_and_the_array_sent(tmp_path, monkeypatch):
    """A full disk while the array is written: the partial file is removed (the folder keeps its owner file
    alone) and the array itself is returned, sent with each call."""
    import os
    import tempfile

    import numpy as np

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    real_save = np.save

    def save_half(f, arr, **kw):
        f.write(b"\x93NUMPY partial")
        raise OSError(28, "No space left on device")

    a = np.arange(10.0)
    with Jobs(2) as pool:
        monkeypatch.setattr(np, "save", save_half)
        assert pool.share(a) is a
        monkeypatch.setattr(np, "save", real_save)
        (folder,) = [d for d in os.listdir(tmp_path) if d.startswith("vpeval-jobs-")]
        assert os.listdir(tmp_path / folder) == ["vpeval-owner"]
        assert pool.submit(_sum_of_shared, pool.share(a)).get()[3] == 45
    assert os.listdir(tmp_path) == []


def test_shared_folders_of_dead_runs_are_removed_and_an_interrupted_close_removes_its_own(tmp_path, monkeypatch):
    """A run killed outright leaves its vpeval-jobs-* folder: the next run of this host that shares an array
    removes it when its owner file names a dead process of this host; a live owner's folder, another host's and
    one without an owner file stay. A close() interrupted by a second Ctrl-C still removes the run's folder."""
    import os
    import socket
    import subprocess
    import sys
    import tempfile

    import numpy as np

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    host = socket.gethostname()
    for name, owner in (("vpeval-jobs-dead", f"{dead} {host}"), ("vpeval-jobs-live", f"{os.getppid()} {host}"),
                        ("vpeval-jobs-other", f"{dead} not-{host}"), ("vpeval-jobs-unknown", None)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "x.npy").write_bytes(b"x")
        if owner is not None:
            (tmp_path / name / "vpeval-owner").write_text(owner + "\n")
    with pytest.raises(KeyboardInterrupt):
        with Jobs(2) as pool:
            assert pool.submit(_sum_of_shared, pool.share(np.arange(4))).get()[3] == 6  # the workers run
            assert not (tmp_path / "vpeval-jobs-dead").exists()

            def interrupted():
                raise KeyboardInterrupt

            monkeypatch.setattr(pool, "_terminate_workers", interrupted)
            raise KeyboardInterrupt
    pool._pool.shutdown(wait=True, cancel_futures=True)  # what the interrupted close() did not stop
    assert sorted(os.listdir(tmp_path)) == ["vpeval-jobs-live", "vpeval-jobs-other", "vpeval-jobs-unknown"]


def test_sighup_leaves_like_ctrl_c_unless_ignored(tmp_path):
    """The terminal closed (SIGHUP): the command leaves like Ctrl-C (exit 129, the cleanup of `finally` blocks
    runs: the output policy's, the pool's shared folder); under nohup (SIGHUP ignored) it goes on."""
    import signal
    import subprocess
    import sys
    import time

    code = ("import signal, sys, time\n"
            # each mode sets its own disposition: a test run under nohup passes SIGHUP ignored to its children
            "signal.signal(signal.SIGHUP, signal.SIG_IGN if sys.argv[1] == 'nohup' else signal.SIG_DFL)\n"
            "from vpeval.cli.common import exit_on_sigterm\nexit_on_sigterm()\n"
            "try:\n    print('ready', flush=True)\n    time.sleep(3)\n    print('slept', flush=True)\n"
            "finally:\n    open(sys.argv[2], 'w').write('cleaned')\n")
    for mode, rc in (("plain", 129), ("nohup", 0)):
        mark = tmp_path / mode
        p = subprocess.Popen([sys.executable, "-c", code, mode, str(mark)], stdout=subprocess.PIPE, text=True)
        assert p.stdout.readline() == "ready\n"
        time.sleep(0.2)
        p.send_signal(signal.SIGHUP)
        out, _ = p.communicate(timeout=30)
        assert p.returncode == rc and mark.read_text() == "cleaned", (mode, p.returncode, out)
        assert ("slept" in out) == (mode == "nohup")


def test_figure_drafts_redraw_a_figure_changed_after_its_section_was_added():
    from vpeval.report.document import Draw, Figure, Report, Section
    from vpeval.report.writer import FigureDrafts, png_bytes

    with Jobs(2) as pool:
        drafts = FigureDrafts(pool)
        rep = Report("t", drafts=drafts)
        f = Figure("a", Draw(_plot_line, 1.0), size=(2.0, 2.0))
        g = Figure("b", Draw(_plot_line, 2.0), size=(2.0, 2.0))
        rep.add(Section("s", "S", [f, g]))
        g.draw = Draw(_plot_line, 3.0)  # replaced after the drawing started: not taken
        assert drafts.take(g) is None
        assert drafts.take(f).get() == png_bytes(f.draw, f.size)
        assert drafts.take(f) is None  # taken once


def test_figure_drafts_drawn_here_give_the_files_of_rendering(tmp_path):
    """FigureDrafts() (no pool: `vpeval report` drawing while its workers take the verdict's tests) draws each
    figure when its section is added; render_report writes those bytes, equal to drawing at rendering."""
    from vpeval.report.document import Draw, Figure, Report, Section
    from vpeval.report.writer import FigureDrafts, render_report

    def report(drafts):
        rep = Report("t", drafts=drafts)
        rep.add(Section("s", "S", [Figure("a", Draw(_plot_line, 1.0), size=(2.0, 2.0)),
                                   Figure("b", Draw(_plot_line, 2.0), size=(2.0, 2.0))]))
        return rep

    drafts = FigureDrafts()
    rep = report(drafts)
    assert len(drafts._started) == 2  # drawn at once, before rendering
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    render_report(rep, tmp_path / "a", generated_at="x")
    render_report(report(None), tmp_path / "b", generated_at="x")
    assert not drafts._started  # every draft taken
    for f in ("s_a.png", "s_b.png", "report.json"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()


@needs_two
def test_a_call_that_is_not_picklable_is_refused_with_several_jobs():
    with Jobs(2) as jobs:
        with pytest.raises(Exception):
            jobs.submit(lambda: 1).get()


@needs_two
@pytest.mark.slow
def test_audit_and_report_do_not_depend_on_jobs(tmp_path):
    """An audit of two systems (one with a trained back-end) with 1 and 2 jobs: report.json equal but for its
    time stamp, every PNG byte for byte equal."""
    npz = EXAMPLE / "embeddings_mfcc.npz"
    if not npz.exists() or not (EXAMPLE / "train" / "embeddings_mfcc.npz").exists():
        pytest.skip("bundled example missing")
    import pandas as pd

    import vpeval
    from vpeval.report.audit import render_audit
    from vpeval.report.writer import render_report

    es = vpeval.read_embeddings(npz)
    tr = vpeval.read_embeddings(EXAMPLE / "train" / "embeddings_mfcc.npz")
    meta = pd.read_csv(EXAMPLE / "metadata.csv", dtype=str, keep_default_na=False)
    docs, folders = [], []
    for n in (1, 2):
        res = vpeval.audit({"A": {"mfcc": es}, "B": {"mfcc": es}}, train={"A": {"mfcc": tr}}, types=("oo", "oa", "aa"),
                           backends=("cosine", "lda"), fusion=False, metadata={"A": meta, "B": meta}, n_boot=20,
                           n_perm=19, verdict_perm=99, jobs=n)
        out = tmp_path / f"jobs{n}"
        out.mkdir()
        render_report(render_audit(res), out, generated_at="2026-01-01T00:00:00+00:00", jobs=n)
        docs.append(json.loads((out / "report.json").read_text()))
        folders.append(out)
    assert docs[0] == docs[1]
    pngs = sorted(p.name for p in folders[0].glob("*.png"))
    assert pngs and pngs == sorted(p.name for p in folders[1].glob("*.png"))
    for name in pngs:
        assert (folders[0] / name).read_bytes() == (folders[1] / name).read_bytes(), name
    # figures started on the workers while the report is laid out (FigureDrafts, as `vpeval audit` does): the same
    from vpeval.report.writer import FigureDrafts

    with Jobs(2) as pool:
        drafts = FigureDrafts(pool)
        rep = render_audit(res, drafts=drafts)
        assert drafts._started  # drawing had begun before rendering
        out = tmp_path / "drafts"
        out.mkdir()
        render_report(rep, out, generated_at="2026-01-01T00:00:00+00:00", jobs=pool)
    assert rep.drafts is None and not drafts._started  # every early drawing was taken
    assert json.loads((out / "report.json").read_text()) == docs[0]
    assert sorted(p.name for p in out.glob("*.png")) == pngs
    for name in pngs:
        assert (out / name).read_bytes() == (folders[0] / name).read_bytes(), name


@needs_two
def test_a_script_without_the_main_guard_gets_a_clear_error(tmp_path):
    """Workers import the script's __main__: without the guard they cannot start; the error says why."""
    import subprocess
    import sys

    script = tmp_path / "unguarded.py"
    script.write_text("import math\nfrom vpeval.pipeline.jobs import Jobs\n"
                      "with Jobs(2) as jobs:\n    print(jobs.submit(math.sqrt, 4.0).get())\n")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert "WorkerError" in r.stderr and "__name__" in r.stderr and "jobs=1" in r.stderr
    guarded = tmp_path / "guarded.py"
    guarded.write_text("import math\nfrom vpeval.pipeline.jobs import Jobs\nif __name__ == '__main__':\n"
                       "    with Jobs(2) as jobs:\n        print(jobs.submit(math.sqrt, 4.0).get())\n")
    r = subprocess.run([sys.executable, str(guarded)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "2.0", r.stderr


@needs_two
def test_score_report_does_not_depend_on_jobs(tmp_path):
    """`vpeval report` starts each input's verdict on a worker: the same report.json and PNGs as one process."""
    import numpy as np
    from typer.testing import CliRunner

    from vpeval.cli.main import app

    rng = np.random.default_rng(3)
    f = tmp_path / "scores.txt"
    f.write_text("".join(f"{s:.6f} {lab}\n" for s, lab in zip(np.r_[rng.normal(1, 1, 60), rng.normal(0, 1, 600)],
                                                            [1] * 60 + [0] * 600)))
    docs = []
    for n in ("1", "2"):
        r = CliRunner().invoke(app, ["report", f"a={f}", f"b={f}", "-o", str(tmp_path / n), "-q", "--jobs", n,
                                     "--n-perm", "99"])
        assert r.exit_code == 0, r.output
        d = json.loads((tmp_path / n / "report.json").read_text())
        d.pop("generated_at")
        docs.append(d)
    assert docs[0] == docs[1] and set(docs[0]["verdicts"]) == {"a", "b"}
    assert [s["id"] for s in docs[0]["sections"]][0] == "verdict"
    for png in sorted((tmp_path / "1").glob("*.png")):
        assert png.read_bytes() == (tmp_path / "2" / png.name).read_bytes(), png.name


@needs_two
def test_a_script_read_from_stdin_computes_in_one_process_and_says_so(tmp_path):
    """Workers cannot import a main script that is not a file: the calls run here, with a warning."""
    import subprocess
    import sys

    code = ("import math, warnings\nfrom vpeval.pipeline.jobs import Jobs\nif __name__ == '__main__':\n"
            "    with Jobs(2) as jobs:\n        print(jobs.submit(math.sqrt, 9.0).get(), jobs.parallel)\n")
    r = subprocess.run([sys.executable, "-"], input=code, capture_output=True, text=True, timeout=120,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["3.0", "False"]
    assert "cannot be started here" in r.stderr and "not a file" in r.stderr


@needs_two
def test_pool_that_cannot_start_falls_back_to_one_process(tmp_path, monkeypatch):
    """A temporary folder whose path is too long for the forkserver's socket: same result, in this process."""
    import subprocess
    import sys

    deep = tmp_path / ("d" * 100)
    deep.mkdir()
    script = tmp_path / "s.py"
    script.write_text("import math\nfrom vpeval.pipeline.jobs import Jobs\nif __name__ == '__main__':\n"
                      "    with Jobs(2) as jobs:\n        print(jobs.submit(math.sqrt, 9.0).get())\n")
    import os

    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "TMPDIR": str(deep)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "3.0"
    assert "cannot be started here" in r.stderr


@needs_two
def test_workers_leave_when_their_parent_is_killed(tmp_path):
    """SIGKILL of the process that started the pool: its workers notice and exit (they were left forever)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "s.py"
    script.write_text("import os, time\nfrom vpeval.pipeline.jobs import Jobs\nif __name__ == '__main__':\n"
                      "    with Jobs(2) as jobs:\n        pids = {jobs.submit(os.getpid).get() for _ in range(20)}\n"
                      "        r = jobs.submit(time.sleep, 60)\n        print(' '.join(map(str, pids)), flush=True)\n"
                      "        time.sleep(60)\n")
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    workers = [int(x) for x in p.stdout.readline().split()]
    assert workers
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    deadline = time.monotonic() + 20
    alive = workers
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = []
        for w in workers:
            try:
                os.kill(w, 0)
                with open(f"/proc/{w}/stat") as f:  # a zombie waiting for its parent counts as gone
                    if f.read().split(") ")[1].startswith("Z"):
                        continue
                alive.append(w)
            except (ProcessLookupError, FileNotFoundError):
                pass
    assert not alive, f"workers {alive} outlived their parent"


def test_sigterm_leaves_like_ctrl_c(tmp_path):
    """`kill PID` on a running command: exit 143, nothing half-written, no lock left (the output policy's cleanup
    runs), no worker left behind."""
    import os
    import signal
    import subprocess
    import sys
    import time

    example = EXAMPLE
    if not (example / "embeddings_mfcc.npz").exists():
        pytest.skip("bundled example missing")
    out = tmp_path / "out"
    p = subprocess.Popen([sys.executable, "-m", "vpeval.cli.main", "demo", "-o", str(out), "-q"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    time.sleep(12)  # into the audit, workers running
    assert p.poll() is None, p.communicate()
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 143, err
    assert not out.exists() and not [f for f in os.listdir(tmp_path) if f.startswith(".")], os.listdir(tmp_path)
    time.sleep(3)
    left = subprocess.run(["pgrep", "-s", str(p.pid)], capture_output=True, text=True).stdout.split()
    assert not left, f"processes of the run's session left: {left}"


@needs_two
def test_leaving_does_not_wait_for_a_running_call_and_a_second_sigterm_does_not_hang(tmp_path):
    """SIGTERM (twice, as a batch system may send it) while a worker is in a 60 s call: the process leaves at
    once with 143 and stops its workers (it used to wait for the call, and to hang for ever on the second)."""
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "s.py"
    script.write_text("import time\nfrom vpeval.cli.common import exit_on_sigterm\n"
                      "from vpeval.pipeline.jobs import Jobs\nif __name__ == '__main__':\n    exit_on_sigterm()\n"
                      "    with Jobs(2) as jobs:\n        jobs.submit(abs, 1).get()\n"
                      "        r = jobs.submit(time.sleep, 60)\n        print('ready', flush=True)\n"
                      "        r.get()\n")
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    assert p.stdout.readline().strip() == "ready"
    time.sleep(1.0)
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
    try:
        _, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        pytest.fail("the process hung after SIGTERM")
    assert p.returncode == 143, err
    assert time.monotonic() - t0 < 15, "leaving waited for the running call"
    time.sleep(2)
    left = subprocess.run(["pgrep", "-s", str(p.pid)], capture_output=True, text=True).stdout.split()
    assert not left, f"processes of the run's session left: {left}"


@needs_two
def test_leaving_right_after_a_warm_up_terminates_every_worker(monkeypatch):
    """An exception (Ctrl-C) right after warm_up(): close() waits until each warming worker is up and terminates
    all of them, so none is left starting after the process has gone (in `vpeval report` one such worker printed a
    FileNotFoundError traceback, unable to open the pool's semaphores)."""
    import os
    import signal
    import threading

    # the signals close() itself sends, in this thread (the manager threads of this and earlier pools signal their
    # workers too, concurrently)
    real_kill, real_terminate, sent, inside = os.kill, Jobs._terminate_workers, [], set()

    def kill(pid, sig):
        if threading.get_ident() in inside:
            sent.append(sig)
        real_kill(pid, sig)

    def terminate(self):
        inside.add(threading.get_ident())
        try:
            real_terminate(self)
        finally:
            inside.discard(threading.get_ident())

    monkeypatch.setattr(os, "kill", kill)
    monkeypatch.setattr(Jobs, "_terminate_workers", terminate)
    with pytest.raises(KeyboardInterrupt):
        with Jobs(2) as pool:
            pool.warm_up()
            raise KeyboardInterrupt
    assert sent == [signal.SIGTERM, signal.SIGTERM]
