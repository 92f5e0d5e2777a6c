"""Reading a system folder of ``vpeval audit`` (evaluation and attacker training embeddings)."""

from __future__ import annotations

from pathlib import Path

from ..errors import VpevalError

__all__ = ["load_system", "load_train"]


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
