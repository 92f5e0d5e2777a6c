"""Mutation testing of the core metric modules with mutmut (run outside CI, like the other benchmarks).

Install (not a project dependency, not installed by CI):

    pip install mutmut          # measured with mutmut 3.8.1

Run from the repository root:

    python benchmarks/mutation.py                       # all five core modules
    python benchmarks/mutation.py --modules metrics/zebra.py --max-children 2

The repository's ``src/``, ``tests/`` and ``pyproject.toml`` are copied to a scratch folder (default
``$TMPDIR/vpeval-mutation``) with a ``setup.cfg`` holding the ``[mutmut]`` section, so the working tree is
never touched. Each module is tested with the fast test files listed in ``FAST_TESTS`` (its own tests plus
the oracles and report-level tests that call it; doctests are off), with ``../shared`` absent
(``VPEVAL_SHARED`` points to a missing folder) and the deterministic Hypothesis profile. mutmut then runs,
for each mutant, only the tests that execute the mutated function. The script prints, per module, the
counts of mutmut's outcomes and the kill rate ``killed / (killed + survived)`` (timeouts count as killed,
as mutmut does), and the names of the surviving mutants; inspect one with ``mutmut show NAME`` in the
scratch folder. Results are recorded by hand, with the reasons survivors are equivalent, in TESTING.md.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Module (under src/vpeval/) -> the fast test files that exercise it. Found by grepping tests/ for every
#: function and class the module defines and for the src/ callers that reach it (e.g. d_ece_bins and
#: _min_cllr are called only by metrics/summary.verification_summary, tested in test_cli_report.py and
#: test_zebra.py; d_ece and zebra are called by stats/metrics.py, tested in test_stats.py). mutmut runs
#: for each mutant only the tests of this subset that executed the mutated function, so a wider subset
#: costs time only in mutmut's first (coverage) step and where the tests really call the function. A test
#: file missing here makes its mutants survive spuriously (the partial zebra run of issue 17: 13 d_ece_bins
#: survivors without test_cli_report.py).
FAST_TESTS = {
    "metrics/verification.py": ["tests/test_verification.py", "tests/test_linkability.py",
                                "tests/test_calibration_core.py", "tests/test_cli_report.py",
                                "tests/test_zebra.py", "tests/test_stats.py", "tests/test_disclosure.py",
                                "tests/test_identification.py", "tests/test_linkage.py"],
    "metrics/zebra.py": ["tests/test_zebra.py", "tests/test_verification.py", "tests/test_cli_report.py",
                         "tests/test_stats.py", "tests/test_profile.py"],
    "calibration/pav.py": ["tests/test_calibration_core.py", "tests/test_zebra.py", "tests/test_disclosure.py",
                           "tests/test_verification.py", "tests/test_cli_report.py", "tests/test_profile.py",
                           "tests/test_distinctiveness.py", "tests/test_calibration_pav_succession.py"],
    "metrics/linkage/*.py": ["tests/test_linkage.py", "tests/test_linkage_binned.py", "tests/test_matrix_io.py",
                             "tests/test_moment_kernel.py", "tests/test_profile.py",
                             "tests/test_stats.py", "tests/test_stats_report.py"],
    "metrics/identification.py": ["tests/test_identification.py", "tests/test_linkage.py"],
    "ranks.py": ["tests/test_identification.py", "tests/test_rank_disclosure.py",
                 "tests/test_linkage.py", "tests/test_matrix_io.py", "tests/test_simulate.py",
                 "tests/test_calibration_rank.py"],
    "rowscan.py": ["tests/test_identification.py", "tests/test_linkage.py", "tests/test_linkage_binned.py",
                   "tests/test_matrix_io.py", "tests/test_strict_readers.py"],
}


def _cfg_list(items):
    return "\n" + "".join(f"    {x}\n" for x in items)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modules", nargs="+", default=list(FAST_TESTS), choices=list(FAST_TESTS))
    ap.add_argument("--scratch", type=Path, default=Path(tempfile.gettempdir()) / "vpeval-mutation")
    ap.add_argument("--max-children", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    if shutil.which("mutmut") is None:
        print("mutmut is not installed: pip install mutmut", file=sys.stderr)
        return 2
    status = 0
    for module in args.modules:
        # a key may be a glob (a package's modules): only_mutate takes it as it is
        work = args.scratch / module.replace("/*.py", "").replace("/", "_").removesuffix(".py")
        if work.exists():
            shutil.rmtree(work)
        work.mkdir(parents=True)
        # examples/ holds the bundled example some tests read (test_distinctiveness.py); without it mutmut's
        # stats step fails on that test and no mutant is checked
        for name in ("src", "tests", "examples"):
            shutil.copytree(ROOT / name, work / name, ignore=shutil.ignore_patterns("__pycache__", ".hypothesis"))
        shutil.copy(ROOT / "pyproject.toml", work / "pyproject.toml")
        tests = FAST_TESTS[module]
        (work / "setup.cfg").write_text(
            "[mutmut]\n"
            "source_paths = src/\n"
            f"only_mutate = src/vpeval/{module}\n"
            f"also_copy ={_cfg_list(['examples/'])}"
            f"pytest_add_cli_args_test_selection ={_cfg_list(tests)}"
            f"pytest_add_cli_args ={_cfg_list(['-p', 'no:cacheprovider', '-o', 'addopts=', '-q'])}"
        )
        env = dict(os.environ, PYTHONPATH="src", VPEVAL_SHARED=str(work / "no-shared"), HYPOTHESIS_PROFILE="ci")
        print(f"== {module}: mutmut run in {work} with {', '.join(tests)}", flush=True)
        # mutmut's own output (progress, and why a run stopped, e.g. a failing clean test) goes to run.log
        with open(work / "run.log", "w") as log:
            run = subprocess.run(["mutmut", "run", "--max-children", str(args.max_children)], cwd=work, env=env,
                                 stdout=log, stderr=subprocess.STDOUT)
        if run.returncode != 0:
            print(f"   mutmut run exited with {run.returncode}: see {work / 'run.log'}")
            status = 1
        res = subprocess.run(["mutmut", "results", "--all", "true"], cwd=work, env=env, capture_output=True,
                             text=True)
        outcomes = Counter()
        survivors = []
        for line in res.stdout.splitlines():
            m = re.match(r"\s*(\S+): (.+)$", line)
            if m:
                outcomes[m.group(2).strip()] += 1
                if m.group(2).strip() == "survived":
                    survivors.append(m.group(1))
        killed = outcomes["killed"] + outcomes["timeout"]
        judged = killed + outcomes["survived"]
        rate = killed / judged if judged else float("nan")
        print(f"   outcomes: {dict(outcomes)}")
        print(f"   kill rate: {killed}/{judged} = {rate:.1%}")
        for s in survivors:
            print(f"   survived: {s}")
        if not judged:
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
