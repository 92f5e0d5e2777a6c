"""The speech-recognition backend interface and batch transcription of an audio folder."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from ...progress import track
from ..io import SAMPLE_RATE, checked_waveform, read_item_audio, scan_audio_folder

__all__ = ["ASRBackend", "ASRUnavailableError", "transcribe_folder"]


class ASRUnavailableError(ImportError):
    """An ASR backend's optional dependencies or model files are missing (the message says how to fix it)."""


class ASRBackend(ABC):
    """A speech recogniser: one transcript (a string) per utterance.

    Subclasses set :attr:`name` and implement :meth:`_transcribe`; :meth:`transcribe` validates the
    input first.  Backends used for evaluation must be deterministic: the same waveform gives the same
    text (fixed decoding settings, no sampling, fixed thread count).

    Attributes
    ----------
    name : str
        Identifier reported beside the WER (e.g. ``faster-whisper-base``).
    """

    name: str = "abstract"

    def transcribe(self, waveform, sr: int = SAMPLE_RATE) -> str:
        """Transcribe one utterance.

        Parameters
        ----------
        waveform : array_like of shape (n_samples,)
            Mono samples, float in [-1, 1].
        sr : int
            Sampling rate in Hz; must be 16000 (vpeval never resamples silently).

        Returns
        -------
        str
            The raw recogniser output (not normalised; :func:`vpeval.metrics.utility.wer` normalises).
            May be empty when nothing was recognised.

        Raises
        ------
        VpevalError
            Wrong rate, or an empty, non-1-D or non-finite waveform.
        """
        x = checked_waveform(waveform, sr, self.name)
        text = self._transcribe(x)
        if not isinstance(text, str):
            raise TypeError(f"{self.name}: backend returned {type(text).__name__}, expected str")
        return text

    @abstractmethod
    def _transcribe(self, x: np.ndarray) -> str:
        """Transcribe a validated float64 16 kHz waveform."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def transcribe_folder(folder, backend: ASRBackend, *, quiet: bool = False,
                      strict_rate: bool = False, paths_from: str | None = None) -> dict[str, str]:
    """Transcribe every utterance of an audio folder.

    Audio follows the rules of :mod:`vpeval.audio.io` (mono FLAC/WAV, recursive, resampled to 16 kHz on read,
    utterance id = file stem); speaker ids are not needed here, so stems without a ``-`` are accepted.

    Parameters
    ----------
    folder : str or Path
    backend : ASRBackend
    quiet : bool
        No progress bar on stderr.
    strict_rate : bool, default False
        Refuse files not at 16 kHz instead of resampling them.
    paths_from : {None, "data", "cwd"}
        Kaldi data folder input: the base of relative ``wav.scp`` paths (:func:`~vpeval.audio.io.scan_audio_folder`).

    Returns
    -------
    dict
        utterance id -> raw transcript, in sorted utterance-id order.

    Raises
    ------
    InputFileError
        Missing folder, no audio, duplicate stems, unreadable files, files not at 16 kHz with ``strict_rate``.
    """
    # Every file gets a dummy speaker so that stems without '-' are accepted.
    from pathlib import Path

    from ..io import AUDIO_EXTENSIONS
    from ...io.kaldi_data import is_kaldi_data_folder

    folder = Path(folder)
    stems = {}
    if folder.is_dir() and not is_kaldi_data_folder(folder):
        stems = {p.stem: "-" for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in AUDIO_EXTENSIONS}
    items = scan_audio_folder(folder, metadata=stems or None, paths_from=paths_from)
    out: dict[str, str] = {}
    for it in track(items, total=len(items), description=f"transcribing {folder.name}", quiet=quiet):
        out[it.utterance_id] = backend.transcribe(read_item_audio(it, strict_rate=strict_rate), SAMPLE_RATE)
    return out
