"""How much memory a command may use, and how much reading a score input needs (issue 48: check the estimate
before starting, name it when the memory runs out).

The estimate is a measurement, not a bound: the peak resident memory of ``vpeval verify`` with its verdict grew by
about :data:`BYTES_PER_INPUT_BYTE` bytes per byte of score file, on top of :data:`BASE_BYTES` (``score label`` files
of 1e6, 3e6 and 1e7 lines, 11 to 113 MB: 0.39, 0.60 and 1.11 GB; a Kaldi key + score pair of 1e7 trials, 2 x 280 MB:
3.9 GB; BENCHMARKS.md). ``vpeval report`` drew about half as much again for its figures. Longer lines (ids)
need fewer bytes per byte, so the estimate errs high for Kaldi files.

The room: what the machine has available now (``MemAvailable``) and what the process's control group allows beyond
what it uses (cgroup v2 ``memory.max``, v1 ``memory.limit_in_bytes``), both against the resident estimate; the
address-space limit (``ulimit -v``) against the virtual estimate, which adds the libraries and thread stacks every
process maps (peak virtual memory 1.7 to 1.9 GB above the peak resident memory on the same runs). Linux only
(``/proc``, cgroups); elsewhere only the address-space limit is checked.
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

#: Peak virtual memory of ``vpeval verify`` on a tiny input (1.74 GiB measured: the libraries and thread stacks it
#: maps), rounded up: what ``ulimit -v`` must allow beyond the data.
VIRTUAL_BASE_BYTES = 2 * 2**30

_LAST = {}  # the latest estimate of this process: {"inputs": str, "needs": bytes}, for the out-of-memory line


def gib(n: float) -> str:
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
            return max(0, int(limit) - int(used))
    return None


def _address_space_limit() -> int | None:
    """The soft address-space limit (``ulimit -v``) in bytes, or None when unlimited (or not POSIX)."""
    try:
        import resource
    except ImportError:
        return None
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    return None if soft == resource.RLIM_INFINITY else int(soft)


def memory_room() -> list[tuple[int, str, str]]:
    """What the command may use: ``(bytes, in words with ``{}`` for the amount, "resident" or "virtual")`` for the machine's available memory
    and the control group's room (resident memory) and the address-space limit (virtual memory: the libraries
    and thread stacks a process maps count against it, about :data:`VIRTUAL_BASE_BYTES` before any data); empty
    where none is known."""
    out = []
    info = _meminfo(_read("/proc/meminfo") or "")
    if "MemAvailable" in info:
        out.append((info["MemAvailable"], "only {} is available on the machine now", "resident"))
    c = _cgroup_room()
    if c is not None:
        out.append((c, "only {} is left under the control group's memory limit", "resident"))
    v = _address_space_limit()
    if v is not None:
        out.append((v, "the process's address-space limit (ulimit -v) is {}", "virtual"))
    return out


def machine_memory() -> tuple[int | None, int | None]:
    """``(MemTotal, MemAvailable)`` in bytes, None where unknown."""
    info = _meminfo(_read("/proc/meminfo") or "")
    return info.get("MemTotal"), info.get("MemAvailable")


def input_bytes(paths) -> int:
    """Total size of the existing files among ``paths`` (a folder: its files), in bytes."""
    total = 0
    for p in paths:
        try:
            p = Path(p)
            if p.is_dir():
                total += sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
            elif p.is_file():
                total += p.stat().st_size
        except OSError:
            continue
    return total


def check_score_input(paths, room: list | None = None) -> int:
    """Estimate the memory needed to evaluate the score input made of ``paths`` (score file, Kaldi key, folder)
    and warn (:class:`~vpeval.errors.MemoryEstimateWarning`) when it exceeds any room of :func:`memory_room`
    (``room``: that list, for tests). Returns the resident estimate (bytes), also kept for the out-of-memory line
    (:func:`last_estimate`). Pipes count as empty (their size is unknown)."""
    shown = ", ".join(str(p) for p in paths if p)
    data = BYTES_PER_INPUT_BYTE * input_bytes([p for p in paths if p])
    needs = {"resident": BASE_BYTES + data, "virtual": VIRTUAL_BASE_BYTES + data}
    _LAST.update(inputs=shown, needs=needs)
    for have, what, kind in (room if room is not None else memory_room()):
        if needs[kind] > have:
            warnings.warn(MemoryEstimateWarning(
                f"{shown}: evaluating it needs about {gib(needs[kind])} of {kind} memory (measured: "
                f"{BYTES_PER_INPUT_BYTE} bytes per byte of score file plus "
                f"{gib(BASE_BYTES if kind == 'resident' else VIRTUAL_BASE_BYTES)}), but {what.format(gib(have))}: "
                "the command may run out of memory (exit code 4)"), stacklevel=2)
            break
    return needs["resident"]


def last_estimate() -> str:
    """``"; evaluating INPUTS needs about X GiB"`` from the latest :func:`check_score_input`, or ``""``."""
    return (f"; evaluating {_LAST['inputs']} needs about {gib(_LAST['needs']['resident'])} of memory and "
            f"{gib(_LAST['needs']['virtual'])} of address space (estimated before reading)" if _LAST else "")


__all__ = ["check_score_input", "memory_room", "machine_memory", "last_estimate"]
