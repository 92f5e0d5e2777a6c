"""The compiled moment loop (vpeval.metrics.moment_kernel) against the NumPy bincount path: bit-identical."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vpeval.metrics.linkage.histogram as histogram
import vpeval.metrics.moment_kernel as mk
from vpeval.metrics.linkage import lid_pipeline


def _groups(seed, n, N, n_rgrp, n_cgrp):
    rng = np.random.default_rng(seed)
    return rng.integers(0, n_rgrp, n).astype(np.int64), rng.integers(0, n_cgrp, N).astype(np.int64)


def _chunk(seed, n, N, scale):
    rng = np.random.default_rng(seed)
    S = rng.normal(size=(n, N)) * scale
    ti = rng.integers(0, N, n)
    S[np.arange(n), ti] += 2.0 * scale
    return S, ti


def _plain_python(monkeypatch):
    """Make _bin_chunk's use_jit path run the loop uncompiled (its exact arithmetic, without numba)."""
    monkeypatch.setattr(histogram, "compiled_accumulate", lambda: mk.accumulate_moments)


@pytest.mark.parametrize("n,N,n_rgrp,n_cgrp", [(7, 40, 1, 1), (9, 61, 3, 4), (12, 33, 5, 6)])
def test_plain_loop_equals_the_bincount_path_bit_for_bit(monkeypatch, n, N, n_rgrp, n_cgrp):
    S, ti = _chunk(n * N, n, N, 3.7)
    rg, cg = _groups(n + N, n, N, n_rgrp, n_cgrp)
    ref = histogram._bin_chunk(S, ti, rg, cg, n_rgrp, n_cgrp)
    _plain_python(monkeypatch)
    got = histogram._bin_chunk(S, ti, rg, cg, n_rgrp, n_cgrp, use_jit=True)
    assert got[0] == ref[0]
    assert got[1].shape == ref[1].shape and np.array_equal(got[1], ref[1])
    assert np.array_equal(got[2], ref[2]) and np.array_equal(got[3], ref[3])
    # every score is in exactly one bin, the targets in their row group's target histogram
    assert got[1][0].sum() == n * N
    assert got[1][0, n_rgrp * n_cgrp :].sum() == n


@settings(max_examples=40, deadline=None, derandomize=True)
@given(n=st.integers(1, 6), N=st.integers(2, 30), seed=st.integers(0, 2**32 - 1),
       scale=st.sampled_from([1e-3, 1.0, 250.0]))
def test_plain_loop_equals_bincount_property(n, N, seed, scale):
    S, ti = _chunk(seed, n, N, scale)
    rg, cg = _groups(seed + 1, n, N, 2, 3)
    ref = histogram._bin_chunk(S, ti, rg, cg, 2, 3)
    orig = histogram.compiled_accumulate
    histogram.compiled_accumulate = lambda: mk.accumulate_moments
    try:
        got = histogram._bin_chunk(S, ti, rg, cg, 2, 3, use_jit=True)
    finally:
        histogram.compiled_accumulate = orig
    assert got[0] == ref[0] and np.array_equal(got[1], ref[1])


def test_compiled_loop_equals_the_bincount_path():
    pytest.importorskip("numba")
    assert mk.compiled_accumulate() is not None
    S, ti = _chunk(3, 40, 700, 1.0)
    rg, cg = _groups(4, 40, 700, 5, 6)
    ref = histogram._bin_chunk(S, ti, rg, cg, 5, 6)
    got = histogram._bin_chunk(S, ti, rg, cg, 5, 6, use_jit=True)
    assert got[0] == ref[0] and np.array_equal(got[1], ref[1])


def test_lid_pipeline_is_the_same_with_and_without_the_compiled_loop(monkeypatch):
    pytest.importorskip("numba")
    rng = np.random.default_rng(5)
    n, N = 300, 80
    S = rng.normal(size=(n, N))
    ti = rng.integers(0, N, n)
    S[np.arange(n), ti] += 1.5
    monkeypatch.setattr(histogram, "JIT_MIN_SCORES", 10**18)
    ref = lid_pipeline(None, S, None, ti, n_folds=5)
    calls = []
    real = mk.compiled_accumulate()

    def counted(*a):
        calls.append(1)
        return real(*a)

    monkeypatch.setattr(histogram, "JIT_MIN_SCORES", 0)
    monkeypatch.setattr(histogram, "compiled_accumulate", lambda: counted)
    got = lid_pipeline(None, S, None, ti, n_folds=5)
    assert calls  # the compiled loop did the binning
    assert np.array_equal(got.slope, ref.slope) and np.array_equal(got.intercept, ref.intercept)
    assert np.array_equal(got.lid, ref.lid)


def test_jit_can_be_switched_off(monkeypatch):
    pytest.importorskip("numba")
    from vpeval import jit

    monkeypatch.setenv("VPEVAL_JIT", "0")
    assert jit._compile(mk.accumulate_moments, mk._SIGNATURE) is None
    monkeypatch.setenv("VPEVAL_JIT", "1")
    assert jit._compile(mk.accumulate_moments, mk._SIGNATURE) is not None


def test_results_do_not_depend_on_the_memory_order_of_the_matrix():
    """A column-major matrix gives the same bits as its row-major copy (and as a dask array of it): every
    block is scanned row-major."""
    from vpeval.metrics.linkage import lid, znorm_rows

    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 40))
    ti = rng.integers(0, 40, 200)
    x[np.arange(200), ti] += 1.0
    x /= np.abs(x).max(axis=1, keepdims=True) * 1.01  # no power-of-two rescaling copy in the z-norm
    f = np.asfortranarray(x)
    assert np.array_equal(znorm_rows(x), znorm_rows(f))
    assert np.array_equal(lid(x, ti), lid(f, ti))
    a, b = lid_pipeline(None, x, None, ti), lid_pipeline(None, f, None, ti)
    assert np.array_equal(a.slope, b.slope) and np.array_equal(a.lid, b.lid)
