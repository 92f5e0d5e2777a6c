"""Content and prosody attack channels: the text verifier, the prosody statistics, channels in the audit."""

from __future__ import annotations

import numpy as np
import pytest

from vpeval.backends.text import TextVectorizer, normalise_text
from vpeval.errors import VpevalError
from vpeval.metrics.verification import interp_eer
from vpeval.pipeline import build_trials, make_attackers
from vpeval.pipeline.attackers import channel_of
from vpeval.pipeline.channels import content_sets, feature_sets, shared_chapters, split_channels

TOPICS = {
    "ships": "sail harbour captain anchor deck mast wave storm crew voyage port rope tide",
    "farm": "cow barn field harvest wheat plough tractor hay sheep fence orchard seed soil",
    "law": "judge court trial jury verdict witness lawyer appeal sentence evidence crime guilty bail",
    "music": "violin piano melody chord orchestra song rhythm singer opera tune concert drum choir",
    "kitchen": "bread oven butter flour soup knife spoon recipe salt pepper onion garlic stew",
    "space": "planet rocket orbit star moon comet galaxy astronaut launch telescope gravity comet sun",
    "forest": "tree oak pine moss fern deer owl trail river leaf branch bark squirrel",
    "school": "teacher pupil lesson chalk desk exam homework library pencil grade class bell ruler",
}
FILLER = "the a of and to in it was he she they with on at for"


def _sentence(rng, topic: str, n_topic: int = 7, n_fill: int = 3) -> str:
    words = list(rng.choice(TOPICS[topic].split(), n_topic)) + list(rng.choice(FILLER.split(), n_fill))
    return " ".join(rng.permutation(words))


def _corpus(seed: int, speakers, n_utt: int, prefix: str):
    """Each speaker talks about their own topic: ``{utterance id: text}``, ``{utterance id: speaker}``."""
    rng = np.random.default_rng(seed)
    texts, spk = {}, {}
    for s, topic in speakers:
        for k in range(n_utt):
            u = f"{prefix}{s}-1-{k:04d}"
            texts[u], spk[u] = _sentence(rng, topic), f"{prefix}{s}"
    return texts, spk


def _content_eer(eval_texts, train_texts, spk, trial_type="oa"):
    ev, tr = content_sets(eval_texts, train_texts, spk)
    (att,) = make_attackers({ev.extractor: ev}, backends=["cosine"])
    t = att.build_trials([trial_type])[trial_type]
    return interp_eer(t.scores[t.is_target], t.scores[~t.is_target]), att


def _eval_setup(seed=0):
    topics = list(TOPICS)
    # evaluation: 8 speakers, one topic each; training: 8 other speakers on the same topics
    ev_texts, ev_spk = _corpus(seed, [(f"{i}", topics[i]) for i in range(8)], 6, "e")
    tr_texts, tr_spk = _corpus(seed + 1, [(f"{i}", topics[i]) for i in range(8)], 3, "t")
    rng = np.random.default_rng(seed + 2)
    # the "anonymized" transcript: the same words with some recognition errors (a word dropped)
    anon = {u: " ".join(w for w in t.split() if rng.random() > 0.1) for u, t in ev_texts.items()}
    return {"original": ev_texts, "anonymized": anon}, {"original": tr_texts}, {**ev_spk, **tr_spk}


def test_normalise_text_hand_made():
    assert normalise_text("Hello, WORLD!") == normalise_text("hello   world") == "hello world"
    assert normalise_text("") == ""


def test_content_attacker_separates_speakers_with_distinct_texts():
    ev, tr, spk = _eval_setup()
    eer, att = _content_eer(ev, tr, spk)
    assert att.channel == "content"
    assert eer < 0.05


def test_content_attacker_reads_chance_on_shuffled_transcripts():
    """Permutation check: the same transcripts, shuffled across utterances (speakers), carry no identity; the
    EER over 20 shuffles averages near 1/2, far from the unshuffled EER (this fails if the protocol or the
    vectorizer leaked the utterance ids or the speakers)."""
    ev, tr, spk = _eval_setup()
    utts = sorted(ev["original"])
    eers = []
    for seed in range(20):
        perm = np.random.default_rng(seed).permutation(len(utts))
        shuffled = {c: {u: ev[c][utts[p]] for u, p in zip(utts, perm)} for c in ev}
        eers.append(_content_eer(shuffled, tr, spk)[0])
    assert 0.4 < np.mean(eers) < 0.6
    assert min(eers) > 0.2


def test_content_sets_do_not_depend_on_input_order_and_fit_on_training_only():
    ev, tr, spk = _eval_setup()
    a_ev, a_tr = content_sets(ev, tr, spk)
    rev = {c: dict(reversed(list(d.items()))) for c, d in reversed(list(ev.items()))}
    b_ev, b_tr = content_sets(rev, {c: dict(reversed(list(d.items()))) for c, d in tr.items()}, spk)
    np.testing.assert_array_equal(a_ev.embeddings, b_ev.embeddings)
    np.testing.assert_array_equal(a_ev.utterance_id, b_ev.utterance_id)
    # a word never seen in training has no coordinate: adding it to an evaluation text changes nothing
    ev2 = {c: dict(d) for c, d in ev.items()}
    u = sorted(ev2["original"])[0]
    ev2["original"][u] += " zyzzyva"
    c_ev, _ = content_sets(ev2, tr, spk)
    i = int(np.flatnonzero((c_ev.utterance_id == u) & (c_ev.condition == "original"))[0])
    w = TextVectorizer().fit(list(tr["original"].values()))
    assert "zyzzyva" not in w._word.vocabulary_
    np.testing.assert_allclose(np.linalg.norm(c_ev.embeddings, axis=1), 1.0)
    assert c_ev.embeddings.shape == a_ev.embeddings.shape
    # only character n-grams of the new word can match; the word block is unchanged
    nw = len(w._word.vocabulary_)
    x, y = c_ev.embeddings[i, :nw], a_ev.embeddings[i, :nw]
    np.testing.assert_allclose(x / np.linalg.norm(x), y / np.linalg.norm(y))


def test_empty_transcript_is_a_unit_vector():
    w = TextVectorizer().fit(["a cat sat", "the dog ran"])
    x = w.transform(["", "a cat sat"])
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0)
    assert x[0] @ x[1] < 2e-3


def test_text_vectorizer_errors():
    with pytest.raises(VpevalError):
        TextVectorizer().fit(["only one"])
    with pytest.raises(VpevalError):
        TextVectorizer().fit(["", "  "])
    with pytest.raises(VpevalError):
        TextVectorizer().transform(["x"])
    with pytest.raises(VpevalError):
        TextVectorizer(min_df=0)


def test_channel_names():
    assert [channel_of(x) for x in ("content-tfidf", "prosody-stats", "resemblyzer-ge2e", "fusion-channels")] == [
        "content", "prosody", "voice", "fused"]
    voice, other = split_channels({"mfcc-stats": 1, "content-tfidf": 2, "prosody-stats": 3})
    assert list(voice) == ["mfcc-stats"] and sorted(other) == ["content-tfidf", "prosody-stats"]
    with pytest.raises(VpevalError):
        content_sets({}, {}, {}, name="mfcc")


def test_feature_sets_standardise_with_training_statistics_and_ignore_order():
    rng = np.random.default_rng(0)
    tr = {"original": {f"t{i}-1-{k}": rng.normal([100.0, 0.0], [10.0, 1.0]) for i in range(5) for k in range(3)}}
    ev = {"original": {f"e{i}-1-{k}": rng.normal([100.0, 0.0], [10.0, 1.0]) for i in range(3) for k in range(2)}}
    spk = lambda u: u.split("-")[0]  # noqa: E731
    e1, t1 = feature_sets(ev, tr, spk)
    np.testing.assert_allclose(t1.embeddings.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(t1.embeddings.std(axis=0), 1.0)
    e2, t2 = feature_sets({"original": dict(reversed(list(ev["original"].items())))},
                          {"original": dict(reversed(list(tr["original"].items())))}, spk)
    np.testing.assert_array_equal(e1.embeddings, e2.embeddings)
    with pytest.raises(VpevalError):
        feature_sets(ev, {"original": {"t0-1-0": np.array([1.0])}}, spk)
    with pytest.raises(VpevalError):
        feature_sets(ev, tr, spk, name="mfcc")


def test_shared_chapters():
    from vpeval.io.embeddings import EmbeddingSet

    utt = ["1-10-0000", "1-10-0001", "2-20-0000", "2-21-0000", "3-30-0000", "x"]
    spk = ["1", "1", "2", "2", "3", "9"]
    es = EmbeddingSet(np.eye(6), utt, spk, ["original"] * 6, "mfcc")
    assert shared_chapters(es) == (2, 1)


def test_trials_of_content_channel_score_same_pairs_as_voice():
    """The content attacker scores exactly the voice attackers' trials (same protocol from the same ids)."""
    from vpeval.io.embeddings import EmbeddingSet

    ev, tr, spk = _eval_setup()
    cev, _ = content_sets(ev, tr, spk)
    rng = np.random.default_rng(3)
    voice = EmbeddingSet(rng.normal(size=(len(cev), 8)), cev.utterance_id, cev.speaker_id, cev.condition, "mfcc")
    a = build_trials(cev, ["oa", "aa"])
    b = build_trials(voice, ["oa", "aa"])
    for t in ("oa", "aa"):
        np.testing.assert_array_equal(a[t].enroll, b[t].enroll)
        np.testing.assert_array_equal(a[t].test, b[t].test)


def _channel_audit_inputs(seed=0):
    """Voice, content and prosody rows of 8 evaluation and 8 training speakers (original + anonymized)."""
    from vpeval.io.embeddings import EmbeddingSet

    rng = np.random.default_rng(seed)
    topics = list(TOPICS)
    ev_txt, ev_spk = _corpus(seed, [(f"{i}", topics[i]) for i in range(8)], 4, "e")
    # training speakers share topics in pairs and their voices overlap: the fusions' training trials are not separable
    tr_txt, tr_spk = _corpus(seed + 1, [(f"{i}", topics[i // 2]) for i in range(8)], 3, "t")
    spk = {**ev_spk, **tr_spk}

    def rows(utts, d, scale, anon_noise):
        centre = {s: rng.normal(size=d) for s in sorted(set(spk[u] for u in utts))}
        x = {"original": {u: centre[spk[u]] + scale * rng.normal(size=d) for u in utts}}
        x["anonymized"] = {u: 0.3 * v + anon_noise * rng.normal(size=d) for u, v in x["original"].items()}
        return x

    def as_set(x, name):
        u = [k for c in sorted(x) for k in sorted(x[c])]
        c = [c for c in sorted(x) for _ in sorted(x[c])]
        return EmbeddingSet(np.array([x[cc][uu] for uu, cc in zip(u, c)]), u, [spk[k] for k in u], c, name)

    ev_u, tr_u = sorted(ev_txt), sorted(tr_txt)
    sets = {"mfcc-stats": as_set(rows(ev_u, 6, 0.5, 2.0), "mfcc-stats")}
    train = {"mfcc-stats": as_set(rows(tr_u, 6, 1.5, 2.0), "mfcc-stats")}
    ce, ct = content_sets({"original": ev_txt, "anonymized": ev_txt}, {"original": tr_txt}, spk)
    pe, pt = feature_sets(rows(ev_u, 4, 0.5, 0.2), rows(tr_u, 4, 1.5, 0.5), spk)
    sets.update({ce.extractor: ce, pe.extractor: pe})
    train.update({ct.extractor: ct, pt.extractor: pt})
    return sets, train


def test_audit_fields_channel_attackers_and_decides_per_channel():
    from vpeval.analysis.audit import audit

    sets, train = _channel_audit_inputs()
    res = audit({"sys": sets}, train={"sys": train}, types=("oo", "oa", "aa"), n_boot=20, n_perm=20,
                verdict_perm=49, compare=False, group_by=None,
                backends=("cosine", "centred-cosine", "lda"))
    att = res.to_dict()["attackers"]
    chans = {name: a["channel"] for name, a in att.items()}
    assert chans["mfcc-stats/cosine"] == "voice"
    assert chans["content-tfidf/centred-cosine/original"] == "content"
    # one back-end per non-voice channel: centred cosine for content, LDA for prosody
    assert sorted(n for n, c in chans.items() if c in ("content", "prosody")) == [
        "content-tfidf/centred-cosine/original", "prosody-stats/lda/anonymized", "prosody-stats/lda/original"]
    assert chans["prosody-stats/lda/anonymized"] == "prosody"
    assert chans["fusion/original"] == "voice"  # the voice fusion fuses the voice channel only
    assert chans["fusion-channels/original"] == "fused"
    assert sorted(att["fusion-channels/original"]["members"]) == [
        "content-tfidf/centred-cosine/original", "mfcc-stats/centred-cosine/original", "mfcc-stats/lda/original",
        "prosody-stats/lda/original"]
    assert sorted(att["fusion-channels/anonymized"]["members"]) == [
        "mfcc-stats/centred-cosine/anonymized", "mfcc-stats/lda/anonymized", "prosody-stats/lda/anonymized"]
    # content was trained on original text only (no anonymized training transcripts), with a note
    assert any("content-tfidf: no training rows of anonymized" in n for n in res.systems["sys"].notes)
    cv = res.to_dict()["channel_verdicts"]["sys"]
    assert cv["voice"] is not None and cv["all"]["verdict"] == res.verdicts["sys"]["verdict"]
    w, wv = res.verdicts["sys"]["worst_case"]["value_bits"], cv["voice"]["worst_case"]["value_bits"]
    # a channel decides by changing the verdict or raising the worst case as shown (3 significant digits)
    above = cv["voice"]["verdict"] != cv["all"]["verdict"] or (w > wv + 1e-9 and f"{w:.3g}" != f"{wv:.3g}")
    assert cv["decides"] == (chans[res.verdicts["sys"]["worst_case"]["attacker"]] if above else "voice")
    # the voice-only verdict looked at voice attackers only
    assert chans[cv["voice"]["worst_case"]["attacker"]] == "voice"
    assert cv["decides"] in cv["sentence"]
    # extractor-level analyses are for the voice only
    assert set(res.systems["sys"].structure) == {"mfcc-stats"}
    # the first screen (the verdict section) shows both verdicts and the deciding channel's sentence
    from vpeval.report.audit import render_audit
    from vpeval.report.document import Paragraph, Table

    rep = render_audit(res)
    first = rep.sections[0]
    assert first.id == "verdict"
    tables = [b for b in first.blocks if isinstance(b, Table)]
    assert tables[1].columns[:4] == ["system", "voice channel", "worst case voice (bits)", "all channels"]
    assert any(isinstance(b, Paragraph) and b.text == cv["sentence"] for b in first.blocks)
    assert rep.extra["channel_verdicts"]["sys"]["decides"] == cv["decides"]
    assert rep.extra["attackers"]["prosody-stats/lda/original"]["channel"] == "prosody"
    # the voice verdict comes from the all-channel test's voice sub-family (same relabellings), and equals the
    # verdict of the voice attackers tested on their own (speaker relabelling: bit for bit)
    from vpeval.analysis.channels import channel_verdicts

    # (at the family's number of relabellings: a family-wise p-value near alpha draws ten times as many)
    sub = res.tests["sys"].subfamilies["voice"]
    alone = channel_verdicts(res.systems, res.verdicts, n_perm=sub.n_perm, n_boot=20, seed=0)["sys"]["voice"]
    assert sub.scheme == "speaker"
    assert cv["voice"] == alone


def test_read_speech_caveat_when_speakers_read_one_chapter():
    """The synthetic ids are <speaker>-1-<n>: every speaker reads one chapter, so the caveat is given."""
    from vpeval.analysis.channels import _content_caveat
    from vpeval.pipeline.audit import field_attackers

    sets, train = _channel_audit_inputs()
    attackers, _ = field_attackers(sets, {}, backends=("cosine",))

    class R:  # the attackers are all the caveat reads
        pass

    r = R()
    r.attackers = {a.name: a for a in attackers}
    assert "one chapter" in _content_caveat(r)
    content = sets["content-tfidf"]
    renamed = content.__class__(content.embeddings, [u.replace("-1-", f"-{i % 3}-") for i, u in
                                                     enumerate(content.utterance_id)],
                                content.speaker_id, content.condition, content.extractor)
    r.attackers = {"c": type(attackers[0])("c", "content-tfidf", "cosine", "none", 0, renamed)}
    assert _content_caveat(r) is None


def test_load_channels_folder(tmp_path):
    """A system's channels/ folder (Kaldi text + prosody CSV, evaluation and train/) becomes two feature sets; a
    folder whose utterances differ from the voice embeddings', or without training files, is refused."""
    from vpeval.audio.asr.transcripts import write_transcripts
    from vpeval.audio.prosody import FEATURES
    from vpeval.cli.channels import load_channels

    sets, train = _channel_audit_inputs()
    voice = {"mfcc-stats": sets["mfcc-stats"]}
    ev_u = sorted(set(voice["mfcc-stats"].utterance_id.tolist()))
    tr_u = sorted(set(train["mfcc-stats"].utterance_id.tolist()))
    d = tmp_path / "sys" / "channels"
    rng = np.random.default_rng(0)

    def prosody(path, utts):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("utterance_id," + ",".join(FEATURES) + "\n" + "".join(
            u + "," + ",".join(f"{v:.4f}" for v in rng.normal(size=len(FEATURES))) + "\n" for u in utts))

    for c in ("original", "anonymized"):
        write_transcripts(d / f"text_{c}", {u: f"words of {u} here" for u in ev_u})
        prosody(d / f"prosody_{c}.csv", ev_u)
        prosody(d / "train" / f"prosody_{c}.csv", tr_u)
    spk = lambda u: u.split("-")[0]  # noqa: E731
    with pytest.raises(VpevalError, match="train/text_original"):
        load_channels(tmp_path / "sys", "sys", voice, spk)
    write_transcripts(d / "train" / "text_original", {u: f"other words {u}" for u in tr_u})
    got, tr, used = load_channels(tmp_path / "sys", "sys", voice, spk)
    assert sorted(got) == ["content-tfidf", "prosody-stats"] and len(used) == 7
    assert set(tr["content-tfidf"].condition) == {"original"}
    assert set(tr["prosody-stats"].condition) == {"original", "anonymized"}
    np.testing.assert_array_equal(np.sort(got["prosody-stats"].utterance_id), np.sort(voice["mfcc-stats"].utterance_id))
    write_transcripts(d / "text_anonymized", {u: "x" for u in ev_u[1:]})
    with pytest.raises(VpevalError, match="differ from the anonymized voice"):
        load_channels(tmp_path / "sys", "sys", voice, spk)


def test_channel_sentence_at_a_tie_as_shown_and_at_a_changed_verdict():
    """A rise of the worst case below what the report shows leaves the decision to the voice; a rise with the same
    verdict says so without claiming that what is said discloses more; a changed verdict does claim it."""
    from vpeval.analysis.channels import _sentence

    base = {"channels": {"content": 1, "voice": 3}}
    v = {"verdict": "leaks", "worst_case": {"value_bits": 13.96}}
    same = _sentence({**base, "voice": v, "decides": "content",
                      "all": {"verdict": "leaks", "worst_case_bits": 14.5, "attacker": "c", "channel": "content"}})
    assert "raises the worst case" in same and "discloses more" not in same
    changed = _sentence({**base, "voice": {**v, "verdict": "partial"}, "decides": "content",
                         "all": {"verdict": "leaks", "worst_case_bits": 14.5, "attacker": "c", "channel": "content"}})
    assert "leaks instead" in changed and "discloses more than the voice" in changed


def test_a_tie_between_channels_is_said_as_a_tie_naming_the_worst_cases_attacker():
    # ASR -> TTS in the ladder: voice and content both at the ceiling the trial counts set (7.78 bits); the verdict
    # names the content attacker, so "the voice channel decides" alone read as a contradiction
    from vpeval.analysis.channels import _sentence

    v = {"verdict": "partial", "worst_case": {"value_bits": 7.78}}
    tie = {"channels": {"voice": 17, "content": 1}, "voice": v, "decides": "voice",
           "all": {"verdict": "partial", "worst_case_bits": 7.78, "attacker": "content-tfidf/centred-cosine/original",
                   "channel": "content"}}
    s = _sentence(tie)
    assert s.startswith("The voice and content channels tie: voice alone partial (worst case 7.78 bits)")
    assert "reached by content-tfidf/centred-cosine/original (content channel, the attacker of the worst case)" in s
    alone = dict(tie, all=dict(tie["all"], attacker="mfcc-stats/lda/original", channel="voice"))
    assert _sentence(alone).startswith("The voice channel decides: voice alone partial")
    # the table's cell says the tie as the sentence does (a tester read "voice" beside "tie" as a contradiction)
    from vpeval.report.channels import _decided_by

    assert _decided_by(tie) == "voice (tie with content)" and _decided_by(alone) == "voice"
    assert _decided_by(dict(tie, decides="content")) == "content"
