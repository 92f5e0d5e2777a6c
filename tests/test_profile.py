"""Tests of vpeval.stats.speaker_profile."""

import math

import numpy as np
import pandas as pd
import pytest

from vpeval.calibration.pav import pav_llr
from vpeval.io.trials import Trials
from vpeval.metrics import zebra
from vpeval.pipeline import OneToN
from vpeval.stats import StatsError, speaker_profile


def trials_toy():
    #              A targets    B targets   non-targets
    scores = [5.0, 0.2, 1.0, 0.9, 0.0, 0.1, 0.3, 0.95, -1.0]
    is_t = [True, True, True, True, False, False, False, False, False]
    enroll = ["A", "A", "B", "B", "A", "B", "C", "C", "A"]
    test = ["a1", "a2", "b1", "b2", "b1", "a1", "a2", "b2", "b1x"]
    return Trials(scores, is_t, enroll, test)


def test_worst_abs_llr_matches_pav_laplace_oracle():
    t = trials_toy()
    p = speaker_profile(t)
    tar_llr, non_llr = pav_llr(t.tar, t.non, laplace=True)
    spk = t.enroll[t.is_target]
    for _, row in p.table.iterrows():
        mine = np.abs(tar_llr[spk == row.speaker_id])
        assert row.worst_abs_llr_nats == pytest.approx(mine.max())
        assert row.worst_abs_llr_bits == pytest.approx(mine.max() / math.log(2))
        assert row.max_llr_nats == pytest.approx(tar_llr[spk == row.speaker_id].max())
        assert row.n_target_trials == (spk == row.speaker_id).sum()
    assert p.eps_max_nats == pytest.approx(zebra(t.tar, t.non).eps_max)
    assert p.table.worst_abs_llr_nats.max() <= p.eps_max_nats + 1e-12
    # sorted: most exposed first
    assert list(p.table.worst_abs_llr_nats) == sorted(p.table.worst_abs_llr_nats, reverse=True)
    assert set(p.table.speaker_id) == {"A", "B"}  # C has no target trials


def test_order_invariance():
    t = trials_toy()
    perm = np.random.default_rng(0).permutation(len(t))
    t2 = Trials(t.scores[perm], t.is_target[perm], t.enroll[perm], t.test[perm])
    pd.testing.assert_frame_equal(speaker_profile(t).table, speaker_profile(t2).table)


def one_to_n_hand():
    # 4 probes, 3 enrolled; true speaker at rank 1, tied at the top with one other, rank 2, rank 1
    s = np.array([[0.9, 0.1, 0.2], [0.5, 0.5, 0.1], [0.1, 0.3, 0.2], [0.0, 0.1, 0.7]])
    ti = np.array([0, 1, 2, 2])
    return OneToN(s, ti, np.array(["p1", "p2", "p3", "p4"]), np.array(["A", "B", "C", "C"]),
                  np.array(["A", "B", "C"]), "original", "anonymized")


def test_rank1_and_lid_per_speaker_hand_computed():
    m = one_to_n_hand()
    lidv = np.array([1.0, 0.0, -0.5, 1.5])
    p = speaker_profile(one_to_n=m, lid=lidv)
    tab = p.table.set_index("speaker_id")
    assert tab.loc["A", "rank1_rate"] == 1.0
    assert tab.loc["B", "rank1_rate"] == 0.5  # tied with one other at the top: 1/2
    assert tab.loc["C", "rank1_rate"] == 0.5  # one probe rank 2, one rank 1
    assert tab.loc["C", "lid_mean_bits"] == pytest.approx(0.5)
    assert tab.loc["C", "lid_max_bits"] == 1.5
    assert tab.loc["C", "n_probes"] == 2
    assert p.n_enrolled == 3
    # no trials: sorted by lid_max then rank-1
    assert list(p.table.speaker_id) == ["C", "A", "B"]


def test_metadata_subgroups_and_errors():
    t = trials_toy()
    md = pd.DataFrame({
        "utterance_id": ["a1", "a2", "b1", "b2", "c1"],
        "speaker_id": ["A", "A", "B", "B", "C"],
        "sex": ["F", "F", "M", "M", "M"],
        "accent": ["x", "x", None, "y", "y"],
    })
    p = speaker_profile(t, metadata=md)
    assert list(p.table.columns[-2:]) == ["sex", "accent"]
    sex = p.subgroups["sex"].set_index("sex")
    assert sex.loc["F", "n_speakers"] == 1 and sex.loc["M", "n_speakers"] == 1
    a = p.table.set_index("speaker_id")
    assert sex.loc["F", "mean_worst_abs_llr_nats"] == pytest.approx(a.loc["A", "worst_abs_llr_nats"])
    assert sex.loc["M", "max_worst_abs_llr_nats"] == pytest.approx(a.loc["B", "worst_abs_llr_nats"])
    assert a.loc["B", "accent"] == "y"  # missing values ignored, one value left
    d = p.to_dict()
    assert d["speakers"][0]["speaker_id"] == p.table.speaker_id[0]
    assert "sex" in d["subgroups"]
    bad = md.copy()
    bad.loc[1, "sex"] = "M"
    with pytest.raises(StatsError, match="conflicting sex"):
        speaker_profile(t, metadata=bad)
    with pytest.raises(StatsError, match="no column"):
        speaker_profile(t, metadata=md, attributes=["age"])
    with pytest.raises(StatsError, match="speaker_id"):
        speaker_profile(t, metadata=md.drop(columns="speaker_id"))


def test_joined_profile_and_input_errors():
    m = one_to_n_hand()
    t = Trials([2.0, 0.5, 1.0, 0.1, 0.0], [True, True, True, False, False], ["A", "B", "C", "A", "B"],
               ["p1", "p2", "p3", "p2", "p1"])
    p = speaker_profile(t, one_to_n=m, lid=[1.0, 0.0, -0.5, 1.5])
    assert {"worst_abs_llr_nats", "rank1_rate", "lid_max_bits"} <= set(p.table.columns)
    assert len(p.table) == 3
    with pytest.raises(StatsError, match="needs trials"):
        speaker_profile()
    with pytest.raises(StatsError, match="lid needs one_to_n"):
        speaker_profile(t, lid=[1.0])
    with pytest.raises(StatsError, match="enroll keys"):
        speaker_profile(Trials([1.0, 0.0], [True, False]))
    with pytest.raises(StatsError, match="shape"):
        speaker_profile(one_to_n=m, lid=[1.0, 2.0])


def test_sort_by():
    t = trials_toy()
    p = speaker_profile(t, sort_by=("max_llr_nats",))
    assert list(p.table.max_llr_nats) == sorted(p.table.max_llr_nats, reverse=True)
    with pytest.raises(StatsError, match="sort_by"):
        speaker_profile(t, sort_by=("nope",))
