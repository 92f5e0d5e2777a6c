"""`vpeval demo` on the bundled LibriSpeech example: the main job of the README (its numbers: docs/demo.md)."""

import json
import math
import shutil

import pytest
from typer.testing import CliRunner

from vpeval.report.document import safe_filename
from vpeval.report.groups import group_entries

from vpeval.cli.main import app
from vpeval.report.writer import resolve_refs

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "librispeech-mini"


def _need_example():
    """Skip the calling test when the bundled example's embeddings are absent."""
    if not sorted(EXAMPLE.glob("embeddings_*.npz")):
        pytest.skip("bundled example missing")


def _mfcc_system(folder):
    """``folder`` made a one-extractor system folder: the example's MFCC embeddings copied into it."""
    _need_example()
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(EXAMPLE / "embeddings_mfcc.npz", folder)
    return folder


@pytest.fixture(scope="module")
def demo_report(demo_run):
    out, output = demo_run  # one demo run per session (tests/conftest.py)
    assert "report written to" in output
    return out, resolve_refs(json.loads((out / "report.json").read_text()))


def _section(doc, sid):
    return next(s for s in doc["sections"] if s["id"] == sid)


def test_original_identifiable_anonymized_not_perfect(demo_report):
    _, doc = demo_report
    att = _section(doc, "summary")["data"]["systems"]["mcadams"]["attackers"]
    assert {"mfcc-stats/cosine", "resemblyzer-ge2e/cosine"} <= set(att)
    res = att["resemblyzer-ge2e/cosine"]
    assert res["oo"]["eer_rocch"] < 0.01  # original speech: the attacker identifies speakers
    for t in ("oa", "aa"):
        assert 0.0 < res[t]["eer_rocch"] < 0.5  # anonymized: not perfect (and not perfectly broken)
    assert res["oo"]["eer_rocch"] < res["oa"]["eer_rocch"]


def test_linkage_original_vs_anonymized(demo_report):
    _, doc = demo_report
    cond = _section(doc, "mcadams-linkage-resemblyzer-ge2e/cosine")["data"]["conditions"]
    oo, oa = cond["oo"], cond["oa"]
    n = oo["lid"]["summary"]["n_speakers"]
    assert n == 111  # 10 evaluation speakers + 101 distractors (the 150 training speakers are not enrolled)
    assert oo["identification"]["rates"]["rank1"] >= 0.95
    assert oo["lid"]["summary"]["alid_bits"] > 0.9 * math.log2(n)
    assert oa["identification"]["rates"]["rank1"] < 0.5
    assert oa["lid"]["summary"]["alid_bits"] < 0.5 * oo["lid"]["summary"]["alid_bits"]


def test_attackers_trained_semi_informed_and_fused(demo_report):
    _, doc = demo_report
    # several systems: attacker keys are "<system> / <attacker>"; those of the McAdams system
    assert {k.split(" / ")[0] for k in doc["attackers"]} == {"mcadams", "vtln", "resample"}
    attackers = {k.split(" / ", 1)[1]: a for k, a in doc["attackers"].items() if k.startswith("mcadams / ")}
    kinds = {(a["backend"], a["trained_on"]) for a in attackers.values()}
    assert {("cosine", "none"), ("plda", "anonymized"), ("lda", "anonymized"), ("plda", "original"),
            ("fusion", "anonymized"), ("fusion", "original")} <= kinds
    assert all(a["training_speakers"] == 150 for a in attackers.values() if a["trained_on"] != "none")
    fused = attackers["fusion/anonymized"]
    assert len(fused["members"]) == 6 and set(fused["fusion"]["weights"]) == set(fused["members"])
    assert all(attackers[m]["trained_on"] == "anonymized" for m in fused["members"])
    summary = _section(doc, "summary")["data"]["systems"]["mcadams"]
    eers = {a: by["aa"]["eer_rocch"] for a, by in summary["attackers"].items()}
    best = summary["strongest"]["aa"]
    assert best["eer"]["eer_rocch"] == min(eers.values()) and eers[best["eer"]["attacker"]] == min(eers.values())
    assert best["eer"]["class"] == summary["attacker_class"][best["eer"]["attacker"]]["aa"]
    # the semi-informed attackers beat the lazy cosine ones on this example, and the page says so
    assert best["eer"]["class"].startswith("semi-informed (")
    assert best["eer"]["eer_rocch"] < best["cosine"]["eer_rocch"]
    assert "overstate privacy" in best["sentence"] and best["cosine"]["attacker"] in best["sentence"]
    assert set(summary["strongest"]) == {"oa", "aa"}
    html = (demo_report[0] / "report.html").read_text()
    assert "%) is that of" in html


def test_html_has_every_section_and_plot(demo_report):
    """Every section is on the page report.json names (the main page or an appendix page), and every PNG is
    shown on one of the pages."""
    out, doc = demo_report
    pages = {name: (out / name).read_text() for name in doc["pages"]}
    assert sorted(pages) == sorted(p.name for p in out.glob("*.html"))
    for s in doc["sections"]:
        assert f'<section id="{safe_filename(s["id"])}">' in pages[s["page"]]
        assert s["title"].split(":")[0] in pages[s["page"]]
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs and all(any(p in html for html in pages.values()) for p in pngs)


def test_demo_attacks_three_channels(demo_report):
    """Issue 29: each system is attacked on the voice, content and prosody channels and their fusion; report.json's
    attackers carry the channel; the first screen gives the voice-channel verdict beside the all-channel one."""
    _, doc = demo_report
    for system in ("mcadams", "vtln", "resample"):
        chans = {k.split(" / ", 1)[1]: a["channel"] for k, a in doc["attackers"].items() if k.startswith(system + " / ")}
        assert {c for c in chans.values()} == {"voice", "content", "prosody", "fused"}
        assert chans["content-tfidf/centred-cosine/original"] == "content"
        assert chans["prosody-stats/lda/anonymized"] == "prosody"
        assert chans["fusion-channels/anonymized"] == "fused" and chans["fusion/anonymized"] == "voice"
        assert doc["channel_verdicts"][system]["channels"] == {"content": 1, "fused": 2, "prosody": 2, "voice": 17}
    first = doc["sections"][0]
    assert first["id"] == "verdict"


def test_figures_only_for_strongest_attackers(demo_report):
    """Issue 22/27: per-attacker figures are drawn for each system's strongest attackers only (lowest ROCCH-EER
    per attack type, and the verdict's deciding attacker); every other attacker keeps its tables and says where
    its curves are; the summary draws one combined DET/CMC figure per system. Every drawn PNG is linked."""
    from vpeval.report.document import safe_filename

    out, doc = demo_report
    main = (out / "report.html").read_text()
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert len(pngs) < 80
    summary = _section(doc, "summary")["data"]["systems"]
    for system, data in summary.items():
        featured = {st["eer"]["attacker"] for st in data["strongest"].values()}
        featured.add(doc["verdicts"][system]["strongest_attacker"])
        assert f"summary_all_attackers_{system}.png" in pngs
        # the main page links every attacker whose figures are drawn (the reader can open each of them)
        page = f"appendix-{safe_filename(system)}.html"
        for attacker in featured:
            assert f'href="{page}#{safe_filename(f"{system}-verification-{attacker}")}"' in main
        html = (out / page).read_text()
        for attacker in data["attackers"]:
            for kind in ("verification", "linkage"):
                sid = safe_filename(f"{system}-{kind}-{attacker}")
                start = html.index(f'<section id="{sid}">')
                block = html[start:html.index("</section>", start)]
                if kind == "linkage" and doc["attackers"][f"{system} / {attacker}"]["channel"] != "voice":
                    assert "<img" not in block  # content/prosody/fused attackers: no 1-to-N search (docs/channels.md)
                    continue
                assert ("<img" in block) == (attacker in featured), sid
                assert ("Figures are drawn for the strongest attackers" in block) == (attacker not in featured)
                assert "<table" in block  # the numbers stay for every attacker


def test_demo_shows_per_sex_rows(demo_report):
    """Every attacker's oo/oa/aa results per sex of the enrollment speaker (the VoicePrivacy f/m split)."""
    import csv

    out, doc = demo_report
    with open(EXAMPLE / "metadata.csv", newline="") as f:
        sexes = {r["sex"] for r in csv.DictReader(f) if r["sex"]}
    assert len(sexes) == 2
    sec = _section(doc, "groups")
    for system, by_attacker in sec["data"]["systems"].items():
        assert sec["data"]["group_by"][system] == "sex"
        # every attacker, of every channel (the strongest attacker of a trial type may be a prosody one)
        assert set(by_attacker) == set(_section(doc, "summary")["data"]["systems"][system]["attackers"])
        assert {doc["attackers"][f"{system} / {a}"]["channel"] for a in by_attacker} == {
            "voice", "content", "prosody", "fused"}
        for attacker, by_type in by_attacker.items():
            assert {"oa", "aa"} <= set(by_type)
            for rows in by_type.values():
                assert {r["group"] for r in rows} == sexes
                assert all(r["metrics"]["eer_rocch"]["ci_low"] <= r["metrics"]["eer_rocch"]["value"]
                           <= r["metrics"]["eer_rocch"]["ci_high"] for r in rows)
    # the bootstrap fields repeated in every group entry are stored once; group_entries puts them back
    full = group_entries(sec["data"])
    assert {b["n_boot"] for by_a in full.values() for by_t in by_a.values() for rows in by_t.values()
            for r in rows for b in r["metrics"].values()} == {doc["options"]["n_boot"]}
    assert '"n_boot"' not in json.dumps(sec["data"]["systems"])
    # one list per row in the order of vpc_columns
    vpc = [dict(zip(sec["data"]["vpc_columns"], r, strict=True)) for r in sec["data"]["vpc_rows"]]
    assert {r["gender"] for r in vpc} == sexes | {"all"}
    assert sec["data"]["vpc_columns"][:6] == ["dataset", "split", "gender", "enrollment", "trial",
                                              "EER closest-point (%)"]
    assert 'id="groups"' in (out / "appendix.html").read_text()
    # the main page shows each system's per-gender rows unfolded (the first thing a participant looks for)
    main = (out / "report.html").read_text()
    for system in sec["data"]["systems"]:
        start = main.index(f'<section id="{safe_filename(system)}-overview">')
        block = main[start:main.index("</section>", start)]
        assert "<details" not in block and "Per gender (VoicePrivacy split" in block
        assert all(f"<td>{g}</td>" in block for g in sexes | {"all"})
    # issue 26: the demo writes the per-gender VoicePrivacy table into its report folder by default
    with open(out / "voiceprivacy_per_gender.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert len(table) == len(vpc) and {r["gender"] for r in table} == sexes | {"all"}
    assert list(table[0])[:6] == ["dataset", "split", "gender", "enrollment", "trial", "EER closest-point (%)"]
    assert "clipped per-speaker mean EER (%)" in table[0]


def test_audit_two_systems_side_by_side(tmp_path):
    a = _mfcc_system(tmp_path / "sysA")
    out = tmp_path / "rep"
    r = CliRunner().invoke(app, ["audit", f"A={a}", f"<b>B</b>={a}", "-o", str(out), "--json"])
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)["summary"]
    assert set(summary) == {"A", "<b>B</b>"}
    # identical inputs -> identical numbers, side by side
    assert summary["A"]["attackers"] == summary["<b>B</b>"]["attackers"]
    # ... and the paired comparison finds no difference (every interval is [0, 0])
    comps = json.loads((out / "report.json").read_text())["comparisons"]
    # the verdicts' worst cases first (all trial types), then per attack type
    assert comps[0]["metric"] == "worst_case" and comps[0]["trial_type"] == "all"
    assert comps[1]["metric"] == "share_beyond" and comps[1]["trial_type"] == "all"
    assert {c["trial_type"] for c in comps[2:]} == {"oa", "aa"} and {c["metric"] for c in comps} >= {"eer_rocch", "eps_max"}
    for c in comps:
        u = c["unit"]
        assert c["better"] is None and c[f"diff_{u}"] == c[f"ci_low_{u}"] == c[f"ci_high_{u}"] == 0
    html = (out / "report.html").read_text()
    assert "<b>B</b>" not in html and "&lt;b&gt;B&lt;/b&gt;" in html
    assert all(p.name.replace(".png", "").replace("_", "").isalnum() or "-" in p.name for p in out.glob("*.png"))
    doc = json.loads((out / "report.json").read_text())
    assert len(_section(doc, "eer-vs-disclosure")["data"]["points"]) == 2
    r = CliRunner().invoke(app, ["audit", str(tmp_path / "nope"), "-o", str(tmp_path / "x")])
    assert r.exit_code == 2 and "embeddings_*.npz" in r.output


def test_same_seed_same_report(demo_report, tmp_path):
    out, doc = demo_report
    again = tmp_path / "again"
    r = CliRunner().invoke(app, ["demo", "--example", str(EXAMPLE), "-o", str(again), "-q"])
    assert r.exit_code == 0, r.output
    # report.json is one compact line: equal once the time stamp, its only varying field, is set aside
    a = json.loads((out / "report.json").read_text())
    b = json.loads((again / "report.json").read_text())
    ta, tb = a.pop("generated_at"), b.pop("generated_at")
    assert a == b
    for page in a["pages"]:  # and every page, but for the time stamp
        assert (out / page).read_text().replace(ta, "T") == (again / page).read_text().replace(tb, "T")
    for png in out.glob("*.png"):
        assert (again / png.name).read_bytes() == png.read_bytes(), png.name


def test_audit_with_transcripts_adds_utility(tmp_path):
    _need_example()
    pytest.importorskip("jiwer")
    pytest.importorskip("whisper_normalizer")
    a = _mfcc_system(tmp_path / "sys")
    (a / "transcripts").mkdir()
    (a / "transcripts" / "ref.txt").write_text("u1 the cat sat on the mat\nu2 hello world\n")
    (a / "transcripts" / "original.txt").write_text("u1 the cat sat on the mat\nu2 hello world\n")
    (a / "transcripts" / "anonymized.txt").write_text("u1 the cat sat on a mat\nu2 hello\n")
    out = tmp_path / "rep"
    r = CliRunner().invoke(app, ["audit", str(a), "-o", str(out), "-q"])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "report.json").read_text())
    pts = _section(doc, "privacy-utility")["data"]["points"]
    assert len(pts) == 1 and pts[0]["wer_original"] == 0.0
    assert pts[0]["wer_anonymized"] == pytest.approx(2 / 8)  # one substitution + one deletion of 8 words
    assert any(s["id"] == "utility" for s in doc["sections"])


def _small_system(tmp_path, n_eval, keep_cohort):
    from vpeval.io.embeddings import read_embeddings, write_embeddings

    es = read_embeddings(EXAMPLE / "embeddings_mfcc.npz")
    spk = sorted({s for s, u in zip(es.speaker_id, es.utterance_id) if u.endswith("-0009")})[:n_eval]
    cohort = {s for s in set(es.speaker_id) if not any(u.endswith("-0001") for u, t in
                                                         zip(es.utterance_id, es.speaker_id) if t == s)}
    keep = [(s in spk) or (keep_cohort and s in cohort) for s in es.speaker_id]
    d = tmp_path / f"small{n_eval}{int(keep_cohort)}"
    d.mkdir()
    write_embeddings(d / "embeddings_mfcc.npz", es.select(keep))
    return d


@pytest.mark.parametrize("n_eval, keep_cohort", [(2, False), (1, True)])
def test_audit_small_data_reports_what_cannot_be_computed(tmp_path, n_eval, keep_cohort):
    _need_example()
    d = _small_system(tmp_path, n_eval, keep_cohort)
    out = tmp_path / "rep"
    r = CliRunner().invoke(app, ["audit", str(d), "-o", str(out), "-q"])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "report.json").read_text())
    assert _section(doc, "linkage-mfcc-stats/cosine")["data"]["not_computed"]
    if n_eval < 2:  # one evaluation speaker cannot be relabelled: no verdict, and the page says why
        assert doc["verdicts"] == {} and "at least 2 evaluation speakers" in next(iter(doc["verdicts_not_decided"].values()))
        assert "no verdict" in (out / "report.html").read_text()


def test_force_keeps_foreign_files_in_a_report_folder(tmp_path):
    p = tmp_path / "s.txt"
    p.write_text("0.9 1\n0.8 1\n0.3 0\n0.1 0\n")
    out = tmp_path / "r"
    assert CliRunner().invoke(app, ["report", str(p), "-o", str(out), "-q"]).exit_code == 0
    (out / "holiday.png").write_bytes(b"x")
    r = CliRunner().invoke(app, ["report", str(p), "-o", str(out), "--force", "-q"])
    assert r.exit_code == 3 and (out / "holiday.png").exists()


def test_audit_names_that_collide_when_made_safe(tmp_path):
    a = _mfcc_system(tmp_path / "a")
    r = CliRunner().invoke(app, ["audit", f"a b={a}", f"a_b={a}", "-o", str(tmp_path / "r")])
    assert r.exit_code == 2 and "file-name safe" in r.output


def test_readme_numbers_of_the_example(demo_report):
    """Every number docs/demo.md's "What the example shows" paragraph quotes, as rounded there."""
    _, doc = demo_report
    summary = _section(doc, "summary")["data"]["systems"]["mcadams"]
    eer = {a: {t: round(100 * m["eer_rocch"], 1) for t, m in by.items()} for a, by in summary["attackers"].items()}
    assert eer["mfcc-stats/plda/anonymized"]["aa"] == 0.0 and eer["fusion/anonymized"]["aa"] == 0.0
    assert eer["mfcc-stats/cosine"]["aa"] == 3.3 and eer["resemblyzer-ge2e/cosine"]["aa"] == 6.7
    assert summary["strongest"]["aa"]["alid"]["alid_bits"] == pytest.approx(math.log2(111), abs=0.005)
    # on oa the prosody attacker beats every voice attacker (issue 29); the best voice one is resemblyzer cosine
    assert summary["strongest"]["oa"]["eer"]["attacker"] == "prosody-stats/lda/original"
    assert eer["prosody-stats/lda/original"]["oa"] == 14.2
    voice = {a: by for a, by in eer.items() if doc["attackers"][f"mcadams / {a}"]["channel"] == "voice"}
    assert min(voice, key=lambda a: (voice[a]["oa"], a)) == "resemblyzer-ge2e/cosine"
    assert eer["resemblyzer-ge2e/cosine"]["oa"] == 18.5
    trained = [by["oa"] for a, by in voice.items() if a.count("/") == 2 and not a.startswith("fusion")]
    assert (min(trained), max(trained)) == (18.7, 41.6)
    assert (eer["fusion/original"]["oa"], eer["fusion/anonymized"]["oa"]) == (23.0, 28.8)
    v = doc["verdicts"]["mcadams"]
    assert v["verdict"] == "leaks" and v["strongest_attacker"] == "mfcc-stats/plda/anonymized"
    assert v["trial_type"] == "aa" and v["p_value_familywise"] == 0.001 and v["family_size"] == 156
    w = v["worst_case"]
    assert round(w["value_bits"], 1) == 12.5 and w["at_ceiling"] and round(w["floor_bits"], 1) == 9.1
    # the numbers that decide: the profile at delta = 1 / (2 S) = 5 %
    assert v["delta"] == 0.05 and round(v["eps_low_bits"], 2) == 5.89 and v["eps_high_bits"] == "inf"
    assert v["profile"]["strongest"]["eps_low"] == ["mfcc-stats/lda/anonymized", "aa"]
    assert len(v["exposed_speakers"]) == 10 and v["average"]["eer_rocch"] == 0.0
    # the two further systems
    systems = _section(doc, "summary")["data"]["systems"]
    assert list(systems) == ["mcadams", "vtln", "resample"]
    for name, attacker, oa, aa in (("vtln", "fusion/original", 10.2, "fusion-channels/anonymized"),
                                   ("resample", "mfcc-stats/lda/original", 11.9, "fusion/anonymized")):
        st = systems[name]["strongest"]
        assert st["oa"]["eer"]["attacker"] == attacker and round(100 * st["oa"]["eer"]["eer_rocch"], 1) == oa
        assert st["aa"]["eer"]["attacker"] == aa
        assert round(100 * st["aa"]["eer"]["eer_rocch"], 1) == 0.1
        assert doc["verdicts"][name]["verdict"] == "leaks"
    assert [(round(doc["verdicts"][n]["worst_case"]["value_bits"], 1), doc["verdicts"][n]["strongest_attacker"])
            for n in ("vtln", "resample")] == [(12.4, "resemblyzer-ge2e+adapted/cosine/anonymized"),
                                               (12.4, "mfcc-stats/plda/anonymized")]
    assert [(round(doc["verdicts"][n]["eps_low_bits"], 2), doc["verdicts"][n]["profile"]["strongest"]["eps_low"])
            for n in ("vtln", "resample")] == [(7.26, ["resemblyzer-ge2e+adapted/cosine/anonymized", "aa"]),
                                               (6.11, ["fusion-channels/anonymized", "aa"])]
    shares = [c for c in doc["comparisons"] if c["metric"] == "share_beyond"]
    assert len(shares) == 3 and all(c["better"] is None and c["value_a_fraction"] > 0.998 for c in shares)
    # the channels (issue 29): the best EER per channel docs/demo.md quotes, and which channel decides
    best = {}
    for system, d in systems.items():
        for a, by in d["attackers"].items():
            ch = doc["attackers"][f"{system} / {a}"]["channel"]
            for t in ("oa", "aa"):
                best[system, ch, t] = min(best.get((system, ch, t), 1.0), by[t]["eer_rocch"])
    assert [round(100 * best["mcadams", ch, "oa"], 1) for ch in ("voice", "content", "prosody", "fused")] == [
        18.5, 27.0, 14.2, 23.2]
    assert [round(100 * best[s, "content", t], 1) for s in ("vtln", "resample") for t in ("oa", "aa")] == [
        24.8, 23.9, 28.2, 23.0]
    assert [round(100 * best[s, "prosody", "oa"], 1) for s in ("vtln", "resample")] == [21.0, 18.5]
    cv = doc["channel_verdicts"]
    assert {s: (e["voice"]["verdict"], e["all"]["verdict"], e["decides"]) for s, e in cv.items()} == {
        s: ("leaks", "leaks", "voice") for s in ("mcadams", "vtln", "resample")}
    assert all(e["caveat"].startswith("Read speech: 10 of the 10") for e in cv.values())


def test_extractor_adapted_attacker_per_system(demo_report):
    """Each system fields the adapted GE2E attacker (its own class), with its training data and a learning curve;
    the verdict says whether the strongest attacker is saturated."""
    _, doc = demo_report
    if not (EXAMPLE / "ge2e_states.npz").is_file():
        pytest.skip("the example has no cached GE2E states")
    for system in ("mcadams", "vtln", "resample"):
        name = f"{system} / resemblyzer-ge2e+adapted/cosine/anonymized"
        a = doc["attackers"][name]
        ad = a["adaptation"]
        assert ad["attacker_class"] == "semi-informed (extractor adapted)" and ad["mode"].startswith("head-only")
        assert (ad["training_speakers"], ad["training_segments"], ad["repeats_K"], ad["epochs"]) == (150, 634, 1, 0)
        curve = a["learning_curve"]
        assert {p["axis"] for p in curve["points"]} == {"speakers", "segments_per_speaker", "steps"}
        assert set(curve["last_step"]) == {"speakers", "segments_per_speaker"}
        summary = _section(doc, "summary")["data"]["systems"][system]
        classes = summary["attacker_class"]["resemblyzer-ge2e+adapted/cosine/anonymized"]
        assert classes["aa"] == "semi-informed (extractor adapted)"
        assert summary["attacker_class"]["resemblyzer-ge2e/plda/anonymized"]["aa"] == "semi-informed (back-end)"
        v = doc["verdicts"][system]
        assert isinstance(v["attacker_saturated"], bool)
        strongest = [k for k, x in doc["attackers"].items()
                     if k.startswith(f"{system} / ") and x.get("learning_curve", {}).get("strongest")]
        assert len(strongest) == 1 and v["saturation"]["attacker"] == strongest[0].split(" / ", 1)[1]
        assert (v["attacker_saturated"] is False) == any("may not be saturated" in w for w in v["warnings"])


def test_readme_adapted_vs_backend_eers(demo_report):
    """docs/demo.md's adaptation table: the adapted attacker's ROCCH-EER and the best GE2E back-end trained on
    anonymized speech, per system and attack type, as rounded there (the intervals come from
    benchmarks/adapted_vs_backend.py)."""
    _, doc = demo_report
    if not (EXAMPLE / "ge2e_states.npz").is_file():
        pytest.skip("the example has no cached GE2E states")
    systems = _section(doc, "summary")["data"]["systems"]
    got = {}
    for system, data in systems.items():
        att = data["attackers"]
        for t in ("oa", "aa"):
            adapted = round(100 * att["resemblyzer-ge2e+adapted/cosine/anonymized"][t]["eer_rocch"], 1)
            backend = min(round(100 * by[t]["eer_rocch"], 1) for a, by in att.items()
                          if a.startswith("resemblyzer-ge2e/") and a.endswith("/anonymized"))
            got[system, t] = (adapted, backend)
    assert got == {("mcadams", "oa"): (21.6, 31.2), ("mcadams", "aa"): (1.9, 3.2),
                   ("vtln", "oa"): (11.5, 11.2), ("vtln", "aa"): (1.3, 1.7),
                   ("resample", "oa"): (16.3, 18.9), ("resample", "aa"): (0.6, 0.8)}


def test_demo_report_json_keeps_no_derived_arrays_and_they_come_back(demo_report):
    """Schema 2.3 (issue 27: every number, no duplicated arrays): the rank and linkage sections store gamma, not
    the per-rank arrays, CMC or closed-set linkability; those recomputed from gamma agree with the stored numbers."""
    from vpeval.report.disclosure import RANK_DERIVED, rank_condition_arrays
    from vpeval.report.linkage import linkage_condition_arrays

    _, doc = demo_report
    ranks = links = 0
    for sec in doc["sections"]:
        for cond in (sec["data"].get("conditions") or {}).values():
            if "-rank-" in sec["id"]:
                assert not set(RANK_DERIVED) & set(cond) and "gamma" not in cond["laplace"]
                back = rank_condition_arrays(cond)
                # report.json stores 10 significant digits (schema 3.2)
                assert max(back["per_rank_bits"]) == pytest.approx(cond["max_d_bits"], rel=1e-9)
                assert max(abs(x) for x in back["laplace"]["rank_llr_nats"]) == pytest.approx(
                    cond["laplace"]["rank_eps_max_nats"], rel=1e-9)
                ranks += 1
            elif "-linkage-" in sec["id"]:
                assert "cmc" not in cond["identification"] and "closed_set_linkability" not in cond
                back = linkage_condition_arrays(cond)
                ident = cond["identification"]
                assert back["cmc"][0] == ident["rates"]["rank1"] and back["cmc"][-1] == 1.0
                assert back["closed_set_linkability"]["linkability"][-1] == pytest.approx(ident["gamma"][0], abs=1e-12)
                links += 1
    assert ranks >= 3 * 3 * 16 and links == ranks
