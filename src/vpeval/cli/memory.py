"""How much memory a command may use, and how much reading a score input needs (issue 48: check the estimate
before starting, name it when the memory runs out).

The estimate is a measurement, not a bound: the peak resident memory of ``vpeval verify`` with its verdict grew by
about :data:`BYTES_PER_INPUT_BYTE` bytes per byte of score file, on top of :data:`BASE_BYTES` (``score label`` files
of 1e6, 3e6 and 1e7 lines, 11 to 113 MB: 0.39, 0.60 and 1.11 GB; a Kaldi key + score pair of 1e7 trials, 2 x 280 MB:
3.9 GB; BENCHMARKS.md). ``vpeval report`` drew about half as much again for its figures. Longer lines (ids)
need fewer bytes per byte, so the estimate errs high for Kaldi files. Those figures are the main process's own:
from about 1e6 trials (:data:`WORKERS_FROM_BYTES`) ``verify`` also starts its ``--jobs`` workers, which hold about
:data:`WORKERS_BYTES_PER_INPUT_BYTE` bytes per byte on top of :data:`WORKERS_BASE_BYTES` together (1e7 and 1e8
lines, 106 and 1,063 MiB: 688 and 3,326 MiB; BENCHMARKS.md, "The verdict's memory, per process"); they count
against the machine's and the control group's room, not against the address-space limit, which is per process.

The room: what the machine has available now (``MemAvailable``) and what the process's control group allows beyond
what it uses (cgroup v2 ``memory.max``, v1 ``memory.limit_in_bytes``), and the address-space limit (``ulimit -v``).
The address space also holds what a process maps without using (libraries, thread stacks, allocator arenas): 0.5
to 0.7 GB for a tiny input, 3.0 to 3.2 GB for the 113 MB file (``vpeval verify --jobs 1``, cut-offs found by
running under each limit), erratically in between; so the resident estimate is compared with it too, and only a
limit below that (a certain failure) is warned about, while the out-of-memory line names the limit. Several inputs
of one command add up. Linux only (``/proc``, cgroups); elsewhere only the address-space limit is checked.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from ..errors import MemoryEstimateWarning

#: Peak resident memory per byte of score input (measured on ``vpeval verify``, module docstring).
BYTES_PER_INPUT_BYTE = 8
#: Peak resident memory of ``vpeval verify`` on a tiny input (about 0.16 GB measured) plus the arrays of a small
#: input, rounded up.
BASE_BYTES = 400 * 2**20

#: The verdict's worker processes together (module docstring): per byte of score input, on top of a base, counted
#: from this much input on (``score label`` lines of about 11 bytes: the 1e6 trials from which ``verify`` starts them).
WORKERS_BYTES_PER_INPUT_BYTE = 3
WORKERS_BASE_BYTES = 400 * 2**20
WORKERS_FROM_BYTES = 10 * 2**20

_LAST = {"inputs": [], "bytes": 0, "warned": False}  # the inputs this process estimated, for the out-of-memory line


def _needs(n_bytes: int) -> tuple[int, int]:
    """``(main process, whole command)`` bytes estimated for ``n_bytes`` of score input (module docstring)."""
    main = BASE_BYTES + BYTES_PER_INPUT_BYTE * n_bytes
    workers = WORKERS_BASE_BYTES + WORKERS_BYTES_PER_INPUT_BYTE * n_bytes if n_bytes >= WORKERS_FROM_BYTES else 0
    return main, main + workers


def _gib(n: float) -> str:
    """Bytes as GiB, 3 significant digits."""
    return f"{n / 2**30:.3g} GiB"


def _meminfo(text: str) -> dict:
    """``/proc/meminfo``-style text -> {key: bytes}."""
    out = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            out[key.strip()] = int(parts[0]) * (1024 if parts[1:2] == ["kB"] else 1)
    return out


def _read(path) -> str | None:
    try:
        return Path(path).read_text()
    except (OSError, UnicodeError):
        return None


def _cgroup_room(root: Path = Path("/sys/fs/cgroup"), self_cgroup: str | None = None) -> int | None:
    """Bytes the process's memory control group allows beyond its current use, or None when unlimited or unknown.

    ``self_cgroup``: the text of ``/proc/self/cgroup`` (read when None). Where the group's own folder is not
    visible (a container shows its group as ``/``), the hierarchy's root is read."""
    text = self_cgroup if self_cgroup is not None else _read("/proc/self/cgroup")
    if not text:
        return None
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":  # cgroup v2 (unified)
            files, base = ("memory.max", "memory.current"), root
        elif "memory" in controllers.split(","):
            files, base = ("memory.limit_in_bytes", "memory.usage_in_bytes"), root / "memory"
        else:
            continue
        for d in (base / path.lstrip("/"), base):
            limit, used = (_read(d / f) for f in files)
            if limit is None or used is None:
                continue
            limit, used = limit.strip(), used.strip()
            if not limit.isdigit() or not used.isdigit():
                return None  # "max": no limit
            if int(limit) >= 2**60:  # v1 writes "no limit" as a page-rounded 2**63 - 1
                return None
            # the use counts the page cache, which the kernel reclaims before it fails an allocation: its
            # inactive file pages are left out (memory.stat: v2 inactive_file, v1 total_inactive_file)
            stat = _read(d / "memory.stat") or ""
            cache = next((int(f[1]) for f in (line.split() for line in stat.splitlines())
                          if len(f) == 2 and f[0] in ("inactive_file", "total_inactive_file") and f[1].isdigit()), 0)
            return max(0, int(limit) - max(0, int(used) - cache))
    return None


def _address_space_limit() -> int | None:
    """The soft address-space limit (``ulimit -v``) in bytes, or None when unlimited (or not POSIX)."""
    try:
        import resource
    except ImportError:
        return None
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    return None if soft == resource.RLIM_INFINITY else int(soft)


def memory_room() -> list[tuple[int, str]]:
    """What the command may use: ``(bytes, in words with ``{}`` for the amount)`` for the machine's available
    memory, the control group's room and the address-space limit; empty where none is known."""
    out = []
    info = _meminfo(_read("/proc/meminfo") or "")
    if "MemAvailable" in info:
        out.append((info["MemAvailable"], "only {} is available on the machine now"))
    c = _cgroup_room()
    if c is not None:
        out.append((c, "only {} is left under the control group's memory limit"))
    v = _address_space_limit()
    if v is not None:
        out.append((v, "the process's address-space limit (ulimit -v) is {}, and it also counts the libraries and "
                       "thread stacks a process maps"))
    return out


def machine_memory() -> tuple[int | None, int | None]:
    """``(MemTotal, MemAvailable)`` in bytes, None where unknown."""
    info = _meminfo(_read("/proc/meminfo") or "")
    return info.get("MemTotal"), info.get("MemAvailable")


def input_bytes(paths) -> int:
    """Total size of the files ``paths`` will be read from, in bytes: a file's size; for a folder, its Kaldi
    ``trials`` and ``scores`` (what a folder input is read from, nothing else in it); pipes and missing files 0."""
    total = 0
    for p in paths:
        try:
            p = Path(p)
            files = [p / "trials", p / "scores"] if p.is_dir() else [p]
            total += sum(f.stat().st_size for f in files if f.is_file())
        except OSError:
            continue
    return total


def reset_estimates() -> None:
    """Forget the inputs estimated so far (each command starts afresh: :func:`vpeval.cli.common.handle_errors`)."""
    _LAST.update(inputs=[], bytes=0, warned=False)


def check_score_input(paths, room: list | None = None) -> int:
    """Estimate the memory needed to evaluate the score input made of ``paths`` (score file, Kaldi key, folder)
    together with the inputs this process estimated before (a command reading several holds them all), and warn
    once (:class:`~vpeval.errors.MemoryEstimateWarning`) when it exceeds any room of :func:`memory_room`
    (``room``: that list, for tests). Returns the estimate (bytes), also kept for the out-of-memory line
    (:func:`last_estimate`). Pipes count as empty (their size is unknown)."""
    _LAST["inputs"].append(", ".join(str(p) for p in paths if p))
    _LAST["bytes"] += input_bytes([p for p in paths if p])
    main, needs = _needs(_LAST["bytes"])
    shown = "; ".join(_LAST["inputs"])
    for have, what in (room if room is not None else memory_room()):
        per_process = "ulimit -v" in what  # the address-space limit holds each process apart
        want = main if per_process else needs
        if want > have and not _LAST["warned"]:
            _LAST["warned"] = True
            workers = "" if per_process or needs == main else (
                f", and {WORKERS_BYTES_PER_INPUT_BYTE} bytes per byte plus {_gib(WORKERS_BASE_BYTES)} in the "
                "verdict's worker processes")
            warnings.warn(MemoryEstimateWarning(
                f"{shown}: evaluating {'it' if len(_LAST['inputs']) == 1 else 'them'} needs about {_gib(want)} of "
                f"memory (measured: {BYTES_PER_INPUT_BYTE} bytes per byte of score file plus {_gib(BASE_BYTES)} in "
                f"the main process{workers}), but {what.format(_gib(have))}: the command may run out of memory (exit "
                "code 4)"), stacklevel=2)
    return needs


def last_estimate() -> str:
    """``"; evaluating INPUTS needs about X GiB (...)"`` from the estimates so far, or ``""``."""
    if not _LAST["inputs"]:
        return ""
    main, needs = _needs(_LAST["bytes"])  # the main process's share is what ulimit -v (per process) is held to
    about = (f"{_gib(main)} of memory" if needs == main else
             f"{_gib(main)} of memory in the main process, {_gib(needs)} with its workers")
    return f"; evaluating {'; '.join(_LAST['inputs'])} needs about {about} (estimated before reading)"


def limits_line() -> str:
    """The limits this process runs under, for the out-of-memory line: ``"; the machine has X GiB, Y available
    now; ulimit -v is Z GiB"`` (the parts known)."""
    total, avail = machine_memory()
    parts = [f"the machine has {_gib(total)}, {_gib(avail)} available now"] if total and avail is not None else []
    c = _cgroup_room()
    if c is not None:
        parts.append(f"{_gib(c)} left under the control group's memory limit")
    v = _address_space_limit()
    if v is not None:
        parts.append(f"the address-space limit (ulimit -v) is {_gib(v)}, which also counts what a process maps "
                     "without using (libraries, thread stacks: 0.5 GB to 2 GB here); raise or lift it")
    return ("; " + "; ".join(parts)) if parts else ""


def _shown(p) -> str:
    """A path that can be printed as UTF-8 (undecodable file-name bytes as escapes)."""
    return str(p).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def address_space_exhausted(exc: BaseException) -> bool:
    """Whether an import failed because a library could not be mapped under an address-space limit (``ulimit
    -v``): the loader's words for it, with a limit set."""
    text = str(exc)
    return _address_space_limit() is not None and any(
        w in text for w in ("failed to map segment", "cannot allocate memory", "Could not find/load shared object"))


#: What libraries say when memory or address space runs out without raising MemoryError: pyarrow's reader under a
#: low ``ulimit -v`` ("Failed to launch worker thread", "Out of memory: malloc of size ... failed") and Python's
#: threads ("can't start new thread").
_OUT_OF_MEMORY_WORDS = ("Failed to launch worker thread", "Out of memory", "can't start new thread",
                        "Cannot allocate memory")


def ran_out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` (not a MemoryError) is a library's report of memory or address space running out
    (:data:`_OUT_OF_MEMORY_WORDS`): then the command ends with the out-of-memory line and exit code 4."""
    return any(w in str(exc) for w in _OUT_OF_MEMORY_WORDS)


#: Address space loading scipy's BLAS (``import scipy.linalg`` after numpy) maps: 93 MiB with one BLAS thread and
#: about 40 MiB more per further thread (measured on this project's machine), with a margin.
_SCIPY_BLAS_BYTES, _PER_BLAS_THREAD_BYTES = 128 << 20, 48 << 20


def load_scipy_blas() -> None:
    """Under ``ulimit -v``, load scipy's BLAS now (``import scipy.linalg``), or raise MemoryError when the address
    space left is below what its start maps (:data:`_SCIPY_BLAS_BYTES` plus :data:`_PER_BLAS_THREAD_BYTES` per
    further ``OPENBLAS_NUM_THREADS``). Without it the command hung: OpenBLAS's start inside scipy's first import,
    wherever a command makes it, retried its failed allocation for ever (a find at 160-180 MiB, even on a 2-line
    file); loaded here, once, what runs out ends with the out-of-memory line. Nothing without a limit."""
    import os
    import sys

    from ..io._fast import address_space_left

    if _address_space_limit() is None or "scipy.linalg" in sys.modules:
        return
    try:
        threads = max(1, int(os.environ.get("OPENBLAS_NUM_THREADS", "") or (os.cpu_count() or 1)))
    except ValueError:
        threads = os.cpu_count() or 1
    need = _SCIPY_BLAS_BYTES + _PER_BLAS_THREAD_BYTES * (threads - 1)
    left = address_space_left()
    if left is not None and left < need:
        raise MemoryError(f"{left / 2**20:.0f} MiB of address space left under ulimit -v; loading scipy's BLAS "
                          f"takes about {need / 2**20:.0f} MiB")
    import scipy.linalg  # noqa: F401


def memory_message(kwargs: dict) -> str:
    """The one line for a :class:`MemoryError`: the command's existing input files with their sizes, the memory
    the estimate before reading said they need (:func:`last_estimate`), the limits it runs under
    (:func:`limits_line`), and what helps."""
    files = []
    for v in kwargs.values():
        for x in (v if isinstance(v, (list, tuple)) else [v]):
            try:
                p = Path(str(x).rsplit("=", 1)[-1]) if isinstance(x, (str, Path)) else None
                if p is None or not p.exists():
                    continue
                if p.is_dir():
                    size = sum(f.stat().st_size for f in (p / "trials", p / "scores") if f.is_file())
                    files.append(f"{_shown(p)} ({size / 2**20:.3g} MiB)")
                elif p.is_file():
                    files.append(f"{_shown(p)} ({p.stat().st_size / 2**20:.3g} MiB)")
                else:
                    files.append(f"{_shown(p)} (a pipe: size unknown)")
            except OSError:
                continue
    try:  # the limits are read from /proc: that itself may run out of memory at the edge (ulimit -v 290 MiB)
        more = last_estimate() + limits_line()
    except MemoryError:
        more = ""
    return (f"out of memory while working on {', '.join(files) or 'the inputs'}{more}. "
            "Nothing was written. Run it on a machine with more memory, with fewer --jobs (each worker holds its own "
            "copy), or on a Dask cluster where the command offers it (--scheduler); BENCHMARKS.md lists the peak "
            "memory measured per input size")


__all__ = ["load_scipy_blas", "memory_message", "address_space_exhausted", "reset_estimates", "check_score_input", "memory_room", "machine_memory", "last_estimate", "limits_line"]
