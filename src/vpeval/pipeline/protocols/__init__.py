r"""Trial protocols built from speaker embeddings.

This module turns an :class:`~vpeval.io.embeddings.EmbeddingSet` holding the original and the anonymized
version of the same utterances into scored verification trials (:class:`~vpeval.io.trials.Trials`) and into
1-to-N score matrices (:class:`OneToN`) for linkage/identification metrics. The full specification, with the
reasoning behind each choice, is ``docs/protocols.md``; this docstring is its exact summary.

Conditions
----------
Every embedding row has a condition label. The letter ``o`` stands for the label of original speech
(``"original"`` by default) and ``a`` for anonymized speech (``"anonymized"``); both labels can be renamed with
the ``original=`` / ``anonymized=`` arguments. Any other label in the set is an error (select the rows you
want first): nothing is dropped silently. The original and the anonymized version of an utterance share the
utterance id.

Split (:class:`Protocol`)
-------------------------
The split is a property of the *utterance ids*, shared by both conditions, so an anonymized probe's original
twin is never in an enrollment model either.

* Default (:func:`make_protocol` without ``enroll_utterances``): for each speaker, take the distinct utterance
  ids found in any condition and sort them as Python strings (code-point order). A speaker with ``n >= 2``
  utterances enrolls the first ``ceil(n / 2)`` of them and uses the remaining ``floor(n / 2)`` as probes
  (10 -> 5 + 5, 3 -> 2 + 1, 2 -> 1 + 1). A speaker with a single utterance is a *cohort* speaker: it is
  enrolled (model from that utterance) and never probed.
* Explicit: ``enroll_utterances`` lists the enrollment utterances; every other utterance is a probe. A
  speaker whose utterances are all listed is a cohort speaker; a speaker with probes but no listed
  enrollment utterance is an error (its probes would have no true model).

The split depends only on the set of (utterance id, speaker id) pairs, never on row order.

Notation: ``S`` the evaluation speakers (those with >= 1 probe), ``K = |S|``; ``C`` the cohort speakers,
``K_C = |C|``; ``M = K + K_C`` the enrolled speakers; ``m_s`` the number of probe utterances of speaker ``s``
and ``P = sum_s m_s`` the number of probes.

Scoring
-------
* Every embedding is L2-normalised (a zero vector is an error).
* Enrollment model of speaker ``s`` in condition ``c``: the mean of the normalised condition-``c`` embeddings
  of its enrollment utterances (summed in sorted utterance-id order), normalised again.
* Probe: one utterance, normalised.
* Score: cosine similarity = dot product of the unit vectors, one float64 matrix product
  ``probes @ models.T``; higher means "more likely the same speaker". With ``backend=`` (a fitted
  :class:`vpeval.backends.Backend`, e.g. PLDA trained on other speakers) the same unit model and unit probe
  are scored by the back-end instead (speaker-level enrollment, as in the VoicePrivacy evaluation).

Trial types (``TRIAL_TYPES``)
-----------------------------
``oo``/``oa``/``aa`` are the VoicePrivacy conditions (ignorant attacker ``oa``, lazy-informed ``aa``); the
four-letter types and ``cross-profile`` name the trial types of the multi-dimensional evaluation of speaker
de-identification (Seo et al., arXiv:2508.14012). The pair definitions are vpeval's own (see
``docs/protocols.md`` for the reasoning).

``xy`` means enrollment in condition ``x``, probes in condition ``y``. With ``cohort_impostors=True`` (the
default) the models are those of all ``M`` enrolled speakers; with ``False`` only the ``K`` evaluation
speakers (write ``M' = M`` or ``M' = K`` accordingly).

=============  ======  =================================================  =====================  ===========
type           enr/pr  pairs                                              targets / non-targets  target EER
=============  ======  =================================================  =====================  ===========
oo             o / o   every probe vs every model; target iff same spk    P / P(M'-1)            reference
oa             o / a   same pairs as oo (ignorant attacker, VPC)          P / P(M'-1)            50 %
aa             a / a   same pairs as oo (lazy-informed attacker, VPC)     P / P(M'-1)            50 %
oaoa           o / a   identical pairs and scores to ``oa`` (attack)      P / P(M'-1)            50 %
oaoo           o / o   identical pairs and scores to ``oo`` (reference)   P / P(M'-1)            reference
oaaa           a / a   different-speaker pairs only, see below            P(M'-1) / P(M'-1)      50 %
aaaa           a / a   identical pairs and scores to ``aa`` (consistency) P / P(M'-1)            0 %
cross-profile  a / a   model vs probe-profile, see below                  K / K(M'-1)            0 %
=============  ======  =================================================  =====================  ===========

* ``oaoa`` / ``oaoo`` / ``aaaa`` repeat ``oa`` / ``oo`` / ``aa`` under the names of the multi-dimensional
  evaluation, because a report reads them against a different target value (``aa`` is a privacy attack whose
  ideal is 50 %; ``aaaa`` asks whether the anonymizer keeps one consistent pseudo-speaker per speaker, ideal
  0 %). Their scores are computed once.
* ``oaaa`` (distinguishability) compares the *different-speaker* pairs ``(model of s, probe of t)``,
  ``s != t``, of ``aa`` with the very same pairs in ``oo``. There are no same-speaker pairs in it. Label
  ``target`` marks the original-condition reference pair, ``nontarget`` the anonymized pair; keys carry the
  condition as a suffix (``1688@o``, ``1688-142285-0005@a``) so that every (enroll, test) key is unique. With
  the usual rule "accept as target iff score >= t", the EER is 50 % when anonymized different-speaker scores
  are distributed like the original ones (the anonymizer keeps speakers as distinguishable as they were);
  well above 50 % means anonymized voices of different speakers are *more* similar to each other than the
  originals were (identity-space compression); below 50 % means they are spread further apart. Use an EER
  that can exceed 50 % (the step-curve EER): the ROCCH-EER never does and would hide compression.
* ``cross-profile`` (pseudo-identity distinctness): the enrollment side is the anonymized model of each of
  the ``M'`` speakers (from enrollment utterances); the test side is the anonymized *profile* of each
  evaluation speaker ``t``: the normalised mean of its normalised anonymized probe embeddings. The test key
  is the speaker id ``t``. Target iff the two speakers are the same. EER 0 % means every speaker's
  pseudo-identity is consistent with itself and distinct from every other speaker's.

Cohort models come from a single utterance and are noisier than multi-utterance models; with
``cohort_impostors=False`` verification non-targets use evaluation speakers' models only (the 1-to-N matrix
always has all ``M`` columns).

No probe utterance (in either condition) is ever part of an enrollment model or of a model it is scored
against, because enrollment and probe utterance ids are disjoint by construction. Trials are ordered
probe-major (probes sorted by (speaker id, utterance id), models by speaker id); ``oaaa`` lists all
reference trials first, then the anonymized ones in the same order.

Examples
--------
>>> import numpy as np
>>> from vpeval.io.embeddings import EmbeddingSet
>>> utt = ["a-1", "a-2", "b-1", "b-2", "c-1"] * 2
>>> spk = ["A", "A", "B", "B", "C"] * 2
>>> cond = ["original"] * 5 + ["anonymized"] * 5
>>> emb = np.array([[1, 0], [1, .1], [0, 1], [.1, 1], [1, 1]] * 2, dtype=float)
>>> es = EmbeddingSet(emb, utt, spk, cond, "toy")
>>> p = make_protocol(es)
>>> p.evaluation_speakers.tolist(), p.cohort_speakers.tolist()
(['A', 'B'], ['C'])
>>> trials = build_trials(es, ["oo", "cross-profile"], protocol=p)
>>> len(trials["oo"]), int(trials["oo"].is_target.sum())
(6, 2)
>>> float(trials["oo"].scores[0]) == float(np.dot([1, 0], [1, .1]) / np.hypot(1, .1))
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import VpevalError
from ...io.embeddings import EmbeddingSet
from ...io.trials import Trials

__all__ = [
    "ProtocolError",
    "TrialType",
    "TRIAL_TYPES",
    "Protocol",
    "make_protocol",
    "OneToN",
    "speaker_models",
    "one_to_n",
    "build_trials",
    "check_metadata",
]


class ProtocolError(VpevalError):
    """Embeddings, split or options do not allow building the requested trials."""


@dataclass(frozen=True)
class TrialType:
    """Definition of one trial type (see the module docstring for the exact pairs).

    Attributes
    ----------
    name : str
    enroll, test : {"o", "a"}
        Condition of the enrollment and of the test side.
    target_eer : float or None
        The EER an ideal anonymizer reaches (0.5 for attacks, 0.0 for consistency and distinctness);
        ``None`` for the original-speech references, where a low EER only shows the attacker is capable.
    description : str
    """

    name: str
    enroll: str
    test: str
    target_eer: float | None
    description: str


TRIAL_TYPES: dict[str, TrialType] = {
    t.name: t
    for t in (
        TrialType("oo", "o", "o", None, "original enrollment vs original probes: the attacker's capability"),
        TrialType("oa", "o", "a", 0.5, "original enrollment vs anonymized probes: ignorant attacker (VPC)"),
        TrialType("aa", "a", "a", 0.5, "anonymized enrollment vs anonymized probes: lazy-informed attacker (VPC)"),
        TrialType("oaoa", "o", "a", 0.5, "attack: original enrollment vs anonymized probes (pairs of oa)"),
        TrialType("oaoo", "o", "o", None, "reference identifiability: original vs original (pairs of oo)"),
        TrialType(
            "oaaa", "a", "a", 0.5,
            "distinguishability: anonymized different-speaker pairs (nontarget) vs the same pairs in original "
            "speech (target); > 50 % = identity-space compression",
        ),
        TrialType(
            "aaaa", "a", "a", 0.0,
            "pseudo-identity consistency: anonymized enrollment vs anonymized probes (pairs of aa)",
        ),
        TrialType(
            "cross-profile", "a", "a", 0.0,
            "pseudo-identity distinctness: anonymized model of each speaker vs anonymized probe profile "
            "of each evaluation speaker",
        ),
    )
}

_SAME_AS = {"oaoa": "oa", "oaoo": "oo", "aaaa": "aa"}


# --------------------------------------------------------------------------------------------- split


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
        split of the module docstring (sorted ids, first ``ceil(n/2)`` enroll; single-utterance speakers
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


# --------------------------------------------------------------------------------------------- scoring


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
        m = cols.size
        return Trials(
            sub.reshape(-1),
            is_tar.reshape(-1),
            np.tile(self.enrolled_speaker[cols], self.n_probes),
            np.repeat(self.probe_id, m),
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


#: Probe rows scored together by one matrix product in :func:`score_rows` (and per task on a cluster), so a
#: score matrix is computed with the same products whether in one process or on a Dask cluster.
SCORE_BLOCK_ROWS = 4096


def score_block_rows(n_models: int) -> int:
    """Probe rows per block of a 1-to-N score matrix with ``n_models`` columns: 4096 rows, fewer when the
    block would exceed 64 MiB. Used by :func:`score_rows` and the cluster path alike."""
    return max(1, min(SCORE_BLOCK_ROWS, (64 * 2**20) // (8 * max(1, int(n_models)))))


def score_block(probes: np.ndarray, models: np.ndarray, backend=None) -> np.ndarray:
    """Scores of a block of unit probe rows against every model: (n_probes, n_models) float64.

    BLAS runs single-threaded here: how OpenBLAS splits a product over threads changes the last bit of some
    scores (133 of the 5,550 cosine scores of the bundled example's resemblyzer oo matrix differ between one and
    two threads), so this gives the same matrix on any machine and on any Dask worker.
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        return probes @ models.T if backend is None else backend.score(models, probes).T


def score_rows(probes: np.ndarray, models: np.ndarray, backend=None) -> np.ndarray:
    """Score every probe row against every model row, in blocks of :func:`score_block_rows` probe rows.

    Each block is one matrix product (or one ``backend.score`` call). Computing the same blocks on a Dask
    cluster (:func:`vpeval.pipeline.cluster.score_matrix`) gives the same numbers bit for bit, whatever the
    BLAS does with a matrix product's shape, because both paths perform the identical products.
    """
    step = score_block_rows(models.shape[0])
    if probes.shape[0] <= step:
        return score_block(probes, models, backend)
    out = np.empty((probes.shape[0], models.shape[0]))
    for s in range(0, probes.shape[0], step):
        out[s : s + step] = score_block(probes[s : s + step], models, backend)
    return out


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


def build_trials(
    es: EmbeddingSet,
    types=None,
    *,
    protocol: Protocol | None = None,
    cohort_impostors: bool = True,
    original: str = "original",
    anonymized: str = "anonymized",
    backend=None,
    client=None,
) -> dict[str, Trials]:
    """Build scored trials of the requested types (definitions in the module docstring).

    Parameters
    ----------
    es : EmbeddingSet
    types : iterable of str, optional
        Names from :data:`TRIAL_TYPES`; default all of them, in that order.
    protocol : Protocol, optional
        Default :func:`make_protocol` of ``es``.
    cohort_impostors : bool
        Whether cohort speakers' models are impostor models (``M' = M``) or left out (``M' = K``).
    original, anonymized : str
        Condition labels that ``o`` and ``a`` stand for.
    backend : vpeval.backends.Backend, optional
        A fitted back-end that scores every pair; default cosine similarity (see :func:`one_to_n`).
    client : distributed.Client, optional
        Compute the 1-to-N score matrices on this Dask cluster (see :func:`one_to_n`); same trials.

    Returns
    -------
    dict of str to Trials
        One entry per requested type, in the requested order. ``source`` is the type name; ``meta`` holds
        ``type``, ``enroll_condition``, ``test_condition`` (labels), ``extractor``, ``target_eer``,
        ``cohort_impostors``, ``n_speakers`` (K), ``n_cohort`` (K_C), ``n_probes`` (P), and
        ``target_label`` (what ``is_target`` means for this type).

    Raises
    ------
    ProtocolError
        Unknown type, a repeated type, missing conditions or embeddings, a type that needs more speakers
        than the split has (``oaaa`` and every non-target need ``M' >= 2``).
    """
    _check_backend(backend)
    names = list(TRIAL_TYPES) if types is None else [str(t) for t in types]
    if not names:
        raise ProtocolError("no trial types requested")
    for t in names:
        if t not in TRIAL_TYPES:
            raise ProtocolError(f"unknown trial type {str(t)!r}; expected one of {', '.join(TRIAL_TYPES)}")
    if len(set(names)) != len(names):
        raise ProtocolError("a trial type is requested more than once")
    needed = [c for t in names for c in (TRIAL_TYPES[t].enroll, TRIAL_TYPES[t].test)]
    if "oaaa" in names:
        needed.append("o")
    lab = _labels(es, original, anonymized, needed)
    protocol = make_protocol(es) if protocol is None else protocol
    if protocol.evaluation_speakers.size == 0:
        raise ProtocolError("protocol has no probe utterances (every speaker is cohort)")
    cols = None if cohort_impostors else protocol.evaluation_speakers
    n_models = protocol.speakers.size if cohort_impostors else protocol.evaluation_speakers.size
    if n_models < 2:
        raise ProtocolError(
            f"only {n_models} model speaker(s): every trial type needs at least two (non-target trials are "
            "pairs of different speakers)" + ("" if cohort_impostors else "; cohort impostors are switched off"))

    cache: dict[tuple[str, str], OneToN] = {}

    def matrix(e, p):
        if (e, p) not in cache:
            cache[(e, p)] = one_to_n(es, protocol, enroll=e, probe=p, original=original, anonymized=anonymized,
                                     backend=backend, client=client)
        return cache[(e, p)]

    base_meta = dict(
        extractor=es.extractor,
        backend="cosine" if backend is None else backend.name,
        cohort_impostors=bool(cohort_impostors),
        n_speakers=int(protocol.evaluation_speakers.size),
        n_cohort=int(protocol.cohort_speakers.size),
        n_probes=int((~protocol.is_enroll).sum()),
    )
    out: dict[str, Trials] = {}
    for name in names:
        tt = TRIAL_TYPES[name]
        meta = dict(
            base_meta, type=name, enroll_condition=lab[tt.enroll], test_condition=lab[tt.test],
            target_eer=tt.target_eer,
        )
        if name == "oaaa":
            meta["reference_condition"] = lab["o"]
            meta["target_label"] = "target = original-speech reference pair, nontarget = anonymized pair; " \
                "all pairs are different-speaker pairs"
            ref = matrix("o", "o").to_trials(columns=cols)
            ano = matrix("a", "a").to_trials(columns=cols)
            keep = ~ref.is_target
            ref, ano = ref.select(keep), ano.select(keep)
            out[name] = Trials(
                np.concatenate([ref.scores, ano.scores]),
                np.r_[np.ones(len(ref), bool), np.zeros(len(ano), bool)],
                np.concatenate([np.char.add(ref.enroll, "@o"), np.char.add(ano.enroll, "@a")]),
                np.concatenate([np.char.add(ref.test, "@o"), np.char.add(ano.test, "@a")]),
                name, meta,
            )
        elif name == "cross-profile":
            meta["target_label"] = "target = same speaker (model vs own probe profile)"
            out[name] = _cross_profile(es, protocol, lab["a"], cols, meta, backend)
        else:
            meta["target_label"] = "target = probe spoken by the model's speaker"
            if name in _SAME_AS:
                meta["same_pairs_as"] = _SAME_AS[name]
            out[name] = matrix(tt.enroll, tt.test).to_trials(columns=cols, source=name, meta=meta)
    return out


def _check_backend(backend) -> None:
    from ...backends import Backend

    if backend is not None and not isinstance(backend, Backend):
        raise ProtocolError(f"backend must be a fitted vpeval.backends.Backend or None (cosine), got {backend!r}; "
                            "e.g. vpeval.get_backend('plda').fit(embeddings, speaker_ids)")


def _cross_profile(es, protocol, label, cols, meta, backend=None) -> Trials:
    speakers, models = speaker_models(es, protocol, label, use="enroll")
    profile_spk, profiles = speaker_models(es, protocol, label, use="probe")
    if cols is not None:
        keep = np.isin(speakers, cols)
        speakers, models = speakers[keep], models[keep]
    scores = profiles @ models.T if backend is None else backend.score(models, profiles).T
    is_tar = profile_spk[:, None] == speakers[None, :]
    k, m = scores.shape
    return Trials(
        scores.reshape(-1), is_tar.reshape(-1), np.tile(speakers, k), np.repeat(profile_spk, m),
        "cross-profile", meta,
    )


# --------------------------------------------------------------------------------------------- metadata


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

