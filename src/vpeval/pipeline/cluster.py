"""Execution on a Dask cluster: connecting, local clusters, per-utterance tasks in batches, progress.

vpeval's heavy steps (anonymization, embedding, 1-to-N scoring and linkage) run unchanged in one process
when no cluster is given. With a :class:`distributed.Client` they run on its workers:

- :func:`cluster` is the one way the CLI obtains a client: ``--scheduler ADDRESS`` connects to a running
  ``distributed`` scheduler (``tcp://host:8786``, started with ``dask scheduler`` / ``dask worker`` or by
  ``dask-jobqueue``), ``--workers N`` starts a :class:`distributed.LocalCluster` of N worker *processes*
  with one thread each on the loopback interface (and stops it at the end); neither gives ``None``, the
  single-process path.
- :func:`map_items` runs one function per item (an utterance) as tasks of a few items each, with a
  progress bar, and returns the results in item order. A failing item is reported with its file name; so is
  an item during which the worker process died (out of memory, a crash in a library), as a
  :class:`WorkerDiedError`; a lost scheduler (:class:`SchedulerLostError`) and a cluster without workers for
  :data:`NO_WORKER_TIMEOUT` seconds (:class:`NoWorkersError`) end the run with an error too, never a hang.
  All are :class:`ClusterError` (the CLI exits 2 with the message).

Model weights are never shipped from the client: what a task carries is the *configuration* of a model
(e.g. an extractor pickles to its constructor arguments), and the worker process builds the model on first
use and keeps it in a module-level cache keyed by that configuration (see
:class:`vpeval.audio.embed.resemblyzer.ResemblyzerExtractor`), so each worker loads it once.

Results do not depend on the cluster: every per-utterance computation is deterministic given the utterance
and the seed (random draws are keyed by seed and utterance or speaker id, never by worker or order), and
results are assembled on the client in the same order as the single-process path.

Requires the ``dask`` extra: ``pip install 'vpeval[dask]'`` (``dask[array]`` and ``distributed``).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import warnings

from ..errors import InputFileError, VpevalError

__all__ = ["ClusterError", "WorkerDiedError", "SchedulerLostError", "NoWorkersError", "ItemError", "cluster",
           "require_distributed", "map_items", "n_workers", "score_matrix", "check_options", "CONNECT_TIMEOUT",
           "NO_WORKER_TIMEOUT"]

#: Seconds to wait for a scheduler (``--scheduler``) before giving up: the whole start of the client (the TCP
#: connection, the Dask handshake and the first worker), not only the TCP connection.
CONNECT_TIMEOUT = 10.0

#: Seconds :func:`map_items` waits while the scheduler has no worker at all (the last one died or left)
#: before it gives up with :class:`NoWorkersError`.
NO_WORKER_TIMEOUT = 60.0

_POLL = 0.5  # seconds between checks of the cluster while waiting for results
_EVENT = "vpeval-item"  # topic of the worker events that say which item a task is processing

INSTALL_HINT = "running on a Dask cluster needs the dask extra: pip install 'vpeval[dask]'"

_ADDRESS = re.compile(r"^(tcp|tls|inproc|ucx|ws|wss)://[^\s/]+$")


class ClusterError(VpevalError):
    """The cluster options are wrong or the scheduler cannot be reached."""


class WorkerDiedError(ClusterError):
    """A worker process died while processing an item (the message names its file and gives a hint)."""


class SchedulerLostError(ClusterError):
    """The connection to the scheduler was lost during the run (the message says how far the run got)."""


class NoWorkersError(ClusterError):
    """The scheduler had no worker for :data:`NO_WORKER_TIMEOUT` seconds while items were waiting."""


class ItemError(RuntimeError):
    """An unexpected (non-input) error while processing one item on a worker; the message names the file."""


def require_distributed():
    """Import :mod:`distributed`, or raise ImportError saying which extra provides it."""
    try:
        import distributed
    except ImportError as exc:
        raise ImportError(f"{INSTALL_HINT} ({exc})") from None
    return distributed


@contextlib.contextmanager
def cluster(scheduler: str | None = None, workers: int | None = None, *, timeout: float | None = None):
    """A :class:`distributed.Client` for the duration of the ``with`` block, or ``None``.

    Parameters
    ----------
    scheduler : str, optional
        Address of a running scheduler, ``tcp://host:port`` (also ``tls://``, ``ucx://``, ``ws://``, ``wss://``).
    workers : int, optional
        Start a local cluster of this many worker processes (one thread each, loopback interface, no
        dashboard), closed when the block ends. Mutually exclusive with ``scheduler``.
    timeout : float, optional
        Seconds to wait for the scheduler (default :data:`CONNECT_TIMEOUT`).

    Yields
    ------
    distributed.Client or None
        ``None`` when neither option is given (the single-process path).

    Raises
    ------
    ClusterError
        Both options, ``workers < 1`` or above the cores of this machine, a malformed address, no scheduler
        answering within ``timeout`` (the whole start of the client is bounded: an address that accepts the
        connection but does not speak Dask, e.g. the dashboard's HTTP port, is refused too), or no worker
        connected to it within ``timeout``.
    ImportError
        ``distributed`` is not installed (the message gives the install command).
    """
    check_options(scheduler, workers)
    if scheduler is None and workers is None:
        yield None
        return
    distributed = require_distributed()
    timeout = CONNECT_TIMEOUT if timeout is None else float(timeout)
    if workers is not None:
        import dask

        # distributed starts workers with MALLOC_TRIM_THRESHOLD_=65536, which turns off glibc's adaptive mmap
        # threshold: every large NumPy temporary is then mmap'ed and unmapped again, and McAdams took twice the
        # CPU time of the same code in a plain process (measured, benchmarks/cluster.py). Our workers keep the
        # glibc default; the other variables (one OpenMP/BLAS thread) stay.
        # The nanny also writes its variables into this process's own environment before spawning (so an
        # earlier cluster in this process leaves MALLOC_TRIM_THRESHOLD_ behind): set aside and restored after.
        environ = {k: v for k, v in dask.config.get("distributed.nanny.pre-spawn-environ", {}).items()
                   if k != "MALLOC_TRIM_THRESHOLD_"}
        saved = dict(os.environ)
        os.environ.pop("MALLOC_TRIM_THRESHOLD_", None)
        try:
            with warnings.catch_warnings(), dask.config.set({"distributed.nanny.pre-spawn-environ": environ}):
                # the scheduler's HTTP endpoint moves to a free port when 8787 is taken (another cluster)
                warnings.filterwarnings("ignore", message="Port .* is already in use", category=UserWarning)
                local = distributed.LocalCluster(
                    n_workers=int(workers), processes=True, threads_per_worker=1, host="127.0.0.1",
                    dashboard_address=None, silence_logs=logging.CRITICAL,
                )
        finally:
            os.environ.clear()
            os.environ.update(saved)
        with local, distributed.Client(local) as client, _cluster_failures(distributed, client):
            yield client
        return
    _probe(scheduler, timeout)
    client = _bounded_client(distributed, scheduler, timeout)
    try:
        try:
            client.wait_for_workers(1, timeout=timeout)
        except (OSError, TimeoutError) as exc:
            raise ClusterError(
                f"--scheduler {scheduler}: no worker joined the scheduler within {timeout:g} s ({exc}); start "
                f"workers with `dask worker {scheduler}`"
            ) from None
        with _cluster_failures(distributed, client):
            yield client
    finally:
        client.close()


@contextlib.contextmanager
def _cluster_failures(distributed, client):
    """Failures of the cluster itself inside a ``cluster()`` block (e.g. in a dask-array computation of the
    1-to-N scans, which has no per-file items) as :class:`ClusterError`, never a traceback."""
    hint = _memory_hint(client)
    try:
        yield
    except distributed.KilledWorker as exc:
        raise WorkerDiedError(f"a Dask worker died during the computation ({exc.allowed_failures + 1} workers tried "
                              f"the same task and died); {hint.replace(' on this file', '')}") from None
    except distributed.CancelledError:
        raise SchedulerLostError("the Dask cluster cancelled the computation, most often because the connection to "
                                 "the scheduler was lost; check that the scheduler is running and re-run") from None


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def check_options(scheduler: str | None = None, workers: int | None = None) -> None:
    """Raise :class:`ClusterError` for both options at once, ``workers < 1`` or above the cores this process
    may use (each worker is a process with one thread: more only cost memory), or a malformed address."""
    if scheduler is not None and workers is not None:
        raise ClusterError("--scheduler and --workers are mutually exclusive: give one of them")
    if workers is not None and (int(workers) != workers or workers < 1):
        raise ClusterError(f"--workers must be a positive integer, got {workers!r}")
    if workers is not None and workers > _cores():
        raise ClusterError(f"--workers {workers}: this machine has {_cores()} cores for vpeval; each worker is a "
                           f"process with one thread, so more workers than cores only add memory: give at most "
                           f"--workers {_cores()}")
    if scheduler is not None and not _ADDRESS.match(str(scheduler)):
        raise ClusterError(f"--scheduler {scheduler!r}: expected a scheduler address such as tcp://host:8786")


def _probe(scheduler: str, timeout: float) -> None:
    """``tcp://`` only: a Dask scheduler sends its handshake as soon as it accepts a connection; an address
    that accepts but stays silent (an HTTP server such as the dashboard port) is not one."""
    import socket

    if not scheduler.startswith("tcp://"):
        return
    host, _, port = scheduler[len("tcp://"):].rpartition(":")
    try:
        port = int(port)
    except ValueError:  # no port (distributed's default applies): the bounded start below still covers it
        return
    try:
        sock = socket.create_connection((host.strip("[]"), port), timeout=timeout)
    except OSError as exc:
        raise ClusterError(
            f"--scheduler {scheduler}: no Dask scheduler answered within {timeout:g} s ({type(exc).__name__}: "
            f"{exc}); start one with `dask scheduler` and workers with `dask worker {scheduler}`"
        ) from None
    with sock:
        sock.settimeout(timeout)
        try:
            first = sock.recv(1)
        except OSError:
            first = None
    if not first:
        raise ClusterError(
            f"--scheduler {scheduler}: something listens there but it is not a Dask scheduler (no Dask handshake "
            f"within {timeout:g} s; the dashboard's HTTP port, 8787, is not the scheduler's, usually 8786)"
        )


def _bounded_client(distributed, scheduler: str, timeout: float):
    """``distributed.Client(scheduler)`` within ``timeout`` seconds for the whole start, or ClusterError.

    The client's own ``timeout`` bounds only the connection; the handshake after it can wait forever. The
    start runs in a daemon thread; a client that comes up after we gave up is closed at once.
    """
    import threading

    box: dict = {}
    lock = threading.Lock()

    def start():
        try:
            c = distributed.Client(scheduler, timeout=timeout)
        except BaseException as exc:  # noqa: BLE001  (handed to the caller)
            box["error"] = exc
            return
        with lock:
            if box.get("abandoned"):
                c.close()
            else:
                box["client"] = c

    t = threading.Thread(target=start, name="vpeval-connect", daemon=True)
    t.start()
    t.join(timeout + 1.0)
    with lock:
        if "client" in box:
            return box["client"]
        box["abandoned"] = True
    exc = box.get("error")
    why = f"{type(exc).__name__}: {exc}" if exc is not None else "the Dask handshake did not complete"
    raise ClusterError(
        f"--scheduler {scheduler}: no Dask scheduler answered within {timeout:g} s ({why}); start one with "
        f"`dask scheduler` and workers with `dask worker {scheduler}`"
    )


def n_workers(client) -> int:
    """Number of workers connected to ``client``'s scheduler (at least 1)."""
    return max(1, len(client.scheduler_info().get("workers", {})))


def _run_batch(func, batch):
    """Worker side: ``func`` on each ``(name, item)`` of a batch; stop at the first failure.

    Returns ``("ok", results)`` or ``("error", index_in_batch, name, message, is_input_error)``.
    """
    out = []
    for i, (name, item) in enumerate(batch):
        _mark(name)
        try:
            out.append(func(item))
        except VpevalError as exc:
            msg = exc.problem if isinstance(exc, InputFileError) and exc.path == str(name) else str(exc)
            return ("error", i, str(name), msg, True)
        except OSError as exc:  # the file system refused (a full disk, a removed output folder): re-raised as such
            return ("oserror", i, str(name), exc.errno, exc.strerror or str(exc), exc.filename)
        except Exception as exc:  # noqa: BLE001  (reported to the client with the file name)
            return ("error", i, str(name), f"{type(exc).__name__}: {exc}", False)
    return ("ok", out)


def _mark(name) -> None:
    """Tell the scheduler (an event kept there) which item this task starts, so that the client can name the
    file if the worker process dies during it."""
    try:
        from distributed import get_worker

        w = get_worker()
        w.log_event(_EVENT, (w.get_current_task(), str(name)))
    except Exception:  # noqa: BLE001  (outside a worker, or an old distributed: only the message is less precise)
        pass


def _default_batch(n_items: int, workers: int) -> int:
    # about four batches per worker (load balance, progress), never more than 32 items per task
    return max(1, min(32, math.ceil(n_items / (4 * workers))))


def map_items(client, func, items, *, names=None, batch_size: int | None = None, description: str = "",
              quiet: bool = False) -> list:
    """Apply ``func`` to every item on the cluster, a few items per task; results in item order.

    Parameters
    ----------
    client : distributed.Client
    func : callable
        ``func(item) -> result``, run on the workers; pickled with cloudpickle (top-level functions and
        :func:`functools.partial` objects of them keep the task small).
    items : sequence
    names : sequence of str, optional
        Name of each item for error messages (e.g. its file path); default ``str(item)``.
    batch_size : int, optional
        Items per task (default: about four tasks per worker, at most 32 items each).
    description : str
        Label of the progress bar (on stderr; none when ``quiet``).
    quiet : bool

    Returns
    -------
    list
        ``[func(item) for item in items]``, computed on the workers.

    Raises
    ------
    InputFileError
        ``func`` raised a :class:`~vpeval.errors.VpevalError` for an item: the error names the item's file.
        The remaining tasks are cancelled.
    OSError
        ``func`` raised an OSError (a full disk, a missing folder): re-raised with its errno and file name, so
        that an output claim (:mod:`vpeval.io.output`) reports it as an output error naming the output.
    WorkerDiedError
        A worker process died while running an item (Dask's retries included): the message names the file
        being processed (from an event the worker sends when it starts each item; all the files of the task
        when that event did not arrive) and the memory each worker had.
    SchedulerLostError
        The connection to the scheduler was lost (the tasks were cancelled).
    NoWorkersError
        No worker at all for :data:`NO_WORKER_TIMEOUT` seconds while items were waiting.
    ItemError
        Any other exception, with the item's name and the original message.

    Notes
    -----
    A finished task's result is released as soon as it is collected, so a later worker death never makes
    Dask recompute it (a recomputed ``anonymize`` task would write again).
    """
    from ..progress import track

    items = list(items)
    names = [str(it) for it in items] if names is None else [str(n) for n in names]
    if len(names) != len(items):
        raise VpevalError(f"names: expected {len(items)} names, got {len(names)}")
    if not items:
        return []
    hint = _memory_hint(client)  # now: once a worker has died, its memory limit is no longer listed
    bs = _default_batch(len(items), n_workers(client)) if batch_size is None else int(batch_size)
    if bs < 1:
        raise VpevalError(f"batch_size must be >= 1, got {batch_size!r}")
    pairs = list(zip(names, items))
    starts = list(range(0, len(items), bs))
    distributed = require_distributed()
    # ``func`` carries configuration only (no model weights), so sending it with each task is cheap
    futures = [client.submit(_run_batch, func, pairs[s : s + bs], pure=False) for s in starts]
    where = {f.key: s for f, s in zip(futures, starts)}
    results: list = [None] * len(items)
    state = {"done": 0}

    def done_items():
        pending = set(futures)
        no_worker_since = None
        try:
            while pending:
                try:
                    finished, _ = distributed.wait(list(pending), timeout=_POLL, return_when="FIRST_COMPLETED")
                except TimeoutError:
                    no_worker_since = _check_cluster(client, no_worker_since, len(items) - state["done"],
                                                     len(items))
                    continue
                except distributed.CancelledError:  # every pending task cancelled: the scheduler is gone
                    first = names[min(where[f.key] for f in pending)]
                    left = len(items) - state["done"]
                    more = f" and {left - 1} more" if left > 1 else ""
                    raise SchedulerLostError(
                        f"{first}: the connection to the Dask scheduler was lost while this file{more} waited "
                        f"({state['done']} of {len(items)} items were done); nothing was written; check that the "
                        "scheduler is running and re-run") from None
                no_worker_since = None
                for fut in sorted(finished, key=lambda f: where[f.key]):
                    pending.discard(fut)
                    s = where[fut.key]
                    res = _result(client, distributed, fut, names[s : s + bs], state["done"], len(items), hint)
                    fut.release()  # a finished task is never recomputed (and never writes again) after a worker dies
                    if res[0] == "error":
                        _, i, name, msg, is_input = res
                        if is_input:
                            raise InputFileError(name, None, msg)
                        raise ItemError(f"{name}: {msg}")
                    if res[0] == "oserror":
                        _, i, name, err, msg, filename = res
                        raise OSError(err, msg, filename)
                    for i, r in enumerate(res[1]):
                        results[s + i] = r
                        state["done"] += 1
                        yield None
        finally:
            client.cancel([f for f in futures if not f.done()])

    for _ in track(done_items(), total=len(items), description=description, quiet=quiet):
        pass
    return results


def _memory_hint(client) -> str:
    try:
        limits = [w.get("memory_limit") for w in client.scheduler_info()["workers"].values()]
        limits = [m for m in limits if m]
    except Exception:  # noqa: BLE001  (the hint is optional)
        limits = []
    each = f"each worker may use {min(limits) / 2**30:.1f} GiB; " if limits else ""
    return (f"most often the worker ran out of memory ({each}run fewer --workers, or start `dask worker` with "
            "a larger --memory-limit), or a library crashed on this file")


def _result(client, distributed, fut, batch_names, n_done: int, n_items: int, hint: str):
    """``fut.result()`` with the cluster's failures turned into ClusterError naming the item."""
    try:
        return fut.result()
    except distributed.KilledWorker as exc:
        name = _item_of(client, fut.key) or (batch_names[0] if len(batch_names) == 1 else None)
        what = (f"{name}: a Dask worker died while processing this file" if name is not None else
                f"{batch_names[0]}: a Dask worker died while processing one of the {len(batch_names)} files "
                f"{', '.join(batch_names)}")
        raise WorkerDiedError(f"{what} ({exc.allowed_failures + 1} workers tried and died; {n_done} of {n_items} "
                              f"items were done); {hint}") from None
    except distributed.CancelledError:
        raise SchedulerLostError(
            f"{batch_names[0]}: the Dask cluster cancelled this file's task, most often because the connection to "
            f"the scheduler was lost ({n_done} of {n_items} items were done); nothing was written; check that the "
            "scheduler is running and re-run") from None
    except (OSError, TimeoutError) as exc:  # a connection error while fetching the result
        raise SchedulerLostError(
            f"{batch_names[0]}: the connection to the Dask cluster failed while fetching this file's result "
            f"({type(exc).__name__}: {exc}; {n_done} of {n_items} items were done)") from None
    except ImportError as exc:
        raise ClusterError(f"{batch_names[0]}: a Dask worker could not run this file's task ({exc}); every worker "
                           "needs vpeval and its extras installed, the same version as here") from None


def _item_of(client, key) -> str | None:
    """The item the last worker was processing in task ``key`` (from the workers' events), or None."""
    try:
        events = client.get_events(_EVENT)
    except Exception:  # noqa: BLE001
        return None
    last = None
    for _, msg in events:
        if isinstance(msg, (tuple, list)) and len(msg) == 2 and msg[0] == key:
            last = msg[1]
    return last


def _check_cluster(client, no_worker_since, n_left: int, n_items: int):
    """While waiting: raise when the scheduler is gone or has had no worker for NO_WORKER_TIMEOUT seconds;
    returns the time since which no worker is present (None when there are workers)."""
    import time

    if client.status in ("closed", "closing", "failed"):
        raise SchedulerLostError(f"the connection to the Dask scheduler was lost ({n_items - n_left} of {n_items} "
                                 "items were done); nothing was written; check that the scheduler is running")
    try:
        present = len(client.scheduler_info().get("workers", {}))
    except Exception:  # noqa: BLE001  (a lost scheduler shows in client.status at the next poll)
        return no_worker_since
    if present:
        return None
    now = time.monotonic()
    if no_worker_since is None:
        return now
    if now - no_worker_since > NO_WORKER_TIMEOUT:
        raise NoWorkersError(
            f"the Dask cluster has had no worker for {NO_WORKER_TIMEOUT:g} s while {n_left} of {n_items} items were "
            "waiting (the last worker died or left; a worker that cannot import vpeval dies at start); start "
            "workers with `dask worker ADDRESS` and re-run")
    return no_worker_since


def score_matrix(probes, models, *, backend=None, client):
    """A 1-to-N score matrix (probes x models) as a lazy dask array computed on the cluster, by probe rows.

    The probe rows and the models are persisted on the workers once (the back-end travels with each task);
    each block of
    :func:`vpeval.pipeline.scoring.score_block_rows` probe rows is one task computing exactly what
    :func:`vpeval.pipeline.scoring.score_rows` computes for that block, so the numbers are identical to the
    in-memory matrix. Nothing of the size of the matrix is ever held by the client: pass the result to
    :func:`vpeval.metrics.linkage.linkage_analysis` / :func:`~vpeval.metrics.linkage.lid_pipeline` with
    the same ``client`` (or ``.persist()`` it first to compute it once instead of once per scan).

    Parameters
    ----------
    probes : ndarray of shape (n_probes, d)
        Unit-length probe embeddings (as :func:`~vpeval.pipeline.protocols.one_to_n` prepares them).
    models : ndarray of shape (n_models, d)
        Unit-length speaker models.
    backend : vpeval.backends.Backend, optional
        Fitted back-end (default cosine: ``probes @ models.T``).
    client : distributed.Client

    Returns
    -------
    dask.array.Array of shape (n_probes, n_models), float64, chunked by rows, one chunk spanning all columns.
    """
    import dask.array as da
    import numpy as np

    from .scoring import score_block_rows

    probes, models = np.asarray(probes), np.asarray(models)
    step = score_block_rows(models.shape[0])
    # persisted: the workers hold the probe blocks and the models; the array's graph keeps them alive
    with warnings.catch_warnings():  # the embeddings must travel once; distributed warns about any large graph
        warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)
        p = client.persist(da.from_array(probes, chunks=(step, -1)))
        m = client.persist(da.from_array(models, chunks=(-1, -1)))
    return da.blockwise(_score_task, "ij", p, "ik", m, "jk", dtype=np.float64, concatenate=True,
                        backend=backend)


def _score_task(probe_block, models, backend=None):
    from .scoring import score_block

    return score_block(probe_block, models, backend)
