"""McAdams-coefficient voice anonymization (the VoicePrivacy Challenge baseline B2).

The method (Patino et al., "Speaker anonymisation using the McAdams coefficient", Interspeech 2021;
VoicePrivacy 2020/2022/2024 baseline B2) shifts the formants by warping the angles of the LPC poles:

1. the 16 kHz signal is cut into 20 ms frames (320 samples) with a 10 ms hop, each multiplied by a
   periodic Hann window;
2. an all-pole model of order 20 is fitted to each windowed frame (Burg's method, :func:`librosa.lpc`;
   the autocorrelation method where Burg's result is numerically unstable, see ``mcadams``),
   ``A(z) = 1 + a_1 z^-1 + ... + a_20 z^-20``, and the residual ``e = A(z) x`` is computed;
3. every complex pole ``r exp(i phi)`` of ``1/A(z)`` gets the angle ``sign(phi) |phi|^alpha``
   (radius kept; ``phi`` in radians in (-pi, pi]); real poles (``phi`` = 0 or pi) are left unchanged.
   The new poles still come in conjugate pairs, so the new filter ``A'(z)`` is real, and, with the radii
   unchanged, stable;
4. the residual is filtered through ``1/A'(z)`` (zero initial state in each frame) and the frames are
   overlap-added.  A periodic Hann window at 50 % overlap sums to exactly 1, so with ``alpha = 1``
   the output equals the input up to floating-point round-off: within 1e-6 of full scale on speech and
   harmonic signals, within 1e-5 on pure tones (their poles lie within 1e-3 of the unit circle, where
   going from roots back to a polynomial loses more digits).

Output scaling (no clipping): changing the pole angles changes the filter gains a lot (at ``alpha = 0.5``
the raw output of LibriSpeech utterances is 20-100 times louder than the input), so the overlap-added
signal is multiplied by one factor per utterance: the factor that gives it the input's RMS level, lowered
if needed so that the peak does not exceed ``32767/32768`` (the largest 16-bit PCM value).  The output is
therefore never clipped when written as 16-bit PCM.  Output length equals input length.

With ``alpha`` < 1, poles below 1 rad (2546 Hz at 16 kHz) move up and poles above it move down
(``phi^alpha`` > ``phi`` exactly when ``phi`` < 1 rad).  VoicePrivacy 2020 used a fixed
``alpha = 0.8``; VoicePrivacy 2024 draws ``alpha`` uniformly in [0.5, 0.9].  :func:`draw_alpha` draws it
deterministically from a seed and a key (utterance id for per-utterance draws, speaker id for per-speaker
draws) through a stable hash, so the value never depends on file order or on which other files exist.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ..._docs import fill_doc
from ...errors import VpevalError
from ..io import SAMPLE_RATE, _require
from .base import _PCM16_MAX

__all__ = [
    "mcadams",
    "mcadams_pole_angles",
    "draw_alpha",
    "DEFAULT_ALPHA",
    "ALPHA_RANGE",
]

DEFAULT_ALPHA = 0.8
"""Fixed McAdams coefficient of the VoicePrivacy 2020 baseline B2."""

ALPHA_RANGE = (0.5, 0.9)
"""Range from which VoicePrivacy 2024 draws the McAdams coefficient."""

def _check_alpha(alpha) -> float:
    try:
        a = float(alpha)
    except (TypeError, ValueError):
        raise VpevalError(f"alpha must be a number, got {alpha!r}") from None
    if not np.isfinite(a) or not 0 < a <= 1:
        raise VpevalError(
            f"alpha must be in (0, 1], got {alpha!r} (above 1, pole angles beyond pi**(1/alpha) would be "
            "mapped past pi, i.e. aliased)"
        )
    return a


def mcadams_pole_angles(poles, alpha: float) -> np.ndarray:
    """Map pole angles ``phi -> sign(phi) |phi|**alpha`` for complex poles; keep real poles.

    Parameters
    ----------
    poles : array_like of complex
        Poles of an all-pole filter (any shape).
    alpha : float
        McAdams coefficient, 0 < alpha <= 1 (above 1 the largest angles would be mapped past pi).

    Returns
    -------
    ndarray of complex, same shape
        Same radii; angles (radians, in (-pi, pi]) warped for poles whose imaginary part is not zero.
        Real poles (imaginary part exactly 0, angle 0 or pi) are returned unchanged.  Conjugate pairs map
        to conjugate pairs because the map is odd in ``phi``.

    Examples
    --------
    >>> p = np.array([0.9 * np.exp(1j * 0.25), 0.9 * np.exp(-1j * 0.25), -0.5 + 0j])
    >>> q = mcadams_pole_angles(p, 0.5)
    >>> np.round(np.angle(q), 6).tolist(), np.round(np.abs(q), 6).tolist()
    ([0.5, -0.5, 3.141593], [0.9, 0.9, 0.5])
    """
    alpha = _check_alpha(alpha)
    p = np.asarray(poles, dtype=np.complex128)
    phi = np.angle(p)
    new_phi = np.sign(phi) * np.abs(phi) ** alpha
    out = np.abs(p) * np.exp(1j * new_phi)
    real = p.imag == 0
    return np.where(real, p, out)


def _poly_from_roots(roots: np.ndarray) -> np.ndarray:
    """Monic polynomial coefficients (highest power first) for each row of roots, shape (m, k+1)."""
    m, k = roots.shape
    c = np.zeros((m, k + 1), dtype=np.complex128)
    c[:, 0] = 1.0
    for j in range(k):
        # multiply by (z - r_j): c_new[i] = c[i] - r_j c[i-1]
        c[:, 1 : j + 2] = c[:, 1 : j + 2] - roots[:, j : j + 1] * c[:, 0 : j + 1]
    return c


def _frame_lpc_roots(a: np.ndarray) -> np.ndarray:
    """Roots of each row polynomial ``a`` (monic, shape (m, k+1)) via companion-matrix eigenvalues."""
    m, k1 = a.shape
    k = k1 - 1
    comp = np.zeros((m, k, k))
    comp[:, 0, :] = -a[:, 1:]
    if k > 1:
        idx = np.arange(k - 1)
        comp[:, idx + 1, idx] = 1.0
    return np.linalg.eigvals(comp)


def _lpc_autocorrelation(frame: np.ndarray, order: int) -> np.ndarray:
    """Autocorrelation-method LPC with -40 dB white-noise correction (r[0] *= 1.0001); minimum phase."""
    from scipy.linalg import solve_toeplitz

    n = frame.size
    r = np.array([frame[: n - k] @ frame[k:] for k in range(order + 1)])
    a = np.zeros(order + 1)
    a[0] = 1.0
    if r[0] <= 0:
        return a
    r[0] *= 1.0001
    a[1:] = solve_toeplitz(r[:order], -r[1:])
    return a


def _stable_lpc(frames: np.ndarray, order: int) -> tuple[np.ndarray, np.ndarray]:
    """LPC polynomials (n_frames, order+1) and their roots, every one strictly inside the unit circle.

    Burg's method (:func:`librosa.lpc`) first.  On near-degenerate frames (e.g. a pure tone, whose
    covariance has rank 2 while the model has order 20) its recursion can break down numerically and
    return a polynomial with roots outside the unit circle, whose inverse filter would explode; those
    frames are refitted with the autocorrelation method (Levinson, stable by construction), and a frame
    that is still not stable (not seen in practice) gets ``A(z) = 1``, i.e. passes through unchanged.
    On LibriSpeech speech no frame needed the fallback (13,256 frames checked).
    """
    librosa = _require("librosa")

    a = librosa.lpc(frames, order=order, axis=-1)  # (n_frames, order+1), a[:, 0] = 1
    ok = np.isfinite(a).all(axis=1)
    a[~ok] = 0.0
    a[~ok, 0] = 1.0
    roots = _frame_lpc_roots(a)
    unstable = ~ok | (np.abs(roots).max(axis=1) >= 1.0)
    for i in np.flatnonzero(unstable):
        a[i] = _lpc_autocorrelation(frames[i], order)
        roots[i] = _frame_lpc_roots(a[i : i + 1])[0]
        if not (np.isfinite(a[i]).all() and np.abs(roots[i]).max() < 1.0):
            a[i] = 0.0
            a[i, 0] = 1.0
            roots[i] = 0.0
    return a, roots


@fill_doc
def mcadams(waveform, alpha: float = DEFAULT_ALPHA, *, sr: int = SAMPLE_RATE, lpc_order: int = 20,
            frame_ms: float = 20.0) -> np.ndarray:
    """Anonymize one utterance with the McAdams coefficient (VoicePrivacy B2; algorithm in the module doc).

    Parameters
    ----------
    waveform : array_like of shape (n_samples,)
        Mono samples (float, nominally in [-1, 1]).
    alpha : float, default 0.8
        McAdams coefficient, 0 < alpha <= 1; 1 leaves the signal unchanged (up to round-off).
    sr : int, default 16000
        Sampling rate in Hz (frame and hop lengths are computed from it).
    lpc_order : int, default 20
        LPC order.
    frame_ms : float, default 20
        Frame length in ms; the hop is half of it (10 ms), which makes the periodic Hann window sum to 1.

    {returns_anonymized_waveform}

    Raises
    ------
    VpevalError
        Empty or non-1-D input, non-finite samples, ``alpha`` outside (0, 1], or a frame length that is not an even
        number of samples greater than ``lpc_order``.

    Notes
    -----
    BLAS/LAPACK run single-threaded inside (their last bit can depend on the thread count), so the output
    is the same on any machine with the same library versions, in one process or on a Dask worker.
    Every frame's all-pole filter is checked to be stable (all poles strictly inside the unit circle);
    frames where Burg's method breaks down numerically (pure tones) are refitted with the autocorrelation
    method, see ``_stable_lpc``.  All-zero frames give ``A(z) = 1`` and stay zero.

    Examples
    --------
    >>> t = np.arange(1600) / 16000
    >>> x = 0.3 * np.sin(2 * np.pi * 220 * t)
    >>> y = mcadams(x, 1.0)
    >>> bool(np.max(np.abs(y - x)) < 1e-6), y.shape
    (True, (1600,))
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        return _mcadams(waveform, alpha, sr, lpc_order, frame_ms)


def _mcadams(waveform, alpha, sr, lpc_order, frame_ms) -> np.ndarray:
    from scipy.signal import lfilter

    alpha = _check_alpha(alpha)
    x = np.asarray(waveform, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise VpevalError(f"waveform must be a non-empty 1-D array, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise VpevalError("waveform contains NaN or infinite samples")
    win = int(round(frame_ms * sr / 1000))
    if win % 2 or win <= lpc_order:
        raise VpevalError(f"frame of {win} samples: need an even length greater than lpc_order={lpc_order}")
    hop = win // 2
    n = x.size
    # pad so that every input sample is covered by exactly two frames (window sum 1)
    n_frames = int(np.ceil((n + hop) / hop))
    total = (n_frames + 1) * hop
    xp = np.zeros(total)
    xp[hop : hop + n] = x
    window = np.hanning(win + 1)[:-1]  # periodic Hann
    idx = np.arange(n_frames)[:, None] * hop + np.arange(win)[None, :]
    frames = xp[idx] * window  # (n_frames, win)

    a, poles = _stable_lpc(frames, lpc_order)
    new_a = _poly_from_roots(mcadams_pole_angles(poles, alpha)).real

    # residual e = A(z) frame (FIR, zero initial state), vectorised over frames
    res = frames.copy()
    for k in range(1, lpc_order + 1):
        res[:, k:] += a[:, k : k + 1] * frames[:, :-k]
    out = np.empty_like(frames)
    for i in range(n_frames):
        out[i] = lfilter([1.0], new_a[i], res[i])
    y = np.zeros(total)
    np.add.at(y, idx, out)  # overlap-add
    y = y[hop : hop + n]
    # loudness: scale to the input's RMS, but never beyond the 16-bit peak
    rms_in, rms_out = float(np.sqrt(np.mean(x * x))), float(np.sqrt(np.mean(y * y)))
    if rms_out > 0:
        y *= rms_in / rms_out
    peak = float(np.max(np.abs(y)))
    if peak > _PCM16_MAX:
        y *= _PCM16_MAX / peak
        np.clip(y, -_PCM16_MAX, _PCM16_MAX, out=y)  # only removes a possible 1-ulp excess of the division
    return y


def draw_alpha(seed: int, key: str, low: float = ALPHA_RANGE[0], high: float = ALPHA_RANGE[1]) -> float:
    """Draw a McAdams coefficient uniformly in [low, high) for ``key``, deterministically.

    The generator is ``numpy.random.default_rng([seed, h])`` where ``h`` is the first 8 bytes
    (little-endian) of the SHA-256 of ``key`` (UTF-8): the same (seed, key) gives the same value on
    every machine and in every file order.  Use the speaker id as key for per-speaker draws and the
    utterance id for per-utterance draws.

    Examples
    --------
    >>> a = draw_alpha(2024, "1688")
    >>> 0.5 <= a < 0.9, a == draw_alpha(2024, "1688"), a == draw_alpha(2025, "1688")
    (True, True, False)
    """
    if not (np.isfinite(low) and np.isfinite(high) and 0 < low <= high <= 1):
        raise VpevalError(f"alpha range must satisfy 0 < low <= high <= 1, got ({low}, {high})")
    seed = int(seed)
    if seed < 0:
        raise VpevalError(f"seed must be >= 0, got {seed}")
    h = int.from_bytes(hashlib.sha256(str(key).encode("utf-8")).digest()[:8], "little")
    rng = np.random.default_rng([seed, h])
    return float(rng.uniform(low, high))
