"""The one entry point of vpeval's benchmark scripts (run from the repository root).

    python -m benchmarks                  # every script: what it measures and where its figures stand
    python -m benchmarks NAME --help      # one script's options
    python -m benchmarks NAME [ARGS...]   # runs benchmarks/NAME.py (or NAME.sh) with ARGS

A script runs in a child process exactly as ``python benchmarks/NAME.py ARGS`` (``bash benchmarks/NAME.sh ARGS``)
would, with this tree's ``src`` first on ``PYTHONPATH`` (so it measures this tree's vpeval, whichever vpeval is
installed); its exit status is returned. The scripts stay runnable by their paths, as BENCHMARKS.md and docs/ write
their commands. Every script here stands behind a figure of BENCHMARKS.md, docs/ or TESTING.md (or, for
``bench_audio``, of a docstring in src/); one-off probes that no current figure cites are not kept (git history
has them). ``tests/test_benchmarks_index.py`` checks that this table and the folder agree.
"""

from __future__ import annotations

import difflib
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: where the figures stand -> {script name: what it measures}
SCRIPTS_BY_DOC: dict[str, dict[str, str]] = {
    "BENCHMARKS.md": {
        "run": "every operation beside its floor, interleaved (the tables; --only SECTIONS, --markdown)",
        "micro": "the small measurements quoted in the notes, each beside what it replaced",
        "profile_cost": "the privacy profile's parts on one attacker's scores beside one numpy.sort",
        "relabel_kernel": "one relabelling of a large score file with and without the compiled loops",
        "report_parts": "the parts of `vpeval report` made faster, each beside what it replaced",
        "report_cpu": "where the CPU of one `vpeval report` goes (main process, workers), one or two trees",
        "verdict_ab": "the verdict's relabelling test, two source trees in turns at one load",
        "scaling": "`vpeval verify` with and without the verdict at 1e6, 1e7, 1e8 lines beside a read and a sort",
        "process_memory": "peak memory of one `vpeval` command per process (main, workers) and in total",
        "replicates_time": "bootstrap and chance floors of a demo-shaped list, batched against one at a time",
        "allocator": "the verdict on a large file with and without vpeval's allocator setting (also docs/usage.md)",
        "first_touch": "touching new memory against memory freed and taken back (also docs/usage.md)",
        "fusion_overlap": "how many of the demo's fusion fits need the separation linear program",
        "demo_time": "wall time and peak memory of `vpeval demo` for two source trees, interleaved",
        "demo_timeline": "where one `vpeval demo` spends its wall time, from its progress messages",
        "demo_cores": "how many cores `vpeval demo` keeps busy, second by second",
        "cluster": "anonymize + embed on a local Dask cluster; 1-to-N linkage of 1e8 scores through dask",
        "adapt_time": "adaptation time of the extractor-adapted attacker on the example's training speakers",
        "bench_asr_tts": "real-time factor of the asr-tts anonymizer (Whisper-base, then Piper or espeak-ng)",
    },
    "docs/verdict_calibration.md": {
        "verdict_calibration": "size, power and interval coverage of the verdict by simulated audits",
        "profile_calibration": "coverage and power of the privacy profile's bounds by simulation",
        "secrecy_size": "size of the perfect-secrecy test on every input design, by simulation",
        "cells_size": "size and power of the test of large score files on cells against the positional test",
    },
    "docs/demo.md": {"adapted_vs_backend": "the adapted attacker against the back-end-only attackers, with intervals"},
    "docs/report.md": {
        "linkage_exposure": "a one-speaker leak in 1-to-N tables: leaks, innocent speakers named, by simulation",
    },
    "docs/beyond.md": {
        "population": "population curves and combined probes: time and memory against the enrolled N",
    },
    "docs/conventions.md": {
        "linkability_bias": "the linkability estimator's bias on uninformative scores against the trial counts",
    },
    "docs/findings.md": {"insample_baseline": "CCA and Procrustes on independent embeddings: in-sample vs held-out"},
    "docs/extractors.md": {
        "extractor_eer": "ROCCH-EER and speed of each speaker extractor on clean speech",
        "model_file_hash": "the cost of hashing a model file when it is opened",
    },
    "docs/install.md": {"install_size": "size and time of the README's installs, each in a new venv (bash)"},
    "TESTING.md": {"mutation": "mutation testing of the core metric modules with mutmut"},
    "src/vpeval/audio/embed/resemblyzer.py (the `threads` default)": {
        "bench_audio": "real-time factor of McAdams and the extractors, per torch thread count",
    },
}
#: script name -> what it measures
SCRIPTS = {name: what for scripts in SCRIPTS_BY_DOC.values() for name, what in scripts.items()}

#: modules the scripts import, not run on their own
HELPERS = {
    "timing": "the interleaving stopwatch of profile_cost and relabel_kernel",
    "simulation_common": "the Clopper-Pearson interval and the design options of the three simulation scripts",
}


def script_path(name: str) -> Path:
    """``benchmarks/NAME.py`` or, for a shell script, ``benchmarks/NAME.sh``."""
    py = HERE / f"{name}.py"
    return py if py.is_file() else HERE / f"{name}.sh"


def listing() -> str:
    width = max(map(len, SCRIPTS))
    lines = ["usage: python -m benchmarks NAME [ARGS...]   (from the repository root; NAME --help: its options)"]
    for doc, scripts in SCRIPTS_BY_DOC.items():
        lines += ["", f"figures in {doc}:"] + [f"  {name:<{width}}  {what}" for name, what in scripts.items()]
    lines += ["", "helpers the scripts import: " + "; ".join(f"{h}: {d}" for h, d in HELPERS.items())]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help", "list"):
        print(listing())
        return 0
    name, args = argv[0].removesuffix(".py").removesuffix(".sh"), argv[1:]
    if name not in SCRIPTS:
        near = difflib.get_close_matches(name, SCRIPTS, n=3)
        print(f"python -m benchmarks: no script {name!r}" + (f"; did you mean {', '.join(near)}?" if near else "")
              + " (python -m benchmarks lists them; git history keeps the dropped ones)", file=sys.stderr)
        return 2
    path = script_path(name)
    cmd = ["bash", str(path), *args] if path.suffix == ".sh" else [sys.executable, str(path), *args]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(cmd, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
