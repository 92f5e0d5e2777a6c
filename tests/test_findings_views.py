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
    p.write_text("".join(f"{v!r} 1\n" for v in tar) + "".join(f"{v!r} 0\n" for v in non))
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
