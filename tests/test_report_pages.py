"""Report pages (main page + appendix pages) and report.json storing repeated arrays once (issue 27)."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpeval.errors import VpevalError
from vpeval.io.output import MANIFEST_NAME, read_manifest
from vpeval.report.document import Links, Paragraph, Report, Section, Table, page_file
from vpeval.report.writer import REF_MIN_CHARS, _json_leaf, _store_once, report_json, resolve_refs, write_report


def test_store_once_by_hand():
    big = list(range(100))  # compact JSON far above REF_MIN_CHARS
    doc = {"a": big, "b": {"c": list(big), "small": [1, 2]}, "d": [1, 2], "e/f": big}
    out = _store_once(doc)
    assert out["a"] == big  # the first occurrence is kept whole
    assert out["b"]["c"] == {"$ref": "/a"} and out["e/f"] == {"$ref": "/a"}
    assert out["b"]["small"] == [1, 2] and out["d"] == [1, 2]  # short ones cost less than a reference
    assert resolve_refs(out) == doc
    # a key with "/" or "~" is escaped in the pointer (RFC 6901)
    doc2 = {"x/y~z": {"v": big}, "w": {"v": list(big)}}
    out2 = _store_once(doc2)
    assert out2["w"] == {"$ref": "/x~1y~0z"} and resolve_refs(out2) == doc2


def test_store_once_keeps_the_first_of_nested_repeats():
    row = {"speaker": "s1", "values": list(range(100))}
    doc = {"sections": [{"data": {"rows": [row, dict(row)]}}, {"data": {"rows": [dict(row), dict(row)], "n": 2}}]}
    out = _store_once(doc)
    assert out["sections"][0]["data"]["rows"][0] == row
    assert out["sections"][0]["data"]["rows"][1] == {"$ref": "/sections/0/data/rows/0"}
    assert out["sections"][1]["data"]["rows"] == {"$ref": "/sections/0/data/rows"}
    assert resolve_refs(out) == doc


def test_resolve_refs_names_a_dangling_pointer():
    with pytest.raises(VpevalError, match="points at nothing"):
        resolve_refs({"a": {"$ref": "/missing/0"}})


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["a", "b/c", "~d", 'q"\\\u00e9\n\u2028']) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.sampled_from(["a", "b/c", "~0", "k"]), inner,
                                                                max_size=4),
    max_leaves=60)


@settings(max_examples=100, deadline=None)
@given(json_values, st.integers(1, 3))
def test_store_once_round_trips(value, copies):
    """Any document, with whole parts repeated: resolving the references gives back exactly the document, and
    no array or object of REF_MIN_CHARS characters or more is written twice."""
    doc = {"p": [value] * copies, "q": {"r": value, "s": [value, {"t": value}]}}
    out = _store_once(doc)
    full = resolve_refs(out)
    assert full == doc
    # the walk's own leaf encoding is json.dumps's
    leaves = []

    def collect(x):
        if isinstance(x, dict):
            [collect(v) for v in x.values()]
        elif isinstance(x, list):
            [collect(v) for v in x]
        else:
            leaves.append(x)
    collect(doc)
    assert all(_json_leaf(v) == json.dumps(v, allow_nan=False) for v in leaves)
    seen = set()

    def walk(x, resolved):  # x: as written; resolved: the same place with every reference resolved
        if isinstance(x, dict) and "$ref" in x:
            return
        if isinstance(x, (dict, list)):
            text = json.dumps(resolved, separators=(",", ":"))
            if len(text) >= REF_MIN_CHARS:
                assert text not in seen
                seen.add(text)
            for k in (x if isinstance(x, dict) else range(len(x))):
                walk(x[k], resolved[k])
    walk(out, full)


def _two_page_report() -> Report:
    rep = Report("t")
    main = rep.add(Section("main", "Main part"))
    main.blocks.append(Paragraph("see the details"))
    main.blocks.append(Links("Details:", [("the details", "detail"), ("a file", "notes.txt")]))
    detail = rep.add(Section("detail", "Detail", page="appendix-x"))
    detail.blocks.append(Table(["a"], [[1.0]]))
    detail.blocks.append(Links("Back:", [("main", "main")]))
    detail.data = {"numbers": list(range(80)), "again": list(range(80))}
    rep.page_titles["appendix-x"] = "appendix (x)"
    return rep


def test_pages_are_written_linked_and_in_the_manifest(tmp_path):
    out = write_report(_two_page_report(), tmp_path / "r", generated_at="2026-01-01T00:00:00+00:00")
    main, appendix = (out / "report.html").read_text(), (out / page_file("appendix-x")).read_text()
    assert 'href="appendix-x.html#detail"' in main and 'href="notes.txt"' in main  # across pages, and a file
    assert 'href="appendix-x.html"' in main and "Reproducibility" in main  # the list of appendix pages
    assert 'id="detail"' in appendix and 'id="detail"' not in main
    assert 'href="report.html#main"' in appendix and 'href="report.html"' in appendix and "Reproducibility" not in appendix
    doc = json.loads((out / "report.json").read_text())
    assert doc["pages"] == {"report.html": "t", "appendix-x.html": "appendix (x)"}
    assert [s["page"] for s in doc["sections"]] == ["report.html", "appendix-x.html"]
    assert doc["sections"][1]["data"]["again"] == {"$ref": "/sections/1/data/numbers"}
    assert resolve_refs(doc)["sections"][1]["data"]["again"] == list(range(80))
    # the output policy covers every page: listed in the manifest, and --force replaces them all
    listed = {f["path"] for f in read_manifest(out / MANIFEST_NAME)["files"]}
    assert {"report.html", "appendix-x.html", "report.json"} <= listed
    rep = Report("t")
    rep.add(Section("main", "Main part"))
    write_report(rep, out, force=True, generated_at="2026-01-01T00:00:00+00:00")
    assert not (out / "appendix-x.html").exists()  # no stale page of the earlier run survives


def test_report_json_is_compact_and_keeps_every_number():
    rep = _two_page_report()
    text = report_json(rep, "2026-01-01T00:00:00+00:00")
    assert "\n" not in text.rstrip("\n") and ": " not in text
    assert resolve_refs(json.loads(text))["sections"][1]["data"] == rep.sections[1].data


def test_verification_definitions_stored_once_unless_they_differ():
    """Each metric's definition and library call once per section; linkability's, which names a bin count that
    follows the number of target trials, stays with each value where it differs. Nothing is lost."""
    import numpy as np

    from vpeval.io.trials import Trials
    from vpeval.metrics.summary import verification_summary
    from vpeval.report.verification import verification_entries, verification_section

    rng = np.random.default_rng(0)

    def trials(n_tar):
        s = np.concatenate([rng.normal(1, 1, n_tar), rng.normal(0, 1, 400)])
        return Trials(s, np.arange(s.size) < n_tar)

    systems = {"small": trials(50), "large": trials(1000)}
    data = verification_section(systems).data
    assert "eer_rocch" in data["definitions"] and "definition" not in data["systems"]["small"]["eer_rocch"]
    assert "linkability" not in data["definitions"]
    full = verification_entries(data)  # (schema 2.3: names and units stored once too, in "metrics")
    for name, t in systems.items():
        for m in verification_summary(t.tar, t.non, (0.01, 0.05)):
            assert full[name][m.key] == m.as_dict()
            assert {**data["systems"][name][m.key], **data["definitions"].get(m.key, {}),
                    "key": m.key, **data["metrics"][m.key]} == m.as_dict()


def test_group_bootstraps_stored_once_and_put_back():
    """The groups section's bootstrap results keep value and interval per entry; the fields equal in all of them
    (or in all of one metric) are stored once, and group_entries gives every entry back whole."""
    import copy

    from vpeval.report.groups import _factor_bootstraps, group_entries

    def boot(key, unit, value, resampled="speaker"):
        return {"key": key, "name": key.upper(), "unit": unit, "value": value, "ci_low": value - 0.1,
                "ci_high": value + 0.1, "level": 0.95, "n_boot": 200, "seed": 0, "resampled": resampled}

    entry = lambda v: {"group": "F", "n_tar": 3, "metrics": {"eer_rocch": boot("eer_rocch", "fraction", v),  # noqa: E731
                                                             "eps_max": boot("eps_max", "nats", 2 * v)},
                       "alid": boot("alid", "bits", v, resampled="probe speaker")}
    data = {"A": {"att": {"oa": [entry(0.2), entry(0.3)], "aa": [{"group": "M", "metrics": {}, "alid": None}]}}}
    original = copy.deepcopy(data)
    common, per_metric = _factor_bootstraps(data)
    assert common == {"level": 0.95, "n_boot": 200, "seed": 0}
    assert per_metric["alid"] == {"key": "alid", "name": "ALID", "resampled": "probe speaker", "unit": "bits"}
    assert data["A"]["att"]["oa"][1]["metrics"]["eps_max"] == {"value": 0.6, "ci_low": 0.5, "ci_high": 0.7}
    assert group_entries({"systems": data, "bootstrap_common": common, "bootstrap_metrics": per_metric}) == original


def test_sentences_differing_in_numbers_only_are_said_once():
    """The verdict block's per-system notes: one sentence for the systems whose sentences differ only in their
    numbers, each differing number written a / b / c in the systems' order; names with digits are not numbers."""
    from vpeval.report.document import merge_sentences

    got = merge_sentences([("a", "floor 5.94 bits; 1,132 more speakers, log10 and oa2 kept"), ("a", "at ceiling 12.5"),
                           ("b", "floor 6.02 bits; 3,848 more speakers, log10 and oa2 kept"), ("c", "other")])
    assert got == [(["a", "b"], "floor 5.94 / 6.02 bits; 1,132 / 3,848 more speakers, log10 and oa2 kept"),
                   (["a"], "at ceiling 12.5"), (["c"], "other")]
    # a second sentence of the same form from one system is not merged into its first
    assert merge_sentences([("a", "x 1"), ("a", "x 2")]) == [(["a"], "x 1"), (["a"], "x 2")]


def test_numeric_columns_are_aligned_by_the_table_not_per_cell():
    from vpeval.report.writer import report_html

    rep = Report("t")
    sec = rep.add(Section("s", "S"))
    sec.blocks.append(Table(["name", "n", "x", "mixed"], [["a", 1, 0.5, 2.0], ["b", 2, float("nan"), "none"]]))
    html = report_html(rep, {}, "now")
    # columns 2 and 3 hold numbers only (NaN included): the table right-aligns them, their cells carry no class
    assert '<table class="r2 r3">' in html
    assert "<tr><td>a</td><td>1</td><td>0.5</td><td class=\"num\">2</td></tr>" in html
    assert "<td>b</td><td>2</td><td>—</td><td>none</td>" in html
    # the stylesheet right-aligns column j of a table of class rj
    assert ".r2 td:nth-child(2)" in html and ".r3 td:nth-child(3)" in html
    # a table of text has no class
    sec.blocks.append(Table(["a"], [["x"], ["y"]]))
    assert "<table>" in report_html(rep, {}, "now")
