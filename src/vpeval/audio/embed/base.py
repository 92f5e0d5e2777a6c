"""The extractor interface and batch extraction over an audio folder."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
from threadpoolctl import threadpool_limits

from ...errors import InputFileError, VpevalError
from ...progress import track
from ..io import (
    SAMPLE_RATE, AudioItem, checked_waveform, read_audio_rate, read_item_audio_rate, scan_audio_folder,
)
from ...io.embeddings import EmbeddingSet

__all__ = ["Extractor", "ExtractorUnavailableError", "embed_folder"]


class ExtractorUnavailableError(ImportError):
    """An extractor's optional dependencies are not installed (the message says how to install them)."""


class Extractor(ABC):
    """A speaker-embedding extractor: one fixed-length vector per utterance.

    Subclasses set :attr:`name` (stored in embedding files) and :attr:`dim` and implement
    :meth:`_embed`; :meth:`embed` validates the input first. :meth:`info` is the extractor record stored beside
    the embeddings (which model file, features, version or settings made them); subclasses state what identifies
    them in :meth:`_identity`.  Extractors are deterministic: the same
    waveform gives the same vector, bit for bit on any machine with the same library versions (BLAS runs
    single-threaded during :meth:`_embed`, so the thread count cannot change the last bit).

    Attributes
    ----------
    name : str
        Identifier stored in embedding files (e.g. ``mfcc-stats``, ``resemblyzer-ge2e``).
    dim : int
        Embedding dimension.
    min_samples : int
        The shortest utterance (samples at 16 kHz) the extractor embeds: one whole analysis frame of its
        features (``min_frame`` says which). A shorter one is refused by :meth:`embed`: padded out to a frame
        it would give a vector that describes the padding, not a speaker (a 1 ms file used to get one). The
        default, for an extractor class of the user's own, is 400 samples (25 ms, the usual analysis frame of
        speaker features); a class may set its own. Built in: 512 (``mfcc``, ``voicefilter-dvector``: one FFT
        frame), 480 (``resemblyzer``: one voice-activity window), the features' frame (model files).
    min_frame : str
        What :attr:`min_samples` is, for the message (e.g. ``one 25 ms analysis window``).
    """

    name: str = "abstract"
    dim: int = 0
    min_samples: int = 400
    min_frame: str = "one 25 ms analysis frame"

    def embed(self, waveform, sr: int = SAMPLE_RATE) -> np.ndarray:
        """Embed one utterance.

        Parameters
        ----------
        waveform : array_like of shape (n_samples,)
            Mono samples, float in [-1, 1].
        sr : int
            Sampling rate in Hz; must be 16000.

        Returns
        -------
        ndarray of shape (dim,), float64

        Raises
        ------
        VpevalError
            Wrong rate, empty / non-1-D / non-finite input, an utterance shorter than :attr:`min_samples`, or
            an utterance the extractor cannot embed (e.g. no speech found).
        """
        x = checked_waveform(waveform, sr, self.name)
        self.check_length(x.size)
        # BLAS single-threaded: a matrix product's last bit can depend on the number of BLAS threads, so this
        # gives the same vector on any machine, in one process or on any Dask worker (0.3 ms per call)
        with threadpool_limits(limits=1, user_api="blas"):
            e = np.asarray(self._embed(x), dtype=np.float64)
        if e.shape != (self.dim,) or not np.isfinite(e).all():
            raise VpevalError(f"{self.name}: extractor returned a bad embedding (shape {e.shape})")
        return e

    def check_length(self, n_samples: int) -> None:
        """Refuse an utterance of ``n_samples`` (at 16 kHz) shorter than :attr:`min_samples`.

        Raises
        ------
        VpevalError
            Naming the extractor, the utterance's length and the minimum, e.g. ``mfcc-stats: the utterance
            lasts 16 samples (1 ms at 16 kHz); this extractor needs at least 512 samples (32 ms: one 512-sample
            STFT frame (n_fft))``; :func:`embed_folder` adds the file.
        """
        need = int(self.min_samples)
        if n_samples < need:
            raise VpevalError(f"{self.name}: the utterance lasts {n_samples} samples ({_ms(n_samples)} at 16 kHz); "
                              f"this extractor needs at least {need} samples ({_ms(need)}: {self.min_frame})")

    @abstractmethod
    def _embed(self, x: np.ndarray) -> np.ndarray:
        """Embed a validated float64 16 kHz waveform."""

    def info(self) -> dict:
        """The extractor record stored with the embeddings (``extractor_info``, format in
        :mod:`vpeval.io.extractor_info`): ``format``, ``name``, ``kind``, ``dim`` and what identifies this
        extractor (:meth:`_identity`).

        Returns
        -------
        dict
            JSON values only; no machine paths.

        Examples
        --------
        >>> from vpeval.audio.embed import MfccStatsExtractor
        >>> rec = MfccStatsExtractor().info()
        >>> rec["kind"], rec["dim"], rec["settings"]["n_mfcc"]
        ('mfcc', 40, 20)
        """
        from ...io.extractor_info import RECORD_FORMAT, check_extractor_info

        rec = {"format": RECORD_FORMAT, "name": self.name, "dim": int(self.dim), **self._identity()}
        return check_extractor_info(rec, f"<{type(self).__name__}>", name=self.name, dim=int(self.dim))

    def _identity(self) -> dict:
        """``kind`` and what identifies the extractor beyond its name (model file, features, package version,
        settings). This default, for an extractor class of the user's own: ``kind`` ``python`` and the class."""
        return {"kind": "python", "class": f"{type(self).__module__}.{type(self).__qualname__}"}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, dim={self.dim})"


def _ms(n_samples: int) -> str:
    """``n_samples`` at 16 kHz in milliseconds, as text (``25 ms``, ``0.0625 ms``)."""
    return f"{1000.0 * n_samples / SAMPLE_RATE:.6g} ms"


def _embed_file(extractor: Extractor, path, strict_rate: bool = False,
                channel: int | None = None) -> tuple[np.ndarray, int]:
    """Read (resampled to 16 kHz unless ``strict_rate``) and embed one file or :class:`AudioItem` (a segment of
    a recording included): (embedding, the file's own rate); an utterance the extractor cannot embed raises
    InputFileError naming it."""
    if isinstance(path, AudioItem):
        x, rate = read_item_audio_rate(path, strict_rate=strict_rate, channel=channel)
        path = path.path if path.segment is None else f"{path.path} (utterance {path.utterance_id})"
    else:
        x, rate = read_audio_rate(path, strict_rate=strict_rate, channel=channel)
    try:
        return extractor.embed(x, SAMPLE_RATE), rate
    except InputFileError:
        raise
    except VpevalError as exc:
        raise InputFileError(path, None, str(exc)) from None


def embed_folder(folder, extractor: Extractor, *, condition: str = "original", metadata=None,
                 quiet: bool = False, client=None, strict_rate: bool = False,
                 channel: int | None = None, paths_from: str | None = None) -> EmbeddingSet:
    """Embed every utterance of an audio folder.

    Parameters
    ----------
    folder : str or Path
        Audio folder, read with :func:`vpeval.audio.io.scan_audio_folder` (mono FLAC/WAV, searched
        recursively; speaker = first ``-`` field of the file name, or from ``metadata``).  Files at another
        rate than 16 kHz are resampled to it on read (:func:`vpeval.audio.io.read_audio`).
    extractor : Extractor
    condition : str, default "original"
        Label stored with every row (``original`` or ``anonymized``).
    metadata : str, Path, dict or None
        Utterance -> speaker mapping.
    quiet : bool
        No progress bar (it goes to stderr otherwise).
    client : distributed.Client, optional
        Embed on this Dask cluster (:mod:`vpeval.pipeline.cluster`), a few utterances per task; the workers
        must see ``folder``. The extractor travels as its configuration and each worker builds (and, for
        model-based extractors, loads the weights of) it once. The rows are bit for bit those of the
        single-process run.
    strict_rate : bool, default False
        Refuse files that are not at 16 kHz instead of resampling them.
    channel : int, optional
        The channel to embed of files with several (0 = first); without it such files are refused.
    paths_from : {None, "data", "cwd"}
        Kaldi data folder input: the base of relative ``wav.scp`` paths (:func:`~vpeval.audio.io.scan_audio_folder`).

    Returns
    -------
    EmbeddingSet
        Rows sorted by utterance id (independent of file-system order), ``extractor`` = ``extractor.name``,
        ``input_rate_hz`` = each file's own sampling rate, ``extractor_info`` = ``extractor.info()``.

    Raises
    ------
    InputFileError
        An unreadable file, a file with several channels and no ``channel``, a file not at 16 kHz with
        ``strict_rate``, an utterance without a speaker, or an utterance the extractor cannot embed, named by
        its path.
    """
    if not isinstance(condition, str) or not condition:
        raise VpevalError(f"condition must be a non-empty string, got {condition!r}")
    items = scan_audio_folder(folder, metadata=metadata, paths_from=paths_from)
    rows = np.empty((len(items), extractor.dim))
    rates = np.empty(len(items), dtype=np.int64)
    if client is not None:
        from functools import partial

        from ...pipeline.cluster import map_items

        import os

        import dataclasses

        # a worker's working folder is not ours: absolute paths
        jobs = [dataclasses.replace(it, path=os.path.abspath(it.path)) for it in items]
        names = [str(j.path) if j.segment is None else f"{j.path} ({j.utterance_id})" for j in jobs]
        for i, (e, r) in enumerate(map_items(client, partial(_embed_file, extractor, strict_rate=strict_rate,
                                                             channel=channel), jobs, names=names,
                                             description=f"{extractor.name}", quiet=quiet)):
            rows[i], rates[i] = e, r
    else:
        for i, it in enumerate(track(items, total=len(items), description=f"{extractor.name}", quiet=quiet)):
            rows[i], rates[i] = _embed_file(extractor, it, strict_rate, channel)
    return EmbeddingSet(
        rows,
        np.array([it.utterance_id for it in items]),
        np.array([it.speaker_id for it in items]),
        np.full(len(items), condition),
        extractor.name,
        input_rate_hz=rates,
        extractor_info=extractor.info(),
    )


def package_record(dist: str) -> dict:
    """``{"name", "version"}`` of an installed distribution (e.g. ``resemblyzer``) for an extractor record."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return {"name": dist, "version": version(dist)}
    except PackageNotFoundError:
        raise ExtractorUnavailableError(f"the package {dist!r} is importable but not installed as a distribution "
                                        "(no version to record); install it with pip") from None
