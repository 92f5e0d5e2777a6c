"""Old import paths of moved modules: each old module is a deprecation alias of its new home.

An alias module is two lines, ``from vpeval._deprecated import alias_module`` and ``alias_module(__name__)``;
:data:`MOVED` says where its names went. On import the alias warns once (:class:`VpevalDeprecationWarning`, a
:class:`FutureWarning`, so shown under Python's default filters; attributed to the importing line), binds its
documented public names (``__all__``) to the very objects of the new modules (so ``isinstance``, pickles and
``is`` comparisons behave as before), and forwards any other attribute lookup (private helpers, module
constants) to the new modules, first match wins.

Nothing inside vpeval imports an alias (``tests/test_moved_paths.py`` checks).
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings

from .errors import VpevalDeprecationWarning

__all__ = ["MOVED", "alias_module"]

#: old module -> (new modules its names come from, the first being the one to import from now; the old
#: module's public names). The aliases of issue 23 at the top of the package (``vpeval.anonymize``,
#: ``vpeval.anonymize_world``, ``vpeval.embed``, ``vpeval.asr``, ``vpeval.pitch`` and their submodules) were
#: removed (issue 47; CHANGELOG.md); ``tests/test_moved_paths.py`` checks that they stay removed.
MOVED: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "vpeval.io.audio": (
        ("vpeval.audio.io",),
        ("SAMPLE_RATE", "AUDIO_EXTENSIONS", "AudioItem", "read_audio", "write_audio", "scan_audio_folder",
         "read_speaker_metadata"),
    ),
}


def alias_module(name: str) -> None:
    """Turn the module ``name`` (being imported) into a deprecation alias of its new modules in :data:`MOVED`.

    Warns with :class:`~vpeval.errors.VpevalDeprecationWarning` pointing at the line that imported the old
    path (frames of vpeval and of the import machinery are skipped).

    Raises
    ------
    KeyError
        ``name`` is not in :data:`MOVED` (a programming error in vpeval itself).
    """
    sources, public = MOVED[name]
    modules = [importlib.import_module(s) for s in sources]
    namespace = vars(sys.modules[name])

    def find(attr: str):
        for m in modules:
            try:
                return getattr(m, attr)
            except AttributeError:
                pass
        raise AttributeError(f"module {name!r} has no attribute {attr!r}")

    def __getattr__(attr: str):  # PEP 562: names other than the public ones, looked up when asked for
        return find(attr)

    def __dir__():
        return sorted(set(namespace) | {a for m in modules for a in dir(m) if not a.startswith("__")})

    namespace.update({p: find(p) for p in public})
    namespace.update(__all__=list(public), __getattr__=__getattr__, __dir__=__dir__)
    _warn_at_importer(f"{name} is deprecated and will be removed; import from {sources[0]} instead")


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _outside_user_code(filename: str) -> bool:
    """True for a frame of vpeval itself or of the import machinery (``importlib``, frozen or not)."""
    if filename.startswith("<frozen importlib"):
        return True
    path = os.path.abspath(filename)
    return (path.startswith(_PACKAGE_DIR + os.sep)
            or os.path.dirname(path) == os.path.dirname(os.path.abspath(importlib.__file__)))


def _warn_at_importer(message: str) -> None:
    """Warn with :class:`VpevalDeprecationWarning` attributed to the first frame outside vpeval and the import
    machinery: the user's line that imported the old path (``import vpeval.io.audio``, ``from vpeval.io import
    audio``), not the frames of :mod:`importlib` or of a package's lazy ``__getattr__`` in between, which a fixed
    ``stacklevel`` would name instead."""
    frame = sys._getframe(1)
    while frame is not None and _outside_user_code(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:  # imported from vpeval itself or by the interpreter: no user line to name
        warnings.warn(message, VpevalDeprecationWarning, stacklevel=2)
        return
    g = frame.f_globals
    warnings.warn_explicit(message, VpevalDeprecationWarning, frame.f_code.co_filename, frame.f_lineno,
                           module=g.get("__name__", "<string>"), registry=g.setdefault("__warningregistry__", {}),
                           module_globals=g)
