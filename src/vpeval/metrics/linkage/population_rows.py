"""The row scans of :func:`~vpeval.metrics.linkage.population_curves`: every quantity that needs a probe's whole
row of scores, computed one block of rows at a time, in this process or on a Dask cluster
(:mod:`vpeval.rowscan`), with only per-row values and thinned impostor pools coming back.

Every value of a row depends on that row (and on the per-row draws handed to it) alone, so the blocks, their
order and where they run change no bit of the result: the curves from a matrix on a cluster equal those of the
same matrix in memory.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from ... import rowscan
from ...errors import InvalidScoresError

_LN2 = math.log(2.0)
#: Bytes of one block of rows of the matrix (a few such blocks are alive at once).
BLOCK_BYTES = 32 << 20


def block_rows(n_cols: int) -> int:
    """Rows per block of ``n_cols`` float64 columns: :data:`BLOCK_BYTES` worth, at least one."""
    return max(1, BLOCK_BYTES // (8 * n_cols))


def _row_sums(a: np.ndarray) -> np.ndarray:
    """Each row's sum, added left to right (a running sum: the same bits for equal rows wherever they lie in
    memory, which NumPy's vectorised sums do not promise)."""
    return np.cumsum(a, axis=1)[:, -1]


def _fingerprint_probe(n_cols: int) -> np.ndarray:
    return np.random.default_rng(20261206).random(n_cols)


def row_fingerprints(x: np.ndarray) -> np.ndarray:
    """One number per row of ``x`` (shape (n, N)), fixed by the row's values as a multiset: the dot product of
    its sorted values with a fixed pseudo-random vector, summed left to right, in blocks of rows. Rows alike as
    multisets get the same bits whatever the order of the columns; different rows differ but by accident. What
    orders the rows when the draws that follow go by row."""
    n, N = x.shape
    key = np.empty(n)
    step = block_rows(N)
    for a in range(0, n, step):
        key[a:a + step] = _block_fingerprints(np.asarray(x[a:a + step], dtype=np.float64))
    return key


def _block_fingerprints(x: np.ndarray) -> np.ndarray:
    """:func:`row_fingerprints` of one block of rows."""
    return _row_sums(np.sort(x, axis=1) * _fingerprint_probe(x.shape[1]))


def _constant_rows(x: np.ndarray) -> np.ndarray:
    """Rows whose values are all equal (compared, not through a standard deviation that rounding may leave
    above 0: a row of 0.1s has a mean that is not 0.1)."""
    return x.min(axis=1) == x.max(axis=1)


def _znorm_block(x: np.ndarray, start: int) -> np.ndarray:
    """The rows of one block z-normalised (:func:`row_zscores`); ``start``: the block's first global row."""
    const = _constant_rows(x)
    if const.any():
        raise InvalidScoresError(f"scores: row {start + int(np.flatnonzero(const)[0])} is constant (standard "
                                 "deviation 0)")
    srt = np.sort(x, axis=1)
    mean = _row_sums(srt) / x.shape[1]
    sd = np.sqrt(_row_sums((srt - mean[:, None]) ** 2) / (x.shape[1] - 1))
    return (x - mean[:, None]) / sd[:, None]


def row_zscores(scores) -> np.ndarray:
    """Every row z-normalised (sample standard deviation, as :func:`~vpeval.metrics.linkage.znorm_rows`), with
    the mean and standard deviation summed left to right over each row's sorted scores: rows alike as multisets
    get the same bits whatever the order of the columns, so that ties between rows in the pooled impostor
    scores do not hang on the input's column order.

    ``scores``: shape (n_probes, N), N >= 2, finite. Returns float64 of the same shape. Raises
    :class:`~vpeval.errors.InvalidScoresError` for another shape, a NaN or infinite score, or a constant row.
    (:func:`~vpeval.metrics.linkage.population_curves` with ``znorm=True`` does the same block by block, without
    a second matrix.)"""
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] < 2:
        raise InvalidScoresError(f"scores: expected a 2-D array with at least 2 columns, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise InvalidScoresError("scores: must be finite")
    out = np.empty(x.shape)
    step = block_rows(x.shape[1])
    for a in range(0, x.shape[0], step):
        out[a:a + step] = _znorm_block(x[a:a + step], a)
    return out


def sorted_impostors(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Each row's ``N - 1`` impostor scores (its true column left out), ascending: a new (rows, N - 1) array."""
    y = np.array(x, dtype=np.float64)
    y[np.arange(y.shape[0]), t] = np.inf  # the true column sorts last
    y.sort(axis=1)
    return y[:, :-1]


#: A row's status in the first scan (its last column): usable, or why not. The client raises for the lowest bad
#: row, so that the error names the same row wherever the blocks were scanned and whichever failed first.
OK, NOT_FINITE, CONSTANT, OVERFLOW = 0.0, 1.0, 2.0, 3.0


def _first_pass(start: int, block: np.ndarray, t: np.ndarray, w: np.ndarray, *, znorm: bool) -> np.ndarray:
    """Per row: fingerprint, true score, others strictly above it, others tied with it, and its status (shape
    (rows, 5)); the values of rows that are not :data:`OK` are meaningless."""
    status = np.where(np.isfinite(block).all(axis=1), OK, NOT_FINITE)
    if znorm:
        status[(status == OK) & _constant_rows(np.where(np.isfinite(block), block, 0.0))] = CONSTANT
    x = np.where((status == OK)[:, None], block, 0.0)
    if znorm:
        x[status != OK] = np.arange(x.shape[1])  # any row that z-normalises; its values are not used
        x = _znorm_block(x, start)
    with np.errstate(over="ignore", invalid="ignore"):
        status[(status == OK) & ~np.isfinite(np.abs(x).max(axis=1) * np.abs(w))] = OVERFLOW  # slope x score
    g = x[np.arange(x.shape[0]), t]
    above = (x > g[:, None]).sum(axis=1)
    tied = (x == g[:, None]).sum(axis=1) - 1
    return np.column_stack([_block_fingerprints(x), g, above, tied, status]).astype(np.float64)


def lid_of_sets(x: np.ndarray, t: np.ndarray, w: np.ndarray, perms, shifts: np.ndarray, sizes) -> np.ndarray:
    """LID (bits) of rows ``x`` at each size, averaged over the nested sets of others given by ``perms`` (one
    permutation of ``0 .. N-2`` per set) shifted cyclically by each row's ``shifts`` (shape (rows, len(perms))):
    set ``k`` of size ``s`` is the first ``s - 1`` entries of ``(perms[k] + shifts[:, k]) % (N - 1)`` as positions
    of the row's sorted impostors. LLRs ``w[i] * x[i]``. Shape (rows, len(sizes))."""
    N = x.shape[1]
    out = np.zeros((x.shape[0], len(sizes)))
    g = x[np.arange(x.shape[0]), t] * w
    imp = sorted_impostors(x, t) * w[:, None]
    for k, perm in enumerate(perms):
        xp = np.take_along_axis(imp, (perm[None, :] + shifts[:, k, None]) % (N - 1), axis=1)
        top = np.maximum(xp.max(axis=1), g)
        cs = np.cumsum(np.exp(xp - top[:, None]), axis=1)
        for j, size in enumerate(sizes):
            total = cs[:, size - 2] + np.exp(g - top)  # size >= 2: size - 1 others
            with np.errstate(divide="ignore"):  # log(0) where the set underflowed: summed again below
                lse = top + np.log(total)
            low = total < _UNDERFLOW  # the set lies so far below the row's top that its terms underflow
            if low.any():  # there, the set's own largest LLR as the reference
                pre = xp[low, :size - 1]
                ref = np.maximum(pre.max(axis=1), g[low])
                lse[low] = ref + np.log(np.exp(pre - ref[:, None]).sum(axis=1) + np.exp(g[low] - ref))
            out[:, j] += (math.log(size) + g - lse) / _LN2
    return out / len(perms)


#: Below this, a sum of likelihood ratios scaled by the row's largest has lost its precision to underflow
#: (terms of ``exp(-708)`` and less); those sets are summed again against their own largest.
_UNDERFLOW = 1e-290


def _second_pass(start: int, block: np.ndarray, t, w, shifts, check_shift, *, znorm: bool, perms, sizes,
                 step: int, check_choice, check_step: int):
    """Per block: the measured LID at ``sizes`` (rows, len(sizes)), the block's share of the impostor pool (every
    ``step``-th sorted impostor of each row, from ``step // 2``) and of the check's pool (the same over the
    positions ``check_choice`` shifted by each row's ``check_shift``; None without a check). The rows passed the
    first scan."""
    x = _znorm_block(block, start) if znorm else block
    lid = lid_of_sets(x, t, w, perms, shifts, sizes) if len(sizes) else np.empty((x.shape[0], 0))
    imp = sorted_impostors(x, t)
    pool = imp[:, step // 2::step].ravel()
    chk = None
    if check_choice is not None:
        pos = (check_choice[None, :] + check_shift[:, None]) % (x.shape[1] - 1)
        chk = np.sort(np.take_along_axis(imp, pos, axis=1), axis=1)[:, check_step // 2::check_step].ravel()
    return lid, pool, chk


def first_pass(arr, n: int, ti: np.ndarray, w: np.ndarray, znorm: bool):
    """Per row of ``arr`` (validated by :mod:`vpeval.rowscan`, maybe on a cluster): fingerprint, true score,
    others above, others tied (four arrays of shape (n,); the counts as int64).

    Raises :class:`~vpeval.errors.InvalidScoresError` naming the lowest row with a NaN or infinite score, a
    constant row (``znorm``), or a slope times a score beyond float64."""
    rows = block_rows(arr.shape[1])
    out = rowscan._map_rows(arr, n, rows, partial(_first_pass, znorm=znorm), ti, w)
    bad = np.flatnonzero(out[:, 4] != OK)
    if bad.size:
        i = int(bad[0])
        why = {NOT_FINITE: "a NaN or infinite score", CONSTANT: "every score equal (standard deviation 0: it "
               "cannot be z-normalised)", OVERFLOW: f"a score that times its slope {w[i]:g} exceeds float64"}
        raise InvalidScoresError(f"scores: must be finite and usable: probe row {i} has {why[out[i, 4]]}")
    return out[:, 0], out[:, 1], out[:, 2].astype(np.int64), out[:, 3].astype(np.int64)


def second_pass(arr, n: int, ti, w, shifts, perms, sizes, max_pool: int, znorm: bool, check_choice=None,
                check_shift=None):
    """The measured LID of every row (n, len(sizes)), the sorted impostor pool (each row thinned to every ``s``-th
    of its sorted impostors, ``s`` the smallest step that keeps the pool within ``max_pool``) and the check's
    sorted pool (the same over its positions; None without ``check_choice``)."""
    N = arr.shape[1]
    rows = block_rows(N)
    step = max(1, math.ceil(n * (N - 1) / max_pool))
    check_step = 1 if check_choice is None else max(1, math.ceil(n * check_choice.size / max_pool))
    cs = np.zeros(n, dtype=np.int64) if check_shift is None else check_shift
    fn = partial(_second_pass, znorm=znorm, perms=perms, sizes=[int(s) for s in sizes], step=step,
                 check_choice=check_choice, check_step=check_step)
    lids, pools, checks = [], [], []
    for lid, pool, chk in rowscan._map_pieces(arr, n, rows, fn, ti, w, shifts, cs):
        lids.append(lid)
        pools.append(pool)
        checks.append(chk)
    return (np.concatenate(lids), np.sort(np.concatenate(pools)),
            None if check_choice is None else np.sort(np.concatenate(checks)))
