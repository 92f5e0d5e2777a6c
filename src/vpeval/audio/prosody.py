"""Prosody statistics of an utterance: F0, energy, speaking rate and pauses (the prosody attack channel).

A voice anonymizer changes the timbre and often the pitch level, but usually keeps the rhythm: how fast a
speaker talks, how long they pause, how much their pitch and loudness move.  :func:`prosody_features` turns
one utterance into a fixed vector of such statistics; :mod:`vpeval.pipeline.channels` scores trials with them
like any speaker embedding (a back-end trained on the training speakers).

Frames are 25 ms (Hann), hop 10 ms, on the same grid as :func:`vpeval.audio.pitch.f0_contour` (WORLD DIO +
StoneMask, 50-500 Hz).  Definitions (``FEATURES`` order):

- ``logf0_median``, ``logf0_iqr``, ``logf0_p10``, ``logf0_p90``: statistics of ln F0 (Hz) over voiced frames;
- ``logf0_delta``: mean |ln F0(t+1) - ln F0(t)| over pairs of consecutive voiced frames (pitch movement);
- ``voiced_ratio``: voiced frames / speech frames;
- ``energy_std_db``, ``energy_range_db``: standard deviation and 90th - 10th percentile of the frame log energy
  (dB) over speech frames (the absolute level is left out: it is the recording's, not the speaker's);
- ``syllable_rate``: syllable nuclei per second of speech, a nucleus being a local maximum of the voiced
  frames' energy (smoothed over 5 frames) at least 2 dB above the lower of its neighbouring minima (de Jong &
  Wempe's intensity-peak method, simplified: "Praat script to detect syllable nuclei", Behav. Res. Methods
  41(2), 2009);
- ``pause_rate``, ``pause_ratio``, ``log_pause_mean``, ``log_run_mean``: pauses per second, pause time over the
  time from the first to the last speech frame, ln of the mean pause and mean speech-run duration (s).

A frame is speech when its energy is within 35 dB of the utterance's 95th-percentile frame energy; a pause is
a run of non-speech frames of at least 150 ms between speech frames.  An utterance with no voiced frame gets
F0 statistics of 0 (and ``voiced_ratio`` 0); without a pause, ``log_pause_mean`` is ln(0.01 s).  Everything is
a deterministic function of the waveform alone.
"""

from __future__ import annotations

import numpy as np

from ..errors import VpevalError
from .io import SAMPLE_RATE, checked_waveform

__all__ = ["FEATURES", "prosody_features", "prosody_matrix"]

FEATURES = ("logf0_median", "logf0_iqr", "logf0_p10", "logf0_p90", "logf0_delta", "voiced_ratio", "energy_std_db",
            "energy_range_db", "syllable_rate", "pause_rate", "pause_ratio", "log_pause_mean", "log_run_mean")
"""Names of the prosody statistics, in the order of :func:`prosody_features`' output."""

_HOP_S, _WIN_S = 0.010, 0.025
_SPEECH_DB, _MIN_PAUSE_S, _PEAK_DB = 35.0, 0.150, 2.0


def _frame_energy_db(x: np.ndarray, n_frames: int) -> np.ndarray:
    hop, win = int(_HOP_S * SAMPLE_RATE), int(_WIN_S * SAMPLE_RATE)
    pad = np.pad(x, (win // 2, win))
    idx = np.arange(n_frames)[:, None] * hop + np.arange(win)[None, :]
    frames = pad[idx] * np.hanning(win)[None, :]
    return 10.0 * np.log10(np.mean(frames ** 2, axis=1) + 1e-12)


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """(start, stop) of the runs of True in a 1-D boolean array."""
    d = np.diff(np.concatenate([[0], mask.astype(np.int8), [0]]))
    return list(zip(np.flatnonzero(d == 1), np.flatnonzero(d == -1)))


def _nuclei(e: np.ndarray) -> int:
    """Number of energy peaks at least ``_PEAK_DB`` above the lower neighbouring minimum, in one voiced run."""
    if e.size < 3:
        return int(e.size > 0)
    s = np.convolve(np.pad(e, 2, mode="edge"), np.ones(5) / 5, mode="valid")
    peaks = [i for i in range(s.size) if (i == 0 or s[i] > s[i - 1]) and (i == s.size - 1 or s[i] >= s[i + 1])]
    count = 0
    for k, p in enumerate(peaks):
        left = s[peaks[k - 1]:p + 1].min() if k else s[:p + 1].min()
        right = s[p:peaks[k + 1] + 1].min() if k + 1 < len(peaks) else s[p:].min()
        if s[p] - min(left, right) >= _PEAK_DB or len(peaks) == 1:
            count += 1
    return count


def prosody_features(waveform, sr: int = SAMPLE_RATE) -> np.ndarray:
    """The prosody statistics of one utterance (module doc).

    Parameters
    ----------
    waveform : array_like of shape (n_samples,)
        Mono samples in [-1, 1].
    sr : int
        Must be 16000 (vpeval never resamples silently).

    Returns
    -------
    ndarray of shape (len(FEATURES),), float64
        Finite values in the order of :data:`FEATURES`.

    Raises
    ------
    VpevalError
        Wrong rate, an empty, non-1-D or non-finite waveform, or one shorter than 100 ms.
    ImportError
        pyworld is not installed (the ``vocoder`` extra).
    """
    from .pitch import f0_contour

    x = checked_waveform(waveform, sr, "prosody")
    if x.size < 0.1 * SAMPLE_RATE:
        raise VpevalError(f"prosody statistics need at least 100 ms of audio, got {x.size} samples")
    f0 = f0_contour(x, SAMPLE_RATE)
    e = _frame_energy_db(x, f0.size)
    speech = e >= np.percentile(e, 95) - _SPEECH_DB
    voiced = (f0 > 0) & speech
    out = dict.fromkeys(FEATURES, 0.0)
    if voiced.any():
        lf = np.log(f0[voiced])
        p10, p25, p50, p75, p90 = np.percentile(lf, [10, 25, 50, 75, 90])
        pairs = voiced[1:] & voiced[:-1]
        out.update(logf0_median=p50, logf0_iqr=p75 - p25, logf0_p10=p10, logf0_p90=p90,
                   logf0_delta=float(np.mean(np.abs(np.diff(np.log(np.where(f0 > 0, f0, 1.0))))[pairs]))
                   if pairs.any() else 0.0)
    n_speech = int(speech.sum())
    out["voiced_ratio"] = float(voiced.sum()) / max(n_speech, 1)
    es = e[speech]
    out["energy_std_db"] = float(es.std())
    out["energy_range_db"] = float(np.percentile(es, 90) - np.percentile(es, 10))
    speech_s = n_speech * _HOP_S
    out["syllable_rate"] = sum(_nuclei(e[a:b]) for a, b in _runs(voiced)) / speech_s
    first, last = np.flatnonzero(speech)[[0, -1]]
    inner = ~speech[first:last + 1]
    pauses = [(b - a) * _HOP_S for a, b in _runs(inner) if (b - a) * _HOP_S >= _MIN_PAUSE_S]
    span_s = (last - first + 1) * _HOP_S
    runs = [(b - a) * _HOP_S for a, b in _runs(speech[first:last + 1])]
    out["pause_rate"] = len(pauses) / span_s
    out["pause_ratio"] = sum(pauses) / span_s
    out["log_pause_mean"] = float(np.log(np.mean(pauses))) if pauses else float(np.log(0.01))
    out["log_run_mean"] = float(np.log(np.mean(runs)))
    v = np.array([out[k] for k in FEATURES], dtype=np.float64)
    if not np.isfinite(v).all():  # pragma: no cover - every statistic above is finite by construction
        raise VpevalError("prosody statistics are not finite")
    return v


def prosody_matrix(waveforms, sr: int = SAMPLE_RATE) -> np.ndarray:
    """:func:`prosody_features` of each waveform, stacked: shape ``(len(waveforms), len(FEATURES))``."""
    rows = [prosody_features(w, sr) for w in waveforms]
    return np.vstack(rows) if rows else np.zeros((0, len(FEATURES)))
