"""Closed-set identification from a probe x enrolled-speaker score matrix.

An attacker holds N enrolled speakers and scores each probe (an anonymized utterance) against all of them.
This module gives the rank of the true speaker per probe, the rank histogram ``gamma`` (Backstrom et al.'s
similarity-rank distribution), the cumulative match characteristic (CMC, identification rate at rank k),
rank-k rates beside their chance level k/N, and the closed-set linkability (the probability that the true
speaker beats every other member of a random candidate set of size N').

Conventions
-----------
* Score matrix: shape ``(n_probes, N)``, float; row ``i`` holds probe ``i``'s scores against the N enrolled
  speakers, higher means "more likely the same speaker". ``true_index[i]`` is the column of probe ``i``'s
  speaker (closed set: every probe's speaker is enrolled). ``+inf`` and ``-inf`` are legal scores; NaN is
  not.
* Rank of the true speaker: ``1 + g`` where ``g`` is the number of other enrolled speakers whose score is
  strictly greater than the true speaker's, when no other score equals it. With ``e`` other speakers tied
  with the true one, the tied block occupies ranks ``g + 1 .. g + e + 1`` and the *tie rule* decides:

  ``"fractional"`` (default)
      the probe's unit mass is spread uniformly over the ``e + 1`` tied ranks: the expectation under
      breaking the tie uniformly at random. The per-probe rank is then the mid-rank ``g + 1 + e / 2``.
  ``"optimistic"``
      the true speaker wins every tie (rank ``g + 1``), the attacker's best case.
  ``"pessimistic"``
      the true speaker loses every tie (rank ``g + e + 1``).

* Memory: every function scans the matrix in blocks of rows, so the temporaries never exceed
  ``chunk_rows x N`` values (by default about 2 MiB per temporary, whatever the matrix size). Each row
  needs two vectorised comparisons against the true score, O(N); nothing is sorted. A ``dask.array``
  (optional dependency) is accepted and computed block by block with the same results; NumPy memory maps
  work as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidScoresError

__all__ = [
    "TIE_RULES",
    "RankCounts",
    "rank_counts",
    "true_speaker_rank",
    "rank_histogram",
    "cmc",
    "IdentificationResult",
    "identification_rates",
    "ClosedSetLinkability",
    "closed_set_linkability",
]

TIE_RULES = ("fractional", "optimistic", "pessimistic")

#: Bytes of one float64 temporary per row block (the scans hold at most a few of them). Small blocks stay
#: in the CPU cache across the several vectorised passes made over each block.
CHUNK_BYTES = 2 * 2**20


# --------------------------------------------------------------------------------------------------------
# Row-block scanning shared with vpeval.metrics.linkage (same package, internal)
# --------------------------------------------------------------------------------------------------------


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
    futures = client.scatter([np.ascontiguousarray(arr[s : s + step], dtype=np.float64) for s in starts])
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


def _count_dtype(n_cols: int):
    # Summing a bool mask viewed as uint8 into uint16 is the fastest exact count while N < 2**16.
    return np.uint16 if n_cols < 2**16 else np.int64


def _rank_block(x, t, d, mask, start, name, check=True):
    """Counts (n_greater, n_tied) for a block, given ``d = x - t[:, None]``.

    For finite t, ``x - t > 0`` iff ``x > t`` and ``x - t == 0`` iff ``x == t`` (IEEE subtraction of
    distinct floats never gives 0, and overflow keeps the sign), so the comparisons run on ``d``. Rows
    whose ``d`` has a non-finite sum (NaN somewhere, or +inf and -inf both present, or t = +-inf) are
    checked for NaN and recounted directly on ``x``. ``check=False`` skips that test: the caller then
    owns it (the LID scan detects the same rows from its sum of exp(d)) and must call
    :func:`_recount_rows` for them.
    """
    cdt = _count_dtype(x.shape[1])
    np.greater(d, 0.0, out=mask)
    g = mask.view(np.uint8).sum(axis=1, dtype=cdt).astype(np.intp)
    np.equal(d, 0.0, out=mask)
    e = mask.view(np.uint8).sum(axis=1, dtype=cdt).astype(np.intp) - 1
    if check:
        with np.errstate(invalid="ignore"):
            odd = ~np.isfinite(np.add.reduce(d, axis=1))
        if odd.any():
            _recount_rows(x, t, np.flatnonzero(odd), g, e, start, name)
    return g, e


def _recount_rows(x, t, rows, g, e, start, name):
    """Raise for NaN in ``x[rows]``, else recount those rows by direct comparison with ``t`` (in place)."""
    xb = x[rows]
    glob = start + rows if np.isscalar(start) else np.asarray(start)[rows]
    _check_nan(xb, xb.max(axis=1), glob, name)
    tb = t[rows][:, None]
    g[rows] = np.count_nonzero(xb > tb, axis=1)
    e[rows] = np.count_nonzero(xb == tb, axis=1) - 1


def _check_ties(ties: str) -> str:
    if ties not in TIE_RULES:
        raise InvalidScoresError(f"ties must be one of {TIE_RULES}, got {ties!r}")
    return ties


# --------------------------------------------------------------------------------------------------------
# Ranks
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RankCounts:
    """Per-probe counts that determine the rank of the true speaker under any tie rule.

    Attributes
    ----------
    n_greater : ndarray of shape (n_probes,), int
        Number of other enrolled speakers scoring strictly above the true speaker.
    n_tied : ndarray of shape (n_probes,), int
        Number of other enrolled speakers scoring exactly the true speaker's score.
    n_speakers : int
        N, the number of enrolled speakers (columns).
    """

    n_greater: np.ndarray
    n_tied: np.ndarray
    n_speakers: int

    @property
    def n_probes(self) -> int:
        return int(self.n_greater.shape[0])

    def ranks(self, ties: str = "fractional") -> np.ndarray:
        """Rank of the true speaker per probe (1 = best), float64; see the module docstring for ``ties``."""
        _check_ties(ties)
        g = self.n_greater.astype(np.float64)
        if ties == "optimistic":
            return g + 1.0
        if ties == "pessimistic":
            return g + self.n_tied + 1.0
        return g + 1.0 + self.n_tied / 2.0

    def histogram(self, ties: str = "fractional") -> np.ndarray:
        """gamma_k, k = 1..N: share of probes whose true speaker is at rank k (sums to 1)."""
        _check_ties(ties)
        n_cols, n = self.n_speakers, self.n_probes
        g, e = self.n_greater, self.n_tied
        if ties == "optimistic":
            return np.bincount(g, minlength=n_cols) / n
        if ties == "pessimistic":
            return np.bincount(g + e, minlength=n_cols) / n
        untied = e == 0
        mass = np.bincount(g[untied], minlength=n_cols).astype(np.float64)
        if not untied.all():
            gt, et = g[~untied], e[~untied]
            w = 1.0 / (et + 1.0)
            # Difference array: +w at the first tied rank, -w one past the last; cumulative sum spreads it.
            diff = np.bincount(gt, weights=w, minlength=n_cols + 1) - np.bincount(
                gt + et + 1, weights=w, minlength=n_cols + 1
            )
            mass += np.maximum(np.cumsum(diff)[:n_cols], 0.0)
        return mass / n

    def cmc(self, ties: str = "fractional") -> np.ndarray:
        """Identification rate at ranks 1..N: P(rank <= k); non-decreasing, last value exactly 1."""
        curve = np.minimum(np.cumsum(self.histogram(ties)), 1.0)
        curve[-1] = 1.0
        return curve


def rank_counts(score_matrix, true_index, *, chunk_rows: int | None = None) -> RankCounts:
    """Count, per probe, the enrolled speakers scoring above and equal to the true speaker.

    One pass over the matrix in row blocks (two vectorised comparisons per row, O(N), no sorting).

    Parameters
    ----------
    score_matrix : array_like or dask.array of shape (n_probes, N)
        Scores of each probe against each enrolled speaker (higher = more similar). ``+-inf`` allowed.
    true_index : array_like of int, shape (n_probes,)
        Column of the true speaker of each probe.
    chunk_rows : int, optional
        Rows per block (default: about 2 MiB of float64 per block). Results do not depend on it.

    Returns
    -------
    RankCounts

    Raises
    ------
    InvalidScoresError
        Not 2-D, empty, NaN anywhere, ``true_index`` of the wrong length, not integer, or out of range.

    Examples
    --------
    >>> c = rank_counts([[0.9, 0.5, 0.9], [0.1, 0.3, 0.2]], [0, 0])
    >>> c.n_greater.tolist(), c.n_tied.tolist()
    ([0, 2], [1, 0])
    """
    arr, n, n_cols = _as_matrix(score_matrix, "score_matrix")
    ti = _as_true_index(true_index, n, n_cols)
    rows = _chunk_rows(n_cols, chunk_rows)
    n_greater = np.empty(n, dtype=np.intp)
    n_tied = np.empty(n, dtype=np.intp)
    mask = np.empty((min(rows, n), n_cols), dtype=bool)
    diff = np.empty((min(rows, n), n_cols), dtype=np.float64)
    for start, x in _iter_blocks(arr, n, rows):
        r = x.shape[0]
        t = x[np.arange(r), ti[start : start + r]]
        d = diff[:r]
        with np.errstate(invalid="ignore"):
            np.subtract(x, t[:, None], out=d)
        g, e = _rank_block(x, t, d, mask[:r], start, "score_matrix")
        n_greater[start : start + r] = g
        n_tied[start : start + r] = e
    return RankCounts(n_greater, n_tied, n_cols)


def _counts(score_matrix, true_index, chunk_rows) -> RankCounts:
    if isinstance(score_matrix, RankCounts):
        if true_index is not None:
            raise InvalidScoresError("true_index must be None when RankCounts are passed instead of a matrix")
        return score_matrix
    return rank_counts(score_matrix, true_index, chunk_rows=chunk_rows)


def true_speaker_rank(score_matrix, true_index, ties: str = "fractional", *, chunk_rows=None) -> np.ndarray:
    """Rank of the true speaker for every probe (1 = top score).

    Parameters
    ----------
    score_matrix, true_index, chunk_rows
        As in :func:`rank_counts`; a :class:`RankCounts` may be passed instead of the matrix (then
        ``true_index=None``) to avoid a second scan.
    ties : {"fractional", "optimistic", "pessimistic"}
        Tie rule (module docstring). ``"fractional"`` returns mid-ranks, so ranks may end in ``.5``.

    Returns
    -------
    ndarray of shape (n_probes,), float64

    Examples
    --------
    >>> S = [[0.9, 0.5, 0.9], [0.1, 0.3, 0.2]]
    >>> true_speaker_rank(S, [0, 0]).tolist(), true_speaker_rank(S, [0, 0], "pessimistic").tolist()
    ([1.5, 3.0], [2.0, 3.0])
    """
    _check_ties(ties)
    return _counts(score_matrix, true_index, chunk_rows).ranks(ties)


def rank_histogram(score_matrix, true_index, ties: str = "fractional", *, chunk_rows=None) -> np.ndarray:
    """Rank histogram gamma of the true speaker (similarity-rank distribution).

    Source: T. Backstrom, M. H. Vali, M. Nguyen, S. Rech, "Privacy disclosure of similarity rank in speech
    and language processing" (arXiv:2508.05250): gamma_k = P(true identity at similarity rank k), estimated
    by the histogram over probes.

    ``gamma[k-1]`` estimates P(true speaker at rank k), k = 1..N, as the share of probes at rank k; under
    the ``"fractional"`` tie rule a probe tied with ``e`` others contributes ``1/(e+1)`` to each of its tied
    ranks. Feed it to the rank-disclosure metrics (per-rank disclosure ``log2(N gamma_k)`` bits) or to
    :func:`closed_set_linkability`.

    Parameters
    ----------
    score_matrix : array_like or dask.array of shape (n_probes, N), or RankCounts
    true_index : array_like of int, shape (n_probes,) (None with RankCounts)
    ties : {"fractional", "optimistic", "pessimistic"}
    chunk_rows : int, optional

    Returns
    -------
    gamma : ndarray of shape (N,), float64, non-negative, sums to 1 (up to rounding).

    Raises
    ------
    InvalidScoresError
        As :func:`rank_counts`; unknown tie rule.

    Examples
    --------
    >>> S = [[0.9, 0.5, 0.9], [0.1, 0.3, 0.2]]
    >>> rank_histogram(S, [0, 0]).tolist()
    [0.25, 0.25, 0.5]
    """
    _check_ties(ties)
    return _counts(score_matrix, true_index, chunk_rows).histogram(ties)


def cmc(score_matrix, true_index, ties: str = "fractional", *, chunk_rows=None) -> np.ndarray:
    """Cumulative match characteristic: identification rate at ranks 1..N.

    ``cmc[k-1]`` = share of probes whose true speaker is among the k top-scoring enrolled speakers
    (closed-set identification, e.g. Bolle et al., *Guide to Biometrics*, 2004, ch. 5). Chance level for
    an uninformative attacker is ``k/N``. Ties follow ``ties`` (module docstring); ``"fractional"`` equals
    the expected rate when ties are broken uniformly at random.

    Parameters
    ----------
    score_matrix : array_like or dask.array of shape (n_probes, N), or RankCounts
    true_index : array_like of int, shape (n_probes,) (None with RankCounts)
    ties : {"fractional", "optimistic", "pessimistic"}
    chunk_rows : int, optional

    Returns
    -------
    ndarray of shape (N,), float64 in [0, 1], non-decreasing, last value 1.

    Raises
    ------
    InvalidScoresError
        As :func:`rank_counts`; unknown tie rule.

    Examples
    --------
    >>> S = [[0.9, 0.5, 0.9], [0.1, 0.3, 0.2]]
    >>> cmc(S, [0, 0]).tolist(), cmc(S, [0, 0], "optimistic").tolist()
    ([0.25, 0.5, 1.0], [0.5, 0.5, 1.0])
    """
    _check_ties(ties)
    return _counts(score_matrix, true_index, chunk_rows).cmc(ties)


@dataclass(frozen=True)
class IdentificationResult:
    """Closed-set identification summary.

    Attributes
    ----------
    rates : dict int -> float
        Identification rate at rank k (``cmc[k-1]``) for each requested k (k > N is clipped to N).
    chance : dict int -> float
        ``k/N``, the rate of an attacker who guesses.
    cmc : ndarray of shape (N,)
    gamma : ndarray of shape (N,)
        Rank histogram.
    mean_rank : float
        Mean rank of the true speaker under the tie rule (chance: (N+1)/2).
    n_probes, n_speakers : int
    ties : str
    """

    rates: dict
    chance: dict
    cmc: np.ndarray = field(repr=False)
    gamma: np.ndarray = field(repr=False)
    mean_rank: float
    n_probes: int
    n_speakers: int
    ties: str

    def to_dict(self) -> dict:
        """JSON-ready dict (curves as lists)."""
        return {
            "ties": self.ties,
            "n_probes": self.n_probes,
            "n_speakers": self.n_speakers,
            "rates": {f"rank{k}": v for k, v in self.rates.items()},
            "chance": {f"rank{k}": v for k, v in self.chance.items()},
            "mean_rank": self.mean_rank,
            "cmc": self.cmc.tolist(),
            "gamma": self.gamma.tolist(),
        }


def identification_rates(
    score_matrix, true_index=None, ks=(1, 5, 10), ties: str = "fractional", *, chunk_rows=None
) -> IdentificationResult:
    """Rank-k identification rates with their chance levels k/N, CMC, rank histogram, mean rank.

    Parameters
    ----------
    score_matrix : array_like or dask.array of shape (n_probes, N), or RankCounts
    true_index : array_like of int, shape (n_probes,) (None with RankCounts)
    ks : iterable of int >= 1
        Ranks to report; a k above N is reported at N (rate 1, chance 1).
    ties : {"fractional", "optimistic", "pessimistic"}
    chunk_rows : int, optional

    Returns
    -------
    IdentificationResult

    Examples
    --------
    >>> r = identification_rates([[0.9, 0.5, 0.9], [0.1, 0.3, 0.2]], [0, 0], ks=(1, 2))
    >>> r.rates, r.chance
    ({1: 0.25, 2: 0.5}, {1: 0.3333333333333333, 2: 0.6666666666666666})
    """
    _check_ties(ties)
    counts = _counts(score_matrix, true_index, chunk_rows)
    n_cols = counts.n_speakers
    curve = counts.cmc(ties)
    rates, chance = {}, {}
    for k in ks:
        k = int(k)
        if k < 1:
            raise InvalidScoresError(f"ks: ranks start at 1, got {k}")
        kk = min(k, n_cols)
        rates[k] = float(curve[kk - 1])
        chance[k] = kk / n_cols
    return IdentificationResult(
        rates=rates,
        chance=chance,
        cmc=curve,
        gamma=counts.histogram(ties),
        mean_rank=float(counts.ranks(ties).mean()),
        n_probes=counts.n_probes,
        n_speakers=n_cols,
        ties=ties,
    )


# --------------------------------------------------------------------------------------------------------
# Closed-set linkability
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClosedSetLinkability:
    """Closed-set linkability as a function of the candidate-set size N'.

    Attributes
    ----------
    n_candidates : ndarray of int, shape (m,)
        Candidate-set sizes N' (the true speaker plus N' - 1 others).
    linkability : ndarray of float, shape (m,)
        P(true speaker outscores every other candidate) for each N'.
    chance : ndarray of float, shape (m,)
        ``1/N'``, the value for an uninformative attacker (uniform gamma).
    """

    n_candidates: np.ndarray
    linkability: np.ndarray
    chance: np.ndarray

    def to_dict(self) -> dict:
        return {
            "n_candidates": self.n_candidates.tolist(),
            "linkability": self.linkability.tolist(),
            "chance": self.chance.tolist(),
        }


def closed_set_linkability(gamma, n_candidates=None) -> ClosedSetLinkability:
    """Closed-set linkability / singling-out probability for random candidate sets (Vauquier et al.).

    The attacker is shown the true speaker together with ``N' - 1`` others drawn uniformly without
    replacement from the ``N - 1`` other enrolled speakers, and links the probe to the top-scoring
    candidate. If the true speaker has rank ``k`` among all N (strict order), it wins exactly when none of
    the ``k - 1`` speakers above it is drawn, a hypergeometric event::

        P(win | k, N') = C(N - k, N' - 1) / C(N - 1, N' - 1)
        L(N')          = sum_k gamma_k C(N - k, N' - 1) / C(N - 1, N' - 1)

    ``L(1) = 1``, ``L(N) = gamma_1`` (the rank-1 rate); a uniform gamma gives ``1/N'``.

    Ties: ``gamma`` carries the tie rule it was built with (:func:`rank_histogram`). With the
    ``"fractional"`` histogram the formula equals the probability under uniformly random tie-breaking
    *within the candidate set* (a tied block of e others, j of them drawn, wins with probability 1/(j+1)):
    averaging the strict-order formula over the uniformly spread tied ranks gives exactly that, by
    Vandermonde's identity. ``"optimistic"`` (ties won) and ``"pessimistic"`` (ties lost) histograms give
    the corresponding bounds.

    Parameters
    ----------
    gamma : array_like of shape (N,)
        Rank histogram (non-negative, summing to 1 within 1e-9).
    n_candidates : int or array_like of int, optional
        Candidate-set sizes N' in 1..N; default all of 1..N.

    Returns
    -------
    ClosedSetLinkability
        Probabilities (unitless, in [0, 1]) per N', with chance ``1/N'``.

    Raises
    ------
    InvalidScoresError
        gamma empty, negative, NaN or not summing to 1; N' outside 1..N.

    Notes
    -----
    Computed in O(N) per N' with the ratio recursion
    ``C(N-k, m+1)/C(N-1, m+1) = C(N-k, m)/C(N-1, m) * (N-k-m)/(N-1-m)``; all of 1..N costs O(N^2) time and
    O(N) memory.

    Examples
    --------
    >>> r = closed_set_linkability([0.5, 0.3, 0.2])
    >>> r.linkability.round(6).tolist()
    [1.0, 0.65, 0.5]
    """
    g = np.asarray(gamma, dtype=np.float64)
    if g.ndim != 1 or g.size == 0:
        raise InvalidScoresError(f"gamma: expected a non-empty 1-D array, got shape {g.shape}")
    if not np.isfinite(g).all() or (g < 0).any():
        raise InvalidScoresError("gamma: must be finite and non-negative")
    if abs(g.sum() - 1.0) > 1e-9:
        raise InvalidScoresError(f"gamma: must sum to 1, sums to {g.sum()!r}")
    n_cols = g.size
    if n_candidates is None:
        sizes = np.arange(1, n_cols + 1)
    else:
        sizes = np.atleast_1d(np.asarray(n_candidates))
        if sizes.dtype.kind not in "iu" or sizes.ndim != 1:
            raise InvalidScoresError("n_candidates: expected integers")
        if ((sizes < 1) | (sizes > n_cols)).any():
            raise InvalidScoresError(f"n_candidates: every N' must lie in 1..{n_cols}, got {sizes.tolist()}")
    wanted = {int(s) for s in sizes}
    top = max(wanted)
    out = {}
    k = np.arange(1, n_cols + 1, dtype=np.float64)
    h = np.ones(n_cols)  # m = 0 drawn others: the true speaker always wins
    for m in range(top):  # h holds C(N-k, m)/C(N-1, m)
        if m + 1 in wanted:
            out[m + 1] = min(float(g @ h), 1.0)
        if m + 1 < top:
            h *= np.maximum(n_cols - k - m, 0.0) / (n_cols - 1 - m)
    prob = np.array([out[int(s)] for s in sizes])
    return ClosedSetLinkability(sizes.astype(np.int64), prob, 1.0 / sizes)
