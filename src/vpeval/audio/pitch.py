"""F0 (fundamental frequency) contours of waveforms, with the WORLD vocoder (``pyworld``); no file I/O.

:func:`f0_contour` runs WORLD's DIO estimator refined by StoneMask (Morise, Yokomori, Ozawa, "WORLD: a
vocoder-based high-quality speech synthesis system for real-time applications", IEICE Trans. Inf. Syst.
E99-D(7), 2016) on a fixed 10 ms frame grid: one value per frame in Hz, 0 for unvoiced frames. The frame
grid depends only on the number of samples, so an utterance and its same-length anonymized version give
contours of the same length, frame by frame comparable (:func:`vpeval.metrics.utility.pitch_correlation`).

``pyworld`` comes from the ``vocoder`` extra (the ``pyworld-prebuilt`` wheels: the same WORLD wrapper,
built for current Python without the removed ``pkg_resources``).
"""

from __future__ import annotations

import numpy as np

from ..errors import VpevalError

__all__ = ["f0_contour", "FRAME_PERIOD_MS", "F0_RANGE"]

FRAME_PERIOD_MS = 10.0
"""Frame period of the F0 contours (ms)."""

F0_RANGE = (50.0, 500.0)
"""Search range of F0 (Hz): covers adult and child speech."""


def _pyworld():
    try:
        import pyworld
    except ImportError as exc:
        raise ImportError(f"F0 extraction and the WORLD anonymizers need pyworld: pip install 'vpeval[vocoder]' "
                          f"({exc})") from None
    return pyworld


def f0_contour(waveform, sr: int = 16000, *, frame_period_ms: float = FRAME_PERIOD_MS,
               f0_range=F0_RANGE) -> np.ndarray:
    """F0 per frame (Hz; 0 = unvoiced) of a mono waveform, WORLD DIO + StoneMask.

    Parameters
    ----------
    waveform : array_like of shape (n_samples,)
        Mono samples, float.
    sr : int, default 16000
        Sampling rate in Hz.
    frame_period_ms : float, default 10
    f0_range : (float, float), default (50, 500)
        F0 search range in Hz.

    Returns
    -------
    ndarray of shape (1 + floor(1000 n_samples / (sr frame_period_ms)),), float64

    Raises
    ------
    VpevalError
        Empty, non-1-D or non-finite input.
    ImportError
        pyworld is not installed.

    Examples
    --------
    >>> t = np.arange(16000) / 16000
    >>> f0 = f0_contour(0.5 * np.sin(2 * np.pi * 150 * t))
    >>> f0.shape, bool(abs(np.median(f0[f0 > 0]) - 150) < 1)
    ((101,), True)
    """
    x = np.ascontiguousarray(waveform, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise VpevalError(f"waveform must be a non-empty 1-D array, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise VpevalError("waveform contains NaN or infinite samples")
    pw = _pyworld()
    lo, hi = (float(v) for v in f0_range)
    f0, t = pw.dio(x, sr, f0_floor=lo, f0_ceil=hi, frame_period=frame_period_ms)
    return np.asarray(pw.stonemask(x, f0, t, sr), dtype=np.float64)
