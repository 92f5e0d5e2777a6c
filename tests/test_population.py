"""Linkage against a population of a given size (vpeval.metrics.linkage.population)."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from vpeval.errors import InvalidScoresError, VpevalError
from vpeval.metrics.identification import closed_set_linkability, identification_rates
from vpeval.metrics.linkage import lid
from vpeval.metrics.linkage.population import default_population_sizes, population_curves, win_probability
from vpeval.metrics.linkage.population_rows import lid_of_sets


def _win_brute(row, t, m):
    """P(true column t outscores m others drawn without replacement), ties shared: every subset listed."""
    others = [j for j in range(len(row)) if j != t]
    total, count = 0.0, 0
    for sub in itertools.combinations(others, m):
        above = sum(row[j] > row[t] for j in sub)
        tied = sum(row[j] == row[t] for j in sub)
        total += 0.0 if above else 1.0 / (tied + 1)
        count += 1
    return total / count


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=2, max_size=7), st.data())
def test_win_probability_equals_every_subset_listed(row, data):
    t = data.draw(st.integers(0, len(row) - 1))
    m = data.draw(st.integers(0, len(row) - 1))
    a = sum(v > row[t] for v in row)
    tied = sum(v == row[t] for v in row) - 1
    assert win_probability([a], [tied], len(row), m)[0] == pytest.approx(_win_brute(row, t, m), abs=1e-12)


def test_hand_case():
    # N = 4, true speaker second of four (one above, none tied): m = 1 wins when the one drawn is not the one
    # above (2 of 3), m = 2 when neither drawn is (1 of 3), m = 3 never
    assert win_probability([1], [0], 4, 1)[0] == pytest.approx(2 / 3)
    assert win_probability([1], [0], 4, 2)[0] == pytest.approx(1 / 3)
    assert win_probability([1], [0], 4, 3)[0] == 0.0
    # tied with one, nobody above, everyone drawn: a coin toss
    assert win_probability([0], [1], 4, 3)[0] == pytest.approx(0.5)


def _matrix(seed=1, n_probe=120, n_spk=60, sig=2.0):
    rng = np.random.default_rng(seed)
    ti = rng.integers(0, n_spk, n_probe)
    x = rng.normal(-sig ** 2 / 2, sig, (n_probe, n_spk))
    x[np.arange(n_probe), ti] = rng.normal(sig ** 2 / 2, sig, n_probe)
    return x, ti


def test_measured_rank1_is_closed_set_linkability_and_lid_at_n_is_the_lid():
    x, ti = _matrix()
    N = x.shape[1]
    r = population_curves(x, ti, n_boot=0, check=False)
    gamma = identification_rates(x, ti).gamma
    link = closed_set_linkability(gamma).linkability
    assert np.allclose(r.rank1, link[r.sizes - 1], atol=1e-12)
    own = lid(x, ti)  # every set of others is all of them at N' = N
    assert r.sizes[-1] == N and r.measured.all()
    assert r.alid_bits[-1] == pytest.approx(own.mean(), abs=1e-9)
    assert r.lid_max_bits[-1] == pytest.approx(own.max(), abs=1e-9)
    assert np.allclose(r.chance, 1.0 / r.sizes)


def test_nested_sets_are_uniform_sets_of_others():
    # averaged over every permutation of the sorted impostors' positions, the measured LID is the mean over every
    # set of N' - 1 others
    rng = np.random.default_rng(3)
    N = 5
    x = rng.normal(size=(4, N))
    ti = np.array([0, 2, 4, 2])
    sizes = np.array([2, 3, 4])
    perms = [np.array(p) for p in itertools.permutations(range(N - 1))]
    # one shift per row, the same for each of its permutations: the shifted permutations are all of them again
    shifts = np.repeat(np.arange(4)[:, None] % (N - 1), len(perms), axis=1)
    got = lid_of_sets(x, ti, np.ones(4), perms, shifts, sizes.tolist())
    for i in range(4):
        others = [j for j in range(N) if j != ti[i]]
        for j, s in enumerate(sizes):
            vals = [math.log2(s) + (x[i, ti[i]] - np.logaddexp.reduce(x[i, [ti[i], *sub]])) / math.log(2)
                    for sub in itertools.combinations(others, s - 1)]
            assert got[i, j] == pytest.approx(np.mean(vals), abs=1e-12)


def _close(a, b):
    """Two to_dict() results equal up to rounding (sums taken in another order)."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_close(u, v) for u, v in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return a == b or abs(a - b) <= 1e-9 * max(1.0, abs(a))
    return a == b


def test_renaming_the_speakers_changes_nothing_even_with_tied_scores():
    # integer scores tie across rows; the speakers' names order the columns: permuting the columns (and the
    # probes) must give the same curves and combinations, up to rounding
    from vpeval.metrics.linkage.population import row_zscores

    rng = np.random.default_rng(5)
    n_spk, per = 30, 6
    ti = np.repeat(np.arange(n_spk), per)
    x = rng.integers(0, 6, (ti.size, 45)).astype(float)
    x[np.arange(ti.size), ti] += 3
    cols, rows = rng.permutation(45), rng.permutation(ti.size)
    inv = np.empty_like(cols)
    inv[cols] = np.arange(45)
    y, tj = x[rows][:, cols], inv[ti[rows]]
    a = population_curves(row_zscores(x), ti, [2, 10, 45, 1000], speaker=ti, n_boot=50, budget_bits=3.0).to_dict()
    b = population_curves(row_zscores(y), tj, [2, 10, 45, 1000], speaker=tj, n_boot=50, budget_bits=3.0).to_dict()
    assert _close(a, b)
    a = combined_probes(x, ti, [1, 2, 3], max_subsets=5, n_boot=50).to_dict()
    b = combined_probes(y, tj, [1, 2, 3], max_subsets=5, n_boot=50).to_dict()
    assert _close(a, b)


def test_other_sizes_leave_every_size_as_it_was():
    x, ti = _matrix()
    a = population_curves(x, ti, [2, 10, 60, 1000], speaker=ti, n_boot=50)
    b = population_curves(x, ti, [2, 10, 60, 1000, 10 ** 6, 10 ** 9], speaker=ti, n_boot=50)
    for key in ("rank1", "rank1_low", "rank1_high", "alid_bits", "alid_low", "alid_high"):
        assert np.array_equal(getattr(a, key), getattr(b, key)[:4]), key
    assert a.check == b.check


def test_order_of_probes_and_of_models_does_not_matter():
    x, ti = _matrix(n_probe=80, n_spk=50)
    spk = ti.copy()
    a = population_curves(x, ti, sizes=[2, 10, 50, 500], speaker=spk, n_boot=50, seed=4).to_dict()
    rng = np.random.default_rng(9)
    rows, cols = rng.permutation(x.shape[0]), rng.permutation(x.shape[1])
    inv = np.empty_like(cols)
    inv[cols] = np.arange(cols.size)
    b = population_curves(x[rows][:, cols], inv[ti[rows]], sizes=[2, 10, 50, 500], speaker=spk[rows], n_boot=50,
                          seed=4).to_dict()
    assert a == b


def test_extrapolation_against_a_population_known_in_closed_form():
    # a calibrated Gaussian attacker: impostor LLRs N(-s^2/2, s^2), true LLRs N(s^2/2, s^2); 400 enrolled, the
    # truth at N' = 1e3 and 1e4 given each probe's true LLR: rank-1 = mean F(g)^(N'-1) (closed form), ALID by
    # drawing the impostors outright
    sig = 2.0
    x, ti = _matrix(seed=1, n_probe=600, n_spk=400, sig=sig)
    g = x[np.arange(x.shape[0]), ti]
    r = population_curves(x, ti, sizes=[1000, 10000], speaker=ti, n_boot=100, seed=0)
    assert not r.measured.any()
    rng = np.random.default_rng(5)
    for j, size in enumerate([1000, 10000]):
        truth = (norm.cdf(g, -sig ** 2 / 2, sig) ** (size - 1)).mean()
        assert r.rank1[j] == pytest.approx(truth, abs=0.01)
        assert r.rank1_low[j] <= truth <= r.rank1_high[j]
        S = np.array([np.exp(rng.normal(-sig ** 2 / 2, sig, size - 1)).sum() for _ in range(100)])
        alid = ((math.log(size) + g[:, None] - np.logaddexp(g[:, None], np.log(S)[None, :])).mean(axis=1)
                / math.log(2)).mean()
        assert r.alid_bits[j] == pytest.approx(alid, abs=0.08)
        assert r.alid_low[j] <= alid <= r.alid_high[j]
    # the check: fitted on a quarter of the speakers, the model meets the measured curves
    r2 = population_curves(x, ti, n_boot=0, seed=0)
    assert r2.check["n_fit"] == 100
    assert r2.check["max_abs_rank1"] < 0.02 and r2.check["max_abs_alid_bits"] < 0.05


def test_budget_reading_and_intervals():
    x, ti = _matrix()
    r = population_curves(x, ti, sizes=[2, 5, 10, 60], budget_bits=3.0, n_boot=100)
    # LID is at most log2 N': sizes up to 8 cannot exceed 3 bits
    assert r.within_budget_up_to is not None and r.within_budget_up_to >= 5
    k = list(r.sizes).index(r.within_budget_up_to)
    assert (r.lid_max_high[:k + 1] <= 3.0).all()
    if k + 1 < r.sizes.size:
        assert r.lid_max_high[k + 1] > 3.0
    for lo, est, hi in ((r.rank1_low, r.rank1, r.rank1_high), (r.alid_low, r.alid_bits, r.alid_high)):
        assert (lo <= est + 1e-12).all() and (est <= hi + 1e-12).all()
    assert r.unit == "probe"
    assert population_curves(x, ti, sizes=[2, 60], speaker=ti, n_boot=10).unit == "speaker"


def test_default_sizes():
    assert default_population_sizes(60).tolist() == [2, 5, 10, 20, 50, 60]
    assert default_population_sizes(10, [1000]).tolist() == [2, 5, 10, 1000]


@pytest.mark.parametrize("bad, match", [
    (dict(llr_matrix=np.ones((3,))), "2-D"),
    (dict(llr_matrix=np.ones((3, 1))), "at least 2"),
    (dict(llr_matrix=np.full((3, 4), np.nan)), "finite"),
    (dict(true_index=np.array([0, 1, 9])), "0..3"),
    (dict(sizes=[1, 3]), "lie in 2..1e"),
    (dict(sizes=[3, 10 ** 13]), "lie in 2..1e"),
    (dict(speaker=[1, 2]), "one label per probe"),
])
def test_bad_input(bad, match):
    args = dict(llr_matrix=np.random.default_rng(0).normal(size=(3, 4)), true_index=np.array([0, 1, 2]))
    args.update(bad)
    with pytest.raises(InvalidScoresError, match=match):
        population_curves(args.pop("llr_matrix"), args.pop("true_index"), **args)


def test_too_few_impostors_to_extrapolate():
    x, ti = _matrix(n_probe=5, n_spk=6)
    with pytest.raises(VpevalError, match="too few"):
        population_curves(x, ti, sizes=[2, 1000], n_boot=0)
    assert population_curves(x, ti, n_boot=0).model == {}  # measured sizes need no model


# ------------------------------------------------------------------------------------------ repeated recordings

from vpeval.metrics.linkage.combine import COMBINE_RULES, combined_probes  # noqa: E402


def _speakers(seed=1, n_spk=12, per=4, N=15, sig=1.5):
    rng = np.random.default_rng(seed)
    ti = np.repeat(np.arange(n_spk), per)
    x = rng.normal(-sig ** 2 / 2, sig, (ti.size, N))
    x[np.arange(ti.size), ti] = rng.normal(sig ** 2 / 2, sig, ti.size)
    return x, ti


def test_one_probe_is_the_lid_averaged_per_speaker():
    x, ti = _speakers()
    r = combined_probes(x, ti, [1], n_boot=0)
    own = lid(x, ti)
    per = np.array([own[ti == s].mean() for s in np.unique(ti)])
    for rule in COMBINE_RULES:  # one probe: every rule is the probe itself
        assert r.rows[rule]["alid_bits"][0] == pytest.approx(per.mean(), abs=1e-9)
        assert r.rows[rule]["speaker_lid_max_bits"][0] == pytest.approx(per.max(), abs=1e-9)


def test_combined_sum_against_every_subset_by_hand():
    x, ti = _speakers(n_spk=4, per=4, N=6)
    N = x.shape[1]
    r = combined_probes(x, ti, [2, 3], rules=["sum", "max"], n_boot=0)
    for j, k in enumerate([2, 3]):
        for rule, f in (("sum", np.sum), ("max", np.max)):
            per_lid, per_r1 = [], []
            for s in range(4):
                rows = x[ti == s]
                lids, wins = [], []
                for sub in itertools.combinations(range(4), k):
                    c = f(rows[list(sub)], axis=0)
                    lids.append(math.log2(N) + (c[s] - np.logaddexp.reduce(c)) / math.log(2))
                    wins.append(float(c[s] > np.delete(c, s).max()))
                per_lid.append(np.mean(lids))
                per_r1.append(np.mean(wins))
            assert r.rows[rule]["alid_bits"][j] == pytest.approx(np.mean(per_lid), abs=1e-9)
            assert r.rows[rule]["rank1"][j] == pytest.approx(np.mean(per_r1), abs=1e-12)
    assert r.exact.all()


def test_combined_probes_do_not_depend_on_the_row_order_and_sum_accumulates_evidence():
    x, ti = _speakers(n_spk=20, per=8, N=25)
    a = combined_probes(x, ti, [1, 2, 4, 8], max_subsets=10, n_boot=50, budget_bits=3.0, delta=0.05)
    perm = np.random.default_rng(2).permutation(ti.size)
    b = combined_probes(x[perm], ti[perm], [1, 2, 4, 8], max_subsets=10, n_boot=50, budget_bits=3.0, delta=0.05)
    assert a.to_dict() == b.to_dict()
    assert not a.exact[1] and a.exact[-1]  # C(8, 2) = 28 > 10 sets sampled; C(8, 8) = 1 listed
    alid = a.rows["sum"]["alid_bits"]
    assert (np.diff(alid) > 0).all()  # independent evidence adds up
    assert alid[-1] <= math.log2(25)
    d = a.rows["sum"]
    assert (d["alid_low"] <= d["alid_bits"]).all() and (d["alid_bits"] <= d["alid_high"]).all()
    assert not np.isnan(d["eps_bits"]).any() and (d["eps_bits"] >= 0).all()
    # one probe: the profile of the probes' true entries against their other entries
    from vpeval.metrics.profile import privacy_profile_bits

    mask = np.zeros(x.shape, bool)
    mask[np.arange(ti.size), ti] = True
    assert d["eps_bits"][0] == float(privacy_profile_bits(x[mask], x[~mask], delta=0.05))


@pytest.mark.parametrize("kwargs, match", [
    (dict(ks=[0]), "from 1 to 4"),
    (dict(ks=[5]), "from 1 to 4"),
    (dict(ks=[1], rules=["median"]), "some of sum"),
    (dict(ks=[1], delta=0.0), "delta and level"),
])
def test_combined_bad_input(kwargs, match):
    x, ti = _speakers()
    with pytest.raises(InvalidScoresError, match=match):
        combined_probes(x, ti, **kwargs)


def test_a_profile_too_large_is_not_computed_and_says_so():
    x, ti = _speakers()
    r = combined_probes(x, ti, [1, 2], max_profile_trials=12 * 4 * 14, n_boot=0)  # k = 1: 48 rows x 14 others
    assert not math.isnan(r.rows["sum"]["eps_bits"][0]) and math.isnan(r.rows["sum"]["eps_bits"][1])
    assert math.isnan(r.rows["mean"]["eps_bits"][0])  # not a profiled rule
    assert len(r.notes) == 1 and r.notes[0].startswith("k = 2: no privacy profile, 1,008 combined")
    assert r.to_dict()["rows"]["sum"]["eps_bits"][1] is None


def test_cli_population_and_combine(tmp_path):
    import json

    from typer.testing import CliRunner

    from vpeval.cli.main import app

    rng = np.random.default_rng(2)
    spk = [f"s{i:02d}" for i in range(40)]
    rows = ["enroll_spk,trial_spk,trial_id,score"]
    for i, s in enumerate(spk[:20]):
        for j in range(3):
            v = rng.normal(0, 1, 40)
            v[i] += 2.0
            rows += [f"{e},{s},{s}_{j},{v[k]:.5f}" for k, e in enumerate(spk)]
    table = tmp_path / "lt.csv"
    table.write_text("\n".join(rows) + "\n")
    r = CliRunner().invoke(app, ["linkage", str(table), "--no-verdict", "--population", "300,3_000", "--combine",
                                 "3", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    pop = out["population"]
    assert pop["sizes"] == [2, 5, 10, 20, 40, 300, 3000]
    assert pop["measured"] == [True] * 5 + [False] * 2 and pop["unit"] == "speaker"
    assert pop["budget_bits"] == pytest.approx(math.log2(10)) and pop["within_budget_up_to"] >= 5
    comb = out["combined_probes"]
    assert comb["ks"] == [1, 2, 3] and comb["n_speakers"] == [20, 20, 20] and comb["delta"] == 1 / 40
    text = CliRunner().invoke(app, ["linkage", str(table), "--no-verdict", "--population", "300",
                                    "--combine", "2"]).output
    text = " ".join(text.split())
    assert "300 *" in text and "extrapolated by a model" in text
    assert "Check: fitted on 10 of the 40 enrolled speakers, the model misses" in text
    assert "Repeated recordings" in text and "The largest speaker's LID" in text
    bad = CliRunner().invoke(app, ["linkage", str(table), "--no-verdict", "--population", "1"])
    assert bad.exit_code == 2
    assert "--population: expected comma-separated integers from 2 to 1,000,000,000,000" in bad.output
    bad = CliRunner().invoke(app, ["linkage", str(table), "--no-verdict", "--population", str(2 ** 63)])
    assert bad.exit_code == 2 and "from 2 to 1,000,000,000,000" in bad.output
    bad = CliRunner().invoke(app, ["linkage", str(table), "--no-verdict", "--combine", "4"])
    assert bad.exit_code == 2 and "no speaker of" in bad.output and "more than 3 probes" in bad.output
    # sizes far beyond the table fit 80 columns: no cell cut short
    wide = CliRunner().invoke(app, ["linkage", str(table), "--no-verdict", "--population", "1000000000000"],
                              env={"COLUMNS": "80"}).output
    assert "1e12 *" in wide and "…" not in wide


def test_the_check_flags_impostors_spread_differently_per_probe():
    # each probe's impostor LLRs spread by its own factor (ln c ~ N(0, 0.3^2)): the pooled model misses the
    # measured curves; z-normalising the rows (as the LID chain does) puts them on one scale again
    from vpeval.errors import ExtrapolationWarning
    from vpeval.metrics.linkage import znorm_rows

    rng = np.random.default_rng(50)
    n, N = 300, 400
    ti = rng.permutation(N)[:n]
    x = -2.0 + 2.0 * np.exp(rng.normal(0.0, 0.3, n))[:, None] * rng.standard_normal((n, N))
    x[np.arange(n), ti] = rng.normal(2.0, 2.0, n)
    with pytest.warns(ExtrapolationWarning, match="not to be relied on"):
        r = population_curves(x, ti, [2000], n_boot=0)
    assert not r.check["reliable"] and r.check["max_abs_rank1"] > 0.1
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", ExtrapolationWarning)
        r = population_curves(2.0 * znorm_rows(x), ti, [2000], n_boot=0)
    assert r.check["reliable"]


def test_slopes_per_probe_give_the_lid_of_the_scaled_rows():
    # LLR = slope * score (+ a row's constant): the measured LID at N is the LID of the scaled matrix, for any
    # slope sign (a fold fitted on scores without identity may get a slope of 0 or below)
    x, ti = _matrix(n_probe=60, n_spk=45)
    w = np.where(np.arange(60) % 3 == 0, -0.5, np.where(np.arange(60) % 3 == 1, 0.0, 1.7))
    r = population_curves(x, ti, [2, 45, 500], slope=w, n_boot=0)
    own = lid(w[:, None] * x + 3.0, ti)
    assert r.alid_bits[1] == pytest.approx(own.mean(), abs=1e-9)
    assert np.isfinite(r.alid_bits).all()
    with pytest.raises(InvalidScoresError, match="slope"):
        population_curves(x, ti, slope=np.ones(3))


def test_an_audit_reads_its_strongest_search_against_the_population(tmp_path):
    import json
    from pathlib import Path

    import vpeval
    from vpeval.analysis.population import PopulationReading
    from vpeval.report.audit import render_audit
    from vpeval.report.document import Paragraph
    from vpeval.report.writer import report_json, resolve_refs

    npz = Path(__file__).resolve().parents[1] / "examples" / "librispeech-mini" / "embeddings_mfcc.npz"
    if not npz.exists():
        pytest.skip("bundled example missing")
    es = vpeval.read_embeddings(npz)
    res = vpeval.audit({"A": {"mfcc": es}}, types=("oo", "oa", "aa"), backends=("cosine", "lda"), n_boot=20,
                       n_perm=19, verdict_perm=99, group_by=None)
    r = res.population["A"]
    assert isinstance(r, PopulationReading) and set(r.curves) == {"oo", "oa"}
    alids = {a: res.systems["A"].linkage[a]["oa"].lid.summary.alid for a in res.systems["A"].linkage
             if "oa" in res.systems["A"].linkage[a]}
    assert r.attacker == max(sorted(alids), key=lambda a: alids[a])  # the strongest search, ties by name
    oa = r.curves["oa"]
    assert oa.sizes[-1] == 1_000_000 and not oa.measured[-1] and oa.measured[oa.sizes <= 111].all()
    assert r.combined is not None and r.combined.ks.tolist() == [1, 2, 3]
    report = render_audit(res)
    doc = resolve_refs(json.loads(report_json(report, "2026-01-01T00:00:00+00:00")))
    sec = next(s for s in doc["sections"] if s["id"] == "population")
    assert sec["data"]["attacker"] == r.attacker and sec["data"]["curves"]["oa"]["sizes"][-1] == 1_000_000
    assert sec["data"]["sentence"] == r.sentence() and r.attacker in r.sentence()
    verdict = next(s for s in report.sections if s.id == "verdict")
    # under the verdict, folded with its numbers
    assert any(isinstance(b, Paragraph) and "In a larger population, and over several recordings: searching "
               "original enrollments with anonymized probes" in b.text and b.summary for b in verdict.blocks)


def test_single_probe_alid_over_the_same_speakers_as_each_k():
    # speakers with fewer probes drop out at larger k: the baseline of each k is over its own speakers
    rng = np.random.default_rng(8)
    ti = np.repeat(np.arange(12), [1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4])
    x = rng.normal(-1.0, 1.5, (ti.size, 15))
    x[np.arange(ti.size), ti] = rng.normal(1.0, 1.5, ti.size)
    r = combined_probes(x, ti, [1, 2, 3], n_boot=0)
    own = lid(x, ti)
    per = np.array([own[ti == s].mean() for s in range(12)])
    counts = np.bincount(ti)
    for j, k in enumerate([1, 2, 3]):
        assert r.alid_one_bits[j] == pytest.approx(per[counts >= k].mean(), abs=1e-9)
    assert r.alid_one_bits[0] == pytest.approx(r.rows["sum"]["alid_bits"][0], abs=1e-9)


# ------------------------------------------------------------------------------------------ found by a hostile run


def test_lid_of_sets_far_below_the_rows_largest_llr_stays_finite():
    # LLRs spread over thousands of nats: a drawn set whose terms all underflow against the row's largest LLR is
    # summed again against its own largest; LID never exceeds log2 N'
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 100)) * 200
    ti = np.arange(50)
    perms = [rng.permutation(99) for _ in range(3)]
    shifts = rng.integers(0, 99, (50, 3))
    sizes = [2, 10, 100]
    got = lid_of_sets(x, ti, np.ones(50), perms, shifts, sizes)
    assert np.isfinite(got).all() and (got <= np.log2(sizes) + 1e-9).all()
    imp = np.sort(np.where(np.arange(100)[None, :] == ti[:, None], np.inf, x), axis=1)[:, :-1]
    for i in range(50):  # the obvious oracle: logaddexp over each drawn set
        for j, s in enumerate(sizes):
            v = [math.log2(s) + (x[i, ti[i]] - np.logaddexp.reduce(np.r_[x[i, ti[i]],
                 imp[i, (p + shifts[i, k])[:s - 1] % 99]])) / math.log(2) for k, p in enumerate(perms)]
            assert got[i, j] == pytest.approx(np.mean(v), rel=1e-9, abs=1e-9)
    c = population_curves(x, ti, [2, 10, 100], n_boot=0, check=False)
    assert np.isfinite(c.alid_bits).all() and (c.lid_max_bits <= np.log2([2, 10, 100]) + 1e-9).all()


@pytest.mark.parametrize("value", [0.1, 0.7, 1 / 3, 5.0])
def test_a_constant_row_is_refused_whatever_rounding_does_to_its_mean(value):
    from vpeval.metrics.linkage.population import row_zscores

    x = np.random.default_rng(1).normal(size=(20, 30))
    x[7] = value  # a mean of 0.1s is not exactly 0.1: its standard deviation rounds above 0
    with pytest.raises(InvalidScoresError, match="row 7 has every score equal"):
        population_curves(x, np.arange(20), znorm=True, n_boot=0)
    with pytest.raises(InvalidScoresError, match="row 7 is constant"):
        row_zscores(x)


def test_the_lowest_bad_row_is_named_and_overflowing_slopes_are_refused():
    x = np.random.default_rng(2).normal(size=(600, 40))
    x[555, 3], x[123, 1] = np.nan, -np.inf
    with pytest.raises(InvalidScoresError, match="probe row 123 has a NaN or infinite"):
        population_curves(x, np.arange(600) % 40, n_boot=0)
    with pytest.raises(InvalidScoresError, match="probe row 0 has a score that times its slope"):
        population_curves(x[:100], np.arange(100) % 40, slope=1e308, n_boot=0)


def test_identical_rows_of_different_speakers_in_any_order():
    # rows alike in every value but of different speakers: the canonical order also sorts by speaker name, so the
    # bootstrap's units come out the same whatever the input order
    rng = np.random.default_rng(3)
    x = np.r_[np.tile(rng.normal(size=30), (40, 1)), rng.normal(size=(20, 30))]
    ti = np.r_[np.full(40, 4), rng.integers(0, 30, 20)]
    spk = np.r_[np.repeat(np.arange(10), 4), np.arange(10, 30)]
    a = population_curves(x, ti, [2, 10, 30], speaker=spk, n_boot=50, check=False).to_dict()
    for seed in range(3):
        p = np.random.default_rng(seed).permutation(60)
        assert population_curves(x[p], ti[p], [2, 10, 30], speaker=spk[p], n_boot=50, check=False).to_dict() == a


@pytest.mark.parametrize("kw, match", [
    (dict(n_subsets=0), "n_subsets"), (dict(n_boot=-3), "n_boot"), (dict(max_pool=0), "max_pool"),
    (dict(seed=-1), "seed"), (dict(sizes=[np.inf]), "whole numbers"), (dict(sizes=[1000.7]), "whole numbers"),
    (dict(sizes=[[2, 3]]), "list of whole numbers"), (dict(sizes=[]), "list of whole numbers"),
])
def test_bad_options(kw, match):
    x = np.random.default_rng(4).normal(size=(10, 12))
    with pytest.raises(InvalidScoresError, match=match):
        population_curves(x, np.arange(10), **kw)


def test_the_check_reads_rank1_as_the_curves_do():
    x, ti = _matrix(n_probe=200, n_spk=80)
    c = population_curves(x, ti, [50, 80], n_boot=0)
    assert c.check["rank1_measured"][-1] == c.rank1[-1]  # N' = N in both: the same bits


def test_the_figure_says_what_its_floor_means():
    """A rank-1 rate of 0 (the own speaker never first: a pseudo-speaker system at N' = N) sits on the figure's
    floor, which a new user read as a plotting artefact: the floor is then labelled; otherwise not."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    from vpeval.report.population import _draw

    def curve(rank1):
        n = len(rank1)
        return {"sizes": [2, 10, 111, 1000][:n], "measured": [True, True, True, False][:n], "rank1": rank1,
                "rank1_low": rank1, "rank1_high": rank1, "alid_bits": [0.0] * n, "alid_low": [0.0] * n,
                "alid_high": [0.0] * n, "n_speakers": 111}

    for rank1, labelled in (([0.5, 0.1, 0.0, 0.0], True), ([0.5, 0.1, 0.02, 0.001], False)):
        fig = plt.figure()
        try:
            _draw(fig, {"oo": curve([0.9, 0.8, 0.7, 0.5]), "oa": curve(rank1)})
            texts = [t.get_text() for t in fig.axes[0].texts]
            assert any("rate 0" in t for t in texts) == labelled, texts
        finally:
            plt.close(fig)
