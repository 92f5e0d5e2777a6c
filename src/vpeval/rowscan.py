"""Row-block scans of probe x speaker score matrices (internal; shared by ranks, identification and LID).

Every 1-to-N metric (:mod:`vpeval.ranks`, :mod:`vpeval.metrics.identification`, :mod:`vpeval.metrics.linkage`)
validates its matrix here (:func:`_as_matrix`, :func:`_as_true_index`), then scans it in blocks of rows, so
that temporaries never exceed ``chunk_rows x N`` values whatever the number of probes. A ``dask.array`` is
computed block by block; a matrix on a Dask cluster (:func:`_on_cluster`) is scanned by one task per block
(:func:`_map_rows`, :func:`_map_pieces`) and only per-row results come back.

Layering: like :mod:`vpeval.blocks`, this module sits below :mod:`vpeval.metrics` and
:mod:`vpeval.calibration` and imports neither.
"""

from __future__ import annotations

import numpy as np

from .errors import InvalidScoresError

#: Bytes of one float64 temporary per row block (the scans hold at most a few of them). Small blocks stay
#: in the CPU cache across the several vectorised passes made over each block.
CHUNK_BYTES = 2 * 2**20


def _is_dask(x) -> bool:
    return type(x).__module__.split(".")[0] == "dask"


def _as_matrix(matrix, name: str):
    """Validate the shape of a score/LLR matrix; return (matrix_or_dask, n_rows, n_cols).

    NumPy input is returned as an array view without copying (memory maps stay memory maps); values are
    checked for NaN block by block during the scan, not here.
    """
    if _is_dask(matrix):
        shape = tuple(matrix.shape)
        if len(shape) != 2:
            raise InvalidScoresError(f"{name}: expected a 2-D matrix (probes x speakers), got shape {shape}")
        if any(s != s for s in shape):  # unknown chunk sizes give NaN dimensions
            raise InvalidScoresError(f"{name}: dask array of unknown shape {shape}; call compute_chunk_sizes()")
        arr = matrix
        if not np.issubdtype(np.dtype(matrix.dtype), np.number) or np.issubdtype(
            np.dtype(matrix.dtype), np.complexfloating
        ):
            raise InvalidScoresError(f"{name}: expected real numbers, got dtype {matrix.dtype}")
    else:
        try:
            arr = np.asarray(matrix)
        except (TypeError, ValueError) as exc:  # ragged lists and the like
            raise InvalidScoresError(f"{name}: expected a 2-D array of numbers ({exc})") from None
        if arr.dtype.kind in "bUSV" or arr.dtype.kind == "c":
            raise InvalidScoresError(f"{name}: expected real numbers, got an array of dtype {arr.dtype}")
        if arr.dtype.kind in "iu" and arr.size and (arr.max() > 2 ** 53 or arr.min() < -(2 ** 53)):
            raise InvalidScoresError(f"{name}: integers beyond 2**53, which float64 cannot hold exactly; rescale "
                                     "the scores first")
        if arr.dtype.kind not in "iuf":
            try:
                arr = arr.astype(np.float64)
            except (TypeError, ValueError) as exc:
                raise InvalidScoresError(f"{name}: expected a 2-D array of numbers ({exc})") from None
        if arr.ndim != 2:
            raise InvalidScoresError(f"{name}: expected a 2-D matrix (probes x speakers), got shape {arr.shape}")
        shape = arr.shape
    n, m = int(shape[0]), int(shape[1])
    if n == 0 or m == 0:
        raise InvalidScoresError(f"{name}: is empty (shape {shape}); at least one probe and one speaker needed")
    return arr, n, m


def _as_true_index(true_index, n_rows: int, n_cols: int) -> np.ndarray:
    arr = np.asarray(true_index)
    if arr.ndim != 1 or arr.shape[0] != n_rows:
        raise InvalidScoresError(
            f"true_index: expected shape ({n_rows},) (one entry per probe row), got {arr.shape}"
        )
    if arr.dtype.kind not in "iu":
        raise InvalidScoresError(f"true_index: expected integer column indices, got dtype {arr.dtype}")
    arr = arr.astype(np.intp)
    bad = (arr < 0) | (arr >= n_cols)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InvalidScoresError(
            f"true_index: {int(bad.sum())} entries outside 0..{n_cols - 1} (first: probe {i} -> {arr[i]})"
        )
    return arr


def _chunk_rows(n_cols: int, chunk_rows) -> int:
    if chunk_rows is None:
        return max(1, CHUNK_BYTES // (8 * n_cols))
    if isinstance(chunk_rows, (bool, np.bool_)) or not isinstance(chunk_rows, (int, np.integer)):
        raise InvalidScoresError(f"chunk_rows must be a whole number of rows (an int), got {chunk_rows!r}")
    if int(chunk_rows) < 1:
        raise InvalidScoresError(f"chunk_rows must be >= 1, got {chunk_rows}")
    return int(chunk_rows)


#: A dask array is computed one row block at a time: its own blocks when they span all columns and hold at
#: most 4x this many bytes, else blocks of about this many bytes; each is then scanned in NumPy blocks.
DASK_BLOCK_BYTES = 64 * 2**20


def _iter_blocks(arr, n_rows: int, rows: int):
    """Yield ``(start, block)`` with ``block`` a float64 NumPy array of at most ``rows`` full rows."""
    if _is_dask(arr):
        # Keep the caller's row blocks when they span all columns and are not too large; else rechunk.
        arr = _dask_row_blocks(arr, rows)
        start = 0
        for i in range(arr.numblocks[0]):
            block = np.ascontiguousarray(arr.blocks[i].compute(), dtype=np.float64)
            for s in range(0, block.shape[0], rows):
                yield start + s, block[s : s + rows]
            start += block.shape[0]
    else:
        for start in range(0, n_rows, rows):
            # row-major blocks whatever the input's layout (a copy only for other layouts), so that every
            # row reduction sums in the same order and results never depend on the memory order
            yield start, np.ascontiguousarray(arr[start : start + rows], dtype=np.float64)


def _dask_row_blocks(arr, rows: int):
    """``arr`` (a dask array) rechunked as :func:`_iter_blocks` does: row blocks spanning all columns."""
    n_cols = int(arr.shape[1])
    if len(arr.chunks[1]) != 1 or max(arr.chunks[0]) * n_cols * 8 > 4 * DASK_BLOCK_BYTES:
        arr = arr.rechunk((max(rows, DASK_BLOCK_BYTES // (8 * n_cols)), -1))
    return arr


class _ClusterMatrix:
    """A matrix held on a Dask cluster as row blocks spanning all columns: ``blocks`` is a list of
    ``(start, n_rows, ref)`` with ``ref`` a future of a scattered NumPy block or a delayed dask block."""

    def __init__(self, client, blocks, shape):
        self.client, self.blocks, self.shape = client, blocks, shape


#: A NumPy matrix smaller than this is scanned in the client's process even when a Dask client is given (the
#: results are the same; shipping a small matrix costs more round trips than its scans take).
CLUSTER_MIN_BYTES = DASK_BLOCK_BYTES


def _on_cluster(arr, n_rows: int, n_cols: int, rows: int, client):
    """Put a validated matrix (from :func:`_as_matrix`) on ``client``'s cluster, partitioned by rows.

    NumPy input is scattered once, in blocks of about :data:`DASK_BLOCK_BYTES` (and a multiple of ``rows``
    rows), so repeated scans reuse it, unless it is smaller than :data:`CLUSTER_MIN_BYTES` (then it stays
    here); a dask array stays lazy (its row blocks, rechunked to span all
    columns if needed, are computed on the workers by every scan: persist it first to compute it once).
    """
    if client is None or isinstance(arr, _ClusterMatrix):
        return arr
    if _is_dask(arr):
        arr = _dask_row_blocks(arr, rows)
        refs = arr.to_delayed()[:, 0].tolist()
        starts = np.concatenate([[0], np.cumsum(arr.chunks[0])[:-1]]).astype(int).tolist()
        return _ClusterMatrix(client, list(zip(starts, arr.chunks[0], refs)), (n_rows, n_cols))
    if n_rows * n_cols * 8 < CLUSTER_MIN_BYTES:
        return arr
    step = max(1, DASK_BLOCK_BYTES // (8 * n_cols) // rows) * rows
    starts = list(range(0, n_rows, step))
    # hash=False: keys of this call's own; with content-hashed keys a second scatter of equal blocks shared the
    # first call's keys, whose release then cancelled the second call's tasks ("lost dependencies")
    futures = client.scatter([np.ascontiguousarray(arr[s : s + step], dtype=np.float64) for s in starts],
                             hash=False)
    return _ClusterMatrix(client, [(s, min(step, n_rows - s), f) for s, f in zip(starts, futures)],
                          (n_rows, n_cols))


def _scan_piece(block, start: int, rows: int, fn, *row_args):
    """Worker side of :func:`_map_rows`: ``fn`` over ``rows``-row pieces of one block, outputs stacked."""
    block = np.ascontiguousarray(block, dtype=np.float64)
    parts = [fn(start + s, block[s : s + rows], *(a[s : s + rows] for a in row_args))
             for s in range(0, block.shape[0], rows)]
    return np.concatenate(parts) if parts else None


def _map_rows(arr, n_rows: int, rows: int, fn, *row_args):
    """Per-row results of ``fn(start, block, *row_arg_slices) -> (k, m) array`` stacked in row order.

    ``row_args`` are arrays with one entry per matrix row; each call gets the slice of its block. On a
    :class:`_ClusterMatrix` (see :func:`_on_cluster`) one task per block runs on the cluster and only the
    per-row results travel back; otherwise the blocks are scanned here. ``fn`` must compute each output row
    from its own matrix row alone (plus the slices), so both give identical arrays whatever the blocks.
    Returns None when ``fn`` returns nothing for every block (e.g. no selected row).
    """
    if isinstance(arr, _ClusterMatrix):
        import dask

        tasks = [dask.delayed(_scan_piece, pure=False)(ref, start, rows, fn,
                                                       *(a[start : start + k] for a in row_args))
                 for start, k, ref in arr.blocks]
        parts = arr.client.gather(arr.client.compute(tasks))
    else:
        parts = [fn(start, x, *(a[start : start + x.shape[0]] for a in row_args))
                 for start, x in _iter_blocks(arr, n_rows, rows)]
    parts = [p for p in parts if p is not None]
    return np.concatenate(parts) if parts else None


def _scan_piece_list(block, start: int, rows: int, fn, *row_args):
    """Worker side of :func:`_map_pieces`: ``fn`` over ``rows``-row pieces of one block, outputs listed."""
    block = np.ascontiguousarray(block, dtype=np.float64)
    return [fn(start + s, block[s : s + rows], *(a[s : s + rows] for a in row_args))
            for s in range(0, block.shape[0], rows)]


def _map_pieces(arr, n_rows: int, rows: int, fn, *row_args):
    """Like :func:`_map_rows`, but ``fn`` may return any object: an iterable of its outputs, one per piece of
    at most ``rows`` rows, in row order (a list of the gathered outputs of one task per block on a
    :class:`_ClusterMatrix`; here a generator, so one piece's output is held at a time). The
    pieces depend on how the matrix is held (cluster blocks, dask chunks), so a caller that needs results
    independent of them must make ``fn`` split its rows at boundaries of its own (see
    :func:`vpeval.metrics.linkage.lid_pipeline`)."""
    if isinstance(arr, _ClusterMatrix):
        import dask

        tasks = [dask.delayed(_scan_piece_list, pure=False)(ref, start, rows, fn,
                                                            *(a[start : start + k] for a in row_args))
                 for start, k, ref in arr.blocks]
        return [p for part in arr.client.gather(arr.client.compute(tasks)) for p in part]
    return (fn(start, x, *(a[start : start + x.shape[0]] for a in row_args))
            for start, x in _iter_blocks(arr, n_rows, rows))


def _check_nan(block: np.ndarray, row_max: np.ndarray, start, name: str) -> None:
    """``row_max`` is ``block.max(axis=1)``; it is NaN exactly for the rows that contain a NaN.

    ``start`` is the global row of ``block[0]``, or an array with the global row of every block row.
    """
    bad = np.isnan(row_max)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        j = int(np.flatnonzero(np.isnan(block[i]))[0])
        row = start + i if np.isscalar(start) else int(start[i])
        raise InvalidScoresError(f"{name}: contains NaN (first at probe row {row}, speaker column {j})")
