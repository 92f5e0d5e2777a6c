"""The ``resample`` anonymizer: joint pitch and formant shift by resampling; waveform in, waveform out.

The "resampling" modification of Kai, Takamichi, Shiota, Kiya, "Lightweight voice anonymization based on
data-driven optimization of cascaded voice modification modules", IEEE SLT 2021: the signal is
time-stretched by ``ratio`` with a phase vocoder and resampled by ``1/ratio`` (``librosa.effects.pitch_shift``
with ``12 log2(ratio)`` semitones), which scales every frequency (F0 and formants alike) by ``ratio`` and
keeps the duration. No vocoder analysis: a different mechanism from both McAdams (LPC pole angles) and
``vtln`` (WORLD envelope warping). The output is scaled to the input's RMS, lowered if needed so the peak
stays within 16-bit PCM (:mod:`vpeval.audio.anonymize.base`).

Its ratio is drawn per speaker or per utterance with :func:`vpeval.audio.anonymize.base.draw_parameter`.
"""

from __future__ import annotations

import numpy as np

from ..._docs import fill_doc
from ...errors import VpevalError
from .base import _check, _level

__all__ = ["resample_shift", "RESAMPLE_RANGE"]

RESAMPLE_RANGE = (0.8, 1.25)
"""Range of the frequency ratio drawn for ``resample`` (log-uniform, excluding [0.93, 1.07])."""


@fill_doc
def resample_shift(waveform, ratio: float, *, sr: int = 16000) -> np.ndarray:
    """Scale every frequency by ``ratio`` keeping the duration: phase-vocoder stretch + resampling.

    Parameters
    ----------
    waveform : array_like of shape (n_samples,)
    ratio : float
        Frequency factor (> 0); 1 = unchanged (up to the phase vocoder's round-off).
    sr : int, default 16000

    {returns_anonymized_waveform}

    Raises
    ------
    VpevalError
        Bad waveform or ``ratio <= 0``.
    """
    from ..io import _require

    x = _check(waveform)
    if not (np.isfinite(ratio) and ratio > 0):
        raise VpevalError(f"ratio must be > 0, got {ratio!r}")
    librosa = _require("librosa")
    y = librosa.effects.pitch_shift(x, sr=sr, n_steps=12 * np.log2(ratio), res_type="soxr_hq")
    return _level(y, x)
