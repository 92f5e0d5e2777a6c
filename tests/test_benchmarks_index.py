"""benchmarks/ has one entry point, ``python -m benchmarks`` (issue 47, item 7): its table names every script of
the folder, each where its figures stand, and that place cites the script."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"


def _index():
    spec = importlib.util.spec_from_file_location("benchmarks_index", BENCH / "__main__.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_table_and_the_folder_agree():
    index = _index()
    files = {p.stem for p in BENCH.iterdir() if p.suffix in (".py", ".sh") and p.name != "__main__.py"}
    assert files == set(index.SCRIPTS) | set(index.HELPERS)
    assert not set(index.SCRIPTS) & set(index.HELPERS)
    for name in index.SCRIPTS:
        assert index.script_path(name).is_file(), name


def test_every_script_is_cited_where_the_table_says():
    index = _index()
    for doc, scripts in index.SCRIPTS_BY_DOC.items():
        text = (ROOT / doc.split(" ")[0]).read_text(encoding="utf-8")
        for name in scripts:
            assert f"benchmarks/{index.script_path(name).name}" in text, (name, doc)


def test_listing_and_unknown_names():
    run = [sys.executable, "-m", "benchmarks"]
    listed = subprocess.run(run, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    index = _index()
    for name, what in index.SCRIPTS.items():
        assert f"  {name} " in listed and what in listed, name
    bad = subprocess.run([*run, "bench_core"], cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 2 and "no script 'bench_core'" in bad.stderr


def test_a_script_runs_through_the_entry_point():
    """``python -m benchmarks NAME ARGS`` passes ARGS and the exit status through (a script's ``--help``)."""
    r = subprocess.run([sys.executable, "-m", "benchmarks", "secrecy_size", "--help"], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0 and "usage: secrecy_size.py" in r.stdout, r.stderr
