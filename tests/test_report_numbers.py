"""Report numbers: valid finite scores never give "nan" (an estimator that cannot run is null with its error),
one rule for infinite values in JSON, linkability never vanishes silently, and the DET curve's threshold labels
reproduce their operating points."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from vpeval.cli.main import app
from vpeval.metrics.summary import verification_summary
from vpeval.metrics.verification import det_curve
from vpeval.report.writer import _jsonable

FINITE_CASES = {
    "separable": "1 1\n2 1\n0 0\n-1 0\n",  # PAV/logistic cannot fit: eps_max infinite or an estimator error
    "tied": "1 1\n1 1\n1 0\n2 0\n0 1\n",
    "two": "0.5 1\n0.5 0\n",
    "tiny": "1e-300 1\n3e-300 1\n2e-300 0\n0 0\n",
}


def _walk(x):
    if isinstance(x, dict):
        for v in x.values():
            yield from _walk(v)
    elif isinstance(x, list):
        for v in x:
            yield from _walk(v)
    else:
        yield x


@pytest.mark.parametrize("case", sorted(FINITE_CASES))
def test_report_of_finite_scores_has_no_nan(case, tmp_path):
    f = tmp_path / f"{case}.txt"
    f.write_text(FINITE_CASES[case])
    r = CliRunner().invoke(app, ["report", str(f), "-o", str(tmp_path / "r"), "-q"])
    assert r.exit_code == 0, r.output
    text = (tmp_path / "r" / "report.json").read_text()
    doc = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    assert not re.search(r"\bnan\b", text, re.I)
    assert not re.search(r">\s*nan\s*<", (tmp_path / "r" / "report.html").read_text(), re.I)
    for v in _walk(doc):  # the one rule: numbers, null, or the strings "inf"/"-inf" for infinities
        assert not (isinstance(v, float) and not math.isfinite(v))
    # an estimator that could not run says why, beside its null values
    disclosure = next(s for s in doc["sections"] if s["id"].startswith("disclosure-"))
    for est in disclosure["data"]["estimators"]:
        assert (est["eps_max_nats"] is None) == bool(est["error"]), est


def test_json_rule_for_non_finite_values():
    assert _jsonable({"a": float("nan"), "b": float("inf"), "c": [-math.inf, 1.5]}) == \
        {"a": None, "b": "inf", "c": ["-inf", 1.5]}


def test_linkability_with_infinite_scores_is_null_with_its_reason():
    s = {m.key: m for m in verification_summary([np.inf, 1.0, 0.5], [0.2, -np.inf])}
    d = s["linkability"].as_dict()
    assert d["value"] is None and "infinite score" in d["error"]
    assert "error" not in {m.key: m for m in verification_summary([1.0, 0.5], [0.2, 0.1])}["linkability"].as_dict()


scores = st.lists(st.one_of(st.integers(-3, 3).map(float), st.sampled_from([np.inf, -np.inf])), min_size=1,
                  max_size=10)


@settings(max_examples=200, deadline=None)
@given(scores, scores)
def test_det_thresholds_reproduce_their_points(tar, non):
    """Under "accept iff score >= t", each label gives its (pmiss, pfa); NaN labels only the reject-all point
    when a score is +inf, so +inf is never used twice."""
    tar, non = np.array(tar), np.array(non)
    c = det_curve(tar, non)
    for t, pm, pf in zip(c.thresholds, c.pmiss, c.pfa):
        if math.isnan(t):
            assert (pm, pf) == (1.0, 0.0)
            continue
        assert pm == np.mean(tar < t) and pf == np.mean(non >= t)
    assert np.count_nonzero(c.thresholds == np.inf) <= 1
    assert math.isnan(c.thresholds[-1]) == bool(np.isposinf(np.r_[tar, non]).any())


def test_verification_section_from_summaries_computed_elsewhere_is_the_same():
    """The numbers a worker computes (verification_summaries) give the section computed in one call."""
    from vpeval.io.trials import Trials
    from vpeval.report.verification import verification_section, verification_summaries

    rng = np.random.default_rng(3)
    s = np.r_[rng.normal(1, 1, 200), rng.normal(0, 1, 900)]
    lab = np.r_[np.ones(200, bool), np.zeros(900, bool)]
    systems = {"a": Trials(s, lab), "b": Trials(np.round(s, 1), lab)}
    one = verification_section(systems, (0.01, 0.1))
    two = verification_section(systems, (0.01, 0.1), summaries=verification_summaries(systems, (0.01, 0.1)))
    assert json.dumps(_jsonable(one.data), sort_keys=True) == json.dumps(_jsonable(two.data), sort_keys=True)
    assert [type(b).__name__ for b in one.blocks] == [type(b).__name__ for b in two.blocks]
