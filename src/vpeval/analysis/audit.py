"""The audit as data: every attacker of every system computed (:mod:`vpeval.pipeline.audit`), then decided here
(the verdicts, the strongest attackers, the aggregates over attackers and the paired comparisons), returned as one
:class:`AuditResult` without writing anything. :mod:`vpeval.report.audit` only renders it, and ``report.json``
serialises it (:meth:`AuditResult.to_dict` is its top-level ``attackers``, ``verdicts``,
``verdicts_not_decided`` and ``comparisons``).

>>> import vpeval                                                     # doctest: +SKIP
>>> res = vpeval.audit({"sysA": {"mfcc": vpeval.read_embeddings("sysA/embeddings_mfcc.npz")}})  # doctest: +SKIP
>>> res.verdicts["sysA"]["verdict"], res.verdicts["sysA"]["worst_case"]["value_bits"]          # doctest: +SKIP
"""

from __future__ import annotations

import math
import zlib

import numpy as np
from collections.abc import Callable
from dataclasses import dataclass, field

from ..backends import BACKENDS
from ..pipeline import TRIAL_TYPES
from ..pipeline.adapted import flag_saturation
from ..pipeline.attackers import attacker_class
from ..pipeline.audit import REPORT_TYPES, SystemAudit, attackers_json, comparison_inputs, run_audits
from ..pipeline.compare import compare_systems
from ..pipeline.groups import DEFAULT_GROUP_BY
from ..pipeline.jobs import using
from ..pipeline.scoring import one_blas_thread
from .attribution import worst_over_attackers
from .channels import channel_verdicts
from .comparison import compare_profiles, compare_worst_cases, share_replicates
from ..pipeline.protocols.trials import TWO_SIDED_TYPES
from .readings import ABOVE_HALF_FLAG
from ..errors import VpevalError
from .families import audit_verdicts, start_verdict
from .secrecy import check_test_options
from .verdict import DEFAULT_BUDGET_BITS

__all__ = ["AuditResult", "audit", "aggregate_over_attackers", "strongest_attackers", "ATTACK_TYPES",
           "ABOVE_HALF_FLAG", "VERDICT_TYPES", "beyond_eer_table", "BEYOND_EER_TYPES"]

_LN2 = math.log(2.0)

#: Trial types the verdict is decided on and the paired comparison runs on (oaoa only stands in for oa when oa
#: was not computed).
VERDICT_TYPES = ("oa", "aa")


@dataclass
class AuditResult:
    """One audit as data: what was computed per system and what was decided from it.

    Attributes
    ----------
    systems : dict system -> SystemAudit
        Every attacker's trials, metrics, 1-to-N analyses, assessments and profiles
        (:class:`vpeval.pipeline.audit.SystemAudit`).
    verdicts : dict system -> dict
        The verdicts (:meth:`vpeval.analysis.verdict.Verdict.to_dict` plus ``strongest_attacker``, ``trial_type``
        and ``scorecard``; :func:`vpeval.analysis.families.audit_verdicts`).
    undecided : dict system -> str
        Systems without a verdict and why (``--no-verdict``, too few speakers, ...).
    tests : dict system -> SecrecyTest
        Each decided system's perfect-secrecy test.
    comparisons : list of Comparison
        With two or more systems: the verdicts' worst cases first (:func:`vpeval.analysis.comparison
        .compare_worst_cases`), then the per-type headline metrics (:func:`vpeval.pipeline.compare_systems`).
    comparison_notes : list of str
        Pairs or types not compared and why.
    options : dict
        The options the audit ran with.
    utility, pitch : dict system -> result
        Word error rates and pitch correlations given to :func:`audit` (rendered beside the system).
    """

    systems: dict
    verdicts: dict
    undecided: dict
    tests: dict
    comparisons: list
    comparison_notes: list
    options: dict
    utility: dict = field(default_factory=dict)
    pitch: dict = field(default_factory=dict)
    #: system -> the voice-channel verdict beside the all-channel one (:func:`vpeval.analysis.channels.channel_verdicts`)
    channels: dict = field(default_factory=dict)
    #: system -> its strongest 1-to-N attacker's population curves and combined probes
    #: (:class:`vpeval.analysis.population.PopulationReading`), None (no 1-to-N attacker) or the error
    population: dict = field(default_factory=dict)

    @property
    def attackers(self) -> dict:
        """The top-level ``attackers`` object of report.json (:func:`vpeval.pipeline.audit.attackers_json`)."""
        return attackers_json(self.systems)

    def to_dict(self) -> dict:
        """The decided part in report.json's form: ``attackers``, ``verdicts``, ``verdicts_not_decided`` (only when
        some system has no verdict) and ``comparisons`` (only with two or more systems compared)."""
        out = {"attackers": self.attackers, "verdicts": self.verdicts}
        if self.undecided:
            out["verdicts_not_decided"] = dict(self.undecided)
        if self.channels:
            out["channel_verdicts"] = dict(self.channels)
        if self.options.get("compare") and len(self.systems) > 1:
            out["comparisons"] = [c.to_dict() for c in self.comparisons]
        return out


def audit(systems: dict, *, train: dict | None = None, types=REPORT_TYPES, seed: int = 0,
          metadata: dict | None = None, attributes=("sex",), n_boot: int = 200, n_perm: int = 200,
          backends=BACKENDS, asnorm: bool = False, fusion: bool = True, group_by: str | None = DEFAULT_GROUP_BY,
          compare: bool = True, client=None, verdict_perm: int | None = 999,
          budget_bits: float = DEFAULT_BUDGET_BITS, alpha: float = 0.05, delta: float | None = None,
          utility: dict | None = None,
          pitch: dict | None = None, progress: Callable[[str], None] | None = None, vpc_lists=None,
          adapt: dict | None = None, jobs: int = 1) -> AuditResult:
    """Audit one or more anonymization systems from speaker embeddings and decide: nothing is written.

    Parameters
    ----------
    systems : dict system name -> (dict attacker name -> EmbeddingSet)
        Each embedding set holds ``original`` and ``anonymized`` rows of the same utterances (one per
        extractor).
    train, types, seed, metadata, attributes, n_boot, n_perm, backends, asnorm, fusion, group_by, client, progress
        As in :func:`vpeval.pipeline.audit.run_audits`: training speakers per system, trial types, the seed of
        every random step, utterance metadata, soft-biometric attributes, bootstrap replicates and chance
        permutations, back-ends, AS-norm, fusion, the group column, a Dask client, a progress callback.
    compare : bool
        With two or more systems, the paired comparisons.
    verdict_perm : int or None
        Relabellings of the verdict's perfect-secrecy test; None skips the verdict (``undecided`` says so).
    budget_bits, alpha : float
        Disclosure budget (bits) and level of the verdict (:mod:`vpeval.analysis.verdict`).
    delta : float in (0, 1) or None
        The verdict's delta (:mod:`vpeval.analysis.profiles`; None: ``1 / (2 S)``).
    utility, pitch : dict system -> result, optional
        Word error rates and pitch correlations computed elsewhere, kept with the result for the report.
    vpc_lists : vpeval.pipeline.vpc.VPCLists, optional
        The challenge's enrolls and trials lists (``VPCLists.read("enrolls", ["trials_f", "trials_m"])``): every
        attacker scores exactly the listed oo/oa/aa trials, so the per-group rows, the verdict's trial members and
        the report rest on them (the 1-to-N members on the lists' enrollment and tested utterances); default: the
        split of :func:`vpeval.pipeline.make_protocol`. ``options["vpc_lists"]`` describes them.
    adapt : dict system -> AdaptInputs, optional
        Field the extractor-adapted attacker and the saturation check (:mod:`vpeval.pipeline.adapted`).
    jobs : int or vpeval.pipeline.jobs.Jobs
        Worker processes of this machine for the independent analyses (:mod:`vpeval.pipeline.jobs`): 1 (default)
        computes everything in this process, -1 uses every usable core; a running ``Jobs`` is used (and left
        running). The result does not depend on it.

    Returns
    -------
    AuditResult

    Raises
    ------
    VpevalError
        Bad options (seed, ``verdict_perm``, budget, ...), training embeddings for an unknown system, and the
        errors of the analyses (naming the system); a system whose data cannot be tested for the verdict is
        listed in ``undecided`` instead.
    """
    # One pool for the analyses and the verdicts. This process, too, computes with one BLAS thread, whatever the
    # jobs: the workers' calls already do (bit-identical results for any jobs), and the back-end fits made here
    # meanwhile must not compete with them for the cores (PLDA's solves took 7x longer with two BLAS threads).
    started: dict = {}

    def start(name, res, pool):  # each system's verdict queued on the workers as soon as it is audited
        started[name] = start_verdict(res, pool, n_perm=verdict_perm, n_boot=n_boot, seed=seed, alpha=alpha)

    channels: dict = {}
    shares: dict = {}  # each system's share-beyond replicates (compare_profiles' cache)

    def decided(name, test, verdict):  # the work of one system's test, done while the later tests still run
        channels.update(channel_verdicts({name: results[name]}, {name: verdict}, n_perm=verdict_perm, n_boot=n_boot,
                                         seed=seed, alpha=alpha, budget_bits=budget_bits, tests={name: test},
                                         delta=delta))
        if compare and len(results) > 1 and test.scheme == "speaker" and test.profiles:
            share_replicates(test, budget_bits, n_boot=n_boot, cache=shares, name=name)

    if verdict_perm is not None:  # bad options raise before anything is computed
        check_test_options(verdict_perm, n_boot, seed, alpha)
    with using(jobs if client is None else 1) as pool, one_blas_thread():
        early = verdict_perm is not None and pool.parallel
        results = run_audits(systems, train=train, backends=backends, asnorm=asnorm, fusion=fusion, types=types,
                             seed=seed, metadata=metadata, attributes=attributes, n_boot=n_boot, n_perm=n_perm,
                             group_by=group_by, progress=progress, client=client, vpc_lists=vpc_lists, adapt=adapt,
                             jobs=pool, on_audited=start if early else None)
        tests: dict = {}
        compared, more, more_notes = None, [], []
        if compare and len(results) > 1:  # the paired comparisons beside the verdicts: here while the workers
            # test (queued behind the verdicts, the last of them would wait), else on a worker
            inputs = comparison_inputs(results, VERDICT_TYPES)
            if early:
                more, more_notes = compare_systems(inputs, n_boot=n_boot, seed=seed)
            else:
                compared = pool.submit(compare_systems, inputs, n_boot=n_boot, seed=seed)
        # each system's linkage against the population size (here, while the workers test)
        population = {s: _population(r, budget_bits=budget_bits, delta=delta, seed=seed, n_boot=n_boot)
                      for s, r in results.items()}
        if verdict_perm is None:  # --no-verdict
            verdicts, undecided = {}, {s: "the verdict was skipped (--no-verdict)" for s in results}
            channels = {}
        else:
            if progress:
                progress("the verdict: family-wise perfect-secrecy test over every attacker")
            verdicts, undecided = audit_verdicts(results, n_perm=verdict_perm, n_boot=n_boot, seed=seed, alpha=alpha,
                                                 budget_bits=budget_bits, tests=tests, jobs=pool, delta=delta,
                                                 started=started, on_decided=decided)
            flag_saturation(verdicts, results)
            channels = {s: channels[s] for s in results if s in channels}
        if compared is not None:
            more, more_notes = compared.get()
    comparisons, notes = [], []
    if compare and len(results) > 1:
        comparisons, notes = compare_worst_cases(tests)  # the verdicts' own replicates, re-selected in each
        if verdict_perm is not None:  # the share of trials beyond the budget: ordered where eps(delta) is not
            share_rows, share_notes = compare_profiles(tests, budget_bits, n_boot=n_boot, cache=shares)
            comparisons, notes = comparisons + share_rows, notes + share_notes
        comparisons, notes = comparisons + more, notes + more_notes
    options = {"trial_types": list(types), "seed": seed, "n_boot": n_boot, "n_perm": n_perm,
               "systems": {s: list(a) for s, a in systems.items()}, "backends": list(backends),
               "asnorm": bool(asnorm), "fusion": bool(fusion), "verdict_perm": verdict_perm,
               "budget_bits": budget_bits, "alpha": alpha, "delta": delta, "compare": bool(compare),
               "group_by": group_by,
               "vpc_lists": None if vpc_lists is None else vpc_lists.describe()}
    return AuditResult(results, verdicts, undecided, tests, comparisons, notes, options, dict(utility or {}),
                       dict(pitch or {}), channels, population)


def _population(res, **kwargs):
    """:func:`~vpeval.analysis.population.population_reading` of one system, or the error that stopped it (the
    report says why; the rest of the audit stands)."""
    from .population import population_reading

    try:
        return population_reading(res, **kwargs)
    except VpevalError as exc:
        return exc




def aggregate_over_attackers(data: dict[str, dict[str, dict]]) -> dict[str, dict]:
    """Mean and worst case over attackers of each trial type's EERs and eps_max.

    The worst case is picked by :func:`vpeval.analysis.attribution.worst_over_attackers` with the direction
    stated there: the lowest ROCCH-EER for attack types (ideal 50 %) and for references (oo: the attackers'
    capability), the highest ROCCH-EER for pseudo-identity consistency/distinctness (ideal 0 %: a high EER there
    means the anonymizer fails its own goal), and for oaoo and oaaa the attacker whose interpolated EER is
    farthest from 50 % in either direction; eps_max is always the largest. Every number given beside an attacker is that
    attacker's own.

    Returns
    -------
    dict trial type -> dict
        ``{target_eer, n_attackers, eer_rocch_mean, eer_interp_mean, worst: {attacker, by, direction,
        eer_rocch, eer_interp}, eps_max: {attacker, eps_max_nats}[, above_half_flag]}``, plus the flat keys
        ``worst_attacker``, ``eer_rocch_worst``, ``eer_interp_worst`` (the worst attacker's own EERs),
        ``eps_max_attacker`` and ``eps_max_nats_worst`` of schema 2.1.
    """
    out: dict[str, dict] = {}
    types = {t for by in data.values() for t in by}
    for t in [t for t in TRIAL_TYPES if t in types]:
        rows = {a: by[t] for a, by in data.items() if t in by}
        eer = [r["eer_rocch"] for r in rows.values()]
        interp = [r["eer_interp"] for r in rows.values()]
        rank_on = "eer_interp" if t in TWO_SIDED_TYPES else "eer_rocch"  # ROCCH-EER cannot pass 50 %
        w = worst_over_attackers(rows, "eer_rocch", t, by=rank_on)
        e = worst_over_attackers(rows, "eps_max_nats", t)
        worst = None if w is None else {"attacker": w["attacker"], "by": w["by"], "direction": w["direction"],
                                        "eer_rocch": rows[w["attacker"]]["eer_rocch"],
                                        "eer_interp": rows[w["attacker"]]["eer_interp"]}
        out[t] = {
            "target_eer": TRIAL_TYPES[t].target_eer,
            "n_attackers": len(rows),
            "eer_rocch_mean": sum(eer) / len(eer),
            "eer_interp_mean": sum(interp) / len(interp),
            "worst": worst,
            "eps_max": None if e is None else {"attacker": e["attacker"], "eps_max_nats": e["value"]},
            "worst_attacker": None if worst is None else worst["attacker"],
            "eer_rocch_worst": None if worst is None else worst["eer_rocch"],
            "eer_interp_worst": None if worst is None else worst["eer_interp"],
            "eps_max_attacker": None if e is None else e["attacker"],
            "eps_max_nats_worst": None if e is None else e["value"],
        }
        if t in TWO_SIDED_TYPES:  # some attacker's EER above the flag (analysis.readings)
            out[t]["above_half_flag"] = max(interp) > ABOVE_HALF_FLAG
    return out


#: The columns of Beyond-EER's Table 4 (its five trial types; ``oaoa`` holds the pairs of ``oa``).
BEYOND_EER_TYPES = ("oaoa", "oaoo", "oaaa", "aaaa", "cross-profile")


def beyond_eer_table(data: dict[str, dict[str, dict[str, dict]]], *, n_boot: int = 10_000, seed: int = 0,
                     level: float = 0.95) -> dict[str, dict[str, dict]]:
    """Beyond-EER's per-system table (arXiv 2609.18673, Table 4): per system and trial type of
    :data:`BEYOND_EER_TYPES`, the mean EER over the attackers (the paper's "conditions") with the half-width of a
    bootstrap interval of that mean.

    Parameters
    ----------
    data : dict system -> dict attacker -> dict trial type -> metrics
        The audit's ``type_metrics`` per system; each metrics dict has ``eer_interp`` (a fraction). ``oaoa`` is
        read from ``oa`` where it was not computed (the same pairs).
    n_boot : int >= 1
        Bootstrap replicates (the paper's B = 10,000): the attackers' EERs drawn with replacement, the mean of
        each draw.
    seed : int
    level : float in (0, 1)

    Returns
    -------
    dict system -> dict trial type -> dict
        ``{mean, half_width, low, high, n_attackers}``, fractions: ``low``/``high`` the percentile interval
        (linear interpolation between order statistics) and ``half_width = (high - low) / 2`` (0 with one
        attacker). A type no attacker of a system has is absent.

    Raises
    ------
    ValueError
        ``n_boot < 1`` or ``level`` outside (0, 1).

    Notes
    -----
    The EER is the interpolated step EER (:func:`vpeval.eer_interp`), which can pass 50 %: on oaoo and oaaa the
    paper reports values above it. The attackers' EERs are sorted before the draws, so the result does not
    depend on the order the attackers were fielded; every system and type draws from its own stream (seeded by
    ``seed``, the system's name and the type), so adding a system changes no other row.

    Examples
    --------
    >>> t = beyond_eer_table({"s": {"a": {"oa": {"eer_interp": 0.2}}, "b": {"oa": {"eer_interp": 0.4}}}})
    >>> round(t["s"]["oaoa"]["mean"], 3), t["s"]["oaoa"]["n_attackers"]
    (0.3, 2)
    """
    if int(n_boot) < 1 or not 0.0 < level < 1.0:
        raise ValueError(f"n_boot must be >= 1 and level in (0, 1); got {n_boot!r}, {level!r}")
    out: dict[str, dict[str, dict]] = {}
    for system, by_attacker in data.items():  # the input's order (each system draws from its own stream)
        row = {}
        for t_i, t in enumerate(BEYOND_EER_TYPES):
            src = t if any(t in by for by in by_attacker.values()) else ("oa" if t == "oaoa" else None)
            vals = np.sort([float(by[src]["eer_interp"]) for by in by_attacker.values() if src and src in by])
            if vals.size == 0:
                continue
            rng = np.random.default_rng([int(seed), zlib.crc32(str(system).encode()), t_i])
            means = vals[rng.integers(vals.size, size=(int(n_boot), vals.size))].mean(axis=1)
            lo, hi = np.percentile(means, [50 * (1 - level), 50 * (1 + level)])
            row[t] = {"mean": float(vals.mean()), "half_width": float(hi - lo) / 2 if vals.size > 1 else 0.0,
                      "low": float(lo), "high": float(hi), "n_attackers": int(vals.size)}
        out[system] = row
    return out


#: Trial types whose strongest attacker the summary names (privacy attacks; ideal EER 50 %).
ATTACK_TYPES = ("oa", "aa", "oaoa")


def strongest_attackers(res: "SystemAudit") -> dict[str, dict]:
    """Per attack trial type: the attacker with the lowest ROCCH-EER, the highest eps_max and the highest ALID,
    and the best plain (untrained) cosine attacker for comparison.

    Returns ``{type: {"eer": {"attacker", "class", "eer_rocch"}, "eps_max": {"attacker", "eps_max_nats"},
    "alid": {"attacker", "alid_bits"} or None, "cosine": {"attacker", "eer_rocch"} or None, "sentence": str}}``.
    Picked by :func:`vpeval.analysis.attribution.worst_over_attackers` (ties broken by attacker name, so the
    choice does not depend on the order attackers were fielded); every number is the named attacker's own.
    """
    out = {}
    for t in ATTACK_TYPES:
        rows = {a: by[t] for a, by in res.type_metrics.items() if t in by}
        if not rows:
            continue
        names = sorted(rows)
        best = worst_over_attackers(rows, "eer_rocch", t)["attacker"]  # the attribution rule (module attribution)
        eps = worst_over_attackers(rows, "eps_max_nats", t)["attacker"]
        alids = {a: res.linkage[a][t].lid.summary.alid for a in names
                 if t in res.linkage.get(a, {}) and not isinstance(res.linkage[a][t], Exception)}
        w_alid = worst_over_attackers(alids, "alid_bits", t)
        alid = None if w_alid is None else w_alid["attacker"]
        plain = {a: rows[a] for a in names
                 if res.attackers[a].backend == "cosine" and res.attackers[a].trained_on == "none"}
        w_cos = worst_over_attackers(plain, "eer_rocch", t)
        cos = None if w_cos is None else w_cos["attacker"]
        cls = attacker_class(res.attackers[best].trained_on, t, res.attackers[best].adapted is not None)
        e_best = 100 * rows[best]["eer_rocch"]
        sentence = (f"{t}: the strongest attacker is {best}, class {cls}, ROCCH-EER {e_best:.3g} %")
        if cos is not None and cos != best:
            e_cos = 100 * rows[cos]["eer_rocch"]
            sentence += (f", while the plain cosine attacker {cos} reads {e_cos:.3g} %: reporting the cosine attacker "
                         f"alone would overstate privacy by {e_cos - e_best:.3g} EER points")
        elif cos == best:
            sentence += "; no trained back-end beats the plain cosine attacker here"
        sentence += f". Largest eps_max: {eps} ({rows[eps]['eps_max_nats'] / _LN2:.3g} bits)"
        if alid is not None:
            sentence += f"; largest ALID: {alid} ({alids[alid]:.3g} bits)"
        out[t] = {
            "eer": {"attacker": best, "class": cls, "eer_rocch": rows[best]["eer_rocch"]},
            "eps_max": {"attacker": eps, "eps_max_nats": rows[eps]["eps_max_nats"]},
            "alid": None if alid is None else {"attacker": alid, "alid_bits": alids[alid]},
            "cosine": None if cos is None else {"attacker": cos, "eer_rocch": rows[cos]["eer_rocch"]},
            "sentence": sentence + ".",
        }
    return out
