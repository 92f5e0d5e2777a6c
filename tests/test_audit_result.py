"""The audit as data (vpeval.audit -> AuditResult): decided without the report, and report.json serialises it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "librispeech-mini"


@pytest.mark.slow
def test_audit_returns_data_and_the_report_only_renders_it(tmp_path, monkeypatch):
    npz = EXAMPLE / "embeddings_mfcc.npz"
    if not npz.exists():
        pytest.skip("bundled example missing")
    import vpeval
    from vpeval.analysis.audit import AuditResult
    from vpeval.report.audit import render_audit
    from vpeval.report.writer import report_json, resolve_refs

    es = vpeval.read_embeddings(npz)
    monkeypatch.chdir(tmp_path)
    res = vpeval.audit({"A": {"mfcc": es}, "B": {"mfcc": es}}, types=("oo", "oa", "aa"), backends=("cosine",),
                       n_boot=20, n_perm=19, verdict_perm=99, group_by=None)
    assert isinstance(res, AuditResult) and os.listdir(tmp_path) == []  # nothing written
    assert set(res.verdicts) == {"A", "B"} and res.verdicts["A"]["verdict"] in vpeval.analysis.verdict.VERDICTS
    assert set(res.tests) == {"A", "B"} and res.tests["A"].worst.value == res.verdicts["A"]["worst_case"]["value_bits"]
    # identical systems: the worst cases are compared first, and they do not differ
    first = res.comparisons[0]
    assert first.metric == "worst_case" and first.diff == 0 and first.better is None
    # identical systems: B's parts are stored as references to A's; resolved, they are the audit's own data
    doc = resolve_refs(json.loads(report_json(render_audit(res), "2026-01-01T00:00:00+00:00")))
    from vpeval.report.writer import JSON_DIGITS, _jsonable  # the JSON rule of every output: inf as "inf"

    want = json.loads(json.dumps(_jsonable(res.to_dict(), JSON_DIGITS), default=float, allow_nan=True))
    for key, value in want.items():
        assert doc[key] == value, key
    assert doc["options"]["seed"] == res.options["seed"] == 0
