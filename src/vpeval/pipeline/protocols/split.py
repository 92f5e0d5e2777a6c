"""The enrollment/probe split of an embedding set (:class:`Protocol`, :func:`make_protocol`), the error of
the protocols (:class:`ProtocolError`), and the check of a metadata table against the embeddings
(:func:`check_metadata`). The split rules are in the docstring of :mod:`vpeval.pipeline.protocols`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import VpevalError
from ...io.embeddings import EmbeddingSet

__all__ = ["ProtocolError", "Protocol", "make_protocol", "check_metadata"]


class ProtocolError(VpevalError):
    """Embeddings, split or options do not allow building the requested trials."""


@dataclass(frozen=True)
class Protocol:
    """Which utterances enroll each speaker and which are probes.

    Rows are stored sorted by utterance id whatever order they are given in.

    Parameters
    ----------
    utterance_id, speaker_id : array-like of str, shape (n,)
        Each utterance id once.
    is_enroll : array-like of bool, shape (n,)
        True for enrollment utterances, False for probes.

    Raises
    ------
    ProtocolError
        Mismatched shapes, a repeated utterance id, empty ids, or a speaker with probes and no enrollment
        utterance.
    """

    utterance_id: np.ndarray
    speaker_id: np.ndarray
    is_enroll: np.ndarray

    def __post_init__(self):
        utt = np.asarray(self.utterance_id, dtype=str)
        spk = np.asarray(self.speaker_id, dtype=str)
        enr = np.asarray(self.is_enroll, dtype=bool)
        if utt.ndim != 1 or spk.shape != utt.shape or enr.shape != utt.shape:
            raise ProtocolError(
                f"protocol: utterance_id {utt.shape}, speaker_id {spk.shape} and is_enroll {enr.shape} "
                "must be 1-D of equal length"
            )
        if utt.size == 0:
            raise ProtocolError("protocol: no utterances")
        for name, arr in (("utterance_id", utt), ("speaker_id", spk)):
            empty = np.flatnonzero(np.char.str_len(arr) == 0)
            if empty.size:
                raise ProtocolError(f"protocol: empty {name} (utterance #{int(empty[0])})")
        order = np.argsort(utt, kind="stable")
        utt, spk, enr = utt[order], spk[order], enr[order]
        dup = np.flatnonzero(utt[1:] == utt[:-1])
        if dup.size:
            raise ProtocolError(f"protocol: utterance {str(utt[dup[0]])!r} is listed more than once")
        enrolled = set(spk[enr].tolist())
        orphans = sorted(set(spk[~enr].tolist()) - enrolled)
        if orphans:
            n = int(np.sum(spk[~enr] == orphans[0]))
            raise ProtocolError(
                f"protocol: speaker {str(orphans[0])!r} has {n} probe utterance(s) but no enrollment utterance "
                f"({len(orphans)} such speaker(s)); every probed speaker needs an enrollment model"
            )
        object.__setattr__(self, "utterance_id", utt)
        object.__setattr__(self, "speaker_id", spk)
        object.__setattr__(self, "is_enroll", enr)

    @property
    def speakers(self) -> np.ndarray:
        """All enrolled speakers (evaluation and cohort), sorted; shape (M,)."""
        return np.unique(self.speaker_id[self.is_enroll])

    @property
    def evaluation_speakers(self) -> np.ndarray:
        """Speakers with at least one probe, sorted; shape (K,)."""
        return np.unique(self.speaker_id[~self.is_enroll])

    @property
    def cohort_speakers(self) -> np.ndarray:
        """Enrolled speakers without probes, sorted; shape (K_C,)."""
        return np.setdiff1d(self.speakers, self.evaluation_speakers)

    def enroll_utterances(self, speaker: str) -> tuple[str, ...]:
        """Sorted enrollment utterance ids of ``speaker``."""
        return tuple(self.utterance_id[self.is_enroll & (self.speaker_id == speaker)].tolist())

    def probe_utterances(self, speaker: str) -> tuple[str, ...]:
        """Sorted probe utterance ids of ``speaker`` (empty for a cohort speaker)."""
        return tuple(self.utterance_id[~self.is_enroll & (self.speaker_id == speaker)].tolist())

    def probes(self) -> tuple[np.ndarray, np.ndarray]:
        """All probes as ``(utterance_id, speaker_id)``, sorted by (speaker id, utterance id)."""
        utt, spk = self.utterance_id[~self.is_enroll], self.speaker_id[~self.is_enroll]
        order = np.lexsort((utt, spk))
        return utt[order], spk[order]

    def speaker_of(self, utterance_ids) -> np.ndarray:
        """Speaker of each utterance id (array-like of str); error naming the first unknown id."""
        ids = np.asarray(utterance_ids, dtype=str)
        pos = np.minimum(np.searchsorted(self.utterance_id, ids), self.utterance_id.size - 1)
        known = self.utterance_id[pos] == ids
        if not np.all(known):
            raise ProtocolError(f"utterance {str(ids[~known].reshape(-1)[0])!r} is not in the protocol")
        return self.speaker_id[pos]

    def to_frame(self):
        """The split as a :class:`pandas.DataFrame` with columns ``utterance_id, speaker_id, role``."""
        import pandas as pd

        return pd.DataFrame(
            {
                "utterance_id": self.utterance_id,
                "speaker_id": self.speaker_id,
                "role": np.where(self.is_enroll, "enroll", "probe"),
            }
        )


def _utterance_speakers(es: EmbeddingSet) -> tuple[np.ndarray, np.ndarray]:
    """Distinct utterance ids (sorted) and their speaker; error if conditions disagree on the speaker."""
    pairs = np.unique(np.stack([es.utterance_id, es.speaker_id], axis=1), axis=0)
    utt, spk = pairs[:, 0], pairs[:, 1]
    clash = np.flatnonzero(utt[1:] == utt[:-1])
    if clash.size:
        u = utt[clash[0]]
        raise ProtocolError(
            f"{es.extractor}: utterance {str(u)!r} has speaker {str(spk[clash[0]])!r} in one condition and "
            f"{str(spk[clash[0] + 1])!r} in another"
        )
    return utt, spk


def make_protocol(es: EmbeddingSet, enroll_utterances=None) -> Protocol:
    """Split the utterances of ``es`` into enrollment and probe utterances.

    Parameters
    ----------
    es : EmbeddingSet
        Only the (utterance id, speaker id) pairs are used, over all conditions.
    enroll_utterances : iterable of str, optional
        Explicit enrollment utterances; every other utterance becomes a probe. Default: the per-speaker
        split of the package docstring (sorted ids, first ``ceil(n/2)`` enroll; single-utterance speakers
        are cohort).

    Returns
    -------
    Protocol

    Raises
    ------
    ProtocolError
        An utterance with two different speakers; in ``enroll_utterances`` an unknown or repeated id, or a
        speaker left with probes and no enrollment utterance.
    """
    utt, spk = _utterance_speakers(es)
    if enroll_utterances is None:
        is_enroll = np.zeros(utt.size, dtype=bool)
        order = np.lexsort((utt, spk))
        s_sorted = spk[order]
        starts = np.flatnonzero(np.r_[True, s_sorted[1:] != s_sorted[:-1]])
        ends = np.r_[starts[1:], s_sorted.size]
        for a, b in zip(starts, ends):
            n = b - a
            k = n if n == 1 else (n + 1) // 2
            is_enroll[order[a : a + k]] = True
        return Protocol(utt, spk, is_enroll)
    listed = np.asarray([str(u) for u in enroll_utterances], dtype=str)
    if listed.size == 0:
        raise ProtocolError("enroll_utterances is empty; list at least one enrollment utterance per speaker")
    uniq, counts = np.unique(listed, return_counts=True)
    if (counts > 1).any():
        raise ProtocolError(f"enroll_utterances: utterance {str(uniq[counts > 1][0])!r} is listed more than once")
    unknown = np.setdiff1d(uniq, utt)
    if unknown.size:
        raise ProtocolError(
            f"enroll_utterances: {unknown.size} utterance(s) not in the embeddings of {str(es.extractor)!r} "
            f"(first: {str(unknown[0])!r})"
        )
    return Protocol(utt, spk, np.isin(utt, uniq))


def check_metadata(es: EmbeddingSet, metadata, *, source: str = "<metadata>") -> None:
    """Check that a metadata table agrees with the embeddings.

    Parameters
    ----------
    es : EmbeddingSet
    metadata : pandas.DataFrame
        Needs columns ``utterance_id`` and ``speaker_id``; if it has ``condition``, rows are matched on
        (utterance id, condition), else on utterance id. Line numbers in messages assume row ``i`` is file
        line ``i + 2`` (one header line). Metadata rows without an embedding are allowed (a metadata file
        may describe more utterances than one embedding file holds).
    source : str
        File name used in messages.

    Raises
    ------
    vpeval.errors.InputFileError
        A missing column, a repeated key, an embedding utterance absent from the metadata, or a speaker id
        that differs between metadata and embeddings.
    """
    from ...errors import InputFileError

    need = ["utterance_id", "speaker_id"]
    missing = [c for c in need if c not in metadata.columns]
    if missing:
        raise InputFileError(source, None, f"missing column(s) {missing}; expected at least {need}")
    keys = ["utterance_id"] + (["condition"] if "condition" in metadata.columns else [])
    md = metadata[keys + ["speaker_id"]].astype(str)
    dup = md.duplicated(subset=keys, keep="first")
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise InputFileError(source, i + 2, f"repeated {'/'.join(keys)} {tuple(md.iloc[i][keys])}")
    lookup = {tuple(r[:-1]): (r[-1], i) for i, r in enumerate(md.itertuples(index=False, name=None))}
    for j in np.lexsort((es.condition, es.utterance_id)):
        key = (es.utterance_id[j],) + ((es.condition[j],) if len(keys) == 2 else ())
        if key not in lookup:
            where = f" (condition {str(key[1])!r})" if len(key) == 2 else ""
            raise InputFileError(
                source, None,
                f"utterance {str(key[0])!r}{where} is in the embeddings of {str(es.extractor)!r} "
                "but not in the metadata",
            )
        spk, i = lookup[key]
        if spk != es.speaker_id[j]:
            raise InputFileError(
                source, i + 2,
                f"utterance {str(key[0])!r} has speaker {str(spk)!r} here but "
                f"{str(es.speaker_id[j])!r} in the embeddings",
            )

