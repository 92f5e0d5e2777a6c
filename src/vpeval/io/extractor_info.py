"""The extractor record of an embedding file: which extractor (which model file, which features) made its rows.

An embedding file stores the extractor's *name* (``onnx-ecapa``), which two different model files with the same
file name share. The record identifies the extractor itself, so that an auditor can tell afterwards which model
produced the embeddings an audit used. It is a small JSON object (keys in any order):

================== ================================================================================================
key                meaning
================== ================================================================================================
``format``         1 (this layout); a record of a higher format is refused with a message naming the file
``name``           the extractor's name, equal to the file's ``extractor``
``kind``           ``onnx``, ``torchscript``, ``mfcc``, ``resemblyzer``, ``voicefilter-dvector``,
                   ``resemblyzer-adapted``, or ``python`` (an :class:`~vpeval.audio.embed.Extractor` subclass of
                   the user's own)
``dim``            the embedding dimension, equal to the file's number of columns
``model_file``     model files: ``{"name", "size", "sha256"}``: the file's name (never its folder: no machine
                   paths), its size in bytes and the hex sha256 of its bytes
``features``       the input features the model reads (every option of
                   :class:`~vpeval.audio.embed.features.FeatureSpec`, defaults filled in: the sidecar's content
                   as vpeval used it)
``output``         ONNX models: the name of the output read; TorchScript: null
``package``        extractors shipped in a package: ``{"name", "version"}`` of the installed distribution
``settings``       ``mfcc``: the MFCC settings (window, hop, mel bands, ...)
``weights_sha256`` ``resemblyzer-adapted``: hex sha256 of the adapted weights
``class``          ``python``: the extractor's class, ``module.QualName``
================== ================================================================================================

``vpeval embed`` writes it (:meth:`vpeval.audio.embed.Extractor.info`) as the ``extractor_info`` array of the
``.npz`` file: a 0-d text array holding the JSON. It is optional when read (files written before it existed, or by
other tools, have none) and checked strictly when present: JSON without NaN or infinities, an object, known keys
of the right types, ``name`` and ``dim`` equal to the file's; any fault is an
:class:`~vpeval.errors.InputFileError` naming the file.
"""

from __future__ import annotations

import json
import math
import os
import re

from ..errors import InputFileError

__all__ = ["RECORD_FORMAT", "check_extractor_info", "parse_extractor_info", "dump_extractor_info",
           "record_difference", "file_record"]

RECORD_FORMAT = 1
"""The layout of the record this vpeval writes and reads (``"format"``)."""

_HEX64 = re.compile(r"[0-9a-f]{64}")
_KEYS = ("format", "name", "kind", "dim", "model_file", "features", "output", "package", "settings",
         "weights_sha256", "class")


def _refuse_constant(name):
    raise ValueError(f"{name} is not a JSON number")


def parse_extractor_info(text: str, where, *, name: str | None = None, dim: int | None = None) -> dict:
    """Parse and check a record's JSON text (format in the module doc).

    Parameters
    ----------
    text : str
    where : str or Path
        The file it came from, named in errors.
    name, dim : optional
        The file's extractor name and embedding dimension, which the record must state.

    Returns
    -------
    dict
        The record (JSON values only).

    Raises
    ------
    InputFileError
        Not valid JSON (NaN and infinities included), or a record that breaks the format.
    """
    try:
        info = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise InputFileError(where, None, f"extractor_info is not valid JSON ({exc.msg} at line {exc.lineno}, "
                             f"column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:
        raise InputFileError(where, None, f"extractor_info is not valid JSON ({exc})") from None
    return check_extractor_info(info, where, name=name, dim=dim)


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _check_json(x, where, key: str) -> None:
    """Only JSON values (str, finite numbers, bool, None, lists, objects with text keys) below ``x``."""
    if x is None or isinstance(x, (str, bool, int)):
        return
    if isinstance(x, float):
        if not math.isfinite(x):
            raise InputFileError(where, None, f"extractor_info: {key} holds {x}, not a JSON number")
        return
    if isinstance(x, (list, tuple)):
        for v in x:
            _check_json(v, where, key)
        return
    if isinstance(x, dict):
        for k, v in x.items():
            if not isinstance(k, str):
                raise InputFileError(where, None, f"extractor_info: {key} has a key {k!r} that is not text")
            _check_json(v, where, key)
        return
    raise InputFileError(where, None, f"extractor_info: {key} holds a {type(x).__name__}, not a JSON value")


def _text(info: dict, key: str, where, *, ctx: str = "") -> str:
    v = info.get(key)
    if not isinstance(v, str) or not v.strip():
        raise InputFileError(where, None, f"extractor_info: {ctx}{key} must be a non-empty string, got {v!r:.80}")
    return v


def _exact_keys(d, keys: tuple, where, what: str) -> None:
    if not isinstance(d, dict):
        raise InputFileError(where, None, f"extractor_info: {what} must be a JSON object, got {d!r:.80}")
    if set(d) != set(keys):
        raise InputFileError(where, None, f"extractor_info: {what} must have exactly the keys {', '.join(keys)}; "
                             f"got {', '.join(sorted(map(str, d))) or 'none'}")


def check_extractor_info(info, where, *, name: str | None = None, dim: int | None = None) -> dict:
    """Check a record (format in the module doc) and return a copy of it.

    Parameters
    ----------
    info : dict
    where : str or Path
        Named in errors (the file, or ``<EmbeddingSet>``).
    name, dim : optional
        The extractor name and embedding dimension the record must state.

    Returns
    -------
    dict
        A deep copy (JSON round trip), so later changes to ``info`` do not reach it.

    Raises
    ------
    InputFileError
        Not an object, an unknown or missing key, a value of the wrong type, a model file name with a folder in
        it, a sha256 that is not 64 lowercase hex digits, a higher ``format``, or a ``name``/``dim`` that differs
        from the file's.
    """
    if not isinstance(info, dict):
        raise InputFileError(where, None, f"extractor_info must be a JSON object, got {type(info).__name__}")
    fmt = info.get("format")
    if not _is_int(fmt) or fmt < 1:
        raise InputFileError(where, None, f"extractor_info: format must be a positive integer, got {fmt!r:.40}")
    if fmt > RECORD_FORMAT:
        raise InputFileError(where, None, f"extractor_info has format {fmt}, written by a newer vpeval; this one "
                             f"reads format {RECORD_FORMAT} (upgrade vpeval)")
    unknown = sorted(set(map(str, info)) - set(_KEYS))
    if unknown:
        raise InputFileError(where, None, f"extractor_info: unknown key(s) {', '.join(map(repr, unknown))}; "
                             f"known: {', '.join(_KEYS)}")
    _check_json(info, where, "the record")
    rec_name = _text(info, "name", where)
    if name is not None and rec_name != name:
        raise InputFileError(where, None, f"extractor_info names the extractor {rec_name!r}, the file {name!r}")
    _text(info, "kind", where)
    d = info.get("dim")
    if not _is_int(d) or d < 1:
        raise InputFileError(where, None, f"extractor_info: dim must be a positive integer, got {d!r:.40}")
    if dim is not None and d != dim:
        raise InputFileError(where, None, f"extractor_info states dimension {d}, the embeddings have {dim}")
    if "model_file" in info:
        mf = info["model_file"]
        _exact_keys(mf, ("name", "size", "sha256"), where, "model_file")
        fname = _text(mf, "name", where, ctx="model_file.")
        if "/" in fname or "\\" in fname or fname in (".", ".."):
            raise InputFileError(where, None, f"extractor_info: model_file.name must be a file name without a "
                                 f"folder, got {fname!r:.80}")
        if not _is_int(mf["size"]) or mf["size"] < 0:
            raise InputFileError(where, None, f"extractor_info: model_file.size must be a byte count, got "
                                 f"{mf['size']!r:.40}")
        if not isinstance(mf["sha256"], str) or not _HEX64.fullmatch(mf["sha256"]):
            raise InputFileError(where, None, "extractor_info: model_file.sha256 must be 64 lowercase hex digits, "
                                 f"got {mf['sha256']!r:.80}")
    for key in ("features", "settings"):
        if key in info and not isinstance(info[key], dict):
            raise InputFileError(where, None, f"extractor_info: {key} must be a JSON object, got {info[key]!r:.80}")
    if "output" in info and info["output"] is not None:
        _text(info, "output", where)
    if "package" in info:
        _exact_keys(info["package"], ("name", "version"), where, "package")
        _text(info["package"], "name", where, ctx="package.")
        _text(info["package"], "version", where, ctx="package.")
    if "weights_sha256" in info and (not isinstance(info["weights_sha256"], str)
                                     or not _HEX64.fullmatch(info["weights_sha256"])):
        raise InputFileError(where, None, "extractor_info: weights_sha256 must be 64 lowercase hex digits, got "
                             f"{info['weights_sha256']!r:.80}")
    if "class" in info:
        _text(info, "class", where)
    return json.loads(dump_extractor_info(info))


def dump_extractor_info(info: dict) -> str:
    """The record as canonical JSON text: keys sorted, compact, no NaN (equal records give equal text)."""
    return json.dumps(info, sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=False)


def record_difference(a: dict, b: dict, label_a: str = "the rows there") -> str | None:
    """What tells record ``b`` (rows being joined) from ``a`` (``label_a``), in words; None when they are equal.

    Examples
    --------
    >>> a = {"format": 1, "name": "onnx-m", "kind": "onnx", "dim": 4,
    ...      "model_file": {"name": "m.onnx", "size": 10, "sha256": "a" * 64}}
    >>> record_difference(a, {**a, "model_file": {**a["model_file"], "sha256": "b" * 64}})
    'another model file (m.onnx, sha256 bbbbbbbbbbbbbbbb...; the rows there: m.onnx, sha256 aaaaaaaaaaaaaaaa...)'
    >>> record_difference(a, dict(a)) is None
    True
    """
    if dump_extractor_info(a) == dump_extractor_info(b):
        return None
    ma, mb = a.get("model_file"), b.get("model_file")
    if ma != mb:
        def show(m):
            return "no model file" if m is None else f"{m['name']}, sha256 {m['sha256'][:16]}..."

        return f"another model file ({show(mb)}; {label_a}: {show(ma)})"
    keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    return f"another extractor record (differing in {', '.join(keys)})"


def file_record(path) -> dict:
    """``{"name", "size", "sha256"}`` of a file (its name only, no folder), read in 1 MiB chunks.

    Raises
    ------
    OSError
        The file cannot be read, or it changed (size or modification time) while it was being read.
    """
    from .output import sha256_file

    before = os.stat(path)
    digest = sha256_file(path)
    after = os.stat(path)
    if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns):
        raise OSError(f"{path} changed while it was being read")
    return {"name": os.path.basename(os.fspath(path)), "size": int(after.st_size), "sha256": digest}
