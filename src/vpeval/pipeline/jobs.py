"""Local worker processes for independent analyses (``--jobs``): the same results for any number of jobs.

An audit runs hundreds of independent analyses (bootstrap intervals and chance floors per attacker and trial
type, 1-to-N linkage, per-group rows). :class:`Jobs` runs them in worker processes of this machine while the
caller goes on, and hands each result back where the single-process code would have computed it:

- ``jobs=1`` (the library default) computes every call at once, in :meth:`Jobs.submit`, in this process.
- ``jobs=N`` runs the calls in ``N`` worker processes (``concurrent.futures.ProcessPoolExecutor``, started by
  the ``forkserver`` method where the platform has it, else ``spawn``: never a fork of a process that runs
  threads); ``jobs=-1`` uses every core this process may run on (``os.sched_getaffinity``).
- Each analysis is a deterministic function of its arguments (random draws are seeded by the caller's seed,
  never by worker or order), so the results are bit for bit those of ``jobs=1``; the tests compare them.
- Warnings raised by a call are recorded and raised again in this process when its result is taken (with any
  number of jobs), so the caller's warning filters and naming (:func:`vpeval.pipeline.audit.run_audits`)
  apply where the result is used; so is an exception of the call.
- Every call runs with one BLAS thread (``threadpoolctl``), whatever the number of jobs: a matrix
  product's last bit can depend on the thread count, and ``N`` workers must not start ``N`` times as many
  threads as there are cores.
- ``jobs`` above the usable cores is refused. A worker watches the process that started it and exits when that
  process is gone (killed, or out of memory), so no worker outlives a run. When worker processes cannot be
  started here (no usable temporary folder, a read-only ``/dev/shm``, a script read from stdin), the calls run
  in this process instead, with a :class:`~vpeval.errors.VpevalWarning` that says why.

A script that calls vpeval with ``jobs`` > 1 must guard its top level by ``if __name__ == "__main__":``: each
worker imports the script's ``__main__`` module (Python's rule for the ``forkserver`` and ``spawn`` methods);
without the guard the workers cannot start and :class:`WorkerError` says so. The ``vpeval`` command needs
nothing.

A Dask cluster (``--scheduler``/``--workers``, :mod:`vpeval.pipeline.cluster`) is the way to use more than one
machine. The two are not combined for the analyses: an audit on a cluster computes them in this process (its
figures are still drawn on ``--jobs`` workers).
"""

from __future__ import annotations

import os
import pickle
import warnings
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass

from ..errors import VpevalError

__all__ = ["Jobs", "SharedArray", "opened", "WorkerError", "HeldWarnings", "Started", "drive", "resolve_jobs",
           "usable_cores", "using", "warmed"]

#: Modules the forkserver imports once, so that every worker it forks starts with them loaded.
_PRELOAD = ["numpy", "scipy.special", "matplotlib", "vpeval.pipeline.audit"]


class WorkerError(VpevalError):
    """A worker process died or could not start; the message says the likely causes and the way out."""


def usable_cores() -> int:
    """The number of cores this process may run on (its CPU affinity where the platform tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def resolve_jobs(jobs) -> int:
    """``jobs`` as a number of processes: an integer from 1 to :func:`usable_cores`, or -1 for all of them.

    Raises
    ------
    VpevalError
        Anything else (0, -2, more than the usable cores, a float, a bool).
    """
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs == 0 or jobs < -1:
        raise VpevalError(f"jobs must be an integer >= 1, or -1 for every usable core, got {jobs!r}")
    cores = usable_cores()
    if jobs > cores:
        raise VpevalError(f"jobs {jobs} is more than the {cores} core(s) this process may use (more workers than "
                          "cores only cost memory); give at most that many, or -1")
    return cores if jobs == -1 else jobs


class _Result:
    """A result to take later (:meth:`get`): a value, or the exception of the call, and the warnings it raised."""

    __slots__ = ("_future", "_done")

    def __init__(self, future=None, done=None):
        self._future, self._done = future, done

    def get(self):
        """The call's value; raises its exception; raises its recorded warnings again first (each once)."""
        if self._done is None:
            from concurrent.futures.process import BrokenProcessPool

            try:
                self._done, self._future = self._future.result(), None
            except BrokenProcessPool as exc:
                raise WorkerError(
                    "a worker process of --jobs/jobs died or could not start (out of memory, a crash in a library, "
                    "or a script that calls vpeval with jobs > 1 without guarding its top level by "
                    "`if __name__ == \"__main__\":`, which Python's multiprocessing requires); run again with "
                    f"jobs=1 (--jobs 1) to compute in one process ({exc})") from None
        value, error, said = self._done
        for category, message in said:
            warnings.warn(message, category, stacklevel=2)
        if error is not None:
            raise error
        return value


_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")


def _worker_start(parent: int, pids=None, started=None) -> None:
    """Initializer of each worker: Ctrl-C ignored (the owner stops the pool), one BLAS thread for libraries loaded
    from here on, freed large blocks kept
    for reuse (:func:`~vpeval.pipeline.allocator.reuse_large_blocks`), 4 KiB pages where the user opted in
    (:func:`~vpeval.pipeline.allocator.small_pages`), the worker counted in ``started`` (``(shared int, n)``,
    read by :func:`_ready`), its pid put on ``pids``, and a watch on ``parent``."""
    import signal
    import threading

    from .allocator import reuse_large_blocks, small_pages

    global _STARTED

    # Ctrl-C reaches every process of the terminal's group: the pool's owner stops its workers (Jobs.close), so a
    # worker ignores it rather than print its own KeyboardInterrupt traceback (a tester saw them on the terminal)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    reuse_large_blocks()
    small_pages()
    if started is not None:  # one more worker of the pool is up
        _STARTED = started
        with started[0].get_lock():
            started[0].value += 1
    if pids is not None:  # so that the pool's owner can stop this worker in the middle of a call
        pids.put(os.getpid())
    for var in _THREAD_VARS:
        os.environ[var] = "1"
    threading.Thread(target=_watch, args=(parent,), daemon=True, name="vpeval-parent-watch").start()


def _watch(parent: int) -> None:
    """Exit this worker (at once, without cleanup: it holds nothing of the caller's) once ``parent`` is gone."""
    import time

    try:
        fd = os.pidfd_open(parent)  # Linux >= 5.3: readable when the process ends (no pid reuse)
    except (AttributeError, OSError):
        fd = None
    if fd is not None:
        import select

        select.select([fd], [], [])
        os._exit(1)
    while True:  # elsewhere: poll; a reused pid keeps the worker until the caller's pool stops it
        try:
            os.kill(parent, 0)
        except ProcessLookupError:
            os._exit(1)
        except PermissionError:
            pass
        time.sleep(1.0)


def _shared_folder() -> str:
    """A new private ``vpeval-jobs-*`` folder of the temporary folder, with its owner record, after removing what
    dead runs of this host left (:func:`vpeval.io.leftovers.remove_stale`; every ``vpeval`` command also does
    that at its start, workers or not). Raises OSError."""
    import shutil
    import tempfile

    from ..io import leftovers

    leftovers.remove_stale()
    folder = tempfile.mkdtemp(prefix="vpeval-jobs-")
    try:
        leftovers.write_owner(folder)
    except OSError:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder


@dataclass(frozen=True)
class SharedArray:
    """An array :meth:`Jobs.share` wrote to ``path`` (``.npy``); :func:`opened` reads it in a worker. ``dtype``:
    the array's own dtype (``numpy.dtype.str``) where the file holds it narrower, else None."""

    path: str
    dtype: str | None = None


def opened(x):
    """``x``, or the array of a :class:`SharedArray`, read into this process's memory.

    The file is mapped and copied in one pass: a copy in the process's own memory is read faster by the random
    accesses of the relabellings and the bootstrap than the mapped file (in one traced ``vpeval report`` of 1e7
    trials, when the copy was still in huge pages, the bootstrap took about 30 % longer on the mapped file; not
    kept as a benchmark), and it costs less than unpickling the array from a pipe."""
    if isinstance(x, SharedArray):
        import numpy as np

        # a narrower file is widened back in the same pass (every value exact: Jobs.share checked the range)
        return np.array(np.load(x.path, mmap_mode="r", allow_pickle=False), dtype=x.dtype, order="C")
    return x


#: From this many elements on, :meth:`Jobs.share` writes 8-byte integers as int32 where their values allow.
_NARROW_MIN = 1 << 16

#: In a worker: ``(count, n)``, the pool's shared count of started workers and its size (:func:`_worker_start`).
_STARTED = None


def _ready() -> None:
    """The call of :meth:`Jobs.warm_up`: it returns once every worker of the pool has started (at most 60 s).

    The pool starts a worker when a call finds none idle, so a worker that finished this call before the next
    one was submitted would take that one too, and fewer workers would start than were asked for (then
    :meth:`Jobs.close` on Ctrl-C waited 3 s for a pid that never came). Waiting here, no worker is idle until all
    are up. It waits for the workers to start, not for the other warm-up calls: one of those may be queued
    behind a call of the caller's, which a worker that is up computes meanwhile."""
    import time

    if _STARTED is None:
        return
    count, n = _STARTED
    deadline = time.monotonic() + 60.0
    while count.value < n and time.monotonic() < deadline:
        time.sleep(0.005)


def _call(fn: Callable, args: tuple, kwargs: dict, ship: bool = True):
    """``(value, None, warnings)`` or ``(None, exception, warnings)``, computed with one BLAS thread
    (:func:`vpeval.pipeline.scoring.one_blas_thread`); ``ship``: made picklable (run in a worker, for the
    caller's process)."""
    from .scoring import one_blas_thread

    with warnings.catch_warnings(record=True) as caught, one_blas_thread():
        warnings.simplefilter("always")
        try:
            value, error = fn(*args, **kwargs), None
        except Exception as exc:  # taken back to the caller, raised where it takes the result
            value, error = None, exc
    said: list = []
    for w in caught:
        k = (w.category, str(w.message))
        if k not in said:
            said.append(k)
    if not ship:
        return value, error, said
    if error is not None:
        error = _picklable(error)
    elif isinstance(value, BaseException):  # an analysis that returns its error (kept for the report)
        value = _picklable(value)
    return value, error, said


def _picklable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling, else a :class:`VpevalError` (or RuntimeError) with its message."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        cls = VpevalError if isinstance(exc, VpevalError) else RuntimeError
        return cls(f"{type(exc).__name__}: {exc}")


class Jobs:
    """Run independent calls now (one job) or in worker processes (several), taking the results in order.

    Parameters
    ----------
    jobs : int
        1: compute each call in :meth:`submit` itself, in this process (no pool); N >= 2: N worker processes;
        -1: :func:`usable_cores`. Either way a call's warnings and exception are raised when its result is
        taken (``.get()``, each time it is taken).

    Raises
    ------
    VpevalError
        A bad ``jobs`` (:func:`resolve_jobs`).

    Examples
    --------
    >>> import math
    >>> with Jobs(1) as jobs:
    ...     r = jobs.submit(math.sqrt, 16.0)
    >>> r.get()
    4.0
    """

    def __init__(self, jobs: int = 1):
        self.n = resolve_jobs(jobs)
        self._pool = None
        self._pids = None  # a queue on which each worker puts its pid when it starts
        self._shared_dir = None  # the folder of share()'s files, made on first use, removed by close()
        self._warming = None  # the thread of warm_up(), while it starts the workers
        self._warmed = False  # warm_up() started all n workers (each puts its pid on _pids once it is up)

    @property
    def parallel(self) -> bool:
        """Whether calls run in worker processes."""
        return self.n > 1

    def __enter__(self) -> "Jobs":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop the workers: calls not started are cancelled; the running ones are waited for, unless an
        exception (Ctrl-C, SIGTERM, an error) is on its way out: then the workers are terminated at once
        (SIGTERM), so that leaving does not wait for a long call. The results already taken stay valid."""
        try:
            if self._warming is not None:  # at most the start of the workers (about a second)
                self._warming.join()
                self._warming = None
            if self._pool is not None:
                import sys

                leaving = sys.exc_info()[0] is not None
                if leaving:
                    self._terminate_workers()
                self._pool.shutdown(wait=not leaving, cancel_futures=True)
                self._pool = None
        finally:  # also when a second Ctrl-C interrupts the shutdown
            if self._shared_dir is not None:
                import shutil

                shutil.rmtree(self._shared_dir, ignore_errors=True)
                self._shared_dir = None

    def share(self, arr):
        """``arr`` (a NumPy array) for calls to the workers, sent once instead of with every call.

        With several jobs the array is written once to a file of a private folder ``vpeval-jobs-*`` of the
        temporary folder (Python's ``tempfile.gettempdir()``: ``TMPDIR`` where it is writable, else ``/tmp``,
        ``/var/tmp``, ...; not ``/dev/shm``) and the call receives a :class:`SharedArray`, a path that pickles
        in bytes; the worker reads the file (:func:`opened`, from the page cache) instead of receiving the array
        pickled through a pipe with each call: on 1e7 trials a member's arrays are 127 MB, sent with each of its
        7 calls before. The folder is removed by :meth:`close` (also on Ctrl-C, SIGTERM and SIGHUP); one that a
        run killed outright left behind is removed by the next ``vpeval`` command of this host, whatever it does,
        or the next run that shares an array (an owner record names the process, its start time, the boot and the
        host: :mod:`vpeval.io.leftovers`). When the file cannot be
        written (a full disk), the partial file is removed and ``arr`` itself is returned: it is then pickled
        with each call as before, with the same results. ``arr`` must not change afterwards.

        An array of 8-byte integers whose values all fit in 32 bits is written as int32 and widened back by
        :func:`opened` (the same values and dtype): the file's pages are new memory of the page cache, which
        on this machine kind costs more than the copy itself. On a 1e7-line score file the report's five shared
        arrays took 1.9 s of its main process in int64; ``benchmarks/report_cpu.py`` measured the whole report
        at 24.9 s against 27.0 s (medians of 3, interleaved, 2026-12-03)."""
        import numpy as np

        arr = np.asarray(arr)
        if not self.parallel or arr.dtype.hasobject:
            return arr
        import tempfile

        path, dtype = None, None
        if arr.dtype.kind in "iu" and arr.dtype.itemsize == 8 and arr.size >= _NARROW_MIN:
            info = np.iinfo(np.int32)
            if info.min <= arr.min() and arr.max() <= info.max:
                dtype = arr.dtype.str
        try:
            if self._shared_dir is None:
                self._shared_dir = _shared_folder()
            fd, path = tempfile.mkstemp(suffix=".npy", dir=self._shared_dir)
            with os.fdopen(fd, "wb") as f:
                np.save(f, np.ascontiguousarray(arr, dtype=np.int32 if dtype else None), allow_pickle=False)
        except OSError:
            if path is not None:
                try:
                    os.unlink(path)
                except OSError:
                    pass
            return arr
        return SharedArray(path, dtype)

    def _terminate_workers(self) -> None:
        import signal
        import time

        # after a warm-up every worker was started: wait (at most 3 s) until each is up and has said its pid, so
        # that none is left starting after this process has gone (it would then fail to open the pool's
        # semaphores and print a traceback). All pids are taken before any worker is signalled: a worker puts its
        # pid holding the queue's lock, and one terminated between its write and the lock's release left the
        # next worker blocked on that lock for good (its pid never came; about 1 run in 10 of the warm-up test)
        expect, deadline, pids = (self.n if self._warmed else 0), time.monotonic() + 3.0, []
        while self._pids is not None:
            if self._pids.empty():
                if len(pids) >= expect or time.monotonic() > deadline:
                    break
                time.sleep(0.02)
                continue
            pids.append(self._pids.get())
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):  # already gone
                pass

    def warm_up(self) -> None:
        """Start the worker processes now, without waiting for them (nothing happens with one job): the start
        method's server imports :data:`_PRELOAD` (about 1.6 s here) while this process goes on reading its
        inputs, instead of when the first call is submitted.

        The workers are started by a thread of this process: starting one waits until the server has imported
        those modules and forked it, and the caller's thread goes on meanwhile (it used to wait there itself). A
        call submitted before they are up waits for them, as it would have without a warm-up; a failure to start
        them is met and reported by that call. Leaving (:meth:`close` on an exception) waits until the warmed
        workers are up, at most 3 s, and terminates them all. Each warm-up call holds its worker until all ``n``
        have started (:func:`_ready`), so that all of them start. Nothing happens when calls were submitted
        before: they started the workers already."""
        if not self.parallel or self._pool is not None:  # computing in this process, warmed, or already computing
            return
        self._pool = self._start()
        if self._pool is None:
            return
        import threading

        pool, n = self._pool, self.n

        def start():
            try:
                for _ in range(n):
                    pool.submit(_call, _ready, (), {})
            except Exception:  # noqa: BLE001 - the next submit() meets the same failure and raises it
                pass

        self._warming = threading.Thread(target=start, name="vpeval-warm-up", daemon=True)
        self._warming.start()
        self._warmed = True

    def submit(self, fn: Callable, *args, **kwargs) -> _Result:
        """Start ``fn(*args, **kwargs)``; ``.get()`` on the return value gives its result. With several jobs,
        ``fn`` must be a module-level function and its arguments picklable."""
        if self.parallel and self._pool is None:
            self._pool = self._start()
        if not self.parallel:
            return _Result(done=_call(fn, args, kwargs, ship=False))
        try:
            return _Result(future=self._pool.submit(_call, fn, args, kwargs))
        except OSError as exc:  # the first submit starts the processes (forkserver socket, semaphores)
            self._fall_back(exc)
            return _Result(done=_call(fn, args, kwargs, ship=False))

    def _fall_back(self, why) -> None:
        """Compute in this process from now on, saying why (results are the same)."""
        from ..errors import VpevalWarning

        if self._pool is not None:  # calls already sent still run on the workers that did start
            self._pool.shutdown(wait=False, cancel_futures=False)
        self._pool, self.n = None, 1
        warnings.warn(f"worker processes (--jobs/jobs) cannot be started here ({why}); computing in this process "
                      "instead (the same results, more slowly)", VpevalWarning, stacklevel=3)

    def _start(self):
        import multiprocessing
        import sys
        from concurrent.futures import ProcessPoolExecutor

        main = getattr(sys.modules.get("__main__"), "__file__", None)
        if main is not None and not os.path.isfile(main):  # e.g. a script read from stdin: workers cannot import it
            self._fall_back(f"the main script {main!r} is not a file the workers can import")
            return None
        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
        if ctx.get_start_method() == "forkserver":
            ctx.set_forkserver_preload(_PRELOAD)
        try:
            self._pids = ctx.SimpleQueue()
            return ProcessPoolExecutor(max_workers=self.n, mp_context=ctx, initializer=_worker_start,
                                       initargs=(os.getpid(), self._pids, (ctx.Value("i", 0), self.n)))
        except OSError as exc:  # e.g. no semaphores: a read-only or full /dev/shm
            self._fall_back(exc)
            return None


@contextmanager
def using(jobs):
    """``jobs`` itself when it is a running :class:`Jobs` (left running: its owner closes it), else a new
    ``Jobs(jobs)`` closed at the end of the ``with`` block."""
    if isinstance(jobs, Jobs):
        yield jobs
        return
    with Jobs(jobs) as pool:
        yield pool


def drive(steps):
    """Run a generator of steps (a computation that yields where its work is on the workers) to its end and
    return its value."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


class Started:
    """A computation written as steps (:func:`drive`), advanced here to its first ``yield``, where its work is
    on the workers; :meth:`get` runs the rest and returns the value. An exception raised before the ``yield`` is
    raised by :meth:`get`, as the one of a call submitted to :class:`Jobs` is."""

    def __init__(self, steps):
        self._steps, self._error, self._value, self._done = steps, None, None, False
        try:
            next(steps)
        except StopIteration as done:
            self._value, self._done = done.value, True
        except Exception as exc:  # noqa: BLE001 - raised again by get()
            self._error, self._done = exc, True

    def get(self):
        """The computation's value; raises its exception."""
        if not self._done:
            self._value, self._done = drive(self._steps), True
        if self._error is not None:
            raise self._error
        return self._value


class HeldWarnings:
    """Hold the warnings raised inside a ``with`` block until :meth:`release` raises them again, in order (so
    that work done while a worker computes can say its warnings after the worker's, as one process would).
    An exception leaving the block releases them at once."""

    def __enter__(self) -> "HeldWarnings":
        self._cm = warnings.catch_warnings(record=True)
        self._caught = self._cm.__enter__()
        warnings.simplefilter("always")
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self._cm.__exit__(exc_type, *exc)
        if exc_type is not None:
            self.release()

    def release(self) -> None:
        """Raise the held warnings again (each with its category, file and line), once."""
        caught, self._caught = self._caught, []
        for w in caught:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


@contextmanager
def warmed(jobs):
    """:func:`using` with the workers started at once (:meth:`Jobs.warm_up`): for a command that reads its inputs
    before it has work for them."""
    with using(jobs) as pool:
        pool.warm_up()
        yield pool
