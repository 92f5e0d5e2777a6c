"""The one output policy of every vpeval command that writes a folder or a file.

Rules (documented for users in ``docs/output.md``):

* **Refuse what exists.** An output folder must not exist or be empty; an output file must not exist.
  Otherwise :class:`OutputExistsError` (the CLI exits 3 and says why).
* **Manifest.** Every output carries a manifest written by vpeval: ``.vpeval-manifest.json`` inside an
  output folder, ``.<name>.vpeval-manifest.json`` beside an output file. It records the command, the vpeval
  version, the time and every file written (relative path, size, sha256).
* **--force** replaces an existing output only when its manifest proves that a vpeval command of the same
  family wrote it and that it holds exactly the files listed, unchanged (names alone never prove ownership).
  The whole earlier output is replaced: no stale file of the earlier run survives. An output holding one of
  the command's inputs is never replaced.
* **Atomic install.** Everything is written into a hidden temporary sibling ``.<name>.vpeval-tmp-<token>``
  and renamed into place at the end; an earlier output is first renamed aside, then deleted. A failure
  mid-way leaves the earlier state untouched and no partial output, so a re-run is accepted.
* **One writer.** A run holds an exclusive lock (``flock`` on ``.<name>.vpeval-lock`` beside the output)
  from its claim to its install; a second run of any vpeval command into the same output fails at once with
  :class:`OutputBusyError` ("another vpeval run is writing ..."). The kernel drops the lock of a killed run.
* **Symlinks.** An output path that is a symbolic link is written through: the link's target is the output,
  the link itself stays.
* **Stale temporaries.** A killed run may leave its temporary folder; the next run into the same output
  removes those whose owner file names a process of this host that provably no longer exists (pid, its start
  time and the boot id: :mod:`vpeval.io.leftovers`), and every later ``vpeval`` command removes them wherever
  they are, through a registration in the temporary folder. Nothing else is ever removed.
* **Paths in messages** are the ones the user gave, never the temporary names.

The lock uses ``fcntl.flock`` (POSIX: Linux, macOS).
"""

from __future__ import annotations

import datetime as _dt
import errno
import hashlib
import json
import os
import secrets
import shutil
import socket
import stat
from pathlib import Path

from .._version import __version__
from ..errors import VpevalError
from . import leftovers
from .leftovers import _pid_alive  # noqa: F401 - kept importable from here

__all__ = [
    "OutputError",
    "OutputExistsError",
    "OutputBusyError",
    "OutputClaim",
    "claim_folder",
    "claim_file",
    "read_manifest",
    "verify_manifest",
    "sha256_file",
    "MANIFEST_NAME",
    "FAMILIES",
]

MANIFEST_NAME = ".vpeval-manifest.json"
MANIFEST_SCHEMA = "vpeval-output-manifest"
_OWNER = ".vpeval-owner"

#: commands whose outputs may replace each other with --force (same layout)
FAMILIES = {
    "report": ("report", "audit", "demo"),
    "audit": ("report", "audit", "demo"),
    "demo": ("report", "audit", "demo"),
    "trials": ("trials", "attack"),
    "attack": ("trials", "attack"),
}


class OutputError(VpevalError):
    """The output cannot be written (exists, is being written by another run, or the file system refuses)."""


class OutputExistsError(OutputError):
    """The output exists and ``force`` was not given, or ``force`` may not replace it."""


class OutputBusyError(OutputError):
    """Another vpeval run holds the lock of this output."""


def sha256_file(path) -> str:
    """Hex sha256 of the bytes of the file ``path``."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def _oserror(shown: Path, exc: OSError, what: str) -> OutputError:
    return OutputError(f"{shown}: cannot {what} ({exc.strerror or exc})")


def _files_below(folder: Path, skip=()) -> tuple[list[str], list[str]]:
    """(relative paths of regular files, relative paths of anything else that is not a folder) below ``folder``."""
    files, other = [], []
    for root, dirs, names in os.walk(folder, followlinks=False):
        r = Path(root)
        for d in list(dirs):
            if (r / d).is_symlink():
                other.append((r / d).relative_to(folder).as_posix())
                dirs.remove(d)
        for n in names:
            p = r / n
            rel = p.relative_to(folder).as_posix()
            if rel in skip:
                continue
            st = os.lstat(p)
            (files if stat.S_ISREG(st.st_mode) else other).append(rel)
    return sorted(files), sorted(other)


def _empty_folders(folder: Path) -> list[str]:
    """Relative paths of the folders below ``folder`` (not following links) that hold nothing at all."""
    out = []
    for root, dirs, names in os.walk(folder, followlinks=False):
        if Path(root) != folder and not dirs and not names:
            out.append(Path(root).relative_to(folder).as_posix())
    return sorted(out)


def _manifest_doc(command: str, base: Path, files: list[str]) -> dict:
    return {
        "schema": MANIFEST_SCHEMA,
        "schema_version": 1,
        "command": command,
        "vpeval_version": __version__,
        "created": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        "files": [{"path": f, "size": (base / f).stat().st_size, "sha256": sha256_file(base / f)} for f in files],
    }


def read_manifest(path) -> dict | None:
    """The manifest at ``path`` as a dict, or None when it is missing or not a vpeval manifest."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeError):
        return None
    if not isinstance(doc, dict) or doc.get("schema") != MANIFEST_SCHEMA or not isinstance(doc.get("files"), list):
        return None
    return doc


def _check_listed(base: Path, doc: dict, present: list[str]) -> str | None:
    """None when ``present`` (paths relative to ``base``) is exactly the manifest's unchanged files."""
    listed = {}
    for e in doc["files"]:
        if not isinstance(e, dict) or not isinstance(e.get("path"), str):
            return "its manifest is malformed"
        listed[e["path"]] = e
    extra = sorted(set(present) - set(listed))
    if extra:
        return f"it holds {extra[0]!r}, which the earlier run did not write"
    for rel, e in listed.items():
        p = base / rel
        if rel not in present:
            return f"{rel!r} of the earlier run is missing"
        if p.stat().st_size != e.get("size") or sha256_file(p) != e.get("sha256"):
            return f"{rel!r} changed since the earlier run wrote it"
    return None


def verify_manifest(target, accepts, *, is_file: bool = False) -> str | None:
    """Why ``target`` is not an earlier output of one of the commands ``accepts`` (None when it is).

    A folder qualifies when its ``.vpeval-manifest.json`` names one of ``accepts`` and lists exactly the files
    below the folder, each with its recorded size and sha256; a file when its sidecar manifest does so.
    """
    target = Path(target)
    if is_file:
        mpath = target.parent / f".{target.name}.vpeval-manifest.json"
        doc = read_manifest(mpath)
        if doc is None:
            return "no vpeval manifest records it as an earlier output"
        if doc.get("command") not in accepts:
            return f"its manifest names `vpeval {doc.get('command')}`, not {_names(accepts)}"
        return _check_listed(target.parent, doc, [target.name])
    doc = read_manifest(target / MANIFEST_NAME)
    if doc is None:
        return "no vpeval manifest (.vpeval-manifest.json) records it as an earlier output"
    if doc.get("command") not in accepts:
        return f"its manifest names `vpeval {doc.get('command')}`, not {_names(accepts)}"
    files, other = _files_below(target, skip=(MANIFEST_NAME, _OWNER))  # an owner file left by a kill after install
    if other:
        return f"it holds {other[0]!r}, which is not a regular file written by vpeval"
    empty = _empty_folders(target)
    if empty:  # the manifest lists files: a folder holding none of them is not proved to be vpeval's
        return f"it holds the empty folder {empty[0]!r}, which no file of the manifest is in"
    return _check_listed(target, doc, files)


def _names(accepts) -> str:
    return " or ".join(f"`vpeval {a}`" for a in accepts)


class OutputClaim:
    """An output being written: locked, with a temporary folder to write into; see the module rules.

    Use it as a context manager (or call :meth:`commit` / :meth:`abort`). Write the output folder's content
    into :attr:`path` (for :func:`claim_file`: the single file :attr:`path`). On a clean exit the manifest
    is written and the result installed at the output; on an exception everything temporary is removed.
    """

    def __init__(self, out, *, command: str, force: bool, protect, accepts, is_file: bool, append: bool = False):
        self.shown = Path(out)  # what the user gave: used in every message
        self.command = command
        self.force = force
        self.append = append
        self.accepts = tuple(accepts or FAMILIES.get(command, (command,)))
        self.is_file = is_file
        self.protect = [Path(p) for p in protect]
        self._lock_fd = None
        self._tmp: Path | None = None
        self._registration = None  # of the temporary folder, for the runs that come after a kill
        self.target = self._resolve()
        self._lock()
        try:
            self._clean_stale()
            self._check_existing()
            self._make_tmp()
        except BaseException:
            self._unlock()
            raise

    # -- setup ------------------------------------------------------------------------------------------
    def _resolve(self) -> Path:
        out = self.shown
        if out.name in ("", ".", ".."):
            raise OutputExistsError(f"{out}: name a new output {'file' if self.is_file else 'folder'}")
        target = Path(os.path.realpath(out)) if out.is_symlink() else Path(os.path.abspath(out))
        if not self.is_file and (target == Path.cwd().resolve() or target == Path.home().resolve()):
            raise OutputExistsError(f"{out}: name a new output folder, not the current or home folder")
        if target.exists() and not self.is_file and not target.is_dir():
            raise OutputExistsError(f"{out}: exists and is not a folder")
        if target.exists() and self.is_file and not target.is_file():
            raise OutputExistsError(f"{out}: exists and is not a file")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _oserror(self.shown, exc, f"create the folder {target.parent}") from None
        return target

    def _lock(self) -> None:
        import fcntl

        lock = self.target.parent / f".{self.target.name}.vpeval-lock"
        while True:
            try:
                fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666 & ~_umask())
            except OSError as exc:
                raise _oserror(self.shown, exc, "write here") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise OutputBusyError(f"{self.shown}: another vpeval run is writing this output; nothing was "
                                          "written by this one") from None
                raise _oserror(self.shown, exc, "lock this output") from None
            try:  # the lock file may have been removed by the previous holder between open and flock
                same = os.path.samestat(os.fstat(fd), os.stat(lock))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        self._lock_fd, self._lock_path = fd, lock
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()} {socket.gethostname()}\n".encode())

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            try:
                os.unlink(self._lock_path)  # still holding the lock: a waiter re-checks the inode
            except OSError:
                pass
            os.close(self._lock_fd)
            self._lock_fd = None

    def _clean_stale(self) -> None:
        """Remove temporary folders of this output left by dead runs of this host (owner file proves it), and
        those of other outputs and of the temporary folder that registered dead runs left
        (:func:`vpeval.io.leftovers.remove_stale`)."""
        for p in leftovers.stale_output_temporaries(self.target):
            shutil.rmtree(p, ignore_errors=True)
        leftovers.remove_stale()

    def _exists_nonempty(self) -> bool:
        t = self.target
        if self.is_file:
            return t.exists() or t.is_symlink()
        try:
            return t.is_dir() and any(t.iterdir())
        except OSError as exc:
            raise _oserror(self.shown, exc, "read the output folder") from None

    def _check_existing(self) -> None:
        if not self._exists_nonempty() or self.append:
            return
        kind = "file" if self.is_file else "folder"
        if not self.force:
            raise OutputExistsError(f"{self.shown}: exists{'' if self.is_file else ' and is not empty'}; choose "
                                    f"another {kind} or pass --force to replace an earlier output of "
                                    f"{_names(self.accepts)}")
        for p in self.protect:
            rp = Path(os.path.realpath(p))
            if rp == self.target or self.target in rp.parents:
                raise OutputExistsError(f"{self.shown}: is or contains the input {p}; --force will not replace it")
        why = verify_manifest(self.target, self.accepts, is_file=self.is_file)
        if why is not None:
            raise OutputExistsError(f"{self.shown}: --force only replaces an earlier output of "
                                    f"{_names(self.accepts)} (proved by its manifest), and {why}; choose another "
                                    f"{kind}, or move or delete this one yourself once nothing in it is needed")

    def _make_tmp(self) -> None:
        tmp = self.target.parent / f".{self.target.name}.vpeval-tmp-{secrets.token_hex(6)}"
        try:
            tmp.mkdir(mode=0o777 & ~_umask())
            record = leftovers.write_owner(tmp, _OWNER)
        except OSError as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise _oserror(self.shown, exc, "write here") from None
        self._registration = leftovers.register_claim(tmp, record)
        self._tmp = tmp
        self.path = tmp / self.target.name if self.is_file else tmp

    # -- finish -----------------------------------------------------------------------------------------
    def commit(self) -> Path:
        """Write the manifest and install the output atomically; returns the path the user gave."""
        tmp = self._tmp
        try:
            # the owner file stays until the rename: a run killed while the manifest hashes the files leaves a
            # temporary folder that the next run recognises as stale and removes
            self._check_existing()  # still absent, or still an earlier output of ours
            if self.is_file:
                self._commit_file(tmp)
            else:
                self._commit_folder(tmp)
        except OSError as exc:
            self.abort()
            raise _oserror(self.shown, exc, "install the output") from None
        except BaseException:
            self.abort()
            raise
        leftovers.unregister_claim(self._registration)
        self._registration = None
        self._unlock()
        return self.shown

    def _commit_folder(self, tmp: Path) -> None:
        files, other = _files_below(tmp, skip=(_OWNER,))
        if other:
            raise OutputError(f"{self.shown}: the command wrote {other[0]!r}, which is not a regular file")
        (tmp / MANIFEST_NAME).write_text(json.dumps(_manifest_doc(self.command, tmp, files), indent=2) + "\n",
                                         encoding="utf-8")
        t = self.target
        if t.is_dir() and any(t.iterdir()):
            old = t.parent / f".{t.name}.vpeval-old-{secrets.token_hex(6)}"
            os.rename(t, old)
            try:
                os.rename(tmp, t)
            except BaseException:
                os.rename(old, t)
                raise
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, t)  # over an absent or empty folder: atomic
        self._tmp = None
        try:
            os.unlink(t / _OWNER)
        except OSError:
            pass

    def _commit_file(self, tmp: Path) -> None:
        f = tmp / self.target.name
        if not f.is_file():
            raise OutputError(f"{self.shown}: the command wrote no file")
        side = f".{self.target.name}.vpeval-manifest.json"
        (tmp / side).write_text(json.dumps(_manifest_doc(self.command, tmp, [self.target.name]), indent=2) + "\n",
                                encoding="utf-8")
        os.chmod(f, 0o666 & ~_umask())
        os.replace(f, self.target)
        os.replace(tmp / side, self.target.parent / side)
        shutil.rmtree(tmp, ignore_errors=True)
        self._tmp = None

    def abort(self) -> None:
        """Remove everything temporary and release the lock; the earlier state is untouched.

        The temporary folder is renamed aside before it is deleted, so a task still running somewhere (a
        cluster worker) cannot write into it any more: its paths no longer exist.
        """
        if self._tmp is not None:
            tmp, self._tmp = self._tmp, None
            # still a vpeval-tmp- name with its owner file: left behind by a kill, the next run removes it (the
            # same token: its registration names it)
            doomed = tmp.parent / f"{tmp.name}-removed"
            try:
                os.rename(tmp, doomed)
            except OSError:
                doomed = tmp
            shutil.rmtree(doomed, ignore_errors=True)
        leftovers.unregister_claim(self._registration)
        self._registration = None
        self._unlock()

    def __enter__(self) -> "OutputClaim":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
            return
        tmp = self._tmp
        self.abort()
        if isinstance(exc, OSError) and not isinstance(exc, OutputError) and self._is_write_error(exc, tmp):
            raise OutputError(f"{self.shown}: cannot write the output ({exc.strerror or exc}); nothing was "
                              "installed and the earlier state is unchanged") from None

    @staticmethod
    def _is_write_error(exc: OSError, tmp) -> bool:
        """A refusal of this output's file system: a path in its temporary folder failed, or (when the error
        names no file, e.g. a write to an open file) the disk is full or read-only. An error naming another
        file (an input, the temporary folder of another output of the same command) is left as it is."""
        names = [n for n in (exc.filename, getattr(exc, "filename2", None)) if n is not None]
        if not names:
            return exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS)
        if tmp is None:
            return False
        for name in names:
            try:
                p = Path(os.fsdecode(name)).absolute()
            except (TypeError, ValueError):
                continue
            if p == tmp or tmp in p.parents:
                return True
        return False

    def __del__(self):  # an abandoned claim never keeps its lock or temporary folder
        try:
            self.abort()
        except Exception:
            pass


def claim_folder(out, *, command: str, force: bool = False, protect=(), accepts=None) -> OutputClaim:
    """Claim the output folder ``out`` for ``vpeval <command>`` (see the module rules).

    Raises
    ------
    OutputExistsError
        ``out`` is a non-empty folder (without ``force``), not a folder, the current or home folder, holds an
        input, or (with ``force``) is not proved by its manifest to be an earlier output of ``accepts``
        (default: the command's family).
    OutputBusyError
        Another run is writing ``out``.
    OutputError
        The file system refuses (the message names ``out``).
    """
    return OutputClaim(out, command=command, force=force, protect=protect, accepts=accepts, is_file=False)


def claim_file(out, *, command: str, force: bool = False, protect=(), accepts=None,
               append: bool = False) -> OutputClaim:
    """Claim the single output file ``out`` (write it at ``claim.path``); as :func:`claim_folder`.

    With ``append=True`` an existing ``out`` is accepted without ``force``: the caller reads it after the
    claim (no other vpeval run can change it then) and writes old and new content together.
    """
    return OutputClaim(out, command=command, force=force, protect=protect, accepts=accepts, is_file=True,
                       append=append)
