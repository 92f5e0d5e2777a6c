"""Back-ends (cosine, centred cosine, LDA, PLDA, AS-norm): hand cases, oracles, properties, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import multivariate_normal

from vpeval.backends import (
    BACKENDS,
    ASNorm,
    BackendError,
    CentredCosineBackend,
    CosineBackend,
    LDABackend,
    PLDABackend,
    get_backend,
    two_covariance_em,
    two_covariance_llr,
    two_covariance_llr_n,
)


def clusters(n_spk=12, per=5, d=6, spread=0.3, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_spk, d))
    x = np.repeat(centres, per, axis=0) + spread * rng.normal(size=(n_spk * per, d))
    spk = np.repeat([f"s{i:02d}" for i in range(n_spk)], per)
    return x, spk, centres


# ------------------------------------------------------------------------------------------ PLDA closed form


def test_plda_llr_one_dimension_by_hand():
    # S_b = 4, S_w = 1, mu = 0, x1 = 1, x2 = 2. Same-speaker covariance [[5, 4], [4, 5]] (det 9), different
    # [[5, 0], [0, 5]] (det 25). Quadratic forms: same (5*1 - 2*4*2 + 5*4)/9 = 9/9 = 1, different
    # (1 + 4)/5 = 1. LLR = -1/2 log 9 - 1/2 + 1/2 log 25 + 1/2 = log(5/3).
    llr = two_covariance_llr([[1.0]], [[2.0]], [0.0], [[4.0]], [[1.0]])
    assert llr.shape == (1, 1)
    assert llr[0, 0] == pytest.approx(math.log(5 / 3), abs=1e-14)


def _joint_llr(x1, x2, mu, sb, sw):
    tot = sb + sw
    same = np.block([[tot, sb], [sb, tot]])
    diff = np.block([[tot, np.zeros_like(sb)], [np.zeros_like(sb), tot]])
    z, m = np.r_[x1, x2], np.r_[mu, mu]
    return multivariate_normal(m, same).logpdf(z) - multivariate_normal(m, diff).logpdf(z)


@pytest.mark.parametrize("singular_between", [False, True])
def test_plda_llr_matches_joint_gaussian_oracle(singular_between):
    rng = np.random.default_rng(3)
    d = 4
    a = rng.normal(size=(d, 2 if singular_between else d))
    sb = a @ a.T
    c = rng.normal(size=(d, d))
    sw = c @ c.T + 0.5 * np.eye(d)
    mu = rng.normal(size=d)
    e, t = rng.normal(size=(3, d)), rng.normal(size=(5, d))
    fast = two_covariance_llr(e, t, mu, sb, sw)
    slow = np.array([[_joint_llr(ei, tj, mu, sb, sw) for tj in t] for ei in e])
    np.testing.assert_allclose(fast, slow, rtol=1e-9, atol=1e-9)


def test_plda_em_reaches_closed_form_ml_for_equal_counts():
    # With c embeddings per speaker the ML estimates are S_w = W / (S (c - 1)) and S_b = Cov(means) - S_w / c
    # (when the latter is positive definite); EM started anywhere reaches them.
    x, spk, _ = clusters(n_spk=300, per=4, d=3, spread=0.7, seed=5)
    mu, sb, sw = two_covariance_em(x, spk, n_iter=200)
    g = x.reshape(300, 4, 3)
    means = g.mean(axis=1)
    dev = (g - means[:, None, :]).reshape(-1, 3)
    sw_ml = dev.T @ dev / (300 * 3)
    sb_ml = np.cov(means, rowvar=False, bias=True) - sw_ml / 4
    np.testing.assert_allclose(sw, sw_ml, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(sb, sb_ml, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(mu, means.mean(axis=0), atol=1e-9)


def test_plda_em_recovers_generating_covariances():
    rng = np.random.default_rng(7)
    sb_true = np.diag([4.0, 1.0])
    sw_true = np.array([[1.0, 0.3], [0.3, 0.5]])
    y = rng.multivariate_normal([1.0, -1.0], sb_true, size=2000)
    x = np.repeat(y, 6, axis=0) + rng.multivariate_normal([0, 0], sw_true, size=12000)
    mu, sb, sw = two_covariance_em(x, np.repeat(np.arange(2000).astype(str), 6))
    np.testing.assert_allclose(sw, sw_true, atol=0.03)
    np.testing.assert_allclose(sb, sb_true, atol=0.3)
    np.testing.assert_allclose(mu, [1.0, -1.0], atol=0.1)


def test_plda_singular_within_is_refused():
    x, spk, _ = clusters(n_spk=3, per=2, d=6)
    with pytest.raises(BackendError, match="within-speaker covariance is singular"):
        two_covariance_em(x, spk)


# ------------------------------------------------------------------------------------------ cosine family


def test_cosine_hand_case_and_scale_invariance():
    b = CosineBackend()
    s = b.score([[3.0, 4.0]], [[4.0, 3.0], [-3.0, -4.0]])
    np.testing.assert_allclose(s, [[24 / 25, -1.0]])
    np.testing.assert_allclose(b.score([[30.0, 40.0]], [[0.4, 0.3]]), [[24 / 25]])


def test_centred_cosine_hand_case():
    # unit training rows (1,0), (0,1) -> mean (0.5, 0.5); e = (1, 0) - m = (0.5, -0.5), t = (0, 1) - m
    b = CentredCosineBackend().fit([[1.0, 0.0], [0.0, 1.0], [2.0, 0.0]], ["a", "b", "a"])
    np.testing.assert_allclose(b.mean_, [2 / 3, 1 / 3])
    e, t = np.array([1.0, 0.0]) - b.mean_, np.array([0.0, 1.0]) - b.mean_
    want = e @ t / np.linalg.norm(e) / np.linalg.norm(t)
    np.testing.assert_allclose(b.score([[1.0, 0.0]], [[0.0, 1.0]]), [[want]], rtol=1e-12)


def test_lda_directions_span_the_fisher_discriminants():
    # three speakers: the two LDA directions span S_w^-1 (m_a - m_c) and S_w^-1 (m_b - m_c) (Fisher / Rao)
    rng = np.random.default_rng(2)
    means = ([3.0, 1.0, 0.0, 0.5], [1.0, 3.0, 0.5, 0.0], [1.0, 1.0, 3.0, 1.0])
    groups = [rng.normal(m, [0.2, 0.5, 0.3, 0.4], size=(40, 4)) for m in means]
    x = np.vstack(groups)
    spk = np.repeat(["a", "b", "c"], 40)
    back = LDABackend().fit(x, spk)
    assert back.n_components_ == 2
    u = [g / np.linalg.norm(g, axis=1, keepdims=True) for g in groups]
    sw = sum((g - g.mean(0)).T @ (g - g.mean(0)) for g in u)
    w = np.column_stack([np.linalg.solve(sw, u[i].mean(0) - u[2].mean(0)) for i in (0, 1)])
    proj = back.lda_.scalings_[:, :2]
    assert np.linalg.matrix_rank(np.column_stack([proj, w]), tol=1e-8 * np.abs(w).max()) == 2
    # same-speaker pairs score higher than different-speaker pairs
    s = back.score(np.vstack([g[:2] for g in groups]), np.vstack([g[2:4] for g in groups]))
    same = np.kron(np.eye(3), np.ones((2, 2))).astype(bool)
    assert s[same].min() > s[~same].max()


def test_lda_refuses_one_dimension_and_rounding_noise():
    x, spk, _ = clusters(n_spk=2, per=5)
    with pytest.raises(BackendError, match="at least 3 training speakers"):
        LDABackend().fit(x, spk)
    x, spk, centres = clusters(n_spk=5, per=4)
    same = np.repeat(centres, 4, axis=0) * (1 + 1e-16 * np.arange(20))[:, None]
    with pytest.raises(BackendError, match="no within-speaker variation"):
        LDABackend().fit(same, spk)
    with pytest.raises(BackendError, match="no within-speaker variation"):
        PLDABackend().fit(same, spk)


def test_failed_refit_leaves_an_unfitted_backend():
    x, spk, centres = clusters(n_spk=6, per=4, d=6)
    b = PLDABackend().fit(x, spk)
    with pytest.raises(BackendError):
        b.fit(np.repeat(centres, 4, axis=0), spk)
    assert b.dim_ is None and b.n_training_speakers_ == 0
    with pytest.raises(BackendError, match="last fit failed"):
        b.score(x[:1], x[:1])


def test_asnorm_refuses_near_tied_cohort_scores():
    x, spk, centres = clusters(n_spk=4, per=3, d=5)
    twin = np.vstack([x, x[:3] * (1 + 1e-13)])
    spk2 = np.r_[spk, ["twin"] * 3]
    b = ASNorm(CosineBackend(), top_k=2).fit(twin, spk2)
    with pytest.raises(BackendError, match=r"nearly\) identical top-2 cohort scores"):
        b.score(x[:3], centres)


def test_lda_dimension_option():
    x, spk, _ = clusters(n_spk=5, per=4, d=8)
    assert LDABackend(n_components=2).fit(x, spk).n_components_ == 2
    with pytest.raises(BackendError, match=r"in \[2, 4\]"):
        LDABackend(n_components=5).fit(x, spk)


# ------------------------------------------------------------------------------------------ AS-norm


def test_asnorm_matches_loop_oracle():
    x, spk, centres = clusters(n_spk=8, per=3, d=5, seed=4)
    k = 3
    b = ASNorm(CosineBackend(), top_k=k).fit(x, spk)
    rng = np.random.default_rng(9)
    e, t = rng.normal(size=(4, 5)), rng.normal(size=(6, 5))
    # slow oracle: cohort = unit mean of each speaker's unit rows; loops, sorted lists, statistics.stdev
    import statistics

    unit = lambda v: v / np.linalg.norm(v)  # noqa: E731
    cohort = [unit(np.mean([unit(r) for r, s in zip(x, spk) if s == name], axis=0)) for name in sorted(set(spk))]

    def stats(v):
        top = sorted((float(unit(v) @ c) for c in cohort), reverse=True)[:k]
        return statistics.mean(top), statistics.stdev(top)

    want = np.empty((4, 6))
    for i, ei in enumerate(e):
        me, se = stats(ei)
        for j, tj in enumerate(t):
            mt, s_t = stats(tj)
            raw = float(unit(ei) @ unit(tj))
            want[i, j] = 0.5 * ((raw - me) / se + (raw - mt) / s_t)
    np.testing.assert_allclose(b.score(e, t), want, rtol=1e-10, atol=1e-12)


def test_asnorm_top_k_capped_at_cohort_and_validated():
    x, spk, _ = clusters(n_spk=4, per=3)
    assert ASNorm(PLDABackend(), top_k=200).fit(x, spk).top_k_ == 4
    with pytest.raises(BackendError, match="top_k"):
        ASNorm(CosineBackend(), top_k=1)
    with pytest.raises(BackendError, match="wraps one plain Backend"):
        ASNorm(ASNorm(CosineBackend()))


# ------------------------------------------------------------------------------------------ properties


@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize("asnorm", [False, True])
def test_fit_and_score_are_order_invariant_and_deterministic(name, asnorm):
    x, spk, centres = clusters(n_spk=15, per=6, d=6, seed=1)
    perm = np.random.default_rng(0).permutation(x.shape[0])
    b1 = get_backend(name, asnorm=asnorm, top_k=5).fit(x, spk)
    b2 = get_backend(name, asnorm=asnorm, top_k=5).fit(x[perm], spk[perm])
    b3 = get_backend(name, asnorm=asnorm, top_k=5).fit(x, spk)
    e, t = centres[:4], x[::7]
    s1 = b1.score(e, t)
    np.testing.assert_array_equal(s1, b2.score(e, t))  # bit for bit
    np.testing.assert_array_equal(s1, b3.score(e, t))
    # permuting the scored rows permutes the matrix and changes no value
    pe, pt = np.array([2, 0, 3, 1]), np.random.default_rng(1).permutation(t.shape[0])
    np.testing.assert_array_equal(b1.score(e[pe], t[pt]), s1[pe][:, pt])
    # every scored row is scale-free (unit length first)
    np.testing.assert_allclose(b1.score(3.0 * e, 0.5 * t), s1, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["cosine", "centred-cosine", "lda", "plda"])
def test_scores_are_symmetric(name):
    x, spk, _ = clusters(seed=2)
    b = get_backend(name).fit(x, spk)
    s = b.score(x[:10], x[:10])
    np.testing.assert_allclose(s, s.T, rtol=1e-10, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_trained_backends_separate_well_clustered_speakers(seed):
    # speakers along orthogonal directions (a random rotation of the basis), tight clusters
    rng = np.random.default_rng(seed)
    centres, _ = np.linalg.qr(rng.normal(size=(10, 10)))
    x = np.repeat(centres, 6, axis=0) + 0.02 * rng.normal(size=(60, 10))
    spk = np.repeat(np.arange(10).astype(str), 6)
    for name in ("centred-cosine", "lda", "plda"):
        s = get_backend(name).fit(x, spk).score(centres, x)
        assert (s.argmax(axis=0) == np.repeat(np.arange(10), 6)).all(), name


# ------------------------------------------------------------------------------------------ errors


def test_errors_name_the_problem():
    x, spk, _ = clusters()
    with pytest.raises(BackendError, match="must be fitted"):
        PLDABackend().score(x[:2], x[:2])
    b = LDABackend().fit(x, spk)
    with pytest.raises(BackendError, match="dimension 3; lda was fitted on dimension 6"):
        b.score(x[:2, :3], x[:2, :3])
    with pytest.raises(BackendError, match="zero vector"):
        b.score(np.zeros((1, 6)), x[:1])
    with pytest.raises(BackendError, match="NaN or inf"):
        b.score(np.full((1, 6), np.nan), x[:1])
    with pytest.raises(BackendError, match="single embedding"):
        PLDABackend().fit(x[::5], spk[::5])
    with pytest.raises(BackendError, match="at least 2 speakers"):
        LDABackend().fit(x[:5], spk[:5])
    with pytest.raises(BackendError, match="speaker_ids has shape"):
        LDABackend().fit(x, spk[:-1])
    with pytest.raises(BackendError, match="unknown back-end"):
        get_backend("svm")
    with pytest.raises(BackendError, match="n_iter"):
        PLDABackend(n_iter=-1).fit(x, spk)


@pytest.mark.parametrize("make", [lambda: LDABackend(n_components=3), lambda: PLDABackend(lda_dim=4, n_iter=3),
                                  lambda: ASNorm(PLDABackend(n_iter=2), top_k=4), CentredCosineBackend])
def test_clone_keeps_settings_and_refits_identically(make):
    x, spk, centres = clusters()
    fitted = make().fit(x, spk)
    twin = fitted.clone()
    assert type(twin) is type(fitted) and twin.describe()["training_speakers"] == 0
    np.testing.assert_array_equal(twin.fit(x, spk).score(centres, x), fitted.score(centres, x))


# ------------------------------------------------------------------------------------------ rounding-level inputs


def test_centred_cosine_refuses_an_input_at_the_training_mean_up_to_rounding():
    # issue 28: fitted on 40 identical rows [3, 4], the enrollment [3, 4] is the mean up to rounding residue
    b = CentredCosineBackend().fit(np.tile([3.0, 4.0], (40, 1)), np.repeat(["a", "b"], 20))
    with pytest.raises(BackendError, match="enrollment row 0 equals the training mean up to rounding"):
        b.score([[3.0, 4.0]], [[1.0, 0.0]])
    with pytest.raises(BackendError, match="test row 1 equals the training mean"):
        b.score([[1.0, 0.0]], [[0.0, 1.0], [6.0, 8.0]])
    # away from the mean m = (0.6, 0.8): cos((0.4, -0.8), (-0.6, 0.2)) = -0.4 / sqrt(0.8 * 0.4)
    assert b.score([[1.0, 0.0]], [[0.0, 1.0]])[0, 0] == pytest.approx(-0.4 / math.sqrt(0.32))


@pytest.mark.parametrize("noise", [1e-15, 1e-14])
@pytest.mark.parametrize("make", [PLDABackend, LDABackend, lambda: PLDABackend(lda_dim=3)])
def test_trained_backends_refuse_one_vector_plus_rounding_noise(make, noise):
    rng = np.random.default_rng(0)
    x = rng.normal(size=6) * 3.0 + noise * rng.normal(size=(40, 6))
    spk = np.repeat([f"spk{i}" for i in range(8)], 5)
    with pytest.raises(BackendError, match=r"'spk0'.*one vector up to rounding"):
        make().fit(x, spk)
    # the same at another magnitude (scale-aware: unit rows) and a real spread is fitted
    with pytest.raises(BackendError, match="one vector up to rounding"):
        make().fit(x * 1e-200, spk)
    make().fit(x + 0.3 * rng.normal(size=x.shape), spk)


def test_float32_rounding_counts_for_float32_input():
    rng = np.random.default_rng(1)
    x = (rng.normal(size=8) + 1e-9 * rng.normal(size=(30, 8))).astype(np.float32)
    spk = np.repeat([f"s{i}" for i in range(6)], 5)
    with pytest.raises(BackendError, match="one vector up to rounding"):
        PLDABackend().fit(x, spk)
    # in float64 the same 1e-9 spread is far above rounding
    PLDABackend().fit(x.astype(np.float64) + 1e-9 * rng.normal(size=(30, 8)), spk)


def test_within_speaker_rounding_names_speakers():
    x, spk, centres = clusters(n_spk=5, per=4)
    same = np.repeat(centres, 4, axis=0) + 1e-17 * np.arange(20)[:, None]
    with pytest.raises(BackendError, match=r"no within-speaker variation \(each of the 5 speakers.*'s00'"):
        PLDABackend().fit(same, spk)


# ------------------------------------------------------------------------------------------ PLDA n-utterance enrollment


def _full_joint_llr(enroll, test, mu, sb, sw):
    """Oracle: log N(all n + 1 vectors | one speaker) - log N(enrollment | one speaker) - log N(test)."""
    n, k = enroll.shape

    def cov(m):
        return np.kron(np.ones((m, m)), sb) + np.kron(np.eye(m), sw)

    x = np.concatenate([enroll.reshape(-1), test])
    same = multivariate_normal(np.tile(mu, n + 1), cov(n + 1)).logpdf(x)
    return same - multivariate_normal(np.tile(mu, n), cov(n)).logpdf(enroll.reshape(-1)) \
        - multivariate_normal(mu, sb + sw).logpdf(test)


@pytest.mark.parametrize("n", [1, 2, 5])
def test_n_utterance_llr_matches_the_full_joint_gaussian(n):
    rng = np.random.default_rng(n)
    k = 3
    g = rng.normal(size=(k, k))
    sb = g @ g.T
    h = rng.normal(size=(k, k))
    sw = h @ h.T + 0.5 * np.eye(k)
    mu = rng.normal(size=k)
    enroll = rng.normal(size=(n, k)) + mu
    tests = rng.normal(size=(4, k)) + mu
    got = two_covariance_llr_n(enroll.mean(axis=0)[None, :], [n], tests, mu, sb, sw)[0]
    want = [_full_joint_llr(enroll, t, mu, sb, sw) for t in tests]
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    if n == 1:
        np.testing.assert_allclose(got, two_covariance_llr(enroll, tests, mu, sb, sw)[0], rtol=1e-12)


def test_plda_enrollment_rules_named_and_distinct():
    x, spk, centres = clusters(n_spk=12, per=5, d=6)
    by_model = PLDABackend(enrollment="by-model").fit(x, spk)
    mean = PLDABackend().fit(x, spk)
    assert mean.describe()["enrollment"] == "mean" and by_model.describe()["enrollment"] == "by-model"
    assert by_model.clone().enrollment == "by-model"
    groups = [x[:4], x[5:6], x[10:13]]
    # "mean": the protocols' model (normalised mean of normalised rows) scored as one embedding
    unit = [g / np.linalg.norm(g, axis=1, keepdims=True) for g in groups]
    models = np.vstack([u.mean(axis=0) / np.linalg.norm(u.mean(axis=0)) for u in unit])
    np.testing.assert_allclose(mean.score_enrollments(groups, x[20:25]), mean.score(models, x[20:25]), rtol=1e-12)
    # "by-model": one-utterance enrollment equals score(); n utterances = the LLR of the front-ended mean
    got = by_model.score_enrollments(groups, x[20:25])
    np.testing.assert_allclose(got[1], by_model.score(x[5:6], x[20:25])[0], rtol=1e-12)
    front = by_model._front(unit[0]).mean(axis=0)[None, :]
    want = two_covariance_llr_n(front, [4], by_model._front(x[20:25] / np.linalg.norm(x[20:25], axis=1,
                                                                                          keepdims=True)),
                                by_model.mu_, by_model.between_, by_model.within_)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    assert not np.allclose(got[0], mean.score_enrollments(groups, x[20:25])[0])
    with pytest.raises(BackendError, match="enrollment must be one of mean, by-model"):
        PLDABackend(enrollment="average")
    with pytest.raises(BackendError, match="at least one embedding"):
        by_model.score_enrollments([x[:2], x[:0]], x[:1])


def test_few_training_speakers_warn_and_asnorm_reports_its_cap():
    from vpeval.errors import FewTrainingSpeakersWarning

    x, spk, _ = clusters(n_spk=3, per=5, d=4)
    with pytest.warns(FewTrainingSpeakersWarning, match="PLDA.*from 3 speaker"):
        PLDABackend().fit(x, spk)
    x2, spk2, _ = clusters(n_spk=2, per=4, d=4)
    with pytest.warns(FewTrainingSpeakersWarning, match="AS-norm.*from 2 speaker"):
        b = ASNorm(CosineBackend(), top_k=200).fit(x2, spk2)
    d = b.describe()
    assert (d["asnorm_top_k"], d["asnorm_top_k_requested"], d["asnorm_cohort"]) == (2, 200, 2)
    import warnings

    x3, spk3, _ = clusters(n_spk=12, per=3, d=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FewTrainingSpeakersWarning)
        d = ASNorm(PLDABackend(), top_k=5).fit(x3, spk3).describe()
    assert (d["asnorm_top_k"], d["asnorm_top_k_requested"], d["asnorm_cohort"]) == (5, 5, 12)


def test_lda_reports_the_dimension_it_really_projects_to():
    # issue 28: rank-3 data reported 40 (here 49) components in attacker.json while projecting to 3
    rng = np.random.default_rng(0)
    spk = np.repeat([f"s{i:02d}" for i in range(50)], 6)
    x = rng.normal(size=(300, 3)) @ rng.normal(size=(3, 60))
    b = LDABackend().fit(x, spk)
    assert b.n_components_ == b.lda_.transform(x[:2]).shape[1] < 49
    assert b.describe()["n_components"] == b.n_components_ and b.describe()["n_components_requested"] is None
    x2, spk2, _ = clusters(n_spk=6, per=5, d=8)
    b2 = LDABackend(n_components=3).fit(x2, spk2)
    assert b2.n_components_ == 3 == b2.describe()["n_components_requested"]
