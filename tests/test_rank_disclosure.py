"""Similarity-rank disclosure (Backstrom et al.) from gamma."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpeval.calibration.rank import rank_llr
from vpeval.errors import VpevalError
from vpeval.metrics.rank_disclosure import rank_disclosure, smooth_gamma

gammas = st.lists(st.integers(0, 50), min_size=2, max_size=12).filter(lambda c: sum(c) > 0).map(
    lambda c: np.array(c, dtype=float) / sum(c)
)


def test_issue_example():
    r = rank_disclosure([0.55, 0.25, 0.12, 0.08])
    np.testing.assert_allclose(r.per_rank_bits, [1.137504, 0.0, -1.058894, -1.643856], atol=5e-7)
    assert r.mean_d == pytest.approx(0.367051, abs=5e-7)
    assert r.max_d == pytest.approx(1.137504, abs=5e-7)
    assert r.idr == 0.55
    assert r.rs == 0.25  # only rank 1 is above 1/4
    np.testing.assert_array_equal(r.rank_llr, rank_llr([0.55, 0.25, 0.12, 0.08]))
    assert r.rank_eps_max == pytest.approx(np.max(np.abs(r.rank_llr)))
    assert r.n_speakers == 4 and r.smoothing == "none"


def test_sign_convention_not_the_papers_slip():
    # over-represented rank discloses positive bits
    r = rank_disclosure([0.7, 0.1, 0.1, 0.1])
    assert r.per_rank_bits[0] > 0 and np.all(r.per_rank_bits[1:] < 0)


@pytest.mark.parametrize("n", [2, 5, 64])
def test_uniform_discloses_nothing(n):
    r = rank_disclosure(np.full(n, 1.0 / n))
    np.testing.assert_allclose(r.per_rank_bits, 0.0, atol=1e-12)
    assert r.mean_d == pytest.approx(0.0, abs=1e-12) and r.max_d == pytest.approx(0.0, abs=1e-12)
    assert r.rs == 0.0 and r.idr == pytest.approx(1.0 / n)
    assert r.rank_eps_max == pytest.approx(0.0, abs=1e-12)


def test_perfect_identification():
    r = rank_disclosure([1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    assert r.max_d == 3.0 and r.mean_d == 3.0 and r.idr == 1.0 and r.rs == 0.125
    assert np.all(r.per_rank_bits[1:] == -np.inf)
    assert r.rank_eps_max == np.inf and not np.any(np.isnan(r.rank_llr))


def _slow(g):
    n = len(g)
    h = -sum(p * math.log2(p) for p in g if p > 0)
    per = [math.log2(n * p) if p > 0 else -math.inf for p in g]
    return per, math.log2(n) - h, sum(1 for p in g if p > 1 / n) / n


@settings(max_examples=200, deadline=None)
@given(gammas)
def test_against_slow_oracle_and_identities(g):
    r = rank_disclosure(g)
    per, mean_d, rs = _slow(g)
    np.testing.assert_allclose(r.per_rank_bits, per, rtol=1e-12, atol=1e-12)
    assert r.mean_d == pytest.approx(mean_d, abs=1e-12)
    assert r.rs == rs
    assert r.mean_d >= -1e-12  # KL divergence from uniform
    assert r.max_d >= r.mean_d - 1e-12
    assert r.max_d <= math.log2(len(g)) + 1e-12


@settings(max_examples=50, deadline=None)
@given(gammas, st.integers(1, 10**6))
def test_laplace_smoothing(g, n_probes):
    s = smooth_gamma(g, n_probes)
    assert s.sum() == pytest.approx(1.0) and np.all(s > 0) and np.all(s < 1)
    r = rank_disclosure(g, smoothing="laplace", n_probes=n_probes)
    np.testing.assert_array_equal(r.gamma, s)
    assert np.all(np.isfinite(r.per_rank_bits)) and np.isfinite(r.rank_eps_max)
    assert r.mean_d <= rank_disclosure(g).mean_d + 1e-12  # shrinks toward uniform
    assert r.smoothing.startswith("laplace(alpha=1")


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"smoothing": "laplace"}, "needs n_probes"),
        ({"smoothing": "beta"}, "smoothing must be"),
        ({"smoothing": "laplace", "n_probes": 0}, "positive integer"),
        ({"smoothing": "laplace", "n_probes": 10, "alpha": 0}, "alpha"),
    ],
)
def test_bad_smoothing(kw, match):
    with pytest.raises(VpevalError, match=match):
        rank_disclosure([0.5, 0.5], **kw)


def test_to_dict_is_json_ready():
    import json

    d = rank_disclosure([0.55, 0.25, 0.12, 0.08]).to_dict()
    back = json.loads(json.dumps(d))
    assert back["max_d_bits"] == pytest.approx(1.137504, abs=5e-7)
    assert back["rank_eps_max_bits"] == pytest.approx(back["rank_eps_max_nats"] / math.log(2))


def test_report_section_stores_gamma_and_the_arrays_are_recomputed_exactly():
    """Schema 2.3: the rank-disclosure section keeps gamma and the scalars; the per-rank arrays (raw and
    Laplace-smoothed) and the smoothed gamma come back bit for bit from rank_condition_arrays."""
    import json

    from vpeval.report.disclosure import RANK_DERIVED, rank_condition_arrays, rank_disclosure_section
    from vpeval.report.writer import _jsonable

    gammas = {"oa": np.array([0.5, 0.3, 0.2, 0.0]), "aa": np.full(4, 0.25)}
    sec = rank_disclosure_section(gammas, n_probes={"oa": 10, "aa": 8})
    data = json.loads(json.dumps(_jsonable(sec.data)))  # as report.json holds it
    for label, g in gammas.items():
        cond = data["conditions"][label]
        assert not set(RANK_DERIVED) & set(cond) and not (set(RANK_DERIVED) | {"gamma"}) & set(cond["laplace"])
        raw = rank_disclosure(g)
        sm = rank_disclosure(g, smoothing="laplace", n_probes={"oa": 10, "aa": 8}[label])
        back = rank_condition_arrays(cond)
        assert back["per_rank_bits"] == raw.per_rank_bits.tolist() and back["rank_llr_nats"] == raw.rank_llr.tolist()
        assert back["laplace"] == {"gamma": sm.gamma.tolist(), "per_rank_bits": sm.per_rank_bits.tolist(),
                                   "rank_llr_nats": sm.rank_llr.tolist()}
        # the stored scalars are those of the recomputed arrays
        assert cond["laplace"]["rank_eps_max_nats"] == max(abs(x) for x in back["laplace"]["rank_llr_nats"])
        assert cond["max_d_bits"] == max(back["per_rank_bits"])
