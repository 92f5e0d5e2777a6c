"""Sphinx configuration of vpeval's documentation site.

Build (from the repository root; ``pip install -e '.[docs]'`` first):

    sphinx-build -W --keep-going -b html docs docs/_build/html

Nothing is downloaded while building: no intersphinx, a theme installed as a package, and the tutorials run
on the repository's own files (``examples/librispeech-mini``) or on data they make themselves.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
# build against the source tree beside this file even when another vpeval is installed
sys.path.insert(0, str(ROOT / "src"))

import vpeval  # noqa: E402

project = "vpeval"
author = "vpeval developers"
copyright = "vpeval developers (MIT licence)"
release = vpeval.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

# the existing Markdown chapters are read unchanged by myst-parser; reST for the API pages
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "sg_execution_times.rst"]  # sphinx-gallery's timing page: not part of the site
templates_path = ["_templates"]

# --- Markdown (myst-parser) -----------------------------------------------------------------------------------
# GitHub-style heading anchors, so the chapters' own links (``report.md#the-verdict-...``) resolve; no syntax
# extensions: the chapters are plain CommonMark + tables, as GitHub shows them
myst_heading_anchors = 3

# --- API reference (autodoc, autosummary, numpydoc) -----------------------------------------------------------
autosummary_generate = True
autodoc_typehints = "none"  # the numpydoc Parameters sections state the types
numpydoc_show_class_members = False  # the class template lists the members itself
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True

# --- Executed tutorials (sphinx-gallery) ----------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": "tutorials",
    "gallery_dirs": "auto_tutorials",
    "filename_pattern": r"/plot_",  # every tutorial runs at build time
    "within_subsection_order": "FileNameSortKey",
    "abort_on_example_error": True,
    "download_all_examples": False,
    "reference_url": {"vpeval": None},  # links into this site only; nothing is fetched
    "doc_module": ("vpeval",),
    "backreferences_dir": None,
    "min_reported_time": 1,
    "remove_config_comments": True,
}
# headless: no window for the figures the tutorials draw
os.environ.setdefault("MPLBACKEND", "agg")

# --- HTML -----------------------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"vpeval {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "header_links_before_dropdown": 4,
    "show_toc_level": 2,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_static_path = ["_static"]
html_css_files = ["vpeval.css"]
html_show_sourcelink = False


# --- The API reference lists every public name ------------------------------------------------------------------
def _api_listed() -> set[str]:
    """``module.name`` of every autosummary item of api/index.rst (after its ``currentmodule``)."""
    listed, module, in_table = set(), "vpeval", False
    for line in (DOCS / "api" / "index.rst").read_text(encoding="utf-8").splitlines():
        m = re.match(r"\.\. currentmodule:: (\S+)", line)
        if m:
            module = m.group(1)
        if line.startswith(".. autosummary::"):
            in_table = True
        elif in_table and re.match(r"   [A-Za-z_]\w*$", line):
            listed.add(f"{module}.{line.strip()}")
        elif in_table and line and not line.startswith(" "):
            in_table = False
    if (DOCS / "api" / "simulate.rst").exists():
        listed.add("vpeval.simulate")
    return listed


def _missing_from_api() -> list[str]:
    """Public names (``vpeval.__all__`` and ``DOCUMENTED`` of tests/test_public_api.py) not in the API reference."""
    import ast
    import importlib

    listed = _api_listed()
    missing = [f"vpeval.{n}" for n in vpeval.__all__ if n != "__version__" and f"vpeval.{n}" not in listed]
    tree = ast.parse((ROOT / "tests" / "test_public_api.py").read_text(encoding="utf-8"))
    documented = next(ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
                      and any(getattr(t, "id", None) == "DOCUMENTED" for t in node.targets))
    top = {id(getattr(vpeval, n)) for n in vpeval.__all__ if n != "__version__"}
    for module, names in documented.items():
        mod = importlib.import_module(module)
        for n in names:
            if f"{module}.{n}" not in listed and id(getattr(mod, n)) not in top:
                missing.append(f"{module}.{n}")
    return missing


def _check_api(app) -> None:
    from sphinx.util import logging

    for name in _missing_from_api():
        logging.getLogger(__name__).warning(
            "public name %s is not in docs/api/index.rst (tests/test_public_api.py lists it)", name)


def _report_numpydoc_warnings(app) -> None:
    """numpydoc reports a malformed docstring (an unknown section, ...) with ``warnings.warn``, which
    ``sphinx-build -W`` does not see: pass those on as Sphinx warnings, so that they fail the build too."""
    import warnings

    from sphinx.util import logging

    log, show = logging.getLogger("numpydoc"), warnings.showwarning

    def showwarning(message, category, filename, lineno, file=None, line=None):
        if "numpydoc" in str(filename):
            log.warning("numpydoc: %s", message)
        else:
            show(message, category, filename, lineno, file, line)

    warnings.showwarning = showwarning


def setup(app):
    app.connect("builder-inited", _check_api)
    app.connect("builder-inited", _report_numpydoc_warnings)
