"""GE2E speaker embeddings with the pretrained encoder of the ``resemblyzer`` package (optional extra).

``resemblyzer`` 0.1.4 (Apache-2.0) ships the weights of a 3-layer LSTM speaker encoder trained with the
generalised end-to-end (GE2E) loss (Wan et al., ICASSP 2018) inside its wheel; nothing is downloaded.
It is an optional dependency, imported only when a :class:`ResemblyzerExtractor` is created.  Install::

    pip install torch==2.13.0 webrtcvad-wheels
    pip install --no-deps resemblyzer==0.1.4

(``--no-deps`` because resemblyzer's declared dependency ``webrtcvad`` does not build with current
setuptools; ``webrtcvad-wheels`` provides the same ``webrtcvad`` module prebuilt.)

Preprocessing is done here, not with ``resemblyzer.preprocess_wav``, with the same steps and constants
(resemblyzer's ``hparams``): (1) volume normalisation to -30 dBFS RMS, only ever increasing the level;
(2) WebRTC VAD (aggressiveness 3) on 30 ms windows of the 16-bit signal, a moving average over 8 windows
with zero padding (a window is kept when more than half of the 8 are voiced), binary dilation with a
7-window structuring element (3 windows each side; resemblyzer's ``vad_max_silence_length + 1``), and
removal of the unvoiced windows (the tail shorter than one window is dropped).  Differences:
the 16-bit conversion for the VAD is clipped to the int16 range (resemblyzer's wraps around when the
normalised signal exceeds full scale) and is vectorised (resemblyzer packs sample by sample), and an
utterance in which the VAD finds no speech raises an error instead of being embedded as silence.  The
embedding itself is ``VoiceEncoder.embed_utterance`` (1.6 s partials at 1.3 per second, mean of the
L2-normalised partial embeddings, renormalised): 256 dimensions, unit L2 norm, non-negative entries.

Compatibility checked with NumPy 2.4, SciPy 1.17, librosa 0.11 and torch 2.13 (CPU): resemblyzer works
unchanged; importing it emits a SciPy ``DeprecationWarning`` (``scipy.ndimage.morphology``, to be
removed in SciPy 2.0), which is silenced at import.
"""

from __future__ import annotations

import warnings

import numpy as np

from ...errors import VpevalError
from .base import Extractor, ExtractorUnavailableError, package_record

__all__ = ["ResemblyzerExtractor", "INSTALL_HINT", "preprocess"]

INSTALL_HINT = (
    "the resemblyzer extractor needs the optional packages torch, webrtcvad-wheels and resemblyzer; "
    "install them with:\n"
    "    pip install torch==2.13.0 webrtcvad-wheels\n"
    "    pip install --no-deps resemblyzer==0.1.4\n"
    "(or `pip install 'vpeval[embed]'` followed by the second line)"
)

_SR = 16000
_TARGET_DBFS = -30.0
_VAD_WINDOW = 480  # 30 ms at 16 kHz
_VAD_AVG = 8
_VAD_DILATE = 6  # resemblyzer's vad_max_silence_length; the structuring element has 7 windows
_encoders: dict = {}


def _import():
    try:
        import webrtcvad  # noqa: F401  (provided by webrtcvad-wheels)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            import resemblyzer
            import torch
    except ImportError as exc:
        raise ExtractorUnavailableError(f"{INSTALL_HINT}\n(import failed: {exc})") from None
    return resemblyzer, torch


def preprocess(x: np.ndarray) -> np.ndarray:
    """Volume-normalise and VAD-trim a 16 kHz waveform as resemblyzer does (see module doc).

    Raises
    ------
    ExtractorUnavailableError
        ``webrtcvad`` (package ``webrtcvad-wheels``) is not installed.
    VpevalError
        Silent input, or no speech found by the VAD.
    """
    try:
        import webrtcvad
    except ImportError as exc:
        raise ExtractorUnavailableError(f"{INSTALL_HINT}\n(import failed: {exc})") from None
    from scipy.ndimage import binary_dilation

    x = np.asarray(x, dtype=np.float64)
    rms = float(np.sqrt(np.mean(x * x)))
    if rms == 0.0:
        raise VpevalError("resemblyzer: the waveform is silent (all samples are zero)")
    change_db = _TARGET_DBFS - 20.0 * np.log10(rms)
    if change_db > 0:
        x = x * 10.0 ** (change_db / 20.0)
    n_win = x.size // _VAD_WINDOW
    if n_win == 0:
        raise VpevalError(f"resemblyzer: utterance shorter than one VAD window ({_VAD_WINDOW} samples)")
    x = x[: n_win * _VAD_WINDOW]
    pcm = np.clip(np.round(x * 32767), -32768, 32767).astype("<i2").tobytes()
    vad = webrtcvad.Vad(3)
    step = 2 * _VAD_WINDOW
    voiced = np.array(
        [vad.is_speech(pcm[i * step : (i + 1) * step], _SR) for i in range(n_win)], dtype=np.int64
    )
    padded = np.concatenate([np.zeros((_VAD_AVG - 1) // 2, np.int64), voiced, np.zeros(_VAD_AVG // 2, np.int64)])
    counts = np.convolve(padded, np.ones(_VAD_AVG, np.int64), mode="valid")  # length n_win
    mask = 2 * counts > _VAD_AVG
    mask = binary_dilation(mask, np.ones(_VAD_DILATE + 1, dtype=bool))
    keep = np.repeat(mask, _VAD_WINDOW)
    if not keep.any():
        raise VpevalError("resemblyzer: the voice activity detector found no speech in the utterance")
    return x[keep]


class ResemblyzerExtractor(Extractor):
    """GE2E speaker encoder of ``resemblyzer`` (256-dim, unit-norm; preprocessing in the module doc).

    Parameters
    ----------
    device : str, default "cpu"
        Torch device.
    threads : int, default 1
        Torch intra-op threads used while embedding (set for the duration of each :meth:`embed` call and
        restored afterwards, so torch's global setting is left as found).  One thread is the fastest
        choice on small CPUs: each utterance is a small batch of partials, and on a loaded 2-core machine
        two threads ran 5x slower than one (``benchmarks/bench_audio.py``).  Parallelise over files
        with processes instead.

    Raises
    ------
    ExtractorUnavailableError
        torch, webrtcvad-wheels or resemblyzer is not installed (the message gives the install lines).
    """

    name = "resemblyzer-ge2e"
    dim = 256
    min_samples = _VAD_WINDOW
    min_frame = "one voice-activity (VAD) window"

    def __init__(self, device: str = "cpu", threads: int = 1):
        resemblyzer, torch = _import()
        if int(threads) != threads or threads < 1:
            raise VpevalError(f"threads must be a positive integer, got {threads!r}")
        self.threads = int(threads)
        self._torch = torch
        self.device = str(device)
        key = self.device
        if key not in _encoders:
            _encoders[key] = resemblyzer.VoiceEncoder(device=self.device, verbose=False)
        self._encoder = _encoders[key]
        self._package = package_record("resemblyzer")

    def _identity(self) -> dict:
        return {"kind": "resemblyzer", "package": self._package}

    def __reduce__(self):
        # Pickled (e.g. sent to a Dask worker) as its configuration, never with the encoder's weights: the
        # receiving process builds it anew, loading the weights once per process (module-level cache).
        return (type(self), (self.device, self.threads))

    def _embed(self, x: np.ndarray) -> np.ndarray:
        wav = preprocess(x)
        torch = self._torch
        old = torch.get_num_threads()
        if old != self.threads:
            torch.set_num_threads(self.threads)
        try:
            e = self._encoder.embed_utterance(wav)
        finally:
            if old != self.threads:
                torch.set_num_threads(old)
        return np.asarray(e, dtype=np.float64)
