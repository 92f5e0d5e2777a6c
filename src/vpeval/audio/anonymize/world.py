"""Two more signal-processing anonymizers beside McAdams (:mod:`.mcadams_coefficient`); waveforms in, waveforms out.

``vtln`` — F0 scaling plus frequency warping of the spectral envelope (VoiceMask / vocal-tract-length style)
    Qian et al., "VoiceMask: Anonymize and Sanitize Voice Input on Mobile Devices", arXiv:1711.11460, 2017
    (frequency warping of the spectrum by the bilinear function, plus pitch change), after the VTLN voice
    conversion of Sundermann & Ney, "VTLN-based voice conversion", ISSPIT 2003. Here, on the WORLD vocoder
    (Morise et al., IEICE Trans. Inf. Syst. E99-D(7), 2016; ``pyworld``):

    1. analysis at 5 ms frames: F0 by DIO + StoneMask, spectral envelope by CheapTrick, aperiodicity by D4C;
    2. F0 of voiced frames multiplied by ``f0_ratio`` (unvoiced frames stay 0);
    3. every frame's envelope warped along frequency by the bilinear (first-order all-pass) map with
       coefficient ``warp`` in (-1, 1): the output envelope at normalised angular frequency ``w`` is the input
       envelope at ``phi_{-warp}(w)``, where ``phi_a(w) = w + 2 atan(a sin w / (1 - a cos w))`` (``phi_{-a}`` is
       the inverse of ``phi_a``), by linear interpolation on WORLD's frequency bins. ``warp > 0`` moves
       formants up (a shorter vocal tract), ``warp < 0`` down; 0 leaves the envelope unchanged;
    4. resynthesis; the output is scaled to the input's RMS, lowered if needed so the peak stays within
       16-bit PCM (as McAdams does), and cut or zero-padded to the input length.

``resample`` — joint pitch and formant shift by resampling (phase vocoder + resampling)
    The "resampling" modification of Kai, Takamichi, Shiota, Kiya, "Lightweight voice anonymization based on
    data-driven optimization of cascaded voice modification modules", IEEE SLT 2021: the signal is
    time-stretched by ``ratio`` with a phase vocoder and resampled by ``1/ratio`` (``librosa.effects.pitch_shift``
    with ``12 log2(ratio)`` semitones), which scales every frequency (F0 and formants alike) by ``ratio`` and
    keeps the duration. No vocoder analysis: a different mechanism from both McAdams (LPC pole angles) and
    ``vtln`` (WORLD envelope warping). Output scaled as above.

Parameters are drawn per speaker or per utterance with :func:`draw_parameter` (the same stable hash as
:func:`vpeval.audio.anonymize.draw_alpha`), so they never depend on file order.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ...errors import VpevalError

__all__ = ["vtln", "resample_shift", "bilinear_warp", "draw_parameter", "VTLN_WARP_RANGE", "VTLN_F0_RANGE",
           "RESAMPLE_RANGE"]

VTLN_WARP_RANGE = (0.08, 0.20)
"""Range of |warp| drawn for ``vtln`` (its sign drawn too, so formants move up or down)."""

VTLN_F0_RANGE = (0.7, 1.4)
"""Range of the F0 ratio drawn for ``vtln`` (log-uniform)."""

RESAMPLE_RANGE = (0.8, 1.25)
"""Range of the frequency ratio drawn for ``resample`` (log-uniform, excluding [0.93, 1.07])."""

_PCM16_MAX = 32767 / 32768


def draw_parameter(seed: int, key: str, salt: str) -> float:
    """A uniform number in [0, 1) for ``(seed, key, salt)``, the same on every machine and in every order.

    The generator is ``numpy.random.default_rng([seed, h])`` with ``h`` the first 8 bytes (little-endian) of
    the SHA-256 of ``salt + "\\0" + key`` (UTF-8); ``salt`` names the parameter, so two parameters of one key
    are independent.

    Examples
    --------
    >>> a = draw_parameter(1, "1688", "warp")
    >>> 0 <= a < 1, a == draw_parameter(1, "1688", "warp"), a == draw_parameter(1, "1688", "f0")
    (True, True, False)
    """
    seed = int(seed)
    if seed < 0:
        raise VpevalError(f"seed must be >= 0, got {seed}")
    h = int.from_bytes(hashlib.sha256(f"{salt}\0{key}".encode("utf-8")).digest()[:8], "little")
    return float(np.random.default_rng([seed, h]).uniform())


def _check(x) -> np.ndarray:
    x = np.ascontiguousarray(x, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise VpevalError(f"waveform must be a non-empty 1-D array, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise VpevalError("waveform contains NaN or infinite samples")
    return x


def _level(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    n = x.size
    y = np.asarray(y, dtype=np.float64)[:n]
    if y.size < n:
        y = np.pad(y, (0, n - y.size))
    rms_in, rms_out = float(np.sqrt(np.mean(x * x))), float(np.sqrt(np.mean(y * y)))
    if rms_out > 0:
        y = y * (rms_in / rms_out)
    peak = float(np.max(np.abs(y)))
    if peak > _PCM16_MAX:
        y = np.clip(y * (_PCM16_MAX / peak), -_PCM16_MAX, _PCM16_MAX)
    return y


def bilinear_warp(w, a: float) -> np.ndarray:
    """The bilinear (all-pass) frequency map ``phi_a(w) = w + 2 atan(a sin w / (1 - a cos w))``.

    Maps [0, pi] onto [0, pi] increasingly for ``|a| < 1``; ``phi_{-a}`` is its inverse.

    Examples
    --------
    >>> w = np.array([0, 0.5, 1.0, np.pi])
    >>> np.allclose(bilinear_warp(bilinear_warp(w, 0.2), -0.2), w), float(bilinear_warp(np.pi, 0.3))
    (True, 3.141592653589793)
    """
    w = np.asarray(w, dtype=np.float64)
    return w + 2 * np.arctan2(a * np.sin(w), 1 - a * np.cos(w))


def vtln(waveform, warp: float, f0_ratio: float, *, sr: int = 16000, frame_period_ms: float = 5.0) -> np.ndarray:
    """F0 scaling plus bilinear warping of the WORLD spectral envelope (module docstring).

    Parameters
    ----------
    waveform : array_like of shape (n_samples,)
    warp : float
        Bilinear warping coefficient in (-1, 1); 0 = no warping.
    f0_ratio : float
        Factor on F0 (> 0); 1 = unchanged.
    sr : int, default 16000
    frame_period_ms : float, default 5

    Returns
    -------
    ndarray of shape (n_samples,), float64
        At the input's RMS, peak at most 32767/32768.

    Raises
    ------
    VpevalError
        Bad waveform, ``|warp| >= 1`` or ``f0_ratio <= 0``.
    ImportError
        pyworld missing (extra ``vocoder``).
    """
    from ..pitch import F0_RANGE, _pyworld

    x = _check(waveform)
    if not (np.isfinite(warp) and -1 < warp < 1):
        raise VpevalError(f"warp must be in (-1, 1), got {warp!r}")
    if not (np.isfinite(f0_ratio) and f0_ratio > 0):
        raise VpevalError(f"f0_ratio must be > 0, got {f0_ratio!r}")
    pw = _pyworld()
    f0, t = pw.dio(x, sr, f0_floor=F0_RANGE[0], f0_ceil=F0_RANGE[1], frame_period=frame_period_ms)
    f0 = pw.stonemask(x, f0, t, sr)
    sp = pw.cheaptrick(x, f0, t, sr)
    ap = pw.d4c(x, f0, t, sr)
    bins = np.linspace(0, np.pi, sp.shape[1])
    src = bilinear_warp(bins, -warp)  # where each output bin reads the input envelope
    sp2 = np.empty_like(sp)
    for i in range(sp.shape[0]):
        sp2[i] = np.interp(src, bins, sp[i])
    y = pw.synthesize(np.ascontiguousarray(f0 * f0_ratio), np.ascontiguousarray(sp2), ap, sr, frame_period_ms)
    return _level(y, x)


def resample_shift(waveform, ratio: float, *, sr: int = 16000) -> np.ndarray:
    """Scale every frequency by ``ratio`` keeping the duration: phase-vocoder stretch + resampling.

    Parameters
    ----------
    waveform : array_like of shape (n_samples,)
    ratio : float
        Frequency factor (> 0); 1 = unchanged (up to the phase vocoder's round-off).
    sr : int, default 16000

    Returns
    -------
    ndarray of shape (n_samples,), float64
        At the input's RMS, peak at most 32767/32768.

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
