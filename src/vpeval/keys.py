"""String keys (speaker, model, probe ids) as integer codes in sorted-name order.

:func:`sorted_codes` returns what ``np.unique(values, return_inverse=True)`` returns, by hashing (pandas'
``factorize``) instead of sorting every entry: a million ids of a thousand speakers take about a quarter of
NumPy's time, since only the distinct names are sorted. The codes keep the names' order (code ``i`` < code
``j`` iff name ``i`` < name ``j``, Unicode code-point order as NumPy and Python compare strings), so a
lexicographic sort over codes orders trials exactly as one over the strings would."""

from __future__ import annotations

import threading

import numpy as np


def sorted_codes(values) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct strings and the index of every entry among them.

    Parameters
    ----------
    values : array-like of str, any shape
        Keys; non-string entries are converted with ``str`` first (as ``np.asarray(values, dtype=str)`` does).

    Returns
    -------
    names : ndarray of str, shape (U,)
        The distinct keys, sorted in Unicode code-point order.
    codes : ndarray of int64, shape (n,)
        ``names[codes]`` equals the flattened ``values``; ``np.unique(values, return_inverse=True)`` gives the
        same two arrays (tested).

    Raises nothing. Empty input gives two empty arrays. O(n) expected time for hashing plus O(U log U) to sort
    the distinct keys; O(n) memory. For a read-only string array that owns its data the result is remembered
    while the array lives; for other string arrays of :data:`CONTENT_MEMO_SIZES` entries it is remembered by
    their contents (a SHA-256 digest of dtype, shape and bytes, about 15 times cheaper than the hashing of
    every entry), for the last :data:`CONTENT_MEMO_ENTRIES` of them within :data:`CONTENT_MEMO_BYTES`: the
    trials and probe speakers a worker process unpickles afresh for every job of an audit are the same few
    arrays. Remembered results are returned
    read-only (the same two arrays to every caller).
    """
    if isinstance(values, np.ndarray) and values.dtype.kind == "U":
        if not values.flags.writeable and values.flags.owndata:
            return while_it_lives(_memo, values, _sorted_codes)
        if CONTENT_MEMO_SIZES[0] <= values.size <= CONTENT_MEMO_SIZES[1]:
            return _by_content(values)
    return _sorted_codes(values)


#: Sizes of the string arrays whose codes are remembered by content (smaller ones cost less to factorise than
#: to look up; larger ones would hold much memory).
CONTENT_MEMO_SIZES = (256, 1 << 18)
#: String arrays remembered by content, and the bytes their results may hold (names and codes) in all; the least
#: recently used are dropped first.
CONTENT_MEMO_ENTRIES = 64
CONTENT_MEMO_BYTES = 32 << 20


def _by_content(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    import hashlib

    c = np.ascontiguousarray(values)
    key = (c.dtype.str, c.shape, hashlib.sha256(c.reshape(-1).view(np.uint8)).digest())
    with _content_lock:
        got = _content_memo.pop(key, None)
    if got is None:
        got = _sorted_codes(c)
        for x in got:
            x.flags.writeable = False
    with _content_lock:  # threads of one process may ask at once (the readers' threads)
        _content_memo[key] = got  # the most recent last
        held = sum(a.nbytes + b.nbytes for a, b in _content_memo.values())
        while len(_content_memo) > CONTENT_MEMO_ENTRIES or (len(_content_memo) > 1 and held > CONTENT_MEMO_BYTES):
            a, b = _content_memo.pop(next(iter(_content_memo)))
            held -= a.nbytes + b.nbytes
    return got


def _sorted_codes(values) -> tuple[np.ndarray, np.ndarray]:
    import pandas as pd

    v = np.asarray(values, dtype=str).reshape(-1)
    if v.size == 0:
        return np.empty(0, dtype=v.dtype), np.empty(0, dtype=np.int64)
    codes, uniq = pd.factorize(v, sort=True)
    return np.asarray(uniq, dtype=v.dtype), codes.astype(np.int64, copy=False)


def same_keys(a, b) -> bool:
    """Whether two key arrays (or None) hold the same keys in the same order: ``numpy.array_equal``, answered at
    once for the same object (the trials of one protocol share their key arrays: comparing megabytes of names
    element by element, per attacker and trial type, cost a second of an audit)."""
    return a is b or bool(np.array_equal(a, b))


def while_it_lives(memo: dict, a, compute):
    """``compute(a)``, remembered in ``memo`` while ``a`` lives when ``a`` is a read-only array that owns its data
    (its contents cannot change: e.g. the trials' shared key arrays, asked for by every attacker of a system);
    computed every time otherwise. Remembered arrays in the result are made read-only: every caller gets the same
    ones."""
    if not (isinstance(a, np.ndarray) and not a.flags.writeable and a.flags.owndata):
        return compute(a)
    return while_alive(memo, a, compute, read_only=True)


def while_alive(memo: dict, obj, compute, read_only: bool = False):
    """``compute(obj)``, remembered in ``memo`` (keyed by ``id(obj)``) while ``obj`` lives; for objects whose
    contents do not change once made (the caller's promise). With ``read_only``, arrays in the result are made
    read-only (every caller gets the same ones). ``obj`` must accept weak references."""
    import weakref

    got = memo.get(id(obj))
    if got is not None and got[0]() is obj:
        return got[1]
    out = compute(obj)
    if read_only:
        for x in (out if isinstance(out, tuple) else (out,)):
            if isinstance(x, np.ndarray):
                x.flags.writeable = False
    key = id(obj)
    # the dict bound, not looked up: at interpreter exit the module's globals may be gone
    memo[key] = (weakref.ref(obj, lambda _, k=key, m=memo: m.pop(k, None)), out)
    return out


#: id -> (weak reference, (names, codes)) of read-only string arrays that own their data (e.g. the trials' shared
#: key arrays, whose distinct names every attacker, bootstrap and chance floor of a system asks for)
_memo: dict = {}
#: (dtype, shape, digest) -> (names, codes), read-only, of string arrays remembered by content, least recent first
_content_memo: dict = {}
_content_lock = threading.Lock()
