"""What killed runs left behind, recognised and removed by the next run of this host, whatever it does.

A vpeval run makes temporary folders: ``vpeval-jobs-*`` in the temporary folder (the arrays shared with the
workers of ``--jobs``, :mod:`vpeval.pipeline.jobs`), ``vpeval-input-*`` there too (private copies of piped
inputs, :class:`vpeval.cli.common.InputSnapshot`), and the hidden ``.<name>.vpeval-tmp-*`` beside an output
(:mod:`vpeval.io.output`). A run removes its own when it ends, on an error, Ctrl-C or SIGTERM too; ``kill -9``,
an out-of-memory kill or a power cut leave them. :func:`remove_stale` removes them: every ``vpeval`` command calls
it at its start (:func:`vpeval.cli.common.start_process`), and so do the library's :class:`~vpeval.pipeline.jobs.Jobs`
and output claims when they make a folder.

**Which folders.** Only folders whose owner is provably dead. Each folder holds an owner record (written by
:func:`owner_record` before anything else goes in): ``pid host start boot``, where ``start`` is the process's
start time (clock ticks since boot, ``/proc/<pid>/stat``) and ``boot`` the kernel's boot id
(``/proc/sys/kernel/random/boot_id``); ``-`` where the platform has none. The owner is dead (:func:`owner_dead`)
when the record names this host and either the boot id differs (the machine restarted since: every process of that
boot is gone), or no process has that pid, or the process that has it started at another time (the pid was
reused). A folder without a record, with a record of another host, or whose owner is alive is never touched; nor
a symbolic link. Records of the older form ``pid host`` count as dead only when no process has the pid.

**Outputs' temporaries** lie beside outputs anywhere, so a run that writes one also registers it in a private
folder ``vpeval-claims-<uid>`` of the temporary folder (a file per claim: its owner record and the temporary
folder's path), removed with the claim (and the folder with its last registration). :func:`remove_stale`
follows the registrations of dead owners and removes the folder registered (when its own owner record is the
registration's) and the registration. The next run into the same output also removes its stale temporaries
directly, as before.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import socket
import stat
import tempfile
from pathlib import Path

__all__ = ["owner_record", "owner_dead", "write_owner", "remove_stale", "register_claim", "unregister_claim",
           "OWNER_FILE", "TEMP_PATTERNS"]

#: The owner file inside a ``vpeval-jobs-*`` or ``vpeval-input-*`` folder.
OWNER_FILE = "vpeval-owner"
#: The folders of the temporary folder that :func:`remove_stale` examines.
TEMP_PATTERNS = ("vpeval-jobs-*", "vpeval-input-*")
#: The name of an output's temporary folder (and of one renamed aside to be removed), :mod:`vpeval.io.output`.
_OUTPUT_TMP = re.compile(r"\..+\.vpeval-tmp-[0-9a-f]{12}(-removed)?")


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip() or "-"
    except OSError:
        return "-"


def _start_time(pid: int) -> str:
    """The start time of process ``pid`` in clock ticks since boot (``/proc/<pid>/stat`` field 22), or ``-``."""
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as f:
            data = f.read()
        return data[data.rindex(b")") + 2:].split()[19].decode("ascii")  # fields after the name start at field 3
    except (OSError, ValueError, IndexError, UnicodeDecodeError):
        return "-"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    except (OverflowError, ValueError):
        return False
    return True


def owner_record() -> str:
    """This process's owner record, one line: ``pid host start boot``."""
    pid = os.getpid()
    return f"{pid} {socket.gethostname()} {_start_time(pid)} {_boot_id()}\n"


def owner_dead(text: str) -> bool:
    """Whether the owner record ``text`` (:func:`owner_record`, or the older ``pid host``) names a process of this
    host that is provably gone (module docstring). False for anything not provable: another host, an unreadable
    record, this process, a live process."""
    fields = text.split()
    if len(fields) not in (2, 4):
        return False
    try:
        pid = int(fields[0])
    except ValueError:
        return False
    if pid <= 0 or fields[1] != socket.gethostname():
        return False
    if len(fields) == 4:
        start, boot = fields[2], fields[3]
        here = _boot_id()
        if boot != "-" and here != "-" and boot != here:
            return True  # written before the machine last started
        if pid == os.getpid():
            return start != "-" and _start_time(pid) not in ("-", start)
        if not _pid_alive(pid):
            return True
        now = _start_time(pid)
        return start != "-" and now != "-" and now != start  # the pid now belongs to another process
    return pid != os.getpid() and not _pid_alive(pid)


def write_owner(folder, name: str = OWNER_FILE) -> str:
    """Write :func:`owner_record` into ``folder/name``; returns the record. Raises OSError."""
    rec = owner_record()
    with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
        f.write(rec)
    return rec


def _read(path) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(4096)
    except (OSError, UnicodeDecodeError):
        return None


def _remove_dir(path: str) -> bool:
    """Remove the folder ``path`` (never a symbolic link); whether it was a folder."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        return False
    shutil.rmtree(path, ignore_errors=True)
    return True


def _registry(create: bool) -> str | None:
    """The private registry folder of this user's output claims (None when it cannot be trusted or made)."""
    uid = os.getuid() if hasattr(os, "getuid") else None
    path = os.path.join(tempfile.gettempdir(), f"vpeval-claims-{uid if uid is not None else 'user'}")
    if create:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return None
    try:
        st = os.lstat(path)
    except OSError:
        return None
    # another user's folder (or a link) in a shared /tmp is not ours to read or write
    if not stat.S_ISDIR(st.st_mode) or (uid is not None and st.st_uid != uid) or st.st_mode & 0o022:
        return None
    return path


def register_claim(tmp_folder, record: str) -> str | None:
    """Register an output's temporary folder (with its owner ``record``); the registration's path, or None when
    none could be written (the folder is then removed only by the next run into the same output)."""
    for _ in range(3):  # the folder may be removed, empty, by another run between its creation and the write
        reg = _registry(create=True)
        if reg is None:
            return None
        entry = os.path.join(reg, f"{os.path.basename(tmp_folder)[-12:]}-{os.getpid()}")
        try:
            with open(entry, "w", encoding="utf-8") as f:
                f.write(record.strip() + "\n" + os.path.abspath(tmp_folder) + "\n")
            return entry
        except FileNotFoundError:
            continue
        except (OSError, UnicodeEncodeError):
            try:
                os.unlink(entry)
            except OSError:
                pass
            return None
    return None


def unregister_claim(entry) -> None:
    """Remove a registration of :func:`register_claim` (nothing when ``entry`` is None or gone)."""
    if entry is not None:
        try:
            os.unlink(entry)
            os.rmdir(os.path.dirname(entry))  # only when it is empty: no folder is left for good
        except OSError:
            pass


def _remove_registered(entry: str) -> None:
    text = _read(entry)
    if text is None:
        return
    lines = text.splitlines()
    if len(lines) < 2 or not owner_dead(lines[0]):
        return
    record, tmp = lines[0].strip(), lines[1]
    if _OUTPUT_TMP.fullmatch(os.path.basename(tmp)):
        owner = _read(os.path.join(tmp, ".vpeval-owner"))
        if owner is not None and owner.strip() == record:
            _remove_dir(tmp)
        doomed = tmp + "-removed"  # renamed aside by an abort that was killed while removing it
        owner = _read(os.path.join(doomed, ".vpeval-owner"))
        if owner is None or owner.strip() == record:
            _remove_dir(doomed)
    unregister_claim(entry)


def remove_stale(base=None) -> None:
    """Remove the temporary folders and output temporaries that dead runs of this host left (module docstring).

    Never raises: a folder that cannot be examined or removed is left as it is.

    Parameters
    ----------
    base : str, optional
        The temporary folder (default ``tempfile.gettempdir()``).
    """
    try:
        base = base or tempfile.gettempdir()
        for pattern in TEMP_PATTERNS:
            for old in glob.glob(os.path.join(glob.escape(base), pattern)):
                rec = _read(os.path.join(old, OWNER_FILE))
                if rec is not None and owner_dead(rec) and not os.path.islink(old):
                    _remove_dir(old)
        reg = _registry(create=False) if base == tempfile.gettempdir() else None
        if reg is not None:
            for entry in os.listdir(reg):
                _remove_registered(os.path.join(reg, entry))
    except Exception:  # noqa: BLE001 - cleaning up after others must never stop this run
        pass


def stale_output_temporaries(target: Path) -> list[Path]:
    """The temporary folders beside the output ``target`` whose owner record proves a dead owner."""
    out = []
    for p in target.parent.glob(f".{target.name}.vpeval-tmp-*"):
        rec = _read(p / ".vpeval-owner")
        if rec is not None and owner_dead(rec) and p.is_dir() and not p.is_symlink():
            out.append(p)
    return out
