"""Input features for speaker-embedding model files: raw waveform or a log mel filterbank, stated exactly.

A model file a user brings (:mod:`vpeval.audio.embed.model_file`) and the bundled d-vector encoder
(:mod:`vpeval.audio.embed.voicefilter`) both read features computed here, from one :class:`FeatureSpec`.
Nothing is guessed: a model file comes with its spec (a JSON sidecar, ``docs/extractors.md``), and every step
below is one documented option.

**Waveform** (``type="waveform"``): the 16 kHz samples (float in [-1, 1]) times ``waveform_scale`` (1, or
32768 for models trained on 16-bit integer values), shape ``(n_samples,)``.

**Log mel filterbank** (``type="fbank"``), frame by frame:

1. ``x = waveform * waveform_scale``.
2. Framing, one of two conventions:

   * ``framing="kaldi"``: frame ``t`` is ``x[t*shift : t*shift + length]``, ``t = 0 .. 1 + (n - length) //
     shift - 1`` (Kaldi's ``snip_edges=true``: no padding, partial frames dropped). With ``remove_dc`` the
     frame's mean is subtracted; with ``preemphasis = c > 0`` each frame becomes ``y[i] = f[i] - c f[i-1]``,
     ``y[0] = f[0] - c f[0]`` (Kaldi applies both per frame, in this order). The frame is multiplied by the
     window and zero-padded at its end to ``n_fft`` samples.
   * ``framing="stft"`` (the convention of ``librosa.stft`` and ``torch.stft``): with ``preemphasis = c > 0``
     the whole signal first becomes ``y[i] = x[i] - c x[i-1]``, ``y[0] = x[0]``; with ``center`` it is padded
     with ``n_fft // 2`` zeros on each side. Frame ``t`` is ``y[t*shift : t*shift + n_fft]``, ``t = 0 .. 1 +
     (len(y) - n_fft) // shift - 1``, and the window (``length`` samples) is placed at its centre, starting at
     sample ``(n_fft - length) // 2``, zero elsewhere. ``remove_dc`` subtracts each frame's mean over the
     window's span before windowing.

3. Window (``length`` samples, ``n = 0 .. length-1``, ``N = length``): ``hann`` = ``0.5 - 0.5 cos(2 pi n /
   N)`` and ``hamming`` = ``0.54 - 0.46 cos(2 pi n / N)`` (periodic, the ``torch``/``librosa`` default);
   ``hann_symmetric`` / ``hamming_symmetric`` use ``N - 1`` in the denominator (Kaldi's ``hamming``, NumPy's
   ``np.hamming``); ``povey`` = ``(0.5 - 0.5 cos(2 pi n / (N - 1))) ** 0.85`` (Kaldi's default);
   ``rectangular`` = 1.
4. Spectrum: ``|rfft(frame, n_fft)| ** power`` (``power`` 2: energy, 1: magnitude), ``n_fft // 2 + 1`` bins.
5. Mel filterbank: ``n_mels`` triangles between ``fmin`` and ``fmax`` Hz from :func:`librosa.filters.mel`
   (``htk=(mel_scale == "htk")``, ``norm=mel_norm``: ``"slaney"`` scales each triangle to unit area, ``None``
   leaves peaks at 1). The triangles are linear in Hz between mel-spaced edges; Kaldi's are linear on the mel
   scale, so a Kaldi fbank is approximated closely, not reproduced bit for bit.
6. Log: ``log(max(E + log_offset, log_floor))`` with ``log`` = ``ln``, ``log10``, ``db`` (``10 log10``) or
   ``none`` (no offset, floor or log).
7. Normalisation over the utterance's frames, per mel band: ``mean_norm="utterance"`` subtracts the band's
   mean (cepstral mean normalisation); ``var_norm`` then divides by the band's population standard deviation
   (a band with zero deviation is left undivided).

The result has shape ``(n_frames, n_mels)``; :func:`model_input` lays it out as the model's input.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np

from ...errors import InputFileError, VpevalError
from ..io import SAMPLE_RATE

__all__ = ["FeatureSpec", "compute_features", "model_input", "window_function", "read_feature_spec"]

_WINDOWS = ("hann", "hamming", "hann_symmetric", "hamming_symmetric", "povey", "rectangular")
_LOGS = ("ln", "log10", "db", "none")
#: keys a fbank spec must state (everything else has a documented default)
_FBANK_REQUIRED = ("n_mels", "frame_length_ms", "frame_shift_ms", "window", "log", "mean_norm")


@dataclass(frozen=True)
class FeatureSpec:
    """What a speaker-embedding model reads (see the module doc for every step).

    Parameters
    ----------
    type : {"fbank", "waveform"}
    waveform_scale : float, default 1.0
        Factor on the [-1, 1] samples before anything else (32768 for 16-bit integer scale).
    frame_length_ms, frame_shift_ms : float, default 25, 10
        Window length and frame shift in ms; at 16 kHz each must be a whole number of samples.
    n_fft : int, optional
        FFT size, at least the frame length; default: the next power of two (512 for 25 ms).
    framing : {"kaldi", "stft"}, default "kaldi"
    center : bool, default False
        ``stft`` framing only: pad ``n_fft // 2`` zeros on each side.
    window : str, default "hamming"
        One of ``hann``, ``hamming``, ``hann_symmetric``, ``hamming_symmetric``, ``povey``, ``rectangular``.
    preemphasis : float, default 0.0
    remove_dc : bool, default False
    power : float, default 2.0
    n_mels : int, default 80
    fmin, fmax : float, default 0 and 8000 Hz
    mel_scale : {"slaney", "htk"}, default "slaney"
    mel_norm : {"slaney", None}, default "slaney"
    log : {"ln", "log10", "db", "none"}, default "ln"
    log_offset : float, default 0.0
    log_floor : float, default 1e-10
    mean_norm : {"utterance", "none"}, default "none"
    var_norm : bool, default False
    layout : {"time_major", "feature_major"}, default "time_major"
        Model input shape ``(1, n_frames, n_mels)`` or ``(1, n_mels, n_frames)`` (fbank); a waveform is
        always ``(1, n_samples)``.

    Raises
    ------
    VpevalError
        An option outside its range (the message names it).
    """

    type: str = "fbank"
    waveform_scale: float = 1.0
    frame_length_ms: float = 25.0
    frame_shift_ms: float = 10.0
    n_fft: int | None = None
    framing: str = "kaldi"
    center: bool = False
    window: str = "hamming"
    preemphasis: float = 0.0
    remove_dc: bool = False
    power: float = 2.0
    n_mels: int = 80
    fmin: float = 0.0
    fmax: float = 8000.0
    mel_scale: str = "slaney"
    mel_norm: str | None = "slaney"
    log: str = "ln"
    log_offset: float = 0.0
    log_floor: float = 1e-10
    mean_norm: str = "none"
    var_norm: bool = False
    layout: str = "time_major"

    def __post_init__(self):
        def bad(key, why):
            raise VpevalError(f"feature option {key}={getattr(self, key)!r}: {why}")

        if self.type not in ("fbank", "waveform"):
            bad("type", "expected 'fbank' or 'waveform'")
        if not (isinstance(self.waveform_scale, (int, float)) and math.isfinite(self.waveform_scale)
                and self.waveform_scale > 0):
            bad("waveform_scale", "expected a positive number")
        for key in ("frame_length_ms", "frame_shift_ms"):
            v = getattr(self, key)
            if not isinstance(v, (int, float)) or not v > 0 or abs(v * 16 - round(v * 16)) > 1e-9:
                bad(key, "expected a positive duration in ms that is a whole number of samples at 16 kHz "
                         "(a multiple of 0.0625 ms)")
        length = self.frame_length
        if self.n_fft is not None and (int(self.n_fft) != self.n_fft or self.n_fft < length):
            bad("n_fft", f"expected an integer >= the frame length ({length} samples)")
        if self.framing not in ("kaldi", "stft"):
            bad("framing", "expected 'kaldi' or 'stft'")
        if not isinstance(self.center, bool) or (self.center and self.framing != "stft"):
            bad("center", "expected true or false; true needs framing 'stft'")
        if self.window not in _WINDOWS:
            bad("window", f"expected one of {', '.join(_WINDOWS)}")
        if not isinstance(self.preemphasis, (int, float)) or not 0.0 <= self.preemphasis < 1.0:
            bad("preemphasis", "expected a number in [0, 1)")
        if not isinstance(self.remove_dc, bool):
            bad("remove_dc", "expected true or false")
        if self.power not in (1, 2, 1.0, 2.0):
            bad("power", "expected 1 (magnitude) or 2 (energy)")
        if not isinstance(self.n_mels, int) or isinstance(self.n_mels, bool) or not 1 <= self.n_mels <= 512:
            bad("n_mels", "expected an integer in [1, 512]")
        if not (isinstance(self.fmin, (int, float)) and isinstance(self.fmax, (int, float))
                and 0 <= self.fmin < self.fmax <= SAMPLE_RATE / 2):
            bad("fmax" if isinstance(self.fmin, (int, float)) and self.fmin >= 0 else "fmin",
                "expected 0 <= fmin < fmax <= 8000 Hz")
        if self.mel_scale not in ("slaney", "htk"):
            bad("mel_scale", "expected 'slaney' or 'htk'")
        if self.mel_norm not in ("slaney", None):
            bad("mel_norm", "expected 'slaney' or null")
        if self.log not in _LOGS:
            bad("log", f"expected one of {', '.join(_LOGS)}")
        for key in ("log_offset", "log_floor"):
            v = getattr(self, key)
            if not isinstance(v, (int, float)) or not (math.isfinite(v) and v >= 0):
                bad(key, "expected a number >= 0")
        if self.log != "none" and self.log_offset == 0 and self.log_floor == 0:
            bad("log_floor", "log_offset and log_floor are both 0: a silent frame would give log(0)")
        if self.mean_norm not in ("utterance", "none"):
            bad("mean_norm", "expected 'utterance' or 'none'")
        if not isinstance(self.var_norm, bool):
            bad("var_norm", "expected true or false")
        if self.layout not in ("time_major", "feature_major"):
            bad("layout", "expected 'time_major' or 'feature_major'")

    @property
    def frame_length(self) -> int:
        """Window length in samples at 16 kHz."""
        return int(round(self.frame_length_ms * SAMPLE_RATE / 1000))

    @property
    def frame_shift(self) -> int:
        """Frame shift in samples at 16 kHz."""
        return int(round(self.frame_shift_ms * SAMPLE_RATE / 1000))

    @property
    def fft_size(self) -> int:
        """``n_fft``, or the next power of two at or above the frame length."""
        return int(self.n_fft) if self.n_fft is not None else 1 << (self.frame_length - 1).bit_length()

    def to_dict(self) -> dict:
        """The options as a JSON-ready dict (the sidecar's feature keys)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict, *, where: str = "features") -> "FeatureSpec":
        """Build a spec from a sidecar's keys; unknown keys and, for ``fbank``, unstated required keys are errors.

        Raises
        ------
        VpevalError
            Prefixed ``where: ``.
        """
        if not isinstance(d, dict):
            raise VpevalError(f"{where}: expected a JSON object of feature options, got {type(d).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise VpevalError(f"{where}: unknown feature option(s) {', '.join(map(repr, unknown))}; "
                              f"known: {', '.join(sorted(known))}")
        if "type" not in d:
            raise VpevalError(f"{where}: state the feature type: \"type\": \"fbank\" or \"waveform\"")
        if d["type"] == "waveform":
            extra = sorted(set(d) - {"type", "waveform_scale"})
            if extra:
                raise VpevalError(f"{where}: a waveform model reads the samples; {', '.join(map(repr, extra))} "
                                  "would be ignored (only waveform_scale applies)")
        if d["type"] == "fbank":
            missing = [k for k in _FBANK_REQUIRED if k not in d]
            if missing:
                raise VpevalError(f"{where}: a fbank model must state {', '.join(missing)} (vpeval guesses no "
                                  "feature setting; docs/extractors.md)")
        try:
            return cls(**d)
        except VpevalError as exc:
            raise VpevalError(f"{where}: {exc}") from None


def read_feature_spec(path) -> tuple[FeatureSpec, dict]:
    """Read a JSON sidecar: feature options plus ``name`` and ``output`` (docs/extractors.md).

    Returns
    -------
    (FeatureSpec, dict)
        The features and the other keys (``name``, ``output``) as given.

    Raises
    ------
    InputFileError
        Unreadable file, invalid JSON, or bad options, naming the file.
    """
    path = Path(path)
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputFileError(path, None, f"cannot read the feature sidecar ({exc.strerror or exc})") from None
    except json.JSONDecodeError as exc:
        raise InputFileError(path, exc.lineno, f"invalid JSON: {exc.msg}") from None
    if not isinstance(d, dict):
        raise InputFileError(path, None, "expected a JSON object")
    extra = {k: d.pop(k) for k in ("name", "output") if k in d}
    try:
        return FeatureSpec.from_dict(d, where="options"), extra
    except VpevalError as exc:
        raise InputFileError(path, None, str(exc)) from None


def window_function(name: str, length: int) -> np.ndarray:
    """One of the windows of the module doc, float64 of shape ``(length,)``.

    Examples
    --------
    >>> window_function("hann", 4).round(3).tolist()
    [0.0, 0.5, 1.0, 0.5]
    >>> window_function("hann_symmetric", 3).tolist()
    [0.0, 1.0, 0.0]
    """
    n = np.arange(length, dtype=np.float64)
    if name == "rectangular":
        return np.ones(length)
    periodic = name in ("hann", "hamming")
    denom = length if periodic else max(length - 1, 1)
    c = np.cos(2.0 * np.pi * n / denom)
    if name in ("hann", "hann_symmetric"):
        return 0.5 - 0.5 * c
    if name in ("hamming", "hamming_symmetric"):
        return 0.54 - 0.46 * c
    if name == "povey":
        return (0.5 - 0.5 * c) ** 0.85
    raise VpevalError(f"unknown window {name!r}; choose one of {', '.join(_WINDOWS)}")


def _frames(x: np.ndarray, spec: FeatureSpec) -> np.ndarray:
    """The windowed frames, shape (n_frames, n_fft), zero-padded as the module doc says."""
    length, shift, n_fft = spec.frame_length, spec.frame_shift, spec.fft_size
    win = window_function(spec.window, length)
    if spec.framing == "kaldi":
        if x.size < length:
            raise VpevalError(f"utterance of {x.size} samples is shorter than one {length}-sample frame")
        n = 1 + (x.size - length) // shift
        f = np.lib.stride_tricks.sliding_window_view(x, length)[::shift][:n].copy()
        if spec.remove_dc:
            f -= f.mean(axis=1, keepdims=True)
        if spec.preemphasis > 0:
            f[:, 1:] -= spec.preemphasis * f[:, :-1].copy()
            f[:, 0] *= 1.0 - spec.preemphasis
        out = np.zeros((n, n_fft))
        out[:, :length] = f * win
        return out
    y = x
    if spec.preemphasis > 0:
        y = np.concatenate([x[:1], x[1:] - spec.preemphasis * x[:-1]])
    if spec.center:
        y = np.pad(y, n_fft // 2)
    if y.size < n_fft:
        raise VpevalError(f"utterance of {x.size} samples is shorter than one {n_fft}-sample frame")
    n = 1 + (y.size - n_fft) // shift
    f = np.lib.stride_tricks.sliding_window_view(y, n_fft)[::shift][:n]
    start = (n_fft - length) // 2
    seg = f[:, start:start + length].copy()
    if spec.remove_dc:
        seg -= seg.mean(axis=1, keepdims=True)
    out = np.zeros((n, n_fft))
    out[:, start:start + length] = seg * win
    return out


_MEL_CACHE: dict = {}


def _mel_matrix(spec: FeatureSpec) -> np.ndarray:
    key = (spec.fft_size, spec.n_mels, spec.fmin, spec.fmax, spec.mel_scale, spec.mel_norm)
    if key not in _MEL_CACHE:
        from ..io import _require

        librosa = _require("librosa")
        _MEL_CACHE[key] = np.asarray(librosa.filters.mel(
            sr=SAMPLE_RATE, n_fft=spec.fft_size, n_mels=spec.n_mels, fmin=float(spec.fmin), fmax=float(spec.fmax),
            htk=spec.mel_scale == "htk", norm=spec.mel_norm, dtype=np.float64))
    return _MEL_CACHE[key]


def compute_features(x, spec: FeatureSpec) -> np.ndarray:
    """The features of a 16 kHz waveform (every step in the module doc).

    Parameters
    ----------
    x : array_like of shape (n_samples,)
        Float samples in [-1, 1] at 16 kHz.
    spec : FeatureSpec

    Returns
    -------
    ndarray, float64
        ``(n_samples,)`` for ``waveform``, ``(n_frames, n_mels)`` for ``fbank``.

    Raises
    ------
    VpevalError
        The utterance is shorter than one frame.

    Examples
    --------
    >>> spec = FeatureSpec(n_mels=40, window="hann", log="ln", mean_norm="utterance")
    >>> f = compute_features(0.1 * np.sin(np.arange(16000) * 0.2), spec)
    >>> f.shape, bool(np.allclose(f.mean(axis=0), 0))
    ((98, 40), True)
    """
    x = np.asarray(x, dtype=np.float64) * float(spec.waveform_scale)
    if spec.type == "waveform":
        return x
    p = np.abs(np.fft.rfft(_frames(x, spec), n=spec.fft_size, axis=1))
    if spec.power == 2:
        p = p * p
    e = p @ _mel_matrix(spec).T
    if spec.log != "none":
        e = np.maximum(e + spec.log_offset, spec.log_floor)
        e = {"ln": np.log, "log10": np.log10, "db": lambda v: 10.0 * np.log10(v)}[spec.log](e)
    if spec.mean_norm == "utterance":
        e = e - e.mean(axis=0, keepdims=True)
    if spec.var_norm:
        sd = e.std(axis=0, keepdims=True)
        e = e / np.where(sd > 0, sd, 1.0)
    return e


def model_input(x, spec: FeatureSpec, dtype=np.float32) -> np.ndarray:
    """The features of ``x`` with a batch axis of 1, as the model receives them.

    Returns
    -------
    ndarray of ``dtype``
        ``(1, n_samples)`` (waveform), ``(1, n_frames, n_mels)`` (fbank, ``time_major``) or
        ``(1, n_mels, n_frames)`` (``feature_major``); C-contiguous.
    """
    f = compute_features(x, spec)
    if spec.type == "fbank" and spec.layout == "feature_major":
        f = f.T
    return np.ascontiguousarray(f[None], dtype=dtype)
