"""The ``vtln`` anonymizer: WORLD F0 scaling + bilinear spectral-envelope warping; waveform in, waveform out.

VoiceMask / vocal-tract-length style: Qian et al., "VoiceMask: Anonymize and Sanitize Voice Input on Mobile
Devices", arXiv:1711.11460, 2017 (frequency warping of the spectrum by the bilinear function, plus pitch
change), after the VTLN voice conversion of Sundermann & Ney, "VTLN-based voice conversion", ISSPIT 2003.
Here, on the WORLD vocoder (Morise et al., IEICE Trans. Inf. Syst. E99-D(7), 2016; ``pyworld``):

1. analysis at 5 ms frames: F0 by DIO + StoneMask, spectral envelope by CheapTrick, aperiodicity by D4C;
2. F0 of voiced frames multiplied by ``f0_ratio`` (unvoiced frames stay 0);
3. every frame's envelope warped along frequency by the bilinear (first-order all-pass) map with
   coefficient ``warp`` in (-1, 1): the output envelope at normalised angular frequency ``w`` is the input
   envelope at ``phi_{-warp}(w)``, where ``phi_a(w) = w + 2 atan(a sin w / (1 - a cos w))`` (``phi_{-a}`` is
   the inverse of ``phi_a``), by linear interpolation on WORLD's frequency bins. ``warp > 0`` moves
   formants up (a shorter vocal tract), ``warp < 0`` down; 0 leaves the envelope unchanged;
4. resynthesis; the output is scaled to the input's RMS, lowered if needed so the peak stays within
   16-bit PCM (as McAdams does), and cut or zero-padded to the input length.

Its parameters are drawn per speaker or per utterance with :func:`vpeval.audio.anonymize.base.draw_parameter`
(the same stable hash as :func:`vpeval.audio.anonymize.draw_alpha`), so they never depend on file order.
"""

from __future__ import annotations

import numpy as np

from ..._docs import fill_doc
from ...errors import VpevalError
from .base import _check, _level

__all__ = ["vtln", "bilinear_warp", "VTLN_WARP_RANGE", "VTLN_F0_RANGE"]

VTLN_WARP_RANGE = (0.08, 0.20)
"""Range of |warp| drawn for ``vtln`` (its sign drawn too, so formants move up or down)."""

VTLN_F0_RANGE = (0.7, 1.4)
"""Range of the F0 ratio drawn for ``vtln`` (log-uniform)."""


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


@fill_doc
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

    {returns_anonymized_waveform}

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
