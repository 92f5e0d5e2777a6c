"""The privacy-profile display (vpeval.plots.profile): infinite values are drawn at a level labelled as such."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from vpeval.errors import InvalidScoresError  # noqa: E402
from vpeval.plots.profile import ProfileDisplay  # noqa: E402

DELTA = np.array([1e-4, 1e-3, 1e-2, 0.1, 0.5])


def _labels(ax):
    ax.figure.canvas.draw()
    return [t.get_text() for t in ax.get_yticklabels()]


def test_infinite_values_sit_at_a_tick_labelled_infinity_above_the_finite_ones():
    inf = np.inf
    disp = ProfileDisplay(DELTA, np.array([inf, inf, inf, 2.0, 0.1]), np.zeros(5),
                          np.array([inf, inf, inf, inf, 1.7]), 3.32, 0.0075, "asr-tts")
    fig, ax = plt.subplots()
    try:
        disp.plot(ax, legend=False)
        top = disp.top_bits()
        labels = _labels(ax)
        assert labels[-1] == "\u221e" and ax.get_yticks()[-1] == pytest.approx(top)
        # no finite tick is drawn at or near the level of the infinite values (it would read as a number of bits)
        assert all(t <= 0.9 * top for t in ax.get_yticks()[:-1])
        line = ax.get_lines()[0]  # eps: the infinite points at the top
        np.testing.assert_allclose(line.get_ydata()[:3], top)
    finally:
        plt.close(fig)


def test_finite_profiles_have_plain_ticks():
    disp = ProfileDisplay(DELTA, np.array([1, 1, 1, 0.5, 0.1]), np.zeros(5), np.array([2, 2, 2, 1, 0.5]), 3.32)
    fig, ax = plt.subplots()
    try:
        disp.plot(ax)
        assert "\u221e" not in _labels(ax)
    finally:
        plt.close(fig)


def test_bad_grids_are_refused():
    with pytest.raises(InvalidScoresError, match="increasing"):
        ProfileDisplay(DELTA[::-1], np.zeros(5), np.zeros(5), np.zeros(5), 3.32)
    with pytest.raises(InvalidScoresError, match="one equal length"):
        ProfileDisplay(DELTA, np.zeros(4), np.zeros(5), np.zeros(5), 3.32)
