"""The extractor-adapted attacker (GE2E projection retrained on frozen LSTM states) and the saturation check."""

import numpy as np
import pytest

from vpeval.io.embeddings import EmbeddingSet
from vpeval.io.trials import Trials
from vpeval.pipeline import ProtocolError
from vpeval.pipeline.adapt_head import AdaptedHead, StateSet, head_embed, loss_and_grad, read_states, write_states
from vpeval.pipeline.adapted import (
    ADAPTED_CLASS, NOT_SATURATED, field_adapted, flag_saturation, learning_curve,
)


def _toy(n_spk=6, per=4, win=3, d=8, k=6, seed=0, cond="anonymized", prefix="t"):
    """States of ``n_spk`` speakers (speaker-specific means), ``per`` utterances of ``win`` windows each."""
    rng = np.random.default_rng(seed)
    means = rng.normal(size=(n_spk, d))
    states, counts, utt, spk = [], [], [], []
    for s in range(n_spk):
        for u in range(per):
            states.append(means[s] + 0.7 * rng.normal(size=(win, d)))
            counts.append(win)
            utt.append(f"{prefix}{s}-u{u}")
            spk.append(f"{prefix}{s}")
    W0 = rng.normal(size=(k, d)) / np.sqrt(d)
    b0 = 0.1 * rng.normal(size=k)
    return StateSet(np.vstack(states), np.array(counts), utt, spk, [cond] * len(utt)), W0, b0


def _slow_embed(ss, W, b):
    """Oracle: the module doc's formula, one utterance at a time."""
    out, start = [], 0
    for c in ss.counts:
        z = np.maximum(ss.states[start:start + c] @ W.T + b, 0)
        u = z / np.linalg.norm(z, axis=1, keepdims=True)
        m = u.mean(0)
        out.append(m / np.linalg.norm(m))
        start += c
    return np.array(out)


def test_head_embed_matches_slow_oracle_and_pooling():
    ss, W, b = _toy()
    np.testing.assert_allclose(head_embed(ss, W, b), _slow_embed(ss, W, b), atol=1e-12)
    p = ss.pool()
    assert p.pooled and (p.counts == 1).all()
    np.testing.assert_allclose(p.states[1], ss.states[3:6].mean(0))


def test_gradients_match_finite_differences():
    ss, W, b = _toy(n_spk=3, per=2, d=5, k=4)
    labels = np.unique(ss.speaker_id, return_inverse=True)[1]
    V = np.random.default_rng(1).normal(size=(3, 4))
    loss, dW, db, dV = loss_and_grad(ss.states, ss.counts, labels, W, b, V, scale=5.0, margin=0.3)
    h = 1e-6
    for arr, grad in ((W, dW), (b, db), (V, dV)):
        num = np.zeros_like(arr)
        for i in np.ndindex(arr.shape):
            old = arr[i]
            arr[i] = old + h
            up = loss_and_grad(ss.states, ss.counts, labels, W, b, V, scale=5.0, margin=0.3)[0]
            arr[i] = old - h
            down = loss_and_grad(ss.states, ss.counts, labels, W, b, V, scale=5.0, margin=0.3)[0]
            arr[i] = old
            num[i] = (up - down) / (2 * h)
        np.testing.assert_allclose(grad, num, rtol=1e-5, atol=1e-7)


def test_zero_steps_is_the_pretrained_projection():
    ss, W, b = _toy()
    head = AdaptedHead(W, b, steps=0).fit(ss)
    np.testing.assert_array_equal(head.transform(ss), head_embed(ss, W, b))


def test_training_lowers_the_loss_and_is_deterministic_and_order_free():
    ss, W, b = _toy()
    a = AdaptedHead(W, b, steps=30, lr=1e-2).fit(ss)
    assert a.loss_[-1] < a.loss_[0]
    again = AdaptedHead(W, b, steps=30, lr=1e-2).fit(ss)
    np.testing.assert_array_equal(a.W_, again.W_)
    perm = np.random.default_rng(3).permutation(len(ss))
    from vpeval.pipeline.adapt_head import _reorder

    shuffled = AdaptedHead(W, b, steps=30, lr=1e-2).fit(_reorder(ss, perm))
    np.testing.assert_array_equal(a.W_, shuffled.W_)
    mb = AdaptedHead(W, b, steps=12, lr=1e-2, batch_size=8, seed=5).fit(ss)
    np.testing.assert_array_equal(mb.W_, AdaptedHead(W, b, steps=12, lr=1e-2, batch_size=8, seed=5).fit(ss).W_)
    assert not np.array_equal(mb.W_, AdaptedHead(W, b, steps=12, lr=1e-2, batch_size=8, seed=6).fit(ss).W_)


def test_bad_settings_refused():
    ss, W, b = _toy()
    for kw in ({"steps": -1}, {"lr": 0}, {"batch_size": 1}, {"margin": -0.1}):
        with pytest.raises(ValueError):
            AdaptedHead(W, b, **kw)
    with pytest.raises(ValueError, match="2 training speakers"):
        AdaptedHead(W, b).fit(ss.select(ss.speaker_id == "t0"))


def test_states_file_round_trip(tmp_path):
    ss, _, _ = _toy()
    write_states(tmp_path / "s.npz", ss)
    back = read_states(tmp_path / "s.npz")
    np.testing.assert_allclose(back.states, ss.states, rtol=1e-3, atol=1e-3)  # float16 on disk
    assert (back.counts == ss.counts).all() and (back.utterance_id == ss.utterance_id).all()


def _eval_states(prefix="e"):
    o, _, _ = _toy(n_spk=5, per=4, seed=7, cond="original", prefix=prefix)
    a = StateSet(o.states + 0.2, o.counts, o.utterance_id, o.speaker_id, ["anonymized"] * len(o))
    return StateSet(np.vstack([o.states, a.states]), np.r_[o.counts, a.counts], np.r_[o.utterance_id, a.utterance_id],
                    np.r_[o.speaker_id, a.speaker_id], np.r_[o.condition, a.condition])


def test_field_adapted_names_its_class_and_training_data():
    tr, W, b = _toy()
    att = field_adapted(_eval_states(), tr, W, b, extractor="ge2e", steps=5, repeats=3)
    assert att.name == "ge2e+adapted/cosine/anonymized" and att.trained_on == "anonymized"
    d = att.describe()["adaptation"]
    assert d["attacker_class"] == ADAPTED_CLASS
    assert (d["training_speakers"], d["training_segments"], d["repeats_K"], d["epochs"]) == (6, 24, 3, 0)
    assert att.es.embeddings.shape == (40, 6)


def test_overlap_with_evaluation_speakers_refused():
    tr, W, b = _toy(prefix="e")  # the training speakers are named like the evaluation ones
    with pytest.raises(ProtocolError, match="also evaluation speakers"):
        field_adapted(_eval_states(), tr, W, b)
    ev = _eval_states()
    copied = StateSet(ev.states[:12], ev.counts[:4], ["x0", "x1", "x2", "x3"], ["z1", "z1", "z2", "z2"],
                      ["anonymized"] * 4, False)
    tr2, _, _ = _toy()
    both = StateSet(np.vstack([tr2.states, copied.states]), np.r_[tr2.counts, copied.counts],
                    np.r_[tr2.utterance_id, copied.utterance_id], np.r_[tr2.speaker_id, copied.speaker_id],
                    np.r_[tr2.condition, copied.condition])
    with pytest.raises(ProtocolError, match="identical to evaluation"):
        field_adapted(ev, both, W, b)


def _trials(shift, n=40, seed=0):
    """Trials whose target scores sit ``shift`` above the non-targets; probe ids carry the speaker."""
    rng = np.random.default_rng(seed)
    is_t = np.tile([True, False], n)
    s = rng.normal(size=2 * n) + shift * is_t
    test = np.array([f"s{i % 10}-u{i}" for i in range(2 * n)])
    return Trials(s, is_t, np.array(["m"] * (2 * n)), test)


def test_learning_curve_flags_an_attacker_still_improving():
    spk = np.repeat([f"s{i}" for i in range(8)], 4)
    utt = np.array([f"{s}-{k}" for s, k in zip(spk, np.tile(range(4), 8))])

    def improving(keep, steps):  # stronger with every training row
        return _trials(0.05 * keep.sum(), n=300)

    c = learning_curve(improving, spk, utt, n_boot=100)
    assert c["saturated"] is False and c["sentence"] == NOT_SATURATED
    assert c["last_step"]["speakers"]["eer_gain_ci"][0] > 0
    assert [p["training_speakers"] for p in c["points"] if p["axis"] == "speakers"] == [2, 4, 8]
    assert [p["training_segments"] for p in c["points"] if p["axis"] == "segments_per_speaker"] == [16, 24, 32]

    def flat(keep, steps):  # the same scores whatever the data
        return _trials(1.0)

    c = learning_curve(flat, spk, utt, n_boot=100)
    assert c["saturated"] is True and c["last_step"]["speakers"]["eer_gain"] == 0.0


def test_saturation_flag_goes_beside_the_verdict():
    tr, W, b = _toy()
    att = field_adapted(_eval_states(), tr, W, b, steps=3)
    att.learning_curve = {"saturated": False, "strongest": True, "trial_type": "aa", "sentence": NOT_SATURATED}

    class Res:
        attackers = {att.name: att}
    verdicts = {"sys": {"verdict": "leaks", "warnings": []}}
    flag_saturation(verdicts, {"sys": Res()})
    assert verdicts["sys"]["attacker_saturated"] is False
    assert verdicts["sys"]["warnings"][0].startswith(NOT_SATURATED)


def test_zero_step_head_reproduces_the_frozen_encoder():
    """Per-window states of the real GE2E LSTM + the pretrained projection = VoiceEncoder.embed_utterance."""
    pytest.importorskip("torch")
    pytest.importorskip("resemblyzer")
    from vpeval.audio.embed.adapt import _encoder, lstm_states, pretrained_projection

    rng = np.random.default_rng(0)
    x = (0.1 * rng.normal(size=16000 * 3)).astype(np.float32)  # embedded as given (no preprocessing)
    s = lstm_states(x, preprocessed=True)
    W, b = pretrained_projection()
    ss = StateSet(s, np.array([len(s)]), ["u"], ["p"], ["anonymized"])
    ref = _encoder().embed_utterance(x)
    head = AdaptedHead(W, b, steps=0)
    np.testing.assert_allclose(head_embed(ss, head.W_, head.b_)[0], ref, atol=1e-5)


def test_full_fine_tune_is_deterministic():
    pytest.importorskip("torch")
    pytest.importorskip("resemblyzer")
    pytest.importorskip("webrtcvad")
    from vpeval.audio.embed.adapt import fine_tune_encoder

    t = np.arange(16000 * 2) / 16000
    rng = np.random.default_rng(1)

    def voice(f0):  # a buzzy harmonic signal with syllable-like bursts, which the VAD keeps
        env = 0.5 + 0.5 * np.sin(2 * np.pi * 3 * t) ** 2
        x = sum(np.sin(2 * np.pi * f0 * k * t) / k for k in range(1, 12)) * env
        return (0.1 * x + 0.005 * rng.normal(size=t.size)).astype(np.float32)

    train = [(voice(110), "a"), (voice(115), "a"), (voice(210), "b"), (voice(220), "b")]
    one = fine_tune_encoder(train, epochs=1, batch_size=4, seed=3)
    two = fine_tune_encoder(train, epochs=1, batch_size=4, seed=3)
    np.testing.assert_array_equal(one.W, two.W)
    for k in one.lstm_state:
        assert np.array_equal(one.lstm_state[k].numpy(), two.lstm_state[k].numpy())
    assert one.embed(voice(112)).shape == (256,)


def test_anonymize_repeats_draws_fresh_parameters_per_copy(tmp_path):
    from vpeval.audio.anonymize.repeats import SPEED_FACTORS, anonymize_repeats
    from vpeval.audio.io import read_audio, write_audio

    rng = np.random.default_rng(0)
    t = np.arange(16000) / 16000
    for name in ("11-1-0000", "12-1-0000"):
        write_audio(tmp_path / "in" / f"{name}.flac", 0.2 * np.sin(2 * np.pi * 150 * t) + 0.01 * rng.normal(size=t.size))
    a = anonymize_repeats(tmp_path / "in", tmp_path / "out", repeats=3, seed=4, speed=SPEED_FACTORS, quiet=True)
    assert list(a["utterance_id"]) == [f"{u}-k{k:02d}" for u in ("11-1-0000", "12-1-0000") for k in range(3)]
    assert list(a["speaker_id"]) == ["11"] * 3 + ["12"] * 3 and set(a["repeat"]) == {0, 1, 2}
    assert a["alpha"].nunique() == 6 and set(a["speed"]) <= set(SPEED_FACTORS)
    for row in a.itertuples():  # a copy sped up by f lasts 1/f as long
        assert abs(read_audio(tmp_path / "out" / row.output).size - 16000 / row.speed) <= 2
    b = anonymize_repeats(tmp_path / "in", tmp_path / "out2", repeats=3, seed=4, speed=SPEED_FACTORS, quiet=True)
    assert a.drop(columns="output").equals(b.drop(columns="output"))
    with pytest.raises(ValueError, match="repeats"):
        anonymize_repeats(tmp_path / "in", tmp_path / "o3", repeats=0, seed=1)


def _voice_files(folder, names, seed=0):
    from vpeval.audio.io import write_audio

    t = np.arange(16000 * 2) / 16000
    rng = np.random.default_rng(seed)
    for i, name in enumerate(names):
        f0 = 100 + 40 * i
        env = 0.5 + 0.5 * np.sin(2 * np.pi * 3 * t) ** 2
        x = sum(np.sin(2 * np.pi * f0 * k * t) / k for k in range(1, 12)) * env
        write_audio(folder / f"{name}.flac", 0.1 * x / 3 + 0.005 * rng.normal(size=t.size))


def test_cli_anonymize_repeats(tmp_path):
    from typer.testing import CliRunner

    from vpeval.cli.main import app

    _voice_files(tmp_path / "in", ["21-1-0000", "22-1-0000"])
    r = CliRunner().invoke(app, ["anonymize", str(tmp_path / "in"), str(tmp_path / "out"), "--repeats", "2",
                                 "--seed", "3", "--json"])
    assert r.exit_code == 0, r.output
    assert len(list((tmp_path / "out").rglob("*.flac"))) == 4
    r = CliRunner().invoke(app, ["anonymize", str(tmp_path / "in"), str(tmp_path / "o2"), "--repeats", "2"])
    assert r.exit_code != 0 and "--seed" in r.output


def test_cli_adapt_head_only_refuses_overlap_and_writes_both_conditions(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("resemblyzer")
    pytest.importorskip("webrtcvad")
    from typer.testing import CliRunner

    from vpeval.cli.main import app
    from vpeval.io.embeddings import read_embeddings

    _voice_files(tmp_path / "train", ["31-1-0000", "31-1-0001", "32-1-0000", "32-1-0001"])
    _voice_files(tmp_path / "orig", ["41-1-0000", "42-1-0000"], seed=1)
    _voice_files(tmp_path / "anon", ["41-1-0000", "42-1-0000"], seed=2)
    args = ["adapt", str(tmp_path / "train"), "--original", str(tmp_path / "orig"), "--anonymized",
            str(tmp_path / "anon"), "--steps", "3"]
    r = CliRunner().invoke(app, args + ["-o", str(tmp_path / "e.npz")])
    assert r.exit_code == 0, r.output
    es = read_embeddings(tmp_path / "e.npz")
    assert len(es) == 4 and set(es.condition) == {"original", "anonymized"}
    assert es.extractor == "resemblyzer-ge2e-adapted"
    # the shared output policy (tests/test_output_policy.py): an existing output is refused and left as it is;
    # --force replaces the file vpeval wrote (its manifest proves it), never a file of the user's
    from vpeval.io.output import verify_manifest

    before = (tmp_path / "e.npz").read_bytes()
    r = CliRunner().invoke(app, args + ["-o", str(tmp_path / "e.npz")])
    assert r.exit_code == 3 and "exists" in r.output and "--force" in r.output
    assert (tmp_path / "e.npz").read_bytes() == before
    r = CliRunner().invoke(app, args + ["-o", str(tmp_path / "e.npz"), "--force"])
    assert r.exit_code == 0, r.output
    assert verify_manifest(tmp_path / "e.npz", ("adapt",), is_file=True) is None
    (tmp_path / "mine.npz").write_bytes(before)
    r = CliRunner().invoke(app, args + ["-o", str(tmp_path / "mine.npz"), "--force"])
    assert r.exit_code == 3 and (tmp_path / "mine.npz").read_bytes() == before
    r = CliRunner().invoke(app, ["adapt", str(tmp_path / "orig"), "--original", str(tmp_path / "orig"),
                                 "--anonymized", str(tmp_path / "anon"), "-o", str(tmp_path / "f.npz")])
    assert r.exit_code != 0 and "evaluation speakers" in r.output


def test_bad_states_file_names_the_file(tmp_path):
    np.savez(tmp_path / "x.npz", states=np.zeros((3, 2)), counts=np.array([1, 1]), utterance_id=["a", "b"],
             speaker_id=["s", "s"], condition=["c", "c"])
    with pytest.raises(ValueError, match="x.npz: counts sum to 2 windows but states has 3 rows"):
        read_states(tmp_path / "x.npz")
    np.savez(tmp_path / "y.npz", states=np.zeros((3, 2)))
    with pytest.raises(ValueError, match="y.npz: not a states file"):
        read_states(tmp_path / "y.npz")


def test_full_fine_tune_names_a_silent_training_file():
    """`vpeval adapt --epochs N`: a training utterance with no speech is named (file and utterance), not reported
    as a bare 'the waveform is silent' (issue 48 item 9)."""
    pytest.importorskip("torch")
    pytest.importorskip("resemblyzer")
    from vpeval.audio.embed.adapt import fine_tune_encoder
    from vpeval.errors import InputFileError

    rng = np.random.default_rng(0)
    speech = 0.1 * rng.standard_normal(16000)
    train = [(speech, "a"), (np.zeros(16000), "b")]
    with pytest.raises(InputFileError, match=r"b\.wav \(utterance b-1\).*training utterance: resemblyzer: the "
                                             r"waveform is silent"):
        fine_tune_encoder(train, epochs=1, names_of=["a.wav (utterance a-1)", "b.wav (utterance b-1)"])
