r"""Trial protocols built from speaker embeddings.

This package turns an :class:`~vpeval.io.embeddings.EmbeddingSet` holding the original and the anonymized
version of the same utterances into scored verification trials (:class:`~vpeval.io.trials.Trials`) and into
1-to-N score matrices (:class:`OneToN`) for linkage/identification metrics. The full specification, with the
reasoning behind each choice, is ``docs/protocols.md``; this docstring is its exact summary.

The code is split by what it does: :mod:`.split` (the enrollment/probe split, the metadata check),
:mod:`.models` (speaker models and 1-to-N score matrices), :mod:`.trials` (the trial types and
:func:`build_trials`); the block-wise matrix products are :mod:`vpeval.pipeline.scoring`. Every public name
is importable from this package.

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
  are scored by the back-end instead (speaker-level enrollment; the VoicePrivacy scripts also enroll at
  speaker level but average the *raw* embeddings, the ``"vpc"`` rule of :mod:`vpeval.pipeline.vpc`).

Trial types (``TRIAL_TYPES``)
-----------------------------
``oo``/``oa``/``aa`` are the VoicePrivacy conditions (ignorant attacker ``oa``, lazy-informed ``aa``); the
four-letter types and ``cross-profile`` name the trial types of "Beyond EER" (the multi-dimensional evaluation
of speaker de-identification, Seo et al., arXiv:2508.14012 / 2609.18673, Sec. 3.2 and Table 2): the first two
letters name the target pair's conditions, the last two the non-target pair's (``docs/protocols.md``).

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
oaoo           o / a   targets of ``oa``, non-targets of ``oo``           P / P(M'-1)            50 %
oaaa           o / a   targets of ``oa``, non-targets of ``aa``           P / P(M'-1)            50 %
aaaa           a / a   identical pairs and scores to ``aa`` (consistency) P / P(M'-1)            0 %
aa-centroid    a / a   model vs probe centroid, see below                 K / K(M'-1)            0 %
cross-profile  a / a   two profile keys: :func:`cross_key_trials`         P / P K (two keys)     0 %
=============  ======  =================================================  =====================  ===========

* ``oaoa`` / ``aaaa`` repeat ``oa`` / ``aa`` under the names of the multi-dimensional evaluation, because a
  report reads them against a different target value (``aa`` is a privacy attack whose ideal is 50 %; ``aaaa``
  asks whether the anonymizer keeps one consistent pseudo-speaker per speaker, ideal 0 %). Their scores are
  computed once.
* ``oaoo`` and ``oaaa`` (attack resistance, :func:`compose_trials`): the target trials are those of ``oa``
  (Alice's original model against pseudo-Alice; the VoicePrivacy convention, original enrollment and
  anonymized probe, is the enrollment side), the non-target trials those of ``oo`` (Alice against Bob) or
  ``aa`` (pseudo-Alice against pseudo-Bob) on the same pairs. Ideal EER 50 %; read two-sided on the
  interpolated step EER, which can pass 50 % (the ROCCH-EER cannot): ``oaoo`` above 50 % means a pseudo-voice
  sits further from its source than another real speaker does; ``oaaa`` above 50 % means pseudo-voices of
  different speakers sit closer to each other than to their sources (identity-space compression).
* ``aa-centroid`` (pseudo-identity distinctness within one anonymization run; vpeval's own, called
  ``cross-profile`` before 0.4): the enrollment side is the anonymized model of each of
  the ``M'`` speakers (from enrollment utterances); the test side is the anonymized *centroid* of each
  evaluation speaker ``t``: the normalised mean of its normalised anonymized probe embeddings. The test key
  is the speaker id ``t``. Target iff the two speakers are the same. EER 0 % means every speaker's
  pseudo-identity is consistent with itself and distinct from every other speaker's.
* ``cross-profile`` and ``cross-profile-same-source`` (the paper's cross-profile: pseudo-identity
  distinctness across profile keys) need two or more runs of the anonymizer with different keys and are built
  by :func:`cross_key_trials`, not by :func:`build_trials`.

Cohort models come from a single utterance and are noisier than multi-utterance models; with
``cohort_impostors=False`` verification non-targets use evaluation speakers' models only (the 1-to-N matrix
always has all ``M`` columns).

No probe utterance (in either condition) is ever part of an enrollment model or of a model it is scored
against, because enrollment and probe utterance ids are disjoint by construction. Trials are ordered
probe-major (probes sorted by (speaker id, utterance id), models by speaker id), every type in the same order.

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
>>> trials = build_trials(es, ["oo", "aa-centroid"], protocol=p)
>>> len(trials["oo"]), int(trials["oo"].is_target.sum())
(6, 2)
>>> float(trials["oo"].scores[0]) == float(np.dot([1, 0], [1, .1]) / np.hypot(1, .1))
True
"""

from __future__ import annotations

from ..scoring import SCORE_BLOCK_ROWS, score_block, score_block_rows, score_rows
from .models import OneToN, one_to_n, speaker_models
from .split import Protocol, ProtocolError, check_metadata, make_protocol
from .trials import TRIAL_TYPES, TrialType, build_trials, compose_trials, cross_key_trials

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
    "compose_trials",
    "cross_key_trials",
    "check_metadata",
]

