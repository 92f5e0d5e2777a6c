"""Input features and user model files (onnx:PATH, torchscript:PATH): features against independent oracles, models
the tests build themselves against running the same computation directly, and the errors that name the file."""

from __future__ import annotations

import json
import pickle
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpeval.audio.embed import MODEL_PREFIXES, embed_folder, get_extractor
from vpeval.audio.embed.base import ExtractorUnavailableError
from vpeval.audio.embed.features import FeatureSpec, compute_features, model_input, window_function
from vpeval.errors import InputFileError, VpevalError

librosa = pytest.importorskip("librosa")


def speechlike(n=24000, seed=0):
    """A pulse train through two resonances plus noise (deterministic)."""
    from scipy.signal import lfilter

    rng = np.random.default_rng(seed)
    e = np.zeros(n)
    e[:: 120 + 7 * seed] = 1.0
    e += 0.02 * rng.standard_normal(n)
    for fr in (600 + 50 * seed, 1700):
        th = 2 * np.pi * fr / 16000
        e = lfilter([1.0], [1.0, -2 * 0.96 * np.cos(th), 0.96**2], e)
    return 0.3 * e / np.max(np.abs(e))


FBANK = dict(type="fbank", n_mels=40, frame_length_ms=25, frame_shift_ms=10, window="hamming", log="ln",
             mean_norm="utterance")


# --- features -------------------------------------------------------------------------------------------------


def test_windows_match_numpy_and_hand_values():
    np.testing.assert_allclose(window_function("hamming_symmetric", 11), np.hamming(11), atol=1e-15)
    np.testing.assert_allclose(window_function("hann_symmetric", 11), np.hanning(11), atol=1e-15)
    # periodic = the first N points of the symmetric window of N + 1
    np.testing.assert_allclose(window_function("hann", 10), np.hanning(11)[:10], atol=1e-15)
    np.testing.assert_allclose(window_function("povey", 5), np.hanning(5) ** 0.85, atol=1e-15)
    assert window_function("rectangular", 3).tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("window", ["hamming", "hann"])
def test_stft_framing_matches_librosa(center, window):
    x = speechlike()
    spec = FeatureSpec(type="fbank", n_fft=512, framing="stft", center=center, window=window, n_mels=40,
                       log="log10", log_offset=1e-10, log_floor=0.0)
    S = librosa.feature.melspectrogram(y=x, sr=16000, n_fft=512, win_length=400, hop_length=160, n_mels=40,
                                       window=window, center=center, pad_mode="constant", power=2.0)
    F = compute_features(x, spec)
    assert F.shape == S.T.shape
    # librosa applies its mel filters in float32 (its default dtype), so agreement is to float32 precision
    np.testing.assert_allclose(F, np.log10(S.T + 1e-10), rtol=0, atol=1e-6)


def test_kaldi_framing_matches_a_frame_by_frame_oracle():
    x = speechlike(16000 + 123)
    spec = FeatureSpec(type="fbank", framing="kaldi", window="povey", remove_dc=True, preemphasis=0.97,
                       n_mels=23, fmin=20.0, fmax=7600.0, mel_scale="htk", mel_norm=None, log="ln",
                       waveform_scale=32768.0, log_floor=1.1920929e-07)
    mel = librosa.filters.mel(sr=16000, n_fft=512, n_mels=23, fmin=20.0, fmax=7600.0, htk=True, norm=None,
                              dtype=np.float64)
    rows = []
    t = 0
    while t * 160 + 400 <= x.size:
        f = x[t * 160: t * 160 + 400] * 32768.0
        f = f - f.mean()
        g = f.copy()
        for i in range(399, 0, -1):
            g[i] = f[i] - 0.97 * f[i - 1]
        g[0] = f[0] - 0.97 * f[0]
        w = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 399)) ** 0.85
        buf = np.zeros(512)
        buf[:400] = g * w
        p = np.abs(np.fft.rfft(buf)) ** 2
        rows.append(np.log(np.maximum(mel @ p, 1.1920929e-07)))
        t += 1
    F = compute_features(x, spec)
    assert F.shape == (1 + (x.size - 400) // 160, 23) == (len(rows), 23)
    np.testing.assert_allclose(F, np.array(rows), rtol=1e-12, atol=1e-9)


def test_normalisations_and_layouts_by_hand():
    x = speechlike()
    raw = compute_features(x, FeatureSpec(**{**FBANK, "mean_norm": "none"}))
    cmn = compute_features(x, FeatureSpec(**FBANK))
    np.testing.assert_allclose(cmn, raw - raw.mean(axis=0), atol=1e-12)
    cmvn = compute_features(x, FeatureSpec(**FBANK, var_norm=True))
    np.testing.assert_allclose(cmvn.std(axis=0), 1.0, atol=1e-12)
    db = compute_features(x, FeatureSpec(**{**FBANK, "log": "db", "mean_norm": "none"}))
    np.testing.assert_allclose(db, 10 / np.log(10) * raw, atol=1e-9)
    a = model_input(x, FeatureSpec(**FBANK))
    b = model_input(x, FeatureSpec(**FBANK, layout="feature_major"))
    assert a.dtype == np.float32 and a.shape == (1, cmn.shape[0], 40) and b.shape == (1, 40, cmn.shape[0])
    np.testing.assert_array_equal(a[0], b[0].T)
    w = model_input(x, FeatureSpec(type="waveform", waveform_scale=32768.0))
    assert w.shape == (1, x.size)
    np.testing.assert_allclose(w[0], (x * 32768).astype(np.float32))


@settings(max_examples=25, deadline=None)
@given(n=st.integers(512, 3000), gain=st.floats(0.05, 20.0), seed=st.integers(0, 10**6),
       framing=st.sampled_from(["kaldi", "stft"]), power=st.sampled_from([1.0, 2.0]))
def test_gain_identities(n, gain, seed, framing, power):
    """Energies scale by gain**power; after ln and utterance mean normalisation a gain changes nothing (when the
    floor is not reached); the frame count follows the framing's formula."""
    x = np.random.default_rng(seed).uniform(-0.5, 0.5, n)
    base = dict(type="fbank", n_mels=20, framing=framing, power=power, n_fft=512)
    lin = compute_features(x, FeatureSpec(**base, log="none"))
    np.testing.assert_allclose(compute_features(x, FeatureSpec(**base, log="none", waveform_scale=gain)),
                               gain ** power * lin, rtol=1e-9, atol=1e-300)
    cmn = dict(base, log="ln", log_floor=1e-300, mean_norm="utterance")
    np.testing.assert_allclose(compute_features(x, FeatureSpec(**cmn, waveform_scale=gain)),
                               compute_features(x, FeatureSpec(**cmn)), rtol=0, atol=1e-8)
    assert lin.shape == (1 + (n - (400 if framing == "kaldi" else 512)) // 160, 20)


def test_feature_options_are_checked():
    with pytest.raises(VpevalError, match="frame_length_ms"):
        FeatureSpec(frame_length_ms=25.03)
    with pytest.raises(VpevalError, match="n_fft"):
        FeatureSpec(n_fft=256)
    with pytest.raises(VpevalError, match="center"):
        FeatureSpec(center=True)  # kaldi framing
    with pytest.raises(VpevalError, match="window"):
        FeatureSpec(window="blackman")
    with pytest.raises(VpevalError, match="log_floor"):
        FeatureSpec(log_floor=0.0)
    with pytest.raises(VpevalError, match="fmax"):
        FeatureSpec(fmax=9000.0)
    with pytest.raises(VpevalError, match="unknown feature option.*'nmels'"):
        FeatureSpec.from_dict({**FBANK, "nmels": 40})
    with pytest.raises(VpevalError, match="must state window, log"):
        FeatureSpec.from_dict({"type": "fbank", "n_mels": 40, "frame_length_ms": 25, "frame_shift_ms": 10,
                               "mean_norm": "none"})
    with pytest.raises(VpevalError, match="'n_mels' would be ignored"):
        FeatureSpec.from_dict({"type": "waveform", "n_mels": 80})
    with pytest.raises(VpevalError, match="state the feature type"):
        FeatureSpec.from_dict({"n_mels": 80})
    with pytest.raises(VpevalError, match="shorter than one 400-sample frame"):
        compute_features(np.zeros(399), FeatureSpec(**FBANK))


# --- ONNX models built by the tests -----------------------------------------------------------------------------


def _model(path, nodes, inputs, outputs, inits=()):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    def vi(name, shape):
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)

    g = helper.make_graph([helper.make_node(*n[:3], **(n[3] if len(n) > 3 else {})) for n in nodes], "m",
                          [vi(*i) for i in inputs], [vi(*o) for o in outputs],
                          [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, str(path))
    return path


W = np.random.default_rng(7).standard_normal((40, 16)) / 6


def _fbank_model(path, out_shape=("batch", 16), in_shape=("batch", "time", 40), transpose=False):
    """mean over frames of tanh(features @ W): a (1, 16) embedding."""
    nodes = [("MatMul", ["feats_t" if transpose else "feats", "W"], ["h"]), ("Tanh", ["h"], ["t"]),
             ("ReduceMean", ["t"], ["emb"], {"axes": [1], "keepdims": 0})]
    if transpose:
        nodes.insert(0, ("Transpose", ["feats"], ["feats_t"], {"perm": [0, 2, 1]}))
    return _model(path, nodes, [("feats", list(in_shape))], [("emb", None if out_shape is None else list(out_shape))],
                  [("W", W)])


def _sidecar(model, **over):
    d = {**FBANK, **over}
    (model.parent / (model.name + ".json")).write_text(json.dumps(d), encoding="utf-8")


@pytest.fixture
def ort():
    return pytest.importorskip("onnxruntime")


def test_onnx_model_embeds_as_the_model_run_directly(tmp_path, ort):
    m = _fbank_model(tmp_path / "enc.onnx")
    _sidecar(m, name="my-encoder")
    ext = get_extractor(f"onnx:{m}")
    assert ext.name == "my-encoder" and ext.dim == 16
    x = speechlike(seed=1)
    e = ext.embed(x)
    # the same model run directly on the same features, and the computation by hand with the librosa oracle
    feats = model_input(x, FeatureSpec(**FBANK))
    direct = ort.InferenceSession(str(m), providers=["CPUExecutionProvider"]).run(None, {"feats": feats})[0][0]
    np.testing.assert_array_equal(e, direct.astype(np.float64))
    # by hand: kaldi framing (400-sample frames every 160, periodic Hamming, zero-padded to 512), Slaney mel, ln, CMN
    F = np.log(np.maximum(np.stack([librosa.filters.mel(sr=16000, n_fft=512, n_mels=40) @ (
        np.abs(np.fft.rfft(np.pad(x[t * 160:t * 160 + 400] * (0.54 - 0.46 * np.cos(2 * np.pi * np.arange(400) / 400)),
                                  (0, 112)))) ** 2) for t in range(1 + (x.size - 400) // 160)]), 1e-10))
    F -= F.mean(axis=0)
    np.testing.assert_allclose(e, np.tanh(F @ W).mean(axis=0), rtol=0, atol=2e-5)
    # deterministic, and the pickled extractor (as Dask sends it) embeds identically
    np.testing.assert_array_equal(e, ext.embed(x.copy()))
    ext2 = pickle.loads(pickle.dumps(ext))
    assert ext2.name == "my-encoder" and ext2.path.is_absolute() and len(pickle.dumps(ext)) < 2000
    np.testing.assert_array_equal(ext2.embed(x), e)


def test_onnx_layout_symbolic_output_and_features_option(tmp_path, ort):
    x = speechlike(seed=2)
    a = _fbank_model(tmp_path / "a.onnx")
    _sidecar(a)
    b = _fbank_model(tmp_path / "b.onnx", out_shape=("batch", "dim"), in_shape=(1, 40, "T"), transpose=True)
    side = tmp_path / "feats.json"
    side.write_text(json.dumps({**FBANK, "layout": "feature_major"}))
    eb = get_extractor(f"onnx:{b}", features=side)
    assert eb.dim == 16 and eb.name == "onnx-b"  # dimension from the probe run
    np.testing.assert_allclose(eb.embed(x), get_extractor(f"onnx:{a}").embed(x), rtol=0, atol=1e-6)


def test_onnx_waveform_model(tmp_path, ort):
    m = _model(tmp_path / "w.onnx",
               [("ReduceMean", ["wav"], ["m1"], {"axes": [1], "keepdims": 1}),
                ("Mul", ["wav", "wav"], ["sq"]), ("ReduceMean", ["sq"], ["m2"], {"axes": [1], "keepdims": 1}),
                ("ReduceMax", ["wav"], ["mx"], {"axes": [1], "keepdims": 1}),
                ("Concat", ["m1", "m2", "mx"], ["emb"], {"axis": 1})],
               [("wav", [1, "n"])], [("emb", [1, 3])])
    _sidecar_w = tmp_path / "w.onnx.json"
    _sidecar_w.write_text(json.dumps({"type": "waveform", "waveform_scale": 32768}))
    ext = get_extractor(f"onnx:{m}")
    x = speechlike(seed=3)
    s = (x * 32768).astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(ext.embed(x), [s.mean(), (s * s).mean(), s.max()], rtol=1e-5)


def test_onnx_errors_name_the_file(tmp_path, ort):
    missing = tmp_path / "nope.onnx"
    with pytest.raises(VpevalError, match=f"{missing}: no such model file"):
        get_extractor(f"onnx:{missing}")
    m = _fbank_model(tmp_path / "enc.onnx")
    with pytest.raises(VpevalError, match=r"enc\.onnx: no feature sidecar .*enc\.onnx\.json"):
        get_extractor(f"onnx:{m}")
    (tmp_path / "enc.onnx.json").write_text('{"type": "fbank",\n "n_mels": 40,,}')
    with pytest.raises(InputFileError, match=r"enc\.onnx\.json:2: invalid JSON"):
        get_extractor(f"onnx:{m}")
    # wrong rank: a fbank sidecar on a waveform model
    w = _model(tmp_path / "wave.onnx", [("ReduceMean", ["wav"], ["emb"], {"axes": [1], "keepdims": 1})],
               [("wav", [1, "n"])], [("emb", [1, 1])])
    with pytest.raises(VpevalError, match=r"wave\.onnx: input 'wav' has rank 2 .* need rank 3"):
        get_extractor(f"onnx:{w}", features=FBANK)
    with pytest.raises(VpevalError, match=r"enc\.onnx: input 'feats' has 40 features on axis 2 .*n_mels=80"):
        get_extractor(f"onnx:{m}", features={**FBANK, "n_mels": 80})
    fixed = _fbank_model(tmp_path / "fixed.onnx", in_shape=(1, 200, 40))
    with pytest.raises(VpevalError, match=r"fixed\.onnx: .*fixed time axis of 200"):
        get_extractor(f"onnx:{fixed}", features=FBANK)
    # NaN output: (f - f) / (f - f)
    nan = _model(tmp_path / "nan.onnx", [("Sub", ["feats", "feats"], ["z"]), ("Div", ["z", "z"], ["q"]),
                                         ("ReduceMean", ["q"], ["emb"], {"axes": [1], "keepdims": 0})],
                 [("feats", [1, "T", 40])], [("emb", [1, 40])])
    ext = get_extractor(f"onnx:{nan}", features=FBANK)
    with pytest.raises(VpevalError, match=r"nan\.onnx: the model returned NaN or infinite values \(40 of 40\)"):
        ext.embed(speechlike())
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"not a model")
    with pytest.raises(VpevalError, match=r"junk\.onnx: onnxruntime cannot load it"):
        get_extractor(f"onnx:{junk}", features=FBANK)
    with pytest.raises(VpevalError, match="give the model file's path"):
        get_extractor("onnx:")
    with pytest.raises(VpevalError, match="features are stated for model files"):
        get_extractor("mfcc", features=FBANK)
    assert MODEL_PREFIXES == ("onnx:", "torchscript:")


def test_onnx_error_in_a_folder_names_the_audio_file_and_the_model(tmp_path, ort):
    import soundfile as sf

    nan = _model(tmp_path / "nan.onnx", [("Sub", ["feats", "feats"], ["z"]), ("Div", ["z", "z"], ["q"]),
                                         ("ReduceMean", ["q"], ["emb"], {"axes": [1], "keepdims": 0})],
                 [("feats", [1, "T", 40])], [("emb", [1, 40])])
    (tmp_path / "in").mkdir()
    sf.write(tmp_path / "in" / "s1-u1.flac", speechlike(), 16000)
    with pytest.raises(InputFileError, match=r"s1-u1\.flac: .*nan\.onnx: the model returned NaN"):
        embed_folder(tmp_path / "in", get_extractor(f"onnx:{nan}", features=FBANK), quiet=True)


def test_onnxruntime_missing_says_how_to_install(tmp_path, monkeypatch):
    m = tmp_path / "m.onnx"
    m.write_bytes(b"x")
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(ExtractorUnavailableError, match=r"pip install -e '\.\[onnx\]'"):
        get_extractor(f"onnx:{m}", features=FBANK)


def test_cli_embed_onnx_and_read_back(tmp_path, ort):
    import soundfile as sf
    from typer.testing import CliRunner

    from vpeval.cli.main import app
    from vpeval.io.embeddings import read_embeddings

    m = _fbank_model(tmp_path / "enc.onnx")
    (tmp_path / "in").mkdir()
    for i, spk in enumerate(["s1", "s2"]):
        sf.write(tmp_path / "in" / f"{spk}-u{i}.flac", speechlike(seed=i), 16000)
    side = tmp_path / "f.json"
    side.write_text(json.dumps({**FBANK, "name": "ecapa-test"}))
    out = tmp_path / "e.npz"
    r = CliRunner().invoke(app, ["embed", str(tmp_path / "in"), "-o", str(out), "-e", f"onnx:{m}", "--features",
                                 str(side), "-q"])
    assert r.exit_code == 0, r.output
    es = read_embeddings(out)
    assert es.extractor == "ecapa-test" and es.embeddings.shape == (2, 16)
    ext = get_extractor(f"onnx:{m}", features=side)
    from vpeval.audio.io import read_audio

    direct = ext.embed(read_audio(tmp_path / "in" / "s2-u1.flac"))
    np.testing.assert_array_equal(es.embeddings[1], direct.astype(np.float32))  # the file holds float32
    r = CliRunner().invoke(app, ["embed", str(tmp_path / "in"), "-o", str(tmp_path / "x.npz"), "-e",
                                 f"onnx:{tmp_path / 'missing.onnx'}", "-q"])
    assert r.exit_code != 0 and "missing.onnx: no such model file" in r.output


# --- TorchScript --------------------------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:`torch.jit:DeprecationWarning")
def test_torchscript_model_embeds_as_the_module_run_directly(tmp_path):
    torch = pytest.importorskip("torch")

    class Enc(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.from_numpy(W.astype(np.float32)))

        def forward(self, feats):
            return torch.tanh(feats @ self.w).mean(dim=1)

    mod = Enc().eval()
    path = tmp_path / "enc.pt"
    torch.jit.save(torch.jit.script(mod), str(path))
    ext = get_extractor(f"torchscript:{path}", features=FBANK)
    assert ext.dim == 16 and ext.name == "torchscript-enc"
    x = speechlike(seed=4)
    with torch.no_grad():
        direct = mod(torch.from_numpy(model_input(x, FeatureSpec(**FBANK)))).numpy()[0]
    np.testing.assert_array_equal(ext.embed(x), direct.astype(np.float64))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(ext)).embed(x), ext.embed(x))
    # a module that rejects rank-3 input fails at opening, naming the file
    class Flat(torch.nn.Module):
        def forward(self, wav):
            return wav.reshape(1, -1)[:, :8] @ torch.ones(8, 4) if wav.dim() == 2 else wav[0, 0, 0, 0]

    bad = tmp_path / "bad.pt"
    torch.jit.save(torch.jit.script(Flat()), str(bad))
    with pytest.raises(VpevalError, match=r"bad\.pt: the model failed on a probe input of shape \(1, 198, 40\)"):
        get_extractor(f"torchscript:{bad}", features=FBANK)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_torch_exported_onnx_embeds_as_the_torch_module(tmp_path, ort):
    """The user's path: a torch speaker model (conv + statistics pooling) exported with torch.onnx.export and a
    dynamic time axis embeds through onnx:PATH as the torch module itself does on the same features."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnx")
    torch.manual_seed(0)

    class Enc(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv1d(40, 12, 5)
            self.proj = torch.nn.Linear(24, 10)

        def forward(self, feats):  # (1, T, 40)
            h = torch.relu(self.conv(feats.transpose(1, 2)))
            return self.proj(torch.cat([h.mean(dim=2), h.std(dim=2)], dim=1))  # (1, 10)

    mod = Enc().eval()
    path = tmp_path / "ecapa-like.onnx"
    torch.onnx.export(mod, (torch.randn(1, 50, 40),), str(path), dynamo=False, input_names=["feats"],
                      output_names=["emb"], dynamic_axes={"feats": {1: "time"}})
    _sidecar(path)
    ext = get_extractor(f"onnx:{path}")
    assert ext.dim == 10
    for seed, n in ((5, 16000), (6, 40000)):  # two lengths through the same file
        x = speechlike(n, seed=seed)
        with torch.no_grad():
            direct = mod(torch.from_numpy(model_input(x, FeatureSpec(**FBANK)))).numpy()[0].astype(np.float64)
        np.testing.assert_allclose(ext.embed(x), direct, rtol=0, atol=1e-5 * max(1.0, np.abs(direct).max()))


def test_a_relative_model_path_travels_as_an_absolute_one(tmp_path, monkeypatch, ort):
    m = _fbank_model(tmp_path / "enc.onnx")
    _sidecar(m)
    monkeypatch.chdir(tmp_path)
    ext = get_extractor("onnx:enc.onnx")
    assert ext.name == "onnx-enc"
    x = speechlike(seed=8)
    e = ext.embed(x)
    data = pickle.dumps(ext)  # sent from here
    monkeypatch.chdir(tmp_path.parent)  # to a worker elsewhere
    back = pickle.loads(data)
    assert back.path == m.resolve() or back.path == m
    np.testing.assert_array_equal(back.embed(x), e)
