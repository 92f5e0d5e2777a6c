"""The allocator setting of vpeval's own processes (vpeval.pipeline.allocator)."""

import subprocess
import sys
import textwrap

import pytest

from vpeval.pipeline import allocator

# faults of ten 40 MB temporaries, allocated and freed in turn, in a fresh process
_FAULTS = textwrap.dedent("""
    import resource, sys
    import numpy as np
    from vpeval.pipeline.allocator import reuse_large_blocks
    if sys.argv[1] == "tuned":
        print(reuse_large_blocks(), end=" ")
    x = np.ones(5_000_000)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(10):
        y = x * 2.0
        del y
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
""")


def _faults(mode, env=None):
    out = subprocess.run([sys.executable, "-c", _FAULTS, mode], capture_output=True, text=True, check=True,
                         env=env).stdout.split()
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc mallopt")
def test_freed_large_blocks_are_reused_without_page_faults():
    import os

    env = {k: v for k, v in os.environ.items() if k not in allocator._USER_SETTINGS}
    (plain,) = _faults("plain", env)
    ok, tuned = _faults("tuned", env)
    if ok != "True":
        pytest.skip("this C library has no glibc mallopt")
    # plain: every temporary is a new mapping faulted in anew (fewer faults than its 9,766 pages where the
    # kernel backs it with huge pages); tuned: the first temporary's pages only, reused by the other nine
    assert int(tuned) * 4 < int(plain)


def test_a_users_own_setting_wins(monkeypatch):
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "131072")
    assert allocator.reuse_large_blocks() is False


def test_nothing_happens_off_linux(monkeypatch):
    monkeypatch.setattr(allocator.sys, "platform", "darwin")
    assert allocator.reuse_large_blocks() is False
