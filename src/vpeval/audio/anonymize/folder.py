"""Anonymize every utterance of an audio folder (or a Kaldi data folder) with one of the anonymizers.

:func:`anonymize_folder` draws the parameters per speaker or per utterance from a seed (stable hashes of the
seed and the speaker or utterance id, never of file order or worker), runs the anonymizer on each file, in
this process or on a Dask cluster, writes the audio mirroring the input layout and returns the table of
parameters. The command ``vpeval anonymize`` calls it.
"""

from __future__ import annotations

import hashlib

from pathlib import Path

import numpy as np

from ...errors import VpevalError
from ...progress import track
from ..io import SAMPLE_RATE, read_item_audio_rate, resample, scan_audio_folder, write_audio
from .base import _PCM16_MAX, draw_parameter
from .mcadams_coefficient import ALPHA_RANGE, DEFAULT_ALPHA, _check_alpha, draw_alpha, mcadams
from .resample import RESAMPLE_RANGE, resample_shift
from .world import VTLN_F0_RANGE, VTLN_WARP_RANGE, vtln

__all__ = ["anonymize_folder", "profile_seed", "pseudo_speaker", "METHODS"]

METHODS = ("mcadams", "vtln", "resample", "asr-tts", "pseudo-speaker")
"""Anonymizers of :func:`anonymize_folder`: :mod:`~vpeval.audio.anonymize.mcadams_coefficient`,
:mod:`~vpeval.audio.anonymize.world` (``vtln``), :mod:`~vpeval.audio.anonymize.resample`,
:mod:`~vpeval.audio.anonymize.asr_tts` (``asr-tts``: recognition, then one fixed synthetic voice) and
``pseudo-speaker`` (``asr-tts``, then that voice mapped to a pseudo-voice per speaker by ``vtln`` with drawn
parameters, :func:`pseudo_speaker`)."""


def _world_parameters(method: str, seed: int, key: str) -> dict:
    """Drawn parameters of ``vtln`` / ``resample`` for one key (speaker or utterance id)."""
    def log_uniform(u, lo, hi):
        return float(np.exp(np.log(lo) + u * (np.log(hi) - np.log(lo))))

    if method in ("vtln", "pseudo-speaker"):
        lo, hi = VTLN_WARP_RANGE
        mag = lo + draw_parameter(seed, key, "vtln-warp") * (hi - lo)
        sign = 1.0 if draw_parameter(seed, key, "vtln-sign") < 0.5 else -1.0
        return {"warp": sign * mag, "f0_ratio": log_uniform(draw_parameter(seed, key, "vtln-f0"), *VTLN_F0_RANGE)}
    # resample: log-uniform on [lo, 1/1.07] U [1.07, hi], so the shift is never negligible
    lo, hi = RESAMPLE_RANGE
    u = draw_parameter(seed, key, "resample-ratio")
    a, b = np.log(lo), np.log(hi)
    gap = np.log(1.07)
    span = (-gap - a) + (b - gap)
    v = a + u * span
    if v > -gap:
        v += 2 * gap
    return {"ratio": float(np.exp(v))}


_PARAMETER_COLUMNS = {"mcadams": ["alpha"], "vtln": ["warp", "f0_ratio"], "resample": ["ratio"],
                      "asr-tts": ["text", "empty_transcript", "engine", "voice"],
                      "pseudo-speaker": ["text", "empty_transcript", "engine", "voice", "warp", "f0_ratio"]}
# asr-tts: what it recognised and which engine and voice spoke it (it draws nothing), and the output's own length
_SYNTHETIC = ("asr-tts", "pseudo-speaker")  # output as long as the synthesiser makes it, at 16 kHz


def pseudo_speaker(waveform, warp: float, f0_ratio: float, *, engine: str | None = None, asr=None):
    """The ``pseudo-speaker`` anonymizer: the words spoken by one synthetic voice, then mapped to a pseudo-voice.

    :func:`~vpeval.audio.anonymize.resynthesize` (16 kHz mono in and out), its output rounded to 16-bit PCM as a
    FLAC file would hold it, then :func:`~vpeval.audio.anonymize.vtln` with ``warp`` and ``f0_ratio``. With the
    parameters drawn per speaker from a seed or a profile key (:func:`anonymize_folder`), every speaker gets a
    pseudo-voice of its own, the same on every utterance, that depends on nothing in its speech but the words (in
    the spirit of the VoicePrivacy pseudo-speaker baselines, whose pseudo-voice is an x-vector drawn per speaker).
    The rounding makes the output equal, sample for sample, to ``vpeval anonymize --method asr-tts`` followed by
    ``vpeval anonymize --method vtln`` with the same parameters on its files (tested).

    Parameters
    ----------
    waveform : array-like of float, shape (n,)
        16 kHz mono samples in [-1, 1].
    warp, f0_ratio : float
        :func:`~vpeval.audio.anonymize.vtln`'s bilinear warping coefficient and F0 ratio.
    engine, asr
        As :func:`~vpeval.audio.anonymize.resynthesize`.

    Returns
    -------
    (numpy.ndarray, dict)
        The samples (16 kHz, as long as the synthesiser made them) and ``resynthesize``'s info with ``warp`` and
        ``f0_ratio`` added.

    Raises
    ------
    TTSUnavailableError, ASRUnavailableError, VpevalError
        As :func:`~vpeval.audio.anonymize.resynthesize` and :func:`~vpeval.audio.anonymize.vtln`.
    """
    import io

    import soundfile as sf

    from .asr_tts import resynthesize

    y, info = resynthesize(waveform, engine=engine, asr=asr)
    buf = io.BytesIO()
    sf.write(buf, y, SAMPLE_RATE, subtype="PCM_16", format="FLAC")
    buf.seek(0)
    y16, _ = sf.read(buf, dtype="float64")
    return vtln(y16, warp, f0_ratio), {**info, "warp": float(warp), "f0_ratio": float(f0_ratio)}


def _columns(method: str) -> list[str]:
    """The columns of ``anonymization.csv`` (before ``profile``) for ``method``."""
    lengths = ["duration_s", "output_duration_s"] if method in _SYNTHETIC else ["duration_s"]
    return ["utterance_id", "speaker_id", *_PARAMETER_COLUMNS[method], *lengths, "output", "input_rate_hz",
            "output_rate_hz"]


def _anonymize_file(job):
    """Read, anonymize and write one utterance: ``job = (item, method, parameters, out_root, audio_format,
    strict_rate, channel, out_rate)`` (a segment of a recording included); returns its table row. Module level, so a Dask worker can run it.

    The anonymizer runs at 16 kHz (the file is resampled on read if needed); the output is resampled to
    ``out_rate`` (None: the file's own rate; for asr-tts 16 kHz) and, if that lifts its peak above 16-bit PCM,
    scaled down to it."""
    it, method, par, out_root, audio_format, strict_rate, channel, out_rate = job
    x, rate = read_item_audio_rate(it, strict_rate=strict_rate, channel=channel)
    if method == "asr-tts":
        from .asr_tts import resynthesize

        y, par = resynthesize(x, engine=par["engine"], asr=par.get("asr"))
    elif method == "pseudo-speaker":
        y, par = pseudo_speaker(x, par["warp"], par["f0_ratio"], engine=par["engine"], asr=par.get("asr"))
    elif method == "mcadams":
        y = mcadams(x, par["alpha"])
    else:
        y = vtln(x, **par) if method == "vtln" else resample_shift(x, **par)
    # by default each file keeps its own rate; asr-tts's synthetic speech stays at 16 kHz (it is not the input's)
    own = SAMPLE_RATE if method in _SYNTHETIC else rate
    target = own if out_rate is None else int(out_rate)
    if target != SAMPLE_RATE:
        y = resample(y, SAMPLE_RATE, target)
        peak = float(np.max(np.abs(y)))
        if peak > _PCM16_MAX:
            y = y * (_PCM16_MAX / peak)
    rel = it.relative_path.with_suffix("." + audio_format)
    # the sub-folders are made below ``out_root`` but never ``out_root`` itself: a task still running after the
    # run failed (or was installed) must not re-create the removed temporary folder (docs/output.md)
    folder = Path(out_root)
    for part in rel.parent.parts:
        folder = folder / part
        try:
            folder.mkdir()
        except FileExistsError:
            pass
    write_audio(Path(out_root) / rel, y, sr=target, parents=False)
    lengths = (x.size / SAMPLE_RATE, y.size / target) if method in _SYNTHETIC else (x.size / SAMPLE_RATE,)
    return (it.utterance_id, it.speaker_id, *[par[n] for n in _PARAMETER_COLUMNS[method]], *lengths,
            rel.as_posix(), rate, target)


def profile_seed(key: str) -> int:
    """The seed of pseudo-identity profile ``key``: the first 8 bytes (little-endian) of the SHA-256 of
    ``"vpeval-profile\0" + key`` (UTF-8), so any text names a profile and equal keys give equal draws on every
    machine.

    Raises
    ------
    VpevalError
        An empty key, or one with white space or control characters (keys are written into tables).

    Examples
    --------
    >>> profile_seed("p1") == profile_seed("p1"), profile_seed("p1") == profile_seed("p2")
    (True, False)
    """
    if not isinstance(key, str) or not key or any(c.isspace() or not c.isprintable() for c in key):
        raise VpevalError(f"a profile key is a non-empty text without white space, got {key!r}")
    return int.from_bytes(hashlib.sha256(("vpeval-profile\0" + key).encode("utf-8")).digest()[:8], "little")


def anonymize_folder(in_dir, out_dir, *, alpha=DEFAULT_ALPHA, seed: int | None = None,
                     alpha_range=ALPHA_RANGE, metadata=None, audio_format: str = "flac",
                     quiet: bool = False, method: str = "mcadams", client=None, strict_rate: bool = False,
                     channel: int | None = None, out_rate: int | None = None, paths_from: str | None = None,
                     profile: str | None = None, engine: str | None = None, asr=None):
    """Anonymize every utterance of an audio folder with :func:`mcadams` or ``method``, mirroring the folder layout.

    Parameters
    ----------
    in_dir, out_dir : str or Path
        Input folder (read with :func:`vpeval.audio.io.scan_audio_folder`: mono FLAC/WAV at any rate,
        speaker = first ``-`` field of the file name or from ``metadata``) and output folder (created;
        must not be the input folder or inside it).
    alpha : float or {"utterance", "speaker"}, default 0.8
        A fixed coefficient, or draw one per utterance / per speaker with :func:`draw_alpha`
        (key = utterance id / speaker id) in ``alpha_range``; drawing needs ``seed``.
    seed : int, optional
        Seed of the draws.
    alpha_range : (float, float), default (0.5, 0.9)
    metadata : str, Path, dict or None
        Utterance -> speaker mapping (see :func:`~vpeval.audio.io.scan_audio_folder`).
    audio_format : {"flac", "wav"}
        Output format (16-bit PCM, at ``out_rate``).
    quiet : bool
        No progress bar (it goes to stderr otherwise).
    method : {"mcadams", "vtln", "resample", "asr-tts", "pseudo-speaker"}, default "mcadams"
        ``vtln`` (F0 ratio + bilinear envelope warping, :func:`vpeval.audio.anonymize.vtln`) and ``resample``
        (frequency ratio, :func:`vpeval.audio.anonymize.resample_shift`) draw their parameters per speaker or
        per utterance (``alpha`` = ``"speaker"`` / ``"utterance"``, with ``seed``): ``warp`` with
        ``|warp|`` uniform in :data:`~vpeval.audio.anonymize.VTLN_WARP_RANGE` and a random sign,
        ``f0_ratio`` log-uniform in :data:`~vpeval.audio.anonymize.VTLN_F0_RANGE`, ``ratio`` log-uniform in
        :data:`~vpeval.audio.anonymize.RESAMPLE_RANGE` outside [1/1.07, 1.07]. ``pseudo-speaker``
        (:func:`pseudo_speaker`) draws ``warp`` and ``f0_ratio`` as ``vtln`` does (the same draws for the same
        seed or key) and applies them to the ``asr-tts`` output. ``asr-tts``
        (:func:`vpeval.audio.anonymize.resynthesize`: Whisper-base transcript spoken by one fixed synthetic voice) draws
        nothing: every speaker gets the same voice, so ``alpha``, ``alpha_range``, ``seed`` and ``profile`` must
        be left at their defaults (a VpevalError says so); its output is as long as the synthesiser makes it
        (never cut or padded to the input) and is written at 16 kHz unless ``out_rate`` says otherwise.
    client : distributed.Client, optional
        Anonymize on this Dask cluster (:mod:`vpeval.pipeline.cluster`), a few utterances per task; the
        workers must see ``in_dir`` and ``out_dir`` (shared storage). The files are the same as without a
        client (parameters are drawn per utterance/speaker key, never per worker). ``vpeval anonymize`` writes
        into its claimed temporary folder (:mod:`vpeval.io.output`), so a failure leaves no partial output.
    strict_rate : bool, default False
        Refuse an input file that is not at 16 kHz; without it such a file is resampled to 16 kHz on read
        (:func:`vpeval.audio.io.read_audio`).  The anonymizers always run at 16 kHz.
    channel : int, optional
        The channel to anonymize of files with several (0 = first); without it such files are refused.
    out_rate : int, optional
        Sampling rate (Hz) of the written files; by default each file's own rate (an 8 kHz input gives an
        8 kHz output).  Output above 16 kHz holds nothing above 8 kHz (the anonymizers run at 16 kHz).
    paths_from : {None, "data", "cwd"}
        Kaldi data folder input: the base of relative ``wav.scp`` paths (:func:`~vpeval.audio.io.scan_audio_folder`).
    profile : str, optional
        A pseudo-identity profile key (Beyond-EER's "profiles"): every speaker's parameters are drawn from the
        key (seed :func:`profile_seed` of it, draws per speaker), so one key maps a speaker to one pseudo-voice
        on every utterance and in every run, and another key to another one (renewal). Replaces ``seed``;
        ``alpha`` must be left at its default or be ``"speaker"``. The table gains a ``profile`` column.
    engine : {"piper", "espeak-ng"} or None
        ``asr-tts`` and ``pseudo-speaker`` only: the synthesiser (:data:`~vpeval.audio.anonymize.asr_tts.ENGINES`); None = Piper if
        installed, else espeak-ng (with an :class:`~vpeval.audio.anonymize.asr_tts.EngineFallbackWarning`),
        decided once for the whole folder.
    asr : ASRBackend, optional
        ``asr-tts`` and ``pseudo-speaker`` only: the recogniser (default: Whisper-base, loaded once per process). Not with ``client``
        (each worker loads the default one).

    Returns
    -------
    pandas.DataFrame
        One row per utterance, sorted by utterance id: ``utterance_id, speaker_id, alpha, duration_s,
        output, input_rate_hz, output_rate_hz`` (output path relative to ``out_dir``; the input file's own
        sampling rate and the written one, Hz); for ``vtln`` the parameter columns are ``warp, f0_ratio``
        and for ``resample`` ``ratio`` instead of ``alpha``; for ``asr-tts`` ``text, empty_transcript, engine,
        voice`` (the recognised transcript, True where it held nothing to say and the output is
        :data:`~vpeval.audio.anonymize.asr_tts.SILENCE_S` s of silence, the engine and voice that spoke) instead of
        ``alpha``, and ``output_duration_s`` after ``duration_s`` (the input's); for ``pseudo-speaker`` those of
        ``asr-tts`` with ``warp, f0_ratio`` after them.  The same table is written to
        ``out_dir/anonymization.csv`` (with ``profile``: a last column ``profile``, the key).  When ``in_dir`` is a Kaldi data folder (``wav.scp``), ``out_dir``
        becomes one too: the audio goes to ``out_dir/wav/<utterance id>.<format>``, a new ``wav.scp`` points
        at it (paths relative to ``out_dir``) and ``utt2spk``, ``spk2utt``, ``spk2gender`` and ``text`` are
        carried over, so the next command takes ``out_dir`` unchanged (for ``asr-tts`` too: ``text`` stays the
        reference transcript; the recognised one is in the table).

    Raises
    ------
    InputFileError
        Any problem with an input file (named), see :func:`~vpeval.audio.io.read_audio`.
    VpevalError
        Bad ``alpha``/``seed``/``profile``/format/``out_rate``/``engine``, any of them given to ``asr-tts`` (it draws
        nothing), ``engine``/``asr`` given to another method, or ``out_dir`` inside ``in_dir``.
    TTSUnavailableError, ASRUnavailableError
        ``asr-tts``: the synthesiser or the recogniser is not installed (ImportErrors naming the install command).
    """
    import pandas as pd

    if method == "asr-tts":
        given = [n for n, v in (("alpha (--alpha)", not (not isinstance(alpha, str) and alpha == DEFAULT_ALPHA)),
                                ("alpha_range (--alpha-min/--alpha-max)", tuple(alpha_range) != tuple(ALPHA_RANGE)),
                                ("seed (--seed)", seed is not None), ("profile (--profile)", profile is not None)) if v]
        if given:
            raise VpevalError(f"method 'asr-tts' draws no parameters (one fixed synthetic voice for every speaker): "
                              f"leave {', '.join(given)} unset")
    if method in _SYNTHETIC and asr is not None and client is not None:
        raise VpevalError("asr= runs in this process; with a client each worker loads the default Whisper-base")
    if method not in _SYNTHETIC and (engine is not None or asr is not None):
        raise VpevalError(f"engine (--engine) and asr apply to methods 'asr-tts' and 'pseudo-speaker' only, not "
                          f"{method!r}")
    if profile is not None:
        if seed is not None:
            raise VpevalError("give a profile key or a seed, not both (the profile's draws are seeded by the key)")
        if not (alpha == "speaker" or (not isinstance(alpha, str) and alpha == DEFAULT_ALPHA)):
            raise VpevalError(f"a profile draws the parameters per speaker; alpha must be 'speaker' or left at its "
                              f"default, got {alpha!r}")
        alpha, seed = "speaker", profile_seed(profile)

    in_dir, out_dir = Path(in_dir), Path(out_dir)
    if audio_format not in ("flac", "wav"):
        raise VpevalError(f"audio_format must be 'flac' or 'wav', got {audio_format!r}")
    if method not in METHODS:
        raise VpevalError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if out_rate is not None and (isinstance(out_rate, bool) or not isinstance(out_rate, (int, np.integer))
                                 or not 1000 <= out_rate <= 384000):
        raise VpevalError(f"out_rate must be an integer number of Hz in [1000, 384000], got {out_rate!r}")
    if method in _SYNTHETIC:
        from .asr_tts import resolve_engine

        engine = resolve_engine(engine)  # once for the folder (a fallback warns once), before any file is read
    if method == "asr-tts":
        mode = "fixed"
    elif method != "mcadams":
        if not (isinstance(alpha, str) and alpha in ("utterance", "speaker")) or seed is None:
            raise VpevalError(f"method {method!r} draws its parameters: give alpha='speaker' or 'utterance' and a seed")
        mode = alpha
    elif isinstance(alpha, str) and alpha in ("utterance", "speaker"):
        if seed is None:
            raise VpevalError(f"alpha drawn per {alpha} needs a seed")
        low, high = (float(v) for v in alpha_range)
        draw_alpha(seed, "", low, high)  # validates range and seed
        mode = alpha
    else:
        fixed = _check_alpha(alpha)
        mode = "fixed"
    items = scan_audio_folder(in_dir, metadata=metadata, paths_from=paths_from)
    ri, ro = in_dir.resolve(), out_dir.resolve()
    if ro == ri or ri in ro.parents:
        raise VpevalError(f"output folder {out_dir} must not be the input folder or inside it")

    def parameters(it) -> dict:
        key = it.speaker_id if mode == "speaker" else it.utterance_id
        if method == "asr-tts":
            return {"engine": engine, **({"asr": asr} if asr is not None else {})}
        if method == "pseudo-speaker":
            return {"engine": engine, **({"asr": asr} if asr is not None else {}),
                    **_world_parameters(method, seed, key)}
        if method != "mcadams":
            return _world_parameters(method, seed, key)
        return {"alpha": fixed if mode == "fixed" else draw_alpha(seed, key, low, high)}

    description = {"mcadams": "McAdams", "asr-tts": f"ASR + TTS ({engine})",
                   "pseudo-speaker": f"ASR + TTS ({engine}) + pseudo-voice"}.get(method, method)
    out_dir.mkdir(parents=True, exist_ok=True)  # here, never by a task (see _anonymize_file)
    if client is not None:
        import dataclasses
        import os

        from ...pipeline.cluster import map_items

        # absolute paths: a worker's working folder is not ours
        out_abs = Path(os.path.abspath(out_dir))
        jobs = [(dataclasses.replace(it, path=Path(os.path.abspath(it.path))), method, parameters(it), out_abs,
                 audio_format, strict_rate, channel, out_rate) for it in items]
        rows = map_items(client, _anonymize_file, jobs, names=[job[0].path for job in jobs],
                         description=description, quiet=quiet)
    else:
        rows = [_anonymize_file((it, method, parameters(it), out_dir, audio_format, strict_rate, channel, out_rate))
                for it in track(items, total=len(items), description=description, quiet=quiet)]
    df = pd.DataFrame(rows, columns=_columns(method))
    if profile is not None:
        df["profile"] = profile
    df.to_csv(out_dir / "anonymization.csv", index=False, float_format="%.10g")
    _carry_kaldi_folder(in_dir, out_dir, df)
    return df


def _carry_kaldi_folder(in_dir: Path, out_dir: Path, df) -> None:
    """If ``in_dir`` is a Kaldi data folder, make ``out_dir`` one too: a new ``wav.scp`` pointing at the
    anonymized files, ``utt2spk``/``spk2utt``/``spk2gender``/``text`` carried over."""
    from ...io.kaldi_data import is_kaldi_data_folder, read_kaldi_data_folder, write_kaldi_data_folder

    if not is_kaldi_data_folder(in_dir):
        return
    data = read_kaldi_data_folder(in_dir, check_files=False)
    wav = {u: out_dir / o for u, o in zip(df["utterance_id"], df["output"])}
    write_kaldi_data_folder(out_dir, wav, data.utt2spk, sex=data.sex, text=data.text)

