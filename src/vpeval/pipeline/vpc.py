"""Trials given by VoicePrivacy Challenge lists: an ``enrolls`` file and one or more ``trials`` files.

The VoicePrivacy evaluation (VPC 2020-2024 evaluation plans; Tomashenko et al., "The VoicePrivacy 2020
Challenge evaluation plan", 2020, Sec. 3) fixes its trials by lists instead of a split rule:

* ``enrolls``: the enrollment utterance ids, one per line;
* ``trials`` (one file per gender in the challenge data): ``<enroll_speaker> <test_utterance>
  target|nontarget``.

:func:`build_vpc_trials` scores exactly those trials, for each of the conditions ``oo``, ``oa``, ``aa``
(enrollment condition, test condition). The enrollment side is a speaker-level model built from the
speaker's listed enrollment utterances in condition ``x`` by one of two rules (``enroll_rule``):

* ``"vpc"`` (the default, the challenge's rule): the mean of the *raw* condition-``x`` embeddings. The
  VoicePrivacy 2024 evaluation scripts average the speaker's enrollment embeddings (SpeechBrain ECAPA or
  x-vector, ``emb_level='spk'`` in ``evaluation/privacy/asv/asv.py`` of the Voice-Privacy-Challenge-2024
  repository) and score ``1 - cosine_distance`` against each test embedding; the 2022 Kaldi recipe also
  averages raw x-vectors per speaker (then mean subtraction, LDA, length normalisation and PLDA, which
  vpeval's list scoring does not apply).
* ``"normalized"`` (vpeval's split-rule models, ``docs/protocols.md``): the normalised mean of the
  normalised embeddings. The two rules agree when all enrollment embeddings of a speaker have the same
  norm, and differ otherwise (embedding norms of ECAPA and x-vector extractors vary).

Example: enrollment embeddings (1, 0) and (0, 3), test embeddings (1, 1) and (2, -1) give cosines
0.894427 and -0.141421 under ``"vpc"`` (model (0.5, 1.5)), 1.0 and 0.316228 under ``"normalized"``
(model (1, 1) / sqrt 2). The test side is the listed utterance's condition-``y`` embedding; the score is
the cosine of model and test embedding. Trials keep the order of the files (first file first, then line
order).

Checks (each error names the list file and line): an enrollment utterance without an embedding; a trial
whose enrollment speaker has no enrollment utterance; a test utterance without an embedding in the test
condition, or that is also an enrollment utterance; a label that contradicts the speaker ids of the
embeddings (``target`` with a test utterance of another speaker or the reverse); a pair listed twice
across files.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputFileError, VpevalError
from ..io.embeddings import EmbeddingSet
from ..io.kaldi_data import VPCTrial
from ..io.trials import Trials
from .protocols import Protocol, ProtocolError
from .protocols.models import _group_means, _labels, _row_index, _unit_rows

__all__ = ["VPC_TYPES", "ENROLL_RULES", "VPCLists", "vpc_protocol", "build_vpc_trials"]

VPC_TYPES = ("oo", "oa", "aa")
"""Conditions (enrollment, test) for which list-given trials are built."""

ENROLL_RULES = {
    "vpc": "mean of the raw enrollment embeddings, then cosine (VoicePrivacy Challenge scripts)",
    "normalized": "normalised mean of the L2-normalised enrollment embeddings, then cosine (vpeval split rule)",
}
"""Enrollment rules of :func:`build_vpc_trials`, name -> description (module docstring)."""


def _raw_group_means(es, utts, groups, label, role, what) -> tuple[np.ndarray, np.ndarray]:
    """Unit vector of the mean of the *raw* embeddings per group; ``utts``/``groups`` sorted by (group, utt)."""
    rows = _row_index(es, utts, label, role)
    x = np.asarray(es.embeddings[rows], dtype=np.float64)
    _unit_rows(x, utts, f"{label} embedding of utterance")  # a zero embedding is an error under both rules
    # scale by the largest magnitude so that the sum of huge vectors cannot overflow; the direction of the
    # mean (all that the cosine sees) is unchanged by a common positive factor
    peak = float(np.abs(x).max()) if x.size else 1.0
    starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
    sums = np.add.reduceat(x / peak, starts, axis=0)
    names = groups[starts]
    return names, _unit_rows(sums / np.diff(np.r_[starts, groups.size])[:, None], names, what)


def _speaker_of(es: EmbeddingSet) -> dict[str, str]:
    out: dict[str, str] = {}
    for u, s in zip(es.utterance_id.tolist(), es.speaker_id.tolist()):
        if out.setdefault(u, s) != s:
            raise ProtocolError(f"{es.extractor}: utterance {u!r} has speakers {out[u]!r} and {s!r}")
    return out


def vpc_protocol(es: EmbeddingSet, enrolls: dict[str, int], trials: list[VPCTrial], *,
                 enrolls_source: str = "<enrolls>"):
    """The enroll/probe split the lists define: listed enrollment utterances, and the tested utterances.

    Parameters
    ----------
    es : EmbeddingSet
    enrolls : dict str -> int
        Enrollment utterance id -> line (from :func:`vpeval.io.kaldi_data.read_vpc_enrolls`).
    trials : list of VPCTrial
        From :func:`vpeval.io.kaldi_data.read_vpc_trials` (one or more files concatenated).
    enrolls_source : str
        The enrollment list's file name, for messages.

    Returns
    -------
    pandas.DataFrame
        Columns ``utterance_id, speaker_id, role`` (the layout of ``protocol.csv``): ``enroll`` for the
        listed enrollment utterances, ``probe`` for the tested ones (sorted by id within each role);
        utterances in neither list are not part of it. Unlike the split rule of ``docs/protocols.md``, a
        tested utterance may belong to a speaker who is not enrolled (a non-target trial).

    Raises
    ------
    InputFileError
        Every check of the module docstring that concerns ids, naming the list file and line.
    """
    spk = _speaker_of(es)
    for u, line in enrolls.items():
        if u not in spk:
            raise InputFileError(enrolls_source, line, f"enrollment utterance {u!r} has no embedding "
                                 f"({es.extractor})")
    enrolled = {spk[u] for u in enrolls}
    seen: dict[tuple[str, str], VPCTrial] = {}
    tested: dict[str, str] = {}
    for t in trials:
        key = (t.enroll_speaker, t.test_utterance)
        if key in seen:
            raise InputFileError(t.source, t.line, f"trial {key[0]} {key[1]} is also on {seen[key].source}:"
                                 f"{seen[key].line}")
        seen[key] = t
        if t.enroll_speaker not in enrolled:
            raise InputFileError(t.source, t.line, f"enrollment speaker {t.enroll_speaker!r} has no enrollment "
                                 f"utterance in {enrolls_source}")
        u = t.test_utterance
        if u not in spk:
            raise InputFileError(t.source, t.line, f"test utterance {u!r} has no embedding ({es.extractor})")
        if u in enrolls:
            raise InputFileError(t.source, t.line, f"test utterance {u!r} is also an enrollment utterance "
                                 f"({enrolls_source}:{enrolls[u]})")
        same = spk[u] == t.enroll_speaker
        if same != t.is_target:
            raise InputFileError(t.source, t.line, f"labelled {'target' if t.is_target else 'nontarget'} but "
                                 f"utterance {u!r} is of speaker {spk[u]!r} in the embeddings")
        tested[u] = spk[u]
    import pandas as pd

    utts = sorted(enrolls) + sorted(tested)
    return pd.DataFrame({"utterance_id": utts, "speaker_id": [spk[u] for u in utts],
                         "role": ["enroll"] * len(enrolls) + ["probe"] * len(tested)})


def build_vpc_trials(es: EmbeddingSet, enrolls: dict[str, int], trials: list[VPCTrial], types=VPC_TYPES, *,
                     original: str = "original", anonymized: str = "anonymized",
                     enrolls_source: str = "<enrolls>", enroll_rule: str = "vpc",
                     backend=None) -> dict[str, Trials]:
    """Score the list-given trials for each requested condition (module docstring).

    Parameters
    ----------
    es : EmbeddingSet
        Original and/or anonymized embeddings (the conditions the requested types need).
    enrolls, trials, enrolls_source
        See :func:`vpc_protocol`.
    types : iterable of {"oo", "oa", "aa"}
    original, anonymized : str
        Condition labels that ``o`` and ``a`` stand for.
    enroll_rule : {"vpc", "normalized"}
        How a speaker's enrollment embeddings become its model (module docstring): ``"vpc"`` (default) the
        mean of the raw embeddings as in the challenge's scripts, ``"normalized"`` the normalised mean of the
        normalised embeddings.
    backend : vpeval.backends.Backend, optional
        A fitted back-end (e.g. PLDA trained on other speakers, :func:`vpeval.pipeline.make_attackers`) that
        scores each listed (model, test embedding) pair instead of the cosine; the model is built by
        ``enroll_rule`` as without it. Each score depends only on its own pair.

    Returns
    -------
    dict str -> Trials
        One per type, trials in list order; ``enroll`` = speaker id, ``test`` = utterance id; scores are
        cosines in [-1, 1]. ``meta`` holds ``type``, ``enroll_condition``, ``test_condition``, ``extractor``,
        ``backend`` ("cosine"), ``enroll_rule``, ``trial_lists`` (the files) and ``target_eer`` (None for
        oo, 0.5 otherwise).

    Raises
    ------
    InputFileError
        An id problem, naming the list file and line (see :func:`vpc_protocol`); a test utterance without an
        embedding in the test condition.
    ProtocolError
        An unknown or repeated type, a missing condition, a zero embedding or a zero mean.
    VpevalError
        An unknown ``enroll_rule``.

    Examples
    --------
    >>> from vpeval.io.kaldi_data import VPCTrial
    >>> es = EmbeddingSet(np.array([[1.0, 0], [0.8, 0.6], [0, 1.0]]), ["a1", "a2", "b1"], ["A", "A", "B"],
    ...                   ["original"] * 3)
    >>> tr = [VPCTrial("trials", 1, "A", "a2", True), VPCTrial("trials", 2, "A", "b1", False)]
    >>> build_vpc_trials(es, {"a1": 1}, tr, types=["oo"])["oo"].scores.tolist()
    [0.8, 0.0]
    >>> es = EmbeddingSet(np.array([[1.0, 0], [0, 3], [1, 1], [2, -1]]), ["a1", "a2", "a3", "b1"],
    ...                   ["A", "A", "A", "B"], ["original"] * 4)
    >>> tr = [VPCTrial("trials", 1, "A", "a3", True), VPCTrial("trials", 2, "A", "b1", False)]
    >>> build_vpc_trials(es, {"a1": 1, "a2": 2}, tr, types=["oo"])["oo"].scores.round(6).tolist()
    [0.894427, -0.141421]
    """
    if enroll_rule not in ENROLL_RULES:
        raise VpevalError(f"enroll rule {str(enroll_rule)!r}: expected one of {', '.join(ENROLL_RULES)}")
    means = _raw_group_means if enroll_rule == "vpc" else _group_means
    types = [str(t) for t in types]
    for t in types:
        if t not in VPC_TYPES:
            raise ProtocolError(f"trials from VoicePrivacy lists are built for {', '.join(VPC_TYPES)}, not {t!r}")
    if len(set(types)) != len(types) or not types:
        raise ProtocolError("give each of oo, oa, aa at most once, and at least one")
    lab = _labels(es, original, anonymized, [c for t in types for c in t])
    roles = vpc_protocol(es, enrolls, trials, enrolls_source=enrolls_source)
    enr = roles[roles["role"] == "enroll"]
    enr_utt = enr["utterance_id"].to_numpy(dtype=str)
    enr_spk = enr["speaker_id"].to_numpy(dtype=str)
    order = np.lexsort((enr_utt, enr_spk))
    test_utt = np.array([t.test_utterance for t in trials], dtype=str)
    spk_ids = np.array([t.enroll_speaker for t in trials], dtype=str)
    is_target = np.array([t.is_target for t in trials], dtype=bool)
    files = list(dict.fromkeys(t.source for t in trials))
    out: dict[str, Trials] = {}
    for name in types:
        e, p = lab[name[0]], lab[name[1]]
        names, models = means(es, enr_utt[order], enr_spk[order], e, "enroll", f"{e} model of speaker")
        try:
            rows = _row_index(es, test_utt, p, "test")
        except ProtocolError:
            have = set(es.utterance_id[es.condition == p].tolist())
            bad = next(t for t in trials if t.test_utterance not in have)
            raise InputFileError(bad.source, bad.line, f"test utterance {bad.test_utterance!r} has no embedding "
                                 f"in condition {p!r}") from None
        probes = _unit_rows(es.embeddings[rows], test_utt, f"{p} embedding of utterance")
        mi = np.searchsorted(names, spk_ids)
        if backend is None:
            scores = np.einsum("ij,ij->i", models[mi], probes)
        else:  # one back-end matrix over the distinct models and test utterances, then the listed cells
            uniq, pi = np.unique(test_utt, return_inverse=True)
            first = np.empty(uniq.size, dtype=np.intp)
            first[pi.reshape(-1)] = np.arange(pi.size)  # any row of an utterance: its rows are equal
            scores = np.asarray(backend.score(models, probes[first]), dtype=np.float64)[mi, pi.reshape(-1)]
        meta = dict(type=name, enroll_condition=e, test_condition=p, extractor=es.extractor,
                    backend="cosine" if backend is None else getattr(backend, "name", type(backend).__name__),
                    enroll_rule=enroll_rule, trial_lists=files, target_eer=None if name == "oo" else 0.5,
                    target_label="target = test utterance spoken by the enrollment speaker (as listed)")
        out[name] = Trials(scores, is_target.copy(), spk_ids.copy(), test_utt.copy(), name, meta)
    return out


@dataclass(frozen=True)
class VPCLists:
    """The challenge's lists an audit scores instead of its own split: an ``enrolls`` list, the ``trials``
    lists (one per gender in the challenge's data) and the enrollment rule.

    With them, :func:`vpeval.audit` (``vpeval audit --enroll-list --vpc-trials``) scores exactly the listed trials
    for ``oo``, ``oa`` and ``aa`` with every attacker (trained back-ends and fusions included,
    :meth:`vpeval.pipeline.Attacker.build_vpc_trials`), and the trial types that repeat their pairs (``oaoa``,
    ``aaaa``) are those same trials; the types with pairs of their own (``oaaa``, ``aa-centroid``) and the 1-to-N
    searches use the lists' split (:meth:`protocol`): the listed enrollment utterances and the tested utterances.

    Attributes
    ----------
    enrolls : dict str -> int
        Enrollment utterance id -> line (:func:`vpeval.io.kaldi_data.read_vpc_enrolls`).
    trials : tuple of VPCTrial
        Every listed trial, files concatenated in the order given (:func:`vpeval.io.kaldi_data.read_vpc_trials`).
    enrolls_source : str
        The enrolls file's name, for messages and the report.
    enroll_rule : {"vpc", "normalized"}
        :data:`ENROLL_RULES`; ``"vpc"`` (the challenge's rule) by default.
    """

    enrolls: dict
    trials: tuple
    enrolls_source: str = "<enrolls>"
    enroll_rule: str = "vpc"

    def __post_init__(self):
        if self.enroll_rule not in ENROLL_RULES:
            raise VpevalError(f"enroll rule {str(self.enroll_rule)!r}: expected one of {', '.join(ENROLL_RULES)}")
        if not self.enrolls or not self.trials:
            raise VpevalError("VoicePrivacy lists need at least one enrollment utterance and one trial")
        object.__setattr__(self, "trials", tuple(self.trials))

    @classmethod
    def read(cls, enrolls, trials, *, enroll_rule: str = "vpc") -> "VPCLists":
        """Read an ``enrolls`` file and one or more ``trials`` files (a path or a list of paths); errors name
        file and line (:func:`vpeval.io.kaldi_data.read_vpc_enrolls`, :func:`~vpeval.io.kaldi_data.read_vpc_trials`).
        A (speaker, utterance) pair listed in two files is an error when the lists are used."""
        from ..io.kaldi_data import read_vpc_enrolls, read_vpc_trials

        files = [trials] if isinstance(trials, (str, bytes)) or hasattr(trials, "__fspath__") else list(trials)
        if not files:
            raise VpevalError("give at least one VoicePrivacy trials file")
        return cls(read_vpc_enrolls(enrolls), tuple(t for f in files for t in read_vpc_trials(f)), str(enrolls),
                   enroll_rule)

    @property
    def trial_files(self) -> list[str]:
        """The trials files, in the order given."""
        return list(dict.fromkeys(t.source for t in self.trials))

    def describe(self) -> dict:
        """``{enrolls, trial_lists, n_trials, n_targets, enroll_rule: {name, description}}`` for report.json."""
        return {"enrolls": self.enrolls_source, "trial_lists": self.trial_files, "n_trials": len(self.trials),
                "n_targets": sum(t.is_target for t in self.trials),
                "enroll_rule": {"name": self.enroll_rule, "description": ENROLL_RULES[self.enroll_rule]}}

    def speaker_of(self, es: EmbeddingSet) -> dict[str, str]:
        """Speaker of every listed utterance (enrollment and test), after the checks of :func:`vpc_protocol`."""
        roles = vpc_protocol(es, self.enrolls, list(self.trials), enrolls_source=self.enrolls_source)
        return dict(zip(roles["utterance_id"].tolist(), roles["speaker_id"].tolist()))

    def protocol(self, es: EmbeddingSet) -> Protocol:
        """The lists' split as a :class:`~vpeval.pipeline.Protocol`: the listed enrollment utterances enroll, the
        tested utterances of enrolled speakers are probes (a tested utterance of a speaker with no enrollment
        utterance has no true model in a closed-set search and is left out of it; its listed trials are kept).
        Utterances in neither list are not part of it."""
        roles = vpc_protocol(es, self.enrolls, list(self.trials), enrolls_source=self.enrolls_source)
        enrolled = set(roles.loc[roles["role"] == "enroll", "speaker_id"].tolist())
        keep = (roles["role"] == "enroll") | roles["speaker_id"].isin(enrolled)
        roles = roles[keep]
        return Protocol(roles["utterance_id"].to_numpy(dtype=str), roles["speaker_id"].to_numpy(dtype=str),
                        (roles["role"] == "enroll").to_numpy())

    def build_trials(self, attacker, types, *, protocol: Protocol | None = None, client=None,
                     original: str = "original", anonymized: str = "anonymized") -> dict[str, Trials]:
        """The trials of ``types`` of one attacker (a :class:`vpeval.pipeline.Attacker`) on these lists, in the
        requested order: ``oo``/``oa``/``aa`` are exactly the listed trials
        (:meth:`~vpeval.pipeline.Attacker.build_vpc_trials`); a type that repeats the pairs of one of them (``oaoa``,
        ``aaaa``: ``meta["same_pairs_as"]``) is those trials under its own name and target EER; Beyond-EER's
        ``oaoo``/``oaaa`` take the listed ``oa`` targets with the listed ``oo``/``aa`` non-targets
        (:func:`~vpeval.pipeline.protocols.trials.compose_trials`); any other type is built on :meth:`protocol`
        (given, or made from the attacker's embeddings)."""
        from .protocols.trials import _COMPOSED, _SAME_AS, TRIAL_TYPES, compose_trials

        types = [str(t) for t in types]
        listed = [t for t in VPC_TYPES if t in types or any(_SAME_AS.get(x) == t or t in _COMPOSED.get(x, ())
                                                             for x in types)]
        opts = dict(original=original, anonymized=anonymized, enrolls_source=self.enrolls_source,
                    enroll_rule=self.enroll_rule)
        got = attacker.build_vpc_trials(self.enrolls, list(self.trials), listed, **opts) if listed else {}
        rest = [t for t in types if t not in VPC_TYPES and t not in _SAME_AS and t not in _COMPOSED]
        if rest:
            if protocol is None:
                es = attacker.es if attacker.es is not None else attacker.members[0].es
                protocol = self.protocol(es)
            got.update(attacker.build_trials(rest, protocol=protocol, client=client, original=original,
                                             anonymized=anonymized))
        out = {}
        for t in types:
            if t in got:
                out[t] = got[t]
            elif t in _COMPOSED:
                src_t, src_n = _COMPOSED[t]
                tar, non = got[src_t], got[src_n]
                meta = dict(tar.meta, type=t, target_eer=TRIAL_TYPES[t].target_eer, composed_of=[src_t, src_n],
                            nontarget_enroll_condition=non.meta.get("enroll_condition"),
                            nontarget_test_condition=non.meta.get("test_condition"))
                out[t] = compose_trials(tar, non, t, meta)
            else:  # a type with the pairs of a listed one
                base = got[_SAME_AS[t]]
                meta = dict(base.meta, type=t, target_eer=TRIAL_TYPES[t].target_eer, same_pairs_as=_SAME_AS[t])
                out[t] = Trials(base.scores, base.is_target, base.enroll, base.test, t, meta)
        return out
