"""Score matrices of unit probe rows against unit speaker models, block by block.

:func:`score_rows` computes a probe x model score matrix as products of :func:`score_block_rows` probe rows
at a time (:func:`score_block`, single-threaded BLAS); :func:`vpeval.pipeline.cluster.score_matrix` runs the
very same blocks as Dask tasks, so both give the same numbers bit for bit. This module imports nothing else
of vpeval, so that the protocols (:mod:`vpeval.pipeline.protocols`) and the cluster code
(:mod:`vpeval.pipeline.cluster`) both import it downward.
"""

from __future__ import annotations

import numpy as np

__all__ = ["SCORE_BLOCK_ROWS", "score_block_rows", "score_block", "score_rows"]

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
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        return probes @ models.T if backend is None else backend.score(models, probes).T


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
