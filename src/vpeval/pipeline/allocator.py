"""The C allocator's thresholds for vpeval's own processes (the command line and the ``--jobs`` workers).

glibc's ``malloc`` hands every block above its mmap threshold (at most 32 MiB, raised dynamically from 128 KiB)
straight to the kernel and back on ``free``: a NumPy temporary of 5e6 doubles (40 MB) is then a fresh mapping
whose every 4 KiB page is faulted in and zeroed by the kernel, each time it is allocated. The perfect-secrecy
test on 1e7 trials allocates such temporaries for every relabelling: ``python benchmarks/allocator.py`` measured
(2026-12-02, idle) 2.13 million page faults and 19.3 s of system time in a 63.8 s verdict, and with the thresholds
below 0.05 million faults, 1.5 s of system time, 46.4 s, peak RSS 989 MiB instead of 911.

:func:`reuse_large_blocks` raises the mmap threshold to 256 MiB and the trim threshold to 512 MiB
(``mallopt(M_MMAP_THRESHOLD)``, ``mallopt(M_TRIM_THRESHOLD)``, ``man 3 mallopt``), so freed temporaries stay in
the heap and are reused without faults. Only the allocator's bookkeeping changes: every result is the same.
"""

from __future__ import annotations

import ctypes
import os
import sys

#: ``mallopt`` parameters (glibc ``malloc.h``).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 256 << 20
TRIM_THRESHOLD_BYTES = 512 << 20
#: Environment variables by which a user sets these thresholds: theirs wins.
_USER_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES")


def reuse_large_blocks() -> bool:
    """Keep freed blocks of up to 256 MiB in this process's heap (glibc on Linux; elsewhere nothing happens).

    Called once at the start of ``vpeval`` on the command line and of each ``--jobs`` worker; a library user
    who wants the same calls it at the start of their own process. It leaves the allocator alone when the
    user has set its thresholds (``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_`` or ``GLIBC_TUNABLES``
    in the environment), and where ``mallopt`` is missing (macOS, Windows) or refuses a value.

    Returns
    -------
    bool
        Whether both thresholds were set. Raises nothing.
    """
    if not sys.platform.startswith("linux") or any(v in os.environ for v in _USER_SETTINGS):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    # mmap first: setting it fixes the threshold (glibc stops adjusting it dynamically)
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(mallopt(_M_TRIM_THRESHOLD,
                                                                                   TRIM_THRESHOLD_BYTES))
