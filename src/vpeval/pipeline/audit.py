"""Running an audit: every attacker on every trial type of one or more anonymization systems, with the analyses
the report lays out (verification metrics, 1-to-N linkage, bootstrap intervals and chance floors, per-speaker
profiles, per-group breakdowns, embedding structure, voice distinctiveness, soft-biometric leakage) and the paired
comparison of systems. :mod:`vpeval.report.audit` only renders the results (:class:`SystemAudit`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from ..backends import BACKENDS
from ..disclosure import worst_case_disclosure
from ..errors import VpevalError
from ..io.embeddings import EmbeddingSet, split_profile_runs
from ..io.trials import Trials
from ..metrics.linkage import LinkageAnalysis
from ..metrics.summary import verification_summary
from ..metrics.verification import cllr
from ..stats import assess_one_to_n, assess_trials, leak_for_trial_type, speaker_profile, trial_speakers
from .protocols.trials import PROFILE_TYPES, TWO_SIDED_TYPES
from .adapted import add_adapted, finish_curves, start_curves
from .analyses import analyse_attributes, analyse_distinctiveness, analyse_embedding_structure, analyse_one_to_n
from .attackers import Attacker, content_key, fuse_attackers, make_attackers, training_condition
from .channels import field_channel_attackers, split_channels
from .compare import AttackData
from .groups import DEFAULT_GROUP_BY, GroupsError, group_breakdown, pooled_eers, speaker_groups
from .jobs import Jobs, drive, using
from .protocols import make_protocol

__all__ = ["REPORT_TYPES", "GROUP_TYPES", "SystemAudit", "field_attackers", "audit_system", "run_audits", "attackers_json",
           "comparison_inputs"]


#: Trial types shown in the report; oaoa contains exactly the pairs of oa. The cross-profile types are built
#: only for a system with further runs under other profile keys (``anonymized@<key>`` rows).
REPORT_TYPES = ("oo", "oa", "aa", "oaoo", "oaaa", "aaaa", "aa-centroid", *PROFILE_TYPES)


#: Trial types broken down by speaker group (the VoicePrivacy conditions: o-o reference, o-a and a-a attacks).
GROUP_TYPES = ("oo", "oa", "aa")



def _assess_eers(trials, **kw):
    """:func:`~vpeval.stats.assess_trials` of the two EERs alone (a module function, so that a worker can be sent
    it: the metric objects hold lambdas and are made here)."""
    from ..stats.metrics import EER_INTERP, EER_ROCCH

    return assess_trials(trials, metrics=(EER_ROCCH, EER_INTERP), **kw)

def _type_metrics(t: Trials, learnt_on: str | None = None, summary: list | None = None) -> dict:
    """Metrics of one attacker's trials of one type. ``learnt_on``: for an attacker whose scores are meant as
    LLRs (a fusion), the trial type its weights were learnt on; then its actual Cllr (bits, Brummer & du Preez
    2006) is given beside minCllr, with the trial type the weights come from. ``summary``: its
    :func:`~vpeval.metrics.summary.verification_summary`, when already computed."""
    s = {m.key: m.value for m in (summary if summary is not None else verification_summary(*t.sorted_classes()))}
    out = {
        "eer_rocch": s["eer_rocch"], "eer_interp": s["eer_interp"], "min_cllr_bits": s["min_cllr"],
        "d_ece_bits": s["d_ece"], "eps_max_nats": s["eps_max"], "zebra_tag": s["zebra_tag"],
        "n_tar": s["n_tar"], "n_non": s["n_non"],
    }
    if learnt_on is not None:
        out["actual_cllr_bits"] = cllr(t.tar, t.non)
        out["llr_learnt_on"] = learnt_on
    return out


@dataclass
class SystemAudit:
    """Everything computed for one system: trials and their metrics per attacker, 1-to-N analyses.

    ``attackers`` maps attacker names to :class:`~vpeval.pipeline.attackers.Attacker`; ``structure``,
    ``attributes`` and ``distinctiveness`` are keyed by extractor (they do not depend on a back-end);
    ``notes`` lists attackers that could not be fielded (e.g. a fusion whose members cover different data).
    """

    trials: dict[str, dict[str, Trials]]
    type_metrics: dict[str, dict[str, dict]]
    linkage: dict[str, dict[str, LinkageAnalysis]]
    structure: dict = field(default_factory=dict)
    attributes: dict = field(default_factory=dict)
    distinctiveness: dict = field(default_factory=dict)
    assessments: dict = field(default_factory=dict)
    profiles: dict = field(default_factory=dict)
    attackers: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    #: attacker -> trial type -> probe speaker of every trial (the bootstrap unit)
    probe_speakers: dict = field(default_factory=dict)
    #: attacker -> 1-to-N condition (oo, oa, aa) -> OneToN score matrix
    matrices: dict = field(default_factory=dict)
    #: attacker -> trial type (oo, oa, aa) -> list of GroupResult (:mod:`vpeval.pipeline.groups`)
    groups: dict = field(default_factory=dict)
    #: the metadata column the groups are of (None: no groups), and why there are none
    group_by: str | None = None
    group_note: str | None = None
    #: attacker -> trial type (oo, oa, aa) -> (clipped per-speaker mean EER, closest-point EER), fractions: the
    #: per-group table's row over every trial (:func:`vpeval.pipeline.groups.pooled_eers`)
    pooled_eers: dict = field(default_factory=dict)
    #: attacker -> worst-case disclosure per LLR estimator of its oa trials
    #: (:func:`vpeval.disclosure.worst_case_disclosure`, without per-trial LLRs), or the exception it raised
    disclosure: dict = field(default_factory=dict)
    #: attacker -> trial type -> :func:`vpeval.metrics.summary.verification_summary` of its trials (default priors)
    summaries: dict = field(default_factory=dict)


def field_attackers(sets: dict[str, EmbeddingSet], train: dict[str, EmbeddingSet] | None = None, *,
                    backends=BACKENDS, asnorm: bool = False, fusion: bool = True, seed: int = 0,
                    progress: Callable[[str], None] | None = None,
                    cache: dict | None = None) -> tuple[list[Attacker], list[str]]:
    """Every attacker of :func:`~vpeval.pipeline.make_attackers`, plus one fusion per training condition.

    A fusion fuses the condition's trained attackers (all extractors, AS-norm variants excluded); it is skipped
    with a note when fewer than two such attackers exist or they cannot be fused (returned as ``notes``).
    ``cache``: a dict shared by the systems of one audit; a back-end or fusion already fitted on identical
    training rows (e.g. those trained on original speech, the same for every system) is reused, not refitted.
    """
    say = progress or (lambda msg: None)
    if train:
        say("training the attackers' back-ends")
    sets, other = split_channels(sets)  # content/prosody channels: pipeline.channels
    train, other_train = split_channels(train or {})
    attackers = make_attackers(sets, train, backends=backends, asnorm=asnorm,
                               fits=None if cache is None else cache.setdefault("fits", {}))
    notes = []
    untrained = sorted(set(sets) - set(train or {}))
    trained = [b for b in backends if b != "cosine"]
    if untrained and (trained or asnorm):
        notes.append(f"no training speakers for extractor(s) {', '.join(untrained)}: "
                     + ", ".join(trained + (["AS-norm"] if asnorm else []))
                     + " not fielded for them (give a train/ folder)")
    if fusion and train:
        for cond in ("original", "anonymized"):
            members = [a for a in attackers if a.trained_on == cond and not a.backend.endswith("+asnorm")]
            if len(members) < 2:
                notes.append(f"fusion/{cond} not fielded: it needs at least two trained attackers")
                continue
            say(f"fusion of the attackers trained on {cond} speech")
            try:
                key = _fusion_key(members, train, cond)
                fused = _cached(None if key is None else cache, ("fusion", cond, seed, key),
                                lambda: fuse_attackers(members, train, seed=seed,
                                                       fits=None if cache is None else cache.setdefault("fits", {})))
                # the fitted weights are shared; the members (and so the evaluation embeddings) are this system's
                attackers.append(replace(fused, members=list(members)))
            except VpevalError as exc:
                notes.append(f"fusion/{cond} not fielded: {exc}")
    if other:
        say("attackers of the content and prosody channels")
        more, more_notes = field_channel_attackers(other, other_train, attackers, backends=backends, fusion=fusion,
                                                   seed=seed, voice_train=train,
                                                   fits=None if cache is None else cache.setdefault("fits", {}))
        attackers, notes = attackers + more, notes + more_notes
    return attackers, notes


def _cached(cache: dict | None, key, compute):
    """``compute()``, memoised in ``cache`` under ``key`` (no cache: always computed). Every analysis cached
    here is a deterministic function of its key's inputs, so a cached result is the one it would recompute; the
    warnings it raised are kept with it and raised again on every later use, so that each system whose analysis
    it is says them (:func:`run_audits` names the systems). Computed here, with the caller's BLAS threads
    (:func:`vpeval.analysis.audit` limits them to one, as :func:`_deferred`'s calls always are: the fusion's
    fits move in the last digits with the thread count)."""
    if cache is None:
        return compute()
    if key not in cache:
        with _recorded() as said:
            value = compute()
        cache[key] = (value, said)
    value, said = cache[key]
    for category, message in said:
        warnings.warn(message, category, stacklevel=2)
    return value


@contextmanager
def _recorded():
    """Record the warnings raised inside (every one, whatever the filters) as a list of distinct ``(category,
    message)`` in order of first appearance, and raise none of them: the caller raises them again, named."""
    said: list = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield said
        finally:
            for w in caught:
                k = (w.category, str(w.message))
                if k not in said:
                    said.append(k)


@contextmanager
def _named(prefix: str):
    """Raise the warnings raised inside again, each distinct one once, as ``"{prefix}: {message}"`` (the
    analyses' own messages do not know which attacker or extractor they are run for)."""
    try:
        with _recorded() as said:
            yield
    finally:
        for category, message in said:
            warnings.warn(f"{prefix}: {message}", category, stacklevel=3)


def _fusion_key(members, train, cond) -> tuple | None:
    """What a fusion's fit depends on: its members (name, fitted model) and their training rows in ``cond``.
    Members are fitted models from the shared cache, so the same object means the same fit."""
    try:
        rows = [training_condition(train[m.extractor], cond) for m in members]
    except (KeyError, VpevalError):
        return None  # fuse_attackers raises the error; nothing to share
    return tuple((m.name, id(m.model), content_key(r.embeddings, r.speaker_id, r.utterance_id))
                 for m, r in zip(members, rows))


def _trials_key(t: Trials) -> tuple:
    return ("trials", t.source, tuple(sorted((k, str(v)) for k, v in t.meta.items()))) + _content_of(t)


def _content_of(t: Trials) -> tuple:
    """The arrays :func:`~vpeval.stats.assess_trials` reads (scores, labels, keys), without names: its results
    (intervals, chance floors, verdicts) depend on nothing else, given the probe speakers and the directions.
    Hashed once per :class:`Trials` object while it lives (its arrays do not change once built, which its kept
    sorted views rest on too): the audit asks for it several times per trial set (the demo hashed 4.7 GB)."""
    from ..keys import while_alive

    return while_alive(_contents, t, lambda t: (
        content_key(t.scores, t.is_target, *(x for x in (t.enroll, t.test) if x is not None)),
        t.enroll is None, t.test is None))


_contents: dict = {}  # id -> (weak reference, key) of the Trials hashed by _content_of


def _matrix_key(m) -> tuple:
    return ("one-to-n", m.enroll_condition, m.probe_condition, m.extractor,
            content_key(m.scores, m.true_index, m.probe_id, m.probe_speaker, m.enrolled_speaker))


def audit_system(sets: dict[str, EmbeddingSet], *, train: dict[str, EmbeddingSet] | None = None,
                 backends=BACKENDS, asnorm: bool = False, fusion: bool = True, types=REPORT_TYPES, seed: int = 0,
                 metadata=None, attributes=("sex",), n_boot: int = 200, n_perm: int = 200,
                 progress: Callable[[str], None] | None = None, attackers=None,
                 group_by: str | None = DEFAULT_GROUP_BY, client=None, cache: dict | None = None,
                 vpc_lists=None, jobs: "Jobs | int" = 1) -> SystemAudit:
    """Trials of every type for every attacker (extractor x back-end x training condition, fusions), their
    metrics, 1-to-N linkage (oo, oa, aa); embedding structure, voice distinctiveness and (with ``metadata``)
    soft-biometric leakage per extractor. ``attackers``: the ``(attackers, notes)`` of :func:`field_attackers`
    when already fielded (then ``train``, ``backends``, ``asnorm`` and ``fusion`` are not used). ``group_by``: the
    metadata column whose groups every oo/oa/aa row is broken down by (:func:`vpeval.pipeline.group_breakdown`;
    skipped with a note when the metadata lacks it). ``client``: a ``distributed.Client`` that computes the
    trials' score matrices and the 1-to-N linkage scans (same results). ``cache``: a dict shared by the systems
    of one audit (see :func:`field_attackers`); analyses of identical trials or score matrices (e.g. the oo trials
    of an attacker that never sees anonymized speech, the same for every system) are computed once.
    ``vpc_lists``: a :class:`vpeval.pipeline.vpc.VPCLists`; every attacker then scores exactly the listed trials
    (oo, oa, aa and the types repeating their pairs) and the other types and the 1-to-N searches use the lists'
    split (:meth:`~vpeval.pipeline.vpc.VPCLists.build_trials`), instead of the split of :func:`make_protocol`.
    ``jobs``: worker processes for the intervals, chance floors, 1-to-N linkage and per-group rows (an int as in
    :class:`vpeval.pipeline.jobs.Jobs`, or a running ``Jobs``); the results do not depend on it."""
    sets, runs = _profile_runs(sets)
    if attackers is None:
        attackers = field_attackers(sets, train, backends=backends, asnorm=asnorm, fusion=fusion, seed=seed,
                                    progress=progress, cache=cache)
    with using(jobs) as run:
        steps = _audit_steps(sets, attackers, types=types, seed=seed, metadata=metadata, attributes=attributes,
                             n_boot=n_boot, n_perm=n_perm, progress=progress, group_by=group_by, client=client,
                             cache=cache, vpc_lists=vpc_lists, jobs=run, profile_runs=runs)
        return drive(steps)


def _profile_runs(sets: dict[str, EmbeddingSet]) -> tuple[dict, dict]:
    """``sets`` without the rows of further profile runs (``anonymized@<key>``), and those runs: extractor ->
    key -> rows (:func:`vpeval.io.embeddings.split_profile_runs`; extractors without such rows are absent)."""
    main, runs = {}, {}
    for ext, es in sets.items():
        main[ext], found = split_profile_runs(es)
        if found:
            runs[ext] = found
    return main, runs


def start_extractor_analyses(sets, metadata, attributes, *, seed: int, jobs: Jobs) -> tuple[dict, dict, dict]:
    """Start the analyses of each voice extractor's embeddings that no attacker enters (embedding structure, voice
    distinctiveness, soft biometrics) on ``jobs``: ``(structure, distinctiveness, attributes)``, each extractor
    -> started call. They need enough speakers and utterances; on small data one of them may not be computable,
    which is reported in its section (the call's value is the error) instead of failing the whole audit."""
    structure, distinct, attrs = {}, {}, {}
    for extractor, es in split_channels(sets)[0].items():  # voice extractors only
        structure[extractor] = jobs.submit(_attempt_call, analyse_embedding_structure, es, seed=seed)
        distinct[extractor] = jobs.submit(_attempt_call, analyse_distinctiveness, es)
        present = [] if metadata is None else [a for a in attributes if a in metadata.columns]
        if present:
            attrs[extractor] = jobs.submit(_attempt_call, analyse_attributes, es, metadata, tuple(present))
    return structure, distinct, attrs


def _audit_steps(sets, attackers, *, types, seed, metadata, attributes, n_boot, n_perm, progress, group_by, client,
                 cache, vpc_lists, jobs: Jobs, extractor_jobs=None, profile_runs=None):
    """:func:`audit_system` in three steps (a generator: ``next`` runs the next step, the last returns the
    :class:`SystemAudit`), so that :func:`run_audits` can start the analyses of every system on ``jobs`` before it
    waits for the first: step 1 fields the trials and score matrices, starts their analyses (bootstrap
    intervals, chance floors, 1-to-N linkage, embedding structure, voice distinctiveness, soft biometrics) and
    yields the trial metrics (attacker -> trial type -> metrics: what the learning curves are chosen by); step 2
    takes the 1-to-N linkage and starts what needs it (per-group rows, 1-to-N assessments; speaker profiles);
    step 3 takes everything, each result under its attacker's (extractor's) name. ``profile_runs``: extractor ->
    profile key -> rows of a further run of the system (:func:`vpeval.io.embeddings.split_profile_runs`); every
    voice attacker then also scores the cross-profile types of ``types``."""
    say = progress or (lambda msg: None)
    attackers, notes = attackers
    trials, metrics, linkage = {}, {}, {}
    assessments, profiles = {}, {}
    probe_spk, mats, by_group = {}, {}, {}
    disclosure, pooled, summaries = {}, {}, {}
    shared = None if cache is None else cache.setdefault("probe-speakers", {})
    # keyed by the identity of objects that the entries hold (so no id is reused while they are kept)
    protocols, speakers_of = {}, {}

    spk_groups, group_note = None, None
    if group_by is not None:
        if metadata is None or group_by not in metadata.columns:
            group_note = f"no per-{group_by} breakdown: the metadata has no {group_by!r} column"
        else:
            spk_groups = speaker_groups(metadata, group_by)
    for att in attackers:  # step 1
        name = att.name
        with _named(f"attacker {name!r}"):
            es = att.es if att.es is not None else att.members[0].es
            say(f"trials and verification metrics: {name}")
            one_run = [t for t in types if t not in PROFILE_TYPES]
            if vpc_lists is None:  # one protocol per embedding set: the attackers of an extractor share it
                if id(es) not in protocols:
                    protocols[id(es)] = (es, make_protocol(es))
                protocol = speaker_of = protocols[id(es)][1]
                trials[name] = att.build_trials(one_run, protocol=protocol, client=client)
            else:  # the challenge's trials, and its split for everything else
                protocol, speaker_of = vpc_lists.protocol(es), vpc_lists.speaker_of(es)
                trials[name] = vpc_lists.build_trials(att, one_run, protocol=protocol, client=client)
            if profile_runs and att.channel == "voice" and set(PROFILE_TYPES) & set(types):
                say(f"cross-profile trials: {name}")
                trials[name].update({t: tr for t, tr in att.cross_profile_trials(profile_runs, protocol).items()
                                     if t in types})
            learnt_on = getattr(att.model, "trial_type", None) if att.members else None
            # the appendix's verification table reads the same summaries (vpeval.report.verification)
            summaries[name] = {t: verification_summary(*tr.sorted_classes()) for t, tr in trials[name].items()}
            metrics[name] = {t: _type_metrics(tr, learnt_on, summaries[name][t]) for t, tr in trials[name].items()}
            matrices = {}
            if att.channel == "voice":  # content/prosody/fused: verification trials only (pipeline.channels)
                say(f"1-to-N linkage: {name}")
                matrices = {f"{e}{p}": att.one_to_n(protocol, enroll=e, probe=p, client=client)
                            for e, p in (("o", "o"), ("o", "a"), ("a", "a"))}
            # small data (e.g. fewer than 3 speakers) cannot support the LID calibration: reported, not fatal
            linkage[name] = {k: _deferred(cache, ("linkage", seed, _matrix_key(m)), jobs, _attempt_call,
                                          analyse_one_to_n, m, seed=seed, client=client)
                             for k, m in matrices.items()}
            if "oa" in trials[name]:  # the appendix's table per LLR estimator
                t = trials[name]["oa"]
                disclosure[name] = _deferred(cache, ("disclosure", _content_of(t)), jobs, _attempt_call,
                                             worst_case_disclosure, t.tar, t.non, keep_llrs=False)
            say(f"bootstrap intervals and chance floors: {name}")
            probe_spk[name], mats[name] = {}, matrices
            for tname, t in trials[name].items():
                # the attackers of an extractor share their trials' test keys and protocol: their speakers once
                mk = (id(t.test), id(speaker_of), t.meta.get("type"), tuple(t.meta.get("profiles", ())))
                held = t.test is not None and not t.test.flags.writeable  # keys that cannot change
                if held and mk in speakers_of:
                    spk_key, spk = speakers_of[mk][2:]
                else:
                    spk = trial_speakers(t, speaker_of)
                    spk.flags.writeable = False  # shared below
                    # one array per distinct content: every attacker of a system has the same probe speakers
                    spk_key = content_key(spk)
                    spk = shared.setdefault(spk_key, spk) if shared is not None else spk
                    if held:  # the entry holds the objects whose ids key it, so no id is reused meanwhile; and
                        # the shared array, not a copy of its own (copies held here grew the demo by 225 MB)
                        speakers_of[mk] = (t.test, speaker_of, spk_key, spk)
                probe_spk[name][tname] = spk
                # keyed by content, not by type: aaaa holds exactly the trials of aa (same scores, keys, directions)
                leak = tuple(sorted(leak_for_trial_type(tname).items()))
                # oaoo / oaaa and the cross-profile types are read on their EERs alone: their classes come from
                # different conditions or runs, so the calibration-based numbers (minCllr, D_ECE, eps_max) mix
                # identity with the change of condition
                eers = tname in TWO_SIDED_TYPES or tname in PROFILE_TYPES
                assessments[f"{name} / {tname}"] = _deferred(
                    cache, ("assess", leak, eers, seed, n_boot, n_perm, _content_of(t), spk_key),
                    jobs, _assess_eers if eers else assess_trials, t, groups=probe_spk[name][tname],
                    leak=leak_for_trial_type(tname), seed=seed, n_boot=n_boot, n_perm=n_perm)
    structure, distinct, attrs = extractor_jobs or start_extractor_analyses(sets, metadata, attributes, seed=seed,
                                                                              jobs=jobs)
    yield metrics  # the trial metrics, for what run_audits starts beside the analyses
    for att in attackers:  # step 2
        name, matrices = att.name, mats[att.name]
        with _named(f"attacker {name!r}"):
            linkage[name] = {k: r.get() for k, r in linkage[name].items()}
            if spk_groups is not None:
                by_group[name], pooled[name] = {}, {}
                for tname in GROUP_TYPES:
                    if tname not in trials[name]:
                        continue
                    t = trials[name][tname]
                    pooled[name][tname] = _deferred(cache, ("pooled-eers", _trials_key(t)), jobs, pooled_eers, t)
                    link = linkage[name].get(tname)
                    ok = link is not None and not isinstance(link, Exception)
                    key = ("groups", tname, seed, n_boot, group_by, tuple(sorted(spk_groups.items())),
                           _trials_key(trials[name][tname]), content_key(probe_spk[name][tname]),
                           _matrix_key(matrices[tname]) if ok else None)
                    by_group[name][tname] = _deferred(
                        cache, key, jobs, group_breakdown, trials[name][tname], spk_groups,
                        probe_speakers=probe_spk[name][tname], one_to_n=matrices.get(tname) if ok else None,
                        lid=linkage[name][tname].lid if ok else None, n_boot=n_boot, seed=seed,
                        source=f"the {group_by!r} column of the metadata")
            for k, m in matrices.items():
                if not isinstance(linkage[name][k], Exception):
                    assessments[f"{name} / {k} 1-to-N"] = _deferred(
                        cache, ("assess-1-to-N", seed, n_boot, n_perm, _matrix_key(m)), jobs, assess_one_to_n, m,
                        linkage[name][k].lid, seed=seed, n_boot=n_boot, n_perm=n_perm)
            if "oa" in trials[name] and "oa" in linkage[name] and not isinstance(linkage[name]["oa"], Exception):
                profiles[f"{name} / oa"] = speaker_profile(trials[name]["oa"], one_to_n=matrices["oa"],
                                                           lid=linkage[name]["oa"].lid,
                                                           metadata=_speaker_table(metadata))
    yield
    for att in attackers:  # step 3
        name = att.name
        with _named(f"attacker {name!r}"):
            say(f"bootstrap intervals and chance floors: {name}")
            for key in [k for k in assessments if k.startswith(f"{name} / ")]:
                assessments[key] = assessments[key].get()
            if name in disclosure:
                disclosure[name] = disclosure[name].get()
            if spk_groups is not None:
                pooled[name] = {t: r.get() for t, r in pooled[name].items()}
                try:  # e.g. a speaker without a value: said in the section, not fatal
                    by_group[name] = {t: r.get() for t, r in by_group[name].items()}
                except GroupsError as exc:
                    spk_groups, group_note = None, f"no per-{group_by} breakdown: {exc}"
            if spk_groups is None:
                by_group = {}
    for extractor in structure:
        say(f"embedding structure and voice distinctiveness: {extractor}")
        with _named(f"extractor {extractor!r}"):
            structure[extractor] = structure[extractor].get()
            distinct[extractor] = distinct[extractor].get()
            if extractor in attrs:
                attrs[extractor] = attrs[extractor].get()
    return SystemAudit(trials, metrics, linkage, structure, attrs, distinct, assessments, profiles,
                       {a.name: a for a in attackers}, notes, probe_spk, mats, by_group,
                       group_by if spk_groups is not None else None, group_note,
                       pooled if spk_groups is not None else {}, disclosure, summaries)


def _attempt(fn):
    """``fn()``, or the :class:`VpevalError` it raised (kept for the report)."""
    try:
        return fn()
    except VpevalError as exc:
        return exc


def _attempt_call(fn, *args, **kwargs):
    """:func:`_attempt` of ``fn(*args, **kwargs)``, as a module-level function a worker process can run."""
    return _attempt(lambda: fn(*args, **kwargs))


def _deferred(cache: dict | None, key, jobs: Jobs, fn, *args, **kwargs):
    """:func:`_cached` for a call started on ``jobs``: its result (``.get()`` gives the value and raises its
    warnings again, at every use) is kept in ``cache`` under ``key``, so identical analyses of several
    systems are computed once."""
    if cache is not None and key in cache:
        return cache[key]
    result = jobs.submit(fn, *args, **kwargs)
    if cache is not None:
        cache[key] = result
    return result


def _speaker_table(metadata):
    """One row per speaker (speaker_id + attribute columns) from utterance metadata, or None."""
    if metadata is None or "speaker_id" not in metadata.columns:
        return None
    drop = [c for c in ("utterance_id", "condition", "duration_s", "alpha", "subset") if c in metadata.columns]
    return metadata.drop(columns=drop).drop_duplicates().reset_index(drop=True)


def comparison_inputs(results: dict[str, SystemAudit], types=("oa", "aa")) -> dict:
    """system -> attack type -> attacker -> AttackData, the input of :func:`vpeval.pipeline.compare_systems`."""
    out = {}
    for system, res in results.items():
        out[system] = {}
        for t in types:
            for attacker, by_type in res.trials.items():
                if t not in by_type:
                    continue
                link = res.linkage.get(attacker, {}).get(t)
                ok = link is not None and not isinstance(link, Exception)
                out[system].setdefault(t, {})[attacker] = AttackData(
                    by_type[t], res.probe_speakers[attacker][t], res.matrices[attacker].get(t) if ok else None,
                    link.lid.lid if ok else None)
    return out


def attackers_json(results: dict[str, SystemAudit]) -> dict:
    """The top-level ``attackers`` object of report.json: name -> {extractor, backend, trained_on,
    training_speakers[, members, fusion]}; names are prefixed ``<system> / `` when several systems are audited."""
    multi = len(results) > 1
    out = {}
    for system, res in results.items():
        for name, att in res.attackers.items():
            out[f"{system} / {name}" if multi else name] = dict(att.describe(), system=system)
    return out


def run_audits(systems: dict[str, dict[str, EmbeddingSet]], *, train: dict | None = None, backends=BACKENDS,
               asnorm: bool = False, fusion: bool = True, types=REPORT_TYPES, seed: int = 0,
               metadata: dict | None = None, attributes=("sex",), n_boot: int = 200, n_perm: int = 200,
               group_by: str | None = DEFAULT_GROUP_BY,
               progress: Callable[[str], None] | None = None, client=None, vpc_lists=None,
               adapt: dict | None = None, jobs: "Jobs | int" = 1,
               on_audited: Callable[[str, SystemAudit, Jobs], None] | None = None) -> dict[str, SystemAudit]:
    """:func:`field_attackers` and :func:`audit_system` for every system (parameters as in
    :func:`vpeval.report.audit.audit_systems`; ``vpc_lists`` as in :func:`audit_system`, the same lists for every
    system); errors in a system's (training) data name the system.
    ``adapt``: system -> :class:`vpeval.pipeline.adapted.AdaptInputs`: also field the extractor-adapted attacker
    there; with it, the strongest single attacker of each such system gets its learning curve (saturation check,
    :mod:`vpeval.pipeline.adapted`). ``jobs``: worker processes of this machine for the independent analyses
    (:mod:`vpeval.pipeline.jobs`; -1: every usable core; or a running ``Jobs``); with a Dask ``client`` an int
    ``jobs`` is not used.
    Results are the same for every value. ``on_audited(name, result, pool)`` is called as soon as a system's audit
    is complete, with the running pool (e.g. to start its verdict there while the other systems' analyses run).

    Warnings of the analyses name where they come from: ``"systems 'a', 'b': attacker 'x': ..."`` or
    ``"system 'a': extractor 'e': ..."``; each distinct one is raised once, after the systems are audited,
    naming every system it came from (it was raised once per system and extractor, with no name).

    Raises
    ------
    VpevalError
        A seed that is not an integer >= 0, training embeddings for an unknown system, and the errors of the
        analyses.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise VpevalError(f"seed must be an integer >= 0, got {seed!r}")
    train = train or {}
    unknown = sorted(set(train) - set(systems))
    if unknown:
        raise VpevalError(f"training embeddings for unknown system {unknown[0]!r}")
    metadata = metadata or {}
    results, cache = {}, {}  # fits and analyses shared by the systems (identical inputs computed once)
    said: dict[tuple, list[str]] = {}  # (category, message) -> the systems that raised it
    def step(name, fn):  # one step of one system, its warnings recorded for naming
        got: list = []
        try:
            with _recorded() as got:
                return fn()
        finally:
            for k in got:
                if name not in said.setdefault(k, []):
                    said[k].append(name)

    def start(name, sets):
        sets, runs = _profile_runs(sets)
        try:
            attackers = field_attackers(sets, train.get(name), backends=backends, asnorm=asnorm,
                                        fusion=fusion, seed=seed, progress=progress, cache=cache)
            if adapt and adapt.get(name) is not None:
                attackers = add_adapted(attackers, adapt[name], sets, seed=seed)
        except VpevalError as exc:  # say which system's (training) data it is
            raise VpevalError(f"system {name!r}: {exc}") from None
        steps = _audit_steps(sets, attackers, types=types, seed=seed, metadata=metadata.get(name),
                             attributes=attributes, n_boot=n_boot, n_perm=n_perm, group_by=group_by, client=client,
                             cache=cache, vpc_lists=vpc_lists, jobs=pool, extractor_jobs=early.get(name),
                             profile_runs=runs,
                             progress=(lambda m, _n=name: progress(f"{_n}: {m}")) if progress else None)
        metrics = next(steps)
        curves = None
        if adapt and adapt.get(name) is not None:  # on the workers, beside the analyses (its choice needs metrics)
            if progress:
                progress(f"{name}: learning curve of the strongest attacker")
            curves = start_curves({a.name: a for a in attackers[0]}, metrics, train.get(name), adapt[name],
                                  seed=seed, jobs=pool)
        return steps, curves

    def advance(name, started):
        steps, curves = started
        try:
            next(steps)
        except StopIteration as done:
            results[name] = done.value
            if curves is not None:
                finish_curves(results[name].attackers, curves)
            if on_audited is not None:
                on_audited(name, results[name], pool)

    try:
        # every system's analyses are started before the first is waited for (the workers of ``jobs`` compute
        # them while the next system's attackers are fitted); the steps of _audit_steps
        with using(jobs if client is None else 1) as pool:
            # what needs no attacker first: the workers compute it while the first attackers are fitted here
            early = {name: start_extractor_analyses(_profile_runs(sets)[0], metadata.get(name), attributes,
                                                    seed=seed, jobs=pool)
                     for name, sets in systems.items()} if pool.parallel else {}
            running = {name: step(name, lambda n=name, s=sets: start(n, s)) for name, sets in systems.items()}
            for _ in range(2):
                for name, steps in running.items():
                    step(name, lambda n=name, st=steps: advance(n, st))
    finally:  # each warning once, naming every system it came from (an error above still lets them out)
        for (category, message), names in said.items():
            who = (f"system {names[0]!r}" if len(names) == 1 else
                   "systems " + ", ".join(repr(n) for n in names))
            warnings.warn(f"{who}: {message}", category, stacklevel=2)
    return results
