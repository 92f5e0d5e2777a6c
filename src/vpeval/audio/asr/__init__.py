"""Speech recognition for the utility side of the evaluation (WER of original vs anonymized speech).

:class:`ASRBackend` is the interface (``transcribe(waveform, sr) -> str``); :class:`FasterWhisperBackend`
is the real offline backend (optional extra ``vpeval[asr]``).  Transcript files are read and written by
:mod:`vpeval.audio.asr.transcripts`.
"""

from .base import ASRBackend, ASRUnavailableError, transcribe_folder
from .transcripts import read_transcripts, write_transcripts
from .whisper import FasterWhisperBackend, cache_dir, whisper_base_dir

__all__ = [
    "ASRBackend",
    "ASRUnavailableError",
    "FasterWhisperBackend",
    "cache_dir",
    "read_transcripts",
    "transcribe_folder",
    "whisper_base_dir",
    "write_transcripts",
]
