"""Ranks of the true speaker, rank histogram, CMC, rank-k rates and closed-set linkability."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpeval.errors import InvalidScoresError, VpevalError
from vpeval.metrics.identification import (
    RankCounts,
    closed_set_linkability,
    cmc,
    identification_rates,
    rank_counts,
    rank_histogram,
    true_speaker_rank,
)

TIES = ("fractional", "optimistic", "pessimistic")


# ---------------------------------------------------------------------------------------------- oracles


def oracle_gamma(S, ti, ties):
    """Sort each row (descending) and read the tied block of the true score off the sorted list."""
    S = np.asarray(S, dtype=float)
    n, N = S.shape
    gamma = [0.0] * N
    for i in range(n):
        row = sorted(S[i].tolist(), reverse=True)
        t = S[i][ti[i]]
        positions = [p for p, v in enumerate(row) if v == t]  # 0-based ranks of the tied block
        if ties == "optimistic":
            gamma[positions[0]] += 1.0
        elif ties == "pessimistic":
            gamma[positions[-1]] += 1.0
        else:
            for p in positions:
                gamma[p] += 1.0 / len(positions)
    return np.array(gamma) / n


def oracle_cmc(S, ti, ties):
    g = oracle_gamma(S, ti, ties)
    return np.array([sum(g[: k + 1]) for k in range(len(g))])


def brute_linkability(S, ti, n_prime, ties):
    """Average, over probes and over every candidate subset of N'-1 others, of the chance to be on top."""
    S = np.asarray(S, dtype=float)
    n, N = S.shape
    total = 0.0
    for i in range(n):
        t = S[i][ti[i]]
        others = [S[i][j] for j in range(N) if j != ti[i]]
        wins, count = 0.0, 0
        for subset in itertools.combinations(others, n_prime - 1):
            count += 1
            if any(v > t for v in subset):
                continue
            tied = sum(v == t for v in subset)
            if ties == "optimistic":
                wins += 1.0
            elif ties == "pessimistic":
                wins += 1.0 if tied == 0 else 0.0
            else:
                wins += 1.0 / (tied + 1)
        total += wins / count
    return total / n


def tie_heavy(rng, n, N, levels=4):
    S = rng.integers(0, levels, size=(n, N)).astype(float)
    return S, rng.integers(0, N, size=n)


# ---------------------------------------------------------------------------------------------- hand cases

S_HAND = [[0.9, 0.5, 0.9], [0.1, 0.3, 0.2]]


def test_hand_counts_and_ranks():
    c = rank_counts(S_HAND, [0, 0])
    assert c.n_greater.tolist() == [0, 2]
    assert c.n_tied.tolist() == [1, 0]
    assert true_speaker_rank(S_HAND, [0, 0], "fractional").tolist() == [1.5, 3.0]
    assert true_speaker_rank(S_HAND, [0, 0], "optimistic").tolist() == [1.0, 3.0]
    assert true_speaker_rank(S_HAND, [0, 0], "pessimistic").tolist() == [2.0, 3.0]


@pytest.mark.parametrize(
    "ties,gamma,curve",
    [
        ("fractional", [0.25, 0.25, 0.5], [0.25, 0.5, 1.0]),
        ("optimistic", [0.5, 0.0, 0.5], [0.5, 0.5, 1.0]),
        ("pessimistic", [0.0, 0.5, 0.5], [0.0, 0.5, 1.0]),
    ],
)
def test_hand_tie_rules(ties, gamma, curve):
    assert rank_histogram(S_HAND, [0, 0], ties).tolist() == gamma
    assert cmc(S_HAND, [0, 0], ties).tolist() == curve


def test_fully_tied_rows():
    S = np.ones((3, 4))
    ti = [0, 1, 3]
    assert np.allclose(rank_histogram(S, ti), 0.25)
    assert np.allclose(cmc(S, ti), [0.25, 0.5, 0.75, 1.0])
    assert cmc(S, ti, "optimistic").tolist() == [1.0, 1.0, 1.0, 1.0]
    assert cmc(S, ti, "pessimistic").tolist() == [0.0, 0.0, 0.0, 1.0]


def test_three_way_tie_in_the_middle():
    # true score 0.5 tied with two others, one score above: tied ranks 2, 3, 4 get 1/3 each.
    S = [[0.5, 0.9, 0.5, 0.5, 0.1]]
    assert np.allclose(rank_histogram(S, [0]), [0, 1 / 3, 1 / 3, 1 / 3, 0])
    assert true_speaker_rank(S, [0]).tolist() == [3.0]


def test_infinite_scores_are_ordinary():
    S = [[np.inf, np.inf, 0.0], [-np.inf, 0.0, 1.0]]
    assert rank_histogram(S, [0, 0]).tolist() == [0.25, 0.25, 0.5]


def test_single_speaker():
    assert cmc([[0.3], [0.1]], [0, 0]).tolist() == [1.0]


def test_identification_rates_and_chance():
    rng = np.random.default_rng(3)
    S, ti = tie_heavy(rng, 50, 8)
    r = identification_rates(S, ti, ks=(1, 5, 10))
    curve = cmc(S, ti)
    assert r.rates == {1: curve[0], 5: curve[4], 10: 1.0}
    assert r.chance == {1: 1 / 8, 5: 5 / 8, 10: 1.0}
    assert r.mean_rank == pytest.approx(true_speaker_rank(S, ti).mean())
    assert r.to_dict()["rates"]["rank1"] == curve[0]
    with pytest.raises(InvalidScoresError):
        identification_rates(S, ti, ks=(0,))


def test_rank_counts_reuse_equals_matrix():
    rng = np.random.default_rng(4)
    S, ti = tie_heavy(rng, 30, 7)
    c = rank_counts(S, ti)
    for ties in TIES:
        assert np.array_equal(cmc(c, None, ties), cmc(S, ti, ties))
        assert np.array_equal(rank_histogram(c, None, ties), rank_histogram(S, ti, ties))
    with pytest.raises(InvalidScoresError):
        cmc(c, ti)


# ---------------------------------------------------------------------------------------------- oracle

@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("ties", TIES)
def test_against_sorting_oracle_random_ties(seed, ties):
    rng = np.random.default_rng(seed)
    n, N = int(rng.integers(1, 40)), int(rng.integers(1, 12))
    S, ti = tie_heavy(rng, n, N, levels=int(rng.integers(1, 5)))
    assert np.allclose(rank_histogram(S, ti, ties), oracle_gamma(S, ti, ties), atol=1e-12)
    assert np.allclose(cmc(S, ti, ties), oracle_cmc(S, ti, ties), atol=1e-12)


@pytest.mark.slow
def test_against_sorting_oracle_larger():
    rng = np.random.default_rng(99)
    S, ti = tie_heavy(rng, 300, 60, levels=20)
    for ties in TIES:
        assert np.allclose(cmc(S, ti, ties), oracle_cmc(S, ti, ties), atol=1e-12)


# ---------------------------------------------------------------------------------------------- properties

matrices = st.integers(1, 12).flatmap(
    lambda N: st.tuples(
        st.lists(st.lists(st.integers(-3, 3), min_size=N, max_size=N), min_size=1, max_size=15),
        st.just(N),
    )
)


def _drawn_case(mat, rnd):
    """``(S, ti, N)`` of a drawn ``matrices`` example: the rows as a float matrix and a true column per row
    drawn from ``rnd``."""
    rows, N = mat
    return np.array(rows, dtype=float), np.array([rnd.randrange(N) for _ in rows]), N


@settings(max_examples=60, deadline=None)
@given(matrices, st.randoms(use_true_random=False))
def test_order_invariance(mat, rnd):
    S, ti, N = _drawn_case(mat, rnd)
    col = np.array(rnd.sample(range(N), N))  # new column j holds old column col[j]
    row = np.array(rnd.sample(range(len(S)), len(S)))
    inv = np.argsort(col)
    S2 = S[row][:, col]
    ti2 = inv[ti[row]]
    for ties in TIES:
        assert np.allclose(rank_histogram(S2, ti2, ties), rank_histogram(S, ti, ties), atol=1e-12)
        assert np.allclose(cmc(S2, ti2, ties), cmc(S, ti, ties), atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(matrices, st.randoms(use_true_random=False))
def test_monotone_transform_and_duplication_invariance(mat, rnd):
    S, ti, N = _drawn_case(mat, rnd)
    for ties in TIES:
        base = cmc(S, ti, ties)
        assert np.array_equal(cmc(np.exp(S) * 3.0 - 1.0, ti, ties), base)
        assert np.allclose(cmc(np.vstack([S, S]), np.concatenate([ti, ti]), ties), base, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(matrices, st.randoms(use_true_random=False))
def test_histogram_is_a_distribution(mat, rnd):
    S, ti, N = _drawn_case(mat, rnd)
    for ties in TIES:
        g = rank_histogram(S, ti, ties)
        assert g.shape == (N,) and (g >= 0).all() and g.sum() == pytest.approx(1.0, abs=1e-12)
        c = cmc(S, ti, ties)
        assert (np.diff(c) >= -1e-15).all() and c[-1] == 1.0
    # optimistic >= fractional >= pessimistic at every rank
    assert (cmc(S, ti, "optimistic") >= cmc(S, ti) - 1e-12).all()
    assert (cmc(S, ti) >= cmc(S, ti, "pessimistic") - 1e-12).all()


# ---------------------------------------------------------------------------------------------- memory paths


@pytest.mark.parametrize("chunk", [1, 2, 7, 1000])
def test_chunked_equals_unchunked(chunk):
    rng = np.random.default_rng(5)
    S, ti = tie_heavy(rng, 53, 9, levels=6)
    for ties in TIES:
        assert np.array_equal(cmc(S, ti, ties, chunk_rows=chunk), cmc(S, ti, ties))
        assert np.array_equal(rank_histogram(S, ti, ties, chunk_rows=chunk), rank_histogram(S, ti, ties))


def test_float32_and_memmap_inputs(tmp_path):
    rng = np.random.default_rng(6)
    S, ti = tie_heavy(rng, 20, 5)
    f = tmp_path / "m.npy"
    np.save(f, S.astype(np.float32))
    mm = np.load(f, mmap_mode="r")
    assert np.array_equal(cmc(mm, ti, chunk_rows=3), cmc(S, ti))


def test_dask_equals_numpy():
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(7)
    S, ti = tie_heavy(rng, 61, 11, levels=5)
    D = da.from_array(S, chunks=(8, 4))  # column-split on purpose: the scan rechunks to full rows
    for ties in TIES:
        assert np.array_equal(cmc(D, ti, ties, chunk_rows=5), cmc(S, ti, ties))
        assert np.array_equal(rank_histogram(D, ti, ties), rank_histogram(S, ti, ties))
    Dn = D.copy()
    Dn[3, 2] = np.nan
    with pytest.raises(InvalidScoresError, match="row 3, speaker column 2"):
        cmc(Dn, ti)


# ---------------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "S,ti,match",
    [
        ([[0.1, np.nan]], [0], "NaN"),
        ([0.1, 0.2], [0], "2-D"),
        (np.zeros((0, 3)), [], "empty"),
        ([[0.1, 0.2]], [2], "outside"),
        ([[0.1, 0.2]], [-1], "outside"),
        ([[0.1, 0.2]], [0, 1], "shape"),
        ([[0.1, 0.2]], [0.0], "integer"),
        ([["a", "b"]], [0], "numbers"),
    ],
)
def test_bad_input(S, ti, match):
    with pytest.raises(InvalidScoresError, match=match):
        cmc(S, ti)


def test_bad_tie_rule_and_chunk():
    with pytest.raises(VpevalError, match="ties"):
        cmc(S_HAND, [0, 0], "random")
    with pytest.raises(VpevalError, match="chunk_rows"):
        cmc(S_HAND, [0, 0], chunk_rows=0)
    with pytest.raises(ValueError):  # VpevalError is a ValueError
        RankCounts(np.array([0]), np.array([0]), 2).ranks("x")


# ---------------------------------------------------------------------------------------------- linkability


def test_linkability_hand():
    r = closed_set_linkability([0.5, 0.3, 0.2])
    # N'=2: draw 1 of the 2 others; rank 1 always wins, rank 2 wins half the time, rank 3 never
    assert np.allclose(r.linkability, [1.0, 0.5 + 0.3 / 2, 0.5])
    assert np.allclose(r.chance, [1, 1 / 2, 1 / 3])
    assert r.n_candidates.tolist() == [1, 2, 3]


def test_linkability_uniform_gamma_is_chance():
    for N in (1, 2, 5, 40):
        r = closed_set_linkability(np.full(N, 1.0 / N))
        assert np.allclose(r.linkability, r.chance, atol=1e-12)


def test_linkability_ends_and_subsets():
    rng = np.random.default_rng(8)
    g = rng.dirichlet(np.ones(30))
    full = closed_set_linkability(g)
    assert full.linkability[0] == 1.0
    assert full.linkability[-1] == pytest.approx(g[0])
    assert (np.diff(full.linkability) <= 1e-12).all()  # more candidates never help the true speaker
    part = closed_set_linkability(g, [17, 3])
    assert part.n_candidates.tolist() == [17, 3]
    assert part.linkability.tolist() == [full.linkability[16], full.linkability[2]]


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("ties", TIES)
def test_linkability_closed_form_vs_enumeration(seed, ties):
    rng = np.random.default_rng(100 + seed)
    N = int(rng.integers(2, 8))
    S, ti = tie_heavy(rng, int(rng.integers(1, 12)), N, levels=3)
    r = closed_set_linkability(rank_histogram(S, ti, ties))
    brute = [brute_linkability(S, ti, k, ties) for k in range(1, N + 1)]
    assert np.allclose(r.linkability, brute, atol=1e-12)


def test_linkability_monte_carlo_large_n():
    rng = np.random.default_rng(11)
    n, N, n_prime = 200, 50, 6
    S = rng.normal(size=(n, N))
    ti = rng.integers(0, N, size=n)
    S[np.arange(n), ti] += 1.0
    exact = closed_set_linkability(rank_histogram(S, ti), [n_prime]).linkability[0]
    hits, trials = 0, 0
    for i in range(n):
        others = np.delete(S[i], ti[i])
        for _ in range(100):
            draw = rng.choice(others, size=n_prime - 1, replace=False)
            hits += S[i, ti[i]] > draw.max()
            trials += 1
    se = np.sqrt(exact * (1 - exact) / trials)
    assert abs(hits / trials - exact) < 5 * se


@pytest.mark.parametrize(
    "gamma,sizes,match",
    [
        ([0.5, 0.4], None, "sum"),
        ([1.2, -0.2], None, "non-negative"),
        ([], None, "non-empty"),
        ([0.5, 0.5], [3], "1..2"),
        ([0.5, 0.5], [0], "1..2"),
        ([0.5, 0.5], [1.5], "integers"),
    ],
)
def test_linkability_errors(gamma, sizes, match):
    with pytest.raises(InvalidScoresError, match=match):
        closed_set_linkability(gamma, sizes)
