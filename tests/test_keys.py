"""vpeval.keys.sorted_codes: the same arrays as np.unique(return_inverse=True), by hashing."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from vpeval.keys import sorted_codes


def test_hand_made():
    names, codes = sorted_codes(np.array(["b", "a", "é", "Z", "", "a"]))
    assert names.tolist() == ["", "Z", "a", "b", "é"]  # code-point order
    assert codes.tolist() == [3, 2, 4, 1, 0, 2]
    assert codes.dtype == np.int64


def test_empty_and_2d():
    names, codes = sorted_codes(np.array([], dtype=str))
    assert names.size == 0 and codes.size == 0
    names, codes = sorted_codes(np.array([["x", "y"], ["y", "x"]]))
    assert names.tolist() == ["x", "y"] and codes.tolist() == [0, 1, 1, 0]


@given(st.lists(st.text(max_size=4), max_size=60))
def test_equals_numpy_unique(values):
    arr = np.asarray(values, dtype=str)
    names, codes = sorted_codes(arr)
    u, inv = np.unique(arr, return_inverse=True)
    assert names.tolist() == u.tolist()
    assert codes.tolist() == inv.reshape(-1).tolist()
    # order kept: comparing codes compares names
    if arr.size > 1:
        assert np.array_equal(np.argsort(codes, kind="stable"), np.argsort(arr, kind="stable"))
