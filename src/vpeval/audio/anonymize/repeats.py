"""More attacker training data from the anonymizer itself: K anonymized versions of each training utterance.

The Attacker Challenge teams widened a semi-informed attacker's training data by anonymizing each training
utterance several times with fresh random parameters, so that the attacker sees the anonymizer's whole
parameter range, and by speed perturbation. :func:`anonymize_repeats` does this for vpeval's built-in
anonymizers: copy ``k`` (k = 0 .. K-1) of utterance ``u`` is named ``u-k<kk>`` (same speaker) and anonymized
with parameters drawn per *utterance copy* (``anonymize_folder(..., alpha="utterance")``, key = the copy's id,
so every copy draws its own McAdams alpha, VTLN warp and F0 ratio, or resampling ratio from ``seed``), after an
optional Kaldi-style speed perturbation (the signal resampled by a factor ``f`` drawn per copy from ``speed``:
duration divided by ``f``, every frequency multiplied by it). For external anonymizers, give the attacker a
folder of anonymized training speech made the same way.
"""

from __future__ import annotations

import tempfile
from fractions import Fraction
from pathlib import Path

import numpy as np

from ...errors import VpevalError
from ..io import SAMPLE_RATE, read_item_audio_rate, scan_audio_folder, write_audio
from .folder import anonymize_folder
from .mcadams_coefficient import ALPHA_RANGE

__all__ = ["anonymize_repeats", "SPEED_FACTORS"]

#: Speed-perturbation factors of Kaldi recipes (Ko et al., Interspeech 2015).
SPEED_FACTORS = (0.9, 1.0, 1.1)


def _speed(x: np.ndarray, f: float) -> np.ndarray:
    """Play ``x`` ``f`` times faster (sox ``speed``): resample from ``f * 16 kHz`` to 16 kHz."""
    from scipy.signal import resample_poly

    if f == 1.0:
        return x
    r = Fraction(f).limit_denominator(100)
    y = resample_poly(x, r.denominator, r.numerator)
    peak = float(np.max(np.abs(y))) if y.size else 0.0
    return y / peak * 0.999 if peak > 0.999 else y


def _draw_index(seed: int, key: str, n: int) -> int:
    """An index in [0, n) drawn from ``default_rng([seed, h])``, h = the first 8 bytes of SHA-256(key), as
    :func:`~vpeval.audio.anonymize.draw_alpha` keys its draws (order- and machine-independent)."""
    import hashlib

    h = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "little")
    return int(np.random.default_rng([int(seed), h]).integers(n))


def anonymize_repeats(in_dir, out_dir, *, repeats: int, seed: int, method: str = "mcadams", speed=None,
                      alpha_range=ALPHA_RANGE, metadata=None, audio_format: str = "flac", quiet: bool = False):
    """Anonymize every utterance of ``in_dir`` ``repeats`` times with fresh parameters (module doc).

    Parameters
    ----------
    in_dir, out_dir : str or Path
        As in :func:`~vpeval.audio.anonymize.anonymize_folder` (the copies go flat into ``out_dir``).
    repeats : int
        K >= 1.
    seed : int
        Seed of every draw (parameters per copy; speed factors per copy).
    method : {"mcadams", "vtln", "resample"}
    speed : sequence of float, optional
        Speed factors to draw from per copy (e.g. :data:`SPEED_FACTORS`); None: no speed perturbation.
    alpha_range, metadata, audio_format, quiet
        As in :func:`~vpeval.audio.anonymize.anonymize_folder`.

    Returns
    -------
    pandas.DataFrame
        The table of :func:`anonymize_folder` with ``source_utterance``, ``repeat`` (0 .. K-1) and ``speed``
        columns, sorted by utterance id.

    Raises
    ------
    VpevalError
        ``repeats`` not an integer >= 1, a speed factor outside (0.5, 2], and the errors of
        :func:`anonymize_folder`.
    """
    if isinstance(repeats, bool) or int(repeats) != repeats or repeats < 1:
        raise VpevalError(f"repeats must be an integer >= 1, got {repeats!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise VpevalError(f"repeats need an integer seed, got {seed!r}")
    factors = None if speed is None else [float(f) for f in speed]
    if factors is not None and (not factors or any(not 0.5 < f <= 2.0 for f in factors)):
        raise VpevalError(f"speed factors must lie in (0.5, 2], got {speed!r}")
    items = scan_audio_folder(in_dir, metadata=metadata)
    speakers, src, rep, fac = {}, {}, {}, {}
    with tempfile.TemporaryDirectory(prefix="vpeval-repeats-") as tmp:
        stage = Path(tmp)
        for it in items:
            x = None
            for k in range(int(repeats)):
                uid = f"{it.utterance_id}-k{k:02d}"
                f = 1.0 if factors is None else factors[_draw_index(seed, f"speed:{uid}", len(factors))]
                whole = getattr(it, "segment", None) is None
                target = stage / (f"{uid}{Path(it.path).suffix}" if f == 1.0 and whole else f"{uid}.flac")
                if f == 1.0 and whole:
                    try:
                        target.symlink_to(Path(it.path).resolve())
                    except OSError:
                        import shutil

                        shutil.copy2(it.path, target)
                else:
                    x = read_item_audio_rate(it)[0] if x is None else x
                    write_audio(target, _speed(x, f), sr=SAMPLE_RATE)
                speakers[uid], src[uid], rep[uid], fac[uid] = it.speaker_id, it.utterance_id, k, f
        table = anonymize_folder(stage, out_dir, alpha="utterance", seed=int(seed), method=method,
                                 alpha_range=alpha_range, metadata=speakers, audio_format=audio_format, quiet=quiet)
    table["source_utterance"] = table["utterance_id"].map(src)
    table["repeat"] = table["utterance_id"].map(rep)
    table["speed"] = table["utterance_id"].map(fac)
    return table.sort_values("utterance_id").reset_index(drop=True)
