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

__all__ = ["MemberProfile", "ProfileFamily", "member_profiles", "profile_family", "default_delta", "check_delta", "plan",
           "DEFAULT_DELTA_NO_SPEAKERS"]

#: Default delta where no speaker is known (a score file without keys): as if 50 speakers.
DEFAULT_DELTA_NO_SPEAKERS = 0.01


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


def _member(attacker, trial_type, scores, is_target, kind, clusters, n_speakers) -> MemberProfile:
    scores = np.asarray(scores, dtype=np.float64)
    is_target = np.asarray(is_target, dtype=bool)
    counts = ProfileCounts(scores[is_target], scores[~is_target])
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
        out.append(_member(inp.attacker, inp.trial_type, t.scores, t.is_target, kind, cl, spk))
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
        The members reaching each maximum: ``{"eps_low": (attacker, trial_type), "eps": ..., "eps_high": ...}``.
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

    Raises
    ------
    VpevalError
        No members, a delta outside (0, 1).
    """
    if not profiles:
        raise VpevalError("the privacy profile needs at least one member")
    delta = check_delta(delta)
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

    def top(k):  # ties: attacker, then trial type, so the input order never matters
        j = min(range(m), key=lambda i: (-at[i][k], profiles[i].attacker, profiles[i].trial_type))
        return at[j][k], (profiles[j].attacker, profiles[j].trial_type)

    (lo, who_lo), (est, who_est), (hi, who_hi) = top(0), top(1), top(2)
    units = sorted({p.cluster for p in profiles})
    return ProfileFamily(delta, rule, float(alpha), rows, lo, est, hi,
                         {"eps_low": who_lo, "eps": who_est, "eps_high": who_hi}, grid,
                         np.max([c[0] for c in curves], axis=0), np.max([c[1] for c in curves], axis=0),
                         np.max([c[2] for c in curves], axis=0), " / ".join(_UNIT_WORDS[u] for u in units))


def _smallest_factor(ok, max_factor: float) -> float | None:
    """The smallest ``c`` in ``[1, max_factor]`` with ``ok(c)`` (within 5 %; ``ok`` monotone), None if none."""
    if ok(1.0):
        return 1.0
    if not ok(max_factor):
        return None
    lo, hi = 1.0, max_factor
    while hi / lo > 1.05:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def plan(family: ProfileFamily, profiles: list[MemberProfile], budget_bits: float, *, design=None,
         max_factor: float = 1e4) -> dict | None:
    """How much data a perfectly secret system needs for ``eps_high <= budget`` at this delta and level.

    For every member, the trials of both classes are scaled by a factor ``c`` and the upper bound of a typical
    perfectly secret sample of that size (:func:`vpeval.metrics.profile.typical_bounds_bits`, with the member's
    design effects) is compared with the budget; the smallest ``c`` (bisection on ``log c``, within 2 %) of the
    member that needs most is returned with its trial counts (``factor``, ``n_tar``, ``n_non``, ``delta``). Members of
    equal trial counts are searched once, with the largest design effects among them; the factor is found within
    5 %.

    With ``design = (S, P, M)`` (``S`` evaluation speakers with ``P`` probes in all, every probe against every one
    of ``M`` models) and the default delta, speakers are added instead, each with ``p = P / S`` probes and enrolled
    (targets ``S' p``, non-targets ``S' p (M' - 1)``, ``M' = M - S + S'``, delta ``1 / (2 S')``): ``speakers``. Where
    no number of speakers can (at ``delta = 1 / (2 S)`` the targets' share that must be bounded shrinks as fast as
    the targets grow), probes per speaker are added to the same speakers and models instead: ``probes_per_speaker``.

    Returns None when even ``max_factor`` times the data would not certify. The bound of a real perfectly secret
    sample scatters around the typical one (``docs/verdict_calibration.md``).
    """
    m = len(profiles)
    default_delta_used = family.delta_rule.startswith("default")

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
            c = _smallest_factor(lambda c, rep=rep: certified(rep, *make(rep, c)), max_factor)
            if c is None:
                return None
            if worst[1] is None or c > worst[0]:
                worst = (c, p)
        return worst

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
            return {"factor": c, kind: value, "attacker": p.attacker, "trial_type": p.trial_type,
                    "n_tar": int(math.ceil(nt)), "n_non": int(math.ceil(nn)), "delta": d}
        return None
    got = need(lambda p, c: (p.n_tar * c, p.n_non * c, family.delta))
    if got is None:
        return None
    c, p = got
    if p is None:
        return {"factor": 1.0}
    return {"factor": c, "attacker": p.attacker, "trial_type": p.trial_type, "n_tar": int(math.ceil(p.n_tar * c)),
            "n_non": int(math.ceil(p.n_non * c)), "delta": family.delta}
