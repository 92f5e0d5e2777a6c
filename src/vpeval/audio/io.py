"""Reading and writing speech audio, and listing the utterances of an audio folder.

Conventions (the same for every command that reads audio):

- **Formats**: FLAC and WAV (any PCM or float subtype libsndfile reads), mono.  Files with more than one
  channel are refused (which channel holds the speaker cannot be guessed) unless a channel is chosen
  (``channel=``, ``--channel``: 0 is the first, the left of a stereo file).
- **Sampling rate**: vpeval works at 16 kHz (:data:`SAMPLE_RATE`).  A file at another rate is resampled to
  16 kHz on read with soxr (the resampler librosa uses by default; quality ``HQ``, linear phase), and the
  file's own rate is kept: in ``anonymization.csv`` (``input_rate_hz``), in the embedding files
  (``input_rate_hz``) and in the audit report's inputs.  ``strict_rate=True`` (``--strict-rate``) refuses such
  a file instead, with an :class:`~vpeval.errors.InputFileError` naming the file and its rate.
- **Samples** are returned as float64 in [-1, 1] (libsndfile's scaling of integer PCM).
- **Utterance id** = the file name without its extension (the stem), e.g. ``1688-142285-0000``.  Stems
  must be unique within a folder (searched recursively).
- **Speaker id** = the first ``-``-separated field of the stem (LibriSpeech/VoxCeleb-style names:
  ``1688-142285-0000`` -> ``1688``), unless a metadata CSV with the columns ``utterance_id,speaker_id``
  is given, which then decides for every utterance.  A stem without ``-`` has no speaker field and,
  without metadata, is an error; so is an utterance missing from the metadata.
- **Unreadable files** raise :class:`~vpeval.errors.InputFileError` naming the file.
- **Kaldi data folders**: a folder holding ``wav.scp`` is read as a Kaldi data folder instead
  (:mod:`vpeval.io.kaldi_data`): utterance ids and audio paths from ``wav.scp``, speakers from ``utt2spk``;
  no metadata CSV is taken then.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputFileError, SegmentOvershootWarning, VpevalError
from ..io.kaldi_segments import MAX_OVERSHOOT_SECONDS

__all__ = [
    "SAMPLE_RATE",
    "AUDIO_EXTENSIONS",
    "AudioItem",
    "read_audio",
    "read_audio_rate",
    "resample",
    "write_audio",
    "scan_audio_folder",
    "read_item_audio",
    "read_item_audio_rate",
    "read_speaker_metadata",
]

SAMPLE_RATE = 16000
"""The sampling rate vpeval works at (Hz): audio at another rate is resampled to it on read."""

AUDIO_EXTENSIONS = (".flac", ".wav")
"""File extensions (lower case) listed by :func:`scan_audio_folder`."""


@dataclass(frozen=True)
class AudioItem:
    """One utterance of an audio folder.

    Attributes
    ----------
    path : Path
        The audio file.
    utterance_id : str
        File stem.
    speaker_id : str
        From the stem's first ``-`` field or the metadata CSV.
    relative_path : Path
        ``path`` relative to the scanned folder (used to mirror the folder layout on output).
    segment : KaldiSegment or None
        The utterance's time range of ``path`` (Kaldi ``segments``); None = the whole file. Read the
        utterance's samples with :func:`read_item_audio`.
    """

    path: Path
    utterance_id: str
    speaker_id: str
    relative_path: Path
    segment: object = None


def checked_waveform(waveform, sr, owner: str) -> np.ndarray:
    """A waveform handed to a speaker extractor or speech recogniser, as a float64 array.

    Raises
    ------
    VpevalError
        Prefixed ``owner: ``: ``sr`` is not :data:`SAMPLE_RATE` (an array handed over in memory is never
        resampled silently: :func:`resample` does it; files are resampled on read), or the waveform is empty,
        not 1-D, or holds NaN or infinite samples.
    """
    if int(sr) != SAMPLE_RATE:
        raise VpevalError(f"{owner}: sampling rate {sr} Hz; expected {SAMPLE_RATE} Hz (vpeval.audio.io.resample("
                          f"x, {sr}, {SAMPLE_RATE}) converts it)")
    x = np.asarray(waveform, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise VpevalError(f"{owner}: expected a non-empty 1-D waveform, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise VpevalError(f"{owner}: waveform contains NaN or infinite samples")
    return x

def resample(waveform, rate_in: int, rate_out: int) -> np.ndarray:
    """Resample a mono waveform from ``rate_in`` to ``rate_out`` Hz with soxr (quality ``HQ``, linear phase).

    soxr is the resampler librosa uses by default (``res_type="soxr_hq"``): a band-limited polyphase filter
    whose pass band keeps 95 % of the lower Nyquist frequency, with at least 100 dB of stop-band attenuation.
    The result has ``round(n * rate_out / rate_in)`` samples; equal rates return a float64 copy.

    Parameters
    ----------
    waveform : array_like of shape (n_samples,)
    rate_in, rate_out : int
        Sampling rates in Hz, positive.

    Returns
    -------
    ndarray of shape (round(n_samples * rate_out / rate_in),), float64

    Raises
    ------
    VpevalError
        A rate that is not a positive integer, or a waveform that is not 1-D.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.sin(2 * np.pi * 440 * np.arange(8000) / 8000)
    >>> resample(x, 8000, 16000).shape
    (16000,)
    """
    for name, r in (("rate_in", rate_in), ("rate_out", rate_out)):
        if isinstance(r, bool) or not isinstance(r, (int, np.integer)) or r <= 0:
            raise VpevalError(f"{name} must be a positive integer (Hz), got {r!r}")
    x = np.asarray(waveform, dtype=np.float64)
    if x.ndim != 1:
        raise VpevalError(f"resample: expected a 1-D waveform, got shape {x.shape}")
    if int(rate_in) == int(rate_out):
        return x.copy()
    soxr = _require("soxr")
    return np.asarray(soxr.resample(x, int(rate_in), int(rate_out), quality="HQ"), dtype=np.float64)


def read_audio(path, *, sr: int = SAMPLE_RATE, strict_rate: bool = False, channel: int | None = None) -> np.ndarray:
    """Read a FLAC/WAV file as float64 samples in [-1, 1] at ``sr`` Hz (resampled on read if needed).

    Parameters
    ----------
    path : str or Path
        The audio file.
    sr : int, default 16000
        The sampling rate in Hz of the returned samples.  A file at another rate is resampled
        (:func:`resample`) unless ``strict_rate``.
    strict_rate : bool, default False
        Refuse a file whose rate is not ``sr`` instead of resampling it.
    channel : int, optional
        Of a file with several channels, the one to read (0 = first); without it such a file is refused.

    Returns
    -------
    ndarray of shape (n_samples,), float64
        ``n_samples`` is the file's length converted to ``sr`` (:func:`resample`).

    Raises
    ------
    InputFileError
        The file does not exist, libsndfile cannot decode it, it has more than one channel and no ``channel``
        is chosen (or the chosen one does not exist), its rate is not ``sr`` and ``strict_rate`` is set, it
        has no samples, or it contains non-finite samples (float WAV).
    """
    return read_audio_rate(path, sr=sr, strict_rate=strict_rate, channel=channel)[0]


def read_audio_rate(path, *, sr: int = SAMPLE_RATE, strict_rate: bool = False,
                    channel: int | None = None) -> tuple[np.ndarray, int]:
    """:func:`read_audio`, also returning the file's own sampling rate.

    Returns
    -------
    waveform : ndarray of shape (n_samples,), float64
        At ``sr`` Hz.
    file_rate : int
        The file's sampling rate in Hz (``sr`` when it was not resampled).

    Raises
    ------
    InputFileError
        As :func:`read_audio`.
    """
    sf = _require("soundfile")

    from ..io.files import check_input_file

    path = Path(path)
    check_input_file(path, "a FLAC/WAV audio file")
    if not path.is_file():
        raise InputFileError(path, None, "audio file does not exist")
    if channel is not None and (isinstance(channel, bool) or not isinstance(channel, (int, np.integer))
                                or channel < 0):
        raise InputFileError(path, None, f"channel must be a non-negative integer (0 = first), got {channel!r}")
    try:
        with sf.SoundFile(str(path)) as f:
            rate, channels = int(f.samplerate), f.channels
            if channels != 1 and channel is None:
                raise InputFileError(path, None, f"has {channels} channels; expected mono audio (or choose "
                                     "one: --channel N, 0 = first)")
            if channel is not None and channel >= channels:
                raise InputFileError(path, None, f"has {channels} channel(s); channel {channel} does not exist "
                                     "(0 = first)")
            if rate != sr and strict_rate:
                raise InputFileError(
                    path, None,
                    f"sampling rate is {rate} Hz; {sr} Hz required (--strict-rate: not resampled; without it "
                    f"vpeval resamples on read)",
                )
            data = f.read(dtype="float64", always_2d=True)
    except InputFileError:
        raise
    except (RuntimeError, OSError, ValueError, TypeError) as exc:  # sf.LibsndfileError is a RuntimeError
        raise InputFileError(path, None, f"cannot be read as FLAC/WAV audio ({exc})") from None
    data = np.ascontiguousarray(data[:, 0 if channel is None else channel], dtype=np.float64)
    if data.size == 0:
        raise InputFileError(path, None, "audio file has no samples")
    if not np.isfinite(data).all():
        raise InputFileError(path, None, "audio contains NaN or infinite samples")
    if rate != sr:
        data = resample(data, rate, int(sr))
        if data.size == 0:
            raise InputFileError(path, None, f"audio file is too short to resample from {rate} to {sr} Hz")
    return data, rate


def write_audio(path, waveform, *, sr: int = SAMPLE_RATE, parents: bool = True) -> None:
    """Write mono float samples as 16-bit PCM FLAC or WAV (chosen by the file extension) at ``sr`` Hz.

    Samples must lie in [-1, 1]; values outside would be clipped by the 16-bit conversion, so they are
    refused instead.  Parent folders are created (with ``parents=False`` the parent folder must exist).

    Raises
    ------
    InputFileError
        Unknown extension (only ``.flac`` and ``.wav``), samples outside [-1, 1] or non-finite.
    OSError
        The file system refuses (a full disk, a missing parent folder with ``parents=False``), naming the file.
    """
    sf = _require("soundfile")

    path = Path(path)
    ext = path.suffix.lower()
    if ext not in AUDIO_EXTENSIONS:
        raise InputFileError(path, None, f"unknown audio extension {path.suffix!r}; use .flac or .wav")
    wav = np.asarray(waveform, dtype=np.float64)
    if wav.ndim != 1 or wav.size == 0:
        raise InputFileError(path, None, f"expected a non-empty 1-D waveform, got shape {wav.shape}")
    if not np.isfinite(wav).all():
        raise InputFileError(path, None, "waveform contains NaN or infinite samples")
    peak = float(np.max(np.abs(wav)))
    if peak > 1.0:
        raise InputFileError(path, None, f"waveform peak {peak:.4f} exceeds 1.0 and would clip")
    if parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    # encoded in memory, then written by Python: a full disk or a removed folder is an OSError naming the file
    # (libsndfile would report it as a bare "System error")
    buf = io.BytesIO()
    sf.write(buf, wav, sr, subtype="PCM_16", format=ext[1:].upper())
    with open(path, "wb") as f:
        f.write(buf.getbuffer())


def read_speaker_metadata(path) -> dict[str, str]:
    """Read a CSV with (at least) the columns ``utterance_id,speaker_id``.

    Returns
    -------
    dict
        utterance id -> speaker id.

    Raises
    ------
    InputFileError
        Missing file or columns, a column name twice, a ragged row, an empty id (with its line number), or an
        utterance listed twice with different speakers (twice with the same speaker is allowed: a metadata table
        may list an utterance once per condition).
    """
    from ..io.csv_table import read_named_csv
    from ..io.files import check_input_file

    path = Path(path)
    check_input_file(path, "a metadata CSV (utterance_id,speaker_id)")
    if not path.is_file():
        raise InputFileError(path, None, "metadata file does not exist")
    out: dict[str, str] = {}
    first_line: dict[str, int] = {}
    # by column name (io.csv_table): other columns allowed (sex, condition, ...), none twice; a BOM is skipped
    for line, row in read_named_csv(path, ("utterance_id", "speaker_id"), others=True)[1]:
        utt, spk = row["utterance_id"], row["speaker_id"]
        if not utt:
            raise InputFileError(path, line, "empty utterance_id")
        if not spk:
            raise InputFileError(path, line, f"utterance {utt!r} has an empty speaker_id")
        if utt in out and out[utt] != spk:
            raise InputFileError(
                path, line,
                f"utterance {utt!r} has speaker {spk!r} here but {out[utt]!r} on line {first_line[utt]}",
            )
        out.setdefault(utt, spk)
        first_line.setdefault(utt, line)
    return out


def _walk_files(folder: Path) -> list[Path]:
    """Every file below ``folder``, following symbolically linked folders (each real folder once, so a link
    to an ancestor cannot loop); a dangling symbolic link is an error naming it."""
    out: list[Path] = []
    seen: set[str] = set()
    for root, dirs, names in os.walk(folder, followlinks=True):
        real = os.path.realpath(root)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        dirs.sort()
        for n in sorted(names):
            p = Path(root) / n
            if p.is_symlink() and not p.exists():
                raise InputFileError(p, None, f"dangling symbolic link (its target {os.readlink(p)} does not "
                                     "exist)")
            if p.is_file():
                out.append(p)
    return out


def scan_audio_folder(folder, *, metadata=None, paths_from: str | None = None) -> list[AudioItem]:
    """List the FLAC/WAV utterances below ``folder`` (recursively), sorted by utterance id.

    Parameters
    ----------
    folder : str or Path
    metadata : str, Path, dict or None
        A CSV path (columns ``utterance_id,speaker_id``) or a ready mapping utterance id -> speaker id.
        Without it the speaker id is the stem's first ``-``-separated field.
    paths_from : {None, "data", "cwd"}
        Kaldi data folder only: the base of relative ``wav.scp`` paths, the data folder (default) or the working
        folder as in Kaldi recipes (:func:`vpeval.io.kaldi_data.read_kaldi_data_folder`).

    Returns
    -------
    list of AudioItem
        Sorted by utterance id, so results never depend on the file system's listing order.

    Raises
    ------
    InputFileError
        The folder does not exist or holds no ``.flac``/``.wav`` file; a dangling symbolic link below it
        (symbolically linked folders are followed); two files share a stem; an utterance has no speaker (stem
        without ``-`` and no metadata, or absent from the metadata). For a Kaldi data folder (``wav.scp``
        present): every error of :func:`vpeval.io.kaldi_data.read_kaldi_data_folder`, and ``metadata`` given
        (speakers come from ``utt2spk``).

    Notes
    -----
    For a Kaldi data folder the items follow ``wav.scp`` (sorted by utterance id) and ``relative_path`` is
    ``wav/<utterance id><suffix of the source file>``, the layout :func:`vpeval.audio.anonymize.anonymize_folder`
    writes.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise InputFileError(folder, None, "audio folder does not exist")
    from ..io.kaldi_data import is_kaldi_data_folder, read_kaldi_data_folder, relative_audio_path

    if is_kaldi_data_folder(folder):
        if metadata is not None:
            raise InputFileError(folder, None, "is a Kaldi data folder (wav.scp): speakers come from its utt2spk; "
                                 "do not give a metadata CSV")
        data = read_kaldi_data_folder(folder, paths_from=paths_from)
        seg = data.segments or {}
        return [AudioItem(p, u, data.utt2spk[u], relative_audio_path(u, p), seg.get(u)) for u, p in data.wav.items()]
    if metadata is None:
        mapping = None
        meta_name = None
    elif isinstance(metadata, dict):
        mapping = {str(k): str(v) for k, v in metadata.items()}
        meta_name = "<metadata>"
    else:
        mapping = read_speaker_metadata(metadata)
        meta_name = str(metadata)
    files = sorted(p for p in _walk_files(folder) if p.suffix.lower() in AUDIO_EXTENSIONS)
    if not files:
        raise InputFileError(folder, None, f"no audio files ({', '.join(AUDIO_EXTENSIONS)}) found")
    seen: dict[str, Path] = {}
    items = []
    for p in files:
        utt = p.stem
        if utt in seen:
            raise InputFileError(p, None, f"utterance id {utt!r} is also used by {seen[utt]}")
        seen[utt] = p
        if mapping is not None:
            spk = mapping.get(utt)
            if not spk:
                raise InputFileError(p, None, f"utterance {utt!r} has no speaker in the metadata {meta_name}")
        else:
            fields = utt.split("-")
            if len(fields) < 2 or not fields[0]:
                raise InputFileError(
                    p, None,
                    f"cannot tell the speaker of utterance {utt!r}: expected a file name "
                    "'<speaker>-<rest>' or a metadata CSV with utterance_id,speaker_id",
                )
            spk = fields[0]
        items.append(AudioItem(p, utt, spk, p.relative_to(folder)))
    items.sort(key=lambda it: it.utterance_id)
    return items


def read_item_audio(item: AudioItem, *, strict_rate: bool = False, channel: int | None = None) -> np.ndarray:
    """The samples of one utterance at 16 kHz: its whole file, or its time range of the recording (Kaldi
    ``segments``); :func:`read_item_audio_rate` without the file's rate."""
    return read_item_audio_rate(item, strict_rate=strict_rate, channel=channel)[0]


def read_item_audio_rate(item: AudioItem, *, strict_rate: bool = False,
                         channel: int | None = None) -> tuple[np.ndarray, int]:
    """The samples of one utterance at 16 kHz and its file's own rate.

    Parameters
    ----------
    item : AudioItem
    strict_rate : bool, default False
        Refuse a file not at 16 kHz instead of resampling it (:func:`read_audio`).
    channel : int, optional
        The channel of a multi-channel file (:func:`read_audio`).

    Returns
    -------
    waveform : ndarray of shape (n_samples,), float64
        At 16 kHz. For a segment ``start``-``end`` (seconds), samples ``round(start * 16000)`` up to (excluded)
        ``round(end * 16000)`` of the (resampled) recording, or to its end for end ``-1``.
    file_rate : int
        The recording's own sampling rate in Hz.

    Raises
    ------
    InputFileError
        Every error of :func:`read_audio`; a segment that starts at or after its recording's end or ends more than
        :data:`~vpeval.io.kaldi_segments.MAX_OVERSHOOT_SECONDS` after it (one ending within that is read to the
        recording's end with a :class:`~vpeval.errors.SegmentOvershootWarning`, as Kaldi does), or that holds no whole
        sample at 16 kHz (shorter than 1/16000 s once rounded to samples), naming the ``segments`` file and line.
    """
    x, rate = read_audio_rate(item.path, strict_rate=strict_rate, channel=channel)
    sg = item.segment
    if sg is None:
        return x, rate
    a = int(round(sg.start * SAMPLE_RATE))
    b = x.size if sg.end is None else int(round(sg.end * SAMPLE_RATE))
    span = f"segment {sg.start!r}-{'end' if sg.end is None else repr(sg.end)} s of utterance {item.utterance_id!r}"
    over = b - x.size
    if a >= x.size or over > round(MAX_OVERSHOOT_SECONDS * SAMPLE_RATE):
        raise InputFileError(sg.source, sg.line, f"{span} lies outside recording {sg.recording!r} ({item.path}, "
                             f"{x.size} samples = {x.size / SAMPLE_RATE!r} s at {SAMPLE_RATE} Hz)"
                             + ("" if a >= x.size else f": it ends more than the {MAX_OVERSHOOT_SECONDS:g} s Kaldi's "
                                "extract-segments truncates (--max-overshoot) after it"))
    if over > 0:  # a few milliseconds late (rounded times): read to the end, as Kaldi does
        import warnings

        warnings.warn(f"{sg.source}:{sg.line}: {span} ends {over / SAMPLE_RATE:g} s after recording "
                      f"{sg.recording!r} ({x.size / SAMPLE_RATE!r} s): read to the recording's end, as Kaldi's "
                      f"extract-segments does up to {MAX_OVERSHOOT_SECONDS:g} s", SegmentOvershootWarning,
                      stacklevel=2)
        b = x.size
    if a >= b:  # inside the recording, but shorter than one sample once its ends are rounded to samples
        raise InputFileError(sg.source, sg.line, f"{span} holds no sample: it lasts {sg.end - sg.start:.6g} s, "
                             f"less than one sample at {SAMPLE_RATE} Hz once its ends are rounded to samples "
                             f"({1 / SAMPLE_RATE:g} s); expected a segment of at least one sample")
    return x[a:b].copy(), rate


def _require(module: str):
    """Import an audio library, or raise ImportError saying which extra provides it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"vpeval's audio functions need {module!r}: pip install 'vpeval[audio]' "
            f"(librosa, soundfile and soxr) ({exc})"
        ) from None
