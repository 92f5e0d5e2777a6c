"""The field's findings shown with vpeval itself (issue 25): LID views, ideal-LLR EER, estimator table."""

import matplotlib

matplotlib.use("Agg", force=True)
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from vpeval.plots import LIDCCDFDisplay  # noqa: E402


def _drawn_value(line, x):
    """Value of a ``steps-post`` line at ``x`` (NaN left of its first point)."""
    assert line.get_drawstyle() == "steps-post"
    xs, ys = np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)
    j = np.searchsorted(xs, x, side="right") - 1
    return np.where(j >= 0, ys[np.clip(j, 0, None)], np.nan)


def _drawn_ccdf(lid, n_speakers=8):
    fig, ax = plt.subplots()
    try:
        LIDCCDFDisplay(np.asarray(lid, float), n_speakers, label="s").plot(ax)
        line = ax.get_lines()[0]
        return line
    finally:
        plt.close(fig)


def test_ccdf_plot_hand_case():
    # LIDs -1, 0.5, 0.5, 2: >= x is 100 % up to -1, 75 % on (-1, 0.5], 25 % on (0.5, 2], 0 beyond 2
    line = _drawn_ccdf([0.5, -1.0, 0.5, 2.0])
    got = _drawn_value(line, np.array([-0.5, 0.0, 1.0, 1.9, 2.5]))
    assert got.tolist() == [75.0, 75.0, 25.0, 25.0, 0.0]
    assert line.get_ydata()[0] == 100.0 and line.get_ydata()[-1] == 0.0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([-3.0, -1.0, -0.25, 0.0, 0.5, 1.0, 2.0, 3.0]), min_size=1, max_size=30))
def test_ccdf_plot_matches_brute_force_between_values(values):
    v = np.asarray(values)
    line = _drawn_ccdf(v)
    u = np.unique(v)
    probes = np.concatenate([(u[:-1] + u[1:]) / 2, [u[-1] + 0.5]])
    want = np.array([100.0 * np.mean(v >= x) for x in probes])
    np.testing.assert_allclose(_drawn_value(line, probes), want)


# --- item 7: the EER of LLRs carrying no information is undefined (worst-case paper, Sec. 4.3) ---------------

from typer.testing import CliRunner  # noqa: E402

from vpeval.cli.main import app  # noqa: E402
from vpeval.metrics.eer_defined import eer_undefined_reason  # noqa: E402

runner = CliRunner()


def _write(tmp_path, tar, non):
    p = tmp_path / "s.txt"
    p.write_text("".join(f"{float(v)!r} 1\n" for v in tar) + "".join(f"{float(v)!r} 0\n" for v in non))
    return p


def test_eer_undefined_reason_only_for_one_shared_score():
    assert eer_undefined_reason([0.0] * 3, [-0.0] * 4) is not None
    assert "LLR 1.5 nats" in eer_undefined_reason([1.5], [1.5, 1.5], scores_are_llrs=True)
    assert eer_undefined_reason([0.0, 0.0], [0.0, 1e-12]) is None
    assert eer_undefined_reason([1.0], [2.0]) is None
    # equal score sets in both classes but two values: the step DET meets Pmiss = Pfa = 50 %, defined
    assert eer_undefined_reason([0.0, 1.0], [0.0, 1.0]) is None


@pytest.mark.parametrize("value", [0.0, -0.7])
def test_verify_llr_says_eer_undefined_for_uninformative_llrs(tmp_path, value):
    p = _write(tmp_path, [value] * 4, [value] * 6)
    r = runner.invoke(app, ["verify", str(p), "--llr", "--no-verdict"])
    assert r.exit_code == 0, r.output
    assert "EER undefined" in r.output and "Sec. 4.3" in r.output and "Pmiss = Pfa" in r.output
    assert "undefined (50)" in r.output
    import json

    r = runner.invoke(app, ["verify", str(p), "--llr", "--no-verdict", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["eer_defined"] is False and "no information" in d["eer_undefined_reason"]
    assert d["metrics"]["eer_rocch"]["value"] == 0.5  # the convention stays, now explained


def test_verify_llr_informative_llrs_keep_their_eer(tmp_path):
    import json

    p = _write(tmp_path, [0.0, 2.0, 1.0], [0.0, -1.0])
    r = runner.invoke(app, ["verify", str(p), "--llr", "--no-verdict", "--json"])
    d = json.loads(r.output)
    assert d["eer_defined"] is True and "eer_undefined_reason" not in d
    r = runner.invoke(app, ["verify", str(p), "--llr", "--no-verdict"])
    assert "undefined" not in r.output


# --- item 2: heavy-tailed, skewed and 1-to-N simulations with exact oracles -------------------------------

import json  # noqa: E402
import math  # noqa: E402

from scipy import stats  # noqa: E402

from vpeval.metrics import interp_eer  # noqa: E402
from vpeval.simulate_kinds import (  # noqa: E402
    LeakyShareModel, LognormalScoreModel, StudentTScoreModel, lid_oracle_comparison, lognormal_scores,
    student_t_scores,
)


def test_student_t_oracle_llr_by_hand_and_bounded():
    m = StudentTScoreModel(3.0, 2.0, 1.0, 0.0, 1.0)
    s = np.array([-50.0, -1.0, 0.0, 1.0, 2.0, 7.5, 1e6])
    # equal scales: (df + 1) / 2 * [ln(1 + z_non^2 / df) - ln(1 + z_tar^2 / df)]
    want = 2.0 * (np.log1p(s ** 2 / 3) - np.log1p((s - 2.0) ** 2 / 3))
    np.testing.assert_allclose(m.llr(s), want, rtol=1e-12, atol=1e-12)
    grid = np.linspace(-1e3, 1e3, 200001)
    assert np.max(np.abs(m.llr(grid))) < 2.3  # bounded, and -> 0 in both tails
    assert abs(m.llr([1e9])[0]) < 1e-6


def test_simulated_eers_match_the_exact_eer():
    for sim in (student_t_scores(3.0, 1.0, 40000, 40000, seed=1), lognormal_scores(1.0, 1.0, 40000, 40000, seed=2),
                LeakyShareModel(10, 0.1, 4.0).sample(8000, seed=3).trials()):
        assert interp_eer(sim.tar, sim.non) == pytest.approx(sim.model.eer(), abs=0.01)
    assert LognormalScoreModel(1.0, 1.0, 0.0, 1.0).eer() == pytest.approx(stats.norm.cdf(-0.5), abs=1e-10)
    # leaky share: Pmiss(t) = 0.9 Phi(t) + 0.1 Phi(t - 4) = Pfa(t) = 1 - Phi(t), solved independently
    from scipy.optimize import brentq

    t = brentq(lambda x: 0.9 * stats.norm.cdf(x) + 0.1 * stats.norm.cdf(x - 4) - stats.norm.sf(x), -5, 5)
    assert LeakyShareModel(10, 0.1, 4.0).eer() == pytest.approx(stats.norm.sf(t), abs=1e-9)


def test_leaky_share_oracle_lid_equals_bayes_by_brute_force():
    m = LeakyShareModel(4, 0.3, 2.0)
    sim = m.sample(7, seed=5)
    for i in range(7):
        row = sim.score_matrix[i]
        # P(row | true = j) = prod_k f_k(row_k), f_true a normal mixture, f_impostor N(0, 1)
        lik = []
        for j in range(4):
            f = [0.7 * stats.norm.pdf(row[k]) + 0.3 * stats.norm.pdf(row[k], 2.0) if k == j
                 else stats.norm.pdf(row[k]) for k in range(4)]
            lik.append(np.prod(f))
        p_true = lik[sim.true_index[i]] / sum(lik)
        assert sim.oracle_lid[i] == pytest.approx(math.log2(4 * p_true), abs=1e-10)
    # pure noise: every oracle LID is exactly 0
    assert np.all(LeakyShareModel(6, 0.0, 3.0).sample(20, seed=0).oracle_lid == 0)


def test_lid_paper_pattern_on_simulation():
    """EER near 50 % while a share of probes is identified; vpeval's LID (affine calibration) sees far less of
    the leaking probes' disclosure than the exact LID."""
    c = lid_oracle_comparison(LeakyShareModel(10, 0.1, 4.0), 2000, seed=0)
    assert 0.46 < c["eer_exact"] < 0.48
    assert c["vpeval"]["alid"] > 0 and c["vpeval"]["pdr"] > 0.5 and 0.5 < c["vpeval"]["lid_max"] < 1.5
    assert c["oracle_lid_leaking_mean"] > 2.5 and c["oracle"]["lid_max"] > 3.3
    assert c["vpeval_lid_leaking_mean"] < c["oracle_lid_leaking_mean"] / 2


@pytest.mark.parametrize("kind", ["student-t", "lognormal", "one-to-n"])
def test_simulate_new_kinds_compare_with_the_oracle(tmp_path, kind):
    out = tmp_path / kind
    r = runner.invoke(app, ["simulate", "-o", str(out), "--kind", kind, "--n", "400", "--n-probes", "300",
                            "--json"])
    assert r.exit_code == 0, r.output
    comp = json.loads(r.stdout)
    fam = {"student-t": "student_t", "lognormal": "lognormal", "one-to-n": "leaky_share"}[kind]
    assert comp["model"]["family"] == fam
    err = comp["llr_error_vs_oracle"]
    assert set(err) == {"pav", "pav_laplace", "logistic", "gaussian", "student_t"}
    assert err["pav_laplace"]["mean_abs_error_nats"] < 1.0
    if kind == "student-t":  # the matching family beats the Gaussian fit on heavy tails
        assert err["student_t"]["max_abs_error_nats"] < err["gaussian"]["max_abs_error_nats"]
    if kind == "one-to-n":
        assert comp["n_tar"] == 300 and comp["n_non"] == 300 * 9
        assert set(comp["lid"]["oracle"]) == {"alid", "pdr", "ndr", "lid_plus", "lid_minus", "lid_max"}
        assert "lid_ccdf_oracle" in (out / "report" / "report.html").read_text()
    lines = (out / "oracle_llr.txt").read_text().splitlines()
    assert len(lines) == comp["n_tar"] + comp["n_non"]


# --- item 1: the estimator table (worst-case paper, Table 3 layout) ----------------------------------------

from vpeval.disclosure import estimator_table, worst_case_disclosure  # noqa: E402
from vpeval.metrics import rocch_eer  # noqa: E402


def test_estimator_table_values_are_the_estimators_own():
    a, b = student_t_scores(3.0, 1.0, 500, 500, seed=4), student_t_scores(30.0, 1.0, 500, 500, seed=5)
    t = estimator_table({"heavy": (a.tar, a.non), "light": (b.tar, b.non)})
    assert t.estimators == ["pav_laplace", "gaussian", "student_t"]
    for name, sim in (("heavy", a), ("light", b)):
        res = worst_case_disclosure(sim.tar, sim.non, ("pav_laplace", "gaussian", "student_t"))
        assert t.eer[name] == rocch_eer(sim.tar, sim.non)
        for e in t.estimators:
            assert t.eps_max_nats[name][e] == res[e].eps_max_nats
    # order-independent: reversing the trials changes nothing
    t2 = estimator_table({"heavy": (a.tar[::-1], a.non[::-1]), "light": (b.tar[::-1], b.non[::-1])})
    assert t2.to_dict() == t.to_dict()


def test_order_changes_hand_case():
    from vpeval.disclosure import _pair_changes

    crit = {"EER": {"a": -0.3, "b": -0.4, "c": -0.3}, "gaussian": {"a": 20.0, "b": 5.0, "c": None},
            "pav_laplace": {"a": 2.0, "b": 3.0, "c": 2.0}}
    ch = _pair_changes(["a", "b", "c"], crit)
    # a vs b: a more by EER and gaussian, less by PAV; a vs c: all tied or missing; b vs c: b less by EER,
    # more by PAV
    assert ch == [{"systems": ["a", "b"], "a_more": ["EER", "gaussian"], "b_more": ["pav_laplace"], "tied": []},
                  {"systems": ["b", "c"], "a_more": ["pav_laplace"], "b_more": ["EER"], "tied": []}]


def test_heavy_tails_gaussian_goes_abnormal_and_the_order_flips():
    """The worst-case paper's Table 3 finding: on heavy tails the Gaussian fit extrapolates a huge eps_max, the
    Student-t and Laplace PAV stay small, and the order of systems depends on the estimator."""
    heavy = student_t_scores(3.0, 1.0, 2000, 2000, seed=0)
    normal = StudentTScoreModel(1e6, 1.2, 1.0, 0.0, 1.0).sample(2000, 2000, seed=1)  # practically normal
    t = estimator_table({"heavy": (heavy.tar, heavy.non), "normal": (normal.tar, normal.non)})
    e = t.eps_max_nats["heavy"]
    assert e["gaussian"] > 5 * e["student_t"] and e["gaussian"] > 5 * e["pav_laplace"]
    assert e["student_t"] < 2 * heavy.eps_max  # near the oracle's bounded worst case
    assert any(c["systems"] == ["heavy", "normal"] and "gaussian" in c["a_more"] for c in t.order_changes)


def test_disclosure_cli_several_inputs_with_rank_table(tmp_path):
    a, b = student_t_scores(3.0, 1.0, 300, 300, seed=2), student_t_scores(3.0, 2.0, 300, 300, seed=3)
    pa, pb = _write(tmp_path, a.tar, a.non), tmp_path / "b.txt"
    pb.write_text("".join(f"{float(v)!r} 1\n" for v in b.tar) + "".join(f"{float(v)!r} 0\n" for v in b.non))
    sim = LeakyShareModel(5, 0.3, 3.0).sample(40, seed=0)
    rows = ["enroll_spk,trial_spk,trial_id,score"]
    for i in range(40):
        for j in range(5):
            rows.append(f"s{j},s{sim.true_index[i]},p{i},{float(sim.score_matrix[i, j])!r}")
    (tmp_path / "m.csv").write_text("\n".join(rows) + "\n")
    r = runner.invoke(app, ["disclosure", f"A={pa}", f"B={pb}", "--rank-table", f"B={tmp_path / 'm.csv'}",
                            "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)["estimator_table"]
    assert d["estimators"] == ["pav_laplace", "gaussian", "student_t", "rank"]
    from vpeval.metrics.identification import rank_histogram
    from vpeval.metrics.rank_disclosure import rank_disclosure

    gamma = rank_histogram(sim.score_matrix, sim.true_index, ties="fractional")
    assert d["rows"][1]["eps_max_nats"]["rank"] == pytest.approx(rank_disclosure(gamma).rank_eps_max, rel=1e-12)
    assert d["rows"][0]["eps_max_nats"]["rank"] is None and "1-to-N" in d["rows"][0]["errors"]["rank"]
    r = runner.invoke(app, ["disclosure", f"A={pa}", f"B={pb}"])
    assert r.exit_code == 0 and "Table 3" in r.output and "PAV (Laplace" in r.output
    assert ("Order changes" in r.output) or ("the same under the EER and every estimator" in r.output)
    r = runner.invoke(app, ["disclosure", f"A={pa}", "--rank-table", f"C={tmp_path / 'm.csv'}"])
    assert r.exit_code != 0 and "NAME=TABLE" in r.output


def test_report_has_the_estimator_table_for_several_inputs(tmp_path):
    a, b = student_t_scores(3.0, 1.0, 200, 200, seed=2), student_t_scores(3.0, 2.0, 200, 200, seed=3)
    pa = _write(tmp_path, a.tar, a.non)
    pb = tmp_path / "b.txt"
    pb.write_text("".join(f"{float(v)!r} 1\n" for v in b.tar) + "".join(f"{float(v)!r} 0\n" for v in b.non))
    out = tmp_path / "rep"
    r = runner.invoke(app, ["report", f"A={pa}", f"B={pb}", "-o", str(out), "--no-verdict", "-q"])
    assert r.exit_code == 0, r.output
    rep = json.loads((out / "report.json").read_text())
    secs = {s["id"]: s for s in rep["sections"]}
    data = secs["estimator-table"]["data"]
    want = estimator_table({"A": (a.tar, a.non), "B": (b.tar, b.non)}).to_dict()
    from vpeval.report.writer import JSON_DIGITS, _jsonable

    assert data["rows"] == json.loads(json.dumps(_jsonable(want["rows"], JSON_DIGITS)))  # 10 digits stored


# --- item 3: the cross-system LID table with the random-noise baseline, overlaid CCDF, Fig. 5 with LID+/LID- --


def _fake_audit(model, seed):
    from vpeval.pipeline.analyses import analyse_one_to_n
    from vpeval.pipeline.audit import SystemAudit
    from vpeval.pipeline.protocols import OneToN

    sim = model.sample(120, seed=seed)
    spk = np.array([f"s{j:02d}" for j in range(model.n_speakers)])
    m = OneToN(sim.score_matrix, sim.true_index, np.array([f"p{i}" for i in range(120)]), spk[sim.true_index],
               spk, "original", "anonymized")
    tm = {"att": {"oa": {"eer_rocch": 0.4, "eps_max_nats": 1.0}}}
    return SystemAudit(trials={}, type_metrics=tm, linkage={"att": {"oa": analyse_one_to_n(m, seed=0)}},
                       matrices={"att": {"oa": m}}), m


def test_lid_table_has_the_noise_baseline_at_the_same_n():
    from vpeval.pipeline.analyses import lid_noise_baseline
    from vpeval.report.audit import _eer_vs_disclosure_section

    leaky, m = _fake_audit(LeakyShareModel(8, 0.3, 4.0), 0)
    quiet, _ = _fake_audit(LeakyShareModel(8, 0.0, 0.0), 1)
    sec = _eer_vs_disclosure_section({"leaky": leaky, "quiet": quiet}, seed=3)
    table = next(b for b in sec.blocks if hasattr(b, "rows"))
    assert table.columns[:11] == ["system", "attacker", "N", "EER ROCCH (%)", "ALID (bits)", "PDR (%)", "NDR (%)",
                                  "LID+ (bits)", "LID- (bits)", "LID_max (bits)", "eps_max (bits)"]
    base = [r for r in table.rows if r[0] == "random-noise baseline"]
    assert len(base) == 1 and base[0][2] == 8  # one shape, the same N
    want = lid_noise_baseline(m.true_index, list(m.enrolled_speaker), seed=3).lid.summary
    assert base[0][4] == want.alid and base[0][9] == want.lid_max
    for r in table.rows[:2]:
        assert r[5] + r[6] == pytest.approx(100)
    # the leaking system sits far above the noise baseline; the figures: overlaid CCDF and Fig. 5
    assert table.rows[0][4] > base[0][4] + 0.3
    assert [b.name for b in sec.blocks if hasattr(b, "draw")] == ["lid_ccdf_systems", "points"]
    assert sec.data["noise_baseline"][0]["n_speakers"] == 8
    fig = plt.figure()
    try:
        next(b for b in sec.blocks if getattr(b, "name", "") == "points").draw(fig)
        labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        assert "LID+" in labels and "LID-" in labels
    finally:
        plt.close(fig)


# --- item 8: the findings docs/findings.md states, kept true ------------------------------------------------

from vpeval.metrics import det_curve  # noqa: E402


@pytest.mark.parametrize("n", [3, 30, 300, 3000])
def test_table2_long_sequence_eps_max_stays_while_eers_go_to_50(n):
    """Worst-case paper, Table 2, continued: scores 0.1, 0.2, ..., alternating non-target / target (example 1)
    and the labels flipped (example 2). The Laplace-PAV eps_max stays at ln 2 and 0 at every length while the
    EERs of both go to 50 %."""
    s = np.arange(1, 2 * n + 1) / 10
    non, tar = s[0::2], s[1::2]
    r1 = worst_case_disclosure(tar, non, ("pav_laplace",))["pav_laplace"]
    r2 = worst_case_disclosure(non, tar, ("pav_laplace",))["pav_laplace"]
    assert r1.eps_max_nats == pytest.approx(math.log(2), rel=1e-15) and r2.eps_max_nats == 0.0
    assert rocch_eer(tar, non) == pytest.approx((n - 1) / (2 * n), abs=1e-15)  # -> 50 %
    assert rocch_eer(non, tar) == 0.5
    if n > 3:
        assert interp_eer(tar, non) == pytest.approx(0.5) and interp_eer(non, tar) == pytest.approx(0.5)


def _max_bayes_error(tar, non, grid=20001):
    d = det_curve(tar, non)
    p = np.linspace(0, 1, grid)[:, None]
    return (p * d.pmiss[None, :] + (1 - p) * d.pfa[None, :]).min(axis=1)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-4, 4), min_size=1, max_size=25), st.lists(st.integers(-4, 4), min_size=1, max_size=25))
def test_rocch_eer_is_the_max_over_priors_of_the_bayes_error(tar, non):
    """EER (ROCCH) = max over target priors P of min over thresholds of P Pmiss + (1 - P) Pfa (ties included)."""
    tar, non = np.asarray(tar, float), np.asarray(non, float)
    b = _max_bayes_error(tar, non)
    e = rocch_eer(tar, non)
    assert b.max() <= e + 1e-12
    assert b.max() >= e - 1e-4  # the grid step bounds the gap (the envelope's slopes are at most 1)
    # the same minimum as min_dcf's, un-normalised
    for p in (0.1, 0.5, 0.9):
        from vpeval.metrics import min_dcf

        assert b[int(round(p * 20000))] == pytest.approx(min_dcf(tar, non, p) * min(p, 1 - p), abs=1e-12)


def test_demo_shows_the_lid_table_with_the_noise_baseline(demo_run):
    out, _ = demo_run
    doc = json.loads((out / "report.json").read_text())
    sec = next(s for s in doc["sections"] if s["id"] == "eer-vs-disclosure")
    pts, base = sec["data"]["points"], sec["data"]["noise_baseline"]
    assert pts and base
    assert {p["n_speakers"] for p in pts} <= {b["n_speakers"] for b in base}
    for p in pts:
        assert {"pdr", "ndr", "lid_plus_bits", "lid_minus_bits"} <= set(p)
    # noise carries nothing: its mean LID is near 0 and every system's best attacker is above it
    for b in base:
        assert abs(b["alid_bits"]) < 0.1
    for system in {p["system"] for p in pts}:
        assert max(p["alid_bits"] for p in pts if p["system"] == system) > max(b["alid_bits"] for b in base)
    assert (out / "eer-vs-disclosure_lid_ccdf_systems.png").exists() or any(
        "lid_ccdf_systems" in p.name for p in out.glob("*.png"))


# --- item 4: rank LLRs against the oracle LLR curve (worst-case paper, Fig. 2) --------------------------------


def test_rank_llr_points_use_each_entrys_own_rank():
    from vpeval.calibration.rank import rank_llr
    from vpeval.cli.disclosure import rank_llr_points
    from vpeval.metrics.identification import rank_histogram
    from vpeval.simulate import counterexample_rank_model

    model = counterexample_rank_model(6)
    scores, llr, is_true = rank_llr_points(model, 400, 7, max_probes=50)
    ranks = model.sample(400, seed=7)
    est = rank_llr(rank_histogram(ranks.score_matrix, ranks.true_index, ties="fractional"))
    np.testing.assert_array_equal(scores, ranks.score_matrix[:50].ravel())
    np.testing.assert_array_equal(llr[is_true], est[ranks.target_ranks()[:50] - 1])
    # within a row, a higher score never gets a larger rank index: the LLRs follow the row order
    m = ranks.score_matrix[:50]
    for i in range(50):
        row_llr = llr[i * 6:(i + 1) * 6]
        np.testing.assert_array_equal(row_llr[np.argsort(-m[i])], est)


def test_simulate_counterexample_draws_rank_llr_against_oracle(tmp_path):
    out = tmp_path / "ce"
    r = runner.invoke(app, ["simulate", "-o", str(out), "--n", "200", "--n-probes", "300", "-q"])
    assert r.exit_code == 0, r.output
    assert (out / "report" / "disclosure_rank_llr_vs_oracle.png").exists()
    assert "Fig. 2" in (out / "report" / "report.html").read_text()


# --- item 5: LID options (calibration, z-norm, prior) and confident misidentification -----------------------

from vpeval.metrics.linkage.variants import confident_misidentification, lid_variant  # noqa: E402


def _matrix_csv(path, sim):
    rows = ["enroll_spk,trial_spk,trial_id,score"]
    n, N = sim.score_matrix.shape
    for i in range(n):
        for j in range(N):
            rows.append(f"s{j:02d},s{sim.true_index[i]:02d},p{i},{float(sim.score_matrix[i, j])!r}")
    path.write_text("\n".join(rows) + "\n")


def test_confident_misidentification_by_hand():
    # posteriors: row 0 (true 0) [0.1, 0.8, 0.1]; row 1 (true 2) [0.45, 0.45, 0.1]; row 2 (true 1) [0.7, 0.2, 0.1]
    post = np.array([[0.1, 0.8, 0.1], [0.45, 0.45, 0.1], [0.7, 0.2, 0.1]])
    r = confident_misidentification(np.log(post), [0, 2, 1], threshold=0.5)
    assert r["share"] == pytest.approx(2 / 3)
    assert r["mean_log_odds_bits"] == pytest.approx((math.log2(0.8 / 0.2) + math.log2(0.7 / 0.3)) / 2)
    assert confident_misidentification(np.log(post), [0, 2, 1], threshold=0.75)["share"] == pytest.approx(1 / 3)
    assert math.isnan(confident_misidentification(np.log(post), [1, 0, 0], threshold=0.5)["mean_log_odds_bits"])
    with pytest.raises(Exception):
        confident_misidentification(np.log(post), [0, 2, 1], threshold=1.0)


def test_lid_variant_default_equals_the_pipeline_and_pav_sees_the_leak():
    from vpeval.metrics.linkage import lid_pipeline

    m = LeakyShareModel(10, 0.1, 4.0)
    ev, dv = m.sample(1500, seed=0), m.sample(1500, seed=1)
    ref = lid_pipeline(dv.score_matrix, ev.score_matrix, dv.true_index, ev.true_index)
    v = lid_variant(dv.score_matrix, dv.true_index, ev.score_matrix, ev.true_index)
    np.testing.assert_allclose(v.lid, ref.lid, atol=1e-9)
    pav = lid_variant(dv.score_matrix, dv.true_index, ev.score_matrix, ev.true_index, calibration="pav")
    # the non-parametric calibration follows the exact LLR's bend: much closer to the exact LID of the leak
    assert pav.summary.lid_max > 2 * v.summary.lid_max
    assert abs(pav.summary.alid - ev.oracle_lid.mean()) < abs(v.summary.alid - ev.oracle_lid.mean())
    # row order does not matter
    perm = np.random.default_rng(0).permutation(1500)
    v2 = lid_variant(dv.score_matrix, dv.true_index, ev.score_matrix[perm], ev.true_index[perm], calibration="pav")
    np.testing.assert_allclose(v2.lid, pav.lid[perm], atol=1e-12)
    with pytest.raises(Exception):
        lid_variant(dv.score_matrix, dv.true_index, ev.score_matrix, ev.true_index, calibration="pav", p_target=0.5)


def test_linkage_cli_variant_options_and_misidentification(tmp_path):
    m = LeakyShareModel(6, 0.3, 3.0)
    ev, dv = m.sample(120, seed=0), m.sample(120, seed=1)
    _matrix_csv(tmp_path / "e.csv", ev)
    _matrix_csv(tmp_path / "d.csv", dv)
    base = ["linkage", str(tmp_path / "e.csv"), "--dev", str(tmp_path / "d.csv"), "--no-verdict", "--json"]
    r = runner.invoke(app, base)
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    # columns of the CSV are speakers sorted by name, the same order as s00..s05
    want = lid_variant(dv.score_matrix, dv.true_index, ev.score_matrix, ev.true_index).misidentification
    assert d["confident_misidentification"]["share"] == pytest.approx(want["share"])
    assert "lid_variant" not in d
    r = runner.invoke(app, base + ["--calibration", "student_t", "--no-znorm"])
    assert r.exit_code == 0, r.output
    v = json.loads(r.stdout)["lid_variant"]
    want = lid_variant(dv.score_matrix, dv.true_index, ev.score_matrix, ev.true_index, calibration="student_t",
                       znorm=False)
    assert v["calibration"] == "student_t" and v["znorm"] is False
    assert v["alid_bits"] == pytest.approx(want.summary.alid, abs=1e-9)
    r = runner.invoke(app, ["linkage", str(tmp_path / "e.csv"), "--no-verdict", "--prior", "0.5"])
    assert r.exit_code != 0 and "need --dev" in r.output
    r = runner.invoke(app, base[:-1] + ["--prior", "0.5"])
    assert r.exit_code == 0 and "LID sensitivity" in r.output and "Confident misidentification" in r.output


# --- item 6: SBLS sensitivity (omega and weight sweeps, the ranking under each) -----------------------------

from vpeval.metrics.sbls_sensitivity import sbls_sweep  # noqa: E402


def _sbls_result(seed, strength):
    from vpeval.metrics.attributes import soft_biometric_leakage

    rng = np.random.default_rng(seed)
    sex = rng.choice(["f", "m"], 200)
    age = rng.choice(["young", "old"], 200)
    s = np.where(sex == "f", strength, -strength) + rng.normal(0, 1, 200)
    scores = np.stack([1 / (1 + np.exp(-s)), 1 - 1 / (1 + np.exp(-s))], axis=1)
    return soft_biometric_leakage({"sex": sex}, {"sex": scores}, classes={"sex": ["f", "m"]}, subgroups=age)


def test_sbls_sweep_reproduces_the_measured_sbls_and_ranks():
    res = {"weak": _sbls_result(0, 0.3), "strong": _sbls_result(1, 2.0), "mid": _sbls_result(2, 1.0)}
    sw = sbls_sweep(res)
    ref = next(r for r in sw["rows"] if r["sweep"] == "omega" and r["omega"] == 0.7)
    for name, r in res.items():
        assert ref["sbls"][name] == pytest.approx(r.sbls, abs=1e-12)  # the reference setting is the measured one
    assert sw["reference"]["ranking"] == ["weak", "mid", "strong"] and not ref["ranking_changed"]
    # by hand: SBLS at omega = 1, weights (0.2, 0.2, 0.6)
    for name, r in res.items():
        row = next(x for x in sw["rows"] if x["sweep"] == "omega" and x["omega"] == 1.0)
        want = 0.4 * r.p_attr + 0.4 * r.p_assoc + 0.2 * (1 - max(r.subgroup_leakage.values()))
        assert row["sbls"][name] == pytest.approx(want, abs=1e-12)
    # the input order does not matter
    sw2 = sbls_sweep(dict(reversed(list(res.items()))))
    assert [r["ranking"] for r in sw2["rows"]] == [r["ranking"] for r in sw["rows"]]
    assert len(sw["rows"]) == 5 + 5


def test_sbls_sensitivity_section_names_changed_rankings():
    from vpeval.metrics.attributes import SBLSResult
    from vpeval.report.beyond import sbls_sensitivity_section

    a = SBLSResult({}, {"f": 0.5, "m": 0.5}, "sex", 0.5, 0.5, 0.0, 0.0, 0.4, 0.4, 0.2, 0.7)
    b = SBLSResult({}, {"f": 0.0, "m": 0.3}, "sex", 0.5, 0.5, 0.0, 0.0, 0.4, 0.4, 0.2, 0.7)
    sec = sbls_sensitivity_section({"A": a, "B": b})
    table = next(bl for bl in sec.blocks if hasattr(bl, "rows"))
    # P_subgroup: A 1 - omega / 2, B 0.7 at every omega: A first below omega = 0.6
    assert [r[-2] for r in table.rows if r[0] == "omega"] == ["A > B", "A > B", "A > B", "B > A", "B > A"]
    assert "changes under" in sec.blocks[-1].text


def test_demo_shows_the_sbls_sensitivity(demo_run):
    out, _ = demo_run
    doc = json.loads((out / "report.json").read_text())
    sec = next(s for s in doc["sections"] if s["id"] == "sbls-sensitivity")
    rows = sec["data"]["rows"]
    assert [r["sweep"] for r in rows] == ["omega"] * 5 + ["weights"] * 5
    systems = sec["data"]["systems"]
    assert len(systems) >= 2 and all(sorted(r["ranking"]) == sorted(systems) for r in rows)
    ref = next(r for r in rows if r["sweep"] == "omega" and r["omega"] == 0.7)
    assert not ref["ranking_changed"]


def test_disclosure_single_input_accepts_a_name(tmp_path):
    a = student_t_scores(3.0, 1.0, 100, 100, seed=2)
    p = _write(tmp_path, a.tar, a.non)
    r1 = runner.invoke(app, ["disclosure", f"A={p}", "--json", "--estimators", "pav_laplace"])
    r2 = runner.invoke(app, ["disclosure", str(p), "--json", "--estimators", "pav_laplace"])
    assert r1.exit_code == 0 and json.loads(r1.stdout)["disclosure"] == json.loads(r2.stdout)["disclosure"]
