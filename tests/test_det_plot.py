"""DET plots: ticks over the whole probit span drawn, and coinciding curves kept visible (issue 11, item 7)."""

import matplotlib

matplotlib.use("Agg", force=True)
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from scipy.stats import norm  # noqa: E402

from vpeval.io.trials import Trials  # noqa: E402
from vpeval.plots import DETDisplay  # noqa: E402
from vpeval.plots.displays import det_styles  # noqa: E402
from vpeval.report.verification import _draw_det  # noqa: E402


def _scores(seed, n_tar=300, n_non=3000, shift=2.0):
    rng = np.random.default_rng(seed)
    return rng.normal(shift, 1, n_tar), rng.normal(0, 1, n_non)


def test_det_ticks_cover_the_plotted_range():
    tar, non = _scores(0)
    fig, ax = plt.subplots()
    try:
        DETDisplay.from_scores(tar, non, label="x").plot(ax)
        lo, hi = ax.get_xlim()
        for ticks, lim in ((ax.get_xticks(), ax.get_xlim()), (ax.get_yticks(), ax.get_ylim())):
            ticks = np.sort(ticks)
            assert lim[0] <= ticks[0] and ticks[-1] <= lim[1]
            # the first and last ticks sit within one probit step of the edges, on both sides of 50 %
            assert ticks[0] - lim[0] < 0.5 and lim[1] - ticks[-1] < 0.5
            # no stretch of the axis wider than ~1.2 probit units without a tick
            assert np.max(np.diff(ticks)) < 1.2
        labels = [t.get_text() for t in ax.get_xticklabels()]
        for want in ("0.1", "1", "5", "20", "50" if "50" in labels else "40", "80", "95", "99", "99.9"):
            assert want in labels, labels
        # rates below 1/n_non (zero false alarms) are drawn on the edge, inside the axes
        for line in ax.lines:
            x, y = line.get_data()
            assert np.all(np.asarray(x) >= lo - 1e-9) and np.all(np.asarray(y) <= hi + 1e-9)
        # the span reaches the smallest non-zero rate (1/3000 ~ 0.033 % -> 0.01 % edge)
        assert lo <= norm.ppf(1 / 3000)
    finally:
        plt.close(fig)


def test_coinciding_curves_get_distinct_styles():
    a = _scores(1)
    b = _scores(2, shift=1.0)
    curves = [DETDisplay.from_scores(*s, label=n) for n, s in (("aa", a), ("oa", b), ("aaaa", a), ("dup", a))]
    styles = det_styles([(d.pmiss, d.pfa) for d in curves])
    assert [s["same_as"] for s in styles] == [None, None, 0, 0]
    dashes = [styles[i]["ls"] for i in (0, 2, 3)]
    assert len(set(dashes)) == 3  # each repeat of aa has its own dash pattern

    # drawn in the report: the repeat is dashed and named in the legend
    systems = {n: Trials(np.r_[s[0], s[1]], np.r_[np.ones(len(s[0]), bool), np.zeros(len(s[1]), bool)])
               for n, s in (("aa", a), ("oa", b), ("aaaa", a))}
    fig = plt.figure()
    try:
        _draw_det(fig, systems)
        ax = fig.axes[0]
        curves = {ln.get_label(): ln for ln in ax.lines if ln.get_gid() == "vpeval-det"}
        aa = next(ln for k, ln in curves.items() if k.startswith("aa ("))
        aaaa = next(ln for k, ln in curves.items() if k.startswith("aaaa"))
        assert "same curve as aa" in aaaa.get_label()
        assert aa.get_linestyle() != aaaa.get_linestyle()
        assert aa.get_color() != aaaa.get_color()
        np.testing.assert_allclose(aa.get_xydata(), aaaa.get_xydata())
    finally:
        plt.close(fig)


@pytest.mark.parametrize("n", [3, 60])
def test_the_det_legend_shows_every_system_inside_the_figure(n):
    """60 systems: every legend entry is drawn inside the saved figure (22 were cut off; issue 28)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    import vpeval
    from vpeval.report.verification import _draw_det

    rng = np.random.default_rng(0)
    systems = {f"system number {i:02d}": vpeval.Trials(np.r_[rng.normal(1, 1, 20), rng.normal(0, 1, 20)],
                                                       np.r_[np.ones(20, bool), np.zeros(20, bool)])
               for i in range(n)}
    fig = plt.figure(figsize=(6.0, 6.0), dpi=100)
    try:
        _draw_det(fig, systems)
        fig.tight_layout()  # as the report writer does
        fig.canvas.draw()
        box = fig.bbox
        texts = fig.axes[0].get_legend().get_texts()
        assert len(texts) == n
        for t in texts:
            e = t.get_window_extent()
            assert box.x0 - 1 <= e.x0 and e.x1 <= box.x1 + 1 and box.y0 - 1 <= e.y0 and e.y1 <= box.y1 + 1, t.get_text()
    finally:
        plt.close(fig)


def test_det_display_takes_a_known_eer_instead_of_computing_it():
    from vpeval import rocch_eer
    from vpeval.plots import DETDisplay

    tar, non = np.array([0.2, 0.6, 0.9]), np.array([0.1, 0.3, 0.7])
    assert DETDisplay.from_scores(tar, non).eer == rocch_eer(tar, non)
    assert DETDisplay.from_scores(tar, non, eer=0.25).eer == 0.25


def test_displays_from_tie_blocks_equal_those_from_scores():
    """DETDisplay/ECEDisplay.from_blocks of tie_blocks(tar, non) are from_scores(tar, non), value for value
    (ties, +-inf and a shared EER included)."""
    from vpeval.blocks import tie_blocks
    from vpeval.plots import ECEDisplay

    rng = np.random.default_rng(4)
    tar = np.r_[np.round(rng.normal(1, 1, 400), 1), np.inf]
    non = np.r_[np.round(rng.normal(0, 1, 3000), 1), -np.inf]
    b = tie_blocks(tar, non)
    for eer in (None, 0.25):
        a, d = DETDisplay.from_scores(tar, non, "x", eer=eer), DETDisplay.from_blocks(b, "x", eer=eer)
        assert np.array_equal(a.pmiss, d.pmiss) and np.array_equal(a.pfa, d.pfa) and a.eer == d.eer
    a, d = ECEDisplay.from_scores(tar, non, "x"), ECEDisplay.from_blocks(b, "x")
    assert np.array_equal(a.pav, d.pav) and np.array_equal(a.reference, d.reference)


def test_section_figures_sort_the_scores_once_in_a_process(monkeypatch):
    """The verification section's DET and ECE figures share the tie blocks: one sort and merge per system when
    both are drawn here, let go after the second; a pickled copy (a worker's) computes its own."""
    import pickle

    import vpeval.blocks as blocks
    from vpeval.report.verification import _SystemBlocks, _draw_ece

    calls, sorts = [], []
    original, original_sort = blocks.merge_sorted, blocks.sorted_pair
    monkeypatch.setattr(blocks, "merge_sorted", lambda *a: calls.append(1) or original(*a))
    monkeypatch.setattr(blocks, "sorted_pair", lambda *a: sorts.append(1) or original_sort(*a))
    tar, non = _scores(1)
    systems = {"a": Trials(np.r_[tar, non], np.r_[np.ones(tar.size, bool), np.zeros(non.size, bool)]),
               "b": Trials(np.r_[tar, non] * 2, np.r_[np.ones(tar.size, bool), np.zeros(non.size, bool)])}
    shared = _SystemBlocks(systems, uses=2)
    for draw in (_draw_det, _draw_ece):
        fig = plt.figure()
        try:
            draw(fig, shared)
        finally:
            plt.close(fig)
    assert len(calls) == 2 and len(sorts) == 2 and shared._blocks is None
    copy = pickle.loads(pickle.dumps(_SystemBlocks(systems, uses=2)))
    assert dict(copy.items()).keys() == {"a", "b"} and len(calls) == 4 and len(sorts) == 4


def test_det_floor_is_the_smallest_rate_away_from_both_edges():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from vpeval.plots.displays import DET_FLOORS, det_floor

    def slow(pfa, pmiss):  # the definition: min(r, 1 - r) over rates strictly inside (0, 1)
        r = [min(v, 1 - v) for v in list(pfa) + list(pmiss) if v == v and min(v, 1 - v) > 0]
        m = min(r) if r else 1e-3
        return next((f for f in DET_FLOORS if f <= m), DET_FLOORS[-1])

    rate = st.one_of(st.sampled_from([0.0, 1.0, 1e-5, 5e-4, 0.9995, 1 - 1e-5, float("nan")]),
                     st.floats(0, 1))

    @settings(max_examples=300, deadline=None)
    @given(st.lists(rate, max_size=8), st.lists(rate, max_size=8))
    def check(pfa, pmiss):
        assert det_floor(np.array(pfa, float), np.array(pmiss, float)) == slow(pfa, pmiss)

    check()


@pytest.mark.parametrize("seed", [0, 1])
def test_a_long_det_curve_is_drawn_through_points_within_a_cell_of_every_point(seed):
    """drawn_points: every operating point left out lies within one DET_DRAW_STEP (both probits) of the kept
    points on either side of it; the ends are kept; short curves are drawn in full."""
    from scipy.special import ndtri

    from vpeval.plots.displays import DET_DRAW_STEP, drawn_points

    rng = np.random.default_rng(seed)
    tar, non = rng.normal(1.5, 1, 60_000), np.round(rng.normal(0, 1, 300_000), 5)  # ties among non-targets
    d = DETDisplay.from_scores(tar, non)
    floor = 1e-4
    keep = drawn_points(d.pmiss, d.pfa, floor)
    assert 100 < keep.size < d.pmiss.size / 3 and keep[0] == 0 and keep[-1] == d.pmiss.size - 1
    x = ndtri(np.clip(d.pfa, floor, 1 - floor))
    y = ndtri(np.clip(d.pmiss, floor, 1 - floor))
    left_out = np.setdiff1d(np.arange(x.size), keep)
    seg = np.searchsorted(keep, left_out) - 1  # the kept points before and after each point left out
    for v in (x, y):
        for nb in (keep[seg], keep[seg + 1]):
            assert np.all(np.abs(v[left_out] - v[nb]) <= DET_DRAW_STEP * (1 + 1e-9))
    assert drawn_points(d.pmiss[:500], d.pfa[:500], floor).tolist() == list(range(500))
    fig, ax = plt.subplots()
    try:
        d.plot(ax, floor=floor)
        line = next(ln for ln in ax.lines if ln.get_gid() == "vpeval-det")
        np.testing.assert_array_equal(line.get_xdata(), x[keep])
    finally:
        plt.close(fig)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, -0.0, 0.1, 0.5, 1.0, 1 / 3, 0.1 + 1e-12, 0.7]),
                          st.sampled_from([0.0, 0.2, 0.2 + 4e-10, 0.9, 1.0, 2 / 3])), min_size=1, max_size=30))
def test_staircase_equals_numpy_unique_rows(points):
    """The staircase of det_styles' curve comparison against its oracle, numpy's row-wise unique of the rounded
    points: the same rows in the same order (ties after rounding, signed zeros, repeated points)."""
    from vpeval.plots.displays import _staircase

    pm, pf = (np.asarray(v, float) for v in zip(*points))
    want = np.unique(np.round(np.c_[pf, pm], 9), axis=0)
    got = _staircase(pm, pf)
    assert got.shape == want.shape and np.array_equal(got, want)
