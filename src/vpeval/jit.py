"""Optional compilation of vpeval's few hot loops with numba (``pip install 'vpeval[fast]'``; the ``test`` extra
lists numba, and the ``audio`` and ``embed`` extras bring it through librosa).

:func:`compiled` returns a loop compiled with numba, or None when numba is not installed, cannot compile here,
or the environment variable ``VPEVAL_JIT=0`` is set: every caller then has a NumPy path giving the same results
(each kernel's module says how exactly). A function is compiled once per process, eagerly for its one
signature, releasing the GIL, and cached on disk by numba (``cache=True``: beside its module or in numba's user
cache folder; no cache when neither is writable). The first use in a process imports numba (about 0.4 s), so
callers use their kernel only for inputs large enough to repay that.
"""

from __future__ import annotations

import os
import threading
from typing import Callable

__all__ = ["compiled", "jit_enabled", "address_space_limited"]

_LOCK = threading.Lock()
_DONE: dict = {}  # function -> compiled function or None (tried once per process)


def jit_enabled() -> bool:
    """False when ``VPEVAL_JIT=0`` is set (use the NumPy paths)."""
    return os.environ.get("VPEVAL_JIT", "1").strip() != "0"


def compiled(fn: Callable, signature) -> Callable | None:
    """``fn`` compiled by numba for ``signature`` (one string, or a list of them; nopython, ``nogil``, no bounds
    checks), or None (see the module docstring). Raises nothing."""
    with _LOCK:
        if fn not in _DONE:
            _DONE[fn] = _compile(fn, signature)
        return _DONE[fn]


def _compile(fn: Callable, signature: str) -> Callable | None:
    if not jit_enabled():
        return None
    try:
        import numba
    except ImportError:
        return None
    for cache in (True, False):  # no cache where neither the module's folder nor numba's user cache is writable
        try:
            return numba.njit(signature, nogil=True, cache=cache, boundscheck=False)(fn)
        except Exception:  # noqa: BLE001 - any failure to compile means: use the NumPy path
            continue
    return None


def address_space_limited() -> bool:
    """Whether the process runs under an address-space limit (``ulimit -v``) or a data-size limit (``ulimit -d``,
    which counts the memory malloc maps as well on Linux): libraries that reserve address space in large segments
    (pyarrow's allocator, numba's compiler) may then abort the process, or raise from a helper thread where the
    command cannot report it as running out of memory; their callers take a plainer path (a breaker's find: under
    ``ulimit -d`` numba's compiler aborted in the profile's thread, 'LLVM ERROR: Unable to allocate section
    memory')."""
    try:
        import resource
    except ImportError:
        return False
    return any(resource.getrlimit(r)[0] != resource.RLIM_INFINITY for r in (resource.RLIMIT_AS, resource.RLIMIT_DATA))
