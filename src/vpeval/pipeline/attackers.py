"""Attackers: extractor x back-end x training condition, and their linear fusion.

An attacker scores trials with a speaker-embedding extractor (one :class:`~vpeval.io.embeddings.EmbeddingSet`
per extractor) and a back-end (:mod:`vpeval.backends`). A trained back-end is fitted on *training speakers*,
which must be disjoint from every evaluation-side speaker (targets, enrollment models and 1-to-N
distractors). The training condition names what the attacker knows, in the VoicePrivacy Challenge's terms
(Tomashenko et al., "The VoicePrivacy 2020 Challenge: results and findings", CSL 2022, Sec. 3):

* ``trained_on="none"``: a pretrained extractor with plain cosine scoring; on oa trials this is the
  **ignorant** attacker, on aa trials the **lazy-informed** one;
* ``trained_on="original"``: the back-end is trained on original speech of the training speakers (lazy-informed
  on aa trials, ignorant on oa trials);
* ``trained_on="anonymized"``: the back-end is trained on the training speakers' speech anonymized by the
  *same* system: on aa trials the **semi-informed** attacker that the challenge ranks systems by, in its
  back-end-only form (class ``"semi-informed (back-end)"``: the extractor stays frozen); an attacker whose
  extractor itself is adapted to the anonymized speech (:mod:`vpeval.pipeline.adapted`) is ``"semi-informed
  (extractor adapted)"``, closer to the challenge's, which trains its whole extractor on anonymized speech. On oa
  trials neither is a VoicePrivacy class (the challenge defines semi-informed on a-a only): they are named
  descriptively (:func:`attacker_class`).

A fusion attacker (:func:`fuse_attackers`) combines trained attackers of one training condition with
prior-weighted linear logistic regression (:class:`~vpeval.calibration.fusion.LinearFusion`). Its weights are
trained on trials built among the training speakers in that condition (enroll and probe both in the
training condition, the default enrollment/probe split of :func:`~vpeval.pipeline.make_protocol`), scored by
members that were fitted on the *other* training speakers (speaker-grouped ``folds``-fold cross-fitting), so
the weights are learnt on scores like those the members give unseen speakers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..backends import BACKENDS, Backend, get_backend
from ..calibration.fusion import LinearFusion
from ..errors import VpevalError
from ..io.embeddings import EmbeddingSet
from ..io.extractor_info import record_difference
from ..io.trials import Trials
from ..keys import same_keys
from .protocols import TRIAL_TYPES, OneToN, Protocol, ProtocolError, build_trials, make_protocol, one_to_n

__all__ = [
    "TRAINED_ON", "ANON_TRAINED_ON_OA", "ADAPTED_ON_OA", "Attacker", "attacker_class", "channel_of", "check_disjoint",
    "make_attackers", "fuse_attackers", "training_condition",
]

#: Values of ``trained_on``.
TRAINED_ON = ("none", "original", "anonymized")


#: The descriptive name of a back-end trained on anonymized speech scoring trials with original enrollment
#: (o-a): no VoicePrivacy class is defined for it.
ANON_TRAINED_ON_OA = "trained on anonymized with original enrollment (no VoicePrivacy class)"
#: The same for an attacker whose extractor is adapted on anonymized speech (:mod:`vpeval.pipeline.adapted`).
ADAPTED_ON_OA = "extractor adapted on anonymized with original enrollment (no VoicePrivacy class)"


def channel_of(extractor: str) -> str:
    """The attack channel of an extractor name: ``"content"`` for ``content*``, ``"prosody"`` for ``prosody*``,
    ``"fused"`` for ``fusion-channels``, else ``"voice"`` (:mod:`vpeval.pipeline.channels`).

    >>> channel_of("content-tfidf"), channel_of("prosody-stats"), channel_of("mfcc-stats")
    ('content', 'prosody', 'voice')
    """
    name = str(extractor)
    for prefix, channel in (("content", "content"), ("prosody", "prosody"), ("fusion-channels", "fused")):
        if name.startswith(prefix):
            return channel
    return "voice"


def attacker_class(trained_on: str, trial_type: str, adapted: bool = False) -> str:
    """The VoicePrivacy attacker class of an attacker on a trial type, only where the challenge defines one.

    ``"ignorant"`` (original enrollment, anonymized probes, no knowledge of the anonymizer: ``trained_on`` none
    or original), ``"lazy-informed"`` (anonymized enrollment and probes, back-end not trained on anonymized
    speech), ``"semi-informed (back-end)"`` (anonymized enrollment and probes, back-end trained on anonymized
    speech, extractor frozen), ``"semi-informed (extractor adapted)"`` (``adapted``: the extractor itself adapted
    on anonymized speech). Other combinations get a plain descriptive name: an attacker trained on anonymized
    speech scoring o-a trials is :data:`ANON_TRAINED_ON_OA` (or :data:`ADAPTED_ON_OA`; the challenge defines
    semi-informed on a-a only); ``"reference"`` for original-speech trial types and ``"not an attack"`` for the
    types that test the anonymizer's own goals (aaaa, aa-centroid). Beyond-EER's oaoo and oaaa are attacks
    with original enrollment (their targets are those of oa): ignorant.

    >>> attacker_class("anonymized", "aa"), attacker_class("none", "oa"), attacker_class("original", "aa")
    ('semi-informed (back-end)', 'ignorant', 'lazy-informed')
    >>> attacker_class("anonymized", "aa", adapted=True)
    'semi-informed (extractor adapted)'
    >>> attacker_class("anonymized", "oa")
    'trained on anonymized with original enrollment (no VoicePrivacy class)'
    """
    tt = TRIAL_TYPES[trial_type]
    if tt.target_eer is None:
        return "reference"
    if tt.target_eer == 0.0:
        return "not an attack"
    if tt.enroll == "o":
        if trained_on == "anonymized":
            return ADAPTED_ON_OA if adapted else ANON_TRAINED_ON_OA
        return "ignorant"
    if trained_on == "anonymized":
        return "semi-informed (extractor adapted)" if adapted else "semi-informed (back-end)"
    return "lazy-informed"


def check_disjoint(train: EmbeddingSet, evaluation, *, what: str = "training") -> None:
    """Refuse training speakers that also appear on the evaluation side.

    Parameters
    ----------
    train : EmbeddingSet
    evaluation : EmbeddingSet or iterable of EmbeddingSet
        Every speaker in them counts (targets, enrollment models, distractors).

    Raises
    ------
    ProtocolError
        Listing the number of shared speakers and the first (sorted) shared ids; or a training embedding
        identical to an evaluation embedding of the same dimension (compared after rounding to float32, so a
        copy stored in either precision is found), whatever its speaker id: evaluation utterances copied into
        the training data under new ids. The message names the first such pair of utterances; where that row is
        constant (e.g. the prosody statistics of a silent recording) it says so instead of calling it a copy.
    """
    sets = [evaluation] if isinstance(evaluation, EmbeddingSet) else list(evaluation)
    eval_spk = np.unique(np.concatenate([e.speaker_id for e in sets]))
    shared = np.intersect1d(np.unique(train.speaker_id), eval_spk)
    if shared.size:
        first = ", ".join(repr(str(s)) for s in shared[:5])
        raise ProtocolError(
            f"{shared.size} {what} speaker(s) of {str(train.extractor)!r} are also evaluation speakers (targets, "
            f"enrollment or distractors); training speakers must be disjoint from them (first shared: {first})")
    _check_no_copied_rows(train, [e for e in sets if e.embeddings.shape[1] == train.embeddings.shape[1]], what)


def _row_keys(x: np.ndarray) -> np.ndarray:
    """One bytes key per row: the row rounded to float32 (-0.0 as 0.0), so copies through either precision match."""
    r = np.ascontiguousarray(np.asarray(x, dtype=np.float32) + np.float32(0.0))
    return r.view(np.dtype((np.void, r.dtype.itemsize * r.shape[1]))).ravel()


def _check_no_copied_rows(train: EmbeddingSet, sets, what: str) -> None:
    if not sets or train.embeddings.shape[0] == 0 or channel_of(train.extractor) == "content":
        return  # identical transcripts (e.g. two empty ones) are not copied speech
    tkeys = _row_keys(train.embeddings)
    for es in sets:
        ekeys = _row_keys(es.embeddings)
        hit = np.isin(tkeys, ekeys)
        if hit.any():
            i = int(np.flatnonzero(hit)[0])
            j = int(np.flatnonzero(ekeys == tkeys[i])[0])
            row = np.asarray(train.embeddings[i], dtype=float)
            if row.size and np.all(row == row[0]):  # no speech in it to copy: a degenerate row, said as such
                raise ProtocolError(
                    f"{what} utterance {str(train.utterance_id[i])!r} of speaker {str(train.speaker_id[i])!r} has a "
                    f"constant {str(train.extractor)!r} row (every value {row[0]:g}), as has evaluation utterance "
                    f"{str(es.utterance_id[j])!r}: not a measurement of speech (a silent or unreadable recording?); "
                    "expected rows that vary: remove such utterances or compute their statistics again")
            raise ProtocolError(
                f"{int(hit.sum())} {what} embedding(s) of {str(train.extractor)!r} are identical to evaluation "
                f"embeddings (first: {what} utterance {str(train.utterance_id[i])!r} of speaker "
                f"{str(train.speaker_id[i])!r} equals evaluation utterance {str(es.utterance_id[j])!r} of speaker "
                f"{str(es.speaker_id[j])!r}, {str(es.condition[j])}): evaluation speech copied into the training "
                "data under other ids; training speakers must be disjoint from the evaluation side")


def training_condition(train: EmbeddingSet, trained_on: str, *, original="original", anonymized="anonymized"):
    """The rows of ``train`` in the condition ``trained_on`` (``"original"`` or ``"anonymized"``).

    Raises
    ------
    ProtocolError
        ``trained_on`` not one of the two, no row in that condition, or a zero embedding (named by utterance).
    """
    if trained_on not in ("original", "anonymized"):
        raise ProtocolError(f"trained_on must be 'original' or 'anonymized', got {trained_on!r}")
    label = original if trained_on == "original" else anonymized
    mask = train.condition == label
    if not mask.any():
        raise ProtocolError(f"training embeddings of {str(train.extractor)!r} have no rows with condition "
                            f"{label!r} (needed for back-ends trained on {trained_on} speech)")
    zero = np.flatnonzero(mask & ~(np.abs(train.embeddings).max(axis=1) > 0))
    if zero.size:
        raise ProtocolError(f"training embeddings of {str(train.extractor)!r}: utterance "
                            f"{str(train.utterance_id[zero[0]])!r} ({label}) is the zero vector")
    return train.select(mask)


@dataclass
class Attacker:
    """One attacker: how it scores and what it knows.

    Attributes
    ----------
    name : str
        ``<extractor>/<backend>`` (untrained), ``<extractor>/<backend>/<trained_on>`` or
        ``fusion/<trained_on>``.
    extractor : str
        Extractor name, or ``"fusion"``.
    backend : str
        Back-end name (:data:`vpeval.backends.BACKENDS`, ``+asnorm`` suffix) or ``"fusion"``.
    trained_on : {"none", "original", "anonymized"}
    training_speakers : int
    es : EmbeddingSet or None
        Evaluation embeddings scored by this attacker (``None`` for a fusion).
    model : Backend or LinearFusion or None
        ``None`` means plain cosine scoring.
    members : list of Attacker
        The fused attackers (fusion only).
    adapted : dict or None
        For an extractor-adapted attacker (:func:`vpeval.pipeline.adapted.field_adapted`): how the extractor was
        adapted and on what training data (speakers, segments, K, epochs); None otherwise.
    learning_curve : dict or None
        Its saturation check (:func:`vpeval.pipeline.adapted.learning_curve`), when computed.
    channel : {"voice", "content", "prosody", "fused"}
        The attack channel (:mod:`vpeval.pipeline.channels`): the extractor's, or for a fusion its members' when
        they share one, else ``"fused"``.
    """

    name: str
    extractor: str
    backend: str
    trained_on: str
    training_speakers: int = 0
    es: EmbeddingSet | None = None
    model: object = None
    members: list = field(default_factory=list)
    adapted: dict | None = None
    learning_curve: dict | None = None
    channel: str = ""

    def __post_init__(self):
        if not self.channel:
            chans = {m.channel for m in self.members}
            self.channel = (chans.pop() if len(chans) == 1 else "fused") if self.members else channel_of(self.extractor)

    def describe(self) -> dict:
        """The ``report.json`` entry: extractor, back-end, training condition and size, members/weights."""
        out = {"extractor": self.extractor, "backend": self.backend, "trained_on": self.trained_on,
               "training_speakers": int(self.training_speakers), "channel": self.channel}
        if self.members:
            out["members"] = [m.name for m in self.members]
            out["fusion"] = self.model.describe()
        elif isinstance(self.model, Backend):
            out["settings"] = {k: v for k, v in self.model.describe().items()
                               if k not in ("backend", "trained", "training_speakers")}
        if self.adapted is not None:
            out["adaptation"] = dict(self.adapted)
        if self.learning_curve is not None:
            out["learning_curve"] = self.learning_curve
        return out

    def build_trials(self, types, *, protocol: Protocol | None = None, **options) -> dict[str, Trials]:
        """Scored trials of ``types``; ``options`` (``cohort_impostors``, ``original``, ``anonymized``) as in
        :func:`~vpeval.pipeline.build_trials`."""
        if not self.members:
            out = build_trials(self.es, types, protocol=protocol, backend=self.model, **options)
        else:
            out = self._fuse([m.build_trials(types, protocol=protocol, **options) for m in self.members])
        for t in out.values():
            t.meta.update(attacker=self.name, trained_on=self.trained_on)
        return out

    def cross_profile_trials(self, runs: dict, protocol: Protocol | None = None) -> dict[str, Trials]:
        """Beyond-EER's cross-profile trials (:func:`~vpeval.pipeline.protocols.cross_key_trials`) of this attacker:
        the system's ``anonymized`` rows as the enrollment key against its further runs under other profile keys.
        ``runs``: extractor -> profile key -> that run's rows (condition ``anonymized@<key>``,
        :func:`vpeval.io.embeddings.split_profile_runs`). Empty where this attacker's extractor (or any member's)
        has no further run; a fusion fuses its members' trials."""
        from .protocols import cross_key_trials

        if self.members:
            parts = [m.cross_profile_trials(runs, protocol) for m in self.members]
            out = self._fuse(parts) if parts and all(parts) else {}
        else:
            mine = runs.get(self.es.extractor) or {}
            if not mine:
                return {}
            es = self.es.select(self.es.condition == "anonymized")
            for key, run in mine.items():  # the key alone as the label: probe keys read "<utterance>@<key>"
                es = es.concat(EmbeddingSet(run.embeddings, run.utterance_id, run.speaker_id,
                                            np.full(len(run), key, dtype=object), run.extractor,
                                            run.input_rate_hz, run.extractor_info))
            out = cross_key_trials(es, ("anonymized", *mine), protocol=protocol, backend=self.model)
        for t in out.values():
            t.meta.update(attacker=self.name, trained_on=self.trained_on)
        return out

    def _fuse(self, parts: list[dict[str, Trials]]) -> dict[str, Trials]:
        """The fusion's scores of its members' trials (``parts``: one dict per member, trial type -> Trials),
        which must be the same trials in the same order."""
        out = {}
        for t, first in parts[0].items():
            for p in parts[1:]:
                if not (same_keys(p[t].enroll, first.enroll) and same_keys(p[t].test, first.test)):
                    raise ProtocolError(f"fusion: members {self.members[0].name!r} and others score different "
                                        f"{t} trials (their embeddings cover different utterances)")
            fused = self.model.transform(np.column_stack([p[t].scores for p in parts]))
            out[t] = Trials(fused, first.is_target, first.enroll, first.test, first.source,
                            dict(first.meta, extractor="fusion", backend="fusion"))
        return out

    def build_vpc_trials(self, enrolls, trials, types, **options) -> dict[str, Trials]:
        """The listed VoicePrivacy trials scored by this attacker; ``enrolls``, ``trials`` and ``options``
        (``original``, ``anonymized``, ``enrolls_source``, ``enroll_rule``) as in
        :func:`vpeval.pipeline.vpc.build_vpc_trials`. A fusion sums its members' list scores with its weights."""
        from .vpc import build_vpc_trials

        if not self.members:
            out = build_vpc_trials(self.es, enrolls, trials, types, backend=self.model, **options)
        else:
            out = self._fuse([m.build_vpc_trials(enrolls, trials, types, **options) for m in self.members])
        for t in out.values():
            t.meta.update(attacker=self.name, trained_on=self.trained_on)
        return out

    def one_to_n(self, protocol: Protocol | None = None, *, enroll: str = "o", probe: str = "a",
                 **options) -> OneToN:
        """Every probe against every enrolled speaker; ``options`` (``original``, ``anonymized``) as in
        :func:`~vpeval.pipeline.one_to_n`."""
        if not self.members:
            return one_to_n(self.es, protocol, enroll=enroll, probe=probe, backend=self.model, **options)
        parts = [m.one_to_n(protocol, enroll=enroll, probe=probe, **options) for m in self.members]
        first = parts[0]
        for p in parts[1:]:
            if not (np.array_equal(p.probe_id, first.probe_id) and np.array_equal(p.enrolled_speaker,
                                                                                first.enrolled_speaker)):
                raise ProtocolError("fusion: members score different probes or models")
        w, b = self.model.weights_, self.model.intercept_
        scores = sum(wk * p.scores for wk, p in zip(w, parts)) + b
        return OneToN(scores, first.true_index, first.probe_id, first.probe_speaker, first.enrolled_speaker,
                      first.enroll_condition, first.probe_condition, "fusion")


def make_attackers(sets: dict[str, EmbeddingSet], train: dict[str, EmbeddingSet] | None = None, *,
                   backends=BACKENDS, conditions=("original", "anonymized"), asnorm: bool = False,
                   top_k: int = 200, original: str = "original", anonymized: str = "anonymized",
                   fits: dict | None = None) -> list[Attacker]:
    """Fit every (extractor, back-end, training condition) attacker.

    Parameters
    ----------
    sets : dict extractor -> EmbeddingSet
        Evaluation embeddings (original and anonymized rows).
    train : dict extractor -> EmbeddingSet, optional
        Training-speaker embeddings per extractor, with rows of the conditions in ``conditions``. Without it,
        only untrained back-ends (``cosine``) are fielded.
    backends : iterable of str
        Back-end names; ``cosine`` is fielded once per extractor, untrained; the others once per training
        condition.
    conditions : iterable of {"original", "anonymized"}
        Training conditions of the trained back-ends.
    asnorm : bool
        Also field every back-end wrapped in AS-norm (cohort = the training speakers of its condition),
        named ``<backend>+asnorm``.
    top_k : int
        AS-norm cohort size.
    fits : dict, optional
        A cache of fitted back-ends shared between calls (e.g. the systems of one audit): a back-end already
        fitted on identical training rows (same embeddings, speakers, settings) is reused, not refitted. The
        fit is deterministic, so results are the same with or without it.

    Returns
    -------
    list of Attacker
        Ordered by extractor, then back-end (order of ``backends``), then condition.

    Raises
    ------
    ProtocolError
        Training speakers shared with the evaluation side, a missing training condition, an extractor with
        training data but no evaluation data, training and evaluation embeddings whose extractor records differ
        (another model file by its sha256, other features: :mod:`vpeval.io.extractor_info`), an unknown back-end, or no attacker at all (only trained
        back-ends requested and no training data).
    vpeval.backends.BackendError
        Training data that a back-end cannot use (e.g. too few segments per speaker for PLDA).
    """
    backends = [str(b) for b in backends]
    for b in backends:
        if b not in BACKENDS:
            raise ProtocolError(f"unknown back-end {b!r}; expected one of {', '.join(BACKENDS)}")
    if not backends:
        raise ProtocolError("no back-end requested")
    if len(set(backends)) != len(backends):
        raise ProtocolError("a back-end is requested more than once")
    train = train or {}
    extra = sorted(set(train) - set(sets))
    if extra:
        raise ProtocolError(f"training embeddings of extractor {extra[0]!r} have no evaluation embeddings")
    for name, tr in train.items():
        check_disjoint(tr, list(sets.values()))
        ev = sets[name].extractor_info
        diff = None if ev is None or tr.extractor_info is None else record_difference(
            ev, tr.extractor_info, "the evaluation embeddings")
        if diff is not None:
            raise ProtocolError(f"the training embeddings of extractor {name!r} were made by {diff}; an attacker is "
                                "trained and evaluated on embeddings of one extractor")
    out = []

    def fit(b, wrap, tr):
        if fits is None:
            return get_backend(b, asnorm=wrap, top_k=top_k).fit(tr.embeddings, tr.speaker_id)
        key = (b, wrap, top_k, content_key(tr.embeddings, tr.speaker_id))
        if key not in fits:
            fits[key] = get_backend(b, asnorm=wrap, top_k=top_k).fit(tr.embeddings, tr.speaker_id)
        return fits[key]

    for ext, es in sets.items():
        for b in backends:
            variants = [False, True] if asnorm else [False]
            if b == "cosine":
                out.append(Attacker(f"{ext}/cosine", ext, "cosine", "none", 0, es, None))
                if asnorm and ext in train:
                    for cond in conditions:
                        tr = training_condition(train[ext], cond, original=original, anonymized=anonymized)
                        model = fit(b, True, tr)
                        out.append(Attacker(f"{ext}/{model.name}/{cond}", ext, model.name, cond,
                                            model.n_training_speakers_, es, model))
                continue
            if ext not in train:
                continue
            for cond in conditions:
                tr = training_condition(train[ext], cond, original=original, anonymized=anonymized)
                for wrap in variants:
                    model = fit(b, wrap, tr)
                    out.append(Attacker(f"{ext}/{model.name}/{cond}", ext, model.name, cond,
                                        model.n_training_speakers_, es, model))
    if not out:
        raise ProtocolError(f"no attacker can be fielded: back-end(s) {', '.join(backends)} must be trained, and no "
                            "training embeddings were given (a train/ folder beside the evaluation embeddings)")
    return out


def content_key(*arrays) -> tuple:
    """A hashable key of the contents of arrays (dtype, shape and bytes, SHA-256): equal keys, equal inputs."""
    import hashlib

    h = hashlib.sha256()
    for a in arrays:
        h.update(_array_digest(a))
    return (h.hexdigest(),)


_digests: dict = {}  # id -> (weak reference, digest) of read-only arrays that own their data


def _array_digest(a) -> bytes:
    """SHA-256 of an array's dtype, shape and bytes; remembered for a read-only array that owns its data
    (:func:`vpeval.keys.while_it_lives`: e.g. the trials' shared key arrays, hashed by every attacker of a
    system)."""
    from ..keys import while_it_lives

    if isinstance(a, np.ndarray) and not a.dtype.hasobject:
        return while_it_lives(_digests, a, _digest)
    return _digest(a)


def _digest(a) -> bytes:
    import hashlib

    c = np.ascontiguousarray(a)
    h = hashlib.sha256(f"{c.dtype.str}{c.shape}".encode())
    h.update(c.tobytes() if c.dtype.hasobject else c.reshape(-1).view(np.uint8))  # the bytes, not copied
    return h.digest()


def _fold_of(speakers: np.ndarray, folds: int, seed: int) -> dict[str, int]:
    names = np.unique(speakers)
    perm = np.random.default_rng(seed).permutation(names.size)
    return {str(names[i]): r % folds for r, i in enumerate(perm)}


def fuse_attackers(members: list[Attacker], train: dict[str, EmbeddingSet], *, folds: int = 2, seed: int = 0,
                   p_target: float | None = None, original: str = "original",
                   anonymized: str = "anonymized", fits: dict | None = None) -> Attacker:
    """Linear fusion of trained attackers of one training condition (module docstring).

    Parameters
    ----------
    members : list of Attacker
        At least two, all with the same ``trained_on`` (``"original"`` or ``"anonymized"``) and fitted
        single-extractor back-ends.
    train : dict extractor -> EmbeddingSet
        The training embeddings the members were fitted on; all extractors must cover the same training
        utterances.
    folds : int, default 2
        Speaker-grouped cross-fitting folds for the fusion's training scores (>= 2).
    seed : int
        Seed of the speaker-to-fold assignment.
    p_target : float, optional
        Prior of the fusion objective (:class:`~vpeval.calibration.fusion.LinearFusion`).
    fits : dict, optional
        A cache of the members' back-ends fitted on each fold's other speakers, shared between calls (e.g. the
        voice fusion and the cross-channel fusion of one condition refit the same voice members on the same folds);
        keyed by back-end name and training-row contents, so results are the same with or without it.

    Returns
    -------
    Attacker
        ``name = "fusion/<trained_on>"``, ``model`` the fitted :class:`LinearFusion` (weights per member), with
        ``trial_type`` the trials its weights are learnt on (``"oo"`` or ``"aa"``) and ``fold_weights_`` the
        weights refitted on each fold's held-out trials alone (their spread is in ``describe()``).

    Raises
    ------
    ProtocolError
        Fewer than two members, mixed conditions, untrained members, training sets with different utterances,
        too few training speakers for the folds.
    """
    if len(members) < 2:
        raise ProtocolError("fusion needs at least two attackers")
    if len({m.name for m in members}) != len(members):
        raise ProtocolError("fusion: an attacker is listed twice among the members")
    missing = sorted({m.extractor for m in members} - set(train))
    if missing:
        raise ProtocolError(f"fusion: no training embeddings for extractor {missing[0]!r}")
    conds = {m.trained_on for m in members}
    if len(conds) != 1 or conds & {"none"} or any(m.members for m in members):
        raise ProtocolError("fusion members must be trained attackers of one training condition (got "
                            f"{sorted(conds)})")
    if isinstance(folds, bool) or not isinstance(folds, (int, np.integer)) or folds < 2:
        raise ProtocolError(f"fusion folds must be an integer >= 2, got {folds!r}")
    cond = conds.pop()
    letter = "oo" if cond == "original" else "aa"
    trs = {m.extractor: training_condition(train[m.extractor], cond, original=original, anonymized=anonymized)
           for m in members}
    protos = {e: make_protocol(t) for e, t in trs.items()}
    first = next(iter(protos.values()))
    for e, p in protos.items():
        if not (np.array_equal(p.utterance_id, first.utterance_id) and np.array_equal(p.is_enroll, first.is_enroll)):
            raise ProtocolError(f"fusion: training embeddings of {e!r} cover other utterances than those of "
                                f"{next(iter(protos))!r}")
    fold = _fold_of(first.speaker_id, int(folds), seed)
    if len(fold) < 2 * folds:
        raise ProtocolError(f"fusion cross-fitting needs at least {2 * int(folds)} training speakers, got {len(fold)}")
    # only the training condition is present in the held-out sets; the other label is a placeholder
    o_lab = original if cond == "original" else "\x00none"
    a_lab = anonymized if cond == "anonymized" else "\x00none"
    columns: list[list[np.ndarray]] = [[] for _ in members]
    labels = []
    for f in range(int(folds)):
        for j, m in enumerate(members):
            tr = trs[m.extractor]
            in_fold = np.array([fold[s] == f for s in tr.speaker_id])
            if fits is None:
                model = m.model.clone().fit(tr.embeddings[~in_fold], tr.speaker_id[~in_fold])
            else:
                key = ("fold-fit", type(m.model).__name__, repr(sorted(m.model._params().items())),
                       content_key(tr.embeddings[~in_fold], tr.speaker_id[~in_fold]))
                if key not in fits:
                    fits[key] = m.model.clone().fit(tr.embeddings[~in_fold], tr.speaker_id[~in_fold])
                model = fits[key]
            held = tr.select(in_fold)
            t = build_trials(held, [letter], backend=model, original=o_lab, anonymized=a_lab)[letter]
            columns[j].append(t.scores)
            if j == 0:
                labels.append(t.is_target)
    scores = np.column_stack([np.concatenate(c) for c in columns])
    is_tar = np.concatenate(labels)
    names = [m.name for m in members]
    fusion = LinearFusion(p_target=p_target, names=names).fit(scores[is_tar], scores[~is_tar])
    fusion.trial_type = letter
    # fold sensitivity: the weights learnt on each fold's held-out trials alone
    fold_weights, start = [], 0
    for lab in labels:
        part, y = scores[start:start + lab.size], lab
        start += lab.size
        try:
            fold_weights.append(LinearFusion(p_target=p_target, names=names).fit(part[y], part[~y]).weights_)
        except VpevalError:  # separable or degenerate fold: no finite weights from it alone
            fold_weights.append(None)
    fusion.fold_weights_ = fold_weights
    prefix = "fusion-channels" if len({m.channel for m in members}) > 1 else "fusion"
    return Attacker(f"{prefix}/{cond}", "fusion", "fusion", cond, max(m.training_speakers for m in members),
                    None, fusion, list(members))
