"""Analyses of an :class:`~vpeval.io.embeddings.EmbeddingSet` beyond the verification trials: embedding structure
(CCA, Procrustes), soft-biometric leakage (SBLS) and voice distinctiveness (DeID, G_VD), and the 1-to-N linkage of
a score matrix. Each runs one library call (:mod:`vpeval.metrics.embedding`, :mod:`vpeval.metrics.attributes`,
:mod:`vpeval.metrics.distinctiveness`, :mod:`vpeval.metrics.linkage`); the helpers here only select and align
rows. The report sections that lay them out are in :mod:`vpeval.report.beyond` and :mod:`vpeval.report.linkage`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import VpevalError
from ..io.embeddings import EmbeddingSet
from ..metrics.attributes import AttributeAttacker, soft_biometric_leakage, soft_biometric_leakage_labels
from ..metrics.distinctiveness import VoiceSimilarity, voice_distinctiveness
from ..metrics.embedding import EmbeddingStructure, embedding_structure
from ..metrics.linkage import LinkageAnalysis, linkage_analysis
from .protocols import OneToN, make_protocol

__all__ = [
    "matched_pairs",
    "analyse_embedding_structure",
    "MIN_TRAIN_PER_CLASS",
    "AttributeAudit",
    "utterance_attributes",
    "analyse_attributes",
    "analyse_distinctiveness",
    "analyse_one_to_n",
    "lid_noise_baseline",
]


def matched_pairs(es: EmbeddingSet, *, original: str = "original", anonymized: str = "anonymized",
                  speakers=None):
    """Rows of ``es`` aligned by utterance id: ``(X_original, Y_anonymized, speaker_id, utterance_id)``.

    Utterances are sorted by id. ``speakers`` (optional) keeps only those speakers.

    Raises
    ------
    VpevalError
        An utterance present in only one of the two conditions, or no utterance at all.
    """
    keep = np.ones(len(es), dtype=bool) if speakers is None else np.isin(es.speaker_id, np.asarray(speakers))
    o = np.flatnonzero(keep & (es.condition == original))
    a = np.flatnonzero(keep & (es.condition == anonymized))
    uo, ua = es.utterance_id[o], es.utterance_id[a]
    only = np.setxor1d(uo, ua)
    if only.size:
        raise VpevalError(f"{es.extractor}: utterance {str(only[0])!r} is not in both conditions "
                          f"({original!r} and {anonymized!r}); {only.size} such utterance(s)")
    if o.size == 0:
        raise VpevalError(f"{es.extractor}: no utterance in conditions {original!r}/{anonymized!r}")
    o, a = o[np.argsort(uo)], a[np.argsort(ua)]
    if (es.speaker_id[o] != es.speaker_id[a]).any():
        raise VpevalError(f"{es.extractor}: an utterance has different speakers in the two conditions")
    return es.embeddings[o], es.embeddings[a], es.speaker_id[o], es.utterance_id[o]


def analyse_embedding_structure(es: EmbeddingSet, *, seed: int = 0, n_permutations: int = 99,
                                original: str = "original", anonymized: str = "anonymized",
                                **kwargs) -> EmbeddingStructure:
    """:func:`vpeval.metrics.embedding.embedding_structure` on the matched original/anonymized pairs of ``es``
    (every utterance, cohort included; the split is grouped by speaker). ``kwargs`` go to that function."""
    X, Y, spk, utt = matched_pairs(es, original=original, anonymized=anonymized)
    return embedding_structure(X, Y, spk, ids=utt, seed=seed, n_permutations=n_permutations, **kwargs)


def utterance_attributes(es: EmbeddingSet, metadata, attributes, *, source: str = "<metadata>") -> dict:
    """Attribute labels of every row of ``es`` from a metadata table (pandas DataFrame).

    Rows are matched on ``(utterance_id, condition)`` when the table has a ``condition`` column, else on
    ``utterance_id``. Returns ``{attribute: ndarray of str, shape (len(es),)}``.

    Raises
    ------
    vpeval.errors.InputFileError
        A missing column, a repeated key, an utterance missing from the table, or an empty value (file line
        numbers assume one header line).
    """
    from ..errors import InputFileError

    attributes = list(attributes)
    need = ["utterance_id"] + attributes
    missing = [c for c in need if c not in metadata.columns]
    if missing:
        raise InputFileError(source, None, f"missing column(s) {missing}; columns are {list(metadata.columns)}")
    keys = ["utterance_id"] + (["condition"] if "condition" in metadata.columns else [])
    md = metadata[keys + attributes].astype(str)
    dup = md.duplicated(subset=keys, keep="first").to_numpy()
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        raise InputFileError(source, i + 2, f"repeated {'/'.join(keys)} {tuple(md.iloc[i][keys])}")
    lookup = {tuple(r[: len(keys)]): (i, r[len(keys):]) for i, r in enumerate(md.itertuples(index=False, name=None))}
    out = {a: np.empty(len(es), dtype=object) for a in attributes}
    for j in range(len(es)):
        key = (es.utterance_id[j],) + ((es.condition[j],) if len(keys) == 2 else ())
        if key not in lookup:
            raise InputFileError(source, None, f"utterance {str(key[0])!r} (condition {str(es.condition[j])!r}) "
                                                "is in the embeddings but not in the metadata")
        i, vals = lookup[key]
        for a, v in zip(attributes, vals):
            if v.strip() == "" or v == "nan":
                raise InputFileError(source, i + 2, f"empty value of {a!r} for utterance {str(key[0])!r}")
            out[a][j] = v
    return {a: v.astype(str) for a, v in out.items()}


#: A class of an attribute with fewer training utterances than this is flagged: a logistic attacker fitted on so
#: few examples says little about what an adversary with more data would infer (a vpeval convention).
MIN_TRAIN_PER_CLASS = 10


@dataclass
class AttributeAudit:
    """Soft-biometric leakage of one attacker (embedding extractor) on original and anonymized speech.

    Attributes
    ----------
    results : dict condition -> SBLSResult
        ``"original"`` and ``"anonymized"`` evaluation utterances scored by the same frozen attacker.
    attributes : list of str
    n_train_utterances, n_train_speakers, n_eval_speakers : int
    C : float
        Inverse penalty of the logistic attacker.
    variant : str
        ``"scores"`` (SBLS from the class posteriors) or ``"labels"`` (from the argmax labels only, the
        hard-prediction variant).
    train_class_counts : dict attribute -> (dict class -> int)
        Training utterances of each class of each attribute.
    """

    results: dict
    attributes: list
    n_train_utterances: int
    n_train_speakers: int
    n_eval_speakers: int
    C: float
    variant: str = "scores"
    train_class_counts: dict = None

    def few_training(self, minimum: int | None = None) -> dict[str, dict[str, int]]:
        """Attribute -> {class: count} of the classes with fewer than ``minimum`` (default
        :data:`MIN_TRAIN_PER_CLASS`) training utterances: the attacker's reading of them is unreliable."""
        minimum = MIN_TRAIN_PER_CLASS if minimum is None else minimum
        return {a: {c: n for c, n in by.items() if n < minimum} for a, by in (self.train_class_counts or {}).items()
                if any(n < minimum for n in by.values())}

    def to_dict(self) -> dict:
        return {"results": {k: v.to_dict() for k, v in self.results.items()}, "attributes": self.attributes,
                "n_train_utterances": self.n_train_utterances, "n_train_speakers": self.n_train_speakers,
                "n_eval_speakers": self.n_eval_speakers, "C": self.C, "variant": self.variant,
                "train_class_counts": self.train_class_counts, "few_training": self.few_training(),
                "min_train_per_class": MIN_TRAIN_PER_CLASS,
                "attacker": "logistic regression on original speech of the training speakers, frozen"}


def analyse_attributes(
    es: EmbeddingSet,
    metadata,
    attributes=("sex",),
    *,
    subgroup: str | None = None,
    train_speakers=None,
    eval_speakers=None,
    C: float = 0.1,
    alpha: float = 0.4,
    beta: float = 0.4,
    gamma: float = 0.2,
    omega: float = 0.7,
    variant: str = "scores",
    original: str = "original",
    anonymized: str = "anonymized",
    source: str = "<metadata>",
) -> AttributeAudit:
    """Train one :class:`~vpeval.metrics.attributes.AttributeAttacker` per attribute on *original* speech of
    ``train_speakers`` and apply it, frozen, to the original and the anonymized utterances of
    ``eval_speakers``; SBLS of each condition.

    Defaults: the evaluation speakers are the protocol's evaluation speakers (those with several
    utterances, :func:`vpeval.pipeline.make_protocol`), the training speakers the cohort (single-utterance
    speakers): on the bundled example, 251 train-clean-100 speakers train, 10 test-other speakers evaluate.
    ``subgroup`` names the metadata column of the demographic subgroups (default: the first attribute, a
    degenerate choice flagged in the result). ``variant="labels"`` scores only the attacker's argmax labels
    (:func:`~vpeval.metrics.attributes.soft_biometric_leakage_labels`, the hard-prediction variant);
    ``"scores"`` (default) its class posteriors (:func:`~vpeval.metrics.attributes.soft_biometric_leakage`).
    Both are permutation-aligned.

    Raises
    ------
    VpevalError
        Overlapping training and evaluation speakers, no training speaker, metadata errors, and the errors of
        :func:`~vpeval.metrics.attributes.soft_biometric_leakage`.
    """
    if variant not in ("scores", "labels"):
        raise VpevalError(f"variant must be 'scores' or 'labels', got {variant!r}")
    attributes = list(attributes)
    cols = attributes + ([subgroup] if subgroup and subgroup not in attributes else [])
    labels = utterance_attributes(es, metadata, cols, source=source)
    if train_speakers is None or eval_speakers is None:
        p = make_protocol(es)
        train_speakers = p.cohort_speakers if train_speakers is None else train_speakers
        eval_speakers = p.evaluation_speakers if eval_speakers is None else eval_speakers
    train_speakers = np.unique(np.asarray(train_speakers).astype(str))
    eval_speakers = np.unique(np.asarray(eval_speakers).astype(str))
    if train_speakers.size == 0:
        raise VpevalError("no training speaker for the attribute attacker (give train_speakers)")
    both = np.intersect1d(train_speakers, eval_speakers)
    if both.size:
        raise VpevalError(f"speaker {str(both[0])!r} is both a training and an evaluation speaker of the "
                          "attribute attacker; they must be disjoint")
    tr = np.isin(es.speaker_id, train_speakers) & (es.condition == original)
    attackers = {a: AttributeAttacker(C=C).fit(es.embeddings[tr], labels[a][tr]) for a in attributes}
    results = {}
    for cond in (original, anonymized):
        ev = np.flatnonzero(np.isin(es.speaker_id, eval_speakers) & (es.condition == cond))
        ev = ev[np.argsort(es.utterance_id[ev])]
        if ev.size == 0:
            raise VpevalError(f"{es.extractor}: no evaluation utterance in condition {cond!r}")
        y = {a: labels[a][ev] for a in attributes}
        sc = {a: attackers[a].predict_scores(es.embeddings[ev]) for a in attributes}
        cl = {a: attackers[a].classes_.tolist() for a in attributes}
        kw = dict(subgroups=labels[subgroup or attributes[0]][ev], subgroup_name=subgroup or attributes[0],
                  alpha=alpha, beta=beta, gamma=gamma, omega=omega)
        if variant == "labels":
            pred = {a: attackers[a].classes_[np.argmax(sc[a], axis=1)] for a in attributes}
            results[cond] = soft_biometric_leakage_labels(y, pred, cl, **kw)
        else:
            results[cond] = soft_biometric_leakage(y, sc, cl, **kw)
    counts = {a: {str(c): int(n) for c, n in zip(*np.unique(labels[a][tr], return_counts=True))}
              for a in attributes}
    return AttributeAudit(results, attributes, int(tr.sum()), int(train_speakers.size), int(eval_speakers.size),
                          C, variant, counts)


def analyse_distinctiveness(es: EmbeddingSet, *, speakers=None, calibration: str = "pav-laplace",
                            fit_on: str = "each", entry: str = "sigmoid", pairs: str = "ordered",
                            original: str = "original", anonymized: str = "anonymized") -> VoiceSimilarity:
    """:func:`vpeval.metrics.distinctiveness.voice_distinctiveness` on the speakers with at least 2 utterances
    (default: the protocol's evaluation speakers; the 10 test-other speakers of the bundled example)."""
    if speakers is None:
        speakers = make_protocol(es).evaluation_speakers
    X, Y, spk, utt = matched_pairs(es, original=original, anonymized=anonymized, speakers=speakers)
    return voice_distinctiveness(X, Y, spk, utt, calibration=calibration, fit_on=fit_on, entry=entry, pairs=pairs)


def analyse_one_to_n(m: OneToN, *, separable: str = "regularize", seed: int = 0, client=None) -> LinkageAnalysis:
    """:func:`vpeval.metrics.linkage.linkage_analysis` of a 1-to-N matrix with speaker-grouped cross-fitting
    (no separate dev set); separable training scores get the named ridge penalty and are flagged. ``client``:
    a ``distributed.Client`` to scan large matrices on (same results)."""
    return linkage_analysis(m.scores, m.true_index, speaker_ids=m.enrolled_speaker, separable=separable,
                            seed=seed, client=client)


def lid_noise_baseline(true_index, speaker_ids, *, seed: int = 0) -> LinkageAnalysis:
    """The LID chain of an attacker whose scores are noise, at the same N and probes as a real matrix.

    Every score is drawn iid ``N(0, 1)`` (``numpy.random.default_rng(seed)``) in a matrix of shape
    ``(len(true_index), len(speaker_ids))``; the true columns and the enrolled speakers (hence the
    speaker-grouped cross-fitting folds) are those given, and the chain is the audit's
    (:func:`analyse_one_to_n`: ``separable="regularize"``). Its ALID, PDR and LID_max are what chance alone
    shows at this N and number of probes: an anonymizer's LID is read against this row (the LID paper's
    random-noise baseline).

    Parameters
    ----------
    true_index : array_like of int, shape (n_probes,)
    speaker_ids : sequence of str, length N
    seed : int

    Returns
    -------
    LinkageAnalysis
    """
    t = np.asarray(true_index, dtype=np.int64)
    n = len(speaker_ids)
    noise = np.random.default_rng(seed).normal(0.0, 1.0, (t.size, n))
    return linkage_analysis(noise, t, speaker_ids=list(speaker_ids), separable="regularize", seed=seed)
