"""`vpeval demo` on the ladder example (examples/ladder): six systems from no anonymization to a voice replaced
outright, 67 evaluation speakers; what its report.json must show (issue 46, items 5 and 6), and the example's own
consistency (roles, rows, channels)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

from vpeval.io.embeddings import read_embeddings
from vpeval.pipeline.adapt_head import read_states
from vpeval.report.writer import resolve_refs

LADDER = Path(__file__).resolve().parents[1] / "examples" / "ladder"
ORDER = ["none", "resample", "mcadams", "vtln", "pseudo-speaker", "asr-tts"]


def _need_ladder():
    if not (LADDER / "systems.csv").is_file():
        pytest.skip("the ladder example is missing")


@pytest.fixture(scope="module")
def ladder(ladder_run):
    out, output = ladder_run
    return out, output, resolve_refs(json.loads((out / "report.json").read_text()))


# --- the example itself (no demo run) ------------------------------------------------------------------------


def test_systems_listed_in_ladder_order_each_with_its_files():
    _need_ladder()
    with open(LADDER / "systems.csv", newline="") as fh:
        assert [r["system"] for r in csv.DictReader(fh)] == ORDER
    for s in ORDER:
        for f in ("embeddings_mfcc.npz", "embeddings_resemblyzer.npz", "metadata.csv", "ge2e_states.npz",
                  "train/embeddings_mfcc.npz", "train/embeddings_resemblyzer.npz", "train/metadata.csv",
                  "train/ge2e_states.npz"):
            assert (LADDER / s / f).is_file(), (s, f)


def test_roles_disjoint_with_the_counts_the_readme_gives():
    _need_ladder()
    ev = read_embeddings(LADDER / "none" / "embeddings_mfcc.npz")
    tr = read_embeddings(LADDER / "none" / "train" / "embeddings_mfcc.npz")
    orig = ev.select(ev.condition == "original")
    spk, n_utt = np.unique(orig.speaker_id, return_counts=True)
    evaluation, distractors = set(spk[n_utt >= 2]), set(spk[n_utt == 1])
    training = set(tr.speaker_id)
    assert (len(evaluation), len(distractors), len(training)) == (67, 44, 150)
    assert not (evaluation & training) and not (distractors & training) and not (evaluation & distractors)
    # the 57 one-utterance speakers on the evaluation side: 3 s segments of one recording, 3 to 5 each
    segs = orig.utterance_id[np.char.find(orig.utterance_id.astype(str), "-s") > 0]
    seg_spk, per = np.unique([u.split("-")[0] for u in segs], return_counts=True)
    assert len(seg_spk) == 57 and per.min() == 3 and per.max() == 5 and len(segs) == 232


def test_rows_agree_across_systems_files_and_conditions():
    _need_ladder()
    ref = read_embeddings(LADDER / "none" / "embeddings_resemblyzer.npz")
    ref_o = ref.select(ref.condition == "original")
    for s in ORDER:
        for ext in ("mfcc", "resemblyzer"):
            es = read_embeddings(LADDER / s / f"embeddings_{ext}.npz")
            o = es.select(es.condition == "original")
            # every system holds the same original rows (the same audio, the same extractor)
            np.testing.assert_array_equal(o.utterance_id, ref_o.utterance_id)
            if ext == "resemblyzer":
                np.testing.assert_allclose(o.embeddings, ref_o.embeddings, rtol=0, atol=1e-6)
            a = es.select(es.condition == "anonymized")
            np.testing.assert_array_equal(a.utterance_id, o.utterance_id)
            keyed = s not in ("none", "asr-tts")
            assert int(np.sum(es.condition == "anonymized@p2")) == (len(o) if keyed else 0), s
        st = read_states(LADDER / s / "ge2e_states.npz")
        assert set(st.condition) == {"original", "anonymized"}
        assert sorted(st.utterance_id[st.condition == "original"]) == sorted(ref_o.utterance_id)
        with open(LADDER / s / "metadata.csv", newline="") as fh:
            meta = list(csv.DictReader(fh))
        assert len(meta) == len(read_embeddings(LADDER / s / "embeddings_mfcc.npz"))
    none = read_embeddings(LADDER / "none" / "embeddings_mfcc.npz")
    np.testing.assert_array_equal(none.embeddings[none.condition == "anonymized"],
                                  none.embeddings[none.condition == "original"])  # no anonymization at all


def test_channels_cover_every_system_and_the_voice_rows():
    _need_ladder()
    from vpeval.audio.asr.transcripts import read_transcripts

    ch = LADDER / "channels"
    ev = read_embeddings(LADDER / "none" / "embeddings_mfcc.npz")
    utts = set(ev.utterance_id[ev.condition == "original"])
    for s in ["original", *ORDER]:
        assert set(read_transcripts(ch / f"text_{s}")) == utts, s
        with open(ch / f"prosody_{s}.csv", newline="") as fh:
            assert {r["utterance_id"] for r in csv.DictReader(fh)} == utts, s
    # one synthetic voice says what was recognised: the words survive ASR -> TTS -> ASR mostly unchanged
    import jiwer

    ref, hyp = read_transcripts(ch / "text_original"), read_transcripts(ch / "text_asr-tts")
    keys = sorted(u for u in ref if ref[u].strip())
    assert jiwer.wer([ref[u] for u in keys], [hyp[u] or "-" for u in keys]) < 0.5


# --- the demo's report --------------------------------------------------------------------------------------


def _bits(x) -> float:
    return math.inf if x in ("inf", "Infinity") else float(x)


def test_every_system_has_a_verdict_and_the_original_speech_leaks(ladder):
    _, output, doc = ladder
    assert list(doc["verdicts"]) == ORDER
    assert doc["verdicts"]["none"]["verdict"] == "leaks"
    for s in ORDER:
        v = doc["verdicts"][s]
        assert _bits(v["eps_low_bits"]) <= _bits(v["eps_bits"]) <= _bits(v["eps_high_bits"]), s
        assert v["delta"] == pytest.approx(1 / (2 * 67))  # the default: half of one speaker's share
    # the signal-processing systems leak too; the two that replace the voice are not shown beyond the budget
    for s in ("resample", "mcadams", "vtln"):
        assert doc["verdicts"][s]["verdict"] == "leaks", s
    for s in ("pseudo-speaker", "asr-tts"):
        assert doc["verdicts"][s]["verdict"] != "leaks", s
    assert "report written to" in output


def test_terminal_leads_with_the_share_and_ends_with_the_answer(ladder):
    """The terminal orders the comparison as the page does (the share beyond the budget and the order line
    first), and after the long evidence says the verdicts and the order again, in one line before the path."""
    _, output, doc = ladder
    flat = " ".join(output.split())
    share, worst = flat.index("(share of trials beyond the budget, points)"), flat.index("(verdict's worst case, bits)")
    assert flat.index("order by the share of trials beyond the budget") < share < worst
    recap = flat[flat.rindex("In short: "):flat.rindex("report written to")]
    assert [part.split()[0] for part in recap[len("In short: "):].split(". Order")[0].split("; ")] == ORDER
    for s in ORDER:
        assert f"{s} {doc['verdicts'][s]['verdict']}" in recap
    order = next(x for x in doc["sections"] if x["id"] == "comparisons")["data"]["order_line"]
    assert " ".join(order.split()) in recap


def test_every_table_title_is_printed_whole(ladder):
    """Each system's EER table and scorecard keep their whole title on the 80-column terminal (rich wrapped a
    table's own title at the table's width and lost part of a long one: 'ROCCH-EER, oao interpolated EER')."""
    _, output, _ = ladder
    flat = " ".join(output.split())
    for s in ORDER:
        assert (f"{s}: EER (%) per attacker and trial type (ideal in header; ROCCH-EER, oaoo and oaaa interpolated "
                "EER)") in flat, s
        assert f"{s}: scorecard over attackers (evidence; EER ideal 50 %, disclosure ideal 0)" in flat, s
    titles = [line for line in output.splitlines() if "per attacker and trial type" in line or "scorecard over" in line]
    assert len(titles) >= 2 * len(ORDER) and max(len(line) for line in titles) <= 80


def test_the_comparison_table_gives_the_shares_with_the_order_lines_digits(ladder):
    """The share rows of the paired table give A and B as the order line does (99.98, not 100 beside 99.2 and an
    A - B of 0.737, which read as a wrong subtraction)."""
    import re

    out, _, doc = ladder
    order = next(x for x in doc["sections"] if x["id"] == "comparisons")["data"]["order_line"]
    page = (out / "report.html").read_text()
    cells = set(re.findall(r"<td[^>]*>([^<]*)</td>", page))
    for value in re.findall(r"\(([0-9.]+) %\)", order):
        assert value in cells, value


def test_asr_tts_voice_channel_certified_or_the_plan_says_how_much_data(ladder):
    _, _, doc = ladder
    voice = doc["channel_verdicts"]["asr-tts"]["voice"]
    if voice["verdict"] != "protects":
        # not certified: the verdict says how much more data a certificate would take at least
        assert voice["verdict"] in ("partial", "inconclusive"), voice["sentence"]
        assert (voice["plan"] is not None and voice["plan"]["factor"] > 1) or "10,000" in voice["reason"]
        assert "times these data" in voice["plain"] or "10,000" in voice["reason"]
    # beside it, the content channel (the words are kept): its attacker is fielded and the sentence says who decides
    cv = doc["channel_verdicts"]["asr-tts"]
    assert cv["channels"].get("content", 0) >= 1 and cv["sentence"]


def test_the_order_the_construction_implies_holds_beyond_the_paired_interval(ladder):
    """Issue 46 item 6: the original speech discloses most and ASR -> TTS least; the profile's comparison (the
    share of trials beyond the budget, paired speaker bootstrap, 95 %) agrees beyond its interval, and the voice
    channel's lower bound of ASR -> TTS is the smallest of the ladder."""
    _, _, doc = ladder
    comp = {(c["system_a"], c["system_b"]): c for c in doc["comparisons"]
            if c["metric"] == "share_beyond" and c["trial_type"] == "all"}

    def better(x, y):
        c = comp.get((x, y)) or comp.get((y, x))
        assert c is not None, (x, y)
        return c["better"]

    for s in ORDER[1:]:
        assert better("none", s) == s, s
    for s in ORDER[:-1]:
        assert better(s, "asr-tts") == "asr-tts", s
    for s in ("none", "resample", "mcadams", "vtln"):  # a pseudo-voice per speaker hides more than a modified voice
        assert better(s, "pseudo-speaker") == "pseudo-speaker", s
    # the report says the order in one line: the ladder reversed, every step but among the three signal-processing
    # systems beyond its interval
    sec = next(x for x in doc["sections"] if x["id"] == "comparisons")["data"]
    assert sec["order"][0] == "asr-tts" and sec["order"][1] == "pseudo-speaker" and sec["order"][-1] == "none"
    assert sec["order_line"].count("<") == 3 and sec["order_line"].count("~") == 2
    low = {s: _bits(doc["channel_verdicts"][s]["voice"]["eps_low_bits"]) for s in ORDER}
    assert low["asr-tts"] == min(low.values())


def test_trial_type_table_over_the_ladder(ladder):
    _, _, doc = ladder
    beyond = next(s for s in doc["sections"] if s["id"] == "summary")["data"]["beyond_eer"]
    assert list(beyond) == ORDER
    for s in ORDER:
        assert {"oaoa", "oaoo", "oaaa", "aaaa"} <= set(beyond[s]), s
    # the keyed systems ran twice (profile key p2): their cross-profile column is filled; none and asr-tts: one run
    for s in ("resample", "mcadams", "vtln", "pseudo-speaker"):
        assert "cross-profile" in beyond[s], s
    for s in ("none", "asr-tts"):
        assert "cross-profile" not in beyond[s], s


def test_readme_ladder_table_is_the_demos(ladder):
    """README's ladder table is what examples/ladder/ladder_table.py prints from the demo's report."""
    import importlib.util

    _, _, doc = ladder
    spec = importlib.util.spec_from_file_location("ladder_table", LADDER / "ladder_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    readme = (LADDER.parents[1] / "README.md").read_text()
    assert mod.table(doc) in readme


# --- regeneration of one speaker's rows from the audio ---------------------------------------------------------


def test_regenerating_one_speaker_reproduces_its_mcadams_rows(tmp_path):
    """make_ladder.py's stages on one added evaluation speaker (3 segments): its McAdams rows, both runs, both
    extractors and the GE2E states, match the shipped ones (the tolerance of ../librispeech-mini's regeneration
    test: float32 storage and 16-bit audio)."""
    _need_ladder()
    pytest.importorskip("resemblyzer", reason="the resemblyzer embeddings need the embed extra")
    from conftest import SHARED

    data = SHARED / "data" / "librispeech-mini"
    if not (data / "speakers.csv").is_file():
        pytest.skip("../shared/data/librispeech-mini is absent")
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_ladder", LADDER / "make_ladder.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    work = tmp_path / "work"
    base = ["--data", str(data), "--work", str(work), "--quiet"]
    assert mod.main(["sources", "--speakers", "7148", *base]) == 0
    assert sorted(p.name for p in (work / "src" / "new").iterdir()) == [
        f"7148-59157-0000-s0{k}.flac" for k in range(3)]
    assert mod.main(["anonymize", "mcadams", *base]) == 0
    # the original rows come from the 'original' stage: only its new segments here
    assert mod.main(["compute", "original", *base]) == 0
    assert mod.main(["compute", "mcadams", *base]) == 0
    for ext in ("mfcc", "resemblyzer"):
        old = read_embeddings(LADDER / "mcadams" / f"embeddings_{ext}.npz")
        index = {(u, c): i for i, (u, c) in enumerate(zip(old.utterance_id, old.condition))}
        for name in ("original:new", "anonymized:new", "anonymized@p2:new"):
            new = read_embeddings(work / "emb" / ("original" if name.startswith("original") else "mcadams")
                                  / f"{name}.{ext}.npz")
            rows = [index[(u, c)] for u, c in zip(new.utterance_id, new.condition)]
            assert len(rows) == 3
            np.testing.assert_allclose(new.embeddings, old.embeddings[rows], rtol=1e-4, atol=1e-3)
    st_old = read_states(LADDER / "mcadams" / "ge2e_states.npz")
    st_new = read_states(work / "emb" / "mcadams" / "anonymized:new.states.npz")
    idx = {(u, c): i for i, (u, c) in enumerate(zip(st_old.utterance_id, st_old.condition))}
    rows = [idx[(u, c)] for u, c in zip(st_new.utterance_id, st_new.condition)]
    np.testing.assert_allclose(st_new.states, st_old.states[rows], rtol=1e-2, atol=2e-3)  # float16 storage


def test_docs_demo_quotes_the_ladder_as_measured(ladder):
    """docs/demo.md's ladder section: the shares beyond the budget and the plans' range it quotes, as rounded there."""
    _, _, doc = ladder
    text = (LADDER.parents[1] / "docs" / "demo.md").read_text()
    share = {}
    for c in doc["comparisons"]:
        if c["metric"] == "share_beyond" and c["trial_type"] == "all":
            share[c["system_a"]], share[c["system_b"]] = c["value_a_fraction"], c["value_b_fraction"]
    assert f"none ({share['none']:.4f})" in text
    assert f"pseudo-speaker ({share['pseudo-speaker']:.2f})" in text
    assert f"ASR + TTS ({share['asr-tts']:.3f})" in text
    sp = sorted(share[s] for s in ("resample", "mcadams", "vtln"))
    assert f"({sp[0]:.3f}-{sp[-1]:.3f}," in text
    plans = [doc["verdicts"][s]["plan"] for s in ("pseudo-speaker", "asr-tts")]
    plans += [doc["channel_verdicts"][s]["voice"]["plan"] for s in ("pseudo-speaker", "asr-tts")]
    factors = [p["factor"] for p in plans]
    assert 110 <= min(factors) and max(factors) <= 125 and "about 110-125 times these data" in text
    probes = [p["probes_per_speaker"] for p in plans]
    assert f"about {min(probes)}-{5 * round(max(probes) / 5)} probes per speaker" in text


def test_each_system_is_read_against_the_population_size(ladder):
    """Issue 50: one section per system with its strongest search's curves on original and anonymized speech,
    extrapolated beyond the 111 enrolled speakers; with no anonymization both conditions are the same speech."""
    _, _, doc = ladder
    secs = {s["id"]: s["data"] for s in doc["sections"] if s["id"].endswith("-population")}
    assert set(secs) == {f"{s}-population" for s in ORDER}
    for s, d in ((s, secs[f"{s}-population"]) for s in ORDER):
        assert set(d["curves"]) == {"oo", "oa"} and d["attacker"] in d["sentence"], s
        oa = d["curves"]["oa"]
        assert oa["sizes"][-1] == 1_000_000 and oa["measured"][-1] is False, s
        assert all(lo <= e <= hi for lo, e, hi in zip(oa["rank1_low"], oa["rank1"], oa["rank1_high"])), s
    none = secs["none-population"]["curves"]
    assert none["oo"]["rank1"][:3] == pytest.approx(none["oa"]["rank1"][:3], abs=0.05)
    at_n = {s: secs[f"{s}-population"]["curves"]["oa"]["rank1"][secs[f"{s}-population"]["curves"]["oa"]["sizes"]
                                                               .index(111)] for s in ORDER}
    assert at_n["none"] > at_n["mcadams"] > at_n["asr-tts"]  # the ladder's order, searching all 111 speakers


def test_docs_quote_the_summed_recordings_as_measured(ladder):
    """docs/beyond.md says summing two recordings lowers ALID on the demo's resampled speech, against single
    probes of the same speakers, with the numbers of this report: they must be the report's."""
    import re

    _, _, doc = ladder
    text = " ".join((Path(__file__).resolve().parents[1] / "docs" / "beyond.md").read_text(encoding="utf-8").split())
    n, one, summed, averaged = re.search(r"resample, on the same (\d+) speakers: (\d+\.\d+) bits for single "
                                         r"probes, (\d+\.\d+) for two summed, (\d+\.\d+) for two averaged",
                                         text).groups()
    sec = next(s for s in doc["sections"] if s["id"] == "resample-population")
    c = sec["data"]["combined_probes"]
    assert c["ks"][1] == 2 and c["n_speakers"][1] == int(n)
    got = (c["alid_one_bits"][1], c["rows"]["sum"]["alid_bits"][1], c["rows"]["mean"]["alid_bits"][1])
    assert tuple(round(v, 2) for v in got) == (float(one), float(summed), float(averaged))
    assert got[1] < got[0] < got[2]
