"""A model-free speaker "embedding": mean and standard deviation of MFCCs.

A deliberately weak attacker that needs no trained model: it captures the average spectral envelope and
its variability, so it separates speakers (and recording channels) roughly, and reacts strongly to
formant shifts such as McAdams anonymization.
"""

from __future__ import annotations

import numpy as np

from ...errors import VpevalError
from ..io import _require
from .base import Extractor

__all__ = ["MfccStatsExtractor", "MFCC_SETTINGS"]

#: The settings of :func:`librosa.feature.mfcc` every :class:`MfccStatsExtractor` uses (besides ``n_mfcc``); the
#: extractor record (``info()["settings"]``) states them.
MFCC_SETTINGS = {"sr": 16000, "n_fft": 512, "win_length": 400, "hop_length": 160, "window": "hann", "center": True,
                 "n_mels": 40, "fmin": 20.0, "fmax": 7600.0}


class MfccStatsExtractor(Extractor):
    """Mean and standard deviation over frames of ``n_mfcc`` MFCCs (``2 * n_mfcc`` dimensions).

    Features: :func:`librosa.feature.mfcc` on the 16 kHz waveform with 25 ms Hann windows
    (``win_length=400``) zero-padded to ``n_fft=512``, 10 ms hop (160 samples), centred frames, 40 mel
    bands between 20 and 7600 Hz, log power in dB (librosa's ``power_to_db``), DCT-II (orthonormal),
    coefficients c0..c{n_mfcc-1} (c0 included: it carries the level).  The embedding is
    ``[mean(c_k) for k] + [std(c_k) for k]`` over all frames (population std, ``ddof=0``).  No
    voice-activity selection, no normalisation, no trained parameters; deterministic.

    Parameters
    ----------
    n_mfcc : int, default 20

    Examples
    --------
    >>> ext = MfccStatsExtractor()
    >>> x = 0.1 * np.sin(2 * np.pi * 200 * np.arange(8000) / 16000)
    >>> e = ext.embed(x, 16000)
    >>> e.shape, ext.name, bool(np.array_equal(e, ext.embed(x, 16000)))
    ((40,), 'mfcc-stats', True)
    """

    name = "mfcc-stats"
    # one STFT frame (n_fft 512, the 25 ms window zero-padded to it): librosa centres and pads frames, so shorter
    # input gave a vector of padding (and librosa's warning 'n_fft=512 is too large for input signal')
    min_samples = MFCC_SETTINGS["n_fft"]
    min_frame = "one 512-sample STFT frame (n_fft)"

    def __init__(self, n_mfcc: int = 20):
        if int(n_mfcc) != n_mfcc or not 1 <= n_mfcc <= 40:
            raise VpevalError(f"n_mfcc must be an integer in [1, 40], got {n_mfcc!r}")
        self.n_mfcc = int(n_mfcc)
        self.dim = 2 * self.n_mfcc
        if self.n_mfcc != 20:
            self.name = f"mfcc-stats-{self.n_mfcc}"

    def _embed(self, x: np.ndarray) -> np.ndarray:
        librosa = _require("librosa")
        m = librosa.feature.mfcc(y=x, n_mfcc=self.n_mfcc, **MFCC_SETTINGS)
        return np.concatenate([m.mean(axis=1), m.std(axis=1)])

    def _identity(self) -> dict:
        return {"kind": "mfcc", "settings": {**MFCC_SETTINGS, "n_mfcc": self.n_mfcc, "log": "power_to_db",
                                             "dct": "ortho", "statistics": ["mean", "std (ddof=0)"]}}
