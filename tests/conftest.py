import os
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]
# VPEVAL_SHARED points elsewhere (e.g. to a missing folder, to check that the suite stands without it).
SHARED = Path(os.environ.get("VPEVAL_SHARED") or ROOT.parent / "shared")

# Hypothesis profiles.  "ci": derandomized (each test's examples follow from its own source, so a CI run
# is reproducible), no example database (a `.hypothesis` folder left in a reused workspace must not replay
# an old failure) and the reproduction blob printed on failure.  "dev": Hypothesis' random default with its
# local example database, for finding new failures.  HYPOTHESIS_PROFILE names a profile explicitly;
# otherwise "ci" when the CI environment variable is set (CI runs with CI=true), else "dev".  A test's own
# @settings (max_examples, deadline) still apply on top of the profile.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("dev", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))


@pytest.fixture
def shared():
    """The workspace's shared data folder (../shared from the repository root); skip when absent."""
    if not SHARED.is_dir():
        pytest.skip("../shared is not present beside the repository")
    return SHARED


EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """``vpeval demo --example examples/librispeech-mini`` (the three-system example, whose numbers docs/demo.md
    and docs/findings.md quote), run once per test session and shared (read-only) by the demo and browser tests:
    (report folder, terminal output). About a minute on 2 cores."""
    from typer.testing import CliRunner

    from vpeval.cli.main import app

    example = EXAMPLES / "librispeech-mini"
    if not sorted(example.glob("embeddings_*.npz")):
        pytest.skip("bundled example missing")
    out = tmp_path_factory.mktemp("demo") / "report"
    r = CliRunner().invoke(app, ["demo", "--example", str(example), "-o", str(out)])
    assert r.exit_code == 0, r.output
    return out, r.output


@pytest.fixture(scope="session")
def ladder_run(tmp_path_factory):
    """``vpeval demo`` as a new user runs it (the default example, examples/ladder: six systems from none to
    ASR + TTS), once per test session: (report folder, terminal output)."""
    from typer.testing import CliRunner

    from vpeval.cli.main import app

    if not (EXAMPLES / "ladder" / "systems.csv").is_file():
        pytest.skip("the ladder example is missing")
    out = tmp_path_factory.mktemp("ladder") / "report"
    r = CliRunner().invoke(app, ["demo", "-o", str(out)])
    assert r.exit_code == 0, r.output
    return out, r.output

