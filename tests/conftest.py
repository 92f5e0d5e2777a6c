from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


@pytest.fixture
def shared():
    """The workspace's shared data folder (../shared from the repository root); skip when absent."""
    if not SHARED.is_dir():
        pytest.skip("../shared is not present beside the repository")
    return SHARED
