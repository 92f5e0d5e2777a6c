"""A watchdog that ends the command when a stop signal is not honoured in time (issue 48).

Python runs a signal handler only in the main thread, between two bytecodes. A command inside a long native call
(a looping TorchScript model, a large BLAS or sorting call, a C loop that never returns) therefore does not react to
SIGTERM, SIGHUP or Ctrl-C until the call returns, which may be never. The C-level part of Python's signal handling
does run at once, though: it writes the signal's number to the *wakeup file descriptor*
(:func:`signal.set_wakeup_fd`).

:func:`start` points that descriptor at a pipe read by a small companion process: this file run as a script by the
same interpreter (``python -I -S``: the standard library only, nothing of vpeval imported, about 20 ms to start).
When a stop signal's number arrives, the companion waits :data:`GRACE_SECONDS` for the command's Python handler to
acknowledge it (:func:`acknowledge`, a byte on a second pipe, written by the handler's first line). If no
acknowledgement comes, the command is inside native code: the companion writes one line to stderr and sends SIGKILL
to the command and to every process below it (its ``--jobs`` workers, a Dask cluster it started). After an
acknowledgement the command leaves as before (exit code 143 for SIGTERM), and the companion allows
:data:`CLEANUP_SECONDS` for that before it does the same. The shell then reports exit code 137 (128 + SIGKILL).
Nothing half-written is installed as output (outputs are installed by one rename); the temporary folders of a
killed run are removed by the next vpeval run of the host (:func:`vpeval.io.leftovers.remove_stale`).

The companion ignores the stop signals itself (a Ctrl-C reaches the whole foreground process group) and leaves as
soon as the command has ended: it reads end-of-file on the pipes, and polls its parent every
:data:`POLL_SECONDS` in case another process holds them. POSIX only (elsewhere :func:`start` does nothing).
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time

#: Seconds the command's Python handler has to acknowledge a stop signal before the command is killed.
GRACE_SECONDS = 5.0
#: Seconds a command that acknowledged a stop signal has to clean up and leave before it is killed.
CLEANUP_SECONDS = 60.0
#: How often the companion checks that its parent still runs (seconds).
POLL_SECONDS = 0.5

#: The signals the command leaves on (the others that reach a Python handler are not its business).
STOP_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, n))

_ACK = [None]  # write end of the acknowledgement pipe, once started
_COMPANION = [None]  # the companion's Popen (kept referenced: no ResourceWarning, no early reaping)


def start(grace: float = GRACE_SECONDS, cleanup: float = CLEANUP_SECONDS) -> bool:
    """Start the companion process and point the wakeup descriptor at it (main thread, once per process).

    Returns True when the watchdog runs; False where it cannot or need not (not POSIX, not the main thread, no
    interpreter path, a worker process of multiprocessing, or the companion failed to start): the command then runs
    without it, as before.
    """
    import multiprocessing
    import subprocess

    if os.name != "posix" or not sys.executable or _ACK[0] is not None:
        return _ACK[0] is not None
    if multiprocessing.parent_process() is not None:  # a worker process: its command's watchdog covers it
        return False
    sig_r, sig_w = os.pipe()
    ack_r, ack_w = os.pipe()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", os.path.abspath(__file__), str(os.getpid()), str(sig_r), str(ack_r),
             repr(float(grace)), repr(float(cleanup))],
            pass_fds=(sig_r, ack_r), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    except OSError:
        for fd in (sig_r, sig_w, ack_r, ack_w):
            os.close(fd)
        return False
    # the read ends stay open here too: were the companion killed, a signal's byte would meet a pipe without a
    # reader (EPIPE, a traceback from the interpreter) instead of, at worst, a full one (EAGAIN, silent)
    os.set_blocking(sig_w, False)  # set_wakeup_fd needs a non-blocking descriptor
    try:
        signal.set_wakeup_fd(sig_w, warn_on_full_buffer=False)
    except ValueError:  # not the main thread of the main interpreter
        for fd in (sig_r, sig_w, ack_r, ack_w):
            os.close(fd)
        proc.wait()
        return False
    os.set_blocking(ack_w, False)
    _ACK[0], _COMPANION[0] = ack_w, proc
    return True


def acknowledge() -> None:
    """Tell the companion that a Python handler runs (call it first in every stop signal's handler)."""
    if _ACK[0] is not None:
        try:
            os.write(_ACK[0], b"a")
        except OSError:  # the companion is gone or the pipe is full: nothing to tell
            pass


def _descendants(root: int) -> list[int]:
    """Every process below ``root`` (Linux ``/proc``; elsewhere none), children before their own children."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2:].split()[1])  # fields after "(comm)": state, ppid
        children.setdefault(ppid, []).append(int(name))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _kill_tree(parent: int, why: str) -> None:
    below = [p for p in _descendants(parent) if p != os.getpid()]
    try:
        os.write(2, f"vpeval: {why}; stopped with SIGKILL (exit code 137). Nothing half-written was installed as "
                    "output; the next vpeval run removes the temporary folders this one left (a lock file beside the output "
                    "may stay: it is harmless).\n".encode())
    except OSError:
        pass
    for pid in [parent] + below:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _stopped(pid: int) -> bool:
    """Whether ``pid`` is stopped (SIGSTOP, Ctrl-Z, a suspended batch job, a frozen cgroup): Linux ``/proc``
    state ``T`` or ``t``; False where unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return False
    return stat[stat.rindex(b")") + 2:stat.rindex(b")") + 3] in (b"T", b"t")


def _watch(parent: int, sig_fd: int, ack_fd: int, grace: float, cleanup: float) -> None:
    for s in STOP_SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    names = {int(s): s.name for s in STOP_SIGNALS}
    deadline, why = None, ""
    fds = [sig_fd, ack_fd]
    last = time.monotonic()
    while fds:
        timeout = POLL_SECONDS if deadline is None else max(0.0, min(POLL_SECONDS, deadline - time.monotonic()))
        ready, _, _ = select.select(fds, [], [], timeout)
        if os.getppid() != parent:
            return
        now = time.monotonic()
        if deadline is not None and _stopped(parent):  # time while stopped is not the command's to answer in
            deadline += now - last
        last = now
        for fd in (sig_fd, ack_fd):  # the signal's byte is written before its handler can acknowledge
            if fd not in ready:
                continue
            data = os.read(fd, 512)
            if not data:  # the command closed its end: it has ended
                return
            if fd == ack_fd:
                deadline = time.monotonic() + cleanup
                why = f"still running {cleanup:g} s after it began to leave on a stop signal"
            elif deadline is None:
                got = [names[b] for b in data if b in names]
                if got:
                    deadline = time.monotonic() + grace
                    why = (f"{got[0]} was not honoured within {grace:g} s (the command was inside a call that "
                           "does not return to Python, e.g. native code)")
        if deadline is not None and time.monotonic() >= deadline:
            _kill_tree(parent, why)
            return


if __name__ == "__main__":
    _watch(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]))
