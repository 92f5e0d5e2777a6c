"""Your own speaker-embedding model, offline: an ONNX or TorchScript file on disk (``--extractor onnx:PATH``).

vpeval runs the file as it is, on the CPU, one utterance at a time; nothing is downloaded. The model reads the
features a :class:`~vpeval.audio.embed.features.FeatureSpec` describes, stated in a JSON *sidecar*: the model
path with ``.json`` added (``ecapa.onnx`` -> ``ecapa.onnx.json``), or a file given with ``--features``
(``features=`` here). ``docs/extractors.md`` has the format and worked examples (SpeechBrain- and Kaldi-style
fbanks, raw-waveform models). The contract:

* **Input**: one tensor, batch 1, the time axis of any length: ``(1, n_samples)`` for a waveform model,
  ``(1, n_frames, n_mels)`` or ``(1, n_mels, n_frames)`` (``layout``) for a fbank model, float32 (an ONNX
  input declared float64 gets float64). An ONNX model is checked when it is opened: exactly one input, of the
  right rank, batch axis 1 or symbolic, feature axis ``n_mels`` or symbolic, time axis symbolic (export it with
  a dynamic time axis, e.g. ``dynamic_axes={"feats": {1: "time"}}``).
* **Output**: the model's first output (or the one named by the sidecar's ``"output"``), of shape ``(1, D)`` or
  ``(D,)``; its dimension D is read from the model (or from one probe run on 2 s of seeded noise when the
  model leaves it symbolic, and always for TorchScript). The vector is kept as the model returns it (no
  length normalisation: the back-ends normalise as they need).
* **Determinism**: onnxruntime runs with one intra-op and one inter-op thread, torch with one thread during
  each call, so a file embeds the same on any worker of a Dask cluster (the extractor travels as its path and
  options; each worker opens the file once).
* **Provenance**: the file's sha256 is computed once when it is opened (read in 1 MiB chunks; a file that
  changes meanwhile is refused), and :meth:`~vpeval.audio.embed.Extractor.info` records the file's name (not its
  folder), size and sha256, the features (the sidecar's options, defaults filled in) and the output read; the
  embedding files keep this record (:mod:`vpeval.io.extractor_info`). A worker that opens a file with another
  sha256 than the one the run started with refuses to embed. The hash covers the model file only: an ONNX model
  whose weights sit in external data files is identified by its graph file alone.

Errors name the model file: :class:`ModelFileError` for a missing or unreadable file, a missing sidecar, an
input of the wrong rank or size, and an output that is not ``(1, D)``/``(D,)`` or holds NaN or infinite values.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ...errors import VpevalError
from .base import Extractor, ExtractorUnavailableError
from .features import FeatureSpec, model_input, read_feature_spec

__all__ = ["ModelFileError", "OnnxExtractor", "TorchScriptExtractor", "sidecar_path", "features_record", "ONNX_HINT"]

ONNX_HINT = ("ONNX speaker models need onnxruntime: pip install -e '.[onnx]' (or pip install 'onnxruntime>=1.17')")
TORCH_HINT = ("TorchScript speaker models need torch: pip install torch==2.13.0 --index-url "
              "https://download.pytorch.org/whl/cpu")


class ModelFileError(VpevalError):
    """A speaker-model file cannot be used: missing, unreadable, wrong input or output; the message starts with
    the file's path.

    Attributes
    ----------
    path : str
        The model file.
    """

    def __init__(self, path, problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


def sidecar_path(model_path) -> Path:
    """The feature sidecar of a model file: its path with ``.json`` appended.

    Examples
    --------
    >>> sidecar_path("models/ecapa.onnx").as_posix()
    'models/ecapa.onnx.json'
    """
    p = Path(model_path)
    return p.with_name(p.name + ".json")


def _probe_signal() -> np.ndarray:
    """2 s of seeded noise (amplitude 0.1): the input of the probe run that reads an output's dimension."""
    return 0.1 * np.random.default_rng(0).standard_normal(2 * 16000)


class _ModelFileExtractor(Extractor):
    """Shared part: path and sidecar handling, output checks, pickling as configuration."""

    kind = "model"

    def __init__(self, path, features=None, name: str | None = None, output: str | None = None):
        self.path = Path(path)
        if not self.path.is_file():
            raise ModelFileError(self.path, "no such model file" if not self.path.exists() else "not a file")
        extra = {}
        if features is None:
            side = sidecar_path(self.path)
            if not side.is_file():
                raise ModelFileError(
                    self.path, f"no feature sidecar {side} (and no --features FILE): state the input features "
                    "the model reads (sample rate 16 kHz; \"type\": \"fbank\" with n_mels, frame_length_ms, "
                    "frame_shift_ms, window, log, mean_norm, or \"type\": \"waveform\"); docs/extractors.md")
            self.features, extra = read_feature_spec(side)
        elif isinstance(features, FeatureSpec):
            self.features = features
        elif isinstance(features, dict):
            d = dict(features)
            extra = {k: d.pop(k) for k in ("name", "output") if k in d}
            self.features = FeatureSpec.from_dict(d)
        else:  # a path to a sidecar
            self.features, extra = read_feature_spec(features)
        self.output = output if output is not None else extra.get("output")
        if self.output is not None and (not isinstance(self.output, str) or not self.output):
            raise ModelFileError(self.path, f"output must be the name of a model output, got {self.output!r}")
        nm = name if name is not None else extra.get("name")
        if nm is not None and (not isinstance(nm, str) or not nm.strip()):
            raise ModelFileError(self.path, f"name must be a non-empty string, got {nm!r}")
        self.name = nm if nm is not None else f"{self.kind}-{self.path.stem}"
        self._key, self.model_file = _hashed(self.path)
        self._open()
        if _file_key(self.path) != self._key:  # the session must be of the bytes hashed
            raise ModelFileError(self.path, "the file changed while vpeval was opening it; try again")

    def __reduce__(self):
        # travels as its configuration (path, options, the sha256 it must have), never with a session: the
        # receiving process opens the file itself, once (module-level cache)
        # (an absolute path: a worker's working folder is not ours)
        return (_rebuild, (type(self), os.path.abspath(self.path), self.features.to_dict(), self.name, self.output,
                           self.model_file["sha256"]))

    @property
    def min_samples(self) -> int:
        """One whole analysis frame of the model's features: the window length (``kaldi`` framing, or
        centred ``stft``), ``n_fft`` (``stft`` not centred); a waveform model states no frame: 400 (25 ms)."""
        f = self.features
        if f.type != "fbank":
            return 400
        return f.fft_size if f.framing == "stft" and not f.center else f.frame_length

    @property
    def min_frame(self) -> str:
        f = self.features
        if f.type != "fbank":
            return "one 25 ms analysis frame (a waveform model states no frame of its own: vpeval's default)"
        if f.framing == "stft" and not f.center:
            return f"one {f.fft_size}-sample FFT frame of its features (stft framing, not centred)"
        return f"one {f.frame_length_ms:g} ms window of its features"

    def _identity(self) -> dict:
        return {"kind": self.kind, "model_file": dict(self.model_file), "features": features_record(self.features),
                "output": self._output_name()}

    def _output_name(self) -> str | None:
        return None

    def _open(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _run(self, inp: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _checked_output(self, out) -> np.ndarray:
        out = np.asarray(out)
        if out.ndim == 2 and out.shape[0] == 1:
            out = out[0]
        if out.ndim != 1 or out.size == 0:
            raise ModelFileError(self.path, f"the model's output has shape {tuple(np.asarray(out).shape)}; "
                                 "expected (1, D) or (D,) for one utterance")
        if not np.issubdtype(out.dtype, np.floating) and not np.issubdtype(out.dtype, np.integer):
            raise ModelFileError(self.path, f"the model's output is of type {out.dtype}, not numbers")
        out = out.astype(np.float64)
        if not np.isfinite(out).all():
            raise ModelFileError(self.path, f"the model returned NaN or infinite values "
                                 f"({int((~np.isfinite(out)).sum())} of {out.size})")
        return out

    def _embed(self, x: np.ndarray) -> np.ndarray:
        try:
            inp = model_input(x, self.features, self._dtype)
        except VpevalError as exc:
            raise VpevalError(f"{self.name}: {exc}") from None
        out = self._checked_output(self._call(inp))
        if out.size != self.dim:
            raise ModelFileError(self.path, f"the model returned {out.size} dimensions here and {self.dim} for "
                                 "the probe input; the output dimension must not depend on the input")
        return out

    def _call(self, inp: np.ndarray, what: str = "an input") -> np.ndarray:
        """Run the model; the runtime's own errors, whatever their class, become ModelFileError."""
        try:
            return self._run(inp)
        except ModelFileError:
            raise
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [""])[0]
            raise ModelFileError(self.path, f"the model failed on {what} of shape {inp.shape} "
                                 f"({self.features.type} features): {type(exc).__name__}: {first[:300]}") from None

    def _probe_dim(self) -> int:
        inp = model_input(_probe_signal(), self.features, self._dtype)
        return int(self._checked_output(self._call(inp, "a probe input")).size)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(path={str(self.path)!r}, name={self.name!r}, dim={self.dim})"


def features_record(spec: FeatureSpec) -> dict:
    """Every option of ``spec`` as the extractor record keeps it: numbers of the float options as floats and
    ``n_fft`` as an integer, so that a sidecar's ``25`` and ``25.0`` give the same record.

    Examples
    --------
    >>> features_record(FeatureSpec(frame_length_ms=25, n_fft=512.0))["frame_length_ms"]
    25.0
    """
    from dataclasses import fields

    out = spec.to_dict()
    for f in fields(spec):
        v = out[f.name]
        if f.type in ("float", float) and not isinstance(v, bool):
            out[f.name] = float(v)
        elif f.name == "n_fft" and v is not None:
            out[f.name] = int(v)
    return out


def _rebuild(cls, path, features, name, output, sha256=None):
    ext = cls(path, features=FeatureSpec(**features), name=name, output=output)
    if sha256 is not None and ext.model_file["sha256"] != sha256:
        raise ModelFileError(path, f"has sha256 {ext.model_file['sha256'][:16]}... here, not {sha256[:16]}... as "
                             "where the run started: every process (every Dask worker) must see the same model file")
    return ext


_sessions: dict = {}
_hashes: dict = {}


def _file_key(path: Path) -> tuple:
    st = os.stat(path)
    return (os.path.abspath(path), st.st_mtime_ns, st.st_size)


def _hashed(path: Path) -> tuple:
    """(the file's key, its record ``{"name", "size", "sha256"}``), hashed once per process and file version."""
    from ...io.extractor_info import file_record

    try:
        key = _file_key(path)
        if key not in _hashes:
            rec = file_record(path)
            if _file_key(path) != key:
                raise OSError("it changed while it was being read")
            _hashes[key] = rec
    except OSError as exc:
        raise ModelFileError(path, f"cannot read the model file ({exc.strerror or exc})") from None
    return key, _hashes[key]


class OnnxExtractor(_ModelFileExtractor):
    """Speaker embeddings from an ONNX model file, run with onnxruntime on the CPU (contract in the module doc).

    Parameters
    ----------
    path : str or Path
        The ``.onnx`` file.
    features : FeatureSpec, dict, str or Path, optional
        The input features, or a JSON sidecar's path; default: the sidecar ``PATH.json``.
    name : str, optional
        Name stored in embedding files; default: the sidecar's ``"name"``, else ``onnx-<file stem>``.
    output : str, optional
        Which output to read; default: the sidecar's ``"output"``, else the first.

    Raises
    ------
    ExtractorUnavailableError
        onnxruntime is not installed.
    ModelFileError
        Missing file or sidecar, a file onnxruntime cannot load, or an input/output that breaks the contract.
    InputFileError
        A sidecar that is not valid JSON or holds bad options.
    """

    kind = "onnx"

    def _open(self) -> None:
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise ExtractorUnavailableError(f"{ONNX_HINT}\n(import failed: {exc})") from None
        key = self._key
        if key not in _sessions:
            so = ort.SessionOptions()
            so.intra_op_num_threads = 1
            so.inter_op_num_threads = 1
            so.log_severity_level = 3
            try:
                _sessions[key] = ort.InferenceSession(str(self.path), sess_options=so,
                                                      providers=["CPUExecutionProvider"])
            except Exception as exc:
                first = (str(exc).strip().splitlines() or [""])[0]
                raise ModelFileError(self.path, f"onnxruntime cannot load it as an ONNX model: {first[:300]}") \
                    from None
        self._session = _sessions[key]
        self._check_input()
        outs = self._session.get_outputs()
        names = [o.name for o in outs]
        if self.output is None:
            self._out = outs[0]
        elif self.output in names:
            self._out = outs[names.index(self.output)]
        else:
            raise ModelFileError(self.path, f"no output named {self.output!r}; the model's outputs: {names}")
        shape = self._out.shape
        if len(shape) not in (1, 2) or (len(shape) == 2 and isinstance(shape[0], int) and shape[0] != 1):
            raise ModelFileError(self.path, f"output {self._out.name!r} has shape {shape}; expected (1, D) or (D,)")
        self.dim = shape[-1] if isinstance(shape[-1], int) and shape[-1] > 0 else self._probe_dim()

    def _check_input(self) -> None:
        ins = self._session.get_inputs()
        if len(ins) != 1:
            raise ModelFileError(self.path, f"the model has {len(ins)} inputs ({', '.join(i.name for i in ins)}); "
                                 "vpeval passes one (the features of one utterance, batch 1)")
        inp = ins[0]
        self._in_name = inp.name
        if inp.type not in ("tensor(float)", "tensor(double)"):
            raise ModelFileError(self.path, f"input {inp.name!r} is of type {inp.type}; expected tensor(float)")
        self._dtype = np.float32 if inp.type == "tensor(float)" else np.float64
        spec = self.features
        if spec.type == "waveform":
            want, axes = 2, "(1, n_samples)"
        else:
            want = 3
            axes = "(1, n_frames, n_mels)" if spec.layout == "time_major" else "(1, n_mels, n_frames)"
        shape = inp.shape
        if shape is None or len(shape) != want:
            rank = "unknown" if shape is None else len(shape)
            raise ModelFileError(
                self.path, f"input {inp.name!r} has rank {rank} (shape {shape}); {spec.type} features need rank "
                f"{want}, {axes}; check the feature sidecar (\"type\", \"layout\")")
        if isinstance(shape[0], int) and shape[0] != 1:
            raise ModelFileError(self.path, f"input {inp.name!r} has a fixed batch size {shape[0]}; vpeval passes "
                                 "one utterance at a time (batch 1 or a symbolic batch axis)")
        if spec.type == "fbank":
            t_ax, f_ax = (1, 2) if spec.layout == "time_major" else (2, 1)
            if isinstance(shape[f_ax], int) and shape[f_ax] != spec.n_mels:
                raise ModelFileError(self.path, f"input {inp.name!r} has {shape[f_ax]} features on axis {f_ax} "
                                     f"(shape {shape}); the sidecar states n_mels={spec.n_mels}, layout "
                                     f"{spec.layout!r}")
        else:
            t_ax = 1
        if isinstance(shape[t_ax], int):
            raise ModelFileError(self.path, f"input {inp.name!r} has a fixed time axis of {shape[t_ax]} (shape "
                                 f"{shape}); utterances vary in length: export the model with a dynamic time axis")

    def _run(self, inp: np.ndarray) -> np.ndarray:
        return self._session.run([self._out.name], {self._in_name: inp})[0]

    def _output_name(self) -> str:
        return self._out.name


_modules: dict = {}


class TorchScriptExtractor(_ModelFileExtractor):
    """Speaker embeddings from a TorchScript file (``torch.jit.save``), run on the CPU; contract in the module doc.

    The module is loaded with ``torch.jit.load(path, map_location="cpu")``, put in eval mode and called under
    ``torch.inference_mode()`` with one float32 tensor; a tuple or list output gives its first element.
    Parameters and errors as :class:`OnnxExtractor` (torch instead of onnxruntime); TorchScript files carry no
    input shapes, so the input is checked by one probe run when the file is opened. torch deprecates TorchScript
    (torch 2.13 warns so, pointing to ``torch.export``); its warning on loading is silenced here, and ONNX is the format
    to prefer.
    """

    kind = "torchscript"

    def _open(self) -> None:
        try:
            import torch
        except ImportError as exc:
            raise ExtractorUnavailableError(f"{TORCH_HINT}\n(import failed: {exc})") from None
        if self.output is not None:
            raise ModelFileError(self.path, "TorchScript outputs have no names; the first output is read "
                                 "(remove \"output\" from the sidecar)")
        self._torch = torch
        self._dtype = np.float32
        key = self._key
        if key not in _modules:
            try:
                import warnings

                with warnings.catch_warnings():  # torch 2.13 warns that TorchScript is deprecated
                    warnings.simplefilter("ignore", DeprecationWarning)
                    m = torch.jit.load(str(self.path), map_location="cpu")
            except Exception as exc:
                first = (str(exc).strip().splitlines() or [""])[0]
                raise ModelFileError(self.path, f"torch cannot load it as a TorchScript module: {first[:300]}") \
                    from None
            m.eval()
            _modules[key] = m
        self._module = _modules[key]
        self.dim = self._probe_dim()

    def _run(self, inp: np.ndarray) -> np.ndarray:
        torch = self._torch
        old = torch.get_num_threads()
        if old != 1:
            torch.set_num_threads(1)
        try:
            with torch.inference_mode():
                out = self._module(torch.from_numpy(inp))
        finally:
            if old != 1:
                torch.set_num_threads(old)
        if isinstance(out, (tuple, list)):
            if not out:
                raise ModelFileError(self.path, "the model returned an empty tuple")
            out = out[0]
        if not isinstance(out, torch.Tensor):
            raise ModelFileError(self.path, f"the model returned a {type(out).__name__}, not a tensor")
        return out.detach().to(torch.float64).numpy()
