"""The child process of ``vpeval doctor``: import some modules, one after the other, and say how each went.

Standard library only, and run from its source (``python -c <this file's text> <json>``), so that nothing of
vpeval and nothing the parent imported is loaded first: the import is tried as a fresh interpreter would. The
argument is a JSON list of ``[module, distribution or null]``. For each module one JSON line is printed (and
flushed) before the import, ``{"module": m, "state": "started"}``, and one after it:

- ``{"module": m, "state": "ok", "version": v, "detail": d}`` (``d``: the torch build, for ``torch``);
- ``{"module": m, "state": "missing"}``: no such module (``importlib.util.find_spec`` finds none, or the import
  raises ``ModuleNotFoundError`` for the module itself);
- ``{"module": m, "state": "broken", "error": "Type: last line"}``: installed, but the import raised (a missing
  system library raises ``OSError``; a missing dependency, ``ModuleNotFoundError`` naming another module).

An import that hangs or kills the interpreter leaves a ``started`` line without its result: the parent
(:func:`vpeval.cli.doctor.check_pieces`) reports that module as timed out or crashed.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
import traceback
import warnings

__all__ = ["torch_build", "probe", "main"]


def torch_build(torch) -> str:
    """Describe an imported torch module's build: ``CPU build`` or ``CUDA 12.8 build (GPU available: no)``.

    Parameters
    ----------
    torch : module
        The imported ``torch`` (anything with ``torch.version.cuda`` and ``torch.cuda.is_available()``).

    Returns
    -------
    str

    Examples
    --------
    >>> from types import SimpleNamespace as N
    >>> torch_build(N(version=N(cuda=None), cuda=N(is_available=lambda: False)))
    'CPU build'
    >>> torch_build(N(version=N(cuda="12.8"), cuda=N(is_available=lambda: False)))
    'CUDA 12.8 build (GPU available: no; the CPU build is about 4.4 GB smaller)'
    """
    cuda = getattr(getattr(torch, "version", None), "cuda", None)
    if not cuda:
        return "CPU build"
    try:
        available = bool(torch.cuda.is_available())
    except Exception:  # a broken driver must not stop the report
        available = False
    note = "" if available else "; the CPU build is about 4.4 GB smaller"
    return f"CUDA {cuda} build (GPU available: {'yes' if available else 'no'}{note})"


def last_line(exc: BaseException) -> str:
    """``Type: the last non-blank line of the message`` (what a traceback ends with), at most 300 characters."""
    lines = [ln.strip() for ln in "".join(traceback.format_exception_only(type(exc), exc)).splitlines()
             if ln.strip()]
    if not lines:
        return type(exc).__name__
    return (lines[0] if len(lines) == 1 else f"{type(exc).__name__}: {lines[-1]}")[:300]


def _version(module, dist) -> str:
    if dist is not None:
        from importlib import metadata

        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return str(getattr(module, "__version__", "?"))


def probe(mod: str, dist) -> dict:
    """Import ``mod`` here and say how it went (module docstring)."""
    try:
        found = importlib.util.find_spec(mod) is not None
    except (ImportError, ValueError):  # a parent package that fails to import: the import below says how
        found = True
    if not found:
        return {"module": mod, "state": "missing"}
    try:
        with warnings.catch_warnings():  # a package's warnings on import are about it, not about whether it works
            warnings.simplefilter("ignore")
            m = importlib.import_module(mod)
    except BaseException as exc:  # noqa: BLE001 - SystemExit from a package's import counts too
        if isinstance(exc, ModuleNotFoundError) and exc.name == mod:
            return {"module": mod, "state": "missing"}
        return {"module": mod, "state": "broken", "error": last_line(exc)}
    return {"module": mod, "state": "ok", "version": _version(m, dist),
            "detail": torch_build(m) if mod == "torch" else ""}


def main(argv=None) -> None:
    """Probe the modules of ``argv[0]`` (JSON list of ``[module, distribution]``), printing JSON lines."""
    argv = sys.argv[1:] if argv is None else argv
    if sys.path and sys.path[0] == "":  # ``python -c`` puts the working folder first: a file there is not a piece
        del sys.path[0]
    for mod, dist in json.loads(argv[0]):
        print(json.dumps({"module": mod, "state": "started"}), flush=True)
        print(json.dumps(probe(mod, dist)), flush=True)


if __name__ == "__main__":
    main()
