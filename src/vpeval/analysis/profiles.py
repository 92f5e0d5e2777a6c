r"""The privacy profiles of a system's attackers and the family's certificate at a stated delta.

Every member of a system's family (an attacker's verification trials of one attack type, or its 1-to-N matrix
read as trials: every probe against every enrolled speaker, target where they are the same speaker) gets its
privacy profile eps(delta) and simultaneous bounds (:mod:`vpeval.metrics.profile`). The bounds of the ``m``
members are made at ``alpha / m`` each (Bonferroni), so ``eps_low <= eps <= eps_high`` holds for every member and
every delta at once with probability ``>= 1 - alpha``: fielding more attackers can only widen them, so it can only
make ``protects`` harder.

Dependence (the *unit*): the bounds use each class's effective number of trials ``n / deff`` (Kish), the design
effect estimated from the trials' clusters: the probe's speaker where it is known (audits, 1-to-N tables, Kaldi
keys whose probes are each the target of one model), else the probe utterance (the test key: its trials share one
recording), else none (a ``score label`` file: trials assumed independent; a violation makes the bounds too
narrow, measured in ``docs/verdict_calibration.md``).

Default delta: ``1 / (2 S)`` for ``S`` speakers behind the target trials (the largest ``S`` of any member), half of
one speaker's share of the target trials, so that no certificate can hold while one speaker's target trials are
all separable from the non-targets (their share ``1 / S`` then sits in a region without non-targets, and eps there
is infinite); :data:`DEFAULT_DELTA_NO_SPEAKERS` (1 %) where no speaker is known.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import VpevalError
from ..metrics.profile import DELTA_GRID, ProfileCounts, design_effect, typical_bounds_bits
from .members import TrialInput

__all__ = ["MemberProfile", "ProfileFamily", "member_profiles", "member_profiles_started", "profile_family",
           "default_delta", "check_delta", "check_budget", "plan", "plan_design", "DEFAULT_DELTA_NO_SPEAKERS"]

#: Default delta where no speaker is known (a score file without keys): as if 50 speakers.
DEFAULT_DELTA_NO_SPEAKERS = 0.01


def check_budget(budget_bits: float) -> float:
    """``budget_bits`` as a float, or :class:`VpevalError` unless it is a finite number > 0."""
    if isinstance(budget_bits, bool) or not isinstance(budget_bits, (int, float)) or not (
            math.isfinite(budget_bits) and budget_bits > 0):
        raise VpevalError(f"the disclosure budget must be a finite number of bits > 0, got {budget_bits!r}")
    return float(budget_bits)


def check_delta(delta) -> float | None:
    """``delta`` as a float in (0, 1), None kept (the default), else :class:`VpevalError`."""
    if delta is None:
        return None
    if isinstance(delta, bool) or not isinstance(delta, (int, float, np.floating)) or not 0 < float(delta) < 1:
        raise VpevalError(f"delta must be a number in (0, 1), got {delta!r}")
    return float(delta)


def default_delta(n_speakers: int | None) -> float:
    """``1 / (2 S)`` for ``S`` speakers behind the target trials; :data:`DEFAULT_DELTA_NO_SPEAKERS` when unknown.

    >>> default_delta(10), default_delta(None)
    (0.05, 0.01)
    """
    return DEFAULT_DELTA_NO_SPEAKERS if not n_speakers else 1.0 / (2.0 * int(n_speakers))


@dataclass(frozen=True)
class MemberProfile:
    """One member's profile inputs: counts, clusters and design effects (the bounds at any delta from them).

    ``cluster``: what the design effects were estimated over (``"speaker"``, ``"probe"`` or ``"none"``),
    ``n_clusters`` of them; ``n_speakers``: speakers behind the target trials (None when unknown); ``deff_tar``,
    ``deff_non``: the design-effect curves ``(shares, values)`` of each class's tails
    (:func:`vpeval.metrics.profile.design_effect` with ``by_share``), or 1.0 without clusters.
    """

    attacker: str
    trial_type: str
    n_tar: int
    n_non: int
    cluster: str
    n_clusters: int
    n_speakers: int | None
    deff_tar: object
    deff_non: object
    counts: ProfileCounts = field(repr=False, compare=False)
    source: tuple = field(default=(), repr=False, compare=False)  # (scores, is_target, clusters or None)

    @property
    def deff_max(self) -> tuple[float, float]:
        """The largest design effect of each class (what the page shows)."""
        return tuple(float(d) if np.ndim(d) == 0 else float(np.max(d[1])) for d in (self.deff_tar, self.deff_non))

    def at(self, delta, alpha: float, n_members: int) -> tuple:
        """``(eps_low, eps, eps_high)`` in bits at ``delta`` (floats or arrays)."""
        lo, hi = self.counts.bounds_bits(delta, alpha=alpha, deff_tar=self.deff_tar, deff_non=self.deff_non,
                                         n_members=n_members)
        return lo, self.counts.eps_bits(delta), hi


def _clusters(inp: TrialInput) -> tuple[str, np.ndarray | None, int | None]:
    t = inp.trials
    if inp.probe_speaker is not None:
        ps = np.asarray(inp.probe_speaker, dtype=str)
        return "speaker", ps, int(np.unique(ps[t.is_target]).size)
    if t.test is not None:
        spk = None
        if t.enroll is not None:
            spk = int(np.unique(np.asarray(t.enroll, dtype=str)[t.is_target]).size)
        return "probe", np.asarray(t.test, dtype=str), spk
    return "none", None, None


def _member(attacker, trial_type, scores, is_target, kind, clusters, n_speakers, blocks=None) -> MemberProfile:
    scores = np.asarray(scores, dtype=np.float64)
    is_target = np.asarray(is_target, dtype=bool)
    counts = (ProfileCounts(scores[is_target], scores[~is_target]) if blocks is None else
              ProfileCounts(None, None, blocks=blocks))
    if clusters is None:
        dt = dn = 1.0
        clusters = None
        n_cl = 0
    else:
        dt, dn = design_effect(scores, is_target, clusters, by_share=True)
        n_cl = int(np.unique(clusters).size)
    return MemberProfile(attacker, trial_type, counts.n_tar, counts.n_non, kind, n_cl, n_speakers, dt, dn, counts,
                         (scores, is_target, clusters))


def member_profiles(trials=(), one_to_n=()) -> list[MemberProfile]:
    """One :class:`MemberProfile` per member, in the order given: the verification trials, then the 1-to-N
    matrices read as trials, except those of an attacker and trial type whose trials are already members (an
    audit's 1-to-N matrix holds the same scores as its verification trials: counted once).

    Raises
    ------
    VpevalError
        A 1-to-N matrix whose probe speakers are not among its enrolled speakers (no target column).
    """
    out = []
    for inp in trials:
        kind, cl, spk = _clusters(inp)
        t = inp.trials
        out.append(_member(inp.attacker, inp.trial_type, t.scores, t.is_target, kind, cl, spk, t.tie_blocks()))
    seen = {(i.attacker, i.trial_type) for i in trials}
    for inp in one_to_n:
        if (inp.attacker, inp.trial_type) in seen:
            continue
        m = inp.matrix
        enrolled = np.asarray(m.enrolled_speaker if hasattr(m, "enrolled_speaker") else m.speaker_ids, dtype=str)
        pspk = np.asarray(m.probe_speaker, dtype=str)
        sc = np.asarray(m.scores, dtype=np.float64)
        lab = pspk[:, None] == enrolled[None, :]
        if not lab.any(axis=1).all():
            raise VpevalError(f"1-to-N matrix of {inp.attacker} ({inp.trial_type}): a probe's speaker is not "
                              "enrolled, so its target column is unknown")
        cl = np.repeat(pspk, sc.shape[1])
        out.append(_member(inp.attacker, inp.trial_type, sc.reshape(-1), lab.reshape(-1), "speaker", cl,
                           int(np.unique(pspk).size)))
    return out


def member_profiles_started(trials=(), one_to_n=()):
    """:func:`member_profiles` in a thread of its own, started now: a :class:`concurrent.futures.Future` whose
    ``result()`` gives the list or raises its error. The dominance counts (the profile's costly part, about 1.5 s
    at 1e7 trials; NumPy and the compiled loops release the GIL) then run on a second core beside the
    relabellings of the perfect-secrecy test. Make the trials' tie blocks first (the test's preparation does):
    else both threads would make them, the same arrays twice. Under an address-space limit (``ulimit -v``,
    :func:`vpeval.jit.address_space_limited`) they are computed here, before returning: numba, which the profile
    may load, crashed or raised in a helper thread there, where the command cannot report it."""
    from concurrent.futures import Future, ThreadPoolExecutor

    from ..jit import address_space_limited

    if address_space_limited():
        done: Future = Future()
        done.set_result(member_profiles(trials, one_to_n))  # an error raises here, as before the thread
        return done
    pool = ThreadPoolExecutor(1, thread_name_prefix="vpeval-profiles")
    try:
        return _Helped(pool.submit(member_profiles, list(trials), list(one_to_n)))
    finally:
        pool.shutdown(wait=False)  # the thread ends with its one task


class _Helped:
    """A started :func:`member_profiles` whose ``result()`` waits by running the thread's compiled dominance passes
    too (:func:`vpeval.metrics.profile_kernel.help_with_passes`): the caller, done with its own work, shares the
    rest of the counts instead of waiting idle (the same counts whoever runs a pass)."""

    def __init__(self, future):
        self.future = future

    def result(self):
        from ..metrics.profile_kernel import help_with_passes

        while not self.future.done():
            if not help_with_passes():
                try:
                    return self.future.result(timeout=0.02)
                except TimeoutError:
                    continue
        return self.future.result()


@dataclass(frozen=True)
class ProfileFamily:
    """The family's privacy profile at ``delta``: each member's bounds and the family's (their maxima).

    Attributes
    ----------
    delta : float
    delta_rule : str
        How delta was chosen, in words.
    alpha : float
    members : list of dict
        Per member ``{attacker, trial_type, n_tar, n_non, cluster, n_clusters, deff_tar, deff_non, eps_low_bits,
        eps_bits, eps_high_bits}`` at delta (the largest design effect of each class).
    eps_low, eps, eps_high : float
        The family's maxima at delta (bits); ``eps_high <= budget`` certifies every member.
    strongest : dict
        The members reaching each maximum: ``{"eps_low": (attacker, trial_type), "eps": ..., "eps_high": ...}``;
        among members tied at a maximum, the one with the larger estimate, then the larger other bound.
    grid, low_grid, eps_grid, high_grid : ndarray of shape (len(DELTA_GRID),)
        The family's maxima over the grid of delta (for the figure).
    """

    delta: float
    delta_rule: str
    alpha: float
    members: list
    eps_low: float
    eps: float
    eps_high: float
    strongest: dict
    grid: np.ndarray = field(repr=False)
    low_grid: np.ndarray = field(repr=False)
    eps_grid: np.ndarray = field(repr=False)
    high_grid: np.ndarray = field(repr=False)
    unit: str = "none"
    delta_is_default: bool = False

    def to_dict(self) -> dict:
        return {"delta": self.delta, "delta_rule": self.delta_rule, "alpha": self.alpha, "unit": self.unit,
                "eps_low_bits": self.eps_low, "eps_bits": self.eps, "eps_high_bits": self.eps_high,
                "strongest": {k: list(v) for k, v in self.strongest.items()},
                "delta_grid": self.grid.tolist(), "eps_low_grid_bits": self.low_grid.tolist(),
                "eps_grid_bits": self.eps_grid.tolist(), "eps_high_grid_bits": self.high_grid.tolist(),
                "members": self.members}


_UNIT_WORDS = {"speaker": "the probe's speaker", "probe": "the probe utterance",
               "none": "none: trials assumed independent"}


def profile_family(profiles: list[MemberProfile], *, alpha: float = 0.05, delta: float | None = None
                   ) -> ProfileFamily:
    """The family's profile and bounds at ``delta`` (None: :func:`default_delta` of the members' speakers).

    Parameters
    ----------
    profiles : list of MemberProfile
        The family's members (:func:`member_profiles`); their bounds are made at ``alpha / len(profiles)``.
    alpha : float in (0, 1)
        The bounds hold for every member and delta at once with probability ``>= 1 - alpha``.
    delta : float in (0, 1) or None
        A share of the trials.

    Returns
    -------
    ProfileFamily
        eps_low, eps and eps_high in bits (log2) at ``delta`` and over :data:`DELTA_GRID`, each the largest over
        the members (ties: by attacker, then trial type), and the members' own rows.

    Raises
    ------
    VpevalError
        No members, a delta outside (0, 1).
    """
    if not profiles:
        raise VpevalError("the privacy profile needs at least one member")
    delta = given = check_delta(delta)
    n_spk = max((p.n_speakers or 0 for p in profiles), default=0) or None
    if delta is None:
        delta = default_delta(n_spk)
        rule = (f"default 1 / (2 S), S = {n_spk} speakers" if n_spk else
                f"default without speakers, {DEFAULT_DELTA_NO_SPEAKERS:g}")
    else:
        rule = "given (--delta)"
    m = len(profiles)
    grid = np.asarray(DELTA_GRID, dtype=float)
    rows, at, curves = [], [], []
    for p in profiles:
        lo, est, hi = p.at(np.r_[delta, grid], alpha, m)
        at.append((float(lo[0]), float(est[0]), float(hi[0])))
        curves.append((lo[1:], est[1:], hi[1:]))
        rows.append({"attacker": p.attacker, "trial_type": p.trial_type, "n_tar": p.n_tar, "n_non": p.n_non,
                     "cluster": p.cluster, "n_clusters": p.n_clusters, "deff_tar": p.deff_max[0],
                     "deff_non": p.deff_max[1], "eps_low_bits": float(lo[0]), "eps_bits": float(est[0]),
                     "eps_high_bits": float(hi[0])})

    def top(k):
        # ties (e.g. every upper bound infinite at a small delta): the larger of the other numbers (estimate, then
        # the other bound) names the member, then attacker and trial type, so the input order never matters
        others = [x for x in (1, 0, 2) if x != k]
        j = min(range(m), key=lambda i: (-at[i][k], *(-at[i][x] for x in others), profiles[i].attacker,
                                         profiles[i].trial_type))
        return at[j][k], (profiles[j].attacker, profiles[j].trial_type)

    (lo, who_lo), (est, who_est), (hi, who_hi) = top(0), top(1), top(2)
    units = sorted({p.cluster for p in profiles})
    return ProfileFamily(delta, rule, float(alpha), rows, lo, est, hi,
                         {"eps_low": who_lo, "eps": who_est, "eps_high": who_hi}, grid,
                         np.max([c[0] for c in curves], axis=0), np.max([c[1] for c in curves], axis=0),
                         np.max([c[2] for c in curves], axis=0), " / ".join(_UNIT_WORDS[u] for u in units),
                         given is None)


def _smallest_factor(ok, max_factor: float, largest=None) -> float | None:
    """The smallest ``c`` in ``[1, max_factor]`` with ``ok(c)`` (within 5 %; ``ok`` monotone), None if none.
    ``largest(c)``: the larger class at ``c`` (rising with ``c``); the search ends where it would pass
    :data:`~vpeval.metrics.profile.MAX_PLANNED_TRIALS`."""
    max_factor = _capped(max_factor, largest)
    if ok(1.0):
        return 1.0
    if not ok(max_factor):
        return None
    lo, hi = 1.0, max_factor
    while hi / lo > 1.05:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def _capped(max_factor: float, largest) -> float:
    """``max_factor``, lowered (within 1 %) to where ``largest(c)`` reaches the planned trials' cap."""
    from ..metrics.profile import MAX_PLANNED_TRIALS

    if largest is None or largest(max_factor) <= MAX_PLANNED_TRIALS:
        return max_factor
    lo, hi = 1.0, max_factor
    while hi / lo > 1.01:
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if largest(mid) <= MAX_PLANNED_TRIALS else (lo, mid)
    return lo


def plan(family: ProfileFamily, profiles: list[MemberProfile], budget_bits: float, *, design=None,
         max_factor: float = 1e4) -> dict | None:
    """How much data a perfectly secret system needs for ``eps_high <= budget`` at this delta and level.

    For every member, the trials of both classes are scaled by a factor ``c`` and the upper bound of a typical
    perfectly secret sample of that size (:func:`vpeval.metrics.profile.typical_bounds_bits`, with the member's
    design effects) is compared with the budget; the smallest ``c`` (bisection on ``log c``, within 5 %) of the
    member that needs most is returned with its trial counts (``factor``, ``n_tar``, ``n_non``, ``delta``). Members of
    equal trial counts are searched once, with the largest design effects among them.

    With ``design = (S, P, M)`` (``S`` evaluation speakers with ``P`` probes in all, every probe against every one
    of ``M`` models) and the default delta, speakers are added instead, each with ``p = P / S`` probes and enrolled
    (targets ``S' p``, non-targets ``S' p (M' - 1)``, ``M' = M - S + S'``, delta ``1 / (2 S')``): ``speakers``. Where
    no number of speakers can (at ``delta = 1 / (2 S)`` the targets' share that must be bounded shrinks as fast as
    the targets grow), probes per speaker are added to the same speakers and models instead: ``probes_per_speaker``.

    Parameters
    ----------
    family : ProfileFamily
        Its delta, level and whether the delta is the default (then ``1 / (2 S')`` follows added speakers).
    profiles : list of MemberProfile
    budget_bits : float > 0
    design : (S, P, M) or None
    max_factor : float
        The largest multiple of the data searched.

    Returns
    -------
    dict or None
        As above, with what the count assumes: the design effects measured on these data of the member that needs
        most (``deff_tar``, ``deff_non``) and the number of members sharing alpha (``n_members``), the options
        ``--design-effect``, ``--nontarget-design-effect`` and ``--attackers`` of ``vpeval plan``, and
        ``plan_args``, its other options for the same design; ``{"factor": 1.0}`` when the data already
        suffice; None when even ``max_factor`` times the data
        would not certify. The counts are lower bounds: at the count for 29 and 100 speakers with independent
        trials 45-65 % of simulated perfectly secret audits were certified (``docs/verdict_calibration.md``, one
        design measured).
    """
    m = len(profiles)
    default_delta_used = family.delta_is_default

    def certified(p, nt, nn, d):
        return typical_bounds_bits(nt, nn, d, alpha=family.alpha, deff_tar=p.deff_tar, deff_non=p.deff_non,
                                   n_members=m) <= budget_bits

    # members of equal trial counts need the same data but for their design effects: one search per count pair,
    # with the group's largest design effects (so the count is that of its hardest member, or a little more)
    groups: dict = {}
    for p in profiles:
        dt, dn = p.deff_max
        g = groups.get((p.n_tar, p.n_non))
        if g is None or (dt, dn, p.attacker, p.trial_type) > (g[1], g[2], g[0].attacker, g[0].trial_type):
            groups[(p.n_tar, p.n_non)] = (p, max(dt, 0 if g is None else g[1]), max(dn, 0 if g is None else g[2]))
        else:
            groups[(p.n_tar, p.n_non)] = (g[0], max(dt, g[1]), max(dn, g[2]))

    def need(make):
        worst = (1.0, None)
        for key in sorted(groups):
            p, dt, dn = groups[key]
            rep = dataclasses.replace(p, deff_tar=dt, deff_non=dn)
            c = _smallest_factor(lambda c, rep=rep: certified(rep, *make(rep, c)), max_factor,
                                 lambda c, rep=rep: max(make(rep, c)[:2]))
            if c is None:
                return None
            if worst[1] is None or c > worst[0]:
                worst = (c, rep)
        return worst

    def assumed(p) -> dict:  # what the count assumes, for `vpeval plan --design-effect D --attackers m`
        return {"deff_tar": float(p.deff_tar), "deff_non": float(p.deff_non), "n_members": m}

    if design is not None:
        S, P, M = design
        pp = P / S

        def speakers(p, c):
            s2 = max(S, int(math.ceil(S * c)))
            d = 1.0 / (2.0 * s2) if default_delta_used else family.delta
            return s2 * pp, s2 * pp * (M - S + s2 - 1), d

        def probes(p, c):
            return P * c, P * c * (M - 1), family.delta

        for kind, make in (("speakers", speakers), ("probes_per_speaker", probes)):
            got = need(make)
            if got is None:
                continue
            c, p = got
            if p is None:
                return {"factor": 1.0}
            nt, nn, d = make(p, c)
            value = max(S, int(math.ceil(S * c))) if kind == "speakers" else int(math.ceil(pp * c))
            if kind == "speakers":  # the audit as `vpeval plan` takes it (probes per speaker rounded)
                args = (f"--speakers {S} --probes {max(1, round(pp))} --distractors {M - S}"
                        + ("" if default_delta_used else f" --delta {family.delta:.6g}"))
            else:  # more probes scale both classes alike: the counts of these data, at this delta
                args = f"--targets {math.ceil(P)} --nontargets {math.ceil(P * (M - 1))} --delta {family.delta:.6g}"
            return {"factor": c, kind: value, "attacker": p.attacker, "trial_type": p.trial_type,
                    "n_tar": int(math.ceil(nt)), "n_non": int(math.ceil(nn)), "delta": d, **assumed(p),
                    "plan_args": args}
        return None
    got = need(lambda p, c: (p.n_tar * c, p.n_non * c, family.delta))
    if got is None:
        return None
    c, p = got
    if p is None:
        return {"factor": 1.0}
    return {"factor": c, "attacker": p.attacker, "trial_type": p.trial_type, "n_tar": int(math.ceil(p.n_tar * c)),
            "n_non": int(math.ceil(p.n_non * c)), "delta": family.delta, **assumed(p),
            "plan_args": f"--targets {p.n_tar} --nontargets {p.n_non} --delta {family.delta:.6g}"}


def plan_design(*, speakers: int | None = None, probes: int | None = None, distractors: int = 0,
                n_tar: float | None = None, n_non: float | None = None, budget_bits: float, delta: float | None = None,
                alpha: float = 0.05, deff: float = 1.0, n_members: int = 1, max_factor: float = 1e4,
                deff_non: float | None = None) -> dict:
    """How much data a perfectly secret system of a planned design needs to be certified (``vpeval plan``).

    Parameters
    ----------
    speakers, probes, distractors : int
        An audit: ``speakers`` evaluation speakers with ``probes`` probes each, every probe against every one of
        ``speakers + distractors`` models (targets ``S P``, non-targets ``S P (M - 1)``).
    n_tar, n_non : float
        Or a score file's trial counts.
    budget_bits : float > 0
    delta : float in (0, 1) or None
        None: :func:`default_delta` (``1 / (2 S)``; 1 % for a score file).
    alpha : float in (0, 1)
    deff : float >= 1
        The design effect of both classes (Kish; 1 for independent trials), of the targets alone with ``deff_non``.
    deff_non : float >= 1, optional
        The non-targets' design effect (default ``deff``): an inconclusive verdict's plan names both.
    n_members : int >= 1
        Attackers x trial types sharing ``alpha``.
    max_factor : float
        The largest multiple of the data searched.

    Returns
    -------
    dict
        ``design``, ``delta``, ``delta_rule``, ``eps_high_bits`` (the upper bound of a typical perfectly secret sample
        of the design, :func:`vpeval.metrics.profile.typical_bounds_bits`), ``certified`` (bool), and what would
        certify: ``probes_per_speaker`` and ``speakers`` (audits; None where no number up to ``max_factor`` times
        does), or ``factor``, ``n_tar``, ``n_non`` (score files); ``sentence`` in words. The counts are lower bounds
        (real perfectly secret scores need a little more: ``docs/verdict_calibration.md``).

    Raises
    ------
    VpevalError
        Neither design or both, sizes below 1, a bad delta, budget or alpha.
    """
    b = check_budget(budget_bits)
    delta = check_delta(delta)
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise VpevalError(f"alpha must be in (0, 1), got {alpha!r}")
    audit = speakers is not None
    if audit == (n_tar is not None):
        raise VpevalError("plan needs either speakers and probes (an audit) or n_tar and n_non (a score file)")

    dn = deff if deff_non is None else deff_non

    def bound(nt, nn, d):
        return typical_bounds_bits(nt, nn, d, alpha=alpha, deff_tar=deff, deff_non=dn, n_members=n_members)

    effect = f"design effect {deff:g}" if dn == deff else f"design effects {deff:g} (targets) and {dn:g} (non-targets)"

    if not audit:
        if n_non is None or n_tar < 1 or n_non < 1:
            raise VpevalError("a score file's plan needs n_tar >= 1 and n_non >= 1")
        d = DEFAULT_DELTA_NO_SPEAKERS if delta is None else delta
        now = bound(n_tar, n_non, d)
        upto = _capped(max_factor, lambda c: max(n_tar, n_non) * c)
        c = _smallest_factor(lambda c: bound(n_tar * c, n_non * c, d) <= b, upto)
        out = {"design": {"n_tar": n_tar, "n_non": n_non}, "delta": d,
               "delta_rule": "given" if delta is not None else "default for trials without speakers",
               "eps_high_bits": now, "certified": now <= b, "factor": c,
               "n_tar": None if c is None else int(math.ceil(n_tar * c)),
               "n_non": None if c is None else int(math.ceil(n_non * c))}
        stop = " (plans stop at 1e12 trials per class)" if upto < max_factor else ""
        what = ("certified now" if now <= b else f"never certified up to {upto:.3g} times these trials{stop}"
                if c is None else
                f"certified with about {out['n_tar']:,} target and {out['n_non']:,} non-target trials "
                f"({c:.3g} times these)")
        out["sentence"] = (f"A perfectly secret score file of {n_tar:,} target and {n_non:,} non-target trials: upper "
                           f"bound {now:.3g} bits at delta = {100 * d:.3g} % (budget {b:.3g} bits, {effect}): {what}.")
        return out
    if probes is None or speakers < 2 or probes < 1 or distractors < 0:
        raise VpevalError("an audit's plan needs speakers >= 2, probes >= 1 and distractors >= 0")
    S, P, D = int(speakers), int(probes), int(distractors)

    def sizes(s, p):
        return s * p, s * p * (s + D - 1), default_delta(s) if delta is None else delta

    now = bound(*sizes(S, P))
    cp = _smallest_factor(lambda c: bound(*sizes(S, P * c)) <= b, max_factor, lambda c: max(sizes(S, P * c)[:2]))
    cs = _smallest_factor(lambda c: bound(*sizes(max(S, int(math.ceil(S * c))), P)) <= b, max_factor,
                          lambda c: max(sizes(max(S, int(math.ceil(S * c))), P)[:2]))
    d = sizes(S, P)[2]
    out = {"design": {"speakers": S, "probes_per_speaker": P, "distractors": D}, "delta": d,
           "delta_rule": "given" if delta is not None else "default 1 / (2 S)", "eps_high_bits": now,
           "certified": now <= b, "probes_per_speaker": None if cp is None else int(math.ceil(P * cp)),
           "speakers": None if cs is None else max(S, int(math.ceil(S * cs)))}
    if now <= b:
        what = "certified now"
    else:
        parts = []
        if cp is not None:
            parts.append(f"about {out['probes_per_speaker']:,} probes per speaker with these {S} speakers")
        if cs is not None:
            parts.append(f"about {out['speakers']:,} speakers with {P} probes each")
        what = "not certified" + ("; it would be with " + ", or ".join(parts) if parts else "")
        if cs is None and delta is None:
            what += ("; no number of speakers alone would (at delta = 1 / (2 S) the share to bound shrinks as fast "
                     "as the targets grow)")
    design = (f"{S} speakers x {P} probes, every probe against every speaker's model"
              + (f" and {D} distractor models (enrolled, never probed)" if D else ""))
    out["sentence"] = (f"A perfectly secret audit of {design}: upper bound "
                       f"{now:.3g} bits at delta = {100 * d:.3g} % (budget {b:.3g} bits, {effect}): {what}.")
    return out
