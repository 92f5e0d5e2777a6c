"""Reading a system's content and prosody channels (``channels/`` folder) for ``vpeval audit`` and ``vpeval demo``.

Layout of ``<system folder>/channels/`` (every file optional; a channel is used when its evaluation files for both
conditions are there)::

    text_original            Kaldi text: transcripts of the original evaluation utterances
    text_anonymized          ... of the anonymized ones (or text_<system name>)
    prosody_original.csv     utterance_id + one column per statistic (vpeval.audio.prosody.FEATURES), matched
                             by name (any order; vpeval.io.csv_table), one row per utterance
    prosody_anonymized.csv   (or prosody_<system name>.csv)
    train/text_original      transcripts of the training speakers' utterances (train/text_anonymized optional)
    train/prosody_original.csv, train/prosody_anonymized.csv (or _<system name>)

Transcripts may come from any recogniser (``vpeval transcribe``, a Kaldi decode's ``text``, ``--hyp`` files);
prosody tables from ``vpeval.audio.prosody.prosody_features``.  When the system folder has no ``channels/``, the
parent folder's is used if it holds this system's files (``text_<system name>``): the bundled example keeps one
``channels/`` folder for its three systems.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import InputFileError, VpevalError

__all__ = ["channels_folder", "load_channels"]


def channels_folder(folder: Path, name: str) -> Path | None:
    """The channels folder of a system (module doc), or None."""
    own = folder / "channels"
    if own.is_dir():
        return own
    parent = folder.parent / "channels"
    if any((parent / f"{kind}_{name}{ext}").is_file() for kind, ext in (("text", ""), ("prosody", ".csv"))):
        return parent
    return None


def _pick(d: Path, kind: str, cond: str, name: str, ext: str) -> Path | None:
    for c in ((cond,) if cond == "original" else ("anonymized", name)):
        p = d / f"{kind}_{c}{ext}"
        if p.is_file():
            return p
    return None


def _read_table(path: Path) -> dict[str, np.ndarray]:
    """A prosody table: utterance id -> its statistics in the order of ``vpeval.audio.prosody.FEATURES``.

    Columns are matched by name (:func:`vpeval.io.csv_table.read_named_csv`): the header must be ``utterance_id``
    and every statistic of ``FEATURES``, once each, in any order, and nothing else; every value a finite number.
    """
    from ..audio.prosody import FEATURES
    from ..io.csv_table import read_named_csv
    from ..io.numbers import NumberSyntaxError, parse_number

    out = {}
    for line, row in read_named_csv(path, ("utterance_id",) + FEATURES, key="utterance_id")[1]:
        values = np.empty(len(FEATURES))
        for j, name in enumerate(FEATURES):
            try:
                values[j] = parse_number(row[name])
            except NumberSyntaxError as exc:
                raise InputFileError(path, line, f"{name} of utterance {row['utterance_id']!r}: {exc}") from None
        out[row["utterance_id"]] = values
    if not out:
        raise InputFileError(path, None, "no rows below the header; one row per utterance is expected")
    return out


def load_channels(folder: Path, name: str, voice: dict, speaker_of) -> tuple[dict, dict, list[Path]]:
    """The content and prosody feature sets of one system, ready for the audit.

    Parameters
    ----------
    folder : Path
        The system folder.
    name : str
        The system's name.
    voice : dict extractor -> EmbeddingSet
        The system's voice embeddings: the channels must cover exactly their utterances.
    speaker_of : dict
        Utterance id -> speaker id (evaluation and training utterances).

    Returns
    -------
    (dict, dict, list of Path)
        Evaluation and training sets per channel extractor (``content-tfidf``, ``prosody-stats``), and the files
        read (for the report's inputs). Empty when there is no channels folder.

    Raises
    ------
    InputFileError, VpevalError
        Unreadable files, utterances that differ from the voice embeddings', training transcripts missing.
    """
    from ..audio.asr.transcripts import read_transcripts
    from ..pipeline.channels import content_sets, feature_sets

    d = channels_folder(folder, name)
    if d is None:
        return {}, {}, []
    first = next(iter(voice.values()), None)
    want = {} if first is None else {c: set(first.utterance_id[first.condition == c].tolist())
                                     for c in ("original", "anonymized")}
    sets, train, used = {}, {}, []
    for kind, ext, ext_name in (("text", "", "content-tfidf"), ("prosody", ".csv", "prosody-stats")):
        paths = {c: _pick(d, kind, c, name, ext) for c in ("original", "anonymized")}
        if not all(paths.values()):
            continue
        read = read_transcripts if kind == "text" else _read_table
        ev = {c: read(p) for c, p in paths.items()}
        for c, p in paths.items():
            if want and set(ev[c]) != want[c]:
                extra = sorted(set(ev[c]) ^ want[c])
                raise VpevalError(f"{p}: its utterances differ from the {c} voice embeddings' ({len(extra)} differ, "
                                  f"first {extra[0]!r})")
        tpaths = {c: _pick(d / "train", kind, c, name, ext) for c in ("original", "anonymized")}
        tpaths = {c: p for c, p in tpaths.items() if p is not None}
        if not tpaths:
            raise VpevalError(f"{d}: {kind} files of the evaluation side need train/{kind}_original{ext} (the "
                              "training speakers' own, to fit the text vocabulary or the feature scaling on)")
        tr = {c: read(p) for c, p in tpaths.items()}
        make = content_sets if kind == "text" else feature_sets
        sets[ext_name], train[ext_name] = make(ev, tr, speaker_of, name=ext_name)
        used += list(paths.values()) + list(tpaths.values())
    return sets, train, used
