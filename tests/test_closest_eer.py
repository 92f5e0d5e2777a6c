"""The closest-point EER (``eer(method="closest")``): hand cases, oracle, properties, published number."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import shuffled
import oracles
from vpeval import closest_eer, eer
from vpeval.metrics import closest_eer_exact
from vpeval.metrics.summary import verification_summary
from vpeval.errors import InvalidScoresError


def test_hand_cases():
    # blocks 0.2(n) 0.6(t) 0.7(n) 0.8(t): the point at t = 0.7 is (pmiss 1/2, pfa 1/2)
    assert closest_eer([0.6, 0.8], [0.2, 0.7]) == 0.5
    # points (0,1) (0,1/2) (1/3,1/2) (2/3,1/2) (2/3,0) (1,0): (1/3,1/2) and (2/3,1/2) are equally close;
    # exactly, the lower threshold wins: (1/3 + 1/2) / 2 = 5/12; the scripts compare the rounded distances
    # |1/3 - 1/2| = 0.16666666666666669 > |2/3 - 1/2| = 0.16666666666666663 and print 7/12 (issue 28)
    assert closest_eer_exact([1, 2, 3], [0, 2.5]) == 5 / 12
    assert closest_eer([1, 2, 3], [0, 2.5]) == (2 / 3 + 1 / 2) / 2 == oracles.asvspoof_compute_eer([1, 2, 3], [0, 2.5])
    # perfect separation and perfect reversal
    assert closest_eer([2, 3], [0, 1]) == 0.0
    assert closest_eer([0, 1], [2, 3]) == 1.0
    # one block of everything: only (0, 1) and (1, 0), both at distance 1: the first, mean 1/2
    assert closest_eer([5, 5, 5], [5]) == 0.5
    assert eer([1, 2, 3], [0, 2.5], method="closest") == (2 / 3 + 1 / 2) / 2
    assert eer([1, 2, 3], [0, 2.5], method="closest-exact") == 5 / 12


def test_tied_block_is_not_split_unlike_the_script():
    # tar 0, 1, 1; non 1, 2, 3 -> the block at 1 holds two targets and one non-target.
    # Blocks: (0, 1) (1/3, 1) (1, 2/3) (1, 1/3) (1, 0): closest (1, 2/3) -> 5/6.
    tar, non = [0, 1, 1], [1, 2, 3]
    assert closest_eer(tar, non) == pytest.approx(5 / 6, abs=1e-15)
    tar, non = [0, 1], [1, 2]
    # blocks: (0, 1) (1/2, 1) (1, 1/2) (1, 0); |d| = 1, 1/2, 1/2, 1 -> first of the two: (1/2 + 1)/2 = 3/4
    assert closest_eer(tar, non) == 0.75
    # script: targets first among ties -> points (0,1) (1/2,1) (1,1) (1,1/2) (1,0): (1,1) has d = 0 -> 1.0,
    # a point inside the tied block that no threshold realises
    assert oracles.script_closest_eer(tar, non) == 1.0


def test_bad_input():
    with pytest.raises(InvalidScoresError):
        closest_eer([], [1.0])
    with pytest.raises(InvalidScoresError):
        closest_eer([np.nan], [1.0])


def test_in_the_verification_summary():
    s = {m.key: m.value for m in verification_summary([1, 2, 3], [0, 2.5], (0.5,))}
    assert s["eer_closest"] == (2 / 3 + 1 / 2) / 2  # the scripts' arithmetic


tied = st.lists(st.integers(0, 6).map(float), min_size=1, max_size=14)
distinct = st.lists(st.integers(-1000, 1000), min_size=1, max_size=20, unique=True)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 40).map(float), min_size=1, max_size=60),
       st.lists(st.integers(0, 40).map(float), min_size=1, max_size=60), st.integers(1, 5))
def test_summary_and_chunks_equal_the_oracle(tar, non, chunk):
    """The bundle's value (over the full tie blocks, not the pooled class runs PAV uses) and any chunking of
    the block scan equal the exact oracle; long one-class runs put the closest point inside a run."""
    from vpeval.blocks import tie_blocks
    from vpeval.metrics.verification import _closest_eer

    want = oracles.closest_eer(tar, non)
    s = {m.key: m.value for m in verification_summary(tar, non, (0.5,))}
    assert s["eer_closest"] == closest_eer(tar, non)
    assert _closest_eer(tie_blocks(tar, non), chunk=chunk) == closest_eer(tar, non)
    assert _closest_eer(tie_blocks(tar, non), chunk=chunk, exact=True) == want == closest_eer_exact(tar, non)


def test_closest_point_inside_a_one_class_run():
    # targets 1..4 then non-targets: the closest point sits between target blocks of one run
    tar, non = [1.0, 2.0, 3.0, 4.0], [0.0, 5.0, 6.0, 7.0]
    s = {m.key: m.value for m in verification_summary(tar, non, (0.5,))}
    assert s["eer_closest"] == oracles.closest_eer(tar, non) == closest_eer(tar, non) == closest_eer_exact(tar, non)


@settings(max_examples=300, deadline=None)
@given(tied, tied)
def test_fast_equals_oracle(tar, non):
    assert closest_eer_exact(tar, non) == oracles.closest_eer(tar, non)


@settings(max_examples=200, deadline=None)
@given(distinct, st.randoms(use_true_random=False))
def test_equals_the_per_trial_script_without_ties(values, rnd):
    # without ties between scores, per-trial points and block points coincide
    values = [float(v) for v in values]
    if len(values) < 2:
        return
    rnd.shuffle(values)
    k = rnd.randint(1, len(values) - 1)
    tar, non = values[:k], values[k:]
    assert closest_eer_exact(tar, non) == pytest.approx(oracles.script_closest_eer(tar, non), abs=1e-15)
    # the scripts' float arithmetic, bit for bit (their argmin compares rounded distances)
    assert closest_eer(tar, non) == oracles.asvspoof_compute_eer(tar, non)


def test_scripts_arithmetic_bit_for_bit_on_every_small_tie_free_split():
    # every split of 0..n-1 (n <= 7) into targets and non-targets: the scripts' value exactly; the exact
    # variant differs from it only where two points are exactly equally close (then by 1/2 of a step)
    import itertools

    n_diff = n_all = 0
    for n in range(2, 8):
        for mask in itertools.product([0, 1], repeat=n):
            if 0 < sum(mask) < n:
                tar = [float(i) for i, m in enumerate(mask) if m]
                non = [float(i) for i, m in enumerate(mask) if not m]
                assert closest_eer(tar, non) == oracles.asvspoof_compute_eer(tar, non)
                n_all += 1
                if closest_eer(tar, non) != pytest.approx(closest_eer_exact(tar, non), abs=1e-15):
                    n_diff += 1
                    # two points equally close: the exact variant keeps the first, the float argmin the other
                    pts = oracles.block_points(tar, non)
                    gaps = sorted(abs(m - f) for m, f in pts)
                    assert gaps[0] == gaps[1]
    assert 0 < n_diff < n_all


@settings(max_examples=200, deadline=None)
@given(tied, tied, st.randoms(use_true_random=False))
def test_order_invariance_and_duplication(tar, non, rnd):
    a = closest_eer(tar, non)
    t2, n2 = shuffled(rnd, tar, non)
    assert closest_eer(t2, n2) == a
    assert closest_eer(tar * 2, non * 2) == pytest.approx(a, abs=1e-15)
    f = lambda x: np.exp(np.asarray(x, dtype=float) / 3.0) - 7  # strictly increasing  # noqa: E731
    assert closest_eer(f(tar), f(non)) == pytest.approx(a, abs=1e-15)
    assert 0.0 <= a <= 1.0


def test_asvspoof_la_dev_published_value_and_cli(shared):
    """2.42653 %: the published target/non-target EER of the ASVspoof 2019 LA dev ASV scores (../shared/data)."""
    import json

    from typer.testing import CliRunner

    import vpeval
    from vpeval.cli.main import app

    path = shared / "data" / "asvspoof2019_la_dev_asv_scores.txt"
    t = vpeval.read_columns(path, label_col=1, score_col=2, target="target", nontarget="nontarget",
                            ignore="spoof")
    assert eer(t.tar, t.non, method="closest") == pytest.approx(0.0242653, abs=5e-8)
    r = CliRunner().invoke(app, ["verify", str(path), "--label-col", "1", "--score-col", "2", "--target", "target",
                                 "--nontarget", "nontarget", "--ignore", "spoof", "--json"])
    assert r.exit_code == 0, r.output
    m = json.loads(r.stdout)["metrics"]["eer_closest"]
    assert m["value"] == pytest.approx(0.0242653, abs=5e-8) and m["unit"] == "fraction"
    r = CliRunner().invoke(app, ["verify", str(path), "--label-col", "1", "--score-col", "2", "--target", "target",
                                 "--nontarget", "nontarget", "--ignore", "spoof"])
    # the table shows EERs in percent (the JSON above keeps the fraction)
    assert "EER (closest point)" in r.stdout and "2.42653" in r.stdout
