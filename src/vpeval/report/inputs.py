"""How the page names its inputs: no machine paths (report.json keeps them, with the full hashes), and the
extractor records of the embedding inputs."""

from __future__ import annotations

import os
from pathlib import PurePath

__all__ = ["page_paths", "extractor_lines"]


def page_paths(inputs: list[dict]) -> list[str]:
    """Each input's ``path`` relative to the folder all inputs share (POSIX separators), as the page shows it.

    The common folder itself is a path of the machine the report ran on and is not shown; a single input shows
    its file name. Inputs without a path give ``""``.

    >>> page_paths([{"path": "/home/u/ex/a.npz"}, {"path": "/home/u/ex/train/b.npz"}, {}])
    ['a.npz', 'train/b.npz', '']
    """
    paths = [str(i.get("path", "") or "") for i in inputs]
    given = [os.path.abspath(p) for p in paths if p]
    if not given:
        return paths
    base = os.path.commonpath([os.path.dirname(p) for p in given])
    return [PurePath(os.path.relpath(os.path.abspath(p), base)).as_posix() if p else "" for p in paths]


def extractor_lines(inputs: list[dict]) -> list[str]:
    """One plain-text line per distinct extractor record of the inputs (``extractor_info``, recorded by ``vpeval
    embed``: :mod:`vpeval.io.extractor_info`), naming the inputs that carry it; ``[]`` when none does.

    A model file is shown by its name, size and the first 16 hex digits of its sha256 (report.json keeps the whole
    record); a packaged extractor by its package and version; ``mfcc`` by its settings.

    >>> rec = {"format": 1, "name": "onnx-enc", "kind": "onnx", "dim": 16, "output": "emb",
    ...        "model_file": {"name": "enc.onnx", "size": 2744, "sha256": "683e75c09b154887" + "0" * 48},
    ...        "features": {"type": "fbank", "n_mels": 40}}
    >>> extractor_lines([{"name": "A/embeddings_enc", "extractor_info": rec}, {"name": "A/metadata"},
    ...                  {"name": "A/train/embeddings_enc", "extractor_info": rec}])  # doctest: +NORMALIZE_WHITESPACE
    ['onnx-enc (onnx, 16-dim): model file enc.onnx, 2744 bytes, sha256 683e75c09b154887..., output emb,
      fbank features (40 mel bands); in A/embeddings_enc, A/train/embeddings_enc']
    """
    import json

    groups: dict[str, tuple[dict, list[str]]] = {}
    for i in inputs:
        rec = i.get("extractor_info")
        if rec:
            key = json.dumps(rec, sort_keys=True)
            groups.setdefault(key, (rec, []))[1].append(str(i.get("name", "")))
    lines = []
    for rec, names in groups.values():
        parts = []
        mf = rec.get("model_file")
        if mf:
            parts.append(f"model file {mf.get('name')}, {mf.get('size')} bytes, sha256 {str(mf.get('sha256'))[:16]}...")
        if rec.get("output"):
            parts.append(f"output {rec['output']}")
        feats = rec.get("features")
        if feats:
            mels = f" ({feats['n_mels']} mel bands)" if feats.get("type") == "fbank" and "n_mels" in feats else ""
            parts.append(f"{feats.get('type', '?')} features{mels}")
        pkg = rec.get("package")
        if pkg:
            parts.append(f"package {pkg.get('name')} {pkg.get('version')}")
        if rec.get("weights_sha256"):
            parts.append(f"adapted weights sha256 {rec['weights_sha256'][:16]}...")
        if rec.get("settings"):
            parts.append("settings " + ", ".join(f"{k}={v}" for k, v in sorted(rec["settings"].items())))
        if rec.get("class"):
            parts.append(f"class {rec['class']}")
        lines.append(f"{rec.get('name')} ({rec.get('kind')}, {rec.get('dim')}-dim): {', '.join(parts) or 'no details'}"
                     f"; in {', '.join(names)}")
    return lines
