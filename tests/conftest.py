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
