"""Reading a system folder of ``vpeval audit`` (evaluation and attacker training embeddings)."""

from __future__ import annotations

from pathlib import Path

from ..errors import VpevalError

__all__ = ["load_system", "load_train", "input_details"]


def load_system(folder: Path, *, profiles: bool = True) -> dict:
    """A system folder's ``embeddings_<extractor>.npz`` files: extractor -> EmbeddingSet. Rows are ``original``,
    ``anonymized`` or, with ``profiles`` (evaluation folders), ``anonymized@KEY``: a further run of the system
    under profile key KEY (Beyond-EER's cross-profile trials)."""
    from ..io.embeddings import check_conditions, read_embeddings

    sets = {}
    for f in sorted(folder.glob("embeddings_*.npz")):
        es = read_embeddings(f)
        check_conditions(es, f, profiles=profiles)
        if es.extractor in sets:
            raise VpevalError(f"{f}: a second embedding file of extractor {es.extractor!r} in {folder}")
        sets[es.extractor] = es
    return sets


def load_train(folder: Path, evaluation: dict) -> dict:
    """Attacker training embeddings from ``folder/train/embeddings_*.npz`` (empty dict when absent)."""
    tdir = folder / "train"
    if tdir.exists() and not tdir.is_dir():
        raise VpevalError(f"{tdir}: expected a folder of attacker training embeddings (train/embeddings_*.npz), "
                          "found a file")
    if not tdir.is_dir():
        return {}
    train = load_system(tdir, profiles=False)
    if not train:
        raise VpevalError(f"{tdir}: a train/ folder needs embeddings_<extractor>.npz files (training speakers, "
                          "original and anonymized rows)")
    extra = sorted(set(train) - set(evaluation))
    if extra:
        raise VpevalError(f"{tdir}: training embeddings of extractor {extra[0]!r} have no evaluation embeddings in "
                          f"{folder}")
    return train


def input_details(path: Path) -> dict:
    """What an embeddings file records beyond its rows, for the report's inputs: ``"input_rates_hz": {"8000": rows,
    ...}``, the sampling rates of its audio (``vpeval embed``; 0 = not known), and ``"extractor_info"``, its extractor
    record (model file name, size, sha256, features: vpeval.io.extractor_info); each only when the file has it."""
    import numpy as np

    from ..io.embeddings import read_extractor_info

    if path.suffix != ".npz":
        return {}
    out = {} if (rec := read_extractor_info(path)) is None else {"extractor_info": rec}
    with np.load(path, allow_pickle=False) as z:
        if "input_rate_hz" not in z:
            return out
        rates, counts = np.unique(z["input_rate_hz"], return_counts=True)
    return {"input_rates_hz": {str(int(r)): int(n) for r, n in zip(rates, counts)}, **out}
