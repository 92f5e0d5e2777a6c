"""The low-memory path of verification_summary: chunked merge, run compression, LLRs by binary search.

Everything must equal the public functions bit for bit; a tiny chunk size puts chunk edges everywhere.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vpeval
from vpeval import blocks
from vpeval.metrics.summary import verification_summary

_VALUES = st.sampled_from([-np.inf, -2.0, -1.0, -0.0, 0.0, 0.5, 1.0, 3.0, np.inf])
_SCORES = st.lists(st.one_of(_VALUES, st.floats(-5, 5, allow_nan=False)), min_size=1, max_size=40)


def _stable_merge_oracle(st_, sn_):
    """Tie blocks by a stable argsort of the concatenation (the previous implementation)."""
    both = np.concatenate([st_, sn_])
    order = np.argsort(both, kind="stable")
    v, is_tar = both[order], order < st_.size
    starts = np.flatnonzero(np.r_[True, v[1:] != v[:-1]])
    n_tar = np.add.reduceat(is_tar.astype(np.int64), starts)
    n_non = np.diff(np.r_[starts, v.size]) - n_tar
    return v[starts], n_tar, n_non


@settings(max_examples=150, deadline=None)
@given(tar=_SCORES, non=_SCORES)
def test_merge_matches_stable_sort(tar, non):
    for c in (2, 5, 1 << 16):
        blocks._CHUNK, saved = c, blocks._CHUNK
        try:
            st_, sn_ = np.sort(np.array(tar)), np.sort(np.array(non))
            v, t, n = _stable_merge_oracle(st_, sn_)
            for dtype in (np.int64, np.int32):
                b = blocks.merge_sorted(st_, sn_, dtype)
                np.testing.assert_array_equal(b.values, v)
                np.testing.assert_array_equal(b.n_tar, t)
                np.testing.assert_array_equal(b.n_non, n)
                assert b.n_tar.dtype == dtype
        finally:
            blocks._CHUNK = saved


@settings(max_examples=150, deadline=None)
@given(tar=_SCORES, non=_SCORES, chunk_size=st.sampled_from([1, 3, 1 << 16]))
def test_summary_equals_public_functions_bitwise(tar, non, chunk_size):
    saved = blocks._CHUNK
    blocks._CHUNK = chunk_size
    try:
        tar, non = np.array(tar), np.array(non)
        metrics, llrs = verification_summary(tar, non, p_targets=(0.01, 0.5), return_llrs=True)
    finally:
        blocks._CHUNK = saved
    s = {m.key: m.value for m in metrics}
    assert s["eer_interp"] == vpeval.eer(tar, non, method="interp")
    assert s["eer_rocch"] == vpeval.rocch_eer(tar, non)
    assert s["min_dcf_0.01"] == vpeval.min_dcf(tar, non, p_target=0.01)
    assert s["min_dcf_0.5"] == vpeval.min_dcf(tar, non, p_target=0.5)
    assert s["min_cllr"] == vpeval.min_cllr(tar, non)
    assert s["eps_max"] == vpeval.zebra(tar, non).eps_max
    for key, laplace in (("pav", False), ("pav_laplace", True)):
        t, n = vpeval.pav_llr(tar, non, laplace=laplace)
        np.testing.assert_array_equal(llrs[key][0], t)
        np.testing.assert_array_equal(llrs[key][1], n)
    assert [m.as_dict() for m in metrics] == [m.as_dict() for m in verification_summary(tar, non, (0.01, 0.5))]


def _pav_llr_by_argsort(tar, non, laplace):
    """The previous pav_llr: argsort each class, merge, and scatter the per-bin LLRs back to input order."""
    ot, on = np.argsort(tar), np.argsort(non)
    b = blocks.merge_sorted(tar[ot], non[on])
    llr, n_tar, n_non = blocks.pav_bin_llr(b, laplace)
    out = []
    for order, counts in ((ot, n_tar), (on, n_non)):
        o = np.empty(order.size)
        o[order] = np.repeat(llr, counts)
        out.append(o)
    return out


@settings(max_examples=150, deadline=None)
@given(tar=_SCORES, non=_SCORES, laplace=st.booleans(), chunk_size=st.sampled_from([1, 4, 1 << 16]))
def test_pav_llr_equals_the_argsort_scatter_version(tar, non, laplace, chunk_size):
    tar, non = np.array(tar), np.array(non)
    saved = blocks._CHUNK
    blocks._CHUNK = chunk_size
    try:
        t, n = vpeval.pav_llr(tar, non, laplace=laplace)
    finally:
        blocks._CHUNK = saved
    rt, rn = _pav_llr_by_argsort(tar, non, laplace)
    np.testing.assert_array_equal(t, rt)
    np.testing.assert_array_equal(n, rn)


def test_lookup_takes_last_bin_of_repeated_start():
    # a bin whose start repeats the next one's (a pseudo-block-only Laplace bin) holds no score
    out, = blocks.lookup_bins(np.array([1.0, 2.0, 1.0, 5.0]), np.array([1.0, 1.0, 2.0]), np.array([7.0, 8.0, 9.0]))
    np.testing.assert_array_equal(out, [8.0, 9.0, 8.0, 9.0])


def test_int32_counts_refused_beyond_their_range():
    class Huge:
        size = 2 ** 30

    with pytest.raises(ValueError, match="2\\*\\*31"):
        blocks.merge_sorted_pair([Huge(), Huge()], np.int32)


def _same(a, b) -> bool:
    """Equal values, NaN equal to NaN (a value may be a number or a tag)."""
    return a == b or (isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b))


@settings(max_examples=80, deadline=None)
@given(tar=_SCORES, non=_SCORES, llr=st.booleans())
def test_summary_from_the_trials_kept_blocks_is_the_same(tar, non, llr):
    """`vpeval verify` hands the blocks the verdict made (Trials.tie_blocks, int64 counts) and the sorted classes
    to the summary: every number is that of the summary's own sort and merge, zeros of both signs included."""
    from vpeval.io.trials import Trials

    t = Trials(np.r_[tar, non], np.r_[np.ones(len(tar), bool), np.zeros(len(non), bool)])
    assert t.kept_tie_blocks() is None
    want = verification_summary(t.tar, t.non, scores_are_llrs=llr)
    b = t.tie_blocks()
    assert t.kept_tie_blocks() is b
    got = verification_summary(*t.sorted_classes(), scores_are_llrs=llr, blocks=b)
    assert [m.key for m in got] == [m.key for m in want]
    assert all(_same(g.value, w.value) for g, w in zip(got, want)), [(g, w) for g, w in zip(got, want)
                                                                       if not _same(g.value, w.value)]


def test_summary_refuses_blocks_of_other_scores():
    """Blocks that are not the scores' are refused, never read: a breaker's find gave blocks of other scores with
    the same class sizes (EER 0.307 where the scores give 0.069) and blocks of `tar` with `tar + 5`."""
    from vpeval.errors import InvalidScoresError

    b = blocks.tie_blocks(np.r_[1.0, 2.0], np.r_[0.0])
    bad = [(np.r_[2.0, 1.0], np.r_[0.0]),  # not ascending
           (np.r_[1.0], np.r_[0.0]),  # other counts
           (np.r_[1.0, 3.0], np.r_[0.0]),  # the same sizes, another score
           (np.r_[6.0, 7.0], np.r_[5.0]),  # shifted
           (np.r_[0.0, 1.0], np.r_[2.0])]  # the classes' roles swapped
    for tar, non in bad:
        with pytest.raises(InvalidScoresError, match="are not those of these"):
            verification_summary(tar, non, blocks=b)
    rng = np.random.default_rng(0)
    t, n = np.sort(np.round(rng.normal(size=500), 1)), np.sort(np.round(rng.normal(size=700), 1))
    other = blocks.tie_blocks(np.sort(rng.normal(size=500)), np.sort(rng.normal(size=700)))
    with pytest.raises(InvalidScoresError, match="are not those of these"):
        verification_summary(t, n, blocks=other)
    for wrong in (object(), (1, 2, 3)):
        with pytest.raises(InvalidScoresError, match="are not those of these"):
            verification_summary(t, n, blocks=wrong)
    verification_summary(t, n, blocks=blocks.tie_blocks(t, n))  # their own: accepted
