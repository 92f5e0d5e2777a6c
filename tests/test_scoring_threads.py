"""score_block runs BLAS single-threaded; the thread-pool controller behind it is made once and remade only when a
shared object has been loaded or unloaded since (vpeval.pipeline.scoring.one_blas_thread)."""

import numpy as np
import pytest

threadpoolctl = pytest.importorskip("threadpoolctl")

import vpeval.pipeline.scoring as sc  # noqa: E402


def _blas_threads():
    return {i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"}


def test_score_block_limits_blas_to_one_thread_and_restores():
    before = _blas_threads()
    with sc.one_blas_thread():
        assert _blas_threads() == {1}
    assert _blas_threads() == before
    x, m = np.random.default_rng(0).normal(size=(2, 5, 3))
    assert np.array_equal(sc.score_block(x, m), x @ m.T)


def test_controller_reused_until_a_library_is_loaded(monkeypatch):
    state = [(10, 0)]
    made = []

    class Counting(threadpoolctl.ThreadpoolController):
        def __init__(self):
            made.append(1)
            super().__init__()

    monkeypatch.setattr(sc, "_loads_and_unloads", lambda: state[0])
    monkeypatch.setattr(threadpoolctl, "ThreadpoolController", Counting)
    monkeypatch.setattr(sc, "_controller", [None, None])
    for _ in range(3):
        with sc.one_blas_thread():
            pass
    assert len(made) == 1
    state[0] = (11, 0)  # a shared object was loaded: a new controller sees it
    with sc.one_blas_thread():
        pass
    assert len(made) == 2
    monkeypatch.setattr(sc, "_loads_and_unloads", lambda: None)  # counters unreadable: a new one every time
    for _ in range(2):
        with sc.one_blas_thread():
            pass
    assert len(made) == 4


def test_load_counter_moves_when_a_library_is_loaded():
    import ctypes
    import ctypes.util

    state = sc._loads_and_unloads()
    if state is None:
        pytest.skip("no glibc dl_iterate_phdr counters here")
    with open("/proc/self/maps") as f:
        mapped = f.read()
    for short in ("uuid", "bz2", "lzma", "gdbm", "panel", "form", "anl"):
        name = ctypes.util.find_library(short)
        if name and f"lib{short}" not in mapped:
            break
    else:
        pytest.skip("no library left to load")
    ctypes.CDLL(name)
    after = sc._loads_and_unloads()
    assert after[0] > state[0] and after[1] >= state[1]
