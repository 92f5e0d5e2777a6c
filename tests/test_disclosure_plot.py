"""LLRCurvesDisplay: arrays from from_scores, drawing on a given Axes, no files written."""

import numpy as np
import pytest

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
