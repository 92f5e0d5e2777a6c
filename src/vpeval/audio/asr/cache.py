"""A per-utterance transcript cache: each waveform is recognised once per recogniser and decoding settings.

The content attacker (:mod:`vpeval.audio.content`) needs the transcript of every utterance it scores; a
Whisper-base pass costs about 2-3 s per utterance on two CPU cores, so transcripts are kept on disk.

Key and storage
---------------
- The key of an utterance is the SHA-256 of its samples as 16 kHz little-endian float32 (so a renamed or
  re-encoded file with the same samples hits the cache, and an edited one misses it), joined with the
  recogniser's name and decoding settings (:meth:`ASRBackend.settings` when it has one, without the model's
  local path and the thread count).
- One JSON-lines file per recogniser/settings, ``<cache>/transcripts/<key>.jsonl``, each line
  ``{"sha256": ..., "utterance_id": ..., "text": ...}``; lines are appended and flushed one by one, so an
  interrupted run keeps what it did.  A later line for the same waveform wins (there are none unless two
  processes raced; the recogniser is deterministic, so they agree).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from ..io import SAMPLE_RATE, checked_waveform
from .base import ASRBackend

__all__ = ["CachedTranscriber", "waveform_key"]


def waveform_key(waveform) -> str:
    """SHA-256 (hex) of a 16 kHz waveform's samples as little-endian float32."""
    x = np.ascontiguousarray(np.asarray(waveform, dtype="<f4"))
    return hashlib.sha256(x.tobytes()).hexdigest()


def _settings_key(backend: ASRBackend) -> str:
    settings = backend.settings() if hasattr(backend, "settings") else {}
    # the model folder's path and the thread count do not change the text (CTranslate2's CPU kernels give the
    # same result with any number of threads), so they are not part of the key
    settings = {k: v for k, v in settings.items() if k not in ("model_dir", "cpu_threads")}
    blob = json.dumps({"name": backend.name, "settings": settings}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


class CachedTranscriber:
    """Transcribe through a disk cache (module doc).

    Parameters
    ----------
    backend : ASRBackend
        The recogniser; must be deterministic (as :class:`ASRBackend` requires).
    cache : path, optional
        Cache folder; default :func:`vpeval.audio.asr.cache_dir`.

    Attributes
    ----------
    path : Path
        The JSON-lines file of this recogniser and its settings.
    hits, misses : int
        Counters of the calls so far.
    """

    def __init__(self, backend: ASRBackend, cache=None):
        from .whisper import cache_dir

        self.backend = backend
        root = Path(cache) if cache is not None else cache_dir()
        self.path = root / "transcripts" / f"{_settings_key(backend)}.jsonl"
        self._texts: dict[str, str] = {}
        self.hits = self.misses = 0
        if self.path.is_file():
            with open(self.path, encoding="utf-8") as fh:
                for line in fh:
                    try:
                        rec = json.loads(line)
                        self._texts[str(rec["sha256"])] = str(rec["text"])
                    except (ValueError, KeyError, TypeError):
                        continue  # a line cut by an interrupted write: recomputed when needed

    def transcribe(self, waveform, sr: int = SAMPLE_RATE, *, utterance_id: str = "") -> str:
        """The transcript of one utterance, from the cache or recognised and stored.

        Raises
        ------
        VpevalError
            As :meth:`ASRBackend.transcribe` (wrong rate, empty or non-finite waveform).
        """
        x = checked_waveform(waveform, sr, self.backend.name)
        key = waveform_key(x)
        if key in self._texts:
            self.hits += 1
            return self._texts[key]
        text = self.backend.transcribe(x, sr)
        self.misses += 1
        self._texts[key] = text
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"sha256": key, "utterance_id": str(utterance_id), "text": text}) + "\n")
            fh.flush()
        return text
