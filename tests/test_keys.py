"""vpeval.keys.sorted_codes: the same arrays as np.unique(return_inverse=True), by hashing."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vpeval.keys import same_keys, sorted_codes


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


def test_codes_of_a_read_only_array_are_remembered_while_it_lives():
    import gc

    import vpeval.keys as keys

    a = np.array(["s2", "s1", "s2", "s3"])
    a.flags.writeable = False
    first = sorted_codes(a)
    assert sorted_codes(a) is first  # remembered
    names, codes = first
    np.testing.assert_array_equal(names, np.unique(a))
    np.testing.assert_array_equal(codes, np.unique(a, return_inverse=True)[1])
    with pytest.raises(ValueError):  # shared by every caller: read-only
        codes[0] = 5
    key = id(a)
    assert key in keys._memo
    del a, first, names, codes
    gc.collect()
    assert key not in keys._memo  # forgotten with the array
    w = np.array(["b", "a"])  # writable (its contents may change): computed every time
    assert sorted_codes(w) is not sorted_codes(w)
    view = np.array(["b", "a", "b"])[::2]  # read-only view of a writable base: not remembered either
    view.flags.writeable = False
    assert sorted_codes(view) is not sorted_codes(view)


def test_codes_of_larger_arrays_are_remembered_by_their_contents():
    import vpeval.keys as keys

    rng = np.random.default_rng(0)
    a = np.array([f"spk{v}" for v in rng.integers(0, 40, 1000)])  # writable, e.g. unpickled in a worker
    first = sorted_codes(a)
    again = sorted_codes(a.copy())  # another array, the same contents: the same two arrays
    assert again is first
    np.testing.assert_array_equal(first[0], np.unique(a))
    np.testing.assert_array_equal(first[1], np.unique(a, return_inverse=True)[1])
    with pytest.raises(ValueError):
        first[1][0] = 1
    a[0] = "zzz"  # changed contents: computed anew, never the stale codes
    names, codes = sorted_codes(a)
    assert names[-1] == "zzz" and codes[0] == names.size - 1
    assert sorted_codes(a[:-1].copy().astype("<U4")) is not first  # another dtype or shape: another entry
    for i in range(keys.CONTENT_MEMO_ENTRIES + 5):  # bounded: the least recent are dropped
        sorted_codes(np.array([f"x{i}"] * 300))
    assert len(keys._content_memo) == keys.CONTENT_MEMO_ENTRIES


def test_the_content_memo_holds_a_bounded_number_of_bytes(monkeypatch):
    import vpeval.keys as keys

    monkeypatch.setattr(keys, "CONTENT_MEMO_BYTES", 100_000)
    for i in range(20):
        sorted_codes(np.array([f"utt{i}-{j:06d}" for j in range(1000)]))  # ~56 KB of names and codes each
    assert len(keys._content_memo) == 1  # the most recent alone


def test_the_content_memo_under_threads():
    from concurrent.futures import ThreadPoolExecutor

    import vpeval.keys as keys

    arrays = [np.array([f"s{(i * 7 + j) % 50}" for j in range(400)]) for i in range(100)]

    def check(a):
        names, codes = sorted_codes(a.copy())
        return np.array_equal(names[codes], a)

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(check, arrays * 3))
    assert len(keys._content_memo) <= keys.CONTENT_MEMO_ENTRIES


def test_same_keys_is_array_equal_with_a_shortcut_for_one_object():
    a = np.array(["spk1", "spk2", "spk3"])
    assert same_keys(a, a) and same_keys(a, a.copy()) and same_keys(None, None)
    assert not same_keys(a, a[::-1]) and not same_keys(a, a[:2]) and not same_keys(a, None)
