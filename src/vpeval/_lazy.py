"""Public names of a package imported on first use (PEP 562): the package's ``__init__`` lists each name with
the module it comes from, and ``import package`` loads none of them. The command line imports only what its
command needs, so a score file's ``verify`` never pays for SciPy's statistics, scikit-learn or matplotlib."""

from __future__ import annotations

import importlib


def lazy_module_attributes(package: str, sources: dict, namespace: dict, extra=()):
    """``(__getattr__, __dir__)`` for the package ``package`` whose globals are ``namespace``: ``sources`` maps a
    module below the package (``"metrics.profile"``) to the names it provides. An unlisted public name is tried
    as a submodule (``package.jobs``), as when everything was imported eagerly; a name found once is stored in
    ``namespace`` (later lookups skip ``__getattr__``). ``extra``: further names ``dir()`` lists. Raises
    AttributeError for unknown names, as a module does."""
    lazy = {name: module for module, names in sources.items() for name in names}

    def __getattr__(name: str):
        module = lazy.get(name)
        if module is not None:
            value = getattr(importlib.import_module(f"{package}.{module}"), name)
        elif not name.startswith("_"):
            try:
                value = importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as e:
                if e.name != f"{package}.{name}":
                    raise
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    def __dir__():
        return sorted(set(namespace) | set(lazy) | set(extra))

    return __getattr__, __dir__
