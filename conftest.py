"""Collection rules for the doctest run over ``src/vpeval`` (pyproject's ``testpaths``).

The deprecated alias modules (the old import paths in ``vpeval._deprecated.MOVED``) hold no doctests and warn
when imported, so they are not collected; ``tests/test_moved_paths.py`` imports each of them on purpose. The
table is read from the source file, not imported, so collection does not depend on which vpeval is installed.
"""

import ast
from pathlib import Path

_SRC = Path(__file__).resolve().parent / "src"


def _alias_paths() -> list[str]:
    tree = ast.parse((_SRC / "vpeval" / "_deprecated.py").read_text(encoding="utf-8"))
    table = next(node.value for node in tree.body
                 if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == "MOVED")
    paths = set()
    for key in table.keys:
        module = _SRC.joinpath(*ast.literal_eval(key).split("."))
        paths.add(str(module if module.is_dir() else module.with_suffix(".py")))  # a package: its whole folder
    return sorted(paths)


# docs/: Sphinx's conf.py and the sphinx-gallery tutorials are scripts run by the documentation build, not
# modules to import for doctests (importing a tutorial would run it); `python -m pytest docs` collects nothing.
collect_ignore = _alias_paths() + ["docs"]
