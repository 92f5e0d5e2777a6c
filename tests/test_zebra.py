import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import quad

from vpeval import d_ece, pav_llr, zebra, zebra_tag
from vpeval.errors import InvalidScoresError
from vpeval.metrics.zebra import ece_profile


def test_tags():
    values = [0, 1e-20, 0.5, 1, 2, 6, math.inf]
    assert [zebra_tag(v) for v in values] == ["0", "0", "A", "A", "B", "E", "F"]
    assert [zebra_tag(v) for v in (1.0000001, 4, 4.5, 5, 5.5, 6.0001)] == ["B", "C", "D", "D", "E", "F"]
    # the whole message, anchored: it names the parameter the caller got wrong
    with pytest.raises(InvalidScoresError, match=r"^eps_max_log10 must be >= 0, got -0\.1$"):
        zebra_tag(-0.1)
    with pytest.raises(InvalidScoresError, match=r"^eps_max_log10 must be a finite number, got nan$"):
        zebra_tag(float("nan"))


def test_tag_zero_is_reachable():
    r = zebra([0.3, 0.3, 0.3], [0.3, 0.3, 0.3])
    assert r.eps_max == 0.0 and r.tag == "0" and r.d_ece_bits == 0.0
    # With unequal class sizes the Laplace pseudo-trials (one of each class per end) shift the pooled
    # posterior away from the real prior, so even fully tied scores give a small eps_max: a property of
    # the privacy-ZEBRA convention, documented in zebra().
    r = zebra([0.3, 0.3, 0.3], [0.3, 0.3])
    # blocks [1,1] [3,2] [1,1] -> PAV pools the last two: 4 tar / 3 non -> |ln(4/3) - ln(3/2)| = ln(9/8)
    assert r.eps_max == pytest.approx(math.log(9 / 8), abs=1e-15)
    assert r.d_ece_bits == 0.0


def test_worst_case_paper_table2():
    # Example 1: targets 0.2, 0.4, 0.6; non-targets 0.1, 0.3, 0.5
    t, n = pav_llr([0.2, 0.4, 0.6], [0.1, 0.3, 0.5])
    assert max(np.abs(t).max(), np.abs(n).max()) == math.inf
    t, n = pav_llr([0.2, 0.4, 0.6], [0.1, 0.3, 0.5], laplace=True)
    by_score = dict(zip([0.2, 0.4, 0.6, 0.1, 0.3, 0.5], np.concatenate([t, n])))
    got = [by_score[s] for s in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6)]
    ln2 = math.log(2)
    np.testing.assert_allclose(got, [-ln2, 0, 0, 0, 0, ln2], atol=1e-15)
    assert zebra([0.2, 0.4, 0.6], [0.1, 0.3, 0.5]).eps_max == pytest.approx(ln2, abs=1e-15)
    # Example 2: labels flipped
    assert zebra([0.1, 0.3, 0.5], [0.2, 0.4, 0.6]).eps_max == 0.0
    t, n = pav_llr([0.1, 0.3, 0.5], [0.2, 0.4, 0.6])
    assert np.all(t == 0) and np.all(n == 0)


def test_units_beside_each_other():
    r = zebra([0.6, 0.7, 0.8], [0.1, 0.2, 0.3])
    assert r.eps_max == pytest.approx(math.log(4))
    assert r.eps_max_bits == pytest.approx(2.0)
    assert r.eps_max_log10 == pytest.approx(math.log10(4))
    assert r.d_ece_bits == pytest.approx(1 / math.log(4), abs=1e-12)


def _d_ece_quadrature(tar, non, laplace=False):
    t, n = pav_llr(tar, non, laplace=laplace)

    def gap(p):
        lo = math.log(p) - math.log1p(-p)
        h = -(p * math.log2(p) + (1 - p) * math.log2(1 - p))
        return h - ece_profile(t, n, [lo])[0]

    return quad(gap, 0, 1, limit=400, epsabs=1e-12)[0]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 8), min_size=1, max_size=10), st.lists(st.integers(0, 8), min_size=1, max_size=10),
       st.booleans())
def test_d_ece_closed_form_equals_quadrature(tar, non, laplace):
    t, n = pav_llr(tar, non)
    if np.isinf(t).any() or np.isinf(n).any():
        laplace = True  # the quadrature needs finite LLRs; plain-PAV infinities are checked elsewhere
    assert d_ece(tar, non, laplace=laplace) == pytest.approx(_d_ece_quadrature(tar, non, laplace), abs=1e-8)


def test_d_ece_range():
    rng = np.random.default_rng(1)
    x = rng.normal(size=500)
    assert 0 <= d_ece(x[:200], x[200:]) < 0.05
    assert d_ece(x + 100, x) == pytest.approx(1 / math.log(4))


# One target above Nn non-targets: Laplace PAV puts the target with the upper pseudo-pair, 2 targets and
# 1 non-target, so eps_max = ln(2/1) - ln(1/Nn) = ln(2 Nn) nats (the lower bin, 1 target and Nn + 1
# non-targets, gives only ln((Nn + 1)/Nn)). Nn on either side of 10**b / 2 puts eps_max just below and just
# above each log10 band boundary b; in bits every one of these values reads 3.3 times larger, so a tag
# taken from bits would differ everywhere.
ZEBRA_BOUNDARY_CASES = [
    (4, "A", "C"), (6, "B", "C"),  # 2 Nn = 8, 12 around 10: log10 0.90 / 1.08; bits 3.0 / 3.6
    (49, "B", "F"), (51, "C", "F"),  # around 100
    (4999, "C", "F"), (5001, "D", "F"),  # around 1e4
    (49999, "D", "F"), (50001, "E", "F"),  # around 1e5
    (499999, "E", "F"), (500001, "F", "F"),  # around 1e6
]


@pytest.mark.parametrize("n_non,tag,tag_if_bits", ZEBRA_BOUNDARY_CASES,
                         ids=[str(c[0]) for c in ZEBRA_BOUNDARY_CASES])
def test_tag_at_every_band_boundary_from_eps_in_nats(n_non, tag, tag_if_bits):
    from vpeval.metrics.summary import verification_summary

    tar, non = np.array([1.0]), np.zeros(n_non)
    r = zebra(tar, non)
    eps_nats = math.log(2 * n_non)
    assert r.eps_max == pytest.approx(eps_nats, rel=1e-14)
    assert r.eps_max_log10 == pytest.approx(math.log10(2 * n_non), rel=1e-14)
    assert r.eps_max_bits == pytest.approx(math.log2(2 * n_non), rel=1e-14)
    assert r.tag == tag
    assert zebra_tag(eps_nats / math.log(10)) == tag
    assert zebra_tag(eps_nats / math.log(2)) == tag_if_bits  # what a bits-based tag would say
    s = {m.key: m.value for m in verification_summary(tar, non)}
    assert s["zebra_tag"] == tag and s["eps_max"] == pytest.approx(eps_nats, rel=1e-14)


def test_tag_zero_band_ends_at_machine_epsilon_in_log10():
    """[0, machine eps] in log10 is "0": eps_max = eps * ln 10 nats is "0", though it is 3.3 eps in bits."""
    e = np.finfo(float).eps
    assert zebra_tag(e) == "0" and zebra_tag(np.nextafter(e, 1.0)) == "A"
    assert zebra_tag((e * math.log(10)) / math.log(10)) == "0"
    assert zebra_tag(e * math.log(10) / math.log(2)) == "A"


def test_ece_profile_hand_values():
    """ECE(P) = P mean log2(1 + e^-(llr+plo)) [tar] + (1-P) mean log2(1 + e^(llr+plo)) [non], by hand."""
    l3 = math.log(3)
    # integer prior log-odds are prior log-odds too: plo = 1 is P = 1/(1 + e^-1), ECE = H(P) for llr 0
    p1 = 1 / (1 + math.exp(-1))
    h1 = -(p1 * math.log2(p1) + (1 - p1) * math.log2(1 - p1))
    np.testing.assert_allclose(ece_profile([0.0], [0.0], [0, 1]), [1.0, h1], rtol=1e-14)
    # llr 0 everywhere: ECE is the binary entropy of the prior; plo = ln 3 is P = 3/4
    got = ece_profile([0.0], [0.0], [0.0, l3, -l3])
    h34 = 0.75 * math.log2(4 / 3) + 0.25 * 2.0
    np.testing.assert_allclose(got, [1.0, h34, h34], rtol=1e-14)
    # tar llr ln 3, non llr -ln 3 at P = 1/2: both terms log2(1 + 1/3)
    np.testing.assert_allclose(ece_profile([l3], [-l3], 0.0), [math.log2(4 / 3)], rtol=1e-14)
    # class means: tar {0, ln 3} -> (1 + log2(4/3)) / 2; non {0} -> 1; at P = 1/2
    np.testing.assert_allclose(ece_profile([0.0, l3], [0.0], [0.0]), [0.25 * (1 + math.log2(4 / 3)) + 0.5],
                               rtol=1e-14)
    # plo = ln 3 with tar llr -ln 3 (sum 0) and non llr 0: 3/4 * log2 2 + 1/4 * log2 4 = 5/4
    np.testing.assert_allclose(ece_profile([-l3], [0.0], [l3]), [1.25], rtol=1e-14)


@pytest.mark.parametrize("plo", [[0.0, math.inf], [-math.inf], [math.nan]])
def test_ece_profile_rejects_non_finite_prior_log_odds(plo):
    with pytest.raises(InvalidScoresError, match="^plo must be finite prior log-odds$"):
        ece_profile([0.0], [0.0], plo)


def test_expected_ece_of_one_target_equals_quadrature_of_its_definition():
    """``integral_0^1 P ln(1 + e^-llr (1-P)/P) dP`` against numerical quadrature, on both sides of the
    Taylor/closed-form switch at |llr| = 0.05 (and exactly on it), for integer input too, and at +-inf."""
    from vpeval.metrics.zebra import _expected_ece_tar_nats

    def by_quad(x):
        return quad(lambda p: p * math.log1p(math.exp(-x) * (1 - p) / p), 0, 1, epsabs=1e-14, epsrel=1e-13,
                    limit=200)[0]

    xs = [0.0, 1e-3, -1e-3, 0.03, -0.03, 0.0499, -0.0499, 0.05, -0.05, 0.0501, -0.0501, 0.5, -0.5, 3.0, -3.0]
    got = _expected_ece_tar_nats(np.array(xs))
    np.testing.assert_allclose(got, [by_quad(x) for x in xs], rtol=0, atol=1e-13)
    # integer llrs: 0 gives integral_0^1 P ln(1/P) dP = 1/4 exactly
    got_int = _expected_ece_tar_nats(np.array([0, 1, -2]))
    np.testing.assert_allclose(got_int, [0.25, by_quad(1.0), by_quad(-2.0)], rtol=0, atol=1e-13)
    np.testing.assert_array_equal(_expected_ece_tar_nats(np.array([np.inf, -np.inf])), [0.0, np.inf])
    # |llr| = 800, where e^800 overflows: the integral is below e^-800 (0 in float64) for +800; for -800 it is
    # 800/2 + integral P ln((1-P)/P) dP = 400 + (-3/4 + 1/4) = 399.5 (the neglected term is below e^-800)
    np.testing.assert_allclose(_expected_ece_tar_nats(np.array([800.0, -800.0])), [0.0, 399.5], rtol=1e-15,
                               atol=0)


def test_expected_ece_taylor_branch_to_the_last_ulp():
    """Inside |llr| < 0.05 the function is a Taylor series; against the closed form
    ``(a - 1/4 - 3a^2/4 + (a^2/2) ln a) / (1 - a)^2 + 1/4`` (``a = e^-llr``, checked against quadrature above)
    evaluated with 60 significant digits, where its cancellation costs nothing, it is good to float64
    rounding. The degree-7 term at |llr| = 0.0499 is 2.6e-15, so this tolerance sees every coefficient
    whose change moves the value by more than ~1e-16."""
    from decimal import Decimal, localcontext

    from vpeval.metrics.zebra import _expected_ece_tar_nats

    def closed_form(x):
        with localcontext() as ctx:
            ctx.prec = 60
            d = Decimal(x)
            a = (-d).exp()
            v = (a - Decimal(1) / 4 - 3 * a * a / 4 - a * a * d / 2) / (1 - a) ** 2 + Decimal(1) / 4
            return float(v)

    xs = [1e-3, -1e-3, 0.01, -0.01, 0.03, -0.03, 0.045, -0.045, 0.0499, -0.0499]
    np.testing.assert_allclose(_expected_ece_tar_nats(np.array(xs)), [closed_form(x) for x in xs], rtol=0,
                               atol=2e-16)

def test_summary_d_ece_counts_bins_holding_a_single_trial_of_a_class():
    """tar {0, 1}, non {-1, 0}: PAV bins [0 t, 1 n] [1 t, 1 n] [1 t, 0 n] with LLRs -inf, 0, +inf. Each class
    has one trial at LLR 0, where integral_0^1 P ln(1/P) dP = 1/4 nats, and one at an infinite LLR of its
    own sign (0 nats); so E_tar = E_non = 1/8 and D_ECE = (1/2 - 1/4) / ln 2 bits."""
    from vpeval.metrics.summary import verification_summary

    tar, non = [0.0, 1.0], [-1.0, 0.0]
    want = 0.25 / math.log(2)
    assert d_ece(tar, non) == pytest.approx(want, rel=1e-14)
    s = {m.key: m.value for m in verification_summary(tar, non)}
    assert s["d_ece"] == pytest.approx(want, rel=1e-14)


def test_zebra_result_counts_and_dict():
    """Fully tied 3 targets / 2 non-targets (see test_tag_zero_is_reachable): eps_max = ln(9/8) nats, D_ECE 0,
    tag "A" (log10(9/8) = 0.051 lies in (eps, 1]); the dict carries every field under its own name."""
    d = zebra([0.3, 0.3, 0.3], [0.3, 0.3]).as_dict()
    assert list(d) == ["d_ece_bits", "eps_max", "eps_max_bits", "eps_max_log10", "tag", "n_tar", "n_non"]
    assert (d["n_tar"], d["n_non"], d["tag"], d["d_ece_bits"]) == (3, 2, "A", 0.0)
    assert d["eps_max"] == pytest.approx(math.log(9 / 8), rel=1e-13)
    assert d["eps_max_bits"] == pytest.approx(math.log2(9 / 8), rel=1e-13)
    assert d["eps_max_log10"] == pytest.approx(math.log10(9 / 8), rel=1e-13)


def test_ece_profile_of_few_distinct_llrs_equals_the_plain_means():
    """Large inputs with few distinct LLRs (PAV output) are evaluated once per distinct value, weighted by its
    count: the same profile as the plain per-trial means, to rounding."""
    rng = np.random.default_rng(4)
    tar = rng.choice([-1.5, 0.0, 0.7, 2.5, np.inf], size=3000)
    non = rng.choice([-np.inf, -2.0, -0.3, 0.7], size=5000)
    plo = np.linspace(-7, 7, 29)
    p = 1 / (1 + np.exp(-plo))
    ref = [(pi * np.logaddexp(0.0, -(tar + lo)).mean() + (1 - pi) * np.logaddexp(0.0, non + lo).mean()) / math.log(2)
           for lo, pi in zip(plo, p)]
    np.testing.assert_allclose(ece_profile(tar, non, plo), ref, rtol=1e-13, atol=1e-15)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 60), st.integers(1, 60), st.integers(0, 2**31), st.sampled_from([0.5, 2.0, 50.0]))
def test_ece_display_from_pav_bins_equals_the_profile_of_the_per_trial_llrs(nt, nn, seed, grid):
    """ECEDisplay.from_scores reads the PAV bins with their counts (one sort); the profile equals ece_profile
    of the per-trial PAV LLRs, ties and pure bins (+-inf LLRs) included."""
    from vpeval.plots import ECEDisplay

    rng = np.random.default_rng(seed)
    tar = np.round(rng.normal(1.0, 1.0, nt) * grid) / grid
    non = np.round(rng.normal(0.0, 1.0, nn) * grid) / grid
    d = ECEDisplay.from_scores(tar, non)
    np.testing.assert_allclose(d.pav, ece_profile(*pav_llr(tar, non), d.plo), rtol=1e-12, atol=1e-12)
