"""Speaker-embedding extractors and batch extraction over audio folders.

=========================== ============================== ====== ===============================================
``--extractor``              class                          dim    needs
=========================== ============================== ====== ===============================================
``mfcc``                     :class:`MfccStatsExtractor`      40   nothing beyond librosa (model-free)
``resemblyzer``              ``ResemblyzerExtractor``        256   the ``embed`` extra (torch, resemblyzer)
``voicefilter-dvector``      ``VoiceFilterDvectorExtractor`` 256   the ``voicefilter`` extra (onnxruntime; no torch)
``onnx:PATH``                ``OnnxExtractor``               any   the ``onnx`` extra; your model file + features
``torchscript:PATH``         ``TorchScriptExtractor``        any   torch; your model file + features
=========================== ============================== ====== ===============================================

The model-based modules import torch, onnxruntime or resemblyzer only when an extractor is created. A model file
of your own reads the features a JSON sidecar states (``vpeval.audio.embed.model_file``, docs/extractors.md).
"""

from __future__ import annotations

from .base import Extractor, ExtractorUnavailableError, embed_folder
from .mfcc import MfccStatsExtractor

__all__ = [
    "Extractor",
    "ExtractorUnavailableError",
    "MfccStatsExtractor",
    "EXTRACTORS",
    "MODEL_PREFIXES",
    "get_extractor",
    "embed_folder",
]

EXTRACTORS = ("mfcc", "resemblyzer", "voicefilter-dvector")
"""Names accepted by :func:`get_extractor` (and ``vpeval embed --extractor``), besides ``onnx:PATH`` and
``torchscript:PATH``."""
MODEL_PREFIXES = ("onnx:", "torchscript:")
"""Prefixes of :func:`get_extractor` names that run a model file the user has on disk."""


def get_extractor(name: str, *, features=None) -> Extractor:
    """Create an extractor by its short name, or from a model file (``onnx:PATH``, ``torchscript:PATH``).

    Parameters
    ----------
    name : str
        ``mfcc``, ``resemblyzer``, ``voicefilter-dvector``, ``onnx:PATH`` or ``torchscript:PATH``.
    features : str, Path, dict or FeatureSpec, optional
        Model files only: the input features (a JSON sidecar's path, its content, or a spec); default: the
        sidecar ``PATH.json`` next to the model (:mod:`vpeval.audio.embed.model_file`).

    Raises
    ------
    VpevalError
        Unknown name, or ``features`` given for a built-in extractor.
    ExtractorUnavailableError
        The extractor's optional dependencies are missing (the message says how to install them).
    ModelFileError
        ``onnx:``/``torchscript:`` with a missing file or sidecar, or a model that breaks the input/output
        contract (a :class:`~vpeval.errors.VpevalError`, naming the file).

    Examples
    --------
    >>> get_extractor("mfcc")
    MfccStatsExtractor(name='mfcc-stats', dim=40)
    """
    from ...errors import VpevalError

    for prefix in MODEL_PREFIXES:
        if name.startswith(prefix):
            path = name[len(prefix):]
            if not path:
                raise VpevalError(f"{name!r}: give the model file's path after {prefix!r} (e.g. {prefix}ecapa.onnx)")
            from .model_file import OnnxExtractor, TorchScriptExtractor

            cls = OnnxExtractor if prefix == "onnx:" else TorchScriptExtractor
            return cls(path, features=features)
    if features is not None:
        raise VpevalError(f"features are stated for model files (onnx:PATH, torchscript:PATH), not for {name!r}")
    if name == "mfcc":
        return MfccStatsExtractor()
    if name == "resemblyzer":
        from .resemblyzer import ResemblyzerExtractor

        return ResemblyzerExtractor()
    if name == "voicefilter-dvector":
        from .voicefilter import VoiceFilterDvectorExtractor

        return VoiceFilterDvectorExtractor()
    raise VpevalError(f"unknown extractor {name!r}; choose one of {', '.join(EXTRACTORS)}, onnx:PATH or "
                      "torchscript:PATH")
