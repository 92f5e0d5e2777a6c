"""One unit convention for everything a person reads (issue 11 item 2): EERs in %, disclosure in bits."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from vpeval.cli.main import app
from vpeval.metrics.summary import verification_summary
from vpeval.report.units import UNITS_NOTE, display_metrics, to_display

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "librispeech-mini"


def test_display_metrics_percent_and_bits_once():
    rng = np.random.default_rng(0)
    summ = verification_summary(rng.normal(2, 1, 50), rng.normal(0, 1, 300))
    by = {m.key: m for m in summ}
    shown = {k: (name, v, u) for k, name, v, u, _ in display_metrics(summ)}
    assert "eps_max" not in shown and "eps_max_log10" not in shown  # one eps_max, in bits
    assert shown["eps_max_bits"][1:] == (by["eps_max"].value / math.log(2), "bits")
    assert shown["eer_rocch"][1:] == (100 * by["eer_rocch"].value, "%")
    assert shown["eer_interp"][2] == "%" and shown["min_cllr"][2] == "bits"
    assert all(u not in ("nats", "fraction", "log10") for _, _, u in shown.values())


def test_to_display():
    assert to_display(0.25, "fraction") == (25.0, "%")
    assert to_display(math.log(2), "nats") == (pytest.approx(1.0), "bits")
    assert to_display("B", "category") == ("B", "category")


def test_verify_prints_percent_and_bits(tmp_path):
    p = tmp_path / "s.txt"
    p.write_text("".join(f"{s} {l}\n" for s, l in [(3, 1), (2.5, 1), (1, 0), (0.5, 0), (2.7, 0), (0.2, 1)]))
    r = CliRunner().invoke(app, ["verify", str(p)])
    assert r.exit_code == 0, r.output
    assert "nats" not in r.output.replace("0.693 nats", "") and "fraction" not in r.output
    assert re.search(r"EER \(ROCCH\)\s*│\s*[0-9.]+\s*│ %", r.output)


@pytest.mark.slow
def test_audit_page_uses_one_convention(tmp_path):
    """Two systems (cosine attackers): no table of the page shows nats, fractions or log10 values; the units
    note says the convention once; report.json keeps the machine fields."""
    npz = EXAMPLE / "embeddings_mfcc.npz"
    if not npz.exists():
        pytest.skip("bundled example missing")
    d = tmp_path / "sys"
    d.mkdir()
    shutil.copy(npz, d)
    shutil.copy(EXAMPLE / "metadata.csv", d)
    out = tmp_path / "rep"
    r = CliRunner().invoke(app, ["audit", f"A={d}", f"B={d}", "--backend", "cosine", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "(nats)" not in r.output  # terminal scorecard
    html = (out / "report.html").read_text()
    heads = re.findall(r"<th>([^<]*)</th>", html)
    assert heads and not [h for h in heads if re.search(r"nats|fraction|log10", h)]
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", html)
    assert not [c for c in cells if c.strip() in ("nats", "fraction", "log10")]
    assert html.count(UNITS_NOTE.split(".")[0]) == 1
    # sentences: eps_max in bits, EER in percent
    doc = json.loads((out / "report.json").read_text())
    v = doc["verdicts"]["A"]
    assert re.search(r"eps_max [0-9.]+ bits", v["sentence"]) and "nats" not in v["sentence"]
    bits = v["worst_case"]["value_bits"]
    assert f"eps_max {bits:.3g} bits" in v["sentence"] and re.search(r"EER, an average over trials, is [0-9.]+ %", v["sentence"])
    assert re.search(r"eps\([0-9.]+ %\) = ", v["sentence"])  # the profile at delta, in bits, delta in percent
    summary = next(s for s in doc["sections"] if s["id"] == "summary")["data"]["systems"]["A"]
    assert "nats" not in json.dumps([st["sentence"] for st in summary["strongest"].values()])
    assert "eps_max_nats" in summary["attackers"]["mfcc-stats/cosine"]["oa"]  # machine field unchanged
