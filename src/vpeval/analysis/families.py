"""The families the verdict is decided over, for each kind of input: a score file (the attacker is the scores as
given), a 1-to-N table, and an audit (every attacker of a system on its attack trial types and 1-to-N searches).
Each returns a :class:`~vpeval.analysis.verdict.Verdict` from the one rule of :mod:`vpeval.analysis.verdict`.
"""

from __future__ import annotations

from ..io.trials import Trials
from ..pipeline.jobs import Started, drive, using
from .secrecy import OneToNInput, TrialInput, secrecy_steps, secrecy_test, speakers_from_keys
from .verdict import DEFAULT_BUDGET_BITS, Verdict, decide, deciding_attacker

__all__ = ["VERDICT_TYPES", "LARGE_INPUT_TRIALS", "LARGE_N_PERM", "default_n_perm", "score_verdict",
           "start_score_verdict", "one_to_n_verdict", "audit_verdict", "audit_family", "start_verdict", "audit_verdicts",
           "scorecard", "verdict_dict", "channel_of"]

#: Attack trial types an audit's verdict is decided on (oaoa stands in for oa when oa was not computed).
VERDICT_TYPES = ("oa", "aa")


#: Above this many trials a score input's default is :data:`LARGE_N_PERM` relabellings instead of 999 (a keyed
#: input's relabelling costs a pass over its trials, a key-less one's a draw over its cells,
#: :mod:`vpeval.analysis.cells`; p-values stay exact, down to 1/200, and near alpha more are drawn).
LARGE_INPUT_TRIALS = 2_000_000
LARGE_N_PERM = 199


def default_n_perm(n_trials: int) -> int:
    """999 relabellings, or :data:`LARGE_N_PERM` for inputs above :data:`LARGE_INPUT_TRIALS` trials."""
    return 999 if n_trials <= LARGE_INPUT_TRIALS else LARGE_N_PERM


def score_verdict(trials: Trials, name: str = "scores", *, n_perm: int | None = None, n_boot: int = 200,
                  seed: int = 0, alpha: float = 0.05, budget_bits: float = DEFAULT_BUDGET_BITS,
                  delta: float | None = None,
                  jobs=None) -> Verdict:
    """Verdict of one score input, the attacker being the scores as given (trial type ``"scores"``).

    With Kaldi keys the speakers come from the keys (:func:`~vpeval.analysis.speakers_from_keys`) and speaker
    identities are permuted when the design is complete, else each speaker's probes move together among the
    models all of them met (``"speaker-row"``); a ``score
    label`` file permutes trial labels (exchangeable trials assumed; the verdict's warnings say so).
    Parameters as in :func:`~vpeval.analysis.secrecy_test` and :func:`~vpeval.analysis.verdict.decide`;
    ``n_perm=None`` is :func:`default_n_perm` of the input's size. ``jobs``: a running
    :class:`~vpeval.pipeline.jobs.Jobs` whose workers share the relabellings of a large input (the same verdict
    for any number of jobs), or None.
    """
    return drive(_score_verdict_steps(trials, name, n_perm, n_boot, seed, alpha, budget_bits, jobs, delta))


def start_score_verdict(trials: Trials, name: str = "scores", *, jobs, n_perm: int | None = None,
                        n_boot: int = 200, seed: int = 0, alpha: float = 0.05,
                        budget_bits: float = DEFAULT_BUDGET_BITS, delta: float | None = None) -> Started:
    """:func:`score_verdict` started: the input is sorted here and the relabellings of a large input are handed
    to the workers of ``jobs`` (a running :class:`~vpeval.pipeline.jobs.Jobs`); ``.get()`` computes the rest
    here (bootstrap, decision) and returns the :class:`Verdict`, or raises what :func:`score_verdict` raises."""
    return Started(_score_verdict_steps(trials, name, n_perm, n_boot, seed, alpha, budget_bits, jobs, delta))


def _score_verdict_steps(trials, name, n_perm, n_boot, seed, alpha, budget_bits, jobs, delta=None):
    if n_perm is None:
        n_perm = default_n_perm(len(trials))
    spk = speakers_from_keys(trials)
    inp = TrialInput(name, "scores", trials, *(spk if spk is not None else (None, None)))
    test = yield from secrecy_steps([inp], n_perm=n_perm, n_boot=n_boot, seed=seed, alpha=alpha, jobs=jobs)
    v = decide(test, budget_bits, delta)
    if (note := reversed_scores_note(*trials.sorted_classes())) is not None:
        v.warnings.append(note)
    return v


#: Mann-Whitney z below which (and AUC below :data:`_REVERSED_AUC`) a score input is read as reversed
_REVERSED_Z, _REVERSED_AUC = -3.29, 0.4


def reversed_scores_note(tar_sorted, non_sorted) -> str | None:
    """A warning for the verdict of scores that separate the classes the wrong way round, or None.

    The verdict's attackers read a higher score as the same speaker (PAV and the relabelling statistics are
    increasing in the score), so scores on which non-targets clearly score above targets leave their information
    unread: a perfectly reversed file read 'inconclusive' (a breaker's find). Clearly: the area under the ROC,
    ``AUC = P(tar > non) + P(tar = non) / 2`` (ties half), below 0.4 with a Mann-Whitney z below -3.29
    (one-sided p < 0.0005, normal approximation without tie correction). ``tar_sorted``, ``non_sorted``: each
    class's scores sorted ascending (:meth:`vpeval.io.trials.Trials.sorted_classes`); O(n log n).
    """
    import numpy as np

    n_tar, n_non = len(tar_sorted), len(non_sorted)
    if n_tar == 0 or n_non == 0:
        return None
    below = np.searchsorted(non_sorted, tar_sorted, side="left").sum(dtype=np.float64)
    upto = np.searchsorted(non_sorted, tar_sorted, side="right").sum(dtype=np.float64)
    auc = (below + 0.5 * (upto - below)) / (float(n_tar) * n_non)
    z = (auc - 0.5) / np.sqrt((n_tar + n_non + 1) / (12.0 * n_tar * n_non))
    if not (auc < _REVERSED_AUC and z < _REVERSED_Z):
        return None
    return (f"the scores separate the classes the wrong way round: non-target trials score above target trials "
            f"(AUC {auc:.3g}, Mann-Whitney z = {z:.3g}), and the verdict's attackers read a higher score as the same "
            "speaker, so what these scores reveal is not counted here. If lower scores mean the same speaker "
            "(distances), give --lower-is-target (higher_is_target=False in the library); otherwise an attacker "
            "that reads them the other way round reveals the speakers and this verdict does not hold")


def one_to_n_verdict(matrix, name: str = "scores", *, n_perm: int = 999, n_boot: int = 200, seed: int = 0,
                     alpha: float = 0.05, budget_bits: float = DEFAULT_BUDGET_BITS,
                     delta: float | None = None) -> Verdict:
    """Verdict of one 1-to-N score matrix (:class:`vpeval.pipeline.OneToN` or
    :class:`vpeval.io.matrix.ScoreMatrix`) from its LID_max, ALID and speaker LID.

    The family holds the matrix's LID_max and ALID (one calibration slope over all probes) and its largest
    *speaker LID* (:mod:`vpeval.metrics.linkage.speaker`: each speaker's probes alone), which names the exposed
    speakers and finds a leak confined to one speaker that the single slope averages away (one speaker of 40 with
    5 probes: LID_max 0.3-1.6 bits, often not rejected; its speaker LID 5.32 bits, ``log2 40``). An exposed speaker
    whose own model ranks first for enough of its probes that the lower bound of its rank-1 likelihood ratio
    exceeds the budget makes the verdict ``leaks`` (:func:`vpeval.analysis.verdict.decide`).
    """
    inp = OneToNInput(name, "1-to-N", matrix)
    return decide(secrecy_test(one_to_n=[inp], n_perm=n_perm, n_boot=n_boot, seed=seed, alpha=alpha,
                               statistics=("lid_max", "alid", "speaker_lid")), budget_bits, delta)


def audit_family(res, types=VERDICT_TYPES) -> tuple[list[TrialInput], list[OneToNInput]]:
    """The members of a :class:`~vpeval.pipeline.audit.SystemAudit`'s family: every attacker's verification trials
    of the attack types (oa, aa; oaoa when oa is absent) and its 1-to-N matrices of the same conditions.

    Trials given by the VoicePrivacy lists (``meta["trial_lists"]``, an audit with
    :class:`~vpeval.pipeline.vpc.VPCLists`) make a family of those trials alone: the lists pair each probe with
    the models of its own gender only, a design that speaker relabelling across genders cannot respect, while the
    1-to-N searches rank every enrolled speaker (both genders); the trials are then relabelled within each probe's
    listed row (the ``"probe"`` scheme of :mod:`vpeval.analysis.secrecy`; by speaker when every probe meets every
    model, e.g. pooled mixed-gender lists), and the 1-to-N results stay evidence."""
    present = {t for by in res.trials.values() for t in by}
    listed = any("trial_lists" in tr.meta for by in res.trials.values() for tr in by.values())
    types = [t for t in types if t in present] or [t for t in ("oaoa",) if t in present]
    trials, one_to_n = [], []
    for attacker in sorted(res.trials):
        by_type = res.trials[attacker]
        for t in types:
            if t not in by_type:
                continue
            tr = by_type[t]
            trials.append(TrialInput(attacker, t, tr, tr.enroll, res.probe_speakers[attacker][t]))
            link = res.linkage.get(attacker, {}).get(t)
            if (not listed and link is not None and not isinstance(link, Exception)
                    and t in res.matrices.get(attacker, {})):
                one_to_n.append(OneToNInput(attacker, t, res.matrices[attacker][t]))
    return trials, one_to_n


def audit_verdict(res, *, n_perm: int = 999, n_boot: int = 200, seed: int = 0, alpha: float = 0.05,
                  budget_bits: float = DEFAULT_BUDGET_BITS, types=VERDICT_TYPES,
                  delta: float | None = None) -> Verdict | None:
    """Verdict of one audited system over all its attackers (None when no attack trial type was computed)."""
    trials, one_to_n = audit_family(res, types)
    if not trials and not one_to_n:
        return None
    return decide(secrecy_test(trials, one_to_n, n_perm=n_perm, n_boot=n_boot, seed=seed, alpha=alpha),
                  budget_bits, delta)


def _worst(values: dict[tuple[str, str], float], metric: str):
    """``{attacker, trial_type, value}`` of the worst value of ``metric`` over (attacker, trial type) keys, by
    :func:`vpeval.analysis.attribution.worst_over_attackers` (its stated direction; ties by attacker name then
    trial type); None when empty."""
    from .attribution import worst_over_attackers

    w = worst_over_attackers(values, metric)
    return None if w is None else {"attacker": w["attacker"], "trial_type": w["trial_type"], "value": w["value"]}


def scorecard(res, types=VERDICT_TYPES) -> dict:
    """Headline numbers of a :class:`~vpeval.pipeline.audit.SystemAudit` over its attackers, each with the
    attacker and trial type reaching it: lowest ROCCH-EER per attack type, highest eps_max (nats), ALID (bits)
    and rank-1 rate, and the rank-1 chance ``1/N``. Evidence beside the verdict; it decides nothing."""
    present = {t for by in res.type_metrics.values() for t in by}
    types = [t for t in types if t in present] or [t for t in ("oaoa",) if t in present]
    card = {}
    for t in types:
        card[f"eer_rocch_{t}"] = _worst({(a, t): by[t]["eer_rocch"] for a, by in res.type_metrics.items()
                                         if t in by}, "eer_rocch")
    card["eps_max_nats"] = _worst({(a, t): by[t]["eps_max_nats"] for a, by in res.type_metrics.items()
                                   for t in types if t in by}, "eps_max_nats")
    links = {(a, t): lk[t] for a, lk in res.linkage.items() for t in types
             if t in lk and not isinstance(lk[t], Exception)}
    card["alid_bits"] = _worst({k: lk.lid.summary.alid for k, lk in links.items()}, "alid_bits")
    card["rank1"] = _worst({k: float(lk.identification.cmc[0]) for k, lk in links.items()}, "rank1")
    chance = sorted({1.0 / lk.identification.n_speakers for lk in links.values()})
    card["rank1_chance"] = chance[-1] if chance else None
    return card


def verdict_dict(v: Verdict, res) -> dict:
    """A system's entry of an audit's ``verdicts``: :meth:`Verdict.to_dict` plus ``strongest_attacker`` and
    ``trial_type`` (of the worst case of the evidence, eps_max or LID_max at delta = 0), ``deciding_attacker`` and
    ``deciding_trial_type`` (the attacker the verdict's rule names: :func:`~vpeval.analysis.verdict
    .deciding_attacker`; the report's verdict table shows it) and the :func:`scorecard` of the
    :class:`~vpeval.pipeline.audit.SystemAudit` ``res``."""
    d = v.to_dict()
    d["strongest_attacker"] = d["worst_case"]["attacker"]
    d["trial_type"] = d["worst_case"]["trial_type"]
    d["deciding_attacker"], d["deciding_trial_type"] = deciding_attacker(d)
    d["scorecard"] = scorecard(res)
    return d


def channel_of(res, attacker: str) -> str:
    """The attack channel of an attacker of a :class:`~vpeval.pipeline.audit.SystemAudit` (``"voice"`` when its
    attacker record names none)."""
    att = res.attackers.get(attacker)
    return getattr(att, "channel", "voice") or "voice"


def _voice_subfamily(res, trials) -> dict | None:
    """``{"voice": attackers}`` when the system fields attackers outside the voice channel and some voice attacker
    is a member of its family (the voice-channel verdict of :mod:`vpeval.analysis.channels`, decided on the same
    relabellings), else None."""
    if not any(channel_of(res, a) != "voice" for a in res.trials):
        return None
    voice = {i.attacker for i in trials if channel_of(res, i.attacker) == "voice"}
    return {"voice": voice} if voice else None


def start_verdict(res, jobs, *, n_perm: int = 999, n_boot: int = 200, seed: int = 0, alpha: float = 0.05):
    """Start the perfect-secrecy test of one audited system on ``jobs`` (a running
    :class:`vpeval.pipeline.jobs.Jobs`): its result (``.get()`` gives the
    :class:`~vpeval.analysis.secrecy.SecrecyTest`), or why the system cannot be decided (a string). Options are
    :func:`audit_verdicts`' (checked there)."""
    trials, one_to_n = audit_family(res)
    if not trials and not one_to_n:
        return "no attack trial type (oa, aa) was computed"
    return jobs.submit(secrecy_test, trials, one_to_n, n_perm=n_perm, n_boot=n_boot, seed=seed, alpha=alpha,
                       subfamilies=_voice_subfamily(res, trials))


def audit_verdicts(results: dict, *, n_perm: int = 999, n_boot: int = 200, seed: int = 0, alpha: float = 0.05,
                   budget_bits: float = DEFAULT_BUDGET_BITS, tests: dict | None = None,
                   jobs=1, delta: float | None = None, started: dict | None = None, on_decided=None
                   ) -> tuple[dict[str, dict], dict[str, str]]:
    """The ``verdicts`` object of an audit's report.json: per system :meth:`Verdict.to_dict` plus
    ``strongest_attacker`` and ``trial_type`` (of the worst case) and the ``scorecard`` (:func:`scorecard`); and
    per system that could not be decided, why (no attack trial type, fewer than 2 evaluation speakers, ...).
    ``tests``, when given, receives each decided system's :class:`~vpeval.analysis.secrecy.SecrecyTest` (for
    :func:`vpeval.analysis.comparison.compare_worst_cases`); for a system with attackers outside the voice
    channel it carries the voice channel's own test in ``subfamilies["voice"]``, from the same relabellings
    (for :func:`vpeval.analysis.channels.channel_verdicts`). ``jobs``: the systems' tests run in worker processes
    (an int or a running :class:`vpeval.pipeline.jobs.Jobs`); the results do not depend on it. ``started``: system
    -> :func:`start_verdict` of it on the same running ``jobs`` with the same options (e.g. started as soon as
    the system was audited); the others are started here. ``on_decided(system, test, verdict)``: called as each
    system is decided, while later systems' tests may still run (e.g. the work that needs one test only).

    Raises
    ------
    VpevalError
        Bad options (``n_perm``, ``budget_bits``, ...); a system's data that cannot be tested is reported in the
        second dict instead, so one small system does not stop the audit.
    """
    from ..errors import VpevalError
    from .secrecy import check_test_options
    from .profiles import check_delta
    from .verdict import check_budget

    check_budget(budget_bits)
    check_delta(delta)
    check_test_options(n_perm, n_boot, seed, alpha)  # bad options raise; below, only data errors are caught
    out, undecided, started = {}, {}, dict(started or {})
    with using(jobs) as pool:
        for system, res in results.items():  # every system's test started, then each taken in order
            if system not in started:
                started[system] = start_verdict(res, pool, n_perm=n_perm, n_boot=n_boot, seed=seed, alpha=alpha)
        for system in list(started):
            if isinstance(started[system], str):
                undecided[system] = started.pop(system)
        for system, result in started.items():
            try:
                test = result.get()
            except VpevalError as exc:
                undecided[system] = str(exc)
                continue
            if tests is not None:
                tests[system] = test
            out[system] = verdict_dict(decide(test, budget_bits, delta), results[system])
            if on_decided is not None:
                on_decided(system, test, out[system])
    return out, {s: undecided[s] for s in results if s in undecided}
