"""Tests of the report sections of vpeval.report.stats."""

import json

import numpy as np
import pytest

from vpeval.io.trials import Trials
from vpeval.pipeline import OneToN
from vpeval.report.document import Figure, Paragraph, Report, Table
from vpeval.report.stats import speaker_profile_section, uncertainty_entries, uncertainty_section
from vpeval.report.writer import write_report
from vpeval.stats import assess_one_to_n, assess_trials, speaker_profile

EVIL = "<script>alert(1)</script>"


def small():
    rng = np.random.default_rng(0)
    spk = np.array([EVIL, "b", "c", "d"])
    P, N = 12, 4
    ti = np.arange(P) % N
    s = rng.normal(size=(P, N))
    s[np.arange(P), ti] += 1.0
    m = OneToN(s, ti, np.array([f"u{i}" for i in range(P)]), spk[ti], spk, "original", "anonymized")
    t = m.to_trials()
    return m, t


def test_sections_build_and_escape(tmp_path):
    m, t = small()
    groups = {f"{EVIL} / oa": assess_trials(t, groups=m.probe_speaker[np.repeat(np.arange(12), 4)],
                                            n_boot=20, n_perm=20),
              "sys / 1-to-N": assess_one_to_n(m, None, n_boot=20, n_perm=20)}
    sec = uncertainty_section(groups)
    table = next(b for b in sec.blocks if isinstance(b, Table))
    assert len(table.rows) == 5 + 1
    assert table.columns[-1] == "verdict"
    j = table.columns.index("smallest reachable p")
    assert table.columns[j - 1] == "p-value" and all(row[j] == pytest.approx(1 / 21) for row in table.rows)
    # every field repeated over the entries is stored once (common, metrics); the expander gives back each
    # entry exactly as Assessment.to_dict() does
    full = uncertainty_entries(sec.data)
    assert full == {label: {a.key: a.to_dict() for a in items} for label, items in groups.items()}
    assert sec.data["common"]["bootstrap"]["n_boot"] == 20 and "n_boot" not in json.dumps(sec.data["groups"])
    assert sec.data["metrics"]["eps_max"]["bootstrap"]["unit"] == "nats"
    assert full["sys / 1-to-N"]["rank1"]["chance"]["p_value_floor"] == pytest.approx(1 / 21)
    assert any(isinstance(b, Figure) for b in sec.blocks)
    assert full[f"{EVIL} / oa"]["eps_max"]["bootstrap"]["n_boot"] == 20
    assert sec.data["n_boot"] == [20] and sec.data["seeds"] == [0]
    prof = speaker_profile(t, one_to_n=m, lid=np.zeros(12))
    psec = speaker_profile_section({f"{EVIL}": prof}, top=2)
    ptab = next(b for b in psec.blocks if isinstance(b, Table))
    assert len(ptab.rows) == 2 and len(psec.data["profiles"][EVIL]["speakers"]) == 4
    # profiles outside table_labels are data only, and a sentence says so
    hid = speaker_profile_section({"a / oa": prof, "b / oa": prof}, table_labels={"b / oa"})
    assert [b.caption.split(" (")[0] for b in hid.blocks if isinstance(b, Table)] == ["b / oa"]
    assert set(hid.data["profiles"]) == {"a / oa", "b / oa"}
    assert any(isinstance(b, Paragraph) and "the other 1 attacks are in report.json" in b.text for b in hid.blocks)
    rep = Report("t")
    rep.add(sec)
    rep.add(psec)
    write_report(rep, tmp_path / "r", generated_at="2026-01-01T00:00:00Z")
    html = (tmp_path / "r" / "report.html").read_text()
    assert EVIL not in html and "&lt;script&gt;" in html
    json.loads((tmp_path / "r" / "report.json").read_text())


def test_no_plot_when_metric_absent():
    t = Trials([1.0, 0.0, 0.5, 0.2], [True, False, True, False], ["a", "a", "b", "b"], ["x", "x", "y", "y"])
    sec = uncertainty_section({"s": assess_trials(t, unit="enroll", n_boot=5, n_perm=5, within="all")},
                              plot_metric="alid")
    assert not any(isinstance(b, Figure) for b in sec.blocks)
