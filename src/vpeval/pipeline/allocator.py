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

:func:`small_pages` turns transparent huge pages off for the process (``prctl(PR_SET_THP_DISABLE)``, ``man 2
prctl``) when the user asks for it with ``VPEVAL_SMALL_PAGES=1`` in the environment; by default the pages are
left to the kernel and NumPy. NumPy asks the kernel for huge pages for every array of 4 MiB or more
(``madvise(MADV_HUGEPAGE)``, unless ``NUMPY_MADVISE_HUGEPAGE=0``), which on most machines saves page faults and
TLB misses. On the virtual machines vpeval is developed and tested on (2 cores, Linux 6.18, free pages handed back
to the host), a huge page that has not been touched since the host took it back costs about 10 ms a MiB on first
touch, and a 4 KiB page about 0.7 ms a MiB: ``python benchmarks/first_touch.py --pages`` measures both in fresh
processes, so that a user can see which kind of machine theirs is before opting in. The choice was measured on
that one kind of machine only, hence opt-in (issue 49).

The mmap threshold, by contrast, is raised by default: a fresh mapping's pages are zeroed by the kernel on first
touch on every Linux machine, so reusing freed blocks removes work everywhere; what it costs is memory kept in
the heap (up to the trim threshold) after a large temporary is freed.
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
#: ``prctl`` option (linux ``prctl.h``): 1 turns transparent huge pages off for the process and its children.
_PR_SET_THP_DISABLE = 41
#: The environment variable by which a user chooses NumPy's huge page advice: theirs wins.
_USER_PAGES = "NUMPY_MADVISE_HUGEPAGE"
#: The environment variable by which a user opts in to 4 KiB pages (``1``).
OPT_IN = "VPEVAL_SMALL_PAGES"


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


def small_pages() -> bool:
    """Back this process's new memory with 4 KiB pages instead of transparent huge pages (Linux), when the user
    opted in with ``VPEVAL_SMALL_PAGES=1``.

    Called once at the start of ``vpeval`` on the command line and of each ``--jobs`` worker, beside
    :func:`reuse_large_blocks`; a library user who wants the same sets the variable and calls it at the start of
    their own process. The setting is the kernel's ``PR_SET_THP_DISABLE`` (Linux >= 3.15): it holds for the
    memory the process faults in from then on, and child processes inherit it (``fork`` and ``exec``). Nothing
    happens unless ``VPEVAL_SMALL_PAGES`` is ``1`` (any other value, or none, leaves the pages to the kernel and
    NumPy), when the user has set ``NUMPY_MADVISE_HUGEPAGE`` (to either value: NumPy's own switch wins), off
    Linux, or where ``prctl`` refuses. Only where the pages come from changes: every result is the same.

    Returns
    -------
    bool
        Whether huge pages were turned off. Raises nothing.
    """
    if os.environ.get(OPT_IN, "").strip() != "1":
        return False
    if not sys.platform.startswith("linux") or _USER_PAGES in os.environ:
        return False
    try:
        prctl = ctypes.CDLL(None).prctl
    except (OSError, AttributeError):
        return False
    prctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong)
    prctl.restype = ctypes.c_int
    return prctl(_PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0
