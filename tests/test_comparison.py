"""The paired comparison of the verdicts' worst cases (vpeval.analysis.comparison)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from vpeval.analysis import TrialInput, secrecy_test
from vpeval.analysis.comparison import compare_worst_cases
from vpeval.io.trials import Trials
from vpeval.stats.results import order_statistic

N_SPK, N_PROBE = 8, 4


def _system(rng, leak: float, n_spk: int = N_SPK, seed: int = 3, n_boot: int = 200):
    spk = np.repeat([f"s{i}" for i in range(n_spk)], N_PROBE)
    probe = np.array([f"{s}-{k}" for s, k in zip(spk, np.tile(range(N_PROBE), n_spk))])
    models = np.unique(spk)
    tar = spk[:, None] == models[None, :]
    s = rng.standard_normal(tar.shape) + leak * tar
    P, M = tar.shape
    t = Trials(s.ravel(), tar.ravel(), np.tile(models, P), np.repeat(probe, M))
    inp = TrialInput("att", "aa", t, np.tile(models, P), np.repeat(spk, M))
    return secrecy_test([inp], n_perm=99, n_boot=n_boot, seed=seed)


def test_paired_replicates_observed_values_and_swap():
    rng = np.random.default_rng(0)
    tests = {"B": _system(rng, 3.0), "A": _system(rng, 0.0)}
    (c,), notes = compare_worst_cases(tests)
    assert notes == [] and (c.system_a, c.system_b) == ("B", "A")  # input order
    assert c.value_a == tests["B"].worst.value and c.value_b == tests["A"].worst.value
    d = tests["A"].boot_max - tests["B"].boot_max  # computed in name order, negated for the other order
    lo, hi = order_statistic(d[np.isfinite(d)], [0.025, 0.975])
    assert (c.low, c.high) == (-hi, -lo)
    assert c.better == "A" and c.low > 0 and "A protects better than B" in c.reading
    (r,), _ = compare_worst_cases({"A": tests["A"], "B": tests["B"]})
    assert (r.diff, r.low, r.high) == (-c.diff, -c.high, -c.low) and r.better == c.better


def test_same_speakers_same_draws():
    """Two systems on the same speakers draw the same speakers per replicate: a system against itself is 0."""
    rng = np.random.default_rng(1)
    t = _system(rng, 1.0)
    (c,), _ = compare_worst_cases({"x": t, "y": t})
    assert c.diff == 0 and c.low == 0 and c.high == 0 and c.better is None


def test_unpairable_systems_are_noted_not_compared():
    rng = np.random.default_rng(2)
    comps, notes = compare_worst_cases({"a": _system(rng, 1.0), "b": _system(rng, 1.0, n_spk=9)})
    assert comps == [] and "not evaluated on the same speakers" in notes[0]
    comps, notes = compare_worst_cases({"a": _system(rng, 1.0), "b": _system(rng, 1.0, seed=4)})
    assert comps == [] and "another seed" in notes[0]
    t = Trials(np.r_[rng.normal(1, 1, 30), rng.normal(0, 1, 300)], np.r_[np.ones(30), np.zeros(300)].astype(bool))
    trial = secrecy_test([TrialInput("f", "scores", t)], n_perm=19, n_boot=10)
    comps, notes = compare_worst_cases({"a": _system(rng, 1.0), "f": trial})
    assert comps == [] and "speaker relabelling" in notes[0]


def test_level_is_checked():
    from vpeval.errors import VpevalError

    t = _system(np.random.default_rng(4), 1.0)
    for bad in (-1, 0, 1, 2, float("nan"), "0.9"):
        with pytest.raises(VpevalError, match="level"):
            compare_worst_cases({"x": t, "y": t}, level=bad)


def test_profiles_compared_on_the_share_beyond_the_budget():
    from vpeval.analysis.comparison import compare_profiles
    from vpeval.metrics.profile import share_beyond

    rng = np.random.default_rng(5)
    tests = {"leaky": _system(rng, 3.0), "private": _system(rng, 0.0), "other": _system(rng, 0.0, n_spk=6)}
    comps, notes = compare_profiles(tests, 3.32, n_boot=100)
    assert [(c.system_a, c.system_b) for c in comps] == [("leaky", "private")]
    assert len(notes) == 2 and all("not evaluated on the same speakers" in n for n in notes)
    (c,) = comps
    t = tests["leaky"].profiles[0].source
    assert c.value_a == pytest.approx(share_beyond(t[0][t[1]], t[0][~t[1]], 3.32))
    assert c.metric == "share_beyond" and c.unit == "fraction" and c.better == "private" and c.low > 0
    (r,), _ = compare_profiles({"private": tests["private"], "leaky": tests["leaky"]}, 3.32, n_boot=100)
    assert (r.diff, r.low, r.high) == (-c.diff, -c.high, -c.low) and r.better == "private"


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_share_replicates_match_weighted_trials_oracle(data):
    """The run-merged, per-unit matrix path equals share_beyond of the trials repeated by their unit's weight."""
    from types import SimpleNamespace

    from vpeval.analysis.comparison import _share_replicates
    from vpeval.metrics.profile import share_beyond

    n = data.draw(st.integers(4, 40))
    scores = np.array(data.draw(st.lists(st.integers(0, 6), min_size=n, max_size=n)), dtype=float)
    is_tar = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    assume(is_tar.any() and not is_tar.all())
    names = np.array(["a", "b", "c"])
    units = np.array(data.draw(st.lists(st.sampled_from(["a", "b", "c", "zz"]), min_size=n, max_size=n)))
    weights = np.array(data.draw(st.lists(st.lists(st.integers(0, 3), min_size=3, max_size=3),
                                          min_size=1, max_size=5)), dtype=float)
    budget = data.draw(st.sampled_from([0.5, 1.0, 3.32]))
    prof = SimpleNamespace(source=(scores, is_tar, units), attacker="x", trial_type="oa")
    value, _, reps = _share_replicates(SimpleNamespace(profiles=[prof]), budget, weights, names)
    assert value == pytest.approx(share_beyond(scores[is_tar], scores[~is_tar], budget), abs=1e-12)
    for r, w in enumerate(weights):
        rep = np.array([1 if u == "zz" else int(w[list(names).index(u)]) for u in units])
        s, t = np.repeat(scores, rep), np.repeat(is_tar, rep)
        expect = share_beyond(s[t], s[~t], budget) if t.any() and not t.all() else -np.inf
        assert reps[r] == pytest.approx(expect, abs=1e-12)
