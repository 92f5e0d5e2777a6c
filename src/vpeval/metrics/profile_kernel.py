"""The privacy profile's hot loops (:mod:`vpeval.metrics.profile`) as plain loops that numba compiles
(:func:`vpeval.jit.compiled`): one Dinkelbach step's best region, and the dominance counts' window passes (every
start, every stride-th start, starts chosen by count), beside the NumPy path of the last (:func:`read_by_count`,
:func:`start_at_table`). Each gives the same numbers as the NumPy path it replaces (the same float operations in
the same order; tests/test_profile_eps.py checks both paths against each other), only without the temporaries: on
1e7 trials the profile went from seconds per pass to a fraction (BENCHMARKS.md).
"""

from __future__ import annotations

import threading

import numpy as np

from ..jit import compiled

__all__ = ["best_region", "window_max", "compiled_best_region", "compiled_window_max", "JIT_MIN_BLOCKS",
           "read_by_count", "start_at_table", "fill_counts", "compiled_fill_counts", "load_in_background", "load_ahead",
           "LOAD_AHEAD_BYTES", "run_passes", "help_with_passes"]

#: Inputs of at least this many tie blocks use the compiled loops (when numba is installed): below it, importing
#: numba (about 0.4 s a process) costs more than the loops save.
JIT_MIN_BLOCKS = 200_000


def best_region(p, q, x, out):
    """One Dinkelbach step over intervals and complements: ``max over A of p(A) - x q(A)``.

    ``p``, ``q``: float64 per-block shares, shape (K,); ``x``: the current ratio. With ``c`` the prefix sums of
    ``p - x q`` (``c[0] = 0``), writes ``out = (v_in, i_in, j_in, v_out, i_out, j_out)``: the best interval
    ``c[j] - c[i]`` (``j`` the first maximiser of ``c[j] - min(c[:j + 1])``, ``i`` the first minimiser of
    ``c[:j + 1]``) and the best complement ``c[K] - (c[j] - c[i])`` (``j`` the first minimiser of
    ``c[j] - max(c[:j + 1])``, ``i`` the first maximiser of ``c[:j + 1]``): the ties resolved as ``numpy.argmax``
    and ``numpy.argmin`` resolve them in the NumPy path.
    """
    c = 0.0
    lo, lo_i, hi, hi_i = 0.0, 0, 0.0, 0
    best_in, bi, bj = 0.0, 0, 0  # j = 0: c[0] - lo[0] = 0
    best_out_run, oi, oj = 0.0, 0, 0  # c[0] - hi[0] = 0
    for j in range(1, p.size + 1):
        c = c + (p[j - 1] - x * q[j - 1])
        if c < lo:
            lo, lo_i = c, j
        if c > hi:
            hi, hi_i = c, j
        d_in = c - lo
        if d_in > best_in:
            best_in, bi, bj = d_in, lo_i, j
        d_out = c - hi
        if d_out < best_out_run:
            best_out_run, oi, oj = d_out, hi_i, j
    out[0] = best_in
    out[1] = bi
    out[2] = bj
    out[3] = c - best_out_run
    out[4] = oi
    out[5] = oj


_BEST_SIGNATURE = "void(float64[::1], float64[::1], float64, float64[::1])"


def compiled_best_region():
    """:func:`best_region` compiled by numba, or None (numba missing, failing, or ``VPEVAL_JIT=0``)."""
    return compiled(best_region, _BEST_SIGNATURE)


def window_max(cpq, first, p_start, ks, n_q, out):
    """For each count ``ks[r]``: ``max over s of cpq[min(first[s] + k, n_q)] - p_start[s]``, written to
    ``out[r]`` (int64): the most numerator trials in an interval starting at start ``s`` and holding at most
    ``k`` denominator trials (:func:`vpeval.metrics.profile._dominance`, every start read)."""
    m = ks.size
    for r in range(m):
        out[r] = -1
    # the leading run of consecutive counts (0, 1, 2, ... as the grid starts) reads one contiguous slice of cpq
    # per start: a loop the compiler vectorises, for every start whose windows all end below n_q
    run = 1 if m else 0
    while run < m and ks[run] == ks[run - 1] + 1:
        run += 1
    k0 = ks[0] if m else 0
    kmax = ks[m - 1] if m else 0
    for s in range(first.size):
        f, base = first[s], p_start[s]
        if f + kmax < n_q:
            lo = f + k0
            for r in range(run):
                v = cpq[lo + r] - base
                out[r] = v if v > out[r] else out[r]
            for r in range(run, m):
                v = cpq[f + ks[r]] - base
                if v > out[r]:
                    out[r] = v
        else:
            for r in range(m):
                e = f + ks[r]
                v = cpq[e if e < n_q else n_q] - base
                if v > out[r]:
                    out[r] = v


#: ``cpq`` int64 or int32 (:func:`vpeval.metrics.profile._dominance` holds it as int32 from 2**20 trials on)
_WINDOW_SIGNATURE = ["void(int64[::1], int64[::1], int64[::1], int64[::1], int64, int64[::1])",
                     "void(int32[::1], int64[::1], int64[::1], int64[::1], int64, int64[::1])"]


def compiled_window_max():
    """:func:`window_max` compiled by numba, or None (numba missing, failing, or ``VPEVAL_JIT=0``)."""
    return compiled(window_max, _WINDOW_SIGNATURE)


def window_max_strided(cpq, first, p_start, ks, stride, n_q, lo, hi):
    """The interval counts of the counts ``ks`` (one stride for all) read at every ``stride``-th start
    (:func:`vpeval.metrics.profile._dominance`): ``lo[j]`` the best of those windows of ``ks[j]``
    (``max cpq[min(first[s] + k, n_q)] - p_start[s]``, attained), ``hi[j]`` the best of them given ``g`` more
    denominator trials, ``g`` the most denominator trials between two read starts (``n_q`` closing the last): an
    upper value for every window. One pass over the starts for all the counts."""
    gap = 0
    s = 0
    while s < first.size:
        nxt = first[s + stride] if s + stride < first.size else n_q
        if nxt - first[s] > gap:
            gap = nxt - first[s]
        s += stride
    for j in range(ks.size):
        lo[j] = -1
        hi[j] = -1
    s = 0
    while s < first.size:
        f, base = first[s], p_start[s]
        for j in range(ks.size):
            e = f + ks[j]
            v = cpq[e if e < n_q else n_q] - base
            if v > lo[j]:
                lo[j] = v
            e = e + gap
            v = cpq[e if e < n_q else n_q] - base
            if v > hi[j]:
                hi[j] = v
        s += stride


_STRIDED_SIGNATURE = [f"void({c}[::1], int64[::1], int64[::1], int64[::1], int64, int64, int64[::1], int64[::1])"
                      for c in ("int64", "int32")]


def compiled_window_max_strided():
    """:func:`window_max_strided` compiled by numba, or None (numba missing, failing, or ``VPEVAL_JIT=0``)."""
    return compiled(window_max_strided, _STRIDED_SIGNATURE)


def start_at_table(first: np.ndarray) -> np.ndarray:
    """``start_at[q]``: the first start whose ``first`` is at least ``q``, for ``q = 0 .. first[-1]`` (``first``
    strictly increasing from 0): one repeat, int32 below 2**31 starts."""
    idx = np.int32 if first.size < 2 ** 31 else np.int64
    return np.repeat(np.arange(first.size, dtype=idx), np.diff(first, prepend=-1))


def read_by_count(cpq, first, p_start, start_at, k: int, step: int, n_q: int) -> tuple[int, int]:
    """The interval counts of one count ``k`` (:func:`vpeval.metrics.profile._dominance`) read at the starts chosen by
    count: the first start at or above every multiple of ``step`` denominator trials, and the last start. Returns
    ``(low, high)``: the best of the windows read (attained), and the best of them each given ``g`` more denominator
    trials, ``g`` the denominator trials from the read start to the last unread start before the next read one (below
    ``step``: an unread start lies below the next multiple of ``step`` above its read start's, whatever the tie blocks
    between). A window from an unread start holds no more numerator trials than the window of ``k + g`` from the read
    start before it (it starts no lower and ends no higher), so ``high`` is an upper value for every window."""
    reads = start_at[0:n_q + 1:step]
    keep = np.empty(reads.size, dtype=bool)
    keep[0] = True
    np.not_equal(reads[1:], reads[:-1], out=keep[1:])
    reads = reads[keep].astype(np.int64)
    if reads[-1] != first.size - 1:
        reads = np.r_[reads, first.size - 1]
    nxt = reads[1:]
    g = np.zeros(reads.size, dtype=np.int64)
    g[:-1] = np.where(nxt > reads[:-1] + 1, first[nxt - 1] - first[reads[:-1]], 0)
    f, ps = first[reads], p_start[reads]
    low = int((cpq[np.minimum(f + k, n_q)] - ps).max())
    return low, int((cpq[np.minimum(f + k + g, n_q)] - ps).max())


def window_max_by_count(cpq, first, p_start, start_at, ks, step, n_q, lo, hi):
    """:func:`read_by_count` of the counts ``ks`` (one ``step`` for all) in one pass over the multiples of ``step``
    (each read start is ``start_at`` of the first multiple whose start differs from the last read one; the next read
    start gives its gap), without their arrays: ``lo[j]`` the best window of ``ks[j]`` read (attained), ``hi[j]`` the
    best of them given each one's gap (the same numbers). The multiples are visited in order, so the loads of one read
    do not wait for those of the read before it (the earlier loop found each read from the last one's ``first``: one
    chain of dependent cache misses), and the counts that share a step share the pass (their windows end close together:
    mostly the same cache lines)."""
    last = first.size - 1
    for j in range(ks.size):
        lo[j] = -1
        hi[j] = -1
    r = start_at[0]
    q = step
    while True:
        nxt = last if r != last else -1
        while q <= n_q:
            c = start_at[q]
            q += step
            if c != r:
                nxt = c
                break
        g = first[nxt - 1] - first[r] if nxt > r + 1 else 0
        f, base = first[r], p_start[r]
        for j in range(ks.size):
            e = f + ks[j]
            v = cpq[e if e < n_q else n_q] - base
            if v > lo[j]:
                lo[j] = v
            e = e + g
            v = cpq[e if e < n_q else n_q] - base
            if v > hi[j]:
                hi[j] = v
        if nxt < 0:
            break
        r = nxt


_BY_COUNT_SIGNATURE = [f"void({c}[::1], int64[::1], int64[::1], {s}[::1], int64[::1], int64, int64, int64[::1], "
                       "int64[::1])" for c in ("int64", "int32") for s in ("int32", "int64")]


def compiled_window_max_by_count():
    """:func:`window_max_by_count` compiled by numba, or None (numba missing, failing, or ``VPEVAL_JIT=0``)."""
    return compiled(window_max_by_count, _BY_COUNT_SIGNATURE)


def fill_counts(cp, cq, cpq, suf, first, start_at):
    """The per-trial arrays of :func:`vpeval.metrics.profile._dominance` written in one pass over the blocks, without
    the repeat counts and repeated values NumPy's ``repeat`` needs (about 95 MB per class order at 1e7 trials).

    ``cp``, ``cq``: int64 prefix counts of the numerator and denominator classes over the K blocks, shape (K + 1,);
    ``n_p = cp[K]``, ``n_q = cq[K]``. Writes ``cpq[t] = cp[b]`` for denominator trial ``t`` of block ``b``
    (``t < n_q``) and ``cpq[n_q] = n_p``; ``suf[n_q - 1 - t] = n_p - cp[b + 1]`` and ``suf[n_q] = n_p``; and,
    unless ``start_at`` has size 0, ``start_at[q]`` the first index ``s`` of ``first`` (strictly increasing from
    0) with ``first[s] >= q``, for ``q = 0 .. first[-1]``: the same numbers as the NumPy path's repeats."""
    n_q = cq[cq.size - 1]
    n_p = cp[cp.size - 1]
    t = 0
    for b in range(cp.size - 1):
        v, w = cp[b], n_p - cp[b + 1]
        for _ in range(cq[b + 1] - cq[b]):
            cpq[t] = v
            suf[n_q - 1 - t] = w
            t += 1
    cpq[n_q] = n_p
    suf[n_q] = n_p
    if start_at.size:
        q = 0
        for s in range(first.size):
            while q <= first[s]:
                start_at[q] = s
                q += 1


_FILL_SIGNATURE = [f"void(int64[::1], int64[::1], {c}[::1], {c}[::1], int64[::1], {s}[::1])"
                   for c in ("int64", "int32") for s in ("int32", "int64")]


def compiled_fill_counts():
    """:func:`fill_counts` compiled by numba, or None (numba missing, failing, or ``VPEVAL_JIT=0``)."""
    return compiled(fill_counts, _FILL_SIGNATURE)


class _Passes:
    """The compiled passes of one dominance computation (:func:`run_passes`), taken one at a time by its own thread
    and by any thread that calls :func:`help_with_passes`; an error is kept for the owner."""

    def __init__(self, tasks: list):
        self.tasks, self.next, self.left, self.error = tasks, 0, len(tasks), None
        self.cond = threading.Condition()

    def work(self) -> bool:
        did = False
        while True:
            with self.cond:
                if self.next >= len(self.tasks):
                    return did
                task = self.tasks[self.next]
                self.next += 1
            try:
                task()
            except BaseException as exc:  # noqa: BLE001 - raised by the owner (run_passes), whoever ran it
                self.error = self.error or exc
            with self.cond:
                self.left -= 1
                if self.left == 0:
                    self.cond.notify_all()
            did = True


_ACTIVE: list = []  # the _Passes in progress (any thread)
_ACTIVE_LOCK = threading.Lock()


def run_passes(tasks: list) -> None:
    """Run ``tasks`` (callables without arguments, each writing its own rows of the caller's output arrays) in this
    thread, while a thread that calls :func:`help_with_passes` runs some of them too (the compiled loops release the
    GIL); return when all are done, raising the first error any of them raised. The same outputs whoever runs
    which pass: the verdict's main thread, done with its test, takes passes of the profile thread's second class
    order instead of waiting for it."""
    passes = _Passes(tasks)
    with _ACTIVE_LOCK:
        _ACTIVE.append(passes)
    try:
        passes.work()
        with passes.cond:
            while passes.left:
                passes.cond.wait()
    finally:
        with _ACTIVE_LOCK:
            _ACTIVE.remove(passes)
    if passes.error is not None:
        raise passes.error


def help_with_passes() -> bool:
    """Run passes of the dominance computations in progress in other threads (:func:`run_passes`); whether any
    was run."""
    with _ACTIVE_LOCK:
        active = list(_ACTIVE)
    return any([p.work() for p in active])


#: Score inputs of at least this many bytes (about 7e5 `score label` lines) load the compiled loops while they are
#: read (:func:`load_ahead`): their tie blocks are then likely to reach :data:`JIT_MIN_BLOCKS`.
LOAD_AHEAD_BYTES = 8 << 20


def load_ahead(n_bytes: int):
    """:func:`load_in_background` for a score input of ``n_bytes`` bytes (its thread), when at least
    :data:`LOAD_AHEAD_BYTES` and no address-space limit is set (:func:`vpeval.jit.address_space_limited`: numba
    crashed or raised in the thread under ``ulimit -v``; the profile then loads its loops itself, where a
    failure is the command's to report); else None."""
    from ..jit import address_space_limited

    return load_in_background() if n_bytes >= LOAD_AHEAD_BYTES and not address_space_limited() else None


def load_in_background():
    """Start loading every compiled loop of this module (importing numba, compiling or reading numba's cache:
    about 0.8 s in a fresh process) in a thread, and return it: a command that will compute the profile of a
    large score file overlaps that with reading and sorting the file (pyarrow and NumPy release the GIL), and
    the profile's first call of a loop then finds it loaded (:func:`vpeval.jit.compiled` holds a lock). Not a
    daemon thread: a process ending early waits for it rather than ending inside an import."""
    import threading

    def load():
        try:
            for get in (compiled_fill_counts, compiled_window_max, compiled_window_max_by_count,
                        compiled_window_max_strided, compiled_best_region):
                get()
        except Exception:  # noqa: BLE001 - e.g. MemoryError importing numba: the profile's own call tries again
            pass

    t = threading.Thread(target=load, name="vpeval-jit")
    t.start()
    return t
