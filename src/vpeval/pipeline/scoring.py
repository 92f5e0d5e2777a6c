"""Score matrices of unit probe rows against unit speaker models, block by block.

:func:`score_rows` computes a probe x model score matrix as products of :func:`score_block_rows` probe rows
at a time (:func:`score_block`, single-threaded BLAS); :func:`vpeval.pipeline.cluster.score_matrix` runs the
very same blocks as Dask tasks, so both give the same numbers bit for bit. This module imports nothing else
of vpeval, so that the protocols (:mod:`vpeval.pipeline.protocols`) and the cluster code
(:mod:`vpeval.pipeline.cluster`) both import it downward.
"""

from __future__ import annotations

import ctypes

import numpy as np

__all__ = ["SCORE_BLOCK_ROWS", "score_block_rows", "score_block", "score_rows", "one_blas_thread"]

#: Probe rows scored together by one matrix product in :func:`score_rows` (and per task on a cluster), so a
#: score matrix is computed with the same products whether in one process or on a Dask cluster.
SCORE_BLOCK_ROWS = 4096


def score_block_rows(n_models: int) -> int:
    """Probe rows per block of a 1-to-N score matrix with ``n_models`` columns: 4096 rows, fewer when the
    block would exceed 64 MiB. Used by :func:`score_rows` and the cluster path alike."""
    return max(1, min(SCORE_BLOCK_ROWS, (64 * 2**20) // (8 * max(1, int(n_models)))))


def score_block(probes: np.ndarray, models: np.ndarray, backend=None) -> np.ndarray:
    """Scores of a block of unit probe rows against every model: (n_probes, n_models) float64.

    BLAS runs single-threaded here: how OpenBLAS splits a product over threads changes the last bit of some
    scores (133 of the 5,550 cosine scores of the bundled example's resemblyzer oo matrix differ between one and
    two threads), so this gives the same matrix on any machine and on any Dask worker.
    """
    with one_blas_thread():
        return probes @ models.T if backend is None else backend.score(models, probes).T


class _PhdrInfo(ctypes.Structure):
    # glibc's struct dl_phdr_info up to its load and unload counters (dl_iterate_phdr(3))
    _fields_ = [("addr", ctypes.c_void_p), ("name", ctypes.c_char_p), ("phdr", ctypes.c_void_p),
                ("phnum", ctypes.c_uint16), ("adds", ctypes.c_ulonglong), ("subs", ctypes.c_ulonglong)]


_PHDR_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_PhdrInfo), ctypes.c_size_t, ctypes.c_void_p)
_phdr_state: dict = {}


def _loads_and_unloads():
    """``(loads, unloads)`` of shared objects in this process so far (glibc's ``dl_iterate_phdr`` counters,
    read from its first callback; about 1 microsecond), or None where they cannot be read."""
    if "iterate" not in _phdr_state:
        try:
            iterate = ctypes.CDLL(None).dl_iterate_phdr
        except (OSError, AttributeError):
            iterate = None
        seen: list = []

        def first(info, size, _data):
            if size >= _PhdrInfo.subs.offset + ctypes.sizeof(ctypes.c_ulonglong):
                seen.append((int(info.contents.adds), int(info.contents.subs)))
            return 1  # stop after the first object

        _phdr_state.update(iterate=iterate, seen=seen, callback=_PHDR_CALLBACK(first))
    iterate, seen = _phdr_state["iterate"], _phdr_state["seen"]
    if iterate is None:
        return None
    seen.clear()
    iterate(_phdr_state["callback"], None)
    return seen[0] if seen else None


_controller: list = [None, None]  # [(loads, unloads) when made, ThreadpoolController]


def one_blas_thread():
    """``threadpool_limits(limits=1, user_api="blas")`` without re-scanning the process's libraries each time.

    Making a ``ThreadpoolController`` finds and queries every BLAS and OpenMP library loaded (a few ms; an audit
    scores hundreds of blocks). It is reused while no shared object has been loaded or unloaded since it was
    made, so a BLAS loaded later is limited too; where the counters cannot be read (not glibc), a new one is
    made every time, as ``threadpool_limits`` does.
    """
    from threadpoolctl import ThreadpoolController

    state = _loads_and_unloads()
    if state is None or _controller[0] != state:
        controller = ThreadpoolController()
        _controller[:] = [_loads_and_unloads(), controller]  # after the controller's own loads
    return _controller[1].limit(limits=1, user_api="blas")


def score_rows(probes: np.ndarray, models: np.ndarray, backend=None) -> np.ndarray:
    """Score every probe row against every model row, in blocks of :func:`score_block_rows` probe rows.

    Each block is one matrix product (or one ``backend.score`` call). Computing the same blocks on a Dask
    cluster (:func:`vpeval.pipeline.cluster.score_matrix`) gives the same numbers bit for bit, whatever the
    BLAS does with a matrix product's shape, because both paths perform the identical products.
    """
    step = score_block_rows(models.shape[0])
    if probes.shape[0] <= step:
        return score_block(probes, models, backend)
    out = np.empty((probes.shape[0], models.shape[0]))
    for s in range(0, probes.shape[0], step):
        out[s : s + step] = score_block(probes[s : s + step], models, backend)
    return out
