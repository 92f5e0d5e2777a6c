"""Embedding extractors: interface, MFCC statistics, resemblyzer (optional), folders, CLI, real speech."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import typer
from typer.testing import CliRunner

from vpeval import rocch_eer
from vpeval.audio.anonymize import draw_alpha, mcadams
from vpeval.audio.embed import (
    EXTRACTORS,
    Extractor,
    ExtractorUnavailableError,
    MfccStatsExtractor,
    embed_folder,
    get_extractor,
)
from vpeval.audio.io import read_audio
from vpeval.cli.audio import register
from vpeval.errors import InputFileError, VpevalError
from conftest import SHARED
from vpeval.io.embeddings import read_embeddings, write_embeddings

REAL = SHARED / "data" / "librispeech-mini"


def voice(n=16000, f0=130.0, formants=(700, 1200, 2600), seed=0):
    """Crude vowel: a pulse train through resonances, plus noise."""
    from scipy.signal import lfilter

    rng = np.random.default_rng(seed)
    e = np.zeros(n)
    e[:: int(16000 / f0)] = 1.0
    e += 0.01 * rng.standard_normal(n)
    x = e
    for fr in formants:
        th = 2 * np.pi * fr / 16000
        x = lfilter([1.0], [1.0, -2 * 0.97 * np.cos(th), 0.97**2], x)
    return 0.3 * x / np.max(np.abs(x))


# --- MFCC statistics ------------------------------------------------------------------------------------


def test_mfcc_shape_name_determinism():
    ext = MfccStatsExtractor()
    assert isinstance(ext, Extractor) and ext.dim == 40 and ext.name == "mfcc-stats"
    x = voice()
    e = ext.embed(x, 16000)
    assert e.shape == (40,) and e.dtype == np.float64
    np.testing.assert_array_equal(e, MfccStatsExtractor().embed(x.copy(), 16000))
    assert np.all(e[20:] >= 0)  # standard deviations
    assert MfccStatsExtractor(13).dim == 26 and MfccStatsExtractor(13).name == "mfcc-stats-13"


def test_mfcc_gain_moves_only_mean_c0_by_hand_computed_amount():
    """Gain g adds 20 log10(g) dB to every mel band; the orthonormal DCT-II maps a constant offset d over
    40 bands to c0 = d * sqrt(40) and nothing else, and standard deviations do not move."""
    ext = MfccStatsExtractor()
    x = voice(seed=1)
    d = ext.embed(0.5 * x) - ext.embed(x)
    np.testing.assert_allclose(d[0], 20 * np.log10(0.5) * np.sqrt(40), rtol=1e-6)
    np.testing.assert_allclose(d[1:], 0, atol=1e-6)


def test_mfcc_mean_part_matches_slow_oracle():
    """Mean of c_k = DCT-II (orthonormal) of the frame-averaged log-mel spectrum (DCT is linear)."""
    import librosa
    from scipy.fft import dct

    x = voice(seed=2)
    S = librosa.feature.melspectrogram(y=x, sr=16000, n_fft=512, win_length=400, hop_length=160,
                                       n_mels=40, fmin=20.0, fmax=7600.0, power=2.0)
    logmel = librosa.power_to_db(S)  # dB, top_db=80 relative to the maximum
    frame_mfcc = np.array([dct(logmel[:, t], type=2, norm="ortho")[:20] for t in range(logmel.shape[1])])
    e = MfccStatsExtractor().embed(x)
    np.testing.assert_allclose(e[:20], frame_mfcc.mean(axis=0), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(e[20:], frame_mfcc.std(axis=0), rtol=1e-5, atol=1e-6)


def test_mfcc_separates_voices_and_sees_mcadams():
    ext = MfccStatsExtractor()
    a1, a2 = ext.embed(voice(seed=1)), ext.embed(voice(seed=2))
    b = ext.embed(voice(f0=210, formants=(400, 2000, 3000), seed=1))
    anon = ext.embed(mcadams(voice(seed=1), 0.6))
    assert np.linalg.norm(a1 - a2) < np.linalg.norm(a1 - b)
    assert np.linalg.norm(a1 - a2) < np.linalg.norm(a1 - anon)


def test_extractor_input_validation():
    ext = MfccStatsExtractor()
    with pytest.raises(VpevalError, match="16000"):
        ext.embed(voice(), 8000)
    with pytest.raises(VpevalError, match="1-D"):
        ext.embed(np.zeros((2, 100)))
    with pytest.raises(VpevalError, match="NaN"):
        ext.embed(np.array([0.0, np.nan, 0.1]))
    with pytest.raises(VpevalError):
        MfccStatsExtractor(0)


def test_registry():
    assert EXTRACTORS == ("mfcc", "resemblyzer", "voicefilter-dvector")
    assert isinstance(get_extractor("mfcc"), MfccStatsExtractor)
    with pytest.raises(VpevalError, match="unknown extractor .xvector.; choose one of .*, onnx:PATH or torchscript:PATH"):
        get_extractor("xvector")


# --- resemblyzer (optional) ----------------------------------------------------------------------------------


def test_resemblyzer_missing_gives_install_steps(monkeypatch):
    import vpeval.audio.embed.resemblyzer as rz

    monkeypatch.setitem(sys.modules, "resemblyzer", None)  # makes `import resemblyzer` fail
    with pytest.raises(ExtractorUnavailableError) as ei:
        rz.ResemblyzerExtractor()
    msg = str(ei.value)
    assert "pip install torch==2.13.0 webrtcvad-wheels" in msg
    assert "pip install --no-deps resemblyzer==0.1.4" in msg
    assert isinstance(ei.value, ImportError)


def test_resemblyzer_synthetic_shape_determinism_and_silence():
    pytest.importorskip("resemblyzer")
    from vpeval.audio.embed.resemblyzer import ResemblyzerExtractor

    ext = ResemblyzerExtractor()
    assert ext.dim == 256 and ext.name == "resemblyzer-ge2e"
    x = voice(32000)
    e = ext.embed(x)
    assert e.shape == (256,)
    np.testing.assert_allclose(np.linalg.norm(e), 1.0, atol=1e-5)
    np.testing.assert_array_equal(e, ext.embed(x.copy()))
    with pytest.raises(VpevalError, match="silent"):
        ext.embed(np.zeros(16000))
    with pytest.raises(VpevalError, match=r"needs at least 480 samples .*\(VAD\) window"):
        ext.embed(x[:100])


# --- folders and CLI ---------------------------------------------------------------------------------------------


SPEC = {"11-1-0000": (1, 120), "11-1-0001": (2, 120), "22-5-0000": (3, 200), "22-5-0001": (4, 200)}


def make_folder(root, spec=SPEC):
    root.mkdir(parents=True, exist_ok=True)
    for utt, (seed, f0) in spec.items():
        sf.write(str(root / f"{utt}.flac"), voice(12000, f0=f0, seed=seed), 16000)
    return root


def test_embed_folder_rows_sorted_with_ids(tmp_path):
    src = make_folder(tmp_path / "in")
    es = embed_folder(src, MfccStatsExtractor(), condition="anonymized", quiet=True)
    assert list(es.utterance_id) == sorted(SPEC)
    assert list(es.speaker_id) == ["11", "11", "22", "22"]
    assert set(es.condition) == {"anonymized"} and es.extractor == "mfcc-stats"
    assert es.embeddings.shape == (4, 40)
    np.testing.assert_array_equal(es.embeddings[2], MfccStatsExtractor().embed(read_audio(src / "22-5-0000.flac")))


def test_embed_folder_errors_name_the_file(tmp_path):
    src = make_folder(tmp_path / "in")
    bad = src / "33-1-0000.flac"
    bad.write_bytes(b"\x00\x01garbage" * 30)
    with pytest.raises(InputFileError) as ei:
        embed_folder(src, MfccStatsExtractor(), quiet=True)
    assert str(bad) in str(ei.value)
    bad.unlink()
    sf.write(str(src / "44-1-0000.wav"), voice(), 44100)
    with pytest.raises(InputFileError, match=r"44-1-0000\.wav.*44100 Hz"):
        embed_folder(src, MfccStatsExtractor(), quiet=True, strict_rate=True)
    (src / "44-1-0000.wav").unlink()
    sf.write(str(src / "nospeaker.wav"), voice(), 16000)
    with pytest.raises(InputFileError, match="cannot tell the speaker"):
        embed_folder(src, MfccStatsExtractor(), quiet=True)
    with pytest.raises(VpevalError, match="condition"):
        embed_folder(src, MfccStatsExtractor(), condition="", quiet=True)


def test_cli_embed_append_both_conditions(tmp_path):
    app = typer.Typer()
    register(app)
    src = make_folder(tmp_path / "in")
    anon = tmp_path / "anon"
    for utt in SPEC:
        x = read_audio(src / f"{utt}.flac")
        sf.write(str(anon / f"{utt}.flac") if anon.exists() else (anon.mkdir() or str(anon / f"{utt}.flac")),
                 mcadams(x, draw_alpha(5, utt.split("-")[0])), 16000)
    out = tmp_path / "emb" / "e.npz"
    r = CliRunner().invoke(app, ["embed", str(src), "-o", str(out), "--extractor", "mfcc", "-q"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["embed", str(anon), "-o", str(out), "-e", "mfcc", "-c", "anonymized",
                                 "--append", "-q", "--json"])
    assert r.exit_code == 0, r.output
    assert '"rows": 8' in r.output
    es = read_embeddings(out)
    assert sorted(set(es.condition)) == ["anonymized", "original"] and len(es) == 8
    assert es.extractor == "mfcc-stats"
    # appending the same condition twice is a duplicate-key error, reported cleanly
    r = CliRunner().invoke(app, ["embed", str(anon), "-o", str(out), "-c", "anonymized", "--append", "-q"])
    assert r.exit_code == 2 and "more than once" in r.output and "Traceback" not in r.output
    # another extractor's file is refused before any audio is embedded, and left as it was
    import dataclasses

    import vpeval.audio.embed as embed_mod

    other = tmp_path / "other.npz"
    write_embeddings(other, dataclasses.replace(es, extractor="other-x", extractor_info=None))
    before = other.read_bytes()

    def no_work(*a, **k):
        raise AssertionError("embedded before refusing")

    mp = pytest.MonkeyPatch()
    mp.setattr(embed_mod, "embed_folder", no_work)
    try:
        r = CliRunner().invoke(app, ["embed", str(anon), "-o", str(other), "-c", "anonymized", "--append", "-q"])
    finally:
        mp.undo()
    assert r.exit_code == 2 and "cannot join embeddings of extractor 'mfcc-stats' to 'other-x'" in r.output
    assert other.read_bytes() == before
    r = CliRunner().invoke(app, ["embed", str(src), "-o", str(tmp_path / "e.txt"), "-q"])
    assert r.exit_code == 2 and ".npz" in r.output
    r = CliRunner().invoke(app, ["embed", str(src), "-o", str(out), "-c", "anon", "-q"])
    assert r.exit_code == 2 and "--condition" in r.output


# --- real speech (slow) ----------------------------------------------------------------------------------------


def _real_utterances():
    if not (REAL / "test-other").is_dir():
        pytest.skip("../shared/data/librispeech-mini is absent")
    spks = sorted(p.name for p in (REAL / "test-other").iterdir() if p.is_dir())[:4]
    files = []
    for s in spks:
        files += sorted((REAL / "test-other" / s).glob("*.flac"))[:3]
    return files


def _same_and_diff_scores(E, spk):
    """Cosine scores of the same-speaker and the different-speaker pairs (each unordered pair once)."""
    En = E / np.linalg.norm(E, axis=1, keepdims=True)
    S = En @ En.T
    iu = np.triu_indices(len(spk), 1)
    same = (spk[:, None] == spk[None, :])[iu]
    return S[iu][same], S[iu][~same]


@pytest.mark.slow
@pytest.mark.parametrize("extractor", ["mfcc", "resemblyzer"])
def test_real_speech_anonymize_and_embed(extractor, tmp_path):
    files = _real_utterances()
    if extractor == "resemblyzer":
        pytest.importorskip("resemblyzer")
    ext = get_extractor(extractor)
    spk = np.array([f.stem.split("-")[0] for f in files])
    X = [read_audio(f) for f in files]
    A = [mcadams(x, draw_alpha(2024, s)) for x, s in zip(X, spk)]
    # determinism of the anonymizer on real speech
    np.testing.assert_array_equal(A[0], mcadams(X[0], draw_alpha(2024, spk[0])))
    assert all(a.shape == x.shape and np.max(np.abs(a)) <= 32767 / 32768 for a, x in zip(A, X))
    E = np.array([ext.embed(x) for x in X])
    EA = np.array([ext.embed(a) for a in A])
    assert E.shape == (len(files), ext.dim) and EA.shape == E.shape
    np.testing.assert_array_equal(E[1], ext.embed(X[1].copy()))
    # 12 clean utterances of 4 speakers: both extractors separate the speakers completely (measured: every
    # same-speaker pair above every different-speaker pair), so the ROCCH-EER of cosine scoring is 0
    same, diff = _same_and_diff_scores(E, spk)
    assert rocch_eer(same, diff) == 0.0, (same.min(), diff.max())
    # anonymized speech moves away from its original
    cos = np.sum(E * EA, axis=1) / (np.linalg.norm(E, axis=1) * np.linalg.norm(EA, axis=1))
    assert np.all(cos < 1 - 1e-6)
    # and through the folder + file path as the CLI does it
    src = tmp_path / "in"
    src.mkdir()
    for f in files[:4]:
        (src / f.name).write_bytes(f.read_bytes())
    es = embed_folder(src, ext, quiet=True)
    np.testing.assert_allclose(es.embeddings, E[:4], rtol=0, atol=0)


@pytest.mark.slow
def test_real_speech_preprocessing_matches_resemblyzer():
    """Oracle: our VAD/volume preprocessing equals resemblyzer.preprocess_wav on real speech."""
    files = _real_utterances()
    pytest.importorskip("resemblyzer")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import resemblyzer
    from vpeval.audio.embed.resemblyzer import preprocess

    for f in files[::3]:
        x = read_audio(f)
        ours, theirs = preprocess(x), resemblyzer.preprocess_wav(x)
        assert ours.shape == theirs.shape  # the same samples kept by the VAD
        # the gain is computed in a different order: equal up to float64 rounding
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=0)


def test_cli_embed_resemblyzer_missing_is_clean(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "resemblyzer", None)
    app = typer.Typer()
    register(app)
    src = make_folder(tmp_path / "in")
    r = CliRunner().invoke(app, ["embed", str(src), "-o", str(tmp_path / "e.npz"), "-e", "resemblyzer", "-q"])
    assert r.exit_code == 2 and "pip install --no-deps resemblyzer==0.1.4" in r.output
    assert "Traceback" not in r.output and not (tmp_path / "e.npz").exists()


def test_cli_json_stdout_is_clean_while_progress_goes_to_stderr(tmp_path):
    import json

    app = typer.Typer()
    register(app)
    src = make_folder(tmp_path / "in")
    r = CliRunner().invoke(app, ["embed", str(src), "-o", str(tmp_path / "e.npz"), "--json"])
    assert r.exit_code == 0
    summary = json.loads(r.stdout)  # the progress bar is not on stdout
    assert summary["rows"] == 4 and summary["dim"] == 40 and summary["conditions"] == {"original": 4}
    assert "mfcc-stats" in r.stderr
