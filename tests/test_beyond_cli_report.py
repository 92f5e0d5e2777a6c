"""CLI commands and report sections of embedding structure, SBLS and DeID/G_VD (vpeval.cli.beyond,
vpeval.report.beyond)."""

import json
from pathlib import Path

import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from vpeval.cli.beyond import register
from vpeval.io.embeddings import read_embeddings
from vpeval.report.beyond import (
    analyse_attributes,
    analyse_distinctiveness,
    analyse_embedding_structure,
    attributes_section,
    distinctiveness_section,
    embedding_section,
)
from vpeval.report.document import Figure, Paragraph, Report, Table

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "librispeech-mini"


@pytest.fixture(scope="module")
def app():
    a = typer.Typer()
    register(a)

    @a.command("noop")  # keep typer in multi-command mode
    def _noop():
        pass

    return a


def test_cli_embedding_json(app):
    r = CliRunner().invoke(app, ["embedding", str(EXAMPLE / "embeddings_mfcc.npz"), "--json", "--permutations", "5"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["permutation_seeds"] == [1, 2, 3, 4, 5]
    assert d["cca"]["value"] > d["cca"]["baseline_p95"]
    assert d["procrustes"]["value"] > d["procrustes"]["baseline_p95"]


def test_cli_attributes_table_and_json(app):
    args = ["attributes", str(EXAMPLE / "embeddings_resemblyzer.npz"), "--metadata", str(EXAMPLE / "metadata.csv"),
            "--attribute", "sex"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "SBLS" in r.stdout and "anonymized" in r.stdout
    r = CliRunner().invoke(app, args + ["--json"])
    d = json.loads(r.stdout)
    assert d["n_train_speakers"] == 101
    assert d["results"]["anonymized"]["attributes"]["sex"]["mauc"] > 0.78  # measured 0.819 (101 attacker speakers)
    r = CliRunner().invoke(app, args + ["--hard-labels", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["variant"] == "labels" and d["results"]["anonymized"]["variant"] == "labels"
    anon = d["results"]["anonymized"]["attributes"]["sex"]
    assert anon["leakage"] == pytest.approx(2 * anon["balanced_accuracy"] - 1)


def test_cli_attributes_errors_are_clean(app, tmp_path):
    base = ["attributes", str(EXAMPLE / "embeddings_mfcc.npz"), "--metadata", str(EXAMPLE / "metadata.csv")]
    r = CliRunner().invoke(app, base + ["--alpha", "0.5"])
    assert r.exit_code == 2 and "sum to 1" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(app, base + ["--attribute", "accent"])
    assert r.exit_code == 2 and "missing column" in r.output
    bad = tmp_path / "md.csv"
    md = pd.read_csv(EXAMPLE / "metadata.csv", dtype=str, keep_default_na=False)
    md.loc[3, "sex"] = ""
    md.to_csv(bad, index=False)
    r = CliRunner().invoke(app, ["attributes", str(EXAMPLE / "embeddings_mfcc.npz"), "--metadata", str(bad)])
    assert r.exit_code == 2 and f"{bad}:5: empty value of 'sex'" in r.output


def test_cli_distinctiveness(app):
    r = CliRunner().invoke(app, ["distinctiveness", str(EXAMPLE / "embeddings_mfcc.npz"), "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert len(d["speakers"]) == 10 and d["calibration"] == "pav-laplace"
    assert 0.7 < d["deid"] < 0.9
    r = CliRunner().invoke(app, ["distinctiveness", str(EXAMPLE / "embeddings_mfcc.npz"), "--calibration", "pav"])
    assert r.exit_code == 2 and "calibration must be one of" in r.output


def test_report_sections_build_and_serialise(tmp_path):
    from vpeval.report.writer import write_report

    md = pd.read_csv(EXAMPLE / "metadata.csv", dtype=str, keep_default_na=False)
    sets = {n: read_embeddings(EXAMPLE / f"embeddings_{n}.npz") for n in ("mfcc", "resemblyzer")}
    rep = Report("beyond")
    rep.add(embedding_section({n: analyse_embedding_structure(es, n_permutations=5) for n, es in sets.items()}))
    rep.add(attributes_section({n: analyse_attributes(es, md) for n, es in sets.items()}))
    rep.add(distinctiveness_section({n: analyse_distinctiveness(es) for n, es in sets.items()}))
    for sec in rep.sections:
        assert sum(isinstance(b, Figure) for b in sec.blocks) <= 1
        tables = [b for b in sec.blocks if isinstance(b, Table)]
        assert tables and all(len(row) == len(t.columns) for t in tables for row in t.rows)
    def columns(sec):
        return [c for b in sec.blocks if isinstance(b, Table) for c in b.columns]

    def text(sec):
        return " ".join(b.text for b in sec.blocks if isinstance(b, Paragraph))

    cols = columns(rep.sections[0])
    assert "baseline mean" in cols and "baseline 95th pct" in cols and "paper's baseline" in cols
    assert "smallest reachable p" in cols
    protos = {row[1] for b in rep.sections[0].blocks if isinstance(b, Table) and "protocol" in b.columns
              for row in b.rows}
    assert protos == {"held-out (vpeval)", "in-sample (paper)"}
    assert "In-sample (the paper's protocol)" in text(rep.sections[0])
    cols = columns(rep.sections[1])
    assert "chance mAUC" in cols and "alignment (class<-column)" in cols and "mAUC (unaligned)" in cols
    assert "P_attr (unaligned)" in cols and "degenerate subgroups" in cols
    assert "Degenerate subgroups" in text(rep.sections[1])  # default subgroup = the attribute sex
    assert "ideal G_VD (dB)" in columns(rep.sections[2])
    out = write_report(rep, tmp_path / "out")
    doc = json.loads((out / "report.json").read_text())
    ids = [s["id"] for s in doc["sections"]]
    assert ids == ["embedding", "attributes", "distinctiveness"]
    emb = doc["sections"][0]["data"]["attackers"]["mfcc"]
    assert emb["protocol"] == "held-out (vpeval)" and emb["insample"]["protocol"] == "in-sample (paper)"
    assert emb["cca"]["p_value_floor"] == pytest.approx(1 / 6) and emb["insample"]["procrustes"]["n_permutations"] == 5
    anon = doc["sections"][1]["data"]["attackers"]["resemblyzer"]["results"]["anonymized"]
    assert anon["attributes"]["sex"]["mauc"] > 0.78  # measured 0.819
    assert anon["attributes"]["sex"]["alignment"]["identity"] is True  # the frozen attacker is not swapped here
    assert anon["subgroup_degenerate"] is True and anon["subgroup_same_as"] == ["sex"]
    assert anon["unaligned"]["p_attr"] == pytest.approx(anon["p_attr"])
    assert len(list(out.glob("*.png"))) == 3
