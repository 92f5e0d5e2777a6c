"""Speaker models, 1-to-N score matrices (:class:`OneToN`, :func:`one_to_n`) and the embedding look-ups
shared with the trial lists and the VoicePrivacy lists: condition labels, (utterance, condition) rows, unit
rows and unit group means (scoring rules in the docstring of :mod:`vpeval.pipeline.protocols`)."""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from ...io.embeddings import EmbeddingSet
from ...io.trials import Trials
from ..scoring import score_rows
from .split import Protocol, ProtocolError, make_protocol

__all__ = ["OneToN", "speaker_models", "one_to_n"]

_keys: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()  # (names, side) -> key array in use


def _trial_keys(models: np.ndarray, probes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The trials' enrollment and test keys of ``probes`` (rows) x ``models`` (columns), probe-major, read-only,
    and the same arrays for the same names while some Trials holds them (weakly kept: nothing outlives its use):
    every attacker of a system flattens matrices of the same probes and models, whose keys (megabytes of names
    each) are then held once (an audit held several gigabytes of copies)."""
    names = (models.dtype.str, models.tobytes(), probes.dtype.str, probes.tobytes())
    enroll, test = _keys.get((names, "enroll")), _keys.get((names, "test"))
    if enroll is None or test is None:
        # written into arrays of their own: np.tile returns a view, which the content memos (vpeval.keys,
        # pipeline.attackers) cannot remember, so every attacker's trials hashed the same names again (1 GB
        # in the demo)
        enroll = np.empty(probes.size * models.size, dtype=models.dtype)
        enroll.reshape(probes.size, models.size)[...] = models
        test = np.repeat(probes, models.size)
        for side, a in (("enroll", enroll), ("test", test)):
            a.flags.writeable = False
            _keys[(names, side)] = a
    return enroll, test


def _labels(es: EmbeddingSet, original: str, anonymized: str, needed) -> dict[str, str]:
    if original == anonymized:
        raise ProtocolError(f"original and anonymized condition labels are both {str(original)!r}")
    lab = {"o": original, "a": anonymized}
    present = set(np.unique(es.condition).tolist())
    other = sorted(present - {original, anonymized})
    if other:
        raise ProtocolError(
            f"{es.extractor}: unknown condition label {str(other[0])!r} (expected {str(original)!r} or "
            f"{str(anonymized)!r}; rename with original=/anonymized= or select the rows first)"
        )
    for letter in sorted(set(needed)):
        if lab[letter] not in present:
            raise ProtocolError(
                f"{es.extractor}: no embeddings with condition {str(lab[letter])!r}, "
                "needed by the requested trials"
            )
    return lab


def _row_index(es: EmbeddingSet, utts: np.ndarray, label: str, role: str) -> np.ndarray:
    """Row numbers of (utterance, label) for each utterance in ``utts``; error naming the missing ones."""
    rows = np.flatnonzero(es.condition == label)
    ids = es.utterance_id[rows]
    order = np.argsort(ids)
    ids, rows = ids[order], rows[order]
    found = np.zeros(utts.size, dtype=bool)
    pos = np.zeros(utts.size, dtype=np.intp)
    if ids.size:
        pos = np.minimum(np.searchsorted(ids, utts), ids.size - 1)
        found = ids[pos] == utts
    if not found.all():
        missing = utts[~found]
        raise ProtocolError(
            f"{es.extractor}: {missing.size} {role} utterance(s) have no embedding in condition {str(label)!r} "
            f"(first: {str(missing[0])!r})"
        )
    return rows[pos]


def _unit_rows(x: np.ndarray, names: np.ndarray, what: str) -> np.ndarray:
    # Scale each row by its largest magnitude first, so that norms of huge or tiny vectors neither
    # overflow nor underflow.
    peak = np.abs(x).max(axis=1)
    bad = np.flatnonzero(~(peak > 0))
    if bad.size:
        raise ProtocolError(f"{what} {str(names[bad[0]])!r} has a zero vector; cosine scoring is undefined")
    y = x / peak[:, None]
    return y / np.sqrt(np.einsum("ij,ij->i", y, y))[:, None]


def _group_means(es, utts, groups, label, role, what) -> tuple[np.ndarray, np.ndarray]:
    """Unit mean of unit embeddings per group; ``utts``/``groups`` sorted by (group, utterance)."""
    rows = _row_index(es, utts, label, role)
    unit = _unit_rows(es.embeddings[rows], utts, f"{label} embedding of utterance")
    starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
    sums = np.add.reduceat(unit, starts, axis=0)
    names = groups[starts]
    return names, _unit_rows(sums / np.diff(np.r_[starts, groups.size])[:, None], names, what)


def speaker_models(
    es: EmbeddingSet, protocol: Protocol, condition: str, *, use: str = "enroll"
) -> tuple[np.ndarray, np.ndarray]:
    """Unit-norm speaker models: normalised mean of normalised embeddings.

    Parameters
    ----------
    es : EmbeddingSet
    protocol : Protocol
    condition : str
        The condition *label* (e.g. ``"anonymized"``) whose embeddings are averaged.
    use : {"enroll", "probe"}
        ``"enroll"``: models of all enrolled speakers from their enrollment utterances (shape (M, d));
        ``"probe"``: profiles of the evaluation speakers from their probe utterances (shape (K, d)).

    Returns
    -------
    speakers : ndarray of str, shape (M,) or (K,), sorted
    models : ndarray of float64, shape (M, d) or (K, d), unit rows

    Raises
    ------
    ProtocolError
        A needed (utterance, condition) embedding is missing, a zero embedding, or a model whose mean is the
        zero vector.
    """
    if use not in ("enroll", "probe"):
        raise ProtocolError(f"use must be 'enroll' or 'probe', got {str(use)!r}")
    mask = protocol.is_enroll if use == "enroll" else ~protocol.is_enroll
    utt, spk = protocol.utterance_id[mask], protocol.speaker_id[mask]
    order = np.lexsort((utt, spk))
    what = f"{condition} {'model' if use == 'enroll' else 'probe profile'} of speaker"
    return _group_means(es, utt[order], spk[order], condition, use, what)


@dataclass(frozen=True)
class OneToN:
    """Every probe scored against every enrolled speaker (1-to-N linkage / identification).

    Attributes
    ----------
    scores : ndarray of float64, shape (n_probes, N)
        Cosine score of probe ``i`` against the model of ``enrolled_speaker[j]``.
    true_index : ndarray of int64, shape (n_probes,)
        Column of each probe's true speaker.
    probe_id, probe_speaker : ndarray of str, shape (n_probes,)
        Probe utterance ids (sorted by speaker, then utterance) and their true speaker.
    enrolled_speaker : ndarray of str, shape (N,)
        Model speakers, sorted: evaluation speakers and cohort (distractors).
    enroll_condition, probe_condition : str
        Condition labels of the models and of the probes.
    extractor : str
    """

    scores: np.ndarray
    true_index: np.ndarray
    probe_id: np.ndarray
    probe_speaker: np.ndarray
    enrolled_speaker: np.ndarray
    enroll_condition: str
    probe_condition: str
    extractor: str = "unknown"

    @property
    def n_probes(self) -> int:
        return self.scores.shape[0]

    @property
    def n_enrolled(self) -> int:
        return self.scores.shape[1]

    @property
    def target_scores(self) -> np.ndarray:
        """Score of each probe against its true speaker, shape (n_probes,)."""
        return self.scores[np.arange(self.n_probes), self.true_index]

    def select(self, mask) -> "OneToN":
        """The probes (rows) where the boolean ``mask`` (shape (n_probes,)) is true; all columns kept."""
        m = np.asarray(mask, dtype=bool)
        if m.shape != (self.n_probes,):
            raise ProtocolError(f"mask has shape {m.shape}, expected ({self.n_probes},)")
        return OneToN(
            self.scores[m], self.true_index[m], self.probe_id[m], self.probe_speaker[m], self.enrolled_speaker,
            self.enroll_condition, self.probe_condition, self.extractor,
        )

    def to_frame(self):
        """Long table ``enroll_spk, trial_spk, trial_id, score``, probe-major (n_probes * N rows)."""
        import pandas as pd

        n, m = self.scores.shape
        return pd.DataFrame(
            {
                "enroll_spk": np.tile(self.enrolled_speaker, n),
                "trial_spk": np.repeat(self.probe_speaker, m),
                "trial_id": np.repeat(self.probe_id, m),
                "score": self.scores.reshape(-1),
            }
        )

    def to_trials(self, *, columns=None, source: str = "<one-to-n>", meta=None) -> Trials:
        """Flatten to verification trials (target iff column is the probe's true speaker).

        ``columns`` optionally restricts the models to these speakers (all of ``true`` speakers must be in).
        """
        cols = np.arange(self.n_enrolled) if columns is None else self._columns(columns)
        sub = self.scores[:, cols]
        is_tar = cols[None, :] == self.true_index[:, None]
        enroll, test = _trial_keys(self.enrolled_speaker[cols], self.probe_id)
        return Trials(
            sub.reshape(-1),
            is_tar.reshape(-1),
            enroll,
            test,
            source,
            dict(meta or {}),
        )

    def _columns(self, speakers) -> np.ndarray:
        speakers = np.asarray(speakers, dtype=str)
        pos = np.searchsorted(self.enrolled_speaker, speakers)
        pos = np.minimum(pos, self.n_enrolled - 1)
        if not (self.enrolled_speaker[pos] == speakers).all():
            raise ProtocolError("requested model speakers are not all enrolled")
        if not np.isin(self.true_index, pos).all():
            raise ProtocolError("the model subset must contain every probe's true speaker")
        return np.sort(pos)



def one_to_n(
    es: EmbeddingSet,
    protocol: Protocol | None = None,
    *,
    enroll: str = "o",
    probe: str = "a",
    original: str = "original",
    anonymized: str = "anonymized",
    backend=None,
    client=None,
) -> OneToN:
    """Score every probe against every enrolled speaker.

    Parameters
    ----------
    es : EmbeddingSet
    protocol : Protocol, optional
        Default :func:`make_protocol` of ``es``.
    enroll, probe : {"o", "a"}
        Conditions of the models and of the probes (``"o"``/``"a"`` for ``oa``: linkage attack).
    original, anonymized : str
        Condition labels in ``es`` that ``o`` and ``a`` stand for.
    backend : vpeval.backends.Backend, optional
        A fitted back-end that scores (speaker model, probe) pairs; default cosine similarity. Its input is
        the same unit-length speaker model (normalised mean of normalised enrollment embeddings) and unit
        probe embedding that cosine scoring uses.
    client : distributed.Client, optional
        Compute the score matrix on this Dask cluster, one task per block of probe rows
        (:func:`vpeval.pipeline.cluster.score_matrix`), and gather it; identical to the scores without a client.

    Returns
    -------
    OneToN
        ``scores`` of shape (P, M), float64 (cosine scores, or the back-end's).

    Raises
    ------
    ProtocolError
        Unknown condition letters or labels, missing embeddings, zero vectors, no probes.
    """
    for name, v in (("enroll", enroll), ("probe", probe)):
        if v not in ("o", "a"):
            raise ProtocolError(f"{name} condition must be 'o' or 'a', got {str(v)!r}")
    _check_backend(backend)
    lab = _labels(es, original, anonymized, (enroll, probe))
    protocol = make_protocol(es) if protocol is None else protocol
    probe_id, probe_spk = protocol.probes()
    if probe_id.size == 0:
        raise ProtocolError("protocol has no probe utterances (every speaker is cohort)")
    speakers, models = speaker_models(es, protocol, lab[enroll])
    rows = _row_index(es, probe_id, lab[probe], "probe")
    probes = _unit_rows(es.embeddings[rows], probe_id, f"{lab[probe]} embedding of utterance")
    if client is None:
        scores = score_rows(probes, models, backend)
    else:
        from ..cluster import score_matrix

        scores = client.compute(score_matrix(probes, models, backend=backend, client=client)).result()
    true_index = np.searchsorted(speakers, probe_spk).astype(np.int64)
    return OneToN(scores, true_index, probe_id, probe_spk, speakers, lab[enroll], lab[probe], es.extractor)


def _check_backend(backend) -> None:
    from ...backends import Backend

    if backend is not None and not isinstance(backend, Backend):
        raise ProtocolError(f"backend must be a fitted vpeval.backends.Backend or None (cosine), got {backend!r}; "
                            "e.g. vpeval.get_backend('plda').fit(embeddings, speaker_ids)")

