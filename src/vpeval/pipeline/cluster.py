"""Execution on a Dask cluster: connecting, local clusters, per-utterance tasks in batches, progress.

vpeval's heavy steps (anonymization, embedding, 1-to-N scoring and linkage) run unchanged in one process
when no cluster is given. With a :class:`distributed.Client` they run on its workers:

- :func:`cluster` is the one way the CLI obtains a client: ``--scheduler ADDRESS`` connects to a running
  ``distributed`` scheduler (``tcp://host:8786``, started with ``dask scheduler`` / ``dask worker`` or by
  ``dask-jobqueue``), ``--workers N`` starts a :class:`distributed.LocalCluster` of N worker *processes*
  with one thread each on the loopback interface (and stops it at the end); neither gives ``None``, the
  single-process path.
- :func:`map_items` runs one function per item (an utterance) as tasks of a few items each, with a
  progress bar, and returns the results in item order. A failing item is reported with its file name.

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

__all__ = ["ClusterError", "ItemError", "cluster", "require_distributed", "map_items", "n_workers",
           "score_matrix", "check_options", "CONNECT_TIMEOUT"]

#: Seconds to wait for a scheduler (``--scheduler``) before giving up.
CONNECT_TIMEOUT = 10.0

INSTALL_HINT = "running on a Dask cluster needs the dask extra: pip install 'vpeval[dask]'"

_ADDRESS = re.compile(r"^(tcp|tls|inproc|ucx|ws|wss)://[^\s/]+$")


class ClusterError(VpevalError):
    """The cluster options are wrong or the scheduler cannot be reached."""


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
        Both options, ``workers < 1``, a malformed address, no scheduler answering within ``timeout``, or
        no worker connected to it within ``timeout``.
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
        with local, distributed.Client(local) as client:
            yield client
        return
    try:
        client = distributed.Client(scheduler, timeout=timeout)
    except (OSError, TimeoutError, ValueError) as exc:
        raise ClusterError(
            f"--scheduler {scheduler}: no Dask scheduler answered within {timeout:g} s ({type(exc).__name__}: "
            f"{exc}); start one with `dask scheduler` and workers with `dask worker {scheduler}`"
        ) from None
    try:
        try:
            client.wait_for_workers(1, timeout=timeout)
        except (OSError, TimeoutError) as exc:
            raise ClusterError(
                f"--scheduler {scheduler}: no worker joined the scheduler within {timeout:g} s ({exc}); start "
                f"workers with `dask worker {scheduler}`"
            ) from None
        yield client
    finally:
        client.close()


def check_options(scheduler: str | None = None, workers: int | None = None) -> None:
    """Raise :class:`ClusterError` for both options at once, ``workers < 1`` or a malformed address."""
    if scheduler is not None and workers is not None:
        raise ClusterError("--scheduler and --workers are mutually exclusive: give one of them")
    if workers is not None and (int(workers) != workers or workers < 1):
        raise ClusterError(f"--workers must be a positive integer, got {workers!r}")
    if scheduler is not None and not _ADDRESS.match(str(scheduler)):
        raise ClusterError(f"--scheduler {scheduler!r}: expected a scheduler address such as tcp://host:8786")


def n_workers(client) -> int:
    """Number of workers connected to ``client``'s scheduler (at least 1)."""
    return max(1, len(client.scheduler_info().get("workers", {})))


def _run_batch(func, batch):
    """Worker side: ``func`` on each ``(name, item)`` of a batch; stop at the first failure.

    Returns ``("ok", results)`` or ``("error", index_in_batch, name, message, is_input_error)``.
    """
    out = []
    for i, (name, item) in enumerate(batch):
        try:
            out.append(func(item))
        except VpevalError as exc:
            msg = exc.problem if isinstance(exc, InputFileError) and exc.path == str(name) else str(exc)
            return ("error", i, str(name), msg, True)
        except Exception as exc:  # noqa: BLE001  (reported to the client with the file name)
            return ("error", i, str(name), f"{type(exc).__name__}: {exc}", False)
    return ("ok", out)


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
    ItemError
        Any other exception, with the item's name and the original message.
    """
    from ..progress import track

    items = list(items)
    names = [str(it) for it in items] if names is None else [str(n) for n in names]
    if len(names) != len(items):
        raise VpevalError(f"names: expected {len(items)} names, got {len(names)}")
    if not items:
        return []
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

    def done_items():
        try:
            for fut in distributed.as_completed(futures):
                s = where[fut.key]
                res = fut.result()
                if res[0] == "error":
                    _, i, name, msg, is_input = res
                    if is_input:
                        raise InputFileError(name, None, msg)
                    raise ItemError(f"{name}: {msg}")
                for i, r in enumerate(res[1]):
                    results[s + i] = r
                    yield None
        finally:
            client.cancel([f for f in futures if not f.done()])

    for _ in track(done_items(), total=len(items), description=description, quiet=quiet):
        pass
    return results


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
