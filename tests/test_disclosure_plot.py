"""LLRCurvesDisplay: arrays from from_scores, drawing on a given Axes, no files written."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpeval.errors import VpevalError
from vpeval.plots.llr_curves import LLRCurvesDisplay
from vpeval.simulate import counterexample


def test_from_scores_curves_and_histograms():
    sim = counterexample(300, seed=2)
    d = LLRCurvesDisplay.from_scores(sim.tar, sim.non, oracle=sim.model.llr, n_points=50, bins=20)
    assert list(d.curves) == ["pav", "pav_laplace", "logistic", "gaussian", "student_t", "oracle"]
    assert d.grid.size == 50 and d.grid[0] < min(sim.tar.min(), sim.non.min())
    np.testing.assert_allclose(d.curves["oracle"], -np.log(2) + 3 / 8 * d.grid**2, rtol=1e-12)
    widths = np.diff(d.bin_edges)
    assert np.sum(d.tar_density * widths) == pytest.approx(1.0)
    assert np.sum(d.non_density * widths) == pytest.approx(1.0)
    assert d.errors == {}


def test_failed_estimator_listed_not_drawn_and_plot_on_given_axes(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    monkeypatch.chdir(tmp_path)
    d = LLRCurvesDisplay.from_scores([1.0, 2.0], [-2.0, -1.0], label="separable")
    assert "logistic" in d.errors and "logistic" not in d.curves
    assert np.isinf(d.curves["pav"]).any()
    fig, ax = plt.subplots()
    out = d.plot(ax)
    assert out is ax
    labels = [line.get_label() for line in ax.get_lines()]
    assert {"pav", "pav_laplace", "gaussian", "student_t"} <= set(labels)
    assert ax.get_legend().get_title().get_text() == "not fitted: logistic"
    assert all(np.all(np.isfinite(line.get_ydata())) for line in ax.get_lines())  # inf clipped to the edge
    plt.close(fig)
    assert list(tmp_path.iterdir()) == []


def test_rejects_non_finite_scores():
    with pytest.raises(VpevalError):
        LLRCurvesDisplay.from_scores([1.0, np.inf], [0.0, 1.0])


def test_disclosure_section_without_llrs_gives_the_same_section():
    """keep_llrs=False (what `vpeval report` asks of its workers) empties only the per-trial LLR arrays: the
    section's data and its figure's PNG are the same."""
    from vpeval.report.disclosure import disclosure_section
    from vpeval.report.writer import png_bytes

    rng = np.random.default_rng(4)
    tar, non = rng.normal(1.5, 1.0, 300), rng.normal(0.0, 1.2, 400)
    full, res_full = disclosure_section(tar, non)
    lean, res_lean = disclosure_section(tar, non, keep_llrs=False)
    assert lean.data == full.data
    assert all(r.tar_llr.size == 0 and r.non_llr.size == 0 for r in res_lean.results.values())
    assert all(r.tar_llr.size == tar.size for r in res_full.results.values())
    fig_f, fig_l = (next(b for b in s.blocks if getattr(b, "name", "") == "llr_curves") for s in (full, lean))
    assert png_bytes(fig_l.draw, fig_l.size) == png_bytes(fig_f.draw, fig_f.size)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from([-2.0, -0.5, -0.0, 0.0, 0.25, 1.0, 3.5]) | st.floats(-4, 4), min_size=3, max_size=40),
       st.lists(st.sampled_from([-3.0, -0.0, 0.0, 0.5, 1.0]) | st.floats(-4, 4), min_size=3, max_size=40))
def test_bin_edges_from_the_extremes_are_those_of_the_pooled_scores(tar, non):
    # from_disclosure takes the histogram's edges from min and max alone, without concatenating the classes
    pooled = np.histogram_bin_edges(np.concatenate([tar, non]), bins=60)
    lo, hi = min(min(tar), min(non)), max(max(tar), max(non))
    np.testing.assert_array_equal(np.histogram_bin_edges(np.array([lo, hi]), bins=60), pooled)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(20, 120), st.integers(20, 160))
def test_disclosure_parts_of_the_sorted_classes_give_the_input_order_section(seed, n_tar, n_non):
    """What `vpeval report` does: the disclosure of the sorted classes on a worker, then each eps_max's trial
    indexed in the input order (input_order) gives the section of the trials as given: the same table (the
    parametric fits may differ in their last bits between two orders of the same scores) and the same plot."""
    from vpeval.report.disclosure import disclosure_parts, disclosure_section, input_order
    from vpeval.report.writer import png_bytes

    rng = np.random.default_rng(seed)
    scores = np.round(rng.normal(size=n_tar + n_non), 1)  # ties, and zeros of both signs
    scores[rng.random(scores.size) < 0.05] = -0.0
    is_t = np.zeros(scores.size, bool)
    is_t[rng.choice(scores.size, n_tar, replace=False)] = True
    scores[is_t] += 1.0
    tar, non = scores[is_t], scores[~is_t]
    direct, res_d = disclosure_section(tar, non, keep_llrs=False)
    res_s, display = disclosure_parts(np.sort(tar), np.sort(non))
    via, res_v = disclosure_section(np.sort(tar), np.sort(non), result=input_order(res_s, scores, is_t),
                                    display=display)
    for name, r in res_d.results.items():
        v = res_v.results[name]
        assert (v.argmax_class, v.argmax_index) == (r.argmax_class, r.argmax_index), name
        assert np.signbit(v.argmax_score) == np.signbit(r.argmax_score) and v.argmax_score == r.argmax_score
        assert v.eps_max_nats == pytest.approx(r.eps_max_nats, rel=1e-9, abs=1e-12), name
        assert v.n_attaining == r.n_attaining, name
    fig_d, fig_v = (next(b for b in s.blocks if getattr(b, "name", "") == "llr_curves") for s in (direct, via))
    assert fig_v.size == fig_d.size
    (dd,), (dv,) = fig_d.draw.args, fig_v.draw.args  # the plots' numbers: the figure holds only these
    np.testing.assert_array_equal(dv.grid, dd.grid)
    np.testing.assert_array_equal(dv.bin_edges, dd.bin_edges)
    np.testing.assert_array_equal(dv.tar_density, dd.tar_density)
    np.testing.assert_array_equal(dv.non_density, dd.non_density)
    assert dv.curves.keys() == dd.curves.keys()
    for k in dd.curves:
        np.testing.assert_allclose(dv.curves[k], dd.curves[k], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("tar, non", [([1.0], [1.0 + 2.0**-52, 1.0]), ([5e-324, 0.0], [-5e-324]),
                                      ([1000.0], [1000.0000000000001, 1000.0])])
def test_scores_a_few_floats_apart_get_fewer_bins_not_an_error(tar, non):
    # a tester's report stopped with numpy's "Too many bins for data range" on these: the range holds too few
    # floats for 60 distinct edges, so the histogram gets fewer bins (halved until the edges are distinct)
    from vpeval.disclosure import worst_case_disclosure

    res = worst_case_disclosure(tar, non)
    d = LLRCurvesDisplay.from_disclosure(res, tar, non)
    assert 2 <= d.bin_edges.size <= 61 and (np.diff(d.bin_edges) > 0).all()
    assert d.bin_edges[0] == min(min(tar), min(non)) and d.bin_edges[-1] == max(max(tar), max(non))
    with pytest.raises(ValueError, match="Too many bins"):  # what numpy does with 60 bins here
        np.histogram_bin_edges(np.array([d.bin_edges[0], d.bin_edges[-1]]), bins=60)
