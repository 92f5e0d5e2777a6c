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
