"""What the anonymizers share: the stable per-key parameter draw, the input check and the output level.

The output level (:func:`_level`): scaled to the input's RMS, lowered if needed so that the peak stays within
16-bit PCM (``32767/32768``), cut or zero-padded to the input length.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ...errors import VpevalError

__all__ = ["draw_parameter"]

_PCM16_MAX = 32767 / 32768  # the largest 16-bit PCM sample as a float: no anonymizer's output exceeds it


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
