"""The layout of docs/architecture.md, enforced: imports point down the layers, no import (lazy ones included)
closes a circle among vpeval's modules, and no module is longer than the limit."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from vpeval._deprecated import MOVED

ROOT = Path(__file__).resolve().parents[1] / "src" / "vpeval"

#: Layer of every top-level piece of the package (docs/architecture.md): a module may import its own layer and
#: the layers below, never one above.
LAYERS = {
    "_version": 0, "errors": 0, "_checks": 0, "_docs": 0, "_deprecated": 0, "progress": 0, "text": 0, "blocks": 0,
    "rowscan": 0, "ranks": 0, "keys": 0, "jit": 0, "_lazy": 0,
    "metrics": 1, "calibration": 1, "disclosure": 1, "simulate": 1, "simulate_kinds": 1, "backends": 1,
    "io": 2, "plots": 2,
    "stats": 3,
    "pipeline": 4,
    "audio": 5,
    "analysis": 6,
    "report": 7,
    "cli": 8,
    "__init__": 9,  # the package root re-exports the public names (lazily)
}
#: Old module paths kept as deprecation aliases (vpeval._deprecated.MOVED): they sit outside the layers, and no
#: module of vpeval may import them.
ALIASES = set(MOVED)
MAX_LINES = 700


def _modules() -> dict[str, Path]:
    out = {}
    for p in ROOT.rglob("*.py"):
        parts = list(p.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def _imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the vpeval modules it imports anywhere in its body (function-level imports included)."""
    edges = defaultdict(set)
    for m, p in mods.items():
        pkg = m if p.name == "__init__.py" else m.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] != "vpeval":
                    continue
                for a in node.names:
                    sub = f"{target}.{a.name}"
                    edges[m].add(sub if sub in mods else target)
            elif isinstance(node, ast.Import):
                edges[m] |= {a.name for a in node.names if a.name.split(".")[0] == "vpeval"}
    return edges


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_top_level_piece_has_a_layer():
    tops = {_top(m) for m in _modules() if m not in ALIASES and not any(m.startswith(a + ".") for a in ALIASES)}
    assert tops <= set(LAYERS), sorted(tops - set(LAYERS))


def test_imports_point_down_the_layers():
    mods = _modules()
    bad = []
    for a, targets in _imports(mods).items():
        if a in ALIASES:
            continue
        ta = _top(a)
        for b in targets:
            tb = _top(b)
            if b in ALIASES:
                bad.append(f"{a} imports the deprecated alias {b}")
            elif LAYERS.get(tb, 99) > LAYERS.get(ta, -1):
                bad.append(f"{a} (layer {LAYERS.get(ta)}) imports {b} (layer {LAYERS.get(tb)})")
    assert not bad, "\n".join(sorted(bad))


def test_no_import_cycle_among_modules():
    """Tarjan's strongly connected components of the module graph (importing a module also runs its parent
    packages' __init__); lazy imports inside functions count."""
    mods = _modules()
    graph = {m: set() for m in mods}
    for a, targets in _imports(mods).items():
        for b in targets:
            parts = b.split(".")
            for i in range(1, len(parts) + 1):
                c = ".".join(parts[:i])
                if c in mods and c != a and not a.startswith(c + "."):
                    graph[a].add(c)
    index, low, stack, on, cycles, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not cycles, cycles


def test_no_module_is_longer_than_the_limit():
    long = {m: n for m, p in _modules().items() if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, long


def test_the_checker_finds_a_cycle_and_an_upward_import(tmp_path, monkeypatch):
    """The checks can fail: a two-module circle and a metrics module importing the report are found."""
    pkg = tmp_path / "vpeval"
    (pkg / "metrics").mkdir(parents=True)
    (pkg / "report").mkdir()
    for d in (pkg, pkg / "metrics", pkg / "report"):
        (d / "__init__.py").write_text("")
    (pkg / "metrics" / "a.py").write_text("def f():\n    from . import b\n")
    (pkg / "metrics" / "b.py").write_text("from .a import f\nfrom ..report import page\n")
    (pkg / "report" / "page.py").write_text("")
    monkeypatch.setattr(__import__(__name__), "ROOT", pkg)
    import pytest

    with pytest.raises(AssertionError, match="vpeval.metrics.a"):
        test_no_import_cycle_among_modules()
    with pytest.raises(AssertionError, match="imports vpeval.report"):
        test_imports_point_down_the_layers()
