"""The trial types (:data:`TRIAL_TYPES`) and the scored verification trials built from them
(:func:`build_trials`); the exact pairs of every type are in the docstring of :mod:`vpeval.pipeline.protocols`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...io.embeddings import EmbeddingSet
from ...io.trials import Trials
from ...keys import same_keys
from .models import OneToN, _check_backend, _labels, one_to_n, speaker_models
from .split import Protocol, ProtocolError, make_protocol

__all__ = ["TrialType", "TRIAL_TYPES", "PROFILE_TYPES", "TWO_SIDED_TYPES", "CONSISTENCY_TYPES", "build_trials", "compose_trials", "cross_key_trials"]


@dataclass(frozen=True)
class TrialType:
    """Definition of one trial type (see the package docstring of :mod:`vpeval.pipeline.protocols` for the exact pairs).

    Attributes
    ----------
    name : str
    enroll, test : {"o", "a"}
        Condition of the enrollment and of the test side (of the target trials where the two classes differ).
    target_eer : float or None
        The EER an ideal anonymizer reaches (0.5 for attacks, 0.0 for consistency and distinctness);
        ``None`` for the original-speech references, where a low EER only shows the attacker is capable.
    description : str
    non_enroll, non_test : {"o", "a"} or None
        Conditions of the non-target trials where they differ from the targets' (Beyond-EER's ``oaoo``:
        ``o``/``o``; ``oaaa``: ``a``/``a``); None: the same as ``enroll``/``test``.
    """

    name: str
    enroll: str
    test: str
    target_eer: float | None
    description: str
    non_enroll: str | None = None
    non_test: str | None = None

    @property
    def nontarget_conditions(self) -> tuple[str, str]:
        """``(enroll, test)`` conditions of the non-target trials."""
        return (self.non_enroll or self.enroll, self.non_test or self.test)


TRIAL_TYPES: dict[str, TrialType] = {
    t.name: t
    for t in (
        TrialType("oo", "o", "o", None, "original enrollment vs original probes: the attacker's capability"),
        TrialType("oa", "o", "a", 0.5, "original enrollment vs anonymized probes: ignorant attacker (VPC)"),
        TrialType("aa", "a", "a", 0.5, "anonymized enrollment vs anonymized probes: lazy-informed attacker (VPC)"),
        TrialType("oaoa", "o", "a", 0.5, "attack: original enrollment vs anonymized probes (pairs of oa)"),
        TrialType(
            "oaoo", "o", "a", 0.5,
            "attack resistance: original vs anonymized, same speaker (targets) against original vs original, "
            "different speakers (non-targets); > 50 % = a pseudo-voice sits further from its source than another "
            "real speaker does", "o", "o",
        ),
        TrialType(
            "oaaa", "o", "a", 0.5,
            "attack resistance: original vs anonymized, same speaker (targets) against anonymized vs anonymized, "
            "different speakers (non-targets); > 50 % = identity-space compression (pseudo-voices of different "
            "speakers closer to each other than to their sources)", "a", "a",
        ),
        TrialType(
            "aaaa", "a", "a", 0.0,
            "pseudo-identity consistency: anonymized enrollment vs anonymized probes (pairs of aa)",
        ),
        TrialType(
            "aa-centroid", "a", "a", 0.0,
            "pseudo-identity distinctness within one run: anonymized model of each speaker vs the anonymized "
            "probe centroid of each evaluation speaker",
        ),
        TrialType(
            "cross-profile", "a", "a", 0.0,
            "pseudo-identity distinctness across profile keys (Beyond-EER): a key's model vs the same key's probe "
            "of its speaker (targets) and every other key's probes (non-targets)",
        ),
        TrialType(
            "cross-profile-same-source", "a", "a", 0.0,
            "renewal: a key's model vs the same key's probe of its speaker (targets) and the other keys' probes of "
            "the same source speaker (non-targets)",
        ),
    )
}
#: Types built from two or more anonymization runs with different profile keys (:func:`cross_key_trials`), not
#: by :func:`build_trials`.
PROFILE_TYPES = ("cross-profile", "cross-profile-same-source")

_SAME_AS = {"oaoa": "oa", "aaaa": "aa"}
#: Beyond-EER's composed types: the target trials of the first type with the non-target trials of the second
#: (the same pairs, so one layout): Sec. 3.2 and Table 2 of the paper.
_COMPOSED = {"oaoo": ("oa", "oo"), "oaaa": ("oa", "aa")}
#: Types whose ideal EER is 50 % and whose EER may meaningfully exceed it (read two-sided, on the interpolated
#: step EER: the ROCCH-EER cannot pass 50 %).
TWO_SIDED_TYPES = ("oaoo", "oaaa")
#: Types that test the anonymizer's own goals, not attacks: ideal EER 0 %, beating chance is needed (pseudo-identity
#: consistency and distinctness).
CONSISTENCY_TYPES = ("aaaa", "aa-centroid", "cross-profile", "cross-profile-same-source")


def compose_trials(targets_from: Trials, nontargets_from: Trials, name: str, meta: dict) -> Trials:
    """The target trials of ``targets_from`` with the non-target trials of ``nontargets_from`` (Beyond-EER's
    ``oaoo``/``oaaa``): both must list the same (enroll, test) pairs with the same labels in the same order, as
    two conditions of one design do (e.g. ``oa`` and ``oo`` of one protocol or of one VoicePrivacy list).

    Returns
    -------
    Trials
        The same pairs, keys and labels, length ``len(targets_from)``: scores from ``targets_from`` where
        ``is_target``, from ``nontargets_from`` elsewhere; ``source`` ``name``, ``meta`` as given.

    Raises
    ------
    ProtocolError
        The two trial lists differ in their pairs or labels.
    """
    t, n = targets_from, nontargets_from
    same = (len(t) == len(n) and np.array_equal(t.is_target, n.is_target)
            and (t.enroll is None) == (n.enroll is None) and (t.test is None) == (n.test is None)
            and (t.enroll is None or same_keys(t.enroll, n.enroll))
            and (t.test is None or same_keys(t.test, n.test)))
    if not same:
        raise ProtocolError(f"{name}: the target trials ({t.source}) and the non-target trials ({n.source}) must "
                            "list the same (enroll, test) pairs with the same labels")
    return Trials(np.where(t.is_target, t.scores, n.scores), t.is_target, t.enroll, t.test, name, meta)


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
    """Build scored trials of the requested types (definitions in the package docstring).

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
        than the split has (every non-target needs ``M' >= 2``).
    """
    _check_backend(backend)
    names = [t for t in TRIAL_TYPES if t not in PROFILE_TYPES] if types is None else [str(t) for t in types]
    if not names:
        raise ProtocolError("no trial types requested")
    for t in names:
        if t in PROFILE_TYPES:
            raise ProtocolError(f"trial type {t!r} needs two anonymization runs with different profile keys: "
                                "build it with cross_key_trials")
        if t not in TRIAL_TYPES:
            raise ProtocolError(f"unknown trial type {str(t)!r}; expected one of "
                                f"{', '.join(t for t in TRIAL_TYPES if t not in PROFILE_TYPES)}")
    if len(set(names)) != len(names):
        raise ProtocolError("a trial type is requested more than once")
    needed = [c for t in names for c in (TRIAL_TYPES[t].enroll, TRIAL_TYPES[t].test,
                                         *TRIAL_TYPES[t].nontarget_conditions)]
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
        if name in _COMPOSED:
            src_t, src_n = _COMPOSED[name]
            ne, nt = tt.nontarget_conditions
            meta.update(nontarget_enroll_condition=lab[ne], nontarget_test_condition=lab[nt],
                        composed_of=[src_t, src_n])
            meta["target_label"] = (f"target = {tt.enroll}{tt.test} same-speaker pair (model vs the anonymized "
                                    f"probe of its own speaker); nontarget = {ne}{nt} different-speaker pair")
            out[name] = compose_trials(matrix(tt.enroll, tt.test).to_trials(columns=cols),
                                       matrix(ne, nt).to_trials(columns=cols), name, meta)
        elif name == "aa-centroid":
            meta["target_label"] = "target = same speaker (model vs own probe centroid)"
            out[name] = _centroid(es, protocol, lab["a"], cols, meta, backend)
        else:
            meta["target_label"] = "target = probe spoken by the model's speaker"
            if name in _SAME_AS:
                meta["same_pairs_as"] = _SAME_AS[name]
            out[name] = matrix(tt.enroll, tt.test).to_trials(columns=cols, source=name, meta=meta)
    return out


def _centroid(es, protocol, label, cols, meta, backend=None) -> Trials:
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
        "aa-centroid", meta,
    )



def cross_key_trials(es: EmbeddingSet, profiles, *, protocol: Protocol | None = None,
                     cohort_impostors: bool = True, backend=None) -> dict[str, Trials]:
    """Beyond-EER's cross-profile trials as the paper means them (arXiv 2609.18673, Sec. 3.2, Table 2):
    pseudo-identities of two or more anonymization runs of one system with different profile keys
    (``vpeval anonymize --profile KEY``).

    A pseudo-identity is a (speaker, key) pair. With ``profiles = (k1, k2, ...)``, the condition labels of the
    runs' embeddings in ``es``, every model is a speaker's enrollment model under ``k1``:

    * **target**: a model against a ``k1`` probe of the same speaker (the same pseudo-identity on two
      utterances), the pairs of :func:`build_trials`' same-speaker trials;
    * **non-target**: a model against every probe of every evaluation speaker under every other key (another
      key: another pseudo-identity), the same source speaker included: a pseudo-identity renewed with its key
      must not be linkable to its predecessor (the renewability an operator relies on). ``k1`` probes of other
      speakers are not in it (they are ``aaaa``'s non-targets, within one key).

    Ideal EER 0 %. Two lists are returned: ``"cross-profile"`` (every non-target above) and
    ``"cross-profile-same-source"`` (the same targets against the same-source non-targets alone: the renewal
    check on its own). The paper leaves open whether a p1-p2 non-target shares its source speaker; here both
    kinds are in ``cross-profile`` and the second list isolates the same-source ones. Test keys of probes under
    another key ``k`` carry the suffix ``@<k>`` (every (enroll, test) pair unique; :func:`vpeval.stats.
    trial_speakers` strips it).

    Parameters
    ----------
    es : EmbeddingSet
        Embeddings of the runs only: condition labels ``k1``, ``k2``, ..., one embedding per utterance in
        each (the same utterance ids).
    profiles : sequence of str, length >= 2
        The condition labels, enrollment key first.
    protocol, cohort_impostors, backend
        As in :func:`build_trials` (default split :func:`make_protocol` of ``es``).

    Returns
    -------
    dict of str to Trials
        ``meta`` holds ``type``, ``profiles``, ``target_eer`` (0.0), ``extractor``, ``backend`` and
        ``target_label``. Trials are ordered as :func:`build_trials`' (probe-major), targets first.

    Raises
    ------
    ProtocolError
        Fewer than two labels, a repeated label, a label missing, any other label in ``es``, embeddings
        missing, too few speakers.

    Examples
    --------
    >>> import numpy as np
    >>> from vpeval.io.embeddings import EmbeddingSet
    >>> utt = ["a-1", "a-2", "b-1", "b-2"] * 2
    >>> spk = ["A", "A", "B", "B"] * 2
    >>> emb = np.array([[1, 0], [1, .1], [0, 1], [.1, 1], [0, 1], [.1, 1], [1, 0], [1, .1]], dtype=float)
    >>> es = EmbeddingSet(emb, utt, spk, ["p1"] * 4 + ["p2"] * 4, "toy")
    >>> t = cross_key_trials(es, ("p1", "p2"))
    >>> len(t["cross-profile"].tar), len(t["cross-profile"].non), len(t["cross-profile-same-source"].non)
    (2, 4, 2)
    """
    keys = [str(p) for p in profiles]
    if len(keys) < 2 or len(set(keys)) != len(keys):
        raise ProtocolError(f"cross-profile trials need two or more different profile labels, got {keys}")
    _check_backend(backend)
    k1 = keys[0]
    present = set(np.unique(es.condition).tolist())
    missing = [k for k in keys if k not in present]
    extra = sorted(present - set(keys))
    if missing or extra:
        raise ProtocolError(f"cross-profile trials: labels {keys} expected in the embeddings"
                            + (f"; missing {missing}" if missing else "") + (f"; unexpected {extra}" if extra else ""))
    protocol = make_protocol(es) if protocol is None else protocol
    cols = None if cohort_impostors else protocol.evaluation_speakers
    tar = None
    non_all, non_same = [], []
    for k in keys[1:]:
        sub = es.select(np.isin(es.condition, [k1, k]))
        if tar is None:
            t_same = one_to_n(sub, protocol, enroll="o", probe="o", original=k1, anonymized=k,
                              backend=backend).to_trials(columns=cols)
            tar = t_same.select(t_same.is_target)
        other = one_to_n(sub, protocol, enroll="o", probe="a", original=k1, anonymized=k,
                         backend=backend).to_trials(columns=cols)
        other = Trials(other.scores, other.is_target, other.enroll, np.char.add(other.test.astype(str), f"@{k}"),
                       other.source, other.meta)
        non_all.append(other)
        non_same.append(other.select(other.is_target))
    meta = dict(extractor=es.extractor, profiles=keys, target_eer=0.0,
                backend="cosine" if backend is None else backend.name)
    out = {}
    for name, parts in (("cross-profile", non_all), ("cross-profile-same-source", non_same)):
        others = "other keys'" if len(keys) > 2 else f"{keys[1]}"
        out[name] = Trials(
            np.concatenate([tar.scores] + [p.scores for p in parts]),
            np.r_[np.ones(len(tar), bool), np.zeros(sum(len(p) for p in parts), bool)],
            np.concatenate([tar.enroll] + [p.enroll for p in parts]),
            np.concatenate([tar.test.astype(str)] + [p.test for p in parts]),
            name, dict(meta, type=name, target_label=f"target = {k1} model vs {k1} probe of the same speaker; "
                       f"nontarget = {k1} model vs a {others} probe" + (" of the same speaker" if name.endswith(
                           "source") else "")))
    return out
